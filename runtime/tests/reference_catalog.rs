//! The reference `tools.toml` loaded at run time: lookups, plans, search and exports end to end.

use toolcat::export::{export_plan, ExportFormat};
use toolcat::tokens::plan_stats;
use toolcat::{Catalog, HitKind, TurnInput, TurnPlanner};
use toolcat_catalog::model::{Status, Tier, Visibility};
use toolcat_catalog::tables::bit;

fn reference() -> Catalog {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools.toml");
    Catalog::load(path).unwrap_or_else(|e| panic!("{e}"))
}

const QUERIES: &[&str] = &[
    "open a pull request",
    "send a message to a channel",
    "what time is it in tokyo",
    "delete a branch",
    "fetch a web page",
    "run the tests",
    "list files in a folder",
    "read_file",
    "github__create_pull_request",
    "create_pull_request",
    "tool_search",
    "",
    "AND OR NOT ( \" *",
];

#[test]
fn search_stays_inside_every_profile() {
    let c = reference();
    for p in c.profiles() {
        let owned = c.profile_tools(p);
        for q in QUERIES {
            for h in c.search(q, p, 10).expect("search runs") {
                assert!(
                    bit(owned, h.tool.index()),
                    "`{q}` in profile `{}` found `{}`, which it does not own",
                    c.profile_name(p),
                    c.exported_name(h.tool)
                );
                assert_ne!(c.status(h.tool), Status::Deprecated);
            }
        }
    }
}

#[test]
fn every_tool_is_found_by_its_names() {
    let c = reference();
    let full = c.full_profile();
    for t in c.tools().filter(|&t| c.status(t) != Status::Deprecated) {
        for name in [c.exported_name(t), c.name(t)] {
            let hits = c.search(name, full, 3).expect("search runs");
            assert!(
                hits.iter().any(|h| h.tool == t && h.kind == HitKind::Name),
                "`{name}` does not find itself by name"
            );
            assert_eq!(hits[0].kind, HitKind::Name);
        }
    }
}

#[test]
fn most_tools_are_found_by_their_own_description() {
    // A regression guard on the index and its boosts, not a benchmark: a tool's own description
    // should put it in the top 5. Meta-tools are left out of BM25 by design.
    let c = reference();
    let full = c.full_profile();
    let eligible: Vec<_> = c
        .tools()
        .filter(|&t| c.status(t) != Status::Deprecated && c.tier(t) != Tier::Loop)
        .collect();
    let mut missed = Vec::new();
    for &t in &eligible {
        let hits = c.search(c.description(t), full, 5).expect("search runs");
        if !hits.iter().any(|h| h.tool == t) {
            missed.push(c.exported_name(t));
        }
    }
    assert!(
        missed.len() * 20 <= eligible.len(),
        "{} of {} tools not in the top 5 for their own description: {missed:?}",
        missed.len(),
        eligible.len()
    );
}

#[test]
fn every_preset_plans_inside_its_profile_and_costs_less_than_it() {
    let c = reference();
    let mut planner = TurnPlanner::new(&c);
    for preset in c.presets() {
        let profile = c.preset_profile(preset);
        let toolsets: Vec<_> = c.preset_toolsets(preset).collect();
        let plan = planner.plan(
            &c,
            &TurnInput {
                profile,
                toolsets: &toolsets,
                discovered: &[],
                named: &[],
            },
        );
        let owned = c.profile_tools(profile);
        for &t in plan.tools() {
            assert!(bit(owned, t.index()), "{} outside its profile", c.name(t));
            assert_ne!(c.status(t), Status::Deprecated);
        }
        let counts = plan.counts();
        assert_eq!(counts.visible, plan.tools().len());
        if counts.discoverable_reachable > 0 {
            let discovery = c.discovery_tools();
            for t in c.tools_in(discovery).filter(|t| bit(owned, t.index())) {
                assert!(
                    plan.is_visible(t),
                    "{} missing from a discovery turn",
                    c.name(t)
                );
            }
        }
        for &format in ExportFormat::ALL {
            let v = export_plan(&plan, format).to_json();
            let text = v.to_string();
            for &t in plan.tools() {
                assert!(text.contains(c.exported_name(t)));
            }
            let stats = plan_stats(&plan, format);
            assert!(stats.tokens <= stats.profile_tokens, "{stats:?}");
            if plan.deferred().next().is_some() {
                assert!(stats.tokens < stats.profile_tokens, "{stats:?}");
            }
        }
        let anthropic = export_plan(&plan, ExportFormat::Anthropic).to_json();
        let deferred = anthropic
            .as_array()
            .expect("array")
            .iter()
            .filter(|t| t.get("defer_loading").is_some())
            .count();
        assert_eq!(deferred, counts.deferred);
        for t in plan.deferred() {
            assert_eq!(c.visibility(t), Visibility::Discoverable);
        }
    }
}

/// The names of a Responses or Anthropic `tools` array at the top level and inside namespaces,
/// with whether each is deferred; and the hosted search tools.
fn entries(tools: &serde_json::Value) -> (Vec<(String, bool)>, usize) {
    let mut names = Vec::new();
    let mut searches = 0;
    for t in tools.as_array().expect("tools array") {
        let kind = t["type"].as_str().unwrap_or_default();
        if kind == "tool_search" || kind.starts_with("tool_search_tool_") {
            searches += 1;
            if let Some(name) = t["name"].as_str() {
                names.push((name.to_string(), false));
            }
            continue;
        }
        if kind == "namespace" {
            names.push((t["name"].as_str().expect("name").to_string(), false));
            let members = t["tools"].as_array().expect("members");
            assert!(!members.is_empty(), "empty namespace {t}");
            assert!(
                members.iter().all(|m| m["defer_loading"] == true),
                "a namespace mixes loaded and deferred functions: {t}"
            );
            for m in members {
                names.push((m["name"].as_str().expect("name").to_string(), true));
            }
            continue;
        }
        names.push((
            t["name"].as_str().expect("name").to_string(),
            t["defer_loading"] == true,
        ));
    }
    (names, searches)
}

#[test]
fn every_preset_exports_a_request_tool_search_takes_for_both_providers_and_both_searches() {
    use toolcat::export::{catalog_requests, export_plan_with, ExportOptions, SearchMode};
    let c = reference();
    let own_search = c.exported_name(c.tool("tool_search").expect("the reference has one"));
    let mut planner = TurnPlanner::new(&c);
    let mut hosted_with_deferred = 0;
    for (what, profile, toolsets) in catalog_requests(&c) {
        let plan = planner.plan(
            &c,
            &TurnInput {
                profile,
                toolsets: &toolsets,
                discovered: &[],
                named: &[],
            },
        );
        let deferred_in_plan = plan.deferred().count();
        for format in [ExportFormat::Anthropic, ExportFormat::OpenAiResponses] {
            for search in [SearchMode::Own, SearchMode::Hosted] {
                let export = export_plan_with(&plan, format, &ExportOptions { search })
                    .unwrap_or_else(|e| panic!("{what}, {format}, {search:?}: {e}"));
                let v = export.to_json();
                let (names, hosted) = entries(&v);
                let deferred = names.iter().filter(|(_, d)| *d).count();
                let own = names.iter().any(|(n, d)| n == own_search && !d);
                let ctx = format!("{what}, {format}, {search:?}: {v}");
                // Names are unique.
                let mut sorted: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
                sorted.sort_unstable();
                let before = sorted.len();
                sorted.dedup();
                assert_eq!(sorted.len(), before, "duplicate names in {ctx}");
                // At least one tool is loaded.
                assert!(names.iter().any(|(_, d)| !d), "nothing loaded in {ctx}");
                match search {
                    SearchMode::Own => {
                        assert_eq!(hosted, 0, "{ctx}");
                        // Deferred tools ⇒ toolcat's search is loaded.
                        assert!(deferred == 0 || own, "{ctx}");
                        if format == ExportFormat::OpenAiResponses {
                            assert_eq!(deferred, 0, "Responses defers nothing by itself: {ctx}");
                        } else {
                            assert_eq!(deferred, deferred_in_plan, "{ctx}");
                        }
                    }
                    SearchMode::Hosted => {
                        assert!(!own, "toolcat's `tool_search` left out: {ctx}");
                        assert_eq!(deferred, deferred_in_plan, "{ctx}");
                        // Deferred tools ⇔ a hosted search tool.
                        assert_eq!(hosted, usize::from(deferred > 0), "{ctx}");
                        hosted_with_deferred += usize::from(deferred > 0);
                    }
                }
            }
        }
    }
    assert!(
        hosted_with_deferred > 0,
        "no preset defers anything: the hosted variants went untested"
    );
}
