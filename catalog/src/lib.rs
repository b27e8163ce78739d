//! toolcat-catalog: what a `tools.toml` means, shared by the build script, the `#[tool]` macro, the
//! runtime and the `toolcat` CLI, so all of them agree on it.
//!
//! The steps are separate public functions (load → validate → derive), none of which touches the
//! file system; [`compile_str`] (and [`compile_str_for`]) run them in order:
//! - [`load`] parses `tools.toml` into the [`model`] with source spans;
//! - [`validate`] checks every rule, collecting all [`diagnostics`]; the name and schema rules of
//!   the export targets live in [`targets`];
//! - [`derive`](mod@derive) builds the [`tables`], the one representation the runtime reads;
//! - [`diff`](mod@diff) compares two catalogs' tables: what a change does to each answer, and
//!   which changes widen what callers can reach;
//! - [`index`] (feature `index`) builds and opens the BM25 search index of those tables.
//!
//! Emitting Rust source from the tables and the build-script helper are the build-time crate's
//! (`toolcat-codegen`); reading other tool surfaces into `tools.toml` text is `toolcat-import`'s.

#![forbid(unsafe_code)]

pub mod derive;
pub mod diagnostics;
pub mod diff;
pub mod generated;
#[cfg(feature = "index")]
pub mod index;
pub mod load;
pub mod model;
pub mod tables;
pub mod targets;
pub mod validate;

use diagnostics::Diagnostic;
use model::Target;
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
    compile_str_for(path, source, None)
}

/// Compiles a catalog like [`compile_str`], holding its names and server schemas to `targets`
/// instead of the ones it declares (`None`: the declared ones).
///
/// # Errors
/// Every diagnostic found (errors and warnings, in source order) when any of them is an error.
pub fn compile_str_for(
    path: &str,
    source: &str,
    targets: Option<&[Target]>,
) -> Result<Compiled, Vec<Diagnostic>> {
    let mut loaded = load::parse(path, source)?;
    if let Some(targets) = targets {
        loaded.file.targets = targets.to_vec();
        // Diagnostics must not point at the file's own `targets` as the reason.
        loaded.targets_span = 0..0;
    }
    let diagnostics = validate::validate(&loaded);
    if diagnostics.iter().any(Diagnostic::is_error) {
        return Err(diagnostics);
    }
    Ok(Compiled {
        tables: derive::derive(&loaded),
        warnings: diagnostics,
    })
}
