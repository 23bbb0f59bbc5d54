//! Whether a browser's request comes from the web view itself: its
//! `Origin` must name the very host the request was sent to (`Host`), over
//! `http` (served plain) or `https` (the listener's own TLS, or a TLS proxy).
//! Sign-in, sign-out and every WebSocket a session cookie opens are held to
//! it, on top of the cookie's `SameSite=Strict`: a page of another site
//! can neither sign a browser in or out nor open its consoles.

use axum::http::{HeaderMap, header};

/// Longest `Host` or `Origin` value looked at; longer ones never match.
const MAX_HOST: usize = 255;

/// Whether `Origin` is present and is `http://HOST` or `https://HOST` for
/// the request's own `Host`.
pub fn same_origin(headers: &HeaderMap) -> bool {
    let (Some(origin), Some(host)) = (value(headers, header::ORIGIN), host(headers)) else {
        return false;
    };
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    rest.is_some_and(|r| r.eq_ignore_ascii_case(host))
}

/// Whether a request carries an `Origin` at all (a browser's WebSocket
/// always does; the terminal client's never does).
pub fn has_origin(headers: &HeaderMap) -> bool {
    headers.contains_key(header::ORIGIN)
}

/// The request's `Host`, bounded.
pub fn host(headers: &HeaderMap) -> Option<&str> {
    value(headers, header::HOST)
}

/// Whether `Host` names the loopback interface (`localhost`, `127.x`,
/// `[::1]`, with or without a port): with `auth = "none"` the web view
/// answers only those, against DNS rebinding.
pub fn host_is_loopback(headers: &HeaderMap) -> bool {
    let Some(host) = host(headers) else {
        return false;
    };
    let name = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn value(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= MAX_HOST)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(host: &str, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        if let Some(o) = origin {
            h.insert(header::ORIGIN, HeaderValue::from_str(o).unwrap());
        }
        h
    }

    #[test]
    fn only_the_serving_host_is_the_same_origin() {
        let host = "gw.example:8080";
        assert!(same_origin(&headers(host, Some("http://gw.example:8080"))));
        assert!(same_origin(&headers(host, Some("https://gw.example:8080"))));
        for other in [
            None,
            Some("http://evil.example"),
            Some("http://gw.example"),
            Some("http://gw.example:8080.evil"),
            Some("null"),
            Some("ws://gw.example:8080"),
        ] {
            assert!(!same_origin(&headers(host, other)), "{other:?}");
        }
    }

    #[test]
    fn loopback_hosts() {
        for ok in ["localhost:8080", "127.0.0.1:1", "[::1]:80", "localhost"] {
            assert!(host_is_loopback(&headers(ok, None)), "{ok}");
        }
        for bad in ["gw.example:80", "10.0.0.1:80", "localhost.evil:80"] {
            assert!(!host_is_loopback(&headers(bad, None)), "{bad}");
        }
    }
}
