//! Diagnostics: what is wrong with a `tools.toml`, where, and how to fix it.
//!
//! Every diagnostic renders as
//! ```text
//! PATH:LINE:COL: error[CODE]: message
//!    |
//! 12 | name = "read_file"
//!    |        ^^^^^^^^^^^ label
//!    = help: the fix
//! ```
//! Errors are collected, never thrown one at a time: a user sees every problem of a file at once.

use crate::model::Span;

/// How bad a diagnostic is. Errors fail `cargo build` and `toolcat check`; warnings are shown only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

/// One finding about a catalog file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Stable code, e.g. `E0101`; listed with its rule in [`crate::validate`].
    pub code: &'static str,
    /// Lower-case sentence, names in backticks, no full stop.
    pub message: String,
    /// Where in the source the fault is; `0..0` when it is about the file as a whole.
    pub span: Span,
    /// Short text under the caret.
    pub label: Option<String>,
    /// The fix.
    pub help: Option<String>,
}
