//! The MCP server: one catalog, one profile and one exposure scope served to MCP clients over
//! stdio or streamable HTTP, on the official Rust SDK (`rmcp`). Feature `mcp`.
//!
//! # What is listed
//! `tools/list` answers the **listed set** of a [`ScopeTable`]: every tool the profile owns whose
//! `exposure` falls within the scope (`read-only` ⊂ `staging` ⊂ `full`; `excluded` never,
//! [`Catalog::scope_tools`]), plus the discovery meta-tools (tier `loop`) the profile owns, in
//! catalog order — not `run_code`, which runs programs only in a session with a script engine
//! ([`crate::code_mode`]). Deprecated tools are left out unless the host opts in
//! ([`ScopeTable::with_deprecated`], `toolcat serve --allow-deprecated`): then the scope's
//! deprecated tools are listed and run too. Definitions are
//! [`crate::export::mcp_tool`], the JSON `toolcat plan --format mcp` prints, with annotations
//! derived from `effect` and an `outputSchema` for a tool whose output schema
//! ([`Catalog::output_schema`]: the handler's output type, or a server row's declared
//! `output_schema`) is an object schema; MCP takes no other, so a tool whose output is a string,
//! a number, an array or an enum (a root without `"type": "object"`) is listed without one. A
//! successful call of a tool listed with an `outputSchema` answers its result as
//! `structuredContent` (the whole JSON object, also when the text content is an archived
//! result's preview) besides the text content; a server tool's result is the server's own
//! `structuredContent`, passed through, and when the server sent none (only text) the answer
//! has none either. Pages hold [`PAGE_SIZE`] tools; `nextCursor` is opaque
//! (`GENERATION:OFFSET`), and a cursor issued before the listed set changed is refused with
//! JSON-RPC `-32602` (list again from the start).
//!
//! # What may run
//! The **allowed set** is the listed set without the meta-tools. Every `tools/call` goes to the
//! execution coordinator ([`crate::coordinator`]) with the allowed set, which refuses a tool
//! outside it before anything else, then validates the arguments, asks for approval, applies the
//! rate limit, runs and records. A name the catalog does not know is refused the same way
//! (`outside-scope`, its `message` the same words), so a client cannot tell unknown tools from
//! tools outside its scope. A name that is not listed is answered by [`crate::meta`]'s hint,
//! naming nothing outside the scope: a deprecated tool of the scope (without the opt-in) answers
//! `{"error":"deprecated","tool","message","removal"?,"replacedBy"?}` (`replacedBy` only when the
//! replacement is listed; `message` e.g. `` `old` is deprecated (removal 2027-01-31); call `new`
//! instead ``); a bare declared name several listed tools share answers
//! `{"error":"ambiguous-name","tool","message","choices":[...]}`.
//! The meta-tools give the answers of [`crate::meta`], as a [`crate::Session`] does, within the
//! listed set and with no search budget (an MCP session has no turns): `tool_search` and
//! `tool_describe` find and describe listed tools only (an unlisted name is `notFound`, like an
//! unknown one), `tool_call` runs the named tool exactly as `tools/call` does (a meta-tool as
//! well, but not `tool_call`); `read_tool_result` reads only results archived for the same MCP
//! session (each session — one stdio connection, one HTTP `Mcp-Session-Id` — is its own
//! [`ArchiveOwner`]): another session's reference is answered as one that does not exist. A
//! meta-tool outside the listed set is refused like any other tool.
//!
//! # Narrowing and dynamic discovery
//! A [`Selection`] (`toolcat serve --toolsets`, `--tools`) narrows the listed and allowed sets to
//! the named toolsets' tools plus the named tools, within profile ∩ scope (a name outside it is
//! refused when the table is built, [`ScopeError::Toolset`], [`ScopeError::Tool`]); the
//! meta-tools are narrowed like any tool. With [`Selection::dynamic`] (`--dynamic`) each MCP
//! session (one stdio connection; one HTTP `Mcp-Session-Id`, whose handler the SDK creates per
//! session) is served its own list: at first the listed tools of visibility `inline` plus the
//! meta-tools; the tools a `tool_search` or `tool_describe` answers (searching and describing
//! the whole listed set) join it, up to [`Catalog::profile_max_tools`] (the core itself is not
//! cut), and the server sends that session `notifications/tools/list_changed` (on a
//! `tools/call`'s session only; a reload still notifies every session). A listed tool not yet
//! joined is refused like an unlisted one, its hint saying to search for it. Joined tools are
//! kept by name, so a reload keeps those it still lists. The cursor generation of a session is
//! the shared one plus its own count of list changes.
//!
//! # Approval
//! A client that declared the `elicitation` capability (form mode) is asked each `gated` call:
//! the coordinator, at its permission step (after validation and prepare, before scheduling and
//! the re-verify of targets), awaits this server's [`Approver`], which sends
//! `elicitation/create` with [`approval_message`] (tool, arguments, targets) and a required
//! boolean `approve`. `accept` with `approve: true` lets the call run; `decline`, `cancel`,
//! `approve: false` or a failed request answer `denied` and nothing ran.
//!
//! # Errors
//! A call that reached a tool (or was refused on the way) is a result with `isError: true` and one
//! text content holding a JSON object `{"error": KIND, "message": ..., ...}`
//! ([`crate::CallError::to_json`]). `KIND` is one of the coordinator's: `outside-scope`,
//! `invalid-arguments` (`errors` names each field path as `instancePath`; `inputSchema` is the
//! schema), `needs-approval` (a `gated` tool called by a client without the elicitation
//! capability, so nothing ran; the message names the tier and how to allow it;
//! `"tier": "gated"`), `denied` (the client did not approve, see "Approval"), `rate-limited`
//! (`retryAfterMs`), `tool-error`, and the rest of [`crate::CallError::kind`]. A meta-tool's own
//! errors are those of [`crate::meta`]: its `invalid-arguments` object, and plain texts for a
//! failed search, a nested `tool_call` and a result reference that cannot be read.
//!
//! Messages that are not calls never reach the coordinator: [`guard`] answers malformed JSON-RPC
//! (`-32700`, `-32600`), wrongly typed `tools/call` params (`-32602`), requests before
//! `initialize` (`-32600`) and messages over [`guard::MAX_MESSAGE_BYTES`] (`-32600`, HTTP 413); the
//! SDK answers an unknown method with `-32601`; a bad cursor is `-32602`. The connection keeps
//! serving after each.
//!
//! # Authentication (HTTP)
//! With [`HttpOptions::auth`] ([`auth`]: a tokens file; [`oauth`], feature `oauth`: JWT access
//! tokens of an OAuth 2.1 issuer) every HTTP request needs `Authorization: Bearer TOKEN`; one
//! without a valid token answers 401 with a `WWW-Authenticate: Bearer` challenge (403
//! `insufficient_scope` for a valid JWT without a `toolcat:` scope) before the SDK sees it. An
//! accepted request carries its [`auth::Identity`] in the HTTP request's extensions, which the
//! SDK hands to the handler (`RequestContext::extensions` holds the request's
//! `http::request::Parts`); `tools/list` and `tools/call` then answer within
//! [`Shared::table_for`] the identity: the server's table narrowed to the identity's profile
//! and scope ([`ScopeTable::narrowed`]), never wider. Results are archived for the session's
//! owner bound to the identity ([`auth::Identity::archive_owner`]), or for the identity alone in
//! stateless mode, so another token's request reads none of them.
//!
//! # Reloading
//! With a catalog file ([`Reload`]), the file is polled every [`RELOAD_POLL`] (modification time
//! and length); a changed file is loaded and validated. A catalog that fails validation, or no
//! longer declares the profile, is ignored: its diagnostics are logged as `tracing` warnings
//! (`toolcat serve` writes them to stderr) and the old catalog keeps serving. Otherwise the new scope table replaces the old one, and when the `tools/list` answer
//! changed, `notifications/tools/list_changed` goes to every connected client (the `listChanged`
//! capability is advertised). The profile and scope stay those of the command line: a reload
//! never widens what was granted. A replaced catalog stays in memory for the life of the process
//! (calls in flight may still use it, and the coordinator holds catalogs by `'static` reference);
//! reloads follow edits by a person, so this is a few catalogs, not a stream.

pub mod auth;
pub mod guard;
pub mod loopback;
#[cfg(feature = "oauth")]
pub mod oauth;
mod scrape;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, ErrorData, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, JsonRpcMessage, RequestId,
    ServerJsonRpcMessage,
};
use rmcp::service::{
    ElicitationMode, NotificationContext, RequestContext, RoleServer, SubscriptionContext,
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService, Transport};
use rmcp::{Peer, ServerHandler, ServiceExt as _};
use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{broadcast, mpsc, OwnedSemaphorePermit, Semaphore};
pub use toolcat_catalog::model::Exposure;
use toolcat_catalog::model::{Status, Tier, Visibility};
use toolcat_catalog::tables::bit;
use tracing::Instrument as _;

use crate::archive::ArchiveOwner;
use crate::catalog::{Catalog, ProfileId, ToolIndex};
use crate::coordinator::{ApprovalPrompt, Approver, CallError, CallRequest, Coordinator};
use crate::error::{CatalogError, NameError};
use crate::export::mcp_tool;
use crate::handler::{Caller, ToolContext};
use crate::meta::{self, Answer, CallResult, MetaTool, Scope, DEFAULT_SEARCH_LIMIT};
use crate::telemetry;

mod server;
pub use scrape::{serve_metrics, METRICS_PATH};
pub use server::{ServeError, Server};

/// Tools per `tools/list` page: 50.
pub const PAGE_SIZE: usize = 50;
/// How often a catalog file is checked for changes: 500 ms.
pub const RELOAD_POLL: Duration = Duration::from_millis(500);

/// The listed and allowed sets of one catalog for one profile and scope, and the coordinator
/// that runs its calls (see the module docs).
pub struct ScopeTable {
    catalog: &'static Catalog,
    profile: ProfileId,
    exposure: Exposure,
    /// Bitset: scope ∩ profile, meta-tools aside. What may run.
    allowed: Vec<u64>,
    /// Listed tools in catalog order: allowed ∪ (tier `loop` ∩ profile).
    listed: Vec<ToolIndex>,
    /// The listed tools as a bitset: what the meta-tools search and describe.
    listed_bits: Vec<u64>,
    /// The `tools/list` definitions, one per listed tool.
    definitions: Vec<Tool>,
    /// Bitset: (scope ∪ tier `loop`) ∩ profile, deprecated tools included. What a refusal may
    /// name.
    known: Vec<u64>,
    /// Whether deprecated tools of the scope are listed and run ([`ScopeTable::with_deprecated`]).
    allow_deprecated: bool,
    /// The narrowing and discovery mode served ([`ScopeTable::with_selection`]).
    selection: Selection,
    /// Bitset: what a `--dynamic` session is served before it discovers anything: the listed
    /// tools of visibility `inline` plus the listed meta-tools.
    core: Vec<u64>,
    coordinator: Coordinator<'static>,
}

/// What `toolcat serve --toolsets`, `--tools` and `--dynamic` ask of a [`ScopeTable`].
///
/// `toolsets` and `tools` are additive (as github-mcp-server's flags): when either is non-empty,
/// only the named toolsets' tools plus the named tools are listed and run, always within the
/// profile and exposure scope (never wider). Both empty: the whole scope. With `dynamic`, each
/// MCP session starts with the core (the selected tools of visibility `inline` plus the
/// profile's meta-tools); a `tool_search` or `tool_describe` that answers tools adds them to
/// that session's list (see the module docs, "Dynamic discovery").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Toolset names (as declared in the catalog).
    pub toolsets: Vec<String>,
    /// Tool names (exported or declared).
    pub tools: Vec<String>,
    /// Per-session progressive disclosure.
    pub dynamic: bool,
}

/// Why a [`ScopeTable`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    /// The profile is not declared.
    #[error("{0}; pass a profile the catalog declares with `--profile`")]
    Profile(NameError),
    /// `excluded` is not a scope.
    #[error("`excluded` is not an exposure scope; pass `read-only`, `staging` or `full`")]
    Excluded,
    /// A definition is not a valid MCP tool (an input schema that is not an object).
    #[error("tool `{tool}` cannot be listed over MCP: {message}; give it an object input schema")]
    Definition { tool: String, message: String },
    /// `--toolsets` names a toolset the catalog does not declare, or one with no tool in the
    /// profile and scope.
    #[error("{message}; pass toolsets with tools in this profile and exposure: {}", allowed.join(", "))]
    Toolset {
        message: String,
        allowed: Vec<String>,
    },
    /// `--tools` names a tool the catalog does not know, or one outside the profile and scope.
    #[error("{message}; pass tools of this profile and exposure: {}", allowed.join(", "))]
    Tool {
        message: String,
        allowed: Vec<String>,
    },
}

impl ScopeTable {
    /// The table of `catalog` for `profile` and `exposure`; calls run through `coordinator`, a
    /// coordinator of the same catalog.
    ///
    /// # Errors
    /// [`ScopeError::Profile`] for an unknown profile, [`ScopeError::Excluded`] for
    /// `Exposure::Excluded`, [`ScopeError::Definition`] when a definition is not a valid MCP tool.
    pub fn new(
        coordinator: Coordinator<'static>,
        profile: &str,
        exposure: Exposure,
    ) -> Result<ScopeTable, ScopeError> {
        ScopeTable::with_deprecated(coordinator, profile, exposure, false)
    }

    /// [`ScopeTable::new`], with the deprecated tools of the scope listed and run when
    /// `allow_deprecated` (the host's opt-in, `toolcat serve --allow-deprecated`); without it a
    /// call of one runs nothing and answers its `replaced_by` (see the module docs).
    ///
    /// # Errors
    /// As [`ScopeTable::new`].
    pub fn with_deprecated(
        coordinator: Coordinator<'static>,
        profile: &str,
        exposure: Exposure,
        allow_deprecated: bool,
    ) -> Result<ScopeTable, ScopeError> {
        ScopeTable::with_selection(
            coordinator,
            profile,
            exposure,
            allow_deprecated,
            Selection::default(),
        )
    }

    /// [`ScopeTable::with_deprecated`], narrowed to `selection`'s toolsets and tools and in its
    /// discovery mode ([`Selection`]). Narrowing applies to the meta-tools too, except with
    /// `dynamic` (a dynamic session always has the profile's meta-tools).
    ///
    /// # Errors
    /// As [`ScopeTable::new`]; [`ScopeError::Toolset`] for a toolset the catalog does not
    /// declare or with no tool in the profile and scope; [`ScopeError::Tool`] for a tool the
    /// catalog does not know or outside the profile and scope. Each names the cause and the
    /// allowed names.
    pub fn with_selection(
        coordinator: Coordinator<'static>,
        profile: &str,
        exposure: Exposure,
        allow_deprecated: bool,
        selection: Selection,
    ) -> Result<ScopeTable, ScopeError> {
        let catalog = coordinator.catalog();
        let p = catalog.profile(profile).map_err(ScopeError::Profile)?;
        let scope = catalog.scope_tools(exposure).ok_or(ScopeError::Excluded)?;
        let owned = catalog.profile_tools(p);
        // The meta-tools the server answers: not `run_code`, which needs a session's script
        // engine, so it is neither listed nor selectable (`--tools run_code` is refused).
        let mut meta = catalog.tier_tools(Tier::Loop).to_vec();
        if let Some(t) = crate::code_mode::run_code_tool(catalog) {
            meta[t.index() / 64] &= !(1 << (t.index() % 64));
        }
        let deprecated = catalog.status_tools(Status::Deprecated);
        let hidden: Vec<u64> = (0..catalog.words())
            .map(|k| if allow_deprecated { 0 } else { deprecated[k] })
            .collect();
        let mut known: Vec<u64> = (0..catalog.words())
            .map(|k| (scope[k] | meta[k]) & owned[k])
            .collect();
        if let Some(mask) = narrowing(catalog, p, exposure, &known, &hidden, &selection)? {
            let keep_meta = selection.dynamic;
            for k in 0..known.len() {
                let kept = if keep_meta {
                    mask[k] | meta[k]
                } else {
                    mask[k]
                };
                known[k] &= kept;
            }
        }
        let allowed: Vec<u64> = (0..catalog.words())
            .map(|k| known[k] & !meta[k] & !hidden[k])
            .collect();
        let listed_bits: Vec<u64> = (0..catalog.words())
            .map(|k| allowed[k] | (meta[k] & known[k]))
            .collect();
        let listed: Vec<ToolIndex> = catalog.tools_in(&listed_bits).collect();
        let definitions = listed
            .iter()
            .map(|&t| {
                serde_json::to_value(mcp_tool(catalog, t))
                    .and_then(serde_json::from_value::<Tool>)
                    .map_err(|e| ScopeError::Definition {
                        tool: catalog.exported_name(t).to_string(),
                        message: e.to_string(),
                    })
            })
            .collect::<Result<_, _>>()?;
        let inline = catalog.visibility_tools(Visibility::Inline);
        let core: Vec<u64> = (0..catalog.words())
            .map(|k| listed_bits[k] & (inline[k] | meta[k]))
            .collect();
        Ok(ScopeTable {
            catalog,
            profile: p,
            exposure,
            allowed,
            listed,
            listed_bits,
            definitions,
            known,
            allow_deprecated,
            selection,
            core,
            coordinator,
        })
    }

    /// This table narrowed to what `identity` is granted: the tools of its profile (`None`:
    /// this table's) at the narrower of its scope and this table's. Never wider than this
    /// table: every set is this table's intersected with the identity's profile ∩ scope (the
    /// meta-tools kept when the identity's profile owns them).
    ///
    /// # Errors
    /// [`ScopeError::Profile`] when the identity's profile is not declared,
    /// [`ScopeError::Excluded`] for scope `excluded`.
    pub fn narrowed(&self, identity: &auth::Identity) -> Result<ScopeTable, ScopeError> {
        let c = self.catalog;
        let profile = match &identity.profile {
            Some(name) => c.profile(name).map_err(ScopeError::Profile)?,
            None => self.profile,
        };
        if identity.exposure == Exposure::Excluded {
            return Err(ScopeError::Excluded);
        }
        let exposure = self.exposure.min(identity.exposure);
        let scope = c.scope_tools(exposure).ok_or(ScopeError::Excluded)?;
        let owned = c.profile_tools(profile);
        let meta = c.tier_tools(Tier::Loop);
        let mask: Vec<u64> = (0..c.words())
            .map(|k| owned[k] & (scope[k] | meta[k]))
            .collect();
        let and =
            |bits: &[u64]| -> Vec<u64> { (0..c.words()).map(|k| bits[k] & mask[k]).collect() };
        let listed_bits = and(&self.listed_bits);
        let (listed, definitions): (Vec<ToolIndex>, Vec<Tool>) = self
            .listed
            .iter()
            .zip(&self.definitions)
            .filter(|(t, _)| bit(&listed_bits, t.index()))
            .map(|(t, d)| (*t, d.clone()))
            .unzip();
        Ok(ScopeTable {
            catalog: c,
            profile,
            exposure,
            allowed: and(&self.allowed),
            listed,
            listed_bits,
            definitions,
            known: and(&self.known),
            allow_deprecated: self.allow_deprecated,
            selection: self.selection.clone(),
            core: and(&self.core),
            coordinator: self.coordinator.clone(),
        })
    }

    /// The narrowing and discovery mode served.
    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    /// Whether deprecated tools of the scope are listed and run.
    pub fn allows_deprecated(&self) -> bool {
        self.allow_deprecated
    }

    /// The catalog.
    pub fn catalog(&self) -> &'static Catalog {
        self.catalog
    }

    /// The coordinator that runs this table's calls.
    pub fn coordinator(&self) -> &Coordinator<'static> {
        &self.coordinator
    }

    /// The profile served.
    pub fn profile(&self) -> ProfileId {
        self.profile
    }

    /// The scope served.
    pub fn exposure(&self) -> Exposure {
        self.exposure
    }

    /// The tools that may run, as a bitset (bit `i` = tool `i`).
    pub fn allowed(&self) -> &[u64] {
        &self.allowed
    }

    /// The listed tools, in catalog order.
    pub fn listed(&self) -> &[ToolIndex] {
        &self.listed
    }

    /// The `tools/list` definitions, one per listed tool.
    pub fn definitions(&self) -> &[Tool] {
        &self.definitions
    }

    /// Whether `t` may run.
    pub fn is_allowed(&self, t: ToolIndex) -> bool {
        bit(&self.allowed, t.index())
    }

    /// Whether `t` is listed: allowed, or one of the profile's meta-tools.
    pub fn is_listed(&self, t: ToolIndex) -> bool {
        self.listed.binary_search(&t).is_ok()
    }

    /// Whether `t` is listed with an `outputSchema` ([`crate::export::mcp_output_schema`]): its
    /// successful results carry `structuredContent`.
    pub fn has_output_schema(&self, t: ToolIndex) -> bool {
        self.listed
            .binary_search(&t)
            .ok()
            .and_then(|k| self.definitions.get(k))
            .is_some_and(|d| d.output_schema.is_some())
    }

    /// The answer to a call of `name`, a tool not in the listed set: `outside-scope` with `tool`
    /// (the name refused), `profile` and `exposure`, whether or not the catalog knows the name.
    fn outside_scope(&self, name: &str) -> CallToolResult {
        self.outside_scope_with(name, None)
    }

    /// [`ScopeTable::outside_scope`] with `message` in place of the coordinator's.
    fn outside_scope_with(&self, name: &str, message: Option<String>) -> CallToolResult {
        let mut body = CallError::OutsideScope {
            tool: name.to_string(),
        }
        .to_json();
        if let Some(message) = message {
            body["message"] = json!(message);
        }
        body["tool"] = json!(name);
        body["profile"] = json!(self.catalog.profile_name(self.profile));
        body["exposure"] = json!(self.exposure.as_str());
        refusal(body)
    }
}

/// The bitset `selection` narrows `known` (profile ∩ scope, meta-tools included) to, or `None`
/// when it names nothing (the whole scope). Every name must be the catalog's and have a tool
/// in `known`; a tool named by `--tools` must not be `hidden` (deprecated without
/// `--allow-deprecated`), which would narrow to it and then serve nothing.
fn narrowing(
    catalog: &Catalog,
    profile: ProfileId,
    exposure: Exposure,
    known: &[u64],
    hidden: &[u64],
    selection: &Selection,
) -> Result<Option<Vec<u64>>, ScopeError> {
    if selection.toolsets.is_empty() && selection.tools.is_empty() {
        return Ok(None);
    }
    let within = |t: &[u64]| (0..known.len()).any(|k| t[k] & known[k] != 0);
    let where_ = format!(
        "profile `{}` at exposure `{}`",
        catalog.profile_name(profile),
        exposure.as_str()
    );
    let mut mask = vec![0u64; known.len()];
    for name in &selection.toolsets {
        let allowed = || {
            catalog
                .toolsets()
                .filter(|&s| within(catalog.toolset_tools(s)))
                .map(|s| catalog.toolset_name(s).to_string())
                .collect()
        };
        let s = catalog.toolset(name).map_err(|e| ScopeError::Toolset {
            message: format!("`--toolsets {name}`: {e}"),
            allowed: allowed(),
        })?;
        let tools = catalog.toolset_tools(s);
        if !within(tools) {
            return Err(ScopeError::Toolset {
                message: format!("`--toolsets {name}`: toolset `{name}` has no tool in {where_}"),
                allowed: allowed(),
            });
        }
        for k in 0..mask.len() {
            mask[k] |= tools[k];
        }
    }
    for name in &selection.tools {
        let allowed = || {
            catalog
                .tools_in(known)
                .filter(|t| !bit(hidden, t.index()))
                .map(|t| catalog.exported_name(t).to_string())
                .collect()
        };
        let t = catalog.tool(name).map_err(|e| ScopeError::Tool {
            message: format!("`--tools {name}`: {e}"),
            allowed: allowed(),
        })?;
        if !bit(known, t.index()) {
            return Err(ScopeError::Tool {
                message: format!("`--tools {name}`: tool `{name}` is not in {where_}"),
                allowed: allowed(),
            });
        }
        if bit(hidden, t.index()) {
            let replaced = catalog
                .replaced_by(t)
                .map(|r| format!(" (replaced by `{}`)", catalog.exported_name(r)))
                .unwrap_or_default();
            return Err(ScopeError::Tool {
                message: format!(
                    "`--tools {name}`: tool `{name}` is deprecated{replaced}; pass `--allow-deprecated` to serve it"
                ),
                allowed: allowed(),
            });
        }
        mask[t.index() / 64] |= 1u64 << (t.index() % 64);
    }
    Ok(Some(mask))
}

/// The answer to a call of `name` that is not listed, within `scope` (see the module docs):
/// `deprecated` (`message`, `removal`, `replacedBy` when listed), `ambiguous-name` (`choices`),
/// else `outside-scope` ([`ScopeTable::outside_scope`], its `message` the hint of
/// [`crate::meta`]).
fn unlisted(table: &ScopeTable, scope: &Scope<'_, 'static>, name: &str) -> CallToolResult {
    let c = table.catalog();
    let why = meta::resolve(scope, name)
        .err()
        .unwrap_or(meta::Unavailable::NotAvailable);
    let message = meta::hint(scope, name, &why);
    match why {
        meta::Unavailable::Deprecated(t) => {
            let mut body =
                json!({"error": "deprecated", "tool": c.exported_name(t), "message": message});
            if let Some(d) = c.removal(t) {
                body["removal"] = json!(d);
            }
            if let Some(r) = c.replaced_by(t).filter(|r| table.is_listed(*r)) {
                body["replacedBy"] = json!(c.exported_name(r));
            }
            refusal(body)
        }
        meta::Unavailable::Ambiguous(choices) => {
            let choices: Vec<&str> = choices.iter().map(|&t| c.exported_name(t)).collect();
            refusal(
                json!({"error": "ambiguous-name", "tool": name, "message": message, "choices": choices}),
            )
        }
        _ => table.outside_scope_with(
            name,
            Some(format!(
                "{message}; nothing ran; call a tool of `tools/list`"
            )),
        ),
    }
}

/// A result with `isError: true` and `body` as its one text content.
fn refusal(body: Value) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(body.to_string())])
}

/// How the server notices a changed catalog file (see the module docs).
pub struct Reload {
    /// The file to watch.
    pub path: PathBuf,
    /// Loads and validates it (with the binary's handlers attached).
    pub load: Box<dyn Fn() -> Result<Catalog, CatalogError> + Send + Sync>,
}

/// State shared by every connection of one server: the current [`ScopeTable`], and the clients
/// to tell when it changes.
pub struct Shared {
    table: RwLock<Arc<ScopeTable>>,
    /// Bumped whenever the `tools/list` answer changes; part of every cursor.
    generation: Mutex<u64>,
    /// One message per change, for `subscriptions/listen` streams (protocol 2026-07-28).
    changes: broadcast::Sender<()>,
    /// Clients that initialized over the `initialize` handshake (earlier protocols).
    legacy_peers: Mutex<Vec<Peer<RoleServer>>>,
    /// The tables of authenticated identities, by profile and scope granted, each with the
    /// table it narrows (an entry of a replaced table is rebuilt).
    narrowed: Mutex<NarrowedTables>,
}

/// [`Shared::narrowed`]'s cache: (profile granted, scope granted) → (base, narrowed table).
type NarrowedTables = HashMap<(Option<String>, Exposure), (Arc<ScopeTable>, Arc<ScopeTable>)>;

impl Shared {
    /// The state of a server of `table`.
    pub fn new(table: ScopeTable) -> Arc<Shared> {
        let (changes, _) = broadcast::channel(16);
        Arc::new(Shared {
            table: RwLock::new(Arc::new(table)),
            generation: Mutex::new(0),
            changes,
            legacy_peers: Mutex::new(Vec::new()),
            narrowed: Mutex::new(HashMap::new()),
        })
    }

    /// The table a request of `identity` is served: the current table, narrowed to the
    /// identity's profile and scope ([`ScopeTable::narrowed`]) when there is one.
    ///
    /// # Errors
    /// As [`ScopeTable::narrowed`] (a profile the reloaded catalog no longer declares).
    pub fn table_for(
        &self,
        identity: Option<&auth::Identity>,
    ) -> Result<Arc<ScopeTable>, ScopeError> {
        let base = self.table();
        let Some(identity) = identity else {
            return Ok(base);
        };
        let key = (identity.profile.clone(), identity.exposure);
        let mut cache = self.narrowed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((b, t)) = cache.get(&key) {
            if Arc::ptr_eq(b, &base) {
                return Ok(Arc::clone(t));
            }
        }
        let table = Arc::new(base.narrowed(identity)?);
        cache.insert(key, (base, Arc::clone(&table)));
        Ok(table)
    }

    /// The current scope table.
    pub fn table(&self) -> Arc<ScopeTable> {
        match self.table.read() {
            Ok(t) => Arc::clone(&t),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    fn generation(&self) -> u64 {
        *self.generation.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the scope table; when the `tools/list` answer changed, bumps the cursor
    /// generation and sends `notifications/tools/list_changed` to every client. Returns whether
    /// it changed.
    pub async fn replace(&self, table: ScopeTable) -> bool {
        let changed = self.table().definitions() != table.definitions();
        {
            let mut slot = match self.table.write() {
                Ok(t) => t,
                Err(poisoned) => poisoned.into_inner(),
            };
            *slot = Arc::new(table);
        }
        if changed {
            *self.generation.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            // No subscriber is not an error.
            let _ = self.changes.send(());
            let peers: Vec<Peer<RoleServer>> = self
                .legacy_peers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            for peer in peers {
                // A client that left cannot be told; it is dropped below.
                let _ = peer.notify_tool_list_changed().await;
            }
            self.legacy_peers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|p| !p.is_transport_closed());
        }
        changed
    }
}

/// One MCP session's handler: answers `tools/list` and `tools/call` from the [`Shared`] state.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
    /// The owner of the results archived for this session, the only ones its
    /// `read_tool_result` reads.
    owner: ArchiveOwner,
    /// With [`Selection::dynamic`]: the exported names of the tools this session discovered,
    /// served beside the core (names, so a reloaded catalog keeps them where it still lists them).
    joined: Arc<Mutex<Vec<String>>>,
    /// Bumped whenever this session's list grows; part of its cursors.
    session_generation: Arc<AtomicU64>,
    /// Whether this handler answers one stateless HTTP request (no session): an authenticated
    /// request's results are then archived for its identity alone.
    stateless: bool,
}

impl McpServer {
    /// The handler of a new MCP session over `shared` (its own [`ArchiveOwner`] and, with
    /// [`Selection::dynamic`], its own discovered tools).
    pub fn new(shared: Arc<Shared>) -> Self {
        McpServer {
            shared,
            owner: ArchiveOwner::new(),
            joined: Arc::default(),
            session_generation: Arc::default(),
            stateless: false,
        }
    }

    /// The table a request of `identity` is served ([`Shared::table_for`]). Over HTTP the
    /// session's owner was checked before the request got here ([`Owners`]).
    fn request_table(
        &self,
        identity: Option<&auth::Identity>,
    ) -> Result<Arc<ScopeTable>, ErrorData> {
        let Some(id) = identity else {
            return Ok(self.shared.table());
        };
        self.shared
            .table_for(Some(id))
            .map_err(|e| unservable(id, &e))
    }

    /// The handler of one stateless HTTP request over `shared` (see [`HttpOptions::stateless`]).
    pub fn stateless(shared: Arc<Shared>) -> Self {
        McpServer {
            stateless: true,
            ..McpServer::new(shared)
        }
    }

    /// The archive owner of a request of `identity`: the session's, bound to the identity when
    /// there is one; the identity's alone for a stateless request.
    fn owner_for(&self, identity: Option<&auth::Identity>) -> ArchiveOwner {
        match identity {
            None => self.owner,
            Some(id) if self.stateless => id.archive_owner(None),
            Some(id) => id.archive_owner(Some(self.owner)),
        }
    }

    /// The tools this session is served, as a bitset, or `None` when it is served the whole
    /// listed set (not [`Selection::dynamic`]).
    fn served(&self, table: &ScopeTable) -> Option<Vec<u64>> {
        if !table.selection.dynamic {
            return None;
        }
        let mut bits = table.core.clone();
        let c = table.catalog();
        for name in self.joined.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            if let Ok(t) = c.tool(name) {
                if bit(&table.listed_bits, t.index()) {
                    bits[t.index() / 64] |= 1u64 << (t.index() % 64);
                }
            }
        }
        Some(bits)
    }

    /// Adds the tools a `tool_search` or `tool_describe` answered to this session's list (with
    /// [`Selection::dynamic`]), up to the profile's `max_tools` ([`Catalog::profile_max_tools`]);
    /// returns whether the list grew.
    fn disclose(&self, table: &ScopeTable, result: &CallResult) -> bool {
        let (meta::Outcome::Found { tools } | meta::Outcome::Described { tools }) = &result.outcome
        else {
            return false;
        };
        let Some(mut served) = self.served(table) else {
            return false;
        };
        let c = table.catalog();
        let cap = c
            .profile_max_tools(table.profile())
            .map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX));
        let mut count: usize = served.iter().map(|w| w.count_ones() as usize).sum();
        let mut joined = self.joined.lock().unwrap_or_else(|p| p.into_inner());
        let mut grew = false;
        for &t in tools {
            let i = t.index();
            if !bit(&table.listed_bits, i) || bit(&served, i) || count >= cap {
                continue;
            }
            served[i / 64] |= 1u64 << (i % 64);
            count += 1;
            joined.push(c.exported_name(t).to_string());
            grew = true;
        }
        if grew {
            self.session_generation.fetch_add(1, Ordering::SeqCst);
        }
        grew
    }

    /// This session's cursor generation: the shared one plus this session's own (both only
    /// grow, so the sum changes whenever either list change happens).
    fn cursor_generation(&self) -> u64 {
        self.shared.generation() + self.session_generation.load(Ordering::SeqCst)
    }

    /// The `tools/list` definitions this session is served.
    fn definitions(&self, table: &ScopeTable) -> Vec<Tool> {
        match self.served(table) {
            None => table.definitions().to_vec(),
            Some(bits) => table
                .listed()
                .iter()
                .zip(table.definitions())
                .filter(|(t, _)| bit(&bits, t.index()))
                .map(|(_, d)| d.clone())
                .collect(),
        }
    }

    /// One page of `tools/list` of `table`.
    fn page(&self, table: &ScopeTable, cursor: Option<&str>) -> Result<ListToolsResult, ErrorData> {
        let generation = self.cursor_generation();
        let definitions = self.definitions(table);
        let offset = match cursor {
            None => 0,
            Some(c) => parse_cursor(c, generation, definitions.len())?,
        };
        let end = (offset + PAGE_SIZE).min(definitions.len());
        let mut result = ListToolsResult::with_all_items(definitions[offset..end].to_vec());
        if end < definitions.len() {
            result.next_cursor = Some(format!("{generation}:{end}"));
        }
        Ok(result)
    }

    /// Answers one call (see the module docs), of a caller that said nothing about itself; a
    /// `gated` tool is refused as `needs-approval`.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        cancel: Option<tokio_util::sync::CancellationToken>,
    ) -> CallToolResult {
        self.call_as(name, arguments, cancel, Caller::default(), None)
            .await
    }

    /// [`McpServer::call`] made by `caller`: the handler sees it as `ToolContext::caller`, with
    /// `profile` and `exposure` set to the scope served. `tools/call` passes the client's
    /// declared `clientInfo` and, over HTTP, its `Mcp-Session-Id`. A `gated` tool's approval is
    /// asked of `approver` when given (the client's elicitation, see the module docs).
    pub async fn call_as(
        &self,
        name: &str,
        arguments: Value,
        cancel: Option<tokio_util::sync::CancellationToken>,
        caller: Caller,
        approver: Option<Approver>,
    ) -> CallToolResult {
        let table = self.shared.table();
        let approval = approver.map_or(Approval::NotDeclared, Approval::Ask);
        self.call_in(
            &table, self.owner, name, arguments, cancel, caller, approval,
        )
        .await
    }

    /// [`McpServer::call_as`] within `table` (an identity's), its results archived for `owner`.
    #[allow(clippy::too_many_arguments)]
    async fn call_in(
        &self,
        table: &ScopeTable,
        owner: ArchiveOwner,
        name: &str,
        arguments: Value,
        cancel: Option<tokio_util::sync::CancellationToken>,
        caller: Caller,
        approval: Approval,
    ) -> CallToolResult {
        let caller = Caller {
            profile: Some(table.catalog().profile_name(table.profile()).to_string()),
            exposure: Some(table.exposure()),
            ..caller
        };
        let served = self.served(table);
        let scope = self.scope(table, owner, served.as_deref());
        let t = match meta::resolve(&scope, name) {
            Ok(t) => t,
            Err(_) => return unlisted(table, &scope, name),
        };
        let Some(m) = MetaTool::of(table.catalog(), t) else {
            return run(table, t, arguments, owner, cancel, caller, approval).await;
        };
        // `tool_call` lists no output schema: its answer is the named tool's text alone.
        let unstructured = |mut result: CallToolResult| {
            result.structured_content = None;
            result
        };
        match meta::answer(&scope, m, t, &arguments, None) {
            Answer::Done(result) => {
                self.disclose(table, &result);
                answered(result)
            }
            // `tool_call`: the named tool is called exactly as by `tools/call`.
            Answer::Call { name, arguments } => match meta::resolve(&scope, &name) {
                Err(_) => unlisted(table, &scope, &name),
                Ok(d) => match MetaTool::of(table.catalog(), d) {
                    None => unstructured(
                        run(table, d, arguments, owner, cancel, caller, approval).await,
                    ),
                    Some(m) => {
                        let result = meta::answer_nested(&scope, m, d, &arguments, None);
                        self.disclose(table, &result);
                        answered(result)
                    }
                },
            },
        }
    }

    /// What the meta-tools answer within: the listed set (searched and described), the tools
    /// this session is served (callable; `served`, or the listed set), no search budget (an MCP
    /// session has no turns), this session's archive owner.
    fn scope<'a>(
        &self,
        table: &'a ScopeTable,
        owner: ArchiveOwner,
        served: Option<&'a [u64]>,
    ) -> Scope<'a, 'static> {
        Scope {
            catalog: table.catalog(),
            coordinator: table.coordinator(),
            profile: table.profile(),
            reachable: &table.listed_bits,
            owner,
            search_limit: DEFAULT_SEARCH_LIMIT,
            co_select: None,
            budget: None,
            known: &table.known,
            active: served.unwrap_or(&table.listed_bits),
            toolsets: None,
            allow_deprecated: table.allow_deprecated,
        }
    }
}

/// The identity authentication gave the HTTP request of `context` (none on stdio, or without
/// authentication).
fn identity_of(context: &RequestContext<RoleServer>) -> Option<auth::Identity> {
    context
        .extensions
        .get::<hyper::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<auth::Identity>())
        .cloned()
}

/// The answer to a request whose identity cannot be served (its profile left the catalog).
fn unservable(identity: &auth::Identity, e: &ScopeError) -> ErrorData {
    ErrorData::invalid_request(
        format!(
            "{} cannot be served: {e}; the token's profile must be one the catalog declares",
            identity.principal
        ),
        None,
    )
}

/// Who sends a request: the client's declared `clientInfo` (from the request's metadata, else
/// the `initialize` of the session) and the HTTP session's `Mcp-Session-Id` (none on stdio).
fn caller_of(context: &RequestContext<RoleServer>) -> Caller {
    let info = context.client_info();
    let session = context
        .extensions
        .get::<hyper::http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    Caller {
        name: info.as_ref().map(|i| i.name.clone()),
        version: info.as_ref().map(|i| i.version.clone()),
        session,
        ..Caller::default()
    }
}

/// How a `gated` call of one request is approved.
enum Approval {
    /// By this approver (the session client's elicitation, or a host's).
    Ask(Approver),
    /// Not at all: the client did not declare the `elicitation` capability.
    NotDeclared,
    /// Not at all: a stateless request has no session to ask over.
    NoSession,
}

impl Approval {
    /// Why a call refused as needing approval was not asked, and what to do instead, for its
    /// message. (The coordinator asks an approver when it has one, so a refusal comes with the
    /// other two.)
    fn unasked(&self) -> (&'static str, &'static str) {
        match self {
            Approval::Ask(_) | Approval::NotDeclared => (
                "this client did not declare the `elicitation` capability",
                "connect with a client that supports elicitation",
            ),
            Approval::NoSession => (
                "this request has no MCP session to ask over (the server runs `--stateless`)",
                "call it through a server that keeps sessions (`toolcat serve` without `--stateless`) with a client that supports elicitation",
            ),
        }
    }
}

/// The approver of a session whose client declared elicitation: each `gated` call sends
/// `elicitation/create` with [`approval_message`] and a required boolean `approve`; the call
/// runs only on `accept` with `approve: true`.
fn elicitation_approver(peer: Peer<RoleServer>) -> Approver {
    Approver(Arc::new(move |prompt: ApprovalPrompt| {
        let peer = peer.clone();
        Box::pin(async move {
            let schema = match ElicitationSchema::builder()
                .required_bool_property("approve", |b| {
                    b.description("true runs the call; false refuses it")
                })
                .build()
            {
                Ok(schema) => schema,
                Err(e) => {
                    tracing::warn!("mcp: the approval form cannot be built: {e}");
                    return false;
                }
            };
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: approval_message(&prompt),
                requested_schema: schema,
            };
            match peer.create_elicitation(params).await {
                Ok(answer) => {
                    answer.action == ElicitationAction::Accept
                        && answer
                            .content
                            .as_ref()
                            .and_then(|c| c.get("approve"))
                            .and_then(Value::as_bool)
                            == Some(true)
                }
                Err(e) => {
                    tracing::warn!(
                        "mcp: asking the client to approve `{}` failed: {e}",
                        prompt.tool
                    );
                    false
                }
            }
        })
    }))
}

/// The words of an approval elicitation: the tool, its arguments (JSON) and what it will touch,
/// e.g. ``Approve the call of `write_file` (tier `gated`) with arguments {"path":"a.txt",...}? It
/// will write `file:/ws/a.txt` (now absent).``
pub fn approval_message(prompt: &ApprovalPrompt) -> String {
    let targets: Vec<String> = prompt
        .targets
        .iter()
        .map(|t| {
            let access = t.access.as_str();
            match &t.fingerprint {
                Some(f) => format!("{access} `{}` (now {f})", t.resource),
                None => format!("{access} `{}`", t.resource),
            }
        })
        .collect();
    let touches = if targets.is_empty() {
        String::new()
    } else {
        format!(" It will {}.", targets.join(", "))
    };
    format!(
        "Approve the call of `{}` (tier `gated`) with arguments {}?{touches}",
        prompt.tool, prompt.arguments
    )
}

/// A meta-tool's answer as an MCP result: its text as the one text content.
fn answered(result: CallResult) -> CallToolResult {
    let content = vec![ContentBlock::text(result.text)];
    if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// Hands a call of `t` to the coordinator with the table's allowed set, its result archived for
/// `owner` (the session), and turns the outcome into an MCP result: the result's text (a preview
/// with its reference when archived), and, for a tool listed with an `outputSchema` whose result
/// is a JSON object, that whole object as `structuredContent` (a remote server's own
/// `structuredContent`, passed through, for a server tool).
async fn run(
    table: &ScopeTable,
    t: ToolIndex,
    arguments: Value,
    owner: ArchiveOwner,
    cancel: Option<tokio_util::sync::CancellationToken>,
    caller: Caller,
    approval: Approval,
) -> CallToolResult {
    let mut request = CallRequest::new(t, arguments, table.allowed())
        .with_owner(owner)
        .with_caller(caller);
    if let Some(token) = cancel {
        request = request.with_cancellation(token);
    }
    let (why_not, fix) = approval.unasked();
    if let Approval::Ask(approver) = approval {
        request = request.with_approver(approver);
    }
    let outcome = table.coordinator().call(request).await;
    match outcome.result {
        Ok(value) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(value.text)]);
            if value.value.is_object() && table.has_output_schema(t) {
                result.structured_content = Some(value.value);
            }
            result
        }
        Err(CallError::OutsideScope { tool }) => table.outside_scope(&tool),
        Err(e @ CallError::NeedsApproval { .. }) => {
            let name = table.catalog().exported_name(t);
            let mut body = e.to_json();
            body["tier"] = json!("gated");
            body["message"] = json!(format!(
                "tool `{name}` is of tier `gated`: each call needs approval, which this server asks over elicitation, and {why_not}, so nothing ran; to run it, {fix}, or call it from a host that sets an authorization hook (`toolcat::Coordinator::with_approval`)"
            ));
            refusal(body)
        }
        Err(e @ CallError::Denied { .. }) => {
            let name = table.catalog().exported_name(t);
            let mut body = e.to_json();
            body["message"] = json!(format!(
                "the call of `{name}` was not approved (the client declined, cancelled or answered `approve: false`), so nothing ran"
            ));
            refusal(body)
        }
        Err(e) => refusal(e.to_json()),
    }
}

/// The offset a cursor `GENERATION:OFFSET` points at.
fn parse_cursor(cursor: &str, generation: u64, len: usize) -> Result<usize, ErrorData> {
    let invalid = |why: &str| {
        ErrorData::invalid_params(
            format!("cursor `{cursor}` {why}; call `tools/list` without a cursor"),
            None,
        )
    };
    let (g, o) = cursor
        .split_once(':')
        .ok_or_else(|| invalid("is not a cursor this server issued"))?;
    let g: u64 = g
        .parse()
        .map_err(|_| invalid("is not a cursor this server issued"))?;
    let o: usize = o
        .parse()
        .map_err(|_| invalid("is not a cursor this server issued"))?;
    if g != generation {
        return Err(invalid(
            "was issued before the tool list changed (`notifications/tools/list_changed`)",
        ));
    }
    if o == 0 || o >= len {
        return Err(invalid("is past the end of the tool list"));
    }
    Ok(o)
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let table = self.shared.table();
        let catalog = table.catalog();
        // Without a session there is no stream to notify on and no one to ask for approval.
        let capabilities = if self.stateless {
            ServerCapabilities::builder().enable_tools().build()
        } else {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build()
        };
        let gated = if self.stateless {
            "Tools of tier `gated` answer `needs-approval`: this server keeps no session, so it cannot ask for approval."
        } else {
            "Tools of tier `gated` need approval: the server asks the client over elicitation when it declared that capability, otherwise calling them is refused."
        };
        ServerConfig::new(capabilities)
        .with_server_info(Implementation::new("toolcat", env!("CARGO_PKG_VERSION")))
        .with_instructions(format!(
            "toolcat serves at most the tools of profile `{}` within MCP exposure scope `{}`; with authentication, each request gets the part of those its token's profile and scope allow (`tools/list` shows it). {gated}",
            catalog.profile_name(table.profile()),
            table.exposure().as_str()
        ))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let table = self.request_table(identity_of(&context).as_ref())?;
        self.page(&table, request.as_ref().and_then(|r| r.cursor.as_deref()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let table = self.shared.table();
        let t = table.catalog().tool(name).ok()?;
        if self.served(&table).is_some_and(|s| !bit(&s, t.index())) {
            return None;
        }
        let k = table.listed().binary_search(&t).ok()?;
        table.definitions().get(k).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let approval = if self.stateless {
            Approval::NoSession
        } else if context
            .peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            Approval::Ask(elicitation_approver(context.peer.clone()))
        } else {
            Approval::NotDeclared
        };
        let before = self.session_generation.load(Ordering::SeqCst);
        let identity = identity_of(&context);
        let table = self.request_table(identity.as_ref())?;
        let result = self
            .call_in(
                &table,
                self.owner_for(identity.as_ref()),
                &request.name,
                arguments,
                Some(context.ct.clone()),
                caller_of(&context),
                approval,
            )
            .await;
        if self.session_generation.load(Ordering::SeqCst) != before {
            // This session's list grew (dynamic discovery): only this client is told.
            if let Err(e) = context.peer.notify_tool_list_changed().await {
                tracing::info!("mcp: the client could not be told its tool list grew: {e}");
            }
        }
        Ok(CallToolResponse::Complete(result))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut peers = self
            .shared
            .legacy_peers
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        peers.retain(|p| !p.is_transport_closed());
        peers.push(context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let _ = requested;
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.shared.changes.subscribe();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                change = changes.recv() => match change {
                    Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if context.sink().notify_tool_list_changed().await.is_err() {
                            return Ok(());
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }
}

// ---- stdio ----

/// What one bounded line read found.
enum Line {
    /// A line (without its newline) is in the buffer.
    Complete,
    /// The line had this many bytes, over the limit; it was skipped.
    TooLong(usize),
    /// End of input.
    Eof,
}

/// Reads one `\n`-terminated line into `buf` (newline and a trailing `\r` removed), buffering at
/// most `max` bytes of it: a longer line is consumed to its end and reported as
/// [`Line::TooLong`]. A last line without a newline counts as a line.
async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut total = 0usize;
    let mut over = false;
    loop {
        let chunk = input.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(match (total, over) {
                (0, _) => Line::Eof,
                (n, true) => Line::TooLong(n),
                _ => Line::Complete,
            });
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let content = if done { take - 1 } else { take };
        total += content;
        if !over {
            if buf.len() + content > max {
                over = true;
                buf.clear();
            } else {
                buf.extend_from_slice(&chunk[..content]);
            }
        }
        input.consume(take);
        if done {
            if over {
                return Ok(Line::TooLong(total));
            }
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Line::Complete);
        }
    }
}

/// Requests a client may have in flight on one newline-delimited connection (stdio): read, and
/// their answers not yet written to the output: 64. At the limit the server stops reading input
/// until an answer is written, so a client that writes without reading fills its own pipe
/// (its writes block) while the server holds at most this many answers; refusals count against
/// the same limit. A request cancelled by the client (`notifications/cancelled`) frees its place.
pub const MAX_IN_FLIGHT: usize = 64;

/// One line for the output, with the place in flight of the request it answers (freed once the
/// line is written).
struct Outgoing {
    line: Vec<u8>,
    _place: Option<OwnedSemaphorePermit>,
}

/// The places held by the requests in flight, by request id.
type InFlight = Arc<Mutex<HashMap<RequestId, OwnedSemaphorePermit>>>;

fn places(
    in_flight: &InFlight,
) -> std::sync::MutexGuard<'_, HashMap<RequestId, OwnedSemaphorePermit>> {
    in_flight.lock().unwrap_or_else(|p| p.into_inner())
}

/// The SDK's side of a [`serve_lines`] connection: the messages the reader checked and parsed,
/// and the queue of lines for the writer. `send` writes the message into the queue when the SDK
/// calls it (not when its future is polled), so lines leave in the order the SDK hands them over,
/// and an answer takes its request's place in flight along to the writer.
struct LinesTransport {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    outgoing: mpsc::UnboundedSender<Outgoing>,
    in_flight: InFlight,
}

impl Transport<RoleServer> for LinesTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), std::io::Error>> + Send + 'static {
        let id = match &item {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        let place = id.and_then(|id| places(&self.in_flight).remove(id));
        let queued = serde_json::to_vec(&item)
            .map_err(std::io::Error::from)
            .and_then(|mut line| {
                line.push(b'\n');
                self.outgoing
                    .send(Outgoing {
                        line,
                        _place: place,
                    })
                    .map_err(|_| {
                        std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the output is closed")
                    })
            });
        std::future::ready(queued)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), std::io::Error> {
        self.incoming.close();
        Ok(())
    }
}

/// Serves MCP over newline-delimited JSON-RPC on `input`/`output` (stdio: `tokio::io::stdin()`
/// and `stdout()`) until `input` ends. Each line passes [`guard::check`] and [`guard::parse`]
/// first; refused lines are answered on `output`, the others go to the SDK, and every answer is
/// written as one line. At most [`MAX_IN_FLIGHT`] requests are in flight: beyond them, `input`
/// is not read until an answer has been written to `output` (back-pressure on a client that
/// does not read). Answers leave in the order the SDK produces them: concurrent requests may be
/// answered out of order (JSON-RPC matches them by `id`).
///
/// # Errors
/// An I/O error on `input` or `output`.
pub async fn serve_lines<R, W>(shared: Arc<Shared>, input: R, mut output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_sdk, incoming) = mpsc::channel::<ClientJsonRpcMessage>(16);
    // Unbounded, yet bounded: every answer and refusal in it holds a place in flight, so it
    // holds at most MAX_IN_FLIGHT of them, plus the server's own notifications (one
    // `list_changed` per catalog change).
    let (lines, mut outgoing) = mpsc::unbounded_channel::<Outgoing>();
    let in_flight: InFlight = Arc::default();
    let room = Arc::new(Semaphore::new(MAX_IN_FLIGHT));

    let writer = tokio::spawn(async move {
        while let Some(first) = outgoing.recv().await {
            output.write_all(&first.line).await?;
            drop(first);
            // Lines already queued go out before one flush.
            while let Ok(next) = outgoing.try_recv() {
                output.write_all(&next.line).await?;
            }
            output.flush().await?;
        }
        Ok::<(), std::io::Error>(())
    });
    let transport = LinesTransport {
        incoming,
        outgoing: lines.clone(),
        in_flight: Arc::clone(&in_flight),
    };
    let server = McpServer::new(shared);
    let sdk = tokio::spawn(async move {
        match server.serve(transport).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            // The client left before initializing: nothing to serve.
            Err(e) => tracing::info!("mcp: the session ended before it started: {e}"),
        }
    });

    let mut input = BufReader::new(input);
    let mut buf = Vec::new();
    let mut initialized = false;
    let result = loop {
        let checked = match read_line(&mut input, &mut buf, guard::MAX_MESSAGE_BYTES).await {
            Err(e) => break Err(e),
            Ok(Line::Eof) => break Ok(()),
            Ok(Line::TooLong(n)) => Err(guard::Refusal::too_large(n)),
            Ok(Line::Complete) if buf.iter().all(u8::is_ascii_whitespace) => continue,
            Ok(Line::Complete) => guard::check(&buf)
                .and_then(|()| {
                    if initialized {
                        Ok(())
                    } else {
                        guard::check_uninitialized(&buf)
                    }
                })
                .and_then(|()| guard::parse(&buf)),
        };
        let message = match checked {
            Ok(JsonRpcMessage::Request(request))
                if places(&in_flight).contains_key(&request.id) =>
            {
                Err(guard::Refusal::id_in_flight(&request.id))
            }
            other => other,
        };
        let message = match message {
            Ok(message) => message,
            Err(refusal) => {
                let Ok(place) = Arc::clone(&room).acquire_owned().await else {
                    break Ok(());
                };
                let mut line = refusal.response.to_string().into_bytes();
                line.push(b'\n');
                let refused = Outgoing {
                    line,
                    _place: Some(place),
                };
                if lines.send(refused).is_err() {
                    break Ok(());
                }
                continue;
            }
        };
        let mut cancelled = None;
        match &message {
            JsonRpcMessage::Request(request) => {
                initialized =
                    initialized || matches!(request.request, ClientRequest::InitializeRequest(_));
                // Waits while MAX_IN_FLIGHT answers are unwritten: input is not read meanwhile.
                let Ok(place) = Arc::clone(&room).acquire_owned().await else {
                    break Ok(());
                };
                places(&in_flight).insert(request.id.clone(), place);
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification {
                    cancelled = c.params.request_id.clone();
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
        if to_sdk.send(message).await.is_err() {
            // The SDK's session ended.
            break Ok(());
        }
        // The SDK drops the answer of a cancelled request, so its place is freed here.
        if let Some(id) = cancelled {
            places(&in_flight).remove(&id);
        }
    };
    drop(to_sdk);
    let _ = sdk.await;
    drop(lines);
    match writer.await {
        Ok(Err(e)) if result.is_ok() => Err(e),
        _ => result,
    }
}

/// Serves MCP on this process's stdin and stdout until stdin ends.
///
/// # Errors
/// An I/O error on stdin or stdout.
pub async fn serve_stdio(shared: Arc<Shared>) -> std::io::Result<()> {
    serve_lines(shared, tokio::io::stdin(), tokio::io::stdout()).await
}

// ---- streamable HTTP ----

type HttpBody = BoxBody<Bytes, Infallible>;

fn json_response(status: StatusCode, body: &Value) -> Response<HttpBody> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// The most live MCP sessions over HTTP: 256. An `initialize` beyond it is refused with HTTP 503
/// and JSON-RPC `-32600` (close a session with DELETE, or wait for an idle one to expire); a
/// session idle for [`SESSION_IDLE_TIMEOUT`] is closed by the SDK.
pub const MAX_SESSIONS: usize = 256;
/// The most live MCP sessions one identity (token, or OAuth issuer and subject) may hold over
/// HTTP: a quarter of [`MAX_SESSIONS`] (64), so no one token can use up the server. An
/// `initialize` beyond it is refused with HTTP 429 and JSON-RPC `-32600` naming the cause.
pub const MAX_SESSIONS_PER_IDENTITY: usize = MAX_SESSIONS / 4;
/// How often the sessions of revoked tokens are looked for: every second (the tokens file is
/// re-read only when its `stat` changed: inode, status-change or modification time, length).
pub const REVOCATION_CHECK: Duration = Duration::from_secs(1);
/// How long an HTTP session may stay idle before it is closed: 5 minutes (the SDK's keep-alive).
pub const SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a client may take to send the request line and headers of a request: 10 seconds;
/// the connection is closed after that.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request body once its headers are in: 30 seconds; the
/// request is answered with HTTP 408 after that.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The one HTTP path served; every other path answers 404.
pub const HTTP_PATH: &str = "/mcp";

/// A JSON-RPC error response (`id` null) with an HTTP status, for refusals made before the
/// message is read.
fn http_refusal(status: StatusCode, message: String, data: Option<Value>) -> Response<HttpBody> {
    let mut error = json!({"code": guard::INVALID_REQUEST, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json_response(
        status,
        &json!({"jsonrpc": "2.0", "id": null, "error": error}),
    )
}

/// The 403 of a request whose `Host` or `Origin` is not this server's ([`loopback`]), or
/// `None` when both pass. `port` is the server's.
fn foreign(request: &Request<Incoming>, port: u16) -> Option<Response<HttpBody>> {
    let one = |name: hyper::header::HeaderName| {
        let mut values = request.headers().get_all(name).iter();
        match (values.next(), values.next()) {
            (None, _) => None,
            (Some(v), None) => Some(Some(String::from_utf8_lossy(v.as_bytes()).into_owned())),
            (Some(_), Some(_)) => Some(None),
        }
    };
    let host = one(hyper::header::HOST).flatten();
    // An absolute-form request target names the host too (RFC 9112, section 3.2.2).
    let target = request.uri().authority().map(|a| a.as_str().to_string());
    let origin = one(hyper::header::ORIGIN);
    let checked = loopback::check_host(host.as_deref(), port)
        .and_then(|()| match &target {
            Some(t) => loopback::check_host(Some(t), port),
            None => Ok(()),
        })
        .and_then(|()| loopback::check_origin(origin.as_ref().map(Option::as_deref), port));
    checked.err().map(|message| {
        http_refusal(
            StatusCode::FORBIDDEN,
            message,
            Some(json!({"allowedHosts": loopback::LOOPBACK_HOSTS, "port": port})),
        )
    })
}

/// One HTTP request. Without authentication it is refused with 403 unless its `Host` and
/// `Origin` are this server's, on `port` ([`loopback`]); with it, the protected resource
/// metadata is answered at [`auth::WELL_KNOWN`] (and `WELL_KNOWN/mcp`), and any other request
/// without a valid bearer token is answered by [`challenge`]; an accepted one carries its
/// [`auth::Identity`] in its extensions. Only [`HTTP_PATH`] is served (404 elsewhere). A POST whose
/// `Content-Length` is over [`guard::MAX_MESSAGE_BYTES`] is answered 413 before its body is read;
/// a body must arrive within [`BODY_READ_TIMEOUT`] (408); it then passes the size limit and
/// [`guard::check`] before the SDK's streamable HTTP service sees it; refusals are JSON-RPC
/// error responses (HTTP 413 over the limit, 400 otherwise). A POST that opens a session
/// (no `Mcp-Session-Id`) is refused with 503 while [`MAX_SESSIONS`] are live, and with 429 while
/// its identity holds [`MAX_SESSIONS_PER_IDENTITY`]. With authentication, a request in a session
/// opened by another identity is refused with 403 whatever its method ([`Owners`]). A DELETE
/// that ended the session answers 204.
async fn handle_http(http: Arc<Http>, mut request: Request<Incoming>) -> Response<HttpBody> {
    let Http {
        service,
        sessions,
        port,
        auth,
        stateless,
        shared,
        owners,
    } = &*http;
    let port = *port;
    let auth = auth.as_deref();
    if auth.is_none() {
        if let Some(refused) = foreign(&request, port) {
            return refused;
        }
    }
    if let Some(auth) = auth {
        let host = request
            .headers()
            .get(hyper::header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let path = request.uri().path();
        if path == auth::WELL_KNOWN || path == format!("{}{HTTP_PATH}", auth::WELL_KNOWN) {
            return match auth.resource_metadata(host.as_deref()) {
                Some((document, _)) if request.method() == hyper::Method::GET => {
                    json_response(StatusCode::OK, &document)
                }
                Some(_) => http_refusal(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "the protected resource metadata is read with GET".into(),
                    None,
                ),
                None => http_refusal(
                    StatusCode::NOT_FOUND,
                    "no protected resource metadata: this server authenticates with a tokens file, not an OAuth issuer".into(),
                    None,
                ),
            };
        }
        let authorization: Vec<&[u8]> = request
            .headers()
            .get_all(hyper::header::AUTHORIZATION)
            .iter()
            .map(|v| v.as_bytes())
            .collect();
        let catalog = shared.table().catalog();
        match auth.authenticate(&authorization, catalog).await {
            auth::Verdict::Allowed(identity) => {
                request.extensions_mut().insert(identity);
            }
            verdict => return challenge(auth, host.as_deref(), verdict),
        }
    }
    let service = service.clone();
    if request.uri().path() != HTTP_PATH {
        return http_refusal(
            StatusCode::NOT_FOUND,
            format!(
                "no MCP endpoint at `{}`; the endpoint is `{HTTP_PATH}`",
                request.uri().path()
            ),
            None,
        );
    }
    let identity = request.extensions().get::<auth::Identity>().cloned();
    let session = request
        .headers()
        .get("mcp-session-id")
        .map(|v| Arc::<str>::from(String::from_utf8_lossy(v.as_bytes())));
    if let (Some(id), Some(session)) = (&identity, &session) {
        let opened = owners.lock().get(session).cloned();
        match opened {
            Some(opened) if opened.same_principal(id) => {}
            Some(opened) => return not_the_owner(&opened, id),
            // Every session of an authenticated server has its opener recorded: a live one
            // without is refused (none is expected); an unknown id is the SDK's 404.
            None if sessions.sessions.read().await.contains_key(session) => {
                return http_refusal(
                    StatusCode::FORBIDDEN,
                    "this MCP session has no recorded owner; open a session of your own (`initialize` without `Mcp-Session-Id`)".into(),
                    None,
                )
            }
            None => {}
        }
    }
    if request.method() == hyper::Method::DELETE {
        // The SDK ends the session with 202 Accepted; clients (the Python SDK among them) expect
        // the 200/204 of a completed DELETE, and the session is indeed closed by then.
        let mut response = service.handle(request).await;
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        if let Some(session) = &session {
            if response.status().is_success() {
                owners.lock().remove(session);
            }
        }
        return response;
    }
    if request.method() != hyper::Method::POST {
        return service.handle(request).await;
    }
    let declared = request
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(len) = declared {
        if len > guard::MAX_MESSAGE_BYTES as u64 {
            let refusal = guard::Refusal::too_large(usize::try_from(len).unwrap_or(usize::MAX));
            return json_response(StatusCode::PAYLOAD_TOO_LARGE, &refusal.response);
        }
    }
    // Held until the answer to an `initialize` has recorded the session's owner (below).
    let mut _opening = None;
    if !*stateless && !request.headers().contains_key("mcp-session-id") {
        let live = sessions.sessions.read().await.len();
        if live >= MAX_SESSIONS {
            return http_refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "{live} MCP sessions are open, the limit is {MAX_SESSIONS}; close unused sessions (HTTP DELETE with their `Mcp-Session-Id`) or retry after idle ones expire ({} s)",
                    SESSION_IDLE_TIMEOUT.as_secs()
                ),
                Some(json!({"maxSessions": MAX_SESSIONS})),
            );
        }
        if let Some(id) = &identity {
            match owners.reserve(id, &*sessions.sessions.read().await) {
                Ok(opening) => _opening = Some(opening),
                Err(held) => return http_refusal(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!(
                        "{} has {held} MCP sessions open or opening, the limit per identity is {MAX_SESSIONS_PER_IDENTITY}; close unused ones (HTTP DELETE with their `Mcp-Session-Id`) or retry after idle ones expire ({} s)",
                        id.principal,
                        SESSION_IDLE_TIMEOUT.as_secs()
                    ),
                    Some(json!({"maxSessionsPerIdentity": MAX_SESSIONS_PER_IDENTITY})),
                ),
            }
        }
    }
    let (parts, body) = request.into_parts();
    let collected = tokio::time::timeout(
        BODY_READ_TIMEOUT,
        Limited::new(body, guard::MAX_MESSAGE_BYTES).collect(),
    )
    .await;
    let bytes = match collected {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) => {
            return if e.is::<http_body_util::LengthLimitError>() {
                json_response(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &guard::Refusal::too_large_at_least(guard::MAX_MESSAGE_BYTES).response,
                )
            } else {
                http_refusal(
                    StatusCode::BAD_REQUEST,
                    format!("the request body could not be read: {e}"),
                    None,
                )
            };
        }
        Err(_) => {
            return http_refusal(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {} s; send the whole body at once",
                    BODY_READ_TIMEOUT.as_secs()
                ),
                None,
            )
        }
    };
    // Stateless: every request stands alone, none waits for an `initialize`.
    let opens_session = !*stateless && !parts.headers.contains_key("mcp-session-id");
    if let Err(refusal) = guard::check(&bytes).and_then(|()| {
        if opens_session {
            guard::check_uninitialized(&bytes)
        } else {
            Ok(())
        }
    }) {
        return json_response(StatusCode::BAD_REQUEST, &refusal.response);
    }
    let response = service
        .handle(Request::from_parts(parts, Full::new(bytes)))
        .await;
    // The answer to `initialize` issues the session id: its opener owns the session.
    if let (true, Some(id)) = (opens_session, identity) {
        if let Some(issued) = response.headers().get("mcp-session-id") {
            let issued = Arc::<str>::from(String::from_utf8_lossy(issued.as_bytes()));
            owners.lock().insert(issued, id);
        }
    }
    response
}

/// The refusal of an unauthenticated request: 401 with a `WWW-Authenticate: Bearer` challenge
/// (`realm`, then `resource_metadata` with OAuth, then `error` and `error_description` unless
/// no credential was sent, RFC 6750 section 3), 403 `insufficient_scope` with the scopes that
/// would do, or 503 while the tokens file does not load. The body is a JSON-RPC error saying
/// the same.
fn challenge(
    auth: &auth::Authenticator,
    host: Option<&str>,
    verdict: auth::Verdict,
) -> Response<HttpBody> {
    let quoted = |text: &str| text.replace(['"', '\\'], "'");
    let mut header = String::from("Bearer realm=\"toolcat\"");
    if let Some((_, url)) = auth.resource_metadata(host) {
        header.push_str(&format!(", resource_metadata=\"{}\"", quoted(&url)));
    }
    let (status, message) = match verdict {
        auth::Verdict::Allowed(_) => {
            return http_refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "authenticated".into(),
                None,
            )
        }
        auth::Verdict::Missing => (
            StatusCode::UNAUTHORIZED,
            "this server requires authentication: send `Authorization: Bearer TOKEN`".to_string(),
        ),
        auth::Verdict::Invalid(why) => {
            header.push_str(&format!(
                ", error=\"invalid_token\", error_description=\"{}\"",
                quoted(&why)
            ));
            (
                StatusCode::UNAUTHORIZED,
                format!("the bearer token was refused: {why}; send a valid token"),
            )
        }
        auth::Verdict::Insufficient(why) => {
            header.push_str(&format!(
                ", error=\"insufficient_scope\", scope=\"{}\", error_description=\"{}\"",
                [Exposure::ReadOnly, Exposure::Staging, Exposure::Full]
                    .iter()
                    .map(|e| format!("toolcat:{}", e.as_str()))
                    .collect::<Vec<_>>()
                    .join(" "),
                quoted(&why)
            ));
            (
                StatusCode::FORBIDDEN,
                format!("the bearer token is valid but insufficient: {why}"),
            )
        }
        auth::Verdict::Unavailable(why) => {
            return http_refusal(StatusCode::SERVICE_UNAVAILABLE, why, None);
        }
    };
    let mut response = http_refusal(status, message, None);
    if let Ok(value) = hyper::header::HeaderValue::from_str(&header) {
        response
            .headers_mut()
            .insert(hyper::header::WWW_AUTHENTICATE, value);
    }
    response
}

/// What one HTTP server shares between its connections.
struct Http {
    service: StreamableHttpService<McpServer, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    port: u16,
    auth: Option<Arc<auth::Authenticator>>,
    stateless: bool,
    shared: Arc<Shared>,
    owners: Owners,
}

/// Who opened each live HTTP session, with authentication: recorded from the response to the
/// `initialize` that issued its `Mcp-Session-Id`, and checked on every later request of that
/// session, whatever its method (POST, GET, DELETE): a session id is not a credential.
///
/// The second map holds the identities of the `initialize` requests in flight, so that the
/// sessions an identity holds and those it is opening are counted together, in one step:
/// concurrent `initialize`s cannot pass [`MAX_SESSIONS_PER_IDENTITY`] between them.
#[derive(Default)]
struct Owners(
    Mutex<HashMap<Arc<str>, auth::Identity>>,
    Mutex<Vec<auth::Identity>>,
);

impl Owners {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, auth::Identity>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn opening(&self) -> std::sync::MutexGuard<'_, Vec<auth::Identity>> {
        self.1.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves a session for an `initialize` of `identity` until the returned [`Opening`] is
    /// dropped (after its answer recorded the owner); `Err(n)` when the `live` sessions
    /// `identity` opened and those it is opening are already `n` ≥
    /// [`MAX_SESSIONS_PER_IDENTITY`]. Forgets the sessions no longer live.
    fn reserve<'a, V>(
        &'a self,
        identity: &auth::Identity,
        live: &HashMap<Arc<str>, V>,
    ) -> Result<Opening<'a>, usize> {
        let mut owners = self.lock();
        owners.retain(|session, _| live.contains_key(session));
        let held = owners
            .values()
            .filter(|o| o.same_principal(identity))
            .count();
        let mut opening = self.opening();
        let held = held
            + opening
                .iter()
                .filter(|o| o.same_principal(identity))
                .count();
        if held >= MAX_SESSIONS_PER_IDENTITY {
            return Err(held);
        }
        opening.push(identity.clone());
        Ok(Opening {
            owners: self,
            identity: identity.clone(),
        })
    }
}

/// A session reserved by [`Owners::reserve`] for an `initialize` in flight; released on drop.
struct Opening<'a> {
    owners: &'a Owners,
    identity: auth::Identity,
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        let mut opening = self.owners.opening();
        if let Some(i) = opening
            .iter()
            .position(|o| o.same_principal(&self.identity))
        {
            opening.swap_remove(i);
        }
    }
}

/// The refusal of a request of `identity` in a session `opened` by another principal.
fn not_the_owner(opened: &auth::Identity, identity: &auth::Identity) -> Response<HttpBody> {
    // A token revoked and added again under its name is another principal with the same name.
    // The opener is not named: a session id must not tell who else uses the server.
    let opener = if opened.principal == identity.principal {
        "another credential of the same name"
    } else {
        "another credential"
    };
    http_refusal(
        StatusCode::FORBIDDEN,
        format!(
            "this MCP session was opened by {opener}, not {}; open a session of your own (`initialize` without `Mcp-Session-Id`)",
            identity.principal
        ),
        None,
    )
}

/// Every [`REVOCATION_CHECK`], closes the sessions (and their streams) whose token was revoked
/// from the tokens file; ends with the server.
async fn close_revoked(http: std::sync::Weak<Http>) {
    loop {
        tokio::time::sleep(REVOCATION_CHECK).await;
        let Some(http) = http.upgrade() else { return };
        let Some(auth) = http.auth.as_deref() else {
            return;
        };
        let catalog = http.shared.table().catalog();
        let revoked: Vec<(Arc<str>, String)> = {
            let mut owners = http.owners.lock();
            let gone: Vec<(Arc<str>, String)> = owners
                .iter()
                .filter(|(_, id)| auth.revoked(id, catalog))
                .map(|(s, id)| (Arc::clone(s), id.principal.clone()))
                .collect();
            for (s, _) in &gone {
                owners.remove(s);
            }
            gone
        };
        for (session, principal) in revoked {
            tracing::info!("mcp: {principal} was revoked; closing its session {session}");
            if let Err(e) = http.sessions.close_session(&session).await {
                tracing::warn!("mcp: closing the session {session} of revoked {principal}: {e}");
            }
        }
    }
}

/// How [`serve_http_with`] serves: authentication and sessions.
#[derive(Clone, Default)]
pub struct HttpOptions {
    /// Authenticate every request ([`auth::Authenticator`]); each is then served its identity's
    /// profile and scope within the server's ([`ScopeTable::narrowed`]), the `Host` and
    /// `Origin` loopback checks are off (the bearer token is the check; a browser page cannot
    /// send it), and any address may be bound. `None`: loopback addresses only.
    pub auth: Option<Arc<auth::Authenticator>>,
    /// Serve every request on its own, with no MCP session (the SDK's stateless mode): no
    /// `Mcp-Session-Id` is issued, nothing waits for `initialize`, any replica behind a
    /// balancer can answer any request; no server-to-client notifications (`list_changed`,
    /// elicitation for `gated` tools) outlive a request, and `--dynamic` discovery does not
    /// persist; without authentication each request is its own archive owner, so an archived
    /// result cannot be read back (with it, the token's requests share one). Default
    /// (`false`): sessions, which a balancer must keep on the replica that issued their
    /// `Mcp-Session-Id`.
    pub stateless: bool,
}

/// Serves MCP over streamable HTTP (endpoint [`HTTP_PATH`], 404 elsewhere) on `addr` until the
/// process ends; `bound` is called with the address actually bound (port 0 picks a free port).
/// `Host` must name a loopback host with the bound port, and a present `Origin` must be the
/// server's own loopback origin ([`loopback`]; 403 otherwise). There is no authentication:
/// callers bind loopback addresses only (`toolcat serve` refuses others). Accepted sockets are
/// set to `TCP_NODELAY`: an answer goes out in several small writes (headers, the SSE priming
/// event, the message), and Nagle's algorithm would hold each after the first until the client's
/// delayed ACK. Limits: [`HEADER_READ_TIMEOUT`],
/// [`BODY_READ_TIMEOUT`], [`guard::MAX_MESSAGE_BYTES`], [`MAX_SESSIONS`],
/// [`SESSION_IDLE_TIMEOUT`].
///
/// # Errors
/// When `addr` cannot be bound.
pub async fn serve_http(
    shared: Arc<Shared>,
    addr: SocketAddr,
    bound: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    serve_http_with(shared, addr, HttpOptions::default(), bound).await
}

/// [`serve_http`] with `options`: authentication (which allows any address and lifts the
/// `Host`/`Origin` loopback checks; a request without a valid token answers 401 or 403 with a
/// `WWW-Authenticate` challenge, and with OAuth the protected resource metadata is served at
/// [`auth::WELL_KNOWN`] and `WELL_KNOWN/mcp`), and stateless mode ([`HttpOptions`]).
///
/// # Errors
/// When `addr` is not a loopback address, or a loopback one other than `127.0.0.1` and `[::1]`
/// ([`loopback::check_bind`]), and no authentication is configured (`InvalidInput`, naming the
/// fix), or cannot be bound.
pub async fn serve_http_with(
    shared: Arc<Shared>,
    addr: SocketAddr,
    options: HttpOptions,
    bound: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let auth = options.auth.filter(|a| a.is_configured());
    if auth.is_none() && !addr.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{addr}` is not a loopback address and no authentication is configured: any host that reaches it could run tools; bind `127.0.0.1` or `[::1]`, or configure authentication (`toolcat serve --tokens FILE` or `--oauth-issuer URL`)"),
        ));
    }
    if auth.is_none() {
        loopback::check_bind(addr)
            .map_err(|m| std::io::Error::new(std::io::ErrorKind::InvalidInput, m))?;
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    bound(local);
    let port = local.port();
    // `Host` and `Origin` are checked by `handle_http` before the SDK sees a request.
    // With authentication the SDK's own `Host` check is off as ours is: the token decides.
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(guard::MAX_MESSAGE_BYTES)
        .with_legacy_session_mode(!options.stateless);
    if auth.is_some() {
        config = config.disable_allowed_hosts();
    }
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(SESSION_IDLE_TIMEOUT);
    let sessions = Arc::new(manager);
    let stateless = options.stateless;
    let handlers = Arc::clone(&shared);
    let service = StreamableHttpService::new(
        move || {
            let shared = Arc::clone(&handlers);
            Ok(if stateless {
                McpServer::stateless(shared)
            } else {
                McpServer::new(shared)
            })
        },
        Arc::clone(&sessions),
        config,
    );
    let http = Arc::new(Http {
        service,
        sessions,
        port,
        auth,
        stateless,
        shared,
        owners: Owners::default(),
    });
    if !stateless && http.auth.as_ref().is_some_and(|a| a.has_tokens()) {
        tokio::spawn(close_revoked(Arc::downgrade(&http)));
    }
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // A connection that failed before it was accepted (reset, out of descriptors for a
            // moment) says nothing about the next one.
            Err(e) => {
                tracing::warn!("mcp: accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if let Err(e) = stream.set_nodelay(true) {
            // The connection still works, at the cost of a delayed ACK per answer.
            tracing::warn!("mcp: cannot set TCP_NODELAY on a connection: {e}");
        }
        let http = Arc::clone(&http);
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request| {
                let http = Arc::clone(&http);
                async move {
                    let method = request.method().clone();
                    let span = telemetry::http_span(method.as_str(), request.uri().path());
                    let started = std::time::Instant::now();
                    let response = handle_http(http, request).instrument(span.clone()).await;
                    telemetry::http_ended(
                        &span,
                        method.as_str(),
                        response.status().as_u16(),
                        started.elapsed(),
                    );
                    Ok::<_, Infallible>(response)
                }
            });
            serve_connection(stream, handler, "mcp").await;
        });
    }
}

/// Serves one accepted HTTP/1 connection with `handler` until it closes (the MCP endpoint's and
/// the metrics listener's): a client has [`HEADER_READ_TIMEOUT`] to send a request's headers; a
/// failure other than the client leaving or timing out is logged as a warning prefixed `what`.
async fn serve_connection<S>(stream: tokio::net::TcpStream, handler: S, what: &str)
where
    S: hyper::service::HttpService<hyper::body::Incoming>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S::ResBody: 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let io = hyper_util::rt::TokioIo::new(stream);
    if let Err(e) = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(io, handler)
        .await
    {
        if !e.is_incomplete_message() && !e.is_timeout() {
            tracing::warn!("{what}: an HTTP connection failed: {e}");
        }
    }
}

// ---- reloading ----

/// Logs `text` (rendered diagnostics, an I/O error) as one warning event without its trailing
/// newlines, so the next report starts on its own line whether or not `text` ends in one.
fn warn_block(text: &str) {
    tracing::warn!("{}", text.trim_end_matches('\n'));
}

/// What identifies a version of a file cheaply: modification time and length.
fn stamp(path: &std::path::Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Polls `reload.path` every [`RELOAD_POLL`] and replaces the scope table when the file changed
/// and its catalog is valid (see the module docs); never returns.
pub async fn watch(shared: Arc<Shared>, reload: Reload) {
    let mut last = stamp(&reload.path);
    let mut ticks = tokio::time::interval(RELOAD_POLL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let now = stamp(&reload.path);
        if now == last {
            continue;
        }
        last = now;
        let path = reload.path.display();
        let catalog = match (reload.load)() {
            Ok(c) => c,
            Err(e) => {
                warn_block(&e.to_string());
                tracing::warn!("mcp: `{path}` changed but does not load; still serving the catalog loaded before");
                continue;
            }
        };
        if !catalog.warnings().is_empty() {
            warn_block(&catalog.render_warnings());
        }
        let old = shared.table();
        let catalog: &'static Catalog = Box::leak(Box::new(catalog));
        let coordinator = old.coordinator().for_catalog(catalog);
        let profile = old.catalog().profile_name(old.profile()).to_string();
        match ScopeTable::with_selection(
            coordinator,
            &profile,
            old.exposure(),
            old.allows_deprecated(),
            old.selection().clone(),
        ) {
            Ok(table) => {
                let n = table.listed().len();
                if shared.replace(table).await {
                    tracing::info!("mcp: reloaded `{path}`: {n} tools listed; clients notified (`notifications/tools/list_changed`)");
                } else {
                    tracing::info!("mcp: reloaded `{path}`: the tool list is unchanged");
                }
            }
            Err(e) => tracing::warn!(
                "mcp: `{path}` changed but cannot be served: {e}; still serving the catalog loaded before"
            ),
        }
    }
}

/// Builds the coordinator of `catalog` running local tools in `workspace`, with no approval hook
/// (so `gated` tools run only after a client's elicitation approves them, see the module docs).
pub fn coordinator(catalog: &'static Catalog, workspace: PathBuf) -> Coordinator<'static> {
    Coordinator::new(catalog, ToolContext::new(workspace))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test fixture's `coder` profile served at exposure `full`.
    fn coder_table() -> ScopeTable {
        let catalog: &'static Catalog = Box::leak(Box::new(crate::fixture::catalog()));
        ScopeTable::new(
            coordinator(catalog, std::env::temp_dir()),
            "coder",
            Exposure::Full,
        )
        .unwrap()
    }

    async fn lines(input: &[u8], max: usize) -> Vec<Result<String, usize>> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            match read_line(&mut reader, &mut buf, max).await.unwrap() {
                Line::Eof => return out,
                Line::TooLong(n) => out.push(Err(n)),
                Line::Complete => out.push(Ok(String::from_utf8(buf.clone()).unwrap())),
            }
        }
    }

    #[tokio::test]
    async fn lines_over_the_limit_are_skipped_whole_and_the_next_line_is_read() {
        let got = lines(b"short\r\n0123456789abc\nok\nlast", 10).await;
        assert_eq!(
            got,
            vec![
                Ok("short".to_string()),
                Err(13),
                Ok("ok".to_string()),
                Ok("last".to_string())
            ]
        );
        // Exactly the limit passes; one byte more does not.
        assert_eq!(
            lines(b"0123456789\n", 10).await,
            vec![Ok("0123456789".into())]
        );
        assert_eq!(lines(b"0123456789x\n", 10).await, vec![Err(11)]);
    }

    /// An input that counts the bytes the server took from it.
    struct Counted<R> {
        inner: R,
        taken: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl<R: AsyncRead + Unpin> AsyncRead for Counted<R> {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let before = buf.filled().len();
            let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
            let n = buf.filled().len() - before;
            self.taken.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
            polled
        }
    }

    fn request_line(id: usize, method: &str, params: Value) -> Vec<u8> {
        let mut line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        line.push('\n');
        line.into_bytes()
    }

    /// A client writes many `tools/list` requests and reads nothing: the server stops reading
    /// after a bounded number of them (so the client's writes block and the server's memory holds
    /// at most that many answers); once the client reads, every answer arrives, in order.
    ///
    /// The clock is paused: tokio moves it forward only when every task is blocked, so the
    /// timeout below fires exactly when nothing can progress any more, without real waiting.
    #[tokio::test(start_paused = true)]
    async fn a_client_that_does_not_read_stops_the_server_reading_and_loses_no_answer() {
        let table = coder_table();
        let taken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (mut to_server, server_in) = tokio::io::duplex(4096);
        let (server_out, from_server) = tokio::io::duplex(4096);
        let input = Counted {
            inner: server_in,
            taken: Arc::clone(&taken),
        };
        let server = tokio::spawn(serve_lines(Shared::new(table), input, server_out));
        let mut answers = BufReader::new(from_server);
        let mut line = String::new();

        to_server
            .write_all(&request_line(
                0,
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
            ))
            .await
            .unwrap();
        answers.read_line(&mut line).await.unwrap();
        assert!(line.contains("serverInfo"), "{line}");
        to_server
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await
            .unwrap();

        const N: usize = 3000;
        let one = request_line(N, "tools/list", json!({})).len();
        let start = taken.load(std::sync::atomic::Ordering::SeqCst);
        let mut writer = tokio::spawn(async move {
            for id in 1..=N {
                to_server
                    .write_all(&request_line(id, "tools/list", json!({})))
                    .await
                    .unwrap();
            }
            to_server
        });
        let blocked = tokio::time::timeout(Duration::from_secs(3600), &mut writer)
            .await
            .is_err();
        let read = taken.load(std::sync::atomic::Ordering::SeqCst) - start;
        assert!(
            blocked,
            "all {N} requests were read while no answer was: the server does not stop reading"
        );
        // In flight, plus the one waiting for a slot, plus what the input buffer holds.
        let bound = (MAX_IN_FLIGHT + 1) * one + 8 * 1024;
        assert!(
            read <= bound,
            "the server read {read} bytes of requests (bound {bound}) with no answer read"
        );

        let mut ids = Vec::with_capacity(N);
        while ids.len() < N {
            line.clear();
            assert!(
                answers.read_line(&mut line).await.unwrap() > 0,
                "output ended"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            assert!(v["result"]["tools"].is_array(), "{v}");
            ids.push(v["id"].as_u64().unwrap() as usize);
        }
        assert_eq!(ids, (1..=N).collect::<Vec<_>>());
        drop(writer.await.unwrap());
        server.await.unwrap().unwrap();
    }

    async fn next_answer<R: AsyncBufRead + Unpin>(answers: &mut R) -> Value {
        let mut line = String::new();
        answers.read_line(&mut line).await.unwrap();
        serde_json::from_str(&line).unwrap()
    }

    /// A request reusing the id of one still in flight is refused with that id, and the first
    /// request is still answered; after its answer, the id may be used again.
    #[tokio::test(start_paused = true)]
    async fn an_id_in_flight_is_refused_and_free_again_once_answered() {
        let table = coder_table();
        let (mut to_server, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, from_server) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(serve_lines(Shared::new(table), server_in, server_out));
        let mut answers = BufReader::new(from_server);

        let mut input = request_line(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        );
        input
            .extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        // One write: the server reads the second request before the SDK answers the first.
        input.extend(request_line(5, "tools/list", json!({})));
        input.extend(request_line(5, "tools/list", json!({})));
        to_server.write_all(&input).await.unwrap();
        // The refusal is written as soon as the second request is read, so it may come first.
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(next_answer(&mut answers).await);
        }
        assert!(
            got.iter().any(|v| v["result"]["serverInfo"].is_object()),
            "{got:?}"
        );
        let refused: Vec<&Value> = got.iter().filter(|v| v.get("error").is_some()).collect();
        assert_eq!(refused.len(), 1, "{got:?}");
        assert_eq!(refused[0]["id"], 5, "{got:?}");
        assert_eq!(
            refused[0]["error"]["code"],
            guard::INVALID_REQUEST,
            "{got:?}"
        );
        assert!(refused[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("still in flight"));
        assert!(
            got.iter()
                .any(|v| v["id"] == 5 && v["result"]["tools"].is_array()),
            "{got:?}"
        );
        to_server
            .write_all(&request_line(5, "tools/list", json!({})))
            .await
            .unwrap();
        assert!(next_answer(&mut answers).await["result"]["tools"].is_array());
        drop(to_server);
        server.await.unwrap().unwrap();
    }

    /// A server of the fixture's `profile` at `exposure` over `coordinator` (one MCP session).
    fn server_with(
        coordinator: Coordinator<'static>,
        profile: &str,
        exposure: Exposure,
    ) -> McpServer {
        McpServer::new(Shared::new(
            ScopeTable::new(coordinator, profile, exposure).unwrap(),
        ))
    }

    fn server(profile: &str, exposure: Exposure) -> McpServer {
        let catalog: &'static Catalog = Box::leak(Box::new(crate::fixture::catalog()));
        server_with(
            coordinator(catalog, std::env::temp_dir()),
            profile,
            exposure,
        )
    }

    /// `isError` and the one text content of a call's answer.
    async fn answer(server: &McpServer, name: &str, arguments: Value) -> (bool, String) {
        let r = server.call(name, arguments, None).await;
        let text = r.content[0]
            .as_text()
            .map(|t| t.text.clone())
            .unwrap_or_default();
        (r.is_error == Some(true), text)
    }

    fn names(body: &Value) -> Vec<&str> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect()
    }

    /// `tool_search` answers as a session does (`crate::meta`), without a budget: an exact name
    /// alone, `select:`, a default limit of 5, the zero-hit answer with the toolsets, and no
    /// `searchesLeft`, however many searches.
    #[tokio::test]
    async fn tool_search_answers_as_a_session_does_without_a_budget() {
        let s = server("coder", Exposure::Full);
        let (err, text) = answer(&s, "tool_search", json!({"query": "read_file"})).await;
        assert!(!err);
        assert_eq!(
            text,
            r#"{"tools":[{"name":"read_file","description":"Read the contents of a file in the workspace."}]}"#
        );
        let (_, text) = answer(
            &s,
            "tool_search",
            json!({"query": "select:git_status, read_file,run_shell,git_status"}),
        )
        .await;
        let body: Value = serde_json::from_str(&text).unwrap();
        // `run_shell` is not listed for `coder`.
        assert_eq!(names(&body), ["git_status", "read_file"]);

        let (_, all) = answer(&s, "tool_search", json!({"query": "file", "limit": 50})).await;
        let all = names(&serde_json::from_str(&all).unwrap()).len();
        let (_, default) = answer(&s, "tool_search", json!({"query": "file"})).await;
        let default = names(&serde_json::from_str(&default).unwrap()).len();
        assert_eq!(default, all.min(crate::meta::DEFAULT_SEARCH_LIMIT));
        assert!(all > 0);

        for _ in 0..crate::session::DEFAULT_SEARCH_BUDGET + 2 {
            let (err, text) = answer(&s, "tool_search", json!({"query": "zzqx"})).await;
            assert!(!err, "{text}");
            let body: Value = serde_json::from_str(&text).unwrap();
            assert!(body.get("searchesLeft").is_none(), "{text}");
            assert_eq!(body["tools"], json!([]));
            assert_eq!(
                body["message"],
                "no tool this session can reach matches `zzqx`; the capability may be in a toolset that is not active (see `toolsets`), or try other words"
            );
            let toolsets = body["toolsets"].as_array().unwrap();
            assert!(toolsets.iter().any(|t| t["name"] == "files"), "{text}");
            assert!(toolsets.iter().all(|t| t["active"] == true), "{text}");
        }
        // Read-only: `write_file` (staging) is outside the scope, so `files` is not all reachable.
        let s = server("coder", Exposure::ReadOnly);
        let (_, text) = answer(&s, "tool_search", json!({"query": "zzqx"})).await;
        let body: Value = serde_json::from_str(&text).unwrap();
        let files = body["toolsets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "files")
            .unwrap();
        assert_eq!(files["active"], false, "{text}");
    }

    /// `tool_describe` answers as a session does: several names, `notFound` for names outside the
    /// listed set exactly as for unknown ones, no `annotations`, an error only when nothing was
    /// found, and the session's `invalid-arguments` object (with `tool`, without `message`).
    #[tokio::test]
    async fn tool_describe_answers_as_a_session_does() {
        let s = server("coder", Exposure::ReadOnly);
        let (err, text) = answer(
            &s,
            "tool_describe",
            json!({"name": ["read_file", "write_file", "nope", "read_file"]}),
        )
        .await;
        assert!(!err, "{text}");
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(names(&body), ["read_file"]);
        let keys: Vec<&String> = body["tools"][0].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["name", "description", "inputSchema"]);
        let missing = |name: &str| json!({"name": name, "message": format!("No tool named `{name}` is available to this server")});
        assert_eq!(
            body["notFound"],
            json!([missing("write_file"), missing("nope")])
        );

        let (err, text) = answer(&s, "tool_describe", json!({"name": "write_file"})).await;
        assert!(err);
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"tools": [], "notFound": [missing("write_file")]})
        );
        let (err, text) = answer(&s, "tool_describe", json!({"names": ["list_dir"]})).await;
        assert!(!err, "{text}");

        let (err, text) = answer(&s, "tool_describe", json!({"name": 3})).await;
        assert!(err);
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["error"], "invalid-arguments");
        assert_eq!(body["tool"], "tool_describe");
        assert!(body.get("message").is_none(), "{text}");
        assert_eq!(body["errors"][0]["instancePath"], "/name");
    }

    /// Deprecated tools are neither listed nor run without the opt-in: a call, a `tool_call`, a
    /// describe or an exact-name search answers the replacement (named only when listed), and
    /// following the answer works; a search by words never returns one. With the opt-in they
    /// are listed and run, and still never found by words.
    #[tokio::test]
    async fn deprecated_tools_answer_their_replacement_unless_allowed() {
        let catalog: &'static Catalog = Box::leak(Box::new(crate::fixture::catalog()));
        let c = catalog;
        let old = c.tool("old_grep").unwrap();
        let s = server_with(
            coordinator(c, std::env::temp_dir()),
            "coder",
            Exposure::Full,
        );
        let table = s.shared.table();
        assert!(!table.is_listed(old) && !table.is_allowed(old));
        let notice = "`old_grep` is deprecated (removal 2030-01-01); call `search_text` instead";
        for (name, args) in [
            ("old_grep", json!({})),
            ("tool_call", json!({"name": "old_grep"})),
        ] {
            let (err, text) = answer(&s, name, args).await;
            assert!(err, "{text}");
            let body: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                body,
                json!({"error": "deprecated", "tool": "old_grep", "message": notice,
                       "removal": "2030-01-01", "replacedBy": "search_text"})
            );
        }
        // The replacement named is callable as named.
        let (err, text) = answer(&s, "search_text", json!({"pattern": "x"})).await;
        let body: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_ne!(body["error"], "outside-scope", "{text}");
        assert_ne!(body["error"], "deprecated", "{err} {text}");

        let (err, text) = answer(&s, "tool_describe", json!({"name": "old_grep"})).await;
        assert!(err);
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap()["notFound"][0]["message"],
            notice
        );
        let (_, text) = answer(&s, "tool_search", json!({"query": "old_grep"})).await;
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(names(&body), ["search_text"], "{text}");
        assert_eq!(body["message"], notice);
        for query in ["grep find text", "select:old_grep,read_file"] {
            let (_, text) = answer(&s, "tool_search", json!({"query": query})).await;
            let body: Value = serde_json::from_str(&text).unwrap();
            assert!(!names(&body).contains(&"old_grep"), "{query}: {text}");
        }

        // Opted in: listed and run (the coordinator reaches its handler), never found by words.
        let allowing = McpServer::new(Shared::new(
            ScopeTable::with_deprecated(
                coordinator(c, std::env::temp_dir()),
                "coder",
                Exposure::Full,
                true,
            )
            .unwrap(),
        ));
        let table = allowing.shared.table();
        assert!(table.is_listed(old) && table.is_allowed(old));
        let (_, text) = answer(&allowing, "old_grep", json!({})).await;
        let body: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_ne!(body["error"], "deprecated", "{text}");
        assert_ne!(body["error"], "outside-scope", "{text}");
        let (_, text) = answer(&allowing, "tool_search", json!({"query": "grep find text"})).await;
        let body: Value = serde_json::from_str(&text).unwrap();
        assert!(!names(&body).contains(&"old_grep"), "{text}");
    }

    /// An unlisted name is refused without naming tools outside the scope, and an ambiguous
    /// bare name lists the listed choices.
    #[tokio::test]
    async fn unlisted_names_leak_nothing_and_ambiguous_names_list_their_choices() {
        let s = server("full", Exposure::Full);
        let (err, text) = answer(&s, "list_branches", json!({})).await;
        assert!(err);
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["error"], "ambiguous-name", "{text}");
        assert_eq!(
            body["choices"],
            json!(["github__list_branches", "gitlab__list_branches"])
        );
        // A read-only client: `write_file` (staging) and an unknown name answer alike.
        let s = server("coder", Exposure::ReadOnly);
        let (_, a) = answer(&s, "write_file", json!({})).await;
        let (_, b) = answer(&s, "nope", json!({})).await;
        assert_eq!(a.replace("write_file", "X"), b.replace("nope", "X"));
        assert!(!a.contains("tool_search"), "{a}");
    }

    /// `tool_call` runs a listed meta-tool as a direct call would, refuses a nested `tool_call`
    /// with the session's text, and refuses a tool outside the scope as `tools/call` does.
    #[tokio::test]
    async fn tool_call_runs_meta_tools_and_refuses_a_nested_tool_call() {
        let s = server("coder", Exposure::Full);
        let direct = answer(&s, "tool_search", json!({"query": "git_status"})).await;
        let nested = answer(
            &s,
            "tool_call",
            json!({"name": "tool_search", "arguments": {"query": "git_status"}}),
        )
        .await;
        assert_eq!(nested, direct);

        let (err, text) = answer(
            &s,
            "tool_call",
            json!({"name": "tool_call", "arguments": {"name": "read_file"}}),
        )
        .await;
        assert!(err);
        assert_eq!(
            text,
            "`tool_call` cannot call `tool_call`; pass the tool to run as `name`"
        );
        // `read_tool_result` is not listed for `coder`; `run_shell` is not in its scope.
        for name in ["read_tool_result", "run_shell", "nope"] {
            let (err, text) = answer(&s, "tool_call", json!({"name": name})).await;
            assert!(err);
            let body: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(body["error"], "outside-scope", "{text}");
            assert_eq!(body["tool"], name, "{text}");
        }
        let (err, text) = answer(&s, "tool_call", json!({"arguments": {}})).await;
        assert!(err);
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["error"], "invalid-arguments");
        assert_eq!(body["tool"], "tool_call");
        assert!(body.get("message").is_none(), "{text}");
    }

    /// `read_tool_result` answers the session's texts: without an archive, and for a reference
    /// the archive does not hold (plain text, not a JSON object).
    #[tokio::test]
    async fn read_tool_result_answers_the_session_texts() {
        let s = server("full", Exposure::Full);
        let (err, text) = answer(&s, "read_tool_result", json!({"reference": "r1"})).await;
        assert!(err);
        assert_eq!(
            text,
            "no archived result `r1`: this session archives no tool results, every result was sent whole"
        );

        let catalog: &'static Catalog = Box::leak(Box::new(crate::fixture::catalog()));
        let archive =
            crate::archive::ResultArchive::in_memory_with(crate::archive::ArchiveLimits::default())
                .unwrap();
        let coordinator =
            coordinator(catalog, std::env::temp_dir()).with_archive(Arc::new(archive));
        let s = server_with(coordinator.clone(), "full", Exposure::Full);
        let never = "result-00000000000000000000000000";
        let (err, text) = answer(&s, "read_tool_result", json!({"reference": never})).await;
        assert!(err);
        assert!(serde_json::from_str::<Value>(&text).is_err(), "{text}");
        let owner = ArchiveOwner::new();
        let archived = coordinator
            .archive()
            .unwrap()
            .read(owner, never, 0, 10)
            .unwrap_err();
        assert_eq!(text, archived.to_string());
    }

    /// An identity's table is the server's intersected with the identity's profile and scope:
    /// never a tool the server does not serve, never one outside the identity's grant.
    #[test]
    fn an_identitys_table_never_widens_the_servers() {
        let catalog: &'static Catalog = Box::leak(Box::new(crate::fixture::catalog()));
        let scopes = [Exposure::ReadOnly, Exposure::Staging, Exposure::Full];
        let profiles: Vec<String> = catalog
            .profiles()
            .map(|p| catalog.profile_name(p).to_string())
            .collect();
        for server_profile in &profiles {
            for &server_scope in &scopes {
                let base = ScopeTable::new(
                    coordinator(catalog, std::env::temp_dir()),
                    server_profile,
                    server_scope,
                )
                .unwrap();
                for profile in &profiles {
                    for &scope in &scopes {
                        let id =
                            auth::Identity::new("t".into(), Some(profile.clone()), scope, &[b"t"]);
                        let narrowed = base.narrowed(&id).unwrap();
                        let own = ScopeTable::new(
                            coordinator(catalog, std::env::temp_dir()),
                            profile,
                            scope,
                        )
                        .unwrap();
                        assert_eq!(narrowed.exposure(), server_scope.min(scope));
                        for t in catalog.tools_in(&narrowed.listed_bits) {
                            assert!(base.is_listed(t) && own.is_listed(t), "{profile} {scope}");
                        }
                        for t in narrowed.listed() {
                            assert!(narrowed.is_listed(*t));
                        }
                        for (t, d) in narrowed.listed().iter().zip(narrowed.definitions()) {
                            assert_eq!(d.name, catalog.exported_name(*t));
                        }
                        // Exactly the intersection of what may run.
                        for t in catalog.tools_in(&base.allowed) {
                            assert_eq!(
                                narrowed.is_allowed(t),
                                own.is_allowed(t),
                                "{profile} {scope}"
                            );
                        }
                        for t in catalog.tools_in(&narrowed.allowed) {
                            assert!(base.is_allowed(t));
                        }
                    }
                }
            }
        }
        let base = ScopeTable::new(
            coordinator(catalog, std::env::temp_dir()),
            "full",
            Exposure::Full,
        )
        .unwrap();
        let unknown = auth::Identity::new("t".into(), Some("nope".into()), Exposure::Full, &[]);
        assert!(matches!(
            base.narrowed(&unknown),
            Err(ScopeError::Profile(_))
        ));
    }

    #[test]
    fn cursors_carry_the_generation_and_stay_in_range() {
        assert_eq!(parse_cursor("3:50", 3, 120).ok(), Some(50));
        for bad in ["2:50", "3:0", "3:120", "x", "3:y", ""] {
            let e = parse_cursor(bad, 3, 120).unwrap_err();
            assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{bad}");
            assert!(
                e.message.contains("call `tools/list` without a cursor"),
                "{bad}"
            );
        }
    }
}
