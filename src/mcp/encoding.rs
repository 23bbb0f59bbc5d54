//! How raw output is put in a JSON string: as text (UTF-8, invalid bytes
//! as U+FFFD), or binary-safe as hex or base64, and cut to `max_output`.
//! Cursors always count raw bytes, whatever the encoding.

use base64::Engine;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::log::{CursorError, OutputLog, Page, lossy_text};

/// The `encoding` argument of the read tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// UTF-8 text; bytes that are not UTF-8 become U+FFFD.
    #[default]
    Text,
    /// Two lowercase hex digits per raw byte.
    Hex,
    /// Standard base64 (RFC 4648, padded) of the raw bytes.
    Base64,
}

impl Encoding {
    /// Whether this encoding keeps every byte (so a read need not respect
    /// UTF-8 character boundaries).
    pub fn is_binary(self) -> bool {
        self != Encoding::Text
    }

    /// `raw` in this encoding, at most `max` raw bytes of it (text: at most
    /// `max` bytes of text, cut at a character boundary); true when cut.
    pub fn encode_cut(self, raw: &[u8], max: usize) -> (String, bool) {
        match self {
            Encoding::Text => cut(lossy_text(raw), max),
            _ => {
                let cut = raw.len() > max;
                (self.encode(&raw[..raw.len().min(max)]), cut)
            }
        }
    }

    /// [`Encoding::encode_cut`] taking the bytes: valid UTF-8 text is
    /// moved into the string, not copied (a 20 MB output is held once).
    pub fn encode_cut_owned(self, mut raw: Vec<u8>, max: usize) -> (String, bool) {
        match self {
            Encoding::Text => match String::from_utf8(raw) {
                Ok(text) => cut(text, max),
                Err(e) => cut(lossy_text(e.as_bytes()), max),
            },
            _ => {
                let cut = raw.len() > max;
                raw.truncate(max);
                (self.encode(&raw), cut)
            }
        }
    }

    /// `raw` in this encoding, whole.
    pub fn encode(self, raw: &[u8]) -> String {
        match self {
            Encoding::Text => lossy_text(raw),
            Encoding::Hex => hex(raw),
            Encoding::Base64 => base64::engine::general_purpose::STANDARD.encode(raw),
        }
    }
}

/// Cuts `text` to at most `max` bytes at a character boundary.
pub(super) fn cut(mut text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut at = max;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    // A cut 20 MB output keeps only what it returns.
    text.shrink_to_fit();
    (text, true)
}

/// Lowercase hex, two digits per byte, no separators.
pub fn hex(raw: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(raw.len() * 2);
    for b in raw {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

/// A page of at most `max_bytes` raw bytes from `cursor`, for a binary
/// encoding: any cursor up to the head is valid and pages end anywhere.
pub fn raw_page(log: &OutputLog, cursor: u64, max_bytes: usize) -> Result<Page, CursorError> {
    let view = log.view();
    let (oldest, head) = (view.oldest(), view.head());
    if cursor > head {
        return Err(CursorError::BeyondHead { cursor, head });
    }
    let from = cursor.max(oldest);
    let end = (from + max_bytes as u64).min(head);
    Ok(Page {
        bytes: view.slice(from, end).to_vec(),
        cursor: from,
        next_cursor: end,
        has_more: end < head,
        truncated: cursor < oldest,
        oldest,
        head,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_keep_every_byte() {
        let raw = [0x00, 0xff, b'a', 0x80, 0x1b];
        assert_eq!(Encoding::Hex.encode(&raw), "00ff61801b");
        assert_eq!(Encoding::Base64.encode(&raw), "AP9hgBs=");
        assert_eq!(Encoding::Text.encode(b"a\xffb"), "a\u{fffd}b");
        assert_eq!(Encoding::Hex.encode_cut(&raw, 2), ("00ff".to_owned(), true));
        assert_eq!(
            Encoding::Hex.encode_cut(&raw, 5),
            ("00ff61801b".to_owned(), false)
        );
        assert_eq!(
            Encoding::Text.encode_cut("aé".as_bytes(), 2),
            ("a".to_owned(), true)
        );
        for encoding in [Encoding::Text, Encoding::Hex, Encoding::Base64] {
            for raw in [&b"a\xffb\xc3"[..], "aé€".as_bytes(), b""] {
                for max in 0..8 {
                    assert_eq!(
                        encoding.encode_cut_owned(raw.to_vec(), max),
                        encoding.encode_cut(raw, max),
                        "{encoding:?} {raw:?} {max}"
                    );
                }
            }
        }
    }

    #[test]
    fn raw_pages_cut_anywhere() {
        let log = OutputLog::new(4);
        log.append("xxé€".as_bytes());
        let p = raw_page(&log, 0, 3).unwrap();
        assert!(p.truncated);
        assert_eq!(p.cursor, log.oldest());
        assert_eq!(p.bytes.len(), 3);
        assert!(p.has_more);
        let q = raw_page(&log, p.next_cursor, 16).unwrap();
        assert_eq!([p.bytes, q.bytes].concat(), log.copy_range(0, log.head()));
        assert!(!q.has_more);
        assert!(matches!(
            raw_page(&log, log.head() + 1, 4),
            Err(CursorError::BeyondHead { .. })
        ));
    }
}
