//! Running a file transfer on a port: the protocol core
//! (`serialgate-xmodem`) driven by the port's own stream. Its answers are
//! read from the OutputLog like any output, its frames are written under
//! the session's write hold, and while it runs every other write is
//! `busy` (the port's transfer part, `transfer.rs`), the transcript holds
//! back its binary range for one summary line, and `status` shows its
//! progress. A raised `transfer_baud` is put back however the transfer
//! ends.

use std::time::{Duration, Instant};

use serialgate_xmodem::{Failure, Poll, Receiver, Sender, Stats, Timing};

use super::handle::Port;
use super::state::PortState;
use super::transfer::{Direction, TransferJob, TransferReport, TransferStatus};
use crate::audit::{Actor, AuditRecord};
use crate::error::{ErrorCode, GateError};
use crate::settings::LineSettings;

/// How long the last bytes of a transfer get to leave the line at its
/// speed before the speed is put back.
pub const DRAIN: Duration = Duration::from_millis(200);

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
        // Its place in the audit trail is taken first: a transfer that
        // could not be recorded does not start.
        let slot = self.reserve_audit().await?;
        let before = self.line_settings();
        let baud = job.baud.unwrap_or(before.baud);
        self.transfers().begin(
            self.name(),
            TransferStatus::starting(
                job.direction,
                job.protocol.name(),
                &job.file,
                actor.describe(),
                baud,
            ),
        )?;
        let from = self.log().head();
        if let Some(t) = self.transcript() {
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
        let seconds = self.transfers().finish();
        let verb = match direction {
            Direction::Send => "send_file",
            Direction::Receive => "receive_file",
        };
        let summary = match &result {
            Ok(r) => format!(
                "{verb} {} {file} by {}: {} bytes in {} blocks, {} retries, {seconds} s at {baud} baud: done{}",
                protocol.name(),
                actor.describe(),
                r.stats.bytes,
                r.stats.blocks,
                r.stats.retries,
                if r.stats.end_unconfirmed {
                    " (the receiver's prompt came back without its last ACK)"
                } else {
                    ""
                }
            ),
            Err(e) => format!(
                "{verb} {} {file} by {}: failed after {seconds} s: {}",
                protocol.name(),
                actor.describe(),
                e.message
            ),
        };
        if let Some(t) = self.transcript() {
            t.binary_end(self.log().head(), format!(">>> {summary}"));
        }
        slot.record(AuditRecord::now(
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
                self.transfers().set_total_blocks(total);
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
                self.transfers().progress(&stats);
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
