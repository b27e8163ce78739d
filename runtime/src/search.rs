//! Tool search: exact name first, then BM25 over the catalog's index, restricted to a profile.
//!
//! Search never returns a tool outside the set it is restricted to: the exact-name step checks
//! the set, and the BM25 step filters inside tantivy's collector, so the top `limit` are filled
//! from allowed tools only (`toolcat_codegen::index::SearchIndex::search`). Deprecated tools are
//! never returned (no plan can show them); the discovery meta-tools (tier `loop`) are returned
//! only for their exact name (they are visible whenever discovery is possible, so ranking them
//! would only take a slot).

use serde::Serialize;
use toolcat_codegen::model::{Status, Tier};
use toolcat_codegen::tables::bit;

use crate::catalog::{Catalog, ProfileId, ToolIndex};
use crate::error::SearchError;

/// The score of an exact-name hit: above every BM25 score.
pub const NAME_MATCH_SCORE: f32 = f32::MAX;

/// How a hit matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HitKind {
    /// The query is the tool's exported or declared name (ignoring case, surrounding whitespace,
    /// quotes and backticks).
    Name,
    /// BM25 over name parts, keywords, description and parameters.
    Bm25,
}

/// One search result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Hit {
    pub tool: ToolIndex,
    /// [`NAME_MATCH_SCORE`] for a [`HitKind::Name`] hit; otherwise the BM25 score (a sum over
    /// fields and terms, weighted by the field boosts of `toolcat_codegen::index`), comparable only
    /// within one query.
    pub score: f32,
    pub kind: HitKind,
}

impl Catalog {
    /// The best `limit` tools of `profile` for `query`: exact-name matches first (catalog order),
    /// then BM25 hits, best first (equal scores in catalog order).
    ///
    /// # Errors
    /// Only on an internal tantivy error.
    pub fn search(
        &self,
        query: &str,
        profile: ProfileId,
        limit: usize,
    ) -> Result<Vec<Hit>, SearchError> {
        self.search_in(query, self.profile_tools(profile), limit)
    }

    /// [`Catalog::search`] restricted to any set of tools: `allowed` is a bitset in the table
    /// layout (bit `i` = tool `i`; missing words count as empty). Use it with
    /// [`crate::plan::Plan::reachable`] to find only tools the next plan can show.
    ///
    /// # Errors
    /// Only on an internal tantivy error.
    pub fn search_in(
        &self,
        query: &str,
        allowed: &[u64],
        limit: usize,
    ) -> Result<Vec<Hit>, SearchError> {
        let w = self.words();
        let deprecated = self.status_tools(Status::Deprecated);
        let meta = self.tier_tools(Tier::Loop);
        let mut ranked: Vec<u64> = (0..w)
            .map(|k| allowed.get(k).copied().unwrap_or(0) & !deprecated[k])
            .collect();

        let name = query
            .trim()
            .trim_matches(|c: char| c == '`' || c == '"' || c == '\'')
            .trim();
        let mut hits: Vec<Hit> = self
            .tools_named_ignoring_case(name)
            .filter(|t| bit(&ranked, t.index()))
            .take(limit)
            .map(|tool| Hit {
                tool,
                score: NAME_MATCH_SCORE,
                kind: HitKind::Name,
            })
            .collect();
        for h in &hits {
            ranked[h.tool.index() / 64] &= !(1u64 << (h.tool.index() % 64));
        }
        for k in 0..w {
            ranked[k] &= !meta[k];
        }
        let rest = limit - hits.len();
        if rest > 0 {
            for (tool, score) in self.index().search(query, &ranked, rest)? {
                hits.push(Hit {
                    tool: ToolIndex(tool),
                    score,
                    kind: HitKind::Bm25,
                });
            }
        }
        Ok(hits)
    }
}
