//! The dense side of fusion behind a trait: [`DenseScorer`] gives the cosines, the runtime runs it
//! (on tokio's blocking pool, under a timeout) and falls back to BM25 when there are none.

use std::sync::Arc;
use std::time::Duration;

use super::DenseWeight;
use crate::catalog::Catalog;
use crate::error::SearchError;
use crate::search::Hit;

/// How long async searches wait for a query's embedding before falling back to BM25: 2 s (a
/// query takes milliseconds; this bounds a stalled or starved blocking pool).
pub const DEFAULT_ENCODE_TIMEOUT: Duration = Duration::from_secs(2);

/// Cosines between a query and the tools of one catalog: the dense side of fusion.
///
/// `toolcat_semantic::SemanticSearch` implements it with a local sentence-embedding model and
/// the catalog's tool vectors. A session holds one as `Arc<dyn DenseScorer>`
/// ([`crate::session::Session::with_semantic`]).
pub trait DenseScorer: std::fmt::Debug + Send + Sync {
    /// How many tools the scorer holds a vector for: the length of every
    /// [`DenseScorer::cosines`] answer. The scorer fits a catalog whose `len()` this is; for
    /// any other, searches fall back to BM25 ([`blocking_cosines`], [`dense_cosines`]).
    fn tools(&self) -> usize;

    /// The cosine between `query`'s embedding and each tool's, in tool index order
    /// ([`DenseScorer::tools`] values, each in -1..=1). Blocking and CPU-bound: async code calls
    /// it through [`dense_cosines`].
    ///
    /// # Errors
    /// Why `query` has no embedding (it cannot be tokenized, it holds no word the model knows);
    /// searches then fall back to BM25 with `semantic search: {error}; using BM25`.
    fn cosines(&self, query: &str) -> Result<Vec<f32>, Box<dyn std::error::Error + Send + Sync>>;
}

/// Why `scorer` cannot score `catalog`'s tools, if it cannot.
fn misfit(scorer: &dyn DenseScorer, catalog: &Catalog) -> Option<String> {
    let n = scorer.tools();
    (n != catalog.len()).then(|| {
        format!(
            "semantic search: the tool vectors hold {n} tools, the catalog {}; using BM25",
            catalog.len()
        )
    })
}

/// The cosines of `query` with every tool of `catalog`, computed on the calling thread, or the
/// one-line reason they are not there (the scorer does not fit the catalog, the query cannot be
/// embedded), starting `semantic search:` and ending `using BM25`.
pub fn blocking_cosines(
    scorer: &dyn DenseScorer,
    catalog: &Catalog,
    query: &str,
) -> Result<Vec<f32>, String> {
    if let Some(why) = misfit(scorer, catalog) {
        return Err(why);
    }
    scorer
        .cosines(query)
        .map_err(|e| format!("semantic search: {e}; using BM25"))
}

/// [`blocking_cosines`] for async code: computed on tokio's blocking pool under `timeout`; past
/// it (or when the blocking task fails) the reason says so. Needs a tokio runtime.
pub async fn dense_cosines(
    scorer: &Arc<dyn DenseScorer>,
    catalog: &Catalog,
    query: &str,
    timeout: Duration,
) -> Result<Vec<f32>, String> {
    if let Some(why) = misfit(scorer.as_ref(), catalog) {
        return Err(why);
    }
    let scorer = Arc::clone(scorer);
    let text = query.to_string();
    let task = tokio::task::spawn_blocking(move || scorer.cosines(&text));
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

/// The best `limit` tools of `allowed` for `query`: by [`Catalog::search_fused_in`] with
/// `weight` when `dense` holds the cosines, else by BM25 ([`Catalog::search_in`]) with
/// [`SemanticHits::fallback`] set to the reason.
///
/// # Errors
/// Only on an internal tantivy error.
pub fn fused_or_bm25(
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

/// The preselector of a session with a scorer ([`crate::session::Session::with_semantic`]): the
/// fused search of the user's message among the request's candidates, embedded on tokio's
/// blocking pool under [`DEFAULT_ENCODE_TIMEOUT`]; BM25 when the message cannot be embedded.
///
/// Keeps at most [`FusedPreselector::limit`] hits, and only those scoring at least
/// [`FusedPreselector::relative_floor`] × the best hit's score, as
/// [`crate::preselect::Bm25Preselector`] does.
#[derive(Debug, Clone)]
pub struct FusedPreselector {
    /// The cosines of the catalog's tools (a model and the catalog's tool vectors).
    pub scorer: Arc<dyn DenseScorer>,
    /// The dense weight of the fusion.
    pub weight: DenseWeight,
    /// Most hits returned: 3.
    pub limit: usize,
    /// Fraction of the best score a hit needs: 0.5.
    pub relative_floor: f32,
}

impl FusedPreselector {
    /// A preselector over `scorer` with `weight`, keeping at most 3 hits scoring at least half
    /// the best.
    pub fn new(scorer: Arc<dyn DenseScorer>, weight: DenseWeight) -> FusedPreselector {
        FusedPreselector {
            scorer,
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
            let dense = dense_cosines(
                &self.scorer,
                catalog,
                request.message,
                DEFAULT_ENCODE_TIMEOUT,
            )
            .await;
            let found = fused_or_bm25(
                catalog,
                request.message,
                &candidates,
                self.limit,
                self.weight,
                dense,
            )
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
