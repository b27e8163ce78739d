//! Workspace files: `read_file`, `write_file`, `edit_file`, `propose_edit`, `edit_lines`,
//! `apply_patch` (mounted from [`toolcat_tools::files`], one line each), and `list_directory`,
//! `create_directory`, `move_path`, `delete_path`, `file_info`.
//!
//! The reading and editing tools, their limits, versions, guards and change evidence are
//! documented in [`toolcat_tools::files`]; `list_directory` returns at most
//! [`LIST_MAX_ENTRIES`] entries.
//!
//! Prepare steps (`#[tool(prepare = ...)]`, run by the execution coordinator before approval and
//! again under the resource locks): every tool here that takes a path names the canonical path
//! it touches as resource `file:PATH`. Tools that change a path declare write access with a
//! fingerprint of what is there now ([`toolcat::fingerprint_path`]: the content's SHA-256, or
//! `absent`), so an approval is for that content and a change in between refuses the call; tools
//! that only read declare read access without a fingerprint. Writers call
//! [`ToolContext::committed`] once the change is on disk.
//!
//! Everything goes through the workspace's capability directory ([`Workspace`]):
//! `list_directory`, `file_info`, `create_directory`, `move_path` and `delete_path` act through
//! [`Workspace::list`], [`Workspace::entry_metadata`], [`Workspace::create_dir_all`] and
//! [`Workspace::parent_dir`], so a symbolic link swapped in after the path was resolved cannot
//! lead outside the workspace.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolcat::{Access, Target, ToolContext, ToolError};
use toolcat_tools::files as tools;
use toolcat_tools::workspace::{blocking, not_found, Workspace};

use super::{failed, rfc3339};

pub use toolcat_tools::files::{
    is_binary, ApplyPatchArgs, ApplyPatchOutput, EditFileArgs, EditFileOutput, EditLinesArgs,
    EditLinesOutput, ProposeEditOutput, ReadFileArgs, ReadFileOutput, WriteFileArgs,
    WriteFileOutput, READ_DEFAULT_LINES, READ_MAX_FILE_BYTES, READ_MAX_OUTPUT_BYTES,
};

/// Most entries `list_directory` returns.
pub const LIST_MAX_ENTRIES: usize = 1000;

/// Reads a window of lines of a text file, with its version (plain or Hashline).
#[toolcat::tool(prepare = tools::read_file_targets)]
pub async fn read_file(args: ReadFileArgs, ctx: &ToolContext) -> Result<ReadFileOutput, ToolError> {
    tools::read_file(args, ctx).await
}

/// Writes a whole file.
#[toolcat::tool(prepare = tools::write_file_targets)]
pub async fn write_file(
    args: WriteFileArgs,
    ctx: &ToolContext,
) -> Result<WriteFileOutput, ToolError> {
    tools::write_file(args, ctx).await
}

/// Replaces a piece of text in a file (string replace).
#[toolcat::tool(prepare = tools::edit_file_targets)]
pub async fn edit_file(args: EditFileArgs, ctx: &ToolContext) -> Result<EditFileOutput, ToolError> {
    tools::edit_file(args, ctx).await
}

/// Shows the diff `edit_file` would make, without writing.
#[toolcat::tool(prepare = tools::propose_edit_targets)]
pub async fn propose_edit(
    args: EditFileArgs,
    ctx: &ToolContext,
) -> Result<ProposeEditOutput, ToolError> {
    tools::propose_edit(args, ctx).await
}

/// Applies line operations anchored to a Hashline read.
#[toolcat::tool(prepare = tools::edit_lines_targets)]
pub async fn edit_lines(
    args: EditLinesArgs,
    ctx: &ToolContext,
) -> Result<EditLinesOutput, ToolError> {
    tools::edit_lines(args, ctx).await
}

/// Applies a patch in the codex format.
#[toolcat::tool(prepare = tools::apply_patch_targets)]
pub async fn apply_patch(
    args: ApplyPatchArgs,
    ctx: &ToolContext,
) -> Result<ApplyPatchOutput, ToolError> {
    tools::apply_patch(args, ctx).await
}

/// Arguments of `list_directory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirectoryArgs {
    /// Directory, relative to the workspace root; the root when omitted.
    #[serde(default)]
    pub path: Option<String>,
    /// Also list entries whose names start with `.`.
    #[serde(default)]
    pub include_hidden: bool,
}

/// One entry of a directory listing.
#[derive(Debug, Serialize, PartialEq, Eq, JsonSchema)]
pub struct DirEntry {
    /// File name.
    pub name: String,
    /// `file`, `dir`, `symlink` or `other`.
    pub kind: &'static str,
    /// Size in bytes, for files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// Result of `list_directory`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListDirectoryOutput {
    /// The directory, relative to the workspace root.
    pub path: String,
    /// Entries sorted by name.
    pub entries: Vec<DirEntry>,
    /// More entries exist than the 1000 returned.
    pub truncated: bool,
}

/// Lists one directory.
#[toolcat::tool]
pub async fn list_directory(
    args: ListDirectoryArgs,
    ctx: &ToolContext,
) -> Result<ListDirectoryOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let shown = args.path.as_deref().unwrap_or(".").to_string();
    let path = ws.existing(&shown)?;
    let listed = {
        let (ws, path, shown) = (ws.clone(), path.clone(), shown.clone());
        blocking(&format!("`{shown}`"), move |_| ws.list(&path, &shown)).await?
    };
    let mut entries = Vec::new();
    for (name, meta) in listed {
        if !args.include_hidden && name.starts_with('.') {
            continue;
        }
        entries.push(DirEntry {
            name,
            kind: kind_of(&meta),
            size: meta.is_file().then_some(meta.len()),
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let truncated = entries.len() > LIST_MAX_ENTRIES;
    entries.truncate(LIST_MAX_ENTRIES);
    Ok(ListDirectoryOutput {
        path: ws.relative(&path),
        entries,
        truncated,
    })
}

/// `file`, `dir`, `symlink` or `other`, from metadata that did not follow a final symlink.
fn kind_of(meta: &cap_std::fs::Metadata) -> &'static str {
    let ft = meta.file_type();
    kind_name(ft.is_symlink(), ft.is_dir(), ft.is_file())
}

/// `file`, `dir`, `symlink` or `other`, from a file type's three tests.
fn kind_name(symlink: bool, dir: bool, file: bool) -> &'static str {
    if symlink {
        "symlink"
    } else if dir {
        "dir"
    } else if file {
        "file"
    } else {
        "other"
    }
}

/// Arguments of `create_directory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateDirectoryArgs {
    /// Directory to create, relative to the workspace root; missing parents are created too.
    pub path: String,
}

/// Result of `create_directory`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CreateDirectoryOutput {
    /// The directory, relative to the workspace root.
    pub path: String,
    /// It did not exist before.
    pub created: bool,
}

/// Target of `create_directory`: the directory (which may not exist yet), written, with its
/// fingerprint.
pub fn create_directory_targets(
    args: &CreateDirectoryArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    let ws = Workspace::open(ctx)?;
    let path = ws.target(&args.path)?;
    ws.writable(&path, &args.path)?;
    Ok(vec![ws.fingerprinted(&path, &args.path, Access::Write)?])
}

/// Creates a directory and its missing parents.
#[toolcat::tool(prepare = create_directory_targets)]
pub async fn create_directory(
    args: CreateDirectoryArgs,
    ctx: &ToolContext,
) -> Result<CreateDirectoryOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let path = ws.target(&args.path)?;
    ws.writable(&path, &args.path)?;
    let created = {
        let (ws, path, shown) = (ws.clone(), path.clone(), args.path.clone());
        blocking(&format!("`{shown}`"), move |_| {
            match ws.fingerprint(&path, &shown)?.as_str() {
                "dir" => Ok(false),
                "absent" => ws.create_dir_all(&path, &shown).map(|()| true),
                _ => Err(failed(format!("`{shown}` exists and is not a directory"))),
            }
        })
        .await?
    };
    if created {
        ctx.committed();
    }
    Ok(CreateDirectoryOutput {
        path: ws.relative(&path),
        created,
    })
}

/// Arguments of `move_path`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MovePathArgs {
    /// File or directory to move, relative to the workspace root.
    pub from: String,
    /// New path, relative to the workspace root; must not exist yet.
    pub to: String,
}

/// Result of `move_path`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MovePathOutput {
    /// Old path, relative to the workspace root.
    pub from: String,
    /// New path, relative to the workspace root.
    pub to: String,
}

/// Targets of `move_path`: both entries (the link itself for a symbolic link), written, with
/// their fingerprints (`to` is normally `absent`).
pub fn move_path_targets(args: &MovePathArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    let ws = Workspace::open(ctx)?;
    let (from, to) = (ws.entry(&args.from)?, ws.entry(&args.to)?);
    ws.writable(&from, &args.from)?;
    ws.writable(&to, &args.to)?;
    Ok(vec![
        ws.fingerprinted(&from, &args.from, Access::Write)?,
        ws.fingerprinted(&to, &args.to, Access::Write)?,
    ])
}

/// Moves or renames a file or directory.
#[toolcat::tool(prepare = move_path_targets)]
pub async fn move_path(args: MovePathArgs, ctx: &ToolContext) -> Result<MovePathOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let from = ws.entry(&args.from)?;
    let to = ws.entry(&args.to)?;
    ws.writable(&from, &args.from)?;
    ws.writable(&to, &args.to)?;
    {
        let (ws, from, to) = (ws.clone(), from.clone(), to.clone());
        blocking(&format!("`{}`", args.from), move |_| {
            let (from_dir, from_name) = ws.parent_dir(&from, &args.from)?;
            if from_dir.symlink_metadata(&from_name).is_err() {
                return Err(not_found(&args.from));
            }
            if ws.fingerprint(&to, &args.to)? != "absent" {
                return Err(failed(format!(
                    "`{}` already exists; pick a new destination or delete it first with \
                     `delete_path`",
                    args.to
                )));
            }
            if to.starts_with(&from) {
                return Err(failed(format!(
                    "cannot move `{}` into itself (`{}`)",
                    args.from, args.to
                )));
            }
            if let Some(parent) = to.parent() {
                ws.create_dir_all(parent, &args.to)?;
            }
            let (to_dir, to_name) = ws.parent_dir(&to, &args.to)?;
            from_dir.rename(&from_name, &to_dir, &to_name).map_err(|e| {
                ToolError::io(format!("cannot move `{}` to `{}`", args.from, args.to), e)
            })
        })
        .await?;
    }
    ctx.committed();
    Ok(MovePathOutput {
        from: ws.relative(&from),
        to: ws.relative(&to),
    })
}

/// Arguments of `delete_path`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeletePathArgs {
    /// File or directory to delete, relative to the workspace root.
    pub path: String,
    /// Delete a non-empty directory with everything in it.
    #[serde(default)]
    pub recursive: bool,
}

/// Result of `delete_path`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DeletePathOutput {
    /// The deleted path, relative to the workspace root.
    pub path: String,
    /// What it was: `file`, `dir`, `symlink` or `other`.
    pub kind: &'static str,
}

/// Target of `delete_path`: the entry (the link itself for a symbolic link), written, with its
/// fingerprint (for a directory, of its listing).
pub fn delete_path_targets(
    args: &DeletePathArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    let ws = Workspace::open(ctx)?;
    let path = ws.entry(&args.path)?;
    ws.writable(&path, &args.path)?;
    Ok(vec![ws.fingerprinted(&path, &args.path, Access::Write)?])
}

/// Deletes a file, a symbolic link (not its target) or a directory.
#[toolcat::tool(prepare = delete_path_targets)]
pub async fn delete_path(
    args: DeletePathArgs,
    ctx: &ToolContext,
) -> Result<DeletePathOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let path = ws.entry(&args.path)?;
    ws.writable(&path, &args.path)?;
    let kind = {
        let (ws, path) = (ws.clone(), path.clone());
        blocking(&format!("`{}`", args.path), move |_| {
            let (parent, name) = ws.parent_dir(&path, &args.path)?;
            let meta = parent
                .symlink_metadata(&name)
                .map_err(|_| not_found(&args.path))?;
            let kind = kind_of(&meta);
            let result = if meta.is_dir() {
                if args.recursive {
                    parent.remove_dir_all(&name)
                } else {
                    parent.remove_dir(&name).map_err(|e| {
                        if e.kind() == std::io::ErrorKind::DirectoryNotEmpty {
                            std::io::Error::new(
                                e.kind(),
                                "the directory is not empty; set `recursive` to delete it with \
                                 its contents",
                            )
                        } else {
                            e
                        }
                    })
                }
            } else {
                parent.remove_file(&name)
            };
            result.map_err(|e| ToolError::io(format!("cannot delete `{}`", args.path), e))?;
            Ok(kind)
        })
        .await?
    };
    ctx.committed();
    Ok(DeletePathOutput {
        path: ws.relative(&path),
        kind,
    })
}

/// Arguments of `file_info`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileInfoArgs {
    /// Path to inspect, relative to the workspace root.
    pub path: String,
}

/// Result of `file_info`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FileInfoOutput {
    /// The path, relative to the workspace root.
    pub path: String,
    /// Something exists at the path; the other fields are present only when it does.
    pub exists: bool,
    /// `file`, `dir`, `symlink` or `other` (a symbolic link is not followed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// Size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Last modification time, RFC 3339 UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
    /// The permissions forbid writing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readonly: Option<bool>,
}

/// Reports a path's metadata.
#[toolcat::tool]
pub async fn file_info(args: FileInfoArgs, ctx: &ToolContext) -> Result<FileInfoOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let path = match args.path.trim() {
        "" | "." => ws.root().to_path_buf(),
        _ => ws.entry(&args.path)?,
    };
    let shown = ws.relative(&path);
    let meta = {
        let (ws, path, arg) = (ws.clone(), path.clone(), args.path.clone());
        blocking(&format!("`{arg}`"), move |_| {
            Ok(ws.entry_metadata(&path, &arg))
        })
        .await?
    };
    let Some(meta) = meta else {
        return Ok(FileInfoOutput {
            path: shown,
            exists: false,
            kind: None,
            size: None,
            modified: None,
            readonly: None,
        });
    };
    let modified = meta
        .modified()
        .ok()
        .map(|t| rfc3339(time::OffsetDateTime::from(t.into_std())));
    Ok(FileInfoOutput {
        path: shown,
        exists: true,
        kind: Some(kind_of(&meta)),
        size: Some(meta.len()),
        modified,
        readonly: Some(meta.permissions().readonly()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolcat_tools::files::{read_file_targets, write_file_targets};

    fn setup() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
        std::fs::write(dir.path().join("src/lib.rs"), "one\ntwo\nthree\nfour\n").expect("write");
        let ctx = ToolContext::new(dir.path());
        (dir, ctx)
    }

    #[test]
    fn prepare_steps_name_canonical_paths_with_fingerprints_of_what_is_there() {
        let (dir, ctx) = setup();
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        let lib = root.join("src/lib.rs");
        let write = |path: &str| {
            write_file_targets(
                &WriteFileArgs {
                    path: path.into(),
                    content: String::new(),
                    version: None,
                },
                &ctx,
            )
        };
        // An existing file: its content hash; through `..` the same canonical resource.
        let targets = write("src/../src/lib.rs").expect("inside");
        assert_eq!(targets.len(), 1);
        assert_eq!(targets[0].resource, format!("file:{}", lib.display()));
        assert_eq!(targets[0].access, Access::Write);
        assert_eq!(
            targets[0].fingerprint,
            Some(toolcat::fingerprint_path(&lib).expect("hash"))
        );
        assert!(targets[0]
            .fingerprint
            .as_deref()
            .is_some_and(|f| f.starts_with("sha256:") && f.len() == 7 + 64));
        // A new file: `absent`; a path outside the workspace: refused before anything runs.
        let targets = write("src/new.rs").expect("inside");
        assert_eq!(targets[0].fingerprint.as_deref(), Some("absent"));
        assert!(matches!(
            write("../elsewhere.txt"),
            Err(ToolError::OutsideWorkspace { .. })
        ));
        // The fingerprint follows the content.
        let before = write("src/lib.rs").expect("inside");
        std::fs::write(&lib, "changed\n").expect("write");
        assert_ne!(write("src/lib.rs").expect("inside"), before);

        // Reads are scheduled but not fingerprinted; a move writes both ends.
        let read = read_file_targets(
            &ReadFileArgs {
                path: "src/lib.rs".into(),
                offset: None,
                limit: None,
                format: None,
            },
            &ctx,
        )
        .expect("exists");
        assert_eq!(read, [Target::path_lock(&lib, Access::Read)]);
        let moved = move_path_targets(
            &MovePathArgs {
                from: "src/lib.rs".into(),
                to: "src/moved.rs".into(),
            },
            &ctx,
        )
        .expect("inside");
        let kinds: Vec<(Access, Option<&str>)> = moved
            .iter()
            .map(|t| (t.access, t.fingerprint.as_deref()))
            .collect();
        assert_eq!(kinds[1], (Access::Write, Some("absent")));
        assert!(kinds[0].1.is_some_and(|f| f.starts_with("sha256:")));
        // A directory's fingerprint is its listing.
        let dir_target = delete_path_targets(
            &DeletePathArgs {
                path: "src".into(),
                recursive: true,
            },
            &ctx,
        )
        .expect("inside");
        assert!(dir_target[0]
            .fingerprint
            .as_deref()
            .is_some_and(|f| f.starts_with("dir-sha256:")));
    }

    #[tokio::test]
    async fn read_file_returns_windows_of_lines() {
        let (_dir, ctx) = setup();
        let all = read_file(
            ReadFileArgs {
                path: "src/lib.rs".into(),
                offset: None,
                limit: None,
                format: None,
            },
            &ctx,
        )
        .await
        .expect("read");
        assert_eq!(all.content, "one\ntwo\nthree\nfour");
        assert_eq!(
            (all.start_line, all.end_line, all.total_lines, all.truncated),
            (1, 4, 4, false)
        );

        let window = read_file(
            ReadFileArgs {
                path: "src/lib.rs".into(),
                offset: Some(2),
                limit: Some(2),
                format: None,
            },
            &ctx,
        )
        .await
        .expect("window");
        assert_eq!(window.content, "two\nthree");
        assert_eq!(
            (window.start_line, window.end_line, window.truncated),
            (2, 3, true)
        );

        let past = read_file(
            ReadFileArgs {
                path: "src/lib.rs".into(),
                offset: Some(9),
                limit: None,
                format: None,
            },
            &ctx,
        )
        .await
        .expect_err("past the end");
        assert!(past.to_string().contains("past the end"), "{past}");
    }

    #[tokio::test]
    async fn read_file_refuses_directories_binaries_and_escapes() {
        let (dir, ctx) = setup();
        std::fs::write(dir.path().join("blob.bin"), [0u8, 1, 2]).expect("write");
        for path in ["src", "blob.bin", "../outside", "missing.txt"] {
            let err = read_file(
                ReadFileArgs {
                    path: path.into(),
                    offset: None,
                    limit: None,
                    format: None,
                },
                &ctx,
            )
            .await
            .expect_err(path);
            let text = err.to_string();
            let expected = match path {
                "src" => "is a directory",
                "blob.bin" => "looks binary",
                "../outside" => "outside the workspace",
                _ => "does not exist",
            };
            assert!(text.contains(expected), "{path}: {text}");
        }
    }

    #[tokio::test]
    async fn write_file_creates_parents_and_reports_overwrites() {
        let (dir, ctx) = setup();
        let out = write_file(
            WriteFileArgs {
                path: "docs/a/b.md".into(),
                content: "# b\n".into(),
                version: None,
            },
            &ctx,
        )
        .await
        .expect("create");
        assert_eq!(
            (out.path.as_str(), out.bytes_written, out.created),
            ("docs/a/b.md", 4, true)
        );
        let again = write_file(
            WriteFileArgs {
                path: "docs/a/b.md".into(),
                content: "# c\n".into(),
                version: None,
            },
            &ctx,
        )
        .await
        .expect("overwrite");
        assert!(!again.created);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("docs/a/b.md")).expect("read"),
            "# c\n"
        );
        let err = write_file(
            WriteFileArgs {
                path: "../x".into(),
                content: String::new(),
                version: None,
            },
            &ctx,
        )
        .await
        .expect_err("escape");
        assert!(matches!(err, ToolError::OutsideWorkspace { .. }));
    }

    #[tokio::test]
    async fn edit_file_writes_and_propose_edit_only_previews() {
        let (dir, ctx) = setup();
        let args = || EditFileArgs {
            path: "src/lib.rs".into(),
            old_string: "two\n".into(),
            new_string: "TWO\n".into(),
            replace_all: false,
            version: None,
        };
        let proposal = propose_edit(args(), &ctx).await.expect("propose");
        assert_eq!(proposal.replacements, 1);
        assert!(proposal.diff.contains("-two\n+TWO\n"), "{}", proposal.diff);
        assert!(
            proposal
                .diff
                .starts_with("--- a/src/lib.rs\n+++ b/src/lib.rs\n"),
            "{}",
            proposal.diff
        );
        let untouched = std::fs::read_to_string(dir.path().join("src/lib.rs")).expect("read");
        assert_eq!(untouched, "one\ntwo\nthree\nfour\n");

        let edited = edit_file(args(), &ctx).await.expect("edit");
        assert_eq!(edited.replacements, 1);
        let after = std::fs::read_to_string(dir.path().join("src/lib.rs")).expect("read");
        assert_eq!(after, "one\nTWO\nthree\nfour\n");
        // The same edit again no longer matches.
        assert!(edit_file(args(), &ctx).await.is_err());
    }

    #[tokio::test]
    async fn list_create_move_delete_and_info() {
        let (dir, ctx) = setup();
        std::fs::write(dir.path().join(".hidden"), "h").expect("write");
        let listing = list_directory(
            ListDirectoryArgs {
                path: None,
                include_hidden: false,
            },
            &ctx,
        )
        .await
        .expect("list");
        assert_eq!(
            listing.entries,
            vec![DirEntry {
                name: "src".into(),
                kind: "dir",
                size: None
            }]
        );
        let with_hidden = list_directory(
            ListDirectoryArgs {
                path: None,
                include_hidden: true,
            },
            &ctx,
        )
        .await
        .expect("list hidden");
        assert_eq!(with_hidden.entries.len(), 2);

        let made = create_directory(
            CreateDirectoryArgs {
                path: "out/deep".into(),
            },
            &ctx,
        )
        .await
        .expect("mkdir");
        assert!(made.created);
        let again = create_directory(
            CreateDirectoryArgs {
                path: "out/deep".into(),
            },
            &ctx,
        )
        .await
        .expect("mkdir again");
        assert!(!again.created);

        let moved = move_path(
            MovePathArgs {
                from: "src/lib.rs".into(),
                to: "out/lib.rs".into(),
            },
            &ctx,
        )
        .await
        .expect("move");
        assert_eq!(
            (moved.from.as_str(), moved.to.as_str()),
            ("src/lib.rs", "out/lib.rs")
        );
        assert!(dir.path().join("out/lib.rs").is_file());
        let clash = move_path(
            MovePathArgs {
                from: "out".into(),
                to: "src".into(),
            },
            &ctx,
        )
        .await
        .expect_err("destination exists");
        assert!(clash.to_string().contains("already exists"), "{clash}");
        let into_self = move_path(
            MovePathArgs {
                from: "out".into(),
                to: "out/deep/x".into(),
            },
            &ctx,
        )
        .await
        .expect_err("into itself");
        assert!(into_self.to_string().contains("into itself"), "{into_self}");

        let info = file_info(
            FileInfoArgs {
                path: "out/lib.rs".into(),
            },
            &ctx,
        )
        .await
        .expect("info");
        assert_eq!(
            (info.exists, info.kind, info.size),
            (true, Some("file"), Some(19))
        );
        assert!(info.modified.as_deref().is_some_and(|m| m.ends_with('Z')));
        let missing = file_info(
            FileInfoArgs {
                path: "nope".into(),
            },
            &ctx,
        )
        .await
        .expect("info");
        assert!(!missing.exists);

        let not_empty = delete_path(
            DeletePathArgs {
                path: "out".into(),
                recursive: false,
            },
            &ctx,
        )
        .await
        .expect_err("not empty");
        assert!(not_empty.to_string().contains("recursive"), "{not_empty}");
        let deleted = delete_path(
            DeletePathArgs {
                path: "out".into(),
                recursive: true,
            },
            &ctx,
        )
        .await
        .expect("delete");
        assert_eq!(deleted.kind, "dir");
        assert!(!dir.path().join("out").exists());
        assert!(delete_path(
            DeletePathArgs {
                path: ".".into(),
                recursive: true
            },
            &ctx
        )
        .await
        .is_err());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn delete_removes_a_symlink_not_its_target() {
        let (dir, ctx) = setup();
        std::os::unix::fs::symlink(dir.path().join("src/lib.rs"), dir.path().join("link"))
            .expect("symlink");
        let deleted = delete_path(
            DeletePathArgs {
                path: "link".into(),
                recursive: false,
            },
            &ctx,
        )
        .await
        .expect("delete link");
        assert_eq!(deleted.kind, "symlink");
        assert!(dir.path().join("src/lib.rs").is_file());
    }
}
