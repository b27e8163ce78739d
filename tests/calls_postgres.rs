//! `--store postgres://...` on the real binary. A bad or unreachable URL is refused naming the URL
//! without its password and the fix. With a real PostgreSQL server (`TOOLCAT_TEST_POSTGRES_URL`,
//! else one started by `tests/services/postgres`; `skipped: no PostgreSQL (...)` when neither
//! works, a failure with `TOOLCAT_REQUIRE_POSTGRES=1`): a `toolcat call` SIGKILLed while its
//! command runs leaves its record `running` while its replica lease lasts, and another process
//! (`toolcat calls`) judges it `outcome_unknown`, naming the replica, once the lease expired;
//! nothing runs again.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::calls::{Reaped, ShellGroup};

fn toolcat(args: &[&str], cwd: &Path, lease_ms: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(args)
        .current_dir(cwd)
        .env_remove("TOOLCAT_STORE")
        .env("TOOLCAT_LEASE_MS", lease_ms)
        .output()
        .expect("the toolcat binary runs")
}

fn calls_json(url: &str, cwd: &Path) -> Vec<Value> {
    let o = toolcat(&["calls", "--json", "--store", url], cwd, "1000");
    assert!(
        o.status.success(),
        "toolcat calls failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    match serde_json::from_slice(&o.stdout) {
        Ok(Value::Array(rows)) => rows,
        other => panic!("`toolcat calls --json` is not an array: {other:?}"),
    }
}

#[test]
fn a_bad_or_unreachable_postgres_store_is_named_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    for (url, shown, says) in [
        (
            "postgres://toolcat:s3cret@127.0.0.1:1/toolcat",
            "postgres://toolcat:***@127.0.0.1:1/toolcat",
            "cannot connect to the PostgreSQL store",
        ),
        (
            "postgres://toolcat:s3cret@host:notaport/toolcat",
            "postgres://toolcat:***@host:notaport/toolcat",
            "is not a PostgreSQL store URL",
        ),
    ] {
        for command in [
            &["calls", "--store", url][..],
            &[
                "call",
                "list_directory",
                "--store",
                url,
                "--args",
                "{\"path\": \".\"}",
            ],
        ] {
            let o = toolcat(command, dir.path(), "15000");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{command:?}: {err}");
            assert!(
                err.contains(shown) && err.contains(says),
                "{command:?}: {err}"
            );
            assert!(err.contains("--store"), "{command:?}: {err}");
            assert!(!err.contains("s3cret"), "{command:?}: {err}");
        }
    }
    let o = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(["calls", "--store", "postgres://127.0.0.1:1/x"])
        .current_dir(dir.path())
        .env("TOOLCAT_LEASE_MS", "soon")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("TOOLCAT_LEASE_MS is `soon`"), "{err}");
}

#[cfg(unix)]
#[test]
fn toolcat_call_killed_on_a_postgres_store_is_judged_by_another_process_once_its_lease_expired() {
    let Some(server) = crate::pg::Server::or_skip("cli-sigkill") else {
        return;
    };
    let url = server.url.as_str();
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let args = serde_json::json!({
        "command": "echo $$ > shell.pid; echo ran >> marker.txt; exec sleep 60",
        "timeout_secs": 120,
    })
    .to_string();
    let mut child = Reaped(
        Command::new(env!("CARGO_BIN_EXE_toolcat"))
            .args([
                "call",
                "run_command",
                "--approve",
                "--store",
                url,
                "--args",
                &args,
            ])
            .arg("--workspace")
            .arg(&work)
            .current_dir(&work)
            .env_remove("TOOLCAT_STORE")
            .env("TOOLCAT_LEASE_MS", "1000")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("toolcat call starts"),
    );
    let marker = work.join("marker.txt");
    let pid_file = work.join("shell.pid");
    let shell = ShellGroup(pid_file.clone());
    let marker_lines = || {
        std::fs::read_to_string(&marker)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };

    let deadline = Instant::now() + Duration::from_secs(60);
    let running = loop {
        let rows = calls_json(url, dir.path());
        let shell_started = std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n'));
        if let Some(row) = rows
            .iter()
            .find(|r| r["pid"] == child.id() && r["state"] == "running")
        {
            if marker_lines() == 1 && shell_started {
                break row.clone();
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            use std::io::Read as _;
            let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
            panic!("toolcat call ended before it was killed ({status}): {err}");
        }
        assert!(
            Instant::now() < deadline,
            "the call never showed as running: {rows:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(running["pid"], child.id());
    let replica = running["replica"]
        .as_str()
        .expect("a record names its replica");
    assert!(replica.starts_with("replica-"), "{replica}");

    child.kill().expect("SIGKILL");
    let killed = Instant::now();
    assert!(!child.wait().unwrap().success());
    drop(shell);

    // While its replica lived (and renewed its lease), every listing above judged nothing; once
    // the lease expired, another process judges the call `outcome_unknown`. (No lower bound on
    // the time is asserted: the last renewal fell anywhere in the third of a lease before the
    // kill.)
    let id = running["id"].as_str().unwrap().to_string();
    let judged = loop {
        let rows = calls_json(url, dir.path());
        let row = rows
            .iter()
            .find(|r| r["id"] == id.as_str())
            .unwrap()
            .clone();
        if row["state"] != "running" {
            break row;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(20),
            "never judged: {row}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    println!(
        "judged {:.1} s after the SIGKILL (lease 1 s)",
        killed.elapsed().as_secs_f64()
    );
    assert_eq!(judged["state"], "outcome_unknown", "{judged}");
    let detail = judged["detail"].as_str().unwrap();
    assert!(
        detail.contains(replica) && detail.contains("lease expired"),
        "{detail}"
    );

    // Another call on the same database runs on its own; the killed one is not run again.
    let o = toolcat(
        &[
            "call",
            "list_directory",
            "--store",
            url,
            "--args",
            "{\"path\": \".\"}",
            "--workspace",
            work.to_str().unwrap(),
        ],
        &work,
        "1000",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The database may hold other runs' records (a shared `TOOLCAT_TEST_POSTGRES_URL`): this
    // run's are the killed call and those after it.
    let number = |r: &Value| -> u64 { r["id"].as_str().unwrap()["call-".len()..].parse().unwrap() };
    let rows = calls_json(url, dir.path());
    let states: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| number(r) >= number(&running))
        .map(|r| (r["tool"].as_str().unwrap(), r["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        vec![
            ("list_directory", "succeeded"),
            ("run_command", "outcome_unknown")
        ]
    );
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(marker_lines(), 1, "the side effect ran again");
}
