//! Rate limits in PostgreSQL (feature `postgres`): replicas sharing one database grant a tool's
//! limit once between them. Needs a server: `TOOLCAT_TEST_POSTGRES_URL`, else one started by
//! `tests/services/postgres` (Debian's package); without one each test prints `skipped: ...`,
//! unless `TOOLCAT_REQUIRE_POSTGRES=1`, which fails instead. Built without the feature, it says
//! so and fails under `TOOLCAT_REQUIRE_POSTGRES=1` too.
//!
//! `cargo test -p toolcat --features postgres --test limits`

#[path = "../../tests/services/postgres.rs"]
mod pg;

#[cfg(not(feature = "postgres"))]
#[test]
fn replicas_sharing_postgres_grant_a_limit_once_between_them() {
    assert!(
        !pg::required(),
        "TOOLCAT_REQUIRE_POSTGRES=1 but this test was built without feature `postgres`; run `cargo test -p toolcat --features postgres --test limits`"
    );
    eprintln!("skipped: built without feature `postgres` (cargo test -p toolcat --features postgres --test limits)");
}

#[cfg(feature = "postgres")]
mod postgres {
    use std::sync::Arc;
    use std::time::Duration;

    use toolcat::limits::{Acquire, RateLimitStore, TOOL_KEY};
    use toolcat::{CallStore, LeaseTimes, RateLimit};

    fn limit(calls: u32, window_secs: u32) -> RateLimit {
        RateLimit { calls, window_secs }
    }

    /// A tool name no earlier run against the same server used.
    fn fresh_tool(what: &str) -> String {
        format!(
            "{what}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        )
    }

    /// 200 concurrent acquires of one 10/min limit through four stores (as four replicas) grant
    /// exactly 10; every refusal says to retry within the 6 s emission interval; and the
    /// server's clock decides, so a refused caller that waits its answer is granted.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_sharing_postgres_grant_a_limit_once_between_them() {
        let Some(server) = crate::pg::Server::or_skip("limits") else {
            return;
        };
        let mut replicas = Vec::new();
        for _ in 0..4 {
            let store = CallStore::connect(&server.url, LeaseTimes::default())
                .expect("the store connects and migrates its tables");
            replicas.push(Arc::new(store));
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
        eprintln!("200 concurrent acquires through 4 stores: 10 granted in {elapsed:?}");

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

        // A loosened limit, or a state far ahead or far behind (a clock that ran ahead, a row
        // edited by hand), waits one window of the current limit at most and never errs.
        let tool = fresh_tool("loosened");
        assert_eq!(
            limits
                .acquire(&tool, TOOL_KEY, limit(1, 3600))
                .await
                .unwrap(),
            Acquire::Granted
        );
        let fast = limit(100, 1);
        let within_a_window = |a: Acquire| match a {
            Acquire::Granted => true,
            Acquire::Refused { retry_after_ms } => retry_after_ms <= 1_000,
        };
        let a = limits.acquire(&tool, TOOL_KEY, fast).await.unwrap();
        assert!(within_a_window(a), "after loosening 1/hour to 100/s: {a:?}");
        let (client, connection) = tokio_postgres::connect(&server.url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        for stored in [i64::MAX, i64::MIN, i64::MIN + 1] {
            client
                .execute(
                    "UPDATE toolcat_rate_limits SET tat_ns = $1 WHERE tool = $2",
                    &[&stored, &tool],
                )
                .await
                .unwrap();
            let a = limits
                .acquire(&tool, TOOL_KEY, fast)
                .await
                .unwrap_or_else(|e| panic!("stored {stored}: {e}"));
            assert!(within_a_window(a), "stored {stored}: {a:?}");
            if stored < 0 {
                assert_eq!(a, Acquire::Granted, "a state far behind counts as now");
            }
        }
        drop(server);
    }
}
