//! Edits through the real file handlers and the execution coordinator while the file changes
//! between the read and the write.

use anyhow::Result;

use super::git::FileChange;
use super::Report;

/// Runs the external-change cases on the first `limit` files of `files` into `report`.
pub fn run(_files: &[FileChange], _limit: usize, report: &mut Report) -> Result<()> {
    for protocol in ["str_replace", "hashline", "apply_patch"] {
        report.not_run.push((
            protocol.into(),
            "external-change".into(),
            "handlers missing".into(),
        ));
    }
    Ok(())
}
