//! Resolving path arguments inside the workspace.
//!
//! Rule: a path argument names something inside `ToolContext::workspace` after every `..` and
//! every symbolic link is resolved. Relative paths are taken from the workspace root; absolute
//! paths are accepted when they point inside it. The checks use canonical paths
//! (`std::fs::canonicalize`), so a link inside the workspace that points outside is refused like
//! a `../../etc/passwd`. Parts of a path that do not exist yet (a file about to be written) may
//! not contain `..`, since there is nothing on disk to canonicalize them against.
//!
//! Resolving a path and then opening it by name again would leave a window: a symbolic link
//! swapped in between could lead the open outside. So file contents are read and written only
//! through a capability directory on the root ([`cap_std::fs::Dir`], opened with `openat` and
//! resolving beneath it): [`Workspace::read`] and [`Workspace::replace`] open the resolved
//! path relative to that directory, and an open that would leave it through `..` or a symbolic
//! link fails with [`ToolError::OutsideWorkspace`], whatever changed on disk since resolution.
//! A symbolic link that stays inside the workspace is still followed, except that an absolute
//! link target counts as leaving (it is not resolved against the root).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use sha2::Digest;
use toolcat::{ToolContext, ToolError};

use super::failed;

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
    /// capability directory, refusing a directory and a file over `max_bytes`. `shown` is the
    /// path as the caller gave it, for messages.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] when the open would leave the root (a symbolic link
    /// swapped in after resolution); a message for a directory or an oversized file; the I/O
    /// error otherwise.
    pub fn read(&self, abs: &Path, shown: &str, max_bytes: u64) -> Result<Vec<u8>, ToolError> {
        let rel = self.beneath(abs)?;
        let mut file = self
            .dir()?
            .open(&rel)
            .map_err(|e| self.open_error(shown, format!("cannot read `{shown}`"), e))?;
        let meta = file
            .metadata()
            .map_err(|e| ToolError::io(format!("cannot read `{shown}`"), e))?;
        if meta.is_dir() {
            return Err(failed(format!(
                "`{shown}` is a directory; use `list_directory` to see what it holds"
            )));
        }
        if meta.len() > max_bytes {
            return Err(failed(format!(
                "`{shown}` is {} bytes, over the {max_bytes}-byte limit; use `grep` to find the \
                 part you need",
                meta.len()
            )));
        }
        let mut bytes = Vec::new();
        // One byte past the limit tells a file that grew after the check.
        (&mut file)
            .take(max_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| ToolError::io(format!("cannot read `{shown}`"), e))?;
        if bytes.len() as u64 > max_bytes {
            return Err(failed(format!(
                "`{shown}` is over the {max_bytes}-byte limit; use `grep` to find the part you \
                 need"
            )));
        }
        Ok(bytes)
    }

    /// What is at `abs` now, in the format of [`toolcat::fingerprint_path`] for files
    /// (`absent`, `sha256:HEX`, `symlink:TARGET`; a directory is `dir`), looked at through the
    /// root's capability directory without following a final symbolic link.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] when the parent leaves the root; the I/O error otherwise.
    pub fn fingerprint(&self, abs: &Path, shown: &str) -> Result<String, ToolError> {
        let rel = self.beneath(abs)?;
        let context = || format!("cannot fingerprint `{shown}`");
        let dir = self.dir()?;
        let meta = match dir.symlink_metadata(&rel) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok("absent".into()),
            Err(e) => return Err(self.open_error(shown, context(), e)),
        };
        if meta.is_symlink() {
            let target = dir
                .read_link_contents(&rel)
                .map_err(|e| self.open_error(shown, context(), e))?;
            return Ok(format!("symlink:{}", target.display()));
        }
        if meta.is_dir() {
            return Ok("dir".into());
        }
        let mut file = dir
            .open(&rel)
            .map_err(|e| self.open_error(shown, context(), e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| ToolError::io(context(), e))?;
        Ok(content_fingerprint(&bytes))
    }

    /// Replaces the file at `abs` (resolved by [`Self::target`]) with `content`, atomically:
    /// missing parent directories are created through the root's capability directory, the
    /// content goes to a temporary file in the same directory ([`cap_tempfile::TempFile`]),
    /// which is renamed over the target. An existing regular file keeps its permissions.
    ///
    /// Just before the rename, what is at the target is fingerprinted again
    /// ([`Self::fingerprint`]) and compared with `expected`; when it differs the call is refused
    /// and nothing is written. Remaining window: a writer that changes the file between that
    /// check and the rename (microseconds) is still overwritten, since POSIX has no
    /// compare-and-rename. The rename replaces a symbolic link placed at the target, never
    /// what it points to.
    ///
    /// # Errors
    /// [`ToolError::OutsideWorkspace`] when a parent leaves the root; a "changed while the call
    /// ran" message when the fingerprint differs; the I/O error otherwise.
    pub fn replace(
        &self,
        abs: &Path,
        shown: &str,
        content: &[u8],
        expected: &str,
    ) -> Result<(), ToolError> {
        let rel = self.beneath(abs)?;
        let Some(name) = rel.file_name().map(ToOwned::to_owned) else {
            return Err(failed(format!(
                "`{shown}` does not name a file inside the workspace; pass a path such as \
                 `src/main.rs`"
            )));
        };
        let root = self.dir()?;
        let parent_rel = rel
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let dir_context = || format!("cannot create the directory of `{shown}`");
        root.create_dir_all(&parent_rel)
            .map_err(|e| self.create_error(&root, &parent_rel, shown, dir_context(), e))?;
        let parent = root
            .open_dir(&parent_rel)
            .map_err(|e| self.open_error(shown, dir_context(), e))?;
        let write_context = || format!("cannot write `{shown}`");
        let mut temp =
            cap_tempfile::TempFile::new(&parent).map_err(|e| ToolError::io(write_context(), e))?;
        temp.write_all(content)
            .and_then(|()| temp.as_file().sync_all())
            .map_err(|e| ToolError::io(write_context(), e))?;
        if let Ok(meta) = parent.symlink_metadata(&name) {
            if meta.is_file() {
                temp.as_file()
                    .set_permissions(meta.permissions())
                    .map_err(|e| ToolError::io(write_context(), e))?;
            }
        }
        let now = self.fingerprint(abs, shown)?;
        if now != expected {
            return Err(changed(shown));
        }
        temp.replace(&name)
            .map_err(|e| self.open_error(shown, write_context(), e))
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
