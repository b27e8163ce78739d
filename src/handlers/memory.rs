//! Long-term memory: `memory_store`, `memory_recall`, `memory_forget`, kept in
//! `.toolcat/memory.json`.
//!
//! Recall ranks memories by how many distinct words of the query they contain (in their text or
//! tags), newest first among equals. Words are lower-cased runs of letters and digits; one-letter
//! words are ignored. This is deliberately simple and predictable: a memory is found by the words
//! it was written with.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolcat::{Access, Target, ToolContext, ToolError};

use super::{failed, now_rfc3339, state};
use toolcat_tools::workspace::Workspace;

const MEMORY_FILE: &str = "memory.json";
/// Most memories `memory_recall` returns.
pub const RECALL_MAX: usize = 50;

/// One saved memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Memory {
    /// Stable id, `m1`, `m2`, … in order of storing.
    pub id: String,
    /// The remembered fact.
    pub content: String,
    /// Labels for grouping and recall.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// When it was stored, RFC 3339 UTC.
    pub created_at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct MemoryFile {
    next_id: u64,
    memories: Vec<Memory>,
}

/// Arguments of `memory_store`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryStoreArgs {
    /// The fact to remember, self-contained: it is read later without today's context.
    pub content: String,
    /// Labels such as `preference` or `project:toolcat`.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// Result of `memory_store`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryStoreOutput {
    /// Id of the memory.
    pub id: String,
    /// False when the same text was already stored; `id` is then the existing memory's.
    pub stored: bool,
}

/// Target of `memory_store`: its state file, written.
pub fn memory_store_targets(
    _args: &MemoryStoreArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    state::target(ctx, MEMORY_FILE, Access::Write)
}

/// Saves a memory.
#[toolcat::tool(prepare = memory_store_targets)]
pub async fn memory_store(
    args: MemoryStoreArgs,
    ctx: &ToolContext,
) -> Result<MemoryStoreOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let content = args.content.trim().to_string();
    if content.is_empty() {
        return Err(failed("`content` is empty; pass the fact to remember"));
    }
    let tags: Vec<String> = args
        .tags
        .iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    state::update(&ws, MEMORY_FILE, move |file: &mut MemoryFile| {
        if let Some(existing) = file.memories.iter().find(|m| m.content == content) {
            return Ok(MemoryStoreOutput {
                id: existing.id.clone(),
                stored: false,
            });
        }
        file.next_id += 1;
        let id = format!("m{}", file.next_id);
        file.memories.push(Memory {
            id: id.clone(),
            content,
            tags,
            created_at: now_rfc3339(),
        });
        Ok(MemoryStoreOutput { id, stored: true })
    })
    .await
}

/// Arguments of `memory_recall`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryRecallArgs {
    /// Words to look for; without it (and without `tag`) the newest memories come back.
    #[serde(default)]
    pub query: Option<String>,
    /// Only memories carrying this tag.
    #[serde(default)]
    pub tag: Option<String>,
    /// Most memories to return; 10 when omitted, at most 50.
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
}

/// One recalled memory.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Recalled {
    /// The memory.
    #[serde(flatten)]
    pub memory: Memory,
    /// Distinct query words it contains; 0 when no query was given.
    pub score: usize,
}

/// Result of `memory_recall`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryRecallOutput {
    /// Best matches first.
    pub memories: Vec<Recalled>,
    /// Memories stored in all.
    pub total_stored: usize,
}

/// Lower-cased words of two or more letters or digits.
fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 1)
        .map(str::to_lowercase)
        .collect()
}

/// Ranks `memories` for `args`.
fn recall(memories: &[Memory], args: &MemoryRecallArgs) -> Vec<Recalled> {
    let query = args.query.as_deref().map(words).unwrap_or_default();
    let tag = args.tag.as_deref().map(str::trim).filter(|t| !t.is_empty());
    let limit = args.limit.unwrap_or(10).clamp(1, RECALL_MAX);
    let mut hits: Vec<(usize, usize, &Memory)> = memories
        .iter()
        .enumerate()
        .filter(|(_, m)| tag.is_none_or(|t| m.tags.iter().any(|mt| mt.eq_ignore_ascii_case(t))))
        .filter_map(|(order, m)| {
            if query.is_empty() {
                return Some((0, order, m));
            }
            let mut have = words(&m.content);
            for t in &m.tags {
                have.extend(words(t));
            }
            let score = query.iter().filter(|w| have.contains(*w)).count();
            (score > 0).then_some((score, order, m))
        })
        .collect();
    hits.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    hits.into_iter()
        .take(limit)
        .map(|(score, _, m)| Recalled {
            memory: m.clone(),
            score,
        })
        .collect()
}

/// Target of `memory_recall`: its state file, read.
pub fn memory_recall_targets(
    _args: &MemoryRecallArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    state::target(ctx, MEMORY_FILE, Access::Read)
}

/// Finds memories by words or tag.
#[toolcat::tool(prepare = memory_recall_targets)]
pub async fn memory_recall(
    args: MemoryRecallArgs,
    ctx: &ToolContext,
) -> Result<MemoryRecallOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let file: MemoryFile = state::read(&ws, MEMORY_FILE).await?;
    Ok(MemoryRecallOutput {
        memories: recall(&file.memories, &args),
        total_stored: file.memories.len(),
    })
}

/// Arguments of `memory_forget`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryForgetArgs {
    /// Id of the memory to delete, as `memory_recall` shows it (`m12`).
    pub id: String,
}

/// Result of `memory_forget`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryForgetOutput {
    /// The deleted memory.
    pub forgotten: Memory,
}

/// Target of `memory_forget`: its state file, written.
pub fn memory_forget_targets(
    _args: &MemoryForgetArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    state::target(ctx, MEMORY_FILE, Access::Write)
}

/// Deletes a memory.
#[toolcat::tool(prepare = memory_forget_targets)]
pub async fn memory_forget(
    args: MemoryForgetArgs,
    ctx: &ToolContext,
) -> Result<MemoryForgetOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let id = args.id.trim().to_string();
    state::update(&ws, MEMORY_FILE, move |file: &mut MemoryFile| {
        let at = file
            .memories
            .iter()
            .position(|m| m.id == id)
            .ok_or_else(|| {
                failed(format!(
                    "there is no memory `{id}`; use `memory_recall` to find the right id"
                ))
            })?;
        Ok(MemoryForgetOutput {
            forgotten: file.memories.remove(at),
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn store(ctx: &ToolContext, content: &str, tags: &[&str]) -> MemoryStoreOutput {
        memory_store(
            MemoryStoreArgs {
                content: content.into(),
                tags: tags.iter().map(|t| t.to_string()).collect(),
            },
            ctx,
        )
        .await
        .expect("store")
    }

    fn ids(out: &MemoryRecallOutput) -> Vec<&str> {
        out.memories.iter().map(|r| r.memory.id.as_str()).collect()
    }

    #[tokio::test]
    async fn store_recall_and_forget() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ctx = ToolContext::new(dir.path());
        assert_eq!(
            store(&ctx, "The user prefers tabs over spaces", &["preference"])
                .await
                .id,
            "m1"
        );
        assert_eq!(
            store(&ctx, "Release builds use LTO", &["build"]).await.id,
            "m2"
        );
        assert_eq!(
            store(&ctx, "Tabs are banned in YAML files", &[]).await.id,
            "m3"
        );
        let again = store(&ctx, "Release builds use LTO", &[]).await;
        assert_eq!((again.id.as_str(), again.stored), ("m2", false));

        let query = |q: &str| MemoryRecallArgs {
            query: Some(q.into()),
            ..Default::default()
        };
        let tabs = memory_recall(query("tabs preference"), &ctx)
            .await
            .expect("recall");
        assert_eq!(ids(&tabs), vec!["m1", "m3"]);
        assert_eq!(tabs.memories[0].score, 2);
        assert_eq!(tabs.total_stored, 3);

        let by_tag = memory_recall(
            MemoryRecallArgs {
                tag: Some("BUILD".into()),
                ..Default::default()
            },
            &ctx,
        )
        .await
        .expect("recall");
        assert_eq!(ids(&by_tag), vec!["m2"]);
        let newest = memory_recall(
            MemoryRecallArgs {
                limit: Some(2),
                ..Default::default()
            },
            &ctx,
        )
        .await
        .expect("recall");
        assert_eq!(ids(&newest), vec!["m3", "m2"]);
        assert!(memory_recall(query("kubernetes"), &ctx)
            .await
            .expect("recall")
            .memories
            .is_empty());

        let forgotten = memory_forget(MemoryForgetArgs { id: "m1".into() }, &ctx)
            .await
            .expect("forget");
        assert_eq!(
            forgotten.forgotten.content,
            "The user prefers tabs over spaces"
        );
        let err = memory_forget(MemoryForgetArgs { id: "m1".into() }, &ctx)
            .await
            .expect_err("gone");
        assert!(err.to_string().contains("no memory `m1`"), "{err}");
        // Ids are never reused.
        assert_eq!(store(&ctx, "New fact", &[]).await.id, "m4");
    }
}
