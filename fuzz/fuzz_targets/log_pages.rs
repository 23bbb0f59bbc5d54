//! OutputLog pagination against a plain `Vec<u8>` model of the stream.
//!
//! Why: `read_output` hands agents pages of the log by cursor, under
//! retention, with multi-byte characters cut by chunk boundaries. The unit
//! tests and proptests cover one append or one retention at a time; here
//! arbitrary sequences of appends (raw bytes and text, any retention) are
//! interleaved with reads at arbitrary cursors and page sizes.
//!
//! What: after every step, the log's head, oldest offset and retained bytes
//! equal the model's (the whole stream, of which the last `retention` bytes
//! are kept); every page is exactly the retained bytes it claims, as long
//! as fits in `max_bytes` without ending inside a UTF-8 character (so
//! paging from the start gives back exactly the retained stream, but an
//! unfinished character at the head); `truncated` holds exactly when the
//! cursor was dropped; errors are exactly the documented ones; and a
//! reader following `next_cursor` never gets an error, however much
//! arrives or is dropped in between.
//!
//! "Inside a UTF-8 character" is decided here with `std::str::from_utf8`,
//! independently of the crate's `char_containing`.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serialgate::log::{CursorError, OutputLog};

#[derive(Debug, Arbitrary)]
struct Input {
    /// Retention in bytes, reduced modulo 300 (0 must act as 1).
    retention: u16,
    ops: Vec<Op>,
}

#[derive(Debug, Arbitrary)]
enum Op {
    /// Raw bytes from the device.
    Append(Vec<u8>),
    /// Text from the device, so that multi-byte characters are common.
    AppendText(String),
    /// One `read_page` at a cursor reduced modulo `head + 3` (some past the
    /// head) with any `max_bytes` (those below 4 act as 4).
    Read { cursor: u32, max_bytes: u16 },
    /// The next page of a reader that always continues at `next_cursor`.
    Follow { max_bytes: u8 },
    /// Pages through the whole log from cursor 0.
    ReadAll { max_bytes: u8 },
    /// `copy_range` with offsets reduced modulo `head + 3`.
    Copy { from: u32, to: u32 },
}

/// The whole stream, and how much of its end the log keeps.
struct Model {
    stream: Vec<u8>,
    retention: usize,
}

impl Model {
    fn head(&self) -> u64 {
        self.stream.len() as u64
    }

    fn oldest(&self) -> u64 {
        self.stream.len().saturating_sub(self.retention) as u64
    }

    fn retained(&self) -> &[u8] {
        &self.stream[self.oldest() as usize..]
    }
}

/// If `pos` lies strictly inside a UTF-8 character of `bytes` (a complete
/// valid one, or the valid start of one cut off by the end of `bytes`),
/// where that character starts.
fn inside_char(bytes: &[u8], pos: usize) -> Option<usize> {
    (pos.saturating_sub(3)..pos).find(|&start| {
        let tail = &bytes[start..bytes.len().min(start + 4)];
        let valid = match std::str::from_utf8(tail) {
            Ok(text) => text,
            Err(e) => std::str::from_utf8(&tail[..e.valid_up_to()]).unwrap(),
        };
        match valid.chars().next() {
            Some(c) => start + c.len_utf8() > pos,
            // No whole character here: the start of one, cut by the end?
            None => std::str::from_utf8(tail).is_err_and(|e| e.error_len().is_none()),
        }
    })
}

/// Reads a page at `cursor` and checks it against the model; returns the
/// next cursor and whether more follows, when the read succeeded.
fn read_and_check(
    log: &OutputLog,
    model: &Model,
    cursor: u64,
    max_bytes: usize,
) -> Option<(u64, bool)> {
    let result = log.read_page(cursor, max_bytes);
    let (oldest, head, retained) = (model.oldest(), model.head(), model.retained());
    if cursor > head {
        assert_eq!(result, Err(CursorError::BeyondHead { cursor, head }));
        return None;
    }
    let from = cursor.max(oldest);
    let at = (from - oldest) as usize;
    if let Some(start) = inside_char(retained, at) {
        let char_start = oldest + start as u64;
        assert_eq!(result, Err(CursorError::SplitsUtf8 { cursor, char_start }));
        return None;
    }
    let page =
        result.unwrap_or_else(|e| panic!("cursor {cursor} is at a character boundary: {e:?}"));
    assert_eq!(page.cursor, from);
    assert_eq!(
        page.truncated,
        cursor < oldest,
        "truncated exactly when the cursor was dropped"
    );
    assert_eq!((page.oldest, page.head), (oldest, head));
    let end = at + page.bytes.len();
    assert_eq!(page.bytes, retained[at..end]);
    assert_eq!(page.next_cursor, oldest + end as u64);
    // As long as fits, but never ending inside a character.
    let limit = (at + max_bytes.max(4)).min(retained.len());
    assert!(
        end <= limit,
        "page of {} bytes, limit {limit}",
        page.bytes.len()
    );
    assert_eq!(
        inside_char(retained, end),
        None,
        "page ends inside a character"
    );
    if end < limit {
        assert_eq!(
            inside_char(retained, limit),
            Some(end),
            "page shorter than needed"
        );
    }
    // More is what lies past the page but an unfinished character at the head.
    let complete = inside_char(retained, retained.len()).unwrap_or(retained.len());
    assert_eq!(page.has_more, end < complete);
    Some((page.next_cursor, page.has_more))
}

fuzz_target!(|input: Input| {
    let retention = input.retention as usize % 300;
    let log = OutputLog::new(retention);
    let mut model = Model {
        stream: Vec::new(),
        retention: retention.max(1),
    };
    let mut follow = 0u64;
    for op in input.ops {
        match op {
            Op::Append(bytes) => {
                log.append(&bytes);
                model.stream.extend_from_slice(&bytes);
            }
            Op::AppendText(text) => {
                log.append(text.as_bytes());
                model.stream.extend_from_slice(text.as_bytes());
            }
            Op::Read { cursor, max_bytes } => {
                let cursor = cursor as u64 % (model.head() + 3);
                read_and_check(&log, &model, cursor, max_bytes as usize);
            }
            Op::Follow { max_bytes } => {
                let (next, _) = read_and_check(&log, &model, follow, max_bytes as usize)
                    .unwrap_or_else(|| panic!("a next_cursor ({follow}) became unreadable"));
                follow = next;
            }
            Op::ReadAll { max_bytes } => {
                let mut cursor = 0;
                let mut got = Vec::new();
                loop {
                    let (next, more) = read_and_check(&log, &model, cursor, max_bytes as usize)
                        .unwrap_or_else(|| panic!("next_cursor {cursor} is unreadable"));
                    // The page's bytes, which read_and_check found equal to these.
                    got.extend_from_slice(
                        &model.stream[cursor.max(model.oldest()) as usize..next as usize],
                    );
                    cursor = next;
                    if !more {
                        break;
                    }
                }
                let retained = model.retained();
                let complete = inside_char(retained, retained.len()).unwrap_or(retained.len());
                assert_eq!(
                    got,
                    retained[..complete],
                    "pages from 0 are the retained stream"
                );
            }
            Op::Copy { from, to } => {
                let (from, to) = (
                    from as u64 % (model.head() + 3),
                    to as u64 % (model.head() + 3),
                );
                let a = from.clamp(model.oldest(), model.head());
                let b = to.clamp(a, model.head());
                assert_eq!(
                    log.copy_range(from, to),
                    model.stream[a as usize..b as usize]
                );
            }
        }
        assert_eq!(log.head(), model.head());
        assert_eq!(log.oldest(), model.oldest());
        assert_eq!(log.retention(), model.retention);
        assert_eq!(log.copy_range(0, u64::MAX), model.retained());
    }
});
