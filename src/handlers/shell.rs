//! `run_command`: a shell command in the workspace, with a timeout and bounded output.
//!
//! The command runs as `sh -c COMMAND` (`cmd /C` on Windows) with the workspace (or a directory
//! inside it) as working directory, no standard input, and an allowlisted part of the agent's
//! environment ([`command_env`]). Each output
//! stream keeps its first [`HEAD_BYTES`] and last [`TAIL_BYTES`] bytes and drops the middle,
//! marked `[… N bytes omitted …]`: the start shows what ran, the end shows how it ended. At the
//! timeout the whole process group is killed and the output so far is returned with
//! `timed_out = true`.
//!
//! Environment: the command does not inherit the agent's environment, where API tokens and other
//! secrets usually live. It gets only the variables named by [`DEFAULT_COMMAND_ENV`] (`PATH`,
//! `HOME`, `USER`, `LOGNAME`, `SHELL`, `TERM`, `LANG`, `LANGUAGE`, `LC_*`, `TZ`, `TMPDIR`) and
//! those the host names in the environment variable [`COMMAND_ENV_VAR`] (`TOOLCAT_COMMAND_ENV`:
//! names separated by commas or spaces, a trailing `*` matching a prefix, e.g.
//! `CARGO_HOME,RUSTUP_*`), each with the agent's value when the agent has it.
//!
//! What it can reach: the working directory and the environment are the only confinement. A
//! shell command can read, change and run anything the agent's user can, inside the workspace or
//! not, and reach the network; an allowlist does not hide files (a token in `~/.config` is
//! readable). That is why the tool is `gated` and `destructive` and never exposed over MCP
//! (`tools.toml`).

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};
use toolcat::{ToolContext, ToolError};

use super::failed;
use toolcat_tools::workspace::Workspace;

/// Bytes kept from the start of each output stream: 8 KiB.
pub const HEAD_BYTES: usize = 8 * 1024;
/// Bytes kept from the end of each output stream: 24 KiB.
pub const TAIL_BYTES: usize = 24 * 1024;
/// Timeout when none is given, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// Longest timeout a call may ask for, in seconds.
pub const MAX_TIMEOUT_SECS: u64 = 600;
/// The variables a command inherits from the agent's environment without being named in
/// [`COMMAND_ENV_VAR`]: what shells and common tools need to find programs, the home directory,
/// the user, the terminal, the locale, the time zone and the temporary directory. A trailing `*`
/// matches a prefix.
#[cfg(not(windows))]
pub const DEFAULT_COMMAND_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR",
];
/// The variables a command inherits from the agent's environment without being named in
/// [`COMMAND_ENV_VAR`]; on Windows also what `cmd` and programs need to start.
#[cfg(windows)]
pub const DEFAULT_COMMAND_ENV: &[&str] = &[
    "PATH",
    "PATHEXT",
    "SYSTEMROOT",
    "WINDIR",
    "COMSPEC",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "USERNAME",
    "HOMEDRIVE",
    "HOMEPATH",
    "LANG",
    "TZ",
];
/// The environment variable in which the host names more variables for commands to inherit
/// (commas or spaces between names, a trailing `*` for a prefix).
pub const COMMAND_ENV_VAR: &str = "TOOLCAT_COMMAND_ENV";

/// The environment of a command: the variables of `agent` (name, value) admitted by
/// [`DEFAULT_COMMAND_ENV`] or by `extra` (the value of [`COMMAND_ENV_VAR`]), in `agent`'s order.
/// A name is admitted when it equals an entry or starts with an entry's part before a trailing
/// `*`; names that are not UTF-8 are admitted only by an exact match of their lossy form.
pub fn command_env(
    agent: impl IntoIterator<Item = (OsString, OsString)>,
    extra: Option<&OsStr>,
) -> Vec<(OsString, OsString)> {
    let extra = extra
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_default();
    let patterns: Vec<&str> = DEFAULT_COMMAND_ENV
        .iter()
        .copied()
        .chain(extra.split([',', ' ', '\t', '\n']).map(str::trim))
        .filter(|p| !p.is_empty() && *p != "*")
        .collect();
    let admitted = |name: &str| {
        patterns.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *p,
        })
    };
    agent
        .into_iter()
        .filter(|(name, _)| admitted(&name.to_string_lossy()))
        .collect()
}

/// The start and end of a byte stream whose middle may be dropped.
#[derive(Debug)]
pub(crate) struct Capture {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
}

impl Capture {
    /// Keeps at most `head_cap` leading and `tail_cap` trailing bytes.
    pub(crate) fn new(head_cap: usize, tail_cap: usize) -> Capture {
        Capture {
            head_cap,
            tail_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    /// Appends a chunk.
    pub(crate) fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len();
        let room = self.head_cap - self.head.len();
        let into_head = room.min(chunk.len());
        self.head.extend_from_slice(&chunk[..into_head]);
        chunk = &chunk[into_head..];
        if self.tail_cap == 0 {
            return;
        }
        if chunk.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + chunk.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(chunk);
        }
    }

    /// Bytes dropped from the middle.
    pub(crate) fn omitted(&self) -> usize {
        self.total - self.head.len() - self.tail.len()
    }

    /// The kept text (invalid UTF-8 replaced), with a marker where bytes were dropped.
    pub(crate) fn text(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let tail = String::from_utf8_lossy(&tail);
        match self.omitted() {
            0 => format!("{head}{tail}"),
            n => format!("{head}\n[… {n} bytes omitted …]\n{tail}"),
        }
    }
}

/// Reads `stream` to its end into `capture`.
async fn drain(mut stream: impl AsyncRead + Unpin, capture: Arc<Mutex<Capture>>) {
    let mut buf = vec![0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Ok(mut c) = capture.lock() {
                    c.push(&buf[..n]);
                }
            }
        }
    }
}

/// Arguments of `run_command`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCommandArgs {
    /// The command line, run by `sh -c`; pipes, redirections and `&&` work.
    pub command: String,
    /// Working directory, relative to the workspace root; the root when omitted.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Seconds before the command is killed; 120 when omitted, at most 600.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600))]
    pub timeout_secs: Option<u64>,
}

/// Result of `run_command`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunCommandOutput {
    /// Exit status; absent when the command was killed (timeout or signal).
    pub exit_code: Option<i32>,
    /// The command ran past its timeout and was killed.
    pub timed_out: bool,
    /// Standard output (first 8 KiB and last 24 KiB when longer).
    pub stdout: String,
    /// Standard error (first 8 KiB and last 24 KiB when longer).
    pub stderr: String,
    /// Bytes dropped from the middle of standard output.
    pub stdout_omitted_bytes: usize,
    /// Bytes dropped from the middle of standard error.
    pub stderr_omitted_bytes: usize,
    /// Wall-clock time, in milliseconds.
    pub duration_ms: u64,
}

/// Runs a shell command.
#[toolcat::tool]
pub async fn run_command(
    args: RunCommandArgs,
    ctx: &ToolContext,
) -> Result<RunCommandOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    if args.command.trim().is_empty() {
        return Err(failed("`command` is empty; pass the command line to run"));
    }
    let cwd = ws.existing(args.cwd.as_deref().unwrap_or("."))?;
    if !cwd.is_dir() {
        return Err(failed(format!(
            "`cwd` `{}` is not a directory",
            args.cwd.as_deref().unwrap_or(".")
        )));
    }
    let timeout = Duration::from_secs(
        args.timeout_secs
            .unwrap_or(DEFAULT_TIMEOUT_SECS)
            .clamp(1, MAX_TIMEOUT_SECS),
    );
    run(&args.command, &cwd, timeout).await
}

/// Runs `command` in `cwd` under `timeout`; the part of `run_command` after argument checks.
pub(crate) async fn run(
    command: &str,
    cwd: &std::path::Path,
    timeout: Duration,
) -> Result<RunCommandOutput, ToolError> {
    let mut cmd = shell_command(command);
    let env = command_env(
        std::env::vars_os(),
        std::env::var_os(COMMAND_ENV_VAR).as_deref(),
    );
    cmd.env_clear()
        .envs(env)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so a timeout can kill everything the command started.
    #[cfg(unix)]
    cmd.process_group(0);
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| ToolError::io("cannot start the shell", e))?;
    let stdout = Arc::new(Mutex::new(Capture::new(HEAD_BYTES, TAIL_BYTES)));
    let stderr = Arc::new(Mutex::new(Capture::new(HEAD_BYTES, TAIL_BYTES)));
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(tokio::spawn(drain(out, Arc::clone(&stdout))));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(tokio::spawn(drain(err, Arc::clone(&stderr))));
    }
    let (exit_code, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => {
            let status = status.map_err(|e| ToolError::io("cannot wait for the command", e))?;
            (status.code(), false)
        }
        Err(_) => {
            kill_group(&mut child).await;
            (None, true)
        }
    };
    // Output still buffered in the pipes arrives shortly; a background process that keeps a
    // pipe open must not hold the call, so the readers get a short grace period.
    for reader in readers {
        let abort = reader.abort_handle();
        if tokio::time::timeout(Duration::from_millis(500), reader)
            .await
            .is_err()
        {
            abort.abort();
        }
    }
    let take = |c: &Arc<Mutex<Capture>>| match c.lock() {
        Ok(c) => (c.text(), c.omitted()),
        Err(_) => (String::new(), 0),
    };
    let (stdout, stdout_omitted_bytes) = take(&stdout);
    let (stderr, stderr_omitted_bytes) = take(&stderr);
    Ok(RunCommandOutput {
        exit_code,
        timed_out,
        stdout,
        stderr,
        stdout_omitted_bytes,
        stderr_omitted_bytes,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

#[cfg(unix)]
fn shell_command(command: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(command);
    cmd
}

#[cfg(not(unix))]
fn shell_command(command: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("cmd");
    cmd.arg("/C").arg(command);
    cmd
}

/// Kills the child's process group (Unix) or the child (elsewhere), then reaps it.
async fn kill_group(child: &mut tokio::process::Child) {
    #[cfg(unix)]
    if let Some(pid) = child.id() {
        // `kill -KILL -- -PGID` reaches the shell and everything it started.
        let _ = tokio::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .status()
            .await;
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Capture::new(4, 3);
        c.push(b"ab");
        assert_eq!((c.text(), c.omitted()), ("ab".to_string(), 0));
        c.push(b"cdefgh");
        c.push(b"ij");
        assert_eq!(c.omitted(), 3);
        assert_eq!(c.text(), "abcd\n[… 3 bytes omitted …]\nhij");
        let mut big = Capture::new(2, 2);
        big.push(b"0123456789");
        assert_eq!(big.text(), "01\n[… 6 bytes omitted …]\n89");
    }

    #[cfg(unix)]
    #[test]
    fn command_env_keeps_the_allowlist_and_what_the_host_names() {
        let agent: Vec<(OsString, OsString)> = [
            ("PATH", "/usr/bin"),
            ("GITHUB_TOKEN", "secret"),
            ("LC_ALL", "C"),
            ("HOME", "/home/u"),
            ("CARGO_HOME", "/c"),
            ("RUSTUP_HOME", "/r"),
            ("RUSTUP_TOOLCHAIN", "stable"),
            ("AWS_SECRET_ACCESS_KEY", "k"),
        ]
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
        let names = |extra: Option<&str>| -> Vec<String> {
            command_env(agent.clone(), extra.map(OsStr::new))
                .into_iter()
                .map(|(k, _)| k.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(names(None), ["PATH", "LC_ALL", "HOME"]);
        assert_eq!(
            names(Some("CARGO_HOME, RUSTUP_*")),
            [
                "PATH",
                "LC_ALL",
                "HOME",
                "CARGO_HOME",
                "RUSTUP_HOME",
                "RUSTUP_TOOLCHAIN"
            ]
        );
        // A lone `*` would hand over everything: it is ignored.
        assert_eq!(names(Some("*")), ["PATH", "LC_ALL", "HOME"]);
    }

    fn args(command: &str) -> RunCommandArgs {
        RunCommandArgs {
            command: command.into(),
            cwd: None,
            timeout_secs: None,
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn runs_in_the_workspace_and_captures_both_streams() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        let ctx = ToolContext::new(dir.path());
        let out = run_command(args("pwd; echo err >&2; exit 3"), &ctx)
            .await
            .expect("run");
        assert_eq!(out.exit_code, Some(3));
        assert!(!out.timed_out);
        let pwd = std::fs::canonicalize(dir.path()).expect("canonical");
        assert_eq!(out.stdout.trim_end(), pwd.to_string_lossy());
        assert_eq!(out.stderr, "err\n");

        let mut in_sub = args("basename \"$PWD\"");
        in_sub.cwd = Some("sub".into());
        let sub = run_command(in_sub, &ctx).await.expect("run in sub");
        assert_eq!(sub.stdout, "sub\n");

        let mut escape = args("true");
        escape.cwd = Some("..".into());
        assert!(matches!(
            run_command(escape, &ctx).await,
            Err(ToolError::OutsideWorkspace { .. })
        ));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn long_output_is_cut_in_the_middle() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ctx = ToolContext::new(dir.path());
        let out = run_command(args("head -c 100000 /dev/zero | tr '\\0' x"), &ctx)
            .await
            .expect("run");
        assert_eq!(out.stdout_omitted_bytes, 100_000 - HEAD_BYTES - TAIL_BYTES);
        assert!(out.stdout.contains("bytes omitted"));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn timeout_kills_the_command_and_its_children() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ctx = ToolContext::new(dir.path());
        let mut slow = args("echo started; sleep 30 & sleep 30");
        slow.timeout_secs = Some(1);
        let started = Instant::now();
        let out = run_command(slow, &ctx).await.expect("run");
        assert!(out.timed_out);
        assert_eq!(out.exit_code, None);
        assert_eq!(out.stdout, "started\n");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
