//! `[server] alert_webhook`: where every alert is POSTed as JSON, signed
//! with HMAC-SHA256 when a secret file is given.
//!
//! `http://` or `https://`: over TLS the receiver's certificate is checked
//! against `ca_file` when given, else against the system's roots; the
//! signature lets the receiver tell a forged alert either way.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use toml::Spanned;

use super::checks::next_to_config;
use super::diagnostics::{ConfigError, Source};
use super::raw::RawWebhook;
use super::tokens::read_small_file;

/// Default time one delivery attempt may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default attempts after the first one fails.
pub const DEFAULT_RETRIES: u32 = 3;
/// Default alerts waiting for delivery; more are dropped and counted.
pub const DEFAULT_QUEUE: usize = 256;
/// Longest webhook URL.
const MAX_URL: usize = 2048;

/// The webhook, checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WebhookConfig {
    /// As written, `http[s]://host[:port]/path`.
    pub url: String,
    /// An `https://` URL: the POST goes over TLS.
    #[serde(skip)]
    pub https: bool,
    /// The CA certificates (PEM) an `https://` receiver's certificate must
    /// be signed by (`ca_file`); none: the system's roots.
    pub ca_file: Option<PathBuf>,
    /// The host to connect to (a name or an address; IPv6 without brackets).
    #[serde(skip)]
    pub host: String,
    /// The TCP port (80, or 443 for `https://`, unless given).
    #[serde(skip)]
    pub port: u16,
    /// The path and query sent in the request line.
    #[serde(skip)]
    pub path: String,
    /// The `Host` header: the URL's authority.
    #[serde(skip)]
    pub authority: String,
    /// The file the signing secret came from.
    pub secret_file: Option<PathBuf>,
    /// The signing secret.
    #[serde(skip)]
    pub secret: Option<WebhookSecret>,
    /// Time one attempt may take (connect, send, answer).
    pub timeout: Duration,
    /// Attempts after the first, with backoff (0.5 s, doubling, at most 10 s).
    pub retries: u32,
    /// Alerts waiting for delivery at most.
    pub queue: usize,
}

/// The HMAC key; never shown.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(pub Arc<[u8]>);

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(..)")
    }
}

impl RawWebhook {
    /// Checks the values; reads the secret file.
    pub(super) fn resolve(self, src: &Source) -> Result<WebhookConfig, ConfigError> {
        let key = "server.alert_webhook";
        let url = self.url.get_ref();
        let (https, host, port, path, authority) =
            parse_url(url).map_err(|e| src.error(self.url.span(), format!("{key}.url: {e}")))?;
        let ca_file = match self.ca_file {
            None => None,
            Some(file) if !https => {
                return Err(src.error(
                    file.span(),
                    format!("{key}.ca_file: the URL is http://, which uses no certificate; use an https:// URL or remove ca_file"),
                ));
            }
            Some(file) => {
                let path = next_to_config(file.get_ref(), src);
                crate::tls::files::read_roots(&path)
                    .map_err(|e| src.error(file.span(), format!("{key}.ca_file: {e}")))?;
                Some(path)
            }
        };
        let timeout = match &self.timeout {
            None => DEFAULT_TIMEOUT,
            Some(t) => humantime::parse_duration(t.get_ref())
                .ok()
                .filter(|d| (Duration::from_millis(10)..=Duration::from_secs(300)).contains(d))
                .ok_or_else(|| {
                    src.error(
                        t.span(),
                        format!(
                            "{key}.timeout: {:?} is not a duration from 10ms to 300s, e.g. \"5s\"",
                            t.get_ref()
                        ),
                    )
                })?,
        };
        let bounded = |v: &Option<Spanned<i64>>, name: &str, max: i64, default: i64| {
            let Some(v) = v else { return Ok(default) };
            let n = *v.get_ref();
            if (0..=max).contains(&n) {
                Ok(n)
            } else {
                Err(src.error(
                    v.span(),
                    format!("{key}.{name}: {n} is not from 0 to {max}"),
                ))
            }
        };
        let retries = bounded(&self.retries, "retries", 10, i64::from(DEFAULT_RETRIES))? as u32;
        let queue = bounded(&self.queue, "queue", 65536, DEFAULT_QUEUE as i64)?.max(1) as usize;
        let (secret_file, secret) = match self.secret_file {
            None => (None, None),
            Some(file) => {
                let path = next_to_config(file.get_ref(), src);
                let secret = read_key(&path)
                    .map_err(|e| src.error(file.span(), format!("{key}.secret_file: {e}")))?;
                (Some(path), Some(secret))
            }
        };
        Ok(WebhookConfig {
            url: url.clone(),
            https,
            ca_file,
            host,
            port,
            path,
            authority,
            secret_file,
            secret,
            timeout,
            retries,
            queue,
        })
    }
}

/// What a URL is split into: https, host, port, path and authority.
pub(super) type UrlParts = (bool, String, u16, String, String);

/// Splits `http[s]://host[:port][/path]` into whether it is https, host,
/// port, path and authority.
pub(super) fn parse_url(url: &str) -> Result<UrlParts, String> {
    if url.len() > MAX_URL {
        return Err(format!("a URL is at most {MAX_URL} bytes"));
    }
    let (https, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        return Err(format!(
            "{url:?} is no http:// or https:// URL, e.g. \"https://alerts.example:9000/serialgate\""
        ));
    };
    if rest.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return Err("the URL holds spaces or control characters".into());
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.contains('@') {
        return Err("credentials in the URL are refused; use secret_file to sign".into());
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| "an IPv6 host needs its closing ']'".to_owned())?;
        (h, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("the URL has no host".into());
    }
    let port = match port {
        None if https => 443,
        None => 80,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("bad port {p:?}"))?,
    };
    Ok((
        https,
        host.to_owned(),
        port,
        path.to_owned(),
        authority.to_owned(),
    ))
}

/// Reads the signing secret like a token's: a private regular file, not a
/// link, its content trimmed.
fn read_key(path: &std::path::Path) -> Result<WebhookSecret, String> {
    use std::os::unix::fs::PermissionsExt;
    let (text, meta) = read_small_file(path, 4096, "secret_file")
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{} may be read or changed by other users than its owner (mode {mode:o}): chmod 600 {}",
            path.display(),
            path.display()
        ));
    }
    let secret = text.trim_ascii();
    if secret.is_empty() {
        return Err(format!(
            "{} is empty; put a long random secret in it",
            path.display()
        ));
    }
    Ok(WebhookSecret(Arc::from(secret)))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn urls_are_split_and_https_and_junk_refused() {
        assert_eq!(
            parse_url("http://127.0.0.1:9000/alerts?x=1").unwrap(),
            (
                false,
                "127.0.0.1".into(),
                9000,
                "/alerts?x=1".into(),
                "127.0.0.1:9000".into()
            )
        );
        assert_eq!(parse_url("http://[::1]/").unwrap().1, "::1");
        assert_eq!(parse_url("http://hooks.example").unwrap().2, 80);
        let https = parse_url("https://hooks.example/a").unwrap();
        assert!(https.0 && https.2 == 443, "{https:?}");
        for (bad, says) in [
            ("ftp://x/", "no http:// or https:// URL"),
            ("http://u:p@x/", "credentials"),
            ("http://x:0/", "bad port"),
            ("http://x:99999/", "bad port"),
            ("http:///a", "no host"),
            ("http://x/a b", "spaces"),
        ] {
            let e = parse_url(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_webhook_is_checked_where_it_is_written() {
        let c = parse(
            "[server]\nalert_webhook = { url = \"http://127.0.0.1:9/a\", timeout = \"250ms\", retries = 0, queue = 8 }\n",
        );
        let w = c.server.alert_webhook.clone().unwrap();
        assert_eq!(
            (w.port, w.timeout, w.retries, w.queue),
            (9, Duration::from_millis(250), 0, 8)
        );
        assert!(
            c.summary().to_string().contains(
                "alert_webhook: http://127.0.0.1:9/a (unsigned, timeout 250ms, 0 retries, queue 8)\n"
            ),
            "{}",
            c.summary()
        );
        let c = parse("[server]\nalert_webhook = { url = \"https://hooks.example/a\" }\n");
        assert!(
            c.summary().to_string().contains(
                "alert_webhook: https://hooks.example/a, trusting the system's roots (unsigned"
            ),
            "{}",
            c.summary()
        );
        assert_error(
            "[server]\nalert_webhook = { url = \"http://x/\", ca_file = \"ca.pem\" }\n",
            "2:48",
            &["server.alert_webhook.ca_file: the URL is http://"],
        );
        assert_error(
            "[server]\nalert_webhook = { url = \"https://x/\", ca_file = \"/nonexistent/ca.pem\" }\n",
            "2:49",
            &["server.alert_webhook.ca_file: cannot read /nonexistent/ca.pem"],
        );
        assert_error(
            "[server]\nalert_webhook = { url = \"http://x/\", timeout = \"forever\" }\n",
            "2:48",
            &["timeout: \"forever\" is not a duration"],
        );
        assert_error(
            "[server]\nalert_webhook = { url = \"http://x/\", retries = 99 }\n",
            "2:48",
            &["retries: 99 is not from 0 to 10"],
        );
        assert_error(
            "[server]\nalert_webhook = { url = \"http://x/\", secret_file = \"/nonexistent/k\" }\n",
            "2:52",
            &["secret_file: cannot read /nonexistent/k"],
        );
        assert_error(
            "[server]\nalert_webhook = { url = \"http://x/\", sekret = 1 }\n",
            "2:38",
            &["unknown field `sekret`"],
        );
    }
}
