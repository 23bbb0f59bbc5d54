//! Stage 1 of the cleanup: pager prompts and their erase sequences cut out
//! of the raw bytes.
//!
//! A pager occurrence is, as a grammar over bytes:
//!
//! ```text
//! occurrence := LITERAL [TAIL] ERASE
//! TAIL   := [^)\x00-\x1f\x7f]{0,40} ')' '-'{0,8}    only for a literal with an unclosed '('
//! ERASE  := (BS | CR | NUL | BEL | SP | CSI | QUIET)*  ending at its last token that is not SP;
//!                                                   a CR followed by LF is a line end, not ERASE
//! CSI    := ESC '[' [0-9]{0,8} ('D' | 'K' | 'G' | 'J')  cursor left, erase line, column, screen
//!         | ESC '[' [0-9;]{0,8} ('H' | 'f')           cursor position (ProCurve `ESC[24;1H`)
//! QUIET  := ESC '[' [0-9;]{0,8} ('m' | 'r')           colours (NX-OS ends its reverse video),
//!                                                   scroll region
//!         | ESC '[' '?' [0-9;]{0,7} ('h' | 'l')       modes (ProCurve shows the cursor: `ESC[?25h`)
//! ```
//!
//! The erases seen after the pagers of the common network operating
//! systems all fit: IOS, NX-OS, EOS (`\b`×9 ` `×9 `\b`×9, or `\r` + spaces +
//! `\r`), AlliedWare (`ESC[m` + BEL), Junos (`\r` + spaces + `\r`, with NULs
//! on some releases), Huawei VRP and H3C Comware (`ESC[42D` or `ESC[16D` +
//! spaces + the same), HP ProCurve and ArubaOS-Switch (`ESC[24;1H ESC[2K`).
//!
//! Spaces at the end of the erase run are given back as text: after IOS'
//! `\b`×9 ` `×9 `\b`×9 comes the next page, whose first line may be
//! indented (` ip address …`). Runs of more than [`MAX_ERASE_SPACES`]
//! spaces end the erase.
//!
//! Streaming: a chunk is processed up to the last point where the outcome
//! is known; the undecided rest (a possible start of a literal, an open
//! Junos tail, trailing spaces or a cut CSI in an erase run) is held, with
//! the phase it started in, and processed again in front of the next chunk.
//! Every held part is bounded (a literal, 49 bytes of tail, 519 bytes of
//! erase), and a chunk is copied at most once, so the work stays linear.

use std::mem;

use aho_corasick::{AhoCorasick, Input};

/// Most bytes between a Junos literal (`---(more`) and its `)`.
const MAX_TAIL: usize = 40;
/// Most dashes after the `)` of a Junos tail.
const MAX_DASHES: usize = 8;
/// Most consecutive spaces inside one erase run.
pub(super) const MAX_ERASE_SPACES: usize = 512;
/// Most parameter bytes in an erase CSI or SGR sequence.
const MAX_CSI_PARAMS: usize = 8;

/// Where the filter's output goes.
pub(super) trait Sink {
    /// Text that is not part of a pager occurrence.
    fn text(&mut self, bytes: &[u8]);
    /// A pager occurrence was removed here; `erased` says whether the
    /// device sent an erase sequence after it (else the prompt's own line
    /// end, if one follows, goes with it).
    fn pager(&mut self, erased: bool);
}

/// Where a piece of input is in the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Ordinary text: looking for a literal.
    Text,
    /// After a literal with an unclosed `(`: looking for `)` and dashes.
    Tail,
    /// After a literal (and tail): inside the erase run; `erased` once a
    /// token other than a space was consumed.
    Erase { erased: bool },
}

/// One pager literal.
#[derive(Debug)]
struct Literal {
    bytes: Vec<u8>,
    /// The literal opens a `(` it does not close: it extends to the `)`.
    tail: bool,
}

/// Removes pager prompts and their erase sequences from a byte stream.
#[derive(Debug)]
pub(super) struct PagerFilter {
    /// Finds the leftmost-longest literal; `None` when there are no pagers.
    matcher: Option<AhoCorasick>,
    literals: Vec<Literal>,
    /// Length of the longest literal.
    max_len: usize,
    /// Undecided bytes from the end of the previous chunk (may be empty)…
    hold: Vec<u8>,
    /// …and the phase the first of them (or the next chunk) is in.
    hold_phase: Phase,
    /// Reused buffer for `hold` + the next chunk.
    scratch: Vec<u8>,
}

impl PagerFilter {
    /// A filter for these literals (empty ones are ignored).
    pub(super) fn new(pagers: &[&[u8]]) -> Self {
        let literals: Vec<Literal> = pagers
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| Literal {
                bytes: p.to_vec(),
                tail: opens_bracket(p),
            })
            .collect();
        let matcher = if literals.is_empty() {
            None
        } else {
            // Cannot fail for a handful of short literals; if it ever did,
            // leaving pagers in the text beats losing the output.
            // Shared between commands (the pagers of a port rarely change).
            let bytes: Vec<&[u8]> = literals.iter().map(|l| l.bytes.as_slice()).collect();
            crate::automata::leftmost_longest(&bytes).ok()
        };
        let max_len = literals.iter().map(|l| l.bytes.len()).max().unwrap_or(0);
        PagerFilter {
            matcher,
            literals,
            max_len,
            hold: Vec::new(),
            hold_phase: Phase::Text,
            scratch: Vec::new(),
        }
    }

    /// Processes the next chunk.
    pub(super) fn feed(&mut self, chunk: &[u8], sink: &mut impl Sink) {
        self.run(chunk, false, sink);
    }

    /// Processes what is still held, as the end of the input.
    pub(super) fn finish(&mut self, sink: &mut impl Sink) {
        self.run(&[], true, sink);
    }

    fn run(&mut self, chunk: &[u8], last: bool, sink: &mut impl Sink) {
        if self.hold.is_empty() {
            if !chunk.is_empty() || last {
                self.process(chunk, self.hold_phase, last, sink);
            }
            return;
        }
        let mut buf = mem::take(&mut self.scratch);
        buf.clear();
        buf.extend_from_slice(&self.hold);
        buf.extend_from_slice(chunk);
        self.hold.clear();
        let phase = self.hold_phase;
        self.process(&buf, phase, last, sink);
        self.scratch = buf;
    }

    /// Processes `buf`, whose first byte is in `phase`; holds what cannot be
    /// decided yet unless `last`.
    fn process(&mut self, buf: &[u8], mut phase: Phase, last: bool, sink: &mut impl Sink) {
        let mut i = 0;
        loop {
            match phase {
                Phase::Text => {
                    let Some(matcher) = &self.matcher else {
                        sink.text(&buf[i..]);
                        return;
                    };
                    // Matches must start before any literal that the end of
                    // `buf` may have cut: that one could win once complete.
                    let limit = if last {
                        buf.len()
                    } else {
                        self.partial_start(buf, i)
                    };
                    match matcher.find(Input::new(buf).span(i..buf.len())) {
                        Some(m) if m.start() < limit => {
                            sink.text(&buf[i..m.start()]);
                            i = m.end();
                            phase = if self.literals[m.pattern().as_usize()].tail {
                                Phase::Tail
                            } else {
                                Phase::Erase { erased: false }
                            };
                        }
                        _ => {
                            sink.text(&buf[i..limit]);
                            self.hold_from(buf, limit, Phase::Text);
                            return;
                        }
                    }
                }
                Phase::Tail => match scan_tail(&buf[i..], last) {
                    Scan::Done(n) => {
                        i += n;
                        phase = Phase::Erase { erased: false };
                    }
                    Scan::More(_) => {
                        self.hold_from(buf, i, Phase::Tail);
                        return;
                    }
                },
                Phase::Erase { erased } => {
                    let (scan, erasing) = scan_erase(&buf[i..], last);
                    let erased = erased || erasing;
                    match scan {
                        Scan::Done(n) => {
                            // The occurrence is complete: tell the terminal
                            // now, after the erase, which it never sees.
                            sink.pager(erased);
                            i += n;
                            phase = Phase::Text;
                        }
                        Scan::More(n) => {
                            self.hold_from(buf, i + n, Phase::Erase { erased });
                            return;
                        }
                    }
                }
            }
        }
    }

    fn hold_from(&mut self, buf: &[u8], at: usize, phase: Phase) {
        self.hold.extend_from_slice(&buf[at..]);
        self.hold_phase = phase;
    }

    /// The first position at or after `from` where a literal starts that
    /// the end of `buf` cuts short; `buf.len()` if there is none.
    fn partial_start(&self, buf: &[u8], from: usize) -> usize {
        let lo = from.max(buf.len().saturating_sub(self.max_len.saturating_sub(1)));
        (lo..buf.len())
            .find(|&t| {
                let rest = &buf[t..];
                self.literals
                    .iter()
                    .any(|l| l.bytes.len() > rest.len() && l.bytes.starts_with(rest))
            })
            .unwrap_or(buf.len())
    }
}

/// Does the literal open a `(` that it does not close (`---(more`)?
fn opens_bracket(literal: &[u8]) -> bool {
    match literal.iter().rposition(|&b| b == b'(') {
        Some(open) => !literal[open..].contains(&b')'),
        None => false,
    }
}

/// Outcome of scanning one part of the grammar.
#[derive(Debug, PartialEq, Eq)]
enum Scan {
    /// The part ends after this many bytes: the rest is the next phase.
    Done(usize),
    /// This many bytes are settled; the rest needs more input to decide.
    More(usize),
}

/// The Junos tail after `---(more`: ` 27%)---`. Not a tail (no `)` soon, a
/// control character first) consumes nothing; cut by the end of the input,
/// it is removed with the literal.
fn scan_tail(b: &[u8], last: bool) -> Scan {
    for (k, &c) in b.iter().enumerate().take(MAX_TAIL + 1) {
        if c == b')' {
            let dashes = b[k + 1..]
                .iter()
                .take(MAX_DASHES)
                .take_while(|&&d| d == b'-')
                .count();
            let end = k + 1 + dashes;
            if end == b.len() && dashes < MAX_DASHES && !last {
                return Scan::More(0);
            }
            return Scan::Done(end);
        }
        if c < 0x20 || c == 0x7f {
            return Scan::Done(0);
        }
    }
    if b.len() > MAX_TAIL {
        Scan::Done(0)
    } else if last {
        Scan::Done(b.len())
    } else {
        Scan::More(0)
    }
}

/// The erase run after a pager. `Done(n)`: the run is the first `n` bytes
/// (ending at its last token that is not a space). The flag: a token that
/// moves the cursor back or erases (BS, CR, CSI) was consumed.
fn scan_erase(b: &[u8], last: bool) -> (Scan, bool) {
    let mut j = 0;
    // End of the last token that is not a space.
    let mut settled = 0;
    let mut erased = false;
    while j < b.len() {
        match b[j] {
            // `\r\n` is a line end, not an erase.
            b'\r' => match b.get(j + 1) {
                Some(b'\n') => return (Scan::Done(settled), erased),
                None if !last => return (Scan::More(settled), erased),
                _ => {
                    j += 1;
                    settled = j;
                    erased = true;
                }
            },
            0x08 => {
                j += 1;
                settled = j;
                erased = true;
            }
            // NUL padding (Junos), BEL (AlliedWare rings after its prompt).
            0 | 0x07 => {
                j += 1;
                settled = j;
            }
            b' ' => {
                if j + 1 - settled > MAX_ERASE_SPACES {
                    return (Scan::Done(settled), erased);
                }
                j += 1;
            }
            0x1b => match erase_csi(&b[j..]) {
                // Spaces then a colour: the next page's text has begun.
                Csi::Quiet(_) if j > settled => return (Scan::Done(settled), erased),
                // Colours and modes are invisible: consumed, but they erase
                // nothing.
                Csi::Quiet(n) => {
                    j += n;
                    settled = j;
                }
                Csi::Erase(n) => {
                    j += n;
                    settled = j;
                    erased = true;
                }
                Csi::Partial if !last => return (Scan::More(settled), erased),
                Csi::Partial | Csi::Other => return (Scan::Done(settled), erased),
            },
            _ => return (Scan::Done(settled), erased),
        }
    }
    if last {
        (Scan::Done(settled), erased)
    } else {
        (Scan::More(settled), erased)
    }
}

/// What an escape sequence in an erase run is.
#[derive(Debug, PartialEq, Eq)]
enum Csi {
    /// `ESC[42D`, `ESC[K`, `ESC[1G`, `ESC[24;1H`, of this length.
    Erase(usize),
    /// `ESC[27m`, `ESC[?25h`, `ESC[1;24r`, of this length: shows nothing.
    Quiet(usize),
    /// Cut by the end of the input: could still become one of the above.
    Partial,
    /// Something else: the erase run ends before it.
    Other,
}

/// Classifies the escape sequence at the start of `b` (`b[0]` is ESC).
fn erase_csi(b: &[u8]) -> Csi {
    match b.get(1) {
        None => return Csi::Partial,
        Some(b'[') => {}
        Some(_) => return Csi::Other,
    }
    let private = b.get(2) == Some(&b'?');
    let first = 2 + usize::from(private);
    let params = b[first..]
        .iter()
        .take_while(|c| c.is_ascii_digit() || **c == b';')
        .count();
    if first - 2 + params > MAX_CSI_PARAMS {
        return Csi::Other;
    }
    let digits_only = !b[first..first + params].contains(&b';');
    let len = first + params + 1;
    match (b.get(first + params), private) {
        (None, _) => Csi::Partial,
        (Some(b'D' | b'K' | b'G' | b'J'), false) if digits_only => Csi::Erase(len),
        (Some(b'H' | b'f'), false) => Csi::Erase(len),
        (Some(b'm' | b'r'), false) | (Some(b'h' | b'l'), true) => Csi::Quiet(len),
        (Some(_), _) => Csi::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junos_literal_opens_a_bracket() {
        assert!(opens_bracket(b"---(more"));
        assert!(!opens_bracket(b"---(more)---"));
        assert!(!opens_bracket(b" --More-- "));
    }

    #[test]
    fn erase_gives_back_trailing_spaces() {
        let ios = b"\x08\x08\x08   \x08\x08\x08 ip address";
        assert_eq!(scan_erase(ios, false), (Scan::Done(9), true));
        assert_eq!(
            scan_erase(b"\x1b[42D  \x1b[42", false),
            (Scan::More(5), true)
        );
        assert_eq!(
            scan_erase(b"\x1b[42D  \x1b[31mx", false),
            (Scan::Done(5), true)
        );
        // A cursor position goes on erasing (ProCurve's `ESC[24;1H`)…
        assert_eq!(
            scan_erase(b"\x1b[42D  \x1b[31H", false),
            (Scan::More(12), true)
        );
        assert_eq!(
            scan_erase(b"\x1b[24;1H\x1b[2K\x1b[?25h\x1b[1;24rx", false),
            (Scan::Done(24), true)
        );
        // …other sequences end it.
        assert_eq!(
            scan_erase(b"\x1b[42D  \x1b[31X", false),
            (Scan::Done(5), true)
        );
        assert_eq!(scan_erase(b"\x1b[?25H", false), (Scan::Done(0), false));
        assert_eq!(scan_erase(b"\x00\x07 x", false), (Scan::Done(2), false));
        assert_eq!(
            scan_erase(b"\x1b[42D\x1b[31mx", false),
            (Scan::Done(10), true)
        );
        assert_eq!(scan_erase(b"\r   ", true), (Scan::Done(1), true));
        assert_eq!(scan_erase(b"\x1b[27m\r\nx", false), (Scan::Done(5), false));
        assert_eq!(scan_erase(b"\r", false), (Scan::More(0), false));
    }

    #[test]
    fn tail_of_junos_more() {
        assert_eq!(scan_tail(b" 27%)---\r", false), Scan::Done(8));
        assert_eq!(scan_tail(b")---", false), Scan::More(0));
        assert_eq!(scan_tail(b")---", true), Scan::Done(4));
        assert_eq!(scan_tail(b"\r\n", false), Scan::Done(0));
    }
}
