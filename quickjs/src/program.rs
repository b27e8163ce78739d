//! The program's thread: one QuickJS runtime and context, the globals the program sees, the job
//! loop that drives it to its end, and the conversion of its result or exception.

use std::rc::Rc;

use rquickjs::context::{intrinsic, EvalOptions};
use rquickjs::function::{Opt, Rest, This};
use rquickjs::object::Property;
use rquickjs::promise::PromiseState;
use rquickjs::{
    CatchResultExt, CaughtError, Coerced, Context, Ctx, Error, Exception, Function, Object,
    Runtime, Value,
};
use serde_json::{Map, Value as Json};
use toolcat::code_mode::{FailureKind, Script, ScriptFailure, ScriptLimits, ScriptReturn};

use crate::failure::{self, failure};
use crate::guard;
use crate::host::{Bridge, Reply};
use crate::json;

/// The file name QuickJS gives the program in stack traces; [`line_of`] looks for it.
const FILE_NAME: &str = "program";

/// Written on the program's first line, so the engine's line numbers are the program's own.
const PREFIX: &str = "(async function () {";
/// On a line of its own, so a `//` comment on the program's last line does not swallow it.
const SUFFIX: &str = "\n})";

/// The smallest stack limit the engine is given: QuickJS reads `0` as "no limit".
pub(crate) const MIN_STACK_BYTES: usize = 16 << 10;

/// The console methods; each gives one line to [`ScriptHost::log`](toolcat::code_mode::ScriptHost::log).
const CONSOLE_METHODS: [&str; 5] = ["log", "info", "warn", "error", "debug"];

/// The language's own built-ins: everything QuickJS offers but its `performance` clock and
/// `DOMException`, which are web APIs.
type Intrinsics = (
    intrinsic::Date,
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
    intrinsic::WeakRef,
);

/// Runs `script` to its end on this thread.
pub(crate) fn run(script: &Script<'_>, bridge: Bridge) -> Result<ScriptReturn, ScriptFailure> {
    let limits = script.limits;
    let runtime = Runtime::new().map_err(|error| {
        failure(
            FailureKind::Engine,
            format!("the QuickJS runtime could not be created: {error}"),
        )
    })?;
    // QuickJS reads 0 as "no limit"; a limit of nothing is one byte.
    runtime.set_memory_limit(limits.memory_bytes.max(1));
    runtime.set_max_stack_size(limits.stack_bytes.max(MIN_STACK_BYTES));
    let bridge = Rc::new(bridge);
    let handler_bridge = Rc::clone(&bridge);
    runtime.set_interrupt_handler(Some(Box::new(move || handler_bridge.should_stop())));
    let context = match Context::custom::<Intrinsics>(&runtime) {
        Ok(context) => context,
        Err(Error::Allocation) => return Err(failure::out_of_memory(limits)),
        Err(error) => {
            return Err(failure(
                FailureKind::Engine,
                format!("the QuickJS context could not be created: {error}"),
            ))
        }
    };
    context.with(|ctx| run_in(&ctx, script, &bridge))
}

fn run_in<'js>(
    ctx: &Ctx<'js>,
    script: &Script<'_>,
    bridge: &Rc<Bridge>,
) -> Result<ScriptReturn, ScriptFailure> {
    let limits = script.limits;
    // Taken before any program code runs, which may replace it.
    let to_source = match intrinsic_to_string(ctx).catch(ctx) {
        Ok(function) => function,
        Err(error) => return Err(caught(ctx, error, bridge, limits)),
    };

    if let Err(error) = guard::install(ctx, bridge).catch(ctx) {
        return Err(caught(ctx, error, bridge, limits));
    }

    bridge.resume();
    let function = compile(ctx, script, bridge, &to_source)?;
    // Only now, so that nothing a program that escaped the wrapper ran at evaluation time could
    // reach them.
    if let Err(error) = install(ctx, script.functions, bridge).catch(ctx) {
        return Err(caught(ctx, error, bridge, limits));
    }
    let promise = match function.call::<_, Value>(()).catch(ctx) {
        Ok(value) => value,
        Err(error) => return Err(caught(ctx, error, bridge, limits)),
    };
    let Some(promise) = promise.into_promise() else {
        return Err(closed_early());
    };

    loop {
        if bridge.should_stop() {
            return Err(stopped(bridge, limits));
        }
        match promise.state() {
            PromiseState::Pending => {
                // A job that throws leaves no trace here: it rejected a promise, or it was
                // stopped, which `should_stop` answers.
                if !ctx.execute_pending_job() {
                    if bridge.should_stop() {
                        return Err(stopped(bridge, limits));
                    }
                    return Err(failure::never_settled());
                }
            }
            PromiseState::Resolved => {
                let value = match promise.result::<Value>() {
                    Some(Ok(value)) => value,
                    _ => {
                        return Err(failure(
                            FailureKind::Engine,
                            "the program's result could not be read",
                        ))
                    }
                };
                return result(ctx, value, bridge, limits);
            }
            PromiseState::Rejected => {
                let reason = match promise.result::<Value>() {
                    Some(Err(Error::Exception)) => ctx.catch(),
                    _ => Value::new_undefined(ctx.clone()),
                };
                return Err(thrown(ctx, reason, bridge, limits));
            }
        }
    }
}

/// `Function.prototype.toString` as QuickJS defines it.
fn intrinsic_to_string<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    let function: Object<'js> = ctx.globals().get("Function")?;
    let prototype: Object<'js> = function.get("prototype")?;
    prototype.get("toString")
}

/// The program as the body of an `async` function, not yet called.
///
/// The program text goes between [`PREFIX`] and [`SUFFIX`] and is evaluated as a script. Text
/// that closes the wrapper early (`}); ...; (async function () {`) would run code of its own at
/// evaluation time, outside the function: so `tools`, `readToolResult` and `console` do not
/// exist yet when it is evaluated, any exception but a syntax error while evaluating means the
/// wrapper was escaped, and the value evaluated must be the wrapper function itself, its source
/// text exactly the program's between the wrapper's own braces (a function a program made
/// cannot have that text, which contains its own). The `AsyncFunction` constructor is no way
/// out: QuickJS-ng builds its function the same way, from concatenated text.
fn compile<'js>(
    ctx: &Ctx<'js>,
    script: &Script<'_>,
    bridge: &Bridge,
    to_source: &Function<'js>,
) -> Result<Function<'js>, ScriptFailure> {
    let limits = script.limits;
    let mut source = String::with_capacity(PREFIX.len() + script.source.len() + SUFFIX.len());
    source.push_str(PREFIX);
    source.push_str(script.source);
    source.push_str(SUFFIX);
    let mut options = EvalOptions::default();
    // The body of a plain (sloppy) function, as a script's would be.
    options.strict = false;
    options.filename = Some(FILE_NAME.to_owned());

    let value = match ctx
        .eval_with_options::<Value, _>(source.as_str(), options)
        .catch(ctx)
    {
        Ok(value) => value,
        Err(CaughtError::Error(Error::InvalidString(_))) => {
            return Err(failure(
                FailureKind::Syntax,
                "the program contains a NUL character (\\0); remove it",
            ))
        }
        Err(error) => {
            let mut failure = caught(ctx, error, bridge, limits);
            if failure.kind == FailureKind::Exception {
                if !failure.message.starts_with("SyntaxError") {
                    // Evaluating the wrapper runs no code of the program's, unless it escaped.
                    return Err(closed_early());
                }
                failure.kind = FailureKind::Syntax;
                if module_syntax(script.source, failure.line) {
                    failure.message.push_str(ONLY);
                }
            }
            return Err(failure);
        }
    };
    let Some(function) = value.into_function() else {
        return Err(closed_early());
    };
    let expected = &source[1..source.len() - 1];
    let text = to_source
        .call::<_, Value>((This(function.clone()),))
        .ok()
        .and_then(|text| text.into_string())
        .and_then(|text| text.to_string().ok());
    if text.as_deref() != Some(expected) {
        return Err(closed_early());
    }
    Ok(function)
}

/// Whether a syntax error comes of a static `import` or `export` (a line of the program, the
/// one that failed when known, that starts with one), which a function body cannot hold.
fn module_syntax(source: &str, line: Option<u32>) -> bool {
    let statement = |text: &str| {
        let text = text.trim_start();
        ["import", "export"].iter().any(|keyword| {
            text.strip_prefix(keyword).is_some_and(|rest| {
                rest.starts_with(|c: char| c.is_whitespace() || "{*\"'.".contains(c))
            })
        })
    };
    match line.and_then(|line| js_lines(source).nth(usize::try_from(line).ok()?.checked_sub(1)?)) {
        Some(text) => statement(text),
        None => js_lines(source).any(statement),
    }
}

/// The lines of `source` as JavaScript (and QuickJS's line numbers) count them: ended by `\n`,
/// `\r\n`, `\r`, U+2028 or U+2029.
fn js_lines(source: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(source);
    std::iter::from_fn(move || {
        let text = rest?;
        match text.find(['\n', '\r', '\u{2028}', '\u{2029}']) {
            None => {
                rest = None;
                Some(text)
            }
            Some(end) => {
                let terminator = if text[end..].starts_with("\r\n") {
                    2
                } else {
                    text[end..].chars().next().map_or(1, char::len_utf8)
                };
                rest = Some(&text[end + terminator..]);
                Some(&text[..end])
            }
        }
    })
}

fn closed_early() -> ScriptFailure {
    failure(
        FailureKind::Syntax,
        "the program is not the body of one function: a `}` closes it early; balance its braces",
    )
}

/// Defines `tools`, `readToolResult` and `console` on the global object.
fn install<'js>(ctx: &Ctx<'js>, functions: &[String], bridge: &Rc<Bridge>) -> rquickjs::Result<()> {
    let globals = ctx.globals();

    let tools = Object::new(ctx.clone())?;
    for name in functions {
        let tool = name.clone();
        let bridge = Rc::clone(bridge);
        let function = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, argument: Opt<Value<'js>>| {
                call_tool(&ctx, &bridge, &tool, argument.0)
            },
        )?
        .with_name(name)?;
        // Defined, not assigned: a name such as `__proto__` is a plain key too.
        tools.prop(name.as_str(), Property::from(function).enumerable())?;
    }
    // A name `tools` has no function for is an error naming it, not a bare "not a function".
    let name_checked: Function<'js> = ctx.eval(NAME_CHECKED_TOOLS)?;
    let tools: Value<'js> = name_checked.call((tools,))?;
    globals.set("tools", tools)?;

    let read_bridge = Rc::clone(bridge);
    let read = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, reference: Opt<Value<'js>>, options: Opt<Value<'js>>| {
            read_tool_result(&ctx, &read_bridge, reference.0, options.0)
        },
    )?
    .with_name("readToolResult")?;
    globals.set("readToolResult", read)?;

    let console = Object::new(ctx.clone())?;
    for method in CONSOLE_METHODS {
        let bridge = Rc::clone(bridge);
        let function = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
            console_line(&ctx, &bridge, args.0)
        })?
        .with_name(method)?;
        console.set(method, function)?;
    }
    globals.set("console", console)?;
    Ok(())
}

/// `tools.<name>(argument)`: one host call, made now (the program waits); answers a promise
/// already settled with its result.
fn call_tool<'js>(
    ctx: &Ctx<'js>,
    bridge: &Bridge,
    tool: &str,
    argument: Option<Value<'js>>,
) -> rquickjs::Result<Value<'js>> {
    let arguments = match argument {
        None => Json::Object(Map::new()),
        Some(value) if value.is_undefined() => Json::Object(Map::new()),
        Some(value) => match to_json(ctx, value, bridge)? {
            Ok(Json::Object(map)) => Json::Object(map),
            Ok(other) => {
                return rejected_type_error(
                    ctx,
                    &format!(
                        "`tools.{tool}` takes one argument object, such as `{{ id: 1 }}`; it was \
                         given {}",
                        json_kind(&other)
                    ),
                )
            }
            Err(why) => {
                return rejected_type_error(
                    ctx,
                    &format!("the argument of `tools.{tool}` is not JSON data: {why}"),
                )
            }
        },
    };
    host_call(ctx, bridge, tool, arguments)
}

/// `readToolResult(reference, {offset, length}?)`: the meta-tool `read_tool_result`.
fn read_tool_result<'js>(
    ctx: &Ctx<'js>,
    bridge: &Bridge,
    reference: Option<Value<'js>>,
    options: Option<Value<'js>>,
) -> rquickjs::Result<Value<'js>> {
    const USAGE: &str = "`readToolResult(reference, { offset, length })` takes the reference \
                         string of a stored result";
    let Some(reference) = reference.and_then(|value| value.into_string()) else {
        return rejected_type_error(ctx, &format!("{USAGE}; it was given no string"));
    };
    let reference = match reference.to_string() {
        Ok(reference) => reference,
        Err(_) => return rejected_type_error(ctx, &format!("{USAGE}; this one is not text")),
    };
    let mut arguments = Map::new();
    arguments.insert("reference".to_owned(), Json::String(reference));
    if let Some(options) = options.filter(|value| !value.is_undefined() && !value.is_null()) {
        match to_json(ctx, options, bridge)? {
            Ok(Json::Object(mut map)) => {
                for key in ["offset", "length"] {
                    if let Some(value) = map.remove(key).filter(|value| !value.is_null()) {
                        arguments.insert(key.to_owned(), value);
                    }
                }
            }
            Ok(other) => {
                return rejected_type_error(
                    ctx,
                    &format!(
                        "the second argument of `readToolResult` is an object `{{ offset, \
                         length }}`; it was given {}",
                        json_kind(&other)
                    ),
                )
            }
            Err(why) => {
                return rejected_type_error(
                    ctx,
                    &format!("the options of `readToolResult` are not JSON data: {why}"),
                )
            }
        }
    }
    host_call(ctx, bridge, "read_tool_result", Json::Object(arguments))
}

/// Calls the host and answers a promise settled with its reply; after a fatal reply, a promise
/// that never settles (the program is being stopped).
fn host_call<'js>(
    ctx: &Ctx<'js>,
    bridge: &Bridge,
    tool: &str,
    arguments: Json,
) -> rquickjs::Result<Value<'js>> {
    let (promise, resolve, reject) = ctx.promise()?;
    match bridge.call(tool, arguments) {
        Reply::Value(value) => {
            // `serde_json` escapes every control character, so the text has no NUL.
            let text = serde_json::to_string(&value).map_err(|_| Error::Unknown)?;
            let value = ctx.json_parse(text)?;
            resolve.call::<_, ()>((value,))?;
        }
        Reply::Error(message) => {
            let error = Exception::from_message(ctx.clone(), &message)?;
            reject.call::<_, ()>((error,))?;
        }
        Reply::Fatal(_) => {}
    }
    Ok(promise.into_value())
}

/// A promise rejected with a `TypeError` of `message`.
fn rejected_type_error<'js>(ctx: &Ctx<'js>, message: &str) -> rquickjs::Result<Value<'js>> {
    let (promise, _, reject) = ctx.promise()?;
    let error = match Exception::throw_type(ctx, message) {
        Error::Exception => ctx.catch(),
        error => return Err(error),
    };
    reject.call::<_, ()>((error,))?;
    Ok(promise.into_value())
}

/// `console.*(...args)`: one line, each argument as `JSON.stringify` gives it (strings as they
/// are), joined by spaces. A line is cut at the console limit the host keeps in all, and once
/// the lines handed over have used that limit up ([`json::console_cost`] each), the rest are
/// not even built.
fn console_line<'js>(
    ctx: &Ctx<'js>,
    bridge: &Bridge,
    args: Vec<Value<'js>>,
) -> rquickjs::Result<()> {
    if bridge.console_spent() {
        return Ok(());
    }
    let cap = bridge.console_bytes();
    let mut line = String::new();
    for (index, value) in args.into_iter().enumerate() {
        if index > 0 {
            line.push(' ');
        }
        line.push_str(&display(ctx, value, bridge)?);
        if line.len() > cap {
            truncate(&mut line, cap);
            break;
        }
    }
    bridge.log(line);
    Ok(())
}

/// How a console argument reads: a string as it is, anything else as `JSON.stringify` gives it,
/// or a short description when it has no JSON form.
fn display<'js>(ctx: &Ctx<'js>, value: Value<'js>, bridge: &Bridge) -> rquickjs::Result<String> {
    if let Some(string) = value.as_string() {
        if let Some(text) = lossy(ctx, string) {
            return Ok(text);
        }
    }
    if value.is_undefined() {
        return Ok("undefined".to_owned());
    }
    if value.is_function() {
        return Ok("[function]".to_owned());
    }
    if value.is_symbol() {
        return Ok("[symbol]".to_owned());
    }
    if value.is_big_int() {
        let digits = value
            .get::<Coerced<String>>()
            .catch(ctx)
            .map(|text| text.0)
            .unwrap_or_default();
        return Ok(format!("{digits}n"));
    }
    Ok(match to_json_text(ctx, value, bridge)? {
        Ok(Some(text)) => text,
        Ok(None) => "undefined".to_owned(),
        Err(why) => format!("[not JSON: {why}]"),
    })
}

/// `value` as JSON data: `Ok(Err(why))` when `JSON.stringify` refuses it (or gives nothing);
/// `Err` when the program is being stopped, so the stop goes on unwinding.
fn to_json<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
    bridge: &Bridge,
) -> rquickjs::Result<Result<Json, String>> {
    Ok(match to_json_text(ctx, value, bridge)? {
        Ok(Some(text)) if json::deeper_than(&text, json::MAX_DEPTH) => Err(format!(
            "it is nested more than {} levels deep, which toolcat does not accept: flatten it",
            json::MAX_DEPTH
        )),
        Ok(Some(text)) => serde_json::from_str(&json::well_formed(&text))
            .map_err(|error| format!("it cannot be read back: {error}")),
        Ok(None) => Err("it is a function, a symbol or undefined".to_owned()),
        Err(why) => Err(why),
    })
}

/// `JSON.stringify(value)` (the engine's own, whatever the program did to the global `JSON`).
fn to_json_text<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
    bridge: &Bridge,
) -> rquickjs::Result<Result<Option<String>, String>> {
    match ctx.json_stringify(value).catch(ctx) {
        Ok(None) => Ok(Ok(None)),
        Ok(Some(text)) => match text.to_string() {
            Ok(text) => Ok(Ok(Some(text))),
            Err(error) => Ok(Err(error.to_string())),
        },
        Err(error) => {
            if bridge.stopped().is_some() {
                return Err(error.throw(ctx));
            }
            match error {
                CaughtError::Exception(exception) => Ok(Err(describe(ctx, exception.as_value()))),
                CaughtError::Value(value) => Ok(Err(describe(ctx, &value))),
                CaughtError::Error(error) => Ok(Err(error.to_string())),
            }
        }
    }
}

/// `text` cut to at most `cap` bytes, at a character boundary.
fn truncate(text: &mut String, cap: usize) {
    let mut end = cap.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
}

fn json_kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// The program's result: its JSON, within [`ScriptLimits::output_bytes`].
fn result<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
    bridge: &Bridge,
    limits: &ScriptLimits,
) -> Result<ScriptReturn, ScriptFailure> {
    if value.is_undefined() {
        return Ok(ScriptReturn { value: None });
    }
    let text = match ctx.json_stringify(value).catch(ctx) {
        Ok(None) => return Ok(ScriptReturn { value: None }),
        Ok(Some(text)) => text.to_string(),
        Err(error) => {
            let failure = caught(ctx, error, bridge, limits);
            return Err(match failure.kind {
                FailureKind::Exception => failure::not_json(&failure.message),
                _ => failure,
            });
        }
    };
    if let Some(stop) = bridge.stopped() {
        return Err(failure::stopped(stop, limits));
    }
    let text = text.map_err(|error| failure::not_json(&error.to_string()))?;
    if text.len() > limits.output_bytes {
        return Err(failure::output_too_large(text.len(), limits));
    }
    if json::deeper_than(&text, json::MAX_DEPTH) {
        return Err(failure::too_deep());
    }
    let value = serde_json::from_str(&json::well_formed(&text))
        .map_err(|error| failure::not_json(&error.to_string()))?;
    Ok(ScriptReturn { value: Some(value) })
}

/// The failure for an error caught from the engine.
fn caught<'js>(
    ctx: &Ctx<'js>,
    error: CaughtError<'js>,
    bridge: &Bridge,
    limits: &ScriptLimits,
) -> ScriptFailure {
    match error {
        CaughtError::Exception(exception) => thrown(ctx, exception.into_value(), bridge, limits),
        CaughtError::Value(value) => thrown(ctx, value, bridge, limits),
        CaughtError::Error(_) if bridge.stopped().is_some() => stopped(bridge, limits),
        CaughtError::Error(Error::Allocation) => failure::out_of_memory(limits),
        CaughtError::Error(error) => {
            failure(FailureKind::Engine, format!("the engine failed: {error}"))
        }
    }
}

fn stopped(bridge: &Bridge, limits: &ScriptLimits) -> ScriptFailure {
    match bridge.stopped() {
        Some(stop) => failure::stopped(stop, limits),
        None => failure(FailureKind::Engine, "the program was stopped"),
    }
}

/// The failure for a value the program threw (or rejected its promise with) and nothing caught.
fn thrown<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
    bridge: &Bridge,
    limits: &ScriptLimits,
) -> ScriptFailure {
    if bridge.stopped().is_some() || value.is_uncatchable_error() {
        return stopped(bridge, limits);
    }
    if value.is_null() {
        // QuickJS throws `null` when it cannot allocate even the error.
        return failure::null_thrown(limits);
    }
    let failure = match value.as_object().filter(|object| object.is_error()) {
        Some(error) => {
            let name = property(ctx, error, "name").unwrap_or_else(|| "Error".to_owned());
            let message = property(ctx, error, "message").unwrap_or_default();
            let line = property(ctx, error, "stack").and_then(|stack| line_of(&stack));
            let mut failure = match (name.as_str(), message.as_str()) {
                ("InternalError", "out of memory") => failure::out_of_memory(limits),
                ("RangeError", "Maximum call stack size exceeded") => {
                    failure::stack_overflow(limits)
                }
                (name, "") => failure(FailureKind::Exception, name),
                (name, message) => failure(
                    FailureKind::Exception,
                    format!("{name}: {message}{}", hint(name, message)),
                ),
            };
            failure.line = line;
            failure
        }
        None => failure(
            FailureKind::Exception,
            format!("uncaught exception: {}", describe(ctx, &value)),
        ),
    };
    // Reading the error may have run the program's own code past a limit.
    match bridge.stopped() {
        Some(stop) => failure::stopped(stop, limits),
        None => failure,
    }
}

/// Globals of other JavaScript hosts that programs reach for.
const ELSEWHERE: [&str; 22] = [
    "require",
    "module",
    "exports",
    "process",
    "Buffer",
    "__dirname",
    "fetch",
    "XMLHttpRequest",
    "WebSocket",
    "setTimeout",
    "setInterval",
    "setImmediate",
    "clearTimeout",
    "clearInterval",
    "Deno",
    "Bun",
    "std",
    "os",
    "window",
    "document",
    "navigator",
    "performance",
];

/// Wraps the `tools` object so that reading a name it has no function for throws a `TypeError`
/// that names the tool and says which tools a program may call; symbols, `then`, `toJSON` and
/// `Object.prototype`'s names read as on a plain object.
const NAME_CHECKED_TOOLS: &str = r#"(function (tools) {
  const names = new Set(Object.keys(tools));
  return new Proxy(tools, {
    get(target, key, receiver) {
      if (typeof key !== "string" || names.has(key) || key === "then" || key === "toJSON" || key in Object.prototype) {
        return Reflect.get(target, key, receiver);
      }
      throw new TypeError("`tools." + key + "` is no function a program may call: a program calls only the read tools this session declares for Code Mode (`Object.keys(tools)` lists them); call any other tool as a step of its own, outside the program");
    },
  });
})"#;

/// What a program may reach, after an error that shows it reached for something else.
const ONLY: &str = " (a program sees only the language's built-ins, `tools`, `readToolResult` \
                    and `console`: no modules, timers, network or files)";

/// What the program may reach instead, after an error that shows it reached for something else.
fn hint(name: &str, message: &str) -> &'static str {
    let undefined = message
        .strip_suffix(" is not defined")
        .is_some_and(|global| ELSEWHERE.contains(&global));
    match name {
        "ReferenceError" if undefined || message.starts_with("could not load module") => ONLY,
        "TypeError" if message == "not a function" => {
            " (the value called is no function: a tool name `tools` has no function for, \
             perhaps; `Object.keys(tools)` lists them)"
        }
        _ => "",
    }
}

/// A property of the error as a string, when it has one the program lets us read (a lone
/// surrogate in it replaced).
fn property<'js>(ctx: &Ctx<'js>, error: &Object<'js>, key: &str) -> Option<String> {
    let value = error
        .get::<_, Option<Coerced<rquickjs::String<'js>>>>(key)
        .catch(ctx)
        .ok()
        .flatten()?;
    lossy(ctx, &value.0)
}

/// `string` as Rust text: a lone UTF-16 surrogate, which UTF-8 cannot hold, becomes U+FFFD
/// (QuickJS's `JSON.stringify` escapes it, and [`json::well_formed`] replaces the escape).
fn lossy<'js>(ctx: &Ctx<'js>, string: &rquickjs::String<'js>) -> Option<String> {
    if let Ok(text) = string.to_string() {
        return Some(text);
    }
    let text = ctx.json_stringify(string.clone()).ok()??.to_string().ok()?;
    serde_json::from_str(&json::well_formed(&text)).ok()
}

/// A thrown value that is not an `Error`, in a few words: a string as it is, a number, `null`.
fn describe<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> String {
    if let Some(exception) = value.as_exception() {
        let name = property(ctx, exception, "name").unwrap_or_else(|| "Error".to_owned());
        return match property(ctx, exception, "message") {
            Some(message) if !message.is_empty() => format!("{name}: {message}"),
            _ => name,
        };
    }
    if let Some(string) = value.as_string() {
        return lossy(ctx, string).unwrap_or_else(|| "a string".to_owned());
    }
    if value.is_object() || value.is_function() {
        // Reading an object runs its own code; its kind is enough.
        return format!("a value of type {}", value.type_name());
    }
    value
        .get::<Coerced<String>>()
        .map_or_else(|_| value.type_name().to_owned(), |text| text.0)
}

/// The program line of the first frame of `stack` in the program itself (`(program:3:5)`).
fn line_of(stack: &str) -> Option<u32> {
    stack.lines().find_map(|frame| {
        let at = frame.find(&format!("{FILE_NAME}:"))?;
        let before = frame[..at].chars().next_back();
        if !matches!(before, Some('(' | ' ')) {
            return None;
        }
        let digits: String = frame[at + FILE_NAME.len() + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_is_the_first_frame_in_the_program() {
        assert_eq!(
            line_of("    at f (program:3:11)\n    at <anonymous> (program:7:1)\n"),
            Some(3)
        );
        assert_eq!(
            line_of("    at <eval> (<input>:1:1)\n    at g (program:12:5)\n"),
            Some(12)
        );
        assert_eq!(line_of("    at program:4:2\n"), Some(4));
        assert_eq!(line_of("    at myprogram:4:2\n"), None);
        assert_eq!(line_of(""), None);
    }

    #[test]
    fn lines_end_as_javascript_ends_them() {
        let lines: Vec<&str> = js_lines("a\nb\r\nc\rd\u{2028}e\u{2029}f").collect();
        assert_eq!(lines, ["a", "b", "c", "d", "e", "f"]);
        assert_eq!(js_lines("").collect::<Vec<_>>(), [""]);
        assert_eq!(js_lines("a\n").collect::<Vec<_>>(), ["a", ""]);
        assert!(module_syntax("x;\u{2028}import a from 'b';", Some(2)));
        assert!(!module_syntax("x;\u{2028}import('b');", Some(2)));
    }

    #[test]
    fn truncation_keeps_whole_characters() {
        let mut text = "aé".to_owned();
        truncate(&mut text, 2);
        assert_eq!(text, "a");
    }
}
