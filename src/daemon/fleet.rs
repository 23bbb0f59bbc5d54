//! Joining the fleet at start (`[fleet]`): the NATS connection, this
//! site's announcements, its alerts' stream, the calls and consoles of
//! other gateways on its ports, and for a serving gateway the directory
//! its doors show, the sites' alerts and the way its console doors reach
//! other sites' ports.

use tokio_util::sync::CancellationToken;

use crate::config::fleet::FleetConfig;
use crate::fleet::link::Fleet;
use crate::gateway::Gateway;

/// Starts the gateway of `config`, and when it joins a fleet, the queue
/// its ports' alerts go into for the site's stream ([`start`] sends them
/// on once joined; until then they wait, bounded).
pub fn start_gateway(
    config: crate::config::Config,
    shutdown: CancellationToken,
) -> (Gateway, Option<crate::fleet::alert_feed::Queue>) {
    let (hook, queue) = match config.fleet {
        Some(_) => {
            let (hook, queue) = crate::fleet::alert_feed::hook();
            (Some(hook), Some(queue))
        }
        None => (None, None),
    };
    (Gateway::start_telling(config, shutdown, hook), queue)
}

/// Joins the fleet the config in force names, if any. A change of
/// `[fleet]` takes effect at the next start ([`changes_kept`] says so
/// in the log at a reload).
pub async fn start(
    gateway: &Gateway,
    alerts: Option<crate::fleet::alert_feed::Queue>,
    shutdown: &CancellationToken,
) -> anyhow::Result<Option<Fleet>> {
    let Some(config) = gateway.config().fleet.clone() else {
        return Ok(None);
    };
    let fleet = Fleet::join(&config, shutdown.child_token()).await?;
    crate::fleet::announcer::start(
        fleet.client().clone(),
        config.site.clone(),
        gateway.clone(),
        shutdown.child_token(),
    );
    if let Some(queue) = alerts {
        crate::fleet::alert_feed::start(
            fleet.client().clone(),
            config.site.clone(),
            fleet.gateway.clone(),
            queue,
            shutdown.child_token(),
        );
    }
    crate::mcp::fleet_site::serve_calls(gateway.clone(), fleet.clone(), shutdown.child_token())
        .await
        .map_err(|e| anyhow::anyhow!("fleet: cannot take calls for site {}: {e}", config.site))?;
    crate::console::fleet_site::serve_consoles(
        gateway.clone(),
        fleet.clone(),
        shutdown.child_token(),
    )
    .await
    .map_err(|e| anyhow::anyhow!("fleet: cannot take consoles for site {}: {e}", config.site))?;
    if fleet.directory.is_some() {
        crate::console::fleet_feed::set_serving(crate::console::fleet_feed::RemoteConsoles::new(
            fleet.clone(),
        ));
    }
    tracing::info!(
        "fleet: site {} joined through {}{}",
        config.site,
        config.urls.join(", "),
        if config.serve {
            "; serving every site's ports"
        } else {
            ""
        }
    );
    Ok(Some(fleet))
}

/// What a reload asks of `[fleet]` that the running gateway keeps until
/// a restart, one sentence each for the log: the NATS connection (its
/// URLs, credentials and CA), the site's subjects and a serving
/// gateway's directory are made once, at start. The credentials are
/// named by their file, never shown.
pub fn changes_kept(running: Option<&FleetConfig>, new: Option<&FleetConfig>) -> Vec<String> {
    const RESTART: &str = "until a restart (systemctl restart serialgate)";
    let (old, new) = match (running, new) {
        (None, None) => return Vec::new(),
        (None, Some(new)) => {
            return vec![format!(
                "[fleet] added (site {}): this gateway joins no fleet {RESTART}",
                new.site
            )];
        }
        (Some(old), None) => {
            return vec![format!(
                "[fleet] removed: this gateway stays in the fleet as site {} {RESTART}",
                old.site
            )];
        }
        (Some(old), Some(new)) => (old, new),
    };
    let mut kept = Vec::new();
    if old.urls != new.urls {
        kept.push(format!(
            "[fleet] urls changed to {}: this gateway stays connected through {} {RESTART}",
            new.urls.join(", "),
            old.urls.join(", ")
        ));
    }
    if old.site != new.site {
        kept.push(format!(
            "[fleet] site changed to {}: this gateway stays site {} (its ports, its call subject) {RESTART}",
            new.site, old.site
        ));
    }
    let file = |f: &Option<std::path::PathBuf>| {
        f.as_ref()
            .map_or_else(|| "none".to_owned(), |p| format!("{}", p.display()))
    };
    if old.credentials_file != new.credentials_file || old.credentials != new.credentials {
        kept.push(format!(
            "[fleet] credentials changed ({}): the NATS connection keeps those it was made with ({}) {RESTART}",
            file(&new.credentials_file),
            file(&old.credentials_file)
        ));
    }
    if old.ca_file != new.ca_file {
        kept.push(format!(
            "[fleet] ca_file changed to {}: the NATS connection keeps trusting {} {RESTART}",
            file(&new.ca_file),
            file(&old.ca_file)
        ));
    }
    if old.serve != new.serve {
        kept.push(if new.serve {
            format!("[fleet] serve changed to true: this gateway serves no other site's ports {RESTART}")
        } else {
            format!("[fleet] serve changed to false: this gateway goes on serving every site's ports {RESTART}")
        });
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::fleet::FleetCredentials;

    fn fleet(site: &str, serve: bool) -> FleetConfig {
        FleetConfig {
            urls: vec!["nats://127.0.0.1:4222".into()],
            site: site.into(),
            credentials_file: Some("/etc/serialgate/hub.nk".into()),
            credentials: Some(FleetCredentials::Seed("SUAseed-one".into())),
            ca_file: None,
            serve,
        }
    }

    #[test]
    fn every_change_a_reload_cannot_make_is_said_and_no_secret_shown() {
        let old = fleet("hub", true);
        assert_eq!(
            changes_kept(Some(&old), Some(&old.clone())),
            Vec::<String>::new()
        );
        let mut new = fleet("hq", false);
        new.urls = vec!["tls://nats.example:4222".into()];
        new.credentials = Some(FleetCredentials::Seed("SUAseed-two".into()));
        new.ca_file = Some("/etc/serialgate/ca.pem".into());
        let kept = changes_kept(Some(&old), Some(&new));
        assert_eq!(kept.len(), 5, "{kept:#?}");
        for (said, what) in kept
            .iter()
            .zip(["urls", "site", "credentials", "ca_file", "serve"])
        {
            assert!(
                said.starts_with(&format!("[fleet] {what} changed"))
                    && said.ends_with("until a restart (systemctl restart serialgate)"),
                "{said}"
            );
            assert!(!said.contains("SUAseed"), "{said}");
        }
        assert!(kept[4].contains("goes on serving"), "{}", kept[4]);
        assert!(changes_kept(None, Some(&old))[0].starts_with("[fleet] added (site hub)"));
        assert!(changes_kept(Some(&old), None)[0].contains("stays in the fleet as site hub"));
        assert!(changes_kept(None, None).is_empty());
    }
}
