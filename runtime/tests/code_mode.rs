//! `run_code` in a session, with a scripted engine: the runtime's side of Code Mode without a
//! JavaScript engine. The engine here runs a "program" written as JSON (a list of calls), so each
//! test states exactly which calls a program makes; the QuickJS engine's own tests
//! (`toolcat-quickjs`) cover what a real program can and cannot reach.
//!
//! What is checked: the program's record and its inner calls' records linked by `parent`; a write
//! tool, a tool outside the Code Mode set and a meta-tool refused with nothing run; the call cap;
//! cancellation by the session reaching a running inner call; a session without an engine and a
//! profile without `run_code` never planning it; the TypeScript API in `run_code`'s definition.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};
use toolcat::code_mode::{
    FailureKind, Script, ScriptEngine, ScriptFailure, ScriptHost, ScriptLimits, ScriptReturn,
};
use toolcat::{
    erase, BoxFuture, CallState, CallStore, CancellationToken, Catalog, Coordinator, ErasedHandler,
    Session, SessionOptions, ToolContext, ToolError, ToolHandler,
};

const CATALOG: &str = r#"
[profile.agent]
description = "Owns the notes tools and Code Mode"

[profile.plain]
description = "Owns the notes tools, not Code Mode"

[toolset.notes]
description = "Notes"

[toolset.code_mode]
description = "Code Mode programs"

[[tool]]
name = "run_code"
description = "Runs one program that calls read tools."
visibility = "inline"
tier = "loop"
effect = "read"
exposure = "excluded"
profiles = ["agent"]
toolsets = ["code_mode"]
owner = "tests"
source = "loop"

[[tool]]
name = "read_note"
description = "Reads a note by name."
visibility = "inline"
tier = "silent"
effect = "read"
idempotent = true
code_mode = true
exposure = "read-only"
profiles = ["agent", "plain"]
toolsets = ["notes"]
owner = "tests"

[[tool]]
name = "wait_note"
description = "Waits half a minute."
visibility = "inline"
tier = "silent"
effect = "read"
code_mode = true
exposure = "read-only"
profiles = ["agent", "plain"]
toolsets = ["notes"]
owner = "tests"

[[tool]]
name = "count_notes"
description = "Counts notes; a silent read not declared for Code Mode."
visibility = "inline"
tier = "silent"
effect = "read"
exposure = "read-only"
profiles = ["agent", "plain"]
toolsets = ["notes"]
owner = "tests"

[[tool]]
name = "write_note"
description = "Replaces a note."
visibility = "inline"
tier = "gated"
effect = "write"
exposure = "full"
profiles = ["agent", "plain"]
toolsets = ["notes"]
owner = "tests"
"#;

#[derive(Deserialize, schemars::JsonSchema)]
struct NoteArgs {
    /// The note's name.
    name: String,
}

/// Every handler run, by tool name, in order.
fn ran() -> &'static Mutex<Vec<String>> {
    static RAN: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    RAN.get_or_init(|| Mutex::new(Vec::new()))
}

/// Handler runs of `tool` whose note name starts with `tag` (each test uses its own tag, as the
/// tests of this binary run in parallel).
fn runs(tool: &str, tag: &str) -> usize {
    ran()
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.starts_with(&format!("{tool}:{tag}")))
        .count()
}

fn note(tool: &str, args: &NoteArgs) {
    ran().lock().unwrap().push(format!("{tool}:{}", args.name));
}

struct ReadNote;
impl ToolHandler for ReadNote {
    const NAME: &'static str = "read_note";
    type Args = NoteArgs;
    type Output = Value;
    fn call(args: NoteArgs, _: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            note("read_note", &args);
            Ok(json!({"name": args.name, "text": format!("the text of {}", args.name)}))
        })
    }
}

struct WaitNote;
impl ToolHandler for WaitNote {
    const NAME: &'static str = "wait_note";
    type Args = NoteArgs;
    type Output = Value;
    fn call(args: NoteArgs, _: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            note("wait_note", &args);
            // Ignores cancellation: the coordinator must stop it.
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok(json!({"waited": true}))
        })
    }
}

struct CountNotes;
impl ToolHandler for CountNotes {
    const NAME: &'static str = "count_notes";
    type Args = NoteArgs;
    type Output = Value;
    fn call(args: NoteArgs, _: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            note("count_notes", &args);
            Ok(json!(3))
        })
    }
}

struct WriteNote;
impl ToolHandler for WriteNote {
    const NAME: &'static str = "write_note";
    type Args = NoteArgs;
    type Output = Value;
    fn call(args: NoteArgs, _: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            note("write_note", &args);
            Ok(json!({"written": args.name}))
        })
    }
}

static HANDLERS: [Option<ErasedHandler>; 4] = [
    Some(erase::<ReadNote>()),
    Some(erase::<WaitNote>()),
    Some(erase::<CountNotes>()),
    Some(erase::<WriteNote>()),
];

fn catalog() -> &'static Catalog {
    static CATALOG_: OnceLock<Catalog> = OnceLock::new();
    CATALOG_.get_or_init(|| {
        Catalog::from_source_with_handlers("code_mode.toml", CATALOG, &HANDLERS)
            .expect("the test catalog is valid")
    })
}

/// One step of a scripted program.
#[derive(Deserialize)]
struct Step {
    tool: String,
    #[serde(default)]
    args: Value,
    /// Keep going when the call is refused (a program's `try`/`catch`).
    #[serde(default)]
    catch: bool,
}

/// A "program": its calls, in order; the result is the list of their answers (an error caught
/// as `{"error": message}`).
#[derive(Deserialize)]
struct Program {
    calls: Vec<Step>,
    #[serde(default)]
    log: Vec<String>,
    /// Lines of console output, all alike: `[count, line]`.
    #[serde(default)]
    log_many: Option<(usize, String)>,
    /// Seconds to spend before returning, checking no interrupt (an engine stuck in a
    /// built-in that makes no interrupt check).
    #[serde(default)]
    stuck_seconds: u64,
}

/// The scripted engine: runs a [`Program`] given as JSON text, through the host as an engine
/// must (each call blocks until the session answers; a fatal error ends the program).
struct ScriptedEngine;

impl ScriptEngine for ScriptedEngine {
    fn name(&self) -> &str {
        "scripted (tests)"
    }

    fn run(
        &self,
        script: &Script<'_>,
        host: &dyn ScriptHost,
    ) -> Result<ScriptReturn, ScriptFailure> {
        let program: Program = serde_json::from_str(script.source).map_err(|e| ScriptFailure {
            kind: FailureKind::Syntax,
            message: e.to_string(),
            line: Some(u32::try_from(e.line()).unwrap_or(0)),
        })?;
        for line in &program.log {
            host.log(line);
        }
        if let Some((count, line)) = &program.log_many {
            for _ in 0..*count {
                host.log(line);
            }
        }
        if program.stuck_seconds > 0 {
            std::thread::sleep(Duration::from_secs(program.stuck_seconds));
        }
        let mut answers = Vec::new();
        for step in program.calls {
            if !script.functions.contains(&step.tool) && step.tool != "read_tool_result" {
                return Err(ScriptFailure {
                    kind: FailureKind::Exception,
                    message: format!("TypeError: tools.{} is not a function", step.tool),
                    line: None,
                });
            }
            let args = if step.args.is_null() {
                json!({})
            } else {
                step.args
            };
            match host.call(&step.tool, args) {
                Ok(value) => answers.push(value),
                Err(e) if e.fatal => {
                    return Err(ScriptFailure {
                        kind: FailureKind::Interrupted,
                        message: e.message,
                        line: None,
                    })
                }
                Err(e) if step.catch => answers.push(json!({"error": e.message})),
                Err(e) => {
                    return Err(ScriptFailure {
                        kind: FailureKind::Exception,
                        message: format!("Error: {}", e.message),
                        line: None,
                    })
                }
            }
        }
        Ok(ScriptReturn {
            value: Some(Value::Array(answers)),
        })
    }
}

/// A session of `profile` with the notes and Code Mode toolsets active, the scripted engine and
/// an in-memory call store.
fn session(profile: &str, engine: bool) -> (Session<'static>, Arc<CallStore>) {
    let c = catalog();
    let store = Arc::new(CallStore::in_memory().expect("store"));
    let toolsets = vec![c.toolset("notes").unwrap(), c.toolset("code_mode").unwrap()];
    let mut s = Session::new(
        c,
        c.profile(profile).unwrap(),
        toolsets,
        ToolContext::new("."),
    )
    .without_preselection()
    .with_coordinator(Coordinator::new(c, ToolContext::new(".")).with_store(Arc::clone(&store)));
    if engine {
        s = s.with_script_engine(Arc::new(ScriptedEngine));
    }
    (s, store)
}

fn program(calls: Value) -> Value {
    json!({"code": json!({"calls": calls}).to_string()})
}

fn answer(text: &str) -> Value {
    serde_json::from_str(text).expect("run_code answers JSON")
}

fn visible(s: &Session<'_>) -> Vec<String> {
    s.definitions()
        .iter()
        .map(|&t| catalog().exported_name(t).to_string())
        .collect()
}

#[tokio::test]
async fn a_program_of_three_reads_is_one_record_with_three_linked_inner_records() {
    let (mut s, store) = session("agent", true);
    s.begin_turn("summarise three notes").await;
    assert!(visible(&s).contains(&"run_code".to_string()));
    let result = s
        .handle_call(
            "run_code",
            program(json!([
                {"tool": "read_note", "args": {"name": "linked-a"}},
                {"tool": "read_note", "args": {"name": "linked-b"}},
                {"tool": "read_note", "args": {"name": "linked-c"}},
            ])),
        )
        .await;
    assert!(!result.is_error, "{}", result.text);
    let a = answer(&result.text);
    assert_eq!(a["calls"], 3);
    assert_eq!(a["result"][2]["text"], "the text of linked-c");
    assert_eq!(runs("read_note", "linked-"), 3);

    let records = store.list(None, 100).unwrap();
    let program_record = records
        .iter()
        .find(|r| r.tool == "run_code")
        .expect("the program has a record");
    assert_eq!(program_record.state, CallState::Succeeded);
    assert_eq!(program_record.parent, None);
    let inner: Vec<_> = records
        .iter()
        .filter(|r| r.parent == Some(program_record.id))
        .collect();
    assert_eq!(inner.len(), 3, "{records:#?}");
    for r in &inner {
        assert_eq!(r.tool, "read_note");
        assert_eq!(r.state, CallState::Succeeded);
    }
    assert_eq!(records.len(), 4, "nothing else was recorded: {records:#?}");
}

#[tokio::test]
async fn a_write_tool_and_a_tool_outside_the_code_mode_set_are_refused_and_nothing_runs() {
    let (mut s, store) = session("agent", true);
    s.begin_turn("try to write").await;
    // The engine itself refuses names it has no function for; a host that is asked anyway
    // (an engine that does not check) refuses again, by the live catalog.
    let result = s
        .handle_call(
            "run_code",
            program(json!([{"tool": "write_note", "args": {"name": "refused-w"}}])),
        )
        .await;
    assert!(result.is_error);
    let a = answer(&result.text);
    assert_eq!(a["error"], "exception");
    assert_eq!(runs("write_note", "refused-"), 0);

    struct Asking;
    impl ScriptEngine for Asking {
        fn name(&self) -> &str {
            "asks for everything"
        }
        fn run(
            &self,
            _: &Script<'_>,
            host: &dyn ScriptHost,
        ) -> Result<ScriptReturn, ScriptFailure> {
            let answers: Vec<Value> = ["write_note", "count_notes", "tool_search", "run_code"]
                .iter()
                .map(|tool| match host.call(tool, json!({"name": "refused-x"})) {
                    Ok(v) => json!({"ok": v}),
                    Err(e) => json!({"error": e.message, "fatal": e.fatal}),
                })
                .collect();
            Ok(ScriptReturn {
                value: Some(Value::Array(answers)),
            })
        }
    }
    let mut s = s.with_script_engine(Arc::new(Asking));
    let result = s.handle_call("run_code", json!({"code": "x"})).await;
    let a = answer(&result.text);
    for (k, tool) in ["write_note", "count_notes", "tool_search", "run_code"]
        .iter()
        .enumerate()
    {
        let message = a["result"][k]["error"].as_str().unwrap_or_else(|| {
            panic!("`{tool}` was not refused: {}", result.text);
        });
        assert!(
            message.contains(&format!(
                "`{tool}` cannot be called from a `run_code` program"
            )),
            "{message}"
        );
        assert!(message.contains("read_note, wait_note"), "{message}");
        assert_eq!(a["result"][k]["fatal"], false);
    }
    assert_eq!(runs("write_note", "refused-"), 0);
    assert_eq!(runs("count_notes", "refused-"), 0);
    let inner = store
        .list(None, 100)
        .unwrap()
        .into_iter()
        .filter(|r| r.tool != "run_code")
        .count();
    assert_eq!(inner, 0, "a refused call leaves no record");
}

#[tokio::test]
async fn a_refused_inner_call_keeps_its_text_first_and_a_caught_one_lets_the_program_go_on() {
    let (mut s, _store) = session("agent", true);
    s.begin_turn("bad arguments").await;
    let result = s
        .handle_call(
            "run_code",
            program(json!([
                {"tool": "read_note", "args": {"nmae": "typo"}, "catch": true},
                {"tool": "read_note", "args": {"name": "caught-after"}},
            ])),
        )
        .await;
    assert!(!result.is_error, "{}", result.text);
    let a = answer(&result.text);
    let message = a["result"][0]["error"].as_str().unwrap();
    assert!(
        message.starts_with("invalid arguments for `read_note`"),
        "{message}"
    );
    assert!(message.contains("nothing ran"), "{message}");
    assert_eq!(a["result"][1]["name"], "caught-after");

    let result = s
        .handle_call(
            "run_code",
            program(json!([{"tool": "read_note", "args": {"nmae": "typo"}}])),
        )
        .await;
    assert!(result.is_error);
    let a = answer(&result.text);
    assert_eq!(a["error"], "exception");
    assert!(
        a["message"]
            .as_str()
            .unwrap()
            .starts_with("Error: invalid arguments for `read_note`"),
        "{}",
        result.text
    );
}

#[tokio::test]
async fn the_call_cap_ends_the_program_and_the_call_past_it_does_not_run() {
    let (s, store) = session("agent", true);
    let options = SessionOptions {
        script_limits: ScriptLimits {
            max_calls: 2,
            ..ScriptLimits::default()
        },
        ..s.options().clone()
    };
    let mut s = s.with_options(options).unwrap();
    s.begin_turn("too many calls").await;
    let calls: Vec<Value> = (0..4)
        .map(|k| json!({"tool": "read_note", "args": {"name": format!("capped-{k}")}, "catch": true}))
        .collect();
    let result = s
        .handle_call("run_code", program(Value::Array(calls)))
        .await;
    assert!(result.is_error);
    let a = answer(&result.text);
    assert_eq!(a["error"], "interrupted");
    assert!(
        a["message"]
            .as_str()
            .unwrap()
            .contains("made 2 tool calls, the most one `run_code` call may make"),
        "{}",
        result.text
    );
    assert_eq!(runs("read_note", "capped-"), 2);
    assert_eq!(a["calls"], 2, "the refused third call is not counted: {a}");
    let program_record = store
        .list(None, 100)
        .unwrap()
        .into_iter()
        .find(|r| r.tool == "run_code")
        .unwrap();
    assert_eq!(program_record.state, CallState::Failed);
    assert!(program_record
        .detail
        .as_deref()
        .unwrap_or_default()
        .starts_with("interrupted"));
}

#[tokio::test]
async fn cancelling_the_session_stops_the_program_and_its_running_call() {
    let (s, store) = session("agent", true);
    let token = CancellationToken::new();
    let mut s = s.with_cancellation(token.clone());
    s.begin_turn("wait").await;
    let cancel = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        token.cancel();
    });
    let started = std::time::Instant::now();
    let result = s
        .handle_call(
            "run_code",
            program(json!([
                {"tool": "wait_note", "args": {"name": "cancelled-a"}},
                {"tool": "read_note", "args": {"name": "cancelled-b"}},
            ])),
        )
        .await;
    cancel.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(result.is_error);
    let a = answer(&result.text);
    assert_eq!(a["error"], "interrupted", "{}", result.text);
    assert_eq!(runs("wait_note", "cancelled-"), 1);
    assert_eq!(runs("read_note", "cancelled-"), 0, "nothing runs after");
    let records = store.list(None, 100).unwrap();
    let wait = records.iter().find(|r| r.tool == "wait_note").unwrap();
    assert_eq!(wait.state, CallState::Cancelled, "{records:#?}");
    assert!(records.iter().all(|r| r.tool != "read_note"));
}

#[tokio::test]
async fn without_an_engine_or_outside_the_profile_run_code_is_never_planned_nor_run() {
    // No engine: not planned, and a call of it is answered as a tool outside the active set.
    let (mut s, store) = session("agent", false);
    s.begin_turn("no engine").await;
    assert!(!visible(&s).contains(&"run_code".to_string()));
    assert!(s.code_mode_tools().is_empty());
    let result = s
        .handle_call(
            "run_code",
            program(json!([{"tool": "read_note", "args": {"name": "noengine"}}])),
        )
        .await;
    assert!(result.is_error);
    assert!(result.text.contains("run_code"), "{}", result.text);
    assert_eq!(runs("read_note", "noengine"), 0);
    assert!(store.list(None, 10).unwrap().is_empty());

    // A profile that does not own `run_code`: an engine changes nothing.
    let (mut s, _) = session("plain", true);
    s.begin_turn("plain profile").await;
    assert!(!visible(&s).contains(&"run_code".to_string()));
    let result = s
        .handle_call(
            "run_code",
            program(json!([{"tool": "read_note", "args": {"name": "noprofile"}}])),
        )
        .await;
    assert!(result.is_error);
    assert_eq!(runs("read_note", "noprofile"), 0);
}

#[tokio::test]
async fn run_code_carries_the_typescript_api_of_the_callable_tools_only() {
    let (mut s, _) = session("agent", true);
    s.begin_turn("what can a program call").await;
    let callable: Vec<&str> = s
        .code_mode_tools()
        .into_iter()
        .map(|t| catalog().exported_name(t))
        .collect();
    assert_eq!(callable, ["read_note", "wait_note"]);
    let export = s.export().expect("export");
    let tools = serde_json::to_value(&export).unwrap();
    let text = tools.to_string();
    let run_code = tools["tools"]
        .as_array()
        .and_then(|a| a.iter().find(|t| t["name"] == "run_code"))
        .unwrap_or_else(|| panic!("run_code is exported: {text}"))["description"]
        .as_str()
        .unwrap()
        .to_string();
    // Both are sent as definitions too: declared by name and result alone.
    assert!(
        run_code.contains("  read_note(args: object): Promise<unknown>;"),
        "{run_code}"
    );
    assert!(run_code.contains("wait_note("), "{run_code}");
    // This catalog has no `read_tool_result`, so no `readToolResult` is declared.
    assert!(!run_code.contains("readToolResult"), "{run_code}");
    assert!(!run_code.contains("write_note("), "{run_code}");
    assert!(!run_code.contains("count_notes("), "{run_code}");
}

#[tokio::test]
async fn console_output_stays_within_its_budget_even_for_empty_lines() {
    let (s, _) = session("agent", true);
    let options = SessionOptions {
        script_limits: ScriptLimits {
            console_bytes: 1024,
            ..ScriptLimits::default()
        },
        ..s.options().clone()
    };
    let mut s = s.with_options(options).unwrap();
    s.begin_turn("log a lot").await;
    for line in ["", "a", "\u{1}\u{2}\u{3}"] {
        let code = json!({"calls": [], "log_many": [100_000, line]}).to_string();
        let result = s.handle_call("run_code", json!({"code": code})).await;
        let a = answer(&result.text);
        let kept = a["console"].as_array().map_or(0, Vec::len);
        assert!(kept > 0, "{line:?}: {a}");
        let bytes = serde_json::to_string(&a["console"]).unwrap().len();
        assert!(bytes <= 1024 + 2, "{line:?}: {bytes} bytes of console");
        assert_eq!(a["consoleOmitted"], 100_000 - kept, "{line:?}");
    }
}

#[tokio::test]
async fn an_engine_that_does_not_stop_is_given_up_on_and_the_session_answers() {
    let (s, _) = session("agent", true);
    let options = SessionOptions {
        script_limits: ScriptLimits {
            wall_time: Duration::from_millis(200),
            ..ScriptLimits::default()
        },
        ..s.options().clone()
    };
    let mut s = s.with_options(options).unwrap();
    s.begin_turn("stuck").await;
    let started = std::time::Instant::now();
    let code = json!({"calls": [], "stuck_seconds": 20}).to_string();
    let result = s.handle_call("run_code", json!({"code": code})).await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "answered after {took:?}");
    let a = answer(&result.text);
    assert_eq!(a["error"], "interrupted", "{a}");
    let message = a["message"].as_str().unwrap();
    assert!(message.contains("wall-time limit of 200 ms"), "{message}");
    assert!(message.contains("left to end on its own"), "{message}");
    // The session goes on.
    let result = s
        .handle_call(
            "run_code",
            program(json!([{"tool": "read_note", "args": {"name": "after-stuck"}}])),
        )
        .await;
    assert!(!result.is_error, "{}", result.text);
}

/// The MCP server has no script engine: it neither lists `run_code` nor lets `--tools` select it.
#[cfg(feature = "mcp")]
#[test]
fn the_mcp_server_neither_lists_nor_selects_run_code() {
    use toolcat::mcp::{ScopeTable, Selection};
    use toolcat_catalog::model::Exposure;
    let c = catalog();
    let coordinator = || Coordinator::new(c, ToolContext::new("."));
    let table = ScopeTable::new(coordinator(), "agent", Exposure::Full).unwrap();
    let listed: Vec<&str> = table.listed().iter().map(|&t| c.exported_name(t)).collect();
    assert_eq!(
        listed,
        ["read_note", "wait_note", "count_notes", "write_note"]
    );
    let refused = ScopeTable::with_selection(
        coordinator(),
        "agent",
        Exposure::Full,
        false,
        Selection {
            tools: vec!["run_code".to_string()],
            ..Selection::default()
        },
    );
    let error = refused
        .err()
        .expect("run_code cannot be selected")
        .to_string();
    assert!(error.contains("run_code"), "{error}");
}

#[tokio::test]
async fn a_program_that_returns_nothing_is_told_so() {
    struct Silent;
    impl ScriptEngine for Silent {
        fn name(&self) -> &str {
            "returns undefined"
        }
        fn run(&self, _: &Script<'_>, _: &dyn ScriptHost) -> Result<ScriptReturn, ScriptFailure> {
            Ok(ScriptReturn { value: None })
        }
    }
    let (s, _) = session("agent", true);
    let mut s = s.with_script_engine(Arc::new(Silent));
    s.begin_turn("forget the return").await;
    let result = s.handle_call("run_code", json!({"code": "x"})).await;
    assert!(!result.is_error, "{}", result.text);
    let a = answer(&result.text);
    assert_eq!(a["result"], Value::Null);
    assert!(
        a["note"].as_str().unwrap().contains("returned nothing"),
        "{a}"
    );
    // A program that returns a value (the scripted engine's list) gets no note.
    let mut s = s.with_script_engine(Arc::new(ScriptedEngine));
    let result = s.handle_call("run_code", program(json!([]))).await;
    assert!(answer(&result.text).get("note").is_none());
}
