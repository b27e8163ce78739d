//! Remote MCP servers through the `toolcat` binary, with real servers from the registries
//! (`mcp-server-time` and `mcp-server-git` from PyPI, `@modelcontextprotocol/server-filesystem`
//! and `@modelcontextprotocol/server-memory` from npm) and the two Python test servers beside
//! them in `tests/mcp_servers/`, all over stdio.
//!
//! The servers are installed by `tests/mcp_servers/install` (idempotent: it returns at once when
//! they are there; `.ci/run` runs it first) into `$TOOLCAT_MCP_SERVERS`, else
//! `target/mcp-servers`. Every catalog is written to a temporary directory, its `[mcp_server]`
//! entries pointing at the installed programs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Where the real servers are installed (installing them on first use).
fn servers_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_servers/install");
        let o = Command::new("bash")
            .arg(&script)
            .stderr(Stdio::inherit())
            .output()
            .expect("tests/mcp_servers/install runs");
        assert!(
            o.status.success(),
            "tests/mcp_servers/install failed (it installs the test servers from PyPI and npm)"
        );
        let text = String::from_utf8_lossy(&o.stdout);
        let dir = text
            .lines()
            .last()
            .expect("the installer prints its directory");
        PathBuf::from(dir.trim())
    })
}

fn program(relative: &str) -> String {
    let p = servers_dir().join(relative);
    assert!(p.exists(), "{} is not installed", p.display());
    p.to_string_lossy().into_owned()
}

fn time_server() -> String {
    program("venv/bin/mcp-server-time")
}
fn git_server() -> String {
    program("venv/bin/mcp-server-git")
}
fn filesystem_server() -> String {
    program("npm/node_modules/.bin/mcp-server-filesystem")
}
fn memory_server() -> String {
    program("npm/node_modules/.bin/mcp-server-memory")
}
fn python() -> String {
    program("venv/bin/python")
}
fn test_server(file: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp_servers")
        .join(file)
        .to_string_lossy()
        .into_owned()
}

/// Runs `toolcat` in `cwd` with `stdin`, killed after 240 s so a hang fails the test instead of
/// the run.
fn toolcat_in(cwd: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(args)
        .current_dir(cwd)
        .env_remove("TOOLCAT_STORE")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the toolcat binary runs");
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().expect("stdin is piped");
        pipe.write_all(text.as_bytes()).expect("stdin written");
    }
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!(
                "toolcat {args:?} did not end within 240 s\nstdout: {}\nstderr: {}",
                text(&o.stdout),
                text(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(o: &Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what} failed ({})\nstdout: {}\nstderr: {}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

/// A TOML string literal.
fn quoted(s: &str) -> String {
    toml_edit::Value::from(s).to_string().trim().to_string()
}

/// `toolcat import --from-server` of each value, written to `dir/name`; returns the path.
fn import(dir: &Path, name: &str, values: &[String]) -> PathBuf {
    let mut args = vec!["import".to_string()];
    for v in values {
        args.push("--from-server".to_string());
        args.push(v.clone());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = toolcat_in(dir, &args, None);
    let catalog = ok(&o, "toolcat import --from-server");
    let path = dir.join(name);
    std::fs::write(&path, catalog).unwrap();
    path
}

/// Sets `key = value` (a TOML value's text) in `[mcp_server.NAME]` of the catalog at `path`.
fn set_server_field(path: &Path, server: &str, key: &str, value: &str) {
    let mut doc: toml_edit::DocumentMut = std::fs::read_to_string(path).unwrap().parse().unwrap();
    let item: toml_edit::Value = value.parse().unwrap();
    doc["mcp_server"][server][key] = toml_edit::value(item);
    std::fs::write(path, doc.to_string()).unwrap();
}

/// Sets `key = value` in the `[[tool]]` row called `tool`.
fn set_row_field(path: &Path, tool: &str, key: &str, value: &str) {
    let mut doc: toml_edit::DocumentMut = std::fs::read_to_string(path).unwrap().parse().unwrap();
    let rows = doc["tool"].as_array_of_tables_mut().expect("[[tool]] rows");
    let row = rows
        .iter_mut()
        .find(|r| r.get("name").and_then(|n| n.as_str()) == Some(tool))
        .unwrap_or_else(|| panic!("no row `{tool}`"));
    row[key] = toml_edit::value(value.parse::<toml_edit::Value>().unwrap());
    std::fs::write(path, doc.to_string()).unwrap();
}

/// The JSON lines of `toolcat session --json`.
fn session_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The answer of the call of `tool` in the session's lines.
fn session_call<'a>(lines: &'a [Value], tool: &str) -> &'a Value {
    lines
        .iter()
        .filter_map(|l| l["calls"].as_array())
        .flatten()
        .find(|c| c["name"] == tool)
        .unwrap_or_else(|| panic!("no call of `{tool}` in {lines:#?}"))
}

fn search_names(dir: &Path, catalog: &Path, query: &str) -> Vec<String> {
    let o = toolcat_in(
        dir,
        &[
            "search",
            "--catalog",
            catalog.to_str().unwrap(),
            "--limit",
            "3",
            "--json",
            query,
        ],
        None,
    );
    let hits: Value = serde_json::from_str(&ok(&o, "toolcat search")).unwrap();
    hits.as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn real_servers_are_imported_checked_found_and_called_in_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("notes.txt"), "hello\n").unwrap();
    let files = files.canonicalize().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .output()
            .expect("git runs");
        assert!(o.status.success(), "git {args:?}: {}", text(&o.stderr));
    };
    git(&["init", "-q"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "first commit",
    ]);

    // Four servers, one catalog: the program names give the server names.
    let catalog = import(
        dir.path(),
        "tools.toml",
        &[
            time_server(),
            format!("{} {}", filesystem_server(), files.display()),
            memory_server(),
            git_server(),
        ],
    );
    let text_of = std::fs::read_to_string(&catalog).unwrap();
    for server in ["time", "filesystem", "memory", "git"] {
        assert!(
            text_of.contains(&format!("[mcp_server.{server}]\n")),
            "no `[mcp_server.{server}]`:\n{text_of}"
        );
        assert!(
            text_of.contains(&format!("namespace = \"{server}\"")),
            "{server}"
        );
    }
    // Annotations mapped as in the file importers: a read-only hint is read, silent, read-only.
    let c: toml_edit::DocumentMut = text_of.parse().unwrap();
    let row = |name: &str| {
        c["tool"]
            .as_array_of_tables()
            .unwrap()
            .iter()
            .find(|r| r["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("no row `{name}`"))
            .clone()
    };
    let get_time = row("get_current_time");
    assert_eq!(get_time["effect"].as_str(), Some("read"));
    assert_eq!(get_time["tier"].as_str(), Some("silent"));
    assert_eq!(get_time["exposure"].as_str(), Some("read-only"));
    assert_eq!(get_time["source"].as_str(), Some("time"));
    // `destructiveHint: true` → destructive, gated, `full`.
    let write_file = row("write_file");
    assert_eq!(write_file["effect"].as_str(), Some("destructive"));
    assert_eq!(write_file["tier"].as_str(), Some("gated"));
    assert_eq!(write_file["exposure"].as_str(), Some("full"));
    // `destructiveHint: false` on a write → write, gated, `staging`.
    let create = row("create_entities");
    assert_eq!(create["effect"].as_str(), Some("write"));
    assert_eq!(create["exposure"].as_str(), Some("staging"));
    // The memory server keeps its graph where the catalog says.
    let memory_file = dir.path().join("memory.jsonl");
    set_server_field(
        &catalog,
        "memory",
        "env",
        &format!(
            "{{ MEMORY_FILE_PATH = {} }}",
            quoted(memory_file.to_str().unwrap())
        ),
    );

    let cat = catalog.to_str().unwrap();
    let o = toolcat_in(dir.path(), &["check", "--catalog", cat], None);
    assert!(
        ok(&o, "toolcat check").contains("4 MCP servers"),
        "{}",
        text(&o.stdout)
    );
    let o = toolcat_in(dir.path(), &["check", "--catalog", cat, "--live"], None);
    let report = ok(&o, "toolcat check --live on a fresh import");
    for server in ["time", "filesystem", "memory", "git"] {
        assert!(
            report.contains(&format!("server `{server}`: ok")),
            "{report}"
        );
    }

    // Search finds a tool of each server for a natural query.
    for (query, tool) in [
        (
            "what time is it in another timezone",
            "time__get_current_time",
        ),
        (
            "list the files in a directory",
            "filesystem__list_directory",
        ),
        ("read the whole knowledge graph", "memory__read_graph"),
        (
            "show the working tree status of the repository",
            "git__git_status",
        ),
    ] {
        let names = search_names(dir.path(), &catalog, query);
        assert!(names.iter().any(|n| n == tool), "{query:?} → {names:?}");
    }

    // A gated write through `toolcat call --approve`, recorded in the store.
    let store = dir.path().join("calls.sqlite");
    let o = toolcat_in(
        dir.path(),
        &[
            "call",
            "--catalog",
            cat,
            "memory__create_entities",
            "--args",
            r#"{"entities": [{"name": "toolcat", "entityType": "project", "observations": ["declares every tool once"]}]}"#,
            "--approve",
            "--store",
            store.to_str().unwrap(),
            "--wait",
            "120000",
        ],
        None,
    );
    let created = ok(&o, "toolcat call memory__create_entities --approve");
    assert!(created.contains("toolcat"), "{created}");

    // One session calls a tool of each server after finding it.
    let input = [
        r#"{"user": "what time is it in Tokyo, which files are in my folder, what do you remember, and what is the state of my repository?"}"#.to_string(),
        r#"{"call": "tool_search", "args": {"query": "current time in a timezone"}}"#.to_string(),
        r#"{"call": "time__get_current_time", "args": {"timezone": "Asia/Tokyo"}}"#.to_string(),
        r#"{"call": "tool_search", "args": {"query": "list the files in a directory"}}"#.to_string(),
        format!(r#"{{"call": "filesystem__list_directory", "args": {{"path": {}}}}}"#, serde_json::json!(files)),
        r#"{"call": "tool_search", "args": {"query": "read the knowledge graph"}}"#.to_string(),
        r#"{"call": "memory__read_graph", "args": {}}"#.to_string(),
        r#"{"user": "and the repository?"}"#.to_string(),
        r#"{"call": "tool_search", "args": {"query": "git working tree status"}}"#.to_string(),
        format!(r#"{{"call": "git__git_status", "args": {{"repo_path": {}}}}}"#, serde_json::json!(repo)),
    ]
    .join("\n");
    let o = toolcat_in(
        dir.path(),
        &[
            "session",
            "--catalog",
            cat,
            "--profile",
            "full",
            "--json",
            "--wait",
            "120000",
        ],
        Some(&input),
    );
    let lines = session_lines(&ok(&o, "toolcat session"));
    for (tool, expected) in [
        ("time__get_current_time", "Asia/Tokyo"),
        ("filesystem__list_directory", "notes.txt"),
        ("memory__read_graph", "declares every tool once"),
        ("git__git_status", "branch"),
    ] {
        let call = session_call(&lines, tool);
        assert_eq!(call["outcome"], "ran", "{tool}: {call}");
        assert_eq!(call["isError"], false, "{tool}: {call}");
        let result = call["result"].as_str().unwrap();
        assert!(result.contains(expected), "{tool}: {result}");
    }
}

#[test]
fn a_schema_change_is_refused_before_the_call_and_reported_by_check_live() {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("starts");
    // A catalog that declares the drift server, for `--from-server NAME` to connect to.
    let declared = dir.path().join("servers.toml");
    std::fs::write(
        &declared,
        format!(
            "[mcp_server.drift]\ndescription = \"Looks words up\"\ncommand = {}\nargs = [{}]\nenv = {{ DRIFT_COUNTER = {} }}\n\n[toolset.drift]\ndescription = \"Lookups\"\n\n[[tool]]\nname = \"ping\"\ndescription = \"Answers pong\"\nvisibility = \"inline\"\ntier = \"silent\"\neffect = \"read\"\nexposure = \"read-only\"\ntoolsets = [\"drift\"]\nowner = \"tests\"\nsource = \"drift\"\n",
            quoted(&python()),
            quoted(&test_server("drift_server.py")),
            quoted(counter.to_str().unwrap()),
        ),
    )
    .unwrap();
    let o = toolcat_in(
        dir.path(),
        &[
            "import",
            "--catalog",
            declared.to_str().unwrap(),
            "--from-server",
            "drift",
        ],
        None,
    );
    let imported = ok(&o, "toolcat import --from-server drift");
    assert!(imported.contains("name = \"lookup\""), "{imported}");
    assert!(
        imported.contains("description = \"Looks words up\""),
        "{imported}"
    );
    let catalog = dir.path().join("tools.toml");
    std::fs::write(&catalog, &imported).unwrap();
    // The imported entry carries the server's `env` as declared.
    assert!(imported.contains("DRIFT_COUNTER"), "{imported}");
    let cat = catalog.to_str().unwrap();
    ok(
        &toolcat_in(dir.path(), &["check", "--catalog", cat], None),
        "toolcat check",
    );

    // From its second start on, the server's `lookup` also requires `limit`.
    let o = toolcat_in(dir.path(), &["check", "--catalog", cat, "--live"], None);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let report = text(&o.stdout);
    assert!(
        report.contains("server `drift`: 0 added, 0 removed, 1 changed"),
        "{report}"
    );
    assert!(
        report.contains("`drift__lookup`: property `limit` added (required)"),
        "{report}"
    );
    let o = toolcat_in(
        dir.path(),
        &["check", "--catalog", cat, "--live", "--json"],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    let rows: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows[0]["server"], "drift");
    assert_eq!(rows[0]["clean"], false);
    assert_eq!(rows[0]["changed"][0]["tool"], "drift__lookup");
    assert_eq!(rows[0]["changed"][0]["changes"][0]["property"], "limit");

    // The call is refused before anything is sent, naming the tool, the server and the change.
    let store = dir.path().join("calls.sqlite");
    let o = toolcat_in(
        dir.path(),
        &[
            "call",
            "--catalog",
            cat,
            "drift__lookup",
            "--args",
            r#"{"query": "x"}"#,
            "--approve",
            "--store",
            store.to_str().unwrap(),
            "--wait",
            "120000",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("drift__lookup") || err.contains("`lookup`"),
        "{err}"
    );
    assert!(err.contains("`drift`"), "{err}");
    assert!(err.contains("property `limit` added (required)"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The unchanged tool of the same server still runs.
    let o = toolcat_in(
        dir.path(),
        &[
            "call",
            "--catalog",
            cat,
            "drift__ping",
            "--approve",
            "--store",
            store.to_str().unwrap(),
            "--wait",
            "120000",
        ],
        None,
    );
    assert!(ok(&o, "toolcat call drift__ping").contains("pong"));
}

#[test]
fn a_clean_catalog_passes_check_live() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = import(dir.path(), "tools.toml", &[time_server()]);
    let cat = catalog.to_str().unwrap();
    let o = toolcat_in(
        dir.path(),
        &["check", "--catalog", cat, "--live", "--server", "time"],
        None,
    );
    let report = ok(&o, "toolcat check --live");
    assert!(
        report.contains("server `time`: ok: 2 declared tools"),
        "{report}"
    );
}

#[test]
fn servers_shows_each_state_and_a_silent_server_delays_nothing_past_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = import(dir.path(), "tools.toml", &[time_server()]);
    // A server that never answers, one that cannot start, and one left unconnected.
    let mut text_of = std::fs::read_to_string(&catalog).unwrap();
    text_of.push_str(&format!(
        "\n[mcp_server.silent]\ndescription = \"Never answers\"\ncommand = {}\nargs = [\"-c\", \"import time; time.sleep(120)\"]\nconnect_timeout_ms = 100000\n\n[mcp_server.missing]\ndescription = \"Cannot start\"\ncommand = {}\n\n[mcp_server.spare]\ndescription = \"Not connected by this command\"\ncommand = {}\n",
        quoted(&python()),
        quoted(dir.path().join("no-such-program").to_str().unwrap()),
        quoted(&time_server()),
    ));
    std::fs::write(&catalog, text_of).unwrap();
    let cat = catalog.to_str().unwrap();

    // `--wait` is long enough for `time` to start on a loaded machine; the silent server never
    // settles, so the command takes the whole wait and no more.
    let started = Instant::now();
    let o = toolcat_in(
        dir.path(),
        &[
            "servers",
            "--catalog",
            cat,
            "--json",
            "--wait",
            "15000",
            "--server",
            "time",
            "--server",
            "silent",
            "--server",
            "missing",
        ],
        None,
    );
    let elapsed = started.elapsed();
    let rows: Value = serde_json::from_str(&ok(&o, "toolcat servers --json")).unwrap();
    let state = |name: &str| -> Value {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no server `{name}` in {rows:#}"))
            .clone()
    };
    assert_eq!(state("time")["state"], "ready", "{rows:#}");
    assert_eq!(state("time")["tools"], 2);
    assert!(state("time")["captured_at_ms"].as_u64().unwrap() > 0);
    assert_eq!(state("silent")["state"], "connecting", "{rows:#}");
    assert_eq!(state("missing")["state"], "failed", "{rows:#}");
    assert!(
        state("missing")["error"]
            .as_str()
            .unwrap()
            .contains("no-such-program"),
        "{rows:#}"
    );
    assert_eq!(state("spare")["state"], "not-connected", "{rows:#}");
    assert!(elapsed < Duration::from_secs(45), "took {elapsed:?}");

    // A session's first turn waits at most `--wait` for the silent server.
    let started = Instant::now();
    let o = toolcat_in(
        dir.path(),
        &[
            "session",
            "--catalog",
            cat,
            "--profile",
            "full",
            "--servers",
            "silent",
            "--wait",
            "1000",
        ],
        Some(r#"{"user": "hello"}"#),
    );
    let elapsed = started.elapsed();
    let out = ok(&o, "toolcat session with a silent server");
    assert!(out.contains("turn 1: user: hello"), "{out}");
    let err = text(&o.stderr);
    assert!(
        err.contains("MCP server `silent` is still connecting after 1000 ms"),
        "{err}"
    );
    assert!(
        elapsed < Duration::from_secs(20),
        "the first turn took {elapsed:?}"
    );
}

#[test]
fn a_github_tool_of_the_reference_catalog_answers_not_connected() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("calls.sqlite");
    let o = toolcat_in(
        dir.path(),
        &[
            "call",
            "github__get_me",
            "--servers",
            "none",
            "--store",
            store.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("`github__get_me`"), "{err}");
    assert!(err.contains("MCP server `github`"), "{err}");
    assert!(err.contains("not connected"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The reference catalog declares how to reach it: `toolcat servers` names its state.
    let o = toolcat_in(
        dir.path(),
        &["servers", "--json", "--wait", "0", "--server", "time"],
        None,
    );
    let rows: Value = serde_json::from_str(&ok(&o, "toolcat servers")).unwrap();
    let github = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "github")
        .expect("the reference catalog declares `github`");
    assert_eq!(github["state"], "not-connected");
}

#[test]
fn a_server_killed_during_a_call_leaves_it_outcome_unknown_and_the_others_serve() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = import(
        dir.path(),
        "tools.toml",
        &[
            format!("dying={} {}", python(), test_server("dying_server.py")),
            time_server(),
        ],
    );
    let cat = catalog.to_str().unwrap();
    let store = dir.path().join("calls.sqlite");
    // The server exits while it handles `append_line`: the call's outcome is unknown.
    let o = toolcat_in(
        dir.path(),
        &[
            "call",
            "--catalog",
            cat,
            "dying__append_line",
            "--args",
            r#"{"line": "one"}"#,
            "--approve",
            "--store",
            store.to_str().unwrap(),
            "--wait",
            "120000",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("may or may not have happened"), "{err}");
    assert!(err.contains("never replayed"), "{err}");
    let o = toolcat_in(
        dir.path(),
        &["calls", "--json", "--store", store.to_str().unwrap()],
        None,
    );
    let rows: Value = serde_json::from_str(&ok(&o, "toolcat calls --json")).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 1, "one call, not replayed: {rows:#?}");
    assert_eq!(rows[0]["tool"], "dying__append_line", "{rows:#?}");
    assert_eq!(rows[0]["state"], "outcome_unknown", "{rows:#?}");

    // In a session the other server keeps serving after one dies mid-call. The row is declared
    // a silent read here only so that the session, which has no approval step, runs it.
    set_row_field(&catalog, "append_line", "tier", "\"silent\"");
    set_row_field(&catalog, "append_line", "effect", "\"read\"");
    set_row_field(&catalog, "append_line", "exposure", "\"read-only\"");
    let input = [
        r#"{"user": "append a line to the journal, then tell me the time in UTC"}"#,
        r#"{"call": "tool_search", "args": {"query": "append a line to the journal"}}"#,
        r#"{"call": "dying__append_line", "args": {"line": "two"}}"#,
        r#"{"call": "tool_search", "args": {"query": "current time in a timezone"}}"#,
        r#"{"call": "time__get_current_time", "args": {"timezone": "UTC"}}"#,
    ]
    .join("\n");
    let o = toolcat_in(
        dir.path(),
        &[
            "session",
            "--catalog",
            cat,
            "--profile",
            "full",
            "--json",
            "--wait",
            "120000",
        ],
        Some(&input),
    );
    let lines = session_lines(&ok(&o, "toolcat session"));
    let died = session_call(&lines, "dying__append_line");
    assert_eq!(died["outcome"], "outcome-unknown", "{died}");
    let time = session_call(&lines, "time__get_current_time");
    assert_eq!(time["outcome"], "ran", "{time}");
    assert!(time["result"].as_str().unwrap().contains("UTC"), "{time}");
}

/// A server tool's `outputSchema` is imported into its row's `output_schema`; `toolcat serve`
/// lists it as the tool's `outputSchema` and passes the server's `structuredContent` through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_output_schema_is_imported_listed_and_its_structured_content_passed_through() {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;
    use rmcp::ServiceExt as _;

    let dir = tempfile::tempdir().unwrap();
    let server = format!("dying={} {}", python(), test_server("dying_server.py"));
    let catalog = import(dir.path(), "tools.toml", &[server]);
    let declared = serde_json::json!({
        "type": "object",
        "properties": {
            "words": {"type": "integer", "description": "Words in the text"},
            "lines": {"type": "integer"}
        },
        "required": ["words", "lines"]
    });
    let file: toolcat_catalog::model::CatalogFile =
        toml::from_str(&std::fs::read_to_string(&catalog).unwrap()).unwrap();
    let row = |name: &str| {
        file.tool
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("a row `{name}`"))
    };
    assert_eq!(row("count_words").output_schema.as_ref(), Some(&declared));
    assert_eq!(row("echo").output_schema, None);
    // Served as a silent read, so a client without elicitation may call it.
    for (key, value) in [
        ("tier", "\"silent\""),
        ("effect", "\"read\""),
        ("exposure", "\"read-only\""),
    ] {
        set_row_field(&catalog, "count_words", key, value);
        set_row_field(&catalog, "echo", key, value);
    }

    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolcat"));
    command.current_dir(dir.path()).args([
        "serve",
        "--catalog",
        catalog.to_str().unwrap(),
        "--profile",
        "full",
        "--exposure",
        "read-only",
        "--store",
        dir.path().join("calls.sqlite").to_str().unwrap(),
        "--wait",
        "120000",
    ]);
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.expect("initialize over stdio");
    let tools = client.list_all_tools().await.unwrap();
    let listed = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("`{name}` is listed"))
            .output_schema
            .as_ref()
            .map(|s| Value::Object((**s).clone()))
    };
    assert_eq!(listed("dying__count_words"), Some(declared));
    assert_eq!(listed("dying__echo"), None);

    let arguments = serde_json::json!({"text": "one two\nthree"});
    let call = |name: &str| {
        CallToolRequestParams::new(name.to_string())
            .with_arguments(arguments.as_object().unwrap().clone())
    };
    let r = client.call_tool(call("dying__count_words")).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert_eq!(
        r.structured_content,
        Some(serde_json::json!({"words": 3, "lines": 2})),
        "{r:?}"
    );
    // A tool without an output schema answers its text alone.
    let r = client.call_tool(call("dying__echo")).await.unwrap();
    assert_eq!(r.structured_content, None, "{r:?}");
    client.cancel().await.ok();
}

#[test]
fn imported_rows_of_a_dotted_and_an_underscored_tool_each_call_their_own_tool() {
    let dir = tempfile::tempdir().unwrap();
    let server = format!(
        "identity={} {}",
        python(),
        test_server("identity_server.py")
    );
    let catalog = import(dir.path(), "tools.toml", &[server]);
    let cat = catalog.to_str().unwrap();
    let doc: toml_edit::DocumentMut = std::fs::read_to_string(&catalog).unwrap().parse().unwrap();
    let rows: Vec<(String, Option<String>)> = doc["tool"]
        .as_array_of_tables()
        .unwrap()
        .iter()
        .filter(|r| r.get("source").and_then(|s| s.as_str()) == Some("identity"))
        .map(|r| {
            let field = |k: &str| r.get(k).and_then(|v| v.as_str()).map(str::to_string);
            (field("name").unwrap(), field("remote_name"))
        })
        .collect();
    let dotted = rows
        .iter()
        .find(|(_, remote)| remote.as_deref() == Some("admin.tools.delete"))
        .unwrap_or_else(|| panic!("a row of `admin.tools.delete`: {rows:?}"))
        .0
        .clone();
    assert!(
        rows.contains(&("admin_tools_delete".to_string(), None)),
        "{rows:?}"
    );
    for (row, server_tool) in [
        (format!("identity__{dotted}"), "admin.tools.delete"),
        (
            "identity__admin_tools_delete".to_string(),
            "admin_tools_delete",
        ),
    ] {
        let o = toolcat_in(
            dir.path(),
            &[
                "call",
                "--catalog",
                cat,
                &row,
                "--args",
                r#"{"id": "7"}"#,
                "--approve",
                "--wait",
                "120000",
            ],
            None,
        );
        let out = ok(&o, &format!("toolcat call {row}"));
        assert!(
            out.contains(&format!("{server_tool} received")),
            "`{row}` runs `{server_tool}`: {out}"
        );
    }
    let o = toolcat_in(
        dir.path(),
        &["check", "--catalog", cat, "--live", "--server", "identity"],
        None,
    );
    let report = ok(&o, "toolcat check --live");
    assert!(
        report.contains("server `identity`: ok: 2 declared tools"),
        "{report}"
    );
    // A row mapped to a tool the server does not serve is reported by its remote name.
    set_row_field(&catalog, &dotted, "remote_name", "\"admin.tools.purge\"");
    let o = toolcat_in(
        dir.path(),
        &["check", "--catalog", cat, "--live", "--server", "identity"],
        None,
    );
    let report = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{report}");
    assert!(
        report.contains("1 added, 1 removed")
            && report.contains("added: `admin.tools.delete` is served but has no row")
            && report
                .contains("is declared as the server's `admin.tools.purge`, which is not served"),
        "{report}"
    );
}

#[test]
fn hostile_tool_names_and_descriptions_import_to_a_valid_catalog_and_renames_are_warned() {
    let dir = tempfile::tempdir().unwrap();
    let server = format!(
        "hostile={} {} odd-names",
        python(),
        test_server("hostile_server.py")
    );
    let o = toolcat_in(dir.path(), &["import", "--from-server", &server], None);
    let catalog = ok(&o, "toolcat import --from-server (odd names)");
    let report = text(&o.stderr);
    assert!(
        report.contains("`dotted.name` → `dotted_name`") && report.contains("`héllo` → `hllo`"),
        "{report}"
    );
    assert!(
        report.contains("note: 2 renamed tool(s) are called by their `remote_name`"),
        "{report}"
    );
    let path = dir.path().join("odd.toml");
    std::fs::write(&path, &catalog).unwrap();
    let o = toolcat_in(
        dir.path(),
        &["check", "--catalog", path.to_str().unwrap()],
        None,
    );
    ok(&o, "toolcat check of the imported catalog");
    // The description with quotes, triple quotes, a newline and control characters is kept
    // exactly.
    let doc: toml_edit::DocumentMut = catalog.parse().expect("the imported text is TOML");
    let echo = doc["tool"]
        .as_array_of_tables()
        .unwrap()
        .iter()
        .find(|r| r.get("name").and_then(|n| n.as_str()) == Some("echo"))
        .expect("the `echo` row");
    assert_eq!(
        echo["description"].as_str(),
        Some("say \"hi\" \\ \"\"\" end\nnext line \u{0} \u{7} \u{1b}[31m")
    );
}

/// A test server of `tests/mcp_servers/` over streamable HTTP, killed when dropped.
struct HttpServer {
    child: std::process::Child,
    /// `127.0.0.1:PORT`.
    host: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `tests/mcp_servers/FILE` with `env`; it prints its port on its first line.
fn http_server(file: &str, env: &[(&str, &str)]) -> HttpServer {
    let mut child = Command::new(python())
        .arg(test_server(file))
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the HTTP test server starts");
    let stdout = child.stdout.take().expect("its standard output");
    let mut port = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut port)
        .expect("the server prints its port");
    HttpServer {
        child,
        host: format!("127.0.0.1:{}", port.trim()),
    }
}

#[test]
fn a_url_credential_and_its_derived_forms_appear_nowhere_and_a_configured_authorization_wins() {
    const PASSWORD: &str = "tc-url-pw-3c9e71";
    // base64 of `agent:tc-url-pw-3c9e71`: the `Basic` credential the url's user information
    // stands for.
    const BASE64: &str = "YWdlbnQ6dGMtdXJsLXB3LTNjOWU3MQ==";
    const TOKEN_VAR: &str = "TOOLCAT_TEST_CONFIGURED_TOKEN";
    const TOKEN: &str = "tc-bearer-6d02a4";
    let forms = [
        PASSWORD,
        BASE64,
        BASE64.trim_end_matches('='),
        "agent:tc-url-pw-3c9e71",
        TOKEN,
    ];
    let leaks = |what: &str, text: &str| {
        for form in forms {
            assert!(
                !text.to_lowercase().contains(&form.to_lowercase()),
                "{what} shows `{form}`:\n{text}"
            );
        }
    };
    // Repeats every header it gets.
    let echo = http_server("headers_server.py", &[]);
    // Wants another credential: its 401 repeats the request's headers.
    let locked = http_server(
        "headers_server.py",
        &[("EXPECT_AUTHORIZATION", "Bearer something-else")],
    );
    // Wants the configured header and no other `Authorization`.
    let expected = format!("Bearer {TOKEN}");
    let strict = http_server(
        "headers_server.py",
        &[("EXPECT_AUTHORIZATION", expected.as_str())],
    );
    let dir = tempfile::tempdir().unwrap();
    let entry = |name: &str, host: &str, headers: &str| {
        let url = format!("http://agent:{PASSWORD}@{host}/mcp");
        let mut s = format!(
            "[mcp_server.{name}]\ndescription = \"The {name} server\"\nnamespace = \"{name}\"\nurl = {}\n{headers}\n",
            quoted(&url)
        );
        for tool in ["headers", "fail"] {
            s.push_str(&format!(
                "[[tool]]\nname = \"{tool}\"\ndescription = \"The {tool} tool of {name}.\"\nvisibility = \"inline\"\ntier = \"silent\"\neffect = \"read\"\nexposure = \"full\"\ntoolsets = [\"remote\"]\nowner = \"tests\"\nsource = \"{name}\"\ninput_schema = {{ type = \"object\", properties = {{}} }}\n\n"
            ));
        }
        s
    };
    let catalog = dir.path().join("tools.toml");
    std::fs::write(
        &catalog,
        format!(
            "[toolset.remote]\ndescription = \"Tools of remote servers\"\n\n{}{}{}",
            entry("echo", &echo.host, ""),
            entry("locked", &locked.host, ""),
            entry(
                "strict",
                &strict.host,
                &format!("headers = {{ Authorization = \"Bearer ${{{TOKEN_VAR}}}\" }}")
            ),
        ),
    )
    .unwrap();
    let cat = catalog.to_str().unwrap();
    let store = dir.path().join("calls.sqlite");
    let toolcat = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolcat"));
        cmd.args(args)
            .current_dir(dir.path())
            .env_remove("TOOLCAT_STORE")
            .env(TOKEN_VAR, TOKEN)
            .stdin(Stdio::null());
        cmd.output().expect("the toolcat binary runs")
    };

    // `echo` and `strict` connect (the url's credential went to `echo` as `Basic`; `strict`
    // got the configured header alone); `locked` failed, its 401 repeating the headers.
    let o = toolcat(&["servers", "--catalog", cat, "--json", "--wait", "60000"]);
    let listed = ok(&o, "toolcat servers --json");
    leaks("`toolcat servers --json`", &listed);
    leaks("`toolcat servers` (stderr)", &text(&o.stderr));
    let rows: Value = serde_json::from_str(&listed).unwrap();
    let state = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no `{name}` in {rows:#}"))
            .clone()
    };
    assert_eq!(state("echo")["state"], "ready", "{rows:#}");
    assert_eq!(state("strict")["state"], "ready", "{rows:#}");
    assert_eq!(state("locked")["state"], "failed", "{rows:#}");
    assert!(
        state("locked")["error"]
            .as_str()
            .unwrap()
            .contains("unauthorized; the request had these headers"),
        "the server's text is shown, redacted: {rows:#}"
    );
    let o = toolcat(&["servers", "--catalog", cat, "--wait", "60000"]);
    leaks("`toolcat servers`", &text(&o.stdout));

    let call = |tool: &str| {
        toolcat(&[
            "call",
            "--catalog",
            cat,
            tool,
            "--args",
            "{}",
            "--store",
            store.to_str().unwrap(),
            "--wait",
            "60000",
        ])
    };
    let o = call("echo__headers");
    let answer = ok(&o, "toolcat call echo__headers");
    leaks("the answer of `echo__headers`", &answer);
    assert!(
        answer.contains("authorization_scheme") && answer.contains("Basic"),
        "the url's credential is sent as `Basic`: {answer}"
    );
    let o = call("strict__headers");
    let answer = ok(&o, "toolcat call strict__headers");
    leaks("the answer of `strict__headers`", &answer);
    assert!(
        answer.contains("Bearer") && !answer.contains("Basic"),
        "the configured header is sent, not the url's credential: {answer}"
    );
    let o = call("echo__fail");
    assert!(!o.status.success(), "{}", text(&o.stderr));
    let error = text(&o.stderr);
    leaks(
        "the error of `echo__fail`",
        &format!("{error}{}", text(&o.stdout)),
    );
    assert!(error.contains("authorization_scheme"), "{error}");
    let o = call("locked__headers");
    leaks(
        "the refusal of `locked__headers`",
        &format!("{}{}", text(&o.stderr), text(&o.stdout)),
    );

    let o = toolcat(&["calls", "--json", "--store", store.to_str().unwrap()]);
    let records = ok(&o, "toolcat calls --json");
    leaks("`toolcat calls --json`", &records);
    let rows: Value = serde_json::from_str(&records).unwrap();
    // The three calls that were sent at least.
    assert!(rows.as_array().unwrap().len() >= 3, "{rows:#}");
    // Nothing in the store's files either.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("calls.sqlite")
        {
            let bytes = std::fs::read(&path).unwrap();
            leaks(
                &path.display().to_string(),
                &String::from_utf8_lossy(&bytes),
            );
        }
    }
}
