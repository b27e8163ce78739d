//! Export targets as `toolcat check --target` reports them, on the fixtures of
//! `tests/fixtures/targets/` (each fixture's header states its documented result) and on the
//! reference catalog, whose local tools' schemas come from their handlers.
//!
//! Documented results:
//! - `name-65-characters.toml`: `--target openai` exits 1 with `E0203` (65 characters, more than
//!   64); `--target mcp` exits 0 (MCP takes 128);
//! - `dotted-name.toml` (`targets = ["mcp"]`, a tool `admin.tools.list`): plain `check`,
//!   `--target mcp` and `--target gemini` exit 0; `--target openai` exits 1 with `E0202`;
//! - `openai-strict.toml`, `--target openai`, exit 0: the optional `limit` is made required and
//!   nullable (strict), `format: uri` and `oneOf` each make their tool fall back to
//!   `strict: false`;
//! - `gemini.toml`, `--target gemini`, exit 0: the `$ref` into `$defs` is inlined, the
//!   `Option<String>` shape becomes `nullable: true`;
//! - `max-tools-41.toml`: `E0422` with any target, naming toolset `web` as the one that tips 41
//!   tools over `max_tools = 40`.
//!
//! Each case's stdout, stderr and exit code are snapshotted together, and the facts above are
//! asserted on their own so a snapshot cannot drift into a different result.

use std::path::Path;
use std::process::Command;

use schemars::JsonSchema;
use serde_json::{json, Value};
use toolcat_catalog::targets::{self, FindingKind, Target};

/// Runs `toolcat` in the crate root; returns (exit code, stdout, stderr).
fn toolcat(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the toolcat binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `toolcat check --catalog tests/fixtures/targets/FIXTURE [--target TARGETS]`, snapshotted as
/// `NAME`; returns (exit code, stderr).
fn check(name: &str, fixture: &str, target: Option<&str>) -> (i32, String) {
    let path = format!("tests/fixtures/targets/{fixture}");
    assert!(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(&path).is_file(),
        "missing fixture {path}"
    );
    let mut args = vec!["check", "--catalog", &path];
    if let Some(t) = target {
        args.extend(["--target", t]);
    }
    let (code, stdout, stderr) = toolcat(&args);
    insta::assert_snapshot!(
        name,
        format!(
            "$ toolcat {}\nexit: {code}\n--- stdout\n{stdout}--- stderr\n{stderr}",
            args.join(" ")
        )
    );
    (code, stderr)
}

#[test]
fn exported_name_of_65_characters() {
    let (code, err) = check("name_65_openai", "name-65-characters.toml", Some("openai"));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("error[E0203]"), "{err}");
    assert!(
        err.contains("is 65 characters, more than 64"),
        "names the length and the limit: {err}"
    );
    assert!(
        err.contains("OpenAI API reference"),
        "names the source: {err}"
    );
    let (code, err) = check("name_65_mcp", "name-65-characters.toml", Some("mcp"));
    assert_eq!(code, 0, "MCP takes names of up to 128 characters: {err}");
}

#[test]
fn dotted_name_with_an_openai_target() {
    let (code, err) = check("dotted_declared", "dotted-name.toml", None);
    assert_eq!(code, 0, "the catalog targets MCP, which allows dots: {err}");
    for target in ["mcp", "gemini"] {
        let (code, _, err) = toolcat(&[
            "check",
            "--catalog",
            "tests/fixtures/targets/dotted-name.toml",
            "--target",
            target,
        ]);
        assert_eq!(code, 0, "{target} accepts `admin.tools.list`: {err}");
    }
    let (code, err) = check("dotted_openai", "dotted-name.toml", Some("openai"));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("error[E0202]"), "{err}");
    assert!(
        err.contains("`.` is not allowed by `openai`"),
        "names the target: {err}"
    );
    assert!(
        err.contains("^[a-zA-Z0-9_-]{1,64}$"),
        "names the rule: {err}"
    );
    assert!(
        !err.contains("the catalog's targets"),
        "`--target` replaces the file's targets, so they are not blamed: {err}"
    );
}

#[test]
fn optional_field_uri_format_and_one_of_under_openai_strict() {
    let (code, err) = check("openai_strict", "openai-strict.toml", Some("openai"));
    assert_eq!(code, 0, "fallbacks are reported, not errors: {err}");
    assert!(
        err.contains("target `openai`: 3 tools, 1 strict, 2 `strict: false`"),
        "{err}"
    );
    let section = |tool: &str| -> String {
        let start = err
            .find(&format!("  `{tool}`: "))
            .unwrap_or_else(|| panic!("`{tool}` is reported: {err}"));
        let rest = &err[start + 2..];
        let end = rest
            .find("\n  `")
            .or_else(|| rest.find("\n  rules:"))
            .unwrap_or(rest.len());
        rest[..end].to_string()
    };
    let search = section("search_issues");
    assert!(search.starts_with("`search_issues`: strict"), "{search}");
    assert!(
        search.contains(
            "rewrite at `/properties/limit`: optional property `limit` made required and nullable"
        ),
        "{search}"
    );
    let fetch = section("fetch_page");
    assert!(
        fetch.starts_with("`fetch_page`: `strict: false` (fallback)"),
        "{fetch}"
    );
    assert!(
        fetch.contains("fallback at `/properties/url/format`: `format: \"uri\"`"),
        "{fetch}"
    );
    let draw = section("draw_shape");
    assert!(
        draw.starts_with("`draw_shape`: `strict: false` (fallback)"),
        "{draw}"
    );
    assert!(
        draw.contains("fallback at `/properties/shape/oneOf`"),
        "{draw}"
    );
    assert!(
        err.contains("https://platform.openai.com/docs/guides/structured-outputs"),
        "names where the rule comes from: {err}"
    );
}

#[test]
fn ref_into_defs_and_option_string_under_gemini() {
    let (code, err) = check("gemini", "gemini.toml", Some("gemini"));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("rewrite at `/properties/assignee/$ref`: inlined `$ref` `#/$defs/User`"),
        "{err}"
    );
    assert!(
        err.contains("rewrite at `/properties/note/type`: `\"type\": [\"string\", \"null\"]` written as `\"type\": \"string\", \"nullable\": true`"),
        "{err}"
    );
    assert!(err.contains("dropped `$defs`"), "{err}");
}

#[test]
fn profile_of_41_inline_tools_with_max_tools_40() {
    for target in [None, Some("openai"), Some("mcp")] {
        let (code, _, err) = {
            let mut args = vec![
                "check",
                "--catalog",
                "tests/fixtures/targets/max-tools-41.toml",
            ];
            if let Some(t) = target {
                args.extend(["--target", t]);
            }
            toolcat(&args)
        };
        assert_eq!(code, 1, "{target:?}: {err}");
        assert!(err.contains("error[E0422]"), "{err}");
    }
    let (_, err) = check("max_tools_41", "max-tools-41.toml", Some("openai"));
    assert!(
        err.contains(
            "profile `client` can send 41 tools in one request, more than its `max_tools = 40`"
        ),
        "{err}"
    );
    assert!(
        err.contains("adding toolset `web` brings it to 41"),
        "names the toolset that tips it over: {err}"
    );
}

/// The reference catalog compiled into the binary: every handler's schema is checked (none is
/// left unchecked), nothing fails, and the Gemini rewrites of its `Option<...>` arguments are
/// reported. Read from the file with `--catalog`, its local tools have no handler.
#[test]
fn reference_catalog_checks_handler_schemas() {
    let (code, _, err) = toolcat(&["check", "--target", "openai,anthropic,gemini,mcp"]);
    assert_eq!(code, 0, "{err}");
    for target in ["openai", "anthropic", "gemini", "mcp"] {
        let line = err
            .lines()
            .find(|l| l.starts_with(&format!("target `{target}`: ")))
            .unwrap_or_else(|| panic!("no summary for {target}: {err}"));
        assert!(line.contains("0 cannot be exported"), "{line}");
        assert!(!line.contains("unchecked"), "{line}");
    }
    assert!(
        err.contains("`\"type\": [\"string\", \"null\"]` written as `\"type\": \"string\", \"nullable\": true` [gemini-nullable]"),
        "handler schemas with `Option<String>` are rewritten for Gemini"
    );
    let (code, _, err) = toolcat(&["check", "--catalog", "tools.toml", "--target", "mcp"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("schemas unchecked (local tools without their handler)"),
        "{err}"
    );
}

#[test]
fn unknown_target_is_a_usage_error() {
    let (code, _, err) = toolcat(&["check", "--target", "openia"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("openai"),
        "clap suggests the valid values: {err}"
    );
}

// ---- rewrites of schemas as schemars writes them for handler argument types ----

#[allow(dead_code)]
#[derive(JsonSchema)]
/// The arguments of a tool with an optional note and a documented mode.
struct NoteArgs {
    /// What to write.
    text: String,
    /// Extra context, if any.
    note: Option<String>,
    /// How thorough to be.
    #[serde(default)]
    mode: Option<Mode>,
    /// Who it is for.
    owner: Option<User>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
enum Mode {
    /// Quick.
    Fast,
    /// Thorough.
    Full,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct User {
    login: String,
}

fn note_schema() -> Value {
    let mut schema = schemars::schema_for!(NoteArgs).to_value();
    if let Value::Object(map) = &mut schema {
        map.shift_remove("$schema");
    }
    schema
}

#[test]
fn option_string_is_nullable_for_gemini_and_for_openai_strict() {
    let schema = note_schema();
    assert_eq!(
        schema["properties"]["note"]["type"],
        json!(["string", "null"]),
        "schemars writes `Option<String>` as a type list"
    );
    let gemini = targets::gemini("note", &schema);
    assert!(gemini.is_ok(), "{:#?}", gemini.findings);
    assert_eq!(gemini.schema["properties"]["note"]["type"], "string");
    assert_eq!(gemini.schema["properties"]["note"]["nullable"], true);
    // `Option<User>` is `anyOf [$ref, null]`: inlined and nullable.
    assert_eq!(
        gemini.schema["properties"]["owner"]["properties"]["login"]["type"],
        "string"
    );
    assert_eq!(gemini.schema["properties"]["owner"]["nullable"], true);
    assert!(gemini.schema.get("$defs").is_none());
    let text = gemini.schema.to_string();
    for banned in ["$ref", "additionalProperties", "\"const\"", "oneOf"] {
        assert!(!text.contains(banned), "{banned} left in {text}");
    }

    let openai = targets::openai("note", &schema);
    assert_eq!(openai.strict, Some(true), "{:#?}", openai.findings);
    let required: Vec<&str> = openai.schema["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(required, ["text", "note", "mode", "owner"]);
    assert_eq!(openai.schema["additionalProperties"], false);
    assert!(openai
        .findings
        .iter()
        .all(|f| f.kind == FindingKind::Rewrite && f.target == Target::OpenAi));
}

#[test]
fn strict_arguments_round_trip_to_the_handler_shape() {
    let schema = note_schema();
    // What a model under strict mode sends when it leaves everything optional out.
    let mut args = json!({"text": "hi", "note": null, "mode": null, "owner": null});
    // `Option<...>` fields accept `null` already: nothing to remove.
    assert_eq!(targets::restore_arguments(&schema, &mut args), 0);
    // A server schema with a plain optional integer: the added `null` is removed.
    let server = json!({"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["q"]});
    let strict = targets::openai("search", &server);
    assert_eq!(strict.strict, Some(true));
    let mut args = json!({"q": "bug", "limit": null});
    assert_eq!(targets::restore_arguments(&server, &mut args), 1);
    assert_eq!(args, json!({"q": "bug"}));
}
