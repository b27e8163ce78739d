//! Token counts of tool definitions, with the `o200k_base` BPE (tiktoken-rs; its vocabulary is
//! compiled in, nothing is downloaded).
//!
//! A count is the number of `o200k_base` tokens of the compact JSON text of an export. Providers
//! render definitions into their own prompt format before counting, so this is a proxy for what a
//! turn costs — the same for every plan, so plans compare fairly — not a bill.

use serde::Serialize;
use tiktoken_rs::CoreBPE;
use toolcat_catalog::model::Status;

use crate::catalog::{Catalog, ProfileId, ToolIndex};
use crate::export::{
    export_plan, export_plan_with, export_tools, Export, ExportError, ExportFormat, ExportOptions,
};
use crate::plan::Plan;

/// The tokenizer, loaded once per process (the first call takes a few hundred milliseconds).
fn bpe() -> &'static CoreBPE {
    tiktoken_rs::o200k_base_singleton()
}

/// Number of `o200k_base` tokens of `text` (special-token text counts as ordinary text).
pub fn count_tokens(text: &str) -> usize {
    bpe().encode_ordinary(text).len()
}

/// Number of `o200k_base` tokens of the compact JSON text of `value` (a `serde_json::Value` or
/// an [`Export`]); `0` for a value that has no JSON text (a map with non-string keys).
pub fn count_json_tokens<T: Serialize + ?Sized>(value: &T) -> usize {
    serde_json::to_string(value)
        .map(|text| count_tokens(&text))
        .unwrap_or(0)
}

/// What a plan's definitions cost, next to what the whole profile's would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PlanStats {
    pub format: ExportFormat,
    /// Definitions the model reads this turn: the plan's visible tools the export declares
    /// ([`Export::definitions`]; a tool the target refuses is not one).
    pub definitions: usize,
    /// The plan's visible tools the export left out because the target refuses their input
    /// schema ([`Export::refused`]; Gemini only).
    pub refused: usize,
    /// Tokens of those definitions in `format`.
    pub tokens: usize,
    /// Definitions of every tool of the profile that a plan can show (deprecated tools aside)
    /// that the export declares.
    pub profile_definitions: usize,
    /// Tokens of those definitions in `format`.
    pub profile_tokens: usize,
}

impl PlanStats {
    /// `tokens / profile_tokens`, or `0.0` for an empty profile.
    pub fn ratio(&self) -> f64 {
        if self.profile_tokens == 0 {
            0.0
        } else {
            self.tokens as f64 / self.profile_tokens as f64
        }
    }
}

/// The tools of `profile` that a plan can show (deprecated tools aside), in catalog order.
pub fn profile_definitions(catalog: &Catalog, profile: ProfileId) -> Vec<ToolIndex> {
    let deprecated = catalog.status_tools(Status::Deprecated);
    let owned: Vec<u64> = catalog
        .profile_tools(profile)
        .iter()
        .zip(deprecated)
        .map(|(p, d)| p & !d)
        .collect();
    catalog.tools_in(&owned).collect()
}

/// Token statistics of `plan` in `format` with toolcat's own search. Deferred definitions are
/// not counted: they are sent with `defer_loading` and stay out of the model's context until
/// loaded.
pub fn plan_stats(plan: &Plan<'_>, format: ExportFormat) -> PlanStats {
    stats_of(plan, &export_plan(plan, format))
}

/// Token statistics of `plan` in `format` with `options`: the definitions and tokens of
/// [`export_plan_with`] without what is deferred ([`Export::without_deferred`]; a hosted search
/// tool counts, a namespace's name and description do not), against the whole profile exported
/// with nothing deferred.
///
/// # Errors
/// Those of [`export_plan_with`].
pub fn plan_stats_with(
    plan: &Plan<'_>,
    format: ExportFormat,
    options: &ExportOptions,
) -> Result<PlanStats, ExportError> {
    Ok(stats_of(plan, &export_plan_with(plan, format, options)?))
}

fn stats_of(plan: &Plan<'_>, export: &Export) -> PlanStats {
    let catalog = plan.catalog();
    let loaded = export.without_deferred();
    let whole = export_tools(
        catalog,
        profile_definitions(catalog, plan.profile()),
        export.format(),
    );
    PlanStats {
        format: export.format(),
        definitions: loaded.definitions(),
        refused: export.refused().len(),
        tokens: count_json_tokens(&loaded),
        profile_definitions: whole.definitions(),
        profile_tokens: count_json_tokens(&whole),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::plan::{TurnInput, TurnPlanner};

    #[test]
    fn counts_o200k_tokens() {
        assert_eq!(count_tokens(""), 0);
        // "hello world" is two o200k_base tokens: "hello", " world".
        assert_eq!(count_tokens("hello world"), 2);
        let v = serde_json::json!({"a": 1});
        assert_eq!(count_json_tokens(&v), count_tokens(r#"{"a":1}"#));
    }

    #[test]
    fn plan_stats_compare_the_plan_with_the_whole_profile() {
        let c = fixture::catalog();
        let coder = c.profile("coder").expect("known");
        let sets = [c.toolset("files").expect("known")];
        let mut planner = TurnPlanner::new(&c);
        let plan = planner.plan(
            &c,
            &TurnInput {
                profile: coder,
                toolsets: &sets,
                discovered: &[],
                named: &[],
            },
        );
        for &format in ExportFormat::ALL {
            let s = plan_stats(&plan, format);
            assert_eq!(s.definitions, plan.tools().len());
            assert_eq!(s.refused, 0);
            // The plan's export: its definitions, the manifest in `tool_search` included.
            let exported = export_plan(&plan, format).without_deferred();
            assert_eq!(s.tokens, count_json_tokens(&exported));
            let plain = export_tools(&c, plan.tools().iter().copied(), format);
            let manifest = crate::manifest::plan_manifest(&plan).expect("coder has deferred tools");
            assert!(
                s.tokens > count_json_tokens(&plain),
                "the manifest costs tokens"
            );
            assert!(
                s.tokens <= count_json_tokens(&plain) + crate::tokens::count_tokens(&manifest) + 4,
                "{s:?}"
            );
            let owned = fixture::rows()
                .iter()
                .filter(|r| r.profiles.contains(&"coder") && r.status != Status::Deprecated)
                .count();
            assert_eq!(s.profile_definitions, owned);
            assert!(s.tokens > 0 && s.tokens < s.profile_tokens, "{s:?}");
            assert!(s.ratio() > 0.0 && s.ratio() < 1.0);
        }
    }
}
