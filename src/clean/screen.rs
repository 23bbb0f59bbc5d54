//! Stages 2-5 of the cleanup: a one-line terminal that turns what the
//! [`vte`] parser reports into finished lines.
//!
//! Only the current line is editable, as on a console scrolling at the
//! bottom of the screen: a line feed commits it. Committed lines are
//! trimmed and appended to the output at once, so memory is the output plus
//! one line.

use vte::{Params, Perform};

/// Farthest column that cursor movements reach (a terminal clamps at its
/// width; this bounds the padding a stray `ESC[9999C` can cause).
const MAX_COLUMN: usize = 1024;

/// The current line, the cursor and the committed text.
#[derive(Debug)]
pub(super) struct Screen {
    /// Cells of the current line.
    line: Vec<char>,
    /// Cursor column in `line` (may be past its end after a cursor move).
    col: usize,
    /// Committed lines, joined with `\n`, without trailing empty lines.
    out: String,
    /// A non-empty line has been written to `out`.
    written: bool,
    /// Empty lines seen since the last written line: written only if a
    /// non-empty line follows, so trailing empty lines vanish.
    blank_pending: usize,
    /// A pager prompt that was not erased owned the current line: the line
    /// end that closes it is not a line of output.
    pager_line: bool,
    /// The command whose echo may be the first non-empty line; taken when
    /// that line is committed.
    echo: Option<String>,
}

impl Screen {
    pub(super) fn new(command: Option<&str>) -> Self {
        let echo = command
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        Screen {
            line: Vec::new(),
            col: 0,
            out: String::new(),
            written: false,
            blank_pending: 0,
            pager_line: false,
            echo,
        }
    }

    pub(super) fn reserve(&mut self, additional: usize) {
        self.out.reserve(additional);
    }

    /// A pager prompt (and its erase, if `erased`) was removed here. The
    /// device erased the prompt back to where it started: a line holding
    /// nothing but the blanks before the prompt (Huawei's two spaces) is
    /// cleared, so the next page starts at column 0; a line with text
    /// keeps it. A prompt that was not erased had the line to itself, so
    /// the line end after it goes with it.
    pub(super) fn pager_break(&mut self, erased: bool) {
        if self.line.iter().all(|c| c.is_whitespace()) {
            self.line.clear();
            self.col = 0;
            self.pager_line = !erased;
        }
    }

    /// Commits the last line and returns the text.
    pub(super) fn finish(mut self) -> String {
        self.newline();
        self.out
    }

    fn put(&mut self, c: char) {
        self.pager_line = false;
        if self.col < self.line.len() {
            self.line[self.col] = c;
        } else {
            self.line.resize(self.col, ' ');
            self.line.push(c);
        }
        self.col += 1;
    }

    fn newline(&mut self) {
        if !std::mem::take(&mut self.pager_line) {
            self.commit();
        }
        self.line.clear();
        self.col = 0;
    }

    fn commit(&mut self) {
        let end = self
            .line
            .iter()
            .rposition(|c| !c.is_whitespace())
            .map_or(0, |p| p + 1);
        if end == 0 {
            if self.written {
                self.blank_pending += 1;
            }
            return;
        }
        let mark = self.out.len();
        if self.written {
            self.out.push('\n');
            self.out
                .extend(std::iter::repeat_n('\n', self.blank_pending));
        }
        let start = self.out.len();
        self.out.extend(&self.line[..end]);
        if let Some(command) = self.echo.take()
            && is_echo(&self.out[start..], &command)
        {
            self.out.truncate(mark);
            return;
        }
        self.written = true;
        self.blank_pending = 0;
    }

    /// Erase in line (`ESC[K`, `ESC[1K`, `ESC[2K`).
    fn erase_in_line(&mut self, mode: usize) {
        match mode {
            0 => self.line.truncate(self.col),
            1 => {
                let upto = (self.col + 1).min(self.line.len());
                self.line[..upto].fill(' ');
            }
            2 => self.line.clear(),
            _ => {}
        }
    }
}

/// Is `line` (the first non-empty line, trimmed at the end) the echo of
/// `command` (trimmed)? Either the whole line, or its end after a prompt
/// (`SW1#show clock`, `user@r1> show version`): the character before the
/// command must not be part of a word.
fn is_echo(line: &str, command: &str) -> bool {
    let line = line.trim_start();
    if line == command {
        return true;
    }
    match line.strip_suffix(command) {
        Some(before) => before
            .chars()
            .next_back()
            .is_some_and(|c| !c.is_alphanumeric() && c != '_'),
        None => false,
    }
}

/// The first parameter of a CSI sequence, 0 when absent.
fn first_param(params: &Params) -> usize {
    params
        .iter()
        .next()
        .and_then(|p| p.first().copied())
        .map_or(0, usize::from)
}

impl Perform for Screen {
    fn print(&mut self, c: char) {
        if c != '\u{7f}' {
            self.put(c);
        }
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' | 0x0b | 0x0c => self.newline(),
            b'\r' => self.col = 0,
            0x08 => self.col = self.col.saturating_sub(1),
            b'\t' => self.put('\t'),
            // C1 controls: vte reports both raw bytes 0x80-0x9f (invalid
            // UTF-8) and the code points U+0080-U+009F here.
            0x80..=0x9f => self.put(char::REPLACEMENT_CHARACTER),
            // NUL, BEL and the other C0 controls show nothing.
            _ => {}
        }
    }

    fn csi_dispatch(&mut self, params: &Params, intermediates: &[u8], ignore: bool, action: char) {
        if ignore || !intermediates.is_empty() {
            return;
        }
        let n = first_param(params);
        match action {
            'D' => self.col = self.col.saturating_sub(n.max(1)),
            'C' => self.col = (self.col + n.max(1)).min(MAX_COLUMN),
            'G' => self.col = (n.max(1) - 1).min(MAX_COLUMN),
            'K' => self.erase_in_line(n),
            // Colours, vertical moves, screen erases, modes: nothing to
            // show on a line of text.
            _ => {}
        }
    }
}
