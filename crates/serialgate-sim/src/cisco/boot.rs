//! What a booting switch prints, from the boot loader's banner to `Press
//! RETURN`, and after a confirmed `reload`.

use std::time::SystemTime;

use super::clock::clock_text;
use crate::cli::crlf_lines;

/// What the switch prints from a confirmed `reload` to `Press RETURN`.
pub(super) fn boot_text(now: SystemTime) -> String {
    let clock = clock_text(now);
    let time = clock.split(" UTC").next().unwrap_or_default();
    format!(
        "{time}: %SYS-5-RELOAD: Reload requested by console. Reload Reason: Reload command.\r\n\r\n{}",
        boot_banner()
    )
}

/// The boot loader's banner, the first thing a booting switch prints.
pub(super) const BOOTSTRAP: [&str; 4] = [
    "System Bootstrap, Version 15.2(7r)E2, RELEASE SOFTWARE (fc1)",
    "Technical Support: http://www.cisco.com/techsupport",
    "Copyright (c) 2020 by cisco Systems, Inc.",
    "",
];

/// What a booting switch prints from the boot loader to `Press RETURN`.
pub(super) fn boot_banner() -> String {
    let mut text = String::from_utf8(crlf_lines(BOOTSTRAP)).expect("ASCII");
    text.push_str(&boot_rest());
    text
}

/// The boot after the boot loader's banner, to `Press RETURN`.
pub(super) fn boot_rest() -> String {
    let lines = [
        "Initializing flashfs...",
        "Loading \"flash:c2960x-universalk9-mz.152-7.E4.bin\"...@@@@@@@@@@@@@@@@@@@@@@@@",
        "File \"flash:c2960x-universalk9-mz.152-7.E4.bin\" uncompressed and installed, entry point: 0x3000",
        "executing...",
        "",
        "Press RETURN to get started!",
    ];
    String::from_utf8(crlf_lines(lines)).expect("ASCII")
}
