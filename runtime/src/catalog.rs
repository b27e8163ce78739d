//! [`Catalog`]: the derived tables of one `tools.toml`, its search index and its handlers.
//!
//! A catalog is either compiled in ([`Catalog::compiled`], called by the code the build script
//! generates: static tables, the index embedded as bytes, the dispatch table) or loaded at run time
//! ([`Catalog::load`], [`Catalog::from_source`]: the same codegen pipeline, the index built on
//! load). Both hold the same [`Tables`], so every consumer has one code path.
//!
//! Tools, profiles, toolsets, presets and servers are addressed by typed indices ([`ToolIndex`],
//! [`ProfileId`], [`ToolsetId`], [`PresetId`], [`ServerId`]) obtained from this catalog — by name
//! lookup or iteration. Accessors taking an index panic when it is out of range, as slice indexing
//! does: an index of another catalog is a programming error, not input.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;
use toolcat_catalog::diagnostics::{render_all, Diagnostic};
use toolcat_catalog::index::{build_index_bytes, open_index, SearchIndex};
use toolcat_catalog::model::{EffectKind, Exposure, Status, Tier, Visibility};
use toolcat_catalog::tables::{bit, ones, set_bit, Tables, SOURCE_LOCAL, SOURCE_LOOP};
use toolcat_catalog::validate::DISCOVERY_TOOLS;

use crate::error::{CatalogError, NameError, NameKind};
use crate::handler::ErasedHandler;

macro_rules! typed_index {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[repr(transparent)]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// The position, as a `usize` for indexing.
            #[inline]
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl From<$name> for usize {
            fn from(id: $name) -> usize {
                id.0 as usize
            }
        }
    };
}

typed_index!(
    /// A tool: its position in `tools.toml` (and in every per-tool table column).
    ToolIndex
);
typed_index!(
    /// A profile: its position in [`Tables::profile_names`]; the implicit `full` is last.
    ProfileId
);
typed_index!(
    /// A toolset: its position in [`Tables::toolset_names`].
    ToolsetId
);
typed_index!(
    /// A preset: its position in [`Tables::preset_names`].
    PresetId
);
typed_index!(
    /// An MCP server: its position in [`Tables::server_names`].
    ServerId
);

/// What a call does to the world: the declared `effect`, `idempotent` and `open_world`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Effect {
    /// `read`, `write` or `destructive`.
    pub kind: EffectKind,
    /// Repeating the call with the same arguments has no further effect.
    pub idempotent: bool,
    /// The tool reaches outside the agent's own state.
    pub open_world: bool,
}

/// Where a tool's calls go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSource {
    /// A `#[tool]` handler in the crate that owns `tools.toml`.
    Local,
    /// A discovery meta-tool implemented by the runtime.
    Loop,
    /// A remote MCP server.
    Server(ServerId),
}

/// A declared `rate_limit`: `calls` per `window_secs` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RateLimit {
    /// Calls allowed per window.
    pub calls: u32,
    /// Window length in seconds (1, 60 or 3600).
    pub window_secs: u32,
}

/// MCP tool annotations, derived from the declared effect (never written by hand):
/// `readOnlyHint` = effect is `read`, `destructiveHint` = effect is `destructive`,
/// `idempotentHint` = `idempotent`, `openWorldHint` = `open_world`. Serializes with the MCP
/// field names, in that order, `title` first and only when set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpAnnotations {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    pub open_world_hint: bool,
}

impl McpAnnotations {
    /// The annotations of a tool with `effect`, without a title.
    pub fn from_effect(effect: Effect) -> Self {
        McpAnnotations {
            title: None,
            read_only_hint: effect.kind == EffectKind::Read,
            destructive_hint: effect.kind == EffectKind::Destructive,
            idempotent_hint: effect.idempotent,
            open_world_hint: effect.open_world,
        }
    }
}

/// Where a loaded catalog came from; kept to render its warnings.
#[derive(Debug, Clone)]
struct Origin {
    path: String,
    source: String,
}

/// The derived tables of one catalog, its opened search index and its handlers.
///
/// `Send + Sync`; share it behind an `Arc` between turns and tasks.
pub struct Catalog {
    tables: Tables,
    index: SearchIndex,
    /// One entry per tool (compiled catalogs), or none (loaded catalogs without handlers).
    handlers: Cow<'static, [Option<ErasedHandler>]>,
    /// The input JSON Schema of every tool (see [`Catalog::input_schema`]).
    schemas: Vec<Value>,
    /// The output JSON Schema of every tool that has one (see [`Catalog::output_schema`]).
    output_schemas: Vec<Option<Value>>,
    /// The discovery meta-tools (see [`Catalog::discovery_tools`]), one bitset.
    discovery: Vec<u64>,
    exported: HashMap<String, u32>,
    declared: HashMap<String, Vec<u32>>,
    /// Lower-cased exported and declared names → tools, catalog order, for search.
    folded: HashMap<String, Vec<u32>>,
    profiles: HashMap<String, u32>,
    toolsets: HashMap<String, u32>,
    presets: HashMap<String, u32>,
    warnings: Vec<Diagnostic>,
    origin: Option<Origin>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("tools", &self.tables.len)
            .field("profiles", &self.tables.profile_names.len())
            .field("toolsets", &self.tables.toolset_names.len())
            .field("handlers", &self.handlers.iter().flatten().count())
            .field("origin", &self.origin.as_ref().map(|o| &o.path))
            .finish_non_exhaustive()
    }
}

/// A minimal input schema, `{"type":"object","properties":{}}`, for tools whose arguments are
/// unknown (a local tool of a loaded catalog without a handler, a server tool that declares no
/// `input_schema`). The empty `properties` keeps it valid for OpenAI function tools, which
/// reject an object schema without them in strict mode.
pub fn minimal_input_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

impl Catalog {
    /// A catalog compiled into the binary: called by the code the build script generates.
    ///
    /// `index` is the output of `toolcat_catalog::index::build_index_bytes` for the same tables;
    /// `handlers` has one entry per tool (`Some` for each local tool whose `#[tool]` handler is
    /// compiled in) or is empty.
    ///
    /// # Errors
    /// [`CatalogError::Tables`] when the tables break their layout, [`CatalogError::Index`] /
    /// [`CatalogError::IndexMismatch`] when the index cannot be opened or has another tool count,
    /// [`CatalogError::Handlers`] when the handler table does not fit the tables.
    pub fn compiled(
        tables: Tables,
        index: &'static [u8],
        handlers: &'static [Option<ErasedHandler>],
    ) -> Result<Catalog, CatalogError> {
        check_tables(&tables).map_err(CatalogError::Tables)?;
        if !handlers.is_empty() && handlers.len() != tables.len {
            return Err(CatalogError::Handlers(format!(
                "{} entries for {} tools",
                handlers.len(),
                tables.len
            )));
        }
        for (i, h) in handlers.iter().enumerate() {
            if let Some(h) = h {
                if h.name != tables.names[i] {
                    return Err(CatalogError::Handlers(format!(
                        "entry {i} is the handler of `{}` but tool {i} is `{}`",
                        h.name, tables.names[i]
                    )));
                }
                if tables.source[i] != SOURCE_LOCAL {
                    return Err(CatalogError::Handlers(format!(
                        "tool `{}` has a `#[tool]` handler but its source is not `local`",
                        h.name
                    )));
                }
            }
        }
        let index = open_index(index)?;
        Catalog::assemble(tables, index, Cow::Borrowed(handlers), Vec::new(), None)
    }

    /// Loads, validates and derives the catalog in the file at `path`, and builds its search index.
    /// Local tools have no handlers (their input schema is [`minimal_input_schema`]).
    ///
    /// # Errors
    /// [`CatalogError::Read`] when the file cannot be read, [`CatalogError::Invalid`] with every
    /// diagnostic when it breaks a rule, [`CatalogError::Index`] when the index cannot be built.
    pub fn load(path: impl AsRef<Path>) -> Result<Catalog, CatalogError> {
        Catalog::load_with_handlers(path, &[])
    }

    /// [`Catalog::load`], then attaches `handlers` to the local tools of the same declared name
    /// (a compiled dispatch table can be passed as is; handlers of tools the file does not declare
    /// as local are ignored). Their argument names join the search index.
    ///
    /// # Errors
    /// As [`Catalog::load`].
    pub fn load_with_handlers(
        path: impl AsRef<Path>,
        handlers: &[Option<ErasedHandler>],
    ) -> Result<Catalog, CatalogError> {
        let path = path.as_ref();
        let source = read_catalog_source(path)?;
        Catalog::from_source_with_handlers(&path.display().to_string(), &source, handlers)
    }

    /// Compiles `source` (the text of a `tools.toml`; `path` names it in diagnostics) and builds
    /// its search index. Local tools have no handlers.
    ///
    /// # Errors
    /// [`CatalogError::Invalid`] with every diagnostic when the source breaks a rule;
    /// [`CatalogError::Index`] when the index cannot be built.
    pub fn from_source(path: &str, source: &str) -> Result<Catalog, CatalogError> {
        Catalog::from_source_with_handlers(path, source, &[])
    }

    /// [`Catalog::from_source`] with `handlers` attached by declared name, as in
    /// [`Catalog::load_with_handlers`].
    ///
    /// # Errors
    /// As [`Catalog::from_source`].
    pub fn from_source_with_handlers(
        path: &str,
        source: &str,
        handlers: &[Option<ErasedHandler>],
    ) -> Result<Catalog, CatalogError> {
        let compiled = toolcat_catalog::compile_str(path, source).map_err(|diagnostics| {
            CatalogError::Invalid {
                path: path.to_string(),
                rendered: render_all(&diagnostics, path, source),
                diagnostics,
            }
        })?;
        let tables = compiled.tables;
        check_tables(&tables).map_err(CatalogError::Tables)?;
        let by_name: HashMap<&str, &ErasedHandler> =
            handlers.iter().flatten().map(|h| (h.name, h)).collect();
        let mut attached: Vec<Option<ErasedHandler>> = Vec::new();
        if !by_name.is_empty() {
            attached = (0..tables.len)
                .map(|i| {
                    if tables.source[i] == SOURCE_LOCAL {
                        by_name.get(tables.names[i].as_ref()).map(|h| **h)
                    } else {
                        None
                    }
                })
                .collect();
        }
        let params: Vec<Vec<String>> = attached
            .iter()
            .map(|h| match h {
                Some(h) => property_names(&(h.input_schema)().to_value()),
                None => Vec::new(),
            })
            .collect();
        let bytes = build_index_bytes(&tables, &params)?;
        let index = open_index(&bytes)?;
        Catalog::assemble(
            tables,
            index,
            Cow::Owned(attached),
            compiled.warnings,
            Some(Origin {
                path: path.to_string(),
                source: source.to_string(),
            }),
        )
    }

    /// A catalog of tables derived elsewhere (an importer, a test), building the search index on
    /// the spot. No handlers; no warnings.
    ///
    /// # Errors
    /// [`CatalogError::Tables`] when the tables break their layout; [`CatalogError::Index`] when
    /// the index cannot be built.
    pub fn from_tables(tables: Tables) -> Result<Catalog, CatalogError> {
        check_tables(&tables).map_err(CatalogError::Tables)?;
        let index = open_index(&build_index_bytes(&tables, &[])?)?;
        Catalog::assemble(tables, index, Cow::Borrowed(&[]), Vec::new(), None)
    }

    fn assemble(
        tables: Tables,
        index: SearchIndex,
        handlers: Cow<'static, [Option<ErasedHandler>]>,
        warnings: Vec<Diagnostic>,
        origin: Option<Origin>,
    ) -> Result<Catalog, CatalogError> {
        if index.len() != tables.len {
            return Err(CatalogError::IndexMismatch {
                index: index.len(),
                tables: tables.len,
            });
        }
        let mut schemas = Vec::with_capacity(tables.len);
        for i in 0..tables.len {
            let schema = if let Some(text) = &tables.input_schema[i] {
                serde_json::from_str(text).map_err(|e| {
                    CatalogError::Tables(format!(
                        "the `input_schema` of `{}` is not JSON ({e})",
                        tables.names[i]
                    ))
                })?
            } else if let Some(Some(h)) = handlers.get(i) {
                (h.input_schema)().to_value()
            } else if tables.source[i] == SOURCE_LOOP {
                meta_tool_input_schema(&tables.names[i]).unwrap_or_else(minimal_input_schema)
            } else {
                minimal_input_schema()
            };
            schemas.push(schema);
        }
        let mut output_schemas = Vec::with_capacity(tables.len);
        for i in 0..tables.len {
            let schema = if let Some(text) = &tables.output_schema[i] {
                Some(serde_json::from_str(text).map_err(|e| {
                    CatalogError::Tables(format!(
                        "the `output_schema` of `{}` is not JSON ({e})",
                        tables.names[i]
                    ))
                })?)
            } else if let Some(Some(h)) = handlers.get(i) {
                Some((h.output_schema)().to_value())
            } else {
                None
            };
            output_schemas.push(schema.and_then(|mut schema| {
                if let Value::Object(map) = &mut schema {
                    map.shift_remove("$schema");
                }
                constrains_something(&schema).then_some(schema)
            }));
        }
        let mut discovery = vec![0u64; tables.words];
        for i in 0..tables.len {
            let name: &str = &tables.names[i];
            if tables.source[i] == SOURCE_LOOP && DISCOVERY_TOOLS.contains(&name) {
                set_bit(&mut discovery, i);
            }
        }
        let mut exported = HashMap::with_capacity(tables.len);
        let mut declared: HashMap<String, Vec<u32>> = HashMap::with_capacity(tables.len);
        let mut folded: HashMap<String, Vec<u32>> = HashMap::with_capacity(tables.len * 2);
        for i in 0..tables.len {
            let i32 = i as u32;
            exported.insert(tables.exported_names[i].to_string(), i32);
            declared
                .entry(tables.names[i].to_string())
                .or_default()
                .push(i32);
            for name in [&tables.exported_names[i], &tables.names[i]] {
                let list = folded.entry(name.to_lowercase()).or_default();
                if !list.contains(&i32) {
                    list.push(i32);
                }
            }
        }
        let positions = |names: &[Cow<'static, str>]| -> HashMap<String, u32> {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.to_string(), i as u32))
                .collect()
        };
        Ok(Catalog {
            profiles: positions(&tables.profile_names),
            toolsets: positions(&tables.toolset_names),
            presets: positions(&tables.preset_names),
            tables,
            index,
            handlers,
            schemas,
            output_schemas,
            discovery,
            exported,
            declared,
            folded,
            warnings,
            origin,
        })
    }

    // ---- the whole catalog ----

    /// The derived tables.
    pub fn tables(&self) -> &Tables {
        &self.tables
    }

    /// The opened search index (see [`crate::search`] for the search API).
    pub fn index(&self) -> &SearchIndex {
        &self.index
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tables.len
    }

    /// `true` when the catalog declares no tool.
    pub fn is_empty(&self) -> bool {
        self.tables.len == 0
    }

    /// `u64` words of every bitset of this catalog (`len.div_ceil(64)`).
    pub fn words(&self) -> usize {
        self.tables.words
    }

    /// Every tool, in catalog order.
    pub fn tools(&self) -> impl ExactSizeIterator<Item = ToolIndex> + '_ {
        (0..self.tables.len as u32).map(ToolIndex)
    }

    /// The tools of a bitset (bit `i` = tool `i`), in catalog order.
    pub fn tools_in<'s>(&self, set: &'s [u64]) -> impl Iterator<Item = ToolIndex> + 's {
        ones(set).map(|i| ToolIndex(i as u32))
    }

    /// Warnings of a loaded catalog (compiled catalogs stopped the build on errors and report
    /// warnings at build time, so theirs is empty).
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }

    /// [`Catalog::warnings`] rendered against the source (`PATH:LINE:COL: warning[CODE]: ...`);
    /// empty when there are none.
    pub fn render_warnings(&self) -> String {
        match &self.origin {
            Some(o) if !self.warnings.is_empty() => render_all(&self.warnings, &o.path, &o.source),
            _ => String::new(),
        }
    }

    /// The path a loaded catalog was read from (as given); `None` for a compiled catalog.
    pub fn path(&self) -> Option<&str> {
        self.origin.as_ref().map(|o| o.path.as_str())
    }

    // ---- one tool ----

    /// Declared name (`name` in `tools.toml`).
    pub fn name(&self, t: ToolIndex) -> &str {
        &self.tables.names[t.index()]
    }

    /// Exported name: `NS__name` for a tool of a namespaced server, else the declared name. The
    /// name every export and model-facing message uses.
    pub fn exported_name(&self, t: ToolIndex) -> &str {
        &self.tables.exported_names[t.index()]
    }

    /// Description, as the model reads it.
    pub fn description(&self, t: ToolIndex) -> &str {
        &self.tables.descriptions[t.index()]
    }

    /// Search keywords.
    pub fn keywords(&self, t: ToolIndex) -> impl Iterator<Item = &str> + '_ {
        self.tables.keywords[t.index()].iter().map(|k| k.as_ref())
    }

    /// Owner.
    pub fn owner(&self, t: ToolIndex) -> &str {
        &self.tables.owners[t.index()]
    }

    /// Tier. Codes are checked at construction; an unknown code would read as `gated`, the tier
    /// that asks before running.
    pub fn tier(&self, t: ToolIndex) -> Tier {
        Tier::from_code(self.tables.tier[t.index()]).unwrap_or(Tier::Gated)
    }

    /// Effect with its `idempotent` and `open_world` flags.
    pub fn effect(&self, t: ToolIndex) -> Effect {
        let i = t.index();
        Effect {
            kind: EffectKind::from_code(self.tables.effect[i]).unwrap_or(EffectKind::Destructive),
            idempotent: bit(&self.tables.idempotent, i),
            open_world: bit(&self.tables.open_world, i),
        }
    }

    /// The tools a Code Mode program may call: those declared `code_mode = true` (a silent read,
    /// local or of a server the host allowed; `toolcat-catalog` validates it, E0428), one bitset
    /// of [`Catalog::words`] words. A session intersects it with its profile
    /// ([`crate::code_mode::callable_set`]).
    pub fn code_mode_set(&self) -> &[u64] {
        &self.tables.code_mode
    }

    /// Whether the tool is declared `code_mode = true` ([`Catalog::code_mode_set`]).
    pub fn is_code_mode(&self, t: ToolIndex) -> bool {
        bit(&self.tables.code_mode, t.index())
    }

    /// The narrowest MCP scope that lists the tool.
    pub fn exposure(&self, t: ToolIndex) -> Exposure {
        Exposure::from_code(self.tables.exposure[t.index()]).unwrap_or(Exposure::Excluded)
    }

    /// Visibility.
    pub fn visibility(&self, t: ToolIndex) -> Visibility {
        Visibility::from_code(self.tables.visibility[t.index()]).unwrap_or(Visibility::Discoverable)
    }

    /// Lifecycle status.
    pub fn status(&self, t: ToolIndex) -> Status {
        Status::from_code(self.tables.status[t.index()]).unwrap_or(Status::Deprecated)
    }

    /// Where calls go.
    pub fn source(&self, t: ToolIndex) -> ToolSource {
        match self.tables.source[t.index()] {
            SOURCE_LOCAL => ToolSource::Local,
            SOURCE_LOOP => ToolSource::Loop,
            s => ToolSource::Server(ServerId(u32::from(s))),
        }
    }

    /// Tools that come along whenever this one is visible (direct `requires` only; the plan
    /// closes over them transitively).
    pub fn requires(&self, t: ToolIndex) -> impl Iterator<Item = ToolIndex> + '_ {
        self.tables.requires[t.index()]
            .iter()
            .map(|&r| ToolIndex(r))
    }

    /// The twin of a propose/immediate pair.
    pub fn pair(&self, t: ToolIndex) -> Option<ToolIndex> {
        self.tables.pair[t.index()].map(ToolIndex)
    }

    /// The tool replacing a deprecated one.
    pub fn replaced_by(&self, t: ToolIndex) -> Option<ToolIndex> {
        self.tables.replaced_by[t.index()].map(ToolIndex)
    }

    /// Removal date (`YYYY-MM-DD`) of a deprecated tool.
    pub fn removal(&self, t: ToolIndex) -> Option<&str> {
        self.tables.removal[t.index()].as_deref()
    }

    /// Declared rate limit.
    pub fn rate_limit(&self, t: ToolIndex) -> Option<RateLimit> {
        self.tables.rate_limit[t.index()]
            .map(|(calls, window_secs)| RateLimit { calls, window_secs })
    }

    /// The input JSON Schema of the tool's arguments:
    /// - a server tool: its declared `input_schema`;
    /// - a local tool with a handler: the schemars schema of the handler's argument type
    ///   (draft 2020-12, with `$schema` and `title` as schemars writes them);
    /// - a meta-tool (source `loop`): [`meta_tool_input_schema`];
    /// - otherwise (local tools of a loaded catalog without handlers, server tools without a
    ///   declared schema): [`minimal_input_schema`].
    pub fn input_schema(&self, t: ToolIndex) -> &Value {
        &self.schemas[t.index()]
    }

    /// Whether this binary knows the tool's arguments: false for a local tool without a handler
    /// (a catalog loaded from a file, such as the toolcat CLI's), whose [`Catalog::input_schema`]
    /// is only [`minimal_input_schema`]; true for every other tool (a server tool's schema is
    /// its row's, a meta-tool's is fixed).
    pub fn input_schema_known(&self, t: ToolIndex) -> bool {
        !matches!(self.source(t), ToolSource::Local) || self.handler(t).is_some()
    }

    /// The output JSON Schema of the tool's result, without a top-level `$schema` (as
    /// [`crate::export::exported_schema`] writes input schemas):
    /// - a server tool: its declared `output_schema` (an object schema, `toolcat-catalog`
    ///   validates it: E0429);
    /// - a local tool with a handler: the schemars schema of the handler's output type as it
    ///   serializes ([`crate::handler::output_schema_of`]), whatever its root (a `String`
    ///   output's is `{"type": "string"}`; the MCP server lists only object schemas,
    ///   [`crate::export::mcp_output_schema`]).
    ///
    /// `None` for meta-tools, tools without a handler or a declared schema, and a schema that
    /// constrains nothing: `true`, `{}`, or one with annotations only (`title`, `description`,
    /// ...), such as that of a handler returning `serde_json::Value`.
    pub fn output_schema(&self, t: ToolIndex) -> Option<&Value> {
        self.output_schemas[t.index()].as_ref()
    }

    /// The name the tool's MCP server lists it under: the row's `remote_name` when it declares
    /// one (a server tool whose row `name` differs), else its declared name. A call of a server
    /// tool sends this name; drift checks and `check --live` match the server's list by it.
    pub fn remote_name(&self, t: ToolIndex) -> &str {
        self.tables.remote_names[t.index()]
            .as_deref()
            .unwrap_or_else(|| self.name(t))
    }

    /// The row's `timeout_ms`: the longest one call may run once its handler starts; `None`
    /// when the row declares none (the coordinator's default applies,
    /// [`crate::Coordinator::with_default_timeout`]).
    pub fn timeout(&self, t: ToolIndex) -> Option<std::time::Duration> {
        self.tables.timeout_ms[t.index()].map(|ms| std::time::Duration::from_millis(u64::from(ms)))
    }

    /// The `#[tool]` handler of a local tool, when compiled in (or attached).
    pub fn handler(&self, t: ToolIndex) -> Option<&ErasedHandler> {
        self.handlers.get(t.index()).and_then(|h| h.as_ref())
    }

    /// MCP annotations derived from the effect (see [`McpAnnotations`]); no title.
    pub fn mcp_annotations(&self, t: ToolIndex) -> McpAnnotations {
        McpAnnotations::from_effect(self.effect(t))
    }

    // ---- name lookups ----

    /// The tool with this exported name, or else with this declared name.
    ///
    /// # Errors
    /// [`NameError::Unknown`] (with a did-you-mean over exported names) when no tool has the name;
    /// [`NameError::Ambiguous`] when the declared name belongs to tools of several servers.
    pub fn tool(&self, name: &str) -> Result<ToolIndex, NameError> {
        if let Some(&i) = self.exported.get(name) {
            return Ok(ToolIndex(i));
        }
        match self.declared.get(name).map(Vec::as_slice) {
            Some([one]) => Ok(ToolIndex(*one)),
            Some(many) if !many.is_empty() => Err(NameError::Ambiguous {
                name: name.to_string(),
                candidates: many
                    .iter()
                    .map(|&i| self.tables.exported_names[i as usize].to_string())
                    .collect(),
            }),
            _ => Err(NameError::unknown(
                NameKind::Tool,
                name,
                self.tables.exported_names.iter().map(|n| n.as_ref()),
            )),
        }
    }

    /// Tools whose exported or declared name equals `name` ignoring case, in catalog order
    /// (what the exact-name step of search matches).
    pub fn tools_named_ignoring_case(&self, name: &str) -> impl Iterator<Item = ToolIndex> + '_ {
        self.folded
            .get(&name.to_lowercase())
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .map(|&i| ToolIndex(i))
    }

    /// The profile with this name (`full` is always there).
    ///
    /// # Errors
    /// [`NameError::Unknown`] with a did-you-mean.
    pub fn profile(&self, name: &str) -> Result<ProfileId, NameError> {
        self.profiles
            .get(name)
            .map(|&i| ProfileId(i))
            .ok_or_else(|| {
                NameError::unknown(
                    NameKind::Profile,
                    name,
                    self.tables.profile_names.iter().map(|n| n.as_ref()),
                )
            })
    }

    /// The toolset with this name.
    ///
    /// # Errors
    /// [`NameError::Unknown`] with a did-you-mean.
    pub fn toolset(&self, name: &str) -> Result<ToolsetId, NameError> {
        self.toolsets
            .get(name)
            .map(|&i| ToolsetId(i))
            .ok_or_else(|| {
                NameError::unknown(
                    NameKind::Toolset,
                    name,
                    self.tables.toolset_names.iter().map(|n| n.as_ref()),
                )
            })
    }

    /// The preset with this name.
    ///
    /// # Errors
    /// [`NameError::Unknown`] with a did-you-mean.
    pub fn preset(&self, name: &str) -> Result<PresetId, NameError> {
        self.presets.get(name).map(|&i| PresetId(i)).ok_or_else(|| {
            NameError::unknown(
                NameKind::Preset,
                name,
                self.tables.preset_names.iter().map(|n| n.as_ref()),
            )
        })
    }

    // ---- profiles, toolsets, presets, servers ----

    /// Every profile, declared ones first (in name order), `full` last.
    pub fn profiles(&self) -> impl ExactSizeIterator<Item = ProfileId> {
        (0..self.tables.profile_names.len() as u32).map(ProfileId)
    }

    /// The implicit profile that owns every tool.
    pub fn full_profile(&self) -> ProfileId {
        ProfileId(self.tables.profile_names.len().saturating_sub(1) as u32)
    }

    /// Profile name.
    pub fn profile_name(&self, p: ProfileId) -> &str {
        &self.tables.profile_names[p.index()]
    }

    /// Profile description.
    pub fn profile_description(&self, p: ProfileId) -> &str {
        &self.tables.profile_descriptions[p.index()]
    }

    /// The profile's cap on inline tools per turn.
    pub fn profile_max_inline(&self, p: ProfileId) -> Option<u32> {
        self.tables.profile_max_inline[p.index()]
    }

    /// The profile's cap on the tool definitions of one request: its `max_tools` or its
    /// `client`'s documented cap ([`toolcat_catalog::model::Client::max_tools`]), the smaller;
    /// `None` when it declares neither. A [`crate::Session`] holds every step to it.
    pub fn profile_max_tools(&self, p: ProfileId) -> Option<u32> {
        self.tables.profile_max_tools[p.index()]
    }

    /// The token budget (`o200k_base`) of the profile's deferred-tool manifest
    /// ([`crate::manifest`]); `0` when it has none.
    pub fn profile_manifest_tokens(&self, p: ProfileId) -> u32 {
        self.tables.profile_manifest_tokens[p.index()]
    }

    /// The tools the profile owns, as a bitset.
    pub fn profile_tools(&self, p: ProfileId) -> &[u64] {
        self.tables.set(&self.tables.profile_bits, p.index())
    }

    /// Every toolset, in name order.
    pub fn toolsets(&self) -> impl ExactSizeIterator<Item = ToolsetId> {
        (0..self.tables.toolset_names.len() as u32).map(ToolsetId)
    }

    /// Toolset name.
    pub fn toolset_name(&self, s: ToolsetId) -> &str {
        &self.tables.toolset_names[s.index()]
    }

    /// Toolset description.
    pub fn toolset_description(&self, s: ToolsetId) -> &str {
        &self.tables.toolset_descriptions[s.index()]
    }

    /// The toolset's members with `includes` expanded, as a bitset.
    pub fn toolset_tools(&self, s: ToolsetId) -> &[u64] {
        self.tables.set(&self.tables.toolset_bits, s.index())
    }

    /// Every preset, in name order.
    pub fn presets(&self) -> impl ExactSizeIterator<Item = PresetId> {
        (0..self.tables.preset_names.len() as u32).map(PresetId)
    }

    /// Preset name.
    pub fn preset_name(&self, p: PresetId) -> &str {
        &self.tables.preset_names[p.index()]
    }

    /// Preset description.
    pub fn preset_description(&self, p: PresetId) -> &str {
        &self.tables.preset_descriptions[p.index()]
    }

    /// The profile a preset runs under.
    pub fn preset_profile(&self, p: PresetId) -> ProfileId {
        ProfileId(self.tables.preset_profile[p.index()])
    }

    /// The preset's cap on the tool definitions of one request: the smallest of its own
    /// (`max_tools`, `client`) and its profile's ([`Catalog::profile_max_tools`]).
    pub fn preset_max_tools(&self, p: PresetId) -> Option<u32> {
        self.tables.preset_max_tools[p.index()]
    }

    /// The toolsets a preset activates at the start of a turn.
    pub fn preset_toolsets(&self, p: PresetId) -> impl Iterator<Item = ToolsetId> + '_ {
        self.tables.preset_toolsets[p.index()]
            .iter()
            .map(|&s| ToolsetId(s))
    }

    /// Every MCP server, in name order.
    pub fn servers(&self) -> impl ExactSizeIterator<Item = ServerId> {
        (0..self.tables.server_names.len() as u32).map(ServerId)
    }

    /// Server name.
    pub fn server_name(&self, s: ServerId) -> &str {
        &self.tables.server_names[s.index()]
    }

    /// Server namespace (prefix of its tools' exported names).
    pub fn server_namespace(&self, s: ServerId) -> Option<&str> {
        self.tables.server_namespaces[s.index()].as_deref()
    }

    // ---- sets by attribute ----

    /// The discovery meta-tools (`tool_search`, `tool_describe`, `tool_call`; source `loop`) as a
    /// bitset: what a plan adds whenever a discoverable tool is reachable.
    pub fn discovery_tools(&self) -> &[u64] {
        &self.discovery
    }

    /// Tools of a tier, as a bitset.
    pub fn tier_tools(&self, tier: Tier) -> &[u64] {
        self.tables
            .set(&self.tables.tier_bits, usize::from(tier.code()))
    }

    /// Tools of an effect kind, as a bitset.
    pub fn effect_tools(&self, kind: EffectKind) -> &[u64] {
        self.tables
            .set(&self.tables.effect_bits, usize::from(kind.code()))
    }

    /// Tools of a visibility, as a bitset.
    pub fn visibility_tools(&self, v: Visibility) -> &[u64] {
        self.tables
            .set(&self.tables.visibility_bits, usize::from(v.code()))
    }

    /// Tools of a status, as a bitset.
    pub fn status_tools(&self, s: Status) -> &[u64] {
        self.tables
            .set(&self.tables.status_bits, usize::from(s.code()))
    }

    /// Tools an MCP client granted `scope` is listed (scopes nest: `read-only` ⊆ `staging` ⊆
    /// `full`); `None` for `excluded`, which is not a scope.
    pub fn scope_tools(&self, scope: Exposure) -> Option<&[u64]> {
        match scope {
            Exposure::Excluded => None,
            s => Some(
                self.tables
                    .set(&self.tables.scope_bits, usize::from(s.code())),
            ),
        }
    }
}

/// The input schema of `t` as exported: [`Catalog::input_schema`] without a top-level `$schema`.
pub fn exported_schema(catalog: &Catalog, t: ToolIndex) -> Value {
    let mut schema = catalog.input_schema(t).clone();
    if let Value::Object(map) = &mut schema {
        map.shift_remove("$schema");
    }
    schema
}

/// Keywords that describe a schema without constraining what it accepts.
const ANNOTATION_KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$defs",
    "definitions",
    "title",
    "description",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Whether `schema` constrains the values it accepts: `false` for `true`, `{}` and an object of
/// annotation keywords only ([`ANNOTATION_KEYWORDS`]), which accept any value. (`false`, which
/// accepts none, constrains.)
fn constrains_something(schema: &Value) -> bool {
    match schema {
        Value::Bool(accepts_any) => !accepts_any,
        Value::Object(map) => map
            .keys()
            .any(|k| !ANNOTATION_KEYWORDS.contains(&k.as_str())),
        _ => true,
    }
}

/// The arguments the runtime's meta-tools accept, by declared name (`None` for any other name):
///
/// - `tool_search`: `{"query": string, "limit"?: integer 1..=50}`;
/// - `tool_describe`: `{"name": string}` (exported name);
/// - `tool_call`: `{"name": string, "arguments"?: object}` (exported name; arguments default to
///   `{}`);
/// - `read_tool_result`: `{"reference": string, "offset"?: integer ≥ 0, "length"?: integer ≥ 1}`
///   (offset and length in characters);
/// - `run_code`: `{"code": string}` (a Code Mode program, [`crate::code_mode`]).
///
/// They are fixed here, beside the catalog, because meta-tools have no handler type to derive a
/// schema from and `tools.toml` may not declare one for them.
pub fn meta_tool_input_schema(name: &str) -> Option<Value> {
    use serde_json::json;
    Some(match name {
        "tool_search" => json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What the tool should do, in a few words, or its exact name"
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 50,
                    "description": "Most tools to return"
                }
            },
            "required": ["query"]
        }),
        "tool_describe" => json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Exact name of the tool"}
            },
            "required": ["name"]
        }),
        "tool_call" => json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Exact name of the tool to call"},
                "arguments": {
                    "type": "object",
                    "description": "Arguments of the tool, as its input schema describes them"
                }
            },
            "required": ["name"]
        }),
        "read_tool_result" => json!({
            "type": "object",
            "properties": {
                "reference": {
                    "type": "string",
                    "description": "The reference given in the preview of the archived result"
                },
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "First character to read"
                },
                "length": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Number of characters to read"
                }
            },
            "required": ["reference"]
        }),
        "run_code" => json!({
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The body of an async JavaScript function: await tools.NAME(args) calls, then return a JSON value"
                }
            },
            "required": ["code"]
        }),
        _ => return None,
    })
}

/// Top-level property names of a JSON Schema object.
fn property_names(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// Checks the layout rules of [`Tables`]: column lengths, bitset sizes, zero padding bits, enum
/// codes, indices in range, and that every per-attribute bitset agrees with its column. Returns
/// what is wrong, naming the column.
pub(crate) fn check_tables(t: &Tables) -> Result<(), String> {
    t.check_layout()?;
    let (len, w) = (t.len, t.words);
    let profiles = t.profile_names.len();
    let toolsets = t.toolset_names.len();
    let servers = t.server_names.len();

    for &p in t.preset_profile.iter() {
        if p as usize >= profiles {
            return Err(format!("a preset names profile {p} of {profiles}"));
        }
    }
    for list in t.preset_toolsets.iter() {
        if let Some(&s) = list.iter().find(|&&s| s as usize >= toolsets) {
            return Err(format!("a preset names toolset {s} of {toolsets}"));
        }
    }
    for i in 0..len {
        let name = &t.names[i];
        let check = |column: &str, code: u8, valid: bool, table: &[u64], sets: usize| {
            if !valid {
                return Err(format!("tool `{name}` has {column} code {code}"));
            }
            for k in 0..sets {
                let member = bit(&table[k * w..(k + 1) * w], i);
                if member != (k == usize::from(code)) {
                    return Err(format!(
                        "`{column}_bits` disagrees with column `{column}` at tool `{name}`"
                    ));
                }
            }
            Ok(())
        };
        let tier = t.tier[i];
        check(
            "tier",
            tier,
            Tier::from_code(tier).is_some(),
            &t.tier_bits,
            Tier::ALL.len(),
        )?;
        let effect = t.effect[i];
        check(
            "effect",
            effect,
            EffectKind::from_code(effect).is_some(),
            &t.effect_bits,
            EffectKind::ALL.len(),
        )?;
        let vis = t.visibility[i];
        check(
            "visibility",
            vis,
            Visibility::from_code(vis).is_some(),
            &t.visibility_bits,
            Visibility::ALL.len(),
        )?;
        let status = t.status[i];
        check(
            "status",
            status,
            Status::from_code(status).is_some(),
            &t.status_bits,
            Status::ALL.len(),
        )?;
        let exposure = t.exposure[i];
        if Exposure::from_code(exposure).is_none() {
            return Err(format!("tool `{name}` has exposure code {exposure}"));
        }
        for k in 0..Exposure::ALL.len() - 1 {
            let member = bit(&t.scope_bits[k * w..(k + 1) * w], i);
            if member != (usize::from(exposure) <= k) {
                return Err(format!(
                    "`scope_bits` disagrees with column `exposure` at tool `{name}`"
                ));
            }
        }
        let source = t.source[i];
        if source != SOURCE_LOCAL && source != SOURCE_LOOP && usize::from(source) >= servers {
            return Err(format!("tool `{name}` names server {source} of {servers}"));
        }
        let in_range = |r: u32| (r as usize) < len;
        if !t.requires[i].iter().all(|&r| in_range(r)) {
            return Err(format!("tool `{name}` requires a tool index out of range"));
        }
        if !t.pair[i].is_none_or(in_range) || !t.replaced_by[i].is_none_or(in_range) {
            return Err(format!(
                "tool `{name}` has a `pair` or `replaced_by` out of range"
            ));
        }
    }
    Ok(())
}

/// The largest catalog file [`read_catalog_source`] reads: 64 MiB, far above any real `tools.toml`
/// (the reference catalog is a few tens of KiB), low enough that a wrong path such as `/dev/zero`
/// fails at once instead of filling memory.
pub const MAX_CATALOG_BYTES: u64 = 64 * 1024 * 1024;

/// Reads the text of the catalog file at `path`: it must be a regular file (symlinks followed) of
/// at most [`MAX_CATALOG_BYTES`] bytes, so that a FIFO, a device or a directory fails at once
/// instead of blocking or reading forever. A leading UTF-8 byte order mark is dropped.
///
/// # Errors
/// [`CatalogError::Read`], naming the path, when it does not exist, is not a regular file, is
/// larger than [`MAX_CATALOG_BYTES`] or cannot be read; [`CatalogError::Invalid`] (E0106, at the
/// line and column of the first bad byte) when it is not UTF-8.
pub fn read_catalog_source(path: &Path) -> Result<String, CatalogError> {
    use std::io::Read as _;
    let fail = |source: std::io::Error| CatalogError::Read {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(fail)?;
    if !meta.is_file() {
        return Err(fail(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "it is not a regular file (a directory, FIFO or device); pass the path of a `tools.toml` file",
        )));
    }
    let too_big = || {
        fail(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "it is larger than {MAX_CATALOG_BYTES} bytes (`MAX_CATALOG_BYTES`); pass the path of a `tools.toml` file"
            ),
        ))
    };
    if meta.len() > MAX_CATALOG_BYTES {
        return Err(too_big());
    }
    let file = std::fs::File::open(path).map_err(fail)?;
    let mut bytes = Vec::new();
    file.take(MAX_CATALOG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    if bytes.len() as u64 > MAX_CATALOG_BYTES {
        return Err(too_big());
    }
    let source = toolcat_catalog::load::decode(bytes).map_err(|e| {
        let shown = path.display().to_string();
        let diagnostics = vec![e.diagnostic];
        CatalogError::Invalid {
            rendered: render_all(&diagnostics, &shown, &e.text),
            path: shown,
            diagnostics,
        }
    })?;
    Ok(source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::handler::{erase, BoxFuture, ToolContext, ToolError, ToolHandler};

    struct ReadFile;
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct ReadFileArgs {
        /// Path relative to the workspace.
        path: String,
        max_bytes: Option<u64>,
    }
    impl ToolHandler for ReadFile {
        const NAME: &'static str = "read_file";
        type Args = ReadFileArgs;
        type Output = String;
        fn call(args: Self::Args, _: &ToolContext) -> BoxFuture<'_, Result<String, ToolError>> {
            Box::pin(async move { Ok(args.path) })
        }
    }
    struct Impostor;
    impl ToolHandler for Impostor {
        const NAME: &'static str = "list_dir";
        type Args = ReadFileArgs;
        type Output = String;
        fn call(args: Self::Args, _: &ToolContext) -> BoxFuture<'_, Result<String, ToolError>> {
            Box::pin(async move { Ok(args.path) })
        }
    }

    const TOOLS: usize = 17;
    const NO_HANDLER: Option<ErasedHandler> = None;
    static HANDLERS: [Option<ErasedHandler>; TOOLS] = {
        let mut table = [NO_HANDLER; TOOLS];
        table[4] = Some(erase::<ReadFile>());
        table
    };
    static MISPLACED: [Option<ErasedHandler>; TOOLS] = {
        let mut table = [NO_HANDLER; TOOLS];
        table[4] = Some(erase::<Impostor>());
        table
    };

    fn index_bytes(tables: &Tables) -> &'static [u8] {
        Box::leak(
            build_index_bytes(tables, &[])
                .expect("index builds")
                .into_boxed_slice(),
        )
    }

    fn compiled() -> Catalog {
        let tables = fixture::tables();
        assert_eq!(tables.len, TOOLS, "fixture size changed; update TOOLS");
        let index = index_bytes(&tables);
        Catalog::compiled(tables, index, &HANDLERS).expect("compiled catalog")
    }

    #[test]
    fn catalog_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Catalog>();
    }

    #[test]
    fn accessors_decode_every_column() {
        let c = fixture::catalog();
        let rows = fixture::rows();
        assert_eq!(c.len(), rows.len());
        for (t, row) in c.tools().zip(&rows) {
            assert_eq!(c.name(t), row.name);
            assert_eq!(c.description(t), row.description);
            assert_eq!(c.keywords(t).collect::<Vec<_>>(), row.keywords);
            assert_eq!(c.tier(t), row.tier, "{}", row.name);
            assert_eq!(c.effect(t).kind, row.effect, "{}", row.name);
            assert_eq!(c.effect(t).idempotent, row.idempotent, "{}", row.name);
            assert_eq!(c.effect(t).open_world, row.open_world, "{}", row.name);
            assert_eq!(c.exposure(t), row.exposure, "{}", row.name);
            assert_eq!(c.visibility(t), row.visibility, "{}", row.name);
            assert_eq!(c.status(t), row.status, "{}", row.name);
            assert_eq!(c.owner(t), "platform");
            let source = match c.source(t) {
                ToolSource::Local => "local",
                ToolSource::Loop => "loop",
                ToolSource::Server(s) => c.server_name(s),
            };
            assert_eq!(source, row.source, "{}", row.name);
            // A row names a required tool as `tools.toml` does: declared or exported name.
            let required: Vec<ToolIndex> = c.requires(t).collect();
            let expected: Vec<ToolIndex> = row
                .requires
                .iter()
                .map(|q| c.tool(q).expect("a required tool resolves"))
                .collect();
            assert_eq!(required, expected, "{}", row.name);
        }
        let pr = c.tool("github__createPullRequest").expect("exported name");
        assert_eq!(c.exported_name(pr), "github__createPullRequest");
        assert_eq!(c.name(pr), "createPullRequest");
        let old = c.tool("old_grep").expect("declared name");
        assert_eq!(c.replaced_by(old).map(|t| c.name(t)), Some("search_text"));
        assert_eq!(c.removal(old), Some("2030-01-01"));
        let shell = c.tool("run_shell").expect("declared name");
        assert_eq!(
            c.rate_limit(shell),
            Some(RateLimit {
                calls: 10,
                window_secs: 60
            })
        );
    }

    #[test]
    fn mcp_annotations_follow_the_effect() {
        let c = fixture::catalog();
        for t in c.tools() {
            let a = c.mcp_annotations(t);
            let e = c.effect(t);
            assert_eq!(
                a.read_only_hint,
                e.kind == EffectKind::Read,
                "{}",
                c.name(t)
            );
            assert_eq!(
                a.destructive_hint,
                e.kind == EffectKind::Destructive,
                "{}",
                c.name(t)
            );
            assert_eq!(a.idempotent_hint, e.idempotent, "{}", c.name(t));
            assert_eq!(a.open_world_hint, e.open_world, "{}", c.name(t));
            assert_eq!(a.title, None);
        }
        let delete = c.tool("delete_file").expect("known");
        assert_eq!(
            serde_json::to_value(c.mcp_annotations(delete)).expect("serializes"),
            serde_json::json!({
                "readOnlyHint": false,
                "destructiveHint": true,
                "idempotentHint": false,
                "openWorldHint": false
            })
        );
    }

    #[test]
    fn input_schema_comes_from_declaration_handler_or_minimal() {
        let c = compiled();
        let pr = c.tool("github__createPullRequest").expect("known");
        let declared: Value = serde_json::from_str(
            c.tables().input_schema[pr.index()]
                .as_deref()
                .expect("declared"),
        )
        .expect("JSON");
        assert_eq!(c.input_schema(pr), &declared);
        let read = c.tool("read_file").expect("known");
        assert!(c.handler(read).is_some());
        let props = c.input_schema(read)["properties"]
            .as_object()
            .expect("properties");
        assert_eq!(props.keys().collect::<Vec<_>>(), ["path", "max_bytes"]);
        let list = c.tool("list_dir").expect("known");
        assert!(c.handler(list).is_none());
        assert_eq!(c.input_schema(list), &minimal_input_schema());
        let search = c.tool("tool_search").expect("known");
        assert_eq!(
            c.input_schema(search)["required"],
            serde_json::json!(["query"])
        );
        for name in toolcat_catalog::model::META_TOOLS {
            let t = c.tool(name).expect("fixture declares every meta-tool");
            assert_eq!(
                Some(c.input_schema(t).clone()),
                meta_tool_input_schema(name)
            );
        }
    }

    /// A handler's output with a shape of its own.
    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct FileStat {
        /// Size in bytes.
        bytes: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        modified: Option<String>,
    }
    struct StatFile;
    impl ToolHandler for StatFile {
        const NAME: &'static str = "stat_file";
        type Args = ReadFileArgs;
        type Output = FileStat;
        fn call(_: Self::Args, _: &ToolContext) -> BoxFuture<'_, Result<FileStat, ToolError>> {
            Box::pin(async move {
                Ok(FileStat {
                    bytes: 0,
                    modified: None,
                })
            })
        }
    }
    /// A handler whose result has no fixed shape: it declares no output schema.
    struct Inspect;
    impl ToolHandler for Inspect {
        const NAME: &'static str = "inspect";
        type Args = ReadFileArgs;
        type Output = Value;
        fn call(_: Self::Args, _: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
            Box::pin(async move { Ok(Value::Null) })
        }
    }
    static OUTPUT_HANDLERS: [Option<ErasedHandler>; 3] = [
        Some(erase::<ReadFile>()),
        Some(erase::<StatFile>()),
        Some(erase::<Inspect>()),
    ];
    const OUTPUTS: &str = r#"
[mcp_server.forge]
description = "The code forge"
url = "https://forge.example.invalid/mcp"

[toolset.files]
description = "Reading workspace files"

[[tool]]
name = "read_file"
description = "Reads a workspace file."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["files"]
owner = "platform"

[[tool]]
name = "stat_file"
description = "Tells the size and modification time of a workspace file."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["files"]
owner = "platform"

[[tool]]
name = "inspect"
description = "Inspects anything."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["files"]
owner = "platform"

[[tool]]
name = "get_issue"
description = "Fetches one issue of the forge."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["files"]
owner = "platform"
source = "forge"
input_schema = { type = "object", properties = { number = { type = "integer" } } }
output_schema = { "$schema" = "https://json-schema.org/draft/2020-12/schema", type = "object", properties = { title = { type = "string" } }, required = ["title"] }

[[tool]]
name = "list_issues"
description = "Lists the open issues of the forge."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["files"]
owner = "platform"
source = "forge"
"#;

    #[test]
    fn output_schema_comes_from_the_handler_or_the_declaration() {
        let c = Catalog::from_source_with_handlers("outputs.toml", OUTPUTS, &OUTPUT_HANDLERS)
            .expect("valid catalog");
        let tool = |name| c.tool(name).expect("declared");
        // A struct output: its schema as it serializes (a skipped `None` is not required),
        // without `$schema`.
        let stat = c
            .output_schema(tool("stat_file"))
            .expect("a struct has a schema");
        assert_eq!(stat["type"], "object");
        assert_eq!(stat["title"], "FileStat");
        assert_eq!(stat["properties"]["bytes"]["description"], "Size in bytes.");
        assert!(stat["properties"]["modified"].is_object(), "{stat}");
        assert_eq!(stat["required"], serde_json::json!(["bytes"]));
        assert!(stat.get("$schema").is_none(), "{stat}");
        // A string output has a schema too; only the MCP server asks for an object.
        assert_eq!(
            c.output_schema(tool("read_file")),
            Some(&serde_json::json!({"type": "string", "title": "string"}))
        );
        // `serde_json::Value` constrains nothing: no output schema.
        assert_eq!(c.output_schema(tool("inspect")), None);
        // A server tool: its declared schema, `$schema` left out; none when it declares none.
        assert_eq!(
            c.output_schema(tool("get_issue")),
            Some(&serde_json::json!({
                "type": "object",
                "properties": {"title": {"type": "string"}},
                "required": ["title"]
            }))
        );
        assert_eq!(c.output_schema(tool("list_issues")), None);

        // Without handlers, local tools have none.
        let c = Catalog::from_source("outputs.toml", OUTPUTS).expect("valid catalog");
        assert_eq!(
            c.output_schema(c.tool("stat_file").expect("declared")),
            None
        );
        let meta = fixture::catalog();
        for name in toolcat_catalog::model::META_TOOLS {
            assert_eq!(meta.output_schema(meta.tool(name).expect("declared")), None);
        }
    }

    #[test]
    fn schemas_that_accept_any_value_constrain_nothing() {
        use serde_json::json;
        for any in [
            json!(true),
            json!({}),
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "AnyValue"}),
            json!({"description": "anything", "$defs": {"X": {"type": "string"}}}),
        ] {
            assert!(!constrains_something(&any), "{any}");
        }
        for some in [
            json!(false),
            json!({"type": "object"}),
            json!({"title": "T", "anyOf": [{"type": "string"}, {"type": "null"}]}),
            json!({"$ref": "#/$defs/X", "$defs": {"X": {"type": "string"}}}),
        ] {
            assert!(constrains_something(&some), "{some}");
        }
        let value = crate::handler::output_schema_of::<Value>().to_value();
        assert!(!constrains_something(&value), "{value}");
    }

    #[test]
    fn lookups_return_typed_ids_and_suggest_names() {
        let c = fixture::catalog();
        assert_eq!(c.profile_name(c.profile("coder").expect("known")), "coder");
        assert_eq!(c.profile_name(c.full_profile()), "full");
        assert_eq!(c.profile("full").expect("implicit"), c.full_profile());
        let files = c.toolset("files").expect("known");
        assert_eq!(c.toolset_name(files), "files");
        let review = c.preset("review").expect("known");
        assert_eq!(c.profile_name(c.preset_profile(review)), "reader");
        assert_eq!(
            c.preset_toolsets(review)
                .map(|s| c.toolset_name(s))
                .collect::<Vec<_>>(),
            ["files"]
        );
        assert_eq!(
            c.profile("codr").expect_err("unknown").to_string(),
            "unknown profile `codr`; did you mean `coder`?"
        );
        assert_eq!(
            c.tool("read_fil").expect_err("unknown").to_string(),
            "unknown tool `read_fil`; did you mean `read_file`?"
        );
        assert!(matches!(
            c.toolset("nothing-like-it"),
            Err(NameError::Unknown {
                suggestion: None,
                ..
            })
        ));
        // Declared by two namespaced servers: only the exported names are unique.
        match c.tool("list_branches") {
            Err(NameError::Ambiguous { candidates, .. }) => {
                assert_eq!(
                    candidates,
                    ["github__list_branches", "gitlab__list_branches"]
                )
            }
            other => panic!("expected an ambiguous name, got {other:?}"),
        }
        let gitlab = c.tool("gitlab__list_branches").expect("exported");
        assert_eq!(c.exported_name(gitlab), "gitlab__list_branches");
        assert_eq!(
            c.tools_named_ignoring_case("LIST_BRANCHES").count(),
            2,
            "both declared names match ignoring case"
        );
    }

    #[test]
    fn sets_match_the_columns() {
        let c = fixture::catalog();
        for t in c.tools() {
            let i = t.index();
            assert!(bit(c.tier_tools(c.tier(t)), i));
            assert!(bit(c.visibility_tools(c.visibility(t)), i));
            assert!(bit(c.status_tools(c.status(t)), i));
            assert!(bit(c.effect_tools(c.effect(t).kind), i));
            assert!(bit(c.profile_tools(c.full_profile()), i));
            for scope in [Exposure::ReadOnly, Exposure::Staging, Exposure::Full] {
                let listed = c.scope_tools(scope).map(|s| bit(s, i));
                assert_eq!(
                    listed,
                    Some(c.exposure(t) <= scope),
                    "{} in {scope}",
                    c.name(t)
                );
            }
        }
        assert!(c.scope_tools(Exposure::Excluded).is_none());
    }

    #[test]
    fn inconsistent_tables_are_rejected_with_the_column_named() {
        let check = |edit: &dyn Fn(&mut Tables), expected: &str| {
            let mut t = fixture::tables();
            edit(&mut t);
            let index = index_bytes(&fixture::tables());
            let err = Catalog::compiled(t, index, &[]).expect_err("inconsistent");
            assert!(
                matches!(err, CatalogError::Tables(_)) && err.to_string().contains(expected),
                "{err}"
            );
        };
        check(
            &|t| t.descriptions.to_mut().truncate(3),
            "column `descriptions`",
        );
        check(&|t| t.words = 2, "`words`");
        check(&|t| t.tier.to_mut()[0] = 9, "tier code 9");
        check(
            &|t| t.tier.to_mut()[4] = Tier::Gated.code(),
            "`tier_bits` disagrees",
        );
        check(
            &|t| t.profile_bits.to_mut()[0] |= 1 << 63,
            "past the last tool",
        );
        check(
            &|t| t.requires.to_mut()[5] = Cow::Owned(vec![99]),
            "out of range",
        );
        check(
            &|t| t.exposure.to_mut()[4] = Exposure::Full.code(),
            "`scope_bits`",
        );
        check(&|t| t.source.to_mut()[4] = 7, "server 7");
        check(
            &|t| t.input_schema.to_mut()[4] = Some(Cow::Borrowed("{not json")),
            "not JSON",
        );
        check(
            &|t| t.output_schema.to_mut()[4] = Some(Cow::Borrowed("{not json")),
            "the `output_schema` of `read_file` is not JSON",
        );
    }

    #[test]
    fn compiled_rejects_a_mismatched_index_or_handler_table() {
        let tables = fixture::tables();
        let mut shorter = fixture::rows();
        shorter.retain(|r| r.source != "gitlab");
        let other_index = index_bytes(&fixture::tables_of(&shorter));
        let err = Catalog::compiled(tables.clone(), other_index, &[]).expect_err("mismatch");
        assert!(
            matches!(
                err,
                CatalogError::IndexMismatch {
                    index: 16,
                    tables: 17
                }
            ),
            "{err}"
        );

        let index = index_bytes(&tables);
        let err = Catalog::compiled(tables.clone(), index, &HANDLERS[..3]).expect_err("short");
        assert!(matches!(err, CatalogError::Handlers(_)), "{err}");
        let err = Catalog::compiled(tables.clone(), index, &MISPLACED).expect_err("misplaced");
        assert!(err.to_string().contains("handler of `list_dir`"), "{err}");
        let err = Catalog::compiled(tables, b"garbage", &[]).expect_err("garbage index");
        assert!(matches!(err, CatalogError::Index(_)), "{err}");
    }

    const SMALL: &str = r#"
[toolset.files]
description = "Reading and writing workspace files"

[[tool]]
name = "read_file"
description = "Reads a workspace file."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["files"]
owner = "platform"

[[tool]]
name = "list_dir"
description = "Lists a workspace directory."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["files"]
owner = "platform"
"#;

    #[test]
    fn from_source_compiles_and_attaches_handlers_by_name() {
        let c = Catalog::from_source("small.toml", SMALL).expect("valid catalog");
        assert_eq!(c.len(), 2);
        assert_eq!(c.path(), Some("small.toml"));
        let read = c.tool("read_file").expect("declared");
        assert!(c.handler(read).is_none());
        assert_eq!(c.input_schema(read), &minimal_input_schema());
        let full = c.full_profile();
        assert!(c.search("max bytes", full, 5).expect("runs").is_empty());

        // The compiled dispatch table of another catalog attaches by declared name.
        let c = Catalog::from_source_with_handlers("small.toml", SMALL, &HANDLERS)
            .expect("valid catalog");
        let read = c.tool("read_file").expect("declared");
        assert_eq!(c.handler(read).map(|h| h.name), Some("read_file"));
        assert!(c.input_schema(read)["properties"]["max_bytes"].is_object());
        // The handler's argument names join the index.
        let hits = c.search("max bytes", full, 5).expect("runs");
        assert_eq!(hits.first().map(|h| h.tool), Some(read));
    }

    #[test]
    fn invalid_sources_and_missing_files_are_errors_naming_the_cause() {
        let err = Catalog::from_source("bad.toml", "[[tool]]\nname = 1\n").expect_err("invalid");
        match &err {
            CatalogError::Invalid {
                path, diagnostics, ..
            } => {
                assert_eq!(path, "bad.toml");
                assert!(!diagnostics.is_empty());
            }
            other => panic!("expected invalid, got {other:?}"),
        }
        assert!(err.to_string().contains("bad.toml:"), "{err}");
        let err = Catalog::load("/nonexistent/tools.toml").expect_err("missing");
        assert!(matches!(err, CatalogError::Read { .. }), "{err}");
        assert!(err.to_string().contains("/nonexistent/tools.toml"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn load_refuses_fifo_and_device() {
        let dir = std::env::temp_dir().join(format!("toolcat-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("tools.toml");
        let _ = std::fs::remove_file(&fifo);
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let err = Catalog::load(&fifo).expect_err("a FIFO is refused");
        assert!(matches!(err, CatalogError::Read { .. }), "{err}");
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(
            err.to_string().contains(&fifo.display().to_string()),
            "{err}"
        );
        let err = Catalog::load("/dev/zero").expect_err("a device is refused");
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let err = Catalog::load(&dir).expect_err("a directory is refused");
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
