//! [`ServerConfig`]: how to reach one MCP server, from its `[mcp_server.NAME]` entry or built by
//! hand, and the `${VAR}` references of its `env` and `headers` resolved at connect time.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use toolcat_catalog::model::McpServerDecl;

use crate::catalog::{Catalog, ServerId};
use crate::remote::RemoteError;

/// Default time one connection attempt may take when the entry sets no `connect_timeout_ms`:
/// 10 s (process start, `initialize` and the first `tools/list`).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Configured values shorter than this many bytes are not redacted from texts (they would garble
/// every text and are no credential): 4.
pub const MIN_REDACTED_LEN: usize = 4;

/// How a server is reached. Its `Debug` and serialized forms show no `env` or `headers` and no
/// password of the url.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "transport", rename_all = "kebab-case")]
pub enum Transport {
    /// A child process speaking MCP over its standard input and output.
    Stdio {
        /// The program (looked up on `PATH` when it has no `/`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the inherited environment; values may hold `${VAR}` references.
        #[serde(skip)]
        env: BTreeMap<String, String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint URL. Its user information (`USER:PASSWORD@`) is a credential: it is
        /// taken out of the url requested and sent as `Authorization: Basic
        /// base64(USER:PASSWORD)` (percent-decoded, RFC 7617), unless `headers` has an
        /// `Authorization` (any case), which wins; it and its derived forms are redacted from
        /// texts, and it is shown and serialized as `USER:[redacted]@` (`[redacted]@` without a
        /// password).
        #[serde(serialize_with = "serialize_url")]
        url: String,
        /// Headers of every request; values may hold `${VAR}` references.
        #[serde(skip)]
        headers: BTreeMap<String, String>,
    },
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Transport::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .finish(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &url_shown(url))
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// One MCP server's connection settings: `[mcp_server.NAME]` as the runtime uses it.
///
/// Values of `env` and `headers` are kept as written (`${VAR}` references unresolved); they are
/// resolved from the process environment at each connection (`ServerConfig::resolve`) and
/// never serialized, shown in errors or logged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerConfig {
    /// The server's name (`NAME` of `[mcp_server.NAME]`, the `source` of its rows).
    pub name: String,
    /// How it is reached.
    #[serde(flatten)]
    pub transport: Transport,
    /// How long one connection attempt may take; [`DEFAULT_CONNECT_TIMEOUT`] when `None`.
    #[serde(skip)]
    pub connect_timeout: Option<Duration>,
}

/// A configuration with its `${VAR}` references resolved, and the values to redact. Its `Debug`
/// form names keys only.
#[derive(Clone)]
pub(crate) struct Resolved {
    pub(crate) env: Vec<(String, String)>,
    pub(crate) headers: Vec<(String, String)>,
    /// The HTTP endpoint as requested: the configured `url` without its user information (which
    /// is sent as an `Authorization` header instead, see [`Transport::Http`]); `None` for stdio.
    pub(crate) url: Option<String>,
    pub(crate) secrets: Secrets,
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys = |v: &[(String, String)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        f.debug_struct("Resolved")
            .field("env", &keys(&self.env))
            .field("headers", &keys(&self.headers))
            .field("secrets", &self.secrets)
            .finish_non_exhaustive()
    }
}

/// The marker that replaces a secret in a text.
pub(crate) const REDACTED: &str = "[redacted]";

/// Values that must never leave the pool: the resolved `env` and `headers` values, the variables
/// they reference, and a `url`'s user information with the forms derived from it (see
/// [`ServerConfig::resolve`]). Each is kept as characters, longest first, so a value containing
/// another is replaced whole. Its `Debug` form shows how many, never a value.
///
/// [`Secrets::redact`] finds each value in a text
/// - in any letter case (`ABCD` for `abcd`: Unicode lower-case mapping, character by character);
/// - with any of its characters JSON-escaped, at any depth of JSON-in-a-JSON-string: `\u0061`,
///   `\\u0061`, `\"`, `\\\"`, `\\`, `\n` (characters outside the Basic Multilingual Plane
///   only as themselves);
/// - across the parts of one answer ([`Secrets::redact_parts`]: a value split over two content
///   blocks).
#[derive(Clone, Default)]
pub(crate) struct Secrets(Vec<Vec<char>>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} values)", self.0.len())
    }
}

/// Whether `a` and `b` are the same character in any letter case.
fn same_letter(a: char, b: char) -> bool {
    if a == b {
        return true;
    }
    if a.is_ascii() && b.is_ascii() {
        return a.eq_ignore_ascii_case(&b);
    }
    a.to_lowercase().eq(b.to_lowercase())
}

/// The end (a byte index of `text`) of one occurrence of the character `want` at byte `at`: the
/// character itself in any case, or a JSON escape of it behind one or more backslashes (a
/// `\uXXXX` escape, a short escape such as `\n` or `\"`, a run of backslashes for `\`).
fn one_char(text: &str, at: usize, want: char) -> Option<usize> {
    let rest = &text[at..];
    let slashes = rest.bytes().take_while(|&b| b == b'\\').count();
    if slashes == 0 {
        let c = rest.chars().next()?;
        return same_letter(c, want).then_some(at + c.len_utf8());
    }
    let after = &rest[slashes..];
    let escaped = at + slashes;
    if let Some(hex) = after.strip_prefix('u').and_then(|h| h.get(..4)) {
        if hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            let decoded = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32);
            if decoded.is_some_and(|d| same_letter(d, want)) {
                return Some(escaped + 5);
            }
        }
    }
    if want == '\\' {
        return Some(escaped);
    }
    let c = after.chars().next()?;
    let short = match c {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        'b' => '\u{8}',
        'f' => '\u{c}',
        other => other,
    };
    (same_letter(short, want) || same_letter(c, want)).then_some(escaped + c.len_utf8())
}

/// The end of an occurrence of `secret` starting at byte `at` of `text`, if one starts there.
fn occurrence_at(text: &str, at: usize, secret: &[char]) -> Option<usize> {
    secret
        .iter()
        .try_fold(at, |j, &want| one_char(text, j, want))
}

impl Secrets {
    /// Adds `value` (at least [`MIN_REDACTED_LEN`] bytes; shorter ones are no credential and
    /// would garble every text).
    pub(crate) fn add(&mut self, value: &str) {
        let chars: Vec<char> = value.chars().collect();
        if value.len() >= MIN_REDACTED_LEN && !self.0.contains(&chars) {
            self.0.push(chars);
            self.0.sort_by_key(|v| std::cmp::Reverse(v.len()));
        }
    }

    /// The byte ranges of `text` holding a secret, in order and not overlapping: at each
    /// position the longest secret found there.
    fn occurrences(&self, text: &str) -> Vec<(usize, usize)> {
        if self.0.is_empty() {
            return Vec::new();
        }
        // The bytes an occurrence can start with: a backslash (an escape), or the first byte of
        // a secret's first character in either case (any non-ASCII byte for a non-ASCII one).
        let mut starts = [false; 256];
        starts[usize::from(b'\\')] = true;
        for secret in &self.0 {
            let first = secret[0];
            if first.is_ascii() {
                starts[usize::from(first.to_ascii_lowercase() as u8)] = true;
                starts[usize::from(first.to_ascii_uppercase() as u8)] = true;
            } else {
                starts[0x80..].iter_mut().for_each(|s| *s = true);
                // A non-ASCII character may fold to an ASCII one (`K`, Kelvin sign, is `k`).
                for c in first.to_lowercase().chain(first.to_uppercase()) {
                    if c.is_ascii() {
                        starts[usize::from(c as u8)] = true;
                    }
                }
            }
        }
        let bytes = text.as_bytes();
        let mut found = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            if starts[usize::from(bytes[at])] && text.is_char_boundary(at) {
                if let Some(end) = self.0.iter().find_map(|s| occurrence_at(text, at, s)) {
                    found.push((at, end));
                    at = end;
                    continue;
                }
                if bytes[at] == b'\\' {
                    // What a run of backslashes escapes is the character after it, so a secret
                    // not found at the run's start is found at no position inside it: skip the
                    // run whole (trying each position takes time quadratic in its length).
                    at += bytes[at..].iter().take_while(|&&b| b == b'\\').count();
                    continue;
                }
            }
            at += 1;
        }
        found
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub(crate) fn redact(&self, text: &str) -> String {
        self.redact_parts(&[text]).pop().unwrap_or_default()
    }

    /// Each of `parts` (the texts of one answer, in order) with every secret replaced by
    /// `[redacted]`, a secret being looked for in the parts joined with nothing between them: a
    /// secret split over two parts is replaced in both (`[redacted]` ends the first, starts the
    /// second).
    pub(crate) fn redact_parts(&self, parts: &[&str]) -> Vec<String> {
        let joined = parts.concat();
        let found = self.occurrences(&joined);
        if found.is_empty() {
            return parts.iter().map(|p| p.to_string()).collect();
        }
        let mut out = Vec::with_capacity(parts.len());
        let mut part_start = 0;
        let mut next = 0; // the first occurrence not wholly before this part
        for part in parts {
            let part_end = part_start + part.len();
            let mut shown = String::with_capacity(part.len());
            let mut at = part_start;
            while next < found.len() && found[next].1 <= part_start {
                next += 1;
            }
            let mut k = next;
            while !part.is_empty() && k < found.len() && found[k].0 < part_end {
                // Past the loop above, an occurrence ends inside this part or after it.
                let (start, end) = found[k];
                shown.push_str(&joined[at..start.max(at)]);
                shown.push_str(REDACTED);
                at = end.min(part_end);
                k += 1;
            }
            shown.push_str(&joined[at..part_end]);
            out.push(shown);
            part_start = part_end;
        }
        out
    }

    /// Every string of `value` (keys included) redacted in place.
    pub(crate) fn redact_json(&self, value: &mut serde_json::Value) {
        if self.0.is_empty() {
            return;
        }
        match value {
            serde_json::Value::String(s) => {
                let r = self.redact(s);
                if r != *s {
                    *s = r;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            serde_json::Value::Object(map) => {
                let needs_key = map.keys().any(|k| self.redact(k) != *k);
                if needs_key {
                    let old = std::mem::take(map);
                    for (k, mut v) in old {
                        self.redact_json(&mut v);
                        map.insert(self.redact(&k), v);
                    }
                } else {
                    map.values_mut().for_each(|v| self.redact_json(v));
                }
            }
            _ => {}
        }
    }
}

impl ServerConfig {
    /// A stdio server: `command` with `args`, named after the command's file name.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let command = command.into();
        let name = std::path::Path::new(&command)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("server")
            .to_string();
        ServerConfig {
            name,
            transport: Transport::Stdio {
                command,
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
            },
            connect_timeout: None,
        }
    }

    /// A streamable HTTP server at `url`, named `http`.
    pub fn http(url: impl Into<String>) -> Self {
        ServerConfig {
            name: "http".to_string(),
            transport: Transport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
            connect_timeout: None,
        }
    }

    /// The same configuration under another name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Adds an environment variable of the process (stdio; ignored for HTTP). `value` may hold
    /// `${VAR}` references.
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Transport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Adds a header of every request (HTTP; ignored for stdio). `value` may hold `${VAR}`
    /// references.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let Transport::Http { headers, .. } = &mut self.transport {
            headers.insert(name.into(), value.into());
        }
        self
    }

    /// Sets how long one connection attempt may take.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// `stdio` or `http`.
    pub fn transport_name(&self) -> &'static str {
        match self.transport {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }

    /// How long one connection attempt may take.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT)
    }

    /// The configuration of `[mcp_server.NAME]` as declared.
    ///
    /// # Errors
    /// [`RemoteError::Config`] when the entry has neither `command` nor `url` (a validated
    /// catalog never has).
    pub fn from_decl(name: &str, decl: &McpServerDecl) -> Result<Self, RemoteError> {
        let transport = match (&decl.command, &decl.url) {
            (Some(command), None) => Transport::Stdio {
                command: command.clone(),
                args: decl.args.clone(),
                env: decl.env.clone(),
            },
            (None, Some(url)) => Transport::Http {
                url: url.clone(),
                headers: decl.headers.clone(),
            },
            _ => {
                return Err(RemoteError::Config {
                    server: name.to_string(),
                    message:
                        "it needs exactly one of `command` (stdio) and `url` (streamable HTTP)"
                            .to_string(),
                })
            }
        };
        Ok(ServerConfig {
            name: name.to_string(),
            transport,
            connect_timeout: decl.connect_timeout_ms.map(Duration::from_millis),
        })
    }

    /// Every `[mcp_server.NAME]` of the `tools.toml` text `source` (read from `path`, named in
    /// errors), in name order: for a compiled catalog, whose tables keep no `env`, `headers` or
    /// `connect_timeout_ms`.
    ///
    /// # Errors
    /// [`RemoteError::Config`] when the text does not load (its diagnostics rendered), or an entry
    /// has no transport.
    pub fn all_from_source(path: &str, source: &str) -> Result<Vec<Self>, RemoteError> {
        let loaded = toolcat_catalog::load::parse(path, source).map_err(|diagnostics| {
            RemoteError::Config {
                server: String::new(),
                message: format!(
                    "`{path}` does not load: {}",
                    toolcat_catalog::diagnostics::render_all(&diagnostics, path, source)
                ),
            }
        })?;
        loaded
            .file
            .mcp_server
            .iter()
            .map(|(name, decl)| ServerConfig::from_decl(name, decl))
            .collect()
    }

    /// The configuration of server `s` of `catalog`: `command`, `args` and `url` from its tables;
    /// `env`, `headers` and `connect_timeout_ms` from the file a loaded catalog was read from
    /// (a compiled catalog's tables keep none of those: pass [`ServerConfig::all_from_source`]'s
    /// configurations to the pool instead, see `PoolOptions::configs`).
    ///
    /// # Errors
    /// [`RemoteError::Config`] when the server has no transport, or the catalog's file no longer
    /// loads or no longer declares the server.
    pub fn from_catalog(catalog: &Catalog, s: ServerId) -> Result<Self, RemoteError> {
        match ServerConfig::file_configs(catalog) {
            Some(file) => ServerConfig::pick(catalog, s, &file),
            None => ServerConfig::from_tables(catalog, s),
        }
    }

    /// [`ServerConfig::from_catalog`] of every server of `catalog`, in catalog (name) order,
    /// reading a loaded catalog's file once.
    pub fn all_from_catalog(catalog: &Catalog) -> Vec<Result<Self, RemoteError>> {
        let file = ServerConfig::file_configs(catalog);
        catalog
            .servers()
            .map(|s| match &file {
                Some(file) => ServerConfig::pick(catalog, s, file),
                None => ServerConfig::from_tables(catalog, s),
            })
            .collect()
    }

    /// The configurations of a loaded catalog's file; `None` for a compiled catalog.
    fn file_configs(catalog: &Catalog) -> Option<Result<Vec<Self>, RemoteError>> {
        let path = catalog.path()?;
        Some(
            std::fs::read_to_string(path)
                .map_err(|e| RemoteError::Config {
                    server: String::new(),
                    message: format!(
                        "`{path}` cannot be read again for its `[mcp_server]` entries: {e}"
                    ),
                })
                .and_then(|source| ServerConfig::all_from_source(path, &source)),
        )
    }

    /// Server `s`'s configuration among `file`'s.
    fn pick(
        catalog: &Catalog,
        s: ServerId,
        file: &Result<Vec<Self>, RemoteError>,
    ) -> Result<Self, RemoteError> {
        let name = catalog.server_name(s);
        let path = catalog.path().unwrap_or_default();
        match file {
            Err(RemoteError::Config { message, .. }) => Err(RemoteError::Config {
                server: name.to_string(),
                message: message.clone(),
            }),
            Err(other) => Err(other.clone()),
            Ok(all) => {
                all.iter()
                    .find(|c| c.name == name)
                    .cloned()
                    .ok_or_else(|| RemoteError::Config {
                        server: name.to_string(),
                        message: format!(
                            "`{path}` no longer declares `[mcp_server.{name}]`; reload the catalog"
                        ),
                    })
            }
        }
    }

    /// `command`, `args` and `url` of server `s` from the catalog's tables.
    fn from_tables(catalog: &Catalog, s: ServerId) -> Result<Self, RemoteError> {
        let name = catalog.server_name(s);
        let tables = catalog.tables();
        let i = s.index();
        let command = tables.server_commands.get(i).cloned().flatten();
        let url = tables.server_urls.get(i).cloned().flatten();
        let args: Vec<String> = tables
            .server_args
            .get(i)
            .map(|a| a.iter().map(|x| x.to_string()).collect())
            .unwrap_or_default();
        let decl = McpServerDecl {
            description: String::new(),
            namespace: None,
            command: command.map(|c| c.to_string()),
            args,
            url: url.map(|u| u.to_string()),
            env: BTreeMap::new(),
            headers: BTreeMap::new(),
            code_mode: false,
            connect_timeout_ms: None,
        };
        ServerConfig::from_decl(name, &decl)
    }

    /// `env` and `headers` with every `${VAR}` replaced by the variable's value in this process's
    /// environment, and the values to redact from every text that leaves the pool.
    ///
    /// # Errors
    /// [`RemoteError::Config`] naming the key and the variable: a reference that is not closed or
    /// not a variable name (`${` + letters, digits, `_` + `}`), or a variable that is not set.
    /// The message never contains a value.
    pub(crate) fn resolve(&self) -> Result<Resolved, RemoteError> {
        let mut secrets = Secrets::default();
        let mut resolve_map = |field: &str, map: &BTreeMap<String, String>| {
            let mut out = Vec::with_capacity(map.len());
            for (key, value) in map {
                let resolved = expand(value, |var| std::env::var(var).ok()).map_err(|message| {
                    RemoteError::Config {
                        server: self.name.clone(),
                        message: format!("`{field}.{key}`: {message}"),
                    }
                })?;
                for var in references(value) {
                    if let Ok(v) = std::env::var(var) {
                        secrets.add(&v);
                    }
                }
                secrets.add(&resolved);
                out.push((key.clone(), resolved));
            }
            Ok::<_, RemoteError>(out)
        };
        let (env, headers, url) = match &self.transport {
            Transport::Stdio { env, .. } => (resolve_map("env", env)?, Vec::new(), None),
            Transport::Http { url, headers } => {
                let mut headers = resolve_map("headers", headers)?;
                let sent = match UserInfo::of(url) {
                    None => url.clone(),
                    Some(info) => {
                        let credential = info.credential(&mut secrets);
                        let configured = headers
                            .iter()
                            .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
                        if let (Some(credential), false) = (credential, configured) {
                            headers.push(("authorization".to_string(), credential));
                        }
                        info.without()
                    }
                };
                (Vec::new(), headers, Some(sent))
            }
        };
        Ok(Resolved {
            env,
            headers,
            url,
            secrets,
        })
    }
}

/// The user information of an HTTP `url` (`scheme://USER:PASSWORD@host/...`), as written
/// (percent-encoded). The authority ends at the first `/`, `?`, `#` or `\\` after `://`, and the
/// user information at its last `@`, as WHATWG URL parsers (the HTTP client's among them) read
/// `http` and `https` URLs.
struct UserInfo<'a> {
    scheme: &'a str,
    /// All of it: `USER:PASSWORD`, or `USER`.
    written: &'a str,
    user: &'a str,
    password: Option<&'a str>,
    /// What follows the `@`: the host, port, path, query and fragment.
    rest: &'a str,
}

impl<'a> UserInfo<'a> {
    fn of(url: &'a str) -> Option<Self> {
        let (scheme, after) = url.split_once("://")?;
        let end = after.find(['/', '?', '#', '\\']).unwrap_or(after.len());
        let (written, _host) = after[..end].rsplit_once('@')?;
        let (user, password) = match written.split_once(':') {
            Some((user, password)) => (user, Some(password)),
            None => (written, None),
        };
        Some(UserInfo {
            scheme,
            written,
            user,
            password,
            rest: &after[written.len() + 1..],
        })
    }

    /// The url without its user information: the one requested.
    fn without(&self) -> String {
        format!("{}://{}", self.scheme, self.rest)
    }

    /// The url with the user information's password, or the whole user information when it has
    /// no password, shown as `[redacted]`.
    fn shown(&self) -> String {
        let shown = match self.password {
            Some(_) => format!("{}:{REDACTED}", self.user),
            None => REDACTED.to_string(),
        };
        format!("{}://{shown}@{}", self.scheme, self.rest)
    }

    /// The `Authorization` value the user information stands for, `Basic` + base64 of
    /// `USER:PASSWORD` percent-decoded (RFC 7617; what the HTTP client would send for it); `None`
    /// for an empty one. Adds to `secrets` every form a server could echo: the user information
    /// and the password as written and decoded, `USER:PASSWORD`, its base64 (with and without
    /// padding) and the whole `Basic` value. The user name alone is not a secret, unless it is
    /// the whole user information.
    fn credential(&self, secrets: &mut Secrets) -> Option<String> {
        if self.written.is_empty() {
            return None;
        }
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        let user = decode(self.user);
        let password = self.password.map(decode);
        let pair = format!("{user}:{}", password.as_deref().unwrap_or_default());
        let base64 = data_encoding::BASE64.encode(pair.as_bytes());
        let basic = format!("Basic {base64}");
        let mut forms = vec![
            self.written.to_string(),
            decode(self.written),
            pair.clone(),
            base64.trim_end_matches('=').to_string(),
            base64.clone(),
            basic.clone(),
        ];
        if let (Some(written), Some(decoded)) = (self.password, password) {
            forms.extend([written.to_string(), decoded]);
        }
        forms.iter().for_each(|f| secrets.add(f));
        Some(basic)
    }
}

/// `url` with its credential replaced by `[redacted]` ([`UserInfo::shown`]), for display.
pub(crate) fn url_shown(url: &str) -> String {
    match UserInfo::of(url) {
        Some(info) if !info.written.is_empty() => info.shown(),
        _ => url.to_string(),
    }
}

fn serialize_url<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&url_shown(url))
}

/// The variable names `${NAME}` references in `value` (well-formed ones only).
fn references(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        let name = &after[..end];
        if is_variable_name(name) {
            out.push(name);
        }
        rest = &after[end + 1..];
    }
    out
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `value` with each `${NAME}` replaced by `lookup(NAME)`; `$` not followed by `{` is kept.
fn expand(value: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err("a `${` reference is not closed by `}`; write `${NAME}`".to_string());
        };
        let name = &after[..end];
        if !is_variable_name(name) {
            return Err(format!(
                "`${{{name}}}` is not a variable reference; write `${{NAME}}` with letters, digits and `_`"
            ));
        }
        match lookup(name) {
            Some(v) => out.push_str(&v),
            None => {
                return Err(format!(
                    "environment variable `{name}` is not set; set it in the environment that starts the agent"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_expand_and_malformed_ones_are_named() {
        let look = |n: &str| (n == "TOKEN").then(|| "s3cret-value".to_string());
        assert_eq!(
            expand("Bearer ${TOKEN}", look).unwrap(),
            "Bearer s3cret-value"
        );
        assert_eq!(
            expand("cost $5 ${TOKEN}", look).unwrap(),
            "cost $5 s3cret-value"
        );
        assert!(expand("${MISSING}", look)
            .unwrap_err()
            .contains("`MISSING` is not set"));
        assert!(expand("${TOKEN", look).unwrap_err().contains("not closed"));
        assert!(expand("${1X}", look)
            .unwrap_err()
            .contains("not a variable reference"));
        assert_eq!(references("a ${A} b ${B_2} ${-}"), vec!["A", "B_2"]);
    }

    #[test]
    fn a_url_credential_is_found_and_hidden() {
        let info = UserInfo::of("http://user:pw-1234@127.0.0.1:1/mcp?x=a@b").unwrap();
        assert_eq!((info.user, info.password), ("user", Some("pw-1234")));
        assert_eq!(info.without(), "http://127.0.0.1:1/mcp?x=a@b");
        let info = UserInfo::of("http://token-abcd@host/mcp").unwrap();
        assert_eq!((info.written, info.password), ("token-abcd", None));
        assert!(UserInfo::of("http://host/a:b@c").is_none());
        assert!(UserInfo::of("http://host\\a:b@c").is_none());
        assert_eq!(
            url_shown("https://u:p@ss@h/mcp"),
            "https://u:[redacted]@h/mcp"
        );
        assert_eq!(
            url_shown("https://token-abcd@h/mcp"),
            "https://[redacted]@h/mcp"
        );
        assert_eq!(url_shown("https://h/mcp"), "https://h/mcp");
    }

    #[test]
    fn a_url_credential_is_sent_as_basic_unless_a_header_is_configured_and_its_forms_are_secrets() {
        // `%40` is `@`: the credential is the decoded pair, as RFC 7617 and the HTTP client have it.
        let config = ServerConfig::http("https://alice:pa%40ss-77@h/mcp");
        let resolved = config.resolve().unwrap();
        assert_eq!(resolved.url.as_deref(), Some("https://h/mcp"));
        let basic = format!("Basic {}", data_encoding::BASE64.encode(b"alice:pa@ss-77"));
        assert_eq!(
            resolved.headers,
            vec![("authorization".to_string(), basic.clone())]
        );
        let base64 = &basic["Basic ".len()..];
        let text = format!(
            "a={basic} b={base64} c={} d=alice:pa@ss-77 e=pa%40ss-77 f=pa@ss-77 g=alice:pa%40ss-77 user alice",
            base64.trim_end_matches('=')
        );
        let shown = resolved.secrets.redact(&text);
        assert_eq!(
            shown,
            "a=[redacted] b=[redacted] c=[redacted] d=[redacted] e=[redacted] f=[redacted] g=[redacted] user alice"
        );

        // A configured `Authorization` wins: it is sent, the url's credential is not (and is
        // still a secret).
        let config = ServerConfig::http("https://alice:pa%40ss-77@h/mcp")
            .with_header("Authorization", "Bearer configured-1");
        let resolved = config.resolve().unwrap();
        assert_eq!(resolved.url.as_deref(), Some("https://h/mcp"));
        assert_eq!(
            resolved.headers,
            vec![(
                "Authorization".to_string(),
                "Bearer configured-1".to_string()
            )]
        );
        assert_eq!(
            resolved.secrets.redact("pa@ss-77 Bearer configured-1"),
            "[redacted] [redacted]"
        );
        assert!(!format!("{resolved:?}").contains("pa@ss"));
        assert!(!format!("{resolved:?}").contains("configured-1"));
    }

    #[test]
    fn secrets_are_found_in_any_case_escaped_and_across_parts() {
        let mut s = Secrets::default();
        s.add("tok-Abc-123");
        s.add("q\"uo\\te");
        // Letter case.
        assert_eq!(s.redact("x TOK-abc-123 y"), "x [redacted] y");
        // `\u` escapes, any of the characters, at one or two levels of JSON.
        assert_eq!(s.redact(r"x \u0074ok-\u0041bc-123 y"), "x [redacted] y");
        assert_eq!(s.redact(r"x \\u0074OK-Abc-12\\u0033 y"), "x [redacted] y");
        // A value with a quote and a backslash, JSON-escaped once and twice.
        assert_eq!(s.redact(r#"{"m": "q\"uo\\te"}"#), r#"{"m": "[redacted]"}"#);
        assert_eq!(
            s.redact(r#"{"t": "{\"m\": \"q\\\"uo\\\\te\"}"}"#),
            r#"{"t": "{\"m\": \"[redacted]\"}"}"#
        );
        // Split over two parts (content blocks): both ends replaced.
        assert_eq!(
            s.redact_parts(&["key: tok-A", "bc-123 done", "clean"]),
            vec!["key: [redacted]", "[redacted] done", "clean"]
        );
        assert_eq!(
            s.redact_parts(&["tok-", "", "Abc-123"]),
            vec!["[redacted]", "", "[redacted]"]
        );
        // A long run of backslashes (each position the start of an escape) is passed over in
        // linear time.
        let run = "\\".repeat(1 << 20);
        assert_eq!(s.redact(&run), run);
        assert_eq!(
            s.redact(&format!("{run}x tok-abc-123")),
            format!("{run}x [redacted]")
        );
        // Nothing else changes: near misses, other escapes, non-ASCII text.
        let kept = r"tok-Abc-12 \u0041 é tok_Abc-123 \n";
        assert_eq!(s.redact(kept), kept);
        assert!(!format!("{s:?}").contains("tok"));
    }

    #[test]
    fn secrets_are_redacted_from_texts_and_json_longest_first() {
        let mut s = Secrets::default();
        s.add("abcd");
        s.add("xx"); // too short to be a credential
        s.add("Bearer abcd");
        assert_eq!(
            s.redact("h: Bearer abcd, t: abcd, xx"),
            "h: [redacted], t: [redacted], xx"
        );
        let mut v = serde_json::json!({"abcd": ["abcd!", 1], "k": "no"});
        s.redact_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"[redacted]": ["[redacted]!", 1], "k": "no"})
        );
    }
}
