//! A router whose interface descriptions are multi-byte UTF-8, as a
//! synchronous state machine. The device driver writes what it prints one
//! byte per write ([`Profile::Utf8Slow`](super::Profile::Utf8Slow)), so every
//! character arrives cut into pieces.

use super::cli::{Edited, Keys, LineEditor, crlf_lines, split_words};

/// The hostname.
pub const HOSTNAME: &str = "edge-1";

/// A router with a Cisco-like CLI at `edge-1#` whose `show interfaces
/// description` names places in several scripts ([`descriptions_lines`]).
///
/// [`feed`](Self::feed) takes the bytes it receives and appends what it
/// sends back. It starts silent; the first RETURN shows `edge-1#`.
/// Commands: `show interfaces description`, `terminal length N` (accepted,
/// it never pages); anything else gets IOS' `% Invalid input detected at
/// '^' marker.`.
#[derive(Debug, Default)]
pub struct Utf8Router {
    keys: Keys,
    /// The command line typed so far.
    editor: LineEditor,
}

impl Utf8Router {
    /// A router printing nothing until it receives something.
    pub fn new() -> Utf8Router {
        Utf8Router::default()
    }

    /// The prompt.
    pub fn prompt(&self) -> String {
        format!("{HOSTNAME}#")
    }

    /// Consumes `input`, bytes the router received on its console, and
    /// appends to `out` what it sends back in reply.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &byte in input {
            let Some(key) = self.keys.key(byte) else {
                continue;
            };
            if let Edited::Line(line) = self.editor.key(key, out) {
                out.extend(self.run(&line));
                out.extend_from_slice(self.prompt().as_bytes());
            }
        }
    }

    /// The output of one command line.
    fn run(&self, line: &[u8]) -> Vec<u8> {
        let words: Vec<String> = split_words(line).iter().map(|w| w.str()).collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        match words.as_slice() {
            [] => Vec::new(),
            ["show", "interfaces", "description"] | ["sh", "int", "desc"] => {
                crlf_lines(descriptions_lines())
            }
            ["terminal", "length", n] if n.parse::<u16>().is_ok() => Vec::new(),
            _ => {
                let at = self.prompt().len();
                format!(
                    "{:at$}^\r\n% Invalid input detected at '^' marker.\r\n\r\n",
                    ""
                )
                .into_bytes()
            }
        }
    }
}

/// The exact lines (without line ends) of `show interfaces description`:
/// two- to four-byte UTF-8 characters in every line.
pub fn descriptions_lines() -> Vec<String> {
    [
        "Interface                      Status         Protocol Description",
        "Gi0/0/0                        up             up       Zürich–Genève ✓",
        "Gi0/0/1                        up             up       São Paulo ↔ Reykjavík",
        "Gi0/0/2                        admin down     down     Łódź – Kraków (reserve)",
        "Gi0/0/3                        up             up       東京 ↔ 大阪 uplink",
        "Gi0/0/4                        up             up       Αθήνα – Θεσσαλονίκη",
        "Gi0/0/5                        down           down     Київ ⇄ Львів 🚧",
        "Gi0/0/6                        up             up       Montréal ✈ Québec",
        "Te0/1/0                        up             up       Core → Ålesund 🚀 100G",
    ]
    .map(String::from)
    .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(router: &mut Utf8Router, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        router.feed(input, &mut out);
        out
    }

    #[test]
    fn descriptions_are_multi_byte_utf8() {
        let mut router = Utf8Router::new();
        assert_eq!(send(&mut router, b"\r"), b"\r\nedge-1#");
        let out = send(&mut router, b"show interfaces description\r");
        let text = String::from_utf8(out).unwrap();
        let lines = descriptions_lines();
        assert_eq!(
            text,
            format!(
                "show interfaces description\r\n{}edge-1#",
                String::from_utf8(crlf_lines(&lines)).unwrap()
            )
        );
        for width in [2, 3, 4] {
            assert!(
                text.chars().any(|c| c.len_utf8() == width),
                "a {width}-byte character"
            );
        }
        let bad = String::from_utf8(send(&mut router, b"show clock\r")).unwrap();
        assert!(bad.contains("% Invalid input detected"));
        assert!(send(&mut router, b"terminal length 0\r").ends_with(b"\r\nedge-1#"));
    }

    #[test]
    fn typed_utf8_is_echoed_as_received() {
        let mut router = Utf8Router::new();
        assert_eq!(send(&mut router, "é".as_bytes()), "é".as_bytes());
    }
}
