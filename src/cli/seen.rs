//! Catalog warnings shown once per catalog content: the first command that loads a catalog with
//! warnings prints them all; later commands on the same content print one summary line instead
//! (`toolcat check` always prints them, it does not come here). What was shown is remembered as
//! an empty file named after a SHA-256 of the catalog's bytes and this toolcat's version, under
//! `$TOOLCAT_CACHE_DIR/warnings-shown/` when that is set, else the user cache directory
//! (`$XDG_CACHE_HOME/toolcat`, `~/.cache/toolcat` on Linux). A cache that cannot be read or
//! written never fails a command: the warnings are then printed in full. A leaf: it imports no
//! other module of the command line.

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// The environment variable naming the cache directory (tests set it to a temporary one).
pub const CACHE_DIR_ENV: &str = "TOOLCAT_CACHE_DIR";

/// The directory of the shown-warnings markers, if one can be named.
fn marker_dir() -> Option<PathBuf> {
    let base = match std::env::var_os(CACHE_DIR_ENV).filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => directories::ProjectDirs::from("", "", "toolcat")?
            .cache_dir()
            .to_path_buf(),
    };
    Some(base.join("warnings-shown"))
}

/// Prints the `count` warnings of the catalog at `path` (`rendered`, as
/// `Catalog::render_warnings` gives them) on stderr the first time this content is seen, else
/// one line: `note: N warnings of PATH, shown before; run `toolcat check --catalog PATH` to see
/// them`.
pub fn print_warnings_once(path: &Path, count: usize, rendered: &str) {
    if count == 0 {
        return;
    }
    let marker = std::fs::read(path).ok().and_then(|bytes| {
        let mut hash = Sha256::new();
        hash.update(env!("CARGO_PKG_VERSION").as_bytes());
        hash.update([0]);
        hash.update(&bytes);
        let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
        Some(marker_dir()?.join(hex))
    });
    if marker.as_deref().is_some_and(Path::is_file) {
        let noun = if count == 1 { "warning" } else { "warnings" };
        eprintln!(
            "note: {count} {noun} of `{p}`, shown before; run `toolcat check --catalog {p}` to see them",
            p = path.display()
        );
        return;
    }
    eprint!("{rendered}");
    if let Some(marker) = marker {
        // Best effort: an unwritable cache only means the warnings are shown again next time.
        let _ = marker
            .parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .and_then(|_| std::fs::write(&marker, b""));
    }
}
