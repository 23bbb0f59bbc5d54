//! serialgate: the serial consoles of routers, switches and other equipment,
//! in reach of AI agents over MCP.
//!
//! The public surface is what the library offers beside the binary: the
//! config and presets, [`daemon::serve`], the console client
//! ([`console::client::run`]), the device listing and udev rules, the demo, and the sans-I/O core (settings, log, matcher, clean)
//! that fuzz targets and benches drive directly. Everything else is
//! `pub(crate)`.
//!
//! # Layout
//!
//! - [`settings`]: serial line settings and line endings, plain values.
//! - [`config`] and [`presets`]: the TOML config and the device presets.
//! - [`log`]: the OutputLog, every byte a device sent at absolute offsets.
//! - [`matcher`]: incremental prompt and auto-reply trigger matching;
//!   `automata` keeps their Aho-Corasick automata between calls.
//! - [`watchset`]: standing watches matched line by line as output
//!   arrives (alerts).
//! - `metrics`: the Prometheus metrics (`prometheus-client`), counted as
//!   things happen and read from the ports at each scrape.
//! - [`tls`]: TLS with rustls: the listener's certificate and key files
//!   (read again on reload), what the daemon's clients trust.
//! - `webhook`: alerts POSTed, signed, through a bounded queue that
//!   never blocks the reader.
//! - [`clean`]: what an engineer would read, from raw console bytes.
//! - [`parse`]: structured output, a command's clean output through the
//!   TextFSM template the ntc-templates index assigns it.
//! - `terminal`: key names, the VT100 screen, terminal query answers.
//! - `port`: one serial line: device, reader task, writer, state, waits.
//! - `gateway`: every port of the daemon, configured or ad-hoc.
//! - `power`: the outlets feeding a port's device, switched through their
//!   controllers (NUT), busy and rested daemon-wide.
//! - `access`: who is calling (`access::caller`) and what each caller may
//!   do (`access::rules`): which ports, the write hold, which tools; every
//!   door (MCP, the console socket and WebSocket, the web view, metrics)
//!   asks it.
//! - `fleet`: gateways of many sites joined over NATS: subjects,
//!   announcements, the serving gateway's directory, forwarded calls.
//! - `last_prompt`: the prompt a port's log ends with, and the mode a
//!   preset's modes judge it to be.
//! - `mcp`: the MCP tools, thin over the ports; [`daemon`] serves them
//!   over stdio or over streamable HTTP with bearer tokens
//!   (`daemon::http`, whose `listener` holds the connection limits
//!   against hostile networks), and runs the daemon's life: signals,
//!   reload, readiness, shutdown.
//! - [`console`]: people at a port: the attach protocol
//!   (`console::protocol`) and the terminal client, `serialgate console`
//!   ([`console::client`]).
//! - `audit`, `transcript` and `logfile`: the audit trail and the
//!   per-port transcripts, appended and rotated without following links.
//! - [`daemon::logging`]: the daemon's own log (one line per event, rmcp
//!   held at `warn`); `daemon::fd_limit`: the open-files limit raised at
//!   start.
//! - [`devices`]: serial devices present on the machine.
//! - `remote`: remote consoles (telnet, RFC 2217, raw TCP) behind device
//!   URLs, and which of them ad-hoc connects may reach (`remote::allow`,
//!   by resolved address).
//! - `error`: the stable error codes of tool results; `sync`: locks
//!   that outlive a panic; `task`: tasks spawned boxed, one copy of
//!   tokio's task machinery per output type.
//! - [`demo`]: `serialgate demo`, a scripted agent session with a simulated
//!   switch (the `serialgate-sim` crate) through the real binary.
//! - [`entry`]: the binary's asynchronous commands, boxed in this crate
//!   so that the binary does not compile the daemon a second time.
//!
//! Dependencies point inwards: `mcp` → `access` → `gateway` → `port` →
//! `log`/`matcher`.
#![deny(missing_docs)]

pub(crate) mod access;
pub(crate) mod audit;
pub(crate) mod automata;
pub mod clean;
pub mod config;
pub mod console;
pub mod daemon;
pub mod demo;
pub mod devices;
pub mod entry;
pub(crate) mod error;
pub(crate) mod files;
pub(crate) mod fleet;
pub(crate) mod gateway;
pub(crate) mod last_prompt;
pub mod log;
pub(crate) mod logfile;
pub mod matcher;
pub(crate) mod mcp;
pub(crate) mod metrics;
pub mod parse;
pub(crate) mod port;
pub(crate) mod power;
pub(crate) mod remote;
pub mod settings;
pub(crate) mod sync;
pub(crate) mod task;
pub(crate) mod terminal;
pub mod tls;
pub(crate) mod transcript;
pub mod udev;
pub mod watchset;
pub(crate) mod webhook;

/// The built-in device presets, beside the config that extends them.
pub use config::presets;
/// How many auto-replies one wait sends at most unless told otherwise.
pub use port::wait::{DEFAULT_MAX_AUTO_REPLIES, MAX_FRUITLESS_REPLIES};

/// What a serving gateway keeps of `announcements` (each a site's name
/// and its announcement as it publishes it): its directory of the fleet,
/// each read, bounded and cleaned as when it arrives from NATS, held while
/// the value lives. For the fleet bench, which counts the memory it holds
/// per announced port; `Err` says which announcement does not read.
#[doc(hidden)]
pub fn fleet_directory_of(
    announcements: &[(String, Vec<u8>)],
) -> Result<Box<dyn std::any::Any>, String> {
    let directory = fleet::directory::Directory::default();
    for (site, payload) in announcements {
        let read = fleet::wire::read_announcement(payload).map_err(|e| format!("{site}: {e}"))?;
        if !directory.heard(site, read.ports) {
            return Err(format!("{site}: the directory is full"));
        }
    }
    Ok(Box::new(directory))
}
