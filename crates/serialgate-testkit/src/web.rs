//! The site the web view's tests run against: two simulated devices (a
//! Cisco switch `sw1` and a Junos router `sw2`), the real daemon serving
//! HTTP with a transcript directory, a state directory and four tokens,
//! and an agent's MCP session over HTTP when a test wants one.

use std::path::{Path, PathBuf};

use serialgate_sim::{Profile, SimHandle};

use crate::client::GateClient;
use crate::daemon::{Daemon, NotifySocket, tokens_toml};

/// A write token's secret (`noc`, ports `sw*`).
pub const NOC: &str = "noc-secret-0123456789";
/// A read token's secret (`audit`, ports `sw*`).
pub const AUDIT: &str = "audit-secret-0123456789";
/// An admin token's secret that reaches no port of the site (`lab`,
/// ports `lab-*`).
pub const LAB: &str = "lab-secret-0123456789";
/// The agent's write token (`agent`, ports `sw*`), the site's one long
/// secret (32 characters or more), which an address held for wrong
/// secrets may still present.
pub const AGENT: &str = "agent-secret-0123456789-abcdefghij";

/// The daemon, its devices and where it listens.
pub struct WebSite {
    /// The switch on port `sw1`.
    pub sw1: SimHandle,
    /// The router on port `sw2`.
    pub sw2: SimHandle,
    /// The daemon.
    pub daemon: Daemon,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub base: String,
    /// The site's directory (config, tokens, logs, state).
    pub dir: tempfile::TempDir,
    notify: NotifySocket,
}

impl WebSite {
    /// Starts the devices and the daemon; returns once it listens and
    /// its ports had their first open attempt.
    pub async fn start() -> WebSite {
        WebSite::start_with("", "").await
    }

    /// [`WebSite::start`] with `server` added to `[server]` and `sw1_extra`
    /// added to `[ports.sw1]` (TOML lines, e.g. `policy = "guarded"`).
    pub async fn start_with(server: &str, sw1_extra: &str) -> WebSite {
        let dir = tempfile::tempdir().expect("temp dir");
        let sw1 = serialgate_sim::spawn(Profile::CiscoIos, Some(dir.path().join("sw1")))
            .await
            .expect("simulated switch");
        let sw2 = serialgate_sim::spawn(Profile::JuniperJunos, Some(dir.path().join("sw2")))
            .await
            .expect("simulated router");
        let config = write_config(dir.path(), server, sw1_extra, "write");
        let notify = NotifySocket::bind(dir.path());
        let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
        let url = daemon.http_url().await;
        notify.expect("READY=1").await;
        WebSite {
            sw1,
            sw2,
            daemon,
            base: url.trim_end_matches("/mcp").to_owned(),
            dir,
            notify,
        }
    }

    /// Stops the daemon (SIGTERM) and waits for it to exit.
    pub async fn stop(&mut self) {
        self.daemon.signal(libc::SIGTERM);
        self.daemon.exit().await;
    }

    /// Starts the daemon again on the address it had, after [`stop`](Self::stop).
    pub async fn start_again(&mut self) {
        let config = self.dir.path().join("serialgate.toml");
        let listen = self.base.trim_start_matches("http://").to_owned();
        self.daemon = Daemon::spawn(Some(&config), &self.notify, &["--http", &listen]);
        self.daemon.http_url().await;
        // The stopped daemon's STOPPING=1 may come first.
        while !self.notify.next().await.starts_with("READY=1") {}
    }

    /// Rewrites the config as [`WebSite::start_with`] wrote it, with
    /// token `noc`'s access `noc_access` now, sends SIGHUP and waits for
    /// the reload to be over.
    pub async fn reload(&self, server: &str, sw1_extra: &str, noc_access: &str) {
        write_config(self.dir.path(), server, sw1_extra, noc_access);
        self.daemon.signal(libc::SIGHUP);
        self.notify.expect("RELOADING=1").await;
        self.notify.expect("READY=1").await;
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// An agent's MCP session over HTTP with the `agent` token.
    pub async fn agent(&self) -> GateClient {
        GateClient::connect_http(&self.url("/mcp"), Some(AGENT))
            .await
            .expect("an MCP session over HTTP")
    }

    /// Where `sw1`'s device link is (to plug a new switch in there).
    pub fn sw1_link(&self) -> PathBuf {
        self.dir.path().join("sw1")
    }
}

/// Writes the site's config and its tokens' secret files into `dir`; its
/// path.
fn write_config(dir: &Path, server: &str, sw1_extra: &str, noc_access: &str) -> PathBuf {
    let tokens = tokens_toml(
        dir,
        &[
            ("noc", NOC, r#"["sw*"]"#, noc_access),
            ("audit", AUDIT, r#"["sw*"]"#, "read"),
            ("lab", LAB, r#"["lab-*"]"#, "admin"),
            ("agent", AGENT, r#"["sw*"]"#, "write"),
        ],
    );
    // noc is the people's token: it decides the agent's requests.
    let tokens = crate::daemon::approving(&tokens, &["noc"]);
    let config = dir.join("serialgate.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlog_dir = \"logs\"\nstate_dir = \"state\"\n{server}\n\n[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n{sw1_extra}\n\n[ports.sw2]\ndevice = {:?}\npreset = \"juniper-junos\"\n\n{tokens}",
            dir.join("sw1").display(),
            dir.join("sw2").display(),
        ),
    )
    .expect("write config");
    config
}
