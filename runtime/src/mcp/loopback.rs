//! The `Host` and `Origin` checks of the streamable HTTP server, against DNS rebinding (MCP,
//! streamable HTTP transport, "Security Warning": servers validate `Origin` and bind loopback).
//!
//! Both headers are parsed into scheme, host and port and compared whole, never by prefix:
//!
//! - `Host` (required): a loopback host, `localhost` (any letter case), `127.0.0.1` or `[::1]`,
//!   and exactly the server's port (a `Host` without a port means port 80). A page on an
//!   attacker's domain that resolves to 127.0.0.1 sends its own domain here, and is refused.
//! - `Origin` (when present; non-browser clients send none): `http://` or `https://`, a loopback
//!   host as above, and exactly the server's port (none written means the scheme's default, 80
//!   or 443); no path, no user. A page served from another local port (a dev server) is another
//!   origin and is refused as well: any local web server, whatever it serves, could otherwise
//!   drive the tools. `Origin: null` (sandboxed frames, files) is refused.
//!
//! A request that fails either is answered 403 before the SDK sees it, naming the header, the
//! value and what is accepted.

/// The loopback hosts a `Host` or `Origin` may name, as written there (IPv6 in brackets).
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Checks that requests to `addr`, a loopback address about to be bound, can pass the `Host`
/// check: a loopback address other than `127.0.0.1` and `[::1]` (say `127.0.0.2`) would be
/// bound and then answer every request 403. `Err` is the message naming the fix.
pub fn check_bind(addr: std::net::SocketAddr) -> Result<(), String> {
    match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_loopback() && ip != std::net::Ipv4Addr::LOCALHOST => {
            Err(format!(
                "`{addr}` is a loopback address no request can name: the `Host` check (against DNS rebinding) accepts only {}; bind `127.0.0.1` or `[::1]`",
                LOOPBACK_HOSTS.map(|h| format!("`{h}`")).join(", ")
            ))
        }
        _ => Ok(()),
    }
}

/// Whether `host` (as written in a header, IPv6 in brackets) is one of [`LOOPBACK_HOSTS`].
fn is_loopback_host(host: &str) -> bool {
    LOOPBACK_HOSTS.iter().any(|h| h.eq_ignore_ascii_case(host))
}

/// Splits `host[:port]` (IPv6 as `[addr][:port]`) into the host and the port, `default` when none
/// is written; `None` when the port is not 1 to 5 digits of a `u16`, or something follows it.
fn split_authority(authority: &str, default: u16) -> Option<(&str, u16)> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')? + 1;
        let (host, rest) = authority.split_at(end);
        match rest {
            "" => (host, None),
            _ => (host, Some(rest.strip_prefix(':')?)),
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => default,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            p.parse().ok()?
        }
        Some(_) => return None,
    };
    Some((host, port))
}

/// What is accepted, for messages: `localhost`, `127.0.0.1` or `[::1]` with port `port`.
fn accepted(port: u16) -> String {
    format!("`localhost:{port}`, `127.0.0.1:{port}` or `[::1]:{port}`")
}

/// Checks a `Host` header value (`None`: no `Host` header, or more than one) against a server
/// on `port`; `Err` is the message of the 403.
pub fn check_host(value: Option<&str>, port: u16) -> Result<(), String> {
    let Some(value) = value else {
        return Err(format!(
            "the request has no single `Host` header; send `Host` naming this server, {}",
            accepted(port)
        ));
    };
    match split_authority(value, 80) {
        Some((host, p)) if is_loopback_host(host) && p == port => Ok(()),
        _ => Err(format!(
            "`Host: {value}` does not name this server: it answers only to {}, so that a web page on another name (DNS rebinding) cannot reach it; connect to http://127.0.0.1:{port}/",
            accepted(port)
        )),
    }
}

/// Checks an `Origin` header value (`Some(None)`: more than one `Origin` header) against a
/// server on `port`; no `Origin` passes. `Err` is the message of the 403.
pub fn check_origin(value: Option<Option<&str>>, port: u16) -> Result<(), String> {
    let Some(value) = value else {
        return Ok(());
    };
    let refuse = |shown: &str| {
        Err(format!(
            "`Origin: {shown}` is not this server's origin: a browser page may call it only from `http://` or `https://` + {}; other pages, other ports included, are refused against DNS rebinding and cross-site requests",
            accepted(port)
        ))
    };
    let Some(value) = value else {
        return refuse("(more than one)");
    };
    let parsed = value.split_once("://").and_then(|(scheme, authority)| {
        let default = match scheme.to_ascii_lowercase().as_str() {
            "http" => 80,
            "https" => 443,
            _ => return None,
        };
        split_authority(authority, default)
    });
    match parsed {
        Some((host, p)) if is_loopback_host(host) && p == port => Ok(()),
        _ => refuse(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_needs_a_loopback_name_and_the_servers_port() {
        for ok in [
            "localhost:8080",
            "LOCALHOST:8080",
            "127.0.0.1:8080",
            "[::1]:8080",
        ] {
            assert_eq!(check_host(Some(ok), 8080), Ok(()), "{ok}");
        }
        assert_eq!(check_host(Some("localhost"), 80), Ok(()));
        for bad in [
            "localhost:8080.evil.com",
            "localhost:8080:8080",
            "127.0.0.1:1",
            "127.0.0.1:80800",
            "127.0.0.1:+8080",
            "127.0.0.1:",
            "localhost",
            "evil.com:8080",
            "localhost.evil.com:8080",
            "user@localhost:8080",
            "[::1]x:8080",
            "[::1]",
            "::1:8080",
            "127.0.0.2:8080",
            "",
        ] {
            let e = check_host(Some(bad), 8080).unwrap_err();
            assert!(
                e.contains("`Host") && e.contains("127.0.0.1:8080"),
                "{bad}: {e}"
            );
        }
        assert!(check_host(None, 8080)
            .unwrap_err()
            .contains("no single `Host`"));
    }

    #[test]
    fn origin_when_present_is_the_servers_own_loopback_origin() {
        assert_eq!(check_origin(None, 8080), Ok(()));
        for ok in [
            "http://localhost:8080",
            "https://127.0.0.1:8080",
            "HTTP://[::1]:8080",
        ] {
            assert_eq!(check_origin(Some(Some(ok)), 8080), Ok(()), "{ok}");
        }
        assert_eq!(check_origin(Some(Some("http://localhost")), 80), Ok(()));
        assert_eq!(check_origin(Some(Some("https://localhost")), 443), Ok(()));
        for bad in [
            "http://localhost:8080.evil.com",
            "http://localhost:3000",
            "http://localhost",
            "https://localhost:80",
            "http://localhost:8080/",
            "http://user@localhost:8080",
            "ftp://localhost:8080",
            "localhost:8080",
            "http://evil.com:8080",
            "null",
        ] {
            let e = check_origin(Some(Some(bad)), 8080).unwrap_err();
            assert!(
                e.contains("`Origin") && e.contains("127.0.0.1:8080"),
                "{bad}: {e}"
            );
        }
        assert!(check_origin(Some(None), 8080).is_err());
    }
}
