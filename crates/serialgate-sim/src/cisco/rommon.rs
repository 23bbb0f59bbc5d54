//! ROMMON, the switch's ROM monitor: where it stops when it has no image to
//! boot, or is told to (`confreg 0x2100`). A numbered prompt, a handful of
//! commands, `reset` or `boot` to leave it, and `xmodem` to receive an
//! image over the console, at a raised speed if asked (`-s`), as the
//! monitor of a router with an empty flash does.

use std::time::{Duration, Instant};

use serialgate_xmodem::{Protocol, crc16};

use super::super::cli::{Edited, Key, LineEditor, crlf_lines, split_words};
use super::super::options::BlockFaults;
use super::super::transfer::Transfer;

/// The console speed the monitor runs at (`confreg`'s "console baud").
pub const CONSOLE_BAUD: u32 = 9600;
/// How long the monitor waits between saying it changes speed and doing
/// it (so its words reach the terminal at the old speed), and after a
/// transfer before it goes back.
pub const SPEED_CHANGE_DELAY: Duration = Duration::from_millis(500);

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
    /// The line speed the monitor models: `None` until an `xmodem -s`
    /// first changed it (a terminal at any speed reads it until then).
    speed: Option<u32>,
    /// An `xmodem` command waiting out [`SPEED_CHANGE_DELAY`] before it
    /// starts: when, the protocol, whether with the checksum, the name,
    /// the speed.
    starting: Option<(Instant, Protocol, bool, String, Option<u32>)>,
    /// The transfer in progress, and the name it receives.
    transfer: Option<(Transfer, String)>,
    /// After a transfer: when to go back to the console speed, and what to
    /// print then.
    finishing: Option<(Instant, Vec<u8>)>,
    /// Blocks the line damages or loses (tests).
    faults: BlockFaults,
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
            speed: None,
            starting: None,
            transfer: None,
            finishing: None,
            faults: BlockFaults::default(),
        }
    }

    /// The monitor with `faults` on its transfers' line.
    pub fn with_faults(faults: BlockFaults) -> Rommon {
        Rommon {
            faults,
            ..Rommon::new()
        }
    }

    /// The monitor entered by a break during boot: its first prompt is
    /// printed after the interrupt message.
    pub fn interrupted(faults: BlockFaults, out: &mut Vec<u8>) -> Rommon {
        let mut rommon = Rommon::with_faults(faults);
        rommon.shown = true;
        out.extend_from_slice(b"\r\nmonitor: command \"boot\" aborted due to user interrupt\r\n");
        out.extend_from_slice(rommon.prompt().as_bytes());
        rommon
    }

    /// The speed the monitor's UART runs at, once it changed it.
    pub fn line_speed(&self) -> Option<u32> {
        self.speed
    }

    /// Whether the console is busy with something other than keys (a
    /// transfer, or the pauses around one): input goes to
    /// [`feed_raw`](Self::feed_raw).
    pub fn raw(&self) -> bool {
        self.starting.is_some() || self.transfer.is_some() || self.finishing.is_some()
    }

    /// Bytes while [`raw`](Self::raw): the transfer's.
    pub fn feed_raw(&mut self, input: &[u8], out: &mut Vec<u8>) {
        if let Some((transfer, _)) = &mut self.transfer {
            transfer.feed(input, out);
            self.after_transfer(out);
        }
    }

    /// When the monitor's next timer fires.
    pub fn next_deadline(&mut self) -> Option<Instant> {
        if let Some((at, ..)) = &self.starting {
            return Some(*at);
        }
        if let Some((at, _)) = &self.finishing {
            return Some(*at);
        }
        self.transfer.as_mut().and_then(|(t, _)| t.deadline())
    }

    /// Fires the timers due at `now`.
    pub fn tick(&mut self, now: Instant, out: &mut Vec<u8>) {
        if self.starting.as_ref().is_some_and(|(at, ..)| *at <= now) {
            let Some((_, protocol, checksum, name, speed)) = self.starting.take() else {
                return;
            };
            if speed.is_some() {
                self.speed = speed;
            }
            let transfer = Transfer::receive(protocol, checksum, self.faults.clone(), out);
            self.transfer = Some((transfer, name));
            return;
        }
        if self.finishing.as_ref().is_some_and(|(at, _)| *at <= now) {
            let Some((_, text)) = self.finishing.take() else {
                return;
            };
            if self.speed.is_some() {
                self.speed = Some(CONSOLE_BAUD);
            }
            out.extend_from_slice(&text);
            self.count += 1;
            out.extend_from_slice(self.prompt().as_bytes());
            return;
        }
        if let Some((transfer, _)) = &mut self.transfer {
            transfer.tick(now, out);
            self.after_transfer(out);
        }
    }

    /// Once the transfer is over: what it got, after a pause.
    fn after_transfer(&mut self, out: &mut Vec<u8>) {
        let over = self
            .transfer
            .as_ref()
            .is_some_and(|(t, _)| t.outcome().is_some());
        if !over {
            return;
        }
        let Some((transfer, name)) = self.transfer.take() else {
            return;
        };
        let mut text = Vec::new();
        match transfer.outcome() {
            Some(Ok(())) => {
                let data = transfer.data();
                text.extend_from_slice(
                    format!(
                        "\r\nReceived {} bytes of {name}, checksum 0x{:04x}\r\n",
                        data.len(),
                        crc16(data)
                    )
                    .as_bytes(),
                );
            }
            Some(Err(why)) => {
                text.extend_from_slice(
                    format!("\r\nxmodem: {name} not received: {why}\r\n").as_bytes(),
                );
            }
            None => {}
        }
        if self.speed.is_some_and(|s| s != CONSOLE_BAUD) {
            text.extend_from_slice(
                format!(
                    "Returning console speed to {CONSOLE_BAUD}.\r\nPlease reset your terminal console to this speed.\r\n"
                )
                .as_bytes(),
            );
        }
        // `out` may still hold the transfer's last answer: the words wait.
        let _ = out;
        self.finishing = Some((Instant::now() + SPEED_CHANGE_DELAY, text));
    }

    /// `xmodem [-c] [-y] [-s speed] NAME`.
    fn xmodem(&mut self, args: &[String], out: &mut Vec<u8>) -> bool {
        let mut protocol = Protocol::Xmodem;
        let mut crc = false;
        let mut speed = None;
        let mut name = None;
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "-c" => crc = true,
                "-y" => protocol = Protocol::Ymodem,
                "-s" => match it.next().and_then(|s| s.parse::<u32>().ok()) {
                    Some(s) if [9600, 19200, 38400, 57600, 115200].contains(&s) => speed = Some(s),
                    _ => {
                        out.extend_from_slice(
                            b"xmodem: -s takes 9600, 19200, 38400, 57600 or 115200\r\n",
                        );
                        return false;
                    }
                },
                other if !other.starts_with('-') => name = Some(other.to_owned()),
                other => {
                    out.extend_from_slice(format!("xmodem: unknown option {other}\r\n").as_bytes());
                    return false;
                }
            }
        }
        let Some(name) = name else {
            out.extend_from_slice(b"usage: xmodem [-cy] [-s speed] <destination filename>\r\n");
            return false;
        };
        out.extend(crlf_lines([
            "Do not start the sending program yet...".to_owned(),
            "Invoking ROMMON xmodem...".to_owned(),
            format!("Ready to receive file {name} ..."),
        ]));
        if let Some(s) = speed {
            out.extend(crlf_lines([format!(
                "Please change the speed of your terminal to {s} baud now."
            )]));
        }
        // Checksum XMODEM takes 128-byte blocks; -c asks with C (CRC-16)
        // and takes 1K blocks too (the receiver takes either).
        self.starting = Some((
            Instant::now() + SPEED_CHANGE_DELAY,
            protocol,
            !crc,
            name,
            speed,
        ));
        true
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
            "xmodem" => {
                let args: Vec<String> = words[1..].iter().map(|w| w.str()).collect();
                if self.xmodem(&args, out) {
                    return RommonEvent::Nothing;
                }
            }
            "reset" if self.confreg & 0xf != 0 => return RommonEvent::Boot,
            "reset" => {
                out.extend_from_slice(b"\r\n");
                out.extend(crlf_lines(super::boot::BOOTSTRAP));
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
                "xmodem             x/ymodem image download",
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
    text.push_str(&super::boot::boot_banner());
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
