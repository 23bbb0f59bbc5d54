//! The OutputLog: every byte a port's device sent, addressed by absolute
//! offsets, the newest `retention` bytes kept, waiters woken on append.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

/// Everything a device sent, as bytes at absolute offsets that only grow.
///
/// Shaped like ripgrep's `LineBuffer`: one contiguous `Vec<u8>` with a
/// `start` index and the absolute offset of `buf[start]`, so a regex always
/// sees one slice. Retention advances `start`; the dead prefix is moved out
/// with `copy_within` once the buffer would outgrow the retention plus a
/// slack of a sixteenth of it ([`slack`]), and the buffer never grows past
/// that: a port costs its retention and 1/16 more, not twice it. Each
/// compaction moves at most the retention for every slack's worth of new
/// bytes (16 bytes copied per byte arrived, at memory speed: far above any
/// console's rate). The vector grows with what arrives and is never
/// preallocated, so a quiet port costs almost nothing.
///
/// Appends publish the new head on a `watch` channel: readers await
/// [`OutputLog::subscribe`] instead of polling. The clone is a cheap handle.
#[derive(Clone)]
pub struct OutputLog {
    inner: Arc<Mutex<Retained>>,
    head_tx: Arc<watch::Sender<u64>>,
    /// Names this log among every log of every run of the daemon.
    id: u64,
}

/// A number no other log of this or another run of the daemon has: a
/// random base drawn once per process, plus a count.
fn next_log_id() -> u64 {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static BASE: OnceLock<u64> = OnceLock::new();
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let base = *BASE.get_or_init(|| {
        let mut raw = [0u8; 8];
        // Without randomness, the time still tells runs apart.
        getrandom::fill(&mut raw).map_or_else(
            |_| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64)
            },
            |()| u64::from_le_bytes(raw),
        )
    });
    base.wrapping_add(COUNT.fetch_add(1, Ordering::Relaxed))
}

/// The retained bytes and their position in the stream.
struct Retained {
    buf: Vec<u8>,
    /// Index in `buf` of the oldest retained byte.
    start: usize,
    /// Absolute offset of `buf[start]`.
    oldest: u64,
    retention: usize,
}

impl Retained {
    fn head(&self) -> u64 {
        self.oldest + (self.buf.len() - self.start) as u64
    }
}

/// A read guard on the retained bytes, for matching without copying.
///
/// Hold it briefly (never across `.await`): the device's reader waits for it.
pub struct LogView<'a> {
    guard: MutexGuard<'a, Retained>,
}

impl LogView<'_> {
    /// Absolute offset of the oldest retained byte.
    pub fn oldest(&self) -> u64 {
        self.guard.oldest
    }

    /// Absolute offset one past the newest byte.
    pub fn head(&self) -> u64 {
        self.guard.head()
    }

    /// The retained bytes in `[from, to)`, clamped to what is retained.
    pub fn slice(&self, from: u64, to: u64) -> &[u8] {
        let r = &*self.guard;
        let from = from.clamp(r.oldest, r.head());
        let to = to.clamp(from, r.head());
        let a = r.start + (from - r.oldest) as usize;
        let b = r.start + (to - r.oldest) as usize;
        &r.buf[a..b]
    }
}

/// One page of a cursor read (`read_output`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The raw bytes of the page; never ends inside a UTF-8 character.
    pub bytes: Vec<u8>,
    /// Where the page starts: the requested cursor, or `oldest` if that was
    /// older than the oldest retained byte.
    pub cursor: u64,
    /// Offset just after the page: the cursor of the next read.
    pub next_cursor: u64,
    /// Complete output remains past `next_cursor`.
    pub has_more: bool,
    /// The requested cursor was older than the oldest retained byte.
    pub truncated: bool,
    /// Oldest retained offset at the time of the read.
    pub oldest: u64,
    /// Offset one past the newest byte at the time of the read.
    pub head: u64,
}

/// Why a cursor cannot be read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CursorError {
    /// The cursor is past the newest byte.
    BeyondHead {
        /// The requested cursor.
        cursor: u64,
        /// The newest offset.
        head: u64,
    },
    /// The cursor points inside a multi-byte UTF-8 character.
    SplitsUtf8 {
        /// The requested cursor.
        cursor: u64,
        /// Where the character starts: a valid cursor.
        char_start: u64,
    },
}

impl OutputLog {
    /// An empty log keeping the newest `retention` bytes (at least 1).
    pub fn new(retention: usize) -> OutputLog {
        let (head_tx, _) = watch::channel(0);
        OutputLog {
            inner: Arc::new(Mutex::new(Retained {
                buf: Vec::new(),
                start: 0,
                oldest: 0,
                retention: retention.max(1),
            })),
            head_tx: Arc::new(head_tx),
            id: next_log_id(),
        }
    }

    /// What tells this log from any other, also after a restart: offsets
    /// start again at 0 in a new log, so a client resuming at an offset
    /// checks that it is the same log first.
    pub fn id(&self) -> u64 {
        self.id
    }

    fn lock(&self) -> MutexGuard<'_, Retained> {
        // A panic while holding this lock cannot leave the buffer
        // inconsistent in a way a reader would misread, so poison is ignored.
        crate::sync::lock(&self.inner)
    }

    /// Appends bytes the device sent and wakes every waiter; returns the
    /// new head (the bytes are at `head - bytes.len()`).
    pub fn append(&self, bytes: &[u8]) -> u64 {
        if bytes.is_empty() {
            return self.head();
        }
        let head = {
            let mut r = self.lock();
            let keep = r.retention;
            if bytes.len() >= keep {
                // The chunk alone overflows retention: keep its tail.
                let dropped = (r.buf.len() - r.start) as u64 + (bytes.len() - keep) as u64;
                r.buf.clear();
                r.buf.reserve_exact(keep);
                r.buf.extend_from_slice(&bytes[bytes.len() - keep..]);
                r.start = 0;
                r.oldest += dropped;
            } else {
                // Drop what retention no longer keeps once `bytes` are in
                // (fewer than `keep`, so at most what is live now).
                let live = r.buf.len() - r.start;
                let excess = (live + bytes.len()).saturating_sub(keep);
                r.start += excess;
                r.oldest += excess as u64;
                let limit = keep + slack(keep);
                if r.start > 0 && r.buf.len() + bytes.len() > limit {
                    let start = r.start;
                    r.buf.copy_within(start.., 0);
                    let live = r.buf.len() - start;
                    r.buf.truncate(live);
                    r.start = 0;
                }
                // Now `len + bytes.len() <= limit`: grow by doubling, but
                // never past the limit.
                let needed = r.buf.len() + bytes.len();
                if needed > r.buf.capacity() {
                    let grown = needed.max(r.buf.capacity() * 2).min(limit.max(needed));
                    let len = r.buf.len();
                    r.buf.reserve_exact(grown - len);
                }
                r.buf.extend_from_slice(bytes);
            }
            r.head()
        };
        // Unlocked before notifying, as mini-redis's Db does.
        self.head_tx.send_replace(head);
        head
    }

    /// Offset one past the newest byte.
    pub fn head(&self) -> u64 {
        self.lock().head()
    }

    /// Offset of the oldest retained byte; everything before it was dropped
    /// by retention (this is also the count of bytes lost to retention).
    pub fn oldest(&self) -> u64 {
        self.lock().oldest
    }

    /// The retention in bytes.
    pub fn retention(&self) -> usize {
        self.lock().retention
    }

    /// Bytes currently held in memory for this log (capacity of the buffer).
    pub fn memory_bytes(&self) -> usize {
        self.lock().buf.capacity()
    }

    /// A receiver that changes whenever the head moves.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.head_tx.subscribe()
    }

    /// Locks the retained bytes for reading.
    pub fn view(&self) -> LogView<'_> {
        LogView { guard: self.lock() }
    }

    /// Copies the retained bytes in `[from, to)` (clamped).
    pub fn copy_range(&self, from: u64, to: u64) -> Vec<u8> {
        self.view().slice(from, to).to_vec()
    }

    /// Copies at most `max` bytes from the start of `[from, to)` (clamped
    /// to what is retained), and says how long the whole range is: a result
    /// cut at `max_output` copies what it returns, not all of the output.
    pub fn copy_prefix(&self, from: u64, to: u64, max: usize) -> (Vec<u8>, usize) {
        let view = self.view();
        let all = view.slice(from, to);
        (all[..all.len().min(max)].to_vec(), all.len())
    }

    /// Hands the retained bytes of `[from, to)` to `feed` in pieces of at
    /// most `piece` bytes, each copied out under the lock and fed after it
    /// is released: a 20 MB range is neither copied whole nor holds the
    /// device's reader up while it is cleaned. Returns false when
    /// retention dropped part of the range before it was fed (the rest is
    /// fed from the oldest retained byte on).
    pub fn feed_range(
        &self,
        from: u64,
        to: u64,
        piece: usize,
        mut feed: impl FnMut(&[u8]),
    ) -> bool {
        let piece = piece.max(1);
        let mut buf = Vec::with_capacity(piece.min((to.saturating_sub(from)) as usize));
        let (mut at, mut whole) = (from, true);
        while at < to {
            {
                let view = self.view();
                if at < view.oldest() {
                    whole = false;
                    at = view.oldest();
                }
                let end = at.saturating_add(piece as u64).min(to).min(view.head());
                if end <= at {
                    break;
                }
                buf.clear();
                buf.extend_from_slice(view.slice(at, end));
                at = end;
            }
            feed(&buf);
        }
        whole
    }

    /// Reads a page of at most `max_bytes` (≥ 4) from `cursor`, never
    /// splitting a UTF-8 character (what `read_output` promises).
    pub fn read_page(&self, cursor: u64, max_bytes: usize) -> Result<Page, CursorError> {
        let view = self.view();
        let (oldest, head) = (view.oldest(), view.head());
        if cursor > head {
            return Err(CursorError::BeyondHead { cursor, head });
        }
        let truncated = cursor < oldest;
        let from = cursor.max(oldest);
        let retained = view.slice(oldest, head);
        let at = (from - oldest) as usize;
        if let Some(start) = char_containing(retained, at) {
            return Err(CursorError::SplitsUtf8 {
                cursor,
                char_start: oldest + start as u64,
            });
        }
        let mut end = (at + max_bytes.max(4)).min(retained.len());
        if let Some(start) = char_containing(retained, end) {
            end = start;
        }
        let next_cursor = oldest + end as u64;
        let rest = &retained[end..];
        // An incomplete character at the head is not yet "more".
        let has_more =
            !rest.is_empty() && char_containing(retained, retained.len()).is_none_or(|s| s > end);
        Ok(Page {
            bytes: retained[at..end].to_vec(),
            cursor: from,
            next_cursor,
            has_more,
            truncated,
            oldest,
            head,
        })
    }
}

/// Room an [`OutputLog`] keeps past its retention before it compacts: a
/// sixteenth of the retention, at least 4 KiB.
pub fn slack(retention: usize) -> usize {
    (retention / 16).max(4096)
}

/// If position `pos` of `bytes` lies strictly inside a UTF-8 character
/// (complete, or a valid prefix cut off by the end of `bytes`), returns where
/// that character starts. Bytes that do not form a valid character are not
/// characters: a position among them is a fine place to cut.
pub fn char_containing(bytes: &[u8], pos: usize) -> Option<usize> {
    if pos == 0 || pos > bytes.len() {
        return None;
    }
    for back in 1..=3usize.min(pos) {
        let p = pos - back;
        let b = bytes[p];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: keep looking for the lead
        }
        let len = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return None,
        };
        if p + len <= pos {
            return None;
        }
        let candidate = &bytes[p..(p + len).min(bytes.len())];
        return match std::str::from_utf8(candidate) {
            Ok(_) => Some(p),
            Err(e) if e.valid_up_to() == 0 && e.error_len().is_none() => Some(p),
            Err(_) => None,
        };
    }
    None
}

/// Decodes bytes for a JSON result: UTF-8, invalid bytes as U+FFFD.
pub fn lossy_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn log_with(bytes: &[u8], retention: usize) -> OutputLog {
        let log = OutputLog::new(retention);
        log.append(bytes);
        log
    }

    #[test]
    fn offsets_grow_and_retention_drops_oldest() {
        let log = OutputLog::new(8);
        log.append(b"hello ");
        log.append(b"world");
        assert_eq!(log.head(), 11);
        assert_eq!(log.oldest(), 3);
        assert_eq!(log.copy_range(0, 11), b"lo world");
        let page = log.read_page(0, 100).unwrap();
        assert!(page.truncated);
        assert_eq!(page.cursor, 3);
        assert_eq!(page.bytes, b"lo world");
        assert!(!page.has_more);
    }

    #[test]
    fn a_chunk_larger_than_retention_keeps_its_tail() {
        let log = OutputLog::new(4);
        log.append(b"ab");
        log.append(b"0123456789");
        assert_eq!((log.oldest(), log.head()), (8, 12));
        assert_eq!(log.copy_range(0, 100), b"6789");
    }

    #[test]
    fn memory_stays_near_retention_however_much_arrives() {
        let log = OutputLog::new(1000);
        for _ in 0..10_000 {
            log.append(&[b'x'; 97]);
        }
        assert_eq!(log.head(), 970_000);
        assert!(
            log.memory_bytes() <= 1000 + slack(1000),
            "{}",
            log.memory_bytes()
        );
    }

    #[test]
    fn ranges_are_fed_in_pieces_and_prefixes_copied() {
        let log = OutputLog::new(100);
        let bytes: Vec<u8> = (0..90u8).collect();
        log.append(&bytes);
        let mut got = Vec::new();
        let mut pieces = 0;
        assert!(log.feed_range(5, 80, 7, |p| {
            assert!(p.len() <= 7);
            pieces += 1;
            got.extend_from_slice(p);
        }));
        assert_eq!(got, &bytes[5..80]);
        assert_eq!(pieces, 11);
        assert_eq!(log.copy_prefix(10, 50, 5), (bytes[10..15].to_vec(), 40));
        assert_eq!(log.copy_prefix(10, 50, 500), (bytes[10..50].to_vec(), 40));
        // A range retention dropped in part is fed from the oldest byte.
        log.append(&[7; 50]);
        let mut got = Vec::new();
        assert!(!log.feed_range(0, 140, 16, |p| got.extend_from_slice(p)));
        assert_eq!(got, log.copy_range(40, 140));
    }

    #[test]
    fn a_large_retention_rolls_within_its_slack() {
        // 64 MiB kept, 200 MiB arriving in 4 KiB reads: the buffer never
        // holds more than the retention and its sixteenth.
        let keep = 64 << 20;
        let log = OutputLog::new(keep);
        let chunk: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
        let mut most = 0;
        for _ in 0..(200 << 20) / chunk.len() {
            log.append(&chunk);
            most = most.max(log.memory_bytes());
        }
        assert!(most <= keep + slack(keep), "{most}");
        assert_eq!(log.oldest(), (200 << 20) - keep as u64);
        let kept = log.copy_range(0, log.head());
        assert_eq!(kept.len(), keep);
        assert!(kept.chunks(4096).all(|c| c == chunk.as_slice()));
    }

    #[test]
    fn cursor_errors() {
        let log = log_with("aé€😀".as_bytes(), 1024);
        assert_eq!(
            log.read_page(11, 16),
            Err(CursorError::BeyondHead {
                cursor: 11,
                head: 10
            })
        );
        assert_eq!(
            log.read_page(2, 16),
            Err(CursorError::SplitsUtf8 {
                cursor: 2,
                char_start: 1
            })
        );
        assert_eq!(
            log.read_page(8, 16),
            Err(CursorError::SplitsUtf8 {
                cursor: 8,
                char_start: 6
            })
        );
        assert!(log.read_page(3, 16).is_ok());
    }

    #[test]
    fn page_never_splits_and_may_be_short() {
        let log = log_with("ab😀".as_bytes(), 1024);
        let p = log.read_page(0, 4).unwrap();
        assert_eq!(p.bytes, b"ab");
        assert_eq!(p.next_cursor, 2);
        assert!(p.has_more);
    }

    #[test]
    fn incomplete_char_at_head_is_held_back() {
        let log = log_with(&"x€".as_bytes()[..3], 1024);
        let p = log.read_page(0, 16).unwrap();
        assert_eq!(p.bytes, b"x");
        assert!(!p.has_more, "the rest is an unfinished character");
        log.append(&"€".as_bytes()[2..]);
        let p = log.read_page(1, 16).unwrap();
        assert_eq!(p.bytes, "€".as_bytes());
    }

    #[test]
    fn invalid_bytes_are_cut_anywhere() {
        let log = log_with(b"\xff\xfe\x80\x80abc", 1024);
        assert!(log.read_page(2, 16).is_ok());
        assert!(log.read_page(3, 16).is_ok());
    }

    #[tokio::test]
    async fn append_wakes_a_waiter() {
        let log = OutputLog::new(64);
        let mut rx = log.subscribe();
        let writer = log.clone();
        let task = crate::task::spawn(async move {
            rx.changed().await.unwrap();
            *rx.borrow()
        });
        writer.append(b"abc");
        let head = tokio::time::timeout(std::time::Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(head, 3);
    }

    fn stream() -> impl Strategy<Value = Vec<u8>> {
        // Mostly UTF-8 with multi-byte characters, some raw bytes.
        prop::collection::vec(
            prop_oneof![
                4 => any::<char>().prop_map(|c| c.to_string().into_bytes()),
                1 => any::<u8>().prop_map(|b| vec![b]),
            ],
            0..300,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #[test]
        fn rolling_keeps_exactly_the_newest_bytes(
            chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..700), 0..60),
            retention in 1usize..5000,
        ) {
            let log = OutputLog::new(retention);
            let mut all = Vec::new();
            for c in &chunks {
                log.append(c);
                all.extend_from_slice(c);
                let kept = all.len().min(retention);
                prop_assert_eq!(log.head(), all.len() as u64);
                prop_assert_eq!(log.oldest(), (all.len() - kept) as u64);
                prop_assert_eq!(log.copy_range(0, log.head()), &all[all.len() - kept..]);
                prop_assert!(log.memory_bytes() <= retention + slack(retention));
                // Any window reads the same bytes as the stream.
                let (a, b) = (log.oldest() + kept as u64 / 3, log.head() - kept as u64 / 4);
                prop_assert_eq!(log.copy_range(a, b), &all[a as usize..b as usize]);
            }
        }

        #[test]
        fn paging_gives_back_the_stream(bytes in stream(), max in 4usize..40, chunk in 1usize..50) {
            let log = OutputLog::new(1 << 20);
            for c in bytes.chunks(chunk) { log.append(c); }
            let mut cursor = 0;
            let mut got = Vec::new();
            loop {
                let page = log.read_page(cursor, max).unwrap();
                prop_assert!(!page.truncated);
                prop_assert!(page.bytes.len() <= max);
                prop_assert_eq!(page.cursor, cursor);
                prop_assert_eq!(page.next_cursor, cursor + page.bytes.len() as u64);
                // No page starts or ends inside a character.
                prop_assert!(char_containing(&bytes, cursor as usize).is_none());
                prop_assert!(char_containing(&bytes, page.next_cursor as usize).is_none()
                    || page.next_cursor as usize == bytes.len());
                got.extend_from_slice(&page.bytes);
                cursor = page.next_cursor;
                if !page.has_more { break; }
                prop_assert!(!page.bytes.is_empty(), "has_more with an empty page");
            }
            // Only an unfinished character at the very end may remain unread.
            let rest = &bytes[got.len()..];
            prop_assert!(rest.len() < 4);
            prop_assert_eq!(&got[..], &bytes[..got.len()]);
            if std::str::from_utf8(&bytes).is_ok() {
                prop_assert_eq!(got.len(), bytes.len());
            }
        }

        #[test]
        fn valid_text_pages_concatenate_to_the_text(text in ".{0,200}", max in 4usize..32) {
            let log = log_with(text.as_bytes(), 1 << 20);
            let (mut cursor, mut out) = (0, String::new());
            loop {
                let page = log.read_page(cursor, max).unwrap();
                out.push_str(std::str::from_utf8(&page.bytes).unwrap());
                cursor = page.next_cursor;
                if !page.has_more { break; }
            }
            prop_assert_eq!(out, text);
        }

        #[test]
        fn truncated_exactly_when_cursor_was_dropped(bytes in prop::collection::vec(any::<u8>(), 0..400),
                                                   retention in 1usize..100, cursor in 0u64..400) {
            let log = log_with(&bytes, retention);
            let oldest = log.oldest();
            prop_assert_eq!(oldest, bytes.len().saturating_sub(retention) as u64);
            match log.read_page(cursor, 16) {
                Ok(page) => {
                    prop_assert_eq!(page.truncated, cursor < oldest);
                    prop_assert_eq!(page.cursor, cursor.max(oldest));
                }
                Err(CursorError::BeyondHead { .. }) => prop_assert!(cursor > bytes.len() as u64),
                Err(CursorError::SplitsUtf8 { char_start, .. }) => {
                    prop_assert!(cursor >= oldest && char_start < cursor);
                }
            }
        }
    }
}
