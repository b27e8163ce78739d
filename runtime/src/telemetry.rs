//! What the runtime tells an operator about its calls and HTTP requests: `tracing` spans and
//! metrics through the [`metrics`] facade.
//!
//! **Spans** (target `toolcat::telemetry`, level info):
//! - `call`, one per [`Coordinator::call`](crate::Coordinator::call) or retry: `tool` (exported
//!   name), `profile`, `exposure` and `session` of the caller when it said them (`session` is the
//!   first 12 hex digits of the SHA-256 of the `Mcp-Session-Id`, never the id itself, which
//!   grants the session), then `call` (the record's id), `state`, `error` and `duration_ms` when
//!   it ends; a `debug` event `call ended` is emitted inside it then.
//! - `http_request`, one per request to `toolcat serve --http`: `method`, `path`, then
//!   `status` and `duration_ms` (time to the response's headers).
//! - `turn`, one per [`Session::begin_turn`](crate::session::Session::begin_turn): `turn` (its
//!   number); the calls the session makes in that turn are inside it.
//!
//! Never recorded: argument values, results, error texts, tokens or other secrets.
//!
//! **Metrics** ([`METRICS`], each documented on its constant; the README's "Observability"
//! section lists them): the facade records nothing until the host installs a recorder, as
//! `toolcat serve --metrics ADDR` does (a Prometheus recorder whose text is served at
//! `/metrics`, [`crate::mcp::serve_metrics`]). Label values come from the catalog and the code,
//! never from a request: a tool label is an exported name of the catalog (a name that resolves to
//! no tool never reaches the coordinator).
//!
//! Why the `metrics` facade rather than `prometheus-client`: recording needs no registry handed
//! through the coordinator (a library records, the binary decides where it goes, as with
//! `tracing`), and an agent that installs no recorder pays one relaxed atomic load per point.

use std::time::Duration;

use sha2::{Digest as _, Sha256};
use tracing::field::Empty;
use tracing::Span;

use crate::handler::Caller;
use crate::records::{CallId, CallState};

/// The kind of a metric, as Prometheus types it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// A count that only grows (`_total`).
    Counter,
    /// Observations counted in buckets (`_bucket`, `_sum`, `_count`).
    Histogram,
}

/// One metric the runtime records: its name, kind, labels, unit and help text.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// The Prometheus name.
    pub name: &'static str,
    /// Counter or histogram.
    pub kind: MetricKind,
    /// The label names, in the order they are documented.
    pub labels: &'static [&'static str],
    /// The unit of the value: `calls`, `requests`, `seconds`.
    pub unit: &'static str,
    /// The `# HELP` text.
    pub help: &'static str,
}

/// `toolcat_calls_total{tool, state, error}` (counter, calls): calls that reached the coordinator,
/// by tool and final state (`succeeded`, `failed`, `cancelled`, `outcome_unknown`, as the call
/// store records them) and error kind (`none`, or [`CallError::kind`](crate::CallError::kind):
/// `rate-limited`, `invalid-arguments`, `outcome-unknown`, ...). Refusals are `failed` with
/// their kind.
pub const CALLS: Metric = Metric {
    name: "toolcat_calls_total",
    kind: MetricKind::Counter,
    labels: &["tool", "state", "error"],
    unit: "calls",
    help: "Calls that reached the coordinator, by tool, final state and error kind",
};

/// `toolcat_call_duration_seconds{tool, state}` (histogram, seconds): how long a call took in the
/// coordinator, from the request to its final state (validation, approval, the handler, the
/// record), buckets [`LATENCY_BUCKETS_SECONDS`].
pub const CALL_DURATION: Metric = Metric {
    name: "toolcat_call_duration_seconds",
    kind: MetricKind::Histogram,
    labels: &["tool", "state"],
    unit: "seconds",
    help: "Time from a call's request to its final state in the coordinator",
};

/// `toolcat_rate_limit_refusals_total{tool}` (counter, calls): calls refused because their tool
/// was over its `rate_limit` (nothing ran); the same calls are in [`CALLS`] with
/// `error="rate-limited"`.
pub const RATE_LIMIT_REFUSALS: Metric = Metric {
    name: "toolcat_rate_limit_refusals_total",
    kind: MetricKind::Counter,
    labels: &["tool"],
    unit: "calls",
    help: "Calls refused over their tool's rate_limit",
};

/// `toolcat_http_requests_total{method, status}` (counter, requests): requests to the MCP
/// endpoint of `toolcat serve --http`, by HTTP method and response status (refusals included:
/// 403 foreign `Host`, 404, 413, 503 over the session limit, ...).
pub const HTTP_REQUESTS: Metric = Metric {
    name: "toolcat_http_requests_total",
    kind: MetricKind::Counter,
    labels: &["method", "status"],
    unit: "requests",
    help: "HTTP requests to the MCP endpoint, by method and response status",
};

/// `toolcat_http_request_duration_seconds{method}` (histogram, seconds): time from a request's
/// headers to its response's headers (a streamed SSE body may go on after), buckets
/// [`LATENCY_BUCKETS_SECONDS`].
pub const HTTP_REQUEST_DURATION: Metric = Metric {
    name: "toolcat_http_request_duration_seconds",
    kind: MetricKind::Histogram,
    labels: &["method"],
    unit: "seconds",
    help: "Time from an HTTP request's headers to its response's headers",
};

/// Every metric the runtime records.
pub const METRICS: [Metric; 5] = [
    CALLS,
    CALL_DURATION,
    RATE_LIMIT_REFUSALS,
    HTTP_REQUESTS,
    HTTP_REQUEST_DURATION,
];

/// The histogram buckets of the duration metrics, in seconds: 0.5 ms to 60 s.
pub const LATENCY_BUCKETS_SECONDS: [f64; 15] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0, 60.0,
];

/// Registers the help text and unit of every metric in [`METRICS`] with the installed recorder
/// (call it once, after installing one).
pub fn describe() {
    for m in METRICS {
        match m.kind {
            MetricKind::Counter => metrics::describe_counter!(m.name, m.help),
            MetricKind::Histogram => {
                metrics::describe_histogram!(m.name, metrics::Unit::Seconds, m.help)
            }
        }
    }
}

/// The first 12 hex digits of the SHA-256 of a session id: enough to follow one session in the
/// logs, useless to take it over.
fn session_digest(session: &str) -> String {
    let digest = Sha256::digest(session.as_bytes());
    digest[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// The span of one call of `tool` (exported name) made by `caller`.
pub(crate) fn call_span(tool: &str, caller: Option<&Caller>) -> Span {
    let span = tracing::info_span!(
        "call",
        tool,
        profile = Empty,
        exposure = Empty,
        session = Empty,
        call = Empty,
        state = Empty,
        error = Empty,
        duration_ms = Empty,
    );
    if let Some(caller) = caller {
        if let Some(profile) = &caller.profile {
            span.record("profile", profile.as_str());
        }
        if let Some(exposure) = caller.exposure {
            span.record("exposure", exposure.as_str());
        }
        if let Some(session) = &caller.session {
            span.record("session", session_digest(session).as_str());
        }
    }
    span
}

/// How a call ended, as its span and the metrics record it: what the coordinator knows once the
/// call's outcome is in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallEnd {
    /// The call's record, if it got one.
    pub call: Option<CallId>,
    /// The final state, as the call store records it.
    pub state: CallState,
    /// `none`, or the error's kind (`CallError::kind`).
    pub error: &'static str,
    /// Whether the call was refused by its rate limit.
    pub rate_limited: bool,
}

/// Records the end of a call of `tool` in its span and in the metrics.
pub(crate) fn call_ended(span: &Span, tool: &str, end: CallEnd, elapsed: Duration) {
    let state = end.state.as_str();
    let error = end.error;
    if let Some(id) = end.call {
        span.record("call", tracing::field::display(id));
    }
    let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    span.record("state", state);
    span.record("error", error);
    span.record("duration_ms", ms);
    tracing::debug!(parent: span, "call ended");
    let tool = tool.to_string();
    metrics::counter!(CALLS.name, "tool" => tool.clone(), "state" => state, "error" => error)
        .increment(1);
    metrics::histogram!(CALL_DURATION.name, "tool" => tool.clone(), "state" => state)
        .record(elapsed.as_secs_f64());
    if end.rate_limited {
        metrics::counter!(RATE_LIMIT_REFUSALS.name, "tool" => tool).increment(1);
    }
}

/// The span of turn `turn` of a session.
pub(crate) fn turn_span(turn: usize) -> Span {
    tracing::info_span!("turn", turn)
}

/// The span of one HTTP request.
#[cfg(feature = "mcp")]
pub(crate) fn http_span(method: &str, path: &str) -> Span {
    tracing::info_span!(
        "http_request",
        method,
        path,
        status = Empty,
        duration_ms = Empty
    )
}

/// Records the end of an HTTP request (its response's headers) in its span and the metrics.
#[cfg(feature = "mcp")]
pub(crate) fn http_ended(span: &Span, method: &str, status: u16, elapsed: Duration) {
    span.record("status", status);
    span.record(
        "duration_ms",
        u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
    );
    tracing::debug!(parent: span, "http request answered");
    let method = method.to_string();
    metrics::counter!(HTTP_REQUESTS.name, "method" => method.clone(), "status" => status.to_string())
        .increment(1);
    metrics::histogram!(HTTP_REQUEST_DURATION.name, "method" => method)
        .record(elapsed.as_secs_f64());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_name_is_prometheus_shaped_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for m in METRICS {
            assert!(m.name.starts_with("toolcat_"), "{}", m.name);
            assert!(
                m.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{}",
                m.name
            );
            match m.kind {
                MetricKind::Counter => assert!(m.name.ends_with("_total"), "{}", m.name),
                MetricKind::Histogram => assert!(m.name.ends_with("_seconds"), "{}", m.name),
            }
            assert!(seen.insert(m.name), "{} twice", m.name);
        }
    }

    #[test]
    fn a_session_id_is_logged_as_a_short_digest_only() {
        let id = "6f1c2a9e-secret-session-id";
        let d = session_digest(id);
        assert_eq!(d.len(), 12);
        assert!(d.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(!id.contains(&d));
        assert_eq!(
            d,
            session_digest(id),
            "stable, so one session can be followed"
        );
    }

    #[test]
    fn buckets_ascend() {
        assert!(LATENCY_BUCKETS_SECONDS.windows(2).all(|w| w[0] < w[1]));
    }
}
