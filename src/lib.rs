//! serialgate: the serial consoles of routers, switches and other equipment,
//! in reach of AI agents over MCP.
//!
//! # Layout
//!
//! - [`settings`]: serial line settings and line endings, plain values.
//! - [`config`] and [`presets`]: the TOML config and the device presets.
//! - [`log`]: the OutputLog, every byte a device sent at absolute offsets.
//! - [`matcher`]: incremental prompt and auto-reply trigger matching;
//!   [`automata`] keeps their Aho-Corasick automata between calls.
//! - [`clean`]: what an engineer would read, from raw console bytes.
//! - [`terminal`]: key names, the VT100 screen, terminal query answers.
//! - [`port`]: one serial line: device, reader task, writer, state, waits.
//! - [`gateway`]: every port of the daemon, configured or ad-hoc.
//! - [`mcp`]: the MCP tools, thin over the ports; [`daemon`] serves them
//!   over stdio or over streamable HTTP with bearer tokens
//!   ([`daemon::http`], whose `listener` holds the connection limits
//!   against hostile networks), and runs the daemon's life: signals,
//!   reload, readiness, shutdown.
//! - [`audit`], [`transcript`] and [`logfile`]: the audit trail and the
//!   per-port transcripts, appended and rotated without following links.
//! - [`daemon::logging`]: the daemon's own log (one line per event, rmcp
//!   held at `warn`); [`daemon::fd_limit`]: the open-files limit raised at
//!   start.
//! - [`devices`]: serial devices present on the machine.
//! - [`remote`]: remote consoles (telnet, RFC 2217, raw TCP) behind device
//!   URLs, and which of them ad-hoc connects may reach (`remote::allow`,
//!   by resolved address).
//! - [`error`]: the stable error codes of tool results; [`sync`]: locks
//!   that outlive a panic.
//! - [`sim`]: simulated devices on pseudo-terminals (tests, demo, benches).
//! - [`client`] and [`demo`]: an MCP client of the binary, and the demo.
//!
//! Dependencies point inwards: `mcp` → `gateway` → `port` → `log`/`matcher`.
#![deny(missing_docs)]

pub mod audit;
pub mod automata;
pub mod clean;
pub mod client;
pub mod config;
pub mod daemon;
pub mod demo;
pub mod devices;
pub mod error;
pub mod gateway;
pub mod log;
pub mod logfile;
pub mod matcher;
pub mod mcp;
pub mod port;
pub mod remote;
pub mod settings;
pub mod sim;
pub mod sync;
pub mod terminal;
pub mod transcript;
pub mod udev;

/// The built-in device presets, beside the config that extends them.
pub use config::presets;
