//! Provider messages: the tool calls of a model's response, read out of each provider's response
//! shape, and the result messages to send back, in that provider's shape. The shapes are those of
//! the providers' public API references:
//!
//! | format | calls read from | results sent back |
//! | --- | --- | --- |
//! | [`ExportFormat::Mcp`] | a `tools/call` request's `params` `{"name","arguments"?}` | one `CallToolResult` `{"content":[{"type":"text","text"}],"isError"}` |
//! | [`ExportFormat::OpenAi`] (Chat Completions) | `choices[0].message.tool_calls[]` `{"id","type":"function","function":{"name","arguments"}}`, `arguments` a JSON string | one message per call `{"role":"tool","tool_call_id","content"}` |
//! | [`ExportFormat::OpenAiResponses`] | `output[]` items `{"type":"function_call","call_id","name","arguments","namespace"?}` (the namespace of a hosted search's deferred function is not needed: `name` is the exported name; other items, hosted `tool_search_call`/`tool_search_output` among them, skipped) | one input item per call `{"type":"function_call_output","call_id","output"}` |
//! | [`ExportFormat::Anthropic`] (Messages) | `content[]` blocks `{"type":"tool_use","id","name","input"}` (other blocks, hosted `server_tool_use`/`tool_search_tool_result` among them, skipped) | one user message `{"role":"user","content":[{"type":"tool_result","tool_use_id","content":[...],"is_error"?}]}` |
//! | [`ExportFormat::Gemini`] | `candidates[0].content.parts[].functionCall` `{"name","args"?,"id"?}` | one content `{"role":"user","parts":[{"functionResponse":{"name","response","id"?}}]}` |
//!
//! Sources: <https://modelcontextprotocol.io/specification/2025-06-18/server/tools>,
//! <https://platform.openai.com/docs/api-reference/chat/object>,
//! <https://platform.openai.com/docs/guides/function-calling> (Chat and Responses),
//! <https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use>,
//! <https://ai.google.dev/gemini-api/docs/function-calling>.
//!
//! Calls keep the response's order (parallel calls are answered in that order). An `arguments`
//! string that is not JSON does not fail the response: that call gets
//! [`ProviderCall::arguments`] `Err(reason)`, and the session answers it with an
//! `invalid-arguments` error ([`crate::Session::handle_response`]). Anthropic result content is
//! [`CallResult::blocks`]; `is_error` is written only when true. Gemini's `response` is
//! `{"output": VALUE}` for a result and `{"error": VALUE}` for an error (the keys Gemini's
//! documentation names), `VALUE` the result's JSON, or its text when it is not JSON.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::export::ExportFormat;
use crate::meta::{CallResult, ContentBlock};

/// One tool call read out of a provider's response.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderCall {
    /// The provider's id of the call (Chat `id`, Responses `call_id`, Anthropic `id`, Gemini
    /// `id` when it sends one; MCP none), echoed in the result.
    pub id: Option<String>,
    /// The tool name as the model wrote it.
    pub name: String,
    /// The arguments, or why they could not be read (an OpenAI `arguments` string that is not
    /// JSON).
    pub arguments: Result<Value, String>,
}

/// A provider response whose shape is not the format's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a `{format}` response: {message}; expected {expected}")]
pub struct ProviderError {
    /// The format the response was read as.
    pub format: ExportFormat,
    /// What did not fit.
    pub message: String,
    /// The shape the format expects.
    pub expected: &'static str,
}

/// The tool calls of `response`, a provider's response body in `format` (see the module docs),
/// in order. A response without tool calls has none.
///
/// # Errors
/// [`ProviderError`] when `response` is not of the format's shape (a Chat or Gemini response
/// without `choices[0]` / `candidates[0]`, a block or call missing its `name`, ...).
pub fn parse_calls(
    format: ExportFormat,
    response: &Value,
) -> Result<Vec<ProviderCall>, ProviderError> {
    let error = |e: serde_json::Error| ProviderError {
        format,
        message: e.to_string(),
        expected: expected(format),
    };
    let calls = match format {
        ExportFormat::Mcp => {
            let p = McpCallParams::deserialize(response).map_err(error)?;
            vec![ProviderCall {
                id: None,
                name: p.name,
                arguments: Ok(p.arguments.unwrap_or_else(empty_object)),
            }]
        }
        ExportFormat::OpenAi => {
            let r = ChatCompletion::deserialize(response).map_err(error)?;
            let Some(choice) = r.choices.into_iter().next() else {
                return Err(ProviderError {
                    format,
                    message: "`choices` is empty".to_string(),
                    expected: expected(format),
                });
            };
            choice
                .message
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .map(|c| ProviderCall {
                    id: Some(c.id),
                    name: c.function.name,
                    arguments: json_arguments(&c.function.arguments),
                })
                .collect()
        }
        ExportFormat::OpenAiResponses => {
            let r = ResponsesResponse::deserialize(response).map_err(error)?;
            r.output
                .into_iter()
                .filter_map(|item| match item {
                    ResponsesItem::FunctionCall {
                        call_id,
                        name,
                        arguments,
                    } => Some(ProviderCall {
                        id: Some(call_id),
                        name,
                        arguments: json_arguments(&arguments),
                    }),
                    ResponsesItem::Other => None,
                })
                .collect()
        }
        ExportFormat::Anthropic => {
            let r = AnthropicMessage::deserialize(response).map_err(error)?;
            r.content
                .into_iter()
                .filter_map(|block| match block {
                    AnthropicBlock::ToolUse { id, name, input } => Some(ProviderCall {
                        id: Some(id),
                        name,
                        arguments: Ok(input),
                    }),
                    AnthropicBlock::Other => None,
                })
                .collect()
        }
        ExportFormat::Gemini => {
            let r = GeminiResponse::deserialize(response).map_err(error)?;
            let Some(candidate) = r.candidates.into_iter().next() else {
                return Err(ProviderError {
                    format,
                    message: "`candidates` is empty".to_string(),
                    expected: expected(format),
                });
            };
            candidate
                .content
                .parts
                .into_iter()
                .filter_map(|part| part.function_call)
                .map(|f| ProviderCall {
                    id: f.id,
                    name: f.name,
                    arguments: Ok(f.args.unwrap_or_else(empty_object)),
                })
                .collect()
        }
    };
    Ok(calls)
}

/// The messages that answer `calls` with `results` (one result per call, same order), in
/// `format` (see the module docs): what the host appends to the conversation (Chat `messages`,
/// Responses `input`, Anthropic `messages`, Gemini `contents`; MCP one `CallToolResult` per call).
///
/// # Panics
/// Never; a result without a call (or a call without a result) is left out.
pub fn result_messages(
    format: ExportFormat,
    calls: &[ProviderCall],
    results: &[CallResult],
) -> Vec<Value> {
    if calls.is_empty() {
        // A response without tool calls is answered by the host's next user message, not by an
        // empty result message (Anthropic and Gemini refuse empty content).
        return Vec::new();
    }
    let pairs = calls.iter().zip(results);
    let id = |c: &ProviderCall| c.id.clone().unwrap_or_default();
    match format {
        ExportFormat::Mcp => pairs
            .map(|(_, r)| {
                to_value(McpCallResult {
                    content: r.blocks(),
                    is_error: r.is_error,
                })
            })
            .collect(),
        ExportFormat::OpenAi => pairs
            .map(|(c, r)| {
                to_value(ChatToolMessage {
                    role: "tool",
                    tool_call_id: id(c),
                    content: r.text.clone(),
                })
            })
            .collect(),
        ExportFormat::OpenAiResponses => pairs
            .map(|(c, r)| {
                to_value(FunctionCallOutput {
                    kind: "function_call_output",
                    call_id: id(c),
                    output: r.text.clone(),
                })
            })
            .collect(),
        ExportFormat::Anthropic => {
            let content = pairs
                .map(|(c, r)| AnthropicToolResult {
                    kind: "tool_result",
                    tool_use_id: id(c),
                    content: r.blocks(),
                    is_error: r.is_error.then_some(true),
                })
                .collect();
            vec![to_value(AnthropicUserMessage {
                role: "user",
                content,
            })]
        }
        ExportFormat::Gemini => {
            let parts = pairs
                .map(|(c, r)| {
                    let value = serde_json::from_str(&r.text)
                        .unwrap_or_else(|_| Value::String(r.text.clone()));
                    let key = if r.is_error { "error" } else { "output" };
                    let mut response = Map::new();
                    response.insert(key.to_string(), value);
                    GeminiPart {
                        function_response: GeminiFunctionResponse {
                            name: c.name.clone(),
                            response: Value::Object(response),
                            id: c.id.clone(),
                        },
                    }
                })
                .collect();
            vec![to_value(GeminiContent {
                role: "user",
                parts,
            })]
        }
    }
}

/// The shape `format` expects, for [`ProviderError`].
fn expected(format: ExportFormat) -> &'static str {
    match format {
        ExportFormat::Mcp => "MCP `tools/call` params {\"name\", \"arguments\"?}",
        ExportFormat::OpenAi => {
            "a Chat Completions response {\"choices\":[{\"message\":{\"tool_calls\"?:[{\"id\",\"function\":{\"name\",\"arguments\"}}]}}]}"
        }
        ExportFormat::OpenAiResponses => {
            "a Responses API response {\"output\":[{\"type\":\"function_call\",\"call_id\",\"name\",\"arguments\"}, ...]}"
        }
        ExportFormat::Anthropic => {
            "a Messages API response {\"content\":[{\"type\":\"tool_use\",\"id\",\"name\",\"input\"}, ...]}"
        }
        ExportFormat::Gemini => {
            "a generateContent response {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\",\"args\"?,\"id\"?}}, ...]}}]}"
        }
    }
}

/// An OpenAI `arguments` string read as JSON; an empty string is `{}`.
fn json_arguments(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(empty_object());
    }
    serde_json::from_str(text).map_err(|e| {
        format!("the arguments string is not JSON ({e}); send the arguments as one JSON object")
    })
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

fn to_value(message: impl Serialize) -> Value {
    // These types hold strings, JSON values and options only: serializing cannot fail.
    serde_json::to_value(message).unwrap_or(Value::Null)
}

// ---- Response shapes (only the fields read; others are ignored) ----

#[derive(Deserialize)]
struct McpCallParams {
    name: String,
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct ChatCompletion {
    choices: Vec<ChatChoice>,
}

#[derive(Deserialize)]
struct ChatChoice {
    message: ChatMessage,
}

#[derive(Deserialize)]
struct ChatMessage {
    tool_calls: Option<Vec<ChatToolCall>>,
}

#[derive(Deserialize)]
struct ChatToolCall {
    id: String,
    function: ChatFunction,
}

#[derive(Deserialize)]
struct ChatFunction {
    name: String,
    arguments: String,
}

#[derive(Deserialize)]
struct ResponsesResponse {
    output: Vec<ResponsesItem>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResponsesItem {
    FunctionCall {
        call_id: String,
        name: String,
        arguments: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct AnthropicMessage {
    content: Vec<AnthropicBlock>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum AnthropicBlock {
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct GeminiResponse {
    candidates: Vec<GeminiCandidate>,
}

#[derive(Deserialize)]
struct GeminiCandidate {
    /// Absent when generation stopped early (`finishReason` `SAFETY`, `MALFORMED_FUNCTION_CALL`):
    /// no calls.
    #[serde(default)]
    content: GeminiCandidateContent,
}

#[derive(Deserialize, Default)]
struct GeminiCandidateContent {
    #[serde(default)]
    parts: Vec<GeminiResponsePart>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GeminiResponsePart {
    function_call: Option<GeminiFunctionCall>,
}

#[derive(Deserialize)]
struct GeminiFunctionCall {
    name: String,
    args: Option<Value>,
    id: Option<String>,
}

// ---- Result shapes ----

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct McpCallResult {
    content: Vec<ContentBlock>,
    is_error: bool,
}

#[derive(Serialize)]
struct ChatToolMessage {
    role: &'static str,
    tool_call_id: String,
    content: String,
}

#[derive(Serialize)]
struct FunctionCallOutput {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: String,
    output: String,
}

#[derive(Serialize)]
struct AnthropicUserMessage {
    role: &'static str,
    content: Vec<AnthropicToolResult>,
}

#[derive(Serialize)]
struct AnthropicToolResult {
    #[serde(rename = "type")]
    kind: &'static str,
    tool_use_id: String,
    content: Vec<ContentBlock>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_error: Option<bool>,
}

#[derive(Serialize)]
struct GeminiContent {
    role: &'static str,
    parts: Vec<GeminiPart>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GeminiPart {
    function_response: GeminiFunctionResponse,
}

#[derive(Serialize)]
struct GeminiFunctionResponse {
    name: String,
    response: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::Outcome;
    use serde_json::json;

    fn ok(text: &str) -> CallResult {
        CallResult {
            text: text.to_string(),
            content: Vec::new(),
            is_error: false,
            outcome: Outcome::Failed,
            ran: None,
        }
    }

    #[test]
    fn chat_calls_keep_order_and_a_malformed_string_is_that_calls_error() {
        let response = json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{\"x\":1}"}},
            {"id": "call_2", "type": "function", "function": {"name": "b", "arguments": "{\"x\":"}}
        ]}}]});
        let calls = parse_calls(ExportFormat::OpenAi, &response).expect("a Chat response");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].id.as_deref(), Some("call_1"));
        assert_eq!(calls[0].arguments, Ok(json!({"x": 1})));
        assert!(calls[1]
            .arguments
            .as_ref()
            .unwrap_err()
            .contains("not JSON"));
        let messages = result_messages(ExportFormat::OpenAi, &calls, &[ok("1"), ok("2")]);
        assert_eq!(
            messages,
            [
                json!({"role": "tool", "tool_call_id": "call_1", "content": "1"}),
                json!({"role": "tool", "tool_call_id": "call_2", "content": "2"}),
            ]
        );
        // A message without tool calls has none; a response without choices is an error.
        let none = json!({"choices": [{"message": {"role": "assistant", "content": "hi"}}]});
        assert_eq!(parse_calls(ExportFormat::OpenAi, &none), Ok(Vec::new()));
        let e = parse_calls(ExportFormat::OpenAi, &json!({"choices": []})).unwrap_err();
        assert!(e.to_string().contains("`choices` is empty"), "{e}");
    }

    #[test]
    fn responses_anthropic_and_gemini_skip_other_items() {
        let responses = json!({"output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "a", "arguments": "{}"}
        ]});
        let calls = parse_calls(ExportFormat::OpenAiResponses, &responses).expect("parses");
        assert_eq!(calls.len(), 1);
        assert_eq!(
            result_messages(ExportFormat::OpenAiResponses, &calls, &[ok("x")]),
            [json!({"type": "function_call_output", "call_id": "call_9", "output": "x"})]
        );

        let anthropic = json!({"role": "assistant", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "a", "input": {"q": 1}}
        ]});
        let calls = parse_calls(ExportFormat::Anthropic, &anthropic).expect("parses");
        assert_eq!(calls[0].arguments, Ok(json!({"q": 1})));
        let mut err = ok("bad");
        err.is_error = true;
        assert_eq!(
            result_messages(ExportFormat::Anthropic, &calls, &[err]),
            [
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "bad"}], "is_error": true}]})
            ]
        );

        let gemini = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"text": "ok"},
            {"functionCall": {"name": "a", "args": {"q": 2}}}
        ]}}]});
        let calls = parse_calls(ExportFormat::Gemini, &gemini).expect("parses");
        assert_eq!(calls[0].id, None);
        assert_eq!(
            result_messages(ExportFormat::Gemini, &calls, &[ok("{\"n\":1}")]),
            [
                json!({"role": "user", "parts": [{"functionResponse": {"name": "a", "response": {"output": {"n": 1}}}}]})
            ]
        );
        let e = parse_calls(
            ExportFormat::Anthropic,
            &json!({"content": [{"type": "tool_use"}]}),
        )
        .unwrap_err();
        assert!(e.to_string().contains("missing field"), "{e}");
    }
}
