//! Rate limits whose state lives in a store, so that every process using the store shares one
//! `rate_limit`: three `toolcat call` processes on one SQLite file, or `toolcat serve` replicas
//! on one PostgreSQL database, grant a tool's declared calls per window once between them.
//!
//! # The algorithm
//! GCRA (the generic cell rate algorithm), with the parameters of the coordinator's in-memory
//! limiter (`governor`), so both answer the same sequence of calls alike: a limit of `calls`
//! per `window_secs` has the emission interval `T = window / calls` (nanoseconds, rounded
//! down, at least 1) and the tolerance `tau = T * (calls - 1)` — a burst of the whole window's
//! calls at once. The state is one *theoretical arrival time* (`tat`, nanoseconds since the Unix
//! epoch) per (tool, key): a call at `now` is refused while `now < tat - tau`, with
//! `retry_after_ms = (tat - tau - now) / 1e6` rounded down and at least 1; otherwise it is
//! granted and `tat` becomes `max(tat, now) + T`. A (tool, key) without a row is granted (its
//! `tat` is taken as `now`).
//!
//! The key is the rate-limit key within a tool: today every call of a tool shares
//! [`TOOL_KEY`]; a per-client limit (a token's identity) is another key of the same tool.
//!
//! # Where the state lives
//! - **SQLite** ([`CallStore`], a store file): table `rate_limits` in the call store's file
//!   (version 5 of its schema, [`crate::records::SCHEMA_VERSION`]),
//!   read and written inside one `BEGIN IMMEDIATE` transaction, so processes on one machine take
//!   turns; the clock is the machine's (every process reads the same one).
//! - **PostgreSQL** ([`CallStore`] on a `postgres://` URL, feature `postgres`): table
//!   `toolcat_rate_limits` (migration 2 of the store's schema); one
//!   `INSERT ... ON CONFLICT (tool, key) DO UPDATE ... WHERE ... RETURNING` statement computes
//!   GCRA in SQL with the server's `clock_timestamp()`, so replicas share one clock and their
//!   clocks' skew does not matter.
//!
//! The coordinator asks a [`RateLimitStore`] when it has one (see
//! [`crate::Coordinator::with_rate_limits`] and [`crate::Coordinator::with_store`]); without
//! one, or with an in-memory call store, which no other process can share, its in-memory
//! limiter answers alone.

use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use crate::catalog::RateLimit;
use crate::handler::BoxFuture;
use crate::records::{sqlite_error, CallStore, StoreError};

/// The rate-limit key every call of a tool shares today: the tool's whole declared limit.
pub const TOOL_KEY: &str = "";

/// What a rate limit answers to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// The call is within the limit; it has been counted.
    Granted,
    /// The call is over the limit and was not counted; a call is allowed again in
    /// `retry_after_ms` milliseconds (at least 1).
    Refused { retry_after_ms: u64 },
}

/// Rate-limit state shared beyond one process: the seam through which the coordinator takes a
/// call from a tool's `rate_limit` when the state lives in a store. [`CallStore`] implements it
/// on both of its backends (an SQLite file; PostgreSQL with feature `postgres`).
pub trait RateLimitStore: Send + Sync {
    /// Takes one call from the limit `limit` of (`tool`, `key`) now, atomically with every other
    /// process sharing the store: [`Acquire::Granted`] (counted) or [`Acquire::Refused`] (not
    /// counted, with the milliseconds to wait). `tool` is the tool's exported name; `key` is
    /// [`TOOL_KEY`] for the tool-wide limit. A limit of zero calls or a zero window limits
    /// nothing (granted, not counted), as the in-memory limiter does.
    ///
    /// # Errors
    /// [`StoreError`] when the state cannot be read or written; the coordinator then runs
    /// nothing ([`crate::CallError::Store`]).
    fn acquire<'a>(
        &'a self,
        tool: &'a str,
        key: &'a str,
        limit: RateLimit,
    ) -> BoxFuture<'a, Result<Acquire, StoreError>>;
}

/// The GCRA parameters of a limit, in nanoseconds (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gcra {
    /// The emission interval `T`: the window divided by the calls, rounded down, at least 1.
    pub(crate) t_ns: i64,
    /// The tolerance `tau = T * (calls - 1)`: how far ahead of `now` the state may run.
    pub(crate) tau_ns: i64,
}

impl Gcra {
    /// The parameters of `limit`; `None` for a limit of zero calls or a zero window, which
    /// limits nothing.
    pub(crate) fn of(limit: RateLimit) -> Option<Gcra> {
        if limit.calls == 0 || limit.window_secs == 0 {
            return None;
        }
        let window_ns = i64::from(limit.window_secs) * 1_000_000_000;
        let t_ns = (window_ns / i64::from(limit.calls)).max(1);
        Some(Gcra {
            t_ns,
            tau_ns: t_ns * (i64::from(limit.calls) - 1),
        })
    }

    /// The answer to a call at `now_ns` given the stored `tat` (`None`: no row yet), and the
    /// new `tat` to store when it is granted.
    ///
    /// A stored `tat` is first clamped to `now_ns ..= now_ns + tau + T` ([`Gcra::clamp`]): a
    /// state this limit could have written is inside it, so this changes no decision of the
    /// limit alone; a state written under a stricter limit (the row's `rate_limit` was loosened
    /// since) or by a clock that ran ahead makes a call wait one window at most, not until that
    /// state's time.
    pub(crate) fn decide(self, tat: Option<i64>, now_ns: i64) -> (Acquire, Option<i64>) {
        let tat = tat.map_or(now_ns, |t| self.clamp(t, now_ns));
        let earliest = tat.saturating_sub(self.tau_ns);
        if now_ns < earliest {
            (
                Acquire::Refused {
                    retry_after_ms: retry_after_ms(earliest - now_ns),
                },
                None,
            )
        } else {
            (
                Acquire::Granted,
                Some(tat.max(now_ns).saturating_add(self.t_ns)),
            )
        }
    }

    /// `tat` clamped to `now_ns ..= now_ns + tau + T`: the states this limit can write, a
    /// window at most ahead of now (see [`Gcra::decide`]).
    pub(crate) fn clamp(self, tat: i64, now_ns: i64) -> i64 {
        tat.clamp(
            now_ns,
            now_ns.saturating_add(self.tau_ns.saturating_add(self.t_ns)),
        )
    }
}

/// The `governor` quota of `limit` for the coordinator's in-memory limiter: [`Gcra::of`]'s
/// emission interval and a burst of all the calls, so it answers as the stores do.
pub(crate) fn quota(limit: RateLimit) -> Option<governor::Quota> {
    let gcra = Gcra::of(limit)?;
    let period = std::time::Duration::from_nanos(u64::try_from(gcra.t_ns).ok()?);
    Some(governor::Quota::with_period(period)?.allow_burst(std::num::NonZeroU32::new(limit.calls)?))
}

/// Milliseconds of a wait of `wait_ns` nanoseconds, rounded down, at least 1 (a refused call is
/// never told to retry at once).
fn retry_after_ms(wait_ns: i64) -> u64 {
    u64::try_from(wait_ns / 1_000_000).unwrap_or(0).max(1)
}

/// Now, in nanoseconds since the Unix epoch (the SQLite backend's clock).
pub(crate) fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Takes one call from `limit` of (`tool`, `key`) at `now_ns` (nanoseconds since the Unix epoch)
/// in the SQLite store `conn` (named `label` in errors): read, decide and write in one
/// `BEGIN IMMEDIATE` transaction, so concurrent processes on the file take turns. `conn` must
/// not be inside a transaction.
///
/// # Errors
/// [`StoreError::Busy`] when another process holds the file's write lock longer than the busy
/// timeout, [`StoreError::ReadOnly`] for a store opened read-only, other SQLite failures.
pub(crate) fn acquire_sqlite(
    conn: &Connection,
    label: &str,
    tool: &str,
    key: &str,
    limit: RateLimit,
    now_ns: i64,
) -> Result<Acquire, StoreError> {
    let Some(gcra) = Gcra::of(limit) else {
        return Ok(Acquire::Granted);
    };
    if conn.is_readonly("main").unwrap_or(false) {
        return Err(StoreError::ReadOnly {
            path: label.to_string(),
        });
    }
    let err = |e| sqlite_error(label, e);
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(err)?;
    // A state that is not an integer (a row edited outside toolcat) counts as no state: the
    // call is decided afresh and, when granted, its state replaces the row.
    let tat: Option<i64> = tx
        .query_row(
            "SELECT tat_ns FROM rate_limits WHERE tool = ?1 AND key = ?2",
            params![tool, key],
            |r| r.get::<_, rusqlite::types::Value>(0),
        )
        .optional()
        .map_err(err)?
        .and_then(|v| match v {
            rusqlite::types::Value::Integer(i) => Some(i),
            _ => None,
        });
    let (answer, next) = gcra.decide(tat, now_ns);
    if let Some(next) = next {
        tx.execute(
            "INSERT INTO rate_limits (tool, key, tat_ns) VALUES (?1, ?2, ?3)
             ON CONFLICT (tool, key) DO UPDATE SET tat_ns = excluded.tat_ns",
            params![tool, key, next],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
    }
    // A refusal wrote nothing: the transaction ends with its drop (a rollback).
    Ok(answer)
}

impl CallStore {
    /// Takes one call from `limit` of (`tool`, `key`) at `now_ns` (nanoseconds since the Unix
    /// epoch) in this store's SQLite `rate_limits` table ([`acquire_sqlite`]); `None` for a
    /// PostgreSQL store, whose server's clock decides instead.
    pub(crate) fn acquire_rate(
        &self,
        tool: &str,
        key: &str,
        limit: RateLimit,
        now_ns: i64,
    ) -> Option<Result<Acquire, StoreError>> {
        let label = self.label();
        self.with_sqlite(|conn| acquire_sqlite(conn, label, tool, key, limit, now_ns))
    }
}

/// The store's rate limits: an SQLite file is shared by every process that opens it, a
/// PostgreSQL database by every replica. (An in-memory store answers too, but for this process
/// only; the coordinator does not ask one.)
impl RateLimitStore for CallStore {
    fn acquire<'a>(
        &'a self,
        tool: &'a str,
        key: &'a str,
        limit: RateLimit,
    ) -> BoxFuture<'a, Result<Acquire, StoreError>> {
        if let Some(answer) = self.acquire_rate(tool, key, limit, now_ns()) {
            return Box::pin(std::future::ready(answer));
        }
        #[cfg(feature = "postgres")]
        {
            let (tool, key) = (tool.to_owned(), key.to_owned());
            let answer = self.with_postgres(move |client, label| async move {
                postgres::acquire_postgres(&client, &label, &tool, &key, limit).await
            });
            if let Some(answer) = answer {
                return Box::pin(std::future::ready(answer));
            }
        }
        unreachable!(
            "a call store is an SQLite file or, with feature `postgres`, a PostgreSQL database"
        )
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::{Acquire, Gcra};
    use crate::catalog::RateLimit;
    use crate::records::postgres::pg_error;
    use crate::records::StoreError;

    /// One call taken from the limit in one statement, with the server's clock read once: the
    /// inserted row's `tat_ns` is `now + T`, so `EXCLUDED.tat_ns - T` is `now` in the update.
    /// `$3` is `T`, `$4` is `tau` (nanoseconds). A row comes back when the call is granted;
    /// none when it is refused (the `WHERE` kept the row as it was, locked until the statement
    /// ends).
    /// `EXCLUDED.tat_ns` is `now + T`; the stored state is clamped to `now ..= now + tau + T`
    /// first, as [`Gcra::decide`] does.
    const ACQUIRE: &str = "INSERT INTO toolcat_rate_limits AS r (tool, key, tat_ns)
        SELECT $1, $2, (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint + $3
        ON CONFLICT (tool, key) DO UPDATE
            SET tat_ns = greatest(least(r.tat_ns, EXCLUDED.tat_ns + $4), EXCLUDED.tat_ns - $3) + $3
            WHERE greatest(least(r.tat_ns, EXCLUDED.tat_ns + $4), EXCLUDED.tat_ns - $3) - $4
                <= EXCLUDED.tat_ns - $3
        RETURNING tat_ns";

    /// After a refusal: how long until the state lets a call through, in nanoseconds, by the
    /// server's clock (read after the refusal, so never shorter than the wait it decided on), at
    /// most `T` (`$4`): the clamped state is at most `now + tau + T`.
    const WAIT: &str =
        "SELECT least(tat_ns - $3 - (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint, $4)
        FROM toolcat_rate_limits WHERE tool = $1 AND key = $2";

    /// Takes one call from `limit` of (`tool`, `key`) now, by the server's clock, in one
    /// statement (see the module docs); a refusal's wait is read by a second one. The table is
    /// the store's (`toolcat_rate_limits`, migration 2).
    ///
    /// # Errors
    /// [`StoreError::Postgres`] when the server cannot be reached or refuses the statement.
    pub(crate) async fn acquire_postgres(
        client: &tokio_postgres::Client,
        label: &str,
        tool: &str,
        key: &str,
        limit: RateLimit,
    ) -> Result<Acquire, StoreError> {
        let Some(gcra) = Gcra::of(limit) else {
            return Ok(Acquire::Granted);
        };
        let err = |e| pg_error(label, e);
        let granted = client
            .query_opt(ACQUIRE, &[&tool, &key, &gcra.t_ns, &gcra.tau_ns])
            .await
            .map_err(err)?;
        if granted.is_some() {
            return Ok(Acquire::Granted);
        }
        let wait_ns: Option<i64> = client
            .query_opt(WAIT, &[&tool, &key, &gcra.tau_ns, &gcra.t_ns])
            .await
            .map_err(err)?
            .map(|row| row.get(0));
        // The row exists (the refusal found it) and is never deleted; a wait that has passed
        // meanwhile still answers the smallest retry.
        Ok(Acquire::Refused {
            retry_after_ms: super::retry_after_ms(wait_ns.unwrap_or(0)),
        })
    }
}

#[cfg(test)]
mod tests;
