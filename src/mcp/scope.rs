//! Which caller a request comes from and which session state it uses.
//!
//! Over stdio there is one client, the local operator: one [`GateServer`],
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
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use rmcp::model::Extensions;

use super::GateServer;
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
}

/// Detaches a session's connections when the last clone of its server
/// drops (an HTTP session ended, or a sessionless state expired).
pub(super) struct Release {
    gateway: Gateway,
    session: Session,
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
            runtime.spawn(async move {
                for name in names {
                    gateway.detach(&name).await;
                }
            });
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
    server: Arc<GateServer>,
    last_used: Instant,
}

impl Stateless {
    fn lock(&self) -> MutexGuard<'_, HashMap<(String, String), KeptServer>> {
        crate::sync::lock(&self.kept)
    }

    /// The server kept for `(token, client)`, made by `make` if there is
    /// none. Expired and evicted states are dropped (outside the lock).
    fn get_or_insert(
        &self,
        token: &str,
        client: &str,
        make: impl FnOnce() -> GateServer,
    ) -> Arc<GateServer> {
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
                k.server.clone()
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
                let server = Arc::new(make());
                kept.insert(
                    key,
                    KeptServer {
                        server: server.clone(),
                        last_used: now,
                    },
                );
                server
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

/// The server a call runs on: this one, or a kept sessionless state.
pub(super) enum Target<'a> {
    /// The server rmcp called.
    This(&'a GateServer),
    /// A sessionless client's kept state.
    Kept(Arc<GateServer>),
}

impl Deref for Target<'_> {
    type Target = GateServer;
    fn deref(&self) -> &GateServer {
        match self {
            Target::This(s) => s,
            Target::Kept(s) => s,
        }
    }
}

fn forbidden(message: impl Into<String>) -> GateError {
    GateError::new(ErrorCode::Forbidden, message)
}

/// The caller the HTTP auth middleware put into the request.
fn http_caller(extensions: &Extensions) -> Result<Arc<Caller>, GateError> {
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
fn client_key(extensions: &Extensions) -> Result<String, GateError> {
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

impl GateServer {
    /// A server for HTTP: rmcp's service factory clones it with
    /// [`GateServer::fresh`] for every MCP session and every sessionless
    /// request; `stateless` keeps the state of sessionless clients.
    pub fn for_http(gateway: Gateway, stateless: Stateless) -> GateServer {
        let mut server = GateServer::new(gateway);
        server.mode = Mode::Http {
            owner: Arc::new(OnceLock::new()),
            stateless,
        };
        server
    }

    /// A copy of this server with a session of its own (empty), released
    /// when the copy's last clone drops.
    pub fn fresh(&self) -> GateServer {
        self.fresh_with(match &self.mode {
            Mode::Http { stateless, .. } => Mode::Http {
                owner: Arc::new(OnceLock::new()),
                stateless: stateless.clone(),
            },
            other => other.clone(),
        })
    }

    fn fresh_with(&self, mode: Mode) -> GateServer {
        let session = Session::default();
        GateServer {
            gateway: self.gateway.clone(),
            session: session.clone(),
            tool_router: self.tool_router.clone(),
            mode,
            _release: Some(Arc::new(Release {
                gateway: self.gateway.clone(),
                session,
            })),
            client_gone: self.client_gone.clone(),
        }
    }

    /// Records the token that opens an MCP session (at `initialize`).
    pub(super) fn claim(&self, extensions: &Extensions) -> Result<(), GateError> {
        if let Mode::Http { owner, .. } = &self.mode {
            let caller = http_caller(extensions)?;
            let owner = owner.get_or_init(|| caller.name.clone());
            if *owner != caller.name {
                return Err(forbidden(format!(
                    "this MCP session belongs to token {owner:?}; open a session of your own"
                )));
            }
        }
        Ok(())
    }

    /// Who makes the request, and the server whose session it uses.
    pub(super) fn resolve(
        &self,
        extensions: &Extensions,
    ) -> Result<(Target<'_>, Arc<Caller>), GateError> {
        match &self.mode {
            Mode::Local => Ok((Target::This(self), Arc::new(Caller::operator()))),
            // Kept states are only ever reached through an `Http` server,
            // which checked the caller; never serve one directly.
            Mode::Kept => Err(forbidden(
                "this server state is reachable only through an authenticated HTTP request",
            )),
            Mode::Http { owner, stateless } => {
                let caller = http_caller(extensions)?;
                if let Some(owner) = owner.get() {
                    if *owner != caller.name {
                        return Err(forbidden(format!(
                            "this MCP session belongs to token {owner:?}, and the request carries token {:?}; open a session of your own",
                            caller.name
                        )));
                    }
                    return Ok((Target::This(self), caller));
                }
                let client = client_key(extensions)?;
                let kept =
                    stateless.get_or_insert(&caller.name, &client, || self.fresh_with(Mode::Kept));
                Ok((Target::Kept(kept), caller))
            }
        }
    }
}

/// The caller of a tool call, for a tool that decides at the moment it
/// acts (the `connect` tool's take-over, the ports its errors may name):
/// the local operator over stdio, else the HTTP request's token. A call
/// without one is refused (the server checked it before the tool ran).
pub(super) fn tool_caller(
    server: &GateServer,
    extensions: &Extensions,
) -> Result<Arc<Caller>, GateError> {
    if matches!(server.mode, Mode::Local) {
        return Ok(Arc::new(Caller::operator()));
    }
    extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Arc<Caller>>())
        .cloned()
        .ok_or_else(|| {
            GateError::new(
                ErrorCode::Forbidden,
                "the request carries no authenticated caller; send Authorization: Bearer <token>",
            )
        })
}
