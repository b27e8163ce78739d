//! Code Mode against direct calls (`code-mode`): the multi-call read tasks of
//! `tests/fixtures/code_mode/tasks.json`, each replayed through a real [`toolcat::Session`] over
//! the reference agent's catalog and handlers ([`toolcat_cli::reference_catalog`]) on the
//! repository `make_repo.sh` builds, with **scripted model steps**: no model is asked anything,
//! each step's calls and answer are fixed here.
//!
//! Three conversations per task ([`run_task`]):
//!
//! - **direct**: preset `code`; each step's calls are those the task's `note` describes (the calls
//!   of one step are the parallel calls of one response), computed from the prompt and the
//!   earlier results by the task's function in [`direct`], and the last step's answer is computed
//!   from the results by that function too. The tools the task names that the preset leaves
//!   discoverable (`git_log`, `git_show`) are preselected by the host ([`Load::Preselected`]), so
//!   the baseline takes the note's minimum of steps;
//! - **direct with `tool_search`**: the same, but the model loads those tools itself with one
//!   `tool_search` call in step 1 ([`Load::Searched`]), as the session runs with the preset as it
//!   ships: one more step when step 1 needs them;
//! - **Code Mode**: preset `code_scripted` with a script engine
//!   ([`toolcat::Session::with_script_engine`]); step 1 is one `run_code` call with the task's
//!   program (`bench/code_mode/programs/ID.js`, which may call only the tools the task names),
//!   step 2 answers the program's `result`.
//!
//! Each answer is compared with the task's `expected` as JSON (objects regardless of key order).
//! What the model reads at each step ([`Step`]) is counted in `o200k_base` ([`toolcat::tokens`]):
//! the tool definitions the session exports for that step in the OpenAI Chat Completions format
//! (`run_code`'s with the TypeScript declarations of the program's API), plus every message so
//! far: the user prompt, each earlier call as `{"name","arguments"}` JSON (arguments as the
//! scripted model writes them: optional ones left out) and each result text as the session
//! answered it. A conversation's tokens are the sum over its steps, the answer step included.
//!
//! [`overhead`] times a cheap read tool called directly through [`toolcat::Coordinator::call`]
//! against the same calls made from one `run_code` program.

pub mod direct;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _, Result};
use serde::Serialize;
use serde_json::{json, Value};
use toolcat::code_mode::{ScriptEngine, ScriptLimits};
use toolcat::coordinator::CallRequest;
use toolcat::export::ExportFormat;
use toolcat::tokens::{count_json_tokens, count_tokens};
use toolcat::{Catalog, Session, SessionOptions, ToolContext};

/// The preset of the direct-calls baseline.
pub const DIRECT_PRESET: &str = "code";
/// The preset of Code Mode: `code` plus the `code_mode` toolset (`run_code`).
pub const CODE_MODE_PRESET: &str = "code_scripted";
/// The provider format the definitions are exported and counted in.
pub const FORMAT: ExportFormat = ExportFormat::OpenAi;

/// `tests/fixtures/code_mode` of this repository.
pub fn default_fixtures() -> PathBuf {
    crate::manifest_dir().join("../tests/fixtures/code_mode")
}

/// `bench/code_mode/programs`: one Code Mode program per task, `ID.js`.
pub fn default_programs() -> PathBuf {
    crate::manifest_dir().join("code_mode/programs")
}

/// One task of `tasks.json`.
#[derive(Debug, Clone)]
pub struct Task {
    /// Its id.
    pub id: String,
    /// The user message.
    pub prompt: String,
    /// The read tools a solution needs.
    pub tools: Vec<String>,
    /// The expected answer.
    pub expected: Value,
    /// Model responses the direct baseline needs at least, the answer included.
    pub direct_steps_min: usize,
    /// How the direct baseline reaches that minimum.
    pub note: String,
}

/// `tasks.json`: the pinned HEAD of the fixture repository and the tasks.
#[derive(Debug, Clone)]
pub struct TaskFile {
    /// The commit id `make_repo.sh` must give.
    pub head: String,
    /// The tasks, in file order.
    pub tasks: Vec<Task>,
}

/// Reads `tasks.json` in `fixtures`.
///
/// # Errors
/// The file is missing or not of the documented shape.
pub fn load_tasks(fixtures: &Path) -> Result<TaskFile> {
    let path = fixtures.join("tasks.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let file: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let head = file["repository"]["head"]
        .as_str()
        .context("tasks.json has no repository.head")?
        .to_string();
    let str_of = |t: &Value, k: &str| -> Result<String> {
        t[k].as_str()
            .map(str::to_string)
            .with_context(|| format!("a task has no string `{k}`"))
    };
    let mut tasks = Vec::new();
    for t in file["tasks"]
        .as_array()
        .context("tasks.json has no tasks")?
    {
        tasks.push(Task {
            id: str_of(t, "id")?,
            prompt: str_of(t, "prompt")?,
            tools: t["tools"]
                .as_array()
                .context("a task has no tools")?
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            expected: t["expected"].clone(),
            direct_steps_min: t["direct_steps_min"]
                .as_u64()
                .context("a task has no direct_steps_min")? as usize,
            note: str_of(t, "note")?,
        });
    }
    Ok(TaskFile { head, tasks })
}

/// Builds the fixture repository in `dest` (new or empty) with `make_repo.sh` and checks that its
/// HEAD is `head`.
///
/// # Errors
/// The script fails, or the HEAD differs.
pub fn build_repository(fixtures: &Path, dest: &Path, head: &str) -> Result<()> {
    let script = fixtures.join("make_repo.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(dest)
        .output()
        .with_context(|| format!("cannot run {}", script.display()))?;
    ensure!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(dest)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .context("cannot run git rev-parse")?;
    let built = String::from_utf8_lossy(&out.stdout).trim().to_string();
    ensure!(
        built == head,
        "make_repo.sh built HEAD {built}, tasks.json pins {head}: the fixture or git changed"
    );
    Ok(())
}

/// One tool call of a scripted model step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Call {
    /// The tool's exported name.
    pub name: String,
    /// Its arguments.
    pub arguments: Value,
}

impl Call {
    /// A call of `name` with `arguments`.
    pub fn new(name: &str, arguments: Value) -> Call {
        Call {
            name: name.to_string(),
            arguments,
        }
    }
}

/// What a scripted model step does: call tools (in parallel, one response), or answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Move {
    /// The calls of one response.
    Calls(Vec<Call>),
    /// The final answer.
    Answer(Value),
}

/// A scripted model: given the results of every earlier step (one JSON value per call, in call
/// order), the next step.
pub type Model<'a> = dyn FnMut(&[Vec<Value>]) -> Result<Move> + 'a;

/// One model step as the model reads it.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Tool definitions sent at this step.
    pub definitions: usize,
    /// Their names, in the order sent.
    pub definition_names: Vec<String>,
    /// Their tokens (the OpenAI export of the session's plan).
    pub definition_tokens: usize,
    /// Tokens of the messages so far: the prompt, earlier calls and results.
    pub message_tokens: usize,
    /// The tools this step calls (none for the answer).
    pub calls: Vec<String>,
}

/// One conversation: its steps, what it cost and how it ended.
#[derive(Debug, Clone, Serialize)]
pub struct Conversation {
    /// Model steps, the answer included.
    pub steps: Vec<Step>,
    /// Tokens the model read: definitions and messages, summed over the steps.
    pub tokens: usize,
    /// Tool calls the model made.
    pub calls: usize,
    /// Tool calls made by `run_code` programs.
    pub inner_calls: usize,
    /// The answer, when the conversation got to one.
    pub answer: Option<Value>,
    /// Why it did not: a refused or failed call, a scripted step that could not decide.
    pub error: Option<String>,
    /// Wall time of the conversation, tool calls included.
    pub seconds: f64,
}

/// How a direct conversation gets the tools its task names that the preset leaves discoverable
/// (in preset `code`: `git_log`, `git_show`, `file_info`), which no step can call before they
/// join the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Load {
    /// Nothing is done: the tools the plan shows, and for Code Mode those a program can call.
    Nothing,
    /// The host preselects these tools at the turn's start (before BM25's picks), so the steps
    /// are those of the task's note: the baseline at its minimum.
    Preselected(Vec<String>),
    /// The model loads the ones among these tools that the first plan does not show with one
    /// `tool_search` call (`select:A,B`, names it reads in the search tool's manifest) in step
    /// 1: beside step 1's own calls when those need none of them, else as a step of its own
    /// before them. The session as the preset ships it.
    Searched(Vec<String>),
}

/// Preselects `tools`, then what BM25 picks ([`toolcat::preselect::Bm25Preselector`]).
struct TaskTools {
    tools: Vec<String>,
    bm25: toolcat::preselect::Bm25Preselector,
}

impl toolcat::preselect::Preselector for TaskTools {
    fn preselect<'a>(
        &'a self,
        request: &'a toolcat::preselect::PreselectRequest<'a>,
    ) -> toolcat::handler::BoxFuture<'a, Result<Vec<String>, toolcat::preselect::PreselectError>>
    {
        Box::pin(async move {
            let mut names = self.tools.clone();
            names.extend(self.bm25.preselect(request).await?);
            Ok(names)
        })
    }
}

/// What the model history keeps of a step's results.
enum Keep {
    /// Every result.
    All,
    /// All but the first (a `tool_search` made beside the step's own calls).
    AllButFirst,
    /// None (a step that only loaded tools).
    Nothing,
}

/// Most steps a scripted conversation may take before it is stopped.
const MAX_STEPS: usize = 8;

/// Replays one conversation: a session of `preset` on `workspace` (with `engine`, when given,
/// and the tools `load` says), the turn started with `prompt`, then `model`'s steps until it
/// answers. The model sees only its own calls' results (not those of a `tool_search` that
/// [`Load::Searched`] adds).
///
/// # Errors
/// The session cannot be built; a failed call or a refused step is reported in
/// [`Conversation::error`] instead.
pub async fn converse(
    catalog: &'static Catalog,
    preset: &str,
    workspace: &Path,
    engine: Option<Arc<dyn ScriptEngine>>,
    load: &Load,
    prompt: &str,
    model: &mut Model<'_>,
) -> Result<Conversation> {
    let started = Instant::now();
    let mut session = session(catalog, preset, workspace, engine, ScriptLimits::default())?;
    if let Load::Preselected(tools) = load {
        session = session.with_preselector(TaskTools {
            tools: tools.clone(),
            bm25: toolcat::preselect::Bm25Preselector::default(),
        });
    }
    session.begin_turn(prompt).await;
    let shown = |session: &Session<'static>| -> Vec<String> {
        session
            .definitions()
            .iter()
            .map(|&t| catalog.exported_name(t).to_string())
            .collect()
    };
    let mut search = match load {
        Load::Searched(tools) => {
            let first = shown(&session);
            let missing: Vec<&str> = tools
                .iter()
                .filter(|t| !first.contains(t))
                .map(String::as_str)
                .collect();
            (!missing.is_empty()).then(|| {
                Call::new(
                    "tool_search",
                    json!({ "query": format!("select:{}", missing.join(",")) }),
                )
            })
        }
        _ => None,
    };
    let mut messages = count_tokens(prompt);
    let mut conversation = Conversation {
        steps: Vec::new(),
        tokens: 0,
        calls: 0,
        inner_calls: 0,
        answer: None,
        error: None,
        seconds: 0.0,
    };
    let mut history: Vec<Vec<Value>> = Vec::new();
    let outcome: Result<Value> = async {
        loop {
            ensure!(
                conversation.steps.len() < MAX_STEPS,
                "no answer after {MAX_STEPS} steps"
            );
            let export = session
                .export()
                .context("the session's definitions cannot be exported")?
                .without_deferred();
            let mut step = Step {
                definitions: export.definitions(),
                definition_names: shown(&session),
                definition_tokens: count_json_tokens(&export),
                message_tokens: messages,
                calls: Vec::new(),
            };
            conversation.tokens += step.definition_tokens + step.message_tokens;
            let next = model(&history);
            let (calls, keep) = match next {
                Ok(Move::Answer(answer)) => {
                    conversation.steps.push(step);
                    return Ok(answer);
                }
                Ok(Move::Calls(calls)) => match search.take() {
                    Some(s)
                        if calls
                            .iter()
                            .all(|c| step.definition_names.contains(&c.name)) =>
                    {
                        (std::iter::once(s).chain(calls).collect(), Keep::AllButFirst)
                    }
                    Some(s) => (vec![s], Keep::Nothing),
                    None => (calls, Keep::All),
                },
                Err(e) => {
                    conversation.steps.push(step);
                    return Err(e.context(format!("step {}", conversation.steps.len())));
                }
            };
            let mut results = Vec::with_capacity(calls.len());
            for call in calls {
                messages += count_json_tokens(&call);
                let r = session
                    .handle_call(&call.name, call.arguments.clone())
                    .await;
                messages += count_tokens(&r.text);
                step.calls.push(call.name.clone());
                conversation.calls += 1;
                let value: Value =
                    serde_json::from_str(&r.text).unwrap_or_else(|_| Value::String(r.text.clone()));
                if call.name == "run_code" {
                    conversation.inner_calls += value["calls"].as_u64().unwrap_or(0) as usize;
                }
                if r.is_error {
                    conversation.steps.push(step);
                    bail!(
                        "step {}: `{}` {} answered an error: {}",
                        conversation.steps.len(),
                        call.name,
                        call.arguments,
                        r.text
                    );
                }
                results.push(value);
            }
            conversation.steps.push(step);
            match keep {
                Keep::All => history.push(results),
                Keep::AllButFirst => history.push(results.split_off(1)),
                Keep::Nothing => {}
            }
        }
    }
    .await;
    match outcome {
        Ok(answer) => conversation.answer = Some(answer),
        Err(e) => conversation.error = Some(format!("{e:#}")),
    }
    conversation.seconds = started.elapsed().as_secs_f64();
    Ok(conversation)
}

/// A session of `preset` on `workspace`, exporting for [`FORMAT`], with `engine` and `limits`.
fn session(
    catalog: &'static Catalog,
    preset: &str,
    workspace: &Path,
    engine: Option<Arc<dyn ScriptEngine>>,
    limits: ScriptLimits,
) -> Result<Session<'static>> {
    let preset = catalog.preset(preset)?;
    let session = Session::for_preset(catalog, preset, ToolContext::new(workspace));
    let options = SessionOptions {
        provider: FORMAT,
        script_limits: limits,
        ..session.options().clone()
    };
    let session = session.with_options(options)?;
    Ok(match engine {
        Some(engine) => session.with_script_engine(engine),
        None => session,
    })
}

/// What `run_code`'s definition costs in [`FORMAT`] at the first step of a session of
/// [`CODE_MODE_PRESET`] (before preselection adds any tool), as the session's export sends it:
/// `(definition tokens, API tokens)`, the definition with the TypeScript declarations of the
/// program's API appended to its description, and those declarations alone (the description's
/// part after its first blank line).
///
/// # Errors
/// The catalog has no `run_code` or no such preset, or the export fails.
pub fn run_code_tokens(
    catalog: &'static Catalog,
    engine: Arc<dyn ScriptEngine>,
) -> Result<(usize, usize)> {
    let mut session = session(
        catalog,
        CODE_MODE_PRESET,
        Path::new("."),
        Some(engine),
        ScriptLimits::default(),
    )?
    .without_preselection();
    let export = serde_json::to_value(session.export()?)?;
    let tool = export
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["function"]["name"] == "run_code"))
        .context("the Code Mode preset's first step sends no `run_code`")?;
    let description = tool["function"]["description"].as_str().unwrap_or_default();
    let api = description.split_once("\n\n").map_or("", |(_, api)| api);
    Ok((count_json_tokens(tool), count_tokens(api)))
}

/// The Code Mode model of a task: step 1 runs `program`, step 2 answers its `result`.
pub fn code_mode_model(program: String) -> impl FnMut(&[Vec<Value>]) -> Result<Move> {
    move |history: &[Vec<Value>]| match history {
        [] => Ok(Move::Calls(vec![Call::new(
            "run_code",
            json!({ "code": program }),
        )])),
        [first] => {
            let answer = &first[0];
            match answer.get("result") {
                Some(result) => Ok(Move::Answer(result.clone())),
                None => bail!("`run_code` answered no result: {answer}"),
            }
        }
        _ => bail!("Code Mode answers at step 2"),
    }
}

/// The names of the `tools.NAME` functions a program's text refers to.
pub fn program_tools(program: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = program;
    while let Some(at) = rest.find("tools.") {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + "tools.".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            && !name.is_empty()
        {
            names.insert(name);
        }
        rest = after;
    }
    names
}

/// Reads the program of task `id` in `programs` and checks that it calls only `tools`.
///
/// # Errors
/// The file is missing, or the program calls a tool the task does not name.
pub fn load_program(programs: &Path, id: &str, tools: &[String]) -> Result<String> {
    let path = programs.join(format!("{id}.js"));
    let program = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let extra: Vec<String> = program_tools(&program)
        .into_iter()
        .filter(|t| !tools.contains(t))
        .collect();
    ensure!(
        extra.is_empty(),
        "{} calls {} , which task `{id}` does not name (it names {})",
        path.display(),
        extra.join(", "),
        tools.join(", ")
    );
    Ok(program)
}

/// The outcome of one task: its conversations and whether each answer is `expected`.
#[derive(Debug, Clone, Serialize)]
pub struct TaskReport {
    /// The task's id.
    pub id: String,
    /// `direct_steps_min` of `tasks.json`.
    pub direct_steps_min: usize,
    /// The direct-calls baseline, the task's tools preselected ([`Load::Preselected`]).
    pub direct: Conversation,
    /// Whether its answer equals `expected`.
    pub direct_matched: bool,
    /// The direct-calls baseline loading discoverable tools with `tool_search`
    /// ([`Load::Searched`]).
    pub direct_searched: Conversation,
    /// Whether its answer equals `expected`.
    pub direct_searched_matched: bool,
    /// Code Mode.
    pub code_mode: Conversation,
    /// Whether its answer equals `expected`.
    pub code_mode_matched: bool,
}

impl TaskReport {
    /// Code Mode's tokens read over the direct baseline's.
    pub fn ratio(&self) -> f64 {
        self.code_mode.tokens as f64 / self.direct.tokens.max(1) as f64
    }

    /// Every answer equals `expected`.
    pub fn matched(&self) -> bool {
        self.direct_matched && self.direct_searched_matched && self.code_mode_matched
    }
}

/// Runs task `task` every way on the repository `workspace`: direct with its tools preselected,
/// direct loading them with `tool_search`, and Code Mode with `engine`.
///
/// # Errors
/// A session cannot be built, the program cannot be read, or the task has no direct model.
pub async fn run_task(
    catalog: &'static Catalog,
    task: &Task,
    workspace: &Path,
    programs: &Path,
    engine: Arc<dyn ScriptEngine>,
) -> Result<TaskReport> {
    let model = direct::model(&task.id)
        .with_context(|| format!("task `{}` has no direct model in direct.rs", task.id))?;
    let mut direct = Vec::new();
    for load in [
        Load::Preselected(task.tools.clone()),
        Load::Searched(task.tools.clone()),
    ] {
        let mut model = model;
        direct.push(
            converse(
                catalog,
                DIRECT_PRESET,
                workspace,
                None,
                &load,
                &task.prompt,
                &mut model,
            )
            .await?,
        );
    }
    let program = load_program(programs, &task.id, &task.tools)?;
    let mut model = code_mode_model(program);
    let code_mode = converse(
        catalog,
        CODE_MODE_PRESET,
        workspace,
        Some(engine),
        &Load::Nothing,
        &task.prompt,
        &mut model,
    )
    .await?;
    let matched = |c: &Conversation| c.answer.as_ref() == Some(&task.expected);
    let direct_searched = direct.pop().expect("two direct conversations");
    let direct = direct.pop().expect("two direct conversations");
    Ok(TaskReport {
        id: task.id.clone(),
        direct_steps_min: task.direct_steps_min,
        direct_matched: matched(&direct),
        direct_searched_matched: matched(&direct_searched),
        code_mode_matched: matched(&code_mode),
        direct,
        direct_searched,
        code_mode,
    })
}

/// Per-call overhead of Code Mode: the same `calls` calls of `file_info` made directly and from
/// one program, medians over `repeat` runs.
#[derive(Debug, Clone, Serialize)]
pub struct Overhead {
    /// The tool and its arguments.
    pub call: Call,
    /// Calls per run.
    pub calls: usize,
    /// Runs of each kind; the figures are their medians.
    pub repeat: usize,
    /// Microseconds per call, each call through [`toolcat::Coordinator::call`].
    pub direct_us: f64,
    /// Microseconds per call of the program that makes the `calls` calls in a loop: its whole
    /// `run_code` call (engine start included) divided by `calls`.
    pub code_mode_us: f64,
    /// Microseconds of a `run_code` call whose program makes no call (`return 0`): the fixed
    /// cost of a program.
    pub empty_program_us: f64,
    /// `(program with calls - empty program) / calls`: what one more call from a program costs.
    pub code_mode_marginal_us: f64,
}

/// Times `calls` calls of `file_info` on `Cargo.toml` of `workspace`, directly and from a
/// program, `repeat` times each (interleaved).
///
/// # Errors
/// A session cannot be built, or a call or a program fails.
pub async fn overhead(
    catalog: &'static Catalog,
    workspace: &Path,
    engine: Arc<dyn ScriptEngine>,
    calls: usize,
    repeat: usize,
) -> Result<Overhead> {
    let call = Call::new("file_info", json!({"path": "Cargo.toml"}));
    let tool = catalog.tool(&call.name)?;
    let mut allowed = vec![0u64; catalog.len().div_ceil(64)];
    allowed[tool.index() / 64] |= 1 << (tool.index() % 64);
    let limits = ScriptLimits {
        max_calls: calls.max(1),
        ..ScriptLimits::default()
    };
    let mut session = session(catalog, CODE_MODE_PRESET, workspace, Some(engine), limits)?;
    session.begin_turn("Time file_info calls.").await;
    let looped = format!(
        "for (let i = 0; i < {calls}; i++) {{ await tools.{}({}); }}\nreturn {calls};",
        call.name, call.arguments
    );
    let empty = "return 0;".to_string();
    let (mut direct, mut program, mut nothing) = (Vec::new(), Vec::new(), Vec::new());
    // One warm-up of each, not counted.
    for k in 0..=repeat {
        let started = Instant::now();
        for _ in 0..calls {
            let request = CallRequest::new(tool, call.arguments.clone(), &allowed);
            let outcome = session.coordinator().call(request).await;
            if let Err(e) = outcome.result {
                bail!("direct `{}` failed: {e}", call.name);
            }
        }
        let d = started.elapsed();
        let p = time_program(&mut session, &looped).await?;
        let n = time_program(&mut session, &empty).await?;
        if k > 0 {
            direct.push(d);
            program.push(p);
            nothing.push(n);
        }
    }
    let per_call = |d: Duration| d.as_secs_f64() * 1e6 / calls.max(1) as f64;
    let direct_us = per_call(median(&mut direct));
    let code_mode_us = per_call(median(&mut program));
    let empty_program_us = median(&mut nothing).as_secs_f64() * 1e6;
    let code_mode_marginal_us =
        (median(&mut program).as_secs_f64() * 1e6 - empty_program_us) / calls.max(1) as f64;
    Ok(Overhead {
        call,
        calls,
        repeat,
        direct_us,
        code_mode_us,
        empty_program_us,
        code_mode_marginal_us,
    })
}

/// Wall time of one `run_code` call of `code`.
async fn time_program(session: &mut Session<'static>, code: &str) -> Result<Duration> {
    let arguments = json!({ "code": code });
    let started = Instant::now();
    let r = session.handle_call("run_code", arguments).await;
    let took = started.elapsed();
    ensure!(!r.is_error, "the timing program failed: {}", r.text);
    Ok(took)
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values.get(values.len() / 2).copied().unwrap_or_default()
}
