//! A Huawei VRP router console (sysname `HUAWEI`) as a synchronous state
//! machine: bytes in, bytes out, no I/O.

use super::cli::{
    CTRL_Z, Edited, Key, Keys, LastPage, LineEditor, Miss, Paged, Pager, PagerStyle, Quit, Word,
    crlf_lines, page_lines, resolve, spaces, split_words,
};

/// The system name a router starts with.
pub const SYSNAME: &str = "HUAWEI";
/// The screen length a console session starts with: pages of 23 lines and
/// the pager's line.
pub const DEFAULT_SCREEN_LENGTH: usize = 24;
/// Interfaces in `display current-configuration`.
pub const CONFIGURATION_INTERFACES: usize = 48;
/// The pager's prompt.
pub const MORE_PROMPT: &[u8] = b"  ---- More ----";

/// What the pager prints after a key: 42 columns back, 42 spaces, 42
/// columns back.
pub fn more_erase() -> Vec<u8> {
    let mut erase = b"\x1b[42D".to_vec();
    erase.extend(spaces(42));
    erase.extend_from_slice(b"\x1b[42D");
    erase
}

/// VRP's pager: [`MORE_PROMPT`], erased by [`more_erase`]; space for a
/// page, RETURN for a line, `q` or Ctrl-C to stop.
const PAGER: PagerStyle = PagerStyle {
    prompt: |_| MORE_PROMPT.to_vec(),
    erase: |_| more_erase(),
    quit: Quit::QOrCtrlC,
    last_page: LastPage::Prompt,
};

/// The view, which decides the prompt and the commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum View {
    /// User view: `<HUAWEI>`.
    User,
    /// System view: `[HUAWEI]`.
    System,
    /// An interface view: `[HUAWEI-GigabitEthernet0/0/1]`.
    Interface(String),
}

/// What the console waits for next.
#[derive(Debug)]
enum Input {
    /// A command line, echoed and editable.
    Line,
    /// A key at the pager; the rest of the output waits.
    More(Pager),
}

/// Commands of every view.
const ANY_VIEW: &[&str] = &["display", "quit", "return", "screen-length"];
/// Commands of the user view.
const USER_VIEW: &[&str] = &["display", "quit", "return", "screen-length", "system-view"];
/// Commands of the system view.
const SYSTEM_VIEW: &[&str] = &[
    "display",
    "interface",
    "quit",
    "return",
    "screen-length",
    "sysname",
];
/// What `display` shows.
const DISPLAY: &[&str] = &["current-configuration", "version"];

/// A Huawei router as seen on its console port, running VRP.
///
/// [`feed`](Self::feed) takes the bytes the router receives and appends what
/// it sends back, byte for byte as VRP prints them: the echo, output
/// through the `  ---- More ----` pager (erased with `ESC[42D`, 42 spaces,
/// `ESC[42D` after a key; `q` ends the output and the prompt is drawn over
/// the erased pager), and the prompt: `<HUAWEI>`, `[HUAWEI]` after
/// `system-view`, `[HUAWEI-GigabitEthernet0/0/1]` in an interface. It starts
/// silent; the first RETURN shows the prompt. Commands (unique
/// abbreviations work): `display current-configuration`
/// ([`current_configuration_lines`]), `display version`, `screen-length 0
/// temporary`, `system-view`, `sysname`, `interface`, `quit`, `return`
/// (and Ctrl-Z). Unknown words get `Error: Unrecognized command found at
/// '^' position.` under a `^` marker.
#[derive(Debug)]
pub struct HuaweiRouter {
    sysname: String,
    view: View,
    input: Input,
    keys: Keys,
    /// The command line typed so far.
    editor: LineEditor,
    /// `screen-length`; 0: no paging.
    length: usize,
}

impl Default for HuaweiRouter {
    fn default() -> Self {
        HuaweiRouter::new()
    }
}

impl HuaweiRouter {
    /// A router in the user view, printing nothing until it receives
    /// something.
    pub fn new() -> HuaweiRouter {
        HuaweiRouter {
            sysname: SYSNAME.to_owned(),
            view: View::User,
            input: Input::Line,
            keys: Keys::default(),
            editor: LineEditor::default(),
            length: DEFAULT_SCREEN_LENGTH,
        }
    }

    /// A router with `options` (not yet used: the same router as [`new`](Self::new)).
    pub fn with_options(_options: &crate::SimOptions) -> HuaweiRouter {
        HuaweiRouter::new()
    }
    /// The configuration in force; not modelled yet.
    pub fn configuration(&self) -> Vec<String> {
        Vec::new()
    }
    /// Whether the router is in a configuration mode.
    pub fn in_config_mode(&self) -> bool {
        self.view != View::User
    }

    /// The current view.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// The prompt of the current view.
    pub fn prompt(&self) -> String {
        let name = &self.sysname;
        match &self.view {
            View::User => format!("<{name}>"),
            View::System => format!("[{name}]"),
            View::Interface(interface) => format!("[{name}-{interface}]"),
        }
    }

    /// Consumes `input`, bytes the router received on its console, and
    /// appends to `out` what it sends back in reply.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &byte in input {
            let Some(key) = self.keys.key(byte) else {
                continue;
            };
            match self.input {
                Input::Line => self.edit(key, out),
                Input::More(_) => self.more_key(key, out),
            }
        }
    }

    /// A key at the command line.
    fn edit(&mut self, key: Key, out: &mut Vec<u8>) {
        match self.editor.key(key, out) {
            Edited::Line(line) => self.execute(&line, out),
            Edited::Control(CTRL_Z) if self.view != View::User => {
                self.editor.clear();
                self.view = View::User;
                out.extend_from_slice(b"\r\n");
                self.print_prompt(out);
            }
            _ => {}
        }
    }

    /// A key at the pager; at the end of the output the prompt is drawn
    /// over the erased pager.
    fn more_key(&mut self, key: Key, out: &mut Vec<u8>) {
        if let Input::More(pager) = &mut self.input
            && pager.key(key, out) == Paged::Done
        {
            self.input = Input::Line;
            self.print_prompt(out);
        }
    }

    fn print_prompt(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.prompt().as_bytes());
    }

    /// Runs one command line.
    fn execute(&mut self, line: &[u8], out: &mut Vec<u8>) {
        let words = split_words(line);
        if words.is_empty() {
            return self.print_prompt(out);
        }
        let prompt_len = self.prompt().len();
        match self.command(&words) {
            Ok(text) => match Pager::start(PAGER, text, page_lines(self.length), out) {
                Some(pager) => self.input = Input::More(pager),
                None => self.print_prompt(out),
            },
            Err((column, error)) => {
                let caret = prompt_len + column;
                let message = match error {
                    Miss::Unknown => "Unrecognized command",
                    Miss::Ambiguous => "Ambiguous command",
                };
                out.extend_from_slice(
                    format!(
                        "{:caret$}^\r\nError: {message} found at '^' position.\r\n",
                        ""
                    )
                    .as_bytes(),
                );
                self.print_prompt(out);
            }
        }
    }

    /// A command in the current view: its output, or the column where it
    /// went wrong and why.
    fn command(&mut self, words: &[Word]) -> Result<Vec<u8>, (usize, Miss)> {
        let table = match self.view {
            View::User => USER_VIEW,
            View::System => SYSTEM_VIEW,
            View::Interface(_) => ANY_VIEW,
        };
        let first = resolve(words[0].text, table);
        // Interface views take any other configuration line.
        if first == Err(Miss::Unknown) && matches!(self.view, View::Interface(_)) {
            return Ok(Vec::new());
        }
        match first.map_err(|miss| (words[0].at, miss))? {
            "display" => {
                let what = word(words, 1, DISPLAY)?;
                no_more(words, 2)?;
                Ok(match what {
                    "version" => crlf_lines(VERSION),
                    _ => crlf_lines(current_configuration_lines()),
                })
            }
            "screen-length" => {
                let length = words
                    .get(1)
                    .and_then(|w| std::str::from_utf8(w.text).ok())
                    .and_then(|w| w.parse::<usize>().ok())
                    .filter(|&n| n <= 512)
                    .ok_or_else(|| incomplete_or_bad(words, 1))?;
                word(words, 2, &["temporary"])?;
                no_more(words, 3)?;
                self.length = length;
                Ok(b"Info: The configuration takes effect on the current user terminal interface only.\r\n".to_vec())
            }
            "system-view" => {
                no_more(words, 1)?;
                self.view = View::System;
                Ok(b"Enter system view, return user view with Ctrl+Z.\r\n".to_vec())
            }
            "sysname" => {
                let name = words.get(1).ok_or_else(|| incomplete_or_bad(words, 1))?;
                no_more(words, 2)?;
                self.sysname = name.str();
                Ok(Vec::new())
            }
            "interface" => {
                let name = words.get(1).ok_or_else(|| incomplete_or_bad(words, 1))?;
                no_more(words, 2)?;
                self.view = View::Interface(name.str());
                Ok(Vec::new())
            }
            "quit" => {
                no_more(words, 1)?;
                self.view = match self.view {
                    View::Interface(_) => View::System,
                    _ => View::User,
                };
                Ok(Vec::new())
            }
            _ => {
                no_more(words, 1)?;
                self.view = View::User;
                Ok(Vec::new())
            }
        }
    }
}

/// The keyword of `names` at `words[index]`.
fn word(
    words: &[Word],
    index: usize,
    names: &[&'static str],
) -> Result<&'static str, (usize, Miss)> {
    let word = words
        .get(index)
        .ok_or_else(|| incomplete_or_bad(words, index))?;
    resolve(word.text, names).map_err(|miss| (word.at, miss))
}

/// Where the marker goes when `words[index]` is missing or bad: under it,
/// or past the end of the line.
fn incomplete_or_bad(words: &[Word], index: usize) -> (usize, Miss) {
    match words.get(index) {
        Some(word) => (word.at, Miss::Unknown),
        None => {
            let last = words.last().expect("a command has a word");
            (last.at + last.text.len() + 1, Miss::Unknown)
        }
    }
}

/// Refuses words past the first `count`.
fn no_more(words: &[Word], count: usize) -> Result<(), (usize, Miss)> {
    match words.get(count) {
        Some(extra) => Err((extra.at, Miss::Unknown)),
        None => Ok(()),
    }
}

const VERSION: [&str; 6] = [
    "Huawei Versatile Routing Platform Software",
    "VRP (R) software, Version 8.180 (NE40E V800R011C00SPC200)",
    "Copyright (C) 2012-2019 Huawei Technologies Co., Ltd.",
    "HUAWEI NE40E-M2K uptime is 12 days, 3 hours, 4 minutes",
    "Patch Version: V800R011SPH120",
    "NE40E-M2K version information:",
];

/// The exact lines (without line ends) of `display current-configuration`:
/// from `!Software Version` to `return`, [`CONFIGURATION_INTERFACES`]
/// interfaces with unique descriptions, many pages long.
pub fn current_configuration_lines() -> Vec<String> {
    let mut lines: Vec<String> = [
        "!Software Version V800R011C00SPC200",
        "!Last configuration was updated at 2024-03-01 08:00:00+00:00 by admin",
        "#",
        "sysname HUAWEI",
        "#",
        "set neid 1a2b3c",
        "#",
        "aaa",
        " local-user admin password irreversible-cipher $1c$Zb2M8f$",
        " local-user admin service-type terminal ssh",
        " local-user admin level 3",
        "#",
    ]
    .map(String::from)
    .to_vec();
    for i in 0..CONFIGURATION_INTERFACES {
        let port = i % 24;
        lines.extend([
            format!("interface GigabitEthernet0/{}/{port}", i / 24),
            " undo shutdown".to_owned(),
            format!(
                " description link-{:04} to agg-{:02}.lab.example.net GE0/0/{port} circuit CKT-{:06}",
                i + 1,
                1 + i % 8,
                300_000 + i
            ),
            format!(" ip address 10.{}.{port}.1 255.255.255.252", 100 + i / 24),
            " undo dcn".to_owned(),
            "#".to_owned(),
        ]);
    }
    lines.extend(
        [
            "interface LoopBack0",
            " ip address 192.0.2.11 255.255.255.255",
            "#",
            "ospf 1 router-id 192.0.2.11",
            " area 0.0.0.0",
            "  network 10.0.0.0 0.255.255.255",
            "#",
            "user-interface con 0",
            " authentication-mode aaa",
            "#",
            "return",
        ]
        .map(String::from),
    );
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(router: &mut HuaweiRouter, input: &str) -> String {
        let mut out = Vec::new();
        router.feed(input.as_bytes(), &mut out);
        String::from_utf8(out).expect("UTF-8")
    }

    fn erase() -> String {
        String::from_utf8(more_erase()).unwrap()
    }

    #[test]
    fn views_and_prompts() {
        let mut router = HuaweiRouter::new();
        assert_eq!(send(&mut router, ""), "");
        assert_eq!(send(&mut router, "\r"), "\r\n<HUAWEI>");
        assert_eq!(
            send(&mut router, "system-view\r"),
            "system-view\r\nEnter system view, return user view with Ctrl+Z.\r\n[HUAWEI]"
        );
        assert_eq!(
            send(&mut router, "interface GigabitEthernet0/0/1\r"),
            "interface GigabitEthernet0/0/1\r\n[HUAWEI-GigabitEthernet0/0/1]"
        );
        assert_eq!(
            send(&mut router, "undo shutdown\r"),
            "undo shutdown\r\n[HUAWEI-GigabitEthernet0/0/1]"
        );
        assert_eq!(send(&mut router, "quit\r"), "quit\r\n[HUAWEI]");
        assert_eq!(
            send(&mut router, "sysname CORE\r"),
            "sysname CORE\r\n[CORE]"
        );
        assert_eq!(send(&mut router, "\x1a"), "\r\n<CORE>");
        assert_eq!(router.view(), &View::User);
    }

    #[test]
    fn errors_point_at_the_word() {
        let mut router = HuaweiRouter::new();
        assert_eq!(
            send(&mut router, "dis foo\r"),
            "dis foo\r\n            ^\r\nError: Unrecognized command found at '^' position.\r\n<HUAWEI>"
        );
        assert_eq!(
            send(&mut router, "foo\r"),
            "foo\r\n        ^\r\nError: Unrecognized command found at '^' position.\r\n<HUAWEI>"
        );
        assert!(send(&mut router, "display\r").contains("Error: Unrecognized command"));
    }

    #[test]
    fn current_configuration_pages_with_erase() {
        let mut router = HuaweiRouter::new();
        send(&mut router, "\r");
        let mut text = send(&mut router, "display current-configuration\r");
        let mut pages = 1;
        while text.ends_with("  ---- More ----") {
            text += &send(&mut router, " ");
            pages += 1;
        }
        let lines = current_configuration_lines();
        assert!(lines.len() > 300);
        assert_eq!(pages, lines.len().div_ceil(23));
        assert!(text.ends_with("return\r\n<HUAWEI>"));
        let plain = text.replace(&format!("  ---- More ----{}", erase()), "");
        assert_eq!(
            plain,
            format!(
                "display current-configuration\r\n{}<HUAWEI>",
                String::from_utf8(crlf_lines(&lines)).unwrap()
            )
        );
    }

    #[test]
    fn pager_keys_and_screen_length() {
        let mut router = HuaweiRouter::new();
        send(&mut router, "\r");
        let lines = current_configuration_lines();
        let first = send(&mut router, "dis cur\r");
        assert!(
            first.ends_with(&format!("{}\r\n  ---- More ----", lines[22])),
            "{first:?}"
        );
        assert_eq!(send(&mut router, "x"), "", "other keys are ignored");
        assert_eq!(
            send(&mut router, "\r"),
            format!("{}{}\r\n  ---- More ----", erase(), lines[23])
        );
        assert_eq!(send(&mut router, "q"), format!("{}<HUAWEI>", erase()));
        assert_eq!(
            send(&mut router, "screen-length 0 temporary\r"),
            "screen-length 0 temporary\r\nInfo: The configuration takes effect on the current user terminal interface only.\r\n<HUAWEI>"
        );
        let all = send(&mut router, "display current-configuration\r");
        assert!(!all.contains("More"));
        assert!(all.ends_with("return\r\n<HUAWEI>"));
    }

    #[test]
    fn any_chunking_gives_the_same_bytes() {
        let script = "\rdis cur\r \r\rq\rsys\rinterface Gi0/0/1\rdescription x\x7fy\r\x1adis foo\rscreen-length 0 temp\rdis ver\r";
        let mut whole = Vec::new();
        HuaweiRouter::new().feed(script.as_bytes(), &mut whole);
        for chunk in [1, 2, 3, 7, 64] {
            let mut router = HuaweiRouter::new();
            let mut out = Vec::new();
            for piece in script.as_bytes().chunks(chunk) {
                router.feed(piece, &mut out);
            }
            assert!(out == whole, "chunks of {chunk}");
        }
    }
}
