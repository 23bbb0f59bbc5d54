//! A Linux shell on a serial console, with a coloured prompt and coloured
//! `ls`, as a synchronous state machine: bytes in, bytes out, no I/O.

use super::cli::{CTRL_C, Edited, Keys, LineEditor};

/// The prompt as bash prints it: bracketed paste on, then `user@host` in
/// bold green, `:`, `~` in bold blue, `$ `.
pub const PROMPT: &str = "\x1b[?2004h\x1b[01;32muser@host\x1b[00m:\x1b[01;34m~\x1b[00m$ ";
/// The prompt as a terminal shows it.
pub const PLAIN_PROMPT: &str = "user@host:~$ ";
/// What bash prints once a line is accepted: bracketed paste off.
const ACCEPTED: &[u8] = b"\x1b[?2004l\r";
/// What bash prints for backspace: back, then erase to the end of the line.
const RUBOUT: &[u8] = b"\x08\x1b[K";

/// A file in the home directory, and the colour `ls --color` gives it.
struct Entry {
    name: &'static str,
    colour: Option<&'static str>,
}

const fn entry(name: &'static str, colour: Option<&'static str>) -> Entry {
    Entry { name, colour }
}

/// Directories bold blue, executables bold green, links bold cyan,
/// archives bold red.
const HOME: &[Entry] = &[
    entry("backup-2024-03-01.tar.gz", Some("01;31")),
    entry("bin", Some("01;34")),
    entry("configs", Some("01;34")),
    entry("current", Some("01;36")),
    entry("deploy.sh", Some("01;32")),
    entry("inventory.yaml", None),
    entry("notes.txt", None),
    entry("switch-configs", Some("01;34")),
    entry("upgrade-firmware.sh", Some("01;32")),
];

/// Entries per line of `ls` output.
const COLUMNS: usize = 3;
/// Width of a column of `ls` output.
const COLUMN_WIDTH: usize = 26;

/// A bash shell as seen on a Linux box's serial console.
///
/// [`feed`](Self::feed) takes the bytes the shell receives and appends what
/// it sends back: the echo (backspace erases with `\b ESC[K`), and after
/// RETURN bash's `ESC[?2004l\r`, the output and the coloured [`PROMPT`].
/// It starts silent; the first RETURN shows the prompt. Commands: `ls`
/// (plain: [`ls_lines`]), `ls --color` (the same in colour, `ESC[0m` and
/// `ESC[01;34m`…), `echo ...`, `grep --color ssh /etc/services` (matches in
/// red with `ESC[K`), `pwd`, `uname -a`; anything else gets
/// `-bash: X: command not found`.
#[derive(Debug)]
pub struct ColourShell {
    keys: Keys,
    /// The command line typed so far.
    editor: LineEditor,
}

impl Default for ColourShell {
    fn default() -> Self {
        ColourShell::new()
    }
}

impl ColourShell {
    /// A shell printing nothing until it receives something.
    pub fn new() -> ColourShell {
        ColourShell {
            keys: Keys::default(),
            editor: LineEditor::with_rubout(RUBOUT),
        }
    }

    /// Consumes `input`, bytes the shell received on its console, and
    /// appends to `out` what it sends back in reply.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &byte in input {
            let Some(key) = self.keys.key(byte) else {
                continue;
            };
            match self.editor.key(key, out) {
                Edited::Line(line) => {
                    out.extend_from_slice(ACCEPTED);
                    out.extend(run(&String::from_utf8_lossy(&line)));
                    out.extend_from_slice(PROMPT.as_bytes());
                }
                Edited::Control(CTRL_C) => {
                    self.editor.interrupt(out);
                    out.extend_from_slice(PROMPT.as_bytes());
                }
                _ => {}
            }
        }
    }
}

/// The output of one command line, lines ended by `\r\n`.
fn run(line: &str) -> Vec<u8> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let text = match words.as_slice() {
        [] => String::new(),
        ["ls"] => lines(ls_lines()),
        ["ls", "--color" | "--color=auto" | "--color=always"] => lines(ls_colour_lines()),
        ["echo", rest @ ..] => format!("{}\r\n", rest.join(" ")),
        ["pwd"] => "/home/user\r\n".to_owned(),
        ["uname", "-a"] => {
            "Linux host 6.1.0-18-arm64 #1 SMP Debian 6.1.76-1 (2024-02-01) aarch64 GNU/Linux\r\n"
                .to_owned()
        }
        ["grep", "--color", pattern, "/etc/services"] => lines(grep_colour(pattern)),
        [command, ..] => format!("-bash: {command}: command not found\r\n"),
    };
    text.into_bytes()
}

fn lines(lines: Vec<String>) -> String {
    lines.iter().map(|line| format!("{line}\r\n")).collect()
}

/// `ls` of the home directory as a terminal shows it: names in columns.
pub fn ls_lines() -> Vec<String> {
    HOME.chunks(COLUMNS)
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .map(|e| format!("{:<COLUMN_WIDTH$}", e.name))
                .collect();
            cells.concat().trim_end().to_owned()
        })
        .collect()
}

/// `ls --color`, as GNU ls prints it to a terminal: `ESC[0m` first, each
/// coloured name wrapped in its colour and `ESC[0m`, padding after.
fn ls_colour_lines() -> Vec<String> {
    HOME.chunks(COLUMNS)
        .enumerate()
        .map(|(r, row)| {
            let mut line = if r == 0 {
                "\x1b[0m".to_owned()
            } else {
                String::new()
            };
            for (i, e) in row.iter().enumerate() {
                match e.colour {
                    Some(colour) => line += &format!("\x1b[{colour}m{}\x1b[0m", e.name),
                    None => line += e.name,
                }
                if i + 1 < row.len() {
                    line += &" ".repeat(COLUMN_WIDTH - e.name.len());
                }
            }
            line
        })
        .collect()
}

/// Lines of a small `/etc/services` that contain `pattern`, the matches in
/// bold red as `grep --color` marks them.
fn grep_colour(pattern: &str) -> Vec<String> {
    const SERVICES: [&str; 5] = [
        "ssh\t\t22/tcp\t\t\t\t# SSH Remote Login Protocol",
        "telnet\t\t23/tcp",
        "smtp\t\t25/tcp\t\tmail",
        "netconf-ssh\t830/tcp\t\t\t\t# NETCONF over SSH",
        "sftp-ssh\t115/tcp",
    ];
    SERVICES
        .iter()
        .filter(|line| !pattern.is_empty() && line.contains(pattern))
        .map(|line| line.replace(pattern, &format!("\x1b[01;31m\x1b[K{pattern}\x1b[m\x1b[K")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(shell: &mut ColourShell, input: &str) -> String {
        let mut out = Vec::new();
        shell.feed(input.as_bytes(), &mut out);
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn prompt_is_coloured_and_output_follows_bash() {
        let mut shell = ColourShell::new();
        assert_eq!(send(&mut shell, ""), "");
        assert_eq!(send(&mut shell, "\r"), format!("\r\n\x1b[?2004l\r{PROMPT}"));
        assert_eq!(
            send(&mut shell, "pwd\r"),
            format!("pwd\r\n\x1b[?2004l\r/home/user\r\n{PROMPT}")
        );
        assert_eq!(
            send(&mut shell, "foo bar\r"),
            format!("foo bar\r\n\x1b[?2004l\r-bash: foo: command not found\r\n{PROMPT}")
        );
        assert_eq!(send(&mut shell, "ab\x7f"), "ab\x08\x1b[K");
    }

    #[test]
    fn ls_colour_is_ls_with_escapes() {
        let mut shell = ColourShell::new();
        let strip = regex::Regex::new("\x1b\\[[0-9;?]*[A-Za-z]").unwrap();
        let coloured = ls_colour_lines();
        let stripped: Vec<String> = coloured
            .iter()
            .map(|l| strip.replace_all(l, "").into_owned())
            .collect();
        assert_eq!(stripped, ls_lines());
        assert_eq!(ls_lines().len(), HOME.len().div_ceil(COLUMNS));
        let out = send(&mut shell, "ls --color\r");
        assert!(out.contains("\x1b[01;34mbin\x1b[0m"), "{out:?}");
        assert_eq!(
            out,
            format!("ls --color\r\n\x1b[?2004l\r{}{PROMPT}", lines(coloured))
        );
        assert_eq!(
            send(&mut shell, "ls\r"),
            format!("ls\r\n\x1b[?2004l\r{}{PROMPT}", lines(ls_lines()))
        );
        let grep = send(&mut shell, "grep --color ssh /etc/services\r");
        assert!(
            grep.contains("\x1b[01;31m\x1b[Kssh\x1b[m\x1b[K\t\t22/tcp"),
            "{grep:?}"
        );
    }
}
