//! Property test of `toolcat_catalog::diff`: seeded random edits of the reference catalog (caps
//! added, see [`reference`]), each
//! compiled, diffed against the unedited catalog, and its widening changes compared with an
//! oracle that computes them directly from the two catalogs' tables (one bitset per profile,
//! scope, tier, effect and status) and from the edit itself (which row each new row came from).
//!
//! The diff must find what the oracle finds, no more and no less: no widening missed, none
//! invented. Edits change fields of random rows (visibility, tier, effect, exposure, profiles,
//! status, rate limit, flags, description, `remote_name`, `timeout_ms`), rename, remove or copy a
//! row, change a profile's `max_inline`, `max_tools`, `client` or `manifest_tokens`, a preset's
//! profile, `max_tools` or `client`, the catalog's `review_inline`, or an MCP server's `command`,
//! `args` or description. An edit that makes the
//! catalog invalid is skipped and counted; the test requires most cases to be valid, so the
//! generator cannot drift into testing nothing.

use std::collections::BTreeSet;
use std::path::Path;

use toml_edit::{value, Array, DocumentMut, Item};
use toolcat_catalog::diff::{diff, ChangeKind, WideningKind};
use toolcat_catalog::model::{EffectKind, Status, Tier};
use toolcat_catalog::tables::{bit, Tables, SOURCE_LOCAL, SOURCE_LOOP};

const SEED: u64 = 0xd1ff_5eed;
const CASES: u64 = 300;

type Found = BTreeSet<(WideningKind, String, Option<String>)>;

/// The reference catalog, with a `max_tools` on profile `coding` and a `client` on preset `chat`
/// (it declares no such cap, and only a cap there before can be raised).
fn reference() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let source = std::fs::read_to_string(root.join("tools.toml")).expect("the reference catalog");
    let mut doc: DocumentMut = source.parse().expect("the reference catalog parses");
    doc["profile"]["coding"]["max_tools"] = value(90);
    doc["preset"]["chat"]["client"] = value("cursor");
    doc.to_string()
}

/// One random edit of `doc`. A renamed row gets `_renamed` appended to its name, a copy a new name
/// ending in `_copyN`, so [`origin`] can tell where each row of the result came from. Returns what
/// it did, for the failure message.
fn edit(rng: &mut fastrand::Rng, doc: &mut DocumentMut) -> String {
    let profiles: Vec<String> = doc["profile"]
        .as_table()
        .map(|t| t.iter().map(|(k, _)| k.to_string()).collect())
        .unwrap_or_default();
    let presets: Vec<String> = doc["preset"]
        .as_table()
        .map(|t| t.iter().map(|(k, _)| k.to_string()).collect())
        .unwrap_or_default();
    let servers: Vec<String> = doc["mcp_server"]
        .as_table()
        .map(|t| t.iter().map(|(k, _)| k.to_string()).collect())
        .unwrap_or_default();
    let rows = doc["tool"].as_array_of_tables_mut().expect("[[tool]] rows");
    let n = rows.len();
    let r = rng.usize(..n);
    let pick =
        |rng: &mut fastrand::Rng, values: &[&str]| values[rng.usize(..values.len())].to_string();
    let row = rows.get_mut(r).expect("row r");
    let name = row["name"].as_str().unwrap_or_default().to_string();
    let server = |t: &toml_edit::Table| {
        !matches!(
            t.get("source").and_then(Item::as_str),
            None | Some("local" | "loop")
        )
    };
    match rng.u8(..21) {
        0 => {
            let v = pick(rng, &["inline", "discoverable"]);
            row["visibility"] = value(v.clone());
            format!("{name}: visibility = {v}")
        }
        1 => {
            let v = pick(rng, &["silent", "gated"]);
            row["tier"] = value(v.clone());
            if v == "silent" {
                row["effect"] = value("read");
            }
            format!("{name}: tier = {v}")
        }
        2 => {
            let v = pick(rng, &["read", "write", "destructive"]);
            row["effect"] = value(v.clone());
            if v == "destructive" {
                row["tier"] = value("gated");
            }
            if v != "read" && row.get("exposure").and_then(Item::as_str) == Some("read-only") {
                row["exposure"] = value("staging");
            }
            format!("{name}: effect = {v}")
        }
        3 => {
            // Half the time a row of exposure `full` or `excluded` made one scope wider (a random
            // value of a random row, most of them `read-only`, mostly narrows or is invalid).
            let wide = |t: &toml_edit::Table| {
                matches!(
                    t.get("exposure").and_then(Item::as_str),
                    Some("full" | "excluded")
                )
            };
            let candidates: Vec<usize> =
                (0..n).filter(|&k| rows.get(k).is_some_and(wide)).collect();
            let widen = rng.bool() && !candidates.is_empty();
            let r = if widen {
                candidates[rng.usize(..candidates.len())]
            } else {
                r
            };
            let row = rows.get_mut(r).expect("row r");
            let name = row["name"].as_str().unwrap_or_default().to_string();
            let v = match (widen, row.get("exposure").and_then(Item::as_str)) {
                (true, Some("excluded")) => "full".to_string(),
                (true, Some("full")) => "staging".to_string(),
                (true, Some("staging")) => "read-only".to_string(),
                _ => pick(rng, &["read-only", "staging", "full", "excluded"]),
            };
            row["exposure"] = value(v.clone());
            format!("{name}: exposure = {v}")
        }
        4 if !profiles.is_empty() => {
            let p = profiles[rng.usize(..profiles.len())].clone();
            let mut list: Vec<String> = row
                .get("profiles")
                .and_then(Item::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let what = if let Some(at) = list.iter().position(|x| *x == p) {
                list.remove(at);
                "-"
            } else {
                list.push(p.clone());
                "+"
            };
            row["profiles"] = value(list.iter().map(String::as_str).collect::<Array>());
            format!("{name}: profiles {what}{p}")
        }
        5 => {
            // Half the time the catalog's first deprecated row, which few random picks would hit.
            let deprecated =
                |t: &toml_edit::Table| t.get("status").and_then(Item::as_str) == Some("deprecated");
            let r = match rows.iter().position(deprecated) {
                Some(d) if rng.bool() => d,
                _ => r,
            };
            let row = rows.get_mut(r).expect("row r");
            let name = row["name"].as_str().unwrap_or_default().to_string();
            if deprecated(row) {
                row.remove("status");
                row.remove("replaced_by");
                row.remove("removal");
                format!("{name}: not deprecated")
            } else {
                let other = rng.usize(..n);
                let by = rows
                    .get(other)
                    .and_then(|t| t["name"].as_str())
                    .unwrap_or_default()
                    .to_string();
                let row = rows.get_mut(r).expect("row r");
                row["status"] = value("deprecated");
                row["replaced_by"] = value(by.clone());
                row["removal"] = value("2027-06-30");
                format!("{name}: deprecated, replaced by {by}")
            }
        }
        6 => {
            // Half the time a rate-limited row, which few random picks would hit.
            let limited = |t: &toml_edit::Table| t.contains_key("rate_limit");
            let r = match (0..n)
                .filter(|&k| rows.get(k).is_some_and(limited))
                .collect::<Vec<_>>()
            {
                l if rng.bool() && !l.is_empty() => l[rng.usize(..l.len())],
                _ => r,
            };
            let row = rows.get_mut(r).expect("row r");
            let name = row["name"].as_str().unwrap_or_default().to_string();
            if rng.bool() {
                row.remove("rate_limit");
                format!("{name}: no rate limit")
            } else {
                let v = format!("{}/{}", rng.u32(1..100), pick(rng, &["sec", "min", "hour"]));
                row["rate_limit"] = value(v.clone());
                format!("{name}: rate_limit = {v}")
            }
        }
        7 => {
            let field = pick(rng, &["idempotent", "open_world", "code_mode"]);
            // `code_mode` on a local silent read, where it is allowed (E0428) and which few
            // random picks would hit.
            let allowed = |t: &toml_edit::Table| {
                t.get("tier").and_then(Item::as_str) == Some("silent")
                    && t.get("effect").and_then(Item::as_str) == Some("read")
                    && matches!(t.get("source").and_then(Item::as_str), None | Some("local"))
            };
            let r = match (0..n)
                .filter(|&k| rows.get(k).is_some_and(allowed))
                .collect::<Vec<_>>()
            {
                l if field == "code_mode" && !l.is_empty() => l[rng.usize(..l.len())],
                _ => r,
            };
            let row = rows.get_mut(r).expect("row r");
            let name = row["name"].as_str().unwrap_or_default().to_string();
            let on = !row.get(&field).and_then(Item::as_bool).unwrap_or(false);
            row[field.as_str()] = value(on);
            format!("{name}: {field} = {on}")
        }
        8 => {
            row["description"] = value(format!("Edited description number {}", rng.u32(..)));
            format!("{name}: description")
        }
        9 => {
            // A renamed server row keeps running the server tool it ran.
            if server(row) && row.get("remote_name").is_none() {
                row["remote_name"] = value(name.clone());
            }
            row["name"] = value(format!("{name}_renamed"));
            // Half the renamed rows change a field too: a widening, or the description (the
            // identity of a local row).
            let also = match rng.usize(..10) {
                0 => row.remove("rate_limit").map(|_| "rate limit dropped"),
                1 => {
                    row["exposure"] = value("full");
                    Some("exposure = full")
                }
                2 => {
                    for field in ["status", "replaced_by", "removal"] {
                        row.remove(field);
                    }
                    Some("undeprecated")
                }
                3 => {
                    row["tier"] = value("silent");
                    Some("tier = silent")
                }
                4 => {
                    row["description"] = value(format!("Renamed description {}", rng.u32(..)));
                    Some("description")
                }
                _ => None,
            };
            match also {
                Some(also) => format!("{name}: renamed, {also}"),
                None => format!("{name}: renamed"),
            }
        }
        10 => {
            rows.remove(r);
            format!("{name}: removed")
        }
        11 => {
            let mut copy = row.clone();
            let copy_name = format!("{name}_copy{}", rng.u32(..1000));
            copy["name"] = value(copy_name.clone());
            // A description and a server tool no other row has: the copy is an added tool, never
            // a rename.
            copy["description"] = value(format!("A copy of {name}, number {}", rng.u32(..)));
            if server(&copy) {
                copy["remote_name"] = value(copy_name);
            }
            copy["exposure"] = value(pick(rng, &["read-only", "staging", "full", "excluded"]));
            rows.push(copy);
            format!("{name}: copied")
        }
        12 if !profiles.is_empty() => {
            let p = profiles[rng.usize(..profiles.len())].clone();
            let profile = &mut doc["profile"][p.as_str()];
            let what = if rng.bool() {
                profile.as_table_like_mut().map(|t| t.remove("max_inline"));
                "none".to_string()
            } else {
                let v = rng.i64(1..60);
                profile["max_inline"] = value(v);
                v.to_string()
            };
            format!("profile {p}: max_inline = {what}")
        }
        13 if !presets.is_empty() && !profiles.is_empty() => {
            let preset = presets[rng.usize(..presets.len())].clone();
            let mut choices = profiles.clone();
            choices.push("full".to_string());
            let p = choices[rng.usize(..choices.len())].clone();
            doc["preset"][preset.as_str()]["profile"] = value(p.clone());
            format!("preset {preset}: profile = {p}")
        }
        14 => {
            // Half the time a server row, which few random picks would hit.
            let servers: Vec<usize> = (0..n)
                .filter(|&k| rows.get(k).is_some_and(server))
                .collect();
            let r = if rng.bool() && !servers.is_empty() {
                servers[rng.usize(..servers.len())]
            } else {
                r
            };
            let row = rows.get_mut(r).expect("row r");
            let name = row["name"].as_str().unwrap_or_default().to_string();
            if rng.bool() {
                row.remove("remote_name");
                format!("{name}: no remote_name")
            } else {
                let v = format!("{name}_v{}", rng.u32(..1000));
                row["remote_name"] = value(v.clone());
                format!("{name}: remote_name = {v}")
            }
        }
        15 => {
            if rng.bool() {
                row.remove("timeout_ms");
                format!("{name}: no timeout_ms")
            } else {
                let v = rng.i64(1..600_000);
                row["timeout_ms"] = value(v);
                format!("{name}: timeout_ms = {v}")
            }
        }
        16 | 17 if !profiles.is_empty() && !presets.is_empty() => {
            let (table, names) = if rng.bool() {
                ("profile", &profiles)
            } else {
                ("preset", &presets)
            };
            let entry = names[rng.usize(..names.len())].clone();
            let t = &mut doc[table][entry.as_str()];
            let what = match rng.u8(..4) {
                0 => {
                    t.as_table_like_mut().map(|t| t.remove("max_tools"));
                    "max_tools = none".to_string()
                }
                1 => {
                    let v = rng.i64(20..200);
                    t["max_tools"] = value(v);
                    format!("max_tools = {v}")
                }
                2 => {
                    t.as_table_like_mut().map(|t| t.remove("client"));
                    "client = none".to_string()
                }
                _ => {
                    let v = pick(rng, &["cursor", "windsurf", "copilot"]);
                    t["client"] = value(v.clone());
                    format!("client = {v}")
                }
            };
            format!("{table} {entry}: {what}")
        }
        18 if !profiles.is_empty() => {
            let p = profiles[rng.usize(..profiles.len())].clone();
            let v = rng.i64(0..2000);
            doc["profile"][p.as_str()]["manifest_tokens"] = value(v);
            format!("profile {p}: manifest_tokens = {v}")
        }
        19 => {
            let v = rng.i64(1..60);
            doc["review_inline"] = value(v);
            format!("catalog: review_inline = {v}")
        }
        20 if !servers.is_empty() => {
            let server = servers[rng.usize(..servers.len())].clone();
            let t = &mut doc["mcp_server"][server.as_str()];
            let what = match rng.u8(..3) {
                0 => {
                    t["command"] = value(format!("other-mcp-{}", rng.u32(..)));
                    "command"
                }
                1 => {
                    let mut args = Array::new();
                    args.push(format!("--flag-{}", rng.u32(..)));
                    t["args"] = value(args);
                    "args"
                }
                _ => {
                    t["description"] = value(format!("Edited server {}", rng.u32(..)));
                    "description"
                }
            };
            format!("mcp_server {server}: {what}")
        }
        _ => "nothing".to_string(),
    }
}

/// The rows (by name before any rename) a case's edits changed, besides renaming or copying them:
/// a renamed row among them is a rename only while it keeps its identity ([`same_identity`]).
fn changed_rows(edits: &[String]) -> BTreeSet<String> {
    edits
        .iter()
        .filter(|e| !e.ends_with(": renamed") && !e.ends_with(": copied"))
        .filter(|e| {
            !e.starts_with("profile ")
                && !e.starts_with("preset ")
                && !e.starts_with("catalog:")
                && !e.starts_with("mcp_server ")
        })
        .filter_map(|e| e.split_once(": "))
        .map(|(name, _)| {
            let mut name = name;
            while let Some(base) = name.strip_suffix("_renamed") {
                name = base;
            }
            name.to_string()
        })
        .collect()
}

/// For each tool of `new`, the index of the tool of `old` it came from: the same exported name,
/// or the name before the edits appended `_renamed` when no other edit changed the row (see
/// [`changed_rows`]) or the row kept its identity (see [`same_identity`]); `None` for a copy or a
/// renamed row that is neither. A renamed row with an origin is compared field by field.
fn origin(old: &Tables, new: &Tables, changed: &BTreeSet<String>) -> Vec<Option<usize>> {
    let find = |name: &str| old.exported_names.iter().position(|n| n == name);
    new.exported_names
        .iter()
        .enumerate()
        .map(|(j, name)| {
            let mut name: &str = name;
            let mut renamed = false;
            loop {
                if let Some(i) = find(name) {
                    let kept = !renamed
                        || !changed.contains(&*old.names[i])
                        || same_identity(old, i, new, j);
                    return kept.then_some(i);
                }
                name = name.strip_suffix("_renamed")?;
                renamed = true;
            }
        })
        .collect()
}

/// The source of tool `i`: `local`, `loop` or its server's name.
fn source(t: &Tables, i: usize) -> &str {
    match t.source[i] {
        SOURCE_LOCAL => "local",
        SOURCE_LOOP => "loop",
        s => &t.server_names[s as usize],
    }
}

/// Whether old tool `i` and new tool `j` are one tool under two names: the same source and, for a
/// server tool, the same server tool run, for a local tool the same description.
fn same_identity(old: &Tables, i: usize, new: &Tables, j: usize) -> bool {
    source(old, i) == source(new, j)
        && match runs(new, j) {
            Some(server_tool) => runs(old, i) == Some(server_tool),
            None => old.descriptions[i] == new.descriptions[j],
        }
}

/// The server tool a call of tool `i` runs (the row's `remote_name`, else its declared name), or
/// `None` for a local tool or a meta-tool.
fn runs(t: &Tables, i: usize) -> Option<&str> {
    (t.source[i] != SOURCE_LOCAL && t.source[i] != SOURCE_LOOP)
        .then(|| t.remote_names[i].as_deref().unwrap_or(&t.names[i]))
}

/// The widening changes from `old` to `new`, computed from the bitsets; `origin[j]` is the old
/// index of new tool `j`.
fn oracle(old: &Tables, new: &Tables, origin: &[Option<usize>]) -> Found {
    let mut out = Found::new();
    let name = |j: usize| new.exported_names[j].to_string();
    let restricted = |t: &Tables| 0..t.profile_names.len() - 1;
    let old_profile = |p: &str| old.profile_names.iter().position(|n| n == p);
    let scope_name = ["read-only", "staging", "full"];
    let owns = |t: &Tables, k: usize, i: usize| bit(t.set(&t.profile_bits, k), i);
    let listed = |t: &Tables, s: usize, i: usize| bit(t.set(&t.scope_bits, s), i);
    let has = |t: &Tables, table: &[u64], code: u8, i: usize| bit(t.set(table, code as usize), i);
    for (j, o) in origin.iter().enumerate() {
        let Some(i) = *o else {
            for k in restricted(new).filter(|&k| owns(new, k, j)) {
                out.insert((
                    WideningKind::AddedToProfile,
                    name(j),
                    Some(new.profile_names[k].to_string()),
                ));
            }
            for s in (0..2).filter(|&s| listed(new, s, j)) {
                out.insert((
                    WideningKind::AddedToScope,
                    name(j),
                    Some(scope_name[s].to_string()),
                ));
            }
            continue;
        };
        for k in restricted(new).filter(|&k| owns(new, k, j)) {
            let p = &*new.profile_names[k];
            if !old_profile(p).is_some_and(|ko| owns(old, ko, i)) {
                out.insert((WideningKind::ProfileGained, name(j), Some(p.to_string())));
            }
        }
        for s in (0..3).filter(|&s| listed(new, s, j) && !listed(old, s, i)) {
            out.insert((
                WideningKind::ScopeGained,
                name(j),
                Some(scope_name[s].to_string()),
            ));
        }
        let gated = Tier::Gated.code();
        if has(old, &old.tier_bits, gated, i) && !has(new, &new.tier_bits, gated, j) {
            out.insert((WideningKind::GateLost, name(j), None));
        }
        if bit(&new.code_mode, j) && !bit(&old.code_mode, i) {
            out.insert((WideningKind::CodeModeGained, name(j), None));
        }
        let destructive = EffectKind::Destructive.code();
        if has(new, &new.effect_bits, destructive, j) && !has(old, &old.effect_bits, destructive, i)
        {
            for k in restricted(new).filter(|&k| owns(new, k, j)) {
                out.insert((
                    WideningKind::DestructiveInRestricted,
                    name(j),
                    Some(new.profile_names[k].to_string()),
                ));
            }
        }
        let deprecated = Status::Deprecated.code();
        if has(old, &old.status_bits, deprecated, i) && !has(new, &new.status_bits, deprecated, j) {
            out.insert((WideningKind::Undeprecated, name(j), None));
        }
        if runs(new, j).is_some() && runs(new, j) != runs(old, i) {
            out.insert((WideningKind::RemoteRetargeted, name(j), None));
        }
        if let Some((calls, window)) = old.rate_limit[i] {
            let per_second = calls as f64 / window as f64;
            if new.rate_limit[j].is_none_or(|(c, w)| c as f64 / w as f64 > per_second) {
                out.insert((WideningKind::RateLimitLoosened, name(j), None));
            }
        }
    }
    let mut raised = |subject: &str, field: &str, before: Option<u32>, after: Option<u32>| {
        if before.is_some_and(|b| after.is_none_or(|a| a > b)) {
            out.insert((
                WideningKind::CapRaised,
                subject.to_string(),
                Some(field.into()),
            ));
        }
    };
    for k in restricted(new) {
        let p = &*new.profile_names[k];
        if let Some(ko) = old_profile(p) {
            raised(
                p,
                "max_inline",
                old.profile_max_inline[ko],
                new.profile_max_inline[k],
            );
            raised(
                p,
                "max_tools",
                old.profile_max_tools[ko],
                new.profile_max_tools[k],
            );
        }
    }
    for (k, preset) in new.preset_names.iter().enumerate() {
        if let Some(ko) = old.preset_names.iter().position(|n| n == preset) {
            raised(
                preset,
                "max_tools",
                old.preset_max_tools[ko],
                new.preset_max_tools[k],
            );
        }
    }
    for (k, preset) in new.preset_names.iter().enumerate() {
        let Some(ko) = old.preset_names.iter().position(|n| n == preset) else {
            continue;
        };
        let (before, after) = (
            old.preset_profile[ko] as usize,
            new.preset_profile[k] as usize,
        );
        if old.profile_names[before] == new.profile_names[after] {
            continue;
        }
        let wider = origin
            .iter()
            .enumerate()
            .any(|(j, o)| o.is_some_and(|i| owns(new, after, j) && !owns(old, before, i)));
        if wider {
            out.insert((
                WideningKind::PresetProfileWidened,
                preset.to_string(),
                Some(new.profile_names[after].to_string()),
            ));
        }
    }
    for (k, server) in new.server_names.iter().enumerate() {
        let Some(ko) = old.server_names.iter().position(|n| n == server) else {
            continue;
        };
        let mut fields = Vec::new();
        if old.server_commands[ko] != new.server_commands[k] {
            fields.push("command");
        }
        if old.server_args[ko] != new.server_args[k] {
            fields.push("args");
        }
        if old.server_urls[ko] != new.server_urls[k] {
            fields.push("url");
        }
        if !fields.is_empty() {
            out.insert((
                WideningKind::ServerRetargeted,
                server.to_string(),
                Some(fields.join(", ")),
            ));
        }
    }
    out
}

#[test]
fn diff_agrees_with_the_tables_over_random_edits() {
    let source = reference();
    let old = toolcat_catalog::compile_str("tools.toml", &source)
        .expect("the reference catalog compiles")
        .tables;
    let (mut valid, mut invalid, mut widening, mut renamed_and_changed) = (0, 0, 0, 0);
    let (mut kinds_seen, mut caps_seen) = (BTreeSet::new(), BTreeSet::new());
    for case in 0..CASES {
        let mut rng = fastrand::Rng::with_seed(SEED + case);
        let mut doc: DocumentMut = source.parse().expect("the reference catalog parses");
        let edits: Vec<String> = (0..rng.usize(1..=3))
            .map(|_| edit(&mut rng, &mut doc))
            .collect();
        let text = doc.to_string();
        let Ok(compiled) = toolcat_catalog::compile_str("tools.toml", &text) else {
            invalid += 1;
            continue;
        };
        valid += 1;
        let new = compiled.tables;
        let d = diff(&old, &new);
        let found: Found = d
            .widenings
            .iter()
            .map(|w| (w.kind, w.subject.clone(), w.detail.clone()))
            .collect();
        assert_eq!(
            d.widenings.len(),
            found.len(),
            "case {case} ({edits:?}): a widening reported twice"
        );
        let from = origin(&old, &new, &changed_rows(&edits));
        let expected = oracle(&old, &new, &from);
        let missed: Vec<_> = expected.difference(&found).collect();
        let invented: Vec<_> = found.difference(&expected).collect();
        assert!(
            missed.is_empty() && invented.is_empty(),
            "case {case} (seed {}), edits {edits:?}: missed {missed:?}, invented {invented:?}",
            SEED + case
        );
        // Rows added, removed or renamed are tool changes other than `changed`, and only they are.
        let structural = from.len() != old.len
            || from
                .iter()
                .enumerate()
                .any(|(j, o)| o.is_none_or(|i| old.exported_names[i] != new.exported_names[j]));
        let reported = d.tools.iter().any(|t| t.change != ChangeKind::Changed);
        assert_eq!(
            structural, reported,
            "case {case} ({edits:?}): {:#?}",
            d.tools
        );
        widening += usize::from(!found.is_empty());
        renamed_and_changed += usize::from(
            d.tools
                .iter()
                .any(|t| t.change == ChangeKind::Renamed && !t.fields.is_empty()),
        );
        kinds_seen.extend(found.iter().map(|f| f.0));
        caps_seen.extend(
            found
                .iter()
                .filter(|f| f.0 == WideningKind::CapRaised)
                .filter_map(|f| f.2.clone()),
        );
    }
    eprintln!("{valid} valid cases ({widening} with a widening, {renamed_and_changed} with a renamed and changed tool), {invalid} invalid edits skipped; kinds seen: {kinds_seen:?}");
    assert!(
        renamed_and_changed > 0,
        "no case renamed and changed a tool"
    );
    assert!(
        valid >= CASES as usize * 3 / 4,
        "only {valid} of {CASES} cases were valid"
    );
    assert_eq!(
        caps_seen,
        BTreeSet::from(["max_inline".to_string(), "max_tools".to_string()]),
        "a cap no case raised"
    );
    for kind in WideningKind::ALL {
        assert!(
            kinds_seen.contains(kind),
            "no case produced `{}`",
            kind.as_str()
        );
    }
}
