//! The discovery loop against real provider APIs, as runnable examples of this crate:
//! `examples/openai_loop.rs` (OpenAI Chat Completions through async-openai) and
//! `examples/anthropic_loop.rs` (Anthropic Messages through reqwest). Each runs the reference
//! catalog's real tools in the current directory under the `code` preset, asks on the terminal
//! before a gated call and keeps large results in a result archive; without credentials it prints
//! how to run it and exits 0. The library itself is empty.

#![forbid(unsafe_code)]
