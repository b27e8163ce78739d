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
use toolcat::Catalog;
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
    /// printed on stderr) instead of stdio. The endpoint is `/mcp`. Without `--tokens` or
    /// `--oauth-issuer` there is no authentication, so only loopback addresses (`127.0.0.1`,
    /// `::1`) are accepted, and requests must name a loopback host (`localhost`, `127.0.0.1`,
    /// `[::1]`) with the bound port in their `Host` header and, when they carry an `Origin`, be
    /// from `http(s)://` + such a host + the bound port, against DNS rebinding. With either,
    /// any address may be bound and every request needs `Authorization: Bearer TOKEN`.
    #[arg(long, value_name = "ADDR", value_parser = super::args::socket_address)]
    pub http: Option<SocketAddr>,
    /// With `--http`: authenticate requests with the bearer tokens of FILE (`toolcat token add`
    /// makes them), each bound to a profile and an exposure scope; a request is served that
    /// profile's tools ∩ `--profile`'s at the narrower of the two scopes. The file is re-read
    /// when it changes, so a revoked token is refused at the next request.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub tokens: Option<PathBuf>,
    /// With `--http`: act as an OAuth 2.1 resource server of this issuer: JWT access tokens are
    /// validated against its JWKS (found from its `/.well-known/oauth-authorization-server`,
    /// else `openid-configuration`); the `scope` claim's `toolcat:read-only`, `toolcat:staging`
    /// or `toolcat:full` grants the exposure scope (never wider than `--exposure`). The
    /// protected resource metadata is served at `/.well-known/oauth-protected-resource/mcp`.
    #[arg(long, value_name = "URL", requires_all = ["http", "oauth_audience"])]
    pub oauth_issuer: Option<String>,
    /// The audience (`aud`) an access token must carry, e.g. this server's URL.
    #[arg(long, value_name = "AUD", requires = "oauth_issuer")]
    pub oauth_audience: Option<String>,
    /// The issuer's JWKS URL, instead of discovering it from the issuer's metadata.
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub oauth_jwks: Option<String>,
    /// A claim whose string value names the profile granted (a profile of the catalog; the
    /// tools served are that profile's ∩ `--profile`'s). Default: `--profile` for every token.
    #[arg(long, value_name = "NAME", requires = "oauth_issuer")]
    pub oauth_profile_claim: Option<String>,
    /// This server's resource identifier, as clients reach it (e.g.
    /// `https://mcp.example.com/mcp` behind a TLS proxy); named in the protected resource
    /// metadata and the `WWW-Authenticate` challenges. Default: `http://` + the request's
    /// `Host` + `/mcp`.
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub oauth_resource: Option<String>,
    /// With `--http`: serve each request on its own, with no MCP session (no `Mcp-Session-Id`,
    /// no `initialize` needed), so any replica behind a balancer answers any request. Without
    /// it (the default) clients open sessions, which a balancer must keep on one replica
    /// (affinity on the `Mcp-Session-Id` header); stateless requests get no `list_changed`
    /// notifications and no elicitation for `gated` tools (they answer `needs-approval`), and
    /// `--dynamic`, whose discoveries live in a session, cannot be used with it.
    #[arg(long, requires = "http")]
    pub stateless: bool,
    /// Serve Prometheus metrics at `http://ADDR/metrics` on a listener of their own (e.g.
    /// `127.0.0.1:9464`; port 0 picks a free port, printed on stderr): calls by tool, state and
    /// error kind, call latency, rate-limit refusals, HTTP requests by status (the README's
    /// "Observability" lists every metric). Loopback addresses only, and requests must name a
    /// loopback host with the bound port, as for `--http`; scrape from another host through a
    /// proxy of your own.
    #[arg(long, value_name = "ADDR", value_parser = super::args::socket_address)]
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
    /// profile's `max_tools`. Needs sessions, so not with `--stateless`.
    #[arg(long, conflicts_with = "stateless")]
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
        if !addr.ip().is_loopback() && a.tokens.is_none() && a.oauth_issuer.is_none() {
            anyhow::bail!(
                "`--http {addr}` is not a loopback address, and no authentication is configured: any host that reaches it could run tools; configure `--tokens FILE` (`toolcat token add`) or `--oauth-issuer URL --oauth-audience AUD`, or bind `127.0.0.1` or `[::1]`"
            );
        }
        if a.tokens.is_none() && a.oauth_issuer.is_none() {
            if let Err(message) = toolcat::mcp::loopback::check_bind(addr) {
                anyhow::bail!("`--http`: {message}");
            }
        }
    }
    if let Some(addr) = a.metrics {
        if !addr.ip().is_loopback() {
            anyhow::bail!(
                "`--metrics {addr}` is not a loopback address: the metrics name the catalog's tools and their traffic, and the listener has no authentication; bind `127.0.0.1` or `[::1]`, and scrape from other hosts through a proxy of your own"
            );
        }
        if let Err(message) = toolcat::mcp::loopback::check_bind(addr) {
            anyhow::bail!("`--metrics`: {message}");
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
    let location = a.store.location(true)?;
    // Its errors name the store and the fix.
    let store = super::args::open_store(&location)?;
    // The archive in the same store: the same file, or the same database and lease.
    let archive = ResultArchive::beside(&store, toolcat::ArchiveLimits::default())
        .with_context(|| format!("cannot open the result archive `{location}`"))?;
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
    let mut auth = mcp::auth::Authenticator::default();
    if let Some(path) = &a.tokens {
        auth = auth.with_tokens(mcp::auth::Tokens::open(path, shared.table().catalog())?);
    }
    if let (Some(issuer), Some(audience)) = (&a.oauth_issuer, &a.oauth_audience) {
        let config = mcp::oauth::OAuthConfig {
            issuer: issuer.clone(),
            audience: audience.clone(),
            jwks: a.oauth_jwks.clone(),
            profile_claim: a.oauth_profile_claim.clone(),
            resource: a.oauth_resource.clone(),
        };
        let oauth = runtime
            .block_on(mcp::oauth::OAuth::start(config))
            .with_context(|| format!("cannot use the OAuth issuer `{issuer}`"))?;
        eprintln!(
            "toolcat serve: OAuth issuer `{issuer}`, keys from `{}`",
            oauth.jwks_url()
        );
        auth = auth.with_oauth(oauth);
    }
    let options = mcp::HttpOptions {
        auth: auth.is_configured().then(|| Arc::new(auth)),
        stateless: a.stateless,
    };
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
            Some(addr) => mcp::serve_http_with(shared, addr, options, |bound| {
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
