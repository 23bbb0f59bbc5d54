//! What the web view's routes share: the gateway, the browser logins, the
//! sign-in throttle, shutdown and the connection share; and how a
//! WebSocket opened with a browser login keeps its caller current.

use axum::http::{HeaderMap, HeaderValue, header};
use tokio_util::sync::CancellationToken;

use super::browser_login::{BrowserLogins, COOKIE, login_id};
use crate::access::Caller;
use crate::access::standing::Standing;
use crate::daemon::http::throttle::Throttle;
use crate::gateway::Gateway;

/// What the web view's routes share.
#[derive(Clone)]
pub struct WebState {
    /// The ports, and the tokens in force.
    pub gateway: Gateway,
    /// Signed-in browsers.
    pub logins: BrowserLogins,
    /// `auth = "none"` on loopback: no sign-in, everyone is anonymous.
    pub open: bool,
    /// Failed secrets by source, shared with the bearer-token doors.
    pub throttle: Throttle,
    /// Ends the live WebSockets at shutdown.
    pub cancel: CancellationToken,
    /// The listener speaks TLS: answers carry `Strict-Transport-Security`
    /// and the login cookie is `Secure`.
    pub tls: bool,
}

impl WebState {
    /// How a caller of the web view is re-checked while its connection
    /// (a ports feed, a download) is open: without auth, never; with a
    /// browser login's cookie, against that login; else by its bearer
    /// token's name at every reload.
    pub fn standing(&self, caller: &Caller, headers: &HeaderMap) -> Standing {
        if self.open {
            return Standing::fixed(caller.clone(), &self.gateway);
        }
        login_standing(&self.logins, &self.gateway, caller.clone(), headers)
            .unwrap_or_else(|| Standing::token(caller.clone(), &self.gateway))
    }
}

/// The standing of a caller who came with a browser login's cookie in
/// `headers`: re-checked at every reload, whenever a login ends and at
/// the login's absolute expiry, by
/// asking `logins` for the same login again. `None` when `headers` name
/// no login.
pub fn login_standing(
    logins: &BrowserLogins,
    gateway: &Gateway,
    caller: Caller,
    headers: &HeaderMap,
) -> Option<Standing> {
    let id = login_id(headers)?;
    let cookie = HeaderValue::from_str(&format!("{COOKIE}={id}")).ok()?;
    let again = logins.clone();
    let mut only_cookie = HeaderMap::new();
    only_cookie.insert(header::COOKIE, cookie);
    let expires = logins.expires_at(&only_cookie);
    Some(Standing::login(
        caller,
        gateway,
        logins.watch_ended(),
        Box::new(move |gateway| again.caller(&only_cookie, gateway)),
        expires,
    ))
}
