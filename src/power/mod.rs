//! Power: the outlets that feed a port's device, switched through the
//! controller (PDU, UPS) that owns them, so that a hung device can be
//! power-cycled and its boot caught.
//!
//! - `driver`: what every driver does (an outlet's state, on, off) and how
//!   it fails; `any`: the driver a controller's config names;
//! - `nut`: the NUT network protocol (RFC 9271) to a `upsd`;
//! - `snmp`: SNMP (v2c, v3 authPriv) to a switched PDU's agent, by
//!   outlet profile (APC, or OIDs the config names);
//! - `redfish`: a server's BMC over Redfish, an outlet being one of its
//!   systems (`redfish_http`: one bounded HTTP/1 request, plain or TLS);
//! - `ipmi`: a server's BMC over IPMI v2.0 LAN (RMCP+), by ipmitool;
//! - `settle`: the wait after a BMC took a command, until its power is
//!   the state asked for;
//! - `board`: who is switching which outlet, and the rest each outlet
//!   gets between calls (busy, the minimum interval), daemon-wide;
//! - `switch`: an action on all of a port's outlets together, each
//!   exchange under its controller's deadline.

mod any;
pub mod board;
pub mod driver;
mod ipmi;
mod nut;
mod redfish;
mod redfish_http;
mod settle;
mod snmp;
pub mod switch;

pub use board::PowerBoard;
pub use driver::Action;
pub use switch::{OutletAnswer, status, switch_outlets};
