//! The rules every catalog must follow, each with a stable code.
//!
//! [`validate`] checks a [`Loaded`] catalog and returns every finding, errors and warnings, in
//! source order; it never stops at the first and never panics. Codes are stable: tests, docs and
//! users' scripts refer to them. Each rule, and why it exists:
//!
//! **Reading the file** (reported by [`crate::load`]; validation never sees a file that fails them)
//! - `E0100` TOML syntax error — nothing after it can be read reliably, so it is the only report.
//! - `E0101` unknown field — a misspelt optional field would silently keep its default.
//! - `E0102` unknown enum value (`tier`, `effect`, `visibility`, `exposure`, `status`) — each value
//!   changes who may run or see a tool; guessing is not an option.
//! - `E0103` value of the wrong type — as above; also a `removal` date written unquoted.
//! - `E0104` missing required field — the legend's required fields (this includes a missing
//!   `owner`; an empty one is `E0401`).
//! - `E0105` unknown top-level table — `[profiles.x]` for `[profile.x]` would drop a whole table.
//! - `E0106` the file is not UTF-8 (reported by [`crate::load::decode`] at the first bad byte,
//!   before parsing) — TOML is UTF-8 text; the fix is saving the file as UTF-8.
//!
//! **Names**
//! - `E0201` duplicate tool name, compared on exported names (`NS__name` when the source server
//!   has a `namespace`) — a name is how the model calls a tool; two tools cannot share one.
//! - `E0202` a profile, toolset, preset, server name or namespace outside `[a-zA-Z0-9_-]+`; a
//!   tool name with a character one of the catalog's export targets rejects (`targets` in
//!   `tools.toml`, all four when absent: OpenAI and Anthropic accept `[a-zA-Z0-9_-]`, Gemini also
//!   `.` and `:`, MCP also `.`; see [`crate::targets`]) — every target must accept every name.
//! - `E0203` exported name longer than the shortest limit among the targets (64 for OpenAI,
//!   Anthropic and Gemini, 128 for MCP) — the same rules' length limits.
//! - `E0204` exported name starting with a digit, `-`, `.` or `:` when `gemini` is a target —
//!   Gemini function declarations must start with a letter or `_`.
//!
//! **References** (each with a did-you-mean)
//! - `E0301` unknown profile in a tool's `profiles` or a preset's `profile` (`full` always exists).
//! - `E0302` unknown toolset in a tool's `toolsets`, a toolset's `includes` or a preset's
//!   `toolsets`.
//! - `E0303` unknown tool in `requires`, `pair` or `replaced_by`; also a declared name shared by
//!   tools of several namespaced servers, which must be referenced by exported name.
//! - `E0304` `source` that is neither `local`, `loop` nor a declared `[mcp_server]`.
//! - `E0305` toolset `includes` cycle, reported once per cycle with its path — expansion would
//!   never end.
//!
//! **Rows and tables**
//! - `E0401` empty `owner` — every tool needs someone who answers for it.
//! - `E0402` `tier = "silent"` without `effect = "read"` — only a tool that changes nothing may run
//!   without asking anyone.
//! - `E0403` `effect = "destructive"` without `tier = "gated"` — deleting or overwriting needs
//!   approval. (A silent destructive tool gets this error only: its fix also fixes `E0402`.)
//! - `E0404` `exposure = "read-only"` without `effect = "read"` — a read-only MCP scope must not
//!   list a tool that writes.
//! - `E0405` `status = "deprecated"` without a `replaced_by` naming another existing, active tool
//!   and a `removal` date — users of the tool need somewhere to go, and a date to go by.
//! - `E0406` `pair` that is not symmetric (the twin must name this tool back), pairs a tool with
//!   itself, or twins with the same `tier` — a pair is one capability offered at two tiers.
//! - `E0407` a profile whose inline tools exceed its `max_inline`: toolsets are added in
//!   declaration order, each adding its inline, non-deprecated tools the profile owns; the error
//!   names the toolset whose addition tips the count over — the cap keeps per-turn token cost and
//!   selection accuracy in bounds.
//! - `E0408` a profile that owns a discoverable tool but not all of the discovery meta-tools
//!   `tool_search`, `tool_describe`, `tool_call`, or that owns no inline tool at all; also a
//!   discovery meta-tool that is itself discoverable — otherwise a discoverable tool can never be
//!   found.
//! - `E0409` tier `loop` or source `loop` on a tool that is not one of [`model::META_TOOLS`] or
//!   [`model::CODE_MODE_TOOL`], or a meta-tool without both — the loop tier means "implemented by the runtime itself".
//! - `E0410` a tool in no toolset — it could never become visible.
//! - `E0411` empty description (tools and every side table) — the model reads it to choose.
//! - `E0412` `input_schema` on a local or loop tool (their schema comes from the handler's Rust
//!   type), or an `input_schema` that is not a JSON object schema with `type = "object"` (present:
//!   MCP and Anthropic reject a schema without it) — every export target requires object
//!   parameters.
//! - `E0413` `rate_limit` not `N/sec`, `N/min` or `N/hour` with `N` ≥ 1.
//! - `E0414` `removal` that is not a real `YYYY-MM-DD` date.
//! - `E0415` `replaced_by` or `removal` on a tool that is not deprecated — stale lifecycle data.
//! - `E0416` a tool that `requires` itself.
//! - `E0417` not used: an unknown profile or toolset in a preset is `E0301`/`E0302`, as anywhere
//!   else, so one fault has one code.
//! - `E0418` `[profile.full]` with anything but a `description` — `full` is implicit and owns
//!   every tool, so a cap or other settings would contradict it.
//! - `E0419` `requires` naming a deprecated tool — deprecated tools are never planned into a
//!   turn, so the requirement would silently not hold.
//! - `E0420` `requires` leaving a profile: a declared profile owns the tool but not a tool it
//!   requires — closing over `requires` would either leak the required tool past the profile's
//!   capability boundary or leave the tool without what it needs.
//! - `E0421` `[mcp_server]` without exactly one transport (`command` or `url`), with an empty
//!   `command` or `url`, or with `args`
//!   or `env` but no `command`, or `headers` but no `url` — the runtime could not reach the
//!   server, or would drop settings it was given.
//! - `E0424` `[mcp_server.local]` or `[mcp_server.loop]`: `local` and `loop` are the sources of
//!   handler-backed tools and meta-tools, so such a server's tools and namespace would be confused
//!   with them.
//! - `E0425` an MCP server `namespace` containing `__` (or empty): the exported name is
//!   `NAMESPACE__TOOL`, so a `__` inside the namespace makes the split ambiguous.
//! - `E0422` a client cap `max_tools` or `client` (on a profile or a preset; the smaller holds)
//!   that one request could exceed:
//!   the tools a turn sends before discovery — the inline tools of the active toolsets, the
//!   discovery meta-tools when a discoverable tool is reachable, and the tools they `require` —
//!   counted as toolsets are added (a preset's in its order; for a profile no preset runs under,
//!   every toolset in declaration order, as for `E0407`); the error names the toolset whose
//!   addition tips the count over — clients hard-cap the tools of a request (40, 50, 80, 128) and
//!   fail or drop tools beyond it.
//! - `E0423` a server tool's `input_schema` that one of the export targets the catalog declares
//!   (`targets = [...]`, or `toolcat check --target`) cannot take even after the target's
//!   rewrites (a recursive `$ref` for Gemini, ...; see [`crate::targets`]) — the tool could not
//!   be sent to that provider. A catalog that declares no targets gets no schema check (names
//!   are still held to all four). Local tools' schemas come from their handlers and are checked
//!   by `toolcat check --target` on the compiled catalog.
//! - `E0426` `remote_name` on a local or loop tool, or empty; or two rows of one server that
//!   reach the same server tool (the effective remote name is `remote_name`, else `name`) — a
//!   call sends the remote name, so such rows would run another row's tool.
//! - `E0427` `timeout_ms = 0` — every call would be stopped before it starts.
//! - `E0428` `code_mode = true` on a tool that is not `effect = "read"` with `tier = "silent"`,
//!   on a meta-tool, or on a tool of a server not declared `code_mode = true` — a Code Mode
//!   program runs its calls with no model step and no approval between them, so only what the
//!   host vouches for as a silent read may be called from one; what a server says of its own
//!   tools does not count.
//! - `E0429` `output_schema` on a local or loop tool (a local tool's output schema comes from its
//!   handler's output type; meta-tools have none), or an `output_schema` that is not a JSON
//!   object schema with `type = "object"` — it is served as MCP `outputSchema`, which must be an
//!   object schema, and a server's structured result is always a JSON object.
//!
//! **Warnings** (shown, never fail the build)
//! - `W0501` sprawl: two tools whose normalised descriptions (the distinct lower-case words of
//!   letters and digits, at least 4 each) share at least 90% of their words (Jaccard index) *and*
//!   one says nothing the other does not (its words are a subset of the other's), unless they are
//!   declared a `pair` or one replaces the other — near-identical options are where tool
//!   selection goes wrong. The subset condition keeps templated descriptions that differ in the
//!   one word that matters (`Update the labels of ...` / `Update the assignees of ...`) quiet: on
//!   the github-mcp-server catalog (117 tools) the rule flags 2 pairs, both a variant that
//!   overlaps its sibling, and on LiveMCPBench (527 tools) 8, 7 of them word-for-word identical.
//! - `W0502` the same name listed twice in one list (`profiles`, `toolsets`, `requires`, ...).
//! - `W0503` a toolset with no tools, even after expanding `includes`.
//! - `W0504` a turn that sends more inline tools than the catalog's `review_inline` (default
//!   [`DEFAULT_REVIEW_INLINE`], 20): each preset's live inline tools in its toolsets under its
//!   profile, and, for a declared profile no preset runs under, its live inline tools in every
//!   toolset — counted as the turn plan sends them, discovery meta-tools included when inline.
//!   Past about 20 definitions a model picks the wrong tool more often: OpenAI's function-calling
//!   guide ("Best practices for defining functions", platform.openai.com/docs/guides/function-calling)
//!   suggests fewer than 20 functions available at the start of a turn, as a soft limit;
//!   Anthropic's tool-search documentation (platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool)
//!   reports Claude's tool selection degrading past 30–50 available tools. A warning, not an
//!   error: a reviewed catalog may pass it deliberately (raise `review_inline`), and the fix is
//!   usually `visibility = "discoverable"` on the tools rarely needed.
//! - `W0505` a profile that owns `run_code` ([`model::CODE_MODE_TOOL`]) but no live tool declared
//!   `code_mode = true`: its programs could call nothing.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::diagnostics::{and_list, did_you_mean, Diagnostic, Severity};
use crate::load::{expand_toolsets, owns, DeclSpans, Loaded, Resolved, ToolIndex};
use crate::model::{
    self, EffectKind, Exposure, Status, Target, Tier, ToolDecl, Visibility, CODE_MODE_TOOL,
    MAX_EXPORTED_NAME, META_TOOLS, PROFILE_FULL, SOURCE_LOCAL, SOURCE_LOOP,
};
use crate::targets::{self, name_rule, NameRule};

/// One rule of the catalog: its stable code, its severity and a one-line summary. The module
/// documentation gives the reason for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub code: &'static str,
    pub severity: Severity,
    pub summary: &'static str,
}

const fn error(code: &'static str, summary: &'static str) -> Rule {
    Rule {
        code,
        severity: Severity::Error,
        summary,
    }
}

const fn warning(code: &'static str, summary: &'static str) -> Rule {
    Rule {
        code,
        severity: Severity::Warning,
        summary,
    }
}

/// Every code [`crate::load::parse`] and [`validate`] can report, in code order.
pub const RULES: &[Rule] = &[
    error("E0100", "TOML syntax error"),
    error("E0101", "unknown field"),
    error("E0102", "unknown enum value"),
    error("E0103", "value of the wrong type"),
    error("E0104", "missing required field"),
    error("E0105", "unknown top-level table"),
    error("E0106", "the file is not UTF-8"),
    error("E0201", "duplicate tool name (exported names compared)"),
    error(
        "E0202",
        "name outside `[a-zA-Z0-9_-]+`, or outside an export target's charset",
    ),
    error(
        "E0203",
        "exported name longer than an export target accepts (64, or 128 for MCP)",
    ),
    error(
        "E0204",
        "exported name not starting with a letter or `_` (Gemini)",
    ),
    error("E0301", "unknown profile"),
    error("E0302", "unknown toolset"),
    error(
        "E0303",
        "unknown or ambiguous tool in `requires`, `pair` or `replaced_by`",
    ),
    error("E0304", "unknown MCP server in `source`"),
    error("E0305", "toolset `includes` cycle"),
    error("E0401", "empty owner"),
    error("E0402", "`tier = \"silent\"` without `effect = \"read\"`"),
    error(
        "E0403",
        "`effect = \"destructive\"` without `tier = \"gated\"`",
    ),
    error(
        "E0404",
        "`exposure = \"read-only\"` without `effect = \"read\"`",
    ),
    error(
        "E0405",
        "deprecated without an active `replaced_by` and a `removal` date",
    ),
    error("E0406", "`pair` not symmetric, or twins of the same tier"),
    error("E0407", "a profile's inline tools exceed its `max_inline`"),
    error(
        "E0408",
        "discoverable tools without the discovery meta-tools, or no inline tool",
    ),
    error(
        "E0409",
        "tier or source `loop` outside the discovery meta-tools, or missing on one",
    ),
    error("E0410", "tool in no toolset"),
    error("E0411", "empty description"),
    error(
        "E0412",
        "`input_schema` on a local tool, or not an object schema",
    ),
    error("E0413", "malformed `rate_limit`"),
    error("E0414", "`removal` not a real `YYYY-MM-DD` date"),
    error(
        "E0415",
        "`replaced_by` or `removal` on a tool that is not deprecated",
    ),
    error("E0416", "tool that requires itself"),
    error("E0418", "`[profile.full]` with more than a description"),
    error("E0419", "`requires` naming a deprecated tool"),
    error("E0420", "`requires` leaving a profile"),
    error("E0421", "MCP server without exactly one transport"),
    error(
        "E0422",
        "one request could carry more tools than a client's `max_tools`",
    ),
    error(
        "E0423",
        "server `input_schema` an export target cannot take",
    ),
    error("E0424", "MCP server named `local` or `loop`"),
    error("E0425", "MCP server `namespace` empty or containing `__`"),
    error(
        "E0426",
        "`remote_name` on a local tool, or two rows reaching one server tool",
    ),
    error("E0427", "`timeout_ms` of 0"),
    error(
        "E0428",
        "`code_mode = true` on a tool that is not a silent read the host vouches for",
    ),
    error(
        "E0429",
        "`output_schema` on a local tool, or not an object schema",
    ),
    warning("W0501", "near-duplicate descriptions (sprawl)"),
    warning("W0502", "the same name listed twice"),
    warning("W0503", "toolset with no tools"),
    warning(
        "W0504",
        "a turn's inline tools pass the review threshold (`review_inline`, 20)",
    ),
    warning(
        "W0505",
        "a profile owns `run_code` but no tool declared `code_mode = true`",
    ),
];

/// The discovery meta-tools a profile needs to reach its discoverable tools.
pub const DISCOVERY_TOOLS: [&str; 3] = ["tool_search", "tool_describe", "tool_call"];

/// The inline tools one turn may send before W0504 warns, when the catalog sets no
/// `review_inline`: the "fewer than 20 functions" of OpenAI's function-calling guide (see the
/// module documentation for the sources).
pub const DEFAULT_REVIEW_INLINE: u32 = 20;

/// Jaccard index of description words at or above which two tools are reported as sprawl (W0501).
pub const SPRAWL_THRESHOLD: f64 = 0.9;
/// Descriptions with fewer distinct words than this are never compared for sprawl (W0501).
pub const SPRAWL_MIN_WORDS: usize = 4;

/// Checks every rule, returning all findings in source order.
pub fn validate(loaded: &Loaded) -> Vec<Diagnostic> {
    let mut checker = Checker::new(loaded);
    checker.names();
    checker.side_tables();
    checker.references();
    checker.toolset_cycles();
    checker.rows();
    checker.pairs();
    checker.remote_names();
    checker.profiles();
    checker.sprawl();
    let mut out = checker.out;
    out.sort_by_key(|d| d.span.start);
    out
}

struct Checker<'a> {
    loaded: &'a Loaded,
    tools: &'a [ToolDecl],
    spans: &'a [DeclSpans],
    index: ToolIndex,
    exported: Vec<String>,
    /// The catalog's export targets (all of them when it declares none).
    targets: Vec<Target>,
    /// Toolsets an unknown toolset name was probably meant as (its did-you-mean): W0503 stays
    /// quiet for them, since the misspelling (E0302) is why they are empty.
    meant_toolsets: HashSet<String>,
    out: Vec<Diagnostic>,
}

impl<'a> Checker<'a> {
    fn new(loaded: &'a Loaded) -> Self {
        let exported = (0..loaded.file.tool.len())
            .map(|i| loaded.exported_name(i))
            .collect();
        Checker {
            loaded,
            tools: &loaded.file.tool,
            spans: &loaded.tool_spans,
            index: loaded.tool_index(),
            exported,
            targets: targets::effective(&loaded.file.targets),
            meant_toolsets: HashSet::new(),
            out: Vec::new(),
        }
    }

    fn push(&mut self, d: Diagnostic) {
        self.out.push(d);
    }

    /// Spans of tool `i`; empty spans (pointing nowhere) if the load left none.
    fn span(&self, i: usize) -> &'a DeclSpans {
        static NONE: DeclSpans = DeclSpans {
            header: 0..0,
            keys: std::collections::BTreeMap::new(),
            values: std::collections::BTreeMap::new(),
            items: std::collections::BTreeMap::new(),
        };
        self.spans.get(i).unwrap_or(&NONE)
    }

    fn declared_profiles(&self) -> impl Iterator<Item = &'a str> {
        self.loaded.profiles.iter().map(|e| e.name.as_str())
    }

    fn profile_exists(&self, name: &str) -> bool {
        name == PROFILE_FULL || self.loaded.file.profile.contains_key(name)
    }

    // ---- E0201, E0202, E0203, E0204 ----

    fn names(&mut self) {
        let mut first: HashMap<String, usize> = HashMap::new();
        for i in 0..self.tools.len() {
            let tool = &self.tools[i];
            let spans = self.span(i);
            let exported = self.exported[i].clone();
            let namespaced = exported != tool.name;
            if let Some(d) = self.tool_name(&tool.name, &exported, namespaced, spans) {
                self.push(d);
            }
            match first.get(exported.as_str()) {
                Some(&j) => {
                    let first_namespaced = self.exported[j] != self.tools[j].name;
                    let what = if namespaced || first_namespaced {
                        "exported tool name"
                    } else {
                        "tool name"
                    };
                    let first_label = if first_namespaced {
                        format!("first declared here, exported as `{}`", self.exported[j])
                    } else {
                        "first declared here".to_string()
                    };
                    let d = Diagnostic::error(
                        "E0201",
                        format!("duplicate {what} `{exported}`"),
                        spans.value("name"),
                    )
                    .with_label("declared again here")
                    .with_related(self.span(j).value("name"), first_label)
                    .with_help("rename one of the two tools, or delete the repeated row");
                    self.push(d);
                }
                None => {
                    first.insert(exported, i);
                }
            }
        }
        for table in ["profile", "toolset", "preset", "mcp_server"] {
            for entry in self.loaded.entries(table) {
                if !model::is_valid_name(&entry.name) {
                    let what = if table == "mcp_server" {
                        "server"
                    } else {
                        table
                    };
                    self.out
                        .push(bad_name(what, &entry.name, entry.spans.header.clone()));
                }
            }
        }
        for entry in &self.loaded.mcp_servers {
            let Some(server) = self.loaded.file.mcp_server.get(&entry.name) else {
                continue;
            };
            let Some(namespace) = &server.namespace else {
                continue;
            };
            let span = entry.spans.value("namespace");
            if !model::is_valid_name(namespace) {
                self.out.push(bad_name("namespace", namespace, span));
            } else if self.targets.contains(&Target::Gemini) && !starts_like_identifier(namespace) {
                self.out.push(
                    Diagnostic::error(
                        "E0204",
                        format!("namespace `{namespace}` must start with a letter or `_`"),
                        span,
                    )
                    .with_label("exported names would start with a digit or `-`")
                    .with_help(
                        "rename it: Gemini function declarations must start with a letter or `_`",
                    ),
                );
            }
        }
    }

    /// E0202, E0203 or E0204 for a tool name the catalog's targets do not all accept (the first
    /// fault found: characters, then length, then the first character).
    fn tool_name(
        &self,
        name: &str,
        exported: &str,
        namespaced: bool,
        spans: &DeclSpans,
    ) -> Option<Diagnostic> {
        let rules: Vec<NameRule> = self.targets.iter().map(|&t| name_rule(t)).collect();
        let span = spans.value("name");
        let declared_here = |d: Diagnostic| -> Diagnostic {
            if self.loaded.targets_span.is_empty() {
                d
            } else {
                d.with_related(self.loaded.targets_span.clone(), "the catalog's targets")
            }
        };
        if name.is_empty() {
            return Some(bad_name("tool", name, span));
        }
        if let Some(c) = name.chars().find(|&c| rules.iter().any(|r| !r.accepts(c))) {
            let rejecting: Vec<&NameRule> = rules.iter().filter(|r| !r.accepts(c)).collect();
            let common: String = rules
                .first()
                .map(|r| {
                    r.extra
                        .chars()
                        .filter(|x| rules.iter().all(|r| r.extra.contains(*x)))
                        .collect()
                })
                .unwrap_or_default();
            let charset = format!("a-zA-Z0-9_{common}-");
            let accepted_somewhere = Target::ALL.iter().any(|&t| name_rule(t).accepts(c));
            if !accepted_somewhere {
                // No target takes it: the same advice whatever the targets.
                let d = bad_name("tool", name, span);
                return Some(Diagnostic {
                    message: format!("tool name `{name}` has characters outside `{charset}`"),
                    ..d
                });
            }
            let suggestion: String = name
                .chars()
                .map(|x| {
                    if rejecting.iter().any(|r| !r.accepts(x)) {
                        '_'
                    } else {
                        x
                    }
                })
                .collect();
            let targets: Vec<Target> = rejecting.iter().map(|r| r.target).collect();
            let sources: Vec<String> = rejecting
                .iter()
                .map(|r| format!("`{}`: {} ({})", r.text, r.source().title, r.source().url))
                .collect();
            return Some(declared_here(
                Diagnostic::error(
                    "E0202",
                    format!("tool name `{name}` has characters outside `{charset}`"),
                    span,
                )
                .with_label(format!(
                    "`{c}` is not allowed by {}",
                    targets::target_list(&targets)
                ))
                .with_help(format!(
                    "rename it, e.g. `{suggestion}`, or drop {} from the targets; {}",
                    targets::target_list(&targets),
                    sources.join("; ")
                )),
            ));
        }
        let len = exported.chars().count();
        let limit = rules
            .iter()
            .map(|r| r.max_len)
            .min()
            .unwrap_or(MAX_EXPORTED_NAME);
        if len > limit {
            let what = if namespaced {
                format!(
                    "exported name `{exported}` (namespace `{}__` included)",
                    exported.split("__").next().unwrap_or("")
                )
            } else {
                format!("tool name `{exported}`")
            };
            let rejecting: Vec<Target> = rules
                .iter()
                .filter(|r| r.max_len < len)
                .map(|r| r.target)
                .collect();
            let titles: Vec<&str> = rules
                .iter()
                .filter(|r| r.max_len < len)
                .map(|r| r.source().title)
                .collect();
            return Some(declared_here(
                Diagnostic::error(
                    "E0203",
                    format!("{what} is {len} characters, more than {limit}"),
                    span,
                )
                .with_label(match len - limit {
                    1 => "1 character over the limit".to_string(),
                    n => format!("{n} characters over the limit"),
                })
                .with_help(format!(
                    "shorten the name to at most {limit} characters in all: {} {} longer tool names ({})",
                    targets::target_list(&rejecting),
                    if rejecting.len() == 1 { "rejects" } else { "reject" },
                    titles.join("; ")
                )),
            ));
        }
        if !namespaced && rules.iter().any(|r| r.letter_first) && !starts_like_identifier(name) {
            return Some(declared_here(
                Diagnostic::error(
                    "E0204",
                    format!("tool name `{name}` must start with a letter or `_`"),
                    span,
                )
                .with_label("starts with a digit or `-`")
                .with_help(format!(
                    "rename it, e.g. `t_{}`: Gemini function declarations must start with a letter or `_`",
                    name.trim_start_matches('-')
                )),
            ));
        }
        None
    }

    // ---- E0411 on side tables, E0418, E0421, W0502 on their lists ----

    fn side_tables(&mut self) {
        for table in ["mcp_server", "profile", "toolset", "preset"] {
            for entry in self.loaded.entries(table) {
                let description = match table {
                    "mcp_server" => self
                        .loaded
                        .file
                        .mcp_server
                        .get(&entry.name)
                        .map(|d| &d.description),
                    "profile" => self
                        .loaded
                        .file
                        .profile
                        .get(&entry.name)
                        .map(|d| &d.description),
                    "toolset" => self
                        .loaded
                        .file
                        .toolset
                        .get(&entry.name)
                        .map(|d| &d.description),
                    _ => self
                        .loaded
                        .file
                        .preset
                        .get(&entry.name)
                        .map(|d| &d.description),
                };
                if description.is_some_and(|d| d.trim().is_empty()) {
                    self.out.push(
                        Diagnostic::error(
                            "E0411",
                            format!("`[{table}.{}]` has an empty description", entry.name),
                            entry.spans.value("description"),
                        )
                        .with_label("empty")
                        .with_help("say in a sentence what it is for"),
                    );
                }
            }
        }
        if let Some(spans) = self.loaded.entry("profile", PROFILE_FULL) {
            for field in spans.keys.keys() {
                if field != "description" {
                    self.out.push(
                        Diagnostic::error(
                            "E0418",
                            format!("the implicit profile `full` takes a `description` only, not `{field}`"),
                            spans.key(field),
                        )
                        .with_label("not allowed on `full`")
                        .with_help(format!(
                            "remove `{field}`, or declare a profile of another name: `full` owns every tool"
                        )),
                    );
                }
            }
        }
        for entry in &self.loaded.mcp_servers {
            let Some(server) = self.loaded.file.mcp_server.get(&entry.name) else {
                continue;
            };
            let name = &entry.name;
            if name == SOURCE_LOCAL || name == SOURCE_LOOP {
                self.out.push(
                    Diagnostic::error(
                        "E0424",
                        format!("`[mcp_server.{name}]` takes a reserved name"),
                        entry.spans.header.clone(),
                    )
                    .with_label("reserved for handler-backed tools and meta-tools")
                    .with_help(format!(
                        "rename the server, e.g. `[mcp_server.{name}_server]`, and its tools' `source`: `local` and `loop` are not MCP servers"
                    )),
                );
            }
            if let Some(namespace) = &server.namespace {
                if namespace.is_empty() || namespace.contains("__") {
                    self.out.push(
                        Diagnostic::error(
                            "E0425",
                            format!("`namespace` of `[mcp_server.{name}]` is `{namespace}`: empty or containing `__`"),
                            entry.spans.value("namespace"),
                        )
                        .with_label("exported names would be ambiguous")
                        .with_help(
                            "exported names are `NAMESPACE__TOOL`: use a namespace without `__`, e.g. `gh` or `my_server`, or remove `namespace`",
                        ),
                    );
                }
            }
            match (&server.command, &server.url) {
                (None, None) => self.out.push(
                    Diagnostic::error(
                        "E0421",
                        format!("`[mcp_server.{name}]` has neither `command` nor `url`"),
                        entry.spans.header.clone(),
                    )
                    .with_label("no transport")
                    .with_help("add `command = \"...\"` (stdio) or `url = \"https://...\"` (streamable HTTP)"),
                ),
                (Some(_), Some(_)) => self.out.push(
                    Diagnostic::error(
                        "E0421",
                        format!("`[mcp_server.{name}]` has both `command` and `url`"),
                        entry.spans.key("url"),
                    )
                    .with_label("second transport")
                    .with_related(entry.spans.key("command"), "first transport")
                    .with_help("keep one: `command` for stdio or `url` for streamable HTTP"),
                ),
                _ => {}
            }
            for (key, value) in [("command", &server.command), ("url", &server.url)] {
                if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                    self.out.push(
                        Diagnostic::error(
                            "E0421",
                            format!("`{key}` of `[mcp_server.{name}]` is empty"),
                            entry.spans.value(key),
                        )
                        .with_label("nothing to start or reach")
                        .with_help(if key == "command" {
                            "write the program that starts the server, e.g. `command = \"mcp-server-time\"`, with its arguments in `args`"
                        } else {
                            "write the server's endpoint, e.g. `url = \"https://example.com/mcp\"`"
                        }),
                    );
                }
            }
            if server.command.is_none() && !server.args.is_empty() {
                self.out.push(
                    Diagnostic::error(
                        "E0421",
                        format!("`[mcp_server.{name}]` has `args` but no `command`"),
                        entry.spans.key("args"),
                    )
                    .with_label("arguments of nothing")
                    .with_help("add the `command` the arguments belong to, or remove `args`"),
                );
            }
            if server.command.is_none() && !server.env.is_empty() {
                self.out.push(
                    Diagnostic::error(
                        "E0421",
                        format!("`[mcp_server.{name}]` has `env` but no `command`"),
                        entry.spans.key("env"),
                    )
                    .with_label("environment of no process")
                    .with_help("`env` sets variables of a stdio server's process: add its `command`, or send settings to an HTTP server with `headers`"),
                );
            }
            if server.url.is_none() && !server.headers.is_empty() {
                self.out.push(
                    Diagnostic::error(
                        "E0421",
                        format!("`[mcp_server.{name}]` has `headers` but no `url`"),
                        entry.spans.key("headers"),
                    )
                    .with_label("headers of no request")
                    .with_help("`headers` go with the requests of a streamable HTTP server: add its `url`, or pass settings to a stdio server with `env`"),
                );
            }
        }
        for table in ["mcp_server", "toolset", "preset"] {
            let field = match table {
                "mcp_server" => continue, // `args` may legitimately repeat (`-v -v`)
                "toolset" => "includes",
                _ => "toolsets",
            };
            for entry in self.loaded.entries(table) {
                let list: Vec<String> = match table {
                    "toolset" => self
                        .loaded
                        .file
                        .toolset
                        .get(&entry.name)
                        .map(|t| t.includes.clone()),
                    _ => self
                        .loaded
                        .file
                        .preset
                        .get(&entry.name)
                        .map(|p| p.toolsets.clone()),
                }
                .unwrap_or_default();
                let what = format!("`[{table}.{}]`", entry.name);
                let d = duplicates(&list, field, &what, &entry.spans);
                self.out.extend(d);
            }
        }
    }

    // ---- E0301, E0302, E0303, E0304 ----

    fn references(&mut self) {
        let profiles: Vec<&str> = self
            .declared_profiles()
            .chain(std::iter::once(PROFILE_FULL))
            .collect();
        let toolsets: Vec<&str> = self
            .loaded
            .toolsets
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        for i in 0..self.tools.len() {
            let tool = &self.tools[i];
            let spans = self.span(i);
            let what = format!("tool `{}`", tool.name);
            for (k, profile) in tool.profiles.iter().enumerate() {
                if !self.profile_exists(profile) {
                    self.push(unknown(
                        "E0301",
                        "profile",
                        profile,
                        spans.item("profiles", k),
                        &profiles,
                    ));
                }
            }
            for (k, toolset) in tool.toolsets.iter().enumerate() {
                if !self.loaded.file.toolset.contains_key(toolset) {
                    if let Some(meant) = did_you_mean(toolset, toolsets.iter().copied()) {
                        self.meant_toolsets.insert(meant.to_string());
                    }
                    self.push(unknown(
                        "E0302",
                        "toolset",
                        toolset,
                        spans.item("toolsets", k),
                        &toolsets,
                    ));
                }
            }
            for (field, names) in [
                ("requires", tool.requires.clone()),
                ("pair", tool.pair.iter().cloned().collect()),
                ("replaced_by", tool.replaced_by.iter().cloned().collect()),
            ] {
                for (k, name) in names.iter().enumerate() {
                    let span = if field == "requires" {
                        spans.item(field, k)
                    } else {
                        spans.value(field)
                    };
                    match self.index.resolve(name) {
                        Resolved::Tool(_) => {}
                        Resolved::Unknown => {
                            let candidates: Vec<&str> =
                                self.tools.iter().map(|t| t.name.as_str()).collect();
                            self.out
                                .push(unknown("E0303", "tool", name, span, &candidates));
                        }
                        Resolved::Ambiguous(many) => {
                            let options: Vec<String> = many
                                .iter()
                                .map(|&j| format!("`{}`", self.exported[j]))
                                .collect();
                            self.out.push(
                                Diagnostic::error(
                                    "E0303",
                                    format!(
                                        "tool name `{name}` in `{field}` of {what} is ambiguous"
                                    ),
                                    span,
                                )
                                .with_label("several namespaced tools have this name")
                                .with_help(format!(
                                    "write the exported name: {}",
                                    options.join(" or ")
                                )),
                            );
                        }
                    }
                }
            }
            let source = tool.source.as_str();
            if source != SOURCE_LOCAL
                && source != SOURCE_LOOP
                && !self.loaded.file.mcp_server.contains_key(source)
            {
                let mut candidates: Vec<&str> = vec![SOURCE_LOCAL, SOURCE_LOOP];
                candidates.extend(self.loaded.mcp_servers.iter().map(|e| e.name.as_str()));
                let suggestion = did_you_mean(source, candidates.iter().copied());
                let help = match suggestion {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!(
                        "use `local` (a `#[tool]` handler), `loop` (a meta-tool) or declare `[mcp_server.{source}]`"
                    ),
                };
                self.push(
                    Diagnostic::error(
                        "E0304",
                        format!("unknown MCP server `{source}` in `source` of {what}"),
                        spans.value("source"),
                    )
                    .with_label("no `[mcp_server]` of this name")
                    .with_help(help),
                );
            }
            let mut dups = Vec::new();
            for field in ["profiles", "toolsets", "requires", "keywords"] {
                let list = match field {
                    "profiles" => &tool.profiles,
                    "toolsets" => &tool.toolsets,
                    "requires" => &tool.requires,
                    _ => &tool.keywords,
                };
                dups.extend(duplicates(list, field, &what, spans));
            }
            self.out.extend(dups);
        }
        for entry in &self.loaded.toolsets {
            let Some(decl) = self.loaded.file.toolset.get(&entry.name) else {
                continue;
            };
            for (k, name) in decl.includes.iter().enumerate() {
                if !self.loaded.file.toolset.contains_key(name) {
                    self.out.push(unknown(
                        "E0302",
                        "toolset",
                        name,
                        entry.spans.item("includes", k),
                        &toolsets,
                    ));
                }
            }
        }
        for entry in &self.loaded.presets {
            let Some(decl) = self.loaded.file.preset.get(&entry.name) else {
                continue;
            };
            if !self.profile_exists(&decl.profile) {
                self.out.push(unknown(
                    "E0301",
                    "profile",
                    &decl.profile,
                    entry.spans.value("profile"),
                    &profiles,
                ));
            }
            for (k, name) in decl.toolsets.iter().enumerate() {
                if !self.loaded.file.toolset.contains_key(name) {
                    self.out.push(unknown(
                        "E0302",
                        "toolset",
                        name,
                        entry.spans.item("toolsets", k),
                        &toolsets,
                    ));
                }
            }
        }
    }

    // ---- E0305 ----

    fn toolset_cycles(&mut self) {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Active,
            Done,
        }
        let names: Vec<&str> = self
            .loaded
            .toolsets
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        let position: HashMap<&str, usize> =
            names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let edges: Vec<Vec<(usize, usize)>> = self
            .loaded
            .toolsets
            .iter()
            .map(|entry| {
                self.loaded
                    .file
                    .toolset
                    .get(&entry.name)
                    .map(|decl| {
                        decl.includes
                            .iter()
                            .enumerate()
                            .filter_map(|(k, name)| position.get(name.as_str()).map(|&to| (to, k)))
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect();
        let mut marks = vec![Mark::New; names.len()];
        // Iterative depth-first search: a long `includes` chain must not overflow the stack.
        for root in 0..names.len() {
            if marks[root] != Mark::New {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            marks[root] = Mark::Active;
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                if let Some(&(to, item)) = edges[node].get(*next) {
                    *next += 1;
                    match marks[to] {
                        Mark::New => {
                            marks[to] = Mark::Active;
                            stack.push((to, 0));
                        }
                        Mark::Active => {
                            let start = stack.iter().position(|&(n, _)| n == to).unwrap_or(0);
                            let mut path: Vec<String> = stack[start..]
                                .iter()
                                .map(|&(n, _)| format!("`{}`", names[n]))
                                .collect();
                            path.push(format!("`{}`", names[to]));
                            let span = self.loaded.toolsets[node].spans.item("includes", item);
                            self.out.push(
                                Diagnostic::error(
                                    "E0305",
                                    format!(
                                        "toolset `{}` includes itself: {}",
                                        names[to],
                                        path.join(" → ")
                                    ),
                                    span,
                                )
                                .with_label("closes the cycle")
                                .with_related(
                                    self.loaded.toolsets[to].spans.header.clone(),
                                    "cycle starts here",
                                )
                                .with_help("remove one of the `includes` along the cycle"),
                            );
                        }
                        Mark::Done => {}
                    }
                } else {
                    marks[node] = Mark::Done;
                    stack.pop();
                }
            }
        }
    }

    // ---- per-row rules: E0401..E0405, E0409..E0416, E0419 ----

    fn rows(&mut self) {
        for i in 0..self.tools.len() {
            let tool = &self.tools[i];
            let spans = self.span(i);
            let name = tool.name.as_str();
            if tool.owner.trim().is_empty() {
                self.push(
                    Diagnostic::error("E0401", format!("tool `{name}` has an empty owner"), spans.value("owner"))
                        .with_label("empty")
                        .with_help("name the person or team who answers for the tool, e.g. `owner = \"team-name\"`"),
                );
            }
            if tool.description.trim().is_empty() {
                self.push(
                    Diagnostic::error(
                        "E0411",
                        format!("tool `{name}` has an empty description"),
                        spans.value("description"),
                    )
                    .with_label("empty")
                    .with_help(
                        "say what the tool does and when to use it: the model reads this to choose",
                    ),
                );
            }
            if tool.effect == EffectKind::Destructive && tool.tier != Tier::Gated {
                self.push(
                    Diagnostic::error(
                        "E0403",
                        format!(
                            "destructive tool `{name}` must be gated, not `{}`",
                            tool.tier
                        ),
                        spans.value("effect"),
                    )
                    .with_label("may delete or overwrite")
                    .with_related(spans.value("tier"), format!("tier is `{}`", tool.tier))
                    .with_help("set `tier = \"gated\"` so a call asks for approval first"),
                );
            } else if tool.tier == Tier::Silent && tool.effect != EffectKind::Read {
                self.push(
                    Diagnostic::error(
                        "E0402",
                        format!("silent tool `{name}` must have `effect = \"read\"`, not `{}`", tool.effect),
                        spans.value("tier"),
                    )
                    .with_label("runs without asking anyone")
                    .with_related(spans.value("effect"), format!("effect is `{}`", tool.effect))
                    .with_help("set `tier = \"gated\"`, or `effect = \"read\"` if the tool changes nothing"),
                );
            }
            if tool.exposure == Exposure::ReadOnly && tool.effect != EffectKind::Read {
                self.push(
                    Diagnostic::error(
                        "E0404",
                        format!("tool `{name}` with effect `{}` cannot have exposure `read-only`", tool.effect),
                        spans.value("exposure"),
                    )
                    .with_label("listed in the read-only MCP scope")
                    .with_related(spans.value("effect"), format!("effect is `{}`", tool.effect))
                    .with_help("set `exposure = \"staging\"` or `\"full\"`, or `effect = \"read\"` if it changes nothing"),
                );
            }
            self.meta_tool(i, spans);
            self.code_mode(i, spans);
            if tool.toolsets.is_empty() {
                self.push(
                    Diagnostic::error("E0410", format!("tool `{name}` is in no toolset"), spans.value("toolsets"))
                        .with_label("no toolset")
                        .with_help("add at least one toolset, e.g. `toolsets = [\"core\"]`: a tool in none can never become visible"),
                );
            }
            self.input_schema(i, spans);
            self.output_schema(i, spans);
            if let Some(limit) = &tool.rate_limit {
                if model::parse_rate_limit(limit).is_none() {
                    self.push(
                        Diagnostic::error(
                            "E0413",
                            format!("malformed rate limit `{limit}` on tool `{name}`"),
                            spans.value("rate_limit"),
                        )
                        .with_label("not `N/sec`, `N/min` or `N/hour`")
                        .with_help(
                            "write calls per window with N ≥ 1, e.g. `rate_limit = \"10/min\"`",
                        ),
                    );
                }
            }
            if let Some(removal) = &tool.removal {
                if !is_date(removal) {
                    self.push(
                        Diagnostic::error(
                            "E0414",
                            format!("removal date `{removal}` of tool `{name}` is not a real date"),
                            spans.value("removal"),
                        )
                        .with_label("not a `YYYY-MM-DD` calendar date")
                        .with_help(
                            "write a real date as `YYYY-MM-DD`, e.g. `removal = \"2030-01-31\"`",
                        ),
                    );
                }
            }
            self.lifecycle(i, spans);
            for (k, required) in tool.requires.iter().enumerate() {
                let Some(j) = self.index.get(required) else {
                    continue;
                };
                if j == i {
                    self.push(
                        Diagnostic::error(
                            "E0416",
                            format!("tool `{name}` requires itself"),
                            spans.item("requires", k),
                        )
                        .with_label("the tool itself")
                        .with_help(format!("remove `\"{required}\"` from `requires`")),
                    );
                } else if self.tools[j].status == Status::Deprecated
                    && tool.status != Status::Deprecated
                {
                    let replacement = self.tools[j]
                        .replaced_by
                        .as_deref()
                        .map(|r| format!("require its replacement `{r}` instead"))
                        .unwrap_or_else(|| "require an active tool instead".to_string());
                    self.push(
                        Diagnostic::error(
                            "E0419",
                            format!("tool `{name}` requires deprecated tool `{required}`"),
                            spans.item("requires", k),
                        )
                        .with_label("deprecated tools are never shown")
                        .with_help(replacement),
                    );
                }
            }
        }
    }

    fn meta_tool(&mut self, i: usize, spans: &DeclSpans) {
        let tool = &self.tools[i];
        let name = tool.name.as_str();
        let is_meta = META_TOOLS.contains(&name) || name == CODE_MODE_TOOL;
        let meta_list = META_TOOLS
            .iter()
            .chain(std::iter::once(&CODE_MODE_TOOL))
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", ");
        if is_meta {
            if tool.tier != Tier::Loop {
                self.out.push(
                    Diagnostic::error(
                        "E0409",
                        format!("meta-tool `{name}` must have tier `loop`"),
                        spans.value("tier"),
                    )
                    .with_label(format!("tier is `{}`", tool.tier))
                    .with_help("set `tier = \"loop\"`: meta-tools are part of the loop itself"),
                );
            }
            if tool.source != SOURCE_LOOP {
                self.out.push(
                    Diagnostic::error(
                        "E0409",
                        format!("meta-tool `{name}` must have source `loop`"),
                        spans.value("source"),
                    )
                    .with_label(if spans.has("source") {
                        format!("source is `{}`", tool.source)
                    } else {
                        format!("no `source`: it defaults to `{SOURCE_LOCAL}`")
                    })
                    .with_help("set `source = \"loop\"`: the runtime implements the meta-tools"),
                );
            }
        } else {
            if tool.tier == Tier::Loop {
                self.out.push(
                    Diagnostic::error(
                        "E0409",
                        format!("tier `loop` is reserved for the meta-tools, not `{name}`"),
                        spans.value("tier"),
                    )
                    .with_label("only for meta-tools")
                    .with_help(format!(
                        "use `tier = \"silent\"` or `\"gated\"`; the meta-tools are {meta_list}"
                    )),
                );
            }
            if tool.source == SOURCE_LOOP {
                self.out.push(
                    Diagnostic::error("E0409", format!("source `loop` is reserved for the meta-tools, not `{name}`"), spans.value("source"))
                        .with_label("only for meta-tools")
                        .with_help(format!("use `source = \"local\"` or an `[mcp_server]` name; the meta-tools are {meta_list}")),
                );
            }
        }
    }

    fn code_mode(&mut self, i: usize, spans: &DeclSpans) {
        let tool = &self.tools[i];
        if !tool.code_mode {
            return;
        }
        let name = tool.name.as_str();
        let span = spans.value("code_mode");
        let problem = if tool.source == SOURCE_LOOP {
            Some((
                "a meta-tool".to_string(),
                "remove `code_mode`: programs call tools, not the loop".to_string(),
            ))
        } else if tool.effect != EffectKind::Read || tool.tier != Tier::Silent {
            Some((
                format!("tier `{}`, effect `{}`", tool.tier, tool.effect),
                "remove `code_mode`, or make the tool `tier = \"silent\"`, `effect = \"read\"` if it only reads: a program's calls run with no approval and no model step between them".to_string(),
            ))
        } else if tool.source != SOURCE_LOCAL
            && self
                .loaded
                .file
                .mcp_server
                .get(&tool.source)
                .is_some_and(|server| !server.code_mode)
        {
            Some((
                format!("a tool of server `{}`", tool.source),
                format!(
                    "set `code_mode = true` on `[mcp_server.{}]` if the host vouches for its read tools, or remove `code_mode` from the row",
                    tool.source
                ),
            ))
        } else {
            None
        };
        if let Some((label, help)) = problem {
            self.out.push(
                Diagnostic::error(
                    "E0428",
                    format!("`{name}` cannot be called from Code Mode programs"),
                    span,
                )
                .with_label(label)
                .with_help(help),
            );
        }
    }

    fn input_schema(&mut self, i: usize, spans: &DeclSpans) {
        let tool = &self.tools[i];
        let Some(schema) = &tool.input_schema else {
            return;
        };
        let name = tool.name.as_str();
        let span = spans.key("input_schema");
        if tool.source == SOURCE_LOCAL || tool.source == SOURCE_LOOP {
            self.out.push(
                Diagnostic::error("E0412", format!("{} tool `{name}` cannot declare `input_schema`", tool.source), span)
                    .with_label("ignored: the schema comes from the handler")
                    .with_help("remove `input_schema`: a local tool's schema is derived from its argument type"),
            );
            return;
        }
        let problem = match schema.as_object() {
            None => Some("is not a JSON object".to_string()),
            Some(object) => match object.get("type") {
                None => Some("has no `type`".to_string()),
                Some(serde_json::Value::String(t)) if t == "object" => None,
                Some(serde_json::Value::String(t)) => {
                    Some(format!("is not an object schema: its `type` is `{t}`"))
                }
                Some(other) => Some(format!("is not an object schema: its `type` is {other}")),
            },
        };
        if let Some(problem) = problem {
            self.out.push(
                Diagnostic::error("E0412", format!("`input_schema` of tool `{name}` {problem}"), spans.value("input_schema"))
                    .with_label("not an object schema")
                    .with_help(if schema.get("type").is_none() && schema.is_object() {
                        "add `type = \"object\"`: MCP and Anthropic reject an input schema without it, e.g. `input_schema = { type = \"object\", properties = {} }`"
                    } else {
                        "write a JSON Schema of an object, e.g. `input_schema = { type = \"object\", properties = {} }`"
                    }),
            );
            return;
        }
        // E0423: every target the catalog declares must be able to take the schema; a catalog
        // that declares none (one just imported) gets no schema check.
        let declared = if self.loaded.file.targets.is_empty() {
            Vec::new()
        } else {
            self.targets.clone()
        };
        for &target in &declared {
            let exported = targets::export_schema(target, &self.exported[i], schema);
            let errors: Vec<&targets::Finding> = exported
                .findings
                .iter()
                .filter(|f| f.kind == targets::FindingKind::Error)
                .collect();
            let Some(first) = errors.first() else {
                continue;
            };
            let rule = first.rule();
            let more = match errors.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            let at = if first.path.is_empty() {
                "/"
            } else {
                first.path.as_str()
            };
            self.out.push(
                Diagnostic::error(
                    "E0423",
                    format!("`input_schema` of tool `{name}` cannot be exported to `{target}`: {}{more}", first.message),
                    spans.value("input_schema"),
                )
                .with_label(format!("at `{at}`"))
                .with_help(format!(
                    "write the schema without it, or drop `{target}` from the targets; rule `{}`: {} ({}, {})",
                    rule.id, rule.summary, rule.source.title, rule.source.url
                )),
            );
        }
    }

    // ---- E0429 ----

    /// A declared `output_schema`: only on a server tool, and a JSON Schema of an object (MCP
    /// `outputSchema`). Unlike `input_schema` it is not checked against the export targets:
    /// only MCP has an output schema.
    fn output_schema(&mut self, i: usize, spans: &DeclSpans) {
        let tool = &self.tools[i];
        let Some(schema) = &tool.output_schema else {
            return;
        };
        let name = tool.name.as_str();
        if tool.source == SOURCE_LOCAL || tool.source == SOURCE_LOOP {
            let help = if tool.source == SOURCE_LOCAL {
                "remove `output_schema`: a local tool's output schema is derived from its handler's output type (the `Out` of `Result<Out, ToolError>`)"
            } else {
                "remove `output_schema`: the runtime answers its meta-tools, which declare no output schema"
            };
            self.out.push(
                Diagnostic::error(
                    "E0429",
                    format!(
                        "{} tool `{name}` cannot declare `output_schema`",
                        tool.source
                    ),
                    spans.key("output_schema"),
                )
                .with_label("only a server tool declares its output schema")
                .with_help(help),
            );
            return;
        }
        let problem = match schema.as_object() {
            None => format!("is {}, not a JSON object", json_kind(schema)),
            Some(object) => match object.get("type") {
                Some(serde_json::Value::String(t)) if t == "object" => return,
                None => "has no `type`".to_string(),
                Some(serde_json::Value::String(t)) => {
                    format!("is not an object schema: its `type` is `{t}`")
                }
                Some(other) => format!("is not an object schema: its `type` is {other}"),
            },
        };
        self.out.push(
            Diagnostic::error(
                "E0429",
                format!("`output_schema` of tool `{name}` {problem}"),
                spans.value("output_schema"),
            )
            .with_label("not an object schema")
            .with_help(
                "write the JSON Schema of the object the tool returns, e.g. `output_schema = { type = \"object\", properties = {} }`: MCP `outputSchema` must be an object schema, and a server's structured result is a JSON object",
            ),
        );
    }

    // ---- E0405, E0415 ----

    fn lifecycle(&mut self, i: usize, spans: &DeclSpans) {
        let tool = &self.tools[i];
        let name = tool.name.as_str();
        if tool.status != Status::Deprecated {
            for field in ["replaced_by", "removal"] {
                let present = match field {
                    "replaced_by" => tool.replaced_by.is_some(),
                    _ => tool.removal.is_some(),
                };
                if present {
                    self.out.push(
                        Diagnostic::error(
                            "E0415",
                            format!("`{field}` on tool `{name}`, which is not deprecated"),
                            spans.key(field),
                        )
                        .with_label(format!("status is `{}`", tool.status))
                        .with_help(format!(
                            "remove `{field}`, or set `status = \"deprecated\"`"
                        )),
                    );
                }
            }
            return;
        }
        let status = spans.value("status");
        match &tool.replaced_by {
            None => self.out.push(
                Diagnostic::error(
                    "E0405",
                    format!("deprecated tool `{name}` has no `replaced_by`"),
                    status.clone(),
                )
                .with_label("deprecated without a replacement")
                .with_help("add `replaced_by = \"...\"` naming the active tool to use instead"),
            ),
            Some(replacement) => match self.index.get(replacement) {
                None => {} // E0303 already
                Some(j) if j == i => self.out.push(
                    Diagnostic::error(
                        "E0405",
                        format!("deprecated tool `{name}` is replaced by itself"),
                        spans.value("replaced_by"),
                    )
                    .with_label("the tool itself")
                    .with_help("name the active tool that takes over"),
                ),
                Some(j) if self.tools[j].status != Status::Active => self.out.push(
                    Diagnostic::error(
                        "E0405",
                        format!(
                            "deprecated tool `{name}` is replaced by `{replacement}`, which is {}",
                            self.tools[j].status
                        ),
                        spans.value("replaced_by"),
                    )
                    .with_label("not an active tool")
                    .with_related(
                        self.span(j).value("status"),
                        format!("status is `{}`", self.tools[j].status),
                    )
                    .with_help("name an active tool, or make the replacement active first"),
                ),
                Some(_) => {}
            },
        }
        if tool.removal.is_none() {
            self.out.push(
                Diagnostic::error(
                    "E0405",
                    format!("deprecated tool `{name}` has no `removal` date"),
                    status,
                )
                .with_label("deprecated without a removal date")
                .with_help("add `removal = \"YYYY-MM-DD\"`, the date the tool goes"),
            );
        }
    }

    // ---- E0426, E0427 ----

    fn remote_names(&mut self) {
        // (server, effective remote name) → the first row reaching it.
        let mut reached: HashMap<(&str, &str), usize> = HashMap::new();
        for i in 0..self.tools.len() {
            let tool = &self.tools[i];
            let spans = self.span(i);
            let name = tool.name.as_str();
            if tool.timeout_ms == Some(0) {
                self.push(
                    Diagnostic::error(
                        "E0427",
                        format!("tool `{name}` has `timeout_ms = 0`"),
                        spans.value("timeout_ms"),
                    )
                    .with_label("every call would be stopped at once")
                    .with_help("give the longest a call may run in milliseconds, e.g. `timeout_ms = 30000`, or remove it for the runtime's default"),
                );
            }
            let local = tool.source == SOURCE_LOCAL || tool.source == SOURCE_LOOP;
            if let Some(remote) = &tool.remote_name {
                if local {
                    self.push(
                        Diagnostic::error(
                            "E0426",
                            format!("{} tool `{name}` cannot declare `remote_name`", tool.source),
                            spans.key("remote_name"),
                        )
                        .with_label("only a server tool has a server's name")
                        .with_related(spans.value("source"), if spans.has("source") {
                            format!("source is `{}`", tool.source)
                        } else {
                            format!("no `source`: it defaults to `{SOURCE_LOCAL}`")
                        })
                        .with_help("remove `remote_name`, or set `source` to the `[mcp_server]` that serves the tool"),
                    );
                    continue;
                }
                if remote.trim().is_empty() {
                    self.push(
                        Diagnostic::error(
                            "E0426",
                            format!("`remote_name` of tool `{name}` is empty"),
                            spans.value("remote_name"),
                        )
                        .with_label("empty")
                        .with_help("write the name the server lists the tool under, or remove `remote_name` when it is the row's `name`"),
                    );
                    continue;
                }
            }
            if local || !self.loaded.file.mcp_server.contains_key(&tool.source) {
                continue; // E0304 for an unknown server
            }
            let remote = tool.remote_name.as_deref().unwrap_or(name);
            match reached.get(&(tool.source.as_str(), remote)) {
                None => {
                    reached.insert((tool.source.as_str(), remote), i);
                }
                Some(&j) => {
                    let first = &self.tools[j];
                    let how = |t: &ToolDecl| match &t.remote_name {
                        Some(_) => "its `remote_name`",
                        None => "its `name`",
                    };
                    let here = if spans.has("remote_name") {
                        spans.value("remote_name")
                    } else {
                        spans.value("name")
                    };
                    let there = if self.span(j).has("remote_name") {
                        self.span(j).value("remote_name")
                    } else {
                        self.span(j).value("name")
                    };
                    self.push(
                        Diagnostic::error(
                            "E0426",
                            format!(
                                "tools `{}` and `{name}` both reach tool `{remote}` of MCP server `{}`",
                                first.name, tool.source
                            ),
                            here,
                        )
                        .with_label(format!("`{name}` calls `{remote}` ({})", how(tool)))
                        .with_related(there, format!("`{}` calls `{remote}` ({})", first.name, how(first)))
                        .with_help(
                            "a call sends the server's name, so one row would run the other's tool: give each row the `remote_name` the server lists its tool under (`toolcat check --live` compares them), or delete the repeated row",
                        ),
                    );
                }
            }
        }
    }

    // ---- E0406 ----

    fn pairs(&mut self) {
        for i in 0..self.tools.len() {
            let tool = &self.tools[i];
            let Some(pair) = &tool.pair else { continue };
            let Some(j) = self.index.get(pair) else {
                continue;
            }; // E0303
            let spans = self.span(i);
            let name = tool.name.as_str();
            if j == i {
                self.push(
                    Diagnostic::error(
                        "E0406",
                        format!("tool `{name}` is paired with itself"),
                        spans.value("pair"),
                    )
                    .with_label("the tool itself")
                    .with_help("name the twin with the other tier, or remove `pair`"),
                );
                continue;
            }
            let twin = &self.tools[j];
            let back = twin.pair.as_deref().and_then(|p| self.index.get(p));
            if back != Some(i) {
                let found = match &twin.pair {
                    Some(p) => format!("`{}` pairs with `{p}`", twin.name),
                    None => format!("`{}` names no pair", twin.name),
                };
                self.push(
                    Diagnostic::error(
                        "E0406",
                        format!("pair of `{name}` is not symmetric: {found}"),
                        spans.value("pair"),
                    )
                    .with_label(format!("`{name}` pairs with `{}`", twin.name))
                    .with_related(
                        self.span(j).header.clone(),
                        format!("`{}` is declared here", twin.name),
                    )
                    .with_help(format!("add `pair = \"{name}\"` to `{}`", twin.name)),
                );
            } else if i < j && tool.tier == twin.tier {
                self.push(
                    Diagnostic::error(
                        "E0406",
                        format!("twins `{name}` and `{}` have the same tier `{}`", twin.name, tool.tier),
                        spans.value("pair"),
                    )
                    .with_label("a pair offers one capability at two tiers")
                    .with_related(self.span(j).value("tier"), format!("tier of `{}`", twin.name))
                    .with_help("make one `silent` (propose) and the other `gated` (immediate), or remove `pair`"),
                );
            }
        }
    }

    // ---- E0407, E0408, E0420, W0503 ----

    fn profiles(&mut self) {
        let expanded = expand_toolsets(self.loaded);
        // A toolset has a tool when one of the toolsets it expands to is named by a tool.
        let named: HashSet<&str> = self
            .tools
            .iter()
            .flat_map(|t| t.toolsets.iter().map(String::as_str))
            .collect();
        for (t, entry) in self.loaded.toolsets.iter().enumerate() {
            let empty = !expanded[t].iter().any(|s| named.contains(s));
            if empty && !self.meant_toolsets.contains(&entry.name) {
                self.out.push(
                    Diagnostic::warning(
                        "W0503",
                        format!("toolset `{}` has no tools", entry.name),
                        entry.spans.header.clone(),
                    )
                    .with_label("empty, even with its `includes` expanded")
                    .with_help("add it to some tool's `toolsets`, or remove it"),
                );
            }
        }
        // Profiles in declaration order, then the implicit `full` if it was not declared.
        let mut profiles: Vec<(String, Option<DeclSpans>)> = self
            .loaded
            .profiles
            .iter()
            .map(|e| (e.name.clone(), Some(e.spans.clone())))
            .collect();
        if !self.loaded.file.profile.contains_key(PROFILE_FULL) {
            profiles.push((PROFILE_FULL.to_string(), None));
        }
        for (profile, spans) in &profiles {
            let owned: Vec<bool> = self.tools.iter().map(|t| owns(profile, t)).collect();
            let live = |i: usize| owned[i] && self.tools[i].status != Status::Deprecated;
            let run_code =
                (0..self.tools.len()).find(|&i| live(i) && self.tools[i].name == CODE_MODE_TOOL);
            if let Some(r) = run_code {
                if !(0..self.tools.len()).any(|i| live(i) && self.tools[i].code_mode) {
                    let at = spans
                        .as_ref()
                        .map_or_else(|| self.span(r).header.clone(), |s| s.header.clone());
                    self.out.push(
                        Diagnostic::warning(
                            "W0505",
                            format!(
                                "profile `{profile}` owns `{CODE_MODE_TOOL}` but no tool declared `code_mode = true`"
                            ),
                            at,
                        )
                        .with_label("its programs could call nothing")
                        .with_help(if spans.is_some() {
                            format!(
                                "set `code_mode = true` on the silent read tools its programs may call, or take `{CODE_MODE_TOOL}` out of the profile"
                            )
                        } else {
                            // The implicit `full` profile owns every tool: only the rows can
                            // change.
                            format!(
                                "set `code_mode = true` on the silent read tools its programs may call, or remove the `{CODE_MODE_TOOL}` row"
                            )
                        }),
                    );
                }
            }
            if let (Some(spans), Some(max)) = (
                spans,
                self.loaded
                    .file
                    .profile
                    .get(profile)
                    .and_then(|p| p.max_inline),
            ) {
                self.max_inline(profile, spans, max, &expanded, &live);
            }
            self.discovery(profile, spans.as_ref(), &live);
        }
        self.client_caps(&expanded);
        self.review_inline(&expanded);
        for (i, tool) in self.tools.iter().enumerate() {
            for (k, required) in tool.requires.iter().enumerate() {
                let Some(j) = self.index.get(required) else {
                    continue;
                };
                if j == i {
                    continue;
                }
                let leaking: Vec<String> = tool
                    .profiles
                    .iter()
                    .filter(|p| {
                        p.as_str() != PROFILE_FULL
                            && self.loaded.file.profile.contains_key(p.as_str())
                    })
                    .filter(|p| !owns(p, &self.tools[j]))
                    .map(|p| p.to_string())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                if leaking.is_empty() {
                    continue;
                }
                let (plural, verb, pronoun) = if leaking.len() == 1 {
                    ("profile", "owns", "it")
                } else {
                    ("profiles", "own", "them")
                };
                self.out.push(
                    Diagnostic::error(
                        "E0420",
                        format!(
                            "tool `{}` requires `{required}`, but {plural} {} {verb} `{}` and not `{required}`",
                            tool.name,
                            and_list(leaking.iter().map(|p| format!("`{p}`"))),
                            tool.name
                        ),
                        self.spans.get(i).map(|s| s.item("requires", k)).unwrap_or(0..0),
                    )
                    .with_label("required tool outside the profile")
                    .with_help(format!(
                        "add {} to the `profiles` of `{required}`, or remove {pronoun} from `{}`",
                        and_list(leaking.iter().map(|p| format!("`\"{p}\"`"))),
                        tool.name
                    )),
                );
            }
        }
    }

    fn max_inline(
        &mut self,
        profile: &str,
        spans: &DeclSpans,
        max: u32,
        expanded: &[HashSet<&str>],
        live: &dyn Fn(usize) -> bool,
    ) {
        let order: Vec<usize> = (0..self.loaded.toolsets.len()).collect();
        let inline = |active: &[usize]| -> BTreeSet<usize> {
            (0..self.tools.len())
                .filter(|&i| {
                    live(i)
                        && self.tools[i].visibility == Visibility::Inline
                        && self.in_toolsets(i, active, expanded)
                })
                .collect()
        };
        let Some(tip) = first_over(&order, max, |active| inline(active).len()) else {
            return;
        };
        let toolset = &self.loaded.toolsets[tip.toolset];
        let total = tip.total;
        let at_tip = tip.at_tip;
        self.out.push(
            Diagnostic::error(
                "E0407",
                format!("profile `{profile}` has {total} inline tools, more than its `max_inline = {max}`"),
                spans.value("max_inline"),
            )
            .with_label(format!("cap of {max}"))
            .with_related(
                toolset.spans.header.clone(),
                format!("adding toolset `{}` brings it to {at_tip}", toolset.name),
            )
            .with_help(format!(
                "make tools of toolset `{}` `visibility = \"discoverable\"`, take them out of profile `{profile}`, or raise `max_inline`",
                toolset.name
            )),
        );
    }

    /// Whether tool `i` is in any of the toolsets `active` (indices of declaration order),
    /// `includes` expanded.
    fn in_toolsets(&self, i: usize, active: &[usize], expanded: &[HashSet<&str>]) -> bool {
        self.tools[i]
            .toolsets
            .iter()
            .any(|s| active.iter().any(|&t| expanded[t].contains(s.as_str())))
    }

    /// The tools one request of a turn can carry with `active` toolsets under `profile`, before
    /// anything is discovered or named: the profile's live inline tools in those toolsets, the
    /// discovery meta-tools it owns when one of its live discoverable tools is in them, all closed
    /// over `requires` within the profile (the runtime's turn plan, `toolcat::plan`).
    fn sent(&self, profile: &str, active: &[usize], expanded: &[HashSet<&str>]) -> BTreeSet<usize> {
        let live =
            |i: usize| owns(profile, &self.tools[i]) && self.tools[i].status != Status::Deprecated;
        let reachable: Vec<usize> = (0..self.tools.len())
            .filter(|&i| live(i) && self.in_toolsets(i, active, expanded))
            .collect();
        let mut sent: BTreeSet<usize> = reachable
            .iter()
            .copied()
            .filter(|&i| self.tools[i].visibility == Visibility::Inline)
            .collect();
        let discoverable = reachable.iter().any(|&i| {
            self.tools[i].visibility == Visibility::Discoverable
                && !META_TOOLS.contains(&self.tools[i].name.as_str())
        });
        if discoverable {
            sent.extend((0..self.tools.len()).filter(|&i| {
                live(i)
                    && self.tools[i].source == SOURCE_LOOP
                    && DISCOVERY_TOOLS.contains(&self.tools[i].name.as_str())
            }));
        }
        let mut todo: Vec<usize> = sent.iter().copied().collect();
        while let Some(i) = todo.pop() {
            for required in &self.tools[i].requires {
                if let Some(j) = self.index.get(required) {
                    if live(j) && sent.insert(j) {
                        todo.push(j);
                    }
                }
            }
        }
        sent
    }

    // ---- W0504 ----

    /// Each preset's inline tools (its toolsets under its profile), then each declared profile no
    /// preset runs under with every toolset, against `review_inline`.
    fn review_inline(&mut self, expanded: &[HashSet<&str>]) {
        let max = self
            .loaded
            .file
            .review_inline
            .unwrap_or(DEFAULT_REVIEW_INLINE);
        let toolset_index = |name: &str| self.loaded.toolsets.iter().position(|e| e.name == name);
        let inline = |profile: &str, active: &[usize]| {
            (0..self.tools.len())
                .filter(|&i| {
                    let t = &self.tools[i];
                    owns(profile, t)
                        && t.status != Status::Deprecated
                        && t.visibility == Visibility::Inline
                        && self.in_toolsets(i, active, expanded)
                })
                .count()
        };
        let mut findings = Vec::new();
        let mut with_preset: HashSet<&str> = HashSet::new();
        for entry in &self.loaded.presets {
            let Some(preset) = self.loaded.file.preset.get(&entry.name) else {
                continue;
            };
            if !self.profile_exists(&preset.profile) {
                continue; // E0301
            }
            with_preset.insert(preset.profile.as_str());
            let active: Vec<usize> = preset
                .toolsets
                .iter()
                .filter_map(|n| toolset_index(n))
                .collect();
            let n = inline(&preset.profile, &active);
            if n > max as usize {
                findings.push((
                    format!("preset `{}` sends {n} inline tools in one turn (profile `{}`), more than the review threshold of {max}", entry.name, preset.profile),
                    entry.spans.header.clone(),
                    format!("make the tools it rarely needs `visibility = \"discoverable\"`, drop a toolset from preset `{}`", entry.name),
                ));
            }
        }
        let every: Vec<usize> = (0..self.loaded.toolsets.len()).collect();
        for entry in &self.loaded.profiles {
            if entry.name == PROFILE_FULL || with_preset.contains(entry.name.as_str()) {
                continue;
            }
            let n = inline(&entry.name, &every);
            if n > max as usize {
                findings.push((
                    format!("profile `{}` sends {n} inline tools in one turn with every toolset active, more than the review threshold of {max}", entry.name),
                    entry.spans.header.clone(),
                    format!("make the tools it rarely needs `visibility = \"discoverable\"`, or take them out of profile `{}`", entry.name),
                ));
            }
        }
        let threshold = self.loaded.review_inline_span.clone();
        for (message, span, fix) in findings {
            self.out.push(
                Diagnostic::warning("W0504", message, span)
                    .with_label("past the review threshold")
                    .with_related(threshold.clone(), "the catalog's threshold")
                    .with_help(format!(
                        "{fix}, or set a higher `review_inline` at the top of `tools.toml` if the set was reviewed; model tool selection degrades past about 20 definitions (OpenAI's function-calling guide, Anthropic's tool-search docs)"
                    )),
            );
        }
    }

    // ---- E0422 ----

    /// Each `max_tools`: the cap of a preset is checked against the preset's toolsets (added in
    /// its order); the cap of a profile against each preset that runs under it, or against all
    /// toolsets (in declaration order) when no preset does.
    fn client_caps(&mut self, expanded: &[HashSet<&str>]) {
        let toolset_index = |name: &str| self.loaded.toolsets.iter().position(|e| e.name == name);
        struct Check {
            subject: String,
            profile: String,
            cap: u32,
            cap_span: std::ops::Range<usize>,
            /// `max_tools = N` or `client = "NAME"` (N tools): what sets the cap.
            cap_text: String,
            /// The field that sets it: `max_tools` or `client`.
            cap_field: &'static str,
            whose: String,
            order: Vec<usize>,
            /// The span each toolset of `order` is pointed at.
            order_spans: Vec<std::ops::Range<usize>>,
            preset: Option<String>,
        }
        let mut checks: Vec<Check> = Vec::new();
        let mut with_preset: HashSet<&str> = HashSet::new();
        for entry in &self.loaded.presets {
            let Some(preset) = self.loaded.file.preset.get(&entry.name) else {
                continue;
            };
            if !self.profile_exists(&preset.profile) {
                continue; // E0301
            }
            with_preset.insert(preset.profile.as_str());
            let mut order = Vec::new();
            let mut order_spans = Vec::new();
            for (k, name) in preset.toolsets.iter().enumerate() {
                if let Some(t) = toolset_index(name) {
                    if !order.contains(&t) {
                        order.push(t);
                        order_spans.push(entry.spans.item("toolsets", k));
                    }
                }
            }
            let subject = format!("preset `{}` (profile `{}`)", entry.name, preset.profile);
            if let Some((cap, field, cap_text)) = cap_of(preset.max_tools, preset.client) {
                checks.push(Check {
                    subject: subject.clone(),
                    profile: preset.profile.clone(),
                    cap,
                    cap_span: entry.spans.value(field),
                    cap_text,
                    cap_field: field,
                    whose: "its".to_string(),
                    order: order.clone(),
                    order_spans: order_spans.clone(),
                    preset: Some(entry.name.clone()),
                });
            }
            let profile_cap = self
                .loaded
                .file
                .profile
                .get(&preset.profile)
                .and_then(|p| cap_of(p.max_tools, p.client))
                .filter(|_| preset.profile != PROFILE_FULL);
            if let (Some((cap, field, cap_text)), Some(spans)) =
                (profile_cap, self.loaded.entry("profile", &preset.profile))
            {
                checks.push(Check {
                    subject,
                    profile: preset.profile.clone(),
                    cap,
                    cap_span: spans.value(field),
                    cap_text,
                    cap_field: field,
                    whose: "the profile's".to_string(),
                    order,
                    order_spans,
                    preset: Some(entry.name.clone()),
                });
            }
        }
        for entry in &self.loaded.profiles {
            if entry.name == PROFILE_FULL || with_preset.contains(entry.name.as_str()) {
                continue;
            }
            let Some((cap, field, cap_text)) = self
                .loaded
                .file
                .profile
                .get(&entry.name)
                .and_then(|p| cap_of(p.max_tools, p.client))
            else {
                continue;
            };
            checks.push(Check {
                subject: format!("profile `{}`", entry.name),
                profile: entry.name.clone(),
                cap,
                cap_span: entry.spans.value(field),
                cap_text,
                cap_field: field,
                whose: "its".to_string(),
                order: (0..self.loaded.toolsets.len()).collect(),
                order_spans: self
                    .loaded
                    .toolsets
                    .iter()
                    .map(|e| e.spans.header.clone())
                    .collect(),
                preset: None,
            });
        }
        for check in checks {
            let Some(tip) = first_over(&check.order, check.cap, |active| {
                self.sent(&check.profile, active, expanded).len()
            }) else {
                continue;
            };
            let toolset = &self.loaded.toolsets[check.order[tip.position]].name;
            let (cap, total, at_tip) = (check.cap, tip.total, tip.at_tip);
            let raise = match check.cap_field {
                "client" => "drop `client` and set `max_tools` if the client takes more",
                _ => "raise `max_tools` if the client takes more",
            };
            let fix = match &check.preset {
                Some(preset) => format!("drop toolset `{toolset}` from preset `{preset}`, make some of its tools `visibility = \"discoverable\"`"),
                None => format!("make tools of toolset `{toolset}` `visibility = \"discoverable\"`, take them out of profile `{}`", check.profile),
            };
            self.out.push(
                Diagnostic::error(
                    "E0422",
                    format!(
                        "{} can send {total} tools in one request, more than {} {}",
                        check.subject, check.whose, check.cap_text
                    ),
                    check.cap_span.clone(),
                )
                .with_label(format!("the client takes at most {cap} tools"))
                .with_related(
                    check.order_spans[tip.position].clone(),
                    format!("adding toolset `{toolset}` brings it to {at_tip}"),
                )
                .with_help(format!(
                    "{fix}, or {raise}; the count is the inline tools of the active toolsets, the discovery meta-tools when a discoverable tool is reachable, and the tools they `require`"
                )),
            );
        }
    }

    fn discovery(
        &mut self,
        profile: &str,
        spans: Option<&DeclSpans>,
        live: &dyn Fn(usize) -> bool,
    ) {
        let discoverable: Vec<usize> = (0..self.tools.len())
            .filter(|&i| {
                live(i)
                    && self.tools[i].visibility == Visibility::Discoverable
                    && !META_TOOLS.contains(&self.tools[i].name.as_str())
            })
            .collect();
        let Some(&first) = discoverable.first() else {
            return;
        };
        let first_name = self.tools[first].name.clone();
        let span = match spans {
            Some(spans) => spans.header.clone(),
            None => self.span(first).value("visibility"),
        };
        let mut missing_decl = Vec::new();
        let mut not_owned = Vec::new();
        for meta in DISCOVERY_TOOLS {
            match self
                .tools
                .iter()
                .position(|t| t.name == meta && t.source == SOURCE_LOOP)
            {
                None => missing_decl.push(format!("`{meta}`")),
                Some(m) if !live(m) => not_owned.push(format!("`{meta}`")),
                Some(m) if self.tools[m].visibility != Visibility::Inline => {
                    // Reported once per meta-tool, at the profile `full` that owns it anyway.
                    if profile == PROFILE_FULL {
                        self.out.push(
                            Diagnostic::error(
                                "E0408",
                                format!("discovery meta-tool `{meta}` must be inline"),
                                self.span(m).value("visibility"),
                            )
                            .with_label("a discoverable tool can only be found through it")
                            .with_help("set `visibility = \"inline\"`"),
                        );
                    }
                }
                Some(_) => {}
            }
        }
        let missing: Vec<String> = missing_decl.iter().chain(&not_owned).cloned().collect();
        if !missing.is_empty() {
            let noun = if missing.len() == 1 {
                "meta-tool"
            } else {
                "meta-tools"
            };
            let mut help = Vec::new();
            if !not_owned.is_empty() {
                help.push(format!(
                    "add `\"{profile}\"` to the `profiles` of {}",
                    and_list(not_owned.iter().cloned())
                ));
            }
            if !missing_decl.is_empty() {
                help.push(format!(
                    "declare {} with `tier = \"loop\"` and `source = \"loop\"`",
                    and_list(missing_decl.iter().cloned())
                ));
            }
            help.push(format!("or make `{first_name}` inline"));
            let d = Diagnostic::error(
                "E0408",
                format!(
                    "profile `{profile}` owns discoverable tool `{first_name}` but not the discovery {noun} {}",
                    and_list(missing.iter().cloned())
                ),
                span.clone(),
            )
            .with_label("discoverable tools here could never be found")
            .with_related(self.span(first).value("visibility"), format!("`{first_name}` is discoverable"))
            .with_help(help.join("; "));
            self.out.push(d);
        }
        let any_inline = (0..self.tools.len())
            .any(|i| live(i) && self.tools[i].visibility == Visibility::Inline);
        if !any_inline {
            self.out.push(
                Diagnostic::error("E0408", format!("profile `{profile}` owns no inline tool"), span)
                    .with_label("nothing would be loaded at the start of a turn")
                    .with_help("make at least one of its tools (the discovery meta-tools, at least) `visibility = \"inline\"`"),
            );
        }
    }

    // ---- W0501 ----

    fn sprawl(&mut self) {
        let words: Vec<BTreeSet<String>> = self
            .tools
            .iter()
            .map(|t| description_words(&t.description))
            .collect();
        let found = sprawl_pairs(&words, |i, j| {
            // Tools of the same name are already an error (E0201).
            self.exported[i] == self.exported[j] || self.related(i, j)
        });
        for (i, j, jaccard) in found {
            let (a, b) = (&self.tools[i].name, &self.tools[j].name);
            self.out.push(
                Diagnostic::warning(
                    "W0501",
                    format!(
                        "descriptions of `{a}` and `{b}` are nearly the same ({:.0}% of words shared)",
                        (jaccard * 100.0).floor()
                    ),
                    self.span(j).value("description"),
                )
                .with_label("near-duplicate description")
                .with_related(self.span(i).value("description"), format!("description of `{a}`"))
                .with_help(format!(
                    "say what sets `{b}` apart so the model can choose, merge the two, or declare them a `pair`"
                )),
            );
        }
    }

    /// Whether tools `i` and `j` are declared related: a pair, or one replacing the other.
    fn related(&self, i: usize, j: usize) -> bool {
        let refers = |a: usize, b: usize| {
            let t = &self.tools[a];
            [&t.pair, &t.replaced_by]
                .into_iter()
                .flatten()
                .any(|name| self.index.get(name) == Some(b))
        };
        refers(i, j) || refers(j, i)
    }
}

/// Where adding toolsets one at a time first pushes a count past a cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tip {
    /// Position in the order of the toolset whose addition crossed the cap.
    position: usize,
    /// The toolset itself (index in declaration order).
    toolset: usize,
    /// The count right after adding it.
    at_tip: usize,
    /// The count with every toolset of the order added.
    total: usize,
}

/// Adds the toolsets of `order` one at a time and returns where `count` (of the toolsets added
/// so far) first exceeds `max`, or `None` when it never does. Shared by `max_inline` (E0407) and
/// `max_tools` (E0422).
fn first_over(order: &[usize], max: u32, count: impl Fn(&[usize]) -> usize) -> Option<Tip> {
    let max = max as usize;
    let mut tip: Option<(usize, usize)> = None;
    for k in 0..order.len() {
        let n = count(&order[..=k]);
        if n > max {
            tip = Some((k, n));
            break;
        }
    }
    let (position, at_tip) = tip?;
    Some(Tip {
        position,
        toolset: order[position],
        at_tip,
        total: count(order),
    })
}

/// The sprawl findings (W0501) among descriptions reduced to their `words`: for each tool `j`
/// in order, the first earlier tool `i` (lowest index) whose words pass [`sprawl_match`] and
/// for which `skip(i, j)` is false, as `(i, j, jaccard)` sorted by `j`. One report per tool is
/// enough to find a cluster.
///
/// Candidates come from prefix filtering instead of comparing every pair: the words of each
/// description are ordered rarest first (fewest descriptions, then alphabetically) and only the
/// first `n - floor(0.9 n) + 1` of its `n` words are indexed. Two word sets with a Jaccard index
/// of at least [`SPRAWL_THRESHOLD`] share at least `floor(0.9 n)` words of each, so their
/// indexed prefixes always share a word; every pair that passes is therefore a candidate and
/// the findings equal those of the pairwise comparison, in near-linear time on catalogs whose
/// descriptions differ.
fn sprawl_pairs(
    words: &[BTreeSet<String>],
    skip: impl Fn(usize, usize) -> bool,
) -> Vec<(usize, usize, f64)> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    let compared = |w: &BTreeSet<String>| w.len() >= SPRAWL_MIN_WORDS;
    let mut frequency: HashMap<&str, usize> = HashMap::new();
    for w in words.iter().filter(|w| compared(w)) {
        for word in w {
            *frequency.entry(word.as_str()).or_default() += 1;
        }
    }
    // Rank of each word: rarest first, ties alphabetical.
    let mut ranked: Vec<(&str, usize)> = frequency.into_iter().collect();
    ranked.sort_unstable_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(b.0)));
    let rank: HashMap<&str, u32> = ranked
        .iter()
        .enumerate()
        .map(|(r, (word, _))| (*word, r as u32))
        .collect();
    // Each description as its sorted word ranks (empty when too short to compare).
    let ids: Vec<Vec<u32>> = words
        .iter()
        .map(|w| {
            if !compared(w) {
                return Vec::new();
            }
            let mut v: Vec<u32> = w.iter().map(|word| rank[word.as_str()]).collect();
            v.sort_unstable();
            v
        })
        .collect();
    let prefix_len = |n: usize| {
        let overlap = (SPRAWL_THRESHOLD * n as f64).floor() as usize;
        (n - overlap.min(n) + 1).min(n)
    };
    // Word rank -> tools (ascending) with that word in their indexed prefix.
    let mut postings: HashMap<u32, Vec<usize>> = HashMap::new();
    let mut out = Vec::new();
    for j in 0..ids.len() {
        if ids[j].is_empty() {
            continue;
        }
        let prefix = &ids[j][..prefix_len(ids[j].len())];
        // Walk the candidates in ascending order (a merge of the posting lists) so the first
        // match is the lowest `i`, as in the pairwise comparison.
        let lists: Vec<&Vec<usize>> = prefix.iter().filter_map(|r| postings.get(r)).collect();
        let mut heap: BinaryHeap<Reverse<(usize, usize, usize)>> = lists
            .iter()
            .enumerate()
            .map(|(l, list)| Reverse((list[0], l, 0)))
            .collect();
        let mut last = None;
        while let Some(Reverse((i, l, k))) = heap.pop() {
            if let Some(&next) = lists[l].get(k + 1) {
                heap.push(Reverse((next, l, k + 1)));
            }
            if last == Some(i) {
                continue;
            }
            last = Some(i);
            if skip(i, j) {
                continue;
            }
            if let Some(jaccard) = sprawl_match(&ids[i], &ids[j]) {
                out.push((i, j, jaccard));
                break;
            }
        }
        for r in prefix {
            postings.entry(*r).or_default().push(j);
        }
    }
    out
}

/// The Jaccard index of two sorted, distinct word lists when they are sprawl (W0501): at least
/// [`SPRAWL_THRESHOLD`] and one list a subset of the other; `None` otherwise.
fn sprawl_match(a: &[u32], b: &[u32]) -> Option<f64> {
    let (mut x, mut y, mut shared) = (0, 0, 0);
    while x < a.len() && y < b.len() {
        match a[x].cmp(&b[y]) {
            std::cmp::Ordering::Less => x += 1,
            std::cmp::Ordering::Greater => y += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                x += 1;
                y += 1;
            }
        }
    }
    let union = a.len() + b.len() - shared;
    let jaccard = shared as f64 / union as f64;
    let adds_nothing = shared == a.len() || shared == b.len();
    (jaccard >= SPRAWL_THRESHOLD && adds_nothing).then_some(jaccard)
}

/// The distinct lower-case words (runs of letters and digits) of a description.
fn description_words(description: &str) -> BTreeSet<String> {
    description
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn starts_like_identifier(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
}

/// Whether `text` is a real calendar date written `YYYY-MM-DD`.
fn is_date(text: &str) -> bool {
    let shaped = text.len() == 10
        && text.bytes().enumerate().all(|(k, b)| match k {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    // The TOML date parser checks the calendar (month lengths, leap years).
    shaped
        && text
            .parse::<toml_edit::Datetime>()
            .is_ok_and(|d| d.date.is_some() && d.time.is_none() && d.offset.is_none())
}

fn bad_name(what: &str, name: &str, span: std::ops::Range<usize>) -> Diagnostic {
    let suggestion: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let (message, help) = if name.is_empty() {
        (
            format!("{what} name is empty"),
            "give it a name of ASCII letters, digits, `_` and `-`".to_string(),
        )
    } else {
        (
            format!("{what} name `{name}` has characters outside `a-zA-Z0-9_-`"),
            format!("use ASCII letters, digits, `_` and `-` only, e.g. `{suggestion}`"),
        )
    };
    Diagnostic::error("E0202", message, span)
        .with_label("not allowed in a name")
        .with_help(help)
}

/// The cap a `max_tools` and a `client` set (the smaller), the field that sets it, and how the
/// error names it: `max_tools = N`, or `client = "NAME"` (N tools).
fn cap_of(
    max_tools: Option<u32>,
    client: Option<model::Client>,
) -> Option<(u32, &'static str, String)> {
    let cap = model::effective_max_tools(max_tools, client)?;
    Some(match client {
        Some(c) if max_tools.is_none_or(|m| c.max_tools() < m) => {
            (cap, "client", format!("`client = \"{c}\"` ({cap} tools)"))
        }
        _ => (cap, "max_tools", format!("`max_tools = {cap}`")),
    })
}

fn unknown(
    code: &'static str,
    kind: &str,
    name: &str,
    span: std::ops::Range<usize>,
    known: &[&str],
) -> Diagnostic {
    let help = match did_you_mean(name, known.iter().copied()) {
        Some(s) => format!("did you mean `{s}`?"),
        None if known.is_empty() => format!("declare it as `[{kind}.{name}]`"),
        None => {
            let shown: Vec<String> = known.iter().take(8).map(|k| format!("`{k}`")).collect();
            let more = if known.len() > 8 { ", ..." } else { "" };
            if kind == "tool" {
                format!("name a declared tool ({}{more})", shown.join(", "))
            } else {
                format!(
                    "use a declared {kind} ({}{more}) or declare `[{kind}.{name}]`",
                    shown.join(", ")
                )
            }
        }
    };
    Diagnostic::error(code, format!("unknown {kind} `{name}`"), span)
        .with_label(format!("no {kind} of this name"))
        .with_help(help)
}

/// W0502 for every item of `list` that repeats an earlier one.
fn duplicates(list: &[String], field: &str, what: &str, spans: &DeclSpans) -> Vec<Diagnostic> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::new();
    for (k, item) in list.iter().enumerate() {
        if let Some(&first) = seen.get(item.as_str()) {
            out.push(
                Diagnostic::warning(
                    "W0502",
                    format!("`{item}` is listed twice in `{field}` of {what}"),
                    spans.item(field, k),
                )
                .with_label("repeated")
                .with_related(spans.item(field, first), "first listed here")
                .with_help(format!("remove the second `\"{item}\"`")),
            );
        } else {
            seen.insert(item, k);
        }
    }
    out
}

/// What kind of JSON value `v` is, for messages: `a string`, `an array`, ...
fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "`null`",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code used in the loader or here is listed in [`RULES`] and documented in the module
    /// docs, and every listed code is used.
    #[test]
    fn every_code_is_listed_and_documented() {
        // The code under test only: without the `RULES` list itself and without the tests.
        let strip = |source: &'static str| -> String {
            let body = source.split("#[cfg(test)]").next().unwrap_or_default();
            match (body.find("pub const RULES"), body.find("\n];\n")) {
                (Some(start), Some(end)) if start < end => {
                    format!("{}{}", &body[..start], &body[end..])
                }
                _ => body.to_string(),
            }
        };
        let sources = [
            strip(include_str!("load.rs")),
            strip(include_str!("validate.rs")),
        ];
        let docs: String = include_str!("validate.rs")
            .lines()
            .filter(|l| l.starts_with("//!"))
            .collect();
        let mut used = BTreeSet::new();
        for source in &sources {
            for (at, _) in source.match_indices('"') {
                let rest = &source[at + 1..];
                let code: String = rest.chars().take(5).collect();
                let shaped = code.len() == 5
                    && (code.starts_with('E') || code.starts_with('W'))
                    && code[1..].bytes().all(|b| b.is_ascii_digit())
                    && rest[5..].starts_with('"');
                if shaped {
                    used.insert(code);
                }
            }
        }
        let listed: BTreeSet<String> = RULES.iter().map(|r| r.code.to_string()).collect();
        assert_eq!(used, listed, "codes used vs codes in `RULES`");
        for rule in RULES {
            assert!(
                docs.contains(&format!("`{}`", rule.code)),
                "{} is not documented",
                rule.code
            );
            let is_warning = rule.code.starts_with('W');
            assert_eq!(
                is_warning,
                rule.severity == Severity::Warning,
                "{}",
                rule.code
            );
        }
    }

    #[test]
    fn dates_follow_the_calendar() {
        assert!(is_date("2030-01-31"));
        assert!(is_date("2028-02-29"));
        assert!(!is_date("2027-02-29"));
        assert!(!is_date("2030-13-01"));
        assert!(!is_date("2030-1-31"));
        assert!(!is_date("2030-01-31T00:00:00"));
        assert!(!is_date("soon"));
    }

    #[test]
    fn rate_limits_parse() {
        assert_eq!(model::parse_rate_limit("10/min"), Some((10, 60)));
        assert_eq!(model::parse_rate_limit("1/sec"), Some((1, 1)));
        assert_eq!(model::parse_rate_limit("3/hour"), Some((3, 3600)));
        assert_eq!(model::parse_rate_limit("0/min"), None);
        assert_eq!(model::parse_rate_limit("+5/min"), None);
        assert_eq!(model::parse_rate_limit("5/day"), None);
        assert_eq!(model::parse_rate_limit("99999999999/min"), None);
    }

    #[test]
    fn sprawl_words_are_normalised() {
        let a = description_words("Read a file, from the workspace.");
        let b = description_words("read A FILE from the workspace");
        assert_eq!(a, b);
    }
    /// The pairwise comparison the indexed sprawl check must agree with.
    fn sprawl_pairs_pairwise(
        words: &[BTreeSet<String>],
        skip: impl Fn(usize, usize) -> bool,
    ) -> Vec<(usize, usize, f64)> {
        let mut out = Vec::new();
        for j in 0..words.len() {
            if words[j].len() < SPRAWL_MIN_WORDS {
                continue;
            }
            for i in 0..j {
                if words[i].len() < SPRAWL_MIN_WORDS || skip(i, j) {
                    continue;
                }
                let shared = words[i].intersection(&words[j]).count();
                let union = words[i].len() + words[j].len() - shared;
                let jaccard = shared as f64 / union as f64;
                let adds_nothing = shared == words[i].len() || shared == words[j].len();
                if jaccard >= SPRAWL_THRESHOLD && adds_nothing {
                    out.push((i, j, jaccard));
                    break;
                }
            }
        }
        out
    }

    /// The real catalogs: the reference `tools.toml` and the imports of LiveMCPBench (527 tools)
    /// and github-mcp-server (117) from `$TOOLCAT_DATA`, else `../shared/data` beside the
    /// repository (as the benchmarks find them).
    fn real_catalogs() -> Vec<(String, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let data = std::env::var_os("TOOLCAT_DATA")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| root.join("../shared/data"));
        let mut out = vec![(
            "tools.toml".to_string(),
            std::fs::read_to_string(root.join("tools.toml")).expect("the reference catalog"),
        )];
        for (kind, rel) in [
            (
                toolcat_import::ImportKind::LiveMcpBench,
                "livemcpbench/tools.json",
            ),
            (
                toolcat_import::ImportKind::GithubToolsnaps,
                "github-mcp-server/toolsnaps",
            ),
        ] {
            let imported = toolcat_import::import(kind, &data.join(rel))
                .unwrap_or_else(|e| panic!("cannot import `{rel}` from {}: {e}", data.display()));
            out.push((rel.to_string(), imported.text));
        }
        out
    }

    #[test]
    fn indexed_sprawl_equals_the_pairwise_comparison_on_real_catalogs() {
        for (path, source) in real_catalogs() {
            let loaded = crate::load::parse(&path, &source).expect("the real catalogs load");
            let checker = Checker::new(&loaded);
            let words: Vec<BTreeSet<String>> = checker
                .tools
                .iter()
                .map(|t| description_words(&t.description))
                .collect();
            let skip = |i: usize, j: usize| {
                checker.exported[i] == checker.exported[j] || checker.related(i, j)
            };
            let expected = sprawl_pairs_pairwise(&words, skip);
            // Both imports have near-duplicates, so the comparison compares findings.
            assert!(path == "tools.toml" || !expected.is_empty(), "{path}");
            assert_eq!(sprawl_pairs(&words, skip), expected, "{path}");
        }
    }

    #[test]
    fn indexed_sprawl_finds_the_pairwise_pairs() {
        // A small deterministic generator: descriptions drawn from a small vocabulary, many of
        // them copies of an earlier one with a word added, dropped or swapped.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        for round in 0..6 {
            let vocabulary = 20 + round * 40;
            let mut words: Vec<BTreeSet<String>> = Vec::new();
            for _ in 0..700 {
                let set: BTreeSet<String> = if !words.is_empty() && next(3) > 0 {
                    let mut set = words[next(words.len())].clone();
                    match next(4) {
                        0 => {
                            set.insert(format!("w{}", next(vocabulary)));
                        }
                        1 => {
                            if let Some(w) = set.iter().next().cloned() {
                                set.remove(&w);
                            }
                        }
                        2 => {
                            if let Some(w) = set.iter().last().cloned() {
                                set.remove(&w);
                            }
                            set.insert(format!("w{}", next(vocabulary)));
                        }
                        _ => {}
                    }
                    set
                } else {
                    let len = 1 + next(24);
                    (0..len).map(|_| format!("w{}", next(vocabulary))).collect()
                };
                words.push(set);
            }
            let skip = |i: usize, j: usize| (i * 7 + j).is_multiple_of(11);
            let expected = sprawl_pairs_pairwise(&words, skip);
            assert!(
                expected.len() > 50,
                "round {round}: too few findings to compare"
            );
            assert_eq!(sprawl_pairs(&words, skip), expected, "round {round}");
        }
    }
}

#[cfg(test)]
mod client_caps {
    /// A catalog whose profile `agent` shows `inline` inline tools of toolset `main`, with the
    /// profile table's extra lines `profile`.
    fn source(inline: usize, profile: &str) -> String {
        let mut s = format!(
            "[profile.agent]\ndescription = \"an agent\"\n{profile}\n[toolset.main]\ndescription = \"main\"\n\n"
        );
        for k in 0..inline {
            s.push_str(&format!(
                "[[tool]]\nname = \"tool_{k}\"\ndescription = \"Reads thing number {k} of the workspace.\"\nvisibility = \"inline\"\ntier = \"silent\"\neffect = \"read\"\nexposure = \"read-only\"\nprofiles = [\"agent\"]\ntoolsets = [\"main\"]\nowner = \"team\"\n\n"
            ));
        }
        s
    }

    /// The errors of `source` (warnings, such as the review threshold's, left out).
    fn codes(source: &str) -> Vec<(String, String)> {
        match crate::compile_str("caps.toml", source) {
            Ok(_) => Vec::new(),
            Err(diagnostics) => diagnostics
                .iter()
                .filter(|d| d.code.starts_with('E'))
                .map(|d| (d.code.to_string(), d.message.clone()))
                .collect(),
        }
    }

    #[test]
    fn a_known_client_caps_the_request_as_max_tools_does_and_the_smaller_holds() {
        assert!(codes(&source(40, "client = \"cursor\"")).is_empty());
        let over = codes(&source(41, "client = \"cursor\""));
        assert_eq!(over.len(), 1, "{over:?}");
        assert_eq!(over[0].0, "E0422");
        assert!(
            over[0]
                .1
                .contains("more than its `client = \"cursor\"` (40 tools)"),
            "{over:?}"
        );
        // `max_tools` below the client's cap is the one that holds, and is named.
        let over = codes(&source(31, "client = \"copilot\"\nmax_tools = 30"));
        assert!(over[0].1.contains("`max_tools = 30`"), "{over:?}");
        assert!(codes(&source(100, "client = \"windsurf\"")).is_empty());
        assert_eq!(codes(&source(101, "client = \"windsurf\""))[0].0, "E0422");
    }

    #[test]
    fn an_unknown_client_is_refused_with_the_known_ones() {
        let refused = codes(&source(1, "client = \"cursorr\""));
        assert_eq!(refused.len(), 1, "{refused:?}");
        let text = format!("{refused:?}");
        assert!(text.contains("cursorr"), "{text}");
    }
}

#[cfg(test)]
mod review_threshold {
    /// A catalog whose one preset sends `inline` inline tools, with `review_inline` written
    /// when given.
    fn catalog(inline: usize, review_inline: Option<u32>) -> String {
        let mut s = review_inline.map_or_else(String::new, |n| format!("review_inline = {n}\n"));
        s.push_str(
            "[profile.chat]\ndescription = \"Chat\"\n[toolset.core]\ndescription = \"Core\"\n",
        );
        s.push_str(
            "[preset.chat]\ndescription = \"Chat\"\nprofile = \"chat\"\ntoolsets = [\"core\"]\n",
        );
        for i in 0..inline {
            s.push_str(&format!(
                "[[tool]]\nname = \"read_{i}\"\ndescription = \"Reads record number {i} of the ledger\"\nvisibility = \"inline\"\ntier = \"silent\"\neffect = \"read\"\nexposure = \"read-only\"\nprofiles = [\"chat\"]\ntoolsets = [\"core\"]\nowner = \"ledger\"\n"
            ));
        }
        s
    }

    fn w0504(source: &str) -> usize {
        let compiled = crate::compile_str("tools.toml", source).expect("compiles");
        compiled
            .warnings
            .iter()
            .filter(|d| d.code == "W0504")
            .count()
    }

    #[test]
    fn the_default_threshold_is_20_and_review_inline_moves_it() {
        assert_eq!(super::DEFAULT_REVIEW_INLINE, 20);
        assert_eq!(w0504(&catalog(20, None)), 0);
        // Preset `chat` and nothing else: profile `chat` has a preset, so it is not counted twice.
        assert_eq!(w0504(&catalog(21, None)), 1);
        assert_eq!(w0504(&catalog(21, Some(21))), 0);
        assert_eq!(w0504(&catalog(5, Some(4))), 1);
    }

    #[test]
    fn review_inline_must_be_a_count() {
        let source = catalog(1, None).replacen("[profile", "review_inline = \"many\"\n[profile", 1);
        let errors = crate::compile_str("tools.toml", &source).expect_err("not a count");
        assert!(
            errors
                .iter()
                .any(|d| d.code == "E0103" && d.message.contains("review_inline")),
            "{errors:?}"
        );
    }
}
