//! toolcat-codegen: the build-time half of toolcat, a build-dependency only.
//!
//! The catalog pipeline (load → validate → derive) is `toolcat_catalog`'s; this crate adds the
//! steps that need syn, quote and prettyplease, and the files:
//! - [`emit`] turns the derived tables into Rust source and artefacts, as strings
//!   (snapshot-testable);
//! - [`build`] is the one call a user's `build.rs` makes: it compiles the catalog, builds its
//!   search index and writes the emitted files into `OUT_DIR`.

#![forbid(unsafe_code)]

pub mod build;
pub mod emit;
