//! What the two discovery-loop examples share: the approval prompt on the terminal.
//!
//! The examples are `examples/openai_loop.rs` (OpenAI Chat Completions through async-openai) and
//! `examples/anthropic_loop.rs` (Anthropic Messages through reqwest). Each runs the reference
//! catalog's real tools in the current directory under the `code` preset; without credentials it
//! prints how to run it and exits 0.

#![forbid(unsafe_code)]

use std::io::{BufRead as _, Write as _};

use toolcat::ApprovalRequest;

/// Asks on the terminal whether a gated call may run: prints the tool, its arguments and what
/// it will touch (the targets its prepare step resolved), and reads one line from stdin; only
/// `y` or `yes` approves. No terminal (stdin closed) is a no.
pub fn approve_on_terminal(request: &ApprovalRequest<'_>) -> bool {
    let name = request.catalog.exported_name(request.tool);
    let targets: Vec<&str> = request
        .targets
        .iter()
        .map(|t| t.resource.as_str())
        .collect();
    eprint!(
        "approve {name} {} (touches {})? [y/N] ",
        request.arguments,
        targets.join(", ")
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
