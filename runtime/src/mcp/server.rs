//! [`Server`]: your own compiled catalog served over MCP in one call.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use super::{
    coordinator, serve_http, serve_stdio, Exposure, ScopeError, ScopeTable, Selection, Shared,
};
use crate::catalog::Catalog;
use crate::coordinator::Coordinator;

/// Why [`Server`] could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The profile or exposure cannot be served (see [`ScopeError`]).
    #[error(transparent)]
    Scope(#[from] ScopeError),
    /// An I/O error on stdin/stdout, or the HTTP address cannot be bound.
    #[error("serving MCP failed: {0}")]
    Io(#[from] std::io::Error),
}

/// An MCP server of a catalog's tools, its local tools run by the handlers compiled into it
/// (the `#[tool]` functions of the crate that built the catalog), within one profile and one
/// exposure scope: the same [`coordinator`], [`ScopeTable`] and [`Shared`] state as
/// `toolcat serve`.
///
/// ```no_run
/// # async fn demo(catalog: &'static toolcat::Catalog) -> Result<(), toolcat::mcp::ServeError> {
/// use toolcat::mcp::{Exposure, Server};
/// #[derive(Clone)]
/// struct Greeting(String);
/// Server::new(catalog, "full", Exposure::ReadOnly)
///     .state(Greeting("hello".into()))
///     .serve_stdio()
///     .await
/// # }
/// ```
///
/// Defaults: local tools run in the current directory ([`Server::workspace`]), no approval hook
/// (tools of tier `gated` run only when a client that supports elicitation approves them, and
/// are refused as `needs-approval` otherwise), deprecated tools neither listed nor run, no call store.
/// A host that needs those builds its own coordinator and uses [`Server::with_coordinator`].
#[derive(Debug)]
pub struct Server {
    coordinator: Coordinator<'static>,
    profile: String,
    exposure: Exposure,
    allow_deprecated: bool,
    selection: Selection,
}

impl Server {
    /// A server of `catalog` for `profile` at `exposure`, its local tools running in the
    /// current directory (`.` when it cannot be read).
    pub fn new(catalog: &'static Catalog, profile: &str, exposure: Exposure) -> Server {
        let workspace = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Server::with_coordinator(coordinator(catalog, workspace), profile, exposure)
    }

    /// A server over `coordinator` (with its store, archive, approval hook, remote servers and
    /// application state), for `profile` at `exposure`.
    pub fn with_coordinator(
        coordinator: Coordinator<'static>,
        profile: &str,
        exposure: Exposure,
    ) -> Server {
        Server {
            coordinator,
            profile: profile.to_string(),
            exposure,
            allow_deprecated: false,
            selection: Selection::default(),
        }
    }

    /// Local tools run in `workspace`.
    pub fn workspace(mut self, workspace: impl Into<PathBuf>) -> Server {
        self.coordinator = self.coordinator.with_workspace(workspace);
        self
    }

    /// Registers application state of type `T` for the handlers ([`Coordinator::with_state`]).
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Server {
        self.coordinator = self.coordinator.with_state(value);
        self
    }

    /// Lists and runs the deprecated tools of the scope ([`ScopeTable::with_deprecated`]).
    pub fn allow_deprecated(mut self, allow: bool) -> Server {
        self.allow_deprecated = allow;
        self
    }

    /// Narrows what is served to toolsets and tools, or serves each session progressively
    /// ([`Selection`], [`ScopeTable::with_selection`]; `toolcat serve --toolsets`, `--tools`,
    /// `--dynamic`). Default: every tool of the scope, listed from the start.
    pub fn selection(mut self, selection: Selection) -> Server {
        self.selection = selection;
        self
    }

    /// The state every connection shares, to serve it with [`serve_stdio`], [`serve_http`] or
    /// [`super::serve_lines`], or reload it with [`super::watch`].
    ///
    /// # Errors
    /// [`ServeError::Scope`] for a profile the catalog does not declare, exposure `excluded`, a
    /// selected toolset or tool outside the scope, or a definition that is not a valid MCP tool.
    pub fn shared(self) -> Result<Arc<Shared>, ServeError> {
        let table = ScopeTable::with_selection(
            self.coordinator,
            &self.profile,
            self.exposure,
            self.allow_deprecated,
            self.selection,
        )?;
        Ok(Shared::new(table))
    }

    /// Serves MCP on stdin and stdout until stdin ends ([`serve_stdio`]).
    ///
    /// # Errors
    /// As [`Server::shared`], then an I/O error on stdin or stdout.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        Ok(serve_stdio(self.shared()?).await?)
    }

    /// Serves streamable HTTP on `addr` at `/mcp` ([`serve_http`], with its `Host` and `Origin`
    /// checks); `bound` receives the address bound (a port chosen for `:0`). Never returns
    /// while serving.
    ///
    /// # Errors
    /// As [`Server::shared`], then when `addr` cannot be bound.
    pub async fn serve_http(
        self,
        addr: SocketAddr,
        bound: impl FnOnce(SocketAddr),
    ) -> Result<(), ServeError> {
        Ok(serve_http(self.shared()?, addr, bound).await?)
    }
}
