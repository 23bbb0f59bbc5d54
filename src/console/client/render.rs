//! What the console client prints besides the device's bytes: its own
//! messages, each on a line of its own as `[serialgate: ...]`, so that they
//! are never mistaken for device output; every string the server supplies
//! escaped and bounded, so that a hostile server (or a port or client
//! name) cannot send terminal escapes through a message; and repeats of
//! the same complaint held back until something else is printed, so that
//! holding a key while watching does not flood the screen. Sans I/O: bytes
//! to write come out, the session writes them.

use crate::console::protocol::{Participant, PortSummary};
use crate::port::{Holder, PortState};

/// The most characters of one server-supplied string that are shown.
pub(crate) const SHOWN_MAX: usize = 200;

/// A server-supplied string made safe to print: control characters (C0,
/// DEL, C1: what starts a terminal escape or moves the cursor) as `\xNN`,
/// cut to [`SHOWN_MAX`] characters with `…` when longer.
pub(crate) fn shown(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(SHOWN_MAX * 4));
    for (i, c) in s.chars().enumerate() {
        if i == SHOWN_MAX {
            out.push('…');
            break;
        }
        if c.is_control() {
            let code = u32::from(c);
            if code <= 0xff {
                out.push_str(&format!("\\x{code:02x}"));
            } else {
                out.push('?');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Where the cursor is and what was said last; turns messages into bytes.
#[derive(Debug)]
pub(crate) struct Render {
    /// The last byte written was a line feed (or nothing was written).
    at_line_start: bool,
    /// The last message printed, if nothing was printed since: what a
    /// quiet message is not repeated after.
    last_message: Option<String>,
}

impl Default for Render {
    fn default() -> Self {
        Render::new()
    }
}

impl Render {
    /// A screen whose cursor is at the start of a line (the person just
    /// pressed Enter on the command).
    pub(crate) fn new() -> Render {
        Render {
            at_line_start: true,
            last_message: None,
        }
    }

    /// Whether the cursor is at the start of a line.
    #[cfg(test)]
    pub(crate) fn at_line_start(&self) -> bool {
        self.at_line_start
    }

    /// Device output about to be written as it is.
    pub(crate) fn output(&mut self, bytes: &[u8]) {
        if let Some(&last) = bytes.last() {
            self.at_line_start = last == b'\n';
            self.last_message = None;
        }
    }

    /// One message on a line of its own: `\r\n` first unless the cursor is
    /// at a line start, then `[serialgate: text]\r\n`. `text` is the
    /// client's own words with server strings passed through [`shown`];
    /// any control character left is shown as `?` all the same.
    pub(crate) fn message(&mut self, text: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len() + 18);
        if !self.at_line_start {
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"[serialgate: ");
        for c in text.chars() {
            let mut buf = [0u8; 4];
            let c = if c.is_control() { '?' } else { c };
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
        out.extend_from_slice(b"]\r\n");
        self.at_line_start = true;
        self.last_message = Some(text.to_owned());
        out
    }

    /// A message that is not repeated while it is the last thing printed
    /// (a refused key, typing while spying): `None` when held back.
    pub(crate) fn quiet_message(&mut self, text: &str) -> Option<Vec<u8>> {
        if self.last_message.as_deref() == Some(text) {
            return None;
        }
        Some(self.message(text))
    }

    /// Several messages, one line each.
    pub(crate) fn messages<S: AsRef<str>>(&mut self, texts: &[S]) -> Vec<u8> {
        let mut out = Vec::new();
        for text in texts {
            out.extend(self.message(text.as_ref()));
        }
        out
    }
}

/// A holder as a person reads it: `who (since T)`.
pub(crate) fn holder(holder: &Holder) -> String {
    format!("{} (since {})", shown(&holder.who), shown(&holder.since))
}

/// A participant as a person reads it: `who (since T)`, or `who
/// (spying, since T)`.
pub(crate) fn participant(p: &Participant) -> String {
    let spying = if p.spy { "spying, " } else { "" };
    format!("{} ({spying}since {})", shown(&p.who), shown(&p.since))
}

/// What a state change means to the person watching `port`.
pub(crate) fn state(port: &str, state: PortState) -> String {
    let port = shown(port);
    match state {
        PortState::Opening => format!("{port} is opening"),
        PortState::Open => format!("{port} is open again"),
        PortState::Lost => format!(
            "{port} is lost (the device went away); the gateway reopens it and output resumes here"
        ),
        PortState::Reopening => format!("{port} is reopening"),
        PortState::Down => format!(
            "{port} is down (it kept failing right after opening); the gateway retries it slowly"
        ),
        PortState::Closed => format!("{port} is closed"),
    }
}

/// The answer to `who`, one message per line.
pub(crate) fn who(watchers: &[Participant], holder_now: Option<&Holder>) -> Vec<String> {
    let mut lines = Vec::with_capacity(watchers.len() + 2);
    lines.push(match holder_now {
        Some(h) => format!("the write is held by {}", holder(h)),
        None => "nobody holds the write (Ctrl-] a takes it)".to_owned(),
    });
    if watchers.is_empty() {
        lines.push("nobody is watching".to_owned());
    } else {
        lines.push(format!("{} watching:", watchers.len()));
        lines.extend(watchers.iter().map(|p| format!("  {}", participant(p))));
    }
    lines
}

/// The table `serialgate console --list` prints: port, state, watchers,
/// holder, columns aligned, every server string escaped.
pub(crate) fn ports_table(ports: &[PortSummary]) -> String {
    let mut rows = vec![[
        "PORT".to_owned(),
        "STATE".to_owned(),
        "WATCHERS".to_owned(),
        "HOLDER".to_owned(),
    ]];
    for port in ports {
        let watchers = if port.watchers.is_empty() {
            "-".to_owned()
        } else {
            port.watchers
                .iter()
                .map(|p| shown(&p.who))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let holder_text = port.holder.as_ref().map_or_else(|| "-".to_owned(), holder);
        rows.push([
            shown(&port.name),
            port.state.as_str().to_owned(),
            watchers,
            holder_text,
        ]);
    }
    let mut widths = [0usize; 3];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        for (cell, w) in row.iter().zip(widths) {
            out.push_str(cell);
            out.extend(std::iter::repeat_n(' ', w - cell.chars().count() + 2));
        }
        out.push_str(&row[3]);
        out.push('\n');
    }
    if ports.is_empty() {
        out.push_str("(no ports)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_strings_lose_their_escapes() {
        assert_eq!(shown("alice on console"), "alice on console");
        assert_eq!(
            shown("evil\x1b]0;pwned\x07\x1b[2J\r\n\u{9b}31m"),
            "evil\\x1b]0;pwned\\x07\\x1b[2J\\x0d\\x0a\\x9b31m"
        );
        assert_eq!(shown("José ü"), "José ü");
        assert_eq!(shown("\u{7f}"), "\\x7f");
        let long = "x".repeat(SHOWN_MAX + 50);
        let cut = shown(&long);
        assert_eq!(cut.chars().count(), SHOWN_MAX + 1);
        assert!(cut.ends_with('…'));
        // An escape cut in two by the bound still shows no raw ESC.
        let many = "\x1b".repeat(SHOWN_MAX * 2);
        assert!(!shown(&many).contains('\x1b'));
    }

    #[test]
    fn messages_go_on_their_own_line() {
        let mut r = Render::new();
        assert_eq!(r.message("hello"), b"[serialgate: hello]\r\n");
        r.output(b"SW1#");
        assert!(!r.at_line_start());
        assert_eq!(
            r.message("sw1 is lost"),
            b"\r\n[serialgate: sw1 is lost]\r\n"
        );
        assert!(r.at_line_start());
        r.output(b"line\r\n");
        assert_eq!(r.message("x"), b"[serialgate: x]\r\n");
        r.output(b"");
        assert!(r.at_line_start(), "no bytes move nothing");
    }

    #[test]
    fn a_message_never_carries_a_control_character() {
        let mut r = Render::new();
        assert_eq!(r.message("a\x1b[2Jb\nc"), b"[serialgate: a?[2Jb?c]\r\n");
    }

    #[test]
    fn quiet_messages_are_not_repeated_until_something_else_is_printed() {
        let mut r = Render::new();
        let busy = "busy: session 3 holds the write";
        assert!(r.quiet_message(busy).is_some());
        assert!(r.quiet_message(busy).is_none());
        assert!(r.quiet_message(busy).is_none());
        r.output(b"x");
        assert_eq!(
            r.quiet_message(busy).as_deref(),
            Some(&b"\r\n[serialgate: busy: session 3 holds the write]\r\n"[..])
        );
        r.message("someone joined");
        assert!(r.quiet_message(busy).is_some());
        assert!(r.quiet_message("another").is_some());
        assert!(r.quiet_message(busy).is_some());
    }

    fn summary(name: &str, holder: Option<Holder>, watchers: &[&str]) -> PortSummary {
        PortSummary {
            name: name.to_owned(),
            state: PortState::Open,
            watchers: watchers
                .iter()
                .enumerate()
                .map(|(i, w)| Participant {
                    session: i as u64,
                    who: (*w).to_owned(),
                    spy: false,
                    since: "2025-01-01T10:00:00Z".to_owned(),
                })
                .collect(),
            holder,
        }
    }

    #[test]
    fn the_port_table_is_aligned_and_escaped() {
        let h = Holder {
            session: 3,
            who: "session 3 (client claude-code, token lab)".to_owned(),
            since: "2025-01-01T10:00:00Z".to_owned(),
            token: String::new(),
            config_token: false,
        };
        let table = ports_table(&[
            summary("sw1", Some(h), &["alice on console (unix)"]),
            summary("r\x1b[31m2", None, &[]),
        ]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "PORT        STATE  WATCHERS                 HOLDER"
        );
        assert_eq!(
            lines[1],
            "sw1         open   alice on console (unix)  \
             session 3 (client claude-code, token lab) (since 2025-01-01T10:00:00Z)"
        );
        assert_eq!(lines[2], "r\\x1b[31m2  open   -                        -");
        assert_eq!(
            ports_table(&[]),
            "PORT  STATE  WATCHERS  HOLDER\n(no ports)\n"
        );
    }
}
