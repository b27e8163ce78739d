//! Hashline: lines shown tagged `N#HASH` when read, edits anchored to those tags.
//!
//! A read renders each line as `N#HASH|content` ([`render`]); an edit names the lines it
//! touches by those tags. Every tag is checked against the text before anything changes: the
//! line `N` must exist and its content must still hash to `HASH`, so an edit made against an
//! older view of the file is refused ([`HashlineError::Stale`]) instead of landing on whatever
//! line now has that number. A list of at most [`MAX_EDITS`] edits is validated whole (every
//! anchor, every range, no two edits touching one line) before any output is produced, and
//! applied at once, all anchors taken against the text as given. New content whose line starts with a rendered
//! anchor (`12#A1B2C3|`, copied from the read with the line) is refused
//! ([`HashlineError::PrefixedContent`]) rather than written into the file.
//!
//! Lines are cut at `\n` (a `\r` before it is part of the ending, not of the line); the file's
//! endings and its final newline (or its absence) are kept, new lines get the file's ending.

use std::fmt;

use schemars::JsonSchema;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::{join_lines, split_lines, Line};

/// Length of [`line_hash`]: 6 hexadecimal digits (24 bits), short enough to repeat on every
/// line, long enough that a changed line keeps its hash by chance once in 16.7 million.
pub const HASH_LEN: usize = 6;

/// Short content hash of one line (its text without the line ending): the first 3 bytes of
/// its SHA-256 as 6 uppercase hexadecimal digits ([`HASH_LEN`]). Whitespace counts, so a line
/// whose indentation changed has a new hash.
pub fn line_hash(line: &str) -> String {
    let digest = Sha256::digest(line.as_bytes());
    digest[..HASH_LEN / 2]
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

/// The reference of line `number` (1-based): "12#A1B2C3".
pub fn anchor(number: usize, line: &str) -> String {
    format!("{number}#{}", line_hash(line))
}

/// Lines `offset..offset+limit` (1-based; an `offset` of 0 counts as 1) of `text`, each as
/// "N#HASH|content" (content without its line ending), joined by "\n"; "" when the range holds
/// no line.
pub fn render(text: &str, offset: usize, limit: usize) -> String {
    let skip = offset.max(1) - 1;
    split_lines(text)
        .lines
        .iter()
        .enumerate()
        .skip(skip)
        .take(limit)
        .map(|(i, line)| format!("{}|{}", anchor(i + 1, line.text), line.text))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Most edits one [`apply`] takes: every pair is checked for overlap, so the work grows with
/// the square of their number.
pub const MAX_EDITS: usize = 1000;

/// One edit of [`apply`].
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LineEdit {
    /// What to do.
    pub op: LineOp,
    /// Anchor "N#HASH" of the first line the edit touches; for `insert_after`, "0" means the top
    /// of the file (the only anchor an empty file has).
    pub start: String,
    /// Anchor of the last line of a `replace` or `delete` range; the single line `start` when omitted.
    #[serde(default)]
    pub end: Option<String>,
    /// The new lines (joined by "\n", no trailing newline needed) for `replace`, `insert_after`,
    /// `insert_before`; must be absent for `delete`.
    #[serde(default)]
    pub content: Option<String>,
}

/// The kind of a [`LineEdit`].
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LineOp {
    /// Replace lines `start..=end` by `content`.
    Replace,
    /// Insert `content` after line `start` ("0": at the top of the file).
    InsertAfter,
    /// Insert `content` before line `start`.
    InsertBefore,
    /// Delete lines `start..=end`.
    Delete,
}

impl LineOp {
    fn removes(self) -> bool {
        matches!(self, LineOp::Replace | LineOp::Delete)
    }
}

/// The result of [`apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The whole new text of the file.
    pub text: String,
    /// Lines removed by `replace` and `delete`.
    pub lines_removed: usize,
    /// Lines added by `replace` and the inserts.
    pub lines_added: usize,
}

/// Why [`apply`] refused; its `Display` is the message for the model. `edit` fields index the
/// list from 0; messages count from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashlineError {
    /// `anchor` is not "N#HASH" (or is "0" anywhere but the `start` of `insert_after`).
    BadAnchor { edit: usize, anchor: String },
    /// Line `line` is gone or different: `now` is the anchor of what is there (`None` when the
    /// text has fewer lines).
    Stale {
        edit: usize,
        anchor: String,
        line: usize,
        now: Option<String>,
    },
    /// `end` before `start`, `end` on an insert, `content` missing on `replace` or an insert, or
    /// present on `delete`.
    Range { edit: usize },
    /// Edits `first` < `second` overlap at line `line`: two `replace`/`delete` ranges share it,
    /// or an insert anchored to it would go between two lines the other edit removes. An insert
    /// just before or after a removed range is not an overlap: it goes before or after the
    /// replacement.
    Overlap {
        first: usize,
        second: usize,
        line: usize,
    },
    /// Line `line` (1-based) of edit `edit`'s `content` starts with `prefix`, a rendered
    /// anchor (`N#HASH|`) copied from the read along with the line: written as it is, it would
    /// end up in the file.
    PrefixedContent {
        edit: usize,
        line: usize,
        prefix: String,
    },
    /// No edits.
    Empty,
    /// More than [`MAX_EDITS`] edits.
    TooMany { count: usize },
}

impl fmt::Display for HashlineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HashlineError::BadAnchor { edit, anchor } => write!(
                f,
                "edit {}: `{anchor}` is not a line anchor; copy the `N#HASH` shown before the line \
                 when the file was read (such as `12#A1B2C3`); `0` is only the `start` of \
                 `insert_after`, for the top of the file",
                edit + 1
            ),
            HashlineError::Stale { edit, anchor, line, now: Some(now) } => write!(
                f,
                "edit {}: anchor `{anchor}` is stale: line {line} is now `{now}`, the file changed \
                 since it was read; nothing was changed: read the file again and use its new anchors",
                edit + 1
            ),
            HashlineError::Stale { edit, anchor, line, now: None } => write!(
                f,
                "edit {}: anchor `{anchor}` is stale: the file has no line {line} any more; \
                 nothing was changed: read the file again and use its new anchors",
                edit + 1
            ),
            HashlineError::Range { edit } => write!(
                f,
                "edit {} is malformed: `end` must not come before `start` and is only for \
                 `replace` and `delete`; `content` is required for `replace`, `insert_after` and \
                 `insert_before` and must be absent for `delete`",
                edit + 1
            ),
            HashlineError::Overlap { first, second, line } => write!(
                f,
                "edits {} and {} overlap at line {line} (two ranges share it, or an insert there \
                 falls between lines the other edit removes); nothing was changed: merge them into \
                 one edit or make their ranges disjoint",
                first + 1,
                second + 1
            ),
            HashlineError::PrefixedContent { edit, line, prefix } => write!(
                f,
                "edit {}: line {line} of `content` starts with `{prefix}`, an anchor copied from \
                 the read; `content` is the new text only; nothing was changed: drop the \
                 `N#HASH|` prefixes from `content`",
                edit + 1
            ),
            HashlineError::Empty => write!(f, "no edits given; pass at least one edit"),
            HashlineError::TooMany { count } => write!(
                f,
                "{count} edits given, more than the {MAX_EDITS} one call takes; nothing was \
                 changed: split them over several calls (reading the file again between them), \
                 or write the file whole with `write_file`"
            ),
        }
    }
}

impl std::error::Error for HashlineError {}

/// The tag of an anchor as written: a whole rendered line "N#HASH|content" names the same line
/// as its "N#HASH".
fn tag(anchor: &str) -> &str {
    anchor.split('|').next().unwrap_or("").trim()
}

/// An anchor as written: line number (0 for "0") and hash.
fn parse_anchor(anchor: &str) -> Option<(usize, Option<&str>)> {
    let tag = tag(anchor);
    if tag == "0" {
        return Some((0, None));
    }
    let (number, hash) = tag.split_once('#')?;
    let number: usize = number.trim().parse().ok().filter(|&n| n > 0)?;
    let hash = hash.trim();
    (hash.len() == HASH_LEN && hash.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some((number, Some(hash)))
}

/// The `N#HASH|` at the start of `line` when it begins with a rendered anchor exactly as
/// [`render`] writes it (digits, `#`, [`HASH_LEN`] uppercase hex digits, `|`).
fn rendered_prefix(line: &str) -> Option<&str> {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    let end = digits + 1 + HASH_LEN + 1;
    let bytes = line.as_bytes();
    let hash = bytes.get(digits + 1..digits + 1 + HASH_LEN)?;
    (digits > 0
        && bytes.get(digits) == Some(&b'#')
        && hash
            .iter()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(b))
        && bytes.get(end - 1) == Some(&b'|'))
    .then(|| &line[..end])
}

/// A validated edit: its anchor lines (1-based; 0 for "0"), where an insert's lines go, and
/// the new lines.
struct Checked<'a> {
    op: LineOp,
    start: usize,
    end: usize,
    /// For inserts, the gap: 0 is before line 1, `n` after line `n`.
    gap: usize,
    content: Vec<&'a str>,
}

impl Checked<'_> {
    /// The line at which `self` and `other` overlap, if they do (see [`HashlineError::Overlap`]).
    fn overlap(&self, other: &Checked<'_>) -> Option<usize> {
        match (self.op.removes(), other.op.removes()) {
            (true, true) => (self.start <= other.end && other.start <= self.end)
                .then_some(self.start.max(other.start)),
            (true, false) => self.surrounds(other),
            (false, true) => other.surrounds(self),
            (false, false) => None,
        }
    }

    /// The anchor line of `insert` when it goes between two lines `self` removes.
    fn surrounds(&self, insert: &Checked<'_>) -> Option<usize> {
        (self.start <= insert.gap && insert.gap < self.end).then_some(insert.start)
    }
}

/// The new lines of `content`: one trailing newline dropped, then cut at `\n` (a `\r` before
/// it dropped); "" is one empty line (to remove lines, `delete` them).
fn content_lines(content: &str) -> Vec<&str> {
    let lines: Vec<&str> = split_lines(content).lines.iter().map(|l| l.text).collect();
    if lines.is_empty() {
        vec![""]
    } else {
        lines
    }
}

/// Checks the anchor `text` of edit `edit` against `lines`: its line number, or the refusal.
fn check_anchor(
    edit: usize,
    text: &str,
    allow_top: bool,
    lines: &[Line<'_>],
) -> Result<usize, HashlineError> {
    let bad = || HashlineError::BadAnchor {
        edit,
        anchor: text.to_string(),
    };
    let (number, hash) = parse_anchor(text).ok_or_else(bad)?;
    let Some(hash) = hash else {
        return if allow_top { Ok(0) } else { Err(bad()) };
    };
    match lines.get(number - 1) {
        Some(line) if line_hash(line.text).eq_ignore_ascii_case(hash) => Ok(number),
        now => Err(HashlineError::Stale {
            edit,
            anchor: tag(text).to_string(),
            line: number,
            now: now.map(|l| anchor(number, l.text)),
        }),
    }
}

fn check<'a>(
    index: usize,
    edit: &'a LineEdit,
    lines: &[Line<'_>],
) -> Result<Checked<'a>, HashlineError> {
    let range = || HashlineError::Range { edit: index };
    let needs_content = edit.op != LineOp::Delete;
    if needs_content != edit.content.is_some() || (edit.end.is_some() && !edit.op.removes()) {
        return Err(range());
    }
    let start = check_anchor(index, &edit.start, edit.op == LineOp::InsertAfter, lines)?;
    let end = match &edit.end {
        Some(end) => check_anchor(index, end, false, lines)?,
        None => start,
    };
    if end < start {
        return Err(range());
    }
    let content = edit
        .content
        .as_deref()
        .map(content_lines)
        .unwrap_or_default();
    if let Some((line, prefix)) = content
        .iter()
        .enumerate()
        .find_map(|(i, l)| rendered_prefix(l).map(|p| (i + 1, p)))
    {
        return Err(HashlineError::PrefixedContent {
            edit: index,
            line,
            prefix: prefix.to_string(),
        });
    }
    let gap = match edit.op {
        LineOp::InsertBefore => start - 1,
        _ => start,
    };
    Ok(Checked {
        op: edit.op,
        start,
        end,
        gap,
        content,
    })
}

/// Applies every edit to `text` at once, all anchors taken against `text` as given: `Ok` with
/// the new text and the counts, or the first refusal (in edit order: anchors and ranges of
/// each edit, then overlaps), with nothing applied. Inserts at the same place apply in the
/// order given.
pub fn apply(text: &str, edits: &[LineEdit]) -> Result<Applied, HashlineError> {
    if edits.is_empty() {
        return Err(HashlineError::Empty);
    }
    if edits.len() > MAX_EDITS {
        return Err(HashlineError::TooMany { count: edits.len() });
    }
    let file = split_lines(text);
    let checked = edits
        .iter()
        .enumerate()
        .map(|(i, e)| check(i, e, &file.lines))
        .collect::<Result<Vec<_>, _>>()?;
    for (second, b) in checked.iter().enumerate() {
        for (first, a) in checked[..second].iter().enumerate() {
            if let Some(line) = a.overlap(b) {
                return Err(HashlineError::Overlap {
                    first,
                    second,
                    line,
                });
            }
        }
    }

    // `replaced[i]`: the edit that removes line i + 1; `inserts[g]`: the edits inserting at gap g.
    let n = file.lines.len();
    let mut replaced: Vec<Option<&Checked<'_>>> = vec![None; n];
    let mut inserts: Vec<Vec<&Checked<'_>>> = vec![Vec::new(); n + 1];
    let (mut lines_removed, mut lines_added) = (0, 0);
    for c in &checked {
        lines_added += c.content.len();
        if c.op.removes() {
            lines_removed += c.end - c.start + 1;
            for slot in &mut replaced[c.start - 1..c.end] {
                *slot = Some(c);
            }
        } else {
            inserts[c.gap].push(c);
        }
    }
    let mut out: Vec<Line<'_>> = Vec::with_capacity(n + lines_added);
    for gap in 0..=n {
        for c in &inserts[gap] {
            out.extend(c.content.iter().map(|t| Line::new(t)));
        }
        if gap == n {
            break;
        }
        match replaced[gap] {
            None => out.push(file.lines[gap]),
            // The replacement goes where its range starts; the rest of the range is dropped.
            Some(c) if c.start == gap + 1 => out.extend(c.content.iter().map(|t| Line::new(t))),
            Some(_) => {}
        }
    }
    Ok(Applied {
        text: join_lines(&out, file.eol, file.final_newline),
        lines_removed,
        lines_added,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use similar::{capture_diff_slices, Algorithm, DiffOp};

    fn at(text: &str, number: usize) -> String {
        anchor(number, split_lines(text).lines[number - 1].text)
    }

    fn edit(op: LineOp, start: &str, end: Option<&str>, content: Option<&str>) -> LineEdit {
        LineEdit {
            op,
            start: start.to_string(),
            end: end.map(str::to_string),
            content: content.map(str::to_string),
        }
    }

    fn replace(start: &str, end: Option<&str>, content: &str) -> LineEdit {
        edit(LineOp::Replace, start, end, Some(content))
    }

    fn ok(text: &str, edits: &[LineEdit]) -> Applied {
        apply(text, edits).unwrap_or_else(|e| panic!("refused: {e}"))
    }

    const TEXT: &str = "one\ntwo\nthree\nfour\nfive\n";

    #[test]
    fn hash_is_six_uppercase_hex_digits_and_sees_whitespace() {
        let h = line_hash("fn main() {");
        assert_eq!(h.len(), HASH_LEN);
        assert!(
            h.bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)),
            "{h}"
        );
        assert_eq!(h, line_hash("fn main() {"));
        assert_ne!(h, line_hash("fn main() { "));
        assert_ne!(h, line_hash(" fn main() {"));
        // SHA-256("") starts e3b0c4.
        assert_eq!(line_hash(""), "E3B0C4");
        assert_eq!(anchor(12, ""), "12#E3B0C4");
    }

    #[test]
    fn render_tags_lines_without_endings() {
        let text = "a\r\nb\r\nc";
        assert_eq!(
            render(text, 1, 10),
            format!(
                "{}|a\n{}|b\n{}|c",
                anchor(1, "a"),
                anchor(2, "b"),
                anchor(3, "c")
            )
        );
        assert_eq!(render(text, 2, 1), format!("{}|b", anchor(2, "b")));
        assert_eq!(render(text, 0, 1), format!("{}|a", anchor(1, "a")));
        assert_eq!(render(text, 4, 10), "");
        assert_eq!(render("", 1, 10), "");
        assert_eq!(
            render("x\n\n", 1, 10),
            format!("{}|x\n{}|", anchor(1, "x"), anchor(2, ""))
        );
    }

    #[test]
    fn replace_one_line_and_a_range() {
        let r = ok(TEXT, &[replace(&at(TEXT, 2), None, "TWO")]);
        assert_eq!(r.text, "one\nTWO\nthree\nfour\nfive\n");
        assert_eq!((r.lines_removed, r.lines_added), (1, 1));
        let r = ok(TEXT, &[replace(&at(TEXT, 2), Some(&at(TEXT, 4)), "X\nY\n")]);
        assert_eq!(r.text, "one\nX\nY\nfive\n");
        assert_eq!((r.lines_removed, r.lines_added), (3, 2));
    }

    #[test]
    fn several_edits_apply_against_the_text_as_given() {
        let edits = [
            edit(LineOp::Delete, &at(TEXT, 1), None, None),
            replace(&at(TEXT, 3), None, "3a\n3b"),
            edit(LineOp::InsertAfter, &at(TEXT, 5), None, Some("six")),
            edit(LineOp::InsertBefore, &at(TEXT, 2), None, Some("before two")),
        ];
        let r = ok(TEXT, &edits);
        assert_eq!(r.text, "before two\ntwo\n3a\n3b\nfour\nfive\nsix\n");
        assert_eq!((r.lines_removed, r.lines_added), (2, 4));
    }

    #[test]
    fn inserts_at_top_bottom_and_into_an_empty_file() {
        let r = ok(TEXT, &[edit(LineOp::InsertAfter, "0", None, Some("zero"))]);
        assert_eq!(r.text, "zero\none\ntwo\nthree\nfour\nfive\n");
        let r = ok(
            TEXT,
            &[edit(LineOp::InsertBefore, &at(TEXT, 1), None, Some("zero"))],
        );
        assert_eq!(r.text, "zero\none\ntwo\nthree\nfour\nfive\n");
        let r = ok(
            TEXT,
            &[edit(
                LineOp::InsertAfter,
                &at(TEXT, 5),
                None,
                Some("six\nseven"),
            )],
        );
        assert_eq!(r.text, "one\ntwo\nthree\nfour\nfive\nsix\nseven\n");
        let r = ok(
            "",
            &[edit(LineOp::InsertAfter, "0", None, Some("first\nsecond"))],
        );
        assert_eq!(r.text, "first\nsecond\n");
        assert_eq!((r.lines_removed, r.lines_added), (0, 2));
    }

    #[test]
    fn inserts_at_one_place_apply_in_the_order_given() {
        let edits = [
            edit(LineOp::InsertBefore, &at(TEXT, 3), None, Some("b")),
            edit(LineOp::InsertAfter, &at(TEXT, 2), None, Some("a")),
            edit(LineOp::InsertAfter, &at(TEXT, 2), None, Some("c")),
        ];
        assert_eq!(
            ok(TEXT, &edits).text,
            "one\ntwo\nb\na\nc\nthree\nfour\nfive\n"
        );
    }

    #[test]
    fn insert_next_to_a_replaced_range_but_outside_it() {
        let edits = [
            replace(&at(TEXT, 2), Some(&at(TEXT, 3)), "mid"),
            edit(LineOp::InsertAfter, &at(TEXT, 1), None, Some("a")),
            edit(LineOp::InsertBefore, &at(TEXT, 4), None, Some("b")),
        ];
        assert_eq!(ok(TEXT, &edits).text, "one\na\nmid\nb\nfour\nfive\n");
    }

    #[test]
    fn crlf_and_missing_final_newline_are_kept() {
        let text = "a\r\nb\r\nc";
        let r = ok(
            text,
            &[edit(LineOp::InsertAfter, &at(text, 3), None, Some("d\ne"))],
        );
        assert_eq!(r.text, "a\r\nb\r\nc\r\nd\r\ne");
        let r = ok(text, &[replace(&at(text, 2), None, "B\r\n")]);
        assert_eq!(r.text, "a\r\nB\r\nc");
        let r = ok(text, &[edit(LineOp::Delete, &at(text, 3), None, None)]);
        assert_eq!(r.text, "a\r\nb");
        let r = ok(
            "a\nb\n",
            &[edit(
                LineOp::Delete,
                &at("a\nb\n", 1),
                Some(&at("a\nb\n", 2)),
                None,
            )],
        );
        assert_eq!(r.text, "");
    }

    #[test]
    fn empty_content_is_one_empty_line() {
        assert_eq!(
            ok(TEXT, &[replace(&at(TEXT, 1), None, "")]).text,
            "\ntwo\nthree\nfour\nfive\n"
        );
        assert_eq!(
            ok(TEXT, &[replace(&at(TEXT, 1), None, "x\n\n")]).text,
            "x\n\ntwo\nthree\nfour\nfive\n"
        );
    }

    #[test]
    fn a_whole_rendered_line_and_a_lower_case_hash_are_accepted_as_anchors() {
        let rendered = render(TEXT, 2, 1);
        assert_eq!(
            ok(TEXT, &[replace(&rendered, None, "2")]).text,
            "one\n2\nthree\nfour\nfive\n"
        );
        // A stale one is reported by its tag.
        let e = apply("one\nTWO\n", &[replace(&rendered, None, "2")]).unwrap_err();
        assert!(
            matches!(&e, HashlineError::Stale { anchor, .. } if *anchor == at(TEXT, 2)),
            "{e:?}"
        );
        let lower = at(TEXT, 2).to_lowercase();
        assert_eq!(
            ok(TEXT, &[replace(&lower, None, "2")]).text,
            "one\n2\nthree\nfour\nfive\n"
        );
    }

    #[test]
    fn stale_anchors_are_refused() {
        let old = at(TEXT, 2);
        // The line moved down: line 2 is now something else.
        let moved = "zero\none\ntwo\nthree\nfour\nfive\n";
        let e = apply(moved, &[replace(&old, None, "x")]).unwrap_err();
        assert_eq!(
            e,
            HashlineError::Stale {
                edit: 0,
                anchor: old.clone(),
                line: 2,
                now: Some(at(moved, 2))
            }
        );
        assert!(e.to_string().contains("read the file again"), "{e}");
        assert!(e.to_string().starts_with("edit 1: "), "{e}");
        // The line changed in place.
        let changed = "one\nTwo\nthree\n";
        let e = apply(changed, &[replace(&old, None, "x")]).unwrap_err();
        assert_eq!(
            e,
            HashlineError::Stale {
                edit: 0,
                anchor: old.clone(),
                line: 2,
                now: Some(at(changed, 2))
            }
        );
        // Past the end.
        let e = apply("one\n", &[edit(LineOp::Delete, &old, None, None)]).unwrap_err();
        assert_eq!(
            e,
            HashlineError::Stale {
                edit: 0,
                anchor: old.clone(),
                line: 2,
                now: None
            }
        );
        assert!(e.to_string().contains("no line 2"), "{e}");
        // A stale `end` names the edit too, and a good first edit does not apply alone.
        let e = apply(
            TEXT,
            &[
                replace(&at(TEXT, 1), None, "x"),
                replace(&at(TEXT, 3), Some(&anchor(4, "FOUR")), "y"),
            ],
        )
        .unwrap_err();
        assert_eq!(
            e,
            HashlineError::Stale {
                edit: 1,
                anchor: anchor(4, "FOUR"),
                line: 4,
                now: Some(at(TEXT, 4))
            }
        );
    }

    #[test]
    fn bad_anchors_are_refused() {
        for bad in [
            "",
            "2",
            "two",
            "2#",
            "2#ABC",
            "2#GGGGGG",
            "0#E3B0C4",
            "-1#E3B0C4",
            "2:ABCDEF",
        ] {
            let e = apply(TEXT, &[replace(bad, None, "x")]).unwrap_err();
            assert_eq!(
                e,
                HashlineError::BadAnchor {
                    edit: 0,
                    anchor: bad.to_string()
                },
                "{bad}"
            );
        }
        // "0" is the top of the file only for `insert_after`.
        let e = apply(TEXT, &[edit(LineOp::InsertBefore, "0", None, Some("x"))]).unwrap_err();
        assert_eq!(
            e,
            HashlineError::BadAnchor {
                edit: 0,
                anchor: "0".to_string()
            }
        );
        let e = apply(TEXT, &[edit(LineOp::Delete, &at(TEXT, 1), Some("0"), None)]).unwrap_err();
        assert_eq!(
            e,
            HashlineError::BadAnchor {
                edit: 0,
                anchor: "0".to_string()
            }
        );
        assert!(e.to_string().contains("`N#HASH`"), "{e}");
    }

    #[test]
    fn huge_and_spaced_line_numbers_never_land_elsewhere() {
        let hash = line_hash("two");
        // Past `usize` is not a number; `usize::MAX` is a line the file does not have.
        let too_big = format!("99999999999999999999999#{hash}");
        assert_eq!(
            apply(TEXT, &[replace(&too_big, None, "x")]),
            Err(HashlineError::BadAnchor {
                edit: 0,
                anchor: too_big.clone()
            })
        );
        let max = format!("{}#{hash}", usize::MAX);
        assert!(matches!(
            apply(TEXT, &[replace(&max, None, "x")]),
            Err(HashlineError::Stale {
                line: usize::MAX,
                now: None,
                ..
            })
        ));
        // Spaces around the parts and a lower-case hash name the same line.
        let spaced = format!(" 2 # {} ", hash.to_lowercase());
        assert_eq!(
            ok(TEXT, &[replace(&spaced, None, "2")]).text,
            "one\n2\nthree\nfour\nfive\n"
        );
    }

    #[test]
    fn content_with_copied_anchors_is_refused() {
        let line2 = at(TEXT, 2);
        let content = format!("{line2}|TWO\nplain");
        let e = apply(TEXT, &[replace(&line2, None, &content)]).unwrap_err();
        assert_eq!(
            e,
            HashlineError::PrefixedContent {
                edit: 0,
                line: 1,
                prefix: format!("{line2}|")
            }
        );
        assert!(e.to_string().contains("drop the `N#HASH|` prefixes"), "{e}");
        // On any line of any edit that takes content.
        let e = apply(
            TEXT,
            &[
                replace(&at(TEXT, 1), None, "fine"),
                edit(LineOp::InsertAfter, "0", None, Some("ok\n12#A1B2C3|x")),
            ],
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                HashlineError::PrefixedContent {
                    edit: 1,
                    line: 2,
                    ..
                }
            ),
            "{e:?}"
        );
        // Text that only resembles an anchor is content like any other.
        for fine in [
            "12#a1b2c3|x",
            "12#A1B2C|x",
            "#A1B2C3|x",
            "x 1#A1B2C3|y",
            "12#A1B2C3 x",
        ] {
            assert!(
                apply(TEXT, &[replace(&at(TEXT, 1), None, fine)]).is_ok(),
                "{fine}"
            );
        }
    }

    #[test]
    fn malformed_ranges_are_refused() {
        let cases = [
            replace(&at(TEXT, 3), Some(&at(TEXT, 2)), "x"),
            edit(LineOp::Replace, &at(TEXT, 1), None, None),
            edit(LineOp::InsertAfter, &at(TEXT, 1), None, None),
            edit(LineOp::Delete, &at(TEXT, 1), None, Some("x")),
            edit(
                LineOp::InsertAfter,
                &at(TEXT, 1),
                Some(&at(TEXT, 2)),
                Some("x"),
            ),
        ];
        for (i, case) in cases.iter().enumerate() {
            let edits = [replace(&at(TEXT, 5), None, "fine"), case.clone()];
            assert_eq!(
                apply(TEXT, &edits),
                Err(HashlineError::Range { edit: 1 }),
                "case {i}"
            );
        }
        assert_eq!(apply(TEXT, &[]), Err(HashlineError::Empty));
        // Past the bound, refused before any anchor is looked at; at it, applied.
        let top = edit(LineOp::InsertAfter, "0", None, Some("x"));
        let many = vec![top.clone(); MAX_EDITS + 1];
        let e = apply(TEXT, &many).unwrap_err();
        assert_eq!(
            e,
            HashlineError::TooMany {
                count: MAX_EDITS + 1
            }
        );
        assert!(e.to_string().contains("split them"), "{e}");
        assert_eq!(ok(TEXT, &many[1..]).lines_added, MAX_EDITS);
    }

    #[test]
    fn overlapping_edits_are_refused() {
        let two_four = replace(&at(TEXT, 2), Some(&at(TEXT, 4)), "x");
        let cases = [
            (replace(&at(TEXT, 4), Some(&at(TEXT, 5)), "y"), 4),
            (replace(&at(TEXT, 1), Some(&at(TEXT, 2)), "y"), 2),
            (edit(LineOp::Delete, &at(TEXT, 3), None, None), 3),
            (edit(LineOp::InsertAfter, &at(TEXT, 2), None, Some("y")), 2),
            (edit(LineOp::InsertAfter, &at(TEXT, 3), None, Some("y")), 3),
            (edit(LineOp::InsertBefore, &at(TEXT, 3), None, Some("y")), 3),
            (edit(LineOp::InsertBefore, &at(TEXT, 4), None, Some("y")), 4),
        ];
        for (case, line) in cases {
            let e = apply(TEXT, &[two_four.clone(), case.clone()]).unwrap_err();
            assert_eq!(
                e,
                HashlineError::Overlap {
                    first: 0,
                    second: 1,
                    line
                }
            );
            assert!(
                e.to_string().starts_with("edits 1 and 2 overlap at line"),
                "{e}"
            );
            // Either order: the earlier edit is `first`.
            let e = apply(TEXT, &[case, two_four.clone()]).unwrap_err();
            assert_eq!(
                e,
                HashlineError::Overlap {
                    first: 0,
                    second: 1,
                    line
                }
            );
        }
    }

    #[test]
    fn inserts_just_outside_a_removed_range_go_beside_the_replacement() {
        let two_four = replace(&at(TEXT, 2), Some(&at(TEXT, 4)), "x");
        let cases = [
            (
                edit(LineOp::InsertAfter, &at(TEXT, 4), None, Some("y")),
                "one\nx\ny\nfive\n",
            ),
            (
                edit(LineOp::InsertBefore, &at(TEXT, 5), None, Some("y")),
                "one\nx\ny\nfive\n",
            ),
            (
                edit(LineOp::InsertBefore, &at(TEXT, 2), None, Some("y")),
                "one\ny\nx\nfive\n",
            ),
            (
                edit(LineOp::InsertAfter, &at(TEXT, 1), None, Some("y")),
                "one\ny\nx\nfive\n",
            ),
        ];
        for (case, expected) in cases {
            assert_eq!(ok(TEXT, &[two_four.clone(), case.clone()]).text, expected);
            assert_eq!(ok(TEXT, &[case, two_four.clone()]).text, expected);
        }
        // A deleted single line: an insert anchored to it goes where it was.
        let edits = [
            edit(LineOp::Delete, &at(TEXT, 3), None, None),
            edit(LineOp::InsertAfter, &at(TEXT, 3), None, Some("y")),
        ];
        assert_eq!(ok(TEXT, &edits).text, "one\ntwo\ny\nfour\nfive\n");
    }

    /// Texts from a small vocabulary, so lines repeat (anchors are positions, not content).
    fn random_lines(rng: &mut fastrand::Rng, len: usize) -> Vec<String> {
        (0..len).map(|_| format!("l{}", rng.u8(0..6))).collect()
    }

    /// Every op of a `similar` line diff as one edit, all applied at once, gives the new text.
    #[test]
    fn round_trip_from_line_diffs() {
        let mut rng = fastrand::Rng::with_seed(3);
        for round in 0..500 {
            let len = rng.usize(0..30);
            let old = random_lines(&mut rng, len);
            let len = rng.usize(0..30);
            let mut new = random_lines(&mut rng, len);
            if round % 3 == 0 {
                new = old.clone();
                for _ in 0..3 {
                    let at = rng.usize(0..=new.len());
                    new.insert(at, format!("new {round}"));
                }
            }
            let final_newline = rng.bool() || old.is_empty();
            // CRLF only where the old text has an ending to follow.
            let crlf = rng.bool() && (old.len() > 1 || (old.len() == 1 && final_newline));
            let eol = if crlf { "\r\n" } else { "\n" };
            let render_text = |lines: &[String]| {
                let mut s = lines.join(eol);
                if final_newline && !lines.is_empty() {
                    s.push_str(eol);
                }
                s
            };
            let (old_text, new_text) = (render_text(&old), render_text(&new));
            let tag = |i: usize| anchor(i + 1, &old[i]);
            let body = |r: std::ops::Range<usize>| {
                new[r].iter().map(|l| format!("{l}\n")).collect::<String>()
            };
            let ops = capture_diff_slices(Algorithm::Myers, &old, &new);
            let (mut edits, mut lines_removed, mut lines_added) = (Vec::new(), 0, 0);
            // Where each insert goes, counted from the ops' old lengths: `Insert::old_index` from
            // `capture_diff_slices` is not always the position (seen with similar 2.7).
            let mut old_at = 0;
            for op in ops {
                let position = old_at;
                old_at += op.old_range().len();
                match op {
                    DiffOp::Equal { .. } => {}
                    DiffOp::Delete {
                        old_index, old_len, ..
                    } => {
                        lines_removed += old_len;
                        edits.push(edit(
                            LineOp::Delete,
                            &tag(old_index),
                            Some(&tag(old_index + old_len - 1)),
                            None,
                        ));
                    }
                    DiffOp::Insert {
                        new_index, new_len, ..
                    } => {
                        let old_index = position;
                        lines_added += new_len;
                        let content = body(new_index..new_index + new_len);
                        // Anchored to either neighbour, removed or not.
                        if old_index == 0 && (old.is_empty() || rng.bool()) {
                            edits.push(edit(LineOp::InsertAfter, "0", None, Some(&content)));
                        } else if old_index < old.len() && (old_index == 0 || rng.bool()) {
                            edits.push(edit(
                                LineOp::InsertBefore,
                                &tag(old_index),
                                None,
                                Some(&content),
                            ));
                        } else {
                            edits.push(edit(
                                LineOp::InsertAfter,
                                &tag(old_index - 1),
                                None,
                                Some(&content),
                            ));
                        }
                    }
                    DiffOp::Replace {
                        old_index,
                        old_len,
                        new_index,
                        new_len,
                    } => {
                        lines_removed += old_len;
                        lines_added += new_len;
                        edits.push(replace(
                            &tag(old_index),
                            Some(&tag(old_index + old_len - 1)),
                            &body(new_index..new_index + new_len),
                        ));
                    }
                }
            }
            if edits.is_empty() {
                assert_eq!(old, new);
                continue;
            }
            // The edits' order does not matter (there are never two inserts at one place here).
            rng.shuffle(&mut edits);
            let r = ok(&old_text, &edits);
            assert_eq!(r.text, new_text, "round {round}");
            assert_eq!(
                (r.lines_removed, r.lines_added),
                (lines_removed, lines_added),
                "round {round}"
            );
        }
    }
}
