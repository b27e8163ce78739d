//! Edits through the real file handlers (`toolcat_tools::files`, as the reference agent
//! `toolcat-cli` mounts them in its `coding` profile) and the execution coordinator
//! ([`toolcat::Coordinator`]) on a temporary workspace, while another writer changes the file.
//!
//! For each protocol's tool (`edit_file`, `edit_lines`, `apply_patch`) and each of the first
//! files whose clean replay applied, with the input the replay derived:
//! - `handler`: `read_file` (Hashline format, every page) gives the `version`; the edit carrying
//!   it must apply and leave the intended text (the anchors of `edit_lines` are the read's);
//! - `changed-after-read`: the same read, then a line appended to the file on disk; the edit
//!   carrying the version must be refused as stale (`changed since the read`) and the file must
//!   hold the external content;
//! - `changed-after-approval`: no version; the coordinator's approval hook (asked after the
//!   prepare step fingerprinted the file) appends the line before approving; the call must be
//!   refused as `target-changed` and the file must hold the external content.
//!
//! A file that holds anything but the external content after a refused case is counted as a
//! write to a changed file.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde_json::{json, Value};
use toolcat::{CallError, CallRequest, Coordinator, ToolContext};
use toolcat_tools::edit::hashline;

use super::derive::{AnchoredEdit, LineOpKind};
use super::protocols::Derived;
use super::{Outcome, Report};

/// The line the other writer appends.
const EXTERNAL_LINE: &str = "changed by another writer";

/// One file of the replay with what its clean replay derived.
pub struct Case<'a> {
    /// `COMMIT PATH` for messages.
    pub what: String,
    /// The file before the commit.
    pub old: &'a str,
    /// The file's path in the repository (named in the patch).
    pub path: &'a str,
    /// The inputs the clean replay derived and applied.
    pub derived: Derived,
}

/// `text` with [`EXTERNAL_LINE`] appended as a line of its own.
fn externally_changed(text: &str) -> String {
    if text.is_empty() || text.ends_with('\n') {
        format!("{text}{EXTERNAL_LINE}\n")
    } else {
        format!("{text}\n{EXTERNAL_LINE}")
    }
}

struct Workspace {
    _dir: tempfile::TempDir,
    root: PathBuf,
    runtime: tokio::runtime::Runtime,
}

impl Workspace {
    fn new() -> Result<Workspace> {
        let dir = tempfile::tempdir().context("cannot create a temporary workspace")?;
        let root = dir.path().to_path_buf();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start a tokio runtime")?;
        Ok(Workspace {
            _dir: dir,
            root,
            runtime,
        })
    }

    /// Calls `tool` as the `coding` profile through a coordinator whose approval hook runs
    /// `on_approval` and approves.
    fn call(
        &self,
        tool: &str,
        arguments: Value,
        on_approval: impl Fn() + Send + Sync + 'static,
    ) -> Result<std::result::Result<Value, CallError>> {
        let catalog = toolcat_cli::reference_catalog();
        let coordinator =
            Coordinator::new(catalog, ToolContext::new(&self.root)).with_approval(move |_| {
                on_approval();
                true
            });
        let profile = catalog.profile("coding").context("no `coding` profile")?;
        let allowed = catalog.profile_tools(profile);
        let tool = catalog
            .tool(tool)
            .with_context(|| format!("no tool `{tool}`"))?;
        let outcome = self
            .runtime
            .block_on(coordinator.call(CallRequest::new(tool, arguments, allowed)));
        Ok(match outcome.result {
            Ok(value) => {
                Ok(serde_json::from_str(&value.text).context("a result that is not JSON")?)
            }
            Err(e) => Err(e),
        })
    }
}

/// The tool of `protocol` and its arguments for `case` on workspace file `file`, with
/// `version` when given, and the text the file must hold after it; `None` when the replay
/// derived nothing for this protocol.
fn edit_call(
    protocol: &str,
    case: &Case<'_>,
    file: &str,
    version: Option<&str>,
) -> Option<(&'static str, Value, String)> {
    let d = &case.derived;
    let (tool, mut args, expected) = match protocol {
        "str_replace" => {
            let (call, expected) = d.first_call.as_ref()?;
            (
                "edit_file",
                json!({"path": file, "old_string": call.old_string, "new_string": call.new_string}),
                expected.clone(),
            )
        }
        "hashline" => {
            let (edits, new) = d.line_edits.as_ref()?;
            let edits: Vec<Value> = edits.iter().map(edit_json).collect();
            (
                "edit_lines",
                json!({"path": file, "edits": edits}),
                new.clone(),
            )
        }
        _ => {
            let (patch, new) = d.patch.as_ref()?;
            let patch = patch.replacen(
                &format!("*** Update File: {}\n", case.path),
                &format!("*** Update File: {file}\n"),
                1,
            );
            ("apply_patch", json!({ "patch": patch }), new.clone())
        }
    };
    if let Some(v) = version {
        if tool == "apply_patch" {
            args["versions"] = json!({ file: v });
        } else {
            args["version"] = json!(v);
        }
    }
    Some((tool, args, expected))
}

/// A Hashline edit as the model sends it to `edit_lines`.
fn edit_json(e: &AnchoredEdit) -> Value {
    let op = match e.op {
        LineOpKind::Replace => "replace",
        LineOpKind::InsertAfter => "insert_after",
        LineOpKind::InsertBefore => "insert_before",
        LineOpKind::Delete => "delete",
    };
    let mut v = json!({"op": op, "start": e.start});
    if let Some(end) = &e.end {
        v["end"] = json!(end);
    }
    if let Some(content) = &e.content {
        v["content"] = json!(content);
    }
    v
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write `{}`", path.display()))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read `{}`", path.display()))
}

/// `read_file` of `file` in the Hashline format, page after page as a model reads a file whose
/// rendering exceeds one answer: the version, after checking that the pages together are the
/// rendering of `old` (the anchors the edits were derived from) and carry one version.
fn read_version(
    ws: &Workspace,
    file: &str,
    old: &str,
) -> Result<std::result::Result<String, String>> {
    let (mut pages, mut version, mut offset) = (Vec::new(), None::<String>, 1);
    loop {
        let read = ws.call(
            "read_file",
            json!({"path": file, "format": "hashline", "offset": offset}),
            || {},
        )?;
        let read = match read {
            Ok(r) => r,
            Err(e) => return Ok(Err(format!("`read_file` failed: {e}"))),
        };
        let this = read["version"].as_str().map(str::to_string);
        if this.is_none() || (version.is_some() && version != this) {
            return Ok(Err(
                "`read_file` gave no `version`, or another per page".into()
            ));
        }
        version = this;
        pages.push(read["content"].as_str().unwrap_or("").to_string());
        let (end, total) = (read["end_line"].as_u64(), read["total_lines"].as_u64());
        match (end, total) {
            (Some(end), Some(total)) if end < total && end >= offset => offset = end + 1,
            _ => break,
        }
    }
    let lines = old.split('\n').count();
    if pages.join("\n") != hashline::render(old, 1, lines) {
        return Ok(Err("`read_file` does not show the rendered file".into()));
    }
    Ok(version.ok_or_else(|| "`read_file` gave no `version`".to_string()))
}

/// Runs the cases of the module docs for each protocol on the first `limit` of `cases` that
/// have that protocol's input.
pub fn run(cases: &[Case<'_>], limit: usize, report: &mut Report) -> Result<()> {
    if limit == 0 {
        return Ok(());
    }
    let ws = Workspace::new()?;
    for protocol in ["str_replace", "hashline", "apply_patch"] {
        let mut n = 0;
        for case in cases {
            if n == limit {
                break;
            }
            if edit_call(protocol, case, "f", None).is_none() {
                continue;
            }
            n += 1;
            let file = format!("edit-{n}.txt");
            let path = ws.root.join(&file);
            let what = || case.what.clone();

            // The edit through the handler, the file unchanged since the read.
            write(&path, case.old)?;
            let outcome = match read_version(&ws, &file, case.old)? {
                Err(m) => Outcome::Unexpected(m),
                Ok(version) => {
                    let (tool, args, expected) =
                        edit_call(protocol, case, &file, Some(&version)).expect("derived");
                    match ws.call(tool, args, || {})? {
                        Ok(_) if read(&path)? == expected => Outcome::Correct,
                        Ok(_) => Outcome::Wrong("the file differs from the intended text".into()),
                        Err(e) => Outcome::Unexpected(format!("refused: {e}")),
                    }
                }
            };
            report.row(protocol, "handler", "file").add(outcome, what);

            // Changed on disk between the read and the edit carrying its version.
            let external = externally_changed(case.old);
            write(&path, case.old)?;
            let outcome = match read_version(&ws, &file, case.old)? {
                Err(m) => Outcome::Unexpected(m),
                Ok(version) => {
                    write(&path, &external)?;
                    let (tool, args, _) =
                        edit_call(protocol, case, &file, Some(&version)).expect("derived");
                    let result = ws.call(tool, args, || {})?;
                    judge(result, read(&path)? == external, |e| {
                        e.to_string().contains("changed since the read")
                    })
                }
            };
            let tally = report.row(protocol, "changed-after-read", "file");
            tally.writes_to_changed += usize::from(matches!(outcome, Outcome::Wrong(_)));
            tally.add(outcome, what);

            // Changed on disk after the prepare step, while the approval is asked.
            write(&path, case.old)?;
            let (tool, args, _) = edit_call(protocol, case, &file, None).expect("derived");
            let (hook_path, hook_text) = (path.clone(), external.clone());
            let result = ws.call(tool, args, move || {
                let _ = std::fs::write(&hook_path, &hook_text);
            })?;
            let outcome = judge(result, read(&path)? == external, |e| {
                matches!(e, CallError::TargetChanged { .. })
            });
            let tally = report.row(protocol, "changed-after-approval", "file");
            tally.writes_to_changed += usize::from(matches!(outcome, Outcome::Wrong(_)));
            tally.add(outcome, what);
        }
    }
    Ok(())
}

/// A case that must be refused for `expected_reason` with the file left as the other writer
/// made it (`kept`). A write (the file no longer holds the external content) is wrong.
fn judge(
    result: std::result::Result<Value, CallError>,
    kept: bool,
    expected_reason: impl Fn(&CallError) -> bool,
) -> Outcome {
    match (result, kept) {
        (_, false) => Outcome::Wrong("wrote over the other writer's change".into()),
        (Ok(_), true) => Outcome::Unexpected("succeeded without writing".into()),
        (Err(e), true) if expected_reason(&e) => Outcome::RefusedExpected,
        (Err(e), true) => Outcome::Unexpected(format!("refused, for another reason: {e}")),
    }
}
