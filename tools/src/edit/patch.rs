//! The `apply_patch` format of OpenAI's codex: parsing, and applying an update's hunks to a
//! file's text.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: PATH            then the file's lines, each prefixed with `+`
//! *** Delete File: PATH
//! *** Update File: PATH
//! *** Move to: NEW_PATH         optional, right after `*** Update File:`
//! @@ LINE                       a hunk: `@@`, or `@@ ` and a line found before the change
//!  context                      ` ` unchanged, `-` removed, `+` added (an empty line counts
//! -removed                        as an unchanged empty line)
//! +added
//! *** End of File               optional: the hunk ends at the end of the file
//! *** End Patch
//! ```
//!
//! Parsing follows codex: the first hunk of an update may omit its `@@`; blank lines between
//! sections are skipped; a heredoc wrapper (`<<'EOF'` ... `EOF`) around the patch is accepted;
//! marker lines may carry surrounding whitespace. Also accepted: a unified diff hunk header
//! (`@@ -1,3 +1,4 @@`) stands for a bare `@@` (its numbers are not used; hunks are found by their
//! lines). Errors name the patch line.
//!
//! Applying ([`apply_chunks`]) also follows codex: each hunk is looked for after the previous
//! one, first exactly, then ignoring trailing whitespace, then ignoring whitespace at both ends
//! of each line; an `@@ LINE` is found first (the same three levels) and the hunk looked for
//! after it; a hunk marked `*** End of File` must end at the file's last line; a hunk whose
//! last `-`/` ` line is empty and is not found is tried again without it. One difference, so
//! that an edit never lands in the wrong place: codex takes the first match, here a hunk that
//! matches in more than one place at the first level that matches is refused
//! ([`PatchError::AmbiguousContext`], with the candidate lines). A hunk with no `-` or ` `
//! lines adds its lines right after its `@@ LINE` (which must then be unique), or without one
//! at the end of the file, as codex does. The file's line endings and final newline (or its
//! absence) are kept.

use std::fmt;

use super::{excerpt, join_lines, line_list, split_lines, Line};

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// A parsed patch: its file sections in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    pub files: Vec<FilePatch>,
}

/// One file section of a [`Patch`]. Paths are as written (trimmed), not resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilePatch {
    /// A new file; `content` is its `+` lines, each ended by "\n" ("" when there are none).
    Add { path: String, content: String },
    /// A file to remove.
    Delete { path: String },
    /// A file to change by `chunks` (at least one), and to rename to `move_to` if given.
    Update {
        path: String,
        move_to: Option<String>,
        chunks: Vec<Chunk>,
    },
}

/// One hunk of an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The text after "@@ " (a line to find before the chunk), if any.
    pub context: Option<String>,
    /// The ` ` and `-` lines: what the file has where the hunk applies.
    pub old_lines: Vec<String>,
    /// The ` ` and `+` lines: what it has afterwards.
    pub new_lines: Vec<String>,
    /// "*** End of File": the hunk ends at the file's last line.
    pub end_of_file: bool,
    /// 1-based line of this chunk's "@@" (or first line) in the patch text, for messages.
    pub patch_line: usize,
}

/// Why a patch was refused; its `Display` is the message for the model. `hunk` indexes the
/// file's hunks from 0 (messages count from 1); lines are 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchError {
    /// The patch text is malformed at its line `line`.
    Syntax { line: usize, message: String },
    /// Hunk `hunk` of `path` was not found after the previous hunk; `first_line` is its
    /// `@@ LINE` when that was not found, else its first ` `/`-` line that does not match.
    ContextNotFound {
        path: String,
        hunk: usize,
        patch_line: usize,
        first_line: String,
    },
    /// Hunk `hunk` of `path` matches at every one of `lines` (1-based first lines), after the
    /// previous hunk, at the first level that matches; none was chosen.
    AmbiguousContext {
        path: String,
        hunk: usize,
        patch_line: usize,
        lines: Vec<usize>,
    },
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatchError::Syntax { line, message } => write!(f, "patch line {line}: {message}"),
            PatchError::ContextNotFound {
                path,
                hunk,
                patch_line,
                first_line,
            } => write!(
                f,
                "`{path}`: hunk {} (patch line {patch_line}) does not match the file after the \
                 previous hunk: the line `{}` is not where the hunk has it; nothing was changed: \
                 read the file again and copy the `@@`, ` ` and `-` lines exactly as they are now",
                hunk + 1,
                excerpt(first_line)
            ),
            PatchError::AmbiguousContext {
                path,
                hunk,
                patch_line,
                lines,
            } => write!(
                f,
                "`{path}`: hunk {} (patch line {patch_line}) matches {} places (starting at lines \
                 {}); nothing was changed: add more ` ` context lines, or an `@@ LINE` naming a \
                 unique line above the change (such as the enclosing function's signature)",
                hunk + 1,
                lines.len(),
                line_list(lines)
            ),
        }
    }
}

impl std::error::Error for PatchError {}

fn syntax(line: usize, message: impl Into<String>) -> PatchError {
    PatchError::Syntax {
        line,
        message: message.into(),
    }
}

/// Parses a patch (module docs for the format): its file sections, or the first syntax error
/// with its 1-based line in `text`.
pub fn parse(text: &str) -> Result<Patch, PatchError> {
    let lines: Vec<&str> = text.lines().collect();
    let blank = |i: &usize| lines[*i].trim().is_empty();
    let Some(mut first) = (0..lines.len()).find(|i| !blank(i)) else {
        return Err(syntax(
            1,
            format!("the patch is empty; it starts with `{BEGIN}` and ends with `{END}`"),
        ));
    };
    let mut last = (0..lines.len()).rev().find(|i| !blank(i)).unwrap_or(first);
    // A heredoc wrapper, as in `apply_patch <<'EOF'` ... `EOF`.
    if let Some(word) = heredoc_word(lines[first]) {
        if last > first && lines[last].trim() == word {
            first += 1;
            last -= 1;
            while first < last && blank(&first) {
                first += 1;
            }
            while last > first && blank(&last) {
                last -= 1;
            }
        }
    }
    if lines[first].trim() != BEGIN {
        return Err(syntax(
            first + 1,
            format!("the patch must start with `{BEGIN}`"),
        ));
    }
    if last == first || lines[last].trim() != END {
        return Err(syntax(last + 1, format!("the patch must end with `{END}`")));
    }
    let mut parser = Parser {
        lines: &lines,
        at: first + 1,
        end: last,
    };
    let mut files = Vec::new();
    while parser.at < parser.end {
        if blank(&parser.at) {
            parser.at += 1;
            continue;
        }
        files.push(parser.file()?);
    }
    if files.is_empty() {
        return Err(syntax(
            last + 1,
            format!("the patch changes no file; add `{ADD} PATH`, `{DELETE} PATH` or `{UPDATE} PATH` sections"),
        ));
    }
    Ok(Patch { files })
}

/// The terminator of a heredoc opener such as `<<'EOF'`, `<<"EOF"`, `<<EOF` (possibly after a
/// command such as `apply_patch`).
fn heredoc_word(line: &str) -> Option<&str> {
    let (_, rest) = line.trim().split_once("<<")?;
    let word = rest.trim().trim_matches(|c| c == '\'' || c == '"');
    (!word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(word)
}

/// The body of a patch between its `*** Begin Patch` and `*** End Patch` lines (`end`).
struct Parser<'a> {
    lines: &'a [&'a str],
    at: usize,
    end: usize,
}

impl Parser<'_> {
    /// The path after `marker` on the current line (its 1-based number is `at + 1`).
    fn path(&self, rest: &str, marker: &str) -> Result<String, PatchError> {
        let path = rest.trim();
        if path.is_empty() {
            return Err(syntax(
                self.at + 1,
                format!("`{marker}` needs a path after it"),
            ));
        }
        Ok(path.to_string())
    }

    /// One file section, from its header on.
    fn file(&mut self) -> Result<FilePatch, PatchError> {
        let line = self.lines[self.at].trim();
        if let Some(rest) = line.strip_prefix(ADD) {
            let path = self.path(rest, ADD)?;
            self.at += 1;
            let mut content = String::new();
            while self.at < self.end {
                let Some(added) = self.lines[self.at].strip_prefix('+') else {
                    break;
                };
                content.push_str(added);
                content.push('\n');
                self.at += 1;
            }
            if self.at < self.end
                && !self.lines[self.at].trim().is_empty()
                && !self.lines[self.at].trim_start().starts_with("***")
            {
                return Err(syntax(
                    self.at + 1,
                    format!(
                        "every line of `{ADD} {path}` starts with `+` (an empty line is a lone `+`); found `{}`",
                        excerpt(self.lines[self.at])
                    ),
                ));
            }
            return Ok(FilePatch::Add { path, content });
        }
        if let Some(rest) = line.strip_prefix(DELETE) {
            let path = self.path(rest, DELETE)?;
            self.at += 1;
            return Ok(FilePatch::Delete { path });
        }
        if let Some(rest) = line.strip_prefix(UPDATE) {
            let header = self.at + 1;
            let path = self.path(rest, UPDATE)?;
            self.at += 1;
            let mut move_to = None;
            if self.at < self.end {
                if let Some(rest) = self.lines[self.at].trim().strip_prefix(MOVE) {
                    move_to = Some(self.path(rest, MOVE)?);
                    self.at += 1;
                }
            }
            let mut chunks = Vec::new();
            loop {
                while self.at < self.end && self.lines[self.at].trim().is_empty() {
                    self.at += 1;
                }
                if self.at >= self.end {
                    break;
                }
                let line = self.lines[self.at].trim();
                if line == END_OF_FILE {
                    return Err(syntax(
                        self.at + 1,
                        format!("`{END_OF_FILE}` must follow the lines of a hunk"),
                    ));
                }
                if line.starts_with("***") {
                    break;
                }
                chunks.push(self.chunk(&path, chunks.is_empty())?);
            }
            if chunks.is_empty() {
                return Err(syntax(
                    header,
                    format!(
                        "`{UPDATE} {path}` has no hunks; add `@@` hunks of ` `, `-` and `+` lines, \
                         or remove the section"
                    ),
                ));
            }
            return Ok(FilePatch::Update {
                path,
                move_to,
                chunks,
            });
        }
        if line == END {
            return Err(syntax(
                self.at + 1,
                format!("`{END}` must be the last line; remove what follows it"),
            ));
        }
        let hint = if line.starts_with('+') {
            " (inside an added file, an empty line is a lone `+`)"
        } else {
            ""
        };
        Err(syntax(
            self.at + 1,
            format!(
                "expected a file section (`{ADD} PATH`, `{DELETE} PATH` or `{UPDATE} PATH`), found \
                 `{}`{hint}",
                excerpt(line)
            ),
        ))
    }

    /// One hunk of the update of `path`; the `@@` line may be missing for the `first` one.
    fn chunk(&mut self, path: &str, first: bool) -> Result<Chunk, PatchError> {
        let patch_line = self.at + 1;
        let line = self.lines[self.at];
        let marker = line.trim();
        let context = if marker == "@@" || is_unified_header(marker) {
            self.at += 1;
            None
        } else if let Some(context) = line.strip_prefix("@@ ") {
            self.at += 1;
            Some(context.to_string())
        } else if first {
            None
        } else {
            return Err(syntax(
                patch_line,
                format!(
                    "expected `@@` (a new hunk of `{path}`) or a hunk line starting with ` `, `-` \
                     or `+`, found `{}`; prefix unchanged lines with a space",
                    excerpt(line)
                ),
            ));
        };
        let mut chunk = Chunk {
            context,
            old_lines: Vec::new(),
            new_lines: Vec::new(),
            end_of_file: false,
            patch_line,
        };
        let mut count = 0;
        while self.at < self.end {
            let line = self.lines[self.at];
            if line.trim() == END_OF_FILE {
                if count == 0 {
                    break;
                }
                chunk.end_of_file = true;
                self.at += 1;
                break;
            }
            match line.chars().next() {
                None => {
                    chunk.old_lines.push(String::new());
                    chunk.new_lines.push(String::new());
                }
                Some(' ') => {
                    chunk.old_lines.push(line[1..].to_string());
                    chunk.new_lines.push(line[1..].to_string());
                }
                Some('-') => chunk.old_lines.push(line[1..].to_string()),
                Some('+') => chunk.new_lines.push(line[1..].to_string()),
                Some(_) if count == 0 => {
                    return Err(syntax(
                        self.at + 1,
                        format!(
                        "every line of a hunk starts with ` ` (unchanged), `-` (removed) or `+` \
                             (added); found `{}`",
                        excerpt(line)
                    ),
                    ))
                }
                Some(_) => break,
            }
            count += 1;
            self.at += 1;
        }
        if count == 0 {
            return Err(syntax(
                patch_line,
                format!("the hunk of `{path}` at this line has no ` `, `-` or `+` lines"),
            ));
        }
        Ok(chunk)
    }
}

/// Whether `line` is a unified diff hunk header: `@@ -A[,B] +C[,D] @@` and perhaps a section.
fn is_unified_header(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("@@ -") else {
        return false;
    };
    let Some((ranges, _)) = rest.split_once(" @@") else {
        return false;
    };
    let Some((old, new)) = ranges.split_once(" +") else {
        return false;
    };
    let range = |r: &str| {
        !r.is_empty()
            && r.split(',').count() <= 2
            && r.split(',')
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    range(old) && range(new)
}

/// The three comparisons of codex, strictest first.
const LEVELS: [fn(&str, &str) -> bool; 3] = [
    |a, b| a == b,
    |a, b| a.trim_end() == b.trim_end(),
    |a, b| a.trim() == b.trim(),
];

/// Start indices (0-based) where `pattern` matches `lines` from `from` on, at the first of
/// [`LEVELS`] with any match; with `eof`, only a match ending at the last line counts. `None`
/// when no level matches.
fn seek(lines: &[&str], pattern: &[String], from: usize, eof: bool) -> Option<Vec<usize>> {
    let n = pattern.len();
    if n > lines.len() {
        return None;
    }
    let starts = if eof {
        (lines.len() - n).max(from)..lines.len() - n + 1
    } else {
        from..lines.len() - n + 1
    };
    LEVELS.iter().find_map(|eq| {
        let found: Vec<usize> = starts
            .clone()
            .filter(|&s| pattern.iter().zip(&lines[s..s + n]).all(|(p, l)| eq(l, p)))
            .collect();
        (!found.is_empty()).then_some(found)
    })
}

/// For a hunk not found: its first line from which no match goes on (loosest level), so the
/// message points at the line the model got wrong.
fn first_mismatch(lines: &[&str], pattern: &[String], from: usize) -> String {
    let loose = LEVELS[2];
    (1..=pattern.len())
        .find(|&k| {
            let (prefix, n) = (&pattern[..k], k);
            !(from..(lines.len() + 1).saturating_sub(n)).any(|s| {
                prefix
                    .iter()
                    .zip(&lines[s..s + n])
                    .all(|(p, l)| loose(l, p))
            })
        })
        .map_or_else(
            || pattern.last().cloned().unwrap_or_default(),
            |k| pattern[k - 1].clone(),
        )
}

/// The lines replacing `matched` (the file's lines where `old` was found): `new`, except that
/// a line the hunk leaves unchanged (paired with an equal line of `old` by a line diff) is the
/// file's own line, so a hunk matched ignoring whitespace does not rewrite its context lines.
fn kept_lines<'a>(matched: &[Line<'a>], old: &[String], new: &'a [String]) -> Vec<Line<'a>> {
    let mut out: Vec<Line<'a>> = new.iter().map(|l| Line::new(l)).collect();
    if matched.iter().zip(old).all(|(m, o)| m.text == o) {
        return out;
    }
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, old, new) {
        if let similar::DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            for k in 0..len {
                // Checked again, so a wrong pairing can only keep the patch's line.
                if let (Some(o), Some(n), Some(m)) = (
                    old.get(old_index + k),
                    new.get(new_index + k),
                    matched.get(old_index + k),
                ) {
                    if o == n {
                        out[new_index + k] = Line::new(m.text);
                    }
                }
            }
        }
    }
    out
}

/// The new text of file `path` after its chunks, in order, each found after the previous one
/// (module docs for the matching). `path` is only used in errors.
pub fn apply_chunks(path: &str, text: &str, chunks: &[Chunk]) -> Result<String, PatchError> {
    let file = split_lines(text);
    let lines: Vec<&str> = file.lines.iter().map(|l| l.text).collect();
    // (start, old lines, new lines), in file order.
    let mut replacements: Vec<(usize, &[String], &[String])> = Vec::new();
    let mut from = 0;
    for (hunk, chunk) in chunks.iter().enumerate() {
        let not_found = |first_line: String| PatchError::ContextNotFound {
            path: path.to_string(),
            hunk,
            patch_line: chunk.patch_line,
            first_line,
        };
        let ambiguous = |starts: &[usize]| PatchError::AmbiguousContext {
            path: path.to_string(),
            hunk,
            patch_line: chunk.patch_line,
            lines: starts.iter().map(|s| s + 1).collect(),
        };
        if let Some(context) = &chunk.context {
            let pattern = std::slice::from_ref(context);
            let found =
                seek(&lines, pattern, from, false).ok_or_else(|| not_found(context.clone()))?;
            // A pure addition goes right after the context line: it must be the only one.
            if chunk.old_lines.is_empty() && found.len() > 1 {
                return Err(ambiguous(&found));
            }
            from = found[0] + 1;
        }
        if chunk.old_lines.is_empty() {
            let at = if chunk.context.is_some() && !chunk.end_of_file {
                from
            } else {
                lines.len()
            };
            replacements.push((at, &[], &chunk.new_lines));
            from = at;
            continue;
        }
        let (mut old, mut new) = (&chunk.old_lines[..], &chunk.new_lines[..]);
        let mut found = seek(&lines, old, from, chunk.end_of_file);
        if found.is_none() && old.len() > 1 && old.last().is_some_and(String::is_empty) {
            // A trailing empty line often stands for the final newline: try without it.
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = seek(&lines, old, from, chunk.end_of_file);
        }
        let Some(found) = found else {
            return Err(not_found(first_mismatch(&lines, &chunk.old_lines, from)));
        };
        if found.len() > 1 {
            return Err(ambiguous(&found));
        }
        replacements.push((found[0], old, new));
        from = found[0] + old.len();
    }

    let mut out: Vec<Line<'_>> = Vec::with_capacity(file.lines.len());
    let mut next = 0;
    for (start, old, new) in replacements {
        out.extend_from_slice(&file.lines[next..start]);
        out.extend(kept_lines(&file.lines[start..start + old.len()], old, new));
        next = start + old.len();
    }
    out.extend_from_slice(&file.lines[next..]);
    Ok(join_lines(&out, file.eol, file.final_newline))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(patch: &str) -> Vec<Chunk> {
        match parse(patch)
            .unwrap_or_else(|e| panic!("{e}"))
            .files
            .remove(0)
        {
            FilePatch::Update { chunks, .. } => chunks,
            other => panic!("not an update: {other:?}"),
        }
    }

    fn update(body: &str) -> String {
        format!("*** Begin Patch\n*** Update File: f.txt\n{body}*** End Patch\n")
    }

    fn applied(text: &str, body: &str) -> Result<String, PatchError> {
        apply_chunks("f.txt", text, &chunks(&update(body)))
    }

    fn syntax_line(patch: &str) -> (usize, String) {
        match parse(patch) {
            Err(PatchError::Syntax { line, message }) => (line, message),
            other => panic!("expected a syntax error, got {other:?}"),
        }
    }

    #[test]
    fn parses_add_delete_move_and_update() {
        let patch = "*** Begin Patch\n\
                     *** Add File: new.txt\n+hello\n+\n+world\n\
                     *** Delete File: old.txt\n\
                     *** Update File: src/a.rs\n*** Move to: src/b.rs\n@@ fn main() {\n-    a();\n+    b();\n     c();\n\
                     @@\n-x\n+y\n*** End of File\n\
                     *** End Patch";
        let p = parse(patch).unwrap();
        assert_eq!(
            p.files,
            vec![
                FilePatch::Add {
                    path: "new.txt".into(),
                    content: "hello\n\nworld\n".into()
                },
                FilePatch::Delete {
                    path: "old.txt".into()
                },
                FilePatch::Update {
                    path: "src/a.rs".into(),
                    move_to: Some("src/b.rs".into()),
                    chunks: vec![
                        Chunk {
                            context: Some("fn main() {".into()),
                            old_lines: vec!["    a();".into(), "    c();".into()],
                            new_lines: vec!["    b();".into(), "    c();".into()],
                            end_of_file: false,
                            patch_line: 9,
                        },
                        Chunk {
                            context: None,
                            old_lines: vec!["x".into()],
                            new_lines: vec!["y".into()],
                            end_of_file: true,
                            patch_line: 13,
                        },
                    ],
                },
            ]
        );
    }

    #[test]
    fn parse_is_lenient_like_codex() {
        // Heredoc wrapper, CRLF, whitespace around markers, a first hunk without `@@`, blank
        // lines between sections, an empty line as an empty context line.
        let patch = "apply_patch <<'EOF'\r\n  *** Begin Patch  \r\n\r\n*** Update File: a\r\n a\r\n\r\n-b\r\n+c\r\n\r\n*** Add File: e\r\n*** End Patch \r\nEOF\r\n";
        let p = parse(patch).unwrap();
        assert_eq!(p.files.len(), 2);
        let FilePatch::Update { chunks, .. } = &p.files[0] else {
            panic!()
        };
        assert_eq!(chunks[0].context, None);
        assert_eq!(chunks[0].old_lines, vec!["a", "", "b", ""]);
        assert_eq!(chunks[0].new_lines, vec!["a", "", "c", ""]);
        assert_eq!(chunks[0].patch_line, 5);
        assert_eq!(
            p.files[1],
            FilePatch::Add {
                path: "e".into(),
                content: String::new()
            }
        );
        // A unified diff header stands for a bare `@@`.
        let c = chunks_of("@@ -3,2 +3,2 @@ fn f() {\n-a\n+b\n");
        assert_eq!(c[0].context, None);
        assert_eq!(c[0].old_lines, vec!["a"]);
    }

    fn chunks_of(body: &str) -> Vec<Chunk> {
        chunks(&update(body))
    }

    #[test]
    fn parse_errors_name_the_line() {
        assert_eq!(syntax_line("").0, 1);
        assert_eq!(syntax_line("hello\n*** End Patch").0, 1);
        let (line, message) = syntax_line("*** Begin Patch\n*** Delete File: a\n");
        assert_eq!(line, 2);
        assert!(message.contains("`*** End Patch`"), "{message}");
        let (line, message) = syntax_line("*** Begin Patch\n*** Frobnicate File: a\n*** End Patch");
        assert_eq!(line, 2);
        assert!(message.starts_with("expected a file section"), "{message}");
        let (line, message) = syntax_line("*** Begin Patch\n*** Update File: a\n*** End Patch");
        assert_eq!(line, 2);
        assert!(message.contains("has no hunks"), "{message}");
        let (line, message) = syntax_line(
            "*** Begin Patch\n*** Update File: a\n@@\n-x\nforgot the prefix\n*** End Patch",
        );
        assert_eq!(line, 5);
        assert!(
            message.contains("prefix unchanged lines with a space"),
            "{message}"
        );
        let (line, _) =
            syntax_line("*** Begin Patch\n*** Update File: a\n@@\nno prefix\n*** End Patch");
        assert_eq!(line, 4);
        let (line, _) =
            syntax_line("*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch");
        assert_eq!(line, 3);
        let (line, message) = syntax_line("*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch");
        assert_eq!(line, 4);
        assert!(message.contains("starts with `+`"), "{message}");
        let (line, message) =
            syntax_line("*** Begin Patch\n*** Add File: a\n+x\n\n+y\n*** End Patch");
        assert_eq!(line, 5);
        assert!(message.contains("a lone `+`"), "{message}");
        let (line, message) = syntax_line("*** Begin Patch\n*** Add File:  \n*** End Patch");
        assert_eq!(line, 2);
        assert!(message.contains("needs a path"), "{message}");
        let (line, message) = syntax_line("*** Begin Patch\n*** End Patch");
        assert_eq!(line, 2);
        assert!(message.contains("changes no file"), "{message}");
        let (line, message) = syntax_line(
            "*** Begin Patch\n*** Delete File: a\n*** End Patch\n*** Delete File: b\n*** End Patch",
        );
        assert_eq!(line, 3);
        assert!(message.contains("must be the last line"), "{message}");
        let e = parse("*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch").unwrap_err();
        assert!(e.to_string().starts_with("patch line 4: "), "{e}");
    }

    const FILE: &str = "fn a() {\n    one();\n}\n\nfn b() {\n    two();\n}\n";

    #[test]
    fn update_in_order_after_the_previous_hunk() {
        let body = "@@ fn a() {\n-    one();\n+    uno();\n@@ fn b() {\n-    two();\n+    dos();\n";
        assert_eq!(
            applied(FILE, body).unwrap(),
            "fn a() {\n    uno();\n}\n\nfn b() {\n    dos();\n}\n"
        );
    }

    #[test]
    fn hunks_are_matched_after_the_previous_one_only() {
        // The second hunk's line occurs only before the first hunk's.
        let body = "@@\n-    two();\n+    dos();\n@@\n-    one();\n+    uno();\n";
        let e = applied(FILE, body).unwrap_err();
        assert_eq!(
            e,
            PatchError::ContextNotFound {
                path: "f.txt".into(),
                hunk: 1,
                patch_line: 6,
                first_line: "    one();".into()
            }
        );
        assert!(
            e.to_string().starts_with("`f.txt`: hunk 2 (patch line 6)"),
            "{e}"
        );
    }

    #[test]
    fn whitespace_levels_like_codex() {
        let text = "a  \n    b\nc\n";
        // Unchanged lines keep the file's bytes, not the patch's.
        assert_eq!(
            applied(text, "@@\n a\n-b\n+B\n c\n").unwrap(),
            "a  \nB\nc\n"
        );
        assert_eq!(
            applied("\ta\n  b\n", "@@\n a\n-b\n+B\n").unwrap(),
            "\ta\nB\n"
        );
        // The exact level wins over looser ones, so a unique exact match is taken.
        let text = "x\n  x\n";
        assert_eq!(applied(text, "@@\n-x\n+y\n").unwrap(), "y\n  x\n");
    }

    #[test]
    fn ambiguous_context_is_refused() {
        let text = "a\nx\nb\na\nx\nb\n";
        let e = applied(text, "@@\n a\n-x\n+y\n").unwrap_err();
        assert_eq!(
            e,
            PatchError::AmbiguousContext {
                path: "f.txt".into(),
                hunk: 0,
                patch_line: 3,
                lines: vec![1, 4]
            }
        );
        assert!(e.to_string().contains("starting at lines 1, 4"), "{e}");
        // Ambiguous at the trimmed level too (no exact match anywhere).
        let text = "  x\n\tx\n";
        let e = applied(text, "@@\n-x\n+y\n").unwrap_err();
        assert!(
            matches!(e, PatchError::AmbiguousContext { ref lines, .. } if lines == &[1, 2]),
            "{e:?}"
        );
        // An `@@` line that comes before only one of them settles it.
        let text = "fn a() {\n    x();\n}\nfn b() {\n    x();\n}\n";
        assert_eq!(
            applied(text, "@@ fn b() {\n-    x();\n+    y();\n").unwrap(),
            "fn a() {\n    x();\n}\nfn b() {\n    y();\n}\n"
        );
        // More context settles it too.
        assert_eq!(
            applied(text, "@@\n fn a() {\n-    x();\n+    y();\n").unwrap(),
            "fn a() {\n    y();\n}\nfn b() {\n    x();\n}\n"
        );
    }

    #[test]
    fn context_not_found_names_the_first_wrong_line() {
        let e = applied(FILE, "@@ fn c() {\n-    one();\n+    uno();\n").unwrap_err();
        assert!(
            matches!(&e, PatchError::ContextNotFound { first_line, hunk: 0, .. } if first_line == "fn c() {"),
            "{e:?}"
        );
        let e = applied(FILE, "@@\n fn a() {\n-    once();\n+    uno();\n").unwrap_err();
        assert!(
            matches!(&e, PatchError::ContextNotFound { first_line, .. } if first_line == "    once();"),
            "{e:?}"
        );
        assert!(e.to_string().contains("read the file again"), "{e}");
        assert!(applied("", "@@\n-x\n+y\n").is_err());
    }

    #[test]
    fn end_of_file_hunks_match_at_the_end_only() {
        let text = "x\ny\nx\n";
        assert_eq!(
            applied(text, "@@\n-x\n+z\n*** End of File\n").unwrap(),
            "x\ny\nz\n"
        );
        let e = applied(text, "@@\n-y\n+z\n*** End of File\n").unwrap_err();
        assert!(matches!(e, PatchError::ContextNotFound { .. }), "{e:?}");
        // Additions at the end of the file, with or without the marker.
        assert_eq!(
            applied(text, "@@\n+w\n*** End of File\n").unwrap(),
            "x\ny\nx\nw\n"
        );
        assert_eq!(applied(text, "+w\n").unwrap(), "x\ny\nx\nw\n");
    }

    #[test]
    fn pure_additions_after_a_unique_context_line() {
        let text = "use a;\n\nfn main() {\n}\n";
        assert_eq!(
            applied(text, "@@ use a;\n+use b;\n").unwrap(),
            "use a;\nuse b;\n\nfn main() {\n}\n"
        );
        let e = applied("}\n}\n", "@@ }\n+x\n").unwrap_err();
        assert!(
            matches!(e, PatchError::AmbiguousContext { ref lines, .. } if lines == &[1, 2]),
            "{e:?}"
        );
    }

    #[test]
    fn trailing_empty_line_is_retried_without() {
        // The patch's last context line is empty, the file has no such line.
        assert_eq!(applied("a\nb\n", "@@\n a\n-b\n+c\n\n").unwrap(), "a\nc\n");
    }

    #[test]
    fn crlf_and_final_newline_are_kept() {
        assert_eq!(
            applied("a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B1\n+B2\n").unwrap(),
            "a\r\nB1\r\nB2\r\nc\r\n"
        );
        assert_eq!(applied("a\nb", "@@\n a\n-b\n+c\n").unwrap(), "a\nc");
        assert_eq!(applied("a\nb", "@@\n a\n b\n+c\n").unwrap(), "a\nb\nc");
        assert_eq!(applied("a\nb\n", "@@\n-a\n-b\n").unwrap(), "");
        assert_eq!(applied("", "+a\n+b\n").unwrap(), "a\nb\n");
    }

    /// Lines from a vocabulary of `distinct` words; a small one makes contexts repeat.
    fn random_lines(rng: &mut fastrand::Rng, len: usize, distinct: u32) -> Vec<String> {
        (0..len)
            .map(|_| {
                if rng.u8(0..8) == 0 {
                    String::new()
                } else {
                    format!("w{}", rng.u32(0..distinct))
                }
            })
            .collect()
    }

    /// A patch written from the hunks of a `similar` line diff applies back to the new text,
    /// or is refused as ambiguous; it never gives another text.
    #[test]
    fn round_trip_from_line_diffs() {
        let mut rng = fastrand::Rng::with_seed(5);
        let (mut applied_count, mut ambiguous) = (0, 0);
        for round in 0..600 {
            let distinct = if round % 2 == 0 { 10_000 } else { 5 };
            let len = rng.usize(0..40);
            let old = random_lines(&mut rng, len, distinct);
            let mut new = old.clone();
            for _ in 0..rng.usize(1..5) {
                let at = rng.usize(0..=new.len());
                match rng.u8(0..3) {
                    0 if at < new.len() => {
                        new.remove(at);
                    }
                    1 if at < new.len() => new[at] = format!("changed{}", rng.u32(0..distinct)),
                    _ => new.insert(at, format!("added{}", rng.u32(0..distinct))),
                }
            }
            // Without a final newline, a last empty line would not be a line of the text.
            let ends_empty = |lines: &[String]| lines.last().is_some_and(String::is_empty);
            let final_newline =
                rng.bool() || old.is_empty() || ends_empty(&old) || ends_empty(&new);
            // CRLF only where the old text has an ending to follow.
            let crlf = rng.bool() && (old.len() > 1 || (old.len() == 1 && final_newline));
            let eol = if crlf { "\r\n" } else { "\n" };
            let join = |lines: &[String]| {
                let mut s = lines.join(eol);
                if final_newline && !lines.is_empty() {
                    s.push_str(eol);
                }
                s
            };
            let (old_text, new_text) = (join(&old), join(&new));
            let (old_lf, new_lf) = (
                old.iter().map(|l| format!("{l}\n")).collect::<String>(),
                new.iter().map(|l| format!("{l}\n")).collect::<String>(),
            );
            let diff = similar::TextDiff::from_lines(&old_lf, &new_lf);
            let mut patch = String::from("*** Begin Patch\n*** Update File: f\n");
            let groups = diff.grouped_ops(3);
            if groups.is_empty() {
                continue;
            }
            for group in &groups {
                patch.push_str("@@\n");
                for op in group {
                    for change in diff.iter_changes(op) {
                        let sign = match change.tag() {
                            similar::ChangeTag::Equal => ' ',
                            similar::ChangeTag::Delete => '-',
                            similar::ChangeTag::Insert => '+',
                        };
                        let line = change.value().trim_end_matches('\n');
                        // Codex writes an empty unchanged line as an empty line, or as " ".
                        if sign == ' ' && line.is_empty() && rng.bool() {
                            patch.push('\n');
                        } else {
                            patch.push_str(&format!("{sign}{line}\n"));
                        }
                    }
                }
                let old_end = group.last().map_or(0, |op| op.old_range().end);
                if old_end == old.len() && !old.is_empty() {
                    patch.push_str("*** End of File\n");
                }
            }
            patch.push_str("*** End Patch\n");
            let parsed = parse(&patch).unwrap_or_else(|e| panic!("round {round}: {e}\n{patch}"));
            let FilePatch::Update { chunks, .. } = &parsed.files[0] else {
                panic!()
            };
            match apply_chunks("f", &old_text, chunks) {
                Ok(text) => {
                    assert_eq!(text, new_text, "round {round}\n{patch}");
                    applied_count += 1;
                }
                Err(PatchError::AmbiguousContext { .. }) => ambiguous += 1,
                Err(e) => panic!("round {round}: {e}\n{patch}"),
            }
        }
        assert!(
            applied_count > 400,
            "applied {applied_count}, ambiguous {ambiguous}"
        );
        assert!(
            ambiguous > 0,
            "the repetitive texts never made an ambiguous hunk"
        );
    }
}
