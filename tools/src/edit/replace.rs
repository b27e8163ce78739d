//! The `str_replace` protocol (`old_string` / `new_string`, as Claude-style editors use it) with
//! a bounded tolerant fallback.
//!
//! Rules:
//! - An exact occurrence of `old` is replaced literally by `new` (its line breaks written as the
//!   file's: on a CRLF file a `\n` in `new` becomes `\r\n`). More than one exact occurrence is
//!   refused unless `replace_all`, which replaces every one (left to right, not overlapping).
//!   The file keeps its final newline or its absence whatever `old` and `new` end with (`old`
//!   ending in `\n` and `new` not, at the end of the file, still leaves a final newline); only
//!   a replacement that empties the file leaves it empty.
//! - Only when there is no exact occurrence: a tolerant match over whole lines, ignoring CRLF
//!   vs LF, trailing whitespace, and an indentation shifted uniformly (every non-blank line of
//!   `old` equals its file line with one common leading-whitespace prefix, spaces and tabs,
//!   added or removed; blank lines match blank lines). Whitespace inside a line is never
//!   tolerated, and `old` needs a non-blank line. The match must be unique, also under
//!   `replace_all`; the file's lines are then replaced by the lines of `new`, re-indented by the
//!   same shift and ended by the file's line ending, and every other byte of the file is kept,
//!   including its final newline or its absence.

use std::fmt;

use schemars::JsonSchema;
use serde::Serialize;

use super::{join_lines, line_list, split_lines, Line};

/// The result of [`str_replace`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// The whole new text of the file.
    pub text: String,
    /// How many occurrences were replaced (1 unless `replace_all` found several exact ones).
    pub replacements: usize,
    /// How `old` was found.
    pub matched: Matched,
}

/// How `old` was found in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Matched {
    /// `old` occurs in the file byte for byte.
    Exact,
    /// Found only after tolerating `tolerated`; lines of the file it matched (1-based, inclusive)
    /// and their text as they were in the file.
    Tolerant {
        tolerated: Vec<Tolerance>,
        start_line: usize,
        end_line: usize,
        /// The matched lines, without their line endings.
        lines: Vec<String>,
    },
}

/// A difference between `old` and the file that a tolerant match ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Tolerance {
    /// Whitespace at the end of a line (or the whole of a blank line) differs.
    TrailingWhitespace,
    /// Every non-blank line is indented by one common prefix more or less than in the file.
    Indentation,
    /// `old` ends its lines with `\n` where the file has `\r\n` or the other way round, or ends
    /// with a newline where the file's last line has none.
    LineEndings,
}

/// Why [`str_replace`] refused; its `Display` is the message for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplaceError {
    /// `old` is "".
    EmptyOld,
    /// `old` equals `new`, or the replacement leaves the file as it was.
    Unchanged,
    /// No exact occurrence and no tolerant match.
    NotFound,
    /// More than one exact occurrence and not `replace_all`: the 1-based line where each starts
    /// (overlapping occurrences included).
    Ambiguous { lines: Vec<usize> },
    /// No exact occurrence and more than one tolerant candidate (one is never picked): the
    /// 1-based first line of each.
    AmbiguousTolerant { lines: Vec<usize> },
}

impl fmt::Display for ReplaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplaceError::EmptyOld => write!(
                f,
                "`old_string` is empty; give the exact text to replace, copied from the file with \
                 enough lines to be unique (to create or overwrite a whole file, write it instead)"
            ),
            ReplaceError::Unchanged => write!(
                f,
                "`new_string` is the same as the text it replaces, so nothing would change; give \
                 the text you want in `new_string`"
            ),
            ReplaceError::NotFound => write!(
                f,
                "`old_string` was not found in the file, not even ignoring trailing whitespace, a \
                 shifted indentation and line endings; read the file again and copy the text \
                 exactly, whole lines, with no line numbers or other prefixes"
            ),
            ReplaceError::Ambiguous { lines } => write!(
                f,
                "`old_string` occurs {} times (starting at lines {}); add surrounding lines to \
                 `old_string` so it matches only the place you mean, or set `replace_all` to \
                 replace every occurrence",
                lines.len(),
                line_list(lines)
            ),
            ReplaceError::AmbiguousTolerant { lines } => write!(
                f,
                "`old_string` has no exact match and matches {} places when whitespace is ignored \
                 (starting at lines {}); none was changed: read the file again and copy the text \
                 exactly as it is there, with enough surrounding lines to be unique",
                lines.len(),
                line_list(lines)
            ),
        }
    }
}

impl std::error::Error for ReplaceError {}

/// Replaces `old` by `new` in `text` (the module's rules): `Ok` with the new text, how many
/// occurrences were replaced and how `old` was found, or the refusal.
pub fn str_replace(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Replaced, ReplaceError> {
    if old.is_empty() {
        return Err(ReplaceError::EmptyOld);
    }
    if old == new {
        return Err(ReplaceError::Unchanged);
    }
    let starts = exact_occurrences(text, old);
    let replaced = if starts.is_empty() {
        tolerant(text, old, new)?
    } else {
        if starts.len() > 1 && !replace_all {
            return Err(ReplaceError::Ambiguous {
                lines: lines_of(text, &starts),
            });
        }
        let new = file_line_breaks(text, new);
        let (out, replacements) = if replace_all {
            // Left to right, skipping an occurrence that overlaps the one before it.
            let (mut out, mut at, mut count) = (String::with_capacity(text.len()), 0, 0);
            for &start in &starts {
                if start < at {
                    continue;
                }
                out.push_str(&text[at..start]);
                out.push_str(&new);
                at = start + old.len();
                count += 1;
            }
            out.push_str(&text[at..]);
            (out, count)
        } else {
            let at = starts[0];
            (
                format!("{}{}{}", &text[..at], new, &text[at + old.len()..]),
                1,
            )
        };
        Replaced {
            text: keep_final_newline(text, out),
            replacements,
            matched: Matched::Exact,
        }
    };
    if replaced.text == text {
        return Err(ReplaceError::Unchanged);
    }
    Ok(replaced)
}

/// Byte offsets of every occurrence of `old` in `text`, overlapping ones included (so "aa" in
/// "aaa" counts twice: replacing one would be a guess).
fn exact_occurrences(text: &str, old: &str) -> Vec<usize> {
    let step = old.chars().next().map_or(1, char::len_utf8);
    let mut starts = Vec::new();
    let mut from = 0;
    let bytes = text.as_bytes();
    while let Some(found) = text[from..].find(old) {
        let start = from + found;
        let end = start + old.len();
        // Not inside a CRLF line break: an `old` starting with the `\n` of a `\r\n` (or ending
        // with its `\r`) would leave half of the break behind.
        let splits_crlf = (old.starts_with('\n') && start > 0 && bytes[start - 1] == b'\r')
            || (old.ends_with('\r') && bytes.get(end) == Some(&b'\n'));
        if !splits_crlf {
            starts.push(start);
        }
        from += found + step;
    }
    starts
}

/// 1-based lines of the byte offsets `starts` (ascending), counted in one pass over `text`, so
/// a file with millions of occurrences costs one scan, not one per occurrence.
fn lines_of(text: &str, starts: &[usize]) -> Vec<usize> {
    let bytes = text.as_bytes();
    let (mut line, mut counted) = (1, 0);
    starts
        .iter()
        .map(|&at| {
            line += bytes[counted..at].iter().filter(|&&b| b == b'\n').count();
            counted = at;
            line
        })
        .collect()
}

/// `out` (the replaced `text`) ending with a newline exactly when `text` does ("" stays "").
fn keep_final_newline(text: &str, mut out: String) -> String {
    let had = text.ends_with('\n');
    if out.is_empty() || out.ends_with('\n') == had {
        return out;
    }
    if had {
        out.push_str(split_lines(text).eol);
    } else {
        let cut = if out.ends_with("\r\n") { 2 } else { 1 };
        out.truncate(out.len() - cut);
    }
    out
}

/// `new` with its line breaks written as the file writes them (`\r\n` on a file whose lines
/// end so, else `\n`); unchanged when the file has no line break to follow.
fn file_line_breaks(text: &str, new: &str) -> String {
    if !text.contains('\n') || !new.contains('\n') {
        return new.to_string();
    }
    let lf = new.replace("\r\n", "\n");
    match split_lines(text).eol {
        "\r\n" => lf.replace('\n', "\r\n"),
        _ => lf,
    }
}

/// Whether an indentation prefix is added to or removed from `old`'s lines to get the file's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shift<'a> {
    /// The file's lines have this prefix more than `old`'s.
    Add(&'a str),
    /// The file's lines have this prefix less than `old`'s.
    Remove(&'a str),
}

impl Shift<'_> {
    fn is_none(self) -> bool {
        matches!(self, Shift::Add("") | Shift::Remove(""))
    }

    /// `line` of `old` or `new`, indented as the file would have it. A blank line stays as it
    /// is; a line that has less indentation than a removed prefix loses what it has of it.
    fn apply(self, line: &str) -> String {
        if line.trim().is_empty() {
            return line.to_string();
        }
        match self {
            Shift::Add(prefix) => format!("{prefix}{line}"),
            Shift::Remove(prefix) => {
                let common = line
                    .bytes()
                    .zip(prefix.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                line[common..].to_string()
            }
        }
    }
}

fn is_indent(s: &str) -> bool {
    s.bytes().all(|b| b == b' ' || b == b'\t')
}

/// The shift that makes non-blank `old_line` equal `file_line`, trailing whitespace ignored.
fn line_shift<'a>(file_line: &'a str, old_line: &'a str) -> Option<Shift<'a>> {
    let f = file_line.trim_end();
    let o = old_line.trim_end();
    if f == o {
        return Some(Shift::Add(""));
    }
    if let Some(prefix) = f.strip_suffix(o).filter(|p| is_indent(p)) {
        return Some(Shift::Add(prefix));
    }
    o.strip_suffix(f)
        .filter(|p| is_indent(p))
        .map(Shift::Remove)
}

/// A tolerant candidate: where, with which shift, tolerating what.
struct Candidate<'a> {
    start: usize,
    shift: Shift<'a>,
    tolerated: Vec<Tolerance>,
}

/// Whether `old` matches `file` (as many lines) tolerantly, and how.
fn match_at<'a>(file: &[Line<'a>], old: &[Line<'a>], start: usize) -> Option<Candidate<'a>> {
    let mut shift: Option<Shift<'a>> = None;
    for (f, o) in file.iter().zip(old) {
        if o.text.trim().is_empty() {
            if !f.text.trim().is_empty() {
                return None;
            }
            continue;
        }
        let this = line_shift(f.text, o.text)?;
        match shift {
            None => shift = Some(this),
            Some(s) if s == this || (s.is_none() && this.is_none()) => {}
            Some(_) => return None,
        }
    }
    let shift = shift?;
    let mut tolerated = Vec::new();
    if file.iter().zip(old).any(|(f, o)| {
        if o.text.trim().is_empty() {
            f.text != o.text
        } else {
            f.text != shift.apply(o.text)
        }
    }) {
        tolerated.push(Tolerance::TrailingWhitespace);
    }
    if !shift.is_none() {
        tolerated.push(Tolerance::Indentation);
    }
    // An ending of `old` that differs from the file's: between lines, and after the last line
    // when `old` ends with a newline.
    if file
        .iter()
        .zip(old)
        .any(|(f, o)| !o.ending.is_empty() && f.ending != o.ending)
    {
        tolerated.push(Tolerance::LineEndings);
    }
    Some(Candidate {
        start,
        shift,
        tolerated,
    })
}

/// The tolerant fallback (module rules).
fn tolerant(text: &str, old: &str, new: &str) -> Result<Replaced, ReplaceError> {
    let file = split_lines(text);
    let old_lines = split_lines(old).lines;
    if old_lines.iter().all(|l| l.text.trim().is_empty()) || old_lines.len() > file.lines.len() {
        return Err(ReplaceError::NotFound);
    }
    let n = old_lines.len();
    let mut candidates: Vec<Candidate<'_>> = (0..=file.lines.len() - n)
        .filter_map(|start| match_at(&file.lines[start..start + n], &old_lines, start))
        .collect();
    match candidates.len() {
        0 => return Err(ReplaceError::NotFound),
        1 => {}
        _ => {
            return Err(ReplaceError::AmbiguousTolerant {
                lines: candidates.iter().map(|c| c.start + 1).collect(),
            })
        }
    }
    let Candidate {
        start,
        shift,
        tolerated,
    } = candidates.remove(0);
    // What the exact replacement would mean, line by line: `new` cut at each `\n`. When `old`
    // ends with a line break, the matched lines' last break goes with them, so a `new` ending
    // with one gives its lines whole and a `new` ending without one runs into the next line;
    // when `old` does not, the file's break after the match stays, after all of `new`'s pieces.
    let mut pieces: Vec<&str> = new
        .split('\n')
        .map(|p| p.strip_suffix('\r').unwrap_or(p))
        .collect();
    let mut join_next = false;
    if old.ends_with('\n') {
        if pieces.last() == Some(&"") {
            pieces.pop();
        } else {
            join_next = start + n < file.lines.len();
        }
    }
    let mut new_texts: Vec<String> = pieces.iter().map(|p| shift.apply(p)).collect();
    let mut rest = start + n;
    if join_next {
        let last = new_texts.pop().unwrap_or_default();
        new_texts.push(format!("{last}{}", file.lines[rest].text));
        rest += 1;
    }
    let mut out: Vec<Line<'_>> = Vec::with_capacity(file.lines.len() - n + new_texts.len());
    out.extend_from_slice(&file.lines[..start]);
    out.extend(new_texts.iter().map(|t| Line::new(t)));
    out.extend_from_slice(&file.lines[rest..]);
    Ok(Replaced {
        text: join_lines(&out, file.eol, file.final_newline),
        replacements: 1,
        matched: Matched::Tolerant {
            tolerated,
            start_line: start + 1,
            end_line: start + n,
            lines: file.lines[start..start + n]
                .iter()
                .map(|l| l.text.to_string())
                .collect(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use similar::TextDiff;

    fn ok(text: &str, old: &str, new: &str) -> Replaced {
        str_replace(text, old, new, false).unwrap_or_else(|e| panic!("refused: {e}"))
    }

    fn tolerated(r: &Replaced) -> Vec<Tolerance> {
        match &r.matched {
            Matched::Tolerant { tolerated, .. } => tolerated.clone(),
            Matched::Exact => panic!("expected a tolerant match"),
        }
    }

    #[test]
    fn an_exact_match_never_starts_or_ends_inside_a_crlf_break() {
        // `old` with a leading `\n` would match from the `\n` of `\r\n` and leave `\r\r\n`:
        // that is no exact match.
        // A leading break names the end of the line above, which no whole-line match can: refused.
        let text = "a\r\n/// one\r\nb\r\n";
        assert_eq!(
            str_replace(text, "\n/// one", "\n/// two", false),
            Err(ReplaceError::NotFound)
        );
        // The same with the line above copied: the break is whole, and CRLF stays CRLF.
        let r = ok(text, "a\n/// one", "a\n/// two");
        assert_eq!(r.text, "a\r\n/// two\r\nb\r\n");
        // A trailing `\r` is half a break too.
        assert_eq!(
            str_replace(text, "/// one\r", "/// two\r", false).map(|r| r.text.contains("\r\r")),
            Ok(false)
        );
    }

    #[test]
    fn a_tolerant_match_means_what_the_exact_one_would_at_its_line_breaks() {
        // `old` without a final newline, `new` with one: an empty line is added, as exactly.
        let exact = ok("x\n    a\n    b\ny\n", "    a\n    b", "    a\n    b\n");
        let drift = ok("x\n    a  \n    b\ny\n", "    a\n    b", "    a\n    b\n");
        assert_eq!(exact.text, "x\n    a\n    b\n\ny\n");
        assert_eq!(drift.text, exact.text);
        // `old` with a final newline, `new` without: `new` runs into the next line, as exactly.
        let exact = ok("x\n    a\ny\n", "    a\n", "    z");
        let drift = ok("x\n    a \ny\n", "    a\n", "    z");
        assert_eq!(exact.text, "x\n    zy\n");
        assert_eq!(drift.text, exact.text);
        // An empty `new` after `old` without a final newline keeps the line break.
        let exact = ok("x\n    a\ny\n", "    a", "");
        let drift = ok("x\n    a\ny\n", "    a  ", "");
        assert!(matches!(drift.matched, Matched::Tolerant { .. }));
        assert_eq!(exact.text, "x\n\ny\n");
        assert_eq!(drift.text, exact.text);
    }

    #[test]
    fn exact_single_occurrence() {
        let r = ok("fn a() {\n    1\n}\n", "    1", "    2");
        assert_eq!(r.text, "fn a() {\n    2\n}\n");
        assert_eq!(r.replacements, 1);
        assert_eq!(r.matched, Matched::Exact);
    }

    #[test]
    fn empty_old_and_unchanged_are_refused() {
        assert_eq!(
            str_replace("abc", "", "x", false),
            Err(ReplaceError::EmptyOld)
        );
        assert_eq!(
            str_replace("abc", "b", "b", false),
            Err(ReplaceError::Unchanged)
        );
        // The same after the file's line breaks are applied to `new`.
        assert_eq!(
            str_replace("a\r\nb\r\n", "a\r\n", "a\n", false),
            Err(ReplaceError::Unchanged)
        );
    }

    #[test]
    fn not_found() {
        let e = str_replace("alpha\nbeta\n", "gamma", "delta", false).unwrap_err();
        assert_eq!(e, ReplaceError::NotFound);
        assert!(e.to_string().contains("read the file again"), "{e}");
        // Whitespace inside a line is not tolerated.
        assert_eq!(
            str_replace("a  b\n", "a b", "c", false),
            Err(ReplaceError::NotFound)
        );
        // A blank-only `old` never matches tolerantly.
        assert_eq!(
            str_replace("a\n\nb\n", "  \n  ", "x", false),
            Err(ReplaceError::NotFound)
        );
    }

    #[test]
    fn ambiguous_exact_names_lines_and_replace_all_replaces_every_one() {
        let text = "x = 1\ny = 2\nx = 1\n";
        let e = str_replace(text, "x = 1", "x = 3", false).unwrap_err();
        assert_eq!(e, ReplaceError::Ambiguous { lines: vec![1, 3] });
        assert!(e.to_string().contains("`replace_all`"), "{e}");
        assert!(e.to_string().contains("lines 1, 3"), "{e}");
        let r = str_replace(text, "x = 1", "x = 3", true).unwrap();
        assert_eq!(r.text, "x = 3\ny = 2\nx = 3\n");
        assert_eq!(r.replacements, 2);
    }

    #[test]
    fn many_occurrences_are_numbered_in_one_pass() {
        // 200 000 one-line occurrences: numbering each by rescanning the text before it took
        // minutes; the lines are counted in one pass.
        let text = "x\n".repeat(200_000);
        let started = std::time::Instant::now();
        let Err(ReplaceError::Ambiguous { lines }) = str_replace(&text, "x", "y", false) else {
            panic!("not ambiguous")
        };
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        assert_eq!(lines.len(), 200_000);
        assert_eq!((lines[0], lines[1], lines[199_999]), (1, 2, 200_000));
        // Several on a line, and on lines after a gap.
        assert_eq!(
            str_replace("ab ab\n\n\nab\n", "ab", "c", false),
            Err(ReplaceError::Ambiguous {
                lines: vec![1, 1, 4]
            })
        );
    }

    #[test]
    fn overlapping_occurrences_are_ambiguous() {
        assert_eq!(
            str_replace("aaa", "aa", "b", false),
            Err(ReplaceError::Ambiguous { lines: vec![1, 1] })
        );
    }

    #[test]
    fn exact_new_follows_crlf() {
        let r = ok("a\r\nb\r\nc\r\n", "b", "b1\nb2");
        assert_eq!(r.text, "a\r\nb1\r\nb2\r\nc\r\n");
        // And an LF file gets LF whatever `new` uses.
        let r = ok("a\nb\n", "b", "b1\r\nb2");
        assert_eq!(r.text, "a\nb1\nb2\n");
    }

    #[test]
    fn exact_keeps_the_final_newline_or_its_absence() {
        assert_eq!(ok("a\nb\n", "b\n", "c").text, "a\nc\n");
        assert_eq!(ok("a\r\nb\r\n", "b\r\n", "c").text, "a\r\nc\r\n");
        assert_eq!(ok("a\nb", "b", "c\n").text, "a\nc");
        assert_eq!(ok("a\r\nb", "b", "c\r\n").text, "a\r\nc");
        assert_eq!(ok("a\nb", "b", "c").text, "a\nc");
        assert_eq!(ok("a\nb\n", "a\nb\n", "").text, "");
        assert_eq!(ok("a\nb\n", "\nb\n", "").text, "a\n");
    }

    #[test]
    fn tolerant_trailing_whitespace() {
        let text = "fn f() {   \n    let x = 1;  \n}\n";
        let r = ok(
            text,
            "fn f() {\n    let x = 1;\n}",
            "fn f() {\n    let x = 2;\n}",
        );
        assert_eq!(r.text, "fn f() {\n    let x = 2;\n}\n");
        assert_eq!(tolerated(&r), vec![Tolerance::TrailingWhitespace]);
        match r.matched {
            Matched::Tolerant {
                start_line,
                end_line,
                lines,
                ..
            } => {
                assert_eq!((start_line, end_line), (1, 3));
                assert_eq!(lines, vec!["fn f() {   ", "    let x = 1;  ", "}"]);
            }
            Matched::Exact => unreachable!(),
        }
    }

    #[test]
    fn tolerant_indentation_more_in_file_reindents_new() {
        let text = "mod m {\n    fn f() {\n        a();\n\n        b();\n    }\n}\n";
        let old = "fn f() {\n    a();\n\n    b();\n}\n";
        let new = "fn f() {\n    a();\n    c();\n\n    b();\n}\n";
        let r = ok(text, old, new);
        assert_eq!(
            r.text,
            "mod m {\n    fn f() {\n        a();\n        c();\n\n        b();\n    }\n}\n"
        );
        assert_eq!(tolerated(&r), vec![Tolerance::Indentation]);
    }

    #[test]
    fn tolerant_indentation_less_in_file_reindents_new() {
        let text = "fn f() {\n    a();\n}\nrest\n";
        let old = "    fn f() {\n        a();\n    }";
        let new = "    fn f() {\n        b();\n      odd();\n    }";
        let r = ok(text, old, new);
        // A line with less indentation than the removed prefix loses what it has of it.
        assert_eq!(r.text, "fn f() {\n    b();\n  odd();\n}\nrest\n");
        assert_eq!(tolerated(&r), vec![Tolerance::Indentation]);
    }

    #[test]
    fn tolerant_indentation_must_be_uniform() {
        // The second line is shifted by 4, the first by 0: not one uniform shift.
        let text = "if x {\n        y();\n}\n";
        assert_eq!(
            str_replace(text, "if x {\n    y();\n}", "z", false),
            Err(ReplaceError::NotFound)
        );
    }

    #[test]
    fn tolerant_tabs_vs_spaces_is_not_a_shift() {
        let text = "\tfoo();\n";
        assert_eq!(
            str_replace(text, "    foo();\nbar", "x", false),
            Err(ReplaceError::NotFound)
        );
        // A tab prefix is a shift like any other.
        let r = ok("\tfoo();\n\tbar();\n", "foo();\nbar();", "foo();\nbaz();");
        assert_eq!(r.text, "\tfoo();\n\tbaz();\n");
    }

    #[test]
    fn tolerant_crlf_file_lf_old() {
        let text = "a\r\nb\r\nc\r\nd\r\n";
        let r = ok(text, "b\nc\n", "B\nC\nC2\n");
        assert_eq!(r.text, "a\r\nB\r\nC\r\nC2\r\nd\r\n");
        assert_eq!(tolerated(&r), vec![Tolerance::LineEndings]);
    }

    #[test]
    fn tolerant_keeps_missing_final_newline_and_other_bytes() {
        // Mixed endings elsewhere are left alone; the file still has no final newline.
        let text = "keep\r\nx  \nlast  ";
        let r = ok(text, "x\nlast\n", "y\nlast");
        assert_eq!(r.text, "keep\r\ny\nlast");
        assert_eq!(
            tolerated(&r),
            vec![Tolerance::TrailingWhitespace, Tolerance::LineEndings]
        );
    }

    #[test]
    fn tolerant_delete_with_empty_new() {
        let r = ok("a\n  b  \nc\n", "b\n", "");
        assert_eq!(r.text, "a\nc\n");
        let r = ok("a\n  b  ", "b\n", "");
        assert_eq!(r.text, "a");
        assert_eq!(
            tolerated(&r),
            vec![
                Tolerance::TrailingWhitespace,
                Tolerance::Indentation,
                Tolerance::LineEndings
            ]
        );
    }

    #[test]
    fn tolerant_same_block_at_two_indentations_is_refused() {
        let text = "fn a() {\n    if x {\n        go();\n    }\n}\nfn b() {\n        if x {\n            go();\n        }\n}\n";
        // `old` has a third indentation (2 spaces): each block is one uniform shift away.
        let old = "  if x {\n      go();\n  }";
        let e = str_replace(text, old, "  stop();", false).unwrap_err();
        assert_eq!(e, ReplaceError::AmbiguousTolerant { lines: vec![2, 7] });
        assert!(e.to_string().contains("lines 2, 7"), "{e}");
        // `replace_all` does not apply to tolerant matches.
        assert_eq!(
            str_replace(text, old, "  stop();", true),
            Err(ReplaceError::AmbiguousTolerant { lines: vec![2, 7] })
        );
    }

    #[test]
    fn tolerant_unique_match_with_replace_all_replaces_one() {
        let r = str_replace("  a \nb\n", "a\n", "c\n", true).unwrap();
        assert_eq!(r.text, "  c\nb\n");
        assert_eq!(r.replacements, 1);
    }

    #[test]
    fn tolerant_blank_lines_match_blank_lines_only() {
        let text = "a\nx\nb\na\n   \nb\n";
        let r = ok(text, "a\n\nb", "a\nb");
        assert_eq!(r.text, "a\nx\nb\na\nb\n");
        assert_eq!(tolerated(&r), vec![Tolerance::TrailingWhitespace]);
    }

    #[test]
    fn tolerant_match_serializes_with_kind() {
        let r = ok("  a\n  b\n", "a\nb\n", "c\n");
        let json = serde_json::to_value(&r.matched).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"kind": "tolerant", "tolerated": ["indentation"], "start_line": 1, "end_line": 2, "lines": ["  a", "  b"]})
        );
        assert_eq!(
            serde_json::to_value(Matched::Exact).unwrap(),
            serde_json::json!({"kind": "exact"})
        );
    }

    /// Texts from a small vocabulary (`distinct` words), so some blocks repeat.
    fn random_text(rng: &mut fastrand::Rng, lines: usize, distinct: u32) -> Vec<String> {
        (0..lines)
            .map(|_| format!("line {}", rng.u32(0..distinct)))
            .collect()
    }

    fn mutate(rng: &mut fastrand::Rng, old: &[String], distinct: u32) -> Vec<String> {
        let mut new = old.to_vec();
        for _ in 0..rng.usize(1..4) {
            let at = rng.usize(0..=new.len());
            match rng.u8(0..3) {
                0 if at < new.len() => {
                    new.remove(at);
                }
                1 if at < new.len() => new[at] = format!("changed {}", rng.u32(0..distinct)),
                _ => new.insert(at, format!("added {}", rng.u32(0..distinct))),
            }
        }
        new
    }

    fn joined(lines: &[String]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    /// Each hunk of a line diff (3 lines of context) as an `old` -> `new` pair, applied in order:
    /// the result is the new text, or a refusal as ambiguous, never a different text.
    #[test]
    fn round_trip_from_line_diffs() {
        let mut rng = fastrand::Rng::with_seed(7);
        let (mut applied, mut refused) = (0, 0);
        for round in 0..400 {
            let distinct = if round % 2 == 0 { 1000 } else { 4 };
            let count = rng.usize(1..40);
            let old_lines = random_text(&mut rng, count, distinct);
            let new_lines = mutate(&mut rng, &old_lines, distinct);
            let (old, new) = (joined(&old_lines), joined(&new_lines));
            let diff = TextDiff::from_lines(&old, &new);
            let mut text = old.clone();
            let mut outcome = Ok(());
            for group in diff.grouped_ops(3) {
                let (mut o, mut n) = (String::new(), String::new());
                for op in &group {
                    o.extend(old_lines[op.old_range()].iter().map(|l| format!("{l}\n")));
                    n.extend(new_lines[op.new_range()].iter().map(|l| format!("{l}\n")));
                }
                match str_replace(&text, &o, &n, false) {
                    Ok(r) => {
                        assert_eq!(r.matched, Matched::Exact);
                        text = r.text;
                    }
                    Err(e) => {
                        outcome = Err(e);
                        break;
                    }
                }
            }
            match outcome {
                Ok(()) => {
                    assert_eq!(text, new, "round {round}");
                    applied += 1;
                }
                Err(ReplaceError::Ambiguous { .. }) => refused += 1,
                Err(ReplaceError::Unchanged) if old == new => {}
                Err(e) => panic!("round {round}: unexpected refusal: {e}"),
            }
        }
        assert!(applied > 250, "applied {applied}, refused {refused}");
    }

    /// A block found again after the file's whitespace drifted: indentation shifted, trailing
    /// spaces, CRLF; the replacement lands on the block and nowhere else.
    #[test]
    fn round_trip_through_whitespace_drift() {
        let mut rng = fastrand::Rng::with_seed(11);
        for round in 0..200 {
            let lines: Vec<String> = (0..rng.usize(3..30))
                .map(|i| format!("stmt_{round}_{i}();"))
                .collect();
            let from = rng.usize(0..lines.len());
            let to = rng.usize(from + 1..=lines.len());
            let indent = " ".repeat(rng.usize(1..9));
            let crlf = rng.bool();
            let eol = if crlf { "\r\n" } else { "\n" };
            let trailing = rng.bool();
            let file: String = lines
                .iter()
                .map(|l| format!("{indent}{l}{}{eol}", if trailing { "  " } else { "" }))
                .collect();
            let old: String = lines[from..to].iter().map(|l| format!("{l}\n")).collect();
            let new: String = lines[from..to]
                .iter()
                .map(|l| format!("{l}\n  {l}\n"))
                .collect();
            let r = ok(&file, &old, &new);
            if to - from == 1 && !crlf && !trailing {
                // One whole line is a substring of its indented self: an exact match, literal.
                assert_eq!(r.matched, Matched::Exact);
                continue;
            }
            let mut expected = String::new();
            for (i, l) in lines.iter().enumerate() {
                let t = if trailing { "  " } else { "" };
                if (from..to).contains(&i) {
                    expected.push_str(&format!("{indent}{l}{eol}{indent}  {l}{eol}"));
                } else {
                    expected.push_str(&format!("{indent}{l}{t}{eol}"));
                }
            }
            assert_eq!(r.text, expected, "round {round}");
            let t = tolerated(&r);
            assert!(t.contains(&Tolerance::Indentation));
            assert_eq!(t.contains(&Tolerance::LineEndings), crlf);
            assert_eq!(t.contains(&Tolerance::TrailingWhitespace), trailing);
        }
    }
}
