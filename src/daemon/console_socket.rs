//! Starts the local console socket beside whichever MCP transport runs,
//! when the config names one (or systemd gave the daemon a runtime
//! directory).

use tokio_util::sync::CancellationToken;

use crate::console::unix_socket::ConsoleSocket;
use crate::gateway::Gateway;

/// Binds `[server] console_socket` and serves people's consoles on it
/// until `shutdown`; prints `console socket at PATH` to stderr once bound.
/// Nothing to do without one; a socket that cannot be bound stops the
/// start, with the reason.
pub(crate) fn start(gateway: &Gateway, shutdown: &CancellationToken) -> anyhow::Result<()> {
    let config = gateway.config();
    let Some(path) = &config.server.console_socket else {
        return Ok(());
    };
    let socket = ConsoleSocket::bind(path)?;
    eprintln!("serialgate: console socket at {}", path.display());
    tracing::info!(
        "people attach with `serialgate console PORT --socket {}`",
        path.display()
    );
    crate::task::spawn(socket.serve(gateway.clone(), shutdown.clone()));
    Ok(())
}
