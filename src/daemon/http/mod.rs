//! MCP over streamable HTTP, at `/mcp`, behind bearer-token authentication.
//!
//! `serialgate serve --http ADDR` (or `[server] listen = "ADDR"`) serves
//! rmcp's [`StreamableHttpService`] nested under axum at `/mcp`; stdio is
//! not served then. Every MCP session gets its own [`GateServer`], all
//! sharing one [`Gateway`].
//!
//! # Authentication
//!
//! Each request must carry `Authorization: Bearer <secret>`, the secret of
//! one of the `[[tokens]]` (its `secret_file`'s content, trimmed). The
//! presented secret is hashed (SHA-256) and compared in constant time
//! with the digest of *every* token, without stopping at a match, so the
//! time taken says nothing about which token (or how much of one) matched.
//! A missing or wrong token gets `401 Unauthorized` with
//! `WWW-Authenticate: Bearer`. A known token becomes a [`Caller`] in the
//! request's extensions (the `Authorization` header itself is removed),
//! which the MCP layer checks against the tool and port of every call
//! (see [`crate::mcp::access`]). Tokens are read from the config in force
//! at each request. An MCP session belongs to the token that opened it: a
//! request with another token into it (a call, its SSE stream, a DELETE)
//! gets `403`.
//!
//! The rule of DESIGN §6: a non-loopback address requires tokens; a
//! loopback address without tokens requires an explicit `auth = "none"`
//! (then every caller has full access, and only loopback `Host` headers are
//! accepted, against DNS rebinding); `auth = "none"` on a non-loopback
//! address is refused. The rule is checked against the configured address
//! and again against the address actually bound.
//!
//! # Session state
//!
//! Clients that speak MCP sessions (`Mcp-Session-Id`, protocol versions
//! before `2026-07-28`) keep their connections and consume cursors for the
//! session's lifetime (idle sessions end after [`SESSION_IDLE`]).
//! `2026-07-28` clients are sessionless (SEP-2567): rmcp serves each of
//! their requests statelessly, so their state is kept by token name plus the
//! optional `Serialgate-Session` header — see [`crate::mcp::scope`].
//!
//! # Reload and shutdown
//!
//! SIGHUP reloads the config as over stdio ([`crate::daemon::lifecycle::Reloader`]);
//! tokens follow at once (they are read per request). What the bound
//! listener fixes cannot change without a restart: a new config whose
//! `auth` differs, or whose tokens would break the exposure rule for the
//! bound address, is rejected; a changed `listen` is logged and takes
//! effect at the next start.
//!
//! On SIGTERM the ports close first, so a call waiting on one ends with an
//! error result; the responses still being written (every request but the
//! GET of a session's standing SSE stream is counted while its body is
//! sent) get up to [`SHUTDOWN_GRACE`] to reach their clients before the
//! sessions end.

pub mod listener;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, HttpBody};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::Digest;
use subtle::{ConditionallySelectable, ConstantTimeEq};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::{self, AuthMode, Config, TokenConfig};
use crate::daemon::lifecycle::{Reloader, Signals, until_terminated};
use crate::gateway::Gateway;
use crate::mcp::GateServer;
use crate::mcp::access::Caller;
use crate::mcp::scope::Stateless;
use listener::{Admission, ListenerLimits};

/// How long an MCP session may stay idle before the server ends it (its
/// connections are then detached). Agents think between calls; a short
/// timeout would lose their cursors.
pub const SESSION_IDLE: Duration = Duration::from_secs(60 * 60);
/// The header that carries an MCP session's id.
const SESSION_ID: &str = "mcp-session-id";
/// How long shutdown waits for the responses still being written, and
/// then for the HTTP connections, to finish.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Buffer between a counted response's body and the connection.
const RELAY_BUFFER: usize = 64 * 1024;

/// Who may call: nobody without a token, or (loopback, said explicitly)
/// everybody.
#[derive(Clone)]
enum Auth {
    /// Bearer tokens from the config in force.
    Tokens(Gateway),
    /// `auth = "none"` on loopback: every caller has full access.
    None,
}

/// Why a request was refused (logged; the client gets a 401).
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    /// No `Authorization: Bearer` header.
    Missing,
    /// An `Authorization` header of another scheme or shape.
    Malformed,
    /// A bearer token that is none of the configured ones.
    Unknown,
}

/// The token whose secret is `presented`, found in constant time: every
/// token's digest is compared, and the loop never stops early.
fn find_token<'a>(tokens: &'a [TokenConfig], presented: &[u8]) -> Option<&'a TokenConfig> {
    let digest: [u8; 32] = sha2::Sha256::digest(presented).into();
    let mut found = u64::MAX;
    for (i, token) in tokens.iter().enumerate() {
        let equal = token.secret.digest()[..].ct_eq(&digest[..]);
        found.conditional_assign(&(i as u64), equal);
    }
    usize::try_from(found).ok().and_then(|i| tokens.get(i))
}

/// The bearer token of an `Authorization` header.
fn bearer(headers: &HeaderMap) -> Result<&[u8], Refusal> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or(Refusal::Missing)?
        .as_bytes();
    let space = value
        .iter()
        .position(|&b| b == b' ')
        .ok_or(Refusal::Malformed)?;
    let (scheme, rest) = value.split_at(space);
    let token = rest.trim_ascii();
    if !scheme.eq_ignore_ascii_case(b"bearer") || token.is_empty() {
        return Err(Refusal::Malformed);
    }
    Ok(token)
}

impl Auth {
    fn check(&self, headers: &HeaderMap) -> Result<Caller, Refusal> {
        match self {
            Auth::None => Ok(Caller::anonymous()),
            Auth::Tokens(gateway) => {
                let presented = bearer(headers)?;
                let config = gateway.config();
                find_token(&config.tokens, presented)
                    .map(Caller::from_token)
                    .ok_or(Refusal::Unknown)
            }
        }
    }
}

fn unauthorized(refusal: &Refusal) -> Response {
    let (challenge, text) = match refusal {
        Refusal::Missing => (
            r#"Bearer realm="serialgate""#,
            "unauthorized: send Authorization: Bearer <secret of one of the server's [[tokens]]>\n",
        ),
        Refusal::Malformed => (
            r#"Bearer realm="serialgate", error="invalid_request""#,
            "unauthorized: the Authorization header must be Bearer <secret>\n",
        ),
        Refusal::Unknown => (
            r#"Bearer realm="serialgate", error="invalid_token""#,
            "unauthorized: the bearer token is not one of the server's [[tokens]]\n",
        ),
    };
    (
        StatusCode::UNAUTHORIZED,
        [(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        )],
        text,
    )
        .into_response()
}

/// Most MCP sessions one token keeps open; opening one more ends the
/// token's least recently used session.
pub const SESSIONS_PER_TOKEN: usize = 32;
/// Most MCP sessions open at once, all tokens together; beyond it the
/// least recently used session of any token ends.
pub const MAX_SESSIONS: usize = 512;

/// Which token opened each MCP session (`Mcp-Session-Id`), so that no other
/// token can use, listen to or end it, and how many each token has open.
/// Entries not seen for [`SESSION_IDLE`] are forgotten (rmcp ends such
/// sessions too).
#[derive(Clone, Default)]
struct SessionOwners {
    owners: Arc<Mutex<HashMap<String, (String, Instant)>>>,
}

impl SessionOwners {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, (String, Instant)>> {
        self.owners.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `caller` may use session `id` (an unknown id: rmcp decides).
    fn allows(&self, id: &str, caller: &str) -> bool {
        let mut owners = self.lock();
        match owners.get_mut(id) {
            Some((owner, seen)) if owner == caller => {
                *seen = Instant::now();
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    /// Records a session `caller` opened; returns the sessions to end so
    /// that the caller keeps at most `per_token` and everyone at most
    /// `total`, least recently used first.
    fn opened(&self, id: &str, caller: &str, per_token: usize, total: usize) -> Vec<String> {
        let now = Instant::now();
        let mut owners = self.lock();
        owners.retain(|_, (_, seen)| now.duration_since(*seen) <= SESSION_IDLE);
        owners.insert(id.to_owned(), (caller.to_owned(), now));
        let mut ended = Vec::new();
        let end_oldest = |owners: &mut HashMap<String, (String, Instant)>, mine: bool| {
            let oldest = owners
                .iter()
                .filter(|(other, (owner, _))| other.as_str() != id && (!mine || owner == caller))
                .min_by_key(|(_, (_, seen))| *seen)
                .map(|(other, _)| other.clone());
            if let Some(oldest) = &oldest {
                owners.remove(oldest);
            }
            oldest
        };
        while owners.values().filter(|(owner, _)| owner == caller).count() > per_token {
            match end_oldest(&mut owners, true) {
                Some(oldest) => ended.push(oldest),
                None => break,
            }
        }
        while owners.len() > total {
            match end_oldest(&mut owners, false) {
                Some(oldest) => ended.push(oldest),
                None => break,
            }
        }
        ended
    }

    fn closed(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// The state of the authentication middleware.
#[derive(Clone)]
struct Gatekeeper {
    auth: Auth,
    owners: SessionOwners,
    in_flight: InFlight,
    /// rmcp's sessions, to cancel a call whose connection closed.
    sessions: Arc<LocalSessionManager>,
    /// Largest request body rmcp accepts (a body is read here first).
    max_body: usize,
    /// Connections one token may hold ([`ListenerLimits::max_per_token`]).
    max_connections_per_token: usize,
}

/// A tool call in an MCP session, by the session and the JSON-RPC id: what
/// to cancel when its HTTP connection closes before the result is written
/// (rmcp would let the call run to its end, up to a 600 s wait, for a
/// client that is gone).
struct CallInFlight {
    sessions: Arc<LocalSessionManager>,
    session: String,
    request_id: serde_json::Value,
}

impl CallInFlight {
    /// The call a request body makes, if it is one `tools/call` request
    /// in session `session`.
    fn of(sessions: &Arc<LocalSessionManager>, session: &str, body: &[u8]) -> Option<CallInFlight> {
        let message: serde_json::Value = serde_json::from_slice(body).ok()?;
        if message.get("method")?.as_str()? != "tools/call" {
            return None;
        }
        Some(CallInFlight {
            sessions: sessions.clone(),
            session: session.to_owned(),
            request_id: message.get("id")?.clone(),
        })
    }

    /// Cancels the call the way a client would
    /// (`notifications/cancelled`): its waits end at once.
    async fn cancel(self) {
        use rmcp::transport::streamable_http_server::session::SessionManager;
        let note = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {
                "requestId": self.request_id,
                "reason": "the HTTP connection closed before the result was written"
            }
        });
        match serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(note) {
            Ok(message) => {
                tracing::info!(
                    "session {}: the connection of call {} closed; cancelling it",
                    self.session,
                    self.request_id
                );
                let id: Arc<str> = self.session.as_str().into();
                if let Err(e) = self.sessions.accept_message(&id, message).await {
                    tracing::debug!("cancelling call {}: {e}", self.request_id);
                }
            }
            Err(e) => tracing::debug!("cancelling call {}: {e}", self.request_id),
        }
    }
}

/// A response body that says when hyper drops it before its end: the
/// connection closed under it.
struct WatchedBody {
    inner: Body,
    closed: CancellationToken,
    ended: bool,
}

impl HttpBody for WatchedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let poll = Pin::new(&mut self.inner).poll_frame(cx);
        if let std::task::Poll::Ready(None) = &poll {
            self.ended = true;
        }
        poll
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for WatchedBody {
    fn drop(&mut self) {
        if !self.ended {
            self.closed.cancel();
        }
    }
}

/// The requests whose responses are still being written. A GET (a
/// session's standing SSE stream, open until the session ends) is not
/// counted.
#[derive(Clone)]
struct InFlight {
    count: Arc<watch::Sender<usize>>,
    /// Set when shutdown begins: a request that arrives after it is
    /// refused at once instead of reaching a session about to be cancelled
    /// (which would leave its connection open until the grace ran out).
    refusing: Arc<AtomicBool>,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight {
            count: Arc::new(watch::Sender::new(0)),
            refusing: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// Counts one request until dropped.
struct InFlightGuard(InFlight);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.count.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl InFlight {
    /// Counts a request; `None` once shutdown began. Counted first, then
    /// checked: a request that passes is one [`drained`](Self::drained)
    /// waits for.
    fn start(&self) -> Option<InFlightGuard> {
        self.count.send_modify(|n| *n += 1);
        let guard = InFlightGuard(self.clone());
        (!self.refusing.load(Ordering::SeqCst)).then_some(guard)
    }

    /// Refuses new requests from now on, then waits until no counted
    /// response is being written, at most `within`; returns how many still
    /// are.
    async fn drained(&self, within: Duration) -> usize {
        self.refusing.store(true, Ordering::SeqCst);
        let mut rx = self.count.subscribe();
        let _ = tokio::time::timeout(within, rx.wait_for(|n| *n == 0)).await;
        *self.count.borrow()
    }

    /// `response` with its body relayed by a task that holds `guard` until
    /// the whole body has been handed to the connection (or the client went
    /// away): the count then says when every response has been written.
    /// A `call` whose connection closes first is cancelled.
    fn track(response: Response, guard: InFlightGuard, call: Option<CallInFlight>) -> Response {
        let (parts, mut body) = response.into_parts();
        let (reader, mut writer) = tokio::io::duplex(RELAY_BUFFER);
        let closed = CancellationToken::new();
        let connection_closed = closed.clone();
        tokio::spawn(async move {
            let _guard = guard;
            loop {
                let frame = tokio::select! {
                    frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)) => frame,
                    () = connection_closed.cancelled() => {
                        if let Some(call) = call {
                            call.cancel().await;
                        }
                        break;
                    }
                };
                match frame {
                    None => break,
                    Some(Err(e)) => {
                        tracing::debug!("HTTP response body failed: {e}");
                        break;
                    }
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data()
                            && writer.write_all(&data).await.is_err()
                        {
                            break; // the client went away
                        }
                    }
                }
            }
            let _ = writer.shutdown().await;
        });
        let body = Body::new(WatchedBody {
            inner: Body::from_stream(tokio_util::io::ReaderStream::new(reader)),
            closed,
            ended: false,
        });
        Response::from_parts(parts, body)
    }
}

/// The middleware in front of `/mcp`: 401 without a known token; 403 for a
/// request into an MCP session another token opened; else the caller goes
/// into the request's extensions (rmcp hands the request's
/// `http::request::Parts` to the MCP handlers).
async fn authenticate(
    State(gate): State<Gatekeeper>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut request: Request,
    next: Next,
) -> Response {
    let caller = match gate.auth.check(request.headers()) {
        Ok(caller) => caller,
        Err(refusal) => {
            tracing::warn!(
                "{peer}: refused {} {}: {refusal:?} bearer token",
                request.method(),
                request.uri()
            );
            return unauthorized(&refusal);
        }
    };
    if let Some(admission) = request.extensions().get::<Admission>()
        && !admission.authenticated(&caller.name, gate.max_connections_per_token)
    {
        tracing::warn!(
            "{peer}: refused {} {}: token {:?} already holds {} connections",
            request.method(),
            request.uri(),
            caller.name,
            gate.max_connections_per_token
        );
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::CONNECTION, HeaderValue::from_static("close"))],
            format!(
                "too many connections: this token holds {} already; reuse them (HTTP keep-alive) or close some\n",
                gate.max_connections_per_token
            ),
        )
            .into_response();
    }
    tracing::debug!(
        "{peer}: {} {} as {:?}",
        request.method(),
        request.uri(),
        caller.name
    );
    let session = request
        .headers()
        .get(SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session
        && !gate.owners.allows(id, &caller.name)
    {
        tracing::warn!(
            "{peer}: refused {} {}: token {:?} used an MCP session another token opened",
            request.method(),
            request.uri(),
            caller.name
        );
        return (
            StatusCode::FORBIDDEN,
            "forbidden: this MCP session belongs to another token; open a session of your own\n",
        )
            .into_response();
    }
    let is_delete = request.method() == axum::http::Method::DELETE;
    let counted = if request.method() == axum::http::Method::GET {
        None
    } else {
        match gate.in_flight.start() {
            Some(guard) => Some(guard),
            None => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "serialgate is shutting down; retry when it is back\n",
                )
                    .into_response();
            }
        }
    };
    let name = caller.name.clone();
    request.headers_mut().remove(header::AUTHORIZATION);
    request.extensions_mut().insert(Arc::new(caller));
    // A tool call in a session is read here first, to know what to cancel
    // if its connection closes before the result is written.
    let mut call = None;
    if let Some(id) = &session
        && request.method() == axum::http::Method::POST
    {
        let (parts, body) = request.into_parts();
        let bytes = match axum::body::to_bytes(body, gate.max_body).await {
            Ok(bytes) => bytes,
            Err(e) => {
                return (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "the request body could not be read ({e}); send at most {} bytes\n",
                        gate.max_body
                    ),
                )
                    .into_response();
            }
        };
        call = CallInFlight::of(&gate.sessions, id, &bytes);
        request = Request::from_parts(parts, Body::from(bytes));
    }
    let mut response = next.run(request).await;
    if let Some(guard) = counted {
        response = InFlight::track(response, guard, call);
    }
    match (&session, response.headers().get(SESSION_ID)) {
        (None, Some(id)) => {
            if let Ok(id) = id.to_str() {
                let ended = gate
                    .owners
                    .opened(id, &name, SESSIONS_PER_TOKEN, MAX_SESSIONS);
                for old in ended {
                    tracing::info!(
                        "token {name:?} opened MCP session {id}: ending its least recently used session {old} (at most {SESSIONS_PER_TOKEN} per token, {MAX_SESSIONS} in all)"
                    );
                    end_session(&gate.sessions, old);
                }
            }
        }
        (Some(id), _) if is_delete && response.status().is_success() => {
            gate.owners.closed(id);
            // rmcp answers 202 Accepted; clients expect a session's end to
            // be confirmed with 200 (the Python SDK warns on anything else).
            if response.status() == StatusCode::ACCEPTED {
                *response.status_mut() = StatusCode::OK;
            }
        }
        _ => {}
    }
    response
}

/// Ends MCP session `id` in the background (its connections are detached).
fn end_session(sessions: &Arc<LocalSessionManager>, id: String) {
    use rmcp::transport::streamable_http_server::session::SessionManager;
    let sessions = sessions.clone();
    tokio::spawn(async move {
        let id: Arc<str> = id.into();
        if let Err(e) = sessions.close_session(&id).await {
            tracing::debug!("ending MCP session {id}: {e}");
        }
    });
}

/// Checks DESIGN §6's rule for serving `listen` (as configured, or as
/// bound) with this config. The error says what to change.
pub fn check_exposure(config: &Config, listen: &str, loopback: bool) -> anyhow::Result<()> {
    config::check_http_auth(config.server.auth, config.tokens.is_empty(), loopback)
        .map_err(|e| anyhow::anyhow!("cannot serve HTTP on {listen}: {e}"))
}

/// The axum app: rmcp's streamable HTTP service at `/mcp`, behind the
/// authentication middleware. `cancel` ends every session and stream.
fn app(
    config: &Config,
    gateway: &Gateway,
    stateless: Stateless,
    in_flight: InFlight,
    limits: &ListenerLimits,
    cancel: CancellationToken,
) -> Router {
    let auth = match config.server.auth {
        AuthMode::Token => Auth::Tokens(gateway.clone()),
        AuthMode::None => Auth::None,
    };
    let mut http_config = StreamableHttpServerConfig::default().with_cancellation_token(cancel);
    if config.server.auth == AuthMode::Token {
        // Callers prove who they are with a token; any Host name may be
        // used to reach the server (DNS rebinding gains nothing without a
        // token). Without auth, rmcp's default keeps loopback hosts only.
        http_config = http_config.disable_allowed_hosts();
    }
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let sessions = Arc::new(sessions);
    let template = GateServer::for_http(gateway.clone(), stateless);
    let max_body = http_config.max_request_body_bytes;
    let service =
        StreamableHttpService::new(move || Ok(template.fresh()), sessions.clone(), http_config);
    let gate = Gatekeeper {
        auth,
        owners: SessionOwners::default(),
        in_flight,
        sessions,
        max_body,
        max_connections_per_token: limits.max_per_token,
    };
    Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(gate, authenticate))
}

/// Runs the daemon with MCP over streamable HTTP at `http://LISTEN/mcp`
/// until SIGTERM/SIGINT; every port is closed before it returns. Refuses
/// to start (an error naming the fix) when the address and the config break
/// the authentication rule. Prints `listening on http://ADDR/mcp` to stderr
/// once bound (with the actual port when `listen` asks for port 0), and
/// sends `READY=1` once the ports had their first open attempt. SIGHUP
/// reloads `config_path` (see the module doc).
pub async fn serve_http(
    config: Config,
    config_path: Option<PathBuf>,
    listen: &str,
) -> anyhow::Result<()> {
    let mut signals = Signals::install()?;
    config::check_listen(listen).map_err(|e| anyhow::anyhow!("--http {e}"))?;
    check_exposure(&config, listen, config::listen_is_loopback(listen))?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let local = listener.local_addr()?;
    let loopback = local.ip().to_canonical().is_loopback();
    check_exposure(&config, listen, loopback)?;
    if config.server.auth == AuthMode::None {
        tracing::warn!("auth = \"none\": every local process may use every port over HTTP");
    }
    let reloader = Reloader::new(config_path).with_check({
        let listen = listen.to_owned();
        move |running, new| reload_check(running, new, &listen, loopback)
    });

    let shutdown = CancellationToken::new();
    // Not a child of `shutdown`: closing the ports must not end the
    // sessions before the waiting calls' results are written.
    let cancel = CancellationToken::new();
    let stateless = Stateless::default();
    let in_flight = InFlight::default();
    let gateway = Gateway::start(config.clone(), shutdown.clone());
    let limits =
        ListenerLimits::for_fd_limit(crate::daemon::fd_limit::raise_to_hard(), config.ports.len());
    let app = app(
        &config,
        &gateway,
        stateless.clone(),
        in_flight.clone(),
        &limits,
        cancel.clone(),
    );
    tracing::info!(
        "HTTP: at most {} connections ({} without a token yet, {} per token), {:?} to send a request's headers",
        limits.max_connections,
        limits.max_unauthenticated,
        limits.max_per_token,
        limits.header_timeout
    );
    let mut server = tokio::spawn(listener::serve(
        listener,
        app,
        limits,
        cancel.clone(),
        SHUTDOWN_GRACE,
    ));
    eprintln!("serialgate: listening on http://{local}/mcp");
    tracing::info!(
        "serving MCP at http://{local}/mcp ({} token(s), auth {:?})",
        config.tokens.len(),
        config.server.auth
    );
    // The listener is bound and served; READY=1 once the ports had their
    // first open attempt.
    let outcome = match until_terminated(
        crate::daemon::lifecycle::ready(&gateway),
        &mut signals,
        &reloader,
        &gateway,
    )
    .await
    {
        None => Ok(()),
        Some(()) => match until_terminated(&mut server, &mut signals, &reloader, &gateway).await {
            None => Ok(()),
            Some(Ok(())) => Err(anyhow::anyhow!("the HTTP server on {local} stopped")),
            Some(Err(e)) => Err(anyhow::anyhow!("the HTTP server on {local} failed: {e}")),
        },
    };
    crate::daemon::notify::notify_or_warn("STOPPING=1");
    // Ports first: calls waiting on them end with an error result, which
    // is written to the client before the sessions are cancelled.
    gateway.close_all().await;
    let unfinished = in_flight.drained(SHUTDOWN_GRACE).await;
    if unfinished > 0 {
        tracing::warn!(
            "{unfinished} HTTP response(s) still being written after {SHUTDOWN_GRACE:?}; closing anyway"
        );
    }
    // The listener waits for its connections at most SHUTDOWN_GRACE.
    cancel.cancel();
    if !server.is_finished()
        && tokio::time::timeout(2 * SHUTDOWN_GRACE, &mut server)
            .await
            .is_err()
    {
        server.abort();
    }
    stateless.clear();
    outcome
}

/// What a reloaded config may not change while HTTP is served: the
/// authentication mode and the exposure rule for the bound address. A
/// changed `listen` is only logged (the listener stays where it is).
fn reload_check(
    running: &Config,
    new: &Config,
    listen: &str,
    loopback: bool,
) -> Result<(), String> {
    if new.server.auth != running.server.auth {
        return Err(format!(
            "[server] auth changes from {:?} to {:?}, which needs a restart (systemctl restart serialgate); keeping the running config",
            running.server.auth, new.server.auth
        ));
    }
    config::check_http_auth(new.server.auth, new.tokens.is_empty(), loopback)
        .map_err(|e| format!("cannot keep serving HTTP on {listen} with it: {e}"))?;
    if new.server.listen != running.server.listen {
        tracing::warn!(
            "[server] listen changed to {:?}: still serving on {listen} until a restart",
            new.server.listen
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{TokenAccess, TokenSecret};

    fn token(name: &str, secret: &str) -> TokenConfig {
        TokenConfig {
            name: name.into(),
            secret_file: "/s".into(),
            secret: TokenSecret::new(secret.as_bytes()),
            ports: vec!["*".into()],
            access: TokenAccess::Read,
        }
    }

    #[test]
    fn tokens_are_found_by_secret() {
        let tokens = [token("a", "alpha-secret"), token("b", "beta-secret")];
        assert_eq!(
            find_token(&tokens, b"beta-secret").map(|t| t.name.as_str()),
            Some("b")
        );
        assert_eq!(
            find_token(&tokens, b"alpha-secret").map(|t| t.name.as_str()),
            Some("a")
        );
        assert!(find_token(&tokens, b"alpha-secre").is_none());
        assert!(find_token(&tokens, b"").is_none());
        assert!(find_token(&[], b"alpha-secret").is_none());
    }

    #[test]
    fn bearer_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), Err(Refusal::Missing));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer  s3cret "),
        );
        assert_eq!(bearer(&h), Ok(&b"s3cret"[..]));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer x"));
        assert_eq!(bearer(&h), Ok(&b"x"[..]));
        for bad in ["Basic dXNlcjpwYXNz", "Bearer", "Bearer ", "s3cret"] {
            h.insert(header::AUTHORIZATION, HeaderValue::from_static(bad));
            assert_eq!(bearer(&h), Err(Refusal::Malformed), "{bad}");
        }
    }

    #[test]
    fn sessions_belong_to_their_opener() {
        let owners = SessionOwners::default();
        assert!(owners.allows("s1", "a"), "unknown sessions: rmcp decides");
        assert!(owners.opened("s1", "a", 2, 10).is_empty());
        assert!(owners.allows("s1", "a"));
        assert!(!owners.allows("s1", "b"));
        owners.closed("s1");
        assert!(owners.allows("s1", "b"));
    }

    #[test]
    fn a_token_keeps_its_newest_sessions() {
        let owners = SessionOwners::default();
        assert!(owners.opened("a1", "a", 2, 3).is_empty());
        assert!(owners.opened("a2", "a", 2, 3).is_empty());
        assert!(owners.allows("a1", "a"), "a1 is now the most recently used");
        assert_eq!(owners.opened("a3", "a", 2, 3), ["a2"]);
        assert!(owners.opened("b1", "b", 2, 3).is_empty());
        assert_eq!(owners.opened("b2", "b", 2, 3), ["a1"], "the oldest of all");
        assert!(owners.allows("a2", "b"), "forgotten: rmcp answers for it");
    }

    #[test]
    fn refusals_challenge() {
        let r = unauthorized(&Refusal::Unknown);
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        let challenge = r.headers()[header::WWW_AUTHENTICATE].to_str().unwrap();
        assert!(challenge.starts_with("Bearer "), "{challenge}");
    }
}
