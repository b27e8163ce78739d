//! The checks every incoming MCP message passes before the SDK sees it, on stdio and on HTTP
//! alike: a size limit, JSON, and the JSON-RPC 2.0 message shape.
//!
//! The SDK ignores a line that is not JSON and drops an oversized one without an answer; this
//! server answers both, so a client (or a person typing into a pipe) learns what went wrong and
//! the connection keeps serving. Each failure is a JSON-RPC error response whose `id` is the
//! request's when it can be read, else `null` (JSON-RPC 2.0, section 5):
//!
//! | input | code |
//! |---|---|
//! | over [`MAX_MESSAGE_BYTES`] | `-32600` invalid request, `data.limitBytes` |
//! | not UTF-8, not JSON | `-32700` parse error |
//! | JSON but not one JSON-RPC message object (an array, a number, no `jsonrpc: "2.0"`, a `method` that is not a string, an `id` that is not a string or an integer (MCP forbids `null` ids), neither `method` nor `result`/`error`) | `-32600` invalid request |
//! | a `tools/call` whose `params` lack a string `name`, or whose `arguments` is not an object | `-32602` invalid params, naming the field |
//! | a request other than `initialize` before the session is initialized ([`check_uninitialized`]), unless its `params._meta` carries `io.modelcontextprotocol/protocolVersion` (a stateless request) | `-32600`, saying to send `initialize` first |
//! | on stdio: a message whose `params` do not fit its MCP method ([`parse`]) | `-32602` for a request (with its `id`), `-32600` otherwise |
//! | on stdio: a request whose `id` is that of a request still in flight ([`Refusal::id_in_flight`]) | `-32600` |
//!
//! Everything else goes on to the SDK, which answers an unknown method with `-32601`.

use rmcp::model::{ClientJsonRpcMessage, RequestId};
use serde_json::{json, Value};

/// The largest message accepted: 1 MiB (1 048 576 bytes) of JSON per line on stdio, per request
/// body on HTTP. Far above any real tool call of the reference catalog (a few KiB), low enough
/// that one client cannot make the server buffer unbounded input.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// JSON-RPC 2.0 `Parse error`.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0 `Invalid Request`.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC 2.0 `Invalid params`.
pub const INVALID_PARAMS: i64 = -32602;

/// Why a message was refused before reaching the SDK, with its JSON-RPC error response.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// `-32700`, `-32600` or `-32602`.
    pub code: i64,
    /// The JSON-RPC error response to send back (one line of JSON).
    pub response: Value,
}

impl Refusal {
    fn new(code: i64, id: Value, message: String, data: Option<Value>) -> Self {
        let mut error = json!({"code": code, "message": message});
        if let Some(data) = data {
            error["data"] = data;
        }
        Refusal {
            code,
            response: json!({"jsonrpc": "2.0", "id": id, "error": error}),
        }
    }

    /// The answer to a message of `len` bytes over [`MAX_MESSAGE_BYTES`].
    pub fn too_large(len: usize) -> Self {
        Refusal::new(
            INVALID_REQUEST,
            Value::Null,
            format!(
                "message of {len} bytes is over the limit of {MAX_MESSAGE_BYTES} bytes (1 MiB); send smaller arguments"
            ),
            Some(json!({"limitBytes": MAX_MESSAGE_BYTES, "sizeBytes": len})),
        )
    }

    /// The answer to a message of at least `len` bytes over [`MAX_MESSAGE_BYTES`], whose end was
    /// not read.
    pub fn too_large_at_least(len: usize) -> Self {
        Refusal::new(
            INVALID_REQUEST,
            Value::Null,
            format!(
                "message of more than {len} bytes is over the limit of {MAX_MESSAGE_BYTES} bytes (1 MiB); send smaller arguments"
            ),
            Some(json!({"limitBytes": MAX_MESSAGE_BYTES})),
        )
    }
}

impl Refusal {
    /// The answer to a request whose `id` is already that of a request in flight on the same
    /// connection (JSON-RPC 2.0: ids tell concurrent requests apart); nothing runs for it. The
    /// answer carries the id, as any answer to that request would.
    pub fn id_in_flight(id: &RequestId) -> Self {
        let id = serde_json::to_value(id).unwrap_or(Value::Null);
        Refusal::new(
            INVALID_REQUEST,
            id.clone(),
            format!("`id` {id} is that of a request still in flight; give each concurrent request its own id"),
            None,
        )
    }
}

/// Reads one message that passed [`check`] as the SDK's typed client message, or the
/// [`Refusal`] of one whose `params` do not fit its method (the SDK reads most shapes leniently;
/// a `_meta` that is not an object is one it does not): `-32602` with the request's `id`, or
/// `-32600` for a notification or response (`id` null). The SDK itself would answer such a
/// message with an `id`-less error, which a client cannot match to its request.
pub fn parse(bytes: &[u8]) -> Result<ClientJsonRpcMessage, Refusal> {
    serde_json::from_slice(bytes).map_err(|e| {
        let value: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        let method = value.get("method").and_then(Value::as_str);
        let id = value.get("id").filter(|id| id.is_string() || id.is_number());
        match (method, id) {
            (Some(method), Some(id)) => Refusal::new(
                INVALID_PARAMS,
                id.clone(),
                format!("the `params` of `{method}` do not fit its MCP schema: {e}; send them as the MCP specification defines them"),
                None,
            ),
            _ => Refusal::new(
                INVALID_REQUEST,
                Value::Null,
                format!("the message does not fit its MCP schema: {e}; send it as the MCP specification defines it"),
                None,
            ),
        }
    })
}

/// Checks one message (a stdio line without its newline, or an HTTP request body): `Ok` when it
/// is one JSON-RPC 2.0 message object for the SDK, else the [`Refusal`] to answer.
pub fn check(bytes: &[u8]) -> Result<(), Refusal> {
    if bytes.len() > MAX_MESSAGE_BYTES {
        return Err(Refusal::too_large(bytes.len()));
    }
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            return Err(Refusal::new(
                PARSE_ERROR,
                Value::Null,
                format!("the message is not JSON ({e}); send one JSON-RPC 2.0 object per line"),
                None,
            ))
        }
    };
    let Value::Object(map) = &value else {
        let what = match value {
            Value::Array(_) => "an array (batches are not part of MCP)",
            _ => "not an object",
        };
        return Err(Refusal::new(
            INVALID_REQUEST,
            Value::Null,
            format!("the message is {what}; send one JSON-RPC 2.0 object"),
            None,
        ));
    };
    let id = map.get("id").cloned();
    // JSON-RPC 2.0 allows any number and null; MCP requires a string or an integer, and the SDK
    // cannot answer any other id. Such an id is still echoed when it is a number or null.
    let id_ok = match &id {
        None | Some(Value::String(_)) => true,
        // A response to a message whose id could not be read.
        Some(Value::Null) => !map.contains_key("method"),
        Some(Value::Number(n)) => n.is_i64() || n.is_u64(),
        _ => false,
    };
    let reply_id = match &id {
        Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
        _ => Value::Null,
    };
    let invalid = |message: String| {
        Err(Refusal::new(
            INVALID_REQUEST,
            reply_id.clone(),
            message,
            None,
        ))
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(r#"the message lacks `"jsonrpc": "2.0"`"#.to_string());
    }
    if !id_ok {
        return invalid("`id` must be a string or an integer (MCP forbids `null`)".to_string());
    }
    match map.get("method") {
        Some(Value::String(method)) => {
            if let Some(params) = map.get("params") {
                if !params.is_object() && !params.is_array() {
                    return invalid("`params` must be an object".to_string());
                }
            }
            if method == "tools/call" {
                if let Some(message) = tools_call_params(map.get("params")) {
                    return Err(Refusal::new(INVALID_PARAMS, reply_id, message, None));
                }
            }
            Ok(())
        }
        Some(_) => invalid("`method` must be a string".to_string()),
        None if id.is_some() && (map.contains_key("result") || map.contains_key("error")) => Ok(()),
        None => invalid(
            "the message is neither a request (`method`) nor a response (`result` or `error`)"
                .to_string(),
        ),
    }
}

/// What is wrong with the `params` of a `tools/call`, if anything (MCP `CallToolRequest`:
/// `name` a string, `arguments` an object when present).
fn tools_call_params(params: Option<&Value>) -> Option<String> {
    let Some(Value::Object(params)) = params else {
        return Some(
            "`tools/call` needs `params`: an object with `name` (a string) and `arguments` (an object)"
                .to_string(),
        );
    };
    match params.get("name") {
        Some(Value::String(_)) => {}
        None => return Some("`params.name` is missing; name the tool to call".to_string()),
        Some(other) => {
            return Some(format!(
                "`params.name` must be a string (the tool name), not {}",
                kind(other)
            ))
        }
    }
    match params.get("arguments") {
        None | Some(Value::Null) | Some(Value::Object(_)) => None,
        Some(other) => Some(format!(
            "`params.arguments` must be an object of named arguments, not {}",
            kind(other)
        )),
    }
}

/// The JSON type of `v`, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The key in a request's `params._meta` that makes it a stateless request, served without
/// `initialize` (the SDK's stateless protocol).
const STATELESS_META_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// Whether `bytes` (a message that passed [`check`]) is an `initialize` request.
pub fn is_initialize(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Value>(bytes)
        .ok()
        .is_some_and(|v| v.get("method").and_then(Value::as_str) == Some("initialize"))
}

/// Checks a message (one that passed [`check`]) that arrives before the session is initialized:
/// a request other than `initialize` is refused with `-32600` saying to send `initialize` first,
/// unless its `params._meta` names `io.modelcontextprotocol/protocolVersion` (a stateless
/// request, which the SDK serves). Notifications and responses pass.
pub fn check_uninitialized(bytes: &[u8]) -> Result<(), Refusal> {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(bytes) else {
        return Ok(());
    };
    let (Some(Value::String(method)), Some(id)) = (map.get("method"), map.get("id")) else {
        return Ok(());
    };
    if method == "initialize" {
        return Ok(());
    }
    let stateless = map
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(STATELESS_META_KEY))
        .is_some();
    if stateless {
        return Ok(());
    }
    Err(Refusal::new(
        INVALID_REQUEST,
        id.clone(),
        format!(
            "`{method}` before `initialize`: the session is not initialized; send an `initialize` request first (then `notifications/initialized`)"
        ),
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(bytes: &[u8]) -> Option<i64> {
        check(bytes).err().map(|r| r.code)
    }

    #[test]
    fn requests_notifications_and_responses_pass() {
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"no/such/method"}"#,
        ] {
            assert_eq!(check(ok.as_bytes()), Ok(()), "{ok}");
        }
    }

    #[test]
    fn malformed_messages_get_the_json_rpc_code() {
        assert_eq!(code(b"not json"), Some(PARSE_ERROR));
        assert_eq!(code(b"{\"jsonrpc\":\"2.0\",\"id\":1,"), Some(PARSE_ERROR));
        assert_eq!(code(&[0xff, 0xfe]), Some(PARSE_ERROR));
        assert_eq!(code(b"[1,2]"), Some(INVALID_REQUEST));
        assert_eq!(code(b"42"), Some(INVALID_REQUEST));
        assert_eq!(
            code(br#"{"id":1,"method":"tools/list"}"#),
            Some(INVALID_REQUEST)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":7}"#),
            Some(INVALID_REQUEST)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#),
            Some(INVALID_REQUEST)
        );
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1}"#), Some(INVALID_REQUEST));
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#),
            Some(INVALID_REQUEST)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#),
            Some(INVALID_REQUEST)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#),
            Some(INVALID_REQUEST)
        );
    }

    #[test]
    fn wrongly_typed_tools_call_params_are_invalid_params_naming_the_field() {
        for (params, field) in [
            (r#"{"name":123}"#, "params.name"),
            (r#"{}"#, "params.name"),
            (r#"{"name":"x","arguments":"str"}"#, "params.arguments"),
            (r#"{"name":"x","arguments":[]}"#, "params.arguments"),
        ] {
            let line =
                format!(r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{params}}}"#);
            let r = check(line.as_bytes()).unwrap_err();
            assert_eq!(r.code, INVALID_PARAMS, "{params}");
            assert_eq!(r.response["id"], 4);
            let message = r.response["error"]["message"].as_str().unwrap();
            assert!(message.contains(field), "{params}: {message}");
        }
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{}}}"#),
            Ok(())
        );
    }

    #[test]
    fn requests_before_initialize_are_told_to_initialize() {
        let r =
            check_uninitialized(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).unwrap_err();
        assert_eq!(r.code, INVALID_REQUEST);
        assert_eq!(r.response["id"], 1);
        assert!(r.response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("send an `initialize` request first"));
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"x"}}}"#,
        ] {
            assert_eq!(check_uninitialized(ok.as_bytes()), Ok(()), "{ok}");
        }
        assert!(is_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#
        ));
        assert!(!is_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#
        ));
    }

    #[test]
    fn a_refusal_keeps_a_readable_id() {
        let r = check(br#"{"jsonrpc":"1.0","id":9,"method":"x"}"#).unwrap_err();
        assert_eq!(r.response["id"], 9);
        let r = check(br#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#).unwrap_err();
        assert_eq!(r.response["id"], Value::Null);
        assert!(r.response.as_object().unwrap().contains_key("id"));
        let r = check(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#).unwrap_err();
        assert_eq!(r.response["id"], 1.5);
    }

    #[test]
    fn params_unfit_for_the_method_are_refused_with_the_requests_id() {
        for (line, code, id) in [
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":5}}"#,
                INVALID_PARAMS,
                json!(7),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"i","method":"tools/call","params":{"name":"x","arguments":{},"_meta":[]}}"#,
                INVALID_PARAMS,
                json!("i"),
            ),
        ] {
            assert_eq!(check(line.as_bytes()), Ok(()), "{line}");
            let r = parse(line.as_bytes()).unwrap_err();
            assert_eq!((r.code, &r.response["id"]), (code, &id), "{line}");
            let message = r.response["error"]["message"].as_str().unwrap();
            assert!(message.contains("do not fit its MCP schema"), "{message}");
        }
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"0:50"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        ] {
            assert!(parse(ok.as_bytes()).is_ok(), "{ok}");
        }
    }

    #[test]
    fn over_the_limit_is_refused_naming_it() {
        let big = vec![b' '; MAX_MESSAGE_BYTES + 1];
        let r = check(&big).unwrap_err();
        assert_eq!(r.code, INVALID_REQUEST);
        assert_eq!(r.response["error"]["data"]["limitBytes"], MAX_MESSAGE_BYTES);
        assert!(r.response["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("1 MiB")));
    }
}
