//! Remote MCP servers as catalog sources, against real servers over stdio (feature
//! `mcp-client`): mcp-server-time and mcp-server-git (PyPI), @modelcontextprotocol/server-filesystem
//! and @modelcontextprotocol/server-memory (npm), installed at pinned versions by
//! `tests/mcp_servers/install`, and the small servers of `tests/mcp_servers/`: one whose schema
//! changes between connections, one that dies in the middle of a call. Nothing is mocked.
//!
//! Run alone with `cargo test -p toolcat --features mcp-client --test remote`.
#![cfg(feature = "mcp-client")]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolcat::remote::{
    discover, live_report, PoolOptions, ServerConfig, ServerPool, ServerState, Transport,
};
use toolcat::{CallError, CallRequest, CallState, CallStore, Catalog, Coordinator, ToolContext};

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the runtime crate sits in the repository")
        .to_path_buf()
}

/// Where the installer put the servers (it runs once per test binary, under a file lock shared
/// with other test binaries and CI).
fn servers() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let target = root().join("target");
        std::fs::create_dir_all(&target).expect("target directory");
        let lock = File::create(target.join("mcp-servers.lock")).expect("lock file");
        lock.lock().expect("lock the installer");
        let out = Command::new("bash")
            .arg(root().join("tests/mcp_servers/install"))
            .output()
            .expect("run tests/mcp_servers/install");
        assert!(
            out.status.success(),
            "tests/mcp_servers/install failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let dir = stdout
            .lines()
            .last()
            .expect("the installer prints its directory");
        PathBuf::from(dir.trim())
    })
}

fn python() -> String {
    servers().join("venv/bin/python").display().to_string()
}

fn venv_bin(name: &str) -> String {
    servers().join("venv/bin").join(name).display().to_string()
}

fn npm_server(package: &str) -> String {
    servers()
        .join("npm/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js")
        .display()
        .to_string()
}

fn test_server(file: &str) -> String {
    root()
        .join("tests/mcp_servers")
        .join(file)
        .display()
        .to_string()
}

/// A JSON value as a TOML inline value (schemas have no nulls; a null member is left out).
fn toml_value(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| format!("{} = {}", Value::String(k.clone()), toml_value(v)))
                .collect();
            format!("{{ {} }}", members.join(", "))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

fn toml_str(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// `[mcp_server.NAME]` for a configuration.
fn server_entry(config: &ServerConfig, env: &[(&str, &str)]) -> String {
    let Transport::Stdio { command, args, .. } = &config.transport else {
        panic!("the tests use stdio servers")
    };
    let mut s = format!(
        "[mcp_server.{}]\ndescription = \"The {} test server\"\ncommand = {}\nargs = [{}]\n",
        config.name,
        config.name,
        toml_str(command),
        args.iter()
            .map(|a| toml_str(a))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !env.is_empty() {
        let members: Vec<String> = env
            .iter()
            .map(|(k, v)| format!("{k} = {}", toml_str(v)))
            .collect();
        s.push_str(&format!("env = {{ {} }}\n", members.join(", ")));
    }
    s
}

/// A `[[tool]]` row of server `server`.
fn row(server: &str, name: &str, effect: &str, schema: &Value) -> String {
    let tier = if effect == "read" { "silent" } else { "gated" };
    format!(
        "[[tool]]\nname = \"{name}\"\ndescription = \"The {name} tool of the {server} server.\"\nvisibility = \"inline\"\ntier = \"{tier}\"\neffect = \"{effect}\"\nexposure = \"full\"\ntoolsets = [\"remote\"]\nowner = \"tests\"\nsource = \"{server}\"\ninput_schema = {}\n",
        toml_value(schema)
    )
}

const TOOLSET: &str = "[toolset.remote]\ndescription = \"Tools of remote servers\"\n";

/// A catalog of `parts`, written to a file of its own (the pool reads the `env` of its
/// `[mcp_server]` entries there) in a directory that lives as long as the catalog is used.
fn catalog(parts: &[String]) -> (tempfile::TempDir, Catalog) {
    let source = format!("{TOOLSET}\n{}", parts.join("\n"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.toml");
    std::fs::write(&path, &source).unwrap();
    let c =
        Catalog::load(&path).unwrap_or_else(|e| panic!("the test catalog loads: {e}\n{source}"));
    (dir, c)
}

fn all(c: &Catalog) -> Vec<u64> {
    vec![u64::MAX; c.len().div_ceil(64).max(1)]
}

/// The input schema `discovery` lists for `tool`.
async fn remote_schema(config: &ServerConfig, tool: &str) -> Value {
    let d = discover(config, Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("discover `{}`: {e}", config.name));
    d.tool(tool)
        .unwrap_or_else(|| panic!("`{}` lists `{tool}`", config.name))
        .input_schema
        .clone()
}

fn options() -> PoolOptions {
    PoolOptions {
        backoff_initial: Duration::from_millis(200),
        ..PoolOptions::default()
    }
}

fn state_of(pool: &ServerPool, server: &str) -> ServerState {
    pool.status()
        .into_iter()
        .find(|s| s.name == server)
        .unwrap_or_else(|| panic!("a status for `{server}`"))
        .state
}

/// Waits until `pool` says `server` is ready with a tool list captured after `after`.
async fn ready_again(pool: &ServerPool, server: &str, after: std::time::SystemTime) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = pool
            .status()
            .into_iter()
            .find(|s| s.name == server)
            .expect("status");
        if s.state == ServerState::Ready && s.captured_at.is_some_and(|t| t > after) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "`{server}` did not reconnect: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn time_config() -> ServerConfig {
    ServerConfig::stdio(venv_bin("mcp-server-time"), ["--local-timezone", "UTC"]).with_name("time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_real_servers_connect_at_once_and_answer_through_the_coordinator() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(
        files.join("hello.txt"),
        "hello from the filesystem server\n",
    )
    .unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .output()
            .expect("git runs")
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("untracked.txt"), "new\n").unwrap();
    let memory_file = dir.path().join("memory.jsonl");
    let memory_path = memory_file.display().to_string();

    let time = time_config();
    let fs = ServerConfig::stdio(
        "node",
        [npm_server("server-filesystem"), files.display().to_string()],
    )
    .with_name("fs");
    let memory = ServerConfig::stdio("node", [npm_server("server-memory")])
        .with_name("memory")
        .with_env("MEMORY_FILE_PATH", memory_path.clone());
    let gitc = ServerConfig::stdio(
        venv_bin("mcp-server-git"),
        ["--repository".to_string(), repo.display().to_string()],
    )
    .with_name("git");

    // The rows declare what the servers list now (as `toolcat import --from-server` writes them).
    let picks = [
        (&time, "get_current_time", "read", &[][..]),
        (&fs, "list_allowed_directories", "read", &[][..]),
        (
            &memory,
            "read_graph",
            "read",
            &[("MEMORY_FILE_PATH", memory_path.as_str())][..],
        ),
        (&gitc, "git_status", "read", &[][..]),
    ];
    let mut parts = Vec::new();
    for (config, tool, effect, env) in picks {
        let schema = remote_schema(config, tool).await;
        parts.push(server_entry(config, env));
        parts.push(row(&config.name, tool, effect, &schema));
    }
    let (_catalog_dir, c) = catalog(&parts);

    let started = Instant::now();
    let pool = ServerPool::start(&c, options());
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "starting the pool does not wait for the servers"
    );
    assert!(
        pool.wait_ready(Duration::from_secs(60)).await,
        "every server settles: {:?}",
        pool.status()
    );
    for status in pool.status() {
        assert_eq!(status.state, ServerState::Ready, "{status:?}");
        assert!(status.tools.is_some_and(|n| n > 0), "{status:?}");
        assert!(status.captured_at.is_some());
        assert_eq!(status.transport, "stdio");
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["state"], "ready");
        assert!(json["captured_at_ms"].as_u64().is_some(), "{json}");
    }
    for s in c.servers() {
        let d = pool.discovered(c.server_name(s)).expect("a tool list");
        assert!(live_report(&c, s, &d).removed.is_empty());
        assert!(live_report(&c, s, &d).changed.is_empty());
    }

    let store = Arc::new(CallStore::in_memory().unwrap());
    let co = Coordinator::new(&c, ToolContext::new(dir.path()))
        .with_store(Arc::clone(&store))
        .with_servers(Arc::clone(&pool));
    let allowed = all(&c);
    let call = |tool: &str, args: Value| {
        let t = c.tool(tool).unwrap();
        CallRequest::new(t, args, &allowed)
    };
    let checks: [(&str, Value, &str); 4] = [
        (
            "get_current_time",
            json!({"timezone": "Europe/Paris"}),
            "Europe/Paris",
        ),
        ("list_allowed_directories", json!({}), "files"),
        ("read_graph", json!({}), "entities"),
        (
            "git_status",
            json!({"repo_path": repo.display().to_string()}),
            "untracked.txt",
        ),
    ];
    for (tool, args, expected) in checks {
        let outcome = co.call(call(tool, args)).await;
        let text = outcome.text();
        assert!(outcome.ran, "`{tool}` ran");
        assert!(outcome.result.is_ok(), "`{tool}` succeeded: {text}");
        assert!(text.contains(expected), "`{tool}` answered {text}");
        let record = store.get(outcome.call.unwrap()).unwrap().unwrap();
        assert_eq!(record.state, CallState::Succeeded, "{record:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_during_a_call_leaves_it_outcome_unknown_and_the_others_keep_serving() {
    let dying = ServerConfig::stdio(python(), [test_server("dying_server.py")]).with_name("dying");
    let time = time_config();
    let time_schema = remote_schema(&time, "get_current_time").await;
    let line =
        json!({"type": "object", "properties": {"line": {"type": "string"}}, "required": ["line"]});
    let text =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    let (_catalog_dir, c) = catalog(&[
        server_entry(&dying, &[]),
        row("dying", "append_line", "write", &line),
        row(
            "dying",
            "explain_failure",
            "read",
            &json!({"type": "object", "properties": {}}),
        ),
        row("dying", "echo", "read", &text),
        server_entry(&time, &[]),
        row("time", "get_current_time", "read", &time_schema),
    ]);
    let pool = ServerPool::start(&c, options());
    assert!(pool.wait_ready(Duration::from_secs(60)).await);
    let store = Arc::new(CallStore::in_memory().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let co = Coordinator::new(&c, ToolContext::new(dir.path()))
        .with_store(Arc::clone(&store))
        .with_servers(Arc::clone(&pool))
        .with_approval(|_| true);
    let allowed = all(&c);
    let request = |tool: &str, args: Value| CallRequest::new(c.tool(tool).unwrap(), args, &allowed);

    // An error the server reports keeps its explanation first, and the dump after it is cut.
    let failed = co.call(request("explain_failure", json!({}))).await;
    let message = failed.text();
    assert!(
        matches!(failed.result, Err(CallError::Tool(_))),
        "{message}"
    );
    assert!(
        message.starts_with("`explain_failure` failed on MCP server `dying`: the journal is locked by another writer; retry after it finishes"),
        "{message}"
    );
    assert!(
        message.len() < 3000,
        "the dump is cut: {} bytes",
        message.len()
    );
    assert!(
        message.contains("more characters not shown"),
        "{}",
        &message[..200]
    );

    let before = std::time::SystemTime::now();
    let outcome = co
        .call(request("append_line", json!({"line": "one"})))
        .await;
    assert!(outcome.ran);
    let e = outcome.result.as_ref().expect_err("the server died");
    assert!(matches!(e, CallError::OutcomeUnknown { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("lost its connection to MCP server `dying`"),
        "{e}"
    );
    let record = store.get(outcome.call.unwrap()).unwrap().unwrap();
    assert_eq!(record.state, CallState::OutcomeUnknown, "{record:?}");

    // The other server answers meanwhile.
    let now = co
        .call(request("get_current_time", json!({"timezone": "UTC"})))
        .await;
    assert!(now.result.is_ok(), "{}", now.text());

    // The dying server comes back; the call is not sent again (it would kill the server again).
    ready_again(&pool, "dying", before).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(state_of(&pool, "dying"), ServerState::Ready);
    let echoed = co
        .call(request("echo", json!({"text": "still here"})))
        .await;
    assert_eq!(
        echoed.result.as_ref().map(|v| v.text.as_str()).ok(),
        Some("\"still here\"")
    );
    let appended = store
        .list(None, 100)
        .unwrap()
        .into_iter()
        .filter(|r| r.tool == "append_line")
        .count();
    assert_eq!(
        appended, 1,
        "one call of `append_line` was made, and no replay"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_changed_between_connections_is_refused_naming_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("starts");
    let pid = dir.path().join("pid");
    let drift = ServerConfig::stdio(python(), [test_server("drift_server.py")]).with_name("drift");
    let (counter_s, pid_s) = (counter.display().to_string(), pid.display().to_string());
    let env = [
        ("DRIFT_COUNTER", counter_s.as_str()),
        ("DRIFT_PID", pid_s.as_str()),
    ];
    let lookup_v1 = json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]});
    let (_catalog_dir, c) = catalog(&[
        server_entry(&drift, &env),
        row("drift", "lookup", "read", &lookup_v1),
        row(
            "drift",
            "ping",
            "read",
            &json!({"type": "object", "properties": {}}),
        ),
        row(
            "drift",
            "grow",
            "read",
            &json!({"type": "object", "properties": {}}),
        ),
        row(
            "drift",
            "vanished",
            "read",
            &json!({"type": "object", "properties": {}}),
        ),
    ]);
    let pool = ServerPool::start(&c, options());
    assert!(pool.wait_ready(Duration::from_secs(60)).await);
    // Both pages of `tools/list` were read.
    let first = pool.discovered("drift").expect("listed");
    let names: Vec<&str> = first.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["lookup", "ping", "grow"]);

    let store = Arc::new(CallStore::in_memory().unwrap());
    let co = Coordinator::new(&c, ToolContext::new(dir.path()))
        .with_store(Arc::clone(&store))
        .with_servers(Arc::clone(&pool));
    let allowed = all(&c);
    let request = |tool: &str, args: Value| CallRequest::new(c.tool(tool).unwrap(), args, &allowed);
    let ok = co.call(request("lookup", json!({"query": "cat"}))).await;
    assert_eq!(
        ok.result.as_ref().map(|v| v.text.as_str()).ok(),
        Some("\"found cat (schema 1)\"")
    );

    // A row the server does not list is refused too.
    let missing = co.call(request("vanished", json!({}))).await;
    let e = missing.result.as_ref().expect_err("not listed");
    assert_eq!(e.kind(), "schema-drift");
    assert!(
        e.to_string()
            .contains("the server no longer lists tool `vanished`"),
        "{e}"
    );

    // The server changes the schema and says so (`tools/list_changed`): the list is read again
    // and the next call is refused.
    let grown = co.call(request("grow", json!({}))).await;
    assert!(grown.result.is_ok(), "{}", grown.text());
    let deadline = Instant::now() + Duration::from_secs(30);
    while pool.discovered("drift").unwrap().captured_at == first.captured_at {
        assert!(
            Instant::now() < deadline,
            "the list was not read again after list_changed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let refused = co.call(request("lookup", json!({"query": "cat"}))).await;
    let e = refused
        .result
        .as_ref()
        .expect_err("refused after list_changed");
    assert!(
        e.to_string()
            .contains("property `verbose` added (optional)"),
        "{e}"
    );
    assert!(!refused.ran);

    // The server restarts with `limit` added and required (and `verbose` gone again).
    let first = pool.discovered("drift").unwrap();
    let pid_text = std::fs::read_to_string(&pid).unwrap();
    let killed = Command::new("kill")
        .args(["-9", pid_text.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    ready_again(&pool, "drift", first.captured_at).await;

    let refused = co.call(request("lookup", json!({"query": "cat"}))).await;
    assert!(!refused.ran, "nothing was sent");
    let e = refused.result.as_ref().expect_err("refused");
    assert_eq!(e.kind(), "schema-drift");
    let text = e.to_string();
    for part in [
        "`lookup`",
        "MCP server `drift`",
        "property `limit` added (required)",
    ] {
        assert!(text.contains(part), "`{part}` in: {text}");
    }
    assert_eq!(e.to_json()["server"], "drift");
    let record = store.get(refused.call.unwrap()).unwrap().unwrap();
    assert_eq!(record.state, CallState::Failed);
    assert!(record.detail.unwrap_or_default().starts_with("nothing ran"));

    // A tool whose schema stayed the same still runs; `check --live` sees the change.
    let pong = co.call(request("ping", json!({}))).await;
    assert_eq!(
        pong.result.as_ref().map(|v| v.text.as_str()).ok(),
        Some("\"pong 2\"")
    );
    let s = c.servers().next().unwrap();
    let report = live_report(&c, s, &pool.discovered("drift").unwrap());
    assert_eq!(report.changed.len(), 1);
    assert_eq!(report.changed[0].0, "lookup");
    assert!(report.added.is_empty());
    assert_eq!(report.removed, ["vanished"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_does_not_hold_up_the_first_turn() {
    let silent = ServerConfig::stdio("sleep", ["600"]).with_name("silent");
    let (_catalog_dir, c) = catalog(&[
        format!("{}connect_timeout_ms = 60000\n", server_entry(&silent, &[])),
        row(
            "silent",
            "wait",
            "read",
            &json!({"type": "object", "properties": {}}),
        ),
    ]);
    let pool = ServerPool::start(&c, options());
    let budget = Duration::from_secs(2);
    let started = Instant::now();
    let settled = pool.wait_ready(budget).await;
    let waited = started.elapsed();
    assert!(!settled, "the silent server is still connecting");
    assert!(
        waited >= budget && waited < budget + Duration::from_secs(5),
        "waited {waited:?}"
    );
    assert_eq!(state_of(&pool, "silent"), ServerState::Connecting);

    let dir = tempfile::tempdir().unwrap();
    let co = Coordinator::new(&c, ToolContext::new(dir.path())).with_servers(Arc::clone(&pool));
    let allowed = all(&c);
    let outcome = co
        .call(CallRequest::new(
            c.tool("wait").unwrap(),
            json!({}),
            &allowed,
        ))
        .await;
    let e = outcome.result.expect_err("not connected");
    assert_eq!(e.kind(), "server-not-connected");
    assert!(
        e.to_string()
            .contains("MCP server `silent`, which is still connecting"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_catalogs_github_rows_give_the_not_connected_error() {
    let c = Catalog::load(root().join("tools.toml")).expect("the reference catalog loads");
    let github = c
        .servers()
        .find(|&s| c.server_name(s) == "github")
        .expect("a declared `github` server");
    let t = c
        .tools()
        .find(|&t| c.source(t) == toolcat::ToolSource::Server(github) && c.name(t) == "get_me")
        .expect("the `get_me` row of the github server");
    let pool = ServerPool::start(
        &c,
        PoolOptions {
            only: Some(Vec::new()),
            ..options()
        },
    );
    assert!(pool.wait_ready(Duration::from_secs(1)).await);
    assert!(pool
        .status()
        .iter()
        .all(|s| s.state == ServerState::NotConnected));
    let dir = tempfile::tempdir().unwrap();
    let co = Coordinator::new(&c, ToolContext::new(dir.path()))
        .with_servers(Arc::clone(&pool))
        .with_approval(|_| true);
    let allowed = all(&c);
    let outcome = co.call(CallRequest::new(t, json!({}), &allowed)).await;
    let e = outcome.result.expect_err("not connected");
    assert_eq!(e.kind(), "server-not-connected", "{e}");
    let text = e.to_string();
    assert!(text.contains("MCP server `github`"), "{text}");
    assert!(text.contains("not started"), "{text}");
    assert!(text.contains(c.exported_name(t)), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_secrets_never_appear_in_statuses_or_errors() {
    const VAR: &str = "TOOLCAT_REMOTE_TEST_SECRET";
    const SECRET: &str = "tc-secret-4f9a1c77";
    std::env::set_var(VAR, SECRET);
    // A server that prints its environment's token to standard error and exits, and one whose
    // reference names a variable that is not set.
    let leaky =
        ServerConfig::stdio("sh", ["-c", "echo \"token=$TOKEN\" >&2; exit 3"]).with_name("leaky");
    let unset = ServerConfig::stdio("sh", ["-c", "exit 0"]).with_name("unset");
    let (_catalog_dir, c) = catalog(&[
        server_entry(&leaky, &[("TOKEN", &format!("${{{VAR}}}"))]),
        row(
            "leaky",
            "leak",
            "read",
            &json!({"type": "object", "properties": {}}),
        ),
        server_entry(&unset, &[("TOKEN", "${TOOLCAT_REMOTE_TEST_NOT_SET}")]),
        row(
            "unset",
            "nothing",
            "read",
            &json!({"type": "object", "properties": {}}),
        ),
    ]);
    // A long backoff keeps the failed server `failed` while the test looks at it.
    let pool = ServerPool::start(
        &c,
        PoolOptions {
            backoff_initial: Duration::from_secs(120),
            ..options()
        },
    );
    assert!(pool.wait_ready(Duration::from_secs(30)).await);

    let leaky_status = pool
        .status()
        .into_iter()
        .find(|s| s.name == "leaky")
        .unwrap();
    let ServerState::Failed { error, retry_in_ms } = &leaky_status.state else {
        panic!("{leaky_status:?}")
    };
    assert!(retry_in_ms.is_some(), "a failed connection is retried");
    assert!(
        error.contains("token=[redacted]"),
        "its standard error is shown, redacted: {error}"
    );
    let json = serde_json::to_string(&pool.status()).unwrap();
    assert!(!json.contains(SECRET), "{json}");

    let unset_status = pool
        .status()
        .into_iter()
        .find(|s| s.name == "unset")
        .unwrap();
    let ServerState::Failed { error, retry_in_ms } = &unset_status.state else {
        panic!("{unset_status:?}")
    };
    assert_eq!(*retry_in_ms, None);
    assert!(
        error.contains("`TOOLCAT_REMOTE_TEST_NOT_SET` is not set"),
        "{error}"
    );
    assert!(error.contains("`env.TOKEN`"), "{error}");

    let dir = tempfile::tempdir().unwrap();
    let co = Coordinator::new(&c, ToolContext::new(dir.path())).with_servers(Arc::clone(&pool));
    let allowed = all(&c);
    let outcome = co
        .call(CallRequest::new(
            c.tool("leak").unwrap(),
            json!({}),
            &allowed,
        ))
        .await;
    let text = outcome.text();
    assert_eq!(
        outcome.result.as_ref().map_err(|e| e.kind()).err(),
        Some("server-not-connected")
    );
    assert!(
        text.contains("token=[redacted]") && !text.contains(SECRET),
        "{text}"
    );
    let config = ServerConfig::from_catalog(&c, c.servers().next().unwrap()).unwrap();
    let shown = format!("{config:?} {}", serde_json::to_string(&config).unwrap());
    assert!(!shown.contains(SECRET), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_without_an_answer_in_time_is_outcome_unknown() {
    let dying = ServerConfig::stdio(python(), [test_server("dying_server.py")]).with_name("dying");
    let empty = json!({"type": "object", "properties": {}});
    let (_catalog_dir, c) = catalog(&[
        server_entry(&dying, &[]),
        row("dying", "stall", "write", &empty),
    ]);
    let pool = ServerPool::start(
        &c,
        PoolOptions {
            call_timeout: Some(Duration::from_secs(1)),
            ..options()
        },
    );
    assert!(pool.wait_ready(Duration::from_secs(60)).await);
    let store = Arc::new(CallStore::in_memory().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let co = Coordinator::new(&c, ToolContext::new(dir.path()))
        .with_store(Arc::clone(&store))
        .with_servers(Arc::clone(&pool))
        .with_approval(|_| true);
    let allowed = all(&c);
    let started = Instant::now();
    let outcome = co
        .call(CallRequest::new(
            c.tool("stall").unwrap(),
            json!({}),
            &allowed,
        ))
        .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    let e = outcome.result.as_ref().expect_err("no answer");
    assert!(matches!(e, CallError::OutcomeUnknown { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("got no answer from MCP server `dying` within 1000 ms"),
        "{e}"
    );
    let record = store.get(outcome.call.unwrap()).unwrap().unwrap();
    assert_eq!(record.state, CallState::OutcomeUnknown);
    // The connection itself stays up.
    assert_eq!(state_of(&pool, "dying"), ServerState::Ready);
}

/// A child process killed when the test ends, also on a failed assertion.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_gets_its_headers_and_never_shows_them() {
    const VAR: &str = "TOOLCAT_REMOTE_TEST_HTTP_KEY";
    const KEY: &str = "tc-http-key-93b1e0";
    std::env::set_var(VAR, KEY);
    let mut child = Child(
        Command::new(python())
            .arg(test_server("http_server.py"))
            .env("API_KEY", KEY)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the HTTP server"),
    );
    let stdout = child.0.stdout.take().expect("its standard output");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
        .expect("the server prints its port");
    let url = format!("http://127.0.0.1:{}/mcp", line.trim());
    let empty = json!({"type": "object", "properties": {}});
    let (_catalog_dir, c) = catalog(&[
        format!(
            "[mcp_server.web]\ndescription = \"A web server\"\nurl = \"{url}\"\nheaders = {{ \"x-api-key\" = \"${{{VAR}}}\" }}\n"
        ),
        row("web", "echo_key", "read", &empty),
        format!(
            "[mcp_server.wrong]\ndescription = \"The same server, the wrong key\"\nnamespace = \"wrong\"\nurl = \"{url}\"\nheaders = {{ \"x-api-key\" = \"wrong-key-5521\" }}\n"
        ),
        row("wrong", "echo_key", "read", &empty),
    ]);
    let pool = ServerPool::start(
        &c,
        PoolOptions {
            backoff_initial: Duration::from_secs(120),
            ..options()
        },
    );
    assert!(pool.wait_ready(Duration::from_secs(60)).await);
    let web = pool.status().into_iter().find(|s| s.name == "web").unwrap();
    assert_eq!(web.state, ServerState::Ready, "{web:?}");
    assert_eq!(web.transport, "http");
    let wrong = pool
        .status()
        .into_iter()
        .find(|s| s.name == "wrong")
        .unwrap();
    let ServerState::Failed { error, .. } = &wrong.state else {
        panic!("{wrong:?}")
    };
    assert!(!error.contains("wrong-key-5521"), "{error}");

    let dir = tempfile::tempdir().unwrap();
    let co = Coordinator::new(&c, ToolContext::new(dir.path())).with_servers(Arc::clone(&pool));
    let allowed = all(&c);
    let outcome = co
        .call(CallRequest::new(
            c.tool("echo_key").unwrap(),
            json!({}),
            &allowed,
        ))
        .await;
    let text = outcome.text();
    assert!(outcome.result.is_ok(), "{text}");
    assert_eq!(text, "\"your key is [redacted]\"");
    let statuses = serde_json::to_string(&pool.status()).unwrap();
    assert!(
        !statuses.contains(KEY) && !statuses.contains("wrong-key-5521"),
        "{statuses}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_from_outside_during_a_call_leaves_it_outcome_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let pid = dir.path().join("pid");
    let pid_s = pid.display().to_string();
    let dying = ServerConfig::stdio(python(), [test_server("dying_server.py")]).with_name("dying");
    let time = time_config();
    let time_schema = remote_schema(&time, "get_current_time").await;
    let empty = json!({"type": "object", "properties": {}});
    let (_catalog_dir, c) = catalog(&[
        server_entry(&dying, &[("DYING_PID", pid_s.as_str())]),
        row("dying", "stall", "write", &empty),
        server_entry(&time, &[]),
        row("time", "get_current_time", "read", &time_schema),
    ]);
    let pool = ServerPool::start(&c, options());
    assert!(pool.wait_ready(Duration::from_secs(60)).await);
    let store = Arc::new(CallStore::in_memory().unwrap());
    let co = Coordinator::new(&c, ToolContext::new(dir.path()))
        .with_store(Arc::clone(&store))
        .with_servers(Arc::clone(&pool))
        .with_approval(|_| true);
    let allowed = all(&c);
    let stall = c.tool("stall").unwrap();
    let call = co.call(CallRequest::new(stall, json!({}), &allowed));
    let kill = async {
        // Once the call is `running` (sent), the server is killed.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let running = store.list(Some(CallState::Running), 10).unwrap();
            if !running.is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "the call never ran");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let pid_text = std::fs::read_to_string(&pid).unwrap();
        let killed = Command::new("kill")
            .args(["-9", pid_text.trim()])
            .status()
            .unwrap();
        assert!(killed.success());
    };
    let (outcome, ()) = tokio::join!(call, kill);
    let e = outcome.result.as_ref().expect_err("the server was killed");
    assert!(matches!(e, CallError::OutcomeUnknown { .. }), "{e}");
    let record = store.get(outcome.call.unwrap()).unwrap().unwrap();
    assert_eq!(record.state, CallState::OutcomeUnknown, "{record:?}");
    assert_eq!(
        store.list(None, 10).unwrap().len(),
        1,
        "no other call was made"
    );
    let now = co
        .call(CallRequest::new(
            c.tool("get_current_time").unwrap(),
            json!({"timezone": "UTC"}),
            &allowed,
        ))
        .await;
    assert!(now.result.is_ok(), "{}", now.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_in_a_server_url_never_appears_in_statuses_errors_or_configurations() {
    const PASSWORD: &str = "tc-url-password-93b1";
    // Nothing listens on port 1: the connection is refused, and the error names the url.
    let url = format!("http://user:{PASSWORD}@127.0.0.1:1/mcp");
    let (_catalog_dir, c) = catalog(&[
        format!(
            "[mcp_server.locked]\ndescription = \"A server behind a password\"\nurl = {}\n",
            toml_str(&url)
        ),
        row(
            "locked",
            "open",
            "read",
            &json!({"type": "object", "properties": {}}),
        ),
    ]);
    let pool = ServerPool::start(
        &c,
        PoolOptions {
            backoff_initial: Duration::from_secs(120),
            ..options()
        },
    );
    assert!(pool.wait_ready(Duration::from_secs(30)).await);
    let status = pool.status().into_iter().next().unwrap();
    let ServerState::Failed { error, .. } = &status.state else {
        panic!("{status:?}")
    };
    assert!(
        error.contains("user:[redacted]@127.0.0.1:1"),
        "the url is named without its password: {error}"
    );
    let json = serde_json::to_string(&pool.status()).unwrap();
    assert!(!json.contains(PASSWORD), "{json}");

    let dir = tempfile::tempdir().unwrap();
    let co = Coordinator::new(&c, ToolContext::new(dir.path())).with_servers(Arc::clone(&pool));
    let allowed = all(&c);
    let outcome = co
        .call(CallRequest::new(
            c.tool("open").unwrap(),
            json!({}),
            &allowed,
        ))
        .await;
    let text = outcome.text();
    assert!(!text.contains(PASSWORD), "{text}");

    let config = ServerConfig::from_catalog(&c, c.servers().next().unwrap()).unwrap();
    let shown = format!("{config:?} {}", serde_json::to_string(&config).unwrap());
    assert!(!shown.contains(PASSWORD), "{shown}");
    let e = discover(&config, Duration::from_secs(30))
        .await
        .unwrap_err();
    assert!(!e.to_string().contains(PASSWORD), "{e}");
}

fn hostile(mode: &str) -> ServerConfig {
    ServerConfig::stdio(
        python(),
        [test_server("hostile_server.py"), mode.to_string()],
    )
    .with_name("hostile")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_list_that_never_ends_or_is_malformed_fails_naming_the_cause() {
    // The connect timeout is long: the listing must stop by itself, not by running out of time.
    let started = Instant::now();
    let e = discover(&hostile("cursor-loop"), Duration::from_secs(60))
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("pagination loops") && text.contains("`again`"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(30), "{text}");

    let e = discover(&hostile("no-schema"), Duration::from_secs(60))
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("not an MCP tool list") && text.contains("`inputSchema`"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_explanation_between_two_dumps_is_shown_and_the_dumps_are_cut() {
    let config = hostile("buried-error");
    let schema = remote_schema(&config, "echo").await;
    let (_catalog_dir, c) = catalog(&[
        server_entry(&config, &[]),
        row("hostile", "echo", "read", &schema),
    ]);
    let pool = ServerPool::start(&c, options());
    assert!(pool.wait_ready(Duration::from_secs(60)).await);
    let dir = tempfile::tempdir().unwrap();
    let co = Coordinator::new(&c, ToolContext::new(dir.path())).with_servers(Arc::clone(&pool));
    let allowed = all(&c);
    let outcome = co
        .call(CallRequest::new(
            c.tool("echo").unwrap(),
            json!({}),
            &allowed,
        ))
        .await;
    let text = outcome.text();
    assert!(matches!(outcome.result, Err(CallError::Tool(_))), "{text}");
    assert!(
        text.contains("the quota of this account is used up; retry tomorrow"),
        "{}",
        &text[..text.len().min(3000)]
    );
    assert!(text.len() < 3000, "the dumps are cut: {} bytes", text.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_secret_the_server_echoes_in_a_result_is_redacted() {
    const VAR: &str = "TOOLCAT_REMOTE_TEST_ECHOED_SECRET";
    const SECRET: &str = "tc-echoed-secret-5d2e";
    std::env::set_var(VAR, SECRET);
    let config = hostile("echo-env");
    let schema = remote_schema(&config, "echo").await;
    let (_catalog_dir, c) = catalog(&[
        server_entry(&config, &[("SECRET_TOKEN", &format!("${{{VAR}}}"))]),
        row("hostile", "echo", "read", &schema),
    ]);
    let pool = ServerPool::start(&c, options());
    assert!(pool.wait_ready(Duration::from_secs(60)).await);
    let dir = tempfile::tempdir().unwrap();
    let co = Coordinator::new(&c, ToolContext::new(dir.path())).with_servers(Arc::clone(&pool));
    let allowed = all(&c);
    let outcome = co
        .call(CallRequest::new(
            c.tool("echo").unwrap(),
            json!({}),
            &allowed,
        ))
        .await;
    let text = outcome.text();
    assert!(outcome.result.is_ok(), "{text}");
    assert!(text.contains("token: [redacted]"), "{text}");
    assert!(!text.contains(SECRET), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_message_limit_ends_the_call_naming_why_instead_of_waiting() {
    let config = hostile("huge-result");
    let schema = remote_schema(&config, "echo").await;
    let (_catalog_dir, c) = catalog(&[
        server_entry(&config, &[]),
        row("hostile", "echo", "read", &schema),
    ]);
    let pool = ServerPool::start(&c, options());
    assert!(pool.wait_ready(Duration::from_secs(60)).await);
    let dir = tempfile::tempdir().unwrap();
    let co = Coordinator::new(&c, ToolContext::new(dir.path())).with_servers(Arc::clone(&pool));
    let allowed = all(&c);
    let before = std::time::SystemTime::now();
    // No call timeout: without the limit the call would wait for an answer that never comes.
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        co.call(CallRequest::new(
            c.tool("echo").unwrap(),
            json!({}),
            &allowed,
        )),
    )
    .await
    .expect("the call ends");
    let e = outcome.result.as_ref().expect_err("the answer is too long");
    assert!(matches!(e, CallError::OutcomeUnknown { .. }), "{e}");
    assert!(e.to_string().contains("a message over 16 MiB"), "{e}");
    // The server is connected again for the next call.
    ready_again(&pool, "hostile", before).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_cut_by_the_start_of_the_standard_error_tail_is_still_redacted() {
    const VAR: &str = "TOOLCAT_REMOTE_TEST_CUT_SECRET";
    const SECRET: &str = "tc-secret-cut-7a3f9e21";
    std::env::set_var(VAR, SECRET);
    // The secret, then 2040 bytes: the last 2 KiB of standard error start inside the secret.
    let leaky = ServerConfig::stdio(
        "sh",
        [
            "-c",
            "printf 'token=%s' \"$TOKEN\" >&2; head -c 2040 /dev/zero | tr '\\0' x >&2; exit 3",
        ],
    )
    .with_name("leaky")
    .with_env("TOKEN", format!("${{{VAR}}}"));
    let e = discover(&leaky, Duration::from_secs(30)).await.unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("xxxxxxxx"),
        "the standard error is shown: {text}"
    );
    assert!(
        !text.contains(&SECRET[SECRET.len() - 8..]),
        "no part of the secret is shown: {text}"
    );
}

/// Whether `text` shows any 8 consecutive characters of `secret`.
fn shows_part_of(text: &str, secret: &str) -> bool {
    let chars: Vec<char> = secret.chars().collect();
    chars
        .windows(8)
        .any(|w| text.contains(&w.iter().collect::<String>()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_where_an_error_text_is_cut_is_redacted_whole_in_the_answer_and_the_record() {
    const VAR: &str = "TOOLCAT_REMOTE_TEST_LONG_ERROR_SECRET";
    const SECRET: &str = "tc-long-error-secret-7f"; // 23 characters
    std::env::set_var(VAR, SECRET);
    // 1978 `x`: the secret ends past character 2000, where the text is cut. 1995 `x`: its
    // `[redacted]` would cross the cut.
    for before in [1978, 1995] {
        let config = hostile(&format!("long-error:{before}"));
        let schema = remote_schema(&config, "echo").await;
        let (_catalog_dir, c) = catalog(&[
            server_entry(&config, &[("SECRET_TOKEN", &format!("${{{VAR}}}"))]),
            row("hostile", "echo", "read", &schema),
        ]);
        let pool = ServerPool::start(&c, options());
        assert!(pool.wait_ready(Duration::from_secs(60)).await);
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(CallStore::in_memory().unwrap());
        let co = Coordinator::new(&c, ToolContext::new(dir.path()))
            .with_store(Arc::clone(&store))
            .with_servers(Arc::clone(&pool));
        let allowed = all(&c);
        let outcome = co
            .call(CallRequest::new(
                c.tool("echo").unwrap(),
                json!({}),
                &allowed,
            ))
            .await;
        assert!(
            matches!(outcome.result, Err(CallError::Tool(_))),
            "{before}"
        );
        let text = outcome.text();
        let record = store.get(outcome.call.unwrap()).unwrap().unwrap();
        let detail = record.detail.unwrap_or_default();
        for (what, shown) in [("answer", &text), ("record", &detail)] {
            assert!(
                !shows_part_of(shown, SECRET),
                "{before}: the {what} shows part of the secret: …{}",
                &shown[shown.len().saturating_sub(120)..]
            );
            assert!(
                shown.matches("[redac").count() == shown.matches("[redacted]").count(),
                "{before}: the {what} cuts a marker: …{}",
                &shown[shown.len().saturating_sub(120)..]
            );
            assert!(shown.contains("more characters not shown"), "{before}");
        }
        assert_eq!(text.contains("[redacted]"), before == 1978, "{before}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_split_over_blocks_upper_cased_or_json_escaped_is_redacted() {
    const VAR: &str = "TOOLCAT_REMOTE_TEST_DISGUISED_SECRET";
    const SECRET: &str = "tc-Disguised\"Secret-4e1a";
    std::env::set_var(VAR, SECRET);
    for mode in ["disguised", "disguised-error"] {
        let config = hostile(mode);
        let schema = remote_schema(&config, "echo").await;
        let (_catalog_dir, c) = catalog(&[
            server_entry(&config, &[("SECRET_TOKEN", &format!("${{{VAR}}}"))]),
            row("hostile", "echo", "read", &schema),
        ]);
        let pool = ServerPool::start(&c, options());
        assert!(pool.wait_ready(Duration::from_secs(60)).await);
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(CallStore::in_memory().unwrap());
        let co = Coordinator::new(&c, ToolContext::new(dir.path()))
            .with_store(Arc::clone(&store))
            .with_servers(Arc::clone(&pool));
        let allowed = all(&c);
        let outcome = co
            .call(CallRequest::new(
                c.tool("echo").unwrap(),
                json!({}),
                &allowed,
            ))
            .await;
        assert_eq!(outcome.result.is_err(), mode == "disguised-error", "{mode}");
        let text = outcome.text();
        let record = store.get(outcome.call.unwrap()).unwrap().unwrap();
        let detail = record.detail.unwrap_or_default();
        // A failed call's record holds its error text; a result is not recorded.
        let shown = if mode == "disguised" {
            vec![text]
        } else {
            vec![text, detail]
        };
        for shown in &shown {
            assert!(
                shown.contains("part one") && shown.contains("part two"),
                "{mode}: {shown}"
            );
            let lower = shown.to_lowercase();
            for fragment in ["disgui", "secret-4e1a", "u0074"] {
                assert!(!lower.contains(fragment), "{mode}: `{fragment}` in {shown}");
            }
            // The split secret's two ends, the upper-cased one, the escaped one, the embedded
            // one.
            assert_eq!(shown.matches("[redacted]").count(), 5, "{mode}: {shown}");
        }
    }
}

/// The lines `identity_server.py` logged: which server tool received each call.
fn received(log: &Path) -> Vec<Value> {
    match std::fs::read_to_string(log) {
        Ok(text) => text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_rows_of_a_dotted_and_an_underscored_tool_each_run_their_own_tool() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let log_s = log.display().to_string();
    let config = ServerConfig::stdio(python(), [test_server("identity_server.py")])
        .with_name("identity")
        .with_env("IDENTITY_LOG", log_s.clone());
    let discovery = discover(&config, Duration::from_secs(60))
        .await
        .expect("discover the identity server");
    let tools: Vec<Value> = discovery
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema}))
        .collect();
    let Transport::Stdio { command, args, .. } = &config.transport else {
        unreachable!("a stdio server")
    };
    let live = toolcat_import::LiveServer {
        name: "identity".to_string(),
        description: None,
        server_info: None,
        transport: toolcat_import::Transport::Stdio {
            command: command.clone(),
            args: args.clone(),
        },
        env: [("IDENTITY_LOG".to_string(), log_s.clone())].into(),
        headers: Default::default(),
        tools,
    };
    let imported = toolcat_import::import_live(&[live], "toolcat import --from-server identity")
        .expect("the import succeeds");
    // The underscored tool keeps its name; the dotted one is renamed and keeps the server's
    // name as `remote_name`.
    let rows: Vec<(&str, Option<&str>)> = imported
        .catalog
        .tool
        .iter()
        .filter(|t| t.source == "identity")
        .map(|t| (t.name.as_str(), t.remote_name.as_deref()))
        .collect();
    let dotted = rows
        .iter()
        .find(|(_, remote)| *remote == Some("admin.tools.delete"))
        .unwrap_or_else(|| panic!("a row of `admin.tools.delete`: {rows:?}"))
        .0
        .to_string();
    assert!(
        rows.contains(&("admin_tools_delete", None)),
        "the server's `admin_tools_delete` keeps its name: {rows:?}"
    );
    assert_ne!(dotted, "admin_tools_delete");
    let path = dir.path().join("tools.toml");
    std::fs::write(&path, &imported.text).unwrap();
    let c = Catalog::load(&path)
        .unwrap_or_else(|e| panic!("the imported catalog loads: {e}\n{}", imported.text));

    let pool = ServerPool::start(
        &c,
        PoolOptions {
            configs: ServerConfig::all_from_source(path.to_str().unwrap(), &imported.text)
                .expect("configurations"),
            ..options()
        },
    );
    assert!(
        pool.wait_ready(Duration::from_secs(60)).await,
        "{:?}",
        pool.status()
    );
    let coordinator = Coordinator::new(&c, ToolContext::new(dir.path()))
        .with_servers(Arc::clone(&pool))
        .with_approval(|_| true);
    let allowed = all(&c);
    for (row, server_tool, id) in [
        (format!("identity__{dotted}"), "admin.tools.delete", "every"),
        (
            "identity__admin_tools_delete".to_string(),
            "admin_tools_delete",
            "one",
        ),
    ] {
        let t = c.tool(&row).expect("imported row");
        assert_eq!(c.remote_name(t), server_tool);
        let before = received(&log).len();
        let out = coordinator
            .call(CallRequest::new(t, json!({"id": id}), &allowed))
            .await;
        let value = out.result.unwrap_or_else(|e| panic!("`{row}`: {e}")).value;
        assert_eq!(
            value,
            json!(format!("{server_tool} received {{\"id\": \"{id}\"}}")),
            "`{row}` runs exactly `{server_tool}`"
        );
        let log_lines = received(&log);
        assert_eq!(log_lines.len(), before + 1, "{log_lines:?}");
        assert_eq!(
            log_lines[before],
            json!({"tool": server_tool, "arguments": {"id": id}})
        );
    }

    // `check --live` maps every row to a served tool and every served tool to a row.
    let s = c.servers().next().expect("the server");
    let report = live_report(&c, s, &discovery);
    assert!(report.is_clean(), "{report:?}");

    // An argument name the schema does not declare is refused; the server never hears of it.
    let before = received(&log).len();
    let t = c.tool("identity__admin_tools_delete").unwrap();
    let out = coordinator
        .call(CallRequest::new(
            t,
            json!({"id": "one", "tool_id": "one"}),
            &allowed,
        ))
        .await;
    assert!(!out.ran);
    let Err(e @ CallError::InvalidArguments { input_schema, .. }) = &out.result else {
        panic!("expected invalid arguments, got {out:?}");
    };
    let text = e.to_string();
    assert!(
        text.contains("unknown argument `tool_id`") && text.contains("`id`, `reason`"),
        "{text}"
    );
    assert!(input_schema["properties"].get("reason").is_some());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        received(&log).len(),
        before,
        "the server never received the call"
    );
}
