//! The prompt a port's log ends with, and the mode a preset's modes judge
//! it to be. Shared by the MCP mode driver, `status` and the web view's
//! ports page, which shows a port's mode without a connection.

use crate::clean::clean_field;
use crate::config::{DeviceMode, ModePrompts};
use crate::log::OutputLog;
use crate::matcher::Prompt;

/// Bytes at the end of the log looked at for the last prompt.
const PROMPT_TAIL_BYTES: u64 = 512;

/// The mode of the prompt `log` ends with, judged by `modes`; `None` when
/// it ends with no prompt or one no mode pattern matches.
pub(crate) fn mode_at_end(
    prompt: &Prompt,
    modes: &ModePrompts,
    log: &OutputLog,
) -> Option<DeviceMode> {
    prompt_at_log_end(prompt, log).and_then(|p| modes.mode_of(&p))
}

/// The prompt `log` ends with, if it ends with one.
pub(crate) fn prompt_at_log_end(prompt: &Prompt, log: &OutputLog) -> Option<String> {
    let head = log.head();
    let tail = log.copy_range(
        head.saturating_sub(PROMPT_TAIL_BYTES).max(log.oldest()),
        head,
    );
    last_prompt(prompt, &tail)
}

/// The match of `prompt` that ends where `tail` ends, as a terminal shows
/// it ([`clean_field`]: a real shell's bracketed-paste switch and window
/// title are not part of what a person reads as its prompt), trimmed.
pub(crate) fn last_prompt(prompt: &Prompt, tail: &[u8]) -> Option<String> {
    let line_start = tail.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut at = line_start;
    while at <= tail.len() {
        let (start, end) = prompt.find_at(tail, at)?;
        if end == tail.len() {
            return Some(clean_field(&tail[start..end]).trim().to_owned());
        }
        at = start + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_prompt_is_the_one_the_tail_ends_with() {
        let prompt = Prompt::regex(r"[\w()-]+[>#] ?$").unwrap();
        assert_eq!(
            last_prompt(&prompt, b"SW1>enable\r\nPassword: \r\nSW1#"),
            Some("SW1#".to_owned())
        );
        assert_eq!(
            last_prompt(&prompt, b"SW1(config)#"),
            Some("SW1(config)#".to_owned())
        );
        assert_eq!(last_prompt(&prompt, b"SW1#show clock\r\n10:00 UTC"), None);
        assert_eq!(last_prompt(&prompt, b""), None);
    }

    #[test]
    fn a_real_shells_prompt_is_read_without_its_control_sequences() {
        let linux = crate::presets::builtin("linux").unwrap();
        let prompt = Prompt::regex(&linux.prompt).unwrap();
        // bash 5.2 after login, TERM=xterm: bracketed paste on, window
        // title, then PS1.
        let tail =
            b"permitted by applicable law.\r\n\x1b[?2004h\x1b]0;netops@vm: ~\x07netops@vm:~$ ";
        assert_eq!(last_prompt(&prompt, tail), Some("netops@vm:~$".to_owned()));
        // A coloured PS1 (Debian's force_color_prompt).
        let tail = b"\x1b[?2004h\x1b[01;32mnetops@vm\x1b[00m:\x1b[01;34m~\x1b[00m$ ";
        assert_eq!(last_prompt(&prompt, tail), Some("netops@vm:~$".to_owned()));
    }
}
