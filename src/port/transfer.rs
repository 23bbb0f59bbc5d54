//! A file transfer on a port (XMODEM, XMODEM-1K, YMODEM, either way):
//! what is asked of one, how it went, and the port's transfer part
//! ([`Transfers`]): the transfer under way, which `status` shows and which
//! makes every other write `busy` while it runs. The run itself, the
//! protocol core driven by the port's stream, is in `transfer_drive.rs`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Serialize;
use serialgate_xmodem::{Protocol, Stats};
use tokio_util::sync::CancellationToken;

use crate::error::{ErrorCode, GateError};
use crate::settings::LineSettings;

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

impl TransferStatus {
    /// A transfer starting now, nothing done yet.
    pub fn starting(
        direction: Direction,
        protocol: &str,
        file: &str,
        by: String,
        baud: u32,
    ) -> TransferStatus {
        TransferStatus {
            direction,
            protocol: protocol.to_owned(),
            file: file.to_owned(),
            by,
            blocks: 0,
            total_blocks: 0,
            bytes: 0,
            retries: 0,
            seconds: 0.0,
            baud,
            started: Some(Instant::now()),
        }
    }

    /// Seconds since it started, to the millisecond.
    fn seconds_now(&self) -> Option<f64> {
        self.started
            .map(|started| round_ms(started.elapsed().as_secs_f64()))
    }
}

/// The port's transfer part: the transfer under way, if any.
#[derive(Default)]
pub struct Transfers {
    current: Mutex<Option<TransferStatus>>,
}

impl Transfers {
    /// The transfer under way, with its progress now.
    pub fn status(&self) -> Option<TransferStatus> {
        let mut status = crate::sync::lock(&self.current).clone()?;
        if let Some(seconds) = status.seconds_now() {
            status.seconds = seconds;
        }
        Some(status)
    }

    /// `busy` while a transfer runs on `port`: no other bytes may enter
    /// its stream.
    pub fn refuse(&self, port: &str) -> Result<(), GateError> {
        match &*crate::sync::lock(&self.current) {
            None => Ok(()),
            Some(t) => Err(busy(port, t)),
        }
    }

    /// Makes `status` the transfer under way; `busy` if one already is.
    pub fn begin(&self, port: &str, status: TransferStatus) -> Result<(), GateError> {
        let mut current = crate::sync::lock(&self.current);
        if let Some(t) = current.as_ref() {
            return Err(busy(port, t));
        }
        *current = Some(status);
        Ok(())
    }

    /// Notes how many blocks the file takes (sending).
    pub fn set_total_blocks(&self, total: u64) {
        if let Some(t) = crate::sync::lock(&self.current).as_mut() {
            t.total_blocks = total;
        }
    }

    /// Notes the protocol's counters so far.
    pub fn progress(&self, stats: &Stats) {
        if let Some(t) = crate::sync::lock(&self.current).as_mut() {
            t.blocks = stats.blocks;
            t.bytes = stats.bytes;
            t.retries = stats.retries;
        }
    }

    /// Ends the transfer under way; returns its seconds from start to now
    /// (0 if none was under way).
    pub fn finish(&self) -> f64 {
        crate::sync::lock(&self.current)
            .take()
            .and_then(|s| s.seconds_now())
            .unwrap_or(0.0)
    }
}

/// The refusal of a write while `transfer` runs on `port`.
fn busy(port: &str, t: &TransferStatus) -> GateError {
    GateError::new(
        ErrorCode::Busy,
        format!(
            "{port} is in a file transfer ({} {} {}, {} blocks done, by {}); writing now would break it. Wait for it to end (status shows its progress), or have its caller cancel it",
            match t.direction {
                Direction::Send => "sending",
                Direction::Receive => "receiving",
            },
            t.protocol,
            t.file,
            t.blocks,
            t.by
        ),
    )
}

fn round_ms(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}
