//! The line editor of every simulated command line: typed bytes echoed and
//! kept, backspace rubbed out, RETURN handing the line over. What the other
//! control keys do is left to the device.

use std::mem;

use super::keys::Key;
use super::text::spaces;

/// Ctrl-U, which rubs out the whole line (IOS, Junos, readline).
pub const KILL_LINE: u8 = 0x15;

/// What backspace prints on most consoles: back, blank, back.
pub const RUBOUT: &[u8] = b"\x08 \x08";

/// What a key did at the line editor, for the device to act on.
#[derive(Debug, PartialEq, Eq)]
pub enum Edited {
    /// Nothing for the device to do: the key was typed, rubbed out or
    /// ignored.
    Nothing,
    /// RETURN: CR LF is echoed and this is the line typed; the editor is
    /// empty again.
    Line(Vec<u8>),
    /// A control key the editor leaves to the device (Ctrl-C, Ctrl-Z,
    /// TAB…).
    Control(u8),
}

/// The command line (or password) being typed at a prompt.
#[derive(Debug)]
pub struct LineEditor {
    line: Vec<u8>,
    rubout: &'static [u8],
}

impl Default for LineEditor {
    fn default() -> Self {
        LineEditor::with_rubout(RUBOUT)
    }
}

impl LineEditor {
    /// An empty line whose backspace prints `rubout` (bash prints
    /// `\x08 ESC[K`, most consoles [`RUBOUT`]).
    pub fn with_rubout(rubout: &'static [u8]) -> LineEditor {
        LineEditor {
            line: Vec::new(),
            rubout,
        }
    }

    /// The line typed so far.
    pub fn line(&self) -> &[u8] {
        &self.line
    }

    /// A key at the prompt, echoed.
    pub fn key(&mut self, key: Key, out: &mut Vec<u8>) -> Edited {
        match key {
            Key::Return => self.accept(out),
            Key::Erase => {
                if self.line.pop().is_some() {
                    out.extend_from_slice(self.rubout);
                }
                Edited::Nothing
            }
            Key::Char(byte) => {
                self.type_byte(byte, out);
                Edited::Nothing
            }
            Key::Control(KILL_LINE) => {
                for _ in self.line.drain(..) {
                    out.extend_from_slice(self.rubout);
                }
                Edited::Nothing
            }
            Key::Control(byte) => Edited::Control(byte),
        }
    }

    /// A key at a password prompt: nothing typed is echoed.
    pub fn secret_key(&mut self, key: Key, out: &mut Vec<u8>) -> Edited {
        match key {
            Key::Return => self.accept(out),
            Key::Erase => {
                self.line.pop();
                Edited::Nothing
            }
            Key::Char(byte) => {
                self.line.push(byte);
                Edited::Nothing
            }
            Key::Control(byte) => Edited::Control(byte),
        }
    }

    /// RETURN: the cursor to a new line, the line handed over.
    fn accept(&mut self, out: &mut Vec<u8>) -> Edited {
        out.extend_from_slice(b"\r\n");
        Edited::Line(mem::take(&mut self.line))
    }

    /// Types `byte` at the end of the line and echoes it.
    pub fn type_byte(&mut self, byte: u8, out: &mut Vec<u8>) {
        self.line.push(byte);
        out.push(byte);
    }

    /// Types `byte` on a screen `width` columns wide (0: no wrapping),
    /// after a prompt `margin` columns wide: at the last column a space
    /// and `\r` make the terminal wrap (the space lands on the next row,
    /// where the next byte overwrites it).
    pub fn type_wrapping(&mut self, byte: u8, margin: usize, width: usize, out: &mut Vec<u8>) {
        self.type_byte(byte, out);
        let column = margin + self.line.len();
        if width > 0 && column.is_multiple_of(width) {
            out.extend_from_slice(b" \r");
        }
    }

    /// Moves the cursor back to byte `at` of the line, over what follows
    /// without erasing it, and drops that from the line: a completed word
    /// is typed again over it.
    pub fn back_to(&mut self, at: usize, out: &mut Vec<u8>) {
        let at = at.min(self.line.len());
        out.extend(std::iter::repeat_n(0x08, self.line.len() - at));
        self.line.truncate(at);
    }

    /// Drops the line without printing anything (Ctrl-Z leaving a mode).
    pub fn clear(&mut self) {
        self.line.clear();
    }

    /// Ctrl-C: the line is dropped and `^C` ends the row; the device
    /// prints its prompt after.
    pub fn interrupt(&mut self, out: &mut Vec<u8>) {
        self.line.clear();
        out.extend_from_slice(b"^C\r\n");
    }

    /// Ctrl-L: blanks `columns` columns of the cursor's row and draws
    /// `prompt` and the line again.
    pub fn redraw(&self, prompt: &[u8], columns: usize, out: &mut Vec<u8>) {
        out.push(b'\r');
        out.extend(spaces(columns));
        out.push(b'\r');
        out.extend_from_slice(prompt);
        out.extend_from_slice(&self.line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(editor: &mut LineEditor, keys: &[Key], out: &mut Vec<u8>) -> Vec<Edited> {
        keys.iter().map(|&key| editor.key(key, out)).collect()
    }

    #[test]
    fn echoes_rubs_out_and_hands_over_the_line() {
        let mut editor = LineEditor::default();
        let mut out = Vec::new();
        let edits = keys(
            &mut editor,
            &[
                Key::Erase,
                Key::Char(b'a'),
                Key::Char(b'b'),
                Key::Erase,
                Key::Control(0x1a),
                Key::Char(b'c'),
                Key::Return,
            ],
            &mut out,
        );
        assert_eq!(out, b"ab\x08 \x08c\r\n");
        assert_eq!(edits[4], Edited::Control(0x1a));
        assert_eq!(edits[6], Edited::Line(b"ac".to_vec()));
        assert!(editor.line().is_empty());
    }

    #[test]
    fn ctrl_u_rubs_out_the_whole_line() {
        let mut editor = LineEditor::default();
        let mut out = Vec::new();
        let edits = keys(
            &mut editor,
            &[
                Key::Char(b'r'),
                Key::Char(b'e'),
                Key::Control(KILL_LINE),
                Key::Char(b's'),
            ],
            &mut out,
        );
        assert_eq!(out, b"re\x08 \x08\x08 \x08s");
        assert_eq!(edits[2], Edited::Nothing);
        assert_eq!(editor.line(), b"s");
    }

    #[test]
    fn secrets_are_not_echoed() {
        let mut editor = LineEditor::default();
        let mut out = Vec::new();
        for key in [Key::Char(b'p'), Key::Char(b'w'), Key::Erase, Key::Erase] {
            editor.secret_key(key, &mut out);
        }
        editor.secret_key(Key::Char(b'x'), &mut out);
        assert_eq!(
            editor.secret_key(Key::Return, &mut out),
            Edited::Line(b"x".to_vec())
        );
        assert_eq!(out, b"\r\n");
    }

    #[test]
    fn wraps_at_the_screen_width_and_redraws() {
        let mut editor = LineEditor::with_rubout(b"\x08\x1b[K");
        let mut out = Vec::new();
        for &byte in b"abcd" {
            editor.type_wrapping(byte, 2, 5, &mut out);
        }
        assert_eq!(out, b"abc \rd");
        out.clear();
        editor.back_to(1, &mut out);
        editor.key(Key::Erase, &mut out);
        assert_eq!(out, b"\x08\x08\x08\x08\x1b[K");
        editor.type_byte(b'z', &mut out);
        out.clear();
        editor.redraw(b"> ", 3, &mut out);
        assert_eq!(out, b"\r   \r> z");
        out.clear();
        editor.interrupt(&mut out);
        assert_eq!(out, b"^C\r\n");
        assert!(editor.line().is_empty());
    }
}
