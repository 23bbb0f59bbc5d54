//! MCP over streamable HTTP, at `/mcp`, behind bearer-token authentication.
//!
//! `serialgate serve --http ADDR` (or `[server] listen = "ADDR"`) serves
//! rmcp's [`StreamableHttpService`] nested under axum at `/mcp`; stdio is
//! not served then. Every MCP session gets its own [`GateServer`], all
//! sharing one [`Gateway`].
//!
//! - [`auth`]: who a request comes from (bearer tokens; `401` without
//!   one), in the middleware in front of `/mcp`.
//! - [`sessions`]: which token owns each MCP session (`403` for the
//!   others), and how many sessions a token and all of them may keep.
//! - [`drain`]: the responses still being written, which shutdown waits
//!   for.
//! - [`listener`]: the connections, under limits that nobody on the
//!   network can exhaust without a token.
//! - [`throttle`]: wrong secrets counted by source, one count for the
//!   bearer tokens and the web sign-in (`429` past it).
//! - [`web`]: the web view (`/web/`), a browser's sign-in and pages; its
//!   session cookie also opens the console WebSockets.
//!
//! This module assembles them; `auth` uses `sessions`, `drain` and
//! `listener`, and none of those four imports this module.
//!
//! # Exposure
//!
//! A non-loopback address requires tokens; a loopback address without
//! tokens requires an explicit `auth = "none"` (then every caller has full
//! access, and only loopback `Host` headers are accepted, against DNS
//! rebinding); `auth = "none"` on a non-loopback address is refused. The
//! rule is checked against the configured address and again against the
//! address actually bound ([`check_exposure`]). A non-loopback address
//! also needs TLS (`tls_cert` and `tls_key`), unless the config says
//! `tls = "off"` with a `tls_off_reason`.
//!
//! # TLS
//!
//! With `tls_cert` and `tls_key` every door of the listener (`/mcp`, the
//! web view, the console WebSockets, `/metrics`, `/healthz`) is served
//! over TLS 1.2 or 1.3 only ([`crate::tls::server`]), and the web view's
//! answers carry `Strict-Transport-Security` and its cookie `Secure`.
//! SIGHUP reads the two files again: a renewed certificate is served to
//! the next connection, open sessions and WebSockets keep theirs; a bad
//! pair rejects the reload and the running one stays. Turning TLS on or
//! off needs a restart.
//!
//! # Reload and shutdown
//!
//! SIGHUP reloads the config as over stdio ([`Reloader`]); tokens follow
//! at once (they are read per request). What the bound listener fixes
//! cannot change without a restart: a new config whose `auth` differs, or
//! whose tokens would break the exposure rule for the bound address, is
//! rejected; a changed `listen` is logged and takes effect at the next
//! start.
//!
//! On SIGTERM the ports close first, so a call waiting on one ends with an
//! error result; the responses still being written get up to
//! [`SHUTDOWN_GRACE`] to reach their clients before the sessions end (see
//! [`drain`]).

pub mod auth;
mod console_ws;
pub mod drain;
pub mod listener;
pub mod session_owners;
pub mod throttle;
pub mod web;

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::middleware;
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::config::{self, AuthMode, Config, ListenerTls};
use crate::daemon::fd_limit;
use crate::daemon::lifecycle::{Reloader, Signals, ready, stop, until_terminated};
use crate::gateway::Gateway;
use crate::mcp::GateServer;
use crate::mcp::scope::Stateless;
use crate::tls::server::ServerTls;
use auth::{Auth, Gatekeeper, authenticate};
use drain::{InFlight, SHUTDOWN_GRACE};
use listener::ListenerLimits;
use session_owners::{SESSION_IDLE, SessionOwners};

/// Checks the exposure rule (see the module doc) for serving `listen` (as
/// configured, or as bound) with this config. The error says what to
/// change.
pub fn check_exposure(config: &Config, listen: &str, loopback: bool) -> anyhow::Result<()> {
    config::check_http_auth(config.server.auth, config.tokens.is_empty(), loopback)
        .and_then(|()| config.server.tls.check_exposure(loopback))
        .map_err(|e| anyhow::anyhow!("cannot serve HTTP on {listen}: {e}"))
}

/// The axum app: rmcp's streamable HTTP service at `/mcp` and the console
/// WebSockets, behind the authentication middleware, and the web view
/// with its own sign-in. `cancel` ends every session and stream.
fn app(
    config: &Config,
    gateway: &Gateway,
    stateless: Stateless,
    in_flight: InFlight,
    cancel: CancellationToken,
    fleet: Option<crate::fleet::link::Fleet>,
) -> anyhow::Result<Router> {
    let tls = config.server.tls.is_on();
    let auth = match config.server.auth {
        AuthMode::Token => Auth::Tokens(gateway.clone()),
        AuthMode::None => Auth::None(gateway.clone()),
    };
    let mut http_config =
        StreamableHttpServerConfig::default().with_cancellation_token(cancel.clone());
    if config.server.auth == AuthMode::Token {
        // Callers prove who they are with a token; any Host name may be
        // used to reach the server (DNS rebinding gains nothing without a
        // token). Without auth, rmcp's default keeps loopback hosts only.
        http_config = http_config.disable_allowed_hosts();
    }
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    // rmcp keeps every answered request's SSE events for a resume for 60 s
    // by default: a 20 MB result would stay resident that long, and with a
    // few agents take the host's memory. A client that lost a result reads
    // it again by offset (read_output, the output resource).
    sessions.session_config.completed_cache_ttl = std::time::Duration::ZERO;
    let sessions = Arc::new(sessions);
    let template = GateServer::for_http(gateway.clone(), stateless).with_fleet(fleet);
    let max_body = http_config.max_request_body_bytes;
    let service =
        StreamableHttpService::new(move || Ok(template.fresh()), sessions.clone(), http_config);
    // One failure count per source for every door that compares a secret.
    let throttle = throttle::Throttle::default();
    let owners = SessionOwners::default();
    owners.end_revoked_at_reloads(gateway, &sessions, cancel.clone());
    let gate = Gatekeeper {
        auth,
        owners,
        in_flight,
        sessions,
        max_body,
        browsers: None,
        throttle: throttle.clone(),
    };
    // Browsers stay signed in across a restart where there is a state
    // directory to keep their sessions in.
    let browsers = match &config.server.state_dir {
        Some(dir) => web::browser_login::BrowserLogins::persistent(dir)
            .map_err(|e| anyhow::anyhow!("server.state_dir: {e}"))?,
        None => web::browser_login::BrowserLogins::default(),
    };
    let console_gate = Gatekeeper {
        browsers: Some(browsers.clone()),
        ..gate.clone()
    };
    let console = console_ws::ConsoleState {
        gateway: gateway.clone(),
        cancel: cancel.clone(),
        logins: browsers.clone(),
        open: config.server.auth == AuthMode::None,
    };
    let consoles = Router::new()
        .route("/ports/{name}/console", get(console_ws::attach_port))
        .route("/console", get(console_ws::attach_any))
        .with_state(console)
        .route_layer(middleware::from_fn_with_state(console_gate, authenticate));
    let web = web::router(web::WebState {
        gateway: gateway.clone(),
        logins: browsers,
        open: config.server.auth == AuthMode::None,
        throttle,
        cancel: cancel.clone(),
        tls,
    });
    // `/mcp` and every unknown path pass the bearer-token middleware (a
    // stranger learns nothing, not even which paths exist); the consoles
    // and the web view bring their own.
    Ok(Router::new()
        .nest_service("/mcp", service)
        .merge(super::metrics_http::authenticated(gateway))
        .layer(middleware::from_fn_with_state(gate, authenticate))
        .merge(super::metrics_http::health())
        .merge(consoles)
        .merge(web))
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
    for note in config.short_secret_notes() {
        tracing::warn!("{note}");
    }
    let tls = match &config.server.tls {
        ListenerTls::Files { cert, key, .. } => {
            let (tls, summary) = ServerTls::load(cert, key)
                .map_err(|e| anyhow::anyhow!("cannot serve HTTPS on {listen}: server.{e}"))?;
            log_certificate("serving", &summary);
            Some(tls)
        }
        ListenerTls::Off { reason } => {
            if !loopback {
                tracing::warn!("tls = \"off\": plain HTTP on {local} ({reason})");
            }
            None
        }
        ListenerTls::Unset => None,
    };
    let reloader = Reloader::new(config_path).with_check({
        let listen = listen.to_owned();
        let tls = tls.clone();
        move |running, new| {
            reload_check(running, new, &listen, loopback)?;
            for note in new.short_secret_notes() {
                tracing::warn!("{note}");
            }
            reload_tls(tls.as_ref(), new)
        }
    });
    let scheme = if tls.is_some() { "https" } else { "http" };

    let shutdown = CancellationToken::new();
    // Not a child of `shutdown`: closing the ports must not end the
    // sessions before the waiting calls' results are written.
    let cancel = CancellationToken::new();
    let stateless = Stateless::default();
    let in_flight = InFlight::default();
    let (gateway, fleet_alerts) = super::fleet::start_gateway(config.clone(), shutdown.clone());
    super::console_socket::start(&gateway, &shutdown)?;
    super::ssh::start(&gateway, &shutdown).await?;
    let fleet = super::fleet::start(&gateway, fleet_alerts, &shutdown).await?;
    if let Some(listen) = &config.server.metrics_listen {
        super::metrics_http::start_listener(listen, &gateway, cancel.clone()).await?;
    }
    let limits = ListenerLimits::for_fd_limit(fd_limit::raise_to_hard(), config.ports.len());
    let app = app(
        &config,
        &gateway,
        stateless.clone(),
        in_flight.clone(),
        cancel.clone(),
        fleet,
    )?;
    tracing::info!(
        "HTTP: at most {} connections ({} without a token yet, {} per token, {} for read tokens together, {} with write tokens), {:?} to send a request's headers",
        limits.max_connections,
        limits.max_unauthenticated,
        limits.max_per_token,
        crate::config::TokenAccess::Read.share_of(limits.max_connections),
        crate::config::TokenAccess::Write.share_of(limits.max_connections),
        limits.header_timeout
    );
    let mut server = crate::task::spawn(listener::serve(
        listener,
        app,
        tls,
        limits,
        cancel.clone(),
        SHUTDOWN_GRACE,
    ));
    eprintln!("serialgate: listening on {scheme}://{local}/mcp");
    eprintln!("serialgate: web view at {scheme}://{local}/web/");
    tracing::info!(
        "serving MCP at {scheme}://{local}/mcp ({} token(s), auth {:?})",
        config.tokens.len(),
        config.server.auth
    );
    // The listener is bound and served; READY=1 once the ports had their
    // first open attempt.
    let outcome = match until_terminated(ready(&gateway), &mut signals, &reloader, &gateway).await {
        None => Ok(()),
        Some(()) => match until_terminated(&mut server, &mut signals, &reloader, &gateway).await {
            None => Ok(()),
            Some(Ok(())) => Err(anyhow::anyhow!("the HTTP server on {local} stopped")),
            Some(Err(e)) => Err(anyhow::anyhow!("the HTTP server on {local} failed: {e}")),
        },
    };
    // Ports first: calls waiting on them end with an error result, which
    // is written to the client before the sessions are cancelled.
    stop(&gateway).await;
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
        .and_then(|()| new.server.tls.check_exposure(loopback))
        .map_err(|e| format!("cannot keep serving HTTP on {listen} with it: {e}"))?;
    if new.server.tls.is_on() != running.server.tls.is_on() {
        return Err(format!(
            "[server] TLS is turned {} on the running listener, which needs a restart (systemctl restart serialgate); keeping the running config",
            if new.server.tls.is_on() { "on" } else { "off" }
        ));
    }
    if new.server.listen != running.server.listen {
        tracing::warn!(
            "[server] listen changed to {:?}: still serving on {listen} until a restart",
            new.server.listen
        );
    }
    Ok(())
}

/// Reads the listener's certificate and key again for a reloaded config
/// (TLS stays on: [`reload_check`] refused a change), so the next
/// connection gets a renewed certificate; a bad pair rejects the reload.
fn reload_tls(tls: Option<&ServerTls>, new: &Config) -> Result<(), String> {
    let (Some(tls), ListenerTls::Files { cert, key, .. }) = (tls, &new.server.tls) else {
        return Ok(());
    };
    let summary = tls
        .reload(cert, key)
        .map_err(|e| format!("server.{e}; the running certificate stays"))?;
    log_certificate("reloaded", &summary);
    Ok(())
}

/// Logs the certificate served: its subject and expiry.
fn log_certificate(what: &str, summary: &crate::tls::x509::CertSummary) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    if summary.not_after_unix < now {
        tracing::error!(
            "TLS: {what} certificate {}, {}: clients will refuse it; renew it and send SIGHUP",
            summary.subject,
            summary.expiry(now)
        );
    } else {
        tracing::info!(
            "TLS: {what} certificate {}, {}",
            summary.subject,
            summary.expiry(now)
        );
    }
}
