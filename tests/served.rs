//! What the `toolcat serve --http` tests share: a started server with the addresses it printed,
//! raw HTTP/1.1 requests (so a test can send what no client library would), and the helpers of
//! their MCP calls.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Map, Value};

/// A running `toolcat serve --http` and the addresses it printed (`host:port`).
pub struct Served {
    pub child: Child,
    /// The MCP endpoint's address (`listening on http://ADDR/mcp`).
    pub mcp: String,
    /// The metrics listener's address (`metrics on http://ADDR/metrics`), when `--metrics` was
    /// given.
    pub metrics: Option<String>,
}

/// Starts `toolcat serve --http HTTP --servers none ARGS` and waits (60 s at most) until it has
/// printed its MCP address, and its metrics address too when `ARGS` hold `--metrics`. Panics with
/// every line it printed when it does not.
pub fn start(http: &str, args: &[&str]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(["serve", "--http", http, "--servers", "none"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            // Once the test has its addresses the rest of stderr is drained unread.
            let _ = tx.send(line);
        }
    });
    let wants_metrics = args.contains(&"--metrics");
    let address = |line: &str, prefix: &str| {
        let rest = line.split(prefix).nth(1)?;
        Some(rest.split('/').next().unwrap_or_default().to_string())
    };
    let (mut mcp, mut metrics, mut lines) = (None, None, Vec::new());
    while mcp.is_none() || (wants_metrics && metrics.is_none()) {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) else {
            panic!(
                "`toolcat serve --http {http}` printed no address{}: {}",
                if wants_metrics { "es" } else { "" },
                lines.join("\n")
            );
        };
        if let Some(addr) = address(&line, "listening on http://") {
            mcp = Some(addr);
        } else if let Some(addr) = address(&line, "metrics on http://") {
            metrics = Some(addr);
        } else {
            lines.push(line);
        }
    }
    Served {
        child,
        mcp: mcp.unwrap_or_default(),
        metrics,
    }
}

/// One raw HTTP/1.1 request to `addr`: the request line, exactly the header lines `headers`
/// (each ending in `\r\n`; the `Host` header is the caller's, or left out), then JSON content
/// headers with a `Content-Length` of `length` (which may differ from `body`'s) and
/// `Connection: close`. Returns the status (0 when the answer has none), the header block and
/// the body.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &str,
    length: usize,
    body: &[u8],
) -> (u16, String, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\n{headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n",
    );
    stream.write_all(head.as_bytes()).unwrap();
    // The server may answer (413) before reading the whole body; a reset then is fine.
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

/// A `tools/call` of `name` with `arguments` (a JSON object; anything else calls with none).
pub fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let map = match arguments {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    CallToolRequestParams::new(name.to_string()).with_arguments(map)
}

/// The JSON body of a result's first text content (the text as a JSON string when it is not
/// JSON, `""` when there is no text).
pub fn body(result: &CallToolResult) -> Value {
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// A temporary workspace holding `a.txt` ("hello\n").
pub fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    ws
}
