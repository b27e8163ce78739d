//! What both examples share: the approval prompt on the terminal (`mod common;` in each).

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
