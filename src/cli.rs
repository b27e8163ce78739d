//! The `toolcat` command line: check, list, search, plan, import and generate, on the reference
//! catalog compiled into the binary or on any `tools.toml` given with `--catalog PATH`.
//!
//! Output contract: data goes to stdout (text, or JSON with `--json`/`plan`), diagnostics, reports
//! and statistics to stderr; exit code 0 on success, 1 when the input is invalid or a check fails,
//! 2 on a usage error (clap).

use std::borrow::Cow;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::json;
use toolcat::export::{export_plan, ExportFormat};
use toolcat::{Catalog, ProfileId, ToolsetId, TurnInput, TurnPlanner};
use toolcat_catalog::diagnostics::{render_all, render_all_capped, Diagnostic};
use toolcat_catalog::model::{Exposure, Target};
use toolcat_import::{self as import, ImportKind, ImportOptions};

use crate::generate;

/// Declare every tool once; derive who owns, sees, may run and is exposed to what.
#[derive(Debug, Parser)]
#[command(name = "toolcat", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate a catalog: exit 0 when valid, 1 with every diagnostic on stderr. With `--target`,
    /// also check every tool's exported name and input schema against those export targets and
    /// report each rewrite, fallback and error per tool on stderr.
    Check(CheckArgs),
    /// List the tools a profile owns, optionally within toolsets or an MCP exposure scope.
    List(ListArgs),
    /// Search a profile's tools: exact name first, then BM25.
    Search(SearchArgs),
    /// The tool definitions the model gets this turn, as JSON on stdout.
    Plan(PlanArgs),
    /// Turn a real tool surface into `tools.toml` text on stdout (report on stderr).
    Import(ImportArgs),
    /// Rewrite `generated/` from the catalog; with `--check`, fail naming each stale file.
    Generate(GenerateArgs),
    /// Run one tool with JSON arguments through the execution coordinator and print its JSON
    /// result; `gated` tools run only with `--approve`; each call is recorded in the call store.
    Call(CallArgs),
    /// Read JSONL turns and model steps on stdin and print, step by step, what the model would
    /// receive: the definitions and each call's answer (the format: `toolcat::session::transcript`).
    Session(SessionArgs),
    /// List the call records of a call store, newest first; calls whose process ended mid-call
    /// are shown as `outcome_unknown` (`toolcat::records` documents the lifecycle).
    Calls(crate::calls::CallsArgs),
    /// Measure search on a benchmark's queries: recall@1/5/10, nDCG@5, C@5 (every gold tool in the
    /// top 5) and microseconds per query; with `--token-economy`, tokens of every tool inline
    /// against plans (`toolcat::eval` documents the rules).
    Eval(crate::eval::EvalArgs),
    /// Serve a profile's tools within an MCP exposure scope to MCP clients, over stdio or, with
    /// `--http`, streamable HTTP; every call goes through the execution coordinator
    /// (`toolcat::mcp` documents what is listed, what may run and the errors).
    Serve(crate::serve::ServeArgs),
    /// Connect to the catalog's MCP servers and print where each is after a wait: `connecting`,
    /// `ready` (with its tool count and when they were listed), `failed` (why, and when the next
    /// attempt is) or `not-connected`.
    Servers(crate::servers::ServersArgs),
}

/// The model options of `search --semantic` and `eval --semantic`.
#[cfg(feature = "semantic")]
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// `--semantic`: the sentence-transformers model directory (default: `TOOLCAT_MODEL_DIR`,
    /// else `~/.local/share/toolcat/models/all-MiniLM-L6-v2` when it exists).
    #[arg(long, value_name = "DIR", requires = "semantic")]
    pub model: Option<PathBuf>,
    /// `--semantic`: weight of the embedding side, 0 (BM25 only) to 1 (embeddings only).
    #[arg(long, value_name = "W", default_value_t = toolcat::fusion::DenseWeight::default(), requires = "semantic")]
    pub dense_weight: toolcat::fusion::DenseWeight,
    /// `--semantic`: threads that embed one query (default: the cores, at most
    /// `toolcat::semantic::MAX_DEFAULT_THREADS`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024), requires = "semantic")]
    pub threads: Option<u32>,
}

#[cfg(feature = "semantic")]
impl ModelArgs {
    /// The encoder in `dir` with `--threads` applied.
    ///
    /// # Errors
    /// When the model cannot be loaded, naming the directory.
    pub fn load_encoder(
        &self,
        dir: &std::path::Path,
    ) -> anyhow::Result<toolcat::semantic::Encoder> {
        let encoder = toolcat::semantic::Encoder::load(dir)
            .with_context(|| format!("cannot load the model in `{}`", dir.display()))?;
        Ok(match self.threads {
            Some(n) => encoder.with_threads(n as usize),
            None => encoder,
        })
    }
}

/// Which catalog a command reads.
#[derive(Debug, Args)]
pub struct CatalogArg {
    /// A `tools.toml` to read instead of the reference catalog compiled into this binary.
    #[arg(long, value_name = "PATH")]
    pub catalog: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// Export targets to check instead of the catalog's own `targets`, comma-separated. Names and
    /// server schemas are checked as rules (exit 1); then every tool's schema is exported to each
    /// target and the rewrites, `strict: false` fallbacks and errors are reported on stderr. On
    /// the reference catalog local tools' schemas come from their handlers; a catalog read with
    /// `--catalog` has no handlers, so its local tools' schemas are reported as unchecked.
    #[arg(
        long = "target",
        value_name = "T,...",
        value_enum,
        value_delimiter = ','
    )]
    pub targets: Vec<TargetArg>,
    /// Show every warning. By default at most 20 warnings of each code are shown, followed by a
    /// line counting the rest of that code; errors are always all shown.
    #[arg(long)]
    pub all_warnings: bool,
    /// Also connect to the catalog's MCP servers, list their tools now and compare them with the
    /// declared rows: tools added (served, no row), removed (declared, no longer served) and
    /// changed (the input schema, with each change named). Exit 1 on any difference, or when a
    /// server cannot be reached.
    #[arg(long)]
    pub live: bool,
    /// With `--live`: check only this server; repeatable.
    #[arg(long = "server", value_name = "NAME", requires = "live")]
    pub servers: Vec<String>,
    /// With `--live`: how long each server may take to start and list its tools, in
    /// milliseconds (default: its `connect_timeout_ms`, else 10000).
    #[arg(long, value_name = "MS", requires = "live")]
    pub timeout: Option<u64>,
    /// With `--live`: print the comparison as a JSON array, one object per server (`server`,
    /// `clean`, `added`, `removed`, `changed` with each `tool`, `change` and `changes`, or
    /// `error`).
    #[arg(long, requires = "live")]
    pub json: bool,
}

/// Warnings of one code `toolcat check` shows unless `--all-warnings` is given.
const WARNINGS_PER_CODE: usize = 20;

/// An export target (see `toolcat_catalog::targets`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TargetArg {
    /// OpenAI function tools, strict mode where possible.
    Openai,
    /// Anthropic Messages tools.
    Anthropic,
    /// Gemini function declarations.
    Gemini,
    /// MCP `tools/list`.
    Mcp,
}

impl From<TargetArg> for Target {
    fn from(t: TargetArg) -> Target {
        match t {
            TargetArg::Openai => Target::OpenAi,
            TargetArg::Anthropic => Target::Anthropic,
            TargetArg::Gemini => Target::Gemini,
            TargetArg::Mcp => Target::Mcp,
        }
    }
}

/// An MCP exposure scope a client can be granted.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ScopeArg {
    #[value(name = "read-only")]
    ReadOnly,
    Staging,
    Full,
}

impl From<ScopeArg> for Exposure {
    fn from(s: ScopeArg) -> Exposure {
        match s {
            ScopeArg::ReadOnly => Exposure::ReadOnly,
            ScopeArg::Staging => Exposure::Staging,
            ScopeArg::Full => Exposure::Full,
        }
    }
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// The profile whose tools to list (default: `full`, every tool).
    #[arg(long, value_name = "P")]
    pub profile: Option<String>,
    /// Keep only tools in these toolsets (expanded); repeatable.
    #[arg(long = "toolset", value_name = "T")]
    pub toolsets: Vec<String>,
    /// Keep only tools an MCP client granted this scope gets (`toolcat serve` also lists the
    /// profile's discovery meta-tools, which this list leaves out).
    #[arg(long, value_name = "S")]
    pub exposure: Option<ScopeArg>,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The largest `toolcat search --limit`: far more hits than anyone reads, small enough that the
/// search never allocates for an absurd count.
pub const MAX_SEARCH_LIMIT: u64 = 10_000;

#[derive(Debug, Args)]
pub struct SearchArgs {
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// Search only this profile's tools (default: `full`).
    #[arg(long, value_name = "P")]
    pub profile: Option<String>,
    /// How many hits to return: 1 to 10 000 (`MAX_SEARCH_LIMIT`); anything else is a usage
    /// error (exit 2).
    #[arg(
        long,
        value_name = "K",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..=MAX_SEARCH_LIMIT)
    )]
    pub limit: u64,
    /// Print `[{"name": ..., "score": ..., "match": "name" | "bm25" | "fused"}]`, best first (an
    /// exact-name hit's score is the largest f32, 3.4028235e38: it ranks first by rule).
    #[arg(long)]
    pub json: bool,
    /// Rank by BM25 fused with a local sentence-embedding model (exact names still first);
    /// without a model (`--model`, `TOOLCAT_MODEL_DIR`, the default directory) BM25 with a
    /// notice.
    #[cfg(feature = "semantic")]
    #[arg(long)]
    pub semantic: bool,
    /// `--model` and `--dense-weight`, with `--semantic`.
    #[cfg(feature = "semantic")]
    #[command(flatten)]
    pub model_args: ModelArgs,
    /// What the tool should do, or its name.
    #[arg(required = true, value_name = "QUERY")]
    pub query: Vec<String>,
}

/// Provider format of exported definitions.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    /// MCP `tools/list` result.
    Mcp,
    /// OpenAI function tools.
    Openai,
    /// Anthropic tools (discoverable tools with `defer_loading: true`).
    Anthropic,
    /// Gemini function declarations.
    Gemini,
}

impl From<FormatArg> for ExportFormat {
    fn from(f: FormatArg) -> ExportFormat {
        match f {
            FormatArg::Mcp => ExportFormat::Mcp,
            FormatArg::Openai => ExportFormat::OpenAi,
            FormatArg::Anthropic => ExportFormat::Anthropic,
            FormatArg::Gemini => ExportFormat::Gemini,
        }
    }
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// The profile the agent runs under.
    #[arg(long, value_name = "P")]
    pub profile: String,
    /// Active toolsets; repeatable. Default: the toolsets of the first preset of the profile, or
    /// every toolset when no preset names the profile.
    #[arg(long = "toolset", value_name = "T")]
    pub toolsets: Vec<String>,
    /// Tools found by `tool_search` earlier in the session, oldest first; repeatable.
    #[arg(long = "discovered", value_name = "NAME")]
    pub discovered: Vec<String>,
    /// Tools the user named this turn; repeatable.
    #[arg(long = "named", value_name = "NAME")]
    pub named: Vec<String>,
    /// Provider format of the definitions.
    #[arg(long, value_enum, default_value_t = FormatArg::Mcp)]
    pub format: FormatArg,
    /// Also print, on stderr, the counts and the token cost (o200k) against the whole profile.
    #[arg(long)]
    pub stats: bool,
}

/// The kinds of source `import` reads.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ImportFrom {
    /// A JSON file with an MCP `tools/list` result (`{"tools": [...]}` or a bare array).
    #[value(name = "mcp-tools-json")]
    McpToolsJson,
    /// LiveMCPBench's `tools.json`.
    Livemcpbench,
    /// github-mcp-server's `__toolsnaps__` directory (with `toolsets.json` beside it, if present).
    #[value(name = "github-toolsnaps")]
    GithubToolsnaps,
    /// The MetaTool benchmark's tool corpus `plugin_des.json` (`{name: description}`).
    Metatool,
}

impl From<ImportFrom> for ImportKind {
    fn from(f: ImportFrom) -> ImportKind {
        match f {
            ImportFrom::McpToolsJson => ImportKind::McpToolsJson,
            ImportFrom::Livemcpbench => ImportKind::LiveMcpBench,
            ImportFrom::GithubToolsnaps => ImportKind::GithubToolsnaps,
            ImportFrom::Metatool => ImportKind::Metatool,
        }
    }
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The kind of source.
    #[arg(
        long,
        value_enum,
        required_unless_present = "from_server",
        conflicts_with = "from_server"
    )]
    pub from: Option<ImportFrom>,
    /// Connect to a running MCP server and import the tools it serves now: a server the catalog
    /// declares (`--catalog`, else the reference catalog), or a command line that starts one,
    /// optionally `NAME=COMMAND ...`; repeatable (one catalog for all). Every server is
    /// namespaced (`NAME__tool`); its launch command is written to `[mcp_server.NAME]`.
    #[arg(long = "from-server", value_name = "NAME|COMMAND")]
    pub from_server: Vec<String>,
    /// The catalog whose `[mcp_server]` entries `--from-server NAME` connects to.
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// With `--from-server`: how long a server may take to start and list its tools, in
    /// milliseconds (default: its `connect_timeout_ms`, else 10000).
    #[arg(long, value_name = "MS", requires = "from_server")]
    pub timeout: Option<u64>,
    /// `mcp-tools-json`: the server's name (default: the file name without extension). With one
    /// `--from-server COMMAND`: the server's name (default: after the program, `mcp-server-time`
    /// → `time`).
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,
    /// `github-toolsnaps`: a feature flag whose tool variants replace the normal ones; repeatable.
    #[arg(long = "feature-flag", value_name = "FLAG")]
    pub feature_flags: Vec<String>,
    /// The source file or directory.
    #[arg(
        required_unless_present = "from_server",
        conflicts_with = "from_server"
    )]
    pub path: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// Only compare; exit 1 naming each stale file.
    #[arg(long)]
    pub check: bool,
    /// Where the generated files live.
    #[arg(long, value_name = "DIR", default_value = "generated")]
    pub dir: PathBuf,
}

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
    /// The call store the call is recorded in before it runs (`toolcat calls` lists it).
    #[command(flatten)]
    pub store: crate::calls::StoreArg,
    /// How a remote tool's MCP server is connected (only the called tool's server is started).
    #[command(flatten)]
    pub connect: crate::servers::ConnectArgs,
}

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
    /// The workspace local tools run in (default: the current directory). Gated tools never run:
    /// this command has no approval step.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print one JSON object per line (turn, step or toolset change) instead of text.
    #[arg(long)]
    pub json: bool,
    /// How the catalog's MCP servers are connected: in the background from the start; the
    /// first turn waits for them at most `--wait`.
    #[command(flatten)]
    pub connect: crate::servers::ConnectArgs,
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Check(a) => check(&a),
        Command::List(a) => list(&a),
        Command::Search(a) => search(&a),
        Command::Plan(a) => plan(&a),
        Command::Import(a) => import_cmd(&a),
        Command::Generate(a) => generate_cmd(&a),
        Command::Call(a) => call(&a),
        Command::Session(a) => session(&a),
        Command::Calls(a) => crate::calls::run(&a),
        Command::Eval(a) => crate::eval::run(&a),
        Command::Serve(a) => crate::serve::run(&a),
        Command::Servers(a) => crate::servers::run(&a),
    };
    match result {
        Ok(code) => code,
        // The diagnostics are on stderr already, as `PATH:LINE:COL: ...` lines.
        Err(e) if e.is::<Reported>() => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

/// The workspace of `--workspace` (default: the current directory), canonical.
///
/// # Errors
/// When the path does not exist or is not a directory; the message names the path and the fix.
pub fn workspace_dir(arg: Option<&Path>) -> anyhow::Result<PathBuf> {
    let workspace = match arg {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir()
            .context("cannot read the current directory; pass `--workspace DIR`")?,
    };
    let canonical = std::fs::canonicalize(&workspace).map_err(|e| {
        anyhow::anyhow!(
            "workspace `{}` cannot be opened ({e}); pass an existing directory to `--workspace`",
            workspace.display()
        )
    })?;
    if !canonical.is_dir() {
        bail!(
            "workspace `{}` is not a directory; pass the directory tools work in to `--workspace`",
            workspace.display()
        );
    }
    Ok(canonical)
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

/// An error whose message is already on stderr: [`run`] exits 1 without printing it again.
#[derive(Debug)]
struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the catalog is invalid; see the diagnostics above")
    }
}

impl std::error::Error for Reported {}

/// How diagnostics and reports name the catalog compiled into the binary when no `--catalog` is
/// given, so that it is not mistaken for a `tools.toml` in the current directory.
pub const REFERENCE_LABEL: &str = "<compiled-in reference catalog> (tools.toml)";

/// When no `--catalog` is given but the current directory has a `tools.toml` other than the
/// reference catalog, says on stderr that the compiled-in reference catalog is read instead, and
/// how to read that file.
fn note_reference_catalog(arg: &CatalogArg) {
    let local = Path::new("tools.toml");
    // No note when the file is the reference catalog itself (in this repository).
    if arg.catalog.is_none()
        && local.is_file()
        && toolcat::catalog::read_catalog_source(local).ok().as_deref()
            != Some(crate::REFERENCE_SOURCE)
    {
        eprintln!(
            "note: reading the compiled-in reference catalog, not `./tools.toml`; pass `--catalog tools.toml` to read that file"
        );
    }
}

/// `n` and `noun`, with an `s` unless `n` is 1: `1 error`, `2 errors`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The catalog a command reads: the compiled-in reference catalog, or one loaded from a file.
pub(crate) enum CatalogRef {
    Compiled(&'static Catalog),
    Loaded(Box<Catalog>),
}

impl std::ops::Deref for CatalogRef {
    type Target = Catalog;
    fn deref(&self) -> &Catalog {
        match self {
            CatalogRef::Compiled(c) => c,
            CatalogRef::Loaded(c) => c,
        }
    }
}

/// The catalog of `--catalog`, or the reference catalog compiled into this binary.
pub(crate) fn catalog(arg: &CatalogArg) -> anyhow::Result<CatalogRef> {
    match &arg.catalog {
        None => Ok(CatalogRef::Compiled(crate::reference_catalog())),
        Some(path) => {
            let c = match Catalog::load(path) {
                Ok(c) => c,
                Err(e @ toolcat::CatalogError::Invalid { .. }) => {
                    eprint!("{e}");
                    return Err(Reported.into());
                }
                Err(e) => return Err(anyhow::anyhow!("{e}")),
            };
            if !c.warnings().is_empty() {
                eprint!("{}", c.render_warnings());
            }
            Ok(CatalogRef::Loaded(Box::new(c)))
        }
    }
}

fn profile(c: &Catalog, name: Option<&str>) -> anyhow::Result<ProfileId> {
    match name {
        None => Ok(c.full_profile()),
        Some(n) => Ok(c.profile(n)?),
    }
}

fn toolsets(c: &Catalog, names: &[String]) -> anyhow::Result<Vec<ToolsetId>> {
    names
        .iter()
        .map(|n| c.toolset(n).map_err(anyhow::Error::from))
        .collect()
}

fn check(a: &CheckArgs) -> anyhow::Result<ExitCode> {
    note_reference_catalog(&a.catalog);
    let (path, source) = match &a.catalog.catalog {
        None => (
            REFERENCE_LABEL.to_string(),
            Cow::Borrowed(crate::REFERENCE_SOURCE),
        ),
        Some(p) => (
            p.display().to_string(),
            Cow::Owned(
                toolcat::catalog::read_catalog_source(p).map_err(|e| anyhow::anyhow!("{e}"))?,
            ),
        ),
    };
    let targets: Option<Vec<Target>> =
        (!a.targets.is_empty()).then(|| a.targets.iter().map(|&t| t.into()).collect());
    match toolcat_catalog::compile_str_for(&path, &source, targets.as_deref()) {
        Ok(compiled) => {
            if !compiled.warnings.is_empty() {
                eprint!("{}", render_warnings(a, &compiled.warnings, &path, &source));
            }
            if let Some(targets) = &targets {
                // The report needs input schemas: the handlers' on the reference catalog.
                let loaded;
                let c: &Catalog = match &a.catalog.catalog {
                    None => crate::reference_catalog(),
                    Some(_) => {
                        loaded = Catalog::from_tables(compiled.tables.clone())
                            .map_err(|e| anyhow::anyhow!("{e}"))?;
                        &loaded
                    }
                };
                let report = toolcat::export::target_report(c, targets);
                eprint!("{}", report.render());
                let errors = report.errors();
                if errors > 0 {
                    eprintln!(
                        "{path}: {}: tools or requests that cannot be exported to {}",
                        count(errors, "error"),
                        toolcat_catalog::targets::target_list(targets)
                    );
                    return Ok(ExitCode::FAILURE);
                }
            }
            let t = &compiled.tables;
            let summary = format!(
                "{path}: ok: {}, {}, {}, {}, {}, {}",
                count(t.len, "tool"),
                count(t.profile_names.len(), "profile"),
                count(t.toolset_names.len(), "toolset"),
                count(t.preset_names.len(), "preset"),
                count(t.server_names.len(), "MCP server"),
                count(compiled.warnings.len(), "warning")
            );
            if !a.live {
                println!("{summary}");
                return Ok(ExitCode::SUCCESS);
            }
            // The rows are valid; the live comparison goes to stdout (as JSON with `--json`),
            // the summary to stderr.
            eprintln!("{summary}");
            let c = catalog(&a.catalog)?;
            let clean = crate::servers::check_live(
                &c,
                &a.catalog,
                &a.servers,
                a.timeout.map(std::time::Duration::from_millis),
                a.json,
            )?;
            if clean {
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("{path}: the declared rows differ from what the MCP servers serve now, or a server cannot be reached; update the changed rows (`toolcat import --from-server NAME` prints that server's rows alone: copy them over the old ones, do not redirect it onto the catalog) or the server");
                Ok(ExitCode::FAILURE)
            }
        }
        Err(diagnostics) => {
            // `render_all` ends with the summary line (`error: 2 errors and 1 warning in PATH`).
            eprint!("{}", render_warnings(a, &diagnostics, &path, &source));
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The diagnostics of `toolcat check`, at most [`WARNINGS_PER_CODE`] warnings of each code unless
/// `--all-warnings`; every error.
fn render_warnings(a: &CheckArgs, diagnostics: &[Diagnostic], path: &str, source: &str) -> String {
    if a.all_warnings {
        render_all(diagnostics, path, source)
    } else {
        render_all_capped(
            diagnostics,
            path,
            source,
            WARNINGS_PER_CODE,
            "run with `--all-warnings` to see them",
        )
    }
}

fn list(a: &ListArgs) -> anyhow::Result<ExitCode> {
    let c = catalog(&a.catalog)?;
    let p = profile(&c, a.profile.as_deref())?;
    let sets = toolsets(&c, &a.toolsets)?;
    let scope = a.exposure.map(Exposure::from);
    let tools: Vec<_> = c
        .tools_in(c.profile_tools(p))
        .filter(|&t| {
            sets.is_empty()
                || sets
                    .iter()
                    .any(|&s| toolcat_catalog::tables::bit(c.toolset_tools(s), t.index()))
        })
        .filter(|&t| match scope {
            None => true,
            Some(s) => c
                .scope_tools(s)
                .is_some_and(|bits| toolcat_catalog::tables::bit(bits, t.index())),
        })
        .collect();
    let mut out = std::io::stdout().lock();
    if a.json {
        let rows: Vec<_> = tools
            .iter()
            .map(|&t| {
                json!({
                    "name": c.exported_name(t),
                    "description": c.description(t),
                    "visibility": c.visibility(t).as_str(),
                    "tier": c.tier(t).as_str(),
                    "effect": c.effect(t).kind.as_str(),
                    "exposure": c.exposure(t).as_str(),
                    "status": c.status(t).as_str(),
                    "toolsets": c.toolsets().filter(|&s| toolcat_catalog::tables::bit(c.toolset_tools(s), t.index())).map(|s| c.toolset_name(s)).collect::<Vec<_>>(),
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else {
        let width = tools
            .iter()
            .map(|&t| c.exported_name(t).len())
            .max()
            .unwrap_or(4)
            .max(4);
        writeln!(
            out,
            "{:width$}  {:12}  {:6}  {:11}  {:9}",
            "tool", "visibility", "tier", "effect", "exposure"
        )?;
        for &t in &tools {
            writeln!(
                out,
                "{:width$}  {:12}  {:6}  {:11}  {:9}",
                c.exported_name(t),
                c.visibility(t).as_str(),
                c.tier(t).as_str(),
                c.effect(t).kind.as_str(),
                c.exposure(t).as_str()
            )?;
        }
        eprintln!("{}", count(tools.len(), "tool"));
    }
    Ok(ExitCode::SUCCESS)
}

fn search(a: &SearchArgs) -> anyhow::Result<ExitCode> {
    let c = catalog(&a.catalog)?;
    let p = profile(&c, a.profile.as_deref())?;
    let query = a.query.join(" ");
    if query.trim().is_empty() {
        bail!("the query is empty; pass what the tool should do, e.g. `toolcat search \"read a file\"`");
    }
    // Bounded by clap to 1..=MAX_SEARCH_LIMIT, which fits every usize.
    let limit = usize::try_from(a.limit).unwrap_or(usize::MAX);
    #[cfg(feature = "semantic")]
    let hits = if a.semantic {
        semantic_search(&c, p, &query, limit, a)?
    } else {
        c.search(&query, p, limit)?
    };
    #[cfg(not(feature = "semantic"))]
    let hits = c.search(&query, p, limit)?;
    let mut out = std::io::stdout().lock();
    if a.json {
        let rows: Vec<_> = hits
            .iter()
            .map(|h| json!({"name": c.exported_name(h.tool), "score": h.score, "match": h.kind}))
            .collect();
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else {
        if hits.is_empty() {
            eprintln!(
                "no tool of profile `{}` matches; try other words, or `toolcat list`",
                c.profile_name(p)
            );
        }
        // names padded to the longest (at least 40 columns), so the scores line up
        let width = hits
            .iter()
            .map(|h| c.exported_name(h.tool).chars().count())
            .max()
            .unwrap_or(0)
            .max(40);
        for (rank, h) in hits.iter().enumerate() {
            let first_line = c.description(h.tool).lines().next().unwrap_or("");
            let short: String = first_line.chars().take(100).collect();
            // an exact-name hit has no score to compare: it is first by rule
            let score = match h.kind {
                toolcat::HitKind::Name => "name".to_string(),
                _ => format!("{:.3}", h.score),
            };
            writeln!(
                out,
                "{:>2}. {:<width$} {:>8}  {}",
                rank + 1,
                c.exported_name(h.tool),
                score,
                short
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolcat search --semantic`: fused hits, or BM25 hits after a one-line notice on standard
/// error when there is no model or the query cannot be embedded.
#[cfg(feature = "semantic")]
fn semantic_search(
    c: &Catalog,
    p: ProfileId,
    query: &str,
    limit: usize,
    a: &SearchArgs,
) -> anyhow::Result<Vec<toolcat::Hit>> {
    use toolcat::fusion::{model_dir, no_model_notice, SemanticSearch};
    let Some((dir, _)) = model_dir(a.model_args.model.as_deref()) else {
        eprintln!("{}", no_model_notice());
        return Ok(c.search(query, p, limit)?);
    };
    let cache = toolcat::semantic::default_cache_dir();
    let encoder = a.model_args.load_encoder(&dir)?;
    // The vectors compiled in for the reference catalog serve when they match `c` and the model;
    // otherwise they come from the cache or are encoded now.
    let vectors = toolcat::semantic::ToolVectors::load(
        c,
        &encoder,
        Some(crate::REFERENCE_VECTORS),
        cache.as_deref(),
    )
    .context("cannot embed the catalog's tools")?;
    if let Some(why) = vectors.cache_error() {
        eprintln!(
            "semantic search: the tool vectors were computed but not cached ({why}), so every run computes them again; set TOOLCAT_CACHE_DIR to a writable folder"
        );
    }
    let semantic = SemanticSearch::new(encoder, vectors);
    let found = semantic.search_in(
        c,
        query,
        c.profile_tools(p),
        limit,
        a.model_args.dense_weight,
    )?;
    if let Some(why) = &found.fallback {
        eprintln!("{why}");
    }
    Ok(found.hits)
}

fn plan(a: &PlanArgs) -> anyhow::Result<ExitCode> {
    let c = catalog(&a.catalog)?;
    let p = c.profile(&a.profile)?;
    let (sets, why) = if a.toolsets.is_empty() {
        match c.presets().find(|&pr| c.preset_profile(pr) == p) {
            Some(pr) => (
                c.preset_toolsets(pr).collect(),
                format!("toolsets of preset `{}`", c.preset_name(pr)),
            ),
            None => (
                c.toolsets().collect(),
                "every toolset (no preset names this profile)".to_string(),
            ),
        }
    } else {
        (toolsets(&c, &a.toolsets)?, "toolsets given".to_string())
    };
    let resolve = |names: &[String]| -> anyhow::Result<Vec<_>> {
        names
            .iter()
            .map(|n| c.tool(n).map_err(anyhow::Error::from))
            .collect()
    };
    let discovered = resolve(&a.discovered)?;
    let named = resolve(&a.named)?;
    let mut planner = TurnPlanner::new(&c);
    let turn = planner.plan(
        &c,
        &TurnInput {
            profile: p,
            toolsets: &sets,
            discovered: &discovered,
            named: &named,
        },
    );
    // A named or discovered tool outside profile ∩ active toolsets (or deprecated) takes no part in
    // the plan; say so instead of dropping it silently.
    for (flag, tools) in [("--named", &named), ("--discovered", &discovered)] {
        for &t in tools.iter().filter(|&&t| !turn.is_visible(t)) {
            eprintln!(
                "note: {flag} `{}` is not in this plan: profile `{}` with the active toolsets does not reach it, or it is deprecated",
                c.exported_name(t),
                c.profile_name(p)
            );
        }
    }
    let format = ExportFormat::from(a.format);
    let value = export_plan(&turn, format);
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &value)?;
    writeln!(out)?;
    if a.stats {
        let counts = turn.counts();
        let stats = toolcat::tokens::plan_stats(&turn, format);
        let names: Vec<&str> = sets.iter().map(|&s| c.toolset_name(s)).collect();
        eprintln!(
            "profile `{}`, {why}: {}",
            c.profile_name(p),
            names.join(", ")
        );
        eprintln!(
            "definitions sent: {} of {} the profile owns ({} inline, {} appended by discovery, {} discoverable reachable, {} deferred{})",
            stats.definitions,
            stats.profile_definitions,
            counts.inline,
            counts.appended,
            counts.discoverable_reachable,
            counts.deferred,
            if counts.discovery { ", discovery meta-tools included" } else { "" }
        );
        eprintln!(
            "tokens ({format}, o200k_base): {} of {} for the whole profile ({:.1}%, {} saved)",
            stats.tokens,
            stats.profile_tokens,
            100.0 * stats.ratio(),
            stats.profile_tokens.saturating_sub(stats.tokens)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn import_cmd(a: &ImportArgs) -> anyhow::Result<ExitCode> {
    let (Some(from), Some(path)) = (a.from, &a.path) else {
        return crate::servers::import_from_servers(
            &a.catalog,
            &a.from_server,
            a.server.as_deref(),
            a.timeout.map(std::time::Duration::from_millis),
        );
    };
    if a.catalog.catalog.is_some() {
        bail!("`--catalog` names the catalog whose servers `--from-server NAME` connects to; `--from {}` reads only its PATH", import::ImportKind::from(from));
    }
    let options = ImportOptions {
        feature_flags: a.feature_flags.clone(),
        server_name: a.server.clone(),
        ..ImportOptions::default()
    };
    let output = import::import_with(from.into(), path, &options)?;
    print!("{}", output.text);
    eprint!("{}", output.report);
    Ok(ExitCode::SUCCESS)
}

fn generate_cmd(a: &GenerateArgs) -> anyhow::Result<ExitCode> {
    note_reference_catalog(&a.catalog);
    let c = catalog(&a.catalog)?;
    let files = generate::files(&c)?;
    if a.check {
        let stale = generate::stale(&a.dir, &files);
        if stale.is_empty() {
            println!("{}: {} files fresh", a.dir.display(), files.len());
            return Ok(ExitCode::SUCCESS);
        }
        for path in &stale {
            eprintln!(
                "stale: {} (run `{}` to rewrite it)",
                path.display(),
                generate::COMMAND
            );
        }
        return Ok(ExitCode::FAILURE);
    }
    let written = generate::write(Path::new(&a.dir), &files)?;
    for path in &written {
        println!("wrote {}", path.display());
    }
    eprintln!("{} of {} files changed", written.len(), files.len());
    Ok(ExitCode::SUCCESS)
}

fn call(a: &CallArgs) -> anyhow::Result<ExitCode> {
    let c = catalog(&a.catalog)?;
    let tool = c.tool(&a.name)?;
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
    let pool = match crate::servers::servers_for_call(&c, &a.connect, tool)? {
        None => None,
        Some(only) => {
            let _entered = runtime.enter();
            crate::servers::start_pool(
                &c,
                &a.catalog,
                &a.connect,
                Some(only),
                std::time::Duration::from_millis(crate::servers::DEFAULT_CALL_WAIT_MS),
            )?
        }
    };
    // The one execution path: scope (every tool of the catalog), validation, prepare, approval,
    // scheduling, re-verification, execution and, with a store, the call record.
    let mut coordinator = toolcat::Coordinator::new(&c, ctx);
    if let Some(pool) = &pool {
        let budget = pool.wait_budget();
        if !runtime.block_on(pool.wait_ready(budget)) {
            crate::servers::note_unready(pool, budget);
        }
        coordinator = coordinator.with_servers(std::sync::Arc::clone(pool));
    }
    // Every call is recorded, in the same default store `toolcat calls` reads; a store that
    // cannot be opened runs nothing (the record must exist before the side effect).
    let store = toolcat::CallStore::open(&a.store.path(true)?)?;
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
    match outcome.result {
        Ok(value) => {
            let mut out = std::io::stdout().lock();
            serde_json::to_writer_pretty(&mut out, &value.value)?;
            writeln!(out)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {e}");
            if matches!(e, toolcat::CallError::NeedsApproval { .. }) {
                eprintln!("help: pass `--approve` to approve this operation from the command line");
            }
            Ok(ExitCode::FAILURE)
        }
    }
}

fn session(a: &SessionArgs) -> anyhow::Result<ExitCode> {
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
        preselect: Some(if a.no_preselect {
            Preselect::None
        } else {
            Preselect::Bm25
        }),
    };
    let mut s = settings.session(&c, toolcat::ToolContext::new(workspace.clone()))?;
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
        crate::servers::start_pool(
            &c,
            &a.catalog,
            &a.connect,
            only,
            toolcat::remote::PoolOptions::default().wait_budget,
        )?
    };
    if let Some(pool) = &pool {
        s = s.with_coordinator(
            toolcat::Coordinator::new(&c, toolcat::ToolContext::new(workspace))
                .with_servers(std::sync::Arc::clone(pool)),
        );
    }
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
                            crate::servers::note_unready(pool, budget);
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
                        "evicted": report.evicted,
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
                    ("evicted (least recently used)", &report.evicted),
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
                for call in calls {
                    let r = runtime.block_on(s.handle_call(&call.name, call.args.clone()));
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
                }
                if a.json {
                    let line =
                        json!({"turn": turn, "step": step, "definitions": defs, "calls": results});
                    writeln!(out, "{line}")?;
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
    Ok(ExitCode::SUCCESS)
}
