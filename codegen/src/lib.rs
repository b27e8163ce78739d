//! toolcat-codegen: the declaration pipeline shared by the build script, the `#[tool]` macro and
//! the `toolcat` CLI, so all three agree on what a `tools.toml` means.
//!
//! The steps are separate public functions (load → validate → derive → emit), and only the build
//! helper writes files:
//! - [`load`] parses `tools.toml` into the [`model`] with source spans;
//! - [`validate`] checks every rule, collecting all [`diagnostics`];
//! - [`derive`] builds the [`tables`], the one representation the runtime reads;
//! - [`emit`] turns tables into Rust source and artefacts, as strings (snapshot-testable);
//! - [`build`] is the one call a user's `build.rs` makes.

#[cfg(feature = "index")]
pub mod build;
pub mod derive;
pub mod diagnostics;
pub mod emit;
pub mod import;
#[cfg(feature = "index")]
pub mod index;
pub mod load;
pub mod model;
pub mod tables;
pub mod targets;
pub mod validate;

use diagnostics::{Diagnostic, Severity};
use tables::Tables;

/// A catalog that passed validation: its tables, and the warnings it produced.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub tables: Tables,
    pub warnings: Vec<Diagnostic>,
}

/// Loads, validates and derives a catalog from source text. `path` is used in diagnostics only.
///
/// # Errors
/// Every diagnostic found (errors and warnings, in source order) when any of them is an error.
pub fn compile_str(path: &str, source: &str) -> Result<Compiled, Vec<Diagnostic>> {
    let loaded = load::parse(path, source)?;
    let diagnostics = validate::validate(&loaded);
    if diagnostics.iter().any(|d| d.severity == Severity::Error) {
        return Err(diagnostics);
    }
    Ok(Compiled {
        tables: derive::derive(&loaded),
        warnings: diagnostics,
    })
}
