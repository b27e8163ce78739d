//! The deferred-tool manifest: the discoverable tools a caller can reach, named in the
//! description of `tool_search`, so that a model that never calls the search still learns what it
//! could find.
//!
//! - Which tools: the plan's reachable discoverable tools (profile ∩ active toolsets, not
//!   deprecated, meta-tools aside) that are not in the plan's core without named tools
//!   ([`Plan::base_core`]: the inline tools, the meta-tools and what they require), in catalog
//!   order; a tool the user names stays listed. That core and the reachable set depend on the
//!   profile and the active toolsets only, so a session's manifest is fixed
//!   from its start (until the host changes the toolsets) and never breaks its stable prefix:
//!   tools the session discovers later stay listed.
//! - Each entry: the exported name, `: ` and the first [`MANIFEST_WORDS`] words of the tool's
//!   first sentence ([`crate::meta::one_line`]), `…` when cut; entries are separated by `; `.
//! - The text appended to the description, after a blank line:
//!   `Discoverable tools tool_search can load: a: words; b: words.` (no `.` after a last entry
//!   cut with `…`) — or, when the budget cuts
//!   the list, `Discoverable tools tool_search can load: a: words; … and N more; call
//!   tool_search.`
//! - The budget: the profile's `manifest_tokens` ([`Catalog::profile_manifest_tokens`],
//!   default [`toolcat_catalog::model::DEFAULT_MANIFEST_TOKENS`]), counted on the appended text
//!   with the `o200k_base` tokenizer ([`crate::tokens::count_tokens`]). Entries are taken in
//!   order while the text, cut statement included, fits; `0`, no reachable tool outside the
//!   core, or a budget too small for even the cut statement means no manifest.

use toolcat_catalog::model::{Tier, Visibility};
use toolcat_catalog::tables::bit;

use crate::catalog::{Catalog, ToolIndex};
use crate::meta::one_line;
use crate::plan::Plan;
use crate::tokens::count_tokens;

/// Words of a tool's first sentence an entry keeps: 8.
pub const MANIFEST_WORDS: usize = 8;

/// The lead of the manifest text.
const LEAD: &str = "Discoverable tools tool_search can load: ";

/// The tools the manifest of `plan` may list, in catalog order (see the module docs).
pub fn manifest_tools<'p>(plan: &Plan<'p>) -> impl Iterator<Item = ToolIndex> + 'p {
    let catalog = plan.catalog();
    let reachable = plan.reachable();
    let core = plan.base_core();
    let discoverable = catalog.visibility_tools(Visibility::Discoverable);
    let meta = catalog.tier_tools(Tier::Loop);
    catalog.tools().filter(move |t| {
        let i = t.index();
        bit(reachable, i) && bit(discoverable, i) && !bit(meta, i) && !bit(core, i)
    })
}

/// One entry: `name: first words`.
fn entry(catalog: &Catalog, t: ToolIndex) -> String {
    let line = one_line(catalog.description(t));
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut few = words[..words.len().min(MANIFEST_WORDS)].join(" ");
    if words.len() > MANIFEST_WORDS {
        few.push('…');
    } else if few.ends_with('.') {
        few.pop();
    }
    format!("{}: {few}", catalog.exported_name(t))
}

/// The manifest text of `plan` within `budget` tokens, or `None` (see the module docs).
pub fn manifest_text(plan: &Plan<'_>, budget: usize) -> Option<String> {
    if budget == 0 {
        return None;
    }
    let catalog = plan.catalog();
    let tools: Vec<ToolIndex> = manifest_tools(plan).collect();
    if tools.is_empty() {
        return None;
    }
    let render = |taken: &[String], left: usize| {
        let mut text = String::from(LEAD);
        text.push_str(&taken.join("; "));
        if left == 0 {
            if !text.ends_with('…') {
                text.push('.');
            }
        } else {
            if !taken.is_empty() {
                text.push_str("; ");
            }
            text.push_str(&format!("… and {left} more; call tool_search."));
        }
        text
    };
    let mut taken: Vec<String> = Vec::new();
    let mut best = None;
    for (k, &t) in tools.iter().enumerate() {
        taken.push(entry(catalog, t));
        let text = render(&taken, tools.len() - k - 1);
        if count_tokens(&text) > budget {
            taken.pop();
            break;
        }
        best = Some(text);
    }
    match best {
        Some(text) => Some(text),
        None => {
            let text = render(&[], tools.len());
            (count_tokens(&text) <= budget).then_some(text)
        }
    }
}

/// The manifest of `plan` within its profile's budget ([`Catalog::profile_manifest_tokens`]).
pub fn plan_manifest(plan: &Plan<'_>) -> Option<String> {
    let budget = plan.catalog().profile_manifest_tokens(plan.profile());
    manifest_text(plan, budget as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::plan::{TurnInput, TurnPlanner};
    use crate::Catalog;

    fn with_plan(profile: &str, toolsets: &[&str], check: impl FnOnce(&Plan<'_>)) {
        let c = fixture::catalog();
        let sets: Vec<_> = toolsets
            .iter()
            .map(|s| c.toolset(s).expect("fixture toolset"))
            .collect();
        let mut planner = TurnPlanner::new(&c);
        let plan = planner.plan(
            &c,
            &TurnInput {
                profile: c.profile(profile).expect("fixture profile"),
                toolsets: &sets,
                discovered: &[],
                named: &[],
            },
        );
        check(&plan);
    }

    #[test]
    fn naming_a_tool_does_not_change_the_manifest() {
        let c = fixture::catalog();
        let sets: Vec<_> = ["core", "git", "github"]
            .iter()
            .map(|s| c.toolset(s).expect("fixture toolset"))
            .collect();
        let profile = c.profile("coder").expect("fixture profile");
        let git_commit = c.tool("git_commit").expect("fixture tool");
        let mut planner = TurnPlanner::new(&c);
        let mut manifest = |named: &[ToolIndex]| {
            let plan = planner.plan(
                &c,
                &TurnInput {
                    profile,
                    toolsets: &sets,
                    discovered: &[],
                    named,
                },
            );
            assert_eq!(plan.core().contains(&git_commit), !named.is_empty());
            (manifest_text(&plan, 10_000), manifest_tools(&plan).count())
        };
        let plain = manifest(&[]);
        assert!(plain
            .0
            .as_deref()
            .is_some_and(|m| m.contains("git_commit: ")));
        assert_eq!(manifest(&[git_commit]), plain);
    }

    #[test]
    fn an_entry_is_not_cut_at_an_abbreviation() {
        assert_eq!(
            one_line("Deletes one saved memory by id, e.g. when it is wrong. Then more."),
            "Deletes one saved memory by id, e.g. when it is wrong."
        );
        assert_eq!(
            one_line("Lists files, dirs, etc. in a tree. Fast."),
            "Lists files, dirs, etc. in a tree."
        );
        assert_eq!(
            one_line("Runs a Docker etc. Next."),
            "Runs a Docker etc. Next."
        );
        assert_eq!(one_line("Reads the cvs. Then more."), "Reads the cvs.");
    }

    #[test]
    fn lists_the_reachable_discoverable_tools_within_the_budget_and_states_the_cut() {
        with_plan("coder", &["core", "git", "github"], |plan| {
            let c = plan.catalog();
            let tools: Vec<&str> = manifest_tools(plan).map(|t| c.exported_name(t)).collect();
            assert!(tools.contains(&"git_commit"), "{tools:?}");
            assert!(!tools.iter().any(|t| t.starts_with("tool_")), "{tools:?}");
            for t in manifest_tools(plan) {
                assert_eq!(c.visibility(t), Visibility::Discoverable);
                assert!(!plan.core().contains(&t));
            }
            let whole = manifest_text(plan, 10_000).expect("a manifest");
            assert!(whole.starts_with(LEAD), "{whole}");
            assert!(!whole.contains("more; call tool_search"), "{whole}");
            for name in &tools {
                assert!(
                    whole.contains(&format!("{name}: ")),
                    "{name} missing: {whole}"
                );
            }
            // Every budget from the smallest cut statement up: within it, and the cut counted.
            let full = count_tokens(&whole);
            for budget in 1..full {
                let Some(text) = manifest_text(plan, budget) else {
                    continue;
                };
                assert!(count_tokens(&text) <= budget, "{budget}: {text}");
                let listed = tools
                    .iter()
                    .filter(|n| text.contains(&format!("{n}: ")))
                    .count();
                assert!(
                    text.contains(&format!(
                        "… and {} more; call tool_search.",
                        tools.len() - listed
                    )),
                    "{budget}: {text}"
                );
            }
            assert_eq!(manifest_text(plan, full).as_deref(), Some(whole.as_str()));
            assert_eq!(manifest_text(plan, 0), None);
            assert_eq!(
                manifest_text(plan, 3),
                None,
                "too small for the cut statement"
            );
        });
    }

    #[test]
    fn the_plan_export_carries_the_manifest_in_tool_search_within_the_profile_budget() {
        use crate::export::{export_plan, ExportFormat};
        let rows = fixture::rows();
        for budget in [None, Some(40), Some(0)] {
            let mut source = fixture::source_of(&rows);
            if let Some(b) = budget {
                source = source.replace(
                    "[profile.coder]\ndescription = \"the coder profile\"\n",
                    &format!("[profile.coder]\ndescription = \"the coder profile\"\nmanifest_tokens = {b}\n"),
                );
            }
            let loaded = toolcat_catalog::load::parse("m.toml", &source).expect("loads");
            let c =
                Catalog::from_tables(toolcat_catalog::derive::derive(&loaded)).expect("catalog");
            let coder = c.profile("coder").expect("known");
            let sets: Vec<_> = ["core", "github"]
                .map(|s| c.toolset(s).expect("known"))
                .to_vec();
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
            let limit = c.profile_manifest_tokens(coder) as usize;
            assert_eq!(limit, budget.map_or(300, |b| b as usize));
            let search = c.tool("tool_search").expect("known");
            let declared = c.description(search);
            for &format in ExportFormat::ALL {
                let json = export_plan(&plan, format).to_json();
                let text = json.to_string();
                let manifest = plan_manifest(&plan);
                match &manifest {
                    None => {
                        assert_eq!(limit, 0);
                        assert!(!text.contains(LEAD.trim_end()), "{format}: {text}");
                    }
                    Some(m) => {
                        assert!(count_tokens(m) <= limit, "{format}: {m}");
                        let full =
                            serde_json::to_string(&format!("{declared}\n\n{m}")).expect("json");
                        assert!(text.contains(&full), "{format}: {text}");
                        let cut = m.contains("more; call tool_search.");
                        assert_eq!(cut, budget == Some(40), "{m}");
                    }
                }
            }
        }
    }

    #[test]
    fn no_manifest_without_deferred_tools() {
        with_plan("reader", &["files"], |plan| {
            assert_eq!(manifest_tools(plan).count(), 0);
            assert_eq!(manifest_text(plan, 300), None);
        });
    }
}
