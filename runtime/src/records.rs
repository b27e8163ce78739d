//! Durable call records: every tool call gets a [`CallId`] and a row in an embedded SQLite store
//! that moves through [`CallState`]s, written to disk *before* the side effect it describes.
//!
//! The lifecycle:
//!
//! ```text
//! not_started ──► running ──► committed ──► succeeded | failed | outcome_unknown
//!      │             └──────► succeeded | failed | cancelled | outcome_unknown
//!      └──► cancelled | failed
//! ```
//!
//! `succeeded`, `failed`, `cancelled` and `outcome_unknown` are terminal: they never change.
//! [`CallStore::set_state`] refuses any other move with [`StoreError::IllegalTransition`].
//!
//! **Durability.** Each write is its own SQLite transaction in WAL mode with `synchronous = FULL`,
//! so the WAL is fsynced before the function returns: a record marked `running` before a side
//! effect survives a SIGKILL of the process *and* a power loss. (`NORMAL` would survive the
//! SIGKILL only; a few fsyncs per call are cheap next to any tool that has a side effect.)
//!
//! **Crashes.** A process killed mid-call leaves its record `running` or `committed`, never
//! `succeeded`. [`CallStore::recover`] turns such records into `outcome_unknown` once the
//! process that wrote them is gone (and its `not_started` records, which ran nothing, into
//! `cancelled`); it never marks a call succeeded and never runs anything again.
//! [`CallStore::open`] does not recover by itself: opening a store must not change what another
//! live process is doing, and the caller decides when judging is wanted (`toolcat calls` does).
//!
//! **Files.** One SQLite file holds the `calls` table and the result archive's `results` table
//! ([`crate::archive`]); both are created on open, with the parent directories. The file carries
//! `PRAGMA application_id` [`APPLICATION_ID`] and `PRAGMA user_version` [`SCHEMA_VERSION`]; a file
//! of another application, a newer schema or a corrupt file is refused with an error naming it.
//! A file of an older schema is migrated when it is opened for writing; opened read-only, it is
//! read as it is (a file older than version 3 has no `changes` columns: its records read with
//! no [`CallRecord::changes`]).
//!
//! **Changes.** A call that writes files reports what it changed
//! ([`crate::ToolContext::record_change`]); each [`Change`] is appended to the record as it is
//! reported ([`CallStore::add_change`]), so the record keeps it whatever the call then comes to
//! (a failure after the first file of a patch, a crash, a timeout). Bounds: a change's diff is
//! kept up to [`MAX_CHANGE_DIFF_BYTES`] (the whole diff goes to the result archive when the
//! coordinator has one, see [`Change::diff_reference`]), and a record keeps at most
//! [`MAX_CHANGES`] changes, counting the others in [`CallRecord::changes_omitted`].
//! An SQLite store is for one machine: the process ids it records mean nothing on another.
//!
//! **Backends.** A store is an SQLite file ([`CallStore::open`], the default, no setup) or a
//! PostgreSQL database ([`CallStore::connect`], feature `postgres`), chosen by
//! [`StoreLocation`] (`--store postgres://...`). Both keep the same rows, run the same
//! lifecycle checks (one function decides each move, whatever the backend) and commit each state
//! before the call goes on. The backends are an enum inside [`CallStore`] (and
//! [`crate::ResultArchive`]), not a trait: the set is closed (two, one behind a feature), they
//! share one error type and one record type, and a host passes one `CallStore` whatever the
//! backend, without a type parameter or a box through the coordinator.
//!
//! **Sync API.** The methods are synchronous on both backends, because the coordinator writes
//! from synchronous hooks that handlers call (a commit, a reported change) and from the task that
//! ends a call. SQLite runs in place, as before (a local file). PostgreSQL runs its statements on
//! the store's own two-thread runtime and the caller waits for the answer; a caller on a worker of
//! a multi-thread tokio runtime waits inside `tokio::task::block_in_place`, so the worker's other
//! tasks move on while the network round trip lasts (see `records/postgres.rs`).
//!
//! **Replicas.** In PostgreSQL every process that opens the store for writing holds a lease row
//! (replica id, host, pid, `expires_at`), renewed every [`LeaseTimes::renew`] for
//! [`LeaseTimes::lease`] ([`DEFAULT_LEASE_RENEW`], [`DEFAULT_LEASE`]); each record names its
//! replica ([`CallRecord::replica`]). [`CallStore::recover`], and each renewal, judge the open
//! calls of replicas whose lease expired as a dead local process's are judged in SQLite.
//! Tables: `toolcat_calls`, `toolcat_results`, `toolcat_replicas` and `toolcat_schema` (one row
//! per applied migration, applied in a transaction under an advisory lock so that replicas
//! starting together migrate once).

// Without the `postgres` feature the backend enums have one variant, so each method's
// `match` on its backend has one arm; it stays a `match` so that the feature adds an arm.
#![cfg_attr(
    not(feature = "postgres"),
    allow(clippy::infallible_destructuring_match)
)]

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};
use toolcat_catalog::diagnostics::did_you_mean;

#[cfg(feature = "postgres")]
pub(crate) mod postgres;

/// `PRAGMA application_id` of a toolcat store: `tool` in ASCII.
pub const APPLICATION_ID: i32 = 0x746f_6f6c;
/// `PRAGMA user_version` this build writes and reads. Version 1: tables `calls` and `results`.
/// Version 2: each `results` row has a random `reference` and the `owner` that may read it
/// ([`crate::archive::ArchiveOwner`]); version-1 rows, whose references were sequential and
/// bound to no one, are evicted by the migration. Version 3: `calls` gains `changes` (a JSON
/// array of [`Change`]s, `[]` for the records migrated) and `changes_omitted` (an integer, 0).
/// Version 4: `calls` gains `parent` (the call of a Code Mode program that made this one).
/// Version 5: table `rate_limits`, the state of each tool's `rate_limit` ([`crate::limits`]).
pub const SCHEMA_VERSION: i32 = 5;
/// How long one attempt to connect to a PostgreSQL store may take before it is an error
/// ([`StoreError::Unreachable`]): 5 s.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a replica's lease lasts from its last renewal by default: 15 s. A call left open by a
/// replica whose lease expired is judged by the others ([`CallStore::recover`]).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);
/// How often a replica renews its lease by default: every 5 s, so two renewals can fail (a slow
/// server, a pause) before the lease expires.
pub const DEFAULT_LEASE_RENEW: Duration = Duration::from_secs(5);

/// How long a replica's lease lasts and how often it is renewed (PostgreSQL stores). Every
/// process that writes to a PostgreSQL store (each `toolcat serve`, each `toolcat call`) holds
/// one lease row; its renewal also judges the calls of replicas whose lease expired, so those
/// are `outcome_unknown` within `lease + renew` of the replica's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTimes {
    /// How long the lease lasts after each renewal ([`DEFAULT_LEASE`]).
    pub lease: Duration,
    /// How often it is renewed ([`DEFAULT_LEASE_RENEW`]); kept under `lease`.
    pub renew: Duration,
}

impl Default for LeaseTimes {
    fn default() -> LeaseTimes {
        LeaseTimes {
            lease: DEFAULT_LEASE,
            renew: DEFAULT_LEASE_RENEW,
        }
    }
}

impl LeaseTimes {
    /// A lease of `lease`, renewed every third of it (at least every millisecond).
    pub fn of(lease: Duration) -> LeaseTimes {
        LeaseTimes {
            lease,
            renew: (lease / 3).max(Duration::from_millis(1)),
        }
    }

    /// The times made consistent: `lease` at least 10 ms, `renew` at least 1 ms and under
    /// `lease` (a lease renewed later than it lasts would expire between renewals).
    pub fn normalized(self) -> LeaseTimes {
        let lease = self.lease.max(Duration::from_millis(10));
        let renew = self.renew.clamp(
            Duration::from_millis(1),
            lease.saturating_sub(Duration::from_millis(1)),
        );
        LeaseTimes { lease, renew }
    }
}

/// Where a call store is: `--store` / `TOOLCAT_STORE` as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// An SQLite file (the default, `.toolcat/calls.sqlite`).
    File(PathBuf),
    /// A PostgreSQL database: a `postgres://` or `postgresql://` URL.
    Postgres(String),
}

impl StoreLocation {
    /// A text that starts with `postgres://` or `postgresql://` (in any letter case) is a
    /// PostgreSQL URL; a text that looks like another URL (`SCHEME://…` or `SCHEME:/…`, a
    /// scheme of two or more letters, so `C:/…` stays a path) or like a libpq `key=value`
    /// connection string (`host=… password=…`) is refused; any other text is a file path.
    ///
    /// # Errors
    /// [`StoreError::BadUrl`] for a text that looks like a URL or a connection string but is
    /// not a `postgres://` URL, naming it without its password and the fix (so a mistyped URL
    /// never becomes an SQLite file whose directories carry the password).
    pub fn parse(text: &str) -> Result<StoreLocation, StoreError> {
        let trimmed = text.trim();
        let lower = trimmed.to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            return Ok(StoreLocation::Postgres(trimmed.to_string()));
        }
        let refuse = |reason: String, shown: &str| StoreError::BadUrl {
            url: redact_url(shown),
            reason: format!(
                "{reason}; a file whose path really looks like this is passed with a leading `./`"
            ),
        };
        if let Some(scheme) = url_scheme(trimmed) {
            let reason = if matches!(
                scheme.to_ascii_lowercase().as_str(),
                "postgres" | "postgresql"
            ) {
                "a PostgreSQL URL starts with `postgres://` (two slashes)".to_string()
            } else {
                format!("`{scheme}:` is not a PostgreSQL scheme, and a store path is not a URL")
            };
            return Err(refuse(reason, trimmed));
        }
        // `password = x` shown as `password=***`: the spaces around `=` are dropped first.
        let joined = trimmed
            .split('=')
            .map(str::trim)
            .collect::<Vec<_>>()
            .join("=");
        if looks_like_conninfo(&joined) {
            return Err(refuse(
                "a libpq `key=value` connection string is not read as a store".to_string(),
                &joined,
            ));
        }
        Ok(StoreLocation::File(PathBuf::from(text)))
    }
}

impl fmt::Display for StoreLocation {
    /// The path, or the URL with its password replaced by `***`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::File(path) => write!(f, "{}", path.display()),
            StoreLocation::Postgres(url) => f.write_str(&redact_url(url)),
        }
    }
}

/// The scheme of a text that looks like a URL: two or more characters of
/// `[A-Za-z][A-Za-z0-9+.-]*` followed by `:/` (one-letter schemes are Windows drive letters).
fn url_scheme(text: &str) -> Option<&str> {
    let colon = text.find(':')?;
    let scheme = &text[..colon];
    let mut chars = scheme.chars();
    let starts = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let valid = starts
        && scheme.len() >= 2
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'));
    (valid && text[colon + 1..].starts_with('/')).then_some(scheme)
}

/// Whether a text (with no spaces around `=`) looks like a libpq connection string: a
/// whitespace-separated word that is one of its keywords, `=` and a value.
fn looks_like_conninfo(text: &str) -> bool {
    const KEYS: [&str; 10] = [
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "sslmode",
        "connect_timeout",
        "application_name",
    ];
    text.split_whitespace().any(|word| {
        word.split_once('=')
            .is_some_and(|(key, _)| KEYS.contains(&key.to_ascii_lowercase().as_str()))
    })
}

/// `url` with the password of its user information and any `password=` parameter replaced by
/// `***`, so errors and logs can name the store.
pub fn redact_url(url: &str) -> String {
    let mut out = url.to_string();
    // `SCHEME://…`, or a mistyped `SCHEME:/…`: the user information before the host.
    if let Some(after) = url_scheme(&out).map(|scheme| scheme.len() + 1) {
        let rest_start = after + (out[after..].len() - out[after..].trim_start_matches('/').len());
        let authority_end = out[rest_start..]
            .find(['/', '?'])
            .map_or(out.len(), |i| rest_start + i);
        if let Some(at) = out[rest_start..authority_end].rfind('@') {
            let user_info = &out[rest_start..rest_start + at];
            if let Some(colon) = user_info.find(':') {
                out.replace_range(rest_start + colon + 1..rest_start + at, "***");
            }
        }
    }
    // A `password=` query parameter (or key-value pair).
    let lower = out.to_ascii_lowercase();
    if let Some(i) = lower.find("password=") {
        let start = i + "password=".len();
        let end = out[start..]
            .find(['&', ' '])
            .map_or(out.len(), |j| start + j);
        out.replace_range(start..end, "***");
    }
    out
}

/// How long a write waits for another process holding the store's write lock: 5 s.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest argument JSON text kept whole, in bytes (64 KiB). Larger arguments are stored as
/// `{"$truncated": {"bytes": N, "prefix": "<first ARGUMENTS_PREFIX_BYTES bytes>"}}` with
/// [`CallRecord::arguments_truncated`] set: a record is for judging what happened, not a replay
/// log, and one huge argument must not bloat every later read of the store.
pub const MAX_ARGUMENTS_BYTES: usize = 64 * 1024;
/// Bytes of argument JSON text kept in the prefix of truncated arguments (1 KiB).
pub const ARGUMENTS_PREFIX_BYTES: usize = 1024;
/// Largest `detail` text kept, in bytes (4 KiB); longer text is cut at a char boundary and ends
/// with `…`.
pub const MAX_DETAIL_BYTES: usize = 4 * 1024;

/// Most bytes of a [`Change::diff`] a record keeps (16 KiB); a longer diff is cut at a char
/// boundary with [`Change::diff_truncated`] set, and its whole text is archived when the call has
/// a result archive ([`Change::diff_reference`]).
pub const MAX_CHANGE_DIFF_BYTES: usize = 16 * 1024;
/// Most changes one record keeps (256); later ones are counted in
/// [`CallRecord::changes_omitted`], not kept. With [`MAX_CHANGE_DIFF_BYTES`] this bounds the
/// diffs of one record to 4 MiB.
pub const MAX_CHANGES: usize = 256;

/// One file a call changed, as its handler reported it ([`crate::ToolContext::record_change`])
/// and its record keeps it ([`CallRecord::changes`]). Serialized with the field names below, e.g.
/// `{"path": "src/lib.rs", "before": "sha256:…", "after": "sha256:…", "diff": "--- a/src/lib.rs
/// …", "diff_bytes": 120, "diff_truncated": false, "diff_reference": null}`.
///
/// Its JSON Schema is part of the output schema of the tools that report changes; the
/// `schemars(description)`s say there what the doc comments say here, without their links.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(
    description = "One file the call changed: its fingerprints before and after, and a unified diff."
)]
pub struct Change {
    /// The file, relative to the workspace root (`src/lib.rs`).
    pub path: String,
    /// What was there before, as [`crate::fingerprint_path`] writes it: `sha256:HEX` of a file's
    /// content, `absent` when the call created it, ….
    #[schemars(
        description = "What was there before: `sha256:HEX` of a file's content, `absent` when the call created it."
    )]
    pub before: String,
    /// What is there after, in the same format (`absent` when the call deleted it).
    pub after: String,
    /// A unified diff of the change (`--- a/PATH`, `+++ b/PATH`, hunks), at most
    /// [`MAX_CHANGE_DIFF_BYTES`] of it once recorded; empty when the handler has none to give.
    #[schemars(
        description = "A unified diff of the change (`--- a/PATH`, `+++ b/PATH`, hunks), cut past 16 KiB once recorded; empty when there is none."
    )]
    pub diff: String,
    /// Bytes of the whole diff as the handler reported it (more than `diff.len()` when cut).
    #[serde(default)]
    pub diff_bytes: usize,
    /// True when `diff` is only the start of the diff (it was over [`MAX_CHANGE_DIFF_BYTES`]).
    #[serde(default)]
    #[schemars(description = "True when `diff` is only the start of the diff.")]
    pub diff_truncated: bool,
    /// Where the whole diff of a cut one was archived (`result-…`,
    /// [`crate::archive::ResultRef`]): read back with `read_tool_result`, under the same owner
    /// as the call's results and nobody else's ([`crate::archive::ArchiveOwner`]), until it is
    /// evicted like any archived result. `None` when the diff was not cut or the call had no
    /// archive. Set by the coordinator; a value the handler gives is discarded.
    #[serde(default)]
    #[schemars(
        description = "Where the whole diff of a cut one was archived, to read back with `read_tool_result`; null when it was not cut."
    )]
    pub diff_reference: Option<String>,
}

impl Change {
    /// The change of the file `path` (relative to the workspace) from fingerprint `before` to
    /// `after`, with its unified `diff`; not yet cut or archived.
    pub fn new(
        path: impl Into<String>,
        before: impl Into<String>,
        after: impl Into<String>,
        diff: impl Into<String>,
    ) -> Change {
        let diff = diff.into();
        Change {
            path: path.into(),
            before: before.into(),
            after: after.into(),
            diff_bytes: diff.len(),
            diff,
            diff_truncated: false,
            diff_reference: None,
        }
    }

    /// Whether [`Change::diff`] is over what a record keeps ([`MAX_CHANGE_DIFF_BYTES`]).
    pub fn diff_over_limit(&self) -> bool {
        self.diff.len() > MAX_CHANGE_DIFF_BYTES
    }

    /// The change as a record keeps it: the diff cut to [`MAX_CHANGE_DIFF_BYTES`] at a char
    /// boundary, `diff_truncated` set when it was cut, `diff_bytes` at least the length given.
    fn bounded(mut self) -> Change {
        self.diff_bytes = self.diff_bytes.max(self.diff.len());
        if self.diff_over_limit() {
            let kept = cut_at_char_boundary(&self.diff, MAX_CHANGE_DIFF_BYTES).len();
            self.diff.truncate(kept);
            self.diff_truncated = true;
        }
        self
    }
}

/// The id of one call record. Displayed and serialized as `call-N`; parsed from `call-N` or `N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallId(pub i64);

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "call-{}", self.0)
    }
}

/// A text that is neither `call-N` nor `N` with `N` a positive integer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a call id; write `call-N` or `N` with N a positive integer, as `toolcat calls` lists them")]
pub struct ParseCallIdError(pub String);

impl FromStr for CallId {
    type Err = ParseCallIdError;
    fn from_str(s: &str) -> Result<CallId, ParseCallIdError> {
        let digits = s.trim().strip_prefix("call-").unwrap_or(s.trim());
        match digits.parse::<i64>() {
            Ok(n) if n > 0 && digits.bytes().all(|b| b.is_ascii_digit()) => Ok(CallId(n)),
            _ => Err(ParseCallIdError(s.to_string())),
        }
    }
}

impl Serialize for CallId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CallId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CallId, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Where a call is in its lifecycle (see the module docs for the legal moves).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallState {
    /// Recorded; nothing has run yet (arguments being checked, approval pending, queued).
    NotStarted,
    /// The handler is running: the side effect may be under way.
    Running,
    /// The handler reported its side effect done; the result is not yet delivered.
    Committed,
    /// Finished and the result was delivered.
    Succeeded,
    /// Finished with an error, or refused before running.
    Failed,
    /// Cancelled before it finished.
    Cancelled,
    /// The process that ran it ended mid-call, or the outcome could not be learnt: the side
    /// effect may or may not have happened. Never replayed automatically.
    OutcomeUnknown,
}

impl CallState {
    /// Every state, in lifecycle order.
    pub const ALL: [CallState; 7] = [
        CallState::NotStarted,
        CallState::Running,
        CallState::Committed,
        CallState::Succeeded,
        CallState::Failed,
        CallState::Cancelled,
        CallState::OutcomeUnknown,
    ];

    /// The stored and displayed name: `not_started`, `running`, `committed`, `succeeded`,
    /// `failed`, `cancelled` or `outcome_unknown`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CallState::NotStarted => "not_started",
            CallState::Running => "running",
            CallState::Committed => "committed",
            CallState::Succeeded => "succeeded",
            CallState::Failed => "failed",
            CallState::Cancelled => "cancelled",
            CallState::OutcomeUnknown => "outcome_unknown",
        }
    }

    /// True for `succeeded`, `failed`, `cancelled` and `outcome_unknown`: states that never
    /// change.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            CallState::Succeeded
                | CallState::Failed
                | CallState::Cancelled
                | CallState::OutcomeUnknown
        )
    }

    /// True when a record may move from `self` to `to` (see the module docs).
    pub const fn can_move_to(self, to: CallState) -> bool {
        use CallState::*;
        matches!(
            (self, to),
            (NotStarted, Running | Cancelled | Failed)
                | (
                    Running,
                    Committed | Succeeded | Failed | Cancelled | OutcomeUnknown
                )
                | (Committed, Succeeded | Failed | OutcomeUnknown)
        )
    }
}

impl fmt::Display for CallState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A text that names no [`CallState`]. Displays the valid names and, when one is close, a
/// suggestion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseCallStateError {
    /// The text given.
    pub given: String,
    /// The closest valid name, if any is close.
    pub suggestion: Option<&'static str>,
}

impl fmt::Display for ParseCallStateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown call state `{}`", self.given)?;
        let names: Vec<String> = CallState::ALL
            .iter()
            .map(|s| format!("`{}`", s.as_str()))
            .collect();
        write!(f, "; valid states: {}", names.join(", "))?;
        if let Some(s) = self.suggestion {
            write!(f, "; did you mean `{s}`")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseCallStateError {}

impl FromStr for CallState {
    type Err = ParseCallStateError;
    /// Parses a name of [`CallState::as_str`]; `-` is accepted for `_` (`outcome-unknown`).
    fn from_str(s: &str) -> Result<CallState, ParseCallStateError> {
        let normal = s.trim().to_ascii_lowercase().replace('-', "_");
        CallState::ALL
            .into_iter()
            .find(|st| st.as_str() == normal)
            .ok_or_else(|| ParseCallStateError {
                given: s.to_string(),
                suggestion: did_you_mean(s, CallState::ALL.iter().map(|st| st.as_str())),
            })
    }
}

/// What [`CallStore::begin`] records about a call before anything runs.
#[derive(Debug, Clone, Copy)]
pub struct NewCall<'a> {
    /// The tool's exported name.
    pub tool: &'a str,
    /// The arguments as given (stored as JSON text, capped at [`MAX_ARGUMENTS_BYTES`]).
    pub arguments: &'a serde_json::Value,
    /// The tool's declared `effect` (`read`, `write`, `destructive`, …).
    pub effect: &'a str,
    /// The tool's declared `idempotent`.
    pub idempotent: bool,
    /// The call this one retries, under an explicit retry policy for idempotent tools.
    pub retry_of: Option<CallId>,
    /// The call this one was made from: a Code Mode program's `run_code` call
    /// ([`crate::code_mode`]); `None` for a call the model made itself.
    pub parent: Option<CallId>,
}

/// One stored call record. Serialized with `id`/`retry_of` as `call-N` and `state` as its name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    pub id: CallId,
    /// The tool's exported name.
    pub tool: String,
    /// The arguments, or the `{"$truncated": ...}` stand-in described at [`MAX_ARGUMENTS_BYTES`].
    pub arguments: serde_json::Value,
    /// True when `arguments` is the truncated stand-in.
    pub arguments_truncated: bool,
    pub state: CallState,
    /// The tool's declared `effect`.
    pub effect: String,
    /// The tool's declared `idempotent`.
    pub idempotent: bool,
    pub retry_of: Option<CallId>,
    /// The call this one was made from (a Code Mode program's `run_code` call), serialized as
    /// `call-N`; `None` for a call the model made itself (and for every record of a store older
    /// than schema version 4 read read-only).
    pub parent: Option<CallId>,
    /// The last detail given with a state change (an error, why the outcome is unknown, …).
    pub detail: Option<String>,
    /// The id of the process that began the call (on the machine of its `replica`).
    pub pid: u32,
    /// The replica that began the call, `replica-` and 16 base32 characters, in a PostgreSQL
    /// store, whose lease ([`LeaseTimes`]) says whether it still runs; `None` (and not
    /// serialized) in an SQLite store, where `pid` alone says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    /// When the record was begun: RFC 3339, UTC, milliseconds (`2026-01-31T12:00:00.000Z`).
    pub created_at: String,
    /// When the state last changed, in the same format.
    pub updated_at: String,
    /// The files the call changed, in the order reported (at most [`MAX_CHANGES`]); always
    /// serialized, `[]` for a call that reported none (and for every record of a store older
    /// than schema version 3 read read-only).
    pub changes: Vec<Change>,
    /// Changes reported past [`MAX_CHANGES`], counted but not kept (up to `u32::MAX`); always
    /// serialized.
    pub changes_omitted: u32,
}

/// A stored row that cannot be read back as a [`CallRecord`] (edited or damaged outside
/// toolcat): its id and why. [`CallStore::list_rows`] returns it in the record's place, so the
/// other records stay readable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DamagedRecord {
    pub id: CallId,
    /// What is wrong with the row, naming the column.
    pub reason: String,
}

/// Why the call store failed. Each message names the store file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file or its directory could not be created or opened.
    #[error("cannot open the call store `{path}`: {source}; check the path and that its directory is writable, or pass another path with `--store` or `TOOLCAT_STORE`")]
    Open {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The store file, or a part of a relative store path, is a symbolic link: never followed,
    /// so a link planted where a store is expected cannot make toolcat create or write a file
    /// elsewhere (SQLite's `SQLITE_OPEN_NOFOLLOW`; see `store_open_path`).
    #[error("the call store `{path}` is a symbolic link (or a relative path through one), which is not followed; remove the link, or pass another path with `--store PATH` or `TOOLCAT_STORE`")]
    Symlink { path: String },
    /// The file is not an SQLite database, is damaged, or belongs to another application.
    #[error("`{path}` is not a toolcat call store or is damaged ({reason}); move it aside and a new store is created, or pass another path with `--store`")]
    Corrupt { path: String, reason: String },
    /// The file was written by a newer toolcat.
    #[error("the call store `{path}` has schema version {found} but this toolcat reads version {supported}; use the newer toolcat, or pass another store with `--store`")]
    NewerSchema {
        path: String,
        found: i32,
        supported: i32,
    },
    /// Another process held the store's write lock for longer than [`BUSY_TIMEOUT`].
    #[error(
        "the call store `{path}` stayed locked by another process for 5 s; retry when it is done"
    )]
    Busy { path: String },
    /// The state change breaks the lifecycle.
    #[error("call `{id}` cannot move from `{from}` to `{to}`; {hint}")]
    IllegalTransition {
        id: CallId,
        from: CallState,
        to: CallState,
        hint: &'static str,
    },
    /// The store can be read but not written: nothing can be recorded, so nothing runs with it.
    #[error("the call store `{path}` is read-only, so no call can be recorded with it and none is run; pass `--store` (or `TOOLCAT_STORE`) a file this user can write")]
    ReadOnly { path: String },
    /// One record cannot be read back (edited or damaged outside toolcat); the others can.
    #[error("record `{id}` of the call store `{path}` is damaged: {reason}; the other records are intact, and `toolcat calls` lists them with this one flagged")]
    Damaged {
        path: String,
        id: CallId,
        reason: String,
    },
    /// A change was reported for a call that is not running (`running` or `committed`): a
    /// finished call's record never changes.
    #[error("call `{id}` of the call store `{path}` is `{state}`, so no change can be added to its record; changes are recorded while the call runs")]
    NotRunning {
        path: String,
        id: CallId,
        state: CallState,
    },
    /// No record has this id.
    #[error("no call `{id}` in the call store `{path}`; `toolcat calls` lists the recorded calls")]
    UnknownCall { id: CallId, path: String },
    /// A `postgres://` store whose URL cannot be read.
    #[error("`{url}` is not a PostgreSQL store URL ({reason}); write `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`, or pass an SQLite file path with `--store` or `TOOLCAT_STORE`")]
    BadUrl {
        /// The URL as given, its password replaced by `***`.
        url: String,
        reason: String,
    },
    /// The PostgreSQL server of the store cannot be reached, or refused the login.
    #[error("cannot connect to the PostgreSQL store `{url}`: {reason}; check that the server runs and accepts this user, host, port and database, or pass another store with `--store` or `TOOLCAT_STORE`")]
    Unreachable {
        /// The URL, its password replaced by `***`.
        url: String,
        reason: String,
    },
    /// A `postgres://` store given to a toolcat built without the `postgres` feature.
    #[error("the call store `{url}` is a PostgreSQL database, but this toolcat was built without the `postgres` feature; build it with `--features postgres`, or pass an SQLite file path with `--store` or `TOOLCAT_STORE`")]
    NoPostgres {
        /// The URL, its password replaced by `***`.
        url: String,
    },
    /// Any other PostgreSQL failure (the server's message and SQLSTATE code).
    #[error("call store `{url}`: {reason}; check that this user may create and write the `toolcat_*` tables of this database, or pass another store with `--store` or `TOOLCAT_STORE`")]
    Postgres {
        /// The URL, its password replaced by `***`.
        url: String,
        reason: String,
    },
    /// Any other SQLite failure.
    #[error("call store `{path}`: {source}")]
    Sqlite {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
}

/// The label of an in-memory store in errors.
const IN_MEMORY: &str = "<in-memory call store>";

/// Maps an SQLite error on the store `path` to a [`StoreError`] that says what to do.
/// Whether `e` is SQLite's `SQLITE_BUSY` or `SQLITE_LOCKED`: another connection holds a lock
/// this one needs, and the same step may succeed a moment later.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Runs `step` until it succeeds, fails other than [`is_busy`], or `budget` has passed since the
/// first try, pausing between tries from 2 ms, doubled each time up to 100 ms. For the steps
/// SQLite answers `SQLITE_BUSY` at once, without its busy handler ([`BUSY_TIMEOUT`]).
fn retry_while_busy<T>(
    budget: Duration,
    mut step: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        match step() {
            Err(e) if is_busy(&e) && started.elapsed() < budget => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            answer => return answer,
        }
    }
}

pub(crate) fn sqlite_error(path: &str, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            path: path.to_string(),
            reason: e.to_string(),
        },
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy {
            path: path.to_string(),
        },
        Some(ErrorCode::ReadOnly) => StoreError::ReadOnly {
            path: path.to_string(),
        },
        _ => StoreError::Sqlite {
            path: path.to_string(),
            source: e,
        },
    }
}

/// Maps a failed open of the store file `path`: a symbolic link refused by
/// `SQLITE_OPEN_NOFOLLOW` is [`StoreError::Symlink`], a file that cannot be opened
/// [`StoreError::Open`], anything else as [`sqlite_error`].
fn open_error(path: &str, e: rusqlite::Error) -> StoreError {
    match &e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CANTOPEN_SYMLINK =>
        {
            StoreError::Symlink {
                path: path.to_string(),
            }
        }
        _ => match e.sqlite_error_code() {
            Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => StoreError::Open {
                path: path.to_string(),
                source: std::io::Error::other(e.to_string()),
            },
            _ => sqlite_error(path, e),
        },
    }
}

/// What kind of file `meta` describes, for messages refusing it: `a directory`, `a FIFO`, `a
/// socket`, `a device`, or `a special file` (the call store here, the tokens file in
/// `crate::mcp::auth`).
pub(crate) fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    "a special file"
}

/// Refuses a store whose file, or one of SQLite's files beside it (`-wal`, `-shm`, `-journal`),
/// exists and is neither a regular file nor a symbolic link (which SQLite's `NOFOLLOW` refuses
/// by itself): a directory, a FIFO, a socket or a device. SQLite would fail on most of them with
/// a bare I/O error, and a FIFO would block the open until someone writes to it, so a FIFO
/// planted at `.toolcat/calls.sqlite` in a workspace could hang `toolcat calls`. A path ending
/// in `/` that is no directory is refused too: it names a directory, and SQLite would create a
/// file under the name without the slash.
fn refuse_special_files(path: &Path, label: &str) -> Result<(), StoreError> {
    // `DIR/` names a directory: SQLite would create the file `DIR` instead.
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") && !path.is_dir() {
        return Err(StoreError::Open {
            path: label.to_string(),
            source: std::io::Error::other(
                "the path ends in `/`, so it names a directory, but a call store is a file: pass a file path such as `DIR/calls.sqlite`",
            ),
        });
    }
    let mut sidecars = vec![path.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        sidecars.push(name.into());
    }
    for file in sidecars {
        let Ok(meta) = std::fs::symlink_metadata(&file) else {
            continue;
        };
        let kind = meta.file_type();
        if kind.is_file() || kind.is_symlink() {
            continue;
        }
        let what = file_kind(&meta);
        let reason = if file == path {
            format!("it is {what}, not a regular file")
        } else {
            format!(
                "`{}` beside it is {what}, not a regular file; remove it",
                file.display()
            )
        };
        return Err(StoreError::Open {
            path: label.to_string(),
            source: std::io::Error::other(reason),
        });
    }
    Ok(())
}

/// The current time as SQLite writes it: RFC 3339, UTC, milliseconds.
const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// The schema of version 1. `results` belongs to [`crate::archive`]; both live in one file so one
/// path (`--store`) names everything a host keeps about its calls.
pub(crate) const SCHEMA_V1: &str = "
CREATE TABLE calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    arguments_truncated INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL,
    effect TEXT NOT NULL,
    idempotent INTEGER NOT NULL,
    retry_of INTEGER,
    detail TEXT,
    pid INTEGER NOT NULL,
    pid_start INTEGER,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX calls_by_state ON calls (state, id);
CREATE TABLE results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id INTEGER,
    tool TEXT NOT NULL,
    text TEXT,
    total_bytes INTEGER NOT NULL,
    total_chars INTEGER NOT NULL,
    truncated INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    evicted_at TEXT
);
CREATE INDEX results_live ON results (evicted_at, id);
";

/// From version 1 to 2 (see [`SCHEMA_VERSION`]).
const MIGRATION_V2: &str = "
ALTER TABLE results ADD COLUMN reference BLOB;
ALTER TABLE results ADD COLUMN owner BLOB;
CREATE UNIQUE INDEX results_by_reference ON results (reference);
UPDATE results SET text = NULL, evicted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
    WHERE text IS NOT NULL;
";

/// From version 2 to 3 (see [`SCHEMA_VERSION`]).
const MIGRATION_V3: &str = "
ALTER TABLE calls ADD COLUMN changes TEXT NOT NULL DEFAULT '[]';
ALTER TABLE calls ADD COLUMN changes_omitted INTEGER NOT NULL DEFAULT 0;
";

/// From version 3 to 4 (see [`SCHEMA_VERSION`]).
const MIGRATION_V4: &str = "
ALTER TABLE calls ADD COLUMN parent INTEGER;
";

/// From version 4 to 5 (see [`SCHEMA_VERSION`]): the rate-limit state of [`crate::limits`]. A
/// file of version 4 may hold the table already (builds before version 5 created it on first
/// use), hence `IF NOT EXISTS`.
const MIGRATION_V5: &str = "
CREATE TABLE IF NOT EXISTS rate_limits (
    tool TEXT NOT NULL,
    key TEXT NOT NULL,
    -- the theoretical arrival time, nanoseconds since the Unix epoch
    tat_ns INTEGER NOT NULL,
    PRIMARY KEY (tool, key)
) WITHOUT ROWID;
";

/// The path SQLite opens for the store at `path`, with `SQLITE_OPEN_NOFOLLOW`, which refuses a
/// symbolic link at any part of the path it is given. A relative path is given as it is (SQLite
/// puts it under the current directory's physical path), so no part of it may be a link: the
/// current directory is often an untrusted workspace. The directory of an absolute path is the
/// host's choice and is resolved first (a home or `/tmp` reached through a link still works);
/// only the store file itself may then not be a link. Falls back to `path` when the directory
/// cannot be resolved (the open then reports why).
fn store_open_path(path: &Path) -> std::path::PathBuf {
    if !path.is_absolute() {
        return path.to_path_buf();
    }
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|dir| dir.join(name))
            .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

/// Opens (creating when absent) the SQLite store at `path`, or an in-memory one for `None`, with
/// WAL, `synchronous = FULL`, [`BUSY_TIMEOUT`], and the schema checked or created. A store file
/// that is a symbolic link, or a relative path through one, is refused
/// ([`StoreError::Symlink`], [`store_open_path`]). Returns the connection and the label errors
/// name the store by.
pub(crate) fn open_database(path: Option<&Path>) -> Result<(Connection, String), StoreError> {
    let (conn, label) = match path {
        None => {
            let conn = Connection::open_in_memory().map_err(|e| sqlite_error(IN_MEMORY, e))?;
            (conn, IN_MEMORY.to_string())
        }
        Some(path) => {
            let label = path.display().to_string();
            refuse_special_files(path, &label)?;
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|source| StoreError::Open {
                    path: label.clone(),
                    // `create_dir_all` says only "File exists" when a part of the path is a file.
                    source: dir
                        .ancestors()
                        .find(|a| a.is_file())
                        .map_or(source, |file| {
                            std::io::Error::other(format!(
                                "`{}` is a file, not a directory",
                                file.display()
                            ))
                        }),
                })?;
            }
            let flags = OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW;
            let conn = Connection::open_with_flags(store_open_path(path), flags)
                .map_err(|e| open_error(&label, e))?;
            // SQLite opens a file it may not write read-only without an error; a writer must
            // know now, before any call is begun.
            if conn.is_readonly("main").unwrap_or(false) {
                return Err(StoreError::ReadOnly { path: label });
            }
            (conn, label)
        }
    };
    configure(&conn, &label)?;
    migrate(&conn, &label, true)?;
    Ok((conn, label))
}

fn configure(conn: &Connection, label: &str) -> Result<(), StoreError> {
    let err = |e| sqlite_error(label, e);
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
    // `journal_mode` answers with the mode in force (`memory` for an in-memory database).
    // Switching a new file to WAL upgrades this connection's read lock to a write lock, and
    // SQLite answers that upgrade `SQLITE_BUSY` at once, without its busy handler (waiting could
    // deadlock), when another process is switching or writing the same file: the step is tried
    // again here, a little later each time, for up to [`BUSY_TIMEOUT`].
    let _mode: String = retry_while_busy(BUSY_TIMEOUT, || {
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
    })
    .map_err(err)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(err)?;
    Ok(())
}

/// Checks that the store's `rate_limits` table has the columns [`MIGRATION_V5`] makes: a file of
/// version 4 that held a table of that name made elsewhere keeps it through the migration's `IF
/// NOT EXISTS`, and every rate-limited call would then fail on it.
fn check_rate_limits(conn: &Connection, label: &str) -> Result<(), StoreError> {
    conn.prepare("SELECT tool, key, tat_ns FROM rate_limits WHERE tool = ?1 AND key = ?2")
        .map(drop)
        .map_err(|e| StoreError::Corrupt {
            path: label.to_string(),
            reason: format!(
                "its table `rate_limits` is not toolcat's (columns tool, key, tat_ns): {e}"
            ),
        })
}

/// Checks the schema of the store; a `writable` one of version 0 (empty) is created, an older one
/// migrated to [`SCHEMA_VERSION`]. A read-only store of an older version is left as it is.
/// Returns the version the store has now.
fn migrate(conn: &Connection, label: &str, writable: bool) -> Result<i32, StoreError> {
    let err = |e| sqlite_error(label, e);
    let check = |conn: &Connection| -> Result<i32, StoreError> {
        let app: i32 = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .map_err(err)?;
        let version: i32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(err)?;
        if app != 0 && app != APPLICATION_ID {
            return Err(StoreError::Corrupt {
                path: label.to_string(),
                reason: format!("its application id is {app:#x}, not toolcat's"),
            });
        }
        if version < 0 {
            return Err(StoreError::Corrupt {
                path: label.to_string(),
                reason: format!("its schema version is {version}, which toolcat never writes"),
            });
        }
        if version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: label.to_string(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if version == 0 {
            let tables: i64 = conn
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                    [],
                    |r| r.get(0),
                )
                .map_err(err)?;
            if tables > 0 {
                return Err(StoreError::Corrupt {
                    path: label.to_string(),
                    reason: "it is an SQLite database with tables but no toolcat schema".into(),
                });
            }
        }
        Ok(version)
    };
    // The look before the lock reads the version and the tables in one read transaction: read
    // one by one, they could straddle another process's creation of the schema (version 0, yet
    // tables) and a store being made would be judged foreign.
    conn.execute_batch("BEGIN").map_err(err)?;
    let seen = check(conn);
    conn.execute_batch("COMMIT").map_err(err)?;
    match seen? {
        SCHEMA_VERSION if writable => {
            return check_rate_limits(conn, label).map(|()| SCHEMA_VERSION)
        }
        SCHEMA_VERSION => return Ok(SCHEMA_VERSION),
        v @ 1.. if !writable => return Ok(v),
        _ => {}
    }
    // Another process may be creating or migrating the schema at the same moment: take the
    // write lock, then look again.
    conn.execute_batch("BEGIN IMMEDIATE").map_err(err)?;
    let created = (|| {
        let version = check(conn)?;
        if version == 0 {
            conn.execute_batch(SCHEMA_V1).map_err(err)?;
            conn.pragma_update(None, "application_id", APPLICATION_ID)
                .map_err(err)?;
        }
        if version < 2 {
            conn.execute_batch(MIGRATION_V2).map_err(err)?;
        }
        if version < 3 {
            conn.execute_batch(MIGRATION_V3).map_err(err)?;
        }
        if version < 4 {
            conn.execute_batch(MIGRATION_V4).map_err(err)?;
        }
        if version < 5 {
            conn.execute_batch(MIGRATION_V5).map_err(err)?;
        }
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(err)?;
        Ok(())
    })();
    let created = created.and_then(|()| check_rate_limits(conn, label));
    match created {
        Ok(()) => conn
            .execute_batch("COMMIT")
            .map(|()| SCHEMA_VERSION)
            .map_err(err),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Locks a connection mutex; a panic in another thread while holding it leaves SQLite itself
/// consistent (each write is one transaction), so a poisoned lock is taken over.
pub(crate) fn lock(m: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `text` cut to at most `max` bytes at a char boundary.
pub(crate) fn cut_at_char_boundary(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The durable store of call records. `Send + Sync`: one SQLite connection behind a mutex, or a
/// pool of PostgreSQL connections ([`CallStore::connect`]), so a store is shared by reference (or
/// `Arc`) between the tasks of a process; other processes open the same file or database with
/// their own store.
pub struct CallStore {
    backend: Backend,
    label: String,
    path: Option<PathBuf>,
    /// The file's schema version: an older file opened read-only lacks the later columns.
    version: i32,
}

/// Where a store keeps its rows: the two backends (see the module docs for why an enum).
pub(crate) enum Backend {
    /// An SQLite file (or memory): one connection, used in place.
    Sqlite(Mutex<Connection>),
    /// A PostgreSQL database, shared with the result archive opened beside the store.
    #[cfg(feature = "postgres")]
    Postgres(std::sync::Arc<postgres::PgStore>),
}

impl fmt::Debug for CallStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallStore")
            .field("store", &self.label)
            .finish()
    }
}

const RECORD_COLUMNS: &str = "id, tool, arguments, arguments_truncated, state, effect, \
     idempotent, retry_of, detail, pid, created_at, updated_at, changes, changes_omitted, parent";
/// [`RECORD_COLUMNS`] of a file of schema version 3, which has no `parent` column: its records
/// read with none.
const RECORD_COLUMNS_V3: &str = "id, tool, arguments, arguments_truncated, state, effect, \
     idempotent, retry_of, detail, pid, created_at, updated_at, changes, changes_omitted, NULL";
/// [`RECORD_COLUMNS`] of a file older than schema version 3, which has no `changes` columns:
/// its records read with none.
const RECORD_COLUMNS_V2: &str = "id, tool, arguments, arguments_truncated, state, effect, \
     idempotent, retry_of, detail, pid, created_at, updated_at, '[]', 0, NULL";

impl CallStore {
    /// Opens the store file at `path`, creating it and its parent directories when absent.
    /// Records of dead processes are left as they are until [`CallStore::recover`].
    ///
    /// # Errors
    /// [`StoreError::Open`] when the file cannot be created or opened, [`StoreError::Corrupt`]
    /// for a file that is not a toolcat store, [`StoreError::NewerSchema`] for one written by a
    /// newer toolcat.
    pub fn open(path: &Path) -> Result<CallStore, StoreError> {
        let (conn, label) = open_database(Some(path))?;
        Ok(CallStore {
            backend: Backend::Sqlite(Mutex::new(conn)),
            label,
            path: Some(path.to_path_buf()),
            version: SCHEMA_VERSION,
        })
    }

    /// Opens the existing store file at `path` for reading only: nothing is created, migrated or
    /// written, so a store in a directory this user cannot write can still be listed. When the
    /// write-ahead log's index (`-shm`) cannot be created beside the file, the file is read as
    /// immutable (SQLite's `immutable=1`): records still only in its write-ahead log are then
    /// not seen. Writes on the store fail with [`StoreError::ReadOnly`].
    ///
    /// # Errors
    /// [`StoreError::Open`] when the file cannot be read, [`StoreError::Corrupt`] for a file that
    /// is not a toolcat store, [`StoreError::NewerSchema`] for one written by a newer toolcat.
    pub fn open_read_only(path: &Path) -> Result<CallStore, StoreError> {
        let label = path.display().to_string();
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let readable = |conn: Connection| {
            conn.busy_timeout(BUSY_TIMEOUT)?;
            conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i32>(0))?;
            Ok::<_, rusqlite::Error>(conn)
        };
        refuse_special_files(path, &label)?;
        let open_path = store_open_path(path);
        let open = || {
            Connection::open_with_flags(read_only_uri(&open_path, false), flags).and_then(readable)
        };
        // A store being created or written this moment can be busy or locked for a moment:
        // open it again for up to a second, and never read it as immutable then, which takes no
        // lock and could see it half written.
        let conn = match retry_while_busy(Duration::from_secs(1), open) {
            Ok(conn) => conn,
            Err(e) if is_busy(&e) => return Err(sqlite_error(&label, e)),
            // Most often no `-shm` can be made beside the file (a directory this user may not
            // write): read the file as immutable.
            Err(_) => Connection::open_with_flags(read_only_uri(&open_path, true), flags)
                .and_then(readable)
                .map_err(|e| open_error(&label, e))?,
        };
        let version = migrate(&conn, &label, false)?;
        Ok(CallStore {
            backend: Backend::Sqlite(Mutex::new(conn)),
            label,
            path: Some(path.to_path_buf()),
            version,
        })
    }

    /// A store in memory, gone with the value: for tests and hosts that keep no records.
    pub fn in_memory() -> Result<CallStore, StoreError> {
        let (conn, label) = open_database(None)?;
        Ok(CallStore {
            backend: Backend::Sqlite(Mutex::new(conn)),
            label,
            path: None,
            version: SCHEMA_VERSION,
        })
    }

    /// Opens the store `location` for writing: the SQLite file ([`CallStore::open`]) or the
    /// PostgreSQL database ([`CallStore::connect`] with the default [`LeaseTimes`]).
    ///
    /// # Errors
    /// As [`CallStore::open`] or [`CallStore::connect`].
    pub fn open_location(location: &StoreLocation) -> Result<CallStore, StoreError> {
        match location {
            StoreLocation::File(path) => CallStore::open(path),
            StoreLocation::Postgres(url) => CallStore::connect(url, LeaseTimes::default()),
        }
    }

    /// Connects to the PostgreSQL store at `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB`,
    /// or any form `tokio_postgres::Config` reads), creates or migrates its tables
    /// (`toolcat_calls`, `toolcat_results`, `toolcat_replicas`, versioned in
    /// `toolcat_schema`; see the module docs), and takes this process's replica lease, renewed
    /// every `lease.renew` on the store's own thread until the store (and every archive opened
    /// beside it) is dropped, when the lease row is deleted. Blocks until connected (at most
    /// [`CONNECT_TIMEOUT`] per attempt).
    ///
    /// # Errors
    /// [`StoreError::BadUrl`], [`StoreError::Unreachable`] (each naming the URL without its
    /// password), [`StoreError::NewerSchema`] for a database migrated by a newer toolcat,
    /// [`StoreError::Postgres`]; [`StoreError::NoPostgres`] when built without the `postgres`
    /// feature.
    pub fn connect(url: &str, lease: LeaseTimes) -> Result<CallStore, StoreError> {
        #[cfg(feature = "postgres")]
        {
            let pg = postgres::PgStore::connect(url, lease)?;
            Ok(CallStore {
                label: pg.label().to_string(),
                backend: Backend::Postgres(pg),
                path: None,
                version: SCHEMA_VERSION,
            })
        }
        #[cfg(not(feature = "postgres"))]
        {
            let _ = lease;
            Err(StoreError::NoPostgres {
                url: redact_url(url),
            })
        }
    }

    /// The file this store was opened on, `None` in memory and in PostgreSQL.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Where the store is, as errors name it: the file path, or the PostgreSQL URL without its
    /// password.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// This process's replica id in a PostgreSQL store (the id its records name,
    /// [`CallRecord::replica`]); `None` for SQLite.
    pub fn replica(&self) -> Option<&str> {
        match &self.backend {
            Backend::Sqlite(_) => None,
            #[cfg(feature = "postgres")]
            Backend::Postgres(pg) => Some(pg.replica()),
        }
    }

    /// Drops the store as a killed process would leave it: a PostgreSQL store stops renewing
    /// its lease but does not delete it, so other replicas judge its open calls once the lease
    /// expires. For tests of that judgement; an SQLite store is simply dropped.
    #[doc(hidden)]
    pub fn end_without_releasing_lease(self) {
        #[cfg(feature = "postgres")]
        if let Backend::Postgres(pg) = &self.backend {
            pg.abandon_lease();
        }
    }

    /// The SQLite connection of a test's store.
    #[cfg(test)]
    pub(crate) fn sqlite(&self) -> MutexGuard<'_, Connection> {
        match &self.backend {
            Backend::Sqlite(conn) => lock(conn),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => panic!("not an SQLite store"),
        }
    }

    /// Runs `f` with the store's SQLite connection (locked for the time of `f`); `None` for a
    /// PostgreSQL store. For modules that keep their own tables in the store (a statement's
    /// errors map with `sqlite_error(store.label(), e)`).
    #[allow(dead_code)] // The entry point of state kept beside the records (rate limits).
    pub(crate) fn with_sqlite<T>(&self, f: impl FnOnce(&Connection) -> T) -> Option<T> {
        match &self.backend {
            Backend::Sqlite(conn) => Some(f(&lock(conn))),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => None,
        }
    }

    /// Runs `f` with a pooled PostgreSQL connection on the store's runtime and waits for its
    /// answer (without holding a tokio worker, see the module docs); `f` gets the connection and
    /// the store's label for errors (`postgres::pg_error(&label, e)`). `None` for an SQLite
    /// store.
    #[cfg(feature = "postgres")]
    #[allow(dead_code)] // The entry point of state kept beside the records (rate limits).
    pub(crate) fn with_postgres<T, F, Fut>(&self, f: F) -> Option<Result<T, StoreError>>
    where
        F: FnOnce(deadpool_postgres::Object, String) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, StoreError>> + Send,
        T: Send + 'static,
    {
        match &self.backend {
            Backend::Sqlite(_) => None,
            Backend::Postgres(pg) => Some(pg.with_client(f)),
        }
    }

    /// The backend, for an archive opened beside this store.
    pub(crate) fn backend(&self) -> &Backend {
        &self.backend
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        |e| sqlite_error(&self.label, e)
    }

    /// The columns a record is read by ([`RECORD_COLUMNS`], or [`RECORD_COLUMNS_V3`] /
    /// [`RECORD_COLUMNS_V2`] for an older file read as it is).
    fn columns(&self) -> &'static str {
        match self.version {
            ..=2 => RECORD_COLUMNS_V2,
            3 => RECORD_COLUMNS_V3,
            _ => RECORD_COLUMNS,
        }
    }

    /// Records a new call in state `not_started` and returns its id; the record is on disk when
    /// this returns. Arguments over [`MAX_ARGUMENTS_BYTES`] are stored truncated. In a
    /// PostgreSQL store the record names this process's replica ([`CallRecord::replica`]).
    ///
    /// # Errors
    /// [`StoreError::UnknownCall`] when `retry_of` names no record; SQLite or PostgreSQL
    /// failures.
    pub fn begin(&self, new: NewCall<'_>) -> Result<CallId, StoreError> {
        let text = new.arguments.to_string();
        let (arguments, truncated) = if text.len() > MAX_ARGUMENTS_BYTES {
            let stand_in = serde_json::json!({ "$truncated": {
                "bytes": text.len(),
                "prefix": cut_at_char_boundary(&text, ARGUMENTS_PREFIX_BYTES),
            }});
            (stand_in.to_string(), true)
        } else {
            (text, false)
        };
        let pid = std::process::id();
        let begun = Begun {
            tool: new.tool.to_string(),
            arguments,
            truncated,
            effect: new.effect.to_string(),
            idempotent: new.idempotent,
            retry_of: new.retry_of,
            parent: new.parent,
            pid,
            pid_start: process_start(pid).map(|t| t as i64),
        };
        let conn = match &self.backend {
            Backend::Sqlite(conn) => conn,
            #[cfg(feature = "postgres")]
            Backend::Postgres(pg) => return pg.begin(begun),
        };
        let conn = lock(conn);
        if let Some(retry_of) = begun.retry_of {
            let found: Option<i64> = conn
                .query_row("SELECT id FROM calls WHERE id = ?1", [retry_of.0], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(self.err())?;
            if found.is_none() {
                return Err(StoreError::UnknownCall {
                    id: retry_of,
                    path: self.label.clone(),
                });
            }
        }
        conn.execute(
            &format!(
                "INSERT INTO calls (tool, arguments, arguments_truncated, state, effect, \
                 idempotent, retry_of, pid, pid_start, created_at, updated_at, parent) \
                 VALUES (?1, ?2, ?3, 'not_started', ?4, ?5, ?6, ?7, ?8, {NOW}, {NOW}, ?9)"
            ),
            params![
                begun.tool,
                begun.arguments,
                begun.truncated,
                begun.effect,
                begun.idempotent,
                begun.retry_of.map(|c| c.0),
                begun.pid,
                begun.pid_start,
                begun.parent.map(|c| c.0),
            ],
        )
        .map_err(self.err())?;
        Ok(CallId(conn.last_insert_rowid()))
    }

    /// Moves call `id` to `state`, with `detail` (cut to [`MAX_DETAIL_BYTES`]) replacing the
    /// previous detail when given; on disk when this returns.
    ///
    /// # Errors
    /// [`StoreError::IllegalTransition`] for a move the lifecycle does not allow (the record is
    /// unchanged), [`StoreError::UnknownCall`], SQLite or PostgreSQL failures.
    pub fn set_state(
        &self,
        id: CallId,
        state: CallState,
        detail: Option<&str>,
    ) -> Result<(), StoreError> {
        let detail = detail.map(cap_detail);
        let conn = match &self.backend {
            Backend::Sqlite(conn) => conn,
            #[cfg(feature = "postgres")]
            Backend::Postgres(pg) => return pg.set_state(id, state, detail),
        };
        let mut conn = lock(conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.err())?;
        let current: Option<String> = tx
            .query_row("SELECT state FROM calls WHERE id = ?1", [id.0], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.err())?;
        check_move(&self.label, id, current.as_deref(), state)?;
        tx.execute(
            &format!(
                "UPDATE calls SET state = ?2, detail = coalesce(?3, detail), updated_at = {NOW} \
                 WHERE id = ?1"
            ),
            params![id.0, state.as_str(), detail],
        )
        .map_err(self.err())?;
        tx.commit().map_err(self.err())
    }

    /// Appends `change` to the record of call `id`, which must be `running` or `committed`; on
    /// disk when this returns. Its diff is cut to [`MAX_CHANGE_DIFF_BYTES`]
    /// ([`Change::diff_truncated`]); archiving the whole diff is the caller's (the coordinator
    /// does it before calling this, setting [`Change::diff_reference`]). Past [`MAX_CHANGES`]
    /// the change is not kept and [`CallRecord::changes_omitted`] counts it. The state and
    /// `updated_at` are not touched.
    ///
    /// # Errors
    /// [`StoreError::NotRunning`] for a record in another state (nothing is added),
    /// [`StoreError::UnknownCall`], [`StoreError::Damaged`] when the stored changes cannot be
    /// read back, SQLite or PostgreSQL failures.
    pub fn add_change(&self, id: CallId, change: &Change) -> Result<(), StoreError> {
        let conn = match &self.backend {
            Backend::Sqlite(conn) => conn,
            #[cfg(feature = "postgres")]
            Backend::Postgres(pg) => return pg.add_change(id, change.clone()),
        };
        let mut conn = lock(conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.err())?;
        let row: Option<(String, String)> = tx
            .query_row(
                "SELECT state, changes FROM calls WHERE id = ?1",
                [id.0],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(self.err())?;
        match appended(&self.label, id, row, change)? {
            Appended::Omitted => tx.execute(
                "UPDATE calls SET changes_omitted = min(changes_omitted + 1, 4294967295) WHERE id = ?1",
                [id.0],
            ),
            Appended::Kept(text) => tx.execute(
                "UPDATE calls SET changes = ?2 WHERE id = ?1",
                params![id.0, text],
            ),
        }
        .map_err(self.err())?;
        tx.commit().map_err(self.err())
    }

    /// The record of call `id`, `None` when there is none.
    pub fn get(&self, id: CallId) -> Result<Option<CallRecord>, StoreError> {
        let raw = match &self.backend {
            Backend::Sqlite(conn) => lock(conn)
                .query_row(
                    &format!("SELECT {} FROM calls WHERE id = ?1", self.columns()),
                    [id.0],
                    RawRecord::from_row,
                )
                .optional()
                .map_err(self.err())?,
            #[cfg(feature = "postgres")]
            Backend::Postgres(pg) => pg.get(id)?,
        };
        raw.map(|r| r.and_then(record).map_err(|d| self.damaged(d)))
            .transpose()
    }

    /// Up to `limit` records, newest first, only those in `state` when given.
    ///
    /// # Errors
    /// [`StoreError::Damaged`] when a row cannot be read back ([`CallStore::list_rows`] lists the
    /// others); SQLite or PostgreSQL failures.
    pub fn list(
        &self,
        state: Option<CallState>,
        limit: usize,
    ) -> Result<Vec<CallRecord>, StoreError> {
        self.list_rows(state, limit)?
            .into_iter()
            .map(|r| r.map_err(|d| self.damaged(d)))
            .collect()
    }

    /// Like [`CallStore::list`], but a row that cannot be read back is a [`DamagedRecord`] in
    /// its place instead of failing the whole listing.
    ///
    /// # Errors
    /// SQLite or PostgreSQL failures.
    pub fn list_rows(
        &self,
        state: Option<CallState>,
        limit: usize,
    ) -> Result<Vec<Result<CallRecord, DamagedRecord>>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let raws: Vec<Result<RawRecord, DamagedRecord>> = match &self.backend {
            Backend::Sqlite(conn) => self.sqlite_rows(&lock(conn), state, limit)?,
            #[cfg(feature = "postgres")]
            Backend::Postgres(pg) => pg.list_rows(state, limit)?,
        };
        Ok(raws.into_iter().map(|r| r.and_then(record)).collect())
    }

    fn sqlite_rows(
        &self,
        conn: &Connection,
        state: Option<CallState>,
        limit: i64,
    ) -> Result<Vec<Result<RawRecord, DamagedRecord>>, StoreError> {
        match state {
            Some(s) => {
                let mut stmt = conn
                    .prepare(&format!(
                        "SELECT {} FROM calls WHERE state = ?1 ORDER BY id DESC LIMIT ?2",
                        self.columns()
                    ))
                    .map_err(self.err())?;
                let rows = stmt
                    .query_map(params![s.as_str(), limit], RawRecord::from_row)
                    .map_err(self.err())?;
                rows.collect::<Result<_, _>>().map_err(self.err())
            }
            None => {
                let mut stmt = conn
                    .prepare(&format!(
                        "SELECT {} FROM calls ORDER BY id DESC LIMIT ?1",
                        self.columns()
                    ))
                    .map_err(self.err())?;
                let rows = stmt
                    .query_map(params![limit], RawRecord::from_row)
                    .map_err(self.err())?;
                rows.collect::<Result<_, _>>().map_err(self.err())
            }
        }
    }

    /// Judges the records whose process is gone and returns their ids (oldest first):
    /// - `running` or `committed` become `outcome_unknown`, with a detail saying the process
    ///   ended mid-call: the side effect may or may not have happened;
    /// - `not_started` become `cancelled`, with a detail saying the process ended before the call
    ///   started (the record says `running` before a handler starts, so nothing ran).
    ///
    /// In an SQLite store a process counts as gone when `/proc/<pid>` is absent, is a zombie, or
    /// started at another time than the one recorded (its pid was reused). Only Linux is judged:
    /// elsewhere, and when `/proc` is not mounted, nothing is marked. In a PostgreSQL store a
    /// process counts as gone when its replica's lease expired or is absent
    /// ([`LeaseTimes`]), whatever machine it ran on; its expired lease row is then deleted.
    /// Nothing is ever marked `succeeded` and no call is run again: what happened is for the host
    /// (or a person) to find out.
    pub fn recover(&self) -> Result<Vec<CallId>, StoreError> {
        let conn = match &self.backend {
            Backend::Sqlite(conn) => conn,
            #[cfg(feature = "postgres")]
            Backend::Postgres(pg) => return pg.recover(),
        };
        let mut conn = lock(conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.err())?;
        let open: Vec<(i64, String, i64, Option<i64>)> = {
            let mut stmt = tx
                .prepare(
                    "SELECT id, state, pid, pid_start FROM calls \
                     WHERE state IN ('not_started', 'running', 'committed') ORDER BY id",
                )
                .map_err(self.err())?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .map_err(self.err())?;
            rows.collect::<Result<_, _>>().map_err(self.err())?
        };
        let mut marked = Vec::new();
        for (id, state, pid, start) in open {
            // A row whose pid is out of range was damaged outside toolcat: it is left as it is
            // (`toolcat calls` flags it).
            let Ok(pid) = u32::try_from(pid) else {
                continue;
            };
            if liveness(pid, start.map(|s| s as u64)) != Liveness::Gone {
                continue;
            }
            let (to, detail) = judgement(&format!("process {pid}"), &state);
            tx.execute(
                &format!(
                    "UPDATE calls SET state = ?4, detail = ?2, updated_at = {NOW} \
                     WHERE id = ?1 AND state = ?3"
                ),
                params![id, detail, state, to.as_str()],
            )
            .map_err(self.err())?;
            marked.push(CallId(id));
        }
        tx.commit().map_err(self.err())?;
        Ok(marked)
    }

    fn damaged(&self, d: DamagedRecord) -> StoreError {
        StoreError::Damaged {
            path: self.label.clone(),
            id: d.id,
            reason: d.reason,
        }
    }
}

/// What [`CallStore::begin`] writes, owned (a PostgreSQL write runs on the store's own runtime).
pub(crate) struct Begun {
    tool: String,
    arguments: String,
    truncated: bool,
    effect: String,
    idempotent: bool,
    retry_of: Option<CallId>,
    parent: Option<CallId>,
    pid: u32,
    pid_start: Option<i64>,
}

/// The state and detail a call left open by a process that is gone comes to, `who` naming that
/// process (`process 42`, `replica `r-…` (host h, process 42)`): `not_started` ran nothing and
/// is `cancelled`; `running` and `committed` are `outcome_unknown`.
fn judgement(who: &str, state: &str) -> (CallState, String) {
    if state == CallState::NotStarted.as_str() {
        (
            CallState::Cancelled,
            format!("{who} ended before the call started; nothing ran"),
        )
    } else {
        (
            CallState::OutcomeUnknown,
            format!(
                "{who} ended while the call was `{state}`; the side effect may or may not have happened, and the call is not run again"
            ),
        )
    }
}

/// The state of call `id` read from the store `label` (`None`: no such record) checked against
/// a move to `to`; the current state when the move is legal.
fn check_move(
    label: &str,
    id: CallId,
    current: Option<&str>,
    to: CallState,
) -> Result<CallState, StoreError> {
    let Some(current) = current else {
        return Err(StoreError::UnknownCall {
            id,
            path: label.to_string(),
        });
    };
    let from = parse_state(label, id, current)?;
    if !from.can_move_to(to) {
        return Err(StoreError::IllegalTransition {
            id,
            from,
            to,
            hint: if from.is_terminal() {
                "a finished call never changes; start a new call to run the tool again"
            } else {
                "the lifecycle is not_started → running → committed → succeeded, with failed, cancelled and outcome_unknown as the other endings"
            },
        });
    }
    Ok(from)
}

/// What appending a change does to a record.
enum Appended {
    /// The new `changes` JSON text.
    Kept(String),
    /// The record keeps [`MAX_CHANGES`] already: count it in `changes_omitted`.
    Omitted,
}

/// Appending `change` to call `id` of the store `label`, whose `(state, changes)` were read as
/// `row` (`None`: no such record).
fn appended(
    label: &str,
    id: CallId,
    row: Option<(String, String)>,
    change: &Change,
) -> Result<Appended, StoreError> {
    let Some((state, stored)) = row else {
        return Err(StoreError::UnknownCall {
            id,
            path: label.to_string(),
        });
    };
    let state = parse_state(label, id, &state)?;
    if !matches!(state, CallState::Running | CallState::Committed) {
        return Err(StoreError::NotRunning {
            path: label.to_string(),
            id,
            state,
        });
    }
    let damaged = |reason| StoreError::Damaged {
        path: label.to_string(),
        id,
        reason,
    };
    let mut changes = parse_changes(&stored).map_err(damaged)?;
    if changes.len() >= MAX_CHANGES {
        return Ok(Appended::Omitted);
    }
    changes.push(change.clone().bounded());
    serde_json::to_string(&changes)
        .map(Appended::Kept)
        .map_err(|e| damaged(format!("its changes cannot be written as JSON ({e})")))
}

fn parse_state(label: &str, id: CallId, s: &str) -> Result<CallState, StoreError> {
    s.parse().map_err(|_| StoreError::Damaged {
        path: label.to_string(),
        id,
        reason: format!("its `state` `{s}` is not a call state"),
    })
}

fn record(r: RawRecord) -> Result<CallRecord, DamagedRecord> {
    let damaged = |reason| DamagedRecord {
        id: CallId(r.id),
        reason,
    };
    let arguments = serde_json::from_str(&r.arguments)
        .map_err(|e| damaged(format!("its `arguments` are not JSON ({e})")))?;
    let state = r
        .state
        .parse()
        .map_err(|_| damaged(format!("its `state` `{}` is not a call state", r.state)))?;
    let changes = parse_changes(&r.changes).map_err(damaged)?;
    Ok(CallRecord {
        id: CallId(r.id),
        tool: r.tool,
        arguments,
        arguments_truncated: r.arguments_truncated,
        state,
        effect: r.effect,
        idempotent: r.idempotent,
        retry_of: r.retry_of.map(CallId),
        parent: r.parent.map(CallId),
        detail: r.detail,
        pid: r.pid,
        replica: r.replica,
        created_at: r.created_at,
        updated_at: r.updated_at,
        changes,
        changes_omitted: r.changes_omitted,
    })
}

/// The stored `changes` column: a JSON array of [`Change`]s, or why it is not one.
fn parse_changes(text: &str) -> Result<Vec<Change>, String> {
    serde_json::from_str(text).map_err(|e| format!("its `changes` are not a list of changes ({e})"))
}

/// A row as stored, before its JSON and state are parsed.
pub(crate) struct RawRecord {
    id: i64,
    tool: String,
    arguments: String,
    arguments_truncated: bool,
    state: String,
    effect: String,
    idempotent: bool,
    retry_of: Option<i64>,
    detail: Option<String>,
    pid: u32,
    created_at: String,
    updated_at: String,
    /// JSON text.
    changes: String,
    changes_omitted: u32,
    parent: Option<i64>,
    /// The replica that began the call (PostgreSQL stores only).
    replica: Option<String>,
}

impl RawRecord {
    /// The row in the order of [`RECORD_COLUMNS`]; a column of the wrong type or range makes the
    /// row a [`DamagedRecord`] (only `id`, the primary key, is always readable).
    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<RawRecord, DamagedRecord>> {
        let id: i64 = r.get(0)?;
        let decoded = (|| {
            Ok(RawRecord {
                id,
                tool: column(r, 1)?,
                arguments: column(r, 2)?,
                arguments_truncated: column(r, 3)?,
                state: column(r, 4)?,
                effect: column(r, 5)?,
                idempotent: column(r, 6)?,
                retry_of: column(r, 7)?,
                detail: column(r, 8)?,
                pid: column(r, 9)?,
                created_at: column(r, 10)?,
                updated_at: column(r, 11)?,
                changes: column(r, 12)?,
                changes_omitted: column(r, 13)?,
                parent: column(r, 14)?,
                replica: None,
            })
        })();
        Ok(decoded.map_err(|reason| DamagedRecord {
            id: CallId(id),
            reason,
        }))
    }
}

/// Column `i` of a [`RECORD_COLUMNS`] row, or why it cannot be read, naming the column.
fn column<T: rusqlite::types::FromSql>(r: &rusqlite::Row<'_>, i: usize) -> Result<T, String> {
    let name = RECORD_COLUMNS.split(',').nth(i).map_or("?", |n| n.trim());
    r.get(i).map_err(|e| match e {
        rusqlite::Error::IntegralValueOutOfRange(_, v) => {
            format!("its `{name}` is {v}, out of range")
        }
        rusqlite::Error::InvalidColumnType(_, _, t) => {
            format!("its `{name}` holds {t}, not the type toolcat writes")
        }
        e => format!("its `{name}` cannot be read ({e})"),
    })
}

/// The `file:` URI SQLite opens `path` by, read-only, `immutable` when the file is to be read
/// without the write-ahead log's index. `%`, `?` and `#` in the path are percent-encoded.
fn read_only_uri(path: &Path, immutable: bool) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str(if immutable {
        "?mode=ro&immutable=1"
    } else {
        "?mode=ro"
    });
    uri
}

fn cap_detail(detail: &str) -> String {
    if detail.len() <= MAX_DETAIL_BYTES {
        detail.to_string()
    } else {
        let mut cut = cut_at_char_boundary(detail, MAX_DETAIL_BYTES - '…'.len_utf8()).to_string();
        cut.push('…');
        cut
    }
}

/// Whether the process that wrote a record still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Liveness {
    Alive,
    Gone,
    /// Cannot tell (not Linux, or `/proc` not mounted): records are left as they are.
    Unknown,
}

/// The start time of process `pid` (field 22 of `/proc/<pid>/stat`, clock ticks since boot),
/// recorded so that a reused pid is not taken for the process that began the call.
fn process_start(pid: u32) -> Option<u64> {
    stat_fields(pid).and_then(|(_, start)| start)
}

/// The state letter and start time from `/proc/<pid>/stat`, `None` when it cannot be read.
#[cfg(target_os = "linux")]
fn stat_fields(pid: u32) -> Option<(char, Option<u64>)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ...`: comm may hold spaces and parentheses, so split after the last `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Fields after `comm` start at number 3 (state); the start time is number 22.
    let start = fields.nth(22 - 4).and_then(|f| f.parse().ok());
    Some((state, start))
}

#[cfg(not(target_os = "linux"))]
fn stat_fields(_pid: u32) -> Option<(char, Option<u64>)> {
    None
}

#[cfg(target_os = "linux")]
fn liveness(pid: u32, recorded_start: Option<u64>) -> Liveness {
    if !Path::new("/proc/self/stat").exists() {
        return Liveness::Unknown;
    }
    match stat_fields(pid) {
        None => Liveness::Gone,
        Some(('Z' | 'X', _)) => Liveness::Gone,
        Some((_, start)) => match (recorded_start, start) {
            (Some(a), Some(b)) if a != b => Liveness::Gone,
            _ => Liveness::Alive,
        },
    }
}

#[cfg(not(target_os = "linux"))]
fn liveness(_pid: u32, _recorded_start: Option<u64>) -> Liveness {
    Liveness::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    /// Processes that create one store at the same moment each open it: switching a new file to
    /// WAL upgrades a read lock to a write lock, where SQLite answers `SQLITE_BUSY` at once rather
    /// than wait (it could deadlock), so `open_database` retries that step itself.
    #[test]
    fn connections_creating_one_store_at_once_all_open_it() {
        for _round in 0..40 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("calls.sqlite");
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(6));
            let openers: Vec<_> = (0..6)
                .map(|_| {
                    let (path, barrier) = (path.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        open_database(Some(&path)).map(drop)
                    })
                })
                .collect();
            for opener in openers {
                let opened = opener.join().expect("an opener does not panic");
                assert!(opened.is_ok(), "{}", opened.unwrap_err());
            }
        }
    }

    #[test]
    fn call_ids_display_and_parse() {
        assert_eq!(CallId(7).to_string(), "call-7");
        assert_eq!("call-7".parse::<CallId>(), Ok(CallId(7)));
        assert_eq!("7".parse::<CallId>(), Ok(CallId(7)));
        for bad in [
            "", "call-", "call-0", "-3", "call--3", "call-x", "+4", "result-2",
        ] {
            let e = bad.parse::<CallId>().unwrap_err();
            assert!(e.to_string().contains("is not a call id"), "{bad}: {e}");
        }
        assert_eq!(serde_json::to_value(CallId(3)).unwrap(), json!("call-3"));
    }

    #[test]
    fn call_states_round_trip_and_suggest() {
        for s in CallState::ALL {
            assert_eq!(s.as_str().parse::<CallState>(), Ok(s));
            assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
        }
        assert_eq!(
            "outcome-unknown".parse::<CallState>(),
            Ok(CallState::OutcomeUnknown)
        );
        let e = "runing".parse::<CallState>().unwrap_err();
        assert_eq!(e.suggestion, Some("running"));
        let text = e.to_string();
        assert!(
            text.starts_with("unknown call state `runing`; valid states: "),
            "{text}"
        );
        assert!(text.ends_with("; did you mean `running`"), "{text}");
        for s in CallState::ALL {
            assert!(text.contains(&format!("`{}`", s.as_str())), "{text}");
        }
    }

    #[test]
    fn terminal_states_never_move() {
        for from in CallState::ALL {
            for to in CallState::ALL {
                if from.is_terminal() {
                    assert!(!from.can_move_to(to), "{from} -> {to}");
                }
            }
            assert!(!from.can_move_to(from), "{from} -> itself");
        }
        assert!(CallState::NotStarted.can_move_to(CallState::Running));
        assert!(!CallState::NotStarted.can_move_to(CallState::Succeeded));
        assert!(!CallState::Committed.can_move_to(CallState::Cancelled));
    }

    #[test]
    fn a_call_moves_through_its_lifecycle() {
        let store = CallStore::in_memory().unwrap();
        let args = json!({"path": "a.txt", "content": "hi"});
        let id = store.begin(new_call("write_file", &args)).unwrap();
        let r = store.get(id).unwrap().unwrap();
        assert_eq!(r.state, CallState::NotStarted);
        assert_eq!(r.arguments, args);
        assert_eq!(r.tool, "write_file");
        assert_eq!(r.pid, std::process::id());
        assert!(
            r.created_at.ends_with('Z') && r.created_at.contains('T'),
            "{}",
            r.created_at
        );
        store.set_state(id, CallState::Running, None).unwrap();
        store
            .set_state(id, CallState::Committed, Some("written"))
            .unwrap();
        store.set_state(id, CallState::Succeeded, None).unwrap();
        let r = store.get(id).unwrap().unwrap();
        assert_eq!(r.state, CallState::Succeeded);
        // `None` keeps the previous detail.
        assert_eq!(r.detail.as_deref(), Some("written"));
    }

    #[test]
    fn illegal_transitions_name_both_states_and_change_nothing() {
        let store = CallStore::in_memory().unwrap();
        let id = store.begin(new_call("t", &json!({}))).unwrap();
        let e = store
            .set_state(id, CallState::Succeeded, Some("x"))
            .unwrap_err();
        assert!(
            matches!(
                e,
                StoreError::IllegalTransition {
                    from: CallState::NotStarted,
                    to: CallState::Succeeded,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("from `not_started` to `succeeded`"),
            "{e}"
        );
        let r = store.get(id).unwrap().unwrap();
        assert_eq!((r.state, r.detail), (CallState::NotStarted, None));
        store.set_state(id, CallState::Cancelled, None).unwrap();
        let e = store.set_state(id, CallState::Running, None).unwrap_err();
        assert!(
            e.to_string().contains("a finished call never changes"),
            "{e}"
        );
        let e = store
            .set_state(CallId(99), CallState::Running, None)
            .unwrap_err();
        assert!(
            matches!(e, StoreError::UnknownCall { id: CallId(99), .. }),
            "{e}"
        );
    }

    #[test]
    fn list_is_newest_first_and_filters_by_state() {
        let store = CallStore::in_memory().unwrap();
        let ids: Vec<CallId> = (0..5)
            .map(|i| store.begin(new_call(&format!("t{i}"), &json!({}))).unwrap())
            .collect();
        store.set_state(ids[1], CallState::Running, None).unwrap();
        store.set_state(ids[3], CallState::Running, None).unwrap();
        let all: Vec<CallId> = store.list(None, 10).unwrap().iter().map(|r| r.id).collect();
        assert_eq!(all, ids.iter().rev().copied().collect::<Vec<_>>());
        let two: Vec<CallId> = store.list(None, 2).unwrap().iter().map(|r| r.id).collect();
        assert_eq!(two, vec![ids[4], ids[3]]);
        let running: Vec<CallId> = store
            .list(Some(CallState::Running), 10)
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(running, vec![ids[3], ids[1]]);
    }

    #[test]
    fn retries_name_an_existing_call() {
        let store = CallStore::in_memory().unwrap();
        let first = store.begin(new_call("t", &json!({}))).unwrap();
        let empty = json!({});
        let mut retry = new_call("t", &empty);
        retry.retry_of = Some(first);
        let second = store.begin(retry).unwrap();
        assert_eq!(store.get(second).unwrap().unwrap().retry_of, Some(first));
        retry.retry_of = Some(CallId(42));
        assert!(matches!(
            store.begin(retry),
            Err(StoreError::UnknownCall { id: CallId(42), .. })
        ));
    }

    #[test]
    fn large_arguments_and_details_are_capped() {
        let store = CallStore::in_memory().unwrap();
        let big = json!({ "content": "é".repeat(MAX_ARGUMENTS_BYTES) });
        let id = store.begin(new_call("write_file", &big)).unwrap();
        let r = store.get(id).unwrap().unwrap();
        assert!(r.arguments_truncated);
        let stand_in = &r.arguments["$truncated"];
        assert_eq!(stand_in["bytes"], json!(big.to_string().len()));
        let prefix = stand_in["prefix"].as_str().unwrap();
        assert!(prefix.len() <= ARGUMENTS_PREFIX_BYTES && big.to_string().starts_with(prefix));
        store.set_state(id, CallState::Running, None).unwrap();
        let detail = "ü".repeat(MAX_DETAIL_BYTES);
        store
            .set_state(id, CallState::Failed, Some(&detail))
            .unwrap();
        let stored = store.get(id).unwrap().unwrap().detail.unwrap();
        assert!(
            stored.len() <= MAX_DETAIL_BYTES && stored.ends_with('…'),
            "{}",
            stored.len()
        );
    }

    #[test]
    fn records_survive_reopening_and_a_new_file_gets_its_directories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/deeper/calls.sqlite");
        let id = {
            let store = CallStore::open(&path).unwrap();
            let id = store.begin(new_call("t", &json!({"n": 1}))).unwrap();
            store.set_state(id, CallState::Running, None).unwrap();
            id
        };
        let store = CallStore::open(&path).unwrap();
        let r = store.get(id).unwrap().unwrap();
        assert_eq!(r.state, CallState::Running);
        assert_eq!(r.arguments, json!({"n": 1}));
        // Our own process is alive: nothing to recover.
        assert_eq!(store.recover().unwrap(), vec![]);
        assert_eq!(store.get(id).unwrap().unwrap().state, CallState::Running);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn recover_marks_calls_of_dead_processes_outcome_unknown() {
        let store = CallStore::in_memory().unwrap();
        let running = store.begin(new_call("a", &json!({}))).unwrap();
        let committed = store.begin(new_call("b", &json!({}))).unwrap();
        let waiting = store.begin(new_call("c", &json!({}))).unwrap();
        let mine = store.begin(new_call("d", &json!({}))).unwrap();
        for id in [running, committed, mine] {
            store.set_state(id, CallState::Running, None).unwrap();
        }
        store
            .set_state(committed, CallState::Committed, None)
            .unwrap();
        // A child that has exited and been reaped: its pid names no process.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        {
            let conn = store.sqlite();
            conn.execute(
                "UPDATE calls SET pid = ?1, pid_start = NULL WHERE id IN (?2, ?3, ?4)",
                params![dead, running.0, committed.0, waiting.0],
            )
            .unwrap();
        }
        assert_eq!(store.recover().unwrap(), vec![running, committed, waiting]);
        for id in [running, committed] {
            let r = store.get(id).unwrap().unwrap();
            assert_eq!(r.state, CallState::OutcomeUnknown);
            assert!(r.detail.unwrap().contains("ended while the call was"));
        }
        // A `not_started` record ran nothing; live processes' records stay.
        let r = store.get(waiting).unwrap().unwrap();
        assert_eq!(r.state, CallState::Cancelled);
        assert!(r.detail.unwrap().contains("nothing ran"));
        assert_eq!(store.get(mine).unwrap().unwrap().state, CallState::Running);
        assert_eq!(store.recover().unwrap(), vec![]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_reused_pid_counts_as_gone() {
        let store = CallStore::in_memory().unwrap();
        let id = store.begin(new_call("a", &json!({}))).unwrap();
        store.set_state(id, CallState::Running, None).unwrap();
        let start = process_start(std::process::id()).expect("own start time");
        {
            let conn = store.sqlite();
            conn.execute(
                "UPDATE calls SET pid_start = ?1 WHERE id = ?2",
                params![start as i64 + 1, id.0],
            )
            .unwrap();
        }
        assert_eq!(store.recover().unwrap(), vec![id]);
    }

    #[test]
    fn a_damaged_row_is_flagged_and_the_others_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite");
        let store = CallStore::open(&path).unwrap();
        let args = serde_json::json!({"path": "a"});
        let ids: Vec<CallId> = (0..5)
            .map(|_| store.begin(new_call("read_file", &args)).unwrap())
            .collect();
        drop(store);
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "UPDATE calls SET arguments = '{{not json' WHERE id = {};
             UPDATE calls SET pid = -5 WHERE id = {};
             UPDATE calls SET state = 'weird' WHERE id = {};",
            ids[3].0, ids[2].0, ids[1].0
        ))
        .unwrap();
        drop(conn);

        let store = CallStore::open(&path).unwrap();
        // Recovery skips the row whose pid is out of range instead of failing.
        store.recover().unwrap();
        let rows = store.list_rows(None, 10).unwrap();
        let listed: Vec<(CallId, Option<&str>)> = rows
            .iter()
            .map(|r| match r {
                Ok(r) => (r.id, None),
                Err(d) => (d.id, Some(d.reason.as_str())),
            })
            .collect();
        assert_eq!(listed.len(), 5);
        assert_eq!(listed[0], (ids[4], None));
        assert_eq!(listed[4], (ids[0], None));
        assert!(
            listed[1]
                .1
                .is_some_and(|r| r.contains("`arguments` are not JSON")),
            "{listed:?}"
        );
        assert!(
            listed[2].1.is_some_and(|r| r.contains("`pid` is -5")),
            "{listed:?}"
        );
        assert!(
            listed[3].1.is_some_and(|r| r.contains("`state` `weird`")),
            "{listed:?}"
        );

        // `list` and `get` name the damaged record and never advise discarding the store.
        let e = store.list(None, 10).unwrap_err();
        assert!(
            matches!(e, StoreError::Damaged { id, .. } if id == ids[3]),
            "{e}"
        );
        assert!(!e.to_string().contains("move it aside"), "{e}");
        let e = store.get(ids[2]).unwrap_err();
        assert!(e.to_string().contains("`pid` is -5"), "{e}");
        assert_eq!(store.get(ids[0]).unwrap().unwrap().arguments, args);
    }

    #[test]
    fn a_store_opened_read_only_lists_and_refuses_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite");
        let store = CallStore::open(&path).unwrap();
        let args = serde_json::json!({});
        let id = store.begin(new_call("read_file", &args)).unwrap();
        drop(store);

        let ro = CallStore::open_read_only(&path).unwrap();
        assert_eq!(ro.list(None, 10).unwrap()[0].id, id);
        let e = ro.begin(new_call("read_file", &args)).unwrap_err();
        assert!(matches!(e, StoreError::ReadOnly { .. }), "{e}");
        assert!(e.to_string().contains("`--store`"), "{e}");

        // The immutable fallback (no `-shm` can be created) reads the same records.
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(read_only_uri(&path, true), flags).unwrap();
        let n: i64 = conn
            .query_row("SELECT count(*) FROM calls", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            read_only_uri(Path::new("a?b#c%d"), false),
            "file:a%3fb%23c%25d?mode=ro"
        );

        // A missing file is not created.
        let missing = dir.path().join("missing.sqlite");
        assert!(CallStore::open_read_only(&missing).is_err());
        assert!(!missing.exists());
    }

    #[test]
    fn foreign_corrupt_and_newer_files_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.sqlite");
        std::fs::write(
            &garbage,
            "this is not a database, just some text ".repeat(40),
        )
        .unwrap();
        let e = CallStore::open(&garbage).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        assert!(
            e.to_string().contains("garbage.sqlite") && e.to_string().contains("move it aside"),
            "{e}"
        );

        let foreign = dir.path().join("foreign.sqlite");
        Connection::open(&foreign)
            .unwrap()
            .execute_batch("CREATE TABLE songs (title TEXT)")
            .unwrap();
        let e = CallStore::open(&foreign).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");

        let newer = dir.path().join("newer.sqlite");
        drop(CallStore::open(&newer).unwrap());
        Connection::open(&newer)
            .unwrap()
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        let e = CallStore::open(&newer).unwrap_err();
        assert!(
            matches!(e, StoreError::NewerSchema { found, .. } if found == SCHEMA_VERSION + 1),
            "{e}"
        );
        assert!(e.to_string().contains("newer.sqlite"), "{e}");

        let e = CallStore::open(dir.path()).unwrap_err();
        assert!(matches!(e, StoreError::Open { .. }), "{e}");
    }

    #[test]
    fn stores_on_one_file_write_concurrently_without_losing_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.sqlite");
        drop(CallStore::open(&path).unwrap());
        let threads: Vec<_> = (0..4)
            .map(|n| {
                let path = path.clone();
                std::thread::spawn(move || {
                    // Each thread stands for a process: its own connection to the same file.
                    let store = CallStore::open(&path).unwrap();
                    let args = json!({ "thread": n });
                    (0..10)
                        .map(|_| {
                            let id = store.begin(new_call("t", &args)).unwrap();
                            store.set_state(id, CallState::Running, None).unwrap();
                            store.set_state(id, CallState::Succeeded, None).unwrap();
                            id
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut ids: Vec<CallId> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 40);
        let store = CallStore::open(&path).unwrap();
        let done = store.list(Some(CallState::Succeeded), 100).unwrap();
        assert_eq!(done.len(), 40);
    }

    fn change(path: &str, diff: &str) -> Change {
        Change::new(path, "absent", "sha256:00", diff)
    }

    #[test]
    fn changes_are_appended_in_order_and_survive_a_failure() {
        let store = CallStore::in_memory().unwrap();
        let id = store.begin(new_call("patch", &json!({}))).unwrap();
        assert!(store.get(id).unwrap().unwrap().changes.is_empty());
        // Not running yet: nothing can be added.
        let e = store.add_change(id, &change("a", "")).unwrap_err();
        assert!(
            matches!(
                e,
                StoreError::NotRunning {
                    state: CallState::NotStarted,
                    ..
                }
            ),
            "{e}"
        );
        store.set_state(id, CallState::Running, None).unwrap();
        store.add_change(id, &change("a.txt", "+a\n")).unwrap();
        store.set_state(id, CallState::Committed, None).unwrap();
        store.add_change(id, &change("b.txt", "+b\n")).unwrap();
        store
            .set_state(id, CallState::Failed, Some("c.txt failed"))
            .unwrap();
        let r = store.get(id).unwrap().unwrap();
        assert_eq!(
            r.changes,
            vec![change("a.txt", "+a\n"), change("b.txt", "+b\n")]
        );
        assert_eq!(r.changes_omitted, 0);
        // A finished call's record never changes.
        let e = store.add_change(id, &change("c.txt", "")).unwrap_err();
        assert!(e.to_string().contains("is `failed`, so no change"), "{e}");
        assert_eq!(store.get(id).unwrap().unwrap().changes.len(), 2);
        let e = store.add_change(CallId(99), &change("a", "")).unwrap_err();
        assert!(matches!(e, StoreError::UnknownCall { .. }), "{e}");
        let shown = serde_json::to_value(&r).unwrap();
        assert_eq!(shown["changes"][1]["path"], "b.txt");
        assert_eq!(shown["changes"][1]["diff_reference"], json!(null));
        assert_eq!(shown["changes_omitted"], 0);
        // A call without changes shows an empty list.
        let other = store.begin(new_call("t", &json!({}))).unwrap();
        let shown = serde_json::to_value(store.get(other).unwrap().unwrap()).unwrap();
        assert_eq!(shown["changes"], json!([]));
    }

    #[test]
    fn a_long_diff_is_cut_at_a_char_boundary_and_extra_changes_are_counted() {
        let store = CallStore::in_memory().unwrap();
        let id = store.begin(new_call("patch", &json!({}))).unwrap();
        store.set_state(id, CallState::Running, None).unwrap();
        // 3-byte chars: the limit falls inside one.
        let long = "日".repeat(MAX_CHANGE_DIFF_BYTES / 3 + 10);
        let mut given = change("big.txt", &long);
        given.diff_reference = Some("result-x".into());
        store.add_change(id, &given).unwrap();
        let kept = &store.get(id).unwrap().unwrap().changes[0];
        assert!(
            kept.diff.len() <= MAX_CHANGE_DIFF_BYTES,
            "{}",
            kept.diff.len()
        );
        assert!(kept.diff.len() > MAX_CHANGE_DIFF_BYTES - 3);
        assert!(long.starts_with(&kept.diff));
        assert!(kept.diff_truncated);
        assert_eq!(kept.diff_bytes, long.len());
        // The store keeps what the caller set; the coordinator is who sets references.
        assert_eq!(kept.diff_reference.as_deref(), Some("result-x"));
        for i in 1..MAX_CHANGES + 3 {
            store
                .add_change(id, &change(&format!("f{i}"), "+x\n"))
                .unwrap();
        }
        let r = store.get(id).unwrap().unwrap();
        assert_eq!(r.changes.len(), MAX_CHANGES);
        assert_eq!(r.changes_omitted, 3);
        assert_eq!(
            r.changes[MAX_CHANGES - 1].path,
            format!("f{}", MAX_CHANGES - 1)
        );
        assert!(!r.changes[1].diff_truncated);
    }

    #[test]
    fn a_damaged_changes_column_flags_its_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite");
        let store = CallStore::open(&path).unwrap();
        let bad = store.begin(new_call("t", &json!({}))).unwrap();
        let good = store.begin(new_call("t", &json!({}))).unwrap();
        store
            .sqlite()
            .execute(
                "UPDATE calls SET changes = '{\"path\": 1}' WHERE id = ?1",
                [bad.0],
            )
            .unwrap();
        let rows = store.list_rows(None, 10).unwrap();
        assert_eq!(rows[0].as_ref().map(|r| r.id), Ok(good));
        let damaged = rows[1].as_ref().unwrap_err();
        assert!(
            damaged
                .reason
                .contains("`changes` are not a list of changes"),
            "{damaged:?}"
        );
        store.set_state(bad, CallState::Running, None).unwrap();
        let e = store.add_change(bad, &change("a", "")).unwrap_err();
        assert!(matches!(e, StoreError::Damaged { .. }), "{e}");
    }

    #[test]
    fn a_store_of_schema_4_gets_the_rate_limits_table_and_keeps_one_made_before() {
        let dir = tempfile::tempdir().unwrap();
        let version_4 = |path: &Path, with_table: bool| {
            let conn = Connection::open(path).unwrap();
            for sql in [SCHEMA_V1, MIGRATION_V2, MIGRATION_V3, MIGRATION_V4] {
                conn.execute_batch(sql).unwrap();
            }
            if with_table {
                // As builds before version 5 made it on a limited tool's first call.
                conn.execute_batch(MIGRATION_V5).unwrap();
                conn.execute(
                    "INSERT INTO rate_limits (tool, key, tat_ns) VALUES ('send', '', 42)",
                    [],
                )
                .unwrap();
            }
            conn.pragma_update(None, "application_id", APPLICATION_ID)
                .unwrap();
            conn.pragma_update(None, "user_version", 4).unwrap();
        };
        for with_table in [false, true] {
            let path = dir.path().join(format!("calls-{with_table}.sqlite"));
            version_4(&path, with_table);
            drop(CallStore::open(&path).unwrap());
            let conn = Connection::open(&path).unwrap();
            let version: i32 = conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap();
            assert_eq!(version, SCHEMA_VERSION);
            let rows: Vec<(String, i64)> = conn
                .prepare("SELECT tool, tat_ns FROM rate_limits")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let expected = if with_table {
                vec![("send".to_string(), 42)]
            } else {
                vec![]
            };
            assert_eq!(rows, expected);
        }
    }

    /// A store path ending in `/` names a directory and creates no file; a path through a file
    /// names that file as the cause.
    #[test]
    fn a_directory_path_or_a_path_through_a_file_is_refused_naming_why() {
        let dir = tempfile::tempdir().unwrap();
        let trailing = PathBuf::from(format!("{}/store/", dir.path().display()));
        let e = CallStore::open(&trailing).expect_err("a path ending in `/` is refused");
        assert!(matches!(e, StoreError::Open { .. }), "{e}");
        assert!(e.to_string().contains("ends in `/`"), "{e}");
        assert!(!dir.path().join("store").exists(), "nothing is created");
        let file = dir.path().join("notes.txt");
        std::fs::write(&file, "a note").unwrap();
        let e = CallStore::open(&file.join("sub").join("calls.sqlite"))
            .expect_err("a path through a file is refused");
        assert!(
            e.to_string()
                .contains(&format!("`{}` is a file, not a directory", file.display())),
            "{e}"
        );
    }

    #[test]
    fn a_fifo_or_a_directory_as_the_store_or_beside_it_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.sqlite");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("skipped: `mkfifo` is not available here, so no FIFO can be made");
            return;
        }
        for e in [
            CallStore::open(&fifo).err(),
            CallStore::open_read_only(&fifo).err(),
        ] {
            let e = e.expect("a FIFO is refused");
            assert!(matches!(e, StoreError::Open { .. }), "{e}");
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
        // A store whose `-shm` is a FIFO, and one whose `-wal` is a directory.
        for (suffix, make) in [("-shm", "fifo"), ("-wal", "dir")] {
            let path = dir.path().join(format!("calls{suffix}.sqlite"));
            drop(CallStore::open(&path).unwrap());
            let side = dir.path().join(format!("calls{suffix}.sqlite{suffix}"));
            let _ = std::fs::remove_file(&side);
            if make == "fifo" {
                std::process::Command::new("mkfifo")
                    .arg(&side)
                    .status()
                    .unwrap();
            } else {
                std::fs::create_dir(&side).unwrap();
            }
            for e in [
                CallStore::open(&path).err(),
                CallStore::open_read_only(&path).err(),
            ] {
                let e = e.expect("a special file beside the store is refused");
                assert!(
                    e.to_string().contains(&format!("{suffix}` beside it")),
                    "{e}"
                );
            }
        }
    }

    #[test]
    fn a_negative_schema_version_or_a_foreign_rate_limits_table_is_refused_as_corrupt() {
        let refused = |r: Result<CallStore, StoreError>| match r {
            Err(e) => e,
            Ok(_) => panic!("the store was opened"),
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("negative.sqlite");
        drop(CallStore::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", -1)
            .unwrap();
        let e = refused(CallStore::open(&path));
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains("schema version is -1"), "{e}");

        // Version 4 with a `rate_limits` table of another shape: refused, left at version 4.
        let path = dir.path().join("foreign.sqlite");
        {
            let conn = Connection::open(&path).unwrap();
            for sql in [SCHEMA_V1, MIGRATION_V2, MIGRATION_V3, MIGRATION_V4] {
                conn.execute_batch(sql).unwrap();
            }
            conn.execute_batch("CREATE TABLE rate_limits (tool TEXT, tat_ns TEXT)")
                .unwrap();
            conn.pragma_update(None, "application_id", APPLICATION_ID)
                .unwrap();
            conn.pragma_update(None, "user_version", 4).unwrap();
        }
        let e = refused(CallStore::open(&path));
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        assert!(
            e.to_string().contains("`rate_limits` is not toolcat's"),
            "{e}"
        );
        let version: i32 = Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, 4, "the failed migration was rolled back");

        // Version 5 whose table was dropped: refused for writing, still listed read-only.
        let path = dir.path().join("dropped.sqlite");
        drop(CallStore::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .execute_batch("DROP TABLE rate_limits")
            .unwrap();
        let e = refused(CallStore::open(&path));
        assert!(
            e.to_string().contains("`rate_limits` is not toolcat's"),
            "{e}"
        );
        assert!(CallStore::open_read_only(&path).is_ok());
    }

    #[test]
    fn a_store_of_schema_2_is_read_as_it_is_and_migrated_for_writing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.sqlite");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(SCHEMA_V1).unwrap();
            conn.execute_batch(MIGRATION_V2).unwrap();
            conn.pragma_update(None, "application_id", APPLICATION_ID)
                .unwrap();
            conn.pragma_update(None, "user_version", 2).unwrap();
            conn.execute(
                "INSERT INTO calls (tool, arguments, state, effect, idempotent, pid, created_at, \
                 updated_at) VALUES ('write_file', '{\"path\":\"a\"}', 'succeeded', 'write', 0, \
                 1, 'then', 'then')",
                [],
            )
            .unwrap();
        }
        let version = |path: &Path| -> i32 {
            Connection::open(path)
                .unwrap()
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap()
        };
        // Read-only, the file is read as it is: its record has no changes.
        let read_only = CallStore::open_read_only(&path).unwrap();
        let old = read_only.list(None, 10).unwrap();
        assert_eq!(old.len(), 1);
        assert_eq!(old[0].tool, "write_file");
        assert_eq!((old[0].changes.len(), old[0].changes_omitted), (0, 0));
        drop(read_only);
        assert_eq!(version(&path), 2);

        let store = CallStore::open(&path).unwrap();
        assert_eq!(version(&path), SCHEMA_VERSION);
        let migrated = store.get(old[0].id).unwrap().unwrap();
        assert_eq!(migrated, old[0]);
        let id = store.begin(new_call("write_file", &json!({}))).unwrap();
        store.set_state(id, CallState::Running, None).unwrap();
        store.add_change(id, &change("a", "+a\n")).unwrap();
        drop(store);
        // Opened again, read-only or not, nothing changes.
        let read_only = CallStore::open_read_only(&path).unwrap();
        assert_eq!(
            read_only.get(id).unwrap().unwrap().changes,
            vec![change("a", "+a\n")]
        );
        drop(read_only);
        let store = CallStore::open(&path).unwrap();
        assert_eq!(store.list(None, 10).unwrap().len(), 2);
    }

    #[test]
    fn the_store_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<CallStore>();
    }
}
