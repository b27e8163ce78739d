//! The reference agent: its catalog (`tools.toml`, compiled in by `build.rs`), its `#[tool]`
//! handlers, the `toolcat` command line, the writer of `generated/` and the benchmark harness
//! behind `toolcat eval` ([`eval`]: search quality on benchmark query sets, recall@k and nDCG@5,
//! and the token economy of plans).

#![forbid(unsafe_code)]

pub mod cli;
pub mod eval;
pub mod generate;
pub mod handlers;

toolcat::include_catalog!();

/// The text of the reference catalog, `tools.toml`, as compiled into this binary.
pub const REFERENCE_SOURCE: &str = include_str!("../tools.toml");

/// The reference catalog's tool vectors in the stored form of `toolcat_semantic::ToolVectors`
/// (f32, or int8 with `TOOLCAT_VECTORS=int8`), encoded at build time by the model in
/// `TOOLCAT_MODEL_DIR`; empty when no model was configured for the build.
/// `ToolVectors::load` uses them only when they match the catalog and the model in use.
#[cfg(feature = "semantic")]
pub static REFERENCE_VECTORS: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/toolcat_tool_vectors.bin"));

/// The reference catalog compiled into this binary (static tables, embedded index, handlers).
pub fn reference_catalog() -> &'static toolcat::Catalog {
    toolcat_generated::catalog()
}
