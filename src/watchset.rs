//! Standing watches matched line by line as output arrives, for the
//! reader's path: synchronous and free of I/O, like [`crate::matcher`].
//!
//! All the watches of a port are one [`RegexSet`]: one pass over the new
//! bytes tells whether any watch matches at all (almost never), and only
//! then are the lines that match scanned with each matching watch's own
//! regex for its span. A line is the unit: each watch alerts at most once
//! per line. The unterminated last line is matched too (a boot loader
//! prompt ends with no line break) and kept, up to [`MAX_LINE`] bytes,
//! so that a line split across reads is matched whole once its end
//! arrives, and a watch that already matched its beginning does not alert
//! again for it.

use std::sync::Arc;

use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

use crate::matcher::Span;
use crate::sync::SharedByKey;

/// The longest line kept across reads: a longer one is matched in pieces
/// of this size (a match spanning a cut is missed).
pub const MAX_LINE: usize = 4096;
/// Most bytes of a match an alert keeps as its text.
pub const MAX_TEXT: usize = 200;

/// Compiles one watch regex as the set does: multi-line, `$` also before
/// `\r\n`, within the matcher's size limits.
pub fn compile(source: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(source)
        .multi_line(true)
        .crlf(true)
        .size_limit(1 << 20)
        .dfa_size_limit(4 << 20)
        .build()
}

/// A port's watches compiled: the set and each one's regex. Index `i` is
/// the `i`-th source given to [`WatchSet::new`].
#[derive(Debug, Clone)]
pub struct WatchSet {
    set: RegexSet,
    each: Vec<Regex>,
}

impl Default for WatchSet {
    fn default() -> Self {
        WatchSet {
            set: RegexSet::empty(),
            each: Vec::new(),
        }
    }
}

/// The sets compiled so far, by their sources (at most 64 kept): every
/// port of a preset has the same standing watches, so a gateway of 256
/// ports holds one set (about half a MiB of automata for a preset's five
/// watches), not 256. Shared as one value, not cloned: a regex's clone
/// would share the automata but keep scratch space of its own, which
/// grows as a port streams; one value keeps one per thread that scans at
/// once.
static SHARED: SharedByKey<Vec<String>, Arc<WatchSet>> = SharedByKey::new(64);

impl WatchSet {
    /// Compiles `sources` (each already checked by
    /// [`check_watch_regex`](crate::config::watches::check_watch_regex)),
    /// or shares the set compiled before from the same sources.
    pub fn new<S: AsRef<str>>(sources: &[S]) -> Result<Arc<WatchSet>, regex::Error> {
        let key: Vec<String> = sources.iter().map(|s| s.as_ref().to_owned()).collect();
        SHARED.get_or_make(key, |_| WatchSet::compile_own(sources).map(Arc::new))
    }

    /// Compiles `sources` into a set of their own.
    fn compile_own<S: AsRef<str>>(sources: &[S]) -> Result<WatchSet, regex::Error> {
        let each = sources
            .iter()
            .map(|s| compile(s.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        let set = RegexSetBuilder::new(sources.iter().map(AsRef::as_ref))
            .multi_line(true)
            .crlf(true)
            .size_limit(16 << 20)
            .dfa_size_limit(16 << 20)
            .build()?;
        Ok(WatchSet { set, each })
    }

    /// How many watches.
    pub fn len(&self) -> usize {
        self.each.len()
    }

    /// Whether there are none (the reader then skips matching).
    pub fn is_empty(&self) -> bool {
        self.each.is_empty()
    }
}

/// One watch's match: which watch, where in the log, and its first
/// [`MAX_TEXT`] bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchHit {
    /// Index of the watch in its [`WatchSet`].
    pub watch: usize,
    /// The match, at absolute log offsets.
    pub span: Span,
    /// The matched bytes, cut to [`MAX_TEXT`].
    pub text: Vec<u8>,
}

/// The line state between reads: the unterminated last line and the
/// watches that already matched it.
#[derive(Debug, Default)]
pub struct WatchScanner {
    line: Vec<u8>,
    line_start: u64,
    /// Watches that matched the kept line already.
    matched: Vec<usize>,
    /// Offset just past the last byte scanned; a gap (bytes scanned
    /// without watches) resynchronises at the next line start.
    scanned_to: Option<u64>,
}

impl WatchScanner {
    /// A scanner with no line kept.
    pub fn new() -> WatchScanner {
        WatchScanner::default()
    }

    /// Scans `data`, the log bytes from absolute offset `base`, and pushes
    /// a hit for each watch of `set` matching a line (once per line).
    /// Chunks must follow each other; after a gap (or at the start of a
    /// set) matching begins at the next line start.
    pub fn scan(&mut self, set: &WatchSet, data: &[u8], base: u64, hits: &mut Vec<WatchHit>) {
        if data.is_empty() {
            return;
        }
        if set.is_empty() {
            // Nothing to match; only remember whether a line begins next,
            // so that watches added now see the next line whole.
            self.line.clear();
            self.matched.clear();
            let end = base + data.len() as u64;
            self.line_start = end;
            self.scanned_to = (data.last() == Some(&b'\n')).then_some(end);
            return;
        }
        let mut pos = 0;
        if self.scanned_to != Some(base) {
            self.line.clear();
            self.matched.clear();
            match memchr::memchr(b'\n', data) {
                Some(nl) => pos = nl + 1,
                None => {
                    // Mid-line: wait for the next line to begin.
                    self.scanned_to = None;
                    return;
                }
            }
            self.line_start = base + pos as u64;
        }
        self.scanned_to = Some(base + data.len() as u64);
        let rest = &data[pos..];
        if let Some(last_nl) = memchr::memrchr(b'\n', rest) {
            let first_nl = memchr::memchr(b'\n', rest).unwrap_or(last_nl);
            let mut from = 0;
            if !self.line.is_empty() {
                // The kept line ends in this chunk.
                self.extend_line(set, &rest[..=first_nl], hits);
                let line = std::mem::take(&mut self.line);
                self.check(set, &line, self.line_start, hits);
                self.line = line;
                self.line.clear();
                self.matched.clear();
                from = first_nl + 1;
            }
            if from <= last_nl {
                let region = &rest[from..=last_nl];
                let region_base = base + (pos + from) as u64;
                // One pass for every watch: almost always nothing.
                if set.set.is_match(region) {
                    let mut start = 0;
                    for nl in memchr::memchr_iter(b'\n', region) {
                        self.matched.clear();
                        self.check(set, &region[start..=nl], region_base + start as u64, hits);
                        start = nl + 1;
                    }
                    self.matched.clear();
                }
            }
            pos += last_nl + 1;
            self.line_start = base + pos as u64;
        }
        let tail = &data[pos..];
        if !tail.is_empty() {
            self.extend_line(set, tail, hits);
            let line = std::mem::take(&mut self.line);
            self.check(set, &line, self.line_start, hits);
            self.line = line;
        }
    }

    /// The set changed (a session added or removed a watch): its indices
    /// mean other watches now, so what matched the kept line is forgotten
    /// (a watch that matched its beginning may alert for it again).
    pub fn set_changed(&mut self) {
        self.matched.clear();
    }

    /// Adds bytes to the kept line; a line that would pass [`MAX_LINE`]
    /// is matched as it is and a new one begins.
    fn extend_line(&mut self, set: &WatchSet, bytes: &[u8], hits: &mut Vec<WatchHit>) {
        if self.line.len() + bytes.len() > MAX_LINE && !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.check(set, &line, self.line_start, hits);
            self.line_start += line.len() as u64;
            self.line = line;
            self.line.clear();
            self.matched.clear();
        }
        let room = MAX_LINE.saturating_sub(self.line.len());
        if bytes.len() > room {
            // A piece longer than a line on its own: matched in place.
            self.matched.clear();
            self.check(set, bytes, self.line_start, hits);
            self.line_start += bytes.len() as u64;
            self.matched.clear();
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    /// Matches one line (or the kept part of one) at offset `at`.
    fn check(&mut self, set: &WatchSet, line: &[u8], at: u64, hits: &mut Vec<WatchHit>) {
        if line.is_empty() || !set.set.is_match(line) {
            return;
        }
        for i in set.set.matches(line).iter() {
            if self.matched.contains(&i) {
                continue;
            }
            if let Some(m) = set.each[i].find(line) {
                self.matched.push(i);
                hits.push(WatchHit {
                    watch: i,
                    span: Span {
                        start: at + m.start() as u64,
                        end: at + m.end() as u64,
                    },
                    text: line[m.start()..m.end().min(m.start() + MAX_TEXT)].to_vec(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(sources: &[&str]) -> Arc<WatchSet> {
        WatchSet::new(sources).unwrap()
    }

    /// Every hit of `data` fed in `chunks` (sizes, cycled), as
    /// `(watch, start, end)`.
    fn run(set: &WatchSet, data: &[u8], chunk: usize) -> Vec<(usize, u64, u64)> {
        let mut scanner = WatchScanner::new();
        let mut hits = Vec::new();
        // The scanner starts mid-stream at the first line start: begin
        // with a line end as a port's first output would be.
        scanner.scan(set, b"\n", 0, &mut hits);
        let mut at = 1u64;
        for piece in data.chunks(chunk.max(1)) {
            scanner.scan(set, piece, at, &mut hits);
            at += piece.len() as u64;
        }
        hits.iter()
            .map(|h| (h.watch, h.span.start, h.span.end))
            .collect()
    }

    #[test]
    fn a_match_split_across_reads_is_found_once_at_its_offsets() {
        let s = set(&["%SYS-2-MALLOCFAIL", "^rommon \\d+ >"]);
        let text = b"boot\r\n%SYS-2-MALLOCFAIL: Memory allocation\r\nok\r\nrommon 1 >";
        let whole = run(&s, text, text.len());
        let start = 1 + 6;
        assert_eq!(whole[0], (0, start, start + 17));
        let rommon = 1 + text.len() as u64 - 10;
        assert_eq!(whole[1], (1, rommon, rommon + 10));
        assert_eq!(whole.len(), 2);
        for chunk in 1..text.len() {
            assert_eq!(run(&s, text, chunk), whole, "chunks of {chunk}");
        }
    }

    #[test]
    fn each_watch_alerts_once_per_line_and_again_on_the_next() {
        let s = set(&["panic", "Kernel"]);
        let text = b"Kernel panic panic\r\nKernel panic\r\n";
        for chunk in [1, 3, 7, 100] {
            let hits = run(&s, text, chunk);
            assert_eq!(hits.len(), 4, "chunks of {chunk}: {hits:?}");
        }
    }

    #[test]
    fn anchors_see_line_ends_with_carriage_returns() {
        // Whole lines: `$` matches before `\r\n`. (Split, `$` also matches
        // at the end of what arrived, as a prompt's does.)
        let s = set(&["^switch: ?$"]);
        let text = b"x\r\nswitch: \r\nswitch: no\r\n";
        assert_eq!(run(&s, text, text.len()).len(), 1);
    }

    #[test]
    fn a_quiet_set_finds_nothing_and_an_empty_one_skips() {
        let s = set(&["never"]);
        assert!(run(&s, &b"line\r\n".repeat(1000), 64).is_empty());
        let empty = WatchSet::default();
        assert!(run(&empty, b"never\r\n", 3).is_empty());
    }

    #[test]
    fn a_gap_resynchronises_at_the_next_line() {
        let s = set(&["crash"]);
        let mut scanner = WatchScanner::new();
        let mut hits = Vec::new();
        scanner.scan(&s, b"\ncra", 0, &mut hits);
        // Bytes 4..10 were never seen: "sh now\n" is not a crash.
        scanner.scan(&s, b"sh\ncrash\n", 10, &mut hits);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].span, Span { start: 13, end: 18 });
    }

    #[test]
    fn watches_added_between_reads_see_the_next_line_whole() {
        let mut scanner = WatchScanner::new();
        let mut hits = Vec::new();
        scanner.scan(&WatchSet::default(), b"boot\r\n", 0, &mut hits);
        let s = set(&["%BGP-5-ADJCHANGE"]);
        scanner.set_changed();
        scanner.scan(&s, b"%BGP-5-ADJCHANGE: Down\r\n", 6, &mut hits);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].span, Span { start: 6, end: 22 });
    }

    #[test]
    fn long_lines_are_bounded_and_text_is_cut() {
        let s = set(&["x+"]);
        let mut scanner = WatchScanner::new();
        let mut hits = Vec::new();
        scanner.scan(&s, b"\n", 0, &mut hits);
        let mut at = 1;
        for _ in 0..100 {
            scanner.scan(&s, &[b'x'; 1000], at, &mut hits);
            at += 1000;
            assert!(scanner.line.len() <= MAX_LINE);
        }
        assert!(hits.iter().all(|h| h.text.len() <= MAX_TEXT));
        assert!(!hits.is_empty());
    }
}
