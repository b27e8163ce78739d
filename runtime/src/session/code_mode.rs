//! `run_code`: a session runs a Code Mode program ([`crate::code_mode`]) with its script engine,
//! each of the program's tool calls an ordinary coordinator call linked to the program's record.

use std::sync::{Arc, OnceLock};

use serde_json::{json, Map, Value};
use toolcat_catalog::tables::bit;

use super::{known, unsendable, Session};
use crate::catalog::{Catalog, ToolIndex};
use crate::code_mode::{
    callable_set, callable_tools, run_code_tool, ChannelHost, FailureKind, HostError, HostRequest,
    Script, ScriptEngine, ScriptFailure,
};
use crate::coordinator::{CallError, CallRequest};
use crate::meta::{self, Answer, MetaTool};
use crate::records::{CallId, CallState, NewCall};
use crate::session::{CallResult, Outcome};
use crate::CancellationToken;

/// How long after a program is told to stop (wall time, cancellation, a fatal call) the session
/// waits for its engine before answering without it: 2 s.
const ABANDON_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

impl<'c> Session<'c> {
    /// The same session with Code Mode's engine: `run_code` (when the catalog declares it and
    /// the profile owns it) is planned and runs its programs in `engine`. Without one,
    /// `run_code` is never planned and a call of it is answered as a tool outside the active set.
    pub fn with_script_engine(mut self, engine: Arc<dyn ScriptEngine>) -> Self {
        self.script_engine = Some(engine);
        self.unsendable = self.unavailable(self.catalog);
        self.known = known(self.catalog, self.profile, &self.unsendable);
        self.refresh();
        self
    }

    /// The same session, its running calls cancelled when `token` is: a direct call's handler
    /// sees it ([`crate::ToolContext::cancellation`]), a `run_code` program stops at once
    /// (its running tool call cancelled too) and answers `interrupted`.
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// The tools a `run_code` program of this session may call now
    /// ([`crate::code_mode::callable_tools`]): empty without a script engine.
    pub fn code_mode_tools(&self) -> Vec<ToolIndex> {
        if self.script_engine.is_none() {
            return Vec::new();
        }
        callable_tools(self.catalog, self.profile)
    }

    /// The tools this session can neither send nor run ([`unsendable`], and `run_code` without
    /// a script engine).
    pub(super) fn unavailable(&self, catalog: &Catalog) -> Vec<u64> {
        let mut bits = unsendable(catalog, self.options.provider);
        if self.script_engine.is_none() {
            if let Some(t) = run_code_tool(catalog) {
                bits[t.index() / 64] |= 1 << (t.index() % 64);
            }
        }
        bits
    }

    /// Runs the program of a `run_code` call `t` (see [`crate::code_mode`]) and answers
    /// `{"result","note"?,"calls","console"?,"consoleOmitted"?}` (`note` when the program
    /// returned nothing), or on failure
    /// `{"error": KIND, "message","line"?,"calls","console"?,"consoleOmitted"?}` with the
    /// failure's message (a tool's own error text first).
    pub(super) async fn run_code(&mut self, t: ToolIndex, arguments: Value) -> CallResult {
        let c = self.catalog;
        let Some(engine) = self.script_engine.clone() else {
            return self.not_callable(c.exported_name(t));
        };
        let errors = self.coordinator.validation_errors(t, &arguments);
        if !errors.is_empty() {
            return meta::invalid_arguments(c, t, errors, None);
        }
        let source = arguments["code"].as_str().unwrap_or_default().to_string();
        let functions: Vec<String> = callable_tools(c, self.profile)
            .into_iter()
            .map(|f| c.exported_name(f).to_string())
            .collect();
        let limits = self.options.script_limits.clone();

        // The program's own record, before anything runs; its calls name it as their parent.
        let store = self.coordinator.store().cloned();
        let record = match &store {
            Some(store) => {
                let new = NewCall {
                    tool: c.exported_name(t),
                    arguments: &arguments,
                    effect: "read",
                    idempotent: false,
                    retry_of: None,
                    parent: None,
                };
                match store
                    .begin(new)
                    .and_then(|id| store.set_state(id, CallState::Running, None).map(|()| id))
                {
                    Ok(id) => Some(id),
                    Err(e) => {
                        return CallResult::error(
                            format!("`run_code` could not be recorded ({e}); nothing ran"),
                            Outcome::Failed,
                        )
                    }
                }
            }
            None => None,
        };

        let (requests, mut inbox) = tokio::sync::mpsc::unbounded_channel();
        let stop = Arc::new(OnceLock::new());
        let host = ChannelHost {
            requests,
            stop: Arc::clone(&stop),
        };
        let (done_tx, mut done) = tokio::sync::oneshot::channel();
        let thread_limits = limits.clone();
        let spawned = std::thread::Builder::new()
            .name("toolcat-run-code".into())
            .spawn(move || {
                let script = Script {
                    source: &source,
                    functions: &functions,
                    limits: &thread_limits,
                };
                let _ = done_tx.send(engine.run(&script, &host));
            });
        if let Err(e) = spawned {
            let failure = ScriptFailure {
                kind: FailureKind::Engine,
                message: format!("the script engine could not start a thread ({e}); nothing ran"),
                line: None,
            };
            return self.program_answer(t, record, Err(failure), 0, Console::new(0));
        }

        // The wall-time limit and the session's cancellation stop the program and its call.
        let calls_cancel = self
            .cancel
            .as_ref()
            .map_or_else(CancellationToken::new, CancellationToken::child_token);
        // A fatal call's answer (the call cap, an outcome unknown) stops the program too.
        let fatal = CancellationToken::new();
        let (abandon_tx, mut abandon) = tokio::sync::oneshot::channel::<()>();
        let watchdog = {
            let stop = Arc::clone(&stop);
            let calls_cancel = calls_cancel.clone();
            let session = self.cancel.clone();
            let fatal = fatal.clone();
            let wall = limits.wall_time;
            tokio::spawn(async move {
                let cancelled = async {
                    match session {
                        Some(token) => token.cancelled().await,
                        None => std::future::pending().await,
                    }
                };
                let reason = tokio::select! {
                    () = tokio::time::sleep(wall) => format!(
                        "the program ran past its wall-time limit of {} ms, tool calls included; nothing more runs: make fewer or smaller calls",
                        wall.as_millis()
                    ),
                    () = cancelled => "the session cancelled the program; nothing more runs".to_string(),
                    () = fatal.cancelled() => String::new(),
                };
                if !reason.is_empty() {
                    let _ = stop.set(reason);
                }
                calls_cancel.cancel();
                // An engine stops at its next interrupt check; one stuck where it makes none is
                // given up on, so the session always answers.
                tokio::time::sleep(ABANDON_GRACE).await;
                let _ = abandon_tx.send(());
            })
        };

        let mut console = Console::new(limits.console_bytes);
        let mut calls = 0usize;
        let outcome = loop {
            tokio::select! {
                finished = &mut done => break finished.unwrap_or_else(|_| Err(ScriptFailure {
                    kind: FailureKind::Engine,
                    message: "the script engine stopped without an answer; nothing more runs".to_string(),
                    line: None,
                })),
                Ok(()) = &mut abandon => break Err(ScriptFailure {
                    kind: FailureKind::Interrupted,
                    message: format!(
                        "{}; the engine did not stop within {} ms of being told to (it was inside a built-in that makes no interrupt check) and was left to end on its own",
                        stop.get().map_or("the program was stopped", String::as_str),
                        ABANDON_GRACE.as_millis()
                    ),
                    line: None,
                }),
                Some(request) = inbox.recv() => match request {
                    HostRequest::Log(line) => console.push(line),
                    HostRequest::Call { tool, arguments, reply } => {
                        // The call past the cap is refused, not counted: `calls` is what was made.
                        let answer = if calls >= limits.max_calls {
                            Err(HostError {
                                message: format!(
                                    "the program made {} tool calls, the most one `run_code` call may make, and was stopped: split the work over several `run_code` calls, each returning its part",
                                    limits.max_calls
                                ),
                                fatal: true,
                            })
                        } else {
                            calls += 1;
                            self.program_call(&tool, arguments, record, &calls_cancel).await
                        };
                        if let Err(HostError { fatal: true, message }) = &answer {
                            let _ = stop.set(message.clone());
                            fatal.cancel();
                        }
                        let _ = reply.send(answer);
                    }
                },
            }
        };
        watchdog.abort();
        // Lines logged just before the end are still in the channel.
        while let Ok(request) = inbox.try_recv() {
            if let HostRequest::Log(line) = request {
                console.push(line);
            }
        }
        let outcome = match (outcome, stop.get()) {
            // A fatal call the program caught still ends it as interrupted, with that reason.
            (Ok(_), Some(reason)) => Err(ScriptFailure {
                kind: FailureKind::Interrupted,
                message: reason.clone(),
                line: None,
            }),
            (outcome, _) => outcome,
        };
        self.program_answer(t, record, outcome, calls, console)
    }

    /// One tool call of a program: refused unless the tool is callable from Code Mode now
    /// ([`callable_set`], from the live catalog), then an ordinary coordinator call within the
    /// active set plus that set, recorded with `parent` and cancelled with `cancel`.
    async fn program_call(
        &mut self,
        name: &str,
        arguments: Value,
        parent: Option<CallId>,
        cancel: &CancellationToken,
    ) -> Result<Value, HostError> {
        let refuse = |message: String| {
            Err(HostError {
                message,
                fatal: false,
            })
        };
        let c = self.catalog;
        if name == MetaTool::ReadResult.name() {
            let Some(rt) = crate::code_mode::meta_tool(c, MetaTool::ReadResult) else {
                return refuse("this catalog has no `read_tool_result`, so `readToolResult` cannot read archived results".into());
            };
            let errors = self.coordinator.validation_errors(rt, &arguments);
            if !errors.is_empty() {
                return refuse(format!(
                    "invalid arguments for `readToolResult`: {}; nothing was read: pass a reference string and optionally {{offset, length}}, whole numbers",
                    serde_json::to_string(&errors).unwrap_or_default()
                ));
            }
            let Answer::Done(result) =
                meta::answer(&self.scope(), MetaTool::ReadResult, rt, &arguments, None)
            else {
                return refuse("`readToolResult` answered nothing".into());
            };
            if result.is_error {
                return refuse(result.text);
            }
            return serde_json::from_str(&result.text).or_else(|_| Ok(Value::String(result.text)));
        }
        let callable = callable_set(c, self.profile);
        let t = match c.tool(name) {
            Ok(t) if bit(&callable, t.index()) => t,
            _ => {
                let names: Vec<&str> = callable_tools(c, self.profile)
                    .into_iter()
                    .map(|t| c.exported_name(t))
                    .collect();
                return refuse(format!(
                    "`{name}` cannot be called from a `run_code` program; nothing ran: a program may call only the tools of this profile declared `code_mode = true` ({})",
                    names.join(", ")
                ));
            }
        };
        let allowed: Vec<u64> = (0..callable.len())
            .map(|k| callable[k] | self.active.get(k).copied().unwrap_or(0))
            .collect();
        let mut request = CallRequest::new(t, arguments, &allowed)
            .with_owner(self.owner)
            .with_cancellation(cancel.clone());
        if let Some(parent) = parent {
            request = request.with_parent(parent);
        }
        let outcome = self.coordinator.call(request).await;
        match outcome.result {
            Ok(value) => Ok(value.value),
            Err(e @ (CallError::OutcomeUnknown { .. } | CallError::Cancelled { .. })) => {
                Err(HostError {
                    message: e.to_string(),
                    fatal: true,
                })
            }
            Err(CallError::InvalidArguments { tool, errors, .. }) => refuse(format!(
                "invalid arguments for `{tool}`: {}; nothing ran",
                serde_json::to_string(&errors).unwrap_or_default()
            )),
            Err(e) => refuse(e.to_string()),
        }
    }

    /// The answer of a program, and its record's last state.
    fn program_answer(
        &self,
        t: ToolIndex,
        record: Option<CallId>,
        outcome: Result<crate::code_mode::ScriptReturn, ScriptFailure>,
        calls: usize,
        console: Console,
    ) -> CallResult {
        let mut answer = Map::new();
        let ok = outcome.is_ok();
        let detail = match outcome {
            Ok(value) => {
                // `undefined` (no `return`) reads as `null`, with a note: a program that forgot
                // its `return` would otherwise look like one that found nothing.
                let returned = value.value.is_some();
                answer.insert("result".into(), value.value.unwrap_or(Value::Null));
                if !returned {
                    answer.insert(
                        "note".into(),
                        json!("the program returned nothing (no `return`, or `return;`): end it with `return VALUE` to get what it found"),
                    );
                }
                None
            }
            Err(failure) => {
                answer.insert("error".into(), json!(failure.kind.as_str()));
                answer.insert("message".into(), json!(failure.message));
                if let Some(line) = failure.line {
                    answer.insert("line".into(), json!(line));
                }
                Some(match failure.line {
                    Some(line) => format!(
                        "{} at line {line}: {}",
                        failure.kind.as_str(),
                        failure.message
                    ),
                    None => format!("{}: {}", failure.kind.as_str(), failure.message),
                })
            }
        };
        answer.insert("calls".into(), json!(calls));
        console.insert_into(&mut answer);
        if let (Some(store), Some(id)) = (self.coordinator.store(), record) {
            let state = if ok {
                CallState::Succeeded
            } else {
                CallState::Failed
            };
            // The answer is the model's either way; a store that fails here leaves the record
            // `running`, which a later recovery judges.
            let _ = store.set_state(id, state, detail.as_deref());
        }
        CallResult {
            text: Value::Object(answer).to_string(),
            content: Vec::new(),
            is_error: !ok,
            outcome: Outcome::Ran { tool: t, ok },
            ran: Some(t),
        }
    }
}

/// A program's console output, kept up to a byte budget; lines past it are counted.
struct Console {
    lines: Vec<String>,
    budget: usize,
    used: usize,
    omitted: usize,
}

impl Console {
    fn new(budget: usize) -> Self {
        Console {
            lines: Vec::new(),
            budget,
            used: 0,
            omitted: 0,
        }
    }

    /// Keeps `line` while the answer's console array stays within the budget: a line costs its
    /// length as a JSON string plus a separator, so empty lines are not free.
    fn push(&mut self, line: String) {
        let cost = serde_json::to_string(&line).map_or(line.len(), |s| s.len()) + 1;
        if self.omitted > 0 || self.used + cost > self.budget {
            self.omitted += 1;
        } else {
            self.used += cost;
            self.lines.push(line);
        }
    }

    fn insert_into(self, answer: &mut Map<String, Value>) {
        if !self.lines.is_empty() {
            answer.insert("console".into(), json!(self.lines));
        }
        if self.omitted > 0 {
            answer.insert("consoleOmitted".into(), json!(self.omitted));
        }
    }
}
