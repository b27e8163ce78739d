//! The latency of embedding one search query, the in-house encoder on one and two threads beside
//! the numpy peer (`bench/peer_dense.py --time-query`), in one run: rounds of [toolcat 1 thread,
//! toolcat 2 threads, numpy peer], each side `--runs` encodings timed alone after a warm-up; the
//! median over the rounds of each side's p50 and p99 is printed in microseconds.
//!
//! ```text
//! cargo run --release -p toolcat-semantic --example query_latency -- \
//!     --model target/models/all-MiniLM-L6-v2 [--python target/peer-venv/bin/python] \
//!     [--runs 200] [--rounds 3] [QUERY]
//! ```
//! Without `--python` (or when it fails) only toolcat's side is measured, and the line says so.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use toolcat_semantic::Encoder;

const DEFAULT_QUERY: &str = "find the weather forecast for Paris this weekend";

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// p50 and p99 of `runs` encodings of `query`, in microseconds.
fn time_encoder(enc: &Encoder, query: &str, runs: usize) -> (f64, f64) {
    enc.encode_query(query).expect("the query embeds");
    let mut us: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(enc.encode_query(query).expect("the query embeds"));
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    us.sort_by(f64::total_cmp);
    (percentile(&us, 50.0), percentile(&us, 99.0))
}

/// p50 and p99 of the numpy peer, in microseconds, or why it did not run.
fn time_peer(
    python: &PathBuf,
    model: &PathBuf,
    query: &str,
    runs: usize,
) -> Result<(f64, f64), String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/peer_dense.py");
    let out = Command::new(python)
        .arg(script)
        .args([
            "--time-query",
            query,
            "--runs",
            &runs.to_string(),
            "--model",
        ])
        .arg(model)
        .output()
        .map_err(|e| format!("`{}` does not run: {e}", python.display()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("not JSON: {e}"))?;
    Ok((
        v["p50_us"].as_f64().unwrap_or(f64::NAN),
        v["p99_us"].as_f64().unwrap_or(f64::NAN),
    ))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut model, mut python, mut runs, mut rounds, mut query) =
        (None, None, 200usize, 3usize, DEFAULT_QUERY.to_string());
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--model" => model = Some(PathBuf::from(value())),
            "--python" => python = Some(PathBuf::from(value())),
            "--runs" => runs = value().parse().expect("--runs takes a number"),
            "--rounds" => rounds = value().parse().expect("--rounds takes a number"),
            _ => query = a,
        }
    }
    let Some(model) = model else {
        eprintln!("usage: query_latency --model DIR [--python PY] [--runs N] [--rounds R] [QUERY]");
        std::process::exit(2);
    };
    let one = Encoder::load(&model)
        .unwrap_or_else(|e| panic!("{e}"))
        .with_threads(1);
    let two = Encoder::load(&model)
        .unwrap_or_else(|e| panic!("{e}"))
        .with_threads(2);
    let tokens = one.token_ids(&query).expect("the query tokenizes").len();
    println!("query `{query}`: {tokens} tokens; {rounds} rounds of {runs} encodings per side");
    println!("encoder: {two:?}");
    let (mut t1, mut t2, mut peer) = (vec![], vec![], vec![]);
    let mut peer_error = None;
    for _ in 0..rounds {
        t1.push(time_encoder(&one, &query, runs));
        t2.push(time_encoder(&two, &query, runs));
        if let Some(py) = &python {
            match time_peer(py, &model, &query, runs) {
                Ok(p) => peer.push(p),
                Err(e) => peer_error = Some(e),
            }
        }
    }
    let row = |name: &str, v: &[(f64, f64)]| {
        let p50 = median(v.iter().map(|p| p.0).collect());
        let p99 = median(v.iter().map(|p| p.1).collect());
        println!("{name:<28} p50 {:>8.1} us   p99 {:>8.1} us", p50, p99);
        p50
    };
    let a = row("toolcat, 1 thread", &t1);
    let b = row("toolcat, 2 threads", &t2);
    if peer.is_empty() {
        println!(
            "numpy peer: NOT RUN ({})",
            peer_error.unwrap_or_else(|| "no --python given".to_string())
        );
    } else {
        let p = row("numpy peer (1 BLAS thread)", &peer);
        println!(
            "peer p50 / toolcat p50: {:.1}x (1 thread), {:.1}x (2 threads)",
            p / a,
            p / b
        );
    }
}
