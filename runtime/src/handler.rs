//! The handler side of a tool: what a `#[tool]` function is, what it receives, how it fails.
//!
//! `#[tool]` on
//! `async fn NAME(args: Args, ctx: &ToolContext) -> Result<Out, ToolError>` (with `Args:
//! Deserialize + JsonSchema`, `Out: Serialize`) implements [`ToolHandler`] for the marker type the
//! build script generated for tool `NAME`. Coherence makes a second handler for the same tool a
//! conflicting-implementation error (E0119); the generated dispatch table names every local tool's
//! marker, so a declared tool without a handler fails through `#[diagnostic::on_unimplemented]`.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A boxed, sendable future, the shape of every erased handler call.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a handler may use while it runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Root directory that file tools resolve relative paths against and may not leave.
    pub workspace: PathBuf,
}

impl ToolContext {
    /// A context rooted at `workspace`.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        ToolContext {
            workspace: workspace.into(),
        }
    }
}

/// Why a tool call failed. Every variant's message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool's input JSON Schema.
    #[error("invalid arguments for `{tool}`: {message}")]
    InvalidArguments { tool: String, message: String },
    /// The named tool is not in the catalog.
    #[error("unknown tool `{0}`; run `tool_search` to find the right name")]
    UnknownTool(String),
    /// The tool's remote MCP server has no live connection.
    #[error("tool `{tool}` is served by MCP server `{server}`, which is not connected; connect the server or pick a local tool")]
    ServerNotConnected { tool: String, server: String },
    /// A discovery meta-tool (tier `loop`) was called directly; a session serves those.
    #[error("tool `{0}` is a discovery meta-tool; call it through the session that serves the discovery loop")]
    MetaTool(String),
    /// A local tool declared in `tools.toml` has no handler in this binary.
    #[error("tool `{0}` has no handler in this binary; add a `#[tool]` function for it")]
    NoHandler(String),
    /// A path argument resolves outside the workspace.
    #[error("path `{path}` is outside the workspace `{workspace}`; pass a path inside it")]
    OutsideWorkspace { path: String, workspace: String },
    /// An I/O error while running the tool.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// Any other failure, with a message for the model.
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// An I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        ToolError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Implemented, through `#[tool]`, for the marker type of each local tool.
#[diagnostic::on_unimplemented(
    message = "tool `{Self}` is declared in tools.toml but has no `#[tool]` handler",
    label = "no `#[tool] async fn` handles this tool",
    note = "add `#[toolcat::tool] async fn {Self}(args: Args, ctx: &ToolContext) -> Result<Out, ToolError>`, or remove the row from tools.toml"
)]
pub trait ToolHandler: 'static {
    /// The tool's declared name in `tools.toml`.
    const NAME: &'static str;
    /// Typed arguments; their JSON Schema is the tool's input schema.
    type Args: DeserializeOwned + JsonSchema + Send;
    /// The result, serialized to JSON for the model.
    type Output: Serialize + Send;
    /// Runs the handler.
    fn call(args: Self::Args, ctx: &ToolContext) -> BoxFuture<'_, Result<Self::Output, ToolError>>;
}

/// A type-erased handler entry of the generated dispatch table.
#[derive(Clone, Copy)]
pub struct ErasedHandler {
    /// Declared tool name.
    pub name: &'static str,
    /// JSON Schema of the arguments (schemars, draft 2020-12).
    pub input_schema: fn() -> schemars::Schema,
    /// Deserializes the arguments, runs the handler, serializes the output.
    pub call: for<'a> fn(
        serde_json::Value,
        &'a ToolContext,
    ) -> BoxFuture<'a, Result<serde_json::Value, ToolError>>,
}

impl std::fmt::Debug for ErasedHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ErasedHandler")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Builds the erased entry for handler `H`; used by the generated dispatch table.
pub const fn erase<H: ToolHandler>() -> ErasedHandler {
    ErasedHandler {
        name: H::NAME,
        input_schema: input_schema_of::<H>,
        call: call_erased::<H>,
    }
}

fn input_schema_of<H: ToolHandler>() -> schemars::Schema {
    schemars::schema_for!(H::Args)
}

fn call_erased<H: ToolHandler>(
    args: serde_json::Value,
    ctx: &ToolContext,
) -> BoxFuture<'_, Result<serde_json::Value, ToolError>> {
    Box::pin(async move {
        let args: H::Args =
            serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments {
                tool: H::NAME.to_string(),
                message: e.to_string(),
            })?;
        let out = H::call(args, ctx).await?;
        serde_json::to_value(out)
            .map_err(|e| ToolError::Failed(format!("result of `{}` is not JSON: {e}", H::NAME)))
    })
}
