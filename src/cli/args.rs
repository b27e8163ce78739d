//! The arguments and the catalog resolution every command shares: which catalog (`--catalog`),
//! call store (`--store`), MCP servers (`--servers`, `--wait`), exposure scope and workspace a
//! command uses, and the catalog, profile and toolsets they name. It imports no other module of
//! the command line but the leaf [`super::seen`] (warnings shown once).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _};
use clap::{Args, ValueEnum};
use toolcat::{CallStore, Catalog, LeaseTimes, ProfileId, ServerId, StoreLocation, ToolsetId};
use toolcat_catalog::model::Exposure;

/// The model options of `search --semantic` and `eval --semantic`.
#[cfg(feature = "semantic")]
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// `--semantic`: the sentence-transformers model directory (default: `TOOLCAT_MODEL_DIR`,
    /// else `~/.local/share/toolcat/models/all-MiniLM-L6-v2` when it exists).
    #[arg(long, value_name = "DIR", requires = "semantic")]
    pub model: Option<PathBuf>,
    /// `--semantic`: weight of the embedding side, 0 (BM25 only) to 1 (embeddings only).
    #[arg(long, value_name = "W", default_value_t = toolcat::fusion::DenseWeight::default(), requires = "semantic")]
    pub dense_weight: toolcat::fusion::DenseWeight,
    /// `--semantic`: threads that embed one query (default: the cores, at most
    /// `toolcat_semantic::MAX_DEFAULT_THREADS`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024), requires = "semantic")]
    pub threads: Option<u32>,
}

#[cfg(feature = "semantic")]
impl ModelArgs {
    /// The encoder in `dir` with `--threads` applied.
    ///
    /// # Errors
    /// When the model cannot be loaded, naming the directory.
    pub fn load_encoder(&self, dir: &std::path::Path) -> anyhow::Result<toolcat_semantic::Encoder> {
        let encoder = toolcat_semantic::Encoder::load(dir)
            .with_context(|| format!("cannot load the model in `{}`", dir.display()))?;
        Ok(match self.threads {
            Some(n) => encoder.with_threads(n as usize),
            None => encoder,
        })
    }
}

/// Which catalog a command reads: `--catalog`, else the one [`choose_catalog`] finds.
#[derive(Debug, Args)]
pub struct CatalogArg {
    /// A `tools.toml` to read (default: `TOOLCAT_CATALOG`, else `tools.toml` in the current
    /// directory or the nearest parent directory that has one, else the reference catalog
    /// compiled into this binary).
    #[arg(long, value_name = "PATH")]
    pub catalog: Option<PathBuf>,
    /// The catalog chosen, once: `None` for the compiled-in one.
    #[arg(skip)]
    chosen: std::sync::OnceLock<Option<PathBuf>>,
}

impl CatalogArg {
    /// The `tools.toml` this command reads, or `None` for the reference catalog compiled into
    /// this binary, as [`choose_catalog`] decides; its note (why that catalog) goes to stderr
    /// once.
    ///
    /// # Errors
    /// As [`choose_catalog`].
    pub fn path(&self) -> anyhow::Result<Option<&Path>> {
        if let Some(p) = self.chosen.get() {
            return Ok(p.as_deref());
        }
        let choice = choose_catalog(self.catalog.as_deref())?;
        if let Some(note) = &choice.note {
            eprintln!("{note}");
        }
        Ok(self.chosen.get_or_init(|| choice.path).as_deref())
    }
}

/// The environment variable naming the catalog when no `--catalog` is given.
pub const CATALOG_ENV: &str = "TOOLCAT_CATALOG";

/// The catalog [`choose_catalog`] picked and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogChoice {
    /// The file to read, or `None` for the reference catalog compiled into this binary.
    pub path: Option<PathBuf>,
    /// The stderr line naming the catalog and why it was chosen, when the choice is not the
    /// obvious one (`--catalog`, `./tools.toml`, or no `tools.toml` at all).
    pub note: Option<String>,
}

/// Whether the file at `path` holds the reference catalog's own text ([`crate::REFERENCE_SOURCE`]).
fn is_reference(path: &Path) -> bool {
    toolcat::catalog::read_catalog_source(path).ok().as_deref() == Some(crate::REFERENCE_SOURCE)
}

/// Which catalog a command reads, in this order (the one rule every command follows):
/// 1. `explicit` (`--catalog PATH`);
/// 2. the environment variable `TOOLCAT_CATALOG` ([`CATALOG_ENV`]; empty counts as unset);
/// 3. `tools.toml` in the current directory, else in the nearest parent directory that has
///    one (as cargo finds `Cargo.toml`);
/// 4. the reference catalog compiled into this binary.
///
/// A file of step 2 or 3 whose text is the reference catalog's own source
/// ([`crate::REFERENCE_SOURCE`], e.g. this repository's root `tools.toml`, which the build
/// script also names in `TOOLCAT_CATALOG` for `cargo run` and `cargo test`) is read as the
/// compiled-in catalog, with its handlers, without a note for step 2. Steps 2 and 3 from a parent directory come with a
/// note naming the file and the reason.
///
/// # Errors
/// When `TOOLCAT_CATALOG` names no file (the message names the variable and the fix), or the
/// current directory cannot be read.
pub fn choose_catalog(explicit: Option<&Path>) -> anyhow::Result<CatalogChoice> {
    if let Some(path) = explicit {
        return Ok(CatalogChoice {
            path: Some(path.to_path_buf()),
            note: None,
        });
    }
    if let Some(value) = std::env::var_os(CATALOG_ENV).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(value);
        if !path.is_file() {
            bail!(
                "{CATALOG_ENV} names `{}`, which is not a file; point {CATALOG_ENV} at a `tools.toml`, or unset it to use the catalog of the current directory",
                path.display()
            );
        }
        // The build script sets the variable to this repository's `tools.toml` for `cargo run`
        // and `cargo test`: that text is the compiled-in catalog itself.
        if is_reference(&path) {
            return Ok(CatalogChoice {
                path: None,
                note: None,
            });
        }
        let note = format!(
            "toolcat: catalog {} (from {CATALOG_ENV}; pass --catalog to choose another)",
            path.display()
        );
        return Ok(CatalogChoice {
            path: Some(path),
            note: Some(note),
        });
    }
    let cwd = std::env::current_dir()
        .context("cannot read the current directory; pass `--catalog PATH`")?;
    for (depth, dir) in cwd.ancestors().enumerate() {
        let candidate = dir.join("tools.toml");
        // Absent: look further up. Present but not a readable file (a directory, a dangling
        // link): an error, never a silent fall-back to another catalog.
        if candidate.symlink_metadata().is_err() {
            continue;
        }
        if !candidate.is_file() {
            bail!(
                "`{}` is not a file (a directory or a broken link), so it cannot be read as the catalog; fix or remove it, or pass `--catalog PATH`",
                candidate.display()
            );
        }
        let reference = is_reference(&candidate);
        let note = (depth > 0).then(|| {
            let why = if reference {
                "found in a parent directory; it is the reference catalog, so the one compiled into this binary is read"
            } else {
                "found in a parent directory"
            };
            format!(
                "toolcat: catalog {} ({why}; pass --catalog to choose another)",
                candidate.display()
            )
        });
        return Ok(CatalogChoice {
            path: (!reference).then_some(candidate),
            note,
        });
    }
    Ok(CatalogChoice {
        path: None,
        note: None,
    })
}

/// An MCP exposure scope a client can be granted.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ScopeArg {
    #[value(name = "read-only")]
    ReadOnly,
    Staging,
    Full,
}

impl From<ScopeArg> for Exposure {
    fn from(s: ScopeArg) -> Exposure {
        match s {
            ScopeArg::ReadOnly => Exposure::ReadOnly,
            ScopeArg::Staging => Exposure::Staging,
            ScopeArg::Full => Exposure::Full,
        }
    }
}

/// The workspace of `--workspace` (default: the current directory), canonical.
///
/// # Errors
/// When the path does not exist or is not a directory; the message names the path and the fix.
pub fn workspace_dir(arg: Option<&Path>) -> anyhow::Result<PathBuf> {
    let workspace = match arg {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir()
            .context("cannot read the current directory; pass `--workspace DIR`")?,
    };
    let canonical = std::fs::canonicalize(&workspace).map_err(|e| {
        anyhow::anyhow!(
            "workspace `{}` cannot be opened ({e}); pass an existing directory to `--workspace`",
            workspace.display()
        )
    })?;
    if !canonical.is_dir() {
        bail!(
            "workspace `{}` is not a directory; pass the directory tools work in to `--workspace`",
            workspace.display()
        );
    }
    Ok(canonical)
}

/// An error whose message is already on stderr: the command line exits 1 without printing it
/// again.
#[derive(Debug)]
pub struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the catalog is invalid; see the diagnostics above")
    }
}

impl std::error::Error for Reported {}

/// How diagnostics and reports name the catalog compiled into the binary, so that it is not
/// mistaken for a `tools.toml` file.
pub const REFERENCE_LABEL: &str = "<compiled-in reference catalog> (tools.toml)";

/// `n` and `noun`, with an `s` unless `n` is 1: `1 error`, `2 errors`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The catalog a command reads: the compiled-in reference catalog, or one loaded from a file.
pub(crate) enum CatalogRef {
    Compiled(&'static Catalog),
    Loaded(Box<Catalog>),
}

impl std::ops::Deref for CatalogRef {
    type Target = Catalog;
    fn deref(&self) -> &Catalog {
        match self {
            CatalogRef::Compiled(c) => c,
            CatalogRef::Loaded(c) => c,
        }
    }
}

/// The catalog [`CatalogArg::path`] chooses: a file, or the reference catalog compiled into
/// this binary.
///
/// A `--catalog` file's local tools get the reference agent's `#[tool]` handlers by name
/// (`Catalog::load_with_handlers`), as `toolcat serve --catalog` does, so every command sees the
/// same input schemas and runs the same handlers as the compiled-in catalog; a local tool no
/// handler is named after has none (its calls answer `no handler`).
pub(crate) fn catalog(arg: &CatalogArg) -> anyhow::Result<CatalogRef> {
    let handlers: &[Option<toolcat::ErasedHandler>] = &crate::toolcat_generated::HANDLERS;
    match arg.path()? {
        None => Ok(CatalogRef::Compiled(crate::reference_catalog())),
        Some(path) => {
            let c = match Catalog::load_with_handlers(path, handlers) {
                Ok(c) => c,
                Err(e @ toolcat::CatalogError::Invalid { .. }) => {
                    eprint!("{e}");
                    return Err(Reported.into());
                }
                Err(e) => return Err(anyhow::anyhow!("{e}")),
            };
            if !c.warnings().is_empty() {
                super::seen::print_warnings_once(path, c.warnings().len(), &c.render_warnings());
            }
            Ok(CatalogRef::Loaded(Box::new(c)))
        }
    }
}

pub(crate) fn profile(c: &Catalog, name: Option<&str>) -> anyhow::Result<ProfileId> {
    match name {
        None => Ok(c.full_profile()),
        Some(n) => Ok(c.profile(n)?),
    }
}

pub(crate) fn toolsets(c: &Catalog, names: &[String]) -> anyhow::Result<Vec<ToolsetId>> {
    names
        .iter()
        .map(|n| c.toolset(n).map_err(anyhow::Error::from))
        .collect()
}

/// The store file used when neither `--store` nor `TOOLCAT_STORE` is given, relative to the
/// current directory.
pub const DEFAULT_STORE: &str = ".toolcat/calls.sqlite";

/// Which call store a command uses.
#[derive(Debug, Clone, Args)]
pub struct StoreArg {
    /// The call store holding the call records and archived results: an SQLite file, created
    /// with its directories when absent (default: `.toolcat/calls.sqlite` in the current
    /// directory), or a PostgreSQL database, `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`,
    /// whose `toolcat_*` tables are created when absent and which replicas share.
    #[arg(
        long = "store",
        value_name = "PATH|postgres://...",
        env = "TOOLCAT_STORE",
        value_parser = StoreParser
    )]
    pub store: Option<StoreLocation>,
}

/// Parses `--store` (or `TOOLCAT_STORE`, or `session --store`): a `postgres://` or
/// `postgresql://` URL, else a file path; an empty value is kept as an empty path, meaning unset.
/// Refuses another URL or a connection string ([`StoreLocation::parse`]), without its password.
///
/// A clap parser of its own rather than a function: clap would print a refused value whole in
/// its message, and this one's may carry a password.
#[derive(Debug, Clone, Copy)]
pub struct StoreParser;

impl clap::builder::TypedValueParser for StoreParser {
    type Value = StoreLocation;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<StoreLocation, clap::Error> {
        let refuse = |message: String| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("{message}\n"),
            )
            .with_cmd(cmd)
        };
        let text = value.to_str().ok_or_else(|| {
            refuse("the call store (`--store` or `TOOLCAT_STORE`) is not valid UTF-8; pass a UTF-8 path or URL".into())
        })?;
        StoreLocation::parse(text).map_err(|e| refuse(e.to_string()))
    }
}

/// Parses `--http` / `--metrics`: an IP address and a port (`127.0.0.1:8080`, `[::1]:0`).
///
/// # Errors
/// A text that is not one, naming the fix (a host name such as `localhost` is not resolved).
pub fn socket_address(s: &str) -> Result<std::net::SocketAddr, String> {
    s.trim().parse().map_err(|_| {
        format!(
            "`{s}` is not an IP address and port; write an IP address, e.g. `127.0.0.1:PORT` or `[::1]:PORT` (host names such as `localhost` are not resolved)"
        )
    })
}

/// Environment variable: how long the replica lease of a process writing to a PostgreSQL store
/// lasts, in milliseconds (default 15000, [`toolcat::records::DEFAULT_LEASE`]); it is renewed
/// every third of that. For tests and clusters that must see a killed replica's calls judged
/// sooner.
pub const LEASE_ENV: &str = "TOOLCAT_LEASE_MS";

/// Opens the store at `location` for writing: an SQLite file, or a PostgreSQL database with the
/// lease of [`LEASE_ENV`].
///
/// # Errors
/// The store's error (naming the file, or the URL without its password, and the fix); a
/// [`LEASE_ENV`] that is not a positive whole number of milliseconds.
pub fn open_store(location: &StoreLocation) -> anyhow::Result<CallStore> {
    match location {
        StoreLocation::File(path) => Ok(CallStore::open(path)?),
        StoreLocation::Postgres(url) => {
            let lease = match std::env::var(LEASE_ENV) {
                Err(_) => LeaseTimes::default(),
                Ok(ms) => match ms.trim().parse::<u64>() {
                    Ok(ms) if ms > 0 => LeaseTimes::of(Duration::from_millis(ms)),
                    _ => anyhow::bail!(
                        "{LEASE_ENV} is `{ms}`, not a lease in milliseconds; set it to a positive whole number (e.g. 15000) or unset it"
                    ),
                },
            };
            Ok(CallStore::connect(url, lease)?)
        }
    }
}

impl StoreArg {
    /// `--store`, else `TOOLCAT_STORE`, else [`DEFAULT_STORE`]. An empty `TOOLCAT_STORE` counts
    /// as unset (clap sees the empty value only through the environment: `--store ""` is refused
    /// by clap itself).
    ///
    /// The default location lies in the current directory, often an untrusted workspace, so it
    /// is checked first ([`check_default_location`]); `create` makes its `.toolcat` directory
    /// when absent. Any store file is then opened without following a link at its path
    /// ([`toolcat::StoreError::Symlink`]).
    ///
    /// # Errors
    /// For the default location: `.toolcat`, the store file or one of SQLite's files beside it
    /// is a symbolic link, or `.toolcat` cannot be created.
    pub fn location(&self, create: bool) -> anyhow::Result<StoreLocation> {
        match self.store.clone() {
            Some(StoreLocation::File(path)) if path.as_os_str().is_empty() => {
                StoreArg { store: None }.location(create)
            }
            Some(location) => Ok(location),
            None => {
                let path = PathBuf::from(DEFAULT_STORE);
                check_default_location(&path, create)?;
                Ok(StoreLocation::File(path))
            }
        }
    }
}

/// Refuses a symbolic link at the directory of `store` (`.toolcat`), at `store` or at SQLite's
/// files beside it (`-wal`, `-shm`, `-journal`), none of which SQLite's `SQLITE_OPEN_NOFOLLOW`
/// covers; when `create`, the missing directory is made with `create_dir` (never through a
/// link). A link swapped in after this check is still refused at the store file by the open.
///
/// # Errors
/// Names the link and the fix (remove it, or pass `--store PATH` / `TOOLCAT_STORE`); the I/O
/// error when the directory cannot be created.
pub fn check_default_location(store: &Path, create: bool) -> anyhow::Result<()> {
    let refuse_link = |path: &Path| -> anyhow::Result<bool> {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => anyhow::bail!(
                "`{}` is a symbolic link, which the default call store never follows; remove \
                 it, or pass another store with `--store PATH` or `TOOLCAT_STORE`",
                path.display()
            ),
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => {
                Err(anyhow::Error::new(e).context(format!("cannot inspect `{}`", path.display())))
            }
        }
    };
    if let Some(dir) = store.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !refuse_link(dir)? && create {
            match std::fs::create_dir(dir) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                    return Err(
                        anyhow::Error::new(e).context(format!("cannot create `{}`", dir.display()))
                    );
                }
                // Another process may have made it (or planted a link) meanwhile.
                _ => {
                    refuse_link(dir)?;
                }
            }
        }
    }
    refuse_link(store)?;
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut beside = store.as_os_str().to_owned();
        beside.push(suffix);
        refuse_link(Path::new(&beside))?;
    }
    Ok(())
}

/// How a command that runs tools connects to the catalog's MCP servers.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// How long to wait for the MCP servers to connect before the first turn or call, in
    /// milliseconds (default: 2000 for `session` and `serve`, 10000 for `call` of a remote
    /// tool). A server still connecting then keeps connecting in the background; its tools
    /// answer that it is not connected until it is ready.
    #[arg(long, value_name = "MS")]
    pub wait: Option<u64>,
    /// Which MCP servers to connect at start: `all`, `none`, or server names, comma-separated
    /// (default: none at start; each server connects at the first call of one of its tools).
    /// The tools of a server left out answer that it is not connected.
    #[arg(
        long = "servers",
        value_name = "all|none|NAME,...",
        value_delimiter = ','
    )]
    pub servers: Vec<String>,
}

impl ConnectArgs {
    /// Whether servers connect at the first call of one of their tools (no `--servers` given)
    /// rather than at start.
    pub fn lazy(&self) -> bool {
        self.servers.iter().all(|s| s.trim().is_empty())
    }

    /// The servers to connect: `None` for every server, else their names (checked against the
    /// catalog).
    ///
    /// # Errors
    /// When a name is not a server of the catalog; the message lists the declared ones.
    pub fn only(&self, c: &Catalog) -> anyhow::Result<Option<Vec<String>>> {
        // The default (no `--servers`): every server, each connected at its first use.
        let names: Vec<&str> = self
            .servers
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .collect();
        match names.as_slice() {
            [] | ["all"] => Ok(None),
            ["none"] => Ok(Some(Vec::new())),
            _ => {
                for name in &names {
                    if *name == "all" || *name == "none" {
                        bail!("`--servers {name}` cannot be combined with server names; pass `all`, `none`, or names");
                    }
                    server_id(c, name)?;
                }
                Ok(Some(names.iter().map(|s| s.to_string()).collect()))
            }
        }
    }
}

/// The server `name` of `c`.
///
/// # Errors
/// When `c` declares no such `[mcp_server]`; the message lists those it declares.
pub fn server_id(c: &Catalog, name: &str) -> anyhow::Result<ServerId> {
    c.servers()
        .find(|&s| c.server_name(s) == name)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "the catalog declares no MCP server `{name}`; its servers: {}",
                declared(c)
            )
        })
}

/// The catalog's server names, backticked and comma-separated, or `none`.
pub(crate) fn declared(c: &Catalog) -> String {
    let names: Vec<String> = c
        .servers()
        .map(|s| format!("`{}`", c.server_name(s)))
        .collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}
