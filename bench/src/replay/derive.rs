//! What a model would send to each edit protocol to turn one file version into the next, derived
//! from the two texts alone: the line diff ([`hunks`]), one `str_replace` call per hunk
//! ([`replacement`], [`context_steps`]), anchored Hashline edits ([`line_edits`]) and a codex
//! `apply_patch` patch ([`Chunking`], [`patch_text`]).
//!
//! Texts here use `\n` line endings (the replay skips files holding `\r`); a text is its lines
//! without their `\n` plus whether it ends with one ([`Lines`]).

use std::ops::Range;

use similar::{capture_diff_slices, Algorithm, DiffOp};

/// A text as lines (without their `\n`) and whether its last line ends with `\n`. The empty
/// text has no lines; `"\n"` is one empty line with a final newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lines {
    /// The lines, in order, without line endings.
    pub lines: Vec<String>,
    /// Whether the text ends with `\n`.
    pub final_newline: bool,
}

impl Lines {
    /// Splits `text` at `\n`.
    pub fn split(text: &str) -> Lines {
        let final_newline = text.ends_with('\n');
        let body = text.strip_suffix('\n').unwrap_or(text);
        let lines = if text.is_empty() {
            Vec::new()
        } else {
            body.split('\n').map(str::to_string).collect()
        };
        Lines {
            lines,
            final_newline,
        }
    }

    /// The text again: the lines joined by `\n`, plus `\n` when [`Lines::final_newline`].
    pub fn join(&self) -> String {
        let mut out = self.lines.join("\n");
        if self.final_newline && !self.lines.is_empty() {
            out.push('\n');
        }
        out
    }

    /// Number of lines.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether there are no lines.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// These lines with `old` (a range of them) replaced by `new`.
    pub fn replaced(&self, old: Range<usize>, new: &[String]) -> Lines {
        let mut lines = self.lines[..old.start].to_vec();
        lines.extend_from_slice(new);
        lines.extend_from_slice(&self.lines[old.end..]);
        Lines {
            lines,
            final_newline: self.final_newline,
        }
    }
}

/// One change of the line diff: the old file's lines `old` become the new file's lines `new`
/// (0-based, end exclusive; an empty `old` inserts before old line `old.start`, an empty `new`
/// deletes). Hunks are in order and separated by at least one unchanged line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Lines of the old file replaced.
    pub old: Range<usize>,
    /// Lines of the new file that replace them.
    pub new: Range<usize>,
}

/// The hunks turning `old` into `new`: the Myers line diff (`similar`), each run of changed
/// lines between unchanged ones one hunk (what `git diff -U0` shows as one `@@`).
pub fn hunks(old: &Lines, new: &Lines) -> Vec<Hunk> {
    let ops = capture_diff_slices(Algorithm::Myers, &old.lines, &new.lines);
    let mut out: Vec<Hunk> = Vec::new();
    let mut open: Option<Hunk> = None;
    // Positions are counted here from the lengths of the ops in order: the `new_index` similar
    // and old indexes similar gives can be off by one after its compaction step (a deletion, an
    // equal line and an insertion: the deletion's new index and the insertion's old index).
    let (mut at_old, mut at_new) = (0, 0);
    for op in ops {
        let (o, n) = (
            at_old..at_old + op.old_range().len(),
            at_new..at_new + op.new_range().len(),
        );
        (at_old, at_new) = (o.end, n.end);
        if let DiffOp::Equal { .. } = op {
            out.extend(open.take());
            continue;
        }
        open = Some(match open {
            Some(h) => Hunk {
                old: h.old.start..o.end,
                new: h.new.start..n.end,
            },
            None => Hunk { old: o, new: n },
        });
    }
    out.extend(open);
    out
}

/// Byte offset of the start of each line of `text` (split as [`Lines::split`]), plus the
/// text's length as the last entry.
fn line_starts(text: &str, lines: usize) -> Vec<usize> {
    let mut starts = Vec::with_capacity(lines + 1);
    starts.push(0);
    for (i, _) in text.match_indices('\n') {
        if starts.len() < lines {
            starts.push(i + 1);
        }
    }
    starts.truncate(lines.max(1));
    if lines == 0 {
        starts.clear();
    }
    starts.push(text.len());
    starts
}

/// A `str_replace` call: replace `old_string` by `new_string`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    /// The text to find: whole lines of the file, without the last one's `\n`.
    pub old_string: String,
    /// What replaces it.
    pub new_string: String,
    /// The file lines `old_string` covers (0-based, end exclusive), context included.
    pub lines: Range<usize>,
}

/// The call that replaces lines `old` of `current` by `new`, with `above` and `below` unchanged
/// lines of context around them: `old_string` = those lines of `current` without the last one's
/// `\n` (with it when the change removes whole lines and nothing else would hold it), `new_string`
/// = what stands there once the change is made. `None` when such a call cannot express the
/// change: nothing to find (an insertion without context), context beyond the file, or a change of
/// the final line ending that these lines do not reach.
pub fn replacement(
    current: &Lines,
    old: Range<usize>,
    new: &[String],
    above: usize,
    below: usize,
) -> Option<Replacement> {
    let first = old.start.checked_sub(above)?;
    let end = old.end + below;
    if end > current.len() || first == end {
        return None;
    }
    let text = current.join();
    let expected = current.replaced(old, new).join();
    let starts = line_starts(&text, current.len());
    let from = starts[first];
    let ends_with_newline = end < current.len() || current.final_newline;
    // The last line without its newline, as a model copies it; with it when the change removes
    // whole lines (nothing would be left to hold the newline).
    let ends = [starts[end] - usize::from(ends_with_newline), starts[end]];
    let to = ends.into_iter().find(|&to| {
        let (prefix, suffix) = (&text[..from], &text[to..]);
        expected.starts_with(prefix)
            && expected.ends_with(suffix)
            && expected.len() >= from + suffix.len()
    })?;
    let suffix_len = text.len() - to;
    let old_string = text[from..to].to_string();
    let new_string = expected[from..expected.len() - suffix_len].to_string();
    if old_string.is_empty() || old_string == new_string {
        return None;
    }
    Some(Replacement {
        old_string,
        new_string,
        lines: first..end,
    })
}

/// Number of places `needle` starts in `hay`, overlapping ones included (`"a\na"` is twice in
/// `"a\na\na"`): how many places an exact `old_string` could mean.
pub fn occurrences(hay: &str, needle: &str) -> usize {
    let mut count = 0;
    let mut from = 0;
    while let Some(i) = hay.get(from..).and_then(|rest| rest.find(needle)) {
        count += 1;
        let at = from + i;
        from = at + hay[at..].chars().next().map_or(1, char::len_utf8);
    }
    count
}

/// The context sizes `(above, below)` a model tries in turn when its `old_string` is refused as
/// ambiguous: none, then one more line alternately above and below (the other side when one
/// side reaches the file's edge), up to the whole file. `old` is the changed range of a file of
/// `len` lines.
pub fn context_steps(old: &Range<usize>, len: usize) -> Vec<(usize, usize)> {
    let (max_above, max_below) = (old.start, len - old.end);
    let mut steps = vec![(0, 0)];
    let (mut above, mut below) = (0, 0);
    while above < max_above || below < max_below {
        let prefer_above = (above + below) % 2 == 0;
        if (prefer_above && above < max_above) || below >= max_below {
            above += 1;
        } else {
            below += 1;
        }
        steps.push((above, below));
    }
    steps
}

/// What a Hashline edit does (the `op` of `toolcat_tools::edit::hashline::LineEdit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineOpKind {
    /// Replace lines `start..=end`.
    Replace,
    /// Insert after line `start` (`"0"`: the top of the file).
    InsertAfter,
    /// Insert before line `start`.
    InsertBefore,
    /// Delete lines `start..=end`.
    Delete,
}

/// One anchored Hashline edit as a model writes it from the rendered file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnchoredEdit {
    /// The operation.
    pub op: LineOpKind,
    /// Anchor of the first line touched, as rendered (`"N#HASH"`), or `"0"`.
    pub start: String,
    /// Anchor of the last line of a multi-line replace or delete.
    pub end: Option<String>,
    /// The new lines, each ended by `\n` (absent for a delete).
    pub content: Option<String>,
    /// 0-based index of the line `start` names (`None` for `"0"`).
    pub line: Option<usize>,
}

/// The anchors of a rendered Hashline view (`"N#HASH|content"` lines), by 0-based line, with
/// each line's content as shown. Errors name the first line that is not of that shape.
pub fn rendered_anchors(rendered: &str) -> Result<Vec<(String, String)>, String> {
    if rendered.is_empty() {
        return Ok(Vec::new());
    }
    rendered
        .split('\n')
        .enumerate()
        .map(|(i, line)| {
            let (anchor, content) = line
                .split_once('|')
                .ok_or_else(|| format!("rendered line {} has no `|`: `{line}`", i + 1))?;
            let number = anchor.split_once('#').map(|(n, _)| n);
            if number != Some((i + 1).to_string().as_str()) {
                return Err(format!(
                    "rendered line {} does not start with `{}#`: `{line}`",
                    i + 1,
                    i + 1
                ));
            }
            Ok((anchor.to_string(), content.to_string()))
        })
        .collect()
}

/// The Hashline edits of `hunks` (of `old` -> `new`), anchored with `anchors` (one per old
/// line, from [`rendered_anchors`]): a hunk that removes and adds lines is a `replace` of its old
/// lines, one that only removes is a `delete`, one that only adds is an `insert_after` the line
/// above it (`insert_before` the first line at the top, `insert_after "0"` in an empty file).
pub fn line_edits(anchors: &[String], hunks: &[Hunk], new: &Lines) -> Vec<AnchoredEdit> {
    hunks
        .iter()
        .map(|h| {
            // Each line with its `\n`: joined without the last one, new lines ending in an empty
            // line would read as one line fewer.
            let content = || {
                Some(
                    new.lines[h.new.clone()]
                        .iter()
                        .map(|l| format!("{l}\n"))
                        .collect(),
                )
            };
            let end = || (h.old.len() > 1).then(|| anchors[h.old.end - 1].clone());
            let at = |line: usize| (anchors[line].clone(), Some(line));
            if h.old.is_empty() {
                let (op, (start, line)) = if h.old.start > 0 {
                    (LineOpKind::InsertAfter, at(h.old.start - 1))
                } else if anchors.is_empty() {
                    (LineOpKind::InsertAfter, ("0".to_string(), None))
                } else {
                    (LineOpKind::InsertBefore, at(0))
                };
                AnchoredEdit {
                    op,
                    start,
                    end: None,
                    content: content(),
                    line,
                }
            } else {
                let (start, line) = at(h.old.start);
                let (op, content) = if h.new.is_empty() {
                    (LineOpKind::Delete, None)
                } else {
                    (LineOpKind::Replace, content())
                };
                AnchoredEdit {
                    op,
                    start,
                    end: end(),
                    content,
                    line,
                }
            }
        })
        .collect()
}

/// One `@@` chunk of a patch: the old lines `range` it shows (changes and context), and the
/// `@@ CONTEXT` line before it, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkSpan {
    /// Old-file lines the chunk covers (0-based, end exclusive).
    pub range: Range<usize>,
    /// The line named after `@@ `: its 0-based index in the old file and its text. It stays
    /// between the previous chunk and this one (dropped when a chunk grows over it).
    pub header: Option<(usize, String)>,
}

/// The chunks of a patch over the hunks of one file, as a model widens them when a chunk is
/// refused as ambiguous.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunking {
    /// The chunks, in order, not overlapping.
    pub chunks: Vec<ChunkSpan>,
    len: usize,
}

impl Chunking {
    /// Every hunk with `context` lines above and below, chunks that overlap or touch merged (as
    /// `git diff -U3` groups them); `len` is the old file's line count.
    pub fn new(hunks: &[Hunk], len: usize, context: usize) -> Chunking {
        let mut chunking = Chunking {
            chunks: hunks
                .iter()
                .map(|h| ChunkSpan {
                    range: h.old.start.saturating_sub(context)..(h.old.end + context).min(len),
                    header: None,
                })
                .collect(),
            len,
        };
        chunking.merge();
        chunking
    }

    fn merge(&mut self) {
        let mut merged: Vec<ChunkSpan> = Vec::with_capacity(self.chunks.len());
        for c in self.chunks.drain(..) {
            match merged.last_mut() {
                Some(last) if c.range.start <= last.range.end => {
                    last.range.end = last.range.end.max(c.range.end);
                }
                _ => merged.push(c),
            }
        }
        // A header is found after the previous chunk and must stand above its own.
        let mut floor = 0;
        for c in &mut merged {
            if c.header
                .as_ref()
                .is_some_and(|(i, _)| *i < floor || *i >= c.range.start)
            {
                c.header = None;
            }
            floor = c.range.end;
        }
        self.chunks = merged;
    }

    /// What a model does when chunk `index` is refused as ambiguous: the first time, it names the
    /// nearest line above the chunk (and below the previous one) that is not blank and occurs
    /// once in the file (compared with both ends trimmed) on the chunk's `@@` line; when there is
    /// none or the chunk has one, it widens the chunk by `context` lines each side (merging it
    /// with a neighbour it reaches). Returns false when nothing can change (the chunk is the
    /// whole file).
    pub fn widen(&mut self, index: usize, old: &Lines, context: usize) -> bool {
        let Some(chunk) = self.chunks.get(index) else {
            return false;
        };
        if chunk.header.is_none() {
            let floor = index.checked_sub(1).map_or(0, |i| self.chunks[i].range.end);
            let unique = |line: &str| {
                let t = line.trim();
                !t.is_empty() && old.lines.iter().filter(|l| l.trim() == t).count() == 1
            };
            if let Some(i) = (floor..chunk.range.start)
                .rev()
                .find(|&i| unique(&old.lines[i]))
            {
                self.chunks[index].header = Some((i, old.lines[i].clone()));
                return true;
            }
        }
        let range = &chunk.range;
        if range.start == 0 && range.end == self.len {
            return false;
        }
        self.chunks[index].range =
            range.start.saturating_sub(context)..(range.end + context).min(self.len);
        self.merge();
        true
    }
}

/// A codex `apply_patch` patch updating `path` from `old` to `new` (whose diff is `hunks`) with
/// the chunks of `chunking`: lines ` ` (context), `-` (removed), `+` (added) per chunk, after
/// `@@` or `@@ HEADER`, and `*** End of File` after a chunk that reaches the end of the file.
pub fn patch_text(
    path: &str,
    old: &Lines,
    new: &Lines,
    hunks: &[Hunk],
    chunking: &Chunking,
) -> String {
    let mut out = format!("*** Begin Patch\n*** Update File: {path}\n");
    let mut next_hunk = 0;
    for chunk in &chunking.chunks {
        match &chunk.header {
            Some((_, h)) => out.push_str(&format!("@@ {h}\n")),
            None => out.push_str("@@\n"),
        }
        let mut line = chunk.range.start;
        loop {
            while let Some(h) = hunks.get(next_hunk) {
                let inside =
                    line < chunk.range.end || (h.old.is_empty() && line == chunk.range.end);
                if h.old.start != line || !inside {
                    break;
                }
                for l in &old.lines[h.old.clone()] {
                    out.push_str(&format!("-{l}\n"));
                }
                for l in &new.lines[h.new.clone()] {
                    out.push_str(&format!("+{l}\n"));
                }
                line = h.old.end;
                next_hunk += 1;
            }
            if line >= chunk.range.end {
                break;
            }
            out.push_str(&format!(" {}\n", old.lines[line]));
            line += 1;
        }
        if chunk.range.end == old.len() {
            out.push_str("*** End of File\n");
        }
    }
    out.push_str("*** End Patch\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Lines {
        Lines::split(text)
    }

    /// Every change of `old` -> `new`, made with each context size's call where the call's
    /// `old_string` is unique in the text, gives the text with that hunk applied.
    fn check_calls(old: &str, new: &str) {
        let (o, n) = (lines(old), lines(new));
        let mut current = o.clone();
        let mut shift = 0isize;
        for h in hunks(&o, &n) {
            let range = h.old.start.checked_add_signed(shift).unwrap()
                ..h.old.end.checked_add_signed(shift).unwrap();
            let new_lines = &n.lines[h.new.clone()];
            let expected = current.replaced(range.clone(), new_lines);
            let text = current.join();
            let mut made = 0;
            for (above, below) in context_steps(&range, current.len()) {
                let Some(call) = replacement(&current, range.clone(), new_lines, above, below)
                else {
                    continue;
                };
                made += 1;
                assert!(call.lines.start <= range.start && call.lines.end >= range.end);
                if occurrences(&text, &call.old_string) == 1 {
                    assert_eq!(
                        text.replacen(&call.old_string, &call.new_string, 1),
                        expected.join(),
                        "{old:?} -> {new:?} with context {above}/{below}: {call:?}"
                    );
                }
            }
            assert!(made > 0, "{old:?} -> {new:?}: no call expresses hunk {h:?}");
            shift += h.new.len() as isize - h.old.len() as isize;
            current = expected;
        }
        assert_eq!(current.join(), new);
    }

    #[test]
    fn occurrences_count_overlapping_places() {
        assert_eq!(occurrences("a\na\na", "a\na"), 2);
        assert_eq!(occurrences("aaa", "aa"), 2);
        assert_eq!(occurrences("ébé", "é"), 2);
        assert_eq!(occurrences("abc", "d"), 0);
    }

    #[test]
    fn lines_split_and_join_round_trip() {
        for text in ["", "\n", "a", "a\n", "a\n\nb", "a\nb\n\n"] {
            assert_eq!(lines(text).join(), text, "{text:?}");
        }
        assert_eq!(lines("").len(), 0);
        assert_eq!(lines("\n").lines, vec![String::new()]);
        assert_eq!(lines("a\nb").lines, vec!["a", "b"]);
        assert!(!lines("a\nb").final_newline);
    }

    #[test]
    fn hunks_are_runs_of_changed_lines() {
        let h = hunks(&lines("a\nb\nc\nd\n"), &lines("a\nB\nc\nd\ne\n"));
        assert_eq!(
            h,
            vec![
                Hunk {
                    old: 1..2,
                    new: 1..2
                },
                Hunk {
                    old: 4..4,
                    new: 4..5
                }
            ]
        );
        let h = hunks(&lines("x\na\nb\n"), &lines("a\nb\n"));
        assert_eq!(
            h,
            vec![Hunk {
                old: 0..1,
                new: 0..0
            }]
        );
    }

    #[test]
    fn hunk_positions_hold_where_similar_reports_them_off_by_one() {
        // A deletion, a line that stays, an insertion: similar reports the deletion's new index
        // one too far and the insertion's old index one too short.
        let old = [
            "k",
            "    a!(s > c(&p), \"m\");",
            "    a!(",
            "        s <= c(&p) + 4,",
            "    );",
            "z",
        ];
        let new = [
            "k",
            "    a!(",
            "        s > c(&p),",
            "        \"m\"",
            "    );",
            "    a!(",
            "        s <= c(&p) + 4,",
            "    );",
            "z",
        ];
        let (old, new) = (
            lines(&(old.join("\n") + "\n")),
            lines(&(new.join("\n") + "\n")),
        );
        let h = hunks(&old, &new);
        let mut rebuilt = old.clone();
        for h in h.iter().rev() {
            rebuilt = rebuilt.replaced(h.old.clone(), &new.lines[h.new.clone()]);
        }
        assert_eq!(rebuilt, new, "{h:?}");
    }

    #[test]
    fn context_grows_alternately_and_stops_at_the_file() {
        assert_eq!(
            context_steps(&(1..2), 4),
            vec![(0, 0), (1, 0), (1, 1), (1, 2)]
        );
        assert_eq!(context_steps(&(0..0), 2), vec![(0, 0), (0, 1), (0, 2)]);
        assert_eq!(context_steps(&(0..3), 3), vec![(0, 0)]);
    }

    #[test]
    fn replacement_is_the_lines_without_the_last_newline() {
        let text = lines("fn a() {\n    x\n}\n");
        let call = replacement(&text, 1..2, &["    y".into()], 0, 0).unwrap();
        assert_eq!(
            (call.old_string.as_str(), call.new_string.as_str()),
            ("    x", "    y")
        );
        let call = replacement(&text, 1..2, &[], 1, 0).unwrap();
        assert_eq!(
            (call.old_string.as_str(), call.new_string.as_str()),
            ("fn a() {\n    x", "fn a() {")
        );
        assert_eq!(call.lines, 0..2);
        // A deletion without context keeps its newline, so no empty line is left.
        let call = replacement(&text, 1..2, &[], 0, 0).unwrap();
        assert_eq!(
            (call.old_string.as_str(), call.new_string.as_str()),
            ("    x\n", "")
        );
        // An insertion needs a line to find.
        assert_eq!(replacement(&text, 1..1, &["z".into()], 0, 0), None);
        let call = replacement(&text, 1..1, &["z".into()], 1, 0).unwrap();
        assert_eq!(
            (call.old_string.as_str(), call.new_string.as_str()),
            ("fn a() {", "fn a() {\nz")
        );
    }

    #[test]
    fn the_last_line_without_a_newline_needs_the_line_above() {
        let text = lines("a\nb");
        // Deleting `b` also deletes the newline of `a`: only a call that reaches `a` says so.
        assert_eq!(replacement(&text, 1..2, &[], 0, 0), None);
        let call = replacement(&text, 1..2, &[], 1, 0).unwrap();
        assert_eq!(
            (call.old_string.as_str(), call.new_string.as_str()),
            ("a\nb", "a")
        );
    }

    #[test]
    fn every_call_of_every_hunk_makes_the_intended_text() {
        let texts = [
            "",
            "a\n",
            "a",
            "a\nb\nc\n",
            "a\nb\nc",
            "a\na\na\n",
            "x\na\nb\na\n",
            "\n\n",
            "a\n\nb\n\nc\n",
            "fn f() {\n    x\n}\nfn g() {\n    x\n}\n",
        ];
        for old in texts {
            for new in texts {
                if old != new && !old.is_empty() && old.ends_with('\n') == new.ends_with('\n') {
                    check_calls(old, new);
                }
            }
        }
    }

    fn anchors(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("{i}#H{i}")).collect()
    }

    #[test]
    fn line_edits_follow_the_diff_ops() {
        let old = lines("a\nb\nc\nd\n");
        let new = lines("top\na\nB\nd\ne\nf\n");
        let edits = line_edits(&anchors(4), &hunks(&old, &new), &new);
        let shape: Vec<_> = edits
            .iter()
            .map(|e| {
                (
                    e.op,
                    e.start.as_str(),
                    e.end.as_deref(),
                    e.content.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (LineOpKind::InsertBefore, "1#H1", None, Some("top\n")),
                (LineOpKind::Replace, "2#H2", Some("3#H3"), Some("B\n")),
                (LineOpKind::InsertAfter, "4#H4", None, Some("e\nf\n")),
            ]
        );
        let new = lines("a\nd\n");
        let edits = line_edits(&anchors(4), &hunks(&old, &new), &new);
        assert_eq!(edits.len(), 1);
        assert_eq!(
            (
                edits[0].op,
                edits[0].end.as_deref(),
                edits[0].content.as_deref()
            ),
            (LineOpKind::Delete, Some("3#H3"), None)
        );
        assert_eq!(edits[0].line, Some(1));
        let empty = lines("");
        let new = lines("x\n");
        let edits = line_edits(&[], &hunks(&empty, &new), &new);
        assert_eq!(
            (edits[0].op, edits[0].start.as_str(), edits[0].line),
            (LineOpKind::InsertAfter, "0", None)
        );
    }

    #[test]
    fn rendered_anchors_are_read_back_or_the_bad_line_named() {
        let got = rendered_anchors("1#AB|fn a() {\n2#CD|    x | y").unwrap();
        assert_eq!(got[1], ("2#CD".to_string(), "    x | y".to_string()));
        assert_eq!(rendered_anchors("").unwrap(), vec![]);
        let err = rendered_anchors("1#AB|a\n3#CD|b").unwrap_err();
        assert!(err.contains("rendered line 2"), "{err}");
        assert!(rendered_anchors("1#AB a").is_err());
    }

    #[test]
    fn chunks_take_three_lines_of_context_and_merge_when_they_meet() {
        let h = |o: Range<usize>| Hunk {
            old: o.clone(),
            new: o,
        };
        let c = Chunking::new(&[h(5..6), h(12..13), h(30..31)], 40, 3);
        let ranges: Vec<_> = c.chunks.iter().map(|c| c.range.clone()).collect();
        assert_eq!(ranges, vec![2..16, 27..34]);
        let c = Chunking::new(&[h(0..1), h(39..40)], 40, 3);
        let ranges: Vec<_> = c.chunks.iter().map(|c| c.range.clone()).collect();
        assert_eq!(ranges, vec![0..4, 36..40]);
    }

    #[test]
    fn a_refused_chunk_gets_a_unique_header_then_more_context() {
        let old = lines("fn a() {\n    x\n}\nfn b() {\n    x\n}\n");
        let new = lines("fn a() {\n    x\n}\nfn b() {\n    y\n}\n");
        let hs = hunks(&old, &new);
        let mut c = Chunking::new(&hs, old.len(), 0);
        assert!(c.widen(0, &old, 1));
        assert_eq!(c.chunks[0].header, Some((3, "fn b() {".to_string())));
        assert!(c.widen(0, &old, 1));
        // Grown over its header line, the chunk drops it.
        assert_eq!(c.chunks[0].range, 3..6);
        assert_eq!(c.chunks[0].header, None);
        // The next unique line above, then the whole file.
        assert!(c.widen(0, &old, 10));
        assert_eq!(c.chunks[0].header, Some((0, "fn a() {".to_string())));
        assert!(c.widen(0, &old, 10));
        assert_eq!(
            (c.chunks[0].range.clone(), c.chunks[0].header.clone()),
            (0..6, None)
        );
        assert!(!c.widen(0, &old, 10));
    }

    #[test]
    fn the_patch_shows_context_changes_and_the_end_of_the_file() {
        let old = lines("a\nb\nc\nd\ne\nf\ng\nh\n");
        let new = lines("a\nB\nc\nd\ne\nf\ng\nh\ni\n");
        let hs = hunks(&old, &new);
        let c = Chunking::new(&hs, old.len(), 1);
        assert_eq!(
            patch_text("p.txt", &old, &new, &hs, &c),
            "*** Begin Patch\n*** Update File: p.txt\n@@\n a\n-b\n+B\n c\n@@\n h\n+i\n*** End of File\n*** End Patch\n"
        );
        let c = Chunking::new(&hs, old.len(), 3);
        assert_eq!(
            patch_text("p.txt", &old, &new, &hs, &c),
            "*** Begin Patch\n*** Update File: p.txt\n@@\n a\n-b\n+B\n c\n d\n e\n f\n g\n h\n+i\n*** End of File\n*** End Patch\n"
        );
    }
}
