//! Line control of a port: BREAK, the modem control lines (DTR/RTS out,
//! CTS/DSR/CD/RI in) and live line settings, through the device's
//! [`LineControl`] handle (`lines.rs`). Baud-rate detection, built on
//! these, is in `baud_detect.rs`.
//!
//! # Design
//!
//! The timed sequences ([`hold_break`], [`pulse`]) are plain functions
//! over the trait, so their order and timing are tested without hardware.
//!
//! A port keeps its control state in the `ControlSlot` of its device part
//! (`connection.rs`): the handle on the open device, in an async mutex
//! that serializes control operations, and the current line settings.
//! The operations here are the port's, over that slot: they need the
//! whole port (its state, its events, its errors), so they sit above the
//! handle (`handle.rs`), which does not depend on them.
//!
//! Operations that wait (BREAK, pulses, detection) run in their own task:
//! a tool call cancelled halfway never leaves the line in BREAK, a pin
//! dropped, or the rate at a candidate of the detection.

use std::io;
use std::time::Duration;

use super::connection::{ControlHandle, RemoteBreak};
use super::device;
use super::handle::Port;
use super::lines::{LineControl, ModemLine, ModemStatus};
use super::state::PortState;
use crate::error::{ErrorCode, GateError};
use crate::remote::{RemoteAddr, Scheme};
use crate::settings::LineSettings;

/// Longest BREAK `send_break` sends.
pub const MAX_BREAK: Duration = Duration::from_secs(10);
/// Longest pulse of a modem line.
pub const MAX_PULSE: Duration = Duration::from_secs(10);
/// How long a control operation waits for another one on the same port
/// (at most a 10 s BREAK or pulse) before it reports `busy`.
const LOCK_TIMEOUT: Duration = Duration::from_secs(15);

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

/// The error of a line control task that panicked or was cancelled.
pub(super) fn join_error(e: tokio::task::JoinError) -> GateError {
    GateError::new(
        ErrorCode::PortLost,
        format!("the line control task failed: {e}; check status and retry"),
    )
}

impl Port {
    /// Opens the device with the current settings and installs its control
    /// handle, under the handle's lock (see the module docs). The reader
    /// task's way to open.
    pub(super) async fn open_with_control(
        &self,
    ) -> io::Result<(device::DeviceReader, device::DeviceWriter, LineSettings)> {
        let mut slot = self.control().lock().await;
        let line = self.line_settings();
        // Boxed: opening (a remote console's negotiation above all) needs
        // 1.5 KB of future state that the reader task, which awaits this,
        // would otherwise carry for the port's whole life.
        let (reader, writer, control) = Box::pin(device::open(self.device(), &line)).await?;
        self.control()
            .set_com_port(control.as_ref().and_then(|c| c.com_port()));
        *slot = control;
        Ok((reader, writer, line))
    }

    /// Whether the device is a remote console without line control: a
    /// telnet or raw TCP connection (an rfc2217:// one has it, over
    /// COM-PORT-OPTION).
    pub(super) fn lacks_line_control(&self) -> bool {
        matches!(
            RemoteAddr::parse(self.device()),
            Ok(Some(addr)) if addr.scheme != Scheme::Rfc2217
        )
    }

    /// Sets the line of a just opened rfc2217:// port to the current
    /// settings, in its own task: once the server agreed to COM-PORT-OPTION,
    /// the rate, framing and flow control go to it and its answers are
    /// awaited (with a deadline); the outcome is an event in `status`.
    pub(super) fn start_line_setup(&self) {
        let port = self.clone();
        crate::task::spawn(async move {
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
    pub(super) fn remote_refusal(&self, what: &str) -> GateError {
        GateError::new(
            ErrorCode::PortUnavailable,
            format!(
                "{} is a remote console ({}): {what} is not available over telnet or raw TCP; use rfc2217:// if the console server speaks RFC 2217 (ser2net's telnet(rfc2217) accepter), or set the line on the console server itself",
                self.name(),
                self.device()
            ),
        )
    }

    /// BREAK on a remote console: telnet's IAC BRK (the duration is the
    /// console server's), refused on raw TCP.
    async fn send_remote_break(&self) -> Result<(), GateError> {
        match self.connection().remote_break().await {
            RemoteBreak::NotOpen => Err(self.not_open_error()),
            RemoteBreak::Sent => {
                self.record("sent BREAK (telnet IAC BRK)");
                Ok(())
            }
            RemoteBreak::Failed(e) => Err(self.failed("sending BREAK", &e)),
            RemoteBreak::Unsupported => {
                Err(self.remote_refusal("BREAK (raw TCP has no way to send one; use telnet://)"))
            }
        }
    }

    /// Drops the control handle (the device is lost or closing).
    pub(super) async fn drop_control(&self) {
        self.control().set_com_port(None);
        *self.control().lock().await = None;
    }

    async fn lock_control(&self) -> Result<tokio::sync::MutexGuard<'_, ControlHandle>, GateError> {
        tokio::time::timeout(LOCK_TIMEOUT, self.control().lock())
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
                    self.device()
                ),
            );
        }
        GateError::new(
            ErrorCode::PortLost,
            format!(
                "{what} on {} ({}) failed: {e}; the device may have gone away, check status",
                self.name(),
                self.device()
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
                self.device()
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
        let task = crate::task::spawn(async move {
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
                            port.device()
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
        if self.control().detecting() {
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
    pub(super) async fn apply_and_store(
        &self,
        line: LineSettings,
        previous: LineSettings,
    ) -> Result<bool, GateError> {
        use PortState::{Down, Lost, Opening, Reopening};
        let mut slot = self.lock_control().await?;
        let live = match slot.as_mut() {
            Some(ctl) => {
                self.apply_to(ctl.as_mut(), &line, previous).await?;
                true
            }
            None if matches!(self.state(), Opening | Lost | Reopening | Down) => false,
            None => return Err(self.not_open_error()),
        };
        self.control().store_settings(line);
        Ok(live)
    }

    pub(super) fn detecting_error(&self) -> GateError {
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
    pub(super) async fn apply_live(
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
                self.device()
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
        let task = crate::task::spawn(async move {
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
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::time::Instant;

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

    /// Checks the calls and their timing, exactly: the tests that call
    /// this run on tokio's paused clock, which moves only when every task
    /// waits on a timer, so a loaded machine changes nothing.
    fn assert_timed(fake: &Fake, want: &[(u64, Call)]) {
        let calls = fake.calls();
        let got: Vec<&Call> = calls.iter().map(|(_, c)| c).collect();
        let expected: Vec<&Call> = want.iter().map(|(_, c)| c).collect();
        assert_eq!(got, expected);
        for ((at, call), (ms, _)) in calls.iter().zip(want) {
            let ms = Duration::from_millis(*ms);
            assert_eq!(*at, ms, "{call:?} at {at:?}, expected {ms:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn break_is_held_for_its_duration_then_cleared() {
        let mut fake = Fake::new();
        hold_break(&mut fake, Duration::from_millis(250))
            .await
            .unwrap();
        assert_timed(&fake, &[(0, Call::Break(true)), (250, Call::Break(false))]);
    }

    #[tokio::test(start_paused = true)]
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

    #[tokio::test]
    async fn settings_changed_while_not_open_apply_at_reopen() {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let spec = crate::port::handle::PortSpec {
            name: "nowhere".into(),
            device: "/nonexistent/serialgate-test-tty".into(),
            line: LineSettings::default(),
            retention: 1024,
            down_after: 0,
            credentials: None,
            watches: Vec::new(),
            prompts: None,
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
