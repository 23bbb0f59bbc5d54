//! The web view: a page of every port a token may see, live, and a console
//! page per port (xterm.js over the attach protocol's WebSocket), served by
//! the daemon on its HTTP listener beside `/mcp`.
//!
//! - [`signin`]: the sign-in form and sign-in and sign-out (`POST`, the
//!   same `[[tokens]]` as `/mcp`), held to [`origin`] and to the
//!   listener's failure throttle ([`crate::daemon::http::throttle`]).
//! - [`browser_login`]: the server-side logins a browser's cookie names.
//! - [`assets`]: the pages, scripts and styles, built into the binary.
//! - [`ports_live`]: the ports page's WebSocket, a snapshot at every change.
//! - [`transcript`]: a port's transcript as a download.
//! - `routes`: the routes and what stands in front of them; `state`: what
//!   they share ([`WebState`]).
//!
//! Everything but the sign-in form needs a live login (or, with
//! `auth = "none"` on loopback, a loopback `Host`); the token's port globs
//! and access apply to everything shown or sent. Every response carries
//! `routes::CSP` and asks not to be cached or framed.
//!
//! Routes: `GET /web/` (ports), `GET /web/console/{port}` (a console),
//! `GET /web/assets/{file}`, `GET /web/whoami`, `GET /web/ports/live`
//! (WebSocket), `GET /web/console/{port}/transcript`, `GET|POST
//! /web/signin`, `POST /web/signout`; `GET /` and `GET /web` lead to
//! `/web/`. The console itself is the attach protocol's
//! `/ports/{port}/console`, which takes the login cookie in place of a
//! bearer token (see [`crate::daemon::http::auth`]).

pub mod assets;
pub mod browser_login;
pub mod origin;
pub mod ports_live;
mod routes;
pub mod signin;
mod state;
pub mod transcript;

pub use routes::router;
pub use state::{WebState, login_standing};
