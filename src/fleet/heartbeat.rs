//! A serving gateway's word, every [`EVERY`], to each site where its MCP
//! sessions keep sessions, that it still lives. A serving gateway killed
//! outright tells no site that its sessions ended: a site that has not
//! heard from it for [`SILENT`] ends them itself, with their connections
//! and write holds, so that another serving gateway's agents are not kept
//! `busy` by a gateway that is gone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::subjects;
use super::wire::{Alive, VERSION};

/// How often a serving gateway says that it lives.
pub const EVERY: Duration = Duration::from_secs(2);
/// How long a site waits without a word or a call from a serving gateway
/// before it takes the gateway for gone. A NATS outage as long ends the
/// gateway's sessions there too; its agents' next calls connect again.
pub const SILENT: Duration = Duration::from_secs(10);

/// The sites where this gateway's MCP sessions keep sessions, counted.
#[derive(Clone, Default)]
pub struct SitesInUse {
    counts: Arc<Mutex<HashMap<String, usize>>>,
}

/// One session's use of a site, counted while it lives.
pub struct InUse {
    sites: SitesInUse,
    site: String,
}

impl SitesInUse {
    /// Counts one more session keeping sessions at `site`, until the
    /// guard drops.
    pub fn hold(&self, site: &str) -> InUse {
        *crate::sync::lock(&self.counts)
            .entry(site.to_owned())
            .or_default() += 1;
        InUse {
            sites: self.clone(),
            site: site.to_owned(),
        }
    }

    /// The sites in use now.
    fn sites(&self) -> Vec<String> {
        crate::sync::lock(&self.counts).keys().cloned().collect()
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        let mut counts = crate::sync::lock(&self.sites.counts);
        if let Some(n) = counts.get_mut(&self.site) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.site);
            }
        }
    }
}

/// Says every [`EVERY`], as `gateway`, to each site of `sites`, that this
/// gateway lives, until `stop`.
pub fn start(
    client: async_nats::Client,
    gateway: String,
    sites: SitesInUse,
    stop: CancellationToken,
) {
    let payload = serde_json::to_vec(&Alive {
        v: VERSION,
        gateway,
    })
    .unwrap_or_default();
    crate::task::spawn(async move {
        let mut every = tokio::time::interval(EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                _ = every.tick() => {}
            }
            for site in sites.sites() {
                // Lost while NATS is away, as the site's silence allows.
                let _ = client
                    .publish(subjects::alive(&site), payload.clone().into())
                    .await;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_is_in_use_while_a_session_holds_it() {
        let sites = SitesInUse::default();
        let first = sites.hold("dc1");
        let second = sites.hold("dc1");
        let other = sites.hold("dc2");
        let mut now = sites.sites();
        now.sort();
        assert_eq!(now, ["dc1", "dc2"]);
        drop(first);
        drop(other);
        assert_eq!(sites.sites(), ["dc1"]);
        drop(second);
        assert!(sites.sites().is_empty());
    }
}
