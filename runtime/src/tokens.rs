//! Token counts of tool definitions, with the `o200k_base` BPE (tiktoken-rs; its vocabulary is
//! compiled in, nothing is downloaded).
//!
//! A count is the number of `o200k_base` tokens of the compact JSON text of an export. Providers
//! render definitions into their own prompt format before counting, so this is a proxy for what a
//! turn costs — the same for every plan, so plans compare fairly — not a bill.

use serde::Serialize;
use serde_json::Value;
use tiktoken_rs::CoreBPE;
use toolcat_catalog::model::Status;

use crate::catalog::{Catalog, ProfileId, ToolIndex};
use crate::export::{export_tools, ExportFormat};
use crate::plan::Plan;

/// The tokenizer, loaded once per process (the first call takes a few hundred milliseconds).
fn bpe() -> &'static CoreBPE {
    tiktoken_rs::o200k_base_singleton()
}

/// Number of `o200k_base` tokens of `text` (special-token text counts as ordinary text).
pub fn count_tokens(text: &str) -> usize {
    bpe().encode_ordinary(text).len()
}

/// Number of `o200k_base` tokens of the compact JSON text of `value`.
pub fn count_json_tokens(value: &Value) -> usize {
    count_tokens(&value.to_string())
}

/// What a plan's definitions cost, next to what the whole profile's would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PlanStats {
    pub format: ExportFormat,
    /// Definitions the model reads this turn (the plan's visible tools).
    pub definitions: usize,
    /// Tokens of those definitions in `format`.
    pub tokens: usize,
    /// Definitions of every tool of the profile that a plan can show (deprecated tools aside).
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

/// Token statistics of `plan` in `format`. Deferred Anthropic definitions are not counted: they
/// are sent with `defer_loading` and stay out of the model's context until loaded.
pub fn plan_stats(plan: &Plan<'_>, format: ExportFormat) -> PlanStats {
    let catalog = plan.catalog();
    let tools = plan.tools();
    let all = profile_definitions(catalog, plan.profile());
    PlanStats {
        format,
        definitions: tools.len(),
        tokens: count_json_tokens(&export_tools(catalog, tools.iter().copied(), format)),
        profile_definitions: all.len(),
        profile_tokens: count_json_tokens(&export_tools(catalog, all, format)),
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
            let exported = export_tools(&c, plan.tools().iter().copied(), format);
            assert_eq!(s.tokens, count_json_tokens(&exported));
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
