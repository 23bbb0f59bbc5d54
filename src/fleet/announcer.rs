//! A site gateway announcing its ports: at once, whenever its set of
//! ports changes, and every [`ANNOUNCE_EVERY`] (which also says it is
//! alive), so that a serving gateway knows a change within a second.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::directory::ANNOUNCE_EVERY;
use super::subjects;
use super::wire::{AnnouncedPort, Announcement, VERSION};
use crate::gateway::Gateway;

/// How long one publish may take before the announcement is skipped.
const PUBLISH_DEADLINE: Duration = Duration::from_secs(2);

/// What `gateway` announces now.
pub fn announcement(gateway: &Gateway) -> Announcement {
    Announcement {
        v: VERSION,
        ports: gateway
            .ports()
            .into_iter()
            .filter(|gp| !gp.adhoc)
            .map(|gp| AnnouncedPort {
                name: gp.port.name().to_owned(),
                state: gp.port.state(),
                preset: gp.config.preset.clone(),
                writer: gp.port.holder().map(|h| h.who),
                people: u32::try_from(gp.port.people().len()).unwrap_or(u32::MAX),
                waiting: u32::try_from(gp.port.approvals().waiting()).unwrap_or(u32::MAX),
                bytes_read: gp.port.log().head(),
                bytes_written: gp.port.bytes_written(),
            })
            .collect(),
    }
}

/// Announces `gateway`'s ports as `site` until `stop`.
pub fn start(client: async_nats::Client, site: String, gateway: Gateway, stop: CancellationToken) {
    tokio::spawn(async move {
        let subject = subjects::announcements(&site);
        let mut changed = gateway.watch_ports();
        let mut every = tokio::time::interval(ANNOUNCE_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                _ = every.tick() => {}
                r = changed.changed() => if r.is_err() { break },
            }
            let payload = match serde_json::to_vec(&announcement(&gateway)) {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!("fleet: cannot write the announcement: {e}");
                    continue;
                }
            };
            // While NATS is unreachable the client buffers; a publish that
            // cannot even be buffered in time is skipped (the next tick
            // says the same, newer).
            match tokio::time::timeout(
                PUBLISH_DEADLINE,
                client.publish(subject.clone(), payload.into()),
            )
            .await
            {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!("fleet: announcement not sent: {e}"),
                Err(_) => {
                    tracing::debug!("fleet: announcement not sent within {PUBLISH_DEADLINE:?}")
                }
            }
        }
    });
}
