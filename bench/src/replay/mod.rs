//! The edit-protocol replay (`edit-replay`): the file changes of a pinned range of this
//! repository's history, made again through each edit protocol of `toolcat_tools::edit`
//! (`str_replace`, Hashline, `apply_patch`), as a model would write each call from the old file and
//! the diff, and compared with the file the commit holds.
//!
//! - [`git`] reads the commits and the old and new text of every modified file;
//! - [`derive`](mod@derive) turns a diff into each protocol's input;
//! - [`protocols`] runs the protocols on the clean inputs and on perturbed ones (whitespace drift
//!   in the model's copy, a block present twice, stale Hashline anchors) and classifies each case;
//! - [`external`] edits through the real file handlers and the execution coordinator while the
//!   file changes between the read (or the approval) and the write.
//!
//! Every case ends in one [`Outcome`]: applied correctly, refused as expected, refused or applied
//! against expectation, applied wrongly (a result that differs from the expected text: must never
//! happen), or not constructible (the variant does not apply to that hunk). [`Tally`] counts them
//! per protocol and variant.

pub mod derive;
pub mod external;
pub mod git;
pub mod protocols;

/// The default range's first commit (excluded): the repository's first commit.
pub const DEFAULT_FROM: &str = "9492e44851c7aa5bf4509ff18fc683ec7fca4ecb";
/// The default range's last commit (included), so the figure does not move as history grows.
pub const DEFAULT_TO: &str = "367d632d6385582ea5305362b73bd2d970bbe8e3";

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

/// The end of one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Applied, and the text equals the expected one.
    Correct,
    /// Refused, as the case expects, with the expected kind of error.
    RefusedExpected,
    /// Refused with another reason than expected, refused where it should apply, or applied
    /// (correctly) where it should refuse; the message says which.
    Unexpected(String),
    /// Applied, and the text differs from the expected one (or a refusal was due).
    Wrong(String),
    /// The variant cannot be built for this case (say, the model's perturbed copy occurs verbatim
    /// in the file, so it tests nothing tolerant).
    NotConstructible,
}

/// Counts of one protocol and variant.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Tally {
    /// Cases run (not constructible ones included).
    pub cases: usize,
    /// Applied correctly.
    pub correct: usize,
    /// Refused as expected, with the expected reason.
    pub refused_expected: usize,
    /// Refusals with the expected reason (ambiguity) after which the model retried with more
    /// context; counted on top of the case's final outcome.
    pub retries: usize,
    /// Cases that needed at least one such retry.
    pub retried_cases: usize,
    /// Refused or applied against expectation.
    pub unexpected: usize,
    /// Applied wrongly.
    pub wrong: usize,
    /// Writes to a file that changed after the read or the approval (external-change rows).
    pub writes_to_changed: usize,
    /// Cases the variant does not apply to.
    pub not_constructible: usize,
    /// The first few unexpected or wrong cases: `COMMIT PATH (what): message`.
    pub examples: Vec<String>,
}

/// At most this many examples are kept per row.
const EXAMPLES: usize = 5;

impl Tally {
    /// Counts `outcome` of the case described by `what` (`commit path detail`).
    pub fn add(&mut self, outcome: Outcome, what: impl FnOnce() -> String) {
        self.cases += 1;
        match outcome {
            Outcome::Correct => self.correct += 1,
            Outcome::RefusedExpected => self.refused_expected += 1,
            Outcome::NotConstructible => self.not_constructible += 1,
            Outcome::Unexpected(m) => {
                self.unexpected += 1;
                self.example(what, &m);
            }
            Outcome::Wrong(m) => {
                self.wrong += 1;
                self.example(what, &m);
            }
        }
    }

    fn example(&mut self, what: impl FnOnce() -> String, message: &str) {
        if self.examples.len() < EXAMPLES {
            let mut m: String = message.chars().take(300).collect();
            if m.len() < message.len() {
                m.push('…');
            }
            self.examples.push(format!("{}: {m}", what()));
        }
    }
}

/// The tallies of a run by `(protocol, variant)`, in the order rows were first counted.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// Rows in order.
    pub rows: Vec<Row>,
    /// Rows that could not run, with the reason (`protocol`, `variant`, reason).
    pub not_run: Vec<(String, String, String)>,
}

/// One row of the report.
#[derive(Debug, Serialize)]
pub struct Row {
    /// `str_replace`, `hashline`, `apply_patch`.
    pub protocol: String,
    /// `clean` or the perturbation.
    pub variant: String,
    /// What one case is: `call`, `file`, `edit`.
    pub unit: String,
    /// The counts.
    #[serde(flatten)]
    pub tally: Tally,
}

impl Report {
    /// The tally of `protocol`/`variant`, created (counting `unit`s) on first use.
    pub fn row(&mut self, protocol: &str, variant: &str, unit: &str) -> &mut Tally {
        let i = match self
            .rows
            .iter()
            .position(|r| r.protocol == protocol && r.variant == variant)
        {
            Some(i) => i,
            None => {
                self.rows.push(Row {
                    protocol: protocol.to_string(),
                    variant: variant.to_string(),
                    unit: unit.to_string(),
                    tally: Tally::default(),
                });
                self.rows.len() - 1
            }
        };
        &mut self.rows[i].tally
    }

    /// Total wrong applications and writes to changed files: the gate's failures.
    pub fn failures(&self) -> usize {
        self.rows
            .iter()
            .map(|r| r.tally.wrong + r.tally.writes_to_changed)
            .sum()
    }

    /// The rows as a Markdown table, then the examples of unexpected or wrong cases and the rows
    /// that did not run.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "| protocol | variant | cases | applied correctly | refused, as expected | refusals, then retried (cases) | unexpected | applied wrongly | writes to a changed file | not constructible |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for r in &self.rows {
            let t = &r.tally;
            let _ = writeln!(
                out,
                "| {} | {} | {} {}s | {} | {} | {} ({}) | {} | **{}** | **{}** | {} |",
                r.protocol,
                r.variant,
                t.cases,
                r.unit,
                t.correct,
                t.refused_expected,
                t.retries,
                t.retried_cases,
                t.unexpected,
                t.wrong,
                t.writes_to_changed,
                t.not_constructible
            );
        }
        for (protocol, variant, reason) in &self.not_run {
            let _ = writeln!(
                out,
                "| {protocol} | {variant} | not run: {reason} | | | | | | | |"
            );
        }
        let examples: BTreeMap<String, &Vec<String>> = self
            .rows
            .iter()
            .filter(|r| !r.tally.examples.is_empty())
            .map(|r| (format!("{} {}", r.protocol, r.variant), &r.tally.examples))
            .collect();
        for (row, list) in examples {
            let _ = writeln!(out, "\n{row}:");
            for e in list {
                let _ = writeln!(out, "  {e}");
            }
        }
        out
    }
}
