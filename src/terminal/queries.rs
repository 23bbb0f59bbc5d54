//! The questions a device asks its terminal, found in its output as it
//! streams: cursor position (`ESC[6n`), status (`ESC[5n`) and device
//! attributes (`ESC[c`, `ESC[0c`). Full-screen programs wait for the
//! answers before they draw; the port's responder gives them.
//!
//! The scanner is a small state machine over bytes (a subset of the
//! VT500 parser's CSI states), so a sequence split across chunks is found
//! whole, each byte is looked at once, and the state it carries between
//! chunks is bounded.

use super::screen::Position;

/// A question a device asks its terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    /// `ESC[6n`: where is the cursor? Answer `ESC[{row};{col}R`, 1-based.
    CursorPosition,
    /// `ESC[5n`: are you OK? Answer `ESC[0n`.
    Status,
    /// `ESC[c` or `ESC[0c`: what are you? Answer `ESC[?1;2c` (a VT100
    /// with advanced video).
    DeviceAttributes,
}

/// A query seen in the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryHit {
    /// What was asked.
    pub query: Query,
    /// Offset just after the query: the terminal's state there decides
    /// the answer.
    pub end: u64,
}

/// Longest parameter string kept; a longer one is not a query.
const MAX_PARAMS: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    Escape,
    Csi,
}

/// Finds queries in output that arrives in chunks.
#[derive(Debug, Clone)]
pub struct QueryScanner {
    state: State,
    params: [u8; MAX_PARAMS],
    len: usize,
    /// Parameters overflowed or an intermediate byte was seen: whatever
    /// this sequence is, it is not a query.
    spoiled: bool,
}

impl Default for QueryScanner {
    fn default() -> Self {
        QueryScanner::new()
    }
}

impl QueryScanner {
    /// A scanner outside any sequence.
    pub fn new() -> QueryScanner {
        QueryScanner {
            state: State::Ground,
            params: [0; MAX_PARAMS],
            len: 0,
            spoiled: false,
        }
    }

    /// Scans `bytes`, which start at offset `base` and follow what the
    /// previous call scanned, appending the queries found to `out`.
    pub fn scan(&mut self, bytes: &[u8], base: u64, out: &mut Vec<QueryHit>) {
        let mut i = 0;
        while i < bytes.len() {
            if self.state == State::Ground {
                match memchr::memchr(0x1b, &bytes[i..]) {
                    Some(at) => {
                        i += at + 1;
                        self.state = State::Escape;
                        continue;
                    }
                    None => return,
                }
            }
            let b = bytes[i];
            i += 1;
            match self.state {
                State::Ground => {}
                State::Escape => {
                    self.state = match b {
                        b'[' => {
                            self.len = 0;
                            self.spoiled = false;
                            State::Csi
                        }
                        0x1b => State::Escape,
                        _ => State::Ground,
                    };
                }
                State::Csi => match b {
                    0x30..=0x3f => {
                        if self.len < MAX_PARAMS {
                            self.params[self.len] = b;
                            self.len += 1;
                        } else {
                            self.spoiled = true;
                        }
                    }
                    0x20..=0x2f => self.spoiled = true,
                    0x40..=0x7e => {
                        self.state = State::Ground;
                        if let Some(query) = self.finished(b) {
                            out.push(QueryHit {
                                query,
                                end: base + i as u64,
                            });
                        }
                    }
                    0x1b => self.state = State::Escape,
                    // CAN and SUB cancel a sequence; other bytes abort it.
                    0x18 | 0x1a | 0x80.. => self.state = State::Ground,
                    // Other controls act without ending the sequence.
                    _ => {}
                },
            }
        }
    }

    fn finished(&self, last: u8) -> Option<Query> {
        if self.spoiled {
            return None;
        }
        match (&self.params[..self.len], last) {
            (b"6", b'n') => Some(Query::CursorPosition),
            (b"5", b'n') => Some(Query::Status),
            (b"" | b"0", b'c') => Some(Query::DeviceAttributes),
            _ => None,
        }
    }
}

/// What a terminal answers to `query`, with its cursor at `cursor`.
pub fn answer(query: Query, cursor: Position) -> Vec<u8> {
    match query {
        Query::CursorPosition => {
            format!("\x1b[{};{}R", cursor.row + 1, cursor.col + 1).into_bytes()
        }
        Query::Status => b"\x1b[0n".to_vec(),
        Query::DeviceAttributes => b"\x1b[?1;2c".to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_chunks(chunks: &[&[u8]]) -> Vec<QueryHit> {
        let mut s = QueryScanner::new();
        let (mut out, mut base) = (Vec::new(), 0);
        for c in chunks {
            s.scan(c, base, &mut out);
            base += c.len() as u64;
        }
        out
    }

    const STREAM: &[u8] =
        b"menu\x1b[2J\x1b[6n\x1b[1;1Hx\x1b[c\x1b[0cq\x1b[5n\x1b[?6n\x1b[>c\x1b[16n\
\x1b[6\x1bx\x1b[6\r\nn\x1b[1;2 n\x1b[0123456789n\x1b\x1b[6n\x1b[6\x18n\xe2\x82\xac\x1b[6n";

    fn expected() -> Vec<(Query, usize)> {
        let ends = |needle: &[u8], nth: usize| {
            STREAM
                .windows(needle.len())
                .enumerate()
                .filter(|(_, w)| *w == needle)
                .nth(nth)
                .map(|(i, _)| i + needle.len())
                .unwrap()
        };
        vec![
            (Query::CursorPosition, ends(b"\x1b[6n", 0)),
            (Query::DeviceAttributes, ends(b"\x1b[c", 0)),
            (Query::DeviceAttributes, ends(b"\x1b[0c", 0)),
            (Query::Status, ends(b"\x1b[5n", 0)),
            // `ESC[6 CR LF n`: controls inside a sequence do not end it.
            (Query::CursorPosition, ends(b"\x1b[6\r\nn", 0)),
            (Query::CursorPosition, ends(b"\x1b[6n", 1)),
            (Query::CursorPosition, ends(b"\x1b[6n", 2)),
        ]
    }

    fn as_pairs(hits: &[QueryHit]) -> Vec<(Query, usize)> {
        hits.iter().map(|h| (h.query, h.end as usize)).collect()
    }

    #[test]
    fn finds_queries_and_nothing_else() {
        assert_eq!(as_pairs(&scan_chunks(&[STREAM])), expected());
    }

    #[test]
    fn every_split_finds_the_same() {
        for at in 0..=STREAM.len() {
            let (a, b) = STREAM.split_at(at);
            assert_eq!(as_pairs(&scan_chunks(&[a, b])), expected(), "split at {at}");
        }
        for i in 0..STREAM.len() {
            for j in i..=STREAM.len() {
                let hits = scan_chunks(&[&STREAM[..i], &STREAM[i..j], &STREAM[j..]]);
                assert_eq!(as_pairs(&hits), expected(), "split at {i} and {j}");
            }
        }
        let bytes: Vec<&[u8]> = STREAM.chunks(1).collect();
        assert_eq!(as_pairs(&scan_chunks(&bytes)), expected(), "byte by byte");
    }

    #[test]
    fn answers() {
        let at = Position { row: 4, col: 14 };
        assert_eq!(answer(Query::CursorPosition, at), b"\x1b[5;15R");
        assert_eq!(answer(Query::Status, at), b"\x1b[0n");
        assert_eq!(answer(Query::DeviceAttributes, at), b"\x1b[?1;2c");
    }
}
