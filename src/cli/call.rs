//! `toolcat call`: one tool with JSON arguments through the execution coordinator, recorded in
//! the call store; its JSON result on stdout.

use crate::cli::Exit;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context as _};
use clap::Args;

use super::args::{catalog, workspace_dir, CatalogArg, ConnectArgs, StoreArg};
use super::servers;

#[derive(Debug, Args)]
pub struct CallArgs {
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// The tool's exported or declared name.
    pub name: String,
    /// The arguments, as a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub args: String,
    /// The workspace file tools work in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Approve a `gated` tool: the concrete operation (arguments and targets, with
    /// fingerprints) is printed to stderr, then it runs. Without it gated tools are refused.
    #[arg(long)]
    pub approve: bool,
    /// Run a deprecated tool (`status = "deprecated"`). Without it the call runs nothing and
    /// the error names the tool's `replaced_by` and removal date.
    #[arg(long)]
    pub allow_deprecated: bool,
    /// The call store the call is recorded in before it runs (`toolcat calls` lists it).
    #[command(flatten)]
    pub store: StoreArg,
    /// How a remote tool's MCP server is connected (only the called tool's server is started).
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Runs `toolcat call`.
pub fn run(a: &CallArgs) -> anyhow::Result<Exit> {
    let c = catalog(&a.catalog)?;
    let tool = c.tool(&a.name)?;
    if !a.allow_deprecated {
        if let Some(notice) = toolcat::meta::deprecation_notice(&c, tool) {
            eprintln!("error: {notice}; nothing ran");
            eprintln!("help: pass `--allow-deprecated` to run it anyway until its removal");
            return Ok(Exit::CheckFailed);
        }
    }
    let args: serde_json::Value = serde_json::from_str(&a.args).with_context(|| {
        format!(
            "`--args` is not JSON: `{}`; pass an object such as '{{\"path\": \"README.md\"}}'",
            a.args
        )
    })?;
    if !args.is_object() {
        bail!("`--args` must be a JSON object, got `{}`", a.args);
    }
    let workspace = workspace_dir(a.workspace.as_deref())?;
    let ctx = toolcat::ToolContext::new(workspace);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // A remote tool's server is started (alone) in the background now; the call waits for it at
    // most `--wait`.
    let pool = match servers::servers_for_call(&c, &a.connect, tool)? {
        None => None,
        Some(only) => {
            let _entered = runtime.enter();
            servers::start_pool(
                &c,
                &a.catalog,
                &a.connect,
                Some(only),
                std::time::Duration::from_millis(servers::DEFAULT_CALL_WAIT_MS),
            )?
        }
    };
    // The one execution path: scope (every tool of the catalog), validation, prepare, approval,
    // scheduling, re-verification, execution and, with a store, the call record.
    let mut coordinator = toolcat::Coordinator::new(&c, ctx);
    if let Some(pool) = &pool {
        let budget = pool.wait_budget();
        if !runtime.block_on(pool.wait_ready(budget)) {
            servers::note_unready(pool, budget);
        }
        coordinator = coordinator.with_servers(std::sync::Arc::clone(pool));
    }
    // Every call is recorded, in the same default store `toolcat calls` reads; a store that
    // cannot be opened runs nothing (the record must exist before the side effect).
    let store = super::args::open_store(&a.store.location(true)?)?;
    coordinator = coordinator.with_store(std::sync::Arc::new(store));
    if a.approve {
        coordinator = coordinator.with_approval(|req| {
            let targets: Vec<String> = req
                .targets
                .iter()
                .map(|t| match &t.fingerprint {
                    Some(f) => format!("{} ({}, {f})", t.resource, t.access.as_str()),
                    None => format!("{} ({})", t.resource, t.access.as_str()),
                })
                .collect();
            eprintln!(
                "approved `{}` with {}{}",
                req.catalog.exported_name(req.tool),
                req.arguments,
                if targets.is_empty() {
                    String::new()
                } else {
                    format!("; targets: {}", targets.join(", "))
                }
            );
            true
        });
    }
    let allowed = c.profile_tools(c.full_profile()).to_vec();
    let outcome =
        runtime.block_on(coordinator.call(toolcat::CallRequest::new(tool, args, &allowed)));
    drop(coordinator);
    drop(pool);
    // The server's child process ends with the runtime.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    if let Some(e) = &outcome.record_error {
        eprintln!("warning: {e}");
    }
    let ran = outcome.ran;
    match outcome.result {
        Ok(value) => {
            let mut out = std::io::stdout().lock();
            serde_json::to_writer_pretty(&mut out, &value.value)?;
            writeln!(out)?;
            Ok(Exit::Ok)
        }
        Err(e) => {
            eprintln!("error: {e}");
            if matches!(e, toolcat::CallError::NeedsApproval { .. }) {
                eprintln!("help: pass `--approve` to approve this operation from the command line");
            }
            use toolcat::{CallError as E, ToolError as T};
            // Refused for its input (or its row's drift) before anything ran, by the
            // coordinator or by the tool's prepare step (a stale version, a patch that does not
            // parse): 1; it ran, or its server could not be reached, and it failed: 3.
            Ok(match e {
                E::Tool(T::Failed(_)) if !ran => Exit::CheckFailed,
                E::OutsideScope { .. }
                | E::InvalidArguments { .. }
                | E::NeedsApproval { .. }
                | E::Denied { .. }
                | E::SchemaDrift { .. }
                | E::Tool(
                    T::InvalidArguments { .. }
                    | T::UnknownTool(_)
                    | T::MetaTool(_)
                    | T::NoHandler(_)
                    | T::OutsideWorkspace { .. },
                ) => Exit::CheckFailed,
                _ => Exit::Runtime,
            })
        }
    }
}
