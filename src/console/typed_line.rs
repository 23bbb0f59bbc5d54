//! The line a person is typing at a console under a command policy,
//! followed key by key, so that it can be judged at Enter before the
//! device runs it.
//!
//! The keys go to the device as they are typed (its echo is what the
//! person sees), and this tracker keeps the same line the device builds
//! from them. Only keys whose effect on the line is certain are taken:
//! text, backspace, Ctrl-U (kill the line) and Ctrl-C (abandon it). A key
//! that edits the line in a way the tracker cannot follow (a tab that
//! completes a word, arrows and Ctrl-P that recall history, `?` that
//! shows help on a network CLI, other control characters) is refused
//! before it reaches the device, as the MCP tools refuse keys and partial
//! lines under a policy.

use crate::access::policy::CliMode;

/// Ctrl-U: kills the line on IOS, NX-OS, EOS, Junos, ProCurve and
/// readline (vtysh, bash), so a refused line is cleared with it.
pub const KILL_LINE: u8 = 0x15;
/// Ctrl-C: abandons the line (and interrupts a running command).
const INTERRUPT: u8 = 0x03;
/// The longest line followed: a device's command line is shorter.
pub const MAX_TYPED_BYTES: usize = 2048;

/// Where a line began: the mode the device's prompt showed before its
/// first key, and whether that prompt asked for a password (whose answer
/// the device does not run, so it is not judged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineStart {
    /// The device's mode.
    pub mode: CliMode,
    /// The prompt asked for a password.
    pub secret: bool,
}

/// What one typed byte means for the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// It edits the line as the tracker follows it: send it on.
    Edit,
    /// It ends the line: judge [`TypedLine::take`] before sending it on.
    Enter,
    /// It cannot be judged: refuse it, saying what it is.
    Unjudged(&'static str),
}

/// The line being typed.
#[derive(Debug, Default)]
pub struct TypedLine {
    text: Vec<u8>,
    start: Option<LineStart>,
}

impl TypedLine {
    /// Whether no key of a line was typed yet (the next one begins it,
    /// and the door notes its [`LineStart`] first).
    pub fn is_new(&self) -> bool {
        self.start.is_none()
    }

    /// Begins the line at `start`.
    pub fn begin(&mut self, start: LineStart) {
        self.start = Some(start);
    }

    /// The text typed so far.
    #[cfg(test)]
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// Follows byte `b`; `cli` is a network CLI's syntax (where `?` asks
    /// for help), else a shell's.
    pub fn key(&mut self, b: u8, cli: bool) -> Key {
        let secret = self.start.is_some_and(|s| s.secret);
        match b {
            b'\r' | b'\n' => Key::Enter,
            0x08 | 0x7f => {
                self.text.pop();
                Key::Edit
            }
            KILL_LINE | INTERRUPT => {
                self.text.clear();
                Key::Edit
            }
            // An answer to a password prompt is read, never run.
            _ if secret => {
                if self.text.len() < MAX_TYPED_BYTES {
                    self.text.push(b);
                }
                Key::Edit
            }
            b'?' if cli => Key::Unjudged(
                "'?', which makes the device show help and keep the line for the next Enter",
            ),
            b'\t' => Key::Unjudged("a tab, which completes a word on the device"),
            0x1b => Key::Unjudged(
                "an escape sequence (an arrow key, which moves in the line or recalls history)",
            ),
            0x00..=0x1f => {
                Key::Unjudged("a control character, which edits or recalls the line on the device")
            }
            _ if self.text.len() >= MAX_TYPED_BYTES => {
                Key::Unjudged("a line longer than a device's command line")
            }
            _ => {
                self.text.push(b);
                Key::Edit
            }
        }
    }

    /// The finished line and where it began; the next key begins another.
    pub fn take(&mut self) -> (String, LineStart) {
        let text = String::from_utf8_lossy(&std::mem::take(&mut self.text)).into_owned();
        let start = self.start.take().unwrap_or(LineStart {
            mode: CliMode::Unknown,
            secret: false,
        });
        (text, start)
    }

    /// Forgets the line (it was refused and cleared on the device).
    pub fn clear(&mut self) {
        self.text.clear();
        self.start = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(keys: &[u8], cli: bool) -> (TypedLine, Vec<Key>) {
        let mut line = TypedLine::default();
        line.begin(LineStart {
            mode: CliMode::Exec,
            secret: false,
        });
        let keys = keys.iter().map(|&b| line.key(b, cli)).collect();
        (line, keys)
    }

    #[test]
    fn text_backspace_and_kill_line_make_the_line_the_device_makes() {
        let (mut line, keys) = typed(b"relo\x7f\x7f\x7f\x7fshow clock", true);
        assert!(keys.iter().all(|k| *k == Key::Edit));
        assert_eq!(line.text(), b"show clock");
        assert_eq!(line.key(b'\r', true), Key::Enter);
        assert_eq!(line.take().0, "show clock");
        assert!(line.is_new());

        let (line, _) = typed(b"reload\x15show ver\x08\x08\x08ver", true);
        assert_eq!(line.text(), b"show ver");
        let (line, _) = typed(b"reload\x03", true);
        assert_eq!(line.text(), b"");
    }

    #[test]
    fn keys_that_edit_out_of_sight_are_refused() {
        for key in [b'\t', 0x1b, 0x10, 0x0e, 0x12, 0x04, 0x1a] {
            let (_, keys) = typed(&[b'r', key], true);
            assert!(matches!(keys[1], Key::Unjudged(_)), "{key:#x}");
        }
        let (_, keys) = typed(b"reload ?", true);
        assert!(matches!(keys[7], Key::Unjudged(_)));
        // A shell has no help key: `?` is a glob's.
        let (line, keys) = typed(b"ls ?.txt", false);
        assert!(keys.iter().all(|k| *k == Key::Edit));
        assert_eq!(line.text(), b"ls ?.txt");
    }

    #[test]
    fn a_password_may_hold_any_printable_character() {
        let mut line = TypedLine::default();
        line.begin(LineStart {
            mode: CliMode::Unknown,
            secret: true,
        });
        for &b in b"p?ss\tw\x1b" {
            assert_eq!(line.key(b, true), Key::Edit);
        }
        assert!(line.take().1.secret);
    }

    #[test]
    fn a_line_is_bounded() {
        let long = vec![b'x'; MAX_TYPED_BYTES + 1];
        let (line, keys) = typed(&long, true);
        assert!(matches!(keys[MAX_TYPED_BYTES], Key::Unjudged(_)));
        assert_eq!(line.text().len(), MAX_TYPED_BYTES);
    }
}
