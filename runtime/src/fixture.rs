//! A small catalog for unit tests: the rows below, written out as `tools.toml` text by
//! [`source_of`] and compiled by the catalog pipeline (`toolcat_catalog::compile_str`) into
//! [`tables`], as the build script and `Catalog::load` compile any catalog.

use std::fmt::Write as _;

use toolcat_catalog::model::{EffectKind, Exposure, Status, Tier, Visibility};
use toolcat_catalog::tables::Tables;

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
    /// `code_mode = true`: a Code Mode program may call it.
    pub code_mode: bool,
    pub exposure: Exposure,
    pub status: Status,
    pub profiles: &'static [&'static str],
    pub toolsets: &'static [&'static str],
    pub requires: &'static [&'static str],
    pub replaced_by: Option<&'static str>,
    /// `local`, `loop` or a server name.
    pub source: &'static str,
    pub input_schema: Option<&'static str>,
    /// The declared `output_schema` of a server tool.
    pub output_schema: Option<&'static str>,
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
    code_mode: false,
    exposure: Exposure::ReadOnly,
    status: Status::Active,
    profiles: &[],
    toolsets: &[],
    requires: &[],
    replaced_by: None,
    source: "local",
    input_schema: None,
    output_schema: None,
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
const PR_OUTPUT_SCHEMA: &str = r#"{"type":"object","properties":{"number":{"type":"integer","description":"Number of the new pull request"},"url":{"type":"string"}},"required":["number","url"]}"#;
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
            code_mode: true,
            description: "Read the contents of a file in the workspace.",
            keywords: &["open", "cat", "view"],
            idempotent: true,
            profiles: &["coder", "reader"],
            toolsets: &["files"],
            ..ROW
        },
        Row {
            name: "list_dir",
            code_mode: true,
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
            requires: &["github__list_branches", "git_status"],
            source: "github",
            input_schema: Some(PR_SCHEMA),
            output_schema: Some(PR_OUTPUT_SCHEMA),
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

/// A TOML value of a JSON value: a string as a basic string, an object as an inline table.
fn toml_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{} = {}",
                        serde_json::Value::from(k.as_str()),
                        toml_value(v)
                    )
                })
                .collect();
            format!("{{ {} }}", fields.join(", "))
        }
        serde_json::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(toml_value).collect();
            format!("[{}]", items.join(", "))
        }
        // A JSON string, number or boolean is the same TOML value.
        other => other.to_string(),
    }
}

/// A TOML string or array of strings.
fn toml_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

fn toml_strs(items: &[&str]) -> String {
    serde_json::Value::from(items.to_vec()).to_string()
}

/// An enum value of the model as `tools.toml` spells it.
fn toml_enum(value: impl serde::Serialize) -> String {
    serde_json::to_string(&value).expect("model enums serialize")
}

/// The `tools.toml` text of `rows` with the fixture's profiles, toolsets, presets and servers.
/// Every tool is owned by `platform`; a deprecated tool is removed on 2030-01-01; `run_shell` is
/// limited to 10 calls a minute.
pub fn source_of(rows: &[Row]) -> String {
    let mut out = String::new();
    // Writing to a `String` cannot fail.
    let mut w = |text: String| out.push_str(&text);
    for (name, namespace) in SERVERS {
        w(format!(
            "[mcp_server.{name}]\ndescription = \"the {name} server\"\n"
        ));
        if let Some(ns) = namespace {
            w(format!("namespace = {}\n", toml_str(ns)));
        }
        w("\n".to_string());
    }
    for name in PROFILES {
        w(format!(
            "[profile.{name}]\ndescription = \"the {name} profile\"\n\n"
        ));
    }
    for (name, includes) in TOOLSETS {
        w(format!(
            "[toolset.{name}]\ndescription = \"the {name} toolset\"\n"
        ));
        if !includes.is_empty() {
            w(format!("includes = {}\n", toml_strs(includes)));
        }
        w("\n".to_string());
    }
    for (name, profile, toolsets) in PRESETS {
        w(format!(
            "[preset.{name}]\ndescription = \"the {name} preset\"\nprofile = {}\ntoolsets = {}\n\n",
            toml_str(profile),
            toml_strs(toolsets)
        ));
    }
    for r in rows {
        let mut t = String::new();
        let _ = writeln!(t, "[[tool]]\nname = {}", toml_str(r.name));
        let _ = writeln!(t, "description = {}", toml_str(r.description));
        if !r.keywords.is_empty() {
            let _ = writeln!(t, "keywords = {}", toml_strs(r.keywords));
        }
        let _ = writeln!(t, "visibility = {}", toml_enum(r.visibility));
        let _ = writeln!(t, "tier = {}", toml_enum(r.tier));
        let _ = writeln!(t, "effect = {}", toml_enum(r.effect));
        let _ = writeln!(t, "idempotent = {}", r.idempotent);
        let _ = writeln!(t, "open_world = {}", r.open_world);
        if r.code_mode {
            let _ = writeln!(t, "code_mode = true");
        }
        let _ = writeln!(t, "exposure = {}", toml_enum(r.exposure));
        let _ = writeln!(t, "status = {}", toml_enum(r.status));
        if r.status == Status::Deprecated {
            let _ = writeln!(t, "removal = \"2030-01-01\"");
        }
        if !r.profiles.is_empty() {
            let _ = writeln!(t, "profiles = {}", toml_strs(r.profiles));
        }
        let _ = writeln!(t, "toolsets = {}", toml_strs(r.toolsets));
        if !r.requires.is_empty() {
            let _ = writeln!(t, "requires = {}", toml_strs(r.requires));
        }
        if let Some(replaced_by) = r.replaced_by {
            let _ = writeln!(t, "replaced_by = {}", toml_str(replaced_by));
        }
        if r.name == "run_shell" {
            let _ = writeln!(t, "rate_limit = \"10/min\"");
        }
        let _ = writeln!(t, "owner = \"platform\"\nsource = {}", toml_str(r.source));
        if let Some(schema) = r.input_schema {
            let schema: serde_json::Value =
                serde_json::from_str(schema).expect("fixture schemas are JSON");
            let _ = writeln!(t, "input_schema = {}", toml_value(&schema));
        }
        if let Some(schema) = r.output_schema {
            let schema: serde_json::Value =
                serde_json::from_str(schema).expect("fixture schemas are JSON");
            let _ = writeln!(t, "output_schema = {}", toml_value(&schema));
        }
        t.push('\n');
        w(t);
    }
    out
}

/// Loads and derives the tables of `rows` from their `tools.toml` text ([`source_of`]), as
/// `toolcat_catalog::compile_str` does but without validating: the fixture keeps one fault that
/// validation refuses (E0420: `search_text`, owned by `coder` and `reader`, requires `run_shell`,
/// which they do not own), so the runtime's handling of it stays tested.
///
/// # Panics
/// When the text does not load, with its diagnostics.
pub fn tables_of(rows: &[Row]) -> Tables {
    let source = source_of(rows);
    match toolcat_catalog::load::parse("fixture.toml", &source) {
        Ok(loaded) => toolcat_catalog::derive::derive(&loaded),
        Err(diagnostics) => panic!(
            "fixture: the rows do not load:\n{}\n{source}",
            toolcat_catalog::diagnostics::render_all(&diagnostics, "fixture.toml", &source)
        ),
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
