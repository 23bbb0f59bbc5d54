//! Junos configurations as `set` statements (`system host-name mx1`, without
//! the `set`): the candidate and the active configuration are lists of
//! them. They print in braces (`show configuration`), as `set` lines
//! (`| display set`), and as a difference (`show | compare`); `commit
//! check` finds what the simulator treats as semantically invalid.

/// Statements that hold more statements: the word opens a level.
const CONTAINERS: &[&str] = &[
    "aggregated-devices",
    "bgp",
    "chassis",
    "ethernet",
    "firewall",
    "inet",
    "inet6",
    "interfaces",
    "lldp",
    "login",
    "netconf",
    "ntp",
    "ospf",
    "policy-options",
    "protocols",
    "root-authentication",
    "routing-options",
    "security",
    "services",
    "snmp",
    "static",
    "syslog",
    "system",
    "vlans",
];
/// Statements whose word takes a name, the two making one level (`unit 0`,
/// `family inet`).
const NAMED: &[&str] = &[
    "area",
    "community",
    "family",
    "file",
    "filter",
    "group",
    "interface",
    "neighbor",
    "policy-statement",
    "route",
    "server",
    "term",
    "unit",
    "user",
];
/// Leaves that hold one value: a new `set` replaces the old one.
const SINGLE: &[&str] = &[
    "autonomous-system",
    "class",
    "description",
    "device-count",
    "domain-name",
    "encrypted-password",
    "host-name",
    "local-as",
    "mtu",
    "peer-as",
    "router-id",
    "time-zone",
    "uid",
    "vlan-id",
];
/// Statements that cannot end a `set`: their value is missing.
pub const NEEDS_VALUE: &[&str] = &[
    "address",
    "area",
    "autonomous-system",
    "class",
    "community",
    "description",
    "device-count",
    "domain-name",
    "encrypted-password",
    "family",
    "file",
    "group",
    "host-name",
    "mtu",
    "neighbor",
    "peer-as",
    "router-id",
    "server",
    "time-zone",
    "uid",
    "unit",
    "user",
    "vlan-id",
];

/// The words of `text`, a quoted string (spaces and all) being one.
pub fn tokens(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                word.push(c);
            }
            ' ' | '\t' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            _ => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// The levels of a statement: `interfaces`, `et-0/0/0`, `unit 0`, `family
/// inet`, `address 10.0.0.0/31`. The last is the leaf, as braces print it.
fn levels(statement: &str) -> Vec<String> {
    let words = tokens(statement);
    let mut levels: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let word = words[i].as_str();
        let parent = levels.last().map(String::as_str);
        if matches!(parent, Some("interfaces" | "vlans")) {
            levels.push(word.to_owned());
            i += 1;
        } else if NAMED.contains(&word) && i + 1 < words.len() {
            levels.push(format!("{word} {}", words[i + 1]));
            i += 2;
        } else if CONTAINERS.contains(&word) {
            levels.push(word.to_owned());
            i += 1;
        } else {
            levels.push(words[i..].join(" "));
            break;
        }
    }
    levels
}

/// Sets `statement` in `statements`: a leaf holding one value replaces its
/// old value in place; anything else is added once.
pub fn set(statements: &mut Vec<String>, statement: &str) {
    let statement = tokens(statement).join(" ");
    if statements.contains(&statement) {
        return;
    }
    let new = levels(&statement);
    let keyword = |levels: &[String]| {
        levels
            .last()
            .and_then(|leaf| leaf.split(' ').next().map(str::to_owned))
    };
    let single = keyword(&new).is_some_and(|k| SINGLE.contains(&k.as_str()));
    let same_leaf = |other: &String| {
        let old = levels(other);
        old.len() == new.len()
            && old[..old.len() - 1] == new[..new.len() - 1]
            && keyword(&old) == keyword(&new)
    };
    match statements.iter().position(|s| single && same_leaf(s)) {
        Some(i) => statements[i] = statement,
        None => statements.push(statement),
    }
}

/// Deletes the statements under `prefix` (whole words); whether any were.
pub fn delete(statements: &mut Vec<String>, prefix: &str) -> bool {
    let prefix = tokens(prefix).join(" ");
    let before = statements.len();
    statements.retain(|s| !(*s == prefix || s.starts_with(&format!("{prefix} "))));
    statements.len() != before
}

/// A level of the configuration and what it holds.
struct Node {
    label: String,
    children: Vec<Node>,
}

/// The configuration in braces, four spaces a level, as `show
/// configuration` prints it (without its `## Last commit` line).
pub fn braces(statements: &[String]) -> Vec<String> {
    let mut roots: Vec<Node> = Vec::new();
    for statement in statements {
        let mut nodes = &mut roots;
        for label in levels(statement) {
            let at = match nodes.iter().position(|n| n.label == label) {
                Some(at) => at,
                None => {
                    nodes.push(Node {
                        label,
                        children: Vec::new(),
                    });
                    nodes.len() - 1
                }
            };
            nodes = &mut nodes[at].children;
        }
    }
    let mut lines = Vec::new();
    render(&roots, 0, &mut lines);
    lines
}

fn render(nodes: &[Node], depth: usize, lines: &mut Vec<String>) {
    let indent = "    ".repeat(depth);
    for node in nodes {
        if node.children.is_empty() {
            let secret = if node.label.starts_with("encrypted-password ") {
                " ## SECRET-DATA"
            } else {
                ""
            };
            lines.push(format!("{indent}{};{secret}", node.label));
        } else {
            lines.push(format!("{indent}{} {{", node.label));
            render(&node.children, depth + 1, lines);
            lines.push(format!("{indent}}}"));
        }
    }
}

/// The statements of a configuration in braces (`lines`, without the
/// `## Last commit` line): the inverse of [`braces`].
pub fn from_braces(lines: &[String]) -> Vec<String> {
    let mut statements = Vec::new();
    let mut path: Vec<String> = Vec::new();
    for line in lines {
        let line = line.trim();
        if line.starts_with("##") {
            continue;
        }
        if let Some(head) = line.strip_suffix(" {") {
            path.push(head.to_owned());
        } else if line == "}" {
            path.pop();
        } else if let Some(leaf) = line.split(" ## ").next().and_then(|l| l.strip_suffix(';')) {
            let mut statement = path.join(" ");
            if !statement.is_empty() {
                statement.push(' ');
            }
            statement.push_str(leaf);
            statements.push(statement);
        }
    }
    statements
}

/// `show | compare`: what the candidate removes (`-`) and adds (`+`),
/// under the `[edit …]` level of each change.
pub fn compare(active: &[String], candidate: &[String]) -> Vec<String> {
    let removed = active
        .iter()
        .filter(|s| !candidate.contains(s))
        .map(|s| ('-', s));
    let added = candidate
        .iter()
        .filter(|s| !active.contains(s))
        .map(|s| ('+', s));
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (sign, statement) in removed.chain(added) {
        let mut levels = levels(statement);
        let leaf = levels.pop().unwrap_or_default();
        let edit = if levels.is_empty() {
            "[edit]".to_owned()
        } else {
            format!("[edit {}]", levels.join(" "))
        };
        let line = format!("{sign}  {leaf};");
        match groups.iter_mut().find(|(e, _)| *e == edit) {
            Some((_, lines)) => lines.push(line),
            None => groups.push((edit, vec![line])),
        }
    }
    groups
        .into_iter()
        .flat_map(|(edit, lines)| std::iter::once(edit).chain(lines))
        .collect()
}

/// What `commit check` finds wrong, as Junos prints it (the caller adds
/// `error: configuration check-out failed`). The simulator's rules: a
/// physical interface beyond the router's ports (`ge|xe|et-F/P/N` with FPC
/// above 1, PIC above 0 or port above 23), and an IPv4 interface address
/// without its prefix length.
pub fn check(statements: &[String]) -> Vec<String> {
    let mut errors = Vec::new();
    let mut reported: Vec<String> = Vec::new();
    for statement in statements {
        let levels = levels(statement);
        if levels.first().map(String::as_str) != Some("interfaces") || levels.len() < 2 {
            continue;
        }
        let name = &levels[1];
        if !port_exists(name) && !reported.contains(name) {
            reported.push(name.clone());
            errors.extend([
                "[edit interfaces]".to_owned(),
                format!("  '{name}'"),
                format!("    error: interface {name} does not exist on this router (no such FPC, PIC or port)"),
            ]);
        }
        let leaf = levels.last().map(String::as_str).unwrap_or_default();
        let inet = levels.iter().any(|l| l == "family inet");
        if let Some(address) = leaf.strip_prefix("address ")
            && inet
            && !address.contains('/')
        {
            errors.extend([
                format!("[edit {}]", levels[..levels.len() - 1].join(" ")),
                format!("  '{leaf}'"),
                format!(
                    "    error: address {address} has no prefix length (write {address}/LENGTH)"
                ),
            ]);
        }
    }
    errors
}

/// Whether a physical port `name` exists (other names, `lo0`, `ae0`,
/// `irb`, always do).
fn port_exists(name: &str) -> bool {
    let Some((kind, numbers)) = name.split_once('-') else {
        return true;
    };
    if !matches!(kind, "ge" | "xe" | "et") {
        return true;
    }
    let numbers: Vec<Option<u32>> = numbers
        .split('.')
        .next()
        .unwrap_or_default()
        .split('/')
        .map(|n| n.parse().ok())
        .collect();
    match numbers[..] {
        [Some(fpc), Some(pic), Some(port)] => fpc <= 1 && pic == 0 && port <= 23,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn statements_round_trip_through_braces() {
        let lines = super::super::configuration_lines();
        let statements = from_braces(&lines);
        assert!(statements.contains(&"system host-name mx1".to_owned()));
        assert!(statements.contains(&"interfaces et-0/0/0 unit 0 family iso".to_owned()));
        assert_eq!(braces(&statements), lines[1..]);
    }

    #[test]
    fn set_replaces_single_values_and_delete_takes_a_prefix() {
        let mut s = strings(&["system host-name mx1", "system ntp server 192.0.2.1"]);
        set(&mut s, "system host-name mx2");
        set(&mut s, "system ntp server 192.0.2.2");
        set(&mut s, "interfaces ge-0/0/1 description \"to  core\"");
        assert_eq!(
            s,
            strings(&[
                "system host-name mx2",
                "system ntp server 192.0.2.1",
                "system ntp server 192.0.2.2",
                "interfaces ge-0/0/1 description \"to  core\"",
            ])
        );
        assert!(delete(&mut s, "system ntp"));
        assert!(!delete(&mut s, "system ntp"));
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn compare_groups_changes_by_level() {
        let active = strings(&["system host-name mx1", "system ntp server 192.0.2.1"]);
        let candidate = strings(&[
            "system host-name mx2",
            "system ntp server 192.0.2.1",
            "snmp community public",
        ]);
        assert_eq!(
            compare(&active, &candidate),
            strings(&[
                "[edit system]",
                "-  host-name mx1;",
                "+  host-name mx2;",
                "[edit snmp]",
                "+  community public;",
            ])
        );
    }

    #[test]
    fn check_finds_missing_ports_and_masks() {
        let good = strings(&["interfaces et-1/0/23 unit 0 family inet address 10.0.0.1/31"]);
        assert!(check(&good).is_empty());
        let bad = strings(&[
            "interfaces ge-0/0/99 unit 0 family inet address 10.0.0.1/31",
            "interfaces lo0 unit 0 family inet address 192.0.2.9",
        ]);
        let errors = check(&bad);
        assert_eq!(errors[0], "[edit interfaces]");
        assert_eq!(errors[1], "  'ge-0/0/99'");
        assert_eq!(errors[3], "[edit interfaces lo0 unit 0 family inet]");
        assert_eq!(errors[4], "  'address 192.0.2.9'");
    }
}
