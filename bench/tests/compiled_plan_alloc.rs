//! Planning a turn performs no heap allocation once the planner exists: a counting global
//! allocator (`allocation-counter`, per thread) watches this thread while turns are planned, for the compiled 1,000-tool catalog
//! and for the reference catalog (`tools.toml` at the workspace root, loaded from the file).

use toolcat::{Catalog, TurnInput, TurnPlanner};
use toolcat_bench::c1000::toolcat_generated;

/// Plans, three times over, every profile with all toolsets and with the first one, each with
/// nothing / every tool / every tool reversed (and every tool named) / a few tools discovered and
/// named, after `extra`'s own plans. Every input is prepared before counting starts. Returns the
/// allocations during the sweep and the number of tools seen in the plans.
fn sweep(
    catalog: &Catalog,
    planner: &mut TurnPlanner,
    extra: &mut dyn FnMut(&mut TurnPlanner) -> usize,
) -> (u64, usize) {
    let everything: Vec<_> = catalog.tools().collect();
    let reversed: Vec<_> = everything.iter().rev().copied().collect();
    let toolsets: Vec<_> = catalog.toolsets().collect();
    let profiles: Vec<_> = catalog.profiles().collect();
    let few = 5.min(everything.len());
    let fewer = 3.min(reversed.len());

    let mut seen = 0usize;
    let sweep = allocation_counter::measure(|| {
        for _ in 0..3 {
            seen += extra(planner);
            for &profile in &profiles {
                for (discovered, named) in [
                    (&[][..], &[][..]),
                    (&everything[..], &[][..]),
                    (&reversed[..], &everything[..]),
                    (&everything[..few], &reversed[..fewer]),
                ] {
                    for active in [&toolsets[..], &toolsets[..1.min(toolsets.len())]] {
                        let plan = planner.plan(
                            catalog,
                            &TurnInput {
                                profile,
                                toolsets: active,
                                discovered,
                                named,
                            },
                        );
                        seen +=
                            plan.tools().len() + plan.deferred().count() + plan.counts().visible;
                    }
                }
            }
        }
    });
    // The counter itself works: one boxed value is one allocation.
    let probe = allocation_counter::measure(|| {
        std::hint::black_box(Box::new(seen));
    });
    assert_eq!(
        probe.count_total, 1,
        "the counting allocator does not count"
    );
    assert!(
        seen > 0,
        "the plans were empty; the test would prove nothing"
    );
    (sweep.count_total, seen)
}

#[test]
fn planning_the_compiled_1000_tool_catalog_allocates_nothing() {
    let catalog = toolcat_generated::catalog();
    assert_eq!(catalog.len(), 1_000, "the compiled catalog has 1,000 tools");
    assert_eq!(
        toolcat_generated::HANDLERS.len(),
        1_000,
        "the catalog is the one the build script compiled"
    );
    // The benchmark scenarios too, prepared before counting.
    let scenarios = toolcat_bench::turn::turns(catalog).unwrap_or_else(|e| panic!("{e}"));
    let mut planner = TurnPlanner::new(catalog);
    let mut appended = 0usize;
    let (allocated, _) = sweep(catalog, &mut planner, &mut |planner| {
        let mut seen = 0;
        for turn in &scenarios {
            let plan = planner.plan(catalog, &turn.input());
            seen += plan.tools().len();
            appended += plan.counts().appended;
        }
        seen
    });
    assert!(
        appended > 0,
        "no scenario appended discovered tools; the test would not cover discovery"
    );
    assert_eq!(allocated, 0, "planning allocated {allocated} times");
}

#[test]
fn planning_the_reference_catalog_allocates_nothing() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools.toml");
    let catalog = Catalog::load(path).unwrap_or_else(|e| panic!("{e}"));
    let mut planner = TurnPlanner::new(&catalog);
    let (allocated, _) = sweep(&catalog, &mut planner, &mut |_| 0);
    assert_eq!(allocated, 0, "planning allocated {allocated} times");
}
