//! Which caller a request comes from and which session state it uses.
//!
//! Over stdio there is one client, the local operator: one `GateServer`,
//! one [`Session`], full access.
//!
//! Over streamable HTTP (see [`crate::daemon::http`]) the caller is the bearer token
//! the auth middleware found, carried in the request's extensions. Session
//! state — connections, consume cursors, remembered outputs — is kept in
//! one of two ways, depending on the protocol the client speaks:
//!
//! - **Clients with MCP sessions** (protocol versions before `2026-07-28`:
//!   `initialize`, then `Mcp-Session-Id`): rmcp makes one `GateServer` per
//!   session; it keeps its own `Session` for the session's lifetime. The
//!   session belongs to the token that initialized it: a request with
//!   another token in it is `forbidden`. When the session ends (DELETE, idle
//!   timeout, shutdown) its connections are detached.
//! - **Sessionless clients** (`2026-07-28`, SEP-2567: every request stands
//!   alone and rmcp serves each with a fresh `GateServer`): the state is
//!   kept here, in [`Stateless`], by the token's name plus the optional
//!   `Serialgate-Session` request header the client sends. An agent that
//!   has a token of its own needs nothing more; agents sharing a token keep
//!   separate cursors by sending distinct `Serialgate-Session` values (else
//!   they share one state). Kept states expire after [`STATELESS_IDLE`]
//!   without a request, and a token keeps at most [`STATELESS_PER_TOKEN`]
//!   (the least recently used goes first); an expired state's connections
//!   are detached.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use rmcp::model::Extensions;

use super::session::Session;
use crate::access::Caller;
use crate::error::{ErrorCode, GateError};
use crate::gateway::Gateway;

/// The request header that names a sessionless client's state.
pub const SESSION_HEADER: &str = "serialgate-session";
/// How long a sessionless client's state is kept without a request.
pub const STATELESS_IDLE: Duration = Duration::from_secs(60 * 60);
/// How many sessionless states one token keeps.
pub const STATELESS_PER_TOKEN: usize = 64;
/// Longest `Serialgate-Session` value.
const MAX_CLIENT_KEY: usize = 128;

/// How callers reach a server, which decides who they are and which
/// session state a call uses.
#[derive(Clone)]
pub(super) enum Mode {
    /// stdio: the local operator, this server's own session.
    Local,
    /// A server rmcp made for HTTP: for a client with an MCP session, its
    /// `owner` is the token that initialized it; sessionless requests are
    /// served from `stateless`.
    Http {
        owner: Arc<OnceLock<String>>,
        stateless: Stateless,
    },
    /// A sessionless client's state, kept in [`Stateless`].
    Kept,
    /// A session at a site for calls forwarded through the fleet
    /// (`mcp/fleet_site.rs`): one caller, named after the token and the
    /// serving gateway it came through, which that gateway authorised.
    Fleet(Arc<Caller>),
}

/// Detaches a session's connections when the last clone of its server
/// drops (an HTTP session ended, or a sessionless state expired).
pub(super) struct Release {
    /// The gateway the connections are detached from.
    pub(super) gateway: Gateway,
    /// The session whose connections they are.
    pub(super) session: Session,
}

impl Drop for Release {
    fn drop(&mut self) {
        let names: Vec<String> = self.session.all().into_iter().map(|c| c.name).collect();
        if names.is_empty() {
            return;
        }
        for name in &names {
            self.session.remove(name);
        }
        let gateway = self.gateway.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(crate::task::boxed(async move {
                for name in names {
                    gateway.detach(&name).await;
                }
            }));
        }
    }
}

/// The states of sessionless HTTP clients, by token name and
/// `Serialgate-Session` value. A cheap clonable handle.
#[derive(Clone, Default)]
pub struct Stateless {
    kept: Arc<Mutex<HashMap<(String, String), KeptServer>>>,
}

struct KeptServer {
    /// The state, released when the last server using it drops.
    state: Arc<Release>,
    last_used: Instant,
}

impl Stateless {
    fn lock(&self) -> MutexGuard<'_, HashMap<(String, String), KeptServer>> {
        crate::sync::lock(&self.kept)
    }

    /// The state kept for `(token, client)`, made by `make` if there is
    /// none. Expired and evicted states are dropped (outside the lock).
    pub(super) fn get_or_insert(
        &self,
        token: &str,
        client: &str,
        make: impl FnOnce() -> Arc<Release>,
    ) -> Arc<Release> {
        let now = Instant::now();
        let mut dropped = Vec::new();
        let server = {
            let mut kept = self.lock();
            let expired: Vec<(String, String)> = kept
                .iter()
                .filter(|(_, k)| now.duration_since(k.last_used) > STATELESS_IDLE)
                .map(|(key, _)| key.clone())
                .collect();
            dropped.extend(expired.iter().filter_map(|key| kept.remove(key)));
            let key = (token.to_owned(), client.to_owned());
            if let Some(k) = kept.get_mut(&key) {
                k.last_used = now;
                k.state.clone()
            } else {
                let mine: Vec<(&(String, String), Instant)> = kept
                    .iter()
                    .filter(|((t, _), _)| t == token)
                    .map(|(key, k)| (key, k.last_used))
                    .collect();
                if mine.len() >= STATELESS_PER_TOKEN
                    && let Some(oldest) = mine
                        .iter()
                        .min_by_key(|(_, used)| *used)
                        .map(|(key, _)| (*key).clone())
                {
                    tracing::info!(
                        "token {token:?} has {} sessionless states; dropping the least recently used ({:?})",
                        mine.len(),
                        oldest.1
                    );
                    dropped.extend(kept.remove(&oldest));
                }
                let state = make();
                kept.insert(
                    key,
                    KeptServer {
                        state: state.clone(),
                        last_used: now,
                    },
                );
                state
            }
        };
        drop(dropped);
        server
    }

    /// Forgets every state (shutdown); their connections are detached.
    pub fn clear(&self) {
        let all: Vec<KeptServer> = self.lock().drain().map(|(_, k)| k).collect();
        drop(all);
    }
}

pub(super) fn forbidden(message: impl Into<String>) -> GateError {
    GateError::new(ErrorCode::Forbidden, message)
}

/// The caller the HTTP auth middleware put into the request.
pub(super) fn http_caller(extensions: &Extensions) -> Result<Arc<Caller>, GateError> {
    extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Arc<Caller>>())
        .cloned()
        .ok_or_else(|| {
            forbidden(
                "the request carries no authenticated caller; send Authorization: Bearer <token>",
            )
        })
}

/// A sessionless client's `Serialgate-Session` value ("" when absent).
pub(super) fn client_key(extensions: &Extensions) -> Result<String, GateError> {
    let Some(value) = extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.headers.get(SESSION_HEADER))
    else {
        return Ok(String::new());
    };
    match value.to_str() {
        Ok(v)
            if !v.is_empty()
                && v.len() <= MAX_CLIENT_KEY
                && v.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            Ok(v.to_owned())
        }
        _ => Err(GateError::invalid(format!(
            "the Serialgate-Session header must be 1 to {MAX_CLIENT_KEY} visible ASCII characters (no spaces), e.g. agent-1"
        ))),
    }
}
