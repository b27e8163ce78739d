//! `toolcat token`: the bearer tokens of `toolcat serve --tokens FILE` (`toolcat::mcp::auth`
//! documents the file). `add` prints the new token once on stdout and stores only its SHA-256;
//! `list` prints each entry's name, profile and scope (never a hash); `revoke` removes an entry,
//! which a running server notices at its next request. Files are replaced whole (written beside
//! and renamed), so a server never reads half a file. Exit 1 on an unknown profile, a taken or
//! missing name, or a file that does not load.

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
    let mut file = if a.file.exists() {
        TokensFile::read(&a.file)?
    } else {
        TokensFile::default()
    };
    let catalog = super::args::catalog(&a.catalog)?;
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
    let mut file = TokensFile::read(&a.file)?;
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
