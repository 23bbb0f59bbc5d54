//! Line control of a port: BREAK, the modem control lines (DTR/RTS out,
//! CTS/DSR/CD/RI in), live line settings and baud-rate detection, through
//! the device's [`LineControl`] handle (`lines.rs`).
//!
//! # Design
//!
//! The timed sequences ([`hold_break`], [`pulse`]) and the scoring of
//! [`detect_baud`](Port::detect_baud) are plain functions over the trait,
//! so their order and timing are tested without hardware.
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
//!
//! Operations that wait (BREAK, pulses, detection) run in their own task:
//! a tool call cancelled halfway never leaves the line in BREAK, a pin
//! dropped, or the rate at a candidate of the detection.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use tokio::time::Instant;

use super::comport::ComPortLink;
use super::lines::{LineControl, ModemLine, ModemStatus};
use super::{Port, device};
use crate::error::{ErrorCode, GateError};
use crate::log::OutputLog;
use crate::remote::{RemoteAddr, Scheme};
use crate::settings::LineSettings;

/// Longest BREAK `send_break` sends.
pub const MAX_BREAK: Duration = Duration::from_secs(10);
/// Longest pulse of a modem line.
pub const MAX_PULSE: Duration = Duration::from_secs(10);
/// Longest listening time per candidate rate of `detect_baud`.
pub const MAX_LISTEN: Duration = Duration::from_secs(5);
/// Most candidate rates one `detect_baud` tries.
pub const MAX_CANDIDATES: usize = 16;
/// Rates `detect_baud` tries when not told: the usual console rates.
pub const DEFAULT_CANDIDATES: [u32; 5] = [9600, 19200, 38400, 57600, 115200];
/// Lowest readability score that counts as "this rate reads": below it,
/// what arrived is mostly noise.
pub const MIN_SCORE: f64 = 0.5;
/// Once output arrived at a candidate rate, this much quiet ends its
/// listening early.
const DETECT_QUIET: Duration = Duration::from_millis(200);
/// How long a control operation waits for another one on the same port
/// (at most a 10 s BREAK or pulse) before it reports `busy`.
const LOCK_TIMEOUT: Duration = Duration::from_secs(15);
/// Bytes of each candidate's output shown in the detection's `sample`.
const SAMPLE_BYTES: usize = 64;

type Handle = Option<Box<dyn LineControl>>;

/// A port's control state: the handle on the open device and the current
/// line settings (see the module docs).
pub struct ControlSlot {
    handle: tokio::sync::Mutex<Handle>,
    settings: Mutex<LineSettings>,
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
}

/// Holds a BREAK for `duration`: starts it, waits, ends it.
pub async fn hold_break(ctl: &mut dyn LineControl, duration: Duration) -> io::Result<()> {
    ctl.set_break(true).await?;
    tokio::time::sleep(duration).await;
    ctl.set_break(false).await
}

/// Pulses `line`: sets it to `level` for `duration`, then to `!level`
/// (`level` false is the usual "pulse low": drop, wait, restore).
pub async fn pulse(
    ctl: &mut dyn LineControl,
    line: ModemLine,
    level: bool,
    duration: Duration,
) -> io::Result<()> {
    ctl.write_line(line, level).await?;
    tokio::time::sleep(duration).await;
    ctl.write_line(line, !level).await
}

/// Sets the given output lines (DTR first, then RTS) and reads them all back.
pub async fn set_lines(
    ctl: &mut dyn LineControl,
    dtr: Option<bool>,
    rts: Option<bool>,
) -> io::Result<ModemStatus> {
    if let Some(level) = dtr {
        ctl.write_line(ModemLine::Dtr, level).await?;
    }
    if let Some(level) = rts {
        ctl.write_line(ModemLine::Rts, level).await?;
    }
    ctl.modem_status().await
}

/// How readable console output is, from 0 (nothing, or noise) to 1 (text).
///
/// At the right rate a console prints text: printable ASCII, line breaks,
/// now and then UTF-8 or a terminal control (tab, backspace, bell,
/// escape). At a wrong rate the receiver samples the wrong bits: high-bit
/// bytes, NULs from framing errors, stray C0 controls, and (when the rates
/// differ by two) a fair share of printable bytes and short valid UTF-8
/// sequences. So printable ASCII and line breaks count fully, other UTF-8
/// characters by half, tab/backspace/bell/escape by a quarter, anything
/// else not at all; the score is that share of the bytes, scaled down
/// when there is too little to judge (under 8 readable characters, a line
/// break counting for 4), so one stray printable byte is not a console.
/// Modelled garbage of a wrong rate stays under 0.45 (see the tests).
pub fn readability(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let (mut readable, mut breaks) = (0.0f64, 0usize);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            readable += match c {
                '\r' | '\n' => {
                    breaks += 1;
                    1.0
                }
                ' '..='~' => 1.0,
                '\t' | '\x07' | '\x08' | '\x1b' => 0.25,
                c if c.is_control() => 0.0,
                c => 0.5 * c.len_utf8() as f64,
            };
        }
    }
    let share = readable / bytes.len() as f64;
    let evidence = ((readable + 4.0 * breaks.min(1) as f64) / 8.0).min(1.0);
    share * evidence
}

/// Shows bytes as text an agent can judge: valid printable characters as
/// they are, `\r` `\n` `\t` `\\` escaped, anything else as `\xNN`.
pub fn escape_sample(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\r' => out.push_str("\\r"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("\\x{b:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// How one candidate rate of `detect_baud` read.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BaudScore {
    /// The rate tried.
    pub baud: u32,
    /// Readability of what arrived, 0 (nothing or noise) to 1 (clean text).
    pub score: f64,
    /// Bytes that arrived while listening.
    pub bytes: u64,
    /// The first bytes that arrived, non-printables as \xNN.
    pub sample: String,
}

/// The outcome of [`Port::detect_baud`].
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BaudDetection {
    /// Every candidate, best first (ties keep the order tried).
    pub ranking: Vec<BaudScore>,
    /// The rate that read best, if any read well enough (score ≥ 0.5).
    pub best: Option<u32>,
    /// The line settings the port is left at: the best rate, else the original.
    pub settings: LineSettings,
    /// The rate changed from what it was before the detection.
    pub changed: bool,
}

/// Picks the best-reading candidate: the highest score of at least
/// [`MIN_SCORE`]; among equal scores the current rate, else the first tried.
pub fn choose_best(ranking: &[BaudScore], current: u32) -> Option<u32> {
    let top = ranking.iter().map(|s| s.score).fold(f64::NAN, f64::max);
    if top.is_nan() || top < MIN_SCORE {
        return None;
    }
    let tied: Vec<u32> = ranking
        .iter()
        .filter(|s| (s.score - top).abs() < 1e-9)
        .map(|s| s.baud)
        .collect();
    tied.iter()
        .copied()
        .find(|&b| b == current)
        .or(tied.first().copied())
}

/// Waits for what arrives from `start` for at most `listen`, ending early
/// once output has started and then stayed quiet for [`DETECT_QUIET`].
/// Wakes on appends only; returns the end offset.
async fn listen_from(log: &OutputLog, start: u64, listen: Duration) -> u64 {
    let mut head_rx = log.subscribe();
    let deadline = Instant::now() + listen;
    loop {
        let head = *head_rx.borrow_and_update();
        let wake_at = if head > start {
            (Instant::now() + DETECT_QUIET).min(deadline)
        } else {
            deadline
        };
        tokio::select! {
            changed = head_rx.changed() => if changed.is_err() { break },
            _ = tokio::time::sleep_until(wake_at) => break,
        }
    }
    log.head()
}

/// The errno of an I/O error says the device lacks the feature (a pty has
/// no modem lines, an adapter no BREAK), or an RFC 2217 console server
/// refused it (its answer, `comport.rs`, is of these kinds).
fn unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOTTY | libc::EINVAL | libc::EOPNOTSUPP)
    ) || matches!(
        e.kind(),
        io::ErrorKind::Unsupported | io::ErrorKind::InvalidInput
    )
}

fn join_error(e: tokio::task::JoinError) -> GateError {
    GateError::new(
        ErrorCode::PortLost,
        format!("the line control task failed: {e}; check status and retry"),
    )
}

/// Resets the detection flag when a detection ends, however it ends.
struct Detecting<'a>(&'a AtomicBool);

impl Drop for Detecting<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Port {
    fn control(&self) -> &ControlSlot {
        &self.shared.control
    }

    /// The current line settings: the configured ones until
    /// [`set_line_settings`](Self::set_line_settings) changes them; a
    /// reopen after a loss uses these.
    pub fn line_settings(&self) -> LineSettings {
        *self
            .control()
            .settings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn store_settings(&self, line: LineSettings) {
        *self
            .control()
            .settings
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = line;
    }

    /// Opens the device with the current settings and installs its control
    /// handle, under the handle's lock (see the module docs). The reader
    /// task's way to open.
    pub(super) async fn open_with_control(
        &self,
    ) -> io::Result<(device::DeviceReader, device::DeviceWriter, LineSettings)> {
        let mut slot = self.control().handle.lock().await;
        let line = self.line_settings();
        // Boxed: opening (a remote console's negotiation above all) needs
        // 1.5 KB of future state that the reader task, which awaits this,
        // would otherwise carry for the port's whole life.
        let (reader, writer, control) =
            Box::pin(device::open(&self.shared.spec.device, &line)).await?;
        *self.lock_com_port() = control.as_ref().and_then(|c| c.com_port());
        *slot = control;
        Ok((reader, writer, line))
    }

    fn lock_com_port(&self) -> std::sync::MutexGuard<'_, Option<Arc<ComPortLink>>> {
        self.control()
            .com_port
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The RFC 2217 state of the open connection (rfc2217:// ports while
    /// open): what `status` shows of the server's notifications.
    pub fn com_port(&self) -> Option<Arc<ComPortLink>> {
        self.lock_com_port().clone()
    }

    /// Whether the device is a remote console (`tcp://`, `telnet://`,
    /// `rfc2217://`).
    pub fn is_remote(&self) -> bool {
        RemoteAddr::is_url(&self.shared.spec.device)
    }

    /// Whether the device is a remote console without line control: a
    /// telnet or raw TCP connection (an rfc2217:// one has it, over
    /// COM-PORT-OPTION).
    fn lacks_line_control(&self) -> bool {
        matches!(
            RemoteAddr::parse(&self.shared.spec.device),
            Ok(Some(addr)) if addr.scheme != Scheme::Rfc2217
        )
    }

    /// Sets the line of a just opened rfc2217:// port to the current
    /// settings, in its own task: once the server agreed to COM-PORT-OPTION,
    /// the rate, framing and flow control go to it and its answers are
    /// awaited (with a deadline); the outcome is an event in `status`.
    pub(super) fn start_line_setup(&self) {
        let port = self.clone();
        tokio::spawn(async move {
            let Ok(mut slot) = port.lock_control().await else {
                return;
            };
            let Some(ctl) = slot.as_mut() else {
                return;
            };
            let line = port.line_settings();
            match ctl.apply_settings(line).await {
                Ok(()) => {
                    drop(slot);
                    port.record(format!("the console server set the line to {line}"));
                }
                Err(e) => {
                    drop(slot);
                    port.record(format!(
                        "the console server did not set the line to {line}: {e}"
                    ));
                }
            }
        });
    }

    /// The refusal of a line control operation on a remote console: a
    /// telnet or raw TCP connection carries bytes, not the serial line's
    /// settings or modem lines.
    fn remote_refusal(&self, what: &str) -> GateError {
        GateError::new(
            ErrorCode::PortUnavailable,
            format!(
                "{} is a remote console ({}): {what} is not available over telnet or raw TCP; use rfc2217:// if the console server speaks RFC 2217 (ser2net's telnet(rfc2217) accepter), or set the line on the console server itself",
                self.name(),
                self.shared.spec.device
            ),
        )
    }

    /// BREAK on a remote console: telnet's IAC BRK (the duration is the
    /// console server's), refused on raw TCP.
    async fn send_remote_break(&self) -> Result<(), GateError> {
        let mut slot = self.shared.writer.lock().await;
        let Some(writer) = slot.as_mut() else {
            return Err(self.not_open_error());
        };
        match writer.send_break().await {
            Some(Ok(())) => {
                drop(slot);
                self.record("sent BREAK (telnet IAC BRK)");
                Ok(())
            }
            Some(Err(e)) => Err(self.failed("sending BREAK", &e)),
            None => {
                Err(self.remote_refusal("BREAK (raw TCP has no way to send one; use telnet://)"))
            }
        }
    }

    /// Drops the control handle (the device is lost or closing).
    pub(super) async fn drop_control(&self) {
        *self.lock_com_port() = None;
        *self.control().handle.lock().await = None;
    }

    async fn lock_control(&self) -> Result<tokio::sync::MutexGuard<'_, Handle>, GateError> {
        tokio::time::timeout(LOCK_TIMEOUT, self.control().handle.lock())
            .await
            .map_err(|_| {
                GateError::new(
                    ErrorCode::Busy,
                    format!(
                        "another line control operation on {} has held the line for {}s; retry when it is done",
                        self.name(),
                        LOCK_TIMEOUT.as_secs()
                    ),
                )
            })
    }

    fn failed(&self, what: &str, e: &io::Error) -> GateError {
        if e.kind() == io::ErrorKind::TimedOut {
            return GateError::new(
                ErrorCode::Timeout,
                format!(
                    "{what} on {} ({}) failed: {e}; check the console server, then retry",
                    self.name(),
                    self.shared.spec.device
                ),
            );
        }
        GateError::new(
            ErrorCode::PortLost,
            format!(
                "{what} on {} ({}) failed: {e}; the device may have gone away, check status",
                self.name(),
                self.shared.spec.device
            ),
        )
    }

    fn no_modem_lines(&self, e: &io::Error) -> GateError {
        if !unsupported(e) {
            return self.failed("setting the modem control lines", e);
        }
        GateError::new(
            ErrorCode::PortUnavailable,
            format!(
                "{} ({}) has no modem control lines (a pseudo-terminal, or an adapter without DTR/RTS): {e}; use a port wired with DTR/RTS, or send_break / power-cycle instead",
                self.name(),
                self.shared.spec.device
            ),
        )
    }

    /// Sends a serial BREAK lasting `duration` (at most [`MAX_BREAK`]), e.g.
    /// to drop a Cisco router into ROMMON during boot.
    pub async fn send_break(&self, duration: Duration) -> Result<(), GateError> {
        let duration = duration.min(MAX_BREAK);
        if self.lacks_line_control() {
            return self.send_remote_break().await;
        }
        let port = self.clone();
        let task = tokio::spawn(async move {
            let mut slot = port.lock_control().await?;
            let Some(ctl) = slot.as_mut() else {
                return Err(port.not_open_error());
            };
            hold_break(ctl.as_mut(), duration).await.map_err(|e| {
                if unsupported(&e) {
                    GateError::new(
                        ErrorCode::PortUnavailable,
                        format!(
                            "{} ({}) does not support BREAK (a pseudo-terminal, or an adapter without it?): {e}; some console servers send BREAK on a telnet command instead",
                            port.name(),
                            port.shared.spec.device
                        ),
                    )
                } else {
                    port.failed("sending BREAK", &e)
                }
            })?;
            drop(slot);
            port.record(format!("sent BREAK for {} ms", duration.as_millis()));
            Ok(())
        });
        task.await.map_err(join_error)?
    }

    /// Changes the line settings: on the open device at once (no reopen,
    /// the OutputLog goes on), and for every later reopen. Returns whether
    /// they were applied live (false: the device is not open now; they
    /// apply when it reopens).
    pub async fn set_line_settings(&self, line: LineSettings) -> Result<bool, GateError> {
        line.validate().map_err(GateError::invalid)?;
        if self.lacks_line_control() {
            return Err(self.remote_refusal("set_line_settings"));
        }
        if self.control().detecting.load(Ordering::Acquire) {
            return Err(self.detecting_error());
        }
        let previous = self.line_settings();
        let live = self.apply_and_store(line, previous).await?;
        self.record(format!(
            "line settings {previous} -> {line}{}",
            if live { "" } else { " (applied at reopen)" }
        ));
        Ok(live)
    }

    /// Applies `line` to the open device and makes it the current settings,
    /// under the handle's lock (a reopen sees either the old settings and
    /// then this change, or the new ones). A device that is lost or not
    /// opened yet only gets them stored (returns false).
    async fn apply_and_store(
        &self,
        line: LineSettings,
        previous: LineSettings,
    ) -> Result<bool, GateError> {
        use super::PortState::{Down, Lost, Opening, Reopening};
        let mut slot = self.lock_control().await?;
        let live = match slot.as_mut() {
            Some(ctl) => {
                self.apply_to(ctl.as_mut(), &line, previous).await?;
                true
            }
            None if matches!(self.state(), Opening | Lost | Reopening | Down) => false,
            None => return Err(self.not_open_error()),
        };
        self.store_settings(line);
        Ok(live)
    }

    fn detecting_error(&self) -> GateError {
        GateError::new(
            ErrorCode::Busy,
            format!(
                "detect_baud is running on {}; retry when it has finished",
                self.name()
            ),
        )
    }

    /// Applies `line` to the open device; on failure tries to put back
    /// `previous`. The stored settings are not changed.
    async fn apply_live(
        &self,
        line: &LineSettings,
        previous: LineSettings,
    ) -> Result<(), GateError> {
        let mut slot = self.lock_control().await?;
        let Some(ctl) = slot.as_mut() else {
            return Err(self.not_open_error());
        };
        self.apply_to(ctl.as_mut(), line, previous).await
    }

    async fn apply_to(
        &self,
        ctl: &mut dyn LineControl,
        line: &LineSettings,
        previous: LineSettings,
    ) -> Result<(), GateError> {
        let Err(e) = ctl.apply_settings(*line).await else {
            return Ok(());
        };
        // Best effort: the line back at what it was.
        let _ = ctl.apply_settings(previous).await;
        Err(if unsupported(&e) {
            GateError::invalid(format!(
                "{} ({}) rejected {line}: {e}; use settings the adapter supports (settings stay {previous})",
                self.name(),
                self.shared.spec.device
            ))
        } else {
            self.failed("changing the line settings", &e)
        })
    }

    /// Sets DTR and/or RTS (either may be left as is) and returns every
    /// modem line as the driver reports it.
    pub async fn set_lines(
        &self,
        dtr: Option<bool>,
        rts: Option<bool>,
    ) -> Result<ModemStatus, GateError> {
        if self.lacks_line_control() {
            return Err(self.remote_refusal("set_lines (DTR/RTS)"));
        }
        let mut slot = self.lock_control().await?;
        let Some(ctl) = slot.as_mut() else {
            return Err(self.not_open_error());
        };
        let status = set_lines(ctl.as_mut(), dtr, rts)
            .await
            .map_err(|e| self.no_modem_lines(&e))?;
        drop(slot);
        let level = |v: bool| if v { "on" } else { "off" };
        let changes: Vec<String> = [(ModemLine::Dtr, dtr), (ModemLine::Rts, rts)]
            .iter()
            .filter_map(|(l, v)| v.map(|v| format!("{} {}", l.label(), level(v))))
            .collect();
        if !changes.is_empty() {
            self.record(format!("set {}", changes.join(", ")));
        }
        Ok(status)
    }

    /// Pulses a modem line: `level` for `duration` (at most
    /// [`MAX_PULSE`]), then back; returns the lines afterwards.
    pub async fn pulse_line(
        &self,
        line: ModemLine,
        level: bool,
        duration: Duration,
    ) -> Result<ModemStatus, GateError> {
        let duration = duration.min(MAX_PULSE);
        if self.lacks_line_control() {
            return Err(self.remote_refusal("pulse_line (DTR/RTS)"));
        }
        let port = self.clone();
        let task = tokio::spawn(async move {
            let mut slot = port.lock_control().await?;
            let Some(ctl) = slot.as_mut() else {
                return Err(port.not_open_error());
            };
            pulse(ctl.as_mut(), line, level, duration)
                .await
                .map_err(|e| port.no_modem_lines(&e))?;
            let status = ctl
                .modem_status()
                .await
                .map_err(|e| port.no_modem_lines(&e))?;
            drop(slot);
            port.record(format!(
                "pulsed {} {} for {} ms",
                line.label(),
                if level { "high" } else { "low" },
                duration.as_millis()
            ));
            Ok(status)
        });
        task.await.map_err(join_error)?
    }

    /// Finds the baud rate the device talks at: for each candidate, sets
    /// the rate, sends `probe`, listens up to `listen` (at most
    /// [`MAX_LISTEN`]) and scores what arrived with [`readability`]. Leaves
    /// the port at the best rate, or the original one when none reads
    /// well. Runs to the end even if the caller goes away.
    pub async fn detect_baud(
        &self,
        candidates: Vec<u32>,
        probe: Vec<u8>,
        listen: Duration,
    ) -> Result<BaudDetection, GateError> {
        let listen = listen.min(MAX_LISTEN);
        if self.lacks_line_control() {
            return Err(self.remote_refusal("detect_baud"));
        }
        if candidates.is_empty() || candidates.len() > MAX_CANDIDATES {
            return Err(GateError::invalid(format!(
                "give 1 to {MAX_CANDIDATES} candidate rates, got {}",
                candidates.len()
            )));
        }
        let original = self.line_settings();
        for &baud in &candidates {
            LineSettings { baud, ..original }
                .validate()
                .map_err(GateError::invalid)?;
        }
        if self.control().detecting.swap(true, Ordering::AcqRel) {
            return Err(self.detecting_error());
        }
        let port = self.clone();
        let task = tokio::spawn(async move {
            let _flag = Detecting(&port.control().detecting);
            let mut ranking = Vec::with_capacity(candidates.len());
            let tried = port
                .try_candidates(&candidates, &probe, listen, original, &mut ranking)
                .await;
            let best = choose_best(&ranking, original.baud);
            let settings = LineSettings {
                baud: best.unwrap_or(original.baud),
                ..original
            };
            if let Err(e) = tried {
                // Back to the original rate (best effort: the device may be gone).
                let _ = port.apply_live(&original, original).await;
                return Err(e);
            }
            port.apply_and_store(settings, original).await?;
            ranking.sort_by(|a, b| b.score.total_cmp(&a.score));
            let rates: Vec<String> = candidates.iter().map(u32::to_string).collect();
            port.record(format!(
                "detect_baud tried {}: {}",
                rates.join(", "),
                best.map_or_else(
                    || format!("none read well, kept {}", original.baud),
                    |b| format!("best {b}")
                )
            ));
            Ok(BaudDetection {
                ranking,
                best,
                changed: settings.baud != original.baud,
                settings,
            })
        });
        task.await.map_err(join_error)?
    }

    async fn try_candidates(
        &self,
        candidates: &[u32],
        probe: &[u8],
        listen: Duration,
        original: LineSettings,
        ranking: &mut Vec<BaudScore>,
    ) -> Result<(), GateError> {
        let log = self.log();
        for &baud in candidates {
            self.apply_live(&LineSettings { baud, ..original }, original)
                .await?;
            let start = log.head();
            if !probe.is_empty() {
                self.write(probe).await?;
            }
            let end = listen_from(log, start, listen).await;
            let bytes = log.copy_range(start, end);
            ranking.push(BaudScore {
                baud,
                score: (readability(&bytes) * 1000.0).round() / 1000.0,
                bytes: bytes.len() as u64,
                sample: escape_sample(&bytes[..bytes.len().min(SAMPLE_BYTES)]),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::port::lines::ControlFuture;

    /// One call on the fake, with the (paused) time it happened at.
    #[derive(Debug, Clone, PartialEq)]
    enum Call {
        Break(bool),
        Line(ModemLine, bool),
        Status,
        Apply(LineSettings),
    }

    /// A device that records calls and can refuse modem lines like a pty.
    #[derive(Clone, Default)]
    struct Fake {
        calls: Arc<Mutex<Vec<(Duration, Call)>>>,
        no_modem_lines: bool,
        start: Option<Instant>,
        lines: ModemStatus,
    }

    impl Fake {
        fn new() -> Fake {
            Fake {
                start: Some(Instant::now()),
                ..Fake::default()
            }
        }

        fn log(&self, call: Call) {
            let at = self.start.map_or(Duration::ZERO, |s| s.elapsed());
            self.calls.lock().unwrap().push((at, call));
        }

        fn calls(&self) -> Vec<(Duration, Call)> {
            self.calls.lock().unwrap().clone()
        }
    }

    impl LineControl for Fake {
        fn set_break(&mut self, on: bool) -> ControlFuture<'_, ()> {
            self.log(Call::Break(on));
            Box::pin(std::future::ready(Ok(())))
        }

        fn write_line(&mut self, line: ModemLine, level: bool) -> ControlFuture<'_, ()> {
            if self.no_modem_lines {
                return Box::pin(std::future::ready(Err(io::Error::from_raw_os_error(
                    libc::ENOTTY,
                ))));
            }
            self.log(Call::Line(line, level));
            match line {
                ModemLine::Dtr => self.lines.dtr = level,
                ModemLine::Rts => self.lines.rts = level,
            }
            Box::pin(std::future::ready(Ok(())))
        }

        fn modem_status(&mut self) -> ControlFuture<'_, ModemStatus> {
            if self.no_modem_lines {
                return Box::pin(std::future::ready(Err(io::Error::from_raw_os_error(
                    libc::ENOTTY,
                ))));
            }
            self.log(Call::Status);
            Box::pin(std::future::ready(Ok(self.lines)))
        }

        fn apply_settings(&mut self, line: LineSettings) -> ControlFuture<'_, ()> {
            self.log(Call::Apply(line));
            Box::pin(std::future::ready(Ok(())))
        }
    }

    /// Checks the calls and their timing: each at or after the expected
    /// offset (a timer never fires early), and not much later (real time,
    /// so some slack for a loaded machine).
    fn assert_timed(fake: &Fake, want: &[(u64, Call)]) {
        let calls = fake.calls();
        let got: Vec<&Call> = calls.iter().map(|(_, c)| c).collect();
        let expected: Vec<&Call> = want.iter().map(|(_, c)| c).collect();
        assert_eq!(got, expected);
        for ((at, call), (ms, _)) in calls.iter().zip(want) {
            let ms = Duration::from_millis(*ms);
            assert!(
                *at >= ms && *at < ms + Duration::from_millis(500),
                "{call:?} at {at:?}, expected {ms:?}"
            );
        }
    }

    #[tokio::test]
    async fn break_is_held_for_its_duration_then_cleared() {
        let mut fake = Fake::new();
        hold_break(&mut fake, Duration::from_millis(250))
            .await
            .unwrap();
        assert_timed(&fake, &[(0, Call::Break(true)), (250, Call::Break(false))]);
    }

    #[tokio::test]
    async fn pulse_low_drops_waits_and_restores() {
        let mut fake = Fake::new();
        fake.lines.dtr = true;
        pulse(&mut fake, ModemLine::Dtr, false, Duration::from_millis(100))
            .await
            .unwrap();
        assert_timed(
            &fake,
            &[
                (0, Call::Line(ModemLine::Dtr, false)),
                (100, Call::Line(ModemLine::Dtr, true)),
            ],
        );
        assert!(fake.lines.dtr, "restored");
        let mut fake = Fake::new();
        pulse(&mut fake, ModemLine::Rts, true, Duration::from_millis(30))
            .await
            .unwrap();
        assert_timed(
            &fake,
            &[
                (0, Call::Line(ModemLine::Rts, true)),
                (30, Call::Line(ModemLine::Rts, false)),
            ],
        );
    }

    #[tokio::test]
    async fn set_lines_writes_only_what_is_given_and_reads_back() {
        let mut fake = Fake::new();
        let status = set_lines(&mut fake, Some(true), None).await.unwrap();
        assert!(status.dtr && !status.rts);
        let status = set_lines(&mut fake, Some(false), Some(true)).await.unwrap();
        assert!(!status.dtr && status.rts);
        let status = set_lines(&mut fake, None, None).await.unwrap();
        assert!(!status.dtr && status.rts);
        let calls: Vec<Call> = fake.calls().into_iter().map(|(_, c)| c).collect();
        assert_eq!(
            calls,
            vec![
                Call::Line(ModemLine::Dtr, true),
                Call::Status,
                Call::Line(ModemLine::Dtr, false),
                Call::Line(ModemLine::Rts, true),
                Call::Status,
                Call::Status,
            ]
        );
    }

    #[tokio::test]
    async fn a_pty_like_device_reports_enotty_which_reads_as_unsupported() {
        let mut fake = Fake::new();
        fake.no_modem_lines = true;
        let e = set_lines(&mut fake, Some(true), None).await.unwrap_err();
        assert!(unsupported(&e), "{e}");
        let e = pulse(&mut fake, ModemLine::Dtr, false, Duration::from_millis(1))
            .await
            .unwrap_err();
        assert!(unsupported(&e), "{e}");
        assert!(fake.calls().is_empty(), "nothing half-done");
        assert!(!unsupported(&io::Error::from_raw_os_error(libc::EIO)));
    }

    /// What a receiver at `rx_baud` reads from `text` sent at `tx_baud`
    /// (8N1): the line is sampled in the middle of each bit the receiver
    /// expects; a stop bit read as 0 is a framing error, which a raw tty
    /// delivers as NUL.
    fn misread(text: &[u8], tx_baud: u32, rx_baud: u32) -> Vec<u8> {
        let mut levels = Vec::new(); // one entry per tx bit
        levels.extend([true; 4]); // idle
        for &b in text {
            levels.push(false);
            levels.extend((0..8).map(|i| b >> i & 1 == 1));
            levels.push(true);
        }
        levels.extend([true; 20]);
        let total = levels.len() as f64 / tx_baud as f64;
        let level_at = |t: f64| {
            let i = (t * tx_baud as f64) as usize;
            levels.get(i).copied().unwrap_or(true)
        };
        let rx_bit = 1.0 / rx_baud as f64;
        let step = rx_bit / 16.0;
        let (mut out, mut t) = (Vec::new(), 0.0);
        while t < total {
            if level_at(t) {
                t += step;
                continue;
            }
            // Start bit edge at t: sample the data bits in their middles.
            let mut byte = 0u8;
            for i in 0..8 {
                if level_at(t + rx_bit * (1.5 + i as f64)) {
                    byte |= 1 << i;
                }
            }
            let stop = level_at(t + rx_bit * 9.5);
            out.push(if stop { byte } else { 0 });
            // Hunt for the next start edge from the middle of the stop bit
            // (after a framing error, from when the line is idle again).
            t += rx_bit * 9.5;
            while t < total && !level_at(t) {
                t += step;
            }
        }
        out
    }

    const CONSOLE: &[u8] = b"\r\nSW1>\r\nSW1>show version\r\nCisco IOS Software, C2960 Software (C2960-LANBASEK9-M), Version 15.0(2)SE11\r\nROM: Bootstrap program is C2960 boot loader\r\nSW1 uptime is 3 weeks, 2 days\r\nSW1>";

    /// What consoles answer a CR with, or print at boot.
    const CONSOLES: [&[u8]; 5] = [
        CONSOLE,
        b"\r\nUbuntu 22.04.3 LTS pi-console ttyS0\r\n\r\npi-console login: ",
        b"\r\n--- JUNOS 21.4R3-S5.4 Kernel 64-bit  JNPR-12.1-20230608.3f5a5e6_buil\r\nroot@mx1> show interfaces terse \r\nInterface               Admin Link Proto    Local                 Remote\r\nge-0/0/0                up    up\r\nge-0/0/0.0              up    up   inet     10.0.0.1/30     \r\n{master}\r\nroot@mx1> ",
        b"\r\n\r\nSystem Bootstrap, Version 15.0(1r)M16, RELEASE SOFTWARE (fc1)\r\nrommon 1 > ",
        b"\r\n\x1b[2J\x1b[HPress any key to continue\r\n",
    ];

    #[test]
    fn the_uart_model_reads_clean_text_at_the_right_rate() {
        for text in CONSOLES {
            assert_eq!(misread(text, 9600, 9600), text);
            assert_eq!(misread(text, 115200, 115200), text);
        }
    }

    #[test]
    fn clean_console_text_scores_high_and_wrong_rates_score_low() {
        let rates = [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400];
        for text in CONSOLES {
            let clean = readability(text);
            assert!(
                clean > 0.9,
                "clean text: {clean} for {}",
                escape_sample(text)
            );
            for tx in rates {
                for rx in rates.iter().copied().filter(|&rx| rx != tx) {
                    let garbage = misread(text, tx, rx);
                    let score = readability(&garbage);
                    assert!(
                        score < 0.45,
                        "device at {tx}, read at {rx}: {score} for {}",
                        escape_sample(&garbage)
                    );
                }
            }
        }
    }

    #[test]
    fn short_noise_is_not_a_console_but_a_short_prompt_is() {
        assert_eq!(readability(b""), 0.0);
        assert!(readability(b"x") < MIN_SCORE);
        assert!(readability(b"\x00\xf8\x80") < 0.01);
        assert!(readability(b"\r\nSW1>") > 0.9);
        assert!(readability(b"\r\nrommon 1 > ") > 0.9);
        assert!(readability("Ünïcödé prompt ✓\r\n".as_bytes()) > MIN_SCORE);
        assert!(readability(b"\x1b[2J\x1b[Hlogin: ") > 0.8);
    }

    #[test]
    fn samples_escape_what_is_not_text() {
        assert_eq!(escape_sample(b"SW1>\r\n"), "SW1>\\r\\n");
        assert_eq!(escape_sample(b"\x00\xf8a\\"), "\\x00\\xf8a\\\\");
        assert_eq!(escape_sample("é".as_bytes()), "é");
    }

    fn score(baud: u32, score: f64) -> BaudScore {
        BaudScore {
            baud,
            score,
            bytes: 1,
            sample: String::new(),
        }
    }

    #[test]
    fn the_best_rate_wins_ties_keep_the_current_one_and_noise_wins_nothing() {
        let ranking = [score(9600, 0.1), score(115200, 0.98), score(57600, 0.2)];
        assert_eq!(choose_best(&ranking, 9600), Some(115200));
        let tie = [score(9600, 1.0), score(19200, 1.0), score(115200, 1.0)];
        assert_eq!(choose_best(&tie, 115200), Some(115200));
        assert_eq!(choose_best(&tie, 38400), Some(9600));
        let noise = [score(9600, 0.2), score(115200, 0.0)];
        assert_eq!(choose_best(&noise, 9600), None);
        assert_eq!(choose_best(&[], 9600), None);
    }

    #[tokio::test]
    async fn settings_changed_while_not_open_apply_at_reopen() {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let spec = super::super::PortSpec {
            name: "nowhere".into(),
            device: "/nonexistent/serialgate-test-tty".into(),
            line: LineSettings::default(),
            retention: 1024,
            down_after: 0,
        };
        let port = Port::start(spec, Default::default(), &shutdown);
        let new = LineSettings {
            baud: 115200,
            ..LineSettings::default()
        };
        let live = port.set_line_settings(new).await.unwrap();
        assert!(!live);
        assert_eq!(port.line_settings(), new);
        assert_eq!(port.spec().line, new);
        let bad = LineSettings {
            data_bits: 9,
            ..new
        };
        let e = port.set_line_settings(bad).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(port.line_settings(), new, "bad input changes nothing");
        let e = port.send_break(Duration::from_millis(1)).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::PortUnavailable, "{e}");
        let e = port.set_lines(Some(true), None).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::PortUnavailable, "{e}");
        port.close().await;
    }
}
