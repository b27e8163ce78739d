//! Running one tool by its catalog entry: a local `#[tool]` handler, or an error that names why
//! the call cannot run here.
//!
//! This is the bare dispatch step. It neither authorizes (`tier`) nor checks the plan; callers that
//! act for a model go through the session and coordinator, which end here.

use serde_json::Value;

use crate::catalog::{Catalog, ToolIndex, ToolSource};
use crate::handler::{ToolContext, ToolError};

impl Catalog {
    /// Calls tool `t` with JSON `args` and returns its JSON result.
    ///
    /// # Errors
    /// - [`ToolError::InvalidArguments`] when `args` do not deserialize into the handler's type;
    /// - [`ToolError::NoHandler`] for a local tool without a compiled-in handler (a catalog loaded
    ///   from a file has none);
    /// - [`ToolError::ServerNotConnected`] for a tool of a remote MCP server (no connection is made
    ///   by this crate yet);
    /// - [`ToolError::MetaTool`] for a discovery meta-tool;
    /// - whatever the handler returns.
    pub async fn call(
        &self,
        t: ToolIndex,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        match self.source(t) {
            ToolSource::Local => match self.handler(t) {
                Some(h) => (h.call)(args, ctx).await,
                None => Err(ToolError::NoHandler(self.name(t).to_string())),
            },
            ToolSource::Loop => Err(ToolError::MetaTool(self.name(t).to_string())),
            ToolSource::Server(s) => Err(ToolError::ServerNotConnected {
                tool: self.exported_name(t).to_string(),
                server: self.server_name(s).to_string(),
            }),
        }
    }
}
