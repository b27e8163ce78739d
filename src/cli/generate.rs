//! `toolcat generate`: rewrite `generated/` from the catalog, or with `--check` name each stale
//! file (the files themselves are [`crate::generate`]'s).

use crate::cli::Exit;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;

use super::args::{catalog, CatalogArg};
use crate::generate;

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// With `--catalog`, local tools named as one of the reference agent's `#[tool]` handlers
    /// get that handler (and its input schema); other local tools have none.
    #[command(flatten)]
    pub catalog: CatalogArg,
    /// Only compare; exit 1 naming each stale file.
    #[arg(long)]
    pub check: bool,
    /// Where the generated files live.
    #[arg(long, value_name = "DIR", default_value = "generated")]
    pub dir: PathBuf,
}

/// Runs `toolcat generate`.
pub fn run(a: &GenerateArgs) -> anyhow::Result<Exit> {
    // A `--catalog` file's local tools get the reference agent's handlers by name, so an edited
    // copy of the reference catalog exports the same schemas and its files differ only where
    // the rows do.
    let c = catalog(&a.catalog)?;
    let files = generate::files(&c)?;
    if a.check {
        let stale = generate::stale(&a.dir, &files);
        if stale.is_empty() {
            writeln!(
                std::io::stdout().lock(),
                "{}: {} files fresh",
                a.dir.display(),
                files.len()
            )?;
            return Ok(Exit::Ok);
        }
        for path in &stale {
            eprintln!(
                "stale: {} (run `{}` to rewrite it)",
                path.display(),
                generate::COMMAND
            );
        }
        return Ok(Exit::CheckFailed);
    }
    let written = generate::write(Path::new(&a.dir), &files)?;
    for path in &written {
        writeln!(std::io::stdout().lock(), "wrote {}", path.display())?;
    }
    eprintln!("{} of {} files changed", written.len(), files.len());
    Ok(Exit::Ok)
}
