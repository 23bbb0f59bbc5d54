//! MCP over stdio, for an agent that spawns the daemon: one session on
//! stdin/stdout, until the client goes away or a termination signal
//! arrives.

use std::path::PathBuf;

use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::daemon::fd_limit;
use crate::daemon::lifecycle::{Reloader, Signals, ready, stop, until_terminated};
use crate::daemon::notify::notify_or_warn;
use crate::mcp::GateServer;

/// Runs the daemon with MCP over stdio. Returns when stdin closes or a
/// termination signal arrives; every port is closed before it returns.
pub async fn serve_stdio(config: Config, config_path: Option<PathBuf>) -> anyhow::Result<()> {
    let mut signals = Signals::install()?;
    if let Some(listen) = &config.server.listen {
        tracing::info!(
            "[server] listen = {listen:?} is set, but --stdio asks for stdio: HTTP is not served"
        );
    }
    fd_limit::raise_to_hard();
    let reloader = Reloader::new(config_path);
    let shutdown = CancellationToken::new();
    let (gateway, fleet_alerts) = super::fleet::start_gateway(config, shutdown.clone());
    super::console_socket::start(&gateway, &shutdown)?;
    super::ssh::start(&gateway, &shutdown).await?;
    let fleet = super::fleet::start(&gateway, fleet_alerts, &shutdown).await?;
    if let Some(listen) = &gateway.config().server.metrics_listen {
        super::metrics_http::start_listener(listen, &gateway, shutdown.clone()).await?;
    }
    ready(&gateway).await;

    let gone = CancellationToken::new();
    let server = GateServer::new(gateway.clone())
        .with_client_gone(gone.clone())
        .with_fleet(fleet);
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    let stdin = WatchedStdin { inner: stdin, gone };
    // Until the client has initialized MCP, signals are still answered.
    // `stdio_pipes`: when the client launched us with pipes (as MCP clients
    // do), stdin and stdout run on the reactor; `stdio()` would hand every
    // read and write to a blocking-pool thread, two thread hops per call.
    // It falls back to those blocking handles for a terminal or a file.
    let initialized = until_terminated(
        server
            .clone()
            .serve(super::stdio_frames::FramedStdio::new(stdin, stdout)),
        &mut signals,
        &reloader,
        &gateway,
    )
    .await;
    let running = match initialized {
        Some(Ok(running)) => running,
        Some(Err(e)) => {
            stop(&gateway).await;
            return Err(anyhow::anyhow!("MCP over stdio did not start: {e}"));
        }
        None => {
            stop(&gateway).await;
            return Ok(());
        }
    };
    let cancel = running.cancellation_token();
    // The session runs in its own task: ending it (below) lets rmcp send
    // the responses of calls that are finishing before it closes stdout.
    let mut session = crate::task::spawn(running.waiting());
    let ended = until_terminated(&mut session, &mut signals, &reloader, &gateway).await;
    match ended {
        Some(quit) => {
            match quit {
                Ok(Ok(reason)) => tracing::info!("MCP client went away ({reason:?})"),
                Ok(Err(e)) | Err(e) => tracing::warn!("MCP session ended with an error: {e}"),
            }
            notify_or_warn("STOPPING=1");
            server.detach_all().await;
            gateway.close_all().await;
        }
        None => {
            // Ports first: calls waiting on them end with an error result,
            // which rmcp still delivers while it winds the session down.
            stop(&gateway).await;
            cancel.cancel();
            if let Err(e) = session.await {
                tracing::warn!("MCP session task failed: {e}");
            }
            server.detach_all().await;
        }
    }
    Ok(())
}

/// stdin as rmcp reads it, cancelling `gone` at its end (the client closed
/// its side, or died). rmcp lets the calls in flight run for up to 5 s
/// after the end of its input; with `gone` they end at once, and so does
/// the daemon.
struct WatchedStdin {
    inner: rmcp::transport::StdioReader,
    gone: CancellationToken,
}

impl tokio::io::AsyncRead for WatchedStdin {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let wanted = buf.remaining() > 0;
        let poll = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        match &poll {
            std::task::Poll::Ready(Ok(())) if wanted && buf.filled().len() == before => {
                self.gone.cancel();
            }
            std::task::Poll::Ready(Err(_)) => self.gone.cancel(),
            _ => {}
        }
        poll
    }
}
