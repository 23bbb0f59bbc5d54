//! Joining the fleet at start (`[fleet]`): the NATS connection, this
//! site's announcements, its alerts' stream, the calls and consoles of
//! other gateways on its ports, and for a serving gateway the directory
//! its doors show, the sites' alerts and the way its console doors reach
//! other sites' ports.

use tokio_util::sync::CancellationToken;

use crate::fleet::link::Fleet;
use crate::gateway::Gateway;

/// Joins the fleet the config in force names, if any. A change of
/// `[fleet]` takes effect at the next start.
pub async fn start(
    gateway: &Gateway,
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
    if let Some(queue) = gateway.take_fleet_alerts() {
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
        gateway.set_fleet_consoles(crate::console::fleet_feed::RemoteConsoles::new(
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
