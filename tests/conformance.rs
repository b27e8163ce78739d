//! The exported input schemas of three real catalogs, checked against each provider's rules by
//! `toolcat_catalog::targets::conformance`: the reference catalog compiled into this crate
//! (its local tools' schemas come from their handlers), the GitHub MCP server's toolsnaps and
//! the LiveMCPBench catalog (both imported from `../shared/data`, as `toolcat import` does).
//!
//! Every tool is exported for OpenAI (strict where strict mode can express it, else the
//! `strict: false` fallback) and for Gemini (rewritten into the `Schema` subset, or refused with
//! an error finding); no exported schema may break a rule. The counts per catalog and target
//! (strict / fallback / refused) are printed (`--nocapture` shows them). The checker is also
//! run on the bad shapes the rewrites remove, so a checker that lets everything pass fails here.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use toolcat::Catalog;
use toolcat_catalog::targets::conformance::{violations, Dialect};
use toolcat_catalog::targets::{self, FindingKind};
use toolcat_import::{import, ImportKind};

fn data(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data")).join(rel)
}

fn imported(kind: ImportKind, rel: &str) -> Catalog {
    let out = import(kind, &data(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    Catalog::from_source(rel, &out.text).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// How one catalog's tools export to OpenAI and Gemini.
#[derive(Debug, Default)]
struct Counts {
    tools: usize,
    openai_strict: usize,
    openai_fallback: usize,
    gemini_exported: usize,
    gemini_refused: usize,
}

/// Exports every tool of `c` for OpenAI and Gemini; returns the counts and every violation as
/// `tool (target): violation`.
fn check_catalog(c: &Catalog) -> (Counts, Vec<String>) {
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for t in c.tools() {
        counts.tools += 1;
        let name = c.exported_name(t);
        let schema = c.input_schema(t);
        let openai = targets::openai(name, schema);
        let dialect = if openai.strict == Some(true) {
            counts.openai_strict += 1;
            Dialect::OpenAiStrict
        } else {
            counts.openai_fallback += 1;
            Dialect::OpenAi
        };
        for v in violations(Dialect::OpenAi, &openai.schema)
            .into_iter()
            .chain(if dialect == Dialect::OpenAiStrict {
                violations(dialect, &openai.schema)
            } else {
                Vec::new()
            })
        {
            failures.push(format!("`{name}` ({dialect:?}): {v}"));
        }
        let gemini = targets::gemini(name, schema);
        if gemini.is_ok() {
            counts.gemini_exported += 1;
            for v in violations(Dialect::Gemini, &gemini.schema) {
                failures.push(format!("`{name}` (Gemini): {v}"));
            }
        } else {
            counts.gemini_refused += 1;
            let error = gemini
                .findings
                .iter()
                .find(|f| f.kind == FindingKind::Error)
                .expect("a refused tool has an error finding");
            assert!(
                !error.rule.is_empty() && error.message.contains('`'),
                "`{name}`: the refusal names the rule and the shape: {error:?}"
            );
            println!(
                "  gemini refuses `{name}` at `{}`: {} [{}]",
                error.path, error.message, error.rule
            );
        }
    }
    (counts, failures)
}

fn report(label: &str, c: &Catalog) -> Counts {
    let (counts, failures) = check_catalog(c);
    println!(
        "{label}: {} tools; openai: {} strict, {} fallback (`strict: false`), 0 refused; gemini: {} exported, {} refused",
        counts.tools,
        counts.openai_strict,
        counts.openai_fallback,
        counts.gemini_exported,
        counts.gemini_refused
    );
    assert!(
        failures.is_empty(),
        "{label}: {} violations:\n{}",
        failures.len(),
        failures.join("\n")
    );
    counts
}

#[test]
fn reference_catalog_exports_conform() {
    let counts = report("reference", toolcat_cli::reference_catalog());
    assert!(counts.tools > 20, "{counts:?}");
    assert!(counts.openai_strict > 0, "{counts:?}");
}

#[test]
fn github_toolsnaps_export_conforms() {
    require_data!();
    let counts = report(
        "github-toolsnaps",
        &imported(ImportKind::GithubToolsnaps, "github-mcp-server/toolsnaps"),
    );
    assert!(counts.tools > 50, "{counts:?}");
}

#[test]
fn livemcpbench_export_conforms() {
    require_data!();
    let counts = report(
        "livemcpbench",
        &imported(ImportKind::LiveMcpBench, "livemcpbench/tools.json"),
    );
    assert!(counts.tools >= 527, "{counts:?}");
}

/// The reference catalog's `todo_write` and `plan_update` carry `{"$ref": ..., "description":
/// ...}`, which OpenAI refuses under strict mode ("$ref cannot have keywords"): the checker
/// finds it in the input schema, and not in the export.
#[test]
fn the_checker_finds_ref_with_siblings_in_the_reference_catalog() {
    let c = toolcat_cli::reference_catalog();
    for name in ["todo_write", "plan_update"] {
        let t = c.tool(name).expect("a reference tool");
        let input = c.input_schema(t);
        let found: Vec<_> = violations(Dialect::OpenAiStrict, input)
            .into_iter()
            .filter(|v| v.rule == "openai-strict-ref")
            .collect();
        assert!(!found.is_empty(), "{name}: {input}");
        let exported = targets::openai(name, input);
        assert_eq!(
            exported.strict,
            Some(true),
            "{name}: {:#?}",
            exported.findings
        );
        assert!(
            violations(Dialect::OpenAiStrict, &exported.schema).is_empty(),
            "{name}"
        );
    }
}

/// Each shape behind a known provider 400, as the checker sees it passed through unchanged.
#[test]
fn the_checker_catches_each_listed_bad_shape() {
    let object = |property: Value| json!({"type": "object", "properties": {"p": property}});
    let strict = |property: Value| {
        json!({
            "type": "object",
            "properties": {"p": property},
            "required": ["p"],
            "additionalProperties": false,
            "$defs": {"S": {"type": "string"}}
        })
    };
    let cases: [(Dialect, Value, &str); 11] = [
        (
            Dialect::OpenAiStrict,
            strict(json!({"$ref": "#/$defs/S", "description": "d"})),
            "openai-strict-ref",
        ),
        (
            Dialect::OpenAiStrict,
            json!({"type": "object", "properties": {"p": {"type": "string"}}}),
            "openai-strict-objects",
        ),
        (
            Dialect::OpenAiStrict,
            json!({"type": "object", "properties": {"p": {"type": "string"}}, "additionalProperties": false}),
            "openai-strict-required",
        ),
        (
            Dialect::OpenAiStrict,
            strict(json!({"type": "string", "format": "uri"})),
            "openai-strict-formats",
        ),
        (
            Dialect::Gemini,
            object(json!({"type": "string", "properties": {"x": {"type": "string"}}})),
            "gemini-object",
        ),
        (
            Dialect::Gemini,
            object(json!({"type": "array"})),
            "gemini-array",
        ),
        (
            Dialect::Gemini,
            json!({"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p", "ghost"]}),
            "gemini-object",
        ),
        (
            Dialect::Gemini,
            object(json!({"enum": ["a", "b"]})),
            "gemini-enum",
        ),
        (
            Dialect::Gemini,
            object(json!({"type": "integer", "enum": [1, 2]})),
            "gemini-enum",
        ),
        (
            Dialect::Gemini,
            object(
                json!({"anyOf": [{"type": "string"}, {"type": "array"}], "items": {"type": "string"}}),
            ),
            "gemini-any-of",
        ),
        (Dialect::Gemini, object(json!({"const": 3})), "gemini-enum"),
    ];
    for (dialect, schema, rule) in cases {
        let found = violations(dialect, &schema);
        assert!(
            found.iter().any(|v| v.rule == rule),
            "{dialect:?} misses {rule} in {schema}: {found:?}"
        );
        // What the exporter makes of the same shape conforms, or is refused.
        match dialect {
            Dialect::Gemini => {
                let e = targets::gemini("t", &schema);
                assert!(
                    !e.is_ok() || violations(Dialect::Gemini, &e.schema).is_empty(),
                    "{schema}"
                );
            }
            _ => {
                let e = targets::openai("t", &schema);
                if e.strict == Some(true) {
                    assert!(
                        violations(Dialect::OpenAiStrict, &e.schema).is_empty(),
                        "{schema}"
                    );
                }
            }
        }
    }
}

/// `toolcat export` on `tests/fixtures/targets/export-gemini-refusal.toml` (its header states the
/// documented result): the Gemini export leaves out the tool it cannot express and names it on
/// stderr with the rule and the location; the OpenAI export has both tools, strict.
#[test]
fn export_names_the_tools_gemini_refuses() {
    let export = |format: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolcat"))
            .args(["export", "--format", format, "--catalog"])
            .arg("tests/fixtures/targets/export-gemini-refusal.toml")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("the toolcat binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{format}: {stderr}");
        let value: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
        (value, stderr)
    };
    let (gemini, err) = export("gemini");
    let names: Vec<&str> = gemini[0]["functionDeclarations"]
        .as_array()
        .expect("declarations")
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert_eq!(names, ["set_mode"]);
    assert!(
        err.contains("gemini: `set_flag` is not exported: at `/properties/flag/const`: `const: true` cannot be expressed")
            && err.contains("[gemini-enum]"),
        "{err}"
    );
    assert!(
        err.contains("gemini: 1 of 2 tools exported, 1 refused"),
        "{err}"
    );
    let (openai, err) = export("openai");
    let tools = openai.as_array().expect("tools");
    assert_eq!(tools.len(), 2, "{err}");
    assert!(
        tools.iter().all(|t| t["function"]["strict"] == true),
        "{openai}"
    );
    assert_eq!(
        tools[1]["function"]["parameters"]["properties"]["mode"],
        json!({"description": "The new mode", "type": "string", "enum": ["fast", "full"]})
    );
}
