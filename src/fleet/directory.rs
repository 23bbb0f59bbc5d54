//! A serving gateway's directory of the fleet: every site's ports as it
//! last announced them, and when it was last heard. A site not heard for
//! [`UNREACHABLE_AFTER`] is `unreachable` since its last announcement: its
//! ports show so, and calls to them fail at once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio_util::sync::CancellationToken;

use super::each_message::each_message;
use super::subjects;
use super::wire::{AnnouncedPort, read_announcement};
use crate::error::{ErrorCode, GateError};

/// How often a site announces its ports when nothing changes.
pub const ANNOUNCE_EVERY: Duration = Duration::from_secs(1);
/// A site silent this long is `unreachable`: three announcements missed.
pub const UNREACHABLE_AFTER: Duration = Duration::from_secs(3);
/// Most sites one serving gateway keeps; announcements of more are
/// dropped and counted.
pub const MAX_SITES: usize = 1024;

/// One site as the directory knows it.
#[derive(Debug, Clone)]
pub struct Site {
    /// The site's name (from the subject it announced on).
    pub name: String,
    /// Its ports, cleaned; shared by every copy of the site, so that a
    /// list of the whole fleet copies no port.
    pub ports: Arc<Vec<AnnouncedPort>>,
    /// When it was last heard (monotonic).
    last_seen: Instant,
    /// The same moment on the wall clock, for messages.
    pub last_seen_at: SystemTime,
}

impl Site {
    /// Whether the site has been silent past [`UNREACHABLE_AFTER`].
    pub fn unreachable(&self) -> bool {
        self.last_seen.elapsed() > UNREACHABLE_AFTER
    }

    /// Since when the site is silent, in RFC 3339.
    pub fn since(&self) -> String {
        humantime::format_rfc3339_seconds(self.last_seen_at).to_string()
    }
}

/// The directory; a cheap clonable handle.
#[derive(Clone, Default)]
pub struct Directory {
    sites: Arc<Mutex<BTreeMap<String, Site>>>,
}

impl Directory {
    /// Keeps what `site` announced (already bounded and cleaned), unless
    /// the directory is full of other sites.
    pub fn heard(&self, site: &str, ports: Vec<AnnouncedPort>) -> bool {
        let mut sites = crate::sync::lock(&self.sites);
        if sites.len() >= MAX_SITES && !sites.contains_key(site) {
            return false;
        }
        sites.insert(
            site.to_owned(),
            Site {
                name: site.to_owned(),
                ports: Arc::new(ports),
                last_seen: Instant::now(),
                last_seen_at: SystemTime::now(),
            },
        );
        true
    }

    /// Every site, by name.
    pub fn sites(&self) -> Vec<Site> {
        crate::sync::lock(&self.sites).values().cloned().collect()
    }

    /// Whether `site` announced a port `port` when last heard, reachable
    /// now or not.
    pub fn announced(&self, site: &str, port: &str) -> bool {
        crate::sync::lock(&self.sites)
            .get(site)
            .is_some_and(|s| s.ports.iter().any(|p| p.name == port))
    }

    /// The port `port` of `site`, if the site is reachable and announced
    /// it; else `port_unavailable` saying which and since when.
    pub fn reachable_port(&self, site: &str, port: &str) -> Result<AnnouncedPort, GateError> {
        let sites = crate::sync::lock(&self.sites);
        let Some(known) = sites.get(site) else {
            return Err(GateError::new(
                ErrorCode::PortUnavailable,
                format!(
                    "no site named {} has announced itself to this gateway; list_ports shows the sites and ports it knows",
                    crate::error::shown(site)
                ),
            ));
        };
        if known.unreachable() {
            return Err(GateError::new(
                ErrorCode::PortUnavailable,
                format!(
                    "site {site} is unreachable since {} (its gateway's announcements stopped); its ports keep capturing there, try again when list_ports shows it back",
                    known.since()
                ),
            ));
        }
        known
            .ports
            .iter()
            .find(|p| p.name == port)
            .cloned()
            .ok_or_else(|| {
                GateError::new(
                    ErrorCode::PortUnavailable,
                    format!(
                        "site {site} has no port named {}; list_ports shows its ports",
                        crate::error::shown(port)
                    ),
                )
            })
    }

    /// Since when `site` is silent (RFC 3339), when it is unreachable: a
    /// call waiting there is given up (`mcp/fleet_forward.rs`).
    pub fn unreachable_since(&self, site: &str) -> Option<String> {
        let sites = crate::sync::lock(&self.sites);
        sites
            .get(site)
            .filter(|known| known.unreachable())
            .map(Site::since)
    }

    /// Listens to every other site's announcements until `stop` (its
    /// own, `own_site`, it knows better), keeping what each says; what is
    /// dropped is counted in a log line.
    pub async fn listen(
        self,
        client: async_nats::Client,
        own_site: String,
        stop: CancellationToken,
    ) -> Result<(), async_nats::SubscribeError> {
        let heard = client.subscribe(subjects::ALL_ANNOUNCEMENTS).await?;
        each_message(heard, stop, move |message| {
            self.hear(&own_site, &message);
            std::future::ready(())
        });
        Ok(())
    }

    /// Keeps what one announcement on `message` says, unless it is
    /// `own_site`'s; what is dropped is logged.
    fn hear(&self, own_site: &str, message: &async_nats::Message) {
        let Some(site) = subjects::announcing_site(message.subject.as_str())
            .filter(|s| crate::config::fleet::check_site(s).is_ok())
        else {
            tracing::warn!(
                "fleet: dropped an announcement on {}: no site name",
                crate::error::shown(message.subject.as_str())
            );
            return;
        };
        if site == own_site {
            return;
        }
        match read_announcement(&message.payload) {
            Ok(read) => {
                if read.dropped > 0 {
                    tracing::warn!(
                        "fleet: site {site} announced {} port(s) this gateway does not show (bad names, or more than it keeps)",
                        read.dropped
                    );
                }
                if !self.heard(site, read.ports) {
                    tracing::warn!(
                        "fleet: dropped the announcement of site {site}: this gateway keeps {MAX_SITES} sites"
                    );
                }
            }
            Err(e) => tracing::warn!("fleet: dropped an announcement of site {site}: {e}"),
        }
    }
}
