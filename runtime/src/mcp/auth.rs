//! Authentication of the streamable HTTP server: bearer tokens from a file, and (feature `oauth`)
//! JWT access tokens of an OAuth 2.1 authorization server ([`super::oauth`]). Each accepted
//! request carries an [`Identity`]: a profile and an exposure scope that decide what it lists
//! and may call, never wider than what the server was started with (the server's profile's
//! tools ∩ the identity's profile's tools, at the narrower of the two scopes).
//!
//! # The tokens file
//! TOML, one `[[token]]` table per client; the token itself is never stored, only its SHA-256:
//!
//! ```toml
//! [[token]]
//! name = "ci"                 # unique; what `toolcat token revoke` names
//! sha256 = "9f86d08…"         # lower-case hex SHA-256 of the token's UTF-8 bytes
//! profile = "coder"           # a profile the catalog declares
//! scope = "read-only"         # `read-only`, `staging` or `full`
//! ```
//!
//! Tokens are `tcat_` and 43 base64url characters (256 random bits from the operating system,
//! [`new_token`]). A presented token is hashed and compared with every entry's hash in constant
//! time ([`TokensFile::find`]). [`Tokens`] re-reads the file when its inode, status-change
//! time, modification time or length changed, checked on every request (one `stat`), so a revoked token is refused at the
//! next request without a restart. A file that stops loading (a syntax error, an unknown
//! profile) refuses every request (HTTP 503 naming the file and the cause) until it is fixed:
//! a broken file never keeps a revoked token alive.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use toolcat_catalog::model::Exposure;

use crate::archive::ArchiveOwner;
use crate::catalog::Catalog;

/// The prefix of every token [`new_token`] makes (so a leaked one is recognisable in logs and
/// secret scanners).
pub const TOKEN_PREFIX: &str = "tcat_";

/// Who a request is, as authentication decided: the profile and exposure scope it is granted.
/// Stored in the HTTP request's extensions for the MCP handler.
#[derive(Clone, PartialEq, Eq)]
pub struct Identity {
    /// Who, for logs and messages: ``token `ci` `` or ``subject `alice` of `https://issuer` ``.
    pub principal: String,
    /// The profile granted; `None`: the server's.
    pub profile: Option<String>,
    /// The exposure scope granted (`read-only`, `staging` or `full`).
    pub exposure: Exposure,
    /// A stable secret-free key of the principal (SHA-256 of the token's hash, or of issuer and
    /// subject): what archived results are bound to.
    key: [u8; 32],
    /// Whether a tokens-file entry granted it (so revoking the entry ends its sessions).
    from_tokens: bool,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("principal", &self.principal)
            .field("profile", &self.profile)
            .field("exposure", &self.exposure)
            .finish_non_exhaustive()
    }
}

impl Identity {
    /// An identity whose archive key is derived from `parts` (each part length-prefixed, so no
    /// two part lists share a key).
    pub fn new(
        principal: String,
        profile: Option<String>,
        exposure: Exposure,
        parts: &[&[u8]],
    ) -> Identity {
        let mut h = Sha256::new();
        h.update(b"toolcat identity\0");
        for p in parts {
            h.update((p.len() as u64).to_le_bytes());
            h.update(p);
        }
        Identity {
            principal,
            profile,
            exposure,
            key: h.finalize().into(),
            from_tokens: false,
        }
    }

    /// Whether `other` is the same principal (the same token, or the same issuer and subject),
    /// whatever it is granted.
    pub fn same_principal(&self, other: &Identity) -> bool {
        bool::from(self.key.ct_eq(&other.key))
    }

    /// The owner of the results archived for this identity: within `session` (an MCP session's
    /// own owner) when there is one, else the identity's alone (a stateless request), so a
    /// result archived for one identity is never read under another.
    pub fn archive_owner(&self, session: Option<ArchiveOwner>) -> ArchiveOwner {
        match session {
            Some(s) => s.bound_to(&self.key),
            None => ArchiveOwner::of_key(&self.key),
        }
    }
}

/// Why a tokens file cannot be used, or a `toolcat token` command cannot do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The file cannot be read.
    #[error("cannot read the tokens file `{path}`: {source}; name an existing tokens file (`toolcat token add --file F` creates one)")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The path is not a regular file (a directory, a FIFO, a device...): refused before any
    /// read, which could block.
    #[error("the tokens file `{path}` is {kind}, not a regular file; name a regular file (`toolcat token add --file F` creates one)")]
    NotAFile { path: PathBuf, kind: &'static str },
    /// `toolcat token add` of a name outside the allowed characters.
    #[error("`{name}` is not a token name: {NAME_RULE}")]
    BadName { name: String },
    /// The file is not valid TOML of the tokens shape.
    #[error("the tokens file `{path}` is not valid: {message}; each entry is `[[token]]` with `name`, `sha256`, `profile` and `scope` (recreate entries with `toolcat token add`)")]
    Parse { path: PathBuf, message: String },
    /// One entry is wrong.
    #[error("the tokens file `{path}`, token `{name}`: {message}")]
    Entry {
        path: PathBuf,
        name: String,
        message: String,
    },
    /// `toolcat token add` of a name the file already has.
    #[error("the tokens file `{path}` already has a token named `{name}`; revoke it first (`toolcat token revoke --file {path} {name}`) or choose another name")]
    Duplicate { path: PathBuf, name: String },
    /// `toolcat token revoke` of a name the file does not have.
    #[error("the tokens file `{path}` has no token named `{name}`; its tokens: {}", if names.is_empty() { "none".to_string() } else { names.join(", ") })]
    NotFound {
        path: PathBuf,
        name: String,
        names: Vec<String>,
    },
    /// The operating system's random source failed.
    #[error("cannot draw random bytes for a token: {0}")]
    Random(String),
}

/// One client of the tokens file (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// Unique in the file.
    pub name: String,
    /// Lower-case hex SHA-256 of the token ([`token_hash`]).
    pub sha256: String,
    /// The profile granted.
    pub profile: String,
    /// The exposure scope granted (not `excluded`).
    pub scope: Exposure,
}

/// The tokens file (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokensFile {
    /// The entries, in file order.
    #[serde(default, rename = "token")]
    pub tokens: Vec<TokenEntry>,
}

/// What a token name may be (checked by [`TokensFile::add`] and [`TokensFile::check_entries`]),
/// so names print safely in listings, logs and messages.
pub const NAME_RULE: &str = "a name is 1 to 64 characters of `A-Z a-z 0-9 . _ @ -`";

/// Whether `name` follows [`NAME_RULE`].
pub fn is_token_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'))
}

/// `name` as messages show it: control and non-ASCII characters escaped (`\n`, `\u{1b}`).
fn shown(name: &str) -> String {
    name.escape_default().to_string()
}

/// The first lines of a file written by [`TokensFile::to_toml`].
const HEADER: &str = "# toolcat bearer tokens (`toolcat serve --tokens FILE`): SHA-256 hashes only, never the tokens.\n# Edit with `toolcat token add`, `toolcat token list` and `toolcat token revoke`.\n\n";

/// A new token: [`TOKEN_PREFIX`] and 256 random bits in base64url without padding.
///
/// # Errors
/// [`AuthError::Random`] when the operating system's random source fails.
pub fn new_token() -> Result<String, AuthError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| AuthError::Random(e.to_string()))?;
    Ok(format!(
        "{TOKEN_PREFIX}{}",
        data_encoding::BASE64URL_NOPAD.encode(&bytes)
    ))
}

/// The lower-case hex SHA-256 of `token`'s UTF-8 bytes: what the file stores.
pub fn token_hash(token: &str) -> String {
    data_encoding::HEXLOWER.encode(&Sha256::digest(token.as_bytes()))
}

impl TokensFile {
    /// Reads and parses `path` (not checked against a catalog: see [`TokensFile::check`]).
    ///
    /// # Errors
    /// [`AuthError::Read`], [`AuthError::Parse`]; [`AuthError::NotAFile`] for a directory, a
    /// FIFO or a device (checked before opening, and opened without blocking on Unix, so a FIFO
    /// never hangs the caller).
    pub fn read(path: &Path) -> Result<TokensFile, AuthError> {
        use std::io::Read as _;
        let io = |source| AuthError::Read {
            path: path.to_path_buf(),
            source,
        };
        let not_a_file = |meta: &std::fs::Metadata| {
            (!meta.is_file()).then(|| AuthError::NotAFile {
                path: path.to_path_buf(),
                kind: crate::records::file_kind(meta),
            })
        };
        if let Some(e) = not_a_file(&std::fs::metadata(path).map_err(io)?) {
            return Err(e);
        }
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.custom_flags(libc::O_NONBLOCK);
        }
        let mut file = options.open(path).map_err(io)?;
        // The path may have been replaced between the check and the open.
        if let Some(e) = not_a_file(&file.metadata().map_err(io)?) {
            return Err(e);
        }
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(io)?;
        TokensFile::parse(&text, path)
    }

    /// Parses the text of `path`.
    ///
    /// # Errors
    /// [`AuthError::Parse`].
    pub fn parse(text: &str, path: &Path) -> Result<TokensFile, AuthError> {
        toml::from_str(text).map_err(|e| AuthError::Parse {
            path: path.to_path_buf(),
            message: e.message().to_string(),
        })
    }

    /// The file's text: a comment header, then one `[[token]]` table per entry.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self).unwrap_or_default();
        format!("{HEADER}{body}")
    }

    /// Checks every entry against `catalog`: [`TokensFile::check_entries`], then a profile
    /// `catalog` declares and a scope other than `excluded`.
    ///
    /// # Errors
    /// [`AuthError::Entry`] for the first wrong entry, naming it, the cause and the fix.
    pub fn check(&self, catalog: &Catalog, path: &Path) -> Result<(), AuthError> {
        self.check_entries(path)?;
        let entry = |name: &str, message: String| AuthError::Entry {
            path: path.to_path_buf(),
            name: name.to_string(),
            message,
        };
        for t in &self.tokens {
            if let Err(e) = catalog.profile(&t.profile) {
                return Err(entry(
                    &t.name,
                    format!("{e}; set `profile` to one of: {}", profile_names(catalog)),
                ));
            }
            if t.scope == Exposure::Excluded {
                return Err(entry(
                    &t.name,
                    "`excluded` is not an exposure scope; set `scope` to `read-only`, `staging` or `full`".into(),
                ));
            }
        }
        Ok(())
    }

    /// Checks what needs no catalog: each name follows [`NAME_RULE`] and is unique; each hash
    /// is 64 lower-case hex digits and unique (two entries with one hash would make one token
    /// two clients, and revoking one would leave it working).
    ///
    /// # Errors
    /// [`AuthError::Entry`] for the first wrong entry, naming it (escaped), the cause and the fix.
    pub fn check_entries(&self, path: &Path) -> Result<(), AuthError> {
        let entry = |name: &str, message: String| AuthError::Entry {
            path: path.to_path_buf(),
            name: shown(name),
            message,
        };
        for (i, t) in self.tokens.iter().enumerate() {
            if !is_token_name(&t.name) {
                return Err(entry(
                    &t.name,
                    format!("{NAME_RULE}; rename the entry in the file"),
                ));
            }
            if self.tokens[..i].iter().any(|o| o.name == t.name) {
                return Err(entry(
                    &t.name,
                    "the name appears twice; names are unique (remove one entry)".into(),
                ));
            }
            if self.tokens[..i].iter().any(|o| o.sha256 == t.sha256) {
                return Err(entry(
                    &t.name,
                    "its `sha256` is another entry's too; each token has one entry (remove the duplicate)".into(),
                ));
            }
            if t.sha256.len() != 64
                || !t
                    .sha256
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            {
                return Err(entry(
                    &t.name,
                    "`sha256` is not 64 lower-case hex digits; store the token's SHA-256 (`toolcat token add` does)".into(),
                ));
            }
        }
        Ok(())
    }

    /// The entry whose hash is `presented`'s, compared with every entry in constant time (the
    /// loop visits all entries whatever matches).
    pub fn find(&self, presented: &str) -> Option<&TokenEntry> {
        let hash = token_hash(presented);
        let mut found = None;
        for t in &self.tokens {
            if bool::from(t.sha256.as_bytes().ct_eq(hash.as_bytes())) {
                found = Some(t);
            }
        }
        found
    }

    /// Adds an entry for a new token and returns the token (to show once).
    ///
    /// # Errors
    /// [`AuthError::BadName`] for a name outside [`NAME_RULE`], [`AuthError::Duplicate`] when
    /// the name is taken, [`AuthError::Random`].
    pub fn add(
        &mut self,
        path: &Path,
        name: &str,
        profile: &str,
        scope: Exposure,
    ) -> Result<String, AuthError> {
        if !is_token_name(name) {
            return Err(AuthError::BadName { name: shown(name) });
        }
        if self.tokens.iter().any(|t| t.name == name) {
            return Err(AuthError::Duplicate {
                path: path.to_path_buf(),
                name: name.to_string(),
            });
        }
        let token = new_token()?;
        self.tokens.push(TokenEntry {
            name: name.to_string(),
            sha256: token_hash(&token),
            profile: profile.to_string(),
            scope,
        });
        Ok(token)
    }

    /// Removes the entry named `name` and returns it.
    ///
    /// # Errors
    /// [`AuthError::NotFound`], naming the file's tokens.
    pub fn revoke(&mut self, path: &Path, name: &str) -> Result<TokenEntry, AuthError> {
        match self.tokens.iter().position(|t| t.name == name) {
            Some(i) => Ok(self.tokens.remove(i)),
            None => Err(AuthError::NotFound {
                path: path.to_path_buf(),
                name: shown(name),
                names: self.tokens.iter().map(|t| shown(&t.name)).collect(),
            }),
        }
    }
}

/// The catalog's profile names, comma-separated, for messages.
fn profile_names(catalog: &Catalog) -> String {
    catalog
        .profiles()
        .map(|p| format!("`{}`", catalog.profile_name(p)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What identifies a version of a file cheaply: its device and inode (a file renamed into place
/// is another inode), its status-change time (any write or rename changes it, and unlike the
/// modification time no one can set it back: `cp -p`, `rsync -a` and `touch -r` keep the
/// modification time and length of a rotated file, not this), modification time and length.
type Stamp = Option<(u64, u64, i64, i64, SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path).ok()?;
    Some((
        meta.dev(),
        meta.ino(),
        meta.ctime(),
        meta.ctime_nsec(),
        meta.modified().ok()?,
        meta.len(),
    ))
}

/// The tokens file as served: re-read whenever it changed (see the module docs).
pub struct Tokens {
    path: PathBuf,
    loaded: Mutex<(Stamp, Result<TokensFile, String>)>,
}

impl Tokens {
    /// Loads and checks `path` against `catalog`.
    ///
    /// # Errors
    /// As [`TokensFile::read`] and [`TokensFile::check`].
    pub fn open(path: &Path, catalog: &Catalog) -> Result<Tokens, AuthError> {
        let before = stamp(path);
        let file = TokensFile::read(path)?;
        file.check(catalog, path)?;
        Ok(Tokens {
            path: path.to_path_buf(),
            loaded: Mutex::new((before, Ok(file))),
        })
    }

    /// The file served.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The identity of `presented`: `Ok(None)` when no entry has its hash. The file is re-read
    /// first when it changed, and checked against `catalog`.
    ///
    /// # Errors
    /// The message of a file that stopped loading (every request is refused until it is fixed).
    pub fn verify(&self, presented: &str, catalog: &Catalog) -> Result<Option<Identity>, String> {
        let loaded = self.current(catalog);
        let file = loaded.1.as_ref().map_err(Clone::clone)?;
        Ok(file.find(presented).map(entry_identity))
    }

    /// Whether `identity`, granted by an entry of this file, is no longer granted: its entry
    /// was revoked or replaced. `false` for an identity the file did not grant, and while the
    /// file does not load (every request is refused then anyway). The file is re-read first
    /// when it changed.
    pub fn revoked(&self, identity: &Identity, catalog: &Catalog) -> bool {
        if !identity.from_tokens {
            return false;
        }
        let loaded = self.current(catalog);
        match &loaded.1 {
            Ok(file) => !file
                .tokens
                .iter()
                .any(|t| entry_identity(t).same_principal(identity)),
            Err(_) => false,
        }
    }

    /// The file as loaded, re-read first when it changed and checked against `catalog`.
    fn current(
        &self,
        catalog: &Catalog,
    ) -> std::sync::MutexGuard<'_, (Stamp, Result<TokensFile, String>)> {
        let now = stamp(&self.path);
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if loaded.0 != now || now.is_none() {
            let file = TokensFile::read(&self.path)
                .and_then(|f| f.check(catalog, &self.path).map(|()| f))
                .map_err(|e| e.to_string());
            match &file {
                Ok(f) => tracing::info!(
                    "mcp: reloaded the tokens file `{}`: {} token(s)",
                    self.path.display(),
                    f.tokens.len()
                ),
                Err(e) => tracing::warn!("mcp: {e}; every request is refused until it is fixed"),
            }
            *loaded = (now, file);
        }
        loaded
    }
}

/// The identity a tokens-file entry grants.
fn entry_identity(t: &TokenEntry) -> Identity {
    Identity {
        from_tokens: true,
        ..Identity::new(
            format!("token `{}`", t.name),
            Some(t.profile.clone()),
            t.scope,
            &[b"token", t.sha256.as_bytes()],
        )
    }
}

/// How the HTTP server authenticates requests: a tokens file, an OAuth issuer, or both (a
/// presented token is looked up in the file first; one that starts with [`TOKEN_PREFIX`] and
/// is not there is refused without asking the issuer).
#[derive(Default)]
pub struct Authenticator {
    tokens: Option<Tokens>,
    #[cfg(feature = "oauth")]
    oauth: Option<super::oauth::OAuth>,
}

/// What [`Authenticator::authenticate`] decided about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Authenticated.
    Allowed(Identity),
    /// No `Authorization` header: HTTP 401 with a challenge and no error code (RFC 6750).
    Missing,
    /// A credential that is not a valid token: HTTP 401 `invalid_token`.
    Invalid(String),
    /// A valid token that grants no scope here: HTTP 403 `insufficient_scope`.
    Insufficient(String),
    /// The tokens file stopped loading: HTTP 503 until it is fixed.
    Unavailable(String),
}

impl Authenticator {
    /// An authenticator of the tokens file `tokens`.
    pub fn with_tokens(mut self, tokens: Tokens) -> Authenticator {
        self.tokens = Some(tokens);
        self
    }

    /// An authenticator of the OAuth issuer `oauth` (feature `oauth`).
    #[cfg(feature = "oauth")]
    pub fn with_oauth(mut self, oauth: super::oauth::OAuth) -> Authenticator {
        self.oauth = Some(oauth);
        self
    }

    /// Whether `identity` was granted by the tokens file and its entry is gone
    /// ([`Tokens::revoked`]).
    pub fn revoked(&self, identity: &Identity, catalog: &Catalog) -> bool {
        self.tokens
            .as_ref()
            .is_some_and(|t| t.revoked(identity, catalog))
    }

    /// Whether a tokens file is configured (whose revocations end sessions).
    pub fn has_tokens(&self) -> bool {
        self.tokens.is_some()
    }

    /// Whether any way of authenticating is configured.
    pub fn is_configured(&self) -> bool {
        #[cfg(feature = "oauth")]
        if self.oauth.is_some() {
            return true;
        }
        self.tokens.is_some()
    }

    /// The OAuth resource server, when configured.
    #[cfg(feature = "oauth")]
    pub fn oauth(&self) -> Option<&super::oauth::OAuth> {
        self.oauth.as_ref()
    }

    /// The protected resource metadata (RFC 9728) for a request that named `host`, and the URL
    /// it is served at for the `/mcp` resource; `None` without OAuth (a tokens file names no
    /// authorization server).
    pub fn resource_metadata(&self, host: Option<&str>) -> Option<(Value, String)> {
        #[cfg(feature = "oauth")]
        if let Some(oauth) = &self.oauth {
            let resource = oauth.resource(host);
            let url = metadata_url(&resource);
            return Some((oauth.metadata(&resource), url));
        }
        let _ = host;
        None
    }

    /// Decides about a request with these `Authorization` header values; tokens-file profiles
    /// are checked against `catalog` when the file is re-read.
    pub async fn authenticate(&self, authorization: &[&[u8]], catalog: &Catalog) -> Verdict {
        let token = match authorization {
            [] => return Verdict::Missing,
            [one] => match bearer(one) {
                Some(t) => t,
                None => {
                    return Verdict::Invalid(
                        "the `Authorization` header is not `Bearer TOKEN`".into(),
                    )
                }
            },
            _ => return Verdict::Invalid("more than one `Authorization` header".into()),
        };
        if let Some(tokens) = &self.tokens {
            match tokens.verify(token, catalog) {
                Ok(Some(identity)) => return Verdict::Allowed(identity),
                Err(message) => return Verdict::Unavailable(message),
                Ok(None) if token.starts_with(TOKEN_PREFIX) => {
                    return Verdict::Invalid("unknown or revoked token".into())
                }
                Ok(None) => {}
            }
        }
        #[cfg(feature = "oauth")]
        if let Some(oauth) = &self.oauth {
            return match oauth.validate(token).await {
                Ok(identity) => match identity.profile.as_deref().map(|p| catalog.profile(p)) {
                    Some(Err(e)) => Verdict::Insufficient(format!(
                        "the token's profile claim names no profile of this catalog ({e}); the issuer must grant one of: {}",
                        profile_names(catalog)
                    )),
                    _ => Verdict::Allowed(identity),
                },
                Err(super::oauth::Refused::Invalid(m)) => Verdict::Invalid(m),
                Err(super::oauth::Refused::InsufficientScope(m)) => Verdict::Insufficient(m),
            };
        }
        Verdict::Invalid("unknown or revoked token".into())
    }
}

/// The token of a `Bearer TOKEN` header value (scheme in any letter case).
fn bearer(value: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(value).ok()?.trim();
    let (scheme, token) = text.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

/// Where the protected resource metadata of `resource` is served (RFC 9728, section 3.1): the
/// well-known path inserted between the resource's origin and its path.
pub fn metadata_url(resource: &str) -> String {
    let (scheme, rest) = resource.split_once("://").unwrap_or(("http", resource));
    let (host, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    format!(
        "{scheme}://{host}{WELL_KNOWN}{}",
        path.trim_end_matches('/')
    )
}

/// The well-known path of the protected resource metadata.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_are_found_by_their_hash_only() {
        let catalog = crate::fixture::catalog();
        let path = Path::new("tokens.toml");
        let mut file = TokensFile::default();
        let a = file.add(path, "a", "coder", Exposure::ReadOnly).unwrap();
        let b = file.add(path, "b", "full", Exposure::Full).unwrap();
        assert!(a.starts_with(TOKEN_PREFIX) && a.len() == TOKEN_PREFIX.len() + 43);
        assert_ne!(a, b);
        let text = file.to_toml();
        assert!(
            !text.contains(&a) && text.contains(&token_hash(&a)),
            "{text}"
        );
        let back = TokensFile::parse(&text, path).unwrap();
        assert_eq!(back, file);
        back.check(&catalog, path).unwrap();
        assert_eq!(back.find(&a).unwrap().name, "a");
        assert_eq!(back.find(&b).unwrap().name, "b");
        assert!(back.find("tcat_nope").is_none());
        assert!(back.find(&token_hash(&a)).is_none());
        assert!(matches!(
            file.clone().add(path, "a", "coder", Exposure::Full),
            Err(AuthError::Duplicate { .. })
        ));
        let mut revoked = back.clone();
        revoked.revoke(path, "a").unwrap();
        assert!(revoked.find(&a).is_none());
        let e = revoked.revoke(path, "zz").unwrap_err().to_string();
        assert!(e.contains("no token named `zz`") && e.contains("b"), "{e}");
    }

    #[test]
    fn a_wrong_entry_is_named_with_its_fix() {
        let catalog = crate::fixture::catalog();
        let path = Path::new("t.toml");
        let hash = token_hash("x");
        let check = |text: String| {
            TokensFile::parse(&text, path)
                .and_then(|f| f.check(&catalog, path))
                .unwrap_err()
                .to_string()
        };
        let e = check(format!(
            "[[token]]\nname = \"ci\"\nsha256 = \"{hash}\"\nprofile = \"nope\"\nscope = \"full\"\n"
        ));
        assert!(
            e.contains("token `ci`") && e.contains("set `profile` to one of"),
            "{e}"
        );
        let e = check(format!(
            "[[token]]\nname = \"ci\"\nsha256 = \"{hash}\"\nprofile = \"coder\"\nscope = \"excluded\"\n"
        ));
        assert!(e.contains("`excluded` is not an exposure scope"), "{e}");
        let e = check(
            "[[token]]\nname = \"ci\"\nsha256 = \"abc\"\nprofile = \"coder\"\nscope = \"full\"\n"
                .into(),
        );
        assert!(e.contains("64 lower-case hex digits"), "{e}");
        let e = check("[[token]]\nname = \"ci\"\ntoken = \"x\"\n".into());
        assert!(e.contains("is not valid") && e.contains("[[token]]"), "{e}");
    }

    #[test]
    fn duplicate_hashes_and_unsafe_names_are_refused_without_a_catalog() {
        let path = Path::new("t.toml");
        let hash = token_hash("x");
        let two = format!(
            "[[token]]\nname = \"a\"\nsha256 = \"{hash}\"\nprofile = \"coder\"\nscope = \"full\"\n[[token]]\nname = \"b\"\nsha256 = \"{hash}\"\nprofile = \"coder\"\nscope = \"read-only\"\n"
        );
        let e = TokensFile::parse(&two, path)
            .unwrap()
            .check_entries(path)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("token `b`") && e.contains("another entry's"),
            "{e}"
        );
        let mut file = TokensFile::default();
        for bad in ["", "a b", "x\n", "\u{1b}[2J", &"n".repeat(65)] {
            let e = file
                .add(path, bad, "coder", Exposure::Full)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(NAME_RULE) && !e.contains('\n') && !e.contains('\u{1b}'),
                "{e}"
            );
        }
        file.add(path, "ci-bot_1.x@host", "coder", Exposure::Full)
            .unwrap();
        file.check_entries(path).unwrap();
    }

    #[test]
    fn a_file_rewritten_with_its_length_and_modification_time_kept_is_seen_to_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        std::fs::write(&path, "aaaa").unwrap();
        let before = stamp(&path);
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        // Writes `text` to `file` and sets its modification time back to `mtime`.
        let write_dated = |file: &Path, text: &str| {
            std::fs::write(file, text).unwrap();
            std::fs::File::options()
                .write(true)
                .open(file)
                .unwrap()
                .set_modified(mtime)
                .unwrap();
        };
        // Rotated in place, as `cp -p` does: same length, modification time set back.
        std::thread::sleep(std::time::Duration::from_millis(20));
        write_dated(&path, "bbbb");
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
        assert_ne!(stamp(&path), before);
        // Renamed into place, as `rsync -a` and `install -p` do.
        let before = stamp(&path);
        let next = dir.path().join("next.toml");
        write_dated(&next, "cccc");
        std::fs::rename(&next, &path).unwrap();
        assert_ne!(stamp(&path), before);
        // Unchanged, it stays the same.
        assert_eq!(stamp(&path), stamp(&path));
    }

    #[test]
    fn a_directory_or_fifo_is_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let e = TokensFile::read(dir.path()).unwrap_err();
        assert!(
            matches!(
                e,
                AuthError::NotAFile {
                    kind: "a directory",
                    ..
                }
            ),
            "{e}"
        );
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo");
            if !std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .is_ok_and(|s| s.success())
            {
                println!("skipped the FIFO case: `mkfifo` is not available");
                return;
            }
            let e = TokensFile::read(&fifo).unwrap_err();
            assert!(
                matches!(e, AuthError::NotAFile { kind: "a FIFO", .. }),
                "{e}"
            );
        }
    }

    #[test]
    fn archive_owners_differ_by_identity_and_session() {
        let a = Identity::new("a".into(), None, Exposure::Full, &[b"token", b"1"]);
        let b = Identity::new("b".into(), None, Exposure::Full, &[b"token", b"2"]);
        assert_eq!(a.archive_owner(None), a.archive_owner(None));
        assert_ne!(a.archive_owner(None), b.archive_owner(None));
        let s = ArchiveOwner::new();
        assert_ne!(a.archive_owner(Some(s)), b.archive_owner(Some(s)));
        assert_ne!(a.archive_owner(Some(s)), a.archive_owner(None));
    }
}
