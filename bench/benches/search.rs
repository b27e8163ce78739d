//! Mean search time at 100, 1,000 and 10,000 tools: `Catalog::search` in the profile `full`,
//! top 10, over the real queries of `toolcat_bench::queries`, one query per iteration, in turn.
//! (Per-query p50/p99 come from `toolcat-bench latency`.)

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use toolcat::Catalog;
use toolcat_bench::scale;

fn search(c: &mut Criterion) {
    let data = toolcat_bench::data_dir();
    let queries: Vec<String> = toolcat_bench::queries::all(&data)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|(_, q)| q)
        .collect();
    let texts = scale::scaled_texts(&data, &scale::SIZES).unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group("search");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for (n, text) in texts {
        let catalog = Catalog::from_source(&format!("scaled-{n}.toml"), &text)
            .unwrap_or_else(|e| panic!("{e}"));
        let full = catalog.full_profile();
        let mut next = 0usize;
        group.bench_function(BenchmarkId::new("top10", n), |b| {
            b.iter(|| {
                let q = &queries[next % queries.len()];
                next += 1;
                black_box(catalog.search(black_box(q), full, 10).map(|h| h.len()))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
