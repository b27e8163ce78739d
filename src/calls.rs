//! `toolcat calls`: the records of a call store, newest first, and the `--store` option that
//! every command recording calls shares.
//!
//! Before listing, calls left `running` or `committed` by a process that is no longer alive are
//! judged `outcome_unknown`, and its `not_started` calls `cancelled`
//! ([`toolcat::CallStore::recover`]); a note on stderr names each: the listing then says what is
//! known — the side effect may or may not have happened — instead of showing a call as running
//! forever. Nothing is run again.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use toolcat::{CallRecord, CallState, CallStore};

/// The store file used when neither `--store` nor `TOOLCAT_STORE` is given, relative to the
/// current directory.
pub const DEFAULT_STORE: &str = ".toolcat/calls.sqlite";

/// The largest `toolcat calls --limit`.
pub const MAX_CALLS_LIMIT: u64 = 100_000;

/// Which call store a command uses.
#[derive(Debug, Clone, Args)]
pub struct StoreArg {
    /// The call store: an SQLite file holding the call records and archived results, created
    /// with its directories when absent (default: `.toolcat/calls.sqlite` in the current
    /// directory).
    #[arg(long = "store", value_name = "PATH", env = "TOOLCAT_STORE")]
    pub store: Option<PathBuf>,
}

impl StoreArg {
    /// `--store`, else `TOOLCAT_STORE`, else [`DEFAULT_STORE`].
    pub fn path(&self) -> PathBuf {
        self.store
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_STORE))
    }
}

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
    /// `effect`, `idempotent`, `retry_of`, `detail`, `pid`, `created_at`, `updated_at`).
    #[arg(long)]
    pub json: bool,
}

/// Runs `toolcat calls`. A store file that does not exist holds no records: nothing is created.
pub fn run(a: &CallsArgs) -> anyhow::Result<ExitCode> {
    let path = a.store.path();
    let records: Vec<CallRecord> = if path.exists() {
        let store = CallStore::open(&path)?;
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
        store.list(a.state, usize::try_from(a.limit).unwrap_or(usize::MAX))?
    } else {
        Vec::new()
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &records)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if records.is_empty() {
        let which = a
            .state
            .map(|s| format!(" in state `{s}`"))
            .unwrap_or_default();
        eprintln!("no call records{which} in `{}`", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let id_w = records
        .iter()
        .map(|r| r.id.to_string().len())
        .max()
        .unwrap_or(2)
        .max(2);
    let tool_w = records
        .iter()
        .map(|r| r.tool.len())
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(
        out,
        "{:id_w$}  {:15}  {:tool_w$}  {:24}  detail",
        "id", "state", "tool", "updated_at"
    )?;
    for r in &records {
        writeln!(
            out,
            "{:id_w$}  {:15}  {:tool_w$}  {:24}  {}",
            r.id.to_string(),
            r.state.as_str(),
            r.tool,
            r.updated_at,
            one_line(r.detail.as_deref().unwrap_or(""), 100)
        )?;
    }
    Ok(ExitCode::SUCCESS)
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
