//! `toolcat-bench`: makes scaled catalogs, measures per-query search latency, gathers the
//! criterion results and draws the plot. `bench/run` calls each step.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, Context as _, Result};
use clap::{Parser, Subcommand};
use serde_json::{json, Value};
use toolcat::Catalog;
use toolcat_bench::{plot, queries, scale, stats};
use toolcat_catalog::index::split_name;

#[derive(Parser)]
#[command(about = "Benchmarks of toolcat at 100, 1,000 and 10,000 tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Writes the scaled catalog of N tools (see bench/src/scale.rs) as tools.toml text.
    Scale {
        /// Number of tools, meta-tools included (at least 4).
        #[arg(long)]
        tools: usize,
        /// Output file (default: stdout).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Per-query search latency (p50, p99, mean) on each scaled catalog, plus the corpus and
    /// queries the peer script reads; writes DIR/latency.json, DIR/corpus-N.jsonl,
    /// DIR/queries.json and DIR/tools-N.toml.
    Latency {
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Hits per query.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Timed passes over the queries (after one untimed warm-up pass).
        #[arg(long, default_value_t = 3)]
        passes: usize,
    },
    /// Collects the criterion means (`target/criterion/**/new/estimates.json`) into one JSON file.
    Collect {
        /// The criterion directory.
        #[arg(long)]
        criterion: PathBuf,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Draws search latency and plan time against catalog size as SVG.
    Plot {
        /// The results directory (latency.json, peer_latency.json, criterion.json).
        #[arg(long)]
        results: PathBuf,
        /// Output SVG file.
        #[arg(long)]
        out: PathBuf,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Scale { tools, out } => {
            let texts = scale::scaled_texts(&toolcat_bench::data_dir(), &[tools])
                .map_err(|e| anyhow!(e))?;
            let text = texts.values().next().context("no catalog was made")?;
            match out {
                Some(path) => std::fs::write(&path, text)
                    .with_context(|| format!("cannot write `{}`", path.display()))?,
                None => print!("{text}"),
            }
        }
        Command::Latency { out, limit, passes } => latency(&out, limit, passes)?,
        Command::Collect { criterion, out } => {
            let means = collect(&criterion)?;
            write_json(&out, &json!(means))?;
        }
        Command::Plot { results, out } => plot::draw(&results, &out)?,
    }
    Ok(())
}

fn write_json(path: &Path, value: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value)? + "\n";
    std::fs::write(path, text).with_context(|| format!("cannot write `{}`", path.display()))
}

fn latency(out: &Path, limit: usize, passes: usize) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create `{}`", out.display()))?;
    let data = toolcat_bench::data_dir();
    let queries = queries::all(&data).map_err(|e| anyhow!(e))?;
    let texts: Vec<&str> = queries.iter().map(|(_, q)| q.as_str()).collect();
    write_json(&out.join("queries.json"), &json!(texts))?;
    let catalogs = scale::scaled_texts(&data, &scale::SIZES).map_err(|e| anyhow!(e))?;

    let mut sizes = Vec::new();
    for (n, text) in catalogs {
        let path = out.join(format!("tools-{n}.toml"));
        std::fs::write(&path, &text)
            .with_context(|| format!("cannot write `{}`", path.display()))?;
        let started = Instant::now();
        let catalog = Catalog::load(&path).map_err(|e| anyhow!("{e}"))?;
        let load_ms = started.elapsed().as_secs_f64() * 1e3;

        // The peer indexes the same text per tool: the exported name split into words, then
        // the description.
        let mut corpus = String::new();
        for t in catalog.tools() {
            let name = catalog.exported_name(t);
            let line = json!({
                "name": name,
                "text": format!("{} {}", split_name(name).join(" "), catalog.description(t)),
            });
            corpus.push_str(&line.to_string());
            corpus.push('\n');
        }
        std::fs::write(out.join(format!("corpus-{n}.jsonl")), corpus)?;

        let full = catalog.full_profile();
        for q in &texts {
            catalog.search(q, full, limit).map_err(|e| anyhow!("{e}"))?;
        }
        let mut per_query: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        let mut all = Vec::new();
        for _ in 0..passes {
            for (set, q) in &queries {
                let started = Instant::now();
                let hits = catalog.search(q, full, limit).map_err(|e| anyhow!("{e}"))?;
                let us = started.elapsed().as_secs_f64() * 1e6;
                std::hint::black_box(hits);
                per_query.entry(set).or_default().push(us);
                all.push(us);
            }
        }
        let row = |values: &[f64]| -> Value {
            let (p50, p99, mean) = stats::summary(values).unwrap_or((0.0, 0.0, 0.0));
            json!({"p50_us": p50, "p99_us": p99, "mean_us": mean, "samples": values.len()})
        };
        let sets: BTreeMap<&str, Value> = per_query.iter().map(|(k, v)| (*k, row(v))).collect();
        println!("search {n} tools: {}", row(&all));
        sizes.push(json!({
            "tools": n,
            "load_ms": load_ms,
            "all": row(&all),
            "sets": sets,
        }));
    }
    write_json(
        &out.join("latency.json"),
        &json!({
            "system": "toolcat",
            "limit": limit,
            "passes": passes,
            "queries": texts.len(),
            "profile": "full",
            "sizes": sizes,
        }),
    )
}

/// Every `estimates.json` under `<criterion>/**/new/`, by benchmark id (its directory path
/// relative to `criterion`): mean and median in nanoseconds.
fn collect(criterion: &Path) -> Result<BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![criterion.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.file_name().is_some_and(|n| n == "estimates.json")
                && path
                    .parent()
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == "new")
            {
                let text = std::fs::read_to_string(&path)?;
                let v: Value = serde_json::from_str(&text)?;
                let id = path
                    .parent()
                    .and_then(Path::parent)
                    .and_then(|p| p.strip_prefix(criterion).ok())
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                out.insert(
                    id,
                    json!({
                        "mean_ns": v["mean"]["point_estimate"],
                        "median_ns": v["median"]["point_estimate"],
                    }),
                );
            }
        }
    }
    Ok(out)
}
