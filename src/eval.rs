//! Retrieval quality of the catalog's tool search on benchmark query sets, and what plans save in
//! tokens: the benchmark harness, kept out of the runtime library. `toolcat eval` prints these;
//! `tests/search_quality.rs` and the CI quality gate (`bench/compare`) use them.
//!
//! # Query sets ([`QuerySet`])
//!
//! | set              | file                                        | gold tools of a query          |
//! |------------------|---------------------------------------------|--------------------------------|
//! | `metatool`       | MetaTool `queries_dev.csv`, columns `Query,Tool` | the `Tool` column (one)   |
//! | `metatool-multi` | MetaTool `multi_queries_dev.json`, `[{query, tool: [names]}]` | `tool` (two) |
//! | `livemcpbench`   | LiveMCPBench `tasks_dev.json`, `[{Question, "Annotator Metadata": {Tools}}]` | the numbered lines of `Tools` (`1. name`) |
//!
//! # Gold
//! A gold name counts when some tool of the catalog has it as its declared name, or has the name
//! `toolcat import` maps it to (its charset rule, [`map_name`]: MetaTool's `PDF&URLTool` is the
//! row `PDF_URLTool`). Gold names no tool has are left out, and a query left without gold is
//! skipped and counted ([`Evaluation::skipped`]): for LiveMCPBench that is the rule of the
//! reference measurement ("tool names listed per task that exist in the catalog").
//!
//! # Ranking and metrics
//! Each query is searched with [`Catalog::search`] in the full profile for the best
//! [`EVAL_DEPTH`] (10) tools. The ranking is the list of their *declared* names, each kept only
//! at its first (best) place: tools that share a name across servers (LiveMCPBench's `search`,
//! `read_file`, ...) are the same tool to the benchmark's gold, so they count once; the list may
//! then hold fewer than 10 names, never more. Per query, with `G` the gold set and `top(k)` the
//! first `k` names ([`QueryScores::of`]):
//!
//! - recall@k (`R@k`, k = 1, 5, 10) = |G ∩ top(k)| / |G|;
//! - nDCG@5 = DCG@5 / IDCG@5 with binary relevance: DCG@5 = Σ over the gold names at ranks
//!   r = 1..5 of 1 / log2(r + 1), IDCG@5 = Σ over r = 1..min(|G|, 5) of 1 / log2(r + 1);
//! - C@5 (complete@5) = 1 when G ⊆ top(5), else 0; C@10 likewise with top(10) (a task's plan of
//!   10 hits holds every tool it needs). The share of the gold tools in the top k is R@k.
//!
//! Each is averaged over the queries evaluated. The time per query is the wall time of the
//! [`Catalog::search`] calls only (no reading, no scoring), in microseconds, in this process.
//!
//! # Cross-validation folds ([`fold_assignment`], [`CrossValidation`])
//! `toolcat eval --folds K [--seed S]` splits the queries it evaluates (after `--limit`) into K
//! folds: the distinct query texts, in file order of their first appearance, are shuffled by
//! `fastrand`'s generator seeded with S (default [`DEFAULT_FOLD_SEED`]; Fisher–Yates, the
//! locked `fastrand` version), and the text at place p of the shuffle goes to fold p mod K. A
//! query is thus one unit (MetaTool repeats some query texts with other gold tools: every copy
//! lands in one fold), the folds differ in size by at most one text, and the split depends only
//! on the query file, `--limit`, K and S, never on the catalog. This function is the one
//! definition of the split: `bench/compare --folds` reads it from
//! `toolcat eval --folds K --print-folds` and hands it to the peers.
//!
//! Each fold's metrics are those of the queries in it, as above; their mean and sample standard
//! deviation (n − 1) over the K folds are reported beside them ([`CrossValidation`]).
//!
//! # Token economy ([`token_economy`])
//! For each query (LiveMCPBench task): the `o200k_base` tokens ([`toolcat::tokens`]) of the
//! definitions of every tool of the catalog (the meta-tools aside), all sent inline, against a
//! plan of the full profile with every toolset active whose `named` tools are the best `hits`
//! search hits for the question: the plan's inline core (the discovery meta-tools and every tool
//! the catalog marks `inline`) plus those hits (and the tools they require). Definitions are
//! counted in one export format as compact JSON; gold coverage says which gold tools the plan
//! holds (by declared name, as above).
//!
//! A [`PlanRule`] varies the plan: the hits co-selected by server or toolset ([`Ranking`],
//! [`toolcat::cover`]); tools learned from training tasks ([`gold_prior`]) carried as if inline;
//! and, instead of a number of hits, a token budget (a percentage of the every-tool-inline
//! tokens) filled in rank order. Coverage at a budget of 1%, 2% or 5% compares rules at equal
//! cost.
//!
//! Cross-validated ([`economy_folds`], `toolcat eval --token-economy --folds K [--prior N]`):
//! the tasks are split by [`fold_assignment`]; for each fold the prior is learned from the
//! other folds' tasks only ([`fold_prior`]), the fold's tasks are planned, and per fold come
//! the share of tasks whose plan holds every gold tool (all-gold), C@5 and C@10 of the plan's
//! ranking, gold coverage and tokens per plan, then their mean ± sd over the folds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use toolcat::cover::{CoSelect, RANK_DEPTH};
use toolcat::export::{export_tools, ExportFormat};
use toolcat::tokens::count_json_tokens;
use toolcat::{Catalog, Hit, SearchError, ToolIndex, TurnInput, TurnPlanner};
use toolcat_catalog::model::map_name;
use toolcat_catalog::model::{Status, Tier};

/// The seed of `--folds` when `--seed` is not given.
pub const DEFAULT_FOLD_SEED: u64 = 21;

/// How many tools each query is searched for: the deepest cut-off of the metrics (recall@10).
pub const EVAL_DEPTH: usize = 10;

/// The query files `toolcat eval --format` reads (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum QuerySet {
    /// MetaTool single-tool queries, CSV `Query,Tool`.
    Metatool,
    /// MetaTool multi-tool queries, JSON `[{query, tool: [names]}]`.
    MetatoolMulti,
    /// LiveMCPBench tasks, JSON `[{Question, "Annotator Metadata": {Tools}}]`.
    LiveMcpBench,
}

impl QuerySet {
    /// Every set, in the order of [`Self::as_str`]'s table.
    pub const ALL: &'static [QuerySet] = &[
        QuerySet::Metatool,
        QuerySet::MetatoolMulti,
        QuerySet::LiveMcpBench,
    ];

    /// `metatool`, `metatool-multi` or `livemcpbench`: the spelling of `--format`.
    pub const fn as_str(self) -> &'static str {
        match self {
            QuerySet::Metatool => "metatool",
            QuerySet::MetatoolMulti => "metatool-multi",
            QuerySet::LiveMcpBench => "livemcpbench",
        }
    }

    /// Inverse of [`Self::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| s.as_str() == text)
    }
}

impl std::fmt::Display for QuerySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One benchmark query: its text and its gold tools as the benchmark names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// What the user asks.
    pub text: String,
    /// The tools that answer it, as named in the query file (before resolving against a catalog).
    pub gold: Vec<String>,
}

/// Why an evaluation could not run. Messages name the file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The query file could not be read.
    #[error("cannot read query file `{path}`: {source}; check the path")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The query file is not CSV with the expected columns.
    #[error("`{path}` is not {expected}: {source}; pass the file that matches `--format`")]
    Csv {
        path: PathBuf,
        expected: &'static str,
        #[source]
        source: csv::Error,
    },
    /// The query file is not JSON of the expected shape.
    #[error("`{path}` is not {expected}: {source}; pass the file that matches `--format`")]
    Json {
        path: PathBuf,
        expected: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// `--folds K` asks for fewer than two folds or more folds than distinct queries.
    #[error(
        "cannot split {texts} distinct queries into {k} folds; pass --folds between 2 and {texts}"
    )]
    Folds { k: usize, texts: usize },
    /// The search failed (an internal index error).
    #[error("search failed: {0}")]
    Search(#[from] SearchError),
}

const METATOOL_SHAPE: &str = "MetaTool single-tool queries (CSV with the header `Query,Tool`)";
const METATOOL_MULTI_SHAPE: &str =
    "MetaTool multi-tool queries (a JSON array of `{\"query\": ..., \"tool\": [names]}`)";
const LIVEMCPBENCH_SHAPE: &str = "LiveMCPBench tasks (a JSON array of `{\"Question\": ..., \"Annotator Metadata\": {\"Tools\": ...}}`)";

/// Reads the queries of `path` as `set`, in file order.
///
/// # Errors
/// [`EvalError::Read`], [`EvalError::Csv`] or [`EvalError::Json`] when the file is missing or not
/// of `set`'s shape.
pub fn read_queries(set: QuerySet, path: &Path) -> Result<Vec<Query>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let json_error = |expected| {
        move |source| EvalError::Json {
            path: path.to_path_buf(),
            expected,
            source,
        }
    };
    match set {
        QuerySet::Metatool => {
            #[derive(Deserialize)]
            struct Row {
                #[serde(rename = "Query")]
                query: String,
                #[serde(rename = "Tool")]
                tool: String,
            }
            let mut reader = csv::Reader::from_reader(text.as_bytes());
            reader
                .deserialize::<Row>()
                .map(|row| {
                    row.map(|r| Query {
                        text: r.query,
                        gold: vec![r.tool],
                    })
                    .map_err(|source| EvalError::Csv {
                        path: path.to_path_buf(),
                        expected: METATOOL_SHAPE,
                        source,
                    })
                })
                .collect()
        }
        QuerySet::MetatoolMulti => {
            #[derive(Deserialize)]
            struct Row {
                query: String,
                tool: Vec<String>,
            }
            let rows: Vec<Row> =
                serde_json::from_str(&text).map_err(json_error(METATOOL_MULTI_SHAPE))?;
            Ok(rows
                .into_iter()
                .map(|r| Query {
                    text: r.query,
                    gold: r.tool,
                })
                .collect())
        }
        QuerySet::LiveMcpBench => {
            #[derive(Deserialize)]
            struct Meta {
                #[serde(rename = "Tools")]
                tools: String,
            }
            #[derive(Deserialize)]
            struct Task {
                #[serde(rename = "Question")]
                question: String,
                #[serde(rename = "Annotator Metadata")]
                meta: Meta,
            }
            let tasks: Vec<Task> =
                serde_json::from_str(&text).map_err(json_error(LIVEMCPBENCH_SHAPE))?;
            Ok(tasks
                .into_iter()
                .map(|t| Query {
                    text: t.question,
                    gold: numbered_names(&t.meta.tools),
                })
                .collect())
        }
    }
}

/// The names of a numbered list, one per line (`1. search_papers`): each line that starts (after
/// blanks) with digits and a `.` gives the rest of the line, trimmed; other lines give nothing.
pub fn numbered_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let rest = line.trim_start_matches(|c: char| c.is_ascii_digit());
            if rest.len() == line.len() {
                return None;
            }
            let name = rest.strip_prefix('.')?.trim();
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

/// At most about `limit` of `queries`, evenly spread in file order: every ⌈n / limit⌉-th, from
/// the first. `None` (or a limit of at least n): all of them.
pub fn sample(queries: &[Query], limit: Option<usize>) -> Vec<&Query> {
    let n = queries.len();
    let stride = match limit {
        Some(k) if k > 0 && k < n => n.div_ceil(k),
        _ => 1,
    };
    queries.iter().step_by(stride).collect()
}

/// The fold (0..`k`) of each of `queries`, in order: the split of `toolcat eval --folds k --seed
/// seed` (see the module docs), one unit per distinct query text.
///
/// # Errors
/// [`EvalError::Folds`] when `k` < 2 or `k` exceeds the number of distinct query texts.
pub fn fold_assignment<'q>(
    queries: impl IntoIterator<Item = &'q Query>,
    k: usize,
    seed: u64,
) -> Result<Vec<usize>, EvalError> {
    let texts: Vec<&str> = queries.into_iter().map(|q| q.text.as_str()).collect();
    let mut distinct: Vec<&str> = Vec::new();
    let mut seen = BTreeSet::new();
    for t in &texts {
        if seen.insert(*t) {
            distinct.push(t);
        }
    }
    if k < 2 || k > distinct.len() {
        return Err(EvalError::Folds {
            k,
            texts: distinct.len(),
        });
    }
    fastrand::Rng::with_seed(seed).shuffle(&mut distinct);
    let fold: BTreeMap<&str, usize> = distinct
        .iter()
        .enumerate()
        .map(|(place, t)| (*t, place % k))
        .collect();
    Ok(texts.iter().map(|t| fold[t]).collect())
}

/// Resolves benchmark tool names to the declared names of a catalog's tools (see the module docs).
#[derive(Debug, Clone)]
pub struct GoldNames {
    declared: BTreeSet<String>,
}

impl GoldNames {
    /// The declared names of `catalog`.
    pub fn new(catalog: &Catalog) -> Self {
        GoldNames {
            declared: catalog
                .tools()
                .map(|t| catalog.name(t).to_string())
                .collect(),
        }
    }

    /// The declared name `name` stands for: itself when a tool has it, else the name
    /// `toolcat import` maps it to when a tool has that; `None` when no tool of the catalog has
    /// either.
    pub fn resolve(&self, name: &str) -> Option<&str> {
        if let Some(n) = self.declared.get(name) {
            return Some(n);
        }
        self.declared
            .get(&map_name(name, "tool"))
            .map(String::as_str)
    }

    /// The resolved gold set of `gold` (names no tool has are left out).
    pub fn gold(&self, gold: &[String]) -> BTreeSet<String> {
        gold.iter()
            .filter_map(|n| self.resolve(n))
            .map(str::to_string)
            .collect()
    }
}

/// How a query's tools are ranked: the catalog's search ([`Catalog::search_in`]) alone, or
/// co-selected for a task that needs several tools ([`Catalog::search_covering`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ranking {
    /// Co-selection by server or toolset; `None`: the search's own order.
    pub co_select: Option<CoSelect>,
}

impl Ranking {
    /// The best `limit` tools of `allowed` (a bitset) for `query`.
    ///
    /// # Errors
    /// [`EvalError::Search`] on an internal index error.
    pub fn hits(
        self,
        catalog: &Catalog,
        query: &str,
        allowed: &[u64],
        limit: usize,
    ) -> Result<Vec<Hit>, EvalError> {
        Ok(match self.co_select {
            None => catalog.search_in(query, allowed, limit)?,
            Some(co) => catalog.search_covering(query, allowed, limit, co)?,
        })
    }
}

/// Declared names of the best [`EVAL_DEPTH`] hits for `query` in the full profile, each name kept
/// only at its first place, and the time the search took.
///
/// # Errors
/// [`EvalError::Search`] on an internal index error.
pub fn ranked_names(
    catalog: &Catalog,
    query: &str,
    ranking: Ranking,
) -> Result<(Vec<String>, Duration), EvalError> {
    let start = Instant::now();
    let all = catalog.profile_tools(catalog.full_profile());
    let hits = ranking.hits(catalog, query, all, EVAL_DEPTH)?;
    let took = start.elapsed();
    let mut seen = BTreeSet::new();
    let names = hits
        .iter()
        .map(|h| catalog.name(h.tool))
        .filter(|n| seen.insert(*n))
        .map(str::to_string)
        .collect();
    Ok((names, took))
}

/// The metrics of one query (see the module docs for the definitions).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct QueryScores {
    pub recall_1: f64,
    pub recall_5: f64,
    pub recall_10: f64,
    pub ndcg_5: f64,
    pub complete_5: f64,
    pub complete_10: f64,
}

impl QueryScores {
    /// Scores `ranking` (best first, distinct names) against `gold`; `None` for an empty gold set.
    pub fn of(ranking: &[String], gold: &BTreeSet<String>) -> Option<QueryScores> {
        if gold.is_empty() {
            return None;
        }
        let found = |k: usize| ranking.iter().take(k).filter(|n| gold.contains(*n)).count();
        let recall = |k: usize| found(k) as f64 / gold.len() as f64;
        let gain = |rank0: usize| 1.0 / (rank0 as f64 + 2.0).log2();
        let dcg: f64 = ranking
            .iter()
            .take(5)
            .enumerate()
            .filter(|(_, n)| gold.contains(*n))
            .map(|(i, _)| gain(i))
            .sum();
        let ideal: f64 = (0..gold.len().min(5)).map(gain).sum();
        Some(QueryScores {
            recall_1: recall(1),
            recall_5: recall(5),
            recall_10: recall(10),
            ndcg_5: dcg / ideal,
            complete_5: if found(5) == gold.len() { 1.0 } else { 0.0 },
            complete_10: if found(10) == gold.len() { 1.0 } else { 0.0 },
        })
    }
}

/// Averages of [`QueryScores`] over the queries of one evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Evaluation {
    /// The query set.
    pub set: QuerySet,
    /// Queries evaluated (with at least one gold tool in the catalog).
    pub queries: usize,
    /// Queries skipped because none of their gold tools is in the catalog.
    pub skipped: usize,
    /// Mean recall@1.
    #[serde(rename = "R@1")]
    pub recall_1: f64,
    /// Mean recall@5.
    #[serde(rename = "R@5")]
    pub recall_5: f64,
    /// Mean recall@10.
    #[serde(rename = "R@10")]
    pub recall_10: f64,
    /// Mean nDCG@5.
    #[serde(rename = "nDCG@5")]
    pub ndcg_5: f64,
    /// Share of queries with every gold tool in the top 5.
    #[serde(rename = "C@5")]
    pub complete_5: f64,
    /// Share of queries with every gold tool in the top 10.
    #[serde(rename = "C@10")]
    pub complete_10: f64,
    /// Mean wall time of one search, microseconds.
    pub us_per_query: f64,
}

/// The names of the metrics, as in the JSON of an [`Evaluation`], in table order.
pub const METRICS: [&str; 6] = ["R@1", "R@5", "R@10", "nDCG@5", "C@5", "C@10"];

impl Evaluation {
    /// The values of [`METRICS`], in that order.
    pub fn metrics(&self) -> [f64; 6] {
        [
            self.recall_1,
            self.recall_5,
            self.recall_10,
            self.ndcg_5,
            self.complete_5,
            self.complete_10,
        ]
    }
}

/// The metrics of one evaluation per fold, with their mean and sample standard deviation over
/// the folds (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrossValidation {
    /// Number of folds.
    pub k: usize,
    /// The seed of the split.
    pub seed: u64,
    /// One evaluation per fold, fold 0 first.
    pub folds: Vec<Evaluation>,
    /// Per metric of [`METRICS`], its mean over the folds.
    pub mean: BTreeMap<&'static str, f64>,
    /// Per metric of [`METRICS`], its sample standard deviation over the folds (n − 1).
    pub sd: BTreeMap<&'static str, f64>,
}

/// Mean and sample standard deviation (n − 1; 0 for fewer than two values) of `values`.
pub fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, 0.0);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, var.sqrt())
}

/// [`ScoreSums`] of all queries and of each fold: `add` a query's ranking under its index in
/// the fold assignment, then `finish`.
#[derive(Debug, Clone)]
pub struct FoldSums {
    assignment: Option<(Vec<usize>, usize, u64)>,
    all: ScoreSums,
    folds: Vec<ScoreSums>,
}

impl FoldSums {
    /// Sums without folds (`toolcat eval` without `--folds`).
    pub fn unfolded() -> Self {
        FoldSums {
            assignment: None,
            all: ScoreSums::default(),
            folds: Vec::new(),
        }
    }

    /// Sums over `k` folds, query `i` in fold `assignment[i]` (from [`fold_assignment`] with
    /// `seed`).
    pub fn folded(assignment: Vec<usize>, k: usize, seed: u64) -> Self {
        FoldSums {
            assignment: Some((assignment, k, seed)),
            all: ScoreSums::default(),
            folds: vec![ScoreSums::default(); k],
        }
    }

    /// The fold of each query, the number of folds and the seed; `None` when unfolded.
    pub fn assignment(&self) -> Option<(&[usize], usize, u64)> {
        self.assignment
            .as_ref()
            .map(|(a, k, seed)| (a.as_slice(), *k, *seed))
    }

    /// Adds query `i`'s ranking (see [`ScoreSums::add`]).
    pub fn add(&mut self, i: usize, ranking: &[String], gold: &BTreeSet<String>, took: Duration) {
        self.all.add(ranking, gold, took);
        if let Some((assignment, _, _)) = &self.assignment {
            if let Some(fold) = assignment.get(i).and_then(|&f| self.folds.get_mut(f)) {
                fold.add(ranking, gold, took);
            }
        }
    }

    /// The evaluation of all queries, and with folds their [`CrossValidation`].
    pub fn finish(&self, set: QuerySet) -> (Evaluation, Option<CrossValidation>) {
        let all = self.all.finish(set);
        let cv = self.assignment.as_ref().map(|(_, k, seed)| {
            let folds: Vec<Evaluation> = self.folds.iter().map(|f| f.finish(set)).collect();
            let (mut mean, mut sd) = (BTreeMap::new(), BTreeMap::new());
            for (m, name) in METRICS.iter().enumerate() {
                let values: Vec<f64> = folds.iter().map(|e| e.metrics()[m]).collect();
                let (mu, s) = mean_sd(&values);
                mean.insert(*name, mu);
                sd.insert(*name, s);
            }
            CrossValidation {
                k: *k,
                seed: *seed,
                folds,
                mean,
                sd,
            }
        });
        (all, cv)
    }
}

/// Sums of [`QueryScores`] and search time, turned into an [`Evaluation`] by [`Self::finish`].
#[derive(Debug, Clone, Default)]
pub struct ScoreSums {
    queries: usize,
    skipped: usize,
    sum: QueryScores,
    time: Duration,
}

impl ScoreSums {
    /// Adds one query's ranking; a query without gold is counted as skipped.
    pub fn add(&mut self, ranking: &[String], gold: &BTreeSet<String>, took: Duration) {
        let Some(s) = QueryScores::of(ranking, gold) else {
            self.skipped += 1;
            return;
        };
        self.queries += 1;
        self.time += took;
        self.sum.recall_1 += s.recall_1;
        self.sum.recall_5 += s.recall_5;
        self.sum.recall_10 += s.recall_10;
        self.sum.ndcg_5 += s.ndcg_5;
        self.sum.complete_5 += s.complete_5;
        self.sum.complete_10 += s.complete_10;
    }

    /// The averages (all 0 when no query was evaluated).
    pub fn finish(&self, set: QuerySet) -> Evaluation {
        let n = self.queries.max(1) as f64;
        Evaluation {
            set,
            queries: self.queries,
            skipped: self.skipped,
            recall_1: self.sum.recall_1 / n,
            recall_5: self.sum.recall_5 / n,
            recall_10: self.sum.recall_10 / n,
            ndcg_5: self.sum.ndcg_5 / n,
            complete_5: self.sum.complete_5 / n,
            complete_10: self.sum.complete_10 / n,
            us_per_query: self.time.as_secs_f64() * 1e6 / n,
        }
    }
}

/// Evaluates the catalog's search on `queries` of `set` (see the module docs).
///
/// # Errors
/// [`EvalError::Search`] on an internal index error.
pub fn evaluate<'q>(
    catalog: &Catalog,
    set: QuerySet,
    queries: impl IntoIterator<Item = &'q Query>,
    ranking: Ranking,
) -> Result<Evaluation, EvalError> {
    Ok(evaluate_folds(catalog, set, queries, ranking, FoldSums::unfolded())?.0)
}

/// [`evaluate`] with the queries' scores also summed per fold of `sums` (query `i` of
/// `queries` is index `i` of the fold assignment).
///
/// # Errors
/// [`EvalError::Search`] on an internal index error.
pub fn evaluate_folds<'q>(
    catalog: &Catalog,
    set: QuerySet,
    queries: impl IntoIterator<Item = &'q Query>,
    ranking: Ranking,
    mut sums: FoldSums,
) -> Result<(Evaluation, Option<CrossValidation>), EvalError> {
    let names = GoldNames::new(catalog);
    for (i, q) in queries.into_iter().enumerate() {
        let gold = names.gold(&q.gold);
        if gold.is_empty() {
            sums.add(i, &[], &gold, Duration::ZERO);
            continue;
        }
        let (names, took) = ranked_names(catalog, &q.text, ranking)?;
        sums.add(i, &names, &gold, took);
    }
    Ok(sums.finish(set))
}

/// A tool a task needs without naming it, as learned from training tasks by [`gold_prior`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PriorTool {
    /// The declared name.
    pub name: String,
    /// Training tasks with the name among their gold tools.
    pub tasks: usize,
}

/// The least number of training tasks that must list a tool as gold for [`gold_prior`] to
/// learn it: 2 (a tool one task needed is that task's, not a habit of tasks).
pub const PRIOR_MIN_TASKS: usize = 2;

/// The `n` declared names listed as gold by the most `training` tasks (at least
/// [`PRIOR_MIN_TASKS`] of them), most tasks first, ties by name: the tools tasks need without
/// naming them (`write_file` to save a report, `get_current_time` for "tomorrow"). Learned from
/// the training tasks only; a plan of a held-out task carries them as if the catalog marked them
/// `visibility = "inline"` ([`PlanRule::prior`]).
pub fn gold_prior<'q>(
    catalog: &Catalog,
    training: impl IntoIterator<Item = &'q Query>,
    n: usize,
) -> Vec<PriorTool> {
    let names = GoldNames::new(catalog);
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for q in training {
        for g in names.gold(&q.gold) {
            *counts.entry(g).or_default() += 1;
        }
    }
    let mut ranked: Vec<PriorTool> = counts
        .into_iter()
        .filter(|(_, k)| *k >= PRIOR_MIN_TASKS)
        .map(|(name, tasks)| PriorTool { name, tasks })
        .collect();
    ranked.sort_by(|a, b| b.tasks.cmp(&a.tasks).then_with(|| a.name.cmp(&b.name)));
    ranked.truncate(n);
    ranked
}

/// How [`token_economy`] builds a task's plan beyond the inline core.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlanRule {
    /// Search hits added to each plan (without [`Self::budget_percent`]).
    pub hits: usize,
    /// How the hits are ranked.
    pub ranking: Ranking,
    /// Tools carried by every plan as if inline (from [`gold_prior`]); of several tools with one
    /// declared name, the one with the shortest definition.
    pub prior: Vec<PriorTool>,
    /// When set, the plan takes hits (of the best [`RANK_DEPTH`]) in rank order while the
    /// definitions it adds to the inline core (prior tools and hits) stay within this percentage
    /// of the every-tool-inline tokens, skipping a hit that would pass it; [`Self::hits`] is then
    /// ignored. The core is left out of the budget: it is the same for every rule, and on a
    /// small catalog (MetaTool: 4 meta-tools, 432 tokens, 4% of every tool inline) it would eat
    /// the whole of a 1% or 2% budget.
    pub budget_percent: Option<f64>,
}

impl PlanRule {
    /// The best `hits` search hits, nothing else: the plans of `toolcat eval --token-economy`.
    pub fn hits(hits: usize) -> Self {
        PlanRule {
            hits,
            ..PlanRule::default()
        }
    }
}

/// One query of a [`TokenEconomy`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskTokens {
    /// The question (whitespace collapsed).
    pub query: String,
    /// Definitions in the plan.
    pub plan_tools: usize,
    /// Tokens of the plan's definitions.
    pub plan_tokens: usize,
    /// Each resolved gold tool (declared name) and whether the plan holds it.
    pub gold: Vec<(String, bool)>,
}

/// Tokens of every tool inline against toolcat plans, per query (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenEconomy {
    /// The export format counted.
    pub format: ExportFormat,
    /// Search hits added to each plan (the most, with a token budget).
    pub hits: usize,
    /// Co-selection's seeds, when the hits were co-selected.
    pub co_select_seeds: Option<usize>,
    /// The plan's token budget, percent of [`Self::all_tokens`].
    pub budget_percent: Option<f64>,
    /// Tools every plan carries as if inline (learned from training tasks).
    pub prior: Vec<PriorTool>,
    /// Tools sent when every tool is inline (the meta-tools aside).
    pub all_tools: usize,
    /// Tokens of those definitions, the same for every query.
    pub all_tokens: usize,
    /// Tools of the inline core (in every plan before any hit).
    pub core_tools: usize,
    /// Tokens of the inline core's definitions.
    pub core_tokens: usize,
    /// One row per query with at least one gold tool in the catalog, in file order.
    pub tasks: Vec<TaskTokens>,
    /// Queries skipped because none of their gold tools is in the catalog.
    pub skipped: usize,
}

impl TokenEconomy {
    /// Plan tokens summed over the tasks.
    pub fn plan_tokens(&self) -> usize {
        self.tasks.iter().map(|t| t.plan_tokens).sum()
    }

    /// Every-tool-inline tokens summed over the tasks.
    pub fn inline_tokens(&self) -> usize {
        self.all_tokens * self.tasks.len()
    }

    /// Share of the every-tool-inline tokens the plans save, in percent (0 with no task).
    pub fn saved_percent(&self) -> f64 {
        let all = self.inline_tokens();
        if all == 0 {
            return 0.0;
        }
        100.0 * (1.0 - self.plan_tokens() as f64 / all as f64)
    }

    /// Gold tools in their task's plan, and gold tools in all.
    pub fn gold_coverage(&self) -> (usize, usize) {
        let total = self.tasks.iter().map(|t| t.gold.len()).sum();
        let found = self
            .tasks
            .iter()
            .flat_map(|t| &t.gold)
            .filter(|(_, f)| *f)
            .count();
        (found, total)
    }

    /// Tasks whose plan holds every gold tool.
    pub fn complete_tasks(&self) -> usize {
        self.tasks
            .iter()
            .filter(|t| t.gold.iter().all(|(_, f)| *f))
            .count()
    }
}

/// The token economy of `catalog` on `queries`: for each, a plan built by `rule` for its text,
/// against every tool inline, counted in `format` (see the module docs).
///
/// # Errors
/// [`EvalError::Search`] on an internal index error.
pub fn token_economy<'q>(
    catalog: &Catalog,
    queries: impl IntoIterator<Item = &'q Query>,
    rule: &PlanRule,
    format: ExportFormat,
) -> Result<TokenEconomy, EvalError> {
    let full = catalog.full_profile();
    let meta = catalog.tier_tools(Tier::Loop);
    let deprecated = catalog.status_tools(Status::Deprecated);
    let all: Vec<ToolIndex> = catalog
        .tools_in(catalog.profile_tools(full))
        .filter(|t| {
            !toolcat_catalog::tables::bit(meta, t.index())
                && !toolcat_catalog::tables::bit(deprecated, t.index())
        })
        .collect();
    let tokens_of = |tools: &[ToolIndex]| {
        count_json_tokens(&export_tools(catalog, tools.iter().copied(), format))
    };
    let all_tokens = tokens_of(&all);
    let prior: Vec<ToolIndex> = rule
        .prior
        .iter()
        .filter_map(|p| {
            all.iter()
                .copied()
                .filter(|&t| catalog.name(t) == p.name)
                .min_by_key(|&t| (tokens_of(&[t]), t))
        })
        .collect();
    let toolsets: Vec<_> = catalog.toolsets().collect();
    let names = GoldNames::new(catalog);
    let mut planner = TurnPlanner::new(catalog);
    let core = planner.plan(
        catalog,
        &TurnInput {
            profile: full,
            toolsets: &toolsets,
            discovered: &[],
            named: &[],
        },
    );
    let core_tools = core.tools().len();
    let core_tokens = tokens_of(core.tools());
    let mut plan_of = |named: &[ToolIndex]| -> Vec<ToolIndex> {
        planner
            .plan(
                catalog,
                &TurnInput {
                    profile: full,
                    toolsets: &toolsets,
                    discovered: &[],
                    named,
                },
            )
            .tools()
            .to_vec()
    };
    let budget = rule
        .budget_percent
        .map(|p| (p / 100.0 * all_tokens as f64).floor() as usize);
    let mut tasks = Vec::new();
    let mut skipped = 0;
    for q in queries {
        let gold = names.gold(&q.gold);
        if gold.is_empty() {
            skipped += 1;
            continue;
        }
        let depth = if budget.is_some() {
            RANK_DEPTH
        } else {
            rule.hits
        };
        let found = rule
            .ranking
            .hits(catalog, &q.text, catalog.profile_tools(full), depth)?;
        let mut named = prior.clone();
        let plan = match budget {
            None => {
                named.extend(found.iter().map(|h| h.tool));
                plan_of(&named)
            }
            Some(cap) => {
                let mut plan = plan_of(&named);
                for h in &found {
                    if plan.contains(&h.tool) {
                        continue;
                    }
                    named.push(h.tool);
                    let next = plan_of(&named);
                    if tokens_of(&next) <= cap + core_tokens {
                        plan = next;
                    } else {
                        named.pop();
                    }
                }
                plan
            }
        };
        let in_plan: BTreeSet<&str> = plan.iter().map(|&t| catalog.name(t)).collect();
        tasks.push(TaskTokens {
            query: q.text.split_whitespace().collect::<Vec<_>>().join(" "),
            plan_tools: plan.len(),
            plan_tokens: tokens_of(&plan),
            gold: gold
                .iter()
                .map(|g| (g.clone(), in_plan.contains(g.as_str())))
                .collect(),
        });
    }
    Ok(TokenEconomy {
        format,
        hits: if budget.is_some() {
            RANK_DEPTH
        } else {
            rule.hits
        },
        co_select_seeds: rule.ranking.co_select.map(|c| c.seeds),
        budget_percent: rule.budget_percent,
        prior: rule.prior.clone(),
        all_tools: all.len(),
        all_tokens,
        core_tools,
        core_tokens,
        tasks,
        skipped,
    })
}

/// The tools [`gold_prior`] learns for held-out fold `fold`: from the tasks of every *other*
/// fold only (`queries[i]` is in fold `assignment[i]`), never from `fold`'s own tasks. The `n`
/// most common gold names there, as [`gold_prior`] ranks them.
pub fn fold_prior(
    catalog: &Catalog,
    queries: &[&Query],
    assignment: &[usize],
    fold: usize,
    n: usize,
) -> Vec<PriorTool> {
    let training = queries
        .iter()
        .zip(assignment)
        .filter(|(_, &f)| f != fold)
        .map(|(q, _)| *q);
    gold_prior(catalog, training, n)
}

/// The names of the per-fold figures of an [`EconomyFold`], as in its JSON, in table order.
pub const ECONOMY_METRICS: [&str; 5] = [
    "all_gold",
    "C@5",
    "C@10",
    "gold_coverage",
    "tokens_per_plan",
];

/// The plans of one held-out fold of [`economy_folds`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EconomyFold {
    /// Tasks of the fold measured (with at least one gold tool in the catalog).
    pub tasks: usize,
    /// The tools learned from the other folds' tasks ([`fold_prior`]), carried by every plan.
    pub prior: Vec<PriorTool>,
    /// Share (0..=1) of the fold's tasks whose plan holds every gold tool (all-gold@k, k the
    /// plan's hits).
    pub all_gold: f64,
    /// Share (0..=1) of the fold's tasks with every gold tool in the top 5 of the plan's ranking
    /// (co-selected when the rule co-selects; the prior aside).
    #[serde(rename = "C@5")]
    pub complete_5: f64,
    /// As [`Self::complete_5`], top 10.
    #[serde(rename = "C@10")]
    pub complete_10: f64,
    /// Share (0..=1) of the fold's gold tools (summed over its tasks) that their task's plan holds.
    pub gold_coverage: f64,
    /// Mean `o200k_base` tokens of a plan's definitions (core, prior and hits), per task.
    pub tokens_per_plan: f64,
}

impl EconomyFold {
    /// The values of [`ECONOMY_METRICS`], in that order.
    pub fn metrics(&self) -> [f64; 5] {
        [
            self.all_gold,
            self.complete_5,
            self.complete_10,
            self.gold_coverage,
            self.tokens_per_plan,
        ]
    }
}

/// The token economy cross-validated ([`economy_folds`]): one [`EconomyFold`] per held-out fold,
/// and per figure of [`ECONOMY_METRICS`] its mean and sample standard deviation (n − 1) over the
/// folds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EconomyCrossValidation {
    /// Search hits added to each plan (the most, with a token budget).
    pub hits: usize,
    /// Co-selection's seeds, when the hits were co-selected.
    pub co_select_seeds: Option<usize>,
    /// The plan's token budget, percent of [`Self::all_tokens`].
    pub budget_percent: Option<f64>,
    /// Tools each fold's prior learns (at most; fewer when fewer are gold in 2 training tasks).
    pub prior: usize,
    /// Tokens of every tool inline, the same for every task.
    pub all_tokens: usize,
    /// One entry per fold, fold 0 first.
    pub folds: Vec<EconomyFold>,
    /// Per figure of [`ECONOMY_METRICS`], its mean over the folds.
    pub mean: BTreeMap<&'static str, f64>,
    /// Per figure of [`ECONOMY_METRICS`], its sample standard deviation over the folds.
    pub sd: BTreeMap<&'static str, f64>,
}

/// The token economy of `rule` cross-validated over `k` folds (`queries[i]` in fold
/// `assignment[i]`, from [`fold_assignment`]): for each fold, the prior of `prior` tools is
/// learned from the other folds' tasks ([`fold_prior`]; `rule.prior` is replaced), and the
/// fold's tasks are planned by [`token_economy`] and ranked by [`ranked_names`] (for C@5, C@10).
///
/// # Errors
/// [`EvalError::Folds`] when `assignment` does not give every query a fold below `k` (or `k`
/// < 2); [`EvalError::Search`] on an internal index error.
pub fn economy_folds(
    catalog: &Catalog,
    queries: &[&Query],
    assignment: &[usize],
    k: usize,
    rule: &PlanRule,
    prior: usize,
    format: ExportFormat,
) -> Result<EconomyCrossValidation, EvalError> {
    if k < 2 || assignment.len() != queries.len() || assignment.iter().any(|&f| f >= k) {
        return Err(EvalError::Folds {
            k,
            texts: queries.len(),
        });
    }
    let names = GoldNames::new(catalog);
    let mut folds = Vec::with_capacity(k);
    let mut all_tokens = 0;
    for fold in 0..k {
        let held_out: Vec<&Query> = queries
            .iter()
            .zip(assignment)
            .filter(|(_, &f)| f == fold)
            .map(|(q, _)| *q)
            .collect();
        let rule = PlanRule {
            prior: fold_prior(catalog, queries, assignment, fold, prior),
            ..rule.clone()
        };
        let e = token_economy(catalog, held_out.iter().copied(), &rule, format)?;
        all_tokens = e.all_tokens;
        let (mut complete_5, mut complete_10) = (0.0, 0.0);
        for q in &held_out {
            let (top, _) = ranked_names(catalog, &q.text, rule.ranking)?;
            if let Some(s) = QueryScores::of(&top, &names.gold(&q.gold)) {
                complete_5 += s.complete_5;
                complete_10 += s.complete_10;
            }
        }
        let tasks = e.tasks.len();
        let per_task = |x: usize| x as f64 / tasks.max(1) as f64;
        let (found, gold) = e.gold_coverage();
        folds.push(EconomyFold {
            tasks,
            all_gold: per_task(e.complete_tasks()),
            complete_5: complete_5 / tasks.max(1) as f64,
            complete_10: complete_10 / tasks.max(1) as f64,
            gold_coverage: found as f64 / gold.max(1) as f64,
            tokens_per_plan: per_task(e.plan_tokens()),
            prior: rule.prior,
        });
    }
    let (mut mean, mut sd) = (BTreeMap::new(), BTreeMap::new());
    for (m, name) in ECONOMY_METRICS.iter().enumerate() {
        let values: Vec<f64> = folds.iter().map(|f| f.metrics()[m]).collect();
        let (mu, s) = mean_sd(&values);
        mean.insert(*name, mu);
        sd.insert(*name, s);
    }
    Ok(EconomyCrossValidation {
        hits: if rule.budget_percent.is_some() {
            RANK_DEPTH
        } else {
            rule.hits
        },
        co_select_seeds: rule.ranking.co_select.map(|c| c.seeds),
        budget_percent: rule.budget_percent,
        prior,
        all_tokens,
        folds,
        mean,
        sd,
    })
}
