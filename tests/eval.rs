//! `toolcat eval` and `toolcat_cli::eval`: the metrics on hand-made rankings whose values are worked
//! out below, the query readers and sampling, the `metatool` import of the real corpus, and the
//! command on the real dev sets.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use toolcat::export::ExportFormat;
use toolcat::{Catalog, CoSelect};
use toolcat_cli::eval::{
    economy_folds, evaluate, fold_assignment, fold_prior, gold_prior, mean_sd, numbered_names,
    read_queries, sample, token_economy, EvalError, FoldSums, GoldNames, PlanRule, Query,
    QueryScores, QuerySet, Ranking, ScoreSums, ECONOMY_METRICS, METRICS,
};
use toolcat_import::{import, import_mcp_tools_json_str, ImportKind};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(rel)
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn set(list: &[&str]) -> BTreeSet<String> {
    names(list).into_iter().collect()
}

/// `1 / log2(rank + 1)`: the gain of a gold tool at `rank` (from 1).
fn gain(rank: u32) -> f64 {
    1.0 / f64::from(rank + 1).log2()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// Ten ranked names, `a` best.
const RANKING: [&str; 10] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];

#[test]
fn metrics_of_hand_made_rankings() {
    let ranking = names(&RANKING);
    let score = |gold: &[&str]| QueryScores::of(&ranking, &set(gold)).expect("gold is not empty");

    // One gold tool at rank 3: not in the top 1, in the top 5 and 10.
    // nDCG@5 = (1/log2 4) / (1/log2 2) = 0.5 / 1 = 0.5; C@5 = 1.
    let s = score(&["c"]);
    assert_eq!(
        (s.recall_1, s.recall_5, s.recall_10, s.complete_5),
        (0.0, 1.0, 1.0, 1.0)
    );
    assert!(close(s.ndcg_5, 0.5), "{s:?}");

    // Gold at ranks 1 and 6: R@1 = 1/2, R@5 = 1/2 (rank 6 is past 5), R@10 = 2/2.
    // DCG@5 = 1/log2 2 = 1; IDCG@5 (two gold) = 1 + 1/log2 3 = 1.63093;
    // nDCG@5 = 1 / 1.63093 = 0.61315. C@5 = 0 (rank 6 is not in the top 5).
    let s = score(&["a", "f"]);
    assert_eq!(
        (s.recall_1, s.recall_5, s.recall_10, s.complete_5),
        (0.5, 0.5, 1.0, 0.0)
    );
    assert!(close(s.ndcg_5, 1.0 / (1.0 + gain(2))), "{s:?}");
    assert!((s.ndcg_5 - 0.61315).abs() < 1e-5, "{s:?}");

    // Gold at ranks 2 and 4: DCG@5 = 1/log2 3 + 1/log2 5 = 0.63093 + 0.43068 = 1.06161;
    // nDCG@5 = 1.06161 / 1.63093 = 0.65092; both in the top 5, so C@5 = 1.
    let s = score(&["b", "d"]);
    assert_eq!(
        (s.recall_1, s.recall_5, s.recall_10, s.complete_5),
        (0.0, 1.0, 1.0, 1.0)
    );
    assert!((s.ndcg_5 - 0.65092).abs() < 1e-5, "{s:?}");

    // Six gold tools at ranks 1..6: R@5 = 5/6; the ideal DCG@5 has only 5 places, all filled by
    // gold, so nDCG@5 = 1; not all six are in the top 5, so C@5 = 0.
    let s = score(&["a", "b", "c", "d", "e", "f"]);
    assert!(close(s.recall_5, 5.0 / 6.0) && close(s.recall_1, 1.0 / 6.0));
    assert!(close(s.ndcg_5, 1.0) && s.complete_5 == 0.0, "{s:?}");

    // A gold tool the ranking misses scores 0 everywhere.
    let s = score(&["zz"]);
    assert_eq!(s, QueryScores::default());

    // A shorter ranking (duplicates removed) is scored on what it holds.
    let short = names(&["a", "b"]);
    let s = QueryScores::of(&short, &set(&["b", "x"])).expect("gold");
    assert_eq!((s.recall_1, s.recall_5, s.recall_10), (0.0, 0.5, 0.5));
    assert!(close(s.ndcg_5, gain(2) / (1.0 + gain(2))));

    // No gold: not scored.
    assert_eq!(QueryScores::of(&ranking, &BTreeSet::new()), None);
}

#[test]
fn averages_count_evaluated_queries_and_skip_those_without_gold() {
    let ranking = names(&RANKING);
    let mut sums = ScoreSums::default();
    sums.add(&ranking, &set(&["a"]), Duration::from_micros(30));
    sums.add(&ranking, &set(&["c"]), Duration::from_micros(10));
    sums.add(&ranking, &BTreeSet::new(), Duration::from_micros(1000));
    let e = sums.finish(QuerySet::Metatool);
    assert_eq!((e.queries, e.skipped), (2, 1));
    // R@1: (1 + 0) / 2; nDCG@5: (1 + 0.5) / 2; time: (30 + 10) / 2 µs, the skipped query's not counted.
    assert!(close(e.recall_1, 0.5) && close(e.recall_5, 1.0) && close(e.ndcg_5, 0.75));
    assert!(close(e.us_per_query, 20.0), "{e:?}");
}

#[test]
fn numbered_tool_lists_and_sampling() {
    let listed =
        numbered_names("1. search_papers\n2.read_file\nsee the notes\n  3.  fetch  \n4.\n");
    assert_eq!(listed, names(&["search_papers", "read_file", "fetch"]));

    let queries: Vec<Query> = (0..10)
        .map(|i| Query {
            text: format!("q{i}"),
            gold: Vec::new(),
        })
        .collect();
    let texts = |limit| -> Vec<String> {
        sample(&queries, limit)
            .iter()
            .map(|q| q.text.clone())
            .collect()
    };
    // ⌈10 / 3⌉ = 4: queries 0, 4, 8.
    assert_eq!(texts(Some(3)), names(&["q0", "q4", "q8"]));
    assert_eq!(texts(None).len(), 10);
    assert_eq!(texts(Some(10)).len(), 10);
    assert_eq!(texts(Some(50)).len(), 10);
}

/// `--folds`: every query in exactly one fold, copies of a query text together, fold sizes (in
/// texts) within one of each other, the same split for the same seed and another for another.
#[test]
fn fold_split_is_a_seeded_partition_by_query_text() {
    // 103 queries, 100 distinct texts: q0..q99, then q5, q17 and q99 again (other gold).
    let mut queries: Vec<Query> = (0..100)
        .map(|i| Query {
            text: format!("q{i}"),
            gold: vec![format!("t{i}")],
        })
        .collect();
    for i in [5, 17, 99] {
        queries.push(Query {
            text: format!("q{i}"),
            gold: vec!["other".to_string()],
        });
    }
    let split = |k, seed| fold_assignment(&queries, k, seed).expect("splits");
    for k in [2, 5, 7, 100] {
        let folds = split(k, 21);
        assert_eq!(folds.len(), queries.len());
        assert!(folds.iter().all(|&f| f < k), "{folds:?}");
        for (dup, first) in [(100, 5), (101, 17), (102, 99)] {
            assert_eq!(folds[dup], folds[first], "k {k}: copies of a text split");
        }
        let mut texts = vec![0usize; k];
        for f in &folds[..100] {
            texts[*f] += 1;
        }
        let (min, max) = (texts.iter().min(), texts.iter().max());
        assert!(
            min >= Some(&(100 / k)) && max <= Some(&100usize.div_ceil(k)),
            "k {k}: {texts:?}"
        );
        assert_eq!(split(k, 21), folds, "k {k}: not deterministic");
    }
    assert_ne!(
        split(5, 21),
        split(5, 22),
        "the seed does not change the split"
    );
    // Not file order: the first five texts do not simply go to folds 0..5.
    assert_ne!(split(5, 21)[..5], [0, 1, 2, 3, 4]);

    for k in [0, 1, 101] {
        let err = fold_assignment(&queries, k, 21).expect_err("too few or too many folds");
        assert!(
            matches!(err, EvalError::Folds { texts: 100, .. }),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("--folds between 2 and 100"),
            "{err}"
        );
    }
}

/// Per-fold averages, and their mean and sample standard deviation.
#[test]
fn fold_sums_average_each_fold_and_spread_over_folds() {
    let (m, s) = mean_sd(&[1.0, 2.0, 3.0, 4.0]);
    // Mean 2.5; squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5, / 3, square root.
    assert!(close(m, 2.5) && close(s, (5.0f64 / 3.0).sqrt()), "{m} {s}");
    assert_eq!(mean_sd(&[0.7]), (0.7, 0.0));

    let ranking = names(&RANKING);
    // Queries 0 and 2 in fold 0 (gold at ranks 1 and 3), 1 and 3 in fold 1 (rank 1, no gold).
    let mut sums = FoldSums::folded(vec![0, 1, 0, 1], 2, 7);
    sums.add(0, &ranking, &set(&["a"]), Duration::ZERO);
    sums.add(1, &ranking, &set(&["a"]), Duration::ZERO);
    sums.add(2, &ranking, &set(&["c"]), Duration::ZERO);
    sums.add(3, &ranking, &BTreeSet::new(), Duration::ZERO);
    let (all, cv) = sums.finish(QuerySet::Metatool);
    let cv = cv.expect("folded");
    assert_eq!((all.queries, all.skipped), (3, 1));
    assert_eq!((cv.k, cv.seed, cv.folds.len()), (2, 7, 2));
    assert_eq!((cv.folds[0].queries, cv.folds[1].queries), (2, 1));
    assert_eq!(cv.folds[1].skipped, 1);
    // R@1: fold 0 (1 + 0) / 2 = 0.5, fold 1 1.0: mean 0.75, sd = √((0.0625 · 2) / 1) = 0.35355.
    assert!(close(cv.folds[0].recall_1, 0.5) && close(cv.folds[1].recall_1, 1.0));
    assert!(close(cv.mean["R@1"], 0.75), "{cv:?}");
    assert!((cv.sd["R@1"] - 0.353_553).abs() < 1e-6, "{cv:?}");
    assert_eq!(cv.mean.len(), METRICS.len());
    assert!(FoldSums::unfolded().finish(QuerySet::Metatool).1.is_none());
}

/// A three-tool catalog where each query names its tool exactly: every query ranks its gold tool
/// first (the exact-name step), so every metric is 1, except for the query whose gold is missing.
#[test]
fn evaluate_runs_the_catalog_search() {
    let list = serde_json::json!({"tools": [
        {"name": "read_file", "description": "Read a file from disk", "inputSchema": {"type": "object"}},
        {"name": "send_mail", "description": "Send an email message", "inputSchema": {"type": "object"}},
        {"name": "get_weather", "description": "Weather forecast for a city", "inputSchema": {"type": "object"}},
    ]})
    .to_string();
    let out = import_mcp_tools_json_str(Path::new("tiny.json"), &list, "tiny").expect("imports");
    let c = Catalog::from_source("tiny.toml", &out.text).expect("loads");
    let q = |text: &str, gold: &[&str]| Query {
        text: text.to_string(),
        gold: names(gold),
    };
    let queries = [
        q("read_file", &["read_file"]),
        q("send_mail", &["send_mail"]),
        q("anything", &["no_such_tool"]),
    ];
    let e = evaluate(&c, QuerySet::MetatoolMulti, &queries, Ranking::default()).expect("runs");
    assert_eq!((e.queries, e.skipped), (2, 1));
    assert_eq!(
        (e.recall_1, e.recall_5, e.ndcg_5, e.complete_5),
        (1.0, 1.0, 1.0, 1.0)
    );
    assert!(e.us_per_query > 0.0);
}

#[test]
fn metatool_import_holds_every_tool_with_its_name_and_description_only() {
    require_data!();
    let path = data("metatool/plugin_des.json");
    let out = import(ImportKind::Metatool, &path).expect("the corpus imports");
    let corpus: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("reads")).expect("JSON");
    assert_eq!(corpus.len(), 199);
    assert_eq!(out.report.tools, corpus.len());
    assert_eq!(out.report.meta_tools, 4);
    toolcat_catalog::compile_str("metatool.toml", &out.text)
        .unwrap_or_else(|d| panic!("the import does not compile: {} diagnostics", d.len()));

    let c = Catalog::from_source("metatool.toml", &out.text).expect("loads");
    let gold = GoldNames::new(&c);
    for (name, description) in &corpus {
        let row = gold
            .resolve(name)
            .unwrap_or_else(|| panic!("`{name}` has no row"));
        let t = c.tool(row).expect("a tool");
        assert_eq!(
            c.description(t),
            description.as_str().expect("a string").trim()
        );
        assert_eq!(c.keywords(t).count(), 0, "`{name}` got keywords");
    }
    // The one name outside `[a-zA-Z0-9_-]` is mapped by the charset rule and reported.
    assert_eq!(gold.resolve("PDF&URLTool"), Some("PDF_URLTool"));
    assert_eq!(out.report.renamed.len(), 1);
    assert_eq!(out.report.renamed[0].original, "PDF&URLTool");
    // No schema is invented: every imported row lacks `input_schema`.
    assert!(out
        .catalog
        .tool
        .iter()
        .filter(|t| t.source == "metatool")
        .all(|t| t.input_schema.is_none()));
}

#[test]
fn token_economy_plans_hold_the_core_and_the_hits() {
    require_data!();
    let out = import(ImportKind::LiveMcpBench, &data("livemcpbench/tools.json")).expect("imports");
    let c = Catalog::from_source("livemcpbench.toml", &out.text).expect("loads");
    let queries =
        read_queries(QuerySet::LiveMcpBench, &data("livemcpbench/tasks_dev.json")).expect("reads");
    let chosen = sample(&queries, Some(10));
    let e = token_economy(
        &c,
        chosen.iter().copied(),
        &PlanRule::hits(5),
        ExportFormat::OpenAi,
    )
    .expect("runs");
    assert_eq!(e.all_tools, 527);
    assert_eq!(e.tasks.len() + e.skipped, chosen.len());
    for (t, q) in e.tasks.iter().zip(
        chosen
            .iter()
            .filter(|q| !GoldNames::new(&c).gold(&q.gold).is_empty()),
    ) {
        // The core (4 meta-tools: LiveMCPBench marks no tool inline) plus 5 hits, which
        // require nothing.
        assert_eq!(e.core_tools, 4);
        assert_eq!(t.plan_tools, e.core_tools + 5, "{}", t.query);
        assert!(e.core_tokens < t.plan_tokens && t.plan_tokens < e.all_tokens);
        // A gold tool is in the plan exactly when the search put it in the top 5.
        let top: BTreeSet<String> = c
            .search(&q.text, c.full_profile(), 5)
            .expect("runs")
            .iter()
            .map(|h| c.name(h.tool).to_string())
            .collect();
        for (name, found) in &t.gold {
            assert_eq!(*found, top.contains(name), "`{name}` for {}", t.query);
        }
    }
    assert!(e.saved_percent() > 90.0, "{}", e.saved_percent());
}

#[test]
fn gold_prior_learns_the_tools_training_tasks_share() {
    let list = serde_json::json!({"tools": [
        {"name": "write_file", "description": "Write text to a file", "inputSchema": {"type": "object"}},
        {"name": "get_weather", "description": "Weather forecast for a city", "inputSchema": {"type": "object"}},
        {"name": "get_news", "description": "Latest news headlines", "inputSchema": {"type": "object"}},
    ]})
    .to_string();
    let out = import_mcp_tools_json_str(Path::new("tiny.json"), &list, "tiny").expect("imports");
    let c = Catalog::from_source("tiny.toml", &out.text).expect("loads");
    let q = |gold: &[&str]| Query {
        text: "a task".to_string(),
        gold: names(gold),
    };
    let training = [
        q(&["get_weather", "write_file"]),
        q(&["get_news", "write_file"]),
        q(&["get_news", "write_file", "no_such_tool"]),
        q(&["get_weather"]),
    ];
    let prior = gold_prior(&c, &training, 5);
    let learned: Vec<(&str, usize)> = prior.iter().map(|p| (p.name.as_str(), p.tasks)).collect();
    // most tasks first, ties by name; a name of one task only or of no tool is not learned
    assert_eq!(
        learned,
        [("write_file", 3), ("get_news", 2), ("get_weather", 2)]
    );
    assert_eq!(gold_prior(&c, &training, 1).len(), 1);
    assert!(gold_prior(&c, &training[..1], 5).is_empty());
}

#[test]
fn token_economy_co_selects_carries_the_prior_and_keeps_the_budget() {
    require_data!();
    let out = import(ImportKind::LiveMcpBench, &data("livemcpbench/tools.json")).expect("imports");
    let c = Catalog::from_source("livemcpbench.toml", &out.text).expect("loads");
    let queries =
        read_queries(QuerySet::LiveMcpBench, &data("livemcpbench/tasks_dev.json")).expect("reads");
    // the first 14 tasks are measured, the prior is learned from the other 56
    let (test, training) = queries.split_at(14);
    let prior = gold_prior(&c, training, 1);
    assert_eq!(prior[0].name, "write_file", "{prior:?}");
    let rule = PlanRule {
        hits: 10,
        ranking: Ranking {
            co_select: Some(CoSelect::default()),
        },
        prior: prior.clone(),
        budget_percent: None,
    };
    let e = token_economy(&c, test, &rule, ExportFormat::OpenAi).expect("runs");
    for t in &e.tasks {
        // the core, the prior tool and 10 co-selected hits (the prior tool may be one of them)
        assert!(
            (e.core_tools + 10..=e.core_tools + 11).contains(&t.plan_tools),
            "{}: {}",
            t.query,
            t.plan_tools
        );
        if let Some((_, found)) = t.gold.iter().find(|(g, _)| g == "write_file") {
            assert!(found, "the prior tool is in every plan: {}", t.query);
        }
    }
    for pct in [1.0, 2.0, 5.0] {
        let rule = PlanRule {
            budget_percent: Some(pct),
            ..rule.clone()
        };
        let e = token_economy(&c, test, &rule, ExportFormat::OpenAi).expect("runs");
        let cap = (pct / 100.0 * e.all_tokens as f64).floor() as usize + e.core_tokens;
        for t in &e.tasks {
            assert!(t.plan_tokens <= cap, "{pct}%: {} > {cap}", t.plan_tokens);
            assert!(t.plan_tools > e.core_tools, "{pct}%: no hit fits");
        }
    }
}

fn toolcat(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(args)
        .output()
        .expect("the toolcat binary runs")
}

#[test]
fn eval_command_prints_the_metrics_of_the_library() {
    require_data!();
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = dir.path().join("metatool.toml");
    let corpus = data("metatool/plugin_des.json");
    let o = toolcat(&[
        "import",
        "--from",
        "metatool",
        corpus.to_str().expect("UTF-8 path"),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(&catalog, &o.stdout).expect("writes");
    let o = toolcat(&["check", "--catalog", catalog.to_str().expect("UTF-8")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let queries = data("metatool/multi_queries_dev.json");
    let o = toolcat(&[
        "eval",
        "--catalog",
        catalog.to_str().expect("UTF-8"),
        "--queries",
        queries.to_str().expect("UTF-8"),
        "--format",
        "metatool-multi",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    let c = Catalog::load(&catalog).expect("loads");
    let all = read_queries(QuerySet::MetatoolMulti, &queries).expect("reads");
    assert_eq!(all.len(), 336);
    let e = evaluate(&c, QuerySet::MetatoolMulti, &all, Ranking::default()).expect("runs");
    assert_eq!(v["queries"], 336);
    for (key, value) in [
        ("R@1", e.recall_1),
        ("R@5", e.recall_5),
        ("R@10", e.recall_10),
        ("nDCG@5", e.ndcg_5),
        ("C@5", e.complete_5),
    ] {
        assert_eq!(v[key].as_f64(), Some(value), "{key}");
    }

    // `--folds 5`: the same overall figures, five folds that partition the queries, their mean.
    let folds = |extra: &[&str]| {
        let mut args = vec![
            "eval",
            "--catalog",
            catalog.to_str().expect("UTF-8"),
            "--queries",
            queries.to_str().expect("UTF-8"),
            "--format",
            "metatool-multi",
            "--folds",
            "5",
        ];
        args.extend_from_slice(extra);
        let o = toolcat(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    let cv: serde_json::Value =
        serde_json::from_slice(&folds(&["--json"])).expect("one JSON object");
    assert_eq!(cv["R@5"], v["R@5"]);
    assert_eq!(
        (cv["cv"]["k"].as_u64(), cv["cv"]["seed"].as_u64()),
        (Some(5), Some(21))
    );
    let per_fold = cv["cv"]["folds"].as_array().expect("folds");
    assert_eq!(per_fold.len(), 5);
    let n: u64 = per_fold.iter().filter_map(|f| f["queries"].as_u64()).sum();
    assert_eq!(n, 336);
    for m in METRICS {
        let mean = per_fold.iter().filter_map(|f| f[m].as_f64()).sum::<f64>() / 5.0;
        let shown = cv["cv"]["mean"][m].as_f64().expect("a mean");
        assert!((mean - shown).abs() < 1e-12, "{m}");
        assert!(cv["cv"]["sd"][m].as_f64().is_some_and(|sd| sd > 0.0), "{m}");
    }
    // `--print-folds`: the library's split of the same queries, nothing searched.
    let printed: serde_json::Value =
        serde_json::from_slice(&folds(&["--print-folds", "--seed", "3"])).expect("JSON");
    let expected = fold_assignment(&all, 5, 3).expect("splits");
    assert_eq!(printed["folds"], serde_json::json!(expected));
    assert_eq!(printed["seed"], 3);
    // The table: one row per fold and the mean ± sd row.
    let text = String::from_utf8(folds(&[])).expect("UTF-8");
    assert!(
        text.contains("BM25, 5 folds (seed 21)") && text.contains("mean±sd"),
        "{text}"
    );
    assert_eq!(text.matches(" ± ").count(), METRICS.len(), "{text}");

    // A query file of another format is an error naming the file.
    let o = toolcat(&[
        "eval",
        "--catalog",
        catalog.to_str().expect("UTF-8"),
        "--queries",
        queries.to_str().expect("UTF-8"),
        "--format",
        "livemcpbench",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("multi_queries_dev.json") && err.contains("--format"),
        "{err}"
    );
}

#[test]
fn eval_that_evaluates_nothing_is_an_error_naming_the_cause() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = dir.path().join("tiny.toml");
    let list = serde_json::json!({"tools": [
        {"name": "read_file", "description": "Read a file from disk", "inputSchema": {"type": "object"}},
    ]})
    .to_string();
    let out = import_mcp_tools_json_str(Path::new("tiny.json"), &list, "tiny").expect("imports");
    std::fs::write(&catalog, &out.text).expect("writes");
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("writes");
        p
    };
    let header_only = file("header.csv", "Query,Tool\n");
    let empty_json = file("empty.json", "[]");
    let no_gold = file("nogold.csv", "Query,Tool\nsend a mail,SendMail\n");
    let run = |queries: &Path, format: &str, extra: &[&str]| {
        let mut args = vec![
            "eval",
            "--catalog",
            catalog.to_str().expect("UTF-8"),
            "--queries",
            queries.to_str().expect("UTF-8"),
            "--format",
            format,
        ];
        args.extend_from_slice(extra);
        let o = toolcat(&args);
        assert_eq!(o.status.code(), Some(1), "{o:?}");
        assert!(o.stdout.is_empty(), "{o:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    for (queries, format) in [(&header_only, "metatool"), (&empty_json, "metatool-multi")] {
        let err = run(queries, format, &[]);
        assert!(err.contains("holds no queries"), "{err}");
    }
    for extra in [&[][..], &["--token-economy"][..], &["--json"][..]] {
        let err = run(&no_gold, "metatool", extra);
        assert!(
            err.contains("none of the 1 queries")
                && err.contains("no")
                && err.contains("--catalog")
                && err.contains("--format"),
            "{err}"
        );
    }

    // Each cause once: a missing file, a CSV row with too few fields.
    let err = run(&dir.path().join("missing.csv"), "metatool", &[]);
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
    let short = file("short.csv", "Query,Tool\nhello\n");
    let err = run(&short, "metatool", &[]);
    assert_eq!(
        err.matches("found record with 1 fields").count(),
        1,
        "{err}"
    );
}

/// A catalog of three tools, and tasks whose common tool differs between fold 0 and the rest:
/// fold 0's four tasks all need `get_news`, the three of folds 1 and 2 need `write_file`. Over
/// all tasks `get_news` would be learned first; fold 0's prior must not know it at all.
#[test]
fn the_prior_of_a_fold_never_sees_that_folds_tasks() {
    let list = serde_json::json!({"tools": [
        {"name": "write_file", "description": "Write text to a file", "inputSchema": {"type": "object"}},
        {"name": "get_weather", "description": "Weather forecast for a city", "inputSchema": {"type": "object"}},
        {"name": "get_news", "description": "Latest news headlines", "inputSchema": {"type": "object"}},
    ]})
    .to_string();
    let out = import_mcp_tools_json_str(Path::new("tiny.json"), &list, "tiny").expect("imports");
    let c = Catalog::from_source("tiny.toml", &out.text).expect("loads");
    let q = |text: &str, gold: &[&str]| Query {
        text: text.to_string(),
        gold: names(gold),
    };
    let queries = [
        q("headlines today", &["get_news"]),
        q("news about rust", &["get_news"]),
        q("what happened in Paris", &["get_news"]),
        q("sports news", &["get_news", "get_weather"]),
        q("save the forecast", &["write_file", "get_weather"]),
        q("save a note", &["write_file"]),
        q("weather in Oslo, saved", &["write_file", "get_weather"]),
    ];
    let refs: Vec<&Query> = queries.iter().collect();
    let assignment = [0, 0, 0, 0, 1, 1, 2];
    // the case differs: learned from every task, `get_news` comes first
    assert_eq!(gold_prior(&c, &queries, 1)[0].name, "get_news");
    let held_out_0 = fold_prior(&c, &refs, &assignment, 0, 5);
    let learned: Vec<(&str, usize)> = held_out_0
        .iter()
        .map(|p| (p.name.as_str(), p.tasks))
        .collect();
    assert_eq!(learned, [("write_file", 3), ("get_weather", 2)]);
    // fold 1 learns from folds 0 and 2 only: `write_file` is gold in one task there, not learned
    let held_out_1 = fold_prior(&c, &refs, &assignment, 1, 5);
    let learned: Vec<&str> = held_out_1.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(learned, ["get_news", "get_weather"]);

    // `economy_folds` plans each fold with that fold's prior, and its figures have their shape
    let rule = PlanRule::hits(1);
    let cv =
        economy_folds(&c, &refs, &assignment, 3, &rule, 1, ExportFormat::OpenAi).expect("runs");
    assert_eq!(cv.folds.len(), 3);
    assert_eq!(cv.folds[0].prior, held_out_0[..1]);
    assert_eq!(cv.folds[1].prior, held_out_1[..1]);
    assert_eq!(
        cv.folds.iter().map(|f| f.tasks).collect::<Vec<_>>(),
        [4, 2, 1]
    );
    for f in &cv.folds {
        for v in f.metrics() {
            assert!(v >= 0.0, "{f:?}");
        }
        assert!((0.0..=1.0).contains(&f.all_gold) && (0.0..=1.0).contains(&f.gold_coverage));
        assert!(f.tokens_per_plan > 0.0, "{f:?}");
    }
    for (m, name) in ECONOMY_METRICS.iter().enumerate() {
        let mean = cv.folds.iter().map(|f| f.metrics()[m]).sum::<f64>() / 3.0;
        assert!(close(cv.mean[name], mean), "{name}");
    }
    // an assignment that does not cover the queries is refused
    let err = economy_folds(
        &c,
        &refs,
        &assignment[..6],
        3,
        &rule,
        1,
        ExportFormat::OpenAi,
    )
    .expect_err("refused");
    assert!(matches!(err, EvalError::Folds { .. }), "{err}");
}

/// `toolcat eval --token-economy --folds 5` on LiveMCPBench: the baseline and the rule, five
/// folds each partitioning the 70 tasks, each fold's prior the library's `fold_prior`.
#[test]
fn eval_token_economy_across_folds_prints_baseline_and_rule() {
    require_data!();
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = dir.path().join("livemcpbench.toml");
    let out = import(ImportKind::LiveMcpBench, &data("livemcpbench/tools.json")).expect("imports");
    std::fs::write(&catalog, &out.text).expect("writes");
    let tasks = data("livemcpbench/tasks_dev.json");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "eval",
            "--catalog",
            catalog.to_str().expect("UTF-8"),
            "--queries",
            tasks.to_str().expect("UTF-8"),
            "--format",
            "livemcpbench",
            "--token-economy",
            "--folds",
            "5",
            "--hits",
            "10",
        ];
        args.extend_from_slice(extra);
        toolcat(&args)
    };
    let o = run(&["--co-select", "3", "--prior", "1", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!((v["k"].as_u64(), v["seed"].as_u64()), (Some(5), Some(21)));
    let c = Catalog::load(&catalog).expect("loads");
    let all = read_queries(QuerySet::LiveMcpBench, &tasks).expect("reads");
    let refs: Vec<&Query> = all.iter().collect();
    let assignment = fold_assignment(refs.iter().copied(), 5, 21).expect("splits");
    for (key, prior) in [("baseline", 0), ("rule", 1)] {
        let cv = &v[key];
        assert_eq!(cv["prior"], prior, "{key}");
        let folds = cv["folds"].as_array().expect("folds");
        assert_eq!(folds.len(), 5, "{key}");
        let n: u64 = folds.iter().filter_map(|f| f["tasks"].as_u64()).sum();
        assert_eq!(n, 70, "{key}");
        for (i, f) in folds.iter().enumerate() {
            let expected: Vec<String> = fold_prior(&c, &refs, &assignment, i, prior)
                .into_iter()
                .map(|p| p.name)
                .collect();
            let shown: Vec<&str> = f["prior"]
                .as_array()
                .expect("prior")
                .iter()
                .filter_map(|p| p["name"].as_str())
                .collect();
            assert_eq!(shown, expected, "{key} fold {i}");
        }
        for m in ECONOMY_METRICS {
            let mean = folds.iter().filter_map(|f| f[m].as_f64()).sum::<f64>() / 5.0;
            let shown = cv["mean"][m].as_f64().expect("a mean");
            assert!((mean - shown).abs() < 1e-9, "{key} {m}");
            assert!(cv["sd"][m].as_f64().is_some(), "{key} {m}");
        }
    }
    assert_eq!(v["baseline"]["co_select_seeds"], serde_json::Value::Null);
    assert_eq!(v["rule"]["co_select_seeds"], 3);
    // Without co-selection or a prior there is nothing to compare: no baseline.
    let o = run(&["--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plain: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert!(plain["baseline"].is_null());
    assert_eq!(plain["rule"]["mean"], v["baseline"]["mean"]);
    // The table: before and after, each with five fold rows and a mean ± sd row.
    let o = run(&["--co-select", "3", "--prior", "1"]);
    let text = String::from_utf8(o.stdout).expect("UTF-8");
    assert!(
        text.contains("before:") && text.contains("after:"),
        "{text}"
    );
    assert_eq!(text.matches("mean±sd").count(), 2, "{text}");
    // `--prior` without training tasks is an error naming both fixes.
    let o = toolcat(&[
        "eval",
        "--catalog",
        catalog.to_str().expect("UTF-8"),
        "--queries",
        tasks.to_str().expect("UTF-8"),
        "--format",
        "livemcpbench",
        "--token-economy",
        "--prior",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--prior-from") && err.contains("--folds"),
        "{err}"
    );
}
