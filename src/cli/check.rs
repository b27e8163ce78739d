//! `toolcat check`: validate a catalog (every diagnostic on stderr), optionally against export
//! targets (`--target`) and the MCP servers it declares (`--live`).

use crate::cli::Exit;
use std::borrow::Cow;
use std::io::Write as _;

use clap::{Args, ValueEnum};
use toolcat::Catalog;
use toolcat_catalog::diagnostics::{render_all, render_all_capped, Diagnostic};
use toolcat_catalog::model::Target;

use super::args::{catalog, count, CatalogArg, REFERENCE_LABEL};
use super::servers;

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
    /// Print the result as JSON on stdout: a valid catalog as one object (`catalog`, `ok`:
    /// true, `tools`, `profiles`, `toolsets`, `presets`, `mcp_servers`, `warnings`: counts);
    /// with `--live`, the comparison as a JSON array, one object per server (`server`, `clean`,
    /// `added`, `removed`, `changed` with each `tool`, `change` and `changes`, or `error`).
    /// Diagnostics stay on stderr.
    #[arg(long)]
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

/// Runs `toolcat check`.
pub fn run(a: &CheckArgs) -> anyhow::Result<Exit> {
    let (path, source) = match a.catalog.path()? {
        None => (
            REFERENCE_LABEL.to_string(),
            Cow::Borrowed(crate::REFERENCE_SOURCE),
        ),
        Some(p) => match toolcat::catalog::read_catalog_source(p) {
            Ok(source) => (p.display().to_string(), Cow::Owned(source)),
            // Not UTF-8 (E0106): located like every diagnostic of the file.
            Err(e @ toolcat::CatalogError::Invalid { .. }) => {
                eprint!("{e}");
                return Ok(Exit::CheckFailed);
            }
            Err(e) => return Err(anyhow::anyhow!("{e}")),
        },
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
                let c: &Catalog = match a.catalog.path()? {
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
                    return Ok(Exit::CheckFailed);
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
            if !a.live && a.json {
                let value = serde_json::json!({
                    "catalog": path,
                    "ok": true,
                    "tools": t.len,
                    "profiles": t.profile_names.len(),
                    "toolsets": t.toolset_names.len(),
                    "presets": t.preset_names.len(),
                    "mcp_servers": t.server_names.len(),
                    "warnings": compiled.warnings.len(),
                });
                let mut out = std::io::stdout().lock();
                serde_json::to_writer_pretty(&mut out, &value)?;
                writeln!(out)?;
                return Ok(Exit::Ok);
            }
            if !a.live {
                writeln!(std::io::stdout().lock(), "{summary}")?;
                return Ok(Exit::Ok);
            }
            // The rows are valid; the live comparison goes to stdout (as JSON with `--json`),
            // the summary to stderr.
            eprintln!("{summary}");
            let c = catalog(&a.catalog)?;
            let exit = servers::check_live(
                &c,
                &a.catalog,
                &a.servers,
                a.timeout.map(std::time::Duration::from_millis),
                a.json,
            )?;
            if exit == Exit::Ok {
                Ok(exit)
            } else {
                eprintln!("{path}: the declared rows differ from what the MCP servers serve now, or a server cannot be reached; update the changed rows (`toolcat import --from-server NAME` prints that server's rows alone: copy them over the old ones, do not redirect it onto the catalog) or the server");
                Ok(exit)
            }
        }
        Err(diagnostics) => {
            // `render_all` ends with the summary line (`error: 2 errors and 1 warning in PATH`).
            eprint!("{}", render_warnings(a, &diagnostics, &path, &source));
            Ok(Exit::CheckFailed)
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
