//! A serving gateway receiving every site's alerts from the site's own
//! JetStream stream, through the leaf link (`$JS.<SITE>.API…`), with a
//! durable pull consumer named after the serving gateway's site: each
//! alert is kept here (the newest [`MAX_KEPT`] of each `site/port`), wakes
//! whoever subscribed to that port's alerts resource, and only then is
//! acknowledged, and the stream confirms the ack before the next is
//! taken. So an alert raised while its site was cut off arrives once it
//! is back, and one acknowledged is never delivered again, even to this
//! gateway started anew (the consumer's place is kept by the site's
//! stream, not here). An alert the stream sends again (an ack lost on the
//! way) is known by its stream sequence and not kept twice.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::{self, consumer};
use futures_util::StreamExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::directory::{ANNOUNCE_EVERY, Directory, MAX_SITES};
use super::subjects;
use super::wire::read_alert;
use crate::port::alerts::Alert;

/// Alerts kept per remote port; the oldest go first, counted.
pub const MAX_KEPT: usize = 256;
/// Remote ports whose alerts are kept at most.
const MAX_PORTS: usize = 16 * 1024;
/// How long one request to a site's JetStream may take.
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// How often a pull waiting for alerts is told the site is alive: two
/// missed, the pull is made anew (the site was cut off meanwhile).
const HEARTBEAT: Duration = Duration::from_secs(2);
/// How long one pull lasts before the next is sent.
const PULL_EXPIRES: Duration = Duration::from_secs(10);
/// Longest pause between two attempts to reach a site's stream.
const PAUSE_MAX: Duration = Duration::from_secs(4);

/// One remote port's alerts as delivered here.
struct Kept {
    alerts: VecDeque<Alert>,
    /// Alerts delivered here since this gateway started.
    total: u64,
    /// Those pushed out of `alerts`.
    dropped: u64,
    /// Bumped with every alert delivered.
    changed: watch::Sender<u64>,
}

impl Kept {
    fn new() -> Kept {
        Kept {
            alerts: VecDeque::new(),
            total: 0,
            dropped: 0,
            changed: watch::Sender::new(0),
        }
    }
}

/// What the alerts resource of a remote port shows.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Delivered {
    /// Alerts delivered here since this gateway started.
    pub total: u64,
    /// Those no longer kept.
    pub dropped: u64,
    /// The newest, oldest first.
    pub alerts: Vec<Alert>,
}

/// The alerts of every remote port delivered to this serving gateway; a
/// cheap clonable handle.
#[derive(Clone, Default)]
pub struct AlertInbox {
    ports: Arc<Mutex<HashMap<String, Kept>>>,
}

impl AlertInbox {
    /// Keeps `alert` (its port is `site/port`) and wakes the port's
    /// subscribers; `false` when this gateway keeps too many ports.
    fn deliver(&self, alert: Alert) -> bool {
        let mut ports = crate::sync::lock(&self.ports);
        if !ports.contains_key(&alert.port) && ports.len() >= MAX_PORTS {
            return false;
        }
        let kept = ports.entry(alert.port.clone()).or_insert_with(Kept::new);
        kept.total += 1;
        kept.alerts.push_back(alert);
        if kept.alerts.len() > MAX_KEPT {
            kept.alerts.pop_front();
            kept.dropped += 1;
        }
        let total = kept.total;
        kept.changed.send_replace(total);
        true
    }

    /// A receiver woken by every alert of `port` (`site/port`) delivered
    /// from now on; `None` when this gateway keeps too many ports.
    pub fn subscribe(&self, port: &str) -> Option<watch::Receiver<u64>> {
        let mut ports = crate::sync::lock(&self.ports);
        if !ports.contains_key(port) && ports.len() >= MAX_PORTS {
            return None;
        }
        let mut changed = ports
            .entry(port.to_owned())
            .or_insert_with(Kept::new)
            .changed
            .subscribe();
        changed.mark_unchanged();
        Some(changed)
    }

    /// The newest `n` alerts of `port` delivered here.
    pub fn newest(&self, port: &str, n: usize) -> Delivered {
        let ports = crate::sync::lock(&self.ports);
        match ports.get(port) {
            Some(kept) => Delivered {
                total: kept.total,
                dropped: kept.dropped,
                alerts: kept
                    .alerts
                    .iter()
                    .skip(kept.alerts.len().saturating_sub(n))
                    .cloned()
                    .collect(),
            },
            None => Delivered {
                total: 0,
                dropped: 0,
                alerts: Vec::new(),
            },
        }
    }

    /// Reads every site's alert stream the directory knows of (but
    /// `own_site`'s, whose alerts are local) as the durable consumer
    /// `own_site`, until `stop`.
    pub fn start(
        &self,
        client: async_nats::Client,
        directory: Directory,
        own_site: String,
        stop: CancellationToken,
    ) {
        let inbox = self.clone();
        crate::task::spawn(async move {
            let mut reading = HashSet::new();
            let mut every = tokio::time::interval(ANNOUNCE_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    _ = every.tick() => {}
                }
                for site in directory.sites() {
                    if site.name == own_site
                        || reading.len() >= MAX_SITES
                        || !reading.insert(site.name.clone())
                    {
                        continue;
                    }
                    let reader = SiteReader {
                        js: jetstream::with_domain(client.clone(), &site.name),
                        site: site.name,
                        durable: own_site.clone(),
                        inbox: inbox.clone(),
                    };
                    crate::task::spawn(reader.run(stop.clone()));
                }
            }
        });
    }
}

/// Reads one site's stream.
struct SiteReader {
    js: jetstream::Context,
    site: String,
    durable: String,
    inbox: AlertInbox,
}

impl SiteReader {
    /// Reads until `stop`, starting again after every failure (the site
    /// cut off, its stream not there yet) with a pause doubling to
    /// [`PAUSE_MAX`].
    async fn run(self, stop: CancellationToken) {
        let mut pause = Duration::from_millis(250);
        let mut last_sequence = 0;
        let mut said = String::new();
        loop {
            let read = tokio::select! {
                () = stop.cancelled() => return,
                r = self.read(&mut last_sequence, &mut pause) => r,
            };
            if let Err(e) = read
                && e != said
            {
                // Said once, not at every attempt while the site is away.
                tracing::info!(
                    "fleet: site {}'s alerts are not read now: {e}; trying again",
                    self.site
                );
                said = e;
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(pause) => {}
            }
            pause = (pause * 2).min(PAUSE_MAX);
        }
    }

    /// Binds the durable consumer (made at the first start) and delivers
    /// what it gives, acknowledging each; returns when the pull fails.
    async fn read(&self, last_sequence: &mut u64, pause: &mut Duration) -> Result<(), String> {
        let stream = tokio::time::timeout(
            REQUEST_DEADLINE,
            self.js.get_stream(subjects::alert_stream(&self.site)),
        )
        .await
        .map_err(|_| format!("no answer within {REQUEST_DEADLINE:?}"))?
        .map_err(|e| format!("its stream: {e}"))?;
        let config = consumer::pull::Config {
            durable_name: Some(self.durable.clone()),
            description: Some(format!(
                "serialgate: the alerts delivered to the serving gateways of site {}",
                self.durable
            )),
            ack_policy: consumer::AckPolicy::Explicit,
            deliver_policy: consumer::DeliverPolicy::All,
            ..Default::default()
        };
        let consumer: consumer::PullConsumer = tokio::time::timeout(
            REQUEST_DEADLINE,
            stream.get_or_create_consumer(&self.durable, config),
        )
        .await
        .map_err(|_| format!("no answer within {REQUEST_DEADLINE:?}"))?
        .map_err(|e| format!("its consumer {}: {e}", self.durable))?;
        let mut messages = consumer
            .stream()
            .heartbeat(HEARTBEAT)
            .expires(PULL_EXPIRES)
            .messages()
            .await
            .map_err(|e| format!("pulling: {e}"))?;
        tracing::info!("fleet: reading site {}'s alerts from its stream", self.site);
        *pause = Duration::from_millis(250);
        while let Some(message) = messages.next().await {
            let message = message.map_err(|e| format!("pulling: {e}"))?;
            let (sequence, delivered) = message
                .info()
                .map(|i| (i.stream_sequence, i.delivered))
                .unwrap_or((0, 1));
            // Sent again, and kept already by this process (its ack was
            // lost): acknowledged, not kept twice. A first delivery is
            // always kept (a stream made anew numbers from 1 again).
            if delivered <= 1 || sequence > *last_sequence {
                match read_alert(&self.site, &message.payload) {
                    Ok(alert) => {
                        tracing::info!(
                            "fleet: alert {} ({}) of {} delivered from site {}'s stream",
                            crate::error::label(&alert.watch),
                            alert.severity.as_str(),
                            alert.port,
                            self.site
                        );
                        if !self.inbox.deliver(alert) {
                            tracing::warn!(
                                "fleet: an alert of site {} is not kept: this gateway keeps the alerts of {MAX_PORTS} ports",
                                self.site
                            );
                        }
                    }
                    // Why, quoted: a parse error repeats the site's text.
                    Err(e) => tracing::warn!(
                        "fleet: dropped an alert of site {}: {}",
                        self.site,
                        crate::error::shown(&e)
                    ),
                }
                *last_sequence = sequence;
            }
            tokio::time::timeout(REQUEST_DEADLINE, message.double_ack())
                .await
                .map_err(|_| format!("the ack was not confirmed within {REQUEST_DEADLINE:?}"))?
                .map_err(|e| format!("the ack: {e}"))?;
        }
        Err("the pull ended".into())
    }
}

/// Each port's kept alert ids (for tests).
#[cfg(test)]
fn by_port(inbox: &AlertInbox) -> std::collections::BTreeMap<String, Vec<u64>> {
    crate::sync::lock(&inbox.ports)
        .iter()
        .map(|(p, k)| (p.clone(), k.alerts.iter().map(|a| a.id).collect()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::watches::Severity;

    fn alert(port: &str, id: u64) -> Alert {
        Alert {
            id,
            port: port.into(),
            watch: "crash".into(),
            severity: Severity::Critical,
            at_unix_ms: 0,
            text: "boom".into(),
            start: 0,
            end: 4,
            session_watch: false,
        }
    }

    #[test]
    fn delivered_alerts_are_kept_per_port_and_wake_its_subscribers() {
        let inbox = AlertInbox::default();
        let woken = inbox.subscribe("dc1/sw1").unwrap();
        assert!(!woken.has_changed().unwrap());
        for id in 1..=(MAX_KEPT as u64 + 2) {
            assert!(inbox.deliver(alert("dc1/sw1", id)));
        }
        inbox.deliver(alert("dc2/sw1", 1));
        assert!(woken.has_changed().unwrap());
        let shown = inbox.newest("dc1/sw1", 2);
        assert_eq!(shown.total, MAX_KEPT as u64 + 2);
        assert_eq!(shown.dropped, 2);
        assert_eq!(
            shown.alerts.iter().map(|a| a.id).collect::<Vec<_>>(),
            [MAX_KEPT as u64 + 1, MAX_KEPT as u64 + 2]
        );
        assert_eq!(by_port(&inbox)["dc2/sw1"], [1]);
        assert_eq!(inbox.newest("dc3/none", 5).total, 0);
    }
}
