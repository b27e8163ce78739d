//! The reference agent: its catalog (`tools.toml`, compiled in by `build.rs`), its `#[tool]`
//! handlers, the `toolcat` command line and the writer of `generated/`.

pub mod calls;
pub mod cli;
pub mod eval;
pub mod generate;
pub mod handlers;
pub mod serve;
pub mod servers;

toolcat::include_catalog!();

/// The text of the reference catalog, `tools.toml`, as compiled into this binary.
pub const REFERENCE_SOURCE: &str = include_str!("../tools.toml");

/// The reference catalog compiled into this binary (static tables, embedded index, handlers).
pub fn reference_catalog() -> &'static toolcat::Catalog {
    toolcat_catalog::catalog()
}
