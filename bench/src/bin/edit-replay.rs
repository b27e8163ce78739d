//! `edit-replay`: replays the file changes of a pinned commit range of this repository through
//! each edit protocol of `toolcat_tools::edit` and the file handlers, prints a table per protocol
//! and variant (or `--json`), and exits 1 when any edit was applied wrongly or any write reached a
//! file that changed after its read or approval (2 when the replay could not run). See
//! `toolcat_bench::replay` for what is replayed and BENCHMARKS.md for the figures.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use clap::Parser;
use serde_json::json;
use toolcat_bench::replay::{self, git::Repo, Report};

#[derive(Parser)]
#[command(about = "Replays this repository's own file changes through each edit protocol")]
struct Args {
    /// The range's first commit (excluded, as in git's FROM..TO); the default pins the figure of
    /// BENCHMARKS.md.
    #[arg(long, default_value = replay::DEFAULT_FROM)]
    from: String,
    /// The range's last commit (included).
    #[arg(long, default_value = replay::DEFAULT_TO)]
    to: String,
    /// Replays only N commits of the range: those with the N smallest hashes, the same ones on
    /// every run (the CI gate's sample).
    #[arg(long, value_name = "N")]
    sample: Option<usize>,
    /// Files per protocol edited through the file handlers with an external change (the first
    /// files of the replay, in commit order).
    #[arg(long, default_value_t = 100, value_name = "N")]
    external: usize,
    /// Replays only these commits of the range (a hash or its prefix; repeatable), to look at
    /// one case.
    #[arg(long, value_name = "HASH")]
    commit: Vec<String>,
    /// The repository to read (any directory inside a clone).
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// Prints the report as JSON instead of the table.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("edit-replay: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<bool> {
    let started = Instant::now();
    let repo = Repo::new(&args.repo);
    let (from, to) = repo.check_range(&args.from, &args.to)?;
    let mut commits = repo.commits(&from, &to)?;
    let in_range = commits.len();
    if let Some(n) = args.sample {
        commits.sort();
        commits.truncate(n);
    }
    if !args.commit.is_empty() {
        commits.retain(|c| args.commit.iter().any(|p| c.starts_with(p.as_str())));
    }
    let mut blobs = repo.blobs()?;
    let mut skipped = replay::git::Skipped::new();
    let mut report = Report::default();
    let mut files = Vec::new();
    for commit in &commits {
        files.extend(repo.changes(commit, &mut blobs, &mut skipped)?);
    }
    let mut hunks = 0;
    let mut cases = Vec::new();
    for change in &files {
        let derived = replay::protocols::replay(change, &mut report);
        hunks += derived.hunks;
        cases.push(replay::external::Case {
            what: format!("{} {}", &change.commit[..10], change.path),
            old: &change.old,
            path: &change.path,
            derived,
        });
    }
    replay::external::run(&cases, args.external, &mut report)?;
    let failures = report.failures();
    let seconds = started.elapsed().as_secs_f64();
    if args.json {
        let value = json!({
            "from": from,
            "to": to,
            "commits_in_range": in_range,
            "commits": commits.len(),
            "sample": args.sample,
            "files": files.len(),
            "hunks": hunks,
            "skipped": skipped,
            "seconds": seconds,
            "report": report,
            "failures": failures,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        let sample = match args.sample {
            Some(n) => format!(" (sample: the {n} smallest hashes)"),
            None => String::new(),
        };
        println!(
            "edit replay of {}..{}: {} of {} commits{sample}, {} modified text files, {} hunks, {seconds:.1} s",
            &from[..12],
            &to[..12],
            commits.len(),
            in_range,
            files.len(),
            hunks,
        );
        let skipped: Vec<String> = skipped.iter().map(|(k, v)| format!("{v} {k}")).collect();
        let skipped = if skipped.is_empty() {
            "none".to_string()
        } else {
            skipped.join(", ")
        };
        println!("modified files skipped (binary, over 1 MiB, not UTF-8, `\\r`, mode or final newline only): {skipped}");
        println!();
        print!("{}", report.table());
        if failures > 0 {
            println!("\nFAILED: {failures} wrong applications or writes to a changed file");
        }
    }
    Ok(failures == 0)
}
