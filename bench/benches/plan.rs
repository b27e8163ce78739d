//! Per-turn plan time at 100, 1,000 and 10,000 tools, compiled in (1,000; 10,000 with the
//! feature `compiled-10k`) and loaded from a scaled `tools.toml` (all three sizes), for the
//! scenarios of `toolcat_bench::turn`. Before timing, each case counts the heap allocations of
//! 100 plans with a counting allocator (`allocation-counter`) and prints them (`allocations per plan: N`).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use toolcat::{Catalog, TurnPlanner};
use toolcat_bench::scale;

fn plan_case(c: &mut Criterion, kind: &str, n: usize, catalog: &Catalog) {
    let turns = toolcat_bench::turn::turns(catalog).unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group(format!("plan/{kind}"));
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for turn in &turns {
        let mut planner = TurnPlanner::new(catalog);
        let input = turn.input();
        let mut visible = 0;
        let counted = allocation_counter::measure(|| {
            for _ in 0..100 {
                visible = planner.plan(catalog, &input).tools().len();
            }
        });
        let per_plan = counted.count_total as f64 / 100.0;
        println!(
            "plan/{kind}/{}/{n}: allocations per plan: {per_plan}, visible tools: {visible}",
            turn.scenario
        );
        group.bench_with_input(BenchmarkId::new(turn.scenario, n), &input, |b, input| {
            b.iter(|| black_box(planner.plan(catalog, black_box(input)).tools().len()))
        });
    }
    group.finish();
}

fn plans(c: &mut Criterion) {
    for (n, catalog) in toolcat_bench::compiled_catalogs() {
        plan_case(c, "compiled", n, catalog);
    }
    let texts = scale::scaled_texts(&toolcat_bench::data_dir(), &scale::SIZES)
        .unwrap_or_else(|e| panic!("{e}"));
    for (n, text) in texts {
        let catalog = Catalog::from_source(&format!("scaled-{n}.toml"), &text)
            .unwrap_or_else(|e| panic!("{e}"));
        plan_case(c, "loaded", n, &catalog);
    }
}

criterion_group!(benches, plans);
criterion_main!(benches);
