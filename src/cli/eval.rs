//! `toolcat eval`: search quality of a catalog on a benchmark query set, or the token economy of
//! its plans. The measurement itself is [`crate::eval`] (query formats, gold, metrics); this
//! module parses the command line and prints.

use crate::cli::Exit;
use std::io::Write as _;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde_json::json;
use toolcat::export::ExportFormat;
use toolcat::Catalog;

#[cfg(feature = "semantic")]
use super::args::ModelArgs;
use crate::eval::{self, QuerySet};

/// The query file formats of `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QueryFormat {
    /// MetaTool single-tool queries: CSV `Query,Tool` (`queries_dev.csv`).
    Metatool,
    /// MetaTool multi-tool queries: JSON `[{query, tool: [names]}]` (`multi_queries_dev.json`).
    #[value(name = "metatool-multi")]
    MetatoolMulti,
    /// LiveMCPBench tasks: JSON with `Question` and the numbered `Annotator Metadata.Tools`
    /// (`tasks_dev.json`).
    Livemcpbench,
}

impl From<QueryFormat> for QuerySet {
    fn from(f: QueryFormat) -> QuerySet {
        match f {
            QueryFormat::Metatool => QuerySet::Metatool,
            QueryFormat::MetatoolMulti => QuerySet::MetatoolMulti,
            QueryFormat::Livemcpbench => QuerySet::LiveMcpBench,
        }
    }
}

/// Default of `--hits`: search hits added to each plan of `--token-economy`.
pub const DEFAULT_PLAN_HITS: usize = 5;

/// The export format whose definitions `--token-economy` counts: OpenAI function tools.
pub const TOKEN_FORMAT: ExportFormat = ExportFormat::OpenAi;

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The catalog to search (e.g. made by `toolcat import`).
    #[arg(long, value_name = "PATH")]
    pub catalog: PathBuf,
    /// The benchmark's query file.
    #[arg(long, value_name = "FILE")]
    pub queries: PathBuf,
    /// The format of the query file.
    #[arg(long, value_enum)]
    pub format: QueryFormat,
    /// Evaluate about K queries, every ⌈n / K⌉-th in file order from the first (default: all).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also split the evaluated queries into K folds (by query text, seeded; see `--seed`) and
    /// report every metric per fold and as mean ± sd over the folds. With `--token-economy`:
    /// plan each fold's tasks (the prior of `--prior N` learned from the other folds' tasks
    /// only) and report per fold and as mean ± sd the share of tasks whose plan holds every
    /// gold tool, C@5, C@10, gold coverage and tokens per plan; with `--co-select` or `--prior`,
    /// beside the plans of the search's own hits (the baseline).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(2..))]
    pub folds: Option<u64>,
    /// `--folds`: the seed of the split.
    #[arg(long, value_name = "S", default_value_t = eval::DEFAULT_FOLD_SEED, requires = "folds")]
    pub seed: u64,
    /// `--folds`: print only the split, as JSON `{"k", "seed", "folds": [fold of each query]}`
    /// (queries in file order, after `--limit`), and search nothing.
    #[arg(long, requires = "folds")]
    pub print_folds: bool,
    /// Instead of search quality, print per query the tokens (o200k_base, OpenAI tools JSON) of
    /// every tool inline against a plan of the inline core plus the best `--hits` search hits,
    /// and whether each gold tool is in the plan; then the totals.
    #[arg(long)]
    pub token_economy: bool,
    /// `--token-economy`: search hits added to each plan.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PLAN_HITS, requires = "token_economy")]
    pub hits: usize,
    /// `--token-economy`: instead of `--hits`, fill each plan in rank order while the
    /// definitions it adds to the inline core stay within PCT percent (0 < PCT ≤ 100) of the
    /// every-tool-inline tokens.
    #[arg(long, value_name = "PCT", value_parser = parse_percent, requires = "token_economy")]
    pub token_budget: Option<f64>,
    /// Co-select the hits for tasks that need several tools: keep the best N, fill the other
    /// slots with the tools of the ranked hits' servers (else toolsets), best server first
    /// (`toolcat::cover`). The metrics then rank the co-selected list.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "3")]
    pub co_select: Option<usize>,
    /// `--token-economy`: learn the tools tasks need without naming them from the training
    /// tasks of FILE (same `--format`; tasks no query of `--queries` may be among): the `--prior`
    /// names most often gold there (in at least 2 tasks) join every plan as if inline.
    #[arg(
        long,
        value_name = "FILE",
        requires = "token_economy",
        conflicts_with = "folds"
    )]
    pub prior_from: Option<PathBuf>,
    /// With `--prior-from` (default 1) or `--token-economy --folds` (default 0): how many
    /// learned tools join every plan.
    #[arg(long, value_name = "N", requires = "token_economy")]
    pub prior: Option<usize>,
    /// Rank by BM25 fused with a local sentence-embedding model; prints the fused metrics, and
    /// beside them BM25 alone, the embeddings alone, and the latency of a query (embedding +
    /// search, one at a time, on `--threads` threads): mean, p50 and p99.
    #[cfg(feature = "semantic")]
    #[arg(long, conflicts_with_all = ["token_economy", "co_select"])]
    pub semantic: bool,
    /// `--model` and `--dense-weight`, with `--semantic`.
    #[cfg(feature = "semantic")]
    #[command(flatten)]
    pub model_args: ModelArgs,
}

/// `--token-budget`: a percentage in (0, 100].
fn parse_percent(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(format!(
            "`{text}` is not a percentage above 0 and at most 100; pass e.g. 2 for 2% of the every-tool-inline tokens"
        )),
    }
}

/// Runs `toolcat eval`.
pub fn run(a: &EvalArgs) -> anyhow::Result<Exit> {
    let overrides = ranking_overrides()?;
    let set = QuerySet::from(a.format);
    let queries = eval::read_queries(set, &a.queries)?;
    if queries.is_empty() {
        anyhow::bail!(
            "query file `{}` holds no queries; pass a {set} query file with at least one query",
            a.queries.display()
        );
    }
    let limit = a.limit.map(|k| usize::try_from(k).unwrap_or(usize::MAX));
    let chosen = eval::sample(&queries, limit);
    let mut out = std::io::stdout().lock();
    let sums = fold_sums(a, &chosen)?;
    if a.print_folds {
        if let Some((assignment, k, seed)) = sums.assignment() {
            serde_json::to_writer(
                &mut out,
                &json!({"k": k, "seed": seed, "folds": assignment}),
            )?;
            writeln!(out)?;
        }
        return Ok(Exit::Ok);
    }
    let c = Catalog::load(&a.catalog).map_err(|e| anyhow::anyhow!("{e}"))?;
    let ranking = eval::Ranking {
        co_select: a.co_select.map(|seeds| toolcat::CoSelect { seeds }),
    };
    if a.token_economy {
        if let Some((assignment, k, seed)) = sums.assignment() {
            return economy_folds(a, &c, &chosen, assignment, k, seed, ranking, &mut out);
        }
        let prior = match &a.prior_from {
            None if a.prior.is_some() => anyhow::bail!(
                "--prior N learns tools from training tasks, and none were given; pass --prior-from FILE with training tasks, or --folds K to learn from the other folds"
            ),
            None => Vec::new(),
            Some(path) => {
                let training = eval::read_queries(set, path)?;
                let overlap = training
                    .iter()
                    .filter(|t| queries.iter().any(|q| q.text == t.text))
                    .count();
                if overlap > 0 {
                    anyhow::bail!(
                        "{overlap} task(s) of `{}` are also in `{}`: a prior learned from the tasks it is measured on is no measurement; pass training tasks that exclude the evaluated ones",
                        path.display(),
                        a.queries.display()
                    );
                }
                eval::gold_prior(&c, &training, a.prior.unwrap_or(1))
            }
        };
        let rule = eval::PlanRule {
            hits: a.hits,
            ranking,
            prior,
            budget_percent: a.token_budget,
        };
        let bar = crate::cli::spinner(format!("counting tokens of {} queries", chosen.len()));
        let economy = eval::token_economy(&c, chosen, &rule, TOKEN_FORMAT);
        bar.finish_and_clear();
        let economy = economy?;
        if economy.tasks.is_empty() {
            return Err(no_gold(a, &c, economy.skipped));
        }
        print_economy(&mut out, a, &economy)?;
        return Ok(Exit::Ok);
    }
    #[cfg(feature = "semantic")]
    if a.semantic {
        return semantic::run(a, &c, set, chosen, sums, overrides.as_deref(), &mut out);
    }
    let bar = crate::cli::spinner(format!("searching {} queries", chosen.len()));
    let e = eval::evaluate_folds(&c, set, chosen, ranking, sums);
    bar.finish_and_clear();
    let (e, cv) = e?;
    if e.queries == 0 {
        return Err(no_gold(a, &c, e.skipped));
    }
    if a.json {
        let mut v = serde_json::to_value(e)?;
        v["system"] = json!(format!("toolcat {}", env!("CARGO_PKG_VERSION")));
        v["tools"] = json!(c.len());
        if let Some(text) = &overrides {
            v["ranking_overrides"] = json!(text);
        }
        if let Some(cv) = &cv {
            v["cv"] = serde_json::to_value(cv)?;
        }
        serde_json::to_writer(&mut out, &v)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{set} queries `{}` over `{}` ({} tools): {} evaluated, {} skipped (no gold tool in the catalog)",
            a.queries.display(),
            a.catalog.display(),
            c.len(),
            e.queries,
            e.skipped
        )?;
        writeln!(
            out,
            "R@1 {:.3}  R@5 {:.3}  R@10 {:.3}  nDCG@5 {:.3}  C@5 {:.3}  C@10 {:.3}  {:.1} µs/query",
            e.recall_1,
            e.recall_5,
            e.recall_10,
            e.ndcg_5,
            e.complete_5,
            e.complete_10,
            e.us_per_query
        )?;
        if let Some(cv) = &cv {
            print_folds(&mut out, "BM25", cv)?;
        }
    }
    Ok(Exit::Ok)
}

/// Applies the ranking overrides of the tuning runs (`bench/tune`), when the environment names
/// some, for this process (`toolcat_catalog::index::__tuning`); returns their text. Only
/// `toolcat eval` reads the variable: no other command ranks with anything but the constants.
fn ranking_overrides() -> anyhow::Result<Option<String>> {
    use toolcat_catalog::index::__tuning;
    let Some(text) = std::env::var_os(__tuning::ENV) else {
        return Ok(None);
    };
    let text = text.to_string_lossy().into_owned();
    let ranking = __tuning::parse(&text).map_err(|e| {
        anyhow::anyhow!(
            "{} holds {e}; unset it to rank with the shipped constants",
            __tuning::ENV
        )
    })?;
    // Set before any catalog is loaded, and only here; a second `set` cannot happen.
    let _ = __tuning::set(ranking);
    eprintln!(
        "toolcat eval: ranking overrides from {}: {text}",
        __tuning::ENV
    );
    Ok(Some(text))
}

/// The per-fold sums of `--folds` (unfolded without it).
fn fold_sums(a: &EvalArgs, chosen: &[&eval::Query]) -> anyhow::Result<eval::FoldSums> {
    let Some(k) = a.folds else {
        return Ok(eval::FoldSums::unfolded());
    };
    let k = usize::try_from(k).unwrap_or(usize::MAX);
    let assignment = eval::fold_assignment(chosen.iter().copied(), k, a.seed)?;
    Ok(eval::FoldSums::folded(assignment, k, a.seed))
}

/// The table of a [`eval::CrossValidation`]: one row per fold, then mean ± sd.
fn print_folds(
    out: &mut impl std::io::Write,
    ranking: &str,
    cv: &eval::CrossValidation,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{ranking}, {} folds (seed {}):\n{:<8} {:>5}  {}",
        cv.k,
        cv.seed,
        "fold",
        "n",
        eval::METRICS.map(|m| format!("{m:>13}")).join(" ")
    )?;
    for (i, f) in cv.folds.iter().enumerate() {
        let cells = f.metrics().map(|v| format!("{v:>13.3}")).join(" ");
        writeln!(out, "{:<8} {:>5}  {cells}", i, f.queries)?;
    }
    let cells = eval::METRICS
        .map(|m| format!("{:>6.3} ± {:.3}", cv.mean[m], cv.sd[m]))
        .join(" ");
    writeln!(out, "{:<8} {:>5}  {cells}", "mean±sd", "")?;
    Ok(())
}

/// `toolcat eval --token-economy --folds K`: the rule of the arguments cross-validated, beside
/// the baseline (the search's own hits, no prior) when the rule differs from it.
#[allow(clippy::too_many_arguments)]
fn economy_folds(
    a: &EvalArgs,
    c: &Catalog,
    chosen: &[&eval::Query],
    assignment: &[usize],
    k: usize,
    seed: u64,
    ranking: eval::Ranking,
    out: &mut impl std::io::Write,
) -> anyhow::Result<Exit> {
    let prior = a.prior.unwrap_or(0);
    let rule = eval::PlanRule {
        hits: a.hits,
        ranking,
        prior: Vec::new(),
        budget_percent: a.token_budget,
    };
    let baseline = eval::PlanRule {
        ranking: eval::Ranking::default(),
        ..rule.clone()
    };
    let bar = crate::cli::spinner(format!("planning {} queries in {k} folds", chosen.len()));
    let run = |rule: &eval::PlanRule, prior| {
        eval::economy_folds(c, chosen, assignment, k, rule, prior, TOKEN_FORMAT)
    };
    let after = run(&rule, prior);
    let before = if rule == baseline && prior == 0 {
        None
    } else {
        Some(run(&baseline, 0))
    };
    bar.finish_and_clear();
    let after = after?;
    let before = before.transpose()?;
    if after.folds.iter().all(|f| f.tasks == 0) {
        let skipped = chosen.len();
        return Err(no_gold(a, c, skipped));
    }
    if a.json {
        let v = json!({
            "system": format!("toolcat {}", env!("CARGO_PKG_VERSION")),
            "tools": c.len(),
            "format": TOKEN_FORMAT,
            "k": k,
            "seed": seed,
            "baseline": before,
            "rule": after,
        });
        serde_json::to_writer(&mut *out, &v)?;
        writeln!(out)?;
        return Ok(Exit::Ok);
    }
    writeln!(
        out,
        "token economy ({TOKEN_FORMAT} tools JSON, o200k_base), {k} folds (seed {seed}) of `{}` over `{}` ({} tools); every tool inline = {} tokens",
        a.queries.display(),
        a.catalog.display(),
        c.len(),
        after.all_tokens
    )?;
    if let Some(before) = &before {
        print_economy_folds(out, "before", before)?;
    }
    print_economy_folds(
        out,
        if before.is_some() { "after" } else { "plans" },
        &after,
    )?;
    Ok(Exit::Ok)
}

/// The table of an [`eval::EconomyCrossValidation`]: one row per fold, then mean ± sd.
fn print_economy_folds(
    out: &mut impl std::io::Write,
    label: &str,
    cv: &eval::EconomyCrossValidation,
) -> anyhow::Result<()> {
    let hits = match cv.budget_percent {
        Some(p) => format!("hits within {p}% of every tool inline"),
        None => format!("the best {} hits", cv.hits),
    };
    let co = cv
        .co_select_seeds
        .map(|s| format!(", co-selected after the best {s}"))
        .unwrap_or_default();
    writeln!(
        out,
        "{label}: {hits}{co}, prior of {} learned from the other folds\n{:<8} {:>5}  {}  prior",
        cv.prior,
        "fold",
        "tasks",
        eval::ECONOMY_METRICS.map(|m| format!("{m:>15}")).join(" ")
    )?;
    for (i, f) in cv.folds.iter().enumerate() {
        let cells = f.metrics().map(|v| format!("{v:>15.3}")).join(" ");
        let prior: Vec<&str> = f.prior.iter().map(|p| p.name.as_str()).collect();
        writeln!(out, "{i:<8} {:>5}  {cells}  {}", f.tasks, prior.join(","))?;
    }
    let cells = eval::ECONOMY_METRICS
        .map(|m| format!("{:>15}", format!("{:.3} ± {:.3}", cv.mean[m], cv.sd[m])))
        .join(" ");
    writeln!(out, "{:<8} {:>5}  {cells}", "mean±sd", "")?;
    Ok(())
}

/// The error of a run that evaluated nothing: none of the `skipped` queries names a tool of the
/// catalog, so every metric would be a meaningless 0.
fn no_gold(a: &EvalArgs, c: &Catalog, skipped: usize) -> anyhow::Error {
    anyhow::anyhow!(
        "none of the {skipped} queries of `{}` has a gold tool in catalog `{}` ({} tools), so nothing was evaluated; pass the catalog imported from this benchmark's tools (`--catalog`) and the query file's format (`--format`)",
        a.queries.display(),
        a.catalog.display(),
        c.len()
    )
}

fn print_economy(
    out: &mut impl std::io::Write,
    a: &EvalArgs,
    e: &eval::TokenEconomy,
) -> anyhow::Result<()> {
    let (found, gold) = e.gold_coverage();
    let share = |part: usize, whole: usize| {
        if whole == 0 {
            0.0
        } else {
            100.0 * part as f64 / whole as f64
        }
    };
    if a.json {
        let mut v = serde_json::to_value(e)?;
        v["totals"] = json!({
            "tasks": e.tasks.len(),
            "inline_tokens": e.inline_tokens(),
            "plan_tokens": e.plan_tokens(),
            "saved_percent": e.saved_percent(),
            "gold_found": found,
            "gold": gold,
            "gold_coverage_percent": share(found, gold),
            "complete_tasks": e.complete_tasks(),
        });
        serde_json::to_writer(&mut *out, &v)?;
        writeln!(out)?;
        return Ok(());
    }
    let hits = match e.budget_percent {
        Some(p) => format!(
            "search hits in rank order, adding at most {p}% of every tool inline ({} tokens)",
            (p / 100.0 * e.all_tokens as f64).floor()
        ),
        None => format!("the best {} search hits", e.hits),
    };
    let co = e
        .co_select_seeds
        .map(|s| format!(", co-selected by server after the best {s}"))
        .unwrap_or_default();
    let prior = if e.prior.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = e
            .prior
            .iter()
            .map(|p| format!("{} ({} training tasks)", p.name, p.tasks))
            .collect();
        format!(" + as if inline: {}", names.join(", "))
    };
    writeln!(
        out,
        "token economy ({} tools JSON, o200k_base): every tool inline = {} definitions, {} tokens; plan = the inline core ({} definitions, {} tokens){prior} + {hits}{co}",
        e.format,
        e.all_tools,
        e.all_tokens,
        e.core_tools,
        e.core_tokens,
    )?;
    writeln!(
        out,
        "{:>3}  {:>5}  {:>6}  {:>6}  {:>5}  question",
        "#", "tools", "tokens", "saved", "gold"
    )?;
    for (i, t) in e.tasks.iter().enumerate() {
        let hit = t.gold.iter().filter(|(_, f)| *f).count();
        let question: String = t.query.chars().take(70).collect();
        writeln!(
            out,
            "{:>3}  {:>5}  {:>6}  {:>5.1}%  {:>2}/{:<2}  {question}",
            i + 1,
            t.plan_tools,
            t.plan_tokens,
            100.0 - share(t.plan_tokens, e.all_tokens),
            hit,
            t.gold.len()
        )?;
    }
    writeln!(
        out,
        "totals over {} tasks: {} tokens with every tool inline, {} with plans ({:.1}% saved); gold tools in the plan {found}/{gold} ({:.1}%); tasks with every gold tool in the plan {}/{}",
        e.tasks.len(),
        e.inline_tokens(),
        e.plan_tokens(),
        e.saved_percent(),
        share(found, gold),
        e.complete_tasks(),
        e.tasks.len()
    )?;
    if e.skipped > 0 {
        writeln!(
            out,
            "{} queries skipped (no gold tool in the catalog)",
            e.skipped
        )?;
    }
    Ok(())
}

/// `toolcat eval --semantic`: BM25, the embeddings alone and their fusion on the same queries,
/// with the per-query latency of the fused search.
#[cfg(feature = "semantic")]
mod semantic {
    use crate::cli::Exit;
    use std::collections::BTreeSet;
    use std::io::Write;
    use std::time::{Duration, Instant};

    use anyhow::Context as _;
    use serde_json::json;
    use toolcat::fusion::DenseWeight;
    use toolcat::{Catalog, Hit};
    use toolcat_semantic::{model_dir, SemanticSearch, ToolVectors};

    use super::{no_gold, EvalArgs};
    use crate::eval::{self, FoldSums, GoldNames, Query, QuerySet, EVAL_DEPTH};

    /// Declared names of `hits`, each kept at its first place (as [`eval::ranked_names`]).
    fn names(c: &Catalog, hits: &[Hit]) -> Vec<String> {
        let mut seen = BTreeSet::new();
        hits.iter()
            .map(|h| c.name(h.tool))
            .filter(|n| seen.insert(*n))
            .map(str::to_string)
            .collect()
    }

    /// The nearest-rank `p`-th percentile of `sorted` (ascending), in microseconds.
    fn percentile(sorted: &[Duration], p: f64) -> f64 {
        if sorted.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1e6
    }

    pub(super) fn run(
        a: &EvalArgs,
        c: &Catalog,
        set: QuerySet,
        chosen: Vec<&Query>,
        sums: FoldSums,
        overrides: Option<&str>,
        out: &mut impl Write,
    ) -> anyhow::Result<Exit> {
        let Some((dir, _)) = model_dir(a.model_args.model.as_deref()) else {
            anyhow::bail!(
                "semantic evaluation needs a model: pass --model DIR or set {}; `semantic/tests/model/fetch` puts all-MiniLM-L6-v2 at target/models/all-MiniLM-L6-v2",
                toolcat_semantic::MODEL_DIR_ENV
            );
        };
        let start = Instant::now();
        let encoder = a.model_args.load_encoder(&dir)?;
        let load = start.elapsed();
        let start = Instant::now();
        let vectors = ToolVectors::for_catalog(c, &encoder, None)
            .context("cannot embed the catalog's tools")?;
        let embed = start.elapsed();
        let semantic = SemanticSearch::new(encoder, vectors);
        let all = c.profile_tools(c.full_profile());
        let dense_only = DenseWeight::new(1.0).map_err(anyhow::Error::msg)?;
        let gold_names = GoldNames::new(c);
        let (mut bm25, mut dense, mut fused) = (sums.clone(), sums.clone(), sums);
        let (mut encode_total, mut latencies) = (Duration::ZERO, Vec::new());
        for (i, q) in chosen.into_iter().enumerate() {
            let gold = gold_names.gold(&q.gold);
            if gold.is_empty() {
                for s in [&mut bm25, &mut dense, &mut fused] {
                    s.add(i, &[], &gold, Duration::ZERO);
                }
                continue;
            }
            let start = Instant::now();
            let cosines = semantic
                .cosines(&q.text)
                .with_context(|| format!("cannot embed the query `{}`", q.text))?;
            let encoded = start.elapsed();
            let hits = c.search_fused_in(
                &q.text,
                all,
                EVAL_DEPTH,
                &cosines,
                a.model_args.dense_weight,
            )?;
            let took = start.elapsed();
            fused.add(i, &names(c, &hits), &gold, took);
            encode_total += encoded;
            latencies.push(took);
            let hits = c.search_fused_in(&q.text, all, EVAL_DEPTH, &cosines, dense_only)?;
            let search = start.elapsed() - took;
            dense.add(i, &names(c, &hits), &gold, encoded + search);
            let (ranking, took) = eval::ranked_names(c, &q.text, eval::Ranking::default())?;
            bm25.add(i, &ranking, &gold, took);
        }
        let ((b, b_cv), (d, d_cv), (f, f_cv)) =
            (bm25.finish(set), dense.finish(set), fused.finish(set));
        if f.queries == 0 {
            return Err(no_gold(a, c, f.skipped));
        }
        latencies.sort();
        let (p50, p99) = (percentile(&latencies, 50.0), percentile(&latencies, 99.0));
        let encode_us = encode_total.as_secs_f64() * 1e6 / f.queries as f64;
        let weight = a.model_args.dense_weight.get();
        let threads = semantic.encoder().threads();
        if a.json {
            let mut v = serde_json::to_value(f)?;
            v["system"] = json!(format!(
                "toolcat {} (BM25 + embeddings, dense weight {weight})",
                env!("CARGO_PKG_VERSION")
            ));
            v["tools"] = json!(c.len());
            v["semantic"] = json!({
                "dense_weight": weight,
                "model": dir.display().to_string(),
                "model_id": semantic.encoder().model_id(),
                "model_load_ms": load.as_secs_f64() * 1e3,
                "tool_vectors_ms": embed.as_secs_f64() * 1e3,
                "encode_us_per_query": encode_us,
                "threads": threads,
                "latency_us": {"mean": f.us_per_query, "p50": p50, "p99": p99},
                "bm25": b,
                "dense": d,
            });
            if let Some(text) = overrides {
                v["ranking_overrides"] = json!(text);
            }
            if let (Some(b_cv), Some(d_cv), Some(f_cv)) = (&b_cv, &d_cv, &f_cv) {
                v["cv"] = serde_json::to_value(f_cv)?;
                v["semantic"]["bm25"]["cv"] = serde_json::to_value(b_cv)?;
                v["semantic"]["dense"]["cv"] = serde_json::to_value(d_cv)?;
            }
            serde_json::to_writer(&mut *out, &v)?;
            writeln!(out)?;
            return Ok(Exit::Ok);
        }
        writeln!(
            out,
            "{set} queries `{}` over `{}` ({} tools): {} evaluated, {} skipped (no gold tool in the catalog)",
            a.queries.display(),
            a.catalog.display(),
            c.len(),
            f.queries,
            f.skipped
        )?;
        writeln!(
            out,
            "model `{}`: loaded in {:.0} ms, {} tools embedded in {:.0} ms",
            dir.display(),
            load.as_secs_f64() * 1e3,
            c.len(),
            embed.as_secs_f64() * 1e3
        )?;
        for (name, e) in [
            ("BM25".to_string(), b),
            ("dense".to_string(), d),
            (format!("fused (w {weight})"), f),
        ] {
            writeln!(
                out,
                "{name:<14} R@1 {:.3}  R@5 {:.3}  R@10 {:.3}  nDCG@5 {:.3}  C@5 {:.3}  {:.1} µs/query",
                e.recall_1, e.recall_5, e.recall_10, e.ndcg_5, e.complete_5, e.us_per_query
            )?;
        }
        writeln!(
            out,
            "fused query latency (embedding + search, {threads} thread{}): mean {:.0} µs, p50 {p50:.0} µs, p99 {p99:.0} µs (embedding {encode_us:.0} µs)",
            if threads == 1 { "" } else { "s" },
            f.us_per_query
        )?;
        for (name, cv) in [("BM25", b_cv), ("dense", d_cv), ("fused", f_cv)] {
            if let Some(cv) = cv {
                super::print_folds(out, name, &cv)?;
            }
        }
        Ok(Exit::Ok)
    }
}
