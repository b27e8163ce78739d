//! Semantic search: the encoder and the catalog's tool vectors, loaded once and shared, as the
//! [`DenseScorer`] of the runtime's fused search, with a BM25 fallback.
//!
//! A [`SemanticSearch`] is cheap to clone (one [`Arc`]): every clone shares the one loaded model.
//! A query is embedded ([`crate::Encoder::encode_query`]), scored against every tool
//! ([`crate::ToolVectors::cosine_all`]) and ranked by [`Catalog::search_fused_in`].
//! When the query cannot be embedded (the tokenizer fails, the vectors do not fit the catalog,
//! or in async code the encoding outlives its timeout) the search falls back to BM25
//! ([`Catalog::search_in`]) and [`SemanticHits::fallback`] says why.
//!
//! Async callers use [`SemanticSearch::search_in_async`]: the forward pass runs on tokio's
//! blocking pool ([`toolcat::fusion::dense_cosines`]), never on the executor's worker threads,
//! under a timeout ([`toolcat::fusion::DEFAULT_ENCODE_TIMEOUT`]).
//!
//! # Where the model comes from ([`model_dir`])
//! In order: a directory given by the caller (`--model DIR`), then [`MODEL_DIR_ENV`]
//! (`TOOLCAT_MODEL_DIR`), then [`default_model_dir`] when it exists. Nothing is downloaded at run
//! time; with none of them, callers search with BM25 and print [`no_model_notice`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use toolcat::fusion::{
    blocking_cosines, dense_cosines, fused_or_bm25, DenseScorer, DenseWeight, SemanticHits,
};
use toolcat::{Catalog, SearchError};

use crate::{Encoder, SemanticError, ToolVectors};

/// The environment variable naming the model directory: `TOOLCAT_MODEL_DIR`.
pub const MODEL_DIR_ENV: &str = "TOOLCAT_MODEL_DIR";

/// The model directory used when neither a directory nor [`MODEL_DIR_ENV`] is given:
/// `$XDG_DATA_HOME/toolcat/models/all-MiniLM-L6-v2`, else
/// `$HOME/.local/share/toolcat/models/all-MiniLM-L6-v2`; `None` when neither variable is set.
pub fn default_model_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("XDG_DATA_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".local").join("share")))
        .map(|d| d.join("toolcat").join("models").join("all-MiniLM-L6-v2"))
}

/// Where [`model_dir`] found the model directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSource {
    /// Given by the caller (`--model DIR`).
    Given,
    /// [`MODEL_DIR_ENV`].
    Env,
    /// [`default_model_dir`], which exists.
    Default,
}

/// The model directory to load: `given`, else [`MODEL_DIR_ENV`] when set and not empty, else
/// [`default_model_dir`] when it is a directory; `None` when there is none (search then falls
/// back to BM25 with [`no_model_notice`]). The directory is not checked beyond that:
/// [`crate::Encoder::load`] names what is missing.
pub fn model_dir(given: Option<&Path>) -> Option<(PathBuf, ModelSource)> {
    if let Some(d) = given {
        return Some((d.to_path_buf(), ModelSource::Given));
    }
    if let Some(d) = std::env::var_os(MODEL_DIR_ENV).filter(|v| !v.is_empty()) {
        return Some((PathBuf::from(d), ModelSource::Env));
    }
    default_model_dir()
        .filter(|d| d.is_dir())
        .map(|d| (d, ModelSource::Default))
}

/// The one-line notice of a semantic search that has no model: what was looked for and how to
/// configure one.
pub fn no_model_notice() -> String {
    let default = default_model_dir().map_or_else(
        || "no default directory".to_string(),
        |d| format!("nothing at `{}`", d.display()),
    );
    format!(
        "semantic search: no model configured (no --model, no {MODEL_DIR_ENV}, {default}); using BM25 — set {MODEL_DIR_ENV} or pass --model DIR"
    )
}

struct Shared {
    encoder: Encoder,
    vectors: ToolVectors,
}

/// An encoder and the tool vectors of one catalog, shared by every clone (see the module docs).
#[derive(Clone)]
pub struct SemanticSearch {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SemanticSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticSearch")
            .field("model_id", &self.shared.encoder.model_id())
            .field("tools", &self.shared.vectors.len())
            .finish()
    }
}

impl SemanticSearch {
    /// Shares `encoder` and `vectors` (one per tool of the catalog searched, catalog order).
    pub fn new(encoder: Encoder, vectors: ToolVectors) -> SemanticSearch {
        SemanticSearch {
            shared: Arc::new(Shared { encoder, vectors }),
        }
    }

    /// Loads the model in `dir` and the vectors of `catalog`'s tools
    /// ([`ToolVectors::for_catalog`], cached in `cache_dir` when given).
    ///
    /// # Errors
    /// What [`Encoder::load`] or [`ToolVectors::for_catalog`] returns.
    pub fn load(
        catalog: &Catalog,
        dir: &Path,
        cache_dir: Option<&Path>,
    ) -> Result<SemanticSearch, SemanticError> {
        let encoder = Encoder::load(dir)?;
        let vectors = ToolVectors::for_catalog(catalog, &encoder, cache_dir)?;
        Ok(SemanticSearch::new(encoder, vectors))
    }

    /// The encoder.
    pub fn encoder(&self) -> &Encoder {
        &self.shared.encoder
    }

    /// The tool vectors.
    pub fn vectors(&self) -> &ToolVectors {
        &self.shared.vectors
    }

    /// The cosine of `query`'s embedding with every tool (catalog order).
    ///
    /// # Errors
    /// [`SemanticError::Tokenize`] when the query cannot be tokenized, [`SemanticError::NoWords`]
    /// when it holds no word the model knows ([`crate::Encoder::encode_query`]).
    pub fn cosines(&self, query: &str) -> Result<Vec<f32>, SemanticError> {
        let q = self.shared.encoder.encode_query(query)?;
        Ok(self.shared.vectors.cosine_all(&q))
    }

    /// The best `limit` tools of `allowed` for `query` by [`Catalog::search_fused_in`] with
    /// `weight`; BM25 ([`Catalog::search_in`]) with [`SemanticHits::fallback`] set when the query
    /// cannot be embedded or the vectors do not fit the catalog. Runs the encoder on the calling
    /// thread: async code uses [`SemanticSearch::search_in_async`].
    ///
    /// # Errors
    /// Only on an internal tantivy error.
    pub fn search_in(
        &self,
        catalog: &Catalog,
        query: &str,
        allowed: &[u64],
        limit: usize,
        weight: DenseWeight,
    ) -> Result<SemanticHits, SearchError> {
        let dense = blocking_cosines(self, catalog, query);
        fused_or_bm25(catalog, query, allowed, limit, weight, dense)
    }

    /// [`SemanticSearch::search_in`] for async code: the query is embedded on tokio's blocking
    /// pool under `timeout` ([`dense_cosines`]); past it (or when the blocking task fails) the
    /// search falls back to BM25 and says so. Needs a tokio runtime.
    ///
    /// # Errors
    /// Only on an internal tantivy error.
    pub async fn search_in_async(
        &self,
        catalog: &Catalog,
        query: &str,
        allowed: &[u64],
        limit: usize,
        weight: DenseWeight,
        timeout: Duration,
    ) -> Result<SemanticHits, SearchError> {
        let scorer: Arc<dyn DenseScorer> = Arc::new(self.clone());
        let dense = dense_cosines(&scorer, catalog, query, timeout).await;
        fused_or_bm25(catalog, query, allowed, limit, weight, dense)
    }
}

/// One cosine per vector of [`SemanticSearch::vectors`]; [`SemanticSearch::cosines`]'s errors.
impl DenseScorer for SemanticSearch {
    fn tools(&self) -> usize {
        self.shared.vectors.len()
    }

    fn cosines(&self, query: &str) -> Result<Vec<f32>, Box<dyn std::error::Error + Send + Sync>> {
        SemanticSearch::cosines(self, query).map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::sync::OnceLock;
    use toolcat::fusion::DEFAULT_ENCODE_TIMEOUT;
    use toolcat::{HitKind, Session, ToolContext, ToolsetId};

    /// A small catalog: the discovery meta-tools, file tools and git tools.
    const CATALOG: &str = r#"
[toolset.discovery]
description = "Finding and calling tools that are not shown inline"
[toolset.files]
description = "Files of the workspace"
[toolset.git]
description = "The git repository"

[[tool]]
name = "tool_search"
description = "Search the catalog for tools by what they do."
visibility = "inline"
tier = "loop"
effect = "read"
exposure = "excluded"
toolsets = ["discovery"]
owner = "toolcat"
source = "loop"

[[tool]]
name = "tool_describe"
description = "Show the full definition of a tool by name."
visibility = "inline"
tier = "loop"
effect = "read"
exposure = "excluded"
toolsets = ["discovery"]
owner = "toolcat"
source = "loop"

[[tool]]
name = "tool_call"
description = "Call a discovered tool by name with JSON arguments."
visibility = "inline"
tier = "loop"
effect = "read"
exposure = "excluded"
toolsets = ["discovery"]
owner = "toolcat"
source = "loop"

[[tool]]
name = "read_file"
description = "Read the contents of a file in the workspace."
keywords = ["open", "cat", "view"]
visibility = "inline"
tier = "silent"
effect = "read"
idempotent = true
exposure = "read-only"
toolsets = ["files"]
owner = "tests"

[[tool]]
name = "list_dir"
description = "List the entries of a directory."
keywords = ["ls", "folder"]
visibility = "inline"
tier = "silent"
effect = "read"
idempotent = true
exposure = "read-only"
toolsets = ["files"]
owner = "tests"

[[tool]]
name = "write_file"
description = "Create or overwrite a file with new contents."
keywords = ["save", "edit"]
visibility = "inline"
tier = "gated"
effect = "write"
exposure = "staging"
toolsets = ["files"]
owner = "tests"

[[tool]]
name = "delete_file"
description = "Delete a file from the workspace."
keywords = ["remove", "rm"]
visibility = "discoverable"
tier = "gated"
effect = "destructive"
exposure = "full"
toolsets = ["files"]
owner = "tests"

[[tool]]
name = "search_text"
description = "Search file contents for a regular expression."
keywords = ["grep", "find text", "ripgrep"]
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["files"]
owner = "tests"

[[tool]]
name = "git_status"
description = "Show the working tree status of the repository."
keywords = ["changes"]
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["git"]
owner = "tests"

[[tool]]
name = "git_diff"
description = "Show changes between the working tree and the index."
keywords = ["patch", "difference"]
visibility = "discoverable"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["git"]
owner = "tests"

[[tool]]
name = "git_commit"
description = "Record staged changes as a new commit."
keywords = ["save changes", "snapshot"]
visibility = "discoverable"
tier = "gated"
effect = "write"
exposure = "staging"
toolsets = ["git"]
owner = "tests"
"#;

    fn catalog() -> Catalog {
        Catalog::from_source("tools.toml", CATALOG).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The model folder: `TOOLCAT_MODEL_DIR`, else target/models/all-MiniLM-L6-v2, unpacked by
    /// semantic/tests/model/fetch when missing.
    fn encoder() -> Encoder {
        static DIR: OnceLock<PathBuf> = OnceLock::new();
        let dir = DIR.get_or_init(|| {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let dir = std::env::var_os(MODEL_DIR_ENV)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("../target/models/all-MiniLM-L6-v2"));
            if !dir.join("model.safetensors").is_file() {
                let status = std::process::Command::new("bash")
                    .arg(root.join("tests/model/fetch"))
                    .env(MODEL_DIR_ENV, &dir)
                    .status()
                    .expect("bash runs");
                assert!(status.success(), "the model fetch script failed");
            }
            dir
        });
        Encoder::load(dir).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The model with the tool vectors of `c`.
    fn fused_search(c: &Catalog) -> SemanticSearch {
        let enc = encoder();
        let vectors = ToolVectors::for_catalog(c, &enc, None).expect("encodes");
        SemanticSearch::new(enc, vectors)
    }

    fn session<'c>(c: &'c Catalog, semantic: SemanticSearch) -> Session<'c> {
        let sets: Vec<ToolsetId> = c.toolsets().collect();
        Session::new(c, c.full_profile(), sets, ToolContext::new("."))
            .without_preselection()
            .with_semantic(Arc::new(semantic))
    }

    #[test]
    fn the_test_catalog_compiles() {
        assert_eq!(catalog().len(), 11);
    }

    #[tokio::test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    async fn fused_search_and_its_bm25_fallbacks_say_why() {
        let c = catalog();
        let semantic = fused_search(&c);
        let all = c.profile_tools(c.full_profile());
        let q = "remove a file from the disk";
        let found = semantic
            .search_in(&c, q, all, 3, DenseWeight::default())
            .expect("runs");
        assert_eq!(found.fallback, None);
        assert!(found.hits.iter().all(|h| h.kind == HitKind::Fused));
        assert_eq!(c.name(found.hits[0].tool), "delete_file");
        // The same through the blocking pool.
        let fused = semantic
            .search_in_async(
                &c,
                q,
                all,
                3,
                DenseWeight::default(),
                DEFAULT_ENCODE_TIMEOUT,
            )
            .await
            .expect("runs");
        assert_eq!(fused, found);
        // Vectors of another catalog: BM25, and the reason.
        let enc = encoder();
        let other = ToolVectors::for_texts(&["one tool", "another"], &enc, None).expect("encodes");
        let misfit = SemanticSearch::new(enc, other);
        let found = misfit
            .search_in(&c, q, all, 3, DenseWeight::default())
            .expect("runs");
        assert_eq!(found.hits, c.search_in(q, all, 3).expect("runs"));
        assert_eq!(
            found.fallback,
            Some(format!(
                "semantic search: the tool vectors hold 2 tools, the catalog {}; using BM25",
                c.len()
            ))
        );
    }

    /// An encoding that does not finish within the timeout (here: queued behind a busy
    /// blocking pool of one thread) gives BM25 hits and the reason.
    #[test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    fn a_query_not_embedded_in_time_falls_back_to_bm25() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .max_blocking_threads(1)
            .build()
            .expect("a runtime");
        let c = catalog();
        let semantic = fused_search(&c);
        let all = c.profile_tools(c.full_profile());
        let q = "remove a file from the disk";
        let late = rt.block_on(async {
            let busy = tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_secs(2)));
            let late = semantic
                .search_in_async(
                    &c,
                    q,
                    all,
                    3,
                    DenseWeight::default(),
                    Duration::from_millis(50),
                )
                .await
                .expect("runs");
            busy.await.expect("the busy task ends");
            late
        });
        assert_eq!(late.hits, c.search_in(q, all, 3).expect("runs"));
        assert_eq!(
            late.fallback.as_deref(),
            Some("semantic search: encoding the query took over 50 ms; using BM25")
        );
    }

    #[tokio::test]
    #[ignore = "needs the model: semantic/tests/model/fetch, or TOOLCAT_MODEL_DIR"]
    async fn tool_search_fuses_in_a_session_and_notes_a_fallback() {
        let c = catalog();
        let mut s = session(&c, fused_search(&c));
        s.begin_turn("tidy up the workspace").await;
        let r = s
            .handle_call(
                "tool_search",
                json!({"query": "remove a file from the disk"}),
            )
            .await;
        let v: Value = serde_json::from_str(&r.text).expect("JSON");
        assert_eq!(v["tools"][0]["name"], "delete_file", "{v}");
        assert!(v.get("notice").is_none(), "{v}");

        let enc = encoder();
        let other = ToolVectors::for_texts(&["one tool"], &enc, None).expect("encodes");
        let mut s = session(&c, SemanticSearch::new(enc, other));
        s.begin_turn("tidy up the workspace").await;
        let r = s
            .handle_call("tool_search", json!({"query": "remove a file"}))
            .await;
        let v: Value = serde_json::from_str(&r.text).expect("JSON");
        assert!(v["tools"].as_array().is_some_and(|t| !t.is_empty()), "{v}");
        assert_eq!(
            v["notice"],
            format!(
                "semantic search: the tool vectors hold 1 tools, the catalog {}; using BM25",
                c.len()
            ),
            "{v}"
        );
    }
}
