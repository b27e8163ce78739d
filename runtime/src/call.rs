//! Running one tool by its catalog entry: a local `#[tool]` handler, or an error that names why
//! the call cannot run here.
//!
//! This is the bare dispatch step, with none of the checks: no scope, no JSON Schema validation,
//! no approval of `gated` tools, no resource locks, no records. Hosts run tools through the
//! execution coordinator ([`crate::Coordinator`]), which sessions, `toolcat call` and the MCP
//! server share; this stays for harnesses that need to run a handler directly (a test that
//! simulates a loop without checks, to show the checks catch it).

use serde_json::Value;

use crate::catalog::{Catalog, ToolIndex, ToolSource};
use crate::handler::{ToolContext, ToolError};

impl Catalog {
    /// Calls tool `t` with JSON `args` and returns its JSON result, skipping every check of the
    /// coordinator (see the module docs): not for running tools on a model's behalf.
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
