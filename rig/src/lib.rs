//! A toolcat [`Session`] as the tools of a [rig](https://docs.rs/rig-agent) agent.
//!
//! [`ToolcatTools`] owns a session and a rig tool registry ([`ToolServerHandle`]) and is an
//! [`AgentHook`]. Given to an agent as both, it makes the agent run toolcat's discovery loop:
//!
//! - at the start of each run (each `agent.prompt(...)`, [`AgentHook::on_run_start`]) it calls
//!   [`Session::begin_turn`] with the prompt's text (named tools, preselection, a fresh
//!   `tool_search` budget);
//! - before each completion request of the run ([`AgentHook::on_completion_call`], which rig
//!   calls before it reads the registry for that request) it makes the registry hold exactly the
//!   session's plan ([`Session::definitions`]), in plan order, so after a `tool_search` call the
//!   next request of the same multi-turn prompt lists the tools it found;
//! - every tool call the model makes goes to [`Session::handle_call`]: the active-set check, the
//!   meta-tools, JSON Schema validation, the session's approval hook ([`Session::with_approval`])
//!   and its coordinator (records and the result archive, [`Session::with_coordinator`]). The
//!   model reads [`CallResult::text`] verbatim; an error result is a failed rig tool result
//!   carrying that text ([`ToolExecutionError`]).
//!
//! ```no_run
//! # async fn run(model: rig_agent::core::DynModel<rig_agent::core::operation::Completion>,
//! #              session: toolcat::Session<'static>) -> Result<(), Box<dyn std::error::Error>> {
//! use rig_agent::AgentBuilder;
//! use toolcat_rig::ToolcatTools;
//!
//! let tools = ToolcatTools::new(session);
//! let agent = AgentBuilder::new(model)
//!     .tool_server_handle(tools.tool_server())
//!     .add_hook(tools.clone())
//!     .build();
//! let answer = agent.prompt("show me the last commits").max_turns(8).await?;
//! println!("{}", answer.output());
//! # Ok(())
//! # }
//! ```
//!
//! The definitions rig sends are each tool's exported name, description and input JSON Schema
//! ([`toolcat::export::exported_schema`]); rig's provider wire shapes them for its provider.
//! Leave rig's OpenAI strict-tools option off (its default): with it, rig rewrites the schemas
//! for strict mode and the model sends `null` for every argument it leaves out, which the
//! session's validation refuses unless the session restores them for that provider.
//! The session borrows its catalog for `'static` (a compiled-in catalog, or a loaded one kept
//! for the program's life) because rig's tools are `'static`.

#![forbid(unsafe_code)]

use std::sync::{Arc, Mutex, PoisonError, Weak};

use rig_agent::agent::{
    AgentHook, CompletionCallAction, CompletionCallEvent, HookContext, RunStart, RunStartAction,
};
use rig_agent::tool::server::{ToolServer, ToolServerHandle};
use rig_core::message::ToolName;
use rig_core::tool::{DynamicTool, ToolErrorKind, ToolExecutionError, ToolOutput};
use serde_json::Value;
use toolcat::{CallResult, Outcome, Session, ToolIndex};

/// A toolcat [`Session`] presented as a rig tool registry and agent hook (see the crate docs).
///
/// Clones share the session and the registry.
#[derive(Clone)]
pub struct ToolcatTools {
    inner: Arc<Inner>,
}

struct Inner {
    /// Locked for each turn start, registry update and tool call (calls of one step run one
    /// after another through the session).
    session: tokio::sync::Mutex<Session<'static>>,
    server: ToolServerHandle,
    /// Exported names registered on `server`, in registration order.
    registered: Mutex<Vec<String>>,
}

impl ToolcatTools {
    /// Wraps `session`; the registry starts with its current plan.
    pub fn new(session: Session<'static>) -> Self {
        let inner = Arc::new(Inner {
            session: tokio::sync::Mutex::new(session),
            server: ToolServer::new().owner("toolcat").run(),
            registered: Mutex::new(Vec::new()),
        });
        if let Ok(session) = inner.session.try_lock() {
            sync(&inner, &session);
        }
        ToolcatTools { inner }
    }

    /// The rig tool registry to give the agent (`AgentBuilder::tool_server_handle`).
    pub fn tool_server(&self) -> ToolServerHandle {
        self.inner.server.clone()
    }

    /// The session, for reading its state (discovered tools, the turn report, the coordinator's
    /// records) between runs. Holding the guard while the agent runs blocks its tool calls.
    pub async fn session(&self) -> tokio::sync::MutexGuard<'_, Session<'static>> {
        self.inner.session.lock().await
    }

    /// The exported names the registry holds now, in the order rig lists them.
    pub fn registered(&self) -> Vec<String> {
        lock(&self.inner.registered).clone()
    }
}

impl AgentHook for ToolcatTools {
    fn name(&self) -> Option<String> {
        Some("toolcat".to_string())
    }

    async fn on_run_start(&self, _ctx: &HookContext, event: RunStart<'_>) -> RunStartAction {
        let message = event.prompt.rag_text().unwrap_or_default();
        let mut session = self.inner.session.lock().await;
        session.begin_turn(&message).await;
        sync(&self.inner, &session);
        RunStartAction::continue_run()
    }

    async fn on_completion_call(
        &self,
        _ctx: &HookContext,
        _event: CompletionCallEvent<'_>,
    ) -> CompletionCallAction {
        let session = self.inner.session.lock().await;
        sync(&self.inner, &session);
        CompletionCallAction::continue_run()
    }
}

/// Makes the registry hold the session's definitions in plan order: tools that left the plan
/// are removed; when the rest is the plan's prefix the new tools are appended (what a step's
/// `tool_search` does), otherwise every tool is registered again in plan order.
fn sync(inner: &Arc<Inner>, session: &Session<'static>) {
    let catalog = session.catalog();
    let plan: Vec<(ToolIndex, &str)> = session
        .definitions()
        .iter()
        .map(|&t| (t, catalog.exported_name(t)))
        .collect();
    let mut registered = lock(&inner.registered);
    let in_plan = |name: &str| plan.iter().any(|&(_, n)| n == name);
    for name in registered.iter().filter(|n| !in_plan(n)) {
        inner.server.remove_tool(name);
    }
    registered.retain(|n| in_plan(n));
    let prefix =
        registered.len() <= plan.len() && registered.iter().zip(&plan).all(|(r, &(_, n))| r == n);
    if !prefix {
        for name in registered.drain(..) {
            inner.server.remove_tool(&name);
        }
    }
    for &(t, name) in &plan[registered.len()..] {
        if let Some(tool) = rig_tool(Arc::downgrade(inner), session, t) {
            inner.server.add_dynamic_tool(tool);
        }
        registered.push(name.to_string());
    }
}

/// The rig tool of `t`: its exported name, description and input schema, called through the
/// session. Holds the session weakly (the registry that holds the tool belongs to it).
fn rig_tool(inner: Weak<Inner>, session: &Session<'static>, t: ToolIndex) -> Option<DynamicTool> {
    let catalog = session.catalog();
    let name = catalog.exported_name(t).to_string();
    let definition_name = ToolName::new(name.clone()).ok()?;
    let schema = toolcat::export::exported_schema(catalog, t);
    Some(DynamicTool::new(
        definition_name,
        catalog.description(t),
        schema,
        move |arguments: Value| {
            let (inner, name) = (inner.clone(), name.clone());
            Box::pin(async move {
                let Some(inner) = inner.upgrade() else {
                    return Err(ToolExecutionError::other(
                        "the toolcat session of this tool has ended",
                    ));
                };
                let result = inner
                    .session
                    .lock()
                    .await
                    .handle_call(&name, arguments)
                    .await;
                rig_result(result)
            })
        },
    ))
}

/// A session's answer as rig's tool result: the text the model reads, a failure when it is an
/// error, with the rig error kind closest to what happened.
fn rig_result(result: CallResult) -> Result<ToolOutput, ToolExecutionError> {
    if !result.is_error {
        return Ok(ToolOutput::text(result.text));
    }
    let kind = match result.outcome {
        Outcome::NotInActiveSet => ToolErrorKind::NotFound,
        Outcome::InvalidArguments { .. } => ToolErrorKind::InvalidArgs,
        Outcome::NeedsApproval { .. } | Outcome::Denied { .. } => {
            return Err(ToolExecutionError::refused(result.text));
        }
        Outcome::RateLimited { .. } => ToolErrorKind::RateLimited,
        // A toolcat cancellation, a changed target, an unknown outcome: the text says which. Not
        // rig's `Cancelled`, which would end the whole run.
        _ => ToolErrorKind::Other,
    };
    Err(ToolExecutionError::new(kind, result.text))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
