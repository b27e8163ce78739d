//! [`ServerConfig`]: how to reach one MCP server, from its `[mcp_server.NAME]` entry or built by
//! hand, and the `${VAR}` references of its `env` and `headers` resolved at connect time.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use toolcat_codegen::model::McpServerDecl;

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
        /// The endpoint URL; a password in its user information (`user:PASSWORD@`) is a
        /// credential: redacted from texts and serialized as `[redacted]`.
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
/// resolved from the process environment at each connection ([`ServerConfig::resolve`]) and
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

/// A configuration with its `${VAR}` references resolved, and the values to redact.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub(crate) env: Vec<(String, String)>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) secrets: Secrets,
}

/// Values that must never leave the pool: the resolved `env` and `headers` values (and the
/// variables they reference), longest first so a value containing another is replaced whole.
#[derive(Debug, Clone, Default)]
pub(crate) struct Secrets(Vec<String>);

impl Secrets {
    fn add(&mut self, value: &str) {
        if value.len() >= MIN_REDACTED_LEN && !self.0.iter().any(|v| v == value) {
            self.0.push(value.to_string());
            self.0.sort_by_key(|v| std::cmp::Reverse(v.len()));
        }
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub(crate) fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.0 {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "[redacted]");
            }
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
        let loaded = toolcat_codegen::load::parse(path, source).map_err(|diagnostics| {
            RemoteError::Config {
                server: String::new(),
                message: format!(
                    "`{path}` does not load: {}",
                    toolcat_codegen::diagnostics::render_all(&diagnostics, path, source)
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
        let (env, headers) = match &self.transport {
            Transport::Stdio { env, .. } => (resolve_map("env", env)?, Vec::new()),
            Transport::Http { url, headers } => {
                let headers = resolve_map("headers", headers)?;
                if let Some(password) = url_password(url) {
                    secrets.add(password);
                }
                (Vec::new(), headers)
            }
        };
        Ok(Resolved {
            env,
            headers,
            secrets,
        })
    }
}

/// The password of `url`'s user information (`scheme://user:PASSWORD@host/...`), if any: a
/// credential like a header value, redacted from every text that leaves the pool.
fn url_password(url: &str) -> Option<&str> {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = after_scheme
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    let (userinfo, _host) = authority.rsplit_once('@')?;
    let (_user, password) = userinfo.split_once(':')?;
    (!password.is_empty()).then_some(password)
}

/// `url` with the password of its user information replaced by `[redacted]`, for display.
fn url_shown(url: &str) -> String {
    match url_password(url) {
        Some(password) => url.replacen(&format!(":{password}@"), ":[redacted]@", 1),
        None => url.to_string(),
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
    fn a_url_password_is_found_and_hidden() {
        assert_eq!(
            url_password("http://user:pw-1234@127.0.0.1:1/mcp?x=a@b"),
            Some("pw-1234")
        );
        assert_eq!(url_password("http://user@host/mcp"), None);
        assert_eq!(url_password("http://host/a:b@c"), None);
        assert_eq!(
            url_shown("https://u:p@ss@h/mcp"),
            "https://u:[redacted]@h/mcp"
        );
        assert_eq!(url_shown("https://h/mcp"), "https://h/mcp");
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
