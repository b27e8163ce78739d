//! The file tools of `toolcat_tools::files` on a real temporary workspace: versions, the three
//! edit protocols, change evidence, and that a refused edit writes nothing.

use std::path::Path;

use toolcat::{ToolContext, ToolError};
use toolcat_tools::edit::hashline;
use toolcat_tools::files::{
    apply_patch, apply_patch_targets, edit_file, edit_file_targets, edit_lines, read_file,
    version_of, write_file, ApplyPatchArgs, EditFileArgs, EditLinesArgs, Guard, PatchAction,
    ReadFileArgs, ReadFormat, WriteFileArgs,
};
use toolcat_tools::workspace::{content_fingerprint, LOCK_DIR, STATE_DIR};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().expect("temp dir");
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    let ctx = ToolContext::new(dir.path());
    (dir, ctx)
}

fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).expect("read")
}

fn read_args(path: &str, format: Option<ReadFormat>) -> ReadFileArgs {
    ReadFileArgs {
        path: path.into(),
        offset: None,
        limit: None,
        format,
    }
}

fn edit_args(path: &str, old: &str, new: &str, version: Option<String>) -> EditFileArgs {
    EditFileArgs {
        path: path.into(),
        old_string: old.into(),
        new_string: new.into(),
        replace_all: false,
        version,
    }
}

fn failure(e: ToolError) -> String {
    e.to_string()
}

#[test]
fn read_file_returns_the_version_of_the_bytes() {
    let (_dir, ctx) = workspace(&[("a.txt", "one\ntwo\n")]);
    let out = runtime()
        .block_on(read_file(read_args("a.txt", None), &ctx))
        .expect("read");
    assert_eq!(out.version, version_of(b"one\ntwo\n"));
    assert_eq!(out.version.len(), 16);
    assert_eq!(out.content, "one\ntwo");
}

#[test]
fn an_edit_carrying_a_stale_version_is_refused_in_prepare_and_in_the_handler() {
    let (dir, ctx) = workspace(&[("a.txt", "alpha\nbeta\n")]);
    let rt = runtime();
    let version = rt
        .block_on(read_file(read_args("a.txt", None), &ctx))
        .expect("read")
        .version;
    std::fs::write(dir.path().join("a.txt"), "alpha\nBETA\n").expect("external change");
    let args = edit_args("a.txt", "alpha", "ALPHA", Some(version.clone()));
    let prepared = edit_file_targets(&args, &ctx).expect_err("stale in prepare");
    assert!(
        failure(prepared).contains("changed since the read"),
        "prepare refuses"
    );
    let err = rt.block_on(edit_file(args, &ctx)).expect_err("stale");
    let message = failure(err);
    assert!(
        message.contains(&format!("version `{version}`")),
        "{message}"
    );
    assert!(message.contains("nothing was written"), "{message}");
    assert_eq!(read(dir.path(), "a.txt"), "alpha\nBETA\n");
}

#[test]
fn an_edit_with_the_current_version_applies_and_reports_its_evidence() {
    let (dir, ctx) = workspace(&[("a.txt", "alpha\nbeta\n")]);
    let rt = runtime();
    let version = rt
        .block_on(read_file(read_args("a.txt", None), &ctx))
        .expect("read")
        .version;
    let out = rt
        .block_on(edit_file(
            edit_args("a.txt", "beta", "gamma", Some(version)),
            &ctx,
        ))
        .expect("edit");
    assert_eq!(out.guard, Guard::Version);
    assert_eq!(read(dir.path(), "a.txt"), "alpha\ngamma\n");
    assert_eq!(out.change.path, "a.txt");
    assert_eq!(out.change.before, content_fingerprint(b"alpha\nbeta\n"));
    assert_eq!(out.change.after, content_fingerprint(b"alpha\ngamma\n"));
    assert!(
        out.change.diff.contains("-beta\n+gamma"),
        "{}",
        out.change.diff
    );
    assert_eq!(out.version, version_of(b"alpha\ngamma\n"));
    // Without a version the guard is the prepare step's fingerprint.
    let out = rt
        .block_on(edit_file(edit_args("a.txt", "gamma", "delta", None), &ctx))
        .expect("edit");
    assert_eq!(out.guard, Guard::Prepare);
}

#[test]
fn a_tolerant_match_says_so_and_shows_the_lines_it_matched() {
    let (dir, ctx) = workspace(&[("a.rs", "fn main() {\n    let x = 1;   \n    go(x);\n}\n")]);
    let out = runtime()
        .block_on(edit_file(
            edit_args("a.rs", "let x = 1;\ngo(x);", "let x = 2;\ngo(x);", None),
            &ctx,
        ))
        .expect("tolerant edit");
    let matched = serde_json::to_value(&out.matched).expect("json");
    assert_eq!(matched["kind"], "tolerant", "{matched}");
    assert_eq!(matched["start_line"], 2, "{matched}");
    assert_eq!(matched["end_line"], 3, "{matched}");
    assert_eq!(
        read(dir.path(), "a.rs"),
        "fn main() {\n    let x = 2;\n    go(x);\n}\n"
    );
}

#[test]
fn an_ambiguous_replace_is_refused_with_the_candidate_lines_and_writes_nothing() {
    let text = "a\nx = 1\nb\nx = 1\n";
    let (dir, ctx) = workspace(&[("a.txt", text)]);
    let err = runtime()
        .block_on(edit_file(edit_args("a.txt", "x = 1", "x = 2", None), &ctx))
        .expect_err("ambiguous");
    let message = failure(err);
    assert!(message.contains('2') && message.contains('4'), "{message}");
    assert_eq!(read(dir.path(), "a.txt"), text);
}

#[test]
fn a_non_utf8_file_is_refused_by_an_edit_and_kept_byte_for_byte() {
    let bytes = b"caf\xe9 latte\n".to_vec();
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("a.txt"), &bytes).expect("write");
    let ctx = ToolContext::new(dir.path());
    let err = runtime()
        .block_on(edit_file(edit_args("a.txt", "latte", "mocha", None), &ctx))
        .expect_err("not utf-8");
    assert!(failure(err).contains("not valid UTF-8"));
    assert_eq!(
        std::fs::read(dir.path().join("a.txt")).expect("read"),
        bytes
    );
}

#[test]
fn hashline_read_then_edit_applies_and_a_stale_anchor_is_refused_naming_the_line() {
    let text = "one\ntwo\nthree\n";
    let (dir, ctx) = workspace(&[("a.txt", text)]);
    let rt = runtime();
    let out = rt
        .block_on(read_file(
            read_args("a.txt", Some(ReadFormat::Hashline)),
            &ctx,
        ))
        .expect("read");
    assert_eq!(out.content, hashline::render(text, 1, 3));
    let two = hashline::anchor(2, "two");
    assert!(out.content.contains(&two), "{}", out.content);
    let edit = |start: &str| EditLinesArgs {
        path: "a.txt".into(),
        edits: vec![hashline::LineEdit {
            op: hashline::LineOp::Replace,
            start: start.into(),
            end: None,
            content: Some("TWO".into()),
        }],
        version: None,
    };
    let done = rt.block_on(edit_lines(edit(&two), &ctx)).expect("edit");
    assert_eq!((done.lines_removed, done.lines_added), (1, 1));
    assert_eq!(read(dir.path(), "a.txt"), "one\nTWO\nthree\n");
    // The same anchor again: line 2 is now `TWO`, so the anchor is stale.
    let err = rt
        .block_on(edit_lines(edit(&two), &ctx))
        .expect_err("stale");
    let message = failure(err);
    assert!(message.contains('2'), "{message}");
    assert_eq!(read(dir.path(), "a.txt"), "one\nTWO\nthree\n");
}

#[test]
fn overlapping_line_operations_are_refused_and_nothing_is_written() {
    let text = "one\ntwo\nthree\n";
    let (dir, ctx) = workspace(&[("a.txt", text)]);
    let op = |start: usize, end: usize| hashline::LineEdit {
        op: hashline::LineOp::Replace,
        start: hashline::anchor(start, text.lines().nth(start - 1).expect("line")),
        end: Some(hashline::anchor(
            end,
            text.lines().nth(end - 1).expect("line"),
        )),
        content: Some("X".into()),
    };
    let err = runtime()
        .block_on(edit_lines(
            EditLinesArgs {
                path: "a.txt".into(),
                edits: vec![op(1, 2), op(2, 3)],
                version: None,
            },
            &ctx,
        ))
        .expect_err("overlap");
    assert!(!failure(err).is_empty());
    assert_eq!(read(dir.path(), "a.txt"), text);
}

#[test]
fn a_patch_whose_second_file_does_not_match_writes_no_file() {
    let (dir, ctx) = workspace(&[("a.txt", "a1\na2\n"), ("b.txt", "b1\nb2\n")]);
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a1\n+A1\n a2\n*** Update File: b.txt\n@@\n-nope\n+B1\n*** End Patch\n";
    let err = runtime()
        .block_on(apply_patch(
            ApplyPatchArgs {
                patch: patch.into(),
                versions: Default::default(),
            },
            &ctx,
        ))
        .expect_err("context not found");
    let message = failure(err);
    assert!(message.contains("b.txt"), "{message}");
    assert!(message.contains("nothing was written"), "{message}");
    assert_eq!(read(dir.path(), "a.txt"), "a1\na2\n");
    assert_eq!(read(dir.path(), "b.txt"), "b1\nb2\n");
}

#[test]
fn a_patch_adds_updates_moves_and_deletes_with_evidence_for_each() {
    let (dir, ctx) = workspace(&[
        ("a.txt", "a1\na2\n"),
        ("old.txt", "o1\n"),
        ("gone.txt", "g\n"),
    ]);
    let patch = "*** Begin Patch\n*** Add File: new/n.txt\n+fresh\n*** Update File: a.txt\n@@\n a1\n-a2\n+A2\n*** Update File: old.txt\n*** Move to: moved.txt\n@@\n-o1\n+O1\n*** Delete File: gone.txt\n*** End Patch\n";
    let args = ApplyPatchArgs {
        patch: patch.into(),
        versions: Default::default(),
    };
    let targets = apply_patch_targets(&args, &ctx).expect("targets");
    assert_eq!(targets.len(), 5, "{targets:?}");
    let out = runtime().block_on(apply_patch(args, &ctx)).expect("patch");
    let actions: Vec<_> = out.files.iter().map(|f| f.action).collect();
    assert_eq!(
        actions,
        [
            PatchAction::Added,
            PatchAction::Updated,
            PatchAction::Moved,
            PatchAction::Deleted
        ]
    );
    assert_eq!(read(dir.path(), "new/n.txt"), "fresh\n");
    assert_eq!(read(dir.path(), "a.txt"), "a1\nA2\n");
    assert_eq!(read(dir.path(), "moved.txt"), "O1\n");
    assert!(!dir.path().join("old.txt").exists());
    assert!(!dir.path().join("gone.txt").exists());
    let paths: Vec<_> = out.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        paths,
        ["new/n.txt", "a.txt", "moved.txt", "old.txt", "gone.txt"]
    );
    assert_eq!(out.changes[0].before, "absent");
    assert_eq!(out.changes[4].after, "absent");
}

#[test]
fn a_patch_adding_an_existing_file_is_refused_before_anything_runs() {
    let (dir, ctx) = workspace(&[("a.txt", "keep\n")]);
    let args = ApplyPatchArgs {
        patch: "*** Begin Patch\n*** Add File: a.txt\n+new\n*** End Patch\n".into(),
        versions: Default::default(),
    };
    let err = apply_patch_targets(&args, &ctx).expect_err("exists");
    assert!(failure(err).contains("already exists"));
    let err = runtime()
        .block_on(apply_patch(args, &ctx))
        .expect_err("exists");
    assert!(failure(err).contains("already exists"));
    assert_eq!(read(dir.path(), "a.txt"), "keep\n");
}

#[test]
fn a_patch_that_fails_on_its_second_file_says_what_was_written() {
    let (dir, ctx) = workspace(&[("a.txt", "a1\n"), ("b.txt", "b1\n")]);
    // Another writer holds `b.txt`'s lock of the write layer: the first file is written, the
    // second waits for the lock, gives up, and the answer must say which is which.
    let locks = dir.path().join(STATE_DIR).join(LOCK_DIR);
    std::fs::create_dir_all(&locks).expect("mkdir locks");
    let hash = content_fingerprint(b"b.txt");
    let lock = std::fs::File::create(locks.join(format!("{}.lock", &hash[7..39]))).expect("lock");
    lock.lock().expect("hold the lock");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a1\n+A1\n*** Update File: b.txt\n@@\n-b1\n+B1\n*** End Patch\n";
    let err = runtime()
        .block_on(apply_patch(
            ApplyPatchArgs {
                patch: patch.into(),
                versions: Default::default(),
            },
            &ctx,
        ))
        .expect_err("second file fails");
    let message = failure(err);
    assert!(message.contains("applied in part"), "{message}");
    assert!(message.contains("written: `a.txt`"), "{message}");
    assert!(message.contains("`b.txt` failed"), "{message}");
    assert_eq!(read(dir.path(), "a.txt"), "A1\n");
    assert_eq!(read(dir.path(), "b.txt"), "b1\n");
}

#[test]
fn creating_a_file_never_replaces_one_that_appeared() {
    // `write_file` of a path absent at prepare, which then appears (an editor's save): the
    // layer's create refuses, keeping the other file.
    let (dir, ctx) = workspace(&[]);
    let ws = toolcat_tools::workspace::Workspace::open(&ctx).expect("open");
    let abs = ws.target("n.txt").expect("target");
    let work = toolcat_tools::workspace::FileWork::default();
    let err = ws
        .write_atomically(&abs, "n.txt", None, &work, |old| {
            assert!(old.is_none());
            std::fs::write(dir.path().join("n.txt"), "theirs\n").expect("appears");
            Ok((b"ours\n".to_vec(), ()))
        })
        .expect_err("appeared");
    assert!(failure(err).contains("appeared while the call ran"));
    assert_eq!(read(dir.path(), "n.txt"), "theirs\n");
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n != STATE_DIR)
        .collect();
    assert_eq!(names, ["n.txt"]);
}

#[test]
fn write_file_reports_creation_and_its_evidence() {
    let (dir, ctx) = workspace(&[]);
    let out = runtime()
        .block_on(write_file(
            WriteFileArgs {
                path: "d/new.txt".into(),
                content: "hello\n".into(),
                version: None,
            },
            &ctx,
        ))
        .expect("write");
    assert!(out.created);
    assert_eq!(out.change.before, "absent");
    assert_eq!(out.change.after, content_fingerprint(b"hello\n"));
    assert_eq!(read(dir.path(), "d/new.txt"), "hello\n");
}

/// Every file of the workspace (relative paths, sorted), `.toolcat/` left out, with content.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).expect("list") {
            let path = entry.expect("entry").path();
            let rel = path.strip_prefix(dir).expect("inside");
            if rel.starts_with(STATE_DIR) {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).expect("meta");
            if meta.is_dir() {
                stack.push(path.clone());
            }
            let content = if meta.is_file() {
                std::fs::read(&path).expect("read")
            } else {
                Vec::new()
            };
            out.push((rel.to_string_lossy().into_owned(), content));
        }
    }
    out.sort();
    out
}

fn patch_args(patch: &str, versions: &[(&str, &str)]) -> ApplyPatchArgs {
    ApplyPatchArgs {
        patch: patch.into(),
        versions: versions
            .iter()
            .map(|(p, v)| (p.to_string(), v.to_string()))
            .collect(),
    }
}

/// `patch` is refused in prepare and by the handler with a message containing `expected`, and
/// the workspace is as it was.
fn patch_refused(dir: &Path, ctx: &ToolContext, args: ApplyPatchArgs, expected: &str) -> String {
    let before = snapshot(dir);
    let err = apply_patch_targets(&args, ctx).expect_err("refused in prepare");
    assert!(failure(err).contains(expected), "prepare: {expected}");
    let message = failure(
        runtime()
            .block_on(apply_patch(args, ctx))
            .expect_err("refused"),
    );
    assert!(message.contains(expected), "{message}");
    assert!(
        message.contains("nothing was written") || message.contains("nothing was read or written"),
        "{message}"
    );
    assert_eq!(snapshot(dir), before, "{message}");
    message
}

#[test]
fn a_version_that_is_not_one_is_refused_as_such() {
    let (dir, ctx) = workspace(&[("a.txt", "alpha\n")]);
    let rt = runtime();
    for garbage in [
        "",
        "hello",
        "latest",
        "b6285c57e8797db5d4",
        "zz285c57e8797db5",
    ] {
        let args = edit_args("a.txt", "alpha", "beta", Some(garbage.into()));
        let message = failure(edit_file_targets(&args, &ctx).expect_err(garbage));
        assert!(message.contains("is not a version of `a.txt`"), "{message}");
        assert!(message.contains("16 hex digits"), "{message}");
        let message = failure(rt.block_on(edit_file(args, &ctx)).expect_err(garbage));
        assert!(message.contains("is not a version"), "{message}");
        assert!(!message.contains("changed since"), "{message}");
    }
    assert_eq!(read(dir.path(), "a.txt"), "alpha\n");
    // The real version, in upper case and with spaces around it, is the same version.
    let version = format!(" {} ", version_of(b"alpha\n").to_uppercase());
    let out = rt
        .block_on(edit_file(
            edit_args("a.txt", "alpha", "beta", Some(version)),
            &ctx,
        ))
        .expect("edit");
    assert_eq!(out.guard, Guard::Version);
    assert_eq!(read(dir.path(), "a.txt"), "beta\n");
}

#[test]
fn the_file_tools_never_write_toolcat_state_or_git_internals() {
    let (dir, ctx) = workspace(&[
        (".git/config", "[core]\n"),
        ("sub/.git/HEAD", "ref: refs/heads/main\n"),
        (".toolcat/memory.json", "{}\n"),
        ("a.txt", "alpha\n"),
    ]);
    std::os::unix::fs::symlink(".git/config", dir.path().join("cfg")).expect("symlink");
    let before = snapshot(dir.path());
    let rt = runtime();
    for (path, expected) in [
        (".git/hooks/pre-commit", "inside a `.git` directory"),
        (".git/config", "inside a `.git` directory"),
        ("sub/.git/HEAD", "inside a `.git` directory"),
        (".GIT/config", "inside a `.git` directory"),
        ("cfg", "inside a `.git` directory"),
        (".toolcat/memory.json", "toolcat's own state"),
        (".toolcat/calls.sqlite", "toolcat's own state"),
        ("./.toolcat/locks/x.lock", "toolcat's own state"),
    ] {
        let args = WriteFileArgs {
            path: path.into(),
            content: "#!/bin/sh\n".into(),
            version: None,
        };
        let message = failure(rt.block_on(write_file(args, &ctx)).expect_err(path));
        assert!(message.contains(expected), "{path}: {message}");
        assert!(message.contains("nothing was written"), "{message}");
        if dir.path().join(path).is_file() {
            let args = edit_args(path, "[core]", "[x]", None);
            assert!(edit_file_targets(&args, &ctx).is_err(), "{path}");
            assert!(rt.block_on(edit_file(args, &ctx)).is_err(), "{path}");
        }
    }
    let refused = [
        "*** Begin Patch\n*** Add File: .git/hooks/post-checkout\n+#!/bin/sh\n*** End Patch\n",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: .git/hooks/pre-push\n@@\n-alpha\n+#!/bin/sh\n*** End Patch\n",
        "*** Begin Patch\n*** Delete File: .toolcat/memory.json\n*** End Patch\n",
        "*** Begin Patch\n*** Update File: .git/config\n@@\n-[core]\n+[core]\n+\thooksPath = x\n*** End Patch\n",
    ];
    for patch in refused {
        let message = failure(
            rt.block_on(apply_patch(patch_args(patch, &[]), &ctx))
                .expect_err(patch),
        );
        assert!(message.contains("never write there"), "{message}");
    }
    assert_eq!(snapshot(dir.path()), before);
    // Reading them is not refused.
    let out = rt
        .block_on(read_file(read_args(".git/config", None), &ctx))
        .expect("read");
    assert_eq!(out.content, "[core]");
}

#[test]
fn paths_with_control_characters_or_under_a_file_are_refused_naming_the_fix() {
    let (dir, ctx) = workspace(&[("f.txt", "x\n")]);
    let rt = runtime();
    for (path, expected) in [
        ("a\0b.txt", "control character U+0000"),
        ("a\nb.txt", "control character U+000A"),
        ("d/\u{1b}[31m.txt", "control character U+001B"),
        (
            "f.txt/new.txt",
            "`f.txt` is a file, so `f.txt/new.txt` cannot be inside it",
        ),
        ("f.txt/d/new.txt", "`f.txt` is a file"),
    ] {
        let args = WriteFileArgs {
            path: path.into(),
            content: "x".into(),
            version: None,
        };
        let message = failure(rt.block_on(write_file(args, &ctx)).expect_err(path));
        assert!(message.contains(expected), "{path}: {message}");
        assert!(
            !message.contains('\0') && !message.contains('\n'),
            "{message:?}"
        );
    }
    let message = patch_refused(
        dir.path(),
        &ctx,
        patch_args(
            "*** Begin Patch\n*** Add File: f.txt/new.txt\n+x\n*** End Patch\n",
            &[],
        ),
        "is a file, so",
    );
    assert!(message.contains("f.txt/new.txt"), "{message}");
    assert_eq!(snapshot(dir.path()), [("f.txt".into(), b"x\n".to_vec())]);
}

#[test]
fn a_patch_naming_one_path_inside_another_writes_nothing() {
    // Both created: the first write would make the second impossible, a half-applied patch.
    let (dir, ctx) = workspace(&[("a.txt", "a\n")]);
    for patch in [
        "*** Begin Patch\n*** Add File: n\n+x\n*** Add File: n/m\n+y\n*** End Patch\n",
        "*** Begin Patch\n*** Add File: n/m/k\n+y\n*** Add File: n\n+x\n*** End Patch\n",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: n\n@@\n-a\n+b\n*** Add File: n/m\n+y\n*** End Patch\n",
    ] {
        patch_refused(
            dir.path(),
            &ctx,
            patch_args(patch, &[]),
            "another file of the patch",
        );
    }
}

#[test]
fn a_patch_deleting_or_moving_a_link_or_a_directory_is_refused() {
    let (dir, ctx) = workspace(&[("real.txt", "r\n"), ("d/f.txt", "f\n")]);
    std::os::unix::fs::symlink("real.txt", dir.path().join("link.txt")).expect("symlink");
    // Deleting `link.txt` must not delete `real.txt`, nor a move of it remove `real.txt`.
    let message = patch_refused(
        dir.path(),
        &ctx,
        patch_args(
            "*** Begin Patch\n*** Delete File: link.txt\n*** End Patch\n",
            &[],
        ),
        "`link.txt` is a symbolic link",
    );
    assert!(message.contains("`delete_path`"), "{message}");
    patch_refused(
        dir.path(),
        &ctx,
        patch_args(
            "*** Begin Patch\n*** Update File: link.txt\n*** Move to: moved.txt\n@@\n-r\n+R\n*** End Patch\n",
            &[],
        ),
        "`link.txt` is a symbolic link",
    );
    let message = patch_refused(
        dir.path(),
        &ctx,
        patch_args("*** Begin Patch\n*** Delete File: d\n*** End Patch\n", &[]),
        "`d` is a directory",
    );
    assert!(message.contains("`delete_path`"), "{message}");
    patch_refused(
        dir.path(),
        &ctx,
        patch_args(
            "*** Begin Patch\n*** Update File: d\n@@\n-f\n+F\n*** End Patch\n",
            &[],
        ),
        "`d` is a directory",
    );
    // Updating through a link inside the workspace changes the file it points to, and says so.
    let out = runtime()
        .block_on(apply_patch(
            patch_args(
                "*** Begin Patch\n*** Update File: link.txt\n@@\n-r\n+R\n*** End Patch\n",
                &[],
            ),
            &ctx,
        ))
        .expect("update through the link");
    assert_eq!(out.files[0].path, "real.txt");
    assert_eq!(out.changes[0].path, "real.txt");
    assert_eq!(read(dir.path(), "real.txt"), "R\n");
    assert!(std::fs::symlink_metadata(dir.path().join("link.txt"))
        .expect("link kept")
        .is_symlink());
}

#[test]
fn a_patch_moving_a_file_onto_itself_or_changing_nothing_is_refused() {
    let (dir, ctx) = workspace(&[("a.txt", "a\nb\n"), ("d/x.txt", "x\n")]);
    for to in ["a.txt", "./a.txt", "d/../a.txt"] {
        let patch = format!(
            "*** Begin Patch\n*** Update File: a.txt\n*** Move to: {to}\n@@\n-a\n+A\n*** End Patch\n"
        );
        let message = patch_refused(dir.path(), &ctx, patch_args(&patch, &[]), "itself");
        assert!(
            message.contains("remove the `*** Move to` line"),
            "{message}"
        );
    }
    // Context only, or a line removed and added back: the handler refuses, writing nothing.
    for hunk in ["@@\n a\n", "@@\n-a\n+a\n b\n"] {
        let patch = format!("*** Begin Patch\n*** Update File: a.txt\n{hunk}*** End Patch\n");
        let err = runtime()
            .block_on(apply_patch(patch_args(&patch, &[]), &ctx))
            .expect_err("no change");
        let message = failure(err);
        assert!(message.contains("leave it as it is"), "{message}");
        assert!(message.contains("nothing was written"), "{message}");
    }
    assert_eq!(read(dir.path(), "a.txt"), "a\nb\n");
    // Named twice by the same spelling: the message does not repeat it.
    let message = patch_refused(
        dir.path(),
        &ctx,
        patch_args(
            "*** Begin Patch\n*** Delete File: a.txt\n*** Delete File: a.txt\n*** End Patch\n",
            &[],
        ),
        "names `a.txt` twice;",
    );
    assert!(!message.contains("also as"), "{message}");
}

#[test]
fn a_patch_version_keyed_by_another_path_is_refused_not_ignored() {
    let (dir, ctx) = workspace(&[("a.txt", "a\n")]);
    let version = version_of(b"a\n");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: n.txt\n+n\n*** End Patch\n";
    for key in ["./a.txt", "b.txt", "n.txt"] {
        let message = patch_refused(
            dir.path(),
            &ctx,
            patch_args(patch, &[(key, &version)]),
            &format!("`versions` has a version for `{key}`"),
        );
        assert!(
            message.contains("it updates or deletes `a.txt`"),
            "{message}"
        );
    }
    let out = runtime()
        .block_on(apply_patch(patch_args(patch, &[("a.txt", &version)]), &ctx))
        .expect("keyed as written");
    assert_eq!(out.guard, Guard::Version);
    assert_eq!(read(dir.path(), "a.txt"), "A\n");
}

#[test]
fn read_file_of_an_empty_file_past_its_end_reports_no_lines() {
    let (_dir, ctx) = workspace(&[("e.txt", "")]);
    let out = runtime()
        .block_on(read_file(
            ReadFileArgs {
                path: "e.txt".into(),
                offset: Some(5),
                limit: None,
                format: Some(ReadFormat::Hashline),
            },
            &ctx,
        ))
        .expect("read");
    assert_eq!(
        (out.start_line, out.end_line, out.total_lines, out.truncated),
        (0, 0, 0, false)
    );
    assert_eq!(out.content, "");
}
