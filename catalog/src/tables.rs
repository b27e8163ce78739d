//! The derived tables: the one representation of a catalog that every consumer reads.
//!
//! A catalog compiled into a binary borrows these from `static` items emitted by
//! `toolcat_codegen::emit` (zero start-up cost); a catalog loaded from a file at run time owns them. Both are
//! the same type, [`Tables`], built from `Cow<'static, _>` columns, so the runtime has one code path.
//!
//! Layout rules (architecture invariants):
//! - tools are indexed `0..len` in the order of `tools.toml`; that order is the stable order in
//!   which definitions are sent to a model;
//! - a tool set is a bitset of `words = ceil(len / 64)` `u64` words, bit `i % 64` of word `i / 64`
//!   standing for tool `i`; a table of `K` sets is stored flat, `K * words` words, set `k` at
//!   `k * words..(k + 1) * words`;
//! - enum columns hold the `code()` of the model enums ([`crate::model::Tier`] and friends);
//! - the emitted declarations use `core`/`std` types only, so they compile in any crate.

use std::borrow::Cow;

use crate::model::{EffectKind, Exposure, Status, Tier, Visibility};

/// A list of strings that is either `'static` (compiled catalog) or owned (loaded catalog).
pub type Strs = Cow<'static, [Cow<'static, str>]>;
/// A flat table of bitsets, `words` `u64` words per set.
pub type Bits = Cow<'static, [u64]>;

/// Marker in [`Tables::source`] for a tool handled by a `#[tool]` function in the owning crate.
pub const SOURCE_LOCAL: u16 = u16::MAX;
/// Marker in [`Tables::source`] for a discovery meta-tool handled by the runtime.
pub const SOURCE_LOOP: u16 = u16::MAX - 1;

/// Declares [`Tables`] and [`Tables::columns`] from one list of columns, so every consumer that
/// handles all columns alike (the emitter's declarations, the layout check) follows this list.
///
/// Each entry is `field: Kind [Rows] "doc"`: the [`Column`] variant that borrows the field (which
/// also fixes the field's type), the [`Rows`] its entries are indexed by, and its documentation,
/// which the emitted declaration carries too (with its leading space, as `///` writes it).
macro_rules! tables {
    ($($field:ident: $kind:ident [$rows:ident] $doc:literal,)*) => {
        /// Every derived table of one catalog. Columns indexed by tool have `len` entries.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Tables {
            $(#[doc = $doc] pub $field: column_type!($kind),)*
        }

        impl Tables {
            /// Every column, in field order, with its name, documentation and shape.
            pub fn columns(&self) -> Vec<ColumnInfo<'_>> {
                vec![$(ColumnInfo {
                    name: stringify!($field),
                    doc: $doc,
                    rows: Rows::$rows,
                    column: column_value!($kind, self.$field),
                },)*]
            }
        }
    };
}

/// The field type of a column kind.
macro_rules! column_type {
    (Count) => { usize };
    (Strs) => { Strs };
    (StrLists) => { Cow<'static, [Strs]> };
    (U8s) => { Cow<'static, [u8]> };
    (U16s) => { Cow<'static, [u16]> };
    (U32s) => { Cow<'static, [u32]> };
    (U32Lists) => { Cow<'static, [Cow<'static, [u32]>]> };
    (OptU32s) => { Cow<'static, [Option<u32>]> };
    (OptStrs) => { Cow<'static, [Option<Cow<'static, str>>]> };
    (OptPairs) => { Cow<'static, [Option<(u32, u32)>]> };
    (Bits) => { Bits };
}

/// A column borrowed as its [`Column`] variant.
macro_rules! column_value {
    (Count, $value:expr) => {
        Column::Count($value)
    };
    ($kind:ident, $value:expr) => {
        Column::$kind(&$value)
    };
}

tables! {
    len: Count [Scalar] " Number of tools.",
    words: Count [Scalar] " `u64` words per bitset: `LEN.div_ceil(64)`.",
    review_inline: Count [Scalar]
        " Inline tools one turn may send before W0504 warns (`review_inline`; default 20).",

    // ---- per tool ----
    names: Strs [Tools] " Declared names (`name` in `tools.toml`), in `tools.toml` order.",
    exported_names: Strs [Tools]
        " Exported names: `NS__name` for tools of a namespaced server, else the declared name.",
    descriptions: Strs [Tools] " Descriptions, as the model reads them.",
    keywords: StrLists [Tools] " Search keywords of each tool.",
    owners: Strs [Tools] " Owners.",
    visibility: U8s [Tools] " `Visibility::code()` of each tool (0 inline, 1 discoverable).",
    tier: U8s [Tools] " `Tier::code()` of each tool (0 silent, 1 gated, 2 loop).",
    effect: U8s [Tools] " `EffectKind::code()` of each tool (0 read, 1 write, 2 destructive).",
    exposure: U8s [Tools]
        " `Exposure::code()` of each tool (0 read-only, 1 staging, 2 full, 3 excluded).",
    status: U8s [Tools] " `Status::code()` of each tool (0 active, 1 experimental, 2 deprecated).",
    idempotent: Bits [One] " Tools declared `idempotent = true` (one bitset).",
    open_world: Bits [One] " Tools declared `open_world = true` (one bitset).",
    code_mode: Bits [One]
        " Tools declared `code_mode = true`: a Code Mode program may call them (one bitset).",
    source: U16s [Tools]
        " Index into `SERVER_NAMES` of each tool's source; 65535 local, 65534 a runtime meta-tool.",
    requires: U32Lists [Tools] " Tool indices that come along whenever the tool becomes visible.",
    pair: OptU32s [Tools] " Index of the tool's pair twin.",
    replaced_by: OptU32s [Tools] " Index of the tool replacing a deprecated one.",
    removal: OptStrs [Tools] " Removal date (`YYYY-MM-DD`) of a deprecated tool.",
    rate_limit: OptPairs [Tools] " Rate limit as `(calls, window in seconds)`.",
    input_schema: OptStrs [Tools]
        " Declared input JSON Schema (JSON text) of tools served by an MCP server.",
    output_schema: OptStrs [Tools]
        " Declared output JSON Schema (JSON text, an object schema) of tools served by an MCP server.",
    remote_names: OptStrs [Tools]
        " The server's own name of a server tool whose row declares `remote_name` (calls send it).",
    timeout_ms: OptU32s [Tools]
        " Declared `timeout_ms`: the longest one call of the tool may run, in milliseconds.",

    // ---- profiles (the implicit `full` included, always last) ----
    profile_names: Strs [Profiles] " Profile names; the implicit `full` is last.",
    profile_descriptions: Strs [Profiles] " Profile descriptions.",
    profile_max_inline: OptU32s [Profiles] " Cap on the inline tools of each profile.",
    profile_max_tools: OptU32s [Profiles]
        " Cap on the definitions of one request of each profile: its `max_tools` or its `client`'s cap, the smaller.",
    profile_manifest_tokens: U32s [Profiles]
        " Token budget of each profile's deferred-tool manifest (`manifest_tokens`; 0: none).",
    profile_bits: Bits [Profiles] " Tools each profile owns: `WORDS` words per profile.",

    // ---- toolsets ----
    toolset_names: Strs [Toolsets] " Toolset names.",
    toolset_descriptions: Strs [Toolsets] " Toolset descriptions.",
    toolset_bits: Bits [Toolsets]
        " Members of each toolset, `includes` expanded: `WORDS` words per toolset.",

    // ---- presets ----
    preset_names: Strs [Presets] " Preset names.",
    preset_descriptions: Strs [Presets] " Preset descriptions.",
    preset_profile: U32s [Presets] " Index into `PROFILE_NAMES` of each preset's profile.",
    preset_toolsets: U32Lists [Presets]
        " Indices into `TOOLSET_NAMES` of each preset's active toolsets.",
    preset_max_tools: OptU32s [Presets]
        " Cap on the definitions of one request of each preset: the smallest of its own and its profile's.",

    // ---- MCP servers ----
    server_names: Strs [Servers] " MCP server names.",
    server_descriptions: Strs [Servers] " MCP server descriptions.",
    server_namespaces: OptStrs [Servers]
        " Namespace of each MCP server (prefix of its tools' exported names).",
    server_commands: OptStrs [Servers] " Launch command of each MCP server (stdio transport).",
    server_args: StrLists [Servers] " Arguments of each MCP server's launch command.",
    server_urls: OptStrs [Servers] " Endpoint of each MCP server (streamable HTTP transport).",

    // ---- sets by attribute, one bitset per enum value, in code order ----
    tier_bits: Bits [Tiers] " Tools of each tier, in code order: `WORDS` words per tier.",
    effect_bits: Bits [Effects] " Tools of each effect, in code order: `WORDS` words per effect.",
    scope_bits: Bits [Scopes]
        " Tools listed by each MCP scope (read-only, staging, full): `WORDS` words per scope.",
    visibility_bits: Bits [Visibilities]
        " Tools of each visibility, in code order: `WORDS` words per visibility.",
    status_bits: Bits [Statuses] " Tools of each status, in code order: `WORDS` words per status.",
}

/// One column of [`Tables`], borrowed: its field name, its documentation, what its entries are
/// indexed by, and its values.
#[derive(Debug, Clone, Copy)]
pub struct ColumnInfo<'a> {
    /// The field name (`names`, `tier_bits`, …); emitted declarations are named in upper case.
    pub name: &'static str,
    /// The documentation, each line with its leading space.
    pub doc: &'static str,
    pub rows: Rows,
    pub column: Column<'a>,
}

/// The values of one column, by kind.
#[derive(Debug, Clone, Copy)]
pub enum Column<'a> {
    /// A number (`len`, `words`).
    Count(usize),
    Strs(&'a [Cow<'static, str>]),
    StrLists(&'a [Strs]),
    U8s(&'a [u8]),
    U16s(&'a [u16]),
    U32s(&'a [u32]),
    U32Lists(&'a [Cow<'static, [u32]>]),
    OptU32s(&'a [Option<u32>]),
    OptStrs(&'a [Option<Cow<'static, str>>]),
    /// `(calls, window in seconds)` pairs.
    OptPairs(&'a [Option<(u32, u32)>]),
    /// A flat table of bitsets, `words` words per set.
    Bits(&'a [u64]),
}

impl Column<'_> {
    /// Number of entries (words of a bitset table); `None` for a number.
    pub fn entries(&self) -> Option<usize> {
        Some(match self {
            Column::Count(_) => return None,
            Column::Strs(v) => v.len(),
            Column::StrLists(v) => v.len(),
            Column::U8s(v) => v.len(),
            Column::U16s(v) => v.len(),
            Column::U32s(v) => v.len(),
            Column::U32Lists(v) => v.len(),
            Column::OptU32s(v) => v.len(),
            Column::OptStrs(v) => v.len(),
            Column::OptPairs(v) => v.len(),
            Column::Bits(v) => v.len(),
        })
    }
}

/// What the entries of a column are indexed by; for a bitset table, what its sets stand for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// Not a list (`len`, `words`).
    Scalar,
    Tools,
    Profiles,
    Toolsets,
    Presets,
    Servers,
    /// One set.
    One,
    /// One set per [`Tier`] value.
    Tiers,
    /// One set per [`EffectKind`] value.
    Effects,
    /// One set per MCP scope: every [`Exposure`] but `excluded`.
    Scopes,
    /// One set per [`Visibility`] value.
    Visibilities,
    /// One set per [`Status`] value.
    Statuses,
}

impl Tables {
    /// How many entries (sets, for a bitset table) `rows` stands for in these tables; 0 for
    /// [`Rows::Scalar`].
    pub fn rows(&self, rows: Rows) -> usize {
        match rows {
            Rows::Scalar => 0,
            Rows::Tools => self.len,
            Rows::Profiles => self.profile_names.len(),
            Rows::Toolsets => self.toolset_names.len(),
            Rows::Presets => self.preset_names.len(),
            Rows::Servers => self.server_names.len(),
            Rows::One => 1,
            Rows::Tiers => Tier::ALL.len(),
            Rows::Effects => EffectKind::ALL.len(),
            Rows::Scopes => Exposure::ALL.len() - 1,
            Rows::Visibilities => Visibility::ALL.len(),
            Rows::Statuses => Status::ALL.len(),
        }
    }

    /// Checks the shape of every column: `words` is `len.div_ceil(64)`, there is a profile (the
    /// implicit `full`), each column has one entry per row of its [`Rows`], each bitset table
    /// `words` words per set, and no set has a bit past the last tool.
    ///
    /// # Errors
    /// What is wrong first, naming the column.
    pub fn check_layout(&self) -> Result<(), String> {
        let (len, w) = (self.len, self.words);
        if w != len.div_ceil(64) {
            return Err(format!("`words` is {w}, expected {}", len.div_ceil(64)));
        }
        if self.profile_names.is_empty() {
            return Err(
                "there is no profile; the implicit `full` profile must be last".to_string(),
            );
        }
        // Bit `i` for `i >= len` must be clear, or iterating a set would yield a tool that is not
        // there.
        let padding = if len.is_multiple_of(64) {
            0
        } else {
            !0u64 << (len % 64)
        };
        for c in self.columns() {
            let (name, expected) = (c.name, self.rows(c.rows));
            match c.column {
                Column::Count(_) => {}
                Column::Bits(table) => {
                    if table.len() != expected * w {
                        return Err(format!(
                            "bitset table `{name}` has {} words, expected {} ({expected} sets of {w})",
                            table.len(),
                            expected * w
                        ));
                    }
                    if w > 0 {
                        for k in 0..expected {
                            if table[k * w + w - 1] & padding != 0 {
                                return Err(format!(
                                    "set {k} of `{name}` has bits past the last tool"
                                ));
                            }
                        }
                    }
                }
                column => {
                    let n = column.entries().unwrap_or(0);
                    if n != expected {
                        return Err(if c.rows == Rows::Tools {
                            format!("column `{name}` has {n} entries for {len} tools")
                        } else {
                            format!("`{name}` has {n} entries, expected {expected}")
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// The bitset `k` of a flat table.
    pub fn set<'a>(&self, table: &'a [u64], k: usize) -> &'a [u64] {
        &table[k * self.words..(k + 1) * self.words]
    }
}

/// Tests bit `i` of a bitset.
#[inline]
pub fn bit(set: &[u64], i: usize) -> bool {
    set[i / 64] & (1u64 << (i % 64)) != 0
}

/// Sets bit `i` of a bitset.
#[inline]
pub fn set_bit(set: &mut [u64], i: usize) {
    set[i / 64] |= 1u64 << (i % 64);
}

/// Iterates the indices of the set bits, ascending.
pub fn ones(set: &[u64]) -> impl Iterator<Item = usize> + '_ {
    set.iter().enumerate().flat_map(|(w, &word)| {
        let mut rest = word;
        std::iter::from_fn(move || {
            if rest == 0 {
                return None;
            }
            let b = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            Some(w * 64 + b)
        })
    })
}
