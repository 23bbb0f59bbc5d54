//! An HP ProCurve switch console (hostname `ProCurve`) as a synchronous
//! state machine: bytes in, bytes out, no I/O.

use super::cli::{
    Edited, Key, Keys, LastPage, LineEditor, Paged, Pager, PagerStyle, Quit, Word, crlf_lines,
    resolve, split_words,
};

/// The hostname a switch starts with.
pub const HOSTNAME: &str = "ProCurve";
/// Lines of output in a page before the pager.
pub const PAGE_LINES: usize = 22;
/// VLANs in `show running-config`.
pub const CONFIGURATION_VLANS: usize = 40;
/// The pager's prompt, drawn on the bottom line of a 24-line screen.
pub const MORE_PROMPT: &[u8] = b"-- MORE --, next page: Space, next line: Enter, quit: Control-C";
/// What precedes [`MORE_PROMPT`]: the cursor to the bottom line.
pub const MORE_POSITION: &[u8] = b"\x1b[24;1H";
/// What the pager prints after a key: back to the start of the bottom line,
/// erase it, show the cursor.
pub const MORE_ERASE: &[u8] = b"\x1b[24;1H\x1b[2K\x1b[24;1H\x1b[?25h\x1b[24;1H";
/// The ProCurve pager: [`MORE_POSITION`] and [`MORE_PROMPT`], erased by
/// [`MORE_ERASE`]; space for a page, RETURN for a line, `q` or Ctrl-C to
/// stop.
const PAGER: PagerStyle = PagerStyle {
    prompt: |_| [MORE_POSITION, MORE_PROMPT].concat(),
    erase: |_| MORE_ERASE.to_vec(),
    quit: Quit::QOrCtrlC,
    last_page: LastPage::Prompt,
};

/// The CLI context, which decides the prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Context {
    /// Manager level: `ProCurve# `.
    Manager,
    /// Global configuration: `ProCurve(config)# `.
    Config,
    /// A VLAN context: `ProCurve(vlan-10)# `.
    Vlan(u16),
}

/// What the console waits for next.
#[derive(Debug)]
enum Input {
    /// A command line, echoed and editable.
    Line,
    /// A key at the pager; the rest of the output waits.
    More(Pager),
}

const MANAGER: &[&str] = &["configure", "exit", "no", "page", "show"];
const CONFIG: &[&str] = &["end", "exit", "hostname", "no", "page", "show", "vlan"];
const SHOW: &[&str] = &["running-config", "version"];

/// An HP ProCurve (ArubaOS-Switch) switch as seen on its console port.
///
/// [`feed`](Self::feed) takes the bytes the switch receives and appends what
/// it sends back: the echo, output through the VT100 pager (the cursor to
/// the bottom line, `-- MORE --, next page: Space, next line: Enter, quit:
/// Control-C`; after a key the bottom line is erased with `ESC[24;1H`
/// `ESC[2K`), and the prompt `ProCurve# ` (`ProCurve(config)# `,
/// `ProCurve(vlan-10)# `). It starts silent; the first RETURN shows the
/// prompt. Commands (unique abbreviations work): `show running-config`
/// ([`running_config_lines`]), `show version`, `no page` / `page`,
/// `configure`, `vlan N`, `hostname`, `exit`, `end`. Anything else gets
/// `Invalid input: WORD`.
#[derive(Debug)]
pub struct ProCurveSwitch {
    hostname: String,
    context: Context,
    input: Input,
    keys: Keys,
    /// The command line typed so far.
    editor: LineEditor,
    /// `no page` turns paging off.
    paging: bool,
}

impl Default for ProCurveSwitch {
    fn default() -> Self {
        ProCurveSwitch::new()
    }
}

impl ProCurveSwitch {
    /// A switch at the manager level, printing nothing until it receives
    /// something.
    pub fn new() -> ProCurveSwitch {
        ProCurveSwitch {
            hostname: HOSTNAME.to_owned(),
            context: Context::Manager,
            input: Input::Line,
            keys: Keys::default(),
            editor: LineEditor::default(),
            paging: true,
        }
    }

    /// The current context.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The prompt of the current context, with its trailing space.
    pub fn prompt(&self) -> String {
        let host = &self.hostname;
        match self.context {
            Context::Manager => format!("{host}# "),
            Context::Config => format!("{host}(config)# "),
            Context::Vlan(id) => format!("{host}(vlan-{id})# "),
        }
    }

    /// Consumes `input`, bytes the switch received on its console, and
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
        if let Edited::Line(line) = self.editor.key(key, out) {
            self.execute(&line, out);
        }
    }

    /// A key at the pager; the prompt follows the end of the output.
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
        match self.command(&words) {
            Ok(text) => match Pager::start(PAGER, text, self.paging.then_some(PAGE_LINES), out) {
                Some(pager) => self.input = Input::More(pager),
                None => self.print_prompt(out),
            },
            Err(word) => {
                out.extend_from_slice(format!("Invalid input: {}\r\n", word.str()).as_bytes());
                self.print_prompt(out);
            }
        }
    }

    /// A command: its output, or the word it did not understand.
    fn command<'w>(&mut self, words: &[Word<'w>]) -> Result<Vec<u8>, Word<'w>> {
        let table = match self.context {
            Context::Manager => MANAGER,
            _ => CONFIG,
        };
        let command = resolve(words[0].text, table).map_err(|_| words[0])?;
        match command {
            "show" => {
                let what = words.get(1).ok_or(words[0])?;
                let what = resolve(what.text, SHOW).map_err(|_| *what)?;
                no_more(words, 2)?;
                Ok(if what == "version" {
                    crlf_lines(VERSION)
                } else {
                    let mut text = b"\r\n".to_vec();
                    text.extend(crlf_lines(running_config_lines()));
                    text
                })
            }
            "no" | "page" => {
                if command == "no" {
                    let page = words.get(1).ok_or(words[0])?;
                    resolve(page.text, &["page"]).map_err(|_| *page)?;
                    no_more(words, 2)?;
                } else {
                    no_more(words, 1)?;
                }
                self.paging = command == "page";
                Ok(Vec::new())
            }
            "configure" => {
                no_more(words, 1)?;
                self.context = Context::Config;
                Ok(Vec::new())
            }
            "vlan" => {
                let id = words.get(1).ok_or(words[0])?;
                let number = std::str::from_utf8(id.text)
                    .ok()
                    .and_then(|n| n.parse::<u16>().ok())
                    .filter(|n| (1..=4094).contains(n))
                    .ok_or(*id)?;
                no_more(words, 2)?;
                self.context = Context::Vlan(number);
                Ok(Vec::new())
            }
            "hostname" => {
                let name = words.get(1).ok_or(words[0])?;
                no_more(words, 2)?;
                self.hostname = name.str().trim_matches('"').to_owned();
                Ok(Vec::new())
            }
            "end" => {
                no_more(words, 1)?;
                self.context = Context::Manager;
                Ok(Vec::new())
            }
            _ => {
                no_more(words, 1)?;
                self.context = match self.context {
                    Context::Vlan(_) => Context::Config,
                    _ => Context::Manager,
                };
                Ok(Vec::new())
            }
        }
    }
}

/// Refuses words past the first `count`.
fn no_more<'w>(words: &[Word<'w>], count: usize) -> Result<(), Word<'w>> {
    match words.get(count) {
        Some(extra) => Err(*extra),
        None => Ok(()),
    }
}

const VERSION: [&str; 4] = [
    "Image stamp:    /ws/swbuildm/rel_ukiah_qaoff/code/build/bom(swbuildm_rel_ukiah_qaoff_rel_ukiah)",
    "                Mar 12 2020 10:31:49",
    "                YA.16.10.0003",
    "Boot Image:     Primary",
];

/// The exact lines (without line ends) of `show running-config`, from
/// `Running configuration:` to the last VLAN's `exit`:
/// [`CONFIGURATION_VLANS`] VLANs with unique names, many pages long. (The
/// switch prints a blank line before them.)
pub fn running_config_lines() -> Vec<String> {
    let mut lines: Vec<String> = [
        "Running configuration:",
        "",
        "; J9776A Configuration Editor; Created on release #YA.16.10.0003",
        "; Ver #14:41.44.00.04.19.02.13.98.82.34.61.18.28.f3.84.9c.63.ff.37.27:05",
        "hostname \"ProCurve\"",
        "module 1 type j9776a",
        "snmp-server community \"public\" unrestricted",
        "oobm",
        "   disable",
        "   exit",
    ]
    .map(String::from)
    .to_vec();
    for i in 0..CONFIGURATION_VLANS {
        let id = 10 + i;
        lines.extend([
            format!("vlan {id}"),
            format!(
                "   name \"users-{id:04}-building-{:02}-floor-{}\"",
                1 + i % 7,
                1 + i % 5
            ),
            format!("   untagged {}", 1 + i % 24),
            format!("   ip address 10.{id}.0.1 255.255.255.0"),
            "   exit".to_owned(),
        ]);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(switch: &mut ProCurveSwitch, input: &str) -> String {
        let mut out = Vec::new();
        switch.feed(input.as_bytes(), &mut out);
        String::from_utf8(out).expect("UTF-8")
    }

    fn more() -> String {
        String::from_utf8([MORE_POSITION, MORE_PROMPT].concat()).unwrap()
    }

    fn erase() -> &'static str {
        std::str::from_utf8(MORE_ERASE).unwrap()
    }

    #[test]
    fn prompts_and_contexts() {
        let mut switch = ProCurveSwitch::new();
        assert_eq!(send(&mut switch, ""), "");
        assert_eq!(send(&mut switch, "\r"), "\r\nProCurve# ");
        assert_eq!(send(&mut switch, "conf\r"), "conf\r\nProCurve(config)# ");
        assert_eq!(
            send(&mut switch, "vlan 10\r"),
            "vlan 10\r\nProCurve(vlan-10)# "
        );
        assert_eq!(send(&mut switch, "exit\r"), "exit\r\nProCurve(config)# ");
        assert_eq!(send(&mut switch, "end\r"), "end\r\nProCurve# ");
        assert_eq!(switch.context(), &Context::Manager);
        assert_eq!(
            send(&mut switch, "shw run\r"),
            "shw run\r\nInvalid input: shw\r\nProCurve# "
        );
        assert_eq!(
            send(&mut switch, "show foo\r"),
            "show foo\r\nInvalid input: foo\r\nProCurve# "
        );
    }

    #[test]
    fn running_config_pages_with_vt100_erase() {
        let mut switch = ProCurveSwitch::new();
        send(&mut switch, "\r");
        let mut text = send(&mut switch, "show running-config\r");
        let mut pages = 1;
        while text.ends_with(&more()) {
            text += &send(&mut switch, " ");
            pages += 1;
        }
        let lines = running_config_lines();
        assert!(lines.len() > 200);
        assert_eq!(pages, (lines.len() + 1).div_ceil(PAGE_LINES));
        let plain = text.replace(&format!("{}{}", more(), erase()), "");
        assert_eq!(
            plain,
            format!(
                "show running-config\r\n\r\n{}ProCurve# ",
                String::from_utf8(crlf_lines(&lines)).unwrap()
            )
        );
    }

    #[test]
    fn pager_keys_and_no_page() {
        let mut switch = ProCurveSwitch::new();
        send(&mut switch, "\r");
        send(&mut switch, "sh run\r");
        assert_eq!(send(&mut switch, "x"), "");
        let line = send(&mut switch, "\r");
        assert!(
            line.starts_with(erase()) && line.ends_with(&more()),
            "{line:?}"
        );
        assert_eq!(send(&mut switch, "\x03"), format!("{}ProCurve# ", erase()));
        assert_eq!(send(&mut switch, "no page\r"), "no page\r\nProCurve# ");
        let all = send(&mut switch, "show running-config\r");
        assert!(!all.contains("MORE") && all.ends_with("   exit\r\nProCurve# "));
    }

    #[test]
    fn any_chunking_gives_the_same_bytes() {
        let script = "\rsh run\r \r\rq\rconf\rvlan 7\rexit\rend\rno page\rsh ver\rfoo\r";
        let mut whole = Vec::new();
        ProCurveSwitch::new().feed(script.as_bytes(), &mut whole);
        for chunk in [1, 2, 3, 7, 64] {
            let mut switch = ProCurveSwitch::new();
            let mut out = Vec::new();
            for piece in script.as_bytes().chunks(chunk) {
                switch.feed(piece, &mut out);
            }
            assert!(out == whole, "chunks of {chunk}");
        }
    }
}
