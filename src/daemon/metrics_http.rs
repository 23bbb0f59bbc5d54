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

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::access::Caller;
use crate::config::TokenAccess;
use crate::gateway::Gateway;
use crate::port::PortState;

type Labels = Vec<(&'static str, String)>;

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
    let text = render(&gateway, &|port| caller.may_use_port(port));
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
                    let text = render(&gateway, &|_| true);
                    ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response()
                }
            }),
        )
        .merge(health());
    crate::task::spawn(async move {
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

/// The text exposition of every metric, the ports' limited to those
/// `shows` (a token's globs).
pub(crate) fn render(gateway: &Gateway, shows: &dyn Fn(&str) -> bool) -> String {
    let mut registry = Registry::default();
    let port_state = Family::<Labels, Gauge>::default();
    let received = Family::<Labels, Counter>::default();
    let sent = Family::<Labels, Counter>::default();
    let reconnects = Family::<Labels, Counter>::default();
    let retention_dropped = Family::<Labels, Counter>::default();
    let alerts_dropped = Family::<Labels, Counter>::default();
    let people = Family::<Labels, Gauge>::default();
    let waiting = Family::<Labels, Gauge>::default();
    let watches = Family::<Labels, Gauge>::default();
    let states = [
        PortState::Opening,
        PortState::Open,
        PortState::Lost,
        PortState::Reopening,
        PortState::Down,
        PortState::Closed,
    ];
    for gp in gateway.ports() {
        let port = &gp.port;
        let name = port.name();
        if !shows(name) {
            continue;
        }
        let one = || vec![("port", name.to_owned())];
        let now = port.state();
        for state in states {
            let mut labels = one();
            labels.push(("state", state.as_str().to_owned()));
            port_state
                .get_or_create(&labels)
                .set(i64::from(state == now));
        }
        received.get_or_create(&one()).inc_by(port.log().head());
        sent.get_or_create(&one()).inc_by(port.bytes_written());
        reconnects.get_or_create(&one()).inc_by(port.reconnects());
        retention_dropped
            .get_or_create(&one())
            .inc_by(port.log().oldest());
        let summary = port.alerts().summary();
        alerts_dropped.get_or_create(&one()).inc_by(summary.dropped);
        watches.get_or_create(&one()).set(summary.watches as i64);
        people.get_or_create(&one()).set(port.people().len() as i64);
        waiting
            .get_or_create(&one())
            .set(port.active_waits() as i64);
    }
    let alerts = Family::<Labels, Counter>::default();
    let session_alerts = Family::<Labels, Counter>::default();
    // Only the ports shown; a family clone would show them all.
    for gp in gateway.ports() {
        let name = gp.port.name();
        if !shows(name) {
            continue;
        }
        for severity in crate::config::watches::Severity::ALL {
            let labels = vec![
                ("port", name.to_owned()),
                ("severity", severity.as_str().to_owned()),
            ];
            let seen = crate::metrics::alerts_seen(name, severity.as_str());
            alerts.get_or_create(&labels).inc_by(seen);
        }
        session_alerts
            .get_or_create(&vec![("port", name.to_owned())])
            .inc_by(crate::metrics::session_alerts_seen(name));
    }
    let sessions = Gauge::<i64>::default();
    sessions.set(crate::metrics::sessions());
    registry.register(
        "serialgate_port_state",
        "1 for the state each port is in (opening, open, lost, reopening, down, closed)",
        port_state,
    );
    registry.register(
        "serialgate_port_received_bytes",
        "Bytes the device sent (the OutputLog's head)",
        received,
    );
    registry.register(
        "serialgate_port_sent_bytes",
        "Bytes written to the device",
        sent,
    );
    registry.register(
        "serialgate_port_reconnects",
        "Times the device was reopened after a loss",
        reconnects,
    );
    registry.register(
        "serialgate_port_retention_dropped_bytes",
        "Bytes retention dropped from the OutputLog (still in the transcript, if any)",
        retention_dropped,
    );
    registry.register(
        "serialgate_port_alerts_dropped",
        "Alerts dropped from a port's kept ones (the newest 256 are kept)",
        alerts_dropped,
    );
    registry.register(
        "serialgate_port_watches",
        "Standing watches in force (config and sessions')",
        watches,
    );
    registry.register(
        "serialgate_port_people",
        "People attached with a console",
        people,
    );
    registry.register(
        "serialgate_port_waiting_calls",
        "Calls waiting on the port's output",
        waiting,
    );
    registry.register(
        "serialgate_alerts",
        "Alerts of the config's watches raised, by port and severity",
        alerts,
    );
    registry.register(
        "serialgate_session_alerts",
        "Alerts of sessions' own watches raised, by port (never in serialgate_alerts)",
        session_alerts,
    );
    registry.register(
        "serialgate_mcp_sessions",
        "MCP session states alive (stdio, HTTP sessions, sessionless clients' kept states)",
        sessions,
    );
    crate::metrics::register(&mut registry);
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = encode(&mut text, &registry);
    text
}
