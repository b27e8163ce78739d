//! Tool search quality on real catalogs (read from `../shared/data` beside the workspace).
//!
//! - `github_pull_request_paraphrases_find_create_pull_request`: a regression test on the GitHub
//!   MCP server's snapshots: ways of asking to open a pull request find `create_pull_request`
//!   near the top.
//! - `search_quality_report` (`#[ignore]`): the measurement harness behind the ranking choices of
//!   `toolcat_codegen::index`. It prints recall@1/@5/@10 and nDCG@5 on the MetaTool dev queries
//!   (single-tool and two-tool, over its 199-tool corpus) and the LiveMCPBench dev tasks (over its
//!   527-tool catalog), plus the rank of `create_pull_request` for the GitHub paraphrases. Run with
//!
//!   ```text
//!   cargo test -p toolcat --release --test search_quality -- --ignored --nocapture
//!   ```
//!
//!   `TOOLCAT_EVAL_SAMPLE=N` evaluates every k-th MetaTool single-tool query so that about `N` are
//!   used (the full 14,419 by default).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use toolcat::codegen::import::{import, import_mcp_tools_json_str, ImportKind, ImportOutput};
use toolcat::Catalog;

fn data(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data")).join(rel)
}

fn catalog_of(out: &ImportOutput, path: &str) -> Catalog {
    Catalog::from_source(path, &out.text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn github() -> Catalog {
    let out = import(
        ImportKind::GithubToolsnaps,
        &data("github-mcp-server/toolsnaps"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    catalog_of(&out, "github.toml")
}

/// Declared names of the best `limit` hits for `query` in the full profile, a name kept only at
/// its first (best) place: tools that share a name across servers count once.
fn ranked(c: &Catalog, query: &str, limit: usize) -> Vec<String> {
    let mut seen = BTreeSet::new();
    c.search(query, c.full_profile(), limit)
        .unwrap_or_else(|e| panic!("`{query}`: {e}"))
        .iter()
        .map(|h| c.name(h.tool).to_string())
        .filter(|n| seen.insert(n.clone()))
        .collect()
}

/// Ways of asking to open a pull request on the GitHub MCP server, each with the worst rank
/// `create_pull_request` may take. The first is the CLI acceptance query. The last two share no
/// word with the tool's name, title or description ("propose merging" is what a pull request
/// is, "submit ... for review" is also the name of `submit_pending_pull_request_review`): BM25
/// finds them only through parameter descriptions ("Branch to merge into"), so they are held to
/// the first page, not the top 3.
const PULL_REQUEST_QUERIES: &[(&str, usize)] = &[
    ("open a pull request from my feature branch", 2),
    ("make a PR for my branch", 3),
    ("new PR from the fix-login branch to main", 3),
    ("I'd like to open a PR to merge feature-x into main", 3),
    ("create pull request from branch dev", 3),
    ("propose merging my branch into main", 10),
    ("submit my changes for review as a pull request", 10),
];

#[test]
fn github_pull_request_paraphrases_find_create_pull_request() {
    let c = github();
    for &(q, worst) in PULL_REQUEST_QUERIES {
        let top = ranked(&c, q, worst);
        assert!(
            top.iter().any(|n| n == "create_pull_request"),
            "`{q}`: `create_pull_request` is not in the top {worst}: {top:?}"
        );
    }
}

/// Sums of per-query recall@1/@5/@10 and nDCG@5 (binary relevance).
#[derive(Default)]
struct Scores {
    n: usize,
    r1: f64,
    r5: f64,
    r10: f64,
    ndcg5: f64,
}

impl Scores {
    fn add(&mut self, ranking: &[String], gold: &BTreeSet<String>) {
        if gold.is_empty() {
            return;
        }
        let recall = |k: usize| {
            ranking.iter().take(k).filter(|n| gold.contains(*n)).count() as f64 / gold.len() as f64
        };
        let dcg: f64 = ranking
            .iter()
            .take(5)
            .enumerate()
            .filter(|(_, n)| gold.contains(*n))
            .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
            .sum();
        let ideal: f64 = (0..gold.len().min(5))
            .map(|i| 1.0 / (i as f64 + 2.0).log2())
            .sum();
        self.n += 1;
        self.r1 += recall(1);
        self.r5 += recall(5);
        self.r10 += recall(10);
        self.ndcg5 += dcg / ideal;
    }

    fn line(&self, set: &str) -> String {
        let n = self.n.max(1) as f64;
        format!(
            "| {set:<22} | {:>6} | {:.3} | {:.3} | {:.3} | {:.3} |",
            self.n,
            self.r1 / n,
            self.r5 / n,
            self.r10 / n,
            self.ndcg5 / n
        )
    }
}

/// Row names of each name a source gives its tools: itself, or what the importer renamed it to.
type RowNames = BTreeMap<String, BTreeSet<String>>;

fn row_names(c: &Catalog, out: &ImportOutput) -> RowNames {
    let mut names = RowNames::new();
    for t in c.tools() {
        names
            .entry(c.name(t).to_string())
            .or_default()
            .insert(c.name(t).to_string());
    }
    for r in &out.report.renamed {
        names
            .entry(r.original.clone())
            .or_default()
            .insert(r.name.clone());
    }
    names
}

fn gold<'a>(names: &RowNames, source: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    source
        .into_iter()
        .filter_map(|name| names.get(name))
        .flatten()
        .cloned()
        .collect()
}

/// The MetaTool corpus as one MCP server's `tools/list`, imported like any other server.
fn metatool() -> (Catalog, RowNames) {
    let text = std::fs::read_to_string(data("metatool/plugin_des.json")).expect("corpus reads");
    let corpus: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&text).expect("corpus is a JSON object");
    let tools: Vec<serde_json::Value> = corpus
        .iter()
        .map(|(name, description)| {
            serde_json::json!({
                "name": name,
                "description": description,
                "inputSchema": {"type": "object"},
            })
        })
        .collect();
    let list = serde_json::json!({ "tools": tools }).to_string();
    let out = import_mcp_tools_json_str(Path::new("metatool.json"), &list, "metatool")
        .unwrap_or_else(|e| panic!("{e}"));
    let c = catalog_of(&out, "metatool.toml");
    let names = row_names(&c, &out);
    (c, names)
}

fn metatool_single(c: &Catalog, names: &RowNames) -> Scores {
    let mut reader =
        csv::Reader::from_path(data("metatool/queries_dev.csv")).expect("queries read");
    let rows: Vec<(String, String)> = reader
        .deserialize()
        .map(|r| r.expect("a `Query,Tool` row"))
        .collect();
    let sample = std::env::var("TOOLCAT_EVAL_SAMPLE")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(rows.len())
        .max(1);
    let stride = rows.len().div_ceil(sample).max(1);
    let mut scores = Scores::default();
    for (query, tool) in rows.iter().step_by(stride) {
        scores.add(&ranked(c, query, 10), &gold(names, [tool.as_str()]));
    }
    scores
}

fn metatool_multi(c: &Catalog, names: &RowNames) -> Scores {
    #[derive(serde::Deserialize)]
    struct Row {
        query: String,
        tool: Vec<String>,
    }
    let text = std::fs::read_to_string(data("metatool/multi_queries_dev.json")).expect("reads");
    let rows: Vec<Row> = serde_json::from_str(&text).expect("two-tool queries");
    let mut scores = Scores::default();
    for row in rows {
        let want = gold(names, row.tool.iter().map(String::as_str));
        scores.add(&ranked(c, &row.query, 10), &want);
    }
    scores
}

fn livemcpbench() -> Scores {
    let out = import(ImportKind::LiveMcpBench, &data("livemcpbench/tools.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    let c = catalog_of(&out, "livemcpbench.toml");
    let names = row_names(&c, &out);
    let text = std::fs::read_to_string(data("livemcpbench/tasks_dev.json")).expect("reads");
    let tasks: Vec<serde_json::Value> = serde_json::from_str(&text).expect("tasks");
    let mut scores = Scores::default();
    for task in &tasks {
        let question = task["Question"].as_str().expect("`Question`");
        let tools = task["Annotator Metadata"]["Tools"]
            .as_str()
            .expect("`Tools`");
        let want = gold(
            &names,
            tools.lines().map(|l| {
                l.trim()
                    .trim_start_matches(|c: char| c.is_ascii_digit())
                    .trim_start_matches('.')
                    .trim()
            }),
        );
        scores.add(&ranked(&c, question, 10), &want);
    }
    scores
}

#[test]
#[ignore = "measurement harness: prints recall@k and nDCG@5 on the real dev sets"]
fn search_quality_report() {
    let (meta, names) = metatool();
    println!("| set                    |      n |  R@1  |  R@5  |  R@10 | nDCG@5 |");
    println!("|------------------------|--------|-------|-------|-------|--------|");
    println!("{}", metatool_single(&meta, &names).line("MetaTool single"));
    println!(
        "{}",
        metatool_multi(&meta, &names).line("MetaTool two-tool")
    );
    println!("{}", livemcpbench().line("LiveMCPBench"));
    let gh = github();
    for &(q, _) in PULL_REQUEST_QUERIES {
        let top = ranked(&gh, q, 10);
        let rank = top.iter().position(|n| n == "create_pull_request");
        println!(
            "github `{q}`: create_pull_request at {}; top 3 {:?}",
            rank.map_or("-".to_string(), |r| (r + 1).to_string()),
            &top[..top.len().min(3)]
        );
    }
}
