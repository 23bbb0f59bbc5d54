//! Line control of an `rfc2217://` port: the serial line behind a console
//! server, set over telnet's COM-PORT-OPTION (RFC 2217, codec in
//! [`crate::remote::rfc2217`]).
//!
//! Two halves share a connection's [`ComPortLink`] (`comport_link.rs`):
//! the reader task feeds it what the server says (its answer to our WILL
//! COM-PORT-OPTION, then its answers and notifications), and
//! [`ComPortControl`], the port's control handle, sends commands and
//! waits, with a deadline, until the server has answered each one. An answer that differs from what was
//! asked (the server kept another rate, DTR stayed off) is an error that
//! says so; no answer is a `timeout` (ser2net does not answer DTR/RTS
//! commands for a device without modem lines, such as a pty).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::comport_link::{ComPortLink, Negotiation};
use super::lines::{ControlFuture, LineControl, ModemLine, ModemStatus};
use super::telnet_link::TelnetLink;
use crate::remote::rfc2217::{self, Command, RemoteModemState, Slot};
use crate::settings::LineSettings;

/// How long the server may take to agree to COM-PORT-OPTION and to answer
/// a command.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// An answer value as an engineer reads it.
fn describe(slot: Slot, value: u32) -> String {
    let named = |names: &[(u32, &str)]| {
        names
            .iter()
            .find(|(v, _)| *v == value)
            .map_or_else(|| format!("code {value}"), |(_, n)| (*n).to_owned())
    };
    match slot {
        Slot::Baud if value == 0 => "an unknown rate".to_owned(),
        Slot::Baud => format!("{value} baud"),
        Slot::DataSize => format!("{value} data bits"),
        Slot::StopSize => format!("stop size {value}"),
        Slot::Parity => named(&[
            (1, "no parity"),
            (2, "odd parity"),
            (3, "even parity"),
            (4, "mark parity"),
            (5, "space parity"),
        ]),
        Slot::Flow => named(&[(1, "no flow control"), (2, "XON/XOFF"), (3, "RTS/CTS")]),
        Slot::Break => named(&[(5, "BREAK on"), (6, "BREAK off")]),
        Slot::Dtr => named(&[(8, "DTR on"), (9, "DTR off")]),
        Slot::Rts => named(&[(11, "RTS on"), (12, "RTS off")]),
        Slot::LinestateMask | Slot::ModemstateMask => format!("mask {value:#04x}"),
    }
}

/// The control handle of an `rfc2217://` port (see the module docs).
pub struct ComPortControl {
    link: Arc<TelnetLink>,
    com: Arc<ComPortLink>,
}

impl ComPortControl {
    /// The handle of one connection: commands go through `link`, answers
    /// come in through `com`.
    pub(super) fn new(link: Arc<TelnetLink>, com: Arc<ComPortLink>) -> ComPortControl {
        ComPortControl { link, com }
    }

    /// Waits for the server's agreement, sends `commands` in one write and
    /// waits until each is answered, all within [`ANSWER_TIMEOUT`]; then
    /// checks that each answer is what was asked.
    async fn run(&self, commands: &[Command]) -> io::Result<()> {
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        let mut rx = self.com.subscribe();
        let agreed = tokio::time::timeout_at(
            deadline,
            rx.wait_for(|v| v.negotiation != Negotiation::Pending),
        )
        .await
        .map(|r| r.map(|v| (v.negotiation, v.com.cisco_baud, v.com.answers())));
        let (cisco, before) = match agreed {
            Err(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the console server did not answer WILL COM-PORT-OPTION within {}s (is it an RFC 2217 port?)",
                        ANSWER_TIMEOUT.as_secs()
                    ),
                ));
            }
            Ok(Err(_)) => return Err(io::Error::other("the connection's state is gone")),
            Ok(Ok((Negotiation::Refused, ..))) => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "the console server refused COM-PORT-OPTION (RFC 2217): it is a plain telnet port; use telnet:// and set the line on the console server itself",
                ));
            }
            Ok(Ok((_, cisco, before))) => (cisco, before),
        };
        let mut wire = Vec::new();
        for command in commands {
            command
                .encode(cisco, &mut wire)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        }
        self.link.send_raw(&wire).await?;
        let expected: Vec<(Slot, u32)> = commands.iter().map(|c| c.expects()).collect();
        let answered = tokio::time::timeout_at(
            deadline,
            rx.wait_for(|v| expected.iter().all(|(s, _)| v.com.ack(*s).0 > before)),
        )
        .await
        .map(|r| r.is_ok());
        let com = self.com.view().com;
        if answered != Ok(true) {
            let missing: Vec<&str> = expected
                .iter()
                .filter(|(s, _)| com.ack(*s).0 <= before)
                .map(|(s, _)| s.label())
                .collect();
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the console server did not answer {} within {}s",
                    missing.join(", "),
                    ANSWER_TIMEOUT.as_secs()
                ),
            ));
        }
        for (slot, want) in expected {
            let got = com.ack(slot).1;
            // ser2net 4.3 answers BREAK-OFF with BREAK-ON's code: for
            // BREAK, any answer acknowledges.
            if got != want && slot != Slot::Break {
                // A line it cannot drive is a missing feature; a setting it
                // kept otherwise is a setting it does not take.
                let kind = match slot {
                    Slot::Break | Slot::Dtr | Slot::Rts => io::ErrorKind::Unsupported,
                    _ => io::ErrorKind::InvalidInput,
                };
                return Err(io::Error::new(
                    kind,
                    format!(
                        "the console server answered {} with {} instead of {}",
                        slot.label(),
                        describe(slot, got),
                        describe(slot, want)
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl LineControl for ComPortControl {
    fn set_break(&mut self, on: bool) -> ControlFuture<'_, ()> {
        Box::pin(async move { self.run(&[Command::SetBreak(on)]).await })
    }

    fn write_line(&mut self, line: ModemLine, level: bool) -> ControlFuture<'_, ()> {
        let command = match line {
            ModemLine::Dtr => Command::SetDtr(level),
            ModemLine::Rts => Command::SetRts(level),
        };
        Box::pin(async move { self.run(&[command]).await })
    }

    /// DTR and RTS as the server last acknowledged them (off until set
    /// through this connection), the inputs as it last notified them (off
    /// until it does).
    fn modem_status(&mut self) -> ControlFuture<'_, ModemStatus> {
        let com = self.com.view().com;
        let inputs = com
            .modem_state
            .map(RemoteModemState::from_bits)
            .unwrap_or_default();
        Box::pin(std::future::ready(Ok(ModemStatus {
            dtr: com.dtr().unwrap_or(false),
            rts: com.rts().unwrap_or(false),
            cts: inputs.cts,
            dsr: inputs.dsr,
            cd: inputs.cd,
            ri: inputs.ri,
        })))
    }

    fn apply_settings(&mut self, line: LineSettings) -> ControlFuture<'_, ()> {
        Box::pin(async move { self.run(&rfc2217::line_commands(&line)).await })
    }

    fn com_port(&self) -> Option<Arc<ComPortLink>> {
        Some(self.com.clone())
    }
}
