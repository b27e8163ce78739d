//! Preselection: tools added to a turn's plan before the model's first step, so the loop works
//! for a model that never calls `tool_search`.
//!
//! A [`Preselector`] reads the user's message and names tools. Two come with the runtime:
//! [`Bm25Preselector`] (the default of a [`crate::session::Session`]: the catalog's own BM25
//! search over the message) and [`FnPreselector`] (built with [`from_fn`]: an adapter for the
//! host's own model, any async closure that returns tool names).
//!
//! [`run`] applies the rules of the discovery loop to whatever a preselector returns:
//!
//! - it runs under a timeout ([`DEFAULT_TIMEOUT`], 2 s); a preselector that takes longer is
//!   cancelled (its future is dropped) and adds nothing;
//! - picks are verified against the catalog: a name that is no tool of the catalog is dropped and
//!   counted in [`PreselectReport::unknown`]; a tool outside profile ∩ active toolsets, deprecated,
//!   or a meta-tool (tier `loop`) is dropped and counted in [`PreselectReport::unreachable`];
//! - the budget ([`DEFAULT_BUDGET`], 5) limits only tools that are *newly* added: a pick that is
//!   visible anyway (inline, discovered earlier, named by the user) costs nothing; new tools past
//!   the budget are dropped and counted in [`PreselectReport::over_budget`];
//! - on a timeout or an error nothing is added, so the turn keeps what it had without
//!   preselection: the core (inline tools of the active toolsets), the still-valid history
//!   (discovered tools) and the tools the user named. It never falls back to every tool.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use serde::Serialize;
use toolcat_catalog::model::{Status, Tier};
use toolcat_catalog::tables::bit;

use crate::catalog::{Catalog, ToolIndex};
use crate::cover::CoSelect;
use crate::handler::BoxFuture;
use crate::search::HitKind;

/// How long [`run`] waits for a preselector by default: 2 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
/// How many new tools [`run`] keeps by default: 5.
pub const DEFAULT_BUDGET: usize = 5;

/// What a preselector is asked.
#[derive(Debug, Clone, Copy)]
pub struct PreselectRequest<'a> {
    /// The catalog the names must come from.
    pub catalog: &'a Catalog,
    /// The user's message that starts the turn.
    pub message: &'a str,
    /// profile ∩ active toolsets − deprecated, as a bitset: the only tools a pick may name.
    pub reachable: &'a [u64],
    /// The tools visible this turn without preselection, as a bitset.
    pub visible: &'a [u64],
    /// How many new tools will be kept at most.
    pub budget: usize,
}

impl<'a> PreselectRequest<'a> {
    /// The tools a preselection can add: reachable, not visible yet, not meta-tools; catalog order.
    pub fn candidates(&self) -> impl Iterator<Item = ToolIndex> + 'a {
        let (catalog, reachable, visible) = (self.catalog, self.reachable, self.visible);
        let meta = catalog.tier_tools(Tier::Loop);
        catalog.tools().filter(move |t| {
            let i = t.index();
            has(reachable, i) && !has(visible, i) && !bit(meta, i)
        })
    }

    /// [`PreselectRequest::candidates`] as a bitset (missing words count as empty).
    fn candidate_set(&self) -> Vec<u64> {
        let meta = self.catalog.tier_tools(Tier::Loop);
        (0..self.catalog.words())
            .map(|k| {
                let r = self.reachable.get(k).copied().unwrap_or(0);
                let v = self.visible.get(k).copied().unwrap_or(0);
                r & !v & !meta[k]
            })
            .collect()
    }
}

/// Why a preselector gave no answer; its message is reported, never shown to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreselectError(pub String);

impl fmt::Display for PreselectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PreselectError {}

/// Picks tools for a turn from the user's message.
///
/// Implementations return tool names (exported or declared), best first; [`run`] verifies them,
/// applies the budget and the timeout, so an implementation need not.
pub trait Preselector: Send + Sync {
    /// The names of the tools to add for `request.message`.
    fn preselect<'a>(
        &'a self,
        request: &'a PreselectRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<String>, PreselectError>>;
}

/// The default preselector: BM25 over the message ([`Catalog::search_in`]), among the request's
/// candidates only, so no slot goes to a tool that is visible anyway.
///
/// Keeps at most [`Bm25Preselector::limit`] hits, and only those scoring at least
/// [`Bm25Preselector::relative_floor`] × the best hit's score: BM25 always ranks something, and a
/// weak tail would cost definitions on every turn for little chance of use. With
/// [`Bm25Preselector::co_select`], the slots after the seeds go to the tools of the best hits'
/// servers or toolsets ([`Catalog::co_select`]); those siblings have no score and pass the floor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Preselector {
    /// Most hits returned: 3.
    pub limit: usize,
    /// Fraction of the best score a hit needs: 0.5.
    pub relative_floor: f32,
    /// Co-selection for tasks that need several tools: `None` (off) by default.
    pub co_select: Option<CoSelect>,
}

impl Default for Bm25Preselector {
    fn default() -> Self {
        Bm25Preselector {
            limit: 3,
            relative_floor: 0.5,
            co_select: None,
        }
    }
}

impl Preselector for Bm25Preselector {
    fn preselect<'a>(
        &'a self,
        request: &'a PreselectRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<String>, PreselectError>> {
        Box::pin(async move {
            let candidates = request.candidate_set();
            let catalog = request.catalog;
            let hits = match self.co_select {
                None => catalog.search_in(request.message, &candidates, self.limit),
                Some(co) => catalog.search_covering(request.message, &candidates, self.limit, co),
            }
            .map_err(|e| PreselectError(format!("BM25 search failed: {e}")))?;
            let floor = hits.first().map_or(0.0, |h| h.score * self.relative_floor);
            Ok(hits
                .iter()
                .filter(|h| h.kind == HitKind::Sibling || h.score >= floor)
                .map(|h| request.catalog.exported_name(h.tool).to_string())
                .collect())
        })
    }
}

/// A candidate as the host's model sees it: exported name and description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    pub name: String,
    pub description: String,
}

/// What [`FnPreselector`] hands the host's closure: owned, so its future may outlive the request
/// (an HTTP call to a model, say).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreselectQuery {
    /// The user's message.
    pub message: String,
    /// The tools a pick may add ([`PreselectRequest::candidates`]), catalog order.
    pub candidates: Vec<Candidate>,
    /// How many new tools will be kept at most.
    pub budget: usize,
}

/// Adapter for the host's own model: see [`from_fn`].
pub struct FnPreselector<F>(F);

impl<F> fmt::Debug for FnPreselector<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnPreselector")
    }
}

/// A [`Preselector`] from an async closure `Fn(PreselectQuery) -> Future<Output = Result<Vec<String>, E>>`
/// (any `E: Display`, reported as a [`PreselectError`]). The closure returns tool names, best
/// first; [`run`] verifies them.
pub fn from_fn<F, Fut, E>(f: F) -> FnPreselector<F>
where
    F: Fn(PreselectQuery) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Vec<String>, E>> + Send + 'static,
    E: fmt::Display,
{
    FnPreselector(f)
}

impl<F, Fut, E> Preselector for FnPreselector<F>
where
    F: Fn(PreselectQuery) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Vec<String>, E>> + Send + 'static,
    E: fmt::Display,
{
    fn preselect<'a>(
        &'a self,
        request: &'a PreselectRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<String>, PreselectError>> {
        let catalog = request.catalog;
        let query = PreselectQuery {
            message: request.message.to_string(),
            candidates: request
                .candidates()
                .map(|t| Candidate {
                    name: catalog.exported_name(t).to_string(),
                    description: catalog.description(t).to_string(),
                })
                .collect(),
            budget: request.budget,
        };
        let fut = (self.0)(query);
        Box::pin(async move { fut.await.map_err(|e| PreselectError(e.to_string())) })
    }
}

/// How a preselection ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum PreselectStatus {
    /// The preselector answered in time; its verified picks were applied.
    Answered,
    /// The timeout passed first; nothing was added.
    TimedOut,
    /// The preselector failed; nothing was added.
    Failed { message: String },
}

/// What [`run`] did with a preselector's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreselectReport {
    /// How it ended.
    #[serde(flatten)]
    pub status: PreselectStatus,
    /// The tools added to the turn, in pick order.
    pub added: Vec<ToolIndex>,
    /// Names returned.
    pub picked: usize,
    /// Picks visible anyway (kept, free of the budget).
    pub already_visible: usize,
    /// Picks that name no tool of the catalog (dropped).
    pub unknown: usize,
    /// Picks outside profile ∩ active toolsets, deprecated, or meta-tools (dropped).
    pub unreachable: usize,
    /// New tools past the budget (dropped).
    pub over_budget: usize,
    /// Picks naming a tool picked before (ignored).
    pub duplicates: usize,
    /// Time taken, by the tokio clock.
    #[serde(serialize_with = "millis")]
    pub elapsed: Duration,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u128(d.as_millis())
}

impl PreselectReport {
    fn empty(status: PreselectStatus, elapsed: Duration) -> Self {
        PreselectReport {
            status,
            added: Vec::new(),
            picked: 0,
            already_visible: 0,
            unknown: 0,
            unreachable: 0,
            over_budget: 0,
            duplicates: 0,
            elapsed,
        }
    }
}

/// Runs `preselector` on `request` under `timeout`, then verifies its picks (see the module docs).
/// The tools to add are [`PreselectReport::added`]; it is empty on a timeout or an error.
pub async fn run(
    preselector: &dyn Preselector,
    request: &PreselectRequest<'_>,
    timeout: Duration,
) -> PreselectReport {
    let start = tokio::time::Instant::now();
    let answer = tokio::time::timeout(timeout, preselector.preselect(request)).await;
    let elapsed = start.elapsed();
    match answer {
        Err(_) => PreselectReport::empty(PreselectStatus::TimedOut, elapsed),
        Ok(Err(e)) => PreselectReport::empty(PreselectStatus::Failed { message: e.0 }, elapsed),
        Ok(Ok(names)) => {
            let mut report = verify(request, &names);
            report.elapsed = elapsed;
            report
        }
    }
}

/// Verifies `names` against the request (see the module docs) without running anything.
pub fn verify(request: &PreselectRequest<'_>, names: &[String]) -> PreselectReport {
    let catalog = request.catalog;
    let meta = catalog.tier_tools(Tier::Loop);
    let deprecated = catalog.status_tools(Status::Deprecated);
    let mut report = PreselectReport::empty(PreselectStatus::Answered, Duration::ZERO);
    report.picked = names.len();
    let mut seen: Vec<ToolIndex> = Vec::with_capacity(names.len());
    for name in names {
        let Ok(t) = catalog.tool(name.trim()) else {
            report.unknown += 1;
            continue;
        };
        if seen.contains(&t) {
            report.duplicates += 1;
            continue;
        }
        seen.push(t);
        let i = t.index();
        if !has(request.reachable, i) || bit(meta, i) || bit(deprecated, i) {
            report.unreachable += 1;
        } else if has(request.visible, i) {
            report.already_visible += 1;
        } else if report.added.len() < request.budget {
            report.added.push(t);
        } else {
            report.over_budget += 1;
        }
    }
    report
}

/// Bit `i` of `set`, with missing words counting as empty.
fn has(set: &[u64], i: usize) -> bool {
    set.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
}
