//! `toolcat plan`: the tool definitions the model gets this turn, as JSON on stdout; on stderr, one
//! `refused:` line per tool the format cannot declare (Gemini), and with `--stats` the counts.

use crate::cli::Exit;
use std::io::Write as _;

use clap::{Args, ValueEnum};
use toolcat::export::{export_plan_with, ExportFormat, ExportOptions, SearchMode};
use toolcat::{TurnInput, TurnPlanner};

use super::args::{catalog, toolsets, CatalogArg};

/// Provider format of exported definitions.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    /// MCP `tools/list` result.
    Mcp,
    /// OpenAI Chat Completions function tools.
    Openai,
    /// OpenAI Responses API function tools (flat).
    #[value(name = "openai-responses")]
    OpenaiResponses,
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
            FormatArg::OpenaiResponses => ExportFormat::OpenAiResponses,
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
    /// Load deferred tools with the provider's hosted tool search instead of toolcat's
    /// `tool_search` (formats `anthropic` and `openai-responses` only).
    #[arg(long)]
    pub hosted_search: bool,
    /// Also print, on stderr, the counts and the token cost (o200k) against the whole profile.
    #[arg(long)]
    pub stats: bool,
}

/// Runs `toolcat plan`.
pub fn run(a: &PlanArgs) -> anyhow::Result<Exit> {
    let format = ExportFormat::from(a.format);
    if a.hosted_search && !ExportFormat::HOSTED_SEARCH.contains(&format) {
        let takes: Vec<String> = ExportFormat::HOSTED_SEARCH
            .iter()
            .map(|f| format!("`{f}`"))
            .collect();
        anyhow::bail!(
            "`--hosted-search` does not apply to `--format {format}`: only {} have a hosted tool search; drop the flag or pick one of those formats",
            takes.join(" and ")
        );
    }
    let options = ExportOptions {
        search: if a.hosted_search {
            SearchMode::Hosted
        } else {
            SearchMode::Own
        },
    };
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
    let export = export_plan_with(&turn, format, &options)?;
    // A tool the target refuses is not declared; say which and why instead of dropping it
    // silently.
    for r in export.refused() {
        let at = if r.path.is_empty() {
            "the root"
        } else {
            &r.path
        };
        eprintln!(
            "refused: `{}` is left out of the `{format}` export ({}, at {at}): {}",
            r.tool, r.rule, r.message
        );
    }
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &export)?;
    writeln!(out)?;
    if a.stats {
        let counts = turn.counts();
        let stats = toolcat::tokens::plan_stats_with(&turn, format, &options)?;
        let names: Vec<&str> = sets.iter().map(|&s| c.toolset_name(s)).collect();
        eprintln!(
            "profile `{}`, {why}: {}",
            c.profile_name(p),
            names.join(", ")
        );
        eprintln!(
            "definitions sent: {} of {} the profile owns ({} inline, {} appended by discovery, {} discoverable reachable, {} deferred{}{})",
            stats.definitions,
            stats.profile_definitions,
            counts.inline,
            counts.appended,
            counts.discoverable_reachable,
            counts.deferred,
            if counts.discovery { ", discovery meta-tools included" } else { "" },
            if stats.refused > 0 {
                format!(", {} refused by `{format}`", stats.refused)
            } else {
                String::new()
            }
        );
        eprintln!(
            "tokens ({format}, o200k_base): {} of {} for the whole profile ({:.1}%, {} saved)",
            stats.tokens,
            stats.profile_tokens,
            100.0 * stats.ratio(),
            stats.profile_tokens.saturating_sub(stats.tokens)
        );
    }
    Ok(Exit::Ok)
}
