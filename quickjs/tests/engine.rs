//! The engine against a fake host: what a program sees, what the host sees, and how each limit
//! and hostile program ends.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolcat::code_mode::{
    FailureKind, HostError, Script, ScriptEngine, ScriptFailure, ScriptHost, ScriptLimits,
    ScriptReturn,
};
use toolcat_quickjs::QuickJs;

/// Answers the tools in `results`, fails those in `failures`, records every call and line.
#[derive(Default)]
struct FakeHost {
    results: BTreeMap<String, Value>,
    failures: BTreeMap<String, HostError>,
    /// How long each call takes.
    delay: Duration,
    /// `interrupted()` answers this reason from this instant on.
    interrupt: Mutex<Option<(Instant, String)>>,
    calls: Mutex<Vec<(String, Value)>>,
    lines: Mutex<Vec<String>>,
}

impl FakeHost {
    fn new() -> FakeHost {
        FakeHost::default()
            .answer("a", json!({"a": 1}))
            .answer("b", json!([1, 2, 3]))
            .answer("github__get_me", json!({"login": "octocat"}))
            .answer("kebab-name", json!("kebab"))
            .answer("read_tool_result", json!({"text": "stored"}))
    }

    fn answer(mut self, tool: &str, result: Value) -> FakeHost {
        self.results.insert(tool.to_owned(), result);
        self
    }

    fn fail(mut self, tool: &str, message: &str, fatal: bool) -> FakeHost {
        let error = HostError {
            message: message.to_owned(),
            fatal,
        };
        self.failures.insert(tool.to_owned(), error);
        self
    }

    fn delay(mut self, delay: Duration) -> FakeHost {
        self.delay = delay;
        self
    }

    fn interrupt_after(self, after: Duration, reason: &str) -> FakeHost {
        *self.interrupt.lock().unwrap() = Some((Instant::now() + after, reason.to_owned()));
        self
    }

    fn calls(&self) -> Vec<(String, Value)> {
        self.calls.lock().unwrap().clone()
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The names `tools` has a function for: every tool the host knows but `read_tool_result`.
    fn functions(&self) -> Vec<String> {
        self.results
            .keys()
            .chain(self.failures.keys())
            .filter(|name| *name != "read_tool_result")
            .cloned()
            .collect()
    }
}

impl ScriptHost for FakeHost {
    fn call(&self, tool: &str, arguments: Value) -> Result<Value, HostError> {
        self.calls
            .lock()
            .unwrap()
            .push((tool.to_owned(), arguments));
        thread::sleep(self.delay);
        if let Some(error) = self.failures.get(tool) {
            if error.fatal {
                // As the runtime does: a fatal call interrupts the program from then on.
                *self.interrupt.lock().unwrap() = Some((Instant::now(), error.message.clone()));
            }
            return Err(error.clone());
        }
        self.results.get(tool).cloned().ok_or_else(|| HostError {
            message: format!("no tool `{tool}`"),
            fatal: false,
        })
    }

    fn log(&self, line: &str) {
        self.lines.lock().unwrap().push(line.to_owned());
    }

    fn interrupted(&self) -> Option<String> {
        let interrupt = self.interrupt.lock().unwrap();
        match &*interrupt {
            Some((at, reason)) if Instant::now() >= *at => Some(reason.clone()),
            _ => None,
        }
    }
}

fn run_with(
    source: &str,
    host: &FakeHost,
    limits: &ScriptLimits,
) -> Result<ScriptReturn, ScriptFailure> {
    let functions = host.functions();
    let script = Script {
        source,
        functions: &functions,
        limits,
    };
    QuickJs::new().run(&script, host)
}

fn run(source: &str, host: &FakeHost) -> Result<ScriptReturn, ScriptFailure> {
    run_with(source, host, &ScriptLimits::default())
}

/// The program's JSON result; panics with the failure otherwise.
fn value(source: &str) -> Value {
    let host = FakeHost::new();
    match run(source, &host) {
        Ok(ScriptReturn { value: Some(value) }) => value,
        other => panic!("{source}: {other:?}"),
    }
}

/// The failure a program ends with; panics when it succeeds.
fn failure_with(source: &str, host: &FakeHost, limits: &ScriptLimits) -> ScriptFailure {
    match run_with(source, host, limits) {
        Err(failure) => failure,
        Ok(value) => panic!("{source}: succeeded with {value:?}"),
    }
}

fn fails(source: &str) -> ScriptFailure {
    let host = FakeHost::new();
    let failure = failure_with(source, &host, &ScriptLimits::default());
    assert_eq!(host.calls(), [], "{source}: no call reaches the host");
    failure
}

fn limits() -> ScriptLimits {
    ScriptLimits {
        cpu_time: Duration::from_millis(200),
        memory_bytes: 32 << 20,
        ..ScriptLimits::default()
    }
}

#[test]
fn name_names_the_engine() {
    assert_eq!(QuickJs::new().name(), "QuickJS-ng (rquickjs 0.14)");
}

#[test]
fn calls_reach_the_host_in_order_and_the_summary_comes_back() {
    let host = FakeHost::new();
    let source = "\
const me = await tools.github__get_me({ verbose: true });
const a = await tools.a({ id: 7, tags: ['x'] });
const k = await tools['kebab-name']();
return { login: me.login, a: a.a, k };";
    let result = run(source, &host).unwrap();
    assert_eq!(
        result.value,
        Some(json!({"login": "octocat", "a": 1, "k": "kebab"}))
    );
    assert_eq!(
        host.calls(),
        [
            ("github__get_me".to_owned(), json!({"verbose": true})),
            ("a".to_owned(), json!({"id": 7, "tags": ["x"]})),
            ("kebab-name".to_owned(), json!({})),
        ]
    );
}

#[test]
fn promise_all_runs_the_calls_one_after_another() {
    let host = FakeHost::new();
    let source = "const [a, b] = await Promise.all([tools.a({n: 1}), tools.b({n: 2})]);\n\
                  return { a, b };";
    let result = run(source, &host).unwrap();
    assert_eq!(result.value, Some(json!({"a": {"a": 1}, "b": [1, 2, 3]})));
    assert_eq!(
        host.calls(),
        [
            ("a".to_owned(), json!({"n": 1})),
            ("b".to_owned(), json!({"n": 2})),
        ]
    );
}

#[test]
fn undefined_is_no_value_and_results_follow_json_stringify() {
    let host = FakeHost::new();
    assert_eq!(run("const x = 1;", &host).unwrap().value, None);
    assert_eq!(run("return undefined;", &host).unwrap().value, None);
    assert_eq!(run("return () => 1;", &host).unwrap().value, None);
    assert_eq!(value("return 'text';"), json!("text"));
    assert_eq!(
        value("return [1, undefined, NaN, () => 2];"),
        json!([1, null, null, null])
    );
    assert_eq!(
        value("return { d: new Date(0), u: undefined };"),
        json!({"d": "1970-01-01T00:00:00.000Z"})
    );
    assert_eq!(value("return Promise.resolve(42);"), json!(42));
    assert_eq!(
        value("\"use strict\"; return typeof this;"),
        json!("undefined")
    );
}

#[test]
fn console_lines_reach_the_host_with_json_arguments() {
    let host = FakeHost::new();
    let source = "\
console.log('plain', 1, { a: [1, 'x'] }, null, undefined, true);
console.info('info');
console.warn('warn', 10n);
console.error([]);
console.debug(function f() {}, Symbol('s'));
const cycle = {}; cycle.self = cycle;
console.log('cycle', cycle);";
    run(source, &host).unwrap();
    let lines = host.lines();
    assert_eq!(
        lines[..5],
        [
            "plain 1 {\"a\":[1,\"x\"]} null undefined true",
            "info",
            "warn 10n",
            "[]",
            "[function] [symbol]",
        ]
    );
    assert!(
        lines[5].starts_with("cycle [not JSON: TypeError: circular reference"),
        "{lines:?}"
    );
}

#[test]
fn a_long_console_line_is_cut_at_the_console_limit() {
    let host = FakeHost::new();
    let limits = ScriptLimits {
        console_bytes: 100,
        ..ScriptLimits::default()
    };
    run_with(
        "const s = 'é'.repeat(1e5); console.log(s, s, s);",
        &host,
        &limits,
    )
    .unwrap();
    let lines = host.lines();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0], "é".repeat(50));
}

#[test]
fn read_tool_result_is_the_read_tool_result_call() {
    let host = FakeHost::new();
    let source = "\
const a = await readToolResult('ref', { offset: 5 });
const b = await readToolResult('ref2', { offset: 1, length: 10, other: 1 });
const c = await readToolResult('ref3');
return [a, b.text, c.text];";
    let result = run(source, &host).unwrap();
    assert_eq!(
        result.value,
        Some(json!([{"text": "stored"}, "stored", "stored"]))
    );
    assert_eq!(
        host.calls(),
        [
            (
                "read_tool_result".to_owned(),
                json!({"reference": "ref", "offset": 5})
            ),
            (
                "read_tool_result".to_owned(),
                json!({"reference": "ref2", "offset": 1, "length": 10})
            ),
            ("read_tool_result".to_owned(), json!({"reference": "ref3"})),
        ]
    );
}

#[test]
fn arguments_that_are_not_json_objects_reject_without_a_call() {
    let cases = [
        (
            "await tools.a(() => 1)",
            "TypeError: the argument of `tools.a` is not JSON data",
        ),
        (
            "await tools.a({ n: 1n })",
            "TypeError: the argument of `tools.a` is not JSON data",
        ),
        (
            "const o = {}; o.o = o; await tools.a(o)",
            "TypeError: the argument of `tools.a` is not JSON data: TypeError: circular reference",
        ),
        (
            "await tools.a('text')",
            "TypeError: `tools.a` takes one argument object",
        ),
        (
            "await tools.a([1])",
            "TypeError: `tools.a` takes one argument object",
        ),
        (
            "await readToolResult(5)",
            "TypeError: `readToolResult(reference, { offset, length })`",
        ),
        (
            "await readToolResult('r', 5)",
            "TypeError: the second argument of `readToolResult`",
        ),
    ];
    for (source, message) in cases {
        let failure = fails(source);
        assert_eq!(failure.kind, FailureKind::Exception, "{source}");
        assert!(
            failure.message.starts_with(message),
            "{source}: {failure:?}"
        );
        assert_eq!(failure.line, Some(1), "{source}");
    }
}

#[test]
fn a_rejected_call_is_catchable_and_carries_the_host_text() {
    let host = FakeHost::new().fail("broken", "the issue does not exist (404)", false);
    let source = "\
try {
  await tools.broken({ id: 1 });
  return 'no';
} catch (error) {
  return { caught: error.message, isError: error instanceof Error };
}";
    let result = run(source, &host).unwrap();
    assert_eq!(
        result.value,
        Some(json!({"caught": "the issue does not exist (404)", "isError": true}))
    );
    assert_eq!(host.calls(), [("broken".to_owned(), json!({"id": 1}))]);
}

#[test]
fn an_uncaught_rejected_call_ends_as_an_exception_with_the_host_text() {
    let host = FakeHost::new().fail("broken", "the issue does not exist (404)", false);
    let failure = failure_with(
        "const a = await tools.a();\nawait tools.broken();\nreturn a;",
        &host,
        &ScriptLimits::default(),
    );
    assert_eq!(failure.kind, FailureKind::Exception);
    assert_eq!(failure.message, "Error: the issue does not exist (404)");
    assert_eq!(failure.line, Some(2));
}

#[test]
fn a_fatal_call_ends_the_program_even_when_it_is_caught() {
    let sources = [
        "try { await tools.fatal(); } catch (e) { return 'caught'; }",
        "tools.fatal().catch(() => {}); while (true) {}",
        "tools.fatal(); return 'went on';",
        "tools.fatal(); await tools.a(); return 'went on';",
        "tools.fatal(); console.log(1); await readToolResult('r');",
        "try { await tools.fatal(); } catch (e) {} return await tools.a();",
    ];
    for source in sources {
        let host = FakeHost::new().fail("fatal", "the call cap of 100 is reached", true);
        let failure = failure_with(source, &host, &limits());
        assert_eq!(failure.kind, FailureKind::Interrupted, "{source}");
        assert_eq!(
            failure.message, "the call cap of 100 is reached",
            "{source}"
        );
        assert_eq!(host.calls(), [("fatal".to_owned(), json!({}))], "{source}");
    }
}

#[test]
fn a_host_interrupt_stops_a_busy_loop() {
    let host =
        FakeHost::new().interrupt_after(Duration::from_millis(50), "the session was cancelled");
    let limits = ScriptLimits {
        cpu_time: Duration::from_secs(30),
        ..ScriptLimits::default()
    };
    let started = Instant::now();
    let failure = failure_with("let i = 0; while (true) { i++; }", &host, &limits);
    assert_eq!(failure.kind, FailureKind::Interrupted);
    assert_eq!(failure.message, "the session was cancelled");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_host_that_panics_does_not_hang_the_engine() {
    struct Panics;
    impl ScriptHost for Panics {
        fn call(&self, _: &str, _: Value) -> Result<Value, HostError> {
            panic!("the host failed");
        }
        fn log(&self, _: &str) {}
        fn interrupted(&self) -> Option<String> {
            None
        }
    }
    let functions = ["a".to_owned()];
    let limits = ScriptLimits::default();
    let script = Script {
        source: "await tools.a(); while (true) {}",
        functions: &functions,
        limits: &limits,
    };
    let panicked = std::panic::catch_unwind(|| QuickJs::new().run(&script, &Panics));
    assert!(panicked.is_err(), "the host's panic is the host's");
}

#[test]
fn an_interrupted_host_runs_nothing() {
    let host = FakeHost::new().interrupt_after(Duration::ZERO, "cancelled");
    let failure = failure_with("await tools.a();", &host, &ScriptLimits::default());
    assert_eq!(failure.kind, FailureKind::Interrupted);
    assert_eq!(failure.message, "cancelled");
    assert_eq!(host.calls(), []);
}

#[test]
fn an_endless_loop_ends_at_the_time_limit() {
    for source in [
        "while (true) {}",
        "for (;;) { try { while (true) {} } catch (e) {} }",
        "async function spin() { while (true) await null; } await spin();",
        "const f = () => { try { f(); } finally { f(); } }; f();",
        "await new Promise(function again(resolve) { Promise.resolve().then(() => again(resolve)); });",
        "return /(a+)+$/.test('a'.repeat(40) + 'b');",
    ] {
        let started = Instant::now();
        let failure = failure_with(source, &FakeHost::new(), &limits());
        assert_eq!(failure.kind, FailureKind::TimeLimit, "{source}: {failure:?}");
        assert!(
            failure.message.starts_with("the program ran for more than 200 ms"),
            "{failure:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2), "{source}: {:?}", started.elapsed());
    }
}

#[test]
fn time_in_tool_calls_is_not_the_programs() {
    let host = FakeHost::new().delay(Duration::from_millis(300));
    let result = run_with(
        "const r = [];\nfor (let i = 0; i < 3; i++) r.push(await tools.a({ i }));\nreturn r.length;",
        &host,
        &limits(),
    )
    .unwrap();
    assert_eq!(result.value, Some(json!(3)));
    assert_eq!(host.calls().len(), 3);
}

#[test]
fn deep_recursion_ends_as_a_stack_overflow() {
    let failure = failure_with(
        "function f() { return f() + 1; }\nreturn f();",
        &FakeHost::new(),
        &limits(),
    );
    assert_eq!(failure.kind, FailureKind::StackOverflow, "{failure:?}");
    assert_eq!(
        failure.message,
        "the program's call stack grew past 512 KiB (recursion too deep); nothing more runs: \
         use a loop instead of deep recursion"
    );
    assert_eq!(failure.line, Some(1));

    let nested = format!("return {}1{};", "[".repeat(100_000), "]".repeat(100_000));
    let failure = failure_with(&nested, &FakeHost::new(), &limits());
    assert_eq!(failure.kind, FailureKind::StackOverflow, "{failure:?}");
}

#[test]
fn memory_hogs_end_out_of_memory() {
    // The time limit is not what these test: a growing loop takes a while to fill 32 MiB.
    let memory_limits = ScriptLimits {
        cpu_time: Duration::from_secs(10),
        ..limits()
    };
    for source in [
        "return 'x'.repeat(2 ** 29).length;",
        "return new Array(1e7).fill(0).length;",
        "const a = []; while (true) a.push({ i: a.length, s: 'x' + a.length });",
        "function fill() { const a = []; while (true) a.push([a.length]); }\nfill();",
        "const a = []; while (true) a.push(new ArrayBuffer(1 << 20));",
    ] {
        let started = Instant::now();
        let failure = failure_with(source, &FakeHost::new(), &memory_limits);
        eprintln!("{source}: {:?}", started.elapsed());
        assert_eq!(
            failure.kind,
            FailureKind::OutOfMemory,
            "{source}: {failure:?}"
        );
        assert!(
            failure
                .message
                .starts_with("the program used more than 32 MiB of memory"),
            "{failure:?}"
        );
        assert!(
            failure.message.contains(
                "nothing more runs: process less data at once (request fewer or smaller \
                 results, keep only the fields you need)"
            ),
            "{failure:?}"
        );
    }
}

#[test]
fn a_string_past_the_engine_s_longest_is_a_range_error() {
    let failure = failure_with(
        "return 'x'.repeat(2 ** 30).length;",
        &FakeHost::new(),
        &limits(),
    );
    assert_eq!(failure.kind, FailureKind::Exception);
    assert_eq!(failure.message, "RangeError: invalid string length");
    assert_eq!(failure.line, Some(1));
}

#[test]
fn nothing_outside_the_language_is_reachable() {
    const ONLY: &str = " (a program sees only the language's built-ins, `tools`, `readToolResult` \
                        and `console`: no modules, timers, network or files)";
    let cases = [
        ("require('fs')", "ReferenceError: require is not defined"),
        ("fetch('http://x')", "ReferenceError: fetch is not defined"),
        (
            "setTimeout(() => {}, 1)",
            "ReferenceError: setTimeout is not defined",
        ),
        (
            "setInterval(() => {}, 1)",
            "ReferenceError: setInterval is not defined",
        ),
        ("process.exit()", "ReferenceError: process is not defined"),
        ("Deno.readFile('x')", "ReferenceError: Deno is not defined"),
        (
            "std.open('/etc/passwd')",
            "ReferenceError: std is not defined",
        ),
        ("os.exec(['ls'])", "ReferenceError: os is not defined"),
        (
            "performance.now()",
            "ReferenceError: performance is not defined",
        ),
    ];
    for (source, message) in cases {
        let failure = fails(source);
        assert_eq!(failure.kind, FailureKind::Exception, "{source}");
        assert_eq!(failure.message, format!("{message}{ONLY}"), "{source}");
        assert_eq!(failure.line, Some(1), "{source}");
    }

    // A name of the program's own gets no hint.
    let failure = fails("return usres.length;");
    assert_eq!(failure.message, "ReferenceError: usres is not defined");
}

#[test]
fn a_tool_the_program_may_not_call_is_no_function() {
    let failure = fails("const r = await tools.write_file({ path: 'x' });");
    assert_eq!(failure.kind, FailureKind::Exception);
    assert_eq!(
        failure.message,
        "TypeError: `tools.write_file` is no function a program may call: a program calls only \
         the read tools this session declares for Code Mode (`Object.keys(tools)` lists them); \
         call any other tool as a step of its own, outside the program"
    );
    // Any other value that is no function keeps the engine's own words and the hint.
    let failure = fails("const f = 1; f();");
    assert!(
        failure.message.starts_with("TypeError: not a function"),
        "{}",
        failure.message
    );
    assert_eq!(failure.line, Some(1));
}

#[test]
fn import_is_refused() {
    let failure = fails("await import('fs');");
    assert_eq!(failure.kind, FailureKind::Exception);
    assert!(
        failure
            .message
            .starts_with("ReferenceError: could not load module 'fs' (a program sees only"),
        "{failure:?}"
    );

    let failure = fails("import fs from 'fs';");
    assert_eq!(failure.kind, FailureKind::Syntax, "{failure:?}");
}

#[test]
fn eval_is_plain_javascript_that_reaches_nothing_more() {
    assert_eq!(value("return eval('1 + 2');"), json!(3));
    assert_eq!(value("return new Function('return 4')();"), json!(4));
    assert_eq!(
        value("return eval('typeof require + typeof fetch + typeof std');"),
        json!("undefinedundefinedundefined")
    );
    let failure = fails("eval('require(\"fs\")');");
    assert!(failure
        .message
        .starts_with("ReferenceError: require is not defined (a program"));
}

#[test]
fn globals_are_the_language_and_the_three_of_the_contract() {
    let names = value(
        "return Object.getOwnPropertyNames(globalThis).filter(n => !/^[A-Z]/.test(n)).sort();",
    );
    assert_eq!(
        names,
        json!([
            "console",
            "decodeURI",
            "decodeURIComponent",
            "encodeURI",
            "encodeURIComponent",
            "escape",
            "eval",
            "globalThis",
            "isFinite",
            "isNaN",
            "parseFloat",
            "parseInt",
            "queueMicrotask",
            "readToolResult",
            "tools",
            "undefined",
            "unescape"
        ])
    );
    assert_eq!(
        value("return Object.keys(tools);"),
        json!(["a", "b", "github__get_me", "kebab-name"])
    );
}

#[test]
fn tampering_with_the_language_does_not_reach_the_host_side() {
    let host = FakeHost::new();
    // Each works: the engine holds its own intrinsics.
    for source in [
        "JSON.stringify = null; JSON.parse = null; console.log({ a: 1 }); return await tools.a({ b: 2 });",
        "Array.prototype.push = null; Object.prototype.then = undefined; return await tools.b();",
        "Promise.prototype.then = function () { return this; }; return 1;",
        "Promise = null; return await tools.a();",
        "globalThis.Error = function () {}; return await tools.a();",
        "delete globalThis.console; tools.a(); return 'ok';",
        "tools = { a: () => 'mine' }; return tools.a();",
        "Object.defineProperty(Object.prototype, 'toJSON', { value: () => 'x', configurable: true }); return { a: 1 };",
    ] {
        let result = run_with(source, &host, &limits());
        assert!(result.is_ok(), "{source}: {result:?}");
    }
    assert_eq!(
        value("Object.prototype.toJSON = function () { return 'replaced'; }; return { a: 1 };"),
        json!("replaced")
    );

    // Each ends cleanly, with what went wrong.
    let cases = [
        (
            "Object.prototype.then = function (resolve) { resolve(this); }; return await tools.a();",
            FailureKind::TimeLimit,
        ),
        (
            "Object.prototype.then = function () {}; return await tools.a();",
            FailureKind::Exception,
        ),
        ("delete globalThis.console; console.log(1);", FailureKind::Exception),
        ("Object.prototype.toJSON = function () { throw new Error('no'); }; return {};", FailureKind::OutputTooLarge),
        ("Object.prototype.toJSON = function () { while (true) {} }; return {};", FailureKind::TimeLimit),
        (
            "const e = new Error('x'); Object.defineProperty(e, 'message', { get() { while (true) {} } }); throw e;",
            FailureKind::TimeLimit,
        ),
        ("throw new Proxy({}, { get() { throw 1; } });", FailureKind::Exception),
    ];
    for (source, kind) in cases {
        let failure = failure_with(source, &host, &limits());
        assert_eq!(failure.kind, kind, "{source}: {failure:?}");
    }
}

#[test]
fn a_syntax_error_names_its_line() {
    let failure = fails("const a = 1;\nconst b = 2;\nconst = 3;\nreturn a;");
    assert_eq!(failure.kind, FailureKind::Syntax);
    assert!(failure.message.starts_with("SyntaxError: "), "{failure:?}");
    assert_eq!(failure.line, Some(3));

    let failure = fails("return 1; }); (function () {");
    assert_eq!(failure.kind, FailureKind::Syntax, "{failure:?}");

    let failure = fails("return 1;\0");
    assert_eq!(failure.kind, FailureKind::Syntax, "{failure:?}");
    assert!(failure.message.contains("NUL"), "{failure:?}");
}

#[test]
fn an_exception_names_its_line() {
    let failure = fails("const a = 1;\nconst b = a + 1;\nthrow new RangeError('too far: ' + b);\n");
    assert_eq!(failure.kind, FailureKind::Exception);
    assert_eq!(failure.message, "RangeError: too far: 2");
    assert_eq!(failure.line, Some(3));

    let failure = fails("function f(o) {\n  return o.missing.field;\n}\nreturn f({});");
    assert_eq!(
        failure.message,
        "TypeError: cannot read property 'field' of undefined"
    );
    assert_eq!(failure.line, Some(2));

    let failure = fails("await null;\nthrow 'plain text';");
    assert_eq!(failure.message, "uncaught exception: plain text");
    assert_eq!(failure.line, None);

    let failure = fails("throw { code: 1 };");
    assert_eq!(
        failure.message,
        "uncaught exception: a value of type object"
    );
}

#[test]
fn a_result_over_the_output_limit_is_refused() {
    let limits = ScriptLimits {
        output_bytes: 1000,
        ..ScriptLimits::default()
    };
    let failure = failure_with("return 'x'.repeat(2000);", &FakeHost::new(), &limits);
    assert_eq!(failure.kind, FailureKind::OutputTooLarge);
    assert_eq!(
        failure.message,
        "the result is 2002 bytes of JSON, over the limit of 1000 bytes: return less (only the \
         fields and items the answer needs, or a summary computed in the program)"
    );
    // Exactly at the limit passes.
    assert!(run_with("return 'x'.repeat(998);", &FakeHost::new(), &limits).is_ok());
}

#[test]
fn a_result_json_cannot_hold_is_refused() {
    for (source, why) in [
        (
            "const o = {}; o.self = o; return o;",
            "TypeError: circular reference",
        ),
        ("return { n: 10n };", "TypeError: BigInt"),
    ] {
        let failure = fails(source);
        assert_eq!(failure.kind, FailureKind::OutputTooLarge, "{source}");
        assert!(
            failure
                .message
                .starts_with(&format!("the result cannot be converted to JSON ({why}")),
            "{failure:?}"
        );
    }
}

#[test]
fn a_promise_that_never_settles_ends_with_a_clear_failure() {
    for source in [
        "await new Promise(() => {});",
        "return new Promise(() => {});",
        "await { then() {} };",
    ] {
        let started = Instant::now();
        let failure = fails(source);
        assert_eq!(failure.kind, FailureKind::Exception, "{source}");
        assert!(
            failure
                .message
                .starts_with("the program's promise never settled"),
            "{failure:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}

#[test]
fn every_run_starts_fresh() {
    let host = FakeHost::new();
    run("globalThis.leftover = 1; Object.prototype.x = 2;", &host).unwrap();
    assert_eq!(
        value("return [typeof leftover, ({}).x === undefined];"),
        json!(["undefined", true])
    );
}

#[test]
fn tiny_limits_end_cleanly() {
    let tiny = ScriptLimits {
        memory_bytes: 0,
        stack_bytes: 0,
        cpu_time: Duration::ZERO,
        output_bytes: 0,
        console_bytes: 0,
        ..ScriptLimits::default()
    };
    let failure = failure_with("return 1;", &FakeHost::new(), &tiny);
    assert_eq!(failure.kind, FailureKind::OutOfMemory, "{failure:?}");

    let no_output = ScriptLimits {
        output_bytes: 0,
        ..ScriptLimits::default()
    };
    let failure = failure_with("return 1;", &FakeHost::new(), &no_output);
    assert_eq!(failure.kind, FailureKind::OutputTooLarge);
    assert!(run_with("return;", &FakeHost::new(), &no_output).is_ok());
}

#[test]
fn console_lines_stop_reaching_the_host_once_the_console_limit_is_spent() {
    let limits = ScriptLimits {
        console_bytes: 100,
        cpu_time: Duration::from_millis(300),
        ..ScriptLimits::default()
    };
    // Each line counts its JSON-escaped length plus 3, at least 4: `ab` is 5, so 20 lines use
    // 100 bytes and the 21st is the last handed over.
    let host = FakeHost::new();
    run_with(
        "for (let i = 0; i < 1000; i++) console.log('ab'); return 1;",
        &host,
        &limits,
    )
    .unwrap();
    assert_eq!(host.lines().len(), 21);

    // Empty lines cost 4 each: a loop of them ends at the time limit with 26 lines handed over.
    let host = FakeHost::new();
    let failure = failure_with("for (;;) console.log('');", &host, &limits);
    assert_eq!(failure.kind, FailureKind::TimeLimit, "{failure:?}");
    assert_eq!(host.lines().len(), 26);
    assert!(host.lines().iter().all(String::is_empty));
}

#[test]
fn lone_surrogates_become_the_replacement_character() {
    assert_eq!(value("return '\\ud800';"), json!("\u{fffd}"));
    assert_eq!(
        value("return { '\\udc00': 'a\\ud800b', pair: '\\ud83d\\ude00' };"),
        json!({"\u{fffd}": "a\u{fffd}b", "pair": "\u{1f600}"})
    );

    let host = FakeHost::new();
    let result = run("return await tools.a({ text: 'x\\ud800' });", &host).unwrap();
    assert_eq!(result.value, Some(json!({"a": 1})));
    assert_eq!(
        host.calls(),
        [("a".to_owned(), json!({"text": "x\u{fffd}"}))]
    );

    // A string argument is shown as it is, a lone surrogate replaced; other values as
    // `JSON.stringify` gives them, which escapes it.
    let host = FakeHost::new();
    run("console.log('\\ud800', ['\\udfff']);", &host).unwrap();
    assert_eq!(host.lines(), ["\u{fffd} [\"\\udfff\"]"]);

    let failure = fails("throw new Error('bad \\ud800 msg');");
    assert_eq!(failure.kind, FailureKind::Exception);
    assert_eq!(failure.message, "Error: bad \u{fffd} msg");
    assert_eq!(failure.line, Some(1));

    let failure = fails("await null;\nthrow 'lone \\udc00';");
    assert_eq!(failure.message, "uncaught exception: lone \u{fffd}");
}

#[test]
fn nesting_past_what_toolcat_reads_is_named() {
    let nest = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    assert_eq!(
        value(&format!("return {};", nest(127))).to_string(),
        nest(127)
    );

    let failure = fails(&format!("return {};", nest(128)));
    assert_eq!(failure.kind, FailureKind::OutputTooLarge);
    assert_eq!(
        failure.message,
        "the result is nested more than 127 levels deep (arrays and objects within one \
         another), which toolcat does not accept: flatten it"
    );

    let failure = fails(&format!("return await tools.a({{ deep: {} }});", nest(127)));
    assert_eq!(failure.kind, FailureKind::Exception);
    assert_eq!(
        failure.message,
        "TypeError: the argument of `tools.a` is not JSON data: it is nested more than 127 \
         levels deep, which toolcat does not accept: flatten it"
    );
}

#[test]
fn a_static_import_or_export_gets_the_no_modules_hint() {
    const ONLY: &str = " (a program sees only the language's built-ins, `tools`, `readToolResult` \
                        and `console`: no modules, timers, network or files)";
    for (source, line) in [
        ("import fs from \"fs\";\nreturn fs;", 1),
        ("const a = 1;\n  import { readFile } from 'fs';", 2),
        ("import * as path from 'path';", 1),
        ("export const x = 1;", 1),
        ("export default 1;", 1),
    ] {
        let failure = fails(source);
        assert_eq!(failure.kind, FailureKind::Syntax, "{source}: {failure:?}");
        assert!(failure.message.starts_with("SyntaxError: "), "{failure:?}");
        assert!(failure.message.ends_with(ONLY), "{source}: {failure:?}");
        assert_eq!(failure.line, Some(line), "{source}");
    }
    // Another syntax error gets none, even in a program that names `import`.
    let failure = fails("const important = 1;\nconst = 2;");
    assert_eq!(failure.kind, FailureKind::Syntax);
    assert!(!failure.message.contains("no modules"), "{failure:?}");
}

#[test]
fn a_program_cannot_close_the_wrapper_early() {
    for source in [
        "}); (async function () { return 7",
        "})(); tools.a({ path: 'x' }); (async function () { return 1",
        "}); globalThis.escaped = 1; (async function () { return 1",
        "}); Promise.resolve().then(() => tools.a()); (async function () { return 1",
        "}); Object.defineProperty(globalThis, 'tools', { set(t) { t.a(); } }); \
         (async function () { return 1",
        "}, async function () { return 2",
        "return 1; }); (function () {",
        "}); (async function () {",
    ] {
        let host = FakeHost::new();
        let failure = failure_with(source, &host, &limits());
        assert_eq!(failure.kind, FailureKind::Syntax, "{source}: {failure:?}");
        assert_eq!(
            failure.message,
            "the program is not the body of one function: a `}` closes it early; balance its \
             braces",
            "{source}"
        );
        assert_eq!(host.calls(), [], "{source}");
        assert_eq!(host.lines(), Vec::<String>::new(), "{source}");
    }
    // Braces within strings, comments, templates and regular expressions are no wrapper's.
    assert_eq!(
        value("const s = '})'; // })\nreturn [s, `${'}'}`, /\\}\\)/.source, '/* }) */'];"),
        json!(["})", "}", "\\}\\)", "/* }) */"])
    );
}

#[test]
fn lines_are_the_program_s_own_whatever_its_line_endings() {
    for newline in ["\n", "\r\n", "\u{2028}", "\r"] {
        let source = [
            "const a = 1;",
            "const b = a + 1;",
            "throw new Error('x' + b);",
        ]
        .join(newline);
        let failure = fails(&source);
        assert_eq!(failure.line, Some(3), "{newline:?}: {failure:?}");

        let source = ["const a = 1;", "const = 2;", "return a;"].join(newline);
        let failure = fails(&source);
        assert_eq!(failure.kind, FailureKind::Syntax, "{newline:?}");
        assert_eq!(failure.line, Some(2), "{newline:?}: {failure:?}");
    }
}

/// Runs `source` on a thread of its own and waits for it at most `within`, so that a program
/// the engine cannot stop fails the test instead of hanging it.
fn bounded(
    source: &str,
    limits: &ScriptLimits,
    within: Duration,
) -> Result<ScriptReturn, ScriptFailure> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let program = source.to_owned();
    let limits = limits.clone();
    thread::spawn(move || {
        let host = FakeHost::new();
        let _ = sender.send(run_with(&program, &host, &limits));
    });
    receiver
        .recv_timeout(within)
        .unwrap_or_else(|_| panic!("{source}: still running after {within:?}"))
}

fn quick() -> ScriptLimits {
    ScriptLimits {
        cpu_time: Duration::from_millis(300),
        ..ScriptLimits::default()
    }
}

const WITHIN: Duration = Duration::from_secs(3);

#[test]
fn built_in_walks_quickjs_cannot_interrupt_end_with_a_range_error() {
    let cases = [
        (
            "return new Array(2 ** 32 - 1).join('');",
            "Array.prototype.join",
            4_294_967_295u64,
        ),
        (
            "return Array.prototype.join.call({ length: 2 ** 40 }, '');",
            "Array.prototype.join",
            1 << 40,
        ),
        (
            "return String(new Array(2 ** 32 - 1));",
            "Array.prototype.join",
            4_294_967_295,
        ),
        (
            "return `${new Array(2 ** 32 - 1)}`;",
            "Array.prototype.join",
            4_294_967_295,
        ),
        (
            "return new Array(2 ** 32 - 1).toLocaleString();",
            "Array.prototype.toLocaleString",
            4_294_967_295,
        ),
        (
            "return new Array(2 ** 32 - 1).reverse().length;",
            "Array.prototype.reverse",
            4_294_967_295,
        ),
        (
            "return Array.prototype.reverse.call({ length: 2 ** 40 }).length;",
            "Array.prototype.reverse",
            1 << 40,
        ),
        (
            "return Array.prototype.copyWithin.call({ length: 2 ** 40 }, 0, 1).length;",
            "Array.prototype.copyWithin",
            1 << 40,
        ),
        (
            "const o = Object.create(new Uint8Array(0));\n\
             Object.defineProperty(o, 'length', { value: 2 ** 40 });\n\
             return Array.prototype.fill.call(o, 0).length;",
            "Array.prototype.fill",
            1 << 40,
        ),
        (
            "return new Array(2 ** 32 - 1).slice(1).length;",
            "Array.prototype.slice",
            4_294_967_295,
        ),
        (
            "return Array.prototype.slice.call({ length: 2 ** 32 - 1 }).length;",
            "Array.prototype.slice",
            4_294_967_295,
        ),
        (
            "return new Array(2 ** 32 - 1).splice(1, 1).length;",
            "Array.prototype.splice",
            4_294_967_295,
        ),
        (
            "return Array.prototype.splice.call({ length: 2 ** 40 }, 0, 0, 1);",
            "Array.prototype.splice",
            1 << 40,
        ),
        (
            "return new Array(2 ** 32 - 1).sort().length;",
            "Array.prototype.sort",
            4_294_967_295,
        ),
        (
            "return Array.prototype.sort.call({ length: 2 ** 40 }, (a, b) => a - b).length;",
            "Array.prototype.sort",
            1 << 40,
        ),
        (
            "return new Array(2 ** 32 - 1).shift();",
            "Array.prototype.shift",
            4_294_967_295,
        ),
        (
            "return Array.prototype.unshift.call({ length: 2 ** 40 }, 1);",
            "Array.prototype.unshift",
            1 << 40,
        ),
        (
            "return [].concat(new Array(2 ** 32 - 1)).length;",
            "Array.prototype.concat",
            4_294_967_295,
        ),
        (
            "return [].concat({ length: 2 ** 40, [Symbol.isConcatSpreadable]: true }).length;",
            "Array.prototype.concat",
            1 << 40,
        ),
        (
            "return [].concat(...new Array(60000).fill(new Array(2 ** 16))).length;",
            "Array.prototype.concat",
            16_842_752,
        ),
        (
            "return new Array(2 ** 32 - 1).flat().length;",
            "Array.prototype.flat",
            4_294_967_295,
        ),
        (
            "return [new Array(2 ** 32 - 1)].flat().length;",
            "Array.prototype.flat",
            4_294_967_296,
        ),
        (
            "return [new Array(2 ** 24), new Array(2 ** 24)].flat().length;",
            "Array.prototype.flat",
            16_777_218,
        ),
        (
            "return [1].flatMap(() => new Array(2 ** 32 - 1)).length;",
            "Array.prototype.flatMap",
            4_294_967_296,
        ),
        (
            "return JSON.stringify({}, new Array(2 ** 32 - 1));",
            "JSON.stringify's replacer array",
            4_294_967_295,
        ),
        (
            "return JSON.stringify({}, new Proxy(new Array(2 ** 32 - 1), {}));",
            "JSON.stringify's replacer array",
            4_294_967_295,
        ),
    ];
    for (source, name, length) in cases {
        let started = Instant::now();
        let failure = match bounded(source, &quick(), WITHIN) {
            Err(failure) => failure,
            Ok(value) => panic!("{source}: succeeded with {value:?}"),
        };
        assert_eq!(
            failure.kind,
            FailureKind::Exception,
            "{source}: {failure:?}"
        );
        assert_eq!(
            failure.message,
            format!(
                "RangeError: {name} would walk {length} elements, more than the 16777216 one \
                 call may walk in toolcat (QuickJS cannot stop it midway): keep arrays, and the \
                 length of array-likes, within 16777216 elements (a sparse array's length \
                 counts, not its items), or work in parts"
            ),
            "{source}"
        );
        assert!(failure.line.is_some(), "{source}: {failure:?}");
        assert!(
            started.elapsed() < WITHIN,
            "{source}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn a_length_is_read_once_so_a_getter_cannot_pass_one_length_and_walk_another() {
    // The getter answers 1 to the first read, 2 ** 40 after: the walk sees 1, and the getter
    // runs once a call, as the language says.
    assert_eq!(
        value(
            "let reads = 0;\n\
             const like = () => { let read = false; return { get length() { reads++; \
               const first = !read; read = true; return first ? 1 : 2 ** 40; }, 0: 'a' }; };\n\
             const o = like();\n\
             return [Array.prototype.join.call(like(), ''), Array.prototype.reverse.call(o) === o,\n\
               Array.prototype.slice.call(like()), Array.prototype.indexOf.call(like(), 'a'), reads];"
        ),
        json!(["a", true, ["a"], 0, 4])
    );
    // A Proxy that answers a small length to a check and a large one later walks the small one.
    assert_eq!(
        value(
            "let reads = 0;\n\
             const proxy = () => { let read = false; return new Proxy([], { get(t, k) {\n\
               if (k !== 'length') return 'x'; reads++; const first = !read; read = true;\n\
               return first ? 2 : 2 ** 40; } }); };\n\
             return [Array.prototype.join.call(proxy(), '-'), [].concat(proxy()).length,\n\
               [proxy()].flat().length, reads];"
        ),
        json!(["x-x", 2, 0, 3])
    );
}

#[test]
fn typed_array_joins_and_sorts_past_their_bounds_end_with_a_range_error() {
    let failure = bounded(
        "return new Uint8Array(2 ** 24 + 1).join('').length;",
        &quick(),
        WITHIN,
    )
    .unwrap_err();
    assert_eq!(failure.kind, FailureKind::Exception, "{failure:?}");
    assert!(
        failure
            .message
            .starts_with("RangeError: TypedArray.prototype.join would walk 16777217 elements"),
        "{failure:?}"
    );
    for key in ["sort", "toSorted"] {
        let source = format!("return new Float32Array(2 ** 22 + 1).{key}().length;");
        let failure = bounded(&source, &quick(), WITHIN).unwrap_err();
        assert_eq!(
            failure.message,
            format!(
                "RangeError: TypedArray.prototype.{key} without a comparator would sort 4194305 \
                 elements, more than the 4194304 toolcat lets one call sort (QuickJS cannot stop \
                 it midway): sort at most 4194304 elements at a time"
            )
        );
    }
    // Within the bounds, and with a comparator, they run.
    assert_eq!(
        value("const t = Float64Array.of(3, 1, 2); return [t.join('-'), [...t.sort()], [...t.toSorted((a, b) => b - a)]];"),
        json!(["3-1-2", [1, 2, 3], [3, 2, 1]])
    );
}

#[test]
fn iteration_quickjs_drives_in_c_stops_at_the_time_limit() {
    for source in [
        "return new Array(2 ** 32 - 1).values().drop(2 ** 40).next().done;",
        "return Iterator.concat(new Array(2 ** 32 - 1)).drop(2 ** 40).next().done;",
        "return new Set([1]).union({ size: 1, has: () => false, keys: () => new Array(2 ** 32 - 1).values() }).size;",
        "return new Set([undefined]).isSupersetOf({ size: 1, has: () => true, keys: () => new Array(2 ** 32 - 1).values() });",
        "return new Set([1, 2]).isDisjointFrom({ size: 1, has: () => false, keys: () => new Array(2 ** 32 - 1).values() });",
        "return String.raw({ raw: { length: 2 ** 40 } });",
    ] {
        let failure = match bounded(source, &quick(), WITHIN) {
            Err(failure) => failure,
            Ok(value) => panic!("{source}: succeeded with {value:?}"),
        };
        assert!(
            matches!(failure.kind, FailureKind::TimeLimit | FailureKind::OutOfMemory),
            "{source}: {failure:?}"
        );
    }
    assert_eq!(
        value(
            "return [[1, 2, 3, 4].values().drop(2).toArray(),\n\
             [...new Set([1, 2]).union(new Set([2, 3]))],\n\
             new Set([1, 2]).isSupersetOf(new Set([2])),\n\
             [...new Set([1, 2]).difference({ size: 1, has: (v) => v === 1, keys: () => [1].values() })],\n\
             String.raw`a\\n${1}b`, String.raw({ raw: ['x', 'y'] }, 7, 8)];"
        ),
        json!([[3, 4], [1, 2, 3], true, [2], "a\\n1b", "x7y"])
    );
}

#[test]
fn a_loop_of_long_built_in_calls_stops_at_the_time_limit() {
    for source in [
        "const big = 'x'.repeat(2 ** 24); for (let i = 0; i < 3000; i++) big.indexOf('y');",
        "const big = 'x'.repeat(2 ** 23); for (let i = 0; i < 3000; i++) big.toUpperCase();",
        "const a = new Array(2 ** 21); for (let i = 0; i < 3000; i++) a.join('');",
        "const t = new Uint8Array(2 ** 24); for (let i = 0; i < 30000; i++) t.fill(i);",
        "const text = JSON.stringify(new Array(2 ** 16).fill(1)); for (let i = 0; i < 30000; i++) JSON.parse(text);",
    ] {
        let started = Instant::now();
        let failure = match bounded(source, &quick(), Duration::from_secs(5)) {
            Err(failure) => failure,
            Ok(value) => panic!("{source}: succeeded with {value:?}"),
        };
        assert_eq!(failure.kind, FailureKind::TimeLimit, "{source}: {failure:?}");
        assert!(started.elapsed() < Duration::from_secs(3), "{source}: {:?}", started.elapsed());
    }
}

#[test]
fn long_string_searches_stay_interruptible_and_give_the_same_answers() {
    // QuickJS's own search compares up to the haystack's length times the needle's.
    for source in [
        "return 'x'.repeat(2 ** 20).includes('x'.repeat(2 ** 10) + 'y');",
        "return 'x'.repeat(2 ** 20).indexOf('x'.repeat(2 ** 10) + 'y');",
        "return 'x'.repeat(2 ** 22).lastIndexOf('x'.repeat(2 ** 21) + 'y');",
        "return 'x'.repeat(2 ** 20).split('x'.repeat(2 ** 10) + 'y').length;",
        "return 'x'.repeat(2 ** 20).replaceAll('x'.repeat(2 ** 10) + 'y', '').length;",
    ] {
        let failure = match bounded(source, &quick(), WITHIN) {
            Err(failure) => failure,
            Ok(value) => panic!("{source}: succeeded with {value:?}"),
        };
        assert_eq!(
            failure.kind,
            FailureKind::TimeLimit,
            "{source}: {failure:?}"
        );
    }
    // Past the bound the search runs as a regular expression, with the same answers.
    let n = 1 << 20;
    let m = 201;
    let result = value(
        "const needle = 'b' + 'c'.repeat(200);\n\
         const text = 'a'.repeat(2 ** 20) + needle + 'a'.repeat(10) + needle + 'z';\n\
         return [\n\
           text.indexOf(needle), text.indexOf(needle, 2 ** 20 + 1), text.indexOf(needle, 1e10),\n\
           text.lastIndexOf(needle), text.lastIndexOf(needle, 2 ** 20 + 210), text.lastIndexOf(needle, -5),\n\
           text.includes(needle), text.includes(needle, 2 ** 20 + 212), new String(text).includes(needle),\n\
           text.split(needle).map(part => part.length), text.split(needle, 1).length,\n\
           text.replace(needle, '<$&|$$|$`|$\\'|$1>').slice(2 ** 20 - 1, 2 ** 20 + 210),\n\
           text.replaceAll(needle, (match, at, whole) => `[${match.length},${at},${whole.length}]`).slice(2 ** 20 - 1),\n\
         ];",
    );
    let total = n + m + 10 + m + 1;
    assert_eq!(
        result,
        json!([
            n,
            n + m + 10,
            -1,
            n + m + 10,
            n,
            -1,
            true,
            false,
            true,
            [n, 10, 1],
            1,
            format!(
                "a<{}|$|{}",
                "b".to_owned() + &"c".repeat(200),
                &"a".repeat(210 - m - 4)
            ),
            format!("a[{m},{n},{total}]aaaaaaaaaa[{m},{},{total}]z", n + m + 10),
        ])
    );
}

#[test]
fn regular_expressions_past_the_pattern_bound_are_refused_before_compiling() {
    for source in [
        "return new RegExp('(' + 'a|'.repeat(2 ** 16) + 'b)').test('b');",
        "return RegExp('a'.repeat(70000)).source.length;",
        "return 'x'.match('a|'.repeat(40000));",
        "return 'x'.search({ toString: () => 'a'.repeat(70000) });",
        "return [...'x'.matchAll('a'.repeat(70000))];",
        "const r = /x/; r.compile('a'.repeat(70000)); return r.source.length;",
    ] {
        let failure = match bounded(source, &quick(), WITHIN) {
            Err(failure) => failure,
            Ok(value) => panic!("{source}: succeeded with {value:?}"),
        };
        assert_eq!(
            failure.kind,
            FailureKind::Exception,
            "{source}: {failure:?}"
        );
        assert!(
            failure
                .message
                .starts_with("RangeError: a regular expression of ")
                && failure
                    .message
                    .contains("longer than the 65536 toolcat compiles"),
            "{source}: {failure:?}"
        );
    }
    assert_eq!(
        value(
            "class R extends RegExp {}\n\
             return [new RegExp('a|b').test('b'), RegExp('c', 'g').flags, /x/.constructor === RegExp,\n\
             new R('x') instanceof RegExp, new R('y').test('y'), RegExp.name, RegExp.length,\n\
             'a-b'.split(/-/), 'ab'.match('b').index, 'aXbX'.replace(/X/g, '.'), new RegExp(/q/i).flags];"
        ),
        json!([true, "g", true, true, true, "RegExp", 2, ["a", "b"], 1, "a.b.", "i"])
    );
}

#[test]
fn a_proxy_s_own_keys_are_bounded() {
    // Building the keys takes a while in a debug build: more time than `quick()` gives.
    let limits = ScriptLimits {
        cpu_time: Duration::from_secs(1),
        ..ScriptLimits::default()
    };
    for source in [
        "const keys = Array.from({ length: 2 ** 15 }, (_, i) => 'k' + i);\n\
         return Reflect.ownKeys(new Proxy({}, { ownKeys: () => keys })).length;",
        "const keys = Array.from({ length: 2 ** 15 }, (_, i) => 'k' + i);\n\
         return Object.keys(Proxy.revocable({}, { ownKeys: () => keys }).proxy).length;",
        "const target = {}; for (let i = 0; i < 2 ** 16; i++) target['k' + i] = 1;\n\
         Object.preventExtensions(target);\n\
         const keys = Object.keys(target);\n\
         return Reflect.ownKeys(new Proxy(target, { ownKeys: () => keys })).length;",
    ] {
        let failure = match bounded(source, &limits, WITHIN) {
            Err(failure) => failure,
            Ok(value) => panic!("{source}: succeeded with {value:?}"),
        };
        assert_eq!(
            failure.kind,
            FailureKind::Exception,
            "{source}: {failure:?}"
        );
        assert!(
            failure
                .message
                .starts_with("RangeError: a Proxy's ownKeys trap returned"),
            "{source}: {failure:?}"
        );
    }
    assert_eq!(
        value(
            "const handler = { keys: ['a', 'b'], ownKeys() { return this.keys; },\n\
               getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true }) };\n\
             const p = new Proxy({}, handler);\n\
             return [Object.keys(p), Object.keys(new Proxy({ c: 1 }, {})), typeof Proxy, Proxy.name,\n\
               Object.keys(Proxy.revocable({ d: 1 }, {}).proxy)];"
        ),
        json!([["a", "b"], ["c"], "function", "Proxy", ["d"]])
    );
}

#[test]
fn guarded_methods_behave_as_the_language_says() {
    assert_eq!(
        value(
            "class A extends Array {}\n\
             const a = A.from([1, [2]]);\n\
             const spreadable = { length: 2, 0: 'a', 1: 'b', [Symbol.isConcatSpreadable]: true };\n\
             const kept = [1]; kept[Symbol.isConcatSpreadable] = false;\n\
             const holes = [1, , 3].concat([4, , 6]);\n\
             const like = { length: 3, 0: 'x', 2: 'z' };\n\
             const o = [1];\n\
             return [\n\
               [1, [2, [3, [4]]]].flat(), [1, [2, [3, [4]]]].flat(Infinity), [1, [2]].flat(0),\n\
               [[1, , 3], , [4]].flat(), [1, 2].flatMap(x => [x, [x * 10]]),\n\
               holes.length, 1 in holes, 4 in holes, holes[5],\n\
               [].concat(spreadable), [].concat(kept), Array.prototype.concat.call(1, 2),\n\
               a.concat([3]) instanceof A, a.flat() instanceof A, a.flatMap(x => [x]) instanceof A,\n\
               a.slice() instanceof A, a.splice(0, 1) instanceof A,\n\
               Array.prototype.slice.call(like), Array.prototype.join.call(like, '-'),\n\
               Array.prototype.reverse.call(like) === like, like[0], 1 in like,\n\
               Array.prototype.join.call('abc', '-'), Array.prototype.map.call('ab', x => x + x),\n\
               o.flatMap((x, i, all) => [all === o]), [3, 1, 2].sort(), [1, 2, 3].fill(0, 1),\n\
               [1, 2, 3, 4, 5].copyWithin(0, 3), [1, 2].toString(), [1, 2].toLocaleString(),\n\
               Array.prototype.join.name, Array.prototype.join.length, Array.prototype.concat.length,\n\
               Array.prototype.propertyIsEnumerable('join'), Object.getOwnPropertyNames(Array.prototype.join),\n\
               'a,b,,c'.split(','), 'aaa'.replaceAll('a', 'b'), 'abc'.indexOf('c'), 'abcabc'.lastIndexOf('abc'),\n\
             ];"
        ),
        json!([
            [1, 2, [3, [4]]],
            [1, 2, 3, 4],
            [1, [2]],
            [1, 3, 4],
            [1, [10], 2, [20]],
            6,
            false,
            false,
            6,
            ["a", "b"],
            [[1]],
            [1, 2],
            true,
            true,
            true,
            true,
            true,
            ["x", null, "z"],
            "x--z",
            true,
            "z",
            false,
            "a-b-c",
            ["aa", "bb"],
            [true],
            [1, 2, 3],
            [1, 0, 0],
            [4, 5, 3, 4, 5],
            "1,2",
            "1,2",
            "join",
            1,
            1,
            false,
            ["length", "name"],
            ["a", "b", "", "c"],
            "bbb",
            2,
            3
        ])
    );
    // A program that replaces what the guards use changes only its own world.
    assert_eq!(
        value(
            "Object.defineProperty(Array.prototype, 0, { set() { throw new Error('set'); } });\n\
             Object.defineProperty(Array.prototype, Symbol.isConcatSpreadable, { get() { return undefined; } });\n\
             Object.defineProperty(Object.prototype, 'get', { get() { throw new Error('get'); } });\n\
             Array.prototype.push = null; Reflect.apply = null; Reflect.defineProperty = null;\n\
             Array.prototype[Symbol.iterator] = null; Array.prototype.constructor = undefined;\n\
             const result = [[[1], [2]].flat().concat([3], 4).join('-'),\n\
               [1, [2]].flatMap(x => x).length, 'abcb'.split('b').length].join('|');\n\
             // QuickJS's own JSON.stringify meets the setter too (the program's world): remove it.\n\
             delete Array.prototype[0];\n\
             return result;"
        ),
        json!("1-2-3-4|2|3")
    );
    // A program that replaces a wrapper replaces it in its own world.
    assert_eq!(
        value("Array.prototype.join = function () { return 'mine'; }; return [[1, 2].join(), String([3])];"),
        json!(["mine", "mine"])
    );
}
