//! What the coordinator needs of remote tool servers, behind a trait: [`RemoteSource`] checks
//! that a server tool can be called now and hands back the call to send; the remote MCP client
//! (`toolcat::remote::ServerPool`, feature `mcp-client`) implements it, and
//! [`crate::Coordinator::with_remote`] plugs any implementation in.

use serde_json::Value;

use crate::handler::{BoxFuture, ToolError};

/// Remote servers whose tools (`source = "NAME"`) the coordinator sends calls to.
pub trait RemoteSource: Send + Sync {
    /// Whether `tool` (the server's own, un-namespaced name for it) can be called on `server`
    /// now, its declared input schema being `declared`: the call to send (once), or why it is
    /// not sent. Called before permission and again under the call's locks.
    ///
    /// # Errors
    /// [`Refusal::NotConnected`] while the server is not connected; [`Refusal::Drift`] when the
    /// server does not list the tool with the declared schema.
    fn check(&self, server: &str, tool: &str, declared: &Value) -> Result<RemoteCall, Refusal>;
}

/// A call that passed [`RemoteSource::check`]: sends `tools/call` with the arguments and waits
/// for the answer.
pub type RemoteCall = Box<dyn FnOnce(Value) -> BoxFuture<'static, RemoteOutcome> + Send>;

/// Why a call is not sent ([`RemoteSource::check`]); nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The server is not connected: where it is (`status`) and what to do (`hint`), for
    /// [`crate::CallError::ServerNotConnected`].
    NotConnected { status: String, hint: String },
    /// The server's tool differs from the declared row: the change, for
    /// [`crate::CallError::SchemaDrift`].
    Drift(String),
}

/// How a sent call ended.
#[derive(Debug)]
pub enum RemoteOutcome {
    /// The server answered: a result, or an error it reported.
    Done(Result<Value, ToolError>),
    /// The connection broke or the answer did not come in time after the request was sent: the
    /// reason, for "the call of `x` {reason}" ([`crate::CallError::OutcomeUnknown`]).
    Unknown(String),
    /// Nothing was sent: a server connected at the call's first use (lazily) was then not
    /// connected, or serves the tool differently from its row; answered as the same refusal
    /// [`RemoteSource::check`] gives ([`crate::CallError::ServerNotConnected`],
    /// [`crate::CallError::SchemaDrift`]).
    Refused(Refusal),
}
