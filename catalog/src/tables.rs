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
//! - this module depends on `std` only, so the emitted declarations can be compiled anywhere.

use std::borrow::Cow;

/// A list of strings that is either `'static` (compiled catalog) or owned (loaded catalog).
pub type Strs = Cow<'static, [Cow<'static, str>]>;
/// A flat table of bitsets, `words` `u64` words per set.
pub type Bits = Cow<'static, [u64]>;

/// Marker in [`Tables::source`] for a tool handled by a `#[tool]` function in the owning crate.
pub const SOURCE_LOCAL: u16 = u16::MAX;
/// Marker in [`Tables::source`] for a discovery meta-tool handled by the runtime.
pub const SOURCE_LOOP: u16 = u16::MAX - 1;

/// Every derived table of one catalog. Columns indexed by tool have `len` entries.
#[derive(Debug, Clone, PartialEq)]
pub struct Tables {
    /// Number of tools.
    pub len: usize,
    /// `u64` words per bitset: `len.div_ceil(64)`.
    pub words: usize,

    // ---- per tool ----
    /// Declared names (`name` in `tools.toml`).
    pub names: Strs,
    /// Exported names: `NS__name` for tools of a namespaced server, else the declared name.
    pub exported_names: Strs,
    /// Descriptions, as the model reads them.
    pub descriptions: Strs,
    /// Search keywords of each tool.
    pub keywords: Cow<'static, [Strs]>,
    /// Owners.
    pub owners: Strs,
    /// `Visibility::code()` of each tool.
    pub visibility: Cow<'static, [u8]>,
    /// `Tier::code()` of each tool.
    pub tier: Cow<'static, [u8]>,
    /// `EffectKind::code()` of each tool.
    pub effect: Cow<'static, [u8]>,
    /// `Exposure::code()` of each tool.
    pub exposure: Cow<'static, [u8]>,
    /// `Status::code()` of each tool.
    pub status: Cow<'static, [u8]>,
    /// Tools declared `idempotent = true` (one bitset).
    pub idempotent: Bits,
    /// Tools declared `open_world = true` (one bitset).
    pub open_world: Bits,
    /// Index into `servers` of each tool's source, or [`SOURCE_LOCAL`] / [`SOURCE_LOOP`].
    pub source: Cow<'static, [u16]>,
    /// Tool indices that come along whenever the tool becomes visible (direct `requires` only).
    pub requires: Cow<'static, [Cow<'static, [u32]>]>,
    /// Index of the tool's pair twin.
    pub pair: Cow<'static, [Option<u32>]>,
    /// Index of the tool replacing a deprecated one.
    pub replaced_by: Cow<'static, [Option<u32>]>,
    /// Removal date (`YYYY-MM-DD`) of a deprecated tool.
    pub removal: Cow<'static, [Option<Cow<'static, str>>]>,
    /// Rate limit as `(calls, window in seconds)`.
    pub rate_limit: Cow<'static, [Option<(u32, u32)>]>,
    /// Declared input JSON Schema (JSON text) of tools whose source is a server; `None` for local
    /// tools (their schema comes from the handler's argument type) and meta-tools.
    pub input_schema: Cow<'static, [Option<Cow<'static, str>>]>,

    // ---- profiles (the implicit `full` included, always last) ----
    pub profile_names: Strs,
    pub profile_descriptions: Strs,
    pub profile_max_inline: Cow<'static, [Option<u32>]>,
    /// Tools each profile owns, flat.
    pub profile_bits: Bits,

    // ---- toolsets ----
    pub toolset_names: Strs,
    pub toolset_descriptions: Strs,
    /// Members of each toolset with `includes` expanded, flat.
    pub toolset_bits: Bits,

    // ---- presets ----
    pub preset_names: Strs,
    pub preset_descriptions: Strs,
    /// Index into `profile_names` of each preset's profile.
    pub preset_profile: Cow<'static, [u32]>,
    /// Indices into `toolset_names` of each preset's active toolsets.
    pub preset_toolsets: Cow<'static, [Cow<'static, [u32]>]>,

    // ---- MCP servers ----
    pub server_names: Strs,
    pub server_descriptions: Strs,
    pub server_namespaces: Cow<'static, [Option<Cow<'static, str>>]>,
    pub server_commands: Cow<'static, [Option<Cow<'static, str>>]>,
    pub server_args: Cow<'static, [Strs]>,
    pub server_urls: Cow<'static, [Option<Cow<'static, str>>]>,

    // ---- sets by attribute, one bitset per enum value, in code order ----
    /// Per `Tier` value.
    pub tier_bits: Bits,
    /// Per `EffectKind` value.
    pub effect_bits: Bits,
    /// Per MCP scope (`read-only`, `staging`, `full`): the tools that scope lists. Nested, so
    /// `read-only` ⊆ `staging` ⊆ `full`; `excluded` tools are in none.
    pub scope_bits: Bits,
    /// Per `Visibility` value.
    pub visibility_bits: Bits,
    /// Per `Status` value.
    pub status_bits: Bits,
}

impl Tables {
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
