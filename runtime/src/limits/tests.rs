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
            let got = store
                .acquire_rate(&tool, TOOL_KEY, l, now)
                .unwrap()
                .unwrap();
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
        store
            .acquire_rate("t", TOOL_KEY, l, BASE_NS)
            .unwrap()
            .unwrap(),
        Acquire::Granted
    );
    assert_eq!(
        store
            .acquire_rate("t", TOOL_KEY, l, BASE_NS)
            .unwrap()
            .unwrap(),
        Acquire::Granted
    );
    let Acquire::Refused { retry_after_ms } = store
        .acquire_rate("t", TOOL_KEY, l, BASE_NS)
        .unwrap()
        .unwrap()
    else {
        panic!("the third call within the window is refused");
    };
    assert_eq!(retry_after_ms, 30_000, "2/min: one call every 30 s");
    // Another key of the same tool, and another tool, have limits of their own.
    assert_eq!(
        store
            .acquire_rate("t", "client-a", l, BASE_NS)
            .unwrap()
            .unwrap(),
        Acquire::Granted
    );
    assert_eq!(
        store
            .acquire_rate("u", TOOL_KEY, l, BASE_NS)
            .unwrap()
            .unwrap(),
        Acquire::Granted
    );
    let later = BASE_NS + 29_999_000_000;
    assert_eq!(
        store
            .acquire_rate("t", TOOL_KEY, l, later)
            .unwrap()
            .unwrap(),
        Acquire::Refused { retry_after_ms: 1 }
    );
    let then = BASE_NS + 30_000_000_000;
    assert_eq!(
        store.acquire_rate("t", TOOL_KEY, l, then).unwrap().unwrap(),
        Acquire::Granted
    );
    assert!(matches!(
        store.acquire_rate("t", TOOL_KEY, l, then).unwrap().unwrap(),
        Acquire::Refused { .. }
    ));
    // A limit of zero calls limits nothing, as the in-memory limiter.
    assert_eq!(Gcra::of(limit(0, 60)), None);
    assert_eq!(
        store
            .acquire_rate("z", TOOL_KEY, limit(0, 60), BASE_NS)
            .unwrap()
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
            store
                .acquire_rate("t", TOOL_KEY, l, BASE_NS + i)
                .unwrap()
                .unwrap()
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

/// A store opened read-only (as `toolcat calls` opens one) refuses to take a call from a limit,
/// naming the store, on a file of the current schema and on one of version 4, which has no
/// `rate_limits` table until a writer migrates it.
#[test]
fn a_read_only_store_refuses_to_take_a_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.sqlite");
    drop(CallStore::open(&path).unwrap());
    for version in [crate::records::SCHEMA_VERSION, 4] {
        if version == 4 {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch("DROP TABLE rate_limits; PRAGMA user_version = 4")
                .unwrap();
        }
        let ro = CallStore::open_read_only(&path).unwrap();
        let e = ro
            .acquire_rate("t", TOOL_KEY, limit(3, 60), BASE_NS)
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(e, StoreError::ReadOnly { .. }),
            "version {version}: {e}"
        );
    }
}

/// A state written under a stricter limit (the row's `rate_limit` was loosened since) or by a
/// clock that ran ahead makes a call wait one window of the current limit at most; a state far
/// behind counts as now.
#[test]
fn a_loosened_limit_or_a_state_far_ahead_waits_one_window_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.sqlite");
    let store = CallStore::open(&path).unwrap();
    // 1/hour: one call, then the state is an hour ahead.
    assert_eq!(
        store
            .acquire_rate("t", TOOL_KEY, limit(1, 3600), BASE_NS)
            .unwrap()
            .unwrap(),
        Acquire::Granted
    );
    // Loosened to 100 per second: the old state waits a second at most, not an hour.
    let fast = limit(100, 1);
    let answer = store
        .acquire_rate("t", TOOL_KEY, fast, BASE_NS + 1)
        .unwrap()
        .unwrap();
    match answer {
        Acquire::Granted => {}
        Acquire::Refused { retry_after_ms } => assert!(retry_after_ms <= 1_000, "{answer:?}"),
    }
    for stored in [i64::MAX, i64::MIN, BASE_NS + 10 * 3_600_000_000_000] {
        let updated = store.with_sqlite(|conn| {
            conn.execute(
                "UPDATE rate_limits SET tat_ns = ?1 WHERE tool = 't'",
                [stored],
            )
        });
        assert_eq!(updated.map(Result::unwrap), Some(1));
        let answer = store
            .acquire_rate("t", TOOL_KEY, fast, BASE_NS + 2)
            .unwrap()
            .unwrap();
        match answer {
            Acquire::Granted => assert_eq!(stored, i64::MIN, "{answer:?}"),
            Acquire::Refused { retry_after_ms } => {
                assert!(retry_after_ms <= 1_000, "stored {stored}: {answer:?}");
            }
        }
    }
    // With the limit alone nothing changes: the governor comparison above still holds, and a
    // burst of 100 takes 100 calls before the first refusal.
    let fresh = limit(100, 1);
    let granted = (0..101)
        .filter(|i| {
            store
                .acquire_rate("u", TOOL_KEY, fresh, BASE_NS + i)
                .unwrap()
                .unwrap()
                == Acquire::Granted
        })
        .count();
    assert_eq!(granted, 100);
}

/// A state that is not an integer (a row edited outside toolcat) is decided afresh and replaced,
/// instead of failing every call of the tool.
#[test]
fn a_state_that_is_not_an_integer_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let store = CallStore::open(&dir.path().join("calls.sqlite")).unwrap();
    let l = limit(2, 60);
    assert_eq!(
        store
            .acquire_rate("t", TOOL_KEY, l, BASE_NS)
            .unwrap()
            .unwrap(),
        Acquire::Granted
    );
    for bad in ["'abc'", "1.5", "x'00'"] {
        let updated = store.with_sqlite(|conn| {
            conn.execute(&format!("UPDATE rate_limits SET tat_ns = {bad}"), [])
        });
        assert_eq!(updated.map(Result::unwrap), Some(1));
        assert_eq!(
            store
                .acquire_rate("t", TOOL_KEY, l, BASE_NS + 1)
                .unwrap()
                .unwrap(),
            Acquire::Granted,
            "state {bad}"
        );
        let kind = store.with_sqlite(|conn| {
            conn.query_row("SELECT typeof(tat_ns) FROM rate_limits", [], |r| {
                r.get::<_, String>(0)
            })
        });
        assert_eq!(kind.map(Result::unwrap).as_deref(), Some("integer"));
    }
}
