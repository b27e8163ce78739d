//! `toolcat serve`, the MCP server, driven by the official Rust MCP client (`rmcp`): in process
//! over every profile × scope of the reference catalog, and through the real binary over stdio
//! and streamable HTTP, including hostile input and `list_changed` on a catalog edit.
//!
//! The expected sets are computed here from the rows of `tools.toml` (read as plain TOML), not
//! through the runtime's tables: listed = owned by the profile ∧ (tier `loop` ∨ exposure within
//! the scope, `read-only` ⊂ `staging` ⊂ `full`, `excluded` never) ∧ not deprecated (without
//! `--allow-deprecated`); allowed = listed minus tier `loop`.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, PaginatedRequestParams};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt as _};
use serde_json::{json, Map, Value};
use toolcat::mcp::{self, ScopeTable, Shared};
use toolcat_catalog::model::Exposure;

use crate::served::{body, call, workspace};

const SCOPES: [(Exposure, &str); 3] = [
    (Exposure::ReadOnly, "read-only"),
    (Exposure::Staging, "staging"),
    (Exposure::Full, "full"),
];

/// One `[[tool]]` row, as written.
struct Row {
    exported: String,
    tier: String,
    exposure: String,
    profiles: Vec<String>,
    /// `status = "deprecated"`.
    deprecated: bool,
}

fn rows() -> Vec<Row> {
    let doc: toml_edit::DocumentMut = toolcat_cli::REFERENCE_SOURCE
        .parse()
        .expect("tools.toml is TOML");
    let namespaces: BTreeMap<String, Option<String>> = doc["mcp_server"]
        .as_table()
        .map(|t| {
            t.iter()
                .map(|(k, v)| {
                    let ns = v
                        .get("namespace")
                        .and_then(|n| n.as_str())
                        .map(str::to_string);
                    (k.to_string(), ns)
                })
                .collect()
        })
        .unwrap_or_default();
    let strings = |v: Option<&toml_edit::Item>| -> Vec<String> {
        v.and_then(|i| i.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    doc["tool"]
        .as_array_of_tables()
        .expect("tools.toml has [[tool]] rows")
        .iter()
        .map(|t| {
            let name = t["name"]
                .as_str()
                .expect("every row has a name")
                .to_string();
            let source = t.get("source").and_then(|s| s.as_str()).unwrap_or("local");
            let exported = match namespaces.get(source) {
                Some(Some(ns)) => format!("{ns}__{name}"),
                _ => name,
            };
            Row {
                exported,
                tier: t["tier"].as_str().unwrap_or_default().to_string(),
                exposure: t["exposure"].as_str().unwrap_or_default().to_string(),
                profiles: strings(t.get("profiles")),
                deprecated: t.get("status").and_then(|s| s.as_str()) == Some("deprecated"),
            }
        })
        .collect()
}

fn profiles() -> Vec<String> {
    let doc: toml_edit::DocumentMut = toolcat_cli::REFERENCE_SOURCE.parse().unwrap();
    let mut names: Vec<String> = doc["profile"]
        .as_table()
        .map(|t| t.iter().map(|(k, _)| k.to_string()).collect())
        .unwrap_or_default();
    if !names.iter().any(|n| n == "full") {
        names.push("full".to_string());
    }
    names
}

fn rank(exposure: &str) -> Option<u8> {
    match exposure {
        "read-only" => Some(0),
        "staging" => Some(1),
        "full" => Some(2),
        _ => None,
    }
}

impl Row {
    fn owned_by(&self, profile: &str) -> bool {
        profile == "full" || self.profiles.iter().any(|p| p == profile)
    }
    /// Owned by the profile and within the scope, deprecated or not.
    fn in_scope(&self, profile: &str, scope: &str) -> bool {
        self.owned_by(profile)
            && self.tier != "loop"
            && matches!((rank(&self.exposure), rank(scope)), (Some(e), Some(s)) if e <= s)
    }
    fn allowed(&self, profile: &str, scope: &str) -> bool {
        !self.deprecated
            && self.owned_by(profile)
            && self.tier != "loop"
            && matches!((rank(&self.exposure), rank(scope)), (Some(e), Some(s)) if e <= s)
    }
    /// Allowed, or a meta-tool the profile owns that the server answers: every one but
    /// `run_code`, which needs a session's script engine.
    fn listed(&self, profile: &str, scope: &str) -> bool {
        self.allowed(profile, scope)
            || (self.owned_by(profile) && self.tier == "loop" && self.exported != "run_code")
    }
}

/// Whether `result` refuses `name` itself, as outside the scope or as deprecated (a meta-tool
/// may refuse the tool it was asked about instead).
fn refuses(result: &CallToolResult, name: &str) -> bool {
    matches!(
        error_kind(result).as_deref(),
        Some("outside-scope" | "deprecated")
    ) && body(result)["tool"] == name
}

/// The `error` kind of a refused or failed call, `None` for a success.
fn error_kind(result: &CallToolResult) -> Option<String> {
    if result.is_error != Some(true) {
        return None;
    }
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default();
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    Some(
        body["error"]
            .as_str()
            .unwrap_or("<not a JSON error>")
            .to_string(),
    )
}

/// Arguments that fit the required part of `schema` and would leave a trace if the tool ran:
/// every required string is `pwned-NAME` (a decoy file of that name is in the workspace).
fn decoy_arguments(schema: &Value, name: &str) -> Value {
    let mut args = Map::new();
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    for key in required.iter().filter_map(Value::as_str) {
        let prop = &schema["properties"][key];
        if let Some(first) = prop["enum"].as_array().and_then(|e| e.first()) {
            args.insert(key.into(), first.clone());
            continue;
        }
        let ty = match &prop["type"] {
            Value::String(t) => t.clone(),
            Value::Array(ts) => ts
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .unwrap_or("string")
                .to_string(),
            _ => "string".to_string(),
        };
        let v = match ty.as_str() {
            "integer" | "number" => json!(1),
            "boolean" => json!(true),
            "array" => json!([]),
            "object" => json!({}),
            _ => json!(format!("pwned-{name}")),
        };
        args.insert(key.into(), v);
    }
    Value::Object(args)
}

/// Every file under `dir` with its content, sorted.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in files_under(dir) {
        let content = std::fs::read(&entry).unwrap_or_default();
        out.push((entry.display().to_string(), content));
    }
    out.sort();
    out
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                files.push(p.clone());
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files
}

/// An in-process server of `profile` and `scope` on the reference catalog, recording its calls
/// in `store`, and a client connected to it over newline-delimited JSON-RPC (the code path of
/// stdio).
async fn connect_in_process(
    workspace: &Path,
    store: Arc<toolcat::CallStore>,
    profile: &str,
    scope: Exposure,
) -> RunningService<RoleClient, ()> {
    let catalog = toolcat_cli::reference_catalog();
    let coordinator = mcp::coordinator(catalog, workspace.to_path_buf()).with_store(store);
    let table = ScopeTable::new(coordinator, profile, scope)
        .expect("every declared profile and scope makes a table");
    let shared = Shared::new(table);
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    tokio::spawn(mcp::serve_lines(shared, read, write));
    ().serve(client_end).await.expect("the client initializes")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_profile_and_scope_lists_and_runs_exactly_the_exposure_table() {
    let catalog = toolcat_cli::reference_catalog();
    let rows = rows();
    assert_eq!(rows.len(), catalog.len(), "one row per catalog tool");
    let ws = tempfile::tempdir().unwrap();
    for row in &rows {
        std::fs::write(
            ws.path().join(format!("pwned-{}", row.exported)),
            "original\n",
        )
        .unwrap();
    }
    let before = snapshot(ws.path());
    let mut figures = Vec::new();
    for profile in profiles() {
        for (scope, scope_name) in SCOPES {
            let store = Arc::new(toolcat::CallStore::in_memory().unwrap());
            let client = connect_in_process(ws.path(), Arc::clone(&store), &profile, scope).await;
            let listed: Vec<String> = client
                .list_all_tools()
                .await
                .expect("tools/list answers")
                .into_iter()
                .map(|t| t.name.to_string())
                .collect();
            let expected: Vec<String> = rows
                .iter()
                .filter(|r| r.listed(&profile, scope_name))
                .map(|r| r.exported.clone())
                .collect();
            assert_eq!(
                listed, expected,
                "profile `{profile}`, scope `{scope_name}`"
            );

            let via_tool_call = listed.iter().any(|n| n == "tool_call");
            let mut refused = 0;
            for row in &rows {
                let t = catalog.tool(&row.exported).unwrap();
                let args = decoy_arguments(catalog.input_schema(t), &row.exported);
                let direct = client
                    .call_tool(call(&row.exported, args.clone()))
                    .await
                    .expect("tools/call answers");
                if row.listed(&profile, scope_name) {
                    assert!(
                        !refuses(&direct, &row.exported),
                        "`{}` is listed for `{profile}`/`{scope_name}` but refused: {:?}",
                        row.exported,
                        body(&direct)
                    );
                } else {
                    refused += 1;
                    assert!(
                        refuses(&direct, &row.exported),
                        "`{}` is not listed for `{profile}`/`{scope_name}` yet answered {:?}",
                        row.exported,
                        body(&direct)
                    );
                    // A deprecated tool of the scope says so, with its replacement when that is
                    // listed; any other name is refused alike, naming nothing outside the scope.
                    let deprecated = row.deprecated && row.in_scope(&profile, scope_name);
                    assert_eq!(
                        error_kind(&direct).as_deref() == Some("deprecated"),
                        deprecated,
                        "`{}` for `{profile}`/`{scope_name}`: {:?}",
                        row.exported,
                        body(&direct)
                    );
                    if let Some(replacement) = body(&direct)["replacedBy"].as_str() {
                        let r = rows.iter().find(|r| r.exported == replacement).unwrap();
                        assert!(r.listed(&profile, scope_name), "{replacement}");
                    }
                }
                if via_tool_call {
                    let nested = client
                        .call_tool(call(
                            "tool_call",
                            json!({"name": row.exported, "arguments": args}),
                        ))
                        .await
                        .expect("tools/call answers");
                    // `tool_call` runs exactly what a direct call runs: listed meta-tools too
                    // (the session's answer), but not `tool_call` itself.
                    assert_eq!(
                        refuses(&nested, &row.exported),
                        !row.listed(&profile, scope_name),
                        "tool_call `{}` for `{profile}`/`{scope_name}`: {:?}",
                        row.exported,
                        body(&nested)
                    );
                    if row.exported == "tool_call" {
                        assert_eq!(
                            body(&nested),
                            json!("`tool_call` cannot call `tool_call`; pass the tool to run as `name`")
                        );
                    }
                }
            }
            if listed.iter().any(|n| n == "tool_search") {
                // Search by the exact name of every tool: nothing outside the listed set comes
                // back (a listed meta-tool is found by its name, as in a session).
                for row in &rows {
                    let found = client
                        .call_tool(call(
                            "tool_search",
                            json!({"query": row.exported, "limit": 50}),
                        ))
                        .await
                        .unwrap();
                    for hit in body(&found)["tools"].as_array().into_iter().flatten() {
                        let name = hit["name"].as_str().unwrap_or_default();
                        let hit_row = rows.iter().find(|r| r.exported == name).unwrap();
                        assert!(
                            hit_row.listed(&profile, scope_name),
                            "tool_search `{}` found `{name}` outside `{profile}`/`{scope_name}`",
                            row.exported
                        );
                    }
                }
            }
            if listed.iter().any(|n| n == "tool_describe") {
                // tool_describe answers for exactly the listed tools (meta-tools included) and
                // answers every other name as `notFound`, like an unknown one (the session's
                // answer).
                let names = rows.iter().map(|r| r.exported.as_str()).chain([
                    "tool_search",
                    "tool_describe",
                    "tool_call",
                    "read_tool_result",
                ]);
                for name in names {
                    let described = client
                        .call_tool(call("tool_describe", json!({ "name": name })))
                        .await
                        .unwrap();
                    let is_listed = listed.iter().any(|n| n == name);
                    assert_eq!(
                        described.is_error != Some(true),
                        is_listed,
                        "tool_describe `{name}` in `{profile}`/`{scope_name}`: {:?}",
                        body(&described)
                    );
                    if is_listed {
                        assert_eq!(body(&described)["tools"][0]["name"], json!(name));
                    } else {
                        assert_eq!(body(&described)["tools"], json!([]));
                        assert_eq!(body(&described)["notFound"][0]["name"], json!(name));
                    }
                }
            }
            // The call records: no tool outside the scope has one (it never got past the scope
            // check); the silent local tools of the scope that ran have one each.
            let records = store.list(None, usize::MAX).unwrap();
            for record in &records {
                let row = rows.iter().find(|r| r.exported == record.tool).unwrap();
                assert!(
                    row.allowed(&profile, scope_name),
                    "`{}` is outside `{profile}`/`{scope_name}` but has a call record: {:?}",
                    record.tool,
                    record.state
                );
            }
            let ran = records
                .iter()
                .filter(|r| r.state == toolcat::CallState::Succeeded)
                .count();
            figures.push(format!(
                "{profile}/{scope_name}: {} listed, {refused} refused, {} call records ({ran} succeeded)",
                listed.len(),
                records.len()
            ));
            client.cancel().await.ok();
        }
    }
    assert_eq!(
        snapshot(ws.path()),
        before,
        "a call changed the workspace: something ran that must not"
    );
    eprintln!("{}", figures.join("\n"));
}

// ---- the binary over stdio ----

fn toolcat_command(args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolcat"));
    cmd.args(args);
    if args.first() == Some(&"serve") {
        // The reference catalog's MCP servers stay unconnected: no child process is started.
        cmd.args(["--servers", "none"]);
    }
    cmd
}

/// A call store inside the test's workspace directory (never `.toolcat/` of the repository).
fn store_in(ws: &tempfile::TempDir) -> String {
    ws.path().join("calls.sqlite").display().to_string()
}

fn list_json(args: &[&str]) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(["list", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_lists_pages_runs_a_read_tool_and_refuses_gated_and_outside_tools() {
    let ws = workspace();
    let w = ws.path().to_str().unwrap();
    let store = store_in(&ws);
    let (transport, _stderr) = TokioChildProcess::builder(toolcat_command(&[
        "serve",
        "--profile",
        "coding",
        "--exposure",
        "staging",
        "--workspace",
        w,
        "--store",
        &store,
    ]))
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let client = ().serve(transport).await.expect("initialize over stdio");
    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("toolcat")
    );
    assert_eq!(
        info.capabilities
            .tools
            .as_ref()
            .and_then(|t| t.list_changed),
        Some(true)
    );

    // Pages of 50 in catalog order, equal to `toolcat list` (scope) plus the owned meta-tools.
    let mut names = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = client
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .unwrap();
        pages += 1;
        assert!(page.tools.len() <= mcp::PAGE_SIZE);
        if page.next_cursor.is_some() {
            assert_eq!(page.tools.len(), mcp::PAGE_SIZE);
        }
        names.extend(page.tools.iter().map(|t| t.name.to_string()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let in_scope: Vec<String> = list_json(&["--profile", "coding", "--exposure", "staging"])
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = list_json(&["--profile", "coding"])
        .iter()
        .filter(|r| {
            (r["tier"] == "loop" && r["name"] != "run_code")
                || in_scope.iter().any(|n| r["name"] == n.as_str())
        })
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, expected);
    assert_eq!(pages, expected.len().div_ceil(mcp::PAGE_SIZE));

    let tools = client.list_all_tools().await.unwrap();
    let read_file = tools.iter().find(|t| t.name == "read_file").unwrap();
    let hints = read_file.annotations.as_ref().unwrap();
    assert_eq!(hints.read_only_hint, Some(true));
    let edit_file = tools.iter().find(|t| t.name == "edit_file").unwrap();
    let hints = edit_file.annotations.as_ref().unwrap();
    assert_eq!(
        (hints.read_only_hint, hints.destructive_hint),
        (Some(false), Some(false))
    );

    // Output schemas: every local tool of the reference returns a struct, so each is listed
    // with its object `outputSchema` (the same as `toolcat export --format mcp`); the
    // meta-tools declare none.
    let exported: Value = serde_json::from_str(&String::from_utf8_lossy(
        &Command::new(env!("CARGO_BIN_EXE_toolcat"))
            .args(["export", "--format", "mcp"])
            .output()
            .unwrap()
            .stdout,
    ))
    .unwrap();
    for tool in &tools {
        let schema = tool
            .output_schema
            .as_ref()
            .map(|s| Value::Object((**s).clone()));
        let export = exported["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == tool.name.as_ref())
            .unwrap_or_else(|| panic!("`{}` is exported", tool.name));
        assert_eq!(schema.as_ref(), export.get("outputSchema"), "{}", tool.name);
        if let Some(schema) = &schema {
            assert_eq!(schema["type"], "object", "{}", tool.name);
        }
    }
    let output_schema = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        Value::Object((**tool.output_schema.as_ref().expect("an output schema")).clone())
    };
    let read_schema = output_schema("read_file");
    assert_eq!(read_schema["title"], "ReadFileOutput");
    assert!(read_schema["required"]
        .as_array()
        .unwrap()
        .contains(&json!("content")));
    let search = tools.iter().find(|t| t.name == "tool_search").unwrap();
    assert!(search.output_schema.is_none());

    // A silent read tool runs; its answer carries the result object as `structuredContent`,
    // the same object as the text, and it fits the listed `outputSchema`.
    let r = client
        .call_tool(call("read_file", json!({"path": "a.txt"})))
        .await
        .unwrap();
    assert_eq!(error_kind(&r), None, "{:?}", body(&r));
    assert_eq!(body(&r)["content"], "hello");
    let structured = r.structured_content.clone().expect("structuredContent");
    assert_eq!(structured, body(&r));
    let validator = jsonschema::validator_for(&read_schema).expect("a valid JSON Schema");
    let errors: Vec<String> = validator
        .iter_errors(&structured)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let r = client
        .call_tool(call("glob", json!({"pattern": "*.txt"})))
        .await
        .unwrap();
    let structured = r.structured_content.clone().expect("structuredContent");
    assert_eq!(structured["matches"], json!(["a.txt"]), "{structured}");
    assert!(jsonschema::is_valid(&output_schema("glob"), &structured));
    // Through `tool_call`, which lists no output schema, the answer is the text alone; a
    // refusal carries none either.
    let r = client
        .call_tool(call(
            "tool_call",
            json!({"name": "read_file", "arguments": {"path": "a.txt"}}),
        ))
        .await
        .unwrap();
    assert_eq!(body(&r)["content"], "hello", "{:?}", body(&r));
    assert_eq!(r.structured_content, None);

    // A gated tool in the scope is refused without approval, naming the tier; nothing ran.
    let r = client
        .call_tool(call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "hello", "new_string": "bye"}),
        ))
        .await
        .unwrap();
    assert_eq!(
        error_kind(&r).as_deref(),
        Some("needs-approval"),
        "{:?}",
        body(&r)
    );
    assert_eq!(body(&r)["tier"], "gated");
    assert!(body(&r)["message"].as_str().unwrap().contains("gated"));

    // Outside the scope (full only), and unknown: the same refusal; nothing ran.
    for name in ["delete_path", "run_command", "no_such_tool"] {
        let r = client
            .call_tool(call(name, json!({"path": "a.txt", "command": "rm a.txt"})))
            .await
            .unwrap();
        assert_eq!(
            error_kind(&r).as_deref(),
            Some("outside-scope"),
            "{name}: {:?}",
            body(&r)
        );
    }
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "hello\n"
    );

    // A cursor the server never issued is a JSON-RPC error, and the session goes on.
    let bad = client
        .list_tools(Some(
            PaginatedRequestParams::default().with_cursor(Some("7:9999".into())),
        ))
        .await;
    assert!(bad.is_err());
    assert!(client.list_tools(None).await.is_ok());
    client.cancel().await.ok();
}

// ---- hostile input on the binary's stdio ----

/// A served process with raw access to its stdin and stdout lines.
struct Raw {
    child: Child,
    stdin: ChildStdin,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl Raw {
    fn spawn(args: &[&str]) -> Raw {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolcat"))
            .args(args)
            .args(["--servers", "none"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let v = serde_json::from_str(&line).unwrap_or_else(|_| json!({"unparsable": line}));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Raw {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, line: &[u8]) {
        self.stdin.write_all(line).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, id: u64, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(line.to_string().as_bytes());
    }

    /// The next message that matches `pick`, within 30 s; others are kept for later.
    fn wait(&mut self, pending: &mut Vec<Value>, pick: impl Fn(&Value) -> bool) -> Value {
        if let Some(k) = pending.iter().position(&pick) {
            return pending.remove(k);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no matching answer within 30 s; seen: {pending:?}"));
            if pick(&v) {
                return v;
            }
            pending.push(v);
        }
    }

    fn answer(&mut self, pending: &mut Vec<Value>, id: u64) -> Value {
        self.wait(pending, |v| v["id"] == id)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialize(raw: &mut Raw, pending: &mut Vec<Value>) {
    raw.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}),
    );
    let init = raw.answer(pending, 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "toolcat", "{init}");
    raw.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
}

/// The reference catalog with `rate_limit = RATE` on `read_file`, written to a file.
fn rate_limited_catalog(dir: &Path, rate: &str) -> std::path::PathBuf {
    let mut doc: toml_edit::DocumentMut = toolcat_cli::REFERENCE_SOURCE.parse().unwrap();
    let tools = doc["tool"].as_array_of_tables_mut().unwrap();
    let row = tools
        .iter_mut()
        .find(|t| t["name"].as_str() == Some("read_file"))
        .unwrap();
    row["rate_limit"] = toml_edit::value(rate);
    let path = dir.join("tools.toml");
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

#[test]
fn hostile_stdio_input_is_answered_with_errors_and_the_session_keeps_serving() {
    let ws = workspace();
    let catalog = rate_limited_catalog(ws.path(), "3/min");
    let store = store_in(&ws);
    let mut raw = Raw::spawn(&[
        "serve",
        "--store",
        &store,
        "--catalog",
        catalog.to_str().unwrap(),
        "--profile",
        "coding",
        "--exposure",
        "read-only",
        "--workspace",
        ws.path().to_str().unwrap(),
    ]);
    let mut pending = Vec::new();
    // Before `initialize`: told to send it first.
    raw.request(90, "tools/list", json!({}));
    let v = raw.answer(&mut pending, 90);
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("send an `initialize` request first")),
        "{v}"
    );
    initialize(&mut raw, &mut pending);

    // Wrongly typed `tools/call` params: -32602 naming the field.
    for (id, params, field) in [
        (91, json!({"name": 123}), "params.name"),
        (
            92,
            json!({"name": "read_file", "arguments": "str"}),
            "params.arguments",
        ),
        (
            93,
            json!({"name": "read_file", "arguments": []}),
            "params.arguments",
        ),
    ] {
        raw.request(id, "tools/call", params);
        let v = raw.answer(&mut pending, id);
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(field)),
            "{v}"
        );
    }
    // An id MCP does not allow: the error response still carries an `id` member.
    raw.send(br#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#);
    let v = raw.wait(&mut pending, |v| {
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("`id` must be"))
    });
    assert_eq!(v.get("id"), Some(&Value::Null), "{v}");

    // Not JSON: -32700, id null.
    raw.send(b"this is not json {");
    let v = raw.wait(&mut pending, |v| v["error"]["code"] == -32700);
    assert_eq!(v["id"], Value::Null);

    // JSON but not a request: -32600 with the id it carried.
    raw.send(br#"{"jsonrpc":"2.0","id":2}"#);
    let v = raw.answer(&mut pending, 2);
    assert_eq!(v["error"]["code"], -32600, "{v}");
    raw.send(b"[1, 2, 3]");
    raw.wait(&mut pending, |v| {
        v["error"]["code"] == -32600
            && v["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("array"))
    });

    // Over the size limit: -32600 naming the limit.
    let pad = "x".repeat(mcp::guard::MAX_MESSAGE_BYTES);
    raw.request(3, "tools/list", json!({"pad": pad}));
    let v = raw.wait(&mut pending, |v| {
        v["error"]["data"]["limitBytes"].is_number()
    });
    assert_eq!(v["error"]["code"], -32600);
    assert_eq!(
        v["error"]["data"]["limitBytes"],
        mcp::guard::MAX_MESSAGE_BYTES
    );

    // Unknown method: -32601.
    raw.request(4, "tools/explode", json!({}));
    assert_eq!(raw.answer(&mut pending, 4)["error"]["code"], -32601);

    // An extra field, then a wrongly typed one: invalid-arguments naming the field.
    raw.request(
        5,
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "a.txt", "bogus": 1}}),
    );
    let v = raw.answer(&mut pending, 5);
    let text: Value =
        serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(v["result"]["isError"], true);
    assert_eq!(text["error"], "invalid-arguments");
    assert!(
        text["message"].as_str().unwrap().contains("bogus"),
        "{text}"
    );
    raw.request(
        6,
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": 7}}),
    );
    let v = raw.answer(&mut pending, 6);
    let text: Value =
        serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["error"], "invalid-arguments");
    assert_eq!(text["errors"][0]["instancePath"], "/path", "{text}");

    // A storm past `3/min`: three run, the rest are rate-limited with a retry time.
    for id in 10..20 {
        raw.request(
            id,
            "tools/call",
            json!({"name": "read_file", "arguments": {"path": "a.txt"}}),
        );
    }
    let mut ran = 0;
    let mut limited = 0;
    for id in 10..20 {
        let v = raw.answer(&mut pending, id);
        if v["result"]["isError"] == true {
            let text: Value =
                serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
            assert_eq!(text["error"], "rate-limited", "{text}");
            assert!(
                text["retryAfterMs"].as_u64().is_some_and(|ms| ms > 0),
                "{text}"
            );
            limited += 1;
        } else {
            ran += 1;
        }
    }
    assert_eq!((ran, limited), (3, 7));

    // And a valid request is still served.
    raw.request(30, "tools/list", json!({}));
    let v = raw.answer(&mut pending, 30);
    assert!(
        v["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{v}"
    );
}

/// The resident memory of process `pid` in KiB (`VmRSS` of `/proc/PID/status`), `None` where
/// there is no `/proc`.
fn resident_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A client that writes requests and never reads: the server stops reading stdin after a bounded
/// number of requests (so the client's writes block on the full pipe) and its memory stays
/// bounded; once the client reads, every request is answered exactly once.
#[test]
fn a_stdio_client_that_does_not_read_blocks_its_own_writes_and_loses_no_answer() {
    let ws = workspace();
    let store = store_in(&ws);
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(["serve", "--servers", "none", "--store", &store])
        .args(["--profile", "coding", "--exposure", "full", "--workspace"])
        .arg(ws.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let line = |id: usize, method: &str, params: Value| {
        let mut l =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        l.push('\n');
        l
    };
    stdin
        .write_all(line(0, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}})).as_bytes())
        .unwrap();
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    assert!(answer.contains("serverInfo"), "{answer}");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .unwrap();
    let before = resident_kib(child.id());

    // 4,000 requests are 260 KB on the pipe, which holds 64 KiB.
    const N: usize = 4_000;
    let written = Arc::new(AtomicUsize::new(0));
    let writer = {
        let written = Arc::clone(&written);
        std::thread::spawn(move || {
            for id in 1..=N {
                if stdin
                    .write_all(line(id, "tools/list", json!({})).as_bytes())
                    .is_err()
                {
                    break;
                }
                written.store(id, Ordering::SeqCst);
            }
            stdin
        })
    };
    // Until the writer is done, or has made no progress for 2 s (blocked on the full pipe).
    let mut last = (0, Instant::now());
    let deadline = Instant::now() + Duration::from_secs(120);
    while !writer.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        let now = written.load(Ordering::SeqCst);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(2) {
            break;
        }
    }
    let stalled_at = written.load(Ordering::SeqCst);
    assert!(
        !writer.is_finished() && stalled_at < N,
        "all {N} requests were taken while no answer was read: the server does not stop reading"
    );
    match (before, resident_kib(child.id())) {
        (Some(before), Some(after)) => assert!(
            after < before + 64 * 1024,
            "the server grew from {before} KiB to {after} KiB holding unread answers"
        ),
        _ => eprintln!("no /proc here: the server's memory is not measured, only its reading"),
    }

    let mut seen = vec![false; N + 1];
    for _ in 0..N {
        answer.clear();
        assert!(stdout.read_line(&mut answer).unwrap() > 0, "stdout ended");
        let v: Value = serde_json::from_str(&answer).unwrap();
        assert!(v["result"]["tools"].is_array(), "{v}");
        let id = v["id"].as_u64().unwrap() as usize;
        assert!(!seen[id], "request {id} answered twice");
        seen[id] = true;
    }
    assert!(seen[1..].iter().all(|&s| s), "a request was not answered");
    drop(writer.join().unwrap());
    assert!(child.wait().unwrap().success());
}

// ---- streamable HTTP ----

/// Starts `toolcat serve --http 127.0.0.1:0 ARGS` and returns it with the bound address.
fn spawn_http(args: &[&str]) -> (Child, String) {
    let served = crate::served::start("127.0.0.1:0", args);
    (served.child, served.mcp)
}

/// One raw HTTP/1.1 POST to `/mcp`; returns the status code and the body.
fn post(addr: &str, body: &[u8]) -> (u16, String) {
    raw_post(addr, "/mcp", "", body.len(), body)
}

/// One raw HTTP/1.1 POST to `path` with `extra` header lines (each ending in `\r\n`) and a
/// `Content-Length` of `length` (which may differ from `body`); returns the status code and the
/// body.
fn raw_post(addr: &str, path: &str, extra: &str, length: usize, body: &[u8]) -> (u16, String) {
    raw_http(
        addr,
        path,
        &format!("Host: {addr}\r\n{extra}"),
        length,
        body,
    )
}

/// [`raw_post`] with exactly the header lines `headers` (the `Host` header included, or left
/// out) besides the content and connection headers.
fn raw_http(addr: &str, path: &str, headers: &str, length: usize, body: &[u8]) -> (u16, String) {
    let (status, _, body) = crate::served::http(addr, "POST", path, headers, length, body);
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_serves_the_same_scope_and_answers_hostile_requests() {
    let ws = workspace();
    let store = store_in(&ws);
    let (mut child, addr) = spawn_http(&[
        "--store",
        &store,
        "--profile",
        "messaging",
        "--exposure",
        "read-only",
        "--workspace",
        ws.path().to_str().unwrap(),
    ]);
    let transport = StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
    let client = ().serve(transport).await.expect("initialize over HTTP");
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    let expected: Vec<String> = rows()
        .iter()
        .filter(|r| r.listed("messaging", "read-only"))
        .map(|r| r.exported.clone())
        .collect();
    assert_eq!(names, expected);

    // Outside the scope: `slack_post_message` is staging; `read_file` is not the profile's.
    for name in ["slack_post_message", "read_file"] {
        let r = client
            .call_tool(call(
                name,
                json!({"channel_id": "C1", "text": "hi", "path": "a.txt"}),
            ))
            .await
            .unwrap();
        assert_eq!(error_kind(&r).as_deref(), Some("outside-scope"), "{name}");
    }
    // In scope and silent: a remote server tool has no connection here (`--servers none`), so it
    // is refused naming its server, and nothing is sent.
    let r = client
        .call_tool(call("time__get_current_time", json!({"timezone": "UTC"})))
        .await
        .unwrap();
    assert_eq!(
        error_kind(&r).as_deref(),
        Some("server-not-connected"),
        "{:?}",
        body(&r)
    );

    let (status, text) = post(&addr, b"{not json");
    assert_eq!(status, 400, "{text}");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["error"]["code"],
        -32700
    );
    let (status, text) = post(&addr, br#"{"jsonrpc":"2.0","id":5}"#);
    assert_eq!(status, 400, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (v["error"]["code"].clone(), v["id"].clone()),
        (json!(-32600), json!(5))
    );
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
        "x".repeat(mcp::guard::MAX_MESSAGE_BYTES)
    );
    let (status, _) = post(&addr, big.as_bytes());
    assert_eq!(status, 413);
    // A declared length over the limit is refused before any body is sent.
    let (status, text) = raw_post(&addr, "/mcp", "", 1_000_000_000_000, b"{}");
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("1 MiB"), "{text}");

    // Only `/mcp` is served.
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let (status, text) = raw_post(&addr, "/etc/passwd", "", list.len(), list);
    assert_eq!(status, 404, "{text}");
    assert!(text.contains("`/mcp`"), "{text}");
    // A browser origin other than the server's own loopback one is refused (DNS rebinding); its
    // own opens a session (every vector: `http_checks_host_and_origin_exactly`).
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"o","version":"1"}}}"#;
    let (status, text) = raw_post(
        &addr,
        "/mcp",
        "Origin: http://evil.example\r\n",
        init.len(),
        init,
    );
    assert_eq!(status, 403, "{text}");
    let (status, text) = raw_post(
        &addr,
        "/mcp",
        &format!("Origin: http://{addr}\r\n"),
        init.len(),
        init,
    );
    assert_eq!(status, 200, "{text}");
    // A request before `initialize` is told to initialize.
    let (status, text) = post(&addr, list);
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("send an `initialize` request first"),
        "{text}"
    );

    // The session still works.
    assert_eq!(client.list_all_tools().await.unwrap().len(), expected.len());
    client.cancel().await.ok();
    let _ = child.kill();
    let _ = child.wait();
}

/// `Host` must name a loopback host with the server's own port, and a present `Origin` must be
/// `http(s)://` + a loopback host + the server's port: each part parsed and compared whole, so
/// neither a suffix (`localhost:PORT.evil.com`) nor another port passes.
#[test]
fn http_checks_host_and_origin_exactly() {
    let ws = workspace();
    let store = store_in(&ws);
    let (mut child, addr) = spawn_http(&[
        "--store",
        &store,
        "--profile",
        "minimal",
        "--exposure",
        "full",
        "--workspace",
        ws.path().to_str().unwrap(),
    ]);
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    let other = if port == 1 { 2 } else { 1 };
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}"#;
    let send = |headers: String| raw_http(&addr, "/mcp", &headers, init.len(), init);

    for host in [
        format!("localhost:{port}.evil.com"),
        format!("127.0.0.1:{port}.evil.com"),
        format!("127.0.0.1:{other}"),
        format!("localhost:{other}"),
        format!("[::1]:{other}"),
        format!("evil.com:{port}"),
        format!("localhost.evil.com:{port}"),
        format!("127.0.0.1.evil.com:{port}"),
        format!("user@localhost:{port}"),
        format!("127.0.0.2:{port}"),
        format!("[::1]x:{port}"),
        format!("localhost:{port}:{port}"),
        "localhost".to_string(),
        "localhost:".to_string(),
        String::new(),
    ] {
        let (status, text) = send(format!("Host: {host}\r\n"));
        assert_eq!(status, 403, "Host `{host}`: {text}");
        assert!(
            text.contains("`Host") && text.contains(&format!(":{port}")),
            "Host `{host}`: {text}"
        );
    }
    let (status, text) = send(String::new());
    assert_eq!(status, 403, "no Host: {text}");
    assert!(text.contains("`Host` header"), "{text}");

    for origin in [
        format!("http://localhost:{port}.evil.com"),
        format!("http://127.0.0.1:{port}.evil.com"),
        format!("http://localhost:{other}"),
        format!("http://evil.com:{port}"),
        format!("http://localhost.evil.com:{port}"),
        format!("http://localhost:{port}/path"),
        format!("ftp://localhost:{port}"),
        format!("http://user@localhost:{port}"),
        "http://localhost".to_string(),
        "https://127.0.0.1".to_string(),
        "http://evil.example".to_string(),
        "null".to_string(),
    ] {
        let (status, text) = send(format!("Host: {addr}\r\nOrigin: {origin}\r\n"));
        assert_eq!(status, 403, "Origin `{origin}`: {text}");
        assert!(
            text.contains("`Origin") && text.contains(&format!(":{port}")),
            "Origin `{origin}`: {text}"
        );
    }
    let (status, text) = send(format!(
        "Host: {addr}\r\nOrigin: http://localhost:{port}\r\nOrigin: http://evil.example\r\n"
    ));
    assert_eq!(status, 403, "two Origins: {text}");

    for host in [
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ] {
        let (status, text) = send(format!("Host: {host}\r\n"));
        assert_eq!(status, 200, "Host `{host}`: {text}");
    }
    for origin in [
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        format!("https://[::1]:{port}"),
    ] {
        let (status, text) = send(format!("Host: {addr}\r\nOrigin: {origin}\r\n"));
        assert_eq!(status, 200, "Origin `{origin}`: {text}");
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn dynamic_discovery_needs_sessions_so_stateless_refuses_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--stateless",
            "--dynamic",
            "--profile",
            "minimal",
            "--exposure",
            "full",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--dynamic") && stderr.contains("--stateless"),
        "{stderr}"
    );
    assert!(!stderr.contains("listening"), "{stderr}");
}

#[test]
fn http_on_a_non_loopback_address_is_refused_naming_the_fix() {
    for addr in ["0.0.0.0:0", "[::]:0"] {
        let out = Command::new(env!("CARGO_BIN_EXE_toolcat"))
            .args([
                "serve",
                "--http",
                addr,
                "--profile",
                "minimal",
                "--exposure",
                "full",
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{addr}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("not a loopback address")
                && stderr.contains("no authentication")
                && stderr.contains("127.0.0.1")
                && stderr.contains("--tokens FILE")
                && stderr.contains("--oauth-issuer URL"),
            "{addr}: {stderr}"
        );
        assert!(!stderr.contains("listening"), "{stderr}");
    }
}

#[test]
fn http_refuses_sessions_beyond_the_cap() {
    let ws = workspace();
    let store = store_in(&ws);
    let (mut child, addr) = spawn_http(&[
        "--store",
        &store,
        "--profile",
        "minimal",
        "--exposure",
        "full",
        "--workspace",
        ws.path().to_str().unwrap(),
    ]);
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cap","version":"1"}}}"#;
    for n in 0..mcp::MAX_SESSIONS {
        let (status, text) = raw_post(&addr, "/mcp", "", init.len(), init);
        assert_eq!(status, 200, "session {n}: {text}");
    }
    let (status, text) = raw_post(&addr, "/mcp", "", init.len(), init);
    assert_eq!(status, 503, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["error"]["data"]["maxSessions"], mcp::MAX_SESSIONS);
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("close unused sessions")),
        "{text}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

// ---- list_changed ----

#[derive(Clone, Default)]
struct Watcher {
    changed: Arc<AtomicUsize>,
}

impl ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.fetch_add(1, Ordering::SeqCst);
    }
}

async fn wait_for(counter: &AtomicUsize, at_least: usize, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if counter.load(Ordering::SeqCst) >= at_least {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_catalog_notifies_list_changed_and_a_broken_one_changes_nothing() {
    let ws = workspace();
    let path = ws.path().join("tools.toml");
    std::fs::write(&path, toolcat_cli::REFERENCE_SOURCE).unwrap();
    let store = store_in(&ws);
    let mut command = toolcat_command(&[
        "serve",
        "--store",
        &store,
        "--catalog",
        path.to_str().unwrap(),
        "--profile",
        "coding",
        "--exposure",
        "read-only",
        "--workspace",
        ws.path().to_str().unwrap(),
    ]);
    // The default log filter: the reload reports are on stderr.
    command.env_remove("TOOLCAT_LOG");
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = stderr.expect("stderr is piped");
    let stderr = tokio::spawn(async move {
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut text)
            .await
            .map(|_| text)
    });
    let watcher = Watcher::default();
    let client = watcher.clone().serve(transport).await.unwrap();
    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name.to_string()).collect()
    };
    let first = names(client.list_all_tools().await.unwrap());
    assert!(first.iter().any(|n| n == "read_file"));

    // A catalog that fails validation: no notification, the same list, still served.
    let broken = format!(
        "{}\n[[tool]]\nname = \"read_file\"\n",
        toolcat_cli::REFERENCE_SOURCE
    );
    std::fs::write(&path, broken).unwrap();
    tokio::time::sleep(mcp::RELOAD_POLL * 4).await;
    assert_eq!(watcher.changed.load(Ordering::SeqCst), 0);
    assert_eq!(names(client.list_all_tools().await.unwrap()), first);

    // `read_file` moved to `staging`: it leaves the read-only list, and clients are told.
    let mut doc: toml_edit::DocumentMut = toolcat_cli::REFERENCE_SOURCE.parse().unwrap();
    let tools = doc["tool"].as_array_of_tables_mut().unwrap();
    let row = tools
        .iter_mut()
        .find(|t| t["name"].as_str() == Some("read_file"))
        .unwrap();
    row["exposure"] = toml_edit::value("staging");
    std::fs::write(&path, doc.to_string()).unwrap();
    assert!(
        wait_for(&watcher.changed, 1, Duration::from_secs(20)).await,
        "no notifications/tools/list_changed after the edit"
    );
    let second = names(client.list_all_tools().await.unwrap());
    let expected: Vec<String> = first
        .iter()
        .filter(|n| *n != "read_file")
        .cloned()
        .collect();
    assert_eq!(second, expected);
    let r = client
        .call_tool(call("read_file", json!({"path": "a.txt"})))
        .await
        .unwrap();
    assert_eq!(error_kind(&r).as_deref(), Some("outside-scope"));
    client.cancel().await.ok();
    // The server ends with its standard input; its stderr holds each reload's report.
    let stderr = tokio::time::timeout(Duration::from_secs(20), stderr)
        .await
        .expect("the server exits when its client leaves")
        .unwrap()
        .unwrap();
    let path = path.display();
    for line in [
        format!("mcp: `{path}` changed but does not load; still serving the catalog loaded before"),
        format!("mcp: reloaded `{path}`: {} tools listed; clients notified (`notifications/tools/list_changed`)", expected.len()),
    ] {
        assert!(
            stderr.lines().any(|l| l == line),
            "no line `{line}` in:\n{stderr}"
        );
    }
}

/// The reference an archived result's preview names (`[result archived as `REF`: ...`).
fn archived_reference(result: &CallToolResult) -> String {
    let text = result.content[0]
        .as_text()
        .map(|t| t.text.clone())
        .unwrap_or_default();
    text.split("[result archived as `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| {
            panic!(
                "no archived reference in {}",
                &text[text.len().saturating_sub(300)..]
            )
        })
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archived_result_is_read_back_by_the_http_session_that_got_it_and_no_other() {
    let ws = workspace();
    let line = "0123456789 abcdefghij 0123456789 abcdefghij";
    std::fs::write(ws.path().join("big.txt"), vec![line; 1000].join("\n")).unwrap();
    let store = store_in(&ws);
    let (mut child, addr) = spawn_http(&[
        "--store",
        &store,
        "--profile",
        "minimal",
        "--exposure",
        "read-only",
        "--workspace",
        ws.path().to_str().unwrap(),
    ]);
    let url = format!("http://{addr}/mcp");
    let mine =
        ().serve(StreamableHttpClientTransport::from_uri(url.clone()))
            .await
            .expect("initialize the first session");
    let theirs =
        ().serve(StreamableHttpClientTransport::from_uri(url))
            .await
            .expect("initialize the second session");

    let read = call("read_file", json!({"path": "big.txt"}));
    let first = archived_reference(&mine.call_tool(read.clone()).await.unwrap());
    let second = archived_reference(&mine.call_tool(read).await.unwrap());
    for r in [&first, &second] {
        let bits = r.strip_prefix("result-").expect("a readable prefix");
        assert_eq!(bits.len(), 26, "{r}");
        assert!(
            bits.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'v').contains(&b)),
            "{r}"
        );
    }
    assert_ne!(first, second);

    let read_back = |reference: &str| {
        call(
            "read_tool_result",
            json!({"reference": reference, "offset": 0, "length": 43}),
        )
    };
    let got = mine.call_tool(read_back(&first)).await.unwrap();
    assert_ne!(got.is_error, Some(true), "{:?}", body(&got));
    assert!(
        body(&got)["text"].as_str().unwrap().contains("0123456789"),
        "{:?}",
        body(&got)
    );

    // The other session gets exactly the answer of a reference that was never issued (the
    // archive's text, as a session answers it); the sequential references of earlier versions
    // are no references.
    let unknown = |result: &CallToolResult, reference: &str| {
        assert_eq!(result.is_error, Some(true), "{:?}", body(result));
        let text = body(result);
        assert!(text.as_str().unwrap().contains("no result `"), "{text:?}");
        text.as_str().unwrap().replace(reference, "REF")
    };
    let never = "result-00000000000000000000000000";
    let stolen = theirs.call_tool(read_back(&first)).await.unwrap();
    let missing = theirs.call_tool(read_back(never)).await.unwrap();
    let own_missing = mine.call_tool(read_back(never)).await.unwrap();
    assert_eq!(unknown(&stolen, &first), unknown(&missing, never));
    assert_eq!(unknown(&stolen, &first), unknown(&own_missing, never));
    for guess in ["result-1", "result-2", "1"] {
        let r = theirs.call_tool(read_back(guess)).await.unwrap();
        assert_eq!(r.is_error, Some(true), "{guess}: {:?}", body(&r));
        assert!(
            !body(&r).to_string().contains("0123456789"),
            "{guess}: {:?}",
            body(&r)
        );
    }
    // The first session still reads both of its results.
    for r in [&first, &second] {
        let got = mine.call_tool(read_back(r)).await.unwrap();
        assert_ne!(got.is_error, Some(true), "{r}: {:?}", body(&got));
    }
    mine.cancel().await.ok();
    theirs.cancel().await.ok();
    child.kill().ok();
    child.wait().ok();
}

/// `toolcat serve` neither lists nor runs the reference catalog's deprecated `find_files`; a call
/// answers its replacement (`glob`), which then runs; `--allow-deprecated` lists and runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_refuses_deprecated_tools_with_their_replacement_unless_allowed() {
    let ws = workspace();
    let w = ws.path().to_str().unwrap();
    let store = store_in(&ws);
    let args = [
        "serve",
        "--profile",
        "full",
        "--exposure",
        "read-only",
        "--workspace",
        w,
        "--store",
        &store,
    ];
    let (transport, _stderr) = TokioChildProcess::builder(toolcat_command(&args))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.expect("initialize over stdio");
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(!names.iter().any(|n| n == "find_files"), "{names:?}");
    assert!(names.iter().any(|n| n == "glob"), "{names:?}");
    let refused = client
        .call_tool(call("find_files", json!({"name": "a"})))
        .await
        .unwrap();
    assert_eq!(
        body(&refused),
        json!({
            "error": "deprecated",
            "tool": "find_files",
            "message": "`find_files` is deprecated (removal 2027-03-01); call `glob` instead",
            "removal": "2027-03-01",
            "replacedBy": "glob",
        })
    );
    let nested = client
        .call_tool(call(
            "tool_call",
            json!({"name": "find_files", "arguments": {}}),
        ))
        .await
        .unwrap();
    assert_eq!(body(&nested), body(&refused));
    let glob = client
        .call_tool(call("glob", json!({"pattern": "*.txt"})))
        .await
        .unwrap();
    assert_eq!(error_kind(&glob), None, "{:?}", body(&glob));
    assert!(
        body(&glob).to_string().contains("a.txt"),
        "{:?}",
        body(&glob)
    );
    client.cancel().await.ok();

    let mut allowing = args.to_vec();
    allowing.push("--allow-deprecated");
    let (transport, _stderr) = TokioChildProcess::builder(toolcat_command(&allowing))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.expect("initialize over stdio");
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.iter().any(|n| n == "find_files"), "{names:?}");
    let ran = client
        .call_tool(call("find_files", json!({"name": "a."})))
        .await
        .unwrap();
    assert_eq!(error_kind(&ran), None, "{:?}", body(&ran));
    assert!(body(&ran).to_string().contains("a.txt"), "{:?}", body(&ran));
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolsets_and_tools_narrow_within_the_scope_and_dynamic_sessions_grow_by_search() {
    let ws = workspace();
    let catalog = toolcat_cli::reference_catalog();
    let table = |selection: mcp::Selection| {
        ScopeTable::with_selection(
            mcp::coordinator(catalog, ws.path().to_path_buf()),
            "coding",
            Exposure::Staging,
            false,
            selection,
        )
    };
    // Narrowed: the files toolset's tools of the scope plus `glob`, nothing else.
    let narrowed = table(mcp::Selection {
        toolsets: vec!["files".into()],
        tools: vec!["glob".into()],
        dynamic: false,
    })
    .unwrap();
    let names: Vec<String> = narrowed
        .definitions()
        .iter()
        .map(|d| d.name.to_string())
        .collect();
    // `toolcat list` derives the scope's rows with their (expanded) toolsets.
    let expected: Vec<String> = list_json(&["--profile", "coding", "--exposure", "staging"])
        .into_iter()
        .filter(|r| {
            r["tier"] != "loop"
                && (r["name"] == "glob"
                    || r["toolsets"]
                        .as_array()
                        .is_some_and(|s| s.iter().any(|s| s == "files")))
        })
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, expected);
    // Never wider: a tool of exposure `full` and an unknown toolset are refused, naming them and
    // the allowed names.
    for (selection, named, allowed) in [
        (
            mcp::Selection {
                tools: vec!["delete_path".into()],
                ..Default::default()
            },
            "delete_path",
            "read_file",
        ),
        (
            mcp::Selection {
                toolsets: vec!["nope".into()],
                ..Default::default()
            },
            "nope",
            "files",
        ),
    ] {
        let e = table(selection).err().expect("refused").to_string();
        assert!(e.contains(named) && e.contains(allowed), "{e}");
    }
    // A deprecated tool named by `--tools` is refused, naming its replacement and the flag that
    // serves it, rather than narrowed to and then hidden (an empty list); with the flag it is
    // served.
    let deprecated = |allow: bool| {
        ScopeTable::with_selection(
            mcp::coordinator(catalog, ws.path().to_path_buf()),
            "full",
            Exposure::ReadOnly,
            allow,
            mcp::Selection {
                tools: vec!["find_files".into()],
                ..Default::default()
            },
        )
    };
    let e = deprecated(false).err().expect("refused").to_string();
    assert!(
        e.contains("find_files") && e.contains("`glob`") && e.contains("--allow-deprecated"),
        "{e}"
    );
    let served: Vec<String> = deprecated(true)
        .unwrap()
        .definitions()
        .iter()
        .map(|d| d.name.to_string())
        .collect();
    assert_eq!(served, ["find_files"]);

    // Dynamic: the session starts with the inline tools plus the meta-tools; a search adds.
    let dynamic = table(mcp::Selection {
        dynamic: true,
        ..Default::default()
    })
    .unwrap();
    let shared = Shared::new(dynamic);
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    tokio::spawn(mcp::serve_lines(shared, read, write));
    let client = ().serve(client_end).await.expect("the client initializes");
    let list = |c: &RunningService<RoleClient, ()>| {
        let peer = c.peer().clone();
        async move {
            peer.list_all_tools()
                .await
                .unwrap()
                .into_iter()
                .map(|t| t.name.to_string())
                .collect::<Vec<_>>()
        }
    };
    let first = list(&client).await;
    assert!(first.contains(&"tool_search".to_string()), "{first:?}");
    assert!(!first.contains(&"propose_edit".to_string()), "{first:?}");
    let refused = client
        .call_tool(call(
            "propose_edit",
            json!({"path": "a.txt", "old_string": "x", "new_string": "y"}),
        ))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true), "not served before a search");
    client
        .call_tool(call("tool_search", json!({"query": "propose_edit"})))
        .await
        .unwrap();
    let after = list(&client).await;
    assert!(
        after.len() == first.len() + 1 && after.contains(&"propose_edit".to_string()),
        "{after:?}"
    );
    client.cancel().await.unwrap();
}
