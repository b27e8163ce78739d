//! Planning a turn of the compiled 1,000-tool catalog performs no heap allocation once the
//! planner exists: a counting global allocator watches this thread while turns are planned.

use toolcat::TurnPlanner;
use toolcat_bench::alloc::{allocations, CountingAllocator};
use toolcat_bench::c1000::toolcat_catalog;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

#[test]
fn planning_the_compiled_1000_tool_catalog_allocates_nothing() {
    let catalog = toolcat_catalog::catalog();
    assert_eq!(catalog.len(), 1_000, "the compiled catalog has 1,000 tools");
    assert_eq!(
        toolcat_catalog::HANDLERS.len(),
        1_000,
        "the catalog is the one the build script compiled"
    );
    // Every input is prepared before counting: the benchmark scenarios, and every profile with
    // all toolsets, every tool discovered and named.
    let scenarios = toolcat_bench::turn::turns(catalog).unwrap_or_else(|e| panic!("{e}"));
    let everything: Vec<_> = catalog.tools().collect();
    let reversed: Vec<_> = everything.iter().rev().copied().collect();
    let toolsets: Vec<_> = catalog.toolsets().collect();
    let profiles: Vec<_> = catalog.profiles().collect();
    let mut planner = TurnPlanner::new(catalog);

    let before = allocations();
    let mut seen = 0usize;
    let mut appended = 0usize;
    for _ in 0..3 {
        for turn in &scenarios {
            let plan = planner.plan(catalog, &turn.input());
            seen += plan.tools().len();
            appended += plan.counts().appended;
        }
        for &profile in &profiles {
            for (discovered, named) in [
                (&[][..], &[][..]),
                (&everything[..], &[][..]),
                (&reversed[..], &everything[..]),
            ] {
                for active in [&toolsets[..], &toolsets[..1]] {
                    let plan = planner.plan(
                        catalog,
                        &toolcat::TurnInput {
                            profile,
                            toolsets: active,
                            discovered,
                            named,
                        },
                    );
                    seen += plan.tools().len() + plan.deferred().count() + plan.counts().visible;
                }
            }
        }
    }
    let after = allocations();
    // The counter itself works: one boxed value is one allocation.
    let probe = allocations();
    std::hint::black_box(Box::new(seen));
    assert_eq!(
        allocations() - probe,
        1,
        "the counting allocator does not count"
    );
    assert!(
        seen > 0,
        "the plans were empty; the test would prove nothing"
    );
    assert!(
        appended > 0,
        "no scenario appended discovered tools; the test would not cover discovery"
    );
    assert_eq!(
        after - before,
        0,
        "planning allocated {} times",
        after - before
    );
}
