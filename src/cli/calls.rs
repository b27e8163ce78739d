//! `toolcat calls`: the records of a call store, newest first (the `--store` option every command
//! recording calls shares is `args::StoreArg`).
//!
//! Before listing, calls left `running` or `committed` by a process that is no longer alive are
//! judged `outcome_unknown`, and its `not_started` calls `cancelled`
//! ([`toolcat::CallStore::recover`]); a note on stderr names each: the listing then says what is
//! known — the side effect may or may not have happened — instead of showing a call as running
//! forever. Nothing is run again.
//!
//! The text listing shows, under a call's line, one line per file it changed (path, fingerprint
//! before → after); `--json` gives the changes whole, diffs included.

use crate::cli::Exit;
use std::io::Write as _;
use std::path::Path;

use clap::Args;
use toolcat::{CallRecord, CallState, CallStore, DamagedRecord, StoreError, StoreLocation};

use super::args::StoreArg;

/// The largest `toolcat calls --limit`.
pub const MAX_CALLS_LIMIT: u64 = 100_000;

#[derive(Debug, Args)]
pub struct CallsArgs {
    /// Only calls in this state: `not_started`, `running`, `committed`, `succeeded`, `failed`,
    /// `cancelled` or `outcome_unknown`.
    #[arg(long, value_name = "S")]
    pub state: Option<CallState>,
    #[command(flatten)]
    pub store: StoreArg,
    /// How many records to show, newest first: 1 to 100 000.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 50,
        value_parser = clap::value_parser!(u64).range(1..=MAX_CALLS_LIMIT)
    )]
    pub limit: u64,
    /// Print a JSON array of records (`id`, `tool`, `arguments`, `arguments_truncated`, `state`,
    /// `effect`, `idempotent`, `retry_of`, `parent` (the `run_code` call a Code Mode program's
    /// call was made from, else `null`), `detail`, `pid`, `created_at`, `updated_at`,
    /// `changes`: the files the call changed, always a list, each `path`, `before`, `after`,
    /// `diff`, `diff_bytes`, `diff_truncated`, `diff_reference`; and `changes_omitted`).
    #[arg(long)]
    pub json: bool,
}

/// Runs `toolcat calls`. A store file that does not exist holds no records: nothing is created.
/// A store this user cannot write is listed read-only, with a warning; a record that cannot be
/// read back is flagged in its place (and on stderr) while the others are listed.
pub fn run(a: &CallsArgs) -> anyhow::Result<Exit> {
    list(a)
}

/// Opens the store to list it: writable when it can be (so calls of ended processes are
/// judged), else read-only with a warning.
fn open_for_listing(path: &Path) -> anyhow::Result<CallStore> {
    match CallStore::open(path) {
        Ok(store) => Ok(store),
        Err(
            e @ (StoreError::Open { .. } | StoreError::ReadOnly { .. } | StoreError::Sqlite { .. }),
        ) if !path.is_dir() => {
            let store = CallStore::open_read_only(path).map_err(|ro| {
                // The same refusal both ways (a FIFO, a device) is said once, as itself.
                if ro.to_string() == e.to_string() {
                    anyhow::Error::new(ro)
                } else {
                    anyhow::Error::new(ro).context(format!("{e}; reading it read-only failed too"))
                }
            })?;
            eprintln!(
                "warning: the call store `{}` cannot be written ({}); listed read-only, so calls of processes that ended are shown as they were left",
                path.display(),
                match e {
                    StoreError::Open { source, .. } => source.to_string(),
                    StoreError::Sqlite { source, .. } => source.to_string(),
                    _ => "it is read-only".to_string(),
                }
            );
            Ok(store)
        }
        Err(e) => Err(e.into()),
    }
}

fn list(a: &CallsArgs) -> anyhow::Result<Exit> {
    let location = a.store.location(false)?;
    let store = match &location {
        StoreLocation::File(path) if path.exists() => Some(open_for_listing(path)?),
        StoreLocation::File(_) => None,
        // A database holds the records of every replica: listing it takes a lease for the time
        // of the listing, and judges the calls of replicas whose lease expired.
        StoreLocation::Postgres(_) => Some(super::args::open_store(&location)?),
    };
    let rows: Vec<Result<CallRecord, DamagedRecord>> = if let Some(store) = store {
        // A store this user may read but not write is still listed, as it stands.
        let judged = store.recover().unwrap_or_else(|e| {
            eprintln!("warning: calls of processes that ended are shown as they were left: {e}");
            Vec::new()
        });
        for id in judged {
            if let Ok(Some(r)) = store.get(id) {
                eprintln!(
                    "note: `{id}` is now `{}`: {}",
                    r.state,
                    r.detail.as_deref().unwrap_or("its process ended")
                );
            }
        }
        store.list_rows(a.state, usize::try_from(a.limit).unwrap_or(usize::MAX))?
    } else {
        Vec::new()
    };
    let damaged = rows.iter().filter(|r| r.is_err()).count();
    for d in rows.iter().filter_map(|r| r.as_ref().err()) {
        eprintln!(
            "warning: record `{}` of `{}` cannot be read back: {}; it is listed as `damaged`, the other records as stored",
            d.id,
            location,
            one_line(&d.reason, 200)
        );
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        let values = rows
            .iter()
            .map(|r| match r {
                Ok(record) => serde_json::to_value(record),
                Err(d) => Ok(serde_json::json!({
                    "id": d.id,
                    "state": "damaged",
                    "damaged": d.reason,
                })),
            })
            .collect::<Result<Vec<_>, _>>()?;
        serde_json::to_writer_pretty(&mut out, &values)?;
        writeln!(out)?;
        return Ok(exit_code(damaged));
    }
    if rows.is_empty() {
        let which = a
            .state
            .map(|s| format!(" in state `{s}`"))
            .unwrap_or_default();
        eprintln!("no call records{which} in `{location}`");
        return Ok(Exit::Ok);
    }
    let id_w = rows
        .iter()
        .map(|r| match r {
            Ok(r) => r.id.to_string().len(),
            Err(d) => d.id.to_string().len(),
        })
        .max()
        .unwrap_or(2)
        .max(2);
    let tool_w = rows
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .map(|r| one_line(&r.tool, 60).chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(
        out,
        "{:id_w$}  {:15}  {:tool_w$}  {:24}  detail",
        "id", "state", "tool", "updated_at"
    )?;
    for row in &rows {
        match row {
            Ok(r) => {
                // A Code Mode program's call names the `run_code` call it was made from.
                let detail = match (r.parent, r.detail.as_deref()) {
                    (Some(parent), Some(detail)) => format!("from {parent}; {detail}"),
                    (Some(parent), None) => format!("from {parent}"),
                    (None, detail) => detail.unwrap_or("").to_string(),
                };
                writeln!(
                    out,
                    "{:id_w$}  {:15}  {:tool_w$}  {:24}  {}",
                    r.id.to_string(),
                    r.state.as_str(),
                    one_line(&r.tool, 60),
                    one_line(&r.updated_at, 24),
                    one_line(&detail, 100)
                )?;
                write_changes(&mut out, r, id_w)?;
            }
            Err(d) => writeln!(
                out,
                "{:id_w$}  {:15}  {:tool_w$}  {:24}  {}",
                d.id.to_string(),
                "damaged",
                "?",
                "?",
                one_line(&d.reason, 100)
            )?,
        }
    }
    Ok(exit_code(damaged))
}

/// The changes of record `r` under its line, one a line, indented past the id column:
/// `changed PATH: BEFORE → AFTER` with the fingerprints shortened to 19 characters, then a line
/// counting the changes not kept. The diffs are in `--json`.
fn write_changes(
    out: &mut impl std::io::Write,
    r: &CallRecord,
    id_w: usize,
) -> std::io::Result<()> {
    for c in &r.changes {
        writeln!(
            out,
            "{:id_w$}  changed {}: {} → {}",
            "",
            one_line(&c.path, 200),
            one_line(&c.before, 19),
            one_line(&c.after, 19)
        )?;
    }
    if r.changes_omitted > 0 {
        writeln!(
            out,
            "{:id_w$}  and {} more changes, not kept in the record",
            "", r.changes_omitted
        )?;
    }
    Ok(())
}

/// Success when every record was read back; failure when `damaged` records were flagged (the
/// listing is complete otherwise).
fn exit_code(damaged: usize) -> Exit {
    if damaged == 0 {
        Exit::Ok
    } else {
        Exit::CheckFailed
    }
}

/// `text` on one line (line breaks as spaces), at most `max` chars, `…` when cut.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        flat
    } else {
        let mut cut: String = flat.chars().take(max - 1).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn details_are_shown_on_one_bounded_line() {
        assert_eq!(one_line("a\nb\tc", 10), "a b c");
        assert_eq!(one_line("abcdef", 4), "abc…");
        assert_eq!(one_line("éééé", 4), "éééé");
    }
}
