//! `sudo` asking for the password of the port's stored user, answered from
//! the stored credentials while `send_command` waits, so that a command
//! run with `sudo` on a Linux console needs no secret in the agent's hands.
//! The password is obtained through the mode driver's credentials gate
//! (the same checks as a login), typed as a secret (never in results, the
//! transcript, the audit trail or logs; the port masks it in the output),
//! and typed once: if sudo asks again it refused it, and nothing more is
//! tried, so that the account is not locked out.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::service::RequestContext;

use super::dialogue::wait_hooks;
use super::mode::ModeDriver;
use super::server::GateServer;
use super::session::Connection;
use crate::error::{ErrorCode, GateError, shown};
use crate::matcher::Prompt;
use crate::port::wait::{PromptWait, WaitEnd};

/// The prompt sudo shows by default on every distribution
/// (`[sudo] password for %p: `), as a terminal shows it, trimmed: the user
/// whose password it asks for.
pub(super) fn sudo_user(prompt: &str) -> Option<&str> {
    let user = prompt
        .trim()
        .strip_prefix("[sudo] password for ")?
        .strip_suffix(':')?;
    (!user.is_empty() && !user.contains(char::is_whitespace)).then_some(user)
}

impl GateServer {
    /// When `waited` ended at sudo's prompt for the stored user and the
    /// caller may use the stored credentials, types the password and waits
    /// again for `prompt` (at most `timeout`); returns that second wait.
    /// `None` when it is not sudo's prompt for the stored user, or the
    /// gate refuses: the command then ends at sudo's prompt, as before.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn answer_sudo(
        &self,
        conn: &Connection,
        context: &RequestContext<RoleServer>,
        asked: &str,
        waited: &PromptWait,
        prompt: Prompt,
        auto_reply: &Option<BTreeMap<String, String>>,
        timeout: Duration,
    ) -> Result<Option<PromptWait>, GateError> {
        let Some(user) = sudo_user(asked) else {
            return Ok(None);
        };
        let driver = ModeDriver::new(self, conn, context, timeout)?;
        let credentials = match driver.credentials("sudo password") {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(port = %conn.name, "sudo asks for a password, not typed: {}", e.message);
                return Ok(None);
            }
        };
        // Only the stored user's own password, never another account's.
        if credentials.username != user {
            return Ok(None);
        }
        let mut bytes = credentials.password().as_bytes().to_vec();
        bytes.extend_from_slice(conn.profile.line_ending.bytes());
        let from = waited.end_offset;
        conn.port()
            .write_as(&self.session.actor(), "credential", &bytes, true)
            .await?;
        let again = self
            .wait_prompt(
                conn,
                from,
                prompt,
                auto_reply,
                timeout,
                &wait_hooks(context, &self.client_gone),
            )
            .await?;
        if let WaitEnd::Matched(span) = again.end {
            let log = conn.port().log();
            let next = crate::clean::clean_field(&log.copy_range(span.start, span.end));
            if sudo_user(&next).is_some() {
                return Err(GateError::new(
                    ErrorCode::Forbidden,
                    format!(
                        "sudo refused the stored password of {} (it asks again: {}); nothing more was typed, \
                         so that the account is not locked out. The console waits at sudo's prompt: \
                         send Ctrl-C (send_hex \"03\"), and check the credentials file of {}",
                        shown(user),
                        shown(next.trim()),
                        conn.name
                    ),
                ));
            }
        }
        Ok(Some(again))
    }
}

#[cfg(test)]
mod tests {
    use super::sudo_user;

    #[test]
    fn sudos_prompt_names_its_user() {
        assert_eq!(sudo_user("[sudo] password for netops: "), Some("netops"));
        assert_eq!(sudo_user("[sudo] password for netops:"), Some("netops"));
        assert_eq!(sudo_user("Password: "), None);
        assert_eq!(sudo_user("[sudo] password for : "), None);
        assert_eq!(sudo_user("[sudo] password for a b: "), None);
        assert_eq!(sudo_user("netops@vm:~$ "), None);
    }
}
