//! What the web view's routes share: the gateway, the browser logins, the
//! sign-in throttle, shutdown and the connection share.

use tokio_util::sync::CancellationToken;

use super::browser_login::BrowserLogins;
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
    /// Connections one token may hold (the listener's share).
    pub max_connections_per_token: usize,
}
