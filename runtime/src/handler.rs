//! The handler side of a tool: what a `#[tool]` function is, what it receives, how it fails.
//!
//! `#[tool]` on
//! `async fn NAME(args: Args, ctx: &ToolContext) -> Result<Out, ToolError>` (optionally with a
//! third parameter `State(v): State<T>`, see "Application state" below; with `Args:
//! Deserialize + JsonSchema`, `Out: Serialize + JsonSchema`) implements [`ToolHandler`] for the
//! marker type the build script generated for tool `NAME`. Coherence makes a second handler for the same tool a
//! conflicting-implementation error (E0119); the generated dispatch table names every local tool's
//! marker, so a declared tool without a handler fails through `#[diagnostic::on_unimplemented]`.
//!
//! `#[tool(prepare = FN)]` adds the prepare step the execution coordinator
//! ([`crate::coordinator`]) runs before permission and scheduling:
//! `fn FN(args: &Args, ctx: &ToolContext) -> Result<Vec<Target>, ToolError>` names the concrete
//! [`Target`]s of a call (a file and whether it is read or written, with a fingerprint of what is
//! there now). Without it a tool declares no targets.
//!
//! # Output schema
//!
//! The JSON Schema of `Out`, as it serializes ([`output_schema_of`]), is the tool's output
//! schema ([`crate::Catalog::output_schema`]): the MCP server lists it as `outputSchema` when it
//! is an object schema and answers each call with `structuredContent` too ([`crate::mcp`]), and
//! Code Mode types the tool's result with it ([`crate::code_mode`]). A handler whose result has
//! no fixed shape returns `serde_json::Value`, whose schema constrains nothing: the tool then
//! declares no output schema.
//!
//! # Application state
//!
//! What a handler needs from the host (a database pool, an HTTP client, a configuration) is
//! registered once, by type, on the coordinator ([`crate::Coordinator::with_state`]), the MCP
//! server ([`crate::mcp::Server::state`], feature `mcp`) or a context
//! ([`ToolContext::with_state`]); every call's context shares it. A handler reads it with
//! [`ToolContext::state`], or takes it as a third parameter of type [`State<T>`], the extractor
//! form (after axum's `State`):
//!
//! ```ignore
//! #[toolcat::tool]
//! async fn lookup(args: LookupArgs, ctx: &ToolContext, State(db): State<Db>) -> Result<Row, ToolError> {
//!     db.get(&args.key).await
//! }
//! ```
//!
//! Both read the same map: state of a type nobody registered is the error
//! [`ToolError::MissingState`], naming the type and the fix; the handler does not run.
//!
//! # Caller identity
//!
//! [`ToolContext::caller`] says who makes the call and under which scope ([`Caller`]): the MCP
//! server sets the client's declared name and version (from `initialize`), the HTTP session id,
//! and the profile and exposure it serves; a host calling the coordinator directly sets its own
//! with [`crate::CallRequest::with_caller`].

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize as _;
use serde::Serialize;
use sha2::Digest as _;
use tokio_util::sync::CancellationToken;

use crate::records::Change;

/// A boxed, sendable future, the shape of every erased handler call.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a handler may use while it runs.
///
/// The coordinator hands each call its own copy, bound to that call: [`ToolContext::committed`]
/// records that the side effect is durable, and [`ToolContext::is_cancelled`] /
/// [`ToolContext::cancellation`] tell a long handler to stop early.
#[derive(Clone)]
pub struct ToolContext {
    /// Root directory that file tools resolve relative paths against and may not leave.
    pub workspace: PathBuf,
    call: Option<Arc<CallScope>>,
    /// The host's application state, shared by every call's context.
    state: Arc<StateMap>,
    /// Who makes the call, when the caller said.
    caller: Option<Arc<Caller>>,
}

/// Application state by type: each value with its type name, for messages.
type StateMap = HashMap<TypeId, (&'static str, Arc<dyn Any + Send + Sync>)>;

/// Who makes a call and under which scope; see [`ToolContext::caller`].
///
/// Every field is optional: a caller says what it knows. Over MCP ([`crate::mcp`]) the server
/// fills `name` and `version` from the client's `initialize` (`clientInfo`), `session` from the
/// `Mcp-Session-Id` of a streamable HTTP session (`None` on stdio, one session per process), and
/// `profile` and `exposure` from the scope it serves. A host calling the coordinator directly
/// sets what it wants with [`crate::CallRequest::with_caller`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// The caller's name (an MCP client's declared `clientInfo.name`).
    pub name: Option<String>,
    /// The caller's version (an MCP client's declared `clientInfo.version`).
    pub version: Option<String>,
    /// The session the call belongs to (an HTTP `Mcp-Session-Id`).
    pub session: Option<String>,
    /// The profile whose tools the caller was offered.
    pub profile: Option<String>,
    /// The MCP exposure scope the call runs under (`read-only`, `staging`, `full`).
    pub exposure: Option<toolcat_catalog::model::Exposure>,
}

impl Caller {
    /// A caller named `name`, nothing else said.
    pub fn named(name: impl Into<String>) -> Caller {
        Caller {
            name: Some(name.into()),
            ..Caller::default()
        }
    }
}

/// The extractor form of application state: a `#[tool]` handler's optional third parameter
/// `State(value): State<T>` receives a clone of the `T` the host registered
/// ([`ToolContext::with_state`], [`crate::Coordinator::with_state`]), as axum's `State` does.
/// `T` is cloned once per call, so make it cheap to clone (a pool, an `Arc`).
///
/// A call of a handler whose state is not registered fails with [`ToolError::MissingState`]
/// before the handler runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct State<T>(pub T);

/// What a `#[tool]` handler's third parameter may be: it is built from the call's context
/// before the handler runs. Implemented by [`State<T>`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a `#[tool]` handler's third parameter",
    label = "not an extractor of the call's context",
    note = "the third parameter is application state: `State(value): State<T>` (`toolcat::State`), with `T` registered by the host with `.with_state(...)`"
)]
pub trait FromToolContext: Sized {
    /// Builds the parameter from `ctx`.
    ///
    /// # Errors
    /// A [`ToolError`] when `ctx` lacks what it needs (state not registered): the handler does
    /// not run.
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError>;
}

impl<T: Clone + Send + Sync + 'static> FromToolContext for State<T> {
    fn from_tool_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        ctx.state::<T>().map(|v| State(v.clone()))
    }
}

/// What the coordinator does with a change a handler reports: keeps it in the call's record,
/// or says why it could not.
pub(crate) type OnChange = Box<dyn Fn(Change) -> Result<(), String> + Send + Sync>;

/// The per-call part of a [`ToolContext`].
pub(crate) struct CallScope {
    committed: AtomicBool,
    on_commit: Option<Box<dyn Fn() + Send + Sync>>,
    on_change: Option<OnChange>,
    /// Whether the handler reported a change (a side effect happened).
    changed: AtomicBool,
    /// The first failure to keep a reported change.
    change_error: Mutex<Option<String>>,
    cancel: CancellationToken,
}

impl CallScope {
    pub(crate) fn new(
        cancel: CancellationToken,
        on_commit: Option<Box<dyn Fn() + Send + Sync>>,
        on_change: Option<OnChange>,
    ) -> Arc<CallScope> {
        Arc::new(CallScope {
            committed: AtomicBool::new(false),
            on_commit,
            on_change,
            changed: AtomicBool::new(false),
            change_error: Mutex::new(None),
            cancel,
        })
    }

    /// Whether the handler said its side effect is durable.
    pub(crate) fn was_committed(&self) -> bool {
        self.committed.load(Ordering::SeqCst)
    }

    /// Whether the handler reported a change ([`ToolContext::record_change`]).
    pub(crate) fn reported_changes(&self) -> bool {
        self.changed.load(Ordering::SeqCst)
    }

    /// The first failure to keep a change the handler reported, taken.
    pub(crate) fn take_change_error(&self) -> Option<String> {
        self.change_error
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("workspace", &self.workspace)
            .field("in_call", &self.call.is_some())
            .field(
                "state",
                &self
                    .state
                    .values()
                    .map(|(name, _)| *name)
                    .collect::<Vec<_>>(),
            )
            .field("caller", &self.caller)
            .finish()
    }
}

impl ToolContext {
    /// A context rooted at `workspace`.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        ToolContext {
            workspace: workspace.into(),
            call: None,
            state: Arc::default(),
            caller: None,
        }
    }

    /// This context bound to one call.
    pub(crate) fn for_call(&self, scope: Arc<CallScope>) -> ToolContext {
        ToolContext {
            call: Some(scope),
            ..self.clone()
        }
    }

    /// The same context with `value` registered as application state of type `T` (replacing a
    /// value of the same type registered before); clones of the context share it. Handlers read
    /// it with [`ToolContext::state`] or a [`State<T>`] parameter.
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        Arc::make_mut(&mut self.state).insert(
            TypeId::of::<T>(),
            (std::any::type_name::<T>(), Arc::new(value)),
        );
        self
    }

    /// The application state of type `T` the host registered.
    ///
    /// # Errors
    /// [`ToolError::MissingState`] naming `T` when none was registered.
    pub fn state<T: Send + Sync + 'static>(&self) -> Result<&T, ToolError> {
        self.state
            .get(&TypeId::of::<T>())
            .and_then(|(_, value)| value.downcast_ref::<T>())
            .ok_or_else(|| ToolError::MissingState(std::any::type_name::<T>()))
    }

    /// The same context with `caller` as [`ToolContext::caller`] (`None` clears it).
    pub fn with_caller(mut self, caller: Option<Arc<Caller>>) -> Self {
        self.caller = caller;
        self
    }

    /// Who makes the call and under which scope, when the caller said (see [`Caller`]);
    /// `None` for a call whose host set nothing.
    pub fn caller(&self) -> Option<&Caller> {
        self.caller.as_deref()
    }

    /// Says that the call's side effect is now durable (the file is written, the message sent):
    /// the call's record moves to `committed`, so a crash after this point is not mistaken for
    /// a call that did nothing. Call it once, right after the effect; later calls do nothing.
    /// Outside a coordinated call (a context made with [`ToolContext::new`]) it does nothing.
    pub fn committed(&self) {
        if let Some(scope) = &self.call {
            if !scope.committed.swap(true, Ordering::SeqCst) {
                if let Some(on_commit) = &scope.on_commit {
                    on_commit();
                }
            }
        }
    }

    /// Reports that the call changed one file: the coordinator appends `change` to the call's
    /// record as it is reported ([`crate::CallStore::add_change`]), so the record keeps it
    /// whatever the call then comes to (a patch whose second file fails after the first was
    /// written shows the first). Call it once per file, right after the file is written; a diff
    /// over [`crate::records::MAX_CHANGE_DIFF_BYTES`] is cut in the record and archived whole
    /// when the coordinator has a result archive ([`Change::diff_reference`]). Outside a
    /// coordinated call, or for a coordinator that keeps no records, it does nothing. A change
    /// that cannot be kept does not fail the call: the call's [`crate::CallOutcome::record_error`]
    /// says why.
    pub fn record_change(&self, change: Change) {
        let Some(scope) = &self.call else {
            return;
        };
        scope.changed.store(true, Ordering::SeqCst);
        if let Some(on_change) = &scope.on_change {
            if let Err(e) = on_change(change) {
                scope
                    .change_error
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .get_or_insert(e);
            }
        }
    }

    /// Whether the caller cancelled this call; a handler that loops or waits should stop and
    /// return (its result is discarded).
    pub fn is_cancelled(&self) -> bool {
        self.call.as_ref().is_some_and(|s| s.cancel.is_cancelled())
    }

    /// The cancellation token of this call, to `select!` on while waiting; `None` outside a
    /// coordinated call.
    pub fn cancellation(&self) -> Option<&CancellationToken> {
        self.call.as_ref().map(|s| &s.cancel)
    }
}

/// Whether a call reads or writes a [`Target`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// Reads it: any number of readers run together.
    Read,
    /// Changes it: runs alone, no reader or other writer at the same time.
    Write,
}

impl Access {
    /// `read` or `write`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }
}

/// A concrete thing one call touches, named by its prepare step.
///
/// `resource` is the key the coordinator schedules on: two calls conflict when they name the same
/// resource and at least one writes it. `fingerprint` is what is there now (for a file, see
/// [`fingerprint_path`]); the approval hook sees it, and the coordinator refuses the call when it
/// differs after approval. A target without a fingerprint is scheduled but not re-verified
/// (an append, where what was there before does not matter).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// Scheduling key, e.g. `file:/abs/canonical/path`.
    pub resource: String,
    /// Read or write.
    pub access: Access,
    /// What is there now, e.g. `sha256:<64 hex digits>` or `absent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

impl Target {
    /// A target named `resource`, without a fingerprint.
    pub fn new(resource: impl Into<String>, access: Access) -> Self {
        Target {
            resource: resource.into(),
            access,
            fingerprint: None,
        }
    }

    /// The same target with `fingerprint`.
    pub fn with_fingerprint(mut self, fingerprint: impl Into<String>) -> Self {
        self.fingerprint = Some(fingerprint.into());
        self
    }

    /// The file or directory at `path` (already resolved: canonical, inside the workspace), as
    /// resource `file:PATH`, without a fingerprint: scheduled, not re-verified (a read, whose
    /// approval does not depend on the content, or an append).
    pub fn path_lock(path: &Path, access: Access) -> Self {
        Target::new(format!("file:{}", path.display()), access)
    }

    /// The file or directory at `path` (already resolved: canonical, inside the workspace), as
    /// resource `file:PATH`, fingerprinted with [`fingerprint_path`]. Resources are exact keys:
    /// a directory and a file inside it are different resources.
    ///
    /// # Errors
    /// [`ToolError::Io`] when the path exists but cannot be read.
    pub fn path(path: &Path, access: Access) -> Result<Self, ToolError> {
        let fingerprint = fingerprint_path(path)
            .map_err(|e| ToolError::io(format!("cannot fingerprint `{}`", path.display()), e))?;
        Ok(Target::path_lock(path, access).with_fingerprint(fingerprint))
    }
}

/// What is at `path` now, without following a symbolic link in the last component:
/// - `absent` when nothing is there;
/// - `sha256:HEX` of the content of a regular file;
/// - `dir-sha256:HEX` of a directory's sorted entry names, each with its kind and, for files,
///   size (the listing, not the whole tree);
/// - `symlink:TARGET` for a symbolic link.
///
/// # Errors
/// The I/O error when the path exists but cannot be read.
pub fn fingerprint_path(path: &Path) -> std::io::Result<String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok("absent".to_string()),
        Err(e) => return Err(e),
    };
    if meta.file_type().is_symlink() {
        return Ok(format!("symlink:{}", std::fs::read_link(path)?.display()));
    }
    if meta.is_dir() {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            let kind = if meta.is_dir() {
                "d"
            } else if meta.is_file() {
                "f"
            } else {
                "o"
            };
            let size = if meta.is_file() { meta.len() } else { 0 };
            entries.push(format!(
                "{kind} {size} {}",
                entry.file_name().to_string_lossy()
            ));
        }
        entries.sort();
        let mut hasher = sha2::Sha256::new();
        for e in &entries {
            hasher.update(e.as_bytes());
            hasher.update(b"\n");
        }
        return Ok(format!("dir-sha256:{}", hex(&hasher.finalize())));
    }
    let mut file = std::fs::File::open(path)?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(format!("sha256:{}", hex(&hasher.finalize())))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Why a tool call failed. Every variant's message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool's input JSON Schema.
    #[error("invalid arguments for `{tool}`: {message}")]
    InvalidArguments { tool: String, message: String },
    /// The named tool is not in the catalog.
    #[error("unknown tool `{0}`; call a tool this caller was offered (its plan, or the server's tools/list)")]
    UnknownTool(String),
    /// The tool's remote MCP server has no live connection.
    #[error("tool `{tool}` is served by MCP server `{server}`, which is not connected; connect the server or pick a local tool")]
    ServerNotConnected { tool: String, server: String },
    /// A meta-tool (tier `loop`) was called directly; a session serves those.
    #[error("tool `{0}` is a meta-tool (tier `loop`) that a session answers, not a handler; call it within a session (`toolcat::Session`, `toolcat session`), where `run_code` also needs a script engine")]
    MetaTool(String),
    /// A local tool declared in `tools.toml` has no handler in this binary (for the `toolcat`
    /// command line: any tool outside its reference catalog, such as a tool of the user's own
    /// crate).
    #[error("tool `{0}` is declared, but this binary (such as the toolcat CLI) has no handler for it: build your crate's #[tool] handlers into your own binary and serve them with toolcat::mcp (see README, \"Serving your own tools\")")]
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
    /// The handler needs application state of this type and the host registered none.
    #[error("the tool needs application state of type `{0}`, which the host did not register; register it with `.with_state(...)` (`Coordinator::with_state`, `toolcat::mcp::Server::state` or `ToolContext::with_state`) before serving calls")]
    MissingState(&'static str),
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
    note = "add `#[toolcat::tool] async fn {Self}(args: Args, ctx: &ToolContext) -> Result<Out, ToolError>` (optionally a third parameter `State(v): State<T>`), or remove the row from tools.toml"
)]
pub trait ToolHandler: 'static {
    /// The tool's declared name in `tools.toml`.
    const NAME: &'static str;
    /// Typed arguments; their JSON Schema is the tool's input schema.
    type Args: DeserializeOwned + JsonSchema + Send;
    /// The result, serialized to JSON for the model; its JSON Schema is the tool's output schema
    /// ([`crate::Catalog::output_schema`]; `serde_json::Value` declares none).
    type Output: Serialize + JsonSchema + Send;
    /// Runs the handler.
    fn call(args: Self::Args, ctx: &ToolContext) -> BoxFuture<'_, Result<Self::Output, ToolError>>;
    /// Names the concrete targets of a call before it is authorized and scheduled (see
    /// [`Target`]); `#[tool(prepare = FN)]` implements it with `FN`. Called twice per call: once
    /// for the approval, once under the resource locks right before running, to re-verify.
    /// Default: no targets (the call conflicts with nothing).
    ///
    /// # Errors
    /// A [`ToolError`] when the call cannot run (a path outside the workspace): nothing runs.
    fn prepare(args: &Self::Args, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
        let _ = (args, ctx);
        Ok(Vec::new())
    }
}

/// A type-erased handler entry of the generated dispatch table.
#[derive(Clone, Copy)]
pub struct ErasedHandler {
    /// Declared tool name.
    pub name: &'static str,
    /// JSON Schema of the arguments (schemars, draft 2020-12).
    pub input_schema: fn() -> schemars::Schema,
    /// JSON Schema of the output ([`output_schema_of`]); one that constrains nothing
    /// (`serde_json::Value`'s) means the tool declares no output schema.
    pub output_schema: fn() -> schemars::Schema,
    /// Deserializes the arguments and runs [`ToolHandler::prepare`].
    pub prepare: fn(&serde_json::Value, &ToolContext) -> Result<Vec<Target>, ToolError>,
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
        output_schema: output_schema_of::<H::Output>,
        prepare: prepare_erased::<H>,
        call: call_erased::<H>,
    }
}

fn input_schema_of<H: ToolHandler>() -> schemars::Schema {
    schemars::schema_for!(H::Args)
}

/// The JSON Schema of a handler's output type `T` (schemars, draft 2020-12) as `T` serializes:
/// a field with `skip_serializing_if` is not required, renames for serializing apply.
pub fn output_schema_of<T: JsonSchema>() -> schemars::Schema {
    schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
}

fn prepare_erased<H: ToolHandler>(
    args: &serde_json::Value,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    let args: H::Args = H::Args::deserialize(args).map_err(|e| ToolError::InvalidArguments {
        tool: H::NAME.to_string(),
        message: e.to_string(),
    })?;
    H::prepare(&args, ctx)
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
