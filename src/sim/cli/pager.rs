//! Output held back by a pager until a key asks for more.

/// Output held back by a pager: `text[pos..]` is still to be printed.
#[derive(Debug)]
pub struct Pending {
    text: Vec<u8>,
    pos: usize,
}

impl Pending {
    /// All of `text` still to print.
    pub fn new(text: Vec<u8>) -> Pending {
        Pending { text, pos: 0 }
    }

    /// Appends up to `lines` more lines to `out`.
    pub fn print_lines(&mut self, lines: usize, out: &mut Vec<u8>) {
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

    /// Everything is printed.
    pub fn done(&self) -> bool {
        self.pos == self.text.len()
    }

    /// How much is printed, in percent of the bytes (Junos' pager).
    pub fn percent(&self) -> usize {
        (self.pos * 100).checked_div(self.text.len()).unwrap_or(100)
    }

    /// Lines of the text (for a pager that wants to know if it fits).
    pub fn line_count(&self) -> usize {
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
}
