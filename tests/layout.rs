//! Text-level rules of the workspace layout (rust-analyzer's tidy tests): each crate's modules
//! form no import circle, every crate root but the encoder's forbids `unsafe`, optional parts of
//! the coordinator and the session sit behind traits rather than `cfg`-gated fields, and the
//! runtime library carries no benchmark harness. Each failure names the file, the line and the
//! rule.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use toolcat_ui_tests::code_only;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The one crate allowed `unsafe` code: the sentence encoder's kernels.
const UNSAFE_CRATE: &str = "semantic";

/// A workspace crate: its directory (relative to the root, "" for the root package) and the
/// source files of its library and binaries.
struct Crate {
    dir: String,
    roots: Vec<PathBuf>,
}

/// The root package and every `[workspace] members` entry of the root Cargo.toml.
fn crates() -> Vec<Crate> {
    let manifest: toml::Table = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml"))
        .expect("Cargo.toml reads")
        .parse()
        .expect("Cargo.toml parses");
    let members = manifest["workspace"]["members"]
        .as_array()
        .expect("[workspace] members is an array");
    let mut dirs = vec![String::new()];
    dirs.extend(
        members
            .iter()
            .map(|m| m.as_str().expect("a member is a path").to_owned()),
    );
    dirs.into_iter()
        .map(|dir| {
            let base = Path::new(ROOT).join(&dir);
            let manifest: toml::Table = std::fs::read_to_string(base.join("Cargo.toml"))
                .expect("a member's Cargo.toml reads")
                .parse()
                .expect("a member's Cargo.toml parses");
            let mut roots = Vec::new();
            let lib = manifest
                .get("lib")
                .and_then(|l| l.get("path"))
                .and_then(|p| p.as_str())
                .unwrap_or("src/lib.rs");
            roots.push(base.join(lib));
            if let Some(bins) = manifest.get("bin").and_then(|b| b.as_array()) {
                for bin in bins {
                    if let Some(path) = bin.get("path").and_then(|p| p.as_str()) {
                        roots.push(base.join(path));
                    }
                }
            }
            roots.push(base.join("src/main.rs"));
            // Binaries Cargo discovers: `src/bin/NAME.rs`.
            if let Ok(entries) = std::fs::read_dir(base.join("src/bin")) {
                for entry in entries {
                    let path = entry.expect("a directory entry reads").path();
                    if path.extension().is_some_and(|e| e == "rs") {
                        roots.push(path);
                    }
                }
            }
            roots.sort();
            roots.dedup();
            roots.retain(|r| r.is_file());
            Crate { dir, roots }
        })
        .collect()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry reads").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The module path of a file under `src/`: `src/a.rs` and `src/a/mod.rs` are `[a]`,
/// `src/a/b.rs` is `[a, b]`; crate roots are `[]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).expect("the file is under src/");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if !(stem == "mod" || (parts.is_empty() && (stem == "lib" || stem == "main"))) {
        parts.push(stem.to_owned());
    }
    parts
}

/// Identifier at the start of `text` (after spaces).
fn leading_ident(text: &str) -> &str {
    let text = text.trim_start();
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The top-level modules `code` names through `crate::…` or `super::…` paths, with the line of
/// each first mention. `here` is the module path of the file; `tops` the crate's top-level
/// modules (other words are items of the crate root).
fn referenced_tops(
    code: &str,
    here: &[String],
    tops: &BTreeSet<String>,
) -> BTreeMap<String, usize> {
    let mut found = BTreeMap::new();
    let bytes = code.as_bytes();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let record = |name: &str, at: usize, found: &mut BTreeMap<String, usize>| {
        if tops.contains(name) {
            found.entry(name.to_owned()).or_insert_with(|| line_of(at));
        }
    };
    let mut at = 0;
    while let Some(offset) = code[at..].find("::") {
        let sep = at + offset;
        at = sep + 2;
        // The path segment before `::`, and whether it is the first of its path.
        let start = code[..sep]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let segment = &code[start..sep];
        let preceded_by_path = start >= 2 && &code[start - 2..start] == "::";
        if preceded_by_path {
            continue;
        }
        let (base, mut rest): (Vec<String>, usize) = match segment {
            "crate" => (Vec::new(), at),
            "super" => {
                // `super::super::…`: one level up per `super`.
                let mut depth = 1;
                let mut rest = at;
                while code[rest..].starts_with("super::") {
                    depth += 1;
                    rest += "super::".len();
                }
                let keep = here.len().saturating_sub(depth);
                (here[..keep].to_vec(), rest)
            }
            _ => continue,
        };
        if let Some(top) = base.first() {
            record(top, sep, &mut found);
            continue;
        }
        while rest < bytes.len() && bytes[rest] == b' ' {
            rest += 1;
        }
        if rest < bytes.len() && bytes[rest] == b'{' {
            // `crate::{a::X, b, self}`: the first identifier of each top-level item.
            let mut depth = 0;
            let mut item_start = rest + 1;
            for (i, c) in code[rest..].char_indices() {
                let i = rest + i;
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 1 => {
                        record(leading_ident(&code[item_start..i]), i, &mut found);
                        item_start = i + 1;
                        if c == '}' {
                            break;
                        }
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
        } else {
            record(leading_ident(&code[rest..]), sep, &mut found);
        }
    }
    found
}

/// `code` with every `#[cfg(test)] mod NAME { … }` block blanked out (line breaks kept): what a
/// module's own tests import is not a dependency of the module.
fn without_test_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = &rest[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let is_inline_mod = trimmed.starts_with("mod ")
            && trimmed
                .find(['{', ';'])
                .is_some_and(|i| trimmed.as_bytes()[i] == b'{');
        if !is_inline_mod {
            out.push_str(&rest[..at + "#[cfg(test)]".len()]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..at]);
        let open = at + rest[at..].find('{').expect("an inline module has a body");
        let mut depth = 0;
        let mut end = rest.len();
        for (i, c) in rest[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.extend(rest[at..end].chars().filter(|&c| c == '\n'));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Top-level modules a crate root declares only for tests (`#[cfg(test)] mod NAME;`).
fn test_only_modules(roots: &[PathBuf]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for root in roots {
        let text = std::fs::read_to_string(root).expect("a crate root reads");
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for pair in lines.windows(2) {
            if pair[0] == "#[cfg(test)]" {
                if let Some(name) = pair[1]
                    .strip_prefix("mod ")
                    .and_then(|n| n.strip_suffix(';'))
                {
                    names.insert(name.to_owned());
                }
            }
        }
    }
    names
}

/// For one crate: each top-level module and the top-level modules it names, with where. Test
/// code (inline `#[cfg(test)]` modules, modules declared only for tests) is left out.
fn module_graph(krate: &Crate) -> BTreeMap<String, BTreeMap<String, (PathBuf, usize)>> {
    let src = Path::new(ROOT).join(&krate.dir).join("src");
    let files = rust_files(&src);
    let test_only = test_only_modules(&krate.roots);
    let tops: BTreeSet<String> = files
        .iter()
        .filter_map(|f| module_path(&src, f).into_iter().next())
        .filter(|m| !test_only.contains(m))
        .collect();
    let mut graph: BTreeMap<String, BTreeMap<String, (PathBuf, usize)>> = BTreeMap::new();
    for file in &files {
        let here = module_path(&src, file);
        let Some(top) = here.first().cloned() else {
            continue; // crate roots declare and re-export modules: not an import
        };
        if test_only.contains(&top) {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("a source file reads");
        let code = without_test_modules(&code_only(&text));
        for (name, line) in referenced_tops(&code, &here, &tops) {
            if name != top {
                graph
                    .entry(top.clone())
                    .or_default()
                    .entry(name)
                    .or_insert_with(|| (file.clone(), line));
            }
        }
    }
    graph
}

fn relative(path: &Path) -> String {
    path.strip_prefix(ROOT)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let mut faults = Vec::new();
    for krate in crates() {
        let graph = module_graph(&krate);
        for (from, edges) in &graph {
            for (to, (file, line)) in edges {
                if from >= to {
                    continue;
                }
                if let Some((back_file, back_line)) = graph.get(to).and_then(|e| e.get(from)) {
                    faults.push(format!(
                        "`{from}` and `{to}` import each other: {}:{line} names `{to}`, {}:{back_line} \
                         names `{from}`; move what both need into a module neither imports",
                        relative(file),
                        relative(back_file)
                    ));
                }
            }
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn the_import_check_sees_plain_grouped_and_super_paths() {
    let tops: BTreeSet<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
    let here = vec!["a".to_owned(), "inner".to_owned()];
    let code = "use crate::b::X;\nuse crate::{c::Y, self};\nfn f() { super::super::d::g(); x::crate_y::z(); }";
    let found = referenced_tops(code, &here, &tops);
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        vec![
            ("b".to_owned(), 1),
            ("c".to_owned(), 2),
            ("d".to_owned(), 3)
        ]
    );
    // What a module's tests import does not count.
    let code =
        "use crate::b::X;\n#[cfg(test)]\nmod tests {\n    use crate::c::Y;\n}\nuse crate::d::Z;";
    let found = referenced_tops(&without_test_modules(code), &here, &tops);
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        vec![("b".to_owned(), 1), ("d".to_owned(), 6)]
    );
    // `super::` one level below the top stays in the same module.
    let found = referenced_tops("use super::Z;", &here, &tops);
    assert_eq!(found.keys().collect::<Vec<_>>(), vec!["a"]);
}

#[test]
fn every_crate_root_but_the_encoders_forbids_unsafe_code() {
    let mut faults = Vec::new();
    let mut checked = 0;
    for krate in crates() {
        if krate.dir == UNSAFE_CRATE {
            continue;
        }
        for root in &krate.roots {
            checked += 1;
            let text = std::fs::read_to_string(root).expect("a crate root reads");
            if !code_only(&text).contains("#![forbid(unsafe_code)]") {
                faults.push(format!(
                    "{}: add `#![forbid(unsafe_code)]` (only the `{UNSAFE_CRATE}` crate may use unsafe)",
                    relative(root)
                ));
            }
        }
    }
    assert!(checked >= 5, "only {checked} crate roots found");
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// The lines of the body of `struct NAME { … }` in `file`, with their line numbers.
fn struct_body(file: &str, name: &str) -> Vec<(usize, String)> {
    let path = Path::new(ROOT).join(file);
    let text = std::fs::read_to_string(&path).expect("the source file reads");
    let header = format!("pub struct {name}");
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| {
            l.trim_start()
                .strip_prefix(&header)
                .is_some_and(|rest| rest.starts_with([' ', '<']))
                && l.trim_end().ends_with('{')
        })
        .unwrap_or_else(|| panic!("{file}: no `pub struct {name} {{`"));
    lines[start + 1..]
        .iter()
        .enumerate()
        .take_while(|(_, l)| !l.starts_with('}'))
        .map(|(i, l)| (start + 2 + i, l.to_string()))
        .collect()
}

#[test]
fn coordinator_and_session_have_no_feature_gated_fields() {
    let mut faults = Vec::new();
    for (file, name) in [
        ("runtime/src/coordinator.rs", "Coordinator"),
        ("runtime/src/session.rs", "Session"),
    ] {
        let body = struct_body(file, name);
        assert!(body.len() > 2, "{file}: `{name}` has no fields to check");
        for (line, text) in body {
            if text.contains("cfg(feature") {
                faults.push(format!(
                    "{file}:{line}: a field of `{name}` behind a feature; hold the optional part \
                     as a trait object instead"
                ));
            }
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn the_runtime_library_holds_no_benchmark_harness() {
    let manifest: toml::Table = std::fs::read_to_string(Path::new(ROOT).join("runtime/Cargo.toml"))
        .expect("runtime/Cargo.toml reads")
        .parse()
        .expect("runtime/Cargo.toml parses");
    let dependencies = manifest["dependencies"]
        .as_table()
        .expect("runtime/Cargo.toml has [dependencies]");
    for harness in ["csv", "criterion", "toolcat-import"] {
        assert!(
            !dependencies.contains_key(harness),
            "runtime/Cargo.toml: `{harness}` is a dependency of the runtime library; the \
             evaluation harness lives in the CLI crate (src/eval.rs)"
        );
    }
    let lib = std::fs::read_to_string(Path::new(ROOT).join("runtime/src/lib.rs"))
        .expect("runtime/src/lib.rs reads");
    assert!(
        !code_only(&lib).lines().any(|l| l.trim() == "pub mod eval;"),
        "runtime/src/lib.rs: `pub mod eval` is the evaluation harness; it lives in the CLI crate"
    );
}

#[test]
fn library_crates_log_through_tracing_not_standard_error() {
    let mut faults = Vec::new();
    let mut checked = 0;
    for krate in crates() {
        // The CLI (the root package) and the unpublished benchmarks own their terminal.
        if krate.dir.is_empty() || krate.dir == "bench" {
            continue;
        }
        for file in rust_files(&Path::new(ROOT).join(&krate.dir).join("src")) {
            checked += 1;
            let text = std::fs::read_to_string(&file).expect("a source file reads");
            for (i, line) in without_test_modules(&code_only(&text)).lines().enumerate() {
                if line.contains("eprintln!") || line.contains("eprint!") {
                    faults.push(format!(
                        "{}:{}: a library writes to standard error; emit a `tracing` event \
                         (the CLI installs the subscriber)",
                        relative(&file),
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} library source files found");
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}
