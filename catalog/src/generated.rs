//! What generated code and the `#[tool]` macro agree on without sharing a build: the names of
//! the items the glue declares for tools, and how the build script tells the macro where the
//! catalog is.
//!
//! Identifiers derived from tool names ([`marker_idents`], [`tool_id_variants`]) are pure
//! functions of the ordered name list, so the `#[tool]` macro, which only parses `tools.toml`,
//! computes the same marker name as the emitted glue. A name starting with `r#` is a raw
//! identifier.

use std::collections::HashSet;

/// Environment variable the build helper sets (`cargo::rustc-env`) to the absolute path of the
/// catalog, so `#[tool]` reads the same file as the build script.
pub const CATALOG_ENV: &str = "TOOLCAT_CATALOG";

/// Marker type names of the local tools `names` (given in `tools.toml` order): the tool name with
/// every character other than ASCII letters, digits and `_` written as `_`; a leading digit gets
/// a `_` prefix; a keyword becomes a raw identifier (`r#type`), or gets a `_` suffix when it
/// cannot be raw (`self`, `Self`, `super`, `crate`); names that still collide get `_2`, `_3`, …
/// in order. The result is a valid Rust identifier for every input, including the empty string.
pub fn marker_idents(names: &[&str]) -> Vec<String> {
    let natural: Vec<String> = names
        .iter()
        .map(|name| {
            let mut s: String = name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            if s.is_empty() || s == "_" {
                s = format!("{s}_tool");
            } else if s.starts_with(|c: char| c.is_ascii_digit()) {
                s.insert(0, '_');
            }
            if NOT_RAW.contains(&s.as_str()) {
                s.push('_');
            } else if KEYWORDS.contains(&s.as_str()) {
                s.insert_str(0, "r#");
            }
            s
        })
        .collect();
    disambiguate(natural, |base, n| format!("{base}_{n}"))
}

/// `ToolId` variant names of the tools `names` (given in `tools.toml` order): the name split at
/// every character other than ASCII letters and digits, each part's first letter upper-cased
/// (`read_file`, `read-file` → `ReadFile`); a name starting with a digit, or empty, gets a `Tool`
/// prefix, `Self` becomes `SelfTool`; names that still collide get `2`, `3`, … in order.
pub fn tool_id_variants(names: &[&str]) -> Vec<String> {
    let natural: Vec<String> = names
        .iter()
        .map(|name| {
            let mut s = String::new();
            for part in name.split(|c: char| !c.is_ascii_alphanumeric()) {
                let mut chars = part.chars();
                if let Some(first) = chars.next() {
                    s.push(first.to_ascii_uppercase());
                    s.extend(chars);
                }
            }
            if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
                s.insert_str(0, "Tool");
            }
            if s == "Self" {
                s.push_str("Tool");
            }
            s
        })
        .collect();
    disambiguate(natural, |base, n| format!("{base}{n}"))
}

/// Keywords that cannot be raw identifiers.
const NOT_RAW: &[&str] = &["crate", "self", "super", "Self"];
/// Strict and reserved keywords of every edition (a raw identifier is valid in all of them).
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "do", "dyn",
    "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let",
    "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return",
    "static", "struct", "trait", "true", "try", "type", "typeof", "unsafe", "unsized", "use",
    "virtual", "where", "while", "yield",
];

/// Keeps unique names; the first of a colliding group keeps its name and the others get the
/// smallest suffix `n ≥ 2` that is free, in order.
fn disambiguate(natural: Vec<String>, suffix: impl Fn(&str, usize) -> String) -> Vec<String> {
    let mut taken: HashSet<String> = natural.iter().cloned().collect();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut out = Vec::with_capacity(natural.len());
    for name in &natural {
        if seen.insert(name) {
            out.push(name.clone());
            continue;
        }
        let mut n = 2;
        let fresh = loop {
            let candidate = suffix(name, n);
            if !taken.contains(&candidate) {
                break candidate;
            }
            n += 1;
        };
        taken.insert(fresh.clone());
        out.push(fresh);
    }
    out
}
