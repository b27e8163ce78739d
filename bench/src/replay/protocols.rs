//! Each protocol of `toolcat_tools::edit` run on one file change, clean and perturbed, each case
//! classified into an [`Outcome`] (see the module docs of [`crate::replay`]).
//!
//! - `str_replace`, one call per hunk in file order on the text the previous calls left, the
//!   `old_string` the hunk's lines plus as little context as makes it unique: the model starts with
//!   none and adds a line (above, then below, ...) each time the call is refused as ambiguous.
//!   Perturbed variants take each hunk's final call and send it once to the text before it:
//!   `trailing-ws-added` (two spaces after each line of the model's `old_string`),
//!   `trailing-ws-removed` (two spaces after each matched line of the file, the model's copy
//!   without them), `indent-shifted` (the model's `old_string` and `new_string` four spaces
//!   deeper), `crlf-copy` (the model's strings with `\r\n`), `crlf-file` (the file with `\r\n`,
//!   the model's strings with `\n`): each must apply correctly or be refused as ambiguous
//!   (`AmbiguousTolerant` naming the hunk's line); `twice-indented` (the block also appended to
//!   the file four spaces deeper, the model's copy eight spaces deeper) must be refused naming
//!   both places. A perturbed copy that occurs verbatim in the file is not constructible.
//! - Hashline: the old file rendered whole, the anchors taken from the rendered lines, one
//!   `apply` of every hunk's edit ([`derive::line_edits`]). `stale-inserted-above` (a line inserted
//!   above the topmost anchored line between render and apply) and `stale-line-changed` (that line
//!   changed) must be refused as `Stale`.
//! - `apply_patch`: one `*** Update File:` patch per file with 3 lines of context per hunk; a chunk
//!   refused as ambiguous gets an `@@` line, then 3 more lines each side, until it applies (each
//!   refusal counted as a retry, its candidates checked against the file).

use toolcat_tools::edit::hashline::{self, HashlineError, LineEdit, LineOp};
use toolcat_tools::edit::patch::{self, FilePatch, PatchError};
use toolcat_tools::edit::replace::{str_replace, ReplaceError};

use super::derive::{self, Chunking, Hunk, LineOpKind, Lines, Replacement};
use super::git::FileChange;
use super::{Outcome, Report};

/// Context lines per patch chunk, and the lines a retry adds on each side.
pub const PATCH_CONTEXT: usize = 3;

/// Attempts per patch before the case counts as unexpected (each widens one chunk).
const PATCH_ATTEMPTS: usize = 200;

/// What the clean replay of one file derived and applied, for the runs through the file
/// handlers ([`super::external`]).
#[derive(Debug, Clone, Default)]
pub struct Derived {
    /// Number of hunks of the file.
    pub hunks: usize,
    /// The first hunk's `str_replace` call that applied, and the text after it.
    pub first_call: Option<(Replacement, String)>,
    /// The Hashline edits that applied, and the new text.
    pub line_edits: Option<(Vec<derive::AnchoredEdit>, String)>,
    /// The patch that applied, and the new text.
    pub patch: Option<(String, String)>,
}

/// Replays `change` through every protocol and variant into `report`.
pub fn replay(change: &FileChange, report: &mut Report) -> Derived {
    let old = Lines::split(&change.old);
    let new = Lines::split(&change.new);
    let hunks = derive::hunks(&old, &new);
    let what = |detail: &str| format!("{} {} ({detail})", &change.commit[..10], change.path);
    Derived {
        hunks: hunks.len(),
        first_call: str_replace_calls(&old, &new, &hunks, report, &what),
        line_edits: hashline_file(change, &old, &new, &hunks, report, &what)
            .map(|e| (e, change.new.clone())),
        patch: patch_file(change, &old, &new, &hunks, report, &what)
            .map(|p| (p, change.new.clone())),
    }
}

fn str_replace_calls(
    old: &Lines,
    new: &Lines,
    hunks: &[Hunk],
    report: &mut Report,
    what: &dyn Fn(&str) -> String,
) -> Option<(Replacement, String)> {
    let mut first = None;
    let mut current = old.clone();
    let mut shift: isize = 0;
    for (n, h) in hunks.iter().enumerate() {
        let at = |i: usize| i.checked_add_signed(shift).expect("hunks are in order");
        let range = at(h.old.start)..at(h.old.end);
        let new_lines = &new.lines[h.new.clone()];
        let expected_lines = current.replaced(range.clone(), new_lines);
        let expected = expected_lines.join();
        let text = current.join();
        let detail = format!("hunk {} at line {}", n + 1, range.start + 1);

        let mut outcome = Outcome::NotConstructible;
        let mut retries = 0;
        let mut final_call = None;
        for (above, below) in derive::context_steps(&range, current.len()) {
            let Some(call) = derive::replacement(&current, range.clone(), new_lines, above, below)
            else {
                continue;
            };
            let found = derive::occurrences(&text, &call.old_string);
            match str_replace(&text, &call.old_string, &call.new_string, false) {
                Ok(done) if found > 1 => {
                    outcome = if done.text == expected {
                        Outcome::Unexpected(format!(
                            "applied an `old_string` found {found} times instead of refusing"
                        ))
                    } else {
                        Outcome::Wrong(format!("applied an `old_string` found {found} times"))
                    };
                    break;
                }
                Ok(done) => {
                    outcome = if done.text == expected {
                        final_call = Some(call);
                        Outcome::Correct
                    } else {
                        Outcome::Wrong(format!(
                            "the result differs from the commit's text; old_string {:?}",
                            call.old_string
                        ))
                    };
                    break;
                }
                Err(ReplaceError::Ambiguous { lines }) if found > 1 && lines.len() > 1 => {
                    retries += 1;
                }
                Err(e) => {
                    outcome = Outcome::Unexpected(format!(
                        "refused (`old_string` found {found} times): {e}"
                    ));
                    break;
                }
            }
        }
        let tally = report.row("str_replace", "clean", "call");
        tally.retries += retries;
        tally.retried_cases += usize::from(retries > 0);
        tally.add(outcome, || what(&detail));

        if let Some(call) = final_call {
            perturbed_calls(&current, &text, &expected, &call, report, &|| what(&detail));
            if n == 0 {
                first = Some((call, expected.clone()));
            }
        }
        shift += h.new.len() as isize - h.old.len() as isize;
        current = expected_lines;
    }
    first
}

/// `text` with `prefix` before each line that is not blank.
fn indent(text: &str, prefix: &str) -> String {
    text.split('\n')
        .map(|l| {
            if l.trim().is_empty() {
                l.to_string()
            } else {
                format!("{prefix}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a tolerant `str_replace` case expects.
enum Expect<'a> {
    /// This text, or a refusal as ambiguous naming line `line` (1-based).
    TextOrAmbiguous { text: &'a str, line: usize },
    /// A refusal as ambiguous naming all of these lines (1-based).
    Ambiguous(Vec<usize>),
}

/// Where `got` first differs from `want`: `line N: got "..." want "..."`.
pub fn first_difference(got: &str, want: &str) -> String {
    let (g, w): (Vec<&str>, Vec<&str>) = (got.split('\n').collect(), want.split('\n').collect());
    let i = g.iter().zip(&w).take_while(|(a, b)| a == b).count();
    format!(
        "line {}: got {:?}, want {:?}",
        i + 1,
        g.get(i).copied().unwrap_or("(end)"),
        w.get(i).copied().unwrap_or("(end)")
    )
}

/// One perturbed call. With `exact_ok` false, a perturbed `old` that occurs verbatim in `file`
/// tests no tolerance and the case is not constructible; with it true (line endings: an exact
/// match writes `new`'s line breaks as the file's), the expectation holds either way.
fn tolerant_case(file: &str, old: &str, new: &str, expect: &Expect<'_>, exact_ok: bool) -> Outcome {
    if !exact_ok && file.contains(old) {
        return Outcome::NotConstructible;
    }
    match (str_replace(file, old, new, false), expect) {
        (Ok(done), Expect::TextOrAmbiguous { text, .. }) => {
            if done.text == *text {
                Outcome::Correct
            } else {
                Outcome::Wrong(format!(
                    "the result differs from the intended text at {}; old_string {old:?}, new_string {new:?}",
                    first_difference(&done.text, text)
                ))
            }
        }
        (Ok(_), Expect::Ambiguous(lines)) => Outcome::Wrong(format!(
            "applied although the block is present at lines {lines:?}"
        )),
        (Err(ReplaceError::AmbiguousTolerant { lines }), Expect::TextOrAmbiguous { line, .. })
            if lines.len() > 1 && lines.contains(line) =>
        {
            Outcome::RefusedExpected
        }
        (Err(ReplaceError::AmbiguousTolerant { lines }), Expect::Ambiguous(want))
            if want.iter().all(|l| lines.contains(l)) =>
        {
            Outcome::RefusedExpected
        }
        (Err(e), _) => Outcome::Unexpected(format!("refused: {e}")),
    }
}

/// The perturbed variants of one successful `str_replace` call on `text` (= `current`), whose
/// clean result is `expected`.
fn perturbed_calls(
    current: &Lines,
    text: &str,
    expected: &str,
    call: &Replacement,
    report: &mut Report,
    what: &dyn Fn() -> String,
) {
    let (old, new) = (call.old_string.as_str(), call.new_string.as_str());
    let line = call.lines.start + 1;
    let clean = Expect::TextOrAmbiguous {
        text: expected,
        line,
    };
    // Whole lines without the last one's newline, replaced by something: what the line-based
    // tolerant match handles.
    let constructible = !old.ends_with('\n') && !new.is_empty();
    let mut run = |variant: &str, case: &dyn Fn() -> Outcome| {
        let outcome = if constructible {
            case()
        } else {
            Outcome::NotConstructible
        };
        report
            .row("str_replace", variant, "call")
            .add(outcome, what);
    };

    let spaced: Vec<String> = old.split('\n').map(|l| format!("{l}  ")).collect();
    run("trailing-ws-added", &|| {
        tolerant_case(text, &spaced.join("\n"), new, &clean, false)
    });

    run("trailing-ws-removed", &|| {
        let mut file = current.clone();
        for l in &mut file.lines[call.lines.clone()] {
            l.push_str("  ");
        }
        let new_lines: Vec<String> = new.split('\n').map(str::to_string).collect();
        let want = file.replaced(call.lines.clone(), &new_lines).join();
        tolerant_case(
            &file.join(),
            old,
            new,
            &Expect::TextOrAmbiguous { text: &want, line },
            false,
        )
    });

    run("indent-shifted", &|| {
        tolerant_case(
            text,
            &indent(old, "    "),
            &indent(new, "    "),
            &clean,
            false,
        )
    });

    run("crlf-copy", &|| {
        tolerant_case(
            text,
            &old.replace('\n', "\r\n"),
            &new.replace('\n', "\r\n"),
            &clean,
            true,
        )
    });

    run("crlf-file", &|| {
        let want = expected.replace('\n', "\r\n");
        tolerant_case(
            &text.replace('\n', "\r\n"),
            old,
            new,
            &Expect::TextOrAmbiguous { text: &want, line },
            true,
        )
    });

    run("twice-indented", &|| {
        if old.split('\n').all(|l| l.trim().is_empty()) {
            return Outcome::NotConstructible;
        }
        let mut file = text.to_string();
        if !file.is_empty() && !file.ends_with('\n') {
            file.push('\n');
        }
        file.push('\n');
        file.push_str(&indent(old, "    "));
        file.push('\n');
        let copy = current.len() + 2;
        tolerant_case(
            &file,
            &indent(old, "        "),
            &indent(new, "        "),
            &Expect::Ambiguous(vec![line, copy]),
            false,
        )
    });
}

fn line_edit(e: &derive::AnchoredEdit) -> LineEdit {
    LineEdit {
        op: match e.op {
            LineOpKind::Replace => LineOp::Replace,
            LineOpKind::InsertAfter => LineOp::InsertAfter,
            LineOpKind::InsertBefore => LineOp::InsertBefore,
            LineOpKind::Delete => LineOp::Delete,
        },
        start: e.start.clone(),
        end: e.end.clone(),
        content: e.content.clone(),
    }
}

fn hashline_file(
    change: &FileChange,
    old: &Lines,
    new: &Lines,
    hunks: &[Hunk],
    report: &mut Report,
    what: &dyn Fn(&str) -> String,
) -> Option<Vec<derive::AnchoredEdit>> {
    let rendered = hashline::render(&change.old, 1, old.len().max(1));
    let anchors = match derive::rendered_anchors(&rendered) {
        Ok(a) => a,
        Err(e) => {
            let outcome = Outcome::Unexpected(format!("render: {e}"));
            report
                .row("hashline", "clean", "file")
                .add(outcome, || what("render"));
            return None;
        }
    };
    let shown: Vec<&str> = anchors.iter().map(|(_, c)| c.as_str()).collect();
    if shown != old.lines {
        let outcome = Outcome::Unexpected("`render` does not show the file's lines".into());
        report
            .row("hashline", "clean", "file")
            .add(outcome, || what("render"));
        return None;
    }
    let anchors: Vec<String> = anchors.into_iter().map(|(a, _)| a).collect();
    let derived = derive::line_edits(&anchors, hunks, new);
    let edits: Vec<LineEdit> = derived.iter().map(line_edit).collect();
    let outcome = match hashline::apply(&change.old, &edits) {
        Ok(done) if done.text == change.new => Outcome::Correct,
        Ok(done) => Outcome::Wrong(format!(
            "the result differs from the commit's text at {}",
            first_difference(&done.text, &change.new)
        )),
        Err(e) => Outcome::Unexpected(format!("refused: {e}")),
    };
    let all = || what(&format!("{} edits", edits.len()));
    let applied = outcome == Outcome::Correct;
    report.row("hashline", "clean", "file").add(outcome, all);

    // The topmost anchored line, changed between render and apply.
    let top = derived.iter().filter_map(|e| e.line).min();
    let stale = |changed: Option<Lines>| match changed {
        None => Outcome::NotConstructible,
        Some(text) => match hashline::apply(&text.join(), &edits) {
            Ok(_) => Outcome::Wrong("applied with a stale anchor".into()),
            Err(HashlineError::Stale { .. }) => Outcome::RefusedExpected,
            Err(e) => Outcome::Unexpected(format!("refused, not as stale: {e}")),
        },
    };
    let inserted = top.map(|t| {
        let mut l = old.clone();
        l.lines.insert(t, "inserted by another writer".into());
        l
    });
    report
        .row("hashline", "stale-inserted-above", "file")
        .add(stale(inserted), all);
    let changed = top.map(|t| {
        let mut l = old.clone();
        l.lines[t].push_str(" // changed by another writer");
        l
    });
    report
        .row("hashline", "stale-line-changed", "file")
        .add(stale(changed), all);
    applied.then_some(derived)
}

/// Whether every line of `pattern` equals, both ends trimmed, the file line it would stand on if
/// the chunk started at `line` (1-based): a candidate the patch may name as ambiguous.
fn candidate_matches(old: &Lines, pattern: &[String], line: usize) -> bool {
    let Some(start) = line.checked_sub(1) else {
        return false;
    };
    start + pattern.len() <= old.len()
        && pattern
            .iter()
            .zip(&old.lines[start..])
            .all(|(p, f)| p.trim() == f.trim())
}

fn patch_file(
    change: &FileChange,
    old: &Lines,
    new: &Lines,
    hunks: &[Hunk],
    report: &mut Report,
    what: &dyn Fn(&str) -> String,
) -> Option<String> {
    let mut applied = None;
    let mut chunking = Chunking::new(hunks, old.len(), PATCH_CONTEXT);
    let mut retries = 0;
    let mut outcome =
        Outcome::Unexpected(format!("still ambiguous after {PATCH_ATTEMPTS} attempts"));
    for _ in 0..PATCH_ATTEMPTS {
        let text = derive::patch_text(&change.path, old, new, hunks, &chunking);
        let parsed = match patch::parse(&text) {
            Ok(p) => p,
            Err(e) => {
                outcome = Outcome::Unexpected(format!("the patch does not parse: {e}"));
                break;
            }
        };
        let chunks = match parsed.files.as_slice() {
            [FilePatch::Update { chunks, .. }] => chunks,
            _ => {
                outcome = Outcome::Unexpected("the patch does not parse as one update".into());
                break;
            }
        };
        match patch::apply_chunks(&change.path, &change.old, chunks) {
            Ok(t) if t == change.new => {
                outcome = Outcome::Correct;
                applied = Some(text);
                break;
            }
            Ok(t) => {
                outcome = Outcome::Wrong(format!(
                    "the result differs from the commit's text at {}",
                    first_difference(&t, &change.new)
                ));
                break;
            }
            Err(PatchError::AmbiguousContext { hunk, lines, .. }) => {
                let index = hunk;
                let real = chunks.get(index).is_some_and(|c| {
                    lines.len() > 1
                        && lines
                            .iter()
                            .all(|&l| candidate_matches(old, &c.old_lines, l))
                });
                if !real || !chunking.widen(index, old, PATCH_CONTEXT) {
                    outcome = Outcome::Unexpected(format!(
                        "refused as ambiguous at lines {lines:?} (candidates checked: {real})"
                    ));
                    break;
                }
                retries += 1;
            }
            Err(e) => {
                outcome = Outcome::Unexpected(format!("refused: {e}"));
                break;
            }
        }
    }
    let tally = report.row("apply_patch", "clean", "file");
    tally.retries += retries;
    tally.retried_cases += usize::from(retries > 0);
    tally.add(outcome, || what(&format!("{} hunks", hunks.len())));
    applied
}
