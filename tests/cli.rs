//! The `toolcat` binary as a user runs it: exit codes, stdout/stderr contracts, and the acceptance
//! figures of the declaration pipeline on the reference catalog and real imported catalogs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn toolcat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(args)
        .output()
        .expect("the toolcat binary runs")
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

#[test]
fn check_accepts_the_reference_catalog() {
    let o = toolcat(&["check"]);
    assert!(o.status.success(), "toolcat check failed:\n{}", stderr(&o));
    assert!(stdout(&o).contains("ok:"), "{}", stdout(&o));
}

#[test]
fn check_rejects_a_malformed_catalog_with_exit_1_and_located_diagnostics() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/invalid/");
    let file = std::fs::read_dir(path)
        .expect("the invalid corpus exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "toml"))
        .expect("at least one malformed catalog");
    let o = toolcat(&["check", "--catalog", file.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "stdout: {}\nstderr: {}",
        stdout(&o),
        stderr(&o)
    );
    let err = stderr(&o);
    let first = err.lines().next().unwrap_or("");
    assert!(
        first.contains(": error[E") || first.contains(": warning[W"),
        "first line is not `PATH:LINE:COL: error[CODE]`: {first}"
    );
    assert!(err.contains("help:"), "no help line:\n{err}");
}

#[test]
fn unknown_profile_is_a_clear_error_with_a_suggestion() {
    let o = toolcat(&["plan", "--profile", "codng"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("unknown profile `codng`") && stderr(&o).contains("coding"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn plan_for_coding_sends_at_most_25_openai_definitions_and_reports_token_cost() {
    let o = toolcat(&[
        "plan",
        "--profile",
        "coding",
        "--format",
        "openai",
        "--stats",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tools: serde_json::Value =
        serde_json::from_str(&stdout(&o)).expect("plan prints JSON on stdout");
    let tools = tools.as_array().expect("OpenAI tools are an array");
    assert!(
        !tools.is_empty() && tools.len() <= 25,
        "coding plan sends {} definitions",
        tools.len()
    );
    for t in tools {
        assert_eq!(t["type"], "function", "{t}");
        assert!(
            t["function"]["name"].is_string() && t["function"]["parameters"].is_object(),
            "{t}"
        );
    }
    let err = stderr(&o);
    assert!(
        err.contains("tokens (openai, o200k_base):") && err.contains("for the whole profile"),
        "{err}"
    );
}

#[test]
fn plan_shows_the_deferred_tool_manifest_in_tool_search_within_its_budget() {
    let o = toolcat(&["plan", "--profile", "coding"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let plan: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let tools = plan["tools"].as_array().expect("MCP tools");
    let search = tools
        .iter()
        .find(|t| t["name"] == "tool_search")
        .expect("tool_search is sent");
    let description = search["description"].as_str().expect("a description");
    let (_, manifest) = description
        .split_once("\n\nDiscoverable tools tool_search can load: ")
        .expect("the manifest follows the declared description");
    // Deferred tools only, the cut stated, within the default budget of 300 tokens.
    assert!(manifest.contains("git_commit: "), "{manifest}");
    let sent: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for name in sent {
        assert!(
            !manifest.contains(&format!("{name}: ")),
            "{name} is sent already: {manifest}"
        );
    }
    assert!(manifest.ends_with("more; call tool_search."), "{manifest}");
    let lead = "Discoverable tools tool_search can load: ";
    let tokens = toolcat::tokens::count_tokens(&format!("{lead}{manifest}"));
    assert!(tokens <= 300, "{tokens} tokens");
}

#[test]
fn anthropic_plan_defers_discoverable_tools() {
    let o = toolcat(&["plan", "--profile", "coding", "--format", "anthropic"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tools: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let tools = tools.as_array().expect("array");
    let deferred = tools.iter().filter(|t| t["defer_loading"] == true).count();
    let loaded = tools.len() - deferred;
    assert!(deferred > 0, "no tool carries defer_loading");
    assert!(
        loaded > 0,
        "Anthropic requires at least one non-deferred tool"
    );
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "tool_search" && t.get("defer_loading").is_none()),
        "the search tool must stay loaded"
    );
}

#[test]
fn search_json_is_best_first_and_stays_in_the_profile() {
    let o = toolcat(&[
        "search",
        "--profile",
        "minimal",
        "--limit",
        "50",
        "--json",
        "create a pull request",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let hits: Vec<serde_json::Value> = serde_json::from_str(&stdout(&o)).expect("JSON");
    let minimal = toolcat(&["list", "--profile", "minimal", "--json"]);
    let owned: Vec<serde_json::Value> = serde_json::from_str(&stdout(&minimal)).expect("JSON");
    let owned: Vec<&str> = owned.iter().filter_map(|t| t["name"].as_str()).collect();
    for h in &hits {
        assert!(
            owned.contains(&h["name"].as_str().unwrap()),
            "search returned {h} outside profile `minimal`"
        );
    }
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "scores not best first: {scores:?}"
    );
}

#[test]
fn an_exact_name_hit_says_name_instead_of_a_score_and_the_scores_line_up() {
    let o = toolcat(&["search", "create_pull_request"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let json = toolcat(&["search", "--json", "create_pull_request"]);
    let hits: Vec<serde_json::Value> = serde_json::from_str(&stdout(&json)).expect("JSON");
    assert!(hits.len() > 1, "{hits:?}");
    assert_eq!(hits[0]["name"], "github__create_pull_request");
    assert_eq!(hits[0]["match"], "name");
    assert!(hits[1..].iter().all(|h| h["match"] == "bm25"), "{hits:?}");
    // `rank. name score  description`: names padded to the longest (at least 40 columns), so
    // every score ends in the same column
    let width = hits
        .iter()
        .map(|h| h["name"].as_str().expect("a name").chars().count())
        .max()
        .expect("hits")
        .max(40);
    let lines: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
    assert_eq!(lines.len(), hits.len(), "{text}");
    for (line, hit) in lines.iter().zip(&hits) {
        let score: String = line[4 + width + 1..4 + width + 9].iter().collect();
        if hit["match"] == "name" {
            assert_eq!(score.trim_start(), "name", "{text}");
        } else {
            let printed: f64 = score.trim_start().parse().expect("a score");
            let json = hit["score"].as_f64().expect("a score");
            assert!(
                (printed - json).abs() <= 0.0006,
                "{printed} vs {json}: {text}"
            );
        }
        assert_eq!(line[4 + width + 9..4 + width + 11], [' ', ' '], "{text}");
    }
    assert!(!text.contains("e38") && !text.contains("340282"), "{text}");
}

#[test]
fn list_by_exposure_scope_nests() {
    let count = |scope: &str| {
        let o = toolcat(&["list", "--exposure", scope, "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str::<Vec<serde_json::Value>>(&stdout(&o))
            .unwrap()
            .len()
    };
    let (r, s, f) = (count("read-only"), count("staging"), count("full"));
    assert!(
        0 < r && r < s && s < f,
        "scopes must nest strictly on the reference catalog: {r} {s} {f}"
    );
}

fn import(kind: &str, path: &Path, out: &Path) {
    let o = toolcat(&["import", "--from", kind, path.to_str().unwrap()]);
    assert!(o.status.success(), "import {kind} failed:\n{}", stderr(&o));
    std::fs::write(out, &o.stdout).unwrap();
}

#[test]
fn imported_real_catalogs_pass_check_and_github_search_finds_create_pull_request() {
    require_data!();
    let dir = tempfile::tempdir().unwrap();
    let github = dir.path().join("github.toml");
    let live = dir.path().join("livemcpbench.toml");
    import(
        "github-toolsnaps",
        &data().join("github-mcp-server/toolsnaps"),
        &github,
    );
    import(
        "livemcpbench",
        &data().join("livemcpbench/tools.json"),
        &live,
    );
    for (file, tools) in [(&github, 117), (&live, 527)] {
        let o = toolcat(&["check", "--catalog", file.to_str().unwrap()]);
        assert!(
            o.status.success(),
            "check {}:\n{}",
            file.display(),
            stderr(&o)
        );
        let o = toolcat(&["list", "--catalog", file.to_str().unwrap(), "--json"]);
        let listed: Vec<serde_json::Value> = serde_json::from_str(&stdout(&o)).unwrap();
        // The four discovery meta-tools are rows too.
        assert_eq!(listed.len(), tools + 4, "{}", file.display());
    }
    let o = toolcat(&[
        "search",
        "--catalog",
        github.to_str().unwrap(),
        "--limit",
        "3",
        "--json",
        "open a pull request from my feature branch",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let hits: Vec<serde_json::Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let names: Vec<&str> = hits.iter().filter_map(|h| h["name"].as_str()).collect();
    assert!(names.contains(&"create_pull_request"), "top 3: {names:?}");
}

#[test]
fn call_runs_local_handlers_for_real_and_refuses_what_cannot_run_here() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta needle\ngamma\n").unwrap();
    let ws = dir.path().to_str().unwrap();

    let o = toolcat(&[
        "call",
        "read_file",
        "--workspace",
        ws,
        "--args",
        r#"{"path": "notes.txt"}"#,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON result");
    assert!(v.to_string().contains("beta needle"), "{v}");

    let o = toolcat(&[
        "call",
        "grep",
        "--workspace",
        ws,
        "--args",
        r#"{"pattern": "needle"}"#,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("notes.txt"), "{}", stdout(&o));

    let o = toolcat(&[
        "call",
        "list_directory",
        "--workspace",
        ws,
        "--args",
        r#"{"path": "."}"#,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("notes.txt"), "{}", stdout(&o));

    // A remote GitHub tool (gated, approved, valid arguments): a clear "not connected", nothing
    // run.
    let o = toolcat(&[
        "call",
        "github__create_pull_request",
        "--workspace",
        ws,
        "--approve",
        "--args",
        r#"{"owner": "o", "repo": "r", "title": "t", "head": "h", "base": "b"}"#,
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("not connected") && stderr(&o).contains("`github`"),
        "{}",
        stderr(&o)
    );

    // Paths may not leave the workspace; misspelt arguments are named.
    let o = toolcat(&[
        "call",
        "read_file",
        "--workspace",
        ws,
        "--args",
        r#"{"path": "../x"}"#,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("outside the workspace"),
        "{}",
        stderr(&o)
    );
    let o = toolcat(&[
        "call",
        "read_file",
        "--workspace",
        ws,
        "--args",
        r#"{"pth": "notes.txt"}"#,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("invalid arguments for `read_file`")
            && stderr(&o).contains("unknown argument `pth` (did you mean `path`?)")
            && !stderr(&o).contains("'pth' was unexpected"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn call_refuses_gated_tools_without_approve_and_records_with_store() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().to_str().unwrap();
    let store = dir.path().join("calls.sqlite");
    let store = store.to_str().unwrap();
    let write = |extra: &[&str]| {
        let mut args = vec![
            "call",
            "write_file",
            "--workspace",
            ws,
            "--store",
            store,
            "--args",
            r#"{"path": "notes.txt", "content": "hello"}"#,
        ];
        args.extend_from_slice(extra);
        toolcat(&args)
    };
    let o = write(&[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is gated"), "{}", stderr(&o));
    assert!(!dir.path().join("notes.txt").exists(), "nothing ran");

    // Approved: the concrete operation is shown (a new file: `absent`), then it runs.
    let o = write(&["--approve"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("approved `write_file`") && stderr(&o).contains("(write, absent)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "hello"
    );
    // The second write sees the first one's content hash.
    let o = write(&["--approve"]);
    assert!(stderr(&o).contains("(write, sha256:"), "{}", stderr(&o));

    // Both attempts that passed validation are in the store: one refused, two succeeded.
    let o = toolcat(&["calls", "--store", store, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let records: Vec<serde_json::Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let states: Vec<&str> = records
        .iter()
        .map(|r| r["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["succeeded", "succeeded", "failed"], "{records:?}");
}

/// `run_command` does not hand the agent's environment to the command: a secret variable is
/// not visible, `PATH` is, and so is a variable the host names in `TOOLCAT_COMMAND_ENV`.
#[cfg(unix)]
#[test]
fn run_command_sees_only_allowlisted_environment_variables() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("calls.sqlite");
    let run = |allow: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolcat"));
        cmd.args(["call", "run_command", "--approve", "--args"])
            .arg(r#"{"command": "echo \"secret=[$TOOLCAT_TEST_SECRET] extra=[$TOOLCAT_TEST_EXTRA] path=[$PATH]\""}"#)
            .arg("--store")
            .arg(&store)
            .arg("--workspace")
            .arg(dir.path())
            .env("TOOLCAT_TEST_SECRET", "hunter2")
            .env("TOOLCAT_TEST_EXTRA", "shared")
            .env_remove("TOOLCAT_COMMAND_ENV");
        if let Some(allow) = allow {
            cmd.env("TOOLCAT_COMMAND_ENV", allow);
        }
        let o = cmd.output().expect("the toolcat binary runs");
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON result");
        v["stdout"].as_str().unwrap_or_default().to_string()
    };
    let path = std::env::var("PATH").unwrap_or_default();
    assert!(!path.is_empty(), "the test needs a PATH");
    let out = run(None);
    assert_eq!(out, format!("secret=[] extra=[] path=[{path}]\n"));
    let out = run(Some("TOOLCAT_TEST_EXTRA"));
    assert_eq!(out, format!("secret=[] extra=[shared] path=[{path}]\n"));
}

/// Runs `toolcat` with `args` in `cwd` (default: the crate root), killing it after 60 s so a hang
/// fails the test instead of blocking it.
fn toolcat_bounded(args: &[&str], cwd: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolcat"));
    cmd.args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(dir) = cwd {
        // The directory's catalog, not the `TOOLCAT_CATALOG` cargo passes on from the build
        // script (this repository's `tools.toml`).
        cmd.current_dir(dir).env_remove("TOOLCAT_CATALOG");
    }
    let mut child = cmd.spawn().expect("the toolcat binary runs");
    let start = std::time::Instant::now();
    while child.try_wait().expect("wait works").is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("`toolcat {}` did not finish within 60 s", args.join(" "));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("output is collected")
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[cfg(unix)]
#[test]
fn special_files_as_catalog_fail_at_once_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("tools.toml");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    for args in [
        vec!["check", "--catalog", fifo],
        vec!["list", "--catalog", fifo],
        vec!["check", "--catalog", "/dev/zero"],
    ] {
        let out = toolcat_bounded(&args, None);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("not a regular file"), "{args:?}: {err}");
        assert!(err.contains(args[2]), "{args:?} names the path: {err}");
    }
}

/// A FIFO as the call store: `toolcat call` and `toolcat calls` both refuse it with the runtime
/// class (3), as the README's exit table says, and `calls` says so once.
#[cfg(unix)]
#[test]
fn a_fifo_as_the_call_store_is_refused_alike_by_call_and_calls() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("calls.sqlite");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    for args in [
        vec!["calls", "--store", fifo],
        vec!["call", "list_directory", "--args", "{}", "--store", fifo],
    ] {
        let out = toolcat_bounded(&args, None);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        assert_eq!(err.matches("it is a FIFO").count(), 1, "{args:?}: {err}");
    }
}

#[cfg(unix)]
#[test]
fn generate_check_with_a_fifo_in_dir_reports_it_stale_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let gen = dir.path().join("generated");
    let out = toolcat_bounded(&["generate", "--dir", gen.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let md = gen.join("tools.md");
    std::fs::remove_file(&md).unwrap();
    mkfifo(&md);
    let out = toolcat_bounded(
        &["generate", "--check", "--dir", gen.to_str().unwrap()],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("tools.md"), "{}", stderr(&out));
    // Writing over the FIFO is refused too, and names it.
    let out = toolcat_bounded(&["generate", "--dir", gen.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn generate_refuses_to_overwrite_a_file_without_the_generated_stamp() {
    let dir = tempfile::tempdir().unwrap();
    let gen = dir.path().join("generated");
    let out = toolcat_bounded(&["generate", "--dir", gen.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", stderr(&out));
    // One stamped file goes stale, one is replaced by the user's own notes.
    let profiles = gen.join("profiles.md");
    let stale_text = std::fs::read_to_string(&profiles).unwrap() + "stale line\n";
    std::fs::write(&profiles, &stale_text).unwrap();
    let tools = gen.join("tools.md");
    std::fs::write(&tools, "my own notes\n").unwrap();
    let out = toolcat_bounded(&["generate", "--dir", gen.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("tools.md") && err.contains("@generated"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&tools).unwrap(), "my own notes\n");
    // Nothing was written: the stale stamped file is untouched as well.
    assert_eq!(std::fs::read_to_string(&profiles).unwrap(), stale_text);
    // Once the user's file is moved away, generate rewrites both.
    std::fs::remove_file(&tools).unwrap();
    let out = toolcat_bounded(&["generate", "--dir", gen.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("tools.md") && stdout(&out).contains("profiles.md"));
}

#[test]
fn search_limit_out_of_range_is_a_usage_error() {
    for limit in ["0", "10001", "4294967296", "18446744073709551616"] {
        let out = toolcat_bounded(&["search", "--limit", limit, "file"], None);
        assert_eq!(
            out.status.code(),
            Some(2),
            "--limit {limit}: {}",
            stderr(&out)
        );
        assert!(stderr(&out).contains("--limit"), "{}", stderr(&out));
    }
    let out = toolcat_bounded(&["search", "--limit", "10000", "--json", "file"], None);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn invalid_catalog_diagnostics_keep_path_line_col_form_and_one_summary() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rel.toml"), "[meta]\nversion = 1\n").unwrap();
    for cmd in [
        &["list", "--catalog", "rel.toml"][..],
        &["search", "--catalog", "rel.toml", "file"],
        &["plan", "--catalog", "rel.toml", "--profile", "full"],
        &["check", "--catalog", "rel.toml"],
    ] {
        let out = toolcat_bounded(cmd, Some(dir.path()));
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {}", stderr(&out));
        let err = stderr(&out);
        let first = err.lines().next().unwrap_or("");
        assert!(
            first.starts_with("rel.toml:1:2: error[E"),
            "{cmd:?}: {first}"
        );
        let summaries: Vec<&str> = err.lines().filter(|l| l.contains("in rel.toml")).collect();
        assert_eq!(summaries, ["error: 1 error in rel.toml"], "{cmd:?}:\n{err}");
        assert!(
            !err.contains("1 errors") && !err.contains("1 warnings"),
            "{err}"
        );
    }
}

#[test]
fn bom_at_start_of_catalog_does_not_shift_columns() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plain.toml"), "nope = \n").unwrap();
    std::fs::write(dir.path().join("bom.toml"), "\u{feff}nope = \n").unwrap();
    let plain = stderr(&toolcat_bounded(
        &["check", "--catalog", "plain.toml"],
        Some(dir.path()),
    ));
    let bom = stderr(&toolcat_bounded(
        &["check", "--catalog", "bom.toml"],
        Some(dir.path()),
    ));
    let location = |err: &str| {
        err.lines()
            .next()
            .unwrap_or("")
            .split(": ")
            .next()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(location(&plain), "plain.toml:1:8", "{plain}");
    assert_eq!(location(&bom), "bom.toml:1:8", "{bom}");
    assert!(
        !bom.contains('\u{feff}'),
        "the excerpt shows no BOM:\n{bom}"
    );
}

#[test]
fn check_without_catalog_labels_the_compiled_in_reference_and_reads_a_local_tools_toml() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolcat_bounded(&["check"], Some(dir.path()));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("<compiled-in reference catalog> (tools.toml): ok:"),
        "{}",
        stdout(&out)
    );
    assert!(!stderr(&out).contains("note:"), "{}", stderr(&out));
    std::fs::write(dir.path().join("tools.toml"), "broken = \n").unwrap();
    // A `./tools.toml` is the catalog read: its diagnostics, located in it.
    for cmd in [&["check"][..], &["generate", "--check", "--dir", "g"]] {
        let out = toolcat_bounded(cmd, Some(dir.path()));
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("tools.toml:1:"),
            "{cmd:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn plan_notes_a_named_tool_it_cannot_show_instead_of_dropping_it_silently() {
    // `minimal` does not own the GitHub tools.
    let o = toolcat(&[
        "plan",
        "--profile",
        "minimal",
        "--named",
        "github__create_pull_request",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("note: --named `github__create_pull_request` is not in this plan"),
        "{}",
        stderr(&o)
    );
    let tools: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    assert!(
        !tools.to_string().contains("github__create_pull_request"),
        "a tool outside the profile was planned"
    );
}

#[test]
fn plan_exports_flat_openai_responses_tools() {
    let o = toolcat(&[
        "plan",
        "--profile",
        "coding",
        "--format",
        "openai-responses",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tools: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let tools = tools.as_array().expect("array");
    assert!(!tools.is_empty());
    for t in tools {
        let keys: Vec<&String> = t.as_object().expect("object").keys().collect();
        assert_eq!(
            keys,
            ["type", "name", "description", "parameters", "strict"],
            "{t}"
        );
    }
}

#[test]
fn plan_with_hosted_search_swaps_tool_search_for_the_providers_own() {
    let o = toolcat(&[
        "plan",
        "--profile",
        "coding",
        "--format",
        "anthropic",
        "--hosted-search",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tools: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let tools = tools.as_array().expect("array");
    assert_eq!(tools[0]["type"], "tool_search_tool_bm25_20251119");
    assert_eq!(tools[0]["name"], "tool_search_tool_bm25");
    assert!(tools.iter().all(|t| t["name"] != "tool_search"));
    assert!(tools.iter().any(|t| t["defer_loading"] == true));

    let o = toolcat(&[
        "plan",
        "--profile",
        "coding",
        "--format",
        "openai-responses",
        "--hosted-search",
        "--stats",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tools: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let tools = tools.as_array().expect("array");
    assert_eq!(
        tools.iter().filter(|t| t["type"] == "tool_search").count(),
        1
    );
    let namespaces: Vec<&serde_json::Value> =
        tools.iter().filter(|t| t["type"] == "namespace").collect();
    assert!(!namespaces.is_empty(), "no namespace: {tools:?}");
    for ns in namespaces {
        for m in ns["tools"].as_array().expect("members") {
            assert_eq!(m["defer_loading"], true, "{m}");
        }
    }
    assert!(
        stderr(&o).contains("tokens (openai-responses, o200k_base):"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn hosted_search_with_a_format_without_one_names_the_formats_that_take_it() {
    for format in ["mcp", "openai", "gemini"] {
        let o = toolcat(&[
            "plan",
            "--profile",
            "coding",
            "--format",
            format,
            "--hosted-search",
        ]);
        assert_eq!(o.status.code(), Some(1), "{format}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!(
                "`--hosted-search` does not apply to `--format {format}`"
            )) && err.contains("`anthropic` and `openai-responses`"),
            "{err}"
        );
        assert!(stdout(&o).is_empty(), "{format}: printed an export anyway");
    }
}

#[test]
fn gemini_plan_names_each_refused_tool_and_counts_only_declarations() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("runtime/tests/fixtures/gemini-recursive-ref.toml");
    std::fs::copy(catalog, dir.path().join("recursive.toml")).unwrap();
    let o = toolcat_bounded(
        &[
            "plan",
            "--catalog",
            "recursive.toml",
            "--profile",
            "full",
            "--format",
            "gemini",
            "--stats",
        ],
        Some(dir.path()),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let refused: Vec<&str> = err.lines().filter(|l| l.starts_with("refused:")).collect();
    assert_eq!(refused.len(), 1, "{err}");
    assert!(
        refused[0].contains("outline_document") && refused[0].contains("gemini-ref"),
        "{err}"
    );
    assert!(
        err.contains("definitions sent: 1 of 1 the profile owns")
            && err.contains("1 refused by `gemini`"),
        "{err}"
    );
    let tools: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let declarations = tools[0]["functionDeclarations"]
        .as_array()
        .expect("declarations");
    assert_eq!(declarations.len(), 1);
    assert!(declarations[0]["name"]
        .as_str()
        .expect("name")
        .ends_with("read_page"));
}

#[test]
fn call_refuses_a_deprecated_tool_naming_its_replacement_and_runs_it_with_allow_deprecated() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\n").unwrap();
    let ws = dir.path().to_str().unwrap();
    let store = dir.path().join("calls.sqlite");
    let store = store.to_str().unwrap();
    let args = r#"{"name": "notes"}"#;
    let o = toolcat(&[
        "call",
        "find_files",
        "--workspace",
        ws,
        "--store",
        store,
        "--args",
        args,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "error: `find_files` is deprecated (removal 2027-03-01); call `glob` instead; nothing ran\nhelp: pass `--allow-deprecated` to run it anyway until its removal\n"
    );
    // Following the error works.
    let o = toolcat(&[
        "call",
        "glob",
        "--workspace",
        ws,
        "--store",
        store,
        "--args",
        r#"{"pattern": "*.txt"}"#,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("notes.txt"), "{}", stdout(&o));

    let o = toolcat(&[
        "call",
        "find_files",
        "--allow-deprecated",
        "--workspace",
        ws,
        "--store",
        store,
        "--args",
        args,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("notes.txt"), "{}", stdout(&o));
}

/// The reference catalog with `write_file` given to profile `minimal` and its exposure widened
/// from `full` to `staging`: a two-line change, two widenings.
fn widened_reference(dir: &Path) -> PathBuf {
    let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tools.toml"))
        .expect("the reference catalog");
    let row = source
        .find("name = \"write_file\"")
        .expect("write_file row");
    let (head, tail) = source.split_at(row);
    let tail = tail
        .replacen("exposure = \"full\"", "exposure = \"staging\"", 1)
        .replacen(
            "profiles = [\"coding\"]",
            "profiles = [\"coding\", \"minimal\"]",
            1,
        );
    let path = dir.join("tools.toml");
    std::fs::write(&path, format!("{head}{tail}")).expect("write the edited catalog");
    path
}

#[test]
fn diff_flags_widening_in_text_markdown_and_json_and_deny_widening_exits_1() {
    let dir = tempfile::tempdir().expect("temp dir");
    let edited = widened_reference(dir.path());
    let reference = concat!(env!("CARGO_MANIFEST_DIR"), "/tools.toml");
    let edited = edited.to_str().expect("UTF-8 path");

    let o = toolcat(&["diff", reference, edited]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("2 widening changes"), "{text}");
    assert!(
        text.contains("! profile_gained: `write_file` is now owned by profile `minimal`"),
        "{text}"
    );
    assert!(
        text.contains("! scope_gained: `write_file` is now listed by MCP scope `staging`"),
        "{text}"
    );
    assert!(
        text.contains("exposure: full (scopes full) → staging (scopes staging, full)"),
        "{text}"
    );

    let o = toolcat(&[
        "diff",
        reference,
        edited,
        "--format",
        "markdown",
        "--deny-widening",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let md = stdout(&o);
    assert!(md.contains("| `profile_gained` | `write_file` |"), "{md}");
    assert!(
        md.contains("| `write_file` | changed | profiles | +minimal |"),
        "{md}"
    );
    assert!(
        stderr(&o).contains("2 widening changes (`--deny-widening`)"),
        "{}",
        stderr(&o)
    );

    let o = toolcat(&["diff", reference, edited, "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    assert_eq!(json["widening"], true);
    let kinds: Vec<&str> = json["widenings"]
        .as_array()
        .expect("widenings")
        .iter()
        .filter_map(|w| w["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["profile_gained", "scope_gained"]);
    assert_eq!(json["tools"][0]["tool"], "write_file");

    // No change: exit 0 with `--deny-widening`, and says so.
    let o = toolcat(&["diff", reference, reference, "--deny-widening"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("no answer changes"), "{}", stdout(&o));
}

#[test]
fn diff_flags_a_row_that_runs_another_server_tool_and_reports_the_settings() {
    let dir = tempfile::tempdir().expect("temp dir");
    let reference = concat!(env!("CARGO_MANIFEST_DIR"), "/tools.toml");
    let source = std::fs::read_to_string(reference).expect("the reference catalog");
    // The first GitHub row calls another server tool, and the review threshold moves.
    let edited = source
        .replacen(
            "\nsource = \"github\"\n",
            "\nsource = \"github\"\nremote_name = \"get_me_v2\"\n",
            1,
        )
        .replacen("\ntargets = [", "\nreview_inline = 25\ntargets = [", 1);
    let path = dir.path().join("tools.toml");
    std::fs::write(&path, edited).expect("write the edited catalog");
    let edited = path.to_str().expect("UTF-8 path");

    let o = toolcat(&[
        "diff",
        reference,
        edited,
        "--format",
        "json",
        "--deny-widening",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    let kinds: Vec<&str> = json["widenings"]
        .as_array()
        .expect("widenings")
        .iter()
        .filter_map(|w| w["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["remote_retargeted"], "{json:#}");
    let field = &json["tools"][0]["fields"][0];
    assert_eq!(
        (&field["field"], &field["new"]),
        (&"remote_name".into(), &"get_me_v2".into()),
        "{json:#}"
    );
    let settings = &json["tables"][0];
    assert_eq!(
        (&settings["table"], &settings["fields"][0]["field"]),
        (&"catalog".into(), &"review_inline".into()),
        "{json:#}"
    );
    assert_eq!(settings["fields"][0]["new"], "25", "{json:#}");
}

#[test]
fn diff_reports_an_invalid_side_with_located_diagnostics_and_names_missing_arguments() {
    let reference = concat!(env!("CARGO_MANIFEST_DIR"), "/tools.toml");
    let invalid = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/invalid/18-silent-writes.toml"
    );
    let o = toolcat(&["diff", reference, invalid]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("18-silent-writes.toml:") && stderr(&o).contains("error[E0402]"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    let not_utf8 = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/invalid/60-not-utf8.toml"
    );
    let o = toolcat(&["diff", not_utf8, reference]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("60-not-utf8.toml:9:37: error[E0106]"),
        "{}",
        stderr(&o)
    );
    let o = toolcat(&["diff", reference]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("pass `OLD NEW`, or `--base GIT_REV [NEW]`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn diff_base_reads_the_old_catalog_from_git_and_names_a_missing_parent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.invalid",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("git runs");
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    git(&["init", "-q"]);
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tools.toml"),
        dir.path().join("tools.toml"),
    )
    .expect("copy the catalog");
    git(&["add", "tools.toml"]);
    git(&["commit", "-q", "-m", "catalog"]);
    widened_reference(dir.path());
    let new = dir.path().join("tools.toml");
    let o = toolcat(&[
        "diff",
        "--base",
        "HEAD",
        new.to_str().expect("UTF-8 path"),
        "--deny-widening",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains(" at HEAD → "), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("! scope_gained: `write_file`"),
        "{}",
        stdout(&o)
    );
    // One commit: no parent to compare with.
    let o = toolcat(&[
        "diff",
        "--base",
        "HEAD~1",
        new.to_str().expect("UTF-8 path"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("check that `HEAD~1` names a commit that has the file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn diff_base_rev_is_never_passed_to_git_as_an_option() {
    let dir = tempfile::tempdir().expect("temp dir");
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("git runs");
        assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    };
    git(&["init", "-q"]);
    let new = dir.path().join("tools.toml");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/tools.toml"), &new).expect("copy");
    git(&["add", "tools.toml"]);
    git(&["commit", "-q", "-m", "catalog"]);
    let owned = dir.path().join("owned");
    let new = new.to_str().expect("UTF-8 path");
    let option = format!("--base=--output={}", owned.display());
    let o = toolcat(&["diff", &option, new]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("starts with `-`, so git would read it as an option"),
        "{}",
        stderr(&o)
    );
    assert!(!owned.exists(), "git wrote {}", owned.display());
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    let o = toolcat(&["diff", "--base=", new]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("`--base` names no git revision"),
        "{}",
        stderr(&o)
    );
    // A revision whose file is empty: an error, not an empty old catalog.
    std::fs::write(dir.path().join("tools.toml"), "").expect("empty the catalog");
    git(&["commit", "-q", "-am", "empty"]);
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/tools.toml"), new).expect("copy");
    let o = toolcat(&["diff", "--base", "HEAD", new]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("printed nothing"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("added"), "{}", stdout(&o));
}

#[test]
fn diff_reads_catalogs_with_the_guards_of_check() {
    let reference = concat!(env!("CARGO_MANIFEST_DIR"), "/tools.toml");
    let o = toolcat(&["diff", "/dev/zero", reference]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
    let dir = tempfile::tempdir().expect("temp dir");
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let o = toolcat(&["diff", reference, fifo.to_str().expect("UTF-8 path")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
    let big = dir.path().join("big.toml");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(70 * 1024 * 1024))
        .expect("sparse file");
    let o = toolcat(&["diff", big.to_str().expect("UTF-8 path"), reference]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("MAX_CATALOG_BYTES"), "{}", stderr(&o));
}

#[test]
fn diff_reports_server_env_by_key_and_flags_a_server_retargeted() {
    let reference = concat!(env!("CARGO_MANIFEST_DIR"), "/tools.toml");
    let source = std::fs::read_to_string(reference).expect("the reference catalog");
    let from = "env = { GITHUB_PERSONAL_ACCESS_TOKEN = \"${GITHUB_PERSONAL_ACCESS_TOKEN}\" }";
    assert!(source.contains(from));
    let edited = source
        .replacen(
            from,
            "env = { GITHUB_PERSONAL_ACCESS_TOKEN = \"${SOME_OTHER_SECRET}\" }\nconnect_timeout_ms = 9000",
            1,
        )
        .replacen("command = \"github-mcp-server\"", "command = \"not-github\"", 1);
    let dir = tempfile::tempdir().expect("temp dir");
    let new = dir.path().join("tools.toml");
    std::fs::write(&new, edited).expect("write the edited catalog");
    let o = toolcat(&[
        "diff",
        reference,
        new.to_str().expect("UTF-8 path"),
        "--deny-widening",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("! server_retargeted: MCP server `github`"),
        "{out}"
    );
    assert!(
        out.contains("+GITHUB_PERSONAL_ACCESS_TOKEN (value changed)"),
        "{out}"
    );
    assert!(out.contains("connect_timeout_ms: (none) → 9000"), "{out}");
    assert!(!out.contains("SOME_OTHER_SECRET"), "{out}");
}

#[test]
fn check_locates_the_first_byte_that_is_not_utf8() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/invalid/60-not-utf8.toml"
    );
    let o = toolcat(&["check", "--catalog", path]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.starts_with(&format!("{path}:9:37: error[E0106]: the file is not UTF-8")),
        "{err}"
    );
    assert!(err.contains("help: save the file as UTF-8"), "{err}");
}

/// `toolcat generate --catalog` on an edited copy of the reference catalog attaches the
/// reference handlers by name: the exports keep the handlers' input schemas, so they differ from
/// `generated/` only where the rows do (here: not at all, as exposure and profiles are not part
/// of a provider definition), while the lists show the edit.
#[test]
fn generate_from_an_edited_copy_keeps_the_handlers_schemas() {
    let dir = tempfile::tempdir().expect("temp dir");
    let edited = widened_reference(dir.path());
    let out = dir.path().join("generated");
    let o = toolcat(&[
        "generate",
        "--catalog",
        edited.to_str().expect("UTF-8 path"),
        "--dir",
        out.to_str().expect("UTF-8 path"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let checked_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("generated");
    for export in [
        "anthropic-tools.json",
        "openai-tools.json",
        "mcp-tools-list.json",
    ] {
        let read =
            |d: &Path| std::fs::read_to_string(d.join("exports").join(export)).expect("export");
        assert!(
            read(&out) == read(&checked_in),
            "exports/{export} differs from generated/"
        );
    }
    let tools_md = std::fs::read_to_string(out.join("tools.md")).expect("tools.md");
    assert_ne!(
        tools_md,
        std::fs::read_to_string(checked_in.join("tools.md")).expect("tools.md")
    );
}

#[test]
fn session_max_tools_below_the_core_is_refused() {
    let o = toolcat(&["session", "--preset", "code", "--max-tools", "10"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("max_tools = 10 is below this session's core of 18 tool definitions"),
        "{err}"
    );
    assert!(err.contains("raise the cap to at least 18"), "{err}");
}
