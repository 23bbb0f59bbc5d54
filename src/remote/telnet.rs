//! Telnet (RFC 854/855) as a pure, synchronous state machine: no I/O, no
//! clock, so every chunking of a byte stream can be tested.
//!
//! [`Telnet::receive`] turns bytes from the network into data bytes (for
//! the OutputLog) and replies to send back (option negotiation);
//! [`Telnet::encode`] turns data to send into bytes for the network (IAC
//! doubled, a lone CR sent as CR NUL unless BINARY is on).
//!
//! # Option negotiation
//!
//! The client answers the server: WILL ECHO, WILL SGA and WILL BINARY are
//! accepted (DO), DO SGA and DO BINARY are accepted (WILL), anything else
//! is refused (DONT/WONT). It asks for an option of its own only when told
//! to ([`Telnet::offer`], for RFC 2217's COM-PORT-OPTION): the server's DO
//! or DONT is then the answer and is not answered again. Like RFC 1143's Q
//! method: a request for the state an option is already in is not
//! answered, so two peers never loop.
//!
//! Subnegotiations (IAC SB … IAC SE) never reach the data; those of an
//! offered option are kept, unescaped, for [`Telnet::take_subnegotiations`].

/// Interpret As Command.
pub const IAC: u8 = 255;
/// Refuse, or ask the peer to stop, an option on its side.
pub const DONT: u8 = 254;
/// Ask the peer to use an option on its side.
pub const DO: u8 = 253;
/// Refuse, or stop, an option on our side.
pub const WONT: u8 = 252;
/// Offer an option on our side.
pub const WILL: u8 = 251;
/// Subnegotiation begins.
pub const SB: u8 = 250;
/// Subnegotiation ends.
pub const SE: u8 = 240;
/// The BREAK command.
pub const BRK: u8 = 243;
/// Option: binary transmission (RFC 856).
pub const OPT_BINARY: u8 = 0;
/// Option: echo (RFC 857).
pub const OPT_ECHO: u8 = 1;
/// Option: suppress go-ahead (RFC 858).
pub const OPT_SGA: u8 = 3;
/// Longest subnegotiation kept: a longer one is a broken or hostile peer
/// and is dropped whole rather than grown without bound.
pub const MAX_SUBNEGOTIATION: usize = 256;

const CR: u8 = b'\r';
const LF: u8 = b'\n';
const NUL: u8 = 0;

/// Where the parser is between two bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parse {
    /// Plain data.
    Data,
    /// Data, just after a CR (a NUL that follows is padding).
    Cr,
    /// After IAC.
    Iac,
    /// After IAC and a negotiation verb (WILL/WONT/DO/DONT).
    Verb(u8),
    /// Inside a subnegotiation.
    Sb,
    /// Inside a subnegotiation, after IAC.
    SbIac,
}

/// One telnet connection's protocol state (client side).
#[derive(Debug, Clone)]
pub struct Telnet {
    parse: Parse,
    /// Options enabled on our side (we WILL), by option code.
    us: [bool; 256],
    /// Options enabled on the server's side (it WILL), by option code.
    him: [bool; 256],
    /// Options we offered to enable on our side (accepted when asked).
    offered: [bool; 256],
    /// Options whose WILL we sent and the server has not answered yet.
    asked: [bool; 256],
    /// The subnegotiation being read (option code first), unescaped;
    /// `None` once it outgrew [`MAX_SUBNEGOTIATION`].
    sb: Option<Vec<u8>>,
    /// Complete subnegotiations of offered options, not yet taken.
    subnegotiations: Vec<Vec<u8>>,
}

impl Default for Telnet {
    fn default() -> Self {
        Telnet::new()
    }
}

impl Telnet {
    /// A connection just opened: every option off.
    pub fn new() -> Telnet {
        Telnet {
            parse: Parse::Data,
            us: [false; 256],
            him: [false; 256],
            offered: [false; 256],
            asked: [false; 256],
            sb: Some(Vec::new()),
            subnegotiations: Vec::new(),
        }
    }

    /// Offers `option` on our side: appends IAC WILL `option` to `out`
    /// (unless it is on or already asked) and accepts the server's DO of
    /// it from now on. The server's DO or DONT that answers is not
    /// answered again.
    pub fn offer(&mut self, option: u8, out: &mut Vec<u8>) {
        let i = usize::from(option);
        self.offered[i] = true;
        if !self.us[i] && !self.asked[i] {
            self.asked[i] = true;
            out.extend_from_slice(&[IAC, WILL, option]);
        }
    }

    /// Whether our offer of `option` still waits for the server's answer.
    pub fn local_pending(&self, option: u8) -> bool {
        self.asked[usize::from(option)]
    }

    /// The subnegotiations of offered options received since the last
    /// call, each unescaped (IAC IAC as one 0xFF) and starting with the
    /// option code, without IAC SB and IAC SE.
    pub fn take_subnegotiations(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.subnegotiations)
    }

    /// Appends a subnegotiation to `out` as it goes on the wire:
    /// IAC SB `option` `payload` IAC SE, with every IAC in the payload
    /// doubled.
    pub fn subnegotiation(option: u8, payload: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(&[IAC, SB, option]);
        if option == IAC {
            out.push(IAC);
        }
        for &byte in payload {
            out.push(byte);
            if byte == IAC {
                out.push(IAC);
            }
        }
        out.extend_from_slice(&[IAC, SE]);
    }

    fn sb_push(&mut self, byte: u8) {
        if let Some(sb) = &mut self.sb {
            if sb.len() < MAX_SUBNEGOTIATION {
                sb.push(byte);
            } else {
                self.sb = None;
            }
        }
    }

    fn sb_end(&mut self) {
        let sb = self.sb.replace(Vec::new());
        if let Some(sb) = sb
            && sb.first().is_some_and(|&o| self.offered[usize::from(o)])
        {
            self.subnegotiations.push(sb);
        }
    }

    /// Whether the option is enabled on our side.
    pub fn local_enabled(&self, option: u8) -> bool {
        self.us[usize::from(option)]
    }

    /// Whether the option is enabled on the server's side.
    pub fn remote_enabled(&self, option: u8) -> bool {
        self.him[usize::from(option)]
    }

    /// Consumes bytes from the network: appends the data bytes to `data`
    /// and the negotiation replies to `replies`. Commands, negotiation and
    /// subnegotiation never reach `data`; the state carries over between
    /// calls, so a stream split anywhere decodes the same.
    pub fn receive(&mut self, input: &[u8], data: &mut Vec<u8>, replies: &mut Vec<u8>) {
        for &byte in input {
            self.parse = match self.parse {
                Parse::Data | Parse::Cr => {
                    let after_cr = self.parse == Parse::Cr;
                    match byte {
                        IAC => Parse::Iac,
                        // CR NUL is a bare CR (unless the server sends binary).
                        NUL if after_cr && !self.remote_enabled(OPT_BINARY) => Parse::Data,
                        CR => {
                            data.push(CR);
                            Parse::Cr
                        }
                        _ => {
                            data.push(byte);
                            Parse::Data
                        }
                    }
                }
                Parse::Iac => match byte {
                    IAC => {
                        data.push(IAC);
                        Parse::Data
                    }
                    WILL | WONT | DO | DONT => Parse::Verb(byte),
                    SB => {
                        self.sb = Some(Vec::new());
                        Parse::Sb
                    }
                    // NOP, GA, DM, AYT and the like: nothing for the log.
                    _ => Parse::Data,
                },
                Parse::Verb(verb) => {
                    self.negotiate(verb, byte, replies);
                    Parse::Data
                }
                Parse::Sb => match byte {
                    IAC => Parse::SbIac,
                    _ => {
                        self.sb_push(byte);
                        Parse::Sb
                    }
                },
                Parse::SbIac => match byte {
                    SE => {
                        self.sb_end();
                        Parse::Data
                    }
                    // IAC IAC is a 0xFF inside the subnegotiation.
                    IAC => {
                        self.sb_push(IAC);
                        Parse::Sb
                    }
                    // Anything else after IAC is a broken peer: skipped.
                    _ => Parse::Sb,
                },
            };
        }
    }

    /// Answers one request of the server (see the module docs).
    fn negotiate(&mut self, verb: u8, option: u8, replies: &mut Vec<u8>) {
        let i = usize::from(option);
        match verb {
            WILL if !self.him[i] => {
                let accept = matches!(option, OPT_ECHO | OPT_SGA | OPT_BINARY);
                self.him[i] = accept;
                replies.extend_from_slice(&[IAC, if accept { DO } else { DONT }, option]);
            }
            WONT if self.him[i] => {
                self.him[i] = false;
                replies.extend_from_slice(&[IAC, DONT, option]);
            }
            // The answer to our own WILL: agreed, nothing to answer.
            DO if !self.us[i] && self.asked[i] => {
                self.asked[i] = false;
                self.us[i] = true;
            }
            DO if !self.us[i] => {
                let accept = matches!(option, OPT_SGA | OPT_BINARY) || self.offered[i];
                self.us[i] = accept;
                replies.extend_from_slice(&[IAC, if accept { WILL } else { WONT }, option]);
            }
            // Our WILL refused: it stays off, nothing to answer.
            DONT if self.asked[i] => {
                self.asked[i] = false;
            }
            DONT if self.us[i] => {
                self.us[i] = false;
                replies.extend_from_slice(&[IAC, WONT, option]);
            }
            // A request for the state the option is already in: no answer.
            _ => {}
        }
    }

    /// Appends `data` to `out` as it goes on the wire: IAC doubled, and,
    /// unless we send binary, a CR not followed by LF sent as CR NUL.
    pub fn encode(&self, data: &[u8], out: &mut Vec<u8>) {
        let binary = self.local_enabled(OPT_BINARY);
        out.reserve(data.len() + data.len() / 16 + 1);
        for (i, &byte) in data.iter().enumerate() {
            out.push(byte);
            match byte {
                IAC => out.push(IAC),
                CR if !binary && data.get(i + 1) != Some(&LF) => out.push(NUL),
                _ => {}
            }
        }
    }

    /// The BREAK command (IAC BRK).
    pub fn brk() -> [u8; 2] {
        [IAC, BRK]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(t: &mut Telnet, chunks: &[&[u8]]) -> (Vec<u8>, Vec<u8>) {
        let (mut data, mut replies) = (Vec::new(), Vec::new());
        for c in chunks {
            t.receive(c, &mut data, &mut replies);
        }
        (data, replies)
    }

    /// A server's opening and some console output with every construct.
    fn stream() -> Vec<u8> {
        let mut s = Vec::new();
        s.extend_from_slice(&[IAC, WILL, OPT_ECHO, IAC, WILL, OPT_SGA, IAC, DO, 24]);
        s.extend_from_slice(b"\r\nUser Access Verification\r\n");
        s.extend_from_slice(&[IAC, SB, 24, 1, IAC, IAC, 7, IAC, SE]);
        s.extend_from_slice(b"0xFF:");
        s.extend_from_slice(&[IAC, IAC]);
        s.extend_from_slice(b" bare CR\r\0next");
        s.extend_from_slice(&[IAC, 241, IAC, 249]); // NOP, GA
        s.extend_from_slice(&[IAC, WILL, OPT_ECHO]); // already on: no answer
        s.extend_from_slice(&[IAC, DO, OPT_SGA, IAC, DO, 31, IAC, WILL, 200]);
        s.extend_from_slice(b"\r\nSW1>");
        s
    }

    fn expected() -> (Vec<u8>, Vec<u8>) {
        let mut data = b"\r\nUser Access Verification\r\n0xFF:".to_vec();
        data.push(0xFF);
        data.extend_from_slice(b" bare CR\rnext\r\nSW1>");
        let replies = vec![
            IAC, DO, OPT_ECHO, IAC, DO, OPT_SGA, IAC, WONT, 24, IAC, WILL, OPT_SGA, IAC, WONT, 31,
            IAC, DONT, 200,
        ];
        (data, replies)
    }

    #[test]
    fn whole_stream_gives_data_and_replies() {
        let mut t = Telnet::new();
        assert_eq!(run(&mut t, &[&stream()]), expected());
        assert!(t.remote_enabled(OPT_ECHO) && t.remote_enabled(OPT_SGA));
        assert!(t.local_enabled(OPT_SGA) && !t.local_enabled(31));
    }

    #[test]
    fn every_split_and_byte_by_byte_decode_the_same() {
        let s = stream();
        for at in 0..=s.len() {
            let mut t = Telnet::new();
            assert_eq!(
                run(&mut t, &[&s[..at], &s[at..]]),
                expected(),
                "split at {at}"
            );
        }
        for a in 0..=s.len() {
            for b in a..=s.len() {
                let mut t = Telnet::new();
                let got = run(&mut t, &[&s[..a], &s[a..b], &s[b..]]);
                assert_eq!(got, expected(), "split at {a} and {b}");
            }
        }
        let mut t = Telnet::new();
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(run(&mut t, &bytes), expected());
    }

    #[test]
    fn negotiation_never_loops() {
        let mut t = Telnet::new();
        let (_, r) = run(&mut t, &[&[IAC, WILL, OPT_ECHO]]);
        assert_eq!(r, [IAC, DO, OPT_ECHO]);
        // The server confirms again: silence.
        assert_eq!(run(&mut t, &[&[IAC, WILL, OPT_ECHO]]).1, Vec::<u8>::new());
        // It turns echo off: acknowledged once.
        assert_eq!(
            run(&mut t, &[&[IAC, WONT, OPT_ECHO]]).1,
            [IAC, DONT, OPT_ECHO]
        );
        assert_eq!(run(&mut t, &[&[IAC, WONT, OPT_ECHO]]).1, Vec::<u8>::new());
        assert_eq!(run(&mut t, &[&[IAC, DONT, OPT_BINARY]]).1, Vec::<u8>::new());
        assert_eq!(
            run(&mut t, &[&[IAC, DO, OPT_BINARY]]).1,
            [IAC, WILL, OPT_BINARY]
        );
        assert_eq!(run(&mut t, &[&[IAC, DO, OPT_BINARY]]).1, Vec::<u8>::new());
        assert_eq!(
            run(&mut t, &[&[IAC, DONT, OPT_BINARY]]).1,
            [IAC, WONT, OPT_BINARY]
        );
    }

    #[test]
    fn encoding_doubles_iac_and_pads_a_bare_cr() {
        let mut t = Telnet::new();
        let mut out = Vec::new();
        t.encode(b"a\xffb\r\nc\rd\r", &mut out);
        assert_eq!(out, b"a\xff\xffb\r\nc\r\0d\r\0");
        // Binary on our side: CR goes as it is, IAC is still doubled.
        run(&mut t, &[&[IAC, DO, OPT_BINARY]]);
        out.clear();
        t.encode(b"\xff\rx", &mut out);
        assert_eq!(out, b"\xff\xff\rx");
        assert_eq!(Telnet::brk(), [IAC, BRK]);
    }

    #[test]
    fn binary_from_the_server_keeps_nul_after_cr() {
        let mut t = Telnet::new();
        let (data, _) = run(&mut t, &[&[IAC, WILL, OPT_BINARY], b"\r\0x"]);
        assert_eq!(data, b"\r\0x");
    }

    #[test]
    fn encode_then_decode_round_trips_any_bytes() {
        let payload: Vec<u8> = (0..=255u8).chain([b'\r', b'\r', 0, 0xFF, 0xFF]).collect();
        let (mut wire, mut data, mut replies) = (Vec::new(), Vec::new(), Vec::new());
        Telnet::new().encode(&payload, &mut wire);
        // A CR NUL decodes as CR: the peer of a non-binary sender loses
        // only NULs that follow a CR, which the encoder itself added.
        Telnet::new().receive(&wire, &mut data, &mut replies);
        assert_eq!(data, payload);
        assert!(replies.is_empty());
    }

    #[test]
    fn an_offer_is_answered_once_and_not_answered_back() {
        let mut t = Telnet::new();
        let mut out = Vec::new();
        t.offer(44, &mut out);
        assert_eq!(out, [IAC, WILL, 44]);
        assert!(t.local_pending(44) && !t.local_enabled(44));
        t.offer(44, &mut out);
        assert_eq!(out.len(), 3, "asked once");
        assert_eq!(run(&mut t, &[&[IAC, DO, 44]]).1, Vec::<u8>::new());
        assert!(t.local_enabled(44) && !t.local_pending(44));
        // Refused: off, and no answer to the refusal.
        let mut t = Telnet::new();
        t.offer(44, &mut out);
        assert_eq!(run(&mut t, &[&[IAC, DONT, 44]]).1, Vec::<u8>::new());
        assert!(!t.local_enabled(44) && !t.local_pending(44));
        // Once agreed, turned off and asked again: answered like any option.
        let mut t = Telnet::new();
        t.offer(44, &mut Vec::new());
        run(&mut t, &[&[IAC, DO, 44]]);
        assert_eq!(run(&mut t, &[&[IAC, DONT, 44]]).1, [IAC, WONT, 44]);
        assert_eq!(run(&mut t, &[&[IAC, DO, 44]]).1, [IAC, WILL, 44]);
    }

    #[test]
    fn subnegotiations_of_offered_options_are_kept_unescaped() {
        let mut t = Telnet::new();
        t.offer(44, &mut Vec::new());
        let mut s = vec![IAC, DO, 44, b'a'];
        s.extend_from_slice(&[IAC, SB, 44, 101, 0, 0, IAC, IAC, 0, IAC, SE]);
        s.extend_from_slice(&[IAC, SB, 24, 1, IAC, SE, b'b']);
        let (data, _) = run(&mut t, &[&s]);
        assert_eq!(data, b"ab");
        assert_eq!(t.take_subnegotiations(), vec![vec![44, 101, 0, 0, 0xFF, 0]]);
        assert!(t.take_subnegotiations().is_empty());
        // Too long: dropped whole, the stream goes on.
        let mut long = vec![IAC, SB, 44];
        long.extend(std::iter::repeat_n(7, MAX_SUBNEGOTIATION + 10));
        long.extend_from_slice(&[IAC, SE, b'c']);
        assert_eq!(run(&mut t, &[&long]).0, b"c");
        assert!(t.take_subnegotiations().is_empty());
    }

    #[test]
    fn subnegotiation_encoding_doubles_iac() {
        let mut out = Vec::new();
        Telnet::subnegotiation(44, &[1, 0, 0, 0xFF, 0xFF], &mut out);
        assert_eq!(out, [IAC, SB, 44, 1, 0, 0, IAC, IAC, IAC, IAC, IAC, SE]);
    }
}
