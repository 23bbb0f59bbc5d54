//! Named keys to the bytes an xterm/VT100 keyboard sends for them, for
//! driving full-screen consoles (menus, ROMMON, BIOS setup, `vi`).
//!
//! Names are case-insensitive: `ctrl-a`…`ctrl-z` (also `ctrl+c`, `c-c`,
//! `^c`), `ctrl-@`, `ctrl-[`, `ctrl-\`, `ctrl-]`, `ctrl-^` (Cisco's escape,
//! Ctrl-Shift-6), `ctrl-_`, `esc`, `tab`, `shift-tab`, `enter` (CR), `lf`,
//! `backspace` (DEL, 0x7f, as xterm sends; `ctrl-h` is 0x08), `delete`,
//! `insert`, `up`/`down`/`left`/`right`, `home`/`end`, `pgup`/`pgdn`,
//! `f1`–`f12`, `space`, and `text:…` for literal text. A serial BREAK is a
//! line condition, not a key, and is not here.

/// How the cursor keys are encoded: DECCKM, set by the device with
/// `ESC[?1h` (application) and `ESC[?1l` (normal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorKeys {
    /// `ESC [ A`: what a terminal sends unless the device asked otherwise.
    Normal,
    /// `ESC O A`: what a terminal sends after `ESC[?1h` (curses programs).
    Application,
}

/// The prefix of a key that is literal text.
pub const TEXT_PREFIX: &str = "text:";

/// Every key name accepted, for error messages and tool descriptions.
pub const KEY_NAMES: &str = "ctrl-a..ctrl-z, ctrl-@, ctrl-[, ctrl-\\, ctrl-], ctrl-^, ctrl-_, \
esc, tab, shift-tab, enter (CR), lf, backspace (0x7f), delete, insert, up, down, left, right, \
home, end, pgup, pgdn, f1..f12, space, text:<literal text>";

/// Keys whose bytes do not depend on the cursor key mode.
const FIXED: &[(&[&str], &[u8])] = &[
    (&["esc", "escape"], b"\x1b"),
    (&["tab"], b"\t"),
    (&["shift-tab", "backtab"], b"\x1b[Z"),
    (&["enter", "return", "cr"], b"\r"),
    (&["lf", "linefeed", "newline"], b"\n"),
    (&["backspace", "bs"], b"\x7f"),
    (&["delete", "del"], b"\x1b[3~"),
    (&["insert", "ins"], b"\x1b[2~"),
    (&["pgup", "pageup", "page-up"], b"\x1b[5~"),
    (&["pgdn", "pagedown", "page-down"], b"\x1b[6~"),
    (&["space"], b" "),
    (&["f1"], b"\x1bOP"),
    (&["f2"], b"\x1bOQ"),
    (&["f3"], b"\x1bOR"),
    (&["f4"], b"\x1bOS"),
    (&["f5"], b"\x1b[15~"),
    (&["f6"], b"\x1b[17~"),
    (&["f7"], b"\x1b[18~"),
    (&["f8"], b"\x1b[19~"),
    (&["f9"], b"\x1b[20~"),
    (&["f10"], b"\x1b[21~"),
    (&["f11"], b"\x1b[23~"),
    (&["f12"], b"\x1b[24~"),
];

/// Keys encoded by DECCKM: the final byte after `ESC [` or `ESC O`.
const CURSOR: &[(&str, u8)] = &[
    ("up", b'A'),
    ("down", b'B'),
    ("right", b'C'),
    ("left", b'D'),
    ("home", b'H'),
    ("end", b'F'),
];

/// The byte of a control key, from the name after its `ctrl-` prefix.
fn control(rest: &str) -> Option<u8> {
    match rest.as_bytes() {
        [c @ b'a'..=b'z'] => Some(c - b'a' + 1),
        [b'@'] | [b'2'] => Some(0x00),
        b"space" => Some(0x00),
        [b'['] | [b'3'] => Some(0x1b),
        [b'\\'] | [b'4'] => Some(0x1c),
        [b']'] | [b'5'] => Some(0x1d),
        [b'^'] | [b'6'] => Some(0x1e),
        [b'_'] | [b'7'] | [b'/'] => Some(0x1f),
        [b'?'] | [b'8'] => Some(0x7f),
        _ => None,
    }
}

/// Whether a key's bytes depend on the cursor key mode (so the caller
/// knows whether it needs the device's DECCKM state).
pub fn is_cursor_key(name: &str) -> bool {
    let name = name.trim().to_ascii_lowercase();
    CURSOR.iter().any(|(n, _)| *n == name)
}

/// The literal text of a `text:` key (the prefix in any case).
fn strip_text_prefix(name: &str) -> Option<&str> {
    let prefix = name.get(..TEXT_PREFIX.len())?;
    prefix
        .eq_ignore_ascii_case(TEXT_PREFIX)
        .then(|| &name[TEXT_PREFIX.len()..])
}

/// The bytes of one named key, or `None` if the name is unknown.
pub fn key_bytes(name: &str, mode: CursorKeys) -> Option<Vec<u8>> {
    if let Some(text) = strip_text_prefix(name) {
        return Some(text.as_bytes().to_vec());
    }
    let lower = name.trim().to_ascii_lowercase();
    for prefix in ["ctrl-", "ctrl+", "control-", "c-", "^"] {
        if let Some(rest) = lower.strip_prefix(prefix)
            && let Some(b) = control(rest)
        {
            return Some(vec![b]);
        }
    }
    if let Some((_, bytes)) = FIXED.iter().find(|(names, _)| names.contains(&&*lower)) {
        return Some(bytes.to_vec());
    }
    CURSOR.iter().find(|(n, _)| *n == lower).map(|(_, last)| {
        let intro = match mode {
            CursorKeys::Normal => b'[',
            CursorKeys::Application => b'O',
        };
        vec![0x1b, intro, *last]
    })
}

/// Splits a space-separated key string (`"ctrl-c esc up enter"`) into
/// names. A `text:` key in this form ends at the next space: give keys as
/// a list for text holding spaces.
pub fn split_keys(keys: &str) -> Vec<String> {
    keys.split_whitespace().map(str::to_owned).collect()
}

/// The bytes of a sequence of keys, in order; an unknown name is an error
/// naming it and listing the valid ones.
pub fn keys_bytes(names: &[String], mode: CursorKeys) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        match key_bytes(name, mode) {
            Some(bytes) => out.extend_from_slice(&bytes),
            None => {
                return Err(format!(
                    "key {} ({name:?}) is not a key name; valid keys: {KEY_NAMES}",
                    i + 1
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str) -> Vec<u8> {
        key_bytes(name, CursorKeys::Normal).unwrap_or_else(|| panic!("{name} unknown"))
    }

    #[test]
    fn control_keys_are_the_c0_codes() {
        assert_eq!(k("ctrl-a"), [0x01]);
        assert_eq!(k("ctrl-c"), [0x03]);
        assert_eq!(k("ctrl-h"), [0x08]);
        assert_eq!(k("ctrl-z"), [0x1a]);
        assert_eq!(k("ctrl-@"), [0x00]);
        assert_eq!(k("ctrl-["), [0x1b]);
        assert_eq!(k("ctrl-\\"), [0x1c]);
        assert_eq!(k("ctrl-]"), [0x1d]);
        assert_eq!(k("ctrl-^"), [0x1e]);
        assert_eq!(k("ctrl-_"), [0x1f]);
        for (i, c) in ('a'..='z').enumerate() {
            assert_eq!(k(&format!("ctrl-{c}")), [i as u8 + 1]);
        }
    }

    #[test]
    fn control_spellings_and_case() {
        for name in ["CTRL-C", "Ctrl+c", "c-c", "^C", "control-c", " ctrl-c "] {
            assert_eq!(k(name), [0x03], "{name}");
        }
    }

    #[test]
    fn named_keys_are_what_xterm_sends() {
        assert_eq!(k("esc"), b"\x1b");
        assert_eq!(k("tab"), b"\t");
        assert_eq!(k("shift-tab"), b"\x1b[Z");
        assert_eq!(k("enter"), b"\r");
        assert_eq!(k("Return"), b"\r");
        assert_eq!(k("lf"), b"\n");
        assert_eq!(k("backspace"), b"\x7f");
        assert_eq!(k("delete"), b"\x1b[3~");
        assert_eq!(k("insert"), b"\x1b[2~");
        assert_eq!(k("pgup"), b"\x1b[5~");
        assert_eq!(k("pgdn"), b"\x1b[6~");
        assert_eq!(k("space"), b" ");
        assert_eq!(k("up"), b"\x1b[A");
        assert_eq!(k("down"), b"\x1b[B");
        assert_eq!(k("right"), b"\x1b[C");
        assert_eq!(k("left"), b"\x1b[D");
        assert_eq!(k("home"), b"\x1b[H");
        assert_eq!(k("end"), b"\x1b[F");
    }

    #[test]
    fn function_keys() {
        let want: [&[u8]; 12] = [
            b"\x1bOP",
            b"\x1bOQ",
            b"\x1bOR",
            b"\x1bOS",
            b"\x1b[15~",
            b"\x1b[17~",
            b"\x1b[18~",
            b"\x1b[19~",
            b"\x1b[20~",
            b"\x1b[21~",
            b"\x1b[23~",
            b"\x1b[24~",
        ];
        for (i, bytes) in want.iter().enumerate() {
            assert_eq!(k(&format!("f{}", i + 1)), *bytes, "f{}", i + 1);
        }
        assert_eq!(key_bytes("f13", CursorKeys::Normal), None);
    }

    #[test]
    fn application_cursor_mode_changes_only_cursor_keys() {
        let app = |n| key_bytes(n, CursorKeys::Application).unwrap();
        assert_eq!(app("up"), b"\x1bOA");
        assert_eq!(app("left"), b"\x1bOD");
        assert_eq!(app("home"), b"\x1bOH");
        assert_eq!(app("end"), b"\x1bOF");
        assert_eq!(app("pgup"), b"\x1b[5~");
        assert_eq!(app("f1"), b"\x1bOP");
        assert!(is_cursor_key("UP") && !is_cursor_key("pgup"));
    }

    #[test]
    fn text_is_literal_and_case_kept() {
        assert_eq!(k("text:Hello World"), b"Hello World");
        assert_eq!(k("text:"), b"");
        assert_eq!(k("text:ctrl-c"), b"ctrl-c");
        assert_eq!(k("TEXT: x"), b" x");
    }

    #[test]
    fn sequences_and_unknown_names() {
        let names = split_keys("ctrl-c  esc up text:ok enter");
        assert_eq!(
            keys_bytes(&names, CursorKeys::Normal).unwrap(),
            b"\x03\x1b\x1b[Aok\r"
        );
        let e = keys_bytes(&split_keys("esc break"), CursorKeys::Normal).unwrap_err();
        assert!(e.contains("key 2 (\"break\")"), "{e}");
        assert!(e.contains("ctrl-a..ctrl-z"), "{e}");
        for bad in ["ctrl-", "ctrl-1", "ctrl-ab", "f0", "", "tex:x", "break"] {
            assert_eq!(key_bytes(bad, CursorKeys::Normal), None, "{bad:?}");
        }
    }
}
