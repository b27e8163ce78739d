//! Scaled catalogs: `tools.toml` files of any size made from the real rows of
//! `../shared/data`, for measuring how planning, search, loading and the build grow with the
//! number of tools.
//!
//! This file is also compiled into the crate's build script (`#[path]`), so it depends only on
//! `toolcat-codegen`, `serde_json`, `toml` and `std`.
//!
//! # The base rows
//! Both real catalogs are imported with `toolcat_import` exactly as `toolcat import` does:
//! LiveMCPBench's `tools.json` (527 tools on 70 servers) and the `toolsnaps` of
//! github-mcp-server (117 tools). They are merged into one catalog of 644 real rows, LiveMCPBench
//! first, each source in its own order:
//! - servers: both sets of `[mcp_server]` tables; the GitHub server gets `namespace = "github"`
//!   (exported names `github__NAME`, as in the reference catalog), so its names cannot collide
//!   with LiveMCPBench's;
//! - toolsets: LiveMCPBench's (one per server, one composite `category_NAME` per category);
//!   GitHub's are renamed `github_ID` and gathered in a composite `github`; one `discovery`;
//! - the four discovery meta-tools come first, once, owned by every profile;
//! - profiles (imports declare none): one per LiveMCPBench category, named like its composite
//!   toolset (`category_code`, ...) and owning the rows of that category's servers; `github`
//!   owning the GitHub rows; `coding` owning the GitHub rows and the rows of `category_code` and
//!   `category_file_access`;
//! - presets: `coding` (profile `coding`; toolsets `github`, `category_code`,
//!   `category_file_access`, `discovery`) and GitHub's own default as `github_default`.
//!
//! # Scaling to N tools
//! A catalog of `N` tools holds the 4 meta-tools and `N - 4` rows taken from the 644 base rows:
//! `q = (N - 4) / 644` whole copies, then `r = (N - 4) % 644` rows of one more copy, picked evenly
//! spread over the base (row `floor(j * 644 / r)` for `j < r`), so a partial copy covers every
//! server, category and toolset. Copy 0 is the real rows unchanged. A row of copy `c ≥ 1` is the
//! same row (description, schema, effect, toolsets, profiles) with the name `NAME_rC`, shortened
//! from the end of `NAME` when the exported name would pass 64 characters, and visibility
//! `discoverable`: a bigger agent keeps the same inline core and owns more tools to discover.
//! So N = 100 is 96 real rows spread over both sources, N = 1,000 is every real row plus 352
//! spread copies, N = 10,000 is 15 copies plus 336.
//!
//! Copies repeat their row's description word for word, so the validator reports them as
//! near-duplicates (W0501, a warning); the benchmarks keep the real text rather than rewording it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use toolcat_catalog::model::{
    CatalogFile, McpServerDecl, PresetDecl, ProfileDecl, ToolDecl, ToolsetDecl, Visibility,
    MAX_EXPORTED_NAME, META_TOOLS, SOURCE_LOOP,
};
use toolcat_import::{import, ImportKind};

/// Sizes the benchmarks measure: 100, 1,000 and 10,000 tools.
pub const SIZES: [usize; 3] = [100, 1_000, 10_000];

/// Number of discovery meta-tools every scaled catalog starts with.
pub const META_ROWS: usize = META_TOOLS.len();

/// Environment variable naming the data directory (default: `../shared/data` beside the
/// repository).
pub const DATA_ENV: &str = "TOOLCAT_DATA";

/// The data directory: `$TOOLCAT_DATA`, else `<repository>/../shared/data`, where `manifest_dir`
/// is this crate's directory (`<repository>/bench`).
pub fn data_dir(manifest_dir: &Path) -> PathBuf {
    match std::env::var_os(DATA_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => manifest_dir.join("../../shared/data"),
    }
}

/// The input files read under the data directory, for `rerun-if-changed`.
pub fn inputs(data: &Path) -> [PathBuf; 2] {
    [
        data.join("livemcpbench/tools.json"),
        data.join("github-mcp-server/toolsnaps"),
    ]
}

/// The 644 real rows merged into one catalog (see the module documentation).
///
/// # Errors
/// A message naming the file when an import fails or the two sources collide.
pub fn base(data: &Path) -> Result<CatalogFile, String> {
    let [livemcpbench_path, github_path] = inputs(data);
    let imported = |kind: ImportKind, path: &Path| {
        import(kind, path).map(|out| out.catalog).map_err(|e| {
            format!(
                "cannot import `{}` ({kind}): {e}; set `{DATA_ENV}` to the data directory",
                path.display()
            )
        })
    };
    let mut merged = imported(ImportKind::LiveMcpBench, &livemcpbench_path)?;
    let github = imported(ImportKind::GithubToolsnaps, &github_path)?;

    // Toolsets of each LiveMCPBench server → its category profile.
    let mut category_of: HashMap<String, String> = HashMap::new();
    for (name, decl) in &merged.toolset {
        if name.starts_with("category_") {
            for member in &decl.includes {
                category_of.insert(member.clone(), name.clone());
            }
        }
    }
    let coding_categories = ["category_code", "category_file_access"];
    let mut categories: Vec<String> = category_of.values().cloned().collect();
    categories.sort();
    categories.dedup();
    for category in &categories {
        merged.profile.insert(
            category.clone(),
            ProfileDecl {
                description: format!("Owns the tools of the LiveMCPBench servers of `{category}`"),
                max_inline: None,
                max_tools: None,
                client: None,
                manifest_tokens: None,
            },
        );
    }
    merged.profile.insert(
        "github".into(),
        ProfileDecl {
            description: "Owns the tools of GitHub's MCP server".into(),
            max_inline: None,
            max_tools: None,
            client: None,
            manifest_tokens: None,
        },
    );
    merged.profile.insert(
        "coding".into(),
        ProfileDecl {
            description: "Owns GitHub's tools and the LiveMCPBench code and file-access tools"
                .into(),
            max_inline: None,
            max_tools: None,
            client: None,
            manifest_tokens: None,
        },
    );
    let profiles: Vec<String> = merged.profile.keys().cloned().collect();

    let mut tools: Vec<ToolDecl> = Vec::new();
    let mut livemcpbench_rows = Vec::new();
    for mut tool in std::mem::take(&mut merged.tool) {
        if tool.source == SOURCE_LOOP {
            tool.profiles = profiles.clone();
            tools.push(tool);
            continue;
        }
        let mut owned: Vec<String> = tool
            .toolsets
            .iter()
            .filter_map(|s| category_of.get(s).cloned())
            .collect();
        if owned
            .iter()
            .any(|c| coding_categories.contains(&c.as_str()))
        {
            owned.push("coding".into());
        }
        owned.sort();
        owned.dedup();
        tool.profiles = owned;
        livemcpbench_rows.push(tool);
    }
    if tools.len() != META_ROWS {
        return Err(format!(
            "the LiveMCPBench import has {} discovery meta-tools, expected {META_ROWS}",
            tools.len()
        ));
    }

    let server = |name: &str| format!("`{name}` is declared by both LiveMCPBench and GitHub");
    for (name, mut decl) in github.mcp_server {
        if merged.mcp_server.contains_key(&name) {
            return Err(server(&name));
        }
        decl.namespace = Some("github".into());
        merged.mcp_server.insert(name, decl);
    }
    let renamed = |id: &str| -> String {
        if id == "discovery" {
            id.to_string()
        } else {
            format!("github_{id}")
        }
    };
    let mut github_toolsets = Vec::new();
    for (id, mut decl) in github.toolset {
        if id == "discovery" {
            continue;
        }
        decl.includes = decl.includes.iter().map(|s| renamed(s)).collect();
        let name = renamed(&id);
        if merged.toolset.contains_key(&name) {
            return Err(format!("toolset `{name}` is declared twice"));
        }
        github_toolsets.push(name.clone());
        merged.toolset.insert(name, decl);
    }
    merged.toolset.insert(
        "github".into(),
        ToolsetDecl {
            description: "Every GitHub toolset".into(),
            includes: github_toolsets,
        },
    );
    for (name, decl) in github.preset {
        merged.preset.insert(
            format!("github_{name}"),
            PresetDecl {
                toolsets: decl.toolsets.iter().map(|s| renamed(s)).collect(),
                ..decl
            },
        );
    }
    merged.preset.insert(
        "coding".into(),
        PresetDecl {
            description: "A coding agent: GitHub, code and file-access servers".into(),
            profile: "coding".into(),
            toolsets: [
                "github",
                "category_code",
                "category_file_access",
                "discovery",
            ]
            .map(String::from)
            .to_vec(),
            max_tools: None,
            client: None,
        },
    );

    let mut github_rows = Vec::new();
    for mut tool in github.tool {
        if tool.source == SOURCE_LOOP {
            continue;
        }
        tool.toolsets = tool.toolsets.iter().map(|s| renamed(s)).collect();
        tool.profiles = vec!["coding".into(), "github".into()];
        github_rows.push(tool);
    }
    tools.extend(livemcpbench_rows);
    tools.extend(github_rows);
    merged.tool = tools;
    Ok(merged)
}

/// The catalog of `n` tools made from `base` (the output of [`base`]; see the module
/// documentation for the rule).
///
/// # Errors
/// When `n` is smaller than the meta-tools, or two copies end up with one exported name.
pub fn scaled(base: &CatalogFile, n: usize) -> Result<CatalogFile, String> {
    let (meta, rows): (Vec<&ToolDecl>, Vec<&ToolDecl>) =
        base.tool.iter().partition(|t| t.source == SOURCE_LOOP);
    if n < meta.len() || rows.is_empty() {
        return Err(format!(
            "a scaled catalog needs at least {} tools (the meta-tools), got {n}",
            meta.len()
        ));
    }
    let wanted = n - meta.len();
    let (whole, rest) = (wanted / rows.len(), wanted % rows.len());
    let namespace = |source: &str| -> Option<&str> {
        base.mcp_server
            .get(source)
            .and_then(|s: &McpServerDecl| s.namespace.as_deref())
    };

    let mut out = CatalogFile {
        tool: meta.into_iter().cloned().collect(),
        ..base.clone()
    };
    let mut exported: HashSet<String> = HashSet::new();
    for t in &out.tool {
        exported.insert(t.name.clone());
    }
    let picks = (0..whole)
        .flat_map(|c| (0..rows.len()).map(move |i| (c, i)))
        .chain((0..rest).map(|j| (whole, j * rows.len() / rest)));
    for (copy, i) in picks {
        let mut tool = rows[i].clone();
        if copy > 0 {
            let suffix = format!("_r{copy}");
            let prefix = namespace(&tool.source).map_or(0, |ns| ns.len() + 2);
            let room = MAX_EXPORTED_NAME - prefix - suffix.len();
            let mut stem = tool.name.clone();
            if stem.len() > room {
                // Imported names are ASCII, so every byte offset is a character boundary.
                stem.truncate(room);
            }
            tool.name = stem + &suffix;
            tool.visibility = Visibility::Discoverable;
        }
        let full = match namespace(&tool.source) {
            Some(ns) => format!("{ns}__{}", tool.name),
            None => tool.name.clone(),
        };
        if !exported.insert(full.clone()) {
            return Err(format!(
                "two rows of the scaled catalog are exported as `{full}`"
            ));
        }
        out.tool.push(tool);
    }
    Ok(out)
}

/// `catalog` as `tools.toml` text, after a header naming how it was made.
///
/// # Errors
/// When the catalog cannot be serialized as TOML.
pub fn to_toml(catalog: &CatalogFile) -> Result<String, String> {
    let body = toml::to_string(catalog).map_err(|e| format!("cannot write TOML: {e}"))?;
    Ok(format!(
        "# A scaled benchmark catalog of {} tools made by toolcat-bench from the real rows of\n\
         # LiveMCPBench and github-mcp-server (see bench/src/scale.rs); not for editing.\n\n{body}",
        catalog.tool.len()
    ))
}

/// [`base`] then [`scaled`] then [`to_toml`], for each size: `(n, text)`.
///
/// # Errors
/// As the three steps.
pub fn scaled_texts(data: &Path, sizes: &[usize]) -> Result<BTreeMap<usize, String>, String> {
    let base = base(data)?;
    sizes
        .iter()
        .map(|&n| Ok((n, to_toml(&scaled(&base, n)?)?)))
        .collect()
}
