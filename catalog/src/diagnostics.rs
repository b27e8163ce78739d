//! Diagnostics: what is wrong with a `tools.toml`, where, and how to fix it.
//!
//! Every diagnostic renders as
//! ```text
//! PATH:LINE:COL: error[CODE]: message
//!    |
//! 12 | name = "read file"
//!    |        ^^^^^^^^^^^ label
//!    |
//!    = help: the fix
//! ```
//! The first line is ours (the `PATH:LINE:COL` form editors and CI annotators jump to); the excerpt
//! below it is rendered by `annotate-snippets`, in plain ASCII without colour. `LINE` and `COL` are
//! 1-based and `COL` counts characters, not bytes. A diagnostic whose span is `0..0` is about the
//! file as a whole and renders without an excerpt.
//!
//! A diagnostic with related places (the first declaration of a duplicate, the other half of a
//! pair) shows them in the same excerpt when they are a few lines apart; a place farther away gets
//! an excerpt of its own under a `::: PATH:LINE:COL` line, so the output stays the same size
//! however far apart the places are:
//! ```text
//! PATH:18:8: error[E0201]: duplicate tool name `read_file`
//!    |
//!  8 | name = "read_file"
//!    |        ----------- first declared here
//!    |
//!   ::: PATH:18:8
//!    |
//! 18 | name = "read_file"
//!    |        ^^^^^^^^^^^ declared again here
//! ```
//!
//! Errors are collected, never thrown one at a time: a user sees every problem of a file at once.
//! The codes and the rule behind each are listed in [`crate::validate`].

use annotate_snippets::renderer::DecorStyle;
use annotate_snippets::{Annotation, AnnotationKind, Group, Level, Renderer, Snippet};

use crate::model::Span;

/// How bad a diagnostic is. Errors fail `cargo build` and `toolcat check`; warnings are shown only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    /// `error` or `warning`, as rendered.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One finding about a catalog file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Stable code, e.g. `E0101`; listed with its rule in [`crate::validate`].
    pub code: &'static str,
    /// Lower-case sentence, names in backticks, no full stop.
    pub message: String,
    /// Where in the source the fault is; `0..0` when it is about the file as a whole.
    pub span: Span,
    /// Short text under the caret.
    pub label: Option<String>,
    /// The fix.
    pub help: Option<String>,
    /// Other places that explain the fault (the first declaration of a duplicate, the other half
    /// of a pair), each with a short label; rendered as secondary annotations in the excerpt.
    pub related: Vec<(Span, String)>,
}

impl Diagnostic {
    /// An error with `code` about the source text at `span`.
    pub fn error(code: &'static str, message: impl Into<String>, span: Span) -> Self {
        Diagnostic::new(Severity::Error, code, message, span)
    }

    /// A warning with `code` about the source text at `span`.
    pub fn warning(code: &'static str, message: impl Into<String>, span: Span) -> Self {
        Diagnostic::new(Severity::Warning, code, message, span)
    }

    fn new(severity: Severity, code: &'static str, message: impl Into<String>, span: Span) -> Self {
        Diagnostic {
            severity,
            code,
            message: message.into(),
            span,
            label: None,
            help: None,
            related: Vec::new(),
        }
    }

    /// Sets the text under the caret.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Sets the fix.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds a secondary place, shown in the excerpt with its own label. Empty spans are ignored.
    pub fn with_related(mut self, span: Span, label: impl Into<String>) -> Self {
        if span != (0..0) {
            self.related.push((span, label.into()));
        }
        self
    }

    /// Whether this diagnostic fails the build.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The 1-based `(line, column)` of the start of the span in `source`; the column counts
    /// characters. `(1, 1)` for a `0..0` span.
    pub fn line_col(&self, source: &str) -> (usize, usize) {
        line_col(source, self.span.start)
    }

    /// The first line alone: `PATH:LINE:COL: error[CODE]: message`.
    pub fn headline(&self, path: &str, source: &str) -> String {
        self.headline_in(path, source, &Lines::new(source))
    }

    fn headline_in(&self, path: &str, source: &str, lines: &Lines) -> String {
        let (line, col) = lines.line_col(source, self.span.start);
        format!(
            "{path}:{line}:{col}: {}[{}]: {}",
            self.severity.as_str(),
            self.code,
            self.message
        )
    }

    /// Renders the diagnostic: the headline, then (unless the span is `0..0`) the source line with
    /// a caret under the span and the label, then the `help:` line. Plain text, no ANSI colour,
    /// ends with a newline.
    pub fn render(&self, path: &str, source: &str) -> String {
        self.render_in(path, source, &Lines::new(source))
    }

    /// [`Self::render`] with the line starts of `source` computed once by the caller. Only the
    /// lines the spans touch are handed to the renderer (with their line number), so rendering
    /// costs the size of those lines, not of the whole file.
    fn render_in(&self, path: &str, source: &str, lines: &Lines) -> String {
        let mut out = self.headline_in(path, source, lines);
        out.push('\n');
        let level = match self.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
        };
        let mut group = Group::with_level(level);
        if self.span != (0..0) {
            for snippet in self.snippets(path, source, lines) {
                group = group.element(snippet);
            }
        } else if let Some(label) = &self.label {
            group = group.element(Level::NOTE.message(label.as_str()));
        }
        if let Some(help) = &self.help {
            group = group.element(Level::HELP.message(help.as_str()));
        }
        if !group.is_empty() {
            let renderer = Renderer::plain().decor_style(DecorStyle::Ascii);
            let body = renderer.render(&[group]);
            for line in body.lines() {
                out.push_str(line.trim_end());
                out.push('\n');
            }
        }
        out
    }

    /// The excerpts of a diagnostic with a span: its primary span and related spans, clustered by
    /// line. Spans whose lines are at most [`CLUSTER_GAP`] lines apart share one excerpt (the
    /// renderer elides the unannotated lines between them with `...`); a span farther away gets
    /// an excerpt of its own, with its own line numbers. Each excerpt holds only the lines from
    /// its first span to its last, so rendering costs the size of those lines, however far apart
    /// the spans of a diagnostic are (the two descriptions of a near-duplicate pair, W0501, can be
    /// thousands of lines apart). Excerpts come in the order of the file.
    fn snippets<'s>(
        &'s self,
        path: &'s str,
        source: &'s str,
        lines: &Lines,
    ) -> Vec<Snippet<'s, Annotation<'s>>> {
        // (span, first line, last line, is primary, label, order given), in the order of the file.
        let mut marks: Vec<Mark<'s>> =
            std::iter::once((clamp(source, &self.span), true, self.label.as_deref()))
                .chain(
                    self.related
                        .iter()
                        .map(|(s, l)| (clamp(source, s), false, Some(l.as_str()))),
                )
                .enumerate()
                .map(|(k, (span, primary, label))| {
                    let first = lines.line_of(span.start);
                    let last = lines.line_of(span.end);
                    (span, first, last, primary, label, k)
                })
                .collect();
        marks.sort_by_key(|m| (m.1, m.0.start));
        let mut clusters: Vec<Vec<Mark<'s>>> = Vec::new();
        for mark in marks {
            match clusters.last_mut() {
                Some(cluster)
                    if mark.1 <= cluster.iter().map(|m| m.2).max().unwrap_or(0) + CLUSTER_GAP =>
                {
                    cluster.push(mark);
                }
                _ => clusters.push(vec![mark]),
            }
        }
        clusters
            .into_iter()
            .enumerate()
            .map(|(n, cluster)| {
                let first = cluster.iter().map(|m| m.1).min().unwrap_or(0);
                let last = cluster.iter().map(|m| m.2).max().unwrap_or(0);
                let start = lines.starts[first];
                let end = lines.starts.get(last + 1).copied().unwrap_or(source.len());
                // Primary first, then the related spans as given, as one excerpt always had them.
                let mut cluster = cluster;
                cluster.sort_by_key(|m| m.5);
                let mut snippet = Snippet::source(&source[start..end]).line_start(first + 1);
                if n > 0 {
                    // `::: PATH:LINE:COL` above a later excerpt; the first is under the headline.
                    snippet = snippet.path(path);
                }
                cluster
                    .into_iter()
                    .fold(snippet, |snippet, (span, _, _, primary, label, _)| {
                        let kind = if primary {
                            AnnotationKind::Primary
                        } else {
                            AnnotationKind::Context
                        };
                        snippet.annotation(
                            kind.span(span.start - start..span.end - start).label(label),
                        )
                    })
            })
            .collect()
    }
}

/// Spans of one diagnostic whose lines are at most this many lines apart are shown in one excerpt;
/// farther apart, each gets an excerpt of its own (see `Diagnostic::snippets`).
const CLUSTER_GAP: usize = 3;

/// One annotation of an excerpt: span, first and last line (0-based), whether it is the primary
/// span, its label, and its place among the spans as given (primary first).
type Mark<'s> = (Span, usize, usize, bool, Option<&'s str>, usize);

/// Renders every diagnostic, in order, separated by blank lines, followed by a summary line
/// (`error: 3 errors and 1 warning in PATH`) when there is at least one diagnostic.
pub fn render_all(diagnostics: &[Diagnostic], path: &str, source: &str) -> String {
    render_all_capped(diagnostics, path, source, usize::MAX, "")
}

/// [`render_all`] showing at most `per_code` warnings of each code (errors are always all shown):
/// the rest of a code are counted on one line after the diagnostics,
/// `warning: 9096 more W0501 warnings not shown (the first 20 are); HINT`, one line per code in
/// the order the codes first occur. The summary line counts every diagnostic, shown or not.
/// `hint` says how to see them all (e.g. a command-line flag); empty for none.
pub fn render_all_capped(
    diagnostics: &[Diagnostic],
    path: &str,
    source: &str,
    per_code: usize,
    hint: &str,
) -> String {
    let lines = Lines::new(source);
    let mut out = String::new();
    // (code, warnings of that code), in the order the codes first occur.
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for d in diagnostics {
        if !d.is_error() {
            let k = match counts.iter().position(|(c, _)| *c == d.code) {
                Some(k) => k,
                None => {
                    counts.push((d.code, 0));
                    counts.len() - 1
                }
            };
            counts[k].1 += 1;
            if counts[k].1 > per_code {
                continue;
            }
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&d.render_in(path, source, &lines));
    }
    let hidden: Vec<(&str, usize)> = counts
        .iter()
        .filter(|(_, n)| *n > per_code)
        .map(|&(c, n)| (c, n - per_code))
        .collect();
    if !hidden.is_empty() {
        out.push('\n');
        for (code, n) in hidden {
            let what = if n == 1 { "warning" } else { "warnings" };
            out.push_str(&format!(
                "warning: {n} more {code} {what} not shown (the first {per_code} are)"
            ));
            if !hint.is_empty() {
                out.push_str("; ");
                out.push_str(hint);
            }
            out.push('\n');
        }
    }
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = diagnostics.len() - errors;
    if !diagnostics.is_empty() {
        let plural = |n: usize, word: &str| {
            if n == 1 {
                format!("1 {word}")
            } else {
                format!("{n} {word}s")
            }
        };
        let summary = match (errors, warnings) {
            (0, w) => format!("warning: {} in {path}", plural(w, "warning")),
            (e, 0) => format!("error: {} in {path}", plural(e, "error")),
            (e, w) => format!(
                "error: {} and {} in {path}",
                plural(e, "error"),
                plural(w, "warning")
            ),
        };
        out.push('\n');
        out.push_str(&summary);
        out.push('\n');
    }
    out
}

/// Joins items for a message: `a`, `a and b`, `a, b and c`.
pub fn and_list(items: impl IntoIterator<Item = String>) -> String {
    let items: Vec<String> = items.into_iter().collect();
    match items.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The candidate closest to `word`, if one is close enough to be a likely misspelling.
///
/// Case and the `_`/`-` distinction are ignored (`Read_Only` suggests `read-only`); otherwise a
/// candidate qualifies when its edit distance is at most a third of the longer word (at least 1),
/// or when the two share a long common start (Jaro-Winkler similarity ≥ 0.83: `destroy` suggests
/// `destructive`). Among qualifying candidates the smallest distance wins, then the first given.
///
/// The edit distance is at least the difference in length, so candidates that could neither
/// qualify nor beat the best so far are passed over without computing it: an unknown name
/// checked against thousands of declared ones stays cheap.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let normal = |s: &str| s.to_lowercase().replace('_', "-");
    let word_n = normal(word);
    let word_len = word_n.chars().count();
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        let cand_n = normal(candidate);
        let cand_len = cand_n.chars().count();
        let longest = word_len.max(cand_len);
        let at_least = word_len.abs_diff(cand_len);
        if best.is_some_and(|(d, _)| at_least >= d) {
            continue;
        }
        let near = at_least <= (longest / 3).max(1);
        if !near && strsim::jaro_winkler(&word_n, &cand_n) < 0.83 {
            continue;
        }
        let distance = strsim::damerau_levenshtein(&word_n, &cand_n);
        let close =
            distance <= (longest / 3).max(1) || strsim::jaro_winkler(&word_n, &cand_n) >= 0.83;
        if close && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// The 1-based `(line, column)` of byte `offset` in `source`; the column counts characters.
/// Offsets past the end or inside a character are moved back to the nearest character boundary.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = floor_char_boundary(source, offset);
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = source[line_start..offset].chars().count() + 1;
    (line, col)
}

/// `span` moved inside `source` and onto character boundaries, so rendering never panics on a
/// span that came from a different text.
/// The byte offsets at which the lines of a source start (the first is 0).
struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    fn new(source: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(source.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines { starts }
    }

    /// The 0-based line holding byte `offset`.
    fn line_of(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1)
    }

    /// [`line_col`] through the line index.
    fn line_col(&self, source: &str, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(source, offset);
        let line = self.line_of(offset);
        let col = source[self.starts[line]..offset].chars().count() + 1;
        (line + 1, col)
    }
}

fn clamp(source: &str, span: &Span) -> Span {
    let start = floor_char_boundary(source, span.start);
    let end = floor_char_boundary(source, span.end.max(start));
    start..end
}

fn floor_char_boundary(source: &str, offset: usize) -> usize {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "[[tool]]\nname = \"réad file\"\ntier = \"silent\"\n";

    #[test]
    fn line_and_column_count_characters() {
        let at = SOURCE.find("file").unwrap();
        assert_eq!(line_col(SOURCE, at), (2, 14));
        assert_eq!(line_col(SOURCE, 0), (1, 1));
        assert_eq!(line_col(SOURCE, SOURCE.len() + 10), (4, 1));
    }

    #[test]
    fn renders_headline_excerpt_and_help() {
        let start = SOURCE.find("\"réad").unwrap();
        let d = Diagnostic::error(
            "E0202",
            "tool name `réad file` has characters outside `a-zA-Z0-9_-`",
            start..start + "\"réad file\"".len(),
        )
        .with_label("not allowed in a tool name")
        .with_help("use ASCII letters, digits, `_` and `-`, e.g. `read_file`");
        let text = d.render("tools.toml", SOURCE);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "tools.toml:2:8: error[E0202]: tool name `réad file` has characters outside `a-zA-Z0-9_-`"
        );
        assert!(text.contains("2 | name = \"réad file\""), "{text}");
        let caret = lines
            .iter()
            .find(|l| l.contains('^'))
            .expect("a caret line");
        assert!(
            caret.ends_with("^^^^^^^^^^^ not allowed in a tool name"),
            "{text}"
        );
        assert!(
            lines.last().unwrap().contains("help: use ASCII letters"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}'), "no ANSI colour by default");
    }

    #[test]
    fn line_index_agrees_with_line_col() {
        let source = "a = 1\n\nnamé = \"ü\"\r\n[x]\nlast";
        let lines = Lines::new(source);
        for offset in 0..=source.len() + 2 {
            assert_eq!(
                lines.line_col(source, offset),
                line_col(source, offset),
                "{offset}"
            );
        }
    }

    #[test]
    fn empty_span_renders_without_excerpt() {
        let d = Diagnostic::warning("W0501", "whole file", 0..0).with_help("fix it");
        let text = d.render("t.toml", SOURCE);
        assert!(text.starts_with("t.toml:1:1: warning[W0501]: whole file\n"));
        assert!(!text.contains(" | "), "{text}");
        assert!(text.contains("help: fix it"), "{text}");
    }

    #[test]
    fn spans_outside_the_source_do_not_panic() {
        let d = Diagnostic::error("E0100", "x", 500..900).with_related(3..1000, "y");
        let _ = d.render("t.toml", SOURCE);
        let d = Diagnostic::error("E0100", "x", 11..12); // inside `é`
        let _ = d.render("t.toml", SOURCE);
    }

    /// `did_you_mean` without its shortcuts: every candidate's distance computed.
    fn did_you_mean_plain<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
        let normal = |s: &str| s.to_lowercase().replace('_', "-");
        let word_n = normal(word);
        let mut best: Option<(usize, &'a str)> = None;
        for &candidate in candidates {
            let cand_n = normal(candidate);
            let distance = strsim::damerau_levenshtein(&word_n, &cand_n);
            let longest = word_n.chars().count().max(cand_n.chars().count());
            let close =
                distance <= (longest / 3).max(1) || strsim::jaro_winkler(&word_n, &cand_n) >= 0.83;
            if close && best.is_none_or(|(d, _)| distance < d) {
                best = Some((distance, candidate));
            }
        }
        best.map(|(_, c)| c)
    }

    #[test]
    fn did_you_mean_shortcuts_change_no_answer() {
        let names: Vec<String> = (0..400)
            .map(|k| {
                let stem = [
                    "get",
                    "list",
                    "read_file",
                    "Create-Issue",
                    "x",
                    "update_pull_request",
                ][k % 6];
                format!("{stem}{}", "_ab".repeat(k % 5)) + &(k % 7).to_string()
            })
            .collect();
        let candidates: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut found = 0;
        for word in [
            "get",
            "lst_1",
            "read-file_ab3",
            "create_issue",
            "y",
            "update_pull_requests0",
        ] {
            for k in [0, 3, 57, 400] {
                let expected = did_you_mean_plain(word, &candidates[..k]);
                found += usize::from(expected.is_some());
                assert_eq!(
                    did_you_mean(word, candidates[..k].iter().copied()),
                    expected,
                    "{word}"
                );
            }
        }
        assert!(found > 5);
    }

    #[test]
    fn did_you_mean_finds_misspellings_only() {
        let tiers = ["silent", "gated", "loop"];
        assert_eq!(did_you_mean("silnet", tiers), Some("silent"));
        assert_eq!(did_you_mean("Gated", tiers), Some("gated"));
        assert_eq!(did_you_mean("approval", tiers), None);
        let exposures = ["read-only", "staging", "full", "excluded"];
        assert_eq!(did_you_mean("read_only", exposures), Some("read-only"));
        assert_eq!(did_you_mean("readonly", exposures), Some("read-only"));
        assert_eq!(
            did_you_mean("destroy", ["read", "write", "destructive"]),
            Some("destructive")
        );
        assert_eq!(
            did_you_mean("profiles", ["profile", "toolset"]),
            Some("profile")
        );
    }

    #[test]
    fn far_apart_spans_get_an_excerpt_each() {
        let filler = "# filler\n".repeat(5000);
        let source = format!("name = \"a\"\n{filler}name = \"b\"\nname = \"c\"\n");
        let at = |word: &str| {
            let start = source.find(word).unwrap();
            start..start + word.len()
        };
        let d = Diagnostic::warning("W0501", "near", at("\"c\""))
            .with_label("here")
            .with_related(at("\"a\""), "far")
            .with_related(at("\"b\""), "near");
        let text = d.render("t.toml", &source);
        assert!(!text.contains("filler"), "{text}");
        assert!(!text.contains("..."), "{text}");
        assert!(
            text.starts_with("t.toml:5003:8: warning[W0501]: near\n"),
            "{text}"
        );
        // The far place under the headline, then the two near ones in one excerpt.
        let far = text.find("   1 | name = \"a\"").expect("line 1");
        let origin = text
            .find("  ::: t.toml:5002:8")
            .expect("origin of the second excerpt");
        let b = text.find("5002 | name = \"b\"").expect("line 5002");
        let c = text.find("5003 | name = \"c\"").expect("line 5003");
        assert!(far < origin && origin < b && b < c, "{text}");
        assert_eq!(text.matches(":::").count(), 1, "{text}");
        assert!(text.lines().count() < 20, "{text}");
        // The same places a line apart share one excerpt, as before.
        let close = "name = \"a\"\n# filler\nname = \"c\"\n";
        let start = |w: &str| close.find(w).unwrap();
        let d = Diagnostic::warning("W0501", "near", start("\"c\"")..start("\"c\"") + 3)
            .with_related(start("\"a\"")..start("\"a\"") + 3, "near");
        let text = d.render("t.toml", close);
        assert!(!text.contains(":::"), "{text}");
        assert!(text.contains("2 | # filler"), "{text}");
    }

    #[test]
    fn capped_rendering_counts_the_hidden_warnings() {
        let ds = vec![
            Diagnostic::warning("W0501", "w1", 0..0),
            Diagnostic::error("E0411", "e1", 0..0),
            Diagnostic::warning("W0501", "w2", 0..0),
            Diagnostic::warning("W0502", "x1", 0..0),
            Diagnostic::warning("W0501", "w3", 0..0),
            Diagnostic::error("E0411", "e2", 0..0),
            Diagnostic::warning("W0501", "w4", 0..0),
        ];
        let text = render_all_capped(&ds, "t.toml", SOURCE, 1, "run with `--all-warnings`");
        for shown in ["w1", "e1", "x1", "e2"] {
            assert!(text.contains(&format!("]: {shown}\n")), "{shown}: {text}");
        }
        for hidden in ["w2", "w3", "w4"] {
            assert!(
                !text.contains(&format!("]: {hidden}\n")),
                "{hidden}: {text}"
            );
        }
        assert!(
            text.contains(
                "warning: 3 more W0501 warnings not shown (the first 1 are); run with `--all-warnings`\n"
            ),
            "{text}"
        );
        assert!(!text.contains("more W0502"), "{text}");
        assert!(
            text.ends_with("error: 2 errors and 5 warnings in t.toml\n"),
            "{text}"
        );
        assert_eq!(
            render_all_capped(&ds, "t.toml", SOURCE, usize::MAX, "hint"),
            render_all(&ds, "t.toml", SOURCE)
        );
    }

    #[test]
    fn render_all_summarises() {
        let ds = vec![
            Diagnostic::error("E0411", "a", 0..0),
            Diagnostic::warning("W0501", "b", 0..0),
        ];
        let text = render_all(&ds, "t.toml", SOURCE);
        assert!(
            text.ends_with("error: 1 error and 1 warning in t.toml\n"),
            "{text}"
        );
    }
}
