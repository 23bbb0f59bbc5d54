//! The daemon's Prometheus metrics, with the Prometheus client library
//! (`prometheus-client`): counters the daemon's parts bump as things
//! happen (alerts by severity, tool calls by tool and error code, wait
//! durations, dropped notifications), kept process-wide like the `tracing`
//! dispatcher so that no layer passes them down, and the ports' own
//! figures (state, bytes, reconnects, people) read at each scrape.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::gateway::Gateway;
use crate::port::PortState;

type Labels = Vec<(&'static str, String)>;

/// The counters kept between scrapes.
struct Counters {
    alerts: Family<Labels, Counter>,
    tool_calls: Family<Labels, Counter>,
    waits: Histogram,
    notifications: Family<Labels, Counter>,
    webhook: Family<Labels, Counter>,
    sessions: AtomicI64,
}

static COUNTERS: LazyLock<Counters> = LazyLock::new(|| Counters {
    alerts: Family::default(),
    tool_calls: Family::default(),
    // 10 ms to about 5 minutes.
    waits: Histogram::new(exponential_buckets(0.01, 2.0, 15)),
    notifications: Family::default(),
    webhook: Family::default(),
    sessions: AtomicI64::new(0),
});

/// An alert was raised on `port`.
pub fn alert(port: &str, severity: &str) {
    COUNTERS
        .alerts
        .get_or_create(&vec![
            ("port", port.to_owned()),
            ("severity", severity.to_owned()),
        ])
        .inc();
}

/// A tool call ended: `code` is `ok` or its error code.
pub fn tool_call(tool: &str, code: &str) {
    COUNTERS
        .tool_calls
        .get_or_create(&vec![("tool", tool.to_owned()), ("code", code.to_owned())])
        .inc();
}

/// A wait for a port's output ended after `took`.
pub fn wait(took: Duration) {
    COUNTERS.waits.observe(took.as_secs_f64());
}

/// A resource notification was sent (`sent`) or could not be (`failed`).
pub fn notification(outcome: &'static str) {
    COUNTERS
        .notifications
        .get_or_create(&vec![("outcome", outcome.to_owned())])
        .inc();
}

/// A webhook delivery ended: `delivered`, `failed` (after its retries) or
/// `dropped` (its queue was full).
pub fn webhook(outcome: &'static str) {
    COUNTERS
        .webhook
        .get_or_create(&vec![("outcome", outcome.to_owned())])
        .inc();
}

/// An MCP session state began (`+1`) or ended (`-1`).
pub fn session(delta: i64) {
    COUNTERS.sessions.fetch_add(delta, Ordering::Relaxed);
}

/// The text exposition of every metric, the ports' limited to those
/// `shows` (a token's globs).
pub fn render(gateway: &Gateway, shows: &dyn Fn(&str) -> bool) -> String {
    let c = &*COUNTERS;
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
            labels.push(("state", state_name(state).to_owned()));
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
            let seen = c.alerts.get(&labels).map_or(0, |counter| counter.get());
            alerts.get_or_create(&labels).inc_by(seen);
        }
    }
    let sessions = Gauge::<i64>::default();
    sessions.set(c.sessions.load(Ordering::Relaxed).max(0));
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
        "Alerts raised, by port and severity",
        alerts,
    );
    registry.register(
        "serialgate_mcp_sessions",
        "MCP session states alive (stdio, HTTP sessions, sessionless clients' kept states)",
        sessions,
    );
    registry.register(
        "serialgate_tool_calls",
        "Tool calls, by tool and outcome (ok or the error code)",
        c.tool_calls.clone(),
    );
    registry.register(
        "serialgate_wait_seconds",
        "How long calls waited for a port's output",
        c.waits.clone(),
    );
    registry.register(
        "serialgate_notifications",
        "Resource update notifications, sent or failed",
        c.notifications.clone(),
    );
    registry.register(
        "serialgate_webhook_deliveries",
        "Alert webhook deliveries: delivered, failed after its retries, dropped (queue full)",
        c.webhook.clone(),
    );
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = encode(&mut text, &registry);
    text
}

fn state_name(state: PortState) -> &'static str {
    match state {
        PortState::Opening => "opening",
        PortState::Open => "open",
        PortState::Lost => "lost",
        PortState::Reopening => "reopening",
        PortState::Down => "down",
        PortState::Closed => "closed",
    }
}
