//! The result archive: a tool result over a size budget is stored, and the model receives a
//! bounded preview and a reference (`result-` and 26 characters, [`ResultRef`]) that
//! `read_tool_result(ref, offset, length)` reads back piece by piece.
//!
//! - References are unguessable (128 random bits) and bound to their [`ArchiveOwner`], the
//!   session that produced them (a library [`crate::Session`], one MCP session of `toolcat
//!   serve`): read under another owner, a reference answers [`ArchiveError::UnknownReference`],
//!   the answer for one that never existed, so a caller cannot even learn that it exists.
//!
//! - [`ResultArchive::bound`] is what the coordinator calls on every result: at or under
//!   [`ArchiveLimits::inline_budget`] the text comes back whole ([`Bounded::Inline`]); over it the
//!   text is archived and a preview and reference come back ([`Bounded::Archived`]).
//! - Entries over [`ArchiveLimits::max_entry`] bytes are cut to that size (at a char boundary) and
//!   marked truncated; each slice read from them says so.
//! - After each insertion the oldest entries are evicted until at most
//!   [`ArchiveLimits::max_entries`] entries holding at most [`ArchiveLimits::max_total`] bytes
//!   remain. An evicted entry leaves a tombstone (reference, owner, tool, call) so that reading
//!   it answers [`ArchiveError::Evicted`] — naming the tool to call again — rather than
//!   "unknown"; at most [`MAX_TOMBSTONES`] tombstones are kept, and a reference older than those
//!   answers "unknown".
//! - Offsets and lengths are counted in characters (Unicode scalar values), never bytes, so a
//!   slice never splits a UTF-8 character; a slice is also never longer than
//!   [`ArchiveLimits::inline_budget`] bytes, so reading cannot flood the context either.
//!
//! Storage: the `results` table of the same SQLite file as the call records
//! ([`crate::records`]; one `--store` path names both), opened with its own connection. An
//! in-memory archive keeps nothing after the value is dropped. Entries of a store written before
//! references were random (schema 1, `result-N`, bound to no owner) are evicted when the store
//! is migrated: no owner can read them.

// Without the `postgres` feature the backend enums have one variant, so each method's
// `match` on its backend has one arm; it stays a `match` so that the feature adds an arm.
#![cfg_attr(
    not(feature = "postgres"),
    allow(clippy::infallible_destructuring_match)
)]

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use data_encoding::BASE32_DNSSEC;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::records::{cut_at_char_boundary, lock, open_database, sqlite_error, CallId, StoreError};

/// Evicted entries whose tombstones are kept; older tombstones are deleted (4096).
pub const MAX_TOMBSTONES: usize = 4096;

/// Size and count limits of a [`ResultArchive`]. All sizes are in bytes of UTF-8 text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ArchiveLimits {
    /// Results at or under this size are returned whole, never archived; also the most a
    /// single [`ResultArchive::read`] returns. Default 16 KiB.
    pub inline_budget: usize,
    /// Size of the preview given with an archived result, cut at a char boundary. Default 2 KiB.
    pub preview: usize,
    /// Largest entry kept; a larger result is cut to this size and marked truncated. Default
    /// 8 MiB.
    pub max_entry: usize,
    /// Most entries kept; the oldest are evicted past it. Default 256.
    pub max_entries: usize,
    /// Most bytes kept over all entries; the oldest are evicted past it. Default 64 MiB.
    pub max_total: usize,
}

impl Default for ArchiveLimits {
    fn default() -> ArchiveLimits {
        ArchiveLimits {
            inline_budget: 16 * 1024,
            preview: 2 * 1024,
            max_entry: 8 * 1024 * 1024,
            max_entries: 256,
            max_total: 64 * 1024 * 1024,
        }
    }
}

impl ArchiveLimits {
    /// The limits made consistent: every limit at least 1 (`preview` and `inline_budget` at
    /// least 4, so one character always fits), and `max_entry` at most `max_total` (an entry
    /// larger than the whole archive would evict itself).
    pub fn normalized(self) -> ArchiveLimits {
        let max_total = self.max_total.max(4);
        ArchiveLimits {
            inline_budget: self.inline_budget.max(4),
            preview: self.preview.max(4),
            max_entry: self.max_entry.clamp(4, max_total),
            max_entries: self.max_entries.max(1),
            max_total,
        }
    }
}

/// 128 bits from the operating system's random source.
fn random_bits() -> Result<[u8; 16], getrandom::Error> {
    let mut bits = [0u8; 16];
    getrandom::fill(&mut bits)?;
    Ok(bits)
}

/// 128 bits unlike any other this machine produces, for when the random source fails: a hash of
/// this process's id, the time in nanoseconds and a count. Not secret, only unique.
fn unique_bits() -> [u8; 16] {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut hash = Sha256::new();
    hash.update(std::process::id().to_le_bytes());
    hash.update(nanos.to_le_bytes());
    hash.update(COUNT.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let mut bits = [0u8; 16];
    bits.copy_from_slice(&hash.finalize()[..16]);
    bits
}

/// Who may read archived results back: the session that produced them. Each value is new (128
/// random bits; unique ones when the random source fails — an owner is never shown, so it needs
/// no secrecy) and lives in memory only, so a result is read back by the session that archived
/// it and by no other, in this process or another. Give one to each conversation
/// ([`crate::CallRequest::with_owner`]); its `Debug` form shows no bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArchiveOwner([u8; 16]);

impl ArchiveOwner {
    /// A new owner, unlike every other.
    pub fn new() -> ArchiveOwner {
        ArchiveOwner(random_bits().unwrap_or_else(|_| unique_bits()))
    }

    /// The owner of everything archived for `key` (an authenticated principal's stable key) in
    /// any session: the same key gives the same owner, in this process or another.
    pub fn of_key(key: &[u8]) -> ArchiveOwner {
        ArchiveOwner::derive(b"toolcat archive owner: key\0", &[], key)
    }

    /// This owner narrowed to `key`: results archived under the pair are read back only under
    /// the same pair (one session of one authenticated principal).
    pub fn bound_to(self, key: &[u8]) -> ArchiveOwner {
        ArchiveOwner::derive(b"toolcat archive owner: session\0", &self.0, key)
    }

    fn derive(domain: &[u8], a: &[u8], b: &[u8]) -> ArchiveOwner {
        let mut h = Sha256::new();
        h.update(domain);
        h.update(a);
        h.update(b);
        let mut bits = [0u8; 16];
        bits.copy_from_slice(&h.finalize()[..16]);
        ArchiveOwner(bits)
    }
}

impl Default for ArchiveOwner {
    /// [`ArchiveOwner::new`].
    fn default() -> ArchiveOwner {
        ArchiveOwner::new()
    }
}

impl fmt::Debug for ArchiveOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ArchiveOwner(..)")
    }
}

/// The prefix of every reference.
const REFERENCE_PREFIX: &str = "result-";

/// A reference to an archived result: `result-` and 128 random bits in lower-case base32 (the
/// RFC 4648 "extended hex" alphabet `0-9a-v`, 26 characters, no padding), e.g.
/// `result-k0b4gv1t0p8c5o6ruh2mam9d3g`. Unguessable; parsed in either letter case.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResultRef([u8; 16]);

impl ResultRef {
    /// A new random reference.
    ///
    /// # Errors
    /// [`ArchiveError::Random`] when the operating system's random source fails.
    fn random() -> Result<ResultRef, ArchiveError> {
        random_bits()
            .map(ResultRef)
            .map_err(|e| ArchiveError::Random(e.to_string()))
    }
}

impl fmt::Display for ResultRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{REFERENCE_PREFIX}{}", BASE32_DNSSEC.encode(&self.0))
    }
}

impl fmt::Debug for ResultRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ResultRef({self})")
    }
}

impl FromStr for ResultRef {
    type Err = ArchiveError;
    fn from_str(s: &str) -> Result<ResultRef, ArchiveError> {
        let bad = || ArchiveError::BadReference {
            given: s.to_string(),
        };
        let trimmed = s.trim();
        let prefix = trimmed.get(..REFERENCE_PREFIX.len()).ok_or_else(bad)?;
        if !prefix.eq_ignore_ascii_case(REFERENCE_PREFIX) {
            return Err(bad());
        }
        let bits = BASE32_DNSSEC
            .decode(&trimmed.as_bytes()[REFERENCE_PREFIX.len()..])
            .map_err(|_| bad())?;
        bits.try_into().map(ResultRef).map_err(|_| bad())
    }
}

impl Serialize for ResultRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A piece of an archived result, as [`ResultArchive::read`] returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResultSlice {
    /// The text from `offset`, `length` characters long.
    pub text: String,
    /// The first character's position in the result, in characters.
    pub offset: usize,
    /// Characters in `text`: the length asked for, or less at the end of the result or when the
    /// slice reached [`ArchiveLimits::inline_budget`] bytes.
    pub length: usize,
    /// Characters in the whole stored result.
    pub total_chars: usize,
    /// Where the next slice starts; `None` at the end.
    pub next_offset: Option<usize>,
    /// True when the tool's result was larger than [`ArchiveLimits::max_entry`] and the archive
    /// kept only its start: the end of the stored text is not the end of the result.
    pub truncated: bool,
    /// Bytes of the tool's whole result (before any truncation).
    pub total_bytes: usize,
}

/// What the model gets for one result: see [`ResultArchive::bound`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Bounded {
    /// The whole result: it is within the inline budget.
    Inline { text: String },
    /// The result was archived.
    Archived {
        /// Where to read it with `read_tool_result`.
        reference: ResultRef,
        /// Its first [`ArchiveLimits::preview`] bytes, cut at a char boundary.
        preview: String,
        /// Characters in `preview` (the offset to read on from).
        preview_chars: usize,
        /// Bytes of the whole result.
        total_bytes: usize,
        /// Characters stored (all of the result unless `truncated`).
        total_chars: usize,
        /// True when the result was over [`ArchiveLimits::max_entry`] and only its start was kept.
        truncated: bool,
    },
}

impl Bounded {
    /// The text for the model: the inline result, or the preview followed by a note naming the
    /// reference, the sizes and how to read on, e.g.
    /// `[result archived as `result-k0b4gv1t0p8c5o6ruh2mam9d3g`: 40000 bytes, 39000 characters;
    /// showing the first 2040; read the rest with
    /// read_tool_result(reference: "result-k0b4gv1t0p8c5o6ruh2mam9d3g", offset: 2040)]`.
    pub fn to_model_text(&self) -> String {
        match self {
            Bounded::Inline { text } => text.clone(),
            Bounded::Archived {
                reference,
                preview,
                preview_chars,
                total_bytes,
                total_chars,
                truncated,
            } => {
                let kept = if *truncated {
                    format!(" (only the first {total_chars} characters were kept)")
                } else {
                    String::new()
                };
                format!(
                    "{preview}\n[result archived as `{reference}`: {total_bytes} bytes, {total_chars} characters{kept}; showing the first {preview_chars}; read the rest with read_tool_result(reference: \"{reference}\", offset: {preview_chars})]"
                )
            }
        }
    }
}

/// Why an archive operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The text is not a reference at all.
    #[error("`{given}` is not a result reference; references are `result-` and 26 letters and digits, as given with an archived result's preview")]
    BadReference { given: String },
    /// No entry of this owner was ever stored under this reference (or its tombstone is gone).
    #[error("no result `{reference}` in the archive; use the reference given with the preview of an archived result")]
    UnknownReference { reference: ResultRef },
    /// The entry existed but was evicted to keep the archive within its limits.
    #[error("result `{reference}` was evicted to keep the archive within its limits ({max_entries} results, {max_total} bytes); {again}")]
    Evicted {
        reference: ResultRef,
        /// The tool that produced it.
        tool: String,
        max_entries: usize,
        max_total: usize,
        /// How to get the data again.
        again: String,
    },
    /// The offset lies past the end of the stored text.
    #[error("offset {offset} is past the end of `{reference}`, which has {total_chars} characters; pass an offset from 0 to {total_chars}")]
    OffsetOutOfRange {
        reference: ResultRef,
        offset: usize,
        total_chars: usize,
    },
    /// A read of zero characters.
    #[error("`length` must be at least 1 character")]
    ZeroLength,
    /// No reference could be drawn: the operating system's random source failed.
    #[error("no reference could be drawn for the result: the operating system's random source failed ({0})")]
    Random(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The archive of large results. `Send + Sync` (one SQLite connection behind a mutex, or the
/// PostgreSQL pool of the call store it was opened beside).
pub struct ResultArchive {
    backend: ArchiveBackend,
    label: String,
    limits: ArchiveLimits,
}

/// Where an archive keeps its entries (see [`crate::records`] for why an enum of backends).
enum ArchiveBackend {
    /// The `results` table of an SQLite file (or memory), with its own connection.
    Sqlite(Mutex<Connection>),
    /// The `toolcat_results` table of the call store's PostgreSQL database, through its pool.
    #[cfg(feature = "postgres")]
    Postgres(std::sync::Arc<crate::records::postgres::PgStore>),
}

impl fmt::Debug for ResultArchive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResultArchive")
            .field("store", &self.label)
            .field("limits", &self.limits)
            .finish()
    }
}

impl ResultArchive {
    /// Opens the archive in the store file at `path` (the call store's file; created with its
    /// directories when absent) with the default limits.
    ///
    /// # Errors
    /// [`ArchiveError::Store`] with the same causes as [`crate::CallStore::open`].
    pub fn open(path: &Path) -> Result<ResultArchive, ArchiveError> {
        ResultArchive::open_with(path, ArchiveLimits::default())
    }

    /// [`ResultArchive::open`] with other limits (normalized, see [`ArchiveLimits::normalized`]).
    /// The limits apply from the next insertion on; entries already stored stay until evicted.
    pub fn open_with(path: &Path, limits: ArchiveLimits) -> Result<ResultArchive, ArchiveError> {
        let (conn, label) = open_database(Some(path))?;
        Ok(ResultArchive {
            backend: ArchiveBackend::Sqlite(Mutex::new(conn)),
            label,
            limits: limits.normalized(),
        })
    }

    /// An archive in memory with the default limits.
    pub fn in_memory() -> Result<ResultArchive, ArchiveError> {
        ResultArchive::in_memory_with(ArchiveLimits::default())
    }

    /// An archive in memory with these limits (normalized).
    pub fn in_memory_with(limits: ArchiveLimits) -> Result<ResultArchive, ArchiveError> {
        let (conn, label) = open_database(None)?;
        Ok(ResultArchive {
            backend: ArchiveBackend::Sqlite(Mutex::new(conn)),
            label,
            limits: limits.normalized(),
        })
    }

    /// The archive in the same store as `store`, with these limits (normalized): the same SQLite
    /// file (opened with its own connection; a new in-memory archive for an in-memory store), or
    /// the same PostgreSQL database through the store's pool, so one `--store` names both and a
    /// PostgreSQL store holds one lease for the two.
    ///
    /// # Errors
    /// [`ArchiveError::Store`] with the causes of [`crate::CallStore::open`].
    pub fn beside(
        store: &crate::records::CallStore,
        limits: ArchiveLimits,
    ) -> Result<ResultArchive, ArchiveError> {
        match store.backend() {
            crate::records::Backend::Sqlite(_) => match store.path() {
                Some(path) => ResultArchive::open_with(path, limits),
                None => ResultArchive::in_memory_with(limits),
            },
            #[cfg(feature = "postgres")]
            crate::records::Backend::Postgres(pg) => Ok(ResultArchive {
                backend: ArchiveBackend::Postgres(std::sync::Arc::clone(pg)),
                label: store.label().to_string(),
                limits: limits.normalized(),
            }),
        }
    }

    /// The SQLite connection of a test's archive.
    #[cfg(test)]
    fn sqlite(&self) -> std::sync::MutexGuard<'_, Connection> {
        match &self.backend {
            ArchiveBackend::Sqlite(conn) => lock(conn),
            #[cfg(feature = "postgres")]
            ArchiveBackend::Postgres(_) => panic!("not an SQLite archive"),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &ArchiveLimits {
        &self.limits
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> ArchiveError + '_ {
        |e| ArchiveError::Store(sqlite_error(&self.label, e))
    }

    /// Returns `text` whole when it is at most [`ArchiveLimits::inline_budget`] bytes, else
    /// archives it for `owner` ([`ResultArchive::put`]) and returns the reference and a preview.
    pub fn bound(
        &self,
        owner: ArchiveOwner,
        call: Option<CallId>,
        tool: &str,
        text: &str,
    ) -> Result<Bounded, ArchiveError> {
        if text.len() <= self.limits.inline_budget {
            return Ok(Bounded::Inline {
                text: text.to_string(),
            });
        }
        let reference = self.put(owner, call, tool, text)?;
        let stored = cut_at_char_boundary(text, self.limits.max_entry);
        let preview = cut_at_char_boundary(stored, self.limits.preview);
        Ok(Bounded::Archived {
            reference,
            preview: preview.to_string(),
            preview_chars: preview.chars().count(),
            total_bytes: text.len(),
            total_chars: stored.chars().count(),
            truncated: stored.len() < text.len(),
        })
    }

    /// Archives `text` produced by `tool` (in call `call`, when known) for `owner` under a new
    /// random reference, cut to [`ArchiveLimits::max_entry`] bytes, then evicts the oldest
    /// entries (of every owner) past [`ArchiveLimits::max_entries`] and
    /// [`ArchiveLimits::max_total`]. The new entry itself is never evicted by its own insertion.
    ///
    /// # Errors
    /// [`ArchiveError::Store`], [`ArchiveError::Random`].
    pub fn put(
        &self,
        owner: ArchiveOwner,
        call: Option<CallId>,
        tool: &str,
        text: &str,
    ) -> Result<ResultRef, ArchiveError> {
        let reference = ResultRef::random()?;
        let stored = cut_at_char_boundary(text, self.limits.max_entry);
        let entry = NewEntry {
            reference: reference.0,
            owner: owner.0,
            call,
            tool: tool.to_string(),
            total_bytes: text.len() as i64,
            total_chars: stored.chars().count() as i64,
            truncated: stored.len() < text.len(),
            text: stored.to_string(),
        };
        let conn = match &self.backend {
            ArchiveBackend::Sqlite(conn) => conn,
            #[cfg(feature = "postgres")]
            ArchiveBackend::Postgres(pg) => {
                pg::put(pg, entry, self.limits)?;
                return Ok(reference);
            }
        };
        let mut conn = lock(conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.err())?;
        tx.execute(
            "INSERT INTO results (reference, owner, call_id, tool, text, total_bytes, total_chars, truncated, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
            params![
                &entry.reference[..],
                &entry.owner[..],
                entry.call.map(|c| c.0),
                entry.tool,
                entry.text,
                entry.total_bytes,
                entry.total_chars,
                entry.truncated,
            ],
        )
        .map_err(self.err())?;
        let id = tx.last_insert_rowid();
        let live: Vec<(i64, i64)> = {
            let mut stmt = tx
                .prepare("SELECT id, length(CAST(text AS BLOB)) FROM results WHERE text IS NOT NULL ORDER BY id")
                .map_err(self.err())?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(self.err())?;
            rows.collect::<Result<_, _>>().map_err(self.err())?
        };
        for old in evictions(&live, id, &self.limits) {
            tx.execute(
                "UPDATE results SET text = NULL, evicted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?1",
                [old],
            )
            .map_err(self.err())?;
        }
        // Keep the newest tombstones only.
        tx.execute(
            "DELETE FROM results WHERE text IS NULL AND id NOT IN \
             (SELECT id FROM results WHERE text IS NULL ORDER BY id DESC LIMIT ?1)",
            [MAX_TOMBSTONES as i64],
        )
        .map_err(self.err())?;
        tx.commit().map_err(self.err())?;
        Ok(reference)
    }

    /// Reads `length` characters of the result `reference` archived for `owner`, from character
    /// `offset`, never more than [`ArchiveLimits::inline_budget`] bytes. `offset` equal to the
    /// number of characters gives an empty slice.
    ///
    /// # Errors
    /// [`ArchiveError::BadReference`]; [`ArchiveError::UnknownReference`], also for a reference
    /// of another owner (the same error, so the answer tells nothing about other owners'
    /// entries); [`ArchiveError::Evicted`] (with the tool to call again),
    /// [`ArchiveError::OffsetOutOfRange`], [`ArchiveError::ZeroLength`].
    pub fn read(
        &self,
        owner: ArchiveOwner,
        reference: &str,
        offset: usize,
        length: usize,
    ) -> Result<ResultSlice, ArchiveError> {
        let reference: ResultRef = reference.parse()?;
        if length == 0 {
            return Err(ArchiveError::ZeroLength);
        }
        let row = match &self.backend {
            ArchiveBackend::Sqlite(conn) => lock(conn)
                .query_row(
                    "SELECT id, text IS NOT NULL, tool, call_id, total_bytes, total_chars, truncated \
                     FROM results WHERE reference = ?1 AND owner = ?2",
                    params![&reference.0[..], &owner.0[..]],
                    |r| {
                        Ok(Entry {
                            id: r.get(0)?,
                            live: r.get(1)?,
                            tool: r.get(2)?,
                            call: r.get::<_, Option<i64>>(3)?.map(CallId),
                            total_bytes: r.get(4)?,
                            total_chars: r.get(5)?,
                            truncated: r.get(6)?,
                        })
                    },
                )
                .optional()
                .map_err(self.err())?,
            #[cfg(feature = "postgres")]
            ArchiveBackend::Postgres(pg) => pg::entry(pg, reference.0, owner.0)?,
        };
        let Entry {
            id,
            total_bytes,
            total_chars,
            truncated,
            ..
        } = match row {
            None => return Err(ArchiveError::UnknownReference { reference }),
            Some(e) if !e.live => return Err(self.evicted(reference, e.tool, e.call)),
            Some(e) => e,
        };
        let total_chars = total_chars as usize;
        if offset > total_chars {
            return Err(ArchiveError::OffsetOutOfRange {
                reference,
                offset,
                total_chars,
            });
        }
        // SQLite's and PostgreSQL's substr count characters of text values, starting at 1: no
        // char is split.
        let want = length.min(total_chars - offset);
        let text: String = match &self.backend {
            ArchiveBackend::Sqlite(conn) => lock(conn)
                .query_row(
                    "SELECT substr(text, ?2, ?3) FROM results WHERE id = ?1",
                    params![id, offset as i64 + 1, want as i64],
                    |r| r.get(0),
                )
                .map_err(self.err())?,
            #[cfg(feature = "postgres")]
            ArchiveBackend::Postgres(pg) => pg::text(pg, id, offset as i64 + 1, want as i64)?,
        };
        let text = cut_at_char_boundary(&text, self.limits.inline_budget).to_string();
        let length = text.chars().count();
        let end = offset + length;
        Ok(ResultSlice {
            text,
            offset,
            length,
            total_chars,
            next_offset: (end < total_chars).then_some(end),
            truncated,
            total_bytes: total_bytes as usize,
        })
    }

    /// The error for an evicted entry (a tombstone) of `tool`, from call `call`.
    fn evicted(&self, reference: ResultRef, tool: String, call: Option<CallId>) -> ArchiveError {
        let again = match call {
            Some(c) => format!("call `{tool}` again to get the data again (it came from `{c}`)"),
            None => format!("call `{tool}` again to get the data again"),
        };
        ArchiveError::Evicted {
            reference,
            tool,
            max_entries: self.limits.max_entries,
            max_total: self.limits.max_total,
            again,
        }
    }
}

/// One row of the `results` table, as a read sees it.
pub(crate) struct Entry {
    pub(crate) id: i64,
    /// False for a tombstone (its text was evicted).
    pub(crate) live: bool,
    pub(crate) tool: String,
    pub(crate) call: Option<CallId>,
    pub(crate) total_bytes: i64,
    pub(crate) total_chars: i64,
    pub(crate) truncated: bool,
}

/// One result to archive, as [`ResultArchive::put`] stores it (owned: a PostgreSQL write runs
/// on the store's own runtime).
pub(crate) struct NewEntry {
    pub(crate) reference: [u8; 16],
    pub(crate) owner: [u8; 16],
    pub(crate) call: Option<CallId>,
    pub(crate) tool: String,
    /// The text kept, cut to [`ArchiveLimits::max_entry`].
    pub(crate) text: String,
    /// Bytes of the whole result.
    pub(crate) total_bytes: i64,
    /// Characters of `text`.
    pub(crate) total_chars: i64,
    pub(crate) truncated: bool,
}

/// Which live entries (`(id, bytes)`, oldest first) to evict after entry `new` was stored: the
/// oldest, until at most [`ArchiveLimits::max_entries`] holding at most
/// [`ArchiveLimits::max_total`] bytes remain, never `new` itself.
pub(crate) fn evictions(live: &[(i64, i64)], new: i64, limits: &ArchiveLimits) -> Vec<i64> {
    let mut count = live.len();
    let mut total: usize = live.iter().map(|&(_, b)| b as usize).sum();
    let mut evicted = Vec::new();
    for &(old, bytes) in live {
        if (count <= limits.max_entries && total <= limits.max_total) || old == new {
            break;
        }
        evicted.push(old);
        count -= 1;
        total -= bytes as usize;
    }
    evicted
}

/// The archive's statements on a PostgreSQL store (`toolcat_results`), run through the store's
/// pool and runtime.
#[cfg(feature = "postgres")]
mod pg {
    use super::{evictions, ArchiveError, ArchiveLimits, CallId, Entry, NewEntry, MAX_TOMBSTONES};
    use crate::records::postgres::{pg_error, PgStore, ARCHIVE_LOCK, NOW};

    pub(crate) fn put(
        pg: &PgStore,
        entry: NewEntry,
        limits: ArchiveLimits,
    ) -> Result<(), ArchiveError> {
        Ok(pg.with_client(move |mut client, label| async move {
            let err = |e| pg_error(&label, e);
            let tx = client.transaction().await.map_err(err)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&ARCHIVE_LOCK])
                .await
                .map_err(err)?;
            let id: i64 = tx
                .query_one(
                    &format!(
                        "INSERT INTO toolcat_results (reference, owner, call_id, tool, text, \
                         total_bytes, total_chars, truncated, created_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, {NOW}) RETURNING id"
                    ),
                    &[
                        &&entry.reference[..],
                        &&entry.owner[..],
                        &entry.call.map(|c| c.0),
                        &entry.tool,
                        &entry.text,
                        &entry.total_bytes,
                        &entry.total_chars,
                        &entry.truncated,
                    ],
                )
                .await
                .map_err(err)?
                .get(0);
            let live: Vec<(i64, i64)> = tx
                .query(
                    "SELECT id, octet_length(text)::BIGINT FROM toolcat_results \
                     WHERE text IS NOT NULL ORDER BY id",
                    &[],
                )
                .await
                .map_err(err)?
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect();
            let evicted = evictions(&live, id, &limits);
            if !evicted.is_empty() {
                tx.execute(
                    &format!(
                        "UPDATE toolcat_results SET text = NULL, evicted_at = {NOW} \
                         WHERE id = ANY($1)"
                    ),
                    &[&evicted],
                )
                .await
                .map_err(err)?;
            }
            // Keep the newest tombstones only.
            tx.execute(
                "DELETE FROM toolcat_results WHERE text IS NULL AND id NOT IN \
                 (SELECT id FROM toolcat_results WHERE text IS NULL ORDER BY id DESC LIMIT $1)",
                &[&(MAX_TOMBSTONES as i64)],
            )
            .await
            .map_err(err)?;
            tx.commit().await.map_err(err)
        })?)
    }

    pub(crate) fn entry(
        pg: &PgStore,
        reference: [u8; 16],
        owner: [u8; 16],
    ) -> Result<Option<Entry>, ArchiveError> {
        Ok(pg.with_client(move |client, label| async move {
            let row = client
                .query_opt(
                    "SELECT id, text IS NOT NULL, tool, call_id, total_bytes, total_chars, \
                     truncated FROM toolcat_results WHERE reference = $1 AND owner = $2",
                    &[&&reference[..], &&owner[..]],
                )
                .await
                .map_err(|e| pg_error(&label, e))?;
            Ok(row.map(|r| Entry {
                id: r.get(0),
                live: r.get(1),
                tool: r.get(2),
                call: r.get::<_, Option<i64>>(3).map(CallId),
                total_bytes: r.get(4),
                total_chars: r.get(5),
                truncated: r.get(6),
            }))
        })?)
    }

    /// `length` characters of entry `id` from character `start` (counted from 1).
    pub(crate) fn text(
        pg: &PgStore,
        id: i64,
        start: i64,
        length: i64,
    ) -> Result<String, ArchiveError> {
        Ok(pg.with_client(move |client, label| async move {
            let row = client
                .query_one(
                    "SELECT coalesce(substr(text, $2::BIGINT::INT, $3::BIGINT::INT), '') \
                     FROM toolcat_results WHERE id = $1",
                    &[&id, &start, &length],
                )
                .await
                .map_err(|e| pg_error(&label, e))?;
            Ok(row.get(0))
        })?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The owner of the tests' entries.
    fn me() -> ArchiveOwner {
        ArchiveOwner([7; 16])
    }

    fn small(max_entries: usize, max_total: usize) -> ArchiveLimits {
        ArchiveLimits {
            inline_budget: 8,
            preview: 4,
            max_entry: 64,
            max_entries,
            max_total,
        }
    }

    #[test]
    fn references_are_random_display_compactly_and_parse_in_either_case() {
        let a = ResultRef::random().unwrap();
        let b = ResultRef::random().unwrap();
        assert_ne!(a, b);
        let shown = a.to_string();
        assert_eq!(shown.len(), "result-".len() + 26, "{shown}");
        assert!(shown.starts_with("result-"), "{shown}");
        assert!(shown["result-".len()..]
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'v').contains(&c)));
        assert_eq!(shown.parse::<ResultRef>().unwrap(), a);
        assert_eq!(shown.to_uppercase().parse::<ResultRef>().unwrap(), a);
        assert_eq!(format!(" {shown}\n").parse::<ResultRef>().unwrap(), a);
        assert_eq!(
            ResultRef([0; 16]).to_string(),
            "result-00000000000000000000000000"
        );
        // The sequential references of earlier versions are no references any more.
        let no_prefix = &shown["result-".len()..];
        for bad in [
            "",
            "result-",
            "result-3",
            "3",
            no_prefix,
            &shown[..shown.len() - 1],
            &format!("{shown}0"),
            &format!("call-{no_prefix}"),
            &shown.replace('0', "w"),
        ] {
            if bad == shown {
                continue;
            }
            assert!(
                matches!(
                    bad.parse::<ResultRef>(),
                    Err(ArchiveError::BadReference { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn owners_are_new_each_time_and_show_no_bits() {
        assert_ne!(ArchiveOwner::new(), ArchiveOwner::new());
        assert_ne!(unique_bits(), unique_bits());
        assert_eq!(format!("{:?}", ArchiveOwner::new()), "ArchiveOwner(..)");
    }

    #[test]
    fn another_owner_cannot_read_or_learn_of_an_entry() {
        let a = ResultArchive::in_memory_with(small(1, 1000)).unwrap();
        let other = ArchiveOwner::new();
        let live = a
            .put(me(), Some(CallId(4)), "t", "mine")
            .unwrap()
            .to_string();
        let never = ResultRef::random().unwrap().to_string();
        let unknown = |r: &str, owner| match a.read(owner, r, 0, 10) {
            Err(e @ ArchiveError::UnknownReference { .. }) => e.to_string().replace(r, "REF"),
            other => panic!("{r}: {other:?}"),
        };
        // The same answer for another owner's live entry as for one that never existed.
        assert_eq!(unknown(&live, other), unknown(&never, me()));
        assert_eq!(a.read(me(), &live, 0, 10).unwrap().text, "mine");
        // Evicted: the owner learns which tool to call again; another owner learns nothing.
        let newer = a.put(other, None, "t", "theirs").unwrap().to_string();
        assert!(matches!(
            a.read(me(), &live, 0, 10),
            Err(ArchiveError::Evicted { .. })
        ));
        assert_eq!(unknown(&live, other), unknown(&never, me()));
        assert_eq!(unknown(&newer, me()), unknown(&never, me()));
        assert_eq!(a.read(other, &newer, 0, 10).unwrap().text, "theirs");
    }

    #[test]
    fn results_within_the_budget_stay_inline() {
        let a = ResultArchive::in_memory().unwrap();
        let text = "x".repeat(a.limits().inline_budget);
        assert_eq!(
            a.bound(me(), None, "read_file", &text).unwrap(),
            Bounded::Inline { text: text.clone() }
        );
        let over = format!("{text}y");
        let Bounded::Archived {
            reference,
            preview,
            preview_chars,
            total_bytes,
            total_chars,
            truncated,
        } = a.bound(me(), Some(CallId(1)), "read_file", &over).unwrap()
        else {
            panic!("over the budget must be archived");
        };
        assert_eq!(preview.len(), a.limits().preview);
        assert_eq!(preview_chars, a.limits().preview);
        assert_eq!(
            (total_bytes, total_chars, truncated),
            (over.len(), over.len(), false)
        );
        let whole = a.read(me(), &reference.to_string(), 0, usize::MAX).unwrap();
        assert_eq!(whole.text, over[..a.limits().inline_budget]);
        assert_eq!(whole.next_offset, Some(a.limits().inline_budget));
        let rest = a
            .read(me(), &reference.to_string(), a.limits().inline_budget, 100)
            .unwrap();
        assert_eq!(rest.text, "y");
        assert_eq!(rest.next_offset, None);
    }

    #[test]
    fn previews_and_slices_never_split_a_char() {
        let a = ResultArchive::in_memory_with(small(10, 1000)).unwrap();
        // 3-byte chars: a 4-byte preview holds one of them.
        let text = "日本語のテキスト";
        let Bounded::Archived {
            reference,
            preview,
            preview_chars,
            ..
        } = a.bound(me(), None, "t", text).unwrap()
        else {
            panic!("archived");
        };
        assert_eq!((preview.as_str(), preview_chars), ("日", 1));
        let r = reference.to_string();
        let s = a.read(me(), &r, 1, 2).unwrap();
        assert_eq!(
            (s.text.as_str(), s.length, s.next_offset),
            ("本語", 2, Some(3))
        );
        assert_eq!(s.total_chars, 8);
        // An 8-byte slice budget holds two 3-byte chars, not three.
        let s = a.read(me(), &r, 0, 8).unwrap();
        assert_eq!(
            (s.text.as_str(), s.length, s.next_offset),
            ("日本", 2, Some(2))
        );
        let end = a.read(me(), &r, 8, 5).unwrap();
        assert_eq!((end.text.as_str(), end.next_offset), ("", None));
    }

    #[test]
    fn bad_offsets_and_lengths_are_errors() {
        let a = ResultArchive::in_memory_with(small(10, 1000)).unwrap();
        let r = a.put(me(), None, "t", "abcdef").unwrap().to_string();
        let e = a.read(me(), &r, 7, 1).unwrap_err();
        assert!(
            matches!(
                e,
                ArchiveError::OffsetOutOfRange {
                    offset: 7,
                    total_chars: 6,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("from 0 to 6"), "{e}");
        assert!(matches!(
            a.read(me(), &r, 0, 0),
            Err(ArchiveError::ZeroLength)
        ));
        assert!(matches!(
            a.read(me(), "nonsense", 0, 1),
            Err(ArchiveError::BadReference { .. })
        ));
        let never = ResultRef::random().unwrap().to_string();
        let e = a.read(me(), &never, 0, 1).unwrap_err();
        assert!(matches!(e, ArchiveError::UnknownReference { .. }), "{e}");
        assert!(
            e.to_string().starts_with(&format!("no result `{never}`")),
            "{e}"
        );
    }

    #[test]
    fn the_oldest_entries_are_evicted_past_the_count_limit() {
        let a = ResultArchive::in_memory_with(small(3, 1000)).unwrap();
        let refs: Vec<ResultRef> = (0..5)
            .map(|i| {
                a.put(
                    me(),
                    Some(CallId(i + 1)),
                    &format!("tool{i}"),
                    &format!("result {i}"),
                )
                .unwrap()
            })
            .collect();
        for r in &refs[..2] {
            assert!(matches!(
                a.read(me(), &r.to_string(), 0, 10),
                Err(ArchiveError::Evicted { .. })
            ));
        }
        for (i, r) in refs[2..].iter().enumerate() {
            assert_eq!(
                a.read(me(), &r.to_string(), 0, 10).unwrap().text,
                format!("result {}", i + 2)
            );
        }
        let e = a.read(me(), &refs[0].to_string(), 0, 10).unwrap_err();
        let ArchiveError::Evicted { tool, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(tool, "tool0");
        assert!(e.to_string().contains("call `tool0` again"), "{e}");
        assert!(e.to_string().contains("`call-1`"), "{e}");
    }

    #[test]
    fn the_oldest_entries_are_evicted_past_the_byte_limit() {
        let a = ResultArchive::in_memory_with(small(100, 25)).unwrap();
        let first = a.put(me(), None, "t", &"a".repeat(10)).unwrap();
        let second = a.put(me(), None, "t", &"b".repeat(10)).unwrap();
        // 30 bytes > 25: the first goes, the second stays.
        let third = a.put(me(), None, "t", &"c".repeat(10)).unwrap();
        assert!(matches!(
            a.read(me(), &first.to_string(), 0, 1),
            Err(ArchiveError::Evicted { .. })
        ));
        assert_eq!(a.read(me(), &second.to_string(), 0, 1).unwrap().text, "b");
        assert_eq!(a.read(me(), &third.to_string(), 0, 1).unwrap().text, "c");
    }

    #[test]
    fn oversized_results_are_cut_to_max_entry_and_say_so() {
        let a = ResultArchive::in_memory_with(small(10, 1000)).unwrap();
        let text = "é".repeat(40); // 80 bytes > max_entry 64
        let Bounded::Archived {
            reference,
            total_bytes,
            total_chars,
            truncated,
            ..
        } = a.bound(me(), None, "t", &text).unwrap()
        else {
            panic!("archived");
        };
        assert_eq!((total_bytes, total_chars, truncated), (80, 32, true));
        let s = a.read(me(), &reference.to_string(), 30, 10).unwrap();
        assert!(s.truncated);
        assert_eq!(
            (s.text.as_str(), s.next_offset, s.total_bytes),
            ("éé", None, 80)
        );
    }

    #[test]
    fn a_reference_whose_tombstone_is_gone_is_unknown() {
        let a = ResultArchive::in_memory_with(small(1, 1000)).unwrap();
        let first = a.put(me(), None, "t", "one").unwrap();
        a.put(me(), None, "t", "two").unwrap();
        {
            let conn = a.sqlite();
            conn.execute("DELETE FROM results WHERE text IS NULL", [])
                .unwrap();
        }
        let e = a.read(me(), &first.to_string(), 0, 1).unwrap_err();
        assert!(matches!(e, ArchiveError::UnknownReference { .. }), "{e}");
    }

    #[test]
    fn the_model_text_names_the_reference_and_where_to_read_on() {
        let a = ResultArchive::in_memory_with(small(10, 1000)).unwrap();
        let b = a.bound(me(), None, "t", "abcdefghijkl").unwrap();
        let Bounded::Archived { reference, .. } = &b else {
            panic!("archived")
        };
        let text = b.to_model_text();
        assert!(
            text.starts_with(&format!(
                "abcd\n[result archived as `{reference}`: 12 bytes"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "read_tool_result(reference: \"{reference}\", offset: 4)"
            )),
            "{text}"
        );
    }

    #[test]
    fn the_archive_shares_the_call_store_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.sqlite");
        let store = crate::records::CallStore::open(&path).unwrap();
        let a = ResultArchive::open(&path).unwrap();
        let r = a.put(me(), None, "t", "kept").unwrap();
        drop(a);
        drop(store);
        let a = ResultArchive::open(&path).unwrap();
        assert_eq!(a.read(me(), &r.to_string(), 0, 10).unwrap().text, "kept");
    }

    #[test]
    fn a_store_of_schema_1_is_migrated_and_its_sequential_references_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.sqlite");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(crate::records::SCHEMA_V1).unwrap();
            conn.pragma_update(None, "application_id", crate::records::APPLICATION_ID)
                .unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            conn.execute(
                "INSERT INTO results (call_id, tool, text, total_bytes, total_chars, created_at) \
                 VALUES (1, 'read_file', 'old text', 8, 8, 'then')",
                [],
            )
            .unwrap();
        }
        // Read-only, the file is read as it is.
        let read_only = crate::records::CallStore::open_read_only(&path).unwrap();
        assert_eq!(read_only.list(None, 10).unwrap().len(), 0);
        drop(read_only);
        let version = |path: &Path| -> i32 {
            Connection::open(path)
                .unwrap()
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(version(&path), 1);

        let a = ResultArchive::open(&path).unwrap();
        assert_eq!(version(&path), crate::records::SCHEMA_VERSION);
        // The old entry can no longer be named and holds no text.
        assert!(matches!(
            a.read(me(), "result-1", 0, 10),
            Err(ArchiveError::BadReference { .. })
        ));
        let old_text: Option<String> = a
            .sqlite()
            .query_row(
                "SELECT text FROM results WHERE tool = 'read_file'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(old_text, None);
        let r = a.put(me(), None, "t", "new").unwrap();
        assert_eq!(a.read(me(), &r.to_string(), 0, 10).unwrap().text, "new");
        drop(a);
        // Opened again (by the archive or the call store), nothing changes.
        let a = ResultArchive::open(&path).unwrap();
        assert_eq!(a.read(me(), &r.to_string(), 0, 10).unwrap().text, "new");
        drop(crate::records::CallStore::open(&path).unwrap());
    }
}
