//! The OAuth 2.1 resource server of `toolcat serve --oauth-issuer` (MCP authorization): JWT
//! access tokens validated against the issuer's JWKS. Feature `oauth`.
//!
//! # Validation
//! - The JWKS URL is `--oauth-jwks`, or the `jwks_uri` of the issuer's metadata: RFC 8414's
//!   `/.well-known/oauth-authorization-server` (inserted before the issuer's path), falling back
//!   to OpenID Connect's `ISSUER/.well-known/openid-configuration`; the metadata's `issuer` must
//!   be the issuer configured. The issuer (and the JWKS URL) must be `https://`, or `http://` on
//!   a loopback host. The keys are fetched at start (a server that cannot reach them does not
//!   start).
//! - Keys are cached by `kid`; a token naming an unknown `kid` refetches the JWKS, at most once
//!   per [`JWKS_REFETCH_INTERVAL`] (a flood of forged `kid`s costs one fetch per interval). A
//!   token without `kid` is checked against the JWKS's only key, if it has exactly one.
//! - The algorithm must be one of [`ALLOWED_ALGORITHMS`] (asymmetric only: never `none`, never an
//!   `HS*` keyed with a public key), and the key's own `alg`, when its JWK names one, the same.
//! - `iss` must be the issuer, `aud` must contain the audience, `exp` is required, and `exp` and
//!   `nbf` are checked with [`LEEWAY_SECONDS`] of leeway.
//!
//! # Claims to profile and scope
//! The exposure scope comes from the standard OAuth `scope` claim (space-separated; an `scp`
//! array, as some issuers write it, is read too): `toolcat:read-only`, `toolcat:staging` or
//! `toolcat:full` ([`SCOPE_PREFIX`]); the widest present is granted, never wider than the
//! server's. These are ordinary OAuth scopes, so the authorization server's own policy decides
//! who gets which, a client asks for them as for any scope (they are listed in the protected
//! resource metadata's `scopes_supported`), and no second mapping file has to agree with the
//! issuer. A token with none of them is valid but insufficient: HTTP 403 `insufficient_scope`.
//! The profile is the server's (`--profile`), unless `--oauth-profile-claim NAME` names a claim
//! whose string value is a profile of the catalog (the served tools are then that profile's ∩
//! the server's); a claim naming no profile of the catalog is refused at authentication
//! (HTTP 403 `insufficient_scope`, naming the profiles). Archived results are bound to `iss`
//! and `sub`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{json, Value};
use toolcat_catalog::model::Exposure;

use super::auth::Identity;
use super::HTTP_PATH;

/// The least time between two JWKS fetches caused by unknown `kid`s: 30 seconds.
pub const JWKS_REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// The leeway of `exp` and `nbf`: 30 seconds of clock skew.
pub const LEEWAY_SECONDS: u64 = 30;
/// How long one request to the issuer may take: 10 seconds.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The prefix of the OAuth scopes that grant an exposure scope: `toolcat:`.
pub const SCOPE_PREFIX: &str = "toolcat:";
/// The JWT algorithms accepted: RSA (PKCS#1 v1.5 and PSS), ECDSA P-256/P-384, EdDSA.
pub const ALLOWED_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// What `toolcat serve --oauth-*` configures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuthConfig {
    /// The authorization server's issuer identifier (`--oauth-issuer`), e.g.
    /// `https://auth.example.com/realms/agents`.
    pub issuer: String,
    /// The audience a token must carry in `aud` (`--oauth-audience`), usually this server's
    /// resource URL.
    pub audience: String,
    /// The JWKS URL (`--oauth-jwks`); `None`: discovered from the issuer's metadata.
    pub jwks: Option<String>,
    /// A claim naming the profile (`--oauth-profile-claim`); `None`: the server's profile.
    pub profile_claim: Option<String>,
    /// This server's resource identifier in the protected resource metadata
    /// (`--oauth-resource`, e.g. `https://mcp.example.com/mcp`); `None`: `http://` + the
    /// request's `Host` + `/mcp`.
    pub resource: Option<String>,
}

/// Why the OAuth resource server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// A URL that is not `https://` (or `http://` on loopback).
    #[error(
        "`{what}` `{url}` is not an https URL (http is accepted on loopback hosts only); {fix}"
    )]
    Insecure {
        /// Where the URL came from: `--oauth-issuer`, `--oauth-jwks`, or the metadata's
        /// `jwks_uri`.
        what: &'static str,
        url: String,
        /// What to change.
        fix: &'static str,
    },
    /// The issuer's metadata or JWKS could not be fetched or read.
    #[error("{0}")]
    Fetch(String),
}

/// A request's bearer token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not a valid token (signature, issuer, audience, time, algorithm, key): HTTP 401
    /// `invalid_token`. The text is safe to show (it names the check, not the key).
    Invalid(String),
    /// A valid token without the claims this server needs: HTTP 403 `insufficient_scope`.
    InsufficientScope(String),
}

/// The JWKS keys by `kid` (a key without one under the empty string), and when they were
/// fetched.
struct Keys {
    by_kid: HashMap<String, (DecodingKey, Option<Algorithm>)>,
    fetched: Instant,
}

/// A configured, started resource server.
pub struct OAuth {
    config: OAuthConfig,
    jwks: String,
    client: reqwest::Client,
    keys: tokio::sync::Mutex<Keys>,
}

/// Whether `url` is `https://`, or `http://` on a loopback host.
fn secure(url: &str) -> bool {
    if url.starts_with("https://") {
        return true;
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => authority,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The metadata URLs of `issuer`, in the order tried: RFC 8414's (well-known path inserted
/// before the issuer's path), then OpenID Connect's (appended).
pub fn metadata_urls(issuer: &str) -> Vec<String> {
    let trimmed = issuer.trim_end_matches('/');
    let (scheme, rest) = trimmed.split_once("://").unwrap_or(("https", trimmed));
    let (host, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    vec![
        format!("{scheme}://{host}/.well-known/oauth-authorization-server{path}"),
        format!("{trimmed}/.well-known/openid-configuration"),
    ]
}

impl OAuth {
    /// Checks `config`, discovers the JWKS URL when not given, and fetches the keys.
    ///
    /// # Errors
    /// [`OAuthError::Insecure`] for a plain-http URL off loopback; [`OAuthError::Fetch`] when
    /// the metadata or the JWKS cannot be fetched or read, naming the URL and the cause.
    pub async fn start(config: OAuthConfig) -> Result<OAuth, OAuthError> {
        if !secure(&config.issuer) {
            return Err(OAuthError::Insecure {
                what: "--oauth-issuer",
                url: config.issuer.clone(),
                fix: "pass the issuer's https URL",
            });
        }
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|e| OAuthError::Fetch(format!("cannot build the HTTP client: {e}")))?;
        let jwks = match &config.jwks {
            Some(url) => url.clone(),
            None => discover(&client, &config.issuer).await?,
        };
        if !secure(&jwks) {
            return Err(match config.jwks {
                Some(_) => OAuthError::Insecure {
                    what: "--oauth-jwks",
                    url: jwks,
                    fix: "pass the issuer's https JWKS URL to `--oauth-jwks`",
                },
                None => OAuthError::Insecure {
                    what: "jwks_uri",
                    url: jwks,
                    fix:
                        "the issuer's metadata names it; pass an https JWKS URL with `--oauth-jwks`",
                },
            });
        }
        let by_kid = fetch_keys(&client, &jwks).await?;
        Ok(OAuth {
            config,
            jwks,
            client,
            keys: tokio::sync::Mutex::new(Keys {
                by_kid,
                fetched: Instant::now(),
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// The JWKS URL used.
    pub fn jwks_url(&self) -> &str {
        &self.jwks
    }

    /// This server's resource identifier for a request that named `host` (its `Host` header).
    pub fn resource(&self, host: Option<&str>) -> String {
        match &self.config.resource {
            Some(r) => r.clone(),
            None => format!("http://{}{HTTP_PATH}", host.unwrap_or("localhost")),
        }
    }

    /// The protected resource metadata (RFC 9728) of `resource`.
    pub fn metadata(&self, resource: &str) -> Value {
        let scopes: Vec<String> = [Exposure::ReadOnly, Exposure::Staging, Exposure::Full]
            .iter()
            .map(|e| format!("{SCOPE_PREFIX}{}", e.as_str()))
            .collect();
        json!({
            "resource": resource,
            "authorization_servers": [self.config.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": scopes,
            "resource_name": "toolcat",
        })
    }

    /// The key for `kid` (the only key when `None`), refetching the JWKS once per
    /// [`JWKS_REFETCH_INTERVAL`] when it is unknown.
    async fn key(&self, kid: Option<&str>) -> Option<(DecodingKey, Option<Algorithm>)> {
        let mut keys = self.keys.lock().await;
        let pick = |keys: &Keys| match kid {
            Some(k) => keys.by_kid.get(k).cloned(),
            None if keys.by_kid.len() == 1 => keys.by_kid.values().next().cloned(),
            None => None,
        };
        if let Some(found) = pick(&keys) {
            return Some(found);
        }
        if keys.fetched.elapsed() < JWKS_REFETCH_INTERVAL {
            return None;
        }
        keys.fetched = Instant::now();
        match fetch_keys(&self.client, &self.jwks).await {
            Ok(by_kid) => keys.by_kid = by_kid,
            Err(e) => tracing::warn!("mcp: refetching the JWKS failed: {e}"),
        }
        pick(&keys)
    }

    /// Validates `token` (see the module docs) and returns its identity.
    ///
    /// # Errors
    /// [`Refused::Invalid`] for a token that fails a check, [`Refused::InsufficientScope`] for
    /// a valid one without a `toolcat:` scope (or the profile claim).
    pub async fn validate(&self, token: &str) -> Result<Identity, Refused> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| Refused::Invalid(format!("not a JWT: {e}")))?;
        if !ALLOWED_ALGORITHMS.contains(&header.alg) {
            return Err(Refused::Invalid(format!(
                "algorithm `{:?}` is not accepted (asymmetric RS*, PS*, ES256, ES384, EdDSA only)",
                header.alg
            )));
        }
        let Some((key, key_alg)) = self.key(header.kid.as_deref()).await else {
            return Err(Refused::Invalid(
                "the token's signing key is not in the issuer's JWKS".into(),
            ));
        };
        if key_alg.is_some_and(|a| a != header.alg) {
            return Err(Refused::Invalid(
                "the token's algorithm is not its key's".into(),
            ));
        }
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Value>(token, &key, &validation)
            .map_err(|e| Refused::Invalid(refusal_text(&e, token)))?;
        identity(&self.config, &data.claims)
    }
}

/// The words of a failed check (never the token or the key). `token` tells a claim that is
/// absent from one that is present but not a whole number of seconds (`exp: 1e30`), which the
/// decoder reports alike.
fn refusal_text(e: &jsonwebtoken::errors::Error, token: &str) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::InvalidSignature => "the signature does not verify".into(),
        K::ExpiredSignature => "the token has expired".into(),
        K::ImmatureSignature => "the token is not valid yet (`nbf`)".into(),
        K::InvalidAudience => "the token is not for this server (`aud`)".into(),
        K::InvalidIssuer => "the token is not of the configured issuer (`iss`)".into(),
        K::MissingRequiredClaim(c) if unverified_claim(token, c).is_some() => format!(
            "the token's `{c}` claim is not a time in whole seconds since 1970 (a NumericDate that fits 64 bits)"
        ),
        K::MissingRequiredClaim(c) => format!("the token has no `{c}` claim"),
        K::InvalidAlgorithm => "the token's algorithm does not match its key".into(),
        other => format!("the token is not valid: {other:?}"),
    }
}

/// The claim `name` of `token`'s payload, read without any check (for refusal messages only).
fn unverified_claim(token: &str, name: &str) -> Option<Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = data_encoding::BASE64URL_NOPAD
        .decode(payload.trim_end_matches('=').as_bytes())
        .ok()?;
    serde_json::from_slice::<Value>(&bytes)
        .ok()?
        .get(name)
        .cloned()
}

/// The identity of valid `claims`: the widest `toolcat:` scope, the profile claim when one is
/// configured.
fn identity(config: &OAuthConfig, claims: &Value) -> Result<Identity, Refused> {
    let mut scopes: Vec<&str> = claims
        .get("scope")
        .and_then(Value::as_str)
        .map(|s| s.split_whitespace().collect())
        .unwrap_or_default();
    if let Some(list) = claims.get("scp").and_then(Value::as_array) {
        scopes.extend(list.iter().filter_map(Value::as_str));
    }
    let exposure = scopes
        .iter()
        .filter_map(|s| s.strip_prefix(SCOPE_PREFIX))
        .filter_map(Exposure::parse)
        .filter(|e| *e != Exposure::Excluded)
        .max()
        .ok_or_else(|| {
            Refused::InsufficientScope(format!(
                "the token grants no `{SCOPE_PREFIX}read-only`, `{SCOPE_PREFIX}staging` or `{SCOPE_PREFIX}full` scope; ask the authorization server for one"
            ))
        })?;
    let profile = match &config.profile_claim {
        None => None,
        Some(claim) => Some(
            claims
                .get(claim)
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    Refused::InsufficientScope(format!(
                        "the token has no string claim `{claim}` naming its profile"
                    ))
                })?
                .to_string(),
        ),
    };
    let sub = claims.get("sub").and_then(Value::as_str).unwrap_or("");
    let principal = if sub.is_empty() {
        format!("a token of `{}`", config.issuer)
    } else {
        format!("subject `{sub}` of `{}`", config.issuer)
    };
    Ok(Identity::new(
        principal,
        profile,
        exposure,
        &[b"oauth", config.issuer.as_bytes(), sub.as_bytes()],
    ))
}

/// Fetches `url` as JSON.
async fn get_json(client: &reqwest::Client, url: &str) -> Result<Value, String> {
    let response = client
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| {
            if e.is_timeout() {
                format!(
                    "`{url}` did not answer within {} s (timed out)",
                    FETCH_TIMEOUT.as_secs()
                )
            } else {
                format!("`{url}` cannot be fetched: {e}")
            }
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("`{url}` answered HTTP {status}"));
    }
    response
        .json::<Value>()
        .await
        .map_err(|e| format!("`{url}` is not JSON: {e}"))
}

/// The `jwks_uri` of `issuer`'s metadata (see the module docs).
async fn discover(client: &reqwest::Client, issuer: &str) -> Result<String, OAuthError> {
    let mut tried = Vec::new();
    for url in metadata_urls(issuer) {
        match get_json(client, &url).await {
            Ok(meta) => {
                let named = meta.get("issuer").and_then(Value::as_str);
                if named.map(|i| i.trim_end_matches('/')) != Some(issuer.trim_end_matches('/')) {
                    let named = named.map_or("no issuer".to_string(), |i| format!("issuer `{i}`"));
                    return Err(OAuthError::Fetch(format!(
                        "the metadata at `{url}` names {named}, not `{issuer}`; pass the issuer exactly as the authorization server names it"
                    )));
                }
                return meta
                    .get("jwks_uri")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| {
                        OAuthError::Fetch(format!(
                            "the metadata at `{url}` has no `jwks_uri`; pass the JWKS URL with `--oauth-jwks`"
                        ))
                    });
            }
            Err(e) => tried.push(e),
        }
    }
    Err(OAuthError::Fetch(format!(
        "the issuer's metadata cannot be read ({}); check `--oauth-issuer`, or pass the JWKS URL with `--oauth-jwks`",
        tried.join("; ")
    )))
}

/// The usable keys of the JWKS at `url`, by `kid` (keys of other uses, or that do not parse,
/// are skipped).
async fn fetch_keys(
    client: &reqwest::Client,
    url: &str,
) -> Result<HashMap<String, (DecodingKey, Option<Algorithm>)>, OAuthError> {
    let value = get_json(client, url)
        .await
        .map_err(|e| OAuthError::Fetch(format!("the JWKS cannot be read: {e}")))?;
    let set: JwkSet = serde_json::from_value(value)
        .map_err(|e| OAuthError::Fetch(format!("`{url}` is not a JWKS: {e}")))?;
    let mut keys = HashMap::new();
    for jwk in &set.keys {
        if let Some((kid, key)) = usable(jwk) {
            keys.insert(kid, key);
        }
    }
    if keys.is_empty() {
        return Err(OAuthError::Fetch(format!(
            "the JWKS at `{url}` has no signing key this server accepts (RSA, EC P-256/P-384, Ed25519)"
        )));
    }
    Ok(keys)
}

/// A signature key of a JWK, with its `kid` (empty when none) and its declared algorithm.
fn usable(jwk: &Jwk) -> Option<(String, (DecodingKey, Option<Algorithm>))> {
    use jsonwebtoken::jwk::PublicKeyUse;
    if matches!(&jwk.common.public_key_use, Some(u) if *u != PublicKeyUse::Signature) {
        return None;
    }
    let alg = match jwk.common.key_algorithm {
        None => None,
        Some(a) => Some(a.to_string().parse::<Algorithm>().ok()?),
    };
    if alg.is_some_and(|a| !ALLOWED_ALGORITHMS.contains(&a)) {
        return None;
    }
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some((jwk.common.key_id.clone().unwrap_or_default(), (key, alg)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_follow_rfc_8414_then_openid() {
        assert_eq!(
            metadata_urls("https://a.example/realms/x/"),
            [
                "https://a.example/.well-known/oauth-authorization-server/realms/x",
                "https://a.example/realms/x/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://a.example")[0],
            "https://a.example/.well-known/oauth-authorization-server"
        );
    }

    #[test]
    fn only_https_or_loopback_http_is_accepted() {
        for ok in [
            "https://a.example",
            "http://127.0.0.1:8080/x",
            "http://localhost",
            "http://[::1]:9/",
        ] {
            assert!(secure(ok), "{ok}");
        }
        for bad in [
            "http://a.example",
            "http://127.0.0.1.evil.example/",
            "ftp://x",
            "http://10.0.0.1",
        ] {
            assert!(!secure(bad), "{bad}");
        }
    }

    #[test]
    fn the_widest_toolcat_scope_is_granted_and_none_is_insufficient() {
        let config = OAuthConfig {
            issuer: "https://i".into(),
            ..OAuthConfig::default()
        };
        let id = identity(
            &config,
            &json!({"sub": "a", "scope": "openid toolcat:read-only toolcat:staging"}),
        )
        .unwrap();
        assert_eq!(id.exposure, Exposure::Staging);
        assert_eq!(id.profile, None);
        let id = identity(&config, &json!({"sub": "a", "scp": ["toolcat:full"]})).unwrap();
        assert_eq!(id.exposure, Exposure::Full);
        for claims in [
            json!({"sub": "a", "scope": "openid"}),
            json!({"scope": "toolcat:excluded"}),
        ] {
            assert!(matches!(
                identity(&config, &claims),
                Err(Refused::InsufficientScope(_))
            ));
        }
        let config = OAuthConfig {
            profile_claim: Some("toolcat_profile".into()),
            ..config
        };
        assert!(matches!(
            identity(&config, &json!({"scope": "toolcat:full"})),
            Err(Refused::InsufficientScope(_))
        ));
        let id = identity(
            &config,
            &json!({"scope": "toolcat:full", "toolcat_profile": "coder"}),
        )
        .unwrap();
        assert_eq!(id.profile.as_deref(), Some("coder"));
    }
}
