//! The turns the benchmarks plan, prepared before timing so the plan itself is all that is
//! measured.
//!
//! Two scenarios, on every scaled catalog:
//! - `coding`: the preset `coding` (profile `coding`, toolsets `github`, `category_code`,
//!   `category_file_access`, `discovery`), with 8 tools found by discovery and 1 named by the user;
//! - `full`: profile `full` with every toolset active, 8 discovered and 1 named.
//!
//! Discovered tools are reachable discoverable tools picked evenly over the catalog (the session
//! would append them in that order); the named tool is the reachable tool in the middle.

use toolcat::{Catalog, ProfileId, ToolIndex, ToolsetId, TurnInput};
use toolcat_catalog::model::{Tier, Visibility};

/// Tools found by discovery in each scenario.
pub const DISCOVERED: usize = 8;

/// One prepared turn.
#[derive(Debug, Clone)]
pub struct Turn {
    /// `coding` or `full`.
    pub scenario: &'static str,
    pub profile: ProfileId,
    pub toolsets: Vec<ToolsetId>,
    pub discovered: Vec<ToolIndex>,
    pub named: Vec<ToolIndex>,
}

impl Turn {
    /// The planner's input.
    pub fn input(&self) -> TurnInput<'_> {
        TurnInput {
            profile: self.profile,
            toolsets: &self.toolsets,
            discovered: &self.discovered,
            named: &self.named,
        }
    }
}

/// Scenario names, in the order of [`turns`].
pub const SCENARIOS: [&str; 2] = ["coding", "full"];

/// Both scenarios on `catalog` (a scaled catalog: it has the preset `coding`).
///
/// # Errors
/// When the catalog lacks the preset `coding`.
pub fn turns(catalog: &Catalog) -> Result<Vec<Turn>, String> {
    let preset = catalog
        .preset("coding")
        .map_err(|e| format!("the scaled catalog has no preset `coding`: {e}"))?;
    let coding = (
        catalog.preset_profile(preset),
        catalog.preset_toolsets(preset).collect::<Vec<_>>(),
    );
    let full = (
        catalog.full_profile(),
        catalog.toolsets().collect::<Vec<_>>(),
    );
    Ok([("coding", coding), ("full", full)]
        .into_iter()
        .map(|(scenario, (profile, toolsets))| {
            let reachable = reachable(catalog, profile, &toolsets);
            let discoverable: Vec<ToolIndex> = reachable
                .iter()
                .copied()
                .filter(|&t| {
                    catalog.visibility(t) == Visibility::Discoverable
                        && catalog.tier(t) != Tier::Loop
                })
                .collect();
            let discovered = spread(&discoverable, DISCOVERED);
            let named = reachable
                .get(reachable.len() / 2)
                .copied()
                .into_iter()
                .collect();
            Turn {
                scenario,
                profile,
                toolsets,
                discovered,
                named,
            }
        })
        .collect())
}

/// Tools of `profile` in any of `toolsets`, catalog order.
fn reachable(catalog: &Catalog, profile: ProfileId, toolsets: &[ToolsetId]) -> Vec<ToolIndex> {
    let owned = catalog.profile_tools(profile);
    catalog
        .tools()
        .filter(|t| {
            let (k, b) = (t.index() / 64, t.index() % 64);
            owned[k] >> b & 1 == 1
                && toolsets
                    .iter()
                    .any(|&s| catalog.toolset_tools(s)[k] >> b & 1 == 1)
        })
        .collect()
}

/// `n` items of `items` picked evenly (all of them when there are fewer).
fn spread<T: Copy>(items: &[T], n: usize) -> Vec<T> {
    if items.len() <= n {
        return items.to_vec();
    }
    (0..n).map(|j| items[j * items.len() / n]).collect()
}
