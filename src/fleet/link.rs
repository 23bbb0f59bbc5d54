//! The gateway's connection to the fleet's NATS servers, made from
//! `[fleet]`, and the handle the doors use: this gateway's site and name,
//! the directory when it serves, and forwarded calls with a deadline.

use std::time::Duration;

use async_nats::{ConnectOptions, ServerAddr};
use tokio_util::sync::CancellationToken;

use super::alert_inbox::AlertInbox;
use super::directory::Directory;
use super::heartbeat::{self, SitesInUse};
use super::in_flight::{Full, InFlight, Limits};
use super::subjects;
use super::wire::{CallAnswer, ForwardedCall, MAX_CALL};
use crate::config::fleet::{FleetConfig, FleetCredentials};
use crate::error::{ErrorCode, GateError};

/// How long the first connection may take before the daemon goes on
/// without it (it keeps trying in the background).
pub const CONNECT_DEADLINE: Duration = Duration::from_secs(5);

/// Most calls this gateway forwards to one site at once: a site whose
/// switch answers slowly, or that is flooded, holds at most these, and
/// the other sites' calls go on as before. One token may have a quarter
/// of them, the read-only tokens together half and with the write tokens
/// three quarters, so that neither one token's flood nor many readers' or
/// writers' starve the calls of a token above them.
pub const FORWARD_LIMITS: Limits = Limits {
    total: 128,
    per_token: 32,
};

/// This gateway in the fleet. A cheap clonable handle.
#[derive(Clone)]
pub struct Fleet {
    client: async_nats::Client,
    /// This gateway's site.
    pub site: String,
    /// This gateway's name in the fleet, for the sites' audit trails and
    /// their sessions of it: its site, its process and a number drawn at
    /// start (`hub:4711-9f3a2c1b`), so that a gateway started again is
    /// told from the one before even with the same pid (a container's 1).
    pub gateway: String,
    /// The fleet's ports, when this gateway serves them.
    pub directory: Option<Directory>,
    /// The remote ports' alerts delivered here, when this gateway serves
    /// the fleet.
    pub alerts: Option<AlertInbox>,
    /// The calls forwarded and not answered yet, by site and token.
    in_flight: InFlight,
    /// The sites where this gateway's MCP sessions keep sessions, told
    /// that it lives (`fleet/heartbeat.rs`).
    pub in_use: SitesInUse,
}

/// The options of a connection as `[fleet]` asks for it.
fn options(config: &FleetConfig) -> Result<ConnectOptions, String> {
    let mut options = match &config.credentials {
        None => ConnectOptions::new(),
        Some(FleetCredentials::Creds(text)) => ConnectOptions::with_credentials(text)
            .map_err(|e| format!("the credentials file does not read as a .creds file: {e}"))?,
        Some(FleetCredentials::Seed(seed)) => ConnectOptions::new().nkey(seed.to_string()),
    };
    if config.urls.iter().any(|u| u.starts_with("tls://")) {
        options = options.require_tls(true);
        if let Some(ca) = &config.ca_file {
            options = options.add_root_certificates(ca.clone());
        }
    }
    Ok(options
        .name(format!("serialgate {}", config.site))
        .connection_timeout(CONNECT_DEADLINE)
        .request_timeout(Some(Duration::from_secs(30)))
        // A site cut off keeps trying for as long as it runs.
        .max_reconnects(None)
        .retry_on_initial_connect()
        .event_callback(|event| async move {
            match event {
                async_nats::Event::Connected => tracing::info!("fleet: connected to NATS"),
                async_nats::Event::Disconnected => {
                    tracing::warn!("fleet: disconnected from NATS; reconnecting")
                }
                other => tracing::warn!("fleet: NATS: {other}"),
            }
        }))
}

/// This process's name in the fleet (see [`Fleet::gateway`]).
fn incarnation(site: &str) -> String {
    let drawn = getrandom::u32().unwrap_or_else(|_| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    });
    format!("{site}:{}-{drawn:08x}", std::process::id())
}

/// The site a gateway's fleet name (`site:pid-number`) belongs to.
pub fn site_of(gateway: &str) -> &str {
    gateway.split_once(':').map_or(gateway, |(site, _)| site)
}

impl Fleet {
    /// Joins the fleet `config` describes: connects (retrying in the
    /// background), and when it serves, listens to every site's
    /// announcements. Nothing of a site's own work waits for NATS.
    pub async fn join(config: &FleetConfig, stop: CancellationToken) -> anyhow::Result<Fleet> {
        let addrs: Vec<ServerAddr> = config
            .urls
            .iter()
            .map(|u| u.parse::<ServerAddr>())
            .collect::<Result<_, _>>()
            .map_err(|e| anyhow::anyhow!("fleet.urls: {e}"))?;
        let client = options(config)
            .map_err(|e| anyhow::anyhow!("fleet.credentials: {e}"))?
            .connect(addrs)
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "fleet: cannot reach NATS at {}: {e}",
                    config.urls.join(", ")
                )
            })?;
        let (directory, alerts) = if config.serve {
            let directory = Directory::default();
            directory
                .clone()
                .listen(client.clone(), config.site.clone(), stop.clone())
                .await
                .map_err(|e| anyhow::anyhow!("fleet: cannot hear the sites' announcements: {e}"))?;
            let alerts = AlertInbox::default();
            alerts.start(
                client.clone(),
                directory.clone(),
                config.site.clone(),
                stop.clone(),
            );
            (Some(directory), Some(alerts))
        } else {
            (None, None)
        };
        let gateway = incarnation(&config.site);
        let in_use = SitesInUse::default();
        if config.serve {
            heartbeat::start(client.clone(), gateway.clone(), in_use.clone(), stop);
        }
        Ok(Fleet {
            client,
            site: config.site.clone(),
            gateway,
            directory,
            alerts,
            in_flight: InFlight::default(),
            in_use,
        })
    }

    /// The NATS client, for the tasks of the fleet (announcing, serving
    /// calls).
    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }

    /// Asks a site's console subject `subject` with `body` as JSON and
    /// waits at most `deadline` for its answer; a request that fails is
    /// `port_unavailable`, its message `failing` and NATS's reason.
    pub async fn ask_console<T: serde::Serialize>(
        &self,
        subject: String,
        body: &T,
        deadline: Duration,
        failing: &str,
    ) -> Result<async_nats::Message, GateError> {
        let payload = serde_json::to_vec(body).map_err(|e| GateError::invalid(e.to_string()))?;
        let request = async_nats::Request::new()
            .payload(payload.into())
            .timeout(Some(deadline));
        self.client
            .send_request(subject, request)
            .await
            .map_err(|e| GateError::new(ErrorCode::PortUnavailable, format!("{failing}: {e}")))
    }

    /// Sends `call` to `site` and waits at most `deadline` for its answer.
    /// A site nobody answers for fails at once (NATS says there are no
    /// responders); one that does not answer in time is `timeout`; a call
    /// beyond [`FORWARD_LIMITS`] is `busy` at once, without a request.
    pub async fn forward(
        &self,
        site: &str,
        call: &ForwardedCall,
        deadline: Duration,
    ) -> Result<CallAnswer, GateError> {
        let _slot = self
            .in_flight
            .start(site, &call.token, call.access, &FORWARD_LIMITS)
            .map_err(|full| self.busy(site, &call.token, full))?;
        let payload = serde_json::to_vec(call).map_err(|e| {
            GateError::new(
                ErrorCode::InvalidArgument,
                format!("the call cannot be forwarded: {e}"),
            )
        })?;
        if payload.len() > MAX_CALL {
            return Err(GateError::invalid(format!(
                "the call's arguments are {} bytes, more than the {MAX_CALL} a call through the fleet may have",
                payload.len()
            )));
        }
        let request = async_nats::Request::new()
            .payload(payload.into())
            .timeout(Some(deadline));
        let answer = self
            .client
            .send_request(subjects::calls(site), request)
            .await
            .map_err(|e| match e.kind() {
                async_nats::RequestErrorKind::NoResponders => GateError::new(
                    ErrorCode::PortUnavailable,
                    format!("site {site}'s gateway is not answering through the fleet (no responders); try again when list_ports shows the site back"),
                ),
                async_nats::RequestErrorKind::TimedOut => GateError::new(
                    ErrorCode::Timeout,
                    format!("site {site} did not answer within {deadline:?}; the call may still have run there (read_output shows what the device did)"),
                ),
                _ => GateError::new(
                    ErrorCode::PortUnavailable,
                    format!("the call could not reach site {site}: {e}"),
                ),
            })?;
        if answer.payload.len() > MAX_CALL {
            return Err(GateError::new(
                ErrorCode::PortUnavailable,
                format!(
                    "site {site} answered with {} bytes, more than {MAX_CALL}",
                    answer.payload.len()
                ),
            ));
        }
        serde_json::from_slice(&answer.payload).map_err(|e| {
            GateError::new(
                ErrorCode::PortUnavailable,
                format!("site {site} answered with something that is no answer: {e}"),
            )
        })
    }

    /// The `busy` refusal of a call of `token` to `site` that would pass
    /// the bound `full`, logged at the 1st, 2nd, 4th… refusal.
    fn busy(&self, site: &str, token: &str, full: Full) -> GateError {
        let why = match full {
            Full::Token(n) => format!(
                "token {token:?} has {n} calls to site {site} in flight through this gateway, the most one token may have"
            ),
            Full::Access { access, share } => format!(
                "tokens of {} access (and weaker) have {share} calls to site {site} in flight through this gateway, the most they may have together (the rest is kept for the tokens above them)",
                access.name()
            ),
            Full::Total(n) => format!(
                "{n} calls to site {site} are in flight through this gateway, the most one site may have"
            ),
        };
        if let Some(n) = self.in_flight.refused_to_log() {
            tracing::warn!("fleet: a call refused as busy: {why} ({n} refused so far)");
        }
        GateError::new(
            ErrorCode::Busy,
            format!(
                "{why}; wait for one of them to finish, then call again (a shorter timeout frees them sooner)"
            ),
        )
    }
}
