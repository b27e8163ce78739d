//! Durable call records across a SIGKILL: a process killed during a call with a side effect leaves
//! its record `running` or `outcome_unknown` — never `succeeded` — nothing is replayed, and
//! `toolcat calls` shows it. Processes on one store file share each tool's `rate_limit`.
//!
//! The killed process is this test binary run again as a child (`sigkill_child_process`, which does
//! nothing unless `TOOLCAT_TEST_SIGKILL_STORE` is set): it records a call, marks it `running`,
//! performs the side effect (appends a line to a marker file) and then stays busy until killed.
//! `Child::kill` sends SIGKILL on Unix, so the child gets no chance to write anything more.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolcat::{CallState, CallStore, NewCall};

fn toolcat(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(args)
        .current_dir(cwd)
        .env_remove("TOOLCAT_STORE")
        .output()
        .expect("the toolcat binary runs")
}

fn calls_json(store: &Path, cwd: &Path) -> Vec<Value> {
    let o = toolcat(
        &["calls", "--json", "--store", store.to_str().unwrap()],
        cwd,
    );
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

/// A child process that is killed (SIGKILL) and reaped when the test ends, also when an assertion
/// fails first, so no test leaves a process behind.
pub(crate) struct Reaped(pub(crate) std::process::Child);

impl std::ops::Deref for Reaped {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Reaped {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn marker_lines(marker: &Path) -> usize {
    std::fs::read_to_string(marker)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Runs only as the child of `a_call_killed_mid_side_effect_is_never_succeeded_nor_replayed`.
#[test]
#[ignore = "the child process of a SIGKILL test; does nothing unless TOOLCAT_TEST_SIGKILL_STORE is set"]
fn sigkill_child_process() {
    let (Some(store), Some(marker)) = (
        std::env::var_os("TOOLCAT_TEST_SIGKILL_STORE"),
        std::env::var_os("TOOLCAT_TEST_SIGKILL_MARKER"),
    ) else {
        return;
    };
    let store = CallStore::open(Path::new(&store)).expect("the child opens the store");
    let args = serde_json::json!({"path": "marker.txt", "line": "written"});
    let id = store
        .begin(NewCall {
            tool: "append_line",
            arguments: &args,
            effect: "write",
            idempotent: false,
            retry_of: None,
            parent: None,
        })
        .expect("begin");
    store
        .set_state(id, CallState::Running, None)
        .expect("running");
    // The side effect, after the record says `running`.
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&marker)
        .expect("marker file");
    writeln!(f, "written by call {id}").expect("marker line");
    f.sync_all().expect("marker synced");
    // Still "in the call" when the SIGKILL comes; bounded so a lost parent cannot leave it behind.
    std::thread::sleep(Duration::from_secs(60));
    store
        .set_state(id, CallState::Succeeded, None)
        .expect("succeeded");
}

#[cfg(unix)]
#[test]
fn a_call_killed_mid_side_effect_is_never_succeeded_nor_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let store: PathBuf = dir.path().join("state/calls.sqlite");
    let marker = dir.path().join("marker.txt");
    let mut child = Reaped(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "calls::sigkill_child_process",
                "--exact",
                "--ignored",
                "--nocapture",
            ])
            .env("TOOLCAT_TEST_SIGKILL_STORE", &store)
            .env("TOOLCAT_TEST_SIGKILL_MARKER", &marker)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the child test process starts"),
    );
    let child_pid = child.id();

    // Wait until the record says `running` and the side effect happened.
    let deadline = Instant::now() + Duration::from_secs(60);
    let running = loop {
        let rows = if store.exists() {
            calls_json(&store, dir.path())
        } else {
            vec![]
        };
        if let Some(row) = rows.first().filter(|r| r["state"] == "running") {
            if marker_lines(&marker) == 1 {
                break row.clone();
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the child ended before it was killed: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "the call never showed as running: {rows:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(running["pid"], child_pid);
    assert_eq!(running["tool"], "append_line");

    child.kill().expect("SIGKILL"); // `Child::kill` is SIGKILL on Unix
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child was killed: {status}");

    // After the "restart": `toolcat calls` judges the dead process's call and shows it.
    let o = toolcat(&["calls", "--store", store.to_str().unwrap()], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    let id = running["id"].as_str().unwrap();
    let line = table
        .lines()
        .find(|l| l.starts_with(id))
        .unwrap_or_else(|| panic!("`toolcat calls` does not show {id}:\n{table}"));
    assert!(
        line.contains("outcome_unknown") || line.contains("running"),
        "{line}"
    );
    let rows = calls_json(&store, dir.path());
    assert_eq!(rows.len(), 1, "{rows:?}");
    let state = rows[0]["state"].as_str().unwrap();
    assert!(
        state == "outcome_unknown" || state == "running",
        "a killed call must be running or outcome_unknown, never {state}"
    );
    assert_ne!(state, "succeeded");
    // Linux judges the dead process: the call is `outcome_unknown`, with the reason.
    if cfg!(target_os = "linux") {
        assert_eq!(state, "outcome_unknown");
        let detail = rows[0]["detail"].as_str().unwrap_or("");
        assert!(
            detail.contains("ended while the call was `running`"),
            "{detail}"
        );
    }

    // Nothing was replayed: more commands, and the side effect happened exactly once.
    let o = toolcat(
        &[
            "calls",
            "--state",
            "outcome_unknown",
            "--store",
            store.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(o.status.success());
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(marker_lines(&marker), 1, "the side effect ran again");
    let again = calls_json(&store, dir.path());
    assert_eq!(again.len(), 1, "a call was added: {again:?}");
    assert_eq!(again[0]["state"], rows[0]["state"]);
}

/// The process group of the shell `run_command` started, whose leader wrote its pid to this
/// file: it outlives a SIGKILLed `toolcat`, so it is killed when the guard drops (a group that is
/// already gone is ignored).
#[cfg(unix)]
pub(crate) struct ShellGroup(pub(crate) PathBuf);

#[cfg(unix)]
impl Drop for ShellGroup {
    fn drop(&mut self) {
        if let Ok(pgid) = std::fs::read_to_string(&self.0) {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", pgid.trim())])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The acceptance case on the real binary: `toolcat call run_command --approve` goes through the
/// coordinator, which records the call `running` before the shell command starts; the command
/// appends to a marker file and then sleeps; `toolcat` is SIGKILLed; afterwards `toolcat calls`
/// shows the call `outcome_unknown` (or `running` where processes cannot be judged), and later
/// commands on the same store run nothing again.
#[cfg(unix)]
#[test]
fn toolcat_call_killed_during_run_command_is_never_succeeded_nor_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let store = dir.path().join("calls.sqlite");
    let store_s = store.to_str().unwrap();
    // `$$` is the shell's pid, and the leader of the process group `run_command` gives it.
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
                store_s,
                "--args",
                &args,
            ])
            .arg("--workspace")
            .arg(&work)
            .current_dir(&work)
            .env_remove("TOOLCAT_STORE")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("toolcat call starts"),
    );
    let marker = work.join("marker.txt");
    let pid_file = work.join("shell.pid");
    let shell = ShellGroup(pid_file.clone());

    let deadline = Instant::now() + Duration::from_secs(60);
    let running = loop {
        let rows = if store.exists() {
            calls_json(&store, dir.path())
        } else {
            vec![]
        };
        let shell_started = std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n'));
        if let Some(row) = rows.first().filter(|r| r["state"] == "running") {
            if marker_lines(&marker) == 1 && shell_started {
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
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(running["tool"], "run_command");
    assert_eq!(running["pid"], child.id());
    assert_eq!(running["effect"], "destructive");

    child.kill().expect("SIGKILL"); // `Child::kill` is SIGKILL on Unix
    let status = child.wait().unwrap();
    assert!(!status.success(), "toolcat was killed: {status}");
    // The shell outlives `toolcat` (its own process group); stop it so it cannot write again.
    drop(shell);

    let id = running["id"].as_str().unwrap().to_string();
    let rows = calls_json(&store, dir.path());
    assert_eq!(rows.len(), 1, "{rows:?}");
    let state = rows[0]["state"].as_str().unwrap();
    assert!(
        state == "outcome_unknown" || state == "running",
        "a killed call must be running or outcome_unknown, never {state}"
    );
    if cfg!(target_os = "linux") {
        assert_eq!(state, "outcome_unknown");
    }
    let o = toolcat(&["calls", "--store", store_s], dir.path());
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&id) && l.contains(state)),
        "`toolcat calls` does not show {id} as {state}:\n{table}"
    );

    // Another call on the same store: it is recorded on its own, and the killed call is neither
    // replayed nor changed.
    let o = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args([
            "call",
            "list_directory",
            "--store",
            store_s,
            "--args",
            "{\"path\": \".\"}",
        ])
        .arg("--workspace")
        .arg(&work)
        .current_dir(&work)
        .env_remove("TOOLCAT_STORE")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = calls_json(&store, dir.path());
    let states: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap(),
                r["tool"].as_str().unwrap(),
                r["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(states.len(), 2, "{states:?}");
    assert_eq!(states[0].1, "list_directory");
    assert_eq!(states[0].2, "succeeded");
    assert_eq!(states[1], (id.as_str(), "run_command", state));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(marker_lines(&marker), 1, "the side effect ran again");
}

#[test]
fn calls_rejects_an_unknown_state_listing_the_valid_ones() {
    let dir = tempfile::tempdir().unwrap();
    let o = toolcat(&["calls", "--state", "runing"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("did you mean `running`"), "{err}");
    assert!(err.contains("`outcome_unknown`"), "{err}");
}

#[test]
fn calls_on_a_missing_store_lists_nothing_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let o = toolcat(&["calls", "--json"], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "[]");
    assert!(!dir.path().join(".toolcat").exists());
}

#[test]
fn calls_filters_by_state_newest_first_and_reads_toolcat_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let store = CallStore::open(&path).unwrap();
    let args = serde_json::json!({});
    let new = NewCall {
        tool: "read_file",
        arguments: &args,
        effect: "read",
        idempotent: true,
        retry_of: None,
        parent: None,
    };
    let a = store.begin(new).unwrap();
    let b = store.begin(new).unwrap();
    let c = store.begin(new).unwrap();
    for id in [a, c] {
        store.set_state(id, CallState::Running, None).unwrap();
        store
            .set_state(id, CallState::Failed, Some("no such file"))
            .unwrap();
    }
    let o = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(["calls", "--json", "--state", "failed"])
        .current_dir(dir.path())
        .env("TOOLCAT_STORE", &path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    // `b` is still `not_started`: the filter leaves it out.
    assert_eq!(ids, [c.to_string(), a.to_string()]);
    assert!(!ids.contains(&b.to_string().as_str()));
    assert_eq!(rows[0]["detail"], "no such file");
    let o = toolcat(
        &["calls", "--store", path.to_str().unwrap(), "--limit", "1"],
        dir.path(),
    );
    let table = String::from_utf8_lossy(&o.stdout);
    assert_eq!(table.lines().count(), 2, "{table}");
    assert!(
        table.lines().nth(1).unwrap().starts_with(&c.to_string()),
        "{table}"
    );
}

#[test]
fn calls_sanitizes_the_tool_column_and_ends_quietly_on_a_closed_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let store = CallStore::open(&path).unwrap();
    let args = serde_json::json!({});
    let mut new = NewCall {
        tool: "evil\u{1b}[31mred\ttool\n",
        arguments: &args,
        effect: "read",
        idempotent: true,
        retry_of: None,
        parent: None,
    };
    store.begin(new).unwrap();
    new.tool = "read_file";
    for _ in 0..2000 {
        store.begin(new).unwrap();
    }
    drop(store);
    let o = toolcat(
        &[
            "calls",
            "--store",
            path.to_str().unwrap(),
            "--limit",
            "5000",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    let evil = table.lines().last().unwrap();
    assert!(evil.contains("evil [31mred tool"), "{evil}");
    assert!(
        !table.contains('\u{1b}') && !table.contains('\t'),
        "{table}"
    );

    // The reader of `--json` stops after one line: no `Broken pipe` error, exit 0.
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(["calls", "--json", "--limit", "5000", "--store"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 1];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("Broken pipe"), "{err}");
}

#[test]
fn an_empty_toolcat_store_means_the_default_store() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .arg("calls")
        .current_dir(dir.path())
        .env("TOOLCAT_STORE", "")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(".toolcat/calls.sqlite"), "{err}");
}

#[test]
fn a_workspace_that_is_a_file_is_named_as_not_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "x").unwrap();
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools.toml");
    let o = toolcat(
        &[
            "call",
            "--catalog",
            catalog.to_str().unwrap(),
            "--workspace",
            "f.txt",
            "--store",
            "s.sqlite",
            "read_file",
            "--args",
            r#"{"path": "f.txt"}"#,
        ],
        dir.path(),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("workspace `f.txt` is not a directory") && err.contains("--workspace"),
        "{err}"
    );
    assert!(!dir.path().join("s.sqlite").exists());
}

#[test]
fn a_store_this_user_cannot_write_is_listed_read_only_and_runs_no_call() {
    // A directory only its owner may write: run `toolcat` as another user (`nobody`), which needs
    // root and `setpriv`; elsewhere the read-only path is covered by the `records` unit tests.
    let as_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if !as_root || !setpriv {
        eprintln!("skipped: needs root and `setpriv` to run `toolcat` as another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let path = ro.join("s.sqlite");
    let store = CallStore::open(&path).unwrap();
    let args = serde_json::json!({});
    let id = store
        .begin(NewCall {
            tool: "read_file",
            arguments: &args,
            effect: "read",
            idempotent: true,
            retry_of: None,
            parent: None,
        })
        .unwrap();
    drop(store);
    // The binary and the store must be reachable by `nobody`; only `ro` stays unwritable.
    let exe = dir.path().join("toolcat");
    std::fs::copy(env!("CARGO_BIN_EXE_toolcat"), &exe).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    for (p, mode) in [
        (dir.path(), 0o755),
        (ro.as_path(), 0o755),
        (path.as_path(), 0o644),
    ] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&exe)
            .args(args)
            .current_dir(dir.path())
            .env_remove("TOOLCAT_STORE")
            .output()
            .unwrap()
    };
    let o = nobody(&["calls", "--store", "ro/s.sqlite"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("listed read-only"), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains(&id.to_string()));

    let catalog = dir.path().join("tools.toml");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tools.toml"),
        &catalog,
    )
    .unwrap();
    std::fs::set_permissions(&catalog, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = nobody(&[
        "call",
        "--catalog",
        "tools.toml",
        "--workspace",
        ".",
        "--store",
        "ro/s.sqlite",
        "read_file",
        "--args",
        r#"{"path": "tools.toml"}"#,
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    // A store that cannot be written is a runtime failure (3), as an unreachable one is.
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("is read-only") && err.contains("none is run") && err.contains("--store"),
        "{err}"
    );
}

/// The `content` argument of a call record (`arguments` is the JSON object, or its text).
fn content_argument(row: &Value) -> String {
    let arguments = match &row["arguments"] {
        Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        other => other.clone(),
    };
    arguments["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Starts `toolcat call TOOL --approve` on the workspace `work`, one process per `args`, all at
/// once, and waits for them: (exit status success, stderr) per process, in order, and the call
/// records of all of them. Each process has a call store of its own (`DIR/store-I.sqlite`), so
/// what is tested is the workspace's files, not fifty writers sharing one SQLite file.
fn parallel_calls(
    tool: &str,
    args: &[String],
    work: &Path,
    dir: &Path,
) -> (Vec<(bool, String)>, Vec<Value>) {
    let store = |i: usize| dir.join(format!("store-{i}.sqlite"));
    let children: Vec<Reaped> = args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            Reaped(
                Command::new(env!("CARGO_BIN_EXE_toolcat"))
                    .args(["call", tool, "--approve", "--args", a])
                    .arg("--store")
                    .arg(store(i))
                    .arg("--workspace")
                    .arg(work)
                    .current_dir(work)
                    .env_remove("TOOLCAT_STORE")
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("toolcat call starts"),
            )
        })
        .collect();
    let outcomes = children
        .into_iter()
        .map(|mut child| {
            let mut err = String::new();
            use std::io::Read as _;
            if let Some(mut stderr) = child.stderr.take() {
                let _ = stderr.read_to_string(&mut err);
            }
            let status = child.wait().expect("toolcat call ends");
            (status.success(), err)
        })
        .collect();
    let rows = (0..args.len())
        .flat_map(|i| {
            let store = CallStore::open_read_only(&store(i)).expect("the call store opens");
            store.list(None, 10).expect("the records read back")
        })
        .map(|record| serde_json::to_value(record).expect("a record is JSON"))
        .collect();
    (outcomes, rows)
}

/// Many `toolcat call memory_store` processes on one workspace, each adding one memory: every
/// call recorded `succeeded` has its memory on disk (no update is lost across processes), and
/// every process whose memory is not on disk failed, with a record saying why.
#[test]
fn parallel_processes_storing_memories_never_lose_a_succeeded_update() {
    const PROCESSES: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let args: Vec<String> = (0..PROCESSES)
        .map(|i| serde_json::json!({ "content": format!("memory number {i}") }).to_string())
        .collect();
    let (outcomes, rows) = parallel_calls("memory_store", &args, &work, dir.path());

    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(work.join(".toolcat/memory.json")).expect("memory.json"),
    )
    .expect("memory.json is JSON");
    let on_disk: Vec<&str> = file["memories"]
        .as_array()
        .expect("memories")
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(rows.len(), PROCESSES, "one record per process: {rows:?}");
    let mut succeeded = 0;
    for row in &rows {
        let content = content_argument(row);
        match row["state"].as_str().unwrap_or_default() {
            "succeeded" => {
                succeeded += 1;
                assert!(
                    on_disk.contains(&content.as_str()),
                    "`{content}` is recorded succeeded but is not on disk"
                );
            }
            "failed" => {
                assert!(
                    !on_disk.contains(&content.as_str()),
                    "`{content}` is recorded failed but is on disk"
                );
                let detail = row["detail"].as_str().unwrap_or_default();
                assert!(!detail.is_empty(), "a failed record says why: {row}");
            }
            other => panic!("`{content}` ended `{other}`: {row}"),
        }
    }
    assert_eq!(on_disk.len(), succeeded, "{on_disk:?}");
    assert!(succeeded > 0, "no process succeeded: {outcomes:?}");
    for (i, (ok, err)) in outcomes.iter().enumerate() {
        let content = format!("memory number {i}");
        if !on_disk.contains(&content.as_str()) {
            assert!(
                !ok && !err.is_empty(),
                "process {i} lost its update silently"
            );
        }
    }
    let ids: std::collections::HashSet<&str> = file["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(ids.len(), on_disk.len(), "memory ids are unique");
}

/// Many `toolcat call edit_file` processes on one file, each replacing its own word: every edit
/// recorded `succeeded` is on disk, and every other one failed saying why (the file changed
/// after the approval or while the call ran, or another writer held its lock).
#[test]
fn parallel_processes_editing_one_file_never_lose_a_succeeded_edit() {
    const PROCESSES: usize = 20;
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let words: String = (0..PROCESSES).map(|i| format!("word{i}\n")).collect();
    std::fs::write(work.join("notes.txt"), words).unwrap();
    let args: Vec<String> = (0..PROCESSES)
        .map(|i| {
            serde_json::json!({
                "path": "notes.txt",
                "old_string": format!("word{i}\n"),
                "new_string": format!("EDITED{i}\n"),
            })
            .to_string()
        })
        .collect();
    let (outcomes, rows) = parallel_calls("edit_file", &args, &work, dir.path());
    let text = std::fs::read_to_string(work.join("notes.txt")).unwrap();
    assert_eq!(rows.len(), PROCESSES, "{rows:?}");
    let mut succeeded = 0;
    for row in &rows {
        let old = row["arguments"]["old_string"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_default();
        let i: usize = old
            .trim()
            .trim_start_matches("word")
            .parse()
            .expect("index");
        let edited = text.contains(&format!("EDITED{i}\n"));
        match row["state"].as_str().unwrap_or_default() {
            "succeeded" => {
                succeeded += 1;
                assert!(
                    edited,
                    "edit {i} is recorded succeeded but is not on disk:\n{text}"
                );
            }
            state => {
                assert!(!edited, "edit {i} is on disk but recorded `{state}`");
                let detail = row["detail"].as_str().unwrap_or_default();
                assert!(
                    detail.contains("changed while the call ran")
                        || detail.contains("changed after `edit_file` was approved")
                        || detail.contains("is being written by another call"),
                    "edit {i} failed without saying why: {row}"
                );
            }
        }
    }
    assert!(succeeded > 0, "no edit succeeded: {outcomes:?}");
    let on_disk = text.matches("EDITED").count();
    assert_eq!(on_disk, succeeded, "{text}");
}

/// A workspace `ws` with `a.txt` beside an empty folder `out`, both in a fresh temporary dir.
fn workspace_beside_outside() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (ws, out) = (dir.path().join("ws"), dir.path().join("out"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(ws.join("a.txt"), "hi\n").unwrap();
    (dir, ws, out)
}

fn read_a_txt(ws: &Path) -> Output {
    toolcat(&["call", "read_file", "--args", r#"{"path":"a.txt"}"#], ws)
}

fn assert_refused_as_link(o: &Output, link: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains(link), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert!(err.contains("--store PATH"), "{err}");
}

#[test]
fn the_default_store_never_follows_a_toolcat_dir_that_is_a_link() {
    let (_dir, ws, out) = workspace_beside_outside();
    std::os::unix::fs::symlink("../out", ws.join(".toolcat")).unwrap();
    let o = read_a_txt(&ws);
    assert_refused_as_link(&o, "`.toolcat`");
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        0,
        "nothing made outside"
    );
    // Listing refuses it too, and creates nothing.
    let o = toolcat(&["calls"], &ws);
    assert_refused_as_link(&o, "`.toolcat`");
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        0,
        "nothing made outside"
    );
}

#[test]
fn the_default_store_never_follows_a_link_at_its_file_or_sqlites_files_beside_it() {
    for name in [
        "calls.sqlite",
        "calls.sqlite-wal",
        "calls.sqlite-shm",
        "calls.sqlite-journal",
    ] {
        let (_dir, ws, out) = workspace_beside_outside();
        std::fs::create_dir(ws.join(".toolcat")).unwrap();
        let created = out.join("created.db");
        std::os::unix::fs::symlink(&created, ws.join(".toolcat").join(name)).unwrap();
        let o = read_a_txt(&ws);
        assert_refused_as_link(&o, &format!("`.toolcat/{name}`"));
        assert!(!created.exists(), "{name}: a file was created outside");
    }
}

#[test]
fn a_store_given_as_a_symbolic_link_is_refused() {
    let (_dir, ws, out) = workspace_beside_outside();
    let created = out.join("created.db");
    let link = ws.join("store.sqlite");
    std::os::unix::fs::symlink(&created, &link).unwrap();
    let o = toolcat(
        &[
            "call",
            "read_file",
            "--store",
            link.to_str().unwrap(),
            "--args",
            r#"{"path":"a.txt"}"#,
        ],
        &ws,
    );
    assert_refused_as_link(&o, "store.sqlite");
    assert!(!created.exists(), "a file was created outside");
}

#[test]
fn an_absolute_store_in_a_directory_reached_through_a_link_is_opened() {
    // The host names the store; the directory of an absolute path is its choice (a home or
    // `/tmp` reached through a link): only a link at the store file itself is refused.
    let (_dir, ws, out) = workspace_beside_outside();
    let via = out.parent().unwrap().join("via");
    std::os::unix::fs::symlink(&out, &via).unwrap();
    let store = via.join("calls.sqlite");
    let o = toolcat(
        &[
            "call",
            "read_file",
            "--store",
            store.to_str().unwrap(),
            "--args",
            r#"{"path":"a.txt"}"#,
        ],
        &ws,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.join("calls.sqlite").is_file(),
        "the store is in the linked directory"
    );
}

#[test]
fn the_default_store_is_still_created_in_a_plain_workspace() {
    let (_dir, ws, _out) = workspace_beside_outside();
    let o = read_a_txt(&ws);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(ws.join(".toolcat/calls.sqlite").is_file());
}

/// `toolcat call TOOL --approve --args ARGS` on the workspace `work`, recording in `store`.
fn call_in(work: &Path, store: &Path, tool: &str, args: &Value) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(["call", tool, "--approve", "--args", &args.to_string()])
        .arg("--store")
        .arg(store)
        .arg("--workspace")
        .arg(work)
        .current_dir(work)
        .env_remove("TOOLCAT_STORE")
        .output()
        .expect("toolcat call runs")
}

fn sha256_of(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    let hex: String = sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

#[test]
fn calls_show_the_files_write_file_and_edit_file_changed() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let store = dir.path().join("calls.sqlite");
    let written = "one\ntwo\nthree\n";
    let o = call_in(
        &work,
        &store,
        "write_file",
        &serde_json::json!({"path": "notes/a.txt", "content": written}),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = call_in(
        &work,
        &store,
        "edit_file",
        &serde_json::json!({"path": "notes/a.txt", "old_string": "two\n", "new_string": "TWO\n"}),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // An edit that fails changes nothing and reports no change.
    let o = call_in(
        &work,
        &store,
        "edit_file",
        &serde_json::json!({"path": "notes/a.txt", "old_string": "absent text", "new_string": "x"}),
    );
    assert!(!o.status.success());
    let edited = "one\nTWO\nthree\n";
    assert_eq!(
        std::fs::read_to_string(work.join("notes/a.txt")).unwrap(),
        edited
    );

    let rows = calls_json(&store, dir.path());
    let tools: Vec<&str> = rows.iter().map(|r| r["tool"].as_str().unwrap()).collect();
    assert_eq!(tools, ["edit_file", "edit_file", "write_file"], "{rows:?}");
    assert_eq!(rows[0]["state"], "failed");
    assert_eq!(rows[0]["changes"], serde_json::json!([]));
    assert_eq!(rows[0]["changes_omitted"], 0);

    let write = &rows[2]["changes"];
    assert_eq!(write.as_array().map(Vec::len), Some(1), "{write}");
    assert_eq!(write[0]["path"], "notes/a.txt");
    assert_eq!(write[0]["before"], "absent");
    assert_eq!(write[0]["after"], sha256_of(written.as_bytes()));
    let diff = write[0]["diff"].as_str().unwrap();
    assert!(
        diff.starts_with("--- a/notes/a.txt\n+++ b/notes/a.txt\n@@ -0,0 +1,3 @@\n+one\n"),
        "{diff}"
    );
    assert_eq!(write[0]["diff_truncated"], false);
    assert_eq!(write[0]["diff_reference"], Value::Null);

    let edit = &rows[1]["changes"];
    assert_eq!(rows[1]["state"], "succeeded");
    assert_eq!(edit[0]["before"], sha256_of(written.as_bytes()));
    assert_eq!(edit[0]["after"], sha256_of(edited.as_bytes()));
    let diff = edit[0]["diff"].as_str().unwrap();
    assert!(diff.contains("\n-two\n+TWO\n"), "{diff}");
    assert!(diff.contains("\n one\n"), "context lines: {diff}");

    // The text listing shows a line per change under its call.
    let o = toolcat(&["calls", "--store", store.to_str().unwrap()], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = table.lines().collect();
    let write_line = lines
        .iter()
        .position(|l| l.contains("write_file"))
        .unwrap_or_else(|| panic!("{table}"));
    let shown = lines[write_line + 1].trim();
    let after = sha256_of(written.as_bytes());
    assert_eq!(
        shown,
        format!("changed notes/a.txt: absent → {}…", &after[..18]),
        "{table}"
    );
    let changed = lines.iter().filter(|l| l.contains("changed ")).count();
    assert_eq!(changed, 2, "{table}");
}

/// Three `toolcat call` processes at a time, twice, on one `--store` file share one
/// `rate_limit = "2/min"`: exactly two calls run, every other one is refused (exit 3, a runtime refusal) saying when
/// to retry, and the refusals leave no record. (Each process's in-memory limiter alone would
/// grant all six.)
#[test]
fn three_call_processes_on_one_store_respect_one_rate_limit() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "a note\n").unwrap();
    // The reference catalog with `read_file` limited to 2 calls a minute.
    let mut doc: toml_edit::DocumentMut =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tools.toml"))
            .unwrap()
            .parse()
            .unwrap();
    let rows = doc["tool"].as_array_of_tables_mut().unwrap();
    let row = rows
        .iter_mut()
        .find(|t| t["name"].as_str() == Some("read_file"))
        .expect("the reference catalog declares read_file");
    row["rate_limit"] = toml_edit::value("2/min");
    let catalog = dir.path().join("tools.toml");
    std::fs::write(&catalog, doc.to_string()).unwrap();
    let store = dir.path().join("calls.sqlite");

    let mut outcomes = Vec::new();
    for _round in 0..2 {
        let children: Vec<Reaped> = (0..3)
            .map(|_| {
                Reaped(
                    Command::new(env!("CARGO_BIN_EXE_toolcat"))
                        .arg("call")
                        .arg("--catalog")
                        .arg(&catalog)
                        .arg("--store")
                        .arg(&store)
                        .arg("--workspace")
                        .arg(&work)
                        .args(["read_file", "--args", r#"{"path": "notes.txt"}"#])
                        .current_dir(&work)
                        .env_remove("TOOLCAT_STORE")
                        .stdout(Stdio::null())
                        .stderr(Stdio::piped())
                        .spawn()
                        .expect("toolcat call starts"),
                )
            })
            .collect();
        for mut child in children {
            let mut err = String::new();
            use std::io::Read as _;
            if let Some(mut stderr) = child.stderr.take() {
                let _ = stderr.read_to_string(&mut err);
            }
            let status = child.wait().expect("toolcat call ends");
            outcomes.push((status.code(), err));
        }
    }
    let ran = outcomes.iter().filter(|(code, _)| *code == Some(0)).count();
    assert_eq!(ran, 2, "exactly the limit runs: {outcomes:?}");
    for (code, err) in outcomes.iter().filter(|(code, _)| *code != Some(0)) {
        assert_eq!(*code, Some(3), "{err}");
        assert!(
            err.contains("tool `read_file` is over its rate limit of 2 calls per 60 s")
                && err.contains("nothing ran"),
            "{err}"
        );
        let retry_ms: u64 = err
            .split("retry in ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("the refusal says when to retry: {err}"));
        assert!((1..=30_000).contains(&retry_ms), "{err}");
    }
    let rows = calls_json(&store, &work);
    assert_eq!(rows.len(), 2, "refusals leave no record: {rows:?}");
    assert!(rows.iter().all(|r| r["state"] == "succeeded"), "{rows:?}");
}
