//! People at the console: the attach protocol that a person's terminal
//! client (and the browser view) speaks to the daemon, the server side of
//! one person's session, and the local console socket. The WebSocket that
//! carries the same protocol over HTTP is in `daemon::http::console_ws`.

// The terminal client, being built, uses the rest of the protocol.
#[allow(dead_code)]
pub(crate) mod protocol;
pub(crate) mod session;
pub(crate) mod unix_socket;
