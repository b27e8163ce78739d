//! Remote MCP servers on the command line: `toolcat servers` (where each server's connection
//! is), `toolcat import --from-server` (rows for the tools a running server serves),
//! `toolcat check --live` (the declared rows against what the servers serve now), and the
//! [`ServerPool`] that `toolcat session`, `toolcat call` and `toolcat serve` start so that remote
//! tools run through the execution coordinator.
//!
//! Connections are made in the background when a command starts ([`ServerPool::start`]); a
//! command waits for them at most its wait budget (`--wait MS`) and then goes on: a server still
//! connecting keeps connecting, and its tools answer that it is not connected until it is ready.
//! `toolcat::remote` documents the states, the discovery cache, schema drift and credentials.

use crate::cli::Exit;
use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context as _};
use clap::Args;
use serde_json::{json, Value};
use toolcat::remote::{
    self, Discovery, LiveReport, PoolOptions, ServerConfig, ServerPool, ServerState, ServerStatus,
    Transport,
};
use toolcat::{Catalog, ServerId, ToolIndex, ToolSource};
use toolcat_import::{self as import, LiveServer};

use super::args::{self, CatalogArg, ConnectArgs, REFERENCE_LABEL};

/// What `--wait` defaults to for `toolcat servers`: 5 s, long enough for a server started with
/// `npx` or `uvx` from a warm cache.
pub const DEFAULT_STATUS_WAIT_MS: u64 = 5_000;

/// What `--wait` defaults to for `toolcat call` of a remote tool: the default connection
/// timeout of one server (10 s), since the call needs that server.
pub const DEFAULT_CALL_WAIT_MS: u64 = remote::DEFAULT_CONNECT_TIMEOUT.as_millis() as u64;

#[derive(Debug, Args)]
pub struct ServersArgs {
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// How long to wait for the servers to connect before reporting, in milliseconds; a server
    /// still connecting then is reported `connecting`.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_STATUS_WAIT_MS)]
    pub wait: u64,
    /// Connect only these servers (the others are reported `not-connected`); repeatable.
    #[arg(long = "server", value_name = "NAME")]
    pub servers: Vec<String>,
    /// Print a JSON array, one object per server: `name`, `transport`, `state` (`connecting`,
    /// `ready`, `failed` or `not-connected`), `error` and `retry_in_ms` when failed, `tools`,
    /// `captured_at_ms` (Unix epoch) and `last_error`.
    #[arg(long)]
    pub json: bool,
}

/// The configurations the pool uses instead of the catalog's tables: for the reference catalog
/// compiled into this binary, whose tables keep no `env`, `headers` or `connect_timeout_ms`,
/// every `[mcp_server]` of its `tools.toml` text; none for a catalog loaded from a file (the
/// pool reads the file again).
///
/// # Errors
/// When the compiled-in text does not load (it always does: the build checked it).
pub fn configs(arg: &CatalogArg) -> anyhow::Result<Vec<ServerConfig>> {
    match arg.path()? {
        Some(_) => Ok(Vec::new()),
        None => ServerConfig::all_from_source(REFERENCE_LABEL, crate::REFERENCE_SOURCE)
            .map_err(anyhow::Error::from),
    }
}

/// The configuration of server `s` of `c` read with `arg`.
fn config_of(c: &Catalog, arg: &CatalogArg, s: ServerId) -> anyhow::Result<ServerConfig> {
    let name = c.server_name(s);
    if let Some(config) = configs(arg)?.into_iter().find(|x| x.name == name) {
        return Ok(config);
    }
    Ok(ServerConfig::from_catalog(c, s)?)
}

/// Starts connecting to the servers `connect` selects, in the background, inside the current
/// tokio runtime (without `--servers`, each at the first call of one of its tools): `None` when
/// the catalog declares no server.
///
/// # Errors
/// An unknown name in `--servers`.
pub fn start_pool(
    c: &Catalog,
    arg: &CatalogArg,
    connect: &ConnectArgs,
    only: Option<Vec<String>>,
    default_wait: Duration,
) -> anyhow::Result<Option<Arc<ServerPool>>> {
    if c.servers().len() == 0 {
        return Ok(None);
    }
    let options = PoolOptions {
        wait_budget: connect
            .wait
            .map(Duration::from_millis)
            .unwrap_or(default_wait),
        only,
        configs: configs(arg)?,
        lazy: connect.lazy(),
        ..PoolOptions::default()
    };
    Ok(Some(ServerPool::start(c, options)))
}

/// The servers `toolcat call` of `tool` connects: the tool's own (when `--servers` allows it),
/// none for a tool that is not remote (`None` when the pool need not start at all).
pub fn servers_for_call(
    c: &Catalog,
    connect: &ConnectArgs,
    tool: ToolIndex,
) -> anyhow::Result<Option<Vec<String>>> {
    let selected = connect.only(c)?;
    let ToolSource::Server(s) = c.source(tool) else {
        return Ok(None);
    };
    let name = c.server_name(s).to_string();
    Ok(Some(match selected {
        Some(names) if !names.contains(&name) => Vec::new(),
        _ => vec![name],
    }))
}

/// One line on stderr per server that is not ready after the wait: its state and why.
pub fn note_unready(pool: &ServerPool, budget: Duration) {
    for status in pool.status() {
        match &status.state {
            ServerState::Connecting => eprintln!(
                "note: MCP server `{}` is still connecting after {} ms; it goes on in the background, and its tools answer `not connected` until it is ready",
                status.name,
                budget.as_millis()
            ),
            ServerState::Failed { error, .. } => {
                eprintln!("note: MCP server `{}` failed: {error}", status.name)
            }
            ServerState::Ready | ServerState::NotConnected => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// toolcat servers
// ---------------------------------------------------------------------------------------------

/// Runs `toolcat servers`: exit 0 once the status is printed, whatever the states.
pub fn run(a: &ServersArgs) -> anyhow::Result<Exit> {
    let c = args::catalog(&a.catalog)?;
    for name in &a.servers {
        args::server_id(&c, name)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let bar = crate::cli::spinner("connecting the MCP servers");
    let statuses = runtime.block_on(async {
        let options = PoolOptions {
            only: (!a.servers.is_empty()).then(|| a.servers.clone()),
            configs: configs(&a.catalog)?,
            ..PoolOptions::default()
        };
        let pool = ServerPool::start(&c, options);
        pool.wait_ready(Duration::from_millis(a.wait)).await;
        anyhow::Ok(pool.status())
    });
    bar.finish_and_clear();
    let statuses = statuses?;
    // The pool's child processes end with the runtime.
    runtime.shutdown_timeout(Duration::from_secs(1));
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &statuses)?;
        writeln!(out)?;
        return Ok(Exit::Ok);
    }
    if statuses.is_empty() {
        eprintln!(
            "the catalog declares no MCP server; add `[mcp_server.NAME]` tables to connect one"
        );
        return Ok(Exit::Ok);
    }
    let width = statuses
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(6)
        .max(6);
    writeln!(
        out,
        "{:width$}  {:9}  {:13}  {:>5}  {:20}  detail",
        "server", "transport", "state", "tools", "captured"
    )?;
    for s in &statuses {
        writeln!(
            out,
            "{:width$}  {:9}  {:13}  {:>5}  {:20}  {}",
            s.name,
            s.transport,
            s.state.as_str(),
            s.tools.map_or("-".to_string(), |n| n.to_string()),
            s.captured_at.map_or("-".to_string(), timestamp),
            detail(s)
        )?;
    }
    Ok(Exit::Ok)
}

/// What the table's last column says about a server.
fn detail(s: &ServerStatus) -> String {
    match &s.state {
        ServerState::Failed { error, retry_in_ms } => match retry_in_ms {
            Some(ms) => format!("{error} (next attempt in {ms} ms)"),
            None => format!("{error} (not retried)"),
        },
        ServerState::NotConnected => "not connected by this command".to_string(),
        ServerState::Connecting => match &s.last_error {
            Some(e) => format!("still connecting when the wait ended; the last attempt: {e}"),
            None => "still connecting when the wait ended".to_string(),
        },
        ServerState::Ready => match &s.last_error {
            Some(e) => format!("earlier: {e}"),
            None => String::new(),
        },
    }
}

/// `t` as RFC 3339 UTC, to the second.
fn timestamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    time::OffsetDateTime::from_unix_timestamp(i64::try_from(secs).unwrap_or(0))
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| secs.to_string())
}

// ---------------------------------------------------------------------------------------------
// toolcat import --from-server
// ---------------------------------------------------------------------------------------------

/// One `--from-server` value resolved: the server's name and configuration.
#[derive(Debug)]
struct Source {
    config: ServerConfig,
    /// Whether the name came from the catalog (its `[mcp_server]` entry).
    declared: bool,
}

/// Resolves a `--from-server` value: a server the catalog declares, else `NAME=COMMAND LINE`,
/// else a command line (split as a POSIX shell would, without expansions) whose server is named
/// after its program (`mcp-server-time` → `time`) or `--server NAME`.
fn resolve_source(
    c: &Catalog,
    arg: &CatalogArg,
    value: &str,
    name: Option<&str>,
) -> anyhow::Result<Source> {
    if let Some(s) = c.servers().find(|&s| c.server_name(s) == value) {
        return Ok(Source {
            config: config_of(c, arg, s)?,
            declared: true,
        });
    }
    let (given_name, line) = match value.split_once('=') {
        Some((n, rest)) if import::is_valid_name(n) && !rest.trim().is_empty() => {
            (Some(n.to_string()), rest)
        }
        _ => (name.map(str::to_string), value),
    };
    let Some(words) = shlex::split(line) else {
        bail!("`--from-server {value}` is not a command line (an unclosed quote?); quote the whole command once, e.g. `--from-server \"uvx mcp-server-time\"`");
    };
    let Some((program, args)) = words.split_first() else {
        bail!("`--from-server` is empty; pass a server the catalog declares ({}) or a command that starts one", args::declared(c));
    };
    let server = match given_name {
        Some(n) => n,
        None => name_after(program, args),
    };
    Ok(Source {
        config: ServerConfig::stdio(program.clone(), args.iter().cloned()).with_name(server),
        declared: false,
    })
}

/// A server name from its command line: the program's file name, or for a launcher (`npx`,
/// `uvx`, `node`, `python`, ...) its first argument that is not an option; without a directory,
/// an extension, a version (`@1.2`) and the usual `mcp-server-`/`server-` prefix or `-mcp`
/// suffix (`@modelcontextprotocol/server-filesystem` → `filesystem`).
pub fn name_after(program: &str, args: &[String]) -> String {
    const LAUNCHERS: &[&str] = &[
        "npx", "uvx", "uv", "node", "python", "python3", "bunx", "pnpx", "deno", "pipx",
    ];
    let file = |p: &str| -> String {
        let p = p.rsplit('/').next().unwrap_or(p);
        // `@scope/pkg@1.2.3` → `pkg`; `server.py` → `server`.
        let p = p.split('@').find(|s| !s.is_empty()).unwrap_or(p);
        let p = p.rsplit_once('.').map_or(p, |(stem, _)| stem);
        p.to_string()
    };
    let mut base = file(program);
    if LAUNCHERS.contains(&base.as_str()) {
        if let Some(first) = args
            .iter()
            .find(|a| !a.starts_with('-') && a.as_str() != "run")
        {
            base = file(first);
        }
    }
    let mut name = base.as_str();
    for prefix in ["mcp-server-", "mcp_server_", "server-", "server_"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            name = rest;
        }
    }
    for suffix in [
        "-mcp-server",
        "_mcp_server",
        "-mcp",
        "_mcp",
        "-server",
        "_server",
    ] {
        if let Some(rest) = name.strip_suffix(suffix) {
            name = rest;
        }
    }
    import::map_name(name, "server")
}

/// Runs `toolcat import --from-server VALUE...`: connects to each server once, lists its tools
/// and prints `tools.toml` text with rows for them (report on stderr).
pub fn import_from_servers(
    catalog_arg: &CatalogArg,
    values: &[String],
    name: Option<&str>,
    timeout: Option<Duration>,
) -> anyhow::Result<Exit> {
    if name.is_some() && values.len() > 1 {
        bail!("`--server NAME` names the one server of `--from-server`; with several, write each as `--from-server NAME=COMMAND`");
    }
    let c = args::catalog(catalog_arg)?;
    let mut sources = Vec::new();
    for value in values {
        sources.push(resolve_source(&c, catalog_arg, value, name)?);
    }
    for (i, s) in sources.iter().enumerate() {
        if sources[..i].iter().any(|o| o.config.name == s.config.name) {
            bail!("two `--from-server` values give the server name `{}`; name them apart with `--from-server NAME=COMMAND`", s.config.name);
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let bar = crate::cli::spinner("listing the MCP servers' tools");
    let discoveries = runtime.block_on(discover_all(
        sources.iter().map(|s| s.config.clone()).collect(),
        timeout,
    ));
    bar.finish_and_clear();
    runtime.shutdown_timeout(Duration::from_secs(1));
    let mut live = Vec::new();
    for (source, discovery) in sources.iter().zip(discoveries) {
        let discovery = discovery.map_err(|e| {
            let hint = if source.declared {
                String::new()
            } else {
                format!(
                    "; `{}` is not a server of the catalog ({}), so it was started as a command",
                    values[live.len()],
                    args::declared(&c)
                )
            };
            anyhow::anyhow!("{e}{hint}")
        })?;
        let (transport, env, headers) = match &source.config.transport {
            Transport::Stdio { command, args, env } => (
                import::Transport::Stdio {
                    command: command.clone(),
                    args: args.clone(),
                },
                env.clone(),
                Default::default(),
            ),
            Transport::Http { url, headers } => (
                import::Transport::Http { url: url.clone() },
                Default::default(),
                headers.clone(),
            ),
        };
        let description = source
            .declared
            .then(|| {
                c.servers()
                    .find(|&s| c.server_name(s) == source.config.name)
                    .and_then(|s| server_description(&c, catalog_arg, s))
            })
            .flatten();
        live.push(LiveServer {
            name: source.config.name.clone(),
            description,
            server_info: None,
            transport,
            env,
            headers,
            tools: discovery.tools.iter().map(tool_object).collect(),
        });
    }
    let command = import_command_line(values, name);
    let output = import::import_live(&live, &command)?;
    write!(std::io::stdout().lock(), "{}", output.text)?;
    eprint!("{}", output.report);
    if !output.report.renamed.is_empty() {
        // A renamed row records the server's name as `remote_name`: calls send that name, so
        // the row runs its own tool; the model sees the row's name.
        eprintln!(
            "note: {} renamed tool(s) are called by their `remote_name` (the server's name) and shown to models by their row `name`; `toolcat check --live` matches them by `remote_name`",
            output.report.renamed.len()
        );
    }
    Ok(Exit::Ok)
}

/// The command line the imported text's header names.
fn import_command_line(values: &[String], name: Option<&str>) -> String {
    let mut line = "toolcat import".to_string();
    for v in values {
        let quoted = shlex::try_quote(v).map_or_else(|_| v.clone(), |q| q.into_owned());
        line.push_str(&format!(" --from-server {quoted}"));
    }
    if let Some(n) = name {
        line.push_str(&format!(" --server {n}"));
    }
    line
}

/// The `description` of `[mcp_server.NAME]` in the catalog's text, when it can be read.
fn server_description(c: &Catalog, arg: &CatalogArg, s: ServerId) -> Option<String> {
    let name = c.server_name(s);
    let (path, source) = match arg.path().ok()? {
        None => (
            REFERENCE_LABEL.to_string(),
            crate::REFERENCE_SOURCE.to_string(),
        ),
        Some(p) => (
            p.display().to_string(),
            toolcat::catalog::read_catalog_source(p).ok()?,
        ),
    };
    let loaded = toolcat_catalog::load::parse(&path, &source).ok()?;
    loaded
        .file
        .mcp_server
        .get(name)
        .map(|d| d.description.clone())
}

/// A listed tool as the MCP tool object the importer reads.
fn tool_object(t: &remote::RemoteTool) -> Value {
    let mut o = json!({"name": t.name, "inputSchema": t.input_schema});
    if let Some(schema) = &t.output_schema {
        o["outputSchema"] = schema.clone();
    }
    if let Some(d) = &t.description {
        o["description"] = json!(d);
    }
    if let Some(a) = &t.annotations {
        o["annotations"] = a.clone();
    }
    o
}

/// Discovers every server at once, each within `timeout` (else its own connect timeout).
async fn discover_all(
    configs: Vec<ServerConfig>,
    timeout: Option<Duration>,
) -> Vec<Result<Discovery, remote::RemoteError>> {
    let tasks: Vec<_> = configs
        .into_iter()
        .map(|config| {
            tokio::spawn(async move {
                let limit = timeout.unwrap_or_else(|| config.connect_timeout());
                remote::discover(&config, limit).await
            })
        })
        .collect();
    let mut out = Vec::with_capacity(tasks.len());
    for task in tasks {
        out.push(match task.await {
            Ok(r) => r,
            Err(e) => Err(remote::RemoteError::Connect {
                server: String::new(),
                message: format!("the discovery task ended abnormally: {e}"),
            }),
        });
    }
    out
}

// ---------------------------------------------------------------------------------------------
// toolcat check --live
// ---------------------------------------------------------------------------------------------

/// `toolcat check --live`: lists each selected server's tools now and compares them with the
/// declared rows; prints one block per server and returns [`Exit::Ok`] when every server matched,
/// [`Exit::Runtime`] when a server cannot be reached, else [`Exit::CheckFailed`] (drift).
pub fn check_live(
    c: &Catalog,
    arg: &CatalogArg,
    only: &[String],
    timeout: Option<Duration>,
    json_out: bool,
) -> anyhow::Result<Exit> {
    let servers: Vec<ServerId> = if only.is_empty() {
        c.servers().collect()
    } else {
        only.iter()
            .map(|n| args::server_id(c, n))
            .collect::<anyhow::Result<_>>()?
    };
    if servers.is_empty() {
        eprintln!("the catalog declares no MCP server: nothing to check live");
        return Ok(Exit::Ok);
    }
    let mut configs = Vec::new();
    for &s in &servers {
        configs.push(config_of(c, arg, s)?);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let bar = crate::cli::spinner("listing the MCP servers' tools");
    let discoveries = runtime.block_on(discover_all(configs, timeout));
    bar.finish_and_clear();
    runtime.shutdown_timeout(Duration::from_secs(1));
    let mut clean = true;
    let mut unreachable = false;
    let mut rows = Vec::new();
    let mut out = std::io::stdout().lock();
    for (&s, discovery) in servers.iter().zip(discoveries) {
        let name = c.server_name(s);
        let report = match discovery {
            Ok(d) => remote::live_report(c, s, &d),
            Err(e) => {
                clean = false;
                unreachable = true;
                if json_out {
                    rows.push(json!({"server": name, "error": e.to_string()}));
                } else {
                    writeln!(out, "server `{name}`: cannot be checked: {e}")?;
                }
                continue;
            }
        };
        clean &= report.is_clean();
        if json_out {
            rows.push(report_json(c, s, &report));
        } else {
            write_report(&mut out, c, s, &report)?;
        }
    }
    if json_out {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    }
    Ok(if unreachable {
        Exit::Runtime
    } else if clean {
        Exit::Ok
    } else {
        Exit::CheckFailed
    })
}

/// The exported name of server `s`'s row `declared`, or the name itself when no row has it.
fn exported(c: &Catalog, s: ServerId, declared: &str) -> String {
    c.tools()
        .find(|&t| c.source(t) == ToolSource::Server(s) && c.name(t) == declared)
        .map_or_else(|| declared.to_string(), |t| c.exported_name(t).to_string())
}

fn report_json(c: &Catalog, s: ServerId, r: &LiveReport) -> Value {
    json!({
        "server": r.server,
        "clean": r.is_clean(),
        "added": r.added.iter().map(|t| &t.name).collect::<Vec<_>>(),
        "removed": r.removed.iter().map(|n| exported(c, s, n)).collect::<Vec<_>>(),
        "changed": r.changed.iter().map(|(n, drift)| json!({
            "tool": exported(c, s, n),
            "change": drift.to_string(),
            "changes": drift.changes,
        })).collect::<Vec<_>>(),
    })
}

fn write_report(
    out: &mut impl std::io::Write,
    c: &Catalog,
    s: ServerId,
    r: &LiveReport,
) -> std::io::Result<()> {
    let rows = c
        .tools()
        .filter(|&t| c.source(t) == ToolSource::Server(s))
        .count();
    let name = &r.server;
    if r.is_clean() {
        return writeln!(
            out,
            "server `{name}`: ok: {rows} declared tools, as served now"
        );
    }
    writeln!(
        out,
        "server `{name}`: {} added, {} removed, {} changed",
        r.added.len(),
        r.removed.len(),
        r.changed.len()
    )?;
    for t in &r.added {
        writeln!(
            out,
            "  added: `{}` is served but has no row (`toolcat import --from-server {name}` writes one)",
            t.name
        )?;
    }
    for n in &r.removed {
        let remote = c
            .tools()
            .find(|&t| c.source(t) == ToolSource::Server(s) && c.name(t) == n)
            .map(|t| c.remote_name(t))
            .filter(|remote| remote != n);
        match remote {
            Some(remote) => writeln!(
                out,
                "  removed: `{}` is declared as the server's `{remote}`, which is not served",
                exported(c, s, n)
            )?,
            None => writeln!(
                out,
                "  removed: `{}` is declared but no longer served",
                exported(c, s, n)
            )?,
        }
    }
    for (n, drift) in &r.changed {
        writeln!(
            out,
            "  changed: `{}`: {drift}; calls are refused until its `input_schema` is updated",
            exported(c, s, n)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_server_connecting_again_shows_why_the_last_attempt_failed() {
        let mut status = ServerStatus {
            name: "slow".to_string(),
            transport: "stdio",
            state: ServerState::Connecting,
            tools: None,
            captured_at: None,
            last_error: None,
        };
        assert_eq!(detail(&status), "still connecting when the wait ended");
        status.last_error = Some("MCP server `slow` did not answer within 300 ms".to_string());
        assert_eq!(
            detail(&status),
            "still connecting when the wait ended; the last attempt: MCP server `slow` did not answer within 300 ms"
        );
    }

    #[test]
    fn a_server_is_named_after_its_program_or_package() {
        let cases: &[(&str, &[&str], &str)] = &[
            ("/opt/venv/bin/mcp-server-time", &[], "time"),
            ("mcp-server-git", &["--repository", "."], "git"),
            (
                "npx",
                &["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                "filesystem",
            ),
            (
                "npx",
                &["-y", "@modelcontextprotocol/server-memory@2026.8.31"],
                "memory",
            ),
            ("uvx", &["mcp-server-fetch"], "fetch"),
            ("python3", &["tests/mcp_servers/drift_server.py"], "drift"),
            ("github-mcp-server", &["stdio"], "github"),
            ("node", &[], "node"),
        ];
        for (program, args, name) in cases {
            assert_eq!(
                name_after(program, &words(args)),
                *name,
                "{program} {args:?}"
            );
        }
    }

    #[test]
    fn servers_option_reads_all_none_and_names() {
        let c = crate::reference_catalog();
        let connect = |v: &[&str]| ConnectArgs {
            wait: None,
            servers: words(v),
        };
        assert_eq!(connect(&["all"]).only(c).unwrap(), None);
        assert_eq!(connect(&["none"]).only(c).unwrap(), Some(vec![]));
        assert_eq!(
            connect(&["github", "time"]).only(c).unwrap(),
            Some(words(&["github", "time"]))
        );
        let err = connect(&["gihub"]).only(c).unwrap_err().to_string();
        assert!(
            err.contains("no MCP server `gihub`") && err.contains("`github`"),
            "{err}"
        );
        let err = connect(&["all", "time"]).only(c).unwrap_err().to_string();
        assert!(err.contains("cannot be combined"), "{err}");
    }
}
