//! The rules every request passes before a handler sees it (docs/dashboard.md, "Security"):
//!
//! 1. `Host` must name the loopback address and port the server bound (`127.0.0.1:<port>` or
//!    `localhost:<port>`), else 403: a page on another site whose name was re-bound to
//!    127.0.0.1 (DNS rebinding) sends its own name and learns nothing.
//! 2. Exactly two paths change anything, `POST /api/run/<id>/stop` and `/discard`; they take
//!    only POST, every other path only GET and HEAD, else 405.
//! 3. A POST needs the page's own `Origin` and the per-start secret token in `x-pitroom-token`
//!    (compared in constant time), else 403: another site cannot read the token (it cannot
//!    read our pages), and a custom header cannot be sent cross-origin without a preflight we
//!    never grant.
//! 4. Every response carries a strict CSP, `nosniff`, `no-referrer` and `no-store`.

use std::io::Read;

use axum::http::{header, HeaderMap, HeaderValue, Method, Uri};

/// The header the page sends its token in.
pub const TOKEN_HEADER: &str = "x-pitroom-token";

/// Only our own scripts, styles and data: no CDN, no font, no analytics, no inline script.
pub const CSP: &str =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
    connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'";

/// A per-start secret: 32 random bytes, hex.
pub fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Equal in time that does not depend on where the first difference is.
pub fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    let diff = given
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    std::hint::black_box(diff) == 0
}

/// Why a request was refused, as the status and a sentence for the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub message: String,
    /// For 405: the methods the path takes.
    pub allow: Option<&'static str>,
}

impl Refusal {
    fn forbidden(message: impl Into<String>) -> Refusal {
        Refusal {
            status: 403,
            message: message.into(),
            allow: None,
        }
    }
}

/// Whether `path` is one of the two actions (`/api/run/<id>/stop|discard`).
pub fn is_action(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/api/run/") else {
        return false;
    };
    match rest.split_once('/') {
        Some((id, action)) => !id.is_empty() && matches!(action, "stop" | "discard"),
        None => false,
    }
}

/// The hosts this server answers to.
fn allowed_hosts(port: u16) -> [String; 2] {
    [format!("127.0.0.1:{port}"), format!("localhost:{port}")]
}

/// Rule 1: the `Host` header (and an absolute request target's authority, if any).
pub fn check_host(headers: &HeaderMap, uri: &Uri, port: u16) -> Result<(), Refusal> {
    let allowed = allowed_hosts(port);
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_ascii_lowercase);
    let authority = uri.authority().map(|a| a.as_str().to_ascii_lowercase());
    let ok = |h: &Option<String>| h.as_ref().is_some_and(|h| allowed.contains(h));
    if ok(&host) && (authority.is_none() || ok(&authority)) {
        return Ok(());
    }
    Err(Refusal::forbidden(format!(
        "this dashboard answers only to http://127.0.0.1:{port}/ (the request named host {}); open that address",
        host.as_deref().unwrap_or("(none)")
    )))
}

/// Rule 2: which methods a path takes.
pub fn check_method(method: &Method, path: &str) -> Result<(), Refusal> {
    let (ok, allow) = if is_action(path) {
        (method == Method::POST, "POST")
    } else {
        (method == Method::GET || method == Method::HEAD, "GET, HEAD")
    };
    if ok {
        return Ok(());
    }
    Err(Refusal {
        status: 405,
        message: format!("{method} is not allowed on {path}; it takes {allow}"),
        allow: Some(allow),
    })
}

/// Rule 3: the page's own origin and the secret token.
pub fn check_action(headers: &HeaderMap, port: u16, token: &str) -> Result<(), Refusal> {
    let origin = headers.get(header::ORIGIN).and_then(|h| h.to_str().ok());
    let own = allowed_hosts(port).map(|h| format!("http://{h}"));
    if !origin.is_some_and(|o| own.iter().any(|x| x.eq_ignore_ascii_case(o))) {
        return Err(Refusal::forbidden(format!(
            "actions are taken only from the dashboard's own page (origin {}); use the buttons on http://127.0.0.1:{port}/",
            origin.unwrap_or("(none)")
        )));
    }
    let given = headers
        .get(TOKEN_HEADER)
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    if !same_secret(given, token.as_bytes()) {
        return Err(Refusal::forbidden(
            "the action's token is missing or wrong (the dashboard was restarted?); reload the page and try again",
        ));
    }
    Ok(())
}

/// Rule 4: the headers every response carries.
pub fn harden(headers: &mut HeaderMap) {
    let set = |headers: &mut HeaderMap, name: header::HeaderName, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(headers, header::CONTENT_SECURITY_POLICY, CSP);
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::REFERRER_POLICY, "no-referrer");
    set(headers, header::CACHE_CONTROL, "no-store");
    headers.insert(
        header::HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        header::HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).expect("header value"));
        }
        h
    }

    #[test]
    fn only_the_bound_loopback_host_and_port_pass() {
        let uri: Uri = "/".parse().expect("uri");
        for good in ["127.0.0.1:7878", "localhost:7878", "LOCALHOST:7878"] {
            assert!(
                check_host(&headers(&[("host", good)]), &uri, 7878).is_ok(),
                "{good}"
            );
        }
        for bad in [
            "evil.example:7878",
            "127.0.0.1:7879",
            "127.0.0.1",
            "[::1]:7878",
            "0.0.0.0:7878",
        ] {
            let e = check_host(&headers(&[("host", bad)]), &uri, 7878).expect_err(bad);
            assert_eq!(e.status, 403);
        }
        assert!(check_host(&HeaderMap::new(), &uri, 7878).is_err());
        let absolute: Uri = "http://evil.example:7878/".parse().expect("uri");
        assert!(check_host(&headers(&[("host", "127.0.0.1:7878")]), &absolute, 7878).is_err());
    }

    #[test]
    fn actions_take_only_post_and_everything_else_only_get() {
        assert!(check_method(&Method::POST, "/api/run/abc/stop").is_ok());
        assert!(check_method(&Method::POST, "/api/run/abc/discard").is_ok());
        assert_eq!(
            check_method(&Method::GET, "/api/run/abc/stop")
                .expect_err("GET on an action")
                .status,
            405
        );
        for m in [Method::POST, Method::PUT, Method::DELETE, Method::OPTIONS] {
            assert_eq!(check_method(&m, "/api/live").expect_err("").status, 405);
        }
        assert!(check_method(&Method::HEAD, "/").is_ok());
        assert!(!is_action("/api/run//stop"));
        assert!(!is_action("/api/run/abc/apply"));
    }

    #[test]
    fn an_action_needs_the_own_origin_and_the_exact_token() {
        let token = "a".repeat(64);
        let ok = headers(&[("origin", "http://127.0.0.1:9"), (TOKEN_HEADER, &token)]);
        assert!(check_action(&ok, 9, &token).is_ok());
        let foreign = headers(&[("origin", "http://evil.example"), (TOKEN_HEADER, &token)]);
        assert_eq!(check_action(&foreign, 9, &token).expect_err("").status, 403);
        let no_origin = headers(&[(TOKEN_HEADER, &token)]);
        assert!(check_action(&no_origin, 9, &token).is_err());
        let forged = headers(&[("origin", "http://127.0.0.1:9"), (TOKEN_HEADER, "b")]);
        assert!(check_action(&forged, 9, &token).is_err());
        let missing = headers(&[("origin", "http://localhost:9")]);
        assert!(check_action(&missing, 9, &token).is_err());
    }

    #[test]
    fn secrets_compare_equal_only_when_identical() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abd", b"abc"));
        assert!(!same_secret(b"ab", b"abc"));
        let t = new_token().expect("urandom");
        assert_eq!(t.len(), 64);
        assert_ne!(t, new_token().expect("urandom"));
    }
}
