//! The declaration model: the Rust shape of `tools.toml`.
//!
//! These types are the single source of the file's vocabulary. The loader (`crate::load`) accepts
//! exactly their fields, the legend at the top of `tools.toml` documents exactly their fields (a
//! text-level test compares the two), and `generated/tools.schema.json` is derived from them with
//! schemars for editor completion.
//!
//! Values here are what the author wrote, with source spans; rules between rows are checked in
//! `crate::validate`, and derived tables are built in `crate::derive`.

use std::collections::BTreeMap;
use std::ops::Range;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A byte range into the `tools.toml` source text; `0..0` for values that were defaulted.
pub type Span = Range<usize>;

/// A value together with the byte range of the source text it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

impl<T> Spanned<T> {
    pub fn new(value: T, span: Span) -> Self {
        Spanned { value, span }
    }
    /// A value that was not written in the file (a default); its span is empty.
    pub fn defaulted(value: T) -> Self {
        Spanned { value, span: 0..0 }
    }
}

/// The whole `tools.toml` file.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "tools.toml",
    description = "toolcat catalog: every tool of an agent declared once; every other list is derived."
)]
pub struct CatalogFile {
    /// The export targets the exported names and server tools' input schemas must fit:
    /// `openai`, `anthropic`, `gemini`, `mcp`. When empty, names must fit all four and schemas
    /// are not checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<Target>,
    /// The most inline tools one turn of a preset (or of a profile no preset runs under, with
    /// every toolset active) may send before `toolcat check` warns (W0504); 20 when absent
    /// ([`crate::validate::DEFAULT_REVIEW_INLINE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_inline: Option<u32>,
    /// Remote MCP servers that tool rows may name as their `source`.
    #[serde(default)]
    pub mcp_server: BTreeMap<String, McpServerDecl>,
    /// Capability boundaries: which tools an agent owns. `full` is implicit and owns every tool.
    #[serde(default)]
    pub profile: BTreeMap<String, ProfileDecl>,
    /// Attention groups: tools shown to the model together.
    #[serde(default)]
    pub toolset: BTreeMap<String, ToolsetDecl>,
    /// A deployment's default profile and active toolsets.
    #[serde(default)]
    pub preset: BTreeMap<String, PresetDecl>,
    /// One row per tool.
    #[serde(default)]
    pub tool: Vec<ToolDecl>,
}

/// `[mcp_server.NAME]`: a remote MCP server.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerDecl {
    /// What the server is.
    pub description: String,
    /// Prefix of the exported names of this server's tools: `NS__tool`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Launch command for the stdio transport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Arguments of `command`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Endpoint for the streamable HTTP transport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Environment variables of the `command` process (stdio only), added to the inherited
    /// environment. A value may hold `${VAR}` references, resolved from the environment of the
    /// process that connects, at connect time, so secrets need not be written in the file.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// HTTP headers sent with every request (streamable HTTP only), with `${VAR}` references
    /// as in `env`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The host allows rows of this server to declare `code_mode = true`: its read tools may
    /// be called from Code Mode programs. What the server says of its tools does not count.
    #[serde(default, skip_serializing_if = "is_false")]
    pub code_mode: bool,
    /// How long one connection attempt (start, `initialize`, the first `tools/list`) may take,
    /// in milliseconds; the runtime's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout_ms: Option<u64>,
}

/// `[profile.NAME]`: a capability boundary.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileDecl {
    /// What the profile is for.
    pub description: String,
    /// Cap on the inline tools this profile may show in one turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_inline: Option<u32>,
    /// Cap of the client this profile serves on the tool definitions of one request, discovery
    /// meta-tools included (e.g. 40, 50, 80 or 128).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tools: Option<u32>,
    /// A known client this profile serves, whose documented cap ([`Client::max_tools`]) bounds
    /// the tools of one request as `max_tools` does (the smaller of the two holds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<Client>,
    /// Token budget (`o200k_base`) of the deferred-tool manifest appended to the `tool_search`
    /// description: the discoverable tools the caller can reach, name and a few words each.
    /// `0` turns it off; [`DEFAULT_MANIFEST_TOKENS`] when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_tokens: Option<u32>,
}

/// The token budget of the deferred-tool manifest of a profile that sets no `manifest_tokens`:
/// 300 `o200k_base` tokens, about 25 tools at a name and a few words each.
pub const DEFAULT_MANIFEST_TOKENS: u32 = 300;

/// `[toolset.NAME]`: an attention group.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsetDecl {
    /// What the toolset is for.
    pub description: String,
    /// Other toolsets expanded into this one, recursively and deduplicated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub includes: Vec<String>,
}

/// `[preset.NAME]`: a deployment's defaults.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PresetDecl {
    /// What deployment the preset serves.
    pub description: String,
    /// The profile it runs under.
    pub profile: String,
    /// The toolsets active at the start of a turn.
    pub toolsets: Vec<String>,
    /// Cap of the client this deployment serves on the tool definitions of one request,
    /// discovery meta-tools included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tools: Option<u32>,
    /// A known client this deployment serves ([`Client::max_tools`], as on a profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<Client>,
}

/// `[[tool]]`: one tool's whole identity.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolDecl {
    /// Unique; ASCII letters, digits, `_`, `-` (and `.` or `:` when every export target accepts
    /// them). The exported name (`NS__name` when the source server has a namespace) must fit
    /// every target of the catalog: 64 characters for OpenAI, Anthropic and Gemini, 128 for MCP.
    #[schemars(regex(pattern = r"^[a-zA-Z0-9_.:-]{1,128}$"))]
    pub name: String,
    /// What the model reads.
    pub description: String,
    /// Extra words search matches on: synonyms, the words users say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Whether the definition is sent every turn or only after discovery.
    pub visibility: Visibility,
    /// How a call is authorized.
    pub tier: Tier,
    /// What a call does to the world.
    pub effect: EffectKind,
    /// Repeating the call with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent: bool,
    /// The tool reaches outside the agent's own state (network, other people's data).
    #[serde(default, skip_serializing_if = "is_false")]
    pub open_world: bool,
    /// A Code Mode program ([`CODE_MODE_TOOL`]) may call the tool. Allowed only with
    /// `effect = "read"` and `tier = "silent"`, on a local tool or a tool of a server declared
    /// `code_mode = true` (E0428).
    #[serde(default, skip_serializing_if = "is_false")]
    pub code_mode: bool,
    /// The narrowest MCP scope that lists the tool.
    pub exposure: Exposure,
    /// Profiles that own the tool besides the implicit `full` (default-deny).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<String>,
    /// The toolsets the tool belongs to (at least one).
    pub toolsets: Vec<String>,
    /// Who answers for the tool.
    pub owner: String,
    /// Lifecycle state.
    #[serde(default, skip_serializing_if = "Status::is_active")]
    pub status: Status,
    /// The active tool that replaces this deprecated one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<String>,
    /// The date a deprecated tool is removed, `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    pub removal: Option<String>,
    /// Tools that become visible whenever this one does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// The twin of a propose/immediate pair: same capability, other tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<String>,
    /// Calls allowed per window: `N/sec`, `N/min` or `N/hour`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[1-9][0-9]*/(sec|min|hour)$"))]
    pub rate_limit: Option<String>,
    /// How long one call may run once its handler starts, in milliseconds (≥ 1); the
    /// coordinator's default when absent. A call over it is stopped: `outcome_unknown` when the
    /// tool may have a side effect, a plain error when it only reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// `local` (a `#[tool]` handler), `loop` (a runtime meta-tool) or the name of an `[mcp_server]`.
    #[serde(default = "default_source", skip_serializing_if = "is_local")]
    pub source: String,
    /// The server's own name of the tool, for a server tool whose row `name` differs (a name
    /// the export targets reject, such as `admin.tools.delete`): calls, drift checks and
    /// `check --live` use it. No two rows of one server may reach the same server tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_name: Option<String>,
    /// JSON Schema of the arguments, for tools whose source is a server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<serde_json::Value>,
    /// JSON Schema of the result (MCP `outputSchema`: an object schema), for tools whose source
    /// is a server; a local tool's comes from its handler's output type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
}

fn is_false(b: &bool) -> bool {
    !*b
}
fn default_source() -> String {
    SOURCE_LOCAL.to_string()
}
fn is_local(s: &str) -> bool {
    s == SOURCE_LOCAL
}

/// `source` of a tool whose handler is a `#[tool]` function in the crate that owns `tools.toml`.
pub const SOURCE_LOCAL: &str = "local";
/// `source` of the discovery meta-tools, implemented by the runtime itself.
pub const SOURCE_LOOP: &str = "loop";
/// The implicit profile that owns every tool.
pub const PROFILE_FULL: &str = "full";
/// The Code Mode meta-tool: runs one JavaScript program that calls the tools declared
/// `code_mode = true`. Tier `loop`, source `loop`, like the discovery meta-tools, but not one
/// of them: a profile owns it only where Code Mode is wanted.
pub const CODE_MODE_TOOL: &str = "run_code";
/// The discovery meta-tools: tier `loop`, source `loop`.
pub const META_TOOLS: [&str; 4] = [
    "tool_search",
    "tool_describe",
    "tool_call",
    "read_tool_result",
];

macro_rules! code_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal => $code:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $text)] $variant = $code),+
        }
        impl $name {
            /// Every value, in code order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The spelling used in `tools.toml`, errors, the CLI and the docs.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
            /// The compact code stored in the generated tables.
            pub const fn code(self) -> u8 {
                self as u8
            }
            /// Inverse of [`Self::code`]; `None` for a code no variant has.
            pub const fn from_code(code: u8) -> Option<Self> {
                match code { $($code => Some($name::$variant),)+ _ => None }
            }
            /// Inverse of [`Self::as_str`].
            pub fn parse(text: &str) -> Option<Self> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
            /// Every spelling, for did-you-mean suggestions and help text.
            pub const NAMES: &'static [&'static str] = &[$($text),+];
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

code_enum! {
    /// Whether a tool's definition is sent every turn its toolsets are active.
    Visibility {
        /// Sent every turn its toolsets are active.
        Inline = "inline" => 0,
        /// Sent only after `tool_search`, when the user names it, or when preselected.
        Discoverable = "discoverable" => 1,
    }
}

code_enum! {
    /// How a call is authorized.
    Tier {
        /// Runs without interrupting anyone; requires `effect = "read"`.
        Silent = "silent" => 0,
        /// Asks the authorization hook about the concrete operation first.
        Gated = "gated" => 1,
        /// Part of the discovery loop itself (the meta-tools).
        Loop = "loop" => 2,
    }
}

code_enum! {
    /// What a call does to the world. MCP annotations are derived from it.
    EffectKind {
        /// Changes nothing (`readOnlyHint: true`).
        Read = "read" => 0,
        /// Changes state, additively (`readOnlyHint: false`, `destructiveHint: false`).
        Write = "write" => 1,
        /// May delete or overwrite (`destructiveHint: true`); requires `tier = "gated"`.
        Destructive = "destructive" => 2,
    }
}

code_enum! {
    /// The narrowest MCP scope that lists a tool. Scopes nest: `read-only` ⊂ `staging` ⊂ `full`.
    Exposure {
        /// Listed in every scope; requires `effect = "read"`.
        ReadOnly = "read-only" => 0,
        /// Listed in the `staging` and `full` scopes.
        Staging = "staging" => 1,
        /// Listed only in the `full` scope.
        Full = "full" => 2,
        /// Never listed over MCP.
        Excluded = "excluded" => 3,
    }
}

code_enum! {
    /// Lifecycle state of a tool.
    Status {
        /// In use.
        Active = "active" => 0,
        /// Usable, may change without notice.
        Experimental = "experimental" => 1,
        /// On its way out: never planned into a turn; names `replaced_by` and `removal`.
        Deprecated = "deprecated" => 2,
    }
}

code_enum! {
    /// A client whose documented cap on the tool definitions of one request toolcat knows, for
    /// `client = "..."` on a profile or a preset. [`Client::max_tools`] gives the cap,
    /// [`Client::source`] where it is documented.
    Client {
        /// Cursor: 40 tools.
        Cursor = "cursor" => 0,
        /// Windsurf (Cascade): 100 tools.
        Windsurf = "windsurf" => 1,
        /// GitHub Copilot in VS Code: 128 tools.
        Copilot = "copilot" => 2,
    }
}

impl Client {
    /// The client's cap on the tool definitions of one request.
    pub const fn max_tools(self) -> u32 {
        match self {
            Client::Cursor => 40,
            Client::Windsurf => 100,
            Client::Copilot => 128,
        }
    }

    /// Where the cap is stated, read 2026-12-03. Windsurf's own documentation says Cascade has
    /// "a limit of 100 total tools that it has access to at any given time". Cursor's 40 and VS
    /// Code's 128 are the limits their users report when the clients refuse more (their own
    /// documentation was not found stating them); the sources below are those reports.
    pub const fn source(self) -> &'static str {
        match self {
            Client::Cursor => "https://github.com/modelcontextprotocol/.github/discussions/360",
            Client::Windsurf => "https://docs.windsurf.com/windsurf/cascade/mcp",
            Client::Copilot => "https://github.com/postmanlabs/postman-mcp-server/pull/26",
        }
    }
}

/// The cap that holds for a profile or preset: the smaller of its `max_tools` and its client's
/// cap; `None` when it declares neither.
pub fn effective_max_tools(max_tools: Option<u32>, client: Option<Client>) -> Option<u32> {
    match (max_tools, client.map(Client::max_tools)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

// `code_enum!` writes the enum and its derives; the default is named here.
#[allow(clippy::derivable_impls)]
impl Default for Status {
    fn default() -> Self {
        Status::Active
    }
}

impl Status {
    fn is_active(&self) -> bool {
        *self == Status::Active
    }
}

code_enum! {
    /// A wire format tool definitions are exported to; each has its own rules for names and
    /// input schemas (the `targets` module of toolcat-catalog).
    Target {
        /// OpenAI function tools (Chat Completions and Responses), strict mode where possible.
        OpenAi = "openai" => 0,
        /// Anthropic Messages tools.
        Anthropic = "anthropic" => 1,
        /// Gemini function declarations.
        Gemini = "gemini" => 2,
        /// MCP `tools/list`.
        Mcp = "mcp" => 3,
    }
}

/// An MCP exposure scope a client can be granted; a tool with exposure `E` is listed in scope `S`
/// when `E` ≤ `S` (`excluded` is listed nowhere).
pub type Scope = Exposure;

/// Whether `name` is a valid name of a tool, profile, toolset, preset, server or namespace: one
/// or more ASCII letters, digits, `_` and `-` (the charset of `^[a-zA-Z0-9_-]{1,64}$`, the tool
/// name rule of OpenAI and Anthropic).
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Maps `raw` into `[a-zA-Z0-9_-]` (the charset of [`is_valid_name`]): a valid
/// name is returned unchanged; otherwise ASCII whitespace and punctuation become `_`, other characters
/// are dropped, runs of `_` collapse, `_`/`-` are trimmed from the ends, and an empty result becomes
/// `fallback`.
pub fn map_name(raw: &str, fallback: &str) -> String {
    if is_valid_name(raw) {
        return raw.to_string();
    }
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        let mapped = if c.is_ascii_alphanumeric() || c == '-' {
            Some(c)
        } else if c == '_' || c.is_ascii_whitespace() || c.is_ascii_punctuation() {
            Some('_')
        } else {
            None
        };
        if let Some(m) = mapped {
            if m == '_' && out.ends_with('_') {
                continue;
            }
            out.push(m);
        }
    }
    let trimmed = out.trim_matches(|c| c == '_' || c == '-');
    if trimmed.is_empty() {
        fallback.to_string()
    } else {
        trimmed.to_string()
    }
}

/// The longest exported tool name every export target accepts (OpenAI and Anthropic: 64).
pub const MAX_EXPORTED_NAME: usize = 64;

/// Parses a `rate_limit` (`N/sec`, `N/min` or `N/hour`, `N` ≥ 1) into `(calls, window seconds)`;
/// `None` when it is malformed.
pub fn parse_rate_limit(text: &str) -> Option<(u32, u32)> {
    let (calls, window) = text.split_once('/')?;
    if calls.is_empty() || !calls.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let calls: u32 = calls.parse().ok().filter(|&n| n >= 1)?;
    let seconds = match window {
        "sec" => 1,
        "min" => 60,
        "hour" => 3600,
        _ => return None,
    };
    Some((calls, seconds))
}

/// Field names of a `[[tool]]` row, as the loader accepts them, in legend order.
pub fn tool_fields() -> Vec<String> {
    schema_fields::<ToolDecl>()
}

/// Field names of each side table (`mcp_server`, `profile`, `toolset`, `preset`).
pub fn table_fields(table: &str) -> Option<Vec<String>> {
    Some(match table {
        "mcp_server" => schema_fields::<McpServerDecl>(),
        "profile" => schema_fields::<ProfileDecl>(),
        "toolset" => schema_fields::<ToolsetDecl>(),
        "preset" => schema_fields::<PresetDecl>(),
        _ => return None,
    })
}

/// The top-level tables of `tools.toml` (`mcp_server`, `profile`, `toolset`, `preset`, `tool`), in
/// declaration order of [`CatalogFile`]; the top-level keys ([`CATALOG_KEYS`]) aside.
pub fn catalog_tables() -> Vec<String> {
    schema_fields::<CatalogFile>()
        .into_iter()
        .filter(|f| !CATALOG_KEYS.contains(&f.as_str()))
        .collect()
}

/// The top-level keys of `tools.toml` that are plain values rather than tables; written before
/// the first table.
pub const CATALOG_KEYS: &[&str] = &["targets", "review_inline"];

/// Fields a `[[tool]]` row must write (those without a default), in legend order.
pub fn required_tool_fields() -> Vec<String> {
    schema_required::<ToolDecl>()
}

/// Fields each entry of a side table (`mcp_server`, `profile`, `toolset`, `preset`) must write.
pub fn required_table_fields(table: &str) -> Option<Vec<String>> {
    Some(match table {
        "mcp_server" => schema_required::<McpServerDecl>(),
        "profile" => schema_required::<ProfileDecl>(),
        "toolset" => schema_required::<ToolsetDecl>(),
        "preset" => schema_required::<PresetDecl>(),
        _ => return None,
    })
}

/// The `required` property names schemars derives for `T` (fields without a serde default).
fn schema_required<T: JsonSchema>() -> Vec<String> {
    let schema = schemars::schema_for!(T);
    schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|names| {
            names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The property names schemars derives for `T`, in declaration order.
fn schema_fields<T: JsonSchema>() -> Vec<String> {
    let schema = schemars::schema_for!(T);
    schema
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|props| props.keys().cloned().collect())
        .unwrap_or_default()
}

/// The JSON Schema of `tools.toml` (`generated/tools.schema.json`), pretty-printed with a final newline.
pub fn catalog_json_schema() -> String {
    let schema = schemars::schema_for!(CatalogFile);
    let mut text = serde_json::to_string_pretty(&schema).expect("a JSON Schema serializes");
    text.push('\n');
    text
}
