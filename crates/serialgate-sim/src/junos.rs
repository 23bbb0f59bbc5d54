//! A Juniper Junos router console (an MX named `mx1`, user `admin`) as a
//! synchronous state machine: bytes in, bytes out, no I/O.

use std::mem;
use std::time::SystemTime;

use super::cli::{
    CTRL_C, CTRL_L, Edited, Key, Keys, LastPage, LineEditor, Miss, Paged, Pager, PagerStyle, Quit,
    TAB, Word, crlf_lines, page_lines, resolve, spaces, split_words, utc_text,
};

/// The CLI user.
pub const USER: &str = "admin";
/// The host name.
pub const HOSTNAME: &str = "mx1";
/// The screen length a console session starts with: pages of 23 lines and
/// the pager's line.
pub const DEFAULT_SCREEN_LENGTH: usize = 24;
/// The screen width a console session starts with: the echo of a command
/// line wraps at this column.
pub const DEFAULT_SCREEN_WIDTH: usize = 80;
/// Interfaces in `show configuration` ([`configuration_lines`]).
pub const CONFIGURATION_INTERFACES: usize = 48;

/// The pager's prompt: `---(more 27%)---`, the share of the output shown.
pub fn more_prompt(percent: usize) -> String {
    format!("---(more {percent}%)---")
}

/// What the pager prints after a key: back to the start of the line, the
/// prompt's width in spaces, back again. The next page (or, after the last
/// one, the CLI prompt) is drawn over it.
pub fn more_erase(prompt_len: usize) -> Vec<u8> {
    let mut erase = b"\r".to_vec();
    erase.extend(spaces(prompt_len));
    erase.push(b'\r');
    erase
}

/// The Junos pager: [`more_prompt`] after every page, the last one too,
/// erased by [`more_erase`]; space for a page, RETURN for a line, `q` or
/// Ctrl-C to stop. Output that fits on one page is not paged.
const PAGER: PagerStyle = PagerStyle {
    prompt: |percent| more_prompt(percent).into_bytes(),
    erase: more_erase,
    quit: Quit::QOrCtrlC,
    last_page: LastPage::Pager,
};

/// The CLI mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Operational mode: `admin@mx1> `.
    Operational,
    /// Configuration mode: `[edit]` and `admin@mx1# `.
    Configuration,
}

/// What the console waits for next.
#[derive(Debug)]
enum Input {
    /// A command line, echoed and editable.
    Line,
    /// A key at the pager; the rest of the output waits.
    More(Pager),
    /// The user name at `login: `.
    Login,
    /// The password at `Password:`, not echoed.
    Password,
}

/// Operational-mode commands.
const OPERATIONAL: &[&str] = &["configure", "exit", "quit", "set", "show"];
/// Configuration-mode commands.
const CONFIGURATION: &[&str] = &[
    "commit", "delete", "edit", "exit", "quit", "run", "set", "show", "top", "up",
];
/// What `show` shows.
const SHOW: &[&str] = &["configuration", "interfaces", "system", "version"];
/// What `show system` shows.
const SHOW_SYSTEM: &[&str] = &["alarms", "uptime"];
/// What `set cli` sets.
const SET_CLI: &[&str] = &["screen-length", "screen-width"];
/// Configuration hierarchies that `set` and `delete` accept.
const HIERARCHIES: &[&str] = &[
    "chassis",
    "firewall",
    "interfaces",
    "policy-options",
    "protocols",
    "routing-options",
    "snmp",
    "system",
];
/// Pipes after `|`.
const PIPES: &[&str] = &["count", "except", "match", "no-more"];

/// A Juniper MX router as seen on its console port, running Junos.
///
/// [`feed`](Self::feed) takes the bytes the router receives and appends what
/// it sends back, byte for byte as Junos prints them: the echo (keywords
/// completed on TAB and space, repainted over backspaces; a line that
/// reaches the screen width wrapped with ` \r`), output through the
/// `---(more NN%)---` pager, and the prompt, `admin@mx1> ` or, in
/// configuration mode, `[edit]` then `admin@mx1# `. It starts silent; the
/// first RETURN shows the prompt. Commands: `show configuration`
/// ([`configuration_lines`]), `show system uptime`, `show version`, `show
/// interfaces terse`, `set cli screen-length N` / `screen-width N`,
/// `configure`, `set`/`delete` (accepted), `commit`, `exit`, and the pipes
/// `| match TEXT` (a substring), `| except TEXT`, `| count` and
/// `| no-more`. Unknown commands get `unknown command.`, bad arguments
/// `syntax error…`, under a `^` marker. `exit` in operational mode logs
/// out to `login: `. Ctrl-L redraws the line: `\r`, spaces, `\r`, prompt.
#[derive(Debug)]
pub struct JunosRouter {
    mode: Mode,
    input: Input,
    keys: Keys,
    /// The command line (or user name, or password) typed so far.
    editor: LineEditor,
    /// `set cli screen-length`; 0: no paging.
    length: usize,
    /// `set cli screen-width`; 0: no wrapping.
    width: usize,
    booted: SystemTime,
}

impl Default for JunosRouter {
    fn default() -> Self {
        JunosRouter::new()
    }
}

impl JunosRouter {
    /// A router at operational mode, printing nothing until it receives
    /// something.
    pub fn new() -> JunosRouter {
        JunosRouter {
            mode: Mode::Operational,
            input: Input::Line,
            keys: Keys::default(),
            editor: LineEditor::default(),
            length: DEFAULT_SCREEN_LENGTH,
            width: DEFAULT_SCREEN_WIDTH,
            booted: SystemTime::now(),
        }
    }

    /// A router with `options` (not yet used: the same router as [`new`](Self::new)).
    pub fn with_options(_options: &crate::SimOptions) -> JunosRouter {
        JunosRouter::new()
    }
    /// When a timer fires; none yet.
    pub fn next_deadline(&self) -> Option<std::time::Instant> {
        None
    }
    /// Fires the timers due at `now`; none yet.
    pub fn tick(&mut self, _now: std::time::Instant, _out: &mut Vec<u8>) {}
    /// The configuration in force; not modelled yet.
    pub fn configuration(&self) -> Vec<String> {
        Vec::new()
    }
    /// Whether the router is in a configuration mode.
    pub fn in_config_mode(&self) -> bool {
        self.mode == Mode::Configuration
    }

    /// The current CLI mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The prompt of the current mode: `admin@mx1> ` or `admin@mx1# `.
    pub fn prompt(&self) -> String {
        let end = match self.mode {
            Mode::Operational => '>',
            Mode::Configuration => '#',
        };
        format!("{USER}@{HOSTNAME}{end} ")
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
                Input::Login => self.login_key(key, out),
                Input::Password => self.password_key(key, out),
            }
        }
    }

    /// A key at the command line.
    fn edit(&mut self, key: Key, out: &mut Vec<u8>) {
        match key {
            Key::Char(b' ') if self.complete(out) => {}
            Key::Char(byte) => self.type_byte(byte, out),
            _ => match self.editor.key(key, out) {
                Edited::Line(line) => self.execute(&line, out),
                // TAB completes; on a whole word it adds the space.
                Edited::Control(TAB)
                    if !self.complete(out)
                        && !self.editor.line().is_empty()
                        && !self.editor.line().ends_with(b" ") =>
                {
                    self.type_byte(b' ', out);
                }
                Edited::Control(CTRL_L) => {
                    let width = if self.width == 0 {
                        DEFAULT_SCREEN_WIDTH
                    } else {
                        self.width
                    };
                    self.editor.redraw(self.prompt().as_bytes(), width - 1, out);
                }
                Edited::Control(CTRL_C) => {
                    self.editor.interrupt(out);
                    self.print_prompt(out);
                }
                _ => {}
            },
        }
    }

    /// Echoes one typed byte, wrapped at the screen width.
    fn type_byte(&mut self, byte: u8, out: &mut Vec<u8>) {
        let margin = self.prompt().len();
        self.editor.type_wrapping(byte, margin, self.width, out);
    }

    /// Completes the last word of the line when it uniquely abbreviates a
    /// keyword: the word is repainted whole over backspaces, with a space.
    /// Returns whether it did. (A word typed whole is left alone.)
    fn complete(&mut self, out: &mut Vec<u8>) -> bool {
        let line = self.editor.line();
        let words = split_words(line);
        let Some((last, before)) = words.split_last() else {
            return false;
        };
        if last.end() != line.len() {
            return false; // the line ends with a blank
        }
        let Some(names) = self.keywords(before) else {
            return false;
        };
        let Ok(name) = resolve(last.text, names) else {
            return false;
        };
        if last.text == name.as_bytes() {
            return false;
        }
        self.editor.back_to(last.at, out);
        for &byte in name.as_bytes().iter().chain(b" ") {
            self.type_byte(byte, out);
        }
        true
    }

    /// The keywords that may follow `words` (already typed), if the next
    /// word is a keyword at all.
    fn keywords(&self, words: &[Word]) -> Option<&'static [&'static str]> {
        if let Some(bar) = words.iter().rposition(|w| w.text == b"|") {
            return (bar + 1 == words.len()).then_some(PIPES);
        }
        let first = match words.first() {
            None => {
                return Some(match self.mode {
                    Mode::Operational => OPERATIONAL,
                    Mode::Configuration => CONFIGURATION,
                });
            }
            Some(word) => word.text,
        };
        let table = match self.mode {
            Mode::Operational => OPERATIONAL,
            Mode::Configuration => CONFIGURATION,
        };
        let command = resolve(first, table).ok()?;
        let second = words.get(1).map(|w| resolve(w.text, SHOW).ok());
        match (self.mode, command, words.len()) {
            (_, "show", 1) => Some(SHOW),
            (Mode::Operational, "show", 2) if second == Some(Some("system")) => Some(SHOW_SYSTEM),
            (Mode::Operational, "set", 1) => Some(&["cli"]),
            (Mode::Operational, "set", 2) => Some(SET_CLI),
            (Mode::Configuration, "set" | "delete", 1) => Some(HIERARCHIES),
            _ => None,
        }
    }

    /// A key at the pager; at the end of the output the CLI prompt is
    /// drawn over the erased pager line.
    fn more_key(&mut self, key: Key, out: &mut Vec<u8>) {
        if let Input::More(pager) = &mut self.input
            && pager.key(key, out) == Paged::Done
        {
            self.input = Input::Line;
            out.extend_from_slice(self.prompt_lines().as_bytes());
        }
    }

    /// Prints `text` through the pager (unless `paged` is false), then the
    /// prompt.
    fn print_output(&mut self, text: Vec<u8>, paged: bool, out: &mut Vec<u8>) {
        let lines = page_lines(self.length).filter(|_| paged);
        match Pager::start(PAGER, text, lines, out) {
            Some(pager) => self.input = Input::More(pager),
            None => self.print_prompt(out),
        }
    }

    /// The prompt after a command's output: a blank line, then the prompt
    /// (with `[edit]` above it in configuration mode).
    fn print_prompt(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(self.prompt_lines().as_bytes());
    }

    /// The prompt, with `[edit]` above it in configuration mode.
    fn prompt_lines(&self) -> String {
        match self.mode {
            Mode::Operational => self.prompt(),
            Mode::Configuration => format!("[edit]\r\n{}", self.prompt()),
        }
    }

    /// A key at `login: `.
    fn login_key(&mut self, key: Key, out: &mut Vec<u8>) {
        match self.editor.key(key, out) {
            Edited::Line(user) if user.is_empty() => out.extend_from_slice(b"login: "),
            Edited::Line(_) => {
                self.input = Input::Password;
                out.extend_from_slice(b"Password:");
            }
            _ => {}
        }
    }

    /// A key at `Password:`: any password will do.
    fn password_key(&mut self, key: Key, out: &mut Vec<u8>) {
        if let Edited::Line(_) = self.editor.secret_key(key, out) {
            self.input = Input::Line;
            out.extend_from_slice(
                b"\r\n--- JUNOS 21.4R3.15 Kernel 64-bit  JNPR-12.1-20230303.e56d7d4_buil\r\n",
            );
            out.extend_from_slice(self.prompt().as_bytes());
        }
    }

    /// Runs one command line.
    fn execute(&mut self, line: &[u8], out: &mut Vec<u8>) {
        let (command, pipes) = match memchr::memchr(b'|', line) {
            Some(bar) => (&line[..bar], Some(&line[bar + 1..])),
            None => (line, None),
        };
        let words = split_words(command);
        if words.is_empty() {
            return out.extend_from_slice(self.prompt_lines().as_bytes());
        }
        let prompt_len = self.prompt().len();
        let result = match self.mode {
            Mode::Operational => self.operational(&words),
            Mode::Configuration => self.configuration_command(&words),
        };
        match result {
            Ok(Output::Text(text)) => {
                let (text, paged) = match pipes {
                    Some(pipes) => match apply_pipes(text, pipes) {
                        Ok(piped) => piped,
                        Err(at) => {
                            let at = command.len() + 1 + at;
                            let error = error_text(prompt_len + at, "syntax error.");
                            return self.print_output(error, false, out);
                        }
                    },
                    None => (text, true),
                };
                self.print_output(text, paged, out);
            }
            Ok(Output::Quiet) => out.extend_from_slice(self.prompt_lines().as_bytes()),
            Ok(Output::Logout) => {
                self.mode = Mode::Operational;
                self.input = Input::Login;
                out.extend_from_slice(format!("\r\n{HOSTNAME} (ttyu0)\r\n\r\nlogin: ").as_bytes());
            }
            Err((at, message)) => {
                let text = error_text(prompt_len + words[at].at, message);
                self.print_output(text, false, out);
            }
        }
    }

    /// A command in operational mode.
    fn operational(&mut self, words: &[Word]) -> Result<Output, (usize, &'static str)> {
        let command = resolve(words[0].text, OPERATIONAL).map_err(|_| (0, "unknown command."))?;
        match command {
            "show" => self.show(words),
            "set" => {
                let _cli = keyword(words, 1, &["cli"])?;
                let setting = keyword(words, 2, SET_CLI)?;
                let value = words
                    .get(3)
                    .ok_or((words.len() - 1, "syntax error, expecting <number>."))?;
                let length = setting == "screen-length";
                let number: usize = std::str::from_utf8(value.text)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| match length {
                        true => n <= 100_000,
                        false => n == 0 || (40..=1024).contains(&n),
                    })
                    .ok_or((3, "syntax error, expecting <number>."))?;
                no_more(words, 4)?;
                let text = if length {
                    self.length = number;
                    format!("Screen length set to {number}")
                } else {
                    self.width = number;
                    format!("Screen width set to {number}")
                };
                Ok(Output::Text(crlf_lines([text])))
            }
            "configure" => {
                no_more(words, 1)?;
                self.mode = Mode::Configuration;
                Ok(Output::Text(b"Entering configuration mode\r\n".to_vec()))
            }
            _ => {
                no_more(words, 1)?;
                Ok(Output::Logout)
            }
        }
    }

    /// A command in configuration mode.
    fn configuration_command(&mut self, words: &[Word]) -> Result<Output, (usize, &'static str)> {
        let command = resolve(words[0].text, CONFIGURATION).map_err(|_| (0, "unknown command."))?;
        match command {
            "show" => Ok(Output::Text(crlf_lines(configuration_lines()))),
            "run" => {
                let mode = mem::replace(&mut self.mode, Mode::Operational);
                let result = self.operational(&words[1..]);
                self.mode = mode;
                result.map_err(|(at, message)| (at + 1, message))
            }
            "set" | "delete" => {
                keyword(words, 1, HIERARCHIES).map_err(|(at, _)| (at, "syntax error."))?;
                if words.len() < 3 {
                    return Err((1, "syntax error."));
                }
                Ok(Output::Quiet)
            }
            "commit" => {
                no_more(words, 1)?;
                Ok(Output::Text(b"commit complete\r\n".to_vec()))
            }
            "exit" | "quit" => {
                no_more(words, 1)?;
                self.mode = Mode::Operational;
                Ok(Output::Text(b"Exiting configuration mode\r\n".to_vec()))
            }
            _ => Ok(Output::Quiet),
        }
    }

    /// `show …` in operational mode.
    fn show(&mut self, words: &[Word]) -> Result<Output, (usize, &'static str)> {
        let what = keyword(words, 1, SHOW)?;
        let text = match what {
            "configuration" => {
                no_more(words, 2)?;
                crlf_lines(configuration_lines())
            }
            "system" => {
                let what = keyword(words, 2, SHOW_SYSTEM)?;
                no_more(words, 3)?;
                if what == "alarms" {
                    b"No alarms currently active\r\n".to_vec()
                } else {
                    crlf_lines(uptime_lines(SystemTime::now(), self.booted))
                }
            }
            "version" => {
                no_more(words, 2)?;
                crlf_lines(VERSION)
            }
            _ => {
                let _terse = keyword(words, 2, &["terse"])?;
                no_more(words, 3)?;
                crlf_lines(interfaces_terse_lines())
            }
        };
        Ok(Output::Text(text))
    }
}

/// What a command prints.
enum Output {
    /// Text, through the pager.
    Text(Vec<u8>),
    /// Nothing: the prompt comes back at once.
    Quiet,
    /// The session ends: `login: `.
    Logout,
}

/// The keyword of `names` at `words[index]`, or where and why not.
fn keyword(
    words: &[Word],
    index: usize,
    names: &[&'static str],
) -> Result<&'static str, (usize, &'static str)> {
    let Some(word) = words.get(index) else {
        return Err((index - 1, "syntax error, expecting <command>."));
    };
    resolve(word.text, names).map_err(|miss| {
        let message = match miss {
            Miss::Unknown => "syntax error, expecting <command>.",
            Miss::Ambiguous => "syntax error, ambiguous command.",
        };
        (index, message)
    })
}

/// Refuses words past the first `count`.
fn no_more(words: &[Word], count: usize) -> Result<(), (usize, &'static str)> {
    match words.get(count) {
        Some(_) => Err((count, "syntax error, expecting <command>.")),
        None => Ok(()),
    }
}

/// How Junos reports a bad line: a `^` under the column where parsing
/// failed, the message, and a blank line.
fn error_text(column: usize, message: &str) -> Vec<u8> {
    format!("{:column$}^\r\n{message}\r\n", "").into_bytes()
}

/// Applies `| match X`, `| except X`, `| count` and `| no-more` (any
/// number, in order) to `text`. Returns the text and whether it is paged,
/// or the byte of `pipes` where a pipe is wrong.
fn apply_pipes(text: Vec<u8>, pipes: &[u8]) -> Result<(Vec<u8>, bool), usize> {
    let mut lines: Vec<String> = String::from_utf8_lossy(&text)
        .split_terminator("\r\n")
        .map(str::to_owned)
        .collect();
    let mut paged = true;
    let mut offset = 0;
    for pipe in pipes.split(|&b| b == b'|') {
        let words = split_words(pipe);
        let first = words.first().ok_or(offset)?;
        let name = resolve(first.text, PIPES).map_err(|_| offset + first.at)?;
        let rest = String::from_utf8_lossy(&pipe[(first.at + first.text.len())..]);
        let argument = rest.trim().trim_matches('"').to_owned();
        match name {
            "match" | "except" if argument.is_empty() => return Err(offset + first.at),
            "match" => lines.retain(|l| l.contains(&argument)),
            "except" => lines.retain(|l| !l.contains(&argument)),
            "count" => lines = vec![format!("Count: {} lines", lines.len())],
            _ => paged = false,
        }
        offset += pipe.len() + 1;
    }
    Ok((crlf_lines(lines), paged))
}

const VERSION: [&str; 5] = [
    "Hostname: mx1",
    "Model: mx204",
    "Junos: 21.4R3.15",
    "JUNOS OS Kernel 64-bit  [20230303.e56d7d4_builder_stable_12_214]",
    "JUNOS OS runtime [20230303.e56d7d4_builder_stable_12_214]",
];

/// `show system uptime` at `now` for a router booted at `booted`.
fn uptime_lines(now: SystemTime, booted: SystemTime) -> Vec<String> {
    let up = now.duration_since(booted).unwrap_or_default().as_secs();
    let ago = format!("{:02}:{:02}:{:02} ago", up / 3600, up / 60 % 60, up % 60);
    vec![
        format!("Current time: {}", utc_text(now)),
        "Time Source:  LOCAL CLOCK ".to_owned(),
        format!("System booted: {} ({ago})", utc_text(booted)),
        format!("Protocols started: {} ({ago})", utc_text(booted)),
        format!("Last configured: {} ({ago}) by {USER}", utc_text(booted)),
        format!(
            "{} up {} mins, 1 user, load averages: 0.21, 0.12, 0.09",
            utc_text(now).get(11..16).unwrap_or_default(),
            up / 60
        ),
    ]
}

fn interfaces_terse_lines() -> Vec<String> {
    let mut lines =
        vec!["Interface               Admin Link Proto    Local                 Remote".to_owned()];
    for port in 0..8 {
        let link = if port % 3 == 2 { "down" } else { "up" };
        lines.push(format!("et-0/0/{port:<16} up    {link}"));
        lines.push(format!(
            "et-0/0/{port}.0{:13} up    {link} inet     10.0.{port}.0/31",
            ""
        ));
    }
    lines.push("lo0                     up    up".to_owned());
    lines
        .push("lo0.0                   up    up   inet     192.0.2.1           --> 0/0".to_owned());
    lines
}

/// The exact lines (without line ends) of `show configuration`: a Junos
/// configuration in braces, [`CONFIGURATION_INTERFACES`] interfaces with
/// unique descriptions, long enough to take many pages.
pub fn configuration_lines() -> Vec<String> {
    let mut lines: Vec<String> = [
        "## Last commit: 2024-03-01 08:00:00 UTC by admin",
        "version 21.4R3.15;",
        "system {",
        "    host-name mx1;",
        "    root-authentication {",
        "        encrypted-password \"$6$p8rE9$Z8a0bG2bM4sJ1vUq0cP3.\"; ## SECRET-DATA",
        "    }",
        "    login {",
        "        user admin {",
        "            uid 2000;",
        "            class super-user;",
        "        }",
        "    }",
        "    services {",
        "        ssh;",
        "        netconf {",
        "            ssh;",
        "        }",
        "    }",
        "    syslog {",
        "        file messages {",
        "            any notice;",
        "        }",
        "    }",
        "    ntp {",
        "        server 192.0.2.123;",
        "    }",
        "}",
        "chassis {",
        "    aggregated-devices {",
        "        ethernet {",
        "            device-count 8;",
        "        }",
        "    }",
        "}",
        "interfaces {",
    ]
    .map(String::from)
    .to_vec();
    for i in 0..CONFIGURATION_INTERFACES {
        let (fpc, port) = (i / 24, i % 24);
        lines.extend([
            format!("    et-{fpc}/0/{port} {{"),
            format!(
                "        description \"link-{:04} to dist-{:02}.lab.example.net et-0/0/{port} circuit CKT-{:06}\";",
                i + 1,
                1 + i % 8,
                200_000 + i
            ),
            "        mtu 9192;".to_owned(),
            "        unit 0 {".to_owned(),
            "            family inet {".to_owned(),
            format!("                address 10.{fpc}.{port}.0/31;"),
            "            }".to_owned(),
            "            family iso;".to_owned(),
            "        }".to_owned(),
            "    }".to_owned(),
        ]);
    }
    lines.extend(
        [
            "    lo0 {",
            "        unit 0 {",
            "            family inet {",
            "                address 192.0.2.1/32;",
            "            }",
            "        }",
            "    }",
            "}",
            "routing-options {",
            "    router-id 192.0.2.1;",
            "    autonomous-system 64500;",
            "}",
            "protocols {",
            "    lldp {",
            "        interface all;",
            "    }",
            "}",
        ]
        .map(String::from),
    );
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(router: &mut JunosRouter, input: &str) -> String {
        let mut out = Vec::new();
        router.feed(input.as_bytes(), &mut out);
        String::from_utf8(out).expect("UTF-8")
    }

    /// Removes every pager prompt and the erase after it.
    fn strip_pager(text: &str) -> String {
        let mut text = text.to_owned();
        for percent in 0..=100 {
            let prompt = more_prompt(percent);
            let erase = String::from_utf8(more_erase(prompt.len())).unwrap();
            text = text.replace(&format!("{prompt}{erase}"), "");
        }
        text
    }

    #[test]
    fn prompts_and_modes() {
        let mut router = JunosRouter::new();
        assert_eq!(send(&mut router, ""), "");
        assert_eq!(send(&mut router, "\r"), "\r\nadmin@mx1> ");
        assert_eq!(
            send(&mut router, "configure\r"),
            "configure\r\nEntering configuration mode\r\n\r\n[edit]\r\nadmin@mx1# "
        );
        assert_eq!(router.mode(), Mode::Configuration);
        assert_eq!(
            send(&mut router, "set system host-name mx1\r"),
            "set system host-name mx1\r\n[edit]\r\nadmin@mx1# "
        );
        assert_eq!(
            send(&mut router, "exit\r"),
            "exit\r\nExiting configuration mode\r\n\r\nadmin@mx1> "
        );
    }

    #[test]
    fn unknown_commands_and_syntax_errors() {
        let mut router = JunosRouter::new();
        assert_eq!(
            send(&mut router, "foo\r"),
            "foo\r\n           ^\r\nunknown command.\r\n\r\nadmin@mx1> "
        );
        assert_eq!(
            send(&mut router, "show foo\r"),
            "show foo\r\n                ^\r\nsyntax error, expecting <command>.\r\n\r\nadmin@mx1> "
        );
        send(&mut router, "configure\r");
        assert_eq!(
            send(&mut router, "set foo bar\r"),
            "set foo bar\r\n               ^\r\nsyntax error.\r\n\r\n[edit]\r\nadmin@mx1# "
        );
    }

    #[test]
    fn tab_and_space_complete_keywords_over_backspaces() {
        let mut router = JunosRouter::new();
        send(&mut router, "\r");
        assert_eq!(send(&mut router, "sh"), "sh");
        assert_eq!(send(&mut router, "\t"), "\x08\x08show ");
        assert_eq!(send(&mut router, "sys "), "sys\x08\x08\x08system ");
        assert_eq!(send(&mut router, "u"), "u");
        let text = send(&mut router, "p\r");
        assert!(
            text.starts_with("p\r\nCurrent time: "),
            "RETURN runs the abbreviation: {text:?}"
        );
        // Ambiguous and exact words are not completed.
        assert_eq!(send(&mut router, "s "), "s ");
        send(&mut router, "\x08\x08");
        assert_eq!(send(&mut router, "show "), "show ");
    }

    #[test]
    fn a_line_reaching_the_screen_width_wraps_with_space_cr() {
        let mut router = JunosRouter::new();
        send(&mut router, "\r");
        let command = format!("show configuration | match \"{}\"", "x".repeat(60));
        let echo = send(&mut router, &command);
        let at = 80 - "admin@mx1> ".len();
        assert_eq!(echo, format!("{} \r{}", &command[..at], &command[at..]));
        send(&mut router, "\rset cli screen-width 0\r");
        assert_eq!(send(&mut router, &command), command);
    }

    #[test]
    fn configuration_pages_with_percentages_and_the_prompt_redraws_over_the_last() {
        let mut router = JunosRouter::new();
        send(&mut router, "\r");
        let mut text = send(&mut router, "show configuration\r");
        let mut pages = 1;
        while !text.ends_with("admin@mx1> ") {
            assert!(text.ends_with("%)---"), "{:?}", &text[text.len() - 40..]);
            text += &send(&mut router, " ");
            pages += 1;
        }
        let lines = configuration_lines();
        assert!(lines.len() > 500, "{}", lines.len());
        assert_eq!(pages, lines.len().div_ceil(23) + 1);
        let last = format!("---(more 100%)---\r{}\radmin@mx1> ", " ".repeat(17));
        assert!(text.ends_with(&last));
        let plain = strip_pager(&text);
        let body = plain
            .strip_prefix("show configuration\r\n")
            .unwrap()
            .strip_suffix("admin@mx1> ")
            .unwrap();
        assert_eq!(body, String::from_utf8(crlf_lines(&lines)).unwrap());
    }

    #[test]
    fn pager_keys() {
        let mut router = JunosRouter::new();
        send(&mut router, "\rset cli screen-length 5\r");
        let first = send(&mut router, "show configuration\r");
        assert!(first.ends_with("---(more 0%)---"), "{first:?}");
        assert_eq!(send(&mut router, "x"), "", "other keys are ignored");
        let line = send(&mut router, "\r");
        let erase = format!("\r{}\r", " ".repeat("---(more 0%)---".len()));
        assert!(
            line.starts_with(&format!("{erase}    root-authentication {{\r\n---(more ")),
            "{line:?}"
        );
        let quit = send(&mut router, "q");
        assert!(quit.ends_with("\radmin@mx1> "), "{quit:?}");
        assert!(
            send(&mut router, "show configuration | no-more\r").ends_with("}\r\n\r\nadmin@mx1> ")
        );
    }

    #[test]
    fn pipes_and_screen_length() {
        let mut router = JunosRouter::new();
        send(&mut router, "\r");
        assert_eq!(
            send(&mut router, "set cli screen-length 0\r"),
            "set cli screen-length 0\r\nScreen length set to 0\r\n\r\nadmin@mx1> "
        );
        let text = send(&mut router, "show configuration | match link-0007\r");
        assert_eq!(
            text,
            "show configuration | match link-0007\r\n        description \"link-0007 to dist-07.lab.example.net et-0/0/6 circuit CKT-200006\";\r\n\r\nadmin@mx1> "
        );
        let text = send(&mut router, "show configuration | count\r");
        assert!(text.contains(&format!("Count: {} lines", configuration_lines().len())));
        assert!(send(&mut router, "show version | foo\r").contains("syntax error."));
    }

    #[test]
    fn ctrl_l_redraws_the_line() {
        let mut router = JunosRouter::new();
        send(&mut router, "\rshow ver");
        let redraw = send(&mut router, "\x0c");
        assert_eq!(redraw, format!("\r{}\radmin@mx1> show ver", " ".repeat(79)));
    }

    #[test]
    fn exit_logs_out_to_login() {
        let mut router = JunosRouter::new();
        send(&mut router, "\r");
        assert_eq!(
            send(&mut router, "exit\r"),
            "exit\r\n\r\nmx1 (ttyu0)\r\n\r\nlogin: "
        );
        assert_eq!(send(&mut router, "admin\r"), "admin\r\nPassword:");
        let banner = send(&mut router, "secret\r");
        assert!(banner.starts_with("\r\n\r\n--- JUNOS 21.4R3.15"));
        assert!(banner.ends_with("\r\nadmin@mx1> "));
    }

    #[test]
    fn any_chunking_gives_the_same_bytes() {
        let script = "\rsh\tsys up\rset cli screen-length 7\rshow configuration\r \r\rq\
                      configure\rset system foo\rfoo\rexit\rshow configuration | match et-0\r \r  q";
        let mut whole = Vec::new();
        JunosRouter::new().feed(script.as_bytes(), &mut whole);
        for chunk in [1, 2, 3, 7, 64] {
            let mut router = JunosRouter::new();
            let mut out = Vec::new();
            for piece in script.as_bytes().chunks(chunk) {
                router.feed(piece, &mut out);
            }
            // Uptime lines carry the clock: compare without them.
            let strip = |b: &[u8]| {
                String::from_utf8_lossy(b)
                    .lines()
                    .filter(|l| !l.contains(" UTC") && !l.contains("load averages"))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            assert_eq!(strip(&out), strip(&whole), "chunks of {chunk}");
        }
    }
}
