//! `display interface brief` as VRP (NE40E, V800) prints it: the legend,
//! then one line per interface with its physical and protocol state, the
//! last five minutes' utilization and error counters. The interfaces and
//! their states come from the current configuration (`shutdown` is
//! `*down`), so what a test configures shows here.

use super::config::Current;

/// The legend VRP prints above the table.
const LEGEND: [&str; 12] = [
    "PHY: Physical",
    "*down: administratively down",
    "^down: standby",
    "(l): loopback",
    "(s): spoofing",
    "(E): E-Trunk down",
    "(b): BFD down",
    "(B): Bit-error-detection down",
    "(e): ETHOAM down",
    "(d): Dampening Suppressed",
    "InUti/OutUti: input utility/output utility",
    "Interface                   PHY   Protocol  InUti OutUti   inErrors  outErrors",
];

/// The lines (without line ends) of `display interface brief` for the
/// configuration `current`.
pub fn interface_brief(current: &Current) -> Vec<String> {
    let mut lines: Vec<String> = LEGEND.map(String::from).to_vec();
    let mut interfaces = current.interfaces();
    // NULL0 exists on every router, configured or not.
    if !interfaces.iter().any(|(name, _)| name == "NULL0") {
        interfaces.push(("NULL0".to_owned(), false));
    }
    for (n, (name, shut)) in interfaces.iter().enumerate() {
        let virtual_ = name.starts_with("LoopBack") || name.starts_with("NULL");
        let (phy, protocol) = match (shut, virtual_) {
            (true, _) => ("*down", "down"),
            (false, true) => ("up", "up(s)"),
            (false, false) => ("up", "up"),
        };
        // Traffic on the physical ports that are up; none elsewhere.
        let (inuti, oututi, inerrors) = if virtual_ || *shut {
            ("0%".to_owned(), "0%".to_owned(), 0)
        } else {
            (
                utility(n * 7 % 23),
                utility(n * 13 % 31),
                (n % 5 == 3) as usize * 17 * n,
            )
        };
        lines.push(format!(
            "{name:<27} {phy:<5} {protocol:<9}{inuti:>6}{oututi:>7}{inerrors:>11}{:>11}",
            0
        ));
    }
    lines
}

/// A utilization as VRP shows it: `0%`, `0.07%`, `1.66%`.
fn utility(hundredths: usize) -> String {
    match hundredths {
        0 => "0%".to_owned(),
        h => format!("{}.{:02}%", h / 100, h % 100),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_under_the_header_as_on_the_router() {
        let lines = [
            "interface GigabitEthernet0/0/0",
            " undo shutdown",
            "#",
            "interface GigabitEthernet0/0/1",
            " shutdown",
            "#",
            "interface LoopBack0",
            "#",
            "return",
        ];
        let brief = interface_brief(&Current::new(lines.map(String::from).to_vec()));
        assert_eq!(&brief[..12], &LEGEND);
        assert_eq!(
            &brief[12..],
            [
                "GigabitEthernet0/0/0        up    up           0%     0%          0          0",
                "GigabitEthernet0/0/1        *down down         0%     0%          0          0",
                "LoopBack0                   up    up(s)        0%     0%          0          0",
                "NULL0                       up    up(s)        0%     0%          0          0",
            ]
        );
        let header = &brief[11];
        for row in &brief[12..] {
            assert_eq!(row.len(), header.len(), "{row}");
        }
    }
}
