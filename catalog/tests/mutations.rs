//! Mutation test of the loader and validator: thousands of seeded mutations of the two real
//! catalogs (the reference `tools.toml` at the repository root and the quick start's
//! `tests/fixtures/quickstart/tools.toml`) are compiled as `toolcat check` and the build script
//! compile them (`toolcat_catalog::compile_str`), and their diagnostics rendered.
//!
//! Each case asserts that
//! - compiling and rendering never panic (`catch_unwind`, on a thread with the 2 MiB stack of a
//!   spawned thread, so deep nesting cannot overflow a caller's stack either);
//! - they terminate: a case still running after [`CASE_LIMIT`] fails the test, naming it;
//! - every diagnostic has a position: a span inside the text, not `0..0`, so its headline is
//!   `PATH:LINE:COL`. The pipeline has no diagnostic without one: a fault of the text always has
//!   a place in it. What has no position is reported outside it, before there is a text: a file
//!   that cannot be read (missing, a directory, too large) is an I/O error of the caller
//!   (`toolcat::catalog::read_catalog_source`, `toolcat_codegen::build::generate`); bytes that are
//!   not UTF-8 are E0106 at the first bad byte (`toolcat_catalog::load::decode`).
//!
//! The mutations work on lines, tokens and characters: delete, duplicate or swap lines; delete a
//! `[[tool]]` row or repeat one; flip a value's type; change an enum value; break a quote or a
//! bracket; truncate; insert junk, control characters or unicode (right-to-left marks, combining
//! characters, astral characters, a byte order mark, NUL); very long strings and names; deep
//! nesting of arrays and inline tables. One to three are applied per case. Case `k` of a catalog
//! uses the generator seeded with `SEED + k`, and a failing case writes its text to the temporary
//! directory and names the file, so any failure is reproduced by that file alone.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use toolcat_catalog::diagnostics::{render_all, Diagnostic};

/// The seed of case 0; case `k` uses `SEED + k`.
const SEED: u64 = 0x7001_ca75_eed5;
/// Cases per catalog: (catalog path relative to the repository root, cases). The reference
/// catalog is about 50 times the quick start's size (137 tools, 3,100 lines), so it gets fewer
/// cases in the same time.
const CATALOGS: [(&str, u64); 2] = [
    ("tools.toml", 200),
    ("tests/fixtures/quickstart/tools.toml", 2_800),
];
/// How long one case may run before the test fails it as not terminating.
const CASE_LIMIT: Duration = Duration::from_secs(60);
/// The stack of the thread the cases run on: what `std::thread::spawn` gives by default.
const STACK: usize = 2 * 1024 * 1024;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("catalog/ is inside the repository")
        .to_path_buf()
}

/// A mutation: the generator and the text in, the mutated text out.
type Mutation = fn(&mut fastrand::Rng, &str) -> String;

/// The kinds of mutation, each a function of the generator and the text.
const MUTATIONS: &[(&str, Mutation)] = &[
    ("delete a line", delete_line),
    ("duplicate a line", duplicate_line),
    ("swap two lines", swap_lines),
    ("delete a tool row", delete_row),
    ("repeat a tool row", repeat_row),
    ("flip a value's type", flip_type),
    ("change an enum value", change_enum),
    ("break a quote or bracket", break_delimiter),
    ("truncate", truncate),
    ("insert junk", insert_junk),
    ("insert unicode", insert_unicode),
    ("very long string", long_string),
    ("deep nesting", deep_nesting),
    ("delete a character", delete_char),
    ("rename a key", rename_key),
    ("empty a value", empty_value),
];

fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// A random character boundary of `text` (0 ..= len).
fn boundary(rng: &mut fastrand::Rng, text: &str) -> usize {
    let mut at = rng.usize(0..=text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn delete_line(rng: &mut fastrand::Rng, text: &str) -> String {
    let mut l = lines(text);
    if !l.is_empty() {
        l.remove(rng.usize(0..l.len()));
    }
    l.concat()
}

fn duplicate_line(rng: &mut fastrand::Rng, text: &str) -> String {
    let mut l = lines(text);
    if !l.is_empty() {
        let k = rng.usize(0..l.len());
        l.insert(k, l[k]);
    }
    l.concat()
}

fn swap_lines(rng: &mut fastrand::Rng, text: &str) -> String {
    let mut l = lines(text);
    if l.len() > 1 {
        let a = rng.usize(0..l.len());
        // Mostly neighbours (a field moved into the next row), sometimes anywhere.
        let b = if rng.bool() {
            (a + 1).min(l.len() - 1)
        } else {
            rng.usize(0..l.len())
        };
        l.swap(a, b);
    }
    l.concat()
}

/// The byte ranges of the `[[tool]]` rows: from each header to the next header of any table.
fn rows(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut starts: Vec<(usize, bool)> = Vec::new();
    let mut at = 0;
    for line in lines(text) {
        if line.starts_with('[') {
            starts.push((at, line.starts_with("[[tool]]")));
        }
        at += line.len();
    }
    let mut out = Vec::new();
    for (k, &(start, is_row)) in starts.iter().enumerate() {
        if is_row {
            let end = starts.get(k + 1).map_or(text.len(), |&(s, _)| s);
            out.push(start..end);
        }
    }
    out
}

fn delete_row(rng: &mut fastrand::Rng, text: &str) -> String {
    let r = rows(text);
    if r.is_empty() {
        return delete_line(rng, text);
    }
    let row = r[rng.usize(0..r.len())].clone();
    format!("{}{}", &text[..row.start], &text[row.end..])
}

fn repeat_row(rng: &mut fastrand::Rng, text: &str) -> String {
    let r = rows(text);
    if r.is_empty() {
        return duplicate_line(rng, text);
    }
    let row = r[rng.usize(0..r.len())].clone();
    let at = r[rng.usize(0..r.len())].end;
    format!("{}{}{}", &text[..at], &text[row.clone()], &text[at..])
}

/// The lines of `key = value` form, as (byte offset of the value, value text without newline).
fn values(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut at = 0;
    for line in lines(text) {
        if !line.starts_with('#') && !line.starts_with('[') {
            if let Some(eq) = line.find(" = ") {
                let value = line[eq + 3..].trim_end_matches(['\n', '\r']);
                out.push((at + eq + 3, value));
            }
        }
        at += line.len();
    }
    out
}

/// Replaces a random value (`key = VALUE`) with `with(value)`.
fn replace_value(
    rng: &mut fastrand::Rng,
    text: &str,
    with: impl FnOnce(&mut fastrand::Rng, &str) -> String,
) -> String {
    let v = values(text);
    if v.is_empty() {
        return insert_junk(rng, text);
    }
    let (at, value) = v[rng.usize(0..v.len())];
    let new = with(rng, value);
    format!("{}{new}{}", &text[..at], &text[at + value.len()..])
}

fn flip_type(rng: &mut fastrand::Rng, text: &str) -> String {
    replace_value(rng, text, |rng, value| {
        let inner = value.trim_matches(['"', '[', ']']);
        let options = [
            "42".to_string(),
            "-1".to_string(),
            "3.5".to_string(),
            "nan".to_string(),
            "inf".to_string(),
            "true".to_string(),
            "2030-01-31".to_string(),
            "1979-05-27T07:32:00Z".to_string(),
            format!("[{value}]"),
            format!("[{value}, 1]"),
            format!("{{ x = {value} }}"),
            "[]".to_string(),
            "{}".to_string(),
            format!("\"{inner}\""),
            format!("'{inner}'"),
            format!("\"\"\"{inner}\"\"\""),
            inner.to_string(),
            "99999999999999999999".to_string(),
            "4294967296".to_string(),
        ];
        options[rng.usize(0..options.len())].clone()
    })
}

fn change_enum(rng: &mut fastrand::Rng, text: &str) -> String {
    const WORDS: &[&str] = &[
        "inline",
        "discoverable",
        "silent",
        "gated",
        "loop",
        "read",
        "write",
        "destructive",
        "read-only",
        "staging",
        "full",
        "excluded",
        "active",
        "deprecated",
        "local",
        "openai",
        "anthropic",
        "gemini",
        "mcp",
        "Inline",
        "read_only",
        "",
        "nonsense",
    ];
    let candidates: Vec<(usize, &str)> = values(text)
        .into_iter()
        .filter(|(_, v)| v.starts_with('"') && v.ends_with('"') && v.len() < 30)
        .collect();
    if candidates.is_empty() {
        return flip_type(rng, text);
    }
    let (at, value) = candidates[rng.usize(0..candidates.len())];
    let word = WORDS[rng.usize(0..WORDS.len())];
    format!("{}\"{word}\"{}", &text[..at], &text[at + value.len()..])
}

fn break_delimiter(rng: &mut fastrand::Rng, text: &str) -> String {
    let positions: Vec<usize> = text
        .char_indices()
        .filter(|(_, c)| matches!(c, '"' | '\'' | '[' | ']' | '{' | '}' | '=' | ','))
        .map(|(k, _)| k)
        .collect();
    if positions.is_empty() {
        return insert_junk(rng, text);
    }
    let at = positions[rng.usize(0..positions.len())];
    let replacement = ["", "\"", "'", "[", "]", "{", "}", "\\", "\n"][rng.usize(0..9)];
    format!("{}{replacement}{}", &text[..at], &text[at + 1..])
}

fn truncate(rng: &mut fastrand::Rng, text: &str) -> String {
    text[..boundary(rng, text)].to_string()
}

fn insert_junk(rng: &mut fastrand::Rng, text: &str) -> String {
    const JUNK: &[&str] = &[
        "=",
        "==",
        "[",
        "[[",
        "]]",
        "[[tool]]\n",
        "[tool]\n",
        "[profile]\n",
        "[profile.x.y]\n",
        "[toolset.\"\"]\n",
        "[mcp_server.local]\ndescription = \"x\"\ncommand = \"x\"\n",
        "name = \"x\"\n",
        "tool = 1\n",
        "targets = [\"gemini\"]\n",
        "input_schema = { type = \"object\", properties = { a = { \"$ref\" = \"#\" } } }\n",
        "\\",
        "\\u{0}",
        "\\uD800",
        "#",
        "\t",
        "\r",
        "\r\n",
        "\u{0}",
        "\u{7f}",
        "\u{1b}[31m",
        "a.b.c = 1\n",
        "\"\"\"",
        "'''",
        "1e400",
        "0x7fffffffffffffff",
    ];
    let at = boundary(rng, text);
    let junk = JUNK[rng.usize(0..JUNK.len())];
    format!("{}{junk}{}", &text[..at], &text[at..])
}

fn insert_unicode(rng: &mut fastrand::Rng, text: &str) -> String {
    const CHARS: &[&str] = &[
        "\u{feff}",
        "\u{202e}",
        "\u{200b}",
        "e\u{301}",
        "\u{1f600}",
        "\u{10ffff}",
        "\u{fffd}",
        "ß",
        "İ",
        "ǅ",
        "\u{2028}",
        "\u{85}",
        "日本語",
        "\u{0}",
    ];
    let s = CHARS[rng.usize(0..CHARS.len())];
    // Inside a value (a name, a description) more often than anywhere.
    let v = values(text);
    let at = if !v.is_empty() && rng.bool() {
        let (at, value) = v[rng.usize(0..v.len())];
        at + value.len().min(1 + rng.usize(0..=value.len()))
    } else {
        rng.usize(0..=text.len())
    };
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}{s}{}", &text[..at], &text[at..])
}

fn long_string(rng: &mut fastrand::Rng, text: &str) -> String {
    replace_value(rng, text, |rng, _| {
        let n = [70, 129, 4_096, 200_000][rng.usize(0..4)];
        let unit = ["a", "é", "_", "\u{1f600}", "a b "][rng.usize(0..5)];
        format!("\"{}\"", unit.repeat(n))
    })
}

fn deep_nesting(rng: &mut fastrand::Rng, text: &str) -> String {
    replace_value(rng, text, |rng, _| {
        let depth = [50, 200, 10_000][rng.usize(0..3)];
        if rng.bool() {
            format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
        } else {
            format!("{}1{}", "{ a = ".repeat(depth), " }".repeat(depth))
        }
    })
}

fn delete_char(rng: &mut fastrand::Rng, text: &str) -> String {
    let at = boundary(rng, text);
    match text[at..].chars().next() {
        Some(c) => format!("{}{}", &text[..at], &text[at + c.len_utf8()..]),
        None => text.to_string(),
    }
}

fn rename_key(rng: &mut fastrand::Rng, text: &str) -> String {
    let v = values(text);
    if v.is_empty() {
        return insert_junk(rng, text);
    }
    let (at, _) = v[rng.usize(0..v.len())];
    let line_start = text[..at].rfind('\n').map_or(0, |k| k + 1);
    let key_end = at - 3;
    let key = &text[line_start..key_end];
    let new = match rng.usize(0..5) {
        0 => format!("{key}s"),
        1 => key.to_uppercase(),
        2 => format!("\"{key}\""),
        3 => format!("{key}.x"),
        _ => String::new(),
    };
    format!("{}{new}{}", &text[..line_start], &text[key_end..])
}

fn empty_value(rng: &mut fastrand::Rng, text: &str) -> String {
    replace_value(rng, text, |rng, value| {
        let options = ["\"\"", "\" \"", "[]", "[\"\"]", ""];
        let _ = value;
        options[rng.usize(0..options.len())].to_string()
    })
}

/// One case: the mutated text and the names of the mutations applied.
fn case(source: &str, seed: u64) -> (String, Vec<&'static str>) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut text = source.to_string();
    let mut applied = Vec::new();
    for _ in 0..rng.usize(1..=3) {
        let (name, mutate) = MUTATIONS[rng.usize(0..MUTATIONS.len())];
        text = mutate(&mut rng, &text);
        applied.push(name);
    }
    (text, applied)
}

/// The faults of one compiled case: diagnostics without a position in `text`.
fn unplaced(diagnostics: &[Diagnostic], text: &str) -> Vec<String> {
    diagnostics
        .iter()
        .filter(|d| {
            let s = &d.span;
            *s == (0..0)
                || s.start > s.end
                || s.end > text.len()
                || !text.is_char_boundary(s.start)
                || !text.is_char_boundary(s.end)
        })
        .map(|d| {
            format!(
                "{}[{}] at {:?}: {}",
                d.severity.as_str(),
                d.code,
                d.span,
                d.message
            )
        })
        .collect()
}

/// What went wrong with one case, if anything.
fn check(path: &str, text: &str) -> Option<String> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let diagnostics = match toolcat_catalog::compile_str(path, text) {
            Ok(compiled) => compiled.warnings,
            Err(diagnostics) => diagnostics,
        };
        let rendered = render_all(&diagnostics, path, text);
        (diagnostics, rendered)
    }));
    let (diagnostics, rendered) = match result {
        Ok(done) => done,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            return Some(format!("panicked: {message}"));
        }
    };
    let faults = unplaced(&diagnostics, text);
    if !faults.is_empty() {
        return Some(format!("diagnostics without a position: {faults:?}"));
    }
    for d in &diagnostics {
        let (line, col) = d.line_col(text);
        let headline = format!("{path}:{line}:{col}: ");
        if !rendered.contains(&headline) {
            return Some(format!("no `{headline}` headline for {}", d.code));
        }
    }
    None
}

/// Runs every case of one catalog on a worker thread; the test thread watches that each case
/// ends within [`CASE_LIMIT`].
fn run_catalog(relative: &'static str, cases: u64) -> Vec<String> {
    let source = std::fs::read_to_string(repository().join(relative))
        .unwrap_or_else(|e| panic!("cannot read `{relative}`: {e}"));
    let (tx, rx) = mpsc::channel::<(u64, Option<String>)>();
    let worker_source = source.clone();
    let worker = std::thread::Builder::new()
        .name(format!("mutations of {relative}"))
        .stack_size(STACK)
        .spawn(move || {
            // The panics the cases are checked for are reported by `check`, not printed.
            for k in 0..cases {
                let (text, _) = case(&worker_source, SEED + k);
                let outcome = check(relative, &text);
                if tx.send((k, outcome)).is_err() {
                    return;
                }
            }
        })
        .expect("the worker thread starts");
    let mut failures = Vec::new();
    let mut kinds_seen = std::collections::BTreeSet::new();
    for expected in 0..cases {
        match rx.recv_timeout(CASE_LIMIT) {
            Ok((k, None)) => assert_eq!(k, expected),
            Ok((k, Some(fault))) => {
                let (text, applied) = case(&source, SEED + k);
                // One report per kind of fault: the first case that shows it.
                let kind: String = fault.chars().take(60).collect();
                if kinds_seen.insert(kind) {
                    let file = std::env::temp_dir().join(format!("toolcat-mutation-{k}.toml"));
                    let _ = std::fs::write(&file, &text);
                    failures.push(format!(
                        "{relative} case {k} ({}; text in {}): {fault}",
                        applied.join(", "),
                        file.display()
                    ));
                }
            }
            Err(_) => {
                let (text, applied) = case(&source, SEED + expected);
                let file = std::env::temp_dir().join(format!("toolcat-mutation-{expected}.toml"));
                let _ = std::fs::write(&file, &text);
                failures.push(format!(
                    "{relative} case {expected} ({}; text in {}) did not end within {CASE_LIMIT:?}",
                    applied.join(", "),
                    file.display()
                ));
                // The worker is stuck in that case: the rest cannot run.
                return failures;
            }
        }
    }
    worker.join().expect("the worker ends");
    failures
}

#[test]
fn mutated_catalogs_are_reported_never_panic_and_always_point_somewhere() {
    // A panic inside a case is caught and reported; the default hook would print each one.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let failures: Vec<String> = CATALOGS
        .iter()
        .flat_map(|&(path, cases)| run_catalog(path, cases))
        .collect();
    std::panic::set_hook(hook);
    assert!(
        failures.is_empty(),
        "{} kinds of fault:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn mutations_change_the_text_and_reach_every_kind() {
    let source = std::fs::read_to_string(repository().join(CATALOGS[1].0)).expect("readable");
    let mut changed = 0;
    let mut kinds = std::collections::BTreeSet::new();
    for k in 0..500 {
        let (text, applied) = case(&source, SEED + k);
        changed += usize::from(text != source);
        kinds.extend(applied);
    }
    assert!(
        changed > 450,
        "only {changed} of 500 cases changed the text"
    );
    assert_eq!(kinds.len(), MUTATIONS.len(), "kinds reached: {kinds:?}");
}

#[test]
fn most_mutations_are_rejected_with_errors() {
    // The mutations are not all harmless: most cases of the quick start must be errors, or the
    // test above would check little.
    let source = std::fs::read_to_string(repository().join(CATALOGS[1].0)).expect("readable");
    let rejected = (0..300)
        .filter(|&k| {
            let (text, _) = case(&source, SEED + k);
            toolcat_catalog::compile_str("t.toml", &text).is_err()
        })
        .count();
    assert!(
        rejected > 150,
        "only {rejected} of 300 mutated catalogs were rejected"
    );
}

#[test]
fn diagnostics_without_a_place_are_caught() {
    let text = "name = \"é\"\n";
    let placed = Diagnostic::error("E0103", "placed", 0..4);
    assert!(unplaced(&[placed], text).is_empty());
    for span in [0..0, 3..20, 9..10] {
        let d = Diagnostic::error("E0103", "unplaced", span.clone());
        assert_eq!(unplaced(&[d], text).len(), 1, "{span:?}");
    }
}
