//! `toolcat serve --http` with authentication: bearer tokens of a file (`toolcat token`) and
//! JWT access tokens of an OAuth issuer started by the test (its metadata and JWKS on loopback,
//! its P-256 key made at test time), each request served its token's profile and scope within
//! the server's; revocation without restart; stateless requests whose archived results are
//! bound to the token; non-loopback binds allowed only with authentication.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt as _;
use serde_json::{json, Map, Value};

use crate::served::{body, call, workspace};

/// Runs `toolcat ARGS`, asserting success; returns stdout.
fn toolcat(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "toolcat {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `toolcat token add`: the token printed on stdout.
fn add_token(file: &Path, name: &str, profile: &str, scope: &str) -> String {
    let f = file.to_str().unwrap();
    let out = toolcat(&[
        "token",
        "add",
        "--file",
        f,
        "--name",
        name,
        "--profile",
        profile,
        "--scope",
        scope,
    ]);
    let token = out.trim().to_string();
    assert!(token.starts_with("tcat_"), "{out}");
    token
}

/// Starts `toolcat serve --http ADDR ARGS`; returns it and the address it printed.
fn spawn(addr: &str, args: &[&str]) -> (Child, String) {
    let served = crate::served::start(addr, args);
    (served.child, served.mcp)
}

/// One raw HTTP/1.1 request; returns the status, the header block and the body.
fn http(addr: &str, method: &str, path: &str, headers: &str, body: &str) -> (u16, String, String) {
    let headers = format!("Host: {addr}\r\n{headers}");
    crate::served::http(addr, method, path, &headers, body.len(), body.as_bytes())
}

/// The `WWW-Authenticate` value of a header block.
fn challenge(head: &str) -> String {
    head.lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("www-authenticate"))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// A JSON-RPC POST to `/mcp` with `token`; returns the status, headers and the JSON-RPC
/// message of the body (plain JSON, or the first `data:` line of an event stream).
fn rpc(addr: &str, token: Option<&str>, message: &Value) -> (u16, String, Value) {
    rpc_with(addr, token, "", message)
}

/// [`rpc`] with `extra` header lines (each ending in `\r\n`).
fn rpc_with(addr: &str, token: Option<&str>, extra: &str, message: &Value) -> (u16, String, Value) {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n{extra}"))
        .unwrap_or_else(|| extra.to_string());
    let (status, head, body) = http(addr, "POST", "/mcp", &auth, &message.to_string());
    let json = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:").map(str::trim).or(Some(l)))
        .find_map(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(Value::is_object)
        })
        .unwrap_or(Value::Null);
    (status, head, json)
}

/// An MCP client over streamable HTTP sending `Authorization: Bearer token`.
async fn client(addr: &str, token: &str) -> RunningService<RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp"))
        .auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("initialize with a bearer token")
}

async fn names(client: &RunningService<RoleClient, ()>) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_token_is_served_its_profile_and_scope_and_a_revoked_one_is_refused_at_once() {
    let ws = workspace();
    let file = ws.path().join("tokens.toml");
    let read_only = add_token(&file, "ro", "coding", "read-only");
    let wide = add_token(&file, "wide", "coding", "full");
    let listed = toolcat(&["token", "list", "--file", file.to_str().unwrap()]);
    assert_eq!(listed, "ro\tcoding\tread-only\nwide\tcoding\tfull\n");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains(&read_only) && !text.contains(&wide),
        "{text}"
    );

    let store = ws.path().join("calls.sqlite");
    let (mut child, addr) = spawn(
        "127.0.0.1:0",
        &[
            "--tokens",
            file.to_str().unwrap(),
            "--profile",
            "coding",
            "--exposure",
            "staging",
            "--store",
            store.to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
    );
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});

    // No token, an unknown one, a malformed header: 401 with a Bearer challenge.
    let (status, head, answer) = rpc(&addr, None, &init);
    assert_eq!(status, 401, "{head}");
    assert!(
        challenge(&head).starts_with("Bearer realm=\"toolcat\""),
        "{head}"
    );
    assert!(!challenge(&head).contains("error="), "{head}");
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Authorization: Bearer"));
    let (status, head, _) = rpc(&addr, Some("tcat_AAAA"), &init);
    assert_eq!(status, 401);
    assert!(
        challenge(&head).contains("error=\"invalid_token\""),
        "{head}"
    );
    let (status, ..) = http(&addr, "POST", "/mcp", "Authorization: Basic eDp5\r\n", "{}");
    assert_eq!(status, 401);

    // Read-only: read tools only; a staging tool is neither listed nor run.
    let ro = client(&addr, &read_only).await;
    let ro_names = names(&ro).await;
    assert!(ro_names.contains(&"read_file".to_string()), "{ro_names:?}");
    assert!(!ro_names.contains(&"edit_file".to_string()), "{ro_names:?}");
    let tools = ro.list_all_tools().await.unwrap();
    for t in &tools {
        let read = t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
        assert!(read, "`{}` is listed to a read-only token", t.name);
    }
    let r = ro
        .call_tool(call("read_file", json!({"path": "a.txt"})))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true), "{:?}", body(&r));
    let r = ro
        .call_tool(call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "hello", "new_string": "bye"}),
        ))
        .await
        .unwrap();
    assert_eq!(body(&r)["error"], "outside-scope", "{:?}", body(&r));
    assert_eq!(body(&r)["exposure"], "read-only", "{:?}", body(&r));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "hello\n"
    );

    // A `full` token on a `staging` server: staging tools, never the full ones.
    let w = client(&addr, &wide).await;
    let w_names = names(&w).await;
    assert!(w_names.contains(&"edit_file".to_string()), "{w_names:?}");
    assert!(!w_names.contains(&"write_file".to_string()), "{w_names:?}");
    assert!(w_names.len() > ro_names.len());
    let r = w
        .call_tool(call("write_file", json!({"path": "b.txt", "content": "x"})))
        .await
        .unwrap();
    assert_eq!(body(&r)["error"], "outside-scope", "{:?}", body(&r));
    assert_eq!(body(&r)["exposure"], "staging", "{:?}", body(&r));

    // A session id is not a credential: another token cannot use a session it did not open.
    let (status, head, _) = rpc(&addr, Some(&wide), &init);
    assert_eq!(status, 200, "{head}");
    let session = head
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
                .map(|(_, v)| v.trim().to_string())
        })
        .expect("an Mcp-Session-Id");
    let in_session = format!("Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    rpc_with(&addr, Some(&wide), &in_session, &initialized);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (_, _, own) = rpc_with(&addr, Some(&wide), &in_session, &list);
    assert!(own["result"]["tools"].is_array(), "{own}");
    let (_, _, other) = rpc_with(&addr, Some(&read_only), &in_session, &list);
    let message = other["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("opened by another credential, not token `ro`")
            && !message.contains("wide"),
        "{other}"
    );

    // Revoked: the next request of that token is refused, without a restart; the other works.
    toolcat(&["token", "revoke", "--file", file.to_str().unwrap(), "ro"]);
    let (status, head, _) = rpc(&addr, Some(&read_only), &init);
    assert_eq!(status, 401, "{head}");
    assert!(
        ro.list_all_tools().await.is_err(),
        "a revoked session still lists"
    );
    assert_eq!(names(&w).await, w_names);

    // A file that stops loading refuses everyone (503 naming it) until fixed.
    std::fs::write(&file, "[[token]]\nname = 1\n").unwrap();
    let (status, _, answer) = rpc(&addr, Some(&wide), &init);
    assert_eq!(status, 503);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tokens.toml"),
        "{answer}"
    );

    w.cancel().await.ok();
    ro.cancel().await.ok();
    child.kill().ok();
    child.wait().ok();
}

/// The `Mcp-Session-Id` of a header block.
fn session_id(head: &str) -> String {
    head.lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no Mcp-Session-Id: {head}"))
}

/// A session belongs to the identity whose `initialize` opened it (not to the first request
/// after it), on every method (POST, GET, DELETE); one identity holds at most 64 sessions
/// (429 past it, others can still open theirs); revoking a token closes its sessions and
/// ends their open event streams.
#[test]
fn a_session_is_its_openers_on_every_method_and_each_identity_has_a_quota() {
    let ws = workspace();
    let file = ws.path().join("tokens.toml");
    let alice = add_token(&file, "alice", "coding", "read-only");
    let bob = add_token(&file, "bob", "coding", "read-only");
    let (mut child, addr) = spawn(
        "127.0.0.1:0",
        &[
            "--tokens",
            file.to_str().unwrap(),
            "--profile",
            "coding",
            "--exposure",
            "read-only",
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
    );
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});

    // The `initialize` binds: bob's first request in alice's fresh session is refused, and
    // alice keeps her session.
    let (status, head, _) = rpc(&addr, Some(&alice), &init);
    assert_eq!(status, 200, "{head}");
    let session = session_id(&head);
    let in_session = format!("Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n");
    let (status, _, other) = rpc_with(&addr, Some(&bob), &in_session, &list);
    assert_eq!(status, 403, "{other}");
    let message = other["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("opened by another credential, not token `bob`")
            && !message.contains("alice"),
        "{other}"
    );
    let (status, _, _) = rpc_with(&addr, Some(&alice), &in_session, &initialized);
    assert!(status == 200 || status == 202, "{status}");
    let (status, _, own) = rpc_with(&addr, Some(&alice), &in_session, &list);
    assert_eq!(status, 200, "{own}");
    assert!(own["result"]["tools"].is_array(), "{own}");

    // GET (the event stream) and DELETE are checked as POST is.
    let as_bob = format!("Authorization: Bearer {bob}\r\n{in_session}");
    for method in ["GET", "DELETE"] {
        let (status, _, body) = http(&addr, method, "/mcp", &as_bob, "");
        assert_eq!(status, 403, "{method}: {body}");
        assert!(
            body.contains("opened by another credential") && !body.contains("alice"),
            "{method}: {body}"
        );
    }
    let (status, _, own) = rpc_with(&addr, Some(&alice), &in_session, &list);
    assert_eq!(status, 200, "the session survived bob's DELETE: {own}");

    // One identity holds at most a quarter of the sessions, also when its `initialize`s arrive
    // all at once (each reserves its session before it is answered); others still open theirs.
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let opens: Vec<_> = (0..100)
            .map(|_| scope.spawn(|| rpc(&addr, Some(&bob), &init).0))
            .collect();
        opens.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let opened = statuses.iter().filter(|&&s| s == 200).count();
    let refused = statuses.iter().filter(|&&s| s == 429).count();
    assert_eq!(
        (opened, refused),
        (64, 36),
        "100 concurrent initialize of one token: {statuses:?}"
    );
    let (status, _, refusal) = rpc(&addr, Some(&bob), &init);
    assert_eq!(status, 429, "{refusal}");
    let message = refusal["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(
            "token `bob` has 64 MCP sessions open or opening, the limit per identity is 64"
        ),
        "{refusal}"
    );
    let (status, head, _) = rpc(&addr, Some(&alice), &init);
    assert_eq!(status, 200, "{head}");

    // Revoking alice ends her open event stream (at the next tokens-file check, 1 s).
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    stream
        .write_all(
            format!(
                "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {alice}\r\n{in_session}Accept: text/event-stream\r\n\r\n"
            )
            .as_bytes(),
        )
        .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let started = std::time::Instant::now();
    while !String::from_utf8_lossy(&seen).contains("\r\n\r\n") {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no stream head"
        );
        if let Ok(n) = stream.read(&mut buf) {
            seen.extend_from_slice(&buf[..n]);
        }
    }
    let head = String::from_utf8_lossy(&seen).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    toolcat(&["token", "revoke", "--file", file.to_str().unwrap(), "alice"]);
    let revoked = std::time::Instant::now();
    let ended = loop {
        match stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) if String::from_utf8_lossy(&buf[..n]).ends_with("0\r\n\r\n") => break true,
            _ if revoked.elapsed() > Duration::from_secs(20) => break false,
            _ => {}
        }
    };
    assert!(
        ended,
        "the revoked token's event stream is still open after 20 s"
    );
    let (status, _, answer) = rpc_with(&addr, Some(&bob), &in_session, &list);
    assert_eq!(
        status, 404,
        "the revoked token's session is closed: {answer}"
    );

    child.kill().ok();
    child.wait().ok();
}

#[test]
fn stateless_requests_need_no_session_and_archived_results_stay_with_their_token() {
    let ws = workspace();
    let line = "0123456789 abcdefghij 0123456789 abcdefghij";
    std::fs::write(ws.path().join("big.txt"), vec![line; 1000].join("\n")).unwrap();
    let file = ws.path().join("tokens.toml");
    let mine = add_token(&file, "mine", "minimal", "read-only");
    let theirs = add_token(&file, "theirs", "minimal", "read-only");
    let store = ws.path().join("calls.sqlite");
    let (mut child, addr) = spawn(
        "127.0.0.1:0",
        &[
            "--tokens",
            file.to_str().unwrap(),
            "--stateless",
            "--profile",
            "minimal",
            "--exposure",
            "read-only",
            "--store",
            store.to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
    );
    let request = |id: u64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    };
    let text = |answer: &Value| -> String {
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    // An `initialize` is answered, but promises no list notifications and no approval prompts:
    // without a session there is no stream for them.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    let (status, _, answer) = rpc(&addr, Some(&mine), &init);
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer["result"]["capabilities"]["tools"].is_object(),
        "{answer}"
    );
    assert!(
        answer["result"]["capabilities"]["tools"]["listChanged"].is_null(),
        "{answer}"
    );
    let instructions = answer["result"]["instructions"]
        .as_str()
        .unwrap_or_default();
    assert!(
        instructions.contains("keeps no session") && !instructions.contains("elicitation"),
        "{instructions}"
    );
    // No `initialize`, no session: each request on its own.
    let (status, head, answer) = rpc(
        &addr,
        Some(&mine),
        &request(1, "read_file", json!({"path": "big.txt"})),
    );
    assert_eq!(status, 200, "{head}\n{answer}");
    assert!(
        !head.to_ascii_lowercase().contains("mcp-session-id"),
        "{head}"
    );
    let preview = text(&answer);
    let reference = preview
        .split("[result archived as `")
        .nth(1)
        .and_then(|r| r.split('`').next())
        .unwrap_or_else(|| panic!("no reference in {answer}"))
        .to_string();
    let read_back = json!({"reference": reference, "offset": 0, "length": 43});
    let (_, _, again) = rpc(
        &addr,
        Some(&mine),
        &request(2, "read_tool_result", read_back.clone()),
    );
    assert_ne!(again["result"]["isError"], true, "{again}");
    assert!(text(&again).contains("0123456789"), "{again}");
    let (_, _, stolen) = rpc(
        &addr,
        Some(&theirs),
        &request(3, "read_tool_result", read_back),
    );
    assert_eq!(stolen["result"]["isError"], true, "{stolen}");
    assert!(!text(&stolen).contains("0123456789"), "{stolen}");
    assert!(text(&stolen).contains("no result `"), "{stolen}");
    child.kill().ok();
    child.wait().ok();
}

/// A `gated` tool called without a session is refused as needing approval, and the refusal
/// says why no one was asked (no session under `--stateless`), not that the client lacks
/// elicitation.
#[test]
fn a_stateless_gated_call_says_there_is_no_session_to_ask_over() {
    let ws = workspace();
    let file = ws.path().join("tokens.toml");
    let writer = add_token(&file, "writer", "coding", "staging");
    let (mut child, addr) = spawn(
        "127.0.0.1:0",
        &[
            "--tokens",
            file.to_str().unwrap(),
            "--stateless",
            "--profile",
            "coding",
            "--exposure",
            "staging",
            "--store",
            ws.path().join("calls.sqlite").to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
    );
    let todo = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "todo_write",
        "arguments": {"todos": [{"content": "a", "status": "pending"}]}}});
    let (status, head, answer) = rpc(&addr, Some(&writer), &todo);
    assert_eq!(status, 200, "{head}\n{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("needs approval")
            && text.contains("no MCP session")
            && text.contains("--stateless")
            && !text.contains("did not declare"),
        "{text}"
    );
    child.kill().ok();
    child.wait().ok();
}

#[test]
fn a_non_loopback_bind_needs_authentication() {
    let ws = workspace();
    let out = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args([
            "serve",
            "--http",
            "0.0.0.0:0",
            "--profile",
            "minimal",
            "--exposure",
            "full",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not a loopback address")
            && stderr.contains("--tokens FILE")
            && stderr.contains("--oauth-issuer URL"),
        "{stderr}"
    );
    // A loopback address no `Host` can name would answer every request 403: refused at start.
    for (flag, addr) in [("--http", "127.0.0.2:0"), ("--metrics", "127.0.0.2:0")] {
        let mut args = vec![
            "serve",
            "--profile",
            "minimal",
            "--exposure",
            "full",
            flag,
            addr,
        ];
        if flag == "--metrics" {
            args.extend(["--http", "127.0.0.1:0"]);
        }
        let out = Command::new(env!("CARGO_BIN_EXE_toolcat"))
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "`{flag}`: `127.0.0.2:0` is a loopback address no request can name"
            )) && stderr.contains("bind `127.0.0.1` or `[::1]`"),
            "{flag}: {stderr}"
        );
    }
    let file = ws.path().join("tokens.toml");
    let token = add_token(&file, "ci", "minimal", "read-only");
    let (mut child, addr) = spawn(
        "0.0.0.0:0",
        &[
            "--tokens",
            file.to_str().unwrap(),
            "--profile",
            "minimal",
            "--exposure",
            "full",
            "--store",
            ws.path().join("calls.sqlite").to_str().unwrap(),
        ],
    );
    let port = addr.rsplit(':').next().unwrap();
    let local = format!("127.0.0.1:{port}");
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    assert_eq!(rpc(&local, None, &list).0, 401);
    let (status, head, answer) = rpc(&local, Some(&token), &list);
    assert_eq!(status, 200, "{head}\n{answer}");
    child.kill().ok();
    child.wait().ok();
}

// ---- OAuth ----

/// A test issuer on loopback: RFC 8414 metadata naming its JWKS, and the JWKS (one P-256 key,
/// `kid` `k1`). Serves until the process ends.
fn issuer(jwk: Value) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let meta = json!({"issuer": base, "jwks_uri": format!("{base}/jwks"),
                      "authorization_endpoint": format!("{base}/authorize"),
                      "token_endpoint": format!("{base}/token")});
    let jwks = json!({"keys": [jwk]});
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
            }
            let path = first.split_whitespace().nth(1).unwrap_or("");
            let (status, body) = match path {
                "/.well-known/oauth-authorization-server" => ("200 OK", meta.to_string()),
                "/jwks" => ("200 OK", jwks.to_string()),
                _ => ("404 Not Found", "{}".to_string()),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    base
}

/// A new P-256 key (random bytes from the operating system) as a signing key and its public
/// JWK with `kid`.
fn p256_key(kid: &str) -> (EncodingKey, Value) {
    use p256::pkcs8::EncodePrivateKey as _;
    let secret = loop {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).unwrap();
        if let Ok(k) = p256::SecretKey::from_slice(&bytes) {
            break k;
        }
    };
    let der = secret.to_pkcs8_der().unwrap();
    let key = EncodingKey::from_ec_der(der.as_bytes());
    let mut jwk = serde_json::to_value(
        jsonwebtoken::jwk::Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap(),
    )
    .unwrap();
    jwk["kid"] = json!(kid);
    jwk["use"] = json!("sig");
    (key, jwk)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn jwt(key: &EncodingKey, kid: &str, claims: &Map<String, Value>) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_string());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwt_access_tokens_are_checked_against_the_issuers_jwks() {
    let (key, jwk) = p256_key("k1");
    let (forger, _) = p256_key("k1");
    let base = issuer(jwk);
    let ws = workspace();
    let (mut child, addr) = spawn(
        "127.0.0.1:0",
        &[
            "--oauth-issuer",
            &base,
            "--oauth-audience",
            "toolcat-test",
            "--oauth-profile-claim",
            "toolcat_profile",
            "--profile",
            "coding",
            "--exposure",
            "full",
            "--store",
            ws.path().join("calls.sqlite").to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
    );
    let claims = |f: &dyn Fn(&mut Map<String, Value>)| {
        let Value::Object(mut c) = json!({"iss": base, "aud": "toolcat-test", "sub": "alice",
            "exp": now() + 300, "iat": now(), "scope": "openid toolcat:read-only",
            "toolcat_profile": "coding"})
        else {
            unreachable!()
        };
        f(&mut c);
        c
    };
    let good = jwt(&key, "k1", &claims(&|_| {}));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});

    // The protected resource metadata, and the challenge that points at it.
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let (status, _, body) = http(&addr, "GET", path, "", "");
        assert_eq!(status, 200, "{path}");
        let doc: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(doc["resource"], format!("http://{addr}/mcp"));
        assert_eq!(doc["authorization_servers"], json!([base]));
        assert_eq!(
            doc["scopes_supported"],
            json!(["toolcat:read-only", "toolcat:staging", "toolcat:full"])
        );
    }
    let (status, head, _) = rpc(&addr, None, &init);
    assert_eq!(status, 401);
    assert!(
        challenge(&head).contains(&format!("resource_metadata=\"{metadata_url}\"")),
        "{head}"
    );

    // Refused: a forged signature, expired, another audience, another issuer, `alg: none`.
    let unsigned = {
        let enc = |v: &Value| data_encoding::BASE64URL_NOPAD.encode(v.to_string().as_bytes());
        format!(
            "{}.{}.",
            enc(&json!({"alg": "none", "typ": "JWT"})),
            enc(&Value::Object(claims(&|_| {})))
        )
    };
    let refused = [
        ("forged", jwt(&forger, "k1", &claims(&|_| {}))),
        (
            "expired",
            jwt(
                &key,
                "k1",
                &claims(&|c| {
                    c.insert("exp".into(), json!(now() - 3600));
                }),
            ),
        ),
        (
            "audience",
            jwt(
                &key,
                "k1",
                &claims(&|c| {
                    c.insert("aud".into(), json!("someone-else"));
                }),
            ),
        ),
        (
            "issuer",
            jwt(
                &key,
                "k1",
                &claims(&|c| {
                    c.insert("iss".into(), json!("http://127.0.0.1:1"));
                }),
            ),
        ),
        ("unknown kid", jwt(&key, "k2", &claims(&|_| {}))),
        ("alg none", unsigned),
    ];
    for (why, token) in &refused {
        let (status, head, _) = rpc(&addr, Some(token), &init);
        assert_eq!(status, 401, "{why}: {head}");
        assert!(
            challenge(&head).contains("error=\"invalid_token\""),
            "{why}: {head}"
        );
    }
    // `exp` present but too large for a NumericDate is named as such, not as missing.
    let huge = jwt(
        &key,
        "k1",
        &claims(&|c| {
            c.insert("exp".into(), json!(1e30));
        }),
    );
    let (status, head, _) = rpc(&addr, Some(&huge), &init);
    assert_eq!(status, 401, "{head}");
    assert!(
        challenge(&head).contains("`exp` claim is not a time in whole seconds"),
        "{head}"
    );
    // Valid, without a `toolcat:` scope: 403 insufficient_scope naming the scopes.
    let no_scope = jwt(
        &key,
        "k1",
        &claims(&|c| {
            c.insert("scope".into(), json!("openid"));
        }),
    );
    let (status, head, _) = rpc(&addr, Some(&no_scope), &init);
    assert_eq!(status, 403, "{head}");
    assert!(
        challenge(&head).contains("error=\"insufficient_scope\""),
        "{head}"
    );
    assert!(challenge(&head).contains("toolcat:read-only"), "{head}");

    // Valid, its profile claim naming no profile of the catalog: refused at authentication.
    let no_profile = jwt(
        &key,
        "k1",
        &claims(&|c| {
            c.insert("toolcat_profile".into(), json!("nosuch"));
        }),
    );
    let (status, head, answer) = rpc(&addr, Some(&no_profile), &init);
    assert_eq!(status, 403, "{head}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("profile claim names no profile") && message.contains("nosuch"),
        "{answer}"
    );

    // A good token: its `toolcat:read-only` scope decides, on a `full` server.
    let c = client(&addr, &good).await;
    let listed = names(&c).await;
    assert!(listed.contains(&"read_file".to_string()), "{listed:?}");
    assert!(!listed.contains(&"edit_file".to_string()), "{listed:?}");
    let r = c
        .call_tool(call("read_file", json!({"path": "a.txt"})))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true), "{:?}", body(&r));
    c.cancel().await.ok();
    child.kill().ok();
    child.wait().ok();
}
