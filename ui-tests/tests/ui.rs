//! `#[tool]` and the generated glue as a user meets them: compile-fail cases with reviewed
//! `.stderr` files (trybuild), pass cases that run the dispatch table, and a text-level check that
//! the declarations module imports nothing.
//!
//! The cases compile against tests/ui/tools.toml. The build helper compiles it into a directory
//! shaped like a build script's `OUT_DIR`, which the cases include with
//! `toolcat::include_catalog!(env!("TOOLCAT_UI_CATALOG_DIR"))`; `TOOLCAT_CATALOG` points `#[tool]`
//! at the same file. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p toolcat-ui-tests` and
//! review the diff.

use std::path::{Path, PathBuf};

use toolcat_codegen::build::{generate, Directive};
use toolcat_codegen::emit;
use toolcat_ui_tests::code_only;

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// Compiles tests/ui/tools.toml into `<target>/tmp/toolcat-ui-<hash>/out/` and returns that
/// directory. The `NAME-<16 hex digits>/out` shape is what trybuild recognises as a build script's
/// `OUT_DIR`, so `.stderr` files show the generated glue as `$OUT_DIR[toolcat-ui]/...` wherever
/// the target directory is.
fn compile_ui_catalog() -> PathBuf {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("toolcat-ui-0000000000000000")
        .join("out");
    let directives = generate(
        &Path::new(MANIFEST_DIR).join("tests/ui"),
        Path::new("tools.toml"),
        &out_dir,
    );
    let errors: Vec<String> = directives
        .iter()
        .filter(|d| matches!(d, Directive::Error(_)))
        .map(ToString::to_string)
        .collect();
    assert!(
        errors.is_empty(),
        "tests/ui/tools.toml must compile:\n{}",
        errors.join("\n")
    );
    out_dir
}

#[test]
fn tool_attribute_cases() {
    let out_dir = compile_ui_catalog();
    // The cases are compiled by a cargo that inherits this process's environment; std serializes
    // environment access, so setting it here is safe while other tests spawn processes.
    std::env::set_var(
        emit::CATALOG_ENV,
        Path::new(MANIFEST_DIR).join("tests/ui/tools.toml"),
    );
    std::env::set_var("TOOLCAT_UI_CATALOG_DIR", &out_dir);
    // trybuild's crate does not inherit the workspace's `[profile.dev]`: no debug info, as the
    // quick-start test builds (tests/build_script.rs), which shares trybuild's target directory
    // and so reuses the dependencies compiled here.
    std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "false");

    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    // rustc's wording and layout change between releases; the `.stderr` files are pinned to one.
    match rustc_release() {
        Some(release) if release == UI_RUSTC => cases.compile_fail("tests/ui/tool/*.rs"),
        other => eprintln!(
            "skipping the compile-fail cases: their .stderr files are pinned to rustc {UI_RUSTC}, \
             this is {}",
            other.as_deref().unwrap_or("an unknown rustc")
        ),
    }
}

/// The rustc release the compile-fail `.stderr` files were produced with.
const UI_RUSTC: &str = "1.95";

/// `MAJOR.MINOR` of the rustc that cargo uses (`$RUSTC`, else `rustc`).
fn rustc_release() -> Option<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    Some(format!("{}.{}", parts.next()?, parts.next()?))
}

/// The declarations module compiles in any crate: it has no `use` of anything but `std`/`core`
/// and names no toolcat path (rust-analyzer's tidy-test style: read the text, name the line).
#[test]
fn declarations_import_nothing() {
    let out_dir = compile_ui_catalog();
    let path = out_dir.join(emit::DECLARATIONS_FILE);
    let text = std::fs::read_to_string(&path).expect("the declarations were just written");
    assert!(
        text.starts_with(emit::HEADER),
        "{} lacks the header",
        path.display()
    );
    let mut faults = Vec::new();
    for (i, line) in code_only(&text).lines().enumerate() {
        let code = line.trim();
        if let Some(rest) = code
            .strip_prefix("use ")
            .or_else(|| code.strip_prefix("pub use "))
        {
            let std_path = ["::std::", "std::", "::core::", "core::"]
                .iter()
                .any(|p| rest.starts_with(p));
            if !std_path {
                faults.push(format!("line {}: `use` of a non-std path: {code}", i + 1));
            }
        }
        for word in code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.starts_with("toolcat") || word == "crate" || word == "super" {
                faults.push(format!("line {}: path outside the module: {code}", i + 1));
            }
        }
    }
    assert!(
        faults.is_empty(),
        "{} must compile anywhere:\n{}",
        path.display(),
        faults.join("\n")
    );
}
