//! The router's current configuration as VRP prints it: sections ended by
//! `#`, an interface's settings indented under `interface X`. Commands in
//! the system and interface views change these lines.

/// The system name a router starts with.
pub const SYSNAME: &str = "HUAWEI";

/// A current (or saved) configuration, `!Software Version` to `return`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Current {
    lines: Vec<String>,
}

impl Current {
    /// The configuration `lines` (as `display current-configuration`
    /// prints them).
    pub fn new(lines: Vec<String>) -> Current {
        Current { lines }
    }

    /// The lines.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The `sysname` line's name (`HUAWEI` when there is none).
    pub fn sysname(&self) -> &str {
        self.lines
            .iter()
            .find_map(|l| l.strip_prefix("sysname "))
            .unwrap_or(SYSNAME)
    }

    /// Sets `sysname NAME`.
    pub fn set_sysname(&mut self, name: &str) {
        let line = format!("sysname {name}");
        match self.lines.iter().position(|l| l.starts_with("sysname ")) {
            Some(i) => self.lines[i] = line,
            None => self.lines.insert(self.before_user_interfaces(), line),
        }
    }

    /// Each interface with a section, in order, and whether it is `shutdown`.
    pub fn interfaces(&self) -> Vec<(String, bool)> {
        self.lines
            .iter()
            .enumerate()
            .filter_map(|(h, l)| {
                let name = l.strip_prefix("interface ")?;
                let shut = self.lines[h + 1..self.section_end(h)]
                    .iter()
                    .any(|c| c == " shutdown");
                Some((name.to_owned(), shut))
            })
            .collect()
    }

    /// Whether `interface NAME` has a section.
    pub fn has_interface(&self, name: &str) -> bool {
        self.head(&format!("interface {name}")).is_some()
    }

    /// Makes sure `interface NAME` has a section, a new one after the last
    /// interface.
    pub fn ensure_interface(&mut self, name: &str) {
        if self.has_interface(name) {
            return;
        }
        let last = self.lines.iter().rposition(|l| l.starts_with("interface "));
        let at = match last {
            Some(h) => {
                let end = self.section_end(h);
                end + usize::from(self.lines.get(end).is_some_and(|l| l == "#"))
            }
            None => self.before_user_interfaces(),
        };
        self.lines
            .splice(at..at, [format!("interface {name}"), "#".to_owned()]);
    }

    /// Sets ` child` in section `head`: it replaces the child with the same
    /// first `key` words (`shutdown` and `undo shutdown` replace each
    /// other), or is added last.
    pub fn set_child(&mut self, head: &str, child: &str, key: usize) {
        let Some(h) = self.head(head) else {
            return;
        };
        let end = self.section_end(h);
        let base = |line: &str| line.strip_prefix("undo ").unwrap_or(line).to_owned();
        let same = |line: &str| {
            let (a, b) = (base(line), base(child));
            if key == 0 {
                a == b
            } else {
                a.split(' ').take(key).eq(b.split(' ').take(key))
            }
        };
        let line = format!(" {child}");
        match (h + 1..end).find(|&i| same(self.lines[i].trim_start())) {
            Some(i) => self.lines[i] = line,
            None => self.lines.insert(end, line),
        }
    }

    /// `undo WORDS` in section `head`: removes the children starting so.
    pub fn remove_child(&mut self, head: &str, words: &str) {
        let Some(h) = self.head(head) else {
            return;
        };
        let end = self.section_end(h);
        let gone: Vec<usize> = (h + 1..end)
            .filter(|&i| starts_with_words(self.lines[i].trim_start(), words))
            .collect();
        for i in gone.into_iter().rev() {
            self.lines.remove(i);
        }
    }

    /// Sets a system-view line (a section of its own), once.
    pub fn set_global(&mut self, line: &str) {
        if self.head(line).is_none() {
            let at = self.before_user_interfaces();
            self.lines.splice(at..at, [line.to_owned(), "#".to_owned()]);
        }
    }

    /// `undo WORDS` in the system view: removes the sections starting so.
    pub fn remove_global(&mut self, words: &str) {
        while let Some(h) = (0..self.lines.len())
            .find(|&i| !self.lines[i].starts_with(' ') && starts_with_words(&self.lines[i], words))
        {
            let end = self.section_end(h);
            let end = end + usize::from(self.lines.get(end).is_some_and(|l| l == "#"));
            self.lines.drain(h..end);
        }
    }

    fn head(&self, head: &str) -> Option<usize> {
        self.lines.iter().position(|l| l == head)
    }

    /// Past the indented lines under the line at `h`.
    fn section_end(&self, h: usize) -> usize {
        let mut end = h + 1;
        while self.lines.get(end).is_some_and(|l| l.starts_with(' ')) {
            end += 1;
        }
        end
    }

    /// Where new sections go: before `user-interface`, or `return`.
    fn before_user_interfaces(&self) -> usize {
        self.lines
            .iter()
            .position(|l| l.starts_with("user-interface "))
            .or_else(|| self.lines.iter().position(|l| l == "return"))
            .unwrap_or(self.lines.len())
    }
}

/// Whether `line` starts with the words of `words`.
fn starts_with_words(line: &str, words: &str) -> bool {
    line == words
        || line
            .strip_prefix(words)
            .is_some_and(|rest| rest.starts_with(' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_and_children() {
        let lines = [
            "sysname HUAWEI",
            "#",
            "interface GE0",
            " undo shutdown",
            "#",
            "user-interface con 0",
            "#",
            "return",
        ];
        let mut c = Current::new(lines.map(String::from).to_vec());
        c.set_sysname("CORE");
        c.ensure_interface("LoopBack1");
        c.set_child(
            "interface LoopBack1",
            "ip address 10.0.0.1 255.255.255.255",
            2,
        );
        c.set_child("interface GE0", "shutdown", 1);
        c.set_child("interface GE0", "description x", 1);
        c.set_global("ntp-service unicast-server 192.0.2.1");
        assert_eq!(
            c.lines().join("|"),
            "sysname CORE|#|interface GE0| shutdown| description x|#|interface LoopBack1| ip address 10.0.0.1 255.255.255.255|#|ntp-service unicast-server 192.0.2.1|#|user-interface con 0|#|return"
        );
        c.remove_child("interface GE0", "description");
        c.remove_global("ntp-service");
        assert_eq!(c.lines().len(), 11);
        assert_eq!(c.sysname(), "CORE");
    }
}
