//! The daemon's Prometheus metrics, with the Prometheus client library
//! (`prometheus-client`): counters the daemon's parts bump as things
//! happen (alerts by severity, session watches' alerts apart, tool calls by tool and error code, wait
//! durations, dropped notifications), kept process-wide like the `tracing`
//! dispatcher so that no layer passes them down. It imports nothing of
//! the daemon's: the ports' own figures are read at each scrape by
//! `daemon/metrics_http.rs`.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

/// The counters kept between scrapes.
struct Counters {
    alerts: Family<Labels, Counter>,
    session_alerts: Family<Labels, Counter>,
    tool_calls: Family<Labels, Counter>,
    waits: Histogram,
    notifications: Family<Labels, Counter>,
    webhook: Family<Labels, Counter>,
    approvals: Family<Labels, Counter>,
    sessions: AtomicI64,
}

static COUNTERS: LazyLock<Counters> = LazyLock::new(|| Counters {
    alerts: Family::default(),
    session_alerts: Family::default(),
    tool_calls: Family::default(),
    // 10 ms to about 5 minutes.
    waits: Histogram::new(exponential_buckets(0.01, 2.0, 15)),
    notifications: Family::default(),
    webhook: Family::default(),
    approvals: Family::default(),
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

/// A session's own watch raised an alert on `port`: counted apart from
/// [`alert`], without a severity (the session chose it), so that no session
/// moves the operator's alert counts.
pub fn session_alert(port: &str) {
    COUNTERS
        .session_alerts
        .get_or_create(&vec![("port", port.to_owned())])
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

/// A request for a person's approval on `port` was `requested`,
/// `refused` (too many waiting), `approved`, `denied`, `expired` or
/// `withdrawn` (its call went away).
pub fn approval(port: &str, outcome: &'static str) {
    COUNTERS
        .approvals
        .get_or_create(&vec![
            ("port", port.to_owned()),
            ("outcome", outcome.to_owned()),
        ])
        .inc();
}

/// An MCP session state began (`+1`) or ended (`-1`).
pub fn session(delta: i64) {
    COUNTERS.sessions.fetch_add(delta, Ordering::Relaxed);
}

/// How many alerts of `severity` `port` raised.
pub fn alerts_seen(port: &str, severity: &str) -> u64 {
    let labels = vec![("port", port.to_owned()), ("severity", severity.to_owned())];
    COUNTERS.alerts.get(&labels).map_or(0, |c| c.get())
}

/// How many alerts sessions' own watches raised on `port`.
pub fn session_alerts_seen(port: &str) -> u64 {
    let labels = vec![("port", port.to_owned())];
    COUNTERS.session_alerts.get(&labels).map_or(0, |c| c.get())
}

/// Live MCP session states.
pub fn sessions() -> i64 {
    COUNTERS.sessions.load(Ordering::Relaxed).max(0)
}

/// Registers the counters kept between scrapes in `registry`.
pub fn register(registry: &mut Registry) {
    let c = &*COUNTERS;
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
    registry.register(
        "serialgate_approvals",
        "Requests for a person's approval, by port and outcome (requested, refused, approved, denied, expired, withdrawn)",
        c.approvals.clone(),
    );
}
