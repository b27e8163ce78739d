//! `toolcat serve`: the MCP server of [`toolcat::mcp`] on stdio or streamable HTTP.
//!
//! Output contract: stdout carries the MCP protocol on stdio (nothing else is ever printed there);
//! stderr carries the start line (with `--http`: `toolcat serve: listening on http://ADDR/mcp`,
//! the address actually bound, so a client can find a port chosen with `:0`; with `--metrics`:
//! `toolcat serve: metrics on http://ADDR/metrics`), reload reports and diagnostics. Exit code 0 when stdin ends (stdio), 1 when the catalog, profile, store or address
//! is unusable. Calls are recorded in the call store (`--store`, as for `toolcat calls`).

use crate::cli::Exit;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use toolcat::archive::ResultArchive;
use toolcat::mcp::{self, Reload, Selection};
use toolcat::{CallStore, Catalog};
use toolcat_catalog::model::Exposure;

use super::args::{workspace_dir, CatalogArg, ConnectArgs, ScopeArg, StoreArg};
use super::servers;

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// The profile whose tools are served.
    #[arg(long, value_name = "P")]
    pub profile: String,
    /// The MCP exposure scope granted to clients: tools of a wider exposure are neither listed
    /// nor run.
    #[arg(long, value_name = "S", value_enum)]
    pub exposure: ScopeArg,
    /// Serve streamable HTTP on this address (e.g. `127.0.0.1:8080`; port 0 picks a free port,
    /// printed on stderr) instead of stdio. The server has no authentication, so only loopback
    /// addresses (`127.0.0.1`, `::1`) are accepted; requests must name a loopback host
    /// (`localhost`, `127.0.0.1`, `[::1]`) with the bound port in their `Host` header and, when
    /// they carry an `Origin`, be from `http(s)://` + such a host + the bound port, against DNS
    /// rebinding. The endpoint is `/mcp`.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Serve Prometheus metrics at `http://ADDR/metrics` on a listener of their own (e.g.
    /// `127.0.0.1:9464`; port 0 picks a free port, printed on stderr): calls by tool, state and
    /// error kind, call latency, rate-limit refusals, HTTP requests by status (the README's
    /// "Observability" lists every metric). Loopback addresses only, and requests must name a
    /// loopback host with the bound port, as for `--http`; scrape from another host through a
    /// proxy of your own.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// The workspace local tools run in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Where every call is recorded and large results are archived for `read_tool_result`.
    #[command(flatten)]
    pub store: StoreArg,
    /// List and run the deprecated tools of the scope (`status = "deprecated"`). Without it they
    /// are neither listed nor run: a call answers `{"error":"deprecated"}` with the tool's
    /// `replaced_by` and removal date. Kept across reloads.
    #[arg(long)]
    pub allow_deprecated: bool,
    /// Serve only these toolsets' tools (comma-separated toolset names), plus any `--tools`;
    /// always within the profile and exposure. A name the catalog does not declare, or a
    /// toolset with no tool in the profile and exposure, is an error naming the allowed ones.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub toolsets: Vec<String>,
    /// Serve only these tools (comma-separated names), plus any `--toolsets`' tools; each must
    /// be in the profile and exposure (an error names the allowed ones otherwise).
    #[arg(long, value_name = "X,Y", value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Progressive disclosure: each MCP session starts with the inline tools and the
    /// discovery meta-tools (`tool_search`, `tool_describe`, `tool_call`, ...); tools a
    /// `tool_search` or `tool_describe` answers join that session's list
    /// (`notifications/tools/list_changed` is sent) and are callable by name, up to the
    /// profile's `max_tools`.
    #[arg(long)]
    pub dynamic: bool,
    /// How the catalog's MCP servers are connected: in the background from the start; serving
    /// begins after at most `--wait`, and calls of a server still connecting answer that it is
    /// not connected.
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Runs `toolcat serve`.
pub fn run(a: &ServeArgs) -> anyhow::Result<Exit> {
    if let Some(addr) = a.http {
        // Checked before the catalog loads: the refusal is about the command line alone.
        if !addr.ip().is_loopback() {
            anyhow::bail!(
                "`--http {addr}` is not a loopback address, and `toolcat serve` has no authentication: any host that reaches it could run tools; bind `127.0.0.1` or `[::1]`, and put an authenticating reverse proxy in front to serve other hosts"
            );
        }
    }
    if let Some(addr) = a.metrics {
        if !addr.ip().is_loopback() {
            anyhow::bail!(
                "`--metrics {addr}` is not a loopback address: the metrics name the catalog's tools and their traffic, and the listener has no authentication; bind `127.0.0.1` or `[::1]`, and scrape from other hosts through a proxy of your own"
            );
        }
    }
    let exposure = Exposure::from(a.exposure);
    let handlers: &'static [Option<toolcat::ErasedHandler>] = &crate::toolcat_generated::HANDLERS;
    let (catalog, reload): (&'static Catalog, Option<Reload>) = match a.catalog.path()? {
        None => (crate::reference_catalog(), None),
        Some(path) => {
            let catalog = match Catalog::load_with_handlers(path, handlers) {
                Ok(c) => c,
                // The diagnostics of an invalid catalog, rendered with their summary line.
                Err(e @ toolcat::CatalogError::Invalid { .. }) => {
                    eprintln!("{}", e.to_string().trim_end_matches('\n'));
                    return Ok(Exit::CheckFailed);
                }
                Err(e) => anyhow::bail!("{e}"),
            };
            if !catalog.warnings().is_empty() {
                super::seen::print_warnings_once(
                    path,
                    catalog.warnings().len(),
                    &catalog.render_warnings(),
                );
            }
            let watched = path.to_path_buf();
            let reload = Reload {
                path: path.to_path_buf(),
                load: Box::new(move || Catalog::load_with_handlers(&watched, handlers)),
            };
            // Served for the life of the process (see `toolcat::mcp`, "Reloading").
            (Box::leak(Box::new(catalog)), Some(reload))
        }
    };
    let workspace = workspace_dir(a.workspace.as_deref())?;
    let selection = Selection {
        toolsets: a.toolsets.clone(),
        tools: a.tools.clone(),
        dynamic: a.dynamic,
    };
    // The profile, exposure and selection are checked before any server is started: a bad
    // `--tools` or `--toolsets` is refused at once, not after the connection wait.
    mcp::Server::with_coordinator(
        mcp::coordinator(catalog, workspace.clone()),
        &a.profile,
        exposure,
    )
    .allow_deprecated(a.allow_deprecated)
    .selection(selection.clone())
    .shared()?;
    let store_path = a.store.path(true)?;
    let store = CallStore::open(&store_path)
        .with_context(|| format!("cannot open the call store `{}`", store_path.display()))?;
    let archive = ResultArchive::open(&store_path)
        .with_context(|| format!("cannot open the result archive `{}`", store_path.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // The catalog's MCP servers connect in the background; serving starts after at most the
    // wait budget. A reloaded catalog keeps this pool (its servers as declared at start).
    let pool = {
        let _entered = runtime.enter();
        let only = a.connect.only(catalog)?;
        servers::start_pool(
            catalog,
            &a.catalog,
            &a.connect,
            only,
            toolcat::remote::PoolOptions::default().wait_budget,
        )?
    };
    let mut coordinator = mcp::coordinator(catalog, workspace)
        .with_store(Arc::new(store))
        .with_archive(Arc::new(archive));
    if let Some(pool) = &pool {
        let budget = pool.wait_budget();
        if !runtime.block_on(pool.wait_ready(budget)) {
            servers::note_unready(pool, budget);
        }
        coordinator = coordinator.with_servers(Arc::clone(pool));
    }
    let shared = mcp::Server::with_coordinator(coordinator, &a.profile, exposure)
        .allow_deprecated(a.allow_deprecated)
        .selection(selection)
        .shared()?;
    eprintln!(
        "toolcat serve: profile `{}`, exposure `{}`: {} tools listed{}",
        a.profile,
        exposure.as_str(),
        shared.table().listed().len(),
        if a.dynamic {
            " (each session starts with the inline tools and the meta-tools)"
        } else {
            ""
        }
    );
    if let Some(addr) = a.metrics {
        let handle = metrics_recorder()?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(addr))
            .with_context(|| format!("cannot serve metrics on `{addr}`"))?;
        let bound = listener
            .local_addr()
            .context("cannot read the metrics address")?;
        eprintln!(
            "toolcat serve: metrics on http://{bound}{}",
            mcp::METRICS_PATH
        );
        runtime.spawn(async move {
            if let Err(e) = mcp::serve_metrics(listener, move || handle.render()).await {
                eprintln!("toolcat serve: serving metrics on `{bound}` failed: {e}");
            }
        });
    }
    runtime.block_on(async move {
        if let Some(reload) = reload {
            tokio::spawn(mcp::watch(Arc::clone(&shared), reload));
        }
        match a.http {
            None => mcp::serve_stdio(shared)
                .await
                .context("serving MCP on stdio failed"),
            Some(addr) => mcp::serve_http(shared, addr, |bound| {
                eprintln!("toolcat serve: listening on http://{bound}/mcp");
            })
            .await
            .with_context(|| format!("cannot serve MCP over HTTP on `{addr}`")),
        }
    })?;
    // Stdin ended: the client is gone; pending reload polls and handler tasks end with the
    // runtime.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(Exit::Ok)
}

/// Installs the Prometheus recorder of the runtime's metrics ([`toolcat::telemetry`]), the
/// duration histograms bucketed by [`toolcat::telemetry::LATENCY_BUCKETS_SECONDS`].
fn metrics_recorder() -> anyhow::Result<metrics_exporter_prometheus::PrometheusHandle> {
    use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
    use toolcat::telemetry::{MetricKind, LATENCY_BUCKETS_SECONDS, METRICS};

    let mut builder = PrometheusBuilder::new();
    for m in METRICS.iter().filter(|m| m.kind == MetricKind::Histogram) {
        builder = builder
            .set_buckets_for_metric(Matcher::Full(m.name.to_string()), &LATENCY_BUCKETS_SECONDS)
            .context("cannot set the metrics' histogram buckets")?;
    }
    let handle = builder
        .install_recorder()
        .context("cannot install the metrics recorder")?;
    toolcat::telemetry::describe();
    Ok(handle)
}
