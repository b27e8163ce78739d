//! Compiling a scaled catalog into Rust tables and an embedded index, as the build script of a
//! crate that owns `tools.toml` does.
//!
//! [`compile_catalog_quiet`] runs the steps of `toolcat_codegen::build::compile_catalog` —
//! `compile_str` (load, validate, derive), `index::build_index_bytes`, `emit::emit` and
//! `build::write_if_changed` for the three files — but returns the warnings' count instead of
//! rendering each one as a `cargo::warning` line: every copy in a scaled catalog repeats a real
//! description, so each copy is a near-duplicate warning (W0501) by construction, thousands of
//! them at 10,000 tools. Nothing else differs, so the generated files are the ones
//! `compile_catalog` writes for the same catalog.
//!
//! This file is also compiled into the crate's build script (`#[path]`).

use std::path::Path;

use toolcat_catalog::diagnostics::render_all;
use toolcat_catalog::{compile_str, index};
use toolcat_codegen::build::write_if_changed;
use toolcat_codegen::emit;

/// What compiling one catalog produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompileStats {
    /// Tools in the catalog.
    pub tools: usize,
    /// Warnings the validator reported (not rendered).
    pub warnings: usize,
    /// Bytes of the serialized search index (`toolcat_index.bin`).
    pub index_bytes: usize,
    /// Bytes of the emitted declarations module (`toolcat_declarations.rs`).
    pub declarations_bytes: usize,
    /// Bytes of the emitted glue module (`toolcat_catalog.rs`).
    pub glue_bytes: usize,
}

/// Compiles the catalog at `catalog` and writes `toolcat_declarations.rs`, `toolcat_catalog.rs`
/// and `toolcat_index.bin` into `out_dir` (created if missing), each only when its content
/// changed.
///
/// # Errors
/// The rendered diagnostics when the catalog is invalid; a message naming the file when reading,
/// indexing or writing fails.
pub fn compile_catalog_quiet(catalog: &Path, out_dir: &Path) -> Result<CompileStats, String> {
    let shown = catalog.display().to_string();
    let source = std::fs::read_to_string(catalog)
        .map_err(|e| format!("cannot read the catalog `{shown}`: {e}"))?;
    let compiled = compile_str(&shown, &source)
        .map_err(|diagnostics| render_all(&diagnostics, &shown, &source))?;
    let tables = &compiled.tables;
    let index_bytes = index::build_index_bytes(tables, &[])
        .map_err(|e| format!("cannot build the search index of `{shown}`: {e}"))?;
    let emitted = emit::emit(tables);
    std::fs::create_dir_all(out_dir)
        .map_err(|e| format!("cannot create `{}`: {e}", out_dir.display()))?;
    let files: [(&str, &[u8]); 3] = [
        (emit::DECLARATIONS_FILE, emitted.declarations.as_bytes()),
        (emit::CATALOG_FILE, emitted.glue.as_bytes()),
        (emit::INDEX_FILE, &index_bytes),
    ];
    for (name, bytes) in files {
        let path = out_dir.join(name);
        write_if_changed(&path, bytes)
            .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
    }
    Ok(CompileStats {
        tools: tables.len,
        warnings: compiled.warnings.len(),
        index_bytes: index_bytes.len(),
        declarations_bytes: emitted.declarations.len(),
        glue_bytes: emitted.glue.len(),
    })
}
