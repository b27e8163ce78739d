//! Start-up costs at 100, 1,000 and 10,000 tools:
//! - `load`: `Catalog::load` of a scaled `tools.toml` (read, validate, derive, build the index);
//! - `index_open`: `toolcat_catalog::index::open_index` of the serialized index bytes (what a
//!   compiled catalog does with its embedded index);
//! - `compiled_open`: `Catalog::compiled` over the compiled tables and embedded index of this
//!   build (1,000; 10,000 with the feature `compiled-10k`).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use toolcat::Catalog;
use toolcat_bench::scale;
use toolcat_catalog::index::{build_index_bytes, open_index};

fn load(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("toolcat-bench-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let texts = scale::scaled_texts(&toolcat_bench::data_dir(), &scale::SIZES)
        .unwrap_or_else(|e| panic!("{e}"));

    let mut group = c.benchmark_group("load");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let mut indexes = Vec::new();
    for (n, text) in &texts {
        let path = dir.join(format!("tools-{n}.toml"));
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        group.bench_with_input(BenchmarkId::new("catalog_load", n), &path, |b, path| {
            b.iter(|| black_box(Catalog::load(path).map(|c| c.len())))
        });
        let catalog = Catalog::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let bytes = build_index_bytes(catalog.tables(), &[]).unwrap_or_else(|e| panic!("{e}"));
        println!("load/{n}: index bytes: {}", bytes.len());
        indexes.push((*n, bytes));
    }
    for (n, bytes) in &indexes {
        group.bench_with_input(BenchmarkId::new("index_open", n), bytes, |b, bytes| {
            b.iter(|| black_box(open_index(bytes).map(|i| i.len())))
        });
    }
    for (n, tables, index) in toolcat_bench::compiled_parts() {
        group.bench_function(BenchmarkId::new("compiled_open", n), |b| {
            b.iter(|| black_box(Catalog::compiled(tables.clone(), index, &[]).map(|c| c.len())))
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, load);
criterion_main!(benches);
