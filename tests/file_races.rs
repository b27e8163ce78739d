//! File tools never reach outside the workspace through a symbolic link, not even one swapped in
//! while the call runs; writers replace a file only if it still holds what they read.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolcat::{Access, Target, ToolContext, ToolError};
use toolcat_cli::handlers::files::{
    edit_file, propose_edit, read_file, write_file, EditFileArgs, ReadFileArgs, WriteFileArgs,
};
use toolcat_cli::handlers::memory::{memory_store, memory_store_targets, MemoryStoreArgs};
use toolcat_cli::handlers::planning::{todo_write, TodoWriteArgs};
use toolcat_cli::handlers::search::{
    find_files, glob, grep, FindFilesArgs, GlobArgs, GrepArgs, GrepOutputMode,
};
use toolcat_cli::handlers::workspace::{content_fingerprint, Workspace};

const SECRET: &str = "outside secret, never to be read\n";
const ORIGINAL: &str = "original\n";

fn read_args(path: &str) -> ReadFileArgs {
    ReadFileArgs {
        path: path.into(),
        offset: None,
        limit: None,
        format: None,
    }
}

fn write_args(path: &str, content: &str) -> WriteFileArgs {
    WriteFileArgs {
        path: path.into(),
        content: content.into(),
        version: None,
    }
}

/// A workspace and, beside it, an outside directory holding `victim.txt`.
fn setup() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let base = tempfile::tempdir().expect("temp dir");
    let ws = base.path().join("ws");
    let outside = base.path().join("outside");
    std::fs::create_dir_all(&ws).expect("mkdir ws");
    std::fs::create_dir_all(&outside).expect("mkdir outside");
    std::fs::write(outside.join("victim.txt"), ORIGINAL).expect("write victim");
    std::fs::write(outside.join("secret.txt"), SECRET).expect("write secret");
    (base, ws, outside)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn a_symlink_to_an_outside_file_is_refused_for_read_write_and_edit() {
    let (_base, ws, outside) = setup();
    std::os::unix::fs::symlink(outside.join("victim.txt"), ws.join("link.txt")).expect("symlink");
    let ctx = ToolContext::new(&ws);
    let rt = runtime();
    let read = rt
        .block_on(read_file(read_args("link.txt"), &ctx))
        .expect_err("read through link");
    assert!(matches!(read, ToolError::OutsideWorkspace { .. }), "{read}");
    let write = rt
        .block_on(write_file(write_args("link.txt", "PWNED"), &ctx))
        .expect_err("write through link");
    assert!(
        matches!(write, ToolError::OutsideWorkspace { .. }),
        "{write}"
    );
    let edit = rt
        .block_on(edit_file(
            EditFileArgs {
                path: "link.txt".into(),
                old_string: "original".into(),
                new_string: "PWNED".into(),
                replace_all: false,
                version: None,
            },
            &ctx,
        ))
        .expect_err("edit through link");
    assert!(matches!(edit, ToolError::OutsideWorkspace { .. }), "{edit}");
    assert_eq!(
        std::fs::read_to_string(outside.join("victim.txt")).expect("victim"),
        ORIGINAL
    );
}

/// Swaps `path` between a regular file and a symbolic link to `target` until `stop`, and
/// returns once it has swapped a few times, so the calls that follow overlap the swaps.
fn swapper(
    ws: &Path,
    name: &str,
    target: &Path,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    let swapped = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&swapped);
    let ws = ws.to_path_buf();
    let name = name.to_string();
    let target = target.to_path_buf();
    let handle = std::thread::spawn(move || {
        let path = ws.join(&name);
        let regular = ws.join(format!(".{name}.regular"));
        let link = ws.join(format!(".{name}.link"));
        let mut swaps = 0u64;
        while !stop.load(Ordering::Relaxed) {
            // Errors are expected while the handlers replace the same path; the swaps only stress.
            if std::fs::write(&regular, "inside\n").is_ok()
                && std::fs::rename(&regular, &path).is_ok()
            {
                swaps += 1;
                counted.store(swaps, Ordering::Relaxed);
            }
            let _ = std::fs::remove_file(&link);
            if std::os::unix::fs::symlink(&target, &link).is_ok()
                && std::fs::rename(&link, &path).is_ok()
            {
                swaps += 1;
                counted.store(swaps, Ordering::Relaxed);
            }
        }
        swaps
    });
    let started = Instant::now();
    while swapped.load(Ordering::Relaxed) < 4 && started.elapsed() < Duration::from_secs(2) {
        std::thread::yield_now();
    }
    handle
}

#[test]
fn a_symlink_swapped_in_during_calls_never_leads_outside() {
    const CALLS: usize = 200;
    let (_base, ws, outside) = setup();
    let ctx = ToolContext::new(&ws);
    let rt = runtime();
    let deadline = Instant::now() + Duration::from_secs(8);

    // Writes race a swap to the victim: the victim is never modified.
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(
        &ws,
        "race.txt",
        &outside.join("victim.txt"),
        Arc::clone(&stop),
    );
    for _ in 0..CALLS {
        if Instant::now() > deadline {
            break;
        }
        // Refusals (outside the workspace, changed while the call ran) are fine; a write
        // through the link is not.
        let _ = rt.block_on(write_file(write_args("race.txt", "PWNED\n"), &ctx));
        assert_eq!(
            std::fs::read_to_string(outside.join("victim.txt")).expect("victim"),
            ORIGINAL,
            "write_file followed a symbolic link out of the workspace"
        );
    }
    stop.store(true, Ordering::Relaxed);
    assert!(swaps.join().expect("swapper") > 0, "the swapper never ran");

    // Reads race a swap to the secret: the secret is never returned.
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(
        &ws,
        "peek.txt",
        &outside.join("secret.txt"),
        Arc::clone(&stop),
    );
    let mut reads = 0;
    for _ in 0..CALLS {
        if Instant::now() > deadline {
            break;
        }
        if let Ok(out) = rt.block_on(read_file(read_args("peek.txt"), &ctx)) {
            assert!(
                !out.content.contains("outside secret"),
                "read_file followed a symbolic link out of the workspace"
            );
            reads += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    assert!(swaps.join().expect("swapper") > 0, "the swapper never ran");
    // Most reads land on the regular file or are refused; the assertion is per read above.
    assert!(reads <= CALLS);
    assert_eq!(
        std::fs::read_to_string(outside.join("victim.txt")).expect("victim"),
        ORIGINAL
    );
}

#[test]
fn a_replace_is_refused_when_the_file_no_longer_holds_what_was_read() {
    let (_base, ws, _outside) = setup();
    std::fs::write(ws.join("notes.txt"), "alpha\nbeta\n").expect("write");
    let workspace = Workspace::open(&ToolContext::new(&ws)).expect("open");
    let abs = workspace.target("notes.txt").expect("inside");
    // What an edit read before a concurrent writer changed the file.
    let read = content_fingerprint(b"alpha\n");
    let err = workspace
        .replace(&abs, "notes.txt", b"ALPHA\n", &read)
        .expect_err("stale");
    assert!(
        err.to_string()
            .contains("`notes.txt` changed while the call ran; nothing was written; call again"),
        "{err}"
    );
    // A writer approved for a new file finds one there.
    let err = workspace
        .replace(&abs, "notes.txt", b"new\n", "absent")
        .expect_err("no longer absent");
    assert!(
        err.to_string().contains("changed while the call ran"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).expect("read"),
        "alpha\nbeta\n"
    );
    // With the current fingerprint the replace lands, and leaves no temporary file behind.
    let now = workspace
        .fingerprint(&abs, "notes.txt")
        .expect("fingerprint");
    assert_eq!(now, content_fingerprint(b"alpha\nbeta\n"));
    assert_eq!(
        now,
        toolcat::fingerprint_path(&abs).expect("fingerprint_path")
    );
    workspace
        .replace(&abs, "notes.txt", b"ALPHA\n", &now)
        .expect("current");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).expect("read"),
        "ALPHA\n"
    );
    let mut names: Vec<_> = std::fs::read_dir(&ws)
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    assert_eq!(names, [".toolcat", "notes.txt"]);
    // The lock file is removed as the lock is released.
    let locks: Vec<_> = std::fs::read_dir(ws.join(".toolcat/locks"))
        .expect("lock directory")
        .collect();
    assert!(locks.is_empty(), "{locks:?}");
}

#[test]
fn write_file_keeps_the_permissions_of_the_file_it_replaces() {
    use std::os::unix::fs::PermissionsExt;
    let (_base, ws, _outside) = setup();
    std::fs::write(ws.join("run.sh"), "#!/bin/sh\n").expect("write");
    std::fs::set_permissions(ws.join("run.sh"), std::fs::Permissions::from_mode(0o750))
        .expect("chmod");
    let ctx = ToolContext::new(&ws);
    runtime()
        .block_on(write_file(
            write_args("run.sh", "#!/bin/sh\necho hi\n"),
            &ctx,
        ))
        .expect("write");
    let meta = std::fs::metadata(ws.join("run.sh")).expect("meta");
    assert_eq!(meta.permissions().mode() & 0o777, 0o750);
}

#[test]
fn a_link_swapped_in_after_resolution_is_refused_by_every_open() {
    let (_base, ws, outside) = setup();
    std::fs::create_dir_all(ws.join("sub")).expect("mkdir");
    std::fs::write(ws.join("sub/victim.txt"), "inside\n").expect("write");
    std::fs::write(outside.join("doomed.txt"), ORIGINAL).expect("write");
    let workspace = Workspace::open(&ToolContext::new(&ws)).expect("open");
    // Resolved while `sub` is a directory inside the workspace...
    let file = workspace.existing("sub/victim.txt").expect("inside");
    let doomed = workspace.entry("sub/doomed.txt").expect("inside");
    let new_dir = workspace.target("sub/new/dir").expect("inside");
    // ...then `sub` becomes a link to the outside directory, and `victim.txt` a link too.
    std::fs::remove_dir_all(ws.join("sub")).expect("rm");
    std::os::unix::fs::symlink(&outside, ws.join("sub")).expect("symlink");
    let outside_err = |result: Result<(), ToolError>, what: &str| match result {
        Err(ToolError::OutsideWorkspace { .. }) => {}
        other => panic!("{what}: expected `OutsideWorkspace`, got {other:?}"),
    };
    outside_err(
        workspace.read(&file, "sub/victim.txt", 1024).map(drop),
        "read",
    );
    outside_err(
        workspace.replace(&file, "sub/victim.txt", b"PWNED", "absent"),
        "replace",
    );
    outside_err(
        workspace.parent_dir(&doomed, "sub/doomed.txt").map(drop),
        "parent_dir",
    );
    outside_err(
        workspace.create_dir_all(&new_dir, "sub/new/dir"),
        "create_dir_all",
    );
    outside_err(
        workspace.fingerprint(&file, "sub/victim.txt").map(drop),
        "fingerprint",
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("victim.txt")).expect("victim"),
        ORIGINAL
    );
    assert!(outside.join("doomed.txt").is_file());
    assert!(!outside.join("new").exists());
}

fn memory_args(content: &str) -> MemoryStoreArgs {
    MemoryStoreArgs {
        content: content.into(),
        tags: Vec::new(),
    }
}

fn todo_args(content: &str) -> TodoWriteArgs {
    serde_json::from_value(serde_json::json!({
        "todos": [{ "content": content, "status": "pending" }]
    }))
    .expect("todo_write arguments")
}

/// A symbolic link planted where the old state code put its fixed temporary file
/// (`.toolcat/FILE.json.tmp`), absolute or relative, to a file outside: `memory_store` and
/// `todo_write` store their state and never write through it; the approval names the state file
/// as it is under the workspace.
#[test]
fn a_symlink_planted_at_a_state_temp_path_is_never_written_through() {
    let (_base, ws, outside) = setup();
    std::fs::create_dir_all(ws.join(".toolcat")).expect("mkdir");
    std::os::unix::fs::symlink(
        outside.join("victim.txt"),
        ws.join(".toolcat/memory.json.tmp"),
    )
    .expect("absolute symlink");
    std::os::unix::fs::symlink(
        "../../outside/victim.txt",
        ws.join(".toolcat/todos.json.tmp"),
    )
    .expect("relative symlink");
    assert_eq!(
        std::fs::read_to_string(ws.join(".toolcat/todos.json.tmp")).expect("the link works"),
        ORIGINAL
    );
    let ctx = ToolContext::new(&ws);
    let root = std::fs::canonicalize(&ws).expect("canonical");
    assert_eq!(
        memory_store_targets(&memory_args("x"), &ctx).expect("targets"),
        [Target::path_lock(
            &root.join(".toolcat/memory.json"),
            Access::Write
        )]
    );
    let rt = runtime();
    rt.block_on(memory_store(memory_args("x"), &ctx))
        .expect("memory_store");
    rt.block_on(todo_write(todo_args("y"), &ctx))
        .expect("todo_write");
    assert_eq!(
        std::fs::read_to_string(outside.join("victim.txt")).expect("victim"),
        ORIGINAL,
        "a state write went through a planted symbolic link"
    );
    let memory = std::fs::read_to_string(ws.join(".toolcat/memory.json")).expect("memory");
    assert!(memory.contains("\"content\": \"x\""), "{memory}");
    let todos = std::fs::read_to_string(ws.join(".toolcat/todos.json")).expect("todos");
    assert!(todos.contains("\"content\": \"y\""), "{todos}");
    // The planted links are left as they are, not followed nor replaced.
    assert!(
        std::fs::symlink_metadata(ws.join(".toolcat/memory.json.tmp"))
            .expect("link")
            .file_type()
            .is_symlink()
    );
}

/// A symbolic link at a state file itself, or at `.toolcat`, is refused with a message that
/// names it; nothing outside changes.
#[test]
fn a_symlink_at_a_state_file_or_at_the_state_directory_is_refused() {
    let (_base, ws, outside) = setup();
    let ctx = ToolContext::new(&ws);
    let rt = runtime();
    std::fs::create_dir_all(ws.join(".toolcat")).expect("mkdir");
    std::os::unix::fs::symlink(outside.join("victim.txt"), ws.join(".toolcat/memory.json"))
        .expect("symlink");
    let err = rt
        .block_on(memory_store(memory_args("x"), &ctx))
        .expect_err("a link at the state file");
    assert!(
        err.to_string()
            .contains("`.toolcat/memory.json` is a symbolic link"),
        "{err}"
    );
    std::fs::remove_dir_all(ws.join(".toolcat")).expect("rm");
    std::os::unix::fs::symlink(&outside, ws.join(".toolcat")).expect("symlink");
    let err = rt
        .block_on(todo_write(todo_args("y"), &ctx))
        .expect_err("a link at .toolcat");
    assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err}");
    assert_eq!(
        std::fs::read_to_string(outside.join("victim.txt")).expect("victim"),
        ORIGINAL
    );
    assert!(!outside.join("todos.json").exists());
    assert!(!outside.join("locks").exists());
}

/// `grep` racing a swap of a file for a symbolic link to a file outside never returns the
/// outside content.
#[test]
fn grep_racing_a_symlink_swap_never_reads_outside() {
    const CALLS: usize = 400;
    let (_base, ws, outside) = setup();
    // Files searched before `peek.txt` (in path order) widen the window between the walk
    // seeing it as a regular file and the read.
    for i in 0..200 {
        std::fs::write(ws.join(format!("filler{i:03}.txt")), "filler\n").expect("write");
    }
    let ctx = ToolContext::new(&ws);
    let rt = runtime();
    let deadline = Instant::now() + Duration::from_secs(8);
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(
        &ws,
        "peek.txt",
        &outside.join("secret.txt"),
        Arc::clone(&stop),
    );
    let mut searched = 0;
    for _ in 0..CALLS {
        if Instant::now() > deadline {
            break;
        }
        let args = GrepArgs {
            pattern: "secret|inside".into(),
            path: None,
            glob: None,
            case_insensitive: false,
            output: GrepOutputMode::Content,
            include_ignored: true,
            max_results: None,
        };
        let out = rt.block_on(grep(args, &ctx)).expect("grep");
        for m in &out.matches {
            assert!(
                !m.text.contains("outside secret"),
                "grep read `{}` through a symbolic link out of the workspace",
                m.path
            );
        }
        searched += out.files_searched;
    }
    stop.store(true, Ordering::Relaxed);
    assert!(swaps.join().expect("swapper") > 0, "the swapper never ran");
    assert!(searched > 0, "grep never searched a file");
}

/// `read_file`, `propose_edit` and `edit_file` on a FIFO are refused promptly, even two at a
/// time on a runtime of two workers (as the MCP server has), and an ordinary call still runs.
#[test]
fn fifos_are_refused_without_stalling_the_runtime() {
    let (_base, ws, _outside) = setup();
    let fifo = ws.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("skipped: `mkfifo` is not available to make a FIFO on this machine");
        return;
    }
    std::fs::write(ws.join("plain.txt"), "plain\n").expect("write");
    let (done, results) = std::sync::mpsc::channel();
    let ws_for_calls = ws.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let ctx = ToolContext::new(&ws_for_calls);
        let errors = rt.block_on(async {
            let edit = || EditFileArgs {
                path: "pipe".into(),
                old_string: "a".into(),
                new_string: "b".into(),
                replace_all: false,
                version: None,
            };
            let (one, two, three, four) = tokio::join!(
                read_file(read_args("pipe"), &ctx),
                read_file(read_args("pipe"), &ctx),
                propose_edit(edit(), &ctx),
                edit_file(edit(), &ctx),
            );
            let plain = read_file(read_args("plain.txt"), &ctx).await;
            (
                [
                    one.map(drop),
                    two.map(drop),
                    three.map(drop),
                    four.map(drop),
                ],
                plain.map(|out| out.content),
            )
        });
        let _ = done.send(errors);
    });
    let (errors, plain) = results
        .recv_timeout(Duration::from_secs(30))
        .expect("calls on a FIFO stalled the runtime");
    for result in errors {
        let err = result.expect_err("a FIFO is refused");
        assert!(
            err.to_string()
                .contains("`pipe` is a FIFO, not a regular file"),
            "{err}"
        );
    }
    assert_eq!(plain.expect("an ordinary read"), "plain");
}

/// Swaps the directory `ws/d` with a symbolic link to `target` (by renames: `d` aside, the link
/// in, back) until `stop`, returning once it has swapped a few times.
fn dir_swapper(ws: &Path, target: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let swapped = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&swapped);
    let (d, real, link) = (ws.join("d"), ws.join(".d.real"), ws.join(".d.link"));
    std::os::unix::fs::symlink(target, &link).expect("symlink");
    let handle = std::thread::spawn(move || {
        let mut swaps = 0u64;
        while !stop.load(Ordering::Relaxed) {
            if std::fs::rename(&d, &real).is_ok() && std::fs::rename(&link, &d).is_ok() {
                swaps += 1;
                counted.store(swaps, Ordering::Relaxed);
            }
            let _ = std::fs::rename(&d, &link);
            let _ = std::fs::rename(&real, &d);
        }
        swaps
    });
    let started = Instant::now();
    while swapped.load(Ordering::Relaxed) < 4 && started.elapsed() < Duration::from_secs(2) {
        std::thread::yield_now();
    }
    handle
}

/// `glob` and `find_files` racing a swap of a directory for a symbolic link to a folder outside
/// never list a name from outside.
#[test]
fn glob_racing_a_directory_swap_never_lists_outside_names() {
    const CALLS: usize = 200;
    let (_base, ws, outside) = setup();
    std::fs::create_dir(ws.join("d")).expect("mkdir");
    for i in 0..50 {
        std::fs::write(ws.join(format!("d/inside{i:02}.txt")), "x\n").expect("write");
        std::fs::write(outside.join(format!("OUTSIDE_{i}")), "x\n").expect("write");
    }
    let ctx = ToolContext::new(&ws);
    let rt = runtime();
    let deadline = Instant::now() + Duration::from_secs(8);
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = dir_swapper(&ws, &outside, Arc::clone(&stop));
    let mut listed = 0;
    for i in 0..CALLS {
        if Instant::now() > deadline {
            break;
        }
        let out = if i % 2 == 0 {
            let args = GlobArgs {
                pattern: "**".into(),
                path: None,
                include_ignored: true,
                max_results: None,
            };
            rt.block_on(glob(args, &ctx)).expect("glob")
        } else {
            let args = FindFilesArgs {
                name: "_".into(),
                max_results: None,
            };
            rt.block_on(find_files(args, &ctx)).expect("find_files")
        };
        for m in &out.matches {
            assert!(
                !m.contains("OUTSIDE"),
                "`{m}` was listed through a symbolic link out of the workspace"
            );
        }
        listed += out.matches.len();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(
        swaps.join().expect("dir swapper") > 0,
        "the swapper never ran"
    );
    assert!(listed > 0, "nothing was ever listed");
}
