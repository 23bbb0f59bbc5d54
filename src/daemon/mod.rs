//! `serialgate serve`: the gateway's ports plus MCP over stdio (`stdio`),
//! until the client goes away or SIGTERM/SIGINT arrives — or, with
//! `--http ADDR` or `[server] listen`, over streamable HTTP instead
//! (`http`).
//!
//! Both transports live the same life ([`lifecycle`]: signals, reload,
//! readiness, shutdown), told to systemd through `notify`; [`logging`] is
//! the daemon's own log and `fd_limit` its open-files limit.
//!
//! Dependencies point one way: this module chooses the transport and calls
//! `stdio` or `http`; both build on [`lifecycle`], which uses
//! `notify`. None of them imports this module, `http` never imports
//! `stdio`, and `lifecycle` imports neither transport.

pub mod allocator;
pub(crate) mod console_socket;
pub(crate) mod fd_limit;
pub(crate) mod fleet;
pub(crate) mod http;
pub mod lifecycle;
pub mod logging;
pub(crate) mod metrics_http;
pub(crate) mod notify;
pub mod ssh;
pub(crate) mod startup_pages;
pub(crate) mod stdio;
pub(crate) mod stdio_frames;

use std::path::PathBuf;

use crate::config::Config;

/// Where `serialgate serve` serves MCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// stdio, for an agent that spawns the daemon.
    Stdio,
    /// Streamable HTTP at `http://ADDR/mcp`.
    Http(String),
}

impl Transport {
    /// The transport for `serve`: `--http ADDR` wins, then `--stdio`, then
    /// `[server] listen`; stdio when none is given.
    pub fn choose(config: &Config, http: Option<String>, stdio: bool) -> Transport {
        match (http, stdio, &config.server.listen) {
            (Some(addr), _, _) => Transport::Http(addr),
            (None, true, _) | (None, false, None) => Transport::Stdio,
            (None, false, Some(listen)) => Transport::Http(listen.clone()),
        }
    }
}

/// Runs the daemon on `transport` until it ends or a termination signal
/// arrives; every port is closed before it returns. `config` was loaded
/// from `config_path` (`None`: no file, built-in defaults); SIGHUP reads
/// that file again.
pub async fn serve(
    config: Config,
    config_path: Option<PathBuf>,
    transport: Transport,
) -> anyhow::Result<()> {
    match transport {
        Transport::Stdio => stdio::serve_stdio(config, config_path).await,
        Transport::Http(listen) => http::serve_http(config, config_path, &listen).await,
    }
}
