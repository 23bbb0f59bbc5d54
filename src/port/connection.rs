//! The port's device part: the open device's writer and line control, the
//! state the reader task moves the port through, and what `status` and
//! the metrics read of the connection (bytes written, reconnects, the last
//! loss, why the port is `down`). The reader task (`reader.rs`) installs
//! and removes the writer and the control handle together; line control
//! (`control.rs`) goes through the [`ControlSlot`].
//!
//! # The control slot
//!
//! A port keeps its control state in a [`ControlSlot`]:
//! - the handle, in an async mutex installed and removed by the reader task
//!   together with the writer (present exactly while the device is open);
//!   it serializes control operations, so two pulses never interleave;
//! - the *current* line settings. They start as the configured ones and
//!   `set_line_settings` changes them; the reader reopens a lost device
//!   with them. The reader reads them and opens the device while holding
//!   the handle's lock, so a change made during a reopen is never lost:
//!   either the open sees it, or the change finds the new handle.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::comport_link::ComPortLink;
use super::device::DeviceWriter;
use super::lines::LineControl;
use super::state::{PortEvent, PortState, WRITE_TIMEOUT};
use crate::settings::LineSettings;
use crate::sync::lock;

/// The control handle on the open device; `None` while it is not open.
pub type ControlHandle = Option<Box<dyn LineControl>>;

/// A port's control state: the handle on the open device and the current
/// line settings (see the module docs).
pub struct ControlSlot {
    handle: tokio::sync::Mutex<ControlHandle>,
    settings: Mutex<LineSettings>,
    /// Set while `detect_baud` runs (`baud_detect.rs`); a settings change
    /// meanwhile is refused as `busy`.
    detecting: AtomicBool,
    /// The open connection's RFC 2217 state (rfc2217:// ports), readable
    /// without waiting for the handle's lock.
    com_port: Mutex<Option<Arc<ComPortLink>>>,
}

impl ControlSlot {
    /// A slot with no device open yet and `line` as the current settings.
    pub fn new(line: LineSettings) -> ControlSlot {
        ControlSlot {
            handle: tokio::sync::Mutex::new(None),
            settings: Mutex::new(line),
            detecting: AtomicBool::new(false),
            com_port: Mutex::new(None),
        }
    }

    /// Waits for the control handle (every control operation holds it for
    /// its whole length).
    pub async fn lock(&self) -> tokio::sync::MutexGuard<'_, ControlHandle> {
        self.handle.lock().await
    }

    /// The current line settings.
    pub fn settings(&self) -> LineSettings {
        *lock(&self.settings)
    }

    /// Makes `line` the current settings.
    pub fn store_settings(&self, line: LineSettings) {
        *lock(&self.settings) = line;
    }

    /// The RFC 2217 state of the open connection, if it has one.
    pub fn com_port(&self) -> Option<Arc<ComPortLink>> {
        lock(&self.com_port).clone()
    }

    /// Sets (or, with `None`, forgets) the open connection's RFC 2217 state.
    pub fn set_com_port(&self, link: Option<Arc<ComPortLink>>) {
        *lock(&self.com_port) = link;
    }

    /// Marks a baud detection as running; false if one already was.
    pub fn start_detecting(&self) -> bool {
        !self.detecting.swap(true, Ordering::AcqRel)
    }

    /// Marks the running baud detection as ended.
    pub fn stop_detecting(&self) {
        self.detecting.store(false, Ordering::Release);
    }

    /// Whether a baud detection is running.
    pub fn detecting(&self) -> bool {
        self.detecting.load(Ordering::Acquire)
    }
}

/// Why a write did not reach the device.
pub enum WriteFailure {
    /// The device is not open now.
    NotOpen,
    /// The device failed the write.
    Failed(io::Error),
    /// The device did not take the bytes within [`WRITE_TIMEOUT`].
    TimedOut,
}

/// How a BREAK over a remote console's connection went.
pub enum RemoteBreak {
    /// The device is not open now.
    NotOpen,
    /// Sent (telnet's IAC BRK).
    Sent,
    /// Sending it failed.
    Failed(io::Error),
    /// The connection has no way to send one (raw TCP).
    Unsupported,
}

/// The open device, its line control and its state (see the module docs).
pub struct Connection {
    state_tx: watch::Sender<PortState>,
    /// The write half of the open device; `None` while not open. The async
    /// mutex serializes writes: one command's bytes are never interleaved
    /// with another's.
    writer: tokio::sync::Mutex<Option<DeviceWriter>>,
    /// BREAK, modem lines and the current line settings (control.rs).
    control: ControlSlot,
    /// The last time the open device went away, and why (`status`).
    last_loss: Mutex<Option<PortEvent>>,
    /// Why the port is `down`; `None` in every other state.
    down_reason: Mutex<Option<String>>,
    reconnects: AtomicU64,
    bytes_written: AtomicU64,
    /// The device was open at least once (a port that never opened is
    /// `port_unavailable`, one that went away is `port_lost`).
    ever_opened: AtomicBool,
}

impl Connection {
    /// A connection being opened for the first time, with `line` as its
    /// settings.
    pub fn new(line: LineSettings) -> Connection {
        let (state_tx, _) = watch::channel(PortState::Opening);
        Connection {
            state_tx,
            writer: tokio::sync::Mutex::new(None),
            control: ControlSlot::new(line),
            last_loss: Mutex::new(None),
            down_reason: Mutex::new(None),
            reconnects: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
            ever_opened: AtomicBool::new(false),
        }
    }

    /// The line control state.
    pub fn control(&self) -> &ControlSlot {
        &self.control
    }

    /// The current state.
    pub fn state(&self) -> PortState {
        *self.state_tx.borrow()
    }

    /// A receiver that changes with the state.
    pub fn watch_state(&self) -> watch::Receiver<PortState> {
        self.state_tx.subscribe()
    }

    /// Moves to `state` (`down` goes through [`Connection::set_down`]).
    pub fn set_state(&self, state: PortState) {
        if state == PortState::Open {
            self.ever_opened.store(true, Ordering::Relaxed);
        }
        if state != PortState::Down {
            *lock(&self.down_reason) = None;
        }
        self.state_tx.send_replace(state);
    }

    /// Marks the port `down`, saying why.
    pub fn set_down(&self, reason: String) {
        *lock(&self.down_reason) = Some(reason);
        self.state_tx.send_replace(PortState::Down);
    }

    /// Why the port is `down`; `None` unless it is.
    pub fn down_reason(&self) -> Option<String> {
        lock(&self.down_reason).clone()
    }

    /// Whether the device was ever open.
    pub fn ever_opened(&self) -> bool {
        self.ever_opened.load(Ordering::Relaxed)
    }

    /// The last time the open device went away; `None` if it never did.
    pub fn last_loss(&self) -> Option<PortEvent> {
        lock(&self.last_loss).clone()
    }

    /// Remembers the latest loss.
    pub fn set_last_loss(&self, event: PortEvent) {
        *lock(&self.last_loss) = Some(event);
    }

    /// How many times the device was reopened after a loss.
    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }

    /// Counts one reopen after a loss.
    pub fn count_reconnect(&self) {
        self.reconnects.fetch_add(1, Ordering::Relaxed);
    }

    /// Bytes written to the device since the port started.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written.load(Ordering::Relaxed)
    }

    /// Installs (or, with `None`, removes) the open device's writer.
    pub async fn install_writer(&self, writer: Option<DeviceWriter>) {
        *self.writer.lock().await = writer;
    }

    /// Writes bytes to the device, serialized with every other write, and
    /// counts them; within [`WRITE_TIMEOUT`].
    pub async fn write(&self, bytes: &[u8]) -> Result<(), WriteFailure> {
        let mut slot = self.writer.lock().await;
        let Some(writer) = slot.as_mut() else {
            return Err(WriteFailure::NotOpen);
        };
        match tokio::time::timeout(WRITE_TIMEOUT, writer.send(bytes)).await {
            Ok(Ok(())) => {
                self.bytes_written
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                Ok(())
            }
            Ok(Err(e)) => Err(WriteFailure::Failed(e)),
            Err(_) => Err(WriteFailure::TimedOut),
        }
    }

    /// Sends a BREAK the way the connection's protocol can (telnet's IAC
    /// BRK), serialized with the writes.
    pub async fn remote_break(&self) -> RemoteBreak {
        let mut slot = self.writer.lock().await;
        let Some(writer) = slot.as_mut() else {
            return RemoteBreak::NotOpen;
        };
        match writer.send_break().await {
            Some(Ok(())) => RemoteBreak::Sent,
            Some(Err(e)) => RemoteBreak::Failed(e),
            None => RemoteBreak::Unsupported,
        }
    }
}
