//! `toolcat`: check, list, search, plan, import and generate tool catalogs.

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    toolcat_cli::cli::run(toolcat_cli::cli::Cli::parse())
}
