//! Typing at a console under a command policy: each line judged at Enter,
//! before the device runs it, by the same guard as the MCP tools
//! (`access/guard.rs`), so that a console is no way around a policy.
//!
//! The keys before Enter reach the device as they are typed
//! ([`super::typed_line`] refuses those it cannot follow). At Enter the
//! line is judged as typed, and so is what the device's own line shows
//! after its prompt once the echo has come (text left on it before the
//! person began counts too). An allowed line gets its Enter; a refused
//! one gets Ctrl-U instead, which clears it, and the person is told why;
//! one that needs approval is held ([`HeldLine`]) until a person decides.

use std::time::Duration;

use super::typed_line::{KILL_LINE, Key, LineStart, TypedLine};
use crate::access::Caller;
use crate::access::guard::{self, NeedsApproval, Sending, Target};
use crate::audit::Actor;
use crate::config::policies::Syntax;
use crate::error::{ErrorCode, GateError};
use crate::gateway::Gateway;
use crate::mcp::approval_wait;
use crate::port::Port;
use crate::port::approvals::{Decision, Ticket};

/// How long the device's echo of a line is awaited at Enter: a console at
/// 9600 baud echoes a 100-character line in about 100 ms.
const ECHO_WAIT: Duration = Duration::from_millis(500);

/// The write kind of typing in the audit trail.
const KIND: &str = "console";

/// A typed line waiting for a person's approval, its Enter not sent;
/// dropping it withdraws the request.
pub(super) struct HeldLine {
    /// The request's id.
    pub id: u64,
    /// The line asked for.
    line: String,
    reason: String,
    timeout: Duration,
    /// The Enter to send once approved.
    enter: Vec<u8>,
    ticket: Ticket,
}

impl HeldLine {
    /// Waits for the decision.
    pub async fn decided(&mut self) -> Decision {
        self.ticket.decided().await
    }
}

/// One person's typing on one port under a policy.
pub(super) struct JudgedTyping<'a> {
    /// The port.
    pub port: &'a Port,
    /// Where its config and the policies come from.
    pub gateway: &'a Gateway,
    /// Who types, as last re-checked.
    pub caller: &'a Caller,
    /// Who types, for the audit trail.
    pub actor: &'a Actor,
}

impl JudgedTyping<'_> {
    /// Whether what `caller` types at `port` is judged at all.
    pub fn applies(gateway: &Gateway, caller: &Caller, port: &str) -> bool {
        gateway
            .port(port)
            .is_some_and(|gp| guard::typing_judged(caller, &gateway.config(), &gp.config))
    }

    /// Writes `bytes` as typed, line by line as [`TypedLine`] follows
    /// them; stops at the first key or line refused, and says why, or at
    /// a line that needs a person's approval, which comes back held (its
    /// Enter not sent; what was typed after it is dropped).
    pub async fn write(
        &self,
        line: &mut TypedLine,
        bytes: &[u8],
    ) -> Result<Option<HeldLine>, GateError> {
        let gp = self.gateway.port(self.port.name()).ok_or_else(|| {
            GateError::new(
                ErrorCode::PortUnavailable,
                format!("{} is no longer configured", self.port.name()),
            )
        })?;
        let cli = gp.config.guardrails.syntax == Syntax::Cli;
        let mut from = 0;
        let mut i = 0;
        while i < bytes.len() {
            if line.is_new() {
                // What came before goes first, so that the prompt the
                // line begins at is read after it.
                self.send(&bytes[from..i]).await?;
                from = i;
                let (mode, secret) = guard::judged_mode(
                    self.port
                        .prompts()
                        .and_then(|p| p.mode_at_end(self.port.log())),
                );
                line.begin(LineStart { mode, secret });
            }
            match line.key(bytes[i], cli) {
                Key::Edit => i += 1,
                Key::Unjudged(what) => {
                    let what = format!("{what} typed at the console");
                    // Refused under any policy that judges; passed on when
                    // a reload just left none.
                    if let Err(e) = self.judge(Sending::Unjudged { what: &what }) {
                        self.send(&bytes[from..i]).await?;
                        return Err(e);
                    }
                    i += 1;
                }
                Key::Enter => {
                    self.send(&bytes[from..i]).await?;
                    let end = if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                        i + 2
                    } else {
                        i + 1
                    };
                    let (text, start) = line.take();
                    match self.judge_line(&text, start).await {
                        Ok(None) => {}
                        Ok(Some(needs)) => match self.hold(needs, &bytes[i..end]) {
                            Ok(held) => return Ok(Some(held)),
                            Err(e) => {
                                self.send(&[KILL_LINE]).await?;
                                return Err(e);
                            }
                        },
                        Err(e) => {
                            self.send(&[KILL_LINE]).await?;
                            line.clear();
                            return Err(e);
                        }
                    }
                    self.send(&bytes[i..end]).await?;
                    from = end;
                    i = end;
                }
            }
        }
        self.send(&bytes[from..]).await.map(|()| None)
    }

    /// Asks the port's store for a person's approval of `needs`, whose
    /// Enter is `enter`.
    fn hold(&self, needs: NeedsApproval, enter: &[u8]) -> Result<HeldLine, GateError> {
        let timeout = needs
            .timeout
            .unwrap_or(self.gateway.config().server.approval_timeout);
        let ticket = self
            .port
            .approvals()
            .request(self.actor, approval_wait::asking(&needs, timeout))?;
        Ok(HeldLine {
            id: ticket.id(),
            line: needs.text,
            reason: needs.reason,
            timeout,
            enter: enter.to_vec(),
            ticket,
        })
    }

    /// Ends `held` with its `decision`: approved, its Enter is sent if the
    /// device's line still shows the line approved; otherwise the line is
    /// cleared with Ctrl-U and the person told why.
    pub async fn settle(
        &self,
        held: HeldLine,
        decision: Option<Decision>,
    ) -> Result<(), GateError> {
        let name = self.port.name();
        let shown = crate::error::shown(&held.line);
        let outcome = match decision {
            Some(Decision::Approved { by }) => {
                let still = self
                    .port
                    .prompts()
                    .and_then(|p| p.typed_after_prompt(self.port.log()))
                    .is_none_or(|now| now.trim() == held.line.trim());
                if still {
                    tracing::info!(port = %name, request = held.id, "approved by {by} at the console");
                    return self.send(&held.enter).await;
                }
                Err(GateError::new(
                    ErrorCode::Denied,
                    format!(
                        "{shown} was approved (request {}), but the device's line changed while it waited, so it was not run on {name} (the line is cleared): type it again",
                        held.id
                    ),
                ))
            }
            Some(decision) => {
                approval_wait::verdict(decision, &shown, held.id, name, &held.reason, held.timeout)
            }
            None => Err(GateError::new(
                ErrorCode::Denied,
                format!(
                    "{shown} was withdrawn (request {} on {name}); it was not run (the line is cleared)",
                    held.id
                ),
            )),
        };
        self.send(&[KILL_LINE]).await?;
        outcome
    }

    /// Judges a finished line and what the device's line shows; what
    /// needs approval is the line the device would run.
    async fn judge_line(
        &self,
        text: &str,
        start: LineStart,
    ) -> Result<Option<NeedsApproval>, GateError> {
        if start.secret {
            return Ok(None);
        }
        let shown = self.echoed(text).await;
        let mut lines = vec![text];
        if let Some(s) = shown.as_deref().filter(|s| s.trim() != text.trim()) {
            lines.insert(0, s);
        }
        let mut needed = None;
        for line in lines {
            let sending = Sending::Lines {
                text: line,
                mode: start.mode,
                secret: false,
            };
            let needs = self.judge(sending)?;
            needed = needed.or(needs);
        }
        Ok(needed)
    }

    /// What the device's line shows after its prompt once it echoed
    /// `text` (or after [`ECHO_WAIT`]); `None` without a prompt there.
    async fn echoed(&self, text: &str) -> Option<String> {
        let prompts = self.port.prompts()?;
        let log = self.port.log();
        let mut head = log.subscribe();
        let deadline = tokio::time::Instant::now() + ECHO_WAIT;
        let wanted = text.trim_end();
        loop {
            head.borrow_and_update();
            let shown = prompts.typed_after_prompt(log);
            let echoed = shown
                .as_deref()
                .is_some_and(|s| s.trim_end().ends_with(wanted));
            if wanted.is_empty() || echoed {
                return shown;
            }
            match tokio::time::timeout_at(deadline, head.changed()).await {
                Ok(Ok(())) => {}
                _ => return shown,
            }
        }
    }

    /// The guard's verdict on `sending` for this caller at this console.
    pub fn judge(&self, sending: Sending<'_>) -> Result<Option<guard::NeedsApproval>, GateError> {
        let config = self.gateway.config();
        let gp = self.gateway.port(self.port.name()).ok_or_else(|| {
            GateError::new(
                ErrorCode::PortUnavailable,
                format!("{} is no longer configured", self.port.name()),
            )
        })?;
        let target = Target {
            port: &gp.config,
            preset: &gp.config.preset,
        };
        guard::may_type_at_console(self.caller, &config, target, sending)
            .inspect_err(|e| self.port.record_refusal(self.actor, &e.message))
    }

    async fn send(&self, bytes: &[u8]) -> Result<(), GateError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.port.write_as(self.actor, KIND, bytes, false).await
    }
}
