//! The Code Mode measurement stays honest: `code-mode` (this crate's binary) on every task of
//! `tests/fixtures/code_mode/tasks.json` must give each task's expected answer in every
//! conversation (it exits 1 otherwise), the direct baseline must take exactly the task's
//! `direct_steps_min` steps (never more: an inflated baseline would flatter Code Mode), and Code
//! Mode exactly two. The overhead measurement runs small, to check that it runs. Needs `git` and
//! `bash`, as `tests/code_mode_tasks.rs` does.

use std::process::Command;

use serde_json::Value;

#[test]
fn every_task_answers_as_expected_and_the_baseline_takes_its_minimum_steps() {
    let out = Command::new(env!("CARGO_BIN_EXE_code-mode"))
        .args(["--json", "--calls", "10", "--repeat", "1"])
        .output()
        .expect("code-mode runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("code-mode printed no JSON ({e}); stderr: {stderr}"));
    let tasks = report["tasks"].as_array().expect("a task list");
    for task in tasks {
        let id = &task["id"];
        for (conversation, matched) in [
            ("direct", "direct_matched"),
            ("direct_searched", "direct_searched_matched"),
            ("code_mode", "code_mode_matched"),
        ] {
            assert_eq!(
                task[matched], true,
                "{id} ({conversation}) did not answer as expected: {}",
                task[conversation]
            );
        }
        assert_eq!(
            task["direct"]["steps"].as_array().map(Vec::len),
            task["direct_steps_min"].as_u64().map(|n| n as usize),
            "{id}: the direct baseline must take the task's direct_steps_min steps"
        );
        assert_eq!(
            task["code_mode"]["steps"].as_array().map(Vec::len),
            Some(2),
            "{id}: Code Mode takes two steps, the program and the answer"
        );
    }
    assert!(
        out.status.success(),
        "code-mode exited with {}; stderr: {stderr}",
        out.status
    );
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(toolcat_bench::code_mode::default_fixtures().join("tasks.json"))
            .expect("tasks.json is readable"),
    )
    .expect("tasks.json is JSON");
    assert_eq!(
        tasks.len(),
        fixture["tasks"].as_array().map_or(0, Vec::len),
        "every task of tasks.json runs"
    );
    assert!(report["scripted"]
        .as_str()
        .is_some_and(|s| s.contains("scripted")));
    assert!(report["overhead"]["direct_us"].as_f64().is_some());
}
