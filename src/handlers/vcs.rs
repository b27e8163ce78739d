//! The workspace's git repository: `git_status`, `git_diff`, `git_log`, `git_show`, `git_add`,
//! `git_commit`.
//!
//! Each tool runs the `git` binary (found in an absolute directory of `PATH`) with the workspace
//! root as working directory, no standard input, under a [`GIT_TIMEOUT`]. Diff and show output
//! keeps its first [`DIFF_MAX_BYTES`] bytes.
//!
//! # Threat: a hostile checkout
//!
//! The workspace may be a repository someone else prepared. Its `.git/config`, its
//! `.gitattributes`, `.git/info/attributes` and `.git/hooks/` can each name a program that git
//! runs on its own: `core.fsmonitor` on every status, `diff.<driver>.textconv` and
//! `diff.<driver>.command` on a diff, `filter.<driver>.clean`/`process` whenever a file is
//! hashed, hooks on a commit, `core.pager`, `core.editor`, `gpg.program` with `commit.gpgsign` or
//! `log.showSignature`, `core.hooksPath`, `include.path` to more of the same. The read tools are
//! silent and served over MCP, so running any of these would be code execution without approval.
//! Rule: **git runs nothing a repository configures**, and **the tools see only the workspace**.
//!
//! # What is neutralised, and why that is complete
//!
//! Git starts another program only when (a) configuration names it, (b) an environment variable
//! names it, (c) a hook file exists in `$GIT_DIR/hooks` (or `core.hooksPath`, which is
//! configuration), or (d) it runs git itself for a submodule, which then reads the submodule's
//! own configuration. Attributes only *select* a driver by name; without a driver defined in
//! configuration, `diff=x`, `filter=x` and `merge=x` fall back to git's built-in behaviour. So
//! each call ([`repo::Repo`]):
//!
//! - (b) clears the environment (`env_clear`) and sets only `PATH` (its absolute directories),
//!   `HOME` and `XDG_CONFIG_HOME` (an empty directory, so no `~/.gitconfig`,
//!   `~/.config/git/attributes` or `ignore`), `LANG=C`, `LC_ALL=C`, `GIT_CONFIG_NOSYSTEM=1`,
//!   `GIT_CONFIG_SYSTEM` and `GIT_CONFIG_GLOBAL` (an empty file), `GIT_ATTR_NOSYSTEM=1`,
//!   `GIT_TERMINAL_PROMPT=0`, `GIT_EDITOR=:` (git's "no editor"), `GIT_LITERAL_PATHSPECS=1`,
//!   `GIT_NO_LAZY_FETCH=1`, `GIT_ADVICE=0`, `GIT_OPTIONAL_LOCKS=0` for the read tools, and
//!   `--no-pager`. Gone with the rest: `GIT_EXTERNAL_DIFF`, `GIT_PAGER`, `PAGER`, `EDITOR`,
//!   `GIT_SSH*`, `GIT_ASKPASS`, `GIT_EXEC_PATH`, `GIT_CONFIG_PARAMETERS`/`GIT_CONFIG_COUNT`,
//!   `GIT_DIR`-style variables. `git_commit` alone passes through `GIT_AUTHOR_*` and
//!   `GIT_COMMITTER_*` name, email and date (values).
//! - (a, c) replaces the repository's git directory by a private *shadow* git directory (a new
//!   temporary directory per call): `GIT_DIR=SHADOW`, `GIT_OBJECT_DIRECTORY=REAL/objects`,
//!   `GIT_INDEX_FILE=REAL/index`, `GIT_WORK_TREE=TOP`. The shadow holds a copy of `HEAD`, links to
//!   the real `objects`, `refs`, `packed-refs`, `logs`, `reftable`, `shallow` and `sharedindex.*`,
//!   no `hooks/`, no `info/`, no `config.worktree`, and a generated `config`. That config holds
//!   only the format keys of the real one (`core.repositoryformatversion`,
//!   `extensions.objectformat`, `extensions.refstorage`, `core.filemode`, `core.symlinks`,
//!   `core.ignorecase`, `core.precomposeunicode`, `core.trustctime`, `core.checkstat`,
//!   `core.autocrlf`, `core.eol`, `core.safecrlf`, `core.logallrefupdates`), each checked to be one
//!   of the words git accepts there; `gc.auto=0`, `maintenance.auto=false` and
//!   `core.splitindex=false` (nothing is written into the shadow, where it would be lost); and for
//!   `git_commit` `user.name` and `user.email` from the repository's and the user's global config
//!   (read as files by `git config --file F --no-includes --list`, never as git's config), with
//!   `user.useconfigonly=true`. System, global, repository, worktree and command-line
//!   configuration are all replaced, and no include is followed, so no key that names a command
//!   (whatever its driver name) reaches git; with no `core.hooksPath` and no `hooks/`, no hook
//!   exists.
//! - (d) submodules are never entered: `git_status` and `git_diff` pass
//!   `--ignore-submodules=dirty` (git then compares a submodule's commit from its files, without
//!   running `git status` inside it); `git_commit` checks for staged changes itself, so git never
//!   prints a status; `git_add` refuses paths that cover a populated submodule (git would run
//!   `git status` in it). `--no-ext-diff` and `--no-textconv` on diffs are kept as a second belt.
//!
//! What remains is the git binary and what it does with data: reading objects, refs and the
//! index. Git's `safe.directory` ownership check does not apply with an explicit `GIT_DIR`, and
//! is not needed: it keeps another user's configuration from running, and none runs. Costs of the
//! rule: files under a clean filter (Git LFS) are compared unfiltered, the user's global ignore
//! file and `GIT_CEILING_DIRECTORIES` are not read, and each call starts one more git process (to
//! read the real config).
//!
//! # What the tools see: the workspace only
//!
//! The repository is the first folder from the workspace root upwards that holds `.git`. Refused,
//! each with an error naming the fix: a `.git` file or symbolic link whose git directory is outside
//! the workspace (a linked worktree, a submodule); a linked worktree's git directory; an entry of
//! the git directory that leads outside it; a symbolic link anywhere inside `objects/` (fan-out
//! folders, loose objects, `pack/`, `info/`), `refs/`, `logs/` or `reftable/`, or at
//! `packed-refs`, `shallow`, `sharedindex.*`, `index` or `HEAD` (git never creates one there, and
//! follows one: a link to another repository's objects or refs would let `git_show` read it);
//! borrowed objects (`objects/info/alternates`); `core.worktree` naming another folder than the
//! one that holds `.git`; `git_commit` during a merge, cherry-pick, revert or rebase. The link
//! check lists those trees without following links and only `lstat`s (never opens) what they
//! hold, so each call costs one directory listing per folder: proportional to the loose objects,
//! refs and reflogs (a `git gc` packs them).
//!
//! When the workspace is a folder inside the repository, every command is limited to it: the
//! working directory is the workspace, diffs and logs are limited to the pathspec `.` (diffs with
//! `--relative`), status lists only entries inside the workspace with paths relative to it, and
//! `git_commit` refuses while changes outside the workspace are staged. Revisions: a leading `-`
//! and whitespace are refused; `:/text` (a search of every commit message) is refused; the path
//! of `REV:path`, `:path` and `:N:path` is taken relative to the workspace (`./` and `../`
//! included), resolved by name (tree lookups follow no symbolic links), refused when it leaves the
//! workspace and rewritten to the path from the repository's top level; in a workspace below the
//! top level every revision must name a commit (not a tree or blob by id, which could be any
//! folder's). Path arguments go through [`Workspace::target`] (no `..` out, no absolute path
//! elsewhere, no symbolic link out) and are passed as literal pathspecs, so `:(top)` or `:/` are
//! file names, not magic.

mod repo;

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolcat::{Access, Target, ToolContext, ToolError};

use super::failed;
use super::shell::Capture;
use repo::{Mode, Repo};
use toolcat_tools::workspace::Workspace;

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

/// Runs `git ARGS` through `repo` and keeps the first [`DIFF_MAX_BYTES`] of its output.
async fn git(repo: &Repo, args: &[&str]) -> Result<GitOutput, ToolError> {
    let stdout = repo.run(args).await?;
    let mut capture = Capture::new(DIFF_MAX_BYTES, 0);
    capture.push(&stdout);
    let omitted = capture.omitted();
    let stdout = if omitted == 0 {
        String::from_utf8_lossy(&stdout).into_owned()
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

/// A revision split where git splits it: the part that names an object and the path inside it.
#[derive(Debug, PartialEq, Eq)]
enum RevSpec<'a> {
    /// A commit-ish or a range (`HEAD~2`, `main..topic`, `v1.0^{/fix}`).
    Plain(&'a str),
    /// `REV:path`: a file or folder of a commit's tree.
    Tree { rev: &'a str, path: &'a str },
    /// `:path` or `:N:path`: an entry of the index, at stage `N`.
    Index { stage: Option<char>, path: &'a str },
}

/// Parses a checked revision ([`revision`]) like git does: a leading `:` is the index (`:/text`,
/// a search of every commit message, is refused), else the first `:` outside `{...}` ends the
/// object part.
fn parse_revision(rev: &str) -> Result<RevSpec<'_>, ToolError> {
    let rev = revision(rev)?;
    if let Some(rest) = rev.strip_prefix(':') {
        if rest.starts_with('/') {
            return Err(failed(format!(
                "`{rev}` searches every commit message of the repository; name the commit by \
                 sha, branch or tag"
            )));
        }
        let mut chars = rest.chars();
        return Ok(match (chars.next(), chars.next()) {
            (Some(n @ '0'..='3'), Some(':')) => RevSpec::Index {
                stage: Some(n),
                path: &rest[2..],
            },
            _ => RevSpec::Index {
                stage: None,
                path: rest,
            },
        });
    }
    let mut depth = 0usize;
    for (i, c) in rev.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            ':' if depth == 0 => {
                return Ok(RevSpec::Tree {
                    rev: &rev[..i],
                    path: &rev[i + 1..],
                })
            }
            _ => {}
        }
    }
    Ok(RevSpec::Plain(rev))
}

/// The path of `REV:path` or `:path`, named relative to the workspace root, as a `/`-separated
/// path relative to it (`""` for the root): `.` and `..` are resolved by name, since a tree or
/// index lookup follows no symbolic link; an absolute path must lie inside the workspace.
///
/// # Errors
/// [`ToolError::OutsideWorkspace`] when the path leaves the workspace.
fn tree_path(ws: &Workspace, path: &str) -> Result<String, ToolError> {
    let outside = || ToolError::OutsideWorkspace {
        path: path.to_string(),
        workspace: ws.root().display().to_string(),
    };
    let relative = if std::path::Path::new(path).is_absolute() {
        let rel = std::path::Path::new(path)
            .strip_prefix(ws.root())
            .map_err(|_| outside())?;
        ws.relative(&ws.root().join(rel))
    } else {
        path.to_string()
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop().ok_or_else(outside)?;
            }
            name => parts.push(name),
        }
    }
    Ok(parts.join("/"))
}

/// A revision argument as git is to see it: checked and parsed ([`parse_revision`]), its path
/// confined to the workspace and rewritten from the repository's top level ([`tree_path`]); in a
/// workspace below the top level, the object part must name a commit (each end of a range).
///
/// # Errors
/// As [`parse_revision`] and [`tree_path`]; a message when the object part is not a commit.
async fn revision_arg(ws: &Workspace, repo: &Repo, rev: &str) -> Result<String, ToolError> {
    let (object, rewritten) = match parse_revision(rev)? {
        RevSpec::Plain(object) => (Some(object), object.to_string()),
        RevSpec::Tree { rev: object, path } => {
            let path = repo.repo_path(&tree_path(ws, path)?);
            (Some(object), format!("{object}:{path}"))
        }
        RevSpec::Index { stage, path } => {
            let path = repo.repo_path(&tree_path(ws, path)?);
            if path.is_empty() {
                return Err(failed(format!(
                    "`{rev}` names no file; pass `:PATH` with a file relative to the workspace"
                )));
            }
            let stage = stage.map(|n| format!("{n}:")).unwrap_or_default();
            (None, format!(":{stage}{path}"))
        }
    };
    if let Some(object) = object.filter(|_| !repo.prefix().is_empty()) {
        let ends = object
            .split("...")
            .flat_map(|part| part.split(".."))
            .map(|end| end.trim_start_matches('^'))
            .filter(|end| !end.is_empty());
        for end in ends {
            if !repo.is_commit(end).await? {
                return Err(failed(format!(
                    "`{rev}` does not name a commit; the workspace is the folder `{}` of its \
                     repository, so revisions must be commits (files as `REV:path`, relative to \
                     the workspace), not trees or blobs by id",
                    repo.prefix()
                )));
            }
        }
    }
    Ok(rewritten)
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
#[derive(Debug, Serialize, PartialEq, Eq, JsonSchema)]
pub struct StatusEntry {
    /// Two-letter status code of `git status --porcelain`: index then working tree (`M ` staged
    /// change, ` M` unstaged change, `??` untracked, `A ` added, `D ` deleted, `R ` renamed).
    pub code: String,
    /// Path, relative to the workspace root.
    pub path: String,
    /// Former path of a rename or copy, when it is inside the workspace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// Result of `git_status`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GitStatusOutput {
    /// Branch line: `main`, `main...origin/main [ahead 1]`, or `HEAD (no branch)`.
    pub branch: String,
    /// Changed, staged and untracked paths inside the workspace.
    pub entries: Vec<StatusEntry>,
    /// Nothing to commit and nothing untracked inside the workspace.
    pub clean: bool,
}

/// Parses `git status --porcelain=v1 -b -z` output (paths from the repository's top level).
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
    let repo = Repo::open(&ws, Mode::Read).await?;
    let out = git(
        &repo,
        &[
            "status",
            "--porcelain=v1",
            "-b",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=dirty",
            "--",
            ".",
        ],
    )
    .await?;
    let mut status = parse_status(&out.stdout);
    status.entries = status
        .entries
        .into_iter()
        .filter_map(|entry| {
            Some(StatusEntry {
                path: repo.workspace_path(&entry.path)?,
                from: entry.from.and_then(|from| repo.workspace_path(&from)),
                code: entry.code,
            })
        })
        .collect();
    status.clean = status.entries.is_empty();
    Ok(status)
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
#[derive(Debug, Serialize, JsonSchema)]
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

/// Shows uncommitted changes as a unified diff, paths relative to the workspace.
#[toolcat::tool(prepare = git_diff_targets)]
pub async fn git_diff(args: GitDiffArgs, ctx: &ToolContext) -> Result<GitTextOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let repo = Repo::open(&ws, Mode::Read).await?;
    let context = format!("-U{}", args.context_lines.unwrap_or(3).min(100));
    let mut argv: Vec<String> = vec![
        "diff".into(),
        "--no-color".into(),
        "--no-ext-diff".into(),
        "--no-textconv".into(),
        "--ignore-submodules=dirty".into(),
        "--relative".into(),
        context,
    ];
    if args.staged {
        argv.push("--cached".into());
    }
    if let Some(base) = &args.base {
        argv.push(revision_arg(&ws, &repo, base).await?);
    }
    argv.push("--".into());
    argv.push(match &args.path {
        Some(path) => git_path(&ws, path)?,
        None => ".".into(),
    });
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = git(&repo, &argv).await?;
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
#[derive(Debug, Serialize, PartialEq, Eq, JsonSchema)]
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
#[derive(Debug, Serialize, JsonSchema)]
pub struct GitLogOutput {
    /// Commits, newest first.
    pub commits: Vec<LogEntry>,
}

/// Target of `git_log`: the repository, read.
pub fn git_log_targets(_args: &GitLogArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    repository_target(ctx, Access::Read)
}

/// Lists recent commits that touch the workspace.
#[toolcat::tool(prepare = git_log_targets)]
pub async fn git_log(args: GitLogArgs, ctx: &ToolContext) -> Result<GitLogOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let repo = Repo::open(&ws, Mode::Read).await?;
    let count = args.max_count.unwrap_or(20).clamp(1, 200);
    let mut argv: Vec<String> = vec![
        "log".into(),
        format!("--max-count={count}"),
        "--format=%H%x1f%an <%ae>%x1f%aI%x1f%s%x1e".into(),
    ];
    if let Some(rev) = &args.rev {
        argv.push(revision_arg(&ws, &repo, rev).await?);
    }
    argv.push("--".into());
    argv.push(match &args.path {
        Some(path) => git_path(&ws, path)?,
        None => ".".into(),
    });
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = git(&repo, &argv).await?;
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
    /// Commit to show: a sha, branch, tag or expression like `HEAD~1`; or `REV:path` for a file
    /// at that commit, the path relative to the workspace root.
    pub rev: String,
    /// Only the changes to this file or directory, relative to the workspace root.
    #[serde(default)]
    pub path: Option<String>,
}

/// Target of `git_show`: the repository, read.
pub fn git_show_targets(_args: &GitShowArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    repository_target(ctx, Access::Read)
}

/// Shows one commit with its patch, limited to the workspace.
#[toolcat::tool(prepare = git_show_targets)]
pub async fn git_show(args: GitShowArgs, ctx: &ToolContext) -> Result<GitTextOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let repo = Repo::open(&ws, Mode::Read).await?;
    let rev = revision_arg(&ws, &repo, &args.rev).await?;
    let path = match &args.path {
        Some(path) => git_path(&ws, path)?,
        None => ".".into(),
    };
    let argv = [
        "show",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--relative",
        "--format=fuller",
        "--stat",
        "--patch",
        &rev,
        "--",
        &path,
    ];
    let out = git(&repo, &argv).await?;
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
#[derive(Debug, Serialize, JsonSchema)]
pub struct GitAddOutput {
    /// The staged paths, relative to the workspace root.
    pub staged: Vec<String>,
}

/// Target of `git_add`: the repository, written (the index, refs or objects).
pub fn git_add_targets(_args: &GitAddArgs, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    repository_target(ctx, Access::Write)
}

/// Stages paths for the next commit. Paths that cover a populated submodule are refused: git
/// would run `git status` inside it, with that repository's own configuration.
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
    let repo = Repo::open(&ws, Mode::Stage).await?;
    let mut argv = vec!["ls-files", "--stage", "-z", "--"];
    argv.extend(paths.iter().map(String::as_str));
    let listing = repo.run(&argv).await?;
    let submodules: Vec<String> = String::from_utf8_lossy(&listing)
        .split('\0')
        .filter_map(|entry| {
            let (meta, path) = entry.split_once('\t')?;
            meta.starts_with("160000 ").then(|| path.to_string())
        })
        .filter(|path| std::fs::symlink_metadata(ws.root().join(path).join(".git")).is_ok())
        .collect();
    if !submodules.is_empty() {
        return Err(failed(format!(
            "`paths` cover the submodule(s) {}; staging them would run git inside them with their \
             own configuration: name the files outside them, or stage a submodule with `git add` \
             in a terminal",
            submodules
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut argv = vec!["add", "--"];
    argv.extend(paths.iter().map(String::as_str));
    repo.run(&argv).await?;
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
#[derive(Debug, Serialize, JsonSchema)]
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

/// Commits the staged changes. Refused when nothing is staged, or when changes outside the
/// workspace are staged (the commit would record them too).
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
    let repo = Repo::open(&ws, Mode::Commit).await?;
    // Whole repository, from the top level: what the commit would record.
    let staged = repo
        .run(&[
            "diff",
            "--cached",
            "--name-only",
            "--no-renames",
            "-z",
            "--ignore-submodules=dirty",
        ])
        .await?;
    let staged = String::from_utf8_lossy(&staged);
    let staged: Vec<&str> = staged.split('\0').filter(|p| !p.is_empty()).collect();
    if staged.is_empty() {
        return Err(failed(
            "nothing is staged to commit; stage changes with `git_add` first",
        ));
    }
    let outside = staged
        .iter()
        .filter(|path| repo.workspace_path(path).is_none())
        .count();
    if outside > 0 {
        return Err(failed(format!(
            "{outside} staged change(s) lie outside the workspace `{}`, and a commit records \
             every staged change: unstage them with `git restore --staged PATH` in a terminal, or \
             open the repository's top level as the workspace",
            ws.root().display()
        )));
    }
    let message = format!("--message={}", args.message);
    repo.run(&["commit", "--quiet", &message]).await?;
    let sha = String::from_utf8_lossy(&repo.run(&["rev-parse", "HEAD"]).await?)
        .trim()
        .to_string();
    repo.write_back_head(&sha)?;
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
        if !fixture::installed() {
            return None;
        }
        fixture::init(dir.path());
        let ctx = ToolContext::new(dir.path());
        Some((dir, ctx))
    }

    #[test]
    fn revisions_split_where_git_splits_them() {
        assert_eq!(parse_revision("HEAD~2").unwrap(), RevSpec::Plain("HEAD~2"));
        assert_eq!(
            parse_revision("HEAD:../secret.txt").unwrap(),
            RevSpec::Tree {
                rev: "HEAD",
                path: "../secret.txt"
            }
        );
        assert_eq!(
            parse_revision("HEAD^{/fix:it}:a").unwrap(),
            RevSpec::Tree {
                rev: "HEAD^{/fix:it}",
                path: "a"
            }
        );
        assert_eq!(
            parse_revision(":2:src/a.rs").unwrap(),
            RevSpec::Index {
                stage: Some('2'),
                path: "src/a.rs"
            }
        );
        assert_eq!(
            parse_revision(":./a").unwrap(),
            RevSpec::Index {
                stage: None,
                path: "./a"
            }
        );
        let search = parse_revision(":/fix").expect_err("message search");
        assert!(search.to_string().contains("commit message"), "{search}");
    }

    #[test]
    fn tree_paths_resolve_by_name_inside_the_workspace() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = Workspace::open(&ToolContext::new(dir.path())).expect("open");
        assert_eq!(tree_path(&ws, "./src/../a.rs").unwrap(), "a.rs");
        assert_eq!(tree_path(&ws, "").unwrap(), "");
        let inside = ws.root().join("src/x.rs");
        assert_eq!(
            tree_path(&ws, &inside.to_string_lossy()).unwrap(),
            "src/x.rs"
        );
        for bad in ["..", "../secret.txt", "src/../../x", "/etc/passwd"] {
            let err = tree_path(&ws, bad).expect_err(bad);
            assert!(
                matches!(err, ToolError::OutsideWorkspace { .. }),
                "{bad}: {err}"
            );
        }
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
            nothing.to_string().contains("nothing is staged"),
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

/// Setting up repositories for tests with the real `git`, isolated from the developer's own
/// configuration.
#[cfg(test)]
mod fixture {
    use std::path::Path;
    use std::process::Command;

    /// Whether `git` runs here; tests that need it say so and skip when it does not.
    pub fn installed() -> bool {
        Command::new("git")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// `git ARGS` in `dir` with no system or global configuration; its output, whatever the exit.
    pub fn run(dir: &Path, args: &[&str]) -> std::process::Output {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "Setup")
            .env("GIT_AUTHOR_EMAIL", "setup@example.com")
            .env("GIT_COMMITTER_NAME", "Setup")
            .env("GIT_COMMITTER_EMAIL", "setup@example.com")
            .env("GIT_PAGER", "")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run git")
    }

    /// `git ARGS` in `dir` that must succeed; its standard output.
    pub fn ok(dir: &Path, args: &[&str]) -> String {
        let out = run(dir, args);
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `git init` in `dir` with a local identity (`Test <test@example.com>`), signing off.
    pub fn init(dir: &Path) {
        ok(dir, &["init", "--quiet", "--initial-branch=main"]);
        ok(dir, &["config", "user.name", "Test"]);
        ok(dir, &["config", "user.email", "test@example.com"]);
        ok(dir, &["config", "commit.gpgsign", "false"]);
    }

    /// Writes `path` (relative to `dir`, parents created) with `text`.
    pub fn write(dir: &Path, path: &str, text: &str) {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// Commits everything in `dir` with `message`.
    pub fn commit_all(dir: &Path, message: &str) {
        ok(dir, &["add", "--all"]);
        ok(dir, &["commit", "--quiet", "--no-verify", "-m", message]);
    }
}

/// A hostile checkout: a repository whose configuration, attributes or hooks name a command, and
/// a workspace below a repository. Each command would create a marker file outside the
/// repository; each test first shows with plain `git` that the command is live (the marker
/// appears), then runs the tools and checks that the marker never appears.
#[cfg(test)]
mod hostile {
    use std::path::{Path, PathBuf};

    use super::fixture::{self, commit_all, ok, write};
    use super::*;

    /// A file that a hostile command creates.
    struct Marker {
        _dir: tempfile::TempDir,
        path: PathBuf,
    }

    impl Marker {
        fn new() -> Marker {
            let dir = tempfile::tempdir().expect("marker dir");
            let path = dir.path().join("pwned");
            Marker { _dir: dir, path }
        }

        /// A shell command that creates the marker.
        fn command(&self) -> String {
            format!("touch '{}'", self.path.display())
        }

        /// An executable script at `at` that creates the marker and succeeds, printing `stdout`.
        fn script(&self, at: &Path, stdout: &str) {
            let body = format!(
                "#!/bin/sh\n{}\nprintf '%s' '{stdout}'\nexit 0\n",
                self.command()
            );
            std::fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
            std::fs::write(at, body).expect("script");
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(at, std::fs::Permissions::from_mode(0o755))
                    .expect("chmod");
            }
        }

        fn fired(&self) -> bool {
            self.path.exists()
        }

        /// Plain `git ARGS` in `dir` creates the marker: the hostile setup is live. Clears it.
        fn assert_live(&self, dir: &Path, args: &[&str]) {
            let _ = fixture::run(dir, args);
            assert!(
                self.fired(),
                "setup: plain `git {args:?}` should run the hostile command"
            );
            std::fs::remove_file(&self.path).expect("clear marker");
        }

        fn assert_not_fired(&self, after: &str) {
            assert!(
                !self.fired(),
                "{after} ran a command the repository configures"
            );
        }
    }

    /// A repository with `a.txt` committed, or `None` (and a note) when git is not installed.
    fn repo() -> Option<tempfile::TempDir> {
        if !fixture::installed() {
            eprintln!("git is not installed; skipping");
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        fixture::init(dir.path());
        write(dir.path(), "a.txt", "one\n");
        commit_all(dir.path(), "first");
        Some(dir)
    }

    fn diff_args(staged: bool) -> GitDiffArgs {
        GitDiffArgs {
            staged,
            base: None,
            path: None,
            context_lines: None,
        }
    }

    fn show_args(rev: &str) -> GitShowArgs {
        GitShowArgs {
            rev: rev.into(),
            path: None,
        }
    }

    fn log_args() -> GitLogArgs {
        GitLogArgs {
            max_count: None,
            rev: None,
            path: None,
        }
    }

    /// Runs every git tool on `dir` (changing and committing `a.txt`) and checks after each that
    /// the marker is absent; the read tools must succeed, and so must the commit. Returns the
    /// commit's sha.
    async fn every_tool(dir: &Path, marker: &Marker) -> String {
        let ctx = ToolContext::new(dir);
        // A changed file whose size stays the same: git hashes it (through a clean filter).
        write(dir, "a.txt", "two\n");
        let status = git_status(GitStatusArgs::default(), &ctx)
            .await
            .expect("git_status");
        marker.assert_not_fired("git_status");
        assert!(!status.clean, "{status:?}");
        let diff = git_diff(diff_args(false), &ctx).await.expect("git_diff");
        marker.assert_not_fired("git_diff");
        assert!(diff.text.contains("+two"), "{}", diff.text);
        git_log(log_args(), &ctx).await.expect("git_log");
        marker.assert_not_fired("git_log");
        let show = git_show(show_args("HEAD"), &ctx).await.expect("git_show");
        marker.assert_not_fired("git_show");
        assert!(show.text.starts_with("commit "), "{}", show.text);
        git_add(
            GitAddArgs {
                paths: vec!["a.txt".into()],
            },
            &ctx,
        )
        .await
        .expect("git_add");
        marker.assert_not_fired("git_add");
        git_diff(diff_args(true), &ctx)
            .await
            .expect("git_diff staged");
        marker.assert_not_fired("git_diff --cached");
        let commit = git_commit(
            GitCommitArgs {
                message: "Change a".into(),
            },
            &ctx,
        )
        .await
        .expect("git_commit");
        marker.assert_not_fired("git_commit");
        // The commit landed in the real repository.
        assert_eq!(ok(dir, &["rev-parse", "HEAD"]).trim(), commit.sha);
        assert_eq!(ok(dir, &["log", "-1", "--format=%s"]).trim(), "Change a");
        commit.sha
    }

    #[tokio::test]
    async fn fsmonitor_of_the_repository_never_runs() {
        let Some(dir) = repo() else { return };
        let marker = Marker::new();
        ok(
            dir.path(),
            &[
                "config",
                "core.fsmonitor",
                &format!("{}; false", marker.command()),
            ],
        );
        marker.assert_live(dir.path(), &["status"]);
        every_tool(dir.path(), &marker).await;
    }

    #[tokio::test]
    async fn textconv_of_a_diff_driver_never_runs() {
        let Some(dir) = repo() else { return };
        let marker = Marker::new();
        write(dir.path(), ".gitattributes", "*.txt diff=hostile\n");
        write(dir.path(), "a.txt", "one\nmore\n");
        commit_all(dir.path(), "attributes");
        ok(
            dir.path(),
            &[
                "config",
                "diff.hostile.textconv",
                &format!("{}; cat", marker.command()),
            ],
        );
        marker.assert_live(dir.path(), &["show", "HEAD"]);
        write(dir.path(), "a.txt", "one\n");
        commit_all(dir.path(), "back to one");
        std::fs::remove_file(&marker.path).ok();
        every_tool(dir.path(), &marker).await;
    }

    #[tokio::test]
    async fn clean_and_process_filters_never_run() {
        for key in ["filter.hostile.clean", "filter.hostile.process"] {
            let Some(dir) = repo() else { return };
            let marker = Marker::new();
            write(dir.path(), ".gitattributes", "*.txt filter=hostile\n");
            commit_all(dir.path(), "attributes");
            ok(
                dir.path(),
                &["config", key, &format!("{}; cat", marker.command())],
            );
            write(dir.path(), "b.txt", "new\n");
            marker.assert_live(dir.path(), &["add", "b.txt"]);
            ok(dir.path(), &["rm", "--quiet", "--cached", "b.txt"]);
            std::fs::remove_file(dir.path().join("b.txt")).expect("rm");
            std::fs::remove_file(&marker.path).ok();
            every_tool(dir.path(), &marker).await;
        }
    }

    #[tokio::test]
    async fn external_diff_commands_never_run() {
        for (key, attributes) in [
            ("diff.external", None),
            ("diff.hostile.command", Some("*.txt diff=hostile\n")),
        ] {
            let Some(dir) = repo() else { return };
            let marker = Marker::new();
            if let Some(attributes) = attributes {
                write(dir.path(), ".gitattributes", attributes);
                commit_all(dir.path(), "attributes");
            }
            let script = dir.path().join(".git/ext-diff");
            marker.script(&script, "");
            ok(dir.path(), &["config", key, &script.to_string_lossy()]);
            write(dir.path(), "a.txt", "two\n");
            marker.assert_live(dir.path(), &["diff"]);
            every_tool(dir.path(), &marker).await;
        }
    }

    #[tokio::test]
    async fn hooks_never_run_and_the_commit_lands() {
        for hooks_path in [None, Some("githooks")] {
            let Some(dir) = repo() else { return };
            let marker = Marker::new();
            let hooks = match hooks_path {
                Some(path) => {
                    ok(dir.path(), &["config", "core.hooksPath", path]);
                    dir.path().join(path)
                }
                None => dir.path().join(".git/hooks"),
            };
            for hook in [
                "pre-commit",
                "prepare-commit-msg",
                "commit-msg",
                "post-commit",
                "post-index-change",
            ] {
                marker.script(&hooks.join(hook), "");
            }
            write(dir.path(), "c.txt", "c\n");
            ok(dir.path(), &["add", "c.txt"]);
            marker.assert_live(dir.path(), &["commit", "--quiet", "-m", "c"]);
            every_tool(dir.path(), &marker).await;
        }
    }

    #[tokio::test]
    async fn pager_editor_and_signing_programs_never_run() {
        let Some(dir) = repo() else { return };
        let marker = Marker::new();
        // A "gpg" that signs anything (and creates the marker), to record a signed commit.
        let gpg = dir.path().join(".git/fake-gpg");
        let body = format!(
            "#!/bin/sh\n{}\necho >&2; echo '[GNUPG:] SIG_CREATED ' >&2\n\
             echo '-----BEGIN PGP SIGNATURE-----'; echo; echo x; \
             echo '-----END PGP SIGNATURE-----'\n",
            marker.command()
        );
        std::fs::write(&gpg, body).expect("gpg");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&gpg, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let gpg = gpg.to_string_lossy().into_owned();
        ok(dir.path(), &["config", "gpg.program", &gpg]);
        write(dir.path(), "s.txt", "signed\n");
        ok(dir.path(), &["add", "s.txt"]);
        ok(dir.path(), &["commit", "--quiet", "-S", "-m", "signed"]);
        std::fs::remove_file(&marker.path).ok();
        let command = marker.command();
        for (key, value) in [
            ("log.showSignature", "true"),
            ("commit.gpgsign", "true"),
            ("core.pager", command.as_str()),
            ("pager.log", command.as_str()),
            ("pager.show", command.as_str()),
            ("core.editor", command.as_str()),
            ("sequence.editor", command.as_str()),
        ] {
            ok(dir.path(), &["config", key, value]);
        }
        marker.assert_live(dir.path(), &["log", "-1"]);
        let sha = every_tool(dir.path(), &marker).await;
        let raw = ok(dir.path(), &["cat-file", "commit", &sha]);
        assert!(!raw.contains("gpgsig"), "the commit was signed: {raw}");
    }

    #[tokio::test]
    async fn included_config_never_applies() {
        let Some(dir) = repo() else { return };
        let marker = Marker::new();
        let other = dir.path().join("other.config");
        std::fs::write(
            &other,
            format!("[core]\n\tfsmonitor = \"{}; false\"\n", marker.command()),
        )
        .expect("write");
        ok(
            dir.path(),
            &["config", "include.path", &other.to_string_lossy()],
        );
        ok(
            dir.path(),
            &[
                "config",
                "includeIf.gitdir:/.path",
                &other.to_string_lossy(),
            ],
        );
        marker.assert_live(dir.path(), &["status"]);
        every_tool(dir.path(), &marker).await;
    }

    #[tokio::test]
    async fn info_attributes_select_no_driver() {
        let Some(dir) = repo() else { return };
        let marker = Marker::new();
        write(
            dir.path(),
            ".git/info/attributes",
            "* diff=hostile filter=hostile\n",
        );
        let command = format!("{}; cat", marker.command());
        ok(dir.path(), &["config", "diff.hostile.textconv", &command]);
        ok(dir.path(), &["config", "filter.hostile.clean", &command]);
        marker.assert_live(dir.path(), &["show", "HEAD"]);
        every_tool(dir.path(), &marker).await;
    }

    #[tokio::test]
    async fn submodule_configuration_never_runs() {
        let Some(dir) = repo() else { return };
        let marker = Marker::new();
        let sub = tempfile::tempdir().expect("sub");
        fixture::init(sub.path());
        write(sub.path(), "s.txt", "s\n");
        commit_all(sub.path(), "sub");
        ok(
            dir.path(),
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "--quiet",
                "add",
                &sub.path().to_string_lossy(),
                "sub",
            ],
        );
        commit_all(dir.path(), "add sub");
        ok(
            &dir.path().join("sub"),
            &[
                "config",
                "core.fsmonitor",
                &format!("{}; false", marker.command()),
            ],
        );
        write(dir.path(), "sub/dirty.txt", "dirty\n");
        marker.assert_live(dir.path(), &["status"]);
        let ctx = ToolContext::new(dir.path());
        let refused = git_add(
            GitAddArgs {
                paths: vec![".".into()],
            },
            &ctx,
        )
        .await
        .expect_err("a path covering a submodule");
        assert!(
            refused.to_string().contains("submodule(s) `sub`"),
            "{refused}"
        );
        marker.assert_not_fired("git_add .");
        every_tool(dir.path(), &marker).await;
    }

    #[tokio::test]
    async fn core_worktree_outside_the_workspace_is_refused() {
        let Some(dir) = repo() else { return };
        let elsewhere = tempfile::tempdir().expect("elsewhere");
        ok(
            dir.path(),
            &[
                "config",
                "core.worktree",
                &elsewhere.path().to_string_lossy(),
            ],
        );
        let ctx = ToolContext::new(dir.path());
        let err = git_status(GitStatusArgs::default(), &ctx)
            .await
            .expect_err("core.worktree outside");
        let text = err.to_string();
        assert!(
            text.contains("`core.worktree`")
                && text.contains("outside the workspace")
                && text.contains("git config --unset core.worktree"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_git_file_pointing_outside_the_workspace_is_refused() {
        let Some(main) = repo() else { return };
        let ws = tempfile::tempdir().expect("workspace");
        std::fs::write(
            ws.path().join(".git"),
            format!("gitdir: {}\n", main.path().join(".git").display()),
        )
        .expect("write .git");
        let ctx = ToolContext::new(ws.path());
        let err = git_log(log_args(), &ctx)
            .await
            .expect_err(".git file outside");
        let text = err.to_string();
        assert!(
            text.contains("outside the workspace") && text.contains("open the main worktree"),
            "{text}"
        );
        // A linked worktree is a `.git` file too.
        let linked = main.path().join("linked");
        ok(
            main.path(),
            &["worktree", "add", "--quiet", &linked.to_string_lossy()],
        );
        let err = git_status(GitStatusArgs::default(), &ToolContext::new(&linked))
            .await
            .expect_err("linked worktree");
        assert!(err.to_string().contains("outside the workspace"), "{err}");
    }

    #[tokio::test]
    async fn links_out_of_the_git_directory_are_refused() {
        let Some(dir) = repo() else { return };
        let Some(other) = repo() else { return };
        let objects = dir.path().join(".git/objects");
        std::fs::rename(&objects, dir.path().join("objects.bak")).expect("move");
        #[cfg(unix)]
        std::os::unix::fs::symlink(other.path().join(".git/objects"), &objects).expect("link");
        let err = git_log(log_args(), &ToolContext::new(dir.path()))
            .await
            .expect_err("objects elsewhere");
        assert!(
            err.to_string().contains("leads outside the git directory"),
            "{err}"
        );
    }

    /// Another repository with `s.txt` holding `OTHERSECRET` committed on `main`.
    fn other_repo() -> Option<tempfile::TempDir> {
        let other = repo()?;
        write(other.path(), "s.txt", "OTHERSECRET\n");
        commit_all(other.path(), "othersecret");
        Some(other)
    }

    #[cfg(unix)]
    fn symlink(target: &Path, at: &Path) {
        std::os::unix::fs::symlink(target, at).expect("link");
    }

    /// Links `refs/heads/stolen` of `dir` to the `main` branch file of `other`.
    #[cfg(unix)]
    fn link_stolen_ref(dir: &Path, other: &Path) {
        symlink(
            &other.join(".git/refs/heads/main"),
            &dir.join(".git/refs/heads/stolen"),
        );
    }

    /// `git_log` of `rev` and `git_show` of `show` on `dir` are both refused, naming a symbolic
    /// link at `link` (a path relative to `.git`, or its start) and the fix.
    #[cfg(unix)]
    async fn both_refuse_the_link(dir: &Path, rev: &str, show: &str, link: &str) {
        let ctx = ToolContext::new(dir);
        let log = GitLogArgs {
            rev: Some(rev.into()),
            ..log_args()
        };
        let errors = [
            git_log(log, &ctx).await.expect_err("git_log").to_string(),
            git_show(show_args(show), &ctx)
                .await
                .expect_err("git_show")
                .to_string(),
        ];
        for text in errors {
            assert!(
                text.contains(&format!("/.git/{link}"))
                    && text.contains("` is a symbolic link inside the git directory `")
                    && text.contains("replace the symbolic link with a copy")
                    && !text.contains("OTHERSECRET"),
                "{text}"
            );
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn links_to_another_repositorys_loose_objects_and_refs_are_refused() {
        let (Some(dir), Some(other)) = (repo(), other_repo()) else {
            return;
        };
        let objects = other.path().join(".git/objects");
        for fan_out in std::fs::read_dir(&objects).expect("list objects").flatten() {
            let name = fan_out.file_name();
            let at = dir.path().join(".git/objects").join(&name);
            if name.len() == 2 && !at.exists() {
                symlink(&fan_out.path(), &at);
            }
        }
        link_stolen_ref(dir.path(), other.path());
        // Plain git follows the links: the setup is live.
        assert_eq!(ok(dir.path(), &["show", "stolen:s.txt"]), "OTHERSECRET\n");
        both_refuse_the_link(dir.path(), "stolen", "stolen:s.txt", "objects/").await;
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_link_to_another_repositorys_pack_folder_is_refused() {
        let (Some(dir), Some(other)) = (repo(), other_repo()) else {
            return;
        };
        ok(other.path(), &["gc", "--quiet"]);
        let sha = ok(other.path(), &["rev-parse", "HEAD"]).trim().to_string();
        let pack = dir.path().join(".git/objects/pack");
        std::fs::remove_dir_all(&pack).expect("remove pack");
        symlink(&other.path().join(".git/objects/pack"), &pack);
        let rev = format!("{sha}:s.txt");
        assert_eq!(ok(dir.path(), &["show", &rev]), "OTHERSECRET\n");
        both_refuse_the_link(dir.path(), &sha, &rev, "objects/pack").await;
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_link_to_another_repositorys_ref_is_refused() {
        let (Some(dir), Some(other)) = (repo(), other_repo()) else {
            return;
        };
        link_stolen_ref(dir.path(), other.path());
        let sha = ok(other.path(), &["rev-parse", "HEAD"]);
        assert_eq!(ok(dir.path(), &["rev-parse", "stolen"]), sha);
        both_refuse_the_link(dir.path(), "stolen", "stolen", "refs/heads/stolen").await;
    }

    /// Loose and packed objects, packed and nested loose refs, reflogs: no link, so the reads work.
    #[tokio::test]
    async fn a_repository_without_links_is_read() {
        let Some(dir) = repo() else { return };
        ok(dir.path(), &["gc", "--quiet"]);
        write(dir.path(), "b.txt", "two\n");
        commit_all(dir.path(), "second");
        ok(dir.path(), &["branch", "topic/nested"]);
        let ctx = ToolContext::new(dir.path());
        let log = GitLogArgs {
            rev: Some("topic/nested".into()),
            ..log_args()
        };
        let log = git_log(log, &ctx).await.expect("git_log");
        assert_eq!(log.commits.len(), 2, "{log:?}");
        let show = git_show(show_args("HEAD~1:a.txt"), &ctx)
            .await
            .expect("git_show");
        assert_eq!(show.text, "one\n");
    }

    /// A repository with `secret.txt` at the top and the workspace `ws/` (holding `inner.txt`)
    /// below it, both committed.
    fn nested() -> Option<(tempfile::TempDir, PathBuf)> {
        let dir = repo()?;
        write(dir.path(), "secret.txt", "top secret\n");
        write(dir.path(), "ws/inner.txt", "inner\n");
        commit_all(dir.path(), "secret and inner");
        let ws = dir.path().join("ws");
        Some((dir, ws))
    }

    #[tokio::test]
    async fn git_show_of_a_path_outside_the_workspace_is_refused() {
        let Some((dir, ws)) = nested() else { return };
        let ctx = ToolContext::new(&ws);
        let err = git_show(show_args("HEAD:../secret.txt"), &ctx)
            .await
            .expect_err("HEAD:../secret.txt");
        assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err}");
        for rev in [
            "HEAD:secret.txt",
            ":secret.txt",
            ":0:secret.txt",
            "HEAD:./../ws/../secret.txt",
        ] {
            match git_show(show_args(rev), &ctx).await {
                Ok(out) => assert!(!out.text.contains("top secret"), "{rev}: {}", out.text),
                Err(err) => assert!(!err.to_string().contains("top secret"), "{rev}: {err}"),
            }
        }
        // Paths are the workspace's.
        let inner = git_show(show_args("HEAD:inner.txt"), &ctx)
            .await
            .expect("inner");
        assert_eq!(inner.text, "inner\n");
        let inner = git_show(show_args(":./inner.txt"), &ctx)
            .await
            .expect("index inner");
        assert_eq!(inner.text, "inner\n");
        // A blob or tree by id could be any folder's.
        let blob = ok(dir.path(), &["rev-parse", "HEAD:secret.txt"]);
        let err = git_show(show_args(blob.trim()), &ctx)
            .await
            .expect_err("blob by id");
        assert!(err.to_string().contains("does not name a commit"), "{err}");
        let err = git_show(show_args("HEAD^{tree}"), &ctx)
            .await
            .expect_err("root tree");
        assert!(err.to_string().contains("does not name a commit"), "{err}");
        let err = git_show(show_args(":/secret"), &ctx)
            .await
            .expect_err("message search");
        assert!(err.to_string().contains("commit message"), "{err}");
        // The commit itself shows only the workspace's part, relative to it.
        let show = git_show(show_args("HEAD"), &ctx).await.expect("show HEAD");
        assert!(!show.text.contains("secret.txt"), "{}", show.text);
        assert!(show.text.contains("+++ b/inner.txt"), "{}", show.text);
    }

    #[tokio::test]
    async fn status_diff_and_log_see_only_the_workspace() {
        let Some((dir, ws)) = nested() else { return };
        let ctx = ToolContext::new(&ws);
        write(dir.path(), "secret.txt", "changed secret\n");
        write(dir.path(), "untracked-outside.txt", "x\n");
        let status = git_status(GitStatusArgs::default(), &ctx)
            .await
            .expect("status");
        assert!(status.clean, "{status:?}");
        write(&ws, "inner.txt", "changed inner\n");
        let status = git_status(GitStatusArgs::default(), &ctx)
            .await
            .expect("status");
        assert_eq!(
            status.entries,
            vec![StatusEntry {
                code: " M".into(),
                path: "inner.txt".into(),
                from: None
            }]
        );
        let diff = git_diff(diff_args(false), &ctx).await.expect("diff");
        assert!(!diff.text.contains("secret"), "{}", diff.text);
        assert!(diff.text.contains("+++ b/inner.txt"), "{}", diff.text);
        // Pathspec magic is a file name; `..` is refused.
        for magic in [":(top)", ":/", ":(top)secret.txt", "*"] {
            let diff = git_diff(
                GitDiffArgs {
                    path: Some(magic.into()),
                    ..diff_args(false)
                },
                &ctx,
            )
            .await
            .expect(magic);
            assert!(!diff.text.contains("secret"), "{magic}: {}", diff.text);
        }
        let err = git_diff(
            GitDiffArgs {
                path: Some("../secret.txt".into()),
                ..diff_args(false)
            },
            &ctx,
        )
        .await
        .expect_err("..");
        assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err}");
        // Only commits that touch the workspace.
        write(dir.path(), "secret.txt", "changed again\n");
        ok(
            dir.path(),
            &["commit", "--quiet", "-m", "outside only", "secret.txt"],
        );
        let log = git_log(log_args(), &ctx).await.expect("log");
        let subjects: Vec<&str> = log.commits.iter().map(|c| c.subject.as_str()).collect();
        assert_eq!(subjects, vec!["secret and inner"]);
    }

    #[tokio::test]
    async fn commit_refuses_changes_staged_outside_the_workspace() {
        let Some((dir, ws)) = nested() else { return };
        let ctx = ToolContext::new(&ws);
        write(dir.path(), "secret.txt", "changed secret\n");
        ok(dir.path(), &["add", "secret.txt"]);
        write(&ws, "inner.txt", "changed inner\n");
        git_add(
            GitAddArgs {
                paths: vec!["inner.txt".into()],
            },
            &ctx,
        )
        .await
        .expect("add inner");
        let err = git_commit(
            GitCommitArgs {
                message: "both".into(),
            },
            &ctx,
        )
        .await
        .expect_err("outside staged");
        assert!(
            err.to_string().contains("1 staged change(s) lie outside"),
            "{err}"
        );
        ok(dir.path(), &["restore", "--staged", "secret.txt"]);
        let commit = git_commit(
            GitCommitArgs {
                message: "inner only".into(),
            },
            &ctx,
        )
        .await
        .expect("commit");
        assert_eq!(ok(dir.path(), &["rev-parse", "HEAD"]).trim(), commit.sha);
        assert_eq!(
            ok(dir.path(), &["show", "--name-only", "--format=", "HEAD"]).trim(),
            "ws/inner.txt"
        );
    }

    #[tokio::test]
    async fn a_commit_on_a_detached_head_moves_the_real_head() {
        let Some(dir) = repo() else { return };
        ok(dir.path(), &["checkout", "--quiet", "--detach"]);
        let before = ok(dir.path(), &["rev-parse", "HEAD"]);
        let marker = Marker::new();
        let sha = every_tool(dir.path(), &marker).await;
        assert_ne!(before.trim(), sha);
        assert_eq!(
            ok(dir.path(), &["rev-parse", "HEAD^"]).trim(),
            before.trim()
        );
        assert!(
            fixture::run(dir.path(), &["symbolic-ref", "-q", "HEAD"])
                .stdout
                .is_empty(),
            "HEAD should stay detached"
        );
        // The reflog of HEAD recorded it, and `main` did not move.
        assert!(ok(dir.path(), &["reflog", "-1", "--format=%s", "HEAD"]).contains("Change a"));
        assert_eq!(ok(dir.path(), &["rev-parse", "main"]).trim(), before.trim());
    }
}
