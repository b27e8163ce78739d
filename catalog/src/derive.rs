//! Building the [`Tables`] of a validated catalog.
//!
//! Every list the runtime reads is computed here from the declarations, never kept by hand:
//! - tools are indexed in file order, with exported names (`NS__name` for namespaced servers);
//! - toolsets are in declaration order, each bitset holding its members with `includes` expanded
//!   recursively and deduplicated;
//! - profiles are in declaration order with the implicit `full` last (it owns every tool; a
//!   declared `[profile.full]` only lends its description); any other profile owns exactly the
//!   tools that name it (default-deny);
//! - MCP scope bitsets are nested: `read-only` ⊆ `staging` ⊆ `full`, `excluded` tools in none;
//! - `requires` keeps direct requirements only (the runtime closes over them per turn);
//! - rate limits become `(calls, window seconds)`, input schemas compact JSON text;
//! - `remote_name` is kept for server tools only (a local row's is an error, `E0426`).
//!
//! [`derive()`] expects a catalog that passed [`crate::validate::validate`]; on one that did not, it
//! still never panics (unresolvable references are left out), but the tables mean little.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::load::{expand_toolsets, owns, Loaded};
use crate::model::{
    self, EffectKind, Exposure, Status, Tier, Visibility, PROFILE_FULL, SOURCE_LOCAL as LOCAL,
    SOURCE_LOOP as LOOP,
};
use crate::tables::{set_bit, Bits, Strs, Tables, SOURCE_LOCAL, SOURCE_LOOP};

/// Description of the implicit `full` profile when the file does not declare `[profile.full]`.
pub const FULL_PROFILE_DESCRIPTION: &str = "Every tool of the catalog (the implicit profile).";

/// Derives every table of a catalog that passed [`crate::validate::validate`].
pub fn derive(loaded: &Loaded) -> Tables {
    let file = &loaded.file;
    let tools = &file.tool;
    let len = tools.len();
    let words = len.div_ceil(64);
    let index = loaded.tool_index();
    let resolve = |name: &str| index.get(name).and_then(|i| u32::try_from(i).ok());
    let bitset = |member: &dyn Fn(usize) -> bool| -> Vec<u64> {
        let mut set = vec![0u64; words];
        for i in (0..len).filter(|&i| member(i)) {
            set_bit(&mut set, i);
        }
        set
    };

    let server_names: Vec<&str> = loaded.mcp_servers.iter().map(|e| e.name.as_str()).collect();
    let source = tools
        .iter()
        .map(|t| match t.source.as_str() {
            LOCAL => SOURCE_LOCAL,
            LOOP => SOURCE_LOOP,
            server => server_names
                .iter()
                .position(|s| *s == server)
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(SOURCE_LOCAL),
        })
        .collect::<Vec<u16>>();

    // Profiles: declared order, then `full` (declared or not) last.
    let mut profile_names: Vec<&str> = loaded
        .profiles
        .iter()
        .map(|e| e.name.as_str())
        .filter(|n| *n != PROFILE_FULL)
        .collect();
    profile_names.push(PROFILE_FULL);
    let profile_descriptions: Vec<String> = profile_names
        .iter()
        .map(|p| match file.profile.get(*p) {
            Some(decl) => decl.description.clone(),
            None => FULL_PROFILE_DESCRIPTION.to_string(),
        })
        .collect();
    let profile_max_inline: Vec<Option<u32>> = profile_names
        .iter()
        .map(|p| {
            file.profile
                .get(*p)
                .and_then(|d| d.max_inline)
                .filter(|_| *p != PROFILE_FULL)
        })
        .collect();
    let profile_cap = |p: &str| {
        file.profile
            .get(p)
            .filter(|_| p != PROFILE_FULL)
            .and_then(|d| model::effective_max_tools(d.max_tools, d.client))
    };
    let profile_max_tools: Vec<Option<u32>> =
        profile_names.iter().map(|p| profile_cap(p)).collect();
    let profile_manifest_tokens: Vec<u32> = profile_names
        .iter()
        .map(|p| {
            file.profile
                .get(*p)
                .filter(|_| *p != PROFILE_FULL)
                .and_then(|d| d.manifest_tokens)
                .unwrap_or(model::DEFAULT_MANIFEST_TOKENS)
        })
        .collect();
    let profile_bits: Vec<u64> = profile_names
        .iter()
        .flat_map(|p| bitset(&|i| owns(p, &tools[i])))
        .collect();

    // Toolsets: declaration order, members with `includes` expanded.
    let expanded = expand_toolsets(loaded);
    let toolset_names: Vec<&str> = loaded.toolsets.iter().map(|e| e.name.as_str()).collect();
    // Toolset `t` holds tool `i` when `i` names a toolset `t` expands to: each name a tool
    // writes maps to the toolsets that expand to it, so every tool is visited once.
    let mut expanding: HashMap<&str, Vec<usize>> = HashMap::new();
    for (t, names) in expanded.iter().enumerate() {
        for name in names {
            expanding.entry(name).or_default().push(t);
        }
    }
    let mut toolset_bits: Vec<u64> = vec![0u64; expanded.len() * words];
    for (i, tool) in tools.iter().enumerate() {
        for t in tool
            .toolsets
            .iter()
            .filter_map(|s| expanding.get(s.as_str()))
            .flatten()
        {
            set_bit(&mut toolset_bits[t * words..(t + 1) * words], i);
        }
    }

    let presets: Vec<(&str, &model::PresetDecl)> = loaded
        .presets
        .iter()
        .filter_map(|e| file.preset.get(&e.name).map(|p| (e.name.as_str(), p)))
        .collect();
    let servers: Vec<&model::McpServerDecl> = loaded
        .mcp_servers
        .iter()
        .filter_map(|e| file.mcp_server.get(&e.name))
        .collect();

    let per_value = |count: usize, code: &dyn Fn(usize) -> u8| -> Vec<u64> {
        (0..count)
            .flat_map(|value| bitset(&|i| usize::from(code(i)) == value))
            .collect()
    };
    // Scope `s` lists every tool whose exposure code is ≤ `s`; `excluded` is no scope.
    let scopes = [Exposure::ReadOnly, Exposure::Staging, Exposure::Full];
    let scope_bits: Vec<u64> = scopes
        .iter()
        .flat_map(|scope| {
            bitset(&|i| tools[i].exposure != Exposure::Excluded && tools[i].exposure <= *scope)
        })
        .collect();

    Tables {
        len,
        words,
        review_inline: file
            .review_inline
            .unwrap_or(crate::validate::DEFAULT_REVIEW_INLINE) as usize,
        names: strs(tools.iter().map(|t| t.name.clone())),
        exported_names: strs((0..len).map(|i| loaded.exported_name(i))),
        descriptions: strs(tools.iter().map(|t| t.description.clone())),
        keywords: Cow::Owned(
            tools
                .iter()
                .map(|t| strs(t.keywords.iter().cloned()))
                .collect(),
        ),
        owners: strs(tools.iter().map(|t| t.owner.clone())),
        visibility: Cow::Owned(tools.iter().map(|t| t.visibility.code()).collect()),
        tier: Cow::Owned(tools.iter().map(|t| t.tier.code()).collect()),
        effect: Cow::Owned(tools.iter().map(|t| t.effect.code()).collect()),
        exposure: Cow::Owned(tools.iter().map(|t| t.exposure.code()).collect()),
        status: Cow::Owned(tools.iter().map(|t| t.status.code()).collect()),
        idempotent: bits(bitset(&|i| tools[i].idempotent)),
        open_world: bits(bitset(&|i| tools[i].open_world)),
        code_mode: bits(bitset(&|i| tools[i].code_mode)),
        source: Cow::Owned(source),
        requires: Cow::Owned(
            tools
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let mut direct: Vec<u32> = Vec::new();
                    for r in t.requires.iter().filter_map(|r| resolve(r)) {
                        if r as usize != i && !direct.contains(&r) {
                            direct.push(r);
                        }
                    }
                    Cow::Owned(direct)
                })
                .collect(),
        ),
        pair: Cow::Owned(
            tools
                .iter()
                .map(|t| t.pair.as_deref().and_then(resolve))
                .collect(),
        ),
        replaced_by: Cow::Owned(
            tools
                .iter()
                .map(|t| t.replaced_by.as_deref().and_then(resolve))
                .collect(),
        ),
        removal: Cow::Owned(
            tools
                .iter()
                .map(|t| t.removal.clone().map(Cow::Owned))
                .collect(),
        ),
        rate_limit: Cow::Owned(
            tools
                .iter()
                .map(|t| t.rate_limit.as_deref().and_then(model::parse_rate_limit))
                .collect(),
        ),
        input_schema: Cow::Owned(
            tools
                .iter()
                .map(|t| {
                    let remote = t.source != LOCAL && t.source != LOOP;
                    t.input_schema
                        .as_ref()
                        .filter(|_| remote)
                        .map(|schema| Cow::Owned(schema.to_string()))
                })
                .collect(),
        ),
        output_schema: Cow::Owned(
            tools
                .iter()
                .map(|t| {
                    let remote = t.source != LOCAL && t.source != LOOP;
                    t.output_schema
                        .as_ref()
                        .filter(|_| remote)
                        .map(|schema| Cow::Owned(schema.to_string()))
                })
                .collect(),
        ),
        remote_names: Cow::Owned(
            tools
                .iter()
                .map(|t| {
                    let remote = t.source != LOCAL && t.source != LOOP;
                    t.remote_name.clone().filter(|_| remote).map(Cow::Owned)
                })
                .collect(),
        ),
        timeout_ms: Cow::Owned(
            tools
                .iter()
                .map(|t| t.timeout_ms.map(|ms| u32::try_from(ms).unwrap_or(u32::MAX)))
                .collect(),
        ),

        profile_names: strs(profile_names.iter().map(|p| p.to_string())),
        profile_descriptions: strs(profile_descriptions),
        profile_max_inline: Cow::Owned(profile_max_inline),
        profile_max_tools: Cow::Owned(profile_max_tools),
        profile_manifest_tokens: Cow::Owned(profile_manifest_tokens),
        profile_bits: bits(profile_bits),

        toolset_names: strs(toolset_names.iter().map(|t| t.to_string())),
        toolset_descriptions: strs(toolset_names.iter().map(|t| {
            file.toolset
                .get(*t)
                .map(|d| d.description.clone())
                .unwrap_or_default()
        })),
        toolset_bits: bits(toolset_bits),

        preset_names: strs(presets.iter().map(|(n, _)| n.to_string())),
        preset_descriptions: strs(presets.iter().map(|(_, p)| p.description.clone())),
        preset_profile: Cow::Owned(
            presets
                .iter()
                .map(|(_, p)| {
                    let wanted = p.profile.as_str();
                    profile_names
                        .iter()
                        .position(|n| *n == wanted)
                        .unwrap_or(profile_names.len() - 1) as u32
                })
                .collect(),
        ),
        preset_toolsets: Cow::Owned(
            presets
                .iter()
                .map(|(_, p)| {
                    Cow::Owned(
                        p.toolsets
                            .iter()
                            .filter_map(|t| toolset_names.iter().position(|n| n == t))
                            .map(|k| k as u32)
                            .collect(),
                    )
                })
                .collect(),
        ),
        preset_max_tools: Cow::Owned(
            presets
                .iter()
                .map(|(_, p)| {
                    let own = model::effective_max_tools(p.max_tools, p.client);
                    match (own, profile_cap(&p.profile)) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    }
                })
                .collect(),
        ),

        server_names: strs(server_names.iter().map(|s| s.to_string())),
        server_descriptions: strs(servers.iter().map(|s| s.description.clone())),
        server_namespaces: Cow::Owned(
            servers
                .iter()
                .map(|s| s.namespace.clone().map(Cow::Owned))
                .collect(),
        ),
        server_commands: Cow::Owned(
            servers
                .iter()
                .map(|s| s.command.clone().map(Cow::Owned))
                .collect(),
        ),
        server_args: Cow::Owned(
            servers
                .iter()
                .map(|s| strs(s.args.iter().cloned()))
                .collect(),
        ),
        server_urls: Cow::Owned(
            servers
                .iter()
                .map(|s| s.url.clone().map(Cow::Owned))
                .collect(),
        ),

        tier_bits: bits(per_value(Tier::ALL.len(), &|i| tools[i].tier.code())),
        effect_bits: bits(per_value(EffectKind::ALL.len(), &|i| {
            tools[i].effect.code()
        })),
        scope_bits: bits(scope_bits),
        visibility_bits: bits(per_value(Visibility::ALL.len(), &|i| {
            tools[i].visibility.code()
        })),
        status_bits: bits(per_value(Status::ALL.len(), &|i| tools[i].status.code())),
    }
}

fn strs(items: impl IntoIterator<Item = String>) -> Strs {
    Cow::Owned(items.into_iter().map(Cow::Owned).collect())
}

fn bits(words: Vec<u64>) -> Bits {
    Cow::Owned(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::{bit, ones};

    const CATALOG: &str = r#"
[mcp_server.gh]
description = "GitHub"
namespace = "gh"
url = "https://example.invalid/mcp"

[profile.reviewer]
description = "reads code and issues"
max_inline = 10

[profile.full]
description = "everything, declared"

[toolset.files]
description = "file tools"

[toolset.issues]
description = "issue tools"

[toolset.dev]
description = "files and issues"
includes = ["files", "issues"]

[toolset.everything]
description = "all of dev, again"
includes = ["dev", "files"]

[preset.review]
description = "code review"
profile = "reviewer"
toolsets = ["dev"]

[[tool]]
name = "read_file"
description = "Read a text file from the workspace."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
profiles = ["reviewer"]
toolsets = ["files"]
owner = "files"
rate_limit = "10/min"

[[tool]]
name = "write_file"
description = "Write a text file in the workspace."
visibility = "inline"
tier = "gated"
effect = "write"
exposure = "staging"
toolsets = ["files"]
owner = "files"
requires = ["read_file"]

[[tool]]
name = "delete_file"
description = "Delete a file from the workspace for good."
visibility = "inline"
tier = "gated"
effect = "destructive"
exposure = "full"
toolsets = ["files"]
owner = "files"

[[tool]]
name = "get_issue"
description = "Fetch one issue with its comments."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "excluded"
profiles = ["reviewer"]
toolsets = ["issues"]
owner = "forge"
source = "gh"
remote_name = "get.issue"
timeout_ms = 2500
input_schema = { type = "object", properties = { number = { type = "integer" } } }
output_schema = { type = "object", properties = { title = { type = "string" } } }
"#;

    fn tables() -> Tables {
        let loaded = crate::load::parse("t.toml", CATALOG).expect("loads");
        let diagnostics = crate::validate::validate(&loaded);
        assert!(diagnostics.is_empty(), "{diagnostics:#?}");
        derive(&loaded)
    }

    fn members(t: &Tables, table: &[u64], k: usize) -> Vec<String> {
        ones(t.set(table, k))
            .map(|i| t.names[i].to_string())
            .collect()
    }

    #[test]
    fn tools_keep_file_order_and_exported_names() {
        let t = tables();
        assert_eq!(t.len, 4);
        assert_eq!(t.words, 1);
        assert_eq!(t.names[3], "get_issue");
        assert_eq!(t.exported_names[3], "gh__get_issue");
        assert_eq!(t.exported_names[0], "read_file");
        assert_eq!(t.source[0], SOURCE_LOCAL);
        assert_eq!(t.source[3], 0);
        assert_eq!(t.requires[1].as_ref(), &[0]);
        assert_eq!(t.rate_limit[0], Some((10, 60)));
        assert_eq!(
            t.input_schema[3].as_deref(),
            Some(r#"{"type":"object","properties":{"number":{"type":"integer"}}}"#)
        );
        assert_eq!(t.input_schema[0], None);
        assert_eq!(
            t.output_schema[3].as_deref(),
            Some(r#"{"type":"object","properties":{"title":{"type":"string"}}}"#)
        );
        assert_eq!(t.output_schema[0], None);
        assert_eq!(t.remote_names[3].as_deref(), Some("get.issue"));
        assert_eq!(t.remote_names[0], None);
        assert_eq!(t.timeout_ms[3], Some(2500));
        assert_eq!(t.timeout_ms[0], None);
    }

    #[test]
    fn composite_toolsets_expand_recursively_without_duplicates() {
        let t = tables();
        let names: Vec<&str> = t.toolset_names.iter().map(|n| n.as_ref()).collect();
        assert_eq!(names, ["files", "issues", "dev", "everything"]);
        assert_eq!(
            members(&t, &t.toolset_bits, 0),
            ["read_file", "write_file", "delete_file"]
        );
        let all = ["read_file", "write_file", "delete_file", "get_issue"];
        assert_eq!(members(&t, &t.toolset_bits, 2), all);
        assert_eq!(members(&t, &t.toolset_bits, 3), all);
    }

    #[test]
    fn profiles_are_default_deny_with_full_last() {
        let t = tables();
        let names: Vec<&str> = t.profile_names.iter().map(|n| n.as_ref()).collect();
        assert_eq!(names, ["reviewer", "full"]);
        assert_eq!(t.profile_descriptions[1], "everything, declared");
        assert_eq!(t.profile_max_inline.as_ref(), &[Some(10), None]);
        // `write_file` and `delete_file` name no profile: only `full` owns them.
        assert_eq!(members(&t, &t.profile_bits, 0), ["read_file", "get_issue"]);
        assert_eq!(members(&t, &t.profile_bits, 1).len(), 4);
        assert_eq!(t.preset_profile.as_ref(), &[0]);
        assert_eq!(t.preset_toolsets[0].as_ref(), &[2]);
    }

    #[test]
    fn scopes_nest() {
        let t = tables();
        let read_only = members(&t, &t.scope_bits, 0);
        let staging = members(&t, &t.scope_bits, 1);
        let full = members(&t, &t.scope_bits, 2);
        assert_eq!(read_only, ["read_file"]);
        assert_eq!(staging, ["read_file", "write_file"]);
        assert_eq!(full, ["read_file", "write_file", "delete_file"]);
        // `get_issue` is excluded: in no scope.
        assert!((0..3).all(|s| !bit(t.set(&t.scope_bits, s), 3)));
    }

    #[test]
    fn attribute_sets_partition_the_tools() {
        let t = tables();
        for (table, values) in [
            (&t.tier_bits, Tier::ALL.len()),
            (&t.effect_bits, EffectKind::ALL.len()),
            (&t.visibility_bits, Visibility::ALL.len()),
            (&t.status_bits, Status::ALL.len()),
        ] {
            let mut seen = vec![0; t.len];
            for k in 0..values {
                for i in ones(t.set(table, k)) {
                    seen[i] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
        }
        assert_eq!(
            members(&t, &t.effect_bits, EffectKind::Destructive.code() as usize),
            ["delete_file"]
        );
    }

    #[test]
    fn full_is_appended_when_not_declared() {
        let source = CATALOG.replace(
            "[profile.full]\ndescription = \"everything, declared\"\n",
            "",
        );
        let loaded = crate::load::parse("t.toml", &source).expect("loads");
        let t = derive(&loaded);
        let names: Vec<&str> = t.profile_names.iter().map(|n| n.as_ref()).collect();
        assert_eq!(names, ["reviewer", "full"]);
        assert_eq!(t.profile_descriptions[1], FULL_PROFILE_DESCRIPTION);
    }
}
