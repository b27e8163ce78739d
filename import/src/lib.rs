//! `toolcat import`: turning a real tool surface into `tools.toml` text that `toolcat check` accepts.
//!
//! [`import`] reads one source and returns the catalog text, the [`CatalogFile`] it serializes, and
//! an [`ImportReport`] (counts, renamed tools, skipped variants, warnings). It writes nothing; the CLI
//! prints the text on stdout and the report on stderr:
//!
//! ```text
//! toolcat import --from mcp-tools-json|livemcpbench|github-toolsnaps|metatool PATH > tools.toml
//! ```
//!
//! # Sources
//!
//! - **`mcp-tools-json`**: a JSON file holding one MCP server's tools, in any of the shapes a
//!   `tools/list` exchange produces: the result object `{"tools": [...]}`, the whole JSON-RPC reply
//!   `{"jsonrpc": "2.0", "id": ..., "result": {"tools": [...]}}`, or a bare array of tool objects. A
//!   tool object has `name` (required), `title`, `description`, `inputSchema`, `outputSchema` and
//!   `annotations`; other members (`icons`, `_meta`) have no place in `tools.toml` and are left out.
//!   The server is named by [`ImportOptions::server_name`], else by the file name without its
//!   extension. A reply that carries a `nextCursor` is one page of a longer list: a warning says so.
//! - **running servers** ([`import_live`], `toolcat import --from-server`): the tool objects the
//!   servers' `tools/list` answered, read as `mcp-tools-json` tools, each server with the transport
//!   it was reached by and always namespaced (`NAME__tool`).
//! - **`livemcpbench`**: the LiveMCPTool catalog of LiveMCPBench (`tools.json`), an array of
//!   `{name, description, web, config, category, tools: {KEY: {server_name, version, tools: [...]}}}`.
//!   Each `KEY` is one server; its launch `command` and `args` come from `config.mcpServers.KEY`
//!   (an `env` there is not carried over: a warning names the server).
//! - **`github-toolsnaps`**: the `__toolsnaps__` directory of github/github-mcp-server, one
//!   `*.snap` file per tool (the tool object as the server lists it), read in file-name order.
//!   PATH is that directory, or a directory holding it as `toolsnaps/`. When a `toolsets.json`
//!   sits in the directory above the snapshots (`{toolsets: [{id, description, default}],
//!   tools: {FILE_STEM: {toolsets, feature_flag}}}`), it supplies the toolsets, the default
//!   toolsets and each snapshot's feature flag; without it, a snapshot's feature flag is read from
//!   its file name `X_ff_Y.snap` (tool `X` as it looks when flag `Y` is on). All tools come from
//!   one server, `github`.
//! - **`metatool`**: the tool corpus of the MetaTool benchmark (`plugin_des.json`), one JSON object
//!   `{TOOL_NAME: DESCRIPTION}` (OpenAI plugins, 199 of them). Each member becomes one tool of one
//!   server, `metatool`, with that name and description and nothing else: the corpus gives no
//!   input schemas, titles, annotations or transport, so no `input_schema` is written (one
//!   report warning says so for the whole corpus), every tool takes the safe-side defaults of a
//!   tool without hints, and the server's `command` is the placeholder. Nothing is added to the
//!   text a search reads, so retrieval measured on this catalog compares fairly with other
//!   systems given the same name and description.
//!
//! # Rules
//!
//! Every rule below is applied the same way to every source.
//!
//! ## Servers and rows
//! - Every server becomes `[mcp_server.NAME]` with a description from the source (for LiveMCPBench
//!   `"DISPLAY NAME: DESCRIPTION"`) and exactly one transport, `command` (with `args`) or `url`:
//!   [`ImportOptions::transport`] for a one-server source when given, else what the source states
//!   (LiveMCPBench's `config`, where an empty `command` or `url` counts as missing and a
//!   config stating both keeps the `command` with a report warning; non-string `args` are
//!   reported, numbers and booleans kept as their text; for GitHub the local server's documented
//!   launch,
//!   `github-mcp-server stdio`), else the placeholder `command = NAME`, marked by a comment in the
//!   text and a warning in the report.
//! - Every tool becomes one `[[tool]]` row with `source = NAME` of its server, `owner = NAME` of
//!   its server, `input_schema` = the tool's `inputSchema`, `output_schema` = its `outputSchema`
//!   when it has one, status `active` (see feature flags).
//! - The tool's title (`title`, else `annotations.title`), when present and different from its
//!   description, becomes its one `keywords` entry, so search matches the words of the title too
//!   (not when the description had to be derived from the title).
//! - Rows keep the source's order (servers in file order, their tools in list order); the four
//!   discovery meta-tools, when emitted, come first.
//!
//! ## Names
//! - **Charset.** A name already made of `[a-zA-Z0-9_-]` is kept as it is. Any other name is mapped:
//!   ASCII whitespace and ASCII punctuation (`.`, `/`, `:`, space, …) become `_`, every other
//!   character (accents, CJK, emoji) is dropped, runs of `_` collapse to one, and `_`/`-` are trimmed
//!   from both ends; a name left empty becomes `tool` (a tool), `server` (a server) or `toolset`.
//!   Server names and toolset names follow the same rule (a LiveMCPBench server is named by its
//!   `mcpServers` key: `Ant Design Components` → `Ant_Design_Components`). A mapped tool name is
//!   listed in the report as renamed.
//! - **Identity.** Every row whose `name` is not the server's name for the tool (any rule below
//!   but namespacing) gets `remote_name` = the server's name: calls send it, and drift checks and
//!   `toolcat check --live` match the server's list by it, so a renamed row still runs its own
//!   tool and no other.
//! - **Meta-tool names.** `tool_search`, `tool_describe`, `tool_call` and `read_tool_result` belong
//!   to the runtime's own rows: a server tool with one of these names becomes `SERVER_NAME` (e.g.
//!   `plugins_tool_search`); listed as renamed.
//! - **Duplicates inside one server** (two names that map to the same text): a tool whose name
//!   needed no mapping keeps it, and the others, in list order after the first, get the suffix
//!   `_` + 8 hex digits of the CRC-32 (IEEE) of their original name; listed as renamed. So
//!   `admin.tools.delete` beside `admin_tools_delete` becomes `admin_tools_delete_XXXXXXXX`
//!   (`remote_name = "admin.tools.delete"`), and `admin_tools_delete` keeps its name.
//! - **Collisions across servers.** When a tool name occurs on two or more servers, every server
//!   involved gets `namespace = NAME` on its `[mcp_server]` table: its
//!   tools keep their row `name` (the name the server knows) and are exported as `NAMESPACE__name`.
//!   Servers without a collision get no namespace, so their exported names equal their rows' names.
//!   A namespace is the server name with runs of `_` collapsed to one, at most 32 characters.
//! - **Leading character.** Every export target accepts an exported name that starts with a letter
//!   or `_` (Gemini rejects a leading digit or `-`): a namespace, or the name of a tool whose server
//!   has none, that starts otherwise gets `_` in front (listed as renamed for a tool).
//! - **Length.** An exported name is at most 64 characters. A name (or namespace) over its budget keeps
//!   its first characters and ends with `_` + 8 hex digits of the CRC-32 of the full name, so it is
//!   stable across runs and distinct from its neighbours; listed as renamed. Server and toolset
//!   names are held to 64 characters the same way.
//!
//! ## Effect, tier, exposure (from MCP annotations)
//! A hint that is missing, `null` or not a boolean counts as missing, and a missing hint is taken on
//! the safe side ([`classify`]):
//!
//! | annotations                                     | effect        | tier     | exposure    |
//! |-------------------------------------------------|---------------|----------|-------------|
//! | `readOnlyHint: true` (and `destructiveHint` not true) | `read`  | `silent` | `read-only` |
//! | otherwise, `destructiveHint: false`             | `write`       | `gated`  | `staging`   |
//! | otherwise (`destructiveHint` true or missing)   | `destructive` | `gated`  | `full`      |
//!
//! Contradictory hints, `readOnlyHint: true` with `destructiveHint: true`, are read on the safe
//! side as destructive (gated, `full`), with a warning in the report: hints come from the server
//! and are not trusted to settle the contradiction the lenient way.
//!
//! A write the server declares non-destructive is additive, so it is listed from the `staging` scope
//! on; anything that may delete or overwrite only in `full`. `idempotent` is `idempotentHint`
//! (missing → `false`); `open_world` is `openWorldHint` (missing → `true`: a remote server is
//! assumed to reach outside the agent unless it says otherwise).
//!
//! ## Toolsets, visibility, profiles, presets
//! - GitHub: the toolsets of `toolsets.json` are kept with their descriptions (a tool may be in
//!   several: `get_label` is in `issues` and `labels`); the special ids `all` and `default` are not
//!   toolsets in `tools.toml` (`all` is the implicit `full` profile, `default` becomes the preset
//!   below), and toolsets left without tools are not emitted (listed in the report).
//! - Every other source: one toolset per server, named and described like the server. LiveMCPBench
//!   also gets one composite toolset per category, `category_NAME` (e.g. `category_file_access`),
//!   that `includes` the toolsets of the category's servers.
//! - Visibility is `discoverable` for every imported tool, except where the source marks defaults:
//!   a GitHub tool with status `active` in a toolset marked `default` is `inline`.
//! - No `[profile]` is declared: every tool belongs to the implicit `full` profile. The one preset
//!   emitted is GitHub's `default` (when `toolsets.json` marks default toolsets): profile `full`,
//!   toolsets = the default toolsets that hold a tool, plus `discovery`.
//! - Whenever a tool is `discoverable`, the four discovery meta-tools (`tool_search`,
//!   `tool_describe`, `tool_call`, `read_tool_result`) are emitted too: tier `loop`, source `loop`,
//!   visibility `inline`, effect `read`, owner `toolcat`, in the toolset `discovery`. Their exposure is
//!   `excluded`: they drive this agent's own loop, and listing them over MCP is left to the author.
//!   A source toolset that is itself called `discovery` is renamed with a hash suffix.
//!
//! ## Descriptions
//! Descriptions are trimmed. An empty one (the validator rejects those) is derived, honestly marked:
//! the tool's title when there is one, else the tool name split into words, followed by
//! `(from the `SERVER` MCP server, which gives no description)`. Every such tool is listed in the
//! report. Descriptions in other languages are kept as the server wrote them.
//!
//! ## GitHub feature flags
//! A snapshot with a feature flag (from `toolsets.json`, else from its `X_ff_Y` file name) shows tool
//! `X` as it looks when flag `Y` is on:
//! - by default the normal surface is kept: a flagged tool whose name is also on the normal surface
//!   is skipped (listed in the report); one whose name is not is imported with status
//!   `experimental` and visibility `discoverable` (it exists only behind its flag);
//! - [`ImportOptions::feature_flags`] turns flags on: a tool of such a flag replaces the normal tool
//!   of the same name in place, or is imported with status `active`; an unknown flag is an error,
//!   and so are two flags that both change one tool.
//!
//! ## Input and output schemas
//! `inputSchema` becomes the row's `input_schema` table. TOML has no `null`: an object member whose
//! value is `null` (typically `"default": null`) is left out, and so is a `null` array item; an
//! integer beyond TOML's 64-bit signed range becomes a float. Each tool changed this way is listed in
//! the report. A tool without an `inputSchema` object, or whose schema's `type` is not `"object"`
//! (every export target needs object parameters), gets no `input_schema`; a warning says so.
//!
//! `outputSchema` (LiveMCPBench's servers give one for about a fifth of their tools) becomes the
//! row's `output_schema` table the same way, so `toolcat serve` lists it and Code Mode types the
//! tool's result with it. MCP requires an object schema: an `outputSchema` that is not a JSON
//! object with `type = "object"` gets no `output_schema`, and a warning says so; a tool without
//! one (or with `null`) gets none, silently.
//!
//! ## Output
//! The text is the [`CatalogFile`] serialized with the `toml` crate, after a header comment naming
//! the source and the command; it is deterministic (the same input gives the same bytes) and is read
//! back before it is returned, so it always parses into the same catalog.

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use heck::ToSnakeCase;
use serde::Deserialize;
use serde_json::{Map, Value};

pub use toolcat_catalog::model::{is_valid_name, map_name, MAX_EXPORTED_NAME};
use toolcat_catalog::model::{
    CatalogFile, EffectKind, Exposure, McpServerDecl, PresetDecl, Status, Tier, ToolDecl,
    ToolsetDecl, Visibility, META_TOOLS, PROFILE_FULL, SOURCE_LOCAL, SOURCE_LOOP,
};

/// Longest namespace the importer gives a server.
pub const MAX_NAMESPACE: usize = 32;
/// Toolset of the discovery meta-tools.
pub const DISCOVERY_TOOLSET: &str = "discovery";
/// Owner of the discovery meta-tools.
pub const META_OWNER: &str = "toolcat";
/// Server name of every `github-toolsnaps` tool.
pub const GITHUB_SERVER: &str = "github";
/// Launch command of the local GitHub MCP server (its `stdio` subcommand), which the snapshots
/// describe; [`ImportOptions::transport`] replaces it (e.g. with the remote server's URL).
pub const GITHUB_COMMAND: &str = "github-mcp-server";
/// Arguments of [`GITHUB_COMMAND`].
pub const GITHUB_ARGS: [&str; 1] = ["stdio"];

/// The kinds of tool surface [`import`] reads; `--from` of `toolcat import`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ImportKind {
    /// A JSON file holding one MCP server's `tools/list` result.
    McpToolsJson,
    /// LiveMCPBench's `tools.json` (LiveMCPTool catalog).
    LiveMcpBench,
    /// The `__toolsnaps__` directory of github/github-mcp-server.
    GithubToolsnaps,
    /// The MetaTool benchmark's tool corpus `plugin_des.json` (`{name: description}`).
    Metatool,
}

impl ImportKind {
    /// Every kind, in the order of [`Self::NAMES`].
    pub const ALL: &'static [ImportKind] = &[
        ImportKind::McpToolsJson,
        ImportKind::LiveMcpBench,
        ImportKind::GithubToolsnaps,
        ImportKind::Metatool,
    ];
    /// The spellings accepted by `--from`.
    pub const NAMES: &'static [&'static str] = &[
        "mcp-tools-json",
        "livemcpbench",
        "github-toolsnaps",
        "metatool",
    ];

    /// The spelling used by `--from`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ImportKind::McpToolsJson => "mcp-tools-json",
            ImportKind::LiveMcpBench => "livemcpbench",
            ImportKind::GithubToolsnaps => "github-toolsnaps",
            ImportKind::Metatool => "metatool",
        }
    }

    /// Inverse of [`Self::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.as_str() == text)
    }
}

impl fmt::Display for ImportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ImportKind {
    type Err = ImportError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| ImportError::UnknownKind(s.to_string()))
    }
}

/// Choices a caller can make; [`Default`] gives the documented defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// `github-toolsnaps`: feature flags to turn on. Their tools replace the normal tools of the same
    /// name, or join with status `active`. Empty (the default): the normal surface only.
    pub feature_flags: Vec<String>,
    /// `mcp-tools-json`: the server's name. `None`: the file name without its extension.
    pub server_name: Option<String>,
    /// How to reach the server of a one-server source (`mcp-tools-json`, `github-toolsnaps`),
    /// replacing what the source says. `None`: the source's own, else a marked placeholder.
    pub transport: Option<Transport>,
}

/// How the runtime reaches an MCP server: the `command`/`args` or `url` of `[mcp_server]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// Launch `command` with `args` and speak over stdio.
    Stdio { command: String, args: Vec<String> },
    /// Streamable HTTP at `url`.
    Http { url: String },
}

/// What [`import`] returns.
#[derive(Debug, Clone)]
pub struct ImportOutput {
    /// The `tools.toml` text: a header comment, then the serialized [`Self::catalog`].
    pub text: String,
    /// The catalog the text holds.
    pub catalog: CatalogFile,
    /// What was done, for stderr.
    pub report: ImportReport,
}

/// A tool as the report names it: its server and its exported name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ToolRef {
    /// Server name (the `source` of the row).
    pub server: String,
    /// Exported name (`NS__name` for a namespaced server).
    pub name: String,
}

impl fmt::Display for ToolRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` (server `{}`)", self.name, self.server)
    }
}

/// Why a tool's row name differs from the name its server gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RenameReason {
    /// Characters outside `[a-zA-Z0-9_-]` were mapped.
    Charset,
    /// Another tool of the same server maps to the same name.
    Duplicate,
    /// The name of a discovery meta-tool, which only the runtime's own rows may have.
    Reserved,
    /// The exported name would start with a digit or `-`.
    Leading,
    /// The exported name would exceed 64 characters.
    Length,
}

impl RenameReason {
    fn as_str(self) -> &'static str {
        match self {
            RenameReason::Charset => "characters outside `[a-zA-Z0-9_-]`",
            RenameReason::Duplicate => "same name as another tool of the server",
            RenameReason::Reserved => "name of a discovery meta-tool",
            RenameReason::Leading => "exported name would start with a digit or `-`",
            RenameReason::Length => "exported name over 64 characters",
        }
    }
}

/// A tool whose row `name` is not the name its server gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renamed {
    /// Server name.
    pub server: String,
    /// The name in the source.
    pub original: String,
    /// The row's `name`.
    pub name: String,
    /// Every reason that applied, in the order applied.
    pub reasons: Vec<RenameReason>,
}

/// A server that got a `namespace` because its tool names collide with another server's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespaced {
    /// Server name.
    pub server: String,
    /// Its namespace (`NS` of `NS__name`).
    pub namespace: String,
    /// The row names it shares with other servers.
    pub shared: Vec<String>,
}

/// A GitHub snapshot of a feature-flagged tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlaggedTool {
    /// Snapshot file name, e.g. `find_duplicate_ff_duplicate_detection.snap`.
    pub file: String,
    /// Tool name inside the snapshot.
    pub tool: String,
    /// The feature flag.
    pub flag: String,
}

/// A tool whose `input_schema` or `output_schema` lost values TOML cannot hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaChange {
    /// The tool.
    pub tool: ToolRef,
    /// The row's field: `input_schema` (from `inputSchema`) or `output_schema` (from
    /// `outputSchema`).
    pub field: &'static str,
    /// JSON Pointers (into that schema) of the `null` values left out.
    pub nulls_dropped: Vec<String>,
    /// JSON Pointers of integers turned into floats.
    pub floats: Vec<String>,
}

/// What an import did. [`fmt::Display`] renders it for stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// The source kind.
    pub kind: ImportKind,
    /// The path as given.
    pub path: PathBuf,
    /// `[mcp_server]` tables emitted.
    pub servers: usize,
    /// Imported `[[tool]]` rows (the meta-tools not counted).
    pub tools: usize,
    /// Meta-tool rows emitted (0 or 4).
    pub meta_tools: usize,
    /// `[toolset]` tables emitted.
    pub toolsets: usize,
    /// `[preset]` tables emitted.
    pub presets: usize,
    /// Imported tools by effect: `read`, `write`, `destructive`.
    pub effects: [usize; 3],
    /// Imported tools with visibility `inline`.
    pub inline: usize,
    /// Imported tools with status `experimental`.
    pub experimental: Vec<ToolRef>,
    /// Servers given a namespace.
    pub namespaced: Vec<Namespaced>,
    /// Tools whose row name differs from the server's name for them.
    pub renamed: Vec<Renamed>,
    /// Tools whose description was derived because the source gave none.
    pub derived_descriptions: Vec<ToolRef>,
    /// GitHub feature-flag snapshots skipped because the normal surface has the tool.
    pub skipped_variants: Vec<FlaggedTool>,
    /// GitHub feature-flag snapshots that replaced a normal tool (flag turned on).
    pub replaced_by_variant: Vec<FlaggedTool>,
    /// Source toolsets not emitted because no imported tool is in them.
    pub empty_toolsets: Vec<String>,
    /// Input and output schemas changed to fit TOML.
    pub schema_changes: Vec<SchemaChange>,
    /// Servers whose `command` is a placeholder because the source does not say how to reach them.
    pub placeholder_transport: Vec<String>,
    /// Everything else worth a look, one sentence each.
    pub warnings: Vec<String>,
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [read, write, destructive] = self.effects;
        writeln!(
            f,
            "imported {} from {} ({}: `{}`)",
            count(self.tools, "tool"),
            count(self.servers, "server"),
            self.kind,
            self.path.display()
        )?;
        writeln!(
            f,
            "  effect: {read} read, {write} write, {destructive} destructive; {} inline, {} discoverable; {} experimental",
            self.inline,
            self.tools - self.inline,
            self.experimental.len()
        )?;
        writeln!(
            f,
            "  {}, {}, {}",
            count(self.toolsets, "toolset"),
            count(self.presets, "preset"),
            count(self.meta_tools, "meta-tool")
        )?;
        if !self.namespaced.is_empty() {
            writeln!(f, "namespaced servers ({}):", self.namespaced.len())?;
            for n in &self.namespaced {
                if n.shared.is_empty() {
                    writeln!(
                        f,
                        "  `{}` → namespace `{}` (imported live: always namespaced)",
                        n.server, n.namespace
                    )?;
                } else {
                    writeln!(
                        f,
                        "  `{}` → namespace `{}` (shares {})",
                        n.server,
                        n.namespace,
                        backticked(&n.shared)
                    )?;
                }
            }
        }
        if !self.renamed.is_empty() {
            writeln!(
                f,
                "renamed tools ({}; each row keeps the server's name as `remote_name`, which calls send):",
                self.renamed.len()
            )?;
            for r in &self.renamed {
                let why: Vec<&str> = r.reasons.iter().map(|r| r.as_str()).collect();
                writeln!(
                    f,
                    "  `{}` → `{}` (server `{}`: {})",
                    r.original,
                    r.name,
                    r.server,
                    why.join("; ")
                )?;
            }
        }
        if !self.derived_descriptions.is_empty() {
            writeln!(
                f,
                "derived descriptions ({}; the source gave none, review them):",
                self.derived_descriptions.len()
            )?;
            for t in &self.derived_descriptions {
                writeln!(f, "  {t}")?;
            }
        }
        if !self.experimental.is_empty() {
            writeln!(
                f,
                "experimental tools ({}; behind a feature flag that is off):",
                self.experimental.len()
            )?;
            for t in &self.experimental {
                writeln!(f, "  {t}")?;
            }
        }
        for (title, list) in [
            ("skipped feature-flag variants", &self.skipped_variants),
            (
                "feature-flag variants that replaced a tool",
                &self.replaced_by_variant,
            ),
        ] {
            if !list.is_empty() {
                writeln!(f, "{title} ({}):", list.len())?;
                for v in list {
                    writeln!(f, "  `{}` (flag `{}`, file `{}`)", v.tool, v.flag, v.file)?;
                }
            }
        }
        if !self.empty_toolsets.is_empty() {
            writeln!(
                f,
                "toolsets without tools, not emitted: {}",
                backticked(&self.empty_toolsets)
            )?;
        }
        for (field, what) in [
            ("input_schema", "input schemas"),
            ("output_schema", "output schemas"),
        ] {
            let changes: Vec<&SchemaChange> = self
                .schema_changes
                .iter()
                .filter(|c| c.field == field)
                .collect();
            if changes.is_empty() {
                continue;
            }
            let nulls: usize = changes.iter().map(|c| c.nulls_dropped.len()).sum();
            let floats: usize = changes.iter().map(|c| c.floats.len()).sum();
            let tools: Vec<String> = changes.iter().map(|c| c.tool.name.clone()).collect();
            writeln!(
                f,
                "{what} changed to fit TOML ({}: {} left out, {} made floats): {}",
                count(tools.len(), "tool"),
                count(nulls, "`null` value"),
                count(floats, "large integer"),
                backticked(&tools)
            )?;
        }
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        Ok(())
    }
}

/// `n` and `noun`, with an `s` unless `n` is 1.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn backticked(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why an import failed. Messages name the cause and the fix.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// `--from` names no known source kind.
    #[error("unknown import source `{0}`; use one of `mcp-tools-json`, `livemcpbench`, `github-toolsnaps`, `metatool`")]
    UnknownKind(String),
    /// A file or directory could not be read.
    #[error("cannot read `{path}`: {source}; check the path")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file is not JSON, or its JSON does not have the expected shape.
    #[error("`{path}` is not {expected}: {source}")]
    Json {
        path: PathBuf,
        expected: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// A file's JSON has a shape the source kind does not accept.
    #[error("`{path}` is not {expected}: {detail}")]
    Shape {
        path: PathBuf,
        expected: &'static str,
        detail: String,
    },
    /// The source holds no tools.
    #[error("`{path}` holds no tools; point at a file or directory that lists some")]
    NoTools { path: PathBuf },
    /// A feature flag no snapshot carries.
    #[error("unknown feature flag `{flag}`; the snapshots carry {known}")]
    UnknownFeatureFlag { flag: String, known: String },
    /// Two chosen feature flags change the same tool.
    #[error(
        "feature flags `{first}` and `{second}` both change `{tool}`; turn on only one of them"
    )]
    ConflictingFeatureFlags {
        tool: String,
        first: String,
        second: String,
    },
    /// The catalog could not be written as TOML.
    #[error("the imported catalog cannot be written as TOML: {0}")]
    Serialize(#[from] toml::ser::Error),
    /// The written text does not read back as the same catalog (a fault of the importer).
    #[error(
        "the imported catalog does not read back the same: {0}; report this with the source file"
    )]
    RoundTrip(String),
}

/// Imports `path` as `kind` with the default [`ImportOptions`].
///
/// # Errors
/// See [`import_with`].
pub fn import(kind: ImportKind, path: &Path) -> Result<ImportOutput, ImportError> {
    import_with(kind, path, &ImportOptions::default())
}

/// Imports `path` as `kind`, following the rules in the [module documentation](self).
///
/// # Errors
/// [`ImportError`]: unreadable path, JSON that is not the source's shape, a source without tools,
/// an unknown or conflicting feature flag; never a panic.
pub fn import_with(
    kind: ImportKind,
    path: &Path,
    options: &ImportOptions,
) -> Result<ImportOutput, ImportError> {
    let surface = match kind {
        ImportKind::McpToolsJson => {
            let text = read_text(path)?;
            let server = match &options.server_name {
                Some(name) => name.clone(),
                None => path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "server".to_string()),
            };
            read_mcp_tools_json(path, &text, &server)?
        }
        ImportKind::LiveMcpBench => {
            let text = read_text(path)?;
            read_livemcpbench(path, &text)?
        }
        ImportKind::GithubToolsnaps => read_github_toolsnaps(path, options)?,
        ImportKind::Metatool => {
            let text = read_text(path)?;
            read_metatool(path, &text)?
        }
    };
    if surface.servers.iter().all(|s| s.tools.is_empty()) {
        return Err(ImportError::NoTools {
            path: path.to_path_buf(),
        });
    }
    build(kind, path, options, surface)
}

/// Imports MCP `tools/list` JSON given as text (the `mcp-tools-json` source without a file);
/// `path` names the input in the header and in errors.
///
/// # Errors
/// As [`import_with`].
pub fn import_mcp_tools_json_str(
    path: &Path,
    text: &str,
    server: &str,
) -> Result<ImportOutput, ImportError> {
    let surface = read_mcp_tools_json(path, text, server)?;
    if surface.servers.iter().all(|s| s.tools.is_empty()) {
        return Err(ImportError::NoTools {
            path: path.to_path_buf(),
        });
    }
    let options = ImportOptions {
        server_name: Some(server.to_string()),
        ..ImportOptions::default()
    };
    build(ImportKind::McpToolsJson, path, &options, surface)
}

/// One running MCP server's tools as its `tools/list` answered, and how to reach it again: the
/// input of [`import_live`].
#[derive(Debug, Clone, PartialEq)]
pub struct LiveServer {
    /// The server's name in the catalog (`[mcp_server.NAME]`, mapped by the name rules) and its
    /// namespace.
    pub name: String,
    /// What the server is (its `[mcp_server]` description); `None`: one naming the server, and
    /// the version it gave in its `initialize` answer when given.
    pub description: Option<String>,
    /// `serverInfo` of the server's `initialize` answer: name and version, for the description
    /// and the header.
    pub server_info: Option<(String, String)>,
    /// How the runtime reaches the server: its `command`/`args` or `url`.
    pub transport: Transport,
    /// `env` of its `[mcp_server]` entry (stdio), written as given: `${VAR}` references stay
    /// references.
    pub env: BTreeMap<String, String>,
    /// `headers` of its `[mcp_server]` entry (streamable HTTP), written as given.
    pub headers: BTreeMap<String, String>,
    /// The tool objects of every `tools/list` page, in the server's order.
    pub tools: Vec<Value>,
}

/// Imports the tools running servers serve now (`toolcat import --from-server`), following the
/// rules in the [module documentation](self) as for a `mcp-tools-json` file, except that every
/// server is namespaced (`namespace` = its name, so its tools are exported as `NAME__tool`)
/// whether or not its names collide: tools found live are meant to sit beside other servers'.
/// `command` is the command line the header names.
///
/// # Errors
/// [`ImportError::Shape`] naming the server when a tool object has no string `name` or a wrongly
/// typed member; [`ImportError::NoTools`] when no server serves a tool.
pub fn import_live(servers: &[LiveServer], command: &str) -> Result<ImportOutput, ImportError> {
    const LIVE_SHAPE: &str = "a list of MCP tool objects (`tools/list`)";
    let label = PathBuf::from(format!(
        "tools/list of {}",
        servers
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let mut warnings = Vec::new();
    let mut specs = Vec::with_capacity(servers.len());
    let mut about = vec!["Source: the MCP `tools/list` of each server below, as it served them when imported (`toolcat check --live` compares them again).".to_string()];
    for server in servers {
        let tools: Vec<McpTool> = serde_json::from_value(Value::Array(server.tools.clone()))
            .map_err(|e| ImportError::Shape {
                path: label.clone(),
                expected: LIVE_SHAPE,
                detail: format!(
                    "server `{}` listed a tool this importer cannot read: {e}",
                    server.name
                ),
            })?;
        let tools: Vec<ToolSpec> = tools
            .into_iter()
            .map(|t| tool_spec(t, &mut warnings))
            .collect();
        let (command, args, url) = match &server.transport {
            Transport::Stdio { command, args } => (Some(command.clone()), args.clone(), None),
            Transport::Http { url } => (None, Vec::new(), Some(url.clone())),
        };
        let description = server
            .description
            .clone()
            .unwrap_or_else(|| match &server.server_info {
                Some((name, version)) => format!(
                    "MCP server `{}` ({name} {version}), imported from the tools it served",
                    server.name
                ),
                None => format!(
                    "MCP server `{}`, imported from the tools it served",
                    server.name
                ),
            });
        about.push(match &server.server_info {
            Some((name, version)) => format!(
                "`{}`: {name} {version}, {}.",
                server.name,
                count(tools.len(), "tool")
            ),
            None => format!("`{}`: {}.", server.name, count(tools.len(), "tool")),
        });
        specs.push(ServerSpec {
            key: server.name.clone(),
            description,
            command,
            args,
            url,
            tools,
            namespaced: true,
            env: server.env.clone(),
            headers: server.headers.clone(),
        });
    }
    if specs.iter().all(|s| s.tools.is_empty()) {
        return Err(ImportError::NoTools { path: label });
    }
    let surface = Surface {
        servers: specs,
        about,
        warnings,
        command_line: Some(command.to_string()),
        ..Surface::default()
    };
    build(
        ImportKind::McpToolsJson,
        &label,
        &ImportOptions::default(),
        surface,
    )
}

// ---------------------------------------------------------------------------------------------
// Annotations → effect, tier, exposure
// ---------------------------------------------------------------------------------------------

/// The four MCP behaviour hints of a tool; `None` when missing (or not a boolean).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct McpHints {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

/// What [`classify`] derives from [`McpHints`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classification {
    pub effect: EffectKind,
    pub tier: Tier,
    pub exposure: Exposure,
    pub idempotent: bool,
    pub open_world: bool,
}

/// Derives effect, tier, exposure, `idempotent` and `open_world` from MCP hints, a missing hint
/// taken on the safe side (the table in the [module documentation](self#effect-tier-exposure-from-mcp-annotations)).
pub fn classify(hints: &McpHints) -> Classification {
    // `readOnlyHint: true` with `destructiveHint: true` contradicts itself; a server's hints are
    // not to be trusted, so the destructive reading wins.
    let (effect, tier, exposure) =
        if hints.read_only == Some(true) && hints.destructive != Some(true) {
            (EffectKind::Read, Tier::Silent, Exposure::ReadOnly)
        } else if hints.destructive == Some(false) {
            (EffectKind::Write, Tier::Gated, Exposure::Staging)
        } else {
            (EffectKind::Destructive, Tier::Gated, Exposure::Full)
        };
    Classification {
        effect,
        tier,
        exposure,
        idempotent: hints.idempotent == Some(true),
        open_world: hints.open_world != Some(false),
    }
}

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

/// `_` and the CRC-32 (IEEE) of `original` as 8 lower-case hex digits.
fn hash_suffix(original: &str) -> String {
    format!("_{:08x}", crc32fast::hash(original.as_bytes()))
}

/// Holds `name` to `budget` characters: a longer one keeps its head and ends with
/// [`hash_suffix`] of `original`. `name` is ASCII (mapped), so byte and character counts agree.
fn shorten(name: &str, original: &str, budget: usize) -> String {
    if name.len() <= budget {
        return name.to_string();
    }
    let suffix = hash_suffix(original);
    let keep = budget.saturating_sub(suffix.len());
    let head = name[..keep].trim_end_matches(['_', '-']);
    format!("{head}{suffix}")
}

/// Gives out unique names: the first comer keeps the mapped name, later ones get a hash suffix.
struct NameAllocator {
    taken: BTreeSet<String>,
}

impl NameAllocator {
    fn new() -> Self {
        NameAllocator {
            taken: BTreeSet::new(),
        }
    }
    fn reserve(&mut self, name: &str) {
        self.taken.insert(name.to_string());
    }
    /// Allocates a name for `raw` (mapped by [`map_name`], held to `budget`); a name already taken
    /// gets [`hash_suffix`] of `original`. The flag says whether a suffix was needed.
    fn allocate(
        &mut self,
        raw: &str,
        original: &str,
        fallback: &str,
        budget: usize,
    ) -> (String, bool) {
        let mapped = shorten(&map_name(raw, fallback), original, budget);
        if self.taken.insert(mapped.clone()) {
            return (mapped, false);
        }
        let mut salt = original.to_string();
        loop {
            let base = map_name(raw, fallback);
            let suffix = hash_suffix(&salt);
            let keep = budget.saturating_sub(suffix.len()).min(base.len());
            let candidate = format!("{}{suffix}", base[..keep].trim_end_matches(['_', '-']));
            if self.taken.insert(candidate.clone()) {
                return (candidate, true);
            }
            salt.push('\'');
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The source-neutral surface every reader produces
// ---------------------------------------------------------------------------------------------

/// A toolset as a tool or an include refers to it before names are allocated.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum ToolsetKey {
    /// A toolset the source names (GitHub toolset id, LiveMCPBench category toolset).
    Named(String),
    /// The toolset of server `i`.
    Server(usize),
}

#[derive(Debug, Clone)]
struct ToolsetSpec {
    id: String,
    description: String,
    includes: Vec<ToolsetKey>,
}

#[derive(Debug, Clone)]
struct PresetSpec {
    name: String,
    description: String,
    toolsets: Vec<ToolsetKey>,
}

#[derive(Debug, Clone)]
struct ToolSpec {
    /// The name the server gives the tool.
    name: String,
    title: Option<String>,
    description: String,
    input_schema: Option<Value>,
    hints: McpHints,
    /// Empty: the server's toolset.
    toolsets: Vec<ToolsetKey>,
    status: Status,
    inline: bool,
    /// The source tool's `outputSchema` (`null` counts as none).
    output_schema: Option<Value>,
    /// The source never gives input schemas (MetaTool): a missing one is reported once for the
    /// whole source instead of once per tool.
    schemaless_source: bool,
}

#[derive(Debug, Clone)]
struct ServerSpec {
    /// The name in the source.
    key: String,
    description: String,
    command: Option<String>,
    args: Vec<String>,
    url: Option<String>,
    tools: Vec<ToolSpec>,
    /// Namespaced whether or not its names collide (servers imported live, see [`import_live`]).
    namespaced: bool,
    /// `env` and `headers` of `[mcp_server]` (servers imported live from a catalog's entry).
    env: BTreeMap<String, String>,
    headers: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default)]
struct Surface {
    servers: Vec<ServerSpec>,
    toolsets: Vec<ToolsetSpec>,
    presets: Vec<PresetSpec>,
    /// Header lines describing the source (without `# `).
    about: Vec<String>,
    skipped_variants: Vec<FlaggedTool>,
    replaced_by_variant: Vec<FlaggedTool>,
    warnings: Vec<String>,
    /// The command named in the header, when not the `--from` command of [`command_line`].
    command_line: Option<String>,
}

/// The largest source file an import reads, in bytes (64 MiB; the largest real surface,
/// LiveMCPBench's `tools.json`, is a few MiB).
pub const MAX_IMPORT_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a source file as UTF-8 text with any leading byte-order mark removed (as the TOML
/// reader does). Only regular files (or links to them) up to [`MAX_IMPORT_FILE_BYTES`] are read,
/// so a FIFO or a device such as `/dev/zero` is an error instead of a hang.
///
/// # Errors
/// [`ImportError::Read`] when the path is missing, not a regular file, larger than the cap, or
/// not UTF-8.
fn read_text(path: &Path) -> Result<String, ImportError> {
    use std::io::{Error, ErrorKind, Read};
    let fail = |source: Error| ImportError::Read {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(fail)?;
    if !meta.is_file() {
        return Err(fail(Error::new(
            ErrorKind::InvalidInput,
            "not a regular file (a directory, FIFO or device)",
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(fail)?
        .take(MAX_IMPORT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    if bytes.len() as u64 > MAX_IMPORT_FILE_BYTES {
        return Err(fail(Error::new(
            ErrorKind::InvalidData,
            format!("larger than the import limit of {MAX_IMPORT_FILE_BYTES} bytes"),
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        fail(Error::new(
            ErrorKind::InvalidData,
            format!("not UTF-8: {e}"),
        ))
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// An MCP tool object as `tools/list` carries it.
#[derive(Debug, Clone, Deserialize)]
struct McpTool {
    name: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "inputSchema")]
    input_schema: Option<Value>,
    #[serde(default)]
    annotations: Option<Value>,
    #[serde(default, rename = "outputSchema")]
    output_schema: Option<Value>,
}

/// Reads hints and title from an `annotations` value; a present hint that is not a boolean is
/// reported and counted as missing.
fn read_annotations(
    annotations: Option<&Value>,
    tool: &str,
    warnings: &mut Vec<String>,
) -> (McpHints, Option<String>) {
    let Some(Value::Object(map)) = annotations else {
        return (McpHints::default(), None);
    };
    let mut hint = |key: &str| match map.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => {
            warnings.push(format!(
                "`{tool}`: annotation `{key}` is `{other}`, not a boolean; taken as missing"
            ));
            None
        }
    };
    let hints = McpHints {
        read_only: hint("readOnlyHint"),
        destructive: hint("destructiveHint"),
        idempotent: hint("idempotentHint"),
        open_world: hint("openWorldHint"),
    };
    let title = map
        .get("title")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    (hints, title)
}

fn tool_spec(tool: McpTool, warnings: &mut Vec<String>) -> ToolSpec {
    let (hints, annotation_title) =
        read_annotations(tool.annotations.as_ref(), &tool.name, warnings);
    let title = tool
        .title
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .or(annotation_title);
    ToolSpec {
        name: tool.name,
        title,
        description: tool.description.unwrap_or_default().trim().to_string(),
        input_schema: tool.input_schema,
        hints,
        toolsets: Vec::new(),
        status: Status::Active,
        inline: false,
        output_schema: tool.output_schema.filter(|o| !o.is_null()),
        schemaless_source: false,
    }
}

const MCP_TOOLS_SHAPE: &str = "an MCP `tools/list` result (`{\"tools\": [...]}`, a JSON-RPC reply carrying one, or an array of tool objects)";

fn read_mcp_tools_json(path: &Path, text: &str, server: &str) -> Result<Surface, ImportError> {
    let json_error = |source| ImportError::Json {
        path: path.to_path_buf(),
        expected: MCP_TOOLS_SHAPE,
        source,
    };
    let value: Value = serde_json::from_str(text).map_err(json_error)?;
    let mut warnings = Vec::new();
    let (list, cursor) = match &value {
        Value::Array(_) => (value.clone(), None),
        Value::Object(map) => {
            let result = match map.get("result") {
                Some(Value::Object(result)) if !map.contains_key("tools") => result,
                _ => map,
            };
            match result.get("tools") {
                Some(list @ Value::Array(_)) => (list.clone(), result.get("nextCursor").cloned()),
                _ => {
                    let detail = if map.contains_key("error") {
                        "it is a JSON-RPC error reply, not a result".to_string()
                    } else {
                        let keys: Vec<String> = map.keys().cloned().collect();
                        format!(
                            "no `tools` array (top-level keys: {}); save the `result` of a `tools/list` call",
                            backticked(&keys)
                        )
                    };
                    return Err(ImportError::Shape {
                        path: path.to_path_buf(),
                        expected: MCP_TOOLS_SHAPE,
                        detail,
                    });
                }
            }
        }
        _ => {
            return Err(ImportError::Shape {
                path: path.to_path_buf(),
                expected: MCP_TOOLS_SHAPE,
                detail: "the JSON is neither an object nor an array".to_string(),
            })
        }
    };
    if let Some(cursor) = cursor.filter(|c| !c.is_null()) {
        warnings.push(format!(
            "the list carries `nextCursor` {cursor}: it is one page of a longer `tools/list`; tools of later pages are missing"
        ));
    }
    // LiveMCPBench's `tools.json` is also an array of objects with a `name`: its entries are
    // servers (a `tools` member, no `inputSchema`), and reading them as tools would import every
    // server as one bogus tool.
    if let Value::Array(items) = &list {
        let servers = items
            .iter()
            .filter(|v| v.get("tools").is_some() && v.get("inputSchema").is_none())
            .count();
        if servers > 0 && items.iter().all(|v| v.get("inputSchema").is_none()) {
            return Err(ImportError::Shape {
                path: path.to_path_buf(),
                expected: MCP_TOOLS_SHAPE,
                detail: format!(
                    "{servers} of its {} entries hold a `tools` member and none an `inputSchema`: they are servers, not tools; did you mean `--from livemcpbench`?",
                    items.len()
                ),
            });
        }
    }
    let tools: Vec<McpTool> = serde_json::from_value(list).map_err(json_error)?;
    let tools = tools
        .into_iter()
        .map(|t| tool_spec(t, &mut warnings))
        .collect();
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    Ok(Surface {
        servers: vec![ServerSpec {
            key: server.to_string(),
            description: format!("MCP server `{server}`, imported from its tool list `{file}`"),
            command: None,
            args: Vec::new(),
            url: None,
            tools,
            namespaced: false,
            env: BTreeMap::new(),
            headers: BTreeMap::new(),
        }],
        about: vec![format!(
            "Source: the MCP `tools/list` of server `{server}`."
        )],
        warnings,
        ..Surface::default()
    })
}

#[derive(Debug, Deserialize)]
struct LmbServer {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    config: Option<Value>,
    tools: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
struct LmbToolList {
    #[serde(default)]
    tools: Vec<McpTool>,
}

const LIVEMCPBENCH_SHAPE: &str = "a LiveMCPBench `tools.json` (an array of `{name, description, config, category, tools: {KEY: {tools: [...]}}}`)";

fn read_livemcpbench(path: &Path, text: &str) -> Result<Surface, ImportError> {
    let json_error = |source| ImportError::Json {
        path: path.to_path_buf(),
        expected: LIVEMCPBENCH_SHAPE,
        source,
    };
    let entries: Vec<LmbServer> = serde_json::from_str(text).map_err(json_error)?;
    let mut surface = Surface::default();
    // category → (display name, servers), in order of first appearance
    let mut categories: Vec<(String, Vec<usize>)> = Vec::new();
    for entry in entries {
        for (key, list) in entry.tools {
            let list: LmbToolList = serde_json::from_value(list).map_err(json_error)?;
            let launch = entry
                .config
                .as_ref()
                .and_then(|c| c.get("mcpServers"))
                .and_then(|s| s.get(&key));
            // An empty or blank `command`/`url` counts as missing.
            let text_field = |field: &str| {
                launch
                    .and_then(|l| l.get(field))
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_string)
            };
            let command = text_field("command");
            let mut args = Vec::new();
            let raw_args = launch.and_then(|l| l.get("args"));
            for (k, arg) in raw_args
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                match arg {
                    Value::String(a) => args.push(a.clone()),
                    Value::Number(_) | Value::Bool(_) => {
                        surface.warnings.push(format!(
                            "server `{key}`: argument {k} of `args` is {arg}, not a string; passed as the text `{arg}`"
                        ));
                        args.push(arg.to_string());
                    }
                    _ => surface.warnings.push(format!(
                        "server `{key}`: argument {k} of `args` is {arg}, not a string; left out, add it by hand if the server needs it"
                    )),
                }
            }
            if raw_args.is_some_and(|a| !a.is_array()) {
                surface.warnings.push(format!(
                    "server `{key}`: `args` is not an array; left out, set `args` by hand if the server needs them"
                ));
            }
            let mut url = text_field("url");
            // `[mcp_server]` takes one transport (E0421): a config stating both is launched with
            // its `command`, the local form LiveMCPBench runs its servers in.
            if let (Some(c), Some(u)) = (&command, &url) {
                surface.warnings.push(format!(
                    "server `{key}` states both `command` `{c}` and `url` `{u}`; kept the `command`, set `url` instead of `command`/`args` to reach it over HTTP"
                ));
                url = None;
            }
            if launch.and_then(|l| l.get("env")).is_some() {
                surface.warnings.push(format!(
                    "server `{key}` is launched with environment variables (`env`), which `[mcp_server]` does not hold; set them where the server runs"
                ));
            }
            let description = entry
                .description
                .as_deref()
                .map(str::trim)
                .filter(|d| !d.is_empty());
            let description = match description {
                Some(d) => format!("{}: {d}", entry.name.trim()),
                None => format!("{} (MCP server)", entry.name.trim()),
            };
            let index = surface.servers.len();
            let mut tools = Vec::with_capacity(list.tools.len());
            for tool in list.tools {
                tools.push(tool_spec(tool, &mut surface.warnings));
            }
            surface.servers.push(ServerSpec {
                key: key.clone(),
                description,
                command,
                args,
                url,
                tools,
                namespaced: false,
                env: BTreeMap::new(),
                headers: BTreeMap::new(),
            });
            if let Some(category) = entry.category.as_deref().map(str::trim) {
                if !category.is_empty() {
                    match categories.iter_mut().find(|(c, _)| c == category) {
                        Some((_, servers)) => servers.push(index),
                        None => categories.push((category.to_string(), vec![index])),
                    }
                }
            }
        }
    }
    for (category, servers) in categories {
        surface.toolsets.push(ToolsetSpec {
            id: format!("category_{}", map_name(&category, "other").to_snake_case()),
            description: format!(
                "LiveMCPBench category `{category}`: the tools of its {} servers",
                servers.len()
            ),
            includes: servers.into_iter().map(ToolsetKey::Server).collect(),
        });
    }
    let tool_count: usize = surface.servers.iter().map(|s| s.tools.len()).sum();
    surface.about = vec![format!(
        "Source: the LiveMCPTool catalog of LiveMCPBench ({} MCP servers, {tool_count} tools).",
        surface.servers.len()
    )];
    Ok(surface)
}

const METATOOL_SHAPE: &str =
    "a MetaTool `plugin_des.json` (one JSON object `{\"TOOL_NAME\": \"DESCRIPTION\", ...}`)";

/// Server name of every `metatool` tool.
pub const METATOOL_SERVER: &str = "metatool";

fn read_metatool(path: &Path, text: &str) -> Result<Surface, ImportError> {
    let corpus: Map<String, Value> =
        serde_json::from_str(text).map_err(|source| ImportError::Json {
            path: path.to_path_buf(),
            expected: METATOOL_SHAPE,
            source,
        })?;
    let mut tools = Vec::with_capacity(corpus.len());
    for (name, description) in corpus {
        let Value::String(description) = description else {
            return Err(ImportError::Shape {
                path: path.to_path_buf(),
                expected: METATOOL_SHAPE,
                detail: format!(
                    "the value of `{name}` is {}, not a description string",
                    json_kind(&description)
                ),
            });
        };
        tools.push(ToolSpec {
            name,
            title: None,
            description: description.trim().to_string(),
            input_schema: None,
            hints: McpHints::default(),
            toolsets: Vec::new(),
            status: Status::Active,
            inline: false,
            output_schema: None,
            schemaless_source: true,
        });
    }
    let count = tools.len();
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    Ok(Surface {
        servers: vec![ServerSpec {
            key: METATOOL_SERVER.to_string(),
            description: format!(
                "The MetaTool benchmark's tool corpus `{file}`: {count} tools, each a name and a one-line description"
            ),
            command: None,
            args: Vec::new(),
            url: None,
            tools,
            namespaced: false,
            env: BTreeMap::new(),
            headers: BTreeMap::new(),
        }],
        about: vec![format!(
            "Source: the MetaTool benchmark's tool corpus ({count} tools: name and description only)."
        )],
        warnings: vec![format!(
            "the MetaTool corpus gives no input schemas: none of its {count} tools has an `input_schema`"
        )],
        ..Surface::default()
    })
}

#[derive(Debug, Deserialize)]
struct GhToolsets {
    #[serde(default)]
    toolsets: Vec<GhToolset>,
    #[serde(default)]
    tools: BTreeMap<String, GhToolEntry>,
}

#[derive(Debug, Deserialize)]
struct GhToolset {
    id: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    default: bool,
}

#[derive(Debug, Deserialize)]
struct GhToolEntry {
    #[serde(default)]
    toolsets: Vec<String>,
    #[serde(default)]
    feature_flag: Option<String>,
}

/// GitHub's special toolset ids that are not toolsets of `tools.toml`.
const GITHUB_SPECIAL_TOOLSETS: [&str; 2] = ["all", "default"];

const TOOLSETS_SHAPE: &str =
    "a `toolsets.json` (`{toolsets: [{id, description, default}], tools: {FILE_STEM: {toolsets, feature_flag}}}`)";

struct Snapshot {
    file: String,
    tool: McpTool,
    flag: Option<String>,
    toolsets: Vec<String>,
}

fn read_github_toolsnaps(path: &Path, options: &ImportOptions) -> Result<Surface, ImportError> {
    let nested = path.join("toolsnaps");
    let dir = if nested.is_dir() {
        nested
    } else {
        path.to_path_buf()
    };
    let read_error = |p: &Path| {
        let p = p.to_path_buf();
        move |source| ImportError::Read { path: p, source }
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(read_error(&dir))? {
        let entry = entry.map_err(read_error(&dir))?;
        let p = entry.path();
        if p.extension().is_some_and(|e| e == "snap") && p.is_file() {
            files.push(p);
        }
    }
    files.sort();

    let mut surface = Surface::default();
    let toolsets_path = dir.parent().map(|p| p.join("toolsets.json"));
    let toolsets: Option<GhToolsets> = match toolsets_path.as_deref() {
        Some(p) if p.is_file() => {
            let text = read_text(p)?;
            Some(
                serde_json::from_str(&text).map_err(|source| ImportError::Json {
                    path: p.to_path_buf(),
                    expected: TOOLSETS_SHAPE,
                    source,
                })?,
            )
        }
        _ => None,
    };

    let mut snaps = Vec::with_capacity(files.len());
    for file in &files {
        let text = read_text(file)?;
        let tool: McpTool = serde_json::from_str(&text).map_err(|source| ImportError::Json {
            path: file.clone(),
            expected: "a tool snapshot (an MCP tool object with `name`, `description`, `inputSchema`, `annotations`)",
            source,
        })?;
        let file_name = file
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = file_name.trim_end_matches(".snap").to_string();
        let entry = toolsets.as_ref().and_then(|t| t.tools.get(&stem));
        let flag = match entry {
            Some(e) => e.feature_flag.clone().filter(|f| !f.is_empty()),
            None => stem
                .split_once("_ff_")
                .map(|(_, flag)| flag.to_string())
                .filter(|f| !f.is_empty()),
        };
        if toolsets.is_some() && entry.is_none() {
            surface.warnings.push(format!(
                "`{file_name}` is not listed in `toolsets.json`; its tool goes to the `{GITHUB_SERVER}` toolset"
            ));
        }
        snaps.push(Snapshot {
            file: file_name,
            tool,
            flag,
            toolsets: entry.map(|e| e.toolsets.clone()).unwrap_or_default(),
        });
    }

    // Feature flags: check the chosen ones exist, then decide each snapshot's fate.
    let known_flags: BTreeSet<&str> = snaps.iter().filter_map(|s| s.flag.as_deref()).collect();
    for flag in &options.feature_flags {
        if !known_flags.contains(flag.as_str()) {
            return Err(ImportError::UnknownFeatureFlag {
                flag: flag.clone(),
                known: if known_flags.is_empty() {
                    "none".to_string()
                } else {
                    backticked(
                        &known_flags
                            .iter()
                            .map(|f| f.to_string())
                            .collect::<Vec<_>>(),
                    )
                },
            });
        }
    }
    let chosen: BTreeSet<&str> = options.feature_flags.iter().map(String::as_str).collect();
    let normal: BTreeSet<String> = snaps
        .iter()
        .filter(|s| s.flag.is_none())
        .map(|s| s.tool.name.clone())
        .collect();
    // tool name → the chosen variant that replaces or adds it
    let mut chosen_variant: BTreeMap<String, usize> = BTreeMap::new();
    for (i, snap) in snaps.iter().enumerate() {
        let Some(flag) = snap.flag.as_deref() else {
            continue;
        };
        if !chosen.contains(flag) {
            continue;
        }
        if let Some(&j) = chosen_variant.get(&snap.tool.name) {
            let other = snaps[j].flag.clone().unwrap_or_default();
            return Err(ImportError::ConflictingFeatureFlags {
                tool: snap.tool.name.clone(),
                first: other,
                second: flag.to_string(),
            });
        }
        chosen_variant.insert(snap.tool.name.clone(), i);
    }

    // Toolsets.
    let mut default_toolsets = BTreeSet::new();
    if let Some(t) = &toolsets {
        for ts in &t.toolsets {
            if GITHUB_SPECIAL_TOOLSETS.contains(&ts.id.as_str()) {
                continue;
            }
            if ts.default {
                default_toolsets.insert(ts.id.clone());
            }
            surface.toolsets.push(ToolsetSpec {
                id: ts.id.clone(),
                description: if ts.description.trim().is_empty() {
                    format!("GitHub toolset `{}`", ts.id)
                } else {
                    ts.description.trim().to_string()
                },
                includes: Vec::new(),
            });
        }
    }
    let declared: BTreeSet<String> = surface.toolsets.iter().map(|t| t.id.clone()).collect();

    let mut tools: Vec<ToolSpec> = Vec::new();
    let mut positions: HashMap<String, usize> = HashMap::new();
    let mut deferred_variants: Vec<usize> = Vec::new();
    for (i, snap) in snaps.iter().enumerate() {
        if snap.flag.is_some() {
            deferred_variants.push(i);
            continue;
        }
        // A normal tool that a chosen variant replaces is emitted as that variant, in place.
        let source = match chosen_variant.get(&snap.tool.name) {
            Some(&v) => {
                let variant = &snaps[v];
                surface.replaced_by_variant.push(FlaggedTool {
                    file: variant.file.clone(),
                    tool: variant.tool.name.clone(),
                    flag: variant.flag.clone().unwrap_or_default(),
                });
                variant
            }
            None => snap,
        };
        let mut spec = tool_spec(source.tool.clone(), &mut surface.warnings);
        let ids = if source.toolsets.is_empty() {
            &snap.toolsets
        } else {
            &source.toolsets
        };
        spec.toolsets = github_toolsets(ids, &declared, &source.file, &mut surface.warnings);
        spec.inline = ids.iter().any(|id| default_toolsets.contains(id));
        positions.insert(spec.name.clone(), tools.len());
        tools.push(spec);
    }
    for i in deferred_variants {
        let snap = &snaps[i];
        let flag = snap.flag.clone().unwrap_or_default();
        let on = chosen.contains(flag.as_str());
        if normal.contains(&snap.tool.name) {
            if !on {
                surface.skipped_variants.push(FlaggedTool {
                    file: snap.file.clone(),
                    tool: snap.tool.name.clone(),
                    flag,
                });
            }
            // when on, it was emitted in place of the normal tool above
            continue;
        }
        let mut spec = tool_spec(snap.tool.clone(), &mut surface.warnings);
        spec.toolsets =
            github_toolsets(&snap.toolsets, &declared, &snap.file, &mut surface.warnings);
        if on {
            spec.inline = snap.toolsets.iter().any(|id| default_toolsets.contains(id));
        } else {
            spec.status = Status::Experimental;
            spec.inline = false;
        }
        if positions.contains_key(&spec.name) {
            // two off variants of one missing base: keep the first, report the second
            surface.skipped_variants.push(FlaggedTool {
                file: snap.file.clone(),
                tool: snap.tool.name.clone(),
                flag,
            });
            continue;
        }
        positions.insert(spec.name.clone(), tools.len());
        tools.push(spec);
    }
    // Keep rows in snapshot-file order, whatever the pass that produced them.
    let order: HashMap<&str, usize> = snaps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.tool.name.as_str(), i))
        .filter(|(name, _)| !name.is_empty())
        .fold(HashMap::new(), |mut m, (name, i)| {
            m.entry(name).or_insert(i);
            m
        });
    tools.sort_by_key(|t| order.get(t.name.as_str()).copied().unwrap_or(usize::MAX));

    let defaults: Vec<String> = surface
        .toolsets
        .iter()
        .filter(|t| default_toolsets.contains(&t.id))
        .map(|t| t.id.clone())
        .collect();
    if !defaults.is_empty() {
        surface.presets.push(PresetSpec {
            name: "default".to_string(),
            description: format!(
                "The GitHub MCP server's default configuration: toolsets {}",
                backticked(&defaults)
            ),
            toolsets: defaults.into_iter().map(ToolsetKey::Named).collect(),
        });
    }
    let flags_on = if chosen.is_empty() {
        "none".to_string()
    } else {
        chosen.iter().copied().collect::<Vec<_>>().join(", ")
    };
    surface.about = vec![
        format!(
            "Source: github/github-mcp-server tool snapshots ({} files{}).",
            snaps.len(),
            if toolsets.is_some() {
                ", toolsets from `toolsets.json`"
            } else {
                ""
            }
        ),
        format!("Feature flags on: {flags_on}."),
    ];
    surface.warnings.push(format!(
        "server `{GITHUB_SERVER}` is launched as `{GITHUB_COMMAND} {}` and reads its token from `GITHUB_PERSONAL_ACCESS_TOKEN`; set it where the server runs",
        GITHUB_ARGS.join(" ")
    ));
    if !chosen.is_empty() {
        surface.warnings.push(format!(
            "feature flags {} must also be on in the running server",
            backticked(&chosen.iter().map(|f| f.to_string()).collect::<Vec<_>>())
        ));
    }
    surface.servers.push(ServerSpec {
        key: GITHUB_SERVER.to_string(),
        description: "GitHub's MCP server (github/github-mcp-server): repositories, issues, pull requests, Actions, security alerts and more".to_string(),
        command: Some(GITHUB_COMMAND.to_string()),
        args: GITHUB_ARGS.iter().map(|a| a.to_string()).collect(),
        url: None,
        tools,
        namespaced: false,
        env: BTreeMap::new(),
        headers: BTreeMap::new(),
    });
    Ok(surface)
}

fn github_toolsets(
    ids: &[String],
    declared: &BTreeSet<String>,
    file: &str,
    warnings: &mut Vec<String>,
) -> Vec<ToolsetKey> {
    let mut keys = Vec::new();
    for id in ids {
        if declared.contains(id) {
            keys.push(ToolsetKey::Named(id.clone()));
        } else {
            warnings.push(format!(
                "`{file}` names toolset `{id}`, which `toolsets.json` does not declare; left out"
            ));
        }
    }
    keys
}

// ---------------------------------------------------------------------------------------------
// Building the catalog
// ---------------------------------------------------------------------------------------------

/// One imported row's naming, before it becomes a [`ToolDecl`].
struct Row {
    server: usize,
    /// The name the server gives the tool.
    original: String,
    /// The row's `name`.
    name: String,
    reasons: Vec<RenameReason>,
}

/// The outcome of the name rules: row names, namespaces, and why each namespace was given.
struct Naming {
    server_names: Vec<String>,
    rows: Vec<Row>,
    namespaces: Vec<Option<String>>,
    shared: Vec<BTreeSet<String>>,
}

impl Naming {
    fn exported(&self, row: &Row) -> String {
        exported_name(&self.namespaces[row.server], &row.name)
    }
}

fn exported_name(namespace: &Option<String>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}__{name}"),
        None => name.to_string(),
    }
}

/// Whether an exported name or namespace starts the way every export target accepts (a letter or
/// `_`; Gemini rejects a leading digit or `-`).
fn starts_like_identifier(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
}

/// Server names: mapped, unique, never `local` or `loop`.
fn name_servers(servers: &[ServerSpec], warnings: &mut Vec<String>) -> Vec<String> {
    let mut alloc = NameAllocator::new();
    alloc.reserve(SOURCE_LOCAL);
    alloc.reserve(SOURCE_LOOP);
    servers
        .iter()
        .map(|s| {
            let (name, suffixed) = alloc.allocate(&s.key, &s.key, "server", MAX_EXPORTED_NAME);
            if name != s.key {
                let why = if suffixed {
                    "another server maps to the same name, or the name is reserved"
                } else {
                    "characters outside `[a-zA-Z0-9_-]`"
                };
                warnings.push(format!("server `{}` is named `{name}` ({why})", s.key));
            }
            name
        })
        .collect()
}

/// Applies the name rules of the module documentation to every tool.
fn name_tools(servers: &[ServerSpec], server_names: Vec<String>) -> Naming {
    // Charset, then duplicates inside a server: the tools whose names need no change are named
    // first, so a mapped name never takes the name of a tool the server serves under it.
    let mut rows: Vec<Row> = Vec::new();
    for (si, server) in servers.iter().enumerate() {
        let mut alloc = NameAllocator::new();
        let mut mapped: Vec<(String, Vec<RenameReason>)> = server
            .tools
            .iter()
            .map(|tool| {
                let mut reasons = Vec::new();
                let mut mapped = map_name(&tool.name, "tool");
                if mapped != tool.name {
                    reasons.push(RenameReason::Charset);
                }
                if META_TOOLS.contains(&mapped.as_str()) {
                    mapped = format!("{}_{mapped}", server_names[si]);
                    reasons.push(RenameReason::Reserved);
                }
                (mapped, reasons)
            })
            .collect();
        let mut names: Vec<String> = vec![String::new(); mapped.len()];
        let unchanged = |k: &usize| mapped[*k].1.is_empty();
        let (first, later): (Vec<usize>, Vec<usize>) = (0..mapped.len()).partition(unchanged);
        for k in first.into_iter().chain(later) {
            let tool = &server.tools[k];
            let (name, suffixed) = alloc.allocate(&mapped[k].0, &tool.name, "tool", usize::MAX);
            if suffixed {
                mapped[k].1.push(RenameReason::Duplicate);
            }
            names[k] = name;
        }
        for (k, (name, (_, reasons))) in names.into_iter().zip(mapped).enumerate() {
            rows.push(Row {
                server: si,
                original: server.tools[k].name.clone(),
                name,
                reasons,
            });
        }
    }

    // Names on several servers → every server involved is namespaced.
    let mut shared: Vec<BTreeSet<String>> = vec![BTreeSet::new(); servers.len()];
    let mut by_name: BTreeMap<&str, BTreeSet<usize>> = BTreeMap::new();
    for row in &rows {
        by_name
            .entry(row.name.as_str())
            .or_default()
            .insert(row.server);
    }
    for (name, owners) in &by_name {
        if owners.len() > 1 {
            for &s in owners {
                shared[s].insert(name.to_string());
            }
        }
    }
    let mut naming = Naming {
        server_names,
        rows,
        namespaces: vec![None; servers.len()],
        shared,
    };
    let mut ns_alloc = NameAllocator::new();
    let give_namespace = |naming: &mut Naming, ns_alloc: &mut NameAllocator, s: usize| {
        if naming.namespaces[s].is_some() {
            return;
        }
        let mut collapsed = naming.server_names[s]
            .split('_')
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("_");
        if !starts_like_identifier(&collapsed) {
            collapsed.insert(0, '_');
        }
        let (ns, _) = ns_alloc.allocate(&collapsed, &collapsed, "server", MAX_NAMESPACE);
        naming.namespaces[s] = Some(ns);
    };
    for (s, server) in servers.iter().enumerate() {
        if server.namespaced || !naming.shared[s].is_empty() {
            give_namespace(&mut naming, &mut ns_alloc, s);
        }
    }

    // Leading character, length, then exported uniqueness; repeated until nothing changes. Each
    // round that does not end the loop adds a namespace or a suffix, so it ends.
    let rounds = naming.rows.len() + servers.len() + 1;
    for _ in 0..rounds {
        for i in 0..naming.rows.len() {
            let namespace = naming.namespaces[naming.rows[i].server].clone();
            let row = &mut naming.rows[i];
            if namespace.is_none() && !starts_like_identifier(&row.name) {
                row.name.insert(0, '_');
                row.reasons.push(RenameReason::Leading);
            }
            let prefix = namespace.as_ref().map_or(0, |ns| ns.len() + 2);
            let budget = MAX_EXPORTED_NAME - prefix;
            if row.name.len() > budget {
                row.name = shorten(&row.name, &row.original, budget);
                row.reasons.push(RenameReason::Length);
            }
        }
        let mut seen: HashMap<String, Option<usize>> =
            META_TOOLS.iter().map(|m| (m.to_string(), None)).collect();
        let mut clash = None;
        for (i, row) in naming.rows.iter().enumerate() {
            let exported = naming.exported(row);
            if let Some(first) = seen.get(&exported) {
                clash = Some((*first, i));
                break;
            }
            seen.insert(exported, Some(i));
        }
        let Some((first, second)) = clash else {
            break;
        };
        let s2 = naming.rows[second].server;
        if naming.namespaces[s2].is_none() {
            let name = naming.rows[second].name.clone();
            naming.shared[s2].insert(name);
            give_namespace(&mut naming, &mut ns_alloc, s2);
            continue;
        }
        if let Some(first) = first {
            let s1 = naming.rows[first].server;
            if naming.namespaces[s1].is_none() {
                let name = naming.rows[first].name.clone();
                naming.shared[s1].insert(name);
                give_namespace(&mut naming, &mut ns_alloc, s1);
                continue;
            }
        }
        let row = &mut naming.rows[second];
        row.name = format!("{}{}", row.name, hash_suffix(&format!("{}'", row.original)));
        row.reasons.push(RenameReason::Duplicate);
    }
    naming
}

/// Toolset names: `discovery` reserved, then the source's toolsets, then one per server.
fn name_toolsets(
    specs: &[ToolsetSpec],
    server_names: &[String],
    warnings: &mut Vec<String>,
) -> HashMap<ToolsetKey, String> {
    let mut alloc = NameAllocator::new();
    alloc.reserve(DISCOVERY_TOOLSET);
    let mut names = HashMap::new();
    for spec in specs {
        let (name, _) = alloc.allocate(&spec.id, &spec.id, "toolset", MAX_EXPORTED_NAME);
        if name != spec.id {
            warnings.push(format!("toolset `{}` is named `{name}`", spec.id));
        }
        names.insert(ToolsetKey::Named(spec.id.clone()), name);
    }
    for (si, server) in server_names.iter().enumerate() {
        let (name, _) = alloc.allocate(server, server, "toolset", MAX_EXPORTED_NAME);
        names.insert(ToolsetKey::Server(si), name);
    }
    names
}

/// The toolsets that hold a tool, directly or through `includes`.
fn non_empty_toolsets(
    direct: &BTreeSet<ToolsetKey>,
    specs: &[ToolsetSpec],
) -> BTreeSet<ToolsetKey> {
    let mut non_empty = direct.clone();
    loop {
        let before = non_empty.len();
        for spec in specs {
            if spec.includes.iter().any(|k| non_empty.contains(k)) {
                non_empty.insert(ToolsetKey::Named(spec.id.clone()));
            }
        }
        if non_empty.len() == before {
            return non_empty;
        }
    }
}

/// Everything [`tool_rows`] adds to the report.
#[derive(Default)]
struct RowFindings {
    renamed: Vec<Renamed>,
    derived: Vec<ToolRef>,
    schema_changes: Vec<SchemaChange>,
    experimental: Vec<ToolRef>,
    /// Toolsets named directly by a row.
    direct: BTreeSet<ToolsetKey>,
}

/// The `input_schema` of a row: the `inputSchema` made to fit TOML, or `None` with a warning when
/// it is missing or not an object schema.
fn row_schema(
    tool: &ToolSpec,
    tref: &ToolRef,
    findings: &mut RowFindings,
    warnings: &mut Vec<String>,
) -> Option<Value> {
    match &tool.input_schema {
        Some(Value::Object(map)) => {
            if let Some(kind) = map.get("type").filter(|t| t.as_str() != Some("object")) {
                warnings.push(format!(
                    "{tref}: `inputSchema` has `type` {kind}, not `\"object\"`; no `input_schema` written"
                ));
                return None;
            }
            let mut schema = Value::Object(map.clone());
            let mut change = SchemaChange {
                tool: tref.clone(),
                field: "input_schema",
                nulls_dropped: Vec::new(),
                floats: Vec::new(),
            };
            fit_toml(&mut schema, "", &mut change);
            if !change.nulls_dropped.is_empty() || !change.floats.is_empty() {
                findings.schema_changes.push(change);
            }
            Some(schema)
        }
        Some(other) => {
            warnings.push(format!(
                "{tref}: `inputSchema` is {}, not an object; no `input_schema` written",
                json_kind(other)
            ));
            None
        }
        None if tool.schemaless_source => None,
        None => {
            warnings.push(format!(
                "{tref}: no `inputSchema`; no `input_schema` written"
            ));
            None
        }
    }
}

/// The `output_schema` of a row: the `outputSchema` made to fit TOML, or `None` when the tool has
/// none, or with a warning when it is not an object schema (MCP takes no other, and the catalog
/// refuses one: E0429).
fn row_output_schema(
    tool: &ToolSpec,
    tref: &ToolRef,
    findings: &mut RowFindings,
    warnings: &mut Vec<String>,
) -> Option<Value> {
    let schema = tool.output_schema.as_ref()?;
    let problem = match schema {
        Value::Object(map) => match map.get("type") {
            Some(Value::String(t)) if t == "object" => None,
            Some(kind) => Some(format!("has `type` {kind}, not `\"object\"`")),
            None => Some("has no `type`".to_string()),
        },
        other => Some(format!("is {}, not an object", json_kind(other))),
    };
    if let Some(problem) = problem {
        warnings.push(format!(
            "{tref}: `outputSchema` {problem}; no `output_schema` written (MCP takes an object schema only)"
        ));
        return None;
    }
    let mut schema = schema.clone();
    let mut change = SchemaChange {
        tool: tref.clone(),
        field: "output_schema",
        nulls_dropped: Vec::new(),
        floats: Vec::new(),
    };
    fit_toml(&mut schema, "", &mut change);
    if !change.nulls_dropped.is_empty() || !change.floats.is_empty() {
        findings.schema_changes.push(change);
    }
    Some(schema)
}

/// One `[[tool]]` row per imported tool, in source order.
fn tool_rows(
    servers: &[ServerSpec],
    naming: &Naming,
    toolset_names: &HashMap<ToolsetKey, String>,
    findings: &mut RowFindings,
    warnings: &mut Vec<String>,
) -> Vec<ToolDecl> {
    let mut out = Vec::with_capacity(naming.rows.len());
    let tools = servers
        .iter()
        .enumerate()
        .flat_map(|(si, s)| s.tools.iter().map(move |t| (si, t)));
    for ((si, tool), row) in tools.zip(&naming.rows) {
        let server_name = &naming.server_names[si];
        let tref = ToolRef {
            server: server_name.clone(),
            name: naming.exported(row),
        };
        if !row.reasons.is_empty() {
            findings.renamed.push(Renamed {
                server: server_name.clone(),
                original: row.original.clone(),
                name: row.name.clone(),
                reasons: row.reasons.clone(),
            });
        }
        let description = if tool.description.is_empty() {
            findings.derived.push(tref.clone());
            derive_description(&tool.name, tool.title.as_deref(), server_name)
        } else {
            tool.description.clone()
        };
        // A derived description already holds the title.
        let keywords = match &tool.title {
            Some(title) if !tool.description.is_empty() && !same_text(title, &description) => {
                vec![title.clone()]
            }
            _ => Vec::new(),
        };
        let input_schema = row_schema(tool, &tref, findings, warnings);
        let output_schema = row_output_schema(tool, &tref, findings, warnings);
        let class = classify(&tool.hints);
        if tool.hints.read_only == Some(true) && tool.hints.destructive == Some(true) {
            warnings.push(format!(
                "`{}` of server `{}` has both `readOnlyHint: true` and `destructiveHint: true`; imported as destructive and gated, the safe side",
                tref.name, tref.server
            ));
        }
        let keys = if tool.toolsets.is_empty() {
            vec![ToolsetKey::Server(si)]
        } else {
            tool.toolsets.clone()
        };
        findings.direct.extend(keys.iter().cloned());
        if tool.status == Status::Experimental {
            findings.experimental.push(tref);
        }
        out.push(ToolDecl {
            name: row.name.clone(),
            description,
            keywords,
            visibility: if tool.inline {
                Visibility::Inline
            } else {
                Visibility::Discoverable
            },
            tier: class.tier,
            effect: class.effect,
            idempotent: class.idempotent,
            open_world: class.open_world,
            code_mode: false,
            exposure: class.exposure,
            profiles: Vec::new(),
            toolsets: keys
                .iter()
                .filter_map(|k| toolset_names.get(k).cloned())
                .collect(),
            owner: server_name.clone(),
            status: tool.status,
            replaced_by: None,
            removal: None,
            requires: Vec::new(),
            pair: None,
            rate_limit: None,
            timeout_ms: None,
            source: server_name.clone(),
            remote_name: (row.name != row.original).then(|| row.original.clone()),
            input_schema,
            output_schema,
        });
    }
    out
}

fn build(
    kind: ImportKind,
    path: &Path,
    options: &ImportOptions,
    surface: Surface,
) -> Result<ImportOutput, ImportError> {
    let Surface {
        mut servers,
        toolsets: toolset_specs,
        presets: preset_specs,
        about,
        skipped_variants,
        replaced_by_variant,
        mut warnings,
        command_line: header_command,
    } = surface;

    // Transport: the caller's choice for a one-server source, else what the source says, else a
    // placeholder the text marks.
    if let Some(transport) = &options.transport {
        if servers.len() == 1 {
            let server = &mut servers[0];
            (server.command, server.args, server.url) = match transport {
                Transport::Stdio { command, args } => (Some(command.clone()), args.clone(), None),
                Transport::Http { url } => (None, Vec::new(), Some(url.clone())),
            };
        } else {
            warnings.push(format!(
                "a transport was given, but `{kind}` has {} servers with their own; ignored",
                servers.len()
            ));
        }
    }
    let server_names = name_servers(&servers, &mut warnings);
    let mut placeholder_transport = Vec::new();
    for (server, name) in servers.iter_mut().zip(&server_names) {
        if server.command.is_none() && server.url.is_none() {
            server.command = Some(name.clone());
            server.args.clear();
            placeholder_transport.push(name.clone());
            warnings.push(format!(
                "the source does not say how to reach server `{name}`: `command = \"{name}\"` is a placeholder; set `command`/`args` or `url`"
            ));
        }
    }

    let naming = name_tools(&servers, server_names);
    let toolset_names = name_toolsets(&toolset_specs, &naming.server_names, &mut warnings);
    let mut findings = RowFindings::default();
    let rows = tool_rows(
        &servers,
        &naming,
        &toolset_names,
        &mut findings,
        &mut warnings,
    );

    // Toolsets: the source's (when they hold a tool), then one per server.
    let non_empty = non_empty_toolsets(&findings.direct, &toolset_specs);
    let mut toolsets: BTreeMap<String, ToolsetDecl> = BTreeMap::new();
    let mut empty_toolsets = Vec::new();
    for spec in &toolset_specs {
        let key = ToolsetKey::Named(spec.id.clone());
        let Some(name) = toolset_names.get(&key) else {
            continue;
        };
        if !non_empty.contains(&key) {
            empty_toolsets.push(spec.id.clone());
            continue;
        }
        let includes = spec
            .includes
            .iter()
            .filter(|k| non_empty.contains(k))
            .filter_map(|k| toolset_names.get(k).cloned())
            .collect();
        toolsets.insert(
            name.clone(),
            ToolsetDecl {
                description: spec.description.clone(),
                includes,
            },
        );
    }
    for (si, server) in servers.iter().enumerate() {
        let key = ToolsetKey::Server(si);
        if let (true, Some(name)) = (non_empty.contains(&key), toolset_names.get(&key)) {
            toolsets.insert(
                name.clone(),
                ToolsetDecl {
                    description: server.description.clone(),
                    includes: Vec::new(),
                },
            );
        }
    }

    // Meta-tools, when any tool is discoverable.
    let any_discoverable = rows
        .iter()
        .any(|t| t.visibility == Visibility::Discoverable);
    let mut all_rows = Vec::with_capacity(rows.len() + META_TOOLS.len());
    if any_discoverable {
        all_rows.extend(meta_tool_rows());
        toolsets.insert(
            DISCOVERY_TOOLSET.to_string(),
            ToolsetDecl {
                description: "Finding and calling tools that are not loaded: search the catalog, describe a tool, call it by name, read back archived results".to_string(),
                includes: Vec::new(),
            },
        );
    }
    let meta_tools = all_rows.len();
    all_rows.extend(rows);

    // Presets (profile `full`, plus `discovery` when there is one).
    let mut presets = BTreeMap::new();
    for preset in &preset_specs {
        let mut names: Vec<String> = preset
            .toolsets
            .iter()
            .filter(|k| non_empty.contains(k))
            .filter_map(|k| toolset_names.get(k).cloned())
            .collect();
        if names.is_empty() {
            continue;
        }
        if any_discoverable {
            names.push(DISCOVERY_TOOLSET.to_string());
        }
        presets.insert(
            map_name(&preset.name, "preset"),
            PresetDecl {
                description: preset.description.clone(),
                profile: PROFILE_FULL.to_string(),
                toolsets: names,
                max_tools: None,
                client: None,
            },
        );
    }

    let mut mcp_server = BTreeMap::new();
    let mut namespaced = Vec::new();
    for (si, server) in servers.iter().enumerate() {
        let name = naming.server_names[si].clone();
        if let Some(ns) = &naming.namespaces[si] {
            namespaced.push(Namespaced {
                server: name.clone(),
                namespace: ns.clone(),
                shared: naming.shared[si].iter().cloned().collect(),
            });
        }
        mcp_server.insert(
            name,
            McpServerDecl {
                description: server.description.clone(),
                namespace: naming.namespaces[si].clone(),
                command: server.command.clone(),
                args: server.args.clone(),
                url: server.url.clone(),
                env: server.env.clone(),
                headers: server.headers.clone(),
                code_mode: false,
                connect_timeout_ms: None,
            },
        );
    }

    let catalog = CatalogFile {
        targets: Vec::new(),
        review_inline: None,
        mcp_server,
        profile: BTreeMap::new(),
        toolset: toolsets,
        preset: presets,
        tool: all_rows,
    };
    let imported = &catalog.tool[meta_tools..];
    let mut effects = [0usize; 3];
    for t in imported {
        effects[t.effect.code() as usize] += 1;
    }
    let report = ImportReport {
        kind,
        path: path.to_path_buf(),
        servers: catalog.mcp_server.len(),
        tools: imported.len(),
        meta_tools,
        toolsets: catalog.toolset.len(),
        presets: catalog.preset.len(),
        effects,
        inline: imported
            .iter()
            .filter(|t| t.visibility == Visibility::Inline)
            .count(),
        experimental: findings.experimental,
        namespaced,
        renamed: findings.renamed,
        derived_descriptions: findings.derived,
        skipped_variants,
        replaced_by_variant,
        empty_toolsets,
        schema_changes: findings.schema_changes,
        placeholder_transport: placeholder_transport.clone(),
        warnings,
    };
    let command = header_command.unwrap_or_else(|| command_line(kind, path, options));
    let text = render(&command, &about, &catalog, &placeholder_transport)?;
    Ok(ImportOutput {
        text,
        catalog,
        report,
    })
}

fn same_text(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.trim().trim_end_matches('.').to_lowercase();
    norm(a) == norm(b)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "`null`",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The description of a tool whose source gave none: the title, else the name in words, marked.
fn derive_description(name: &str, title: Option<&str>, server: &str) -> String {
    let head = match title {
        Some(t) => t.trim_end_matches('.').to_string(),
        None => {
            let words = name.to_snake_case().replace('_', " ");
            let words = words.trim();
            let mut chars = words.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect(),
                None => "Tool".to_string(),
            }
        }
    };
    format!("{head} (from the `{server}` MCP server, which gives no description)")
}

/// Makes a JSON value representable in TOML: drops `null` members and items, turns integers
/// beyond `i64` into floats; records JSON Pointers of what changed.
fn fit_toml(value: &mut Value, pointer: &str, change: &mut SchemaChange) {
    match value {
        Value::Object(map) => {
            let nulls: Vec<String> = map
                .iter()
                .filter(|(_, v)| v.is_null())
                .map(|(k, _)| k.clone())
                .collect();
            for k in nulls {
                map.shift_remove(&k);
                change
                    .nulls_dropped
                    .push(format!("{pointer}/{}", escape_pointer(&k)));
            }
            for (k, v) in map.iter_mut() {
                fit_toml(v, &format!("{pointer}/{}", escape_pointer(k)), change);
            }
        }
        Value::Array(items) => {
            let mut i = 0usize;
            let mut original = 0usize;
            while i < items.len() {
                if items[i].is_null() {
                    items.remove(i);
                    change.nulls_dropped.push(format!("{pointer}/{original}"));
                } else {
                    fit_toml(&mut items[i], &format!("{pointer}/{original}"), change);
                    i += 1;
                }
                original += 1;
            }
        }
        Value::Number(n) => {
            let beyond_i64 = n.is_u64() && n.as_i64().is_none();
            if let Some(f) = n
                .as_f64()
                .filter(|_| beyond_i64)
                .and_then(serde_json::Number::from_f64)
            {
                *n = f;
                change.floats.push(pointer.to_string());
            }
        }
        _ => {}
    }
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The four discovery meta-tools, as every imported catalog with a discoverable tool needs them.
fn meta_tool_rows() -> Vec<ToolDecl> {
    let row = |name: &str, description: &str, keywords: &[&str], idempotent: bool| ToolDecl {
        name: name.to_string(),
        description: description.to_string(),
        keywords: keywords.iter().map(|k| k.to_string()).collect(),
        visibility: Visibility::Inline,
        tier: Tier::Loop,
        effect: EffectKind::Read,
        idempotent,
        open_world: false,
        code_mode: false,
        exposure: Exposure::Excluded,
        profiles: Vec::new(),
        toolsets: vec![DISCOVERY_TOOLSET.to_string()],
        owner: META_OWNER.to_string(),
        status: Status::Active,
        replaced_by: None,
        removal: None,
        requires: Vec::new(),
        pair: None,
        rate_limit: None,
        timeout_ms: None,
        source: SOURCE_LOOP.to_string(),
        remote_name: None,
        input_schema: None,
        output_schema: None,
    };
    let rows = vec![
        row(
            META_TOOLS[0],
            "Search the tool catalog by what you want to do, or by a tool's exact name. The best matches become callable at once, from the next step on; returns each match's name, description and parameters.",
            &["find a tool", "discover tools", "which tool"],
            true,
        ),
        row(
            META_TOOLS[1],
            "Show one tool's full definition by its exact name: description, parameters (JSON Schema), and whether it needs approval.",
            &["tool definition", "tool parameters", "tool schema"],
            true,
        ),
        row(
            META_TOOLS[2],
            "Call a tool by its exact name with JSON arguments, for a tool found with tool_search whose definition is not loaded.",
            &["run a tool", "invoke a tool"],
            false,
        ),
        row(
            META_TOOLS[3],
            "Read back a tool result that was too large to return whole, by the reference the preview gave, a page at a time.",
            &["archived result", "full output", "more of the result"],
            true,
        ),
    ];
    debug_assert_eq!(rows.len(), META_TOOLS.len());
    rows
}

/// The `toolcat import` command line that makes the same text (the CLI's `--server` and
/// `--feature-flag` options).
pub fn command_line(kind: ImportKind, path: &Path, options: &ImportOptions) -> String {
    let mut command = format!("toolcat import --from {kind}");
    if kind == ImportKind::McpToolsJson {
        if let Some(server) = &options.server_name {
            command.push_str(&format!(" --server {server}"));
        }
    }
    if kind == ImportKind::GithubToolsnaps {
        for flag in &options.feature_flags {
            command.push_str(&format!(" --feature-flag {flag}"));
        }
    }
    command.push_str(&format!(" {}", path.display()));
    command
}

/// Header comment + serialized catalog, checked to read back as the same catalog.
fn render(
    command: &str,
    about: &[String],
    catalog: &CatalogFile,
    placeholder_transport: &[String],
) -> Result<String, ImportError> {
    let body = tidy(&toml::to_string_pretty(catalog)?, placeholder_transport)?;
    let mut text = String::new();
    text.push_str(&format!("# tools.toml made by `{command}`.\n"));
    for line in about {
        text.push_str(&format!("# {line}\n"));
    }
    text.push_str(
        "# effect, tier, exposure, idempotent and open_world are derived from each tool's MCP\n\
         # annotations, a missing hint taken on the safe side; review them before relying on them.\n\
         # The import rules are documented in the `toolcat_import` module.\n\n",
    );
    text.push_str(body.trim_start_matches('\n'));

    // Read the text back: the import must never hand out a file that means something else.
    let back: CatalogFile =
        toml::from_str(&text).map_err(|e| ImportError::RoundTrip(e.to_string()))?;
    let a = serde_json::to_value(catalog).map_err(|e| ImportError::RoundTrip(e.to_string()))?;
    let b = serde_json::to_value(&back).map_err(|e| ImportError::RoundTrip(e.to_string()))?;
    if a != b {
        return Err(ImportError::RoundTrip(first_difference(&a, &b, "")));
    }
    Ok(text)
}

/// Makes the serializer's text easier to read: short arrays of plain values on one line, no empty
/// side tables (`[profile]` when no profile is declared), and a comment over every server whose
/// transport is a placeholder.
fn tidy(pretty: &str, placeholder_transport: &[String]) -> Result<String, ImportError> {
    struct CompactArrays;
    impl toml_edit::visit_mut::VisitMut for CompactArrays {
        fn visit_array_mut(&mut self, node: &mut toml_edit::Array) {
            toml_edit::visit_mut::visit_array_mut(self, node);
            let plain = node.iter().all(|v| {
                !matches!(
                    v,
                    toml_edit::Value::Array(_) | toml_edit::Value::InlineTable(_)
                )
            });
            let width: usize = node.iter().map(|v| v.to_string().trim().len() + 2).sum();
            if plain && width <= COMPACT_ARRAY_WIDTH {
                node.fmt();
            }
        }
    }
    let mut doc: toml_edit::DocumentMut = pretty
        .parse()
        .map_err(|e: toml_edit::TomlError| ImportError::RoundTrip(e.to_string()))?;
    toml_edit::visit_mut::VisitMut::visit_document_mut(&mut CompactArrays, &mut doc);
    let empty: Vec<String> = doc
        .iter()
        .filter(|(_, item)| item.as_table().is_some_and(|t| t.is_empty()))
        .map(|(k, _)| k.to_string())
        .collect();
    for key in empty {
        doc.remove(&key);
    }
    for server in placeholder_transport {
        let table = doc
            .get_mut("mcp_server")
            .and_then(|t| t.as_table_mut())
            .and_then(|t| t.get_mut(server))
            .and_then(|t| t.as_table_mut());
        if let Some(table) = table {
            table.decor_mut().set_prefix(PLACEHOLDER_COMMENT);
        }
    }
    Ok(doc.to_string())
}

/// The comment over a server whose `command` is a placeholder.
const PLACEHOLDER_COMMENT: &str = "\n# placeholder: `command` below is only the server's name; set how to launch the server\n# (`command`, `args`) or reach it (`url`)\n";

/// Widest array (sum of its items' text) written on one line.
const COMPACT_ARRAY_WIDTH: usize = 80;

/// JSON Pointer of the first place where `a` and `b` differ, with both values.
fn first_difference(a: &Value, b: &Value, pointer: &str) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) if v == w => {}
                    Some(w) => {
                        return first_difference(v, w, &format!("{pointer}/{}", escape_pointer(k)))
                    }
                    None => return format!("`{pointer}/{k}` is missing after reading back"),
                }
            }
            format!("`{pointer}` has extra members after reading back")
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                if v != w {
                    return first_difference(v, w, &format!("{pointer}/{i}"));
                }
            }
            format!("`{pointer}` differs")
        }
        _ => format!("`{pointer}` was {a} and reads back as {b}"),
    }
}
