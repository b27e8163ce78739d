//! Co-selection: a ranking that aims at covering a task, not at finding one tool.
//!
//! A task that needs several tools usually needs several tools of one server (LiveMCPBench:
//! `geocode_address`, `reverse_geocode` and `find_nearby_places` of one maps server) or of one
//! toolset. [`Catalog::co_select`] keeps the best [`CoSelect::seeds`] hits of a ranking, then
//! fills the remaining slots unit by unit, where a tool's [`Unit`] is its MCP server, else its
//! first toolset (catalog order): units in the order their best tool ranks, and inside a unit its
//! ranked tools by rank, then its unranked tools in catalog order. Tools that join only as a
//! unit's members are [`HitKind::Sibling`] hits.
//!
//! Measured on LiveMCPBench (`BENCHMARKS.md`, "Multi-tool coverage"): with 10 tools per plan, the
//! share of tasks whose plan holds every gold tool rises from 16 of 70 to 22 of 70, with fewer
//! plan tokens (siblings of one server have shorter definitions than the long tail of a
//! ranking). Tools a task needs without naming them are not found this way: a catalog marks them
//! `visibility = "inline"` (see the README's `tools.toml` reference).

use toolcat_catalog::tables::bit;

use crate::catalog::{Catalog, ServerId, ToolIndex, ToolSource, ToolsetId};
use crate::error::SearchError;
use crate::search::{Hit, HitKind};

/// How many ranked tools [`Catalog::search_covering`] reads to order the units: 100.
pub const RANK_DEPTH: usize = 100;

/// How [`Catalog::co_select`] fills a ranking's slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoSelect {
    /// Best hits kept as ranked before units fill the rest: 3 (the seeds' units fill first).
    pub seeds: usize,
}

impl Default for CoSelect {
    fn default() -> Self {
        CoSelect { seeds: 3 }
    }
}

/// The group a tool is co-selected with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unit {
    /// The MCP server the tool comes from.
    Server(ServerId),
    /// The first toolset (catalog order) holding a tool that comes from no server.
    Toolset(ToolsetId),
}

impl Catalog {
    /// The unit of `t`: its server, else its first toolset; `None` for a tool in no toolset
    /// (none in a valid catalog but the implicit meta-tools' own).
    pub fn unit(&self, t: ToolIndex) -> Option<Unit> {
        match self.source(t) {
            ToolSource::Server(s) => Some(Unit::Server(s)),
            _ => self
                .toolsets()
                .find(|&s| bit(self.toolset_tools(s), t.index()))
                .map(Unit::Toolset),
        }
    }

    /// The tools of `unit`, catalog order.
    pub fn unit_tools(&self, unit: Unit) -> impl Iterator<Item = ToolIndex> + '_ {
        self.tools().filter(move |&t| self.unit(t) == Some(unit))
    }

    /// Co-selects at most `limit` tools from `ranked` (best first, as [`Catalog::search_in`]
    /// returns it): the first `co.seeds` hits, then the units of the ranked tools in the order
    /// of their best tool, each unit's ranked tools by rank, then its other tools among
    /// `allowed` (a bitset; deprecated tools and meta-tools left out) in catalog order as
    /// [`HitKind::Sibling`] hits (score 0). Each tool once; fewer than `limit` only when the
    /// units hold fewer tools.
    pub fn co_select(
        &self,
        ranked: &[Hit],
        allowed: &[u64],
        limit: usize,
        co: CoSelect,
    ) -> Vec<Hit> {
        let mut out: Vec<Hit> = ranked.iter().take(co.seeds.min(limit)).copied().collect();
        let rankable = self.rankable(allowed);
        let mut units: Vec<Unit> = Vec::new();
        for h in ranked {
            if let Some(u) = self.unit(h.tool) {
                if !units.contains(&u) {
                    units.push(u);
                }
            }
        }
        let push = |out: &mut Vec<Hit>, h: Hit| {
            if out.len() < limit && !out.iter().any(|o| o.tool == h.tool) {
                out.push(h);
            }
        };
        for u in units {
            if out.len() >= limit {
                break;
            }
            for h in ranked.iter().filter(|h| self.unit(h.tool) == Some(u)) {
                push(&mut out, *h);
            }
            for t in self.unit_tools(u).filter(|t| bit(&rankable, t.index())) {
                push(
                    &mut out,
                    Hit {
                        tool: t,
                        score: 0.0,
                        kind: HitKind::Sibling,
                    },
                );
            }
        }
        for h in ranked {
            push(&mut out, *h);
        }
        out
    }

    /// [`Catalog::search_in`] for a task that needs several tools: the best [`RANK_DEPTH`]
    /// (or `limit`, when larger) hits for `query` among `allowed`, co-selected by
    /// [`Catalog::co_select`] down to `limit`.
    ///
    /// # Errors
    /// Only on an internal tantivy error.
    pub fn search_covering(
        &self,
        query: &str,
        allowed: &[u64],
        limit: usize,
        co: CoSelect,
    ) -> Result<Vec<Hit>, SearchError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let ranked = self.search_in(query, allowed, RANK_DEPTH.max(limit))?;
        Ok(self.co_select(&ranked, allowed, limit, co))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn siblings_of_the_seeds_unit_fill_the_slots() {
        let c = fixture::catalog();
        let full = c.profile_tools(c.full_profile());
        let ranked = c
            .search_in("open a pull request", full, RANK_DEPTH)
            .expect("runs");
        let co = CoSelect { seeds: 1 };
        let hits = c.co_select(&ranked, full, 4, co);
        assert_eq!(hits.len(), 4);
        assert_eq!(hits[0], ranked[0]);
        let unit = c.unit(hits[0].tool).expect("a unit");
        // the seed's unit fills the next slots, as far as it holds tools
        let members = c
            .unit_tools(unit)
            .filter(|&t| bit(&c.rankable(full), t.index()))
            .count();
        for h in &hits[1..members.min(4)] {
            assert_eq!(c.unit(h.tool), Some(unit), "{}", c.name(h.tool));
        }
        let mut tools: Vec<_> = hits.iter().map(|h| h.tool).collect();
        tools.sort();
        tools.dedup();
        assert_eq!(tools.len(), 4, "each tool once");
    }

    #[test]
    fn a_server_tool_brings_its_server_siblings() {
        let c = fixture::catalog();
        let full = c.profile_tools(c.full_profile());
        let plain = c.search_in("open a pull request", full, 2).expect("runs");
        let hits = c
            .search_covering("open a pull request", full, 2, CoSelect { seeds: 1 })
            .expect("runs");
        assert_eq!(c.exported_name(hits[0].tool), "github__createPullRequest");
        assert_eq!(hits[0], plain[0]);
        // the second slot goes to the other tool of server `github`, not to BM25's second hit
        assert_eq!(c.exported_name(hits[1].tool), "github__list_branches");
        assert_eq!(c.unit(hits[0].tool), c.unit(hits[1].tool));
        assert!(matches!(c.unit(hits[0].tool), Some(Unit::Server(_))));
    }

    #[tokio::test]
    async fn the_bm25_preselector_co_selects_when_asked() {
        use crate::preselect::{Bm25Preselector, PreselectRequest, Preselector};
        let c = fixture::catalog();
        let full = c.profile_tools(c.full_profile());
        let request = PreselectRequest {
            catalog: &c,
            message: "open a pull request",
            reachable: full,
            visible: &[],
            budget: 5,
        };
        let preselector = Bm25Preselector {
            limit: 2,
            relative_floor: 0.99,
            co_select: Some(CoSelect { seeds: 1 }),
        };
        let names = preselector.preselect(&request).await.expect("answers");
        // the sibling has no score of its own and still passes the relative floor
        assert_eq!(
            names,
            ["github__createPullRequest", "github__list_branches"]
        );
        let plain = Bm25Preselector {
            co_select: None,
            ..preselector
        };
        let names = plain.preselect(&request).await.expect("answers");
        assert_eq!(
            names,
            ["github__createPullRequest"],
            "the floor drops the tail"
        );
    }

    #[test]
    fn co_selection_stays_in_the_allowed_set() {
        let c = fixture::catalog();
        for p in c.profiles() {
            let owned = c.profile_tools(p);
            for q in ["file", "git commit changes", "open a pull request", ""] {
                let hits = c
                    .search_covering(q, owned, 8, CoSelect::default())
                    .expect("runs");
                assert!(hits.len() <= 8);
                for h in &hits {
                    assert!(bit(owned, h.tool.index()), "`{q}`: {}", c.name(h.tool));
                }
            }
        }
        assert!(c
            .search_covering("file", full_of(&c), 0, CoSelect::default())
            .expect("runs")
            .is_empty());
    }

    fn full_of(c: &Catalog) -> &[u64] {
        c.profile_tools(c.full_profile())
    }
}
