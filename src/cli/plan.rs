//! `toolcat plan`: the tool definitions the model gets this turn, as JSON on stdout.

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use toolcat::export::{export_plan, ExportFormat};
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
    /// Also print, on stderr, the counts and the token cost (o200k) against the whole profile.
    #[arg(long)]
    pub stats: bool,
}

/// Runs `toolcat plan`.
pub fn run(a: &PlanArgs) -> anyhow::Result<ExitCode> {
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
