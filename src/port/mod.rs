//! One serial line: the open device, its reader task, its serialized
//! writer, its OutputLog and its state.
//!
//! A [`Port`] is a cheap clonable handle over shared state, like
//! mini-redis's `Db`: a std `Mutex` never held across `.await`, and `watch`
//! channels that wake waiters when bytes arrive or the state changes.

pub mod alerts;
mod appear;
pub mod baud_detect;
mod comport;
mod comport_link;
mod confirm_watch;
pub mod control;
mod device;
pub mod lines;
pub mod mask;
mod presence;
mod reader;
mod responder;
mod sharing;
mod telnet_link;
pub mod transfer;
pub mod wait;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::audit::Audit;
use crate::error::{ErrorCode, GateError};
use crate::log::OutputLog;
use crate::settings::LineSettings;
use crate::sync::lock;
use crate::transcript::{Transcript, TranscriptConfig};

pub use confirm_watch::PendingConfirm;
pub use presence::Participant;
pub use reader::DOWN_RETRY;
pub use sharing::Holder;

/// How long a single write may take before it is reported as `timeout`
/// (a line held by hardware flow control must not hang a call forever).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How many recent events `status` shows.
const EVENT_HISTORY: usize = 32;

/// Where a port is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PortState {
    /// Being opened for the first time.
    Opening,
    /// Open: output is being captured.
    Open,
    /// The device went away; a reopen is pending.
    Lost,
    /// Trying to open the device again.
    Reopening,
    /// The device kept failing right after opening (`down_after` quick
    /// losses in a row): it is retried slowly, every [`DOWN_RETRY`] or
    /// when its path reappears, and `status` says why.
    Down,
    /// Closed for good (shutdown or ad-hoc port released).
    Closed,
}

impl PortState {
    /// The state as one word, as results and metrics spell it (`lost`).
    pub fn as_str(self) -> &'static str {
        match self {
            PortState::Opening => "opening",
            PortState::Open => "open",
            PortState::Lost => "lost",
            PortState::Reopening => "reopening",
            PortState::Down => "down",
            PortState::Closed => "closed",
        }
    }
}

/// Something that happened to a port, shown by `status`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PortEvent {
    /// When, in milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    /// What happened.
    pub what: String,
}

/// What the port is and how it is opened. Name, device and retention are
/// fixed for the port's life; `line` is the configured settings in the
/// spec a port starts with, and the current ones (changed by
/// `set_line_settings`) in what [`Port::spec`] returns.
#[derive(Debug, Clone)]
pub struct PortSpec {
    /// The port's name (configured name, or the ad-hoc connection name).
    pub name: String,
    /// Device path, e.g. `/dev/ttyUSB0`.
    pub device: String,
    /// Baud rate and framing.
    pub line: LineSettings,
    /// Bytes of output kept.
    pub retention: usize,
    /// Quick losses in a row (each within [`QUICK_LOSS`] of opening) after
    /// which the port is `down`; 0: never.
    pub down_after: u32,
    /// The stored credentials the port logs in with: their secrets are
    /// masked in the output (`mask.rs`).
    pub credentials: Option<std::sync::Arc<crate::config::Credentials>>,
    /// The standing watches matched against the output (alerts.rs).
    pub watches: Vec<crate::config::watches::Watch>,
}

/// What a port records besides its OutputLog: a transcript file (with
/// `log_dir`) and the daemon's audit trail.
#[derive(Clone)]
pub struct PortServices {
    /// Where the transcript goes, if anywhere.
    pub transcript: Option<TranscriptConfig>,
    /// The audit trail every session write goes to.
    pub audit: Audit,
    /// Told of every alert (metrics, the webhook); never blocks.
    pub on_alert: Option<alerts::AlertHook>,
}

impl Default for PortServices {
    fn default() -> Self {
        PortServices {
            transcript: None,
            audit: Audit::log_only(),
            on_alert: None,
        }
    }
}

/// Counts one waiting call on a port; dropping it (however the wait ends,
/// cancellation included) uncounts it.
pub(crate) struct WaitGuard {
    port: Port,
    started: std::time::Instant,
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        crate::metrics::wait(self.started.elapsed());
        self.port
            .shared
            .active_waits
            .fetch_sub(1, Ordering::Relaxed);
    }
}

/// A handle on one serial line. Clones share the line.
#[derive(Clone)]
pub struct Port {
    shared: Arc<Shared>,
}

struct Shared {
    spec: PortSpec,
    log: OutputLog,
    state_tx: watch::Sender<PortState>,
    /// The write half of the open device; `None` while not open. The async
    /// mutex serializes writes: one command's bytes are never interleaved
    /// with another's.
    writer: tokio::sync::Mutex<Option<device::DeviceWriter>>,
    /// BREAK, modem lines and the current line settings (control.rs).
    control: control::ControlSlot,
    events: Mutex<VecDeque<PortEvent>>,
    /// The last time the open device went away, and why (`status`).
    last_loss: Mutex<Option<PortEvent>>,
    /// Why the port is `down`; `None` in every other state.
    down_reason: Mutex<Option<String>>,
    reconnects: AtomicU64,
    bytes_written: AtomicU64,
    /// The device was open at least once (a port that never opened is
    /// `port_unavailable`, one that went away is `port_lost`).
    ever_opened: AtomicBool,
    /// Cancelled when the port closes; stops the reader task.
    closing: CancellationToken,
    /// Calls waiting on this port's output right now (`status` shows it).
    active_waits: AtomicU64,
    /// The session holding the port for writing (sharing.rs).
    holder: Mutex<Option<sharing::Holder>>,
    /// The people attached with a console client (presence.rs).
    people: Mutex<Vec<Participant>>,
    /// Bumped when `people` or `holder` change.
    presence: watch::Sender<u64>,
    /// The transcript writer, with `log_dir`.
    transcript: Option<Transcript>,
    /// Where session writes are audited.
    audit: Audit,
    /// A change awaiting confirmation (confirm_watch.rs).
    confirm: Mutex<Option<confirm_watch::Armed>>,
    /// The standing watches and their alerts (alerts.rs).
    alerts: alerts::Alerts,
    /// A file transfer under way (transfer.rs).
    transfer: Mutex<Option<transfer::TransferStatus>>,
}

impl Port {
    /// Creates the port and starts its reader task, which opens the device
    /// and keeps it open (reopening with backoff after a loss) until
    /// [`close`](Self::close) or `shutdown` is cancelled, and passes the
    /// device's terminal queries to the responder (responder.rs).
    pub fn start(spec: PortSpec, services: PortServices, shutdown: &CancellationToken) -> Port {
        let (state_tx, _) = watch::channel(PortState::Opening);
        let log = OutputLog::new(spec.retention);
        let closing = shutdown.child_token();
        // The transcript follows the log from the start, whether or not
        // anyone is attached; a directory it cannot write is logged, and
        // the port runs without a transcript rather than not at all.
        let transcript = services.transcript.and_then(|config| {
            Transcript::start(&spec.name, log.clone(), config, closing.clone())
                .map_err(|e| tracing::warn!(port = %spec.name, "no transcript: {e}"))
                .ok()
        });
        let port = Port {
            shared: Arc::new(Shared {
                alerts: alerts::Alerts::new(&spec.name, spec.watches.clone(), services.on_alert),
                log,
                control: control::ControlSlot::new(spec.line),
                spec,
                state_tx,
                writer: tokio::sync::Mutex::new(None),
                events: Mutex::new(VecDeque::new()),
                last_loss: Mutex::new(None),
                down_reason: Mutex::new(None),
                reconnects: AtomicU64::new(0),
                bytes_written: AtomicU64::new(0),
                ever_opened: AtomicBool::new(false),
                closing,
                active_waits: AtomicU64::new(0),
                holder: Mutex::new(None),
                people: Mutex::new(Vec::new()),
                presence: watch::Sender::new(0),
                transcript,
                audit: services.audit,
                confirm: Mutex::new(None),
                transfer: Mutex::new(None),
            }),
        };
        tokio::spawn(reader::run(port.clone()));
        port
    }

    /// The standing watches and the alerts they raised.
    pub(crate) fn alerts(&self) -> &alerts::Alerts {
        &self.shared.alerts
    }

    /// The port's name.
    pub fn name(&self) -> &str {
        &self.shared.spec.name
    }

    /// How the port is opened, with the current line settings.
    pub fn spec(&self) -> PortSpec {
        PortSpec {
            line: self.line_settings(),
            ..self.shared.spec.clone()
        }
    }

    /// Everything the device sent.
    pub fn log(&self) -> &OutputLog {
        &self.shared.log
    }

    /// The current state.
    pub fn state(&self) -> PortState {
        *self.shared.state_tx.borrow()
    }

    /// A receiver that changes with the state.
    pub fn watch_state(&self) -> watch::Receiver<PortState> {
        self.shared.state_tx.subscribe()
    }

    /// Waits until the state satisfies `done`, at most `timeout`; returns
    /// the state reached.
    pub async fn wait_for_state(
        &self,
        timeout: Duration,
        done: impl Fn(PortState) -> bool,
    ) -> PortState {
        let mut rx = self.watch_state();
        let reached = tokio::time::timeout(timeout, rx.wait_for(|s| done(*s))).await;
        match reached {
            Ok(Ok(state)) => *state,
            _ => self.state(),
        }
    }

    /// How many times the device was reopened after a loss.
    pub fn reconnects(&self) -> u64 {
        self.shared.reconnects.load(Ordering::Relaxed)
    }

    /// Bytes written to the device since the port started.
    pub fn bytes_written(&self) -> u64 {
        self.shared.bytes_written.load(Ordering::Relaxed)
    }

    /// The most recent events, oldest first.
    pub fn events(&self) -> Vec<PortEvent> {
        self.lock_events().iter().cloned().collect()
    }

    fn lock_events(&self) -> std::sync::MutexGuard<'_, VecDeque<PortEvent>> {
        crate::sync::lock(&self.shared.events)
    }

    pub(crate) fn record(&self, what: impl Into<String>) {
        self.record_event(what);
    }

    /// Records an event and returns it.
    pub(crate) fn record_event(&self, what: impl Into<String>) -> PortEvent {
        let what = what.into();
        tracing::info!(port = %self.name(), "{what}");
        let at_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let event = PortEvent { at_unix_ms, what };
        let mut events = self.lock_events();
        if events.len() == EVENT_HISTORY {
            events.pop_front();
        }
        events.push_back(event.clone());
        event
    }

    /// The last time the open device went away (when, and why); `None`
    /// if it never did.
    pub fn last_loss(&self) -> Option<PortEvent> {
        lock(&self.shared.last_loss).clone()
    }

    pub(crate) fn set_last_loss(&self, event: PortEvent) {
        *lock(&self.shared.last_loss) = Some(event);
    }

    /// Why the port is `down`; `None` unless it is.
    pub fn down_reason(&self) -> Option<String> {
        lock(&self.shared.down_reason).clone()
    }

    /// Whether the device was ever open.
    pub fn ever_opened(&self) -> bool {
        self.shared.ever_opened.load(Ordering::Relaxed)
    }

    pub(crate) fn set_state(&self, state: PortState) {
        if state == PortState::Open {
            self.shared.ever_opened.store(true, Ordering::Relaxed);
        }
        if state != PortState::Down {
            *lock(&self.shared.down_reason) = None;
        }
        self.shared.state_tx.send_replace(state);
    }

    /// Marks the port `down`, saying why.
    pub(crate) fn set_down(&self, reason: String) {
        *lock(&self.shared.down_reason) = Some(reason);
        self.shared.state_tx.send_replace(PortState::Down);
    }

    pub(crate) fn closing(&self) -> &CancellationToken {
        &self.shared.closing
    }

    pub(crate) fn count_reconnect(&self) {
        self.shared.reconnects.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) async fn install_writer(&self, writer: Option<device::DeviceWriter>) {
        *self.shared.writer.lock().await = writer;
    }

    /// Calls waiting on this port's output right now.
    pub fn active_waits(&self) -> u64 {
        self.shared.active_waits.load(Ordering::Relaxed)
    }

    /// Counts a wait for as long as the guard lives.
    pub(crate) fn wait_guard(&self) -> WaitGuard {
        self.shared.active_waits.fetch_add(1, Ordering::Relaxed);
        WaitGuard {
            port: self.clone(),
            started: std::time::Instant::now(),
        }
    }

    /// The transcript of this port, with `log_dir`.
    pub fn transcript(&self) -> Option<&Transcript> {
        self.shared.transcript.as_ref()
    }

    /// Writes bytes to the device, serialized with every other write to
    /// this port. Fails with `port_lost` when the device is not open and
    /// `timeout` when it does not take the bytes within [`WRITE_TIMEOUT`].
    /// Callers go through [`write_as`](Self::write_as) (sessions) or
    /// [`write`](Self::write) (the gateway), which record the write.
    async fn write_unrecorded(&self, bytes: &[u8]) -> Result<(), GateError> {
        let mut slot = self.shared.writer.lock().await;
        let Some(writer) = slot.as_mut() else {
            return Err(self.not_open_error());
        };
        match tokio::time::timeout(WRITE_TIMEOUT, writer.send(bytes)).await {
            Ok(Ok(())) => {
                self.shared
                    .bytes_written
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                Ok(())
            }
            Ok(Err(e)) => Err(GateError::new(
                ErrorCode::PortLost,
                format!(
                    "writing to {} failed: {e}; the port is being reopened, check `status` and retry",
                    self.name()
                ),
            )),
            Err(_) => Err(GateError::new(
                ErrorCode::Timeout,
                format!(
                    "{} did not take {} bytes within {}s (flow control holding the line?); check the cabling and flow_control",
                    self.name(),
                    bytes.len(),
                    WRITE_TIMEOUT.as_secs()
                ),
            )),
        }
    }

    /// The error for an operation on a port that is not open now.
    pub fn not_open_error(&self) -> GateError {
        let (name, device, why) = (self.name(), &self.spec().device, self.last_event());
        match self.state() {
            PortState::Closed => GateError::new(
                ErrorCode::PortUnavailable,
                format!(
                    "{name} is closed (the gateway is shutting down, or a config reload removed or changed it); connect again to use the port now configured"
                ),
            ),
            PortState::Down => GateError::new(
                ErrorCode::PortLost,
                format!(
                    "{name} ({device}) is down: {}; it is retried every {}s or when the device reappears; check the cable, the adapter and the device's power, then `status`",
                    self.down_reason().unwrap_or_else(|| why.clone()),
                    DOWN_RETRY.as_secs()
                ),
            ),
            _ if !self.ever_opened() => GateError::new(
                ErrorCode::PortUnavailable,
                format!(
                    "{name} ({device}) could not be opened: {why}; {}; it is retried in the background",
                    if self.is_remote() {
                        "check the address and that the console server listens there"
                    } else {
                        "check the device path, cabling and permissions"
                    }
                ),
            ),
            _ => GateError::new(
                ErrorCode::PortLost,
                format!(
                    "{name} ({device}) is lost: {why}; it is reopened automatically when the device returns, check `status`"
                ),
            ),
        }
    }

    fn last_event(&self) -> String {
        self.lock_events()
            .back()
            .map_or_else(|| "no event yet".to_owned(), |e| e.what.clone())
    }

    /// Closes the port for good: the reader stops, the device is closed,
    /// and the transcript has everything that arrived.
    pub async fn close(&self) {
        self.shared.closing.cancel();
        let _ = self
            .wait_for_state(Duration::from_secs(5), |s| s == PortState::Closed)
            .await;
        if let Some(t) = &self.shared.transcript {
            let _ = t
                .wait_written(self.log().head(), 0, Duration::from_secs(5))
                .await;
        }
    }
}
