//! Remote MCP servers as catalog sources: connect, discover and execute, kept apart
//! (feature `mcp-client`, through the official Rust SDK's client, `rmcp`).
//!
//! - **Connect** ([`ServerPool`]): one background task per `[mcp_server.NAME]` connects at
//!   start-up (stdio child process with its `args` and `env`, or streamable HTTP with its
//!   `headers`) and reconnects with exponential backoff when the connection fails or breaks.
//!   Starting never blocks; [`ServerPool::wait_ready`] waits at most a budget. Each server's
//!   failures stay its own. [`ServerPool::status`] says where each server is.
//! - **Discover**: each (re)connection, and each `notifications/tools/list_changed`, lists the
//!   server's tools (`tools/list`, every page) and keeps them with their time of capture
//!   ([`ServerPool::discovered`]); [`discover`] does the same once, for tools that import or
//!   check a server. The catalog's search and plans use the declared rows only, so they work
//!   while a server is down.
//! - **Execute** (through [`crate::Coordinator::with_servers`], like every call; the pool is the
//!   coordinator's [`crate::remote_source::RemoteSource`]): a call checks
//!   that its server is connected and that the server's input schema of the tool is still the
//!   row's ([`compare`]); it is refused otherwise, naming the server and the change, and nothing
//!   is sent. A call whose connection breaks (or times out) after the request was sent is
//!   recorded `outcome_unknown` and never replayed.
//!
//! Credentials: values of `env` and `headers` may be `${VAR}` references, resolved from the
//! process environment at each connection. A `url`'s user information (`user:password@`) is
//! taken out of the url requested and sent as `Authorization: Basic base64(user:password)`,
//! unless `headers` configure an `Authorization`, which then wins (the user information is not
//! sent). Every configured value (at least [`config::MIN_REDACTED_LEN`] bytes), the variables
//! the references name, and the user information with every form derived from it (the
//! password, `user:password`, its base64, the `Basic` value; as written and percent-decoded)
//! are secrets: each is replaced by `[redacted]` in results, error texts, tool lists and
//! statuses before they leave the pool, found in any letter case, JSON-escaped (`\u0041`,
//! `\"`, at any depth) and across the content blocks of one answer, and a text is redacted
//! before it is cut ([`MAX_ERROR_TEXT`]). The server's standard error is kept (its last 2 KiB,
//! for error messages) and never printed. Redaction is for servers that echo what they get; a
//! server that means to leak a credential it was given can always encode it some other way.

pub mod config;
pub mod drift;
mod pool;

pub use config::{ServerConfig, Transport, DEFAULT_CONNECT_TIMEOUT};
pub use drift::{compare, live_report, LiveReport, SchemaChange, SchemaDrift};
pub use pool::{
    discover, Discovery, PoolOptions, RemoteTool, ServerPool, ServerState, ServerStatus,
    MAX_ERROR_TEXT, MAX_MESSAGE_BYTES,
};

/// Why a server could not be configured, reached or listed. Messages never contain a configured
/// `env` or `headers` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteError {
    /// The configuration cannot be used (no transport, a malformed `${VAR}` reference, an unset
    /// variable, a header that is not a valid HTTP header).
    #[error("MCP server `{server}`: {message}")]
    Config { server: String, message: String },
    /// The connection failed (the process did not start or exited, the endpoint refused,
    /// `initialize` failed).
    #[error("cannot connect to MCP server `{server}`: {message}")]
    Connect { server: String, message: String },
    /// Connecting and listing took longer than the connection timeout.
    #[error("MCP server `{server}` did not answer within {after_ms} ms (start, `initialize` and `tools/list`); check that its command or url serves MCP, or raise its `connect_timeout_ms`")]
    Timeout { server: String, after_ms: u64 },
    /// `tools/list` failed after the connection was made.
    #[error("MCP server `{server}` connected, but listing its tools failed: {message}")]
    List { server: String, message: String },
}
