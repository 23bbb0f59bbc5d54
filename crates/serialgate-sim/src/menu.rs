//! A full-screen BIOS/BMC setup menu on a serial console, as a synchronous
//! state machine: bytes in, bytes out, no I/O.
//!
//! It draws like such firmware does over a VT100: clear the screen
//! (`ESC[2J`), put each piece of text at its place (`ESC[row;colH`), show
//! the selected item in reverse video (`ESC[7m`), and on an arrow key
//! redraw only the two items that changed.

/// Rows of the screen the menu draws for.
pub const ROWS: u16 = 24;
/// Columns of the screen the menu draws for.
pub const COLUMNS: u16 = 80;
/// The title on the first row.
pub const TITLE: &str = "serialgate BMC Setup Utility - Version 2.22.1289";
/// The menu's items, one per row from [`FIRST_ITEM_ROW`].
pub const ITEMS: [&str; 6] = [
    "System Information",
    "Boot Options",
    "Network Settings",
    "Serial Console Redirection",
    "Security",
    "Save Changes and Exit",
];
/// The row (1-based) of the first item.
pub const FIRST_ITEM_ROW: u16 = 5;
/// The column (1-based) where items start.
pub const ITEM_COLUMN: u16 = 5;
/// Width of an item's bar (the item padded with spaces).
pub const ITEM_WIDTH: usize = 32;
/// The row (1-based) of the status line that says what was opened.
pub const STATUS_ROW: u16 = 20;
/// The help on the last row.
pub const HELP: &str = "Up/Down: Select   Enter: Open   Ctrl-L: Redraw";
/// Asks the terminal where its cursor is (DSR 6); the answer is
/// `ESC[row;colR`.
pub const CURSOR_QUERY: &[u8] = b"\x1b[6n";

/// Where the input is in an escape sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    /// Not in one.
    None,
    /// After ESC.
    Esc,
    /// After `ESC O` (application-mode arrows).
    Ss3,
    /// After `ESC [`, with the parameter bytes so far (at most a few).
    Csi { len: u8 },
}

/// A BIOS/BMC setup screen as seen over serial console redirection.
///
/// It powers on dark; the first byte it receives starts it (and is
/// otherwise ignored, unless it begins an escape sequence): it asks the
/// terminal for the cursor position once ([`CURSOR_QUERY`]) and draws the
/// whole screen at once, without waiting for an answer. An answer
/// (`ESC[24;80R`) is taken and makes it draw the whole screen again, so it
/// looks right whether or not the terminal answers. Up and down arrows
/// (`ESC[A`/`ESC[B`, or `ESC OA`/`ESC OB`) move the reverse-video
/// selection, redrawing the two items; RETURN writes `Selected: ITEM` on
/// the status row; Ctrl-L redraws everything.
#[derive(Debug)]
pub struct BiosMenu {
    started: bool,
    selected: usize,
    escape: Escape,
    /// Parameter bytes of the CSI sequence being read.
    params: [u8; 16],
    /// The cursor position the terminal reported, if it did.
    reported: Option<(u16, u16)>,
}

impl Default for BiosMenu {
    fn default() -> Self {
        BiosMenu::new()
    }
}

impl BiosMenu {
    /// A menu that has not started yet.
    pub fn new() -> BiosMenu {
        BiosMenu {
            started: false,
            selected: 0,
            escape: Escape::None,
            params: [0; 16],
            reported: None,
        }
    }

    /// The index of the selected item in [`ITEMS`].
    pub fn selected(&self) -> usize {
        self.selected
    }

    /// The cursor position (row, column) the terminal answered with, if
    /// it did.
    pub fn reported(&self) -> Option<(u16, u16)> {
        self.reported
    }

    /// Consumes `input`, bytes the menu received, and appends to `out`
    /// what it sends back.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &byte in input {
            if !self.started {
                self.started = true;
                out.extend_from_slice(CURSOR_QUERY);
                self.draw(out);
                if byte != 0x1b {
                    continue;
                }
            }
            self.byte(byte, out);
        }
    }

    fn byte(&mut self, byte: u8, out: &mut Vec<u8>) {
        match self.escape {
            Escape::None => match byte {
                0x1b => self.escape = Escape::Esc,
                b'\r' | b'\n' => self.open(out),
                0x0c => self.draw(out),
                _ => {}
            },
            Escape::Esc => {
                self.escape = match byte {
                    b'[' => Escape::Csi { len: 0 },
                    b'O' => Escape::Ss3,
                    _ => Escape::None,
                };
            }
            Escape::Ss3 => {
                self.escape = Escape::None;
                self.arrow(byte, out);
            }
            Escape::Csi { len } => {
                if (0x30..=0x3f).contains(&byte) {
                    if usize::from(len) < self.params.len() {
                        self.params[usize::from(len)] = byte;
                    }
                    self.escape = Escape::Csi {
                        len: len.saturating_add(1),
                    };
                    return;
                }
                self.escape = Escape::None;
                let len = usize::from(len).min(self.params.len());
                if byte == b'R' {
                    self.reported = cursor_report(&self.params[..len]);
                    self.draw(out);
                } else if len == 0 {
                    self.arrow(byte, out);
                }
            }
        }
    }

    /// Up (`A`) or down (`B`).
    fn arrow(&mut self, byte: u8, out: &mut Vec<u8>) {
        let next = match byte {
            b'A' => self.selected.checked_sub(1),
            b'B' => Some(self.selected + 1).filter(|&n| n < ITEMS.len()),
            _ => None,
        };
        if let Some(next) = next {
            let previous = std::mem::replace(&mut self.selected, next);
            draw_item(previous, false, out);
            draw_item(next, true, out);
            park(out);
        }
    }

    /// RETURN: says what was opened on the status row.
    fn open(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(
            format!(
                "\x1b[{STATUS_ROW};{ITEM_COLUMN}H\x1b[2KSelected: {}",
                ITEMS[self.selected]
            )
            .as_bytes(),
        );
        park(out);
    }

    /// The whole screen.
    fn draw(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"\x1b[0m\x1b[2J\x1b[H");
        let title_column = (usize::from(COLUMNS) - TITLE.len()) / 2 + 1;
        out.extend_from_slice(format!("\x1b[1;{title_column}H\x1b[1m{TITLE}\x1b[0m").as_bytes());
        out.extend_from_slice(format!("\x1b[2;1H{}", "=".repeat(usize::from(COLUMNS))).as_bytes());
        for item in 0..ITEMS.len() {
            draw_item(item, item == self.selected, out);
        }
        out.extend_from_slice(format!("\x1b[{ROWS};1H{HELP}").as_bytes());
        park(out);
    }
}

/// Draws one item at its row, in reverse video if selected.
fn draw_item(item: usize, selected: bool, out: &mut Vec<u8>) {
    let row = FIRST_ITEM_ROW + item as u16;
    let video = if selected { "\x1b[7m" } else { "" };
    out.extend_from_slice(
        format!(
            "\x1b[{row};{ITEM_COLUMN}H{video}{:<ITEM_WIDTH$}\x1b[0m",
            ITEMS[item]
        )
        .as_bytes(),
    );
}

/// Parks the cursor at the bottom right, out of the way.
fn park(out: &mut Vec<u8>) {
    out.extend_from_slice(format!("\x1b[{ROWS};{COLUMNS}H").as_bytes());
}

/// The (row, column) of a cursor position report's parameters `row;col`.
fn cursor_report(params: &[u8]) -> Option<(u16, u16)> {
    let text = std::str::from_utf8(params).ok()?;
    let (row, column) = text.split_once(';')?;
    Some((row.parse().ok()?, column.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A VT100 screen that has seen `bytes`.
    fn screen(bytes: &[u8]) -> vt100::Parser {
        let size = |n| std::num::NonZeroU16::new(n).expect("non-zero");
        let mut parser = vt100::Parser::new(size(ROWS), size(COLUMNS), 0);
        parser.process(bytes);
        parser
    }

    fn row_text(parser: &vt100::Parser, row: u16) -> String {
        parser
            .screen()
            .contents_between(row, 0, row, COLUMNS)
            .trim_end()
            .to_owned()
    }

    fn is_reverse(parser: &vt100::Parser, item: usize) -> bool {
        let row = FIRST_ITEM_ROW - 1 + item as u16;
        parser
            .screen()
            .cell(row, ITEM_COLUMN - 1)
            .is_some_and(|c| c.inverse())
    }

    #[test]
    fn starts_on_the_first_byte_asking_for_the_cursor_once() {
        let mut menu = BiosMenu::new();
        let mut out = Vec::new();
        menu.feed(b"", &mut out);
        assert!(out.is_empty());
        menu.feed(b"\r", &mut out);
        assert!(out.starts_with(CURSOR_QUERY));
        assert_eq!(memchr::memmem::find_iter(&out, CURSOR_QUERY).count(), 1);
        assert!(memchr::memmem::find(&out, b"\x1b[2J").is_some());
        let parser = screen(&out);
        assert_eq!(row_text(&parser, 0).trim(), TITLE);
        assert_eq!(row_text(&parser, FIRST_ITEM_ROW - 1).trim(), ITEMS[0]);
        assert_eq!(row_text(&parser, ROWS - 1), HELP);
        assert!(is_reverse(&parser, 0) && !is_reverse(&parser, 1));
        // The waking RETURN opened nothing.
        assert_eq!(row_text(&parser, STATUS_ROW - 1), "");
        let mut more = Vec::new();
        menu.feed(b"\x0c", &mut more);
        assert!(!more.windows(4).any(|w| w == CURSOR_QUERY), "asked once");
    }

    #[test]
    fn arrows_move_the_reverse_video_selection() {
        let mut menu = BiosMenu::new();
        let mut out = Vec::new();
        menu.feed(b"\r\x1b[B\x1b[B\x1bOB\x1b[A", &mut out);
        assert_eq!(menu.selected(), 2);
        let parser = screen(&out);
        for item in 0..ITEMS.len() {
            assert_eq!(is_reverse(&parser, item), item == 2, "item {item}");
        }
        menu.feed(b"\x1b[A\x1b[A\x1b[A", &mut out);
        assert_eq!(menu.selected(), 0, "stops at the top");
        menu.feed(b"\r", &mut out);
        let parser = screen(&out);
        assert_eq!(
            row_text(&parser, STATUS_ROW - 1).trim(),
            format!("Selected: {}", ITEMS[0])
        );
    }

    #[test]
    fn an_answer_to_the_cursor_query_redraws_and_a_missing_one_does_not_matter() {
        let mut answered = BiosMenu::new();
        let mut out = Vec::new();
        answered.feed(b"\x1b[24;80R", &mut out);
        assert_eq!(answered.reported(), Some((24, 80)));
        assert_eq!(memchr::memmem::find_iter(&out, b"\x1b[2J").count(), 2);
        answered.feed(b"\x1b[B", &mut out);
        let with_answer = screen(&out).screen().contents();

        let mut silent = BiosMenu::new();
        let mut out = Vec::new();
        silent.feed(b" \x1b[B", &mut out);
        assert_eq!(silent.reported(), None);
        assert_eq!(screen(&out).screen().contents(), with_answer);
    }

    #[test]
    fn any_chunking_gives_the_same_bytes() {
        let script = b"\r\x1b[B\x1b[12;40R\x1bOB\r\x1b[A\x0c\x1b[B\x1b[B\r";
        let mut whole = Vec::new();
        BiosMenu::new().feed(script, &mut whole);
        for chunk in [1, 2, 3, 5] {
            let mut menu = BiosMenu::new();
            let mut out = Vec::new();
            for piece in script.chunks(chunk) {
                menu.feed(piece, &mut out);
            }
            assert!(out == whole, "chunks of {chunk}");
        }
    }
}
