//! People at the console: the attach protocol that a person's terminal
//! client (and the browser view) speaks to the daemon, over a WebSocket
//! on the HTTP listener or over the local console socket, and the
//! terminal client, `serialgate console`.

// Both ends of the protocol are being built: until the server and the
// client use every item, some are unused.
#[allow(dead_code)]
pub(crate) mod protocol;

/// `serialgate console`, the person's terminal client.
pub mod client;
