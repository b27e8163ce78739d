//! What a change to `tools.toml` does: the semantic comparison of two catalogs' derived
//! [`Tables`], the representation the runtime reads, so a review cannot disagree with what runs.
//!
//! [`diff`] reports, per tool, every answer that changed (ownership per profile, toolsets,
//! visibility, tier, effect, `idempotent`, `open_world`, exposure with the MCP scopes that list
//! the tool, `requires`, `pair`, rate limit, lifecycle, source, owner, description, keywords,
//! input schema, output schema, `remote_name` and `timeout_ms`), the tools added, removed and renamed, and the
//! changes of the profile (`max_inline`, effective `max_tools`, `manifest_tokens`), toolset,
//! preset (effective `max_tools`) and MCP server tables and of the top-level settings
//! (`review_inline`, as the entry `settings` of table `catalog`). A tool's `remote_name` is
//! compared as the server tool its calls run: the row's `remote_name`, else its declared name
//! (empty for a local tool). An effective `max_tools` is the cap that holds: the smaller of the
//! entry's `max_tools` and its `client`'s cap, a preset's bounded by its profile's too. Tools are
//! matched by exported name (the name a model or MCP client calls). A removed tool and an added
//! one are one renamed tool when every other field is equal (the server tool it runs included),
//! or else when they have the same identity: the same source and, for a server tool, the same
//! server tool its calls run (`remote_name`, else the declared name), for a local tool or a
//! meta-tool the same description. A renamed tool lists its changed fields and is compared field
//! by field like any kept tool, so every widening that comes with a rename is flagged. Each
//! removed tool pairs with at most one added tool (the first, in the new catalog's order).
//!
//! **Widening** is a change that lets more callers reach or run a tool with less in the way.
//! A *restricted* profile is any profile but the implicit `full` (which owns every tool by
//! definition); a *restricted* MCP scope is `read-only` or `staging`. The kinds
//! ([`WideningKind`]), each flagged once per tool (and profile or scope):
//! - `profile_gained`: a tool in both catalogs is owned by a restricted profile that did not own
//!   it (a new profile included);
//! - `scope_gained`: a tool in both catalogs is listed by an MCP scope that did not list it
//!   (`read-only` → `full` gains nothing; `full` → `read-only` gains `read-only` and `staging`;
//!   `excluded` → anything gains every scope it is now listed by);
//! - `gate_lost`: a tool's tier goes from `gated` to `silent` (it runs without the authorization
//!   hook);
//! - `code_mode_gained`: a tool in both catalogs becomes `code_mode = true` (a Code Mode program
//!   may now call it, without a model step between calls);
//! - `destructive_in_restricted`: a tool becomes `destructive` while a restricted profile owns it;
//! - `added_to_profile`, `added_to_scope`: a new tool owned by a restricted profile, or listed by
//!   a restricted MCP scope (a new tool reaching only `full` and the `full` scope is what adding a
//!   tool means, and is reported as added, not flagged);
//! - `undeprecated`: a tool leaves `deprecated`, so it is planned, listed and run again;
//! - `remote_retargeted`: a tool in both catalogs now runs another server tool (its `remote_name`,
//!   or its declared name when it has none, changed; or a local tool became a server tool) under
//!   the same declared tier, effect and exposure, which vouched for the server tool it ran before;
//! - `rate_limit_loosened`: a tool's rate limit is removed or allows more calls per second;
//! - `cap_raised`: a profile's `max_inline`, or a profile's or preset's effective `max_tools`, is
//!   raised or removed (more definitions reach a model in one request than were reviewed);
//! - `preset_profile_widened`: a preset runs under another profile that owns a tool (present in
//!   both catalogs) the old one did not.
//!
//! Not widening (reported as changes only): visibility (`discoverable` ↔ `inline` changes what a
//! model is shown, not what it may run), toolset membership and `includes` (attention, not
//! capability; ownership still bounds every plan), `requires` (the required tool stays inside each
//! profile, E0420), `timeout_ms` (how long a call may run, not who may run it), `manifest_tokens`
//! (the deferred-tool manifest names tools the profile already owns), `review_inline` (a review
//! threshold, not a run-time bound), descriptions, narrowing changes and removals.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::model::{EffectKind, Exposure, McpServerDecl, Status, Tier, Visibility};
use crate::tables::{bit, ones, Tables, SOURCE_LOCAL, SOURCE_LOOP};

/// Everything that differs between two catalogs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// Tool changes: changed, added and renamed tools in the new catalog's order, then removed
    /// tools in the old catalog's order.
    pub tools: Vec<ToolChange>,
    /// Changes of profiles, toolsets, presets, MCP servers and the top-level settings, in that
    /// order, each in its new declaration order, then removed entries.
    pub tables: Vec<TableChange>,
    /// The widening changes among them (see the module documentation), in the order of `tools`
    /// then `tables`.
    pub widenings: Vec<Widening>,
}

impl Diff {
    /// Whether the two catalogs give the same answers.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.tables.is_empty()
    }
}

/// How an entry (a tool or a table entry) changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Removed,
    /// A tool under a new name (tools only): every other field equal, or the same identity (see
    /// the module documentation) with the changed fields listed.
    Renamed,
    Changed,
}

impl ChangeKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Renamed => "renamed",
            ChangeKind::Changed => "changed",
        }
    }
}

/// One field's change. `old` and `new` are the field's text (a list joined with `, `; empty when
/// unset); for list fields `added` and `removed` hold the items that came and went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldChange {
    pub field: &'static str,
    pub old: String,
    pub new: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
}

/// A tool that was added, removed, renamed or changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolChange {
    /// The exported name (the old one for a removed tool, the new one otherwise).
    pub tool: String,
    pub change: ChangeKind,
    /// The old exported name of a renamed tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// The changed fields (a renamed tool's too, empty when only the name changed); for an added
    /// (removed) tool its answers, with `old` (`new`) empty.
    pub fields: Vec<FieldChange>,
}

/// A profile, toolset, preset or MCP server that was added, removed or changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableChange {
    /// `profile`, `toolset`, `preset`, `mcp_server` or `catalog` (the top-level settings, one
    /// entry named `settings`).
    pub table: &'static str,
    pub name: String,
    pub change: ChangeKind,
    pub fields: Vec<FieldChange>,
}

/// The kinds of widening change (see the module documentation for each rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WideningKind {
    ProfileGained,
    ScopeGained,
    GateLost,
    CodeModeGained,
    DestructiveInRestricted,
    AddedToProfile,
    AddedToScope,
    Undeprecated,
    RemoteRetargeted,
    ServerRetargeted,
    RateLimitLoosened,
    CapRaised,
    PresetProfileWidened,
}

impl WideningKind {
    /// Every kind, in the order of the module documentation.
    pub const ALL: &'static [WideningKind] = &[
        WideningKind::ProfileGained,
        WideningKind::ScopeGained,
        WideningKind::GateLost,
        WideningKind::CodeModeGained,
        WideningKind::DestructiveInRestricted,
        WideningKind::AddedToProfile,
        WideningKind::AddedToScope,
        WideningKind::Undeprecated,
        WideningKind::RemoteRetargeted,
        WideningKind::ServerRetargeted,
        WideningKind::RateLimitLoosened,
        WideningKind::CapRaised,
        WideningKind::PresetProfileWidened,
    ];

    /// The name used in JSON and the rendered reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            WideningKind::ProfileGained => "profile_gained",
            WideningKind::ScopeGained => "scope_gained",
            WideningKind::GateLost => "gate_lost",
            WideningKind::CodeModeGained => "code_mode_gained",
            WideningKind::DestructiveInRestricted => "destructive_in_restricted",
            WideningKind::AddedToProfile => "added_to_profile",
            WideningKind::AddedToScope => "added_to_scope",
            WideningKind::Undeprecated => "undeprecated",
            WideningKind::RemoteRetargeted => "remote_retargeted",
            WideningKind::ServerRetargeted => "server_retargeted",
            WideningKind::RateLimitLoosened => "rate_limit_loosened",
            WideningKind::CapRaised => "cap_raised",
            WideningKind::PresetProfileWidened => "preset_profile_widened",
        }
    }
}

/// One widening change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Widening {
    pub kind: WideningKind,
    /// The tool (new exported name), profile or preset it is about.
    pub subject: String,
    /// The profile, MCP scope or field it concerns, when the kind has one: the profile of
    /// `profile_gained`, `destructive_in_restricted`, `added_to_profile` and
    /// `preset_profile_widened` (the new profile), the scope of `scope_gained` and
    /// `added_to_scope`, the field of `cap_raised` (`max_inline` or `max_tools`), the changed
    /// fields of `server_retargeted` (`command`, `args`, `url`, joined with `, `).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// One sentence saying what widened.
    pub message: String,
}

/// The name of the one entry of table `catalog` (the top-level settings).
const SETTINGS: [std::borrow::Cow<'static, str>; 1] = [std::borrow::Cow::Borrowed("settings")];

/// The MCP scopes, in the order of [`Tables::scope_bits`].
const SCOPES: [Exposure; 3] = [Exposure::ReadOnly, Exposure::Staging, Exposure::Full];

/// Compares `old` with `new` (both tables of validated catalogs).
pub fn diff(old: &Tables, new: &Tables) -> Diff {
    let old_fields: Vec<Vec<(&'static str, Val)>> =
        (0..old.len).map(|i| tool_fields(old, i)).collect();
    let new_fields: Vec<Vec<(&'static str, Val)>> =
        (0..new.len).map(|j| tool_fields(new, j)).collect();
    let old_by_name: HashMap<&str, usize> = name_index(&old.exported_names);
    // `matched[j]`: the old tool new tool `j` is (same exported name, or renamed).
    let mut matched: Vec<Option<usize>> = (0..new.len)
        .map(|j| old_by_name.get(&*new.exported_names[j]).copied())
        .collect();
    let mut taken = vec![false; old.len];
    for i in matched.iter().flatten() {
        taken[*i] = true;
    }
    let mut renamed = vec![false; new.len];
    for j in 0..new.len {
        if matched[j].is_some() {
            continue;
        }
        if let Some(i) = (0..old.len).find(|&i| !taken[i] && old_fields[i] == new_fields[j]) {
            taken[i] = true;
            matched[j] = Some(i);
            renamed[j] = true;
        }
    }
    // Renamed and changed: the same identity (see the module documentation), compared field by
    // field like any kept tool, so a widening that comes with a rename is flagged.
    for j in 0..new.len {
        if matched[j].is_some() {
            continue;
        }
        let id = identity(new, j);
        if let Some(i) = (0..old.len).find(|&i| !taken[i] && identity(old, i) == id) {
            taken[i] = true;
            matched[j] = Some(i);
            renamed[j] = true;
        }
    }

    let mut tools = Vec::new();
    for j in 0..new.len {
        let name = new.exported_names[j].to_string();
        match matched[j] {
            None => tools.push(ToolChange {
                tool: name,
                change: ChangeKind::Added,
                renamed_from: None,
                fields: summary(&new_fields[j], false),
            }),
            Some(i) if renamed[j] => tools.push(ToolChange {
                tool: name,
                change: ChangeKind::Renamed,
                renamed_from: Some(old.exported_names[i].to_string()),
                fields: changed(&old_fields[i], &new_fields[j]),
            }),
            Some(i) => {
                let fields = changed(&old_fields[i], &new_fields[j]);
                if !fields.is_empty() {
                    tools.push(ToolChange {
                        tool: name,
                        change: ChangeKind::Changed,
                        renamed_from: None,
                        fields,
                    });
                }
            }
        }
    }
    for i in (0..old.len).filter(|&i| !taken[i]) {
        tools.push(ToolChange {
            tool: old.exported_names[i].to_string(),
            change: ChangeKind::Removed,
            renamed_from: None,
            fields: summary(&old_fields[i], true),
        });
    }

    let mut tables = Vec::new();
    let profile = |t: &Tables, k: usize| profile_fields(t, k);
    entries(
        &mut tables,
        "profile",
        old,
        new,
        |t| &t.profile_names,
        profile,
    );
    entries(
        &mut tables,
        "toolset",
        old,
        new,
        |t| &t.toolset_names,
        toolset_fields,
    );
    entries(
        &mut tables,
        "preset",
        old,
        new,
        |t| &t.preset_names,
        preset_fields,
    );
    entries(
        &mut tables,
        "mcp_server",
        old,
        new,
        |t| &t.server_names,
        server_fields,
    );
    entries(
        &mut tables,
        "catalog",
        old,
        new,
        |_| &SETTINGS,
        settings_fields,
    );

    let widenings = widenings(old, new, &matched);
    Diff {
        tools,
        tables,
        widenings,
    }
}

/// A field value: one text or a list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Val {
    One(String),
    Many(Vec<String>),
}

impl Val {
    fn text(&self) -> String {
        match self {
            Val::One(s) => s.clone(),
            Val::Many(items) => items.join(", "),
        }
    }
}

fn name_index<'a>(names: &'a [std::borrow::Cow<'static, str>]) -> HashMap<&'a str, usize> {
    names.iter().enumerate().map(|(i, n)| (&**n, i)).collect()
}

/// The restricted profiles (every one but the implicit `full`, which is last) owning tool `i`.
fn restricted_owners(t: &Tables, i: usize) -> Vec<String> {
    (0..t.profile_names.len() - 1)
        .filter(|&k| bit(t.set(&t.profile_bits, k), i))
        .map(|k| t.profile_names[k].to_string())
        .collect()
}

fn scopes_listing(t: &Tables, i: usize) -> Vec<Exposure> {
    SCOPES
        .iter()
        .copied()
        .filter(|s| bit(t.set(&t.scope_bits, s.code() as usize), i))
        .collect()
}

fn enum_text<E: std::fmt::Display>(code: u8, from: fn(u8) -> Option<E>) -> String {
    from(code).map_or_else(|| format!("code {code}"), |e| e.to_string())
}

/// `N/sec`, `N/min`, `N/hour` (or `N/Ws` for another window) of a `(calls, window)` pair.
fn rate_text(limit: Option<(u32, u32)>) -> String {
    match limit {
        None => String::new(),
        Some((calls, 1)) => format!("{calls}/sec"),
        Some((calls, 60)) => format!("{calls}/min"),
        Some((calls, 3600)) => format!("{calls}/hour"),
        Some((calls, window)) => format!("{calls}/{window}s"),
    }
}

fn tool_name(t: &Tables, index: Option<u32>) -> String {
    index
        .and_then(|i| t.exported_names.get(i as usize))
        .map(|n| n.to_string())
        .unwrap_or_default()
}

/// Every compared field of tool `i`, in report order. The name is not one of them (it is the
/// key; renames are matched as the module documentation says).
fn tool_fields(t: &Tables, i: usize) -> Vec<(&'static str, Val)> {
    let source = source_text(t, i);
    let toolsets = (0..t.toolset_names.len())
        .filter(|&k| bit(t.set(&t.toolset_bits, k), i))
        .map(|k| t.toolset_names[k].to_string())
        .collect();
    let exposure = enum_text(t.exposure[i], Exposure::from_code);
    let scopes: Vec<String> = scopes_listing(t, i).iter().map(|s| s.to_string()).collect();
    let exposure = if scopes.is_empty() {
        format!("{exposure} (no scope)")
    } else {
        format!("{exposure} (scopes {})", scopes.join(", "))
    };
    let flag = |set: &[u64]| Val::One(bit(set, i).to_string());
    vec![
        ("profiles", Val::Many(restricted_owners(t, i))),
        ("toolsets", Val::Many(toolsets)),
        (
            "visibility",
            Val::One(enum_text(t.visibility[i], Visibility::from_code)),
        ),
        ("tier", Val::One(enum_text(t.tier[i], Tier::from_code))),
        (
            "effect",
            Val::One(enum_text(t.effect[i], EffectKind::from_code)),
        ),
        ("idempotent", flag(&t.idempotent)),
        ("open_world", flag(&t.open_world)),
        ("code_mode", flag(&t.code_mode)),
        ("exposure", Val::One(exposure)),
        (
            "requires",
            Val::Many(
                t.requires[i]
                    .iter()
                    .map(|&r| tool_name(t, Some(r)))
                    .collect(),
            ),
        ),
        ("pair", Val::One(tool_name(t, t.pair[i]))),
        ("rate_limit", Val::One(rate_text(t.rate_limit[i]))),
        (
            "status",
            Val::One(enum_text(t.status[i], Status::from_code)),
        ),
        ("replaced_by", Val::One(tool_name(t, t.replaced_by[i]))),
        (
            "removal",
            Val::One(t.removal[i].as_deref().unwrap_or_default().to_string()),
        ),
        ("source", Val::One(source)),
        ("owner", Val::One(t.owners[i].to_string())),
        ("description", Val::One(t.descriptions[i].to_string())),
        (
            "keywords",
            Val::Many(t.keywords[i].iter().map(|k| k.to_string()).collect()),
        ),
        (
            "input_schema",
            Val::One(t.input_schema[i].as_deref().unwrap_or_default().to_string()),
        ),
        (
            "output_schema",
            Val::One(
                t.output_schema[i]
                    .as_deref()
                    .unwrap_or_default()
                    .to_string(),
            ),
        ),
        ("remote_name", Val::One(remote_name(t, i).to_string())),
        ("timeout_ms", Val::One(opt_text(t.timeout_ms[i]))),
    ]
}

/// What makes tool `i` the same tool under another name: its source (`local`, `loop` or the
/// server's name) with, for a server tool, the server tool its calls run ([`remote_name`]), and
/// for a local tool or a meta-tool its description.
fn identity(t: &Tables, i: usize) -> (String, &str) {
    let source = source_text(t, i);
    match t.source[i] {
        SOURCE_LOCAL | SOURCE_LOOP => (source, &t.descriptions[i]),
        _ => (source, remote_name(t, i)),
    }
}

/// `local`, `loop` or the name of the MCP server tool `i` comes from.
fn source_text(t: &Tables, i: usize) -> String {
    match t.source[i] {
        SOURCE_LOCAL => "local".to_string(),
        SOURCE_LOOP => "loop".to_string(),
        s => t
            .server_names
            .get(s as usize)
            .map(|n| n.to_string())
            .unwrap_or_default(),
    }
}

/// The server tool a call of tool `i` runs: its `remote_name`, else its declared name, as the
/// runtime sends it; empty for a local tool or a meta-tool.
fn remote_name(t: &Tables, i: usize) -> &str {
    match t.source[i] {
        SOURCE_LOCAL | SOURCE_LOOP => "",
        _ => t.remote_names[i].as_deref().unwrap_or(&t.names[i]),
    }
}

/// A number's text, empty when unset.
fn opt_text(v: Option<u32>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// The fields an added or removed tool is summarised by: who owns it, where it shows, how it runs.
const SUMMARY_FIELDS: [&str; 8] = [
    "profiles",
    "toolsets",
    "visibility",
    "tier",
    "effect",
    "exposure",
    "status",
    "source",
];

fn summary(fields: &[(&'static str, Val)], removed: bool) -> Vec<FieldChange> {
    fields
        .iter()
        .filter(|(f, _)| SUMMARY_FIELDS.contains(f))
        .map(|(field, v)| {
            let (old, new) = if removed {
                (v.clone(), Val::One(String::new()))
            } else {
                (Val::One(String::new()), v.clone())
            };
            field_change(field, &old, &new)
        })
        .collect()
}

fn field_change(field: &'static str, old: &Val, new: &Val) -> FieldChange {
    let (added, removed) = match (old, new) {
        (Val::Many(a), Val::Many(b)) => (
            b.iter().filter(|x| !a.contains(x)).cloned().collect(),
            a.iter().filter(|x| !b.contains(x)).cloned().collect(),
        ),
        _ => (Vec::new(), Vec::new()),
    };
    FieldChange {
        field,
        old: old.text(),
        new: new.text(),
        added,
        removed,
    }
}

fn changed(old: &[(&'static str, Val)], new: &[(&'static str, Val)]) -> Vec<FieldChange> {
    old.iter()
        .zip(new)
        .filter(|((_, a), (_, b))| a != b)
        .map(|((field, a), (_, b))| field_change(field, a, b))
        .collect()
}

fn profile_fields(t: &Tables, k: usize) -> Vec<(&'static str, Val)> {
    let owned: Vec<usize> = ones(t.set(&t.profile_bits, k)).collect();
    let inline = owned
        .iter()
        .filter(|&&i| t.visibility[i] == Visibility::Inline.code())
        .count();
    vec![
        (
            "description",
            Val::One(t.profile_descriptions[k].to_string()),
        ),
        ("max_inline", Val::One(opt_text(t.profile_max_inline[k]))),
        ("max_tools", Val::One(opt_text(t.profile_max_tools[k]))),
        (
            "manifest_tokens",
            Val::One(t.profile_manifest_tokens[k].to_string()),
        ),
        ("tools owned", Val::One(owned.len().to_string())),
        ("inline tools owned", Val::One(inline.to_string())),
    ]
}

fn toolset_fields(t: &Tables, k: usize) -> Vec<(&'static str, Val)> {
    vec![
        (
            "description",
            Val::One(t.toolset_descriptions[k].to_string()),
        ),
        (
            "tools",
            Val::Many(
                ones(t.set(&t.toolset_bits, k))
                    .map(|i| t.exported_names[i].to_string())
                    .collect(),
            ),
        ),
    ]
}

fn preset_fields(t: &Tables, k: usize) -> Vec<(&'static str, Val)> {
    vec![
        (
            "description",
            Val::One(t.preset_descriptions[k].to_string()),
        ),
        (
            "profile",
            Val::One(t.profile_names[t.preset_profile[k] as usize].to_string()),
        ),
        (
            "toolsets",
            Val::Many(
                t.preset_toolsets[k]
                    .iter()
                    .map(|&s| t.toolset_names[s as usize].to_string())
                    .collect(),
            ),
        ),
        ("max_tools", Val::One(opt_text(t.preset_max_tools[k]))),
    ]
}

/// The catalog's top-level settings, reported as the one entry `settings` of table `catalog`.
fn settings_fields(t: &Tables, _: usize) -> Vec<(&'static str, Val)> {
    vec![("review_inline", Val::One(t.review_inline.to_string()))]
}

fn server_fields(t: &Tables, k: usize) -> Vec<(&'static str, Val)> {
    let opt = |v: &Option<std::borrow::Cow<'static, str>>| {
        Val::One(v.as_deref().unwrap_or_default().to_string())
    };
    vec![
        (
            "description",
            Val::One(t.server_descriptions[k].to_string()),
        ),
        ("namespace", opt(&t.server_namespaces[k])),
        ("command", opt(&t.server_commands[k])),
        (
            "args",
            Val::Many(t.server_args[k].iter().map(|a| a.to_string()).collect()),
        ),
        ("url", opt(&t.server_urls[k])),
    ]
}

/// The changes of one side table, matched by name.
fn entries(
    out: &mut Vec<TableChange>,
    table: &'static str,
    old: &Tables,
    new: &Tables,
    names: fn(&Tables) -> &[std::borrow::Cow<'static, str>],
    fields: impl Fn(&Tables, usize) -> Vec<(&'static str, Val)>,
) {
    let old_by_name = name_index(names(old));
    let new_by_name = name_index(names(new));
    for (k, name) in names(new).iter().enumerate() {
        let new_fields = fields(new, k);
        let (change, changes) = match old_by_name.get(&**name) {
            None => (
                ChangeKind::Added,
                new_fields
                    .iter()
                    .map(|(f, v)| field_change(f, &Val::One(String::new()), v))
                    .collect(),
            ),
            Some(&o) => (ChangeKind::Changed, changed(&fields(old, o), &new_fields)),
        };
        if change == ChangeKind::Added || !changes.is_empty() {
            out.push(TableChange {
                table,
                name: name.to_string(),
                change,
                fields: changes,
            });
        }
    }
    for name in names(old)
        .iter()
        .filter(|n| !new_by_name.contains_key(&***n))
    {
        out.push(TableChange {
            table,
            name: name.to_string(),
            change: ChangeKind::Removed,
            fields: Vec::new(),
        });
    }
}

/// Calls per second of a rate limit, compared exactly: `a` allows more calls than `b`.
fn faster(a: (u32, u32), b: (u32, u32)) -> bool {
    u64::from(a.0) * u64::from(b.1) > u64::from(b.0) * u64::from(a.1)
}

fn widenings(old: &Tables, new: &Tables, matched: &[Option<usize>]) -> Vec<Widening> {
    let mut out = Vec::new();
    let mut push = |kind, subject: &str, detail: Option<String>, message: String| {
        out.push(Widening {
            kind,
            subject: subject.to_string(),
            detail,
            message,
        })
    };
    let old_profiles = name_index(&old.profile_names);
    let old_owns = |i: usize, profile: &str| {
        old_profiles
            .get(profile)
            .is_some_and(|&k| bit(old.set(&old.profile_bits, k), i))
    };
    let gated = Tier::Gated.code();
    let destructive = EffectKind::Destructive.code();
    let deprecated = Status::Deprecated.code();
    for (j, m) in matched.iter().enumerate() {
        let name = &*new.exported_names[j];
        let owners = restricted_owners(new, j);
        let scopes = scopes_listing(new, j);
        let Some(i) = *m else {
            for p in owners {
                push(
                    WideningKind::AddedToProfile,
                    name,
                    Some(p.clone()),
                    format!("new tool `{name}` is owned by restricted profile `{p}`"),
                );
            }
            for s in scopes.iter().filter(|s| **s != Exposure::Full) {
                push(
                    WideningKind::AddedToScope,
                    name,
                    Some(s.to_string()),
                    format!("new tool `{name}` is listed by MCP scope `{s}`"),
                );
            }
            continue;
        };
        for p in owners.iter().filter(|p| !old_owns(i, p)) {
            push(
                WideningKind::ProfileGained,
                name,
                Some(p.clone()),
                format!("`{name}` is now owned by profile `{p}`"),
            );
        }
        let old_scopes = scopes_listing(old, i);
        for s in scopes.iter().filter(|s| !old_scopes.contains(s)) {
            push(
                WideningKind::ScopeGained,
                name,
                Some(s.to_string()),
                format!(
                    "`{name}` is now listed by MCP scope `{s}` (exposure {} → {})",
                    enum_text(old.exposure[i], Exposure::from_code),
                    enum_text(new.exposure[j], Exposure::from_code)
                ),
            );
        }
        if old.tier[i] == gated && new.tier[j] != gated {
            push(
                WideningKind::GateLost,
                name,
                None,
                format!(
                    "`{name}` no longer asks the authorization hook (tier gated → {})",
                    enum_text(new.tier[j], Tier::from_code)
                ),
            );
        }
        if bit(&new.code_mode, j) && !bit(&old.code_mode, i) {
            push(
                WideningKind::CodeModeGained,
                name,
                None,
                format!("`{name}` may now be called from Code Mode programs (`code_mode = true`)"),
            );
        }
        if new.effect[j] == destructive && old.effect[i] != destructive {
            for p in &owners {
                push(
                    WideningKind::DestructiveInRestricted,
                    name,
                    Some(p.clone()),
                    format!("`{name}` becomes destructive while restricted profile `{p}` owns it"),
                );
            }
        }
        if old.status[i] == deprecated && new.status[j] != deprecated {
            push(
                WideningKind::Undeprecated,
                name,
                None,
                format!("`{name}` is no longer deprecated: it is planned, listed and run again"),
            );
        }
        let (before, after) = (remote_name(old, i), remote_name(new, j));
        if before != after && !after.is_empty() {
            let before = if before.is_empty() {
                "a local handler"
            } else {
                before
            };
            push(
                WideningKind::RemoteRetargeted,
                name,
                None,
                format!(
                    "`{name}` now runs server tool `{after}` (was `{before}`) under the same declaration"
                ),
            );
        }
        if let Some(before) = old.rate_limit[i] {
            let loosened = match new.rate_limit[j] {
                None => true,
                Some(after) => faster(after, before),
            };
            if loosened {
                let after = rate_text(new.rate_limit[j]);
                let after = if after.is_empty() {
                    "none".into()
                } else {
                    after
                };
                push(
                    WideningKind::RateLimitLoosened,
                    name,
                    None,
                    format!(
                        "`{name}` rate limit loosened: {} → {after}",
                        rate_text(Some(before))
                    ),
                );
            }
        }
    }
    let mut cap =
        |table: &str, subject: &str, field: &str, before: Option<u32>, after: Option<u32>| {
            if let Some(before) = before {
                if after.is_none_or(|after| after > before) {
                    push(
                        WideningKind::CapRaised,
                        subject,
                        Some(field.to_string()),
                        format!(
                            "{table} `{subject}` `{field}` raised: {before} → {}",
                            after.map_or_else(|| "none".to_string(), |a| a.to_string())
                        ),
                    );
                }
            }
        };
    let full = new.profile_names.len() - 1;
    for k in 0..full {
        let profile = &*new.profile_names[k];
        let Some(&o) = old_profiles.get(profile) else {
            continue;
        };
        let (i, n) = (old.profile_max_inline[o], new.profile_max_inline[k]);
        cap("profile", profile, "max_inline", i, n);
        let (i, n) = (old.profile_max_tools[o], new.profile_max_tools[k]);
        cap("profile", profile, "max_tools", i, n);
    }
    let old_presets = name_index(&old.preset_names);
    for (k, preset) in new.preset_names.iter().enumerate() {
        if let Some(&o) = old_presets.get(&**preset) {
            let (i, n) = (old.preset_max_tools[o], new.preset_max_tools[k]);
            cap("preset", preset, "max_tools", i, n);
        }
    }
    for (k, preset) in new.preset_names.iter().enumerate() {
        let Some(&o) = old_presets.get(&**preset) else {
            continue;
        };
        let (before, after) = (
            old.preset_profile[o] as usize,
            new.preset_profile[k] as usize,
        );
        let after_name = &*new.profile_names[after];
        if *old.profile_names[before] == *after_name {
            continue;
        }
        let gained: BTreeSet<usize> = ones(new.set(&new.profile_bits, after))
            .filter(|&j| matched[j].is_some_and(|i| !bit(old.set(&old.profile_bits, before), i)))
            .collect();
        if !gained.is_empty() {
            push(
                WideningKind::PresetProfileWidened,
                preset,
                Some(after_name.to_string()),
                format!(
                    "preset `{preset}` runs under profile `{after_name}` instead of `{}`, which owns {} tool(s) it did not",
                    old.profile_names[before],
                    gained.len()
                ),
            );
        }
    }
    let old_servers = name_index(&old.server_names);
    for (k, server) in new.server_names.iter().enumerate() {
        let Some(&o) = old_servers.get(&**server) else {
            continue;
        };
        let fields: Vec<&str> = [
            ("command", old.server_commands[o] != new.server_commands[k]),
            ("args", old.server_args[o] != new.server_args[k]),
            ("url", old.server_urls[o] != new.server_urls[k]),
        ]
        .into_iter()
        .filter_map(|(f, differs)| differs.then_some(f))
        .collect();
        if !fields.is_empty() {
            let rows = (0..new.len)
                .filter(|&j| new.source[j] as usize == k)
                .count();
            let fields = fields.join(", ");
            push(
                WideningKind::ServerRetargeted,
                server,
                Some(fields.clone()),
                format!(
                    "MCP server `{server}` now runs another process or endpoint ({fields} changed) for its {rows} tool(s), under the same declarations"
                ),
            );
        }
    }
    out
}

/// The `[mcp_server.NAME]` settings the tables do not keep, in report order: `env` and `headers`
/// as their keys (a kept key whose value changed, against `other`, as `KEY (value changed)`),
/// `connect_timeout_ms` as its number (empty when unset).
fn server_settings(
    decl: &McpServerDecl,
    other: Option<&McpServerDecl>,
) -> Vec<(&'static str, Val)> {
    let keys = |map: &BTreeMap<String, String>, other: Option<&BTreeMap<String, String>>| {
        Val::Many(
            map.iter()
                .map(|(k, v)| match other.and_then(|o| o.get(k)) {
                    Some(before) if before != v => format!("{k} (value changed)"),
                    _ => k.clone(),
                })
                .collect(),
        )
    };
    vec![
        ("env", keys(&decl.env, other.map(|o| &o.env))),
        ("headers", keys(&decl.headers, other.map(|o| &o.headers))),
        (
            "connect_timeout_ms",
            Val::One(
                decl.connect_timeout_ms
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
            ),
        ),
    ]
}

/// Adds to `d` the changes of each MCP server's `env`, `headers` and `connect_timeout_ms`, which
/// the tables do not keep, from the two catalogs' declarations (`CatalogFile::mcp_server` of
/// [`crate::load::parse`]); the servers are the ones of the tables [`diff`] compared. A server in
/// both gets the changed settings among its fields (a `changed` entry when it had none); an
/// added server gets its settings. Keys are reported, never values (see the module documentation).
/// None of these changes is widening.
pub fn add_server_settings(
    d: &mut Diff,
    old: &BTreeMap<String, McpServerDecl>,
    new: &BTreeMap<String, McpServerDecl>,
) {
    for (name, decl) in new {
        let before = old.get(name);
        let fields = match before {
            None => server_settings(decl, None)
                .iter()
                .filter(|(_, v)| *v != Val::One(String::new()) && *v != Val::Many(Vec::new()))
                .map(|(f, v)| field_change(f, &Val::One(String::new()), v))
                .collect(),
            Some(before) => changed(
                &server_settings(before, None),
                &server_settings(decl, Some(before)),
            ),
        };
        if fields.is_empty() {
            continue;
        }
        let position = d
            .tables
            .iter()
            .position(|c| c.table == "mcp_server" && c.name == *name);
        match position {
            Some(p) => d.tables[p].fields.extend(fields),
            None => {
                // After the other server entries, before the settings.
                let at = d
                    .tables
                    .iter()
                    .position(|c| {
                        c.table == "catalog"
                            || (c.table == "mcp_server" && c.change == ChangeKind::Removed)
                    })
                    .unwrap_or(d.tables.len());
                d.tables.insert(
                    at,
                    TableChange {
                        table: "mcp_server",
                        name: name.clone(),
                        change: ChangeKind::Changed,
                        fields,
                    },
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small catalog: a restricted profile `minimal` (capped), a second one `review`, a preset
    /// under `minimal`, and three tools (one deprecated, one rate-limited).
    const BASE: &str = r#"
[profile.minimal]
description = "Read-only work"
max_inline = 5

[profile.review]
description = "Review work"

[toolset.core]
description = "Everything"

[preset.ro]
description = "Read-only deployment"
profile = "minimal"
toolsets = ["core"]

[[tool]]
name = "read_file"
description = "Reads a file from the workspace"
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
profiles = ["minimal", "review"]
toolsets = ["core"]
owner = "fs"

[[tool]]
name = "write_file"
description = "Writes a file in the workspace, replacing its content"
visibility = "inline"
tier = "gated"
effect = "write"
exposure = "staging"
profiles = ["review"]
toolsets = ["core"]
owner = "fs"
rate_limit = "10/min"

[[tool]]
name = "old_read"
description = "Reads a file the old way"
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "excluded"
toolsets = ["core"]
owner = "fs"
status = "deprecated"
replaced_by = "read_file"
removal = "2027-01-01"
"#;

    fn tables(source: &str) -> Tables {
        match crate::compile_str("tools.toml", source) {
            Ok(c) => c.tables,
            Err(d) => panic!(
                "{}",
                crate::diagnostics::render_all(&d, "tools.toml", source)
            ),
        }
    }

    /// The diff of `BASE` against `BASE` with each `(from, to)` replaced once.
    fn edit(edits: &[(&str, &str)]) -> Diff {
        let mut new = BASE.to_string();
        for (from, to) in edits {
            assert!(new.contains(from), "{from:?} is not in the catalog");
            new = new.replacen(from, to, 1);
        }
        diff(&tables(BASE), &tables(&new))
    }

    fn kinds(d: &Diff) -> Vec<(WideningKind, String, Option<String>)> {
        d.widenings
            .iter()
            .map(|w| (w.kind, w.subject.clone(), w.detail.clone()))
            .collect()
    }

    fn one(
        kind: WideningKind,
        subject: &str,
        detail: Option<&str>,
    ) -> Vec<(WideningKind, String, Option<String>)> {
        vec![(kind, subject.to_string(), detail.map(str::to_string))]
    }

    #[test]
    fn no_change_no_diff() {
        let d = diff(&tables(BASE), &tables(BASE));
        assert!(d.is_empty() && d.widenings.is_empty(), "{d:?}");
    }

    #[test]
    fn each_widening_kind_is_flagged() {
        use WideningKind::*;
        let cases: Vec<(&[(&str, &str)], Vec<_>)> = vec![
            (
                &[(r#"profiles = ["review"]"#, r#"profiles = ["review", "minimal"]"#)],
                one(ProfileGained, "write_file", Some("minimal")),
            ),
            (
                &[(r#"exposure = "excluded""#, r#"exposure = "full""#)],
                one(ScopeGained, "old_read", Some("full")),
            ),
            (
                &[(r#"exposure = "staging""#, r#"exposure = "full""#)],
                vec![],
            ),
            (
                &[
                    (r#"tier = "gated"
effect = "write""#, r#"tier = "silent"
effect = "read""#),
                ],
                one(GateLost, "write_file", None),
            ),
            (
                &[(r#"effect = "write""#, r#"effect = "destructive""#)],
                one(DestructiveInRestricted, "write_file", Some("review")),
            ),
            (
                &[("name = \"read_file\"\n", "name = \"read_file\"\ncode_mode = true\n")],
                one(CodeModeGained, "read_file", None),
            ),
            (
                &[(
                    "[[tool]]\nname = \"read_file\"",
                    "[[tool]]\nname = \"list_dir\"\ndescription = \"Lists a directory\"\nvisibility = \"inline\"\ntier = \"silent\"\neffect = \"read\"\nexposure = \"staging\"\nprofiles = [\"minimal\"]\ntoolsets = [\"core\"]\nowner = \"fs\"\n\n[[tool]]\nname = \"read_file\"",
                )],
                vec![
                    (AddedToProfile, "list_dir".into(), Some("minimal".into())),
                    (AddedToScope, "list_dir".into(), Some("staging".into())),
                ],
            ),
            (
                &[(
                    "status = \"deprecated\"\nreplaced_by = \"read_file\"\nremoval = \"2027-01-01\"\n",
                    "",
                )],
                one(Undeprecated, "old_read", None),
            ),
            (
                &[(r#"rate_limit = "10/min""#, r#"rate_limit = "1/sec""#)],
                one(RateLimitLoosened, "write_file", None),
            ),
            (
                &[(r#"rate_limit = "10/min""#, "")],
                one(RateLimitLoosened, "write_file", None),
            ),
            (
                &[(r#"rate_limit = "10/min""#, r#"rate_limit = "100/hour""#)],
                vec![],
            ),
            (
                &[("max_inline = 5", "max_inline = 6")],
                one(CapRaised, "minimal", Some("max_inline")),
            ),
            (&[("max_inline = 5", "")], one(CapRaised, "minimal", Some("max_inline"))),
            (&[("max_inline = 5", "max_inline = 4")], vec![]),
            (
                &[(r#"profile = "minimal""#, r#"profile = "review""#)],
                one(PresetProfileWidened, "ro", Some("review")),
            ),
            (
                &[(r#"tier = "silent""#, r#"tier = "gated""#)],
                vec![],
            ),
        ];
        for (edits, expected) in cases {
            let d = edit(edits);
            assert!(!d.is_empty(), "{edits:?} changed nothing");
            assert_eq!(kinds(&d), expected, "{edits:?}: {d:#?}");
        }
        // A widening new tool owned by `full` alone and listed by the `full` scope only is added,
        // not flagged.
        let d = edit(&[(
            "[[tool]]\nname = \"read_file\"",
            "[[tool]]\nname = \"push\"\ndescription = \"Pushes commits\"\nvisibility = \"inline\"\ntier = \"gated\"\neffect = \"write\"\nexposure = \"full\"\ntoolsets = [\"core\"]\nowner = \"git\"\n\n[[tool]]\nname = \"read_file\"",
        )]);
        assert_eq!(d.tools.len(), 1, "{d:#?}");
        assert_eq!(d.tools[0].change, ChangeKind::Added);
        assert!(d.widenings.is_empty(), "{d:#?}");
    }

    /// `BASE` with caps on the profile `minimal` and the preset `ro`, and an MCP server `gh` whose
    /// tool `issues_list` a row serves as `list_issues`.
    fn capped_with_server() -> String {
        BASE.replacen("max_inline = 5", "max_inline = 5\nmax_tools = 30", 1)
            .replacen(
                "toolsets = [\"core\"]\n\n[[tool]]",
                "toolsets = [\"core\"]\nmax_tools = 20\n\n[[tool]]",
                1,
            )
            + r#"
[mcp_server.gh]
description = "The code host"
command = "gh-mcp"

[[tool]]
name = "list_issues"
description = "Lists the issues of a repository"
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
profiles = ["review"]
toolsets = ["core"]
owner = "gh"
source = "gh"
remote_name = "issues_list"
"#
    }

    /// The diff of [`capped_with_server`] against itself with each `(from, to)` replaced once.
    fn edit_capped(edits: &[(&str, &str)]) -> Diff {
        let old = capped_with_server();
        let mut new = old.clone();
        for (from, to) in edits {
            assert!(new.contains(from), "{from:?} is not in the catalog");
            new = new.replacen(from, to, 1);
        }
        diff(&tables(&old), &tables(&new))
    }

    #[test]
    fn the_server_tool_a_row_runs_and_the_effective_caps_are_compared() {
        use WideningKind::*;
        let retargeted = one(RemoteRetargeted, "list_issues", None);
        let cases: Vec<(&[(&str, &str)], Vec<_>)> = vec![
            (
                &[(
                    r#"remote_name = "issues_list""#,
                    r#"remote_name = "issues_search""#,
                )],
                retargeted.clone(),
            ),
            // Without `remote_name` a call sends the declared name: another server tool.
            (&[(r#"remote_name = "issues_list""#, "")], retargeted),
            (
                &[("max_tools = 30", "max_tools = 31")],
                one(CapRaised, "minimal", Some("max_tools")),
            ),
            (
                &[("max_tools = 30", "")],
                one(CapRaised, "minimal", Some("max_tools")),
            ),
            // `cursor`'s cap (40) replaces the profile's 30.
            (
                &[("max_tools = 30", r#"client = "cursor""#)],
                one(CapRaised, "minimal", Some("max_tools")),
            ),
            (&[("max_tools = 30", "max_tools = 29")], vec![]),
            (
                &[("max_tools = 20", "max_tools = 25")],
                one(CapRaised, "ro", Some("max_tools")),
            ),
            (&[("max_tools = 20", "max_tools = 19")], vec![]),
        ];
        for (edits, expected) in cases {
            let d = edit_capped(edits);
            assert!(!d.is_empty(), "{edits:?} changed nothing");
            assert_eq!(kinds(&d), expected, "{edits:?}: {d:#?}");
        }
        // A client whose cap is above the declared `max_tools` changes no cap that holds.
        let d = edit_capped(&[("max_tools = 30", "max_tools = 30\nclient = \"cursor\"")]);
        assert!(d.is_empty(), "{d:#?}");
        // The field changes name the effective values.
        let d = edit_capped(&[("max_tools = 30", "max_tools = 50")]);
        let fields: Vec<_> = d
            .tables
            .iter()
            .flat_map(|c| {
                c.fields
                    .iter()
                    .map(move |f| (c.name.as_str(), f.field, f.old.as_str(), f.new.as_str()))
            })
            .collect();
        assert_eq!(fields, [("minimal", "max_tools", "30", "50")]);
        let d = edit_capped(&[(
            r#"remote_name = "issues_list""#,
            r#"remote_name = "issues_search""#,
        )]);
        let f = &d.tools[0].fields;
        assert_eq!(
            (f.len(), f[0].field, f[0].old.as_str(), f[0].new.as_str()),
            (1, "remote_name", "issues_list", "issues_search")
        );
    }

    #[test]
    fn timeouts_manifest_budgets_and_the_review_threshold_are_reported_not_flagged() {
        let field = |d: &Diff| -> Vec<(String, &'static str, String, String)> {
            d.tools
                .iter()
                .flat_map(|t| t.fields.iter().map(|f| (t.tool.clone(), f)))
                .chain(
                    d.tables
                        .iter()
                        .flat_map(|c| c.fields.iter().map(|f| (c.name.clone(), f))),
                )
                .map(|(who, f)| (who, f.field, f.old.clone(), f.new.clone()))
                .collect()
        };
        let s = |x: &str| x.to_string();
        let cases: Vec<(&[(&str, &str)], Vec<_>)> = vec![
            (
                &[(
                    r#"remote_name = "issues_list""#,
                    "remote_name = \"issues_list\"\ntimeout_ms = 5000",
                )],
                vec![(s("list_issues"), "timeout_ms", s(""), s("5000"))],
            ),
            (
                &[("max_tools = 30", "max_tools = 30\nmanifest_tokens = 0")],
                vec![(
                    s("minimal"),
                    "manifest_tokens",
                    crate::model::DEFAULT_MANIFEST_TOKENS.to_string(),
                    s("0"),
                )],
            ),
            (
                &[(
                    "\n[profile.minimal]",
                    "review_inline = 30\n\n[profile.minimal]",
                )],
                vec![(s("settings"), "review_inline", s("20"), s("30"))],
            ),
        ];
        for (edits, expected) in cases {
            let d = edit_capped(edits);
            assert_eq!(field(&d), expected, "{edits:?}: {d:#?}");
            assert!(d.widenings.is_empty(), "{edits:?}: {d:#?}");
        }
        // A timeout removed is reported too.
        let old = capped_with_server().replacen(
            "remote_name = \"issues_list\"",
            "remote_name = \"issues_list\"\ntimeout_ms = 5000",
            1,
        );
        let d = diff(&tables(&old), &tables(&capped_with_server()));
        assert_eq!(
            field(&d),
            [(s("list_issues"), "timeout_ms", s("5000"), s(""))]
        );
        assert!(d.widenings.is_empty(), "{d:#?}");
    }

    #[test]
    fn a_renamed_server_tool_is_a_rename_only_while_it_runs_the_same_server_tool() {
        let d = edit_capped(&[(r#"name = "list_issues""#, r#"name = "issues""#)]);
        assert_eq!(d.tools.len(), 1, "{d:#?}");
        assert_eq!(d.tools[0].change, ChangeKind::Renamed);
        assert_eq!(d.tools[0].renamed_from.as_deref(), Some("list_issues"));
        // Renamed to the server's own name, `remote_name` dropped: still the same server tool.
        let d = edit_capped(&[
            (r#"name = "list_issues""#, r#"name = "issues_list""#),
            (r#"remote_name = "issues_list""#, ""),
        ]);
        assert_eq!(d.tools.len(), 1, "{d:#?}");
        assert_eq!(d.tools[0].change, ChangeKind::Renamed);
        // Renamed with another server tool: a removed and an added tool.
        let d = edit_capped(&[
            (r#"name = "list_issues""#, r#"name = "issues""#),
            (
                r#"remote_name = "issues_list""#,
                r#"remote_name = "issues_search""#,
            ),
        ]);
        let changes: Vec<_> = d
            .tools
            .iter()
            .map(|t| (t.tool.as_str(), t.change))
            .collect();
        assert_eq!(
            changes,
            [
                ("issues", ChangeKind::Added),
                ("list_issues", ChangeKind::Removed)
            ]
        );
    }

    #[test]
    fn a_removed_and_an_added_row_equal_in_all_else_are_a_rename() {
        let d = edit(&[(r#"name = "write_file""#, r#"name = "save_file""#)]);
        assert_eq!(d.tools.len(), 1, "{d:#?}");
        assert_eq!(d.tools[0].change, ChangeKind::Renamed);
        assert_eq!(d.tools[0].tool, "save_file");
        assert_eq!(d.tools[0].renamed_from.as_deref(), Some("write_file"));
        assert!(d.widenings.is_empty());
        // The toolset lists the new name: a table change, not a second tool change.
        assert_eq!(d.tables.len(), 1, "{d:#?}");
        assert_eq!(d.tables[0].fields[0].added, ["save_file"]);
        assert_eq!(d.tables[0].fields[0].removed, ["write_file"]);
        // Renamed and changed, same description: a renamed tool with its changed fields.
        let d = edit(&[
            (r#"name = "write_file""#, r#"name = "save_file""#),
            (r#"rate_limit = "10/min""#, r#"rate_limit = "5/min""#),
        ]);
        assert_eq!(d.tools.len(), 1, "{d:#?}");
        let t = &d.tools[0];
        assert_eq!(
            (t.tool.as_str(), t.change, t.renamed_from.as_deref()),
            ("save_file", ChangeKind::Renamed, Some("write_file"))
        );
        let fields: Vec<_> = t
            .fields
            .iter()
            .map(|f| (f.field, f.old.as_str(), f.new.as_str()))
            .collect();
        assert_eq!(fields, [("rate_limit", "10/min", "5/min")]);
        // Renamed with another description too: a removed and an added local tool.
        let d = edit(&[
            (r#"name = "write_file""#, r#"name = "save_file""#),
            (
                "Writes a file in the workspace, replacing its content",
                "Saves a file",
            ),
        ]);
        let changes: Vec<_> = d
            .tools
            .iter()
            .map(|t| (t.tool.as_str(), t.change))
            .collect();
        assert_eq!(
            changes,
            [
                ("save_file", ChangeKind::Added),
                ("write_file", ChangeKind::Removed)
            ]
        );
    }

    #[test]
    fn a_rename_combined_with_a_widening_flags_the_widening() {
        use WideningKind::*;
        // A local tool renamed (same description) while it loses its gate and its rate limit and
        // gains the `full` scope.
        let d = edit(&[
            (r#"name = "write_file""#, r#"name = "save_file""#),
            (
                "tier = \"gated\"\neffect = \"write\"",
                "tier = \"silent\"\neffect = \"read\"",
            ),
            (r#"rate_limit = "10/min""#, ""),
            (r#"exposure = "staging""#, r#"exposure = "full""#),
        ]);
        assert_eq!(
            kinds(&d),
            [
                (GateLost, "save_file".to_string(), None),
                (RateLimitLoosened, "save_file".to_string(), None),
            ],
            "{d:#?}"
        );
        assert_eq!(d.tools[0].change, ChangeKind::Renamed);
        // A deprecated, excluded tool renamed, undeprecated and listed by every scope.
        let d = edit(&[
            (r#"name = "old_read""#, r#"name = "legacy_read""#),
            (r#"exposure = "excluded""#, r#"exposure = "full""#),
            (
                "status = \"deprecated\"\nreplaced_by = \"read_file\"\nremoval = \"2027-01-01\"\n",
                "",
            ),
        ]);
        assert_eq!(
            kinds(&d),
            [
                (
                    ScopeGained,
                    "legacy_read".to_string(),
                    Some("full".to_string())
                ),
                (Undeprecated, "legacy_read".to_string(), None),
            ],
            "{d:#?}"
        );
        // A server tool renamed while it runs the same server tool, now in another profile.
        let d = edit_capped(&[
            (r#"name = "list_issues""#, r#"name = "issues""#),
            (
                "exposure = \"read-only\"\nprofiles = [\"review\"]\ntoolsets = [\"core\"]\nowner = \"gh\"",
                "exposure = \"full\"\nprofiles = [\"review\", \"minimal\"]\ntoolsets = [\"core\"]\nowner = \"gh\"",
            ),
        ]);
        assert_eq!(
            kinds(&d),
            // `read-only` → `full` gains no scope (the exposure is a reported field change).
            one(ProfileGained, "issues", Some("minimal")),
            "{d:#?}"
        );
        assert_eq!(d.tools[0].renamed_from.as_deref(), Some("list_issues"));
    }

    /// The diff of `old` against `new` with the servers' settings added.
    fn diff_with_settings(old: &str, new: &str) -> Diff {
        let servers = |source: &str| match crate::load::parse("tools.toml", source) {
            Ok(loaded) => loaded.file.mcp_server,
            Err(d) => panic!("{d:?}"),
        };
        let mut d = diff(&tables(old), &tables(new));
        add_server_settings(&mut d, &servers(old), &servers(new));
        d
    }

    #[test]
    fn server_env_headers_and_connect_timeout_changes_are_reported_by_key_not_value() {
        let old = capped_with_server().replacen(
            "command = \"gh-mcp\"",
            "command = \"gh-mcp\"\nenv = { TOKEN = \"${GH_TOKEN}\", MODE = \"fast\" }",
            1,
        );
        let new = capped_with_server().replacen(
            "command = \"gh-mcp\"",
            "command = \"gh-mcp\"\nenv = { TOKEN = \"${OTHER_SECRET}\", LOG = \"1\" }\nconnect_timeout_ms = 2500",
            1,
        );
        let d = diff_with_settings(&old, &new);
        assert!(d.widenings.is_empty(), "{d:#?}");
        assert_eq!(d.tables.len(), 1, "{d:#?}");
        let c = &d.tables[0];
        assert_eq!(
            (c.table, c.name.as_str(), c.change),
            ("mcp_server", "gh", ChangeKind::Changed)
        );
        let fields: Vec<_> = c
            .fields
            .iter()
            .map(|f| (f.field, f.added.clone(), f.removed.clone(), f.new.clone()))
            .collect();
        assert_eq!(
            fields,
            [
                (
                    "env",
                    vec!["LOG".to_string(), "TOKEN (value changed)".to_string()],
                    vec!["MODE".to_string(), "TOKEN".to_string()],
                    "LOG, TOKEN (value changed)".to_string()
                ),
                ("connect_timeout_ms", vec![], vec![], "2500".to_string()),
            ]
        );
        let json = serde_json::to_string(&d).expect("serialises");
        assert!(
            !json.contains("OTHER_SECRET") && !json.contains("GH_TOKEN"),
            "{json}"
        );
        // Headers of an HTTP server, a value changed.
        let http = |token: &str| {
            capped_with_server().replacen(
                "command = \"gh-mcp\"",
                &format!("url = \"https://mcp.example.invalid\"\nheaders = {{ Authorization = \"Bearer ${{{token}}}\" }}"),
                1,
            )
        };
        let d = diff_with_settings(&http("A"), &http("B"));
        assert_eq!(d.tables.len(), 1, "{d:#?}");
        assert_eq!(d.tables[0].fields[0].field, "headers");
        assert_eq!(d.tables[0].fields[0].new, "Authorization (value changed)");
        assert!(d.widenings.is_empty(), "{d:#?}");
    }

    #[test]
    fn a_server_command_args_or_url_change_is_server_retargeted() {
        use WideningKind::*;
        let cases: Vec<(&[(&str, &str)], Vec<_>)> = vec![
            (
                &[("command = \"gh-mcp\"", "command = \"other-mcp\"")],
                one(ServerRetargeted, "gh", Some("command")),
            ),
            (
                &[(
                    "command = \"gh-mcp\"",
                    "command = \"gh-mcp\"\nargs = [\"--all\"]",
                )],
                one(ServerRetargeted, "gh", Some("args")),
            ),
            (
                &[(
                    "command = \"gh-mcp\"",
                    "url = \"https://mcp.example.invalid\"",
                )],
                one(ServerRetargeted, "gh", Some("command, url")),
            ),
            (
                &[("description = \"The code host\"", "description = \"Code\"")],
                vec![],
            ),
        ];
        for (edits, expected) in cases {
            let d = edit_capped(edits);
            assert!(!d.is_empty(), "{edits:?} changed nothing");
            assert_eq!(kinds(&d), expected, "{edits:?}: {d:#?}");
        }
    }

    #[test]
    fn field_changes_name_old_and_new() {
        let d = edit(&[
            (r#"exposure = "staging""#, r#"exposure = "full""#),
            (
                r#"profiles = ["review"]"#,
                r#"profiles = ["review", "minimal"]"#,
            ),
        ]);
        let t = &d.tools[0];
        assert_eq!(
            (t.tool.as_str(), t.change),
            ("write_file", ChangeKind::Changed)
        );
        let fields: Vec<_> = t.fields.iter().map(|f| f.field).collect();
        assert_eq!(fields, ["profiles", "exposure"]);
        assert_eq!(t.fields[0].added, ["minimal"]);
        assert_eq!(t.fields[1].old, "staging (scopes staging, full)");
        assert_eq!(t.fields[1].new, "full (scopes full)");
        // The profile now owns one tool more.
        let minimal = d
            .tables
            .iter()
            .find(|c| c.name == "minimal")
            .expect("minimal changed");
        assert_eq!(minimal.fields[0].field, "tools owned");
        assert_eq!(
            (
                minimal.fields[0].old.as_str(),
                minimal.fields[0].new.as_str()
            ),
            ("1", "2")
        );
    }
}
