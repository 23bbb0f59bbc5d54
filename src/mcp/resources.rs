//! MCP resources: the whole cleaned output of a `send_command` whose
//! result was cut at `max_output`, and each port's alerts, which a client
//! may subscribe to (`resources/subscribe`): every new alert sends it
//! `notifications/resources/updated`. A port of another site
//! (`site/port`) has them too: its alerts are those its site's stream
//! delivered to this serving gateway (`fleet/alert_inbox.rs`), and its
//! outputs are read at the site (`mcp/fleet_forward.rs`).

use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, ResourceContents};

use super::args::CLEAN_PIECE;
use super::session::Session;
use crate::clean::{CleanOptions, Cleaner};
use crate::error::shown;
use crate::fleet::alert_inbox::AlertInbox;
use crate::fleet::link::Fleet;
use crate::gateway::Gateway;

/// The URI template of command outputs.
pub const OUTPUT_TEMPLATE: &str = "serialgate://ports/{port}/output/{start}-{end}";

/// The URI template of a port's alerts.
pub const ALERTS_TEMPLATE: &str = "serialgate://ports/{port}/alerts";

/// How many of the newest alerts the alerts resource shows.
const ALERTS_SHOWN: usize = 50;

/// Whether `port` is a port's name, or a port of another site's
/// (`site/port`): not empty, no empty part, at most one `/`.
fn port_name(port: &str) -> bool {
    !port.is_empty() && port.split('/').count() <= 2 && port.split('/').all(|p| !p.is_empty())
}

/// The port of an alerts URI (`serialgate://ports/{port}/alerts`).
pub fn alerts_port(uri: &str) -> Option<&str> {
    let port = uri
        .strip_prefix("serialgate://ports/")?
        .strip_suffix("/alerts")?;
    port_name(port).then_some(port)
}

/// The port a resource URI names: an alerts URI's or an output URI's.
pub fn uri_port(uri: &str) -> Option<&str> {
    alerts_port(uri).or_else(|| parse_uri(uri).map(|(port, _, _)| port))
}

/// `uri` with its port `from` named `to` (`site/port` and back).
pub fn renamed(uri: &str, from: &str, to: &str) -> Option<String> {
    let rest = uri
        .strip_prefix("serialgate://ports/")?
        .strip_prefix(from)?
        .strip_prefix('/')?;
    Some(format!("serialgate://ports/{to}/{rest}"))
}

/// Reads an alerts resource: the port's newest alerts as JSON (for a
/// port of another site, those delivered to this gateway).
fn read_alerts(
    gateway: &Gateway,
    fleet: Option<&Fleet>,
    port: &str,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    let body = if port.contains('/') {
        let inbox = remote_alerts(fleet, port)?;
        let delivered = inbox.newest(port, ALERTS_SHOWN);
        serde_json::json!({
            "port": port,
            "total": delivered.total,
            "dropped": delivered.dropped,
            "alerts": delivered.alerts,
        })
    } else {
        let gp = gateway.port(port).ok_or_else(|| unknown_port(port))?;
        let alerts = gp.port.alerts();
        let summary = alerts.summary();
        serde_json::json!({
            "port": port,
            "total": summary.total,
            "dropped": summary.dropped,
            "alerts": alerts.newest(ALERTS_SHOWN),
        })
    };
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(body.to_string(), uri).with_mime_type("application/json"),
    ]))
}

/// The inbox of a port of another site's alerts, when this gateway
/// serves the fleet and the port's site announced it.
fn remote_alerts<'a>(fleet: Option<&'a Fleet>, port: &str) -> Result<&'a AlertInbox, ErrorData> {
    let (site, name) = port.split_once('/').ok_or_else(|| unknown_port(port))?;
    let fleet = fleet.ok_or_else(|| unknown_port(port))?;
    match (&fleet.directory, &fleet.alerts) {
        (Some(directory), Some(inbox)) if directory.announced(site, name) => Ok(inbox),
        _ => Err(unknown_port(port)),
    }
}

/// What wakes a subscriber of `port`'s alerts: the port's own alerts, or
/// those of a port of another site delivered here.
fn alert_changes(
    gateway: &Gateway,
    fleet: Option<&Fleet>,
    port: &str,
) -> Result<tokio::sync::watch::Receiver<u64>, ErrorData> {
    if port.contains('/') {
        return remote_alerts(fleet, port)?
            .subscribe(port)
            .ok_or_else(|| unknown_port(port));
    }
    let gp = gateway.port(port).ok_or_else(|| unknown_port(port))?;
    let mut changed = gp.port.alerts().subscribe();
    changed.mark_unchanged();
    Ok(changed)
}

fn unknown_port(port: &str) -> ErrorData {
    ErrorData::resource_not_found(
        format!(
            "unknown_connection: no port named {}; list_ports names them",
            shown(port)
        ),
        None,
    )
}

/// Subscribes the client at `peer` to a port's alerts: a task sends
/// `notifications/resources/updated` for `uri` after every new alert (one
/// per wake-up, however many arrived), until the guard kept in `session`
/// drops, the client is gone or the port is.
pub fn subscribe_alerts(
    gateway: &Gateway,
    fleet: Option<&Fleet>,
    session: &Session,
    port: &str,
    uri: &str,
    peer: rmcp::Peer<rmcp::RoleServer>,
) -> Result<(), ErrorData> {
    let mut changed = alert_changes(gateway, fleet, port)?;
    let stop = tokio_util::sync::CancellationToken::new();
    if !session.subscribe(uri, stop.clone().drop_guard()) {
        return Err(ErrorData::invalid_request(
            format!(
                "invalid_argument: this session has {} subscriptions already; unsubscribe from one first",
                super::session::MAX_SUBSCRIPTIONS
            ),
            None,
        ));
    }
    let uri = uri.to_owned();
    crate::task::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                next = changed.changed() => if next.is_err() { break },
            }
            let note = rmcp::model::ResourceUpdatedNotificationParam::new(uri.clone());
            if peer.notify_resource_updated(note).await.is_err() {
                crate::metrics::notification("failed");
                break;
            }
            crate::metrics::notification("sent");
        }
    });
    Ok(())
}

/// For a `subscriptions/listen` stream: a task sends
/// `notifications/resources/updated` for `uri` through `sink` after new
/// alerts of `port`, until `stop`, the stream's end or the port's.
pub fn listen_alerts(
    gateway: &Gateway,
    fleet: Option<&Fleet>,
    port: &str,
    uri: &str,
    sink: rmcp::service::SubscriptionSink,
    stop: tokio_util::sync::CancellationToken,
) {
    let Ok(mut changed) = alert_changes(gateway, fleet, port) else {
        return;
    };
    let uri = uri.to_owned();
    crate::task::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                next = changed.changed() => if next.is_err() { break },
            }
            if sink.notify_resource_updated(uri.clone()).await.is_err() {
                crate::metrics::notification("failed");
                break;
            }
            crate::metrics::notification("sent");
        }
    });
}

/// The URI of the output of `port` between two offsets.
pub fn output_uri(port: &str, start: u64, end: u64) -> String {
    format!("serialgate://ports/{port}/output/{start}-{end}")
}

fn parse_uri(uri: &str) -> Option<(&str, u64, u64)> {
    let rest = uri.strip_prefix("serialgate://ports/")?;
    let (port, range) = rest.split_once("/output/")?;
    let (start, end) = range.split_once('-')?;
    let (start, end) = (start.parse().ok()?, end.parse().ok()?);
    (start <= end).then_some((port, start, end))
}

/// Reads an output resource: the cleaned bytes of the range.
pub fn read(
    gateway: &Gateway,
    fleet: Option<&Fleet>,
    session: &Session,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    if let Some(port) = alerts_port(uri) {
        return read_alerts(gateway, fleet, port, uri);
    }
    let (port_name, start, end) = parse_uri(uri).ok_or_else(|| {
        ErrorData::invalid_params(
            format!(
                "invalid_argument: {} is not {OUTPUT_TEMPLATE} or {ALERTS_TEMPLATE}",
                shown(uri)
            ),
            None,
        )
    })?;
    let gp = gateway.port(port_name).ok_or_else(|| {
        ErrorData::resource_not_found(
            format!(
                "unknown_connection: no port named {}; the URIs of command outputs come from send_command results",
                shown(port_name)
            ),
            None,
        )
    })?;
    let log = gp.port.log();
    let (oldest, head) = (log.oldest(), log.head());
    if start < oldest || end > head {
        return Err(ErrorData::resource_not_found(
            format!(
                "cursor_out_of_range: {start}-{end} is outside the retained range {oldest}-{head} of {port_name}; retention dropped it or it has not arrived"
            ),
            None,
        ));
    }
    let command = session.remembered(port_name, start, end).map(|o| o.command);
    let pagers: Vec<&[u8]> = gp.config.pagers.iter().map(|p| p.as_bytes()).collect();
    let mut cleaner = Cleaner::new(&CleanOptions {
        command: command.as_deref(),
        pagers: &pagers,
    });
    cleaner.reserve((end - start) as usize);
    // Cleaned from the log piece by piece: the raw range is never copied.
    let whole = log.feed_range(start, end, CLEAN_PIECE, |raw| cleaner.feed(raw));
    if !whole {
        return Err(ErrorData::resource_not_found(
            format!(
                "cursor_out_of_range: retention dropped the start of {start}-{end} of {port_name} while it was read"
            ),
            None,
        ));
    }
    let text = cleaner.finish();
    Ok(ReadResourceResult::new(vec![ResourceContents::text(
        text, uri,
    )]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip() {
        assert_eq!(
            parse_uri(&output_uri("core-sw1", 10, 20)),
            Some(("core-sw1", 10, 20))
        );
        assert_eq!(parse_uri("serialgate://ports/a/output/5-2"), None);
        assert_eq!(parse_uri("file:///etc/passwd"), None);
        assert_eq!(alerts_port("serialgate://ports/sw1/alerts"), Some("sw1"));
        assert_eq!(alerts_port("serialgate://ports//alerts"), None);
        assert_eq!(alerts_port("serialgate://ports/a/b/alerts"), Some("a/b"));
        assert_eq!(alerts_port("serialgate://ports/a/b/c/alerts"), None);
        assert_eq!(alerts_port("serialgate://ports/a//alerts"), None);
        assert_eq!(
            uri_port("serialgate://ports/dc1/sw1/output/3-9"),
            Some("dc1/sw1")
        );
        assert_eq!(
            renamed("serialgate://ports/sw1/output/3-9", "sw1", "dc1/sw1").as_deref(),
            Some("serialgate://ports/dc1/sw1/output/3-9")
        );
        assert_eq!(renamed("serialgate://ports/sw10/alerts", "sw1", "x"), None);
        assert_eq!(alerts_port("serialgate://ports/sw1/output/1-2"), None);
    }
}
