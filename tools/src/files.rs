//! The file tools an agent mounts: `read_file`, `write_file`, `edit_file` (string replace),
//! `propose_edit`, `edit_lines` (Hashline) and `apply_patch` (OpenAI's codex patch format).
//!
//! Each tool is an argument type, a prepare function and a handler function; an agent mounts
//! one with a row in its `tools.toml` and one `#[toolcat::tool]` line per row (see the crate
//! README). The text logic of each protocol is in [`crate::edit`]; everything here reads and
//! writes through the workspace layer ([`crate::workspace`]), never another way.
//!
//! # Which protocol
//!
//! | protocol | the model says | checked before writing |
//! |---|---|---|
//! | `edit_file` (string replace) | old text, new text | the old text occurs once (or `replace_all`), exactly or within a bounded tolerance |
//! | `edit_lines` (Hashline) | `N#HASH` anchors from `read_file(format = "hashline")` and operations | every anchor still names that line with that content; no two operations overlap |
//! | `apply_patch` | a codex patch: files, context, removed and added lines | the patch parses; every hunk's context is found once; every file of the patch, before any is written |
//!
//! String replace suits every model and small edits; Hashline suits long files and models that
//! copy text badly; `apply_patch` is for models trained on that format (OpenAI's codex models).
//! An agent exposes the one each model does best with (profiles or toolsets per model).
//!
//! # Versions and guards
//!
//! `read_file` returns the file's `version` ([`version_of`]: 16 hex digits of the SHA-256 of
//! its bytes). An edit that carries it (`version`; `versions` for `apply_patch`) is refused when
//! the file's version differs, in its prepare step and again under the file's lock right
//! before the write: answer `"guard": "version"`. An edit without one is guarded from its
//! prepare step (the fingerprint the approval saw, re-verified by the coordinator) to its
//! write: `"guard": "prepare"`.
//!
//! # Every write
//!
//! The targets are resolved and fingerprinted in prepare, so an approval is bound to them; the
//! coordinator re-verifies them before the handler runs; the handler writes through
//! [`Workspace::write_atomically`] (re-verify under the file's lock, temporary file, atomic
//! rename; a file created by the call never replaces one that appeared meanwhile) and reports
//! the change evidence ([`toolcat::Change`]: path, fingerprints before and after, unified diff)
//! in its answer and to the call's record ([`ToolContext::record_change`]).
//!
//! What this does not do: a check-then-rename still races with a writer outside this layer
//! (an editor's atomic save between the last check and the rename is overwritten; POSIX has no
//! compare-and-rename). A multi-file patch is not a transaction: every file is checked before
//! any is written, but if writing the second file fails, the first stays written, and the
//! error names what was written (with its evidence in the record) and what was not. A state
//! the handler cannot confirm is an error, never a success.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolcat::{Access, Change, Target, ToolContext, ToolError};

use crate::edit::{self, excerpt, hashline, patch, replace};
use crate::failed;
use crate::workspace::{blocking, content_fingerprint, not_found, Workspace};

/// Largest file `read_file` and the edit tools load: 16 MiB.
pub const READ_MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Lines `read_file` returns when `limit` is not given.
pub const READ_DEFAULT_LINES: usize = 2000;
/// Most text `read_file` returns in one call: 256 KiB.
pub const READ_MAX_OUTPUT_BYTES: usize = 256 * 1024;

/// The version of a file holding `bytes`: the first 16 hex digits (64 bits) of their SHA-256,
/// the digest of [`content_fingerprint`].
pub fn version_of(bytes: &[u8]) -> String {
    version_of_fingerprint(&content_fingerprint(bytes)).unwrap_or_default()
}

/// Length of a version ([`version_of`]): 16 hex digits.
pub const VERSION_LEN: usize = 16;

/// The version of a file whose fingerprint is `fingerprint` (`sha256:HEX`); `None` for any
/// other fingerprint (`absent`, a directory, a link).
fn version_of_fingerprint(fingerprint: &str) -> Option<String> {
    fingerprint
        .strip_prefix("sha256:")
        .map(|hex| hex[..VERSION_LEN.min(hex.len())].to_string())
}

/// Which check kept a write from landing on a file changed since the model last saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Guard {
    /// The file still had the `version` the edit carried (checked in prepare and under the
    /// file's lock right before the write).
    Version,
    /// The file was unchanged from the call's prepare step (what an approval saw) to the write.
    Prepare,
}

/// How `read_file` shows lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadFormat {
    /// The lines as they are.
    #[default]
    Plain,
    /// Each line as `N#HASH|content`, the anchors `edit_lines` takes.
    Hashline,
}

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// File path, relative to the workspace root.
    pub path: String,
    /// First line to return, counting from 1; 1 when omitted.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub offset: Option<usize>,
    /// How many lines to return; 2000 when omitted.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
    /// `plain` (default) or `hashline`: each line tagged `N#HASH|` for `edit_lines`.
    #[serde(default)]
    pub format: Option<ReadFormat>,
}

/// Result of `read_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadFileOutput {
    /// The path, relative to the workspace root.
    pub path: String,
    /// The returned lines, joined with `\n` (in `hashline` format each is `N#HASH|content`);
    /// line endings are not part of it, not even the file's last one (see `final_newline`).
    pub content: String,
    /// Line number of the first returned line (1-based); 0 for an empty file.
    pub start_line: usize,
    /// Line number of the last returned line.
    pub end_line: usize,
    /// Lines in the whole file.
    pub total_lines: usize,
    /// More lines follow `end_line`; call again with `offset = end_line + 1`.
    pub truncated: bool,
    /// The file's version ([`version_of`]); pass it to an edit to refuse it if the file changed.
    #[schemars(
        description = "The file's version; pass it to an edit to refuse it if the file changed."
    )]
    pub version: String,
    /// The file ends with a line ending (`\n` or `\r\n`); false for an empty file.
    pub final_newline: bool,
    /// The format of `content`.
    pub format: ReadFormat,
}

/// Target of `read_file`: the file, read (scheduled, not fingerprinted).
///
/// # Errors
/// A path outside the workspace or missing.
pub fn read_file_targets(args: &ReadFileArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    read_target(ctx, &args.path)
}

/// One existing path, read (scheduled, not fingerprinted).
fn read_target(ctx: &ToolContext, path: &str) -> Result<Vec<Target>, ToolError> {
    let ws = Workspace::open(ctx)?;
    Ok(vec![Target::path_lock(&ws.existing(path)?, Access::Read)])
}

/// Reads a window of lines of a text file, with its version.
///
/// # Errors
/// A path outside the workspace or missing, a directory, a binary or oversized file, an
/// `offset` past the end.
pub async fn read_file(args: ReadFileArgs, ctx: &ToolContext) -> Result<ReadFileOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let path = ws.existing(&args.path)?;
    let bytes = {
        let (ws, path, shown) = (ws.clone(), path.clone(), args.path.clone());
        blocking(&format!("`{}`", args.path), move |_| {
            ws.read(&path, &shown, READ_MAX_FILE_BYTES)
        })
        .await?
    };
    let version = version_of(&bytes);
    let text = text_of_lossy(bytes, &args.path)?;
    let format = args.format.unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let start = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(READ_DEFAULT_LINES).max(1);
    if total > 0 && start > total {
        return Err(failed(format!(
            "`offset` {start} is past the end of `{}`, which has {total} lines",
            args.path
        )));
    }
    // As many lines as fit in the output budget (at least one), each as it will be shown.
    let mut taken = 0usize;
    let mut bytes_out = 0usize;
    for (i, line) in lines.iter().enumerate().skip(start - 1).take(limit) {
        let shown_len = match format {
            ReadFormat::Plain => line.len(),
            ReadFormat::Hashline => hashline::anchor(i + 1, line).len() + 1 + line.len(),
        } + 1;
        if taken > 0 && bytes_out + shown_len > READ_MAX_OUTPUT_BYTES {
            break;
        }
        bytes_out += shown_len;
        taken += 1;
    }
    let content = match format {
        ReadFormat::Plain => lines
            .iter()
            .skip(start - 1)
            .take(taken)
            .copied()
            .collect::<Vec<_>>()
            .join("\n"),
        ReadFormat::Hashline => hashline::render(&text, start, taken),
    };
    let end = if total == 0 { 0 } else { start - 1 + taken };
    Ok(ReadFileOutput {
        path: ws.relative(&path),
        content,
        start_line: if total == 0 { 0 } else { start },
        end_line: end,
        total_lines: total,
        truncated: end < total,
        version,
        final_newline: text.ends_with('\n'),
        format,
    })
}

/// The text of a file's bytes for reading (invalid UTF-8 replaced), refusing binary content.
fn text_of_lossy(bytes: Vec<u8>, shown: &str) -> Result<String, ToolError> {
    refuse_binary(&bytes, shown)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// The text of a file's bytes for editing: binary, oversized and invalid UTF-8 content is
/// refused, since writing back replaced bytes would change more than the edit.
fn text_of_exact(bytes: &[u8], shown: &str) -> Result<String, ToolError> {
    if bytes.len() as u64 > READ_MAX_FILE_BYTES {
        return Err(failed(format!(
            "`{shown}` is {} bytes, over the {READ_MAX_FILE_BYTES}-byte limit of the edit \
             tools; use `write_file` to replace it whole",
            bytes.len()
        )));
    }
    refuse_binary(bytes, shown)?;
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        failed(format!(
            "`{shown}` is not valid UTF-8 (at byte {}); the edit tools change UTF-8 text only, \
             so nothing was written; use `write_file` to replace it whole",
            e.utf8_error().valid_up_to()
        ))
    })
}

fn refuse_binary(bytes: &[u8], shown: &str) -> Result<(), ToolError> {
    if is_binary(bytes) {
        return Err(failed(format!(
            "`{shown}` looks binary (it contains NUL bytes); only text files can be read or \
             edited"
        )));
    }
    Ok(())
}

/// Binary by the heuristic `git` and `grep` use: a NUL byte in the first 8 KiB.
pub fn is_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|&b| b == 0)
}

/// The refusal of an edit whose `version` is not the file's.
fn stale(shown: &str, carried: &str, now: &str) -> ToolError {
    failed(format!(
        "`{shown}` changed since the read that gave version `{carried}` (it is `{now}` now); \
         nothing was written; read it again and redo the edit against what is there"
    ))
}

/// The guard of an edit that carries `version` or not.
fn guard_of(version: Option<&str>) -> Guard {
    if version.is_some() {
        Guard::Version
    } else {
        Guard::Prepare
    }
}

/// The prepare step of an edit of the existing file `path`: the file, written, fingerprinted;
/// refused at once when `version` is given and the file's is another.
fn edit_targets(
    ctx: &ToolContext,
    path: &str,
    version: Option<&str>,
) -> Result<Vec<Target>, ToolError> {
    let ws = Workspace::open(ctx)?;
    let abs = ws.existing(path)?;
    ws.writable(&abs, path)?;
    let target = ws.fingerprinted(&abs, path, Access::Write)?;
    check_version(path, version, target.fingerprint.as_deref())?;
    Ok(vec![target])
}

/// Refuses when `version` is given and `fingerprint` is not of that version.
fn check_version(
    shown: &str,
    version: Option<&str>,
    fingerprint: Option<&str>,
) -> Result<(), ToolError> {
    let Some(carried) = version else {
        return Ok(());
    };
    let trimmed = carried.trim();
    if trimmed.len() != VERSION_LEN || !trimmed.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(failed(format!(
            "`{}` is not a version of `{shown}`: a version is the {VERSION_LEN} hex digits \
             `read_file` returns in `version`; nothing was written; pass that value, or leave \
             `version` out",
            excerpt(carried)
        )));
    }
    let now = fingerprint
        .and_then(version_of_fingerprint)
        .unwrap_or_else(|| fingerprint.unwrap_or("absent").to_string());
    if !now.eq_ignore_ascii_case(trimmed) {
        return Err(stale(shown, carried, &now));
    }
    Ok(())
}

/// The evidence of one file's change: `before` and `after` are the texts (`None`: absent).
fn evidence(shown: &str, before: Option<&str>, after: Option<&str>) -> Change {
    let fingerprint = |text: Option<&str>| {
        text.map_or_else(
            || "absent".to_string(),
            |t| content_fingerprint(t.as_bytes()),
        )
    };
    Change::new(
        shown,
        fingerprint(before),
        fingerprint(after),
        edit::unified_diff(shown, before.unwrap_or(""), after.unwrap_or("")),
    )
}

/// What an edit of one existing file did.
struct Edited<R> {
    result: R,
    change: Change,
    version: String,
}

/// The one write path of the single-file edits: under the file's lock, re-verifies what the
/// call started from (the fingerprint the coordinator just checked against the prepared one)
/// and the carried `version`, applies `edit` to the text, writes it atomically, and reports the
/// change to the call's record.
async fn edit_existing<R: Send + 'static>(
    ctx: &ToolContext,
    shown: &str,
    version: Option<String>,
    edit: impl FnOnce(&str) -> Result<(String, R), ToolError> + Send + 'static,
) -> Result<Edited<R>, ToolError> {
    let ws = Workspace::open(ctx)?;
    let path = ws.existing(shown)?;
    ws.writable(&path, shown)?;
    let relative = ws.relative(&path);
    let edited = {
        let (ws, path, shown, relative) = (
            ws.clone(),
            path.clone(),
            shown.to_string(),
            relative.clone(),
        );
        blocking(&format!("`{shown}`"), move |work| {
            let before = ws.fingerprint(&path, &shown)?;
            check_version(&shown, version.as_deref(), Some(&before))?;
            ws.write_atomically(&path, &shown, Some(&before), work, |old| {
                let Some(old) = old else {
                    return Err(not_found(&shown));
                };
                let text = text_of_exact(old, &shown)?;
                let (new_text, result) = edit(&text)?;
                if new_text == text {
                    return Err(failed(format!(
                        "the edit leaves `{shown}` as it is; nothing was written"
                    )));
                }
                let change = evidence(&relative, Some(&text), Some(&new_text));
                let version = version_of(new_text.as_bytes());
                Ok((
                    new_text.into_bytes(),
                    Edited {
                        result,
                        change,
                        version,
                    },
                ))
            })
        })
        .await?
    };
    ctx.record_change(edited.change.clone());
    ctx.committed();
    Ok(edited)
}

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// File path, relative to the workspace root; missing parent directories are created.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
    /// The version `read_file` returned; the write is refused if the file changed since.
    #[serde(default)]
    pub version: Option<String>,
}

/// Result of `write_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteFileOutput {
    /// The path, relative to the workspace root.
    pub path: String,
    /// Bytes written.
    pub bytes_written: usize,
    /// The file did not exist before.
    pub created: bool,
    /// The file's new version.
    pub version: String,
    /// Which check guarded the write.
    pub guard: Guard,
    /// What the write did.
    pub change: Change,
}

/// Target of `write_file`: the file (which may not exist yet), written, with its fingerprint.
///
/// # Errors
/// A path outside the workspace; a `version` that is not the file's.
pub fn write_file_targets(
    args: &WriteFileArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    let ws = Workspace::open(ctx)?;
    let path = ws.target(&args.path)?;
    ws.writable(&path, &args.path)?;
    let target = ws.fingerprinted(&path, &args.path, Access::Write)?;
    check_version(
        &args.path,
        args.version.as_deref(),
        target.fingerprint.as_deref(),
    )?;
    Ok(vec![target])
}

/// Writes a whole file (creating it, or replacing it).
///
/// # Errors
/// A path outside the workspace, a directory or link at the path, a file changed since the
/// prepare step or the carried version, one that appeared meanwhile, an I/O error.
pub async fn write_file(
    args: WriteFileArgs,
    ctx: &ToolContext,
) -> Result<WriteFileOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let path = ws.target(&args.path)?;
    ws.writable(&path, &args.path)?;
    let relative = ws.relative(&path);
    let bytes_written = args.content.len();
    let guard = guard_of(args.version.as_deref());
    let (created, change, version) = {
        let (ws, path, shown, relative) = (ws.clone(), path.clone(), args.path.clone(), relative);
        blocking(&format!("`{}`", args.path), move |work| {
            let before = ws.fingerprint(&path, &shown)?;
            if before == "dir" {
                return Err(failed(format!(
                    "`{shown}` is a directory; pass the path of a file"
                )));
            }
            check_version(&shown, args.version.as_deref(), Some(&before))?;
            let content = args.content;
            ws.write_atomically(&path, &shown, Some(&before), work, |old| {
                let change = match old.map(std::str::from_utf8) {
                    Some(Err(_)) => Change::new(
                        relative.as_str(),
                        old.map_or_else(String::new, content_fingerprint),
                        content_fingerprint(content.as_bytes()),
                        format!("Binary files a/{relative} and b/{relative} differ\n"),
                    ),
                    Some(Ok(text)) => evidence(&relative, Some(text), Some(&content)),
                    None => evidence(&relative, None, Some(&content)),
                };
                let version = version_of(content.as_bytes());
                Ok((content.into_bytes(), (old.is_none(), change, version)))
            })
        })
        .await?
    };
    ctx.record_change(change.clone());
    ctx.committed();
    Ok(WriteFileOutput {
        path: change.path.clone(),
        bytes_written,
        created,
        version,
        guard,
        change,
    })
}

/// Arguments of `edit_file` and `propose_edit` (string replace).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// File path, relative to the workspace root.
    pub path: String,
    /// Text to replace, copied from the file with its whitespace and indentation; must occur
    /// exactly once unless `replace_all` is true. When it does not occur exactly, a copy that
    /// differs only in trailing whitespace, line endings or a uniform indentation shift is
    /// matched if it is unique, and the answer says so.
    pub old_string: String,
    /// Text to put in its place.
    pub new_string: String,
    /// Replace every exact occurrence instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
    /// The version `read_file` returned; the edit is refused if the file changed since.
    #[serde(default)]
    pub version: Option<String>,
}

/// Result of `edit_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EditFileOutput {
    /// The path, relative to the workspace root.
    pub path: String,
    /// Occurrences replaced.
    pub replacements: usize,
    /// How `old_string` was found: `{"kind": "exact"}`, or `{"kind": "tolerant", "tolerated":
    /// [...], "start_line", "end_line", "lines"}` with the file's lines it matched.
    pub matched: replace::Matched,
    /// The file's new version.
    pub version: String,
    /// Which check guarded the write.
    pub guard: Guard,
    /// What the edit did.
    pub change: Change,
}

/// Result of `propose_edit`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProposeEditOutput {
    /// The path, relative to the workspace root.
    pub path: String,
    /// Occurrences `edit_file` would replace.
    pub replacements: usize,
    /// How `old_string` was found (as `edit_file` answers).
    pub matched: replace::Matched,
    /// The file's version now; pass it to `edit_file` to apply exactly this diff.
    pub version: String,
    /// Unified diff of the file before and after, with 3 lines of context.
    pub diff: String,
}

/// `edit_file`'s replacement in `text`, errors prefixed with the path.
fn replaced(text: &str, args: &EditFileArgs, shown: &str) -> Result<replace::Replaced, ToolError> {
    replace::str_replace(text, &args.old_string, &args.new_string, args.replace_all)
        .map_err(|e| failed(format!("`{shown}`: {e}")))
}

/// Target of `edit_file`: the existing file, written, with its fingerprint.
///
/// # Errors
/// A path outside the workspace or missing; a `version` that is not the file's.
pub fn edit_file_targets(args: &EditFileArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    edit_targets(ctx, &args.path, args.version.as_deref())
}

/// Target of `propose_edit`: the file, read.
///
/// # Errors
/// A path outside the workspace or missing.
pub fn propose_edit_targets(
    args: &EditFileArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    read_target(ctx, &args.path)
}

/// Replaces a piece of text in a file (the string-replace protocol, [`replace::str_replace`]).
///
/// # Errors
/// Those of the string replace (no match, ambiguous, empty or unchanged), a stale version, a
/// file changed since prepare, a binary or non-UTF-8 file, an I/O error; nothing is written.
pub async fn edit_file(args: EditFileArgs, ctx: &ToolContext) -> Result<EditFileOutput, ToolError> {
    let guard = guard_of(args.version.as_deref());
    let shown = args.path.clone();
    let version = args.version.clone();
    let edited = edit_existing(ctx, &shown, version, move |text| {
        let r = replaced(text, &args, &args.path)?;
        Ok((r.text, (r.replacements, r.matched)))
    })
    .await?;
    let (replacements, matched) = edited.result;
    Ok(EditFileOutput {
        path: edited.change.path.clone(),
        replacements,
        matched,
        version: edited.version,
        guard,
        change: edited.change,
    })
}

/// Shows the diff `edit_file` would make, without writing.
///
/// # Errors
/// Those of [`edit_file`] that do not need a write.
pub async fn propose_edit(
    args: EditFileArgs,
    ctx: &ToolContext,
) -> Result<ProposeEditOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let path = ws.existing(&args.path)?;
    let shown = ws.relative(&path);
    // The read and the match both run on the blocking pool: a match in a large file is work.
    let what = format!("`{}`", args.path);
    blocking(&what, move |_| {
        let bytes = ws.read(&path, &args.path, READ_MAX_FILE_BYTES)?;
        let version = version_of(&bytes);
        check_version(
            &args.path,
            args.version.as_deref(),
            Some(&content_fingerprint(&bytes)),
        )?;
        let text = text_of_exact(&bytes, &args.path)?;
        let r = replaced(&text, &args, &args.path)?;
        Ok(ProposeEditOutput {
            diff: edit::unified_diff(&shown, &text, &r.text),
            path: shown,
            replacements: r.replacements,
            matched: r.matched,
            version,
        })
    })
    .await
}

/// Arguments of `edit_lines` (Hashline).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditLinesArgs {
    /// File path, relative to the workspace root.
    pub path: String,
    /// The operations, all anchored to lines of the same read of the file
    /// (`read_file` with `format = "hashline"`); applied together, none may overlap another.
    pub edits: Vec<hashline::LineEdit>,
    /// The version `read_file` returned; the edit is refused if the file changed since.
    #[serde(default)]
    pub version: Option<String>,
}

/// Result of `edit_lines`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EditLinesOutput {
    /// The path, relative to the workspace root.
    pub path: String,
    /// Lines removed (replaced or deleted).
    pub lines_removed: usize,
    /// Lines added (replacements and inserts).
    pub lines_added: usize,
    /// The file's new version; read it again for new anchors.
    pub version: String,
    /// Which check guarded the write (the anchors are checked either way).
    pub guard: Guard,
    /// What the edit did.
    pub change: Change,
}

/// Target of `edit_lines`: the existing file, written, with its fingerprint.
///
/// # Errors
/// A path outside the workspace or missing; a `version` that is not the file's.
pub fn edit_lines_targets(
    args: &EditLinesArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    edit_targets(ctx, &args.path, args.version.as_deref())
}

/// Applies anchored line operations to a file (the Hashline protocol, [`hashline::apply`]).
///
/// # Errors
/// A stale or malformed anchor, overlapping operations, a stale version, a file changed since
/// prepare, an I/O error; nothing is written.
pub async fn edit_lines(
    args: EditLinesArgs,
    ctx: &ToolContext,
) -> Result<EditLinesOutput, ToolError> {
    let guard = guard_of(args.version.as_deref());
    let shown = args.path.clone();
    let edited = edit_existing(ctx, &shown, args.version.clone(), move |text| {
        let applied = hashline::apply(text, &args.edits)
            .map_err(|e| failed(format!("`{}`: {e}", args.path)))?;
        Ok((applied.text, (applied.lines_removed, applied.lines_added)))
    })
    .await?;
    let (lines_removed, lines_added) = edited.result;
    Ok(EditLinesOutput {
        path: edited.change.path.clone(),
        lines_removed,
        lines_added,
        version: edited.version,
        guard,
        change: edited.change,
    })
}

/// Arguments of `apply_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchArgs {
    /// The patch, in the codex format: `*** Begin Patch`, then per file `*** Add File: PATH`
    /// (lines `+...`), `*** Delete File: PATH`, or `*** Update File: PATH` (optionally
    /// `*** Move to: PATH`) with hunks `@@ [line to find first]` of ` ` (context), `-` and `+`
    /// lines, then `*** End Patch`.
    pub patch: String,
    /// Versions `read_file` returned, by path as written in the patch; a file whose version
    /// differs is refused and nothing is written.
    #[serde(default)]
    pub versions: BTreeMap<String, String>,
}

/// What `apply_patch` did to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PatchAction {
    /// `*** Add File`: created.
    Added,
    /// `*** Update File`: changed in place.
    Updated,
    /// `*** Update File` with `*** Move to`: written at the new path, the old one removed.
    Moved,
    /// `*** Delete File`: removed.
    Deleted,
}

/// One file of an `apply_patch` answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PatchedFile {
    /// The path, relative to the workspace root (the new path of a move).
    pub path: String,
    /// What was done.
    pub action: PatchAction,
    /// The path it was moved from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<String>,
}

/// Result of `apply_patch`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApplyPatchOutput {
    /// The files, in patch order.
    pub files: Vec<PatchedFile>,
    /// Which check guarded the writes: `version` when every updated or deleted file's version
    /// was given, else `prepare`.
    pub guard: Guard,
    /// What each write did (a move is two changes: the new path written, the old removed).
    pub changes: Vec<Change>,
}

/// A patch file op with its paths resolved.
struct Resolved<'a> {
    op: &'a patch::FilePatch,
    /// The path the op reads or writes first (the added, updated or deleted file).
    path: PathBuf,
    /// As written in the patch.
    shown: &'a str,
    /// The new path of a move.
    move_to: Option<(PathBuf, &'a str)>,
}

/// Resolves each file op's paths, refusing a path named twice, one inside another, a path
/// [`Workspace::writable`] refuses, a move onto the file itself, a directory, and a symbolic
/// link where the patch removes a path.
fn resolve_patch<'a>(
    ws: &Workspace,
    parsed: &'a patch::Patch,
) -> Result<Vec<Resolved<'a>>, ToolError> {
    let mut seen: BTreeMap<PathBuf, &str> = BTreeMap::new();
    let mut out = Vec::new();
    for op in &parsed.files {
        let (shown, move_to) = match op {
            patch::FilePatch::Add { path, .. } | patch::FilePatch::Delete { path } => {
                (path.as_str(), None)
            }
            patch::FilePatch::Update { path, move_to, .. } => (path.as_str(), move_to.as_deref()),
        };
        let path = match op {
            patch::FilePatch::Add { .. } => ws.target(shown)?,
            patch::FilePatch::Delete { .. } => existing_patch_file(ws, shown, "*** Delete File")?,
            patch::FilePatch::Update { move_to: None, .. } => existing_patch_file(ws, shown, "")?,
            patch::FilePatch::Update { .. } => {
                existing_patch_file(ws, shown, "*** Update File` with `*** Move to")?
            }
        };
        ws.writable(&path, shown)?;
        let move_to = match move_to {
            Some(to) => {
                let abs = ws.target(to)?;
                ws.writable(&abs, to)?;
                if abs == path {
                    return Err(failed(format!(
                        "`*** Move to: {to}` names the file `{shown}` itself; nothing was \
                         written: remove the `*** Move to` line to change the file in place, or \
                         name another path"
                    )));
                }
                Some((abs, to))
            }
            None => None,
        };
        for (abs, name) in
            std::iter::once((&path, shown)).chain(move_to.iter().map(|(a, n)| (a, *n)))
        {
            if let Some(first) = seen.insert(abs.clone(), name) {
                let also = if first == name {
                    String::new()
                } else {
                    format!(" (also as `{first}`)")
                };
                return Err(failed(format!(
                    "the patch names `{name}` twice{also}; put every change of a file in one \
                     `*** Update File` section; nothing was written"
                )));
            }
        }
        out.push(Resolved {
            op,
            path,
            shown,
            move_to,
        });
    }
    // A path inside another path of the patch: one of the two writes would find a file where
    // it needs a directory (or the other way round) after the first was written.
    for (abs, name) in &seen {
        if let Some(outer) = abs.ancestors().skip(1).find_map(|a| seen.get(a)) {
            return Err(failed(format!(
                "the patch names `{name}`, which is inside `{outer}`, another file of the patch; \
                 a path cannot be both a file and a directory; nothing was written: pick paths \
                 that do not contain each other"
            )));
        }
    }
    Ok(out)
}

/// The existing regular file a patch updates or deletes, resolved (a symbolic link inside the
/// workspace followed). `removing` names the section when it removes the path (a delete, or
/// the source of a move): a symbolic link there is refused, since removing what it points to
/// would remove another path than the one the patch names, and a removal never follows it.
///
/// # Errors
/// A path outside the workspace or missing; a directory; a link, when `removing`.
fn existing_patch_file(ws: &Workspace, shown: &str, removing: &str) -> Result<PathBuf, ToolError> {
    if !removing.is_empty() {
        let entry = ws.entry(shown)?;
        if ws
            .entry_metadata(&entry, shown)
            .is_some_and(|m| m.is_symlink())
        {
            return Err(failed(format!(
                "`{shown}` is a symbolic link; `{removing}` removes the path it names and never \
                 follows a link, so nothing was written: name the file the link points to, or \
                 remove the link with `delete_path`"
            )));
        }
    }
    let path = ws.existing(shown)?;
    if path.is_dir() {
        return Err(failed(format!(
            "`{shown}` is a directory; a patch adds, updates, moves and deletes files only; \
             nothing was written: name a file (to remove a directory, use `delete_path`)"
        )));
    }
    Ok(path)
}

/// Parses a patch, with the error saying where, and refuses a key of `versions` that is not
/// the path of an `*** Update File` or `*** Delete File` section as the patch writes it (a
/// version that guards nothing would leave the model believing the file is guarded).
fn parse_patch(text: &str, versions: &BTreeMap<String, String>) -> Result<patch::Patch, ToolError> {
    let parsed = patch::parse(text).map_err(|e| failed(format!("{e}; nothing was written")))?;
    let guarded: Vec<&str> = parsed
        .files
        .iter()
        .filter_map(|op| match op {
            patch::FilePatch::Add { .. } => None,
            patch::FilePatch::Delete { path } | patch::FilePatch::Update { path, .. } => {
                Some(path.as_str())
            }
        })
        .collect();
    if let Some(key) = versions.keys().find(|k| !guarded.contains(&k.as_str())) {
        let named = if guarded.is_empty() {
            "it updates or deletes no file".to_string()
        } else {
            format!(
                "it updates or deletes {}",
                guarded
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        return Err(failed(format!(
            "`versions` has a version for `{}`, which no `*** Update File` or `*** Delete File` \
             of the patch names ({named}); nothing was written: key each version by the path \
             exactly as the patch writes it, and leave out files the patch adds",
            excerpt(key)
        )));
    }
    Ok(parsed)
}

/// Targets of `apply_patch`: every file the patch adds, updates, moves or deletes (and every
/// move's new path), written, fingerprinted; refused at once when the patch does not parse, a
/// path is named twice, an added or moved-to path exists, or a given version is stale.
///
/// # Errors
/// As described; nothing runs.
pub fn apply_patch_targets(
    args: &ApplyPatchArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    let ws = Workspace::open(ctx)?;
    let parsed = parse_patch(&args.patch, &args.versions)?;
    let resolved = resolve_patch(&ws, &parsed)?;
    let mut targets = Vec::new();
    for r in &resolved {
        let target = ws.fingerprinted(&r.path, r.shown, Access::Write)?;
        match r.op {
            patch::FilePatch::Add { .. } => must_be_absent(r.shown, target.fingerprint.as_deref())?,
            _ => check_version(
                r.shown,
                args.versions.get(r.shown).map(String::as_str),
                target.fingerprint.as_deref(),
            )?,
        }
        targets.push(target);
        if let Some((to, to_shown)) = &r.move_to {
            let target = ws.fingerprinted(to, to_shown, Access::Write)?;
            must_be_absent(to_shown, target.fingerprint.as_deref())?;
            targets.push(target);
        }
    }
    Ok(targets)
}

/// Refuses when a path a patch creates already holds something.
fn must_be_absent(shown: &str, fingerprint: Option<&str>) -> Result<(), ToolError> {
    if fingerprint.is_some_and(|f| f != "absent") {
        return Err(failed(format!(
            "`{shown}` already exists; a patch creates only new paths (`*** Add File`, \
             `*** Move to`): update it with `*** Update File`, or pick another path; nothing \
             was written"
        )));
    }
    Ok(())
}

/// One file's planned write, computed before any file is written.
struct Planned {
    path: PathBuf,
    shown: String,
    relative: String,
    /// The fingerprint the write re-verifies (`absent` for an added file).
    expected: String,
    before: Option<String>,
    /// The new text; `None` for a delete.
    after: Option<String>,
    move_to: Option<(PathBuf, String, String)>,
    action: PatchAction,
}

/// Applies a patch in the codex format to the workspace: every file is checked (parsed, its
/// hunks found, versions compared, added paths absent) before any is written.
///
/// # Errors
/// A syntax error (naming the patch line), a hunk whose context is not found or is ambiguous
/// (naming the hunk), a stale version, a file changed since prepare, an added path that exists:
/// nothing is written. A failure after some files were written names those (their evidence is
/// in the call's record) and the files not written.
pub async fn apply_patch(
    args: ApplyPatchArgs,
    ctx: &ToolContext,
) -> Result<ApplyPatchOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let parsed = parse_patch(&args.patch, &args.versions)?;
    let mut planned = Vec::new();
    {
        let resolved = resolve_patch(&ws, &parsed)?;
        for r in resolved {
            planned.push((
                r.path,
                r.shown.to_string(),
                r.move_to.map(|(p, s)| (p, s.to_string())),
                r.op.clone(),
            ));
        }
    }
    let all_versioned = parsed.files.iter().all(|op| match op {
        patch::FilePatch::Add { .. } => true,
        patch::FilePatch::Delete { path } | patch::FilePatch::Update { path, .. } => {
            args.versions.contains_key(path)
        }
    });
    let guard = if all_versioned && !args.versions.is_empty() {
        Guard::Version
    } else {
        Guard::Prepare
    };
    let versions = args.versions;
    let job_ctx = ctx.clone();
    let (files, changes, failure) = {
        let ws = ws.clone();
        blocking("the patch", move |work| {
            // 1. Check every file and compute its new text; any error writes nothing.
            let mut plans = Vec::new();
            for (path, shown, move_to, op) in planned {
                plans.push(plan_file(&ws, path, shown, move_to, &op, &versions)?);
            }
            // 2. Write them in patch order; a failure stops, keeping what was written.
            let mut files = Vec::new();
            let mut changes = Vec::new();
            for (i, plan) in plans.iter().enumerate() {
                let mut report = |change: Change| {
                    job_ctx.record_change(change.clone());
                    job_ctx.committed();
                    changes.push(change);
                };
                match write_planned(&ws, plan, work, &mut report) {
                    Ok(()) => files.push(PatchedFile {
                        path: plan
                            .move_to
                            .as_ref()
                            .map_or_else(|| plan.relative.clone(), |(_, _, rel)| rel.clone()),
                        action: plan.action,
                        moved_from: plan.move_to.as_ref().map(|_| plan.relative.clone()),
                    }),
                    Err(e) => {
                        let rest: Vec<String> =
                            plans[i + 1..].iter().map(|p| p.shown.clone()).collect();
                        return Ok((files, changes, Some((plan.shown.clone(), e, rest))));
                    }
                }
            }
            Ok((files, changes, None))
        })
        .await?
    };
    if let Some((failed_path, error, rest)) = failure {
        if changes.is_empty() {
            return Err(error);
        }
        let written: Vec<String> = changes
            .iter()
            .filter(|c| c.after != "absent")
            .map(|c| format!("`{}`", c.path))
            .collect();
        let rest = if rest.is_empty() {
            String::new()
        } else {
            format!(
                "; not written either: {}",
                rest.iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        return Err(failed(format!(
            "the patch was applied in part (it is not a transaction): written: {}; `{failed_path}` \
             failed: {error}{rest}; read those files and patch what remains",
            if written.is_empty() { "none (only removals)".to_string() } else { written.join(", ") }
        )));
    }
    Ok(ApplyPatchOutput {
        files,
        guard,
        changes,
    })
}

/// Checks one file op of a patch against the file as it is now and computes its new text.
fn plan_file(
    ws: &Workspace,
    path: PathBuf,
    shown: String,
    move_to: Option<(PathBuf, String)>,
    op: &patch::FilePatch,
    versions: &BTreeMap<String, String>,
) -> Result<Planned, ToolError> {
    let relative = ws.relative(&path);
    let version = versions.get(&shown).map(String::as_str);
    let move_to = match move_to {
        Some((to, to_shown)) => {
            must_be_absent(&to_shown, Some(&ws.fingerprint(&to, &to_shown)?))?;
            let rel = ws.relative(&to);
            Some((to, to_shown, rel))
        }
        None => None,
    };
    let current = || -> Result<(String, String), ToolError> {
        let bytes = ws
            .read_nofollow(&path, &shown)?
            .ok_or_else(|| not_found(&shown))?;
        let fingerprint = content_fingerprint(&bytes);
        check_version(&shown, version, Some(&fingerprint))?;
        Ok((fingerprint, text_of_exact(&bytes, &shown)?))
    };
    let (expected, before, after, action) = match op {
        patch::FilePatch::Add { content, .. } => {
            let now = ws.fingerprint(&path, &shown)?;
            must_be_absent(&shown, Some(&now))?;
            (
                "absent".to_string(),
                None,
                Some(content.clone()),
                PatchAction::Added,
            )
        }
        patch::FilePatch::Delete { .. } => {
            let (fingerprint, text) = current()?;
            (fingerprint, Some(text), None, PatchAction::Deleted)
        }
        patch::FilePatch::Update { chunks, .. } => {
            let (fingerprint, text) = current()?;
            let new_text =
                patch::apply_chunks(&shown, &text, chunks).map_err(|e| failed(e.to_string()))?;
            if new_text == text && move_to.is_none() {
                return Err(failed(format!(
                    "the hunks of `{shown}` leave it as it is (they remove no line and add none, \
                     or add back what they remove); nothing was written: give the `-` lines to \
                     remove and the `+` lines to put in their place"
                )));
            }
            let action = if move_to.is_some() {
                PatchAction::Moved
            } else {
                PatchAction::Updated
            };
            (fingerprint, Some(text), Some(new_text), action)
        }
    };
    Ok(Planned {
        path,
        shown,
        relative,
        expected,
        before,
        after,
        move_to,
        action,
    })
}

/// Writes one planned file through the write layer, re-verifying what [`plan_file`] saw, and
/// hands each change to `report` as soon as it is on disk (a move is two).
fn write_planned(
    ws: &Workspace,
    plan: &Planned,
    work: &crate::workspace::FileWork,
    report: &mut dyn FnMut(Change),
) -> Result<(), ToolError> {
    match (&plan.after, &plan.move_to) {
        (Some(after), None) => {
            ws.write_atomically(&plan.path, &plan.shown, Some(&plan.expected), work, |_| {
                Ok((after.clone().into_bytes(), ()))
            })?;
            report(evidence(
                &plan.relative,
                plan.before.as_deref(),
                Some(after),
            ));
        }
        (Some(after), Some((to, to_shown, to_rel))) => {
            ws.write_atomically(to, to_shown, Some("absent"), work, |_| {
                Ok((after.clone().into_bytes(), ()))
            })?;
            report(evidence(to_rel, None, Some(after)));
            ws.remove_file_if(&plan.path, &plan.shown, &plan.expected, work)
                .map_err(|e| {
                    failed(format!(
                        "`{to_shown}` was written, but the file it moves from could not be \
                         removed: {e}"
                    ))
                })?;
            report(evidence(&plan.relative, plan.before.as_deref(), None));
        }
        (None, _) => {
            ws.remove_file_if(&plan.path, &plan.shown, &plan.expected, work)?;
            report(evidence(&plan.relative, plan.before.as_deref(), None));
        }
    }
    Ok(())
}
