//! Planning a turn performs no heap allocation once the planner exists: a counting global
//! allocator watches this thread while turns of the reference catalog are planned.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use toolcat::{Catalog, TurnInput, TurnPlanner};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: the slot may be gone while the thread shuts down.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every call is forwarded to `System` unchanged; counting touches a const-initialized
// thread-local that never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn planning_allocates_nothing_after_the_planner_exists() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools.toml");
    let catalog = Catalog::load(path).unwrap_or_else(|e| panic!("{e}"));
    // Every input is prepared before counting: all toolsets, every tool discovered and named.
    let everything: Vec<_> = catalog.tools().collect();
    let reversed: Vec<_> = everything.iter().rev().copied().collect();
    let toolsets: Vec<_> = catalog.toolsets().collect();
    let profiles: Vec<_> = catalog.profiles().collect();
    let mut planner = TurnPlanner::new(&catalog);

    let before = allocations();
    let mut seen = 0usize;
    for _ in 0..3 {
        for &profile in &profiles {
            for (discovered, named) in [
                (&[][..], &[][..]),
                (&everything[..], &[][..]),
                (&reversed[..], &everything[..]),
                (
                    &everything[..5.min(everything.len())],
                    &reversed[..3.min(reversed.len())],
                ),
            ] {
                for active in [&toolsets[..], &toolsets[..1.min(toolsets.len())]] {
                    let plan = planner.plan(
                        &catalog,
                        &TurnInput {
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
    assert_eq!(
        after - before,
        0,
        "planning allocated {} times",
        after - before
    );
}
