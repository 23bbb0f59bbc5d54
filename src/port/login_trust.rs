//! Whether a login prompt on the port may be trusted with its stored
//! credentials.
//!
//! The mode driver types the stored user name, password and enable secret
//! at the prompts the preset calls login and password prompts. But once
//! anyone has typed at the device's logged-in command line (or at a boot
//! loader, or into a program with no prompt showing), a program they
//! started may be printing `login:` and `Password:` itself, reading what is
//! typed and printing it back: nothing in the output tells such a prompt
//! from the device's own. So the port remembers the first write that
//! reached anything but a login or password prompt, and from then on the
//! stored credentials are not typed on it. Typing at a login prompt is
//! safe: the device's login reads it. So are lone line endings (they wake
//! a console; they start no program) and the mode driver's own steps.
//!
//! The mark lasts as long as the port's log: a program on the device
//! outlives a lost and reopened serial line, so only a restart of the
//! daemon or a reload that reopens the port (a fresh log, a person's
//! decision) ends it.

use std::sync::Mutex;

use crate::audit::Actor;
use crate::config::{DeviceMode, ModePrompts, ModeRules};
use crate::last_prompt::mode_at_end;
use crate::log::OutputLog;
use crate::matcher::Prompt;

/// What tells the port's prompts apart: its preset's prompt and modes.
#[derive(Debug, Clone)]
pub struct PromptJudge {
    prompt: Prompt,
    modes: ModePrompts,
}

impl PromptJudge {
    /// The judge of a preset's `prompt` regex and its `modes`; `None` when
    /// the prompt does not compile (checked at load, so never in practice),
    /// and every write then counts as typed at the command line.
    pub fn new(prompt: &str, modes: &ModeRules) -> Option<PromptJudge> {
        Some(PromptJudge {
            prompt: Prompt::config_regex(prompt).ok()?,
            modes: ModePrompts::new(modes),
        })
    }

    /// The mode of the prompt `log` ends with, if it ends with one.
    pub fn mode_at_end(&self, log: &OutputLog) -> Option<DeviceMode> {
        mode_at_end(&self.prompt, &self.modes, log)
    }

    /// What stands on the device's command line after its prompt, as a
    /// terminal shows the log's last line (`Router#show ver` gives `show
    /// ver`); `None` when that line does not begin with a prompt.
    pub fn typed_after_prompt(&self, log: &OutputLog) -> Option<String> {
        let head = log.head();
        let tail = log.copy_range(head.saturating_sub(LINE_TAIL_BYTES).max(log.oldest()), head);
        let line_start = tail.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let line = crate::clean::clean_field(&tail[line_start..]);
        // The shortest start of the line that is a prompt.
        line.char_indices()
            .map(|(i, c)| i + c.len_utf8())
            .find(|&end| {
                crate::last_prompt::last_prompt(&self.prompt, &line.as_bytes()[..end]).is_some()
            })
            .map(|end| line[end..].to_owned())
    }
}

/// Bytes at the end of the log looked at for the command line.
const LINE_TAIL_BYTES: u64 = 1024;

/// The write kinds of the mode driver's own steps: its typing of a stored
/// secret, and the preset's commands it sends to move between modes.
pub const DRIVER_KINDS: [&str; 2] = ["credential", "mode"];

/// Who first typed at the port's command line, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandsTyped {
    /// The writer, as messages name them (`session 3 (client …, token …)`).
    pub by: String,
    /// When, as RFC 3339 UTC seconds.
    pub at: String,
}

/// The port's record of writes that make its login prompts untrustworthy.
#[derive(Debug, Default)]
pub struct LoginTrust {
    typed: Mutex<Option<CommandsTyped>>,
}

impl LoginTrust {
    /// Notes a write of `bytes` of `kind` by `actor`, judged against the
    /// prompt `log` ends with before the bytes reach the device.
    pub fn note_write(
        &self,
        judge: Option<&PromptJudge>,
        log: &OutputLog,
        actor: &Actor,
        kind: &str,
        bytes: &[u8],
    ) {
        if DRIVER_KINDS.contains(&kind) || bytes.iter().all(|&b| b == b'\r' || b == b'\n') {
            return;
        }
        let Ok(mut typed) = self.typed.lock() else {
            return;
        };
        if typed.is_some() {
            return;
        }
        let at_login = judge.is_some_and(|j| {
            matches!(
                mode_at_end(&j.prompt, &j.modes, log),
                Some(DeviceMode::Login | DeviceMode::Password)
            )
        });
        if !at_login {
            *typed = Some(CommandsTyped {
                by: actor.describe(),
                at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            });
        }
    }

    /// The first write at the command line, if there was one: while there
    /// was, the stored credentials are not typed.
    pub fn commands_typed(&self) -> Option<CommandsTyped> {
        self.typed.lock().ok().and_then(|t| t.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::presets::builtin;

    fn judge(preset: &str) -> PromptJudge {
        let p = builtin(preset).expect("built-in preset");
        PromptJudge::new(&p.prompt, &p.modes).expect("prompt compiles")
    }

    #[test]
    fn the_command_line_is_what_follows_the_prompt_as_a_terminal_shows_it() {
        let shown = |bytes: &[u8]| {
            let log = OutputLog::new(4096);
            log.append(bytes);
            judge("cisco-ios").typed_after_prompt(&log)
        };
        assert_eq!(shown(b"SW1#show ver").as_deref(), Some("show ver"));
        // Rubbed out and typed again: the terminal shows the last.
        assert_eq!(
            shown(b"\r\nSW1>rel\x08 \x08\x08 \x08\x08 \x08reload").as_deref(),
            Some("reload")
        );
        assert_eq!(shown(b"SW1(config-if)#").as_deref(), Some(""));
        assert_eq!(shown(b"Proceed with reload? [confirm]"), None);
        assert_eq!(shown(b" --More-- "), None);
    }

    fn agent() -> Actor {
        Actor {
            session: 1,
            client: "test".into(),
            token: "ops".into(),
            person: None,
            config_token: false,
        }
    }

    /// Writes `bytes` of `kind` after the device printed `shown`; whether
    /// the port then refuses its stored credentials.
    fn marks(preset: &str, shown: &[u8], kind: &str, bytes: &[u8]) -> bool {
        let trust = LoginTrust::default();
        let log = OutputLog::new(4096);
        log.append(shown);
        trust.note_write(Some(&judge(preset)), &log, &agent(), kind, bytes);
        trust.commands_typed().is_some()
    }

    #[test]
    fn typing_at_a_login_or_password_prompt_keeps_the_trust() {
        assert!(!marks("linux", b"\r\nvm login: ", "text", b"admin\r"));
        assert!(!marks("linux", b"admin\r\nPassword: ", "text", b"guess\r"));
        assert!(!marks(
            "cisco-ios",
            b"\r\nUsername: ",
            "command",
            b"admin\r"
        ));
    }

    #[test]
    fn typing_at_a_command_line_or_into_silence_ends_it() {
        assert!(marks("linux", b"\r\nadmin@vm:~$ ", "command", b"ls\r"));
        assert!(marks("cisco-ios", b"\r\nSW1#", "text", b"tclsh\r"));
        assert!(marks("cisco-ios", b"\r\nrommon 1 > ", "text", b"set\r"));
        // A program running, no prompt showing: it reads what is typed.
        assert!(marks("linux", b"\r\ncounting 3...", "text", b"y"));
        assert!(marks("linux", b"", "text", b"x"));
    }

    #[test]
    fn line_endings_and_the_drivers_own_steps_keep_it() {
        assert!(!marks("linux", b"\r\nadmin@vm:~$ ", "text", b"\r"));
        assert!(!marks("linux", b"", "text", b"\r\n"));
        assert!(!marks("cisco-ios", b"\r\nSW1>", "mode", b"enable\r"));
        assert!(!marks(
            "cisco-ios",
            b"\r\nPassword: ",
            "credential",
            b"pw\r"
        ));
    }

    #[test]
    fn the_first_writer_is_remembered() {
        let trust = LoginTrust::default();
        let log = OutputLog::new(4096);
        log.append(b"\r\nSW1#");
        let j = judge("cisco-ios");
        trust.note_write(Some(&j), &log, &agent(), "command", b"show clock\r");
        let other = Actor {
            token: "other".into(),
            ..agent()
        };
        trust.note_write(Some(&j), &log, &other, "command", b"show users\r");
        let typed = trust.commands_typed().expect("marked");
        assert!(typed.by.contains("token ops"), "{typed:?}");
    }
}
