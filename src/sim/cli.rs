//! What the simulated command lines share: keys from received bytes, output
//! held back by a pager, command words and their abbreviations, dates.

use std::time::{SystemTime, UNIX_EPOCH};

/// What one received byte means at a command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Key {
    /// RETURN: CR, LF, CR LF or LF CR.
    Return,
    /// Backspace or DEL.
    Erase,
    /// A printable byte (or a byte of a UTF-8 character).
    Char(u8),
    /// Any other control byte (TAB, Ctrl-C, ESC…).
    Control(u8),
}

/// Tab.
pub(super) const TAB: u8 = b'\t';
/// Ctrl-C.
pub(super) const CTRL_C: u8 = 0x03;
/// Ctrl-L.
pub(super) const CTRL_L: u8 = 0x0c;
/// Ctrl-Z.
pub(super) const CTRL_Z: u8 = 0x1a;

/// Turns received bytes into [`Key`]s, so that the other half of a CR LF
/// or LF CR pair is not taken for a second RETURN.
#[derive(Debug, Default)]
pub(super) struct Keys {
    line_end: Option<u8>,
}

impl Keys {
    /// The key `byte` is, or `None` for the second half of a line end.
    pub(super) fn key(&mut self, byte: u8) -> Option<Key> {
        let is_line_end = byte == b'\r' || byte == b'\n';
        if let Some(previous) = self.line_end.take()
            && is_line_end
            && byte != previous
        {
            return None;
        }
        if is_line_end {
            self.line_end = Some(byte);
            return Some(Key::Return);
        }
        Some(match byte {
            0x08 | 0x7f => Key::Erase,
            b' '..=b'~' | 0x80.. => Key::Char(byte),
            _ => Key::Control(byte),
        })
    }
}

/// Output held back by a pager: `text[pos..]` is still to be printed.
#[derive(Debug)]
pub(super) struct Pending {
    text: Vec<u8>,
    pos: usize,
}

impl Pending {
    /// All of `text` still to print.
    pub(super) fn new(text: Vec<u8>) -> Pending {
        Pending { text, pos: 0 }
    }

    /// Appends up to `lines` more lines to `out`.
    pub(super) fn print_lines(&mut self, lines: usize, out: &mut Vec<u8>) {
        for _ in 0..lines {
            let rest = &self.text[self.pos..];
            if rest.is_empty() {
                break;
            }
            let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
            out.extend_from_slice(&rest[..end]);
            self.pos += end;
        }
    }

    /// Everything is printed.
    pub(super) fn done(&self) -> bool {
        self.pos == self.text.len()
    }

    /// How much is printed, in percent of the bytes (Junos' pager).
    pub(super) fn percent(&self) -> usize {
        (self.pos * 100).checked_div(self.text.len()).unwrap_or(100)
    }

    /// Lines of the text (for a pager that wants to know if it fits).
    pub(super) fn line_count(&self) -> usize {
        memchr::memchr_iter(b'\n', &self.text).count()
    }
}

/// One word of a command line and the byte where it starts.
#[derive(Clone, Copy, Debug)]
pub(super) struct Word<'a> {
    /// Where the word starts in the line.
    pub(super) at: usize,
    /// The word.
    pub(super) text: &'a [u8],
}

impl Word<'_> {
    /// The word as text (lossy).
    pub(super) fn str(&self) -> String {
        String::from_utf8_lossy(self.text).into_owned()
    }
}

/// The words of a command line, split at spaces and tabs.
pub(super) fn split_words(line: &[u8]) -> Vec<Word<'_>> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, &byte) in line.iter().chain(b" ").enumerate() {
        match (byte == b' ' || byte == b'\t', start) {
            (true, Some(at)) => {
                words.push(Word {
                    at,
                    text: &line[at..i],
                });
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    words
}

/// Why a word names no keyword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Miss {
    /// No keyword starts with it.
    Unknown,
    /// Several do.
    Ambiguous,
}

/// The keyword of `names` that `word` names or uniquely abbreviates
/// (case-insensitive).
pub(super) fn resolve<'n>(word: &[u8], names: &[&'n str]) -> Result<&'n str, Miss> {
    if let Some(name) = names
        .iter()
        .find(|n| word.eq_ignore_ascii_case(n.as_bytes()))
    {
        return Ok(name);
    }
    let mut found = names.iter().filter(|n| is_abbreviation(word, n));
    match (found.next(), found.next()) {
        (Some(name), None) => Ok(name),
        (Some(_), Some(_)) => Err(Miss::Ambiguous),
        (None, _) => Err(Miss::Unknown),
    }
}

/// Whether `word` is a (case-insensitive) beginning of `name`.
pub(super) fn is_abbreviation(word: &[u8], name: &str) -> bool {
    !word.is_empty()
        && word.len() <= name.len()
        && word.eq_ignore_ascii_case(&name.as_bytes()[..word.len()])
}

/// `lines`, each ended by `\r\n`.
pub(super) fn crlf_lines<S: AsRef<str>>(lines: impl IntoIterator<Item = S>) -> Vec<u8> {
    let mut text = Vec::new();
    for line in lines {
        text.extend_from_slice(line.as_ref().as_bytes());
        text.extend_from_slice(b"\r\n");
    }
    text
}

/// `now` as `2024-03-04 10:01:02 UTC`.
pub(super) fn utc_text(now: SystemTime) -> String {
    let seconds = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let (year, month, day) = super::cisco::civil_from_days(seconds / 86_400);
    format!(
        "{year}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60
    )
}

/// `count` spaces.
pub(super) fn spaces(count: usize) -> Vec<u8> {
    vec![b' '; count]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn keys_take_one_return_per_line_end() {
        let mut keys = Keys::default();
        let got: Vec<Option<Key>> = b"a\r\n\n\r\r\x08\t".iter().map(|&b| keys.key(b)).collect();
        assert_eq!(
            got,
            [
                Some(Key::Char(b'a')),
                Some(Key::Return),
                None,
                Some(Key::Return),
                None,
                Some(Key::Return),
                Some(Key::Erase),
                Some(Key::Control(TAB)),
            ]
        );
    }

    #[test]
    fn pending_prints_lines_and_percent() {
        let mut pending = Pending::new(b"a\r\nb\r\nc\r\nd\r\n".to_vec());
        assert_eq!(pending.line_count(), 4);
        let mut out = Vec::new();
        pending.print_lines(1, &mut out);
        assert_eq!(out, b"a\r\n");
        assert_eq!(pending.percent(), 25);
        pending.print_lines(9, &mut out);
        assert!(pending.done());
        assert_eq!(pending.percent(), 100);
        assert_eq!(Pending::new(Vec::new()).percent(), 100);
    }

    #[test]
    fn words_and_abbreviations() {
        let words = split_words(b" sh\tsys  up");
        let texts: Vec<(usize, &[u8])> = words.iter().map(|w| (w.at, w.text)).collect();
        assert_eq!(texts, [(1, &b"sh"[..]), (4, &b"sys"[..]), (9, &b"up"[..])]);
        assert_eq!(resolve(b"sh", &["set", "show"]), Ok("show"));
        assert_eq!(resolve(b"s", &["set", "show"]), Err(Miss::Ambiguous));
        assert_eq!(resolve(b"x", &["set", "show"]), Err(Miss::Unknown));
        assert_eq!(resolve(b"SET", &["set", "setup"]), Ok("set"));
    }

    #[test]
    fn utc_dates() {
        let at = UNIX_EPOCH + Duration::from_secs(1_796_034_063);
        assert_eq!(utc_text(at), "2026-11-30 10:21:03 UTC");
    }
}
