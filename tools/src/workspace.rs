//! Resolving path arguments inside the workspace, and the one layer through which every
//! handler reads and writes files.
//!
//! Rule: a path argument names something inside `ToolContext::workspace` after every `..` and
//! every symbolic link is resolved. Relative paths are taken from the workspace root; absolute
//! paths are accepted when they point inside it. The checks use canonical paths
//! (`std::fs::canonicalize`), so a link inside the workspace that points outside is refused like
//! a `../../etc/passwd`. Parts of a path that do not exist yet (a file about to be written) may
//! not contain `..`, since there is nothing on disk to canonicalize them against. A path with a
//! control character (a NUL, a line break) is refused: it is a mangled argument, and a name
//! with a line break would garble every listing and diff header that shows it.
//!
//! The file tools never write toolcat's own state (`.toolcat/` at the root) nor inside a `.git`
//! directory ([`Workspace::writable`]).
//!
//! Resolving a path and then opening it by name again would leave a window: a symbolic link
//! swapped in between could lead the open outside. So file contents are read and written only
//! through a capability directory on the root ([`cap_std::fs::Dir`], opened with `openat` and
//! resolving beneath it), whatever changed on disk since resolution:
//! - Reads ([`Workspace::read`]) open the resolved path relative to that directory; an open that
//!   would leave it through `..` or a symbolic link fails with [`ToolError::OutsideWorkspace`].
//!   The path opened is the resolved one, so a link that stays inside the workspace was already
//!   followed at resolution; a link found at the open (swapped in since) is followed only while
//!   it stays beneath the directory, and an absolute link target counts as leaving there (it is
//!   not resolved against the root).
//! - Writes ([`Workspace::write_atomically`], the only write of file contents, used by
//!   `write_file`, `edit_file` and every state file of an agent) follow no symbolic link
//!   at all: the parent directories are opened one at a time with `O_NOFOLLOW`, a link at the
//!   target is refused, the content goes to a temporary file created exclusively beside the
//!   target and is renamed over it, under a per-target advisory lock that works across
//!   processes (lock files under `.toolcat/locks/`, waited for at most [`LOCK_WAIT`]).
//! - Only regular files are opened for their content: a FIFO, socket or device is refused by
//!   its metadata before the open, the open is non-blocking, and the opened handle is checked
//!   again, so such a file cannot stall a call.
//! - Handlers run this blocking work through [`blocking`], on tokio's blocking pool with a
//!   timeout ([`FILE_WORK_TIMEOUT`]), so no file system call holds a tokio worker.

use std::ffi::OsString;
use std::io::{ErrorKind, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, OpenOptions};
use sha2::Digest;
use std::fs::TryLockError;
use toolcat::{Access, Target, ToolContext, ToolError};

use crate::failed;

/// Directory, relative to the workspace root, of toolcat's own files: the session state
/// (an agent's state files) and the write layer's lock files.
pub const STATE_DIR: &str = ".toolcat";
/// Directory, inside [`STATE_DIR`], of the lock files of [`Workspace::write_atomically`].
pub const LOCK_DIR: &str = "locks";
/// Longest a write waits for another write of the same file to release its lock: 10 s (a
/// write holds it for the re-verify, the change and the rename, normally milliseconds).
pub const LOCK_WAIT: Duration = Duration::from_secs(10);
/// Longest a call waits for its blocking file work ([`blocking`]): 60 s, a backstop for a
/// stalled file system (non-regular files are refused up front and never opened).
pub const FILE_WORK_TIMEOUT: Duration = Duration::from_secs(60);

/// The canonical workspace root of one call.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Canonicalizes `ctx.workspace`.
    ///
    /// # Errors
    /// When the workspace does not exist or cannot be read.
    pub fn open(ctx: &ToolContext) -> Result<Workspace, ToolError> {
        let root = std::fs::canonicalize(&ctx.workspace).map_err(|e| {
            ToolError::io(
                format!("cannot open the workspace `{}`", ctx.workspace.display()),
                e,
            )
        })?;
        Ok(Workspace { root })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A path that must exist, with every symbolic link followed.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] when it resolves outside the root; a not-found message
    /// when it does not exist.
    pub fn existing(&self, path: &str) -> Result<PathBuf, ToolError> {
        let resolved = self.resolve(path)?;
        if !resolved.exists {
            return Err(not_found(path));
        }
        Ok(resolved.path)
    }

    /// A path that may or may not exist yet (the target of a write). An existing path is
    /// canonicalized like [`Self::existing`]; a missing one is its deepest existing ancestor,
    /// canonicalized, followed by the missing components.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] when it resolves outside the root, or when a missing part
    /// contains `..`.
    pub fn target(&self, path: &str) -> Result<PathBuf, ToolError> {
        Ok(self.resolve(path)?.path)
    }

    /// A directory entry itself, without following a symbolic link in its last component: what
    /// `delete_path`, `move_path` and `file_info` act on. The parent is resolved like
    /// [`Self::target`]; the entry may not exist. The workspace root itself is refused.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] as for [`Self::target`]; a message when the path names the
    /// root or ends in `..`.
    pub fn entry(&self, path: &str) -> Result<PathBuf, ToolError> {
        let trimmed = Path::new(path.trim());
        let name = match trimmed.components().next_back() {
            Some(Component::Normal(name)) => name.to_owned(),
            _ => {
                return Err(failed(format!(
                    "`{path}` does not name a file or directory inside the workspace; pass a \
                     path such as `src/main.rs`"
                )))
            }
        };
        let parent = trimmed.parent().map(Path::to_path_buf).unwrap_or_default();
        let parent = self.target(&parent.to_string_lossy())?;
        Ok(parent.join(name))
    }

    /// Refuses `abs` (a resolved path, from [`Self::target`] or [`Self::existing`]) as the
    /// target of a model's file write: toolcat's own state under [`STATE_DIR`] at the root
    /// (lock files, the call store, state files, which only their own tools write) and
    /// anything inside a `.git` directory at any depth (a repository's hooks, config and refs:
    /// a hook written there runs at the user's next `git commit`). The check is on the
    /// resolved path, so a link inside the workspace that points there is refused too; names
    /// are compared ignoring ASCII case, as a case-insensitive file system would.
    ///
    /// # Errors
    /// A message naming the path and what to do instead.
    pub fn writable(&self, abs: &Path, shown: &str) -> Result<(), ToolError> {
        let Ok(rel) = abs.strip_prefix(&self.root) else {
            return Err(self.outside(shown));
        };
        let is = |c: Component<'_>, name: &str| matches!(c, Component::Normal(n) if n.to_string_lossy().eq_ignore_ascii_case(name));
        if rel.components().next().is_some_and(|c| is(c, STATE_DIR)) {
            return Err(failed(format!(
                "`{shown}` is in `{STATE_DIR}/`, toolcat's own state (locks, call records, state \
                 files); the file tools never write there; nothing was written: use the memory, \
                 todo or plan tools for state, or pick a path outside `{STATE_DIR}/`"
            )));
        }
        if rel.components().any(|c| is(c, ".git")) {
            return Err(failed(format!(
                "`{shown}` is inside a `.git` directory, a repository's internals (hooks, \
                 config, refs); the file tools never write there; nothing was written: use the \
                 git tools, or pick a path outside `.git/`"
            )));
        }
        Ok(())
    }

    /// `abs` relative to the root, with `/` separators; `.` for the root itself.
    pub fn relative(&self, abs: &Path) -> String {
        match abs.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            Err(_) => abs.display().to_string(),
        }
    }

    /// `abs` (a path from [`Self::existing`] or [`Self::target`]) relative to the root, for
    /// opening through [`Self::dir`]; `.` for the root itself.
    fn beneath(&self, abs: &Path) -> Result<PathBuf, ToolError> {
        match abs.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => Ok(PathBuf::from(".")),
            Ok(rel) => Ok(rel.to_path_buf()),
            Err(_) => Err(self.outside(&abs.display().to_string())),
        }
    }

    /// The root as a capability directory: every open through it resolves beneath the root.
    ///
    /// # Errors
    /// When the root cannot be opened.
    fn dir(&self) -> Result<Dir, ToolError> {
        Dir::open_ambient_dir(&self.root, ambient_authority()).map_err(|e| {
            ToolError::io(
                format!("cannot open the workspace `{}`", self.root.display()),
                e,
            )
        })
    }

    /// Maps an I/O error from an open through [`Self::dir`]: leaving the root (through `..` or
    /// a symbolic link, possibly swapped in after resolution) is
    /// [`ToolError::OutsideWorkspace`]; anything else is an I/O error with `context`.
    fn open_error(&self, shown: &str, context: String, e: std::io::Error) -> ToolError {
        if is_escape(&e) {
            self.outside(shown)
        } else {
            ToolError::io(context, e)
        }
    }

    /// Reads the regular file at `abs` (resolved by [`Self::existing`]) through the root's
    /// capability directory, refusing a directory, anything that is not a regular file (a FIFO,
    /// socket or device: refused before it is opened, and the opened handle is checked again, so
    /// one swapped in meanwhile cannot stall the read) and a file over `max_bytes`. `shown` is
    /// the path as the caller gave it, for messages. A symbolic link that stays inside the root
    /// is followed; one that leads outside is refused.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] when the open would leave the root (a symbolic link
    /// swapped in after resolution); a message for a directory, a non-regular file or an
    /// oversized file; the I/O error otherwise.
    pub fn read(&self, abs: &Path, shown: &str, max_bytes: u64) -> Result<Vec<u8>, ToolError> {
        let rel = self.beneath(abs)?;
        let dir = self.dir()?;
        let context = || format!("cannot read `{shown}`");
        let meta = dir
            .metadata(&rel)
            .map_err(|e| self.open_error(shown, context(), e))?;
        if meta.is_dir() {
            return Err(failed(format!(
                "`{shown}` is a directory; use `list_directory` to see what it holds"
            )));
        }
        let file = self.open_regular(&dir, &rel, shown, FollowSymlinks::Yes)?;
        read_bounded(file, shown, max_bytes)
    }

    /// Opens the regular file `rel` of `dir` for reading, without blocking: anything else is
    /// refused before the open (by its metadata) and after it (by the handle's), and the open
    /// itself is non-blocking, so a FIFO swapped in between cannot hang it. `follow` says
    /// whether a final symbolic link (inside `dir`) is followed.
    fn open_regular(
        &self,
        dir: &Dir,
        rel: &Path,
        shown: &str,
        follow: FollowSymlinks,
    ) -> Result<File, ToolError> {
        let context = || format!("cannot read `{shown}`");
        let meta = match follow {
            FollowSymlinks::Yes => dir.metadata(rel),
            FollowSymlinks::No => dir.symlink_metadata(rel),
        }
        .map_err(|e| self.open_error(shown, context(), e))?;
        if !meta.is_file() {
            return Err(not_regular(shown, &meta));
        }
        let mut options = OpenOptions::new();
        options.read(true).follow(follow).nonblock(true);
        let file = dir
            .open_with(rel, &options)
            .map_err(|e| self.open_error(shown, context(), e))?;
        let meta = file.metadata().map_err(|e| ToolError::io(context(), e))?;
        if !meta.is_file() {
            return Err(not_regular(shown, &meta));
        }
        Ok(file)
    }

    /// What is at `abs` now, in the format of [`toolcat::fingerprint_path`] for files
    /// (`absent`, `sha256:HEX`, `symlink:TARGET`; a directory is `dir`), looked at through the
    /// root's capability directory without following a final symbolic link and without opening
    /// anything that is not a regular file.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] when the parent leaves the root; a message for a FIFO,
    /// socket or device; the I/O error otherwise.
    pub fn fingerprint(&self, abs: &Path, shown: &str) -> Result<String, ToolError> {
        let rel = self.beneath(abs)?;
        let dir = self.dir()?;
        Ok(match self.current(&dir, &rel, shown)? {
            Current::Absent => "absent".into(),
            Current::Symlink(target) => format!("symlink:{}", target.display()),
            Current::Dir => "dir".into(),
            Current::File { bytes, .. } => content_fingerprint(&bytes),
        })
    }

    /// The target of a prepare step for the entry `abs` (from [`Self::existing`],
    /// [`Self::target`] or [`Self::entry`]): resource `file:PATH` with `access` and the
    /// fingerprint of what is there now, taken through the capability directory
    /// ([`Self::fingerprint`]; a directory's is its listing, [`toolcat::fingerprint_path`]).
    /// A FIFO, socket or device is never opened: its fingerprint is `special:KIND`.
    ///
    /// # Errors
    /// Those of [`Self::fingerprint`], and the I/O error of listing a directory.
    pub fn fingerprinted(
        &self,
        abs: &Path,
        shown: &str,
        access: Access,
    ) -> Result<Target, ToolError> {
        let rel = self.beneath(abs)?;
        let dir = self.dir()?;
        let with =
            |fingerprint: String| Ok(Target::path_lock(abs, access).with_fingerprint(fingerprint));
        match self.current(&dir, &rel, shown) {
            Ok(Current::Dir) => Target::path(abs, access),
            Ok(Current::Absent) => with("absent".into()),
            Ok(Current::Symlink(target)) => with(format!("symlink:{}", target.display())),
            Ok(Current::File { bytes, .. }) => with(content_fingerprint(&bytes)),
            Err(e) => match dir.symlink_metadata(&rel) {
                Ok(meta) if special_kind(&meta).is_some() => with(format!(
                    "special:{}",
                    special_kind(&meta).unwrap_or_default()
                )),
                _ => Err(e),
            },
        }
    }

    /// What is at `rel` (relative to the root `dir`) now, without following a final symbolic
    /// link; a regular file is read whole (without blocking, [`Self::open_regular`]).
    fn current(&self, dir: &Dir, rel: &Path, shown: &str) -> Result<Current, ToolError> {
        let context = || format!("cannot look at `{shown}`");
        let meta = match dir.symlink_metadata(rel) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Current::Absent),
            Err(e) => return Err(self.open_error(shown, context(), e)),
        };
        if meta.is_symlink() {
            let target = dir
                .read_link_contents(rel)
                .map_err(|e| self.open_error(shown, context(), e))?;
            return Ok(Current::Symlink(target));
        }
        if meta.is_dir() {
            return Ok(Current::Dir);
        }
        let mut file = self.open_regular(dir, rel, shown, FollowSymlinks::No)?;
        let permissions = file
            .metadata()
            .map_err(|e| ToolError::io(context(), e))?
            .permissions();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| ToolError::io(context(), e))?;
        Ok(Current::File { bytes, permissions })
    }

    /// Replaces the file at `abs` with `content` if it still has the fingerprint `expected`:
    /// [`Self::write_atomically`] with a change that ignores the old content.
    ///
    /// # Errors
    /// Those of [`Self::write_atomically`].
    pub fn replace(
        &self,
        abs: &Path,
        shown: &str,
        content: &[u8],
        expected: &str,
    ) -> Result<(), ToolError> {
        self.write_atomically(abs, shown, Some(expected), &FileWork::default(), |_| {
            Ok((content.to_vec(), ()))
        })
    }

    /// The one write of every file tool and state file: replaces the regular file at `abs`
    /// (resolved by [`Self::target`], [`Self::existing`] or [`Self::state_file`]) with what
    /// `change` makes of its current content (`None` when it does not exist yet), atomically,
    /// and returns what `change` returned besides the new bytes. The steps:
    ///
    /// 1. The parent directories are opened one by one from the root's capability directory
    ///    without following a symbolic link (missing ones are created); a link on the way is
    ///    refused ([`ToolError::OutsideWorkspace`] when it leads outside).
    /// 2. The target's lock is taken: an advisory lock ([`std::fs::File::try_lock`]) on its
    ///    lock file `.toolcat/locks/HASH.lock` (HASH: of the path relative to the root; the
    ///    target itself is replaced by the rename, so it cannot carry the lock). A writer that
    ///    finds it held retries for up to [`LOCK_WAIT`], then is refused with a message that
    ///    says so. The lock is held to the end and works across processes; the lock file is
    ///    removed as it is released.
    /// 3. Re-verify: what is at the target now is read (never through a symbolic link, never
    ///    opening a FIFO, socket or device: those, a link and a directory are refused) and, when
    ///    `expected` is given, its fingerprint ([`Self::fingerprint`]) must equal it, else the
    ///    call is refused with "changed while the call ran" and nothing is written. With
    ///    `expected` `None` the change applies to whatever is there (a read-modify-write, which
    ///    the lock makes safe).
    /// 4. `change` runs; its error writes nothing.
    /// 5. The new content goes to a temporary file created exclusively beside the target
    ///    ([`cap_tempfile::TempFile`]: unnamed with `O_TMPFILE`, else a random name with
    ///    `create_new`), keeps an existing file's permissions, is synced, and is renamed over
    ///    the target; the directory is synced after. `work` is asked first
    ///    ([`FileWork::commit`]): a call that gave up waiting writes nothing.
    ///    A file that did not exist at step 3 is created without ever replacing one: the
    ///    content goes to a named temporary file (`create_new`) that is hard-linked to the
    ///    target name (`linkat`, which fails when the name exists) and then removed, so a file
    ///    that appeared meanwhile (written by something outside this layer) is kept and the
    ///    call is refused with "appeared while the call ran".
    ///
    /// Remaining window: a writer that does not use this layer (an editor, a shell command)
    /// and changes an existing file between step 3 and the rename is overwritten; POSIX has no
    /// compare-and-rename.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] when a parent leaves the root; a message for a link,
    /// directory or non-regular file at the target, a lock still held after [`LOCK_WAIT`], a
    /// changed fingerprint, or a call that gave up; `change`'s error; the I/O error otherwise.
    pub fn write_atomically<R>(
        &self,
        abs: &Path,
        shown: &str,
        expected: Option<&str>,
        work: &FileWork,
        change: impl FnOnce(Option<&[u8]>) -> Result<(Vec<u8>, R), ToolError>,
    ) -> Result<R, ToolError> {
        let rel = self.beneath(abs)?;
        let Some(name) = rel.file_name().map(ToOwned::to_owned) else {
            return Err(failed(format!(
                "`{shown}` does not name a file inside the workspace; pass a path such as \
                 `src/main.rs`"
            )));
        };
        let root = self.dir()?;
        let parent_rel = rel.parent().map(Path::to_path_buf).unwrap_or_default();
        let parent = self.open_dirs(&root, &parent_rel, shown, true)?;
        let _lock = self.lock(&root, &rel, shown)?;
        let (old, permissions) = match self.current(&parent, Path::new(&name), shown)? {
            Current::Absent => (None, None),
            Current::File { bytes, permissions } => (Some(bytes), Some(permissions)),
            Current::Dir => {
                return Err(failed(format!(
                    "`{shown}` is a directory; pass the path of a file"
                )))
            }
            Current::Symlink(target) => {
                return Err(failed(format!(
                    "`{shown}` is a symbolic link (to `{}`); a write never goes through one \
                     nor replaces it: write to the file it points to, or delete the link with \
                     `delete_path` first",
                    target.display()
                )))
            }
        };
        if let Some(expected) = expected {
            let now = old
                .as_deref()
                .map_or_else(|| "absent".to_string(), content_fingerprint);
            if now != expected {
                return Err(changed(shown));
            }
        }
        let (content, result) = change(old.as_deref())?;
        let write_context = || format!("cannot write `{shown}`");
        if old.is_none() {
            create_new(&parent, &name, shown, &content, work)?;
            return Ok(result);
        }
        let mut temp =
            cap_tempfile::TempFile::new(&parent).map_err(|e| ToolError::io(write_context(), e))?;
        temp.write_all(&content)
            .map_err(|e| ToolError::io(write_context(), e))?;
        if let Some(permissions) = permissions {
            temp.as_file()
                .set_permissions(permissions)
                .map_err(|e| ToolError::io(write_context(), e))?;
        }
        temp.as_file()
            .sync_all()
            .map_err(|e| ToolError::io(write_context(), e))?;
        work.commit(shown)?;
        temp.replace(&name)
            .map_err(|e| self.open_error(shown, write_context(), e))?;
        // The rename is durable once the directory is synced; a file system that cannot sync
        // a directory still has the file written.
        if let Ok(handle) = parent.open(".") {
            let _ = handle.sync_all();
        }
        Ok(result)
    }

    /// Deletes the regular file at `abs` if it still has the fingerprint `expected`, through
    /// the same steps as [`Self::write_atomically`] (parents opened without following a link,
    /// the target's lock, re-verify), and returns the content it held. `work` is asked before
    /// the removal ([`FileWork::commit`]).
    ///
    /// # Errors
    /// Those of [`Self::write_atomically`]; [`not_found`] when nothing is there.
    pub fn remove_file_if(
        &self,
        abs: &Path,
        shown: &str,
        expected: &str,
        work: &FileWork,
    ) -> Result<Vec<u8>, ToolError> {
        let rel = self.beneath(abs)?;
        let Some(name) = rel.file_name().map(ToOwned::to_owned) else {
            return Err(not_found(shown));
        };
        let root = self.dir()?;
        let parent_rel = rel.parent().map(Path::to_path_buf).unwrap_or_default();
        let parent = self.open_dirs(&root, &parent_rel, shown, false)?;
        let _lock = self.lock(&root, &rel, shown)?;
        let bytes = match self.current(&parent, Path::new(&name), shown)? {
            Current::File { bytes, .. } => bytes,
            Current::Absent => return Err(not_found(shown)),
            Current::Dir => {
                return Err(failed(format!(
                    "`{shown}` is a directory; pass the path of a file"
                )))
            }
            Current::Symlink(target) => {
                return Err(failed(format!(
                    "`{shown}` is a symbolic link (to `{}`), not a file; delete the link with \
                     `delete_path`",
                    target.display()
                )))
            }
        };
        if content_fingerprint(&bytes) != expected {
            return Err(changed(shown));
        }
        work.commit(shown)?;
        parent
            .remove_file(&name)
            .map_err(|e| ToolError::io(format!("cannot delete `{shown}`"), e))?;
        if let Ok(handle) = parent.open(".") {
            let _ = handle.sync_all();
        }
        Ok(bytes)
    }

    /// Reads the regular file at `abs` like [`Self::write_atomically`] looks at it (no
    /// symbolic link followed, neither in the parents nor at the file; nothing but a regular
    /// file opened), without the lock: the layer's writes are atomic renames, so a read sees
    /// the old or the new content, whole. `None` when it does not exist.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] when a parent leads outside; a message for a link, a
    /// directory or a non-regular file; the I/O error otherwise.
    pub fn read_nofollow(&self, abs: &Path, shown: &str) -> Result<Option<Vec<u8>>, ToolError> {
        let rel = self.beneath(abs)?;
        let Some(name) = rel.file_name() else {
            return Err(not_found(shown));
        };
        let root = self.dir()?;
        let parent_rel = rel.parent().map(Path::to_path_buf).unwrap_or_default();
        let parent = match self.open_dirs(&root, &parent_rel, shown, false) {
            Ok(parent) => parent,
            Err(ToolError::Io { source, .. }) if source.kind() == ErrorKind::NotFound => {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        match self.current(&parent, Path::new(name), shown)? {
            Current::Absent => Ok(None),
            Current::File { bytes, .. } => Ok(Some(bytes)),
            Current::Dir => Err(failed(format!(
                "`{shown}` is a directory; it should be a file: move it away"
            ))),
            Current::Symlink(target) => Err(failed(format!(
                "`{shown}` is a symbolic link (to `{}`); it is never followed: delete the link",
                target.display()
            ))),
        }
    }

    /// `.toolcat/FILE` under the root, as it is: nothing is resolved or followed (the write
    /// layer refuses a symbolic link at `.toolcat` or at the file).
    pub fn state_file(&self, file: &str) -> PathBuf {
        self.root.join(STATE_DIR).join(file)
    }

    /// Opens the directory `rel` (relative to `root`) one component at a time without
    /// following a symbolic link, creating missing components when `create`.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] for a link that leads outside the root; a message for a
    /// link that stays inside or a component that is not a directory; the I/O error otherwise
    /// (`NotFound` for a missing component without `create`).
    fn open_dirs(
        &self,
        root: &Dir,
        rel: &Path,
        shown: &str,
        create: bool,
    ) -> Result<Dir, ToolError> {
        let context = || format!("cannot open the directory of `{shown}`");
        let mut dir = root.try_clone().map_err(|e| ToolError::io(context(), e))?;
        let mut walked = PathBuf::new();
        for component in rel.components() {
            let part = match component {
                Component::Normal(part) => part,
                Component::CurDir => continue,
                _ => return Err(self.outside(shown)),
            };
            walked.push(part);
            let opened = match dir.open_dir_nofollow(part) {
                Err(e) if e.kind() == ErrorKind::NotFound && create => match dir.create_dir(part) {
                    Err(e) if e.kind() != ErrorKind::AlreadyExists => {
                        return Err(ToolError::io(
                            format!("cannot create the directory of `{shown}`"),
                            e,
                        ))
                    }
                    _ => dir.open_dir_nofollow(part),
                },
                other => other,
            };
            dir = match opened {
                Ok(next) => next,
                Err(e) => return Err(self.walk_error(root, &dir, &walked, shown, context(), e)),
            };
        }
        Ok(dir)
    }

    /// Why `walked` (the last component of which is in `dir`) could not be opened as a
    /// directory without following a link.
    fn walk_error(
        &self,
        root: &Dir,
        dir: &Dir,
        walked: &Path,
        shown: &str,
        context: String,
        e: std::io::Error,
    ) -> ToolError {
        let Some(part) = walked.file_name() else {
            return ToolError::io(context, e);
        };
        match dir.symlink_metadata(part) {
            Ok(meta) if meta.is_symlink() => match root.metadata(walked) {
                Err(probe) if is_escape(&probe) => self.outside(shown),
                _ => failed(format!(
                    "`{}` is a symbolic link; a write never follows one: write to the path it \
                     points to, or replace the link with a directory",
                    walked.display()
                )),
            },
            Ok(meta) if !meta.is_dir() => failed(format!(
                "`{}` is not a directory, so `{shown}` cannot be inside it",
                walked.display()
            )),
            _ => self.open_error(shown, context, e),
        }
    }

    /// Takes the lock of the target `rel` (relative to the root), waiting up to [`LOCK_WAIT`]:
    /// see [`Self::write_atomically`], step 2.
    fn lock(&self, root: &Dir, rel: &Path, shown: &str) -> Result<TargetLock, ToolError> {
        let dir = self.open_dirs(root, &Path::new(STATE_DIR).join(LOCK_DIR), shown, true)?;
        let hash = content_fingerprint(rel.as_os_str().as_encoded_bytes());
        let name = format!("{}.lock", &hash["sha256:".len()..][..32]);
        let context =
            || format!("cannot lock `{shown}` (lock file `{STATE_DIR}/{LOCK_DIR}/{name}`)");
        let mut options = OpenOptions::new();
        options
            .read(true)
            .write(true)
            .create(true)
            .follow(FollowSymlinks::No)
            .nonblock(true);
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            let file = dir
                .open_with(&name, &options)
                .map_err(|e| ToolError::io(context(), e))?
                .into_std();
            match file.try_lock() {
                // The previous holder may have removed the file after this open: then the lock
                // is on a file nobody else will lock, and the current one must be locked.
                Ok(()) if same_file(&dir, &name, &file) => {
                    return Ok(TargetLock { dir, name, file });
                }
                Ok(()) | Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => return Err(ToolError::io(context(), e)),
            }
            drop(file);
            if started.elapsed() >= LOCK_WAIT {
                return Err(failed(format!(
                    "`{shown}` is being written by another call, which still held its lock \
                     after {} s; nothing was written; call again once it is done",
                    LOCK_WAIT.as_secs()
                )));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// The directory holding the entry `abs` (from [`Self::entry`] or [`Self::target`]), opened
    /// through the root's capability directory, and the entry's name in it: what `delete_path`
    /// and `move_path` act on, so a symbolic link swapped into a parent after resolution cannot
    /// lead them outside. The entry itself is not followed.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] when the parent leaves the root; [`not_found`] when it
    /// does not exist; a message when `abs` is the root.
    pub fn parent_dir(&self, abs: &Path, shown: &str) -> Result<(Dir, OsString), ToolError> {
        let rel = self.beneath(abs)?;
        let Some(name) = rel.file_name().map(ToOwned::to_owned) else {
            return Err(failed(format!(
                "`{shown}` does not name a file or directory inside the workspace; pass a path \
                 such as `src/main.rs`"
            )));
        };
        let parent_rel = rel
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let parent = self.dir()?.open_dir(&parent_rel).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                not_found(shown)
            } else {
                self.open_error(shown, format!("cannot open the directory of `{shown}`"), e)
            }
        })?;
        Ok((parent, name))
    }

    /// The entries of the directory `abs` (from [`Self::existing`]), listed through the root's
    /// capability directory: each name with its metadata, a symbolic link not followed.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] when the open would leave the root; a message for a file;
    /// the I/O error otherwise.
    pub fn list(
        &self,
        abs: &Path,
        shown: &str,
    ) -> Result<Vec<(String, cap_std::fs::Metadata)>, ToolError> {
        let rel = self.beneath(abs)?;
        let dir = self.dir()?;
        let context = || format!("cannot list `{shown}`");
        let entries = dir.read_dir(&rel).map_err(|e| {
            if e.kind() == ErrorKind::NotADirectory {
                failed(format!("`{shown}` is a file; use `read_file` to read it"))
            } else {
                self.open_error(shown, context(), e)
            }
        })?;
        let mut listed = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| ToolError::io(context(), e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let meta = entry
                .metadata()
                .map_err(|e| ToolError::io(format!("cannot inspect `{shown}/{name}`"), e))?;
            listed.push((name, meta));
        }
        Ok(listed)
    }

    /// The metadata of the entry `abs` (from [`Self::entry`], or the root), looked at through
    /// the root's capability directory without following a final symbolic link; `None` when
    /// nothing is there or it cannot be looked at.
    pub fn entry_metadata(&self, abs: &Path, shown: &str) -> Option<cap_std::fs::Metadata> {
        if abs == self.root {
            return self.dir().ok()?.dir_metadata().ok();
        }
        let (parent, name) = self.parent_dir(abs, shown).ok()?;
        parent.symlink_metadata(&name).ok()
    }

    /// Keeps only the paths of `files` (absolute, under the root) that are regular files inside
    /// the workspace now, each looked at through the root's capability directory with no
    /// symbolic link followed in its parents (opened one at a time with `O_NOFOLLOW`, as
    /// [`Self::write_atomically`] does) or at itself. A walk that reopens directories by name
    /// can be led outside by a directory swapped for a link mid-walk; this drops what it
    /// found there. Paths that cannot be looked at are dropped too.
    pub fn retain_files(&self, files: &mut Vec<PathBuf>) {
        let Ok(root) = self.dir() else {
            files.clear();
            return;
        };
        files.retain(|abs| {
            let Ok(rel) = self.beneath(abs) else {
                return false;
            };
            let (Some(name), Some(parent)) = (rel.file_name(), rel.parent()) else {
                return false;
            };
            self.open_dirs(&root, parent, &rel.to_string_lossy(), false)
                .ok()
                .and_then(|dir| dir.symlink_metadata(name).ok())
                .is_some_and(|meta| meta.is_file())
        });
    }

    /// Creates the directory `abs` (from [`Self::target`]) and its missing parents through the
    /// root's capability directory.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] when a parent leaves the root; the I/O error otherwise.
    pub fn create_dir_all(&self, abs: &Path, shown: &str) -> Result<(), ToolError> {
        let rel = self.beneath(abs)?;
        let root = self.dir()?;
        root.create_dir_all(&rel).map_err(|e| {
            self.create_error(&root, &rel, shown, format!("cannot create `{shown}`"), e)
        })
    }

    /// Maps an error of `create_dir_all(rel)` through `root`: a component that leads outside
    /// (a symbolic link, which `mkdir` reports as existing) is [`ToolError::OutsideWorkspace`].
    fn create_error(
        &self,
        root: &Dir,
        rel: &Path,
        shown: &str,
        context: String,
        e: std::io::Error,
    ) -> ToolError {
        match root.metadata(rel) {
            Err(probe) if is_escape(&probe) => self.outside(shown),
            _ => self.open_error(shown, context, e),
        }
    }

    fn resolve(&self, path: &str) -> Result<Resolved, ToolError> {
        let trimmed = path.trim();
        if let Some(c) = trimmed.chars().find(|c| c.is_control()) {
            return Err(failed(format!(
                "the path `{}` contains the control character U+{:04X}; nothing was read or \
                 written: pass the path on one line, without control characters",
                trimmed.escape_debug(),
                u32::from(c)
            )));
        }
        let joined = if trimmed.is_empty() {
            self.root.clone()
        } else {
            self.root.join(trimmed)
        };
        let components: Vec<Component<'_>> = joined.components().collect();
        // The deepest prefix that exists on disk (a dangling symbolic link counts as existing,
        // and then fails to canonicalize below).
        let mut split = components.len();
        loop {
            let prefix: PathBuf = components[..split].iter().collect();
            if split == 0 || std::fs::symlink_metadata(&prefix).is_ok() {
                break;
            }
            split -= 1;
        }
        let prefix: PathBuf = components[..split].iter().collect();
        let mut resolved = std::fs::canonicalize(&prefix).map_err(|e| {
            ToolError::io(format!("cannot resolve `{path}` inside the workspace"), e)
        })?;
        let exists = split == components.len();
        let existing = resolved.clone();
        for component in &components[split..] {
            match component {
                Component::Normal(part) => resolved.push(part),
                Component::CurDir => {}
                _ => return Err(self.outside(path)),
            }
        }
        if !resolved.starts_with(&self.root) {
            return Err(self.outside(path));
        }
        if !exists && existing.is_file() {
            return Err(failed(format!(
                "`{}` is a file, so `{trimmed}` cannot be inside it; nothing was read or \
                 written: pass a path whose directories are directories",
                self.relative(&existing)
            )));
        }
        Ok(Resolved {
            path: resolved,
            exists,
        })
    }

    fn outside(&self, path: &str) -> ToolError {
        ToolError::OutsideWorkspace {
            path: path.to_string(),
            workspace: self.root.display().to_string(),
        }
    }
}

struct Resolved {
    path: PathBuf,
    exists: bool,
}

/// Creates `name` in `parent` with `content`, never replacing an entry of that name: the
/// content is written and synced to a temporary file of a fresh name (`create_new`), which is
/// hard-linked to `name` and then removed ([`Workspace::write_atomically`], step 5).
fn create_new(
    parent: &Dir,
    name: &std::ffi::OsStr,
    shown: &str,
    content: &[u8],
    work: &FileWork,
) -> Result<(), ToolError> {
    static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let context = || format!("cannot write `{shown}`");
    let mut options = OpenOptions::new();
    options
        .write(true)
        .create_new(true)
        .follow(FollowSymlinks::No);
    let (temp_name, mut file) = loop {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let candidate = format!(
            ".{}.{}-{nanos}-{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        );
        match parent.open_with(&candidate, &options) {
            Ok(file) => break (candidate, file),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(ToolError::io(context(), e)),
        }
    };
    let written = file
        .write_all(content)
        .and_then(|()| file.sync_all())
        .map_err(|e| ToolError::io(context(), e))
        .and_then(|()| work.commit(shown))
        .and_then(|()| {
            parent
                .hard_link(&temp_name, parent, name)
                .map_err(|e| match e.kind() {
                    ErrorKind::AlreadyExists => appeared(shown),
                    _ => ToolError::io(context(), e),
                })
        });
    let _ = parent.remove_file(&temp_name);
    written?;
    if let Ok(handle) = parent.open(".") {
        let _ = handle.sync_all();
    }
    Ok(())
}

/// The error for a file that did not exist when a call checked and exists now.
pub fn appeared(path: &str) -> ToolError {
    failed(format!(
        "`{path}` appeared while the call ran (something else created it); nothing was \
         written and it was kept; read it, then call again"
    ))
}

/// An open through a capability directory that would have left it: cap-std reports it as
/// `PermissionDenied` "a path led outside of the filesystem".
fn is_escape(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::PermissionDenied && e.to_string().contains("outside")
}

/// The fingerprint [`Workspace::fingerprint`] gives a regular file holding `bytes`:
/// `sha256:HEX`, as [`toolcat::fingerprint_path`].
pub fn content_fingerprint(bytes: &[u8]) -> String {
    let digest = sha2::Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The error for a file that changed between what a handler read (or was approved) and the
/// moment it would write.
pub fn changed(path: &str) -> ToolError {
    failed(format!(
        "`{path}` changed while the call ran; nothing was written; call again"
    ))
}

/// The error for a path that does not exist.
pub fn not_found(path: &str) -> ToolError {
    failed(format!(
        "`{path}` does not exist in the workspace; use `list_directory` or `glob` to find the \
         right path"
    ))
}

/// What is at a path, looked at without following a final symbolic link.
enum Current {
    Absent,
    Symlink(PathBuf),
    Dir,
    File {
        bytes: Vec<u8>,
        permissions: cap_std::fs::Permissions,
    },
}

/// A held target lock ([`Workspace::write_atomically`], step 2): on drop the lock file is
/// removed while still locked, then closed, which releases the lock.
struct TargetLock {
    dir: Dir,
    name: String,
    #[allow(dead_code)] // held for its lock; closed on drop
    file: std::fs::File,
}

impl Drop for TargetLock {
    fn drop(&mut self) {
        // A waiter that opened the removed file finds it is no longer the one at the path
        // (`same_file`) and opens the new one.
        if cfg!(unix) {
            let _ = self.dir.remove_file(&self.name);
        }
    }
}

/// Whether the open lock `file` is still the file `name` in `dir` (it was not removed and
/// created anew since it was opened). Elsewhere than Unix lock files are never removed.
fn same_file(dir: &Dir, name: &str, file: &std::fs::File) -> bool {
    #[cfg(unix)]
    {
        use cap_std::fs::MetadataExt as _;
        use std::os::unix::fs::MetadataExt as _;
        match (dir.symlink_metadata(name), file.metadata()) {
            (Ok(at_path), Ok(open)) => at_path.dev() == open.dev() && at_path.ino() == open.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (dir, name, file);
        true
    }
}

/// Reads `file` whole, refusing more than `max_bytes` (one byte past the limit tells a file
/// that grew after its size was checked).
fn read_bounded(file: File, shown: &str, max_bytes: u64) -> Result<Vec<u8>, ToolError> {
    let context = || format!("cannot read `{shown}`");
    let len = file
        .metadata()
        .map_err(|e| ToolError::io(context(), e))?
        .len();
    let too_big = |len: String| {
        failed(format!(
            "`{shown}` is {len} bytes, over the {max_bytes}-byte limit; use `grep` to find the \
             part you need"
        ))
    };
    if len > max_bytes {
        return Err(too_big(len.to_string()));
    }
    let mut bytes = Vec::new();
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io(context(), e))?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_big("over".into()));
    }
    Ok(bytes)
}

/// `a FIFO`, `a socket`, `a character device` or `a block device` for those kinds of file;
/// `None` for a regular file, a directory or a symbolic link.
fn special_kind(meta: &cap_std::fs::Metadata) -> Option<&'static str> {
    let ft = meta.file_type();
    if ft.is_file() || ft.is_dir() || ft.is_symlink() {
        return None;
    }
    #[cfg(unix)]
    {
        use cap_std::fs::FileTypeExt as _;
        if ft.is_fifo() {
            return Some("a FIFO");
        }
        if ft.is_socket() {
            return Some("a socket");
        }
        if ft.is_char_device() {
            return Some("a character device");
        }
        if ft.is_block_device() {
            return Some("a block device");
        }
    }
    Some("not a regular file")
}

/// The refusal of anything but a regular file where file content is read or written.
fn not_regular(shown: &str, meta: &cap_std::fs::Metadata) -> ToolError {
    if meta.is_dir() {
        return failed(format!("`{shown}` is a directory; pass the path of a file"));
    }
    let kind = special_kind(meta).unwrap_or("not a regular file");
    failed(format!(
        "`{shown}` is {kind}, not a regular file; file tools only read and write regular files \
         (it is refused before it is opened, so it cannot stall the call)"
    ))
}

/// The state of one piece of blocking file work run by [`blocking`], shared by the job and the
/// call waiting for it: running, committing (a write is making its change visible) or
/// abandoned (the call stopped waiting).
#[derive(Debug, Default)]
pub struct FileWork(AtomicU8);

const RUNNING: u8 = 0;
const COMMITTING: u8 = 1;
const ABANDONED: u8 = 2;

impl FileWork {
    /// Asked by a writer right before its change becomes visible (the rename): from then on
    /// the call waits for the job whatever its timeout.
    ///
    /// # Errors
    /// When the call already gave up waiting ([`FILE_WORK_TIMEOUT`]): the writer must not
    /// write, so the call's "nothing was written" stays true.
    pub fn commit(&self, shown: &str) -> Result<(), ToolError> {
        match self
            .0
            .compare_exchange(RUNNING, COMMITTING, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) | Err(COMMITTING) => Ok(()),
            Err(_) => Err(failed(format!(
                "the call on `{shown}` gave up waiting; nothing was written"
            ))),
        }
    }

    /// Whether the call gave up waiting: a long job (a search walk) stops early.
    pub fn abandoned(&self) -> bool {
        self.0.load(Ordering::SeqCst) == ABANDONED
    }

    /// Gives up unless a write is committing; true when given up.
    fn abandon(&self) -> bool {
        self.0
            .compare_exchange(RUNNING, ABANDONED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }
}

/// Runs the blocking file work `job` of one call on tokio's blocking pool, so no file system
/// operation ever holds a tokio worker, and waits at most [`FILE_WORK_TIMEOUT`] for it. `what`
/// names the work in messages (a path, or "the search").
///
/// A job still running at the timeout is abandoned: the call fails with a message saying so,
/// and a writer in it then writes nothing ([`FileWork::commit`]); a writer already committing
/// is waited for, so the outcome the call reports is the one on disk.
///
/// # Errors
/// The job's error; a message for a timeout or a job that panicked.
pub async fn blocking<T: Send + 'static>(
    what: &str,
    job: impl FnOnce(&FileWork) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let work = Arc::new(FileWork::default());
    let shared = Arc::clone(&work);
    let mut handle = tokio::task::spawn_blocking(move || job(&shared));
    let stopped =
        |e: tokio::task::JoinError| failed(format!("the work on {what} stopped unexpectedly: {e}"));
    match tokio::time::timeout(FILE_WORK_TIMEOUT, &mut handle).await {
        Ok(joined) => joined.map_err(stopped)?,
        Err(_) if work.abandon() => Err(failed(format!(
            "the work on {what} did not finish within {} s (a stalled or very slow file \
             system?); nothing was written; check the file system, then call again",
            FILE_WORK_TIMEOUT.as_secs()
        ))),
        Err(_) => handle.await.map_err(stopped)?,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("src/inner")).expect("mkdir");
        std::fs::write(dir.path().join("src/lib.rs"), "fn x() {}\n").expect("write");
        let ws = Workspace::open(&ToolContext::new(dir.path())).expect("open");
        (dir, ws)
    }

    #[test]
    fn retain_files_drops_a_match_under_a_directory_now_a_link_to_outside() {
        let (dir, ws) = setup();
        let outside = tempfile::tempdir().expect("temp dir");
        std::fs::write(outside.path().join("OUTSIDE_1"), "secret\n").expect("write");
        std::fs::create_dir(dir.path().join("d")).expect("mkdir");
        std::fs::write(dir.path().join("d/inside.txt"), "x\n").expect("write");
        // `d` as the walk saw it, then swapped for a link to the outside folder.
        let walked_inside = ws.root().join("d/inside.txt");
        std::fs::rename(dir.path().join("d"), dir.path().join("d.old")).expect("rename");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("d")).expect("symlink");
        std::os::unix::fs::symlink("lib.rs", dir.path().join("src/link.rs")).expect("symlink");
        let mut files = vec![
            ws.root().join("src/lib.rs"),
            ws.root().join("d/OUTSIDE_1"),
            walked_inside,
            ws.root().join("src/link.rs"),
            ws.root().join("src/inner"),
            ws.root().join("src/gone.rs"),
        ];
        assert!(ws.root().join("d/OUTSIDE_1").is_file(), "reachable by path");
        ws.retain_files(&mut files);
        assert_eq!(files, vec![ws.root().join("src/lib.rs")]);
    }

    #[test]
    fn relative_and_absolute_paths_inside_resolve() {
        let (dir, ws) = setup();
        let rel = ws.existing("src/lib.rs").expect("relative");
        assert_eq!(ws.relative(&rel), "src/lib.rs");
        let abs = dir.path().join("src/lib.rs");
        let via_abs = ws.existing(&abs.to_string_lossy()).expect("absolute");
        assert_eq!(via_abs, rel);
        let dotted = ws.existing("src/inner/../lib.rs").expect("dot-dot inside");
        assert_eq!(dotted, rel);
        assert_eq!(ws.relative(&ws.existing("").expect("root")), ".");
    }

    #[test]
    fn dot_dot_escapes_are_refused() {
        let (_dir, ws) = setup();
        for path in [
            "..",
            "../x",
            "src/../../x",
            "/etc/passwd",
            "src/new/../../../x",
        ] {
            let err = ws.target(path).expect_err(path);
            assert!(
                matches!(err, ToolError::OutsideWorkspace { .. }),
                "{path}: {err}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_pointing_outside_are_refused() {
        let (dir, ws) = setup();
        let outside = tempfile::tempdir().expect("outside dir");
        std::fs::write(outside.path().join("secret"), "s").expect("write");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).expect("symlink");
        let err = ws.existing("link/secret").expect_err("through link");
        assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err}");
        let err = ws.target("link/new-file").expect_err("write through link");
        assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err}");
        // The link itself is an entry inside the workspace.
        let entry = ws.entry("link").expect("entry");
        assert_eq!(entry, ws.root().join("link"));
    }

    #[test]
    fn missing_targets_resolve_below_their_existing_ancestor() {
        let (_dir, ws) = setup();
        let target = ws.target("src/new/dir/file.txt").expect("target");
        assert_eq!(ws.relative(&target), "src/new/dir/file.txt");
        assert!(matches!(
            ws.existing("src/missing.rs"),
            Err(ToolError::Failed(_))
        ));
    }

    #[test]
    fn entry_refuses_the_root() {
        let (_dir, ws) = setup();
        for path in ["", ".", "src/.."] {
            assert!(ws.entry(path).is_err(), "{path}");
        }
        assert_eq!(
            ws.relative(&ws.entry("src/lib.rs").expect("entry")),
            "src/lib.rs"
        );
    }
}
