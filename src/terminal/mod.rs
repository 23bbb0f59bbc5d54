//! A terminal for full-screen consoles: named keys to the bytes a keyboard
//! sends, the VT100 screen the output draws, and the queries a device asks
//! its terminal. Synchronous and free of I/O, like [`matcher`](crate::matcher).

pub mod keys;
pub mod queries;
pub mod screen;
