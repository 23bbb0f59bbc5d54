//! People at the console: the attach protocol that a person's terminal
//! client (and the browser view) speaks to the daemon, the server side of
//! one person's attachment to a port, the local console socket, and the terminal client,
//! `serialgate console`. The WebSocket that carries the same protocol over
//! HTTP is in `daemon::http::console_ws`. Ports of other sites
//! (`site/port`) are reached through the fleet: `fleet_attachment` at the
//! serving gateway, one `fleet_feed` per remote port there, and
//! `fleet_site` at the site that owns the port; `fleet_wire` is what they
//! send each other over NATS; `fleet_transcript` fetches a remote port's
//! transcript for the web view's download.

pub(crate) mod attachment;
mod connection;
mod fleet_attachment;
pub mod fleet_feed;
pub(crate) mod fleet_site;
pub(crate) mod fleet_transcript;
pub(crate) mod fleet_wire;
mod judged_typing;
pub(crate) mod protocol;
mod typed_line;
pub(crate) mod unix_socket;

/// `serialgate console`, the person's terminal client.
pub mod client;
