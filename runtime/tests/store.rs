//! The call store on both backends, each case one body run against an SQLite file and against a
//! real PostgreSQL server: migrations from empty and an idempotent re-open, the state machine
//! (begin, set_state, get, list, changes), the result archive in the same store with its owner
//! binding, replica leases judged across two store handles, and concurrent begins from many
//! tasks.
//!
//! PostgreSQL: `TOOLCAT_TEST_POSTGRES_URL` when set (a server where this user may create
//! databases), else one started by `tests/services/postgres` for this test binary. When neither
//! works the PostgreSQL half prints `skipped: no PostgreSQL (...)` and only SQLite runs, unless
//! `TOOLCAT_REQUIRE_POSTGRES=1` (CI), which makes it a failure. Built without the `postgres`
//! feature, the PostgreSQL half is skipped the same way.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::json;
use toolcat::{
    ArchiveError, ArchiveLimits, ArchiveOwner, CallId, CallState, CallStore, Change, LeaseTimes,
    NewCall, ResultArchive, StoreError, StoreLocation,
};

#[path = "../../tests/services/postgres.rs"]
mod pg;

use pg::{required, Server};

/// Stops the server this binary started when dropped, also when a case fails (a `static` is
/// never dropped by itself).
struct StopServer;

impl Drop for StopServer {
    fn drop(&mut self) {
        if let Some(Ok(server)) = SERVER.get() {
            server.stop();
        }
    }
}

/// The server, or why there is none.
fn start_server() -> Result<Server, String> {
    if !cfg!(feature = "postgres") {
        return Err("this build has no `postgres` feature".into());
    }
    Server::start("store")
}

/// The two backends a case runs on.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Sqlite,
    Postgres,
}

/// One fresh store location of a case: an SQLite file in a new directory, or a new database.
struct Site {
    kind: Kind,
    location: StoreLocation,
    _dir: Option<tempfile::TempDir>,
}

impl Site {
    fn open(&self) -> CallStore {
        self.open_with(LeaseTimes::default())
    }

    fn open_with(&self, lease: LeaseTimes) -> CallStore {
        match &self.location {
            StoreLocation::File(path) => CallStore::open(path),
            StoreLocation::Postgres(url) => CallStore::connect(url, lease),
        }
        .unwrap_or_else(|e| panic!("{:?} store: {e}", self.kind))
    }
}

/// Creates database `name` on the server at `admin` and returns its URL.
fn create_database(admin: &str, name: &str) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(admin, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to the test server {admin}: {e}"));
        tokio::spawn(connection);
        // One statement each: CREATE DATABASE cannot run in the transaction of a batch.
        for sql in [
            format!("DROP DATABASE IF EXISTS {name}"),
            format!("CREATE DATABASE {name}"),
        ] {
            client
                .batch_execute(&sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        }
    });
    let base = admin.rsplit_once('/').map_or(admin, |(base, _)| base);
    format!("{base}/{name}")
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();
static CASES: AtomicUsize = AtomicUsize::new(0);

/// Runs `body` on a fresh SQLite store, then on a fresh PostgreSQL database (or says why not).
fn each_backend(case: &str, body: impl Fn(&Site)) {
    let dir = tempfile::tempdir().unwrap();
    let site = Site {
        kind: Kind::Sqlite,
        location: StoreLocation::File(dir.path().join("calls.sqlite")),
        _dir: Some(dir),
    };
    body(&site);
    println!("{case}: sqlite passed");
    match SERVER.get_or_init(start_server) {
        Ok(server) => {
            let n = CASES.fetch_add(1, Ordering::SeqCst);
            let name = format!("toolcat_case_{}_{n}", std::process::id());
            let site = Site {
                kind: Kind::Postgres,
                location: StoreLocation::Postgres(create_database(&server.url, &name)),
                _dir: None,
            };
            body(&site);
            println!("{case}: postgres passed");
        }
        Err(why) if required() => {
            panic!("TOOLCAT_REQUIRE_POSTGRES=1 but there is no PostgreSQL: {why}")
        }
        Err(why) => println!("{case}: skipped: no PostgreSQL ({why})"),
    }
}

fn new_call<'a>(tool: &'a str, args: &'a serde_json::Value) -> NewCall<'a> {
    NewCall {
        tool,
        arguments: args,
        effect: "write",
        idempotent: false,
        retry_of: None,
        parent: None,
    }
}

/// The cases run as one test so that the server this binary starts serves them all and is
/// stopped once, after the last (or the first that fails).
#[test]
fn the_store_behaves_alike_on_both_backends() {
    let _stop = StopServer;
    migrations_from_empty_and_an_idempotent_reopen();
    the_state_machine();
    the_archive_in_the_same_store_is_bound_to_its_owner();
    leases_judge_the_calls_of_an_ended_replica();
    concurrent_begins_from_many_tasks();
    replicas_starting_together_migrate_once();
}

fn migrations_from_empty_and_an_idempotent_reopen() {
    each_backend("migrations", |site| {
        let args = json!({"path": "a.txt"});
        let id = {
            let store = site.open();
            let id = store.begin(new_call("write_file", &args)).unwrap();
            store.set_state(id, CallState::Running, None).unwrap();
            id
        };
        // Opened again (twice): the schema is there, nothing is re-applied, the record is kept.
        for _ in 0..2 {
            let store = site.open();
            let r = store.get(id).unwrap().unwrap();
            assert_eq!((r.state, &r.arguments), (CallState::Running, &args));
            assert_eq!(store.list(None, 10).unwrap().len(), 1);
        }
    });
}

fn the_state_machine() {
    each_backend("state machine", |site| {
        let store = site.open();
        let args = json!({"path": "a.txt", "content": "hi"});
        let id = store.begin(new_call("write_file", &args)).unwrap();
        let r = store.get(id).unwrap().unwrap();
        assert_eq!(r.state, CallState::NotStarted);
        assert_eq!(r.pid, std::process::id());
        assert!(
            r.created_at.ends_with('Z') && r.created_at.contains('T'),
            "{}",
            r.created_at
        );
        assert_eq!(r.replica.as_deref(), store.replica());
        assert_eq!(site.kind == Kind::Postgres, r.replica.is_some());

        // A change only while running.
        let change = Change::new("a.txt", "absent", "sha256:00", "+hi\n");
        let e = store.add_change(id, &change).unwrap_err();
        assert!(matches!(e, StoreError::NotRunning { .. }), "{e}");
        store.set_state(id, CallState::Running, None).unwrap();
        store.add_change(id, &change).unwrap();
        store
            .set_state(id, CallState::Committed, Some("written"))
            .unwrap();
        store.set_state(id, CallState::Succeeded, None).unwrap();
        let r = store.get(id).unwrap().unwrap();
        assert_eq!(r.state, CallState::Succeeded);
        assert_eq!(r.detail.as_deref(), Some("written"));
        assert_eq!(r.changes, vec![change.clone()]);

        // A finished call never changes; an unknown one is named.
        let e = store.set_state(id, CallState::Running, None).unwrap_err();
        assert!(
            matches!(
                e,
                StoreError::IllegalTransition {
                    from: CallState::Succeeded,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("a finished call never changes"),
            "{e}"
        );
        let e = store
            .set_state(CallId(999), CallState::Running, None)
            .unwrap_err();
        assert!(
            matches!(
                e,
                StoreError::UnknownCall {
                    id: CallId(999),
                    ..
                }
            ),
            "{e}"
        );
        let e = store
            .begin(NewCall {
                retry_of: Some(CallId(999)),
                ..new_call("t", &args)
            })
            .unwrap_err();
        assert!(matches!(e, StoreError::UnknownCall { .. }), "{e}");
        let retry = store
            .begin(NewCall {
                retry_of: Some(id),
                ..new_call("write_file", &args)
            })
            .unwrap();
        assert_eq!(store.get(retry).unwrap().unwrap().retry_of, Some(id));
        assert_eq!(store.get(CallId(999)).unwrap(), None);

        // Newest first, filtered by state.
        let more: Vec<CallId> = (0..3)
            .map(|_| store.begin(new_call("t", &json!({}))).unwrap())
            .collect();
        store
            .set_state(more[1], CallState::Cancelled, None)
            .unwrap();
        let all: Vec<CallId> = store.list(None, 10).unwrap().iter().map(|r| r.id).collect();
        assert_eq!(all, vec![more[2], more[1], more[0], retry, id]);
        assert_eq!(store.list(None, 2).unwrap().len(), 2);
        let cancelled: Vec<CallId> = store
            .list(Some(CallState::Cancelled), 10)
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(cancelled, vec![more[1]]);
        // Our own calls are never judged while we run.
        assert_eq!(store.recover().unwrap(), vec![]);
    });
}

fn the_archive_in_the_same_store_is_bound_to_its_owner() {
    each_backend("archive", |site| {
        let store = site.open();
        let limits = ArchiveLimits {
            inline_budget: 8,
            preview: 4,
            max_entry: 64,
            max_entries: 2,
            max_total: 1000,
        };
        let archive = ResultArchive::beside(&store, limits).unwrap();
        let (me, other) = (ArchiveOwner::new(), ArchiveOwner::new());
        let id = store.begin(new_call("read_file", &json!({}))).unwrap();
        let first = archive
            .put(me, Some(id), "read_file", "héllo wörld")
            .unwrap();
        let slice = archive.read(me, &first.to_string(), 1, 4).unwrap();
        assert_eq!((slice.text.as_str(), slice.next_offset), ("éllo", Some(5)));
        assert_eq!((slice.total_chars, slice.total_bytes), (11, 13));
        // Another owner cannot even learn that it exists.
        let e = archive.read(other, &first.to_string(), 0, 4).unwrap_err();
        assert!(matches!(e, ArchiveError::UnknownReference { .. }), "{e}");
        // A second archive handle on the same store reads it (another replica would).
        let again = ResultArchive::beside(&site.open(), limits).unwrap();
        assert_eq!(
            again.read(me, &first.to_string(), 0, 5).unwrap().text,
            "héllo"
        );
        // Past two entries the oldest is evicted, naming the tool and call.
        archive.put(me, None, "t", "second").unwrap();
        archive.put(other, None, "t", "third").unwrap();
        let e = archive.read(me, &first.to_string(), 0, 4).unwrap_err();
        assert!(matches!(e, ArchiveError::Evicted { .. }), "{e}");
        assert!(e.to_string().contains(&format!("`{id}`")), "{e}");
        let e = archive.read(me, &first.to_string(), 0, 0).unwrap_err();
        assert!(matches!(e, ArchiveError::ZeroLength), "{e}");
    });
}

fn leases_judge_the_calls_of_an_ended_replica() {
    each_backend("leases", |site| {
        if site.kind == Kind::Sqlite {
            // SQLite judges by the local process id: see `recover_marks_calls_of_dead_processes`
            // in `records.rs`; a live process's calls are never judged.
            let store = site.open();
            let id = store.begin(new_call("t", &json!({}))).unwrap();
            store.set_state(id, CallState::Running, None).unwrap();
            assert_eq!(site.open().recover().unwrap(), vec![]);
            return;
        }
        let lease = LeaseTimes {
            lease: Duration::from_millis(600),
            renew: Duration::from_millis(150),
        };
        let a = site.open_with(lease);
        let b = site.open_with(lease);
        assert_ne!(a.replica(), b.replica());
        let running = a.begin(new_call("write_file", &json!({}))).unwrap();
        a.set_state(running, CallState::Running, None).unwrap();
        let waiting = a.begin(new_call("write_file", &json!({}))).unwrap();
        let replica_a = a.replica().unwrap().to_string();
        // While A renews its lease, B judges nothing, however long it waits.
        std::thread::sleep(Duration::from_millis(900));
        assert_eq!(b.recover().unwrap(), vec![]);
        assert_eq!(b.get(running).unwrap().unwrap().state, CallState::Running);

        // A ends as a SIGKILL would end it: its lease is not released, only no longer renewed.
        a.end_without_releasing_lease();
        // B's own lease renewal judges A's calls once A's lease expired, without being asked.
        let started = Instant::now();
        let judged = loop {
            let r = b.get(running).unwrap().unwrap();
            if r.state != CallState::Running || started.elapsed() > Duration::from_secs(10) {
                break r;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        println!(
            "leases: judged {:.2} s after the replica ended (lease 0.6 s, renewal 0.15 s)",
            started.elapsed().as_secs_f64()
        );
        assert_eq!(judged.state, CallState::OutcomeUnknown);
        let detail = judged.detail.unwrap();
        assert!(detail.contains(&replica_a), "{detail}");
        assert!(detail.contains("lease expired"), "{detail}");
        assert!(detail.contains("not run again"), "{detail}");
        let w = b.get(waiting).unwrap().unwrap();
        assert_eq!(w.state, CallState::Cancelled);
        assert!(w.detail.unwrap().contains("nothing ran"));
        // Judged once, never replayed: a later judgement finds nothing, and the terminal state
        // stays.
        assert_eq!(b.recover().unwrap(), vec![]);
        let e = b
            .set_state(running, CallState::Succeeded, None)
            .unwrap_err();
        assert!(matches!(e, StoreError::IllegalTransition { .. }), "{e}");

        // Explicit judgement by `recover`, with no other replica renewing (and judging) meanwhile.
        drop(b);
        let c = site.open_with(LeaseTimes::of(Duration::from_millis(300)));
        let open = c.begin(new_call("t", &json!({}))).unwrap();
        c.set_state(open, CallState::Running, None).unwrap();
        c.end_without_releasing_lease();
        let d = site.open_with(LeaseTimes::of(Duration::from_secs(60)));
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(d.recover().unwrap(), vec![open]);
        assert_eq!(
            d.get(open).unwrap().unwrap().state,
            CallState::OutcomeUnknown
        );
    });
}

fn concurrent_begins_from_many_tasks() {
    each_backend("concurrent begins", |site| {
        let store = Arc::new(site.open());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap();
        const TASKS: usize = 64;
        let started = Instant::now();
        let mut ids: Vec<CallId> = runtime.block_on(async {
            let tasks: Vec<_> = (0..TASKS)
                .map(|n| {
                    let store = Arc::clone(&store);
                    tokio::spawn(async move {
                        let args = json!({ "task": n });
                        let id = store.begin(new_call("t", &args)).unwrap();
                        store.set_state(id, CallState::Running, None).unwrap();
                        store.set_state(id, CallState::Succeeded, None).unwrap();
                        id
                    })
                })
                .collect();
            let mut ids = Vec::new();
            for t in tasks {
                ids.push(t.await.unwrap());
            }
            ids
        });
        println!(
            "concurrent begins: {TASKS} calls of 3 writes each in {} ms on {:?}",
            started.elapsed().as_millis(),
            site.kind
        );
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), TASKS);
        assert_eq!(
            store.list(Some(CallState::Succeeded), 1000).unwrap().len(),
            TASKS
        );
        drop(runtime);
    });
}

fn replicas_starting_together_migrate_once() {
    each_backend("replicas starting together", |site| {
        // Four processes' stores open an empty store at once: one creates the schema, the
        // others wait for it and find it there.
        let stores: Vec<CallStore> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4).map(|_| s.spawn(|| site.open())).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let id = stores[0].begin(new_call("t", &json!({}))).unwrap();
        for store in &stores {
            assert_eq!(store.get(id).unwrap().unwrap().tool, "t");
        }
    });
}

#[cfg(feature = "postgres")]
#[test]
fn a_bad_or_unreachable_url_is_named_without_its_password() {
    let e = CallStore::connect(
        "postgres://toolcat:s3cret@127.0.0.1:1/toolcat",
        LeaseTimes::default(),
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, StoreError::Unreachable { .. }), "{text}");
    assert!(
        text.contains("postgres://toolcat:***@127.0.0.1:1/toolcat"),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");
    assert!(text.contains("--store"), "{text}");
    // URL schemes are case-insensitive: an upper-case one is read, not refused as bad.
    let e = CallStore::connect(
        "POSTGRES://toolcat:s3cret@127.0.0.1:1/toolcat",
        LeaseTimes::default(),
    )
    .unwrap_err();
    assert!(matches!(e, StoreError::Unreachable { .. }), "{e}");

    let e = CallStore::connect(
        "postgres://toolcat:s3cret@host:notaport/db",
        LeaseTimes::default(),
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, StoreError::BadUrl { .. }), "{text}");
    assert!(
        !text.contains("s3cret") && text.contains("postgres://USER"),
        "{text}"
    );
}

#[test]
fn store_locations_are_told_apart_and_shown_without_passwords() {
    assert_eq!(
        StoreLocation::parse(".toolcat/calls.sqlite").unwrap(),
        StoreLocation::File(".toolcat/calls.sqlite".into())
    );
    let pg = StoreLocation::parse("PostgreSQL://u:pw@h/db").unwrap();
    assert_eq!(pg, StoreLocation::Postgres("PostgreSQL://u:pw@h/db".into()));
    assert_eq!(pg.to_string(), "PostgreSQL://u:***@h/db");
    assert_eq!(
        toolcat::records::redact_url("postgres://h/db?user=u&password=pw&x=1"),
        "postgres://h/db?user=u&password=***&x=1"
    );
    assert_eq!(
        toolcat::records::redact_url("postgres://u@h:5432/db"),
        "postgres://u@h:5432/db"
    );
}

#[test]
fn store_texts_that_look_like_urls_are_refused_without_their_password() {
    for (text, says) in [
        ("postgres:/u:Pw9secret@h/db", "two slashes"),
        (
            "mysql://u:Pw9secret@h/db",
            "`mysql:` is not a PostgreSQL scheme",
        ),
        ("host=h password=Pw9secret dbname=d", "connection string"),
        ("host=h password = Pw9secret", "connection string"),
    ] {
        let e = StoreLocation::parse(text).unwrap_err().to_string();
        assert!(e.contains(says), "{text}: {e}");
        assert!(!e.contains("Pw9secret") && e.contains("***"), "{text}: {e}");
        assert!(e.contains("postgres://USER") && e.contains("`./`"), "{e}");
    }
    // Paths that merely contain `:` or `=` stay paths.
    for path in [
        "C:/calls.sqlite",
        "./postgres:/x",
        "out=1.sqlite",
        "dir/a:b.sqlite",
    ] {
        assert_eq!(
            StoreLocation::parse(path).unwrap(),
            StoreLocation::File(path.into()),
            "{path}"
        );
    }
    assert!(matches!(
        StoreLocation::parse("POSTGRES://u:pw@h/db").unwrap(),
        StoreLocation::Postgres(_)
    ));
}
