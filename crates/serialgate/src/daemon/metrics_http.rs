//! `/metrics` (the Prometheus text format) and `/healthz`: on the HTTP
//! listener, `/metrics` for a token of access `metrics` (which may do
//! nothing else) or `admin`, showing the ports of its globs; and on
//! `[server] metrics_listen`, a loopback listener of their own without a
//! token, for a Prometheus on the same host.

use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio_util::sync::CancellationToken;

use crate::config::TokenAccess;
use crate::gateway::Gateway;
use crate::mcp::access::Caller;

/// The text format's content type.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `/metrics` behind the bearer-token middleware (it puts the caller in
/// the request's extensions).
pub(crate) fn authenticated(gateway: &Gateway) -> Router {
    Router::new()
        .route("/metrics", get(scrape_as_caller))
        .with_state(gateway.clone())
}

/// `/healthz`: `ok` while the daemon serves, for load balancers and
/// watchdogs; it says nothing else, so it needs no token.
pub(crate) fn health() -> Router {
    Router::new().route("/healthz", get(healthz))
}

async fn healthz() -> Response {
    ([(header::CACHE_CONTROL, "no-store")], "ok\n").into_response()
}

async fn scrape_as_caller(
    axum::extract::State(gateway): axum::extract::State<Gateway>,
    axum::Extension(caller): axum::Extension<Arc<Caller>>,
) -> Response {
    if !matches!(caller.access, TokenAccess::Metrics | TokenAccess::Admin) {
        return (
            StatusCode::FORBIDDEN,
            format!(
                "token {:?} may not scrape /metrics; give a token access = \"metrics\" (or admin)\n",
                caller.name
            ),
        )
            .into_response();
    }
    let text = crate::metrics::render(&gateway, &|port| caller.may_use_port(port));
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response()
}

/// Serves `/metrics` (every port) and `/healthz` on `listen`, a loopback
/// address, until `cancel`; the error says why it could not bind.
pub(crate) async fn start_listener(
    listen: &str,
    gateway: &Gateway,
    cancel: CancellationToken,
) -> anyhow::Result<std::net::SocketAddr> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen for metrics on {listen}: {e}"))?;
    let local = listener.local_addr()?;
    if !local.ip().to_canonical().is_loopback() {
        anyhow::bail!("metrics_listen {listen} is not a loopback address ({local})");
    }
    let gateway = gateway.clone();
    let app = Router::new()
        .route(
            "/metrics",
            get(move || {
                let gateway = gateway.clone();
                async move {
                    let text = crate::metrics::render(&gateway, &|_| true);
                    ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response()
                }
            }),
        )
        .merge(health());
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(cancel.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::warn!("the metrics listener stopped: {e}");
        }
    });
    eprintln!("serialgate: metrics at http://{local}/metrics");
    tracing::info!("serving /metrics and /healthz at http://{local}");
    Ok(local)
}
