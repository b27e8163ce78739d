//! Including a catalog compiled by the build script.
//!
//! `toolcat_codegen::build::compile_catalog("tools.toml")` in `build.rs` writes
//! `toolcat_catalog.rs`, `toolcat_declarations.rs` and `toolcat_index.bin` into `OUT_DIR`;
//! [`include_catalog!`](crate::include_catalog) brings them into the crate as the module
//! `toolcat_generated`, which `#[toolcat::tool]` expects at the crate root by default. The module
//! holds `ToolId`, the `markers` of the local tools, `TABLES`, `INDEX`, the dispatch table
//! `HANDLERS` and `catalog()`, the compiled [`Catalog`](crate::Catalog).

/// Declares `pub mod toolcat_generated`, the catalog the build script compiled from `tools.toml`.
///
/// - `toolcat::include_catalog!();` includes `$OUT_DIR/toolcat_catalog.rs` (the usual form, at the
///   crate root, after `build.rs` called `toolcat_codegen::build::compile_catalog`);
/// - `toolcat::include_catalog!(DIR);` includes `DIR/toolcat_catalog.rs`, where `DIR` is anything
///   `concat!` accepts, e.g. `env!("MY_CATALOG_DIR")` (for tests that generate a catalog
///   elsewhere).
///
/// The generated module includes its siblings (`toolcat_declarations.rs`, `toolcat_index.bin`)
/// by paths relative to itself, so the three files only need to stay together.
#[macro_export]
macro_rules! include_catalog {
    () => {
        $crate::include_catalog!(env!("OUT_DIR"));
    };
    ($($dir:tt)+) => {
        /// The catalog compiled from `tools.toml` by the build script.
        // A binary may use only part of the module (markers are never constructed, only named).
        #[allow(dead_code)]
        pub mod toolcat_generated {
            include!(concat!($($dir)+, "/toolcat_catalog.rs"));
        }
    };
}
