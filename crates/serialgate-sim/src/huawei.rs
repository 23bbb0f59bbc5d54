//! A Huawei VRP router console (sysname `HUAWEI`) as a synchronous state
//! machine: bytes in, bytes out, no I/O.

mod brief;
mod config;

use super::cli::{
    CTRL_Z, Edited, Key, Keys, LastPage, LineEditor, Miss, Paged, Pager, PagerStyle, Quit, Word,
    crlf_lines, page_lines, resolve, spaces, split_words,
};
use super::options::{Credentials, SimOptions};
use config::Current;
pub use config::SYSNAME;

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
    /// Nothing on screen yet: a key brings the login (with a login set).
    Idle,
    /// The user name at `Username:`.
    Username,
    /// The password at `Password:`, not echoed; the user name typed.
    Password(Vec<u8>),
    /// The answer to `save`'s `Continue? [Y/N]:`.
    SaveConfirm,
}

/// Why VRP refuses a line, as its `Error:` line words it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Unrecognized,
    Incomplete,
    Ambiguous,
    /// A parameter of the right form naming nothing (a missing port).
    Wrong,
}

impl From<Miss> for Fault {
    fn from(miss: Miss) -> Fault {
        match miss {
            Miss::Unknown => Fault::Unrecognized,
            Miss::Ambiguous => Fault::Ambiguous,
        }
    }
}

/// Where a line went wrong (a column of the line) and why.
type Refusal = (usize, Fault);

/// Commands of the user view.
const USER_VIEW: &[&str] = &[
    "display",
    "quit",
    "return",
    "save",
    "screen-length",
    "system-view",
];
/// Commands of the system view.
const SYSTEM_VIEW: &[&str] = &[
    "aaa",
    "acl",
    "bgp",
    "clock",
    "display",
    "header",
    "info-center",
    "interface",
    "ip",
    "isis",
    "lldp",
    "ntp-service",
    "ospf",
    "quit",
    "return",
    "route-policy",
    "save",
    "screen-length",
    "snmp-agent",
    "stelnet",
    "sysname",
    "telnet",
    "undo",
    "user-interface",
    "vlan",
];
/// Commands of an interface view.
const INTERFACE_VIEW: &[&str] = &[
    "dcn",
    "description",
    "display",
    "duplex",
    "ip",
    "isis",
    "lldp",
    "mpls",
    "mtu",
    "negotiation",
    "ospf",
    "port",
    "quit",
    "return",
    "save",
    "screen-length",
    "shutdown",
    "speed",
    "statistic",
    "traffic-policy",
    "trust",
    "undo",
];
/// Interface types, as VRP names them.
const INTERFACE_TYPES: &[&str] = &["Eth-Trunk", "GigabitEthernet", "LoopBack", "NULL", "Vlanif"];
/// What `display` shows.
const DISPLAY: &[&str] = &[
    "current-configuration",
    "interface",
    "saved-configuration",
    "version",
];
/// What `save` asks.
pub const SAVE_QUESTION: &str =
    "Warning: The current configuration will be written to the device. Continue? [Y/N]:";
/// What a confirmed `save` prints.
pub const SAVE_DONE: &str = "Now saving the current configuration to the slot 1 ..\r\nInfo: Save the configuration successfully.\r\n";

/// A Huawei router as seen on its console port, running VRP.
///
/// [`feed`](Self::feed) takes the bytes the router receives and appends what
/// it sends back, byte for byte as VRP prints them: the echo, output
/// through the `  ---- More ----` pager (erased with `ESC[42D`, 42 spaces,
/// `ESC[42D` after a key; `q` ends the output and the prompt is drawn over
/// the erased pager), and the prompt: `<HUAWEI>`, `[HUAWEI]` after
/// `system-view`, `[HUAWEI-GigabitEthernet0/0/1]` in an interface. It starts
/// silent (or, with a login set, at `Username:` after a key); the first
/// RETURN shows the prompt. Commands (unique abbreviations work): `display
/// current-configuration` (the current configuration, at first
/// [`current_configuration_lines`]), `display saved-configuration`,
/// `display version`, `display interface brief` (the configured
/// interfaces and their states), `screen-length 0 temporary`, `system-view`,
/// `sysname`, `interface` with `description`, `ip address`, `shutdown` and
/// `undo`, other system-view lines, `save`, `quit`, `return` (and Ctrl-Z).
/// Refused lines get VRP's `Error: … found at '^' position.` under a `^`.
#[derive(Debug)]
pub struct HuaweiRouter {
    view: View,
    input: Input,
    keys: Keys,
    /// The command line typed so far.
    editor: LineEditor,
    /// `screen-length`; 0: no paging.
    length: usize,
    /// The configuration in force, which holds the sysname.
    current: Current,
    /// What `save` wrote.
    saved: Current,
    /// What the login accepts, if the console asks for one.
    login: Option<Credentials>,
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
        HuaweiRouter::with_options(&SimOptions::default())
    }

    /// A router with `options` (a login first).
    pub fn with_options(options: &SimOptions) -> HuaweiRouter {
        let current = Current::new(current_configuration_lines());
        HuaweiRouter {
            view: View::User,
            input: if options.login.is_some() {
                Input::Idle
            } else {
                Input::Line
            },
            keys: Keys::default(),
            editor: LineEditor::default(),
            length: DEFAULT_SCREEN_LENGTH,
            saved: current.clone(),
            current,
            login: options.login.clone(),
        }
    }

    /// The current view.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// Whether the router is in the system view or below.
    pub fn in_config_mode(&self) -> bool {
        self.view != View::User
    }

    /// The current configuration's lines.
    pub fn configuration(&self) -> Vec<String> {
        self.current.lines().to_vec()
    }

    /// The saved configuration's lines (what `save` wrote).
    pub fn saved_configuration(&self) -> Vec<String> {
        self.saved.lines().to_vec()
    }

    /// The prompt of the current view.
    pub fn prompt(&self) -> String {
        let name = self.current.sysname();
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
                Input::Idle => {
                    self.input = Input::Username;
                    out.extend_from_slice(b"\r\nLogin authentication\r\n\r\n\r\nUsername:");
                }
                Input::Username => {
                    if let Edited::Line(user) = self.editor.key(key, out) {
                        self.input = Input::Password(user);
                        out.extend_from_slice(b"Password:");
                    }
                }
                Input::Password(_) => self.password_key(key, out),
                Input::SaveConfirm => self.save_key(key, out),
            }
        }
    }

    /// A key at `Password:`: the login's pair gets the user view.
    fn password_key(&mut self, key: Key, out: &mut Vec<u8>) {
        let Edited::Line(password) = self.editor.secret_key(key, out) else {
            return;
        };
        let Input::Password(user) = std::mem::replace(&mut self.input, Input::Username) else {
            return;
        };
        if self
            .login
            .as_ref()
            .is_some_and(|login| login.accept(&user, &password))
        {
            self.input = Input::Line;
            self.view = View::User;
            self.print_prompt(out);
        } else {
            out.extend_from_slice(b"Error: Local authentication is rejected.\r\n\r\nUsername:");
        }
    }

    /// The answer to `save`'s question: `y` saves.
    fn save_key(&mut self, key: Key, out: &mut Vec<u8>) {
        if let Edited::Line(answer) = self.editor.key(key, out) {
            self.input = Input::Line;
            if matches!(&answer[..], b"y" | b"Y" | b"yes" | b"YES" | b"Yes") {
                self.saved = self.current.clone();
                out.extend_from_slice(SAVE_DONE.as_bytes());
            }
            self.print_prompt(out);
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
        match self.command(&words, line, false) {
            Ok(text) if !matches!(self.input, Input::Line) => out.extend_from_slice(&text),
            Ok(text) => match Pager::start(PAGER, text, page_lines(self.length), out) {
                Some(pager) => self.input = Input::More(pager),
                None => self.print_prompt(out),
            },
            Err((column, fault)) => {
                let caret = prompt_len + column;
                let message = match fault {
                    Fault::Unrecognized => "Unrecognized command",
                    Fault::Incomplete => "Incomplete command",
                    Fault::Ambiguous => "Ambiguous command",
                    Fault::Wrong => "Wrong parameter",
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

    /// A command in the current view (`undo`: after `undo`): its output,
    /// or where and why it was refused. An interface view takes the system
    /// view's commands too, and returns to the system view for them.
    fn command(&mut self, words: &[Word], line: &[u8], undo: bool) -> Result<Vec<u8>, Refusal> {
        let table = match self.view {
            View::User => USER_VIEW,
            View::System => SYSTEM_VIEW,
            View::Interface(_) => INTERFACE_VIEW,
        };
        let first = match resolve(words[0].text, table) {
            Err(Miss::Unknown) if matches!(self.view, View::Interface(_)) => {
                let name =
                    resolve(words[0].text, SYSTEM_VIEW).map_err(|m| (words[0].at, m.into()))?;
                let view = std::mem::replace(&mut self.view, View::System);
                let result = self.system_command(name, words, line, undo);
                if result.is_err() {
                    self.view = view;
                }
                return result;
            }
            found => found.map_err(|miss| (words[0].at, Fault::from(miss)))?,
        };
        if undo
            && matches!(
                first,
                "display" | "quit" | "return" | "save" | "screen-length" | "undo"
            )
        {
            return Err((words[0].at, Fault::Unrecognized));
        }
        match first {
            "display" => {
                let what = word(words, 1, DISPLAY)?;
                if what == "interface" {
                    // `brief`, the one form of `display interface` here.
                    word(words, 2, &["brief"])?;
                    no_more(words, 3)?;
                    return Ok(crlf_lines(brief::interface_brief(&self.current)));
                }
                no_more(words, 2)?;
                Ok(match what {
                    "version" => crlf_lines(VERSION),
                    "saved-configuration" => crlf_lines(self.saved.lines()),
                    _ => crlf_lines(self.current.lines()),
                })
            }
            "screen-length" => {
                let length = words
                    .get(1)
                    .ok_or_else(|| incomplete_or_bad(words, 1))
                    .and_then(|w| {
                        w.str()
                            .parse::<usize>()
                            .ok()
                            .filter(|&n| n <= 512)
                            .ok_or((w.at, Fault::Wrong))
                    })?;
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
            "save" => {
                no_more(words, 1)?;
                self.input = Input::SaveConfirm;
                Ok(SAVE_QUESTION.as_bytes().to_vec())
            }
            "quit" => {
                no_more(words, 1)?;
                match self.view {
                    View::Interface(_) => self.view = View::System,
                    View::System => self.view = View::User,
                    View::User if self.login.is_some() => {
                        self.input = Input::Idle;
                        return Ok(
                            b"\r\n  Configuration console exit, please press any key to log on\r\n"
                                .to_vec(),
                        );
                    }
                    View::User => {}
                }
                Ok(Vec::new())
            }
            "return" => {
                no_more(words, 1)?;
                self.view = View::User;
                Ok(Vec::new())
            }
            "undo" => {
                if words.len() < 2 {
                    return Err(incomplete_or_bad(words, 1));
                }
                self.command(&words[1..], line, true)
            }
            _ if self.view == View::System => self.system_command(first, words, line, undo),
            _ => self.interface_command(first, words, line, undo),
        }
    }

    /// A command of the system view that changes the configuration.
    fn system_command(
        &mut self,
        name: &str,
        words: &[Word],
        line: &[u8],
        undo: bool,
    ) -> Result<Vec<u8>, Refusal> {
        match name {
            "sysname" if undo => {
                no_more(words, 1)?;
                self.current.set_sysname(SYSNAME);
            }
            "sysname" => {
                let sysname = words.get(1).ok_or_else(|| incomplete_or_bad(words, 1))?;
                no_more(words, 2)?;
                self.current.set_sysname(&sysname.str());
            }
            "interface" => {
                let (interface, used) = self.interface_name(words)?;
                no_more(words, 1 + used)?;
                if undo {
                    self.current
                        .remove_global(&format!("interface {interface}"));
                } else {
                    self.current.ensure_interface(&interface);
                    self.view = View::Interface(interface);
                }
            }
            // Displays and the like come back here from an interface view.
            "display" | "quit" | "return" | "save" | "screen-length" | "undo" => {
                return self.command(words, line, undo);
            }
            _ => {
                if words.len() < 2 {
                    return Err(incomplete_or_bad(words, 1));
                }
                let text = joined(name, &words[1..]);
                if undo {
                    self.current.remove_global(&text);
                } else {
                    self.current.set_global(&text);
                }
            }
        }
        Ok(Vec::new())
    }

    /// A command of an interface view, applied to its section.
    fn interface_command(
        &mut self,
        name: &str,
        words: &[Word],
        line: &[u8],
        undo: bool,
    ) -> Result<Vec<u8>, Refusal> {
        let View::Interface(interface) = &self.view else {
            return Ok(Vec::new());
        };
        let head = format!("interface {interface}");
        let rest = &words[1..];
        let (text, key) = match name {
            "shutdown" => {
                no_more(words, 1)?;
                let text = if undo { "undo shutdown" } else { "shutdown" };
                self.current.set_child(&head, text, 1);
                return Ok(Vec::new());
            }
            "description" if undo => ("description".to_owned(), 1),
            "description" => {
                let first = rest.first().ok_or_else(|| incomplete_or_bad(words, 1))?;
                let raw = String::from_utf8_lossy(&line[first.at..])
                    .trim_end()
                    .to_owned();
                (format!("description {raw}"), 1)
            }
            "ip" => {
                let sub = word(words, 1, &["address", "binding", "mtu"])?;
                if sub == "address" && !undo {
                    let address = ipv4(words, 2)?;
                    let mask = ipv4(words, 3)?;
                    no_more(words, 4)?;
                    (format!("ip address {address} {mask}"), 2)
                } else {
                    (joined(&format!("ip {sub}"), &words[2..]), 2)
                }
            }
            _ => {
                if rest.is_empty() && !undo {
                    return Err(incomplete_or_bad(words, 1));
                }
                (joined(name, rest), 1)
            }
        };
        if undo {
            self.current.remove_child(&head, &text);
        } else {
            self.current.set_child(&head, &text, key);
        }
        Ok(Vec::new())
    }

    /// The interface `interface …` names (`GigabitEthernet0/0/1`, `GE0/0/1`,
    /// `LoopBack 0`), in full, and how many words it took.
    fn interface_name(&self, words: &[Word]) -> Result<(String, usize), Refusal> {
        let word = *words.get(1).ok_or_else(|| incomplete_or_bad(words, 1))?;
        let split = word
            .text
            .iter()
            .position(u8::is_ascii_digit)
            .unwrap_or(word.text.len());
        let prefix = &word.text[..split];
        let kind = if prefix.eq_ignore_ascii_case(b"ge") {
            "GigabitEthernet"
        } else {
            resolve(prefix, INTERFACE_TYPES).map_err(|miss| (word.at, Fault::from(miss)))?
        };
        let (number, at, used) = if split == word.text.len() {
            let next = *words.get(2).ok_or_else(|| incomplete_or_bad(words, 2))?;
            (next.str(), next.at, 2)
        } else {
            (
                String::from_utf8_lossy(&word.text[split..]).into_owned(),
                word.at + split,
                1,
            )
        };
        let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        if !number.split('/').all(digits) {
            return Err((at, Fault::Wrong));
        }
        let name = format!("{kind}{number}");
        if kind == "GigabitEthernet" && !self.current.has_interface(&name) {
            return Err((at, Fault::Wrong));
        }
        Ok((name, used))
    }
}

/// `command` and `words`, one space apart.
fn joined(command: &str, words: &[Word]) -> String {
    let mut text = command.to_owned();
    for word in words {
        text.push(' ');
        text.push_str(&word.str());
    }
    text
}

/// The IPv4 address at `words[index]`.
fn ipv4(words: &[Word], index: usize) -> Result<std::net::Ipv4Addr, Refusal> {
    let word = words
        .get(index)
        .ok_or_else(|| incomplete_or_bad(words, index))?;
    word.str().parse().map_err(|_| (word.at, Fault::Wrong))
}

/// The keyword of `names` at `words[index]`.
fn word(words: &[Word], index: usize, names: &[&'static str]) -> Result<&'static str, Refusal> {
    let word = words
        .get(index)
        .ok_or_else(|| incomplete_or_bad(words, index))?;
    resolve(word.text, names).map_err(|miss| (word.at, miss.into()))
}

/// Where the marker goes when `words[index]` is missing or bad: under it,
/// or past the end of the line (an incomplete command).
fn incomplete_or_bad(words: &[Word], index: usize) -> Refusal {
    match words.get(index) {
        Some(word) => (word.at, Fault::Unrecognized),
        None => {
            let last = words.last().expect("a command has a word");
            (last.at + last.text.len() + 1, Fault::Incomplete)
        }
    }
}

/// Refuses words past the first `count`.
fn no_more(words: &[Word], count: usize) -> Result<(), Refusal> {
    match words.get(count) {
        Some(extra) => Err((extra.at, Fault::Unrecognized)),
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
    use crate::options::{Credentials, SimOptions};

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
        assert_eq!(
            send(&mut router, "display\r"),
            "display\r\n                ^\r\nError: Incomplete command found at '^' position.\r\n<HUAWEI>"
        );
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

    /// The section of `head` in the router's configuration, to its `#`.
    fn section(router: &HuaweiRouter, head: &str) -> Vec<String> {
        let lines = router.configuration();
        let at = lines.iter().position(|l| l == head).expect(head);
        lines[at..]
            .iter()
            .take_while(|l| *l != "#")
            .cloned()
            .collect()
    }

    #[test]
    fn configuration_changes_save_and_errors() {
        let mut router = HuaweiRouter::new();
        send(&mut router, "\rsystem-view\r");
        assert!(router.in_config_mode());
        assert_eq!(send(&mut router, "sysname PE1\r"), "sysname PE1\r\n[PE1]");
        assert!(router.configuration().contains(&"sysname PE1".to_owned()));
        assert_eq!(
            send(&mut router, "interface LoopBack 7\r"),
            "interface LoopBack 7\r\n[PE1-LoopBack7]"
        );
        send(&mut router, "description  mgmt loop\r");
        send(&mut router, "ip address 192.0.2.7 255.255.255.255\r");
        send(&mut router, "shutdown\r");
        assert_eq!(
            section(&router, "interface LoopBack7"),
            [
                "interface LoopBack7",
                " description mgmt loop",
                " ip address 192.0.2.7 255.255.255.255",
                " shutdown"
            ]
        );
        send(&mut router, "undo shutdown\rundo description\r");
        assert_eq!(
            section(&router, "interface LoopBack7")[1..],
            [" ip address 192.0.2.7 255.255.255.255", " undo shutdown"]
        );
        assert_eq!(
            send(&mut router, "ip address 192.0.2.7\r"),
            "ip address 192.0.2.7\r\n                                    ^\r\nError: Incomplete command found at '^' position.\r\n[PE1-LoopBack7]"
        );
        assert_eq!(
            send(&mut router, "foo\r"),
            "foo\r\n               ^\r\nError: Unrecognized command found at '^' position.\r\n[PE1-LoopBack7]"
        );
        assert_eq!(send(&mut router, "quit\r"), "quit\r\n[PE1]");
        assert_eq!(
            send(&mut router, "interface GE0/3/0\r"),
            "interface GE0/3/0\r\n                 ^\r\nError: Wrong parameter found at '^' position.\r\n[PE1]"
        );
        assert_eq!(send(&mut router, "return\r"), "return\r\n<PE1>");
        assert_ne!(router.saved_configuration(), router.configuration());
        assert_eq!(
            send(&mut router, "save\r"),
            format!("save\r\n{SAVE_QUESTION}")
        );
        assert_eq!(send(&mut router, "y\r"), format!("y\r\n{SAVE_DONE}<PE1>"));
        assert_eq!(
            SAVE_DONE.lines().last(),
            Some("Info: Save the configuration successfully.")
        );
        assert_eq!(router.saved_configuration(), router.configuration());
    }

    #[test]
    fn a_login_comes_first_and_after_quit() {
        let mut router = HuaweiRouter::with_options(&SimOptions {
            login: Some(Credentials {
                username: "admin".into(),
                password: "Huawei@123".into(),
            }),
            ..SimOptions::default()
        });
        assert_eq!(
            send(&mut router, "\r"),
            "\r\nLogin authentication\r\n\r\n\r\nUsername:"
        );
        assert_eq!(send(&mut router, "admin\r"), "admin\r\nPassword:");
        assert_eq!(
            send(&mut router, "wrong\r"),
            "\r\nError: Local authentication is rejected.\r\n\r\nUsername:"
        );
        send(&mut router, "admin\r");
        assert_eq!(send(&mut router, "Huawei@123\r"), "\r\n<HUAWEI>");
        assert!(send(&mut router, "quit\r").contains("please press any key to log on"));
        assert!(send(&mut router, "\r").ends_with("Username:"));
    }
}
