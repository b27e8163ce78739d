//! `toolcat session`: JSONL turns and model steps on stdin, and what the model would receive at
//! each step on stdout.
//!
//! With `--format <mcp|openai|openai-responses|anthropic|gemini>` the session talks to that
//! provider (`SessionOptions::provider`: OpenAI strict-mode `null`s restored, Anthropic search
//! hits as `tool_reference` blocks) and each step's answers are also printed as the messages sent
//! back to it (`toolcat::provider::result_messages`; call ids `call_TURN_STEP_K`): a
//! `  reply: JSON` line per message, or a `"reply"` array on the step's `--json` line. Without
//! `--format` the output is the text of each answer, as before.

use crate::cli::Exit;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context as _};
use clap::Args;
use serde_json::json;
use toolcat::export::ExportFormat;
use toolcat::session::ProviderCall;

use super::args::{catalog, toolsets, workspace_dir, CatalogArg, ConnectArgs};
use super::servers;

#[derive(Debug, Args)]
pub struct SessionArgs {
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// The profile the agent runs under (default: the preset's).
    #[arg(long, value_name = "P", required_unless_present = "preset")]
    pub profile: Option<String>,
    /// A preset: its profile and the toolsets active when a turn starts.
    #[arg(long, value_name = "X")]
    pub preset: Option<String>,
    /// Active toolsets; repeatable. Default: the preset's, else those of the first preset of the
    /// profile, else every toolset.
    #[arg(long = "toolset", value_name = "T")]
    pub toolsets: Vec<String>,
    /// `tool_search` calls answered per turn.
    #[arg(long, value_name = "N", default_value_t = toolcat::session::DEFAULT_SEARCH_BUDGET)]
    pub search_budget: usize,
    /// Start turns without BM25 preselection.
    #[arg(long)]
    pub no_preselect: bool,
    /// A cap on the tool definitions of every step, on top of the preset's or profile's
    /// (`max_tools`, `client`; the smaller holds).
    #[arg(long, value_name = "N")]
    pub max_tools: Option<usize>,
    /// The workspace local tools run in (default: the current directory). Gated tools never run:
    /// this command has no approval step.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print one JSON object per line (turn, step or toolset change) instead of text.
    #[arg(long)]
    pub json: bool,
    /// The provider the session talks to, `mcp`, `openai`, `openai-responses`, `anthropic` or
    /// `gemini`: the session answers as it does for that provider (OpenAI: the `null`s of strict
    /// mode removed before validation; Anthropic: `tool_search` hits as `tool_reference`
    /// blocks) and each step's answers are also printed as the messages sent back to it. The
    /// script's `args` stay JSON objects.
    #[arg(long, value_name = "FORMAT", value_parser = export_format)]
    pub format: Option<ExportFormat>,
    /// The host sends the provider's hosted tool search (Anthropic, OpenAI Responses): calls of
    /// deferred tools are accepted, as the provider loads them itself.
    #[arg(long, requires = "format")]
    pub hosted_search: bool,
    /// Run a deprecated tool within reach when the script calls it by name (plans and searches
    /// still leave deprecated tools out). Without it such a call answers the tool's
    /// `replaced_by` and runs nothing.
    #[arg(long)]
    pub allow_deprecated: bool,
    /// Record every call in this call store (an SQLite file, created with its directories when
    /// absent, or a `postgres://` database), with archived results, as `toolcat call` and
    /// `toolcat serve` do; `toolcat calls --store PATH` lists them, a `run_code` program's calls
    /// linked to it by `parent`. Without it nothing is recorded and results over the inline
    /// budget are cut, not archived.
    #[arg(long, value_name = "PATH|postgres://...", value_parser = super::args::StoreParser)]
    pub store: Option<toolcat::StoreLocation>,
    /// How the catalog's MCP servers are connected: in the background from the start; the
    /// first turn waits for them at most `--wait`.
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `--format`: an [`ExportFormat`] by its name.
fn export_format(text: &str) -> Result<ExportFormat, String> {
    ExportFormat::parse(text).ok_or_else(|| {
        let names: Vec<&str> = ExportFormat::ALL.iter().map(|f| f.as_str()).collect();
        format!("unknown format `{text}`; use one of: {}", names.join(", "))
    })
}

/// Runs `toolcat session`.
pub fn run(a: &SessionArgs) -> anyhow::Result<Exit> {
    use std::io::BufRead as _;
    use toolcat::session::transcript::{self, EntryKind, Preselect, Settings};

    let c = catalog(&a.catalog)?;
    let workspace = workspace_dir(a.workspace.as_deref())?;
    let settings = Settings {
        preset: a.preset.clone(),
        profile: a.profile.clone(),
        toolsets: (!a.toolsets.is_empty()).then(|| a.toolsets.clone()),
        budget: Some(a.search_budget),
        discovered_cap: None,
        max_tools: a.max_tools,
        preselect: Some(if a.no_preselect {
            Preselect::None
        } else {
            Preselect::Bm25
        }),
    };
    let mut s = settings.session(&c, toolcat::ToolContext::new(workspace.clone()))?;
    if let Some(format) = a.format {
        if a.hosted_search && !ExportFormat::HOSTED_SEARCH.contains(&format) {
            bail!(
                "{}",
                toolcat::export::ExportError::HostedSearchUnsupported { format }
            );
        }
        let options = toolcat::SessionOptions {
            provider: format,
            hosted_search: a.hosted_search,
            ..s.options().clone()
        };
        s = s.with_options(options)?;
    }
    if a.allow_deprecated {
        let options = toolcat::SessionOptions {
            allow_deprecated: true,
            ..s.options().clone()
        };
        s = s.with_options(options)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // The catalog's MCP servers connect in the background from now on; the first turn waits for
    // them at most `--wait` (default 2 s), and a server still connecting then goes on connecting.
    let only = a.connect.only(&c)?;
    let pool = {
        let _entered = runtime.enter();
        servers::start_pool(
            &c,
            &a.catalog,
            &a.connect,
            only,
            toolcat::remote::PoolOptions::default().wait_budget,
        )?
    };
    if pool.is_some() || a.store.is_some() {
        let mut coordinator = toolcat::Coordinator::new(&c, toolcat::ToolContext::new(workspace));
        if let Some(pool) = &pool {
            coordinator = coordinator.with_servers(std::sync::Arc::clone(pool));
        }
        if let Some(location) = &a.store {
            // Its errors name the store and the fix.
            let store = super::args::open_store(location)?;
            let archive = toolcat::ResultArchive::beside(&store, toolcat::ArchiveLimits::default())
                .with_context(|| format!("cannot open the result archive `{location}`"))?;
            coordinator = coordinator
                .with_store(std::sync::Arc::new(store))
                .with_archive(std::sync::Arc::new(archive));
        }
        s = s.with_coordinator(coordinator);
    }
    s = with_code_mode(s);
    let mut waited = pool.is_none();
    let names = |tools: &[toolcat::ToolIndex]| -> Vec<String> {
        tools
            .iter()
            .map(|&t| c.exported_name(t).to_string())
            .collect()
    };
    let mut out = std::io::stdout().lock();
    let (mut turn, mut step) = (0usize, 0usize);
    let mut previous: Vec<String> = Vec::new();
    for (k, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.context("cannot read standard input")?;
        let Some((entry, line_settings)) = transcript::parse_line(k + 1, &line)? else {
            continue;
        };
        if turn == 0 && !matches!(entry.kind, EntryKind::User { .. }) {
            bail!(
                "line {}: the steps start with a user message: {{\"user\": \"...\"}}",
                k + 1
            );
        }
        if line_settings.is_some() {
            eprintln!(
                "note: line {}: session settings are taken from the command line, not from the input",
                k + 1
            );
        }
        match entry.kind {
            EntryKind::User { message, .. } => {
                turn += 1;
                step = 0;
                if !waited {
                    waited = true;
                    if let Some(pool) = &pool {
                        let budget = pool.wait_budget();
                        if !runtime.block_on(pool.wait_ready(budget)) {
                            servers::note_unready(pool, budget);
                        }
                    }
                }
                runtime.block_on(s.begin_turn(&message));
                let report = s.turn_report().clone();
                let preselected = report
                    .preselect
                    .as_ref()
                    .map(|p| names(&p.added))
                    .unwrap_or_default();
                if a.json {
                    let line = json!({
                        "turn": turn,
                        "user": message,
                        "named": names(&report.named),
                        "preselect": report.preselect.as_ref().map(|p| {
                            // Tool names rather than catalog positions.
                            let mut v = json!(p);
                            v["added"] = json!(names(&p.added));
                            v
                        }),
                        "preselected": preselected,
                        "maxTools": report.max_tools,
                        "carried": report.carried,
                        "required": report.required,
                        "evicted": report.evicted,
                        "leftOut": report.left_out,
                        "unregistered": report.unregistered,
                    });
                    writeln!(out, "{line}")?;
                    continue;
                }
                writeln!(out, "turn {turn}: user: {message}")?;
                if !report.named.is_empty() {
                    writeln!(
                        out,
                        "  named in the message: {}",
                        names(&report.named).join(", ")
                    )?;
                }
                match report.preselect.as_ref().map(|p| &p.status) {
                    Some(toolcat::preselect::PreselectStatus::Answered) if !preselected.is_empty() => {
                        writeln!(out, "  preselected (BM25): {}", preselected.join(", "))?
                    }
                    Some(toolcat::preselect::PreselectStatus::TimedOut) => writeln!(
                        out,
                        "  preselection timed out: kept the core, the history and the named tools"
                    )?,
                    Some(toolcat::preselect::PreselectStatus::Failed { message }) => writeln!(
                        out,
                        "  preselection failed ({message}): kept the core, the history and the named tools"
                    )?,
                    _ => {}
                }
                for (what, list) in [
                    ("joined (left out for the cap last turn)", &report.carried),
                    ("joined (required by a tool that joined)", &report.required),
                    ("evicted (least recently used)", &report.evicted),
                    (
                        "left out (over the cap of the definitions)",
                        &report.left_out,
                    ),
                    ("forgotten (no longer registered)", &report.unregistered),
                ] {
                    if !list.is_empty() {
                        writeln!(out, "  {what}: {}", list.join(", "))?;
                    }
                }
            }
            EntryKind::Toolsets(sets) => {
                let ids = toolsets(&c, &sets)?;
                s.set_toolsets(ids);
                if a.json {
                    writeln!(out, "{}", json!({ "toolsets": sets }))?;
                } else {
                    writeln!(out, "toolsets: {}", sets.join(", "))?;
                }
            }
            EntryKind::Step(calls) => {
                step += 1;
                let defs = names(s.definitions());
                let mut results = Vec::new();
                let mut provider_calls = Vec::new();
                let mut answers = Vec::new();
                if !a.json {
                    let summary = if step > 1 && defs == previous {
                        format!("same {} definitions", defs.len())
                    } else if step > 1 && defs.starts_with(&previous) {
                        format!(
                            "{} definitions: + {}",
                            defs.len(),
                            defs[previous.len()..].join(", ")
                        )
                    } else {
                        format!("{} definitions: {}", defs.len(), defs.join(", "))
                    };
                    writeln!(out, "step {step}: {summary}")?;
                }
                for (k, call) in calls.into_iter().enumerate() {
                    let r = runtime.block_on(s.handle_call(&call.name, call.args.clone()));
                    provider_calls.push(ProviderCall {
                        id: Some(format!("call_{turn}_{step}_{}", k + 1)),
                        name: call.name.clone(),
                        arguments: Ok(call.args.clone()),
                    });
                    if a.json {
                        results.push(json!({
                            "name": call.name,
                            "arguments": call.args,
                            "result": r.text,
                            "isError": r.is_error,
                            "outcome": r.outcome.kind(),
                        }));
                    } else {
                        writeln!(out, "  call {} {}", call.name, call.args)?;
                        let label = if r.is_error { "error" } else { "result" };
                        writeln!(out, "  {label}: {}", r.text)?;
                    }
                    answers.push(r);
                }
                let reply = a.format.map(|format| {
                    toolcat::provider::result_messages(format, &provider_calls, &answers)
                });
                if a.json {
                    let mut line =
                        json!({"turn": turn, "step": step, "definitions": defs, "calls": results});
                    if let Some(reply) = reply {
                        line["reply"] = json!(reply);
                    }
                    writeln!(out, "{line}")?;
                } else {
                    for message in reply.unwrap_or_default() {
                        writeln!(out, "  reply: {message}")?;
                    }
                }
                previous = defs;
            }
        }
    }
    if turn == 0 {
        bail!("no input: write JSONL steps on stdin, starting with {{\"user\": \"...\"}}");
    }
    drop(s);
    drop(pool);
    // The servers' child processes end with the runtime.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(Exit::Ok)
}

/// The session with Code Mode's script engine (feature `code-mode`, on by default): `run_code` is
/// then planned wherever the profile owns it and a toolset of the turn lists it. Without the
/// feature the session has no engine and never plans `run_code`.
#[cfg(feature = "code-mode")]
fn with_code_mode(s: toolcat::Session<'_>) -> toolcat::Session<'_> {
    s.with_script_engine(std::sync::Arc::new(toolcat_quickjs::QuickJs::new()))
}

#[cfg(not(feature = "code-mode"))]
fn with_code_mode(s: toolcat::Session<'_>) -> toolcat::Session<'_> {
    s
}
