//! The failures a program ends with, worded for the model: what happened, and how to stay within
//! the limit.

use std::time::Duration;

use toolcat::code_mode::{FailureKind, ScriptFailure, ScriptLimits};

use crate::host::Stop;

pub(crate) fn failure(kind: FailureKind, message: impl Into<String>) -> ScriptFailure {
    ScriptFailure {
        kind,
        message: message.into(),
        line: None,
    }
}

pub(crate) fn stopped(stop: Stop, limits: &ScriptLimits) -> ScriptFailure {
    match stop {
        Stop::TimeLimit => failure(
            FailureKind::TimeLimit,
            format!(
                "the program ran for more than {} (time in tool calls not counted) and was \
                 stopped: do less work in the program (fewer or shorter loops, less data at once)",
                duration(limits.cpu_time)
            ),
        ),
        Stop::Interrupted(reason) => failure(FailureKind::Interrupted, reason),
        Stop::HostGone => failure(
            FailureKind::Interrupted,
            "the program was stopped: the session stopped answering its calls",
        ),
    }
}

pub(crate) fn out_of_memory(limits: &ScriptLimits) -> ScriptFailure {
    failure(
        FailureKind::OutOfMemory,
        format!(
            "the program used more than {} of memory; nothing more runs: process less data at \
             once (request fewer or smaller results, keep only the fields you need)",
            bytes(limits.memory_bytes)
        ),
    )
}

/// An uncaught `null`: what QuickJS throws when it has no memory left for an error object. A
/// program may throw `null` itself, so the message says both.
pub(crate) fn null_thrown(limits: &ScriptLimits) -> ScriptFailure {
    failure(
        FailureKind::OutOfMemory,
        format!(
            "the program used more than {} of memory (the engine threw `null`, as it does when no \
             memory is left even for an error); nothing more runs: process less data at once \
             (request fewer or smaller results, keep only the fields you need). If the program \
             throws `null` itself, throw an Error instead",
            bytes(limits.memory_bytes)
        ),
    )
}

pub(crate) fn stack_overflow(limits: &ScriptLimits) -> ScriptFailure {
    failure(
        FailureKind::StackOverflow,
        format!(
            "the program's call stack grew past {} (recursion too deep); nothing more runs: use \
             a loop instead of deep recursion",
            bytes(limits.stack_bytes)
        ),
    )
}

pub(crate) fn output_too_large(size: usize, limits: &ScriptLimits) -> ScriptFailure {
    failure(
        FailureKind::OutputTooLarge,
        format!(
            "the result is {} of JSON, over the limit of {}: return less (only the fields and \
             items the answer needs, or a summary computed in the program)",
            bytes(size),
            bytes(limits.output_bytes)
        ),
    )
}

pub(crate) fn not_json(why: &str) -> ScriptFailure {
    failure(
        FailureKind::OutputTooLarge,
        format!(
            "the result cannot be converted to JSON ({why}): return plain data (objects, \
             arrays, strings, finite numbers, booleans, null) without cycles"
        ),
    )
}

pub(crate) fn too_deep() -> ScriptFailure {
    failure(
        FailureKind::OutputTooLarge,
        format!(
            "the result is nested more than {} levels deep (arrays and objects within one \
             another), which toolcat does not accept: flatten it",
            crate::json::MAX_DEPTH
        ),
    )
}

pub(crate) fn never_settled() -> ScriptFailure {
    failure(
        FailureKind::Exception,
        "the program's promise never settled: it awaited something nothing resolves (such as \
         `new Promise(() => {})`); await only tool calls and promises that settle",
    )
}

/// `64 MiB`, `512 KiB`, `1000 bytes`.
pub(crate) fn bytes(n: usize) -> String {
    const KIB: usize = 1 << 10;
    const MIB: usize = 1 << 20;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= 10 * MIB {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else if n >= 10 * KIB {
        format!("{:.1} KiB", n as f64 / KIB as f64)
    } else {
        format!("{n} bytes")
    }
}

/// `2 s`, `200 ms`, `1500 ms`.
pub(crate) fn duration(d: Duration) -> String {
    let millis = d.as_millis();
    if millis >= 1000 && millis.is_multiple_of(1000) {
        format!("{} s", millis / 1000)
    } else if millis > 0 {
        format!("{millis} ms")
    } else {
        format!("{} microseconds", d.as_micros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_read_as_people_write_them() {
        assert_eq!(bytes(64 << 20), "64 MiB");
        assert_eq!(bytes(512 << 10), "512 KiB");
        assert_eq!(bytes(300_000), "293.0 KiB");
        assert_eq!(bytes(1000), "1000 bytes");
        assert_eq!(duration(Duration::from_secs(2)), "2 s");
        assert_eq!(duration(Duration::from_millis(200)), "200 ms");
        assert_eq!(duration(Duration::from_micros(5)), "5 microseconds");
    }
}
