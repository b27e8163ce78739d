//! The PostgreSQL backend of [`super::CallStore`] and [`crate::archive::ResultArchive`]
//! (feature `postgres`): the same rows as the SQLite file, in tables named `toolcat_*` so that a
//! database a team already runs can hold them beside its own.
//!
//! **Runtime.** Each store owns a small tokio runtime (two worker threads, named
//! `toolcat-store`) on which its pool's connections and its lease renewal run. The store's API is
//! synchronous, as for SQLite (the coordinator writes records from synchronous hooks a handler
//! calls, such as a commit or a reported change): a call spawns its statements on that runtime
//! and waits for the answer. On a worker of a multi-thread tokio runtime it waits inside
//! `tokio::task::block_in_place`, so the worker's other tasks move to another thread while the
//! network round trip lasts; elsewhere (a plain thread, a current-thread runtime) it waits on a
//! channel, which cannot deadlock because the I/O runs on the store's own threads.
//!
//! **Migrations.** `toolcat_schema` holds one row per applied version. Opening takes
//! `pg_advisory_xact_lock` ([`MIGRATION_LOCK`]) in a transaction, then applies the versions the
//! database lacks, so replicas that start together migrate once, one after the other. A database
//! of a newer version is refused ([`StoreError::NewerSchema`]).
//!
//! **Leases.** Each store holds a row of `toolcat_replicas` (replica id, host, pid, expires_at),
//! renewed every [`LeaseTimes::renew`]; each record names its replica. [`PgStore::recover`]
//! judges the open calls of replicas whose lease expired (or is gone), as the SQLite store
//! judges those of a dead local process, and the renewal runs that judgement too.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, PoolError, RecyclingMethod};
use tokio_postgres::{NoTls, Row};

use super::{
    appended, check_move, judgement, redact_url, Appended, Begun, CallId, CallState, Change,
    DamagedRecord, LeaseTimes, RawRecord, StoreError, CONNECT_TIMEOUT, RECORD_COLUMNS,
};

/// The key of the advisory lock migrations are applied under (`toolcat` in ASCII).
pub const MIGRATION_LOCK: i64 = 0x0074_6f6f_6c63_6174;
/// The key of the advisory lock an archive insertion and its evictions run under, so that two
/// replicas' evictions do not both count the same live entries.
pub(crate) const ARCHIVE_LOCK: i64 = MIGRATION_LOCK + 1;
/// Most connections one store's pool opens.
const POOL_SIZE: usize = 16;

/// The current time as the rows keep it: RFC 3339, UTC, milliseconds (as SQLite's).
pub(crate) const NOW: &str =
    "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')";

/// The migrations, version 1 first: version `i + 1` is `MIGRATIONS[i]`. A new version is a new
/// entry at the end (never an edit of an applied one).
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE toolcat_calls (
    id BIGSERIAL PRIMARY KEY,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    arguments_truncated BOOLEAN NOT NULL DEFAULT false,
    state TEXT NOT NULL,
    effect TEXT NOT NULL,
    idempotent BOOLEAN NOT NULL,
    retry_of BIGINT,
    detail TEXT,
    pid BIGINT NOT NULL,
    pid_start BIGINT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    changes TEXT NOT NULL DEFAULT '[]',
    changes_omitted BIGINT NOT NULL DEFAULT 0,
    parent BIGINT,
    replica TEXT
);
CREATE INDEX toolcat_calls_by_state ON toolcat_calls (state, id);
CREATE TABLE toolcat_results (
    id BIGSERIAL PRIMARY KEY,
    reference BYTEA NOT NULL UNIQUE,
    owner BYTEA NOT NULL,
    call_id BIGINT,
    tool TEXT NOT NULL,
    text TEXT,
    total_bytes BIGINT NOT NULL,
    total_chars BIGINT NOT NULL,
    truncated BOOLEAN NOT NULL DEFAULT false,
    created_at TEXT NOT NULL,
    evicted_at TEXT
);
CREATE INDEX toolcat_results_live ON toolcat_results (evicted_at, id);
CREATE TABLE toolcat_replicas (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid BIGINT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    renewed_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    expires_at TIMESTAMPTZ NOT NULL
);
",
    "
-- The rate limits' GCRA state (module `limits`): one theoretical arrival time per tool and key,
-- in nanoseconds since the Unix epoch by the server's clock.
CREATE TABLE toolcat_rate_limits (
    tool TEXT NOT NULL,
    key TEXT NOT NULL,
    tat_ns BIGINT NOT NULL,
    PRIMARY KEY (tool, key)
);
",
];

/// The schema version this build writes and reads (the number of [`MIGRATIONS`]).
pub const PG_SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// A PostgreSQL store: its runtime, pool and lease. Shared (`Arc`) by a call store and the
/// archive opened beside it; the lease row is deleted when the last of them is dropped.
pub(crate) struct PgStore {
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    handle: tokio::runtime::Handle,
    pool: Pool,
    label: String,
    replica: String,
    /// False once the store is to end as a killed process would ([`PgStore::abandon_lease`]).
    release: AtomicBool,
    renewal: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl PgStore {
    /// Connects, migrates and takes the lease (see [`super::CallStore::connect`]).
    pub(crate) fn connect(url: &str, lease: LeaseTimes) -> Result<Arc<PgStore>, StoreError> {
        let label = redact_url(url);
        // URL schemes are case-insensitive; `tokio_postgres` reads only lower-case ones.
        let url = match url.split_once("://") {
            Some((scheme, rest)) => format!("{}://{rest}", scheme.to_ascii_lowercase()),
            None => url.to_string(),
        };
        let mut config: tokio_postgres::Config =
            url.parse()
                .map_err(|e: tokio_postgres::Error| StoreError::BadUrl {
                    url: label.clone(),
                    reason: e.to_string(),
                })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("toolcat");
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("toolcat-store")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Postgres {
                url: label.clone(),
                reason: format!("cannot start the store's runtime ({e})"),
            })?;
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .create_timeout(Some(CONNECT_TIMEOUT))
            .wait_timeout(Some(CONNECT_TIMEOUT * 2))
            .build()
            .map_err(|e| StoreError::Postgres {
                url: label.clone(),
                reason: format!("cannot build the connection pool ({e})"),
            })?;
        let store = Arc::new(PgStore {
            handle: runtime.handle().clone(),
            runtime: Mutex::new(Some(runtime)),
            pool,
            label,
            replica: new_replica_id(),
            // Nothing to release until the lease is taken: a failed connect ends at once.
            release: AtomicBool::new(false),
            renewal: Mutex::new(None),
        });
        let lease = lease.normalized();
        let (pool, label, replica) = (
            store.pool.clone(),
            store.label.clone(),
            store.replica.clone(),
        );
        store.run(async move {
            let mut client = pool.get().await.map_err(|e| pool_error(&label, e))?;
            migrate(&mut client, &label).await?;
            take_lease(&client, &label, &replica, lease).await
        })?;
        store.release.store(true, Ordering::SeqCst);
        let renewal = store.handle.spawn(renew(
            store.pool.clone(),
            store.label.clone(),
            store.replica.clone(),
            lease,
        ));
        *store.renewal.lock().unwrap_or_else(|p| p.into_inner()) = Some(renewal);
        Ok(store)
    }

    /// The URL without its password.
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// This store's replica id.
    pub(crate) fn replica(&self) -> &str {
        &self.replica
    }

    /// Stops renewing the lease and keeps its row when dropped (see
    /// [`super::CallStore::end_without_releasing_lease`]).
    pub(crate) fn abandon_lease(&self) {
        self.release.store(false, Ordering::SeqCst);
        self.stop_renewal();
    }

    /// Stops the lease's renewal task.
    fn stop_renewal(&self) {
        if let Some(task) = self
            .renewal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            task.abort();
        }
    }

    /// Runs `work` on the store's runtime and waits for its answer (see the module docs).
    fn run<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(work.await);
        });
        let wait = move || rx.recv();
        let answer = match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        };
        answer.unwrap_or_else(|_| {
            Err(StoreError::Postgres {
                url: self.label.clone(),
                reason: "the store's runtime stopped before the statement finished".into(),
            })
        })
    }

    /// Runs `work` with a pooled connection.
    pub(crate) fn with_client<T, F, Fut>(&self, work: F) -> Result<T, StoreError>
    where
        F: FnOnce(deadpool_postgres::Object, String) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + Send,
        T: Send + 'static,
    {
        let pool = self.pool.clone();
        let label = self.label.clone();
        self.run(async move {
            let client = pool.get().await.map_err(|e| pool_error(&label, e))?;
            work(client, label).await
        })
    }

    pub(crate) fn begin(&self, b: Begun) -> Result<CallId, StoreError> {
        let replica = self.replica.clone();
        self.with_client(move |client, label| async move {
            let err = |e| pg_error(&label, e);
            if let Some(retry_of) = b.retry_of {
                let found = client
                    .query_opt("SELECT id FROM toolcat_calls WHERE id = $1", &[&retry_of.0])
                    .await
                    .map_err(err)?;
                if found.is_none() {
                    return Err(StoreError::UnknownCall {
                        id: retry_of,
                        path: label.clone(),
                    });
                }
            }
            let row = client
                .query_one(
                    &format!(
                        "INSERT INTO toolcat_calls (tool, arguments, arguments_truncated, state, \
                         effect, idempotent, retry_of, pid, pid_start, created_at, updated_at, \
                         parent, replica) VALUES ($1, $2, $3, 'not_started', $4, $5, $6, $7, $8, \
                         {NOW}, {NOW}, $9, $10) RETURNING id"
                    ),
                    &[
                        &b.tool,
                        &b.arguments,
                        &b.truncated,
                        &b.effect,
                        &b.idempotent,
                        &b.retry_of.map(|c| c.0),
                        &i64::from(b.pid),
                        &b.pid_start,
                        &b.parent.map(|c| c.0),
                        &replica,
                    ],
                )
                .await
                .map_err(err)?;
            Ok(CallId(row.get(0)))
        })
    }

    pub(crate) fn set_state(
        &self,
        id: CallId,
        state: CallState,
        detail: Option<String>,
    ) -> Result<(), StoreError> {
        self.with_client(move |mut client, label| async move {
            let err = |e| pg_error(&label, e);
            let tx = client.transaction().await.map_err(err)?;
            let current: Option<String> = tx
                .query_opt(
                    "SELECT state FROM toolcat_calls WHERE id = $1 FOR UPDATE",
                    &[&id.0],
                )
                .await
                .map_err(err)?
                .map(|r| r.get(0));
            check_move(&label, id, current.as_deref(), state)?;
            tx.execute(
                &format!(
                    "UPDATE toolcat_calls SET state = $2, detail = coalesce($3, detail), \
                     updated_at = {NOW} WHERE id = $1"
                ),
                &[&id.0, &state.as_str(), &detail],
            )
            .await
            .map_err(err)?;
            tx.commit().await.map_err(err)
        })
    }

    pub(crate) fn add_change(&self, id: CallId, change: Change) -> Result<(), StoreError> {
        self.with_client(move |mut client, label| async move {
            let err = |e| pg_error(&label, e);
            let tx = client.transaction().await.map_err(err)?;
            let row: Option<(String, String)> = tx
                .query_opt(
                    "SELECT state, changes FROM toolcat_calls WHERE id = $1 FOR UPDATE",
                    &[&id.0],
                )
                .await
                .map_err(err)?
                .map(|r| (r.get(0), r.get(1)));
            match appended(&label, id, row, &change)? {
                Appended::Omitted => tx
                    .execute(
                        "UPDATE toolcat_calls SET changes_omitted = \
                         least(changes_omitted + 1, 4294967295) WHERE id = $1",
                        &[&id.0],
                    )
                    .await
                    .map_err(err)?,
                Appended::Kept(text) => tx
                    .execute(
                        "UPDATE toolcat_calls SET changes = $2 WHERE id = $1",
                        &[&id.0, &text],
                    )
                    .await
                    .map_err(err)?,
            };
            tx.commit().await.map_err(err)
        })
    }

    pub(crate) fn get(
        &self,
        id: CallId,
    ) -> Result<Option<Result<RawRecord, DamagedRecord>>, StoreError> {
        self.with_client(move |client, label| async move {
            let row = client
                .query_opt(
                    &format!("SELECT {PG_RECORD_COLUMNS} FROM toolcat_calls WHERE id = $1"),
                    &[&id.0],
                )
                .await
                .map_err(|e| pg_error(&label, e))?;
            Ok(row.as_ref().map(raw_record))
        })
    }

    pub(crate) fn list_rows(
        &self,
        state: Option<CallState>,
        limit: i64,
    ) -> Result<Vec<Result<RawRecord, DamagedRecord>>, StoreError> {
        self.with_client(move |client, label| async move {
            let rows = match state {
                Some(s) => {
                    client
                        .query(
                            &format!(
                                "SELECT {PG_RECORD_COLUMNS} FROM toolcat_calls WHERE state = $1 \
                                 ORDER BY id DESC LIMIT $2"
                            ),
                            &[&s.as_str(), &limit],
                        )
                        .await
                }
                None => {
                    client
                        .query(
                            &format!(
                                "SELECT {PG_RECORD_COLUMNS} FROM toolcat_calls \
                                 ORDER BY id DESC LIMIT $1"
                            ),
                            &[&limit],
                        )
                        .await
                }
            }
            .map_err(|e| pg_error(&label, e))?;
            Ok(rows.iter().map(raw_record).collect())
        })
    }

    pub(crate) fn recover(&self) -> Result<Vec<CallId>, StoreError> {
        let pool = self.pool.clone();
        let label = self.label.clone();
        self.run(async move { judge_expired(&pool, &label).await })
    }
}

impl Drop for PgStore {
    /// Deletes the lease row (unless abandoned, see [`PgStore::abandon_lease`]), then stops the
    /// runtime without waiting for its threads (dropping a runtime inside another one's task
    /// would panic).
    fn drop(&mut self) {
        self.stop_renewal();
        if self.release.load(Ordering::SeqCst) {
            let pool = self.pool.clone();
            let replica = self.replica.clone();
            let _ = self.run(async move {
                let release = async {
                    if let Ok(client) = pool.get().await {
                        let _ = client
                            .execute("DELETE FROM toolcat_replicas WHERE id = $1", &[&replica])
                            .await;
                    }
                };
                let _ = tokio::time::timeout(Duration::from_secs(2), release).await;
                Ok(())
            });
        }
        if let Some(runtime) = self
            .runtime
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            runtime.shutdown_background();
        }
    }
}

/// [`RECORD_COLUMNS`] and the replica.
const PG_RECORD_COLUMNS: &str = "id, tool, arguments, arguments_truncated, state, effect, \
     idempotent, retry_of, detail, pid, created_at, updated_at, changes, changes_omitted, parent, \
     replica";

/// A row of [`PG_RECORD_COLUMNS`]; an integer out of range makes it a [`DamagedRecord`].
fn raw_record(r: &Row) -> Result<RawRecord, DamagedRecord> {
    let id: i64 = r.get(0);
    let damaged = |reason| DamagedRecord {
        id: CallId(id),
        reason,
    };
    let in_range = |i: usize| -> Result<u32, DamagedRecord> {
        let v: i64 = r.get(i);
        let name = RECORD_COLUMNS.split(',').nth(i).map_or("?", str::trim);
        u32::try_from(v).map_err(|_| damaged(format!("its `{name}` is {v}, out of range")))
    };
    Ok(RawRecord {
        id,
        tool: r.get(1),
        arguments: r.get(2),
        arguments_truncated: r.get(3),
        state: r.get(4),
        effect: r.get(5),
        idempotent: r.get(6),
        retry_of: r.get(7),
        detail: r.get(8),
        pid: in_range(9)?,
        created_at: r.get(10),
        updated_at: r.get(11),
        changes: r.get(12),
        changes_omitted: in_range(13)?,
        parent: r.get(14),
        replica: r.get(15),
    })
}

/// Creates or migrates the tables under [`MIGRATION_LOCK`] (see the module docs).
async fn migrate(client: &mut deadpool_postgres::Object, label: &str) -> Result<(), StoreError> {
    let err = |e| pg_error(label, e);
    let tx = client.transaction().await.map_err(err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(err)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS toolcat_schema (
             version INTEGER PRIMARY KEY,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
         )",
    )
    .await
    .map_err(err)?;
    let found: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM toolcat_schema", &[])
        .await
        .map_err(err)?
        .get(0);
    if found > PG_SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: label.to_string(),
            found,
            supported: PG_SCHEMA_VERSION,
        });
    }
    for (version, sql) in (1..).zip(MIGRATIONS).skip(found.max(0) as usize) {
        tx.batch_execute(sql).await.map_err(err)?;
        tx.execute(
            "INSERT INTO toolcat_schema (version) VALUES ($1)",
            &[&version],
        )
        .await
        .map_err(err)?;
    }
    tx.commit().await.map_err(err)
}

/// Inserts this replica's lease row.
async fn take_lease(
    client: &deadpool_postgres::Object,
    label: &str,
    replica: &str,
    lease: LeaseTimes,
) -> Result<(), StoreError> {
    client
        .execute(
            "INSERT INTO toolcat_replicas (id, host, pid, expires_at) \
             VALUES ($1, $2, $3, clock_timestamp() + make_interval(secs => $4))",
            &[
                &replica,
                &host_name(),
                &i64::from(std::process::id()),
                &lease.lease.as_secs_f64(),
            ],
        )
        .await
        .map_err(|e| pg_error(label, e))?;
    Ok(())
}

/// Renews the lease every `lease.renew` and judges the calls of expired replicas; a renewal
/// that finds its row gone (it expired and was judged) takes the lease again.
async fn renew(pool: Pool, label: String, replica: String, lease: LeaseTimes) {
    let mut tick = tokio::time::interval(lease.renew);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        let renewed = async {
            let client = pool.get().await.map_err(|e| pool_error(&label, e))?;
            let n = client
                .execute(
                    "UPDATE toolcat_replicas SET renewed_at = clock_timestamp(), \
                     expires_at = clock_timestamp() + make_interval(secs => $2) WHERE id = $1",
                    &[&replica, &lease.lease.as_secs_f64()],
                )
                .await
                .map_err(|e| pg_error(&label, e))?;
            if n == 0 {
                tracing::warn!(
                    replica,
                    "the lease of this replica had expired and was judged by another; taken again"
                );
                take_lease(&client, &label, &replica, lease).await?;
            }
            Ok::<(), StoreError>(())
        };
        if let Err(e) = renewed.await {
            tracing::warn!(replica, "cannot renew the replica lease: {e}");
        }
        match judge_expired(&pool, &label).await {
            Ok(marked) if !marked.is_empty() => {
                let ids: Vec<String> = marked.iter().map(|c| c.to_string()).collect();
                tracing::info!(
                    calls = ids.join(", "),
                    "judged the open calls of replicas whose lease expired"
                );
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(replica, "cannot judge expired replicas' calls: {e}"),
        }
    }
}

/// Marks the open calls of replicas whose lease expired (or is absent) as
/// [`super::judgement`] says, deletes those replicas' lease rows, and returns the calls marked
/// (oldest first). Rows another replica is judging at the same moment are skipped.
async fn judge_expired(pool: &Pool, label: &str) -> Result<Vec<CallId>, StoreError> {
    let err = |e| pg_error(label, e);
    let mut client = pool.get().await.map_err(|e| pool_error(label, e))?;
    let tx = client.transaction().await.map_err(err)?;
    let open = tx
        .query(
            "SELECT c.id, c.state, c.replica, c.pid, r.host, r.id IS NOT NULL \
             FROM toolcat_calls c LEFT JOIN toolcat_replicas r ON r.id = c.replica \
             WHERE c.state IN ('not_started', 'running', 'committed') \
               AND (r.id IS NULL OR r.expires_at < clock_timestamp()) \
             ORDER BY c.id FOR UPDATE OF c SKIP LOCKED",
            &[],
        )
        .await
        .map_err(err)?;
    let mut marked = Vec::new();
    for row in &open {
        let id: i64 = row.get(0);
        let state: String = row.get(1);
        let replica: Option<String> = row.get(2);
        let pid: i64 = row.get(3);
        let host: Option<String> = row.get(4);
        let leased: bool = row.get(5);
        let who = match (&replica, host) {
            (Some(r), Some(h)) => {
                format!("replica `{r}` (process {pid} on {h}), whose lease expired,")
            }
            (Some(r), None) if !leased => {
                format!("replica `{r}` (process {pid}), which holds no lease,")
            }
            _ => format!("process {pid}, of no replica,"),
        };
        let (to, detail) = judgement(&who, &state);
        tx.execute(
            &format!(
                "UPDATE toolcat_calls SET state = $2, detail = $3, updated_at = {NOW} \
                 WHERE id = $1 AND state = $4"
            ),
            &[&id, &to.as_str(), &detail, &state],
        )
        .await
        .map_err(err)?;
        marked.push(CallId(id));
    }
    tx.execute(
        "DELETE FROM toolcat_replicas r WHERE r.expires_at < clock_timestamp() AND NOT EXISTS \
         (SELECT 1 FROM toolcat_calls c WHERE c.replica = r.id \
          AND c.state IN ('not_started', 'running', 'committed'))",
        &[],
    )
    .await
    .map_err(err)?;
    tx.commit().await.map_err(err)?;
    Ok(marked)
}

/// A new replica id: `replica-` and 80 random bits in lower-case base32 (16 characters).
fn new_replica_id() -> String {
    let mut bits = [0u8; 10];
    if getrandom::fill(&mut bits).is_err() {
        // Unique is enough (an id is not a secret): the pid and the time.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        bits[..4].copy_from_slice(&std::process::id().to_le_bytes());
        bits[4..].copy_from_slice(&nanos.to_le_bytes()[..6]);
    }
    format!("replica-{}", data_encoding::BASE32_DNSSEC.encode(&bits))
}

/// This machine's name (Linux's `/proc/sys/kernel/hostname`, else `HOSTNAME`), `unknown` when
/// neither says.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// A PostgreSQL error on the store `label`: a refused or broken connection is
/// [`StoreError::Unreachable`], a server error [`StoreError::Postgres`] with its message and
/// SQLSTATE code.
pub(crate) fn pg_error(label: &str, e: tokio_postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(db) => StoreError::Postgres {
            url: label.to_string(),
            reason: format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        },
        None if e.is_closed() || std::error::Error::source(&e).is_some() => {
            StoreError::Unreachable {
                url: label.to_string(),
                reason: error_chain(&e),
            }
        }
        None => StoreError::Postgres {
            url: label.to_string(),
            reason: e.to_string(),
        },
    }
}

/// A failure to get a pooled connection: the server cannot be reached (or refused the login, a
/// server error then says why).
fn pool_error(label: &str, e: PoolError) -> StoreError {
    match e {
        PoolError::Backend(e) if e.as_db_error().is_some() => pg_error(label, e),
        PoolError::Backend(e) => StoreError::Unreachable {
            url: label.to_string(),
            reason: error_chain(&e),
        },
        PoolError::Timeout(_) => StoreError::Unreachable {
            url: label.to_string(),
            reason: format!("no connection within {} s", (CONNECT_TIMEOUT * 2).as_secs()),
        },
        e => StoreError::Unreachable {
            url: label.to_string(),
            reason: e.to_string(),
        },
    }
}

/// An error and its causes, `: `-separated.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
