//! toolcat runtime: applies the derived tables of a `tools.toml` catalog each turn.
//!
//! - [`Catalog`]: the tables, compiled in (static, zero start-up cost) or loaded from a file;
//! - [`plan`]: which tools the model sees this turn, by bitset operations;
//! - [`search`]: BM25 tool search over an index built at build time;
//! - [`export`]: a plan as MCP `tools/list`, OpenAI tools or Anthropic tools JSON;
//! - [`handler`]: the `#[tool]` handler trait, its context and errors.

pub mod handler;

pub use handler::{erase, BoxFuture, ErasedHandler, ToolContext, ToolError, ToolHandler};
pub use toolcat_codegen as codegen;
pub use toolcat_macros::tool;
