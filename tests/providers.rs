//! A [`Session`] on the reference catalog told which provider it talks to.
//!
//! - `openai_strict_null_optionals_are_accepted_for_every_tool`: for every tool of the reference
//!   catalog (the one the `toolcat` binary embeds, with its handlers), a call in OpenAI strict
//!   mode — `null` for every optional property, valid values for the required ones — directly
//!   and as the inner call of `tool_call`, is never refused as `invalid-arguments`.
//! - `recorded_exchanges_replay`: every exchange in `tests/fixtures/providers/*.json` is replayed
//!   through [`Session::handle_response`]. The provider responses are scripted model steps (no
//!   real model is reachable here) written in the shapes of each provider's public API reference
//!   (OpenAI Chat Completions and Responses, Anthropic Messages with custom and hosted tool
//!   search, Gemini `generateContent`); each step asserts what every call came to, the handler
//!   that ran, and the provider-shaped messages sent back. The fixture format is described in
//!   `tests/fixtures/providers/README.md`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::replay::workspace;
use serde_json::{json, Map, Value};
use toolcat::export::{export_plan_with, exported_schema, openai_tool, ExportOptions, SearchMode};
use toolcat::session::Outcome;
use toolcat::{Catalog, ExportFormat, Session, SessionOptions, ToolContext};
use toolcat_catalog::model::{Status, Visibility};

fn catalog() -> &'static Catalog {
    toolcat_cli::reference_catalog()
}

/// A valid value of `schema` (within `root`, for local `$ref`s) as a strict-mode model writes it
/// when `strict`: every required property given a value, every optional one `null`; when not
/// strict, optional properties are left out.
fn strict_value(root: &Value, schema: &Value, strict: bool, depth: usize) -> Value {
    assert!(depth < 16, "schema nests too deep: {schema}");
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| root.pointer(r.strip_prefix('#')?))
    {
        return strict_value(root, target, strict, depth + 1);
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|b| b.first())
        {
            return strict_value(root, first, strict, depth + 1);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    if required.contains(&name.as_str()) {
                        out.insert(
                            name.clone(),
                            strict_value(root, property, strict, depth + 1),
                        );
                    } else if strict {
                        out.insert(name.clone(), Value::Null);
                    }
                }
            }
            Value::Object(out)
        }
        "array" => {
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema.get("items").cloned().unwrap_or(json!({}));
            Value::Array(
                (0..min.max(1))
                    .map(|_| strict_value(root, &item, strict, depth + 1))
                    .collect(),
            )
        }
        "integer" | "number" => {
            let min = schema.get("minimum").and_then(Value::as_i64).unwrap_or(1);
            json!(min.max(1))
        }
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => match schema.get("format").and_then(Value::as_str) {
            Some("date-time") => json!("2026-01-01T00:00:00Z"),
            Some("date") => json!("2026-01-01"),
            Some("uri") => json!("https://example.invalid/"),
            _ => {
                let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0);
                let text = "README.md".to_string();
                json!(text.repeat(usize::try_from(min).unwrap_or(1) / text.len() + 1))
            }
        },
    }
}

#[tokio::test]
async fn openai_strict_null_optionals_are_accepted_for_every_tool() {
    let c = catalog();
    let dir = workspace();
    let mut checked = 0;
    for provider in [ExportFormat::OpenAi, ExportFormat::OpenAiResponses] {
        for t in c.tools() {
            if c.status(t) == Status::Deprecated {
                // Never callable (the plan leaves deprecated tools out).
                continue;
            }
            let name = c.exported_name(t);
            let strict = serde_json::to_value(openai_tool(c, t)).expect("serializes")["function"]
                ["strict"]
                == true;
            let schema = exported_schema(c, t);
            let mut arguments = strict_value(&schema, &schema, strict, 0);
            if c.name(t) == "tool_call" {
                // Its `name` must be a tool for the call to reach a tool.
                arguments["name"] = json!("git_status");
            }
            let mut s = Session::new(
                c,
                c.full_profile(),
                c.toolsets(),
                ToolContext::new(dir.path()),
            )
            .without_preselection()
            .with_options(SessionOptions {
                provider,
                search_budget: 100,
                ..SessionOptions::default()
            })
            .expect("the cap holds the core")
            // `run_code` is planned only with a script engine; its program here ("README.md")
            // is a reference to an undefined name, an ordinary failure of the program.
            .with_script_engine(std::sync::Arc::new(toolcat_quickjs::QuickJs::new()));
            s.begin_turn("walk every tool").await;
            if c.visibility(t) == Visibility::Discoverable {
                let r = s.handle_call("tool_describe", json!({"name": name})).await;
                assert_eq!(r.outcome.kind(), "described", "{name}: {}", r.text);
            }
            assert!(s.is_active(t), "{name} is callable");
            let direct = s.handle_call(name, arguments.clone()).await;
            let nested = s
                .handle_call("tool_call", json!({"name": name, "arguments": arguments}))
                .await;
            for (how, r) in [("direct", &direct), ("through tool_call", &nested)] {
                assert!(
                    !matches!(
                        r.outcome,
                        Outcome::InvalidArguments { .. } | Outcome::NotInActiveSet
                    ),
                    "{provider}: {name} ({how}) refused with {arguments}: {}",
                    r.text
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 200, "{checked} tools checked");
}

/// One recorded exchange (see `tests/fixtures/providers/README.md`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Exchange {
    /// Where the shapes come from.
    #[allow(dead_code)]
    source: String,
    provider: String,
    preset: String,
    #[serde(default, rename = "hostedSearch")]
    hosted_search: bool,
    user: String,
    steps: Vec<Step>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    /// Tools the Anthropic request of this step must carry with `defer_loading: true`.
    #[serde(default)]
    deferred: Vec<String>,
    response: Value,
    calls: Vec<CallExpect>,
    reply: Value,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallExpect {
    outcome: String,
    ran: Option<String>,
    #[serde(default)]
    contains: Vec<String>,
}

/// `actual` matches `expected`: objects have every expected key with a matching value (more keys
/// allowed), arrays have the same length and matching items, anything else is equal.
fn matches(expected: &Value, actual: &Value, at: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e.iter().try_for_each(|(k, v)| match a.get(k) {
            Some(av) => matches(v, av, &format!("{at}/{k}")),
            None => Err(format!("{at}: no key `{k}`")),
        }),
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => e
            .iter()
            .zip(a)
            .enumerate()
            .try_for_each(|(k, (ev, av))| matches(ev, av, &format!("{at}/{k}"))),
        _ if expected == actual => Ok(()),
        _ => Err(format!("{at}: expected {expected}, got {actual}")),
    }
}

/// The `tool_name` of every `tool_reference` block in `value`.
fn tool_references(value: &Value) -> Vec<String> {
    match value {
        Value::Object(m) if m.get("type") == Some(&json!("tool_reference")) => m
            .get("tool_name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .into_iter()
            .collect(),
        Value::Object(m) => m.values().flat_map(tool_references).collect(),
        Value::Array(items) => items.iter().flat_map(tool_references).collect(),
        _ => Vec::new(),
    }
}

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/providers");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/fixtures/providers exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn recorded_exchanges_replay() {
    let c = catalog();
    let files = fixtures();
    let mut providers: Vec<String> = Vec::new();
    for path in &files {
        let file = path.file_name().unwrap_or_default().to_string_lossy();
        let text = std::fs::read_to_string(path).expect("readable fixture");
        let exchange: Exchange =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let provider = ExportFormat::parse(&exchange.provider)
            .unwrap_or_else(|| panic!("{file}: unknown provider {}", exchange.provider));
        providers.push(exchange.provider.clone());
        let dir = workspace();
        let preset = c.preset(&exchange.preset).expect("a reference preset");
        let mut s = Session::for_preset(c, preset, ToolContext::new(dir.path()))
            .without_preselection()
            .with_options(SessionOptions {
                provider,
                hosted_search: exchange.hosted_search,
                ..SessionOptions::default()
            })
            .expect("the cap holds the core");
        s.begin_turn(&exchange.user).await;
        for (k, step) in exchange.steps.iter().enumerate() {
            let here = format!("{file} step {}", k + 1);
            // The tools of this step's Anthropic request: a `tool_reference` may name only these.
            let request = {
                let plan = s.plan();
                let search = if exchange.hosted_search {
                    SearchMode::Hosted
                } else {
                    SearchMode::Own
                };
                export_plan_with(&plan, ExportFormat::Anthropic, &ExportOptions { search })
                    .unwrap_or_else(|e| panic!("{here}: {e}"))
                    .to_json()
            };
            if !step.deferred.is_empty() {
                let tools = &request;
                for name in &step.deferred {
                    let tool = tools
                        .as_array()
                        .and_then(|t| t.iter().find(|t| t["name"] == name.as_str()))
                        .unwrap_or_else(|| panic!("{here}: {name} is not in the request"));
                    assert_eq!(tool["defer_loading"], true, "{here}: {name}");
                }
            }
            let reply = s
                .handle_response(&step.response)
                .await
                .unwrap_or_else(|e| panic!("{here}: {e}"));
            assert_eq!(reply.results.len(), step.calls.len(), "{here}: calls");
            for (r, want) in reply.results.iter().zip(&step.calls) {
                assert_eq!(r.outcome.kind(), want.outcome, "{here}: {}", r.text);
                let ran = r.ran.map(|t| c.exported_name(t).to_string());
                assert_eq!(ran, want.ran, "{here}: the handler that ran");
                for part in &want.contains {
                    assert!(
                        r.text.contains(part.as_str()),
                        "{here}: {part} not in {}",
                        r.text
                    );
                }
            }
            if provider == ExportFormat::Anthropic {
                for name in tool_references(&Value::Array(reply.messages.clone())) {
                    let known = request
                        .as_array()
                        .is_some_and(|t| t.iter().any(|t| t["name"] == name.as_str()));
                    assert!(known, "{here}: tool_reference {name} is not in the request");
                }
            }
            let actual = Value::Array(reply.messages);
            if let Err(e) = matches(&step.reply, &actual, "") {
                panic!("{here}: reply {e}\n{actual:#}");
            }
        }
    }
    providers.sort();
    providers.dedup();
    assert_eq!(
        providers,
        ["anthropic", "gemini", "openai", "openai-responses"]
    );
}

/// `toolcat session --format`: the session reads arguments as the provider sends them and prints
/// each step's answers also as the messages sent back; without `--format` the step line has no
/// `reply` and a strict-mode `null` is refused as before.
#[test]
fn session_command_answers_in_the_provider_shape() {
    use std::io::Write as _;
    let dir = workspace();
    let script = concat!(
        "{\"user\": \"find the commit history\"}\n",
        "{\"calls\": [{\"call\": \"tool_search\", \"args\": {\"query\": \"commit history log\", \"limit\": null}},",
        " {\"call\": \"read_file\", \"args\": {\"path\": \"README.md\", \"offset\": null, \"limit\": null}}]}\n",
    );
    let run = |script: &str, extra: &[&str]| -> Value {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolcat"))
            .args([
                "session",
                "--preset",
                "code",
                "--no-preselect",
                "--json",
                "--servers",
                "none",
            ])
            .args(extra)
            .arg("--workspace")
            .arg(dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the toolcat binary runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(script.as_bytes())
            .expect("write the script");
        let out = child.wait_with_output().expect("toolcat session ends");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("UTF-8");
        let step = text.lines().nth(1).expect("a step line");
        serde_json::from_str(step).expect("a JSON line")
    };
    let plain = run(script, &[]);
    assert!(plain.get("reply").is_none(), "{plain}");
    assert_eq!(plain["calls"][0]["outcome"], "invalid-arguments", "{plain}");

    let chat = run(script, &["--format", "openai"]);
    assert_eq!(chat["calls"][0]["outcome"], "found", "{chat}");
    assert_eq!(chat["calls"][1]["outcome"], "ran", "{chat}");
    let ids: Vec<&Value> = chat["reply"]
        .as_array()
        .expect("reply")
        .iter()
        .map(|m| {
            assert_eq!(m["role"], "tool");
            &m["tool_call_id"]
        })
        .collect();
    assert_eq!(ids, [&json!("call_1_1_1"), &json!("call_1_1_2")]);

    // Anthropic sends no strict-mode nulls.
    let anthropic = run(
        &script.replace(", \"limit\": null", ""),
        &["--format", "anthropic"],
    );
    let content = &anthropic["reply"][0]["content"];
    assert_eq!(content[0]["tool_use_id"], "call_1_1_1", "{anthropic}");
    assert_eq!(
        content[0]["content"][1]["type"], "tool_reference",
        "{anthropic}"
    );
    assert_eq!(
        content[0]["content"][1]["tool_name"], "git_log",
        "{anthropic}"
    );

    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(["session", "--preset", "code", "--format", "vertex"])
        .output()
        .expect("runs");
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("use one of: mcp, openai, openai-responses, anthropic, gemini"),
        "{stderr}"
    );
}

/// A Gemini session never finds or runs a tool whose schema Gemini cannot be sent: `tool_search`
/// leaves it out and a call of it is outside the active set; another provider's session has it.
#[tokio::test]
async fn a_gemini_session_leaves_out_tools_gemini_refuses() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/targets/export-gemini-refusal.toml");
    let catalog = Catalog::load(&path).expect("the fixture loads");
    let dir = tempfile::tempdir().expect("temporary directory");
    let session_for = |provider| {
        Session::new(
            &catalog,
            catalog.full_profile(),
            catalog.toolsets().collect::<Vec<_>>(),
            ToolContext::new(dir.path()),
        )
        .with_options(SessionOptions {
            provider,
            ..Default::default()
        })
        .expect("the cap holds the core")
    };
    let flag = catalog.tool("set_flag").expect("declared");
    let mode = catalog.tool("set_mode").expect("declared");
    let openai = session_for(ExportFormat::OpenAi);
    assert!(openai.definitions().contains(&flag));
    let mut gemini = session_for(ExportFormat::Gemini);
    assert!(!gemini.definitions().contains(&flag));
    assert!(gemini.definitions().contains(&mode));
    let result = gemini
        .handle_call("device__set_flag", json!({"flag": true}))
        .await;
    assert!(
        matches!(result.outcome, Outcome::NotInActiveSet),
        "{}",
        result.text
    );
    assert_eq!(result.ran, None);
    let export = gemini.export().expect("exports").to_json();
    assert!(!export.to_string().contains("set_flag"), "{export}");
}
