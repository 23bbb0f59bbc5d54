//! Keeping a port's stored secrets out of its output: every occurrence of
//! the password or enable secret in what the device sends (an echo, a
//! `show running-config` with a clear-text password) is overwritten with
//! `*` before it reaches the OutputLog, so no read, transcript, watcher or
//! resource can carry it. The length stays, so offsets mean the same.
//!
//! A secret may arrive split across reads, with a pause of any length
//! between them (a console server behind Nagle and delayed ACKs). What is
//! held back to judge it whole is decided by what the *line* says, never by
//! the secrets themselves: a value that follows a word naming a secret
//! (`password`, `secret`, `key`, `community`, …, as in
//! `enable secret 0 Pw-46c4`, `username admin password 7 …`, `PASSWORD=…`)
//! is held from its first byte until it ends (a space, a quote, the end of
//! the line) or [`MASK_HOLD`] passes with nothing more; one optional type
//! number before it (`0`, `7`) is held with it. Everything else is released
//! as it arrives. What is released has every whole stored secret in it
//! starred out.
//!
//! So a caller who types guesses into a device that echoes learns nothing
//! from when the echo comes back: a right beginning and a wrong one are
//! held or released alike. It learns only whether a *whole* guess was right
//! (it comes back starred), as the device's own login prompt would tell it.

use std::time::Duration;

use aho_corasick::{AhoCorasick, MatchKind};

/// How long a held value is kept when no more output follows: the longest
/// pause inside a value that still keeps it whole. Only a line that names a
/// secret and stops in the middle of its value waits this long.
pub const MASK_HOLD: Duration = Duration::from_secs(5);
/// What a secret's bytes become.
pub const MASK_BYTE: u8 = b'*';

/// Words whose value is a secret, lower case, matched at the end of a word
/// (`authentication-key`, `ENABLE_PASSWORD` too).
const SECRET_NAMES: &[&[u8]] = &[
    b"password",
    b"passwd",
    b"passphrase",
    b"secret",
    b"key",
    b"key-string",
    b"community",
    b"psk",
];
/// The end of the current word kept to compare with [`SECRET_NAMES`].
const WORD_TAIL: usize = 16;
/// A value longer than this is released without its end (it is no
/// credential); bounds what one line can hold back.
const MAX_VALUE: usize = 4096;

/// Where the scanner is in the current line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// Ordinary text: nothing held.
    Text,
    /// After a word naming a secret, in the separators before its value.
    /// `typed`: a type number came already, and is held.
    Named { typed: bool },
    /// Inside the value (held from its first byte).
    Value {
        typed: bool,
        digits_only: bool,
        len: usize,
    },
}

/// The masking state of one open device.
pub struct SecretMask {
    finder: AhoCorasick,
    scan: Scan,
    /// The end of the current word, lower case.
    word: Vec<u8>,
    held: Vec<u8>,
}

impl SecretMask {
    /// A mask for `secrets`; `None` when there are none (or the automaton
    /// cannot be built, which empty input alone would cause).
    pub fn new(secrets: &[&[u8]]) -> Option<SecretMask> {
        let secrets: Vec<&[u8]> = secrets.iter().copied().filter(|s| !s.is_empty()).collect();
        if secrets.is_empty() {
            return None;
        }
        let finder = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&secrets)
            .ok()?;
        Some(SecretMask {
            finder,
            scan: Scan::Text,
            word: Vec::with_capacity(WORD_TAIL),
            held: Vec::new(),
        })
    }

    /// Masks `data`, which follows whatever was held back; returns what
    /// may be appended now and holds back a value still being written.
    pub fn feed(&mut self, data: &[u8]) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.held);
        // A value that was released by the quiet timer goes on being held.
        let mut hold_from = self.in_hold().then_some(0);
        for &byte in data {
            out.push(byte);
            let at = out.len() - 1;
            if self.step(byte) {
                hold_from.get_or_insert(at);
            } else {
                hold_from = None;
            }
        }
        let release_to = hold_from.unwrap_or(out.len());
        self.held = out.split_off(release_to);
        self.mask(&mut out);
        out
    }

    /// Releases what is held back (no more output came), masked.
    pub fn flush(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.held);
        self.mask(&mut out);
        out
    }

    /// Whether a value is held back.
    pub fn holding(&self) -> bool {
        !self.held.is_empty()
    }

    /// Whether the scanner is inside something it holds.
    fn in_hold(&self) -> bool {
        matches!(self.scan, Scan::Value { .. } | Scan::Named { typed: true })
    }

    /// Moves the scanner over one byte; whether that byte is held.
    fn step(&mut self, byte: u8) -> bool {
        let line_end = byte == b'\r' || byte == b'\n';
        let separator = matches!(byte, b' ' | b'\t' | b':' | b'=' | b'"' | b'\'');
        if line_end {
            self.scan = Scan::Text;
            self.word.clear();
            return false;
        }
        match self.scan {
            Scan::Text => {
                if separator {
                    if self.word_names_a_secret() {
                        self.scan = Scan::Named { typed: false };
                    }
                    self.word.clear();
                } else {
                    if self.word.len() == WORD_TAIL {
                        self.word.remove(0);
                    }
                    self.word.push(byte.to_ascii_lowercase());
                }
                false
            }
            Scan::Named { typed } => {
                if !separator {
                    self.scan = Scan::Value {
                        typed,
                        digits_only: byte.is_ascii_digit(),
                        len: 1,
                    };
                    return true;
                }
                typed
            }
            Scan::Value {
                typed,
                digits_only,
                len,
            } => {
                if separator {
                    // `secret 0 Pw`: a short number first is the value's
                    // type; the value itself follows.
                    if digits_only && len <= 2 && !typed {
                        self.scan = Scan::Named { typed: true };
                        return true;
                    }
                    self.scan = Scan::Text;
                    return false;
                }
                if len >= MAX_VALUE {
                    self.scan = Scan::Text;
                    return false;
                }
                self.scan = Scan::Value {
                    typed,
                    digits_only: digits_only && byte.is_ascii_digit(),
                    len: len + 1,
                };
                true
            }
        }
    }

    fn word_names_a_secret(&self) -> bool {
        SECRET_NAMES.iter().any(|name| self.word.ends_with(name))
    }

    /// Stars out every whole secret in `out`.
    fn mask(&self, out: &mut [u8]) {
        let ranges: Vec<_> = self.finder.find_iter(&*out).map(|m| m.range()).collect();
        for range in ranges {
            out[range].fill(MASK_BYTE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRETS: [&[u8]; 2] = [b"s3cret-pw", b"en-s3cret"];

    fn mask() -> SecretMask {
        SecretMask::new(&SECRETS).unwrap()
    }

    /// Feeds `input` in pieces of `size` and flushes at the end.
    fn masked(input: &[u8], size: usize) -> Vec<u8> {
        let mut m = mask();
        let mut out = Vec::new();
        for piece in input.chunks(size) {
            out.extend(m.feed(piece));
        }
        out.extend(m.flush());
        out
    }

    #[test]
    fn named_secrets_are_masked_under_every_chunking_and_lengths_stay() {
        let input = b"Password: s3cret-pw\r\nenable secret en-s3cret\r\n\
            username ops password 0 s3cret-pw privilege 15\r\n\
            ENABLE_PASSWORD=en-s3cret\nSW1#";
        let expect = b"Password: *********\r\nenable secret *********\r\n\
            username ops password 0 ********* privilege 15\r\n\
            ENABLE_PASSWORD=*********\nSW1#";
        for size in 1..=input.len() {
            let out = masked(input, size);
            assert_eq!(out.len(), input.len());
            assert_eq!(
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(expect),
                "pieces of {size}"
            );
        }
    }

    #[test]
    fn a_pause_of_any_length_inside_a_named_value_keeps_it_whole() {
        let mut m = mask();
        let mut out = m.feed(b"enable secret 0 en-s3");
        assert!(m.holding(), "the value waits for its end");
        assert_eq!(out, b"enable secret ");
        // However long the pause, the next read decides; the quiet timer
        // (MASK_HOLD) is the reader's, not the mask's.
        out.extend(m.feed(b"cret\r\n"));
        assert_eq!(out, b"enable secret 0 *********\r\n");
        assert!(!m.holding());
    }

    /// The timing oracle: whether bytes are held must not depend on whether
    /// they begin a secret. Every beginning of a secret and a wrong guess of
    /// the same length are treated alike, with and without a naming word.
    #[test]
    fn holding_never_depends_on_the_secrets() {
        for secret in SECRETS {
            for n in 1..secret.len() {
                let right = &secret[..n];
                let mut wrong = right.to_vec();
                wrong[n - 1] = if wrong[n - 1] == b'x' { b'y' } else { b'x' };
                for before in [&b"SW1#"[..], b"SW1(config)#enable secret ", b"$ echo "] {
                    let (mut a, mut b) = (mask(), mask());
                    let released_right = a.feed(&[before, right].concat());
                    let released_wrong = b.feed(&[before, &wrong].concat());
                    assert_eq!(a.holding(), b.holding(), "{before:?} + {n} bytes");
                    assert_eq!(released_right.len(), released_wrong.len());
                }
            }
        }
        // Outside a named value nothing is held at all.
        let mut m = mask();
        assert_eq!(m.feed(b"SW1#en-s3cre"), b"SW1#en-s3cre");
        assert!(!m.holding());
        // A whole secret in one read is starred out wherever it is.
        assert_eq!(m.feed(b"\r\nSW1#en-s3cret"), b"\r\nSW1#*********");
    }

    #[test]
    fn prompts_that_name_a_secret_are_not_held() {
        for prompt in [
            &b"Password: "[..],
            b"[sudo] password for netops: ",
            b"Hit any key to stop autoboot:  3 ",
            b"Enter the pre-shared key: ",
        ] {
            let mut m = mask();
            assert_eq!(
                m.feed(prompt),
                prompt,
                "{}",
                String::from_utf8_lossy(prompt)
            );
            assert!(!m.holding());
        }
        assert!(SecretMask::new(&[b""]).is_none());
    }

    #[test]
    fn a_long_value_is_released_and_the_quiet_release_is_masked() {
        let mut m = mask();
        let long = vec![b'a'; MAX_VALUE + 10];
        let out = m.feed(&[&b"key "[..], &long].concat());
        assert!(
            !m.holding(),
            "a value past {MAX_VALUE} bytes is no credential"
        );
        assert_eq!(out.len(), 4 + long.len());
        let mut m = mask();
        assert_eq!(m.feed(b"password s3cret-pw"), b"password ");
        assert_eq!(m.flush(), b"*********");
        // The rest of a value released by the quiet timer is still held.
        assert_eq!(m.feed(b"more"), b"");
        assert_eq!(m.feed(b" x"), b"more x");
    }
}
