//! The gateway: every port this daemon runs, configured or ad-hoc, shared
//! by all MCP sessions. Configured ports open at start-up and stay open, so
//! output is captured while no agent is attached.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::audit::Audit;
use crate::config::{Config, PortConfig, ServerConfig};
use crate::error::{ErrorCode, GateError};
use crate::logfile::Rotation;
use crate::port::alerts::AlertHook;
use crate::port::{Port, PortServices, PortSpec, PortState, PromptJudge};
use crate::remote::{RemoteAddr, allow};
use crate::transcript::TranscriptConfig;

/// How long an ad-hoc `connect` waits for the device to open.
pub const ADHOC_OPEN_TIMEOUT: Duration = Duration::from_secs(3);
/// How long an ad-hoc `connect` waits for a remote console: longer than
/// the connect timeout, so a silent host is reported as such.
pub const ADHOC_REMOTE_OPEN_TIMEOUT: Duration =
    Duration::from_secs(crate::remote::CONNECT_TIMEOUT.as_secs() + 1);

/// Whether a `connect` target names a device to open ad hoc (a device path
/// or a remote console URL) rather than a configured port.
pub fn is_adhoc_target(target: &str) -> bool {
    target.starts_with('/') || RemoteAddr::is_url(target)
}

/// The name an ad-hoc port opened from `target` gets: `name` if given,
/// else the device's file name, or `host-port` for a remote console.
pub fn adhoc_name(target: &str, name: Option<&str>) -> String {
    if let Some(name) = name {
        return name.to_owned();
    }
    match RemoteAddr::parse(target) {
        Ok(Some(addr)) => addr.default_name(),
        _ => target.rsplit('/').next().unwrap_or(target).to_owned(),
    }
}

/// Whether `server` lets an ad-hoc `connect` open `device` (a path or a
/// remote console URL, as the caller wrote it).
async fn adhoc_allowed(server: &ServerConfig, device: &str) -> bool {
    if !server.allow_adhoc {
        return false;
    }
    match RemoteAddr::parse(device) {
        Ok(Some(addr)) => allow::check(&addr, &server.adhoc_remotes).await.is_ok(),
        Ok(None) => server.adhoc_allowed(device),
        Err(_) => false,
    }
}

/// A port the gateway runs, with the config it was made from.
#[derive(Clone)]
pub struct GatewayPort {
    /// The running port.
    pub port: Port,
    /// Its resolved configuration (preset applied).
    pub config: Arc<PortConfig>,
    /// Opened by a `connect` with a device path, not by the config file.
    pub adhoc: bool,
}

/// Every port of this daemon, by name. A cheap clonable handle.
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
}

struct Shared {
    /// The config in force; replaced whole by [`Gateway::reload`].
    config: RwLock<Arc<Config>>,
    ports: Mutex<BTreeMap<String, Entry>>,
    shutdown: CancellationToken,
    /// The audit trail of every session write, shared by all ports.
    audit: Audit,
    /// Told of every alert of every port (the webhook, the fleet), from
    /// the config the daemon started with.
    on_alert: Option<AlertHook>,
    /// Bumped when ports are added or removed (reload, ad hoc), so that
    /// views of every port (the web view's ports page) list them again.
    ports_changed: watch::Sender<u64>,
    /// The config's generation, bumped by every [`Gateway::reload`], so
    /// that open consoles re-check their callers against the new tokens.
    config_changed: watch::Sender<u64>,
    /// Who switches which outlet and when each last was: kept across
    /// reloads, since an outlet's rest outlives a config.
    power: crate::power::PowerBoard,
}

struct Entry {
    gateway_port: GatewayPort,
    /// Sessions attached to an ad-hoc port; it closes when this drops to 0.
    users: usize,
}

impl Gateway {
    /// Starts every configured port. Ports that cannot be opened yet keep
    /// retrying in the background.
    pub fn start(config: Config, shutdown: CancellationToken) -> Gateway {
        Gateway::start_telling(config, shutdown, None)
    }

    /// [`Gateway::start`], every alert of every port also told to
    /// `also_on_alert` (the fleet's stream, which the daemon joins after).
    pub fn start_telling(
        config: Config,
        shutdown: CancellationToken,
        also_on_alert: Option<AlertHook>,
    ) -> Gateway {
        let audit = match &config.server.log_dir {
            Some(dir) => Audit::to_dir(dir, Self::log_rotation(&config)).unwrap_or_else(|e| {
                tracing::warn!(
                    "no audit file in {}: {e}; audit records go to the daemon's log only",
                    dir.display()
                );
                Audit::log_only()
            }),
            None => Audit::log_only(),
        };
        // Alerts go to the webhook through a bounded queue (webhook.rs),
        // and to whoever else asked (the fleet's stream) through another.
        let webhook = config
            .server
            .alert_webhook
            .clone()
            .map(|w| crate::webhook::start(w, shutdown.clone()));
        let on_alert: Option<AlertHook> = match (webhook, also_on_alert) {
            (Some(a), Some(b)) => Some(std::sync::Arc::new(move |alert: &_| {
                a(alert);
                b(alert);
            })),
            (a, b) => a.or(b),
        };
        let mut ports = BTreeMap::new();
        for (name, pc) in &config.ports {
            ports.insert(
                name.clone(),
                Self::start_configured(&config, pc, &audit, &on_alert, &shutdown),
            );
        }
        Gateway {
            shared: Arc::new(Shared {
                config: RwLock::new(Arc::new(config)),
                ports: Mutex::new(ports),
                shutdown,
                audit,
                on_alert,
                ports_changed: watch::Sender::new(0),
                config_changed: watch::Sender::new(0),
                power: crate::power::PowerBoard::default(),
            }),
        }
    }

    /// How the transcripts and the audit trail of `config` are rotated.
    fn log_rotation(config: &Config) -> Rotation {
        Rotation {
            max_bytes: config.server.log_max,
            keep: config.server.log_keep,
        }
    }

    /// What a port of `config` records besides its log.
    fn services(config: &Config, audit: &Audit, on_alert: &Option<AlertHook>) -> PortServices {
        let server = &config.server;
        PortServices {
            transcript: server.log_dir.as_ref().map(|dir| TranscriptConfig {
                dir: dir.clone(),
                rotation: Self::log_rotation(config),
            }),
            audit: audit.clone(),
            on_alert: on_alert.clone(),
        }
    }

    fn start_configured(
        config: &Config,
        pc: &Arc<PortConfig>,
        audit: &Audit,
        on_alert: &Option<AlertHook>,
        shutdown: &CancellationToken,
    ) -> Entry {
        let spec = PortSpec {
            name: pc.name.clone(),
            device: pc.device.clone(),
            line: pc.line,
            retention: config.server.retention,
            down_after: pc.down_after,
            credentials: pc.credentials.clone(),
            watches: pc.watches.clone(),
            prompts: PromptJudge::new(&pc.prompt, &pc.modes),
        };
        let port = Port::start(spec, Self::services(config, audit, on_alert), shutdown);
        Entry {
            gateway_port: GatewayPort {
                port,
                config: pc.clone(),
                adhoc: false,
            },
            users: 0,
        }
    }

    /// Applies a new config (SIGHUP): added ports open, removed ports
    /// close, changed ports reopen with a fresh log, and unchanged ports
    /// keep their log, their device and their sessions. Returns what
    /// changed, as `(added, removed, changed)` port names.
    pub async fn reload(&self, config: Config) -> (Vec<String>, Vec<String>, Vec<String>) {
        let (mut added, mut removed, mut changed) = (Vec::new(), Vec::new(), Vec::new());
        let mut closing = Vec::new();
        // Ad-hoc ports stay only while the new config would still let them
        // be opened, and never under the name of a port it adds.
        let adhoc: Vec<(String, String)> = self
            .lock()
            .iter()
            .filter(|(_, entry)| entry.gateway_port.adhoc)
            .map(|(name, entry)| (name.clone(), entry.gateway_port.config.device.clone()))
            .collect();
        for (name, device) in adhoc {
            let why = if config.ports.contains_key(&name) {
                Some("the config now has a port of that name")
            } else if !adhoc_allowed(&config.server, &device).await {
                Some("the config no longer allows it ad hoc")
            } else {
                None
            };
            if let Some(why) = why {
                tracing::warn!(port = %name, "closing the ad-hoc port on {device:?}: {why}");
                removed.push(name);
            }
        }
        {
            let mut ports = self.lock();
            let old = self.config();
            let retention_changed = old.server.retention != config.server.retention;
            for (name, entry) in ports.iter() {
                if entry.gateway_port.adhoc {
                    continue;
                }
                match config.ports.get(name) {
                    None => removed.push(name.clone()),
                    Some(pc) if *pc != entry.gateway_port.config || retention_changed => {
                        changed.push(name.clone())
                    }
                    Some(_) => {}
                }
            }
            for name in removed.iter().chain(&changed) {
                if let Some(entry) = ports.remove(name) {
                    closing.push(entry.gateway_port.port);
                }
            }
        }
        // Requests waiting for approval were judged by the old rules: a
        // port that closes takes its requests with it, and a change of
        // policies withdraws them everywhere (their callers are told to
        // call again, to be judged anew).
        let rejudge = !self.config().judges_as(&config);
        if rejudge {
            for entry in self.lock().values() {
                let ended = entry.gateway_port.port.approvals().withdraw_all(
                    "a reload changed the command policies; call again to be judged by the new ones",
                );
                if ended > 0 {
                    tracing::info!(port = %entry.gateway_port.port.name(), "withdrew {ended} requests for approval: the policies changed");
                }
            }
        }
        // Close before starting: a changed port (or a renamed one, same
        // device) must find its device released (TIOCEXCL).
        for port in closing {
            port.approvals()
                .withdraw_all("a reload reopened or removed the port; call again once it is back");
            port.close().await;
        }
        {
            let mut ports = self.lock();
            for (name, pc) in &config.ports {
                if !ports.contains_key(name) {
                    if !changed.contains(name) {
                        added.push(name.clone());
                    }
                    ports.insert(
                        name.clone(),
                        Self::start_configured(
                            &config,
                            pc,
                            &self.shared.audit,
                            &self.shared.on_alert,
                            &self.shared.shutdown,
                        ),
                    );
                }
            }
            *crate::sync::write(&self.shared.config) = Arc::new(config);
        }
        self.end_what_lost_write_access();
        self.ports_changed();
        self.shared
            .config_changed
            .send_modify(|generation| *generation += 1);
        (added, removed, changed)
    }

    /// Ends what an agent has through a token that the config in force
    /// removes or no longer lets write: its write holds (its next write
    /// would be refused, and until then the hold would keep every other
    /// writer off the port) and its lines waiting for approval (which a
    /// person must not send for it now). A console lets go of its own
    /// when its token is lowered (`access/standing.rs`).
    fn end_what_lost_write_access(&self) {
        let config = self.config();
        let lost = |token: &str| {
            config
                .token_named(token)
                .is_none_or(|t| t.access < crate::config::TokenAccess::Write)
        };
        for entry in self.lock().values() {
            let port = &entry.gateway_port.port;
            if let Some(holder) = port.holder().filter(|h| h.config_token && lost(&h.token)) {
                tracing::info!(
                    port = %port.name(),
                    "token {} no longer may write: the write hold of its session {} ends",
                    crate::error::label(&holder.token),
                    holder.session
                );
                port.release_writer(holder.session);
            }
            let withdrawn = port.approvals().withdraw_asked_by(
                |requester| requester.config_token && lost(&requester.token),
                "a reload took the write access of the token that asked",
            );
            if withdrawn > 0 {
                tracing::info!(
                    port = %port.name(),
                    "withdrew {withdrawn} requests for approval: their tokens no longer may write"
                );
            }
        }
    }

    /// Changes whenever a reload puts a new config in force.
    pub fn watch_config(&self) -> watch::Receiver<u64> {
        self.shared.config_changed.subscribe()
    }

    /// Changes whenever ports are added or removed.
    pub fn watch_ports(&self) -> watch::Receiver<u64> {
        self.shared.ports_changed.subscribe()
    }

    fn ports_changed(&self) {
        self.shared.ports_changed.send_modify(|g| *g += 1);
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Entry>> {
        crate::sync::lock(&self.shared.ports)
    }

    /// The outlets' use, daemon-wide (busy, minimum intervals).
    pub fn power_board(&self) -> &crate::power::PowerBoard {
        &self.shared.power
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        crate::sync::read(&self.shared.config).clone()
    }

    /// Every running port, by name.
    pub fn ports(&self) -> Vec<GatewayPort> {
        self.lock()
            .values()
            .map(|e| e.gateway_port.clone())
            .collect()
    }

    /// A running port by name.
    pub fn port(&self, name: &str) -> Option<GatewayPort> {
        self.lock().get(name).map(|e| e.gateway_port.clone())
    }

    /// Attaches a session to a configured port (by name) or, when ad-hoc
    /// connections are allowed, to a device path (opened now if no port has
    /// it yet). `adhoc` gives the name and preset for a new ad-hoc port.
    /// `shows` says which ports the session's caller reaches: only those are
    /// found, and only those are named in the error.
    pub async fn attach(
        &self,
        target: &str,
        adhoc: &AdhocRequest,
        shows: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<GatewayPort, GateError> {
        if let Some(existing) = self.find(target, shows) {
            return Ok(existing);
        }
        if !is_adhoc_target(target) {
            let known: Vec<String> = self.lock().keys().filter(|n| shows(n)).cloned().collect();
            return Err(GateError::new(
                ErrorCode::UnknownConnection,
                format!(
                    "no configured port named {}; ports you may use: {}. Use list_ports, or give a device path such as /dev/ttyUSB0 or a console server URL such as telnet://10.0.0.5:2001 if ad-hoc connections are allowed",
                    crate::error::shown(target),
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
        self.open_adhoc(target, adhoc).await
    }

    /// Finds a port `shows` lets through by name, else by device path, and
    /// counts the new user.
    fn find(&self, target: &str, shows: &(dyn Fn(&str) -> bool + Sync)) -> Option<GatewayPort> {
        let mut ports = self.lock();
        let name = if ports.contains_key(target) {
            target.to_owned()
        } else {
            ports
                .values()
                .find(|e| e.gateway_port.config.device == target)?
                .gateway_port
                .port
                .name()
                .to_owned()
        };
        if !shows(&name) {
            return None;
        }
        let entry = ports.get_mut(&name)?;
        entry.users += 1;
        Some(entry.gateway_port.clone())
    }

    /// Opens a port for `path`, a device path or a remote console URL,
    /// after checking it against `allow_adhoc`, `adhoc_devices` and
    /// `adhoc_remotes`. A remote console's port is opened on the address
    /// the check let through (its name stays the one the URL gives), so
    /// that neither this connection nor a reconnect resolves the host
    /// again.
    async fn open_adhoc(&self, path: &str, req: &AdhocRequest) -> Result<GatewayPort, GateError> {
        let config = self.config();
        let server = &config.server;
        let remote = RemoteAddr::parse(path).map_err(GateError::invalid)?;
        let shown = crate::error::shown(path);
        if !server.allow_adhoc {
            return Err(GateError::new(
                ErrorCode::Forbidden,
                format!(
                    "{shown} is not a configured port and ad-hoc connections are off; add it under [ports] in the config, or set allow_adhoc = true in [server]"
                ),
            ));
        }
        let device = match &remote {
            Some(addr) => allow::check(addr, &server.adhoc_remotes)
                .await
                .map_err(|refusal| {
                    GateError::new(
                        ErrorCode::Forbidden,
                        refusal.message(&shown, addr.port, &server.adhoc_remotes),
                    )
                })?
                .to_string(),
            None if path.split('/').any(|part| part == ".." || part == ".")
                || !server.adhoc_allowed(path) =>
            {
                return Err(GateError::new(
                    ErrorCode::Forbidden,
                    format!(
                        "{shown} is outside adhoc_devices ({}); use a path matching one of them",
                        server.adhoc_devices.join(", ")
                    ),
                ));
            }
            None => path.to_owned(),
        };
        let name = adhoc_name(path, req.name.as_deref());
        if self.lock().contains_key(&name) {
            return Err(GateError::invalid(format!(
                "a port named {name:?} already exists; pick another `name`"
            )));
        }
        let mut port_config = config
            .resolve_port(&name, path, req.preset.as_deref())
            .map_err(GateError::invalid)?;
        if let Some(line) = req.line {
            port_config.line = line;
        }
        port_config.line.validate().map_err(GateError::invalid)?;
        let spec = PortSpec {
            name: name.clone(),
            device,
            line: port_config.line,
            retention: server.retention,
            down_after: port_config.down_after,
            credentials: port_config.credentials.clone(),
            watches: port_config.watches.clone(),
            prompts: PromptJudge::new(&port_config.prompt, &port_config.modes),
        };
        let port = Port::start(
            spec,
            Self::services(&config, &self.shared.audit, &self.shared.on_alert),
            &self.shared.shutdown,
        );
        let open_timeout = if remote.is_some() {
            ADHOC_REMOTE_OPEN_TIMEOUT
        } else {
            ADHOC_OPEN_TIMEOUT
        };
        let state = port
            .wait_for_state(open_timeout, |s| s != PortState::Opening)
            .await;
        if state != PortState::Open {
            let why = port
                .events()
                .last()
                .map(|e| e.what.clone())
                .unwrap_or_default();
            port.close().await;
            let hint = if remote.is_some() {
                "check the address, that the console server listens there (and is not busy with another client), and firewalls"
            } else {
                "check the path (list_ports shows serial devices), permissions (dialout group) and that no other program holds it"
            };
            return Err(GateError::new(
                ErrorCode::PortUnavailable,
                format!("cannot open {shown}: {why}; {hint}"),
            ));
        }
        let gp = GatewayPort {
            port,
            config: Arc::new(port_config),
            adhoc: true,
        };
        let inserted = {
            let mut ports = self.lock();
            let free = !ports.contains_key(&name);
            if free {
                ports.insert(
                    name.clone(),
                    Entry {
                        gateway_port: gp.clone(),
                        users: 1,
                    },
                );
            }
            free
        };
        if inserted {
            self.ports_changed();
        }
        if !inserted {
            // Another session opened a port by that name meanwhile.
            gp.port.close().await;
            return Err(GateError::invalid(format!(
                "a port named {name:?} already exists; pick another `name`"
            )));
        }
        Ok(gp)
    }

    /// A session lets go of a port; an ad-hoc port with no users left is
    /// closed and forgotten.
    pub async fn detach(&self, name: &str) {
        let closing = {
            let mut ports = self.lock();
            let Some(entry) = ports.get_mut(name) else {
                return;
            };
            entry.users = entry.users.saturating_sub(1);
            if entry.gateway_port.adhoc && entry.users == 0 {
                ports.remove(name).map(|e| e.gateway_port.port)
            } else {
                None
            }
        };
        if let Some(port) = closing {
            self.ports_changed();
            port.close().await;
        }
    }

    /// Closes every port (shutdown).
    pub async fn close_all(&self) {
        self.shared.shutdown.cancel();
        for gp in self.ports() {
            gp.port.close().await;
        }
    }
}

/// What a `connect` to a device path asks of a new ad-hoc port.
#[derive(Debug, Clone, Default)]
pub struct AdhocRequest {
    /// The port's name (default: the device's file name).
    pub name: Option<String>,
    /// The preset (default: `generic`).
    pub preset: Option<String>,
    /// Line settings, when the caller gave any.
    pub line: Option<crate::settings::LineSettings>,
}
