//! Resolving path arguments inside the workspace.
//!
//! Rule: a path argument names something inside `ToolContext::workspace` after every `..` and
//! every symbolic link is resolved. Relative paths are taken from the workspace root; absolute
//! paths are accepted when they point inside it. The checks use canonical paths
//! (`std::fs::canonicalize`), so a link inside the workspace that points outside is refused like
//! a `../../etc/passwd`. Parts of a path that do not exist yet (a file about to be written) may
//! not contain `..`, since there is nothing on disk to canonicalize them against.

use std::path::{Component, Path, PathBuf};

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
