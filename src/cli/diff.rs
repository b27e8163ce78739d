//! `toolcat diff`: what a change to a `tools.toml` does to each answer, from two files or from a
//! git revision and a file, as text, Markdown (a pull-request comment) or JSON. The comparison
//! is the library's (`toolcat_catalog::diff`); this module reads the two catalogs and renders.

use crate::cli::Exit;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use toolcat_catalog::diagnostics::render_all;
use toolcat_catalog::diff::{add_server_settings, diff, Diff, FieldChange};
use toolcat_catalog::model::McpServerDecl;
use toolcat_catalog::tables::Tables;

use super::args::{count, Reported};

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// `OLD NEW`: the two `tools.toml` files. With `--base`, at most `NEW` (default: `tools.toml`
    /// in the current directory).
    #[arg(value_name = "PATH", num_args = 0..=2)]
    pub paths: Vec<PathBuf>,
    /// Read the old catalog from this git revision (`git show --end-of-options REV:./FILE`, FILE being `NEW`'s
    /// name, in `NEW`'s directory), e.g. `HEAD~1` or `origin/main`.
    #[arg(long, value_name = "GIT_REV")]
    pub base: Option<String>,
    /// `text`, `markdown` (for a pull-request comment) or `json`.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// The same as `--format json`, the spelling every command shares: one object with `old`
    /// and `new` (the labels), `widening` (bool) and the diff's fields (`widenings`, ...).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Exit 1 when a change widens what callers can reach (the kinds are listed in
    /// `toolcat_catalog::diff`); the report is printed either way.
    #[arg(long)]
    pub deny_widening: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    Text,
    Markdown,
    Json,
}

/// Runs `toolcat diff`.
pub fn run(a: &DiffArgs) -> anyhow::Result<Exit> {
    let ((old_label, old_source), (new_label, new_source)) = match (&a.base, a.paths.as_slice()) {
        (None, [old, new]) => (read_file(old)?, read_file(new)?),
        (None, _) => bail!(
            "`toolcat diff` compares two catalogs: pass `OLD NEW`, or `--base GIT_REV [NEW]` to read the old one from git"
        ),
        (Some(rev), [] | [_]) => {
            let new = a.paths.first().map_or(Path::new("tools.toml"), PathBuf::as_path);
            (read_git(rev, new)?, read_file(new)?)
        }
        (Some(_), _) => bail!(
            "with `--base`, pass at most `NEW`: the old catalog is read from the git revision"
        ),
    };
    let old = compile(&old_label, &old_source)?;
    let new = compile(&new_label, &new_source)?;
    let mut d = diff(&old.0, &new.0);
    add_server_settings(&mut d, &old.1, &new.1);
    let format = if a.json { DiffFormat::Json } else { a.format };
    let text = match format {
        DiffFormat::Text => text(&d, &old_label, &new_label),
        DiffFormat::Markdown => markdown(&d, &old_label, &new_label),
        DiffFormat::Json => {
            let mut value = serde_json::json!({ "old": old_label, "new": new_label });
            value["widening"] = serde_json::Value::Bool(!d.widenings.is_empty());
            if let (Some(map), serde_json::Value::Object(body)) =
                (value.as_object_mut(), serde_json::to_value(&d)?)
            {
                map.extend(body);
            }
            serde_json::to_string_pretty(&value)? + "\n"
        }
    };
    write!(std::io::stdout().lock(), "{text}")?;
    if a.deny_widening && !d.widenings.is_empty() {
        eprintln!(
            "{}: {} (`--deny-widening`); review them, or drop `--deny-widening` to report only",
            new_label,
            count(d.widenings.len(), "widening change")
        );
        return Ok(Exit::CheckFailed);
    }
    Ok(Exit::Ok)
}

/// A catalog file's text, read as `check` and the loader read it
/// ([`toolcat::catalog::read_catalog_source`]: a regular file of at most `MAX_CATALOG_BYTES`).
fn read_file(path: &Path) -> anyhow::Result<(String, String)> {
    match toolcat::catalog::read_catalog_source(path) {
        Ok(source) => Ok((path.display().to_string(), source)),
        // Not UTF-8 (E0106): located like every diagnostic of the file.
        Err(e @ toolcat::CatalogError::Invalid { .. }) => {
            eprint!("{e}");
            Err(Reported.into())
        }
        Err(e) => bail!("{e}"),
    }
}

/// `NEW`'s file at `rev`, read with `git show --end-of-options REV:./NAME` in `NEW`'s directory.
/// A `rev` that is empty or starts with `-` is refused (git would read it as an option), and so
/// is an empty answer: an empty old catalog would report every tool as added.
fn read_git(rev: &str, new: &Path) -> anyhow::Result<(String, String)> {
    if rev.is_empty() {
        bail!("`--base` names no git revision; pass one, e.g. `--base HEAD~1` or `--base origin/main`");
    }
    if rev.starts_with('-') {
        bail!(
            "`--base {rev}` starts with `-`, so git would read it as an option; pass a revision name, e.g. `--base HEAD~1` or `--base origin/main`"
        );
    }
    let name = new
        .file_name()
        .with_context(|| format!("`{}` names no file", new.display()))?;
    let dir = match new.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let spec = format!("{rev}:./{}", name.to_string_lossy());
    let label = format!("{} at {rev}", new.display());
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["show", "--end-of-options", &spec])
        .output()
        .with_context(|| format!("cannot run `git show {spec}`; is git installed?"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        bail!(
            "cannot read `{label}` from git (`git show {spec}`: {}); check that `{rev}` names a commit that has the file (a shallow clone may lack it: `git fetch --deepen=1`)",
            stderr.trim()
        );
    }
    if output.stdout.is_empty() {
        bail!(
            "`git show {spec}` printed nothing: `{rev}` does not name a file with a catalog; pass a revision whose `{}` holds one",
            name.to_string_lossy()
        );
    }
    let source = match toolcat_catalog::load::decode(output.stdout) {
        Ok(source) => source,
        Err(e) => {
            eprint!("{}", render_all(&[e.diagnostic], &label, &e.text));
            return Err(Reported.into());
        }
    };
    Ok((label, source))
}

/// The tables of a catalog's text and its `[mcp_server]` declarations (whose `env`, `headers` and
/// `connect_timeout_ms` the tables do not keep); on an invalid catalog every diagnostic goes to
/// stderr.
fn compile(label: &str, source: &str) -> anyhow::Result<(Tables, BTreeMap<String, McpServerDecl>)> {
    let report = |diagnostics: Vec<toolcat_catalog::diagnostics::Diagnostic>| {
        eprint!("{}", render_all(&diagnostics, label, source));
        anyhow::Error::from(Reported)
    };
    let tables = toolcat_catalog::compile_str(label, source)
        .map_err(report)?
        .tables;
    let loaded = toolcat_catalog::load::parse(label, source).map_err(report)?;
    Ok((tables, loaded.file.mcp_server))
}

/// Values longer than this are cut in text and Markdown (JSON has them whole).
const MAX_VALUE_CHARS: usize = 120;

fn shown(value: &str) -> String {
    if value.is_empty() {
        return "(none)".to_string();
    }
    let mut chars = value.chars();
    let mut out: String = chars.by_ref().take(MAX_VALUE_CHARS).collect();
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

/// `old → new`, or the items that came and went for a list field.
fn change_text(f: &FieldChange) -> String {
    if f.added.is_empty() && f.removed.is_empty() {
        format!("{} → {}", shown(&f.old), shown(&f.new))
    } else {
        let mut parts: Vec<String> = f.added.iter().map(|x| format!("+{x}")).collect();
        parts.extend(f.removed.iter().map(|x| format!("-{x}")));
        parts.join(" ")
    }
}

fn summary(d: &Diff) -> String {
    use toolcat_catalog::diff::ChangeKind;
    let tools = |kind: ChangeKind| d.tools.iter().filter(|t| t.change == kind).count();
    format!(
        "{} changed, {} added, {} removed, {} renamed; {} of profiles, toolsets, presets, MCP servers and settings; {}",
        count(tools(ChangeKind::Changed), "tool"),
        tools(ChangeKind::Added),
        tools(ChangeKind::Removed),
        tools(ChangeKind::Renamed),
        count(d.tables.len(), "change"),
        count(d.widenings.len(), "widening change")
    )
}

fn text(d: &Diff, old: &str, new: &str) -> String {
    use std::fmt::Write as _;
    let mut s = format!("{old} → {new}: ");
    if d.is_empty() {
        s.push_str("no answer changes\n");
        return s;
    }
    s.push_str(&summary(d));
    s.push('\n');
    if !d.widenings.is_empty() {
        s.push_str("\nwidening:\n");
        for w in &d.widenings {
            let _ = writeln!(s, "  ! {}: {}", w.kind.as_str(), w.message);
        }
    }
    for t in &d.tools {
        let _ = match &t.renamed_from {
            Some(from) => writeln!(s, "\ntool `{}` renamed from `{from}`", t.tool),
            None => writeln!(s, "\ntool `{}` {}", t.tool, t.change.as_str()),
        };
        for f in &t.fields {
            let _ = match t.change.as_str() {
                "added" => writeln!(s, "  {}: {}", f.field, shown(&f.new)),
                "removed" => writeln!(s, "  {}: {}", f.field, shown(&f.old)),
                _ => writeln!(s, "  {}: {}", f.field, change_text(f)),
            };
        }
    }
    for c in &d.tables {
        let _ = writeln!(s, "\n{} `{}` {}", c.table, c.name, c.change.as_str());
        for f in &c.fields {
            let _ = match c.change.as_str() {
                "added" => writeln!(s, "  {}: {}", f.field, shown(&f.new)),
                _ => writeln!(s, "  {}: {}", f.field, change_text(f)),
            };
        }
    }
    s
}

/// A Markdown table cell: `|` escaped, on one line.
fn cell(value: &str) -> String {
    value.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn markdown(d: &Diff, old: &str, new: &str) -> String {
    use std::fmt::Write as _;
    let mut s = format!("### `toolcat diff`: `{}` → `{}`\n\n", cell(old), cell(new));
    if d.is_empty() {
        s.push_str("No answer changes.\n");
        return s;
    }
    let _ = writeln!(s, "{}.\n", summary(d));
    if !d.widenings.is_empty() {
        let _ = writeln!(
            s,
            "**{}** (`toolcat diff --deny-widening` fails on these):\n",
            count(d.widenings.len(), "widening change")
        );
        s.push_str("| kind | subject | what widened |\n|---|---|---|\n");
        for w in &d.widenings {
            let _ = writeln!(
                s,
                "| `{}` | `{}` | {} |",
                w.kind.as_str(),
                cell(&w.subject),
                cell(&w.message)
            );
        }
        s.push('\n');
    }
    if !d.tools.is_empty() {
        s.push_str("| tool | change | field | old → new |\n|---|---|---|---|\n");
        for t in &d.tools {
            let change = match &t.renamed_from {
                Some(from) => format!("renamed from `{}`", cell(from)),
                None => t.change.as_str().to_string(),
            };
            if t.fields.is_empty() {
                let _ = writeln!(s, "| `{}` | {change} | | |", cell(&t.tool));
            }
            for (k, f) in t.fields.iter().enumerate() {
                let (name, change) = if k == 0 {
                    (format!("`{}`", cell(&t.tool)), change.as_str())
                } else {
                    (String::new(), "")
                };
                let value = match t.change.as_str() {
                    "added" => shown(&f.new),
                    "removed" => shown(&f.old),
                    _ => change_text(f),
                };
                let _ = writeln!(s, "| {name} | {change} | {} | {} |", f.field, cell(&value));
            }
        }
        s.push('\n');
    }
    if !d.tables.is_empty() {
        s.push_str("| table | entry | change | field | old → new |\n|---|---|---|---|---|\n");
        for c in &d.tables {
            let head = format!(
                "| {} | `{}` | {} |",
                c.table,
                cell(&c.name),
                c.change.as_str()
            );
            if c.fields.is_empty() {
                let _ = writeln!(s, "{head} | |");
            }
            for (k, f) in c.fields.iter().enumerate() {
                let head = if k == 0 { head.as_str() } else { "| | | |" };
                let value = match c.change.as_str() {
                    "added" => shown(&f.new),
                    _ => change_text(f),
                };
                let _ = writeln!(s, "{head} {} | {} |", f.field, cell(&value));
            }
        }
    }
    s
}
