//! A Juniper Junos router console (an MX named `mx1`, user `admin`) as a
//! synchronous state machine: bytes in, bytes out, no I/O.

mod config;

use std::mem;
use std::time::{Duration, Instant, SystemTime};

use super::cli::{
    CTRL_C, CTRL_L, Edited, Key, Keys, LastPage, LineEditor, Miss, Paged, Pager, PagerStyle, Quit,
    TAB, Word, crlf_lines, page_lines, resolve, spaces, split_words, utc_text,
};
use super::options::{Credentials, SimOptions};

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
    /// The password at `Password:`, not echoed; the user name typed.
    Password(Vec<u8>),
    /// Nothing on screen yet: RETURN brings the login (with a login set).
    Idle,
    /// The answer to `Exit with uncommitted changes? [yes,no] (yes) `.
    ExitConfirm,
}

/// A `commit confirmed` waiting for a confirmation.
#[derive(Debug)]
struct Confirm {
    /// When the configuration rolls back.
    deadline: Instant,
    /// The active configuration it rolls back to.
    previous: Vec<String>,
}

/// Operational-mode commands.
const OPERATIONAL: &[&str] = &["configure", "exit", "quit", "set", "show"];
/// Configuration-mode commands.
const CONFIGURATION: &[&str] = &[
    "commit", "delete", "edit", "exit", "quit", "rollback", "run", "set", "show", "top", "up",
];
/// What `commit` takes.
const COMMIT: &[&str] = &["and-quit", "check", "confirmed"];
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
    "security",
    "snmp",
    "system",
    "vlans",
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
    /// The user logged in, who the prompt names.
    user: String,
    /// What the login accepts, if set; else any user and password will do.
    login: Option<Credentials>,
    /// How long a minute of `commit confirmed N` lasts.
    minute: Duration,
    /// The committed configuration, as `set` statements.
    active: Vec<String>,
    /// The configuration being edited.
    candidate: Vec<String>,
    /// Earlier active configurations, the latest first (`rollback N`).
    history: Vec<Vec<String>>,
    /// `## Last commit: …` above `show configuration`.
    last_commit: String,
    /// A `commit confirmed` not yet confirmed.
    confirm: Option<Confirm>,
    /// The wall clock for the broadcast and commit times (fixed in tests).
    wall: fn() -> SystemTime,
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
        JunosRouter::with_options(&SimOptions::default())
    }

    /// A router with `options`: a login first (the user it names is the
    /// prompt's), shorter minutes for `commit confirmed`.
    pub fn with_options(options: &SimOptions) -> JunosRouter {
        let lines = configuration_lines();
        let active = config::from_braces(&lines);
        JunosRouter {
            mode: Mode::Operational,
            input: if options.login.is_some() {
                Input::Idle
            } else {
                Input::Line
            },
            keys: Keys::default(),
            editor: LineEditor::default(),
            length: DEFAULT_SCREEN_LENGTH,
            width: DEFAULT_SCREEN_WIDTH,
            booted: SystemTime::now(),
            user: options
                .login
                .as_ref()
                .map_or(USER, |login| login.username.as_str())
                .to_owned(),
            login: options.login.clone(),
            minute: options.minute,
            candidate: active.clone(),
            active,
            history: Vec::new(),
            last_commit: lines[0].clone(),
            confirm: None,
            wall: SystemTime::now,
        }
    }

    /// When the pending `commit confirmed` rolls back, if one is.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.confirm.as_ref().map(|c| c.deadline)
    }

    /// At `now`, an unconfirmed commit rolls back: the active (and the
    /// candidate) configuration returns to the one before, and Junos
    /// broadcasts it to the terminal.
    pub fn tick(&mut self, now: Instant, out: &mut Vec<u8>) {
        if self.confirm.as_ref().is_none_or(|c| c.deadline > now) {
            return;
        }
        let Some(confirm) = self.confirm.take() else {
            return;
        };
        let rolled_back = mem::replace(&mut self.active, confirm.previous);
        self.history.insert(0, rolled_back);
        self.candidate = self.active.clone();
        let time = utc_text((self.wall)());
        let time = time.get(11..16).unwrap_or_default();
        out.extend_from_slice(
            format!(
                "\r\n\r\nBroadcast Message from root@{HOSTNAME}\r\n        (no tty) at {time} UTC...\r\n\r\n\
                 Commit was not confirmed; automatic rollback complete.\r\n\r\n"
            )
            .as_bytes(),
        );
    }

    /// The active (committed) configuration as `set` lines.
    pub fn configuration(&self) -> Vec<String> {
        self.active.iter().map(|s| format!("set {s}")).collect()
    }

    /// The candidate configuration as `set` lines.
    pub fn candidate(&self) -> Vec<String> {
        self.candidate.iter().map(|s| format!("set {s}")).collect()
    }

    /// Whether the router is in configuration mode (`[edit]`).
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
        format!("{}@{HOSTNAME}{end} ", self.user)
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
                Input::Password(_) => self.password_key(key, out),
                Input::Idle => {
                    if key == Key::Return {
                        self.input = Input::Login;
                        out.extend_from_slice(login_banner().as_bytes());
                    }
                }
                Input::ExitConfirm => self.exit_confirm_key(key, out),
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

    /// The prompt, with `[edit]` above it in configuration mode (and,
    /// while a `commit confirmed` waits, how long it has left).
    fn prompt_lines(&self) -> String {
        match self.mode {
            Mode::Operational => self.prompt(),
            Mode::Configuration => {
                let pending = match &self.confirm {
                    Some(confirm) => {
                        let left = confirm.deadline.saturating_duration_since(Instant::now());
                        let minutes = (left.as_secs_f64()
                            / self.minute.as_secs_f64().max(f64::MIN_POSITIVE))
                        .ceil();
                        format!("# commit confirmed will be rolled back in {minutes} minutes\r\n")
                    }
                    None => String::new(),
                };
                format!("{pending}[edit]\r\n{}", self.prompt())
            }
        }
    }

    /// A key at `Exit with uncommitted changes? [yes,no] (yes) `.
    fn exit_confirm_key(&mut self, key: Key, out: &mut Vec<u8>) {
        let Edited::Line(answer) = self.editor.key(key, out) else {
            return;
        };
        self.input = Input::Line;
        let answer = String::from_utf8_lossy(&answer).trim().to_ascii_lowercase();
        if answer.is_empty() || "yes".starts_with(&answer) {
            self.mode = Mode::Operational;
            out.extend_from_slice(b"Exiting configuration mode\r\n");
        }
        self.print_prompt(out);
    }

    /// A key at `login: `.
    fn login_key(&mut self, key: Key, out: &mut Vec<u8>) {
        match self.editor.key(key, out) {
            Edited::Line(user) if user.is_empty() => out.extend_from_slice(b"login: "),
            Edited::Line(user) => {
                self.input = Input::Password(user);
                out.extend_from_slice(b"Password:");
            }
            _ => {}
        }
    }

    /// A key at `Password:`: the login's pair (or, with none set, any)
    /// logs in.
    fn password_key(&mut self, key: Key, out: &mut Vec<u8>) {
        let Edited::Line(password) = self.editor.secret_key(key, out) else {
            return;
        };
        let Input::Password(user) = mem::replace(&mut self.input, Input::Login) else {
            return;
        };
        let accepted = self
            .login
            .as_ref()
            .is_none_or(|login| login.accept(&user, &password));
        if !accepted {
            return out.extend_from_slice(b"Login incorrect\r\nlogin: ");
        }
        self.input = Input::Line;
        out.extend_from_slice(
            b"\r\n--- JUNOS 21.4R3.15 Kernel 64-bit  JNPR-12.1-20230303.e56d7d4_buil\r\n",
        );
        out.extend_from_slice(self.prompt().as_bytes());
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
        let special = pipes.and_then(|pipes| self.special_pipe(&words, pipes));
        let (result, pipes) = match special {
            Some(special) => special,
            None => (
                match self.mode {
                    Mode::Operational => self.operational(&words),
                    Mode::Configuration => self.configuration_command(&words, line),
                },
                pipes,
            ),
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
                out.extend_from_slice(login_banner().as_bytes());
            }
            Ok(Output::Asked(text)) => out.extend_from_slice(&text),
            Err((at, message)) => {
                // Past the last word: the marker goes after the line.
                let column = words
                    .get(at)
                    .map_or_else(|| words[words.len() - 1].end() + 1, |word| word.at);
                let text = error_text(prompt_len + column, message);
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
                let mut text = b"Entering configuration mode\r\n".to_vec();
                if self.candidate != self.active {
                    text.extend_from_slice(UNCOMMITTED.as_bytes());
                }
                Ok(Output::Text(text))
            }
            _ => {
                no_more(words, 1)?;
                Ok(Output::Logout)
            }
        }
    }

    /// A command in configuration mode.
    fn configuration_command(
        &mut self,
        words: &[Word],
        line: &[u8],
    ) -> Result<Output, (usize, &'static str)> {
        let command = resolve(words[0].text, CONFIGURATION).map_err(|_| (0, "unknown command."))?;
        match command {
            "show" => Ok(Output::Text(crlf_lines(self.shown(&self.candidate)))),
            "run" => {
                let mode = mem::replace(&mut self.mode, Mode::Operational);
                let result = self.operational(&words[1..]);
                self.mode = mode;
                result.map_err(|(at, message)| (at + 1, message))
            }
            "set" | "delete" => {
                if words.len() < 2 {
                    return Err((1, "missing argument."));
                }
                keyword(words, 1, HIERARCHIES).map_err(|(at, _)| (at, "syntax error."))?;
                let last = words[words.len() - 1].str();
                if words.len() < 3 && command == "set" {
                    return Err((1, "syntax error."));
                }
                if command == "set" && config::NEEDS_VALUE.contains(&last.as_str()) {
                    return Err((words.len(), "missing argument."));
                }
                // The statement as typed, quotes and all, the hierarchy in full.
                let rest = String::from_utf8_lossy(&line[words[2.min(words.len() - 1)].at..]);
                let hierarchy = resolve(words[1].text, HIERARCHIES).unwrap_or_default();
                let statement = if words.len() > 2 {
                    format!("{hierarchy} {rest}")
                } else {
                    hierarchy.to_owned()
                };
                if command == "set" {
                    config::set(&mut self.candidate, &statement);
                } else if !config::delete(&mut self.candidate, &statement) {
                    return Ok(Output::Text(b"warning: statement not found\r\n".to_vec()));
                }
                Ok(Output::Quiet)
            }
            "commit" => self.commit(words),
            "rollback" => {
                let number = match words.get(1) {
                    None => 0,
                    Some(word) => word
                        .str()
                        .parse::<usize>()
                        .ok()
                        .filter(|&n| n <= 49)
                        .ok_or((1, "syntax error, expecting <number>."))?,
                };
                no_more(words, 2)?;
                self.candidate = match number {
                    0 => self.active.clone(),
                    n => match self.history.get(n - 1) {
                        Some(earlier) => earlier.clone(),
                        None => {
                            let text = format!("error: rollback {n} does not exist\r\n");
                            return Ok(Output::Text(text.into_bytes()));
                        }
                    },
                };
                Ok(Output::Text(b"load complete\r\n".to_vec()))
            }
            "exit" | "quit" => {
                if let Some(word) = words.get(1) {
                    resolve(word.text, &["configuration-mode"])
                        .map_err(|_| (1, "syntax error, expecting <command>."))?;
                }
                no_more(words, 2)?;
                if self.candidate != self.active {
                    self.input = Input::ExitConfirm;
                    return Ok(Output::Asked(
                        format!("{UNCOMMITTED}Exit with uncommitted changes? [yes,no] (yes) ")
                            .into_bytes(),
                    ));
                }
                self.mode = Mode::Operational;
                Ok(Output::Text(b"Exiting configuration mode\r\n".to_vec()))
            }
            _ => Ok(Output::Quiet),
        }
    }

    /// `commit`, `commit check`, `commit confirmed [N]`, `commit and-quit`.
    fn commit(&mut self, words: &[Word]) -> Result<Output, (usize, &'static str)> {
        let how = match words.get(1) {
            Some(_) => Some(keyword(words, 1, COMMIT)?),
            None => None,
        };
        let minutes = match (how, words.get(2)) {
            (Some("confirmed"), Some(word)) => {
                let minutes = word
                    .str()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=65_535).contains(n))
                    .ok_or((2, "syntax error, expecting <number>."))?;
                no_more(words, 3)?;
                minutes
            }
            _ => {
                no_more(words, 2)?;
                10
            }
        };
        let errors = config::check(&self.candidate);
        if !errors.is_empty() {
            let mut lines = errors;
            lines.push("error: configuration check-out failed".to_owned());
            return Ok(Output::Text(crlf_lines(lines)));
        }
        if how == Some("check") {
            // Junos takes a check as the confirmation, too.
            self.confirm = None;
            return Ok(Output::Text(b"configuration check succeeds\r\n".to_vec()));
        }
        let previous = mem::replace(&mut self.active, self.candidate.clone());
        let mut text = String::new();
        if how == Some("confirmed") {
            let deadline = Instant::now() + self.minute * minutes;
            let previous = match self.confirm.take() {
                Some(pending) => pending.previous,
                None => previous.clone(),
            };
            self.confirm = Some(Confirm { deadline, previous });
            text = format!(
                "commit confirmed will be automatically rolled back in {minutes} minutes unless confirmed\r\n"
            );
        } else {
            self.confirm = None;
        }
        self.history.insert(0, previous);
        self.history.truncate(49);
        self.last_commit = format!(
            "## Last commit: {} by {}",
            utc_text((self.wall)()),
            self.user
        );
        text.push_str("commit complete\r\n");
        if how == Some("and-quit") {
            self.mode = Mode::Operational;
            text.push_str("Exiting configuration mode\r\n");
        }
        Ok(Output::Text(text.into_bytes()))
    }

    /// `show configuration` of `statements`: the last commit, then braces.
    fn shown(&self, statements: &[String]) -> Vec<String> {
        let mut lines = vec![self.last_commit.clone()];
        lines.extend(config::braces(statements));
        lines
    }

    /// Pipes the configuration's own commands take: `show | compare` in
    /// configuration mode, and `| display set` after `show` (configuration
    /// mode) or `show configuration`.
    /// Returns the output and the pipes after the first.
    #[allow(clippy::type_complexity)]
    fn special_pipe<'p>(
        &self,
        words: &[Word],
        pipes: &'p [u8],
    ) -> Option<(Result<Output, (usize, &'static str)>, Option<&'p [u8]>)> {
        let (first, rest) = match memchr::memchr(b'|', pipes) {
            Some(bar) => (&pipes[..bar], Some(&pipes[bar + 1..])),
            None => (pipes, None),
        };
        let pipe: Vec<String> = split_words(first).iter().map(Word::str).collect();
        let pipe: Vec<&str> = pipe.iter().map(String::as_str).collect();
        let show = resolve(words[0].text, &["show"]).is_ok();
        let statements = match (self.mode, words.len()) {
            (Mode::Configuration, 1) if show => &self.candidate,
            (Mode::Operational, 2)
                if show && resolve(words[1].text, &["configuration"]).is_ok() =>
            {
                &self.active
            }
            _ => return None,
        };
        let lines = match pipe[..] {
            ["compare"] if self.mode == Mode::Configuration => {
                config::compare(&self.active, &self.candidate)
            }
            ["display", "set"] => statements.iter().map(|s| format!("set {s}")).collect(),
            _ => return None,
        };
        Some((Ok(Output::Text(crlf_lines(lines))), rest))
    }

    /// `show …` in operational mode.
    fn show(&mut self, words: &[Word]) -> Result<Output, (usize, &'static str)> {
        let what = keyword(words, 1, SHOW)?;
        let text = match what {
            "configuration" => {
                no_more(words, 2)?;
                crlf_lines(self.shown(&self.active))
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
    /// A question: printed as is, no prompt after it.
    Asked(Vec<u8>),
}

/// What Junos says of a candidate that differs from the active
/// configuration, entering or leaving configuration mode.
const UNCOMMITTED: &str = "The configuration has been changed but not committed\r\n";

/// What the console prints asking for a login.
fn login_banner() -> String {
    format!("\r\n{HOSTNAME} (ttyu0)\r\n\r\nlogin: ")
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
    use crate::options::{Credentials, SimOptions};

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

    /// A router in configuration mode, its clock fixed at 2026-11-30
    /// 10:21:03 UTC.
    fn configuring() -> JunosRouter {
        let mut router = JunosRouter::new();
        router.wall = || std::time::UNIX_EPOCH + Duration::from_secs(1_796_034_063);
        send(&mut router, "\rconfigure\r");
        router
    }

    #[test]
    fn a_login_checks_the_credentials_and_names_the_prompt() {
        let mut router = JunosRouter::with_options(&SimOptions {
            login: Some(Credentials {
                username: "ops".into(),
                password: "pw".into(),
            }),
            ..SimOptions::default()
        });
        assert_eq!(send(&mut router, "\r"), "\r\nmx1 (ttyu0)\r\n\r\nlogin: ");
        assert_eq!(send(&mut router, "ops\r"), "ops\r\nPassword:");
        assert_eq!(send(&mut router, "bad\r"), "\r\nLogin incorrect\r\nlogin: ");
        send(&mut router, "ops\r");
        let banner = send(&mut router, "pw\r");
        assert!(banner.starts_with("\r\n\r\n--- JUNOS "), "{banner:?}");
        assert!(banner.ends_with("\r\nops@mx1> "));
    }

    #[test]
    fn set_compare_and_commit() {
        let mut router = configuring();
        assert_eq!(
            send(&mut router, "set system host-name mx2\r"),
            "set system host-name mx2\r\n[edit]\r\nadmin@mx1# "
        );
        send(
            &mut router,
            "set interfaces ge-0/0/1 description \"to core\"\r",
        );
        assert_eq!(
            send(&mut router, "show | compare\r"),
            "show | compare\r\n[edit system]\r\n-  host-name mx1;\r\n+  host-name mx2;\r\n\
             [edit interfaces ge-0/0/1]\r\n+  description \"to core\";\r\n\r\n[edit]\r\nadmin@mx1# "
        );
        assert_eq!(
            send(&mut router, "commit check\r"),
            "commit check\r\nconfiguration check succeeds\r\n\r\n[edit]\r\nadmin@mx1# "
        );
        assert!(
            router
                .configuration()
                .contains(&"set system host-name mx1".to_owned())
        );
        assert_eq!(
            send(&mut router, "commit\r"),
            "commit\r\ncommit complete\r\n\r\n[edit]\r\nadmin@mx1# "
        );
        let active = router.configuration();
        assert!(active.contains(&"set system host-name mx2".to_owned()));
        assert!(active.contains(&"set interfaces ge-0/0/1 description \"to core\"".to_owned()));
        send(&mut router, "delete interfaces ge-0/0/1\r");
        assert_eq!(
            send(&mut router, "rollback 0\r"),
            "rollback 0\r\nload complete\r\n\r\n[edit]\r\nadmin@mx1# "
        );
        assert_eq!(
            send(&mut router, "exit\r"),
            "exit\r\nExiting configuration mode\r\n\r\nadmin@mx1> "
        );
        let text = send(
            &mut router,
            "show configuration | display set | match host-name\r",
        );
        assert_eq!(
            text,
            "show configuration | display set | match host-name\r\nset system host-name mx2\r\n\r\nadmin@mx1> "
        );
        send(&mut router, "set cli screen-length 0\r");
        let shown = send(&mut router, "show configuration\r");
        assert!(shown.contains("\r\n## Last commit: 2026-11-30 10:21:03 UTC by admin\r\n"));
        assert!(
            shown.contains("\r\n    ge-0/0/1 {\r\n        description \"to core\";\r\n    }\r\n")
        );
    }

    #[test]
    fn syntax_errors_missing_arguments_and_failed_checks() {
        let mut router = configuring();
        assert_eq!(
            send(&mut router, "set sytem host-name x\r"),
            "set sytem host-name x\r\n               ^\r\nsyntax error.\r\n\r\n[edit]\r\nadmin@mx1# "
        );
        assert_eq!(
            send(&mut router, "set system host-name\r"),
            "set system host-name\r\n                                ^\r\nmissing argument.\r\n\r\n[edit]\r\nadmin@mx1# "
        );
        send(
            &mut router,
            "set interfaces ge-0/0/99 unit 0 family inet address 10.9.9.9\r",
        );
        let failed = "[edit interfaces]\r\n  'ge-0/0/99'\r\n    error: interface ge-0/0/99 does not exist on this router (no such FPC, PIC or port)\r\n\
                      [edit interfaces ge-0/0/99 unit 0 family inet]\r\n  'address 10.9.9.9'\r\n    error: address 10.9.9.9 has no prefix length (write 10.9.9.9/LENGTH)\r\n\
                      error: configuration check-out failed\r\n";
        assert_eq!(
            send(&mut router, "commit check\r"),
            format!("commit check\r\n{failed}\r\n[edit]\r\nadmin@mx1# ")
        );
        let before = router.configuration();
        assert_eq!(
            send(&mut router, "commit\r"),
            format!("commit\r\n{failed}\r\n[edit]\r\nadmin@mx1# ")
        );
        assert_eq!(router.configuration(), before, "nothing committed");
        assert_eq!(
            send(&mut router, "exit\r"),
            "exit\r\nThe configuration has been changed but not committed\r\nExit with uncommitted changes? [yes,no] (yes) "
        );
        assert_eq!(send(&mut router, "no\r"), "no\r\n\r\n[edit]\r\nadmin@mx1# ");
        send(&mut router, "exit\r");
        assert_eq!(
            send(&mut router, "\r"),
            "\r\nExiting configuration mode\r\n\r\nadmin@mx1> "
        );
        assert!(!router.in_config_mode());
        assert_eq!(
            send(&mut router, "configure\r"),
            "configure\r\nEntering configuration mode\r\nThe configuration has been changed but not committed\r\n\r\n[edit]\r\nadmin@mx1# "
        );
    }

    #[test]
    fn an_unconfirmed_commit_rolls_back_with_a_broadcast() {
        let mut router = configuring();
        let before = router.configuration();
        send(&mut router, "set system host-name mx9\r");
        assert_eq!(
            send(&mut router, "commit confirmed 2\r"),
            "commit confirmed 2\r\ncommit confirmed will be automatically rolled back in 2 minutes unless confirmed\r\n\
             commit complete\r\n\r\n# commit confirmed will be rolled back in 2 minutes\r\n[edit]\r\nadmin@mx1# "
        );
        assert!(
            router
                .configuration()
                .contains(&"set system host-name mx9".to_owned())
        );
        let deadline = router.next_deadline().unwrap();
        let mut out = Vec::new();
        router.tick(deadline - Duration::from_millis(1), &mut out);
        assert!(out.is_empty(), "not yet");
        router.tick(deadline, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\r\n\r\nBroadcast Message from root@mx1\r\n        (no tty) at 10:21 UTC...\r\n\r\n\
             Commit was not confirmed; automatic rollback complete.\r\n\r\n"
        );
        assert_eq!(router.configuration(), before);
        assert_eq!(router.candidate(), before);
        assert_eq!(router.next_deadline(), None);
        // A later commit confirms.
        send(
            &mut router,
            "set system host-name mx9\rcommit confirmed 1\r",
        );
        assert_eq!(
            send(&mut router, "commit\r"),
            "commit\r\ncommit complete\r\n\r\n[edit]\r\nadmin@mx1# "
        );
        assert_eq!(router.next_deadline(), None);
    }
}
