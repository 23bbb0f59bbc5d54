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
//! - [`web`]: the web view's site (two devices, the daemon over HTTP,
//!   four tokens); [`browser`]: headless Chromium over WebDriver.
//! - [`frr`]: FRRouting's daemons started by the test, isolated from the
//!   machine and from each other, and its shell vtysh for a program line.
//! - [`program`]: a real program (vtysh, login, a pager) as the device
//!   behind a serial line, on a terminal of its own, respawned like a getty.
//! - [`python`]: the tests' Python environment, where the real Python
//!   clients (the MCP SDK, Netmiko) live.
//! - [`skip`]: a test that cannot run here says why, and fails under CI.
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
pub mod load;
pub mod program;
pub mod python;
pub mod rig;
pub mod skip;
pub mod updates;
pub mod wait;
pub mod web;
pub mod webhook;

pub use binary::binary;
pub use client::{GateClient, Outcome};
