//! The end-to-end rig of serialgate's tests and benches: the real
//! `serialgate` binary as a child process, simulated devices on real
//! pseudo-terminals (`serialgate-sim`), and rmcp's MCP client in between,
//! over stdio or streamable HTTP.
//!
//! - `binary`: which `serialgate` binary runs.
//! - [`console`]: a console connection over the local socket, frame by
//!   frame.
//! - [`client`]: an MCP session with the binary ([`GateClient`]) and the
//!   outcome of a tool call as an agent sees it ([`Outcome`]).
//! - [`daemon`]: the daemon as a child process the test owns (signals,
//!   exit status, stderr, readiness, `[[tokens]]`).
//! - [`rig`]: a simulated device, the gateway and a session ([`rig::Rig`],
//!   [`rig::Gate`]), and the helpers the tests share.
//! - [`updates`]: a client that hears resource updates (subscriptions).
//! - [`load`]: many talking devices and many HTTP sessions, nothing lost
//!   (the load test and its bench).
//! - [`tls`]: a test CA and its certificates (the openssl CLI), and a
//!   rustls client config trusting only it; [`mcp_post`]: an MCP client on
//!   one kept-alive HTTP/1.1 connection, plain or TLS (the TLS bench).
//! - [`nats`]: a real `nats-server` on free loopback ports, killed and
//!   started again (the fleet tests).
//! - [`web`]: the web view's site (two devices, the daemon over HTTP,
//!   four tokens); [`browser`]: headless Chromium over WebDriver.
//! - [`frr`]: FRRouting's daemons started by the test, isolated from the
//!   machine and from each other, and its shell vtysh for a program line.
//! - [`pdu`]: the PDU the kit plays (its outlet table) and the outlet
//!   watcher that powers a simulated device from one of its outlets;
//!   [`nut`]: it behind NUT's real `upsd`; [`snmp`]: it behind net-snmp's
//!   real `snmpd` (v2c and v3 authPriv).
//! - [`program`]: a real program (vtysh, login, a pager) as the device
//!   behind a serial line, on a terminal of its own, respawned like a getty.
//! - [`python`]: the tests' Python environment, where the real Python
//!   clients (the MCP SDK, Netmiko) live.
//! - [`skip`]: a test that cannot run here says why, and fails under CI.
//! - [`spread`]: the median, 99th percentile and worst of a bench's
//!   latencies.
//! - [`wait`]: the one poll, for state nothing announces: a check run
//!   with backoff until it holds or its deadline passes.
//! - [`webhook`]: an alert webhook receiver on loopback.
#![deny(missing_docs)]

pub mod binary;
pub mod browser;
pub mod client;
pub mod console;
pub mod daemon;
pub mod frr;
pub mod ipmi;
pub mod load;
pub mod mcp_post;
pub mod nats;
pub mod nut;
pub mod pdu;
pub mod program;
pub mod python;
pub mod redfish;
pub mod rig;
pub mod skip;
pub mod snmp;
pub mod spread;
pub mod tls;
pub mod updates;
pub mod wait;
pub mod web;
pub mod webhook;

pub use binary::binary;
pub use client::{GateClient, Outcome};
