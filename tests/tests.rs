//! The one integration-test binary. Each module says what it pins.

/// `#[tool]` compile errors and the generated glue, as a user meets them (trybuild).
mod ui;
/// A user's quick-start crate builds, runs a tool, and fails to build on a broken tools.toml.
mod build_script;
/// Malformed catalogs: each fixture's rendered diagnostics, snapshotted, with its expected codes.
mod invalid_catalogs;
/// `toolcat import`: real catalogs and fixtures become tools.toml text that compiles and round-trips.
mod import;
