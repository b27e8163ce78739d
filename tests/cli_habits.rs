//! Command-line habits of the `toolcat` binary: shell completions, the exit-code classes, a closed
//! stdout ending quietly, `--json` on the data commands, no progress drawing on a piped stderr and
//! catalog warnings shown once per catalog content.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolcat"));
    // Warnings shown once are remembered here, never in the user's cache.
    cmd.env(
        "TOOLCAT_CACHE_DIR",
        std::env::temp_dir().join("toolcat-cli-habits-cache"),
    );
    cmd
}

fn toolcat(args: &[&str]) -> Output {
    bin().args(args).output().expect("the toolcat binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data")
}

fn json_of(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}\n{}", stdout(o), stderr(o)))
}

#[test]
fn completions_cover_the_subcommands_and_refuse_an_unknown_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = toolcat(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        for sub in ["serve", "check", "list", "completions"] {
            assert!(script.contains(sub), "{shell} script lacks `{sub}`");
        }
    }
    let o = toolcat(&["completions", "tcsh-like"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("bash"), "{}", stderr(&o));
}

#[test]
fn exit_codes_follow_the_documented_classes() {
    // 1: an invalid catalog.
    let invalid = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/invalid/01-syntax-error.toml"
    );
    for cmd in ["check", "list"] {
        let o = toolcat(&[cmd, "--catalog", invalid]);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {}", stderr(&o));
    }
    // 2: a usage error.
    let o = toolcat(&["list", "--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // 3: a tool that ran and failed (a directory passes `read_file`'s prepare step, which
    // only resolves the path, and is refused by the handler).
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("calls.sqlite");
    std::fs::create_dir(dir.path().join("a-directory")).unwrap();
    let o = toolcat(&[
        "call",
        "read_file",
        "--args",
        r#"{"path": "a-directory"}"#,
        "--workspace",
        dir.path().to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    // 1: refused by the tool's prepare step before it ran (a path that does not exist).
    let o = toolcat(&[
        "call",
        "read_file",
        "--args",
        r#"{"path": "missing.txt"}"#,
        "--workspace",
        dir.path().to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing.txt"), "{}", stderr(&o));
    // 1, not 3: a call refused for its input before anything ran.
    let o = toolcat(&[
        "call",
        "read_file",
        "--args",
        r#"{"no_such_argument": 1}"#,
        "--workspace",
        dir.path().to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// A catalog whose one MCP server's command does not exist.
fn unreachable_catalog(dir: &Path) -> PathBuf {
    let path = dir.join("tools.toml");
    std::fs::write(
        &path,
        format!(
            "[mcp_server.gone]\ndescription = \"Cannot start\"\ncommand = {:?}\n\n[toolset.gone]\ndescription = \"Lookups\"\n\n[[tool]]\nname = \"ping\"\ndescription = \"Answers pong\"\nvisibility = \"inline\"\ntier = \"silent\"\neffect = \"read\"\nexposure = \"read-only\"\ntoolsets = [\"gone\"]\nowner = \"tests\"\nsource = \"gone\"\n",
            dir.join("no-such-program").to_str().unwrap()
        ),
    )
    .unwrap();
    path
}

#[test]
fn an_unreachable_server_is_a_runtime_failure() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = unreachable_catalog(dir.path());
    let cat = catalog.to_str().unwrap();
    let o = toolcat(&["check", "--catalog", cat]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "the rows are valid: {}",
        stderr(&o)
    );
    let o = toolcat(&["check", "--catalog", cat, "--live", "--timeout", "5000"]);
    assert_eq!(o.status.code(), Some(3), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("cannot be checked"), "{}", stdout(&o));
    let store = dir.path().join("calls.sqlite");
    let o = toolcat(&[
        "call",
        "--catalog",
        cat,
        "ping",
        "--wait",
        "3000",
        "--workspace",
        dir.path().to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}

/// Runs toolcat with stdout a pipe, reads one byte, closes the pipe and returns the exit status
/// and stderr.
fn read_one_byte_then_close(args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let mut child = bin()
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the toolcat binary runs");
    let mut out = child.stdout.take().unwrap();
    let mut byte = [0u8; 1];
    out.read_exact(&mut byte).expect("one byte of output");
    drop(out);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (child.wait().unwrap().code(), err)
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    // Output far larger than a pipe's buffer, so the write after the close fails.
    let big = "x".repeat(1 << 20);
    std::fs::write(dir.path().join("big.txt"), &big).unwrap();
    let store = dir.path().join("calls.sqlite");
    let catalog = data().join("livemcpbench/tools.json");
    let imported = toolcat(&[
        "import",
        "--from",
        "livemcpbench",
        catalog.to_str().unwrap(),
    ]);
    assert!(imported.status.success(), "{}", stderr(&imported));
    let live = dir.path().join("live.toml");
    std::fs::write(&live, &imported.stdout).unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "call",
            "read_file",
            "--args",
            r#"{"path": "big.txt"}"#,
            "--store",
            store.to_str().unwrap(),
        ],
        vec!["list", "--catalog", live.to_str().unwrap()],
        vec![
            "export",
            "--catalog",
            live.to_str().unwrap(),
            "--format",
            "openai",
        ],
        vec!["completions", "zsh"],
    ];
    for args in cases {
        let (code, err) = read_one_byte_then_close(&args, dir.path());
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(
            !err.contains("Broken pipe") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn json_output_parses_on_every_data_command() {
    let dir = tempfile::tempdir().unwrap();
    let list = json_of(&toolcat(&["list", "--json"]));
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "read_file"),
        "{list}"
    );
    let search = json_of(&toolcat(&["search", "read a file", "--json"]));
    assert!(
        search
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "read_file"),
        "{search}"
    );
    let check = json_of(&toolcat(&["check", "--json"]));
    assert_eq!(check["ok"], true, "{check}");
    assert!(
        check["tools"].as_u64().unwrap() >= list.as_array().unwrap().len() as u64,
        "{check}"
    );
    let unreachable = unreachable_catalog(dir.path());
    let servers = json_of(&toolcat(&[
        "servers",
        "--json",
        "--wait",
        "2000",
        "--catalog",
        unreachable.to_str().unwrap(),
    ]));
    assert_eq!(servers[0]["name"], "gone", "{servers}");
    assert!(
        servers[0]["state"] == "failed" || servers[0]["state"] == "connecting",
        "{servers}"
    );
    let store = dir.path().join("calls.sqlite");
    std::fs::write(dir.path().join("a.txt"), "hello").unwrap();
    let call = toolcat(&[
        "call",
        "read_file",
        "--args",
        r#"{"path": "a.txt"}"#,
        "--workspace",
        dir.path().to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert!(stdout(&call).contains("hello"), "{}", stderr(&call));
    json_of(&call);
    let calls = json_of(&toolcat(&[
        "calls",
        "--json",
        "--store",
        store.to_str().unwrap(),
    ]));
    assert_eq!(calls[0]["tool"], "read_file", "{calls}");
    let plan = json_of(&toolcat(&[
        "plan",
        "--profile",
        "coding",
        "--format",
        "openai",
    ]));
    assert!(plan.is_array() || plan.is_object(), "{plan}");
    let exported = toolcat(&["export", "--format", "openai"]);
    let export = json_of(&exported);
    assert!(export.to_string().contains("read_file"), "{export}");
    // Every local tool of the embedded catalog has its handler here: no schema is missing.
    assert!(
        !stderr(&exported).contains("without a handler"),
        "{}",
        stderr(&exported)
    );
    let old = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/valid/small.toml"
    );
    // A project's catalog: its local tools have no handler in the CLI, and export says so.
    let project = toolcat(&["export", "--catalog", old, "--format", "openai"]);
    assert!(json_of(&project).is_array(), "{}", stdout(&project));
    assert!(
        stderr(&project).contains(
            "2 local tools (apply_edit, delete_file) declared in the catalog but without a handler"
        ) && stderr(&project).contains("toolcat::export::export_tools"),
        "{}",
        stderr(&project)
    );
    let diff = json_of(&toolcat(&["diff", old, old, "--json"]));
    assert_eq!(diff["widening"], false, "{diff}");
}

#[test]
fn no_progress_is_drawn_on_a_piped_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let imported = toolcat(&[
        "import",
        "--from",
        "livemcpbench",
        data().join("livemcpbench/tools.json").to_str().unwrap(),
    ]);
    let live = dir.path().join("live.toml");
    std::fs::write(&live, &imported.stdout).unwrap();
    let tasks = data().join("livemcpbench/tasks_dev.json");
    let (cat, tasks) = (live.to_str().unwrap(), tasks.to_str().unwrap());
    let o = toolcat(&[
        "eval",
        "--catalog",
        cat,
        "--queries",
        tasks,
        "--format",
        "livemcpbench",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // `eval --json`: one object with the metrics.
    let v = json_of(&o);
    assert!(
        v["R@5"].is_number() && v["queries"].as_u64() > Some(0),
        "{v}"
    );
    let err = stderr(&o);
    assert!(
        !err.contains('\x1b') && !err.contains('\r'),
        "terminal drawing on stderr: {err:?}"
    );
}

#[test]
fn catalog_warnings_are_shown_once_per_content_and_check_shows_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let catalog = data().join("livemcpbench/tools.json");
    let imported = toolcat(&[
        "import",
        "--from",
        "livemcpbench",
        catalog.to_str().unwrap(),
    ]);
    let live = dir.path().join("live.toml");
    std::fs::write(&live, &imported.stdout).unwrap();
    let cat = live.to_str().unwrap();
    let run = |args: &[&str]| {
        bin()
            .args(args)
            .env("TOOLCAT_CACHE_DIR", &cache)
            .output()
            .unwrap()
    };
    let first = stderr(&run(&["search", "--catalog", cat, "youtube"]));
    assert!(first.contains("warning: 10 warnings in"), "{first}");
    let second = run(&["search", "--catalog", cat, "youtube"]);
    assert!(second.status.success());
    let second = stderr(&second);
    assert!(!second.contains("warning:"), "{second}");
    assert!(
        second.contains("10 warnings of")
            && second.contains("shown before")
            && second.contains("toolcat check"),
        "{second}"
    );
    let check = stderr(&run(&["check", "--catalog", cat]));
    assert!(check.contains("warning: 10 warnings in"), "{check}");
    // Other content: shown again.
    std::fs::write(
        &live,
        [imported.stdout.as_slice(), b"\n# edited\n"].concat(),
    )
    .unwrap();
    let edited = stderr(&run(&["search", "--catalog", cat, "youtube"]));
    assert!(edited.contains("warning: 10 warnings in"), "{edited}");
    // A cache that cannot be written (a file where the directory should be) fails nothing.
    let blocked = dir.path().join("blocked");
    std::fs::write(&blocked, "").unwrap();
    for _ in 0..2 {
        let o = bin()
            .args(["search", "--catalog", cat, "youtube"])
            .env("TOOLCAT_CACHE_DIR", &blocked)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("warning: 10 warnings in"),
            "{}",
            stderr(&o)
        );
    }
}

/// `serve` checks its profile, exposure and `--tools` before it starts a server: a bad name is
/// refused at once (exit 1) and no server process is started, even with `--servers all`.
#[test]
fn serve_refuses_a_bad_selection_before_starting_any_server() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    let launcher = dir.path().join("server.sh");
    std::fs::write(
        &launcher,
        format!("#!/bin/sh\ntouch {:?}\nsleep 5\n", marker.to_str().unwrap()),
    )
    .unwrap();
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    let catalog = unreachable_catalog(dir.path());
    let text = std::fs::read_to_string(&catalog).unwrap().replace(
        dir.path().join("no-such-program").to_str().unwrap(),
        launcher.to_str().unwrap(),
    );
    std::fs::write(&catalog, text).unwrap();
    let store = dir.path().join("calls.sqlite");
    let o = toolcat(&[
        "serve",
        "--catalog",
        catalog.to_str().unwrap(),
        "--profile",
        "full",
        "--exposure",
        "read-only",
        "--servers",
        "all",
        "--tools",
        "nope",
        "--workspace",
        dir.path().to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("nope"), "{}", stderr(&o));
    assert!(!marker.exists(), "no server was started");
}
