//! The confined git runner behind the git tools: finds the workspace's repository, checks that
//! it stays where the workspace allows, and runs `git` against a per-call shadow git directory
//! with a cleared environment. What is neutralised, and why that is complete, is in the docs of
//! [`super`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use toolcat::ToolError;

use super::super::failed;
use super::GIT_TIMEOUT;
use toolcat_tools::workspace::Workspace;

/// What a call does to the repository; it decides the locks and what the shadow holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// `git_status`, `git_diff`, `git_log`, `git_show`: `GIT_OPTIONAL_LOCKS=0`, nothing written.
    Read,
    /// `git_add`: writes the index and objects.
    Stage,
    /// `git_commit`: writes the index, objects, refs and reflogs, and a detached `HEAD`.
    Commit,
}

/// Keys of the real `.git/config` copied into the shadow config: each is a value that tells git
/// how this repository's files are laid out on disk or in the object store. None names a
/// command, a path, a driver or another file; values are checked against the forms git accepts
/// (anything else is left out, and git uses its default).
const FORMAT_KEYS: &[(&str, Form)] = &[
    ("core.repositoryformatversion", Form::OneOf(&["0", "1"])),
    ("extensions.objectformat", Form::OneOf(&["sha1", "sha256"])),
    ("extensions.refstorage", Form::OneOf(&["files", "reftable"])),
    ("core.filemode", Form::Bool(&[])),
    ("core.symlinks", Form::Bool(&[])),
    ("core.ignorecase", Form::Bool(&[])),
    ("core.precomposeunicode", Form::Bool(&[])),
    ("core.trustctime", Form::Bool(&[])),
    ("core.checkstat", Form::OneOf(&["default", "minimal"])),
    ("core.autocrlf", Form::Bool(&["input"])),
    ("core.eol", Form::OneOf(&["lf", "crlf", "native"])),
    ("core.safecrlf", Form::Bool(&["warn"])),
    ("core.logallrefupdates", Form::Bool(&["always"])),
];

/// Keys the shadow config always sets, whatever the real config says.
///
/// - `gc.auto = 0`, `maintenance.auto = false`: `git commit` starts no background maintenance,
///   which would pack refs into the shadow's `packed-refs` (lost with it) and prune the real
///   loose refs.
/// - `core.splitindex = false`: an index written by `git_add` or `git_commit` is one file, never
///   a split index whose shared part git would write into the shadow.
const FIXED_KEYS: &[(&str, &str)] = &[
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("core.splitindex", "false"),
];

/// Entries of the real git directory the shadow links to: the refs, reflogs, objects and
/// shallow list a command reads or updates in place. `config`, `hooks/`, `info/` and everything
/// else stay out.
const LINKED: &[&str] = &[
    "objects",
    "refs",
    "packed-refs",
    "logs",
    "reftable",
    "shallow",
];

/// The directories among [`LINKED`] that git fills with directories and regular files only; each
/// is walked for symbolic links (see [`refuse_inner_links`]).
const WALKED: &[&str] = &["objects", "refs", "logs", "reftable"];

/// Marks of an operation in progress that `git commit` would conclude (a merge, cherry-pick,
/// revert or rebase); the shadow does not carry them, so `git_commit` refuses instead.
const IN_PROGRESS: &[(&str, &str)] = &[
    ("MERGE_HEAD", "a merge"),
    ("CHERRY_PICK_HEAD", "a cherry-pick"),
    ("REVERT_HEAD", "a revert"),
    ("rebase-merge", "a rebase"),
    ("rebase-apply", "a rebase or `git am`"),
];

/// Environment variables passed through from the agent to `git_commit`: who and when, values
/// only.
const IDENTITY_ENV: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
];

/// The forms a copied config value may take.
#[derive(Debug, Clone, Copy)]
enum Form {
    /// A git boolean (written back as `true` or `false`) or one of these words.
    Bool(&'static [&'static str]),
    /// One of these words (case-insensitive).
    OneOf(&'static [&'static str]),
}

impl Form {
    /// `value` normalised to what the shadow config holds, or `None` when git would not accept
    /// it. A key without `=` is `true` to git.
    fn normalise(self, value: Option<&str>) -> Option<String> {
        let v = value.unwrap_or("true").trim().to_ascii_lowercase();
        match self {
            Form::Bool(words) => match v.as_str() {
                "true" | "yes" | "on" | "1" => Some("true".into()),
                "false" | "no" | "off" | "0" | "" => Some("false".into()),
                _ => words.contains(&v.as_str()).then_some(v),
            },
            Form::OneOf(words) => words.contains(&v.as_str()).then_some(v),
        }
    }
}

/// One call's view of the workspace's repository: the checked locations and the shadow git
/// directory the call's commands run against (removed when this is dropped).
#[derive(Debug)]
pub(super) struct Repo {
    mode: Mode,
    /// The canonical workspace root: every command's working directory.
    ws_root: PathBuf,
    /// The canonical folder that holds `.git`: the work tree's top level.
    top: PathBuf,
    /// The canonical real git directory.
    git_dir: PathBuf,
    /// The workspace relative to `top`, `/`-separated; empty when the workspace is `top`.
    prefix: String,
    /// The `git` binary, found in an absolute `PATH` directory.
    program: PathBuf,
    /// `PATH` for git: the absolute directories of the agent's `PATH`.
    path_env: OsString,
    /// Holds `git/` (the shadow git directory), `home/` (empty: `HOME`, `XDG_CONFIG_HOME`) and
    /// `empty` (an empty file: the system and global config).
    shadow: tempfile::TempDir,
    /// The real `HEAD` as copied into the shadow.
    head: Vec<u8>,
}

impl Repo {
    /// Finds, checks and shadows the repository of `ws` for one call.
    ///
    /// The repository is found by walking up from the workspace root to the first folder with a
    /// `.git` entry. Refused, each with a message that names the fix: no repository; a `.git`
    /// file or symbolic link whose git directory is outside the workspace (a linked worktree or
    /// a submodule of a repository elsewhere); a linked worktree's git directory (`commondir`);
    /// an entry of the git directory (`HEAD`, `index`, `config`, `objects`, `refs`, ...) that
    /// leads outside it; a symbolic link inside the object and ref trees or at `packed-refs`,
    /// `shallow`, `sharedindex.*`, `index`, `HEAD` (see [`refuse_inner_links`]); borrowed
    /// objects (`objects/info/alternates`); `core.worktree` naming another folder than the one
    /// that holds `.git`; for [`Mode::Commit`], an operation in progress (merge, cherry-pick,
    /// revert, rebase).
    ///
    /// # Errors
    /// Those refusals; I/O errors creating the shadow; git's message when the real config does
    /// not parse.
    pub(super) async fn open(ws: &Workspace, mode: Mode) -> Result<Repo, ToolError> {
        let (program, path_env) = find_git()?;
        let ws_root = ws.root().to_path_buf();
        let (top, git_dir) = locate(&ws_root)?;
        check_git_dir(&git_dir)?;
        let prefix = ws_root
            .strip_prefix(&top)
            .map(|rel| {
                rel.components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default();

        let shadow = tempfile::Builder::new()
            .prefix("toolcat-git-")
            .tempdir()
            .map_err(|e| ToolError::io("cannot create the shadow git directory", e))?;
        let io = |e| ToolError::io("cannot create the shadow git directory", e);
        std::fs::create_dir(shadow.path().join("git")).map_err(io)?;
        std::fs::create_dir(shadow.path().join("home")).map_err(io)?;
        std::fs::write(shadow.path().join("empty"), b"").map_err(io)?;

        let mut repo = Repo {
            mode,
            ws_root,
            top,
            git_dir,
            prefix,
            program,
            path_env,
            shadow,
            head: Vec::new(),
        };
        let real = repo.read_config(&repo.git_dir.join("config")).await?;
        repo.check_worktree(&real)?;
        let mut identity = Vec::new();
        if mode == Mode::Commit {
            repo.check_in_progress()?;
            for file in global_config_files() {
                identity.extend(identity_keys(&repo.read_config(&file).await?));
            }
            identity.extend(identity_keys(&real));
        }
        repo.write_shadow(&real, &identity)?;
        Ok(repo)
    }

    /// The workspace relative to the work tree's top level, `/`-separated; empty when the
    /// workspace is the top level.
    pub(super) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `ws_path` (relative to the workspace, normalised, `""` for its root) as a path from the
    /// work tree's top level, the form `REV:path` and `:path` take.
    pub(super) fn repo_path(&self, ws_path: &str) -> String {
        match (self.prefix.is_empty(), ws_path.is_empty()) {
            (true, _) => ws_path.to_string(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{ws_path}", self.prefix),
        }
    }

    /// `repo_path` (from the work tree's top level, as porcelain output names it) relative to
    /// the workspace, or `None` when it lies outside the workspace.
    pub(super) fn workspace_path(&self, repo_path: &str) -> Option<String> {
        if self.prefix.is_empty() {
            return Some(repo_path.to_string());
        }
        repo_path
            .strip_prefix(&self.prefix)
            .and_then(|rest| rest.strip_prefix('/'))
            .map(str::to_string)
    }

    /// Runs `git --no-pager ARGS` in the workspace root against the shadow and returns its
    /// standard output.
    ///
    /// # Errors
    /// Git's own message when it exits non-zero; a timeout after [`GIT_TIMEOUT`]; an I/O error
    /// when git cannot be started.
    pub(super) async fn run(&self, args: &[&str]) -> Result<Vec<u8>, ToolError> {
        let mut cmd = self.command();
        cmd.current_dir(&self.ws_root)
            .env("GIT_DIR", self.shadow.path().join("git"))
            .env("GIT_OBJECT_DIRECTORY", self.git_dir.join("objects"))
            .env("GIT_INDEX_FILE", self.git_dir.join("index"))
            .env("GIT_WORK_TREE", &self.top)
            .arg("--no-pager")
            .args(args);
        if self.mode == Mode::Read {
            cmd.env("GIT_OPTIONAL_LOCKS", "0");
        }
        if self.mode == Mode::Commit {
            for name in IDENTITY_ENV {
                if let Some(value) = std::env::var_os(name) {
                    cmd.env(name, value);
                }
            }
        }
        output(cmd, args.first().copied().unwrap_or("")).await
    }

    /// Whether `rev` names a commit (`git rev-parse --verify REV^{commit}`).
    ///
    /// # Errors
    /// When git cannot be run.
    pub(super) async fn is_commit(&self, rev: &str) -> Result<bool, ToolError> {
        let peeled = format!("{rev}^{{commit}}");
        match self
            .run(&[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &peeled,
            ])
            .await
        {
            Ok(_) => Ok(true),
            Err(ToolError::Failed(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// After `git commit`: a `HEAD` the commit moved (a detached `HEAD`; a branch moves through
    /// the linked `refs`) is written back to the real git directory, under git's own
    /// `HEAD.lock`.
    ///
    /// # Errors
    /// When the real `HEAD` changed while the commit ran, or is locked by another git process;
    /// the message names the new commit so it can be checked out by hand.
    pub(super) fn write_back_head(&self, sha: &str) -> Result<(), ToolError> {
        let shadow_head = self.shadow.path().join("git").join("HEAD");
        let now = std::fs::read(&shadow_head)
            .map_err(|e| ToolError::io("cannot read the shadow `HEAD`", e))?;
        if now == self.head {
            return Ok(());
        }
        let real_head = self.git_dir.join("HEAD");
        let left = |why: &str| {
            failed(format!(
                "commit {sha} was recorded, but {why}, so `HEAD` was left alone; run `git \
                 checkout --detach {sha}` in a terminal to move to it"
            ))
        };
        let real = std::fs::read(&real_head).map_err(|e| ToolError::io("cannot read `HEAD`", e))?;
        if real != self.head {
            return Err(left("the repository's `HEAD` changed while the commit ran"));
        }
        let lock = self.git_dir.join("HEAD.lock");
        let mut file = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(left("another git process holds `HEAD.lock`"))
            }
            Err(e) => return Err(ToolError::io("cannot lock `HEAD`", e)),
        };
        let written = std::io::Write::write_all(&mut file, &now)
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&lock, &real_head));
        if let Err(e) = written {
            // Best effort: a stale lock would block the next git command.
            let _ = std::fs::remove_file(&lock);
            return Err(ToolError::io("cannot update `HEAD`", e));
        }
        Ok(())
    }

    /// `git` with the cleared environment every call uses (see the module docs of [`super`]).
    fn command(&self) -> tokio::process::Command {
        let home = self.shadow.path().join("home");
        let empty = self.shadow.path().join("empty");
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.env_clear()
            .env("PATH", &self.path_env)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", &home)
            .env("LANG", "C")
            .env("LC_ALL", "C")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_SYSTEM", &empty)
            .env("GIT_CONFIG_GLOBAL", &empty)
            .env("GIT_ATTR_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", ":")
            .env("GIT_LITERAL_PATHSPECS", "1")
            .env("GIT_NO_LAZY_FETCH", "1")
            .env("GIT_ADVICE", "0")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        #[cfg(windows)]
        for name in ["SYSTEMROOT", "TEMP", "TMP"] {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        cmd
    }

    /// The entries of a config file as `(key, value)` in file order (a key without `=` has no
    /// value), read by `git config --file FILE --no-includes --list`: parsed, never acted on.
    /// A missing file has none.
    async fn read_config(&self, file: &Path) -> Result<Vec<(String, Option<String>)>, ToolError> {
        if !file.is_file() {
            return Ok(Vec::new());
        }
        let mut cmd = self.command();
        // Outside any repository: discovery stops at the shadow's root.
        cmd.current_dir(self.shadow.path().join("home"))
            .env("GIT_CEILING_DIRECTORIES", self.shadow.path())
            .args(["config", "--file"])
            .arg(file)
            .args(["--no-includes", "-z", "--list"]);
        let out = output(cmd, "config").await.map_err(|e| {
            failed(format!(
                "cannot read the git configuration `{}`: {e}; fix the file with `git config \
                 --file {} --edit` in a terminal",
                file.display(),
                file.display()
            ))
        })?;
        Ok(String::from_utf8_lossy(&out)
            .split('\0')
            .filter(|entry| !entry.is_empty())
            .map(|entry| match entry.split_once('\n') {
                Some((key, value)) => (key.to_string(), Some(value.to_string())),
                None => (entry.to_string(), None),
            })
            .collect())
    }

    /// `core.worktree`, when set, must name the folder that holds `.git`.
    fn check_worktree(&self, real: &[(String, Option<String>)]) -> Result<(), ToolError> {
        let Some(value) = last(real, "core.worktree") else {
            return Ok(());
        };
        let value = value.unwrap_or_default();
        let named = self.git_dir.join(&value);
        let resolved = std::fs::canonicalize(&named).unwrap_or(named);
        if resolved == self.top {
            return Ok(());
        }
        let place = if resolved.starts_with(&self.ws_root) {
            format!(
                "not at `{}`, the folder that holds `.git`",
                self.top.display()
            )
        } else {
            format!("outside the workspace `{}`", self.ws_root.display())
        };
        Err(failed(format!(
            "`core.worktree` in `{}` points at `{value}`, {place}; the git tools use the folder \
             that holds `.git` as the work tree: remove the setting with `git config --unset \
             core.worktree` in a terminal, or open the folder it names as the workspace",
            self.git_dir.join("config").display()
        )))
    }

    /// Refuses to commit while a merge, cherry-pick, revert or rebase is in progress.
    fn check_in_progress(&self) -> Result<(), ToolError> {
        for (mark, what) in IN_PROGRESS {
            if std::fs::symlink_metadata(self.git_dir.join(mark)).is_ok() {
                return Err(failed(format!(
                    "{what} is in progress in the repository (`.git/{mark}`); `git_commit` makes \
                     plain commits only: conclude or abort it with git in a terminal"
                )));
            }
        }
        Ok(())
    }

    /// Writes the shadow git directory: the generated `config`, a copy of `HEAD`, and links to
    /// [`LINKED`] and any `sharedindex.*` of the real git directory.
    fn write_shadow(
        &mut self,
        real: &[(String, Option<String>)],
        identity: &[(String, String)],
    ) -> Result<(), ToolError> {
        let shadow = self.shadow.path().join("git");
        let io = |e| ToolError::io("cannot create the shadow git directory", e);
        let config = shadow_config(real, identity, self.mode);
        std::fs::write(shadow.join("config"), config).map_err(io)?;

        self.head = std::fs::read(self.git_dir.join("HEAD"))
            .map_err(|e| ToolError::io("cannot read the repository's `HEAD`", e))?;
        std::fs::write(shadow.join("HEAD"), &self.head).map_err(io)?;

        if self.mode == Mode::Commit && !self.git_dir.join("logs").exists() {
            // Git creates it on the first reflog entry; through the link it must exist first.
            std::fs::create_dir(self.git_dir.join("logs"))
                .map_err(|e| ToolError::io("cannot create `.git/logs`", e))?;
        }
        for name in linked_entries(&self.git_dir)? {
            let target = self.git_dir.join(&name);
            if std::fs::symlink_metadata(&target).is_ok() {
                link(&target, &shadow.join(&name)).map_err(io)?;
            }
        }
        Ok(())
    }
}

/// The shadow's `config`: the [`FORMAT_KEYS`] of `real` in a form git accepts, the
/// [`FIXED_KEYS`], and for [`Mode::Commit`] the last `user.name` and `user.email` of `identity`
/// with `user.useconfigonly`.
fn shadow_config(
    real: &[(String, Option<String>)],
    identity: &[(String, String)],
    mode: Mode,
) -> String {
    let mut config = String::from("# Generated per call by toolcat's git tools.\n");
    for (key, form) in FORMAT_KEYS {
        if let Some(value) = last(real, key).and_then(|v| form.normalise(v.as_deref())) {
            push_key(&mut config, key, &value);
        }
    }
    for (key, value) in FIXED_KEYS {
        push_key(&mut config, key, value);
    }
    if mode == Mode::Commit {
        // Later entries win, as in git: global files first, then the repository's.
        for key in ["user.name", "user.email"] {
            if let Some((_, value)) = identity.iter().rev().find(|(k, _)| k == key) {
                push_key(&mut config, key, value);
            }
        }
        // No identity guessed from the host name.
        push_key(&mut config, "user.useconfigonly", "true");
    }
    config
}

/// Runs `cmd` under [`GIT_TIMEOUT`]; `name` is the git subcommand, for messages.
async fn output(mut cmd: tokio::process::Command, name: &str) -> Result<Vec<u8>, ToolError> {
    let output = tokio::time::timeout(GIT_TIMEOUT, cmd.output())
        .await
        .map_err(|_| {
            failed(format!(
                "`git {name}` did not finish within {} seconds",
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
        return Err(failed(format!("`git {name}` failed: {}", reason.trim())));
    }
    Ok(output.stdout)
}

/// The `git` binary in the first absolute directory of `PATH` that has one, and those absolute
/// directories as git's `PATH`. Relative entries are skipped: with the workspace as working
/// directory they would find a `git` the workspace holds.
fn find_git() -> Result<(PathBuf, OsString), ToolError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .collect();
    let name = if cfg!(windows) { "git.exe" } else { "git" };
    let program = dirs
        .iter()
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            failed(
                "cannot find `git` in the absolute directories of PATH; install git or add the \
                 directory that holds it to PATH",
            )
        })?;
    let path_env = std::env::join_paths(&dirs)
        .unwrap_or_else(|_| program.parent().map(OsString::from).unwrap_or_default());
    Ok((program, path_env))
}

/// The work tree's top level and the canonical git directory of the repository that holds
/// `ws_root`: the first folder from `ws_root` upwards with a `.git` entry. A `.git` directory is
/// taken as it is; a `.git` file (`gitdir: PATH`) or symbolic link only when the git directory
/// it names is inside the workspace.
fn locate(ws_root: &Path) -> Result<(PathBuf, PathBuf), ToolError> {
    for dir in ws_root.ancestors() {
        let dot_git = dir.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        let named = if meta.is_file() {
            let text = std::fs::read_to_string(&dot_git)
                .map_err(|e| ToolError::io(format!("cannot read `{}`", dot_git.display()), e))?;
            let Some(path) = text.trim_end().strip_prefix("gitdir: ") else {
                return Err(failed(format!(
                    "`{}` is a file but not a `gitdir: PATH` link; remove it or run `git init` \
                     in a terminal",
                    dot_git.display()
                )));
            };
            dir.join(path)
        } else {
            dot_git.clone()
        };
        let git_dir = std::fs::canonicalize(&named).map_err(|e| {
            ToolError::io(
                format!(
                    "`{}` names the git directory `{}`, which cannot be opened",
                    dot_git.display(),
                    named.display()
                ),
                e,
            )
        })?;
        if !meta.is_dir() && !git_dir.starts_with(ws_root) {
            return Err(failed(format!(
                "`{}` points at the git directory `{}`, outside the workspace `{}`; the git tools \
                 only use a git directory inside the workspace or the `.git` directory of a folder \
                 that holds it (a linked worktree or a submodule keeps its git directory \
                 elsewhere): open the main worktree or the superproject as the workspace",
                dot_git.display(),
                git_dir.display(),
                ws_root.display()
            )));
        }
        return Ok((dir.to_path_buf(), git_dir));
    }
    Err(failed(format!(
        "the workspace `{}` is not inside a git repository; run `git init` there first",
        ws_root.display()
    )))
}

/// Refuses a git directory that is not a plain repository's, or whose entries lead outside it.
fn check_git_dir(git_dir: &Path) -> Result<(), ToolError> {
    if !git_dir.join("HEAD").is_file() {
        return Err(failed(format!(
            "`{}` is not a git directory (it has no `HEAD`); remove it or run `git init` in a \
             terminal",
            git_dir.display()
        )));
    }
    if git_dir.join("commondir").exists() {
        return Err(failed(format!(
            "`{}` is the git directory of a linked worktree (it has a `commondir` file); the git \
             tools work on a repository's main worktree only: open the main worktree as the \
             workspace",
            git_dir.display()
        )));
    }
    let mut entries = linked_entries(git_dir)?;
    entries.extend(["HEAD".to_string(), "index".into(), "config".into()]);
    for name in &entries {
        let entry = git_dir.join(name);
        if std::fs::symlink_metadata(&entry).is_err() {
            continue;
        }
        let inside = std::fs::canonicalize(&entry).is_ok_and(|c| c.starts_with(git_dir));
        if !inside {
            return Err(failed(format!(
                "`{}` leads outside the git directory `{}`; the git tools read only what that \
                 directory holds: replace the symbolic link with a copy of what it names",
                entry.display(),
                git_dir.display()
            )));
        }
    }
    refuse_inner_links(git_dir, &entries)?;
    let alternates = git_dir.join("objects/info/alternates");
    if let Ok(text) = std::fs::read_to_string(&alternates) {
        if text
            .lines()
            .any(|line| !line.trim().is_empty() && !line.starts_with('#'))
        {
            return Err(failed(format!(
                "the repository borrows objects from other repositories (`{}`); the git tools \
                 read only the repository's own objects: run `git repack -a -d` and delete that \
                 file in a terminal",
                alternates.display()
            )));
        }
    }
    Ok(())
}

/// Refuses a symbolic link anywhere inside the [`WALKED`] trees of `git_dir` (fan-out
/// directories, loose objects, `objects/pack/` and `objects/info/`, refs, reflogs, reftable
/// files) and at the other `entries` except `config` (`packed-refs`, `shallow`, `sharedindex.*`,
/// `index`, `HEAD`). Git itself never creates a link there, and git follows one, so a link would
/// read another repository's objects or refs. The trees are walked without following links (a
/// [`WALKED`] directory that is itself a link stays allowed when it stays inside `git_dir`, as
/// [`check_git_dir`] checks first); entries are only listed and `lstat`ed, never opened. Cost:
/// one directory listing per folder, so proportional to the loose objects, refs and reflogs.
///
/// # Errors
/// The refusal, naming the link and the fix; an I/O error naming a folder that cannot be listed.
fn refuse_inner_links(git_dir: &Path, entries: &[String]) -> Result<(), ToolError> {
    let refuse = |link: &Path| {
        let fix = if link == git_dir.join("HEAD") {
            "make it a symbolic ref again (`git symbolic-ref HEAD refs/heads/BRANCH` in a \
             terminal)"
        } else {
            "replace the symbolic link with a copy of what it names"
        };
        failed(format!(
            "`{}` is a symbolic link inside the git directory `{}`, which git never creates \
             there; the git tools read only what that directory holds: {fix}",
            link.display(),
            git_dir.display()
        ))
    };
    for name in entries.iter().filter(|name| *name != "config") {
        let entry = git_dir.join(name);
        let Ok(meta) = std::fs::symlink_metadata(&entry) else {
            continue;
        };
        if !WALKED.contains(&name.as_str()) {
            if meta.file_type().is_symlink() {
                return Err(refuse(&entry));
            }
            continue;
        }
        for item in walkdir::WalkDir::new(&entry)
            .follow_links(false)
            .min_depth(1)
        {
            let item = item.map_err(|e| {
                let at = e.path().unwrap_or(&entry).display().to_string();
                ToolError::io(format!("cannot list `{at}`"), e.into())
            })?;
            if item.path_is_symlink() {
                return Err(refuse(item.path()));
            }
        }
    }
    Ok(())
}

/// [`LINKED`] and the `sharedindex.*` files of a split index in `git_dir`.
fn linked_entries(git_dir: &Path) -> Result<Vec<String>, ToolError> {
    let mut names: Vec<String> = LINKED.iter().map(|n| n.to_string()).collect();
    let listing = std::fs::read_dir(git_dir)
        .map_err(|e| ToolError::io(format!("cannot list `{}`", git_dir.display()), e))?;
    for entry in listing.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("sharedindex.") {
            names.push(name);
        }
    }
    Ok(names)
}

/// The user's global config files, in the order git reads them (later ones win):
/// `$GIT_CONFIG_GLOBAL` alone when set, else `$XDG_CONFIG_HOME/git/config` (or
/// `~/.config/git/config`) and `~/.gitconfig`. Only their `user.name` and `user.email` are used.
fn global_config_files() -> Vec<PathBuf> {
    if let Some(file) = std::env::var_os("GIT_CONFIG_GLOBAL") {
        return vec![PathBuf::from(file)];
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    xdg.map(|x| x.join("git/config"))
        .into_iter()
        .chain(home.map(|h| h.join(".gitconfig")))
        .collect()
}

/// `user.name` and `user.email` of a config's entries, when they are plain text.
fn identity_keys(entries: &[(String, Option<String>)]) -> Vec<(String, String)> {
    entries
        .iter()
        .filter(|(key, _)| key == "user.name" || key == "user.email")
        .filter_map(|(key, value)| {
            let value = value.as_deref()?;
            (!value.chars().any(char::is_control)).then(|| (key.clone(), value.to_string()))
        })
        .collect()
}

/// The last value of `key` (git's rule: the last one wins); `Some(None)` for a key without `=`.
fn last(entries: &[(String, Option<String>)], key: &str) -> Option<Option<String>> {
    entries
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// Appends `key = "value"` in its own section; `value` holds no control characters (checked by
/// the callers), `\` and `"` are escaped.
fn push_key(config: &mut String, key: &str, value: &str) {
    let (section, name) = key.split_once('.').unwrap_or((key, ""));
    let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
    config.push_str(&format!("[{section}]\n\t{name} = \"{escaped}\"\n"));
}

#[cfg(unix)]
fn link(target: &Path, at: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, at)
}

#[cfg(windows)]
fn link(target: &Path, at: &Path) -> std::io::Result<()> {
    if target.is_dir() {
        std::os::windows::fs::symlink_dir(target, at)
    } else {
        std::os::windows::fs::symlink_file(target, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(pairs: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect()
    }

    #[test]
    fn the_shadow_config_keeps_format_values_and_no_command() {
        let real = entries(&[
            ("core.repositoryformatversion", Some("1")),
            ("extensions.objectformat", Some("SHA256")),
            ("core.filemode", None),
            ("core.autocrlf", Some("input")),
            ("core.eol", Some("lf\n[core]\n\tfsmonitor = touch x")),
            ("core.symlinks", Some("maybe")),
            ("core.fsmonitor", Some("touch x")),
            ("core.hookspath", Some("/tmp/hooks")),
            ("diff.x.textconv", Some("touch x")),
            ("include.path", Some("other")),
            ("gc.auto", Some("1")),
            ("user.name", Some("Local")),
        ]);
        let identity = identity_keys(&entries(&[
            ("user.name", Some("Global \"G\" \\ Name")),
            ("user.email", Some("g@example.com")),
            ("user.name", Some("Local")),
            ("user.email", Some("evil\n[core]\n\tfsmonitor = x")),
        ]));
        let config = shadow_config(&real, &identity, Mode::Commit);
        assert_eq!(
            config,
            "# Generated per call by toolcat's git tools.\n\
             [core]\n\trepositoryformatversion = \"1\"\n\
             [extensions]\n\tobjectformat = \"sha256\"\n\
             [core]\n\tfilemode = \"true\"\n\
             [core]\n\tautocrlf = \"input\"\n\
             [gc]\n\tauto = \"0\"\n\
             [maintenance]\n\tauto = \"false\"\n\
             [core]\n\tsplitindex = \"false\"\n\
             [user]\n\tname = \"Local\"\n\
             [user]\n\temail = \"g@example.com\"\n\
             [user]\n\tuseconfigonly = \"true\"\n"
        );
        let escaped = shadow_config(&[], &identity[..1], Mode::Commit);
        assert!(
            escaped.contains("name = \"Global \\\"G\\\" \\\\ Name\""),
            "{escaped}"
        );
        assert!(!shadow_config(&real, &identity, Mode::Read).contains("[user]"));
    }
}
