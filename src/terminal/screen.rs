//! The VT100 screen a device's output draws, rebuilt from the OutputLog
//! with the `vt100` crate: no work on the reader's path.
//!
//! A screen is rebuilt from a sensible starting point: the last full clear
//! (`ESC[2J`, `ESC[H ESC[J`, `ESC c`, or entering the alternate screen)
//! within the last [`SEARCH_WINDOW`] bytes, where the real screen was blank
//! too; without one, from a line start within the last
//! [`FALLBACK_WINDOW`] bytes, which gives the bottom of a scrolling console
//! exactly and the rest as well as that much output allows.

use std::num::NonZeroU16;

use memchr::memmem;

use crate::log::OutputLog;

/// Rows of the emulated screen (a VT100's; ports have no size setting yet).
pub const ROWS: u16 = 24;
/// Columns of the emulated screen.
pub const COLS: u16 = 80;
/// How far back a full clear is looked for.
pub const SEARCH_WINDOW: u64 = 256 * 1024;
/// How much output is replayed when no clear is found.
pub const FALLBACK_WINDOW: u64 = 64 * 1024;
/// Most highlighted runs a snapshot lists.
pub const MAX_HIGHLIGHTS: usize = 64;

/// Sequences after which the screen is known to be blank.
const CLEARS: &[&[u8]] = &[
    b"\x1b[H\x1b[2J",
    b"\x1b[1;1H\x1b[2J",
    b"\x1b[H\x1b[J",
    b"\x1b[2J",
    b"\x1bc",
    b"\x1b[?1049h",
    b"\x1b[?1047h",
    b"\x1b[?47h",
];

/// Where to start replaying `bytes` (output ending where the screen is
/// wanted) and whether that start is a full clear.
pub fn replay_start(bytes: &[u8]) -> (usize, bool) {
    // The clear that ends last wins; of two ending together (`ESC[H ESC[2J`
    // and its `ESC[2J`), the longer, which also homes the cursor.
    let best = CLEARS
        .iter()
        .filter_map(|pat| memmem::rfind(bytes, pat).map(|at| (at + pat.len(), at)))
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    if let Some((_, at)) = best {
        return (at, true);
    }
    let from = bytes.len().saturating_sub(FALLBACK_WINDOW as usize);
    if from == 0 {
        return (0, false);
    }
    // Start at a line start, not inside an escape sequence or a character.
    match memchr::memchr(b'\n', &bytes[from..]) {
        Some(i) => (from + i + 1, false),
        None => (from, false),
    }
}

/// The output a screen is rebuilt from.
#[derive(Debug, Clone)]
pub struct Replay {
    /// Offset of the first byte replayed.
    pub start: u64,
    /// Offset after the last byte replayed.
    pub end: u64,
    /// `start` is a full clear: the screen is exact, not reconstructed
    /// from scrolling output.
    pub from_clear: bool,
    /// The bytes in `[start, end)`.
    pub bytes: Vec<u8>,
}

/// The bytes to replay to see the screen as it was at offset `end`.
pub fn replay(log: &OutputLog, end: u64) -> Replay {
    let (from, window) = {
        let view = log.view();
        let end = end.clamp(view.oldest(), view.head());
        let from = end.saturating_sub(SEARCH_WINDOW).max(view.oldest());
        (from, view.slice(from, end).to_vec())
    };
    let (at, from_clear) = replay_start(&window);
    let end = from + window.len() as u64;
    let mut bytes = window;
    bytes.drain(..at);
    Replay {
        start: from + at as u64,
        end,
        from_clear,
        bytes,
    }
}

/// Whether the device's last word on the cursor keys before `end`, within
/// the last [`SEARCH_WINDOW`] bytes, was application mode (`ESC[?1h`);
/// `ESC[?1l` and a reset (`ESC c`) mean normal mode, and so does silence.
pub fn application_cursor_at(log: &OutputLog, end: u64) -> bool {
    let window = {
        let view = log.view();
        let end = end.clamp(view.oldest(), view.head());
        view.slice(end.saturating_sub(SEARCH_WINDOW), end).to_vec()
    };
    let last = |pat: &[u8]| memmem::rfind(&window, pat);
    let set = last(b"\x1b[?1h");
    let reset = last(b"\x1b[?1l").max(last(b"\x1bc"));
    match (set, reset) {
        (Some(s), Some(r)) => s > r,
        (Some(_), None) => true,
        _ => false,
    }
}

/// Keeps what the parser reports besides the screen: the window title.
#[derive(Debug, Default)]
struct Reports {
    title: Option<String>,
}

impl vt100::Callbacks for Reports {
    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.title = Some(String::from_utf8_lossy(title).into_owned());
    }
}

/// A cursor position, 0-based (row 0 is the top row, as in `rows`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Row, 0-based.
    pub row: u16,
    /// Column, 0-based.
    pub col: u16,
}

/// A run of reverse-video text (how menus show the selected item).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Highlight {
    /// Row, 0-based.
    pub row: u16,
    /// Column of the first non-blank character, 0-based.
    pub col: u16,
    /// The text, blanks at both ends trimmed.
    pub text: String,
}

/// What a screen shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Each row's text, trailing blanks trimmed.
    pub rows: Vec<String>,
    /// Where the cursor is.
    pub cursor: Position,
    /// The window title the device set (OSC 0/2), if any.
    pub title: Option<String>,
    /// The device switched to the alternate screen (full-screen program).
    pub alternate_screen: bool,
    /// The device hid the cursor.
    pub cursor_hidden: bool,
    /// The device asked for application cursor keys (`ESC[?1h`).
    pub application_cursor: bool,
    /// Reverse-video runs, top to bottom (at most [`MAX_HIGHLIGHTS`]).
    pub highlights: Vec<Highlight>,
}

/// An emulated VT100 of [`ROWS`]×[`COLS`], fed the device's output.
pub struct Terminal {
    parser: vt100::Parser<Reports>,
}

impl Default for Terminal {
    fn default() -> Self {
        Terminal::new()
    }
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal")
            .field("cursor", &self.cursor())
            .finish_non_exhaustive()
    }
}

impl Terminal {
    /// A blank screen, cursor at the top left.
    pub fn new() -> Terminal {
        let rows = NonZeroU16::new(ROWS).unwrap_or(NonZeroU16::MIN);
        let cols = NonZeroU16::new(COLS).unwrap_or(NonZeroU16::MIN);
        Terminal {
            parser: vt100::Parser::new_with_callbacks(rows, cols, 0, Reports::default()),
        }
    }

    /// Feeds output; sequences split across calls are kept whole.
    pub fn process(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
    }

    /// The cursor, inside the screen (a cursor parked past the last column
    /// after filling a row counts as the last column, as xterm reports it).
    pub fn cursor(&self) -> Position {
        let (row, col) = self.parser.screen().cursor_position();
        Position {
            row: row.min(ROWS - 1),
            col: col.min(COLS - 1),
        }
    }

    /// What the screen shows now.
    pub fn snapshot(&self) -> Snapshot {
        let screen = self.parser.screen();
        let rows = screen
            .rows(0, COLS)
            .map(|r| r.trim_end().to_owned())
            .collect();
        Snapshot {
            rows,
            cursor: self.cursor(),
            title: self.parser.callbacks().title.clone(),
            alternate_screen: screen.alternate_screen(),
            cursor_hidden: screen.hide_cursor(),
            application_cursor: screen.application_cursor(),
            highlights: highlights(screen),
        }
    }
}

/// Runs of reverse-video cells with text in them.
fn highlights(screen: &vt100::Screen) -> Vec<Highlight> {
    let mut out = Vec::new();
    for row in 0..ROWS {
        let mut run: Option<(u16, String)> = None;
        for col in 0..=COLS {
            let cell = (col < COLS)
                .then(|| screen.cell(row, col))
                .flatten()
                .filter(|c| c.inverse());
            match (cell, &mut run) {
                (Some(cell), Some((_, text))) => push_cell(text, cell),
                (Some(cell), None) => {
                    let mut text = String::new();
                    push_cell(&mut text, cell);
                    run = Some((col, text));
                }
                (None, Some(_)) => {
                    if let Some((start, text)) = run.take() {
                        let lead = text.chars().take_while(|c| *c == ' ').count() as u16;
                        let trimmed = text.trim();
                        if !trimmed.is_empty() && out.len() < MAX_HIGHLIGHTS {
                            out.push(Highlight {
                                row,
                                col: start + lead,
                                text: trimmed.to_owned(),
                            });
                        }
                    }
                }
                (None, None) => {}
            }
        }
    }
    out
}

fn push_cell(text: &mut String, cell: &vt100::Cell) {
    if cell.is_wide_continuation() {
        return;
    }
    match cell.contents() {
        "" => text.push(' '),
        c => text.push_str(c),
    }
}

/// The screen as it was at offset `end` of `log`, and the replay it came
/// from (without its bytes).
pub fn screen_at(log: &OutputLog, end: u64) -> (Snapshot, Replay) {
    let mut replay = replay(log, end);
    let mut term = Terminal::new();
    term.process(&replay.bytes);
    replay.bytes = Vec::new();
    (term.snapshot(), replay)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(bytes: &[u8]) -> Snapshot {
        let mut t = Terminal::new();
        t.process(bytes);
        t.snapshot()
    }

    #[test]
    fn positioned_text_lands_at_its_row_and_column() {
        let s =
            snap(b"\x1b[2J\x1b[5;10HMain Menu\x1b[7;12H\x1b[7m1. Boot \x1b[0m\x1b[8;12H2. Setup");
        assert_eq!(s.rows.len(), ROWS as usize);
        assert_eq!(s.rows[4], format!("{}Main Menu", " ".repeat(9)));
        assert_eq!(s.rows[6].trim(), "1. Boot");
        assert_eq!(s.rows[7].find("2. Setup"), Some(11));
        assert_eq!(s.cursor, Position { row: 7, col: 19 });
        assert_eq!(
            s.highlights,
            vec![Highlight {
                row: 6,
                col: 11,
                text: "1. Boot".into()
            }]
        );
    }

    #[test]
    fn title_and_modes() {
        let s = snap(b"\x1b]2;router setup\x07\x1b[?1049h\x1b[?1h\x1b[?25lx");
        assert_eq!(s.title.as_deref(), Some("router setup"));
        assert!(s.alternate_screen && s.application_cursor && s.cursor_hidden);
    }

    #[test]
    fn cursor_past_a_full_row_reports_the_last_column() {
        let mut t = Terminal::new();
        t.process(&[b'x'; COLS as usize]);
        assert_eq!(
            t.cursor(),
            Position {
                row: 0,
                col: COLS - 1
            }
        );
    }

    #[test]
    fn replay_starts_at_the_last_clear() {
        let bytes = b"old\r\n\x1b[2Jmid\x1b[H\x1b[2Jnew";
        let (at, clear) = replay_start(bytes);
        assert!(clear);
        assert_eq!(&bytes[at..], b"\x1b[H\x1b[2Jnew");
        assert_eq!(replay_start(b"\x1bcabc"), (0, true));
        assert_eq!(replay_start(b"no clear"), (0, false));
        // Without a clear, a long output is replayed from a line start.
        let mut long = vec![b'a'; FALLBACK_WINDOW as usize + 10];
        long.extend_from_slice(b"\r\nlast line");
        let (at, clear) = replay_start(&long);
        assert!(!clear);
        assert_eq!(&long[at..], b"last line");
    }

    #[test]
    fn screen_at_reads_the_log() {
        let log = OutputLog::new(1 << 20);
        log.append(b"boot noise\r\n\x1b[2J\x1b[3;1Hhello");
        let (s, r) = screen_at(&log, log.head());
        assert!(r.from_clear);
        assert_eq!(r.start, 12);
        assert_eq!(r.end, log.head());
        assert_eq!(s.rows[2], "hello");
        assert_eq!(s.rows[0], "");
    }

    #[test]
    fn cursor_key_mode_is_the_last_word() {
        let log = OutputLog::new(1 << 20);
        assert!(!application_cursor_at(&log, log.head()));
        log.append(b"\x1b[?1h\x1b[H\x1b[2Jmenu");
        assert!(application_cursor_at(&log, log.head()));
        log.append(b"\x1b[?1l");
        assert!(!application_cursor_at(&log, log.head()));
        log.append(b"\x1b[?1h");
        assert!(application_cursor_at(&log, log.head()));
        log.append(b"\x1bc");
        assert!(!application_cursor_at(&log, log.head()));
    }

    #[test]
    fn garbage_never_panics() {
        let mut t = Terminal::new();
        let junk: Vec<u8> = (0..20_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        t.process(&junk);
        t.process(b"\x1b[99999;99999H\x1b[99999Cx\x1b[6n");
        let s = t.snapshot();
        assert!(s.cursor.row < ROWS && s.cursor.col < COLS);
    }
}
