//! Tool definitions in the wire shapes of MCP and of the OpenAI, Anthropic and Gemini APIs, and
//! the report of what each export target required ([`target_report`]).
//!
//! Every export uses exported names (`NS__name`), keeps the order of the tools it is given, and
//! writes keys in a fixed order (the order below; `serde_json` keeps insertion order), so the same
//! plan always serializes to the same bytes:
//!
//! - MCP `tools/list` result: `{"tools":[{"name","description","inputSchema","annotations"}]}`,
//!   annotations derived from the effect ([`crate::catalog::McpAnnotations`]);
//! - OpenAI function tools (Chat Completions):
//!   `[{"type":"function","function":{"name","description","parameters","strict"}}]`, the
//!   parameters rewritten for strict mode (`"strict": true`) where strict mode can express them,
//!   else sent unchanged with `"strict": false` — the documented fallback
//!   ([`toolcat_catalog::targets::openai`]). A call of a strict tool carries `null` for every
//!   argument the model leaves out; [`restore_openai_arguments`] removes those before the
//!   arguments are validated and dispatched;
//! - OpenAI Responses API function tools, flat:
//!   `[{"type":"function","name","description","parameters","strict"}]`, the same strict
//!   rewrite as Chat Completions;
//! - Anthropic Messages tools: `[{"name","description","input_schema"}]`, plus, for a plan, every
//!   deferred tool (discoverable, reachable in profile ∩ active toolsets, not visible this turn)
//!   after the visible ones with `"defer_loading": true`, so the API's tool search can load it
//!   (Anthropic's tool-search documentation);
//! - Gemini function declarations: `[{"functionDeclarations":[{"name","description","parameters"}]}]`
//!   (the request's `tools`), the parameters rewritten into Gemini's `Schema` subset
//!   ([`toolcat_catalog::targets::gemini`]); `parameters` is left out for a tool without
//!   arguments (Gemini rejects an object schema without properties), and a tool whose schema
//!   cannot be rewritten (a recursive `$ref`) is left out of the export — the report names it.
//!
//! Input schemas are [`Catalog::input_schema`] without a top-level `$schema` keyword: it tells
//! the model nothing and costs tokens on every turn.

use serde::Serialize;
use serde_json::{json, Map, Value};

use toolcat_catalog::targets::{self, Report, Target, ToolInput};

use crate::catalog::{Catalog, ToolIndex, ToolSource};
use crate::plan::{Plan, TurnInput, TurnPlanner};

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

/// The input schema of `t` as exported: [`Catalog::input_schema`] without a top-level `$schema`.
pub fn exported_schema(catalog: &Catalog, t: ToolIndex) -> Value {
    let mut schema = catalog.input_schema(t).clone();
    if let Value::Object(map) = &mut schema {
        map.shift_remove("$schema");
    }
    schema
}

/// One MCP tool definition: `{"name","description","inputSchema","annotations"}`.
pub fn mcp_tool(catalog: &Catalog, t: ToolIndex) -> Value {
    json!({
        "name": catalog.exported_name(t),
        "description": catalog.description(t),
        "inputSchema": exported_schema(catalog, t),
        "annotations": catalog.mcp_annotations(t),
    })
}

/// An MCP `tools/list` result: `{"tools":[...]}` with one [`mcp_tool`] per tool, in order.
pub fn mcp_tools_list(catalog: &Catalog, tools: impl IntoIterator<Item = ToolIndex>) -> Value {
    let tools: Vec<Value> = tools.into_iter().map(|t| mcp_tool(catalog, t)).collect();
    json!({ "tools": tools })
}

/// One OpenAI function tool:
/// `{"type":"function","function":{"name","description","parameters","strict"}}`, strict where
/// strict mode can express the input schema (see the module documentation).
pub fn openai_tool(catalog: &Catalog, t: ToolIndex) -> Value {
    let name = catalog.exported_name(t);
    let exported = targets::openai(name, &exported_schema(catalog, t));
    json!({
        "type": "function",
        "function": {
            "name": name,
            "description": catalog.description(t),
            "parameters": exported.schema,
            "strict": exported.strict == Some(true),
        },
    })
}

/// OpenAI Chat Completions `tools`: an array of [`openai_tool`], in order.
pub fn openai_tools(catalog: &Catalog, tools: impl IntoIterator<Item = ToolIndex>) -> Value {
    Value::Array(tools.into_iter().map(|t| openai_tool(catalog, t)).collect())
}

/// One OpenAI Responses API function tool, flat:
/// `{"type":"function","name","description","parameters","strict"}`, with the same strict
/// rewrite as [`openai_tool`].
pub fn openai_responses_tool(catalog: &Catalog, t: ToolIndex) -> Value {
    let name = catalog.exported_name(t);
    let exported = targets::openai(name, &exported_schema(catalog, t));
    json!({
        "type": "function",
        "name": name,
        "description": catalog.description(t),
        "parameters": exported.schema,
        "strict": exported.strict == Some(true),
    })
}

/// OpenAI Responses API `tools`: an array of [`openai_responses_tool`], in order.
pub fn openai_responses_tools(
    catalog: &Catalog,
    tools: impl IntoIterator<Item = ToolIndex>,
) -> Value {
    Value::Array(
        tools
            .into_iter()
            .map(|t| openai_responses_tool(catalog, t))
            .collect(),
    )
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
/// out for a tool without arguments), or `None` when the input schema cannot be rewritten for
/// Gemini ([`target_report`] says why).
pub fn gemini_declaration(catalog: &Catalog, t: ToolIndex) -> Option<Value> {
    let name = catalog.exported_name(t);
    let exported = targets::gemini(name, &exported_schema(catalog, t));
    if !exported.is_ok() {
        return None;
    }
    let mut map = Map::new();
    map.insert("name".into(), name.into());
    map.insert("description".into(), catalog.description(t).into());
    let has_properties = exported
        .schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if has_properties {
        map.insert("parameters".into(), exported.schema);
    }
    Some(Value::Object(map))
}

/// Gemini `tools`: `[{"functionDeclarations":[...]}]` with one [`gemini_declaration`] per tool
/// that can be exported, in order.
pub fn gemini_tools(catalog: &Catalog, tools: impl IntoIterator<Item = ToolIndex>) -> Value {
    let declarations: Vec<Value> = tools
        .into_iter()
        .filter_map(|t| gemini_declaration(catalog, t))
        .collect();
    json!([{ "functionDeclarations": declarations }])
}

/// One Anthropic tool: `{"name","description","input_schema"}`, plus `"defer_loading": true`
/// when `deferred`.
pub fn anthropic_tool(catalog: &Catalog, t: ToolIndex, deferred: bool) -> Value {
    let mut map = Map::new();
    map.insert("name".into(), catalog.exported_name(t).into());
    map.insert("description".into(), catalog.description(t).into());
    map.insert("input_schema".into(), exported_schema(catalog, t));
    if deferred {
        map.insert("defer_loading".into(), true.into());
    }
    Value::Object(map)
}

/// Anthropic Messages `tools`: the `tools` in order, then each of `deferred` not already among
/// them with `"defer_loading": true`.
pub fn anthropic_tools(
    catalog: &Catalog,
    tools: impl IntoIterator<Item = ToolIndex>,
    deferred: impl IntoIterator<Item = ToolIndex>,
) -> Value {
    let tools: Vec<ToolIndex> = tools.into_iter().collect();
    let mut out: Vec<Value> = tools
        .iter()
        .map(|&t| anthropic_tool(catalog, t, false))
        .collect();
    for t in deferred {
        if !tools.contains(&t) {
            out.push(anthropic_tool(catalog, t, true));
        }
    }
    Value::Array(out)
}

/// `tools` in `format`, with nothing deferred.
pub fn export_tools(
    catalog: &Catalog,
    tools: impl IntoIterator<Item = ToolIndex>,
    format: ExportFormat,
) -> Value {
    match format {
        ExportFormat::Mcp => mcp_tools_list(catalog, tools),
        ExportFormat::OpenAi => openai_tools(catalog, tools),
        ExportFormat::OpenAiResponses => openai_responses_tools(catalog, tools),
        ExportFormat::Anthropic => anthropic_tools(catalog, tools, []),
        ExportFormat::Gemini => gemini_tools(catalog, tools),
    }
}

/// A plan's visible tools in `format`, in plan order; the Anthropic export also carries the
/// plan's deferred tools with `defer_loading` ([`Plan::deferred`]).
pub fn export_plan(plan: &Plan<'_>, format: ExportFormat) -> Value {
    let catalog = plan.catalog();
    let tools = plan.tools().iter().copied();
    match format {
        ExportFormat::Anthropic => anthropic_tools(catalog, tools, plan.deferred()),
        _ => export_tools(catalog, tools, format),
    }
}

/// Checks the whole catalog against `targets`: every tool's exported name and input schema
/// (a local tool's schema is its handler's; a local tool without a handler — a catalog loaded
/// from a file — is counted as unchecked), and, for `anthropic`, the request of every preset and
/// of every profile no preset runs under (its toolsets all active, nothing discovered yet): its
/// deferred tools need a loaded `tool_search` and at least one loaded tool.
pub fn target_report(catalog: &Catalog, targets: &[Target]) -> Report {
    let schemas: Vec<Option<Value>> = catalog
        .tools()
        .map(|t| {
            let known =
                !matches!(catalog.source(t), ToolSource::Local) || catalog.handler(t).is_some();
            known.then(|| exported_schema(catalog, t))
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
    if targets.contains(&Target::Anthropic) {
        let search = catalog
            .tool("tool_search")
            .map(|t| catalog.exported_name(t))
            .unwrap_or("tool_search");
        let mut planner = TurnPlanner::new(catalog);
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
        for (what, profile, toolsets) in requests {
            let plan = planner.plan(
                catalog,
                &TurnInput {
                    profile,
                    toolsets: &toolsets,
                    discovered: &[],
                    named: &[],
                },
            );
            let tools = export_plan(&plan, ExportFormat::Anthropic);
            for finding in targets::check_anthropic_request(&tools, search) {
                report.requests.push((what.clone(), finding));
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::plan::{TurnInput, TurnPlanner};

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
            let v = export_plan(plan, ExportFormat::Mcp);
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
            let v = export_plan(plan, ExportFormat::OpenAi);
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
            let chat = export_plan(plan, ExportFormat::OpenAi);
            let responses = export_plan(plan, ExportFormat::OpenAiResponses);
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

    #[test]
    fn anthropic_tools_defer_reachable_discoverable_tools() {
        with_plan(|plan| {
            let v = export_plan(plan, ExportFormat::Anthropic);
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
        let v = openai_tools(&c, [pr]);
        assert_eq!(v[0]["function"]["name"], "github__createPullRequest");
        // The same input gives the same bytes.
        assert_eq!(
            mcp_tools_list(&c, c.tools()).to_string(),
            mcp_tools_list(&c, c.tools()).to_string()
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
            let v = export_plan(plan, ExportFormat::Gemini);
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
        let tool = openai_tool(&c, t);
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
            .filter(|&t| matches!(c.source(t), ToolSource::Local))
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
