//! Simulated devices on pseudo-terminals: the far end of a serial line for
//! the end-to-end tests, `serialgate simulate` and the demo.

#![deny(missing_docs)]

pub mod cisco;
mod cli;
mod device;
pub mod huawei;
pub mod junos;
pub mod menu;
mod options;
pub mod procurve;
pub mod pty;
pub mod shell;
mod transfer;
pub mod uboot;
pub mod utf8;

pub use device::{Profile, SimHandle, spawn, spawn_with};
pub use options::{BlockFaults, Credentials, SimOptions};
