//! A site gateway announcing its ports: at once, whenever its set of
//! ports changes, and every [`ANNOUNCE_EVERY`] (which also says it is
//! alive), so that a serving gateway knows a change within a second. Each
//! port goes with its state, holder, people, byte counts, waiting lines
//! and the last line of its output: what a ports page shows of it.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::directory::ANNOUNCE_EVERY;
use super::subjects;
use super::wire::{AnnouncedPort, Announcement, MAX_ANNOUNCEMENT, VERSION};
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
                last_line: gp.port.last_line(),
            })
            .collect(),
    }
}

/// `announcement` as it is sent: without the ports' last lines if with
/// them it would be more than a serving gateway reads, so that a site of
/// many ports is still heard.
pub fn payload(mut announcement: Announcement) -> serde_json::Result<Vec<u8>> {
    let whole = serde_json::to_vec(&announcement)?;
    if whole.len() <= MAX_ANNOUNCEMENT {
        return Ok(whole);
    }
    for port in &mut announcement.ports {
        port.last_line = String::new();
    }
    serde_json::to_vec(&announcement)
}

/// Announces `gateway`'s ports as `site` until `stop`.
pub fn start(client: async_nats::Client, site: String, gateway: Gateway, stop: CancellationToken) {
    crate::task::spawn(async move {
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
            let payload = match payload(announcement(&gateway)) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::port::PortState;
    use crate::port::tail::LAST_LINE_CHARS;

    fn port(name: String, last_line: String) -> AnnouncedPort {
        AnnouncedPort {
            name,
            state: PortState::Open,
            preset: "cisco-ios".into(),
            writer: None,
            people: 0,
            waiting: 0,
            bytes_read: 0,
            bytes_written: 0,
            last_line,
        }
    }

    #[test]
    fn a_site_of_many_ports_is_still_heard_without_their_last_lines() {
        let few = Announcement {
            v: VERSION,
            ports: vec![port("sw1".into(), "SW1#".into())],
        };
        let heard = crate::fleet::wire::read_announcement(&payload(few).unwrap()).unwrap();
        assert_eq!(heard.ports[0].last_line, "SW1#");

        // A thousand ports whose last lines are as long as they may be,
        // in characters of four bytes each.
        let many = Announcement {
            v: VERSION,
            ports: (0..1000)
                .map(|i| port(format!("port-{i}"), "𝔛".repeat(LAST_LINE_CHARS)))
                .collect(),
        };
        let sent = payload(many).unwrap();
        assert!(sent.len() <= MAX_ANNOUNCEMENT, "{} bytes", sent.len());
        let heard = crate::fleet::wire::read_announcement(&sent).unwrap();
        assert_eq!(heard.ports.len(), 1000);
        assert!(heard.ports.iter().all(|p| p.last_line.is_empty()));
    }
}
