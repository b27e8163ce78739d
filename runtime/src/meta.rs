//! The discovery meta-tools (tier `loop`, source `loop`), answered in one place for every front
//! end: [`crate::Session`] and the MCP server (`toolcat::mcp`, feature `mcp`) give the same
//! answers, within the scope each passes (the tools its caller can reach, its search budget, its
//! archive owner).
//!
//! - `tool_search {"query", "limit"?}`: counts against the caller's search budget, when it has
//!   one (a session's per turn); past it the answer is exactly
//!   `{"error":"search-budget-exhausted","budgetCap":CAP}` ([`budget_exhausted`]). A query that is
//!   a tool's exported or declared name returns that tool only; `select:A,B` returns exactly the
//!   named tools; the exact name of a deprecated tool (or, in a session, one of a toolset that
//!   is not active) returns no such tool but its replacement, when reachable, and the words of
//!   `hint` in `message`; anything else is BM25 ([`Catalog::search_in`] over the reachable set), fused
//!   with sentence-embedding cosines when the caller has them. `limit` defaults to the caller's
//!   ([`DEFAULT_SEARCH_LIMIT`] unless configured) and is clamped to 1..=[`MAX_SEARCH_LIMIT`].
//!   Hits answer `{"tools":[{"name","description"}],"searchesLeft":N}` (the description is
//!   [`one_line`]; `searchesLeft` only with a budget; `notice` when the query could not be
//!   embedded); zero hits answer
//!   `{"tools":[],"searchesLeft":N,"message":...,"toolsets":[{"name","description","active"}]}`
//!   with the toolsets of the profile. A search that fails internally answers
//!   `tool search failed: ERROR; the search was not counted, try again`.
//! - `tool_describe {"name"}`: `name` is one name or an array of names (`names` is accepted too);
//!   answers `{"tools":[{"name","description","inputSchema"}]}` plus `"notFound":[{"name","message"}]`
//!   for names outside the reachable set, `message` being the words of `hint` (unknown names and
//!   names outside what the caller may know alike); a deprecated tool the host allows is
//!   described with a `deprecated` notice and does not join the active set; an error only when
//!   nothing was found. Costs no search budget.
//!
//! A name a caller cannot call is classified once, by `resolve` (`Unavailable`), and
//! answered with `hint`: the one recovery that can succeed in the caller's state (load it,
//! switch a named toolset on, call the replacement, pick one of an ambiguous name's tools), or
//! that no tool of the name is available — never a search that would find something else.
//! - `tool_call {"name","arguments"?}`: the caller runs the named tool exactly as a direct call
//!   (arguments default to `{}`); inside it, `tool_call` answers
//!   ``` `tool_call` cannot call `tool_call`; pass the tool to run as `name` ```.
//! - `read_tool_result {"reference","offset"?,"length"?}`: with a result archive it answers
//!   `{"reference","offset","length","totalChars","nextOffset","truncated","text"}`, offsets and
//!   lengths in characters (default length: the archive's inline budget), reading only results
//!   archived for the caller's [`ArchiveOwner`]; an unknown, evicted or foreign reference answers
//!   the archive's error text. Without an archive it answers
//!   ``no archived result `REF`: this session archives no tool results, every result was sent whole``.
//!
//! Arguments that do not fit a meta-tool's input schema answer
//! `{"error":"invalid-arguments","tool":NAME,"errors":[{"instancePath","message"}],"inputSchema":{...}}`.

use serde_json::{json, Map, Value};
use toolcat_catalog::model::{Status, Tier, Visibility};
use toolcat_catalog::tables::bit;

use crate::archive::ArchiveOwner;
use crate::catalog::{exported_schema, Catalog, ProfileId, ToolIndex, ToolSource, ToolsetId};
use crate::coordinator::Coordinator;

/// Hits of a `tool_search` without `limit`: 5.
pub const DEFAULT_SEARCH_LIMIT: usize = 5;
/// Most hits of one `tool_search` (the `maximum` of its `limit` in the input schema): 50.
pub const MAX_SEARCH_LIMIT: usize = 50;

/// The meta-tools (tier `loop`, source `loop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetaTool {
    /// `tool_search`.
    Search,
    /// `tool_describe`.
    Describe,
    /// `tool_call`.
    Call,
    /// `read_tool_result`.
    ReadResult,
    /// `run_code`: a Code Mode program, answered by the session's script engine
    /// ([`crate::code_mode`]), never here.
    RunCode,
}

impl MetaTool {
    /// The meta-tool tool `t` is, if any.
    pub fn of(catalog: &Catalog, t: ToolIndex) -> Option<MetaTool> {
        if catalog.source(t) != ToolSource::Loop {
            return None;
        }
        match catalog.name(t) {
            "tool_search" => Some(MetaTool::Search),
            "tool_describe" => Some(MetaTool::Describe),
            "tool_call" => Some(MetaTool::Call),
            "read_tool_result" => Some(MetaTool::ReadResult),
            "run_code" => Some(MetaTool::RunCode),
            _ => None,
        }
    }

    /// Its declared name.
    pub const fn name(self) -> &'static str {
        match self {
            MetaTool::Search => "tool_search",
            MetaTool::Describe => "tool_describe",
            MetaTool::Call => "tool_call",
            MetaTool::ReadResult => "read_tool_result",
            MetaTool::RunCode => "run_code",
        }
    }
}

/// What a call came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// [`Catalog::call`] ran the tool; `ok` is false when it returned an error.
    Ran { tool: ToolIndex, ok: bool },
    /// `tool_search` answered these hits (none: the zero-hit answer).
    Found { tools: Vec<ToolIndex> },
    /// `tool_search` past the budget.
    BudgetExhausted,
    /// `tool_describe` answered these definitions.
    Described { tools: Vec<ToolIndex> },
    /// The name is not in the active set; nothing ran.
    NotInActiveSet,
    /// The arguments do not fit the tool's input schema; nothing ran, unless the handler itself
    /// refused them ([`CallResult::ran`] says which).
    InvalidArguments { tool: ToolIndex },
    /// A gated tool and no approval hook; nothing ran.
    NeedsApproval { tool: ToolIndex },
    /// The approval hook said no; nothing ran.
    Denied { tool: ToolIndex },
    /// Over the tool's `rate_limit`; nothing ran. The text is
    /// `{"error":"rate-limited","message":...,"retryAfterMs":N}`.
    RateLimited { tool: ToolIndex },
    /// A target changed after the approval; nothing ran.
    TargetChanged { tool: ToolIndex },
    /// The call was cancelled with no side effect.
    Cancelled { tool: ToolIndex },
    /// The call stopped while its side effect may have happened (never replayed).
    OutcomeUnknown { tool: ToolIndex },
    /// `read_tool_result` answered a slice of an archived result.
    ReadResult,
    /// A meta-tool could not answer (a nested `tool_call`, an unknown result reference, an
    /// internal search error).
    Failed,
}

impl Outcome {
    /// Every [`Outcome::kind`], for transcript expectations.
    pub const KINDS: &'static [&'static str] = &[
        "ran",
        "tool-error",
        "found",
        "no-hits",
        "budget-exhausted",
        "described",
        "not-in-active-set",
        "invalid-arguments",
        "needs-approval",
        "denied",
        "rate-limited",
        "target-changed",
        "cancelled",
        "outcome-unknown",
        "read-result",
        "failed",
    ];

    /// A kebab-case word for the outcome: `ran` (ok), `tool-error` (ran, failed), `found`,
    /// `no-hits`, `budget-exhausted`, `described`, `not-in-active-set`, `invalid-arguments`,
    /// `needs-approval`, `denied`, `rate-limited`, `target-changed`, `cancelled`,
    /// `outcome-unknown`, `read-result`, `failed`.
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Ran { ok: true, .. } => "ran",
            Outcome::Ran { ok: false, .. } => "tool-error",
            Outcome::Found { tools } if tools.is_empty() => "no-hits",
            Outcome::Found { .. } => "found",
            Outcome::BudgetExhausted => "budget-exhausted",
            Outcome::Described { .. } => "described",
            Outcome::NotInActiveSet => "not-in-active-set",
            Outcome::InvalidArguments { .. } => "invalid-arguments",
            Outcome::NeedsApproval { .. } => "needs-approval",
            Outcome::Denied { .. } => "denied",
            Outcome::RateLimited { .. } => "rate-limited",
            Outcome::TargetChanged { .. } => "target-changed",
            Outcome::Cancelled { .. } => "cancelled",
            Outcome::OutcomeUnknown { .. } => "outcome-unknown",
            Outcome::ReadResult => "read-result",
            Outcome::Failed => "failed",
        }
    }
}

/// The answer to one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResult {
    /// The result as text: exactly what the model receives when [`CallResult::content`] is
    /// empty (every provider but one case of Anthropic's), else the same answer as JSON text, for
    /// logs and transcripts.
    pub text: String,
    /// Structured content blocks the model receives instead of `text`, when the session's
    /// provider takes them; empty: one text block of `text` ([`CallResult::blocks`]). Today only
    /// an Anthropic session's `tool_search` hits fill it: a short text block and one
    /// [`ContentBlock::ToolReference`] per hit.
    pub content: Vec<ContentBlock>,
    /// Whether the result is an error (MCP `isError`).
    pub is_error: bool,
    /// What happened.
    pub outcome: Outcome,
    /// The tool handed to [`Catalog::call`], if any: the only way a call has effects.
    pub ran: Option<ToolIndex>,
}

impl CallResult {
    pub(crate) fn error(text: String, outcome: Outcome) -> Self {
        CallResult {
            text,
            content: Vec::new(),
            is_error: true,
            outcome,
            ran: None,
        }
    }

    /// The content blocks the model receives: [`CallResult::content`], or one
    /// [`ContentBlock::Text`] of [`CallResult::text`] when it is empty.
    pub fn blocks(&self) -> Vec<ContentBlock> {
        if self.content.is_empty() {
            vec![ContentBlock::Text {
                text: self.text.clone(),
            }]
        } else {
            self.content.clone()
        }
    }
}

/// One content block of a tool result, serialized in the shape of Anthropic's `tool_result`
/// content: `{"type":"text","text"}` or `{"type":"tool_reference","tool_name"}`.
///
/// A `tool_reference` block in the result of a custom tool search loads the named tool, defined
/// in the request with `"defer_loading": true`, into the model's context
/// (<https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool>).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool the model may call from now on, by its exported name.
    ToolReference {
        /// The tool's exported name.
        tool_name: String,
    },
}

/// A caller's `tool_search` budget: `cap` searches, `used` of them already answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    pub cap: usize,
    pub used: usize,
}

/// What a meta-tool answers within: one caller's view of the catalog.
pub(crate) struct Scope<'a, 'c> {
    pub catalog: &'c Catalog,
    /// Validates the meta-tools' arguments and holds the result archive.
    pub coordinator: &'a Coordinator<'c>,
    /// The profile whose toolsets a zero-hit search lists.
    pub profile: ProfileId,
    /// The tools search and describe may answer, as a bitset.
    pub reachable: &'a [u64],
    /// The owner of the results `read_tool_result` may read.
    pub owner: ArchiveOwner,
    /// Hits of a `tool_search` without `limit`.
    pub search_limit: usize,
    /// Co-selection of a `tool_search`'s hits by server or toolset ([`crate::cover`]); `None`:
    /// the ranking's own order.
    pub co_select: Option<crate::cover::CoSelect>,
    /// The search budget; `None`: searches are not counted.
    pub budget: Option<Budget>,
    /// The tools a refusal may name: a session's profile, an MCP server's profile ∩ scope
    /// (deprecated tools and meta-tools included). A name outside it is answered exactly as an
    /// unknown one ([`Unavailable::NotAvailable`]).
    pub known: &'a [u64],
    /// The tools callable right now (a session's active set; an MCP server's listed set).
    pub active: &'a [u64],
    /// The active toolsets; `None`: the caller has no toolsets to switch (an MCP server).
    pub toolsets: Option<&'a [ToolsetId]>,
    /// Whether deprecated tools of the caller's reach are described and run (the host's
    /// opt-in); never returned by a search either way.
    pub allow_deprecated: bool,
}

/// The cosines of a `tool_search` query with every tool and the weight to fuse them with BM25 at,
/// or why the query could not be embedded (then BM25 and a `notice`); `None`: BM25.
pub(crate) type Dense = Option<Result<(Vec<f32>, crate::fusion::DenseWeight), String>>;

/// What a meta-tool call came to.
pub(crate) enum Answer {
    /// The answer (for `tool_search` and `tool_describe`, [`Outcome::Found`] and
    /// [`Outcome::Described`] name the tools to make callable; a `Found` counts one search).
    Done(CallResult),
    /// `tool_call`: the caller runs `name` with `arguments` exactly as a direct call, answering
    /// a meta-tool there with [`answer_nested`].
    Call { name: String, arguments: Value },
}

/// The answer to meta-tool `meta` (tool `t`) called with `arguments` (see the module docs).
pub(crate) fn answer(
    scope: &Scope<'_, '_>,
    meta: MetaTool,
    t: ToolIndex,
    arguments: &Value,
    dense: Dense,
) -> Answer {
    match meta {
        MetaTool::Search => Answer::Done(tool_search(scope, t, arguments, dense)),
        MetaTool::Describe => Answer::Done(tool_describe(scope, t, arguments)),
        MetaTool::ReadResult => Answer::Done(read_tool_result(scope, t, arguments)),
        // A session runs programs itself ([`crate::Session::with_script_engine`]); any other
        // caller (an MCP server) has no engine.
        MetaTool::RunCode => Answer::Done(CallResult::error(
            "`run_code` runs only in a session with a script engine: this caller has none, so nothing ran; call the tools directly".to_string(),
            Outcome::Failed,
        )),
        MetaTool::Call => {
            let errors = scope.coordinator.validation_errors(t, arguments);
            if !errors.is_empty() {
                return Answer::Done(invalid_arguments(scope.catalog, t, errors, None));
            }
            let name = arguments["name"].as_str().unwrap_or_default().to_string();
            let arguments = match arguments.get("arguments") {
                Some(Value::Null) | None => Value::Object(Map::new()),
                Some(v) => v.clone(),
            };
            Answer::Call { name, arguments }
        }
    }
}

/// The answer to meta-tool `meta` called through `tool_call`: [`answer`], with a nested
/// `tool_call` refused.
pub(crate) fn answer_nested(
    scope: &Scope<'_, '_>,
    meta: MetaTool,
    t: ToolIndex,
    arguments: &Value,
    dense: Dense,
) -> CallResult {
    match answer(scope, meta, t, arguments, dense) {
        Answer::Done(result) => result,
        Answer::Call { .. } => CallResult::error(
            "`tool_call` cannot call `tool_call`; pass the tool to run as `name`".to_string(),
            Outcome::Failed,
        ),
    }
}

/// The `invalid-arguments` answer for `t`:
/// `{"error":"invalid-arguments","tool":NAME,"errors":[...],"inputSchema":{...}}`.
pub(crate) fn invalid_arguments(
    catalog: &Catalog,
    t: ToolIndex,
    errors: Vec<Value>,
    ran: Option<ToolIndex>,
) -> CallResult {
    let text = json!({
        "error": "invalid-arguments",
        "tool": catalog.exported_name(t),
        "errors": errors,
        "inputSchema": exported_schema(catalog, t),
    })
    .to_string();
    CallResult {
        text,
        content: Vec::new(),
        is_error: true,
        outcome: Outcome::InvalidArguments { tool: t },
        ran,
    }
}

/// The hits of a `tool_search` for `query`: BM25 or fused, co-selected when the scope asks.
fn ranked_hits(
    scope: &Scope<'_, '_>,
    query: &str,
    limit: usize,
    dense: &Dense,
) -> Result<Vec<crate::Hit>, crate::SearchError> {
    let catalog = scope.catalog;
    let depth = match scope.co_select {
        Some(_) => limit.max(crate::cover::RANK_DEPTH),
        None => limit,
    };
    let ranked = match dense {
        Some(Ok((cosines, weight))) => {
            catalog.search_fused_in(query, scope.reachable, depth, cosines, *weight)
        }
        _ => catalog.search_in(query, scope.reachable, depth),
    }?;
    Ok(match scope.co_select {
        Some(co) => catalog.co_select(&ranked, scope.reachable, limit, co),
        None => ranked,
    })
}

fn tool_search(
    scope: &Scope<'_, '_>,
    meta: ToolIndex,
    arguments: &Value,
    dense: Dense,
) -> CallResult {
    let catalog = scope.catalog;
    let errors = scope.coordinator.validation_errors(meta, arguments);
    if !errors.is_empty() {
        return invalid_arguments(catalog, meta, errors, None);
    }
    if let Some(budget) = scope.budget {
        if budget.used >= budget.cap {
            return CallResult::error(budget_exhausted(budget.cap), Outcome::BudgetExhausted);
        }
    }
    let query = arguments["query"].as_str().unwrap_or_default();
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(scope.search_limit, |l| {
            usize::try_from(l).unwrap_or(MAX_SEARCH_LIMIT)
        })
        .clamp(1, MAX_SEARCH_LIMIT);
    // Deprecated tools named exactly: never hits, answered with their notices, their
    // replacements (when reachable) as hits. A tool of an inactive toolset named exactly: no
    // hits, the notice names the toolset to switch on.
    let mut notices: Vec<String> = Vec::new();
    let named_hit = |name: &str, hits: &mut Vec<ToolIndex>, notices: &mut Vec<String>| {
        let push = |t: ToolIndex, hits: &mut Vec<ToolIndex>| {
            if bit(scope.reachable, t.index()) && !hits.contains(&t) && hits.len() < limit {
                hits.push(t);
            }
        };
        match resolve(scope, name) {
            Ok(t) if catalog.status(t) == Status::Deprecated => {
                notices.push(deprecation(scope, t, true));
                if let Some(r) = catalog.replaced_by(t) {
                    push(r, hits);
                }
            }
            Err(Unavailable::Deprecated(t)) => {
                notices.push(deprecation(scope, t, true));
                if let Some(r) = catalog.replaced_by(t) {
                    push(r, hits);
                }
            }
            Err(why @ Unavailable::InactiveToolset { .. }) => {
                notices.push(hint(scope, name, &why));
            }
            Ok(t) | Err(Unavailable::NotLoaded(t)) => push(t, hits),
            Err(_) => return false,
        }
        true
    };
    let exact = {
        let mut hits = Vec::new();
        let q = query.trim();
        let answered = !q.starts_with("select:")
            && catalog.tool(q).is_ok_and(|t| {
                bit(scope.known, t.index())
                    && (catalog.status(t) == Status::Deprecated || !bit(scope.reachable, t.index()))
            })
            && named_hit(q, &mut hits, &mut notices);
        answered.then_some(hits)
    };
    let hits: Vec<ToolIndex> = match (exact, query.trim().strip_prefix("select:")) {
        (Some(hits), _) => hits,
        (None, Some(names)) => {
            let mut hits = Vec::new();
            for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                named_hit(name, &mut hits, &mut notices);
            }
            hits
        }
        (None, None) => match ranked_hits(scope, query, limit, &dense) {
            Ok(hits) => {
                let exact = hits.first().is_some_and(|h| h.kind == crate::HitKind::Name);
                hits.iter()
                    .filter(|h| !exact || h.kind == crate::HitKind::Name)
                    .map(|h| h.tool)
                    .collect()
            }
            Err(e) => {
                return CallResult::error(
                    format!("tool search failed: {e}; the search was not counted, try again"),
                    Outcome::Failed,
                )
            }
        },
    };
    let left = scope.budget.map(|b| b.cap.saturating_sub(b.used + 1));
    let mut answer = Map::new();
    if hits.is_empty() {
        answer.insert("tools".into(), json!([]));
        if let Some(left) = left {
            answer.insert("searchesLeft".into(), json!(left));
        }
        let message = if notices.is_empty() {
            format!("no tool this session can reach matches `{}`; the capability may be in a toolset that is not active (see `toolsets`), or try other words", query.trim())
        } else {
            notices.join("; ")
        };
        answer.insert("message".into(), json!(message));
        answer.insert("toolsets".into(), Value::Array(toolsets(scope)));
    } else {
        let tools: Vec<Value> = hits
            .iter()
            .map(|&t| json!({"name": catalog.exported_name(t), "description": one_line(catalog.description(t))}))
            .collect();
        answer.insert("tools".into(), Value::Array(tools));
        if let Some(left) = left {
            answer.insert("searchesLeft".into(), json!(left));
        }
        if !notices.is_empty() {
            answer.insert("message".into(), json!(notices.join("; ")));
        }
        if let Some(Err(notice)) = dense {
            answer.insert("notice".into(), json!(notice));
        }
    }
    CallResult {
        text: Value::Object(answer).to_string(),
        content: Vec::new(),
        is_error: false,
        outcome: Outcome::Found { tools: hits },
        ran: None,
    }
}

/// The toolsets of the profile a zero-hit search lists, so the model does not conclude the
/// capability is missing: `{"name","description","active"}`, `active` when every tool of the
/// toolset the profile owns (meta-tools and deprecated tools aside) is reachable.
fn toolsets(scope: &Scope<'_, '_>) -> Vec<Value> {
    let c = scope.catalog;
    let profile = c.profile_tools(scope.profile);
    let meta = c.tier_tools(Tier::Loop);
    let deprecated = c.status_tools(Status::Deprecated);
    c.toolsets()
        .filter_map(|s| {
            let members = c.toolset_tools(s);
            let mut any = false;
            let mut active = true;
            for k in 0..c.words() {
                let owned = members[k] & profile[k] & !meta[k] & !deprecated[k];
                any |= owned != 0;
                active &= owned & !scope.reachable.get(k).copied().unwrap_or(0) == 0;
            }
            any.then(|| {
                json!({"name": c.toolset_name(s), "description": c.toolset_description(s), "active": active})
            })
        })
        .collect()
}

fn tool_describe(scope: &Scope<'_, '_>, meta: ToolIndex, arguments: &Value) -> CallResult {
    let catalog = scope.catalog;
    let Some(names) = describe_names(arguments) else {
        let errors = vec![json!({
            "instancePath": "/name",
            "message": "`name` must be a tool name or an array of tool names",
        })];
        return invalid_arguments(catalog, meta, errors, None);
    };
    let mut tools = Vec::new();
    let mut found = Vec::new();
    let mut missing = Vec::new();
    let mut described = Vec::new();
    for name in &names {
        match resolve(scope, name) {
            Ok(t) | Err(Unavailable::NotLoaded(t)) => {
                if !described.contains(&t) {
                    described.push(t);
                    let mut tool = json!({
                        "name": catalog.exported_name(t),
                        "description": catalog.description(t),
                        "inputSchema": exported_schema(catalog, t),
                    });
                    // A deprecated tool the host allows is described, with its notice, but
                    // never joins the active set (no plan shows it).
                    if catalog.status(t) == Status::Deprecated {
                        tool["deprecated"] = json!(deprecation(scope, t, false));
                    } else {
                        found.push(t);
                    }
                    tools.push(tool);
                }
            }
            Err(why) => missing.push(json!({
                "name": name,
                "message": hint(scope, name, &why),
            })),
        }
    }
    let mut answer = Map::new();
    answer.insert("tools".into(), Value::Array(tools));
    if !missing.is_empty() {
        answer.insert("notFound".into(), Value::Array(missing));
    }
    CallResult {
        text: Value::Object(answer).to_string(),
        content: Vec::new(),
        is_error: described.is_empty(),
        outcome: Outcome::Described { tools: found },
        ran: None,
    }
}

fn read_tool_result(scope: &Scope<'_, '_>, meta: ToolIndex, arguments: &Value) -> CallResult {
    let errors = scope.coordinator.validation_errors(meta, arguments);
    if !errors.is_empty() {
        return invalid_arguments(scope.catalog, meta, errors, None);
    }
    let reference = arguments["reference"].as_str().unwrap_or_default();
    let Some(archive) = scope.coordinator.archive() else {
        return CallResult::error(
            format!("no archived result `{reference}`: this session archives no tool results, every result was sent whole"),
            Outcome::Failed,
        );
    };
    let number = |key: &str| {
        arguments
            .get(key)
            .and_then(Value::as_u64)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    };
    let offset = number("offset").unwrap_or(0);
    let length = number("length").unwrap_or(archive.limits().inline_budget);
    match archive.read(scope.owner, reference, offset, length) {
        Ok(slice) => CallResult {
            text: json!({
                "reference": reference,
                "offset": slice.offset,
                "length": slice.length,
                "totalChars": slice.total_chars,
                "nextOffset": slice.next_offset,
                "truncated": slice.truncated,
                "text": slice.text,
            })
            .to_string(),
            content: Vec::new(),
            is_error: false,
            outcome: Outcome::ReadResult,
            ran: None,
        },
        Err(e) => CallResult::error(e.to_string(), Outcome::Failed),
    }
}

/// The answer to a `tool_search` past the budget, byte for byte:
/// `{"error":"search-budget-exhausted","budgetCap":CAP}`.
pub fn budget_exhausted(cap: usize) -> String {
    format!(r#"{{"error":"search-budget-exhausted","budgetCap":{cap}}}"#)
}

/// Abbreviations whose `.` ends no sentence in [`one_line`] (compared ignoring ASCII case, as
/// whole words): `e.g`, `i.e`, `etc`, `vs`, `cf`.
pub const ABBREVIATIONS: [&str; 5] = ["e.g", "i.e", "etc", "vs", "cf"];

/// The one-line description of a search hit (and of a manifest entry): the first sentence of the
/// description's first line (up to and including the first `. ` that does not end one of
/// [`ABBREVIATIONS`]), at most 200 characters (cut with `…`).
pub fn one_line(description: &str) -> String {
    const MAX: usize = 200;
    let line = description.lines().next().unwrap_or("").trim();
    let end = line.match_indices(". ").map(|(k, _)| k).find(|&k| {
        let before = &line[..k];
        !ABBREVIATIONS.iter().any(|a| {
            before.len() >= a.len()
                && before[before.len() - a.len()..].eq_ignore_ascii_case(a)
                && !before[..before.len() - a.len()].ends_with(|c: char| c.is_alphanumeric())
        })
    });
    let sentence = match end {
        Some(k) => &line[..=k],
        None => line,
    };
    if sentence.chars().count() <= MAX {
        return sentence.to_string();
    }
    let mut cut: String = sentence.chars().take(MAX - 1).collect();
    cut.push('…');
    cut
}

/// The names a `tool_describe` call asks for: `name` (or `names`), a string or an array of
/// strings, not empty. `None` when the arguments have another shape.
fn describe_names(arguments: &Value) -> Option<Vec<String>> {
    let value = arguments.get("name").or_else(|| arguments.get("names"))?;
    let names: Vec<String> = match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<_>>()?,
        _ => return None,
    };
    (!names.is_empty()).then_some(names)
}

/// Why a name is not callable by a caller, each with the one recovery that can succeed in the
/// caller's current state ([`hint`]). Classified within a [`Scope`]: nothing outside
/// [`Scope::known`] is ever named, so an unknown name and a name outside the caller's profile
/// (or an MCP server's scope) are answered alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unavailable {
    /// Reachable but not loaded (a discoverable tool not found yet): a search or describe by
    /// name loads it.
    NotLoaded(ToolIndex),
    /// Known, but in none of the active toolsets: the host switches one of `toolsets` on.
    InactiveToolset {
        tool: ToolIndex,
        toolsets: Vec<ToolsetId>,
    },
    /// Deprecated, and the host did not opt in: answered with its `replaced_by` and `removal`.
    Deprecated(ToolIndex),
    /// A declared name that several known tools share (in catalog order): each is called by
    /// its exported name.
    Ambiguous(Vec<ToolIndex>),
    /// Unknown, or outside what the caller may know.
    NotAvailable,
}

/// The tool `name` names for the caller of `scope` if it is callable now: in
/// [`Scope::active`], or a deprecated tool within reach (profile ∩ active toolsets, or an MCP
/// server's scope) that the host allows ([`Scope::allow_deprecated`]). Otherwise why not.
/// `name` is exported, or declared: a declared name several known tools share is
/// [`Unavailable::Ambiguous`], one that only one known tool has names that tool.
pub(crate) fn resolve(scope: &Scope<'_, '_>, name: &str) -> Result<ToolIndex, Unavailable> {
    let c = scope.catalog;
    let t = match c.tool(name) {
        Ok(t) => t,
        Err(crate::error::NameError::Ambiguous { candidates, .. }) => {
            let choices: Vec<ToolIndex> = candidates
                .iter()
                .filter_map(|n| c.tool(n).ok())
                .filter(|t| bit(scope.known, t.index()))
                .collect();
            match choices.as_slice() {
                [] => return Err(Unavailable::NotAvailable),
                [one] => *one,
                _ => return Err(Unavailable::Ambiguous(choices)),
            }
        }
        Err(_) => return Err(Unavailable::NotAvailable),
    };
    let i = t.index();
    if i >= c.len() || !bit(scope.known, i) {
        return Err(Unavailable::NotAvailable);
    }
    let deprecated = c.status(t) == Status::Deprecated;
    if deprecated && !scope.allow_deprecated {
        return Err(Unavailable::Deprecated(t));
    }
    if bit(scope.active, i) {
        return Ok(t);
    }
    // A meta-tool the caller was not given is not offered.
    if c.tier(t) == Tier::Loop {
        return Err(Unavailable::NotAvailable);
    }
    if bit(scope.reachable, i) {
        return Err(Unavailable::NotLoaded(t));
    }
    let Some(active) = scope.toolsets else {
        return Err(Unavailable::NotAvailable);
    };
    if active.iter().any(|&s| bit(c.toolset_tools(s), i)) {
        // In reach: a deprecated tool the host allows; anything else in reach but not
        // reachable is one the caller cannot be sent (a provider's unsendable schema).
        return if deprecated {
            Ok(t)
        } else {
            Err(Unavailable::NotAvailable)
        };
    }
    let toolsets: Vec<ToolsetId> = c
        .toolsets()
        .filter(|&s| bit(c.toolset_tools(s), i))
        .collect();
    if toolsets.is_empty() {
        return Err(Unavailable::NotAvailable);
    }
    Err(Unavailable::InactiveToolset { tool: t, toolsets })
}

/// Where the caller is, for the words of a hint: `this session`, or `this server` (no toolsets).
fn place(scope: &Scope<'_, '_>) -> &'static str {
    if scope.toolsets.is_some() {
        "this session"
    } else {
        "this server"
    }
}

/// The meta-tool call that loads `name` (a reachable tool not loaded yet) in the caller's
/// current state: `tool_search(query='NAME')` while the search budget lasts, else
/// `tool_describe(name='NAME')` (no budget); `None` when the caller has neither.
fn load_call(scope: &Scope<'_, '_>, name: &str) -> Option<String> {
    let c = scope.catalog;
    let has = |m: MetaTool| {
        c.tool(m.name())
            .is_ok_and(|t| MetaTool::of(c, t) == Some(m) && bit(scope.active, t.index()))
    };
    let budget_left = scope.budget.is_none_or(|b| b.used < b.cap);
    if has(MetaTool::Search) && budget_left {
        Some(format!("tool_search(query='{name}')"))
    } else if has(MetaTool::Describe) {
        Some(format!("tool_describe(name='{name}')"))
    } else {
        None
    }
}

/// The words of `why` for a name `name` the caller gave (see [`Unavailable`]); each names a
/// step that can succeed in the caller's current state, and nothing outside [`Scope::known`]:
/// - not loaded: `Call tool_search(query='NAME') to discover it` (or `tool_describe` once the
///   search budget is spent);
/// - inactive toolset: `` `NAME` is in toolset `git`, which is not active in this session: the
///   host can switch it on `` … (then the load call, for a discoverable tool);
/// - deprecated: [`deprecation`];
/// - ambiguous: `` `NAME` names several tools; call one by its exported name: `a`, `b` ``;
/// - otherwise: `` No tool named `NAME` is available to this session `` (`this server` for an
///   MCP server).
pub(crate) fn hint(scope: &Scope<'_, '_>, name: &str, why: &Unavailable) -> String {
    let c = scope.catalog;
    match why {
        Unavailable::NotLoaded(_) => match load_call(scope, name) {
            Some(call) => format!("Call {call} to discover it"),
            None => format!(
                "`{name}` is not loaded, and this turn's search budget is spent: call tool_search(query='{name}') next turn to load it"
            ),
        },
        Unavailable::InactiveToolset { tool, toolsets } => {
            let names: Vec<String> = toolsets
                .iter()
                .map(|&s| format!("`{}`", c.toolset_name(s)))
                .collect();
            let which = if names.len() == 1 {
                format!("toolset {}, which is not active", names[0])
            } else {
                format!("toolsets {}, none of them active", names.join(", "))
            };
            let then = if c.visibility(*tool) == Visibility::Discoverable {
                format!(", then call tool_search(query='{name}') to load it")
            } else {
                String::new()
            };
            format!(
                "`{name}` is in {which} in {}: the host can switch {} on (a session's toolsets; ask the user){then}",
                place(scope),
                if names.len() == 1 { "it" } else { "one of them" },
            )
        }
        Unavailable::Deprecated(t) => deprecation(scope, *t, false),
        Unavailable::Ambiguous(choices) => {
            let names: Vec<String> = choices
                .iter()
                .map(|&t| format!("`{}`", c.exported_name(t)))
                .collect();
            let load = choices
                .iter()
                .any(|&t| !bit(scope.active, t.index()))
                .then(|| load_call(scope, name))
                .flatten()
                .map(|call| format!(" ({call} loads them)"))
                .unwrap_or_default();
            format!(
                "`{name}` names several tools; call one by its exported name: {}{load}",
                names.join(", ")
            )
        }
        Unavailable::NotAvailable => {
            format!("No tool named `{name}` is available to {}", place(scope))
        }
    }
}

/// The answer to a deprecated tool `t`, in words a model can act on:
/// `` `old` is deprecated (removal 2027-01-31); call `new` instead `` — the removal clause when
/// the row has a date; the replacement (`replaced_by`) only when the caller may know it, with
/// the step that makes it callable when it is not yet (`loaded`: this answer loads it itself);
/// otherwise `` `old` is deprecated (…) and has no replacement available to this session ``.
pub(crate) fn deprecation(scope: &Scope<'_, '_>, t: ToolIndex, loaded: bool) -> String {
    let c = scope.catalog;
    let replacement = c
        .replaced_by(t)
        .filter(|r| bit(scope.known, r.index()) && c.status(*r) != Status::Deprecated)
        .and_then(|r| {
            let new = c.exported_name(r);
            if loaded {
                return Some((r, String::new()));
            }
            match resolve(scope, new) {
                Ok(_) => Some((r, String::new())),
                Err(why @ (Unavailable::NotLoaded(_) | Unavailable::InactiveToolset { .. })) => {
                    Some((
                        r,
                        format!(" ({})", lowercase_first(&hint(scope, new, &why))),
                    ))
                }
                Err(_) => None,
            }
        });
    deprecation_words(c, t, replacement, place(scope))
}

/// The notice of a deprecated tool `t` for a caller that may run any tool of the catalog
/// (`toolcat call`): `` `old` is deprecated (removal 2027-01-31); call `new` instead ``, or
/// `` … and has no replacement available to this catalog `` (the words of every refusal of a
/// deprecated tool). `None` when `t` is not deprecated.
pub fn deprecation_notice(catalog: &Catalog, t: ToolIndex) -> Option<String> {
    if catalog.status(t) != Status::Deprecated {
        return None;
    }
    let replacement = catalog
        .replaced_by(t)
        .filter(|r| catalog.status(*r) != Status::Deprecated)
        .map(|r| (r, String::new()));
    Some(deprecation_words(catalog, t, replacement, "this catalog"))
}

/// The words of [`deprecation`]: `replacement` is the tool to call instead and the step that
/// makes it callable (empty when it is), `place` where the caller is.
fn deprecation_words(
    c: &Catalog,
    t: ToolIndex,
    replacement: Option<(ToolIndex, String)>,
    place: &str,
) -> String {
    let old = c.exported_name(t);
    let removal = c
        .removal(t)
        .map(|d| format!(" (removal {d})"))
        .unwrap_or_default();
    match replacement {
        Some((r, then)) => format!(
            "`{old}` is deprecated{removal}; call `{}` instead{then}",
            c.exported_name(r)
        ),
        None => {
            format!("`{old}` is deprecated{removal} and has no replacement available to {place}")
        }
    }
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
