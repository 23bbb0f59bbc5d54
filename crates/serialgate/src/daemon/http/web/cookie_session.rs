//! The web view's sign-in sessions, kept on the server: a browser holds
//! only a random session id in an `HttpOnly`, `SameSite=Strict` cookie,
//! never the token. The store maps the id's SHA-256 digest (so a lookup's
//! timing says nothing about ids) to the token's name and its secret's
//! digest; every request resolves the token again from the config in
//! force, so a token removed or given a new secret by a reload ends its
//! browser sessions at once.
//!
//! Bounded: at most [`MAX_SESSIONS`]; a sign-in beyond that evicts the
//! session idle longest. A session ends after [`IDLE_EXPIRY`] without a
//! request, [`ABSOLUTE_EXPIRY`] after sign-in, or at sign-out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, header};
use sha2::Digest;
use subtle::ConstantTimeEq;

use crate::config::TokenConfig;
use crate::gateway::Gateway;
use crate::mcp::access::Caller;

/// The cookie's name.
pub const COOKIE: &str = "serialgate_session";
/// Browser sessions kept at once (each is a few dozen bytes).
pub const MAX_SESSIONS: usize = 256;
/// A session unused this long ends.
pub const IDLE_EXPIRY: Duration = Duration::from_secs(8 * 3600);
/// A session ends this long after its sign-in, used or not.
pub const ABSOLUTE_EXPIRY: Duration = Duration::from_secs(24 * 3600);
/// Length of a session id in the cookie: 32 random bytes, hex.
const ID_CHARS: usize = 64;

/// One signed-in browser.
struct Entry {
    /// The token's name in `[[tokens]]`.
    token: String,
    /// The token's secret digest at sign-in: a new secret ends the session.
    secret: [u8; 32],
    signed_in: Instant,
    last_seen: Instant,
}

/// The sessions of the web view, shared by its routes and by the console
/// WebSocket's authentication. A cheap clonable handle.
#[derive(Clone, Default)]
pub struct WebSessions {
    entries: Arc<Mutex<HashMap<[u8; 32], Entry>>>,
}

fn digest(id: &str) -> [u8; 32] {
    sha2::Sha256::digest(id.as_bytes()).into()
}

impl WebSessions {
    /// Starts a session for `token`; returns the id for the cookie, or
    /// `None` when the OS has no randomness to give (nothing is stored).
    pub fn create(&self, token: &TokenConfig) -> Option<String> {
        let mut raw = [0u8; 32];
        getrandom::fill(&mut raw).ok()?;
        let id: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        let now = Instant::now();
        let mut entries = crate::sync::lock(&self.entries);
        entries.retain(|_, e| !expired(e, now));
        if entries.len() >= MAX_SESSIONS
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, e)| e.last_seen)
                .map(|(k, _)| *k)
        {
            entries.remove(&oldest);
            tracing::info!("web sessions: {MAX_SESSIONS} open, the one idle longest was ended");
        }
        entries.insert(
            digest(&id),
            Entry {
                token: token.name.clone(),
                secret: *token.secret.digest(),
                signed_in: now,
                last_seen: now,
            },
        );
        Some(id)
    }

    /// The caller a request's session cookie stands for, if it names a
    /// live session whose token is still configured with the same secret.
    /// A session found dead is removed.
    pub fn caller(&self, headers: &HeaderMap, gateway: &Gateway) -> Option<Caller> {
        let id = session_id(headers)?;
        let key = digest(id);
        let now = Instant::now();
        let mut entries = crate::sync::lock(&self.entries);
        let entry = entries.get_mut(&key)?;
        let config = gateway.config();
        let token = config.tokens.iter().find(|t| t.name == entry.token);
        let valid = !expired(entry, now)
            && token.is_some_and(|t| bool::from(t.secret.digest()[..].ct_eq(&entry.secret[..])));
        if !valid {
            entries.remove(&key);
            return None;
        }
        entry.last_seen = now;
        token.map(Caller::from_token)
    }

    /// Ends the session a request's cookie names (sign-out).
    pub fn end(&self, headers: &HeaderMap) {
        if let Some(id) = session_id(headers) {
            crate::sync::lock(&self.entries).remove(&digest(id));
        }
    }
}

fn expired(entry: &Entry, now: Instant) -> bool {
    now.duration_since(entry.last_seen) > IDLE_EXPIRY
        || now.duration_since(entry.signed_in) > ABSOLUTE_EXPIRY
}

/// The session id in a request's `Cookie` headers: the value of
/// [`COOKIE`], if it has the shape of an id (anything else is ignored
/// before the store is looked at).
pub fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
        .filter(|v| v.len() == ID_CHARS && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The `Set-Cookie` value that gives a browser its session. No `Secure`:
/// the daemon serves plain HTTP (TLS, if any, is a proxy's; see the
/// README's security notes).
pub fn set_cookie(id: &str) -> String {
    format!(
        "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
        ABSOLUTE_EXPIRY.as_secs()
    )
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn only_a_well_formed_id_is_read_from_the_cookie() {
        let mut h = HeaderMap::new();
        assert_eq!(session_id(&h), None);
        let id = "a".repeat(ID_CHARS);
        h.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("theme=dark; {COOKIE}={id}")).unwrap(),
        );
        assert_eq!(session_id(&h), Some(id.as_str()));
        for bad in [
            format!("{COOKIE}=short"),
            format!("{COOKIE}={}", "g".repeat(ID_CHARS)),
            format!("{COOKIE}={}", "a".repeat(ID_CHARS + 1)),
            format!("x{COOKIE}={id}"),
        ] {
            h.insert(header::COOKIE, HeaderValue::from_str(&bad).unwrap());
            assert_eq!(session_id(&h), None, "{bad}");
        }
    }

    #[test]
    fn sessions_expire_idle_and_absolutely() {
        let now = Instant::now();
        let entry = |signed_in_ago: Duration, idle: Duration| Entry {
            token: "noc".into(),
            secret: [0; 32],
            signed_in: now.checked_sub(signed_in_ago).unwrap_or(now),
            last_seen: now.checked_sub(idle).unwrap_or(now),
        };
        let minute = Duration::from_secs(60);
        assert!(!expired(&entry(minute, minute), now));
        assert!(expired(
            &entry(IDLE_EXPIRY + minute, IDLE_EXPIRY + minute),
            now
        ));
        assert!(expired(&entry(ABSOLUTE_EXPIRY + minute, minute), now));
    }

    #[test]
    fn the_cookie_is_http_only_and_strict() {
        let c = set_cookie("ab");
        assert!(
            c.contains("HttpOnly") && c.contains("SameSite=Strict"),
            "{c}"
        );
        assert!(clear_cookie().contains("Max-Age=0"));
    }
}
