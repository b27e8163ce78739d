//! `code-mode`: the Code Mode measurement. For each task of `tests/fixtures/code_mode/tasks.json`
//! (17 multi-call read tasks over a fixture repository that `make_repo.sh` builds in a temporary
//! directory, its HEAD checked against the pinned commit), replays a direct-calls conversation
//! (preset `code`) and a Code Mode one (preset `code_scripted`, one `run_code` program with the
//! QuickJS engine) through a real `toolcat::Session` over the reference agent's catalog, with
//! **scripted model steps**: no model is asked anything. Prints per task the steps, the tool calls
//! and the tokens the model reads (direct against Code Mode), whether each answer equals the
//! task's `expected`, and the per-call overhead of a call made from a program against a direct
//! `Coordinator::call` (or all of it as `--json`). Exits 1 when any answer differs from
//! `expected`, 2 when the measurement could not run. See `toolcat_bench::code_mode` for what is
//! replayed and counted, and BENCHMARKS.md for the figures.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use clap::Parser;
use serde_json::json;
use toolcat::code_mode::ScriptEngine;
use toolcat_bench::code_mode::{self, Overhead, TaskReport};

/// The line every output carries: nothing here is a real model's behaviour.
const SCRIPTED: &str = "model steps are scripted (replayed), not a real model's: each step's calls and answer are fixed by the task's note (direct) or its program (Code Mode); the tools, the session and the engine are real";

#[derive(Parser)]
#[command(
    about = "Tokens and steps of Code Mode against direct calls on the 17 tasks of tests/fixtures/code_mode, with scripted model steps"
)]
struct Args {
    /// Runs only these tasks (comma-separated ids).
    #[arg(long, value_delimiter = ',', value_name = "ID,...")]
    tasks: Vec<String>,
    /// Calls of `file_info` per run of the overhead measurement; 0 skips it.
    #[arg(long, default_value_t = 200, value_name = "N")]
    calls: usize,
    /// Runs of each kind in the overhead measurement (the figures are medians).
    #[arg(long, default_value_t = 5, value_name = "R")]
    repeat: usize,
    /// The fixture directory (tasks.json, make_repo.sh).
    #[arg(long, value_name = "DIR", default_value_os_t = code_mode::default_fixtures())]
    fixtures: PathBuf,
    /// The directory of the Code Mode programs, one `ID.js` per task.
    #[arg(long, value_name = "DIR", default_value_os_t = code_mode::default_programs())]
    programs: PathBuf,
    /// Prints the report as JSON instead of the table.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("code-mode: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<bool> {
    let started = Instant::now();
    let file = code_mode::load_tasks(&args.fixtures)?;
    let mut tasks = file.tasks.clone();
    if !args.tasks.is_empty() {
        for id in &args.tasks {
            if !tasks.iter().any(|t| &t.id == id) {
                let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
                bail!(
                    "no task `{id}` in tasks.json; the tasks are {}",
                    ids.join(", ")
                );
            }
        }
        tasks.retain(|t| args.tasks.contains(&t.id));
    }
    let repo = tempfile::tempdir().context("cannot create a temporary directory")?;
    code_mode::build_repository(&args.fixtures, repo.path(), &file.head)?;
    let catalog = toolcat_cli::reference_catalog();
    let engine: Arc<dyn ScriptEngine> = Arc::new(toolcat_quickjs::QuickJs);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut reports = Vec::new();
    for task in &tasks {
        reports.push(runtime.block_on(code_mode::run_task(
            catalog,
            task,
            repo.path(),
            &args.programs,
            Arc::clone(&engine),
        ))?);
    }
    let overhead = if args.calls > 0 {
        Some(runtime.block_on(code_mode::overhead(
            catalog,
            repo.path(),
            Arc::clone(&engine),
            args.calls,
            args.repeat.max(1),
        ))?)
    } else {
        None
    };
    let (run_code_tokens, api_tokens) = code_mode::run_code_tokens(catalog, Arc::clone(&engine))?;
    let mismatches = reports.iter().filter(|r| !r.matched()).count();
    let seconds = started.elapsed().as_secs_f64();
    let totals = Totals::of(&reports);
    if args.json {
        let value = json!({
            "scripted": SCRIPTED,
            "engine": engine.name(),
            "head": file.head,
            "format": code_mode::FORMAT.as_str(),
            "tokenizer": "o200k_base",
            "run_code_definition_tokens": run_code_tokens,
            "run_code_api_tokens": api_tokens,
            "tasks": reports,
            "totals": totals,
            "overhead": overhead,
            "mismatches": mismatches,
            "seconds": seconds,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print_table(
            &reports,
            &totals,
            overhead.as_ref(),
            &file.head,
            engine.name(),
            seconds,
        );
        println!(
            "\nrun_code's definition, sent at every Code Mode step: {} tokens, of which {} the TypeScript declarations of the program's API",
            thousands(run_code_tokens),
            thousands(api_tokens)
        );
    }
    Ok(mismatches == 0)
}

/// Sums over the tasks.
#[derive(serde::Serialize)]
struct Totals {
    tasks: usize,
    direct_steps: usize,
    direct_calls: usize,
    direct_tokens: usize,
    direct_searched_steps: usize,
    direct_searched_calls: usize,
    direct_searched_tokens: usize,
    code_mode_steps: usize,
    code_mode_calls: usize,
    code_mode_inner_calls: usize,
    code_mode_tokens: usize,
    ratio: f64,
    matched: usize,
}

impl Totals {
    fn of(reports: &[TaskReport]) -> Totals {
        let sum = |f: &dyn Fn(&TaskReport) -> usize| reports.iter().map(f).sum::<usize>();
        let direct_tokens = sum(&|r| r.direct.tokens);
        let code_mode_tokens = sum(&|r| r.code_mode.tokens);
        Totals {
            tasks: reports.len(),
            direct_steps: sum(&|r| r.direct.steps.len()),
            direct_calls: sum(&|r| r.direct.calls),
            direct_tokens,
            direct_searched_steps: sum(&|r| r.direct_searched.steps.len()),
            direct_searched_calls: sum(&|r| r.direct_searched.calls),
            direct_searched_tokens: sum(&|r| r.direct_searched.tokens),
            code_mode_steps: sum(&|r| r.code_mode.steps.len()),
            code_mode_calls: sum(&|r| r.code_mode.calls),
            code_mode_inner_calls: sum(&|r| r.code_mode.inner_calls),
            code_mode_tokens,
            ratio: code_mode_tokens as f64 / direct_tokens.max(1) as f64,
            matched: reports.iter().filter(|r| r.matched()).count(),
        }
    }
}

/// `12,345`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `yes`, or which answers differ from `expected`.
fn mark(r: &TaskReport) -> String {
    let wrong: Vec<&str> = [
        (r.direct_matched, "direct"),
        (r.direct_searched_matched, "direct with tool_search"),
        (r.code_mode_matched, "Code Mode"),
    ]
    .into_iter()
    .filter(|(ok, _)| !ok)
    .map(|(_, what)| what)
    .collect();
    if wrong.is_empty() {
        "yes".to_string()
    } else {
        format!("NO: {}", wrong.join(", "))
    }
}

fn print_table(
    reports: &[TaskReport],
    totals: &Totals,
    overhead: Option<&Overhead>,
    head: &str,
    engine: &str,
    seconds: f64,
) {
    println!(
        "Code Mode against direct calls: {} tasks of tests/fixtures/code_mode/tasks.json on the fixture repository (HEAD {}), engine {engine}, {seconds:.1} s",
        reports.len(),
        &head[..12.min(head.len())],
    );
    println!("{SCRIPTED}");
    println!(
        "tokens read = o200k_base tokens of the tool definitions sent at each step (OpenAI export of the session's plan) plus every message so far (prompt, earlier calls as JSON, result texts), summed over the steps"
    );
    println!();
    println!("| task | direct steps (min) | direct calls | direct tokens | Code Mode steps | Code Mode calls (in programs) | Code Mode tokens | Code Mode / direct | direct with tool_search: steps, tokens | answers = expected |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in reports {
        println!(
            "| {} | {} ({}) | {} | {} | {} | {} ({}) | {} | {:.2} | {}, {} | {} |",
            r.id,
            r.direct.steps.len(),
            r.direct_steps_min,
            r.direct.calls,
            thousands(r.direct.tokens),
            r.code_mode.steps.len(),
            r.code_mode.calls,
            r.code_mode.inner_calls,
            thousands(r.code_mode.tokens),
            r.ratio(),
            r.direct_searched.steps.len(),
            thousands(r.direct_searched.tokens),
            mark(r),
        );
    }
    println!(
        "| **total** | {} | {} | {} | {} | {} ({}) | {} | {:.2} | {}, {} | {}/{} |",
        totals.direct_steps,
        totals.direct_calls,
        thousands(totals.direct_tokens),
        totals.code_mode_steps,
        totals.code_mode_calls,
        totals.code_mode_inner_calls,
        thousands(totals.code_mode_tokens),
        totals.ratio,
        totals.direct_searched_steps,
        thousands(totals.direct_searched_tokens),
        totals.matched,
        totals.tasks,
    );
    for r in reports {
        for (what, c) in [
            ("direct", &r.direct),
            ("direct with tool_search", &r.direct_searched),
            ("Code Mode", &r.code_mode),
        ] {
            if let Some(e) = &c.error {
                println!("\n{} ({what}): {e}", r.id);
            }
        }
    }
    if let Some(o) = overhead {
        println!();
        println!(
            "per-call overhead: {} calls of `{}` {} per run, median of {} runs",
            o.calls, o.call.name, o.call.arguments, o.repeat
        );
        println!(
            "  direct, Coordinator::call:                 {:>8.1} µs/call",
            o.direct_us
        );
        println!(
            "  from one run_code program (whole call):   {:>8.1} µs/call",
            o.code_mode_us
        );
        println!(
            "  a run_code program making no call:        {:>8.1} µs",
            o.empty_program_us
        );
        println!(
            "  from a program, fixed cost aside:          {:>8.1} µs/call ({:+.1} µs against direct)",
            o.code_mode_marginal_us,
            o.code_mode_marginal_us - o.direct_us
        );
    }
    let failed = totals.tasks - totals.matched;
    if failed > 0 {
        println!("\nFAILED: {failed} tasks with an answer other than expected");
    }
}
