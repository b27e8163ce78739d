//! toolcat runtime: applies the derived tables of a `tools.toml` catalog each turn.
//!
//! - [`Catalog`]: the tables, compiled in (static, zero start-up cost) or loaded from a file;
//! - [`plan`]: which tools the model sees this turn, by bitset operations;
//! - [`search`]: exact name, then BM25 tool search over an index built at build time;
//! - [`fusion`]: BM25 fused with the cosine of sentence embeddings (semantic search), the
//!   embeddings from a [`fusion::DenseScorer`] (the encoder is the crate `toolcat-semantic`);
//! - [`export`]: a plan as MCP `tools/list`, OpenAI tools or Anthropic tools JSON;
//! - [`tokens`]: what those definitions cost, in `o200k_base` tokens;
//! - [`meta`]: the discovery meta-tools' answers, one implementation for the session and the MCP
//!   server;
//! - [`session`]: the discovery loop of a conversation (meta-tools, search budget, active set),
//!   with [`preselect`] choosing tools before a turn's first step;
//! - [`coordinator`]: the only way a tool runs: scope, JSON Schema validation, prepare,
//!   approval, resource scheduling, re-verification, execution and records;
//! - [`handler`]: the `#[tool]` handler trait, its context and errors;
//! - [`records`]: durable call records in an SQLite store, with [`archive`] keeping large
//!   results there for reading back piece by piece;
//! - `remote` (feature `mcp-client`): remote MCP servers as catalog sources: connections,
//!   discovered tools, schema drift, calls.

#![forbid(unsafe_code)]

pub mod archive;
pub mod call;
pub mod catalog;
pub mod compiled;
pub mod coordinator;
pub mod error;
pub mod export;
#[cfg(test)]
mod fixture;
pub mod fusion;
pub mod handler;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod meta;
pub mod plan;
pub mod preselect;
pub mod records;
#[cfg(feature = "mcp-client")]
pub mod remote;
pub mod remote_source;
pub mod search;
pub mod session;
pub mod tokens;

pub use archive::{
    ArchiveError, ArchiveLimits, ArchiveOwner, Bounded, ResultArchive, ResultRef, ResultSlice,
};
pub use catalog::{
    Catalog, Effect, McpAnnotations, PresetId, ProfileId, RateLimit, ServerId, ToolIndex,
    ToolSource, ToolsetId,
};
pub use coordinator::{
    ApprovalHook, ApprovalRequest, ArchivedResult, CallError, CallOutcome, CallRequest, CallValue,
    Coordinator,
};
pub use error::{CatalogError, NameError, NameKind, SearchError};
pub use export::ExportFormat;
pub use handler::{
    erase, fingerprint_path, Access, BoxFuture, ErasedHandler, Target, ToolContext, ToolError,
    ToolHandler,
};
pub use plan::{Plan, PlanCounts, TurnInput, TurnPlanner};
pub use records::{CallId, CallRecord, CallState, CallStore, DamagedRecord, NewCall, StoreError};
pub use search::{Hit, HitKind};
pub use session::{CallResult, Outcome, Session, SessionOptions};
pub use tokens::PlanStats;
pub use tokio_util::sync::CancellationToken;
pub use toolcat_codegen as codegen;
pub use toolcat_macros::tool;
