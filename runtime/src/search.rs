//! Tool search: exact name first, then BM25 over the catalog's index, restricted to a profile.
//!
//! Search never returns a tool outside the set it is restricted to: the exact-name step checks
//! the set, and the BM25 step filters inside tantivy's collector, so the top `limit` are filled
//! from allowed tools only (`toolcat_catalog::index::SearchIndex::search`). Deprecated tools are
//! never returned (no plan can show them); the discovery meta-tools (tier `loop`) are returned
//! only for their exact name (they are visible whenever discovery is possible, so ranking them
//! would only take a slot).

use serde::Serialize;
use toolcat_catalog::model::{Status, Tier};
use toolcat_catalog::tables::bit;

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
    /// BM25 fused with the cosine of sentence embeddings ([`crate::fusion`]).
    Fused,
    /// No match of its own: a tool of the same server or toolset as a better hit, joined by
    /// co-selection ([`crate::cover`]); score 0.
    Sibling,
}

/// One search result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Hit {
    /// The tool found.
    pub tool: ToolIndex,
    /// [`NAME_MATCH_SCORE`] for a [`HitKind::Name`] hit; for a [`HitKind::Bm25`] hit the BM25
    /// score (a sum over fields and terms, weighted by the field boosts of
    /// `toolcat_catalog::index`), comparable only within one query; for a [`HitKind::Fused`] hit
    /// the fused score in 0..=1 ([`crate::fusion::fuse`]); 0 for a [`HitKind::Sibling`] hit.
    pub score: f32,
    /// How it matched.
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
        let (mut hits, ranked) = self.name_step(query, allowed, limit);
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

    /// The tools of `allowed` a ranking may return: not deprecated, not a meta-tool (missing
    /// words count as empty).
    pub(crate) fn rankable(&self, allowed: &[u64]) -> Vec<u64> {
        let deprecated = self.status_tools(Status::Deprecated);
        let meta = self.tier_tools(Tier::Loop);
        (0..self.words())
            .map(|k| allowed.get(k).copied().unwrap_or(0) & !deprecated[k] & !meta[k])
            .collect()
    }

    /// The exact-name step of [`Catalog::search_in`]: at most `limit` name hits among `allowed`
    /// (deprecated tools left out), and the bitset of the tools left to rank: allowed, not
    /// deprecated, not a name hit, not a meta-tool.
    pub(crate) fn name_step(
        &self,
        query: &str,
        allowed: &[u64],
        limit: usize,
    ) -> (Vec<Hit>, Vec<u64>) {
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
        let hits: Vec<Hit> = self
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
        (hits, ranked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    const QUERIES: &[&str] = &[
        "file",
        "read the contents of a file",
        "delete",
        "shell command",
        "git commit changes",
        "open a pull request",
        "createPullRequest",
        "list branches",
        "grep text",
        "search",
        "tool_search",
        "list_branches",
        "run_shell",
        "",
        "zzz nothing matches",
        "(a OR b) AND \"c",
    ];

    #[test]
    fn search_never_leaves_the_profile_and_fills_from_allowed_tools() {
        let c = fixture::catalog();
        for p in c.profiles() {
            let owned = c.profile_tools(p);
            for q in QUERIES {
                for limit in [1, 3, 50] {
                    let hits = c.search(q, p, limit).expect("search runs");
                    assert!(hits.len() <= limit);
                    for h in &hits {
                        assert!(
                            bit(owned, h.tool.index()),
                            "`{q}` found {} outside profile {}",
                            c.name(h.tool),
                            c.profile_name(p)
                        );
                        assert_ne!(c.status(h.tool), Status::Deprecated, "`{q}`");
                        if h.kind == HitKind::Bm25 {
                            assert_ne!(c.tier(h.tool), Tier::Loop, "`{q}`");
                        }
                    }
                    let mut unique: Vec<_> = hits.iter().map(|h| h.tool).collect();
                    unique.sort();
                    unique.dedup();
                    assert_eq!(unique.len(), hits.len(), "`{q}` returned a tool twice");
                }
            }
        }
        // `reader` owns three tools about files: a top-3 is filled with them, nothing else.
        let reader = c.profile("reader").expect("known");
        let names: Vec<&str> = c
            .search("file contents directory", reader, 3)
            .expect("runs")
            .iter()
            .map(|h| c.name(h.tool))
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
        assert!(!names.contains(&"write_file") && !names.contains(&"delete_file"));
    }

    #[test]
    fn exact_names_come_first() {
        let c = fixture::catalog();
        let full = c.full_profile();
        for q in [
            "github__createPullRequest",
            "createPullRequest",
            " `createpullrequest` ",
        ] {
            let hits = c.search(q, full, 5).expect("runs");
            assert_eq!(hits[0].kind, HitKind::Name, "`{q}`");
            assert_eq!(
                c.exported_name(hits[0].tool),
                "github__createPullRequest",
                "`{q}`"
            );
            assert_eq!(hits[0].score, NAME_MATCH_SCORE);
            assert!(hits[1..].iter().all(|h| h.kind == HitKind::Bm25));
        }
        // A declared name shared by two servers finds both, in catalog order.
        let hits = c.search("list_branches", full, 5).expect("runs");
        let names: Vec<&str> = hits[..2].iter().map(|h| c.exported_name(h.tool)).collect();
        assert_eq!(names, ["github__list_branches", "gitlab__list_branches"]);
        // Meta-tools are found by exact name only.
        let hits = c.search("tool_search", full, 5).expect("runs");
        assert_eq!(c.name(hits[0].tool), "tool_search");
        assert!(hits[1..].iter().all(|h| c.tier(h.tool) != Tier::Loop));
        // An exact name outside the profile is not a hit.
        let reader = c.profile("reader").expect("known");
        let hits = c.search("write_file", reader, 5).expect("runs");
        assert!(hits.iter().all(|h| c.name(h.tool) != "write_file"));
        // Deprecated tools are not found, even by name.
        let hits = c.search("old_grep", full, 5).expect("runs");
        assert!(hits.iter().all(|h| c.name(h.tool) != "old_grep"));
    }

    #[test]
    fn search_in_uses_any_set_and_treats_missing_words_as_empty() {
        let c = fixture::catalog();
        assert!(c.search_in("file", &[], 5).expect("runs").is_empty());
        let only = {
            let mut set = vec![0u64; c.words()];
            let t = c.tool("delete_file").expect("known");
            set[t.index() / 64] |= 1 << (t.index() % 64);
            set
        };
        let hits = c.search_in("file", &only, 5).expect("runs");
        assert_eq!(hits.len(), 1);
        assert_eq!(c.name(hits[0].tool), "delete_file");
        assert!(c
            .search("file", c.full_profile(), 0)
            .expect("runs")
            .is_empty());
    }

    #[test]
    fn bm25_ranks_the_matching_tool_first() {
        let c = fixture::catalog();
        let full = c.full_profile();
        let top = |q: &str| c.exported_name(c.search(q, full, 1).expect("runs")[0].tool);
        assert_eq!(top("open a pull request"), "github__createPullRequest");
        assert_eq!(top("terminal"), "run_shell");
        assert_eq!(top("remove a file"), "delete_file");
        assert_eq!(top("ripgrep"), "search_text");
    }
}
