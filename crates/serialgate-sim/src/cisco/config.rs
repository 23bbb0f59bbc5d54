//! Configuration mode: the lines typed at `SW1(config)#` and its
//! sub-modes, parsed as IOS parses them and applied to the running
//! configuration, or refused with IOS's messages (a refused line changes
//! nothing). A sub-mode takes the global commands too, and leaves itself
//! for them, as IOS does.

use std::mem;
use std::net::Ipv4Addr;

use super::running::{Place, starts_with_words};
use super::{CiscoSwitch, Error, Input, Mode, no_more_words, number};
use crate::cli::{Edited, Key, Miss, Word, is_abbreviation, resolve};

/// Global configuration commands.
const GLOBAL: &[&str] = &[
    "aaa",
    "access-list",
    "alias",
    "archive",
    "banner",
    "boot",
    "cdp",
    "clock",
    "crypto",
    "do",
    "enable",
    "end",
    "errdisable",
    "exit",
    "hostname",
    "interface",
    "ip",
    "ipv6",
    "line",
    "lldp",
    "logging",
    "mac",
    "monitor",
    "no",
    "ntp",
    "port-channel",
    "router",
    "service",
    "snmp-server",
    "spanning-tree",
    "switch",
    "username",
    "version",
    "vlan",
    "vtp",
];
/// What `ip` configures globally.
const IP: &[&str] = &[
    "access-list",
    "cef",
    "classless",
    "default-gateway",
    "dhcp",
    "domain",
    "domain-lookup",
    "domain-name",
    "forward-protocol",
    "ftp",
    "host",
    "http",
    "multicast-routing",
    "name-server",
    "prefix-list",
    "route",
    "routing",
    "scp",
    "sla",
    "source-route",
    "ssh",
    "tftp",
    "vrf",
];
/// `ip` commands complete without arguments.
const IP_ALONE: &[&str] = &[
    "cef",
    "classless",
    "domain-lookup",
    "multicast-routing",
    "routing",
    "source-route",
];
const NTP: &[&str] = &[
    "authenticate",
    "authentication-key",
    "master",
    "peer",
    "server",
    "source",
    "trusted-key",
    "update-calendar",
];
const LOGGING: &[&str] = &[
    "buffered",
    "console",
    "facility",
    "host",
    "monitor",
    "on",
    "source-interface",
    "trap",
];
const SNMP: &[&str] = &[
    "community",
    "contact",
    "enable",
    "group",
    "host",
    "ifindex",
    "location",
    "trap",
    "user",
    "view",
];
/// Interface types the switch has.
const INTERFACE_TYPES: &[&str] = &[
    "FastEthernet",
    "GigabitEthernet",
    "Loopback",
    "Port-channel",
    "Tunnel",
    "Vlan",
];
const INTERFACE: &[&str] = &[
    "cdp",
    "channel-group",
    "description",
    "do",
    "duplex",
    "end",
    "exit",
    "ip",
    "ipv6",
    "lldp",
    "load-interval",
    "mtu",
    "negotiation",
    "no",
    "power",
    "service-policy",
    "shutdown",
    "spanning-tree",
    "speed",
    "storm-control",
    "switchport",
    "udld",
    "vrf",
];
const INTERFACE_IP: &[&str] = &[
    "access-group",
    "address",
    "dhcp",
    "helper-address",
    "igmp",
    "mtu",
    "nat",
    "ospf",
    "pim",
    "proxy-arp",
    "redirects",
    "unreachables",
    "vrf",
];
const VLAN: &[&str] = &["do", "end", "exit", "name", "no", "shutdown", "state"];
const LINE: &[&str] = &[
    "access-class",
    "do",
    "end",
    "exec-timeout",
    "exit",
    "history",
    "length",
    "logging",
    "login",
    "no",
    "password",
    "privilege",
    "session-timeout",
    "speed",
    "stopbits",
    "transport",
    "width",
];
const ROUTER: &[&str] = &[
    "area",
    "auto-summary",
    "bgp",
    "default-information",
    "do",
    "end",
    "exit",
    "log-adjacency-changes",
    "maximum-paths",
    "neighbor",
    "network",
    "no",
    "passive-interface",
    "redistribute",
    "router-id",
    "timers",
];
const ARCHIVE: &[&str] = &[
    "do",
    "end",
    "exit",
    "log",
    "maximum",
    "no",
    "path",
    "time-period",
    "write-memory",
];
/// Sub-mode commands complete without arguments.
const ALONE: &[&str] = &[
    "auto-summary",
    "log-adjacency-changes",
    "login",
    "shutdown",
    "switchport",
    "write-memory",
];
/// Sub-mode commands that hold one value (a new one replaces it; `no`
/// takes no arguments).
const SINGLE: &[&str] = &[
    "description",
    "duplex",
    "exec-timeout",
    "length",
    "load-interval",
    "maximum",
    "mtu",
    "name",
    "password",
    "path",
    "router-id",
    "speed",
    "state",
    "time-period",
    "width",
];
/// Sub-mode settings on by default, whose `no` form IOS shows.
const SUB_DEFAULT_ON: &[&str] = &[
    "cdp enable",
    "ip proxy-arp",
    "ip redirects",
    "ip unreachables",
    "keepalive",
    "lldp receive",
    "lldp transmit",
    "negotiation auto",
    "switchport",
];

/// The commands of configuration sub-mode `sub`.
fn sub_table(sub: &str) -> &'static [&'static str] {
    match sub {
        "config-if" => INTERFACE,
        "config-vlan" => VLAN,
        "config-line" => LINE,
        "config-router" => ROUTER,
        _ => ARCHIVE,
    }
}

impl CiscoSwitch {
    /// A line in a configuration mode (`negate`: after `no`).
    pub(super) fn configure_line(
        &mut self,
        words: &[Word],
        line: &[u8],
        negate: bool,
    ) -> Result<Vec<u8>, Error> {
        let Mode::ConfigSub(sub) = self.mode else {
            return self.global(words, line, negate);
        };
        match resolve(words[0].text, sub_table(sub)) {
            Ok(name) => self.sub_command(name, words, line, negate),
            Err(Miss::Ambiguous) => Err(Error::Ambiguous(words[0].end())),
            Err(Miss::Unknown) => {
                keyword(words[0], GLOBAL)?;
                // A global command: IOS leaves the sub-mode for it.
                let block = self.block.take();
                self.mode = Mode::Config;
                let result = self.global(words, line, negate);
                if result.is_err() {
                    self.mode = Mode::ConfigSub(sub);
                    self.block = block;
                }
                result
            }
        }
    }

    /// `do`, `end`, `exit` and `no`, in every configuration mode.
    fn common(
        &mut self,
        name: &str,
        words: &[Word],
        line: &[u8],
        negate: bool,
    ) -> Option<Result<Vec<u8>, Error>> {
        if !matches!(name, "do" | "end" | "exit" | "no") {
            return None;
        }
        if negate {
            return Some(Err(Error::Invalid(words[0].at)));
        }
        Some(match name {
            "do" => self.do_exec(words),
            "end" => no_more_words(words, 1).map(|()| {
                self.leave_config();
                Vec::new()
            }),
            "exit" => no_more_words(words, 1).map(|()| {
                match self.mode {
                    Mode::ConfigSub(_) => {
                        self.mode = Mode::Config;
                        self.block = None;
                    }
                    _ => self.leave_config(),
                }
                Vec::new()
            }),
            _ => match words.get(1) {
                None => Err(Error::Incomplete),
                Some(_) => self.configure_line(&words[1..], line, true),
            },
        })
    }

    /// A global configuration command.
    fn global(&mut self, words: &[Word], line: &[u8], negate: bool) -> Result<Vec<u8>, Error> {
        let name = keyword(words[0], GLOBAL)?;
        if let Some(result) = self.common(name, words, line, negate) {
            return result;
        }
        let done = Ok(Vec::new());
        let config = &mut self.running;
        match name {
            "hostname" if negate => {
                no_more_words(words, 1)?;
                config.remove_global("hostname");
            }
            "hostname" => {
                let host = words.get(1).ok_or(Error::Incomplete)?;
                no_more_words(words, 2)?;
                config.set_global(&format!("hostname {}", host.str()), 1, Place::BeforeLines);
            }
            "enable" => return self.enable_secret(words, negate),
            "username" => return self.username(words, negate),
            "banner" => return self.banner(words, line, negate),
            "interface" => return self.interface(words, negate),
            "vlan" => return self.vlan(words, negate),
            "line" => return self.line_block(words, negate),
            "router" => return self.router(words, negate),
            "archive" => {
                no_more_words(words, 1)?;
                return self.block_command("archive", Place::BeforeLines, "config-archive", negate);
            }
            "ntp" => {
                let sub = keyword(*words.get(1).ok_or(Error::Incomplete)?, NTP)?;
                let server = matches!(sub, "server" | "peer");
                if server && !negate && words.len() < 3 {
                    return Err(Error::Incomplete);
                }
                let text = canonical(&format!("ntp {sub}"), &words[2..]);
                apply_global(
                    config,
                    &text,
                    if server { 3 } else { 2 },
                    Place::BeforeEnd,
                    negate,
                );
            }
            "logging" => {
                let first = words.get(1).ok_or(Error::Incomplete)?;
                let (sub, from) = match ipv4(*first) {
                    Ok(_) => ("host", 1),
                    Err(_) => (keyword(*first, LOGGING)?, 2),
                };
                let needs = matches!(sub, "host" | "facility" | "source-interface");
                if needs && !negate && words.len() <= from {
                    return Err(Error::Incomplete);
                }
                let key = if sub == "host" { 3 } else { 2 };
                let text = canonical(&format!("logging {sub}"), &words[from..]);
                apply_global(config, &text, key, Place::BeforeLines, negate);
            }
            "snmp-server" => {
                let sub = keyword(*words.get(1).ok_or(Error::Incomplete)?, SNMP)?;
                let rest = &words[2..];
                if rest.is_empty() && !negate && sub != "enable" {
                    return Err(Error::Incomplete);
                }
                let (text, key) = match sub {
                    "community" if !negate => {
                        let access = match rest.get(1).map(Word::str) {
                            Some(a) if a.eq_ignore_ascii_case("ro") => "RO".to_owned(),
                            Some(a) if a.eq_ignore_ascii_case("rw") => "RW".to_owned(),
                            Some(other) => other,
                            None => "RO".to_owned(),
                        };
                        let more = canonical(&access, rest.get(2..).unwrap_or_default());
                        (format!("snmp-server community {} {more}", rest[0].str()), 3)
                    }
                    "contact" | "location" if !negate => {
                        let raw = raw_from(line, rest[0]);
                        (format!("snmp-server {sub} {raw}"), 2)
                    }
                    "contact" | "location" => (format!("snmp-server {sub}"), 2),
                    _ => (canonical(&format!("snmp-server {sub}"), rest), 0),
                };
                apply_global(config, &text, key, Place::BeforeLines, negate);
            }
            "ip" => {
                let sub = keyword(*words.get(1).ok_or(Error::Incomplete)?, IP)?;
                let rest = &words[2..];
                if negate {
                    let text = match sub {
                        "default-gateway" | "domain-name" => format!("ip {sub}"),
                        _ => canonical(&format!("ip {sub}"), rest),
                    };
                    config.remove_global(&text);
                    return done;
                }
                if rest.is_empty() && !IP_ALONE.contains(&sub) {
                    return Err(Error::Incomplete);
                }
                let (text, key) = match sub {
                    "default-gateway" => {
                        no_more_words(words, 3)?;
                        (format!("ip default-gateway {}", ipv4(rest[0])?), 2)
                    }
                    "domain-name" => {
                        no_more_words(words, 3)?;
                        (format!("ip domain-name {}", rest[0].str()), 2)
                    }
                    "name-server" => (format!("ip name-server {}", ipv4(rest[0])?), 0),
                    "route" => {
                        let mask = rest.get(1).ok_or(Error::Incomplete)?;
                        let hop = rest.get(2).ok_or(Error::Incomplete)?;
                        let (network, mask) = (ipv4(rest[0])?, ipv4(*mask)?);
                        let more = canonical(&hop.str(), &rest[3..]);
                        (format!("ip route {network} {mask} {more}"), 0)
                    }
                    _ => (canonical(&format!("ip {sub}"), rest), 0),
                };
                config.set_global(&text, key, Place::BeforeLines);
            }
            _ => {
                if words.len() < 2 {
                    return Err(Error::Incomplete);
                }
                let text = canonical(name, &words[1..]);
                apply_global(config, &text, global_key(&text), Place::BeforeLines, negate);
            }
        }
        done
    }

    /// `enable secret [LEVEL] SECRET` and `enable password`: a plain secret
    /// is what `enable` accepts from now on.
    fn enable_secret(&mut self, words: &[Word], negate: bool) -> Result<Vec<u8>, Error> {
        let sub = keyword(
            *words.get(1).ok_or(Error::Incomplete)?,
            &["password", "secret"],
        )?;
        if negate {
            self.running.remove_global(&format!("enable {sub}"));
            return Ok(Vec::new());
        }
        let (level, value, used) = level_and_value(words, 2)?;
        no_more_words(words, 2 + used)?;
        let text = match (sub, level.as_str()) {
            ("secret", "0") => {
                self.enable_secret = value.clone();
                format!("enable secret 9 {}", scramble(&value))
            }
            ("secret", _) => format!("enable secret {level} {value}"),
            _ => format!("enable password {value}"),
        };
        self.running.set_global(&text, 2, Place::BeforeLines);
        Ok(Vec::new())
    }

    /// `username U [privilege N] {secret|password} [LEVEL] S` or
    /// `nopassword`; secrets are kept scrambled, as IOS does.
    fn username(&mut self, words: &[Word], negate: bool) -> Result<Vec<u8>, Error> {
        let user = words.get(1).ok_or(Error::Incomplete)?.str();
        if negate {
            self.running.remove_global(&format!("username {user}"));
            return Ok(Vec::new());
        }
        let mut text = format!("username {user}");
        let mut at = 2;
        loop {
            let word = *words.get(at).ok_or(Error::Incomplete)?;
            let options = ["nopassword", "password", "privilege", "secret"];
            match keyword(word, &options)? {
                "privilege" => {
                    let level = number(*words.get(at + 1).ok_or(Error::Incomplete)?, 0..=15)?;
                    text += &format!(" privilege {level}");
                    at += 2;
                }
                "nopassword" => {
                    text += " nopassword";
                    at += 1;
                    break;
                }
                kind => {
                    let (level, value, used) = level_and_value(words, at + 1)?;
                    text += &match (kind, level.as_str()) {
                        ("secret", "0") => format!(" secret 9 {}", scramble(&value)),
                        (_, level) => format!(" {kind} {level} {value}"),
                    };
                    at += 1 + used;
                    break;
                }
            }
        }
        no_more_words(words, at)?;
        self.running.set_global(&text, 2, Place::Usernames);
        Ok(Vec::new())
    }

    /// `banner motd DTEXTD`: on one line, or over several until the
    /// delimiter comes back. `^C` typed as two characters is taken as the
    /// delimiter IOS shows.
    fn banner(&mut self, words: &[Word], line: &[u8], negate: bool) -> Result<Vec<u8>, Error> {
        let kind = *words.get(1).ok_or(Error::Incomplete)?;
        let kind = keyword(kind, &["exec", "login", "motd"])?;
        let head = format!("banner {kind}");
        if negate {
            self.running.remove_global(&head);
            return Ok(Vec::new());
        }
        let text = words.get(2).map(|&w| raw_from(line, w)).unwrap_or_default();
        let Some(first) = text.chars().next() else {
            return Err(Error::Incomplete);
        };
        let delimiter = if text.starts_with("^C") {
            "^C".to_owned()
        } else {
            first.to_string()
        };
        let after = &text[delimiter.len()..];
        if let Some(end) = after.find(&delimiter) {
            let banner = format!("{head} ^C{}^C", &after[..end]);
            self.running.set_global(&banner, 2, Place::BeforeLines);
            return Ok(Vec::new());
        }
        let lines = if after.is_empty() {
            Vec::new()
        } else {
            vec![after.to_owned()]
        };
        self.input = Input::Banner {
            head,
            delimiter,
            lines,
        };
        Ok(format!("Enter TEXT message.  End with the character '{first}'.\r\n").into_bytes())
    }

    /// A key while a multi-line banner is typed: each line is kept until
    /// one holds the delimiter.
    pub(super) fn banner_key(&mut self, key: Key, out: &mut Vec<u8>) {
        let Edited::Line(typed) = self.editor.key(key, out) else {
            return;
        };
        let Input::Banner {
            head,
            delimiter,
            mut lines,
        } = mem::replace(&mut self.input, Input::Line)
        else {
            return;
        };
        let typed = String::from_utf8_lossy(&typed).into_owned();
        let Some(end) = typed.find(&delimiter) else {
            lines.push(typed);
            self.input = Input::Banner {
                head,
                delimiter,
                lines,
            };
            return;
        };
        if end > 0 {
            lines.push(typed[..end].to_owned());
        }
        let mut all = vec![format!("{head} ^C")];
        all.extend(lines);
        all.push("^C".to_owned());
        self.running.set_global_lines(&all, 2, Place::BeforeLines);
        self.print_prompt(out);
    }

    /// `interface NAME`: enters `config-if` for it (a virtual interface is
    /// created; a physical one must exist). `no interface` removes a
    /// virtual one.
    fn interface(&mut self, words: &[Word], negate: bool) -> Result<Vec<u8>, Error> {
        let (name, used) = self.interface_name(words, 1)?;
        no_more_words(words, 1 + used)?;
        let head = format!("interface {name}");
        if negate && (name.starts_with("GigabitEthernet") || name.starts_with("FastEthernet")) {
            return Err(Error::Invalid(words[1].at));
        }
        self.block_command(&head, Place::AfterInterfaces, "config-if", negate)
    }

    /// The interface `words[at..]` names (`Gi1/0/1`, `GigabitEthernet 1/0/1`,
    /// `lo0`), in full, and how many words it took.
    fn interface_name(&self, words: &[Word], at: usize) -> Result<(String, usize), Error> {
        let word = *words.get(at).ok_or(Error::Incomplete)?;
        let split = word
            .text
            .iter()
            .position(u8::is_ascii_digit)
            .unwrap_or(word.text.len());
        let kind = Word {
            at: word.at,
            text: &word.text[..split],
        };
        let kind = keyword(kind, INTERFACE_TYPES)?;
        let (number, number_at, used) = if split == word.text.len() {
            let next = *words.get(at + 1).ok_or(Error::Incomplete)?;
            (next.str(), next.at, 2)
        } else {
            let number = String::from_utf8_lossy(&word.text[split..]).into_owned();
            (number, word.at + split, 1)
        };
        let bad = Err(Error::Invalid(number_at));
        let slotted = matches!(kind, "GigabitEthernet" | "FastEthernet");
        let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        let valid = if slotted {
            number.split('/').all(digits)
        } else {
            digits(&number)
        };
        if !valid {
            return bad;
        }
        let name = format!("{kind}{number}");
        let exists = self.running.has_block(&format!("interface {name}"));
        match kind {
            "GigabitEthernet" if !exists => bad,
            "FastEthernet" if number != "0" => bad,
            "Vlan" if !number.parse().is_ok_and(|n: u32| (1..=4094).contains(&n)) => bad,
            _ => Ok((name, used)),
        }
    }

    /// `vlan N`: enters `config-vlan` (and `vlan internal …`, a global
    /// line).
    fn vlan(&mut self, words: &[Word], negate: bool) -> Result<Vec<u8>, Error> {
        let id = *words.get(1).ok_or(Error::Incomplete)?;
        if is_abbreviation(id.text, "internal") {
            let text = canonical("vlan internal", &words[2..]);
            apply_global(&mut self.running, &text, 0, Place::BeforeLines, negate);
            return Ok(Vec::new());
        }
        let id = number(id, 1..=4094)?;
        no_more_words(words, 2)?;
        self.block_command(
            &format!("vlan {id}"),
            Place::BeforeInterfaces,
            "config-vlan",
            negate,
        )
    }

    /// `line con 0`, `line vty 0 4`: enters `config-line`.
    fn line_block(&mut self, words: &[Word], negate: bool) -> Result<Vec<u8>, Error> {
        let kind = *words.get(1).ok_or(Error::Incomplete)?;
        let kind = keyword(kind, &["aux", "console", "vty"])?;
        let top = if kind == "vty" { 15 } else { 0 };
        let first = number(*words.get(2).ok_or(Error::Incomplete)?, 0..=top)?;
        let head = match (kind, words.get(3)) {
            ("vty", Some(&last)) => {
                let last = number(last, first..=15)?;
                no_more_words(words, 4)?;
                format!("line vty {first} {last}")
            }
            _ => {
                no_more_words(words, 3)?;
                let kind = if kind == "console" { "con" } else { kind };
                format!("line {kind} {first}")
            }
        };
        self.block_command(&head, Place::AmongLines, "config-line", negate)
    }

    /// `router ospf 1`, `router bgp 64500`, `router rip`: enters
    /// `config-router`.
    fn router(&mut self, words: &[Word], negate: bool) -> Result<Vec<u8>, Error> {
        let protocol = *words.get(1).ok_or(Error::Incomplete)?;
        let protocol = keyword(protocol, &["bgp", "eigrp", "isis", "ospf", "rip"])?;
        let head = if matches!(protocol, "rip" | "isis") {
            no_more_words(words, 2)?;
            format!("router {protocol}")
        } else {
            let id = number(*words.get(2).ok_or(Error::Incomplete)?, 1..=u32::MAX)?;
            no_more_words(words, 3)?;
            format!("router {protocol} {id}")
        };
        self.block_command(&head, Place::BeforeLines, "config-router", negate)
    }

    /// Enters sub-mode `sub` for the block `head` (made at `place` if new),
    /// or removes the block after `no`.
    fn block_command(
        &mut self,
        head: &str,
        place: Place,
        sub: &'static str,
        negate: bool,
    ) -> Result<Vec<u8>, Error> {
        if negate {
            self.running.remove_block(head);
        } else {
            self.running.ensure_block(head, place);
            self.mode = Mode::ConfigSub(sub);
            self.block = Some(head.to_owned());
        }
        Ok(Vec::new())
    }

    /// A command of the current sub-mode, applied to its block.
    fn sub_command(
        &mut self,
        name: &'static str,
        words: &[Word],
        line: &[u8],
        negate: bool,
    ) -> Result<Vec<u8>, Error> {
        if let Some(result) = self.common(name, words, line, negate) {
            return result;
        }
        let head = self.block.clone().unwrap_or_default();
        let rest = &words[1..];
        // `ip` in an interface names what it sets in its second word.
        let (command, rest) = if name == "ip" {
            let sub = keyword(*rest.first().ok_or(Error::Incomplete)?, INTERFACE_IP)?;
            (format!("ip {sub}"), &rest[1..])
        } else {
            (name.to_owned(), rest)
        };
        let single = SINGLE.contains(&name) || command == "ip address";
        if negate {
            let text = if single {
                command
            } else {
                canonical(&command, rest)
            };
            let removed = self.running.remove_child(&head, &text);
            if !removed && SUB_DEFAULT_ON.contains(&text.as_str()) {
                self.running
                    .set_child(&head, &format!("no {text}"), 0, false);
            }
            return Ok(Vec::new());
        }
        if rest.is_empty() && !ALONE.contains(&name) {
            return Err(Error::Incomplete);
        }
        let (text, key) = match command.as_str() {
            "description" => (format!("description {}", raw_from(line, rest[0])), 1),
            "ip address" => {
                let mask = *rest.get(1).ok_or(Error::Incomplete)?;
                let (address, mask) = (ipv4(rest[0])?, ipv4(mask)?);
                match rest.get(2) {
                    None => (format!("ip address {address} {mask}"), 2),
                    Some(&more) => {
                        keyword(more, &["secondary"])?;
                        no_more_words(rest, 3)?;
                        (format!("ip address {address} {mask} secondary"), 0)
                    }
                }
            }
            "shutdown" => {
                no_more_words(words, 1)?;
                ("shutdown".to_owned(), 0)
            }
            "name" => {
                no_more_words(words, 2)?;
                (format!("name {}", rest[0].str()), 1)
            }
            "state" => {
                let state = keyword(rest[0], &["active", "suspend"])?;
                no_more_words(words, 2)?;
                (format!("state {state}"), 1)
            }
            "switchport" => {
                let text = canonical("switchport", rest);
                let count = text.split(' ').count();
                let key = if count >= 3 { count - 1 } else { 0 };
                (text, key)
            }
            _ => (canonical(&command, rest), usize::from(single)),
        };
        self.running
            .set_child(&head, &text, key, command == "description");
        Ok(Vec::new())
    }
}

/// Sets (or after `no`, removes) the global line `text`.
fn apply_global(
    config: &mut super::running::Configuration,
    text: &str,
    key: usize,
    place: Place,
    negate: bool,
) {
    if negate {
        config.remove_global(text);
    } else {
        config.set_global(text, key, place);
    }
}

/// How many first words make a generic global line's identity (a new line
/// with the same ones replaces it).
fn global_key(text: &str) -> usize {
    const KEYS: &[(&str, usize)] = &[
        ("clock timezone", 2),
        ("service timestamps", 3),
        ("spanning-tree mode", 2),
        ("switch", 2),
        ("version", 1),
        ("vtp domain", 2),
        ("vtp mode", 2),
    ];
    KEYS.iter()
        .find(|(prefix, _)| starts_with_words(text, prefix))
        .map_or(0, |&(_, key)| key)
}

/// The keyword of `names` that `word` names or abbreviates, or IOS's
/// error for it.
fn keyword(word: Word, names: &[&'static str]) -> Result<&'static str, Error> {
    resolve(word.text, names).map_err(|miss| match miss {
        Miss::Ambiguous => Error::Ambiguous(word.end()),
        Miss::Unknown => Error::Invalid(word.at),
    })
}

/// `command` followed by `words`, one space apart.
fn canonical(command: &str, words: &[Word]) -> String {
    let mut text = command.to_owned();
    for word in words {
        text.push(' ');
        text.push_str(&word.str());
    }
    text
}

/// The rest of `line` from `word` on, as typed (descriptions keep their
/// spacing).
fn raw_from(line: &[u8], word: Word) -> String {
    String::from_utf8_lossy(&line[word.at..])
        .trim_end()
        .to_owned()
}

/// The IPv4 address `word` is, or the marker under it.
fn ipv4(word: Word) -> Result<Ipv4Addr, Error> {
    word.str().parse().map_err(|_| Error::Invalid(word.at))
}

/// A secret and its level (`0` plain, `5`/`7`/`9` already scrambled) from
/// `words[at..]`, and how many words they took.
fn level_and_value(words: &[Word], at: usize) -> Result<(String, String, usize), Error> {
    let first = words.get(at).ok_or(Error::Incomplete)?.str();
    match words.get(at + 1) {
        Some(value) if matches!(first.as_str(), "0" | "5" | "7" | "9") => {
            Ok((first, value.str(), 2))
        }
        _ => Ok(("0".to_owned(), first, 1)),
    }
}

/// A secret as the configuration shows it: `$9$` and a hash, the same for
/// the same secret (not IOS's scrypt; only that nothing shows in clear).
fn scramble(secret: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in secret.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("$9${hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::super::tests::{config_i, privileged, send};
    use super::*;

    /// A privileged switch in `configure terminal`.
    fn configuring() -> CiscoSwitch {
        let mut switch = privileged();
        send(&mut switch, "configure terminal\r");
        switch
    }

    /// The block of `head` in the running configuration, up to its `!`.
    fn block(switch: &CiscoSwitch, head: &str) -> Vec<String> {
        let lines = switch.configuration();
        let start = lines.iter().position(|l| l == head).expect(head);
        lines[start..]
            .iter()
            .take_while(|l| *l != "!")
            .cloned()
            .collect()
    }

    #[test]
    fn hostname_and_interfaces_change_the_running_configuration() {
        let mut switch = configuring();
        assert_eq!(
            send(&mut switch, "hostname core-1\r"),
            "hostname core-1\r\ncore-1(config)#"
        );
        assert!(
            switch
                .configuration()
                .contains(&"hostname core-1".to_owned())
        );
        assert_eq!(
            send(&mut switch, "interface Loopback0\r"),
            "interface Loopback0\r\ncore-1(config-if)#"
        );
        send(&mut switch, "description  router id  \r");
        send(&mut switch, "ip address 10.255.0.1 255.255.255.255\r");
        send(&mut switch, "shutdown\r");
        assert_eq!(
            block(&switch, "interface Loopback0"),
            [
                "interface Loopback0",
                " description router id",
                " ip address 10.255.0.1 255.255.255.255",
                " shutdown"
            ]
        );
        send(&mut switch, "no shutdown\r");
        send(&mut switch, "ip add 10.255.0.2 255.255.255.255\r");
        assert_eq!(
            block(&switch, "interface Loopback0"),
            [
                "interface Loopback0",
                " description router id",
                " ip address 10.255.0.2 255.255.255.255",
            ]
        );
        // A global command leaves the sub-mode.
        assert_eq!(
            send(&mut switch, "vlan 42\r"),
            "vlan 42\r\ncore-1(config-vlan)#"
        );
        send(&mut switch, "name servers\r");
        assert_eq!(block(&switch, "vlan 42"), ["vlan 42", " name servers"]);
        send(&mut switch, "int gi1/0/3\r");
        send(&mut switch, "desc uplink\r");
        assert_eq!(
            block(&switch, "interface GigabitEthernet1/0/3")[1],
            " description uplink"
        );
        send(&mut switch, "exit\r");
        send(&mut switch, "no vlan 42\r");
        assert!(!switch.configuration().contains(&"vlan 42".to_owned()));
        let text = send(&mut switch, "do show running-config | x\r");
        assert!(text.contains("% Invalid input"), "{text:?}");
    }

    #[test]
    fn global_lines_are_set_replaced_and_removed() {
        let mut switch = configuring();
        for line in [
            "ntp server 192.0.2.10",
            "logging host 192.0.2.20",
            "logging 192.0.2.21",
            "snmp-server community public RO",
            "snmp-server community private rw",
            "username ops privilege 15 secret s3cret",
            "ip route 0.0.0.0 0.0.0.0 192.0.2.1",
            "banner motd ^CAuthorized access only^C",
            "no ip domain-lookup",
            "service password-encryption",
        ] {
            let echo = send(&mut switch, &format!("{line}\r"));
            assert_eq!(echo, format!("{line}\r\nSW1(config)#"), "{line}");
        }
        let config = switch.configuration();
        let has = |line: &str| config.iter().any(|l| l == line);
        assert!(has("ntp server 192.0.2.10"));
        assert!(has("logging host 192.0.2.20") && has("logging host 192.0.2.21"));
        assert!(has("snmp-server community public RO"));
        assert!(has("snmp-server community private RW"));
        assert!(has("ip route 0.0.0.0 0.0.0.0 192.0.2.1"));
        assert!(has("banner motd ^CAuthorized access only^C"));
        assert!(has("no ip domain-lookup"));
        assert!(has("service password-encryption") && !has("no service password-encryption"));
        let user = config
            .iter()
            .find(|l| l.starts_with("username ops"))
            .unwrap();
        assert!(
            user.starts_with("username ops privilege 15 secret 9 $9$"),
            "{user}"
        );
        assert!(!user.contains("s3cret"));
        send(&mut switch, "no snmp-server community public\r");
        send(&mut switch, "no username ops\r");
        send(&mut switch, "no ntp server 192.0.2.10\r");
        let config = switch.configuration();
        assert!(
            !config
                .iter()
                .any(|l| l.contains("public") || l.contains("ops"))
        );
        assert!(!config.iter().any(|l| l.contains("192.0.2.10")));
        assert_eq!(config.last().map(String::as_str), Some("end"));
    }

    #[test]
    fn a_multi_line_banner_ends_at_its_delimiter() {
        let mut switch = configuring();
        assert_eq!(
            send(&mut switch, "banner motd #\r"),
            "banner motd #\r\nEnter TEXT message.  End with the character '#'.\r\n"
        );
        assert_eq!(send(&mut switch, "Authorized\r"), "Authorized\r\n");
        assert_eq!(send(&mut switch, "only#\r"), "only#\r\nSW1(config)#");
        let config = switch.configuration();
        let at = config.iter().position(|l| l == "banner motd ^C").unwrap();
        assert_eq!(
            config[at..at + 4],
            ["banner motd ^C", "Authorized", "only", "^C"]
        );
        send(&mut switch, "no banner motd\r");
        assert!(!switch.configuration().iter().any(|l| l == "Authorized"));
    }

    #[test]
    fn rejected_lines_get_ios_messages_and_change_nothing() {
        let mut switch = configuring();
        let before = switch.configuration();
        assert_eq!(
            send(&mut switch, "hostnme X\r"),
            "hostnme X\r\n            ^\r\n% Invalid input detected at '^' marker.\r\n\r\nSW1(config)#"
        );
        assert_eq!(
            send(&mut switch, "hostname\r"),
            "hostname\r\n% Incomplete command.\r\n\r\nSW1(config)#"
        );
        assert_eq!(
            send(&mut switch, "s foo\r"),
            "s foo\r\n% Ambiguous command:  \"s\"\r\nSW1(config)#"
        );
        assert_eq!(
            send(&mut switch, "interface Gi9/0/1\r"),
            "interface Gi9/0/1\r\n                        ^\r\n% Invalid input detected at '^' marker.\r\n\r\nSW1(config)#"
        );
        send(&mut switch, "interface Loopback1\r");
        let after_entry = switch.configuration();
        assert_eq!(
            send(&mut switch, "ip address\r"),
            "ip address\r\n% Incomplete command.\r\n\r\nSW1(config-if)#"
        );
        assert_eq!(
            send(&mut switch, "ip address 10.0.0.300 255.0.0.0\r"),
            "ip address 10.0.0.300 255.0.0.0\r\n                          ^\r\n% Invalid input detected at '^' marker.\r\n\r\nSW1(config-if)#"
        );
        assert_eq!(
            send(&mut switch, "shutdown now\r"),
            "shutdown now\r\n                        ^\r\n% Invalid input detected at '^' marker.\r\n\r\nSW1(config-if)#"
        );
        assert!(send(&mut switch, "show run\r").contains("% Invalid input"));
        assert_eq!(switch.mode(), Mode::ConfigSub("config-if"));
        assert_eq!(switch.configuration(), after_entry);
        assert_eq!(
            after_entry.len(),
            before.len() + 2,
            "the new block and its !"
        );
    }

    #[test]
    fn end_exit_and_ctrl_z_log_the_change() {
        let mut switch = configuring();
        send(&mut switch, "interface Loopback0\r");
        assert_eq!(send(&mut switch, "exit\r"), "exit\r\nSW1(config)#");
        assert_eq!(
            send(&mut switch, "exit\r"),
            format!("exit\r\n{}", config_i("SW1#"))
        );
        assert!(!switch.in_config_mode());
    }
}
