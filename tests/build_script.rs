//! The quick start a user copies (tests/fixtures/quickstart) really builds with `cargo build`: its
//! binary runs a tool through the compiled dispatch table, and a broken tools.toml stops the build
//! with the diagnostic, the tool's name and the fix.
//!
//! Each case builds a copy of the fixture in a temporary directory, with its path dependencies
//! rewritten to this workspace, in trybuild's target directory (`<target>/tests/trybuild`): not the
//! workspace's, whose lock the cargo running these tests holds, but the one where the UI cases of
//! `toolcat-ui-tests` compile the same dependencies (toolcat, serde, schemars, serde_json, tokio).
//! With trybuild's profile settings, flags and target, the dependency tree is compiled once for
//! both, by whichever test runs first.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// A copy of tests/fixtures/quickstart, ready to build.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn quickstart() -> Fixture {
        let source = Path::new(MANIFEST_DIR).join("tests/fixtures/quickstart");
        let dir = tempfile::Builder::new()
            .prefix("toolcat-quickstart-")
            .tempdir()
            .expect("a temporary directory");
        copy_dir(&source, dir.path());
        rewrite_path_dependencies(&source, &dir.path().join("Cargo.toml"));
        // The workspace's lock file pins the same versions, so the shared target directory
        // is reused and no resolution is needed.
        std::fs::copy(
            Path::new(MANIFEST_DIR).join("Cargo.lock"),
            dir.path().join("Cargo.lock"),
        )
        .expect("Cargo.lock copies");
        Fixture { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Replaces `from` with `to` in the copy's tools.toml, which must contain `from`.
    fn edit_catalog(&self, from: &str, to: &str) {
        let path = self.path().join("tools.toml");
        let text = std::fs::read_to_string(&path).expect("tools.toml reads");
        assert!(text.contains(from), "tools.toml has no `{from}`");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("tools.toml writes");
    }

    fn cargo(&self, args: &[&str]) -> Output {
        cargo(self.path(), args)
    }
}

/// Runs cargo with `args` in the crate at `dir`, in trybuild's target directory with trybuild's
/// flags, so the dependencies compiled for the UI cases (or by any other crate built here, such
/// as one `toolcat init` wrote) are reused.
pub(crate) fn cargo(dir: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let host = host_tuple();
    Command::new(cargo)
        .args(args)
        // What trybuild passes to its cargo (trybuild 1's `cargo.rs` and `rustflags.rs`): an
        // explicit `--target`, so build scripts and proc macros build without the flags, and
        // these flags for everything else. The same flags and target make the same artifacts.
        .args(["--target", &host])
        .arg(format!("--config=build.rustflags={TRYBUILD_RUSTFLAGS}"))
        .arg(format!(
            "--config=target.{host}.rustflags={TRYBUILD_RUSTFLAGS}"
        ))
        .env_remove("RUSTFLAGS")
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        // The crate is a workspace of its own, so the root's `[profile.dev]` does not reach
        // it; the UI cases set the same (`ui-tests/tests/ui.rs`), which keeps the shared
        // target directory small.
        .env("CARGO_PROFILE_DEV_DEBUG", "false")
        .env("CARGO_INCREMENTAL", "0")
        // Set for the UI cases when they run in the same process; the crate's build script
        // must be the one that names the catalog.
        .env_remove("TOOLCAT_CATALOG")
        .env_remove("TOOLCAT_UI_CATALOG_DIR")
        .env_remove("CARGO_MANIFEST_DIR")
        .output()
        .expect("cargo runs")
}

/// The rustc flags trybuild sets for the crates it builds (`--cfg trybuild --verbose -A dead_code`),
/// as a TOML array for `--config`.
const TRYBUILD_RUSTFLAGS: &str = r#"["--cfg", "trybuild", "--verbose", "-A", "dead_code"]"#;

/// trybuild's target directory: `tests/trybuild` in this build's target directory (the parent of
/// `CARGO_TARGET_TMPDIR`, `<target>/tmp`).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target>/tmp")
        .join("tests")
        .join("trybuild")
}

/// The host's target tuple (`rustc --print host-tuple`), the `--target` trybuild builds for.
fn host_tuple() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc)
        .args(["--print", "host-tuple"])
        .output()
        .expect("rustc runs");
    assert!(output.status.success(), "rustc --print host-tuple fails");
    String::from_utf8(output.stdout)
        .expect("the host tuple is UTF-8")
        .trim()
        .to_owned()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("directory creates");
    for entry in std::fs::read_dir(from).expect("fixture directory reads") {
        let entry = entry.expect("fixture entry reads");
        let name = entry.file_name();
        if name == "target" || name == "Cargo.lock" {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(&name));
        } else {
            std::fs::copy(&path, to.join(&name)).expect("fixture file copies");
        }
    }
}

/// Makes every `path = "..."` dependency of the copied manifest absolute, resolved against the
/// fixture's place in this repository.
fn rewrite_path_dependencies(fixture: &Path, manifest: &Path) {
    let text = std::fs::read_to_string(manifest).expect("manifest reads");
    let mut doc: toml_edit::DocumentMut = text.parse().expect("fixture manifest parses");
    for section in ["dependencies", "build-dependencies", "dev-dependencies"] {
        let Some(table) = doc.get_mut(section).and_then(|t| t.as_table_like_mut()) else {
            continue;
        };
        for (_, dep) in table.iter_mut() {
            let Some(dep) = dep.as_table_like_mut() else {
                continue;
            };
            let Some(relative) = dep.get("path").and_then(|p| p.as_str()) else {
                continue;
            };
            let absolute = fixture
                .join(relative)
                .canonicalize()
                .expect("path dependency exists");
            dep.insert(
                "path",
                toml_edit::value(absolute.to_string_lossy().into_owned()),
            );
        }
    }
    std::fs::write(manifest, doc.to_string()).expect("manifest writes");
}

pub(crate) fn text(output: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn quickstart_builds_and_runs_a_tool_through_the_coordinator_with_its_state() {
    let fixture = Fixture::quickstart();
    let build = fixture.cargo(&["build", "--quiet"]);
    assert!(
        build.status.success(),
        "the quick start must build:\n{}",
        text(&build)
    );

    let run = fixture.cargo(&["run", "--quiet"]);
    assert!(
        run.status.success(),
        "the quick start must run:\n{}",
        text(&run)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    let result: Option<serde_json::Value> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("count_words: "))
        .and_then(|json| serde_json::from_str(json).ok());
    assert_eq!(
        result,
        Some(serde_json::json!({ "words": 4, "lines": 2, "measured": 1 })),
        "count_words ran through the coordinator with the host's state:\n{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l == "texts measured: 1"),
        "the handler counted in the state main registered:\n{stdout}"
    );
    let search = stdout
        .lines()
        .find(|l| l.starts_with("tool_search: "))
        .unwrap_or_default();
    assert!(
        search.starts_with(r#"tool_search: ["count_words""#),
        "the discoverable tool is found first by describing its job:\n{stdout}"
    );
}

/// `quickstart --serve` serves its own compiled tools over MCP on stdio with one call
/// (`toolcat::mcp::Server`): a client's `tools/call` of `count_words` runs the handler with the
/// state `main` registered.
#[test]
fn quickstart_serves_its_own_tools_over_mcp_stdio() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let fixture = Fixture::quickstart();
    let build = fixture.cargo(&["build", "--quiet"]);
    assert!(
        build.status.success(),
        "the quick start must build:\n{}",
        text(&build)
    );
    let binary = target_dir()
        .join(host_tuple())
        .join("debug")
        .join("quickstart");
    let mut child = Command::new(&binary)
        .arg("--serve")
        .current_dir(fixture.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{} starts: {e}", binary.display()));
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let messages = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "build-script-test", "version": "1"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "count_words", "arguments": {"text": "a b\nc"}}}),
    ];
    for m in messages {
        writeln!(stdin, "{m}").expect("the server reads stdin");
    }
    let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
    let mut answer = None;
    for line in stdout.lines() {
        let line = line.expect("stdout reads");
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON-RPC on stdout");
        if v["id"] == 2 {
            answer = Some(v);
            break;
        }
    }
    drop(stdin);
    let status = child.wait().expect("the server exits");
    let answer = answer.expect("tools/call answers");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let result: serde_json::Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("a JSON result ({e}): {answer}"));
    assert_eq!(
        result,
        serde_json::json!({"words": 3, "lines": 2, "measured": 1}),
        "{answer}"
    );
    assert!(
        status.success(),
        "the server exits 0 when stdin ends: {status}"
    );
}

#[test]
fn duplicate_tool_row_fails_the_build_naming_the_tool_and_the_fix() {
    let fixture = Fixture::quickstart();
    let path = fixture.path().join("tools.toml");
    let mut catalog = std::fs::read_to_string(&path).expect("tools.toml reads");
    catalog.push_str(
        r#"
[[tool]]
name = "count_words"
description = "Counts the characters of a text"
visibility = "discoverable"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["text"]
owner = "quickstart"
"#,
    );
    std::fs::write(&path, catalog).expect("tools.toml writes");

    let build = fixture.cargo(&["build", "--quiet"]);
    let output = text(&build);
    assert!(
        !build.status.success(),
        "a duplicate row must fail the build:\n{output}"
    );
    assert!(output.contains("error[E0201]"), "{output}");
    assert!(
        output.contains("`count_words`"),
        "names the tool:\n{output}"
    );
    assert!(
        output.contains("help: rename one of the two tools"),
        "gives the fix:\n{output}"
    );
    assert!(!output.contains("panicked"), "no panic:\n{output}");
}

#[test]
fn misspelt_enum_value_fails_the_build_with_a_did_you_mean() {
    let fixture = Fixture::quickstart();
    fixture.edit_catalog(r#"tier = "silent""#, r#"tier = "silnet""#);

    let build = fixture.cargo(&["build", "--quiet"]);
    let output = text(&build);
    assert!(
        !build.status.success(),
        "an unknown tier must fail the build:\n{output}"
    );
    assert!(output.contains("error[E0102]"), "{output}");
    assert!(output.contains("`silnet`"), "names the value:\n{output}");
    assert!(
        output.contains("did you mean `silent`?"),
        "suggests the fix:\n{output}"
    );
    assert!(!output.contains("panicked"), "no panic:\n{output}");
}
