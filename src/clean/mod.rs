//! What an engineer would read, from the raw bytes a console sent.
//!
//! `send_command` returns the bytes between the command it sent and the
//! prompt that ended the output; [`clean_output`] turns them into the text a
//! person at a terminal would have seen. The raw bytes stay in the OutputLog
//! untouched: cleaning is a pure function of bytes to `String`.
//!
//! The pipeline, in the order a terminal shows things:
//!
//! 1. **Pagers** (`pager.rs`): each pager prompt (` --More-- `,
//!    `---(more 27%)---`, `  ---- More ----`, `-- MORE --, next page: …`) is
//!    cut out of the raw bytes together with the erase sequence the device
//!    sends after the key press (backspaces, spaces, `\r`, NULs, BEL,
//!    `ESC[42D`, `ESC[K`, `ESC[24;1H ESC[2K`), before any terminal
//!    emulation, so the erase does not wipe real text. Any literal works:
//!    a preset's or port's `pagers` list configures them.
//! 2. **Escapes** (`line_terminal.rs`): a [`vte`] parser strips CSI, OSC, DCS and
//!    ESC sequences; cursor-left/right/column/position and erase-line are
//!    applied to the current line as a terminal would, `ESC E` (NEL) ends
//!    it, the rest is dropped. Invalid UTF-8 becomes U+FFFD.
//! 3. **Overwrites**: backspace and bare `\r` move the cursor back on the
//!    current line; `\r\n`, `\r\r\n` and `\n\r` end a line once.
//! 4. **Echo**: the first line is dropped when it is the command (or ends
//!    with it, after a prompt), also when the device repainted it over
//!    backspaces, completed its words (`sh` → `show `) or wrapped it at
//!    the terminal width (`\r\n` or ` \r` inside it). A device that does
//!    not echo keeps its first line.
//! 5. **Whitespace**: trailing whitespace of each line, and leading and
//!    trailing empty lines, are removed.
//!
//! [`Cleaner`] does all of this incrementally: bytes may be fed in chunks
//! split anywhere (inside a pager prompt, an escape sequence or a UTF-8
//! character) and give the same text as one call. Time is linear in the
//! input and there is no allocation per byte.

mod line_terminal;
mod pager;
#[cfg(test)]
mod tests;

use regex::Regex;

use line_terminal::LineTerminal;
use pager::{PagerFilter, Sink};

/// Pager prompts of common network operating systems: Cisco IOS/IOS-XE,
/// NX-OS, Arista EOS and AlliedWare Plus (`--More--`, which also covers
/// ` --More-- `: the blanks around it go with the line and the erase),
/// Juniper Junos (`---(more`, up to the closing `)---`), Huawei VRP and H3C
/// Comware (`---- More ----`), HP ProCurve and ArubaOS-Switch (`-- MORE --,
/// next page: Space, next line: Enter, quit: Control-C`, or `quit: q`).
pub const COMMON_PAGERS: &[&[u8]] = &[
    b"--More--",
    b"---(more",
    b"---- More ----",
    PROCURVE_PAGER,
    b"-- MORE --, next page: Space, next line: Enter, quit: q",
];

/// The pager prompt of HP ProCurve and ArubaOS-Switch, whole: the erase
/// (`ESC[24;1H ESC[2K`) comes after all of it.
pub const PROCURVE_PAGER: &[u8] =
    b"-- MORE --, next page: Space, next line: Enter, quit: Control-C";

/// Options of one cleanup.
#[derive(Debug, Clone, Copy, Default)]
pub struct CleanOptions<'a> {
    /// The command that was sent (without line ending), whose echo is
    /// removed from the start. `None`: no echo removal.
    pub command: Option<&'a str>,
    /// Pager prompts (literal byte strings, e.g. `b" --More-- "`,
    /// `b"---(more"`, `b"---- More ----"`) removed together with the erase
    /// sequence the device sends after the key press. A literal with an
    /// unclosed `(` (Junos' `---(more`) extends to the closing `)` and the
    /// dashes after it, so `---(more 27%)---` is matched too.
    pub pagers: &'a [&'a [u8]],
}

/// Cleans `raw` console output in one call: see the [module](self) docs for
/// the rules. The same as feeding `raw` to a [`Cleaner`] and finishing it.
///
/// ```
/// use serialgate::clean::{clean_output, CleanOptions};
///
/// let raw = b"show clock\r\n*10:01:02.003 UTC Mon Mar 1 2024\r\n";
/// let opts = CleanOptions { command: Some("show clock"), pagers: &[] };
/// assert_eq!(clean_output(raw, &opts), "*10:01:02.003 UTC Mon Mar 1 2024");
/// ```
pub fn clean_output(raw: &[u8], opts: &CleanOptions) -> String {
    let mut cleaner = Cleaner::new(opts);
    cleaner.reserve(raw.len());
    cleaner.feed(raw);
    cleaner.finish()
}

/// Most characters of a field [`clean_field`] returns.
pub const FIELD_MAX_CHARS: usize = 256;

/// A short piece of device text shown on its own (a prompt, the line a
/// device waits at, an alert's match) as a terminal would show it: the
/// same escape and overwrite stages as [`clean_output`], so a real shell's
/// bracketed-paste switch (`ESC[?2004h`), window title (`ESC]0;…BEL`) and
/// colours are gone, but no echo or pager removal. The blanks after the
/// last character stay (`netops@vm:~$ `: a literal prompt needs its
/// space). Characters that reorder text on a terminal (bidirectional
/// overrides and isolates) become U+FFFD, and the result is cut to
/// [`FIELD_MAX_CHARS`] with `…`. Lines are joined with `\n`.
///
/// ```
/// use serialgate::clean::clean_field;
///
/// let raw = b"\x1b[?2004h\x1b]0;netops@vm: ~\x07netops@vm:~$ ";
/// assert_eq!(clean_field(raw), "netops@vm:~$ ");
/// ```
pub fn clean_field(raw: &[u8]) -> String {
    let mut cleaner = Cleaner::new(&CleanOptions::default());
    cleaner.feed(raw);
    // A character cut at the end would land after the blanks.
    let blanks = if cleaner.term.carry_len == 0 {
        cleaner.term.lines.trailing_blanks()
    } else {
        None
    };
    let mut text = cleaner.finish();
    if let Some(blanks) = blanks {
        text.push_str(&blanks);
    }
    let mut out: String = text
        .chars()
        .take(FIELD_MAX_CHARS)
        .map(|c| {
            if reorders(c) {
                char::REPLACEMENT_CHARACTER
            } else {
                c
            }
        })
        .collect();
    if text.chars().nth(FIELD_MAX_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// Bidirectional embeddings, overrides and isolates: shown, they make a
/// terminal or a page print what follows in another order than it came.
pub(crate) fn reorders(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Lines of cleaned output that match any of the error patterns (e.g.
/// `^% Invalid input detected`, `^% Ambiguous command`,
/// `^% Incomplete command`, `error: syntax error`), in order.
///
/// Each pattern is tried on each line alone, so `^` and `$` anchor at the
/// line. A line holding only the `^` marker that IOS prints under the
/// offending word is reported with the error line that follows it.
pub fn error_lines(clean: &str, patterns: &[Regex]) -> Vec<String> {
    let mut found = Vec::new();
    if patterns.is_empty() {
        return found;
    }
    let mut previous: Option<&str> = None;
    for line in clean.lines() {
        if patterns.iter().any(|p| p.is_match(line)) {
            if let Some(marker) = previous.filter(|p| is_caret_marker(p)) {
                found.push(marker.to_owned());
            }
            found.push(line.to_owned());
        }
        previous = Some(line);
    }
    found
}

/// A line such as `                 ^`: IOS' pointer to where parsing failed.
fn is_caret_marker(line: &str) -> bool {
    line.trim() == "^"
}

/// Incremental cleanup: [`feed`](Self::feed) raw bytes as they arrive, then
/// [`finish`](Self::finish) for the text.
///
/// The parser state (an escape sequence or UTF-8 character cut at a chunk
/// boundary) and the pager-matching state (a pager prompt or its erase
/// sequence cut at a chunk boundary) are kept between calls, so any
/// chunking gives the same text as [`clean_output`] over the whole.
pub struct Cleaner {
    /// Stage 1: cuts pager prompts and their erase out of the raw bytes.
    pager: PagerFilter,
    /// Stages 2-5: terminal emulation of what is left, line by line.
    term: Term,
}

impl Cleaner {
    /// A cleaner for one command's output.
    pub fn new(opts: &CleanOptions) -> Self {
        Cleaner {
            pager: PagerFilter::new(opts.pagers),
            term: Term {
                parser: vte::Parser::new(),
                lines: LineTerminal::new(opts.command),
                carry: [0; 4],
                carry_len: 0,
            },
        }
    }

    /// Reserves room for about `additional` more bytes of text, when the
    /// size of the output is known in advance.
    pub fn reserve(&mut self, additional: usize) {
        self.term.lines.reserve(additional);
    }

    /// Feeds the next raw bytes.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.pager.feed(bytes, &mut self.term);
    }

    /// Ends the input and returns the cleaned text: lines joined with `\n`,
    /// no trailing `\n`.
    pub fn finish(mut self) -> String {
        self.pager.finish(&mut self.term);
        // A UTF-8 character or escape sequence cut by the end of the input:
        // a line feed completes it (as U+FFFD, or as a cancelled sequence)
        // and ends the last line.
        self.term.text(b"\n");
        self.term.lines.finish()
    }
}

/// U+FFFD in UTF-8.
const REPLACEMENT: &[u8] = "\u{fffd}".as_bytes();

/// The terminal the pager filter writes to.
///
/// The parser only ever sees valid UTF-8, in whole characters. `vte` 0.15
/// mishandles a character cut at the end of one `advance` call when the
/// next call starts with a character followed by more text (`caf\xc3` +
/// `\xa9 ok` loses the space), so a slice ending inside a character keeps
/// that tail in `carry` for the rest; and it rescans its whole input after
/// each invalid sequence, so those are replaced before it sees them.
struct Term {
    parser: vte::Parser,
    lines: LineTerminal,
    /// The start of a UTF-8 character cut by the end of the last slice.
    carry: [u8; 4],
    carry_len: usize,
}

impl Sink for Term {
    fn text(&mut self, mut bytes: &[u8]) {
        while self.carry_len > 0 {
            if bytes.is_empty() {
                return;
            }
            // The carried bytes and a few more: enough to complete the
            // character or show it invalid.
            let mut small = [0u8; 7];
            let take = bytes.len().min(3);
            let len = self.carry_len + take;
            small[..self.carry_len].copy_from_slice(&self.carry[..self.carry_len]);
            small[self.carry_len..len].copy_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            self.carry_len = 0;
            self.advance_keeping_tail(&small[..len]);
        }
        self.advance_keeping_tail(bytes);
    }

    fn pager(&mut self, erased: bool) {
        self.lines.pager_break(erased);
    }
}

impl Term {
    /// Advances the parser over `bytes` but an incomplete UTF-8 character
    /// at their end, which is carried to the next call.
    fn advance_keeping_tail(&mut self, bytes: &[u8]) {
        let keep = incomplete_tail(bytes);
        let (now, later) = bytes.split_at(bytes.len() - keep);
        // Invalid sequences become U+FFFD here, in one pass: vte rescans
        // the rest of its input after each one (quadratic on line noise
        // from a wrong baud rate).
        for chunk in now.utf8_chunks() {
            let valid = chunk.valid();
            if !valid.is_empty() {
                self.parser.advance(&mut self.lines, valid.as_bytes());
            }
            if !chunk.invalid().is_empty() {
                self.parser.advance(&mut self.lines, REPLACEMENT);
            }
        }
        self.carry[..keep].copy_from_slice(later);
        self.carry_len = keep;
    }
}

/// Length of the proper prefix of a UTF-8 character at the end of `bytes`
/// (0 to 3): what a UTF-8 decoder would wait on for more input.
fn incomplete_tail(bytes: &[u8]) -> usize {
    let lo = bytes.len().saturating_sub(3);
    (lo..bytes.len())
        .find(|&p| {
            bytes[p] >= 0xc0
                && matches!(std::str::from_utf8(&bytes[p..]),
                    Err(e) if e.valid_up_to() == 0 && e.error_len().is_none())
        })
        .map_or(0, |p| bytes.len() - p)
}
