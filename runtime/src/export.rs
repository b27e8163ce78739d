//! Tool definitions in the wire shapes of MCP and of the OpenAI and Anthropic APIs.
//!
//! Every export uses exported names (`NS__name`), keeps the order of the tools it is given, and
//! writes keys in a fixed order (the order below; `serde_json` keeps insertion order), so the same
//! plan always serializes to the same bytes:
//!
//! - MCP `tools/list` result: `{"tools":[{"name","description","inputSchema","annotations"}]}`,
//!   annotations derived from the effect ([`crate::catalog::McpAnnotations`]);
//! - OpenAI Chat Completions tools: `[{"type":"function","function":{"name","description","parameters"}}]`;
//! - Anthropic Messages tools: `[{"name","description","input_schema"}]`, plus, for a plan, every
//!   deferred tool (discoverable, reachable in profile ∩ active toolsets, not visible this turn)
//!   after the visible ones with `"defer_loading": true`, so the API's tool search can load it
//!   (Anthropic's tool-search documentation).
//!
//! Input schemas are [`Catalog::input_schema`] without a top-level `$schema` keyword: it tells
//! the model nothing and costs tokens on every turn.

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::catalog::{Catalog, ToolIndex};
use crate::plan::Plan;

/// A wire shape for tool definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// MCP `tools/list` result.
    Mcp,
    /// OpenAI Chat Completions `tools`.
    OpenAi,
    /// Anthropic Messages `tools`.
    Anthropic,
}

impl ExportFormat {
    /// Every format.
    pub const ALL: &'static [ExportFormat] = &[
        ExportFormat::Mcp,
        ExportFormat::OpenAi,
        ExportFormat::Anthropic,
    ];

    /// `mcp`, `openai` or `anthropic`: the spelling of the CLI and of file names.
    pub const fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Mcp => "mcp",
            ExportFormat::OpenAi => "openai",
            ExportFormat::Anthropic => "anthropic",
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

/// One OpenAI function tool: `{"type":"function","function":{"name","description","parameters"}}`.
pub fn openai_tool(catalog: &Catalog, t: ToolIndex) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": catalog.exported_name(t),
            "description": catalog.description(t),
            "parameters": exported_schema(catalog, t),
        },
    })
}

/// OpenAI Chat Completions `tools`: an array of [`openai_tool`], in order.
pub fn openai_tools(catalog: &Catalog, tools: impl IntoIterator<Item = ToolIndex>) -> Value {
    Value::Array(tools.into_iter().map(|t| openai_tool(catalog, t)).collect())
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
        ExportFormat::Anthropic => anthropic_tools(catalog, tools, []),
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
                assert_eq!(keys, ["name", "description", "parameters"]);
                assert_eq!(tool["function"]["parameters"]["type"], "object");
            }
            insta::assert_snapshot!("openai_tools", pretty(&v));
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
        }
        assert_eq!(ExportFormat::parse("gemini"), None);
    }
}
