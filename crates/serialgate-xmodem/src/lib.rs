//! XMODEM (checksum and CRC-16, 128-byte blocks), XMODEM-1K and YMODEM
//! (batch header block 0 with name and size, the null header that ends a
//! batch) as sans-I/O state machines.
//!
//! A [`Sender`] and a [`Receiver`] never read, write or sleep: the driver
//! feeds them what arrived on the line ([`Sender::input`]) and tells them
//! when a wait ran out ([`Sender::timeout`]); they answer with a [`Poll`]:
//! bytes to write, how long to wait for more, or the end. The same driver
//! loop serves a daemon on a serial port, a simulated boot loader on a
//! pseudo-terminal and the in-memory tests that pit one against the other
//! over a lossy line.
//!
//! # Layout
//! - `crc`: CRC-16/XMODEM and the 8-bit checksum.
//! - `frame`: one block on the wire, built and checked.
//! - `header`: YMODEM's block 0 (name, size).
//! - `sender`, `receiver`: the two state machines.
#![deny(missing_docs)]

mod crc;
mod frame;
mod header;
mod receiver;
mod sender;
#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

pub use crc::{checksum, crc16};
pub use frame::{Check, Frame, FrameError, decode, encode};
pub use header::{FileHeader, MAX_NAME};
pub use receiver::Receiver;
pub use sender::Sender;

/// Start of a 128-byte block.
pub const SOH: u8 = 0x01;
/// Start of a 1024-byte block.
pub const STX: u8 = 0x02;
/// End of transmission.
pub const EOT: u8 = 0x04;
/// Block received well.
pub const ACK: u8 = 0x06;
/// Block refused (send it again); also the checksum receiver's start.
pub const NAK: u8 = 0x15;
/// Cancel: two in a row end the transfer.
pub const CAN: u8 = 0x18;
/// The CRC receiver's start request.
pub const CRC_START: u8 = b'C';
/// The padding of a short last XMODEM block (CP/M's end of file).
pub const PAD: u8 = 0x1a;

/// What a side sends to cancel: more than the two CANs the other side
/// needs, so that one lost on the line still leaves two, then backspaces
/// that erase them from a terminal that already left the protocol.
pub const CANCEL: [u8; 8] = [CAN, CAN, CAN, CAN, CAN, 0x08, 0x08, 0x08];

/// Which protocol a transfer speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// 128-byte blocks; the receiver picks CRC-16 (`C`) or the checksum (NAK).
    Xmodem,
    /// 1024-byte blocks (128 for a short tail), CRC-16.
    Xmodem1k,
    /// A header block with name and size, then 1024-byte blocks, CRC-16;
    /// one file per batch here.
    Ymodem,
}

impl Protocol {
    /// The name used in arguments and results.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Xmodem => "xmodem",
            Protocol::Xmodem1k => "xmodem-1k",
            Protocol::Ymodem => "ymodem",
        }
    }

    /// The protocol named `name` (as [`Protocol::name`] spells it, any case).
    pub fn parse(name: &str) -> Option<Protocol> {
        [Protocol::Xmodem, Protocol::Xmodem1k, Protocol::Ymodem]
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }
}

/// How patient a side is. The defaults are the protocols' own: ten
/// seconds for an answer, a minute for the other side to start, ten
/// tries of one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// How long to wait for an answer (an ACK, the rest of a block).
    pub answer: Duration,
    /// How long the sender waits for the receiver's first `C` or NAK, and
    /// how long the receiver keeps asking for the first block.
    pub start: Duration,
    /// How often a receiver repeats its start request.
    pub start_interval: Duration,
    /// How long a receiver waits for the line to go quiet after a bad
    /// block before it answers NAK (so the resent block is not mixed with
    /// the rest of the bad one).
    pub purge: Duration,
    /// How many times one block (or EOT) is tried before giving up.
    pub max_retries: u32,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            answer: Duration::from_secs(10),
            start: Duration::from_secs(60),
            start_interval: Duration::from_secs(3),
            purge: Duration::from_secs(1),
            max_retries: 10,
        }
    }
}

/// What a state machine wants next.
#[derive(Debug, PartialEq, Eq)]
pub enum Poll {
    /// Write these bytes to the line, then poll again.
    Write(Vec<u8>),
    /// Wait for input until this deadline; call `input` with what
    /// arrives, or `timeout` once the deadline has passed.
    Wait(Instant),
    /// The transfer is over and succeeded.
    Done,
    /// The transfer is over and failed (any cancel bytes were written
    /// already).
    Failed(Failure),
}

/// Why a transfer failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The other side never started (no `C`/NAK, or no first block).
    NoStart,
    /// The other side sent CAN CAN.
    CancelledByPeer,
    /// This side was told to cancel ([`Sender::cancel`], [`Receiver::cancel`]).
    Cancelled,
    /// One block failed this many times in a row.
    TooManyRetries(u32),
    /// The other side broke the protocol (a block out of sequence, a bad
    /// header); this side cancelled.
    Protocol(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::NoStart => f.write_str("the other side never started the transfer"),
            Failure::CancelledByPeer => f.write_str("the other side cancelled (CAN CAN)"),
            Failure::Cancelled => f.write_str("cancelled"),
            Failure::TooManyRetries(n) => write!(f, "a block failed {n} times in a row"),
            Failure::Protocol(why) => write!(f, "protocol error: {why}"),
        }
    }
}

/// What a transfer did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Data blocks acknowledged (sender) or accepted (receiver); YMODEM's
    /// header blocks are not counted.
    pub blocks: u64,
    /// Blocks (or EOTs) sent again, or refused, after a NAK or a timeout.
    pub retries: u64,
    /// Payload bytes acknowledged or accepted (the file's bytes, padding
    /// of the last block included for XMODEM).
    pub bytes: u64,
    /// Every byte written to the line, frames and control bytes.
    pub line_bytes: u64,
    /// Sending: the receiver went back to printing text (its shell's
    /// prompt) after the last step (XMODEM's EOT, YMODEM's null header)
    /// without acknowledging it. Every data block was acknowledged. lrzsz
    /// on a pseudo-terminal does this: it writes its last ACK, then
    /// flushes the terminal's queues as it exits, which drops the ACK
    /// unless the other side read it first.
    pub end_unconfirmed: bool,
}
