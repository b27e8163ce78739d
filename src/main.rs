//! `toolcat`: check, list, search, plan, import and generate tool catalogs.

#![forbid(unsafe_code)]

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    let cli = toolcat_cli::cli::Cli::parse();
    toolcat_cli::cli::init_logging();
    toolcat_cli::cli::run(cli)
}
