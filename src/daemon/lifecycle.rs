//! The life of the daemon, shared by both transports: what systemd sees
//! (`Type=notify`, see `crate::daemon::notify`) and how signals are
//! answered, from start-up to shutdown.
//!
//! - **Start**: the signal handlers are installed first (SIGHUP's default
//!   action would end the process), the configured ports start opening,
//!   and once each has had its first open attempt (bounded by
//!   [`FIRST_OPEN_WAIT`]) — and over HTTP once the listener is bound —
//!   `READY=1` is sent ([`ready`]).
//! - **SIGHUP** ([`Reloader`]): `RELOADING=1`, the config file is read and
//!   validated again; a config with errors is logged (`file:line:col:
//!   message`) and changes nothing; a good one is applied with
//!   `Gateway::reload` (added ports open, removed ones close, changed ones
//!   reopen, unchanged ones keep their OutputLog and sessions). Then
//!   `READY=1`. Without a config file SIGHUP is logged and ignored.
//! - **SIGTERM/SIGINT**: `STOPPING=1`, then every port is closed first, so
//!   that calls waiting on a port end with an error result the client
//!   still receives; then the MCP sessions end and the process exits 0.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::config::Config;
use crate::daemon::notify::notify_or_warn;
use crate::gateway::Gateway;
use crate::port::PortState;

/// How long start-up (and a reload) waits for the ports' first open
/// attempt before telling systemd it is ready. A first attempt ends in
/// `open` or `lost` at once; the bound only guards against a device whose
/// `open` hangs.
pub const FIRST_OPEN_WAIT: Duration = Duration::from_secs(2);

/// Tells systemd the daemon is stopping and closes every port.
pub(super) async fn stop(gateway: &Gateway) {
    notify_or_warn("STOPPING=1");
    gateway.close_all().await;
}

/// Waits until each port of the gateway has had its first open attempt (at
/// most [`FIRST_OPEN_WAIT`] in all), logs which are open, and sends
/// `READY=1`. The one place readiness is declared, for stdio and HTTP.
pub async fn ready(gateway: &Gateway) {
    let names: Vec<String> = gateway
        .ports()
        .iter()
        .map(|gp| gp.port.name().to_owned())
        .collect();
    first_open_attempts(gateway, &names).await;
    notify_or_warn("READY=1");
    crate::daemon::notify::start_watchdog();
    crate::daemon::startup_pages::release_startup_code_soon();
}

/// Waits for the first open attempt of the ports `names` (at most
/// [`FIRST_OPEN_WAIT`] for all of them together), then logs each one that
/// is not open, with why.
async fn first_open_attempts(gateway: &Gateway, names: &[String]) {
    let deadline = tokio::time::Instant::now() + FIRST_OPEN_WAIT;
    let mut open = 0;
    for name in names {
        let Some(gp) = gateway.port(name) else {
            continue;
        };
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let state = gp
            .port
            .wait_for_state(left, |s| s != PortState::Opening)
            .await;
        if state == PortState::Open {
            open += 1;
        } else {
            let why = gp.port.events().last().map(|e| e.what.clone());
            tracing::warn!(
                port = %name,
                "{} ({}) is {}: {}; retried in the background",
                name,
                gp.config.device,
                format!("{state:?}").to_lowercase(),
                why.unwrap_or_else(|| format!("no open attempt within {FIRST_OPEN_WAIT:?}"))
            );
        }
    }
    tracing::info!("{open} of {} port(s) open", names.len());
}

/// Runs `work` while answering signals: SIGHUP reloads the config with
/// `reloader`, SIGTERM/SIGINT end the wait. Returns `work`'s output, or
/// `None` when a termination signal came first.
pub async fn until_terminated<F: Future>(
    work: F,
    signals: &mut Signals,
    reloader: &Reloader,
    gateway: &Gateway,
) -> Option<F::Output> {
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            out = &mut work => return Some(out),
            received = signals.recv() => match received {
                Received::Reload => {
                    reloader.reload(gateway).await;
                }
                Received::Terminate(name) => {
                    tracing::info!("{name}: shutting down (closing ports, then sessions)");
                    return None;
                }
            }
        }
    }
}

/// The signals the daemon answers, registered once at start-up: from then
/// on SIGHUP, SIGTERM and SIGINT no longer end the process by default, and
/// one arriving while nobody waits is kept for the next [`Signals::recv`].
pub struct Signals {
    term: Signal,
    int: Signal,
    hup: Signal,
}

/// A signal [`Signals::recv`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// SIGHUP: reload the config.
    Reload,
    /// SIGTERM or SIGINT (named): shut down.
    Terminate(&'static str),
}

impl Signals {
    /// Registers the handlers.
    pub fn install() -> anyhow::Result<Signals> {
        let handler = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|e| anyhow::anyhow!("cannot handle {name}: {e}"))
        };
        Ok(Signals {
            term: handler(SignalKind::terminate(), "SIGTERM")?,
            int: handler(SignalKind::interrupt(), "SIGINT")?,
            hup: handler(SignalKind::hangup(), "SIGHUP")?,
        })
    }

    /// The next signal.
    pub async fn recv(&mut self) -> Received {
        tokio::select! {
            _ = self.term.recv() => Received::Terminate("SIGTERM"),
            _ = self.int.recv() => Received::Terminate("SIGINT"),
            _ = self.hup.recv() => Received::Reload,
        }
    }
}

/// An extra check of a new config against the running one, for what the
/// transport cannot change without a restart (e.g. HTTP authentication).
type ReloadCheck = Box<dyn Fn(&Config, &Config) -> Result<(), String> + Send + Sync>;

/// What SIGHUP does: reads the config file again and applies it.
pub struct Reloader {
    path: Option<PathBuf>,
    check: Option<ReloadCheck>,
}

/// How a reload ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reloaded {
    /// The daemon runs without a config file: nothing to reload.
    NoFile,
    /// The new config has errors (the message says where); the running
    /// config stays.
    Rejected(String),
    /// The new config is in force.
    Applied {
        /// Ports opened.
        added: Vec<String>,
        /// Ports closed.
        removed: Vec<String>,
        /// Ports reopened with new settings (and a fresh log).
        changed: Vec<String>,
    },
}

impl Reloader {
    /// Reloads from `path` (`None`: the daemon has no config file).
    pub fn new(path: Option<PathBuf>) -> Reloader {
        Reloader { path, check: None }
    }

    /// Also refuses a new config that `check(running, new)` rejects.
    pub fn with_check(
        mut self,
        check: impl Fn(&Config, &Config) -> Result<(), String> + Send + Sync + 'static,
    ) -> Reloader {
        self.check = Some(Box::new(check));
        self
    }

    /// The config file reloaded, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Reads, validates and applies the config file, telling systemd
    /// (`RELOADING=1` … `READY=1`) and logging the outcome.
    pub async fn reload(&self, gateway: &Gateway) -> Reloaded {
        let Some(path) = &self.path else {
            tracing::warn!("SIGHUP: serve runs without --config, there is no file to reload");
            return Reloaded::NoFile;
        };
        notify_or_warn(&reloading());
        tracing::info!("SIGHUP: reloading {}", path.display());
        let outcome = self.apply(path, gateway).await;
        match &outcome {
            Reloaded::Rejected(e) => {
                tracing::error!("reload rejected, the running config stays in force: {e}")
            }
            Reloaded::Applied {
                added,
                removed,
                changed,
            } => {
                let list = |names: &[String]| {
                    if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.join(", ")
                    }
                };
                tracing::info!(
                    "reloaded {}: added {}; removed {}; changed (reopened) {}",
                    path.display(),
                    list(added),
                    list(removed),
                    list(changed)
                );
                let started: Vec<String> = added.iter().chain(changed).cloned().collect();
                first_open_attempts(gateway, &started).await;
            }
            Reloaded::NoFile => {}
        }
        notify_or_warn("READY=1");
        outcome
    }

    async fn apply(&self, path: &Path, gateway: &Gateway) -> Reloaded {
        let config = match Config::load(path) {
            Ok(config) => config,
            Err(e) => return Reloaded::Rejected(e.to_string()),
        };
        if let Some(check) = &self.check
            && let Err(e) = check(&gateway.config(), &config)
        {
            return Reloaded::Rejected(format!("{}: {e}", path.display()));
        }
        warn_of_listeners_kept(&gateway.config(), &config);
        for kept in
            super::fleet::changes_kept(gateway.config().fleet.as_ref(), config.fleet.as_ref())
        {
            tracing::warn!("{kept}");
        }
        let (added, removed, changed) = gateway.reload(config).await;
        Reloaded::Applied {
            added,
            removed,
            changed,
        }
    }
}

/// Says in the log that a reload leaves the SSH door where it is: it is
/// bound once at start, so a changed `ssh_listen` (or one added or
/// removed) takes a restart; the people, their keys and their access are
/// taken from the new config at once.
fn warn_of_listeners_kept(running: &Config, new: &Config) {
    let (old, wanted) = (&running.server.ssh_listen, &new.server.ssh_listen);
    if old == wanted {
        return;
    }
    let now = match old {
        Some(listen) => format!("the SSH door stays where start bound it ({listen:?})"),
        None => "no SSH door opens".to_owned(),
    };
    let asked = match wanted {
        Some(listen) => format!("changed to {listen:?}"),
        None => "removed".to_owned(),
    };
    tracing::warn!(
        "[server] ssh_listen {asked}: {now} until a restart (systemctl restart serialgate)"
    );
}

/// `RELOADING=1` with the `MONOTONIC_USEC` systemd asks to come with it.
fn reloading() -> String {
    use nix::time::{ClockId, clock_gettime};
    let Ok(now) = clock_gettime(ClockId::CLOCK_MONOTONIC) else {
        return "RELOADING=1".to_owned();
    };
    let usec = u64::try_from(now.tv_sec())
        .unwrap_or(0)
        .saturating_mul(1_000_000)
        .saturating_add(u64::try_from(now.tv_nsec()).unwrap_or(0) / 1_000);
    format!("RELOADING=1\nMONOTONIC_USEC={usec}")
}

/// Resolves on SIGTERM or SIGINT (the simulator's `simulate` command).
pub async fn terminated() {
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        // Without signal handlers, wait forever: the default action of the
        // signals still ends the process.
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_util::sync::CancellationToken;

    #[test]
    fn reloading_carries_the_monotonic_clock() {
        let text = reloading();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("RELOADING=1"));
        let usec = lines
            .next()
            .and_then(|l| l.strip_prefix("MONOTONIC_USEC="))
            .and_then(|n| n.parse::<u64>().ok());
        assert!(usec.is_some_and(|n| n > 0), "{text}");
    }

    #[tokio::test]
    async fn reload_without_a_file_changes_nothing() {
        let gateway = Gateway::start(Config::default_with_builtins(), CancellationToken::new());
        assert_eq!(Reloader::new(None).reload(&gateway).await, Reloaded::NoFile);
    }

    #[tokio::test]
    async fn a_broken_file_is_rejected_with_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[ports.a\n").unwrap();
        let gateway = Gateway::start(Config::default_with_builtins(), CancellationToken::new());
        let before = gateway.config();
        // `apply`, not `reload`: no datagram to a NOTIFY_SOCKET another
        // unit test may have set.
        let outcome = Reloader::new(Some(path.clone()))
            .apply(&path, &gateway)
            .await;
        let Reloaded::Rejected(e) = outcome else {
            panic!("{outcome:?}");
        };
        assert!(e.starts_with(&format!("{}:1:", path.display())), "{e}");
        assert!(std::sync::Arc::ptr_eq(&before, &gateway.config()));
    }

    #[tokio::test]
    async fn a_check_can_refuse_a_good_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[server]\nretention = \"2MiB\"\n").unwrap();
        let gateway = Gateway::start(Config::default_with_builtins(), CancellationToken::new());
        let reloader = Reloader::new(Some(path.clone())).with_check(|_, _| Err("no".into()));
        let outcome = reloader.apply(&path, &gateway).await;
        assert!(matches!(&outcome, Reloaded::Rejected(e) if e.ends_with(": no")));
    }
}
