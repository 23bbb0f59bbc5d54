//! Stages 2-5 of the cleanup: a one-line terminal that turns what the
//! [`vte`] parser reports into finished lines.
//!
//! Only the current line is editable, as on a console scrolling at the
//! bottom of the screen: a line feed commits it. Committed lines are
//! trimmed and appended to the output at once, so memory is the output plus
//! one line.
//!
//! The echo of the command is the first line, as the device painted it:
//! retyped over backspaces (Junos completes `sh` + TAB to `show `), with
//! abbreviated words completed (`sh sys up` echoed as `show system
//! uptime`), and wrapped at the terminal width by the device, either with a
//! `\r\n` or with the ` \r` that forces a wrap on terminals that defer it
//! (the space lands on the next row, the `\r` returns to its start, the
//! next character overwrites the space). While the first rows read as the
//! beginning of the command they are held; they are dropped with the rest
//! of the echo, or written as ordinary lines once they turn out not to be
//! one.

use vte::{Params, Perform};

/// Farthest column that cursor movements reach (a terminal clamps at its
/// width; this bounds the padding a stray `ESC[9999C` can cause).
const MAX_COLUMN: usize = 1024;

/// The current line, the cursor and the committed text.
#[derive(Debug)]
pub(super) struct LineTerminal {
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
    /// Rows of the first line that read as the start of the echo, held
    /// until the echo is complete (dropped) or proven not to be (written).
    held: Vec<String>,
    /// Column where the current row starts: 0, or after a ` \r` wrap of
    /// the echo, where the wrapped row begins. `\r` returns here.
    row_start: usize,
}

impl LineTerminal {
    pub(super) fn new(command: Option<&str>) -> Self {
        let echo = command
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        LineTerminal {
            line: Vec::new(),
            col: 0,
            out: String::new(),
            written: false,
            blank_pending: 0,
            pager_line: false,
            echo,
            held: Vec::new(),
            row_start: 0,
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
            self.row_start = 0;
            self.pager_line = !erased;
        }
    }

    /// The blanks at the end of the current line, when it holds more than
    /// blanks: what trimming its end will remove (a prompt's `$ `).
    pub(super) fn trailing_blanks(&self) -> Option<String> {
        let end = self.line.iter().rposition(|c| !c.is_whitespace())? + 1;
        Some(self.line[end..].iter().collect())
    }

    /// Commits the last line and returns the text.
    pub(super) fn finish(mut self) -> String {
        self.newline();
        self.release_held();
        self.out
    }

    fn put(&mut self, c: char) {
        self.pager_line = false;
        // Appending at the end of the line is by far the common case.
        if self.col == self.line.len() {
            self.line.push(c);
        } else if self.col < self.line.len() {
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
        self.row_start = 0;
    }

    /// Commits the current line: to the output, or, while the echo is
    /// awaited, to the echo check.
    fn commit(&mut self) {
        let Some(command) = self.echo.as_deref() else {
            return write_line(self, None);
        };
        let blank = self.line.iter().all(|c| c.is_whitespace());
        if blank && self.held.is_empty() {
            // Blank lines before the echo: nothing to write yet.
            return;
        }
        let row: String = self.line.iter().collect();
        let joined = self.held.concat() + &row;
        if !blank && is_echo(joined.trim_end(), command) {
            self.held.clear();
            self.echo = None;
            return;
        }
        if !blank && is_echo_start(&joined, command) {
            self.held.push(row);
            return;
        }
        self.release_held();
        write_line(self, Some(&row));
    }

    /// The echo did not come: rows held as its start are ordinary lines.
    fn release_held(&mut self) {
        self.echo = None;
        for row in std::mem::take(&mut self.held) {
            write_line(self, Some(&row));
        }
    }

    /// A ` \r` that wraps the echo at the terminal width: the cursor is
    /// just past a space at the end of the line, and what precedes the
    /// space reads as the start of the command. The space is on the next
    /// row, whose start `\r` returns to.
    fn echo_wraps(&mut self) -> bool {
        let Some(command) = self.echo.as_deref() else {
            return false;
        };
        if self.col == 0 || self.col != self.line.len() || self.line[self.col - 1] != ' ' {
            return false;
        }
        let before: String = self.line[..self.col - 1].iter().collect();
        if !is_echo_start(&(self.held.concat() + &before), command) {
            return false;
        }
        self.col -= 1;
        self.row_start = self.col;
        true
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

/// Writes a line (`row`, or else the terminal's current line) to the output,
/// trimmed at the end; an empty one is written only if a non-empty line
/// follows.
fn write_line(term: &mut LineTerminal, row: Option<&str>) {
    let start = term.out.len();
    if term.written {
        term.out.push('\n');
        term.out
            .extend(std::iter::repeat_n('\n', term.blank_pending));
    }
    let text = term.out.len();
    match row {
        Some(row) => term.out.push_str(row.trim_end()),
        None => {
            let end = term
                .line
                .iter()
                .rposition(|c| !c.is_whitespace())
                .map_or(0, |p| p + 1);
            term.out.extend(&term.line[..end]);
        }
    }
    if term.out.len() == text {
        term.out.truncate(start);
        if term.written {
            term.blank_pending += 1;
        }
        return;
    }
    term.written = true;
    term.blank_pending = 0;
}

/// Whether the character before a command in a line lets it be the echo:
/// none (the line starts with it) or one that is not part of a word (the
/// end of a prompt: `SW1#`, `user@r1> `, `<HUAWEI>`).
fn ends_prompt(before: &str) -> bool {
    before
        .chars()
        .next_back()
        .is_none_or(|c| !c.is_alphanumeric() && c != '_')
}

/// Is `line` (the first non-empty line, trimmed at the end) the echo of
/// `command` (trimmed)? Either the whole line, or its end after a prompt
/// (`SW1#show clock`, `user@r1> show version`): the character before the
/// command must not be part of a word. Or, as a device that completes
/// words paints it, the same words each completed (`show system uptime`
/// for `sh sys up`), after a prompt.
fn is_echo(line: &str, command: &str) -> bool {
    let line = line.trim_start();
    if line == command {
        return true;
    }
    if let Some(before) = line.strip_suffix(command)
        && ends_prompt(before)
    {
        return true;
    }
    is_completed_echo(line, command)
}

/// Is `line` `command` with each word completed (`show system uptime` for
/// `sh sys up`, `show ` for `sh` + TAB), at the start of the line or after
/// a prompt?
fn is_completed_echo(line: &str, command: &str) -> bool {
    let wanted: Vec<&str> = command.split_whitespace().collect();
    let words: Vec<&str> = line.split_whitespace().collect();
    if wanted.is_empty() || words.len() < wanted.len() {
        return false;
    }
    let (prompt, typed) = words.split_at(words.len() - wanted.len());
    prompt.last().is_none_or(|p| ends_prompt(p))
        && typed.iter().zip(&wanted).all(|(w, c)| w.starts_with(c))
}

/// Longest command for which a wrapped echo is looked for: the check is
/// quadratic in its length.
const MAX_WRAPPED_ECHO: usize = 1024;

/// Does `text` (rows so far, untrimmed) end with a proper, non-empty
/// beginning of `command`, at its start or after a prompt? Then the rest
/// of the echo may follow on the next row.
fn is_echo_start(text: &str, command: &str) -> bool {
    if command.len() > MAX_WRAPPED_ECHO {
        return false;
    }
    let text = text.trim_start();
    command
        .char_indices()
        .skip(1)
        .map(|(end, _)| &command[..end])
        .any(|start| text.strip_suffix(start).is_some_and(ends_prompt))
}

/// The first parameter of a CSI sequence, 0 when absent.
fn first_param(params: &Params) -> usize {
    params
        .iter()
        .next()
        .and_then(|p| p.first().copied())
        .map_or(0, usize::from)
}

impl Perform for LineTerminal {
    fn print(&mut self, c: char) {
        if c != '\u{7f}' {
            self.put(c);
        }
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' | 0x0b | 0x0c => self.newline(),
            b'\r' if !self.echo_wraps() => self.col = self.row_start,
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
            // Column, and cursor position (whose row is this one: lines
            // are not addressed, ProCurve puts its prompt at `ESC[24;1H`).
            'G' => self.col = (self.row_start + n.max(1) - 1).min(MAX_COLUMN),
            'H' | 'f' => {
                let column = params.iter().nth(1).and_then(|p| p.first().copied());
                let column = column.map_or(1, usize::from).max(1);
                self.col = (self.row_start + column - 1).min(MAX_COLUMN);
            }
            'K' => self.erase_in_line(n),
            // Colours, vertical moves, screen erases, modes: nothing to
            // show on a line of text.
            _ => {}
        }
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], ignore: bool, byte: u8) {
        // NEL (ProCurve ends lines with it) and IND: a line feed.
        if !ignore && intermediates.is_empty() && matches!(byte, b'E' | b'D') {
            self.newline();
        }
    }
}
