//! Reusable handlers for toolcat agents: the workspace layer every file tool reads and writes
//! through ([`workspace`]), and the edit protocols built on it ([`edit`]).
//!
//! A crate mounts these tools by declaring their rows in its own `tools.toml` (names and
//! descriptions are the crate's own) and writing one `#[toolcat::tool]` function per row that
//! calls the function here; see the crate README for the rows and the lines.

#![forbid(unsafe_code)]

pub mod edit;
pub mod files;
pub mod workspace;

use toolcat::ToolError;

/// A [`ToolError::Failed`] with `message` (lower-case, names in backticks, no full stop).
pub(crate) fn failed(message: impl Into<String>) -> ToolError {
    ToolError::Failed(message.into())
}
