//! The `toolcat` command line: check, list, search, plan, export, import and generate, on the
//! catalog [`args::choose_catalog`] picks: `--catalog PATH`, `TOOLCAT_CATALOG`, a `tools.toml` in
//! the current or a parent directory, else the reference catalog compiled into the binary.
//!
//! Output contract: data goes to stdout (text, or JSON with `--json`/`plan`), diagnostics, reports
//! and statistics to stderr; the exit code is an [`Exit`] (the README's "Exit codes" table). A
//! write to a closed stdout (`toolcat list | head -1`) ends the command quietly with exit 0.

//!
//! Layout: [`args`] holds the arguments and catalog resolution every command shares, and imports
//! no sibling but the leaf [`seen`] (catalog warnings shown once per content); each subcommand is
//! a module of its own ([`check`], [`list`], [`search`], [`plan`], [`export`], [`import`],
//! [`generate`], [`init`], [`diff`], [`call`], [`session`], [`calls`], [`eval`], [`serve`], [`servers`],
//! [`token`]),
//! with its arguments and a `run` function; this module parses the command line and dispatches.
//! No module imports one that imports it back.

use std::process::ExitCode;

use clap::{CommandFactory as _, Parser, Subcommand};

pub mod args;
pub mod call;
pub mod calls;
pub mod check;
pub mod diff;
pub mod eval;
pub mod export;
pub mod generate;
pub mod import;
pub mod init;
pub mod list;
pub mod plan;
pub mod search;
pub mod seen;
pub mod serve;
pub mod servers;
pub mod session;
pub mod token;

/// Declare every tool once; derive who owns, sees, may run and is exposed to what.
#[derive(Debug, Parser)]
#[command(
    name = "toolcat",
    version,
    about,
    long_about = None,
    after_help = "Exit codes: 0 ok; 1 a check failed or the input is invalid; 2 usage error; \
                  3 runtime failure (a tool failed, a server unreachable, I/O). The README's \
                  \"Exit codes\" table has the details."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate a catalog: exit 0 when valid, 1 with every diagnostic on stderr. With `--target`,
    /// also check every tool's exported name and input schema against those export targets and
    /// report each rewrite, fallback and error per tool on stderr.
    Check(check::CheckArgs),
    /// List the tools a profile owns, optionally within toolsets or an MCP exposure scope.
    List(list::ListArgs),
    /// Search a profile's tools: exact name first, then BM25.
    Search(search::SearchArgs),
    /// The tool definitions the model gets this turn, as JSON on stdout.
    Plan(plan::PlanArgs),
    /// Every tool of the catalog in one provider format, as JSON on stdout; for Gemini, the tools
    /// left out are named on stderr with the rule they break.
    Export(export::ExportArgs),
    /// Turn a real tool surface into `tools.toml` text on stdout (report on stderr).
    Import(import::ImportArgs),
    /// Create a crate whose tools are declared in `tools.toml` (or add that to the crate in DIR):
    /// the catalog with its legend, build.rs, a `#[tool]` handler and a test that calls it
    /// through the execution coordinator; no existing file is overwritten.
    Init(init::InitArgs),
    /// Rewrite `generated/` from the catalog; with `--check`, fail naming each stale file.
    Generate(generate::GenerateArgs),
    /// What a change to a `tools.toml` does to each answer (`OLD NEW`, or `--base GIT_REV [NEW]`),
    /// with the changes that widen what callers can reach flagged; `--deny-widening` exits 1 on
    /// any (`toolcat_catalog::diff` lists the kinds).
    Diff(diff::DiffArgs),
    /// Run one tool with JSON arguments through the execution coordinator and print its JSON
    /// result; `gated` tools run only with `--approve`; each call is recorded in the call store.
    Call(call::CallArgs),
    /// Read JSONL turns and model steps on stdin and print, step by step, what the model would
    /// receive: the definitions and each call's answer (the format: `toolcat::session::transcript`).
    Session(session::SessionArgs),
    /// List the call records of a call store, newest first; calls whose process ended mid-call
    /// are shown as `outcome_unknown` (`toolcat::records` documents the lifecycle).
    Calls(calls::CallsArgs),
    /// Measure search on a benchmark's queries: recall@1/5/10, nDCG@5, C@5 (every gold tool in the
    /// top 5) and microseconds per query; with `--token-economy`, tokens of every tool inline
    /// against plans (`toolcat_cli::eval` documents the rules).
    Eval(eval::EvalArgs),
    /// Serve a profile's tools within an MCP exposure scope to MCP clients, over stdio or, with
    /// `--http`, streamable HTTP; every call goes through the execution coordinator
    /// (`toolcat::mcp` documents what is listed, what may run and the errors).
    Serve(serve::ServeArgs),
    /// Connect to the catalog's MCP servers and print where each is after a wait: `connecting`,
    /// `ready` (with its tool count and when they were listed), `failed` (why, and when the next
    /// attempt is) or `not-connected`.
    Servers(servers::ServersArgs),
    /// Manage the bearer tokens of `toolcat serve --tokens FILE`: `add` (bound to a profile and
    /// an exposure scope; the token is printed once, its SHA-256 stored), `list`, `revoke`
    /// (refused by a running server from its next request).
    Token(token::TokenArgs),
    /// Print the completion script of SHELL on stdout, e.g.
    /// `toolcat completions bash > ~/.local/share/bash-completion/completions/toolcat`.
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// How a command ends: the process exit code, one value per class (the README's "Exit codes"
/// table is its documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: the command did what it was asked (a reader that closed stdout early included).
    Ok,
    /// 1: a check failed or the input is invalid: an invalid catalog, stale `generated/`, live
    /// drift, a denied widening of `diff --deny-widening`, a call refused for its input (unknown
    /// tool, arguments that do not fit, a path outside the workspace, a gated tool without
    /// `--approve`, a remote tool whose server's schema drifted from its row, a tool's prepare step
    /// refusing it before it ran), a file named on the command line that does not exist.
    CheckFailed,
    /// 2: a usage error; clap itself exits with it on a bad flag or value.
    Usage,
    /// 3: a runtime failure: a tool ran and failed in `toolcat call`, an MCP server cannot be
    /// reached, an I/O error.
    Runtime,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(match e {
            Exit::Ok => 0,
            Exit::CheckFailed => 1,
            Exit::Usage => 2,
            Exit::Runtime => 3,
        })
    }
}

/// The exit class of an error a command returned: [`Exit::CheckFailed`] for an invalid catalog
/// ([`args::Reported`]) and other bad input (a file named on the command line that does not
/// exist included), [`Exit::Runtime`] when another I/O error is among its causes.
fn exit_of(e: &anyhow::Error) -> Exit {
    if e.is::<args::Reported>() {
        return Exit::CheckFailed;
    }
    // A store that cannot be reached or written is a runtime failure, as an unreachable MCP
    // server is (an `Open` failure is one through its I/O error); a bad store URL, or a file
    // that is not a toolcat store (a link, damaged, a newer schema), stays bad input.
    let store_down = e.chain().any(|c| {
        matches!(
            c.downcast_ref::<toolcat::StoreError>(),
            Some(
                toolcat::StoreError::Unreachable { .. }
                    | toolcat::StoreError::Postgres { .. }
                    | toolcat::StoreError::Busy { .. }
                    | toolcat::StoreError::ReadOnly { .. }
            )
        )
    });
    if store_down {
        return Exit::Runtime;
    }
    let io = e.chain().any(|c| {
        let kind = c
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| {
                c.downcast_ref::<serde_json::Error>()
                    .and_then(|j| j.io_error_kind())
            });
        kind.is_some_and(|k| k != std::io::ErrorKind::NotFound)
    });
    if io {
        Exit::Runtime
    } else {
        Exit::CheckFailed
    }
}

/// True when `e` is a write to a closed pipe (`toolcat list | head -1`): the reader has all it
/// wants, so the command ends quietly. Rust ignores `SIGPIPE`, so every write to stdout returns
/// this error instead of killing the process; the commands write with `write!`, never `print!`
/// (which would panic).
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .and_then(|j| j.io_error_kind())
                .is_some_and(|k| k == std::io::ErrorKind::BrokenPipe)
    })
}

/// A spinner on stderr saying `message`, for work that may take over a second (connecting MCP
/// servers, an evaluation); the caller ends it with `finish_and_clear`. Hidden when stderr is
/// not a terminal (indicatif's `ProgressDrawTarget::stderr`), so piped or captured stderr holds
/// no drawing.
pub(crate) fn spinner(
    message: impl Into<std::borrow::Cow<'static, str>>,
) -> indicatif::ProgressBar {
    let bar =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    bar.set_style(indicatif::ProgressStyle::default_spinner());
    bar.set_message(message);
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    bar
}

/// `toolcat completions SHELL`: the script on stdout.
fn completions(shell: clap_complete::Shell) -> anyhow::Result<Exit> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "toolcat", &mut out);
    std::io::Write::write_all(&mut std::io::stdout().lock(), &out)?;
    Ok(Exit::Ok)
}

/// The environment variable that filters the libraries' log messages (`tracing` events), in
/// `tracing_subscriber::EnvFilter` syntax: `warn`, `toolcat=debug`, `toolcat=info,rmcp=debug`.
pub const LOG_ENV: &str = "TOOLCAT_LOG";

/// The filter when [`LOG_ENV`] is unset or empty: toolcat's own messages at level info and above,
/// nothing from other crates.
pub const DEFAULT_LOG_FILTER: &str = "toolcat=info";

/// Installs the subscriber that writes the libraries' `tracing` events to stderr, one line each
/// (a multi-line message keeps its lines), filtered by [`LOG_ENV`] (default
/// [`DEFAULT_LOG_FILTER`]). Unset, a line is the bare message, as the libraries' messages always
/// read; set, each line starts with the event's level and target. A filter that does not parse
/// is reported on stderr and the default is used. Does nothing when a subscriber is installed
/// already.
pub fn init_logging() {
    use tracing_subscriber::EnvFilter;

    let value = std::env::var(LOG_ENV).ok().filter(|v| !v.trim().is_empty());
    let filter = match value.as_deref().map(EnvFilter::try_new) {
        None => EnvFilter::new(DEFAULT_LOG_FILTER),
        Some(Ok(filter)) => filter,
        Some(Err(e)) => {
            eprintln!(
                "warning: `{LOG_ENV}` is not a log filter ({e}); using `{DEFAULT_LOG_FILTER}`"
            );
            EnvFilter::new(DEFAULT_LOG_FILTER)
        }
    };
    let detailed = value.is_some();
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .without_time()
        .with_level(detailed)
        .with_target(detailed)
        .try_init();
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Check(a) => check::run(&a),
        Command::List(a) => list::run(&a),
        Command::Search(a) => search::run(&a),
        Command::Plan(a) => plan::run(&a),
        Command::Export(a) => export::run(&a),
        Command::Import(a) => import::run(&a),
        Command::Generate(a) => generate::run(&a),
        Command::Init(a) => init::run(&a),
        Command::Diff(a) => diff::run(&a),
        Command::Call(a) => call::run(&a),
        Command::Session(a) => session::run(&a),
        Command::Calls(a) => calls::run(&a),
        Command::Eval(a) => eval::run(&a),
        Command::Serve(a) => serve::run(&a),
        Command::Servers(a) => servers::run(&a),
        Command::Token(a) => token::run(&a),
        Command::Completions { shell } => completions(shell),
    };
    match result {
        Ok(code) => code.into(),
        Err(e) if is_broken_pipe(&e) => Exit::Ok.into(),
        // The diagnostics are on stderr already, as `PATH:LINE:COL: ...` lines.
        Err(e) if e.is::<args::Reported>() => Exit::CheckFailed.into(),
        Err(e) => {
            eprintln!("error: {}", error_chain(&e));
            exit_of(&e).into()
        }
    }
}

/// `e` and its causes joined by `: `, each cause once: a cause whose text an outer message
/// already holds (a message that quotes its source) is left out.
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}
