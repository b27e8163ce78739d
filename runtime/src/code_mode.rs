//! Code Mode: the model writes one JavaScript program that calls read tools, and only its result
//! comes back, instead of one model step per call.
//!
//! The runtime owns every rule of it; an engine only runs the program:
//!
//! - which tools a program may call: the rows declared `code_mode = true` (read, silent, local or
//!   a server the host allowed; `toolcat-catalog` validates it) that the session's profile owns,
//!   re-checked against the live catalog at each call;
//! - how a call runs: each one an ordinary [`crate::Coordinator`] call (scope, JSON Schema
//!   validation, rate limits, records linked to the program's record, the archive);
//! - the limits ([`ScriptLimits`]) and what the model gets back.
//!
//! An engine implements [`ScriptEngine`]; the crate `toolcat-quickjs` is one (QuickJS). The
//! runtime calls [`ScriptEngine::run`] on a thread of its own and answers the program's calls
//! through [`ScriptHost`] from the session's task, so an engine never sees the coordinator.

use std::time::Duration;

use serde_json::Value;

/// A script engine: runs one program to its end, blocking the calling thread (the program itself
/// may run on a thread of the engine's own, but the engine calls [`ScriptHost`] from the calling thread).
///
/// **Contract.** The program sees, as globals, only the language's own built-ins (no module
/// loader, no `require`, no `import()`, no `fetch`, no timers, no file system, network or
/// process), plus:
///
/// - `tools`: an object with one `async` function per entry of [`Script::functions`], keyed by
///   the tool's exported name, taking one argument object (`{}` when omitted) and resolving to
///   the tool's JSON result or rejecting with an `Error` whose `message` is the host's error
///   text ([`HostError::message`]);
/// - `readToolResult(reference, {offset, length}?)`: `async`, answered as a call of the
///   meta-tool `read_tool_result` with arguments `{"reference", "offset"?, "length"?}`;
/// - `console.log` / `info` / `warn` / `error` / `debug`: each call one line handed to
///   [`ScriptHost::log`], its arguments as `JSON.stringify` gives them (strings as they are),
///   joined by spaces.
///
/// The program text is the body of an `async` function: it may `await` and `return`; what it
/// returns (after awaiting a returned promise) is the result, converted with the semantics of
/// `JSON.stringify` (`undefined` → [`ScriptReturn::value`] `None`).
///
/// The engine enforces [`ScriptLimits::memory_bytes`] and [`ScriptLimits::stack_bytes`], stops
/// the program (uncatchably) once [`ScriptLimits::cpu_time`] of running has passed or
/// [`ScriptHost::interrupted`] answers `Some`, checking both at least every few milliseconds
/// of running, and refuses a result over [`ScriptLimits::output_bytes`] of JSON text.
pub trait ScriptEngine: Send + Sync + 'static {
    /// The engine and its version, for the docs and errors (`"QuickJS 2025-04 (rquickjs 0.10)"`).
    fn name(&self) -> &str;

    /// Runs `script` to its end, calling `host` for every tool call, log line and interrupt
    /// check.
    ///
    /// # Errors
    /// A [`ScriptFailure`] saying why the program did not finish: an uncaught exception, a
    /// syntax error, a limit, or an interrupt (with [`ScriptHost::interrupted`]'s reason).
    fn run(
        &self,
        script: &Script<'_>,
        host: &dyn ScriptHost,
    ) -> Result<ScriptReturn, ScriptFailure>;
}

/// One program and what it may reach.
#[derive(Debug, Clone, Copy)]
pub struct Script<'a> {
    /// The program text: the body of an `async` function (line 1 is the text's first line).
    pub source: &'a str,
    /// The exported names of the tools `tools` has a function for, in a stable order.
    pub functions: &'a [String],
    /// The limits it runs under.
    pub limits: &'a ScriptLimits,
}

/// The limits of one program. [`Default`] gives the values documented on each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptLimits {
    /// Heap the engine may allocate, in bytes (default 64 MiB); past it an allocation fails
    /// and the program ends with [`FailureKind::OutOfMemory`].
    pub memory_bytes: usize,
    /// Native stack the engine may use, in bytes (default 512 KiB): deep recursion ends with
    /// [`FailureKind::StackOverflow`].
    pub stack_bytes: usize,
    /// Time the program may spend running, not counting the time its tool calls take
    /// (default 2 s): past it, [`FailureKind::TimeLimit`].
    pub cpu_time: Duration,
    /// Wall-clock time of the whole program, tool calls included (default 60 s); the runtime
    /// interrupts it past that ([`ScriptHost::interrupted`]).
    pub wall_time: Duration,
    /// Tool calls one program may make (default 100); the call past it ends the program.
    pub max_calls: usize,
    /// Largest result, as JSON text, in bytes (default 256 KiB): past it,
    /// [`FailureKind::OutputTooLarge`].
    pub output_bytes: usize,
    /// Console output kept, in bytes (default 16 KiB); lines past it are counted, not kept.
    pub console_bytes: usize,
}

impl Default for ScriptLimits {
    fn default() -> Self {
        ScriptLimits {
            memory_bytes: 64 << 20,
            stack_bytes: 512 << 10,
            cpu_time: Duration::from_secs(2),
            wall_time: Duration::from_secs(60),
            max_calls: 100,
            output_bytes: 256 << 10,
            console_bytes: 16 << 10,
        }
    }
}

/// What the runtime answers an engine, on the engine's thread. Every method may block while the
/// session runs the call.
pub trait ScriptHost: Send + Sync {
    /// Runs tool `tool` (an exported name; `read_tool_result` for `readToolResult`) with
    /// `arguments`, and answers its JSON result.
    ///
    /// # Errors
    /// [`HostError`]: the call was refused or failed; with [`HostError::fatal`] the program must
    /// end now (the runtime also answers [`ScriptHost::interrupted`] from then on).
    fn call(&self, tool: &str, arguments: Value) -> Result<Value, HostError>;

    /// One line of console output.
    fn log(&self, line: &str);

    /// Why the program must stop now (cancelled, wall time, a fatal call), or `None`.
    fn interrupted(&self) -> Option<String>;
}

/// A refused or failed call, as the program sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    /// The text the rejected promise's `Error` carries: the tool's own explanation first.
    pub message: String,
    /// The program may not go on (the call's outcome is unknown, the call cap is passed, the
    /// session cancelled it).
    pub fatal: bool,
}

/// What a program returned.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptReturn {
    /// The returned value as JSON; `None` for `undefined` (nothing returned).
    pub value: Option<Value>,
}

/// Why a program did not finish.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ScriptFailure {
    /// The kind of failure.
    pub kind: FailureKind,
    /// What went wrong, for the model: the exception's `name: message`, or the limit passed
    /// and how to stay within it.
    pub message: String,
    /// The program line it happened at (1-based, in [`Script::source`]), when known.
    pub line: Option<u32>,
}

/// The kinds of [`ScriptFailure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The program does not parse.
    Syntax,
    /// An exception nothing caught (a rejected tool call among them).
    Exception,
    /// [`ScriptLimits::memory_bytes`].
    OutOfMemory,
    /// [`ScriptLimits::stack_bytes`].
    StackOverflow,
    /// [`ScriptLimits::cpu_time`].
    TimeLimit,
    /// [`ScriptHost::interrupted`] answered a reason, which is the message.
    Interrupted,
    /// [`ScriptLimits::output_bytes`], or a result `JSON.stringify` cannot convert.
    OutputTooLarge,
    /// The engine itself failed (it could not start).
    Engine,
}

impl FailureKind {
    /// Its name in answers: `syntax`, `exception`, `out-of-memory`, `stack-overflow`,
    /// `time-limit`, `interrupted`, `output-too-large`, `engine`.
    pub const fn as_str(self) -> &'static str {
        match self {
            FailureKind::Syntax => "syntax",
            FailureKind::Exception => "exception",
            FailureKind::OutOfMemory => "out-of-memory",
            FailureKind::StackOverflow => "stack-overflow",
            FailureKind::TimeLimit => "time-limit",
            FailureKind::Interrupted => "interrupted",
            FailureKind::OutputTooLarge => "output-too-large",
            FailureKind::Engine => "engine",
        }
    }
}

pub mod typescript;

/// A request of the engine's thread to the session's task.
pub(crate) enum HostRequest {
    /// Run a tool; the answer goes back on `reply`.
    Call {
        tool: String,
        arguments: Value,
        reply: std::sync::mpsc::SyncSender<Result<Value, HostError>>,
    },
    /// One console line.
    Log(String),
}

/// The [`ScriptHost`] the runtime hands an engine: each request goes to the session's task over
/// a channel, each call blocks the engine's thread until its answer comes back.
pub(crate) struct ChannelHost {
    pub(crate) requests: tokio::sync::mpsc::UnboundedSender<HostRequest>,
    /// Why the program must stop, once set (wall time, cancellation, a fatal call).
    pub(crate) stop: std::sync::Arc<std::sync::OnceLock<String>>,
}

impl ScriptHost for ChannelHost {
    fn call(&self, tool: &str, arguments: Value) -> Result<Value, HostError> {
        let gone = || HostError {
            message: "the session ended while the program ran; nothing more runs".to_string(),
            fatal: true,
        };
        if let Some(reason) = self.stop.get() {
            return Err(HostError {
                message: reason.clone(),
                fatal: true,
            });
        }
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let request = HostRequest::Call {
            tool: tool.to_string(),
            arguments,
            reply,
        };
        if self.requests.send(request).is_err() {
            return Err(gone());
        }
        answer.recv().unwrap_or_else(|_| Err(gone()))
    }

    fn log(&self, line: &str) {
        let _ = self.requests.send(HostRequest::Log(line.to_string()));
    }

    fn interrupted(&self) -> Option<String> {
        self.stop.get().cloned()
    }
}

/// The tools a program of a session under `profile` may call: the profile's tools declared
/// `code_mode = true`, not deprecated, as a bitset over [`crate::ToolIndex`]. Computed from the
/// live catalog at every call of a program, so a tool deprecated or removed meanwhile is refused.
pub fn callable_set(catalog: &crate::Catalog, profile: crate::ProfileId) -> Vec<u64> {
    let owned = catalog.profile_tools(profile);
    let code_mode = catalog.code_mode_set();
    let deprecated = catalog.status_tools(toolcat_catalog::model::Status::Deprecated);
    (0..owned.len())
        .map(|k| {
            owned[k]
                & code_mode.get(k).copied().unwrap_or(0)
                & !deprecated.get(k).copied().unwrap_or(0)
        })
        .collect()
}

/// The catalog's row of meta-tool `m`, when it declares one (a row of that name that is not the
/// meta-tool does not count).
pub(crate) fn meta_tool(
    catalog: &crate::Catalog,
    m: crate::meta::MetaTool,
) -> Option<crate::ToolIndex> {
    catalog
        .tool(m.name())
        .ok()
        .filter(|&t| crate::meta::MetaTool::of(catalog, t) == Some(m))
}

/// The catalog's `run_code` meta-tool ([`crate::meta::MetaTool::RunCode`]), when it declares one.
pub fn run_code_tool(catalog: &crate::Catalog) -> Option<crate::ToolIndex> {
    meta_tool(catalog, crate::meta::MetaTool::RunCode)
}

/// The tools of [`callable_set`], in catalog order.
pub fn callable_tools(
    catalog: &crate::Catalog,
    profile: crate::ProfileId,
) -> Vec<crate::ToolIndex> {
    let set = callable_set(catalog, profile);
    catalog
        .tools()
        .filter(|t| toolcat_catalog::tables::bit(&set, t.index()))
        .collect()
}

/// The API a program of a session under `profile` sees, as TypeScript declarations
/// ([`typescript::declarations`]): one function per [`callable_tools`] entry, typed by its
/// input JSON Schema and its output schema ([`crate::Catalog::output_schema`]; a tool without
/// one resolves to `unknown`), and `readToolResult`. Sent in the `run_code` definition, after
/// its description, so its tokens count like any definition's. A tool for which `defined`
/// answers `true` (the request carries its own definition) is declared by its bare signature
/// ([`typescript::ApiFunction::documented`]): its descriptions are read once, there.
pub fn api_declarations(
    catalog: &crate::Catalog,
    profile: crate::ProfileId,
    defined: impl Fn(crate::ToolIndex) -> bool,
) -> String {
    let tools = callable_tools(catalog, profile);
    let descriptions: Vec<String> = tools
        .iter()
        .map(|&t| crate::meta::one_line(catalog.description(t)))
        .collect();
    // The catalog's schemas as they are: a top-level `$schema` changes no TypeScript type.
    let functions: Vec<typescript::ApiFunction<'_>> = tools
        .iter()
        .zip(&descriptions)
        .map(|(&t, description)| typescript::ApiFunction {
            name: catalog.exported_name(t),
            description,
            input: catalog.input_schema(t),
            output: catalog.output_schema(t),
            documented: !defined(t),
        })
        .collect();
    let read_result = meta_tool(catalog, crate::meta::MetaTool::ReadResult).is_some();
    typescript::declarations(&functions, read_result)
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use crate::handler::{erase, BoxFuture, ErasedHandler, ToolContext, ToolError, ToolHandler};
    use crate::Catalog;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct PathArgs {
        path: String,
    }

    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct FileStat {
        /// Size in bytes.
        bytes: u64,
        kind: String,
    }

    struct StatFile;
    impl ToolHandler for StatFile {
        const NAME: &'static str = "stat_file";
        type Args = PathArgs;
        type Output = FileStat;
        fn call(_: PathArgs, _: &ToolContext) -> BoxFuture<'_, Result<FileStat, ToolError>> {
            Box::pin(async move {
                Ok(FileStat {
                    bytes: 0,
                    kind: "file".into(),
                })
            })
        }
    }

    struct Inspect;
    impl ToolHandler for Inspect {
        const NAME: &'static str = "inspect";
        type Args = PathArgs;
        type Output = Value;
        fn call(_: PathArgs, _: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
            Box::pin(async move { Ok(Value::Null) })
        }
    }

    static HANDLERS: [Option<ErasedHandler>; 2] =
        [Some(erase::<StatFile>()), Some(erase::<Inspect>())];

    const SOURCE: &str = r#"
[mcp_server.forge]
description = "The code forge"
url = "https://forge.example.invalid/mcp"
code_mode = true

[toolset.files]
description = "Reading workspace files"

[[tool]]
name = "run_code"
description = "Runs one program that calls read tools."
visibility = "inline"
tier = "loop"
effect = "read"
exposure = "excluded"
toolsets = ["files"]
owner = "platform"
source = "loop"

[[tool]]
name = "stat_file"
description = "Tells the size and kind of a workspace file."
visibility = "inline"
tier = "silent"
effect = "read"
code_mode = true
exposure = "read-only"
toolsets = ["files"]
owner = "platform"

[[tool]]
name = "inspect"
description = "Inspects a workspace file."
visibility = "inline"
tier = "silent"
effect = "read"
code_mode = true
exposure = "read-only"
toolsets = ["files"]
owner = "platform"

[[tool]]
name = "get_issue"
description = "Fetches one issue of the forge."
visibility = "inline"
tier = "silent"
effect = "read"
code_mode = true
exposure = "read-only"
toolsets = ["files"]
owner = "platform"
source = "forge"
input_schema = { type = "object", properties = { number = { type = "integer" } }, required = ["number"] }
output_schema = { type = "object", properties = { title = { type = "string" } }, required = ["title"] }
"#;

    /// Each callable tool's result is typed by its output schema: a handler's output type, a
    /// server row's declared `output_schema`; `unknown` for a tool without one.
    #[test]
    fn api_declarations_type_results_by_output_schema() {
        let c = Catalog::from_source_with_handlers("code.toml", SOURCE, &HANDLERS)
            .expect("valid catalog");
        let api = super::api_declarations(&c, c.full_profile(), |_| false);
        let tools = api.split("/** Reads part").next().unwrap_or_default();
        assert_eq!(
            tools,
            "declare const tools: {
  /** Tells the size and kind of a workspace file. */
  stat_file(args: {
    path: string;
  }): Promise<{ bytes: number; kind: string }>;
  /** Inspects a workspace file. */
  inspect(args: {
    path: string;
  }): Promise<unknown>;
  /** Fetches one issue of the forge. */
  get_issue(args: {
    number: number;
  }): Promise<{ title: string }>;
};
"
        );
    }
}
