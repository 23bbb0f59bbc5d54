//! A Cisco IOS switch console as a synchronous state machine: bytes in, bytes
//! out, no I/O, so every byte it prints can be checked in unit tests.

mod boot;
mod clock;
mod config;
mod error;
mod filter;
mod rommon;
mod running;
mod safety;
mod timers;

use std::mem;
use std::time::{Duration, Instant, SystemTime};

use super::cli::{
    CTRL_Z, Edited, Key, Keys, LastPage, LineEditor, Miss, Paged, Pager, PagerStyle, Quit, Word,
    crlf_lines, page_lines, split_words,
};
use super::options::{Credentials, SimOptions};
use boot::{boot_banner, boot_rest, boot_text};
use clock::{clock_text, log_stamp};
use error::{Error, error_text};
use rommon::{Rommon, RommonEvent};
use running::Configuration;
use timers::{Reload, Revert};

pub use super::options::{ENABLE_PASSWORD, TECH_SUPPORT_LINES};
pub use running::RUNNING_CONFIG_LINES;

/// The terminal length a console session starts with (`terminal length 24`).
pub const DEFAULT_TERMINAL_LENGTH: usize = 24;
/// What the pager prints when a page is full: space, `--More--`, space.
pub const MORE_PROMPT: &[u8] = b" --More-- ";
/// What the pager prints after a key at [`MORE_PROMPT`]: 9 backspaces, 9
/// spaces, 9 backspaces.
pub const MORE_ERASE: &[u8] =
    b"\x08\x08\x08\x08\x08\x08\x08\x08\x08         \x08\x08\x08\x08\x08\x08\x08\x08\x08";
/// What the switch prints when a login is asked for (after RETURN).
pub const LOGIN_BANNER: &str = "\r\nUser Access Verification\r\n\r\nUsername: ";
/// The log message IOS prints on leaving configuration mode.
pub const CONFIG_I: &str = "%SYS-5-CONFIG_I: Configured from console by console";
/// IOS's pager: [`MORE_PROMPT`], erased by [`MORE_ERASE`]; space for a
/// page, RETURN for a line, any other key stops.
const PAGER: PagerStyle = PagerStyle {
    prompt: |_| MORE_PROMPT.to_vec(),
    erase: |_| MORE_ERASE.to_vec(),
    quit: Quit::AnyOtherKey,
    last_page: LastPage::Prompt,
};

const MAX_TERMINAL_LENGTH: usize = 512;
/// Wrong enable passwords before `% Bad secrets`.
const ENABLE_TRIES: u8 = 3;

/// The CLI mode of the switch, which decides the prompt and the commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// User EXEC: `SW1>`.
    UserExec,
    /// Privileged EXEC: `SW1#`.
    Privileged,
    /// Global configuration: `SW1(config)#`.
    Config,
    /// A configuration sub-mode such as `config-if`: `SW1(config-if)#`.
    ConfigSub(&'static str),
}

/// What the console waits for next.
#[derive(Debug)]
enum Input {
    /// A command line, echoed and editable.
    Line,
    /// The enable password, not echoed; wrong ones so far.
    Password { wrong: u8 },
    /// A key at ` --More-- `; the rest of the output waits.
    More(Pager),
    /// A key at `Proceed with reload? [confirm]`: now, or in this many
    /// minutes.
    ReloadConfirm { minutes: Option<u32> },
    /// RETURN at `Press RETURN to get started` (or, with a login, before
    /// `User Access Verification`).
    PressReturn,
    /// The user name at `Username: `, echoed.
    Username,
    /// The password at the login's `Password: `, not echoed.
    LoginPassword { username: Vec<u8> },
    /// The file name at `Destination filename [startup-config]? `.
    CopyDestination,
    /// Lines of a multi-line banner, until one holds the delimiter.
    Banner {
        head: String,
        delimiter: String,
        lines: Vec<String>,
    },
}

/// A command: its words (the command's own word first) to its output.
type Run = fn(&mut CiscoSwitch, &[Word]) -> Result<Vec<u8>, Error>;

const USER_EXEC: &[(&str, Run)] = &[
    ("disable", CiscoSwitch::disable),
    ("enable", CiscoSwitch::enable),
    ("exit", CiscoSwitch::logout),
    ("logout", CiscoSwitch::logout),
    ("show", CiscoSwitch::show),
    ("terminal", CiscoSwitch::terminal),
];

const PRIVILEGED: &[(&str, Run)] = &[
    ("configure", CiscoSwitch::configure),
    ("copy", CiscoSwitch::copy),
    ("disable", CiscoSwitch::disable),
    ("enable", CiscoSwitch::enable),
    ("exit", CiscoSwitch::logout),
    ("logout", CiscoSwitch::logout),
    ("reload", CiscoSwitch::reload),
    ("show", CiscoSwitch::show),
    ("terminal", CiscoSwitch::terminal),
    ("write", CiscoSwitch::write),
];

/// What `do` runs from configuration mode.
const DO: &[(&str, Run)] = &[
    ("show", CiscoSwitch::show),
    ("terminal", CiscoSwitch::terminal),
    ("write", CiscoSwitch::write),
];

const SHOW_USER: &[(&str, Run)] = &[
    ("clock", CiscoSwitch::show_clock),
    ("interfaces", CiscoSwitch::show_interfaces),
    ("ip", CiscoSwitch::show_ip),
    ("version", CiscoSwitch::show_version),
];

const SHOW_PRIVILEGED: &[(&str, Run)] = &[
    ("clock", CiscoSwitch::show_clock),
    ("interfaces", CiscoSwitch::show_interfaces),
    ("ip", CiscoSwitch::show_ip),
    ("reload", CiscoSwitch::show_reload),
    ("running-config", CiscoSwitch::show_running_config),
    ("startup-config", CiscoSwitch::show_startup_config),
    ("tech-support", CiscoSwitch::show_tech_support),
    ("version", CiscoSwitch::show_version),
];

/// A Cisco IOS (Catalyst 2960-X) switch as seen on its console port.
///
/// [`feed`](Self::feed) takes the bytes the switch receives and appends what
/// it sends back: echo, command output, the pager and prompts, byte for byte
/// as IOS prints them. It starts silent at user EXEC (or, with a login, at
/// `Press RETURN`; or in ROMMON); the first RETURN shows `SW1>` (or
/// [`LOGIN_BANNER`]). `enable` asks for the enable secret (three tries,
/// then `% Bad secrets`); `show version`, `show clock`, `show
/// running-config` (the running configuration, at first
/// [`running_config_lines`]), `show startup-config`, `show tech-support`
/// ([`tech_support_line`]), `terminal length`, `configure terminal [revert
/// timer N]`, `configure confirm`, configuration commands that change the
/// running configuration (`hostname`, `interface`, `vlan`, `ntp`, `no`…),
/// `write memory`, `copy running-config startup-config`, `reload [in N |
/// cancel]` and `exit` behave as on IOS, with unique abbreviations and
/// IOS's `% Invalid input` marker. Timers (a revert timer, a scheduled
/// reload) fire in [`tick`](Self::tick), at [`next_deadline`](Self::next_deadline).
#[derive(Debug)]
pub struct CiscoSwitch {
    mode: Mode,
    input: Input,
    /// The command line (or password) typed so far.
    editor: LineEditor,
    /// `terminal length`; 0 means no paging.
    length: usize,
    keys: Keys,
    booted: Instant,
    /// The running configuration, which holds the hostname.
    running: Configuration,
    /// What `write memory` saved, and a reload brings back.
    startup: Configuration,
    /// The head of the block a configuration sub-mode edits
    /// (`interface Loopback0`).
    block: Option<String>,
    /// What the login accepts, if the console asks for one.
    login: Option<Credentials>,
    /// What `enable` accepts.
    enable_secret: String,
    /// How long a minute of the timers lasts.
    minute: Duration,
    /// A `configure terminal revert timer` waiting for `configure confirm`.
    revert: Option<Revert>,
    /// Backups made for revert timers so far (they number the files).
    backups: u32,
    /// A `reload in N` waiting to fire.
    reload_at: Option<Reload>,
    /// Log messages held back until the prompt (`logging synchronous`).
    pending: Vec<String>,
    /// The ROMMON monitor, while the switch is in it.
    rommon: Option<Rommon>,
    /// Lines `show tech-support` prints.
    tech_support_lines: usize,
    /// A boot in its first seconds: until when a break stops it in
    /// ROMMON, and the break bytes seen so far.
    booting: Option<(Instant, Vec<u8>)>,
    /// How long [`booting`](Self::booting) lasts (0: no window).
    boot_window: Duration,
    /// Blocks ROMMON's transfers damage or lose (tests).
    faults: super::options::BlockFaults,
    /// The wall clock for log timestamps (fixed in tests).
    wall: fn() -> SystemTime,
}

impl CiscoSwitch {
    /// A switch named `hostname`, powered on, at user EXEC, printing nothing
    /// until it receives something.
    pub fn new(hostname: &str) -> CiscoSwitch {
        CiscoSwitch::with_options(hostname, &SimOptions::default())
    }

    /// A switch named `hostname` with `options`: a login first, another
    /// enable secret, shorter minutes, or ROMMON at power-on.
    pub fn with_options(hostname: &str, options: &SimOptions) -> CiscoSwitch {
        let running = Configuration::baseline(hostname);
        CiscoSwitch {
            mode: Mode::UserExec,
            input: if options.login.is_some() {
                Input::PressReturn
            } else {
                Input::Line
            },
            editor: LineEditor::default(),
            length: DEFAULT_TERMINAL_LENGTH,
            keys: Keys::default(),
            booted: Instant::now(),
            startup: running.clone(),
            running,
            block: None,
            login: options.login.clone(),
            enable_secret: options.enable_secret.clone(),
            minute: options.minute,
            revert: None,
            backups: 0,
            reload_at: None,
            pending: Vec::new(),
            tech_support_lines: options.tech_support_lines,
            rommon: options
                .rommon
                .then(|| Rommon::with_faults(options.faults.clone())),
            booting: None,
            boot_window: options.boot_window,
            faults: options.faults.clone(),
            wall: SystemTime::now,
        }
    }

    /// The current hostname (`hostname X` changes it).
    pub fn hostname(&self) -> &str {
        self.running.hostname()
    }

    /// The current CLI mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Whether the switch is in a configuration mode (config, config-*).
    pub fn in_config_mode(&self) -> bool {
        matches!(self.mode, Mode::Config | Mode::ConfigSub(_))
    }

    /// The running configuration's lines, from the first `!` to `end`.
    pub fn configuration(&self) -> Vec<String> {
        self.running.body().to_vec()
    }

    /// The startup configuration's lines (what `write memory` saved).
    pub fn startup_configuration(&self) -> Vec<String> {
        self.startup.body().to_vec()
    }

    /// Whether the switch is at the ROMMON prompt.
    pub fn in_rommon(&self) -> bool {
        self.rommon.is_some()
    }

    /// The prompt of the current mode, e.g. `SW1(config)#`.
    pub fn prompt(&self) -> String {
        let host = self.hostname();
        match self.mode {
            Mode::UserExec => format!("{host}>"),
            Mode::Privileged => format!("{host}#"),
            Mode::Config => format!("{host}(config)#"),
            Mode::ConfigSub(sub) => format!("{host}({sub})#"),
        }
    }

    /// When the next timer fires: a revert timer's warning or rollback, a
    /// scheduled reload.
    pub fn next_deadline(&mut self) -> Option<Instant> {
        let revert = self.revert.as_ref().map(Revert::next);
        let reload = self.reload_at.as_ref().map(|r| r.deadline);
        let boot = self.booting.as_ref().map(|(at, _)| *at);
        let rommon = self.rommon.as_mut().and_then(Rommon::next_deadline);
        revert
            .into_iter()
            .chain(reload)
            .chain(boot)
            .chain(rommon)
            .min()
    }

    /// The speed the switch's console UART runs at, when it models one
    /// (ROMMON after `xmodem -s`); `None`: any speed reads it.
    pub fn line_speed(&self) -> Option<u32> {
        self.rommon.as_ref().and_then(Rommon::line_speed)
    }

    /// Fires the timers due at `now` and appends what the switch prints.
    pub fn tick(&mut self, now: Instant, out: &mut Vec<u8>) {
        if self.booting.as_ref().is_some_and(|(at, _)| *at <= now) {
            self.booting = None;
            out.extend_from_slice(boot_rest().as_bytes());
        }
        if let Some(rommon) = &mut self.rommon {
            rommon.tick(now, out);
        }
        self.tick_revert(now, out);
        if self.reload_at.as_ref().is_some_and(|r| r.deadline <= now) {
            self.reload_now(out);
        }
    }

    /// Consumes `input`, bytes the switch received on its console, and
    /// appends to `out` what the switch sends back in reply.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for (i, &byte) in input.iter().enumerate() {
            if let Some(rommon) = &mut self.rommon
                && rommon.raw()
            {
                rommon.feed_raw(&input[i..], out);
                return;
            }
            if let Some((_, seen)) = &mut self.booting {
                // Early boot reads no keys; a break stops it in ROMMON.
                seen.push(byte);
                if seen.ends_with(BREAK_BYTES) {
                    self.booting = None;
                    self.rommon = Some(Rommon::interrupted(self.faults.clone(), out));
                } else if seen.len() > 64 {
                    seen.drain(..32);
                }
                continue;
            }
            let Some(key) = self.keys.key(byte) else {
                continue;
            };
            if let Some(rommon) = &mut self.rommon {
                if rommon.key(key, out) == RommonEvent::Boot {
                    self.rommon = None;
                    out.extend_from_slice(rommon::boot_text().as_bytes());
                    self.power_on();
                }
                continue;
            }
            match self.input {
                Input::Line => self.edit(key, out),
                Input::Password { .. } => self.password_key(key, out),
                Input::More(_) => self.more_key(key, out),
                Input::ReloadConfirm { .. } => self.reload_key(key, out),
                Input::PressReturn => {
                    if key == Key::Return {
                        if self.login.is_some() {
                            self.input = Input::Username;
                            out.extend_from_slice(LOGIN_BANNER.as_bytes());
                        } else {
                            self.input = Input::Line;
                            out.extend_from_slice(b"\r\n");
                            self.print_prompt(out);
                        }
                    }
                }
                Input::Username => self.username_key(key, out),
                Input::LoginPassword { .. } => self.login_password_key(key, out),
                Input::CopyDestination => self.copy_destination_key(key, out),
                Input::Banner { .. } => self.banner_key(key, out),
            }
        }
    }

    /// A key at the command line: echo and edit, or run the line.
    fn edit(&mut self, key: Key, out: &mut Vec<u8>) {
        match self.editor.key(key, out) {
            Edited::Line(line) => self.execute(&line, out),
            Edited::Control(CTRL_Z) if self.in_config_mode() => {
                self.editor.clear();
                self.leave_config();
                out.extend_from_slice(b"^Z\r\n");
                self.print_prompt(out);
            }
            _ => {}
        }
    }

    /// A key at `Password: ` after `enable`: nothing is echoed; three
    /// wrong ones and IOS gives up.
    fn password_key(&mut self, key: Key, out: &mut Vec<u8>) {
        let Input::Password { wrong } = self.input else {
            return;
        };
        if let Edited::Line(password) = self.editor.secret_key(key, out) {
            if password == self.enable_secret.as_bytes() {
                self.input = Input::Line;
                self.mode = Mode::Privileged;
            } else if wrong + 1 < ENABLE_TRIES {
                self.input = Input::Password { wrong: wrong + 1 };
                return out.extend_from_slice(b"Password: ");
            } else {
                self.input = Input::Line;
                out.extend_from_slice(b"% Bad secrets\r\n\r\n");
            }
            self.print_prompt(out);
        }
    }

    /// A key at the login's `Username: `.
    fn username_key(&mut self, key: Key, out: &mut Vec<u8>) {
        match self.editor.key(key, out) {
            Edited::Line(username) if username.is_empty() => out.extend_from_slice(b"Username: "),
            Edited::Line(username) => {
                self.input = Input::LoginPassword { username };
                out.extend_from_slice(b"Password: ");
            }
            _ => {}
        }
    }

    /// A key at the login's `Password: `: the right pair lands at user
    /// EXEC, a wrong one asks again.
    fn login_password_key(&mut self, key: Key, out: &mut Vec<u8>) {
        let Edited::Line(password) = self.editor.secret_key(key, out) else {
            return;
        };
        let Input::LoginPassword { username } = mem::replace(&mut self.input, Input::Username)
        else {
            return;
        };
        let accepted = self
            .login
            .as_ref()
            .is_some_and(|login| login.accept(&username, &password));
        if accepted {
            self.input = Input::Line;
            self.mode = Mode::UserExec;
            out.extend_from_slice(b"\r\n");
            self.print_prompt(out);
        } else {
            out.extend_from_slice(b"% Login invalid\r\n\r\nUsername: ");
        }
    }

    /// A key at ` --More-- `; the prompt follows the end of the output.
    /// The key is not echoed.
    fn more_key(&mut self, key: Key, out: &mut Vec<u8>) {
        if let Input::More(pager) = &mut self.input
            && pager.key(key, out) == Paged::Done
        {
            self.input = Input::Line;
            self.print_prompt(out);
        }
    }

    /// A key at `Proceed with reload? [confirm]`: RETURN or `y` reboots
    /// now or schedules the reload.
    fn reload_key(&mut self, key: Key, out: &mut Vec<u8>) {
        let Input::ReloadConfirm { minutes } = mem::replace(&mut self.input, Input::Line) else {
            return;
        };
        out.extend_from_slice(b"\r\n");
        let confirmed = matches!(key, Key::Return | Key::Char(b'y' | b'Y'));
        match minutes {
            _ if !confirmed => self.print_prompt(out),
            None => self.boot(out),
            Some(minutes) => {
                self.reload_at = Some(Reload::new(minutes, Instant::now(), self.minute));
                self.print_prompt(out);
            }
        }
    }

    /// A scheduled reload fires: whatever the console was doing, the
    /// switch shuts down and boots.
    fn reload_now(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(timers::SHUTDOWN_NOW.as_bytes());
        self.boot(out);
    }

    /// Power comes back after an outage: whatever ROMMON or a boot was
    /// doing is gone, and the switch boots from its boot loader's banner
    /// (with the boot window, where a break stops it in ROMMON).
    pub fn power_restored(&mut self, out: &mut Vec<u8>) {
        self.rommon = None;
        self.booting = None;
        let banner = boot_banner();
        if self.boot_window.is_zero() {
            self.power_on();
            return out.extend_from_slice(banner.as_bytes());
        }
        let rest = boot_rest();
        out.extend_from_slice(&banner.as_bytes()[..banner.len() - rest.len()]);
        self.power_on();
        self.booting = Some((Instant::now() + self.boot_window, Vec::new()));
    }

    /// Reboots: with a boot window, the boot loader's banner, then (unless
    /// a break comes first) the rest in [`tick`](Self::tick).
    fn boot(&mut self, out: &mut Vec<u8>) {
        self.power_on();
        if self.boot_window.is_zero() {
            out.extend_from_slice(boot_text((self.wall)()).as_bytes());
            return;
        }
        let text = boot_text((self.wall)());
        let rest = boot_rest();
        out.extend_from_slice(&text.as_bytes()[..text.len() - rest.len()]);
        self.booting = Some((Instant::now() + self.boot_window, Vec::new()));
    }

    /// The switch comes up from a boot: the startup configuration runs,
    /// timers are gone, the console waits for RETURN.
    fn power_on(&mut self) {
        self.running = self.startup.clone();
        self.mode = Mode::UserExec;
        self.block = None;
        self.length = DEFAULT_TERMINAL_LENGTH;
        self.booted = Instant::now();
        self.revert = None;
        self.reload_at = None;
        self.pending.clear();
        self.editor.clear();
        self.input = Input::PressReturn;
    }

    /// Runs one command line and prints its output (paged) and the prompt.
    fn execute(&mut self, line: &[u8], out: &mut Vec<u8>) {
        // `show … | include REGEX`: the command, then its lines filtered.
        let exec = matches!(self.mode, Mode::UserExec | Mode::Privileged);
        let (command, filter) = match filter::split(line) {
            Some((command, filter)) if exec => (command, Some(filter)),
            _ => (line, None),
        };
        let words = split_words(command);
        if words.is_empty() {
            return self.print_prompt(out);
        }
        let prompt_len = self.prompt().len();
        let table = if self.mode == Mode::UserExec {
            USER_EXEC
        } else {
            PRIVILEGED
        };
        let result = match self.mode {
            Mode::Config | Mode::ConfigSub(_) => self.configure_line(&words, line, false),
            _ => match (lookup(table, words[0]), filter) {
                (Err(e), _) => Err(e),
                (Ok(run), None) => run(self, &words),
                // Only show commands take a filter: IOS marks the pipe.
                (Ok(_), Some(_)) if !is_show(words[0]) => Err(Error::Invalid(command.len())),
                (Ok(_), Some(Err(e))) => Err(e),
                (Ok(run), Some(Ok(filter))) => run(self, &words).map(|text| filter.apply(&text)),
            },
        };
        match result {
            // The command asked for a password or a confirmation: no prompt.
            Ok(text) if !matches!(self.input, Input::Line) => out.extend_from_slice(&text),
            Ok(text) => self.print_output(text, out),
            Err(error) => {
                let text = error_text(&error, prompt_len, line, words[0].at);
                self.print_output(text.into_bytes(), out)
            }
        }
    }

    /// Starts printing `text` through the pager (pages of the terminal
    /// length, less the `--More--` line), then the prompt.
    fn print_output(&mut self, text: Vec<u8>, out: &mut Vec<u8>) {
        match Pager::start(PAGER, text, page_lines(self.length), out) {
            Some(pager) => self.input = Input::More(pager),
            None => self.print_prompt(out),
        }
    }

    /// The prompt, then any held-back log messages and the prompt again
    /// (`logging synchronous`, as on the switch's `line con 0`).
    fn print_prompt(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.prompt().as_bytes());
        self.flush_logs(out);
    }

    /// Prints the held-back messages, each on a line of its own, then the
    /// prompt and the line typed so far again.
    fn flush_logs(&mut self, out: &mut Vec<u8>) {
        if self.pending.is_empty() {
            return;
        }
        for message in mem::take(&mut self.pending) {
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(message.as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(self.prompt().as_bytes());
        out.extend_from_slice(self.editor.line());
    }

    /// Holds `message` (e.g. `%SYS-5-CONFIG_I: …`) with its timestamp for
    /// the next prompt.
    fn log(&mut self, message: &str) {
        let line = format!("{}: {message}", log_stamp((self.wall)()));
        self.pending.push(line);
    }

    /// Prints the held-back messages of a timer at once, over the line
    /// being typed, when the console is at the command line; else they
    /// wait for the next prompt.
    fn flush_if_idle(&mut self, out: &mut Vec<u8>) {
        if matches!(self.input, Input::Line) {
            self.flush_logs(out);
        }
    }

    /// Back to privileged EXEC from a configuration mode, logged.
    fn leave_config(&mut self) {
        self.mode = Mode::Privileged;
        self.block = None;
        self.log(CONFIG_I);
    }

    fn disable(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        no_more_words(words, 1)?;
        self.mode = Mode::UserExec;
        Ok(Vec::new())
    }

    fn enable(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        no_more_words(words, 1)?;
        if self.mode == Mode::Privileged {
            return Ok(Vec::new());
        }
        self.input = Input::Password { wrong: 0 };
        Ok(b"Password: ".to_vec())
    }

    fn logout(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        no_more_words(words, 1)?;
        self.mode = Mode::UserExec;
        self.length = DEFAULT_TERMINAL_LENGTH;
        self.input = Input::PressReturn;
        let host = self.hostname();
        let text =
            format!("\r\n\r\n{host} con0 is now available\r\n\r\nPress RETURN to get started.\r\n");
        Ok(text.into_bytes())
    }

    /// `configure terminal [revert timer N]` and `configure confirm`.
    fn configure(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        let target = words.get(1).ok_or(Error::Incomplete)?;
        if *lookup(&[("confirm", true), ("terminal", false)], *target)? {
            no_more_words(words, 2)?;
            return Ok(self.confirm());
        }
        let mut text = Vec::new();
        if let Some(revert) = words.get(2) {
            lookup(&[("revert", ())], *revert)?;
            lookup(&[("timer", ())], *words.get(3).ok_or(Error::Incomplete)?)?;
            let minutes = words.get(4).ok_or(Error::Incomplete)?;
            let minutes = number(*minutes, 1..=120)?;
            no_more_words(words, 5)?;
            text = self.arm_revert(minutes);
        }
        no_more_words(words, 5)?;
        self.mode = Mode::Config;
        text.extend_from_slice(
            b"Enter configuration commands, one per line.  End with CNTL/Z.\r\n",
        );
        Ok(text)
    }

    /// `reload`, `reload in N` (minutes) and `reload cancel`.
    fn reload(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        let Some(how) = words.get(1) else {
            self.input = Input::ReloadConfirm { minutes: None };
            return Ok(b"Proceed with reload? [confirm]".to_vec());
        };
        if *lookup(&[("cancel", true), ("in", false)], *how)? {
            no_more_words(words, 2)?;
            return Ok(match self.reload_at.take() {
                Some(_) => timers::SHUTDOWN_ABORTED.as_bytes().to_vec(),
                None => b"% No reload is scheduled.\r\n".to_vec(),
            });
        }
        let minutes = number(*words.get(2).ok_or(Error::Incomplete)?, 1..=14_400)?;
        no_more_words(words, 3)?;
        self.input = Input::ReloadConfirm {
            minutes: Some(minutes),
        };
        Ok(format!(
            "Reload scheduled in {minutes} minutes by console\r\nProceed with reload? [confirm]"
        )
        .into_bytes())
    }

    fn write(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        if let Some(target) = words.get(1) {
            lookup(&[("memory", ())], *target)?;
        }
        no_more_words(words, 2)?;
        Ok(self.save())
    }

    /// `copy running-config startup-config`: asks for the destination.
    fn copy(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        lookup(
            &[("running-config", ())],
            *words.get(1).ok_or(Error::Incomplete)?,
        )?;
        lookup(
            &[("startup-config", ())],
            *words.get(2).ok_or(Error::Incomplete)?,
        )?;
        no_more_words(words, 3)?;
        self.input = Input::CopyDestination;
        Ok(b"Destination filename [startup-config]? ".to_vec())
    }

    /// A key at `Destination filename [startup-config]? `.
    fn copy_destination_key(&mut self, key: Key, out: &mut Vec<u8>) {
        if let Edited::Line(_) = self.editor.key(key, out) {
            self.input = Input::Line;
            let text = self.save();
            self.print_output(text, out);
        }
    }

    /// Saves the running configuration as the startup one.
    fn save(&mut self) -> Vec<u8> {
        self.startup = self.running.clone();
        b"Building configuration...\r\n[OK]\r\n".to_vec()
    }

    fn terminal(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        let setting = words.get(1).ok_or(Error::Incomplete)?;
        let is_length = *lookup(&[("length", true), ("width", false)], *setting)?;
        let value = words.get(2).ok_or(Error::Incomplete)?;
        let number = std::str::from_utf8(value.text)
            .ok()
            .and_then(|text| text.parse::<usize>().ok())
            .filter(|&n| n <= MAX_TERMINAL_LENGTH)
            .ok_or(Error::Invalid(value.at))?;
        no_more_words(words, 3)?;
        if is_length {
            self.length = number;
        }
        Ok(Vec::new())
    }

    fn show(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        let what = words.get(1).ok_or(Error::Incomplete)?;
        let table = if self.mode == Mode::UserExec {
            SHOW_USER
        } else {
            SHOW_PRIVILEGED
        };
        let run = lookup(table, *what)?;
        run(self, words)
    }

    /// `show ip interface brief`, the one `show ip` the switch offers.
    fn show_ip(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        let interface = words.get(2).ok_or(Error::Incomplete)?;
        lookup(&[("interface", ())], *interface)?;
        let brief = words.get(3).ok_or(Error::Incomplete)?;
        lookup(&[("brief", ())], *brief)?;
        no_more_words(words, 4)?;
        Ok(crlf_lines(IP_INTERFACE_BRIEF.iter().copied()))
    }

    /// `show interfaces status`, the one `show interfaces` the switch offers.
    fn show_interfaces(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        let status = words.get(2).ok_or(Error::Incomplete)?;
        lookup(&[("status", ())], *status)?;
        no_more_words(words, 3)?;
        Ok(crlf_lines(INTERFACES_STATUS.iter().copied()))
    }

    fn show_clock(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        no_more_words(words, 2)?;
        Ok(format!("{}\r\n", clock_text(SystemTime::now())).into_bytes())
    }

    fn show_version(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        no_more_words(words, 2)?;
        let uptime = uptime_text(self.booted.elapsed().as_secs());
        Ok(version_text(self.hostname(), &uptime).into_bytes())
    }

    fn show_running_config(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        no_more_words(words, 2)?;
        Ok(crlf_lines(self.running.show_lines()))
    }

    fn show_startup_config(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        no_more_words(words, 2)?;
        Ok(crlf_lines(self.startup.startup_lines()))
    }

    fn show_reload(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        no_more_words(words, 2)?;
        Ok(match &self.reload_at {
            Some(reload) => reload.show(Instant::now(), self.minute),
            None => "No reload is scheduled.\r\n".to_owned(),
        }
        .into_bytes())
    }

    fn show_tech_support(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        no_more_words(words, 2)?;
        Ok(crlf_lines(
            (1..=self.tech_support_lines).map(tech_support_line),
        ))
    }

    fn do_exec(&mut self, words: &[Word]) -> Result<Vec<u8>, Error> {
        let command = words.get(1).ok_or(Error::Incomplete)?;
        let run = lookup(DO, *command)?;
        // `show` decides what it offers by the mode: run it as privileged.
        let mode = mem::replace(&mut self.mode, Mode::Privileged);
        let result = run(self, &words[1..]);
        self.mode = mode;
        result
    }
}

/// Whether `word` names `show`.
fn is_show(word: Word) -> bool {
    super::cli::is_abbreviation(word.text, "show")
}

/// The entry of `table` that `word` names or uniquely abbreviates, or the
/// error IOS reports for it.
fn lookup<'t, T>(table: &'t [(&'static str, T)], word: Word) -> Result<&'t T, Error> {
    super::cli::lookup(word.text, table).map_err(|miss| match miss {
        Miss::Ambiguous => Error::Ambiguous(word.end()),
        Miss::Unknown => Error::Invalid(word.at),
    })
}

/// The number `word` is, within `range`, or IOS's marker under it.
fn number(word: Word, range: std::ops::RangeInclusive<u32>) -> Result<u32, Error> {
    std::str::from_utf8(word.text)
        .ok()
        .and_then(|text| text.parse::<u32>().ok())
        .filter(|n| range.contains(n))
        .ok_or(Error::Invalid(word.at))
}

/// Refuses words past the first `count`.
fn no_more_words(words: &[Word], count: usize) -> Result<(), Error> {
    match words.get(count) {
        Some(extra) => Err(Error::Invalid(extra.at)),
        None => Ok(()),
    }
}

/// The exact lines (without line ends) of `show running-config` on a switch
/// named `SW1` as shipped: [`RUNNING_CONFIG_LINES`] lines from `Building
/// configuration...` to `end`, each interface with a unique description.
pub fn running_config_lines() -> Vec<String> {
    Configuration::baseline("SW1").show_lines()
}

/// Line `n` (from 1) of `show tech-support`: 78 characters that start with
/// `n` as 6 digits.
pub fn tech_support_line(n: usize) -> String {
    let line = format!(
        "{n:06} GigabitEthernet{}/0/{:<2} {} packets input, {} bytes, 0 no buffer",
        1 + n / 52 % 8,
        1 + n % 52,
        n * 7,
        n * 613
    );
    format!("{line:<78.78}")
}

/// `show ip interface brief` as a 2960-X prints it (columns padded with
/// spaces, a trailing blank after the protocol).
const IP_INTERFACE_BRIEF: &[&str] = &[
    "Interface              IP-Address      OK? Method Status                Protocol",
    "Vlan1                  10.0.0.2        YES NVRAM  up                    up      ",
    "FastEthernet0          unassigned      YES NVRAM  administratively down down    ",
    "GigabitEthernet1/0/1   unassigned      YES unset  up                    up      ",
    "GigabitEthernet1/0/2   unassigned      YES unset  down                  down    ",
    "GigabitEthernet1/0/3   unassigned      YES unset  down                  down    ",
    "GigabitEthernet1/0/49  unassigned      YES unset  up                    up      ",
];

/// `show interfaces status` as a 2960-X prints it.
const INTERFACES_STATUS: &[&str] = &[
    "",
    "Port      Name               Status       Vlan       Duplex  Speed Type ",
    "Gi1/0/1   uplink to core     connected    trunk      a-full a-1000 10/100/1000BaseTX",
    "Gi1/0/2                      notconnect   1            auto   auto 10/100/1000BaseTX",
    "Gi1/0/3   printer room       notconnect   20           auto   auto 10/100/1000BaseTX",
    "Gi1/0/49                     connected    trunk        full    10G SFP-10GBase-SR",
];

fn version_text(hostname: &str, uptime: &str) -> String {
    let lines = [
        "Cisco IOS Software, C2960X Software (C2960X-UNIVERSALK9-M), Version 15.2(7)E4, RELEASE SOFTWARE (fc2)",
        "Technical Support: http://www.cisco.com/techsupport",
        "Copyright (c) 1986-2021 by Cisco Systems, Inc.",
        "Compiled Mon 08-Feb-21 23:02 by prod_rel_team",
        "",
        "ROM: Bootstrap program is C2960X boot loader",
        "BOOTLDR: C2960X Boot Loader (C2960X-HBOOT-M) Version 15.2(7r)E2, RELEASE SOFTWARE (fc1)",
        "",
        &format!("{hostname} uptime is {uptime}"),
        "System returned to ROM by power-on",
        "System image file is \"flash:c2960x-universalk9-mz.152-7.E4.bin\"",
        "Last reload reason: power-on",
        "",
        "cisco WS-C2960X-48TS-L (APM86XXX) processor (revision D0) with 524288K bytes of memory.",
        "Processor board ID FOC2145Z1AB",
        "Last reset from power-on",
        "1 Virtual Ethernet interface",
        "1 FastEthernet interface",
        "52 Gigabit Ethernet interfaces",
        "The password-recovery mechanism is enabled.",
        "",
        "512K bytes of flash-simulated non-volatile configuration memory.",
        "Base ethernet MAC Address       : 70:1F:53:A1:B2:00",
        "Model number                    : WS-C2960X-48TS-L",
        "System serial number            : FOC2145Z1AB",
        "",
        "Switch Ports Model                     SW Version            SW Image",
        "------ ----- -----                     ----------            ----------",
        "*    1 52    WS-C2960X-48TS-L          15.2(7)E4             C2960X-UNIVERSALK9-M",
        "",
        "Configuration register is 0xF",
        "",
    ];
    String::from_utf8(crlf_lines(lines)).expect("ASCII")
}

/// IOS's uptime: `1 week, 2 days, 3 hours, 4 minutes`, from the first
/// non-zero unit on; minutes always.
fn uptime_text(seconds: u64) -> String {
    let minutes = seconds / 60;
    let units = [
        (minutes / (7 * 24 * 60), "week"),
        (minutes / (24 * 60) % 7, "day"),
        (minutes / 60 % 24, "hour"),
        (minutes % 60, "minute"),
    ];
    let first = units
        .iter()
        .position(|&(n, _)| n > 0)
        .unwrap_or(units.len() - 1);
    let parts: Vec<String> = units[first..]
        .iter()
        .map(|&(n, unit)| format!("{n} {unit}{}", if n == 1 { "" } else { "s" }))
        .collect();
    parts.join(", ")
}

/// What a pty can carry of a BREAK: nothing (Linux's pty driver drops
/// TIOCSBRK), so in its first seconds of boot the simulated switch takes
/// the alternate break, CR `~` Ctrl-B (Solaris' and conserver's), as one.
pub const BREAK_BYTES: &[u8] = b"\r~\x02";

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// Feeds `input` and returns what the switch printed, as text.
    pub(super) fn send(switch: &mut CiscoSwitch, input: &str) -> String {
        let mut out = Vec::new();
        switch.feed(input.as_bytes(), &mut out);
        String::from_utf8(out).expect("the switch prints UTF-8 here")
    }

    /// 2026-11-30 10:21:03.045 UTC, for log timestamps.
    fn fixed_clock() -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_796_034_063_045)
    }

    /// A switch with `options` whose log timestamps are [`fixed_clock`].
    pub(super) fn switch_with(options: &SimOptions) -> CiscoSwitch {
        let mut switch = CiscoSwitch::with_options("SW1", options);
        switch.wall = fixed_clock;
        switch
    }

    /// What IOS logs on leaving configuration mode, then `prompt` again.
    pub(super) fn config_i(prompt: &str) -> String {
        format!("{prompt}\r\n*Nov 30 10:21:03.045: {CONFIG_I}\r\n{prompt}")
    }

    pub(super) fn privileged() -> CiscoSwitch {
        let mut switch = switch_with(&SimOptions::default());
        send(&mut switch, "\renable\rcisco\r");
        assert_eq!(switch.mode(), Mode::Privileged);
        switch
    }

    /// Removes every ` --More-- ` and the erase that follows it.
    fn strip_pager(text: &str) -> String {
        let more = std::str::from_utf8(MORE_PROMPT).unwrap();
        let erase = std::str::from_utf8(MORE_ERASE).unwrap();
        text.replace(&format!("{more}{erase}"), "")
    }

    #[test]
    fn starts_silent_and_prompts_on_return() {
        let mut switch = CiscoSwitch::new("SW1");
        assert_eq!(send(&mut switch, ""), "");
        assert_eq!(send(&mut switch, "\r"), "\r\nSW1>");
        assert_eq!(send(&mut switch, "\r\n"), "\r\nSW1>", "CR LF is one RETURN");
        assert_eq!(send(&mut switch, "\n\r"), "\r\nSW1>", "LF CR is one RETURN");
        assert_eq!(send(&mut switch, "\r\r"), "\r\nSW1>\r\nSW1>");
    }

    #[test]
    fn echoes_byte_by_byte_and_erases() {
        let mut switch = CiscoSwitch::new("SW1");
        let mut echoed = String::new();
        for byte in "shx".chars() {
            echoed += &send(&mut switch, &byte.to_string());
        }
        assert_eq!(echoed, "shx");
        assert_eq!(send(&mut switch, "\x7f"), "\x08 \x08");
        assert_eq!(send(&mut switch, "\x08\x08\x08"), "\x08 \x08\x08 \x08");
        assert_eq!(
            send(&mut switch, "\x01\x1b"),
            "",
            "control bytes are ignored"
        );
        assert_eq!(send(&mut switch, "\r"), "\r\nSW1>");
    }

    #[test]
    fn enable_hides_the_password() {
        let mut switch = CiscoSwitch::new("SW1");
        assert_eq!(send(&mut switch, "en\r"), "en\r\nPassword: ");
        assert_eq!(send(&mut switch, "cisco"), "");
        assert_eq!(send(&mut switch, "\r"), "\r\nSW1#");
        assert_eq!(send(&mut switch, "disable\r"), "disable\r\nSW1>");
        send(&mut switch, "enable\r");
        assert_eq!(send(&mut switch, "cisko\r"), "\r\nPassword: ");
        assert_eq!(send(&mut switch, "x\r"), "\r\nPassword: ");
        assert_eq!(
            send(&mut switch, "cisko\r"),
            "\r\n% Bad secrets\r\n\r\nSW1>"
        );
        assert_eq!(switch.mode(), Mode::UserExec);
    }

    #[test]
    fn marks_invalid_input_under_the_bad_word() {
        let mut switch = privileged();
        assert_eq!(
            send(&mut switch, "show foo\r"),
            "show foo\r\n         ^\r\n% Invalid input detected at '^' marker.\r\n\r\nSW1#"
        );
        let mut user = CiscoSwitch::new("SW1");
        assert_eq!(
            send(&mut user, "sh run\r"),
            "sh run\r\n       ^\r\n% Invalid input detected at '^' marker.\r\n\r\nSW1>"
        );
        assert_eq!(
            send(&mut user, "conf t\r"),
            "conf t\r\n    ^\r\n% Invalid input detected at '^' marker.\r\n\r\nSW1>"
        );
        assert_eq!(
            send(&mut switch, "show version now\r"),
            "show version now\r\n                 ^\r\n% Invalid input detected at '^' marker.\r\n\r\nSW1#"
        );
        assert_eq!(
            send(&mut switch, "show\r"),
            "show\r\n% Incomplete command.\r\n\r\nSW1#"
        );
        assert_eq!(
            send(&mut switch, "e\r"),
            "e\r\n% Ambiguous command:  \"e\"\r\nSW1#"
        );
    }

    #[test]
    fn configuration_modes_and_prompts() {
        let mut switch = privileged();
        assert_eq!(
            send(&mut switch, "conf t\r"),
            "conf t\r\nEnter configuration commands, one per line.  End with CNTL/Z.\r\nSW1(config)#"
        );
        assert_eq!(
            send(&mut switch, "int Gi1/0/1\r"),
            "int Gi1/0/1\r\nSW1(config-if)#"
        );
        assert_eq!(
            send(&mut switch, " no shutdown\r"),
            " no shutdown\r\nSW1(config-if)#"
        );
        assert_eq!(send(&mut switch, "exit\r"), "exit\r\nSW1(config)#");
        assert_eq!(
            send(&mut switch, "hostname core-1\r"),
            "hostname core-1\r\ncore-1(config)#"
        );
        assert_eq!(
            send(&mut switch, "line con 0\r"),
            "line con 0\r\ncore-1(config-line)#"
        );
        assert_eq!(
            send(&mut switch, "\x1a"),
            format!("^Z\r\n{}", config_i("core-1#"))
        );
        send(&mut switch, "configure terminal\r");
        assert!(send(&mut switch, "show clock\r").contains("% Invalid input"));
        assert!(send(&mut switch, "do show clock\r").contains(" UTC "));
        assert_eq!(
            send(&mut switch, "end\r"),
            format!("end\r\n{}", config_i("core-1#"))
        );
        send(&mut switch, "conf t\r");
        assert_eq!(
            send(&mut switch, "exit\r"),
            format!("exit\r\n{}", config_i("core-1#"))
        );
    }

    #[test]
    fn exit_logs_out_until_return() {
        let mut switch = privileged();
        send(&mut switch, "terminal length 0\r");
        assert_eq!(
            send(&mut switch, "exit\r"),
            "exit\r\n\r\n\r\nSW1 con0 is now available\r\n\r\nPress RETURN to get started.\r\n"
        );
        assert_eq!(send(&mut switch, "xyz"), "");
        assert_eq!(send(&mut switch, "\r"), "\r\nSW1>");
        assert_eq!(switch.mode(), Mode::UserExec);
    }

    #[test]
    fn pager_bytes_are_exact() {
        let mut switch = privileged();
        send(&mut switch, "terminal length 5\r");
        let lines = running_config_lines();
        let first = send(&mut switch, "show running-config\r");
        let page = |range: std::ops::Range<usize>| -> String {
            lines[range]
                .iter()
                .map(|line| format!("{line}\r\n"))
                .collect()
        };
        assert_eq!(
            first,
            format!("show running-config\r\n{} --More-- ", page(0..4))
        );
        let erase = std::str::from_utf8(MORE_ERASE).unwrap();
        assert_eq!(erase.len(), 27);
        assert_eq!(
            send(&mut switch, " "),
            format!("{erase}{} --More-- ", page(4..8))
        );
        assert_eq!(
            send(&mut switch, "\r"),
            format!("{erase}{} --More-- ", page(8..9))
        );
        assert_eq!(
            send(&mut switch, "\r\n"),
            format!("{erase}{} --More-- ", page(9..10))
        );
        assert_eq!(send(&mut switch, "q"), format!("{erase}SW1#"));
        assert_eq!(
            send(&mut switch, "\r"),
            "\r\nSW1#",
            "the pager's key is not a command"
        );
    }

    #[test]
    fn paging_with_spaces_yields_the_running_config() {
        let mut switch = privileged();
        let mut text = send(&mut switch, "show run\r");
        let mut pages = 1;
        while text.ends_with(" --More-- ") {
            text += &send(&mut switch, " ");
            pages += 1;
        }
        assert_eq!(pages, RUNNING_CONFIG_LINES.div_ceil(23));
        let text = strip_pager(&text);
        let body = text
            .strip_prefix("show run\r\n")
            .unwrap()
            .strip_suffix("SW1#")
            .unwrap();
        let lines: Vec<&str> = body.strip_suffix("\r\n").unwrap().split("\r\n").collect();
        assert_eq!(lines, running_config_lines());
        assert_eq!(lines.len(), RUNNING_CONFIG_LINES);
        assert_eq!(lines.last(), Some(&"end"));
        let bytes: usize = lines[3..].iter().map(|line| line.len() + 1).sum();
        assert_eq!(lines[2], format!("Current configuration : {bytes} bytes"));
        let descriptions: Vec<&&str> = lines
            .iter()
            .filter(|l| l.starts_with(" description"))
            .collect();
        let unique: std::collections::HashSet<_> = descriptions.iter().collect();
        assert_eq!(unique.len(), descriptions.len());
    }

    #[test]
    fn terminal_length_zero_disables_paging() {
        let mut switch = privileged();
        assert_eq!(send(&mut switch, "term len 0\r"), "term len 0\r\nSW1#");
        let text = send(&mut switch, "sh tech\r");
        assert!(!text.contains("--More--"));
        let expected: String = (1..=TECH_SUPPORT_LINES)
            .map(|n| tech_support_line(n) + "\r\n")
            .collect();
        assert_eq!(text, format!("sh tech\r\n{expected}SW1#"));
        assert!(text.len() > 3_900_000);
        assert!(tech_support_line(12_345).starts_with("012345 "));
        assert_eq!(tech_support_line(7).len(), 78);
        assert!(send(&mut switch, "terminal length 513\r").contains("% Invalid input"));
    }

    #[test]
    fn show_version_is_paged_at_the_default_length() {
        let mut user = CiscoSwitch::new("SW1");
        let text = send(&mut user, "show ver\r");
        assert!(text.starts_with("show ver\r\nCisco IOS Software, C2960X Software"));
        assert!(text.contains("\r\nSW1 uptime is 0 minutes\r\n"));
        assert!(text.ends_with(" --More-- "));
        let text = strip_pager(&(text + &send(&mut user, " ")));
        assert!(text.contains("cisco WS-C2960X-48TS-L (APM86XXX) processor"));
        assert!(text.ends_with("Configuration register is 0xF\r\n\r\nSW1>"));
    }

    #[test]
    fn reload_asks_for_confirmation() {
        let mut switch = privileged();
        assert_eq!(
            send(&mut switch, "reload\r"),
            "reload\r\nProceed with reload? [confirm]"
        );
        assert_eq!(send(&mut switch, "n"), "\r\nSW1#");
        send(&mut switch, "reload\r");
        let boot = send(&mut switch, "\r");
        assert!(boot.starts_with("\r\n*"));
        assert!(boot.contains("\r\nSystem Bootstrap, Version 15.2"));
        assert!(boot.ends_with("Press RETURN to get started!\r\n"));
        assert_eq!(send(&mut switch, "\r"), "\r\nSW1>");
    }

    #[test]
    fn crlf_after_a_command_is_not_an_answer() {
        let mut switch = CiscoSwitch::new("SW1");
        assert_eq!(send(&mut switch, "enable\r\n"), "enable\r\nPassword: ");
        assert_eq!(send(&mut switch, "cisco\r\n"), "\r\nSW1#");
        assert_eq!(
            send(&mut switch, "reload\r\n"),
            "reload\r\nProceed with reload? [confirm]"
        );
        assert_eq!(send(&mut switch, "n"), "\r\nSW1#");
    }

    #[test]
    fn any_chunking_gives_the_same_bytes() {
        let script = "\ren\rcisco\rterm len 7\rsh run\r \r\r q\rsh ver\r\x03sh tech\r  q\
                      conf t\rint Gi1/0/2\r desc x\x7fy\r\x1aexit\rxx\r";
        let mut whole = Vec::new();
        switch_with(&SimOptions::default()).feed(script.as_bytes(), &mut whole);
        for chunk in [1, 2, 3, 7, 64] {
            let mut switch = switch_with(&SimOptions::default());
            let mut out = Vec::new();
            for piece in script.as_bytes().chunks(chunk) {
                switch.feed(piece, &mut out);
            }
            assert!(out == whole, "chunks of {chunk}");
        }
        let whole = String::from_utf8(whole).unwrap();
        assert!(whole.ends_with("Press RETURN to get started.\r\n\r\nSW1>"));
    }

    #[test]
    fn clock_and_uptime_formats() {
        // 2026-11-30 10:21:03.045 UTC
        let at = UNIX_EPOCH + Duration::from_millis(1_796_034_063_045);
        assert_eq!(clock_text(at), "*10:21:03.045 UTC Mon Nov 30 2026");
        assert_eq!(clock_text(UNIX_EPOCH), "*00:00:00.000 UTC Thu Jan 1 1970");
        assert_eq!(uptime_text(59), "0 minutes");
        assert_eq!(uptime_text(3600 + 60), "1 hour, 1 minute");
        assert_eq!(
            uptime_text(8 * 86_400 + 120),
            "1 week, 1 day, 0 hours, 2 minutes"
        );
        let mut switch = CiscoSwitch::new("SW1");
        let text = send(&mut switch, "show clock\r");
        let clock = text.strip_prefix("show clock\r\n*").unwrap();
        assert!(clock.ends_with("\r\nSW1>"));
        assert_eq!(clock.as_bytes()[2], b':');
        assert_eq!(&clock[12..17], " UTC ");
    }

    fn with_login() -> CiscoSwitch {
        switch_with(&SimOptions {
            login: Some(Credentials {
                username: "admin".into(),
                password: "pw".into(),
            }),
            enable_secret: "top".into(),
            ..SimOptions::default()
        })
    }

    #[test]
    fn a_login_comes_first_and_after_logout() {
        let mut switch = with_login();
        assert_eq!(
            send(&mut switch, "show\r"),
            LOGIN_BANNER,
            "keys before RETURN are dropped"
        );
        assert_eq!(
            LOGIN_BANNER,
            "\r\nUser Access Verification\r\n\r\nUsername: "
        );
        assert_eq!(send(&mut switch, "admin\r"), "admin\r\nPassword: ");
        assert_eq!(
            send(&mut switch, "nope\r"),
            "\r\n% Login invalid\r\n\r\nUsername: "
        );
        send(&mut switch, "admin\r");
        assert_eq!(send(&mut switch, "pw\r"), "\r\n\r\nSW1>");
        assert_eq!(send(&mut switch, "enable\r"), "enable\r\nPassword: ");
        assert_eq!(send(&mut switch, "cisco\r"), "\r\nPassword: ");
        assert_eq!(send(&mut switch, "top\r"), "\r\nSW1#");
        assert!(send(&mut switch, "logout\r").ends_with("Press RETURN to get started.\r\n"));
        assert_eq!(send(&mut switch, "\r"), LOGIN_BANNER);
    }

    #[test]
    fn write_and_copy_save_the_startup_configuration() {
        let mut switch = privileged();
        send(&mut switch, "conf t\rhostname edge\rend\r");
        assert_ne!(switch.startup_configuration(), switch.configuration());
        assert_eq!(
            send(&mut switch, "write memory\r"),
            "write memory\r\nBuilding configuration...\r\n[OK]\r\nedge#"
        );
        assert_eq!(switch.startup_configuration(), switch.configuration());
        send(&mut switch, "conf t\rhostname edge2\rend\r");
        assert_eq!(
            send(&mut switch, "copy run start\r"),
            "copy run start\r\nDestination filename [startup-config]? "
        );
        assert_eq!(
            send(&mut switch, "\r"),
            "\r\nBuilding configuration...\r\n[OK]\r\nedge2#"
        );
        send(&mut switch, "terminal length 0\r");
        let text = send(&mut switch, "show startup-config\r");
        let bytes: usize = switch.configuration().iter().map(|l| l.len() + 1).sum();
        assert!(text.starts_with(&format!(
            "show startup-config\r\nUsing {bytes} out of 524288 bytes\r\n!\r\n"
        )));
        assert!(text.contains("\r\nhostname edge2\r\n"));
        let text = send(&mut switch, "show running-config\r");
        assert!(text.contains(&format!("\r\nCurrent configuration : {bytes} bytes\r\n")));
    }

    #[test]
    fn reload_boots_the_startup_configuration() {
        let mut switch = privileged();
        send(&mut switch, "conf t\rhostname lost\rend\r");
        send(&mut switch, "reload\r");
        let boot = send(&mut switch, "\r");
        assert!(boot.ends_with("Press RETURN to get started!\r\n"));
        assert_eq!(send(&mut switch, "\r"), "\r\nSW1>");
    }

    #[test]
    fn rommon_resets_into_ios() {
        let mut switch = switch_with(&SimOptions {
            rommon: true,
            ..SimOptions::default()
        });
        assert!(switch.in_rommon());
        assert_eq!(send(&mut switch, "\r"), "\r\nrommon 1 > ");
        assert_eq!(
            send(&mut switch, "show version\r"),
            "show version\r\nmonitor: command \"show\" not found\r\nrommon 2 > "
        );
        let boot = send(&mut switch, "reset\r");
        assert!(
            boot.starts_with("reset\r\n\r\nSystem Bootstrap"),
            "{boot:?}"
        );
        assert!(boot.ends_with("Press RETURN to get started!\r\n"));
        assert!(!switch.in_rommon());
        assert_eq!(send(&mut switch, "\r"), "\r\nSW1>");
    }
}
