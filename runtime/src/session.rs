//! [`Session`]: the discovery loop of one conversation, turn by turn and step by step.
//!
//! A session holds a catalog, a profile, the active toolsets, the tools discovered so far and a
//! [`TurnPlanner`] reused for every plan. The host drives it:
//!
//! 1. [`Session::begin_turn`] with the user's message: resets the per-turn search budget, forgets
//!    discovered tools that are no longer registered and evicts the least recently used ones past
//!    [`SessionOptions::discovered_cap`], adds the tools last turn's searches left out for the cap,
//!    the tools the message names ([`named_in_message`]) and preselection's picks
//!    ([`crate::preselect`]) — within the cap, see below — and returns the plan: the definitions
//!    to send. [`TurnReport`] says what joined, what was evicted and what was left out.
//! 2. For each model step, the host sends [`Session::plan`] (or [`Session::definitions`]) and passes
//!    each tool call the model makes to [`Session::handle_call`], which returns exactly what the
//!    model receives ([`CallResult::text`], or the blocks of [`CallResult::content`] when it has
//!    any) — or passes the provider's whole response body to [`Session::handle_response`], which
//!    answers every call of it in order and returns the messages to send back in the provider's
//!    shape ([`crate::provider`]).
//!
//! # The provider
//! [`SessionOptions::provider`] (an [`ExportFormat`], MCP-like by default) and
//! [`SessionOptions::hosted_search`] tell the session what the host sends the model, so that
//! every call is handled for it without a step the host could forget:
//! - OpenAI (Chat Completions or Responses): strict mode makes every property required and every
//!   optional one nullable, so the model sends `null` for an argument it leaves out. Before step 3
//!   of every call — a tool, a meta-tool, the inner call of `tool_call` — those `null`s are
//!   removed where the tool is exported strict ([`restore_openai_arguments`]); a `null` the tool's
//!   own schema accepts, or one given for a required property, stays.
//! - Anthropic: the export marks deferred tools `defer_loading: true`, and Anthropic loads a
//!   deferred tool from `tool_reference` blocks in a tool search's result. A `tool_search` with
//!   hits therefore answers, in [`CallResult::content`], a text block
//!   `N tools found and loaded: a, b. Searches left this turn: N.` and one
//!   `{"type":"tool_reference","tool_name":NAME}` per hit (`text` keeps the JSON answer below).
//!   Other answers and other providers: text only.
//! - Hosted search (Anthropic `tool_search_tool_bm25`, OpenAI Responses' hosted `tool_search`;
//!   ignored for other providers, [`Session::hosted_search`]): the provider loads deferred tools
//!   itself, so in step 1 a tool that is not active but deferred — reachable (profile ∩ active
//!   toolsets), discoverable, not deprecated — is accepted and joins the discovered tools. Nothing
//!   outside the reachable set is ever accepted.
//! - [`Session::handle_response`]: a call whose arguments string is not JSON runs nothing and
//!   answers `invalid-arguments` (`errors[0].message` says why) when the tool is callable, else
//!   the not-in-active-set answer; a body of another shape is a [`ProviderError`].
//!
//! # The active set
//! The tools the model may call at a step are the tools of the current plan: profile ∩ active
//! toolsets ∩ (inline ∪ discovered), closed over `requires`, minus deprecated ([`crate::plan`]).
//! Nothing else runs. Tools found by `tool_search` or described by `tool_describe` join it
//! *inside* that call, so the very next step can call them; tools the user names and
//! preselection picks join at the turn's start. All of them are discovered tools: appended at the
//! end of the definitions, in the order they joined, and kept across turns, so the definitions
//! only grow and each request is a byte-identical prefix of the next (prompt caching) until a
//! turn's start evicts. Discovered tools persist up to [`SessionOptions::discovered_cap`] (least
//! recently used evicted first — a tool's use is the last step it was called, named, or else
//! loaded; finding or describing a loaded tool again is no use — at the start of a turn, never in
//! the middle of one), and only while still registered: still in the profile and not deprecated.
//!
//! # The cap
//! [`Session::max_tools`] (the preset's or profile's `max_tools` or `client`, and
//! [`SessionOptions::max_tools`], the smallest) bounds [`Session::definitions`] at every step,
//! discovery meta-tools included, deferred definitions not (see [`Session::max_tools`]):
//! - inside a turn a tool that would pass it is not loaded, nor the lower hits after it (hits
//!   fill the room in rank order; a hit needs room for what it requires too): a `tool_search` or
//!   `tool_describe` answers the tools it loaded in `tools` and the others in
//!   `"leftOut":{"tools":[{"name","description"}],"message":...}` ([`left_out_message`]); a call
//!   of one answers that message and runs nothing; with hosted search a deferred tool past the
//!   cap is refused the same way;
//! - those tools join at the next turn's start ([`TurnReport::carried`]), then the tools the
//!   message names; each evicts the least recently used discovered tools that did not join this
//!   turn, only those whose eviction takes a definition out, until it fits
//!   ([`TurnReport::evicted`] names every definition that left, [`TurnReport::required`] every
//!   one that joined through `requires`). Preselection's picks are guesses: they take free room
//!   only, in rank order, and evict nothing. A tool that cannot fit is named in
//!   [`TurnReport::left_out`]. The core (inline tools, meta-tools and what they require) is never
//!   evicted: a catalog's cap below it is refused at build time (`E0422`), a
//!   [`SessionOptions::max_tools`] below it by [`Session::with_options`] ([`CapBelowCore`]).
//!
//! # A call, step by step
//! 1. The name (exported, or declared when unique) must be in the active set (or, with
//!    [`SessionOptions::allow_deprecated`], be a deprecated tool of profile ∩ active toolsets);
//!    otherwise nothing runs and the model reads `Tool 'NAME' not in active set. HINT`, the hint
//!    of [`crate::meta`] for why, one that can succeed now:
//!    - a reachable tool not loaded yet: exactly [`not_in_active_set`],
//!      `Tool 'NAME' not in active set. Call tool_search(query='NAME') to discover it, or use one
//!      of: a, b, c` — the list holds the exported names of the inline tools of the current plan
//!      (meta-tools aside), in plan order, separated by `, `, left out without inline tools;
//!      `tool_describe(name='NAME')` in place of the search once the turn's budget is spent;
//!    - a tool of the profile in no active toolset: `` `NAME` is in toolset `git`, which is not
//!      active in this session: the host can switch it on (...) `` (then the search that loads a
//!      discoverable one);
//!    - a deprecated tool: `` `old` is deprecated (removal 2027-01-31); call `new` instead ``;
//!    - a bare name several tools of the profile share: their exported names;
//!    - anything else (unknown, another profile's, a meta-tool not in the plan):
//!      `` No tool named `NAME` is available to this session; use one of: a, b, c ``.
//! 2. Meta-tools (source `loop`) are answered by [`crate::meta`], as the MCP server answers them,
//!    within the session's reachable set, search budget and archive owner:
//!    - `tool_search {"query", "limit"?}`: counts against the per-turn budget
//!      ([`SessionOptions::search_budget`], default 3); past it the answer is exactly
//!      `{"error":"search-budget-exhausted","budgetCap":3}` (with the configured cap). A query
//!      that is a tool's exported or declared name returns that tool only; `select:A,B` returns
//!      exactly the named tools; anything else is BM25 ([`Catalog::search_in`] over profile ∩
//!      active toolsets). Hits answer `{"tools":[{"name","description"}],"searchesLeft":N}`, the
//!      description being the first sentence ([`one_line`]); zero hits answer
//!      `{"tools":[],"searchesLeft":N,"message":...,"toolsets":[{"name","description","active"}]}`
//!      with the toolsets of the profile, so the model does not conclude the capability is
//!      missing.
//!    - `tool_describe {"name"}`: `name` is one name or an array of names (`names` is accepted
//!      too); answers `{"tools":[{"name","description","inputSchema"}]}` plus
//!      `"notFound":[{"name","message"}]` for names this session cannot reach. Described tools
//!      join the active set; describing costs no search budget.
//!    - `tool_call {"name","arguments"?}`: the named tool goes through steps 1–5 exactly as a
//!      direct call (a nested `tool_call` is refused).
//!    - `read_tool_result {"reference","offset"?,"length"?}`: with a result archive (a
//!      coordinator with [`Coordinator::with_archive`], see [`Session::with_coordinator`]) it
//!      answers `{"reference","offset","length","totalChars","nextOffset","truncated","text"}`,
//!      offsets and lengths in characters (default length: the archive's inline budget); an
//!      unknown or evicted reference answers the archive's error. Without an archive every result
//!      is sent whole, and it answers that no such reference exists.
//! 3. The arguments are validated against the tool's input JSON Schema (`jsonschema`); on failure
//!    nothing runs and the model reads
//!    `{"error":"invalid-arguments","tool":NAME,"errors":[{"instancePath","message"}],"inputSchema":{...}}`:
//!    the errors *and* the schema, so it can fix the call in one step.
//! 4. A tool of tier `gated` runs only when the host's approval hook ([`Session::with_approval`])
//!    approves the concrete call ([`ApprovalRequest`]: the arguments and the targets the tool's
//!    prepare step resolved, with fingerprints); without a hook it is refused, never run
//!    silently.
//! 5. The session's [`Coordinator`] runs it (steps 3–4 are its steps too, with the active set as
//!    the scope; see [`crate::coordinator`] for scheduling, re-verification, rate limits,
//!    records and the archive); the model reads the result as compact JSON (or, with an archive,
//!    a preview and a reference for a result over its inline budget), or the error's text. New
//!    refusals answer: a rate limit
//!    `{"error":"rate-limited","message":...,"retryAfterMs":N}`; a target that changed after the
//!    approval, a cancellation, or a call whose side effect is unknown, the error's message.
//!
//! Transcripts of turns and steps, for replay and for `toolcat session`, are described in
//! [`transcript`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolcat_catalog::model::{Status, Tier, Visibility};
use toolcat_catalog::tables::bit;
use tracing::Instrument as _;

use crate::archive::ArchiveOwner;
use crate::catalog::{Catalog, PresetId, ProfileId, ToolIndex, ToolsetId};
use crate::coordinator::{CallError, CallRequest, Coordinator};
use crate::error::NameError;
use crate::export::{
    export_plan_with, restore_openai_arguments, Export, ExportError, ExportFormat, ExportOptions,
    SearchMode,
};
use crate::handler::{ToolContext, ToolError};
use crate::meta::{self, Answer, Budget, Scope};

pub use crate::coordinator::{ApprovalRequest, MAX_VALIDATION_ERRORS};
pub use crate::meta::{
    budget_exhausted, one_line, CallResult, ContentBlock, MetaTool, Outcome, DEFAULT_SEARCH_LIMIT,
    MAX_SEARCH_LIMIT,
};
use crate::plan::{Plan, TurnInput, TurnPlanner};
use crate::preselect::{self, Bm25Preselector, PreselectReport, PreselectRequest, Preselector};
pub use crate::provider::{ProviderCall, ProviderError};

mod code_mode;
pub mod transcript;

/// `tool_search` calls answered per turn by default: 3.
pub const DEFAULT_SEARCH_BUDGET: usize = 3;
/// Discovered tools carried from one turn to the next by default: 20.
pub const DEFAULT_DISCOVERED_CAP: usize = 20;

/// The tunable numbers of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionOptions {
    /// `tool_search` calls answered per turn ([`DEFAULT_SEARCH_BUDGET`]).
    pub search_budget: usize,
    /// Discovered tools kept from one turn to the next, least recently used evicted first
    /// ([`DEFAULT_DISCOVERED_CAP`]).
    pub discovered_cap: usize,
    /// Hits of a `tool_search` that gives no `limit` ([`DEFAULT_SEARCH_LIMIT`]).
    pub search_limit: usize,
    /// Co-selection of `tool_search`'s hits for tasks that need several tools: after the best
    /// [`crate::CoSelect::seeds`] hits, the other slots go to the tools of the hits' servers or
    /// toolsets ([`crate::cover`]). `None` (the ranking's own order) by default.
    pub co_select: Option<crate::CoSelect>,
    /// How long preselection may take ([`preselect::DEFAULT_TIMEOUT`], 2 s).
    pub preselect_timeout: Duration,
    /// How many new tools preselection may add ([`preselect::DEFAULT_BUDGET`], 5).
    pub preselect_budget: usize,
    /// The weight of the embedding side when `tool_search` and preselection fuse BM25 with a
    /// sentence-embedding model ([`crate::fusion`]; 0.7 by default). Used only by a session given
    /// a scorer ([`Session::with_semantic`]).
    pub dense_weight: crate::fusion::DenseWeight,
    /// The provider the session talks to, as the export format its tools are sent in
    /// ([`ExportFormat::Mcp`] by default: arguments are taken as sent, results are text). With
    /// [`ExportFormat::OpenAi`] or [`ExportFormat::OpenAiResponses`], the `null`s strict mode
    /// makes the model send for left-out arguments are removed before validation
    /// ([`restore_openai_arguments`]); with [`ExportFormat::Anthropic`], `tool_search` hits are
    /// answered as `tool_reference` blocks ([`CallResult::content`]); it is also the shape of
    /// [`Session::handle_response`].
    pub provider: ExportFormat,
    /// Whether the host sends the provider's hosted tool search with the tools (Anthropic
    /// `tool_search_tool_bm25_*`, the OpenAI Responses hosted `tool_search`): the provider then
    /// loads deferred tools itself, so a call of a deferred tool (reachable, discoverable, not
    /// deprecated) is accepted and the tool joins the discovered tools. Only for those two
    /// providers; `false` by default.
    pub hosted_search: bool,
    /// A cap on the tool definitions of every step, on top of the profile's or preset's
    /// ([`Catalog::profile_max_tools`], [`Catalog::preset_max_tools`]; the smaller holds). `None`
    /// by default: the catalog's cap alone.
    pub max_tools: Option<usize>,
    /// Whether deprecated tools within reach (profile ∩ active toolsets) are described and run
    /// when called by name, directly or through `tool_call` (the host's opt-in, for models and
    /// transcripts that still use an old name). `false` by default: such a call runs nothing
    /// and answers the tool's `replaced_by` ([`crate::meta`]). Either way no plan lists a
    /// deprecated tool and no search returns one.
    pub allow_deprecated: bool,
    /// The limits of a Code Mode program (`run_code`, [`crate::code_mode`]);
    /// [`crate::code_mode::ScriptLimits::default`] by default.
    pub script_limits: crate::code_mode::ScriptLimits,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            search_budget: DEFAULT_SEARCH_BUDGET,
            discovered_cap: DEFAULT_DISCOVERED_CAP,
            search_limit: DEFAULT_SEARCH_LIMIT,
            co_select: None,
            preselect_timeout: preselect::DEFAULT_TIMEOUT,
            preselect_budget: preselect::DEFAULT_BUDGET,
            dense_weight: crate::fusion::DenseWeight::default(),
            provider: ExportFormat::Mcp,
            hosted_search: false,
            max_tools: None,
            allow_deprecated: false,
            script_limits: crate::code_mode::ScriptLimits::default(),
        }
    }
}

/// What [`Session::handle_response`] did with a provider's response.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The tool calls of the response, in order.
    pub calls: Vec<ProviderCall>,
    /// Their results, one per call, same order.
    pub results: Vec<CallResult>,
    /// The messages to send back, in the provider's shape ([`crate::provider::result_messages`]).
    pub messages: Vec<Value>,
}

/// What [`Session::begin_turn`] did before planning.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnReport {
    /// The turn's number, from 1.
    pub turn: usize,
    /// Tools the message names that joined the plan.
    pub named: Vec<ToolIndex>,
    /// Tools the message names that this session cannot reach (outside profile ∩ active
    /// toolsets, or deprecated): not added.
    pub named_unreachable: Vec<ToolIndex>,
    /// The preselection, when a preselector is set.
    pub preselect: Option<PreselectReport>,
    /// The cap on the definitions of every step of this turn ([`Session::max_tools`]).
    pub max_tools: Option<usize>,
    /// Exported names of tools a search or a description found last turn that did not fit
    /// under the cap then, and joined at this turn's start.
    pub carried: Vec<String>,
    /// Exported names of the definitions that left when discovered tools were evicted as least
    /// recently used (the tool, unless another definition requires it, and what only it
    /// required): past [`SessionOptions::discovered_cap`], or to make room under the cap for the
    /// tools that join at this turn's start (carried, named, preselected). A tool's use is the
    /// last step it was called, loaded or named; a tool whose eviction would take no definition
    /// out is not evicted for room.
    pub evicted: Vec<String>,
    /// Exported names of definitions that joined at this turn's start because a tool that joined
    /// then (carried, named, preselected) requires them.
    pub required: Vec<String>,
    /// Exported names of tools that were to join at this turn's start (carried, named,
    /// preselected) but did not fit under the cap even after every evictable tool was evicted.
    pub left_out: Vec<String>,
    /// Exported names of discovered tools forgotten because they are no longer registered (left
    /// the profile or became deprecated).
    pub unregistered: Vec<String>,
}

/// A [`SessionOptions::max_tools`] below the session's core: refused by
/// [`Session::with_options`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("max_tools = {cap} is below this session's core of {core} tool definitions (its inline tools, the discovery meta-tools and what they require), which every step sends: raise the cap to at least {core}, or use a preset or profile with fewer inline tools")]
pub struct CapBelowCore {
    /// The cap asked for.
    pub cap: usize,
    /// The definitions of the core ([`Plan::core`]).
    pub core: usize,
}

/// The discovery loop of one conversation (see the module docs).
///
/// Borrows its catalog; `Send` when the preselector and approval hook are (they must be).
pub struct Session<'c> {
    catalog: &'c Catalog,
    profile: ProfileId,
    toolsets: Vec<ToolsetId>,
    options: SessionOptions,
    /// Runs the session's tool calls (and holds the approval hook and the validators).
    coordinator: Coordinator<'c>,
    /// The owner of the results this session archives: `read_tool_result` reads those only,
    /// even when the coordinator (and its archive) is shared with other sessions.
    owner: ArchiveOwner,
    preselector: Option<Box<dyn Preselector + 'c>>,
    planner: TurnPlanner,
    /// Discovery order, oldest first (the order the plan appends them in).
    discovered: Vec<ToolIndex>,
    /// Recency stamps of the discovered tools, for LRU eviction.
    last_used: HashMap<ToolIndex, u64>,
    clock: u64,
    /// Found or described this turn but left out for the cap: offered again at the next turn's
    /// start.
    pending: Vec<ToolIndex>,
    /// The preset the session runs, when it was built from one (its cap holds).
    preset: Option<PresetId>,
    searches: usize,
    report: TurnReport,
    /// The cosines `tool_search` fuses with BM25 (a sentence-embedding model), when given one.
    semantic: Option<Arc<dyn crate::fusion::DenseScorer>>,
    /// The current plan: visible set, reachable set and definitions in order.
    active: Vec<u64>,
    reachable: Vec<u64>,
    definitions: Vec<ToolIndex>,
    /// Tools the session's provider cannot be sent (Gemini: an input schema its `Schema` subset
    /// cannot express, [`crate::export::gemini_declaration`]) or that it cannot run (`run_code`
    /// without a script engine): never reachable, so neither `tool_search` nor a call finds
    /// them. One bit per tool.
    unsendable: Vec<u64>,
    /// The tools a refusal may name: the profile's, minus the unsendable ones.
    known: Vec<u64>,
    /// Runs `run_code` programs ([`Session::with_script_engine`]); without one, `run_code` is
    /// never planned nor callable.
    script_engine: Option<Arc<dyn crate::code_mode::ScriptEngine>>,
    /// Cancels the session's running calls ([`Session::with_cancellation`]).
    cancel: Option<crate::CancellationToken>,
    /// The span of the current turn ([`crate::telemetry`]); the turn's calls run inside it.
    turn_span: tracing::Span,
}

impl fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("profile", &self.catalog.profile_name(self.profile))
            .field("toolsets", &self.toolsets.len())
            .field("turn", &self.report.turn)
            .field("searches", &self.searches)
            .field("discovered", &self.discovered.len())
            .field("definitions", &self.definitions.len())
            .finish_non_exhaustive()
    }
}

impl<'c> Session<'c> {
    /// A session of `catalog` under `profile` with `toolsets` active; local tools run in
    /// `context`. Default options, BM25 preselection, no approval hook.
    pub fn new(
        catalog: &'c Catalog,
        profile: ProfileId,
        toolsets: impl IntoIterator<Item = ToolsetId>,
        context: ToolContext,
    ) -> Self {
        let mut session = Session {
            catalog,
            profile,
            toolsets: toolsets.into_iter().collect(),
            options: SessionOptions::default(),
            coordinator: Coordinator::new(catalog, context),
            owner: ArchiveOwner::new(),
            preselector: Some(Box::new(Bm25Preselector::default())),
            planner: TurnPlanner::new(catalog),
            discovered: Vec::new(),
            last_used: HashMap::new(),
            clock: 0,
            pending: Vec::new(),
            preset: None,
            searches: 0,
            report: TurnReport::default(),
            semantic: None,
            active: Vec::new(),
            reachable: Vec::new(),
            definitions: Vec::new(),
            unsendable: Vec::new(),
            known: catalog.profile_tools(profile).to_vec(),
            script_engine: None,
            cancel: None,
            turn_span: tracing::Span::none(),
        };
        // `run_code` without a script engine is unsendable from the start.
        session.unsendable = session.unavailable(catalog);
        session.known = known(catalog, profile, &session.unsendable);
        session.refresh();
        session
    }

    /// A session of a preset: its profile and toolsets.
    pub fn for_preset(catalog: &'c Catalog, preset: PresetId, context: ToolContext) -> Self {
        let toolsets: Vec<ToolsetId> = catalog.preset_toolsets(preset).collect();
        let mut session = Session::new(catalog, catalog.preset_profile(preset), toolsets, context);
        session.preset = Some(preset);
        session
    }

    /// The cap on the tool definitions of every step: the smallest of the preset's (when the
    /// session runs one, [`Catalog::preset_max_tools`]), the profile's
    /// ([`Catalog::profile_max_tools`]) and [`SessionOptions::max_tools`]; `None` when none is
    /// set. It counts the definitions of [`Session::definitions`] — discovery meta-tools
    /// included, deferred definitions not: an Anthropic export's `defer_loading` tools and an
    /// OpenAI Responses export's deferred namespace members stay out of the model's context
    /// until loaded, and the capped clients (Cursor, Windsurf, Copilot) list no deferred tools.
    pub fn max_tools(&self) -> Option<usize> {
        let c = self.catalog;
        let caps = [
            self.preset.and_then(|p| c.preset_max_tools(p)),
            c.profile_max_tools(self.profile),
        ];
        caps.into_iter()
            .flatten()
            .map(|cap| cap as usize)
            .chain(self.options.max_tools)
            .min()
    }

    /// Whether the definitions pass the cap.
    fn over_cap(&self) -> bool {
        self.max_tools()
            .is_some_and(|cap| self.definitions.len() > cap)
    }

    /// Replaces the options.
    ///
    /// # Errors
    /// [`CapBelowCore`] when [`SessionOptions::max_tools`] is below the session's core (the
    /// definitions every step sends: inline tools, discovery meta-tools and what they require,
    /// [`Plan::core`]); a cap the core already passes could not hold at any step.
    pub fn with_options(mut self, options: SessionOptions) -> Result<Self, CapBelowCore> {
        self.options = options;
        self.unsendable = self.unavailable(self.catalog);
        self.known = known(self.catalog, self.profile, &self.unsendable);
        self.refresh();
        let core = self.core().len();
        match self.options.max_tools {
            Some(cap) if cap < core => Err(CapBelowCore { cap, core }),
            _ => Ok(self),
        }
    }

    /// Replaces the preselector (the default is [`Bm25Preselector`]).
    pub fn with_preselector(mut self, preselector: impl Preselector + 'c) -> Self {
        self.preselector = Some(Box::new(preselector));
        self
    }

    /// Ranks `tool_search` by BM25 fused with the cosines of `scorer` (a sentence-embedding
    /// model such as `toolcat_semantic::SemanticSearch`; weight
    /// [`SessionOptions::dense_weight`]), the query embedded on tokio's blocking pool under
    /// [`crate::fusion::DEFAULT_ENCODE_TIMEOUT`]; a query that cannot be embedded in time is
    /// searched with BM25 and the answer says so in `notice`. When preselection is on, it
    /// becomes [`crate::fusion::FusedPreselector`] over the same scorer (call
    /// [`Session::with_preselector`] afterwards for another). `scorer` must hold the vectors of
    /// this session's catalog.
    pub fn with_semantic(mut self, scorer: Arc<dyn crate::fusion::DenseScorer>) -> Self {
        if self.preselector.is_some() {
            self.preselector = Some(Box::new(crate::fusion::FusedPreselector::new(
                Arc::clone(&scorer),
                self.options.dense_weight,
            )));
        }
        self.semantic = Some(scorer);
        self
    }

    /// The cosines a `tool_search` with `arguments` fuses with BM25: `None` without a scorer or
    /// for a `select:` query; `Some(Err(reason))` when the query could not be embedded.
    async fn search_cosines(&self, arguments: &Value) -> Option<Result<Vec<f32>, String>> {
        let semantic = self.semantic.as_ref()?;
        let query = arguments.get("query")?.as_str()?;
        if query.trim().starts_with("select:") || query.trim().is_empty() {
            return None;
        }
        Some(
            crate::fusion::dense_cosines(
                semantic,
                self.catalog,
                query,
                crate::fusion::DEFAULT_ENCODE_TIMEOUT,
            )
            .await,
        )
    }

    /// Turns preselection off: a turn starts from the core, the history and the named tools.
    pub fn without_preselection(mut self) -> Self {
        self.preselector = None;
        self
    }

    /// Sets the hook asked before each call of a `gated` tool (with arguments already valid);
    /// `true` lets the call run. Without a hook, gated tools are refused.
    pub fn with_approval(
        mut self,
        hook: impl Fn(&ApprovalRequest<'_>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.coordinator = self.coordinator.with_approval(hook);
        self
    }

    /// Runs calls through `coordinator` (to share its resource locks, rate limits, call store
    /// and result archive with other sessions and servers). Its approval hook replaces the
    /// session's; a coordinator of another catalog is rebound to the session's
    /// ([`Coordinator::for_catalog`]).
    pub fn with_coordinator(mut self, coordinator: Coordinator<'c>) -> Self {
        self.coordinator = if std::ptr::eq(coordinator.catalog(), self.catalog) {
            coordinator
        } else {
            coordinator.for_catalog(self.catalog)
        };
        self
    }

    /// The coordinator the session's calls run through.
    pub fn coordinator(&self) -> &Coordinator<'c> {
        &self.coordinator
    }

    /// The catalog.
    pub fn catalog(&self) -> &'c Catalog {
        self.catalog
    }

    /// The profile.
    pub fn profile(&self) -> ProfileId {
        self.profile
    }

    /// The active toolsets.
    pub fn toolsets(&self) -> &[ToolsetId] {
        &self.toolsets
    }

    /// The options.
    pub fn options(&self) -> &SessionOptions {
        &self.options
    }

    /// Discovered tools, in discovery order (oldest first).
    pub fn discovered(&self) -> &[ToolIndex] {
        &self.discovered
    }

    /// `tool_search` calls still answered this turn.
    pub fn searches_left(&self) -> usize {
        self.options.search_budget.saturating_sub(self.searches)
    }

    /// What the current turn's [`Session::begin_turn`] did.
    pub fn turn_report(&self) -> &TurnReport {
        &self.report
    }

    /// The definitions of the next step, in order (the tools of [`Session::plan`]).
    pub fn definitions(&self) -> &[ToolIndex] {
        &self.definitions
    }

    /// Whether `t` is in the active set: callable at the next step.
    pub fn is_active(&self, t: ToolIndex) -> bool {
        t.index() < self.catalog.len() && bit(&self.active, t.index())
    }

    /// The plan of the next step: the definitions to send, in order.
    pub fn plan(&mut self) -> Plan<'_> {
        let input = TurnInput {
            profile: self.profile,
            toolsets: &self.toolsets,
            discovered: &self.discovered,
            named: &[],
        };
        self.planner.plan(self.catalog, &input)
    }

    /// The next step's definitions in the shape of the session's provider
    /// ([`SessionOptions::provider`]), with the provider's hosted tool search when
    /// [`Session::hosted_search`] is on and toolcat's own `tool_search` otherwise: what the host
    /// sends, so the export and the session's answers cannot disagree about the provider.
    ///
    /// # Errors
    /// [`ExportError::Request`] when the request breaks a rule of the provider (see
    /// [`export_plan_with`]).
    pub fn export(&mut self) -> Result<Export, ExportError> {
        let format = self.options.provider;
        let options = ExportOptions {
            search: if self.hosted_search() {
                SearchMode::Hosted
            } else {
                SearchMode::Own
            },
        };
        export_plan_with(&self.plan(), format, &options)
    }

    /// Replaces the active toolsets (the host's decision; definitions may change in any way).
    pub fn set_toolsets(&mut self, toolsets: impl IntoIterator<Item = ToolsetId>) {
        self.toolsets = toolsets.into_iter().collect();
        self.refresh();
    }

    /// Moves the session to a new version of its catalog (a reloaded `tools.toml`, a server whose
    /// tool list changed): the profile, toolsets, discovered and named tools are carried over by
    /// name. Toolsets and tools the new catalog does not declare are dropped; discovered tools
    /// that left the profile or became deprecated are forgotten at the next turn (and are not
    /// visible before it). Returns the names of the toolsets dropped.
    ///
    /// # Errors
    /// [`NameError`] when the new catalog has no profile of the session's profile name; the
    /// session is then unchanged.
    pub fn replace_catalog(&mut self, catalog: &'c Catalog) -> Result<Vec<String>, NameError> {
        let old = self.catalog;
        let profile = catalog.profile(old.profile_name(self.profile))?;
        let mut dropped = Vec::new();
        let mut toolsets = Vec::with_capacity(self.toolsets.len());
        for &s in &self.toolsets {
            match catalog.toolset(old.toolset_name(s)) {
                Ok(s) => toolsets.push(s),
                Err(_) => dropped.push(old.toolset_name(s).to_string()),
            }
        }
        let remap = |t: ToolIndex| catalog.tool(old.exported_name(t)).ok();
        self.discovered = self.discovered.iter().filter_map(|&t| remap(t)).collect();
        self.last_used = self
            .last_used
            .iter()
            .filter_map(|(&t, &stamp)| remap(t).map(|n| (n, stamp)))
            .collect();
        self.pending = self.pending.iter().filter_map(|&t| remap(t)).collect();
        self.preset = self
            .preset
            .and_then(|p| catalog.preset(old.preset_name(p)).ok());
        self.catalog = catalog;
        self.profile = profile;
        self.toolsets = toolsets;
        self.coordinator = self.coordinator.for_catalog(catalog);
        self.unsendable = self.unavailable(catalog);
        self.known = known(catalog, profile, &self.unsendable);
        self.refresh();
        Ok(dropped)
    }

    /// Starts a turn from the user's message (see the module docs) and returns its plan.
    pub async fn begin_turn(&mut self, user_message: &str) -> Plan<'_> {
        let mut report = TurnReport {
            turn: self.report.turn + 1,
            max_tools: self.max_tools(),
            ..TurnReport::default()
        };
        self.turn_span = crate::telemetry::turn_span(report.turn);
        self.searches = 0;
        self.forget_unregistered(&mut report);
        self.evict(&mut report, &[]);
        self.refresh();

        // The tools that join now, in this order: carried from last turn, named, preselected.
        let mut fresh: Vec<ToolIndex> = Vec::new();
        for t in std::mem::take(&mut self.pending) {
            if bit(&self.reachable, t.index())
                && !self.is_active(t)
                && self.join(t, true, &mut fresh, &mut report)
            {
                report
                    .carried
                    .push(self.catalog.exported_name(t).to_string());
            }
        }
        let meta = self.catalog.tier_tools(Tier::Loop);
        for t in named_in_message(self.catalog, user_message) {
            if bit(meta, t.index()) || report.named.contains(&t) {
                continue;
            }
            if !bit(&self.reachable, t.index()) {
                report.named_unreachable.push(t);
            } else if self.is_active(t) || self.join(t, true, &mut fresh, &mut report) {
                self.touch(t);
                report.named.push(t);
            }
        }

        if let Some(preselector) = self.preselector.as_deref() {
            let request = PreselectRequest {
                catalog: self.catalog,
                message: user_message,
                reachable: &self.reachable,
                visible: &self.active,
                budget: self.options.preselect_budget,
            };
            let mut pre =
                preselect::run(preselector, &request, self.options.preselect_timeout).await;
            // Picks are guesses: they take free room only, and evict nothing.
            // In rank order: once a pick does not fit, the lower ones do not take its room.
            let mut blocked = false;
            pre.added.retain(|&t| {
                if blocked {
                    report
                        .left_out
                        .push(self.catalog.exported_name(t).to_string());
                    return false;
                }
                let joined = self.join(t, false, &mut fresh, &mut report);
                blocked = !joined;
                joined
            });
            report.preselect = Some(pre);
        }
        self.evict(&mut report, &fresh);
        self.refresh();
        self.report = report;
        self.plan()
    }

    /// Adds `t` at a turn's start: appended to the discovered tools, then, while the definitions
    /// pass the cap and `may_evict`, the least recently used discovered tool that did not join
    /// this turn (and is not visible anyway) is evicted. When nothing is left to evict (or
    /// `!may_evict`), `t` is taken out again and reported in [`TurnReport::left_out`]; returns
    /// whether it stayed.
    fn join(
        &mut self,
        t: ToolIndex,
        may_evict: bool,
        fresh: &mut Vec<ToolIndex>,
        report: &mut TurnReport,
    ) -> bool {
        if self.discovered.contains(&t) {
            return true;
        }
        let before = self.definitions.clone();
        self.discovered.push(t);
        self.touch(t);
        fresh.push(t);
        self.refresh();
        while self.over_cap() {
            let mut spare = self.core();
            spare.extend_from_slice(fresh);
            let victim = if may_evict { self.victim(&spare) } else { None };
            match victim {
                Some(k) => {
                    for v in self.remove_discovered(k) {
                        report
                            .evicted
                            .push(self.catalog.exported_name(v).to_string());
                    }
                }
                None => {
                    self.discovered.retain(|&d| d != t);
                    self.last_used.remove(&t);
                    fresh.retain(|&d| d != t);
                    report
                        .left_out
                        .push(self.catalog.exported_name(t).to_string());
                    self.refresh();
                    return false;
                }
            }
        }
        for &r in &self.definitions {
            if r != t && !before.contains(&r) {
                report
                    .required
                    .push(self.catalog.exported_name(r).to_string());
            }
        }
        true
    }

    /// The tools visible without discovery ([`Plan::core`]): never evicted.
    fn core(&mut self) -> Vec<ToolIndex> {
        self.plan().core().to_vec()
    }

    /// Handles one tool call of the model (see the module docs for the steps and the answers).
    pub async fn handle_call(&mut self, name: &str, arguments: Value) -> CallResult {
        let span = self.turn_span.clone();
        self.call(name, arguments, false).instrument(span).await
    }

    /// Handles every tool call of `response`, a provider's response body in the shape of
    /// [`SessionOptions::provider`] ([`crate::provider`]): each call as [`Session::handle_call`],
    /// in the response's order (parallel calls one after the other), a call whose arguments could
    /// not be read answered `invalid-arguments` without running. Returns the calls, their results
    /// and the provider-shaped messages to send back ([`crate::provider::result_messages`]).
    ///
    /// # Errors
    /// [`ProviderError`] when `response` is not of the provider's shape; nothing ran.
    pub async fn handle_response(&mut self, response: &Value) -> Result<Reply, ProviderError> {
        let calls = crate::provider::parse_calls(self.options.provider, response)?;
        let mut results = Vec::with_capacity(calls.len());
        for call in &calls {
            let result = match &call.arguments {
                Ok(arguments) => self.handle_call(&call.name, arguments.clone()).await,
                Err(reason) => self.unreadable_arguments(&call.name, reason),
            };
            results.push(result);
        }
        let messages = crate::provider::result_messages(self.options.provider, &calls, &results);
        Ok(Reply {
            calls,
            results,
            messages,
        })
    }

    /// The answer to a call whose arguments are not JSON: `invalid-arguments` naming the reason
    /// when the tool is callable, else the not-in-active-set answer. Nothing runs.
    fn unreadable_arguments(&mut self, name: &str, reason: &str) -> CallResult {
        match self.resolve_callable(name) {
            Some(t) => {
                let errors = vec![json!({"instancePath": "", "message": reason})];
                meta::invalid_arguments(self.catalog, t, errors, None)
            }
            None => CallResult::error(self.not_in_active_set_text(name), Outcome::NotInActiveSet),
        }
    }

    /// Whether the provider's hosted search loads deferred tools
    /// ([`SessionOptions::hosted_search`] with a provider of [`ExportFormat::HOSTED_SEARCH`]:
    /// Anthropic or OpenAI Responses).
    pub fn hosted_search(&self) -> bool {
        self.options.hosted_search && ExportFormat::HOSTED_SEARCH.contains(&self.options.provider)
    }

    /// The tool `name` names if it is callable now: active, or, with hosted search, deferred —
    /// reachable (profile ∩ active toolsets), discoverable, not deprecated, not a meta-tool —
    /// which then joins the discovered tools (the provider loaded it).
    fn resolve_callable(&mut self, name: &str) -> Option<ToolIndex> {
        if let Some(t) = self.resolve_active(name) {
            return Some(t);
        }
        // A deprecated tool within reach, when the host opted in.
        if self.options.allow_deprecated {
            if let Ok(t) = meta::resolve(&self.scope(), name) {
                return Some(t);
            }
        }
        if !self.hosted_search() {
            return None;
        }
        let c = self.catalog;
        let t = c.tool(name).ok()?;
        let deferred = bit(&self.reachable, t.index())
            && c.visibility(t) == Visibility::Discoverable
            && c.status(t) != Status::Deprecated
            && c.tier(t) != Tier::Loop;
        if !deferred || !self.activate(t) {
            return None;
        }
        self.is_active(t).then_some(t)
    }

    async fn call(&mut self, name: &str, mut arguments: Value, nested: bool) -> CallResult {
        let Some(t) = self.resolve_callable(name) else {
            return self.not_callable(name);
        };
        if matches!(
            self.options.provider,
            ExportFormat::OpenAi | ExportFormat::OpenAiResponses
        ) {
            restore_openai_arguments(self.catalog, t, &mut arguments);
        }
        let Some(m) = MetaTool::of(self.catalog, t) else {
            return self.run_tool(t, arguments).await;
        };
        if m == MetaTool::RunCode {
            return self.run_code(t, arguments).await;
        }
        let dense = match m {
            MetaTool::Search => self
                .search_cosines(&arguments)
                .await
                .map(|r| r.map(|cosines| (cosines, self.options.dense_weight))),
            _ => None,
        };
        let answer = {
            let scope = self.scope();
            if nested {
                Answer::Done(meta::answer_nested(&scope, m, t, &arguments, dense))
            } else {
                meta::answer(&scope, m, t, &arguments, dense)
            }
        };
        match answer {
            Answer::Done(mut result) => {
                self.discover(&mut result);
                if self.options.provider == ExportFormat::Anthropic {
                    self.reference_hits(&mut result);
                }
                result
            }
            Answer::Call { name, arguments } => Box::pin(self.call(&name, arguments, true)).await,
        }
    }

    /// What the meta-tools answer within: the reachable set, the budget, the archive owner.
    fn scope(&self) -> Scope<'_, 'c> {
        Scope {
            catalog: self.catalog,
            coordinator: &self.coordinator,
            profile: self.profile,
            reachable: &self.reachable,
            owner: self.owner,
            search_limit: self.options.search_limit,
            co_select: self.options.co_select,
            budget: Some(Budget {
                cap: self.options.search_budget,
                used: self.searches,
            }),
            known: &self.known,
            active: &self.active,
            toolsets: Some(&self.toolsets),
            allow_deprecated: self.options.allow_deprecated,
        }
    }

    /// After a meta-tool's answer: a search is counted, and the tools found or described join
    /// the active set within the cap ([`Session::activate`]). Hits that do not fit are taken
    /// out of the outcome and of the answer's `tools`, and listed in its `leftOut`
    /// (`{"tools":[{"name","description"}],"message"}`) with the reason.
    fn discover(&mut self, result: &mut CallResult) {
        let tools = match &mut result.outcome {
            Outcome::Found { tools } => {
                self.searches += 1;
                tools
            }
            Outcome::Described { tools } => tools,
            _ => return,
        };
        let mut left_out = Vec::new();
        let found = std::mem::take(tools);
        let mut loaded = Vec::with_capacity(found.len());
        // In rank order: once a hit does not fit, the lower ones wait with it for the next
        // turn's start, where they join in the same order.
        for t in found {
            if left_out.is_empty() && self.activate(t) {
                loaded.push(t);
            } else {
                if !self.pending.contains(&t) && !self.is_active(t) {
                    self.pending.push(t);
                }
                if !self.is_active(t) {
                    left_out.push(t);
                } else {
                    loaded.push(t);
                }
            }
        }
        if let Outcome::Found { tools } | Outcome::Described { tools } = &mut result.outcome {
            *tools = loaded;
        }
        if !left_out.is_empty() {
            self.state_left_out(result, &left_out);
        }
    }

    /// Rewrites a search or description answer for hits the cap left out (see
    /// [`Session::discover`]).
    fn state_left_out(&self, result: &mut CallResult, left_out: &[ToolIndex]) {
        let c = self.catalog;
        let Ok(Value::Object(mut answer)) = serde_json::from_str::<Value>(&result.text) else {
            return;
        };
        let names: Vec<&str> = left_out.iter().map(|&t| c.exported_name(t)).collect();
        if let Some(Value::Array(tools)) = answer.get_mut("tools") {
            tools.retain(|v| !names.contains(&v["name"].as_str().unwrap_or_default()));
            if tools.is_empty() {
                result.is_error = true;
            }
        }
        let cap = self.max_tools().unwrap_or_default();
        let listed: Vec<Value> = left_out
            .iter()
            .map(
                |&t| json!({"name": c.exported_name(t), "description": one_line(c.description(t))}),
            )
            .collect();
        answer.insert(
            "leftOut".into(),
            json!({
                "tools": listed,
                "message": left_out_message(&names, cap),
            }),
        );
        result.text = Value::Object(answer).to_string();
    }

    /// The answer to a call of `name` when it is not callable: for a tool left out for the cap
    /// this turn, [`left_out_message`]; otherwise the not-in-active-set answer.
    fn not_callable(&self, name: &str) -> CallResult {
        match self.catalog.tool(name) {
            Ok(t) if self.pending.contains(&t) => CallResult::error(
                left_out_message(
                    &[self.catalog.exported_name(t)],
                    self.max_tools().unwrap_or_default(),
                ),
                Outcome::NotInActiveSet,
            ),
            _ => CallResult::error(self.not_in_active_set_text(name), Outcome::NotInActiveSet),
        }
    }

    /// An Anthropic session's `tool_search` hits as content blocks: a short text block, then one
    /// `tool_reference` block per hit, which loads a deferred tool into the model's context
    /// (<https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool>).
    /// `text` keeps the JSON answer; other answers are left alone.
    fn reference_hits(&self, result: &mut CallResult) {
        let Outcome::Found { tools } = &result.outcome else {
            return;
        };
        if tools.is_empty() {
            return;
        }
        let names: Vec<&str> = tools
            .iter()
            .map(|&t| self.catalog.exported_name(t))
            .collect();
        let mut text = format!(
            "{} tool{} found and loaded: {}. Searches left this turn: {}.",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            self.searches_left(),
        );
        if let Ok(answer) = serde_json::from_str::<Value>(&result.text) {
            if let Some(message) = answer["leftOut"]["message"].as_str() {
                text.push_str(&format!(" Other hits {message}."));
            }
        }
        let mut content = vec![ContentBlock::Text { text }];
        content.extend(names.iter().map(|n| ContentBlock::ToolReference {
            tool_name: (*n).to_string(),
        }));
        result.content = content;
    }

    /// The tool `name` names (exported name, or declared name when unique) if it is active.
    fn resolve_active(&self, name: &str) -> Option<ToolIndex> {
        self.catalog.tool(name).ok().filter(|&t| self.is_active(t))
    }

    /// The answer to a call of `name`, which is not callable: `Tool 'NAME' not in active set.
    /// HINT`, the hint of [`crate::meta`] for why (an inactive toolset, a deprecated tool's
    /// replacement, the choices of an ambiguous name), followed by `, or use one of: a, b` (a
    /// tool a search loads: exactly [`not_in_active_set`]) or `; use one of: a, b` (a name no
    /// tool of the session has) when the plan has inline tools.
    fn not_in_active_set_text(&self, name: &str) -> String {
        let scope = self.scope();
        // Callable after all: a deprecated tool the host allows, refused by the coordinator.
        let why = meta::resolve(&scope, name)
            .err()
            .unwrap_or(meta::Unavailable::NotAvailable);
        let hint = meta::hint(&scope, name, &why);
        let inline = self.inline_names();
        match why {
            meta::Unavailable::NotLoaded(_) if !inline.is_empty() => format!(
                "Tool '{name}' not in active set. {hint}, or use one of: {}",
                inline.join(", ")
            ),
            meta::Unavailable::NotAvailable if !inline.is_empty() => format!(
                "Tool '{name}' not in active set. {hint}; use one of: {}",
                inline.join(", ")
            ),
            _ => format!("Tool '{name}' not in active set. {hint}"),
        }
    }

    /// The exported names of the plan's inline tools, meta-tools aside, in plan order.
    fn inline_names(&self) -> Vec<&'c str> {
        self.definitions
            .iter()
            .filter(|&&t| {
                self.catalog.visibility(t) == Visibility::Inline
                    && self.catalog.tier(t) != Tier::Loop
            })
            .map(|&t| self.catalog.exported_name(t))
            .collect()
    }

    async fn run_tool(&mut self, t: ToolIndex, arguments: Value) -> CallResult {
        // The active set; a deprecated tool the host allows is added for this call alone.
        let mut allowed = std::borrow::Cow::Borrowed(self.active.as_slice());
        if !self.is_active(t) && self.options.allow_deprecated {
            if let Some(w) = allowed.to_mut().get_mut(t.index() / 64) {
                *w |= 1 << (t.index() % 64);
            }
        }
        let request = CallRequest::new(t, arguments, &allowed).with_owner(self.owner);
        let outcome = self.coordinator.call(request).await;
        drop(allowed);
        let ran = outcome.ran.then_some(t);
        let dispatched = outcome.ran || matches!(outcome.result, Err(CallError::Tool(_)));
        if dispatched {
            self.touch(t);
        }
        let name = self.catalog.exported_name(t);
        match outcome.result {
            Ok(value) => CallResult {
                text: value.text,
                content: Vec::new(),
                is_error: false,
                outcome: Outcome::Ran { tool: t, ok: true },
                ran,
            },
            Err(CallError::InvalidArguments { errors, .. }) => meta::invalid_arguments(self.catalog, t, errors, ran),
            Err(CallError::Tool(ToolError::InvalidArguments { message, .. })) => {
                let errors = vec![json!({"instancePath": "", "message": message})];
                meta::invalid_arguments(self.catalog, t, errors, ran)
            }
            Err(CallError::NeedsApproval { .. }) => CallResult::error(
                format!("tool `{name}` is gated: it needs approval, and this session has no approval hook; nothing ran"),
                Outcome::NeedsApproval { tool: t },
            ),
            Err(CallError::Denied { .. }) => CallResult::error(
                format!("approval for `{name}` was denied; nothing ran"),
                Outcome::Denied { tool: t },
            ),
            Err(CallError::OutsideScope { .. }) => {
                CallResult::error(self.not_in_active_set_text(name), Outcome::NotInActiveSet)
            }
            Err(e @ CallError::RateLimited { .. }) => CallResult {
                text: e.to_json().to_string(),
                content: Vec::new(),
                is_error: true,
                outcome: Outcome::RateLimited { tool: t },
                ran,
            },
            Err(e @ CallError::TargetChanged { .. }) => CallResult {
                text: e.to_string(),
                content: Vec::new(),
                is_error: true,
                outcome: Outcome::TargetChanged { tool: t },
                ran,
            },
            Err(e @ CallError::Cancelled { .. }) => CallResult {
                text: e.to_string(),
                content: Vec::new(),
                is_error: true,
                outcome: Outcome::Cancelled { tool: t },
                ran,
            },
            Err(e @ CallError::OutcomeUnknown { .. }) => CallResult {
                text: e.to_string(),
                content: Vec::new(),
                is_error: true,
                outcome: Outcome::OutcomeUnknown { tool: t },
                ran,
            },
            Err(e @ CallError::Tool(_)) => CallResult {
                text: e.to_string(),
                content: Vec::new(),
                is_error: true,
                outcome: Outcome::Ran { tool: t, ok: false },
                ran: Some(t),
            },
            Err(
                e @ (CallError::Store(_)
                | CallError::NotRetryable { .. }
                | CallError::ServerNotConnected { .. }
                | CallError::SchemaDrift { .. }),
            ) => CallResult {
                text: e.to_string(),
                content: Vec::new(),
                is_error: true,
                outcome: Outcome::Failed,
                ran,
            },
        }
    }

    /// Adds a discoverable tool to the discovered tools (an inline one is visible anyway) and,
    /// when it was not loaded yet, marks it used, within the cap: a tool whose definitions would pass it is not added but
    /// kept for the next turn's start ([`TurnReport::carried`]); returns whether it was added.
    /// Re-plans.
    fn activate(&mut self, t: ToolIndex) -> bool {
        if self.catalog.visibility(t) == Visibility::Discoverable && !self.discovered.contains(&t) {
            self.discovered.push(t);
            self.refresh();
            if self.over_cap() {
                self.discovered.pop();
                self.refresh();
                if !self.pending.contains(&t) {
                    self.pending.push(t);
                }
                return false;
            }
            self.touch(t);
        }
        true
    }

    /// Marks a tool as just used (called, loaded, or named by the user), whether it is a
    /// discovered tool or a definition one requires.
    fn touch(&mut self, t: ToolIndex) {
        self.clock += 1;
        self.last_used.insert(t, self.clock);
    }

    /// Takes the discovered tool at `k` out and returns the definitions that left with it (itself
    /// unless another definition requires it, and what only it required). Re-plans.
    fn remove_discovered(&mut self, k: usize) -> Vec<ToolIndex> {
        let before = self.definitions.clone();
        self.discovered.remove(k);
        self.refresh();
        let left: Vec<ToolIndex> = before
            .into_iter()
            .filter(|t| !self.definitions.contains(t))
            .collect();
        for t in &left {
            self.last_used.remove(t);
        }
        left
    }

    /// The definitions that would leave with the discovered tool `d`, and when the latest of them
    /// was last used; `None` when none would (another definition requires `d`).
    fn leaving_with(&mut self, d: ToolIndex) -> Option<u64> {
        let before = self.definitions.clone();
        let k = self.discovered.iter().position(|&x| x == d)?;
        self.discovered.remove(k);
        self.refresh();
        let used = before
            .iter()
            .filter(|t| !self.definitions.contains(t))
            .map(|t| self.last_used.get(t).copied().unwrap_or(0))
            .max();
        self.discovered.insert(k, d);
        self.refresh();
        used
    }

    /// The least recently used discovered tool not in `spare` whose eviction takes at least one
    /// definition out (see [`Session::leaving_with`]).
    fn victim(&mut self, spare: &[ToolIndex]) -> Option<usize> {
        let candidates: Vec<ToolIndex> = self
            .discovered
            .iter()
            .copied()
            .filter(|d| !spare.contains(d))
            .collect();
        let mut best: Option<(u64, ToolIndex)> = None;
        for d in candidates {
            if let Some(used) = self.leaving_with(d) {
                if best.is_none_or(|(b, _)| used < b) {
                    best = Some((used, d));
                }
            }
        }
        let (_, d) = best?;
        self.discovered.iter().position(|&x| x == d)
    }

    /// Forgets discovered tools that left the profile or became deprecated.
    fn forget_unregistered(&mut self, report: &mut TurnReport) {
        let c = self.catalog;
        let profile = c.profile_tools(self.profile);
        let deprecated = c.status_tools(Status::Deprecated);
        let last_used = &mut self.last_used;
        self.discovered.retain(|&t| {
            let i = t.index();
            let registered = i < c.len() && bit(profile, i) && !bit(deprecated, i);
            if !registered {
                last_used.remove(&t);
                report.unregistered.push(c.exported_name(t).to_string());
            }
            registered
        });
    }

    /// Evicts the least recently used discovered tools past
    /// [`SessionOptions::discovered_cap`] ([`Session::victim`]), sparing those in `keep` (the
    /// tools that joined at this turn's start); one another definition requires stays.
    fn evict(&mut self, report: &mut TurnReport, keep: &[ToolIndex]) {
        while self.discovered.len() > self.options.discovered_cap {
            let Some(k) = self.victim(keep) else { break };
            for t in self.remove_discovered(k) {
                report
                    .evicted
                    .push(self.catalog.exported_name(t).to_string());
            }
        }
    }

    /// Re-plans and caches the active set, the reachable set and the definitions.
    fn refresh(&mut self) {
        let input = TurnInput {
            profile: self.profile,
            toolsets: &self.toolsets,
            discovered: &self.discovered,
            named: &[],
        };
        let plan = self.planner.plan(self.catalog, &input);
        self.active.clear();
        self.active.extend_from_slice(plan.visible());
        self.reachable.clear();
        self.reachable.extend_from_slice(plan.reachable());
        self.definitions.clear();
        self.definitions.extend_from_slice(plan.tools());
        if self.unsendable.iter().any(|&w| w != 0) {
            for (set, unsendable) in [&mut self.active, &mut self.reachable]
                .into_iter()
                .flat_map(|set| set.iter_mut().zip(&self.unsendable))
            {
                *set &= !unsendable;
            }
            let unsendable = &self.unsendable;
            self.definitions.retain(|t| !bit(unsendable, t.index()));
        }
    }
}

/// Why tools were left out for the cap, byte for byte: `not loaded: this session already sends
/// CAP tool definitions, its cap (max_tools); a, b join at the start of the next turn, in place
/// of the least recently used discovered tools, and cannot be called before`.
pub fn left_out_message(names: &[&str], cap: usize) -> String {
    format!(
        "not loaded: this session already sends {cap} tool definitions, its cap (max_tools); {} join{} at the start of the next turn, in place of the least recently used discovered tools, and cannot be called before",
        names.join(", "),
        if names.len() == 1 { "s" } else { "" },
    )
}

/// One bit per tool of `catalog` that `provider` cannot be sent: for Gemini the tools whose
/// input schema [`crate::export::gemini_declaration`] refuses; none for the other providers.
fn unsendable(catalog: &Catalog, provider: ExportFormat) -> Vec<u64> {
    let mut bits = vec![0u64; catalog.len().div_ceil(64)];
    if provider == ExportFormat::Gemini {
        for t in catalog.tools() {
            if crate::export::gemini_declaration(catalog, t).is_err() {
                bits[t.index() / 64] |= 1 << (t.index() % 64);
            }
        }
    }
    bits
}

/// The tools of `profile` a session may name in a refusal: the profile's, minus `unsendable`.
fn known(catalog: &Catalog, profile: ProfileId, unsendable: &[u64]) -> Vec<u64> {
    let profile = catalog.profile_tools(profile);
    (0..profile.len())
        .map(|k| profile[k] & !unsendable.get(k).copied().unwrap_or(0))
        .collect()
}

/// The answer to a call outside the active set, byte for byte (see the module docs):
/// `Tool 'NAME' not in active set. Call tool_search(query='NAME') to discover it, or use one of:
/// a, b` when `search` (the plan has `tool_search`), else `Tool 'NAME' not in active set. Use one
/// of: a, b`; the use-one-of clause is left out when `inline` is empty.
pub fn not_in_active_set<'a>(
    name: &str,
    inline: impl IntoIterator<Item = &'a str>,
    search: bool,
) -> String {
    let inline: Vec<&str> = inline.into_iter().collect();
    let list = inline.join(", ");
    match (search, inline.is_empty()) {
        (true, false) => format!("Tool '{name}' not in active set. Call tool_search(query='{name}') to discover it, or use one of: {list}"),
        (true, true) => format!("Tool '{name}' not in active set. Call tool_search(query='{name}') to discover it"),
        (false, false) => format!("Tool '{name}' not in active set. Use one of: {list}"),
        (false, true) => format!("Tool '{name}' not in active set"),
    }
}

/// The tools a user message names: every maximal run of name characters (ASCII letters, digits,
/// `_`, `-`) that equals a tool's exported or declared name, case-sensitively; catalog order
/// within a name shared by several servers, message order otherwise, without repeats.
pub fn named_in_message(catalog: &Catalog, message: &str) -> Vec<ToolIndex> {
    let mut named = Vec::new();
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    for word in message
        .split(|c: char| !is_name_char(c))
        .filter(|w| !w.is_empty())
    {
        for t in catalog.tools_named_ignoring_case(word) {
            let exact = catalog.exported_name(t) == word || catalog.name(t) == word;
            if exact && !named.contains(&t) {
                named.push(t);
            }
        }
    }
    named
}

#[cfg(test)]
mod tests;
