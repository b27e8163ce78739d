//! [`ServerPool`]: the connections to a catalog's MCP servers, their discovered tools, and the
//! calls sent to them.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::{
    NotificationContext, Peer, RoleClient, RunningService, ServiceError, Subscription,
};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt as _};
use serde::{Serialize, Serializer};
use serde_json::Value;
use tokio::io::AsyncReadExt as _;
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use crate::catalog::Catalog;
use crate::handler::ToolError;
use crate::remote::config::{url_shown, Resolved, Secrets, ServerConfig, Transport, REDACTED};
use crate::remote::drift::{compare, SchemaChange, SchemaDrift};
use crate::remote::RemoteError;
use crate::remote_source::{Refusal, RemoteOutcome, RemoteSource};

/// Bytes of a server's standard error kept for error messages: its last 2 KiB.
const STDERR_TAIL: usize = 2048;
/// Bytes read before the tail, so that a configured value cut by the tail's start is still
/// whole when texts are redacted (the tail is cut after redaction): 1 KiB.
const STDERR_OVERLAP: usize = 1024;
/// Characters of a server's error text a failed call shows; the rest is cut, with a note. The
/// text is redacted before it is cut, and a cut never splits a `[redacted]` marker.
pub const MAX_ERROR_TEXT: usize = 2000;
/// Longest message a stdio server may send, in bytes (one line of its standard output): 16 MiB,
/// the limit of the SDK's clients. A longer one ends the connection, naming why, rather than
/// being dropped while the call waits for it.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// How a [`ServerPool`] connects and calls.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// How long a caller should wait for the servers before its first turn
    /// ([`ServerPool::wait_ready`] with [`ServerPool::wait_budget`]): 2 s.
    pub wait_budget: Duration,
    /// The first delay before reconnecting after a failed or broken connection: 500 ms; it
    /// doubles after each failed attempt up to `backoff_max`, and starts over after a success.
    pub backoff_initial: Duration,
    /// The longest delay between attempts: 30 s.
    pub backoff_max: Duration,
    /// Longest wait for the answer of one `tools/call`; `None` (the default): no limit. A call
    /// over it is recorded `outcome_unknown`.
    pub call_timeout: Option<Duration>,
    /// The servers to connect, by name; the others stay `not-connected`. `None`: every server.
    pub only: Option<Vec<String>>,
    /// Configurations that replace the catalog's for servers of the same name (a compiled
    /// catalog's tables keep no `env`, `headers` or `connect_timeout_ms`: pass
    /// [`ServerConfig::all_from_source`] of its `tools.toml`).
    pub configs: Vec<ServerConfig>,
    /// Connect each selected server at the first call of one of its tools, rather than at
    /// start: false. Until then the server is `not-connected` and no process is started; that
    /// first call waits for the connection up to the server's `connect_timeout_ms` or
    /// `wait_budget`, whichever is longer.
    pub lazy: bool,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            wait_budget: Duration::from_secs(2),
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            call_timeout: None,
            only: None,
            configs: Vec::new(),
            lazy: false,
        }
    }
}

/// Where a server's connection is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum ServerState {
    /// An attempt is under way.
    Connecting,
    /// Connected, with its tools listed.
    Ready,
    /// The last attempt failed or the connection broke.
    Failed {
        /// Why (configured values redacted).
        error: String,
        /// Milliseconds until the next attempt; `None`: no further attempt (the configuration
        /// cannot be used).
        retry_in_ms: Option<u64>,
    },
    /// Not connected in this process (left out by [`PoolOptions::only`], or no async runtime).
    NotConnected,
}

impl ServerState {
    /// `connecting`, `ready`, `failed` or `not-connected`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ServerState::Connecting => "connecting",
            ServerState::Ready => "ready",
            ServerState::Failed { .. } => "failed",
            ServerState::NotConnected => "not-connected",
        }
    }
}

fn epoch_ms<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_u64(
            t.duration_since(UNIX_EPOCH)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .unwrap_or(0),
        ),
        None => s.serialize_none(),
    }
}

fn epoch_ms_one<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    epoch_ms(&Some(*t), s)
}

/// One server as [`ServerPool::status`] reports it. Serialized (for `toolcat servers --json`)
/// as `{"name", "transport", "state", ["error", "retry_in_ms"], "tools", "captured_at_ms",
/// "last_error"}` with `captured_at_ms` in milliseconds since the Unix epoch.
#[derive(Debug, Clone, Serialize)]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// Where its connection is.
    #[serde(flatten)]
    pub state: ServerState,
    /// How many tools its last `tools/list` returned.
    pub tools: Option<usize>,
    /// When that list was captured.
    #[serde(rename = "captured_at_ms", serialize_with = "epoch_ms")]
    pub captured_at: Option<SystemTime>,
    /// The last error seen (a failed attempt, a broken connection, a failed refresh), kept after
    /// a later success; configured values redacted.
    pub last_error: Option<String>,
}

/// One tool as the server lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RemoteTool {
    /// The server's name for it (un-namespaced: a row's `remote_name`, else its `name`).
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// Its `inputSchema`.
    pub input_schema: Value,
    /// Its `outputSchema`, when it lists one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Its MCP `annotations`, as JSON.
    pub annotations: Option<Value>,
}

/// A server's tool list and when it was captured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Discovery {
    /// When `tools/list` answered.
    #[serde(rename = "captured_at_ms", serialize_with = "epoch_ms_one")]
    pub captured_at: SystemTime,
    /// Every tool of every page, in the server's order.
    pub tools: Vec<RemoteTool>,
}

impl Discovery {
    /// The tool the server calls `name`.
    pub fn tool(&self, name: &str) -> Option<&RemoteTool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// A listed tool with `secrets` redacted from its description, schemas and annotations (its name
/// is kept: rows are matched by it).
fn remote_tool(tool: rmcp::model::Tool, secrets: &Secrets) -> RemoteTool {
    let mut input_schema = Value::Object(tool.input_schema.as_ref().clone());
    secrets.redact_json(&mut input_schema);
    let mut output_schema = tool
        .output_schema
        .map(|schema| Value::Object(schema.as_ref().clone()));
    if let Some(schema) = &mut output_schema {
        secrets.redact_json(schema);
    }
    let mut annotations = tool.annotations.and_then(|a| serde_json::to_value(a).ok());
    if let Some(a) = &mut annotations {
        secrets.redact_json(a);
    }
    RemoteTool {
        name: tool.name.to_string(),
        description: tool.description.map(|d| secrets.redact(&d)),
        input_schema,
        output_schema,
        annotations,
    }
}

/// Most pages one `tools/list` may take: 10 000.
const MAX_PAGES: usize = 10_000;

/// Every page of the server's `tools/list`. A cursor the server already gave (a loop that would
/// never end) or more than [`MAX_PAGES`] pages end the listing with an error, and so does an
/// answer that is not a tool list.
///
/// # Errors
/// The reason, for [`RemoteError::List`] (the server's text in it redacted by `secrets`).
async fn list_tools(
    peer: &Peer<RoleClient>,
    secrets: &Secrets,
) -> Result<Vec<rmcp::model::Tool>, String> {
    let mut tools = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor.clone());
        let page = peer.list_tools(Some(params)).await.map_err(|e| match e {
            ServiceError::UnexpectedResponse => "its `tools/list` answer is not an MCP tool list (each tool needs a string `name` and an object `inputSchema`); fix the server's tool definitions".to_string(),
            other => other.to_string(),
        })?;
        tools.extend(page.tools);
        match page.next_cursor {
            None => return Ok(tools),
            Some(next) => {
                if !seen.insert(next.clone()) {
                    return Err(format!(
                        "its `tools/list` pagination loops: the cursor `{}` came back after {} tools; fix the server's `nextCursor`",
                        cut(&secrets.redact(&next), 80),
                        tools.len()
                    ));
                }
                cursor = Some(next);
            }
        }
    }
    Err(format!(
        "its `tools/list` did not end after {MAX_PAGES} pages ({} tools); fix the server's `nextCursor`",
        tools.len()
    ))
}

/// The client side of one connection: notices `tools/list_changed`; `cut_off` says why the
/// server's output was ended, when it sent a message over [`MAX_MESSAGE_BYTES`].
#[derive(Clone)]
struct Events {
    list_changed: Arc<Notify>,
    cut_off: Arc<OnceLock<String>>,
}

impl Events {
    fn new(list_changed: Arc<Notify>) -> Self {
        Events {
            list_changed,
            cut_off: Arc::new(OnceLock::new()),
        }
    }

    /// `why` with the reason the server's output was cut off, if it was.
    fn explain(&self, why: String) -> String {
        match self.cut_off.get() {
            Some(cut) => format!("{why}; {cut}"),
            None => why,
        }
    }
}

/// A stdio server's standard output as the connection reads it: ended (as if the server had
/// closed it) at the first line longer than [`MAX_MESSAGE_BYTES`], with the reason kept in
/// `cut_off`. It owns the process, which is killed when the connection drops it.
struct BoundedStdout {
    stdout: tokio::process::ChildStdout,
    line: usize,
    cut_off: Arc<OnceLock<String>>,
    _child: tokio::process::Child,
}

impl tokio::io::AsyncRead for BoundedStdout {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.cut_off.get().is_some() {
            return std::task::Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        std::task::ready!(std::pin::Pin::new(&mut this.stdout).poll_read(cx, buf))?;
        let mut whole = before;
        for (i, b) in buf.filled()[before..].iter().enumerate() {
            if *b == b'\n' {
                this.line = 0;
                whole = before + i + 1;
            } else {
                this.line += 1;
                if this.line > MAX_MESSAGE_BYTES {
                    let _ = this.cut_off.set(format!(
                        "the server sent a message over {} MiB, more than a client reads, and its connection was closed; make the answer smaller (e.g. a page of it)",
                        MAX_MESSAGE_BYTES / (1024 * 1024)
                    ));
                    buf.set_filled(whole);
                    break;
                }
            }
        }
        std::task::Poll::Ready(Ok(()))
    }
}

impl ClientHandler for Events {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolcat", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// The last [`STDERR_TAIL`] bytes a child process wrote to its standard error.
#[derive(Clone, Default)]
struct StderrTail {
    bytes: Arc<Mutex<Vec<u8>>>,
    done: Arc<Notify>,
    finished: Arc<std::sync::atomic::AtomicBool>,
}

impl StderrTail {
    fn follow(&self, mut stderr: tokio::process::ChildStderr) {
        let tail = self.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            loop {
                match stderr.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let mut bytes = lock(&tail.bytes);
                        bytes.extend_from_slice(&buf[..n]);
                        let excess = bytes.len().saturating_sub(STDERR_TAIL + STDERR_OVERLAP);
                        bytes.drain(..excess);
                    }
                }
            }
            tail.finished
                .store(true, std::sync::atomic::Ordering::SeqCst);
            tail.done.notify_waiters();
        });
    }

    /// The tail (its last [`STDERR_TAIL`] bytes) with `secrets` redacted, once the stream ended
    /// or `within` passed.
    async fn text(&self, within: Duration, secrets: &Secrets) -> String {
        let done = self.done.notified();
        if !self.finished.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = tokio::time::timeout(within, done).await;
        }
        let bytes = lock(&self.bytes).clone();
        let text = secrets.redact(&String::from_utf8_lossy(&bytes));
        let mut start = text.len().saturating_sub(STDERR_TAIL);
        while !text.is_char_boundary(start) {
            start += 1;
        }
        text[start..].trim().to_string()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

type Service = RunningService<RoleClient, Events>;

/// Opens a connection and lists the tools, within the configuration's connect timeout.
async fn connect(
    config: &ServerConfig,
    resolved: &Resolved,
    events: Events,
) -> Result<(Service, Discovery), RemoteError> {
    let tail = StderrTail::default();
    let cut_off = Arc::clone(&events.cut_off);
    let timeout = config.connect_timeout();
    let attempt = async {
        let service = open(config, resolved, events, &tail).await?;
        let tools = list_tools(service.peer(), &resolved.secrets)
            .await
            .map_err(|message| RemoteError::List {
                server: config.name.clone(),
                message,
            })?;
        Ok::<_, RemoteError>((service, tools))
    };
    let result = match tokio::time::timeout(timeout, attempt).await {
        Ok(r) => r,
        Err(_) => Err(RemoteError::Timeout {
            server: config.name.clone(),
            after_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        }),
    };
    match result {
        Ok((service, tools)) => {
            let discovery = Discovery {
                captured_at: SystemTime::now(),
                tools: tools
                    .into_iter()
                    .map(|t| remote_tool(t, &resolved.secrets))
                    .collect(),
            };
            Ok((service, discovery))
        }
        Err(mut e) => {
            if let (RemoteError::List { message, .. }, Some(cut)) = (&mut e, cut_off.get()) {
                message.push_str(&format!("; {cut}"));
            }
            let stderr = tail
                .text(Duration::from_millis(300), &resolved.secrets)
                .await;
            if !stderr.is_empty() {
                let note = format!("; its standard error ended with: {stderr}");
                match &mut e {
                    RemoteError::Connect { message, .. } | RemoteError::List { message, .. } => {
                        message.push_str(&note)
                    }
                    _ => {}
                }
            }
            Err(redact_error(e, &resolved.secrets))
        }
    }
}

fn redact_error(e: RemoteError, secrets: &Secrets) -> RemoteError {
    match e {
        RemoteError::Config { server, message } => RemoteError::Config {
            server,
            message: secrets.redact(&message),
        },
        RemoteError::Connect { server, message } => RemoteError::Connect {
            server,
            message: secrets.redact(&message),
        },
        RemoteError::List { server, message } => RemoteError::List {
            server,
            message: secrets.redact(&message),
        },
        t @ RemoteError::Timeout { .. } => t,
    }
}

async fn open(
    config: &ServerConfig,
    resolved: &Resolved,
    events: Events,
    tail: &StderrTail,
) -> Result<Service, RemoteError> {
    let failed = |message: String| RemoteError::Connect {
        server: config.name.clone(),
        message,
    };
    match &config.transport {
        Transport::Stdio { command, args, .. } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args)
                .envs(resolved.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            let mut child = cmd
                .spawn()
                .map_err(|e| failed(format!("cannot start `{command}`: {e}")))?;
            if let Some(stderr) = child.stderr.take() {
                tail.follow(stderr);
            }
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err(failed(format!(
                    "`{command}` started without its standard input and output"
                )));
            };
            let stdout = BoundedStdout {
                stdout,
                line: 0,
                cut_off: Arc::clone(&events.cut_off),
                _child: child,
            };
            // The length of a message is bounded by `BoundedStdout`, which says why it ends the
            // connection; the transport's own limit would drop the message and keep waiting.
            let transport = AsyncRwTransport::<RoleClient, _, _>::new(stdout, stdin)
                .with_max_line_length(usize::MAX);
            let cut_off = Arc::clone(&events.cut_off);
            events.serve(transport).await.map_err(|e| {
                let why = format!("`initialize` failed: {e}");
                failed(match cut_off.get() {
                    Some(cut) => format!("{why}; {cut}"),
                    None => why,
                })
            })
        }
        Transport::Http { url, .. } => {
            let sent = resolved.url.as_deref().unwrap_or(url);
            let mut headers = HashMap::new();
            for (name, value) in &resolved.headers {
                let header = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    RemoteError::Config {
                        server: config.name.clone(),
                        message: format!("`headers.{name}` is not a valid HTTP header name"),
                    }
                })?;
                let value = http::HeaderValue::from_str(value).map_err(|_| RemoteError::Config {
                    server: config.name.clone(),
                    message: format!(
                        "the value of `headers.{name}` is not a valid HTTP header value (after `${{VAR}}` references were resolved)"
                    ),
                })?;
                headers.insert(header, value);
            }
            let http_config =
                StreamableHttpClientTransportConfig::with_uri(sent).custom_headers(headers);
            let transport = StreamableHttpClientTransport::from_config(http_config);
            events
                .serve(transport)
                .await
                .map_err(|e| failed(format!("`initialize` at `{}` failed: {e}", url_shown(url))))
        }
    }
}

/// Connects to `config`'s server once, lists its tools (every page) and disconnects: for
/// importing a server's tools or checking rows against it.
///
/// # Errors
/// [`RemoteError`]: an unusable configuration, a failed connection or listing, or no answer
/// within `timeout` (which replaces the configuration's connect timeout).
pub async fn discover(config: &ServerConfig, timeout: Duration) -> Result<Discovery, RemoteError> {
    let resolved = config.resolve()?;
    let config = config.clone().with_connect_timeout(timeout);
    let events = Events::new(Arc::new(Notify::new()));
    let (mut service, discovery) = connect(&config, &resolved, events).await?;
    let _ = service.close_with_timeout(Duration::from_secs(2)).await;
    Ok(discovery)
}

/// The mutable part of one server.
struct Inner {
    phase: Phase,
    peer: Option<Peer<RoleClient>>,
    discovery: Option<Arc<Discovery>>,
    last_error: Option<String>,
    secrets: Secrets,
    /// Why the current connection's server output was cut off, once it was.
    cut_off: Arc<OnceLock<String>>,
}

enum Phase {
    Connecting,
    Ready,
    Failed {
        error: String,
        retry_at: Option<Instant>,
    },
    NotConnected,
    /// Selected in a lazy pool and not used yet: connected at the first call of its tools.
    Idle,
}

/// One server of the pool.
struct Slot {
    name: String,
    transport: &'static str,
    inner: Mutex<Inner>,
    /// A lazy pool's server not started yet: its configuration, taken at the first use.
    pending: Mutex<Option<ServerConfig>>,
    /// How long the first call of a lazily connected server waits for it.
    lazy_wait: Duration,
}

impl Slot {
    fn status(&self) -> ServerStatus {
        let inner = lock(&self.inner);
        let state = match &inner.phase {
            Phase::Connecting => ServerState::Connecting,
            Phase::Ready => ServerState::Ready,
            Phase::Failed { error, retry_at } => ServerState::Failed {
                error: error.clone(),
                retry_in_ms: retry_at.map(|at| {
                    u64::try_from(at.saturating_duration_since(Instant::now()).as_millis())
                        .unwrap_or(u64::MAX)
                }),
            },
            Phase::NotConnected | Phase::Idle => ServerState::NotConnected,
        };
        ServerStatus {
            name: self.name.clone(),
            transport: self.transport,
            state,
            tools: inner.discovery.as_ref().map(|d| d.tools.len()),
            captured_at: inner.discovery.as_ref().map(|d| d.captured_at),
            last_error: inner.last_error.clone(),
        }
    }
}

/// The connections to a catalog's MCP servers (see the module docs of [`crate::remote`]).
///
/// `Send + Sync`, shared in an `Arc`. Dropping the pool stops every connection task and closes
/// the connections (child processes are killed).
pub struct ServerPool {
    slots: Vec<Arc<Slot>>,
    options: PoolOptions,
    changes: watch::Sender<u64>,
    shutdown: CancellationToken,
    /// Where a lazy pool's connection tasks run.
    runtime: Option<tokio::runtime::Handle>,
}

impl std::fmt::Debug for ServerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerPool")
            .field(
                "servers",
                &self.slots.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Drop for ServerPool {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl ServerPool {
    /// Starts connecting to every `[mcp_server]` of `catalog` (those [`PoolOptions::only`]
    /// names, if set) in the background and returns at once; each server's configuration is
    /// the one of [`PoolOptions::configs`] with its name, else [`ServerConfig::from_catalog`].
    /// A server whose configuration cannot be used is `failed` with no retry.
    ///
    /// Call it inside a tokio runtime (the connections run on its tasks); outside one every
    /// server stays `not-connected`.
    pub fn start(catalog: &Catalog, options: PoolOptions) -> Arc<ServerPool> {
        let declared = ServerConfig::all_from_catalog(catalog);
        let configs: Vec<Result<ServerConfig, (String, String)>> = catalog
            .servers()
            .zip(declared)
            .map(|(s, declared)| {
                let name = catalog.server_name(s);
                match options.configs.iter().find(|c| c.name == name) {
                    Some(c) => Ok(c.clone()),
                    None => declared.map_err(|e| (name.to_string(), e.to_string())),
                }
            })
            .collect();
        ServerPool::start_with(configs, options)
    }

    /// Starts connecting to `configs` (not tied to a catalog), as [`ServerPool::start`];
    /// [`PoolOptions::configs`] is not consulted.
    pub fn start_configs(configs: Vec<ServerConfig>, options: PoolOptions) -> Arc<ServerPool> {
        ServerPool::start_with(configs.into_iter().map(Ok).collect(), options)
    }

    fn start_with(
        configs: Vec<Result<ServerConfig, (String, String)>>,
        options: PoolOptions,
    ) -> Arc<ServerPool> {
        let runtime = tokio::runtime::Handle::try_current().ok();
        let (changes, _) = watch::channel(0u64);
        let shutdown = CancellationToken::new();
        let mut slots = Vec::new();
        for config in configs {
            let (name, transport) = match &config {
                Ok(c) => (c.name.clone(), c.transport_name()),
                Err((name, _)) => (name.clone(), "stdio"),
            };
            let selected = options
                .only
                .as_ref()
                .is_none_or(|only| only.contains(&name));
            let phase = match (&config, selected, &runtime) {
                (_, false, _) | (_, _, None) => Phase::NotConnected,
                (Err((_, error)), true, Some(_)) => Phase::Failed {
                    error: error.clone(),
                    retry_at: None,
                },
                (Ok(_), true, Some(_)) if options.lazy => Phase::Idle,
                (Ok(_), true, Some(_)) => Phase::Connecting,
            };
            let lazy_wait = match &config {
                Ok(c) => c.connect_timeout(),
                Err(_) => Duration::ZERO,
            };
            let slot = Arc::new(Slot {
                name,
                transport,
                inner: Mutex::new(Inner {
                    last_error: match &phase {
                        Phase::Failed { error, .. } => Some(error.clone()),
                        _ => None,
                    },
                    phase,
                    peer: None,
                    discovery: None,
                    secrets: Secrets::default(),
                    cut_off: Arc::default(),
                }),
                pending: Mutex::new(None),
                lazy_wait,
            });
            if let (Ok(config), true, Some(_), true) = (&config, selected, &runtime, options.lazy) {
                *lock(&slot.pending) = Some(config.clone());
            } else if let (Ok(config), true, Some(runtime)) = (config, selected, &runtime) {
                let task = Task {
                    slot: Arc::clone(&slot),
                    config,
                    options: options.clone(),
                    changes: changes.clone(),
                    shutdown: shutdown.clone(),
                };
                runtime.spawn(task.run());
            }
            slots.push(slot);
        }
        Arc::new(ServerPool {
            slots,
            options,
            changes,
            shutdown,
            runtime,
        })
    }

    /// The options the pool was started with.
    pub fn options(&self) -> &PoolOptions {
        &self.options
    }

    /// [`PoolOptions::wait_budget`].
    pub fn wait_budget(&self) -> Duration {
        self.options.wait_budget
    }

    /// Waits until no server is `connecting` (each is ready, failed or not connected), or
    /// `budget` has passed, whichever comes first; true when every server settled in time. A
    /// server still connecting goes on connecting in the background.
    pub async fn wait_ready(&self, budget: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + budget;
        let mut changes = self.changes.subscribe();
        loop {
            let settled = self
                .slots
                .iter()
                .all(|s| !matches!(lock(&s.inner).phase, Phase::Connecting));
            if settled {
                return true;
            }
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return false;
                    }
                }
                _ = tokio::time::sleep_until(deadline) => return false,
            }
        }
    }

    /// Every server, in catalog (name) order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.slots.iter().map(|s| s.status()).collect()
    }

    /// The server's last tool list, with its time of capture (kept while the server is down;
    /// replaced at each reconnection and `tools/list_changed`); `None` before the first.
    pub fn discovered(&self, server: &str) -> Option<Arc<Discovery>> {
        self.slot(server)
            .and_then(|s| lock(&s.inner).discovery.clone())
    }

    fn slot(&self, server: &str) -> Option<&Arc<Slot>> {
        self.slots.iter().find(|s| s.name == server)
    }

    /// Whether `tool` (the server's name for it) can be called on `server` now, its declared
    /// input schema being `declared`: the server is connected, lists the tool, and lists it with
    /// the same schema ([`compare`]).
    fn check(&self, server: &str, tool: &str, declared: &Value) -> Result<RemoteCall, Refusal> {
        let Some(slot) = self.slot(server) else {
            return Err(Refusal::NotConnected {
                status: "not one of this process's servers".to_string(),
                hint: "start the server pool from the catalog that declares it".to_string(),
            });
        };
        check_slot(slot, server, tool, declared, self.options.call_timeout)
    }

    /// In a lazy pool, starts `slot`'s connection at its first use; true while that connection
    /// is being made (the call then waits for it).
    fn start_lazy(&self, slot: &Arc<Slot>) -> bool {
        if !self.options.lazy {
            return false;
        }
        let Some(runtime) = &self.runtime else {
            return false;
        };
        if let Some(config) = lock(&slot.pending).take() {
            lock(&slot.inner).phase = Phase::Connecting;
            let task = Task {
                slot: Arc::clone(slot),
                config,
                options: self.options.clone(),
                changes: self.changes.clone(),
                shutdown: self.shutdown.clone(),
            };
            runtime.spawn(task.run());
        }
        matches!(lock(&slot.inner).phase, Phase::Connecting)
    }
}

/// [`ServerPool::check`] on one server.
fn check_slot(
    slot: &Slot,
    server: &str,
    tool: &str,
    declared: &Value,
    call_timeout: Option<Duration>,
) -> Result<RemoteCall, Refusal> {
    let inner = lock(&slot.inner);
    let peer = match (&inner.phase, &inner.peer) {
            (Phase::Ready, Some(peer)) if !peer.is_transport_closed() => peer.clone(),
            (Phase::Ready, _) => {
                return Err(Refusal::NotConnected {
                    status: "reconnecting (its connection just closed)".to_string(),
                    hint: "try again in a moment, or give the servers longer to connect before the first call (`--wait MS`; `PoolOptions::wait_budget`)".to_string(),
                })
            }
            (Phase::Connecting, _) => {
                return Err(Refusal::NotConnected {
                    status: "still connecting".to_string(),
                    hint: "try again in a moment, or give the servers longer to connect before the first call (`--wait MS`; `PoolOptions::wait_budget`)".to_string(),
                })
            }
            (Phase::Failed { error, retry_at }, _) => {
                let next = match retry_at {
                    Some(at) => format!(
                        "; the next attempt is in {} ms",
                        at.saturating_duration_since(Instant::now()).as_millis()
                    ),
                    None => "; it is not retried".to_string(),
                };
                return Err(Refusal::NotConnected {
                    status: format!("not connected: {error}{next}"),
                    hint: "fix what the error names (the server's command, url or environment) if it keeps failing; `toolcat servers` shows its state".to_string(),
                });
            }
            (Phase::NotConnected | Phase::Idle, _) => {
                return Err(Refusal::NotConnected {
                    status: "not connected in this process (not started)".to_string(),
                    hint: "start it with the agent's other servers, or pick a local tool"
                        .to_string(),
                })
            }
        };
    let Some(discovery) = &inner.discovery else {
        return Err(Refusal::NotConnected {
            status: "connected, with its tools not yet listed".to_string(),
            hint: "try again in a moment".to_string(),
        });
    };
    let Some(remote) = discovery.tool(tool) else {
        return Err(Refusal::Drift(
            SchemaDrift {
                changes: vec![SchemaChange::ToolMissing {
                    tool: tool.to_string(),
                }],
            }
            .to_string(),
        ));
    };
    if let Some(drift) = compare(declared, &remote.input_schema) {
        return Err(Refusal::Drift(drift.to_string()));
    }
    Ok(RemoteCall {
        peer,
        server: server.to_string(),
        tool: tool.to_string(),
        secrets: inner.secrets.clone(),
        cut_off: Arc::clone(&inner.cut_off),
        timeout: call_timeout,
    })
}

impl RemoteSource for ServerPool {
    fn check(
        &self,
        server: &str,
        tool: &str,
        declared: &Value,
    ) -> Result<crate::remote_source::RemoteCall, Refusal> {
        if let Some(slot) = self.slot(server).filter(|slot| self.start_lazy(slot)) {
            // Connecting at its first use: the call waits for the connection, then checks.
            let slot = Arc::clone(slot);
            let wait = slot.lazy_wait.max(self.options.wait_budget);
            let mut changes = self.changes.subscribe();
            let (server, tool, declared) = (server.to_string(), tool.to_string(), declared.clone());
            let timeout = self.options.call_timeout;
            return Ok(Box::new(move |arguments| {
                Box::pin(async move {
                    let deadline = tokio::time::Instant::now() + wait;
                    while matches!(lock(&slot.inner).phase, Phase::Connecting) {
                        tokio::select! {
                            changed = changes.changed() => if changed.is_err() { break },
                            _ = tokio::time::sleep_until(deadline) => break,
                        }
                    }
                    match check_slot(&slot, &server, &tool, &declared, timeout) {
                        Ok(call) => call.run(arguments).await,
                        Err(Refusal::NotConnected { status, hint }) => {
                            RemoteOutcome::Refused(Refusal::NotConnected {
                                status: format!(
                                    "{status} (connected at the first call of `{tool}`)"
                                ),
                                hint,
                            })
                        }
                        Err(refusal) => RemoteOutcome::Refused(refusal),
                    }
                })
            }));
        }
        let call = ServerPool::check(self, server, tool, declared)?;
        Ok(Box::new(move |arguments| Box::pin(call.run(arguments))))
    }
}

/// A call that passed [`ServerPool::check`]: the connection to send it on.
#[derive(Clone)]
struct RemoteCall {
    peer: Peer<RoleClient>,
    server: String,
    tool: String,
    secrets: Secrets,
    cut_off: Arc<OnceLock<String>>,
    timeout: Option<Duration>,
}

impl std::fmt::Debug for RemoteCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteCall")
            .field("server", &self.server)
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

impl RemoteCall {
    /// Sends `tools/call` and waits for the answer (within the pool's call timeout).
    async fn run(self, arguments: Value) -> RemoteOutcome {
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return RemoteOutcome::Done(Err(ToolError::InvalidArguments {
                    tool: self.tool.clone(),
                    message: format!("the arguments must be a JSON object, found {other}"),
                }))
            }
        };
        let mut params = CallToolRequestParams::new(self.tool.clone());
        params.arguments = arguments;
        let sent = self.peer.call_tool(params);
        let answer = match self.timeout {
            Some(limit) => match tokio::time::timeout(limit, sent).await {
                Ok(answer) => answer,
                Err(_) => {
                    return RemoteOutcome::Unknown(format!(
                    "got no answer from MCP server `{}` within {} ms after the request was sent",
                    self.server,
                    limit.as_millis()
                ))
                }
            },
            None => sent.await,
        };
        match answer {
            Ok(result) => RemoteOutcome::Done(self.result(result)),
            Err(ServiceError::McpError(e)) => RemoteOutcome::Done(Err(ToolError::Failed(format!(
                "MCP server `{}` refused `{}`: {} (JSON-RPC error {})",
                self.server,
                self.tool,
                cut(&self.secrets.redact(&e.message), MAX_ERROR_TEXT),
                e.code.0
            )))),
            Err(e) => {
                let mut why = format!(
                    "lost its connection to MCP server `{}` after the request was sent ({e})",
                    self.server
                );
                if let Some(cut) = self.cut_off.get() {
                    why = format!("{why}; {cut}");
                }
                RemoteOutcome::Unknown(self.secrets.redact(&why))
            }
        }
    }

    /// The model's value of an answer: the structured content if any, else the text of a single
    /// text block (all text blocks joined by newlines), else the content blocks as JSON. An
    /// `isError` answer is a [`ToolError::Failed`] leading with the server's text. Secrets are
    /// redacted first, the text blocks as one text (a secret split over two blocks is found),
    /// then texts are cut to [`MAX_ERROR_TEXT`].
    fn result(&self, result: CallToolResult) -> Result<Value, ToolError> {
        let mut content = serde_json::to_value(&result.content).unwrap_or(Value::Null);
        let mut blocks: Vec<&mut Value> = match &mut content {
            Value::Array(blocks) => blocks.iter_mut().collect(),
            _ => Vec::new(),
        };
        let all_blocks = blocks.len();
        blocks.retain(|b| b["type"] == "text" && b["text"].is_string());
        let texts: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
        let texts = self.secrets.redact_parts(&texts);
        for (block, text) in blocks.into_iter().zip(&texts) {
            block["text"] = Value::String(text.clone());
        }
        let all_text = all_blocks > 0 && texts.len() == all_blocks;
        let mut structured = result.structured_content;
        if let Some(v) = &mut structured {
            self.secrets.redact_json(v);
        }
        self.secrets.redact_json(&mut content);
        if result.is_error == Some(true) {
            // Each block gets its share of the room, so a dump before or after the explanation
            // cannot push it out.
            let share = (MAX_ERROR_TEXT / texts.len().max(1)).max(200);
            let mut explanation = texts
                .iter()
                .map(|t| cut(t, share))
                .collect::<Vec<_>>()
                .join("\n");
            if explanation.is_empty() {
                explanation = match &structured {
                    Some(v) => v.to_string(),
                    None => content.to_string(),
                };
            }
            return Err(ToolError::Failed(format!(
                "`{}` failed on MCP server `{}`: {}",
                self.tool,
                self.server,
                cut(&explanation, MAX_ERROR_TEXT)
            )));
        }
        Ok(match (structured, all_text) {
            (Some(structured), _) => structured,
            (None, true) => Value::String(texts.join("\n")),
            (None, false) => content,
        })
    }
}

/// `text` cut to at most `max` characters, with how much was left out; a cut that would split a
/// `[redacted]` marker is made before it. Cut redacted texts only: a secret cut first would no
/// longer be found.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((mut at, _)) => {
            // The marker has no `[` past its first character: the last `[` before the cut starts
            // the marker the cut is inside of, if any.
            if let Some(start) = text[..at].rfind('[') {
                if text[start..].starts_with(REDACTED) && start + REDACTED.len() > at {
                    at = start;
                }
            }
            format!(
                "{}… ({} more characters not shown)",
                &text[..at],
                text[at..].chars().count()
            )
        }
    }
}

/// One server's connection task.
struct Task {
    slot: Arc<Slot>,
    config: ServerConfig,
    options: PoolOptions,
    changes: watch::Sender<u64>,
    shutdown: CancellationToken,
}

impl Task {
    fn update(&self, f: impl FnOnce(&mut Inner)) {
        f(&mut lock(&self.slot.inner));
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    async fn run(self) {
        let mut backoff = self.options.backoff_initial;
        loop {
            self.update(|i| i.phase = Phase::Connecting);
            let error = match self.config.resolve() {
                Err(e) => {
                    // Not retried: the environment of this process does not change by itself.
                    let error = e.to_string();
                    self.update(|i| {
                        i.phase = Phase::Failed {
                            error: error.clone(),
                            retry_at: None,
                        };
                        i.last_error = Some(error.clone());
                    });
                    return;
                }
                Ok(resolved) => {
                    let list_changed = Arc::new(Notify::new());
                    let events = Events::new(Arc::clone(&list_changed));
                    let explain = events.clone();
                    let attempt = tokio::select! {
                        _ = self.shutdown.cancelled() => return,
                        r = connect(&self.config, &resolved, events) => r,
                    };
                    match attempt {
                        Err(e) => e.to_string(),
                        Ok((service, discovery)) => {
                            backoff = self.options.backoff_initial;
                            let peer = service.peer().clone();
                            let secrets = resolved.secrets.clone();
                            self.update(|i| {
                                i.phase = Phase::Ready;
                                i.peer = Some(peer.clone());
                                i.discovery = Some(Arc::new(discovery));
                                i.secrets = secrets;
                                i.cut_off = Arc::clone(&explain.cut_off);
                            });
                            let why = self.serve(service, peer, &list_changed, &resolved).await;
                            self.update(|i| i.peer = None);
                            match why {
                                None => return,
                                Some(why) => explain.explain(why),
                            }
                        }
                    }
                }
            };
            let retry_at = Instant::now() + backoff;
            self.update(|i| {
                i.phase = Phase::Failed {
                    error: error.clone(),
                    retry_at: Some(retry_at),
                };
                i.last_error = Some(error.clone());
            });
            tokio::select! {
                _ = self.shutdown.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(self.options.backoff_max);
        }
    }

    /// Serves one connection until it closes (`Some(why)`) or the pool shuts down (`None`);
    /// refreshes the tool list at each `tools/list_changed`.
    async fn serve(
        &self,
        service: Service,
        peer: Peer<RoleClient>,
        list_changed: &Notify,
        resolved: &Resolved,
    ) -> Option<String> {
        let cancel = service.cancellation_token();
        let waiting = service.waiting();
        tokio::pin!(waiting);
        // On a `2026-07-28` connection list changes come on a listen stream the client opens;
        // on earlier ones they come unasked (`Events::on_tool_list_changed`). A server that does
        // not announce `tools.listChanged` is asked for neither.
        let announces = peer
            .peer_info()
            .and_then(|info| {
                info.capabilities
                    .tools
                    .as_ref()
                    .and_then(|t| t.list_changed)
            })
            .unwrap_or(false);
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        let listening = peer.listen(filter);
        tokio::pin!(listening);
        let mut listen_pending = announces;
        let mut subscription: Option<Subscription> = None;
        loop {
            let refresh = tokio::select! {
                quit = &mut waiting => {
                    let why = match quit {
                        Ok(reason) => format!("the connection closed ({reason:?})"),
                        Err(e) => format!("the connection task ended ({e})"),
                    };
                    return Some(resolved.secrets.redact(&why));
                }
                listened = &mut listening, if listen_pending => {
                    listen_pending = false;
                    // A server without listen streams (an earlier protocol) refuses; its
                    // notifications come unasked.
                    subscription = listened.ok();
                    false
                }
                notification = next_notification(&mut subscription) => {
                    match notification {
                        Ok(Some(_)) => true,
                        Ok(None) | Err(_) => {
                            subscription = None;
                            false
                        }
                    }
                }
                _ = list_changed.notified() => true,
                _ = self.shutdown.cancelled() => {
                    cancel.cancel();
                    let _ = tokio::time::timeout(Duration::from_secs(2), &mut waiting).await;
                    return None;
                }
            };
            if refresh {
                let listed = tokio::time::timeout(
                    self.config.connect_timeout(),
                    list_tools(&peer, &resolved.secrets),
                )
                .await;
                match listed {
                    Ok(Ok(tools)) => {
                        let discovery = Discovery {
                            captured_at: SystemTime::now(),
                            tools: tools
                                .into_iter()
                                .map(|t| remote_tool(t, &resolved.secrets))
                                .collect(),
                        };
                        self.update(|i| i.discovery = Some(Arc::new(discovery)));
                    }
                    Ok(Err(e)) => {
                        let error = resolved.secrets.redact(&format!(
                            "refreshing the tool list after `tools/list_changed` failed: {e}"
                        ));
                        self.update(|i| i.last_error = Some(error));
                    }
                    Err(_) => {
                        self.update(|i| {
                            i.last_error = Some(
                                "refreshing the tool list after `tools/list_changed` timed out"
                                    .to_string(),
                            )
                        });
                    }
                }
            }
        }
    }
}

/// The next notification of `subscription`; never, without one.
async fn next_notification(
    subscription: &mut Option<Subscription>,
) -> Result<Option<rmcp::model::ServerNotification>, ServiceError> {
    match subscription {
        Some(s) => s.next().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn cut_keeps_the_start_and_says_how_much_is_left_out() {
        assert_eq!(cut("abc", 5), "abc");
        assert_eq!(cut("abcdef", 2), "ab… (4 more characters not shown)");
        assert_eq!(cut("ééé", 1), "é… (2 more characters not shown)");
    }

    #[test]
    fn cut_never_splits_a_redacted_marker() {
        assert_eq!(
            cut("ab[redacted]cd", 5),
            "ab… (12 more characters not shown)"
        );
        assert_eq!(
            cut("ab[redacted]cd", 12),
            "ab[redacted]… (2 more characters not shown)"
        );
        assert_eq!(
            cut("a[b [redacted", 4),
            "a[b … (9 more characters not shown)"
        );
    }
}
