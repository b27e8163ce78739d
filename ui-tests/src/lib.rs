//! Holds no code: the trybuild cases of `#[tool]` and of the generated glue are in `tests/ui/`,
//! driven by `tests/ui.rs`. They live in a crate of their own so that trybuild, which compiles
//! the cases against this crate's dependencies, builds only the quick start's dependency tree
//! rather than the CLI's.
#![forbid(unsafe_code)]
