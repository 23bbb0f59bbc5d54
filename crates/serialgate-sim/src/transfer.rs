//! A file transfer inside a simulated boot loader: an XMODEM/YMODEM
//! receiver (ROMMON's `xmodem`, U-Boot's `loady`/`loadx`) or sender on the
//! console, driven by the device's input and timers, with the faults a
//! test asks for applied to what arrives (a block damaged or lost on the
//! line), so the other side's retries are exercised.

use std::time::{Duration, Instant};

use serialgate_xmodem::{ACK, Failure, NAK, Poll, Protocol, Receiver, Sender, Timing};

use super::options::BlockFaults;

/// The most a simulated boot loader takes in (its RAM).
pub const MAX_IMAGE: u64 = 64 * 1024 * 1024;

/// How patient the simulated loaders are: quick to ask again, so that a
/// lost block costs a test a second, not the protocol's ten.
pub fn timing() -> Timing {
    Timing {
        answer: Duration::from_secs(1),
        start: Duration::from_secs(60),
        start_interval: Duration::from_millis(500),
        purge: Duration::from_millis(100),
        max_retries: 10,
    }
}

enum Side {
    Receive(Box<Receiver>),
    Send(Box<Sender>),
}

/// One transfer in progress.
pub struct Transfer {
    side: Side,
    faults: BlockFaults,
    /// Blocks answered so far (each ACK or NAK invites the next block;
    /// the start requests before the first do not count): the index the
    /// faults count in.
    arrival: u64,
    /// This arrival's bytes are being dropped.
    dropping: bool,
    /// This arrival was damaged already.
    damaged: bool,
    /// What was received.
    data: Vec<u8>,
    /// Set once the transfer is over.
    outcome: Option<Result<(), Failure>>,
}

impl std::fmt::Debug for Transfer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transfer")
            .field("arrival", &self.arrival)
            .field("received", &self.data.len())
            .field("outcome", &self.outcome)
            .finish_non_exhaustive()
    }
}

impl Transfer {
    /// A receiver that starts asking at once (with NAK for the checksum,
    /// else with `C` for CRC-16).
    pub fn receive(
        protocol: Protocol,
        checksum: bool,
        faults: BlockFaults,
        out: &mut Vec<u8>,
    ) -> Transfer {
        let receiver = Receiver::new(protocol, checksum, MAX_IMAGE, timing(), Instant::now());
        let mut t = Transfer {
            side: Side::Receive(Box::new(receiver)),
            faults,
            arrival: 0,
            dropping: false,
            damaged: false,
            data: Vec::new(),
            outcome: None,
        };
        t.pump(out);
        t
    }

    /// A sender of `data` as `name`, waiting for the far side to start.
    pub fn send(protocol: Protocol, name: &str, data: Vec<u8>) -> Transfer {
        let sender = Sender::new(protocol, name, data, timing(), Instant::now());
        Transfer {
            side: Side::Send(Box::new(sender)),
            faults: BlockFaults::default(),
            arrival: 0,
            dropping: false,
            damaged: false,
            data: Vec::new(),
            outcome: None,
        }
    }

    /// Whether it is over, and how.
    pub fn outcome(&self) -> Option<&Result<(), Failure>> {
        self.outcome.as_ref()
    }

    /// What was received (whole once the outcome is `Ok`).
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The name YMODEM's header gave.
    pub fn name(&self) -> Option<String> {
        match &self.side {
            Side::Receive(r) => r.header().map(|h| h.name.clone()),
            Side::Send(_) => None,
        }
    }

    /// Bytes from the line.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let now = Instant::now();
        match &mut self.side {
            Side::Receive(r) => {
                if self.faults.drop.contains(&self.arrival) || self.dropping {
                    self.dropping = true;
                } else if self.faults.corrupt.contains(&self.arrival)
                    && !self.damaged
                    && !input.is_empty()
                {
                    self.damaged = true;
                    let mut bytes = input.to_vec();
                    let at = bytes.len().min(40) - 1;
                    bytes[at] ^= 0x20;
                    r.input(&bytes, now);
                } else {
                    r.input(input, now);
                }
            }
            Side::Send(s) => s.input(input, now),
        }
        self.pump(out);
    }

    /// When the machine wants to be woken with no input.
    pub fn deadline(&mut self) -> Option<Instant> {
        if self.outcome.is_some() {
            return None;
        }
        let poll = match &mut self.side {
            Side::Receive(r) => r.poll(),
            Side::Send(s) => s.poll(),
        };
        match poll {
            Poll::Wait(deadline) => Some(deadline),
            _ => Some(Instant::now()),
        }
    }

    /// The deadline passed.
    pub fn tick(&mut self, now: Instant, out: &mut Vec<u8>) {
        match &mut self.side {
            Side::Receive(r) => r.timeout(now),
            Side::Send(s) => s.timeout(now),
        }
        self.pump(out);
    }

    /// Takes what the machine writes, until it waits or ends.
    fn pump(&mut self, out: &mut Vec<u8>) {
        loop {
            let poll = match &mut self.side {
                Side::Receive(r) => {
                    self.data.extend(r.take_data());
                    r.poll()
                }
                Side::Send(s) => s.poll(),
            };
            match poll {
                Poll::Write(bytes) => {
                    out.extend_from_slice(&bytes);
                    if matches!(self.side, Side::Receive(_))
                        && bytes.iter().any(|&b| b == ACK || b == NAK)
                    {
                        // The answer to a block invites the next.
                        self.arrival += 1;
                        self.dropping = false;
                        self.damaged = false;
                    }
                }
                Poll::Wait(_) => return,
                Poll::Done => {
                    self.outcome = Some(Ok(()));
                    return;
                }
                Poll::Failed(f) => {
                    self.outcome = Some(Err(f));
                    return;
                }
            }
        }
    }
}
