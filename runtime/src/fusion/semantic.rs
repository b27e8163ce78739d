//! Semantic search (feature `semantic`): the encoder and the catalog's tool vectors, loaded once
//! and shared, and fused search with a BM25 fallback.
//!
//! A [`SemanticSearch`] is cheap to clone (one [`Arc`]): every clone shares the one loaded model.
//! A query is embedded ([`crate::semantic::Encoder::encode_one`]), scored against every tool
//! ([`crate::semantic::ToolVectors::cosine_all`]) and ranked by [`Catalog::search_fused_in`].
//! When the query cannot be embedded (the tokenizer fails, the vectors do not fit the catalog,
//! or in async code the encoding outlives its timeout) the search falls back to BM25
//! ([`Catalog::search_in`]) and [`SemanticHits::fallback`] says why.
//!
//! Async callers use [`SemanticSearch::search_in_async`]: the forward pass runs on tokio's
//! blocking pool (`spawn_blocking`), never on the executor's worker threads, under a timeout
//! ([`DEFAULT_ENCODE_TIMEOUT`]).
//!
//! # Where the model comes from ([`model_dir`])
//! In order: a directory given by the caller (`--model DIR`), then [`MODEL_DIR_ENV`]
//! (`TOOLCAT_MODEL_DIR`), then [`default_model_dir`] when it exists. Nothing is downloaded at run
//! time; with none of them, callers search with BM25 and print [`no_model_notice`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::DenseWeight;
use crate::catalog::Catalog;
use crate::error::SearchError;
use crate::search::Hit;
use crate::semantic::{Encoder, SemanticError, ToolVectors};

/// The environment variable naming the model directory: `TOOLCAT_MODEL_DIR`.
pub const MODEL_DIR_ENV: &str = "TOOLCAT_MODEL_DIR";

/// How long async searches wait for a query's embedding before falling back to BM25: 2 s (a
/// query takes milliseconds; this bounds a stalled or starved blocking pool).
pub const DEFAULT_ENCODE_TIMEOUT: Duration = Duration::from_secs(2);

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
/// [`crate::semantic::Encoder::load`] names what is missing.
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

/// Hits of a semantic search, and why it fell back to BM25 if it did.
#[derive(Debug, Clone, PartialEq)]
pub struct SemanticHits {
    /// Best first: exact-name hits, then fused hits ([`crate::search::HitKind::Fused`]), or
    /// BM25 hits when it fell back.
    pub hits: Vec<Hit>,
    /// `None` for a fused search; otherwise a one-line reason, starting `semantic search:` and
    /// ending `using BM25`.
    pub fallback: Option<String>,
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
    /// when it holds no word the model knows ([`crate::semantic::Encoder::encode_query`]).
    pub fn cosines(&self, query: &str) -> Result<Vec<f32>, SemanticError> {
        let q = self.shared.encoder.encode_query(query)?;
        Ok(self.shared.vectors.cosine_all(&q))
    }

    /// Why these vectors cannot score `catalog`'s tools, if they cannot.
    fn misfit(&self, catalog: &Catalog) -> Option<String> {
        let n = self.shared.vectors.len();
        (n != catalog.len()).then(|| {
            format!(
                "semantic search: the tool vectors hold {n} tools, the catalog {}; using BM25",
                catalog.len()
            )
        })
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
        let dense = match self.misfit(catalog) {
            Some(why) => Err(why),
            None => self
                .cosines(query)
                .map_err(|e| format!("semantic search: {e}; using BM25")),
        };
        finish(catalog, query, allowed, limit, weight, dense)
    }

    /// [`SemanticSearch::search_in`] for async code: the query is embedded on tokio's blocking
    /// pool under `timeout`; past it (or when the blocking task fails) the search falls back to
    /// BM25 and says so. Needs a tokio runtime.
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
        let dense = self.cosines_async(catalog, query, timeout).await;
        finish(catalog, query, allowed, limit, weight, dense)
    }

    /// The cosines of `query` with every tool of `catalog`, computed on tokio's blocking pool
    /// under `timeout`, or the one-line reason they are not there (the vectors do not fit the
    /// catalog, the query cannot be tokenized, the timeout passed).
    pub async fn cosines_async(
        &self,
        catalog: &Catalog,
        query: &str,
        timeout: Duration,
    ) -> Result<Vec<f32>, String> {
        if let Some(why) = self.misfit(catalog) {
            return Err(why);
        }
        let this = self.clone();
        let text = query.to_string();
        let task = tokio::task::spawn_blocking(move || this.cosines(&text));
        match tokio::time::timeout(timeout, task).await {
            Ok(Ok(Ok(dense))) => Ok(dense),
            Ok(Ok(Err(e))) => Err(format!("semantic search: {e}; using BM25")),
            Ok(Err(e)) => Err(format!(
                "semantic search: encoding the query stopped ({e}); using BM25"
            )),
            Err(_) => Err(format!(
                "semantic search: encoding the query took over {} ms; using BM25",
                timeout.as_millis()
            )),
        }
    }
}

/// Fused hits from `dense`, or BM25 hits with the reason when there are no cosines.
fn finish(
    catalog: &Catalog,
    query: &str,
    allowed: &[u64],
    limit: usize,
    weight: DenseWeight,
    dense: Result<Vec<f32>, String>,
) -> Result<SemanticHits, SearchError> {
    match dense {
        Ok(dense) => Ok(SemanticHits {
            hits: catalog.search_fused_in(query, allowed, limit, &dense, weight)?,
            fallback: None,
        }),
        Err(why) => Ok(SemanticHits {
            hits: catalog.search_in(query, allowed, limit)?,
            fallback: Some(why),
        }),
    }
}

/// The preselector of a session with a model ([`crate::session::Session::with_semantic`]): the
/// fused search of the user's message among the request's candidates, embedded on tokio's
/// blocking pool under [`DEFAULT_ENCODE_TIMEOUT`]; BM25 when the message cannot be embedded.
///
/// Keeps at most [`FusedPreselector::limit`] hits, and only those scoring at least
/// [`FusedPreselector::relative_floor`] × the best hit's score, as
/// [`crate::preselect::Bm25Preselector`] does.
#[derive(Debug, Clone)]
pub struct FusedPreselector {
    /// The model and the catalog's tool vectors.
    pub search: SemanticSearch,
    /// The dense weight of the fusion.
    pub weight: DenseWeight,
    /// Most hits returned: 3.
    pub limit: usize,
    /// Fraction of the best score a hit needs: 0.5.
    pub relative_floor: f32,
}

impl FusedPreselector {
    /// A preselector over `search` with `weight`, keeping at most 3 hits scoring at least half
    /// the best.
    pub fn new(search: SemanticSearch, weight: DenseWeight) -> FusedPreselector {
        FusedPreselector {
            search,
            weight,
            limit: 3,
            relative_floor: 0.5,
        }
    }
}

impl crate::preselect::Preselector for FusedPreselector {
    fn preselect<'a>(
        &'a self,
        request: &'a crate::preselect::PreselectRequest<'a>,
    ) -> crate::handler::BoxFuture<'a, Result<Vec<String>, crate::preselect::PreselectError>> {
        Box::pin(async move {
            let catalog = request.catalog;
            let mut candidates = vec![0u64; catalog.words()];
            for t in request.candidates() {
                candidates[t.index() / 64] |= 1 << (t.index() % 64);
            }
            let found = self
                .search
                .search_in_async(
                    catalog,
                    request.message,
                    &candidates,
                    self.limit,
                    self.weight,
                    DEFAULT_ENCODE_TIMEOUT,
                )
                .await
                .map_err(|e| crate::preselect::PreselectError(format!("search failed: {e}")))?;
            let floor = found
                .hits
                .first()
                .map_or(0.0, |h| h.score * self.relative_floor);
            Ok(found
                .hits
                .iter()
                .filter(|h| h.score >= floor)
                .map(|h| catalog.exported_name(h.tool).to_string())
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ToolsetId;
    use crate::fixture;
    use crate::search::HitKind;
    use crate::session::Session;
    use crate::ToolContext;
    use serde_json::{json, Value};
    use std::sync::OnceLock;

    /// The model folder: `TOOLCAT_MODEL_DIR`, else target/models/all-MiniLM-L6-v2, unpacked by
    /// runtime/tests/model/fetch when missing.
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
            .with_semantic(semantic)
    }

    #[tokio::test]
    async fn fused_search_and_its_bm25_fallbacks_say_why() {
        let c = fixture::catalog();
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
    fn a_query_not_embedded_in_time_falls_back_to_bm25() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .max_blocking_threads(1)
            .build()
            .expect("a runtime");
        let c = fixture::catalog();
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
    async fn tool_search_fuses_in_a_session_and_notes_a_fallback() {
        let c = fixture::catalog();
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
