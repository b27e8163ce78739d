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
//! | JSON but not one JSON-RPC message object (an array, a number, no `jsonrpc: "2.0"`, a `method` that is not a string, an `id` that is not a string, number or null, neither `method` nor `result`/`error`) | `-32600` invalid request |
//!
//! Everything else goes on to the SDK, which answers an unknown method with `-32601`.

use serde_json::{json, Value};

/// The largest message accepted: 1 MiB (1 048 576 bytes) of JSON per line on stdio, per request
/// body on HTTP. Far above any real tool call of the reference catalog (a few KiB), low enough
/// that one client cannot make the server buffer unbounded input.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// JSON-RPC 2.0 `Parse error`.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0 `Invalid Request`.
pub const INVALID_REQUEST: i64 = -32600;

/// Why a message was refused before reaching the SDK, with its JSON-RPC error response.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// `-32700` or `-32600`.
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
    let id_ok = matches!(
        id,
        None | Some(Value::Null) | Some(Value::String(_)) | Some(Value::Number(_))
    );
    let reply_id = if id_ok {
        id.clone().unwrap_or(Value::Null)
    } else {
        Value::Null
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
        return invalid("`id` must be a string, a number or null".to_string());
    }
    match map.get("method") {
        Some(Value::String(_)) => {
            if let Some(params) = map.get("params") {
                if !params.is_object() && !params.is_array() {
                    return invalid("`params` must be an object".to_string());
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
    }

    #[test]
    fn a_refusal_keeps_a_readable_id() {
        let r = check(br#"{"jsonrpc":"1.0","id":9,"method":"x"}"#).unwrap_err();
        assert_eq!(r.response["id"], 9);
        let r = check(br#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#).unwrap_err();
        assert_eq!(r.response["id"], Value::Null);
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
