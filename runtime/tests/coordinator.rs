//! The execution coordinator on a small catalog whose handlers really read and write files in a
//! temporary workspace: approval of the concrete operation, re-verification, denial, scope,
//! scheduling of 100 concurrent calls, rate limits, cancellation, records, retry, the archive,
//! argument names outside the schema, per-tool timeouts and the changes a handler reports.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value};
use sha2::Digest as _;
use toolcat::archive::{ArchiveError, ArchiveOwner, ResultArchive};
use toolcat::records::MAX_CHANGE_DIFF_BYTES;
use toolcat::{
    erase, fingerprint_path, Access, ApprovalRequest, Approver, BoxFuture, CallError, CallRequest,
    CallState, CallStore, CancellationToken, Catalog, Change, Coordinator, ErasedHandler, Target,
    ToolContext, ToolError, ToolHandler, ToolIndex,
};

const CATALOG: &str = r#"
[toolset.notes]
description = "Notes in the workspace"

[[tool]]
name = "read_note"
description = "Reads a note."
visibility = "inline"
tier = "silent"
effect = "read"
idempotent = true
exposure = "read-only"
toolsets = ["notes"]
owner = "tests"

[[tool]]
name = "write_note"
description = "Replaces a note."
visibility = "inline"
tier = "gated"
effect = "write"
idempotent = true
exposure = "full"
toolsets = ["notes"]
owner = "tests"

[[tool]]
name = "append_note"
description = "Appends lines to notes."
visibility = "inline"
tier = "gated"
effect = "write"
exposure = "full"
toolsets = ["notes"]
owner = "tests"

[[tool]]
name = "wait_read"
description = "Reads after a wait."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["notes"]
owner = "tests"

[[tool]]
name = "limited_read"
description = "A read with a tight rate limit."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
rate_limit = "2/min"
toolsets = ["notes"]
owner = "tests"

[[tool]]
name = "running_calls"
description = "Counts the calls the store has running."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["notes"]
owner = "tests"

[[tool]]
name = "big_read"
description = "Returns a large text."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["notes"]
owner = "tests"

[[tool]]
name = "edit_note"
description = "Replaces text in a note; every argument optional, extra ones not forbidden."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["notes"]
owner = "tests"

[[tool]]
name = "slow_write"
description = "Appends a line, then stays a while."
visibility = "inline"
tier = "gated"
effect = "write"
exposure = "full"
timeout_ms = 300
toolsets = ["notes"]
owner = "tests"

[[tool]]
name = "slow_read"
description = "Reads after a wait, within a short timeout."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
timeout_ms = 300
toolsets = ["notes"]
owner = "tests"

[[tool]]
name = "patch_notes"
description = "Writes several notes, one after the other, reporting each change."
visibility = "inline"
tier = "gated"
effect = "write"
exposure = "full"
toolsets = ["notes"]
owner = "tests"
"#;

/// One handler execution: which call, which files, when.
#[derive(Debug, Clone)]
struct Span {
    label: String,
    files: Vec<PathBuf>,
    write: bool,
    start: Instant,
    end: Instant,
}

/// Spans by workspace, so tests running in parallel keep their own.
fn spans() -> &'static Mutex<HashMap<PathBuf, Vec<Span>>> {
    static SPANS: OnceLock<Mutex<HashMap<PathBuf, Vec<Span>>>> = OnceLock::new();
    SPANS.get_or_init(Mutex::default)
}

fn record_span(ctx: &ToolContext, span: Span) {
    spans()
        .lock()
        .unwrap()
        .entry(ctx.workspace.clone())
        .or_default()
        .push(span);
}

/// The store `running_calls` inspects, by workspace.
fn stores() -> &'static Mutex<HashMap<PathBuf, Arc<CallStore>>> {
    static STORES: OnceLock<Mutex<HashMap<PathBuf, Arc<CallStore>>>> = OnceLock::new();
    STORES.get_or_init(Mutex::default)
}

fn io(e: std::io::Error) -> ToolError {
    ToolError::io("test handler", e)
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    wait_ms: u64,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
    /// Stay after writing (to be cancelled while running).
    #[serde(default)]
    hold_ms: u64,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct AppendArgs {
    paths: Vec<String>,
    label: String,
    #[serde(default)]
    hold_ms: u64,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct NoArgs {}

struct ReadNote;
impl ToolHandler for ReadNote {
    const NAME: &'static str = "read_note";
    type Args = ReadArgs;
    type Output = Value;
    fn call(args: ReadArgs, ctx: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let path = ctx.workspace.join(&args.path);
            let start = Instant::now();
            tokio::time::sleep(Duration::from_millis(args.wait_ms)).await;
            let text = tokio::fs::read_to_string(&path).await.map_err(io)?;
            record_span(
                ctx,
                Span {
                    label: format!("read {}", args.path),
                    files: vec![path],
                    write: false,
                    start,
                    end: Instant::now(),
                },
            );
            Ok(json!({ "text": text }))
        })
    }
    fn prepare(args: &ReadArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
        Ok(vec![Target::path_lock(
            &ctx.workspace.join(&args.path),
            Access::Read,
        )])
    }
}

struct WriteNote;
impl ToolHandler for WriteNote {
    const NAME: &'static str = "write_note";
    type Args = WriteArgs;
    type Output = Value;
    fn call(args: WriteArgs, ctx: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            tokio::fs::write(ctx.workspace.join(&args.path), &args.content)
                .await
                .map_err(io)?;
            ctx.committed();
            tokio::time::sleep(Duration::from_millis(args.hold_ms)).await;
            Ok(json!({ "written": args.content.len() }))
        })
    }
    fn prepare(args: &WriteArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
        Ok(vec![Target::path(
            &ctx.workspace.join(&args.path),
            Access::Write,
        )?])
    }
}

struct AppendNote;
impl ToolHandler for AppendNote {
    const NAME: &'static str = "append_note";
    type Args = AppendArgs;
    type Output = Value;
    fn call(args: AppendArgs, ctx: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let files: Vec<PathBuf> = args.paths.iter().map(|p| ctx.workspace.join(p)).collect();
            let start = Instant::now();
            for f in &files {
                append(f, &format!("start {}\n", args.label))?;
            }
            tokio::time::sleep(Duration::from_millis(args.hold_ms)).await;
            for f in &files {
                append(f, &format!("end {}\n", args.label))?;
            }
            ctx.committed();
            record_span(
                ctx,
                Span {
                    label: args.label.clone(),
                    files,
                    write: true,
                    start,
                    end: Instant::now(),
                },
            );
            Ok(json!({ "appended": args.paths.len() }))
        })
    }
    /// Appends do not care what was there: locked for writing, not fingerprinted.
    fn prepare(args: &AppendArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
        Ok(args
            .paths
            .iter()
            .map(|p| Target::path_lock(&ctx.workspace.join(p), Access::Write))
            .collect())
    }
}

fn append(path: &Path, text: &str) -> Result<(), ToolError> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)
}

struct WaitRead;
impl ToolHandler for WaitRead {
    const NAME: &'static str = "wait_read";
    type Args = ReadArgs;
    type Output = Value;
    fn call(args: ReadArgs, _: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(args.wait_ms)).await;
            Ok(json!({ "waited": args.wait_ms }))
        })
    }
}

struct LimitedRead;
impl ToolHandler for LimitedRead {
    const NAME: &'static str = "limited_read";
    type Args = NoArgs;
    type Output = Value;
    fn call(_: NoArgs, _: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move { Ok(json!("ok")) })
    }
}

struct RunningCalls;
impl ToolHandler for RunningCalls {
    const NAME: &'static str = "running_calls";
    type Args = NoArgs;
    type Output = Value;
    fn call(_: NoArgs, ctx: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let store = stores()
                .lock()
                .unwrap()
                .get(&ctx.workspace)
                .cloned()
                .ok_or_else(|| ToolError::Failed("no store".into()))?;
            let running = store
                .list(Some(CallState::Running), 100)
                .map_err(|e| ToolError::Failed(e.to_string()))?;
            let tools: Vec<String> = running.into_iter().map(|r| r.tool).collect();
            Ok(json!({ "running": tools }))
        })
    }
}

struct BigRead;
impl ToolHandler for BigRead {
    const NAME: &'static str = "big_read";
    type Args = NoArgs;
    type Output = Value;
    fn call(_: NoArgs, _: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let lines: Vec<String> = (0..4000).map(|k| format!("line {k:05}")).collect();
            Ok(json!({ "lines": lines }))
        })
    }
}

/// Every argument optional and no `deny_unknown_fields`: the schema leaves
/// `additionalProperties` out, which JSON Schema reads as "anything goes".
#[derive(Deserialize, schemars::JsonSchema)]
struct EditArgs {
    path: Option<String>,
    search: Option<String>,
    replace: Option<String>,
}

struct EditNote;
impl ToolHandler for EditNote {
    const NAME: &'static str = "edit_note";
    type Args = EditArgs;
    type Output = Value;
    fn call(args: EditArgs, ctx: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            append(&ctx.workspace.join("edits.log"), "edit\n")?;
            Ok(json!({ "path": args.path, "search": args.search, "replace": args.replace }))
        })
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SlowArgs {
    hold_ms: u64,
}

/// Appends `start` to `slow.log` in the workspace, waits `hold_ms`, appends `end`.
fn slow(args: SlowArgs, ctx: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
    Box::pin(async move {
        let log = ctx.workspace.join("slow.log");
        append(&log, "start\n")?;
        tokio::time::sleep(Duration::from_millis(args.hold_ms)).await;
        append(&log, "end\n")?;
        Ok(json!("done"))
    })
}

struct SlowWrite;
impl ToolHandler for SlowWrite {
    const NAME: &'static str = "slow_write";
    type Args = SlowArgs;
    type Output = Value;
    fn call(args: SlowArgs, ctx: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        slow(args, ctx)
    }
}

struct SlowRead;
impl ToolHandler for SlowRead {
    const NAME: &'static str = "slow_read";
    type Args = SlowArgs;
    type Output = Value;
    fn call(args: SlowArgs, ctx: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        slow(args, ctx)
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct PatchFile {
    path: String,
    content: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct PatchArgs {
    files: Vec<PatchFile>,
    /// The index of the file that fails, before it is written.
    #[serde(default)]
    fail_at: Option<usize>,
    /// Stay after writing (to be cancelled while running).
    #[serde(default)]
    hold_ms: u64,
}

/// The diff `patch_notes` reports: every line of the new content added.
fn added(path: &str, content: &str) -> String {
    let lines: String = content.lines().map(|l| format!("+{l}\n")).collect();
    format!(
        "--- a/{path}\n+++ b/{path}\n@@ -0,0 +1,{} @@\n{lines}",
        content.lines().count()
    )
}

/// Writes each file in turn and reports its change right after writing it; fails at `fail_at`.
struct PatchNotes;
impl ToolHandler for PatchNotes {
    const NAME: &'static str = "patch_notes";
    type Args = PatchArgs;
    type Output = Value;
    fn call(args: PatchArgs, ctx: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            for (i, file) in args.files.iter().enumerate() {
                if args.fail_at == Some(i) {
                    return Err(ToolError::Failed(format!("cannot write `{}`", file.path)));
                }
                let path = ctx.workspace.join(&file.path);
                let before = fingerprint_path(&path).map_err(io)?;
                std::fs::write(&path, &file.content).map_err(io)?;
                ctx.committed();
                let after = fingerprint_path(&path).map_err(io)?;
                ctx.record_change(Change::new(
                    &file.path,
                    before,
                    after,
                    added(&file.path, &file.content),
                ));
            }
            tokio::time::sleep(Duration::from_millis(args.hold_ms)).await;
            Ok(json!({ "written": args.files.len() }))
        })
    }
}

static HANDLERS: [Option<ErasedHandler>; 11] = [
    Some(erase::<ReadNote>()),
    Some(erase::<WriteNote>()),
    Some(erase::<AppendNote>()),
    Some(erase::<WaitRead>()),
    Some(erase::<LimitedRead>()),
    Some(erase::<RunningCalls>()),
    Some(erase::<BigRead>()),
    Some(erase::<EditNote>()),
    Some(erase::<SlowWrite>()),
    Some(erase::<SlowRead>()),
    Some(erase::<PatchNotes>()),
];

fn catalog() -> &'static Catalog {
    static C: OnceLock<Catalog> = OnceLock::new();
    C.get_or_init(|| {
        Catalog::from_source_with_handlers("coordinator.toml", CATALOG, &HANDLERS)
            .expect("the test catalog compiles")
    })
}

fn tool(name: &str) -> ToolIndex {
    catalog().tool(name).expect("declared")
}

/// Every tool of the catalog.
fn all() -> Vec<u64> {
    let c = catalog();
    c.profile_tools(c.full_profile()).to_vec()
}

/// `all()` without `names`.
fn all_but(names: &[&str]) -> Vec<u64> {
    let mut set = all();
    for n in names {
        let i = tool(n).index();
        set[i / 64] &= !(1u64 << (i % 64));
    }
    set
}

/// A canonical temporary workspace and a coordinator with an in-memory store.
fn setup() -> (
    tempfile::TempDir,
    PathBuf,
    Coordinator<'static>,
    Arc<CallStore>,
) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ws = std::fs::canonicalize(dir.path()).expect("canonical");
    let store = Arc::new(CallStore::in_memory().expect("store"));
    stores()
        .lock()
        .unwrap()
        .insert(ws.clone(), Arc::clone(&store));
    let coordinator =
        Coordinator::new(catalog(), ToolContext::new(&ws)).with_store(Arc::clone(&store));
    (dir, ws, coordinator, store)
}

fn sha256(bytes: &[u8]) -> String {
    let digest = sha2::Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// What the approval hook saw.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    tool: String,
    arguments: Value,
    targets: Vec<Target>,
}

fn seen(req: &ApprovalRequest<'_>) -> Seen {
    Seen {
        tool: req.catalog.exported_name(req.tool).to_string(),
        arguments: req.arguments.clone(),
        targets: req.targets.to_vec(),
    }
}

#[tokio::test]
async fn a_gated_tool_runs_only_after_the_hook_approves_the_concrete_operation() {
    let (_dir, ws, coordinator, store) = setup();
    let file = ws.join("a.txt");
    std::fs::write(&file, "old").unwrap();
    let log: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log2 = Arc::clone(&log);
    let calls: Arc<Mutex<Vec<Option<toolcat::CallId>>>> = Arc::default();
    let calls2 = Arc::clone(&calls);
    let file2 = file.clone();
    let coordinator = coordinator.with_approval(move |req| {
        // The file is untouched while the approval is asked.
        if req.arguments["path"] == "a.txt" {
            assert_eq!(std::fs::read_to_string(&file2).unwrap(), "old");
        }
        log2.lock().unwrap().push(seen(req));
        calls2.lock().unwrap().push(req.call);
        true
    });
    let args = json!({"path": "a.txt", "content": "new"});
    let allowed = all();
    let out = coordinator
        .call(CallRequest::new(tool("write_note"), args.clone(), &allowed))
        .await;
    assert!(out.ran);
    assert_eq!(out.result.expect("ran").value, json!({"written": 3}));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
    let first = log.lock().unwrap().clone();
    assert_eq!(
        first,
        [Seen {
            tool: "write_note".into(),
            arguments: args,
            targets: vec![Target {
                resource: format!("file:{}", file.display()),
                access: Access::Write,
                fingerprint: Some(sha256(b"old")),
            }],
        }]
    );
    let record = store.get(out.call.expect("recorded")).unwrap().unwrap();
    assert_eq!(record.state, CallState::Succeeded);
    assert_eq!(record.tool, "write_note");
    assert_eq!(
        calls.lock().unwrap()[0],
        out.call,
        "the hook is told which record it approves"
    );

    // A new file: the approval sees `absent`.
    let out = coordinator
        .call(CallRequest::new(
            tool("write_note"),
            json!({"path": "b.txt", "content": "b"}),
            &allowed,
        ))
        .await;
    assert!(out.result.is_ok());
    assert_eq!(std::fs::read_to_string(ws.join("b.txt")).unwrap(), "b");
    let log = log.lock().unwrap().clone();
    assert_eq!(
        log[1].targets[0].fingerprint.as_deref(),
        Some("absent"),
        "{log:?}"
    );
}

#[tokio::test]
async fn a_file_changed_between_approval_and_execution_is_refused_and_left_untouched() {
    let (_dir, ws, coordinator, store) = setup();
    let file = ws.join("a.txt");
    std::fs::write(&file, "approved content").unwrap();
    let file2 = file.clone();
    let coordinator = coordinator.with_approval(move |req| {
        assert_eq!(
            req.targets[0].fingerprint.as_deref(),
            Some(sha256(b"approved content").as_str())
        );
        // Someone else changes the file after the approval saw it.
        std::fs::write(&file2, "changed meanwhile").unwrap();
        true
    });
    let allowed = all();
    let out = coordinator
        .call(CallRequest::new(
            tool("write_note"),
            json!({"path": "a.txt", "content": "the tool's content"}),
            &allowed,
        ))
        .await;
    assert!(!out.ran);
    match &out.result {
        Err(CallError::TargetChanged {
            resource,
            approved,
            now,
            ..
        }) => {
            assert_eq!(resource, &format!("file:{}", file.display()));
            assert_eq!(
                approved.as_deref(),
                Some(sha256(b"approved content").as_str())
            );
            assert_eq!(now.as_deref(), Some(sha256(b"changed meanwhile").as_str()));
        }
        other => panic!("expected target-changed, got {other:?}"),
    }
    let message = out.result.as_ref().unwrap_err().to_string();
    assert!(
        message.contains("changed after `write_note` was approved"),
        "{message}"
    );
    assert!(message.contains("nothing ran"), "{message}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "changed meanwhile");
    let record = store.get(out.call.expect("recorded")).unwrap().unwrap();
    assert_eq!(record.state, CallState::Failed);
    assert!(
        record
            .detail
            .as_deref()
            .unwrap_or("")
            .starts_with("nothing ran:"),
        "{record:?}"
    );
}

#[tokio::test]
async fn denial_and_a_missing_hook_run_nothing() {
    let (_dir, ws, coordinator, _store) = setup();
    let allowed = all();
    let args = json!({"path": "a.txt", "content": "x"});
    let out = coordinator
        .call(CallRequest::new(tool("write_note"), args.clone(), &allowed))
        .await;
    assert!(
        matches!(out.result, Err(CallError::NeedsApproval { .. })),
        "{out:?}"
    );
    assert!(!out.ran);
    assert!(!ws.join("a.txt").exists());

    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let coordinator = coordinator.with_approval(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        false
    });
    let out = coordinator
        .call(CallRequest::new(tool("write_note"), args, &allowed))
        .await;
    assert!(
        matches!(out.result, Err(CallError::Denied { .. })),
        "{out:?}"
    );
    assert_eq!(
        out.result.unwrap_err().to_string(),
        "approval for `write_note` was denied; nothing ran"
    );
    assert!(!out.ran);
    assert!(!ws.join("a.txt").exists());
    assert_eq!(asked.load(Ordering::SeqCst), 1);

    // Silent tools never ask.
    std::fs::write(ws.join("r.txt"), "r").unwrap();
    let out = coordinator
        .call(CallRequest::new(
            tool("read_note"),
            json!({"path": "r.txt"}),
            &allowed,
        ))
        .await;
    assert!(out.result.is_ok());
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_tool_outside_the_scope_is_never_executed() {
    let (_dir, ws, coordinator, store) = setup();
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let coordinator = coordinator.with_approval(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        true
    });
    let allowed = all_but(&["write_note"]);
    let out = coordinator
        .call(CallRequest::new(
            tool("write_note"),
            json!({"path": "a.txt", "content": "x"}),
            &allowed,
        ))
        .await;
    assert!(
        matches!(out.result, Err(CallError::OutsideScope { .. })),
        "{out:?}"
    );
    assert!(!out.ran);
    assert_eq!(
        out.call, None,
        "nothing is recorded for a call outside the scope"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    assert!(!ws.join("a.txt").exists());
    assert!(store.list(None, 10).unwrap().is_empty());
    // An empty or short allowed set allows nothing.
    let out = coordinator
        .call(CallRequest::new(
            tool("read_note"),
            json!({"path": "x"}),
            &[],
        ))
        .await;
    assert!(matches!(out.result, Err(CallError::OutsideScope { .. })));
}

#[tokio::test]
async fn invalid_arguments_name_the_field_path_and_run_nothing() {
    let (_dir, _ws, coordinator, store) = setup();
    let allowed = all();
    let out = coordinator
        .call(CallRequest::new(
            tool("write_note"),
            json!({"path": 3, "contents": "x"}),
            &allowed,
        ))
        .await;
    let Err(CallError::InvalidArguments {
        errors,
        input_schema,
        ..
    }) = &out.result
    else {
        panic!("expected invalid arguments, got {out:?}");
    };
    let paths: Vec<&str> = errors
        .iter()
        .map(|e| e["instancePath"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"/path"), "{errors:?}");
    assert!(errors
        .iter()
        .any(|e| e["message"].as_str().unwrap().contains("content")));
    assert_eq!(input_schema["properties"]["path"]["type"], "string");
    assert_eq!(
        out.result.as_ref().unwrap_err().to_json()["error"],
        "invalid-arguments"
    );
    assert!(store.list(None, 10).unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_concurrent_calls_serialize_conflicts_and_never_deadlock() {
    let (_dir, ws, coordinator, store) = setup();
    let coordinator = Arc::new(coordinator.with_approval(|_| true));
    let shared = ["s0.txt", "s1.txt", "s2.txt"];
    for s in shared {
        std::fs::write(ws.join(s), "").unwrap();
    }
    // 100 calls: 40 appends to one shared file, 20 appends to two shared files (named in both
    // orders, so a call that locked in argument order could deadlock), 10 reads of shared
    // files, 30 appends to files of their own.
    let mut calls: Vec<(String, Value)> = Vec::new();
    for k in 0..40 {
        let path = shared[k % 3];
        calls.push((
            "append_note".into(),
            json!({"paths": [path], "label": format!("one-{k}"), "hold_ms": 3}),
        ));
    }
    for k in 0..20 {
        let (a, b) = (shared[k % 3], shared[(k + 1) % 3]);
        let paths = if k % 2 == 0 { [a, b] } else { [b, a] };
        calls.push((
            "append_note".into(),
            json!({"paths": paths, "label": format!("two-{k}"), "hold_ms": 3}),
        ));
    }
    for k in 0..10 {
        calls.push((
            "read_note".into(),
            json!({"path": shared[k % 3], "wait_ms": 3}),
        ));
    }
    for k in 0..30 {
        calls.push((
            "append_note".into(),
            json!({"paths": [format!("own-{k}.txt")], "label": format!("own-{k}"), "hold_ms": 30}),
        ));
    }
    assert_eq!(calls.len(), 100);
    // Interleave the kinds so conflicting and independent calls arrive mixed.
    let mut order: Vec<usize> = (0..100).collect();
    order.sort_by_key(|&i| (i * 37) % 100);
    let allowed = Arc::new(all());
    let mut tasks = Vec::new();
    for i in order {
        let (name, args) = calls[i].clone();
        let coordinator = Arc::clone(&coordinator);
        let allowed = Arc::clone(&allowed);
        tasks.push(tokio::spawn(async move {
            coordinator
                .call(CallRequest::new(tool(&name), args, &allowed))
                .await
        }));
    }
    let outcomes = tokio::time::timeout(Duration::from_secs(60), async {
        let mut outcomes = Vec::new();
        for t in tasks {
            outcomes.push(t.await.expect("task"));
        }
        outcomes
    })
    .await
    .expect("all 100 calls finish (no deadlock) within 60 s");
    for o in &outcomes {
        assert!(o.result.is_ok(), "{o:?}");
    }
    assert_eq!(
        store.list(Some(CallState::Succeeded), 1000).unwrap().len(),
        100
    );

    let spans = spans()
        .lock()
        .unwrap()
        .get(&ws)
        .cloned()
        .unwrap_or_default();
    assert_eq!(spans.len(), 100);
    let overlap = |a: &Span, b: &Span| a.start < b.end && b.start < a.end;
    // Conflicting pairs (a shared file, at least one writer) never overlapped.
    let mut conflicting_pairs = 0;
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            let shares = a.files.iter().any(|f| b.files.contains(f));
            if shares && (a.write || b.write) {
                conflicting_pairs += 1;
                assert!(
                    !overlap(a, b),
                    "conflicting calls `{}` and `{}` overlapped",
                    a.label,
                    b.label
                );
            }
        }
    }
    assert!(conflicting_pairs > 1000, "{conflicting_pairs}");
    // The files agree: every `start X` is followed by its own `end X`.
    for s in shared {
        let text = std::fs::read_to_string(ws.join(s)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(!lines.is_empty());
        for pair in lines.chunks(2) {
            let [start, end] = pair else {
                panic!("odd line count in {s}: {text}")
            };
            let label = start.strip_prefix("start ").expect("a start line");
            assert_eq!(*end, format!("end {label}"), "{s}: {text}");
        }
    }
    // Independent calls (files of their own) ran in parallel: with 30 calls holding 30 ms each,
    // at least one pair overlapped. (Sequential execution would take ≥ 900 ms and show none.)
    let own: Vec<&Span> = spans
        .iter()
        .filter(|s| s.label.starts_with("own-"))
        .collect();
    assert_eq!(own.len(), 30);
    let parallel = own
        .iter()
        .enumerate()
        .any(|(i, a)| own[i + 1..].iter().any(|b| overlap(a, b)));
    assert!(parallel, "no two independent calls overlapped");
}

#[tokio::test]
async fn a_call_over_the_rate_limit_answers_when_to_retry() {
    let (_dir, _ws, coordinator, store) = setup();
    let allowed = all();
    let t = tool("limited_read");
    for _ in 0..2 {
        let out = coordinator
            .call(CallRequest::new(t, json!({}), &allowed))
            .await;
        assert!(out.result.is_ok(), "{out:?}");
    }
    let out = coordinator
        .call(CallRequest::new(t, json!({}), &allowed))
        .await;
    assert!(!out.ran);
    let Err(e @ CallError::RateLimited { retry_after_ms, .. }) = &out.result else {
        panic!("expected rate-limited, got {out:?}");
    };
    // 2 per minute: the next call is allowed within 30 s.
    assert!(
        *retry_after_ms > 0 && *retry_after_ms <= 30_000,
        "{retry_after_ms}"
    );
    let v = e.to_json();
    assert_eq!(v["error"], "rate-limited");
    assert_eq!(v["retryAfterMs"], json!(retry_after_ms));
    assert!(e.to_string().contains("2 calls per 60 s"), "{e}");
    assert_eq!(
        store.list(None, 10).unwrap().len(),
        2,
        "a limited call leaves no record"
    );
}

/// Coordinators with call stores on one file (as `toolcat call` processes) share the row's
/// `rate_limit`: what one was granted counts for the other, whose refusal runs nothing and leaves
/// no record.
#[tokio::test]
async fn coordinators_with_stores_on_one_file_share_the_rate_limit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ws = std::fs::canonicalize(dir.path()).expect("canonical");
    let path = ws.join("calls.sqlite");
    let open = || {
        let store = Arc::new(CallStore::open(&path).expect("the store opens"));
        let coordinator =
            Coordinator::new(catalog(), ToolContext::new(&ws)).with_store(Arc::clone(&store));
        (coordinator, store)
    };
    let (a, store_a) = open();
    let (b, store_b) = open();
    let allowed = all();
    let t = tool("limited_read");
    let request = || CallRequest::new(t, json!({}), &allowed);
    assert!(a.call(request()).await.result.is_ok());
    assert!(b.call(request()).await.result.is_ok());
    for c in [&a, &b] {
        let out = c.call(request()).await;
        assert!(!out.ran, "{out:?}");
        let Err(CallError::RateLimited { retry_after_ms, .. }) = out.result else {
            panic!("the third call of a 2/min tool is refused, got {out:?}");
        };
        assert!((1..=30_000).contains(&retry_after_ms), "{retry_after_ms}");
    }
    // The clones and copies of a coordinator share it too.
    let out = a.for_catalog(catalog()).call(request()).await;
    assert!(
        matches!(out.result, Err(CallError::RateLimited { .. })),
        "{out:?}"
    );
    assert_eq!(
        store_a.list(None, 10).unwrap().len(),
        2,
        "a refusal leaves no record"
    );
    drop(store_b);
}

/// Rate limits kept apart from the call store: every call of a limited tool asks that store
/// (not the in-memory limiter, though the call store is in memory); its failure runs nothing.
#[tokio::test]
async fn with_rate_limits_every_limited_call_asks_that_store() {
    struct Refusing(Mutex<Vec<(String, String, u32, u32)>>);
    impl toolcat::limits::RateLimitStore for Refusing {
        fn acquire<'a>(
            &'a self,
            tool: &'a str,
            key: &'a str,
            limit: toolcat::RateLimit,
        ) -> BoxFuture<'a, Result<toolcat::limits::Acquire, toolcat::StoreError>> {
            let mut asked = self.0.lock().unwrap();
            asked.push((tool.into(), key.into(), limit.calls, limit.window_secs));
            let answer = if asked.len() == 1 {
                Ok(toolcat::limits::Acquire::Refused {
                    retry_after_ms: 1234,
                })
            } else {
                Err(toolcat::StoreError::Postgres {
                    url: "postgres://db.invalid/toolcat".into(),
                    reason: "connection refused".into(),
                })
            };
            Box::pin(std::future::ready(answer))
        }
    }
    let (_dir, _ws, coordinator, store) = setup();
    let limits = Arc::new(Refusing(Mutex::default()));
    let coordinator = coordinator.with_rate_limits(Arc::clone(&limits) as _);
    let allowed = all();
    let out = coordinator
        .call(CallRequest::new(tool("limited_read"), json!({}), &allowed))
        .await;
    assert!(
        matches!(
            out.result,
            Err(CallError::RateLimited {
                retry_after_ms: 1234,
                calls: 2,
                window_secs: 60,
                ..
            })
        ),
        "{out:?}"
    );
    let out = coordinator
        .call(CallRequest::new(tool("limited_read"), json!({}), &allowed))
        .await;
    assert!(!out.ran);
    let Err(e @ CallError::Store(_)) = &out.result else {
        panic!("a store failure refuses the call, got {out:?}");
    };
    assert!(
        e.to_string().contains("rate limit of `limited_read`")
            && e.to_string().contains("postgres://db.invalid/toolcat")
            && e.to_string().contains("nothing ran"),
        "{e}"
    );
    // A tool without a `rate_limit` never asks.
    let out = coordinator
        .call(CallRequest::new(
            tool("read_note"),
            json!({"path": "missing.txt"}),
            &allowed,
        ))
        .await;
    assert!(!matches!(out.result, Err(CallError::Store(_))), "{out:?}");
    assert_eq!(
        *limits.0.lock().unwrap(),
        vec![
            ("limited_read".to_string(), String::new(), 2, 60),
            ("limited_read".to_string(), String::new(), 2, 60)
        ]
    );
    assert!(store
        .list(None, 10)
        .unwrap()
        .iter()
        .all(|r| r.tool != "limited_read"));
}

#[tokio::test]
async fn cancellation_stops_calls_and_records_how_they_ended() {
    let (_dir, ws, coordinator, store) = setup();
    let coordinator = coordinator.with_approval(|_| true);
    let allowed = all();

    // A read-only call cancelled while running: cancelled.
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let out = coordinator
        .call(
            CallRequest::new(
                tool("wait_read"),
                json!({"path": "x", "wait_ms": 60_000}),
                &allowed,
            )
            .with_cancellation(token),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the call stopped"
    );
    assert!(
        matches!(out.result, Err(CallError::Cancelled { .. })),
        "{out:?}"
    );
    assert!(out.ran);
    let id = out.call.expect("recorded");
    assert_eq!(store.get(id).unwrap().unwrap().state, CallState::Cancelled);

    // Cancelled before it starts: nothing runs, the record says cancelled.
    let token = CancellationToken::new();
    token.cancel();
    let out = coordinator
        .call(
            CallRequest::new(
                tool("write_note"),
                json!({"path": "never.txt", "content": "x"}),
                &allowed,
            )
            .with_cancellation(token),
        )
        .await;
    assert!(
        matches!(out.result, Err(CallError::Cancelled { .. })),
        "{out:?}"
    );
    assert!(!out.ran);
    assert!(!ws.join("never.txt").exists());
    assert_eq!(
        store
            .get(out.call.expect("recorded"))
            .unwrap()
            .unwrap()
            .state,
        CallState::Cancelled
    );
}

#[tokio::test]
async fn outcome_unknown_calls_are_never_replayed_and_retry_needs_an_idempotent_tool() {
    let (_dir, ws, coordinator, store) = setup();
    let coordinator = coordinator.with_approval(|_| true);
    let allowed = all();

    // A writer cancelled after its side effect: outcome unknown, not cancelled.
    let cancel_soon = || {
        let token = CancellationToken::new();
        let trigger = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            trigger.cancel();
        });
        token
    };
    let out = coordinator
        .call(
            CallRequest::new(
                tool("append_note"),
                json!({"paths": ["log.txt"], "label": "x", "hold_ms": 60_000}),
                &allowed,
            )
            .with_cancellation(cancel_soon()),
        )
        .await;
    assert!(
        matches!(out.result, Err(CallError::OutcomeUnknown { .. })),
        "{out:?}"
    );
    let unknown = out.call.expect("recorded");
    assert_eq!(
        store.get(unknown).unwrap().unwrap().state,
        CallState::OutcomeUnknown
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("log.txt")).unwrap(),
        "start x\n"
    );

    // Nothing replays it: more calls leave its record and the file as they were.
    let out = coordinator
        .call(CallRequest::new(
            tool("read_note"),
            json!({"path": "log.txt"}),
            &allowed,
        ))
        .await;
    assert_eq!(out.result.unwrap().value["text"], "start x\n");
    assert_eq!(
        store.get(unknown).unwrap().unwrap().state,
        CallState::OutcomeUnknown
    );
    let before = store.list(None, 100).unwrap().len();

    // `append_note` is not idempotent: retry is refused and runs nothing.
    let err = coordinator
        .retry(unknown, &allowed, None)
        .await
        .expect_err("not idempotent");
    assert!(matches!(err, CallError::NotRetryable { .. }));
    assert!(
        err.to_string().contains("not declared `idempotent`"),
        "{err}"
    );
    assert_eq!(store.list(None, 100).unwrap().len(), before);
    assert_eq!(
        std::fs::read_to_string(ws.join("log.txt")).unwrap(),
        "start x\n"
    );

    // `write_note` is idempotent: an explicit retry runs it again as a new call.
    let out = coordinator
        .call(
            CallRequest::new(
                tool("write_note"),
                json!({"path": "w.txt", "content": "w", "hold_ms": 60_000}),
                &allowed,
            )
            .with_cancellation(cancel_soon()),
        )
        .await;
    assert!(
        matches!(out.result, Err(CallError::OutcomeUnknown { .. })),
        "{out:?}"
    );
    let first = out.call.expect("recorded");
    // A committed writer cancelled: the record went committed, then outcome_unknown.
    assert_eq!(
        store.get(first).unwrap().unwrap().state,
        CallState::OutcomeUnknown
    );
    // The arguments recorded hold the long `hold_ms`; retried without cancellation the
    // handler would hold for a minute, so cancel this one too and check the record links back.
    let retried = coordinator
        .retry(first, &allowed, Some(cancel_soon()))
        .await
        .expect("idempotent tools may be retried");
    let second = retried.call.expect("recorded");
    assert_ne!(second, first);
    let record = store.get(second).unwrap().unwrap();
    assert_eq!(record.retry_of, Some(first));
    assert_eq!(record.tool, "write_note");
    assert!(retried.ran);

    // A succeeded call is not retried; an unknown id is named.
    let out = coordinator
        .call(CallRequest::new(
            tool("write_note"),
            json!({"path": "w.txt", "content": "v"}),
            &allowed,
        ))
        .await;
    let done = out.call.expect("recorded");
    let err = coordinator
        .retry(done, &allowed, None)
        .await
        .expect_err("succeeded");
    assert!(err.to_string().contains("succeeded"), "{err}");
    let err = coordinator
        .retry(toolcat::CallId(9999), &allowed, None)
        .await
        .expect_err("unknown");
    assert!(err.to_string().contains("no call `call-9999`"), "{err}");
}

#[tokio::test]
async fn the_record_says_running_before_the_handler_runs() {
    let (_dir, _ws, coordinator, store) = setup();
    let allowed = all();
    let out = coordinator
        .call(CallRequest::new(tool("running_calls"), json!({}), &allowed))
        .await;
    assert_eq!(
        out.result.expect("ran").value,
        json!({"running": ["running_calls"]})
    );
    assert_eq!(
        store.get(out.call.unwrap()).unwrap().unwrap().state,
        CallState::Succeeded
    );
}

#[tokio::test]
async fn results_over_the_inline_budget_are_archived_and_read_back() {
    let (_dir, _ws, coordinator, store) = setup();
    let archive = Arc::new(ResultArchive::in_memory().expect("archive"));
    let coordinator = coordinator.with_archive(Arc::clone(&archive));
    let allowed = all();
    let out = coordinator
        .call(CallRequest::new(tool("big_read"), json!({}), &allowed))
        .await;
    let value = out.result.expect("ran");
    let whole = value.value.to_string();
    assert!(whole.len() > archive.limits().inline_budget);
    let archived = value.archived.expect("archived");
    assert_eq!(archived.bytes, whole.len());
    assert!(value.text.len() < archive.limits().inline_budget);
    assert!(value.text.contains(&archived.reference), "{}", value.text);
    assert!(whole.starts_with(&archived.preview));
    let slice = coordinator
        .read_result(&archived.reference, 100, 50)
        .expect("readable");
    assert_eq!(
        slice.text,
        whole.chars().skip(100).take(50).collect::<String>()
    );
    let err = coordinator
        .read_result("result-99999", 0, 10)
        .expect_err("unknown reference");
    assert!(err.to_string().contains("result-99999"), "{err}");
    let record = store.get(out.call.unwrap()).unwrap().unwrap();
    assert_eq!(record.state, CallState::Succeeded);
    assert!(
        record
            .detail
            .unwrap_or_default()
            .contains(&archived.reference),
        "the record names the archived result"
    );
    // Small results stay inline.
    std::fs::write(_ws.join("s.txt"), "small").unwrap();
    let out = coordinator
        .call(CallRequest::new(
            tool("read_note"),
            json!({"path": "s.txt"}),
            &allowed,
        ))
        .await;
    let value = out.result.expect("ran");
    assert!(value.archived.is_none());
    assert_eq!(value.text, r#"{"text":"small"}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_while_waiting_for_a_lock_never_runs() {
    let (_dir, ws, coordinator, store) = setup();
    let coordinator = Arc::new(coordinator.with_approval(|_| true));
    let allowed = Arc::new(all());
    // The first call holds `shared.txt` for a while.
    let first = {
        let coordinator = Arc::clone(&coordinator);
        let allowed = Arc::clone(&allowed);
        tokio::spawn(async move {
            coordinator
                .call(CallRequest::new(
                    tool("append_note"),
                    json!({"paths": ["shared.txt"], "label": "holder", "hold_ms": 400}),
                    &allowed,
                ))
                .await
        })
    };
    // Wait until it runs (its `start` line is written), then queue a second call behind it and
    // cancel that one while it waits.
    let started = Instant::now();
    while !std::fs::read_to_string(ws.join("shared.txt")).is_ok_and(|t| t.contains("start")) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the first call never started"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let out = coordinator
        .call(
            CallRequest::new(
                tool("append_note"),
                json!({"paths": ["shared.txt"], "label": "queued"}),
                &allowed,
            )
            .with_cancellation(token),
        )
        .await;
    assert!(
        matches!(out.result, Err(CallError::Cancelled { .. })),
        "{out:?}"
    );
    assert!(!out.ran);
    assert_eq!(
        store
            .get(out.call.expect("recorded"))
            .unwrap()
            .unwrap()
            .state,
        CallState::Cancelled
    );
    let first = first.await.expect("task");
    assert!(first.result.is_ok(), "{first:?}");
    // The file holds the first call's lines only; the lock was released for later calls.
    assert_eq!(
        std::fs::read_to_string(ws.join("shared.txt")).unwrap(),
        "start holder\nend holder\n"
    );
    let out = coordinator
        .call(CallRequest::new(
            tool("append_note"),
            json!({"paths": ["shared.txt"], "label": "after"}),
            &allowed,
        ))
        .await;
    assert!(out.result.is_ok(), "{out:?}");
}

#[tokio::test]
async fn argument_names_outside_the_schema_run_nothing_though_json_schema_would_allow_them() {
    let (_dir, ws, coordinator, store) = setup();
    let allowed = all();
    let t = tool("edit_note");
    // The schema has no `additionalProperties`: JSON Schema itself accepts the guess.
    let schema = catalog().input_schema(t).clone();
    assert!(schema.get("additionalProperties").is_none(), "{schema}");
    let guess = json!({"path": "a.txt", "old_string": "x", "new_string": "y"});
    assert!(jsonschema::validator_for(&schema).unwrap().is_valid(&guess));

    let out = coordinator.call(CallRequest::new(t, guess, &allowed)).await;
    assert!(!out.ran);
    let Err(CallError::InvalidArguments {
        errors,
        input_schema,
        ..
    }) = &out.result
    else {
        panic!("expected invalid arguments, got {out:?}");
    };
    let messages: Vec<&str> = errors
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages[0].starts_with(
            "unknown argument `old_string`; the declared arguments are `path`, `search`, `replace`"
        ),
        "{messages:?}"
    );
    assert!(
        messages[1].starts_with("unknown argument `new_string`"),
        "{messages:?}"
    );
    assert!(
        input_schema["properties"].get("search").is_some(),
        "{input_schema}"
    );
    let text = out.result.as_ref().unwrap_err().to_string();
    assert!(text.contains("nothing ran"), "{text}");
    assert!(!ws.join("edits.log").exists(), "the handler never ran");
    assert!(out.call.is_none(), "refused at validation: no record");
    assert!(store.list(None, 10).unwrap().is_empty());

    // A close misspelling gets a did-you-mean; the declared names run.
    let out = coordinator
        .call(CallRequest::new(t, json!({"serach": "x"}), &allowed))
        .await;
    let text = out.result.as_ref().unwrap_err().to_string();
    assert!(text.contains("(did you mean `search`?)"), "{text}");
    let out = coordinator
        .call(CallRequest::new(
            t,
            json!({"path": "a.txt", "search": "x", "replace": "y"}),
            &allowed,
        ))
        .await;
    assert!(out.ran, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("edits.log")).unwrap(),
        "edit\n"
    );
}

#[tokio::test]
async fn a_write_past_its_timeout_is_outcome_unknown_and_never_run_again() {
    let (_dir, ws, coordinator, store) = setup();
    let coordinator = coordinator.with_approval(|_| true);
    let allowed = all();
    let t = tool("slow_write");
    assert_eq!(coordinator.timeout(t), Some(Duration::from_millis(300)));
    let started = Instant::now();
    let out = coordinator
        .call(CallRequest::new(t, json!({"hold_ms": 5000}), &allowed))
        .await;
    let took = started.elapsed();
    assert!(out.ran);
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(3000),
        "stopped at its timeout: {took:?}"
    );
    let Err(e @ CallError::OutcomeUnknown { .. }) = &out.result else {
        panic!("expected outcome unknown, got {out:?}");
    };
    let text = e.to_string();
    assert!(
        text.contains("did not finish within its timeout of 300 ms"),
        "{text}"
    );
    assert!(text.contains("never replayed"), "{text}");
    let record = store.get(out.call.expect("recorded")).unwrap().unwrap();
    assert_eq!(record.state, CallState::OutcomeUnknown);
    // The handler was stopped and nothing started it again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        std::fs::read_to_string(ws.join("slow.log")).unwrap(),
        "start\n"
    );
    assert_eq!(
        store.list(None, 10).unwrap().len(),
        1,
        "one call, not replayed"
    );
    // Within its timeout it runs to the end.
    let out = coordinator
        .call(CallRequest::new(t, json!({"hold_ms": 10}), &allowed))
        .await;
    assert_eq!(out.result.expect("within the timeout").value, json!("done"));
}

#[tokio::test]
async fn a_read_past_its_timeout_is_a_plain_error_and_the_default_applies_to_other_rows() {
    let (_dir, ws, coordinator, store) = setup();
    let allowed = all();
    let out = coordinator
        .call(CallRequest::new(
            tool("slow_read"),
            json!({"hold_ms": 5000}),
            &allowed,
        ))
        .await;
    assert!(out.ran);
    let Err(CallError::Tool(ToolError::Failed(text))) = &out.result else {
        panic!("expected a plain error, got {out:?}");
    };
    assert!(
        text.contains("did not finish within its timeout of 300 ms")
            && text.contains("nothing was changed (it only reads)"),
        "{text}"
    );
    let record = store.get(out.call.expect("recorded")).unwrap().unwrap();
    assert_eq!(record.state, CallState::Failed);
    assert_eq!(
        std::fs::read_to_string(ws.join("slow.log")).unwrap(),
        "start\n"
    );

    // A row without `timeout_ms` takes the coordinator's default: the built-in one, or the
    // host's; a row's own `timeout_ms` wins over the host's default.
    let wait = tool("wait_read");
    assert_eq!(
        coordinator.timeout(wait),
        Some(toolcat::coordinator::DEFAULT_TIMEOUT)
    );
    let coordinator = coordinator.with_default_timeout(Some(Duration::from_millis(100)));
    let out = coordinator
        .call(CallRequest::new(
            wait,
            json!({"path": "x", "wait_ms": 5000}),
            &allowed,
        ))
        .await;
    let text = out.result.as_ref().unwrap_err().to_string();
    assert!(text.contains("within its timeout of 100 ms"), "{text}");
    assert_eq!(
        coordinator.timeout(tool("slow_read")),
        Some(Duration::from_millis(300))
    );
    let unlimited = coordinator.with_default_timeout(None);
    assert_eq!(unlimited.timeout(wait), None);
    let out = unlimited
        .call(CallRequest::new(
            wait,
            json!({"path": "x", "wait_ms": 150}),
            &allowed,
        ))
        .await;
    assert_eq!(out.result.expect("no limit").value, json!({"waited": 150}));
}

/// A per-call approver (a client's elicitation over MCP) is asked after the host's hook and can
/// only add a refusal: a hook's no stands whatever the approver says, and the approver is then
/// not asked.
#[tokio::test]
async fn a_per_call_approver_never_lifts_the_hooks_refusal() {
    let (_dir, ws, coordinator, _store) = setup();
    let allowed = all();
    let args = json!({"path": "a.txt", "content": "x"});
    let asked = Arc::new(AtomicUsize::new(0));
    let approver = |yes: bool, asked: &Arc<AtomicUsize>| {
        let asked = Arc::clone(asked);
        Approver(Arc::new(move |_| {
            asked.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move { yes })
        }))
    };

    // No hook: the approver decides.
    let out = coordinator
        .call(
            CallRequest::new(tool("write_note"), args.clone(), &allowed)
                .with_approver(approver(false, &asked)),
        )
        .await;
    assert!(
        matches!(out.result, Err(CallError::Denied { .. })),
        "{out:?}"
    );
    assert!(!ws.join("a.txt").exists());
    assert_eq!(asked.load(Ordering::SeqCst), 1);

    // A hook that refuses: denied, and the approver is not asked.
    let refusing = coordinator.with_approval(|_| false);
    let out = refusing
        .call(
            CallRequest::new(tool("write_note"), args.clone(), &allowed)
                .with_approver(approver(true, &asked)),
        )
        .await;
    assert!(
        matches!(out.result, Err(CallError::Denied { .. })),
        "{out:?}"
    );
    assert!(!out.ran);
    assert!(!ws.join("a.txt").exists());
    assert_eq!(asked.load(Ordering::SeqCst), 1);

    // A hook that allows: the approver still decides.
    let allowing = refusing.with_approval(|_| true);
    let out = allowing
        .call(
            CallRequest::new(tool("write_note"), args.clone(), &allowed)
                .with_approver(approver(false, &asked)),
        )
        .await;
    assert!(
        matches!(out.result, Err(CallError::Denied { .. })),
        "{out:?}"
    );
    assert!(!ws.join("a.txt").exists());
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    let out = allowing
        .call(
            CallRequest::new(tool("write_note"), args, &allowed)
                .with_approver(approver(true, &asked)),
        )
        .await;
    assert!(out.result.is_ok(), "{out:?}");
    assert!(ws.join("a.txt").exists());
    assert_eq!(asked.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn the_changes_a_handler_reports_are_in_its_record_also_when_it_then_fails() {
    let (_dir, ws, coordinator, store) = setup();
    let coordinator = coordinator.with_approval(|_| true);
    let allowed = all();
    std::fs::write(ws.join("b.txt"), "old b\n").unwrap();
    let files = json!([
        {"path": "a.txt", "content": "new a\n"},
        {"path": "b.txt", "content": "new b\n"},
        {"path": "c.txt", "content": "new c\n"},
    ]);

    // Success: one change per file, in order, with what was there before and after.
    let out = coordinator
        .call(CallRequest::new(
            tool("patch_notes"),
            json!({"files": files.clone()}),
            &allowed,
        ))
        .await;
    assert!(out.result.is_ok(), "{out:?}");
    assert_eq!(out.record_error, None);
    let record = store.get(out.call.expect("recorded")).unwrap().unwrap();
    assert_eq!(record.state, CallState::Succeeded);
    let expected = |path: &str, before: String, content: &str| {
        Change::new(
            path,
            before,
            sha256(content.as_bytes()),
            added(path, content),
        )
    };
    assert_eq!(
        record.changes,
        vec![
            expected("a.txt", "absent".into(), "new a\n"),
            expected("b.txt", sha256(b"old b\n"), "new b\n"),
            expected("c.txt", "absent".into(), "new c\n"),
        ]
    );

    // The second file fails after the first was written: the record shows the first.
    std::fs::remove_file(ws.join("a.txt")).unwrap();
    let out = coordinator
        .call(CallRequest::new(
            tool("patch_notes"),
            json!({"files": files, "fail_at": 1}),
            &allowed,
        ))
        .await;
    assert!(
        matches!(&out.result, Err(CallError::Tool(e)) if e.to_string().contains("cannot write `b.txt`")),
        "{out:?}"
    );
    let record = store.get(out.call.expect("recorded")).unwrap().unwrap();
    assert_eq!(record.state, CallState::Failed);
    assert_eq!(
        record.changes,
        vec![expected("a.txt", "absent".into(), "new a\n")]
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "new a\n"
    );

    // Cancelled while it holds after writing: `outcome_unknown`, the change kept.
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let out = coordinator
        .call(
            CallRequest::new(
                tool("patch_notes"),
                json!({"files": [{"path": "d.txt", "content": "d\n"}], "hold_ms": 60_000}),
                &allowed,
            )
            .with_cancellation(token),
        )
        .await;
    assert!(
        matches!(out.result, Err(CallError::OutcomeUnknown { .. })),
        "{out:?}"
    );
    let record = store.get(out.call.expect("recorded")).unwrap().unwrap();
    assert_eq!(record.state, CallState::OutcomeUnknown);
    assert_eq!(
        record.changes,
        vec![expected("d.txt", "absent".into(), "d\n")]
    );

    // Outside a coordinated call a reported change goes nowhere and the handler still runs.
    let ctx = ToolContext::new(&ws);
    let value = PatchNotes::call(
        PatchArgs {
            files: vec![PatchFile {
                path: "e.txt".into(),
                content: "e\n".into(),
            }],
            fail_at: None,
            hold_ms: 0,
        },
        &ctx,
    )
    .await
    .expect("runs");
    assert_eq!(value, json!({"written": 1}));
    assert_eq!(store.list(None, 10).unwrap().len(), 3);
}

/// Reads the whole archived text `reference` for `owner`, slice after slice.
fn read_whole(archive: &ResultArchive, owner: ArchiveOwner, reference: &str) -> String {
    let mut text = String::new();
    let mut offset = 0;
    loop {
        let slice = archive
            .read(owner, reference, offset, usize::MAX)
            .expect("readable by its owner");
        text.push_str(&slice.text);
        match slice.next_offset {
            Some(next) => offset = next,
            None => return text,
        }
    }
}

#[tokio::test]
async fn a_large_diff_is_cut_in_the_record_and_archived_whole_for_the_calls_owner() {
    let (_dir, ws, coordinator, store) = setup();
    let coordinator = coordinator.with_approval(|_| true);
    let allowed = all();
    let content: String = (0..3000).map(|k| format!("line {k:05} é\n")).collect();
    let whole = added("big.txt", &content);
    assert!(whole.len() > MAX_CHANGE_DIFF_BYTES);
    let args = json!({"files": [{"path": "big.txt", "content": content}]});

    // Without an archive: cut, no reference.
    let out = coordinator
        .call(CallRequest::new(
            tool("patch_notes"),
            args.clone(),
            &allowed,
        ))
        .await;
    assert!(out.result.is_ok(), "{out:?}");
    let record = store.get(out.call.unwrap()).unwrap().unwrap();
    let change = &record.changes[0];
    assert!(change.diff_truncated);
    assert!(change.diff.len() <= MAX_CHANGE_DIFF_BYTES);
    assert!(whole.starts_with(&change.diff));
    assert_eq!(change.diff_bytes, whole.len());
    assert_eq!(change.diff_reference, None);

    // With an archive: the whole diff is there, readable by the call's owner only.
    std::fs::remove_file(ws.join("big.txt")).unwrap();
    let archive = Arc::new(ResultArchive::in_memory().expect("archive"));
    let coordinator = coordinator.with_archive(Arc::clone(&archive));
    let owner = ArchiveOwner::new();
    let out = coordinator
        .call(CallRequest::new(tool("patch_notes"), args.clone(), &allowed).with_owner(owner))
        .await;
    assert!(out.result.is_ok(), "{out:?}");
    assert_eq!(out.record_error, None);
    let record = store.get(out.call.unwrap()).unwrap().unwrap();
    let change = &record.changes[0];
    assert!(change.diff_truncated && whole.starts_with(&change.diff));
    let reference = change.diff_reference.as_deref().expect("archived");
    assert_eq!(read_whole(&archive, owner, reference), whole);
    assert!(matches!(
        archive.read(ArchiveOwner::new(), reference, 0, 10),
        Err(ArchiveError::UnknownReference { .. })
    ));
    assert!(matches!(
        coordinator.read_result(reference, 0, 10),
        Err(ArchiveError::UnknownReference { .. })
    ));
    let shown = serde_json::to_value(&record).unwrap();
    assert_eq!(shown["changes"][0]["diff_reference"], json!(reference));
    assert_eq!(shown["changes"][0]["diff_truncated"], json!(true));

    // A request that names no owner: the coordinator's own, read with `read_result`.
    std::fs::remove_file(ws.join("big.txt")).unwrap();
    let out = coordinator
        .call(CallRequest::new(tool("patch_notes"), args, &allowed))
        .await;
    let record = store.get(out.call.unwrap()).unwrap().unwrap();
    let reference = record.changes[0].diff_reference.clone().expect("archived");
    let start = coordinator
        .read_result(&reference, 0, 100)
        .expect("readable");
    assert_eq!(start.text, whole.chars().take(100).collect::<String>());
    assert!(matches!(
        archive.read(owner, &reference, 0, 10),
        Err(ArchiveError::UnknownReference { .. })
    ));

    // A small diff stays whole and is not archived.
    let out = coordinator
        .call(CallRequest::new(
            tool("patch_notes"),
            json!({"files": [{"path": "small.txt", "content": "s\n"}]}),
            &allowed,
        ))
        .await;
    let record = store.get(out.call.unwrap()).unwrap().unwrap();
    assert_eq!(
        (
            record.changes[0].diff_truncated,
            &record.changes[0].diff_reference
        ),
        (false, &None)
    );
}
