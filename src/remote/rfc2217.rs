//! RFC 2217 (Telnet Com Port Control Option) as plain values: the client's
//! commands encoded for the wire, the server's answers decoded, and what a
//! connection learned from them. No I/O and no clock, like [`super::telnet`]
//! which carries it: the option is telnet option 44, negotiated with
//! [`Telnet::offer`](super::telnet::Telnet::offer), and its subnegotiations
//! arrive through
//! [`Telnet::take_subnegotiations`](super::telnet::Telnet::take_subnegotiations).
//!
//! The server answers a command with the command's code plus 100 and the
//! value it has now (which may differ from the one asked for), and
//! notifies line and modem state changes (codes 106 and 107) when the
//! masks the client set let it.
//!
//! # Cisco's baud rates
//!
//! Some Cisco access servers answer SET-BAUDRATE with one byte, an index
//! into a table of rates, instead of the four-byte rate, and expect the
//! same from the client. [`CISCO_BAUD_RATES`] is the table gensio (and so
//! ser2net) uses for them; once a server answered that way, [`ComPort`]
//! remembers it and later rates go as an index too.

use schemars::JsonSchema;
use serde::Serialize;

use super::telnet::Telnet;
use crate::settings::{FlowControl, LineSettings, Parity};

/// Telnet option code of COM-PORT-OPTION.
pub const OPT_COM_PORT: u8 = 44;
/// What a server adds to a command code in its answer.
pub const SERVER_OFFSET: u8 = 100;

const SIGNATURE: u8 = 0;
const SET_BAUDRATE: u8 = 1;
const SET_DATASIZE: u8 = 2;
const SET_PARITY: u8 = 3;
const SET_STOPSIZE: u8 = 4;
const SET_CONTROL: u8 = 5;
const NOTIFY_LINESTATE: u8 = 6;
const NOTIFY_MODEMSTATE: u8 = 7;
const FLOWCONTROL_SUSPEND: u8 = 8;
const FLOWCONTROL_RESUME: u8 = 9;
const SET_LINESTATE_MASK: u8 = 10;
const SET_MODEMSTATE_MASK: u8 = 11;
const PURGE_DATA: u8 = 12;

/// Cisco's one-byte baud rates: (index, rate). Gensio's table, which
/// ser2net uses with Cisco clients and servers.
pub const CISCO_BAUD_RATES: [(u8, u32); 11] = [
    (3, 300),
    (4, 600),
    (5, 1200),
    (6, 2400),
    (7, 4800),
    (8, 9600),
    (10, 19200),
    (12, 38400),
    (13, 57600),
    (14, 115200),
    (15, 230400),
];

/// The modem state changes the client asks to hear of: every line and
/// every change (CD, RI, DSR, CTS and their deltas).
pub const MODEMSTATE_MASK: u8 = 0xFF;
/// The line state changes the client asks to hear of: errors and BREAK
/// (not data-ready or the transmit registers, which change all the time).
pub const LINESTATE_MASK: u8 = 0x80 | 0x10 | 0x08 | 0x04 | 0x02;

/// A command of the client to the access server.
// The variants keep RFC 2217's names (SET-BAUDRATE, SET-DATASIZE, …).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// SET-BAUDRATE.
    SetBaud(u32),
    /// SET-DATASIZE: 5 to 8 bits.
    SetDataSize(u8),
    /// SET-PARITY.
    SetParity(Parity),
    /// SET-STOPSIZE: 1 or 2 bits.
    SetStopSize(u8),
    /// SET-CONTROL: outbound flow control.
    SetFlow(FlowControl),
    /// SET-CONTROL: BREAK on or off.
    SetBreak(bool),
    /// SET-CONTROL: DTR on or off.
    SetDtr(bool),
    /// SET-CONTROL: RTS on or off.
    SetRts(bool),
    /// SET-LINESTATE-MASK.
    SetLinestateMask(u8),
    /// SET-MODEMSTATE-MASK.
    SetModemstateMask(u8),
}

/// What a server's answer acknowledges: one setting of the port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The baud rate.
    Baud,
    /// Data bits.
    DataSize,
    /// Parity.
    Parity,
    /// Stop bits.
    StopSize,
    /// Outbound flow control.
    Flow,
    /// The BREAK state.
    Break,
    /// DTR.
    Dtr,
    /// RTS.
    Rts,
    /// The line state mask.
    LinestateMask,
    /// The modem state mask.
    ModemstateMask,
}

const SLOTS: usize = 10;

impl Slot {
    fn index(self) -> usize {
        self as usize
    }

    /// The command's name in RFC 2217, for messages.
    pub fn label(self) -> &'static str {
        match self {
            Slot::Baud => "SET-BAUDRATE",
            Slot::DataSize => "SET-DATASIZE",
            Slot::Parity => "SET-PARITY",
            Slot::StopSize => "SET-STOPSIZE",
            Slot::Flow => "SET-CONTROL (flow control)",
            Slot::Break => "SET-CONTROL (BREAK)",
            Slot::Dtr => "SET-CONTROL (DTR)",
            Slot::Rts => "SET-CONTROL (RTS)",
            Slot::LinestateMask => "SET-LINESTATE-MASK",
            Slot::ModemstateMask => "SET-MODEMSTATE-MASK",
        }
    }
}

fn parity_code(parity: Parity) -> u8 {
    match parity {
        Parity::None => 1,
        Parity::Odd => 2,
        Parity::Even => 3,
    }
}

fn flow_code(flow: FlowControl) -> u8 {
    match flow {
        FlowControl::None => 1,
        FlowControl::Software => 2,
        FlowControl::Hardware => 3,
    }
}

/// Cisco's index of a baud rate, if its table has the rate.
pub fn cisco_index(baud: u32) -> Option<u8> {
    CISCO_BAUD_RATES
        .iter()
        .find(|&&(_, rate)| rate == baud)
        .map(|&(i, _)| i)
}

/// The baud rate of a Cisco index, if its table has the index.
pub fn cisco_rate(index: u8) -> Option<u32> {
    CISCO_BAUD_RATES
        .iter()
        .find(|&&(i, _)| i == index)
        .map(|&(_, rate)| rate)
}

impl Command {
    /// The setting the answer acknowledges, and the value it has when
    /// the server did what was asked (a rate, or the command's code).
    pub fn expects(self) -> (Slot, u32) {
        match self {
            Command::SetBaud(b) => (Slot::Baud, b),
            Command::SetDataSize(n) => (Slot::DataSize, n.into()),
            Command::SetParity(p) => (Slot::Parity, parity_code(p).into()),
            Command::SetStopSize(n) => (Slot::StopSize, n.into()),
            Command::SetFlow(f) => (Slot::Flow, flow_code(f).into()),
            Command::SetBreak(on) => (Slot::Break, if on { 5 } else { 6 }),
            Command::SetDtr(on) => (Slot::Dtr, if on { 8 } else { 9 }),
            Command::SetRts(on) => (Slot::Rts, if on { 11 } else { 12 }),
            Command::SetLinestateMask(m) => (Slot::LinestateMask, m.into()),
            Command::SetModemstateMask(m) => (Slot::ModemstateMask, m.into()),
        }
    }

    /// Appends the command to `out` as it goes on the wire (IAC SB 44 …
    /// IAC SE, IAC in the value doubled). With `cisco`, a rate goes as
    /// Cisco's one-byte index; a rate its table lacks is an error that
    /// names the rates it has.
    pub fn encode(self, cisco: bool, out: &mut Vec<u8>) -> Result<(), String> {
        let payload = match self {
            Command::SetBaud(b) if cisco => {
                let Some(i) = cisco_index(b) else {
                    let rates: Vec<String> = CISCO_BAUD_RATES
                        .iter()
                        .map(|(_, r)| r.to_string())
                        .collect();
                    return Err(format!(
                        "the console server takes Cisco's baud rate indexes, which have no {b}; use one of {}",
                        rates.join(", ")
                    ));
                };
                vec![SET_BAUDRATE, i]
            }
            Command::SetBaud(b) => {
                let mut p = vec![SET_BAUDRATE];
                p.extend_from_slice(&b.to_be_bytes());
                p
            }
            Command::SetDataSize(n) => vec![SET_DATASIZE, n],
            Command::SetParity(p) => vec![SET_PARITY, parity_code(p)],
            Command::SetStopSize(n) => vec![SET_STOPSIZE, n],
            Command::SetLinestateMask(m) => vec![SET_LINESTATE_MASK, m],
            Command::SetModemstateMask(m) => vec![SET_MODEMSTATE_MASK, m],
            // SET-CONTROL's value is the code the answer carries back.
            Command::SetFlow(_)
            | Command::SetBreak(_)
            | Command::SetDtr(_)
            | Command::SetRts(_) => {
                vec![SET_CONTROL, self.expects().1 as u8]
            }
        };
        Telnet::subnegotiation(OPT_COM_PORT, &payload, out);
        Ok(())
    }
}

/// The commands that put a port's line at `line`: rate, framing and flow
/// control, in the order RFC 2217 lists them.
pub fn line_commands(line: &LineSettings) -> [Command; 5] {
    [
        Command::SetBaud(line.baud),
        Command::SetDataSize(line.data_bits),
        Command::SetParity(line.parity),
        Command::SetStopSize(line.stop_bits),
        Command::SetFlow(line.flow_control),
    ]
}

/// An answer or notification of the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The rate now (0: an index Cisco's table lacks); `cisco` when it
    /// came as one byte.
    Baud {
        /// Bits per second.
        rate: u32,
        /// Sent as Cisco's one-byte index.
        cisco: bool,
    },
    /// An answer to a one-byte command (code without the offset, value).
    Value(u8, u8),
    /// NOTIFY-LINESTATE.
    LineState(u8),
    /// NOTIFY-MODEMSTATE.
    ModemState(u8),
    /// The server's signature text.
    Signature(Vec<u8>),
    /// FLOWCONTROL-SUSPEND (`true`) or -RESUME: the server asks us to
    /// stop or resume sending.
    FlowSuspend(bool),
}

/// Decodes one subnegotiation from [`Telnet::take_subnegotiations`]
/// (starting with the option code). `None` for what is not a server's
/// COM-PORT-OPTION message or is too short to be one.
pub fn decode(sub: &[u8]) -> Option<Reply> {
    let (&option, rest) = sub.split_first()?;
    let (&code, value) = rest.split_first()?;
    if option != OPT_COM_PORT || code < SERVER_OFFSET {
        return None;
    }
    let code = code - SERVER_OFFSET;
    let first = value.first().copied();
    Some(match code {
        SIGNATURE => Reply::Signature(value.to_vec()),
        SET_BAUDRATE => match *value {
            [a, b, c, d, ..] => Reply::Baud {
                rate: u32::from_be_bytes([a, b, c, d]),
                cisco: false,
            },
            [i, ..] => Reply::Baud {
                rate: cisco_rate(i).unwrap_or(0),
                cisco: true,
            },
            [] => return None,
        },
        NOTIFY_LINESTATE => Reply::LineState(first?),
        NOTIFY_MODEMSTATE => Reply::ModemState(first?),
        FLOWCONTROL_SUSPEND => Reply::FlowSuspend(true),
        FLOWCONTROL_RESUME => Reply::FlowSuspend(false),
        SET_DATASIZE | SET_PARITY | SET_STOPSIZE | SET_CONTROL | SET_LINESTATE_MASK
        | SET_MODEMSTATE_MASK | PURGE_DATA => Reply::Value(code, first?),
        _ => return None,
    })
}

/// The modem lines an RFC 2217 server last notified (NOTIFY-MODEMSTATE).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RemoteModemState {
    /// Clear To Send.
    pub cts: bool,
    /// Data Set Ready.
    pub dsr: bool,
    /// Ring Indicator.
    pub ri: bool,
    /// Carrier Detect.
    pub cd: bool,
}

impl RemoteModemState {
    /// The lines of a NOTIFY-MODEMSTATE value.
    pub fn from_bits(bits: u8) -> RemoteModemState {
        RemoteModemState {
            cd: bits & 0x80 != 0,
            ri: bits & 0x40 != 0,
            dsr: bits & 0x20 != 0,
            cts: bits & 0x10 != 0,
        }
    }
}

/// The line conditions an RFC 2217 server last notified
/// (NOTIFY-LINESTATE): errors and BREAK seen on the serial line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RemoteLineState {
    /// A BREAK was detected.
    pub break_detected: bool,
    /// Framing error (often: the wrong baud rate).
    pub framing_error: bool,
    /// Parity error.
    pub parity_error: bool,
    /// Overrun: bytes were lost in the server's UART.
    pub overrun_error: bool,
    /// Timeout error.
    pub timeout_error: bool,
}

impl RemoteLineState {
    /// The conditions of a NOTIFY-LINESTATE value.
    pub fn from_bits(bits: u8) -> RemoteLineState {
        RemoteLineState {
            timeout_error: bits & 0x80 != 0,
            break_detected: bits & 0x10 != 0,
            framing_error: bits & 0x08 != 0,
            parity_error: bits & 0x04 != 0,
            overrun_error: bits & 0x02 != 0,
        }
    }
}

/// What one connection learned from the server's COM-PORT-OPTION
/// messages: the last answer per setting (numbered, so a waiter knows an
/// answer came after its command), the notified states and the baud
/// encoding the server uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComPort {
    /// Answers received so far; numbers the answers.
    answers: u64,
    /// Per [`Slot`]: the number of its last answer (0: none yet) and value.
    acks: [(u64, u32); SLOTS],
    /// The server speaks Cisco's one-byte baud rates.
    pub cisco_baud: bool,
    /// The last NOTIFY-MODEMSTATE value.
    pub modem_state: Option<u8>,
    /// The last NOTIFY-LINESTATE value.
    pub line_state: Option<u8>,
    /// The server's signature, if it sent one.
    pub signature: Option<String>,
    /// The server asked us to stop sending (FLOWCONTROL-SUSPEND).
    pub suspended: bool,
}

impl ComPort {
    /// Records one reply of the server.
    pub fn receive(&mut self, reply: Reply) {
        let ack = match reply {
            Reply::Baud { rate, cisco } => {
                self.cisco_baud = cisco;
                Some((Slot::Baud, rate))
            }
            Reply::Value(SET_DATASIZE, v) => Some((Slot::DataSize, v.into())),
            Reply::Value(SET_PARITY, v) => Some((Slot::Parity, v.into())),
            Reply::Value(SET_STOPSIZE, v) => Some((Slot::StopSize, v.into())),
            Reply::Value(SET_CONTROL, v) => match v {
                0..=3 => Some((Slot::Flow, v.into())),
                4..=6 => Some((Slot::Break, v.into())),
                7..=9 => Some((Slot::Dtr, v.into())),
                10..=12 => Some((Slot::Rts, v.into())),
                _ => None, // inbound flow control: not asked for
            },
            Reply::Value(SET_LINESTATE_MASK, v) => Some((Slot::LinestateMask, v.into())),
            Reply::Value(SET_MODEMSTATE_MASK, v) => Some((Slot::ModemstateMask, v.into())),
            Reply::Value(..) => None,
            Reply::LineState(v) => {
                self.line_state = Some(v);
                None
            }
            Reply::ModemState(v) => {
                self.modem_state = Some(v);
                None
            }
            Reply::Signature(text) => {
                self.signature = Some(String::from_utf8_lossy(&text).into_owned());
                None
            }
            Reply::FlowSuspend(on) => {
                self.suspended = on;
                None
            }
        };
        if let Some((slot, value)) = ack {
            self.answers += 1;
            self.acks[slot.index()] = (self.answers, value);
        }
    }

    /// Decodes and records every COM-PORT-OPTION subnegotiation in `subs`.
    pub fn receive_all(&mut self, subs: impl IntoIterator<Item = Vec<u8>>) {
        for sub in subs {
            if let Some(reply) = decode(&sub) {
                self.receive(reply);
            }
        }
    }

    /// How many answers came so far: an answer numbered above this came
    /// after now.
    pub fn answers(&self) -> u64 {
        self.answers
    }

    /// The last answer for `slot`: its number (0: none yet) and value.
    pub fn ack(&self, slot: Slot) -> (u64, u32) {
        self.acks[slot.index()]
    }

    /// DTR as the server last acknowledged it (`None`: never set).
    pub fn dtr(&self) -> Option<bool> {
        match self.ack(Slot::Dtr) {
            (0, _) => None,
            (_, v) => Some(v == 8),
        }
    }

    /// RTS as the server last acknowledged it (`None`: never set).
    pub fn rts(&self) -> Option<bool> {
        match self.ack(Slot::Rts) {
            (0, _) => None,
            (_, v) => Some(v == 11),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::telnet::{DO, IAC, SB, SE, WILL};

    fn sub(payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        Telnet::subnegotiation(OPT_COM_PORT, payload, &mut out);
        out
    }

    #[test]
    fn commands_encode_as_rfc2217_says() {
        let enc = |c: Command, cisco| {
            let mut out = Vec::new();
            c.encode(cisco, &mut out).map(|()| out)
        };
        assert_eq!(
            enc(Command::SetBaud(9600), false).unwrap(),
            [IAC, SB, 44, 1, 0, 0, 0x25, 0x80, IAC, SE]
        );
        assert_eq!(
            enc(Command::SetBaud(9600), true).unwrap(),
            [IAC, SB, 44, 1, 8, IAC, SE]
        );
        let e = enc(Command::SetBaud(14400), true).unwrap_err();
        assert!(e.contains("no 14400") && e.contains("115200"), "{e}");
        // A rate with 0xFF in it: IAC doubled inside the subnegotiation.
        assert_eq!(
            enc(Command::SetBaud(0x0001_FFFF), false).unwrap(),
            [IAC, SB, 44, 1, 0, 1, IAC, IAC, IAC, IAC, IAC, SE]
        );
        assert_eq!(
            enc(Command::SetDataSize(7), false).unwrap(),
            [IAC, SB, 44, 2, 7, IAC, SE]
        );
        assert_eq!(
            enc(Command::SetParity(Parity::Even), false).unwrap(),
            [IAC, SB, 44, 3, 3, IAC, SE]
        );
        assert_eq!(
            enc(Command::SetStopSize(2), false).unwrap(),
            [IAC, SB, 44, 4, 2, IAC, SE]
        );
        for (c, code) in [
            (Command::SetFlow(FlowControl::None), 1),
            (Command::SetFlow(FlowControl::Software), 2),
            (Command::SetFlow(FlowControl::Hardware), 3),
            (Command::SetBreak(true), 5),
            (Command::SetBreak(false), 6),
            (Command::SetDtr(true), 8),
            (Command::SetDtr(false), 9),
            (Command::SetRts(true), 11),
            (Command::SetRts(false), 12),
        ] {
            assert_eq!(enc(c, false).unwrap(), [IAC, SB, 44, 5, code, IAC, SE]);
        }
        assert_eq!(
            enc(Command::SetModemstateMask(0xFF), false).unwrap(),
            [IAC, SB, 44, 11, IAC, IAC, IAC, SE]
        );
        assert_eq!(
            enc(Command::SetLinestateMask(LINESTATE_MASK), false).unwrap(),
            [IAC, SB, 44, 10, 0x9E, IAC, SE]
        );
    }

    #[test]
    fn cisco_table_round_trips() {
        for (i, rate) in CISCO_BAUD_RATES {
            assert_eq!(cisco_index(rate), Some(i));
            assert_eq!(cisco_rate(i), Some(rate));
        }
        assert_eq!(cisco_index(9600), Some(8));
        assert_eq!(cisco_index(115200), Some(14));
        assert_eq!(cisco_rate(9), None);
    }

    /// A server's side of a session: it agrees, answers a line setup (one
    /// rate with 0xFF bytes in it), notifies modem and line state, and
    /// prints console output around it all, 0xFF included.
    fn stream() -> Vec<u8> {
        let mut s = vec![IAC, WILL, 1, IAC, DO, OPT_COM_PORT];
        s.extend_from_slice(b"\r\nSW1>");
        s.extend(sub(&[101, 0, 1, 0xFF, 0xFF]));
        s.extend(sub(&[102, 8]));
        s.extend(sub(&[103, 1]));
        s.extend(b"x\xff\xffy");
        s.extend(sub(&[104, 1]));
        s.extend(sub(&[105, 1]));
        s.extend(sub(&[107, 0xB0]));
        s.extend(sub(&[106, 0x08]));
        s.extend(sub(&[105, 8]));
        s.extend(sub(b"\x64ser2net"));
        s.extend(sub(&[108]));
        s.extend_from_slice(b"\r\nSW1#");
        s
    }

    fn decode_stream(chunks: &[&[u8]]) -> (Vec<u8>, Vec<u8>, ComPort) {
        let mut t = Telnet::new();
        let mut offer = Vec::new();
        t.offer(OPT_COM_PORT, &mut offer);
        assert_eq!(offer, [IAC, WILL, OPT_COM_PORT]);
        let (mut data, mut replies, mut com) = (Vec::new(), Vec::new(), ComPort::default());
        for c in chunks {
            t.receive(c, &mut data, &mut replies);
            com.receive_all(t.take_subnegotiations());
        }
        assert!(t.local_enabled(OPT_COM_PORT), "agreed");
        (data, replies, com)
    }

    fn expected() -> ComPort {
        let mut com = ComPort::default();
        for reply in [
            Reply::Baud {
                rate: 0x0001_FFFF,
                cisco: false,
            },
            Reply::Value(SET_DATASIZE, 8),
            Reply::Value(SET_PARITY, 1),
            Reply::Value(SET_STOPSIZE, 1),
            Reply::Value(SET_CONTROL, 1),
            Reply::ModemState(0xB0),
            Reply::LineState(0x08),
            Reply::Value(SET_CONTROL, 8),
            Reply::Signature(b"ser2net".to_vec()),
            Reply::FlowSuspend(true),
        ] {
            com.receive(reply);
        }
        com
    }

    #[test]
    fn a_server_session_decodes_the_same_at_every_split() {
        let s = stream();
        let want_data = b"\r\nSW1>x\xffy\r\nSW1#".to_vec();
        let want_replies = vec![IAC, DO, 1];
        let (data, replies, com) = decode_stream(&[&s]);
        assert_eq!((data, replies), (want_data.clone(), want_replies.clone()));
        assert_eq!(com, expected());
        assert_eq!(com.ack(Slot::Baud).1, 0x0001_FFFF);
        assert_eq!(com.ack(Slot::Parity), (3, 1));
        assert_eq!(com.dtr(), Some(true));
        assert_eq!(com.rts(), None);
        assert_eq!(com.signature.as_deref(), Some("ser2net"));
        assert!(com.suspended);
        assert_eq!(
            RemoteModemState::from_bits(com.modem_state.unwrap()),
            RemoteModemState {
                cts: true,
                dsr: true,
                ri: false,
                cd: true
            }
        );
        assert!(RemoteLineState::from_bits(com.line_state.unwrap()).framing_error);
        for at in 0..=s.len() {
            let got = decode_stream(&[&s[..at], &s[at..]]);
            assert_eq!(
                got,
                (want_data.clone(), want_replies.clone(), expected()),
                "split at {at}"
            );
        }
        for a in 0..=s.len() {
            for b in a..=s.len() {
                let got = decode_stream(&[&s[..a], &s[a..b], &s[b..]]);
                assert_eq!(
                    got,
                    (want_data.clone(), want_replies.clone(), expected()),
                    "split at {a} and {b}"
                );
            }
        }
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(decode_stream(&bytes), (want_data, want_replies, expected()));
    }

    #[test]
    fn a_one_byte_baud_answer_is_ciscos_index() {
        let mut com = ComPort::default();
        com.receive_all([vec![44, 101, 8]]);
        assert!(com.cisco_baud);
        assert_eq!(com.ack(Slot::Baud), (1, 9600));
        com.receive_all([vec![44, 101, 14]]);
        assert_eq!(com.ack(Slot::Baud), (2, 115200));
        com.receive_all([vec![44, 101, 99]]);
        assert_eq!(com.ack(Slot::Baud), (3, 0), "an index the table lacks");
        com.receive_all([vec![44, 101, 0, 1, 0xC2, 0]]);
        assert_eq!(com.ack(Slot::Baud), (4, 115200));
        assert!(!com.cisco_baud, "a four-byte answer again");
    }

    #[test]
    fn what_is_not_a_server_message_is_ignored() {
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[44]), None);
        assert_eq!(decode(&[44, 1, 0, 0, 0x25, 0x80]), None, "a client command");
        assert_eq!(decode(&[24, 101, 8]), None, "another option");
        assert_eq!(decode(&[44, 102]), None, "no value");
        assert_eq!(decode(&[44, 101]), None, "no rate");
        assert_eq!(decode(&[44, 150, 1]), None, "unknown code");
        let mut com = ComPort::default();
        com.receive_all([vec![44, 105, 15]]);
        assert_eq!(com.answers(), 0, "inbound flow control is not tracked");
    }

    #[test]
    fn expectations_match_what_the_answers_record() {
        let line = LineSettings {
            baud: 115200,
            data_bits: 7,
            parity: Parity::Even,
            stop_bits: 2,
            flow_control: FlowControl::Hardware,
        };
        let mut com = ComPort::default();
        for c in line_commands(&line) {
            let (slot, value) = c.expects();
            // A server that does what it is told answers with the value.
            let mut wire = Vec::new();
            c.encode(false, &mut wire).unwrap();
            let payload = &wire[3..wire.len() - 2];
            let mut answer = vec![44, payload[0] + SERVER_OFFSET];
            answer.extend_from_slice(&payload[1..]);
            com.receive_all([answer]);
            assert_eq!(com.ack(slot).1, value, "{c:?}");
        }
        assert_eq!(com.answers(), 5);
    }
}
