//! The file changes of a commit range, read with the `git` command line: `git log`,
//! `git diff-tree --numstat` and `git cat-file --batch` (what `git show REV:PATH` prints, for
//! many blobs through one process).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{bail, Context as _, Result};

/// Files larger than this (old or new version) are skipped: 1 MiB.
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// One modified text file of one commit: its content before and after.
#[derive(Debug, Clone)]
pub struct FileChange {
    /// The commit (full hash).
    pub commit: String,
    /// Path in the repository.
    pub path: String,
    /// Content in the commit's parent.
    pub old: String,
    /// Content in the commit.
    pub new: String,
}

/// Why a modified file was left out of the replay, counted per reason.
pub type Skipped = BTreeMap<&'static str, usize>;

/// A repository read through `git -C DIR`.
pub struct Repo {
    dir: PathBuf,
}

impl Repo {
    /// The repository containing `dir`.
    pub fn new(dir: &Path) -> Repo {
        Repo {
            dir: dir.to_path_buf(),
        }
    }

    fn git(&self, args: &[&str]) -> Result<std::process::Output> {
        Command::new("git")
            .arg("-C")
            .arg(&self.dir)
            .args(args)
            .output()
            .with_context(|| "cannot run `git`; install git and run from a clone of the repository")
    }

    fn git_ok(&self, args: &[&str]) -> Result<String> {
        let out = self.git(args)?;
        if !out.status.success() {
            bail!(
                "`git {}` failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        String::from_utf8(out.stdout).context("`git` printed text that is not UTF-8")
    }

    /// Checks that `from` and `to` are commits of this clone and that `from` is an ancestor of
    /// `to` with the history between them present; returns their full hashes. Errors name the
    /// missing commit and the fix (a full clone, `git fetch --unshallow`).
    pub fn check_range(&self, from: &str, to: &str) -> Result<(String, String)> {
        let shallow = self
            .git_ok(&["rev-parse", "--is-shallow-repository"])
            .map(|s| s.trim() == "true")
            .unwrap_or(false);
        let fix = if shallow {
            "this clone is shallow; fetch the full history with `git fetch --unshallow`"
        } else {
            "fetch the full history (`git fetch origin`) or clone the repository without `--depth`"
        };
        let mut full = Vec::new();
        for rev in [from, to] {
            let out = self.git(&[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{rev}^{{commit}}"),
            ])?;
            if !out.status.success() {
                bail!("this clone lacks commit `{rev}`; {fix}");
            }
            full.push(String::from_utf8_lossy(&out.stdout).trim().to_string());
        }
        let ancestor = self.git(&["merge-base", "--is-ancestor", &full[0], &full[1]])?;
        if !ancestor.status.success() {
            bail!(
                "commit `{from}` is not an ancestor of `{to}` in this clone (the range is wrong or the history between them is missing); {fix}"
            );
        }
        Ok((full.remove(0), full.remove(0)))
    }

    /// The commits of `from..to` that are not merges, oldest first.
    pub fn commits(&self, from: &str, to: &str) -> Result<Vec<String>> {
        let out = self.git_ok(&[
            "log",
            "--no-merges",
            "--reverse",
            "--format=%H",
            &format!("{from}..{to}"),
        ])?;
        Ok(out.lines().map(str::to_string).collect())
    }

    /// The text files `commit` modified (added, deleted and binary files aside), with both
    /// versions; files skipped for being binary, larger than [`MAX_FILE_BYTES`], not UTF-8 or
    /// holding `\r`, or changing only the mode or the final newline, are counted in `skipped`.
    pub fn changes(
        &self,
        commit: &str,
        blobs: &mut Blobs,
        skipped: &mut Skipped,
    ) -> Result<Vec<FileChange>> {
        let out = self.git_ok(&[
            "diff-tree",
            "-r",
            "--no-renames",
            "--no-commit-id",
            "--numstat",
            "--diff-filter=M",
            "-z",
            commit,
        ])?;
        let mut files = Vec::new();
        for record in out.split('\0').filter(|r| !r.is_empty()) {
            let mut fields = record.splitn(3, '\t');
            let (added, _deleted, path) = (
                fields.next().unwrap_or(""),
                fields.next().unwrap_or(""),
                fields.next().unwrap_or(""),
            );
            if added == "-" {
                *skipped.entry("binary").or_default() += 1;
                continue;
            }
            let old = blobs.get(&format!("{commit}^:{path}"))?;
            let new = blobs.get(&format!("{commit}:{path}"))?;
            if old.len() > MAX_FILE_BYTES || new.len() > MAX_FILE_BYTES {
                *skipped.entry("larger than 1 MiB").or_default() += 1;
                continue;
            }
            let (Ok(old), Ok(new)) = (String::from_utf8(old), String::from_utf8(new)) else {
                *skipped.entry("not UTF-8").or_default() += 1;
                continue;
            };
            if old.contains('\r') || new.contains('\r') {
                *skipped.entry("holds `\\r`").or_default() += 1;
                continue;
            }
            if old == new {
                *skipped.entry("mode change only").or_default() += 1;
                continue;
            }
            // Hashline and apply_patch keep a file's final newline; no edit of theirs adds or
            // removes it (this includes filling an empty file).
            if old.ends_with('\n') != new.ends_with('\n') {
                *skipped.entry("final newline added or removed").or_default() += 1;
                continue;
            }
            files.push(FileChange {
                commit: commit.to_string(),
                path: path.to_string(),
                old,
                new,
            });
        }
        Ok(files)
    }

    /// A `git cat-file --batch` process of this repository.
    pub fn blobs(&self) -> Result<Blobs> {
        let mut child = Command::new("git")
            .arg("-C")
            .arg(&self.dir)
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("cannot run `git cat-file --batch`; install git")?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        Ok(Blobs {
            child,
            stdin,
            stdout,
        })
    }
}

/// Object contents by `REV:PATH`, read through one `git cat-file --batch` process.
pub struct Blobs {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Blobs {
    /// The content of `spec` (`REV:PATH`). Errors when git does not know the object.
    pub fn get(&mut self, spec: &str) -> Result<Vec<u8>> {
        writeln!(self.stdin, "{spec}")?;
        self.stdin.flush()?;
        let mut header = String::new();
        self.stdout.read_line(&mut header)?;
        let mut fields = header.split_whitespace();
        let (_, kind, size) = (fields.next(), fields.next(), fields.next());
        if kind != Some("blob") {
            bail!("`git cat-file` has no blob `{spec}`: {}", header.trim());
        }
        let size: usize = size
            .unwrap_or("")
            .parse()
            .context("bad `git cat-file` header")?;
        let mut content = vec![0; size + 1];
        self.stdout.read_exact(&mut content)?;
        content.pop();
        Ok(content)
    }
}

impl Drop for Blobs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
