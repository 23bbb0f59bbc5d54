//! One MCP session's server: the shared gateway, this session's state, and
//! who may call it. Which caller a request comes from and which session
//! state it uses is decided here, by the rules [`super::scope`] describes.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::Extensions;

use super::scope::{Mode, Release, client_key, forbidden, http_caller};
use super::session::Session;
use crate::access::Caller;
use crate::error::{ErrorCode, GateError};
use crate::gateway::Gateway;

/// One MCP session's server: the shared gateway plus this session's
/// connections and cursors. stdio has one; HTTP makes one per session.
#[derive(Clone)]
pub struct GateServer {
    pub(super) gateway: Gateway,
    pub(super) session: Session,
    pub(super) tool_router: ToolRouter<GateServer>,
    /// stdio or HTTP: who calls, and which session state a call uses.
    pub(super) mode: Mode,
    /// Detaches this session's connections when the last clone drops
    /// (HTTP sessions; stdio detaches explicitly).
    pub(super) _release: Option<Arc<Release>>,
    /// Cancelled when the client is gone (stdio: stdin closed), so that
    /// its waiting calls end at once; never cancelled over HTTP.
    pub(super) client_gone: tokio_util::sync::CancellationToken,
    /// The fleet, when this gateway serves it: ports named `site/port`
    /// are forwarded there (`mcp/fleet_forward.rs`).
    pub(super) fleet: Option<Arc<crate::fleet::link::Fleet>>,
}

impl GateServer {
    /// The caller over stdio: the local operator, under `[server] policy`
    /// of the config in force.
    pub(super) fn local_caller(&self) -> Caller {
        Caller::operator().with_policy(self.gateway.config().server.policy.clone())
    }

    /// A stdio server for a new session on `gateway` with the tools of
    /// `tool_router`.
    pub(super) fn with_router(gateway: Gateway, tool_router: ToolRouter<GateServer>) -> GateServer {
        GateServer {
            gateway,
            session: Session::default(),
            tool_router,
            mode: Mode::Local,
            _release: None,
            client_gone: tokio_util::sync::CancellationToken::new(),
            fleet: None,
        }
    }

    /// The same server, forwarding calls on `site/port` names through
    /// `fleet` when it serves the fleet.
    pub fn with_fleet(mut self, fleet: Option<crate::fleet::link::Fleet>) -> GateServer {
        self.fleet = fleet.filter(|f| f.directory.is_some()).map(Arc::new);
        self
    }

    /// The same server, whose waiting calls end when `gone` is cancelled
    /// (stdio: the client closed its end).
    pub fn with_client_gone(mut self, gone: tokio_util::sync::CancellationToken) -> GateServer {
        self.client_gone = gone;
        self
    }

    /// Detaches every connection of this session (at its end).
    pub async fn detach_all(&self) {
        for conn in self.session.all() {
            self.session.remove(&conn.name);
            self.gateway.detach(&conn.name).await;
        }
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

    /// A copy of this server in `mode`, with a session of its own.
    pub(super) fn fresh_with(&self, mode: Mode) -> GateServer {
        self.with_state(
            mode,
            Arc::new(Release {
                gateway: self.gateway.clone(),
                session: Session::default(),
            }),
        )
    }

    /// A copy of this server on `state`'s session, which is released when
    /// the last server using it drops.
    fn with_state(&self, mode: Mode, state: Arc<Release>) -> GateServer {
        GateServer {
            gateway: self.gateway.clone(),
            session: state.session.clone(),
            tool_router: self.tool_router.clone(),
            mode,
            _release: Some(state),
            client_gone: self.client_gone.clone(),
            fleet: self.fleet.clone(),
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
            Mode::Local => Ok((Target::This(self), Arc::new(self.local_caller()))),
            Mode::Fleet(caller) => Ok((Target::This(self), caller.clone())),
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
                let state = stateless.get_or_insert(&caller.name, &client, || {
                    Arc::new(Release {
                        gateway: self.gateway.clone(),
                        session: Session::default(),
                    })
                });
                Ok((Target::Kept(self.with_state(Mode::Kept, state)), caller))
            }
        }
    }
}

/// The server a call runs on: this one, or a kept sessionless state.
pub(super) enum Target<'a> {
    /// The server rmcp called.
    This(&'a GateServer),
    /// A server on a sessionless client's kept state.
    Kept(GateServer),
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

/// The caller of a tool call, for a tool that decides at the moment it
/// acts (the `connect` tool's take-over, the ports its errors may name):
/// the local operator over stdio, else the HTTP request's token. A call
/// without one is refused (the server checked it before the tool ran).
pub(super) fn tool_caller(
    server: &GateServer,
    extensions: &Extensions,
) -> Result<Arc<Caller>, GateError> {
    if matches!(server.mode, Mode::Local) {
        return Ok(Arc::new(server.local_caller()));
    }
    if let Mode::Fleet(caller) = &server.mode {
        return Ok(caller.clone());
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
