//! Simulated devices on pseudo-terminals: the far end of a serial line for
//! the end-to-end tests, `serialgate simulate` and the demo.

pub mod cisco;
mod device;
pub mod pty;

pub use device::{Profile, SimHandle, spawn};
