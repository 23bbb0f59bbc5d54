//! The switch's running (and startup) configuration as IOS prints it:
//! lines, global ones at the left margin, a block's lines indented under
//! its head (`interface X`, `vlan N`, `line con 0`…). Configuration
//! commands change these lines; `show running-config` prints them under
//! IOS's three header lines.

/// Lines in the whole output of `show running-config`, header to `end`.
pub const RUNNING_CONFIG_LINES: usize = 2000;

/// What `show startup-config` says the NVRAM holds.
pub const NVRAM_BYTES: usize = 524_288;

/// A configuration: the lines from the first `!` to `end`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Configuration {
    body: Vec<String>,
}

/// Where a new global line or block goes, as IOS orders its sections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Before the `!` above `line con 0`: most global commands.
    BeforeLines,
    /// After the last `username` line, or else after `enable secret`.
    Usernames,
    /// Just before `end` (`ntp server`).
    BeforeEnd,
    /// After the last interface block (new interfaces).
    AfterInterfaces,
    /// Before the first interface block (VLANs).
    BeforeInterfaces,
    /// Among the `line` blocks, before the `!` above `end`.
    AmongLines,
}

/// Global commands whose `no` form IOS shows in the configuration, since
/// they are on by default.
const DEFAULT_ON: &[&str] = &[
    "aaa new-model",
    "cdp",
    "ip domain lookup",
    "ip domain-lookup",
    "ip http",
    "ip routing",
    "ip source-route",
    "logging console",
    "service",
];

impl Configuration {
    /// The configuration of a switch named `hostname` as shipped:
    /// [`RUNNING_CONFIG_LINES`] lines with IOS's header, each interface
    /// with a unique description.
    pub fn baseline(hostname: &str) -> Configuration {
        let mut body: Vec<String> = [
            "!",
            "! Last configuration change at 00:04:12 UTC Mon Mar 1 1993",
            "!",
            "version 15.2",
            "no service pad",
            "service timestamps debug datetime msec",
            "service timestamps log datetime msec",
            "no service password-encryption",
            "!",
            &format!("hostname {hostname}"),
            "!",
            "boot-start-marker",
            "boot-end-marker",
            "!",
            "enable secret 5 $1$mERr$hx5rVt7rPNoS4wqbXKX7m0",
            "!",
            "no aaa new-model",
            "switch 1 provision ws-c2960x-48ts-l",
            "!",
            "ip domain-name lab.example.net",
            "!",
            "spanning-tree mode rapid-pvst",
            "spanning-tree extend system-id",
            "!",
            "vlan internal allocation policy ascending",
            "!",
        ]
        .map(String::from)
        .to_vec();
        let tail = [
            "interface Vlan1",
            " ip address 192.0.2.2 255.255.255.0",
            "!",
            "ip default-gateway 192.0.2.1",
            "ip http server",
            "ip http secure-server",
            "!",
            "line con 0",
            " logging synchronous",
            "line vty 0 4",
            " login",
            "line vty 5 15",
            " login",
            "!",
            "end",
        ];
        const HEADER_LINES: usize = 3;
        const BLOCK: usize = 6;
        let room = RUNNING_CONFIG_LINES - HEADER_LINES - body.len() - tail.len();
        for i in 0..room / BLOCK {
            let (member, port) = (1 + i / 52, 1 + i % 52);
            body.push(format!("interface GigabitEthernet{member}/0/{port}"));
            // Long, unique descriptions, as real uplink configs have: they
            // make the whole config larger than the default max_output of
            // 64 KiB.
            body.push(format!(
                " description link-{:04} to dist-{:02}.lab.example.net Gi1/0/{port} circuit CKT-{:06} rack R{:02}U{:02} (patch panel PP-{member:02} port {port})",
                i + 1,
                1 + i % 8,
                100_000 + i,
                1 + i % 12,
                1 + i % 42
            ));
            body.push(format!(" switchport access vlan {}", 10 + i % 20));
            body.push(" switchport mode access".to_owned());
            body.push(" spanning-tree portfast edge".to_owned());
            body.push("!".to_owned());
        }
        for k in 0..room % BLOCK {
            body.push(format!("ntp server 192.0.2.{}", 123 + k));
        }
        body.extend(tail.map(String::from));
        Configuration { body }
    }

    /// The lines from the first `!` to `end`.
    pub fn body(&self) -> &[String] {
        &self.body
    }

    /// Bytes the configuration takes, as IOS counts them (a newline each).
    pub fn bytes(&self) -> usize {
        self.body.iter().map(|line| line.len() + 1).sum()
    }

    /// What `show running-config` prints: `Building configuration...`, a
    /// blank line, the size, then the body.
    pub fn show_lines(&self) -> Vec<String> {
        let mut lines = vec![
            "Building configuration...".to_owned(),
            String::new(),
            format!("Current configuration : {} bytes", self.bytes()),
        ];
        lines.extend(self.body.iter().cloned());
        lines
    }

    /// What `show startup-config` prints: the NVRAM use, then the body.
    pub fn startup_lines(&self) -> Vec<String> {
        let mut lines = vec![format!("Using {} out of {NVRAM_BYTES} bytes", self.bytes())];
        lines.extend(self.body.iter().cloned());
        lines
    }

    /// The `hostname` line's name (`Switch` if there is none, as IOS
    /// names an unnamed switch).
    pub fn hostname(&self) -> &str {
        self.body
            .iter()
            .find_map(|line| line.strip_prefix("hostname "))
            .unwrap_or("Switch")
    }

    /// Sets the global `line`: it replaces the global line with the same
    /// first `key` words (`key` 0: only the same line), or the `no` form of
    /// it; else it goes to `place`.
    pub fn set_global(&mut self, line: &str, key: usize, place: Place) {
        let same = |other: &str| same_key(other, line, key);
        let negated = format!("no {line}");
        if let Some(i) = self.find_global(|i| same(&self.body[i])) {
            self.remove_lines(i);
            self.body.insert(i, line.to_owned());
        } else if let Some(i) = self.find_global(|i| self.body[i] == negated) {
            self.body[i] = line.to_owned();
        } else {
            let at = self.position(place);
            self.body.insert(at, line.to_owned());
        }
    }

    /// `no WORDS` at the global level: removes the global lines (and what
    /// they hold) that start with `words`. When none did and the command
    /// is on by default, the `no` line itself is kept, as IOS shows it.
    pub fn remove_global(&mut self, words: &str) {
        let mut removed = false;
        while let Some(i) = self.find_global(|i| starts_with_words(&self.body[i], words)) {
            self.remove_lines(i);
            removed = true;
        }
        let default_on = DEFAULT_ON.iter().any(|on| starts_with_words(words, on));
        if !removed && default_on {
            self.set_global(&format!("no {words}"), 0, Place::BeforeLines);
        }
    }

    /// Whether the block headed `head` exists.
    pub fn has_block(&self, head: &str) -> bool {
        self.globals().any(|i| self.body[i] == head)
    }

    /// Makes sure the block headed `head` exists, adding it at `place`.
    pub fn ensure_block(&mut self, head: &str, place: Place) {
        if self.has_block(head) {
            return;
        }
        let at = self.position(place);
        match place {
            Place::AfterInterfaces | Place::BeforeInterfaces => {
                self.body.splice(at..at, [head.to_owned(), "!".to_owned()]);
            }
            Place::BeforeLines => {
                self.body.splice(at..at, ["!".to_owned(), head.to_owned()]);
            }
            _ => self.body.insert(at, head.to_owned()),
        }
    }

    /// Removes the block headed `head` and the `!` after it.
    pub fn remove_block(&mut self, head: &str) {
        if let Some(i) = self.find_global(|i| self.body[i] == head) {
            self.remove_lines(i);
            if self.body.get(i).is_some_and(|l| l == "!")
                && self.body.get(i.wrapping_sub(1)).is_some_and(|l| l == "!")
            {
                self.body.remove(i);
            }
        }
    }

    /// Sets ` child` in the block `head` (which exists): it replaces the
    /// child with the same first `key` words; a new one goes first
    /// (`first`, as IOS puts `description`) or last.
    pub fn set_child(&mut self, head: &str, child: &str, key: usize, first: bool) {
        let Some(h) = self.find_global(|i| self.body[i] == head) else {
            return;
        };
        let end = self.block_end(h);
        let line = format!(" {child}");
        let negated = format!("no {child}");
        let same = |other: &str| same_key(other, child, key) || other == negated;
        match (h + 1..end).find(|&i| same(self.body[i].trim_start())) {
            Some(i) => self.body[i] = line,
            None => self.body.insert(if first { h + 1 } else { end }, line),
        }
    }

    /// `no WORDS` in the block `head`: removes its children that start
    /// with `words`. Returns whether any did.
    pub fn remove_child(&mut self, head: &str, words: &str) -> bool {
        let Some(h) = self.find_global(|i| self.body[i] == head) else {
            return false;
        };
        let end = self.block_end(h);
        let keep: Vec<bool> = (h + 1..end)
            .map(|i| !starts_with_words(self.body[i].trim_start(), words))
            .collect();
        let removed = keep.contains(&false);
        let mut flags = keep.into_iter();
        let mut index = 0;
        self.body.retain(|_| {
            let inside = index > h && index < end;
            index += 1;
            !inside || flags.next().unwrap_or(true)
        });
        removed
    }

    /// Sets a global command of several lines (a multi-line banner): the
    /// first line as [`set_global`](Self::set_global) does, the others
    /// after it.
    pub fn set_global_lines(&mut self, lines: &[String], key: usize, place: Place) {
        let Some((first, rest)) = lines.split_first() else {
            return;
        };
        self.set_global(first, key, place);
        if let Some(i) = self.find_global(|i| self.body[i] == *first) {
            self.body.splice(i + 1..i + 1, rest.iter().cloned());
        }
    }

    /// The value of the child `key …` of block `head`, e.g. an archive's
    /// `path`.
    pub fn child_value(&self, head: &str, key: &str) -> Option<&str> {
        let h = self.find_global(|i| self.body[i] == head)?;
        (h + 1..self.block_end(h)).find_map(|i| {
            self.body[i]
                .trim_start()
                .strip_prefix(key)
                .and_then(|rest| rest.strip_prefix(' '))
        })
    }

    /// The first line at the left margin that `found` accepts.
    fn find_global(&self, found: impl Fn(usize) -> bool) -> Option<usize> {
        self.globals().find(|&i| found(i))
    }

    /// Indexes of the lines at the left margin (not `!`).
    fn globals(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.body.len()).filter(|&i| {
            let line = &self.body[i];
            !line.starts_with(' ') && !line.starts_with('!')
        })
    }

    /// Where the block (or line) at `h` ends: past its indented lines, or
    /// for a multi-line banner past its closing `^C`.
    fn block_end(&self, h: usize) -> usize {
        let head = &self.body[h];
        let multi_line_banner =
            head.starts_with("banner ") && head.ends_with(" ^C") && head.split(' ').count() == 3;
        if multi_line_banner {
            let close = (h + 1..self.body.len()).find(|&i| self.body[i].ends_with("^C"));
            return close.map_or(h + 1, |i| i + 1);
        }
        let mut end = h + 1;
        while self.body.get(end).is_some_and(|l| l.starts_with(' ')) {
            end += 1;
        }
        end
    }

    /// Removes the line at `i` and what it holds.
    fn remove_lines(&mut self, i: usize) {
        let end = self.block_end(i);
        self.body.drain(i..end);
    }

    /// The index a new line or block at `place` is inserted at.
    fn position(&self, place: Place) -> usize {
        let end = self
            .body
            .iter()
            .rposition(|l| l == "end")
            .unwrap_or(self.body.len());
        let before_bang = |i: usize| {
            if i > 0 && self.body[i - 1] == "!" {
                i - 1
            } else {
                i
            }
        };
        let first_line = self.find_global(|i| self.body[i].starts_with("line "));
        let before_lines = first_line.map_or(end, before_bang);
        let interfaces: Vec<usize> = self
            .globals()
            .filter(|&i| self.body[i].starts_with("interface "))
            .collect();
        match place {
            Place::BeforeLines => before_lines,
            Place::BeforeEnd => end,
            Place::AmongLines => before_bang(end),
            Place::BeforeInterfaces => interfaces.first().copied().unwrap_or(before_lines),
            Place::AfterInterfaces => match interfaces.last() {
                Some(&last) => {
                    let end = self.block_end(last);
                    end + usize::from(self.body.get(end).is_some_and(|l| l == "!"))
                }
                None => before_lines,
            },
            Place::Usernames => {
                let last = self
                    .globals()
                    .filter(|&i| {
                        self.body[i].starts_with("username ")
                            || self.body[i].starts_with("enable secret ")
                    })
                    .last();
                last.map_or(before_lines, |i| i + 1)
            }
        }
    }
}

/// Whether `line` starts with the words of `words` (whole words).
pub fn starts_with_words(line: &str, words: &str) -> bool {
    line == words
        || line
            .strip_prefix(words)
            .is_some_and(|rest| rest.starts_with(' '))
}

/// Whether `a` and `b` have the same first `key` words (`key` 0: are the
/// same line).
fn same_key(a: &str, b: &str, key: usize) -> bool {
    if key == 0 {
        return a == b;
    }
    a.split(' ').count() >= key && a.split(' ').take(key).eq(b.split(' ').take(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Configuration {
        let body = [
            "!",
            "hostname SW1",
            "!",
            "enable secret 5 x",
            "!",
            "interface Gi1",
            " description a",
            "!",
            "ip http server",
            "!",
            "line con 0",
            " logging synchronous",
            "!",
            "end",
        ];
        Configuration {
            body: body.map(String::from).to_vec(),
        }
    }

    #[test]
    fn globals_replace_by_key_and_go_to_their_place() {
        let mut c = small();
        c.set_global("hostname core", 1, Place::BeforeLines);
        assert_eq!(c.hostname(), "core");
        c.set_global("logging host 192.0.2.9", 3, Place::BeforeLines);
        c.set_global("ntp server 192.0.2.1", 3, Place::BeforeEnd);
        c.set_global("username bob privilege 15 secret 9 x", 2, Place::Usernames);
        c.set_global("username bob privilege 1 secret 9 y", 2, Place::Usernames);
        c.remove_global("ip http");
        c.remove_global("cdp run");
        let body = c.body().join("|");
        assert_eq!(
            body,
            "!|hostname core|!|enable secret 5 x|username bob privilege 1 secret 9 y|!|interface Gi1| description a|!|logging host 192.0.2.9|no cdp run|!|line con 0| logging synchronous|!|ntp server 192.0.2.1|end"
        );
        c.remove_global("logging host 192.0.2.9");
        c.set_global("ip http", 0, Place::BeforeLines);
        assert!(c.body().contains(&"ip http".to_owned()));
        assert!(!c.body().contains(&"no ip http".to_owned()));
    }

    #[test]
    fn blocks_and_children() {
        let mut c = small();
        c.ensure_block("interface Loopback0", Place::AfterInterfaces);
        c.set_child(
            "interface Loopback0",
            "ip address 10.0.0.1 255.255.255.255",
            2,
            false,
        );
        c.set_child("interface Loopback0", "description lo", 1, true);
        c.set_child(
            "interface Loopback0",
            "ip address 10.0.0.2 255.255.255.255",
            2,
            false,
        );
        c.set_child("interface Gi1", "shutdown", 0, false);
        c.ensure_block("vlan 10", Place::BeforeInterfaces);
        c.set_child("vlan 10", "name users", 1, false);
        c.ensure_block("router ospf 1", Place::BeforeLines);
        let body = c.body().join("|");
        assert_eq!(
            body,
            "!|hostname SW1|!|enable secret 5 x|!|vlan 10| name users|!|interface Gi1| description a| shutdown|!|interface Loopback0| description lo| ip address 10.0.0.2 255.255.255.255|!|ip http server|!|router ospf 1|!|line con 0| logging synchronous|!|end"
        );
        c.remove_child("interface Gi1", "shutdown");
        c.remove_block("interface Loopback0");
        c.remove_block("vlan 10");
        c.remove_block("router ospf 1");
        assert_eq!(c, small());
    }

    #[test]
    fn the_baseline_is_as_long_as_ever() {
        let c = Configuration::baseline("SW1");
        assert_eq!(c.show_lines().len(), RUNNING_CONFIG_LINES);
        assert_eq!(c.hostname(), "SW1");
        assert!(c.startup_lines()[0].starts_with("Using "));
    }
}
