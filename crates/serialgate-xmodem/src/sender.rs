//! The sending side: waits for the receiver's `C` (CRC-16) or NAK
//! (checksum), sends YMODEM's header block if asked, then each block until
//! it is acknowledged (again after a NAK or a timeout, up to the retry
//! limit), then EOT, and for YMODEM the null header that ends the batch.

use std::time::Instant;

use super::frame::{Check, encode};
use super::header::FileHeader;
use super::{ACK, CAN, CANCEL, CRC_START, EOT, Failure, NAK, PAD, Poll, Protocol, Stats, Timing};

/// How long the sender waits for an answer: longer than the receiver
/// waits for a block (and not a multiple of it), so that after a loss the
/// receiver's NAK decides, not a resend crossing it on the line, which
/// would be answered twice and put the two sides a block apart.
fn sender_patience(timing: Timing) -> std::time::Duration {
    timing.answer * 8 / 5
}

/// What the sender waits to have acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sent {
    /// YMODEM's header block 0.
    Header,
    /// The data block at this index (its number is index + 1).
    Block(u64),
    /// EOT.
    Eot,
    /// YMODEM's null header, the end of the batch.
    NullHeader,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    /// Waiting for the receiver's start request.
    Start,
    /// Waiting for the ACK of what was sent; `tries` so far.
    Ack {
        sent: Sent,
        tries: u32,
    },
    /// YMODEM: waiting for the `C` that asks for `next` (after the header,
    /// after the last EOT).
    AskedFor {
        next: Sent,
    },
    /// Text came where the last step's ACK was due: the receiver's shell
    /// back at its prompt (lrzsz loses its last ACK as it exits), or line
    /// noise in place of an answer. An ACK or NAK still decides; a prompt,
    /// or quiet for as long as the tries left would wait, ends the send
    /// unconfirmed.
    Ending {
        sent: Sent,
        tries: u32,
        /// Text bytes seen since the last step.
        text: u32,
    },
    Done,
    Failed(Failure),
}

/// An XMODEM or YMODEM sender of one file held in memory.
#[derive(Debug)]
pub struct Sender {
    protocol: Protocol,
    name: String,
    data: Vec<u8>,
    timing: Timing,
    state: State,
    check: Check,
    /// 1024 or 128: the size of full blocks once the check is known.
    block: usize,
    deadline: Instant,
    out: Vec<u8>,
    last_was_can: bool,
    /// The previous byte seen while waiting to start (text around a `C`).
    previous: u8,
    /// EOTs answered with NAK so far (YMODEM receivers NAK the first).
    eot_naks: u32,
    stats: Stats,
}

impl Sender {
    /// A sender of `data` as `name` (YMODEM's header carries the name and
    /// the size), waiting for the receiver from `now`.
    pub fn new(
        protocol: Protocol,
        name: &str,
        data: Vec<u8>,
        timing: Timing,
        now: Instant,
    ) -> Sender {
        Sender {
            protocol,
            name: name.to_owned(),
            data,
            timing,
            state: State::Start,
            check: Check::Crc16,
            block: 1024,
            deadline: now + timing.start,
            out: Vec::new(),
            last_was_can: false,
            previous: b'\n',
            eot_naks: 0,
            stats: Stats::default(),
        }
    }

    /// What the transfer did so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The check in use (CRC-16 until a receiver asked for the checksum).
    pub fn check(&self) -> Check {
        self.check
    }

    /// Whether the receiver has started the transfer.
    pub fn started(&self) -> bool {
        self.state != State::Start
    }

    /// How many data blocks the file takes at the current block size.
    pub fn total_blocks(&self) -> u64 {
        let len = self.data.len() as u64;
        let full = self.block_size() as u64;
        len / full + u64::from(!len.is_multiple_of(full))
    }

    fn block_size(&self) -> usize {
        match (self.protocol, self.check) {
            (Protocol::Xmodem, _) | (_, Check::Checksum) => 128,
            _ => self.block,
        }
    }

    /// Offset and length of data block `index`: full blocks, and a tail
    /// of 128 bytes or less in a 128-byte block.
    fn block_span(&self, index: u64) -> Option<(usize, usize, usize)> {
        let size = self.block_size();
        let offset = usize::try_from(index).ok()?.checked_mul(size)?;
        if offset >= self.data.len() {
            return None;
        }
        let len = (self.data.len() - offset).min(size);
        let frame = if len <= 128 { 128 } else { size };
        Some((offset, len, frame))
    }

    /// What to do next.
    pub fn poll(&mut self) -> Poll {
        if !self.out.is_empty() {
            let out = std::mem::take(&mut self.out);
            self.stats.line_bytes += out.len() as u64;
            return Poll::Write(out);
        }
        match &self.state {
            State::Done => Poll::Done,
            State::Failed(f) => Poll::Failed(f.clone()),
            _ => Poll::Wait(self.deadline),
        }
    }

    /// Stops: CAN CAN goes to the receiver, and the transfer fails as
    /// cancelled. Nothing happens once it is over.
    pub fn cancel(&mut self) {
        if matches!(self.state, State::Done | State::Failed(_)) {
            return;
        }
        self.out.clear();
        if self.started() {
            self.out.extend_from_slice(&CANCEL);
        }
        self.state = State::Failed(Failure::Cancelled);
    }

    /// What the receiver sent.
    pub fn input(&mut self, bytes: &[u8], now: Instant) {
        for (i, &b) in bytes.iter().enumerate() {
            if matches!(self.state, State::Done | State::Failed(_)) {
                return;
            }
            if b == CAN {
                if self.last_was_can {
                    self.out.clear();
                    self.state = State::Failed(Failure::CancelledByPeer);
                    return;
                }
                self.last_was_can = true;
                continue;
            }
            self.last_was_can = false;
            let next = bytes.get(i + 1).copied();
            self.byte(b, next, now);
        }
    }

    fn byte(&mut self, b: u8, next: Option<u8>, now: Instant) {
        match self.state.clone() {
            State::Start => {
                let alone = |c: Option<u8>| !c.is_some_and(|c| c.is_ascii_alphanumeric());
                let previous = std::mem::replace(&mut self.previous, b);
                let start_crc = b == CRC_START
                    && (previous == CRC_START || alone(Some(previous)))
                    && (next == Some(CRC_START) || alone(next));
                if start_crc {
                    self.check = Check::Crc16;
                } else if b == NAK {
                    self.check = Check::Checksum;
                } else {
                    return;
                }
                match self.protocol {
                    Protocol::Ymodem => self.send(Sent::Header, 0, now),
                    _ => self.send_after(None, now),
                }
            }
            State::Ack { sent, tries } => match b {
                ACK => self.acked(sent, now),
                NAK => {
                    let expected = sent == Sent::Eot
                        && self.protocol == Protocol::Ymodem
                        && self.eot_naks == 0;
                    if sent == Sent::Eot {
                        self.eot_naks += 1;
                    }
                    if expected {
                        self.send(sent, tries, now);
                    } else {
                        self.retry(sent, tries, now);
                    }
                }
                _ if self.is_last(sent) && is_text(b) => {
                    // Sending the end again could type it into a shell
                    // (EOT is Ctrl-D): wait and see which it was.
                    self.state = State::Ending {
                        sent,
                        tries,
                        text: 0,
                    };
                    self.deadline = now + sender_patience(self.timing);
                    self.ending_text(b);
                }
                _ => {}
            },
            State::Ending { sent, tries, .. } => match b {
                ACK => self.acked(sent, now),
                // The receiver is still there: the text was noise. (A
                // YMODEM receiver asks for the null header again with `C`.)
                NAK => self.retry(sent, tries, now),
                CRC_START if sent == Sent::NullHeader => self.retry(sent, tries, now),
                _ if is_text(b) => self.ending_text(b),
                _ => {}
            },
            State::AskedFor { next } if b == CRC_START => self.send(next, 0, now),
            _ => {}
        }
    }

    /// One more byte of text after the last step; a prompt's last
    /// character after other text ends the send, since the receiver is gone
    /// and its shell talks again.
    fn ending_text(&mut self, b: u8) {
        let State::Ending { text, .. } = &mut self.state else {
            return;
        };
        *text += 1;
        if *text >= 2 && PROMPT_ENDS.contains(&b) {
            self.end_unconfirmed();
        }
    }

    fn end_unconfirmed(&mut self) {
        self.stats.end_unconfirmed = true;
        self.state = State::Done;
    }

    /// The receiver acknowledged `sent`.
    fn acked(&mut self, sent: Sent, now: Instant) {
        match sent {
            Sent::Header => {
                self.state = State::AskedFor {
                    next: self.first_after_header(),
                };
                self.deadline = now + self.timing.answer;
            }
            Sent::Block(index) => {
                if let Some((_, len, _)) = self.block_span(index) {
                    self.stats.blocks += 1;
                    self.stats.bytes += len as u64;
                }
                self.send_after(Some(index), now);
            }
            Sent::Eot if self.protocol == Protocol::Ymodem => {
                self.state = State::AskedFor {
                    next: Sent::NullHeader,
                };
                self.deadline = now + self.timing.answer;
            }
            Sent::Eot | Sent::NullHeader => self.state = State::Done,
        }
    }

    /// Whether `sent` is the transfer's last step, after which the
    /// receiver exits.
    fn is_last(&self, sent: Sent) -> bool {
        match self.protocol {
            Protocol::Ymodem => sent == Sent::NullHeader,
            Protocol::Xmodem | Protocol::Xmodem1k => sent == Sent::Eot,
        }
    }

    fn first_after_header(&self) -> Sent {
        if self.data.is_empty() {
            Sent::Eot
        } else {
            Sent::Block(0)
        }
    }

    /// Sends the block after `index` (the first with `None`), or EOT.
    fn send_after(&mut self, index: Option<u64>, now: Instant) {
        let next = index.map_or(0, |i| i + 1);
        let what = match self.block_span(next) {
            Some(_) => Sent::Block(next),
            None => Sent::Eot,
        };
        self.send(what, 0, now);
    }

    fn retry(&mut self, sent: Sent, tries: u32, now: Instant) {
        if tries >= self.timing.max_retries {
            self.out.clear();
            self.out.extend_from_slice(&CANCEL);
            self.state = State::Failed(Failure::TooManyRetries(tries));
            return;
        }
        self.stats.retries += 1;
        self.send(sent, tries, now);
    }

    /// Queues `sent` (its `tries`-th try after the first) and waits for
    /// its ACK.
    fn send(&mut self, sent: Sent, tries: u32, now: Instant) {
        match sent {
            Sent::Header => {
                let header = FileHeader {
                    name: self.name.clone(),
                    size: Some(self.data.len() as u64),
                }
                .encode();
                let len = header.len();
                self.out
                    .extend_from_slice(&encode(0, &header, len, 0, self.check));
            }
            Sent::NullHeader => self
                .out
                .extend_from_slice(&encode(0, &[], 128, 0, self.check)),
            Sent::Eot => self.out.push(EOT),
            Sent::Block(index) => {
                let Some((offset, len, frame)) = self.block_span(index) else {
                    return;
                };
                let seq = ((index + 1) % 256) as u8;
                let data = &self.data[offset..offset + len];
                self.out
                    .extend_from_slice(&encode(seq, data, frame, PAD, self.check));
            }
        }
        self.state = State::Ack {
            sent,
            tries: tries + 1,
        };
        self.deadline = now + sender_patience(self.timing);
    }

    /// The deadline of the last [`Poll::Wait`] passed with no answer.
    pub fn timeout(&mut self, now: Instant) {
        if now < self.deadline {
            return;
        }
        match self.state.clone() {
            State::Start => self.state = State::Failed(Failure::NoStart),
            State::Ack { sent, tries } => self.retry(sent, tries, now),
            State::AskedFor { next } => {
                // The receiver's `C` is late: try the next block anyway.
                self.send(next, 1, now);
                self.stats.retries += 1;
            }
            // Text and then quiet for as long as the tries left would
            // wait (a NAK after the noise may be lost too): no receiver
            // answers any more. Nothing is sent meanwhile.
            State::Ending { tries, .. } if tries >= self.timing.max_retries => {
                self.end_unconfirmed()
            }
            State::Ending { sent, tries, text } => {
                self.state = State::Ending {
                    sent,
                    tries: tries + 1,
                    text,
                };
                self.deadline = now + sender_patience(self.timing);
            }
            State::Done | State::Failed(_) => {}
        }
    }
}

/// The characters shells and CLIs end their prompts with.
const PROMPT_ENDS: &[u8] = b"$#>%]";

/// A byte of text a shell or CLI prints (a prompt, a line ending), which
/// no receiver sends in answer to a block: not ACK, NAK, CAN, the `C` of a
/// start request, NUL or flow control.
fn is_text(b: u8) -> bool {
    matches!(b, b'\r' | b'\n') || (b.is_ascii_graphic() && b != CRC_START) || b == b' '
}
