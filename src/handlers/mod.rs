//! The `#[tool]` handlers of the reference agent's local tools: one module per area of
//! `tools.toml` (`source = "local"` rows).
//!
//! Every handler works inside `ToolContext::workspace` and nowhere else: path arguments go through
//! [`workspace::Workspace`], which canonicalizes them and rejects anything that resolves outside
//! the workspace, whether through `..`, an absolute path or a symbolic link. Session state (the
//! task checklist, the plan, long-term memory, reminders) lives in JSON files under
//! `WORKSPACE/.toolcat/` ([`state`]), so it is plain, inspectable and survives restarts.
//!
//! Architecture invariant: each local row of `tools.toml` has exactly one handler here and each
//! handler names a local row; the `#[tool]` macro and the generated dispatch table enforce both
//! directions at compile time.

pub mod files;
pub mod interaction;
pub mod memory;
pub mod planning;
pub mod scheduling;
pub mod search;
pub mod shell;
pub mod state;
pub mod vcs;
pub use toolcat_tools::workspace;

use toolcat::ToolError;

/// A [`ToolError::Failed`] with `message` (lower-case, names in backticks, no full stop).
fn failed(message: impl Into<String>) -> ToolError {
    ToolError::Failed(message.into())
}

/// The current time in RFC 3339, UTC, to the second (`2026-05-01T09:30:00Z`).
fn now_rfc3339() -> String {
    rfc3339(time::OffsetDateTime::now_utc())
}

/// `at` in RFC 3339, UTC, to the second.
fn rfc3339(at: time::OffsetDateTime) -> String {
    let at = at
        .to_offset(time::UtcOffset::UTC)
        .replace_nanosecond(0)
        .unwrap_or(at);
    at.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| at.unix_timestamp().to_string())
}
