//! The one integration-test binary. Each module says what it pins.

/// Malformed catalogs: each fixture's rendered diagnostics, snapshotted, with its expected codes.
mod invalid_catalogs;
/// `toolcat import`: real catalogs and fixtures become tools.toml text that compiles and round-trips.
mod import;
