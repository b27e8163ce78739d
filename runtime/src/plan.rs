//! Per-turn planning: which tools the model sees this turn.
//!
//! The rule (from the design brief, all bitset operations over the catalog's tables):
//!
//! ```text
//! reachable = profile ∩ (∪ active toolsets) − deprecated
//! visible   = reachable ∩ (inline ∪ named ∪ discovered)
//!           ∪ discovery meta-tools of the profile, when reachable ∩ discoverable ≠ ∅
//!             (tier `loop` tools aside; the discovery meta-tools are `tool_search`,
//!             `tool_describe` and `tool_call`: [`Catalog::discovery_tools`])
//!           closed over `requires`, transitively, keeping only tools of the profile that are
//!           not deprecated
//! ```
//!
//! Required tools come along even when none of their toolsets is active: `requires` says the
//! tool does not work without them, and the profile still bounds what the agent owns.
//!
//! Order is stable for prompt caching: every tool visible without discovery comes in catalog
//! order; tools made visible by discovery (and the tools they require that were not visible yet)
//! are appended after them, in discovery order. A tool that would be visible anyway stays at its
//! catalog position even when it was also discovered.
//!
//! [`TurnPlanner`] owns scratch buffers sized to the catalog, so a plan performs no heap
//! allocation once the planner exists (it grows them only if handed a larger catalog).

use serde::Serialize;
use toolcat_catalog::model::{Status, Tier, Visibility};
use toolcat_catalog::tables::{bit, ones, set_bit};

use crate::catalog::{Catalog, ProfileId, ToolIndex, ToolsetId};

/// What a turn starts from.
#[derive(Debug, Clone, Copy)]
pub struct TurnInput<'a> {
    /// The capability boundary.
    pub profile: ProfileId,
    /// The active toolsets.
    pub toolsets: &'a [ToolsetId],
    /// Tools found by discovery so far, in the order they were found (oldest first).
    pub discovered: &'a [ToolIndex],
    /// Tools named by the user or preselected for this turn.
    pub named: &'a [ToolIndex],
}

/// Sizes of one plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PlanCounts {
    /// Tools whose definitions are sent this turn.
    pub visible: usize,
    /// Visible tools whose visibility is `inline`.
    pub inline: usize,
    /// Tools appended after the catalog-ordered part because discovery made them visible
    /// (including tools they require).
    pub appended: usize,
    /// Discoverable tools (meta-tools aside) reachable in profile ∩ active toolsets.
    pub discoverable_reachable: usize,
    /// Reachable discoverable tools (meta-tools aside) that are not visible this turn: the
    /// definitions an Anthropic export sends with `defer_loading`.
    pub deferred: usize,
    /// Tools the profile owns.
    pub profile: usize,
    /// Entries of the input that could not take part: discovered or named tools outside
    /// profile ∩ active toolsets, deprecated, or not of this catalog; toolsets not of this catalog.
    pub ignored: usize,
    /// Whether the profile's discovery meta-tools were added because a discoverable tool is reachable.
    pub discovery: bool,
}

/// A turn's plan, borrowed from the [`TurnPlanner`] that computed it.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'p> {
    catalog: &'p Catalog,
    profile: ProfileId,
    tools: &'p [ToolIndex],
    /// How many of `tools` are the catalog-ordered part (see [`Plan::core`]).
    core: usize,
    visible: &'p [u64],
    /// The core without the named tools, as a bitset.
    base: &'p [u64],
    reachable: &'p [u64],
    counts: PlanCounts,
}

impl<'p> Plan<'p> {
    /// The catalog the plan is of.
    pub fn catalog(&self) -> &'p Catalog {
        self.catalog
    }

    /// The profile the plan was computed for.
    pub fn profile(&self) -> ProfileId {
        self.profile
    }

    /// The visible tools, in the order their definitions go out.
    pub fn tools(&self) -> &'p [ToolIndex] {
        self.tools
    }

    /// The catalog-ordered part of [`Plan::tools`], its first tools: what is visible without
    /// discovery — the inline tools of the active toolsets, the named tools, the discovery
    /// meta-tools when a discoverable tool is reachable, and what they require. Without named
    /// tools it depends on the profile and the active toolsets only.
    pub fn core(&self) -> &'p [ToolIndex] {
        &self.tools[..self.core]
    }

    /// The core as it is without named tools, as a bitset: the inline tools of the active
    /// toolsets, the discovery meta-tools when a discoverable tool is reachable, and what they
    /// require. It depends on the profile and the active toolsets only (the deferred-tool
    /// manifest leaves it out, [`crate::manifest`]).
    pub fn base_core(&self) -> &'p [u64] {
        self.base
    }

    /// The visible tools as a bitset.
    pub fn visible(&self) -> &'p [u64] {
        self.visible
    }

    /// Whether a tool is visible this turn.
    pub fn is_visible(&self, t: ToolIndex) -> bool {
        t.index() < self.catalog.len() && bit(self.visible, t.index())
    }

    /// profile ∩ active toolsets − deprecated, as a bitset: the tools discovery may make visible.
    pub fn reachable(&self) -> &'p [u64] {
        self.reachable
    }

    /// Reachable discoverable tools (meta-tools aside) that are not visible, in catalog order.
    pub fn deferred(&self) -> impl Iterator<Item = ToolIndex> + 'p {
        let discoverable = self.catalog.visibility_tools(Visibility::Discoverable);
        let meta = self.catalog.tier_tools(Tier::Loop);
        let (reachable, visible) = (self.reachable, self.visible);
        (0..reachable.len()).flat_map(move |k| {
            let mut word = reachable[k] & discoverable[k] & !meta[k] & !visible[k];
            std::iter::from_fn(move || {
                if word == 0 {
                    return None;
                }
                let b = word.trailing_zeros() as usize;
                word &= word - 1;
                Some(ToolIndex((k * 64 + b) as u32))
            })
        })
    }

    /// The sizes of the plan.
    pub fn counts(&self) -> PlanCounts {
        self.counts
    }
}

/// Computes plans, reusing its scratch buffers: after [`TurnPlanner::new`], planning for a
/// catalog of the same size allocates nothing.
#[derive(Debug, Clone, Default)]
pub struct TurnPlanner {
    reachable: Vec<u64>,
    visible: Vec<u64>,
    /// The core without the named tools, closed over `requires` ([`Plan::base_core`]).
    base: Vec<u64>,
    order: Vec<ToolIndex>,
    stack: Vec<u32>,
}

impl TurnPlanner {
    /// A planner with buffers sized to `catalog`.
    pub fn new(catalog: &Catalog) -> Self {
        let mut planner = TurnPlanner::default();
        planner.fit(catalog);
        planner
    }

    /// Grows the buffers to `catalog` (no-op when they fit already).
    fn fit(&mut self, catalog: &Catalog) {
        let (len, words) = (catalog.len(), catalog.words());
        self.reachable.resize(words, 0);
        self.visible.resize(words, 0);
        self.base.resize(words, 0);
        self.order.reserve(len.saturating_sub(self.order.len()));
        self.stack.reserve(len.saturating_sub(self.stack.len()));
    }

    /// Plans one turn of `catalog` (see the module docs for the rule and the order).
    ///
    /// Ids are expected to come from `catalog`; ones that do not are counted in
    /// [`PlanCounts::ignored`], and a profile that is not of `catalog` plans nothing.
    pub fn plan<'p>(&'p mut self, catalog: &'p Catalog, input: &TurnInput<'_>) -> Plan<'p> {
        self.fit(catalog);
        let w = catalog.words();
        let len = catalog.len();
        let reachable = &mut self.reachable[..w];
        let visible = &mut self.visible[..w];
        let base = &mut self.base[..w];
        reachable.fill(0);
        visible.fill(0);
        base.fill(0);
        self.order.clear();
        self.stack.clear();
        let mut counts = PlanCounts::default();

        let profile_known = input.profile.index() < catalog.tables().profile_names.len();
        if !profile_known {
            counts.ignored = 1 + input.discovered.len() + input.named.len();
            return Plan {
                catalog,
                profile: input.profile,
                tools: &self.order,
                core: 0,
                visible: &self.visible[..w],
                base: &self.base[..w],
                reachable: &self.reachable[..w],
                counts,
            };
        }
        let profile = catalog.profile_tools(input.profile);
        let deprecated = catalog.status_tools(Status::Deprecated);
        let meta = catalog.tier_tools(Tier::Loop);
        let inline = catalog.visibility_tools(Visibility::Inline);
        let discoverable = catalog.visibility_tools(Visibility::Discoverable);

        let toolset_count = catalog.tables().toolset_names.len();
        for &s in input.toolsets {
            if s.index() < toolset_count {
                let members = catalog.toolset_tools(s);
                for k in 0..w {
                    reachable[k] |= members[k];
                }
            } else {
                counts.ignored += 1;
            }
        }
        let mut any_discoverable = false;
        for k in 0..w {
            reachable[k] &= profile[k] & !deprecated[k];
            visible[k] = reachable[k] & inline[k];
            let d = reachable[k] & discoverable[k] & !meta[k];
            any_discoverable |= d != 0;
            counts.discoverable_reachable += d.count_ones() as usize;
            counts.profile += profile[k].count_ones() as usize;
        }
        if any_discoverable {
            counts.discovery = true;
            let discovery = catalog.discovery_tools();
            for k in 0..w {
                visible[k] |= profile[k] & discovery[k] & !deprecated[k];
            }
        }
        // The core without the named tools: what the manifest leaves out.
        base.copy_from_slice(visible);
        self.stack.extend(ones(base).map(|i| i as u32));
        close(catalog, profile, deprecated, base, &mut self.stack, None);
        for &t in input.named {
            if t.index() < len && bit(reachable, t.index()) {
                set_bit(visible, t.index());
            } else {
                counts.ignored += 1;
            }
        }

        // Close the catalog-ordered part over `requires`.
        self.stack.extend(ones(visible).map(|i| i as u32));
        close(catalog, profile, deprecated, visible, &mut self.stack, None);
        self.order
            .extend(ones(visible).map(|i| ToolIndex(i as u32)));
        let prefix = self.order.len();

        // Append what discovery adds, in discovery order, each followed by what it requires.
        for &t in input.discovered {
            let i = t.index();
            if i >= len || !bit(reachable, i) {
                counts.ignored += 1;
                continue;
            }
            if bit(visible, i) {
                continue;
            }
            set_bit(visible, i);
            self.order.push(t);
            self.stack.push(t.0);
            close(
                catalog,
                profile,
                deprecated,
                visible,
                &mut self.stack,
                Some(&mut self.order),
            );
        }

        counts.visible = self.order.len();
        counts.appended = self.order.len() - prefix;
        for k in 0..w {
            counts.inline += (visible[k] & inline[k]).count_ones() as usize;
            counts.deferred +=
                (reachable[k] & discoverable[k] & !meta[k] & !visible[k]).count_ones() as usize;
        }
        Plan {
            catalog,
            profile: input.profile,
            tools: &self.order,
            core: prefix,
            visible: &self.visible[..w],
            base: &self.base[..w],
            reachable: &self.reachable[..w],
            counts,
        }
    }
}

/// Adds to `visible` everything the tools on `stack` require, transitively, that the profile owns
/// and that is not deprecated; each newly added tool is also pushed onto `append` when given.
/// Every tool is pushed at most once, so `stack` never outgrows the catalog.
fn close(
    catalog: &Catalog,
    profile: &[u64],
    deprecated: &[u64],
    visible: &mut [u64],
    stack: &mut Vec<u32>,
    mut append: Option<&mut Vec<ToolIndex>>,
) {
    while let Some(t) = stack.pop() {
        for &r in catalog.tables().requires[t as usize].iter() {
            let r = r as usize;
            if bit(profile, r) && !bit(deprecated, r) && !bit(visible, r) {
                set_bit(visible, r);
                stack.push(r as u32);
                if let Some(order) = append.as_deref_mut() {
                    order.push(ToolIndex(r as u32));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    /// Plans a turn of the fixture and returns the visible tools' names, in order, with the counts.
    fn plan(
        c: &Catalog,
        profile: &str,
        toolsets: &[&str],
        discovered: &[&str],
        named: &[&str],
    ) -> (Vec<String>, PlanCounts) {
        let ids = |names: &[&str]| -> Vec<ToolIndex> {
            names
                .iter()
                .map(|n| c.tool(n).expect("fixture tool"))
                .collect()
        };
        let toolsets: Vec<ToolsetId> = toolsets
            .iter()
            .map(|s| c.toolset(s).expect("fixture toolset"))
            .collect();
        let (discovered, named) = (ids(discovered), ids(named));
        let mut planner = TurnPlanner::new(c);
        let input = TurnInput {
            profile: c.profile(profile).expect("fixture profile"),
            toolsets: &toolsets,
            discovered: &discovered,
            named: &named,
        };
        let p = planner.plan(c, &input);
        let names = p
            .tools()
            .iter()
            .map(|&t| c.exported_name(t).to_string())
            .collect();
        (names, p.counts())
    }

    #[test]
    fn inline_tools_of_profile_and_toolsets_in_catalog_order() {
        let c = fixture::catalog();
        let (tools, counts) = plan(&c, "reader", &["files"], &[], &[]);
        // old_grep is deprecated; search_text requires run_shell, which `reader` does not own.
        assert_eq!(tools, ["read_file", "list_dir", "search_text"]);
        assert_eq!(counts.visible, 3);
        assert_eq!(counts.inline, 3);
        assert_eq!(counts.discoverable_reachable, 0);
        assert!(!counts.discovery);
        assert_eq!(
            counts.profile, 7,
            "3 meta-tools, read_file, list_dir, old_grep, search_text"
        );
    }

    #[test]
    fn meta_tools_join_only_when_a_discoverable_tool_is_reachable() {
        let c = fixture::catalog();
        // `files` has the discoverable `delete_file` for `coder`, none for `reader`.
        let (tools, counts) = plan(&c, "coder", &["files"], &[], &[]);
        assert_eq!(
            tools,
            [
                "tool_search",
                "tool_describe",
                "tool_call",
                "read_file",
                "list_dir",
                "write_file",
                "search_text"
            ]
        );
        assert!(counts.discovery);
        assert_eq!(counts.discoverable_reachable, 1);
        assert_eq!(counts.deferred, 1);
        // `read_tool_result` is no discovery tool: it follows the usual rule (toolset `discovery`).
        let (tools, _) = plan(&c, "full", &["shell"], &[], &[]);
        assert_eq!(tools, ["tool_search", "tool_describe", "tool_call"]);
        let (tools, _) = plan(&c, "full", &["shell", "discovery"], &[], &[]);
        assert_eq!(
            tools,
            [
                "tool_search",
                "tool_describe",
                "tool_call",
                "read_tool_result"
            ]
        );
        // Nothing discoverable reachable: no meta-tools, even though the profile owns them.
        let (tools, _) = plan(&c, "reader", &["files", "git"], &[], &[]);
        assert!(tools.iter().all(|t| !t.starts_with("tool_")), "{tools:?}");
    }

    #[test]
    fn requires_closure_is_transitive_crosses_toolsets_and_stays_in_the_profile() {
        let c = fixture::catalog();
        // search_text requires run_shell (owned by `full` only, toolset `shell` inactive).
        let (tools, _) = plan(&c, "full", &["files"], &[], &[]);
        assert!(tools.contains(&"run_shell".to_string()), "{tools:?}");
        let (tools, _) = plan(&c, "coder", &["files"], &[], &[]);
        assert!(!tools.contains(&"run_shell".to_string()), "{tools:?}");
        // The pull request tool requires list_branches and git_status (toolset `git`, inactive).
        let (tools, counts) = plan(
            &c,
            "coder",
            &["github"],
            &["github__createPullRequest"],
            &[],
        );
        assert_eq!(
            tools,
            [
                "tool_search",
                "tool_describe",
                "tool_call",
                "github__createPullRequest",
                "github__list_branches",
                "git_status"
            ]
        );
        assert_eq!(counts.appended, 3);
    }

    #[test]
    fn discovered_tools_are_appended_in_discovery_order() {
        let c = fixture::catalog();
        let base = [
            "tool_search",
            "tool_describe",
            "tool_call",
            "read_file",
            "list_dir",
        ];
        let base = base
            .iter()
            .chain(&["write_file", "search_text", "git_status"]);
        let base: Vec<String> = base.map(|s| s.to_string()).collect();
        let (tools, counts) = plan(&c, "coder", &["core"], &["git_commit", "delete_file"], &[]);
        let mut expected = base.clone();
        // git_commit brings git_diff (git_status is already visible); delete_file needs list_dir.
        expected.extend(["git_commit", "git_diff", "delete_file"].map(String::from));
        assert_eq!(tools, expected);
        assert_eq!(counts.appended, 3);
        assert_eq!(counts.deferred, 0);
        // Discovering more later keeps the earlier order as a prefix (prompt-cache friendly).
        let (later, _) = plan(
            &c,
            "coder",
            &["core"],
            &["git_commit", "delete_file", "git_diff"],
            &[],
        );
        assert_eq!(later, expected, "git_diff was already visible");
        let (earlier, _) = plan(&c, "coder", &["core"], &["git_commit"], &[]);
        assert!(
            expected.starts_with(&earlier),
            "{earlier:?} is not a prefix"
        );
        // A discovered tool that is visible anyway stays at its catalog position.
        let (tools, counts) = plan(&c, "coder", &["core"], &["read_file"], &[]);
        assert_eq!(tools, base);
        assert_eq!(counts.appended, 0);
    }

    #[test]
    fn named_tools_join_in_catalog_order() {
        let c = fixture::catalog();
        let (tools, counts) = plan(&c, "coder", &["git"], &[], &["git_diff"]);
        assert_eq!(
            tools,
            [
                "tool_search",
                "tool_describe",
                "tool_call",
                "git_status",
                "git_diff"
            ]
        );
        assert_eq!(counts.appended, 0);
        assert_eq!(counts.deferred, 1, "git_commit stays deferred");
    }

    #[test]
    fn deprecated_and_unreachable_tools_never_show() {
        let c = fixture::catalog();
        let (tools, counts) = plan(
            &c,
            "coder",
            &["files"],
            &["old_grep", "git_commit", "run_shell"],
            &["old_grep"],
        );
        assert!(!tools.contains(&"old_grep".to_string()));
        // git_commit: toolset `git` inactive; run_shell: not owned by `coder`.
        assert!(!tools.contains(&"git_commit".to_string()));
        assert!(!tools.contains(&"run_shell".to_string()));
        assert_eq!(counts.ignored, 4);
        // In every profile and toolset combination, no deprecated tool and nothing outside the
        // profile is ever visible, and the bitset agrees with the list.
        let all: Vec<ToolIndex> = c.tools().collect();
        let sets: Vec<ToolsetId> = c.toolsets().collect();
        let mut planner = TurnPlanner::new(&c);
        for p in c.profiles() {
            let input = TurnInput {
                profile: p,
                toolsets: &sets,
                discovered: &all,
                named: &all,
            };
            let plan = planner.plan(&c, &input);
            let owned = c.profile_tools(p);
            for &t in plan.tools() {
                assert_ne!(c.status(t), Status::Deprecated, "{}", c.name(t));
                assert!(
                    bit(owned, t.index()),
                    "{} outside {}",
                    c.name(t),
                    c.profile_name(p)
                );
                assert!(plan.is_visible(t));
            }
            assert_eq!(ones(plan.visible()).count(), plan.tools().len());
            let mut unique = plan.tools().to_vec();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), plan.tools().len(), "a tool appears twice");
        }
    }

    #[test]
    fn deferred_lists_reachable_discoverable_tools_not_visible() {
        let c = fixture::catalog();
        let sets = [c.toolset("core").expect("known")];
        let discovered = [c.tool("git_commit").expect("known")];
        let mut planner = TurnPlanner::new(&c);
        let p = planner.plan(
            &c,
            &TurnInput {
                profile: c.profile("coder").expect("known"),
                toolsets: &sets,
                discovered: &discovered,
                named: &[],
            },
        );
        let deferred: Vec<&str> = p.deferred().map(|t| c.name(t)).collect();
        assert_eq!(deferred, ["delete_file"]);
        assert_eq!(p.counts().deferred, 1);
    }

    #[test]
    fn ids_of_another_catalog_are_ignored_not_panics() {
        let c = fixture::catalog();
        let mut planner = TurnPlanner::new(&c);
        let p = planner.plan(
            &c,
            &TurnInput {
                profile: ProfileId(99),
                toolsets: &[ToolsetId(99)],
                discovered: &[ToolIndex(999)],
                named: &[],
            },
        );
        assert!(p.tools().is_empty());
        let p = planner.plan(
            &c,
            &TurnInput {
                profile: c.full_profile(),
                toolsets: &[ToolsetId(99)],
                discovered: &[ToolIndex(999)],
                named: &[ToolIndex(1000)],
            },
        );
        assert!(p.tools().is_empty());
        assert_eq!(p.counts().ignored, 3);
    }
}
