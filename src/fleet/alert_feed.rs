//! A site's gateway giving the alerts of its configured watches to the
//! fleet: each goes, in the order raised, to the site's own JetStream
//! stream ([`subjects::alert_stream`], in the JetStream domain named after
//! the site, which the site's leaf `nats-server` runs), and the next is
//! sent only once the stream has stored it. While the site's NATS is
//! unreachable, alerts wait here in a bounded queue and the one at its
//! head is sent again with the same message id, which the stream's
//! duplicate window keeps from being stored twice. A serving gateway
//! reads the stream through the leaf link (`fleet/alert_inbox.rs`).
//!
//! A gateway for whose site no JetStream answers (a serving gateway on a
//! hub that runs none) says so once at start and offers its alerts to no
//! one: they stay its own agents', as any gateway's are.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_nats::jetstream::{self, context::CreateStreamErrorKind, stream};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio_util::sync::CancellationToken;

use super::subjects;
use super::wire::SiteAlert;
use crate::port::alerts::{Alert, AlertHook};

/// Alerts waiting for the stream at most; more are dropped and counted in
/// a log line (the port keeps them, and the `alerts` tool lists them).
pub const QUEUE: usize = 4096;
/// How long the stream may take to store one alert before it is sent
/// again.
const STORE_DEADLINE: Duration = Duration::from_secs(5);
/// First pause before sending again; it doubles up to [`PAUSE_MAX`].
const PAUSE_START: Duration = Duration::from_millis(250);
const PAUSE_MAX: Duration = Duration::from_secs(4);
/// Most alerts the stream keeps; the oldest go first.
const STREAM_MESSAGES: i64 = 100_000;
/// Most bytes the stream keeps.
const STREAM_BYTES: i64 = 64 * 1024 * 1024;

/// The queue an alert hook fills and [`start`] empties.
pub struct Queue(mpsc::Receiver<Alert>);

/// A hook that queues every alert of a configured watch for the fleet
/// without waiting, and the queue it fills.
pub fn hook() -> (AlertHook, Queue) {
    let (tx, rx) = mpsc::channel::<Alert>(QUEUE);
    let dropped = AtomicU64::new(0);
    let hook: AlertHook = Arc::new(move |alert: &Alert| {
        // Closed: no JetStream answers for the site, which was said once.
        if let Err(TrySendError::Full(_)) = tx.try_send(alert.clone()) {
            // Said at the 1st, 2nd, 4th, 8th… drop: a port raising alerts
            // in a loop while the site is cut off does not flood the log.
            let n = dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(
                    "fleet: alert {} of {} not given to the fleet: {QUEUE} alerts wait for the site's stream already ({n} not given so far)",
                    alert.id,
                    alert.port
                );
            }
        }
    });
    (hook, Queue(rx))
}

/// The stream's config: the site's alerts, on file, bounded.
fn stream_config(site: &str) -> stream::Config {
    stream::Config {
        name: subjects::alert_stream(site),
        subjects: vec![subjects::alerts(site)],
        storage: stream::StorageType::File,
        max_messages: STREAM_MESSAGES,
        max_bytes: STREAM_BYTES,
        discard: stream::DiscardPolicy::Old,
        ..Default::default()
    }
}

/// Sends the alerts of `queue` to `site`'s stream until `stop`; `gateway`
/// (this process's fleet name) makes their message ids unique.
pub fn start(
    client: async_nats::Client,
    site: String,
    gateway: String,
    queue: Queue,
    stop: CancellationToken,
) {
    let Queue(mut queue) = queue;
    crate::task::spawn(async move {
        let js = jetstream::with_domain(client, &site);
        let subject = subjects::alerts(&site);
        // Made at once, so that a serving gateway finds it before the
        // first alert; else at the first alert.
        let mut stream_ready = match make_stream(&js, &site).await {
            Ok(()) => true,
            Err(NoStream::Absent) => {
                tracing::info!(
                    "fleet: the alerts of site {site}'s own ports are not offered to other serving gateways: no JetStream answers for site {site} (JetStream domain {site:?}); this gateway's own agents get them as before"
                );
                // The hook finds the queue closed and drops each alert
                // quietly.
                return;
            }
            Err(NoStream::Failed(_)) => false,
        };
        loop {
            let alert = tokio::select! {
                () = stop.cancelled() => break,
                a = queue.recv() => match a {
                    Some(a) => a,
                    None => break,
                },
            };
            let Ok(payload) = serde_json::to_vec(&SiteAlert::of(&alert)) else {
                continue;
            };
            let id = format!("{gateway}-{}-{}", alert.port, alert.id);
            let mut pause = PAUSE_START;
            let mut said = false;
            loop {
                match store(&js, &site, &mut stream_ready, &subject, &id, &payload).await {
                    Ok(()) => {
                        if said {
                            tracing::info!(
                                "fleet: alert {} of {} is in site {site}'s stream",
                                alert.id,
                                alert.port
                            );
                        }
                        break;
                    }
                    Err(e) => {
                        stream_ready = false;
                        if !said {
                            tracing::warn!(
                                "fleet: alert {} of {} waits for site {site}'s stream: {e}",
                                alert.id,
                                alert.port
                            );
                            said = true;
                        }
                    }
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(pause) => {}
                }
                pause = (pause * 2).min(PAUSE_MAX);
            }
        }
    });
}

/// Why the site's stream is not there.
enum NoStream {
    /// No JetStream answers for the site's domain at all (NATS says there
    /// are no responders): the site's NATS server runs none.
    Absent,
    /// It could not be made now (no answer in time, NATS unreachable…).
    Failed(String),
}

impl std::fmt::Display for NoStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoStream::Absent => write!(f, "no JetStream answers for the site"),
            NoStream::Failed(why) => f.write_str(why),
        }
    }
}

/// Makes the site's stream in its JetStream domain, unless it is there.
async fn make_stream(js: &jetstream::Context, site: &str) -> Result<(), NoStream> {
    match tokio::time::timeout(STORE_DEADLINE, js.get_or_create_stream(stream_config(site))).await {
        Err(_) => Err(NoStream::Failed(format!(
            "no answer from JetStream domain {site} within {STORE_DEADLINE:?}"
        ))),
        Ok(Err(e)) if e.kind() == CreateStreamErrorKind::JetStreamUnavailable => {
            Err(NoStream::Absent)
        }
        Ok(Err(e)) => Err(NoStream::Failed(format!(
            "the stream cannot be made in JetStream domain {site}: {e}"
        ))),
        Ok(Ok(_)) => Ok(()),
    }
}

/// Stores one alert in the stream (made first if need be), within
/// deadlines.
async fn store(
    js: &jetstream::Context,
    site: &str,
    stream_ready: &mut bool,
    subject: &str,
    id: &str,
    payload: &[u8],
) -> Result<(), String> {
    if !*stream_ready {
        make_stream(js, site).await.map_err(|e| e.to_string())?;
        *stream_ready = true;
    }
    let publish = jetstream::message::PublishMessage::build()
        .payload(payload.to_vec().into())
        .message_id(id);
    let ack = tokio::time::timeout(STORE_DEADLINE, async {
        js.send_publish(subject.to_owned(), publish)
            .await
            .map_err(|e| e.to_string())?
            .await
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|_| format!("not stored within {STORE_DEADLINE:?}"))??;
    if ack.stream != subjects::alert_stream(site) {
        return Err(format!("stored by stream {}, not the site's", ack.stream));
    }
    Ok(())
}
