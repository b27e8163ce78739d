//! `toolcat list`: the tools a profile owns, optionally within toolsets or an exposure scope.

use crate::cli::Exit;
use std::io::Write as _;

use clap::Args;
use serde_json::json;
use toolcat_catalog::model::Exposure;

use super::args::{catalog, count, profile, toolsets, CatalogArg, ScopeArg};

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
    /// Print a JSON array instead of a table, one object per tool: `name` (exported),
    /// `description`, `visibility`, `tier`, `effect`, `exposure`, `status` and `toolsets`.
    #[arg(long)]
    pub json: bool,
}

/// Runs `toolcat list`.
pub fn run(a: &ListArgs) -> anyhow::Result<Exit> {
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
    Ok(Exit::Ok)
}
