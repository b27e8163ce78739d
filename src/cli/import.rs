//! `toolcat import`: a real tool surface (a file, a directory or a running MCP server) as
//! `tools.toml` text on stdout, with a report on stderr.

use crate::cli::Exit;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::bail;
use clap::{Args, ValueEnum};
use toolcat_import::{self as import, ImportKind, ImportOptions};

use super::args::CatalogArg;
use super::servers;

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

/// Runs `toolcat import`.
pub fn run(a: &ImportArgs) -> anyhow::Result<Exit> {
    let (Some(from), Some(path)) = (a.from, &a.path) else {
        return servers::import_from_servers(
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
    write!(std::io::stdout().lock(), "{}", output.text)?;
    eprint!("{}", output.report);
    Ok(Exit::Ok)
}
