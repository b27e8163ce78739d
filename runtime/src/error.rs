//! Errors of the catalog side of the runtime: building a [`crate::Catalog`] and looking names up.
//!
//! Tool calls fail with [`crate::ToolError`] instead; these errors are for the host and the CLI.

use std::fmt;
use std::path::PathBuf;

use toolcat_catalog::diagnostics::{did_you_mean, Diagnostic};
use toolcat_catalog::index::IndexError;

/// Why a [`crate::Catalog`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The catalog file could not be read.
    #[error("cannot read catalog `{path}`: {source}; check the path and its permissions")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The catalog source breaks the rules of `tools.toml`. `rendered` holds every diagnostic
    /// rendered against the source (`PATH:LINE:COL: error[CODE]: ...`, excerpt, help), and is
    /// what this error displays.
    #[error("{rendered}")]
    Invalid {
        path: String,
        diagnostics: Vec<Diagnostic>,
        rendered: String,
    },
    /// The search index could not be built or opened.
    #[error("{0}")]
    Index(#[from] IndexError),
    /// The embedded search index does not describe the tables it came with.
    #[error(
        "the search index holds {index} tools but the catalog has {tables}; rebuild so the index is regenerated from the same `tools.toml`"
    )]
    IndexMismatch { index: usize, tables: usize },
    /// The tables break the layout of `toolcat_catalog::tables` (a column of the wrong length, an
    /// index out of range, an `input_schema` that is not JSON).
    #[error("the catalog tables are inconsistent: {0}; regenerate them from `tools.toml` (`cargo build` for a compiled catalog)")]
    Tables(String),
    /// The handler table does not match the tables (wrong length, a handler for a tool that is
    /// not local, or under another tool's name).
    #[error("the handler table does not match the catalog: {0}; regenerate the dispatch table from the same `tools.toml`")]
    Handlers(String),
}

/// The kind of name a lookup was for; displayed in errors (`unknown profile ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NameKind {
    Tool,
    Profile,
    Toolset,
    Preset,
    Server,
}

impl NameKind {
    /// The vocabulary word: `tool`, `profile`, `toolset`, `preset` or `MCP server`.
    pub const fn as_str(self) -> &'static str {
        match self {
            NameKind::Tool => "tool",
            NameKind::Profile => "profile",
            NameKind::Toolset => "toolset",
            NameKind::Preset => "preset",
            NameKind::Server => "MCP server",
        }
    }
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name lookup that found nothing, or more than one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameError {
    /// No item of `kind` has this name. `suggestion` is the closest known name when one is close
    /// enough (the rule of `tools.toml` diagnostics, `toolcat_catalog::diagnostics::did_you_mean`);
    /// `known` lists up to [`KNOWN_LISTED`] known names otherwise.
    Unknown {
        kind: NameKind,
        name: String,
        suggestion: Option<String>,
        known: Vec<String>,
        /// Total number of known names of this kind.
        known_total: usize,
    },
    /// A declared tool name shared by tools of several namespaced servers; the exported names
    /// (`NS__name`) are unique.
    Ambiguous {
        name: String,
        candidates: Vec<String>,
    },
}

/// How many known names an [`NameError::Unknown`] lists when there is no close suggestion.
pub const KNOWN_LISTED: usize = 8;

impl std::error::Error for NameError {}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Unknown {
                kind,
                name,
                suggestion,
                known,
                known_total,
            } => {
                write!(f, "unknown {kind} `{name}`")?;
                if let Some(s) = suggestion {
                    return write!(f, "; did you mean `{s}`?");
                }
                if known.is_empty() {
                    return write!(f, "; the catalog declares no {kind}");
                }
                write!(f, "; known: ")?;
                for (i, k) in known.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "`{k}`")?;
                }
                if *known_total > known.len() {
                    write!(f, " and {} more", known_total - known.len())?;
                }
                Ok(())
            }
            NameError::Ambiguous { name, candidates } => {
                write!(
                    f,
                    "tool name `{name}` is declared by several servers; use one of "
                )?;
                for (i, c) in candidates.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "`{c}`")?;
                }
                Ok(())
            }
        }
    }
}

impl NameError {
    /// An [`NameError::Unknown`] for `name` among `known` (in catalog order).
    pub(crate) fn unknown<'a>(
        kind: NameKind,
        name: &str,
        known: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let known: Vec<&str> = known.into_iter().collect();
        let suggestion = did_you_mean(name, known.iter().copied()).map(str::to_string);
        NameError::Unknown {
            kind,
            name: name.to_string(),
            known: if suggestion.is_some() {
                Vec::new()
            } else {
                known
                    .iter()
                    .take(KNOWN_LISTED)
                    .map(|k| k.to_string())
                    .collect()
            },
            known_total: known.len(),
            suggestion,
        }
    }
}

/// Why a search failed. Searching an in-memory index fails only on an internal tantivy error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SearchError(#[from] pub IndexError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_name_suggests_the_closest() {
        let e = NameError::unknown(NameKind::Profile, "reviewr", ["full", "reviewer", "coder"]);
        assert_eq!(
            e.to_string(),
            "unknown profile `reviewr`; did you mean `reviewer`?"
        );
    }

    #[test]
    fn unknown_name_lists_known_names_when_nothing_is_close() {
        let e = NameError::unknown(NameKind::Toolset, "zzz", ["files", "git"]);
        assert_eq!(
            e.to_string(),
            "unknown toolset `zzz`; known: `files`, `git`"
        );
        let many: Vec<String> = (0..10).map(|i| format!("set{i}")).collect();
        let e = NameError::unknown(NameKind::Toolset, "zzz", many.iter().map(|s| s.as_str()));
        assert!(e.to_string().ends_with("and 2 more"), "{e}");
        let e = NameError::unknown(NameKind::Preset, "x", []);
        assert_eq!(
            e.to_string(),
            "unknown preset `x`; the catalog declares no preset"
        );
    }
}
