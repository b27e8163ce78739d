//! `toolcat token`: the bearer tokens of `toolcat serve --tokens FILE` (`toolcat::mcp::auth`
//! documents the file). `add` prints the new token once on stdout and stores only its SHA-256;
//! `list` prints each entry's name, profile and scope (never a hash); `revoke` removes an entry,
//! which a running server notices at its next request. Files are replaced whole (written beside
//! and renamed), so a server never reads half a file; `add` and `revoke` hold an exclusive lock
//! on a sibling file `FILE.lock` from the read to the rename, so concurrent edits take turns and
//! none is lost. Exit 1 on an unknown profile, a taken, missing or malformed name, a duplicated
//! hash, or a file that does not load (missing, not a regular file, not valid).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::{Args, Subcommand};
use toolcat::mcp::auth::TokensFile;
use toolcat_catalog::model::Exposure;

use super::args::{CatalogArg, ScopeArg};
use crate::cli::Exit;

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub command: TokenCommand,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token bound to a profile and an exposure scope: the token is printed once on
    /// stdout (keep it; only its SHA-256 is stored), the file is created when absent.
    Add(AddArgs),
    /// List the tokens of a file: name, profile, scope (tab-separated; `--json` for JSON).
    List(ListArgs),
    /// Remove a token: a server started with `--tokens FILE` refuses it from its next request.
    Revoke(RevokeArgs),
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The tokens file (created when absent).
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
    /// The token's name: unique in the file, what `revoke` names.
    #[arg(long, value_name = "N")]
    pub name: String,
    /// The profile the token is granted (one the catalog declares).
    #[arg(long, value_name = "P")]
    pub profile: String,
    /// The exposure scope the token is granted; a server never serves wider than its own
    /// `--exposure`.
    #[arg(long, value_name = "S", value_enum)]
    pub scope: ScopeArg,
    #[command(flatten)]
    pub catalog: CatalogArg,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// The tokens file.
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
    /// One JSON array of `{name, profile, scope}` objects.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RevokeArgs {
    /// The tokens file.
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
    /// The name of the token to remove.
    pub name: String,
}

/// Runs `toolcat token`.
pub fn run(a: &TokenArgs) -> anyhow::Result<Exit> {
    match &a.command {
        TokenCommand::Add(a) => add(a),
        TokenCommand::List(a) => list(a),
        TokenCommand::Revoke(a) => revoke(a),
    }
}

fn add(a: &AddArgs) -> anyhow::Result<Exit> {
    let catalog = super::args::catalog(&a.catalog)?;
    let _lock = lock(&a.file)?;
    // `symlink_metadata`: a dangling link or a FIFO is read (and refused), not replaced.
    let mut file = if std::fs::symlink_metadata(&a.file).is_ok() {
        TokensFile::read(&a.file)?
    } else {
        TokensFile::default()
    };
    let token = file.add(&a.file, &a.name, &a.profile, Exposure::from(a.scope))?;
    // The whole file is checked, the new entry included: an unknown profile names the choices.
    file.check(&catalog, &a.file)?;
    write(&a.file, &file)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{token}")?;
    eprintln!(
        "toolcat token: added `{}` (profile `{}`, scope `{}`) to `{}`; the token above is shown once and not stored",
        a.name,
        a.profile,
        Exposure::from(a.scope).as_str(),
        a.file.display()
    );
    Ok(Exit::Ok)
}

fn list(a: &ListArgs) -> anyhow::Result<Exit> {
    let file = TokensFile::read(&a.file)?;
    file.check_entries(&a.file)?;
    let mut out = std::io::stdout().lock();
    if a.json {
        let rows: Vec<serde_json::Value> = file
            .tokens
            .iter()
            .map(|t| serde_json::json!({"name": t.name, "profile": t.profile, "scope": t.scope}))
            .collect();
        writeln!(out, "{}", serde_json::Value::Array(rows))?;
    } else {
        for t in &file.tokens {
            writeln!(out, "{}\t{}\t{}", t.name, t.profile, t.scope.as_str())?;
        }
    }
    Ok(Exit::Ok)
}

fn revoke(a: &RevokeArgs) -> anyhow::Result<Exit> {
    let _lock = lock(&a.file)?;
    let mut file = TokensFile::read(&a.file)?;
    file.check_entries(&a.file)?;
    let gone = file.revoke(&a.file, &a.name)?;
    write(&a.file, &file)?;
    eprintln!(
        "toolcat token: revoked `{}` (profile `{}`, scope `{}`) in `{}`",
        gone.name,
        gone.profile,
        gone.scope.as_str(),
        a.file.display()
    );
    Ok(Exit::Ok)
}

/// Takes the exclusive lock of the tokens file `path`: a sibling file `path.lock` (created
/// when absent, left in place), locked until the returned file is dropped. Blocks while another
/// `toolcat token add` or `revoke` holds it.
fn lock(path: &Path) -> anyhow::Result<std::fs::File> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = PathBuf::from(name);
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let file = options.open(&lock_path).with_context(|| {
        format!(
            "cannot open the lock file `{}` of the tokens file; make its directory writable",
            lock_path.display()
        )
    })?;
    file.lock()
        .with_context(|| format!("cannot lock `{}`", lock_path.display()))?;
    Ok(file)
}

/// Replaces `path` with `file`'s text: written to a temporary file beside it (mode 0600 on
/// Unix, as `tempfile` creates it), then renamed over it.
fn write(path: &Path, file: &TokensFile) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write beside `{}`", path.display()))?;
    tmp.write_all(file.to_toml().as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("cannot replace `{}`", path.display()))?;
    Ok(())
}
