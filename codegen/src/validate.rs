//! The rules every catalog must follow, each with a stable code.

use crate::diagnostics::Diagnostic;
use crate::load::Loaded;

/// Checks every rule, returning all findings in source order.
pub fn validate(loaded: &Loaded) -> Vec<Diagnostic> {
    let _ = loaded;
    todo!("validate::validate")
}
