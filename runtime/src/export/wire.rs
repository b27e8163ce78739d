//! The wire types of every export: one Rust type per provider tool definition, serialized with the
//! provider's own key names in the order the module documentation of [`crate::export`] lists.
//!
//! Every type is `Serialize + Deserialize`, so an export is one `serde_json::to_value` away from
//! the JSON a provider takes, and a provider's JSON reads back into the same type. Optional keys
//! are left out when unset (`defer_loading` when `false`, Gemini `parameters` when `None`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::McpAnnotations;

fn is_false(b: &bool) -> bool {
    !*b
}

// ---- MCP ----

/// An MCP tool definition: `{"name","description","inputSchema","outputSchema"?,"annotations"}`
/// (<https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool>).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool {
    pub name: String,
    pub description: String,
    /// The input JSON Schema.
    pub input_schema: Value,
    /// The output JSON Schema, an object schema; left out when the tool has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    pub annotations: McpAnnotations,
}

/// An MCP `tools/list` result: `{"tools":[...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpToolsList {
    pub tools: Vec<McpTool>,
}

// ---- OpenAI Chat Completions ----

/// An OpenAI Chat Completions tool: `{"type":"function","function":{...}}`
/// (<https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools>).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatTool {
    Function { function: ChatFunction },
}

/// The `function` of a [`ChatTool`]: `{"name","description","parameters","strict"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatFunction {
    pub name: String,
    pub description: String,
    /// The input JSON Schema, rewritten for strict mode when `strict`.
    pub parameters: Value,
    pub strict: bool,
}

// ---- OpenAI Responses ----

/// One entry of an OpenAI Responses API `tools` array
/// (<https://platform.openai.com/docs/api-reference/responses/create#responses-create-tools>,
/// tool search: <https://developers.openai.com/api/docs/guides/tools-tool-search>):
/// - a flat function tool `{"type":"function","name","description","parameters","strict"}`,
///   with `"defer_loading": true` when tool search loads it on demand;
/// - the hosted tool search `{"type":"tool_search"}`, which loads deferred functions and
///   namespace members;
/// - a namespace `{"type":"namespace","name","description","tools":[function...]}` grouping
///   functions; the model sees only its name and description until tool search loads a member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponsesTool {
    Function(ResponsesFunction),
    ToolSearch(ResponsesToolSearch),
    Namespace(ResponsesNamespace),
}

/// A Responses function tool (without its `"type":"function"` tag, which the enclosing enum
/// writes first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponsesFunction {
    pub name: String,
    pub description: String,
    /// The input JSON Schema, rewritten for strict mode when `strict`.
    pub parameters: Value,
    pub strict: bool,
    /// `true`: only the name and description are in context until tool search loads it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub defer_loading: bool,
}

/// The hosted tool search tool, `{"type":"tool_search"}`; `execution` left out means OpenAI runs
/// the search (`"server"`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponsesToolSearch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolSearchExecution>,
}

/// Who runs a Responses tool search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolSearchExecution {
    Server,
    Client,
}

/// A Responses namespace: functions grouped under a name the model calls them through. The
/// deferral is per member (`defer_loading` applies to the functions inside, not to the namespace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponsesNamespace {
    pub name: String,
    pub description: String,
    pub tools: Vec<NamespaceMember>,
}

/// A member of a [`ResponsesNamespace`]: a function tool, tagged `"type":"function"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NamespaceMember {
    Function(ResponsesFunction),
}

// ---- Anthropic ----

/// One entry of an Anthropic Messages `tools` array
/// (<https://docs.anthropic.com/en/api/messages#body-tools>): a client tool, or one of the
/// hosted tool search tools
/// (<https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/tool-search-tool>).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AnthropicTool {
    ToolSearch(AnthropicToolSearch),
    Custom(AnthropicCustomTool),
}

/// An Anthropic client tool: `{"name","description","input_schema"}`, plus
/// `"defer_loading": true` when the API's tool search loads it on demand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnthropicCustomTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "is_false")]
    pub defer_loading: bool,
}

/// An Anthropic hosted tool search tool: `{"type","name"}`, e.g.
/// `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnthropicToolSearch {
    #[serde(rename = "type")]
    pub kind: AnthropicToolSearchKind,
    pub name: String,
}

/// Which hosted search Anthropic runs over the deferred tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AnthropicToolSearchKind {
    /// Natural-language queries ranked with BM25; named `tool_search_tool_bm25`.
    #[serde(rename = "tool_search_tool_bm25_20251119")]
    Bm25,
    /// Python `re` patterns over names and descriptions; named `tool_search_tool_regex`.
    #[serde(rename = "tool_search_tool_regex_20251119")]
    Regex,
}

impl AnthropicToolSearchKind {
    /// The name the API expects with this `type`.
    pub const fn name(self) -> &'static str {
        match self {
            AnthropicToolSearchKind::Bm25 => "tool_search_tool_bm25",
            AnthropicToolSearchKind::Regex => "tool_search_tool_regex",
        }
    }
}

impl AnthropicToolSearch {
    /// The hosted search tool of `kind`, with the name the API expects.
    pub fn new(kind: AnthropicToolSearchKind) -> Self {
        AnthropicToolSearch {
            kind,
            name: kind.name().to_string(),
        }
    }
}

// ---- Gemini ----

/// A Gemini `Tool` holding function declarations, `{"functionDeclarations":[...]}`
/// (<https://ai.google.dev/api/caching#Tool>).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GeminiTool {
    pub function_declarations: Vec<FunctionDeclaration>,
}

/// A Gemini `FunctionDeclaration`, `{"name","description","parameters"}`
/// (<https://ai.google.dev/api/caching#FunctionDeclaration>); `parameters` (Gemini's `Schema`
/// subset) left out for a tool without arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDeclaration {
    pub name: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
}

/// A tool an export left out because the target refuses its input schema, with the first
/// error finding of [`toolcat_catalog::targets`] that refused it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedTool {
    /// Exported name.
    pub tool: String,
    /// Rule id in [`toolcat_catalog::targets::RULES`], e.g. `gemini-ref`.
    pub rule: String,
    /// JSON Pointer into the exported input schema (`""` is the root).
    pub path: String,
    pub message: String,
}

/// The Gemini export: `tools` (the request's, with one [`GeminiTool`]) and the tools refused.
/// Only `tools` goes on the wire ([`crate::export::Export`] serializes it alone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeminiExport {
    pub tools: Vec<GeminiTool>,
    pub refused: Vec<RefusedTool>,
}
