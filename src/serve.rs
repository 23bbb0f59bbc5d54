//! `serialgate serve`: the gateway's ports plus MCP over stdio, until the
//! client goes away or SIGTERM/SIGINT arrives — or, with `--http ADDR` or
//! `[server] listen`, over streamable HTTP instead (see [`crate::http`]).

use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::gateway::Gateway;
use crate::mcp::GateServer;

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
/// arrives; every port is closed before it returns.
pub async fn serve(config: Config, transport: Transport) -> anyhow::Result<()> {
    match transport {
        Transport::Stdio => serve_stdio(config).await,
        Transport::Http(listen) => crate::http::serve_http(config, &listen).await,
    }
}

/// Runs the daemon with MCP over stdio. Returns when stdin closes or a
/// termination signal arrives; every port is closed before it returns.
pub async fn serve_stdio(config: Config) -> anyhow::Result<()> {
    if let Some(listen) = &config.server.listen {
        tracing::info!(
            "[server] listen = {listen:?} is set, but --stdio asks for stdio: HTTP is not served"
        );
    }
    if let Some(dir) = &config.server.log_dir {
        tracing::warn!(
            "[server] log_dir = {} is set, but transcripts are not written by this build yet",
            dir.display()
        );
    }
    let shutdown = CancellationToken::new();
    let gateway = Gateway::start(config, shutdown.clone());
    let server = GateServer::new(gateway.clone());
    let running = server.clone().serve(rmcp::transport::stdio()).await?;
    let cancel = running.cancellation_token();
    tokio::select! {
        quit = running.waiting() => {
            if let Err(e) = quit {
                tracing::warn!("MCP session ended with an error: {e}");
            }
        }
        () = terminated() => {
            tracing::info!("termination signal: closing ports");
            cancel.cancel();
        }
    }
    server.detach_all().await;
    gateway.close_all().await;
    Ok(())
}

/// Resolves on SIGTERM or SIGINT.
pub async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        // Without signal handlers, wait forever: stdin EOF still ends us.
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
