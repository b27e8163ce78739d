//! A small hand-derived catalog for unit tests: the rows below and [`tables`], which derives every
//! table from them the way the layout of `toolcat_catalog::tables` prescribes.

use std::borrow::Cow;

use toolcat_catalog::model::{EffectKind, Exposure, Status, Tier, Visibility};
use toolcat_catalog::tables::{set_bit, Strs, Tables, SOURCE_LOCAL, SOURCE_LOOP};

use crate::catalog::Catalog;

/// One tool row.
#[derive(Clone)]
pub struct Row {
    pub name: &'static str,
    pub description: &'static str,
    pub keywords: &'static [&'static str],
    pub visibility: Visibility,
    pub tier: Tier,
    pub effect: EffectKind,
    pub idempotent: bool,
    pub open_world: bool,
    pub exposure: Exposure,
    pub status: Status,
    pub profiles: &'static [&'static str],
    pub toolsets: &'static [&'static str],
    pub requires: &'static [&'static str],
    pub replaced_by: Option<&'static str>,
    /// `local`, `loop` or a server name.
    pub source: &'static str,
    pub input_schema: Option<&'static str>,
}

const ROW: Row = Row {
    name: "",
    description: "",
    keywords: &[],
    visibility: Visibility::Inline,
    tier: Tier::Silent,
    effect: EffectKind::Read,
    idempotent: false,
    open_world: false,
    exposure: Exposure::ReadOnly,
    status: Status::Active,
    profiles: &[],
    toolsets: &[],
    requires: &[],
    replaced_by: None,
    source: "local",
    input_schema: None,
};

/// Declared profiles in name order; `full` is appended last.
pub const PROFILES: &[&str] = &["coder", "reader"];
/// Toolsets in name order, with their includes.
pub const TOOLSETS: &[(&str, &[&str])] = &[
    ("core", &["files", "git"]),
    ("discovery", &[]),
    ("files", &[]),
    ("git", &[]),
    ("github", &[]),
    ("shell", &[]),
];
/// Servers: (name, namespace).
pub const SERVERS: &[(&str, Option<&str>)] =
    &[("github", Some("github")), ("gitlab", Some("gitlab"))];
/// Presets: (name, profile, toolsets).
pub const PRESETS: &[(&str, &str, &[&str])] = &[("review", "reader", &["files"])];

const PR_SCHEMA: &str = r#"{"type":"object","properties":{"title":{"type":"string","description":"Title of the pull request"},"head":{"type":"string","description":"Branch with the changes"},"base":{"type":"string"}},"required":["title","head","base"]}"#;
const BRANCHES_SCHEMA: &str = r#"{"type":"object","properties":{"repo":{"type":"string"}}}"#;

/// The rows, in catalog order.
pub fn rows() -> Vec<Row> {
    let meta = |name, description| Row {
        name,
        description,
        tier: Tier::Loop,
        source: "loop",
        profiles: &["coder", "reader"],
        toolsets: &["discovery"],
        ..ROW
    };
    vec![
        meta(
            "tool_search",
            "Search the catalog for tools by what they do.",
        ),
        meta(
            "tool_describe",
            "Show the full definition of a tool by name.",
        ),
        meta(
            "tool_call",
            "Call a discovered tool by name with JSON arguments.",
        ),
        Row {
            profiles: &[],
            ..meta(
                "read_tool_result",
                "Read an archived tool result by reference.",
            )
        },
        Row {
            name: "read_file",
            description: "Read the contents of a file in the workspace.",
            keywords: &["open", "cat", "view"],
            idempotent: true,
            profiles: &["coder", "reader"],
            toolsets: &["files"],
            ..ROW
        },
        Row {
            name: "list_dir",
            description: "List the entries of a directory.",
            keywords: &["ls", "folder"],
            idempotent: true,
            profiles: &["coder", "reader"],
            toolsets: &["files"],
            ..ROW
        },
        Row {
            name: "write_file",
            description: "Create or overwrite a file with new contents.",
            keywords: &["save", "edit"],
            tier: Tier::Gated,
            effect: EffectKind::Write,
            exposure: Exposure::Staging,
            profiles: &["coder"],
            toolsets: &["files"],
            requires: &["read_file"],
            ..ROW
        },
        Row {
            name: "delete_file",
            description: "Delete a file from the workspace.",
            keywords: &["remove", "rm"],
            visibility: Visibility::Discoverable,
            tier: Tier::Gated,
            effect: EffectKind::Destructive,
            exposure: Exposure::Full,
            profiles: &["coder"],
            toolsets: &["files"],
            requires: &["list_dir"],
            ..ROW
        },
        Row {
            name: "old_grep",
            description: "Search file contents for a pattern (use search_text).",
            keywords: &["grep", "find text"],
            status: Status::Deprecated,
            replaced_by: Some("search_text"),
            profiles: &["coder", "reader"],
            toolsets: &["files"],
            ..ROW
        },
        Row {
            name: "search_text",
            description: "Search file contents for a regular expression.",
            keywords: &["grep", "find text", "ripgrep"],
            profiles: &["coder", "reader"],
            toolsets: &["files"],
            requires: &["run_shell"],
            ..ROW
        },
        Row {
            name: "git_status",
            description: "Show the working tree status of the repository.",
            keywords: &["changes"],
            profiles: &["coder"],
            toolsets: &["git"],
            ..ROW
        },
        Row {
            name: "git_commit",
            description: "Record staged changes as a new commit.",
            keywords: &["save changes", "snapshot"],
            visibility: Visibility::Discoverable,
            tier: Tier::Gated,
            effect: EffectKind::Write,
            exposure: Exposure::Staging,
            profiles: &["coder"],
            toolsets: &["git"],
            requires: &["git_status", "git_diff"],
            ..ROW
        },
        Row {
            name: "git_diff",
            description: "Show changes between the working tree and the index.",
            keywords: &["patch", "difference"],
            visibility: Visibility::Discoverable,
            profiles: &["coder"],
            toolsets: &["git"],
            ..ROW
        },
        Row {
            name: "createPullRequest",
            description: "Open a pull request on GitHub from a branch.",
            keywords: &["pr", "merge request"],
            visibility: Visibility::Discoverable,
            tier: Tier::Gated,
            effect: EffectKind::Write,
            open_world: true,
            exposure: Exposure::Full,
            profiles: &["coder"],
            toolsets: &["github"],
            requires: &["list_branches", "git_status"],
            source: "github",
            input_schema: Some(PR_SCHEMA),
            ..ROW
        },
        Row {
            name: "list_branches",
            description: "List the branches of a GitHub repository.",
            visibility: Visibility::Discoverable,
            open_world: true,
            profiles: &["coder"],
            toolsets: &["github"],
            source: "github",
            input_schema: Some(BRANCHES_SCHEMA),
            ..ROW
        },
        Row {
            name: "list_branches",
            description: "List the branches of a GitLab project.",
            visibility: Visibility::Discoverable,
            open_world: true,
            toolsets: &["github"],
            source: "gitlab",
            input_schema: Some(BRANCHES_SCHEMA),
            ..ROW
        },
        Row {
            name: "run_shell",
            description: "Execute a command in a shell and return its output.",
            keywords: &["bash", "terminal", "command line"],
            visibility: Visibility::Discoverable,
            tier: Tier::Gated,
            effect: EffectKind::Destructive,
            open_world: true,
            exposure: Exposure::Excluded,
            toolsets: &["shell"],
            ..ROW
        },
    ]
}

fn strs(items: impl IntoIterator<Item = String>) -> Strs {
    items.into_iter().map(Cow::Owned).collect::<Vec<_>>().into()
}

/// Derives the tables of `rows`.
pub fn tables_of(rows: &[Row]) -> Tables {
    let len = rows.len();
    let w = len.div_ceil(64);
    let exported = |r: &Row| -> String {
        match SERVERS.iter().find(|s| s.0 == r.source).and_then(|s| s.1) {
            Some(ns) => format!("{ns}__{}", r.name),
            None => r.name.to_string(),
        }
    };
    let index_of = |name: &str, from: &Row| -> u32 {
        // Prefer a tool of the same source, as a namespaced server resolves its own names.
        rows.iter()
            .position(|r| r.name == name && r.source == from.source)
            .or_else(|| rows.iter().position(|r| r.name == name))
            .unwrap_or_else(|| panic!("fixture: unknown tool `{name}`")) as u32
    };
    let mut profile_names: Vec<&str> = PROFILES.to_vec();
    profile_names.push("full");
    let mut profile_bits = vec![0u64; profile_names.len() * w];
    let mut toolset_bits = vec![0u64; TOOLSETS.len() * w];
    let mut tier_bits = vec![0u64; Tier::ALL.len() * w];
    let mut effect_bits = vec![0u64; EffectKind::ALL.len() * w];
    let mut scope_bits = vec![0u64; 3 * w];
    let mut visibility_bits = vec![0u64; Visibility::ALL.len() * w];
    let mut status_bits = vec![0u64; Status::ALL.len() * w];
    let mut idempotent = vec![0u64; w];
    let mut open_world = vec![0u64; w];
    let set = |table: &mut Vec<u64>, k: usize, i: usize| set_bit(&mut table[k * w..(k + 1) * w], i);
    for (i, r) in rows.iter().enumerate() {
        for (p, name) in profile_names.iter().enumerate() {
            if *name == "full" || r.profiles.contains(name) {
                set(&mut profile_bits, p, i);
            }
        }
        for (s, (name, _)) in TOOLSETS.iter().enumerate() {
            let direct = r.toolsets.contains(name);
            let included = TOOLSETS[s].1.iter().any(|inc| r.toolsets.contains(inc));
            if direct || included {
                set(&mut toolset_bits, s, i);
            }
        }
        set(&mut tier_bits, usize::from(r.tier.code()), i);
        set(&mut effect_bits, usize::from(r.effect.code()), i);
        set(&mut visibility_bits, usize::from(r.visibility.code()), i);
        set(&mut status_bits, usize::from(r.status.code()), i);
        for k in 0..3 {
            if usize::from(r.exposure.code()) <= k {
                set(&mut scope_bits, k, i);
            }
        }
        if r.idempotent {
            set_bit(&mut idempotent, i);
        }
        if r.open_world {
            set_bit(&mut open_world, i);
        }
    }
    Tables {
        len,
        words: w,
        names: strs(rows.iter().map(|r| r.name.to_string())),
        exported_names: strs(rows.iter().map(exported)),
        descriptions: strs(rows.iter().map(|r| r.description.to_string())),
        keywords: rows
            .iter()
            .map(|r| strs(r.keywords.iter().map(|k| k.to_string())))
            .collect::<Vec<_>>()
            .into(),
        owners: strs(rows.iter().map(|_| "platform".to_string())),
        visibility: rows
            .iter()
            .map(|r| r.visibility.code())
            .collect::<Vec<_>>()
            .into(),
        tier: rows
            .iter()
            .map(|r| r.tier.code())
            .collect::<Vec<_>>()
            .into(),
        effect: rows
            .iter()
            .map(|r| r.effect.code())
            .collect::<Vec<_>>()
            .into(),
        exposure: rows
            .iter()
            .map(|r| r.exposure.code())
            .collect::<Vec<_>>()
            .into(),
        status: rows
            .iter()
            .map(|r| r.status.code())
            .collect::<Vec<_>>()
            .into(),
        idempotent: idempotent.into(),
        open_world: open_world.into(),
        source: rows
            .iter()
            .map(|r| match r.source {
                "local" => SOURCE_LOCAL,
                "loop" => SOURCE_LOOP,
                s => SERVERS
                    .iter()
                    .position(|x| x.0 == s)
                    .unwrap_or_else(|| panic!("fixture: unknown server `{s}`"))
                    as u16,
            })
            .collect::<Vec<_>>()
            .into(),
        requires: rows
            .iter()
            .map(|r| Cow::Owned(r.requires.iter().map(|q| index_of(q, r)).collect()))
            .collect::<Vec<_>>()
            .into(),
        pair: vec![None; len].into(),
        replaced_by: rows
            .iter()
            .map(|r| r.replaced_by.map(|q| index_of(q, r)))
            .collect::<Vec<_>>()
            .into(),
        removal: rows
            .iter()
            .map(|r| (r.status == Status::Deprecated).then_some(Cow::Borrowed("2030-01-01")))
            .collect::<Vec<_>>()
            .into(),
        rate_limit: rows
            .iter()
            .map(|r| (r.name == "run_shell").then_some((10, 60)))
            .collect::<Vec<_>>()
            .into(),
        input_schema: rows
            .iter()
            .map(|r| r.input_schema.map(Cow::Borrowed))
            .collect::<Vec<_>>()
            .into(),
        profile_descriptions: strs(profile_names.iter().map(|p| format!("the {p} profile"))),
        profile_max_inline: vec![None; profile_names.len()].into(),
        profile_names: strs(profile_names.iter().map(|p| p.to_string())),
        profile_bits: profile_bits.into(),
        toolset_names: strs(TOOLSETS.iter().map(|t| t.0.to_string())),
        toolset_descriptions: strs(TOOLSETS.iter().map(|t| format!("the {} toolset", t.0))),
        toolset_bits: toolset_bits.into(),
        preset_names: strs(PRESETS.iter().map(|p| p.0.to_string())),
        preset_descriptions: strs(PRESETS.iter().map(|p| format!("the {} preset", p.0))),
        preset_profile: PRESETS
            .iter()
            .map(|p| profile_names.iter().position(|n| *n == p.1).unwrap_or(0) as u32)
            .collect::<Vec<_>>()
            .into(),
        preset_toolsets: PRESETS
            .iter()
            .map(|p| {
                Cow::Owned(
                    p.2.iter()
                        .map(|s| TOOLSETS.iter().position(|t| t.0 == *s).unwrap_or(0) as u32)
                        .collect(),
                )
            })
            .collect::<Vec<_>>()
            .into(),
        server_names: strs(SERVERS.iter().map(|s| s.0.to_string())),
        server_descriptions: strs(SERVERS.iter().map(|s| format!("the {} server", s.0))),
        server_namespaces: SERVERS
            .iter()
            .map(|s| s.1.map(Cow::Borrowed))
            .collect::<Vec<_>>()
            .into(),
        server_commands: vec![None; SERVERS.len()].into(),
        server_args: vec![Cow::Owned(Vec::new()); SERVERS.len()].into(),
        server_urls: vec![None; SERVERS.len()].into(),
        tier_bits: tier_bits.into(),
        effect_bits: effect_bits.into(),
        scope_bits: scope_bits.into(),
        visibility_bits: visibility_bits.into(),
        status_bits: status_bits.into(),
    }
}

/// The fixture's tables.
pub fn tables() -> Tables {
    tables_of(&rows())
}

/// The fixture as a catalog (index built on the spot).
pub fn catalog() -> Catalog {
    Catalog::from_tables(tables()).expect("the fixture is a valid catalog")
}
