//! File tools never reach outside the workspace through a symbolic link, not even one swapped in
//! while the call runs; writers replace a file only if it still holds what they read.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolcat::{ToolContext, ToolError};
use toolcat_cli::handlers::files::{
    edit_file, read_file, write_file, EditArgs, ReadFileArgs, WriteFileArgs,
};
use toolcat_cli::handlers::workspace::{content_fingerprint, Workspace};

const SECRET: &str = "outside secret, never to be read\n";
const ORIGINAL: &str = "original\n";

fn read_args(path: &str) -> ReadFileArgs {
    ReadFileArgs {
        path: path.into(),
        offset: None,
        limit: None,
    }
}

fn write_args(path: &str, content: &str) -> WriteFileArgs {
    WriteFileArgs {
        path: path.into(),
        content: content.into(),
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
            EditArgs {
                path: "link.txt".into(),
                old_string: "original".into(),
                new_string: "PWNED".into(),
                replace_all: false,
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
    let names: Vec<_> = std::fs::read_dir(&ws)
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["notes.txt"]);
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
