//! Who may do what over HTTP: the `[server] auth` mode and what a token
//! may do; read from the file as they are and kept so.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How HTTP callers authenticate (`[server] auth`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// `Authorization: Bearer <secret>` of one of the `[[tokens]]` (default).
    #[default]
    Token,
    /// No authentication: every caller has full access. Only allowed on a
    /// loopback listen address, and only when said explicitly.
    None,
}

/// What a token may do (`access` of a `[[tokens]]` entry), weakest first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TokenAccess {
    /// Only scrape `/metrics`: no tool, console or web view.
    Metrics,
    /// Read output and status.
    Read,
    /// Also send to devices.
    Write,
    /// Also take over writers and change line settings.
    Admin,
}

impl TokenAccess {
    /// The level's name, as the config spells it (and the web view's
    /// pages and refusals show it).
    pub fn name(self) -> &'static str {
        match self {
            TokenAccess::Metrics => "metrics",
            TokenAccess::Read => "read",
            TokenAccess::Write => "write",
            TokenAccess::Admin => "admin",
        }
    }

    /// Of `total` places that callers of every access share (a door's
    /// connections, a port's session watches), how many the callers of
    /// this access and of every weaker one may hold together: half for
    /// read (and metrics), three quarters for write, all for admin. So
    /// callers of one access, however many, always leave room for those
    /// above them.
    pub fn share_of(self, total: usize) -> usize {
        match self {
            TokenAccess::Metrics | TokenAccess::Read => total / 2,
            TokenAccess::Write => total * 3 / 4,
            TokenAccess::Admin => total,
        }
    }
}
