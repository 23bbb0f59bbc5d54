//! What the two halves of a telnet connection (`telnet://`, `rfc2217://`)
//! share: the protocol state (the writer escapes by it, the reader decodes
//! by it) and the socket's write half, which the reader also uses to
//! answer the server's option negotiation. Each write takes the socket's
//! lock once, so a negotiation reply never lands inside a command's bytes.
//! An `rfc2217://` connection's link also carries its COM-PORT-OPTION
//! state ([`ComPortLink`]), which the reader feeds with the server's
//! answers; the control handle (`comport.rs`) sends its commands through
//! the same link.

use std::io;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;

use super::comport_link::ComPortLink;
use super::state::WRITE_TIMEOUT;
use crate::remote::telnet::Telnet;

/// What the two halves of a telnet connection share (see the module docs).
pub struct TelnetLink {
    state: Mutex<Telnet>,
    socket: tokio::sync::Mutex<OwnedWriteHalf>,
    /// COM-PORT-OPTION state, on an `rfc2217://` connection.
    com: Option<Arc<ComPortLink>>,
}

impl TelnetLink {
    /// A link over `socket` with the protocol state `telnet` and, on an
    /// `rfc2217://` connection, its COM-PORT-OPTION state.
    pub(super) fn new(
        telnet: Telnet,
        socket: OwnedWriteHalf,
        com: Option<Arc<ComPortLink>>,
    ) -> TelnetLink {
        TelnetLink {
            state: Mutex::new(telnet),
            socket: tokio::sync::Mutex::new(socket),
            com,
        }
    }

    /// The protocol state, which the writer encodes by and the reader
    /// decodes by.
    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, Telnet> {
        crate::sync::lock(&self.state)
    }

    /// The COM-PORT-OPTION state, on an `rfc2217://` connection.
    pub(super) fn com(&self) -> Option<&Arc<ComPortLink>> {
        self.com.as_ref()
    }

    /// Writes bytes as they are (already encoded), within [`WRITE_TIMEOUT`].
    pub(super) async fn send_raw(&self, bytes: &[u8]) -> io::Result<()> {
        let send = async {
            let mut socket = self.socket.lock().await;
            socket.write_all(bytes).await?;
            socket.flush().await
        };
        tokio::time::timeout(WRITE_TIMEOUT, send)
            .await
            .unwrap_or_else(|_| {
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the console server did not take our bytes in time",
                ))
            })
    }
}
