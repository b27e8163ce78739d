//! `toolcat serve --http --metrics`: the metrics a scrape reads after real calls (a success, a
//! rate-limit refusal), their help lines and buckets, no argument value in them, and the
//! listener's refusals (foreign `Host`, another path, a non-loopback address).

use std::process::{Child, Command, Stdio};

use serde_json::json;

/// `toolcat serve --http 127.0.0.1:0 --metrics 127.0.0.1:0 ARGS`, with the MCP and metrics
/// addresses it printed.
fn spawn(args: &[&str]) -> (Child, String, String) {
    let args: Vec<&str> = ["--metrics", "127.0.0.1:0"]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    let served = crate::served::start("127.0.0.1:0", &args);
    (served.child, served.mcp, served.metrics.unwrap_or_default())
}

/// One HTTP/1.1 request to `addr` with `Host: host`; returns the status, the head and the body.
fn http(
    addr: &str,
    host: &str,
    method: &str,
    path: &str,
    extra: &str,
    body: &str,
) -> (u16, String, String) {
    let headers = format!("Host: {host}\r\n{extra}");
    crate::served::http(addr, method, path, &headers, body.len(), body.as_bytes())
}

/// The value of the sample of `name` whose labels are exactly `labels` (in any order).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix('{')?;
        let (set, value) = rest.split_once("} ")?;
        let mut have: Vec<&str> = set.split(',').collect();
        let mut want: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        have.sort_unstable();
        want.sort();
        (have == want).then(|| value.trim().parse().ok())?
    })
}

#[test]
fn a_scrape_counts_calls_refusals_and_requests_and_never_an_argument_value() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("secret-argument.txt"), "hello\n").unwrap();
    // The reference catalog with `read_file` limited to one call a minute.
    let mut doc: toml_edit::DocumentMut = toolcat_cli::REFERENCE_SOURCE.parse().unwrap();
    let row = doc["tool"]
        .as_array_of_tables_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["name"].as_str() == Some("read_file"))
        .unwrap();
    row["rate_limit"] = toml_edit::value("1/min");
    let catalog = ws.path().join("tools.toml");
    std::fs::write(&catalog, doc.to_string()).unwrap();
    let store = ws.path().join("calls.sqlite");
    let (mut child, mcp, metrics) = spawn(&[
        "--catalog",
        catalog.to_str().unwrap(),
        "--profile",
        "coding",
        "--exposure",
        "read-only",
        "--workspace",
        ws.path().to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "metrics-test", "version": "1"}}});
    let (status, head, _) = http(&mcp, &mcp, "POST", "/mcp", "", &initialize.to_string());
    assert_eq!(status, 200, "{head}");
    let session = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_string())
        })
        .expect("a session id");
    let extra = format!("Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = http(&mcp, &mcp, "POST", "/mcp", &extra, &initialized.to_string());
    assert_eq!(status, 202);
    for id in [2, 3] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "secret-argument.txt"}}});
        let (status, _, body) = http(&mcp, &mcp, "POST", "/mcp", &extra, &call.to_string());
        assert_eq!(status, 200, "{body}");
        let refused = body.contains("rate-limited");
        assert_eq!(
            refused,
            id == 3,
            "the second call is over the limit: {body}"
        );
    }
    // A request with a foreign `Host` is refused and counted too.
    let (status, _, _) = http(&mcp, "evil.example", "POST", "/mcp", &extra, "{}");
    assert_eq!(status, 403);

    let (status, head, text) = http(&metrics, &metrics, "GET", "/metrics", "", "");
    assert_eq!(status, 200, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    let calls = |state: &str, error: &str| {
        sample(
            &text,
            "toolcat_calls_total",
            &[("tool", "read_file"), ("state", state), ("error", error)],
        )
    };
    assert_eq!(calls("succeeded", "none"), Some(1.0), "{text}");
    assert_eq!(calls("failed", "rate-limited"), Some(1.0), "{text}");
    assert_eq!(
        sample(
            &text,
            "toolcat_rate_limit_refusals_total",
            &[("tool", "read_file")]
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "toolcat_call_duration_seconds_count",
            &[("tool", "read_file"), ("state", "succeeded")]
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        text.contains("toolcat_call_duration_seconds_bucket{tool=\"read_file\",state=\"succeeded\",le=\"0.0005\"}"),
        "the histogram has the documented buckets: {text}"
    );
    let posts_ok = sample(
        &text,
        "toolcat_http_requests_total",
        &[("method", "POST"), ("status", "200")],
    );
    assert!(posts_ok.is_some_and(|n| n >= 3.0), "{text}");
    assert_eq!(
        sample(
            &text,
            "toolcat_http_requests_total",
            &[("method", "POST"), ("status", "403")]
        ),
        Some(1.0),
        "{text}"
    );
    // Every metric was recorded above, so each has its help line.
    for m in toolcat::telemetry::METRICS {
        let help = format!("# HELP {} {}", m.name, m.help);
        assert!(text.contains(&help), "no `{help}`: {text}");
    }
    assert!(
        !text.contains("secret-argument"),
        "an argument value is in the metrics: {text}"
    );
    assert!(!text.contains(&session), "the session id is in the metrics");

    // The listener's refusals.
    let (status, _, _) = http(&metrics, "evil.example", "GET", "/metrics", "", "");
    assert_eq!(status, 403, "a foreign Host (DNS rebinding) is refused");
    let (status, _, body) = http(&metrics, &metrics, "GET", "/other", "", "");
    assert_eq!(status, 404);
    assert!(body.contains("/metrics"), "{body}");
    let (status, _, _) = http(&metrics, &metrics, "POST", "/metrics", "", "");
    assert_eq!(status, 405);
    child.kill().unwrap();
    let _ = child.wait();
}

#[test]
fn a_metrics_address_that_is_not_loopback_is_refused_naming_the_fix() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolcat"))
        .args(["serve", "--profile", "coding", "--exposure", "read-only"])
        .args(["--http", "127.0.0.1:0", "--metrics", "0.0.0.0:9464"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`--metrics 0.0.0.0:9464` is not a loopback address"),
        "{stderr}"
    );
    assert!(stderr.contains("bind `127.0.0.1`"), "{stderr}");
}
