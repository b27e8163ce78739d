use std::time::Duration;

use governor::clock::{Clock as _, FakeRelativeClock};
use governor::RateLimiter;

use super::*;

/// A moment well after the epoch, as the store's clock reads today (2026), in nanoseconds.
const BASE_NS: i64 = 1_780_000_000_123_456_789;

fn limit(calls: u32, window_secs: u32) -> RateLimit {
    RateLimit { calls, window_secs }
}

/// The SQLite GCRA answers exactly as the coordinator's in-memory `governor` limiter does, call
/// for call, on seeded sequences with an explicit clock: bursts, waits shorter and longer than
/// the emission interval, limits whose window does not divide evenly, each limit's own key.
#[test]
fn sqlite_gcra_answers_as_governor_does_on_the_same_calls() {
    let store = CallStore::in_memory().unwrap();
    let limits = [
        limit(2, 60),
        limit(10, 60),
        limit(3, 1),
        limit(7, 60),
        limit(5, 3600),
        limit(1, 1),
    ];
    let mut rng = fastrand::Rng::with_seed(20);
    let (mut granted, mut refused) = (0, 0);
    for (n, l) in limits.into_iter().enumerate() {
        let clock = FakeRelativeClock::default();
        let limiter = RateLimiter::direct_with_clock(quota(l).unwrap(), clock.clone());
        let gcra = Gcra::of(l).unwrap();
        let mut now = BASE_NS;
        let tool = format!("tool-{n}");
        for step in 0..400 {
            // Mostly bursts and waits around the emission interval, now and then a long pause.
            let wait_ns = match rng.u8(0..10) {
                0..=3 => 0,
                4..=8 => rng.i64(0..=gcra.t_ns * 2),
                _ => rng.i64(0..=gcra.t_ns * i64::from(l.calls) * 2),
            };
            now += wait_ns;
            clock.advance(Duration::from_nanos(u64::try_from(wait_ns).unwrap()));
            // `governor`'s answer, as the coordinator words it (ms rounded down, at least 1).
            let expected = match limiter.check() {
                Ok(()) => Acquire::Granted,
                Err(not_until) => Acquire::Refused {
                    retry_after_ms: u64::try_from(
                        not_until.wait_time_from(clock.now()).as_millis(),
                    )
                    .unwrap_or(u64::MAX)
                    .max(1),
                },
            };
            let got = store.acquire_rate(&tool, TOOL_KEY, l, now).unwrap();
            assert_eq!(got, expected, "{l:?}, call {step} at +{} ns", now - BASE_NS);
            match got {
                Acquire::Granted => granted += 1,
                Acquire::Refused { .. } => refused += 1,
            }
        }
    }
    assert!(
        granted > 300 && refused > 300,
        "both answers are exercised: {granted} granted, {refused} refused"
    );
}

/// A burst of the whole window's calls, then one call per emission interval; a refusal is not
/// counted, so waiting the answered time is enough.
#[test]
fn a_refused_call_is_not_counted_and_its_retry_after_is_enough() {
    let store = CallStore::in_memory().unwrap();
    let l = limit(2, 60);
    assert_eq!(
        store.acquire_rate("t", TOOL_KEY, l, BASE_NS).unwrap(),
        Acquire::Granted
    );
    assert_eq!(
        store.acquire_rate("t", TOOL_KEY, l, BASE_NS).unwrap(),
        Acquire::Granted
    );
    let Acquire::Refused { retry_after_ms } =
        store.acquire_rate("t", TOOL_KEY, l, BASE_NS).unwrap()
    else {
        panic!("the third call within the window is refused");
    };
    assert_eq!(retry_after_ms, 30_000, "2/min: one call every 30 s");
    // Another key of the same tool, and another tool, have limits of their own.
    assert_eq!(
        store.acquire_rate("t", "client-a", l, BASE_NS).unwrap(),
        Acquire::Granted
    );
    assert_eq!(
        store.acquire_rate("u", TOOL_KEY, l, BASE_NS).unwrap(),
        Acquire::Granted
    );
    let later = BASE_NS + 29_999_000_000;
    assert_eq!(
        store.acquire_rate("t", TOOL_KEY, l, later).unwrap(),
        Acquire::Refused { retry_after_ms: 1 }
    );
    let then = BASE_NS + 30_000_000_000;
    assert_eq!(
        store.acquire_rate("t", TOOL_KEY, l, then).unwrap(),
        Acquire::Granted
    );
    assert!(matches!(
        store.acquire_rate("t", TOOL_KEY, l, then).unwrap(),
        Acquire::Refused { .. }
    ));
    // A limit of zero calls limits nothing, as the in-memory limiter.
    assert_eq!(Gcra::of(limit(0, 60)), None);
    assert_eq!(
        store
            .acquire_rate("z", TOOL_KEY, limit(0, 60), BASE_NS)
            .unwrap(),
        Acquire::Granted
    );
}

/// Two stores on one file (two processes) share the limit; the table is created on first use
/// in a store file of the current schema, which opens again afterwards.
#[test]
fn stores_on_one_file_share_each_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.sqlite");
    let a = CallStore::open(&path).unwrap();
    let b = CallStore::open(&path).unwrap();
    let l = limit(3, 60);
    let answers: Vec<Acquire> = (0..6)
        .map(|i| {
            let store = if i % 2 == 0 { &a } else { &b };
            store.acquire_rate("t", TOOL_KEY, l, BASE_NS + i).unwrap()
        })
        .collect();
    assert_eq!(
        answers.iter().filter(|a| **a == Acquire::Granted).count(),
        3,
        "{answers:?}"
    );
    assert!(answers[3..]
        .iter()
        .all(|a| matches!(a, Acquire::Refused { .. })));
    drop((a, b));
    CallStore::open(&path).expect("the store opens again with its rate_limits table");
    CallStore::open_read_only(&path).expect("and read-only");
}

#[cfg(feature = "postgres")]
mod postgres {
    use std::process::Command;
    use std::sync::Arc;

    use super::*;

    /// A PostgreSQL server for the test: `TOOLCAT_TEST_POSTGRES_URL`, else one started by
    /// `tests/services/postgres` (stopped on drop); `None` (after printing `skipped: ...`) when
    /// none can be had, unless `TOOLCAT_REQUIRE_POSTGRES=1`, which fails instead.
    struct Server {
        url: String,
        dir: Option<tempfile::TempDir>,
    }

    const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/services/postgres");

    impl Server {
        fn get() -> Option<Server> {
            if let Ok(url) = std::env::var("TOOLCAT_TEST_POSTGRES_URL") {
                return Some(Server { url, dir: None });
            }
            let dir = tempfile::tempdir().unwrap();
            // As root the server runs as the unprivileged `postgres` user, which must reach DIR.
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            let started = Command::new(SCRIPT)
                .arg("start")
                .arg(dir.path().join("pg"))
                .output();
            let why = match started {
                Ok(o) if o.status.success() => {
                    let url = String::from_utf8_lossy(&o.stdout).trim().to_string();
                    return Some(Server {
                        url,
                        dir: Some(dir),
                    });
                }
                Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                Err(e) => format!("{SCRIPT}: {e}"),
            };
            assert!(
                std::env::var_os("TOOLCAT_REQUIRE_POSTGRES").is_none_or(|v| v != "1"),
                "no PostgreSQL and TOOLCAT_REQUIRE_POSTGRES=1 requires one: {why}; set TOOLCAT_TEST_POSTGRES_URL or install PostgreSQL's server"
            );
            eprintln!("skipped: no PostgreSQL ({why}); set TOOLCAT_TEST_POSTGRES_URL, or TOOLCAT_REQUIRE_POSTGRES=1 to fail instead");
            None
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            if let Some(dir) = &self.dir {
                let _ = Command::new(SCRIPT)
                    .arg("stop")
                    .arg(dir.path().join("pg"))
                    .output();
            }
        }
    }

    fn pool(url: &str, size: usize) -> deadpool_postgres::Pool {
        let mut config = deadpool_postgres::Config::new();
        config.url = Some(url.to_string());
        config.pool = Some(deadpool_postgres::PoolConfig::new(size));
        config
            .create_pool(
                Some(deadpool_postgres::Runtime::Tokio1),
                tokio_postgres::NoTls,
            )
            .expect("the pool is configured")
    }

    /// A tool name no earlier run against the same server used.
    fn fresh_tool(what: &str) -> String {
        format!("{what}-{}-{}", std::process::id(), now_ns())
    }

    /// 200 concurrent acquires of one 10/min limit through four pools (as four replicas) grant
    /// exactly 10; every refusal says to retry within the 6 s emission interval; and the
    /// server's clock decides, so a refused caller that waits its answer is granted.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_sharing_postgres_grant_a_limit_once_between_them() {
        let Some(server) = Server::get() else {
            return;
        };
        let mut replicas = Vec::new();
        for _ in 0..4 {
            let limits = PostgresRateLimits::new(pool(&server.url, 8), "test")
                .await
                .expect("the rate_limits table is created");
            replicas.push(Arc::new(limits));
        }
        let tool = Arc::new(fresh_tool("ten-per-minute"));
        let started = std::time::Instant::now();
        let tasks: Vec<_> = (0..200)
            .map(|i| {
                let limits = Arc::clone(&replicas[i % replicas.len()]);
                let tool = Arc::clone(&tool);
                tokio::spawn(async move { limits.acquire(&tool, TOOL_KEY, limit(10, 60)).await })
            })
            .collect();
        let mut answers = Vec::new();
        for task in tasks {
            answers.push(task.await.unwrap().expect("the statement runs"));
        }
        let elapsed = started.elapsed();
        let granted = answers.iter().filter(|a| **a == Acquire::Granted).count();
        assert_eq!(granted, 10, "exactly the limit is granted across replicas");
        for a in &answers {
            if let Acquire::Refused { retry_after_ms } = a {
                assert!((1..=6_000).contains(retry_after_ms), "{a:?}");
            }
        }
        eprintln!("200 concurrent acquires through 4 pools: 10 granted in {elapsed:?}");

        // 5 per second: a burst of 5, then the sixth waits its answer and is granted.
        let limits = &replicas[0];
        let tool = fresh_tool("five-per-second");
        for _ in 0..5 {
            assert_eq!(
                limits.acquire(&tool, TOOL_KEY, limit(5, 1)).await.unwrap(),
                Acquire::Granted
            );
        }
        let Acquire::Refused { retry_after_ms } =
            limits.acquire(&tool, TOOL_KEY, limit(5, 1)).await.unwrap()
        else {
            panic!("the sixth call within the second is refused");
        };
        assert!((1..=200).contains(&retry_after_ms), "{retry_after_ms}");
        tokio::time::sleep(Duration::from_millis(retry_after_ms + 5)).await;
        assert_eq!(
            limits.acquire(&tool, TOOL_KEY, limit(5, 1)).await.unwrap(),
            Acquire::Granted
        );
        drop(server);
    }

    /// A server that cannot be reached is an error naming the store, not a panic.
    #[tokio::test]
    async fn an_unreachable_server_is_a_store_error() {
        // Port 1 on loopback: nothing listens there.
        let e = PostgresRateLimits::new(
            pool("postgres://toolcat@127.0.0.1:1/toolcat", 1),
            "postgres://127.0.0.1:1/toolcat",
        )
        .await
        .expect_err("nothing listens on port 1");
        let text = e.to_string();
        assert!(
            text.contains("postgres://127.0.0.1:1/toolcat") && text.contains("server is up"),
            "{text}"
        );
    }
}
