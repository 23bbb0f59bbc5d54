//! The escape key of the console client: `Ctrl-]` then one key is a
//! command to the client (detach, replay, BREAK, take the write, approve
//! or deny a line waiting for a person...), every
//! other byte is typed to the device. Sans I/O: bytes in, actions out, so
//! that an escape split across reads, or typed bytes around it, are
//! handled the same as in one read (and tested without a terminal).

use crate::console::protocol::MAX_CLIENT_DATA_BYTES;

/// The escape byte, `Ctrl-]` (as telnet and most console clients).
pub(crate) const ESCAPE: u8 = 0x1d;

/// What the person's keys ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Bytes to type to the device (at most
    /// [`MAX_CLIENT_DATA_BYTES`] each).
    Type(Vec<u8>),
    /// `Ctrl-] .`: leave the session.
    Detach,
    /// `Ctrl-] r`: replay the last lines.
    Replay,
    /// `Ctrl-] w`: who is here.
    Who,
    /// `Ctrl-] b`: send BREAK.
    Break,
    /// `Ctrl-] f`: take the write hold from whoever has it.
    Force,
    /// `Ctrl-] s`: give up the write hold and watch.
    Release,
    /// `Ctrl-] a`: take the write hold if it is free.
    Acquire,
    /// `Ctrl-] y`: approve the oldest line waiting for a person's approval.
    Approve,
    /// `Ctrl-] n`: deny the oldest line waiting for a person's approval.
    Deny,
    /// `Ctrl-] ?`: show the escape commands.
    Help,
    /// `Ctrl-]` then a key that is no command: the key, not sent.
    Unknown(u8),
}

/// The escape commands, one per line, as `Ctrl-] ?` shows them.
pub(crate) const HELP: &[&str] = &[
    "Ctrl-] .        detach (leave the session)",
    "Ctrl-] r        replay the last lines",
    "Ctrl-] w        who is here, who holds the write",
    "Ctrl-] b        send BREAK to the device",
    "Ctrl-] a        take the write hold if it is free",
    "Ctrl-] f        take the write hold from whoever has it",
    "Ctrl-] s        give up the write hold and watch",
    "Ctrl-] y        approve the oldest line waiting for approval",
    "Ctrl-] n        deny the oldest line waiting for approval",
    "Ctrl-] Ctrl-]   type one Ctrl-] to the device",
    "Ctrl-] ?        this help",
];

/// Splits typed bytes into device bytes and escape commands; remembers an
/// escape byte that ended a read.
#[derive(Debug, Default)]
pub(crate) struct EscapeMachine {
    /// The last byte seen was the escape byte.
    armed: bool,
}

impl EscapeMachine {
    /// A machine with no escape pending.
    pub(crate) fn new() -> EscapeMachine {
        EscapeMachine::default()
    }

    /// Whether an escape byte waits for its key.
    #[cfg(test)]
    pub(crate) fn is_armed(&self) -> bool {
        self.armed
    }

    /// The actions of `bytes`, in order. Consecutive typed bytes come as
    /// one [`Action::Type`] (split at [`MAX_CLIENT_DATA_BYTES`]).
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<Action> {
        let mut actions = Vec::new();
        let mut typed: Vec<u8> = Vec::new();
        for &byte in bytes {
            if self.armed {
                self.armed = false;
                let command = match byte {
                    ESCAPE => {
                        typed.push(ESCAPE);
                        continue;
                    }
                    b'.' => Action::Detach,
                    b'r' => Action::Replay,
                    b'w' => Action::Who,
                    b'b' => Action::Break,
                    b'f' => Action::Force,
                    b's' => Action::Release,
                    b'a' => Action::Acquire,
                    b'y' => Action::Approve,
                    b'n' => Action::Deny,
                    b'?' => Action::Help,
                    other => Action::Unknown(other),
                };
                flush_typed(&mut typed, &mut actions);
                actions.push(command);
            } else if byte == ESCAPE {
                self.armed = true;
            } else {
                typed.push(byte);
            }
        }
        flush_typed(&mut typed, &mut actions);
        actions
    }
}

/// Moves the typed bytes gathered so far into `actions`, in frames of at
/// most [`MAX_CLIENT_DATA_BYTES`].
fn flush_typed(typed: &mut Vec<u8>, actions: &mut Vec<Action>) {
    for chunk in typed.chunks(MAX_CLIENT_DATA_BYTES) {
        actions.push(Action::Type(chunk.to_vec()));
    }
    typed.clear();
}

/// How a person would name a key: `x`, `Ctrl-X`, `Esc`, `Del`, or its
/// byte in hex.
pub(crate) fn key_name(key: u8) -> String {
    match key {
        b' ' => "Space".to_owned(),
        0x1b => "Esc".to_owned(),
        0x7f => "Del".to_owned(),
        b'\r' => "Enter".to_owned(),
        b'\t' => "Tab".to_owned(),
        0x00 => "Ctrl-@".to_owned(),
        0x01..=0x1a => format!("Ctrl-{}", char::from(b'A' + key - 1)),
        0x1c..=0x1f => format!("Ctrl-{}", char::from(b'\\' + key - 0x1c)),
        k if k.is_ascii_graphic() => char::from(k).to_string(),
        k => format!("\\x{k:02x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(s: &[u8]) -> Action {
        Action::Type(s.to_vec())
    }

    #[test]
    fn plain_bytes_are_typed_in_one_action() {
        let mut m = EscapeMachine::new();
        assert_eq!(m.feed(b"show clock\r"), vec![typed(b"show clock\r")]);
        assert_eq!(m.feed(b""), vec![]);
    }

    #[test]
    fn every_command_key() {
        let cases = [
            (b'.', Action::Detach),
            (b'r', Action::Replay),
            (b'w', Action::Who),
            (b'b', Action::Break),
            (b'f', Action::Force),
            (b's', Action::Release),
            (b'a', Action::Acquire),
            (b'y', Action::Approve),
            (b'n', Action::Deny),
            (b'?', Action::Help),
            (b'x', Action::Unknown(b'x')),
            (0x1b, Action::Unknown(0x1b)),
        ];
        for (key, action) in cases {
            let mut m = EscapeMachine::new();
            assert_eq!(m.feed(&[ESCAPE, key]), vec![action], "key {key:#x}");
            assert!(!m.is_armed());
        }
    }

    #[test]
    fn typed_bytes_around_an_escape_keep_their_order() {
        let mut m = EscapeMachine::new();
        assert_eq!(
            m.feed(b"ab\x1drcd\x1d?e"),
            vec![
                typed(b"ab"),
                Action::Replay,
                typed(b"cd"),
                Action::Help,
                typed(b"e")
            ]
        );
    }

    #[test]
    fn an_escape_split_across_reads_is_one_command() {
        let mut m = EscapeMachine::new();
        assert_eq!(m.feed(b"abc\x1d"), vec![typed(b"abc")]);
        assert!(m.is_armed());
        assert_eq!(m.feed(b"."), vec![Action::Detach]);
        assert!(!m.is_armed());
        // The escape alone in a read, then its key and typed bytes.
        assert_eq!(m.feed(b"\x1d"), vec![]);
        assert_eq!(m.feed(b"wxyz"), vec![Action::Who, typed(b"xyz")]);
    }

    #[test]
    fn a_doubled_escape_types_one_escape_byte() {
        let mut m = EscapeMachine::new();
        assert_eq!(m.feed(b"\x1d\x1d"), vec![typed(&[ESCAPE])]);
        assert!(!m.is_armed());
        // Split, and joined with the bytes around it.
        assert_eq!(m.feed(b"a\x1d"), vec![typed(b"a")]);
        assert_eq!(m.feed(b"\x1db"), vec![typed(b"\x1db")]);
        // Three in a row: one typed, the third arms again.
        assert_eq!(m.feed(b"\x1d\x1d\x1d"), vec![typed(&[ESCAPE])]);
        assert!(m.is_armed());
        assert_eq!(m.feed(b"."), vec![Action::Detach]);
    }

    #[test]
    fn an_unknown_key_is_not_typed() {
        let mut m = EscapeMachine::new();
        assert_eq!(
            m.feed(b"a\x1dzb"),
            vec![typed(b"a"), Action::Unknown(b'z'), typed(b"b")]
        );
    }

    #[test]
    fn a_long_paste_is_split_into_frames_of_the_limit() {
        let mut m = EscapeMachine::new();
        let paste = vec![b'x'; MAX_CLIENT_DATA_BYTES * 2 + 5];
        let actions = m.feed(&paste);
        let lens: Vec<usize> = actions
            .iter()
            .map(|a| match a {
                Action::Type(b) => b.len(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(lens, vec![MAX_CLIENT_DATA_BYTES, MAX_CLIENT_DATA_BYTES, 5]);
    }

    #[test]
    fn every_byte_split_gives_the_same_actions() {
        let input = b"conf t\r\x1dbint g0/1\x1d\x1d\x1dsend\x1dq\x1d.";
        let whole = EscapeMachine::new().feed(input);
        for at in 0..=input.len() {
            let mut m = EscapeMachine::new();
            let mut got = m.feed(&input[..at]);
            got.extend(m.feed(&input[at..]));
            // Typed runs may be cut where the read was: join them.
            assert_eq!(join_typed(got), join_typed(whole.clone()), "split at {at}");
        }
    }

    fn join_typed(actions: Vec<Action>) -> Vec<Action> {
        let mut out: Vec<Action> = Vec::new();
        for a in actions {
            match (out.last_mut(), a) {
                (Some(Action::Type(prev)), Action::Type(more)) => prev.extend(more),
                (_, a) => out.push(a),
            }
        }
        out
    }

    #[test]
    fn keys_are_named_as_a_person_knows_them() {
        assert_eq!(key_name(b'x'), "x");
        assert_eq!(key_name(0x03), "Ctrl-C");
        assert_eq!(key_name(0x1d), "Ctrl-]");
        assert_eq!(key_name(0x1b), "Esc");
        assert_eq!(key_name(0x7f), "Del");
        assert_eq!(key_name(0xc3), "\\xc3");
    }
}
