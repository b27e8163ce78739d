//! The build-script helper: the one call a user's `build.rs` makes.
//!
//! ```no_run
//! // The body of `fn main` in build.rs:
//! toolcat_codegen::build::compile_catalog("tools.toml");
//! ```
//!
//! [`compile_catalog`] loads, validates and derives the catalog, builds its BM25 search index and
//! writes [`emit::DECLARATIONS_FILE`], [`emit::CATALOG_FILE`] and [`emit::INDEX_FILE`] into
//! `OUT_DIR`, each only when its content changed (so an unchanged catalog never forces a rebuild).
//! An invalid catalog stops the build with `cargo::error=` lines — every rendered diagnostic,
//! one line per directive — and writes nothing. It never panics: I/O failures are reported the
//! same way.
//!
//! Parameter names of local tools: search matches the names of a tool's arguments, but a local
//! tool's argument type lives in Rust, not in `tools.toml`. So the helper scans the crate's
//! `src/**/*.rs` with syn for functions marked `#[tool]` / `#[toolcat::tool]`, takes the type of
//! their first argument, finds a `struct` of that name anywhere in the same sources and collects
//! its named fields (honouring a field's `#[serde(rename = "...")]`). This is best effort: files
//! that do not parse are skipped (rustc reports them), a type defined in another crate or through
//! a macro contributes nothing, and when two structs share the name the first one found (files
//! in path order) is used. It only widens search; nothing else depends on it.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use toolcat_catalog::diagnostics::Severity;
use toolcat_catalog::index;

use crate::emit;

/// One instruction to cargo, printed by a build script as a single `cargo::` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// `cargo::error=LINE`: fails the build after the script ends.
    Error(String),
    /// `cargo::warning=LINE`: shown, does not fail the build.
    Warning(String),
    /// `cargo::rerun-if-changed=PATH` (a directory means any file below it).
    RerunIfChanged(PathBuf),
    /// `cargo::rustc-env=KEY=VALUE`: set while compiling the crate (macros see it too).
    RustcEnv(String, String),
}

impl Directive {
    /// One `Error` directive per line of `text` (cargo reads one line per directive).
    pub fn errors(text: &str) -> impl Iterator<Item = Directive> + '_ {
        text.lines().map(|l| Directive::Error(l.to_string()))
    }

    /// One `Warning` directive per line of `text`.
    pub fn warnings(text: &str) -> impl Iterator<Item = Directive> + '_ {
        text.lines().map(|l| Directive::Warning(l.to_string()))
    }
}

impl fmt::Display for Directive {
    /// The directive as its build-script output line (without the newline). Line breaks inside
    /// a value are written as spaces, so a directive can never spill onto a second line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one_line = |s: &str| s.replace(['\r', '\n'], " ");
        match self {
            Directive::Error(m) => write!(f, "cargo::error={}", one_line(m)),
            Directive::Warning(m) => write!(f, "cargo::warning={}", one_line(m)),
            Directive::RerunIfChanged(p) => {
                write!(
                    f,
                    "cargo::rerun-if-changed={}",
                    one_line(&p.display().to_string())
                )
            }
            Directive::RustcEnv(k, v) => {
                write!(f, "cargo::rustc-env={}={}", one_line(k), one_line(v))
            }
        }
    }
}

/// Compiles the catalog at `path` (relative to `CARGO_MANIFEST_DIR`, or absolute) into `OUT_DIR`
/// and prints the cargo directives; call it from `build.rs`.
///
/// Prints `cargo::rerun-if-changed` for the catalog and the crate's `src/` directory,
/// `cargo::rustc-env=TOOLCAT_CATALOG=<absolute path of the catalog>` (so `#[tool]` reads the same
/// file), `cargo::warning=` lines for warnings and, when the catalog is invalid or a file cannot be
/// read or written, `cargo::error=` lines, which fail the build.
pub fn compile_catalog(path: impl AsRef<Path>) {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let out_dir = std::env::var_os("OUT_DIR").map(PathBuf::from);
    let directives = match (manifest_dir, out_dir) {
        (Some(manifest_dir), Some(out_dir)) => generate(&manifest_dir, path.as_ref(), &out_dir),
        _ => vec![Directive::Error(
            "`toolcat_codegen::build::compile_catalog` must run inside a build script: \
             `CARGO_MANIFEST_DIR` or `OUT_DIR` is not set; call it from `build.rs`"
                .to_string(),
        )],
    };
    let mut stdout = std::io::stdout().lock();
    for directive in directives {
        // Nothing sensible is left to do when stdout is gone; cargo reports the failed script.
        let _ = writeln!(stdout, "{directive}");
    }
}

/// The work of [`compile_catalog`] with explicit directories, returning the directives instead of
/// printing them: reads `manifest_dir.join(catalog)`, scans `manifest_dir/src` for handler
/// argument types and writes the three files into `out_dir` (created if missing) when the catalog
/// is valid. The result contains at least one [`Directive::Error`] exactly when nothing was
/// written.
pub fn generate(manifest_dir: &Path, catalog: &Path, out_dir: &Path) -> Vec<Directive> {
    let catalog_path = manifest_dir.join(catalog);
    let shown = catalog_path.display().to_string();
    let mut out = vec![Directive::RerunIfChanged(catalog_path.clone())];

    let source = match std::fs::read(&catalog_path) {
        Ok(bytes) => match toolcat_catalog::load::decode(bytes) {
            Ok(source) => source,
            Err(e) => {
                out.extend(Directive::errors(&e.diagnostic.render(&shown, &e.text)));
                out.push(Directive::Error(format!(
                    "`{shown}` is not UTF-8; save it as UTF-8 and build again"
                )));
                return out;
            }
        },
        Err(e) => {
            out.push(Directive::Error(format!(
                "cannot read the catalog `{shown}`: {e}; create it, or pass its path to \
                 `toolcat_codegen::build::compile_catalog`"
            )));
            return out;
        }
    };

    let compiled = match toolcat_catalog::compile_str(&shown, &source) {
        Ok(compiled) => compiled,
        Err(diagnostics) => {
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            for d in &diagnostics {
                let text = d.render(&shown, &source);
                match d.severity {
                    Severity::Error => out.extend(Directive::errors(&text)),
                    Severity::Warning => out.extend(Directive::warnings(&text)),
                }
            }
            out.push(Directive::Error(format!(
                "`{shown}` has {errors} error{}; fix {} and build again",
                if errors == 1 { "" } else { "s" },
                if errors == 1 { "it" } else { "them" },
            )));
            return out;
        }
    };
    for d in &compiled.warnings {
        out.extend(Directive::warnings(&d.render(&shown, &source)));
    }
    let tables = &compiled.tables;

    let src_dir = manifest_dir.join("src");
    let mut params: Vec<Vec<String>> = vec![Vec::new(); tables.len];
    if src_dir.is_dir() {
        out.push(Directive::RerunIfChanged(src_dir.clone()));
        let found = scan_handler_params(&src_dir);
        for (i, name) in tables.names.iter().enumerate() {
            if let Some(fields) = found.get(&**name) {
                params[i] = fields.clone();
            }
        }
    }

    let index_bytes = match index::build_index_bytes(tables, &params) {
        Ok(bytes) => bytes,
        Err(e) => {
            out.push(Directive::Error(format!(
                "cannot build the search index of `{shown}`: {e}"
            )));
            return out;
        }
    };
    let emitted = emit::emit(tables);

    if let Err(e) = std::fs::create_dir_all(out_dir) {
        out.push(Directive::Error(format!(
            "cannot create the output directory `{}`: {e}",
            out_dir.display()
        )));
        return out;
    }
    let files: [(&str, &[u8]); 3] = [
        (emit::DECLARATIONS_FILE, emitted.declarations.as_bytes()),
        (emit::CATALOG_FILE, emitted.glue.as_bytes()),
        (emit::INDEX_FILE, &index_bytes),
    ];
    for (name, bytes) in files {
        let path = out_dir.join(name);
        if let Err(e) = write_if_changed(&path, bytes) {
            out.push(Directive::Error(format!(
                "cannot write `{}`: {e}",
                path.display()
            )));
        }
    }
    out.push(Directive::RustcEnv(emit::CATALOG_ENV.to_string(), shown));
    out
}

/// Writes `bytes` to `path` unless the file already holds exactly them; returns whether it wrote.
///
/// # Errors
/// The I/O error of reading or writing `path`.
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    match std::fs::read(path) {
        Ok(existing) if existing == bytes => return Ok(false),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::write(path, bytes)?;
    Ok(true)
}

/// Parameter names of the local tools handled in `src_dir`, by tool name (best effort; see the
/// module documentation).
pub fn scan_handler_params(src_dir: &Path) -> HashMap<String, Vec<String>> {
    let mut structs: HashMap<String, Vec<String>> = HashMap::new();
    let mut handlers: Vec<(String, String)> = Vec::new();
    let files = walkdir::WalkDir::new(src_dir)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "rs"));
    for entry in files {
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let Ok(file) = syn::parse_file(&text) else {
            continue;
        };
        collect_items(&file.items, &mut structs, &mut handlers);
    }
    handlers
        .into_iter()
        .filter_map(|(tool, args)| structs.get(&args).map(|fields| (tool, fields.clone())))
        .collect()
}

/// Walks items (and inline modules), recording named-field structs and `#[tool]` functions as
/// `(tool name, argument type name)`.
fn collect_items(
    items: &[syn::Item],
    structs: &mut HashMap<String, Vec<String>>,
    handlers: &mut Vec<(String, String)>,
) {
    use syn::ext::IdentExt;
    for item in items {
        match item {
            syn::Item::Struct(s) => {
                if let syn::Fields::Named(named) = &s.fields {
                    let fields = named
                        .named
                        .iter()
                        .filter_map(|f| {
                            let ident = f.ident.as_ref()?;
                            Some(
                                serde_rename(&f.attrs).unwrap_or_else(|| ident.unraw().to_string()),
                            )
                        })
                        .collect();
                    structs.entry(s.ident.unraw().to_string()).or_insert(fields);
                }
            }
            syn::Item::Fn(f) => {
                let Some(attr) = f
                    .attrs
                    .iter()
                    .find(|a| a.path().segments.last().is_some_and(|s| s.ident == "tool"))
                else {
                    continue;
                };
                let name = tool_attr_name(attr).unwrap_or_else(|| f.sig.ident.unraw().to_string());
                let args = f.sig.inputs.first().and_then(|arg| match arg {
                    syn::FnArg::Typed(t) => type_name(&t.ty),
                    syn::FnArg::Receiver(_) => None,
                });
                if let Some(args) = args {
                    handlers.push((name, args));
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    collect_items(items, structs, handlers);
                }
            }
            _ => {}
        }
    }
}

/// The last path segment of a type (`Args` of `crate::x::Args`), looking through references.
fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        syn::Type::Paren(p) => type_name(&p.elem),
        _ => None,
    }
}

/// `x` of `#[tool(name = "x")]`.
fn tool_attr_name(attr: &syn::Attribute) -> Option<String> {
    let mut name = None;
    if let syn::Meta::List(_) = &attr.meta {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("name") {
                let lit: syn::LitStr = meta.value()?.parse()?;
                name = Some(lit.value());
            } else if meta.input.peek(syn::Token![=]) {
                // Other `key = value` options (e.g. `catalog = path`): skip the value.
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    name
}

/// `x` of a field's `#[serde(rename = "x")]`.
fn serde_rename(attrs: &[syn::Attribute]) -> Option<String> {
    let mut rename = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") && meta.input.peek(syn::Token![=]) {
                let lit: syn::LitStr = meta.value()?.parse()?;
                rename = Some(lit.value());
            } else if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            } else if meta.input.peek(syn::token::Paren) {
                // `rename(serialize = "..", deserialize = "..")` and similar: not followed.
                let content;
                syn::parenthesized!(content in meta.input);
                let _: proc_macro2::TokenStream = content.parse()?;
            }
            Ok(())
        });
    }
    rename
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_are_single_lines() {
        assert_eq!(
            Directive::Error("a\nb".into()).to_string(),
            "cargo::error=a b"
        );
        let lines: Vec<String> = Directive::errors("x\n  |\ny\n")
            .map(|d| d.to_string())
            .collect();
        assert_eq!(
            lines,
            ["cargo::error=x", "cargo::error=  |", "cargo::error=y"]
        );
    }

    #[test]
    fn write_if_changed_skips_identical_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        assert!(write_if_changed(&path, b"one").unwrap());
        assert!(!write_if_changed(&path, b"one").unwrap());
        assert!(write_if_changed(&path, b"two").unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
    }

    #[test]
    fn scan_finds_argument_fields_of_tool_functions() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        let nested = dir.join("handlers");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(
            dir.join("main.rs"),
            r#"
            mod handlers;
            #[toolcat::tool]
            async fn read_file(args: ReadArgs, ctx: &ToolContext) -> Result<String, ToolError> { todo!() }
            mod inner {
                #[tool(name = "write-file", catalog = crate::toolcat_generated)]
                async fn write(args: super::handlers::WriteArgs, ctx: &ToolContext) -> Result<(), ToolError> { todo!() }
            }
            #[tool]
            async fn unknown_args(args: serde_json::Value, ctx: &ToolContext) -> Result<(), ToolError> { todo!() }
            fn not_a_tool(args: ReadArgs) {}
            "#,
        )
        .unwrap();
        std::fs::write(
            nested.join("mod.rs"),
            r#"
            pub struct ReadArgs { pub path: String, #[serde(default, rename = "maxBytes")] pub max_bytes: u64 }
            pub struct WriteArgs { r#type: String, contents: String }
            "#,
        )
        .unwrap();
        std::fs::write(nested.join("broken.rs"), "fn (").unwrap();

        let found = scan_handler_params(dir);
        let mut found: Vec<_> = found.into_iter().collect();
        found.sort();
        assert_eq!(
            found,
            [
                (
                    "read_file".to_string(),
                    vec!["path".to_string(), "maxBytes".to_string()]
                ),
                (
                    "write-file".to_string(),
                    vec!["type".to_string(), "contents".to_string()]
                ),
            ]
        );
    }

    fn small_catalog() -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/valid/small.toml");
        std::fs::read_to_string(path).expect("the small valid catalog reads")
    }

    fn errors(directives: &[Directive]) -> Vec<&str> {
        directives
            .iter()
            .filter_map(|d| match d {
                Directive::Error(m) => Some(m.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn valid_catalog_writes_the_three_files_once_and_reports_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path().join("crate");
        let out = dir.path().join("out");
        std::fs::create_dir_all(manifest.join("src")).unwrap();
        // An empty toolset is a warning (W0503), not an error.
        let catalog = small_catalog() + "\n[toolset.later]\ndescription = \"Tools to come\"\n";
        std::fs::write(manifest.join("tools.toml"), catalog).unwrap();
        std::fs::write(
            manifest.join("src/main.rs"),
            "#[toolcat::tool] async fn read_file(args: ReadArgs, ctx: &ToolContext) \
             -> Result<String, ToolError> { todo!() }\nstruct ReadArgs { path: String }\n",
        )
        .unwrap();

        let directives = generate(&manifest, Path::new("tools.toml"), &out);
        assert!(errors(&directives).is_empty(), "{directives:#?}");
        let catalog_path = manifest.join("tools.toml");
        assert!(directives.contains(&Directive::RerunIfChanged(catalog_path.clone())));
        assert!(directives.contains(&Directive::RerunIfChanged(manifest.join("src"))));
        assert!(directives.contains(&Directive::RustcEnv(
            emit::CATALOG_ENV.to_string(),
            catalog_path.display().to_string()
        )));
        let warnings: Vec<String> = directives
            .iter()
            .filter(|d| matches!(d, Directive::Warning(_)))
            .map(ToString::to_string)
            .collect();
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("warning[W0503]") && w.contains("`later`")),
            "{warnings:#?}"
        );

        let files = [
            emit::DECLARATIONS_FILE,
            emit::CATALOG_FILE,
            emit::INDEX_FILE,
        ];
        let modified = |name: &str| {
            std::fs::metadata(out.join(name))
                .unwrap()
                .modified()
                .unwrap()
        };
        let first: Vec<_> = files.iter().map(|f| modified(f)).collect();
        let again = generate(&manifest, Path::new("tools.toml"), &out);
        assert!(errors(&again).is_empty(), "{again:#?}");
        let second: Vec<_> = files.iter().map(|f| modified(f)).collect();
        assert_eq!(first, second, "unchanged output is not rewritten");
    }

    #[test]
    fn invalid_catalog_writes_nothing_and_reports_every_line() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let catalog = small_catalog().replacen("tier = \"silent\"", "tier = \"silnet\"", 1);
        std::fs::write(dir.path().join("tools.toml"), catalog).unwrap();

        let directives = generate(dir.path(), Path::new("tools.toml"), &out);
        let errors = errors(&directives);
        assert!(
            errors
                .iter()
                .any(|e| e.contains("error[E0102]") && e.contains("`silnet`")),
            "{errors:#?}"
        );
        assert!(
            errors.iter().any(|e| e.contains("did you mean `silent`?")),
            "{errors:#?}"
        );
        assert!(errors.iter().all(|e| !e.contains('\n')));
        assert!(
            errors
                .last()
                .is_some_and(|e| e.ends_with("has 1 error; fix it and build again")),
            "{errors:#?}"
        );
        assert!(!out.exists(), "nothing is written for an invalid catalog");
        assert!(!directives
            .iter()
            .any(|d| matches!(d, Directive::RustcEnv(..))));
    }

    #[test]
    fn missing_catalog_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let directives = generate(dir.path(), Path::new("tools.toml"), &dir.path().join("out"));
        let errors = errors(&directives);
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(
            errors[0].starts_with("cannot read the catalog `"),
            "{}",
            errors[0]
        );
        assert!(
            errors[0].contains("compile_catalog"),
            "names the fix: {}",
            errors[0]
        );
    }

    #[test]
    fn bom_at_start_of_catalog_does_not_shift_columns() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path().join("crate");
        std::fs::create_dir_all(manifest.join("src")).unwrap();
        std::fs::write(manifest.join("tools.toml"), "\u{feff}nope = \n").unwrap();
        let directives = generate(&manifest, Path::new("tools.toml"), &dir.path().join("out"));
        let errors = errors(&directives);
        assert!(
            errors
                .iter()
                .any(|e| e.contains("tools.toml:1:8: error[E0100]")),
            "{errors:#?}"
        );
    }
}
