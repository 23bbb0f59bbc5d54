//! The pager every simulated command line puts long output through: a
//! page, the vendor's `--More--`, then a key for the next page, the next
//! line or the end. A vendor spells its prompt and its erase its own way
//! ([`PagerStyle`]); the paging is the same.

use super::keys::{CTRL_C, Key};

/// How a vendor's pager looks and which keys end it.
#[derive(Clone, Copy, Debug)]
pub struct PagerStyle {
    /// The pager's prompt, given the share of the output shown (percent).
    pub prompt: fn(usize) -> Vec<u8>,
    /// What erases the pager's prompt after a key, given the prompt's
    /// length in bytes.
    pub erase: fn(usize) -> Vec<u8>,
    /// Which keys, besides space (a page) and RETURN (a line), end the
    /// output.
    pub quit: Quit,
    /// What follows the last page.
    pub last_page: LastPage,
}

/// The keys that end paged output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quit {
    /// Any key but space and RETURN (IOS).
    AnyOtherKey,
    /// `q`, `Q` and Ctrl-C; other keys are ignored.
    QOrCtrlC,
}

/// What a pager does once the last page is out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LastPage {
    /// The device's prompt follows at once.
    Prompt,
    /// The pager's prompt shows once more (at 100%) until a key; output
    /// that fits on one page is not paged at all (Junos).
    Pager,
}

/// Lines in a page on a screen `length` lines tall: all but the pager's
/// line, at least one; `None` for length 0, which turns paging off.
pub fn page_lines(length: usize) -> Option<usize> {
    (length > 0).then(|| (length - 1).max(1))
}

/// Paged output waiting at the pager's prompt for a key.
#[derive(Debug)]
pub struct Pager {
    style: PagerStyle,
    pending: Pending,
    /// Lines that space prints.
    page_lines: usize,
    /// Length of the pager's prompt on screen, which the erase covers.
    prompt_len: usize,
}

/// Where paged output is after a key.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paged {
    /// The pager waits for another key.
    More,
    /// The output is all out, or ended: the device prints its prompt.
    Done,
}

impl Pager {
    /// Prints `text`: all of it when `page_lines` is `None`, else its first
    /// page and, if the style wants it, the pager's prompt. Returns the
    /// pager when it waits for a key; `None` when the device's prompt is
    /// next.
    pub fn start(
        style: PagerStyle,
        text: Vec<u8>,
        page_lines: Option<usize>,
        out: &mut Vec<u8>,
    ) -> Option<Pager> {
        let mut pending = Pending::new(text);
        let fits = |lines| style.last_page == LastPage::Pager && pending.line_count() <= lines;
        let page_lines = match page_lines {
            Some(lines) if !fits(lines) => lines,
            _ => {
                pending.print_all(out);
                return None;
            }
        };
        pending.print_lines(page_lines, out);
        let mut pager = Pager {
            style,
            pending,
            page_lines,
            prompt_len: 0,
        };
        match pager.after_page(out) {
            Paged::More => Some(pager),
            Paged::Done => None,
        }
    }

    /// A key at the pager's prompt: space for a page, RETURN for a line,
    /// a quitting key to end. The prompt is erased first; other keys are
    /// ignored and print nothing.
    pub fn key(&mut self, key: Key, out: &mut Vec<u8>) -> Paged {
        let lines = match key {
            Key::Char(b' ') => self.page_lines,
            Key::Return => 1,
            Key::Char(b'q' | b'Q') | Key::Control(CTRL_C) => 0,
            _ if self.style.quit == Quit::AnyOtherKey => 0,
            _ => return Paged::More,
        };
        out.extend((self.style.erase)(self.prompt_len));
        if lines == 0 || self.pending.done() {
            return Paged::Done;
        }
        self.pending.print_lines(lines, out);
        self.after_page(out)
    }

    /// After a page: the pager's prompt, unless the output is all out and
    /// the style ends there.
    fn after_page(&mut self, out: &mut Vec<u8>) -> Paged {
        if self.style.last_page == LastPage::Prompt && self.pending.done() {
            return Paged::Done;
        }
        let prompt = (self.style.prompt)(self.pending.percent());
        self.prompt_len = prompt.len();
        out.extend(prompt);
        Paged::More
    }
}

/// Output held back by a pager: `text[pos..]` is still to be printed.
#[derive(Debug)]
struct Pending {
    text: Vec<u8>,
    pos: usize,
}

impl Pending {
    /// All of `text` still to print.
    fn new(text: Vec<u8>) -> Pending {
        Pending { text, pos: 0 }
    }

    /// Appends up to `lines` more lines to `out`.
    fn print_lines(&mut self, lines: usize, out: &mut Vec<u8>) {
        for _ in 0..lines {
            let rest = &self.text[self.pos..];
            if rest.is_empty() {
                break;
            }
            let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
            out.extend_from_slice(&rest[..end]);
            self.pos += end;
        }
    }

    /// Appends all that is left to `out`.
    fn print_all(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.text[self.pos..]);
        self.pos = self.text.len();
    }

    /// Everything is printed.
    fn done(&self) -> bool {
        self.pos == self.text.len()
    }

    /// How much is printed, in percent of the bytes (for a prompt that
    /// shows it).
    fn percent(&self) -> usize {
        (self.pos * 100).checked_div(self.text.len()).unwrap_or(100)
    }

    /// Lines of the text (for a pager that wants to know if it fits).
    fn line_count(&self) -> usize {
        memchr::memchr_iter(b'\n', &self.text).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_prints_lines_and_percent() {
        let mut pending = Pending::new(b"a\r\nb\r\nc\r\nd\r\n".to_vec());
        assert_eq!(pending.line_count(), 4);
        let mut out = Vec::new();
        pending.print_lines(1, &mut out);
        assert_eq!(out, b"a\r\n");
        assert_eq!(pending.percent(), 25);
        pending.print_lines(9, &mut out);
        assert!(pending.done());
        assert_eq!(pending.percent(), 100);
        assert_eq!(Pending::new(Vec::new()).percent(), 100);
    }

    const STYLE: PagerStyle = PagerStyle {
        prompt: |percent| format!("<{percent}>").into_bytes(),
        erase: |len| vec![b'~'; len],
        quit: Quit::QOrCtrlC,
        last_page: LastPage::Prompt,
    };

    fn text(lines: usize) -> Vec<u8> {
        (0..lines)
            .flat_map(|i| format!("{i}\r\n").into_bytes())
            .collect()
    }

    /// Starts paging `lines` lines and presses `keys`; what was printed,
    /// and whether the pager still waits.
    fn page(style: PagerStyle, lines: usize, page: Option<usize>, keys: &[Key]) -> (String, bool) {
        let mut out = Vec::new();
        let mut pager = Pager::start(style, text(lines), page, &mut out);
        for &key in keys {
            if let Some(waiting) = &mut pager
                && waiting.key(key, &mut out) == Paged::Done
            {
                pager = None;
            }
        }
        (String::from_utf8_lossy(&out).into_owned(), pager.is_some())
    }

    #[test]
    fn pages_lines_and_quits() {
        assert_eq!(page_lines(0), None);
        assert_eq!(page_lines(1), Some(1));
        assert_eq!(page_lines(24), Some(23));
        assert_eq!(
            page(STYLE, 5, None, &[]),
            ("0\r\n1\r\n2\r\n3\r\n4\r\n".into(), false)
        );
        assert_eq!(page(STYLE, 2, Some(2), &[]), ("0\r\n1\r\n".into(), false));
        let keys = [Key::Char(b'x'), Key::Return, Key::Char(b' ')];
        assert_eq!(
            page(STYLE, 5, Some(2), &keys),
            ("0\r\n1\r\n<40>~~~~2\r\n<60>~~~~3\r\n4\r\n".into(), false)
        );
        let quit = [Key::Control(CTRL_C)];
        assert_eq!(
            page(STYLE, 5, Some(2), &quit),
            ("0\r\n1\r\n<40>~~~~".into(), false)
        );
        let any = PagerStyle {
            quit: Quit::AnyOtherKey,
            ..STYLE
        };
        assert!(!page(any, 5, Some(2), &[Key::Char(b'x')]).1);
        assert!(page(STYLE, 5, Some(2), &[Key::Char(b'x')]).1);
    }

    #[test]
    fn a_pager_that_waits_after_the_last_page() {
        let junos = PagerStyle {
            last_page: LastPage::Pager,
            ..STYLE
        };
        assert_eq!(
            page(junos, 3, Some(3), &[]),
            ("0\r\n1\r\n2\r\n".into(), false)
        );
        let (out, waiting) = page(junos, 4, Some(3), &[Key::Char(b' ')]);
        assert_eq!(out, "0\r\n1\r\n2\r\n<75>~~~~3\r\n<100>");
        assert!(waiting);
        let (out, waiting) = page(junos, 4, Some(3), &[Key::Char(b' '), Key::Char(b' ')]);
        assert!(out.ends_with("<100>~~~~~"));
        assert!(!waiting);
    }
}
