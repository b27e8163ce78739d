//! A Code Mode script engine for toolcat on QuickJS: [`QuickJs`] implements
//! [`toolcat::code_mode::ScriptEngine`], so the runtime can run the JavaScript program a model
//! writes (one program that calls read tools, instead of one model step per call) and hand back
//! only its result.
//!
//! ```
//! use serde_json::{json, Value};
//! use toolcat::code_mode::{HostError, Script, ScriptEngine, ScriptHost, ScriptLimits};
//! use toolcat_quickjs::QuickJs;
//!
//! /// The runtime's side, reduced to one tool.
//! struct Host;
//!
//! impl ScriptHost for Host {
//!     fn call(&self, tool: &str, arguments: Value) -> Result<Value, HostError> {
//!         match tool {
//!             "list_issues" => Ok(json!([{ "id": 1, "open": true }, { "id": 2, "open": false }])),
//!             _ => Err(HostError { message: format!("no tool `{tool}`"), fatal: false }),
//!         }
//!     }
//!     fn log(&self, line: &str) {
//!         println!("console: {line}");
//!     }
//!     fn interrupted(&self) -> Option<String> {
//!         None
//!     }
//! }
//!
//! let functions = ["list_issues".to_owned()];
//! let limits = ScriptLimits::default();
//! let script = Script {
//!     source: "const issues = await tools.list_issues({ repo: 'toolcat' });\n\
//!              return issues.filter(issue => issue.open).map(issue => issue.id);",
//!     functions: &functions,
//!     limits: &limits,
//! };
//! let result = QuickJs::new().run(&script, &Host).unwrap();
//! assert_eq!(result.value, Some(json!([1])));
//! ```
//!
//! # Why QuickJS, through rquickjs
//!
//! QuickJS (here the QuickJS-ng fork that `rquickjs` 0.14 bundles) is a small embeddable engine
//! of about 72,000 lines of C with the limits Code Mode needs built in: a heap limit, a native
//! stack limit, and an interrupt handler the interpreter calls as it runs (in loops and calls,
//! and inside regular expression matching), whose answer stops the program with an exception
//! nothing can catch. A runtime and a context cost little, so every program gets fresh ones.
//! `rquickjs` compiles the C sources with the `cc` crate (no `bindgen`, no system library): on
//! the shared two-core machine where this was measured, that build script took 8 to 9 s of a
//! debug build and about 40 s of a release build (under a load average of 6), and all of
//! `rquickjs` 11 to 13 s of a debug build from clean.
//!
//! # What the program sees
//!
//! The program text is the body of an `async` function: it may `await` and `return`. Its line
//! numbers are its own (the wrapper opens on its first line; lines end as JavaScript ends them,
//! at `\n`, `\r\n`, `\r`, U+2028 or U+2029), and it runs in sloppy mode unless it starts with
//! `"use strict"`. Text that closes the wrapper early (`}); ...; (async function () {`) is a
//! [`FailureKind::Syntax`] failure, and none of it runs with `tools`, `readToolResult` or
//! `console` there to reach: the wrapper is evaluated before they exist, and must come back as
//! the very function it opened. As globals it has the language's built-ins (QuickJS's
//! intrinsics without the web APIs `performance` and `DOMException`; `eval` and `Function`
//! work and reach nothing more), and:
//!
//! - `tools`: one `async` function per name of [`Script::functions`], whatever the name (use
//!   `tools["kebab-name"]` for names that are not identifiers), taking one argument object
//!   (`{}` when there is none) and resolving to the tool's JSON result or rejecting with an
//!   `Error` whose `message` is the host's text. An argument that is not a JSON object (a
//!   function, a `BigInt`, a cycle, a string) rejects with a `TypeError` and reaches no host;
//!   a name not in the list is no function (`tools.write_file(...)` is a `TypeError`).
//! - `readToolResult(reference, { offset, length }?)`: the call `read_tool_result` with
//!   `{"reference", "offset"?, "length"?}`.
//! - `console.log`, `info`, `warn`, `error`, `debug`: one line each to [`ScriptHost::log`], the
//!   arguments as `JSON.stringify` gives them (strings as they are; `undefined`, `[function]`,
//!   `[symbol]`, a `BigInt` as `10n`, a value JSON cannot hold as `[not JSON: why]`), joined by
//!   spaces, and cut at [`ScriptLimits::console_bytes`] (the host keeps no more in all). Each
//!   line handed over counts its length as the content of a JSON string (escapes included) plus
//!   3, at least 4, so an empty line costs too; once the lines handed over count for more than
//!   [`ScriptLimits::console_bytes`], no more reach the host (they are not even built).
//!
//! Values cross to the host as JSON: a tool's argument, the result, an error's message. A lone
//! UTF-16 surrogate (`'\ud800'`), which JSON text can escape but UTF-8 cannot hold, becomes
//! U+FFFD, the replacement character (in a console line too, except inside a value shown as
//! `JSON.stringify` gives it, which keeps the escape); a value nested more than 127 levels
//! deep (`serde_json`'s limit) is refused, saying so.
//!
//! There is no module loader (`import()` rejects; a static `import` or `export` is a syntax
//! error, with the same hint that a program has no modules), no `require`,
//! `fetch`, timers, `process`, `std` or `os`. The engine converts values and makes promises with
//! QuickJS's own functions, never through the globals a program can change, so a program that
//! replaces `JSON.stringify`, `Promise.prototype.then`, `Array.prototype.push`, `console` or
//! `tools` changes only its own world (what `JSON.stringify` itself calls, such as a `toJSON`
//! method, still runs, under the same limits).
//!
//! **Calls run one at a time.** A tool function makes its call when it is called, while the
//! program waits, and returns a promise already settled; `Promise.all([tools.a(), tools.b()])`
//! works, and runs the two calls one after the other.
//!
//! # Limits and failures
//!
//! Each [`ScriptFailure`] says what happened and how to stay within the limit; `line` is the
//! program line of the exception when the engine knows it.
//!
//! - [`ScriptLimits::memory_bytes`]: the runtime's heap limit. Past it an allocation fails with
//!   `InternalError: out of memory`, or QuickJS throws `null` when not even that error fits;
//!   either, uncaught, is [`FailureKind::OutOfMemory`] (the `null` case says that a program
//!   throwing `null` itself reads the same). A string past QuickJS's longest (2^30 - 1
//!   characters, `'x'.repeat(2 ** 30)`) is a `RangeError`, an ordinary exception.
//! - [`ScriptLimits::stack_bytes`]: the runtime's native stack limit (`RangeError: Maximum call
//!   stack size exceeded`, uncaught: [`FailureKind::StackOverflow`]).
//! - [`ScriptLimits::cpu_time`]: time the program runs, measured on the clock with the time of
//!   its tool calls left out (on a busy machine, time the thread waits for a core counts too).
//!   The interrupt handler and the job loop stop it past the limit: [`FailureKind::TimeLimit`].
//! - [`ScriptHost::interrupted`]: asked every 2 ms while the program runs; a reason stops it
//!   ([`FailureKind::Interrupted`] with that reason). A call answered with [`HostError::fatal`]
//!   stops it the same way, even if the program catches the rejection: the promise never
//!   settles, no further call reaches the host, and the next check ends the program.
//! - [`ScriptLimits::output_bytes`]: the result's JSON text; past it, or when `JSON.stringify`
//!   cannot convert it (a cycle, a `BigInt`, a throwing `toJSON`),
//!   [`FailureKind::OutputTooLarge`]. `undefined` (nothing returned) is `value: None`.
//! - A program that does not parse is [`FailureKind::Syntax`] with its line; an exception
//!   nothing caught is [`FailureKind::Exception`] with `name: message` (a hint follows when the
//!   program reached for a global of another JavaScript host, or called a missing tool); a
//!   promise that can never settle (`await new Promise(() => {})`) is an exception saying so.
//!   [`FailureKind::Engine`] is left for a runtime or thread that cannot be created.
//!
//! A hostile program ends with one of these, never a panic or a hang of the caller (but see
//! the limits of that below).
//!
//! # Built-ins QuickJS cannot interrupt
//!
//! QuickJS asks the interrupt handler from the interpreter and from a few built-ins' own loops,
//! every 10,000 checks; other built-ins run their C loop to its end, whatever the time limit or
//! the host's interrupt. Some of those loops are unbounded (`new Array(2 ** 32 - 1).join("")`,
//! `Array.prototype.reverse.call({ length: 2 ** 40 })` never end), some grow faster than their
//! input. Before the program runs, the engine replaces each such method with a wrapper that
//! bounds it; the original stays in a closure the program cannot reach, the wrapper keeps its
//! `name`, `length` and (non-enumerable) attributes, and a program that replaces it changes only
//! its own world. rquickjs has no hook into those loops for a crate without `unsafe`, hence
//! wrappers. Past its bound a call throws a `RangeError` (an ordinary exception, uncaught:
//! [`FailureKind::Exception`]) saying the bound and how to stay within it:
//!
//! - `Array.prototype` `join`, `toLocaleString` (and so `toString` and any array turned into a
//!   string), `reverse`, `copyWithin`, `fill`, `slice`, `splice`, `sort`, `shift` and `unshift`
//!   walk their `this` up to its length, holes included, and `concat`, `flat` and `flatMap` walk
//!   every array they spread: at most **16,777,216** (2^24) elements a call, `"Array.prototype
//!   .join would walk 4294967295 elements, more than the 16777216 one call may walk in toolcat
//!   (QuickJS cannot stop it midway): keep arrays, and the length of array-likes, within
//!   16777216 elements (a sparse array's length counts, not its items), or work in parts"`. An
//!   array of 2^24 elements takes 256 MiB, four times the default heap, so no array that fits is
//!   refused, and QuickJS walks 2^24 holes in 0.3 to 1 s of an optimized build (measured on a
//!   loaded two-core machine), well within the default 2 s. The length is read once: an
//!   array's or a string's own, anything else's through a view that answers that length to the
//!   walk, so a getter or a Proxy cannot answer a small length to the check and a large one to
//!   the walk; `concat`, `flat` and `flatMap` copy each array by a call of its own, its length
//!   checked right before. `TypedArray.prototype.join` and `JSON.stringify`'s replacer array
//!   have the same bound.
//! - `TypedArray.prototype` `sort` and `toSorted` without a comparator: at most **4,194,304**
//!   (2^22) elements (n log n comparisons in C, 0.4 to 0.8 s there; with a comparator each
//!   comparison is a call, which the time limit stops).
//! - A regular expression compiled at run time (`new RegExp`, `RegExp`, `RegExp.prototype
//!   .compile`, and `match`, `matchAll` or `search` given a string): at most **65,536**
//!   characters (65,536 alternatives compile in a third of a second, 2^20 in over a minute).
//!   `RegExp` is now a Proxy of the original, and `RegExp.prototype.constructor` with it.
//! - A Proxy's `ownKeys` trap: QuickJS compares the keys it returns with each other and with the
//!   target's; at most 2^28 pairs (16,384 keys for a target of as many), through the handler
//!   the guarded `Proxy` and `Proxy.revocable` give QuickJS (traps see that view of the handler
//!   as `this`).
//!
//! And made interruptible, with the same results:
//!
//! - `String.prototype` `indexOf`, `lastIndexOf`, `includes`, `split`, `replace` and
//!   `replaceAll` with a string compare the needle at every position, up to n × m comparisons;
//!   past 2^27 the search runs in windows of about 2^20 comparisons, the time checked between
//!   two.
//! - `String.raw` runs in JavaScript (QuickJS's loop goes on past a failed allocation).
//! - `Iterator.prototype.drop` and the `Set.prototype` methods that take another set (`union`,
//!   `intersection`, `difference`, `symmetricDifference`, `isSupersetOf`, `isDisjointFrom`)
//!   step the other iterator through a JavaScript `next`.
//!
//! Time between checks: a built-in call counts as one of QuickJS's 10,000 checks however long it
//! runs, so a loop of calls of a few milliseconds each would run on for minutes past the time
//! limit. Every guarded call, and the calls of other built-ins whose cost grows with their input
//! (`String.prototype` case conversion, `normalize`, `localeCompare`, `trim*`, `pad*`,
//! `repeat`, `isWellFormed`, `toWellFormed`; `Array.prototype` `toReversed`, `toSorted`,
//! `toSpliced`, `with`; the linear `TypedArray.prototype` methods; `JSON.parse`,
//! `JSON.stringify`, `Object.keys`, `values`, `entries`, `getOwnPropertyNames`,
//! `Reflect.ownKeys`, `Array.from`), counts the elements or characters it handles and checks
//! the time every 2^20 of them. A guarded call costs about half a microsecond more than the
//! original; `concat`, `flat` and `flatMap`, which copy in parts, a few microseconds.
//!
//! Not covered, each bounded by the heap but able to run past the time limit in one step:
//! converting a BigInt of about a million bits to a decimal string (`String(big)`,
//! `` `${big}` ``: quadratic, 3 to 4 s), one call of a linear built-in over the longest string
//! the heap holds (`'x'.repeat(2 ** 25).replaceAll('', '')`: about a second), typed-array
//! constructors copying a large array, compiling a huge regular expression written in the
//! program or in text given to `eval` or `Function`, and loops of such steps that are no calls
//! (an implicit conversion is none).
//!
//! # Threads
//!
//! [`ScriptEngine::run`] blocks the calling thread until the program ends, and runs the
//! program on a thread of its own, with a native stack of [`ScriptLimits::stack_bytes`] plus
//! 1 MiB, so the stack limit is always reached before the end of the real stack. The calling
//! thread answers for the host: it runs [`ScriptHost::call`], [`ScriptHost::log`] and
//! [`ScriptHost::interrupted`], so the host sees every call on the thread that called `run`.
//! The reason is that the crate is `#![forbid(unsafe_code)]` and every function handed to
//! QuickJS must be `'static`, while the host is a borrowed `&dyn ScriptHost`: the program's
//! functions send requests to the calling thread instead, one at a time.
//!
//! [`Script::functions`]: toolcat::code_mode::Script::functions
//! [`ScriptHost::log`]: toolcat::code_mode::ScriptHost::log
//! [`ScriptHost::call`]: toolcat::code_mode::ScriptHost::call
//! [`ScriptHost::interrupted`]: toolcat::code_mode::ScriptHost::interrupted
//! [`HostError::fatal`]: toolcat::code_mode::HostError::fatal
//! [`ScriptLimits::console_bytes`]: toolcat::code_mode::ScriptLimits::console_bytes
//! [`ScriptLimits::memory_bytes`]: toolcat::code_mode::ScriptLimits::memory_bytes
//! [`ScriptLimits::stack_bytes`]: toolcat::code_mode::ScriptLimits::stack_bytes
//! [`ScriptLimits::cpu_time`]: toolcat::code_mode::ScriptLimits::cpu_time
//! [`ScriptLimits::output_bytes`]: toolcat::code_mode::ScriptLimits::output_bytes

#![forbid(unsafe_code)]

mod failure;
mod guard;
mod host;
mod json;
mod program;

use std::sync::{mpsc, Arc};
use std::thread;

use toolcat::code_mode::{
    FailureKind, Script, ScriptEngine, ScriptFailure, ScriptHost, ScriptReturn,
};

use crate::host::{Bridge, Shared, LOG_BACKLOG};

/// Native stack the program's thread has beyond [`ScriptLimits::stack_bytes`]: room for the
/// engine's own frames past its stack check and for this crate's.
///
/// [`ScriptLimits::stack_bytes`]: toolcat::code_mode::ScriptLimits::stack_bytes
const STACK_MARGIN: usize = 1 << 20;

/// The Code Mode script engine on QuickJS: see the [crate] docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct QuickJs;

impl QuickJs {
    /// The engine's name, as [`ScriptEngine::name`] gives it.
    pub const NAME: &'static str = "QuickJS-ng (rquickjs 0.14)";

    /// The engine (it holds nothing: every [`ScriptEngine::run`] starts a fresh runtime).
    pub const fn new() -> QuickJs {
        QuickJs
    }
}

impl ScriptEngine for QuickJs {
    fn name(&self) -> &str {
        QuickJs::NAME
    }

    fn run(
        &self,
        script: &Script<'_>,
        host: &dyn ScriptHost,
    ) -> Result<ScriptReturn, ScriptFailure> {
        if let Some(reason) = host.interrupted() {
            return Err(failure::failure(FailureKind::Interrupted, reason));
        }
        let stack = script
            .limits
            .stack_bytes
            .max(program::MIN_STACK_BYTES)
            .saturating_add(STACK_MARGIN);
        thread::scope(|scope| {
            // Owned here, so a panic of the host's drops them and the program's thread, which
            // waits on them, ends before the scope joins it.
            let (request_sender, requests) = mpsc::sync_channel(LOG_BACKLOG);
            let (replies, reply_receiver) = mpsc::sync_channel(1);
            let shared = Arc::new(Shared::default());
            let bridge = Bridge::new(
                request_sender,
                reply_receiver,
                Arc::clone(&shared),
                script.limits,
            );
            let program = thread::Builder::new()
                .name("toolcat-quickjs".to_owned())
                .stack_size(stack)
                .spawn_scoped(scope, move || program::run(script, bridge))
                .map_err(|error| {
                    failure::failure(
                        FailureKind::Engine,
                        format!(
                            "the engine's thread (with a {} stack) could not start: {error}",
                            failure::bytes(stack)
                        ),
                    )
                })?;
            // Until the program's thread ends and drops its sender.
            host::serve(host, &requests, &replies, &shared);
            program.join().unwrap_or_else(|panic| {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|text| (*text).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".to_owned());
                Err(failure::failure(
                    FailureKind::Engine,
                    format!("the engine failed: {why}"),
                ))
            })
        })
    }
}
