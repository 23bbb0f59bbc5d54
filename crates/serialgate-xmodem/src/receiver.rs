//! The receiving side: asks with `C` (CRC-16) or NAK (checksum) until the
//! first block comes, checks each block, answers ACK or (after the line
//! went quiet) NAK, takes a repeated block as a lost ACK, ends at EOT; for
//! YMODEM it reads the header block first and the null header last, and
//! keeps exactly the size the header gave.

use std::time::Instant;

use super::frame::{Check, FrameError, decode};
use super::header::FileHeader;
use super::{
    ACK, CAN, CANCEL, CRC_START, EOT, Failure, NAK, Poll, Protocol, SOH, STX, Stats, Timing,
};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// Asking for the first block (XMODEM's block 1, YMODEM's header).
    Start,
    /// YMODEM: the header was acknowledged; asking for block 1.
    AfterHeader,
    /// Data blocks.
    Data,
    /// YMODEM: the first EOT was answered with NAK; waiting for the second.
    Eot,
    /// YMODEM: asking for the next header (the null one ends the batch).
    End,
    Done,
    Failed(Failure),
}

/// An XMODEM or YMODEM receiver of one file, which the driver takes out
/// piece by piece with [`Receiver::take_data`].
#[derive(Debug)]
pub struct Receiver {
    protocol: Protocol,
    timing: Timing,
    check: Check,
    phase: Phase,
    buf: Vec<u8>,
    out: Vec<u8>,
    data: Vec<u8>,
    deadline: Instant,
    /// When the receiver gives up asking for the first block.
    start_until: Instant,
    /// Discarding input until the line is quiet, then NAK.
    purging: bool,
    tries: u32,
    expected: u8,
    last_was_can: bool,
    header: Option<FileHeader>,
    /// Payload bytes still to keep (YMODEM's size), `None`: all.
    remaining: Option<u64>,
    /// Most bytes accepted before the receiver cancels.
    max_bytes: u64,
    stats: Stats,
}

impl Receiver {
    /// A receiver that asks at once (its first `C`, or NAK with
    /// `checksum`), accepting at most `max_bytes`.
    pub fn new(
        protocol: Protocol,
        checksum: bool,
        max_bytes: u64,
        timing: Timing,
        now: Instant,
    ) -> Receiver {
        let check = if checksum && protocol == Protocol::Xmodem {
            Check::Checksum
        } else {
            Check::Crc16
        };
        let mut r = Receiver {
            protocol,
            timing,
            check,
            phase: Phase::Start,
            buf: Vec::new(),
            out: Vec::new(),
            data: Vec::new(),
            deadline: now + timing.start_interval,
            start_until: now + timing.start,
            purging: false,
            tries: 0,
            expected: if protocol == Protocol::Ymodem { 0 } else { 1 },
            last_was_can: false,
            header: None,
            remaining: None,
            max_bytes,
            stats: Stats::default(),
        };
        r.ask();
        r
    }

    /// YMODEM's header: the name and size the sender gave.
    pub fn header(&self) -> Option<&FileHeader> {
        self.header.as_ref()
    }

    /// What the transfer did so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The check in use.
    pub fn check(&self) -> Check {
        self.check
    }

    /// Whether the first block has come.
    pub fn started(&self) -> bool {
        self.phase != Phase::Start
    }

    /// The file's bytes accepted since the last call.
    pub fn take_data(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.data)
    }

    fn ask(&mut self) {
        self.out.push(match self.check {
            Check::Crc16 => CRC_START,
            Check::Checksum => NAK,
        });
    }

    /// What to do next.
    pub fn poll(&mut self) -> Poll {
        if !self.out.is_empty() {
            let out = std::mem::take(&mut self.out);
            self.stats.line_bytes += out.len() as u64;
            return Poll::Write(out);
        }
        match &self.phase {
            Phase::Done => Poll::Done,
            Phase::Failed(f) => Poll::Failed(f.clone()),
            _ => Poll::Wait(self.deadline),
        }
    }

    /// Stops: CAN CAN goes to the sender, and the transfer fails as
    /// cancelled.
    pub fn cancel(&mut self) {
        self.fail(Failure::Cancelled);
    }

    fn fail(&mut self, why: Failure) {
        if matches!(self.phase, Phase::Done | Phase::Failed(_)) {
            return;
        }
        self.out.clear();
        self.out.extend_from_slice(&CANCEL);
        self.phase = Phase::Failed(why);
    }

    fn over(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Failed(_))
    }

    /// What the sender sent.
    pub fn input(&mut self, bytes: &[u8], now: Instant) {
        if self.phase == Phase::Done {
            self.linger(bytes);
            return;
        }
        if self.over() {
            return;
        }
        if self.purging {
            self.deadline = now + self.timing.purge;
            return;
        }
        self.buf.extend_from_slice(bytes);
        while !self.over() && !self.purging {
            // Outside a block only SOH, STX, EOT and CAN mean anything.
            let start = self
                .buf
                .iter()
                .position(|&b| matches!(b, SOH | STX | EOT | CAN));
            if start != Some(0) && self.phase != Phase::Start && !self.buf.is_empty() {
                // Noise where a block was due: resynchronise by waiting
                // for quiet and asking again (a stray EOT in it must not
                // end the file).
                self.buf.clear();
                self.last_was_can = false;
                self.bad(now);
                return;
            }
            let Some(start) = start else {
                self.buf.clear();
                self.last_was_can = false;
                return;
            };
            if start > 0 {
                self.last_was_can = false;
            }
            self.buf.drain(..start);
            match self.buf[0] {
                CAN => {
                    self.buf.remove(0);
                    if self.last_was_can {
                        self.out.clear();
                        self.phase = Phase::Failed(Failure::CancelledByPeer);
                        return;
                    }
                    self.last_was_can = true;
                }
                EOT => {
                    self.buf.remove(0);
                    self.last_was_can = false;
                    self.eot(now);
                }
                _ => {
                    self.last_was_can = false;
                    match decode(&self.buf, self.check) {
                        Err(FrameError::Incomplete) => {
                            // The rest of the block is due within the answer time.
                            self.deadline = now + self.timing.answer;
                            return;
                        }
                        Err(_) => {
                            self.buf.clear();
                            self.bad(now);
                        }
                        Ok((frame, len)) => {
                            self.buf.drain(..len);
                            self.block(frame.seq, frame.data, now);
                        }
                    }
                }
            }
        }
    }

    /// Over, the receiver still answers the sender's repeat of its last
    /// step (EOT, YMODEM's null header) whose ACK the line lost, so that
    /// the sender ends well too.
    fn linger(&mut self, bytes: &[u8]) {
        if bytes.first() == Some(&EOT)
            || matches!(decode(bytes, self.check), Ok((frame, _)) if frame.seq == 0)
        {
            self.out.push(ACK);
        }
    }

    /// A damaged block: wait for quiet, then NAK (in `timeout`).
    fn bad(&mut self, now: Instant) {
        self.stats.retries += 1;
        self.tries += 1;
        if self.tries > self.timing.max_retries {
            self.fail(Failure::TooManyRetries(self.tries));
            return;
        }
        self.purging = true;
        self.deadline = now + self.timing.purge;
    }

    fn eot(&mut self, now: Instant) {
        match self.phase {
            Phase::Data if self.protocol == Protocol::Ymodem => {
                self.out.push(NAK);
                self.phase = Phase::Eot;
            }
            Phase::Data | Phase::Start => {
                self.out.push(ACK);
                self.phase = Phase::Done;
                return;
            }
            Phase::Eot => {
                self.out.push(ACK);
                self.ask();
                self.phase = Phase::End;
                self.expected = 0;
            }
            // A repeated EOT (our ACK was lost), or an empty file.
            Phase::End | Phase::AfterHeader => {
                self.out.push(ACK);
                if self.phase == Phase::AfterHeader {
                    self.ask();
                    self.phase = Phase::End;
                    self.expected = 0;
                }
            }
            _ => {}
        }
        self.deadline = now + self.timing.answer;
    }

    fn block(&mut self, seq: u8, data: Vec<u8>, now: Instant) {
        self.deadline = now + self.timing.answer;
        if seq == self.expected.wrapping_sub(1) && self.started() && self.phase != Phase::End {
            // Our ACK of it was lost: acknowledge again, keep nothing.
            self.out.push(ACK);
            return;
        }
        if seq != self.expected {
            self.fail(Failure::Protocol(format!(
                "block {seq} came where block {} was due",
                self.expected
            )));
            return;
        }
        self.tries = 0;
        match self.phase {
            Phase::Start | Phase::End if self.protocol == Protocol::Ymodem => {
                match FileHeader::decode(&data) {
                    Ok(None) => {
                        self.out.push(ACK);
                        self.phase = Phase::Done;
                    }
                    Ok(Some(_)) if self.phase == Phase::End => self.fail(Failure::Protocol(
                        "the sender sent a second file; one file per transfer".into(),
                    )),
                    Ok(Some(header)) => {
                        if header.size.is_some_and(|s| s > self.max_bytes) {
                            self.fail(Failure::Protocol(format!(
                                "the file is {} bytes; at most {} are accepted",
                                header.size.unwrap_or_default(),
                                self.max_bytes
                            )));
                            return;
                        }
                        self.remaining = header.size;
                        self.header = Some(header);
                        self.out.push(ACK);
                        self.ask();
                        self.phase = Phase::AfterHeader;
                        self.expected = 1;
                    }
                    Err(why) => self.fail(Failure::Protocol(why)),
                }
            }
            _ => {
                let keep = match self.remaining {
                    Some(left) => {
                        let keep = left.min(data.len() as u64);
                        self.remaining = Some(left - keep);
                        keep as usize
                    }
                    None => data.len(),
                };
                if self.stats.bytes + keep as u64 > self.max_bytes {
                    self.fail(Failure::Protocol(format!(
                        "the file is over {} bytes, the most accepted",
                        self.max_bytes
                    )));
                    return;
                }
                self.data.extend_from_slice(&data[..keep]);
                self.stats.blocks += 1;
                self.stats.bytes += keep as u64;
                self.out.push(ACK);
                self.phase = Phase::Data;
                self.expected = self.expected.wrapping_add(1);
            }
        }
    }

    /// The deadline of the last [`Poll::Wait`] passed with no input.
    pub fn timeout(&mut self, now: Instant) {
        if self.over() || now < self.deadline {
            return;
        }
        if self.purging {
            self.purging = false;
            self.out.push(NAK);
            self.deadline = now + self.timing.answer;
            return;
        }
        match self.phase {
            Phase::Start | Phase::AfterHeader | Phase::End if self.buf.is_empty() => {
                if self.phase == Phase::Start && now >= self.start_until {
                    self.phase = Phase::Failed(Failure::NoStart);
                    return;
                }
                // The start is bounded by its time (`start`), not by tries:
                // its requests must not use up the retries of the first
                // block, which a damaged first block then needs.
                if self.phase != Phase::Start {
                    self.tries += 1;
                    if self.tries > self.timing.max_retries {
                        self.fail(Failure::TooManyRetries(self.tries));
                        return;
                    }
                }
                self.ask();
                // Quick requests wake a sender at the start; after a header
                // or an EOT the sender is there already, and each request
                // is a try that must leave it the answer time to repeat.
                self.deadline = now
                    + if self.phase == Phase::Start {
                        self.timing.start_interval
                    } else {
                        self.timing.answer
                    };
            }
            _ => {
                // Half a block, or nothing where a block or EOT was due.
                self.buf.clear();
                self.stats.retries += 1;
                self.tries += 1;
                if self.tries > self.timing.max_retries {
                    self.fail(Failure::TooManyRetries(self.tries));
                    return;
                }
                self.out.push(NAK);
                self.deadline = now + self.timing.answer;
            }
        }
    }
}
