//! toolcat-bench: how toolcat behaves at 100, 1,000 and 10,000 tools.
//!
//! - [`scale`]: scaled catalogs made from the real rows of `../shared/data`;
//! - [`compile`]: the build-script steps that turn one into Rust tables and an embedded index;
//! - [`c1000`] (and `c10000` with the feature `compiled-10k`): those catalogs compiled into this
//!   crate by `build.rs`, as `toolcat::include_catalog!` does for any crate;
//! - [`turn`]: the turns the benchmarks plan; [`queries`]: real queries for search latency;
//! - percentiles ([`stats`]);
//! - [`replay`]: the edit protocols replayed on this repository's own history (`edit-replay`);
//! - [`code_mode`]: Code Mode against direct calls on the 17 tasks of
//!   `tests/fixtures/code_mode`, with scripted model steps (`code-mode`).
//!
//! `cargo bench -p toolcat-bench` runs the criterion benches; the `toolcat-bench` binary makes
//! scaled catalogs, measures per-query latency and draws the plot; `bench/run` runs everything.

#![forbid(unsafe_code)]

pub mod code_mode;
pub mod compile;
pub mod plot;
pub mod queries;
pub mod replay;
pub mod scale;
pub mod stats;
pub mod turn;

use std::path::{Path, PathBuf};

/// The catalog of 1,000 tools compiled by `build.rs` (see [`scale`]).
pub mod c1000 {
    toolcat::include_catalog!(env!("OUT_DIR"), "/c1000");

    /// The scaled `tools.toml` the build script compiled.
    pub const SOURCE: &str = include_str!(concat!(env!("OUT_DIR"), "/c1000/tools.toml"));
}

/// The catalog of 10,000 tools compiled by `build.rs` (feature `compiled-10k`).
#[cfg(feature = "compiled-10k")]
pub mod c10000 {
    toolcat::include_catalog!(env!("OUT_DIR"), "/c10000");

    /// The scaled `tools.toml` the build script compiled.
    pub const SOURCE: &str = include_str!(concat!(env!("OUT_DIR"), "/c10000/tools.toml"));
}

/// The compiled catalogs of this build: `(tools, catalog)`, smallest first.
pub fn compiled_catalogs() -> Vec<(usize, &'static toolcat::Catalog)> {
    #[allow(unused_mut)]
    let mut out = vec![(1_000, c1000::toolcat_generated::catalog())];
    #[cfg(feature = "compiled-10k")]
    out.push((10_000, c10000::toolcat_generated::catalog()));
    out
}

/// The compiled tables and embedded index bytes of this build: `(tools, tables, index)`.
pub fn compiled_parts() -> Vec<(
    usize,
    &'static toolcat_catalog::tables::Tables,
    &'static [u8],
)> {
    #[allow(unused_mut)]
    let mut out = vec![(
        1_000,
        &c1000::toolcat_generated::TABLES,
        c1000::toolcat_generated::INDEX,
    )];
    #[cfg(feature = "compiled-10k")]
    out.push((
        10_000,
        &c10000::toolcat_generated::TABLES,
        c10000::toolcat_generated::INDEX,
    ));
    out
}

/// This crate's directory (`<repository>/bench`).
pub fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The data directory: `$TOOLCAT_DATA`, else `../shared/data` beside the repository.
pub fn data_dir() -> PathBuf {
    scale::data_dir(manifest_dir())
}
