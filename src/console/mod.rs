//! People at the console: the attach protocol that a person's terminal
//! client (and the browser view) speaks to the daemon, the server side of
//! one person's attachment to a port, the local console socket, and the terminal client,
//! `serialgate console`. The WebSocket that carries the same protocol over
//! HTTP is in `daemon::http::console_ws`.

pub(crate) mod attachment;
mod judged_typing;
pub(crate) mod protocol;
mod typed_line;
pub(crate) mod unix_socket;

/// `serialgate console`, the person's terminal client.
pub mod client;
