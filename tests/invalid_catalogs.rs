//! Malformed catalogs: every fixture in `tests/fixtures/invalid/` is compiled and its rendered
//! diagnostics are snapshotted (one snapshot per file). Each fixture's first line names the codes it
//! must produce (`# expect: E0402` or `# expect: E0301, E0302`); the test checks that exactly those
//! codes appear, so a snapshot cannot drift to the wrong error, and that no fixture panics.

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use toolcat_catalog::diagnostics::{render_all, Diagnostic};

/// Compiles `source` and returns every diagnostic (the warnings of a catalog that compiled, or
/// the findings of one that did not), and whether it compiled; fails naming `path` on a panic.
fn compile(path: &str, source: &str) -> (Vec<Diagnostic>, bool) {
    match catch_unwind(AssertUnwindSafe(|| {
        toolcat_catalog::compile_str(path, source)
    })) {
        Ok(Ok(compiled)) => (compiled.warnings, true),
        Ok(Err(diagnostics)) => (diagnostics, false),
        Err(_) => panic!("compiling `{path}` panicked: the pipeline must report, never panic"),
    }
}

/// The text of a fixture and, for one that is not UTF-8, its E0106 diagnostic (the text then has
/// U+FFFD for each bad sequence, as [`toolcat_catalog::load::decode`] gives it).
fn read_fixture(path: &Path) -> (String, Option<Diagnostic>) {
    let bytes = std::fs::read(path).expect("fixture is readable");
    match toolcat_catalog::load::decode(bytes) {
        Ok(text) => (text, None),
        Err(e) => (e.text, Some(e.diagnostic)),
    }
}

/// The codes named on a fixture's `# expect: ...` first line.
fn expected_codes(path: &str, source: &str) -> BTreeSet<String> {
    let first = source.lines().next().unwrap_or_default();
    let Some(list) = first.strip_prefix("# expect:") else {
        panic!("`{path}` must start with a `# expect: CODE, ...` line");
    };
    let codes: BTreeSet<String> = list
        .split(',')
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    assert!(
        !codes.is_empty(),
        "`{path}`: the `# expect:` line names no code"
    );
    codes
}

fn fixture_path(path: &Path) -> String {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .expect("fixture names are UTF-8");
    format!("tests/fixtures/invalid/{name}")
}

#[test]
fn invalid_catalogs_report_their_codes() {
    insta::glob!("fixtures/invalid/*.toml", |path| {
        let shown = fixture_path(path);
        let (source, not_utf8) = read_fixture(path);
        let expected = expected_codes(&shown, &source);
        let (diagnostics, compiled) = match not_utf8 {
            Some(d) => (vec![d], false),
            None => compile(&shown, &source),
        };
        let found: BTreeSet<String> = diagnostics.iter().map(|d| d.code.to_string()).collect();
        assert_eq!(
            found, expected,
            "`{shown}` should produce exactly the codes of its `# expect:` line"
        );
        let expects_error = expected.iter().any(|c| c.starts_with('E'));
        assert_eq!(
            compiled, !expects_error,
            "`{shown}`: a catalog compiles if and only if it has no errors"
        );
        let rendered = render_all(&diagnostics, &shown, &source);
        for d in &diagnostics {
            let headline = d.headline(&shown, &source);
            assert!(
                rendered.contains(&format!("{headline}\n")),
                "`{shown}`: every diagnostic starts with its `PATH:LINE:COL: ` headline"
            );
            assert!(
                d.help.is_some(),
                "`{shown}`: {} has no help line naming the fix",
                d.code
            );
        }
        let starts: Vec<usize> = diagnostics.iter().map(|d| d.span.start).collect();
        assert!(
            starts.windows(2).all(|w| w[0] <= w[1]),
            "`{shown}`: diagnostics are in source order"
        );
        insta::assert_snapshot!("diagnostics", rendered);
    });
}

#[test]
fn valid_small_catalog_compiles_clean() {
    let path = "tests/fixtures/valid/small.toml";
    let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .expect("the valid fixture is readable");
    let (diagnostics, compiled) = compile(path, &source);
    assert!(
        compiled && diagnostics.is_empty(),
        "{}",
        render_all(&diagnostics, path, &source)
    );
}

#[test]
fn every_rule_has_a_fixture() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/invalid");
    let mut covered = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("fixture directory") {
        let path = entry.expect("directory entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            let (source, _) = read_fixture(&path);
            covered.extend(expected_codes(&fixture_path(&path), &source));
        }
    }
    let missing: Vec<&str> = toolcat_catalog::validate::RULES
        .iter()
        .map(|rule| rule.code)
        .filter(|code| !covered.contains(*code))
        .collect();
    assert!(
        missing.is_empty(),
        "rules without a fixture in tests/fixtures/invalid: {missing:?}"
    );
}

/// Damaged variants of the valid catalog (each line deleted, each line doubled, the file cut off
/// inside each line) are reported, never panicked on, and every report renders with a headline.
#[test]
fn damaged_catalogs_never_panic() {
    let path = "tests/fixtures/valid/small.toml";
    let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .expect("the valid fixture is readable");
    let lines: Vec<&str> = source.split_inclusive('\n').collect();
    let mut variants: Vec<(String, String)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let mut deleted = lines.clone();
        deleted.remove(i);
        variants.push((format!("line {} deleted", i + 1), deleted.concat()));
        let mut doubled = lines.clone();
        doubled.insert(i, line);
        variants.push((format!("line {} doubled", i + 1), doubled.concat()));
        let start: usize = lines[..i].iter().map(|l| l.len()).sum();
        let middle = start + line.len() / 2;
        if source.is_char_boundary(middle) {
            variants.push((
                format!("cut inside line {}", i + 1),
                source[..middle].to_string(),
            ));
        }
    }
    let mut failing = 0;
    for (what, text) in &variants {
        let (diagnostics, compiled) = compile(&format!("{path} ({what})"), text);
        if !compiled {
            failing += 1;
        }
        for d in &diagnostics {
            let rendered = d.render(path, text);
            assert!(
                rendered.starts_with(&format!("{path}:"))
                    && rendered.contains(&format!("[{}]: ", d.code)),
                "{what}: malformed rendering\n{rendered}"
            );
        }
    }
    assert!(
        failing > variants.len() / 4,
        "damage should mostly be caught ({failing} of {})",
        variants.len()
    );
}

/// A `tools.toml` that is not UTF-8, read through the runtime's loader (what `toolcat check
/// --catalog` and every other command read): a located E0106 naming the path, the line and
/// column of the first bad byte, and the fix.
#[test]
fn a_catalog_that_is_not_utf8_is_located() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/invalid/60-not-utf8.toml");
    let err = toolcat::catalog::read_catalog_source(&path).expect_err("not UTF-8");
    let text = err.to_string();
    // Line 9 is `description = "Lit le fichier demandé"`; the byte 0xE9 is its 37th character.
    let headline = format!(
        "{}:9:37: error[E0106]: the file is not UTF-8: `0xE9` here is not a UTF-8 character",
        path.display()
    );
    assert!(text.starts_with(&headline), "{text}");
    assert!(text.contains("save the file as UTF-8"), "{text}");
    assert!(!text.contains("permissions"), "{text}");
}
