//! Fusion of BM25 with the cosine of sentence embeddings: the ranking of semantic search.
//!
//! For one query and a set of candidate tools, each tool has a BM25 score (its score when it is
//! among the [`LEXICAL_DEPTH`] best BM25 matches of the query, else 0) and a dense score (the cosine between the query's embedding and the tool's). Each
//! list is min–max rescaled over the candidates, then summed with the dense weight `w`:
//!
//! ```text
//! fused(t) = w · minmax(dense)(t) + (1 − w) · minmax(bm25)(t)
//! minmax(x)(t) = (x(t) − min x) / (max x − min x), or 0 for every t when max x = min x
//! ```
//!
//! so a list whose scores are all equal (a query no BM25 term matches) contributes nothing. Tools
//! are ranked by the fused score, best first; equal scores keep catalog order. `w` = 0 ranks as
//! BM25 does (ties aside: tools no term matches follow in catalog order), `w` = 1 as the cosine
//! does. The default weight, [`DEFAULT_DENSE_WEIGHT`] (0.7), is the one the reference measurement
//! script fixes (`../shared/bench/peer_dense.py`, "sum w_dense=0.7").
//!
//! [`Catalog::search_fused_in`] applies this after the exact-name step of
//! [`Catalog::search_in`]: exact-name matches still come first, deprecated tools and meta-tools
//! are never ranked, and the candidates are the tools of the allowed set that are left.
//!
//! # Where the cosines come from ([`DenseScorer`])
//! The runtime holds no model: a [`DenseScorer`] gives the cosine between a query's embedding and
//! every tool's (`toolcat_semantic::SemanticSearch` is one: a local sentence-embedding model and
//! the catalog's tool vectors). [`dense_cosines`] runs a scorer on tokio's blocking pool under a
//! timeout ([`DEFAULT_ENCODE_TIMEOUT`]), [`fused_or_bm25`] ranks with those cosines or falls back
//! to BM25 saying why, and [`FusedPreselector`] is the preselector of a session given a scorer
//! ([`crate::session::Session::with_semantic`]).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use crate::catalog::{Catalog, ProfileId, ToolIndex};
use crate::error::SearchError;
use crate::search::{Hit, HitKind};

mod dense;

pub use dense::{
    blocking_cosines, dense_cosines, fused_or_bm25, DenseScorer, FusedPreselector, SemanticHits,
    DEFAULT_ENCODE_TIMEOUT,
};

/// The dense weight used when none is configured: 0.7.
pub const DEFAULT_DENSE_WEIGHT: f32 = 0.7;

/// The weight of the dense (embedding) side of fusion: a number from 0 to 1 (see the module
/// docs); 0 ranks by BM25 alone, 1 by the cosine alone.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct DenseWeight(f32);

/// A dense weight that is not a number from 0 to 1.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("dense weight `{0}` is not a number from 0 to 1; pass e.g. 0.7 (0 = BM25 only, 1 = embeddings only)")]
pub struct DenseWeightError(pub String);

impl DenseWeight {
    /// `w` as a dense weight.
    ///
    /// # Errors
    /// [`DenseWeightError`] when `w` is not finite or outside 0..=1.
    pub fn new(w: f64) -> Result<DenseWeight, DenseWeightError> {
        if w.is_finite() && (0.0..=1.0).contains(&w) {
            Ok(DenseWeight(w as f32))
        } else {
            Err(DenseWeightError(w.to_string()))
        }
    }

    /// The weight, 0..=1.
    pub fn get(self) -> f32 {
        self.0
    }
}

// A weight is finite by construction ([`DenseWeight::new`]), so equality is total.
impl Eq for DenseWeight {}

impl Default for DenseWeight {
    fn default() -> Self {
        DenseWeight(DEFAULT_DENSE_WEIGHT)
    }
}

impl fmt::Display for DenseWeight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for DenseWeight {
    type Err = DenseWeightError;

    /// Parses a decimal number from 0 to 1 (`0.7`, `1`, `0`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.trim()
            .parse::<f64>()
            .map_err(|_| DenseWeightError(s.to_string()))
            .and_then(DenseWeight::new)
    }
}

/// How many of the best BM25 matches of a query keep their score in a fusion; the other
/// candidates count 0 on the BM25 side, so only the embeddings order them. This is hybrid search
/// as two retrievers whose result lists are merged: BM25 contributes its best 10, the embeddings
/// score every candidate. A long query (a task of several sentences) matches most tools of a
/// large catalog on some common word; those weak matches add noise rather than evidence.
///
/// Chosen on held-out folds (`bench/tune --semantic --rules lexical_depth`, 5 folds of the three
/// dev sets, MetaTool single-tool on its `--limit 500` sample, dense weight 0.7): the training
/// folds chose 10 of {10, 20, 50, every candidate} every time; held-out gain over every candidate
/// +0.006 ± 0.008 (se 0.004) of the mean of R@5 and nDCG@5 — LiveMCPBench +0.019, MetaTool
/// two-tool +0.005, MetaTool single-tool −0.007 (BENCHMARKS.md, "Cross-validated ranking
/// choices").
pub const LEXICAL_DEPTH: usize = 10;

/// `scores` rescaled to 0..=1 by their minimum and maximum; all zeros when every score is equal
/// (or there are none). NaN scores count as the minimum.
pub fn min_max(scores: &[f32]) -> Vec<f64> {
    let finite = scores.iter().copied().filter(|s| !s.is_nan());
    let lo = finite
        .clone()
        .fold(f64::INFINITY, |m, s| m.min(f64::from(s)));
    let hi = finite.fold(f64::NEG_INFINITY, |m, s| m.max(f64::from(s)));
    if hi <= lo || !(hi - lo).is_finite() {
        return vec![0.0; scores.len()];
    }
    scores
        .iter()
        .map(|&s| {
            if s.is_nan() {
                0.0
            } else {
                (f64::from(s) - lo) / (hi - lo)
            }
        })
        .collect()
}

/// The fused scores of candidates whose BM25 scores are `bm25` and whose cosines are `dense`
/// (the same candidates in the same order): `w · minmax(dense) + (1 − w) · minmax(bm25)`, each
/// in 0..=1. A candidate missing from the shorter list counts as that list's minimum.
pub fn fuse(bm25: &[f32], dense: &[f32], weight: DenseWeight) -> Vec<f64> {
    let n = bm25.len().max(dense.len());
    let (b, d) = (min_max(bm25), min_max(dense));
    let w = f64::from(weight.get());
    (0..n)
        .map(|i| {
            w * d.get(i).copied().unwrap_or(0.0) + (1.0 - w) * b.get(i).copied().unwrap_or(0.0)
        })
        .collect()
}

/// Positions of `scores`, best first; equal scores keep their order (a stable sort), NaN last.
pub fn rank(scores: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (scores[a], scores[b]);
        match (x.is_nan(), y.is_nan()) {
            (false, false) => y.partial_cmp(&x).unwrap_or(Ordering::Equal),
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (true, true) => Ordering::Equal,
        }
    });
    order
}

impl Catalog {
    /// [`Catalog::search_fused_in`] over the tools of `profile`.
    ///
    /// # Errors
    /// Only on an internal tantivy error.
    pub fn search_fused(
        &self,
        query: &str,
        profile: ProfileId,
        limit: usize,
        dense: &[f32],
        weight: DenseWeight,
    ) -> Result<Vec<Hit>, SearchError> {
        self.search_fused_in(query, self.profile_tools(profile), limit, dense, weight)
    }

    /// The best `limit` tools of `allowed` for `query`, ranked by BM25 fused with embeddings:
    /// exact-name matches first (as [`Catalog::search_in`]), then the other candidates (allowed,
    /// not deprecated, not meta-tools) by their fused score ([`fuse`] with `weight`, min–max over
    /// those candidates), best first, equal scores in catalog order. Fused hits have kind
    /// [`HitKind::Fused`] and their fused score in 0..=1.
    ///
    /// `dense[i]` is the cosine between the query's embedding and tool `i`'s (tool index order,
    /// one per tool of the catalog); a tool past its end counts as the lowest cosine. The BM25 side
    /// is the score of the [`LEXICAL_DEPTH`] best BM25 matches among the candidates, 0 for the
    /// others.
    ///
    /// # Errors
    /// Only on an internal tantivy error.
    pub fn search_fused_in(
        &self,
        query: &str,
        allowed: &[u64],
        limit: usize,
        dense: &[f32],
        weight: DenseWeight,
    ) -> Result<Vec<Hit>, SearchError> {
        let (mut hits, candidates) = self.name_step(query, allowed, limit);
        let rest = limit - hits.len();
        if rest == 0 {
            return Ok(hits);
        }
        let tools: Vec<ToolIndex> = self
            .tools()
            .filter(|t| toolcat_catalog::tables::bit(&candidates, t.index()))
            .collect();
        if tools.is_empty() {
            return Ok(hits);
        }
        // Position of each tool among the candidates, for the BM25 scores tantivy returns.
        let mut position = vec![usize::MAX; self.len()];
        for (k, t) in tools.iter().enumerate() {
            position[t.index()] = k;
        }
        let mut bm25 = vec![0.0f32; tools.len()];
        let depth = match toolcat_catalog::index::__tuning::current().lexical_depth {
            None => LEXICAL_DEPTH,
            Some(0) => tools.len(),
            Some(d) => d,
        }
        .min(tools.len());
        for (tool, score) in self.index().search(query, &candidates, depth)? {
            if let Some(&k) = position.get(tool as usize) {
                if k != usize::MAX {
                    bm25[k] = score;
                }
            }
        }
        let lowest = dense.iter().copied().fold(f32::INFINITY, f32::min);
        let cosines: Vec<f32> = tools
            .iter()
            .map(|t| dense.get(t.index()).copied().unwrap_or(lowest))
            .collect();
        let fused = fuse(&bm25, &cosines, weight);
        hits.extend(rank(&fused).into_iter().take(rest).map(|k| Hit {
            tool: tools[k],
            score: fused[k] as f32,
            kind: HitKind::Fused,
        }));
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn min_max_rescales_and_an_all_equal_list_contributes_nothing() {
        assert_eq!(min_max(&[2.0, 4.0, 3.0]), [0.0, 1.0, 0.5]);
        assert_eq!(min_max(&[0.3, 0.3, 0.3]), [0.0, 0.0, 0.0]);
        assert_eq!(min_max(&[]), Vec::<f64>::new());
        assert_eq!(min_max(&[f32::NAN, 1.0, 3.0]), [0.0, 0.0, 1.0]);
        // No BM25 term matched: the dense side alone orders, scaled by its weight.
        let fused = fuse(&[0.0, 0.0, 0.0], &[0.1, 0.5, 0.3], DenseWeight(0.7));
        let expected = [0.0, 0.7, 0.35];
        for (f, e) in fused.iter().zip(expected) {
            assert!((f - e).abs() < 1e-6, "{fused:?}");
        }
    }

    #[test]
    fn ties_keep_catalog_order() {
        assert_eq!(rank(&[0.5, 0.9, 0.5, 0.9, 0.1]), [1, 3, 0, 2, 4]);
        assert_eq!(rank(&[f64::NAN, 0.2, 0.2]), [1, 2, 0]);
        // Two tools with the same BM25 score and the same cosine tie: the earlier one leads.
        let fused = fuse(&[1.0, 2.0, 1.0], &[0.2, 0.1, 0.2], DenseWeight(0.7));
        assert_eq!(fused[0], fused[2]);
        assert_eq!(rank(&fused), [0, 2, 1]);
    }

    #[test]
    fn weight_zero_is_bm25_order_and_weight_one_is_dense_order() {
        let bm25 = [3.0, 0.0, 7.0, 1.0, 5.0];
        let dense = [0.9, 0.8, 0.1, 0.2, 0.85];
        assert_eq!(
            rank(&fuse(&bm25, &dense, DenseWeight(0.0))),
            [2, 4, 0, 3, 1]
        );
        assert_eq!(
            rank(&fuse(&bm25, &dense, DenseWeight(1.0))),
            [0, 4, 1, 3, 2]
        );
        // In between, a tool strong on both sides wins over one strong on a single side.
        assert_eq!(rank(&fuse(&bm25, &dense, DenseWeight(0.5)))[0], 4);
    }

    #[test]
    fn dense_weight_accepts_0_to_1_only() {
        assert_eq!("0.7".parse::<DenseWeight>().map(DenseWeight::get), Ok(0.7));
        assert_eq!(" 1 ".parse::<DenseWeight>().map(DenseWeight::get), Ok(1.0));
        assert_eq!(DenseWeight::new(0.0).map(DenseWeight::get), Ok(0.0));
        assert_eq!(DenseWeight::default().get(), DEFAULT_DENSE_WEIGHT);
        for bad in ["1.5", "-0.1", "NaN", "inf", "heavy", ""] {
            let e = bad.parse::<DenseWeight>().expect_err(bad);
            assert!(
                e.to_string()
                    .starts_with(&format!("dense weight `{bad}` is not a number from 0 to 1")),
                "{e}"
            );
        }
    }

    #[test]
    fn fused_search_matches_bm25_at_weight_zero_and_the_cosine_at_weight_one() {
        let c = fixture::catalog();
        let full = c.full_profile();
        let q = "read the contents of a file";
        let bm25 = c.search(q, full, 3).expect("runs");
        // A made-up cosine that prefers tools late in the catalog.
        let dense: Vec<f32> = (0..c.len()).map(|i| i as f32 / c.len() as f32).collect();
        let w0 = c
            .search_fused(q, full, 3, &dense, DenseWeight(0.0))
            .expect("runs");
        let names = |hits: &[Hit]| hits.iter().map(|h| c.name(h.tool)).collect::<Vec<_>>();
        assert_eq!(names(&w0), names(&bm25));
        assert!(w0.iter().all(|h| h.kind == HitKind::Fused));
        assert_eq!(w0[0].score, 1.0);

        let w1 = c
            .search_fused(q, full, c.len(), &dense, DenseWeight(1.0))
            .expect("runs");
        let idx: Vec<usize> = w1.iter().map(|h| h.tool.index()).collect();
        let mut descending = idx.clone();
        descending.sort_by(|a, b| b.cmp(a));
        assert_eq!(idx, descending, "weight 1 ranks by the cosine alone");
        for h in &w1 {
            assert_ne!(c.status(h.tool), toolcat_catalog::model::Status::Deprecated);
            assert_ne!(c.tier(h.tool), toolcat_catalog::model::Tier::Loop);
        }
    }

    #[test]
    fn only_the_best_bm25_matches_keep_their_score() {
        // 30 tools that all match "ledger", each with a longer description than the last, so
        // their BM25 scores differ; equal cosines leave the BM25 side alone to order them.
        let mut rows = fixture::rows();
        let template = rows
            .iter()
            .find(|r| r.source == "local")
            .cloned()
            .expect("the fixture has a local tool");
        for i in 0..30 {
            let name: &'static str = Box::leak(format!("ledger_{i:02}").into_boxed_str());
            let padding = "entry ".repeat(i);
            let description: &'static str =
                Box::leak(format!("Ledger tool {padding}").into_boxed_str());
            rows.push(fixture::Row {
                name,
                description,
                keywords: &[],
                ..template.clone()
            });
        }
        let c = Catalog::from_tables(fixture::tables_of(&rows)).expect("valid catalog");
        let dense = vec![0.5f32; c.len()];
        let hits = c
            .search_fused(
                "ledger",
                c.full_profile(),
                c.len(),
                &dense,
                DenseWeight(0.3),
            )
            .expect("runs");
        let scored: Vec<&str> = hits
            .iter()
            .filter(|h| h.score > 0.0)
            .map(|h| c.name(h.tool))
            .collect();
        assert_eq!(scored.len(), LEXICAL_DEPTH, "{scored:?}");
        // They are the best BM25 matches, in BM25 order: the shortest descriptions first.
        let bm25: Vec<&str> = c
            .search("ledger", c.full_profile(), LEXICAL_DEPTH)
            .expect("runs")
            .iter()
            .map(|h| c.name(h.tool))
            .collect();
        assert_eq!(scored, bm25);
        assert!(
            hits.len() > LEXICAL_DEPTH,
            "the other candidates still follow"
        );
    }

    #[test]
    fn fused_search_keeps_exact_names_first_and_stays_in_the_allowed_set() {
        let c = fixture::catalog();
        let dense = vec![0.0f32; c.len()];
        let hits = c
            .search_fused(
                "list_branches",
                c.full_profile(),
                5,
                &dense,
                DenseWeight::default(),
            )
            .expect("runs");
        assert_eq!(hits[0].kind, HitKind::Name);
        assert_eq!(hits[1].kind, HitKind::Name);
        assert!(hits[2..].iter().all(|h| h.kind == HitKind::Fused));
        let reader = c.profile("reader").expect("known");
        let owned = c.profile_tools(reader);
        let hits = c
            .search_fused("file", reader, 50, &dense, DenseWeight::default())
            .expect("runs");
        assert!(!hits.is_empty());
        assert!(hits
            .iter()
            .all(|h| toolcat_catalog::tables::bit(owned, h.tool.index())));
        assert!(c
            .search_fused_in("file", &[], 5, &dense, DenseWeight::default())
            .expect("runs")
            .is_empty());
    }
}
