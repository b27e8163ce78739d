//! `toolcat search`: a profile's tools for a query, exact name first, then BM25 (fused with a
//! sentence-embedding model with `--semantic`).

use crate::cli::Exit;
use std::io::Write as _;

use anyhow::bail;
#[cfg(feature = "semantic")]
use anyhow::Context as _;
use clap::Args;
use serde_json::json;
#[cfg(feature = "semantic")]
use toolcat::{Catalog, ProfileId};

#[cfg(feature = "semantic")]
use super::args::ModelArgs;
use super::args::{catalog, profile, CatalogArg};

/// The largest `toolcat search --limit`: far more hits than anyone reads, small enough that the
/// search never allocates for an absurd count.
pub const MAX_SEARCH_LIMIT: u64 = 10_000;

#[derive(Debug, Args)]
pub struct SearchArgs {
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// Search only this profile's tools (default: `full`).
    #[arg(long, value_name = "P")]
    pub profile: Option<String>,
    /// How many hits to return: 1 to 10 000 (`MAX_SEARCH_LIMIT`); anything else is a usage
    /// error (exit 2).
    #[arg(
        long,
        value_name = "K",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..=MAX_SEARCH_LIMIT)
    )]
    pub limit: u64,
    /// Print `[{"name": ..., "score": ..., "match": "name" | "bm25" | "fused"}]`, best first (an
    /// exact-name hit's score is the largest f32, 3.4028235e38: it ranks first by rule).
    #[arg(long)]
    pub json: bool,
    /// Rank by BM25 fused with a local sentence-embedding model (exact names still first);
    /// without a model (`--model`, `TOOLCAT_MODEL_DIR`, the default directory) BM25 with a
    /// notice.
    #[cfg(feature = "semantic")]
    #[arg(long)]
    pub semantic: bool,
    /// `--model` and `--dense-weight`, with `--semantic`.
    #[cfg(feature = "semantic")]
    #[command(flatten)]
    pub model_args: ModelArgs,
    /// What the tool should do, or its name.
    #[arg(required = true, value_name = "QUERY")]
    pub query: Vec<String>,
}

/// Runs `toolcat search`.
pub fn run(a: &SearchArgs) -> anyhow::Result<Exit> {
    let c = catalog(&a.catalog)?;
    let p = profile(&c, a.profile.as_deref())?;
    let query = a.query.join(" ");
    if query.trim().is_empty() {
        bail!("the query is empty; pass what the tool should do, e.g. `toolcat search \"read a file\"`");
    }
    // Bounded by clap to 1..=MAX_SEARCH_LIMIT, which fits every usize.
    let limit = usize::try_from(a.limit).unwrap_or(usize::MAX);
    #[cfg(feature = "semantic")]
    let hits = if a.semantic {
        semantic_search(&c, p, &query, limit, a)?
    } else {
        c.search(&query, p, limit)?
    };
    #[cfg(not(feature = "semantic"))]
    let hits = c.search(&query, p, limit)?;
    let mut out = std::io::stdout().lock();
    if a.json {
        let rows: Vec<_> = hits
            .iter()
            .map(|h| json!({"name": c.exported_name(h.tool), "score": h.score, "match": h.kind}))
            .collect();
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else {
        if hits.is_empty() {
            eprintln!(
                "no tool of profile `{}` matches; try other words, or `toolcat list`",
                c.profile_name(p)
            );
        }
        // names padded to the longest (at least 40 columns), so the scores line up
        let width = hits
            .iter()
            .map(|h| c.exported_name(h.tool).chars().count())
            .max()
            .unwrap_or(0)
            .max(40);
        for (rank, h) in hits.iter().enumerate() {
            let first_line = c.description(h.tool).lines().next().unwrap_or("");
            let short: String = first_line.chars().take(100).collect();
            // an exact-name hit has no score to compare: it is first by rule
            let score = match h.kind {
                toolcat::HitKind::Name => "name".to_string(),
                _ => format!("{:.3}", h.score),
            };
            writeln!(
                out,
                "{:>2}. {:<width$} {:>8}  {}",
                rank + 1,
                c.exported_name(h.tool),
                score,
                short
            )?;
        }
    }
    Ok(Exit::Ok)
}

/// `toolcat search --semantic`: fused hits, or BM25 hits after a one-line notice on standard
/// error when there is no model or the query cannot be embedded.
#[cfg(feature = "semantic")]
fn semantic_search(
    c: &Catalog,
    p: ProfileId,
    query: &str,
    limit: usize,
    a: &SearchArgs,
) -> anyhow::Result<Vec<toolcat::Hit>> {
    use toolcat_semantic::{model_dir, no_model_notice, SemanticSearch};
    let Some((dir, _)) = model_dir(a.model_args.model.as_deref()) else {
        eprintln!("{}", no_model_notice());
        return Ok(c.search(query, p, limit)?);
    };
    let cache = toolcat_semantic::default_cache_dir();
    let encoder = a.model_args.load_encoder(&dir)?;
    // The vectors compiled in for the reference catalog serve when they match `c` and the model;
    // otherwise they come from the cache or are encoded now.
    let vectors = toolcat_semantic::ToolVectors::load(
        c,
        &encoder,
        Some(crate::REFERENCE_VECTORS),
        cache.as_deref(),
    )
    .context("cannot embed the catalog's tools")?;
    if let Some(why) = vectors.cache_error() {
        eprintln!(
            "semantic search: the tool vectors were computed but not cached ({why}), so every run computes them again; set TOOLCAT_CACHE_DIR to a writable folder"
        );
    }
    let semantic = SemanticSearch::new(encoder, vectors);
    let found = semantic.search_in(
        c,
        query,
        c.profile_tools(p),
        limit,
        a.model_args.dense_weight,
    )?;
    if let Some(why) = &found.fallback {
        eprintln!("{why}");
    }
    Ok(found.hits)
}
