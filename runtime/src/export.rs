//! Tool definitions in the wire shapes of MCP and of the OpenAI, Anthropic and Gemini APIs, the
//! check of a whole request's `tools` ([`Export::check`]), and the report of what each export
//! target required ([`target_report`]).
//!
//! An export is typed ([`Export`], one variant per [`ExportFormat`], over the types of [`wire`]);
//! the JSON a provider takes is one `serde_json::to_value` away ([`Export::to_json`]). Every
//! export uses exported names (`NS__name`), keeps the order of the tools it is given, and writes
//! keys in a fixed order (the order below), so the same plan always serializes to the same bytes:
//!
//! - MCP `tools/list` result:
//!   `{"tools":[{"name","description","inputSchema","outputSchema"?,"annotations"}]}`,
//!   annotations derived from the effect ([`crate::catalog::McpAnnotations`]), `outputSchema`
//!   for a tool whose output schema is an object schema ([`mcp_output_schema`]);
//! - OpenAI function tools (Chat Completions):
//!   `[{"type":"function","function":{"name","description","parameters","strict"}}]`, the
//!   parameters rewritten for strict mode (`"strict": true`) where strict mode can express them,
//!   else sent unchanged with `"strict": false` — the documented fallback
//!   ([`toolcat_catalog::targets::openai`]). A call of a strict tool carries `null` for every
//!   argument the model leaves out; [`restore_openai_arguments`] removes those before the
//!   arguments are validated and dispatched;
//! - OpenAI Responses API tools, flat function tools
//!   `[{"type":"function","name","description","parameters","strict"}]` with the same strict
//!   rewrite as Chat Completions. With [`SearchMode::Hosted`] (OpenAI tool search,
//!   <https://developers.openai.com/api/docs/guides/tools-tool-search>) toolcat's `tool_search`
//!   is left out, the hosted `{"type":"tool_search"}` comes first, and the plan's deferred tools
//!   follow grouped by toolset into namespaces
//!   `{"type":"namespace","name","description","tools":[{"type":"function",...,"defer_loading":true}]}`
//!   (the smallest toolset holding the tool; a namespace holds deferred members only; a deferred
//!   tool in no toolset is a top-level deferred function);
//! - Anthropic Messages tools: `[{"name","description","input_schema"}]`, plus, for a plan, every
//!   deferred tool (discoverable, reachable in profile ∩ active toolsets, not visible this turn)
//!   after the visible ones with `"defer_loading": true`, so a search tool can load it
//!   (Anthropic tool search,
//!   <https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/tool-search-tool>). With
//!   [`SearchMode::Own`] that search tool is toolcat's `tool_search`; with [`SearchMode::Hosted`]
//!   it is the hosted `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`,
//!   first, and toolcat's `tool_search` is left out;
//! - Gemini function declarations: `[{"functionDeclarations":[{"name","description","parameters"}]}]`
//!   (the request's `tools`), the parameters rewritten into Gemini's `Schema` subset
//!   ([`toolcat_catalog::targets::gemini`]); `parameters` is left out for a tool without
//!   arguments (Gemini rejects an object schema without properties). A tool whose schema cannot
//!   be rewritten (a recursive `$ref`) is not declared; [`Export::refused`] names it with the
//!   rule, the JSON location and the message.
//!
//! Input schemas are [`Catalog::input_schema`] without a top-level `$schema` keyword: it tells
//! the model nothing and costs tokens on every turn. Output schemas ([`Catalog::output_schema`])
//! are MCP's only: OpenAI, Anthropic and Gemini tool definitions have no place for one.
//!
//! The export of a plan ([`export_plan`], [`export_plan_with`] with toolcat's own search) appends
//! the deferred-tool manifest ([`crate::manifest`]) to the description of `tool_search`; exports
//! of a list of tools ([`export_tools`]) carry descriptions as declared.

pub mod wire;

use serde::{Serialize, Serializer};
use serde_json::Value;

use toolcat_catalog::targets::{self, Finding, FindingKind, Report, Target, ToolInput};

use crate::catalog::{Catalog, ToolIndex};
use crate::plan::{Plan, TurnInput, TurnPlanner};
use wire::{
    AnthropicCustomTool, AnthropicTool, AnthropicToolSearch, AnthropicToolSearchKind, ChatFunction,
    ChatTool, FunctionDeclaration, GeminiExport, GeminiTool, McpTool, McpToolsList,
    NamespaceMember, RefusedTool, ResponsesFunction, ResponsesNamespace, ResponsesTool,
    ResponsesToolSearch,
};

/// A wire shape for tool definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// MCP `tools/list` result.
    Mcp,
    /// OpenAI Chat Completions `tools`.
    OpenAi,
    /// OpenAI Responses API `tools` (flat function tools).
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic Messages `tools`.
    Anthropic,
    /// Gemini `tools` with one `functionDeclarations` entry.
    Gemini,
}

impl ExportFormat {
    /// Every format.
    pub const ALL: &'static [ExportFormat] = &[
        ExportFormat::Mcp,
        ExportFormat::OpenAi,
        ExportFormat::OpenAiResponses,
        ExportFormat::Anthropic,
        ExportFormat::Gemini,
    ];

    /// The formats whose API runs a hosted tool search ([`SearchMode::Hosted`]).
    pub const HOSTED_SEARCH: &'static [ExportFormat] =
        &[ExportFormat::Anthropic, ExportFormat::OpenAiResponses];

    /// `mcp`, `openai`, `openai-responses`, `anthropic` or `gemini`: the spelling of the CLI and
    /// of file names.
    pub const fn as_str(self) -> &'static str {
        match self {
            ExportFormat::OpenAiResponses => "openai-responses",
            _ => self.target().as_str(),
        }
    }

    /// The export target whose rules the format follows.
    pub const fn target(self) -> Target {
        match self {
            ExportFormat::Mcp => Target::Mcp,
            ExportFormat::OpenAi | ExportFormat::OpenAiResponses => Target::OpenAi,
            ExportFormat::Anthropic => Target::Anthropic,
            ExportFormat::Gemini => Target::Gemini,
        }
    }

    /// Inverse of [`ExportFormat::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        ExportFormat::ALL
            .iter()
            .copied()
            .find(|f| f.as_str() == text)
    }
}

impl std::fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which search tool loads a plan's deferred tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// toolcat's own `tool_search` meta-tool (the default; every format).
    #[default]
    Own,
    /// The provider's hosted tool search ([`ExportFormat::HOSTED_SEARCH`] only): Anthropic's
    /// BM25 tool search tool, or OpenAI Responses' `tool_search`; toolcat's `tool_search` is left
    /// out of the export.
    Hosted,
}

/// Options of [`export_plan_with`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ExportOptions {
    pub search: SearchMode,
}

/// Why [`export_plan_with`] made no export.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExportError {
    /// [`SearchMode::Hosted`] with a format whose API runs no hosted tool search.
    #[error("`{format}` has no hosted tool search; hosted search is available with `anthropic` and `openai-responses` (or use toolcat's own `tool_search`)")]
    HostedSearchUnsupported { format: ExportFormat },
    /// The request the export makes breaks a rule of the provider ([`Export::check`]).
    #[error("the `{format}` request breaks {}: {}", .findings.len(), render_findings(.findings))]
    Request {
        format: ExportFormat,
        findings: Vec<Finding>,
    },
}

fn render_findings(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| format!("{} ({})", f.message, f.rule))
        .collect::<Vec<_>>()
        .join("; ")
}

/// One export, typed by format. Serializes to the provider's request `tools` (for Gemini, the
/// declarations only; [`Export::refused`] stays off the wire).
#[derive(Debug, Clone, PartialEq)]
pub enum Export {
    Mcp(McpToolsList),
    OpenAi(Vec<ChatTool>),
    OpenAiResponses(Vec<ResponsesTool>),
    Anthropic(Vec<AnthropicTool>),
    Gemini(GeminiExport),
}

impl Serialize for Export {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Export::Mcp(v) => v.serialize(serializer),
            Export::OpenAi(v) => v.serialize(serializer),
            Export::OpenAiResponses(v) => v.serialize(serializer),
            Export::Anthropic(v) => v.serialize(serializer),
            Export::Gemini(v) => v.tools.serialize(serializer),
        }
    }
}

impl Export {
    /// The format of the export.
    pub fn format(&self) -> ExportFormat {
        match self {
            Export::Mcp(_) => ExportFormat::Mcp,
            Export::OpenAi(_) => ExportFormat::OpenAi,
            Export::OpenAiResponses(_) => ExportFormat::OpenAiResponses,
            Export::Anthropic(_) => ExportFormat::Anthropic,
            Export::Gemini(_) => ExportFormat::Gemini,
        }
    }

    /// The JSON the provider takes (see the module documentation for each shape).
    pub fn to_json(&self) -> Value {
        // Every wire type serializes to JSON: string keys, no non-finite numbers.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The tools left out because the target refuses their input schema (Gemini only; empty for
    /// every other format).
    pub fn refused(&self) -> &[RefusedTool] {
        match self {
            Export::Gemini(g) => &g.refused,
            _ => &[],
        }
    }

    /// Definitions the model reads up front: declared tools that are not deferred (hosted
    /// search tools and namespaces aside).
    pub fn definitions(&self) -> usize {
        match self {
            Export::Mcp(v) => v.tools.len(),
            Export::OpenAi(v) => v.len(),
            Export::OpenAiResponses(v) => v
                .iter()
                .filter(|t| matches!(t, ResponsesTool::Function(f) if !f.defer_loading))
                .count(),
            Export::Anthropic(v) => v
                .iter()
                .filter(|t| matches!(t, AnthropicTool::Custom(c) if !c.defer_loading))
                .count(),
            Export::Gemini(g) => g.tools.iter().map(|t| t.function_declarations.len()).sum(),
        }
    }

    /// The export without its deferred tools (and without a namespace left empty): what is in
    /// the model's context before a search loads anything.
    pub fn without_deferred(&self) -> Export {
        match self {
            Export::OpenAiResponses(v) => Export::OpenAiResponses(
                v.iter()
                    .filter_map(|t| match t {
                        ResponsesTool::Function(f) if f.defer_loading => None,
                        ResponsesTool::Namespace(n) => {
                            let tools: Vec<NamespaceMember> = n
                                .tools
                                .iter()
                                .filter(|NamespaceMember::Function(f)| !f.defer_loading)
                                .cloned()
                                .collect();
                            (!tools.is_empty()).then(|| {
                                ResponsesTool::Namespace(ResponsesNamespace { tools, ..n.clone() })
                            })
                        }
                        other => Some(other.clone()),
                    })
                    .collect(),
            ),
            Export::Anthropic(v) => Export::Anthropic(
                v.iter()
                    .filter(|t| !matches!(t, AnthropicTool::Custom(c) if c.defer_loading))
                    .cloned()
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Appends `text` to the description of the declared tool `name`, after a blank line (the
    /// deferred-tool manifest, [`crate::manifest`]); nothing when no tool has that name.
    fn append_description(&mut self, name: &str, text: &str) {
        let append = |tool: &str, description: &mut String| {
            if tool == name {
                description.push_str("\n\n");
                description.push_str(text);
            }
        };
        match self {
            Export::Mcp(v) => v
                .tools
                .iter_mut()
                .for_each(|t| append(&t.name, &mut t.description)),
            Export::OpenAi(v) => v
                .iter_mut()
                .for_each(|ChatTool::Function { function: f }| append(&f.name, &mut f.description)),
            Export::OpenAiResponses(v) => v.iter_mut().for_each(|t| match t {
                ResponsesTool::Function(f) => append(&f.name, &mut f.description),
                ResponsesTool::Namespace(n) => {
                    for NamespaceMember::Function(f) in n.tools.iter_mut() {
                        append(&f.name, &mut f.description);
                    }
                }
                ResponsesTool::ToolSearch(_) => {}
            }),
            Export::Anthropic(v) => v.iter_mut().for_each(|t| {
                if let AnthropicTool::Custom(c) = t {
                    append(&c.name, &mut c.description);
                }
            }),
            Export::Gemini(g) => g
                .tools
                .iter_mut()
                .flat_map(|t| t.function_declarations.iter_mut())
                .for_each(|d| append(&d.name, &mut d.description)),
        }
    }

    /// Checks the request the export makes against the provider's rules for a whole `tools`
    /// array ([`targets::check_anthropic_request`], [`targets::check_openai_responses_request`]):
    /// deferred tools need a search tool that is not deferred, a hosted search tool needs
    /// deferred tools, at least one tool is not deferred, names are unique, and a Responses
    /// namespace is non-empty and holds deferred functions only. `search_tool` is the exported
    /// name of toolcat's own `tool_search`. Empty for MCP, Chat Completions and Gemini.
    pub fn check(&self, search_tool: &str) -> Vec<Finding> {
        match self {
            Export::Anthropic(_) => targets::check_anthropic_request(&self.to_json(), search_tool),
            Export::OpenAiResponses(_) => {
                targets::check_openai_responses_request(&self.to_json(), search_tool)
            }
            _ => Vec::new(),
        }
    }
}

pub use crate::catalog::exported_schema;

/// The output schema of `t` as MCP lists it (`outputSchema`): [`Catalog::output_schema`] when
/// its root is an object schema (`"type": "object"`), which MCP requires (a tool's structured
/// result is a JSON object); `None` otherwise, so a tool whose output is a string, a number, an
/// array or an enum without a root `type` is listed without one.
pub fn mcp_output_schema(catalog: &Catalog, t: ToolIndex) -> Option<Value> {
    catalog
        .output_schema(t)
        .filter(|schema| schema.get("type").and_then(Value::as_str) == Some("object"))
        .cloned()
}

/// One MCP tool definition: `{"name","description","inputSchema","outputSchema"?,"annotations"}`.
pub fn mcp_tool(catalog: &Catalog, t: ToolIndex) -> McpTool {
    McpTool {
        name: catalog.exported_name(t).to_string(),
        description: catalog.description(t).to_string(),
        input_schema: exported_schema(catalog, t),
        output_schema: mcp_output_schema(catalog, t),
        annotations: catalog.mcp_annotations(t),
    }
}

/// An MCP `tools/list` result: `{"tools":[...]}` with one [`mcp_tool`] per tool, in order.
pub fn mcp_tools_list(
    catalog: &Catalog,
    tools: impl IntoIterator<Item = ToolIndex>,
) -> McpToolsList {
    McpToolsList {
        tools: tools.into_iter().map(|t| mcp_tool(catalog, t)).collect(),
    }
}

/// The name, description, strict parameters and strictness of `t` for OpenAI (both APIs).
fn openai_parts(catalog: &Catalog, t: ToolIndex) -> (String, String, Value, bool) {
    let name = catalog.exported_name(t);
    let exported = targets::openai(name, &exported_schema(catalog, t));
    (
        name.to_string(),
        catalog.description(t).to_string(),
        exported.schema,
        exported.strict == Some(true),
    )
}

/// One OpenAI function tool:
/// `{"type":"function","function":{"name","description","parameters","strict"}}`, strict where
/// strict mode can express the input schema (see the module documentation).
pub fn openai_tool(catalog: &Catalog, t: ToolIndex) -> ChatTool {
    let (name, description, parameters, strict) = openai_parts(catalog, t);
    ChatTool::Function {
        function: ChatFunction {
            name,
            description,
            parameters,
            strict,
        },
    }
}

/// OpenAI Chat Completions `tools`: an array of [`openai_tool`], in order.
pub fn openai_tools(
    catalog: &Catalog,
    tools: impl IntoIterator<Item = ToolIndex>,
) -> Vec<ChatTool> {
    tools.into_iter().map(|t| openai_tool(catalog, t)).collect()
}

/// One OpenAI Responses API function, flat
/// (`{"name","description","parameters","strict"}` under the `"type":"function"` tag), with the
/// same strict rewrite as [`openai_tool`], and `"defer_loading": true` when `deferred`.
pub fn openai_responses_function(
    catalog: &Catalog,
    t: ToolIndex,
    deferred: bool,
) -> ResponsesFunction {
    let (name, description, parameters, strict) = openai_parts(catalog, t);
    ResponsesFunction {
        name,
        description,
        parameters,
        strict,
        defer_loading: deferred,
    }
}

/// One OpenAI Responses API function tool:
/// `{"type":"function","name","description","parameters","strict"}`.
pub fn openai_responses_tool(catalog: &Catalog, t: ToolIndex) -> ResponsesTool {
    ResponsesTool::Function(openai_responses_function(catalog, t, false))
}

/// OpenAI Responses API `tools`: an array of [`openai_responses_tool`], in order.
pub fn openai_responses_tools(
    catalog: &Catalog,
    tools: impl IntoIterator<Item = ToolIndex>,
) -> Vec<ResponsesTool> {
    tools
        .into_iter()
        .map(|t| openai_responses_tool(catalog, t))
        .collect()
}

/// OpenAI Responses API `tools` with the hosted tool search: `tools` in order (toolcat's
/// `tool_search` left out), then `{"type":"tool_search"}` and the `deferred` tools not among
/// `tools` with `"defer_loading": true`, grouped into one namespace per toolset (the smallest
/// toolset that holds the tool, the first in name order among equals: the most specific group,
/// as OpenAI recommends small namespaces; named and described as the toolset), in the order of
/// first appearance; a deferred tool in no toolset stays a top-level deferred function.
/// Without deferred tools there is no search tool either.
pub fn openai_responses_hosted_tools(
    catalog: &Catalog,
    tools: impl IntoIterator<Item = ToolIndex>,
    deferred: impl IntoIterator<Item = ToolIndex>,
) -> Vec<ResponsesTool> {
    let search = catalog.tool("tool_search").ok();
    let tools: Vec<ToolIndex> = tools.into_iter().filter(|&t| Some(t) != search).collect();
    let mut out: Vec<ResponsesTool> = tools
        .iter()
        .map(|&t| openai_responses_tool(catalog, t))
        .collect();
    let mut groups: Vec<(Option<crate::ToolsetId>, Vec<ToolIndex>)> = Vec::new();
    for t in deferred {
        if tools.contains(&t) || Some(t) == search {
            continue;
        }
        let set = catalog
            .toolsets()
            .filter(|&s| toolcat_catalog::tables::bit(catalog.toolset_tools(s), t.index()))
            .min_by_key(|&s| {
                catalog
                    .toolset_tools(s)
                    .iter()
                    .map(|w| w.count_ones())
                    .sum::<u32>()
            });
        match groups.iter_mut().find(|(s, _)| set.is_some() && *s == set) {
            Some((_, members)) => members.push(t),
            None => groups.push((set, vec![t])),
        }
    }
    if groups.is_empty() {
        return out;
    }
    out.push(ResponsesTool::ToolSearch(ResponsesToolSearch::default()));
    for (set, members) in groups {
        match set {
            Some(s) => out.push(ResponsesTool::Namespace(ResponsesNamespace {
                name: catalog.toolset_name(s).to_string(),
                description: catalog.toolset_description(s).to_string(),
                tools: members
                    .into_iter()
                    .map(|t| NamespaceMember::Function(openai_responses_function(catalog, t, true)))
                    .collect(),
            })),
            None => out.extend(
                members
                    .into_iter()
                    .map(|t| ResponsesTool::Function(openai_responses_function(catalog, t, true))),
            ),
        }
    }
    out
}

/// The arguments of a call of `t` made by an OpenAI model, made fit for the tool's own schema:
/// when `t` is exported with `"strict": true`, every `null` strict mode made the model send for
/// an argument it left out is removed ([`targets::restore_arguments`]). Returns how many were
/// removed; arguments of a tool exported with `"strict": false` are left alone.
pub fn restore_openai_arguments(catalog: &Catalog, t: ToolIndex, arguments: &mut Value) -> usize {
    let schema = exported_schema(catalog, t);
    if targets::openai(catalog.exported_name(t), &schema).strict == Some(true) {
        targets::restore_arguments(&schema, arguments)
    } else {
        0
    }
}

/// One Gemini function declaration, `{"name","description","parameters"}` (`parameters` left
/// out for a tool without arguments), or the refusal when the input schema cannot be rewritten
/// for Gemini (the first error finding of [`targets::gemini`]).
pub fn gemini_declaration(
    catalog: &Catalog,
    t: ToolIndex,
) -> Result<FunctionDeclaration, RefusedTool> {
    let name = catalog.exported_name(t);
    let exported = targets::gemini(name, &exported_schema(catalog, t));
    if let Some(f) = exported
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::Error)
    {
        return Err(RefusedTool {
            tool: name.to_string(),
            rule: f.rule.to_string(),
            path: f.path.clone(),
            message: f.message.clone(),
        });
    }
    let has_properties = exported
        .schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    Ok(FunctionDeclaration {
        name: name.to_string(),
        description: catalog.description(t).to_string(),
        parameters: has_properties.then_some(exported.schema),
    })
}

/// Gemini `tools`: `[{"functionDeclarations":[...]}]` with one [`gemini_declaration`] per tool
/// that can be exported, in order, and the refusals of the others.
pub fn gemini_tools(catalog: &Catalog, tools: impl IntoIterator<Item = ToolIndex>) -> GeminiExport {
    let mut declarations = Vec::new();
    let mut refused = Vec::new();
    for t in tools {
        match gemini_declaration(catalog, t) {
            Ok(d) => declarations.push(d),
            Err(r) => refused.push(r),
        }
    }
    GeminiExport {
        tools: vec![GeminiTool {
            function_declarations: declarations,
        }],
        refused,
    }
}

/// One Anthropic tool: `{"name","description","input_schema"}`, plus `"defer_loading": true`
/// when `deferred`.
pub fn anthropic_tool(catalog: &Catalog, t: ToolIndex, deferred: bool) -> AnthropicTool {
    AnthropicTool::Custom(AnthropicCustomTool {
        name: catalog.exported_name(t).to_string(),
        description: catalog.description(t).to_string(),
        input_schema: exported_schema(catalog, t),
        defer_loading: deferred,
    })
}

/// Anthropic Messages `tools`: the `tools` in order, then each of `deferred` not already among
/// them with `"defer_loading": true`.
pub fn anthropic_tools(
    catalog: &Catalog,
    tools: impl IntoIterator<Item = ToolIndex>,
    deferred: impl IntoIterator<Item = ToolIndex>,
) -> Vec<AnthropicTool> {
    let tools: Vec<ToolIndex> = tools.into_iter().collect();
    let mut out: Vec<AnthropicTool> = tools
        .iter()
        .map(|&t| anthropic_tool(catalog, t, false))
        .collect();
    for t in deferred {
        if !tools.contains(&t) {
            out.push(anthropic_tool(catalog, t, true));
        }
    }
    out
}

/// Anthropic Messages `tools` with the hosted BM25 tool search: the search tool first, then
/// `tools` in order without toolcat's `tool_search`, then each of `deferred` not among them with
/// `"defer_loading": true`. Without deferred tools there is no search tool either.
pub fn anthropic_hosted_tools(
    catalog: &Catalog,
    tools: impl IntoIterator<Item = ToolIndex>,
    deferred: impl IntoIterator<Item = ToolIndex>,
) -> Vec<AnthropicTool> {
    let search = catalog.tool("tool_search").ok();
    let tools: Vec<ToolIndex> = tools.into_iter().filter(|&t| Some(t) != search).collect();
    let deferred: Vec<AnthropicTool> = deferred
        .into_iter()
        .filter(|&t| !tools.contains(&t) && Some(t) != search)
        .map(|t| anthropic_tool(catalog, t, true))
        .collect();
    let mut out = Vec::with_capacity(tools.len() + deferred.len() + 1);
    if !deferred.is_empty() {
        out.push(AnthropicTool::ToolSearch(AnthropicToolSearch::new(
            AnthropicToolSearchKind::Bm25,
        )));
    }
    out.extend(tools.iter().map(|&t| anthropic_tool(catalog, t, false)));
    out.extend(deferred);
    out
}

/// `tools` in `format`, with nothing deferred and toolcat's own search.
pub fn export_tools(
    catalog: &Catalog,
    tools: impl IntoIterator<Item = ToolIndex>,
    format: ExportFormat,
) -> Export {
    match format {
        ExportFormat::Mcp => Export::Mcp(mcp_tools_list(catalog, tools)),
        ExportFormat::OpenAi => Export::OpenAi(openai_tools(catalog, tools)),
        ExportFormat::OpenAiResponses => {
            Export::OpenAiResponses(openai_responses_tools(catalog, tools))
        }
        ExportFormat::Anthropic => Export::Anthropic(anthropic_tools(catalog, tools, [])),
        ExportFormat::Gemini => Export::Gemini(gemini_tools(catalog, tools)),
    }
}

/// A plan's visible tools in `format`, in plan order, with toolcat's own search
/// ([`SearchMode::Own`]); the Anthropic export also carries the plan's deferred tools with
/// `defer_loading` ([`Plan::deferred`]). Not checked: [`target_report`] checks the requests of a
/// catalog, [`export_plan_with`] checks each.
pub fn export_plan(plan: &Plan<'_>, format: ExportFormat) -> Export {
    let catalog = plan.catalog();
    let tools = plan.tools().iter().copied();
    let mut export = match format {
        ExportFormat::Anthropic => {
            Export::Anthropic(anthropic_tools(catalog, tools, plan.deferred()))
        }
        _ => export_tools(catalog, tools, format),
    };
    // A plan is what the model reads: an output schema validates a result's
    // `structuredContent` for an MCP client (`toolcat serve` lists it) and is not sent to the
    // model; Code Mode's declarations type results where a program needs them.
    if let Export::Mcp(list) = &mut export {
        for tool in &mut list.tools {
            tool.output_schema = None;
        }
    }
    with_manifest(plan, &mut export);
    with_code_mode_api(plan, &mut export);
    export
}

/// Appends the TypeScript declarations of the Code Mode API of the plan's profile
/// ([`crate::code_mode::api_declarations`]) to the description of `run_code`, when the plan
/// sends it.
fn with_code_mode_api(plan: &Plan<'_>, export: &mut Export) {
    let catalog = plan.catalog();
    let Some(run_code) = crate::code_mode::run_code_tool(catalog) else {
        return;
    };
    if !plan.is_visible(run_code) {
        return;
    }
    // A tool the plan sends is declared by its signature alone: its definition says the rest.
    let api = crate::code_mode::api_declarations(catalog, plan.profile(), |t| plan.is_visible(t));
    export.append_description(catalog.exported_name(run_code), &api);
}

/// Appends the plan's deferred-tool manifest ([`crate::manifest::plan_manifest`]) to the
/// description of toolcat's `tool_search`, when the plan sends it.
fn with_manifest(plan: &Plan<'_>, export: &mut Export) {
    let catalog = plan.catalog();
    let Ok(search) = catalog.tool("tool_search") else {
        return;
    };
    if !plan.is_visible(search) {
        return;
    }
    if let Some(text) = crate::manifest::plan_manifest(plan) {
        export.append_description(catalog.exported_name(search), &text);
    }
}

/// A plan in `format` with `options` (see the module documentation for each search mode),
/// checked with [`Export::check`].
///
/// # Errors
/// [`ExportError::HostedSearchUnsupported`] for [`SearchMode::Hosted`] with a format outside
/// [`ExportFormat::HOSTED_SEARCH`]; [`ExportError::Request`] with the findings when the request
/// breaks a provider rule.
pub fn export_plan_with(
    plan: &Plan<'_>,
    format: ExportFormat,
    options: &ExportOptions,
) -> Result<Export, ExportError> {
    let catalog = plan.catalog();
    let tools = plan.tools().iter().copied();
    let export = match (options.search, format) {
        (SearchMode::Own, _) => export_plan(plan, format),
        // The hosted search replaces toolcat's `tool_search`, and the manifest with it.
        (SearchMode::Hosted, ExportFormat::Anthropic) => {
            Export::Anthropic(anthropic_hosted_tools(catalog, tools, plan.deferred()))
        }
        (SearchMode::Hosted, ExportFormat::OpenAiResponses) => Export::OpenAiResponses(
            openai_responses_hosted_tools(catalog, tools, plan.deferred()),
        ),
        (SearchMode::Hosted, format) => {
            return Err(ExportError::HostedSearchUnsupported { format })
        }
    };
    let findings = export.check(search_tool_name(catalog));
    if findings.is_empty() {
        Ok(export)
    } else {
        Err(ExportError::Request { format, findings })
    }
}

/// The exported name of toolcat's `tool_search` (`tool_search` when the catalog has none).
fn search_tool_name(catalog: &Catalog) -> &str {
    catalog
        .tool("tool_search")
        .map(|t| catalog.exported_name(t))
        .unwrap_or("tool_search")
}

/// Checks the whole catalog against `targets`: every tool's exported name and input schema
/// (a local tool's schema is its handler's; a local tool without a handler — a catalog loaded
/// from a file — is counted as unchecked), and the request ([`Export::check`]) of every preset
/// and of every profile no preset runs under (its toolsets all active, nothing discovered yet):
/// for `anthropic` the Anthropic request, for `openai` the OpenAI Responses request, each with
/// toolcat's own search and with the hosted one ([`SearchMode`]).
pub fn target_report(catalog: &Catalog, targets: &[Target]) -> Report {
    let schemas: Vec<Option<Value>> = catalog
        .tools()
        .map(|t| {
            catalog
                .input_schema_known(t)
                .then(|| exported_schema(catalog, t))
        })
        .collect();
    let inputs: Vec<ToolInput<'_>> = catalog
        .tools()
        .map(|t| ToolInput {
            exported_name: catalog.exported_name(t),
            schema: schemas[t.index()].as_ref(),
        })
        .collect();
    let mut report = Report::check(targets, &inputs);
    let formats: Vec<ExportFormat> = ExportFormat::HOSTED_SEARCH
        .iter()
        .copied()
        .filter(|f| targets.contains(&f.target()))
        .collect();
    if formats.is_empty() {
        return report;
    }
    let mut planner = TurnPlanner::new(catalog);
    for (what, profile, toolsets) in catalog_requests(catalog) {
        let plan = planner.plan(
            catalog,
            &TurnInput {
                profile,
                toolsets: &toolsets,
                discovered: &[],
                named: &[],
            },
        );
        for &format in &formats {
            for search in [SearchMode::Own, SearchMode::Hosted] {
                let findings = match export_plan_with(&plan, format, &ExportOptions { search }) {
                    Ok(_) => Vec::new(),
                    Err(ExportError::Request { findings, .. }) => findings,
                    Err(ExportError::HostedSearchUnsupported { .. }) => Vec::new(),
                };
                // The Anthropic request with toolcat's search keeps the label it always had.
                let label = match (format, search) {
                    (ExportFormat::Anthropic, SearchMode::Own) => what.clone(),
                    (_, SearchMode::Own) => format!("{what}, `{format}`"),
                    (_, SearchMode::Hosted) => format!("{what}, `{format}` with hosted search"),
                };
                for finding in findings {
                    report.requests.push((label.clone(), finding));
                }
            }
        }
    }
    report
}

/// The requests [`target_report`] checks: `(what, profile, active toolsets)` for every preset
/// and for every profile no preset runs under (with every toolset active).
pub fn catalog_requests(
    catalog: &Catalog,
) -> Vec<(String, crate::ProfileId, Vec<crate::ToolsetId>)> {
    let mut requests: Vec<(String, crate::ProfileId, Vec<crate::ToolsetId>)> = catalog
        .presets()
        .map(|p| {
            (
                format!("preset `{}`", catalog.preset_name(p)),
                catalog.preset_profile(p),
                catalog.preset_toolsets(p).collect(),
            )
        })
        .collect();
    for profile in catalog.profiles() {
        if !catalog
            .presets()
            .any(|p| catalog.preset_profile(p) == profile)
        {
            requests.push((
                format!("profile `{}`", catalog.profile_name(profile)),
                profile,
                catalog.toolsets().collect(),
            ));
        }
    }
    requests
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::plan::{TurnInput, TurnPlanner};
    use serde_json::json;

    /// `coder` with toolsets `files` and `git` active, after discovering `git_commit`.
    fn with_plan(check: impl FnOnce(&Plan<'_>)) {
        let c = fixture::catalog();
        let sets = [
            c.toolset("files").expect("known"),
            c.toolset("git").expect("known"),
        ];
        let discovered = [c.tool("git_commit").expect("known")];
        let mut planner = TurnPlanner::new(&c);
        let plan = planner.plan(
            &c,
            &TurnInput {
                profile: c.profile("coder").expect("known"),
                toolsets: &sets,
                discovered: &discovered,
                named: &[],
            },
        );
        check(&plan);
    }

    fn pretty(value: &Value) -> String {
        serde_json::to_string_pretty(value).expect("JSON serializes")
    }

    #[test]
    fn mcp_tools_list_shape() {
        with_plan(|plan| {
            let v = export_plan(plan, ExportFormat::Mcp).to_json();
            let tools = v["tools"].as_array().expect("tools array");
            assert_eq!(tools.len(), plan.tools().len());
            for (tool, &t) in tools.iter().zip(plan.tools()) {
                let keys: Vec<&String> = tool.as_object().expect("object").keys().collect();
                assert_eq!(keys, ["name", "description", "inputSchema", "annotations"]);
                assert_eq!(tool["name"], plan.catalog().exported_name(t));
            }
            insta::assert_snapshot!("mcp_tools_list", pretty(&v));
        });
    }

    #[test]
    fn openai_tools_shape() {
        with_plan(|plan| {
            let v = export_plan(plan, ExportFormat::OpenAi).to_json();
            for tool in v.as_array().expect("array") {
                assert_eq!(tool["type"], "function");
                let keys: Vec<&String> = tool["function"]
                    .as_object()
                    .expect("object")
                    .keys()
                    .collect();
                assert_eq!(keys, ["name", "description", "parameters", "strict"]);
                assert_eq!(tool["function"]["parameters"]["type"], "object");
                let strict = tool["function"]["strict"].as_bool().expect("a boolean");
                if strict {
                    // Strict mode: closed objects, every property required.
                    let parameters = &tool["function"]["parameters"];
                    assert_eq!(parameters["additionalProperties"], false);
                    let properties: Vec<&String> = parameters["properties"]
                        .as_object()
                        .expect("properties")
                        .keys()
                        .collect();
                    let required: Vec<&str> = parameters["required"]
                        .as_array()
                        .expect("required")
                        .iter()
                        .filter_map(Value::as_str)
                        .collect();
                    assert_eq!(properties, required);
                }
            }
            insta::assert_snapshot!("openai_tools", pretty(&v));
        });
    }

    #[test]
    fn openai_responses_tools_are_flat_with_the_chat_rewrite() {
        with_plan(|plan| {
            let chat = export_plan(plan, ExportFormat::OpenAi).to_json();
            let responses = export_plan(plan, ExportFormat::OpenAiResponses).to_json();
            let (chat, responses) = (
                chat.as_array().expect("array"),
                responses.as_array().expect("array"),
            );
            assert_eq!(chat.len(), responses.len());
            for (c, r) in chat.iter().zip(responses) {
                let keys: Vec<&String> = r.as_object().expect("object").keys().collect();
                assert_eq!(
                    keys,
                    ["type", "name", "description", "parameters", "strict"]
                );
                assert_eq!(r["type"], "function");
                for key in ["name", "description", "parameters", "strict"] {
                    assert_eq!(r[key], c["function"][key], "{key}");
                }
            }
        });
    }

    fn hosted(plan: &Plan<'_>, format: ExportFormat) -> Export {
        export_plan_with(
            plan,
            format,
            &ExportOptions {
                search: SearchMode::Hosted,
            },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn own_search_is_the_plain_export_for_every_format() {
        with_plan(|plan| {
            for &format in ExportFormat::ALL {
                let own = export_plan_with(plan, format, &ExportOptions::default())
                    .unwrap_or_else(|e| panic!("{format}: {e}"));
                assert_eq!(own, export_plan(plan, format), "{format}");
            }
        });
    }

    #[test]
    fn anthropic_hosted_search_replaces_toolcat_tool_search_with_bm25() {
        with_plan(|plan| {
            let v = hosted(plan, ExportFormat::Anthropic).to_json();
            let tools = v.as_array().expect("array");
            assert_eq!(
                tools[0],
                json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
            );
            assert!(tools.iter().all(|t| t["name"] != "tool_search"), "{v}");
            let own = export_plan(plan, ExportFormat::Anthropic).to_json();
            assert!(own
                .as_array()
                .expect("array")
                .iter()
                .any(|t| t["name"] == "tool_search"));
            let deferred: Vec<&Value> = tools
                .iter()
                .filter(|t| t["defer_loading"] == true)
                .map(|t| &t["name"])
                .collect();
            assert_eq!(deferred, [&json!("delete_file")]);
            // Every visible tool but `tool_search` is loaded.
            let loaded = tools
                .iter()
                .filter(|t| t.get("input_schema").is_some() && t.get("defer_loading").is_none())
                .count();
            assert_eq!(loaded, plan.tools().len() - 1);
        });
    }

    #[test]
    fn responses_hosted_search_defers_tools_in_namespaces_per_toolset() {
        with_plan(|plan| {
            let c = plan.catalog();
            let v = hosted(plan, ExportFormat::OpenAiResponses).to_json();
            let tools = v.as_array().expect("array");
            assert!(tools.iter().all(|t| t["name"] != "tool_search"), "{v}");
            let searches: Vec<&Value> = tools
                .iter()
                .filter(|t| t["type"] == "tool_search")
                .collect();
            assert_eq!(searches, [&json!({"type": "tool_search"})]);
            let namespaces: Vec<&Value> =
                tools.iter().filter(|t| t["type"] == "namespace").collect();
            assert_eq!(namespaces.len(), 1, "{v}");
            let ns = namespaces[0];
            let set = c
                .toolset(ns["name"].as_str().expect("name"))
                .expect("a toolset");
            assert_eq!(ns["description"], c.toolset_description(set));
            let members = ns["tools"].as_array().expect("members");
            for m in members {
                assert_eq!(m["type"], "function");
                assert_eq!(m["defer_loading"], true);
                let t = c.tool(m["name"].as_str().expect("name")).expect("known");
                assert!(toolcat_catalog::tables::bit(
                    c.toolset_tools(set),
                    t.index()
                ));
            }
            assert_eq!(members[0]["name"], "delete_file");
            // Top-level functions are the visible ones, loaded.
            let functions = tools.iter().filter(|t| t["type"] == "function");
            assert_eq!(functions.clone().count(), plan.tools().len() - 1);
            assert!(functions.clone().all(|f| f.get("defer_loading").is_none()));
        });
    }

    #[test]
    fn hosted_search_is_refused_for_formats_without_one() {
        with_plan(|plan| {
            for &format in ExportFormat::ALL {
                let result = export_plan_with(
                    plan,
                    format,
                    &ExportOptions {
                        search: SearchMode::Hosted,
                    },
                );
                if ExportFormat::HOSTED_SEARCH.contains(&format) {
                    assert!(result.is_ok(), "{format}");
                } else {
                    let e = result.expect_err("no hosted search");
                    assert_eq!(e, ExportError::HostedSearchUnsupported { format });
                    let text = e.to_string();
                    assert!(
                        text.contains("`anthropic` and `openai-responses`"),
                        "{text}"
                    );
                }
            }
        });
    }

    fn rules(findings: &[Finding]) -> Vec<&'static str> {
        findings.iter().map(|f| f.rule).collect()
    }

    fn function(name: &str, deferred: bool) -> ResponsesFunction {
        ResponsesFunction {
            name: name.into(),
            description: "d".into(),
            parameters: json!({"type": "object", "properties": {}}),
            strict: false,
            defer_loading: deferred,
        }
    }

    #[test]
    fn the_responses_check_refuses_what_tool_search_does_not_take() {
        let f = |name, deferred| ResponsesTool::Function(function(name, deferred));
        let search = || ResponsesTool::ToolSearch(ResponsesToolSearch::default());
        let ns = |name: &str, members: Vec<ResponsesFunction>| {
            ResponsesTool::Namespace(ResponsesNamespace {
                name: name.into(),
                description: "d".into(),
                tools: members.into_iter().map(NamespaceMember::Function).collect(),
            })
        };
        let check =
            |tools: Vec<ResponsesTool>| rules(&Export::OpenAiResponses(tools).check("tool_search"));
        assert!(check(vec![
            f("a", false),
            search(),
            ns("n", vec![function("b", true)])
        ])
        .is_empty());
        // toolcat's own search loads deferred functions too.
        assert!(check(vec![f("tool_search", false), f("b", true)]).is_empty());
        assert_eq!(
            check(vec![f("a", false), f("b", true)]),
            ["openai-tool-search"]
        );
        assert_eq!(check(vec![f("a", false), search()]), ["openai-tool-search"]);
        assert_eq!(check(vec![search(), f("b", true)]), ["openai-tool-search"]);
        assert_eq!(
            check(vec![
                f("a", false),
                search(),
                ns("n", vec![function("b", true), function("c", false)])
            ]),
            ["openai-namespace"]
        );
        assert_eq!(
            check(vec![f("a", false), ns("n", vec![])]),
            ["openai-namespace"]
        );
        assert_eq!(
            check(vec![
                f("a", false),
                search(),
                ns("n", vec![function("a", true)])
            ]),
            ["openai-unique-names"]
        );
        assert_eq!(
            check(vec![
                f("n", false),
                search(),
                ns("n", vec![function("b", true)])
            ]),
            ["openai-unique-names"]
        );
    }

    #[test]
    fn the_anthropic_check_refuses_duplicates_and_an_idle_hosted_search() {
        let tool = |name: &str, deferred| {
            AnthropicTool::Custom(AnthropicCustomTool {
                name: name.into(),
                description: "d".into(),
                input_schema: json!({"type": "object"}),
                defer_loading: deferred,
            })
        };
        let bm25 =
            || AnthropicTool::ToolSearch(AnthropicToolSearch::new(AnthropicToolSearchKind::Bm25));
        let check =
            |tools: Vec<AnthropicTool>| rules(&Export::Anthropic(tools).check("tool_search"));
        assert!(check(vec![bm25(), tool("a", false), tool("b", true)]).is_empty());
        assert_eq!(
            check(vec![bm25(), tool("a", false)]),
            ["anthropic-deferred"]
        );
        assert_eq!(
            check(vec![tool("a", false), tool("a", false)]),
            ["anthropic-unique-names"]
        );
        assert_eq!(
            check(vec![tool("a", false), tool("b", true)]),
            ["anthropic-deferred"]
        );
    }

    #[test]
    fn wire_types_read_back_what_they_write() {
        with_plan(|plan| {
            for &format in ExportFormat::ALL {
                for search in [SearchMode::Own, SearchMode::Hosted] {
                    let Ok(export) = export_plan_with(plan, format, &ExportOptions { search })
                    else {
                        continue;
                    };
                    let v = export.to_json();
                    let back = match format {
                        ExportFormat::Mcp => {
                            Export::Mcp(serde_json::from_value(v.clone()).expect("mcp"))
                        }
                        ExportFormat::OpenAi => {
                            Export::OpenAi(serde_json::from_value(v.clone()).expect("chat"))
                        }
                        ExportFormat::OpenAiResponses => Export::OpenAiResponses(
                            serde_json::from_value(v.clone()).expect("responses"),
                        ),
                        ExportFormat::Anthropic => {
                            Export::Anthropic(serde_json::from_value(v.clone()).expect("anthropic"))
                        }
                        ExportFormat::Gemini => Export::Gemini(GeminiExport {
                            tools: serde_json::from_value(v.clone()).expect("gemini"),
                            refused: Vec::new(),
                        }),
                    };
                    assert_eq!(back, export, "{format} {search:?}");
                }
            }
        });
    }

    /// A catalog whose `outline_document` takes a recursive `$ref` (a tree of headings), which
    /// Gemini's `Schema` cannot express, beside a tool Gemini takes.
    const RECURSIVE: &str = include_str!("../tests/fixtures/gemini-recursive-ref.toml");

    #[test]
    fn gemini_names_every_tool_it_refuses() {
        let c = Catalog::from_source("recursive.toml", RECURSIVE).unwrap_or_else(|e| panic!("{e}"));
        let export = export_tools(&c, c.tools(), ExportFormat::Gemini);
        let refused = export.refused();
        assert_eq!(refused.len(), 1, "{refused:?}");
        let outline = c.tool("outline_document").expect("known");
        assert_eq!(refused[0].tool, c.exported_name(outline));
        assert_eq!(refused[0].rule, "gemini-ref");
        assert!(
            refused[0].message.contains("recursive"),
            "{}",
            refused[0].message
        );
        let v = export.to_json();
        let names: Vec<&Value> = v[0]["functionDeclarations"]
            .as_array()
            .expect("declarations")
            .iter()
            .map(|d| &d["name"])
            .collect();
        let page = c.tool("read_page").expect("known");
        assert_eq!(names, [&json!(c.exported_name(page))]);
        assert_eq!(export.definitions(), 1);
        // The refusal stays off the wire.
        assert!(!v.to_string().contains("gemini-ref"));
        // Every other format declares both.
        for &format in ExportFormat::ALL {
            if format != ExportFormat::Gemini {
                let e = export_tools(&c, c.tools(), format);
                assert_eq!((e.definitions(), e.refused().len()), (2, 0), "{format}");
            }
        }
    }

    #[test]
    fn anthropic_tools_defer_reachable_discoverable_tools() {
        with_plan(|plan| {
            let v = export_plan(plan, ExportFormat::Anthropic).to_json();
            let tools = v.as_array().expect("array");
            let visible = plan.tools().len();
            assert_eq!(tools.len(), visible + plan.counts().deferred);
            assert!(tools[..visible]
                .iter()
                .all(|t| t.get("defer_loading").is_none()));
            let deferred: Vec<&str> = tools[visible..]
                .iter()
                .map(|t| {
                    assert_eq!(t["defer_loading"], true);
                    t["name"].as_str().expect("name")
                })
                .collect();
            assert_eq!(deferred, ["delete_file"]);
            insta::assert_snapshot!("anthropic_tools", pretty(&v));
        });
    }

    #[test]
    fn exports_drop_the_schema_keyword_and_use_exported_names() {
        let c = fixture::catalog();
        let pr = c.tool("createPullRequest").expect("known");
        let mut schema = c.input_schema(pr).clone();
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema".into();
        let with_keyword = {
            let mut v = schema.clone();
            if let Value::Object(m) = &mut v {
                m.shift_remove("$schema");
            }
            v
        };
        assert_eq!(exported_schema(&c, pr), with_keyword);
        let v = Export::OpenAi(openai_tools(&c, [pr])).to_json();
        assert_eq!(v[0]["function"]["name"], "github__createPullRequest");
        // The same input gives the same bytes.
        assert_eq!(
            export_tools(&c, c.tools(), ExportFormat::Mcp).to_json(),
            export_tools(&c, c.tools(), ExportFormat::Mcp).to_json()
        );
    }

    #[test]
    fn format_names_round_trip() {
        for f in ExportFormat::ALL {
            assert_eq!(ExportFormat::parse(f.as_str()), Some(*f));
            if *f != ExportFormat::OpenAiResponses {
                assert_eq!(f.as_str(), f.target().as_str());
            }
            let json = serde_json::to_value(f).expect("serializes");
            assert_eq!(json, f.as_str());
        }
        assert_eq!(
            ExportFormat::parse("openai-responses"),
            Some(ExportFormat::OpenAiResponses)
        );
        assert_eq!(ExportFormat::OpenAiResponses.target(), Target::OpenAi);
        assert_eq!(ExportFormat::parse("gemini"), Some(ExportFormat::Gemini));
        assert_eq!(ExportFormat::parse("vertex"), None);
    }

    #[test]
    fn gemini_tools_shape() {
        with_plan(|plan| {
            let v = export_plan(plan, ExportFormat::Gemini).to_json();
            let outer = v.as_array().expect("tools array");
            assert_eq!(outer.len(), 1);
            let declarations = outer[0]["functionDeclarations"]
                .as_array()
                .expect("functionDeclarations");
            assert_eq!(declarations.len(), plan.tools().len());
            for (d, &t) in declarations.iter().zip(plan.tools()) {
                assert_eq!(d["name"], plan.catalog().exported_name(t));
                if let Some(parameters) = d.get("parameters") {
                    let text = parameters.to_string();
                    for banned in ["additionalProperties", "$ref", "$defs", "\"const\""] {
                        assert!(!text.contains(banned), "{banned} in {text}");
                    }
                    assert!(!parameters["properties"]
                        .as_object()
                        .expect("properties")
                        .is_empty());
                }
            }
            insta::assert_snapshot!("gemini_tools", pretty(&v));
        });
    }

    #[test]
    fn openai_strict_arguments_are_restored_before_dispatch() {
        let c = fixture::catalog();
        // `list_branches` declares `repo` without `required`: strict mode makes it nullable.
        let t = c.tool("github__list_branches").expect("known");
        let tool = serde_json::to_value(openai_tool(&c, t)).expect("serializes");
        assert_eq!(tool["function"]["strict"], true);
        assert_eq!(
            tool["function"]["parameters"]["properties"]["repo"]["type"],
            json!(["string", "null"])
        );
        let mut args = json!({"repo": null});
        assert_eq!(restore_openai_arguments(&c, t, &mut args), 1);
        assert_eq!(args, json!({}));
        let mut args = json!({"repo": "toolcat"});
        assert_eq!(restore_openai_arguments(&c, t, &mut args), 0);
        assert_eq!(args, json!({"repo": "toolcat"}));
    }

    #[test]
    fn target_report_covers_names_schemas_and_requests() {
        let c = fixture::catalog();
        let report = target_report(&c, Target::ALL);
        assert_eq!(report.tools.len(), c.len() * Target::ALL.len());
        assert_eq!(report.errors(), 0, "{}", report.render());
        // Local tools of a catalog without handlers are counted, not checked.
        let unchecked = report
            .tools
            .iter()
            .filter(|o| o.target == Target::OpenAi && !o.schema_checked)
            .count();
        let local = c
            .tools()
            .filter(|&t| matches!(c.source(t), crate::catalog::ToolSource::Local))
            .count();
        assert_eq!(unchecked, local);
        // A server tool is rewritten for strict mode, and the report says so.
        let branches = report
            .tools
            .iter()
            .find(|o| o.target == Target::OpenAi && o.tool == "github__list_branches")
            .expect("reported");
        assert_eq!(branches.strict, Some(true));
        assert!(branches
            .findings
            .iter()
            .any(|f| f.rule == "openai-strict-required" && f.path == "/properties/repo"));
        // `tool_call` takes free-form `arguments`: strict mode cannot express it.
        let call = report
            .tools
            .iter()
            .find(|o| o.target == Target::OpenAi && o.tool == "tool_call")
            .expect("reported");
        assert_eq!(call.strict, Some(false));
    }
}
