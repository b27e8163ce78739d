//! Code Mode through the `toolcat` binary: scripted model steps (a replay, no real model) drive
//! `toolcat session --preset code_scripted`, whose `run_code` programs run in the QuickJS engine
//! (`toolcat-quickjs`, feature `code-mode`) over the Code Mode fixture workspace.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

/// A copy of `tests/fixtures/code_mode/workspace` in a temporary directory.
fn workspace() -> tempfile::TempDir {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/code_mode/workspace"),
        dir.path(),
    );
    dir
}

fn toolcat(args: &[&str], cwd: &Path, stdin: &str) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(args)
        .current_dir(cwd)
        .env_remove("TOOLCAT_CATALOG")
        .env_remove("TOOLCAT_STORE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("toolcat starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Replays `programs` as one turn of `run_code` steps and returns each step's answer (the
/// program's JSON answer) in order.
fn replay(dir: &Path, store: Option<&Path>, programs: &[&str]) -> Vec<Value> {
    let mut input = json!({"user": "answer with one program"}).to_string() + "\n";
    for code in programs {
        input += &(json!({"call": "run_code", "args": {"code": code}}).to_string() + "\n");
    }
    let mut args = vec![
        "session",
        "--preset",
        "code_scripted",
        "--no-preselect",
        "--servers",
        "none",
        "--json",
    ];
    let store_arg;
    if let Some(store) = store {
        store_arg = store.display().to_string();
        args.extend(["--store", &store_arg]);
    }
    let o = toolcat(&args, dir, &input);
    assert!(
        o.status.success(),
        "toolcat session failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|l| l.get("step").is_some())
        .map(|step| {
            let call = &step["calls"][0];
            assert_eq!(call["name"], "run_code");
            serde_json::from_str(call["result"].as_str().unwrap()).expect("a JSON answer")
        })
        .collect()
}

#[test]
fn a_replayed_program_of_three_reads_is_one_record_with_three_linked_inner_calls() {
    let dir = workspace();
    let store = dir.path().join("records/calls.sqlite");
    let answers = replay(
        dir.path(),
        Some(&store),
        &[r#"
const readme = await tools.read_file({path: "README.md"});
const todos = await tools.grep({pattern: "TODO:", path: "src", output: "files"});
const rust = await tools.glob({pattern: "src/**/*.rs"});
console.log("read", readme.total_lines, "lines");
return {
  readme_lines: readme.total_lines,
  todo_files: todos.files.length,
  rust_files: rust.matches.length,
};"#],
    );
    assert_eq!(answers.len(), 1);
    let a = &answers[0];
    assert_eq!(a["calls"], 3, "{a}");
    assert_eq!(a["console"], json!(["read 16 lines"]), "{a}");
    assert_eq!(a["result"]["readme_lines"], 16, "{a}");
    assert_eq!(a["result"]["rust_files"], 31, "{a}");
    assert!(a["result"]["todo_files"].as_u64().unwrap() > 0, "{a}");

    let o = toolcat(
        &["calls", "--store", &store.display().to_string(), "--json"],
        dir.path(),
        "",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let records: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let program: Vec<&Value> = records.iter().filter(|r| r["tool"] == "run_code").collect();
    assert_eq!(program.len(), 1, "{records:#?}");
    assert_eq!(program[0]["state"], "succeeded");
    assert_eq!(program[0]["parent"], Value::Null);
    let mut inner: Vec<&str> = records
        .iter()
        .filter(|r| r["parent"] == program[0]["id"])
        .map(|r| {
            assert_eq!(r["state"], "succeeded", "{r}");
            r["tool"].as_str().unwrap()
        })
        .collect();
    inner.sort_unstable();
    assert_eq!(inner, ["glob", "grep", "read_file"]);
    assert_eq!(records.len(), 4, "{records:#?}");

    // The text listing names the program each inner call was made from.
    let o = toolcat(
        &["calls", "--store", &store.display().to_string()],
        dir.path(),
        "",
    );
    let text = String::from_utf8(o.stdout).unwrap();
    let program_id = program[0]["id"].as_str().unwrap();
    assert_eq!(
        text.matches(&format!("from {program_id}")).count(),
        3,
        "{text}"
    );
}

#[test]
fn hostile_programs_end_with_a_clear_error_run_nothing_and_leave_the_session_healthy() {
    let dir = workspace();
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"return await tools.write_file({path: "pwned.txt", content: "x"});"#,
            "exception",
            "is no function a program may call",
        ),
        (
            r#"return await tools["run_command"]({command: "touch pwned.txt"});"#,
            "exception",
            "is no function a program may call",
        ),
        (
            r#"return require("fs").writeFileSync("pwned.txt", "x");"#,
            "exception",
            "ReferenceError: require is not defined",
        ),
        (
            r#"return await import("fs");"#,
            "exception",
            "could not load module 'fs'",
        ),
        (
            r#"return await fetch("http://127.0.0.1:9/");"#,
            "exception",
            "ReferenceError: fetch is not defined",
        ),
        (
            "while (true) {}",
            "time-limit",
            "the program ran for more than 2 s",
        ),
        (
            "const b = new ArrayBuffer(2 ** 30); return b.byteLength;",
            "out-of-memory",
            "more than 64 MiB of memory",
        ),
        (
            "function f() { return f() + 1; } return f();",
            "stack-overflow",
            "call stack grew past",
        ),
        (
            "Object.prototype.toJSON = () => { throw new Error('no'); }; return {a: 1};",
            "output-too-large",
            "cannot be converted to JSON",
        ),
    ];
    let mut programs: Vec<&str> = cases.iter().map(|c| c.0).collect();
    // After all of them, the same session still runs a program.
    programs.push(r#"return (await tools.read_file({path: "README.md"})).total_lines;"#);
    let answers = replay(dir.path(), None, &programs);
    assert_eq!(answers.len(), programs.len());
    for ((code, kind, message), a) in cases.iter().zip(&answers) {
        assert_eq!(a["error"], *kind, "{code}: {a}");
        let text = a["message"].as_str().unwrap();
        assert!(text.contains(message), "{code}: {text}");
        assert_eq!(a["calls"], 0, "{code}: no tool ran: {a}");
    }
    assert_eq!(answers.last().unwrap()["result"], 16);
    assert!(!dir.path().join("pwned.txt").exists());
}
