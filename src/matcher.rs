//! Incremental prompt and trigger matching over bytes that arrive in
//! chunks. Synchronous and free of I/O: waiting lives in `port/`.
//!
//! Each wake-up scans only the new bytes plus a bounded look-behind
//! ([`PromptScanner::window_start`]), so waiting on a 10 MB output costs time
//! linear in its size.

use aho_corasick::AhoCorasick;
use regex::bytes::Regex;

/// How far back a regex prompt is rescanned at most. A prompt regex that
/// cannot match a line break is rescanned from the start of the line where
/// the previous scan ended (bounded by this); one that can match `\n` is
/// rescanned over this whole window, so such a prompt must fit in 4 KiB.
pub const REGEX_LOOK_BEHIND: u64 = 4096;

/// A half-open range `[start, end)` of absolute log offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First byte of the match.
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
}

/// What marks the end of a command's output: a literal or a regex.
#[derive(Debug, Clone)]
pub enum Prompt {
    /// Exact bytes.
    Literal(Vec<u8>),
    /// A `regex::bytes` pattern, multi-line; `$` also matches at the end of
    /// what has arrived.
    Regex(RegexPrompt),
}

/// A compiled prompt regex and, when its shape allows, a prefilter that
/// runs the regex only on lines that can end a match.
#[derive(Debug, Clone)]
pub struct RegexPrompt {
    /// Shared by every clone (each wait takes one): a cloned `Regex`
    /// starts a cache pool of its own, so each search would build its lazy
    /// DFA's states again from nothing.
    regex: std::sync::Arc<Regex>,
    line_end: Option<Box<LineEndFilter>>,
    /// A match may contain `\n`: rescans then cover the whole 4 KiB
    /// look-behind, not just the current line (like ripgrep's
    /// `multi_line_with_matcher`).
    spans_lines: bool,
}

impl Prompt {
    /// A literal prompt. Empty literals are refused by the caller.
    pub fn literal(text: &str) -> Prompt {
        Prompt::Literal(text.as_bytes().to_vec())
    }

    /// A regex prompt, compiled multi-line: `^` and `$` match at line
    /// boundaries, and `$` also at the end of what has arrived. (Without it,
    /// `^` would mean "start of whatever window was scanned", which depends
    /// on how the bytes were chunked; `(?-m)` turns it off.) A size limit
    /// keeps a hostile pattern from taking the daemon's memory.
    pub fn regex(source: &str) -> Result<Prompt, regex::Error> {
        let regex = regex::bytes::RegexBuilder::new(source)
            .multi_line(true)
            .size_limit(1 << 20)
            .dfa_size_limit(4 << 20)
            .build()?;
        let hir = regex_syntax::ParserBuilder::new()
            .multi_line(true)
            .build()
            .parse(source)
            .ok();
        let spans_lines = hir.as_ref().is_none_or(can_match_newline);
        let line_end = hir.as_ref().and_then(LineEndFilter::analyze).map(Box::new);
        Ok(Prompt::Regex(RegexPrompt {
            regex: std::sync::Arc::new(regex),
            line_end,
            spans_lines,
        }))
    }

    /// [`Prompt::regex`] for a pattern of the config (a preset's or a
    /// port's prompt), compiled once and shared: every port of a preset
    /// has the same prompt, and a compiled one holds about 12 KB. Patterns
    /// an agent passes are compiled with [`Prompt::regex`], so that a
    /// client cannot fill this with patterns of its own.
    pub fn config_regex(source: &str) -> Result<Prompt, regex::Error> {
        /// Patterns kept 256 at most; past that (many reloads of changing
        /// prompts) the kept ones are let go and compiled again on use.
        static COMPILED: crate::sync::SharedByKey<String, Prompt> =
            crate::sync::SharedByKey::new(256);
        COMPILED.get_or_make(source.to_owned(), |source| Prompt::regex(source))
    }

    /// The pattern as the user wrote it.
    pub fn source(&self) -> String {
        match self {
            Prompt::Literal(b) => String::from_utf8_lossy(b).into_owned(),
            Prompt::Regex(r) => r.regex.as_str().to_owned(),
        }
    }

    /// First match in `hay` starting at or after `at` (bytes before `at`
    /// are context for `^` and `\b`).
    pub fn find_at(&self, hay: &[u8], at: usize) -> Option<(usize, usize)> {
        match self {
            Prompt::Literal(lit) => {
                memchr::memmem::find(&hay[at..], lit).map(|i| (at + i, at + i + lit.len()))
            }
            Prompt::Regex(r) => match &r.line_end {
                Some(filter) => filter.find_at(&r.regex, hay, at),
                None => r.regex.find_at(hay, at).map(|m| (m.start(), m.end())),
            },
        }
    }
}

/// Where a prompt regex can match, judged from its syntax: when every match
/// ends at `$` and no match spans a line break, a match can only end at a
/// line end (or the end of what has arrived) whose preceding byte is one a
/// match can end with. Console lines end in `\r\n`, so almost every line is
/// skipped with `memchr` and the regex runs on the last line alone.
#[derive(Debug, Clone)]
struct LineEndFilter {
    /// Bytes a match can end with (before the `$`).
    last_byte: [bool; 256],
    /// `$` is multi-line (matches before `\n` too), not only at the end.
    at_line_ends: bool,
}

impl LineEndFilter {
    /// The filter for a pattern, or `None` when its shape does not allow one.
    fn analyze(hir: &regex_syntax::hir::Hir) -> Option<LineEndFilter> {
        use regex_syntax::hir::Look;
        if can_match_newline(hir) {
            return None;
        }
        let at_line_ends = match ending_anchor(hir)? {
            Look::EndLF => true,
            Look::End => false,
            _ => return None,
        };
        let mut last_byte = [false; 256];
        if last_bytes(hir, &mut last_byte) {
            return None; // the pattern can match the empty string
        }
        Some(LineEndFilter {
            last_byte,
            at_line_ends,
        })
    }

    /// The first match at or after `at`, the same as the regex's own
    /// `find_at`, found by trying only candidate line ends in order.
    fn find_at(&self, regex: &Regex, hay: &[u8], at: usize) -> Option<(usize, usize)> {
        let try_end = |end: usize| -> Option<(usize, usize)> {
            if end <= at || !self.last_byte[hay[end - 1] as usize] {
                return None;
            }
            let line_start = memchr::memrchr(b'\n', &hay[at..end]).map_or(at, |i| at + i + 1);
            regex
                .find_at(&hay[..end], line_start)
                .map(|m| (m.start(), m.end()))
        };
        if self.at_line_ends {
            for nl in memchr::memchr_iter(b'\n', &hay[at..]) {
                if let Some(found) = try_end(at + nl) {
                    return Some(found);
                }
            }
        }
        try_end(hay.len())
    }
}

/// Whether any match of `hir` can contain a `\n` byte.
fn can_match_newline(hir: &regex_syntax::hir::Hir) -> bool {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => false,
        HirKind::Literal(lit) => lit.0.contains(&b'\n'),
        HirKind::Class(Class::Unicode(c)) => c
            .ranges()
            .iter()
            .any(|r| r.start() <= '\n' && '\n' <= r.end()),
        HirKind::Class(Class::Bytes(c)) => c
            .ranges()
            .iter()
            .any(|r| r.start() <= b'\n' && b'\n' <= r.end()),
        HirKind::Repetition(r) => can_match_newline(&r.sub),
        HirKind::Capture(c) => can_match_newline(&c.sub),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().any(can_match_newline),
    }
}

/// The end-of-text assertion every match ends with, if there is one.
fn ending_anchor(hir: &regex_syntax::hir::Hir) -> Option<regex_syntax::hir::Look> {
    use regex_syntax::hir::HirKind;
    match hir.kind() {
        HirKind::Look(look) => Some(*look),
        HirKind::Capture(c) => ending_anchor(&c.sub),
        HirKind::Concat(v) => ending_anchor(v.last()?),
        HirKind::Alternation(v) => {
            let first = ending_anchor(v.first()?)?;
            v.iter()
                .all(|h| ending_anchor(h) == Some(first))
                .then_some(first)
        }
        _ => None,
    }
}

/// Adds the bytes a match of `hir` can end with to `set`; returns whether
/// `hir` can match the empty string (then what precedes it counts too).
fn last_bytes(hir: &regex_syntax::hir::Hir, set: &mut [bool; 256]) -> bool {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => true,
        HirKind::Literal(lit) => match lit.0.last() {
            Some(&b) => {
                set[b as usize] = true;
                false
            }
            None => true,
        },
        HirKind::Class(Class::Bytes(c)) => {
            for r in c.ranges() {
                for b in r.start()..=r.end() {
                    set[b as usize] = true;
                }
            }
            c.ranges().is_empty()
        }
        HirKind::Class(Class::Unicode(c)) => {
            for r in c.ranges() {
                for ch in r.start()..=r.end().min('\x7f') {
                    set[ch as usize] = true;
                }
                if r.end() > '\x7f' {
                    // A multi-byte character ends with a continuation byte.
                    set[0x80..=0xBF].iter_mut().for_each(|b| *b = true);
                }
            }
            c.ranges().is_empty()
        }
        HirKind::Repetition(r) => last_bytes(&r.sub, set) || r.min == 0,
        HirKind::Capture(c) => last_bytes(&c.sub, set),
        HirKind::Concat(v) => {
            for h in v.iter().rev() {
                if !last_bytes(h, set) {
                    return false;
                }
            }
            true
        }
        HirKind::Alternation(v) => v.iter().fold(false, |empty, h| last_bytes(h, set) | empty),
    }
}

/// The state of one wait for a prompt: where matching must start (the
/// reader's cursor) and how far earlier scans got.
#[derive(Debug, Clone)]
pub struct PromptScanner {
    prompt: Prompt,
    cursor: u64,
    scanned_to: u64,
}

impl PromptScanner {
    /// A scanner for output starting at `cursor`.
    pub fn new(prompt: Prompt, cursor: u64) -> PromptScanner {
        PromptScanner {
            prompt,
            cursor,
            scanned_to: cursor,
        }
    }

    /// The prompt being waited for.
    pub fn prompt(&self) -> &Prompt {
        &self.prompt
    }

    /// The first offset the next [`scan`](Self::scan) needs in its window:
    /// the rescan point, and before it, as context for `^` and `\b`, the
    /// character that precedes it (up to 4 bytes: a Unicode `\b` that sees
    /// only the last byte of `é` takes it for a non-word character).
    pub fn window_start(&self) -> u64 {
        let back = match &self.prompt {
            Prompt::Literal(lit) => lit.len().saturating_sub(1) as u64,
            Prompt::Regex(_) => REGEX_LOOK_BEHIND,
        };
        let from = self.scanned_to.saturating_sub(back).max(self.cursor);
        from.saturating_sub(4)
    }

    /// Scans `window`, the log bytes from absolute offset `base` to the head
    /// (`base` at most [`window_start`](Self::window_start), clamped to what
    /// is retained), and returns the first prompt match at or after the
    /// cursor. Without a match, remembers how far it got.
    pub fn scan(&mut self, window: &[u8], base: u64) -> Option<Span> {
        let head = base + window.len() as u64;
        let from = match &self.prompt {
            Prompt::Literal(lit) => self
                .scanned_to
                .saturating_sub(lit.len().saturating_sub(1) as u64),
            Prompt::Regex(r) if r.spans_lines => self.scanned_to.saturating_sub(REGEX_LOOK_BEHIND),
            Prompt::Regex(_) => {
                // Rescan the unterminated last line, bounded to 4 KiB: that
                // is where a prompt sits and where `$` moved.
                let bound = self.scanned_to.saturating_sub(REGEX_LOOK_BEHIND).max(base);
                let seen = &window
                    [(bound - base) as usize..(self.scanned_to.clamp(bound, head) - base) as usize];
                match memchr::memrchr(b'\n', seen) {
                    Some(i) => bound + i as u64 + 1,
                    None => bound,
                }
            }
        };
        let from = from.max(self.cursor).max(base).min(head);
        let found = self.prompt.find_at(window, (from - base) as usize);
        self.scanned_to = head;
        found.map(|(s, e)| Span {
            start: base + s as u64,
            end: base + e as u64,
        })
    }
}

/// Auto-reply triggers (`--More--` → space): each occurrence in the output
/// is answered once, scanning only new bytes.
#[derive(Debug, Clone)]
pub struct TriggerScanner {
    automaton: AhoCorasick,
    replies: Vec<Vec<u8>>,
    triggers: Vec<String>,
    overlap: u64,
    scanned_to: u64,
    answered_to: u64,
}

/// One trigger occurrence to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerHit {
    /// Where the trigger was seen.
    pub span: Span,
    /// Index of the trigger in the list given to [`TriggerScanner::new`].
    pub index: usize,
}

impl TriggerScanner {
    /// A scanner for `(trigger, reply)` pairs over output from `cursor`.
    /// Empty triggers are refused by the caller.
    pub fn new(pairs: &[(String, String)], cursor: u64) -> Result<TriggerScanner, String> {
        let triggers: Vec<&str> = pairs.iter().map(|(t, _)| t.as_str()).collect();
        let automaton = crate::automata::leftmost_first(&triggers).map_err(|e| e.to_string())?;
        let overlap = pairs
            .iter()
            .map(|(t, _)| t.len())
            .max()
            .unwrap_or(1)
            .saturating_sub(1) as u64;
        Ok(TriggerScanner {
            automaton,
            replies: pairs.iter().map(|(_, r)| r.as_bytes().to_vec()).collect(),
            triggers: pairs.iter().map(|(t, _)| t.clone()).collect(),
            overlap,
            scanned_to: cursor,
            answered_to: cursor,
        })
    }

    /// No triggers at all.
    pub fn is_empty(&self) -> bool {
        self.replies.is_empty()
    }

    /// The reply for a hit.
    pub fn reply(&self, hit: &TriggerHit) -> &[u8] {
        &self.replies[hit.index]
    }

    /// The trigger text of a hit.
    pub fn trigger(&self, hit: &TriggerHit) -> &str {
        &self.triggers[hit.index]
    }

    /// The first offset the next [`scan`](Self::scan) needs.
    pub fn window_start(&self) -> u64 {
        self.scanned_to
            .saturating_sub(self.overlap)
            .max(self.answered_to)
    }

    /// New trigger occurrences in `window` (log bytes from `base`) that end
    /// at or before `limit` (the start of a matched prompt, or the head).
    pub fn scan(&mut self, window: &[u8], base: u64, limit: u64) -> Vec<TriggerHit> {
        let mut hits = Vec::new();
        if self.is_empty() {
            return hits;
        }
        let from = self.window_start().max(base);
        let limit = limit.clamp(from, base + window.len() as u64);
        let hay = &window[(from - base) as usize..(limit - base) as usize];
        for m in self.automaton.find_iter(hay) {
            let span = Span {
                start: from + m.start() as u64,
                end: from + m.end() as u64,
            };
            if span.end > self.scanned_to && span.start >= self.answered_to {
                self.answered_to = span.end;
                hits.push(TriggerHit {
                    span,
                    index: m.pattern().as_usize(),
                });
            }
        }
        self.scanned_to = self.scanned_to.max(limit);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Feeds `log` to a scanner in the given chunk sizes, as the port's
    /// waiter does, and returns the first match.
    fn scan_chunked(prompt: &Prompt, log: &[u8], cursor: usize, chunks: &[usize]) -> Option<Span> {
        let mut scanner = PromptScanner::new(prompt.clone(), cursor as u64);
        let mut head = cursor;
        let mut sizes = chunks.iter().cycle();
        while head < log.len() {
            head = (head + sizes.next().copied().unwrap_or(1).max(1)).min(log.len());
            let base = scanner.window_start() as usize;
            if let Some(span) = scanner.scan(&log[base..head], base as u64) {
                return Some(span);
            }
        }
        None
    }

    /// What one search over the whole log gives, with `$` at every arrival
    /// point the chunking produced (the reference the scanner must equal).
    fn reference(prompt: &Prompt, log: &[u8], cursor: usize, chunks: &[usize]) -> Option<Span> {
        let mut head = cursor;
        let mut sizes = chunks.iter().cycle();
        while head < log.len() {
            head = (head + sizes.next().copied().unwrap_or(1).max(1)).min(log.len());
            if let Some((s, e)) = prompt.find_at(&log[..head], cursor) {
                return Some(Span {
                    start: s as u64,
                    end: e as u64,
                });
            }
        }
        None
    }

    fn check(prompt: &Prompt, log: &[u8]) {
        for chunking in [
            vec![log.len().max(1)],
            vec![1],
            vec![2],
            vec![3, 7],
            vec![4096],
            vec![5, 1, 13],
        ] {
            assert_eq!(
                scan_chunked(prompt, log, 0, &chunking),
                reference(prompt, log, 0, &chunking),
                "chunks {chunking:?} prompt {}",
                prompt.source()
            );
        }
        // Split at every position.
        for split in 1..log.len() {
            let chunks = [split, log.len()];
            assert_eq!(
                scan_chunked(prompt, log, 0, &chunks),
                reference(prompt, log, 0, &chunks),
                "split {split}"
            );
        }
    }

    const SHOW: &[u8] = b"SW1#show clock\r\n*12:00:01.123 UTC Mon Nov 30 2026\r\nSW1#";

    #[test]
    fn literal_prompt_found_across_any_split() {
        let p = Prompt::literal("SW1#");
        check(&p, SHOW);
        assert_eq!(
            scan_chunked(&p, SHOW, 1, &[1]),
            Some(Span { start: 51, end: 55 })
        );
    }

    #[test]
    fn regex_prompt_with_dollar_means_end_of_arrival() {
        let p = Prompt::regex(r"(?m)^[\w.-]+[#>] ?$").unwrap();
        check(&p, SHOW);
        // Arriving whole, `$` only holds at the real end.
        assert_eq!(
            scan_chunked(&p, SHOW, 0, &[SHOW.len()]),
            Some(Span { start: 51, end: 55 })
        );
        // Arriving one byte at a time, the first `SW1#` is a prompt when it
        // is the last thing that arrived: that is what `$` means.
        assert_eq!(
            scan_chunked(&p, SHOW, 0, &[1]),
            Some(Span { start: 0, end: 4 })
        );
    }

    #[test]
    fn a_config_prompt_is_compiled_once_for_every_port_that_has_it() {
        let source = r"(?m)^shared-prompt-\d+#";
        let regex = |p: Prompt| match p {
            Prompt::Regex(r) => r.regex,
            Prompt::Literal(_) => panic!("a regex"),
        };
        let one = regex(Prompt::config_regex(source).unwrap());
        let other = regex(Prompt::config_regex(source).unwrap());
        assert!(std::sync::Arc::ptr_eq(&one, &other));
        // An agent's pattern is its own.
        assert!(!std::sync::Arc::ptr_eq(
            &one,
            &regex(Prompt::regex(source).unwrap())
        ));
        assert!(Prompt::config_regex("(").is_err());
    }

    #[test]
    fn caret_sees_the_byte_before_the_cursor() {
        let p = Prompt::regex(r"(?m)^SW1#").unwrap();
        let log = b"xSW1#\nSW1#";
        assert_eq!(
            scan_chunked(&p, log, 1, &[100]),
            Some(Span { start: 6, end: 10 })
        );
    }

    #[test]
    fn long_outputs_rescan_only_a_bounded_window() {
        let mut log = Vec::new();
        for i in 0..10_000 {
            log.extend_from_slice(format!("line {i} of output\r\n").as_bytes());
        }
        let p = Prompt::regex(r"(?m)^SW1#$").unwrap();
        let mut scanner = PromptScanner::new(p, 0);
        let mut head = 0;
        while head < log.len() {
            head = (head + 4096).min(log.len());
            let base = scanner.window_start();
            assert!(head as u64 - base <= 4096 + REGEX_LOOK_BEHIND + 4);
            assert_eq!(scanner.scan(&log[base as usize..head], base), None);
        }
    }

    #[test]
    fn triggers_answered_once_per_occurrence() {
        let pairs = vec![("--More--".to_string(), " ".to_string())];
        let log = b"a\r\n --More-- \x08\x08b\r\n --More-- ";
        for split in 1..log.len() {
            let mut t = TriggerScanner::new(&pairs, 0).unwrap();
            let mut hits = Vec::new();
            for head in [split, log.len(), log.len()] {
                let base = t.window_start() as usize;
                hits.extend(t.scan(&log[base..head], base as u64, head as u64));
            }
            let starts: Vec<u64> = hits.iter().map(|h| h.span.start).collect();
            assert_eq!(starts, vec![4, 19], "split {split}");
        }
    }

    #[test]
    fn triggers_after_the_prompt_are_left_alone() {
        let pairs = vec![("[confirm]".to_string(), "\r".to_string())];
        let mut t = TriggerScanner::new(&pairs, 0).unwrap();
        let log = b"SW1#reload\r\nProceed? [confirm]";
        assert!(t.scan(log, 0, 4).is_empty());
    }

    #[test]
    fn word_boundary_sees_the_whole_character_before_a_rescan() {
        // A rescan starting 4 KiB back lands between two `é`s; with only
        // the last byte of the first in the window, `\b` read it as a
        // non-word character and found a prompt that is not there.
        let p = Prompt::regex(r"\bé").unwrap();
        let mut log = b"x".to_vec();
        log.extend_from_slice("é".repeat(2500).as_bytes());
        log.push(b'!');
        for last in [1, 2, 3] {
            let chunks = [log.len() - last, last];
            assert_eq!(scan_chunked(&p, &log, 0, &chunks), None, "{chunks:?}");
        }
        // A real boundary past the rescan point is still found.
        log.extend_from_slice(" é".as_bytes());
        let end = log.len() as u64;
        assert_eq!(
            scan_chunked(&p, &log, 0, &[5001, 1]),
            Some(Span {
                start: end - 2,
                end
            })
        );
    }

    #[test]
    fn line_end_filter_applies_only_where_it_is_exact() {
        let has = |src: &str| match Prompt::regex(src).unwrap() {
            Prompt::Regex(r) => r.line_end.is_some(),
            Prompt::Literal(_) => unreachable!(),
        };
        assert!(has(&crate::presets::builtin("cisco-ios").unwrap().prompt));
        assert!(has(r"[#>] ?$"));
        assert!(!has(r"a\s*#$"), "\\s can match a line break");
        assert!(!has(r"SW1#"), "no end anchor");
        assert!(!has(r"x?$"), "can match empty");
    }

    proptest! {
        #[test]
        fn any_chunking_equals_one_search(
            lines in prop::collection::vec("[a-z#> \r\x08]{0,12}", 0..30),
            chunks in prop::collection::vec(1usize..40, 1..8),
        ) {
            let log = lines.join("\r\n").into_bytes();
            for p in [
                Prompt::literal("a#"),
                Prompt::regex(r"(?m)^[a-z]+[#>] ?$").unwrap(),
                Prompt::regex(r"b+>").unwrap(),
                Prompt::regex(r"(?-m)[a-z]# ?$").unwrap(),
                Prompt::regex(r"a\s*#$").unwrap(),
                Prompt::regex(&crate::presets::builtin("cisco-ios").unwrap().prompt).unwrap(),
                Prompt::regex(r"(?:a>|b#|\b[a-z]+) ?$").unwrap(),
            ] {
                prop_assert_eq!(scan_chunked(&p, &log, 0, &chunks), reference(&p, &log, 0, &chunks));
            }
        }
    }
}
