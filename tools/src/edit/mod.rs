//! The pure text logic of the three edit protocols: string replacement ([`replace`]), line edits
//! anchored to content hashes ([`hashline`]) and the codex `apply_patch` format ([`patch`]).
//!
//! Nothing here touches the file system: each function takes the file's text and returns the new
//! text or an error meant for the model (lower case, names in backticks, saying what to do). The
//! file handlers read, call these and write through the workspace layer.
//!
//! **Invariant:** an edit is applied only where it is certain to belong. When a location is
//! ambiguous or no longer matches what the model saw, the edit is refused and the error names
//! the candidates and the fix; nothing is ever applied at a guessed place.
//!
//! All three keep the file's line endings (`\n` or `\r\n`, the more frequent one for new lines;
//! untouched lines keep their own) and whether it ends with a newline. The line splitting and
//! joining rules live once, here.

pub mod hashline;
pub mod patch;
pub mod replace;

use similar::TextDiff;

/// Unified diff of `before` -> `after` with 3 lines of context and headers `a/PATH`, `b/PATH`
/// (similar::TextDiff, line based, `\ No newline at end of file` where one side lacks it); ""
/// when the texts are equal.
pub fn unified_diff(path: &str, before: &str, after: &str) -> String {
    if before == after {
        return String::new();
    }
    TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// One line of a text: its content without the line ending, and the ending (`"\n"`, `"\r\n"`,
/// or `""` for the last line of a text without a final newline, and for new lines, which get
/// the file's ending when joined).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    pub(crate) text: &'a str,
    pub(crate) ending: &'a str,
}

impl<'a> Line<'a> {
    /// A new line, ended by the file's line ending when joined.
    pub(crate) fn new(text: &'a str) -> Self {
        Line { text, ending: "" }
    }
}

/// A text cut into lines.
#[derive(Debug, Clone)]
pub(crate) struct Lines<'a> {
    pub(crate) lines: Vec<Line<'a>>,
    /// The ending new lines get: `"\r\n"` when the text has more CRLF than LF endings, else `"\n"`.
    pub(crate) eol: &'static str,
    /// Whether the text ends with a line ending. An empty text counts as ending with one, so
    /// lines added to an empty file end with a newline, as files conventionally do.
    pub(crate) final_newline: bool,
}

/// Cuts `text` into lines at `\n` (a `\r` before it belongs to the ending). "" has no lines,
/// "a\n" and "a" one, "a\n\n" two (the second empty).
pub(crate) fn split_lines(text: &str) -> Lines<'_> {
    let mut lines = Vec::new();
    let (mut crlf, mut lf) = (0usize, 0usize);
    for piece in text.split_inclusive('\n') {
        let line = if let Some(body) = piece.strip_suffix("\r\n") {
            crlf += 1;
            Line {
                text: body,
                ending: &piece[body.len()..],
            }
        } else if let Some(body) = piece.strip_suffix('\n') {
            lf += 1;
            Line {
                text: body,
                ending: &piece[body.len()..],
            }
        } else {
            Line {
                text: piece,
                ending: "",
            }
        };
        lines.push(line);
    }
    Lines {
        lines,
        eol: if crlf > lf { "\r\n" } else { "\n" },
        final_newline: text.is_empty() || text.ends_with('\n'),
    }
}

/// Joins `lines` into a text: every line but the last is ended by its own ending (the file's
/// `eol` when it has none: a new line, or a last line that is no longer last); the last line
/// is ended only when `final_newline`, so the file keeps its final newline or its absence.
pub(crate) fn join_lines(lines: &[Line<'_>], eol: &str, final_newline: bool) -> String {
    let mut out = String::with_capacity(lines.iter().map(|l| l.text.len() + 2).sum());
    for (i, line) in lines.iter().enumerate() {
        out.push_str(line.text);
        if i + 1 < lines.len() || final_newline {
            out.push_str(if line.ending.is_empty() {
                eol
            } else {
                line.ending
            });
        }
    }
    out
}

/// The text shown for a line in a message: at most 80 characters, the rest replaced by `...`.
pub(crate) fn excerpt(line: &str) -> String {
    const MAX: usize = 80;
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line.to_string(),
    }
}

/// `1, 5, 9` (at most 10 numbers, then `...`), for messages listing candidate lines.
pub(crate) fn line_list(lines: &[usize]) -> String {
    let mut shown: Vec<String> = lines.iter().take(10).map(usize::to_string).collect();
    if lines.len() > 10 {
        shown.push("...".to_string());
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_endings_and_final_newline() {
        let s = split_lines("a\r\nb\nc");
        assert_eq!(
            s.lines,
            vec![
                Line {
                    text: "a",
                    ending: "\r\n"
                },
                Line {
                    text: "b",
                    ending: "\n"
                },
                Line {
                    text: "c",
                    ending: ""
                }
            ]
        );
        assert!(!s.final_newline);
        assert_eq!(join_lines(&s.lines, s.eol, s.final_newline), "a\r\nb\nc");
    }

    #[test]
    fn split_counts_lines_like_an_editor() {
        assert_eq!(split_lines("").lines.len(), 0);
        assert!(split_lines("").final_newline);
        assert_eq!(
            split_lines("\n").lines,
            vec![Line {
                text: "",
                ending: "\n"
            }]
        );
        assert_eq!(split_lines("a\n\n").lines.len(), 2);
        assert_eq!(split_lines("a").lines.len(), 1);
    }

    #[test]
    fn eol_is_the_more_frequent_ending() {
        assert_eq!(split_lines("a\r\nb\r\nc\n").eol, "\r\n");
        assert_eq!(split_lines("a\r\nb\nc\n").eol, "\n");
        assert_eq!(split_lines("abc").eol, "\n");
    }

    #[test]
    fn join_moves_the_missing_final_newline_to_the_new_last_line() {
        let s = split_lines("a\r\nb");
        let mut lines = s.lines.clone();
        lines.push(Line::new("c"));
        assert_eq!(join_lines(&lines, s.eol, s.final_newline), "a\r\nb\r\nc");
        let s = split_lines("a\r\nb\r\n");
        let mut lines = s.lines.clone();
        lines.push(Line::new("c"));
        assert_eq!(
            join_lines(&lines, s.eol, s.final_newline),
            "a\r\nb\r\nc\r\n"
        );
        assert_eq!(join_lines(&[], "\n", true), "");
    }

    #[test]
    fn unified_diff_has_headers_and_is_empty_when_equal() {
        assert_eq!(unified_diff("x.rs", "a\n", "a\n"), "");
        let d = unified_diff("x.rs", "a\nb\n", "a\nc\n");
        assert!(
            d.starts_with("--- a/x.rs\n+++ b/x.rs\n@@ -1,2 +1,2 @@\n"),
            "{d}"
        );
        assert!(d.contains("-b\n+c\n"), "{d}");
    }

    #[test]
    fn excerpt_and_line_list_are_bounded() {
        assert_eq!(excerpt("short"), "short");
        let long = "x".repeat(100);
        assert_eq!(excerpt(&long), format!("{}...", "x".repeat(80)));
        assert_eq!(line_list(&[1, 2]), "1, 2");
        assert_eq!(
            line_list(&(1..=12).collect::<Vec<_>>()),
            "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ..."
        );
    }
}
