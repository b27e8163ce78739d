//! Parsing `tools.toml` into the declaration model, keeping source spans for diagnostics.
//!
//! The file is parsed with `toml_edit` (which keeps the byte span of every key and value) and then
//! walked by hand rather than deserialized with serde, because serde stops at the first error and a
//! user must see every problem of the file at once. The walk accepts exactly the fields of the model
//! types — their names come from the schemars schema ([`model::tool_fields`],
//! [`model::table_fields`]), the same source as `generated/tools.schema.json` — and reports:
//! - E0100 a TOML syntax error (the parser stops there: the rest of the file cannot be trusted);
//! - E0101 an unknown field, with a did-you-mean naming the closest valid field;
//! - E0102 an unknown enum value, with a did-you-mean naming the closest valid value;
//! - E0103 a value of the wrong type;
//! - E0104 a missing required field;
//! - E0105 an unknown top-level table;
//! - E0106 bytes that are not UTF-8 ([`decode`], before parsing: the file's bytes to its text).
//!
//! The top-level keys are read here too: `targets`, a list of [`Target`] names (E0103 when it is
//! not a list of strings, E0102 for an unknown target), and `review_inline`, a count (E0103).
//!
//! Rules between rows and tables are checked afterwards in [`crate::validate`], which needs the
//! spans kept here in [`Loaded`].

use std::collections::{BTreeMap, HashSet};

use toml_edit::{Array, Document, InlineTable, Item, Key, Table, Value};

use crate::diagnostics::{and_list as list, did_you_mean, Diagnostic};
use crate::model::{
    self, CatalogFile, Client, EffectKind, Exposure, McpServerDecl, PresetDecl, ProfileDecl, Span,
    Status, Target, Tier, ToolDecl, ToolsetDecl, Visibility, PROFILE_FULL,
};

/// A parsed catalog file with the spans its diagnostics point at.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Path as given (used in diagnostics).
    pub path: String,
    /// The source text.
    pub source: String,
    /// The declarations.
    pub file: CatalogFile,
    /// Spans of each `[[tool]]` row, parallel to `file.tool`.
    pub tool_spans: Vec<DeclSpans>,
    /// The `[mcp_server.NAME]` entries, in declaration order (`file.mcp_server` is sorted by name).
    pub mcp_servers: Vec<Entry>,
    /// The `[profile.NAME]` entries, in declaration order.
    pub profiles: Vec<Entry>,
    /// The `[toolset.NAME]` entries, in declaration order.
    pub toolsets: Vec<Entry>,
    /// The `[preset.NAME]` entries, in declaration order.
    pub presets: Vec<Entry>,
    /// The value of the top-level `targets` key; `0..0` when the file does not write it.
    pub targets_span: Span,
    /// The value of the top-level `review_inline` key; `0..0` when the file does not write it.
    pub review_inline_span: Span,
}

/// One side-table entry (`[profile.NAME]` and friends): its name and spans.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub spans: DeclSpans,
}

/// Source spans of one declaration: a `[[tool]]` row or a side-table entry.
///
/// Every lookup falls back to something that exists, so a diagnostic always has a place to point:
/// an item falls back to its field's value, a value to its key, a key to the header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeclSpans {
    /// The header: `[[tool]]` for a row, `NAME` in `[profile.NAME]` for an entry.
    pub header: Span,
    /// The key of each field written, by field name.
    pub keys: BTreeMap<String, Span>,
    /// The value of each field written, by field name.
    pub values: BTreeMap<String, Span>,
    /// Each item of each list field written (`profiles`, `toolsets`, `includes`, ...), in order.
    pub items: BTreeMap<String, Vec<Span>>,
}

impl DeclSpans {
    /// Whether `field` was written in the file (rather than defaulted).
    pub fn has(&self, field: &str) -> bool {
        self.keys.contains_key(field)
    }

    /// The span of `field`'s key, else the header.
    pub fn key(&self, field: &str) -> Span {
        self.keys
            .get(field)
            .cloned()
            .unwrap_or_else(|| self.header.clone())
    }

    /// The span of `field`'s value, else its key, else the header.
    pub fn value(&self, field: &str) -> Span {
        self.values
            .get(field)
            .cloned()
            .unwrap_or_else(|| self.key(field))
    }

    /// The span of item `index` of list field `field`, else the whole value.
    pub fn item(&self, field: &str, index: usize) -> Span {
        self.items
            .get(field)
            .and_then(|items| items.get(index))
            .cloned()
            .unwrap_or_else(|| self.value(field))
    }
}

impl Loaded {
    /// The entries of side table `table` (`mcp_server`, `profile`, `toolset`, `preset`) in
    /// declaration order; empty for any other name.
    pub fn entries(&self, table: &str) -> &[Entry] {
        match table {
            "mcp_server" => &self.mcp_servers,
            "profile" => &self.profiles,
            "toolset" => &self.toolsets,
            "preset" => &self.presets,
            _ => &[],
        }
    }

    /// The spans of entry `name` of side table `table`.
    pub fn entry(&self, table: &str, name: &str) -> Option<&DeclSpans> {
        self.entries(table)
            .iter()
            .find(|e| e.name == name)
            .map(|e| &e.spans)
    }
}

/// How a tool name written in a reference (`requires`, `pair`, `replaced_by`) resolves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// The index of the tool in `file.tool`.
    Tool(usize),
    /// No tool has this declared or exported name.
    Unknown,
    /// Several tools of namespaced servers share this declared name; their indices. Such a
    /// reference must use the exported name (`NS__name`).
    Ambiguous(Vec<usize>),
}

/// Lookup of tools by name, built once per catalog (see [`Loaded::tool_index`]).
#[derive(Debug, Clone, Default)]
pub struct ToolIndex {
    /// Exported name → first tool with it.
    exported: std::collections::HashMap<String, usize>,
    /// Declared name → every tool with it, in file order.
    declared: std::collections::HashMap<String, Vec<usize>>,
}

impl ToolIndex {
    /// Resolves a reference: an exported name first (`gh__get_issue`), then a declared name
    /// (`get_issue`) when exactly one tool declares it.
    pub fn resolve(&self, name: &str) -> Resolved {
        if let Some(&i) = self.exported.get(name) {
            return Resolved::Tool(i);
        }
        match self.declared.get(name).map(Vec::as_slice) {
            None | Some([]) => Resolved::Unknown,
            Some([i]) => Resolved::Tool(*i),
            Some(many) => Resolved::Ambiguous(many.to_vec()),
        }
    }

    /// The tool `name` resolves to, if exactly one.
    pub fn get(&self, name: &str) -> Option<usize> {
        match self.resolve(name) {
            Resolved::Tool(i) => Some(i),
            _ => None,
        }
    }
}

impl Loaded {
    /// The exported name of tool `i`: `NS__name` when its `source` is an `[mcp_server]` with a
    /// `namespace`, else its declared name. Panics if `i` is out of range.
    pub fn exported_name(&self, i: usize) -> String {
        let tool = &self.file.tool[i];
        // `local` and `loop` tools never take a namespace, even from a server wrongly named after
        // their source (`E0424`).
        let server = match tool.source.as_str() {
            crate::model::SOURCE_LOCAL | crate::model::SOURCE_LOOP => None,
            source => self.file.mcp_server.get(source),
        };
        match server.and_then(|server| server.namespace.as_deref()) {
            Some(namespace) => format!("{namespace}__{}", tool.name),
            None => tool.name.clone(),
        }
    }

    /// The name lookup of this catalog's tools.
    pub fn tool_index(&self) -> ToolIndex {
        let mut index = ToolIndex::default();
        for (i, tool) in self.file.tool.iter().enumerate() {
            index.exported.entry(self.exported_name(i)).or_insert(i);
            index.declared.entry(tool.name.clone()).or_default().push(i);
        }
        index
    }
}

/// A `tools.toml` whose bytes are not UTF-8 (E0106): the error, and the text it points into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotUtf8 {
    /// The file's text with each invalid sequence replaced by U+FFFD: identical to the file up to
    /// the first bad byte, so the diagnostic's line and column are the file's.
    pub text: String,
    /// The error, spanning the replacement of the first bad byte.
    pub diagnostic: Diagnostic,
}

/// The text of a `tools.toml` read as `bytes`, without a leading UTF-8 byte order mark (it is not
/// part of the TOML text: columns on line 1 count from after it).
///
/// # Errors
/// [`NotUtf8`] (E0106) when the bytes are not UTF-8, pointing at the first bad byte (TOML files
/// are UTF-8, TOML 1.0 "Spec"); the help says to save the file as UTF-8.
pub fn decode(bytes: Vec<u8>) -> Result<String, Box<NotUtf8>> {
    let bytes = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) => rest.to_vec(),
        None => bytes,
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            // `None`: a sequence cut off by the end of the file.
            let len = e.utf8_error().error_len();
            let bytes = e.into_bytes();
            let end = len.map_or(bytes.len(), |n| at + n);
            let bad: Vec<String> = bytes[at..end]
                .iter()
                .map(|b| format!("0x{b:02X}"))
                .collect();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            // The replacement character U+FFFD is 3 bytes in the lossy text.
            let diagnostic = Diagnostic::error(
                "E0106",
                format!(
                    "the file is not UTF-8: `{}` here is not a UTF-8 character",
                    bad.join(" ")
                ),
                at..at + '\u{fffd}'.len_utf8(),
            )
            .with_label("not UTF-8 (shown as \u{fffd})")
            .with_help(
                "save the file as UTF-8 (TOML files are UTF-8 text); an editor's \"save with encoding\", or `iconv -f LATIN1 -t UTF-8`, converts one written in another encoding",
            );
            Err(Box::new(NotUtf8 { text, diagnostic }))
        }
    }
}

/// Parses `source`; `path` names it in diagnostics.
///
/// # Errors
/// Every unknown field (with a did-you-mean), unknown enum value, type mismatch, missing required
/// field and unknown top-level table of the file, in source order; or the first TOML syntax error
/// (E0100) alone, since nothing after it can be read reliably.
pub fn parse(path: &str, source: &str) -> Result<Loaded, Vec<Diagnostic>> {
    let document = match Document::parse(source) {
        Ok(document) => document,
        Err(error) => return Err(vec![syntax_error(source, &error)]),
    };
    let mut walker = Walker {
        diagnostics: Vec::new(),
    };
    let mut loaded = Loaded {
        path: path.to_string(),
        source: source.to_string(),
        file: CatalogFile {
            targets: Vec::new(),
            review_inline: None,
            mcp_server: BTreeMap::new(),
            profile: BTreeMap::new(),
            toolset: BTreeMap::new(),
            preset: BTreeMap::new(),
            tool: Vec::new(),
        },
        tool_spans: Vec::new(),
        mcp_servers: Vec::new(),
        profiles: Vec::new(),
        toolsets: Vec::new(),
        presets: Vec::new(),
        targets_span: 0..0,
        review_inline_span: 0..0,
    };
    walker.document(document.as_table(), &mut loaded);
    if walker.diagnostics.is_empty() {
        Ok(loaded)
    } else {
        let mut diagnostics = walker.diagnostics;
        diagnostics.sort_by_key(|d| d.span.start);
        Err(diagnostics)
    }
}

fn syntax_error(source: &str, error: &toml_edit::TomlError) -> Diagnostic {
    let span = error.span().unwrap_or(0..0);
    // An empty span at the end of the file (e.g. an unclosed string) still deserves a caret.
    let span = if span.is_empty() && span.start < source.len() {
        span.start
            ..span.start
                + source[span.start..]
                    .chars()
                    .next()
                    .map_or(0, char::len_utf8)
    } else {
        span
    };
    let message = error.message().trim().trim_end_matches('.');
    let mut lines = message.lines();
    let first = lines.next().unwrap_or("invalid TOML");
    let rest: Vec<&str> = lines.map(str::trim).filter(|l| !l.is_empty()).collect();
    let mut d = Diagnostic::error(
        "E0100",
        format!("invalid TOML: {}", lower_first(first)),
        span,
    )
    .with_label("the TOML parser stopped here");
    d = d.with_help(if rest.is_empty() {
        "fix the TOML syntax here; the file is read no further until it parses".to_string()
    } else {
        format!(
            "{}; the file is read no further until it parses",
            rest.join("; ")
        )
    });
    d
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The kinds of value a field takes; drives type checks and the help text of E0103.
#[derive(Clone, Copy)]
enum Kind {
    Str,
    StrList,
    Bool,
    Count,
    Enum(&'static [&'static str]),
    Json,
    /// A table whose values are strings (`env`, `headers`).
    StrTable,
}

fn tool_field_kind(field: &str) -> Option<Kind> {
    Some(match field {
        "name" | "description" | "owner" | "replaced_by" | "removal" | "pair" | "rate_limit"
        | "source" | "remote_name" => Kind::Str,
        "keywords" | "profiles" | "toolsets" | "requires" => Kind::StrList,
        "idempotent" | "open_world" | "code_mode" => Kind::Bool,
        "visibility" => Kind::Enum(Visibility::NAMES),
        "tier" => Kind::Enum(Tier::NAMES),
        "effect" => Kind::Enum(EffectKind::NAMES),
        "exposure" => Kind::Enum(Exposure::NAMES),
        "status" => Kind::Enum(Status::NAMES),
        "input_schema" | "output_schema" => Kind::Json,
        "timeout_ms" => Kind::Count,
        _ => return None,
    })
}

fn table_field_kind(table: &str, field: &str) -> Option<Kind> {
    Some(match (table, field) {
        (_, "description") => Kind::Str,
        ("mcp_server", "namespace" | "command" | "url") => Kind::Str,
        ("mcp_server", "args") => Kind::StrList,
        ("mcp_server", "env" | "headers") => Kind::StrTable,
        ("mcp_server", "connect_timeout_ms") => Kind::Count,
        ("mcp_server", "code_mode") => Kind::Bool,
        ("profile", "max_inline" | "max_tools" | "manifest_tokens") => Kind::Count,
        ("preset", "max_tools") => Kind::Count,
        ("profile" | "preset", "client") => Kind::Enum(Client::NAMES),
        ("toolset", "includes") => Kind::StrList,
        ("preset", "profile") => Kind::Str,
        ("preset", "toolsets") => Kind::StrList,
        _ => return None,
    })
}

/// An example of a well-formed value, for help texts.
fn example(field: &str) -> &'static str {
    match field {
        "name" => "name = \"read_file\"",
        "description" => "description = \"what it does, for the model\"",
        "visibility" => "visibility = \"inline\"",
        "tier" => "tier = \"gated\"",
        "effect" => "effect = \"read\"",
        "exposure" => "exposure = \"full\"",
        "toolsets" => "toolsets = [\"core\"]",
        "owner" => "owner = \"team-name\"",
        "profile" => "profile = \"full\"",
        "removal" => "removal = \"2030-01-31\"",
        "rate_limit" => "rate_limit = \"10/min\"",
        "max_inline" => "max_inline = 20",
        "review_inline" => "review_inline = 20",
        "max_tools" => "max_tools = 40",
        "client" => "client = \"cursor\"",
        "manifest_tokens" => "manifest_tokens = 300",
        "env" => "env = { API_TOKEN = \"${API_TOKEN}\" }",
        "headers" => "headers = { Authorization = \"Bearer ${API_TOKEN}\" }",
        "connect_timeout_ms" => "connect_timeout_ms = 10000",
        "timeout_ms" => "timeout_ms = 30000",
        "remote_name" => "remote_name = \"admin.tools.delete\"",
        _ => "",
    }
}

fn type_name(item: &Item) -> &'static str {
    match item {
        Item::None => "nothing",
        Item::Value(v) => value_type_name(v),
        Item::Table(_) => "a table",
        Item::ArrayOfTables(_) => "an array of tables",
    }
}

fn value_type_name(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date-time",
        Value::Array(_) => "an array",
        Value::InlineTable(_) => "an inline table",
    }
}

/// A table written either as `[header]` or inline as `{ ... }`.
#[derive(Clone, Copy)]
enum TableRef<'a> {
    Table(&'a Table),
    Inline(&'a InlineTable),
}

impl<'a> TableRef<'a> {
    fn from_item(item: &'a Item) -> Option<Self> {
        match item {
            Item::Table(t) => Some(TableRef::Table(t)),
            Item::Value(Value::InlineTable(t)) => Some(TableRef::Inline(t)),
            _ => None,
        }
    }

    fn span(self) -> Option<Span> {
        match self {
            TableRef::Table(t) => t.span(),
            TableRef::Inline(t) => t.span(),
        }
    }

    /// The key/value pairs in source order.
    fn entries(self) -> Vec<(&'a Key, &'a Item)> {
        match self {
            TableRef::Table(t) => t.iter().filter_map(|(k, _)| t.get_key_value(k)).collect(),
            TableRef::Inline(t) => t.iter().filter_map(|(k, _)| t.get_key_value(k)).collect(),
        }
    }

    fn get(self, key: &str) -> Option<&'a Item> {
        match self {
            TableRef::Table(t) => t.get(key),
            TableRef::Inline(t) => t.get_key_value(key).map(|(_, item)| item),
        }
    }
}

struct Walker {
    diagnostics: Vec<Diagnostic>,
}

/// What a walk of one declaration produced: the field values written, and their spans.
struct Fields<'a> {
    /// How the declaration is named in messages: "tool `x`", "`[profile.dev]`".
    what: String,
    spans: DeclSpans,
    values: BTreeMap<String, &'a Item>,
}

impl Walker {
    fn push(&mut self, d: Diagnostic) {
        self.diagnostics.push(d);
    }

    fn document(&mut self, root: &Table, loaded: &mut Loaded) {
        let tables = model::catalog_tables();
        for (key, item) in TableRef::Table(root).entries() {
            let name = key.get();
            let key_span = key.span().unwrap_or(0..0);
            match name {
                "tool" => self.tool_rows(item, key_span, loaded),
                "mcp_server" => self.side_table("mcp_server", item, key_span, loaded),
                "profile" => self.side_table("profile", item, key_span, loaded),
                "toolset" => self.side_table("toolset", item, key_span, loaded),
                "preset" => self.side_table("preset", item, key_span, loaded),
                "targets" => self.targets(item, key_span, loaded),
                "review_inline" => {
                    let span = item.span().unwrap_or(key_span);
                    if self.check_kind(
                        "the catalog",
                        "review_inline",
                        Kind::Count,
                        item,
                        span.clone(),
                    ) {
                        loaded.review_inline_span = span;
                        loaded.file.review_inline =
                            item.as_integer().and_then(|n| u32::try_from(n).ok());
                    }
                }
                _ => {
                    let suggestion = did_you_mean(
                        name,
                        tables
                            .iter()
                            .map(String::as_str)
                            .chain(model::CATALOG_KEYS.iter().copied()),
                    );
                    let is_table = TableRef::from_item(item).is_some()
                        || matches!(item, Item::ArrayOfTables(_));
                    let what = if is_table { "table" } else { "top-level key" };
                    let mut d =
                        Diagnostic::error("E0105", format!("unknown {what} `{name}`"), key_span)
                            .with_label("not a table of `tools.toml`");
                    d = d.with_help(match suggestion {
                        Some("tool") => {
                            "did you mean `tool`? each tool is a `[[tool]]` row".to_string()
                        }
                        Some("targets") => {
                            "did you mean `targets`? write `targets = [\"openai\", \"mcp\"]` before the first table".to_string()
                        }
                        Some("review_inline") => {
                            "did you mean `review_inline`? write `review_inline = 20` before the first table".to_string()
                        }
                        Some(s) => format!("did you mean `{s}`? entries are written `[{s}.NAME]`"),
                        None => format!(
                            "the tables of `tools.toml` are {}",
                            list(tables.iter().map(|t| if t == "tool" {
                                "[[tool]]".to_string()
                            } else {
                                format!("[{t}.NAME]")
                            }))
                        ),
                    });
                    self.push(d);
                }
            }
        }
        debug_assert!(tables.iter().all(|t| matches!(
            t.as_str(),
            "tool" | "mcp_server" | "profile" | "toolset" | "preset"
        )));
    }

    /// The top-level `targets = ["openai", ...]`: export targets, each one of [`Target::NAMES`].
    fn targets(&mut self, item: &Item, key_span: Span, loaded: &mut Loaded) {
        let span = item.span().unwrap_or(key_span.clone());
        loaded.targets_span = span.clone();
        if !self.check_kind("the catalog", "targets", Kind::StrList, item, span) {
            return;
        }
        let Some(array) = item.as_array() else {
            return;
        };
        for value in array.iter() {
            let Some(text) = value.as_str() else { continue };
            match Target::parse(text) {
                Some(target) => loaded.file.targets.push(target),
                None => {
                    let names = || list(Target::NAMES.iter().map(|n| format!("`{n}`")));
                    let help = match did_you_mean(text, Target::NAMES.iter().copied()) {
                        Some(s) => format!("did you mean `{s}`? `targets` lists {}", names()),
                        None => format!("`targets` lists {}", names()),
                    };
                    self.push(
                        Diagnostic::error(
                            "E0102",
                            format!("unknown target `{text}` in `targets`"),
                            value.span().unwrap_or(key_span.clone()),
                        )
                        .with_label("no such export target")
                        .with_help(help),
                    );
                }
            }
        }
    }

    fn tool_rows(&mut self, item: &Item, key_span: Span, loaded: &mut Loaded) {
        let rows: Vec<TableRef<'_>> = match item {
            Item::ArrayOfTables(rows) => rows.iter().map(TableRef::Table).collect(),
            Item::Value(Value::Array(array)) if array.iter().all(|v| v.is_inline_table()) => array
                .iter()
                .filter_map(|v| v.as_inline_table().map(TableRef::Inline))
                .collect(),
            _ => {
                self.push(
                    Diagnostic::error(
                        "E0103",
                        format!(
                            "`tool` must be an array of tables, found {}",
                            type_name(item)
                        ),
                        item.span().unwrap_or(key_span),
                    )
                    .with_label("expected `[[tool]]` rows")
                    .with_help("write each tool as its own `[[tool]]` row (double brackets)"),
                );
                return;
            }
        };
        let fields = model::tool_fields();
        let required = model::required_tool_fields();
        for (index, row) in rows.into_iter().enumerate() {
            let header = row
                .span()
                .map(|s| header_span(&loaded.source, s))
                .unwrap_or(key_span.clone());
            let name = row.get("name").and_then(Item::as_str).map(str::to_string);
            let what = match &name {
                Some(name) => format!("tool `{name}`"),
                None => format!("tool row {}", index + 1),
            };
            let walked = self.fields(
                "tool",
                what,
                row,
                header,
                &fields,
                &required,
                tool_field_kind,
            );
            let tool = self.tool(&walked);
            loaded.file.tool.push(tool);
            loaded.tool_spans.push(walked.spans);
        }
    }

    fn side_table(
        &mut self,
        table: &'static str,
        item: &Item,
        key_span: Span,
        loaded: &mut Loaded,
    ) {
        let Some(entries) = TableRef::from_item(item) else {
            self.push(
                Diagnostic::error(
                    "E0103",
                    format!(
                        "`{table}` must be a table of named entries, found {}",
                        type_name(item)
                    ),
                    item.span().unwrap_or(key_span),
                )
                .with_label("expected `[{table}.NAME]` tables")
                .with_help(format!(
                    "declare each entry as its own `[{table}.NAME]` table"
                )),
            );
            return;
        };
        let fields = model::table_fields(table).unwrap_or_default();
        let required = model::required_table_fields(table).unwrap_or_default();
        for (key, item) in entries.entries() {
            let name = key.get().to_string();
            let name_span = key.span().unwrap_or(key_span.clone());
            let Some(entry) = TableRef::from_item(item) else {
                self.push(
                    Diagnostic::error(
                        "E0103",
                        format!(
                            "`{table}.{name}` must be a table, found {}",
                            type_name(item)
                        ),
                        item.span().unwrap_or(name_span),
                    )
                    .with_label("expected a table")
                    .with_help(format!(
                        "declare it as `[{table}.{name}]` with a `description = \"...\"` line"
                    )),
                );
                continue;
            };
            let walked = self.fields(
                table,
                format!("`[{table}.{name}]`"),
                entry,
                name_span,
                &fields,
                &required,
                |field| table_field_kind(table, field),
            );
            let spans = walked.spans.clone();
            match table {
                "mcp_server" => {
                    let decl = McpServerDecl {
                        description: self.string(&walked, "description").unwrap_or_default(),
                        namespace: self.string(&walked, "namespace"),
                        command: self.string(&walked, "command"),
                        args: self.strings(&walked, "args").unwrap_or_default(),
                        url: self.string(&walked, "url"),
                        env: self.string_table(&walked, "env"),
                        headers: self.string_table(&walked, "headers"),
                        code_mode: self.boolean(&walked, "code_mode"),
                        connect_timeout_ms: self
                            .count(&walked, "connect_timeout_ms")
                            .map(u64::from),
                    };
                    loaded.file.mcp_server.insert(name.clone(), decl);
                    loaded.mcp_servers.push(Entry { name, spans });
                }
                "profile" => {
                    let decl = ProfileDecl {
                        description: self.string(&walked, "description").unwrap_or_default(),
                        max_inline: self.count(&walked, "max_inline"),
                        max_tools: self.count(&walked, "max_tools"),
                        client: self.client(&walked),
                        manifest_tokens: self.count(&walked, "manifest_tokens"),
                    };
                    loaded.file.profile.insert(name.clone(), decl);
                    loaded.profiles.push(Entry { name, spans });
                }
                "toolset" => {
                    let decl = ToolsetDecl {
                        description: self.string(&walked, "description").unwrap_or_default(),
                        includes: self.strings(&walked, "includes").unwrap_or_default(),
                    };
                    loaded.file.toolset.insert(name.clone(), decl);
                    loaded.toolsets.push(Entry { name, spans });
                }
                _ => {
                    let decl = PresetDecl {
                        description: self.string(&walked, "description").unwrap_or_default(),
                        profile: self.string(&walked, "profile").unwrap_or_default(),
                        toolsets: self.strings(&walked, "toolsets").unwrap_or_default(),
                        max_tools: self.count(&walked, "max_tools"),
                        client: self.client(&walked),
                    };
                    loaded.file.preset.insert(name.clone(), decl);
                    loaded.presets.push(Entry { name, spans });
                }
            }
        }
    }

    /// Walks the fields of one declaration: rejects unknown fields and values of the wrong shape,
    /// records spans, and reports missing required fields.
    #[allow(clippy::too_many_arguments)]
    fn fields<'a>(
        &mut self,
        table: &'static str,
        what: String,
        decl: TableRef<'a>,
        header: Span,
        fields: &[String],
        required: &[String],
        kind_of: impl Fn(&str) -> Option<Kind>,
    ) -> Fields<'a> {
        let mut walked = Fields {
            what,
            spans: DeclSpans {
                header,
                ..DeclSpans::default()
            },
            values: BTreeMap::new(),
        };
        let heading = if table == "tool" {
            "`[[tool]]`".to_string()
        } else {
            format!("`[{table}.NAME]`")
        };
        // Required fields an unknown field was taken for: `tiers = ...` already reports that
        // `tier` is misspelt, so its absence is not reported a second time.
        let mut suggested: Vec<String> = Vec::new();
        for (key, item) in decl.entries() {
            let field = key.get();
            let key_span = key.span().unwrap_or(walked.spans.header.clone());
            let kind = if fields.iter().any(|f| f == field) {
                kind_of(field)
            } else {
                None
            };
            let Some(kind) = kind else {
                let suggestion = did_you_mean(field, fields.iter().map(String::as_str));
                if let Some(s) = suggestion {
                    suggested.push(s.to_string());
                }
                let help = match suggestion {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!(
                        "the fields of {heading} are {}",
                        list(fields.iter().map(|f| format!("`{f}`")))
                    ),
                };
                self.push(
                    Diagnostic::error(
                        "E0101",
                        format!("unknown field `{field}` in {}", walked.what),
                        key_span,
                    )
                    .with_label(format!("not a field of {heading}"))
                    .with_help(help),
                );
                continue;
            };
            let value_span = item.span().unwrap_or(key_span.clone());
            walked.spans.keys.insert(field.to_string(), key_span);
            walked
                .spans
                .values
                .insert(field.to_string(), value_span.clone());
            if self.check_kind(&walked.what, field, kind, item, value_span) {
                if let (Kind::StrList, Some(array)) = (kind, item.as_array()) {
                    walked.spans.items.insert(
                        field.to_string(),
                        array.iter().map(|v| v.span().unwrap_or(0..0)).collect(),
                    );
                }
                walked.values.insert(field.to_string(), item);
            }
        }
        for field in required {
            if !walked.spans.has(field) && !suggested.contains(field) {
                let example = example(field);
                let help = if example.is_empty() {
                    format!("add `{field} = ...` to {}", walked.what)
                } else {
                    format!("add `{example}` to {}", walked.what)
                };
                self.push(
                    Diagnostic::error(
                        "E0104",
                        format!("missing required field `{field}` in {}", walked.what),
                        walked.spans.header.clone(),
                    )
                    .with_label(format!("this declaration has no `{field}`"))
                    .with_help(help),
                );
            }
        }
        walked
    }

    /// Checks that `item` has the shape `kind` asks for; reports E0102/E0103 and returns false if not.
    fn check_kind(&mut self, what: &str, field: &str, kind: Kind, item: &Item, span: Span) -> bool {
        let wrong = |expected: &str, help: String| {
            Diagnostic::error(
                "E0103",
                format!(
                    "`{field}` of {what} must be {expected}, found {}",
                    type_name(item)
                ),
                span.clone(),
            )
            .with_label(format!("expected {expected}"))
            .with_help(help)
        };
        match kind {
            Kind::Str => {
                if item.as_str().is_some() {
                    return true;
                }
                let help = if field == "removal" && item.as_datetime().is_some() {
                    "write the date as a quoted string, e.g. `removal = \"2030-01-31\"`".to_string()
                } else if !example(field).is_empty() {
                    format!("write a quoted string, e.g. `{}`", example(field))
                } else {
                    format!("write `{field}` as a quoted string")
                };
                self.push(wrong("a string", help));
                false
            }
            Kind::StrList => {
                let Some(array) = item.as_array() else {
                    let help = match item.as_str() {
                        Some(s) => format!("put it in brackets: `{field} = [\"{s}\"]`"),
                        None => format!(
                            "write a list of quoted strings, e.g. `{field} = [\"a\", \"b\"]`"
                        ),
                    };
                    self.push(wrong("an array of strings", help));
                    return false;
                };
                self.check_string_items(what, field, array)
            }
            Kind::Bool => {
                if item.as_bool().is_some() {
                    return true;
                }
                self.push(wrong(
                    "a boolean",
                    format!("write `{field} = true` or `{field} = false`, without quotes"),
                ));
                false
            }
            Kind::Count => match item.as_integer() {
                Some(n) if (0..=i64::from(u32::MAX)).contains(&n) => true,
                Some(n) => {
                    self.push(
                        Diagnostic::error(
                            "E0103",
                            format!("`{field}` of {what} must be a whole number from 0 to {}, found {n}", u32::MAX),
                            span,
                        )
                        .with_label("out of range")
                        .with_help(format!("write a count, e.g. `{}`", example(field))),
                    );
                    false
                }
                None => {
                    self.push(wrong(
                        "a whole number",
                        format!("write a count without quotes, e.g. `{}`", example(field)),
                    ));
                    false
                }
            },
            Kind::Enum(names) => {
                let Some(text) = item.as_str() else {
                    self.push(wrong(
                        "a string",
                        format!(
                            "write one of {} in double quotes",
                            list(names.iter().map(|n| format!("`{n}`")))
                        ),
                    ));
                    return false;
                };
                if names.contains(&text) {
                    return true;
                }
                let suggestion = did_you_mean(text, names.iter().copied());
                let help = match suggestion {
                    Some(s) => format!(
                        "did you mean `{s}`? `{field}` is one of {}",
                        list(names.iter().map(|n| format!("`{n}`")))
                    ),
                    None => format!(
                        "`{field}` is one of {}",
                        list(names.iter().map(|n| format!("`{n}`")))
                    ),
                };
                self.push(
                    Diagnostic::error("E0102", format!("unknown {field} `{text}` in {what}"), span)
                        .with_label(format!("no such {field}"))
                        .with_help(help),
                );
                false
            }
            Kind::StrTable => match to_json(item) {
                Ok(serde_json::Value::Object(map)) if map.values().all(|v| v.is_string()) => true,
                _ => {
                    self.push(wrong(
                        "a table of strings",
                        format!(
                            "write an inline table of quoted strings, e.g. `{}`",
                            example(field)
                        ),
                    ));
                    false
                }
            },
            Kind::Json => match to_json(item) {
                Ok(_) => true,
                Err((bad_span, message)) => {
                    self.push(
                        Diagnostic::error(
                            "E0103",
                            format!("`{field}` of {what} cannot be converted to JSON: {message}"),
                            bad_span.unwrap_or(span),
                        )
                        .with_label("no JSON equivalent")
                        .with_help("use strings, finite numbers, booleans, arrays and tables only"),
                    );
                    false
                }
            },
        }
    }

    fn check_string_items(&mut self, what: &str, field: &str, array: &Array) -> bool {
        let mut ok = true;
        for value in array.iter() {
            if value.as_str().is_none() {
                ok = false;
                self.push(
                    Diagnostic::error(
                        "E0103",
                        format!(
                            "items of `{field}` in {what} must be strings, found {}",
                            value_type_name(value)
                        ),
                        value.span().unwrap_or(0..0),
                    )
                    .with_label("expected a string")
                    .with_help("write every item in double quotes"),
                );
            }
        }
        ok
    }

    fn tool(&mut self, walked: &Fields<'_>) -> ToolDecl {
        // Values that failed their checks were not recorded; the placeholders below never
        // reach a caller, because any diagnostic fails the whole load.
        ToolDecl {
            name: self.string(walked, "name").unwrap_or_default(),
            description: self.string(walked, "description").unwrap_or_default(),
            keywords: self.strings(walked, "keywords").unwrap_or_default(),
            visibility: self
                .string(walked, "visibility")
                .and_then(|s| Visibility::parse(&s))
                .unwrap_or(Visibility::Inline),
            tier: self
                .string(walked, "tier")
                .and_then(|s| Tier::parse(&s))
                .unwrap_or(Tier::Gated),
            effect: self
                .string(walked, "effect")
                .and_then(|s| EffectKind::parse(&s))
                .unwrap_or(EffectKind::Read),
            idempotent: self.boolean(walked, "idempotent"),
            open_world: self.boolean(walked, "open_world"),
            code_mode: self.boolean(walked, "code_mode"),
            exposure: self
                .string(walked, "exposure")
                .and_then(|s| Exposure::parse(&s))
                .unwrap_or(Exposure::Excluded),
            profiles: self.strings(walked, "profiles").unwrap_or_default(),
            toolsets: self.strings(walked, "toolsets").unwrap_or_default(),
            owner: self.string(walked, "owner").unwrap_or_default(),
            status: self
                .string(walked, "status")
                .and_then(|s| Status::parse(&s))
                .unwrap_or_default(),
            replaced_by: self.string(walked, "replaced_by"),
            removal: self.string(walked, "removal"),
            requires: self.strings(walked, "requires").unwrap_or_default(),
            pair: self.string(walked, "pair"),
            rate_limit: self.string(walked, "rate_limit"),
            source: self
                .string(walked, "source")
                .unwrap_or_else(|| model::SOURCE_LOCAL.to_string()),
            input_schema: walked
                .values
                .get("input_schema")
                .and_then(|item| to_json(item).ok()),
            output_schema: walked
                .values
                .get("output_schema")
                .and_then(|item| to_json(item).ok()),
            remote_name: self.string(walked, "remote_name"),
            timeout_ms: self.count(walked, "timeout_ms").map(u64::from),
        }
    }

    fn string(&self, walked: &Fields<'_>, field: &str) -> Option<String> {
        walked
            .values
            .get(field)
            .and_then(|item| item.as_str())
            .map(str::to_string)
    }

    fn client(&self, walked: &Fields<'_>) -> Option<Client> {
        self.string(walked, "client")
            .and_then(|s| Client::parse(&s))
    }

    fn strings(&self, walked: &Fields<'_>, field: &str) -> Option<Vec<String>> {
        walked
            .values
            .get(field)
            .and_then(|item| item.as_array())
            .map(|array| {
                array
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
    }

    fn string_table(&self, walked: &Fields<'_>, field: &str) -> BTreeMap<String, String> {
        match walked.values.get(field).map(|item| to_json(item)) {
            Some(Ok(serde_json::Value::Object(map))) => map
                .into_iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k, v.to_string())))
                .collect(),
            _ => BTreeMap::new(),
        }
    }

    fn boolean(&self, walked: &Fields<'_>, field: &str) -> bool {
        walked
            .values
            .get(field)
            .and_then(|item| item.as_bool())
            .unwrap_or(false)
    }

    fn count(&self, walked: &Fields<'_>, field: &str) -> Option<u32> {
        walked
            .values
            .get(field)
            .and_then(|item| item.as_integer())
            .and_then(|n| u32::try_from(n).ok())
    }
}

/// The first line of a table's span: `[[tool]]` rather than the whole row.
fn header_span(source: &str, span: Span) -> Span {
    let start = span.start.min(source.len());
    let end = span.end.min(source.len()).max(start);
    let text = source.get(start..end).unwrap_or("");
    match text.find('\n') {
        Some(newline) => start..start + text[..newline].trim_end().len(),
        None => start..end,
    }
}

/// Converts a TOML item to JSON: tables become objects, date-times strings.
///
/// # Errors
/// The span and reason of the first value JSON cannot hold (a non-finite float).
fn to_json(item: &Item) -> Result<serde_json::Value, (Option<Span>, String)> {
    match item {
        Item::None => Ok(serde_json::Value::Null),
        Item::Value(value) => value_to_json(value),
        Item::Table(table) => {
            let mut object = serde_json::Map::new();
            for (key, item) in table.iter() {
                object.insert(key.to_string(), to_json(item)?);
            }
            Ok(serde_json::Value::Object(object))
        }
        Item::ArrayOfTables(tables) => {
            let mut array = Vec::new();
            for table in tables.iter() {
                let mut object = serde_json::Map::new();
                for (key, item) in table.iter() {
                    object.insert(key.to_string(), to_json(item)?);
                }
                array.push(serde_json::Value::Object(object));
            }
            Ok(serde_json::Value::Array(array))
        }
    }
}

fn value_to_json(value: &Value) -> Result<serde_json::Value, (Option<Span>, String)> {
    Ok(match value {
        Value::String(s) => serde_json::Value::String(s.value().clone()),
        Value::Integer(i) => serde_json::Value::from(*i.value()),
        Value::Float(f) => match serde_json::Number::from_f64(*f.value()) {
            Some(n) => serde_json::Value::Number(n),
            None => {
                return Err((
                    value.span(),
                    format!("`{}` is not a finite number", f.value()),
                ))
            }
        },
        Value::Boolean(b) => serde_json::Value::Bool(*b.value()),
        Value::Datetime(d) => serde_json::Value::String(d.value().to_string()),
        Value::Array(array) => {
            let mut items = Vec::new();
            for v in array.iter() {
                items.push(value_to_json(v)?);
            }
            serde_json::Value::Array(items)
        }
        Value::InlineTable(table) => {
            let mut object = serde_json::Map::new();
            for (key, v) in table.iter() {
                object.insert(key.to_string(), value_to_json(v)?);
            }
            serde_json::Value::Object(object)
        }
    })
}

/// Whether `profile` owns `tool`: `full` owns every tool; any other profile only the tools that
/// name it (default-deny).
pub fn owns(profile: &str, tool: &ToolDecl) -> bool {
    profile == PROFILE_FULL || tool.profiles.iter().any(|p| p == profile)
}

/// For each toolset in declaration order, the names of the toolsets it expands to (itself and
/// everything it `includes`, recursively); unknown names are skipped and cycles end the walk.
pub fn expand_toolsets(loaded: &Loaded) -> Vec<HashSet<&str>> {
    loaded
        .toolsets
        .iter()
        .map(|entry| {
            let mut seen: HashSet<&str> = HashSet::new();
            let mut todo: Vec<&str> = vec![entry.name.as_str()];
            while let Some(name) = todo.pop() {
                let Some(decl) = loaded.file.toolset.get(name) else {
                    continue;
                };
                if !seen.insert(name) {
                    continue;
                }
                todo.extend(decl.includes.iter().map(String::as_str));
            }
            seen
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(result: Result<Loaded, Vec<Diagnostic>>) -> Vec<&'static str> {
        match result {
            Ok(_) => Vec::new(),
            Err(ds) => ds.iter().map(|d| d.code).collect(),
        }
    }

    const ROW: &str = r#"
[toolset.core]
description = "core tools"

[[tool]]
name = "read_file"
description = "reads a file"
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
toolsets = ["core"]
owner = "files"
"#;

    #[test]
    fn server_env_and_headers_are_tables_of_strings() {
        let server =
            |body: &str| format!("[mcp_server.s]\ndescription = \"a server\"\n{body}\n{ROW}");
        let loaded = parse(
            "t.toml",
            &server("command = \"srv\"\nenv = { TOKEN = \"${TOKEN}\", MODE = \"fast\" }\nconnect_timeout_ms = 2500"),
        )
        .expect("loads");
        let decl = &loaded.file.mcp_server["s"];
        assert_eq!(decl.env.get("TOKEN").map(String::as_str), Some("${TOKEN}"));
        assert_eq!(decl.env.len(), 2);
        assert_eq!(decl.connect_timeout_ms, Some(2500));
        let loaded = parse(
            "t.toml",
            &server("url = \"http://h/mcp\"\nheaders = { Authorization = \"Bearer ${T}\" }"),
        )
        .expect("loads");
        assert_eq!(loaded.file.mcp_server["s"].headers.len(), 1);
        assert_eq!(
            codes(parse(
                "t.toml",
                &server("command = \"srv\"\nenv = { N = 1 }")
            )),
            ["E0103"]
        );
        assert_eq!(
            codes(parse(
                "t.toml",
                &server("command = \"srv\"\nenv = \"TOKEN=x\"")
            )),
            ["E0103"]
        );
    }

    #[test]
    fn settings_of_the_other_transport_are_refused() {
        let compile = |body: &str| {
            let source = format!("[mcp_server.s]\ndescription = \"a server\"\n{body}\n{ROW}");
            match crate::compile_str("t.toml", &source) {
                Ok(_) => Vec::new(),
                Err(ds) => ds.iter().map(|d| (d.code, d.message.clone())).collect(),
            }
        };
        let found = compile("url = \"http://h/mcp\"\nenv = { T = \"x\" }");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "E0421");
        assert!(
            found[0].1.contains("has `env` but no `command`"),
            "{found:?}"
        );
        let found = compile("command = \"srv\"\nheaders = { T = \"x\" }");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].1.contains("has `headers` but no `url`"),
            "{found:?}"
        );
        assert!(compile("command = \"srv\"\nenv = { T = \"x\" }").is_empty());
        for (body, key) in [("command = \"\"", "command"), ("url = \" \"", "url")] {
            let found = compile(body);
            assert_eq!(found.len(), 1, "{found:?}");
            assert_eq!(found[0].0, "E0421");
            assert!(
                found[0]
                    .1
                    .contains(&format!("`{key}` of `[mcp_server.s]` is empty")),
                "{found:?}"
            );
        }
    }

    #[test]
    fn every_schema_field_has_a_kind() {
        for field in model::tool_fields() {
            assert!(
                tool_field_kind(&field).is_some(),
                "tool field `{field}` has no loader"
            );
        }
        for table in ["mcp_server", "profile", "toolset", "preset"] {
            for field in model::table_fields(table).unwrap() {
                assert!(
                    table_field_kind(table, &field).is_some(),
                    "field `{field}` of `{table}` has no loader"
                );
            }
        }
    }

    #[test]
    fn loads_a_row_with_spans() {
        let loaded = parse("t.toml", ROW).expect("valid");
        assert_eq!(loaded.file.tool.len(), 1);
        let tool = &loaded.file.tool[0];
        assert_eq!(tool.name, "read_file");
        assert_eq!(tool.tier, Tier::Silent);
        assert_eq!(tool.source, "local");
        let spans = &loaded.tool_spans[0];
        assert_eq!(&ROW[spans.header.clone()], "[[tool]]");
        assert_eq!(&ROW[spans.value("tier")], "\"silent\"");
        assert_eq!(&ROW[spans.key("owner")], "owner");
        assert_eq!(&ROW[spans.item("toolsets", 0)], "\"core\"");
        assert_eq!(loaded.toolsets[0].name, "core");
        assert_eq!(&ROW[loaded.toolsets[0].spans.header.clone()], "core");
    }

    #[test]
    fn collects_every_load_error() {
        let source = ROW
            .replace("tier = \"silent\"", "tier = \"silnet\"\ntiers = 1")
            .replace("owner = \"files\"", "idempotent = \"yes\"")
            + "\n[profiles.x]\ndescription = \"x\"\n";
        let found = codes(parse("t.toml", &source));
        assert_eq!(found, vec!["E0104", "E0102", "E0101", "E0103", "E0105"]);
    }

    #[test]
    fn unknown_enum_value_suggests_the_closest() {
        let source = ROW.replace("\"read-only\"", "\"read_only\"");
        let ds = parse("t.toml", &source).unwrap_err();
        assert_eq!(ds[0].code, "E0102");
        assert!(ds[0]
            .help
            .as_deref()
            .unwrap()
            .starts_with("did you mean `read-only`?"));
    }

    #[test]
    fn syntax_error_is_one_diagnostic() {
        let ds = parse("t.toml", "[[tool]\nname = \"x\"\n").unwrap_err();
        assert_eq!(ds.len(), 1);
        assert_eq!(ds[0].code, "E0100");
    }

    #[test]
    fn input_schema_becomes_json() {
        let source = ROW.to_string()
            + "[tool.input_schema]\ntype = \"object\"\nproperties = { path = { type = \"string\" } }\n";
        let loaded = parse("t.toml", &source).expect("valid");
        assert_eq!(
            loaded.file.tool[0].input_schema,
            Some(serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}))
        );
    }

    #[test]
    fn server_named_local_or_loop_does_not_namespace_local_tools() {
        for server in ["local", "loop"] {
            let source = format!(
                "[mcp_server.{server}]\ndescription = \"d\"\ncommand = \"x\"\nnamespace = \"evil\"\n{ROW}"
            );
            let loaded = parse("t.toml", &source).expect("loads (E0424 is a validation error)");
            assert_eq!(loaded.file.tool[0].source, "local");
            assert_eq!(loaded.exported_name(0), "read_file", "server `{server}`");
        }
    }
}
