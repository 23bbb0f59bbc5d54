//! A U-Boot-like boot loader on a serial console: the `=> ` prompt,
//! `loady` (YMODEM) and `loadx` (XMODEM) into its RAM, `crc32` and
//! `printenv filesize` to check what came, `reset` with the autoboot
//! countdown that any key stops. It also answers to lrzsz's `sb NAME` and
//! `sx NAME` (which a real U-Boot lacks) to send a file back, so that a
//! tool's receiving side can be tested against it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serialgate_xmodem::Protocol;

use super::cli::{Edited, Keys, LineEditor, crlf_lines, split_words};
use super::options::{BlockFaults, SimOptions};
use super::transfer::Transfer;

/// The prompt.
pub const PROMPT: &str = "=> ";
/// Where `loady` and `loadx` put a file.
pub const LOAD_ADDR: u32 = 0x8200_0000;
/// The file the loader holds from the start: a crash log to pull off.
pub const CRASH_LOG: &str = "crashlog.txt";

/// The crash log's text.
pub fn crash_log() -> Vec<u8> {
    let mut text = Vec::new();
    for i in 0..200 {
        text.extend_from_slice(
            format!(
                "[{:>10}.{:06}] watchdog: BUG: soft lockup - CPU#{} stuck for 23s!\n",
                1000 + i,
                i * 37,
                i % 4
            )
            .as_bytes(),
        );
    }
    text
}

/// CRC-32 (IEEE 802.3, as U-Boot's `crc32` prints it) of `data`.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[derive(Debug)]
enum State {
    /// At the prompt (not shown until the first RETURN).
    Prompt,
    /// Counting down to autoboot: when the next second ends, seconds left.
    Autoboot(Instant, u64),
    /// The kernel booted: the console is Linux's now, and silent.
    Kernel,
    /// A transfer; `load` says which: Some(protocol) for a load into RAM.
    Transfer(Box<Transfer>, Option<Protocol>),
}

/// The boot loader.
#[derive(Debug)]
pub struct UBoot {
    keys: Keys,
    editor: LineEditor,
    state: State,
    shown: bool,
    /// What is in RAM at [`LOAD_ADDR`] after a load.
    ram: Vec<u8>,
    /// Files it can send (`sb`, `sx`): the crash log and every file loaded.
    files: BTreeMap<String, Vec<u8>>,
    env: BTreeMap<String, String>,
    boot_window: Duration,
    faults: BlockFaults,
}

impl UBoot {
    /// The loader at its prompt, printing nothing until a RETURN.
    pub fn with_options(options: &SimOptions) -> UBoot {
        let mut env = BTreeMap::new();
        env.insert("baudrate".into(), "115200".into());
        env.insert("loadaddr".into(), format!("0x{LOAD_ADDR:x}"));
        env.insert("bootcmd".into(), "bootm ${loadaddr}".into());
        UBoot {
            keys: Keys::default(),
            editor: LineEditor::default(),
            state: State::Prompt,
            shown: false,
            ram: Vec::new(),
            files: BTreeMap::from([(CRASH_LOG.to_owned(), crash_log())]),
            env,
            boot_window: options.boot_window,
            faults: options.faults.clone(),
        }
    }

    /// When the next timer fires.
    pub fn next_deadline(&mut self) -> Option<Instant> {
        match &mut self.state {
            State::Autoboot(at, _) => Some(*at),
            State::Transfer(t, _) => t.deadline(),
            _ => None,
        }
    }

    /// Fires the timers due at `now`.
    pub fn tick(&mut self, now: Instant, out: &mut Vec<u8>) {
        match &mut self.state {
            State::Autoboot(at, left) if *at <= now => {
                if *left <= 1 {
                    out.extend_from_slice(b"\x08\x08\x08  0 \r\n");
                    out.extend(crlf_lines([
                        "## Booting kernel from Legacy Image at 82000000 ...",
                        "Starting kernel ...",
                        "",
                    ]));
                    self.state = State::Kernel;
                } else {
                    *left -= 1;
                    *at += Duration::from_secs(1);
                    out.extend_from_slice(format!("\x08\x08\x08{:>2} ", left).as_bytes());
                }
            }
            State::Transfer(t, _) => {
                t.tick(now, out);
                self.after_transfer(out);
            }
            _ => {}
        }
    }

    /// Bytes from the console.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for (i, &byte) in input.iter().enumerate() {
            match &mut self.state {
                State::Transfer(t, _) => {
                    t.feed(&input[i..], out);
                    self.after_transfer(out);
                    return;
                }
                State::Kernel => return,
                State::Autoboot(..) => {
                    // Any key stops autoboot.
                    self.state = State::Prompt;
                    self.shown = true;
                    out.extend_from_slice(b"\x08\x08\x08 0 \r\n");
                    out.extend_from_slice(PROMPT.as_bytes());
                    continue;
                }
                State::Prompt => {}
            }
            let Some(key) = self.keys.key(byte) else {
                continue;
            };
            let Edited::Line(line) = self.editor.key(key, out) else {
                continue;
            };
            if !self.shown {
                self.shown = true;
            } else {
                self.execute(&line, out);
            }
            if matches!(self.state, State::Prompt) {
                out.extend_from_slice(PROMPT.as_bytes());
            }
        }
    }

    fn execute(&mut self, line: &[u8], out: &mut Vec<u8>) {
        let words: Vec<String> = split_words(line).iter().map(|w| w.str()).collect();
        let Some(command) = words.first() else {
            return;
        };
        match command.as_str() {
            "loady" | "loadx" => {
                let protocol = if command == "loady" {
                    Protocol::Ymodem
                } else {
                    Protocol::Xmodem
                };
                out.extend_from_slice(
                    format!(
                        "## Ready for binary ({}) download to 0x{LOAD_ADDR:08X} at 115200 bps...\r\n",
                        if command == "loady" { "ymodem" } else { "xmodem" }
                    )
                    .as_bytes(),
                );
                let t = Transfer::receive(protocol, false, self.faults.clone(), out);
                self.state = State::Transfer(Box::new(t), Some(protocol));
            }
            "sb" | "sx" => {
                let Some(name) = words.get(1) else {
                    out.extend_from_slice(format!("usage: {command} FILE\r\n").as_bytes());
                    return;
                };
                let Some(data) = self.files.get(name).cloned() else {
                    out.extend_from_slice(
                        format!("{command}: {name}: No such file\r\n").as_bytes(),
                    );
                    return;
                };
                let protocol = if command == "sb" {
                    Protocol::Ymodem
                } else {
                    Protocol::Xmodem1k
                };
                out.extend_from_slice(
                    format!(
                        "{command}: sending {name} ({} bytes); start your receiver\r\n",
                        data.len()
                    )
                    .as_bytes(),
                );
                let t = Transfer::send(protocol, name, data);
                self.state = State::Transfer(Box::new(t), None);
            }
            "crc32" => {
                let parse = |w: Option<&String>| {
                    let w = w?;
                    let w = w.strip_prefix("0x").unwrap_or(w);
                    u32::from_str_radix(w, 16).ok()
                };
                match (parse(words.get(1)), parse(words.get(2))) {
                    (Some(addr), Some(len)) if addr == LOAD_ADDR && len as usize <= self.ram.len() => {
                        let crc = crc32(&self.ram[..len as usize]);
                        out.extend_from_slice(
                            format!(
                                "crc32 for {addr:08x} ... {:08x} ==> {crc:08x}\r\n",
                                addr + len.max(1) - 1
                            )
                            .as_bytes(),
                        );
                    }
                    _ => out.extend_from_slice(b"Usage: crc32 address count (at the load address, within what was loaded)\r\n"),
                }
            }
            "printenv" => {
                let lines: Vec<String> = match words.get(1) {
                    Some(name) => match self.env.get(name) {
                        Some(v) => vec![format!("{name}={v}")],
                        None => vec![format!("## Error: \"{name}\" not defined")],
                    },
                    None => self.env.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                };
                out.extend(crlf_lines(lines));
            }
            "ls" => {
                let lines: Vec<String> = self
                    .files
                    .iter()
                    .map(|(name, data)| format!("{:>9}   {name}", data.len()))
                    .collect();
                out.extend(crlf_lines(lines));
            }
            "reset" => {
                out.extend(crlf_lines([
                    "resetting ...",
                    "",
                    "U-Boot 2024.01 (serialgate-sim)",
                    "",
                    "DRAM:  512 MiB",
                ]));
                let secs = self.boot_window.as_secs().max(1);
                out.extend_from_slice(
                    format!("Hit any key to stop autoboot: {secs:>2} ").as_bytes(),
                );
                self.state = State::Autoboot(Instant::now() + Duration::from_secs(1), secs);
            }
            "help" | "?" => out.extend(crlf_lines([
                "crc32     - checksum calculation",
                "loadx     - load binary file over serial line (xmodem mode)",
                "loady     - load binary file over serial line (ymodem mode)",
                "printenv  - print environment variables",
                "reset     - Perform RESET of the CPU",
            ])),
            other => out.extend_from_slice(
                format!("Unknown command '{other}' - try 'help'\r\n").as_bytes(),
            ),
        }
    }

    /// Once the transfer is over: what it did, then the prompt.
    fn after_transfer(&mut self, out: &mut Vec<u8>) {
        let State::Transfer(t, load) = &self.state else {
            return;
        };
        let Some(outcome) = t.outcome() else {
            return;
        };
        match (outcome, load) {
            (Ok(()), Some(protocol)) => {
                let data = t.data().to_vec();
                let name = t.name().unwrap_or_else(|| "loadx.bin".to_owned());
                out.extend_from_slice(b"\r\n");
                if *protocol == Protocol::Ymodem {
                    out.extend_from_slice(format!("## File Name       = {name}\r\n").as_bytes());
                }
                out.extend_from_slice(
                    format!(
                        "## Total Size      = 0x{:08x} = {} Bytes\r\n## Start Addr      = 0x{LOAD_ADDR:08X}\r\n",
                        data.len(),
                        data.len()
                    )
                    .as_bytes(),
                );
                self.env
                    .insert("filesize".into(), format!("{:x}", data.len()));
                self.files.insert(name, data.clone());
                self.ram = data;
            }
            (Ok(()), None) => out.extend_from_slice(b"\r\nTransfer complete\r\n"),
            (Err(why), _) => {
                out.extend_from_slice(format!("\r\n## Transfer failed: {why}\r\n").as_bytes())
            }
        }
        self.state = State::Prompt;
        out.extend_from_slice(PROMPT.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serialgate_xmodem::{Poll, Sender, Timing};

    /// Runs `sender` against the loader's console until the sender ends.
    fn pump(loader: &mut UBoot, sender: &mut Sender, out: &mut Vec<u8>) -> Poll {
        let mut seen = Vec::new();
        for _ in 0..100_000 {
            if !out.is_empty() {
                let now = std::mem::take(out);
                sender.input(&now, Instant::now());
                seen.extend(now);
            }
            match sender.poll() {
                Poll::Write(bytes) => loader.feed(&bytes, out),
                Poll::Wait(_) => {
                    if out.is_empty() {
                        panic!("both sides wait");
                    }
                }
                end => {
                    seen.append(out);
                    *out = seen;
                    return end;
                }
            }
        }
        panic!("no end")
    }

    #[test]
    fn loady_takes_a_file_with_its_name_and_crc32_checks_it() {
        let mut loader = UBoot::with_options(&SimOptions::default());
        let mut out = Vec::new();
        loader.feed(b"\rloady\r", &mut out);
        let text = String::from_utf8_lossy(&out).into_owned();
        assert!(
            text.contains("## Ready for binary (ymodem) download"),
            "{text}"
        );
        assert!(out.ends_with(b"C"), "{text:?}");
        let file: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let mut sender = Sender::new(
            Protocol::Ymodem,
            "fw.itb",
            file.clone(),
            Timing::default(),
            Instant::now(),
        );
        assert_eq!(pump(&mut loader, &mut sender, &mut out), Poll::Done);
        let text = String::from_utf8_lossy(&out).into_owned();
        assert!(text.contains("## File Name       = fw.itb"), "{text}");
        assert!(text.contains("= 5000 Bytes"), "{text}");
        assert!(text.ends_with(PROMPT), "{text:?}");
        out.clear();
        loader.feed(b"crc32 ${loadaddr} 1388\r", &mut out);
        // `${loadaddr}` is not expanded here: the simulator wants numbers.
        out.clear();
        loader.feed(b"crc32 82000000 1388\r", &mut out);
        let text = String::from_utf8_lossy(&out).into_owned();
        assert!(
            text.contains(&format!("==> {:08x}", crc32(&file))),
            "{text}"
        );
    }

    #[test]
    fn the_crc32_is_ieee() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn any_key_stops_autoboot_and_without_one_the_kernel_starts() {
        let mut loader = UBoot::with_options(&SimOptions::default());
        let mut out = Vec::new();
        loader.feed(b"\rreset\r", &mut out);
        assert!(String::from_utf8_lossy(&out).contains("Hit any key to stop autoboot:  1"));
        out.clear();
        loader.feed(b" ", &mut out);
        assert!(out.ends_with(PROMPT.as_bytes()));
        loader.feed(b"reset\r", &mut out);
        out.clear();
        let at = loader.next_deadline().unwrap();
        loader.tick(at, &mut out);
        assert!(String::from_utf8_lossy(&out).contains("Starting kernel"));
        assert_eq!(loader.next_deadline(), None);
    }
}
