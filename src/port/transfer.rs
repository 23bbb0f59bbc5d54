//! A file transfer on a port (XMODEM, XMODEM-1K, YMODEM, either way):
//! the protocol core (`serialgate-xmodem`) driven by the port's own
//! stream. Its answers are read from the OutputLog like any output, its
//! frames are written under the session's write hold, and while it runs
//! every other write is `busy`, the transcript holds back its binary range
//! for one summary line, and `status` shows its progress. A raised
//! `transfer_baud` is put back however the transfer ends.

use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Serialize;
use serialgate_xmodem::{Failure, Poll, Protocol, Receiver, Sender, Stats, Timing};
use tokio_util::sync::CancellationToken;

use super::{Port, PortState};
use crate::audit::{Actor, AuditRecord};
use crate::error::{ErrorCode, GateError};
use crate::settings::LineSettings;

/// How long the last bytes of a transfer get to leave the line at its
/// speed before the speed is put back.
pub const DRAIN: Duration = Duration::from_millis(200);

/// Which way a transfer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// To the device (`send_file`).
    Send,
    /// From the device (`receive_file`).
    Receive,
}

/// A transfer under way, as `status` shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TransferStatus {
    /// send or receive.
    pub direction: Direction,
    /// xmodem, xmodem-1k or ymodem.
    pub protocol: String,
    /// The file in files_dir.
    pub file: String,
    /// Who runs it.
    pub by: String,
    /// Data blocks done so far.
    pub blocks: u64,
    /// Blocks the file takes (sending; 0 when receiving: unknown).
    pub total_blocks: u64,
    /// Payload bytes done so far.
    pub bytes: u64,
    /// Blocks sent again or refused so far.
    pub retries: u64,
    /// Seconds since it started.
    pub seconds: f64,
    /// The line speed during the transfer.
    pub baud: u32,
    #[serde(skip)]
    #[schemars(skip)]
    started: Option<Instant>,
}

/// How a transfer went.
#[derive(Debug, Clone)]
pub struct TransferReport {
    /// The protocol's counters at the end.
    pub stats: Stats,
    /// Wall time from the first byte written or read to the end.
    pub seconds: f64,
    /// The line speed during the transfer.
    pub baud: u32,
    /// The line settings after (the configured ones put back).
    pub settings_after: LineSettings,
    /// Received data (receiving).
    pub data: Vec<u8>,
    /// The name YMODEM's header gave (receiving).
    pub header_name: Option<String>,
    /// The size YMODEM's header gave (receiving).
    pub header_size: Option<u64>,
    /// Where in the OutputLog the last answer the transfer read starts:
    /// what the device printed after it is from here on.
    pub end_offset: u64,
}

/// Told a transfer's status each time its blocks grow.
pub type ProgressFn = Arc<dyn Fn(&TransferStatus) + Send + Sync>;

/// What a transfer is asked to do.
pub struct TransferJob {
    /// Which way.
    pub direction: Direction,
    /// The protocol.
    pub protocol: Protocol,
    /// The file's name (shown in status, YMODEM's header when sending).
    pub file: String,
    /// The file (sending).
    pub data: Vec<u8>,
    /// Most bytes accepted (receiving).
    pub max_bytes: u64,
    /// The speed to switch to for the transfer, if any.
    pub baud: Option<u32>,
    /// How long to wait for the other side to start.
    pub start_timeout: Duration,
    /// Ends the transfer (CAN CAN) when cancelled.
    pub cancel: CancellationToken,
    /// Told the blocks done each time they grow.
    pub progress: Option<ProgressFn>,
}

enum Side {
    Send(Box<Sender>),
    Receive(Box<Receiver>),
}

impl Side {
    fn poll(&mut self) -> Poll {
        match self {
            Side::Send(s) => s.poll(),
            Side::Receive(r) => r.poll(),
        }
    }
    fn input(&mut self, bytes: &[u8], now: Instant) {
        match self {
            Side::Send(s) => s.input(bytes, now),
            Side::Receive(r) => r.input(bytes, now),
        }
    }
    fn timeout(&mut self, now: Instant) {
        match self {
            Side::Send(s) => s.timeout(now),
            Side::Receive(r) => r.timeout(now),
        }
    }
    fn cancel(&mut self) {
        match self {
            Side::Send(s) => s.cancel(),
            Side::Receive(r) => r.cancel(),
        }
    }
    fn stats(&self) -> Stats {
        match self {
            Side::Send(s) => s.stats(),
            Side::Receive(r) => r.stats(),
        }
    }
}

impl Port {
    /// The transfer under way, with its progress now.
    pub fn transfer(&self) -> Option<TransferStatus> {
        let mut status = crate::sync::lock(&self.shared.transfer).clone()?;
        if let Some(started) = status.started {
            status.seconds = round_ms(started.elapsed().as_secs_f64());
        }
        Some(status)
    }

    /// `busy` while a transfer runs: no other bytes may enter its stream.
    pub(crate) fn refuse_during_transfer(&self) -> Result<(), GateError> {
        match &*crate::sync::lock(&self.shared.transfer) {
            None => Ok(()),
            Some(t) => Err(GateError::new(
                ErrorCode::Busy,
                format!(
                    "{} is in a file transfer ({} {} {}, {} blocks done, by {}); writing now would break it. Wait for it to end (status shows its progress), or have its caller cancel it",
                    self.name(),
                    match t.direction {
                        Direction::Send => "sending",
                        Direction::Receive => "receiving",
                    },
                    t.protocol,
                    t.file,
                    t.blocks,
                    t.by
                ),
            )),
        }
    }

    /// Runs a transfer for `actor`, who must hold (or get) the write hold.
    /// The speed asked for is put back, the transcript gets its summary
    /// line and the status its end, whatever happens.
    pub async fn run_transfer(
        &self,
        actor: &Actor,
        job: TransferJob,
    ) -> Result<TransferReport, GateError> {
        self.claim_writer(actor, false)?;
        if self.state() != PortState::Open {
            return Err(self.not_open_error());
        }
        let before = self.line_settings();
        let baud = job.baud.unwrap_or(before.baud);
        {
            let mut slot = crate::sync::lock(&self.shared.transfer);
            if slot.is_some() {
                drop(slot);
                return Err(self
                    .refuse_during_transfer()
                    .err()
                    .unwrap_or_else(|| GateError::invalid("a transfer is under way")));
            }
            *slot = Some(TransferStatus {
                direction: job.direction,
                protocol: job.protocol.name().to_owned(),
                file: job.file.clone(),
                by: actor.describe(),
                blocks: 0,
                total_blocks: 0,
                bytes: 0,
                retries: 0,
                seconds: 0.0,
                baud,
                started: Some(Instant::now()),
            });
        }
        let from = self.log().head();
        if let Some(t) = &self.shared.transcript {
            t.binary_begin(from);
        }
        let direction = job.direction;
        let (protocol, file) = (job.protocol, job.file.clone());
        let switched = match job.baud {
            Some(b) if b != before.baud => {
                let line = LineSettings { baud: b, ..before };
                self.set_line_settings(line).await.map(|_| true)
            }
            _ => Ok(false),
        };
        let was_switched = matches!(switched, Ok(true));
        let result = match switched {
            Ok(_) => self.drive(job).await,
            Err(e) => Err(e),
        };
        // Put the speed back whether it worked or not, once the last bytes
        // (an ACK, CAN CAN) have left at the transfer's speed.
        let mut restore_error = None;
        if was_switched {
            tokio::time::sleep(DRAIN).await;
        }
        if was_switched && let Err(e) = self.set_line_settings(before).await {
            restore_error = Some(e);
        }
        let status = crate::sync::lock(&self.shared.transfer).take();
        let seconds = status
            .as_ref()
            .and_then(|s| s.started)
            .map_or(0.0, |t| round_ms(t.elapsed().as_secs_f64()));
        let verb = match direction {
            Direction::Send => "send_file",
            Direction::Receive => "receive_file",
        };
        let summary = match &result {
            Ok(r) => format!(
                "{verb} {} {file} by {}: {} bytes in {} blocks, {} retries, {seconds} s at {baud} baud: done",
                protocol.name(),
                actor.describe(),
                r.stats.bytes,
                r.stats.blocks,
                r.stats.retries
            ),
            Err(e) => format!(
                "{verb} {} {file} by {}: failed after {seconds} s: {}",
                protocol.name(),
                actor.describe(),
                e.message
            ),
        };
        if let Some(t) = &self.shared.transcript {
            t.binary_end(self.log().head(), format!(">>> {summary}"));
        }
        self.shared.audit.record(AuditRecord::now(
            self.name(),
            actor,
            verb,
            file.as_bytes(),
            false,
        ));
        self.record(summary);
        if let Some(e) = restore_error {
            return Err(e);
        }
        let mut report = result?;
        report.seconds = seconds;
        report.baud = baud;
        report.settings_after = self.line_settings();
        Ok(report)
    }

    /// The protocol loop: the machine's writes go out, the log's new
    /// bytes come in, its deadlines and the cancellation are kept.
    async fn drive(&self, job: TransferJob) -> Result<TransferReport, GateError> {
        let now = Instant::now();
        let timing = Timing {
            start: job.start_timeout,
            ..Timing::default()
        };
        let mut side = match job.direction {
            Direction::Send => {
                let sender = Sender::new(job.protocol, &job.file, job.data, timing, now);
                let total = sender.total_blocks();
                if let Some(t) = crate::sync::lock(&self.shared.transfer).as_mut() {
                    t.total_blocks = total;
                }
                Side::Send(Box::new(sender))
            }
            Direction::Receive => Side::Receive(Box::new(Receiver::new(
                job.protocol,
                false,
                job.max_bytes,
                timing,
                now,
            ))),
        };
        let log = self.log().clone();
        let mut head_rx = log.subscribe();
        let mut state_rx = self.watch_state();
        let mut cursor = log.head();
        let mut last_chunk = cursor;
        let mut cancelled = false;
        let mut reported = 0;
        let mut data = Vec::new();
        loop {
            if let Side::Receive(r) = &mut side {
                data.extend(r.take_data());
            }
            let stats = side.stats();
            if stats.blocks != reported {
                reported = stats.blocks;
                if let Some(t) = crate::sync::lock(&self.shared.transfer).as_mut() {
                    t.blocks = stats.blocks;
                    t.bytes = stats.bytes;
                    t.retries = stats.retries;
                }
                if let (Some(report), Some(status)) = (&job.progress, self.transfer()) {
                    report(&status);
                }
            }
            match side.poll() {
                Poll::Write(bytes) => self.write_unrecorded(&bytes).await?,
                Poll::Done => {
                    let (header_name, header_size) = match &side {
                        Side::Receive(r) => (
                            r.header().map(|h| h.name.clone()),
                            r.header().and_then(|h| h.size),
                        ),
                        Side::Send(_) => (None, None),
                    };
                    return Ok(TransferReport {
                        stats: side.stats(),
                        seconds: 0.0,
                        baud: 0,
                        settings_after: self.line_settings(),
                        data,
                        header_name,
                        header_size,
                        end_offset: last_chunk,
                    });
                }
                Poll::Failed(why) => return Err(self.transfer_failed(&why, side.stats())),
                Poll::Wait(deadline) => {
                    let wake = tokio::time::Instant::from_std(deadline);
                    tokio::select! {
                        () = job.cancel.cancelled(), if !cancelled => {
                            cancelled = true;
                            side.cancel();
                        }
                        () = tokio::time::sleep_until(wake) => side.timeout(Instant::now()),
                        changed = head_rx.changed() => {
                            if changed.is_err() {
                                return Err(self.not_open_error());
                            }
                            let head = *head_rx.borrow_and_update();
                            if cursor < log.oldest() {
                                side.cancel();
                                cursor = head;
                                continue;
                            }
                            let bytes = log.copy_range(cursor, head);
                            last_chunk = cursor;
                            cursor = head;
                            side.input(&bytes, Instant::now());
                        }
                        changed = state_rx.changed() => {
                            if changed.is_err() || *state_rx.borrow_and_update() != PortState::Open {
                                return Err(self.not_open_error());
                            }
                        }
                    }
                }
            }
        }
    }

    fn transfer_failed(&self, why: &Failure, stats: Stats) -> GateError {
        let done = format!(
            "{} blocks ({} bytes) were done, {} retries",
            stats.blocks, stats.bytes, stats.retries
        );
        let (code, advice) = match why {
            Failure::Cancelled => (
                ErrorCode::Timeout,
                "cancelled: CAN CAN was sent and the device should be back at its prompt; read_until_prompt to see",
            ),
            Failure::NoStart => (
                ErrorCode::Timeout,
                "the device never started the transfer (no C or NAK): start its receive command first (e.g. ROMMON `xmodem -c NAME`, U-Boot `loady`; for receive_file its send command), and give transfer_baud only when the command changed the device's speed",
            ),
            Failure::CancelledByPeer => (
                ErrorCode::PortUnavailable,
                "the device cancelled the transfer (CAN CAN); read its output to see why",
            ),
            Failure::TooManyRetries(_) => (
                ErrorCode::PortUnavailable,
                "the line is too noisy or the speeds differ: check transfer_baud against the device's, try a lower speed, or plain xmodem",
            ),
            Failure::Protocol(_) => (
                ErrorCode::PortUnavailable,
                "the other side broke the protocol; CAN CAN was sent. Check the protocol matches the device's command",
            ),
        };
        GateError::new(
            code,
            format!(
                "the transfer on {} failed: {why}; {done}. {advice}",
                self.name()
            ),
        )
    }
}

fn round_ms(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}
