//! `toolcat init [DIR]`: a crate whose tools are declared in `tools.toml`, or those parts added
//! to an existing crate.
//!
//! The files are the templates in `src/cli/init/`, filled in here: `tools.toml` (the legend of
//! fields, taken from the reference catalog's own header, one example local tool `greet` and the
//! three discovery meta-tool rows as the reference catalog declares them), `build.rs` (the
//! codegen), `src/tools.rs` (the `#[toolcat::tool]` handler and a test that calls it through the
//! execution coordinator) and, in a new crate, `Cargo.toml` and `src/main.rs`. An existing
//! `Cargo.toml` gets the dependencies (edited with `toml_edit`, its formatting kept); no existing
//! file is ever overwritten.

use super::Exit;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use clap::Args;

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The crate's directory, created when missing (default: the current directory). When it
    /// holds a `Cargo.toml`, the tool files are added to that crate.
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Depend on a local toolcat checkout (the directory holding its `runtime/` and `codegen/`)
    /// through `path` dependencies instead of crates.io.
    #[arg(long, value_name = "DIR")]
    pub path: Option<PathBuf>,
    /// The package name of a new crate (default: the directory's name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

/// The reference catalog, whose header legend and discovery rows the new `tools.toml` copies.
const REFERENCE_CATALOG: &str = include_str!("../../tools.toml");
const TOOLS_TOML: &str = include_str!("init/tools.toml.tmpl");
const BUILD_RS: &str = include_str!("init/build.rs");
const TOOLS_RS: &str = include_str!("init/tools.rs");
const MAIN_RS: &str = include_str!("init/main.rs");
const PACKAGE_TOML: &str = include_str!("init/package.toml");
const DEPENDENCIES_TOML: &str = include_str!("init/dependencies.toml");

/// The discovery meta-tools every new catalog declares, in this order.
const DISCOVERY_TOOLS: [&str; 3] = ["tool_search", "tool_describe", "tool_call"];

/// Runs `toolcat init`.
pub fn run(a: &InitArgs) -> anyhow::Result<Exit> {
    let dir = match &a.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let toolcat_dir = a.path.as_deref().map(checkout).transpose()?;
    if dir.symlink_metadata().is_ok() && !dir.is_dir() {
        bail!(
            "`{}` is a file, not a directory; pass the directory of the crate to `toolcat init`",
            dir.display()
        );
    }
    let manifest_path = dir.join("Cargo.toml");
    let existing = manifest_path.exists();

    let manifest_text = if existing {
        std::fs::read_to_string(&manifest_path)
            .with_context(|| format!("cannot read `{}`", manifest_path.display()))?
    } else {
        let name = match &a.name {
            Some(name) => name.clone(),
            None => dir_name(&dir)?,
        };
        check_package_name(&name)?;
        PACKAGE_TOML.replace("{name}", &name)
    };
    let mut manifest: toml_edit::DocumentMut = manifest_text
        .parse()
        .with_context(|| format!("`{}` is not valid TOML", manifest_path.display()))?;
    let Some(package) = manifest.get("package").and_then(|p| p.as_table_like()) else {
        bail!(
            "`{}` has no [package] table (a workspace manifest?); run `toolcat init` in the \
             directory of one of its member crates",
            manifest_path.display()
        );
    };
    let owner = package
        .get("name")
        .and_then(|n| n.as_str())
        .unwrap_or("my-agent")
        .to_owned();
    // The owner of the new rows is the package name: checked as `--name` is, so it is written
    // into tools.toml as a plain string.
    if existing && check_package_name(&owner).is_err() {
        bail!(
            "the package name {owner:?} of `{}` is not a valid package name (ASCII letters, \
             digits, `-` and `_`, starting with a letter), and it would be the owner of the new \
             tools.toml rows; fix the name in `{}`",
            manifest_path.display(),
            manifest_path.display()
        );
    }

    let mut files: Vec<(PathBuf, String)> = vec![
        (dir.join("tools.toml"), tools_toml(&owner)?),
        (dir.join("build.rs"), BUILD_RS.to_owned()),
        (dir.join("src/tools.rs"), TOOLS_RS.to_owned()),
    ];
    // The crate root that includes the catalog: written for a new crate (or one without a root
    // file); an existing root gets the two lines from the user.
    let root = ["src/main.rs", "src/lib.rs"]
        .into_iter()
        .map(|r| dir.join(r))
        .find(|r| r.exists());
    if root.is_none() {
        files.push((dir.join("src/main.rs"), MAIN_RS.to_owned()));
    }
    if existing {
        if let Some(build) = package.get("build").filter(|b| b.as_str().is_none()) {
            bail!(
                "`{}` sets `build = {}`, so cargo would not run the build script that compiles \
                 toolcat's catalog; remove the `build` key",
                manifest_path.display(),
                build.to_string().trim()
            );
        }
        if let Some(build) = package.get("build").and_then(|b| b.as_str()) {
            bail!(
                "`{}` names a build script of its own (`build = \"{build}\"`); toolcat's catalog \
                 is compiled by a build script: call `toolcat_codegen::build::compile_catalog(\"tools.toml\")` \
                 from it, or remove the `build` key",
                manifest_path.display()
            );
        }
    }
    // Everything is checked before anything is written, so a refusal leaves the directory as
    // it was: no file in the way (a dangling link counts), every parent a directory or absent.
    for (path, _) in &files {
        for parent in path
            .ancestors()
            .skip(1)
            .take_while(|p| p.starts_with(&dir) && *p != dir.as_path())
        {
            if parent.symlink_metadata().is_ok() && !parent.is_dir() {
                bail!(
                    "`{}` is in the way: it is not a directory, and `toolcat init` writes `{}`; \
                     move it aside and run it again",
                    parent.display(),
                    path.display()
                );
            }
        }
        if path.symlink_metadata().is_ok() {
            bail!(
                "`{}` exists already; `toolcat init` never overwrites a file: move it aside (or \
                 run `toolcat init` in another directory) and run it again",
                path.display()
            );
        }
    }

    add_dependencies(&mut manifest, toolcat_dir.as_deref())?;

    for (path, text) in &files {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create `{}`", parent.display()))?;
        }
        // `create_new`: a file that appeared since the check above is not overwritten either.
        use std::io::Write as _;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .with_context(|| format!("cannot create `{}`", path.display()))?;
        file.write_all(text.as_bytes())
            .with_context(|| format!("cannot write `{}`", path.display()))?;
        eprintln!("created {}", path.display());
    }
    std::fs::write(&manifest_path, manifest.to_string())
        .with_context(|| format!("cannot write `{}`", manifest_path.display()))?;
    eprintln!(
        "{} {}",
        if existing { "updated" } else { "created" },
        manifest_path.display()
    );
    if let Some(root) = root {
        eprintln!(
            "next: add these lines to {} so the catalog and the handlers are compiled:\n\n    \
             toolcat::include_catalog!();\n    mod tools;\n",
            root.display()
        );
    }
    eprintln!(
        "next: `cargo test` in {} runs `greet` through the coordinator; declare your tools in \
         tools.toml and their handlers in src/tools.rs",
        dir.display()
    );
    Ok(Exit::Ok)
}

/// The toolcat checkout of `--path`, absolute; it must hold the crates the new crate depends on.
fn checkout(path: &Path) -> anyhow::Result<PathBuf> {
    let dir = path.canonicalize().with_context(|| {
        format!(
            "`--path {}` does not exist; pass the directory of a toolcat checkout",
            path.display()
        )
    })?;
    for member in ["runtime", "codegen"] {
        if !dir.join(member).join("Cargo.toml").is_file() {
            bail!(
                "`--path {}` is not a toolcat checkout: it has no `{member}/Cargo.toml`; pass the \
                 directory that holds toolcat's `runtime/` and `codegen/`",
                path.display()
            );
        }
    }
    Ok(dir)
}

/// The last component of `dir`, made absolute against the current directory.
fn dir_name(dir: &Path) -> anyhow::Result<String> {
    let absolute =
        std::path::absolute(dir).with_context(|| format!("cannot resolve `{}`", dir.display()))?;
    absolute
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .with_context(|| {
            format!(
                "`{}` has no name to give the package; pass `--name NAME`",
                dir.display()
            )
        })
}

/// Cargo's rule for a package name: ASCII letters, digits, `-` and `_`, not starting with a digit.
fn check_package_name(name: &str) -> anyhow::Result<()> {
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        bail!(
            "`{name}` is not a valid package name (ASCII letters, digits, `-` and `_`, starting \
             with a letter); pass `--name NAME`"
        );
    }
    Ok(())
}

/// The new `tools.toml`: the template with the reference catalog's legend and discovery rows.
fn tools_toml(owner: &str) -> anyhow::Result<String> {
    let discovery = DISCOVERY_TOOLS
        .iter()
        .map(|name| discovery_row(name))
        .collect::<anyhow::Result<Vec<_>>>()?
        .join("\n");
    Ok(TOOLS_TOML
        .replace("{legend}", legend()?)
        .replace("{owner}", owner)
        .replace("{discovery}", &discovery))
}

/// The legend of the reference catalog's header: from `# Top-level keys` to the end of its first
/// comment block.
fn legend() -> anyhow::Result<&'static str> {
    let start = REFERENCE_CATALOG
        .find("# Top-level keys")
        .context("the reference catalog's header has no `# Top-level keys` legend")?;
    let rest = &REFERENCE_CATALOG[start..];
    let end = rest
        .split_inclusive('\n')
        .take_while(|line| line.starts_with('#'))
        .map(str::len)
        .sum::<usize>();
    Ok(rest[..end].trim_end())
}

/// The reference catalog's `[[tool]]` row of a discovery meta-tool, without its `profiles` (the
/// reference agent's own) and answered for by `toolcat`, whose runtime serves it.
fn discovery_row(name: &str) -> anyhow::Result<String> {
    let head = format!("[[tool]]\nname = \"{name}\"\n");
    let start = REFERENCE_CATALOG
        .find(&head)
        .with_context(|| format!("the reference catalog declares no `{name}` row"))?;
    let row: String = REFERENCE_CATALOG[start..]
        .split_inclusive('\n')
        .take_while(|line| !line.trim().is_empty())
        .filter(|line| !line.starts_with("profiles ="))
        .map(|line| {
            if line.starts_with("owner =") {
                "owner = \"toolcat\"\n"
            } else {
                line
            }
        })
        .collect();
    Ok(row)
}

/// Adds `toolcat` and the crates the templates use to `[dependencies]`, and `toolcat-codegen` to
/// `[build-dependencies]`: at this `toolcat`'s version, with `path` keys into `toolcat_dir` when
/// given. A dependency already there keeps its version and source; missing features are added.
fn add_dependencies(
    manifest: &mut toml_edit::DocumentMut,
    toolcat_dir: Option<&Path>,
) -> anyhow::Result<()> {
    let template: toml_edit::DocumentMut = DEPENDENCIES_TOML
        .parse()
        .context("the dependency template is not TOML")?;
    let version = env!("CARGO_PKG_VERSION");
    let toolcat_dep = |member: &str| -> toml_edit::Item {
        match toolcat_dir {
            None => toml_edit::value(version),
            Some(dir) => {
                let mut t = toml_edit::InlineTable::new();
                t.insert("version", version.into());
                t.insert(
                    "path",
                    dir.join(member).to_string_lossy().into_owned().into(),
                );
                toml_edit::value(t)
            }
        }
    };
    let mut wanted: Vec<(&str, String, toml_edit::Item)> =
        vec![("dependencies", "toolcat".into(), toolcat_dep("runtime"))];
    if let Some(deps) = template.get("dependencies").and_then(|d| d.as_table()) {
        for (name, item) in deps.iter() {
            wanted.push(("dependencies", name.to_owned(), item.clone()));
        }
    }
    wanted.push((
        "build-dependencies",
        "toolcat-codegen".into(),
        toolcat_dep("codegen"),
    ));

    for (section, name, item) in wanted {
        let table = manifest
            .entry(section)
            .or_insert_with(toml_edit::table)
            .as_table_like_mut()
            .with_context(|| format!("`{section}` in Cargo.toml is not a table"))?;
        match table.get_mut(&name) {
            None => {
                table.insert(&name, item);
            }
            Some(existing) => add_features(existing, &item, section, &name)?,
        }
    }
    Ok(())
}

/// Adds the features `wanted` lists that `existing` lacks; a plain version string becomes an
/// inline table with that version.
fn add_features(
    existing: &mut toml_edit::Item,
    wanted: &toml_edit::Item,
    section: &str,
    name: &str,
) -> anyhow::Result<()> {
    let features: Vec<String> = wanted
        .get("features")
        .and_then(|f| f.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if features.is_empty() {
        return Ok(());
    }
    if let Some(version) = existing.as_str().map(str::to_owned) {
        let mut t = toml_edit::InlineTable::new();
        t.insert("version", version.into());
        *existing = toml_edit::value(t);
    }
    let table = existing.as_table_like_mut().with_context(|| {
        format!("`{name}` in [{section}] of Cargo.toml is neither a version nor a table")
    })?;
    let list = table
        .entry("features")
        .or_insert(toml_edit::value(toml_edit::Array::new()))
        .as_array_mut()
        .with_context(|| {
            format!("`{name}.features` in [{section}] of Cargo.toml is not an array")
        })?;
    for feature in features {
        if !list.iter().any(|v| v.as_str() == Some(&feature)) {
            list.push(feature);
        }
    }
    Ok(())
}
