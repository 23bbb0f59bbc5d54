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

#[cfg(test)]
mod tests {
    //! Against a console server played on loopback: the variants ser2net
    //! does not show (Cisco's one-byte rates, a refusal, a server that
    //! keeps another rate), through the real open path and reader.

    use std::sync::Mutex;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;
    use crate::port::device;
    use crate::remote::rfc2217::{LINESTATE_MASK, MODEMSTATE_MASK, OPT_COM_PORT, cisco_index};
    use crate::remote::telnet::{DO, DONT, IAC, Telnet};

    /// How the played server behaves.
    #[derive(Clone, Copy)]
    enum Server {
        /// Agrees; answers rates with Cisco's one-byte index.
        Cisco,
        /// Refuses COM-PORT-OPTION.
        Refuses,
        /// Agrees; keeps 9600 whatever rate is asked.
        Keeps9600,
    }

    /// Starts the server; returns its URL and the client's
    /// subnegotiations as it received them.
    async fn serve(kind: Server) -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("rfc2217://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut telnet = Telnet::new();
            telnet.offer(OPT_COM_PORT, &mut Vec::new()); // to collect SBs
            let verb = match kind {
                Server::Refuses => DONT,
                _ => DO,
            };
            stream.write_all(&[IAC, verb, OPT_COM_PORT]).await.unwrap();
            let mut buf = [0u8; 1024];
            loop {
                let n = match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                telnet.receive(&buf[..n], &mut Vec::new(), &mut Vec::new());
                let mut out = Vec::new();
                for sub in telnet.take_subnegotiations() {
                    record.lock().unwrap().push(sub.clone());
                    let (code, value) = (sub[1], &sub[2..]);
                    let answer: Vec<u8> = match (kind, code) {
                        (_, 10 | 11) => continue, // masks: not answered
                        (Server::Cisco, 1) => {
                            let rate = match *value {
                                [a, b, c, d] => u32::from_be_bytes([a, b, c, d]),
                                [i] => crate::remote::rfc2217::cisco_rate(i).unwrap(),
                                _ => panic!("bad rate {value:?}"),
                            };
                            vec![101, cisco_index(rate).unwrap()]
                        }
                        (Server::Keeps9600, 1) => vec![101, 0, 0, 0x25, 0x80],
                        _ => [&[code + 100][..], value].concat(),
                    };
                    Telnet::subnegotiation(OPT_COM_PORT, &answer, &mut out);
                }
                if !out.is_empty() {
                    stream.write_all(&out).await.unwrap();
                }
            }
        });
        (url, seen)
    }

    /// Opens `url` as a port would, with its reader running.
    async fn open(url: &str) -> Box<dyn LineControl> {
        let line = LineSettings::default();
        let (mut reader, _writer, control) = device::open(url, &line).await.unwrap();
        tokio::spawn(async move {
            while let Ok(n) = reader.read_data(&mut |_: &[u8]| {}).await {
                if n == 0 {
                    return;
                }
            }
        });
        control.expect("an rfc2217:// port has a control handle")
    }

    fn at(baud: u32) -> LineSettings {
        LineSettings {
            baud,
            ..LineSettings::default()
        }
    }

    #[tokio::test]
    async fn a_cisco_server_gets_rates_as_one_byte_once_it_answered_so() {
        let (url, seen) = serve(Server::Cisco).await;
        let mut ctl = open(&url).await;
        ctl.apply_settings(at(9600)).await.unwrap();
        ctl.apply_settings(at(115200)).await.unwrap();
        let e = ctl.apply_settings(at(14400)).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        assert!(e.to_string().contains("no 14400"), "{e}");
        let com = ctl.com_port().unwrap().view();
        assert_eq!(com.negotiation, Negotiation::Agreed);
        assert!(com.com.cisco_baud);
        let rates: Vec<Vec<u8>> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s[1] == 1)
            .cloned()
            .collect();
        assert_eq!(rates, [vec![44, 1, 0, 0, 0x25, 0x80], vec![44, 1, 14]]);
        let masks: Vec<Vec<u8>> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s[1] == 10 || s[1] == 11)
            .cloned()
            .collect();
        assert_eq!(
            masks,
            [vec![44, 11, MODEMSTATE_MASK], vec![44, 10, LINESTATE_MASK]],
            "asked once, at agreement"
        );
    }

    #[tokio::test]
    async fn a_refusal_is_unsupported_and_says_so() {
        let (url, seen) = serve(Server::Refuses).await;
        let mut ctl = open(&url).await;
        let e = ctl.apply_settings(at(9600)).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
        assert!(e.to_string().contains("refused COM-PORT-OPTION"), "{e}");
        let e = ctl.set_break(true).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
        assert_eq!(
            ctl.com_port().unwrap().view().negotiation,
            Negotiation::Refused
        );
        assert!(
            seen.lock().unwrap().is_empty(),
            "no command after a refusal"
        );
    }

    #[tokio::test]
    async fn a_rate_the_server_did_not_take_is_an_error() {
        let (url, _) = serve(Server::Keeps9600).await;
        let mut ctl = open(&url).await;
        ctl.apply_settings(at(9600)).await.unwrap();
        let e = ctl.apply_settings(at(115200)).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        assert!(
            e.to_string()
                .contains("answered SET-BAUDRATE with 9600 baud instead of 115200 baud"),
            "{e}"
        );
        // DTR: the server echoes the code, so it is acknowledged.
        ctl.write_line(ModemLine::Dtr, true).await.unwrap();
        let lines = ctl.modem_status().await.unwrap();
        assert!(lines.dtr && !lines.rts, "{lines:?}");
    }
}
