//! The workspace's git repository: `git_status`, `git_diff`, `git_log`, `git_show`, `git_add`,
//! `git_commit`.
//!
//! Each tool runs the `git` binary from `PATH` in the workspace root, without a terminal prompt or
//! pager, under a [`GIT_TIMEOUT`]. Revision arguments may not start with `-` (they would be read
//! as options) and path arguments are confined to the workspace like every other path. Diff and
//! show output keeps its first [`DIFF_MAX_BYTES`] bytes.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolcat::{Access, Target, ToolContext, ToolError};

use super::failed;
use super::shell::Capture;
use super::workspace::Workspace;

/// Longest a single `git` invocation may run.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes of a diff or commit kept: 256 KiB.
pub const DIFF_MAX_BYTES: usize = 256 * 1024;

/// What one `git` invocation printed.
struct GitOutput {
    stdout: String,
    /// Bytes of standard output beyond the kept head.
    omitted: usize,
}

/// Runs `git ARGS` in the workspace root and returns its output, or fails with git's own message.
/// The repository of the workspace as resource `git:ROOT`, for the prepare steps: commands that
/// change the index, refs or objects write it, the others read it, so a `git_add` never runs
/// beside a `git_commit` (git's own `index.lock` would refuse one of them).
fn repository_target(ctx: &ToolContext, access: Access) -> Result<Vec<Target>, ToolError> {
    let ws = Workspace::open(ctx)?;
    Ok(vec![Target::new(
        format!("git:{}", ws.root().display()),
        access,
    )])
}

async fn git(ws: &Workspace, args: &[&str]) -> Result<GitOutput, ToolError> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.args(args)
        .current_dir(ws.root())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("GIT_EDITOR", "true")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(GIT_TIMEOUT, cmd.output())
        .await
        .map_err(|_| {
            failed(format!(
                "`git {}` did not finish within {} seconds",
                args.first().unwrap_or(&""),
                GIT_TIMEOUT.as_secs()
            ))
        })?
        .map_err(|e| ToolError::io("cannot run `git`; is git installed and on PATH", e))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let reason = if stderr.trim().is_empty() {
            stdout
        } else {
            stderr
        };
        return Err(failed(format!(
            "`git {}` failed: {}",
            args.first().unwrap_or(&""),
            reason.trim()
        )));
    }
    let mut capture = Capture::new(DIFF_MAX_BYTES, 0);
    capture.push(&output.stdout);
    let omitted = capture.omitted();
    let stdout = if omitted == 0 {
        String::from_utf8_lossy(&output.stdout).into_owned()
    } else {
        let mut text = capture.text();
        // `Capture::text` marks the cut; say what to do about it.
        text.push_str("(narrow the request with `path` to see the rest)\n");
        text
    };
    Ok(GitOutput { stdout, omitted })
}

/// Checks a revision argument: non-empty, no leading `-`, no whitespace or control characters.
fn revision(rev: &str) -> Result<&str, ToolError> {
    let ok = !rev.is_empty()
        && !rev.starts_with('-')
        && !rev.chars().any(|c| c.is_whitespace() || c.is_control());
    if ok {
        Ok(rev)
    } else {
        Err(failed(format!(
            "`{rev}` is not a revision; pass a commit sha, branch, tag or an expression like \
             `HEAD~2`"
        )))
    }
}

/// A path argument as git sees it: relative to the workspace root, confined to it.
fn git_path(ws: &Workspace, path: &str) -> Result<String, ToolError> {
    Ok(ws.relative(&ws.target(path)?))
}

/// Arguments of `git_status`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitStatusArgs {}

/// One changed path.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct StatusEntry {
    /// Two-letter status code of `git status --porcelain`: index then working tree (`M ` staged
    /// change, ` M` unstaged change, `??` untracked, `A ` added, `D ` deleted, `R ` renamed).
    pub code: String,
    /// Path, relative to the repository root.
    pub path: String,
    /// Former path of a rename or copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// Result of `git_status`.
#[derive(Debug, Serialize)]
pub struct GitStatusOutput {
    /// Branch line: `main`, `main...origin/main [ahead 1]`, or `HEAD (no branch)`.
    pub branch: String,
    /// Changed, staged and untracked paths.
    pub entries: Vec<StatusEntry>,
    /// Nothing to commit and nothing untracked.
    pub clean: bool,
}

/// Parses `git status --porcelain=v1 -b -z` output.
fn parse_status(out: &str) -> GitStatusOutput {
    let mut fields = out.split('\0').filter(|f| !f.is_empty());
    let mut branch = String::new();
    let mut entries = Vec::new();
    while let Some(field) = fields.next() {
        if let Some(b) = field.strip_prefix("## ") {
            branch = b.to_string();
            continue;
        }
        if field.len() < 4 {
            continue;
        }
        let code = field[..2].to_string();
        let path = field[3..].to_string();
        let from = if code.contains('R') || code.contains('C') {
            fields.next().map(str::to_string)
        } else {
            None
        };
        entries.push(StatusEntry { code, path, from });
    }
    let clean = entries.is_empty();
    GitStatusOutput {
        branch,
        entries,
        clean,
    }
}

/// Target of `git_status`: the repository, read.
pub fn git_status_targets(
    _args: &GitStatusArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    repository_target(ctx, Access::Read)
}

/// Shows the branch and changed files.
#[toolcat::tool(prepare = git_status_targets)]
pub async fn git_status(
    args: GitStatusArgs,
    ctx: &ToolContext,
) -> Result<GitStatusOutput, ToolError> {
    let GitStatusArgs {} = args;
    let ws = Workspace::open(ctx)?;
    let out = git(
        &ws,
        &[
            "status",
            "--porcelain=v1",
            "-b",
            "-z",
            "--untracked-files=all",
        ],
    )
    .await?;
    Ok(parse_status(&out.stdout))
}

/// Arguments of `git_diff`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitDiffArgs {
    /// Show staged changes (what the next commit holds) instead of unstaged ones.
    #[serde(default)]
    pub staged: bool,
    /// Compare the working tree (or, with `staged`, the index) against this revision instead.
    #[serde(default)]
    pub base: Option<String>,
    /// Only changes to this file or directory, relative to the workspace root.
    #[serde(default)]
    pub path: Option<String>,
    /// Lines of context around each change; 3 when omitted.
    #[serde(default)]
    #[schemars(range(max = 100))]
    pub context_lines: Option<u32>,
}

/// Result of `git_diff` and `git_show`.
#[derive(Debug, Serialize)]
pub struct GitTextOutput {
    /// The output of git, the first 256 KiB when longer.
    pub text: String,
    /// Bytes left out after the first 256 KiB.
    pub omitted_bytes: usize,
}

/// Target of `git_diff`: the repository, read.
pub fn git_diff_targets(_args: &GitDiffArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    repository_target(ctx, Access::Read)
}

/// Shows uncommitted changes as a unified diff.
#[toolcat::tool(prepare = git_diff_targets)]
pub async fn git_diff(args: GitDiffArgs, ctx: &ToolContext) -> Result<GitTextOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let context = format!("-U{}", args.context_lines.unwrap_or(3).min(100));
    let mut argv: Vec<String> = vec![
        "diff".into(),
        "--no-color".into(),
        "--no-ext-diff".into(),
        context,
    ];
    if args.staged {
        argv.push("--cached".into());
    }
    if let Some(base) = &args.base {
        argv.push(revision(base)?.to_string());
    }
    argv.push("--".into());
    if let Some(path) = &args.path {
        argv.push(git_path(&ws, path)?);
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = git(&ws, &argv).await?;
    Ok(GitTextOutput {
        text: out.stdout,
        omitted_bytes: out.omitted,
    })
}

/// Arguments of `git_log`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitLogArgs {
    /// Most commits to list; 20 when omitted, at most 200.
    #[serde(default)]
    #[schemars(range(min = 1, max = 200))]
    pub max_count: Option<u32>,
    /// Start from this revision instead of `HEAD`.
    #[serde(default)]
    pub rev: Option<String>,
    /// Only commits touching this file or directory, relative to the workspace root.
    #[serde(default)]
    pub path: Option<String>,
}

/// One commit of a log.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct LogEntry {
    /// Full commit sha.
    pub sha: String,
    /// `Name <email>` of the author.
    pub author: String,
    /// Author date, ISO 8601.
    pub date: String,
    /// First line of the message.
    pub subject: String,
}

/// Result of `git_log`.
#[derive(Debug, Serialize)]
pub struct GitLogOutput {
    /// Commits, newest first.
    pub commits: Vec<LogEntry>,
}

/// Target of `git_log`: the repository, read.
pub fn git_log_targets(_args: &GitLogArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    repository_target(ctx, Access::Read)
}

/// Lists recent commits.
#[toolcat::tool(prepare = git_log_targets)]
pub async fn git_log(args: GitLogArgs, ctx: &ToolContext) -> Result<GitLogOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let count = args.max_count.unwrap_or(20).clamp(1, 200);
    let mut argv: Vec<String> = vec![
        "log".into(),
        format!("--max-count={count}"),
        "--format=%H%x1f%an <%ae>%x1f%aI%x1f%s%x1e".into(),
    ];
    if let Some(rev) = &args.rev {
        argv.push(revision(rev)?.to_string());
    }
    argv.push("--".into());
    if let Some(path) = &args.path {
        argv.push(git_path(&ws, path)?);
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = git(&ws, &argv).await?;
    let commits = out
        .stdout
        .split('\x1e')
        .filter_map(|record| {
            let mut f = record.trim_start_matches('\n').split('\x1f');
            Some(LogEntry {
                sha: f.next().filter(|s| !s.is_empty())?.to_string(),
                author: f.next()?.to_string(),
                date: f.next()?.to_string(),
                subject: f.next()?.to_string(),
            })
        })
        .collect();
    Ok(GitLogOutput { commits })
}

/// Arguments of `git_show`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitShowArgs {
    /// Commit to show: a sha, branch, tag or expression like `HEAD~1`.
    pub rev: String,
    /// Only the changes to this file or directory, relative to the workspace root.
    #[serde(default)]
    pub path: Option<String>,
}

/// Target of `git_show`: the repository, read.
pub fn git_show_targets(_args: &GitShowArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    repository_target(ctx, Access::Read)
}

/// Shows one commit with its patch.
#[toolcat::tool(prepare = git_show_targets)]
pub async fn git_show(args: GitShowArgs, ctx: &ToolContext) -> Result<GitTextOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let rev = revision(&args.rev)?.to_string();
    let mut argv: Vec<String> = vec![
        "show".into(),
        "--no-color".into(),
        "--no-ext-diff".into(),
        "--format=fuller".into(),
        "--stat".into(),
        "--patch".into(),
        rev,
        "--".into(),
    ];
    if let Some(path) = &args.path {
        argv.push(git_path(&ws, path)?);
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = git(&ws, &argv).await?;
    Ok(GitTextOutput {
        text: out.stdout,
        omitted_bytes: out.omitted,
    })
}

/// Arguments of `git_add`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitAddArgs {
    /// Files or directories to stage, relative to the workspace root; a deleted file stages its
    /// deletion.
    #[schemars(length(min = 1))]
    pub paths: Vec<String>,
}

/// Result of `git_add`.
#[derive(Debug, Serialize)]
pub struct GitAddOutput {
    /// The staged paths, relative to the workspace root.
    pub staged: Vec<String>,
}

/// Target of `git_add`: the repository, written (the index, refs or objects).
pub fn git_add_targets(_args: &GitAddArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    repository_target(ctx, Access::Write)
}

/// Stages paths for the next commit.
#[toolcat::tool(prepare = git_add_targets)]
pub async fn git_add(args: GitAddArgs, ctx: &ToolContext) -> Result<GitAddOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    if args.paths.is_empty() {
        return Err(failed("`paths` is empty; name the files to stage"));
    }
    let paths = args
        .paths
        .iter()
        .map(|p| git_path(&ws, p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut argv = vec!["add", "--"];
    argv.extend(paths.iter().map(String::as_str));
    git(&ws, &argv).await?;
    Ok(GitAddOutput { staged: paths })
}

/// Arguments of `git_commit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitCommitArgs {
    /// Commit message: a short subject line, optionally a blank line and a body.
    pub message: String,
}

/// Result of `git_commit`.
#[derive(Debug, Serialize)]
pub struct GitCommitOutput {
    /// Full sha of the new commit.
    pub sha: String,
    /// Its subject line.
    pub subject: String,
}

/// Target of `git_commit`: the repository, written (the index, refs or objects).
pub fn git_commit_targets(
    _args: &GitCommitArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    repository_target(ctx, Access::Write)
}

/// Commits the staged changes.
#[toolcat::tool(prepare = git_commit_targets)]
pub async fn git_commit(
    args: GitCommitArgs,
    ctx: &ToolContext,
) -> Result<GitCommitOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    if args.message.trim().is_empty() {
        return Err(failed(
            "`message` is empty; describe the change in a subject line",
        ));
    }
    let message = format!("--message={}", args.message);
    git(&ws, &["commit", "--quiet", &message]).await?;
    let sha = git(&ws, &["rev-parse", "HEAD"])
        .await?
        .stdout
        .trim()
        .to_string();
    let subject = args
        .message
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    Ok(GitCommitOutput { sha, subject })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_porcelain_status_with_renames() {
        let out = "## main...origin/main [ahead 1]\0M  src/a.rs\0 M b.rs\0R  new.rs\0old.rs\0?? notes.txt\0";
        let status = parse_status(out);
        assert_eq!(status.branch, "main...origin/main [ahead 1]");
        assert_eq!(
            status.entries,
            vec![
                StatusEntry {
                    code: "M ".into(),
                    path: "src/a.rs".into(),
                    from: None
                },
                StatusEntry {
                    code: " M".into(),
                    path: "b.rs".into(),
                    from: None
                },
                StatusEntry {
                    code: "R ".into(),
                    path: "new.rs".into(),
                    from: Some("old.rs".into())
                },
                StatusEntry {
                    code: "??".into(),
                    path: "notes.txt".into(),
                    from: None
                },
            ]
        );
        assert!(!status.clean);
        assert!(parse_status("## main\0").clean);
    }

    #[test]
    fn revisions_starting_with_a_dash_are_refused() {
        assert!(revision("HEAD~2").is_ok());
        assert!(revision("v1.0").is_ok());
        for bad in ["", "--output=/tmp/x", "-p", "a b"] {
            assert!(revision(bad).is_err(), "{bad:?}");
        }
    }

    /// A repository with an identity, or `None` when git is not installed.
    async fn repo() -> Option<(tempfile::TempDir, ToolContext)> {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = Workspace::open(&ToolContext::new(dir.path())).expect("open");
        if git(&ws, &["init", "--quiet", "--initial-branch=main"])
            .await
            .is_err()
        {
            return None;
        }
        git(&ws, &["config", "user.name", "Test"])
            .await
            .expect("config");
        git(&ws, &["config", "user.email", "test@example.com"])
            .await
            .expect("config");
        git(&ws, &["config", "commit.gpgsign", "false"])
            .await
            .expect("config");
        let ctx = ToolContext::new(dir.path());
        Some((dir, ctx))
    }

    #[tokio::test]
    async fn stage_commit_log_show_and_diff_round_trip() {
        let Some((dir, ctx)) = repo().await else {
            eprintln!("git is not installed; skipping");
            return;
        };
        std::fs::write(dir.path().join("a.txt"), "one\n").expect("write");
        let status = git_status(GitStatusArgs::default(), &ctx)
            .await
            .expect("status");
        assert_eq!(
            status.entries,
            vec![StatusEntry {
                code: "??".into(),
                path: "a.txt".into(),
                from: None
            }]
        );

        let added = git_add(
            GitAddArgs {
                paths: vec!["a.txt".into()],
            },
            &ctx,
        )
        .await
        .expect("add");
        assert_eq!(added.staged, vec!["a.txt"]);
        let staged = git_diff(
            GitDiffArgs {
                staged: true,
                base: None,
                path: None,
                context_lines: None,
            },
            &ctx,
        )
        .await
        .expect("diff --cached");
        assert!(staged.text.contains("+one"), "{}", staged.text);

        let commit = git_commit(
            GitCommitArgs {
                message: "Add a\n\nBody".into(),
            },
            &ctx,
        )
        .await
        .expect("commit");
        assert_eq!(commit.sha.len(), 40);
        assert_eq!(commit.subject, "Add a");
        assert!(
            git_status(GitStatusArgs::default(), &ctx)
                .await
                .expect("status")
                .clean
        );

        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").expect("write");
        let diff = git_diff(
            GitDiffArgs {
                staged: false,
                base: None,
                path: Some("a.txt".into()),
                context_lines: Some(0),
            },
            &ctx,
        )
        .await
        .expect("diff");
        assert!(diff.text.contains("+two"), "{}", diff.text);

        let log = git_log(
            GitLogArgs {
                max_count: None,
                rev: None,
                path: None,
            },
            &ctx,
        )
        .await
        .expect("log");
        assert_eq!(log.commits.len(), 1);
        assert_eq!(log.commits[0].sha, commit.sha);
        assert_eq!(log.commits[0].author, "Test <test@example.com>");
        assert_eq!(log.commits[0].subject, "Add a");

        let show = git_show(
            GitShowArgs {
                rev: "HEAD".into(),
                path: None,
            },
            &ctx,
        )
        .await
        .expect("show");
        assert!(
            show.text.contains("Add a") && show.text.contains("+one"),
            "{}",
            show.text
        );

        let nothing = git_commit(
            GitCommitArgs {
                message: "empty".into(),
            },
            &ctx,
        )
        .await
        .expect_err("nothing staged");
        assert!(
            nothing.to_string().contains("`git commit` failed"),
            "{nothing}"
        );
        let escape = git_add(
            GitAddArgs {
                paths: vec!["../x".into()],
            },
            &ctx,
        )
        .await
        .expect_err("escape");
        assert!(matches!(escape, ToolError::OutsideWorkspace { .. }));
    }
}
