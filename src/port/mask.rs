//! Keeping a port's stored secrets out of its output: every occurrence of
//! the password or enable secret in what the device sends (an echo, a
//! `show running-config` with a clear-text password) is overwritten with
//! `*` before it reaches the OutputLog, so no read, transcript, watcher or
//! resource can carry it. The length stays, so offsets mean the same.
//!
//! A secret may arrive split across reads: a tail of a read that could
//! begin a secret is held back until the next read decides, or until
//! [`MASK_HOLD`] passes with nothing more (then it was not a secret).

use std::time::Duration;

use aho_corasick::{AhoCorasick, MatchKind};

/// How long a tail that could begin a secret is held back when no more
/// output follows.
pub const MASK_HOLD: Duration = Duration::from_millis(20);
/// What a secret's bytes become.
pub const MASK_BYTE: u8 = b'*';

/// The masking state of one open device.
pub struct SecretMask {
    secrets: Vec<Vec<u8>>,
    finder: AhoCorasick,
    longest: usize,
    held: Vec<u8>,
}

impl SecretMask {
    /// A mask for `secrets`; `None` when there are none (or the automaton
    /// cannot be built, which empty input alone would cause).
    pub fn new(secrets: &[&[u8]]) -> Option<SecretMask> {
        let secrets: Vec<Vec<u8>> = secrets
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| s.to_vec())
            .collect();
        if secrets.is_empty() {
            return None;
        }
        let finder = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&secrets)
            .ok()?;
        let longest = secrets.iter().map(Vec::len).max().unwrap_or(0);
        Some(SecretMask {
            secrets,
            finder,
            longest,
            held: Vec::new(),
        })
    }

    /// Masks `data`, which follows whatever was held back; returns what
    /// may be appended now and holds back a tail that could begin a secret.
    pub fn feed(&mut self, data: &[u8]) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.held);
        out.extend_from_slice(data);
        let mut masked_to = 0;
        let ranges: Vec<_> = self.finder.find_iter(&out).map(|m| m.range()).collect();
        for range in ranges {
            masked_to = range.end;
            out[range].fill(MASK_BYTE);
        }
        let hold = self.tail_to_hold(&out[masked_to..]);
        self.held = out.split_off(out.len() - hold);
        out
    }

    /// Releases what is held back (no more output came).
    pub fn flush(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.held)
    }

    /// Whether a tail is held back.
    pub fn holding(&self) -> bool {
        !self.held.is_empty()
    }

    /// The length of the longest end of `tail` that is the beginning of a
    /// secret, shorter than the secret.
    fn tail_to_hold(&self, tail: &[u8]) -> usize {
        let most = tail.len().min(self.longest.saturating_sub(1));
        (1..=most)
            .rev()
            .find(|&n| {
                let end = &tail[tail.len() - n..];
                self.secrets
                    .iter()
                    .any(|s| s.len() > n && s.starts_with(end))
            })
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask() -> SecretMask {
        SecretMask::new(&[b"s3cret-pw", b"en-s3cret"]).unwrap()
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
    fn secrets_are_masked_under_every_chunking_and_lengths_stay() {
        let input = b"Password: s3cret-pw\r\nenable secret en-s3cret\r\nSW1#s3cret-p";
        for size in 1..=input.len() {
            let out = masked(input, size);
            assert_eq!(out.len(), input.len());
            assert_eq!(
                out, b"Password: *********\r\nenable secret *********\r\nSW1#s3cret-p",
                "pieces of {size}"
            );
        }
    }

    #[test]
    fn only_a_possible_beginning_is_held_back() {
        let mut m = mask();
        assert_eq!(m.feed(b"SW1#"), b"SW1#");
        assert!(!m.holding());
        assert_eq!(m.feed(b"show s3c"), b"show ");
        assert!(m.holding());
        assert_eq!(m.feed(b"ond\r\n"), b"s3cond\r\n");
        assert_eq!(m.feed(b"en-"), b"");
        assert_eq!(m.flush(), b"en-");
        assert!(SecretMask::new(&[b""]).is_none());
    }
}
