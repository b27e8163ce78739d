//! Workspace search: `glob`, `grep` and the deprecated `find_files`.
//!
//! Walking uses the `ignore` crate (the walker of ripgrep): `.gitignore`, `.ignore` and
//! `.git/info/exclude` are honored unless `include_ignored` is set, hidden files are searched, the
//! `.git` directory never is, and symbolic links are not followed (a link cannot lead the search
//! outside the workspace). Globs are `globset` patterns matched against paths relative to the
//! search directory, `*` stopping at `/` and `**` crossing it. Results are relative to the
//! workspace root and sorted.
//!
//! `grep` opens each file through the workspace's capability directory ([`Workspace::read`]):
//! a file swapped for a symbolic link to something outside the workspace after the walk saw it
//! is refused (and skipped), never read, and a FIFO, socket or device is never opened. `glob` and
//! `find_files` return only paths that are regular files inside the workspace when the walk
//! ends, checked through that directory without following any link
//! ([`Workspace::retain_files`]), so a directory swapped for a link mid-walk lists no names from
//! outside. The walk runs on the blocking pool ([`blocking`]).
//!
//! Limits: `glob` returns at most [`GLOB_MAX_RESULTS`] paths, `grep` at most
//! [`GREP_MAX_RESULTS`] matches, skips files over [`GREP_MAX_FILE_BYTES`] and binary files, and
//! cuts matched lines to [`GREP_MAX_LINE_CHARS`] characters.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolcat::{ToolContext, ToolError};

use super::failed;
use super::files::is_binary;
use toolcat_tools::workspace::{blocking, Workspace};

/// Default and largest number of paths `glob` returns.
pub const GLOB_MAX_RESULTS: usize = 1000;
/// Default and largest number of matches `grep` returns.
pub const GREP_MAX_RESULTS: usize = 500;
/// Files larger than this (4 MiB) are skipped by `grep`.
pub const GREP_MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Matched lines are cut to this many characters.
pub const GREP_MAX_LINE_CHARS: usize = 300;

/// Arguments of `glob`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobArgs {
    /// Glob pattern matched against paths relative to `path`, e.g. `**/*.rs`, `src/*/mod.rs`,
    /// `**/{Cargo,package}.{toml,json}`.
    pub pattern: String,
    /// Directory to search, relative to the workspace root; the root when omitted.
    #[serde(default)]
    pub path: Option<String>,
    /// Also match files that `.gitignore` excludes.
    #[serde(default)]
    pub include_ignored: bool,
    /// Most paths to return; 1000 when omitted.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub max_results: Option<usize>,
}

/// Result of `glob` and `find_files`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GlobOutput {
    /// Matching files, relative to the workspace root, sorted.
    pub matches: Vec<String>,
    /// More files matched than were returned.
    pub truncated: bool,
}

/// Finds files by glob pattern.
#[toolcat::tool]
pub async fn glob(args: GlobArgs, ctx: &ToolContext) -> Result<GlobOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let base = search_base(&ws, args.path.as_deref())?;
    let matcher = compile_glob(&args.pattern)?;
    let limit = clamp(args.max_results, GLOB_MAX_RESULTS);
    let include_ignored = args.include_ignored;
    blocking("the search", move |work| {
        let mut matches = Vec::new();
        for file in walk(&base, include_ignored) {
            if work.abandoned() {
                break;
            }
            let rel = file.strip_prefix(&base).unwrap_or(&file);
            if matcher.is_match(rel) {
                matches.push(file);
            }
        }
        Ok(limit_sorted(&ws, matches, limit))
    })
    .await
}

/// Arguments of `find_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindFilesArgs {
    /// Text the file name must contain (case-sensitive).
    pub name: String,
    /// Most paths to return; 1000 when omitted.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub max_results: Option<usize>,
}

/// Finds files whose names contain a piece of text; kept for callers of the old tool name until
/// its removal date (`tools.toml`), with `glob`'s walk.
#[toolcat::tool]
pub async fn find_files(args: FindFilesArgs, ctx: &ToolContext) -> Result<GlobOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    if args.name.is_empty() {
        return Err(failed(
            "`name` is empty; pass part of a file name, or use `glob`",
        ));
    }
    let limit = clamp(args.max_results, GLOB_MAX_RESULTS);
    let base = ws.root().to_path_buf();
    blocking("the search", move |work| {
        let mut matches = Vec::new();
        for file in walk(&base, false) {
            if work.abandoned() {
                break;
            }
            let hit = file
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains(&args.name));
            if hit {
                matches.push(file);
            }
        }
        Ok(limit_sorted(&ws, matches, limit))
    })
    .await
}

/// How `grep` reports what it found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GrepOutputMode {
    /// Every matching line with its file and line number.
    #[default]
    Content,
    /// Only the files that match, with their number of matching lines.
    Files,
}

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// Regular expression (Rust `regex` syntax, like ripgrep), matched line by line.
    pub pattern: String,
    /// File or directory to search, relative to the workspace root; the root when omitted.
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files matching this glob: against the file name when it has no `/`
    /// (`*.rs`), else against the path relative to `path` (`src/**/*.rs`).
    #[serde(default)]
    pub glob: Option<String>,
    /// Match regardless of letter case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// `content` (default) for matching lines, `files` for matching file names only.
    #[serde(default)]
    pub output: GrepOutputMode,
    /// Also search files that `.gitignore` excludes.
    #[serde(default)]
    pub include_ignored: bool,
    /// Most matching lines (or files) to return; 500 when omitted.
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub max_results: Option<usize>,
}

/// One matching line.
#[derive(Debug, Serialize, PartialEq, Eq, JsonSchema)]
pub struct GrepMatch {
    /// File, relative to the workspace root.
    pub path: String,
    /// Line number, counting from 1.
    pub line: usize,
    /// The line, cut to 300 characters.
    pub text: String,
}

/// One matching file.
#[derive(Debug, Serialize, PartialEq, Eq, JsonSchema)]
pub struct GrepFile {
    /// File, relative to the workspace root.
    pub path: String,
    /// Number of matching lines in it.
    pub matching_lines: usize,
}

/// Result of `grep`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GrepOutput {
    /// Matching lines, in path then line order (`content` mode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<GrepMatch>,
    /// Matching files, in path order (`files` mode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<GrepFile>,
    /// Files searched.
    pub files_searched: usize,
    /// More results exist than were returned.
    pub truncated: bool,
}

/// Searches file contents with a regular expression.
#[toolcat::tool]
pub async fn grep(args: GrepArgs, ctx: &ToolContext) -> Result<GrepOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let base = search_base(&ws, args.path.as_deref())?;
    let regex = regex::RegexBuilder::new(&args.pattern)
        .case_insensitive(args.case_insensitive)
        .size_limit(16 * 1024 * 1024)
        .build()
        .map_err(|e| failed(format!("`pattern` is not a valid regular expression: {e}")))?;
    let filter = args.glob.as_deref().map(compile_glob).transpose()?;
    let by_name = args.glob.as_deref().is_some_and(|g| !g.contains('/'));
    let limit = clamp(args.max_results, GREP_MAX_RESULTS);
    blocking("the search", move |work| {
        let mut files: Vec<PathBuf> = walk(&base, args.include_ignored)
            .filter(|file| match &filter {
                None => true,
                Some(glob) if by_name => file.file_name().is_some_and(|n| glob.is_match(n)),
                Some(glob) => glob.is_match(file.strip_prefix(&base).unwrap_or(file)),
            })
            .collect();
        files.sort();
        let mut out = GrepOutput {
            matches: Vec::new(),
            files: Vec::new(),
            files_searched: 0,
            truncated: false,
        };
        for file in files {
            if work.abandoned() {
                break;
            }
            let Some(text) = searchable_text(&ws, &file) else {
                continue;
            };
            out.files_searched += 1;
            let mut matching_lines = 0;
            for (index, line) in text.lines().enumerate() {
                if !regex.is_match(line) {
                    continue;
                }
                matching_lines += 1;
                if args.output == GrepOutputMode::Content {
                    if out.matches.len() == limit {
                        out.truncated = true;
                        return Ok(out);
                    }
                    out.matches.push(GrepMatch {
                        path: ws.relative(&file),
                        line: index + 1,
                        text: cut(line, GREP_MAX_LINE_CHARS),
                    });
                }
            }
            if args.output == GrepOutputMode::Files && matching_lines > 0 {
                if out.files.len() == limit {
                    out.truncated = true;
                    return Ok(out);
                }
                out.files.push(GrepFile {
                    path: ws.relative(&file),
                    matching_lines,
                });
            }
        }
        Ok(out)
    })
    .await
}

/// The text of a file worth searching, read through the capability directory
/// ([`Workspace::read`]): `None` for unreadable, oversized, binary or non-regular files and for
/// one that now leads outside the workspace.
fn searchable_text(ws: &Workspace, file: &Path) -> Option<String> {
    let bytes = ws
        .read(file, &file.to_string_lossy(), GREP_MAX_FILE_BYTES)
        .ok()?;
    if is_binary(&bytes) {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The first `max` characters of `line`, with `…` when cut.
fn cut(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_string(),
    }
}

/// The directory (or single file) a search starts from.
fn search_base(ws: &Workspace, path: Option<&str>) -> Result<PathBuf, ToolError> {
    ws.existing(path.unwrap_or("."))
}

/// A glob with `*` stopping at `/`, `**` crossing it, and `{a,b}` alternatives.
fn compile_glob(pattern: &str) -> Result<GlobMatcher, ToolError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| failed(format!("`{pattern}` is not a valid glob: {e}")))
}

/// Every file under `base` (or `base` itself when it is a file), honoring ignore files unless
/// `include_ignored`; `.git` is never entered and symbolic links are not followed.
fn walk(base: &Path, include_ignored: bool) -> impl Iterator<Item = PathBuf> {
    ignore::WalkBuilder::new(base)
        .hidden(false)
        .follow_links(false)
        .git_ignore(!include_ignored)
        .git_exclude(!include_ignored)
        .git_global(false)
        .ignore(!include_ignored)
        .parents(!include_ignored)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .map(ignore::DirEntry::into_path)
}

/// `requested` within `1..=max`, `max` when not given.
fn clamp(requested: Option<usize>, max: usize) -> usize {
    requested.unwrap_or(max).clamp(1, max)
}

/// Keeps the `files` that really are files inside the workspace now
/// ([`Workspace::retain_files`]: the walk reopens directories by name, so a directory swapped
/// for a link mid-walk could have listed names from outside), relative to the root, sorted, the
/// first `limit`.
fn limit_sorted(ws: &Workspace, mut files: Vec<PathBuf>, limit: usize) -> GlobOutput {
    ws.retain_files(&mut files);
    let mut matches: Vec<String> = files.iter().map(|f| ws.relative(f)).collect();
    matches.sort();
    let truncated = matches.len() > limit;
    matches.truncate(limit);
    GlobOutput { matches, truncated }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        for (path, text) in [
            ("src/main.rs", "fn main() {\n    helper();\n}\n"),
            (
                "src/util/helper.rs",
                "pub fn helper() {}\n// TODO: Helper docs\n",
            ),
            ("README.md", "helper crate\n"),
            ("target/debug/out.rs", "fn helper() {}\n"),
            (".github/ci.yml", "run: helper\n"),
            (".gitignore", "target/\n"),
        ] {
            std::fs::create_dir_all(root.join(path).parent().expect("parent")).expect("mkdir");
            std::fs::write(root.join(path), text).expect("write");
        }
        std::fs::write(root.join("src/data.bin"), b"helper\0\x01").expect("write");
        let ctx = ToolContext::new(root);
        (dir, ctx)
    }

    fn glob_args(pattern: &str) -> GlobArgs {
        GlobArgs {
            pattern: pattern.into(),
            path: None,
            include_ignored: false,
            max_results: None,
        }
    }

    #[tokio::test]
    async fn glob_matches_relative_paths_and_honors_gitignore() {
        let (_dir, ctx) = setup();
        let rs = glob(glob_args("**/*.rs"), &ctx).await.expect("glob");
        assert_eq!(rs.matches, vec!["src/main.rs", "src/util/helper.rs"]);
        let top = glob(glob_args("*.md"), &ctx).await.expect("glob");
        assert_eq!(top.matches, vec!["README.md"]);
        let hidden = glob(glob_args(".github/*.yml"), &ctx).await.expect("glob");
        assert_eq!(hidden.matches, vec![".github/ci.yml"]);
        let mut all = glob_args("**/*.rs");
        all.include_ignored = true;
        let all = glob(all, &ctx).await.expect("glob");
        assert_eq!(all.matches.len(), 3);
        let mut under = glob_args("*.rs");
        under.path = Some("src/util".into());
        let under = glob(under, &ctx).await.expect("glob");
        assert_eq!(under.matches, vec!["src/util/helper.rs"]);
        let mut one = glob_args("**/*.rs");
        one.max_results = Some(1);
        let one = glob(one, &ctx).await.expect("glob");
        assert_eq!((one.matches.len(), one.truncated), (1, true));
        assert!(glob(glob_args("src/[a"), &ctx).await.is_err());
        let mut outside = glob_args("*");
        outside.path = Some("..".into());
        assert!(matches!(
            glob(outside, &ctx).await,
            Err(ToolError::OutsideWorkspace { .. })
        ));
    }

    #[tokio::test]
    async fn find_files_matches_name_substrings() {
        let (_dir, ctx) = setup();
        let out = find_files(
            FindFilesArgs {
                name: "help".into(),
                max_results: None,
            },
            &ctx,
        )
        .await
        .expect("find");
        assert_eq!(out.matches, vec!["src/util/helper.rs"]);
    }

    fn grep_args(pattern: &str) -> GrepArgs {
        GrepArgs {
            pattern: pattern.into(),
            path: None,
            glob: None,
            case_insensitive: false,
            output: GrepOutputMode::Content,
            include_ignored: false,
            max_results: None,
        }
    }

    #[tokio::test]
    async fn grep_finds_lines_and_skips_ignored_and_binary_files() {
        let (_dir, ctx) = setup();
        let out = grep(grep_args(r"fn \w+\(\)"), &ctx).await.expect("grep");
        assert_eq!(
            out.matches,
            vec![
                GrepMatch {
                    path: "src/main.rs".into(),
                    line: 1,
                    text: "fn main() {".into()
                },
                GrepMatch {
                    path: "src/util/helper.rs".into(),
                    line: 1,
                    text: "pub fn helper() {}".into()
                },
            ]
        );
        let mut insensitive = grep_args("helper docs");
        insensitive.case_insensitive = true;
        let found = grep(insensitive, &ctx).await.expect("grep");
        assert_eq!(found.matches.len(), 1);
        assert_eq!(found.matches[0].line, 2);

        let mut files = grep_args("helper");
        files.output = GrepOutputMode::Files;
        let files = grep(files, &ctx).await.expect("grep");
        let paths: Vec<&str> = files.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                ".github/ci.yml",
                "README.md",
                "src/main.rs",
                "src/util/helper.rs"
            ]
        );
        assert!(files.matches.is_empty());

        let mut only_rs = grep_args("helper");
        only_rs.glob = Some("*.rs".into());
        only_rs.output = GrepOutputMode::Files;
        let only_rs = grep(only_rs, &ctx).await.expect("grep");
        assert_eq!(only_rs.files.len(), 2);

        let mut capped = grep_args("helper");
        capped.max_results = Some(2);
        let capped = grep(capped, &ctx).await.expect("grep");
        assert_eq!((capped.matches.len(), capped.truncated), (2, true));

        let bad = grep(grep_args("(unclosed"), &ctx)
            .await
            .expect_err("bad regex");
        assert!(
            bad.to_string().contains("not a valid regular expression"),
            "{bad}"
        );
    }

    #[test]
    fn cut_keeps_short_lines_and_marks_long_ones() {
        assert_eq!(cut("abc", 5), "abc");
        assert_eq!(cut("abcdef", 3), "abc…");
        assert_eq!(cut("ééé", 2), "éé…");
    }
}
