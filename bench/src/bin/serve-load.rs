//! `serve-load`: concurrent MCP clients against `toolcat serve --http` (or a balancer in front of
//! replicas), speaking streamable HTTP as raw JSON-RPC over `reqwest`: each MCP session is opened
//! with `initialize` and `notifications/initialized`, then every client makes `--calls`
//! `tools/call` requests one after the other, all clients at once. Answers are read whether the
//! server sends JSON or an SSE stream (`toolcat serve` answers a POST with an SSE stream whose
//! `data:` line is the JSON-RPC response).
//!
//! A call counts as an error when the HTTP status is not 200, the connection fails, the body holds
//! no JSON-RPC response to it, the response is a JSON-RPC error, or the result is `isError`
//! (a tool refusal: rate-limited, outside the scope, ...). Prints one JSON object: clients,
//! sessions, calls, errors (with up to 5 samples), latency percentiles in milliseconds (p50, p90,
//! p99, max: the time from sending a `tools/call` to reading its response), calls per second over
//! the wall time of the calls, and the time the sessions took to open. Exits 1 when any call or
//! session failed, 2 when the run could not start.
//!
//! Clients share sessions when `--sessions` is below `--clients` (client `i` uses session
//! `i % sessions`; MCP allows concurrent requests in one session): a `toolcat serve` process keeps
//! at most `toolcat::mcp::MAX_SESSIONS` (256) sessions open, so a thousand clients each with a
//! session of its own would be refused with 503 on one replica by design. A server with
//! authentication also caps the sessions of one identity (`toolcat::mcp::MAX_SESSIONS_PER_IDENTITY`,
//! 64): give several `--token`s and the sessions are opened with them in turn (session `j` with
//! token `j % tokens`), as many users would.

#![forbid(unsafe_code)]

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use clap::Parser;
use serde_json::{json, Value};

/// The protocol version sent in `initialize`.
const PROTOCOL_VERSION: &str = "2025-06-18";

#[derive(Parser)]
#[command(
    about = "Concurrent MCP clients calling one tool over streamable HTTP; latency and calls/s as JSON"
)]
struct Args {
    /// The MCP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    #[arg(long, value_name = "URL")]
    url: String,
    /// Clients calling at the same time.
    #[arg(long, default_value_t = 100, value_name = "N")]
    clients: usize,
    /// MCP sessions the clients share (default: one per client).
    #[arg(long, value_name = "N")]
    sessions: Option<usize>,
    /// Calls each client makes, one after the other.
    #[arg(long, default_value_t = 10, value_name = "N")]
    calls: usize,
    /// The tool called.
    #[arg(long, value_name = "NAME")]
    tool: String,
    /// Its arguments, a JSON object.
    #[arg(long, default_value = "{}", value_name = "JSON")]
    args: String,
    /// Gives up on one request after this many milliseconds (an error).
    #[arg(long, default_value_t = 60_000, value_name = "MS")]
    timeout_ms: u64,
    /// Stateless requests (`toolcat serve --stateless`): no session is opened; each `tools/call`
    /// names its protocol version in `params._meta` (`io.modelcontextprotocol/protocolVersion`).
    #[arg(long)]
    stateless: bool,
    /// Sends `Authorization: Bearer TOKEN` with the requests of a session; repeat it (or give a
    /// comma-separated list in the environment) and the sessions take the tokens in turn.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "SERVE_LOAD_TOKEN",
        value_delimiter = ','
    )]
    token: Vec<String>,
}

/// One open MCP session: its id (none when the server keeps no sessions) and protocol version.
#[derive(Clone)]
struct Session {
    id: Option<String>,
    version: String,
    /// The bearer token its requests carry.
    token: Option<String>,
}

struct Client {
    http: reqwest::Client,
    url: String,
}

impl Client {
    /// POSTs `message` within `session` (or, with none, with `token`); returns the HTTP status,
    /// the session id header of the answer, and the JSON-RPC response to `id` when the message
    /// is a request, else the start of the body (what an HTTP refusal says).
    async fn post(
        &self,
        session: Option<&Session>,
        token: Option<&str>,
        message: &Value,
    ) -> Result<(u16, Option<String>, std::result::Result<Value, String>)> {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(message.to_string());
        if let Some(s) = session {
            if let Some(id) = &s.id {
                request = request.header("mcp-session-id", id);
            }
            request = request.header("mcp-protocol-version", &s.version);
        }
        if let Some(token) = session.and_then(|s| s.token.as_deref()).or(token) {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let response = request.send().await.context("the request failed")?;
        let status = response.status().as_u16();
        let session_id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response
            .bytes()
            .await
            .context("the body could not be read")?;
        let body = String::from_utf8_lossy(&body);
        let answer = message
            .get("id")
            .and_then(|id| response_to(&body, id))
            .ok_or_else(|| body.chars().take(300).collect::<String>());
        Ok((status, session_id, answer))
    }

    async fn open(&self, token: Option<String>) -> Result<Session> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "serve-load", "version": env!("CARGO_PKG_VERSION")},
        }});
        let (status, id, answer) = self.post(None, token.as_deref(), &init).await?;
        let answer = answer.map_err(|body| {
            anyhow::anyhow!("`initialize` got HTTP {status} and no answer to it: {body}")
        })?;
        let version = answer["result"]["protocolVersion"]
            .as_str()
            .with_context(|| format!("`initialize` was refused: {answer}"))?
            .to_string();
        let session = Session { id, version, token };
        let (status, _, _) = self
            .post(
                Some(&session),
                None,
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .await?;
        if status != 202 && status != 200 {
            bail!("`notifications/initialized` got HTTP {status}");
        }
        Ok(session)
    }

    async fn close(&self, session: &Session) {
        if let Some(id) = &session.id {
            let mut request = self.http.delete(&self.url).header("mcp-session-id", id);
            if let Some(token) = &session.token {
                request = request.header("authorization", format!("Bearer {token}"));
            }
            let _ = request.send().await;
        }
    }
}

/// The JSON-RPC response to `id` in `body`: a JSON body, or an SSE stream's `data:` lines.
fn response_to(body: &str, id: &Value) -> Option<Value> {
    let is_it = |v: &Value| {
        v.get("id") == Some(id) && (v.get("result").is_some() || v.get("error").is_some())
    };
    if let Ok(v) = serde_json::from_str::<Value>(body.trim()) {
        return is_it(&v).then_some(v);
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(is_it)
}

/// The value at quantile `q` (0..=1) of sorted `values`, nearest rank.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn round(ms: f64) -> f64 {
    (ms * 100.0).round() / 100.0
}

async fn run(a: Args) -> Result<bool> {
    let arguments: Value = serde_json::from_str(&a.args).context("`--args` is not JSON")?;
    if !arguments.is_object() {
        bail!("`--args` must be a JSON object, e.g. '{{\"path\": \"a.txt\"}}'");
    }
    if a.clients == 0 || a.calls == 0 || a.sessions == Some(0) || a.timeout_ms == 0 {
        bail!("`--clients`, `--calls`, `--sessions` and `--timeout-ms` must be at least 1");
    }
    if a.token.iter().any(|t| t.trim().is_empty()) {
        bail!("a `--token` (or an entry of SERVE_LOAD_TOKEN) is empty; give each token, comma-separated in the environment");
    }
    let sessions_wanted = a.sessions.unwrap_or(a.clients).clamp(1, a.clients);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(a.clients)
        .timeout(Duration::from_millis(a.timeout_ms))
        .tcp_nodelay(true)
        .build()
        .context("cannot build the HTTP client")?;
    let client = Arc::new(Client {
        http,
        url: a.url.clone(),
    });
    let token_for = |j: usize| (!a.token.is_empty()).then(|| a.token[j % a.token.len()].clone());

    // Sessions are opened 32 at a time, as clients arriving over a moment would.
    let opening = Instant::now();
    let mut sessions = Vec::with_capacity(sessions_wanted);
    let mut session_errors = Vec::new();
    if a.stateless {
        sessions.push(Session {
            id: None,
            version: PROTOCOL_VERSION.to_string(),
            token: token_for(0),
        });
    }
    for chunk in (0..if a.stateless { 0 } else { sessions_wanted })
        .collect::<Vec<_>>()
        .chunks(32)
    {
        let opened = futures_join(chunk.iter().map(|&j| {
            let client = Arc::clone(&client);
            let token = token_for(j);
            async move { client.open(token).await }
        }))
        .await;
        for r in opened {
            match r {
                Ok(s) => sessions.push(s),
                Err(e) => session_errors.push(format!("{e:#}")),
            }
        }
    }
    let open_s = opening.elapsed().as_secs_f64();
    if sessions.is_empty() {
        bail!(
            "no MCP session could be opened: {}",
            session_errors.first().map_or("", String::as_str)
        );
    }

    let start = Arc::new(tokio::sync::Barrier::new(a.clients + 1));
    let mut tasks = Vec::with_capacity(a.clients);
    for i in 0..a.clients {
        let client = Arc::clone(&client);
        let session = sessions[i % sessions.len()].clone();
        let start = Arc::clone(&start);
        let tool = a.tool.clone();
        let arguments = arguments.clone();
        let calls = a.calls;
        let stateless = a.stateless;
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(calls);
            let mut errors = Vec::new();
            start.wait().await;
            for k in 0..calls {
                // Unique within the session its clients share: a server routes answers by id.
                let id = json!(i * calls + k + 1);
                let mut message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": tool, "arguments": arguments}});
                if stateless {
                    message["params"]["_meta"] =
                        json!({"io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION});
                }
                let sent = Instant::now();
                let outcome = client.post(Some(&session), None, &message).await;
                latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
                match outcome {
                    Err(e) => errors.push(format!("{e:#}")),
                    Ok((status, _, answer)) => match answer {
                        _ if status != 200 => errors.push(format!("HTTP {status}")),
                        Err(_) => errors.push("no JSON-RPC response in the body".to_string()),
                        Ok(v) if v.get("error").is_some() => {
                            errors.push(format!("JSON-RPC error {}", v["error"]))
                        }
                        Ok(v) if v["result"]["isError"] == json!(true) => {
                            let text = v["result"]["content"][0]["text"].as_str().unwrap_or("");
                            errors.push(format!(
                                "tool error: {}",
                                text.chars().take(200).collect::<String>()
                            ))
                        }
                        Ok(_) => {}
                    },
                }
            }
            (latencies, errors)
        }));
    }
    start.wait().await;
    let began = Instant::now();
    let mut latencies = Vec::with_capacity(a.clients * a.calls);
    let mut errors = Vec::new();
    for task in tasks {
        let (l, e) = task.await.context("a client task panicked")?;
        latencies.extend(l);
        errors.extend(e);
    }
    let wall = began.elapsed().as_secs_f64();
    for s in &sessions {
        client.close(s).await;
    }
    latencies.sort_by(f64::total_cmp);
    let calls = latencies.len();
    let mut samples: Vec<&String> = session_errors.iter().chain(&errors).collect();
    samples.truncate(5);
    let report = json!({
        "url": a.url,
        "tool": a.tool,
        "clients": a.clients,
        "sessions": if a.stateless { 0 } else { sessions.len() },
        "stateless": a.stateless,
        "session_errors": session_errors.len(),
        "calls": calls,
        "errors": errors.len(),
        "error_samples": samples,
        "p50_ms": round(quantile(&latencies, 0.50)),
        "p90_ms": round(quantile(&latencies, 0.90)),
        "p99_ms": round(quantile(&latencies, 0.99)),
        "max_ms": round(latencies.last().copied().unwrap_or(0.0)),
        "calls_per_s": round(calls as f64 / wall.max(1e-9)),
        "wall_s": round(wall),
        "sessions_open_s": round(open_s),
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(errors.is_empty() && session_errors.is_empty())
}

/// Awaits every future of `futures`, run concurrently, in order.
async fn futures_join<T: Send + 'static>(
    futures: impl Iterator<Item = impl std::future::Future<Output = Result<T>> + Send + 'static>,
) -> Vec<Result<T>> {
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(
            h.await
                .unwrap_or_else(|e| Err(anyhow::anyhow!("a session task failed: {e}"))),
        );
    }
    out
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("serve-load: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("serve-load: {e:#}");
            ExitCode::from(2)
        }
    }
}
