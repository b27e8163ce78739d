//! `toolcat export`: every tool of a catalog in one provider's wire format, as JSON on stdout
//! (`toolcat::export::export_tools`, nothing deferred). For `--format gemini`, each tool left out
//! because its input schema cannot be written as a Gemini `Schema` is named on stderr with the
//! rule and the JSON location (`toolcat::export::target_report`); a summary line follows. Local
//! tools this binary has no handler for (a project's catalog given with `--catalog`) are
//! exported with a schema that declares no arguments, and a line on stderr says so.

use crate::cli::Exit;
use std::io::Write as _;

use clap::Args;
use toolcat::export::{export_tools, target_report, ExportFormat};
use toolcat_catalog::targets::{FindingKind, Target};

use super::args::{catalog, count, CatalogArg};
use super::plan::FormatArg;

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// Provider format of the definitions.
    #[arg(long, value_enum)]
    pub format: FormatArg,
}

/// Runs `toolcat export`.
pub fn run(a: &ExportArgs) -> anyhow::Result<Exit> {
    let c = catalog(&a.catalog)?;
    let format = ExportFormat::from(a.format);
    let value = export_tools(&c, c.tools(), format);
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &value)?;
    writeln!(out)?;
    let total = c.tools().len();
    let unknown: Vec<&str> = c
        .tools()
        .filter(|&t| !c.input_schema_known(t))
        .map(|t| c.exported_name(t))
        .collect();
    if !unknown.is_empty() {
        const NAMED: usize = 3;
        let more = if unknown.len() > NAMED { ", ..." } else { "" };
        eprintln!(
            "{format}: {} ({}{more}) declared in the catalog but without a handler in this binary, so exported with an input schema that declares no arguments; export from your own binary (`toolcat::export::export_tools`), where the #[tool] handlers give each its schema",
            count(unknown.len(), "local tool"),
            unknown[..unknown.len().min(NAMED)].join(", "),
        );
    }
    if format.target() == Target::Gemini {
        let report = target_report(&c, &[Target::Gemini]);
        let mut refused = 0;
        for tool in &report.tools {
            let errors: Vec<_> = tool
                .findings
                .iter()
                .filter(|f| f.kind == FindingKind::Error)
                .collect();
            if errors.is_empty() {
                continue;
            }
            refused += 1;
            for f in errors {
                let at = if f.path.is_empty() { "/" } else { &f.path };
                eprintln!(
                    "gemini: `{}` is not exported: at `{at}`: {} [{}]",
                    tool.tool, f.message, f.rule
                );
            }
        }
        eprintln!(
            "{format}: {} of {} exported, {refused} refused",
            total - refused,
            count(total, "tool")
        );
    } else {
        eprintln!("{format}: {} exported", count(total, "tool"));
    }
    Ok(Exit::Ok)
}
