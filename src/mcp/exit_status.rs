//! A shell's exit status as the shell itself reports it to a terminal,
//! read from the output, never asked for: shells with terminal
//! integration (bash and zsh with a terminal's shell-integration script,
//! fish 4, VS Code's and WezTerm's scripts) print
//! `ESC ] 133 ; D ; STATUS` (BEL or `ESC \` ends it) when a command ends,
//! just before the next prompt. Typing `echo $?` would be a second command
//! at the console, seen by people watching and changing `$?`; this reads
//! only what the shell printed anyway.

/// How far back from the prompt the report is looked for: the shell
/// prints it right before the prompt.
pub(super) const REPORT_WINDOW: u64 = 4096;

/// The last exit status reported in `raw` (the bytes before the prompt),
/// if the shell reported one.
pub(super) fn reported_exit_status(raw: &[u8]) -> Option<i32> {
    const START: &[u8] = b"\x1b]133;D";
    let at = memchr::memmem::rfind(raw, START)?;
    let rest = &raw[at + START.len()..];
    // `ESC]133;D` alone (no status) says the command ended and tells nothing more.
    let digits = rest.strip_prefix(b";")?;
    let len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    if len == 0 || len > 9 {
        return None;
    }
    // The sequence must end where the status does (or at a further `;`
    // parameter), so that a cut-off report is not read as a number.
    match digits.get(len) {
        Some(b'\x07') | Some(b';') => {}
        Some(b'\x1b') if digits.get(len + 1) == Some(&b'\\') => {}
        _ => return None,
    }
    std::str::from_utf8(&digits[..len]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::reported_exit_status;

    #[test]
    fn the_last_report_before_the_prompt_is_the_status() {
        assert_eq!(
            reported_exit_status(b"out\r\n\x1b]133;D;0\x07\x1b]133;A\x07$ "),
            Some(0)
        );
        assert_eq!(
            reported_exit_status(b"\x1b]133;D;2\x07x\x1b]133;D;127\x1b\\$ "),
            Some(127)
        );
        assert_eq!(reported_exit_status(b"\x1b]133;D;1;aid=7\x07$ "), Some(1));
    }

    #[test]
    fn no_report_or_a_malformed_one_is_none() {
        assert_eq!(reported_exit_status(b"plain output\r\n$ "), None);
        assert_eq!(reported_exit_status(b"\x1b]133;D\x07$ "), None);
        assert_eq!(reported_exit_status(b"\x1b]133;D;"), None);
        assert_eq!(reported_exit_status(b"\x1b]133;D;12"), None);
        assert_eq!(reported_exit_status(b"\x1b]133;D;x\x07"), None);
        assert_eq!(reported_exit_status(b"\x1b]133;D;99999999999\x07"), None);
    }
}
