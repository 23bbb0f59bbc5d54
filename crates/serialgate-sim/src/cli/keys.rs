//! Keys from received bytes: what a byte means at a command line, with one
//! RETURN for each line end however the terminal spells it.

/// What one received byte means at a command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// RETURN: CR, LF, CR LF or LF CR.
    Return,
    /// Backspace or DEL.
    Erase,
    /// A printable byte (or a byte of a UTF-8 character).
    Char(u8),
    /// Any other control byte (TAB, Ctrl-C, ESC…).
    Control(u8),
}

/// Tab, which completes a word.
pub const TAB: u8 = b'\t';
/// Ctrl-C, which drops the line or ends the pager.
pub const CTRL_C: u8 = 0x03;
/// Ctrl-L, which draws the line again.
pub const CTRL_L: u8 = 0x0c;
/// Ctrl-Z, which leaves a configuration mode.
pub const CTRL_Z: u8 = 0x1a;

/// Turns received bytes into [`Key`]s, so that the other half of a CR LF
/// or LF CR pair is not taken for a second RETURN.
#[derive(Debug, Default)]
pub struct Keys {
    line_end: Option<u8>,
}

impl Keys {
    /// The key `byte` is, or `None` for the second half of a line end.
    pub fn key(&mut self, byte: u8) -> Option<Key> {
        let is_line_end = byte == b'\r' || byte == b'\n';
        if let Some(previous) = self.line_end.take()
            && is_line_end
            && byte != previous
        {
            return None;
        }
        if is_line_end {
            self.line_end = Some(byte);
            return Some(Key::Return);
        }
        Some(match byte {
            0x08 | 0x7f => Key::Erase,
            b' '..=b'~' | 0x80.. => Key::Char(byte),
            _ => Key::Control(byte),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_take_one_return_per_line_end() {
        let mut keys = Keys::default();
        let got: Vec<Option<Key>> = b"a\r\n\n\r\r\x08\t".iter().map(|&b| keys.key(b)).collect();
        assert_eq!(
            got,
            [
                Some(Key::Char(b'a')),
                Some(Key::Return),
                None,
                Some(Key::Return),
                None,
                Some(Key::Return),
                Some(Key::Erase),
                Some(Key::Control(TAB)),
            ]
        );
    }
}
