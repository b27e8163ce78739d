//! [`Coordinator`]: the only way a tool runs. Sessions, `toolcat call` and the MCP server all hand
//! their calls to one, so every source goes through the same checks.
//!
//! # The pipeline of one call ([`Coordinator::call`])
//! 0. **Scope**: the request carries the caller's allowed set (a bitset over [`ToolIndex`]: a
//!    session's active set, an MCP exposure scope ∩ profile). A tool outside it is refused
//!    ([`CallError::OutsideScope`]) and never executed.
//! 1. **Validate** the arguments against the tool's input JSON Schema (`jsonschema`, validators
//!    built once per tool): [`CallError::InvalidArguments`] with at most
//!    [`MAX_VALIDATION_ERRORS`] `{"instancePath","message"}` errors and the schema. This is
//!    deliberately stricter than JSON Schema: a top-level argument the schema does not declare
//!    is an error even when the schema leaves `additionalProperties` out (which JSON Schema
//!    reads as "anything goes"), unless the schema allows extra properties explicitly
//!    (`additionalProperties: true` or a schema); the error names the unknown argument, the
//!    closest declared one and all of them ([`crate::arguments`], which says why). The same
//!    for local, remote and meta-tools. Nested objects are not checked this way.
//!    A call over the tool's `rate_limit` is refused next ([`CallError::RateLimited`], with the
//!    milliseconds until a call is allowed; GCRA, a burst of the whole window's calls; see
//!    [`crate::limits`]). Where the limit's state lives decides who shares it: with rate-limit
//!    state in a store ([`Coordinator::with_rate_limits`], or a call store on a file,
//!    [`Coordinator::with_store`]) every process using that store shares the limit (three
//!    `toolcat call` processes on one store file, replicas on one PostgreSQL database); without
//!    one, or with an in-memory call store, the state is this coordinator's own (in memory,
//!    `governor`, shared by its clones) and each process has the whole limit.
//! 2. **Prepare**: the handler names the concrete [`Target`]s of the call
//!    ([`ToolHandler::prepare`](crate::ToolHandler::prepare)): resources, read or write, and a
//!    fingerprint of what is there now.
//! 3. **Permission**: a tool of tier `gated` runs only when the approval hook approves the
//!    concrete operation ([`ApprovalRequest`]: tool, arguments, targets with fingerprints). No
//!    hook: [`CallError::NeedsApproval`]; a no: [`CallError::Denied`]. Tier `silent` never asks.
//!    A request with its own asynchronous [`Approver`] ([`CallRequest::with_approver`]; the MCP
//!    server's elicitation) is asked too, awaited at this same step with an owned
//!    [`ApprovalPrompt`]: the hook, when set, decides first and a no from either is
//!    [`CallError::Denied`], so an approver can add a refusal but never lift the host's; with an
//!    approver and no hook the approver decides. The rest of the pipeline (re-verify included)
//!    is unchanged.
//!    A tool that cannot run here (no handler, a remote server without a connection, a discovery
//!    meta-tool) is refused after this step with [`CallError::Tool`]; with a remote source
//!    ([`Coordinator::with_remote`], the server pool of feature `mcp-client`) a server tool is refused with
//!    [`CallError::ServerNotConnected`] or [`CallError::SchemaDrift`], checked again in step 5.
//! 4. **Schedule**: the targets' resources are locked, readers shared and writers alone, always
//!    in one canonical (sorted) order, so calls that conflict (same resource, one writes) run one
//!    after the other, independent calls run in parallel, and no two calls can deadlock.
//! 5. **Re-verify** under the locks: the targets are prepared again. An approved call whose
//!    targets or fingerprints differ from what the approval saw is refused
//!    ([`CallError::TargetChanged`]); for a call that needed no approval only the resources and
//!    accesses must be the same (its locks are taken on them).
//! 6. **Execute and record**: the handler runs on its own task holding the locks; the outcome is
//!    recorded and returned. Nothing runs after a refusal in any step. A call still running
//!    after its timeout (the row's `timeout_ms`, else [`Coordinator::with_default_timeout`],
//!    [`DEFAULT_TIMEOUT`] unless set) is stopped: [`CallError::OutcomeUnknown`] (recorded
//!    `outcome_unknown`) when its tool may have a side effect (effect `write` or
//!    `destructive`, or a read tool that reported a commit or a change), else a plain
//!    [`CallError::Tool`] error (recorded `failed`) for a read. The coordinator never runs a
//!    stopped call again. The files the handler reports changing
//!    ([`ToolContext::record_change`]) are in the record as they are reported, also when the
//!    call then fails or is stopped.
//!
//! Calls can be cancelled through [`CallRequest::cancel`]: before the handler starts the call
//! ends [`CallError::Cancelled`]; a running handler is stopped, and the call is
//! [`CallError::Cancelled`] when its tool only reads, or [`CallError::OutcomeUnknown`] when its
//! side effect may have happened.
//!
//! With a call store ([`Coordinator::with_store`]) every call that passed step 1 is recorded, and
//! the record says `running` before the handler starts (see [`crate::records`] for the
//! lifecycle). A call whose outcome is unknown is never run again by the coordinator;
//! [`Coordinator::retry`] is the explicit way, for tools declared `idempotent` only. With a
//! result archive ([`Coordinator::with_archive`]) a result over its inline budget is stored and
//! the caller's text is a bounded preview with a reference.
//!
//! Limits of the model, on purpose: resources are exact keys (a directory and a file inside it do
//! not conflict; prepare steps name what they touch); the approval hook is called on the calling
//! task and should return promptly (a hook that waits for a person belongs on a thread that may
//! block); calls must be made inside a tokio runtime, since the handler runs on a task of its own.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultDirectRateLimiter, RateLimiter};
use serde_json::{json, Value};
use std::time::Instant;
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};
use tokio_util::sync::CancellationToken;
use toolcat_catalog::model::{EffectKind, Tier};
use tracing::Instrument as _;

use crate::archive::{ArchiveError, ArchiveOwner, Bounded, ResultArchive, ResultRef, ResultSlice};
use crate::arguments::DeclaredArguments;
use crate::catalog::exported_schema;
use crate::catalog::{Catalog, RateLimit, ToolIndex, ToolSource};
use crate::handler::{
    Access, CallScope, Caller, ErasedHandler, OnChange, Target, ToolContext, ToolError,
};
use crate::limits::{Acquire, RateLimitStore, TOOL_KEY};
use crate::records::{CallId, CallState, CallStore, NewCall, MAX_CHANGES};
use crate::remote_source::{Refusal, RemoteCall, RemoteOutcome, RemoteSource};
use crate::telemetry;

/// Most validation errors reported for one call: 10.
pub const MAX_VALIDATION_ERRORS: usize = 10;

/// How long a call may run once its handler starts when its row declares no `timeout_ms` and
/// the host sets no other default ([`Coordinator::with_default_timeout`]): 15 minutes, longer
/// than any local handler's own limit (`run_command` allows 600 s), so it only ends calls that
/// hang.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// A gated call waiting for the host's approval: the concrete operation.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalRequest<'a> {
    /// The catalog of the tool.
    pub catalog: &'a Catalog,
    /// The tool to run.
    pub tool: ToolIndex,
    /// Its arguments, already valid against its input schema.
    pub arguments: &'a Value,
    /// What the call will touch, as its prepare step resolved it: resources, read or write, and
    /// fingerprints of what is there now. The call runs only if they are still the same after
    /// the approval.
    pub targets: &'a [Target],
    /// The call's record, when the coordinator keeps records (it says `not_started` while the
    /// approval is asked).
    pub call: Option<CallId>,
}

/// The host's authorization hook: `true` lets the call run.
pub type ApprovalHook = Arc<dyn Fn(&ApprovalRequest<'_>) -> bool + Send + Sync>;

/// An owned copy of an [`ApprovalRequest`], for an approver that answers asynchronously (an
/// MCP client asked over `elicitation/create`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalPrompt {
    /// The tool's exported name.
    pub tool: String,
    /// Its arguments, already valid against its input schema.
    pub arguments: Value,
    /// What the call will touch (see [`ApprovalRequest::targets`]); re-verified after the
    /// answer exactly as for the hook.
    pub targets: Vec<Target>,
    /// The call's record, when the coordinator keeps records.
    pub call: Option<CallId>,
}

/// A per-call asynchronous approver ([`CallRequest::with_approver`]): answers `true` to let the
/// call run. It is asked at the permission step (after validation and prepare, before
/// scheduling and re-verify), after the coordinator's [`ApprovalHook`] when one is set: it can
/// refuse what the hook allowed, never allow what the hook refused.
#[derive(Clone)]
pub struct Approver(
    #[allow(clippy::type_complexity)]
    pub  Arc<
        dyn Fn(ApprovalPrompt) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>>
            + Send
            + Sync,
    >,
);

impl fmt::Debug for Approver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Approver(..)")
    }
}

/// One call handed to [`Coordinator::call`].
#[derive(Debug, Clone)]
pub struct CallRequest<'a> {
    /// The tool.
    pub tool: ToolIndex,
    /// Its arguments (a JSON object, checked against its input schema).
    pub arguments: Value,
    /// The caller's allowed set: a bitset over [`ToolIndex`] (bit `i` of word `i / 64`); a tool
    /// outside it never runs. A shorter slice allows nothing past its end.
    pub allowed: &'a [u64],
    /// Cancels the call when triggered.
    pub cancel: Option<CancellationToken>,
    /// Who may read the result back when it is archived (the caller's session);
    /// `None`: the coordinator's own owner ([`Coordinator::owner`]).
    pub owner: Option<ArchiveOwner>,
    /// Who makes the call, as the handler sees it ([`ToolContext::caller`]); `None`: not said.
    pub caller: Option<Arc<Caller>>,
    /// Asked instead of the coordinator's hook when the tool is `gated`; `None`: the hook.
    pub approver: Option<Approver>,
    /// The call this one is made from, stored as the record's `parent` (a Code Mode program's
    /// `run_code` call); `None`: the model's own call.
    pub parent: Option<CallId>,
}

impl<'a> CallRequest<'a> {
    /// A call of `tool` with `arguments`, allowed by `allowed`, not cancellable, its result
    /// archived (if at all) for the coordinator's own owner.
    pub fn new(tool: ToolIndex, arguments: Value, allowed: &'a [u64]) -> Self {
        CallRequest {
            tool,
            arguments,
            allowed,
            cancel: None,
            owner: None,
            caller: None,
            approver: None,
            parent: None,
        }
    }

    /// The same call made by `caller`: its handler (and prepare step) see it as
    /// [`ToolContext::caller`]. The MCP server sets it for every call it runs; a host calling the
    /// coordinator directly sets what it wants handlers to know.
    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = Some(Arc::new(caller));
        self
    }

    /// The same call, a `gated` tool's approval also asked of `approver` (awaited), after the
    /// coordinator's hook when one is set: a no from either is [`CallError::Denied`], and
    /// targets are re-verified after the answers.
    pub fn with_approver(mut self, approver: Approver) -> Self {
        self.approver = Some(approver);
        self
    }

    /// The same call, cancelled when `token` is.
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// The same call, recorded as made from call `parent` ([`crate::CallRecord::parent`]).
    pub fn with_parent(mut self, parent: CallId) -> Self {
        self.parent = Some(parent);
        self
    }

    /// The same call, its result archived (when over the inline budget) for `owner` only: a
    /// caller shared by several sessions gives each its own, so none reads another's results.
    pub fn with_owner(mut self, owner: ArchiveOwner) -> Self {
        self.owner = Some(owner);
        self
    }
}

/// A result archived because it was over the inline budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchivedResult {
    /// The reference `read_tool_result` reads it back by.
    pub reference: String,
    /// Length of the whole result text, in bytes.
    pub bytes: usize,
    /// The bounded preview the model reads.
    pub preview: String,
}

/// What a successful call returned.
#[derive(Debug, Clone, PartialEq)]
pub struct CallValue {
    /// The whole JSON result.
    pub value: Value,
    /// What a model reads: the compact JSON text, or, when archived, a preview with the
    /// reference (see [`ArchivedResult`]).
    pub text: String,
    /// Set when the result went to the archive.
    pub archived: Option<ArchivedResult>,
}

/// Why a call did not return a result. Each message names the cause and what to do next.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The tool is outside the caller's allowed set; nothing ran.
    #[error("tool `{tool}` is outside the scope of this caller; nothing ran; call a tool this caller was offered (its plan, or the server's tools/list)")]
    OutsideScope { tool: String },
    /// The arguments do not fit the input JSON Schema; nothing ran.
    #[error("invalid arguments for `{tool}`: {}; nothing ran; fix the arguments to fit the tool's input schema", summary(.errors))]
    InvalidArguments {
        tool: String,
        /// `{"instancePath","message"}` objects, at most [`MAX_VALIDATION_ERRORS`].
        errors: Vec<Value>,
        /// The input schema as exported ([`exported_schema`]).
        input_schema: Value,
    },
    /// A gated tool and no approval hook; nothing ran.
    #[error("tool `{tool}` is gated: it needs approval, and no approval hook is set; nothing ran; run it where an approval hook can ask for consent")]
    NeedsApproval { tool: String },
    /// The approval hook said no; nothing ran.
    #[error("approval for `{tool}` was denied; nothing ran")]
    Denied { tool: String },
    /// A target differs from what the approval saw (or the targets moved); nothing ran.
    #[error("`{resource}` changed after `{tool}` was approved (approved: {}, now: {}); nothing ran; call it again to ask for approval of what is there now", shown(.approved), shown(.now))]
    TargetChanged {
        tool: String,
        resource: String,
        /// Fingerprint (or `read`/`write` access) the approval saw; `None`: not a target then.
        approved: Option<String>,
        /// What is there now; `None`: no longer a target.
        now: Option<String>,
    },
    /// Over the tool's declared `rate_limit`; nothing ran.
    #[error("tool `{tool}` is over its rate limit of {calls} calls per {window_secs} s; nothing ran; retry in {retry_after_ms} ms")]
    RateLimited {
        tool: String,
        calls: u32,
        window_secs: u32,
        /// Milliseconds until a call is allowed again.
        retry_after_ms: u64,
    },
    /// Cancelled, with no side effect (before it ran, or a read-only tool).
    #[error("the call of `{tool}` was cancelled; it had no side effect; call it again if it is still needed")]
    Cancelled { tool: String },
    /// The call stopped in a way that leaves its side effect unknown (cancelled or crashed while
    /// running a tool that writes). Never replayed automatically.
    #[error("the call of `{tool}` {reason}; its side effect may or may not have happened; check before calling it again (it is never replayed automatically)")]
    OutcomeUnknown { tool: String, reason: String },
    /// Retry refused (see [`Coordinator::retry`]).
    #[error("cannot retry call `{call}`: {reason}")]
    NotRetryable { call: String, reason: String },
    /// The tool's MCP server is not connected (still connecting, failed, or not started in this
    /// process); nothing was sent. Only with a remote source ([`Coordinator::with_remote`]);
    /// without one a server tool is [`ToolError::ServerNotConnected`].
    #[error(
        "tool `{tool}` is served by MCP server `{server}`, which is {status}; nothing ran; {hint}"
    )]
    ServerNotConnected {
        tool: String,
        server: String,
        /// Where the connection is, with the last error (configured values redacted).
        status: String,
        /// What to do.
        hint: String,
    },
    /// The server's input schema of the tool is no longer the row's `input_schema` (or the
    /// server no longer lists the tool); nothing was sent.
    #[error("tool `{tool}` of MCP server `{server}` changed since its row was checked: {change}; nothing ran; refresh the row from the server (`toolcat check --live` shows the change; `toolcat import --from-server {server}` prints that server's rows alone, to copy over the old ones — do not redirect it onto tools.toml), then reload the catalog")]
    SchemaDrift {
        tool: String,
        server: String,
        /// The change, e.g. "property `timezone` added (required)".
        change: String,
    },
    /// The tool itself failed, or cannot run here.
    #[error(transparent)]
    Tool(ToolError),
    /// The call record, or the state of the tool's rate limit, could not be written before the
    /// call; nothing ran.
    #[error("the call store could not be written ({0}); nothing ran; check the call store")]
    Store(String),
}

fn summary(errors: &[Value]) -> String {
    let parts: Vec<String> = errors
        .iter()
        .map(|e| {
            let path = e["instancePath"].as_str().unwrap_or("");
            let message = e["message"].as_str().unwrap_or("");
            if path.is_empty() {
                message.to_string()
            } else {
                format!("`{path}`: {message}")
            }
        })
        .collect();
    parts.join("; ")
}

fn shown(fingerprint: &Option<String>) -> String {
    match fingerprint {
        Some(f) => format!("`{f}`"),
        None => "not a target".to_string(),
    }
}

impl CallError {
    /// The state the call store records for a call that ended with this error: `cancelled`,
    /// `outcome_unknown`, or `failed` for every other error (refusals included).
    pub fn final_state(&self) -> CallState {
        match self {
            CallError::Cancelled { .. } => CallState::Cancelled,
            CallError::OutcomeUnknown { .. } => CallState::OutcomeUnknown,
            _ => CallState::Failed,
        }
    }

    /// A kebab-case word for the error: `outside-scope`, `invalid-arguments`, `needs-approval`,
    /// `denied`, `target-changed`, `rate-limited`, `cancelled`, `outcome-unknown`,
    /// `not-retryable`, `server-not-connected`, `schema-drift`, `tool-error`, `store`.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::OutsideScope { .. } => "outside-scope",
            CallError::InvalidArguments { .. } => "invalid-arguments",
            CallError::NeedsApproval { .. } => "needs-approval",
            CallError::Denied { .. } => "denied",
            CallError::TargetChanged { .. } => "target-changed",
            CallError::RateLimited { .. } => "rate-limited",
            CallError::Cancelled { .. } => "cancelled",
            CallError::OutcomeUnknown { .. } => "outcome-unknown",
            CallError::NotRetryable { .. } => "not-retryable",
            CallError::ServerNotConnected { .. } => "server-not-connected",
            CallError::SchemaDrift { .. } => "schema-drift",
            CallError::Tool(_) => "tool-error",
            CallError::Store(_) => "store",
        }
    }

    /// The error as structured JSON: `{"error": KIND, "message": TEXT}` plus, by kind,
    /// `"errors"` and `"inputSchema"` (invalid arguments), `"retryAfterMs"` (rate limited),
    /// `"resource"` (target changed), `"server"` (server not connected, schema drift).
    pub fn to_json(&self) -> Value {
        let mut v = json!({"error": self.kind(), "message": self.to_string()});
        match self {
            CallError::InvalidArguments {
                errors,
                input_schema,
                ..
            } => {
                v["errors"] = Value::Array(errors.clone());
                v["inputSchema"] = input_schema.clone();
            }
            CallError::RateLimited { retry_after_ms, .. } => {
                v["retryAfterMs"] = json!(retry_after_ms);
            }
            CallError::TargetChanged { resource, .. } => {
                v["resource"] = json!(resource);
            }
            CallError::ServerNotConnected { server, .. }
            | CallError::SchemaDrift { server, .. } => {
                v["server"] = json!(server);
            }
            _ => {}
        }
        v
    }
}

/// What [`Coordinator::call`] came to.
#[derive(Debug)]
pub struct CallOutcome {
    /// The tool called.
    pub tool: ToolIndex,
    /// The call's record, when the coordinator keeps records and the call got one (every call
    /// that passed scope, validation and the rate limit).
    pub call: Option<CallId>,
    /// Whether the handler was started (the only way a call has effects).
    pub ran: bool,
    /// The result, or why there is none.
    pub result: Result<CallValue, CallError>,
    /// A record or archive write that failed after the handler ran (the result stands; the
    /// record may not show the final state).
    pub record_error: Option<String>,
}

impl CallOutcome {
    /// What a model reads: the result's text, or the error's message.
    pub fn text(&self) -> String {
        match &self.result {
            Ok(v) => v.text.clone(),
            Err(e) => e.to_string(),
        }
    }

    /// Whether the call failed (MCP `isError`).
    pub fn is_error(&self) -> bool {
        self.result.is_err()
    }
}

/// Per-catalog state: validators, declared argument names and rate limiters, one slot per tool.
struct PerTool {
    validators: Vec<OnceLock<Result<jsonschema::Validator, String>>>,
    declared: Vec<OnceLock<DeclaredArguments>>,
    limiters: Vec<Option<DefaultDirectRateLimiter>>,
}

impl PerTool {
    fn new(catalog: &Catalog) -> PerTool {
        PerTool {
            validators: (0..catalog.len()).map(|_| OnceLock::new()).collect(),
            declared: (0..catalog.len()).map(|_| OnceLock::new()).collect(),
            limiters: catalog
                .tools()
                .map(|t| catalog.rate_limit(t).and_then(limiter))
                .collect(),
        }
    }
}

/// A GCRA limiter allowing `calls` per window, all of them at once at most, with the parameters
/// the stores' limits use ([`crate::limits`]).
fn limiter(limit: RateLimit) -> Option<DefaultDirectRateLimiter> {
    Some(RateLimiter::direct(crate::limits::quota(limit)?))
}

/// The resource locks shared by every call of a coordinator (and of its
/// [`Coordinator::for_catalog`] copies).
#[derive(Default)]
struct ResourceLocks {
    map: Mutex<HashMap<String, Arc<RwLock<()>>>>,
}

enum Held {
    #[allow(dead_code)]
    Read(OwnedRwLockReadGuard<()>),
    #[allow(dead_code)]
    Write(OwnedRwLockWriteGuard<()>),
}

/// The locks of one call; released (and unused entries pruned) on drop.
struct Guards {
    held: Vec<Held>,
    keys: Vec<String>,
    locks: Arc<ResourceLocks>,
}

impl Drop for Guards {
    fn drop(&mut self) {
        self.held.clear();
        if let Ok(mut map) = self.locks.map.lock() {
            for key in &self.keys {
                // Only the map holds it: no call holds or waits for this lock.
                if map.get(key).is_some_and(|l| Arc::strong_count(l) == 1) {
                    map.remove(key);
                }
            }
        }
    }
}

impl ResourceLocks {
    /// The resources of `targets` with the strongest access each, in canonical (sorted) order.
    fn plan(targets: &[Target]) -> BTreeMap<String, Access> {
        let mut wanted: BTreeMap<String, Access> = BTreeMap::new();
        for t in targets {
            let a = wanted.entry(t.resource.clone()).or_insert(t.access);
            *a = (*a).max(t.access);
        }
        wanted
    }

    /// Locks every resource of `targets`, in sorted order; `None` when cancelled first.
    async fn acquire(
        self: &Arc<Self>,
        targets: &[Target],
        cancel: &CancellationToken,
    ) -> Option<Guards> {
        let wanted = ResourceLocks::plan(targets);
        let mut guards = Guards {
            held: Vec::with_capacity(wanted.len()),
            keys: wanted.keys().cloned().collect(),
            locks: Arc::clone(self),
        };
        for (key, access) in wanted {
            let lock = match self.map.lock() {
                Ok(mut map) => Arc::clone(map.entry(key).or_default()),
                // A poisoned map only means another call panicked while inserting; the locks
                // themselves are intact.
                Err(poisoned) => Arc::clone(poisoned.into_inner().entry(key).or_default()),
            };
            let held = match access {
                Access::Read => tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return None,
                    g = lock.read_owned() => Held::Read(g),
                },
                Access::Write => tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return None,
                    g = lock.write_owned() => Held::Write(g),
                },
            };
            guards.held.push(held);
        }
        Some(guards)
    }
}

/// Runs tool calls through the pipeline of the module docs.
///
/// `Send + Sync`; every method takes `&self`, so one coordinator (in an `Arc`, or cloned: clones
/// share the resource locks, rate limiters and validators) serves any number of concurrent
/// callers. Holds its catalog by reference: a session's catalog, or a `&'static Catalog` for a
/// server.
#[derive(Clone)]
pub struct Coordinator<'c> {
    catalog: &'c Catalog,
    context: ToolContext,
    approval: Option<ApprovalHook>,
    store: Option<Arc<CallStore>>,
    archive: Option<Arc<ResultArchive>>,
    /// The owner of the archived results of calls that name none.
    owner: ArchiveOwner,
    per_tool: Arc<PerTool>,
    locks: Arc<ResourceLocks>,
    /// Where the calls of server tools go, when set.
    remote: Option<Arc<dyn RemoteSource>>,
    /// Where the rate limits' state lives, when set apart from the call store.
    limits: Option<Arc<dyn RateLimitStore>>,
    /// The timeout of calls whose row declares none; `None`: no limit.
    default_timeout: Option<Duration>,
}

/// What runs a call: a local handler, or a remote server's connection.
enum Runner {
    Local(ErasedHandler),
    Remote(RemoteCall),
}

impl fmt::Debug for Coordinator<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coordinator")
            .field("catalog", &self.catalog)
            .field("context", &self.context)
            .field("approval", &self.approval.is_some())
            .finish_non_exhaustive()
    }
}

impl<'c> Coordinator<'c> {
    /// A coordinator of `catalog` whose local tools run in `context`; no approval hook (gated
    /// tools are refused).
    pub fn new(catalog: &'c Catalog, context: ToolContext) -> Self {
        Coordinator {
            catalog,
            context,
            approval: None,
            store: None,
            archive: None,
            owner: ArchiveOwner::new(),
            per_tool: Arc::new(PerTool::new(catalog)),
            locks: Arc::default(),
            remote: None,
            limits: None,
            default_timeout: Some(DEFAULT_TIMEOUT),
        }
    }

    /// The longest a call may run once its handler starts when its row declares no
    /// `timeout_ms` ([`DEFAULT_TIMEOUT`] unless set); `None`: no limit for such calls. A row's
    /// `timeout_ms` always applies. See step 6 of the module docs for what a stopped call is.
    pub fn with_default_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// How long a call of `t` may run once its handler starts: the row's `timeout_ms`, else the
    /// default ([`Coordinator::with_default_timeout`]); `None`: no limit.
    pub fn timeout(&self, t: ToolIndex) -> Option<Duration> {
        self.catalog.timeout(t).or(self.default_timeout)
    }

    /// Sends the calls of server tools (`source = "NAME"`) to `source`: a call is refused with
    /// [`CallError::ServerNotConnected`] while its server is not connected, and with
    /// [`CallError::SchemaDrift`] when the server's input schema of the tool differs from the
    /// row's ([`RemoteSource::check`], before permission and again under the locks); otherwise
    /// it is sent under the server's own name ([`Catalog::remote_name`]). A call whose connection breaks or
    /// times out after it was sent ends [`CallError::OutcomeUnknown`] (recorded
    /// `outcome_unknown`, never replayed); an error the server reports is a [`CallError::Tool`]
    /// leading with the server's text.
    pub fn with_remote(mut self, source: Arc<dyn RemoteSource>) -> Self {
        self.remote = Some(source);
        self
    }

    /// [`Coordinator::with_remote`] with `pool`'s connections (checked against the pool's latest
    /// `tools/list` before each call).
    #[cfg(feature = "mcp-client")]
    pub fn with_servers(self, pool: Arc<crate::remote::ServerPool>) -> Self {
        self.with_remote(pool)
    }

    /// Where the calls of server tools go, when set.
    pub fn remote_source(&self) -> Option<&Arc<dyn RemoteSource>> {
        self.remote.as_ref()
    }

    /// Keeps a record of every call in `store` (see [`crate::records`]): `not_started` once the
    /// call is in scope, valid and within its rate limit; `running` before the handler starts;
    /// `committed` when the handler calls [`ToolContext::committed`]; then `succeeded`,
    /// `failed`, `cancelled` or `outcome_unknown`. A call refused after it was recorded ends
    /// `failed` (or `cancelled`) with a detail starting `nothing ran:`. The files a handler
    /// reports changing ([`ToolContext::record_change`]) are appended to the record as they are
    /// reported, whatever the call then comes to; a diff too large for the record is archived
    /// whole when there is an archive ([`Coordinator::with_archive`]), for the same owner as the
    /// call's results ([`crate::Change::diff_reference`]).
    ///
    /// A store on a file also holds the state of the tools' rate limits (table `rate_limits`,
    /// [`crate::limits`]), unless [`Coordinator::with_rate_limits`] puts it elsewhere: every
    /// process with a store on the same file shares each `rate_limit`. An in-memory store does
    /// not; the coordinator's in-memory limiter answers then, as with no store.
    pub fn with_store(mut self, store: Arc<CallStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Keeps the state of the tools' rate limits in `limits` (for instance another
    /// [`CallStore`], such as a PostgreSQL database shared by replicas), whatever the call store: every call of a tool with a `rate_limit` first takes one call from it there
    /// ([`RateLimitStore::acquire`], key [`TOOL_KEY`]); a refusal is
    /// [`CallError::RateLimited`], a failure of the store [`CallError::Store`], and nothing runs.
    pub fn with_rate_limits(mut self, limits: Arc<dyn RateLimitStore>) -> Self {
        self.limits = Some(limits);
        self
    }

    /// Where the rate limits' state is shared with other processes, if anywhere: the store of
    /// [`Coordinator::with_rate_limits`], else a call store on a file or in PostgreSQL.
    fn shared_limits(&self) -> Option<&dyn RateLimitStore> {
        match (&self.limits, &self.store) {
            (Some(limits), _) => Some(&**limits),
            (None, Some(store)) if store.path().is_some() || store.replica().is_some() => {
                Some(&**store)
            }
            _ => None,
        }
    }

    /// Archives results over the archive's inline budget: the caller's
    /// [`CallValue::text`] is then a bounded preview and a reference
    /// ([`Bounded::to_model_text`]), read back by the request's owner
    /// ([`CallRequest::with_owner`], [`ResultArchive::read`]), or, for a request that names
    /// none, with [`Coordinator::read_result`].
    pub fn with_archive(mut self, archive: Arc<ResultArchive>) -> Self {
        self.archive = Some(archive);
        self
    }

    /// The call store, when set.
    pub fn store(&self) -> Option<&Arc<CallStore>> {
        self.store.as_ref()
    }

    /// The result archive, when set.
    pub fn archive(&self) -> Option<&Arc<ResultArchive>> {
        self.archive.as_ref()
    }

    /// The owner of the archived results of requests that name none (one per coordinator,
    /// shared by its clones and [`Coordinator::for_catalog`]).
    pub fn owner(&self) -> ArchiveOwner {
        self.owner
    }

    /// Registers `value` as application state of type `T` (replacing one of the same type): every
    /// call's [`ToolContext`] shares it, and a `#[tool]` handler reads it with
    /// [`ToolContext::state`] or a third parameter `State(v): State<T>` ([`crate::State`]). A
    /// handler that needs state nobody registered fails with [`ToolError::MissingState`], naming
    /// the type. Shared by clones and [`Coordinator::for_catalog`].
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.context = self.context.with_state(value);
        self
    }

    /// The same coordinator with its local tools running in `workspace` (application state kept).
    pub fn with_workspace(mut self, workspace: impl Into<std::path::PathBuf>) -> Self {
        self.context.workspace = workspace.into();
        self
    }

    /// Sets the approval hook asked before each call of a `gated` tool.
    pub fn with_approval(
        mut self,
        hook: impl Fn(&ApprovalRequest<'_>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.approval = Some(Arc::new(hook));
        self
    }

    /// Sets or clears the approval hook.
    pub fn with_approval_hook(mut self, hook: Option<ApprovalHook>) -> Self {
        self.approval = hook;
        self
    }

    /// The same coordinator for another catalog (a reloaded `tools.toml`): shares the context,
    /// hook, store, archive and resource locks; validators and rate limiters start afresh.
    pub fn for_catalog<'d>(&self, catalog: &'d Catalog) -> Coordinator<'d> {
        Coordinator {
            catalog,
            context: self.context.clone(),
            approval: self.approval.clone(),
            store: self.store.clone(),
            archive: self.archive.clone(),
            owner: self.owner,
            per_tool: Arc::new(PerTool::new(catalog)),
            locks: Arc::clone(&self.locks),
            remote: self.remote.clone(),
            limits: self.limits.clone(),
            default_timeout: self.default_timeout,
        }
    }

    /// The catalog.
    pub fn catalog(&self) -> &'c Catalog {
        self.catalog
    }

    /// The context local tools run in.
    pub fn context(&self) -> &ToolContext {
        &self.context
    }

    /// Whether an approval hook is set.
    pub fn has_approval(&self) -> bool {
        self.approval.is_some()
    }

    /// Validation errors of `arguments` against the input schema of `t`, at most
    /// [`MAX_VALIDATION_ERRORS`], as `{"instancePath","message"}`; empty when valid. Top-level
    /// arguments the schema does not declare come first (see step 1 of the module docs and
    /// [`crate::arguments`]), then the JSON Schema validator's errors.
    pub fn validation_errors(&self, t: ToolIndex, arguments: &Value) -> Vec<Value> {
        let catalog = self.catalog;
        let (Some(slot), Some(declared)) = (
            self.per_tool.validators.get(t.index()),
            self.per_tool.declared.get(t.index()),
        ) else {
            return vec![
                json!({"instancePath": "", "message": format!("no tool {} in this catalog", t.index())}),
            ];
        };
        let validator = slot.get_or_init(|| {
            jsonschema::validator_for(catalog.input_schema(t)).map_err(|e| e.to_string())
        });
        match validator {
            Ok(v) => {
                let unknown = declared
                    .get_or_init(|| DeclaredArguments::of(catalog.input_schema(t)))
                    .errors(arguments);
                // A top-level `additionalProperties` error names the same arguments again.
                let repeats = |e: &jsonschema::ValidationError| {
                    !unknown.is_empty()
                        && e.instance_path().as_str().is_empty()
                        && matches!(
                            e.kind(),
                            jsonschema::error::ValidationErrorKind::AdditionalProperties { .. }
                        )
                };
                let schema_errors = v.iter_errors(arguments).filter(|e| !repeats(e)).map(
                    |e| json!({"instancePath": e.instance_path().as_str(), "message": e.to_string()}),
                );
                unknown
                    .iter()
                    .cloned()
                    .chain(schema_errors)
                    .take(MAX_VALIDATION_ERRORS)
                    .collect()
            }
            Err(message) => vec![json!({
                "instancePath": "",
                "message": format!(
                    "the input schema of `{}` is not a valid JSON Schema ({message}), so no call can be checked and none runs; fix the schema",
                    catalog.exported_name(t)
                ),
            })],
        }
    }

    /// What runs `t` here, or why nothing does.
    fn dispatch(&self, t: ToolIndex) -> Result<Runner, CallError> {
        let c = self.catalog;
        match c.source(t) {
            ToolSource::Local => c
                .handler(t)
                .copied()
                .map(Runner::Local)
                .ok_or_else(|| CallError::Tool(ToolError::NoHandler(c.name(t).to_string()))),
            ToolSource::Loop => Err(CallError::Tool(ToolError::MetaTool(c.name(t).to_string()))),
            ToolSource::Server(s) if self.remote.is_some() => {
                self.remote_call(t, s).map(Runner::Remote)
            }
            ToolSource::Server(s) => Err(CallError::Tool(ToolError::ServerNotConnected {
                tool: c.exported_name(t).to_string(),
                server: c.server_name(s).to_string(),
            })),
        }
    }

    /// The call of server tool `t` to send, or why it is not sent.
    fn remote_call(
        &self,
        t: ToolIndex,
        s: crate::catalog::ServerId,
    ) -> Result<RemoteCall, CallError> {
        let c = self.catalog;
        let server = c.server_name(s);
        let Some(source) = &self.remote else {
            return Err(CallError::Tool(ToolError::ServerNotConnected {
                tool: c.exported_name(t).to_string(),
                server: server.to_string(),
            }));
        };
        source
            .check(server, c.remote_name(t), c.input_schema(t))
            .map_err(|refusal| refusal_error(c.exported_name(t), server, refusal))
    }

    /// Takes one call from the rate limit of `t`: in the shared store when there is one
    /// ([`Coordinator::shared_limits`]), else from this coordinator's in-memory limiter.
    async fn check_rate(&self, t: ToolIndex) -> Result<(), CallError> {
        let Some(limit) = self.catalog.rate_limit(t) else {
            return Ok(());
        };
        let tool = self.catalog.exported_name(t);
        let refused = |retry_after_ms: u64| CallError::RateLimited {
            tool: tool.to_string(),
            calls: limit.calls,
            window_secs: limit.window_secs,
            retry_after_ms,
        };
        if let Some(shared) = self.shared_limits() {
            return match shared.acquire(tool, TOOL_KEY, limit).await {
                Ok(Acquire::Granted) => Ok(()),
                Ok(Acquire::Refused { retry_after_ms }) => Err(refused(retry_after_ms)),
                Err(e) => Err(CallError::Store(format!("the rate limit of `{tool}`: {e}"))),
            };
        }
        let Some(Some(limiter)) = self.per_tool.limiters.get(t.index()) else {
            return Ok(());
        };
        limiter.check().map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            refused(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1))
        })
    }

    /// Runs one call through the pipeline (see the module docs) and says what it came to.
    pub async fn call(&self, request: CallRequest<'_>) -> CallOutcome {
        self.run(request, None).await
    }

    /// Runs call `id` again, as a new call recorded with `retry_of = id`, through the whole
    /// pipeline (scope, validation, approval, ...), with the recorded arguments.
    ///
    /// Calls are never replayed automatically; this is the explicit policy: only a finished call
    /// (`failed`, `cancelled` or `outcome_unknown`) of a tool declared `idempotent` (so running
    /// it twice has no further effect), whose arguments were stored whole.
    ///
    /// # Errors
    /// [`CallError::NotRetryable`] naming why (no call store, no such call, the call is still
    /// open or succeeded, the tool is unknown or not idempotent, the arguments were truncated);
    /// nothing runs then.
    pub async fn retry(
        &self,
        id: CallId,
        allowed: &[u64],
        cancel: Option<CancellationToken>,
    ) -> Result<CallOutcome, CallError> {
        let refuse = |reason: String| CallError::NotRetryable {
            call: id.to_string(),
            reason,
        };
        let Some(store) = &self.store else {
            return Err(refuse(
                "this coordinator keeps no call records; open it with a call store".to_string(),
            ));
        };
        let record = match store.get(id) {
            Ok(Some(record)) => record,
            Ok(None) => {
                return Err(refuse(format!(
                    "there is no call `{id}`; list the calls with `toolcat calls`"
                )))
            }
            Err(e) => return Err(refuse(e.to_string())),
        };
        if !matches!(
            record.state,
            CallState::Failed | CallState::Cancelled | CallState::OutcomeUnknown
        ) {
            return Err(refuse(format!(
                "it is `{}`; only a `failed`, `cancelled` or `outcome_unknown` call can be retried",
                record.state
            )));
        }
        let t = match self.catalog.tool(&record.tool) {
            Ok(t) => t,
            Err(e) => return Err(refuse(e.to_string())),
        };
        if !self.catalog.effect(t).idempotent {
            return Err(refuse(format!(
                "tool `{}` is not declared `idempotent`, so running it again may repeat its side                  effect; find out what happened and make a new call if needed",
                record.tool
            )));
        }
        if record.arguments_truncated {
            return Err(refuse(
                "its arguments were too large to be recorded whole; make a new call".to_string(),
            ));
        }
        let request = CallRequest {
            tool: t,
            arguments: record.arguments,
            allowed,
            cancel,
            owner: None,
            caller: None,
            approver: None,
            parent: None,
        };
        Ok(self.run(request, Some(id)).await)
    }

    /// Reads `length` characters from character `offset` of the archived result `reference` of
    /// a request that named no owner (see [`ResultArchive::read`]; the results of a request
    /// with an owner are read with that owner).
    ///
    /// # Errors
    /// [`ArchiveError`] as [`ResultArchive::read`]; without an archive every reference is
    /// unknown ([`ArchiveError::UnknownReference`], or [`ArchiveError::BadReference`] when it is
    /// not a reference at all).
    pub fn read_result(
        &self,
        reference: &str,
        offset: usize,
        length: usize,
    ) -> Result<ResultSlice, ArchiveError> {
        match &self.archive {
            Some(archive) => archive.read(self.owner, reference, offset, length),
            // Nothing was ever archived here: a well-formed reference is unknown.
            None => Err(match reference.parse::<ResultRef>() {
                Ok(reference) => ArchiveError::UnknownReference { reference },
                Err(_) => ArchiveError::BadReference {
                    given: reference.to_string(),
                },
            }),
        }
    }

    /// [`Coordinator::recorded`] inside the call's span, its end in the metrics
    /// ([`crate::telemetry`]).
    async fn run(&self, request: CallRequest<'_>, retry_of: Option<CallId>) -> CallOutcome {
        // An index past the catalog is refused by the pipeline; it names no tool here either.
        let tool = if request.tool.index() < self.catalog.len() {
            self.catalog.exported_name(request.tool)
        } else {
            "(outside the catalog)"
        };
        let span = telemetry::call_span(tool, request.caller.as_deref());
        let started = Instant::now();
        let outcome = self
            .recorded(request, retry_of)
            .instrument(span.clone())
            .await;
        let end = telemetry::CallEnd {
            call: outcome.call,
            state: match &outcome.result {
                Ok(_) => CallState::Succeeded,
                Err(e) => e.final_state(),
            },
            error: outcome.result.as_ref().err().map_or("none", |e| e.kind()),
            rate_limited: matches!(outcome.result, Err(CallError::RateLimited { .. })),
        };
        telemetry::call_ended(&span, tool, end, started.elapsed());
        outcome
    }

    async fn recorded(&self, request: CallRequest<'_>, retry_of: Option<CallId>) -> CallOutcome {
        let t = request.tool;
        let mut record = Record {
            store: self.store.clone(),
            id: None,
            error: None,
        };
        let (ran, result) = self.pipeline(request, retry_of, &mut record).await;
        if let (Err(e), false) = (&result, ran) {
            // Refused before the handler started: the record (if one was begun) says why.
            record.set(e.final_state(), Some(&format!("nothing ran: {e}")));
        }
        CallOutcome {
            tool: t,
            call: record.id,
            ran,
            result,
            record_error: record.error,
        }
    }

    async fn pipeline(
        &self,
        request: CallRequest<'_>,
        retry_of: Option<CallId>,
        record: &mut Record,
    ) -> (bool, Result<CallValue, CallError>) {
        let CallRequest {
            tool: t,
            arguments,
            allowed,
            cancel,
            owner,
            caller,
            approver,
            parent,
        } = request;
        let c = self.catalog;
        // The context of this call's prepare step and handler: the coordinator's, with the caller.
        let context = self.context.clone().with_caller(caller);
        let cancel = cancel.unwrap_or_default();
        let i = t.index();
        let in_scope = i < c.len()
            && allowed
                .get(i / 64)
                .is_some_and(|w| w & (1u64 << (i % 64)) != 0);
        if !in_scope {
            let tool = if i < c.len() {
                c.exported_name(t).to_string()
            } else {
                format!("#{i}")
            };
            return (false, Err(CallError::OutsideScope { tool }));
        }
        let name = c.exported_name(t).to_string();

        // 1. Validate; then the rate limit. Calls refused here leave no record. A local tool
        // without a handler has no input schema of its own to check against: it is refused as
        // `no handler` at step 2, not for arguments the missing schema cannot declare.
        let unhandled = matches!(c.source(t), ToolSource::Local) && c.handler(t).is_none();
        let errors = if unhandled {
            Vec::new()
        } else {
            self.validation_errors(t, &arguments)
        };
        if !errors.is_empty() {
            return (
                false,
                Err(CallError::InvalidArguments {
                    tool: name,
                    errors,
                    input_schema: exported_schema(c, t),
                }),
            );
        }
        if let Err(e) = self.check_rate(t).await {
            return (false, Err(e));
        }
        if let Some(store) = &self.store {
            let effect = c.effect(t);
            let new = NewCall {
                tool: &name,
                arguments: &arguments,
                effect: effect.kind.as_str(),
                idempotent: effect.idempotent,
                retry_of,
                parent,
            };
            match store.begin(new) {
                Ok(id) => record.id = Some(id),
                Err(e) => return (false, Err(CallError::Store(e.to_string()))),
            }
        }
        if cancel.is_cancelled() {
            return (false, Err(CallError::Cancelled { tool: name }));
        }

        // 2. Prepare. A tool that cannot run here has no targets; it is refused after the
        // permission step, so a gated tool is never reported as anything but gated to a caller
        // without approval.
        let handler = self.dispatch(t);
        let targets = match &handler {
            Ok(Runner::Local(h)) => match (h.prepare)(&arguments, &context) {
                Ok(targets) => targets,
                Err(e) => return (false, Err(CallError::Tool(e))),
            },
            _ => Vec::new(),
        };

        // 3. Permission.
        let gated = c.tier(t) == Tier::Gated;
        if gated {
            let request = ApprovalRequest {
                catalog: c,
                tool: t,
                arguments: &arguments,
                targets: &targets,
                call: record.id,
            };
            // The host's hook, when set, always decides first: a per-call approver (a client's
            // elicitation) can add a refusal, never lift one.
            match (&self.approval, &approver) {
                (None, None) => return (false, Err(CallError::NeedsApproval { tool: name })),
                (Some(hook), _) if !hook(&request) => {
                    return (false, Err(CallError::Denied { tool: name }))
                }
                _ => {}
            }
            if let Some(approver) = approver {
                let prompt = ApprovalPrompt {
                    tool: name.clone(),
                    arguments: arguments.clone(),
                    targets: targets.clone(),
                    call: record.id,
                };
                let answer = tokio::select! {
                    yes = (approver.0)(prompt) => yes,
                    () = cancel.cancelled() => return (false, Err(CallError::Cancelled { tool: name })),
                };
                if !answer {
                    return (false, Err(CallError::Denied { tool: name }));
                }
            }
        }
        let handler = match handler {
            Ok(h) => h,
            Err(e) => return (false, Err(e)),
        };

        // 4. Schedule.
        let Some(guards) = self.locks.acquire(&targets, &cancel).await else {
            return (false, Err(CallError::Cancelled { tool: name }));
        };

        // 5. Re-verify under the locks; a server tool's connection and schema are checked
        // again (the approval may have taken a while).
        let handler = match handler {
            Runner::Local(h) => {
                let now = match (h.prepare)(&arguments, &context) {
                    Ok(now) => now,
                    Err(e) => return (false, Err(CallError::Tool(e))),
                };
                if let Some(e) = changed(&name, &targets, &now, gated) {
                    return (false, Err(e));
                }
                Runner::Local(h)
            }
            Runner::Remote(_) => match self.dispatch(t) {
                Ok(runner) => runner,
                Err(e) => return (false, Err(e)),
            },
        };

        // 6. Execute. The record says `running` before the handler starts, so a process killed
        // during the call leaves `running`, never `succeeded`.
        if !record.set(CallState::Running, None) {
            let e = record.error.take().unwrap_or_default();
            return (false, Err(CallError::Store(e)));
        }
        let on_commit: Option<Box<dyn Fn() + Send + Sync>> = match (&self.store, record.id) {
            (Some(store), Some(id)) => {
                let store = Arc::clone(store);
                Some(Box::new(move || {
                    // A failed write leaves `running`, which a crash would leave too; the final
                    // state is written after the handler either way.
                    let _ = store.set_state(id, CallState::Committed, None);
                }))
            }
            _ => None,
        };
        let owner = owner.unwrap_or(self.owner);
        let on_change = match (&self.store, record.id) {
            (Some(store), Some(id)) => {
                Some(self.change_keeper(Arc::clone(store), id, owner, &name))
            }
            _ => None,
        };
        let scope = CallScope::new(cancel.clone(), on_commit, on_change);
        let ctx = context.for_call(Arc::clone(&scope));
        let finish = Finish {
            store: self.store.clone(),
            archive: self.archive.clone(),
            owner,
            id: record.id,
            tool: name.clone(),
        };
        // The handler runs on a task of its own that holds the locks and writes the final
        // record, so a caller that goes away cannot release the locks while the handler still
        // runs, nor leave a finished call `running`.
        let task = match handler {
            Runner::Local(handler) => {
                let call = handler.call;
                tokio::spawn(async move {
                    let _guards = guards;
                    let result = call(arguments, &ctx).await;
                    finish.finish(result)
                })
            }
            // Sent once: a broken connection after the request left ends `outcome_unknown`,
            // and nothing here sends it again.
            Runner::Remote(remote) => {
                let server = match c.source(t) {
                    ToolSource::Server(s) => c.server_name(s).to_string(),
                    _ => String::new(),
                };
                tokio::spawn(async move {
                    let _guards = guards;
                    match remote(arguments).await {
                        RemoteOutcome::Done(result) => finish.finish(result),
                        RemoteOutcome::Unknown(reason) => finish.unknown(reason),
                        RemoteOutcome::Refused(refusal) => {
                            let e = refusal_error(&finish.tool, &server, refusal);
                            finish.refused(e)
                        }
                    }
                })
            }
        };
        let (ran, result) = self
            .await_handler(t, &name, &scope, task, cancel, record)
            .await;
        // A change the handler reported that could not be kept: the result stands, the record
        // may lack the change.
        if let Some(e) = scope.take_change_error() {
            record.error.get_or_insert(e);
        }
        (ran, result)
    }

    /// What a handler that reports a [`crate::Change`] of call `id` calls: a diff over
    /// [`crate::records::MAX_CHANGE_DIFF_BYTES`] is archived whole for `owner` (when there is an
    /// archive, and the record still keeps changes), then the change is appended to the record,
    /// cut ([`CallStore::add_change`]).
    fn change_keeper(
        &self,
        store: Arc<CallStore>,
        id: CallId,
        owner: ArchiveOwner,
        tool: &str,
    ) -> OnChange {
        let archive = self.archive.clone();
        let tool = tool.to_string();
        let reported = AtomicUsize::new(0);
        Box::new(move |mut change| {
            change.diff_reference = None;
            let kept = reported.fetch_add(1, Ordering::SeqCst) < MAX_CHANGES;
            let mut archive_error = None;
            if let (Some(archive), true, true) = (&archive, kept, change.diff_over_limit()) {
                match archive.put(owner, Some(id), &tool, &change.diff) {
                    Ok(reference) => change.diff_reference = Some(reference.to_string()),
                    Err(e) => {
                        archive_error = Some(format!(
                            "the whole diff of `{}` could not be archived: {e}",
                            change.path
                        ));
                    }
                }
            }
            store.add_change(id, &change).map_err(|e| e.to_string())?;
            archive_error.map_or(Ok(()), Err)
        })
    }

    /// Waits for the handler's `task` to end, or stops it when the call is cancelled or runs
    /// past its timeout; says whether it ran and what it came to.
    async fn await_handler(
        &self,
        t: ToolIndex,
        name: &str,
        scope: &CallScope,
        mut task: tokio::task::JoinHandle<(Result<CallValue, CallError>, Option<String>)>,
        cancel: CancellationToken,
        record: &mut Record,
    ) -> (bool, Result<CallValue, CallError>) {
        let timeout = self.timeout(t);
        let expired = async {
            match timeout {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        let joined = tokio::select! {
            joined = &mut task => joined,
            stop = async {
                tokio::select! {
                    _ = cancel.cancelled() => Stop::Cancelled,
                    _ = expired => Stop::TimedOut(timeout.unwrap_or_default()),
                }
            } => {
                task.abort();
                // The handler may have finished before the abort took effect: then its result
                // stands (and is recorded).
                match task.await {
                    Ok(done) => Ok(done),
                    Err(_) => {
                        let e = self.stopped(t, name, scope, stop);
                        record.end(&e);
                        return (true, Err(e));
                    }
                }
            }
        };
        match joined {
            Ok((result, record_error)) => {
                if record_error.is_some() {
                    record.error = record_error;
                }
                // A lazily connected server's refusal: nothing was sent.
                let sent = !matches!(
                    result,
                    Err(CallError::ServerNotConnected { .. } | CallError::SchemaDrift { .. })
                );
                (sent, result)
            }
            Err(_) => {
                let e = self.stopped(t, name, scope, Stop::Panicked);
                record.end(&e);
                (true, Err(e))
            }
        }
    }

    /// The error of a handler stopped before its end: cancelled (or a plain error, for a
    /// timeout or a panic) when it had no side effect, outcome unknown when it may have had
    /// one (its effect is not `read`, or it reported a commit).
    fn stopped(&self, t: ToolIndex, name: &str, scope: &CallScope, stop: Stop) -> CallError {
        let no_effect = self.catalog.effect(t).kind == EffectKind::Read
            && !scope.was_committed()
            && !scope.reported_changes();
        let tool = name.to_string();
        match (stop, no_effect) {
            (Stop::Cancelled, true) => CallError::Cancelled { tool },
            (Stop::Cancelled, false) => CallError::OutcomeUnknown {
                tool,
                reason: "was cancelled while running".to_string(),
            },
            (Stop::TimedOut(limit), true) => CallError::Tool(ToolError::Failed(format!(
                "`{tool}` did not finish within its timeout of {} ms and was stopped; nothing was changed (it only reads); call it again, or raise its `timeout_ms`",
                limit.as_millis()
            ))),
            (Stop::TimedOut(limit), false) => CallError::OutcomeUnknown {
                tool,
                reason: format!(
                    "did not finish within its timeout of {} ms and was stopped",
                    limit.as_millis()
                ),
            },
            (Stop::Panicked, true) => CallError::Tool(ToolError::Failed(format!(
                "the handler of `{tool}` panicked; nothing was changed (it only reads); report it to the tool's owner"
            ))),
            (Stop::Panicked, false) => CallError::OutcomeUnknown {
                tool,
                reason: "stopped: its handler panicked".to_string(),
            },
        }
    }
}

/// Why a running call ended without a result of its own.
#[derive(Debug, Clone, Copy)]
enum Stop {
    /// [`CallRequest::cancel`] was triggered.
    Cancelled,
    /// It ran past its timeout ([`Coordinator::timeout`]).
    TimedOut(Duration),
    /// Its task panicked.
    Panicked,
}

/// The record of one call, when the coordinator keeps records.
struct Record {
    store: Option<Arc<CallStore>>,
    id: Option<CallId>,
    /// The first failure to write the record.
    error: Option<String>,
}

impl Record {
    /// Moves the record to `state`; false (with the error kept) when the write failed.
    fn set(&mut self, state: CallState, detail: Option<&str>) -> bool {
        let (Some(store), Some(id)) = (&self.store, self.id) else {
            return true;
        };
        match store.set_state(id, state, detail) {
            Ok(()) => true,
            Err(e) => {
                self.error.get_or_insert_with(|| e.to_string());
                false
            }
        }
    }

    /// Records how a call that started ended without a result of its own.
    fn end(&mut self, e: &CallError) {
        self.set(e.final_state(), Some(&e.to_string()));
    }
}

/// The call error of a remote source's refusal of tool `tool` (exported name) of `server`.
fn refusal_error(tool: &str, server: &str, refusal: Refusal) -> CallError {
    match refusal {
        Refusal::NotConnected { status, hint } => CallError::ServerNotConnected {
            tool: tool.to_string(),
            server: server.to_string(),
            status,
            hint,
        },
        Refusal::Drift(change) => CallError::SchemaDrift {
            tool: tool.to_string(),
            server: server.to_string(),
            change,
        },
    }
}

/// What the handler's task needs to turn its result into the caller's and the record's.
struct Finish {
    store: Option<Arc<CallStore>>,
    archive: Option<Arc<ResultArchive>>,
    owner: ArchiveOwner,
    id: Option<CallId>,
    tool: String,
}

impl Finish {
    /// The caller's result and the final record of a call whose outcome is unknown (its
    /// connection broke after it was sent): `outcome_unknown`, never replayed.
    fn unknown(self, reason: String) -> (Result<CallValue, CallError>, Option<String>) {
        let e = CallError::OutcomeUnknown {
            tool: self.tool.clone(),
            reason,
        };
        let mut error = None;
        if let (Some(store), Some(id)) = (&self.store, self.id) {
            if let Err(w) = store.set_state(id, CallState::OutcomeUnknown, Some(&e.to_string())) {
                error = Some(w.to_string());
            }
        }
        (Err(e), error)
    }

    /// The caller's result and the final record (`failed`) of a call a lazily connected server
    /// refused before anything was sent.
    fn refused(self, e: CallError) -> (Result<CallValue, CallError>, Option<String>) {
        let mut error = None;
        if let (Some(store), Some(id)) = (&self.store, self.id) {
            if let Err(w) = store.set_state(id, CallState::Failed, Some(&e.to_string())) {
                error = Some(w.to_string());
            }
        }
        (Err(e), error)
    }

    /// The caller's result and the final record (`succeeded` or `failed`); a text over the
    /// archive's inline budget is archived and replaced by its preview and reference. The
    /// second value is the error of a record or archive write, if any.
    fn finish(
        self,
        result: Result<Value, ToolError>,
    ) -> (Result<CallValue, CallError>, Option<String>) {
        let mut error = None;
        let (result, state, detail) = match result {
            Ok(value) => {
                let whole = value.to_string();
                let (text, archived) = match &self.archive {
                    None => (whole, None),
                    Some(archive) => match archive.bound(self.owner, self.id, &self.tool, &whole) {
                        Ok(bounded) => {
                            let text = bounded.to_model_text();
                            let archived = match bounded {
                                Bounded::Inline { .. } => None,
                                Bounded::Archived {
                                    reference,
                                    preview,
                                    total_bytes,
                                    ..
                                } => Some(ArchivedResult {
                                    reference: reference.to_string(),
                                    bytes: total_bytes,
                                    preview,
                                }),
                            };
                            (text, archived)
                        }
                        // The result exists: hand it over whole rather than lose it.
                        Err(e) => {
                            error = Some(format!("the result could not be archived: {e}"));
                            (whole, None)
                        }
                    },
                };
                let detail = archived
                    .as_ref()
                    .map(|a| format!("result archived as `{}`", a.reference));
                (
                    Ok(CallValue {
                        value,
                        text,
                        archived,
                    }),
                    CallState::Succeeded,
                    detail,
                )
            }
            Err(e) => {
                let detail = Some(e.to_string());
                (Err(CallError::Tool(e)), CallState::Failed, detail)
            }
        };
        if let (Some(store), Some(id)) = (&self.store, self.id) {
            if let Err(e) = store.set_state(id, state, detail.as_deref()) {
                error.get_or_insert_with(|| e.to_string());
            }
        }
        (result, error)
    }
}

/// Whether the targets after the locks differ from those before: for an approved call any
/// difference (resource, access or fingerprint), otherwise the resources and their access.
fn changed(name: &str, before: &[Target], now: &[Target], approved: bool) -> Option<CallError> {
    let key = |t: &Target| {
        if approved {
            format!(
                "{}{}",
                t.access.as_str(),
                t.fingerprint
                    .as_deref()
                    .map(|f| format!(" {f}"))
                    .unwrap_or_default()
            )
        } else {
            t.access.as_str().to_string()
        }
    };
    let map = |ts: &[Target]| -> BTreeMap<String, String> {
        ts.iter().map(|t| (t.resource.clone(), key(t))).collect()
    };
    let (b, n) = (map(before), map(now));
    if b == n {
        return None;
    }
    let resource = b
        .keys()
        .chain(n.keys())
        .find(|r| b.get(*r) != n.get(*r))
        .cloned()
        .unwrap_or_default();
    let fingerprint = |ts: &[Target]| {
        ts.iter().find(|t| t.resource == resource).map(|t| {
            t.fingerprint
                .clone()
                .unwrap_or_else(|| t.access.as_str().to_string())
        })
    };
    Some(CallError::TargetChanged {
        tool: name.to_string(),
        approved: fingerprint(before),
        now: fingerprint(now),
        resource,
    })
}
