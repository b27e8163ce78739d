//! Guards around QuickJS built-ins whose C code runs long without asking the interrupt handler,
//! so that neither [`ScriptLimits::cpu_time`] nor [`ScriptHost::interrupted`] could stop them
//! (the crate docs list them and how each now ends).
//!
//! QuickJS asks its handler from the interpreter (on calls and backward jumps) and from a few
//! built-ins' own loops (`indexOf`, `includes`, the callback methods, regular expression
//! matching), and only every 10,000 of those checks. Other built-ins run their C loop to the
//! end: `Array.prototype.join.call({ length: 2 ** 40 }, "")` walks 2^40 holes and never ends.
//! rquickjs offers no way into that loop (the interrupt counter and the allocator are out of
//! reach of a crate without `unsafe`), so before the program runs, `guard.js` replaces each such
//! method with a wrapper that bounds what it lets the original do; the original stays in a
//! closure the program cannot reach, and a program that replaces a wrapper changes only its own
//! world. Wrappers keep the original's `name`, `length` and property attributes.
//!
//! The engine gives the script two functions: `tick`, whether the program must stop now
//! ([`Bridge::should_stop`]), which the wrappers ask every [`CHARGE`] elements or characters of
//! work they let through (a built-in call is one of QuickJS's 10,000 checks however long it
//! runs, so a loop of long calls would otherwise run on far past the time limit; once the
//! program must stop, a wrapper spins until QuickJS asks its handler, at most 10,000 turns);
//! and `isConstructor`.
//!
//! [`ScriptLimits::cpu_time`]: toolcat::code_mode::ScriptLimits::cpu_time
//! [`ScriptHost::interrupted`]: toolcat::code_mode::ScriptHost::interrupted

use std::rc::Rc;

use rquickjs::context::EvalOptions;
use rquickjs::{Ctx, Function, Object, Value};

use crate::host::Bridge;

/// Elements one guarded call may walk: 2^24 (16,777,216). An array of that many elements
/// takes 256 MiB (16 bytes a value), four times the default memory limit, so no array that fits
/// is refused; QuickJS's own walk of that many holes takes 0.3 to 0.95 s in an optimized build
/// on a two-core machine under a load of 5 (`join` 0.28, `reverse` 0.34, `slice` 0.43, `sort`
/// 0.69, `splice` 0.67, `concat` 0.71, `copyWithin` on an array-like 0.95, a typed array's
/// `join` 0.95), so well within the default 2 s on an idle one.
pub(crate) const WALK: u32 = 1 << 24;

/// Elements one typed-array sort without a comparator may sort: 2^22 (4,194,304): 0.38 to
/// 0.82 s of comparisons by element type in the same measurement (32-bit floats the slowest); at
/// 2^23, 32-bit floats took 2.5 s.
pub(crate) const SORT: u32 = 1 << 22;

/// Comparisons one string search may make in QuickJS's own loop, (n - m + 1) × m: 2^27, 0.21 s
/// at the worst in the same measurement; past it the search runs in windows of about
/// [`CHARGE`] comparisons, the engine asked between two.
pub(crate) const SEARCH: u32 = 1 << 27;

/// Characters of a regular expression compiled at run time: 2^16 (65,536). At that length the
/// slowest patterns measured compiled in 0.1 to 0.3 s (32,767 alternatives; a case-insensitive
/// class of 10,000 ranges); 65,536 alternatives took 0.34 s, 2^20 of them over a minute.
pub(crate) const PATTERN: u32 = 1 << 16;

/// Key pairs a Proxy's `ownKeys` result may take QuickJS to compare: 2^28 (16,384 keys for a
/// target of as many or fewer): 0.12 s, or 0.27 s against a non-extensible target of 16,384
/// keys; 2^18 keys never ended.
pub(crate) const KEYS: u32 = 1 << 28;

/// Elements or characters of guarded and counted calls between two questions to the engine:
/// 2^20, about a millisecond of work.
pub(crate) const CHARGE: u32 = 1 << 20;

/// The file name of the guards in stack traces (not the program's, whose frames give a
/// failure its line).
const FILE_NAME: &str = "toolcat-guard";

/// Installs the guards in the context, before the program runs.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, bridge: &Rc<Bridge>) -> rquickjs::Result<()> {
    let mut options = EvalOptions::default();
    options.strict = true;
    options.filename = Some(FILE_NAME.to_owned());
    let installer: Function<'js> = ctx.eval_with_options(include_str!("guard.js"), options)?;

    let hooks = Object::new(ctx.clone())?;
    let tick_bridge = Rc::clone(bridge);
    hooks.set(
        "tick",
        Function::new(ctx.clone(), move || tick_bridge.should_stop())?,
    )?;
    hooks.set(
        "isConstructor",
        Function::new(ctx.clone(), |value: Value<'js>| value.is_constructor())?,
    )?;

    let limits = Object::new(ctx.clone())?;
    limits.set("walk", WALK)?;
    limits.set("sort", SORT)?;
    limits.set("search", SEARCH)?;
    limits.set("pattern", PATTERN)?;
    limits.set("keys", KEYS)?;
    limits.set("charge", CHARGE)?;

    installer.call::<_, ()>((hooks, limits))
}
