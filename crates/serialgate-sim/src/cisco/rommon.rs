//! ROMMON, the switch's ROM monitor: where it stops when it has no image to
//! boot, or is told to (`confreg 0x2100`). A numbered prompt, a handful of
//! commands, `reset` or `boot` to leave it. (Transfers such as xmodem will
//! live here too.)

use super::super::cli::{Edited, Key, LineEditor, crlf_lines, split_words};

/// The configuration register a switch ships with: boot the IOS image.
pub const DEFAULT_CONFREG: u16 = 0x2102;

/// What a line at the ROMMON prompt did, for the switch to act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RommonEvent {
    /// Nothing for the switch: the monitor printed its answer.
    Nothing,
    /// The monitor loads IOS (`reset` with a booting register, `boot`).
    Boot,
}

/// What the monitor waits for.
#[derive(Debug, PartialEq, Eq)]
enum Wait {
    /// A command at `rommon N > `.
    Command,
    /// The answer to `do you wish to change the configuration? y/n  [n]:`.
    ChangeConfig,
}

/// The ROM monitor at its `rommon N > ` prompt.
#[derive(Debug)]
pub struct Rommon {
    /// The number of the next prompt.
    count: u32,
    /// Whether the first prompt is on screen (it is not until a RETURN:
    /// the simulator prints nothing unasked).
    shown: bool,
    editor: LineEditor,
    wait: Wait,
    /// The configuration register (`confreg`), in force at the next reset.
    confreg: u16,
}

impl Rommon {
    /// The monitor, its first prompt `rommon 1 > ` not yet printed.
    pub fn new() -> Rommon {
        Rommon {
            count: 1,
            shown: false,
            editor: LineEditor::default(),
            wait: Wait::Command,
            confreg: DEFAULT_CONFREG,
        }
    }

    /// The prompt, numbered.
    fn prompt(&self) -> String {
        format!("rommon {} > ", self.count)
    }

    /// A key at the monitor: echoed; RETURN runs the line.
    pub fn key(&mut self, key: Key, out: &mut Vec<u8>) -> RommonEvent {
        let Edited::Line(line) = self.editor.key(key, out) else {
            return RommonEvent::Nothing;
        };
        if !self.shown {
            self.shown = true;
            out.extend_from_slice(self.prompt().as_bytes());
            return RommonEvent::Nothing;
        }
        if self.wait == Wait::ChangeConfig {
            self.wait = Wait::Command;
            return self.next_prompt(out);
        }
        let words = split_words(&line);
        let Some(command) = words.first() else {
            return self.next_prompt(out);
        };
        let name = command.str();
        match name.as_str() {
            "boot" => return RommonEvent::Boot,
            "reset" if self.confreg & 0xf != 0 => return RommonEvent::Boot,
            "reset" => {
                out.extend_from_slice(b"\r\n");
                out.extend(crlf_lines(super::BOOTSTRAP));
                self.count = 1;
                out.extend_from_slice(self.prompt().as_bytes());
                return RommonEvent::Nothing;
            }
            "confreg" => match words.get(1) {
                None => {
                    out.extend_from_slice(&self.confreg_summary());
                    self.wait = Wait::ChangeConfig;
                    return RommonEvent::Nothing;
                }
                Some(value) => match parse_register(&value.str()) {
                    Some(register) => {
                        self.confreg = register;
                        out.extend_from_slice(
                            b"\r\nYou must reset or power cycle for new config to take effect\r\n",
                        );
                    }
                    None => out.extend_from_slice(b"illegal config register value\r\n"),
                },
            },
            "help" | "?" => out.extend(crlf_lines([
                "boot               boot up an external process",
                "confreg            configuration register utility",
                "help               monitor builtin command help",
                "reset              system reset",
                "set                display the monitor variables",
            ])),
            "set" => out.extend(crlf_lines([
                "PS1=rommon ! > ".to_owned(),
                "BOOT=flash:c2960x-universalk9-mz.152-7.E4.bin".to_owned(),
                format!("CONFIG_REGISTER=0x{:x}", self.confreg),
            ])),
            _ => out
                .extend_from_slice(format!("monitor: command \"{name}\" not found\r\n").as_bytes()),
        }
        self.next_prompt(out)
    }

    /// The next numbered prompt.
    fn next_prompt(&mut self, out: &mut Vec<u8>) -> RommonEvent {
        self.count += 1;
        out.extend_from_slice(self.prompt().as_bytes());
        RommonEvent::Nothing
    }

    /// What a bare `confreg` prints, down to its question.
    fn confreg_summary(&self) -> Vec<u8> {
        let boot = if self.confreg & 0xf == 0 {
            "boot: the ROM Monitor"
        } else {
            "boot: image specified by the boot system commands"
        };
        let mut text = crlf_lines([
            "",
            "    Configuration Summary",
            "enabled are:",
            "load rom after netboot fails",
            "console baud: 9600",
            boot,
            "",
        ]);
        text.extend_from_slice(b"do you wish to change the configuration? y/n  [n]:  ");
        text
    }
}

impl Default for Rommon {
    fn default() -> Self {
        Rommon::new()
    }
}

/// A configuration register written `0x2142` (or without `0x`).
fn parse_register(text: &str) -> Option<u16> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    u16::from_str_radix(digits, 16).ok()
}

/// What the switch prints leaving ROMMON for IOS, up to `Press RETURN`.
pub fn boot_text() -> String {
    let mut text = String::from("\r\n");
    text.push_str(&super::boot_banner());
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Keys;

    fn send(rommon: &mut Rommon, input: &str) -> (String, RommonEvent) {
        let mut keys = Keys::default();
        let mut out = Vec::new();
        let mut event = RommonEvent::Nothing;
        for &byte in input.as_bytes() {
            if let Some(key) = keys.key(byte) {
                event = rommon.key(key, &mut out);
            }
        }
        (String::from_utf8(out).unwrap(), event)
    }

    #[test]
    fn numbered_prompts_and_unknown_commands() {
        let mut rommon = Rommon::new();
        assert_eq!(send(&mut rommon, "\r").0, "\r\nrommon 1 > ");
        assert_eq!(
            send(&mut rommon, "dir\r").0,
            "dir\r\nmonitor: command \"dir\" not found\r\nrommon 2 > "
        );
        assert_eq!(send(&mut rommon, "\r").0, "\r\nrommon 3 > ");
        let (text, _) = send(&mut rommon, "confreg\r");
        assert!(text.ends_with("do you wish to change the configuration? y/n  [n]:  "));
        assert_eq!(send(&mut rommon, "n\r").0, "n\r\nrommon 4 > ");
        assert_eq!(
            send(&mut rommon, "confreg 0x2100\r").0,
            "confreg 0x2100\r\n\r\nYou must reset or power cycle for new config to take effect\r\nrommon 5 > "
        );
        let (text, event) = send(&mut rommon, "reset\r");
        assert_eq!(event, RommonEvent::Nothing, "0x2100 boots to ROMMON");
        assert!(text.ends_with("\r\nrommon 1 > "), "{text:?}");
        send(&mut rommon, "confreg 0x2102\r");
        assert_eq!(send(&mut rommon, "reset\r").1, RommonEvent::Boot);
    }
}
