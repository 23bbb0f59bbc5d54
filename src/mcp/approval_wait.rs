//! A call whose line its command policy sends only once a person approves
//! (`mcp/authorize.rs`) waits here for the decision before the tool runs:
//! the request goes to the port's store (`port/approvals.rs`), progress
//! notifications say what it waits for and who may give it, and the call
//! goes on once a person approves, or ends `denied` when one denies or
//! nobody decides before `approval_timeout`. Cancelling the call (or the
//! client going away) withdraws the request. Where the policy names the
//! client's user among its approvers and the client declared elicitation,
//! its user is asked too (`mcp/client_user.rs`); the first decision, a
//! person's or the user's, is taken, and the other question is withdrawn.

use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use tokio_util::sync::CancellationToken;

use super::authorize::Held;
use super::client_user::{self, Question};
use super::dialogue::cancelled;
use crate::access::guard::NeedsApproval;
use crate::access::policy::CliMode;
use crate::audit::Actor;
use crate::error::{ErrorCode, GateError, shown};
use crate::port::approvals::{Asking, Decision};

/// How often a waiting call tells its client it still waits.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// The mode's name as a person reads it.
pub(super) fn mode_name(mode: CliMode) -> &'static str {
    match mode {
        CliMode::Exec => "exec",
        CliMode::Config => "config",
        CliMode::Unknown => "unknown",
    }
}

/// Waits for a person's approval of each of `held`, in order, asked as
/// `actor`; `timeout` is the server's `approval_timeout` (a policy's own
/// wins). `Ok` once every one is approved; else `denied` naming who
/// denied it, or that it expired.
pub async fn obtain(
    held: Vec<Held>,
    actor: &Actor,
    timeout: Duration,
    context: &RequestContext<RoleServer>,
    gone: &CancellationToken,
) -> Result<(), GateError> {
    let cancel = &context.ct;
    for Held { port, needs } in held {
        let timeout = needs.timeout.unwrap_or(timeout);
        let name = port.name().to_owned();
        let ticket = port.approvals().request(actor, asking(&needs, timeout))?;
        let id = ticket.id();
        let line = shown(&needs.text);
        let four_eyes = match actor.token.as_str() {
            _ if needs.self_approve => String::new(),
            "local" | "anonymous" => String::new(),
            token => format!(", with another token than {}", shown(token)),
        };
        let ask_user = needs.client_user && client_user::may_ask(&context.peer);
        let also_user = if ask_user {
            "; your client's user is asked too"
        } else {
            ""
        };
        let waiting = format!(
            "waiting for a person's approval of {line} on {name} (request {id}; {}): a person attached with `serialgate console {name}` or in the web view (write access{four_eyes}) approves it with Ctrl-] y or denies it with Ctrl-] n, or with the page's buttons{also_user}",
            needs.reason
        );
        tracing::info!(port = %name, request = id, "{waiting}");
        let started = Instant::now();
        // The first word of the wait is sent before the wait begins (for
        // at most a second), so that it reaches the client before any
        // result: a person may decide at once.
        if let Some(token) = context.meta.get_progress_token() {
            let note = ProgressNotificationParam::new(token, 0.0)
                .with_message(format!("{waiting}; {} s left", timeout.as_secs()));
            let _ = tokio::time::timeout(
                std::time::Duration::from_secs(1),
                context.peer.notify_progress(note),
            )
            .await;
        }
        let progress = context.meta.get_progress_token().map(|token| {
            let peer = context.peer.clone();
            move |left: u64| {
                let (peer, token) = (peer.clone(), token.clone());
                let note = ProgressNotificationParam::new(token, started.elapsed().as_secs_f64())
                    .with_message(format!("{waiting}; {left} s left"));
                // Never wait for the client: the notification goes on its own.
                crate::task::spawn(async move {
                    let _ = peer.notify_progress(note).await;
                });
            }
        });
        let tick = |left: u64| {
            if let Some(report) = &progress {
                report(left);
            }
        };
        // The client's user, asked where the policy and the client allow
        // it: their answer decides in the store, as a person's does, and
        // the ticket hears it; a question the client cannot take leaves
        // the request to people. Never ends by itself, so the ticket's
        // wait ends the select.
        let store = port.approvals().clone();
        let mode = mode_name(needs.mode);
        let user = async {
            if ask_user {
                let question = Question {
                    id,
                    port: &name,
                    line: &line,
                    mode,
                    reason: &needs.reason,
                    expires_in_s: timeout.as_secs(),
                };
                if let Some(approve) = client_user::ask(&context.peer, &question).await
                    && let Err(e) = store.decide_as_client_user(id, &needs.text, actor, approve)
                {
                    // Decided or expired meanwhile: the ticket says how.
                    tracing::info!(port = %name, request = id, "the client's user's answer came late: {}", e.message);
                }
            }
            std::future::pending::<()>().await;
        };
        // Ending the wait drops the ticket, which withdraws the request,
        // and the question, which withdraws it from the client.
        let decision = tokio::select! {
            decision = ticket.wait(cancel, PROGRESS_EVERY, tick) => decision,
            () = user => None,
            () = gone.cancelled() => None,
        };
        let Some(decision) = decision else {
            return Err(cancelled());
        };
        verdict(decision, &line, id, &name, &needs.reason, timeout)?;
    }
    Ok(())
}

/// What the port's store is asked to hold for `needs`, with `timeout`
/// (the policy's own, else the server's) for a person to decide.
pub(crate) fn asking(needs: &NeedsApproval, timeout: Duration) -> Asking {
    Asking {
        line: needs.text.clone(),
        mode: mode_name(needs.mode).to_owned(),
        reason: needs.reason.clone(),
        timeout,
        self_approve: needs.self_approve,
        client_user: needs.client_user,
    }
}

/// What a call is told of its request's end: `Ok` once approved (the
/// line goes on), else `denied` saying who denied `line` (request `id` on
/// port `name`, held for `reason`), or that nobody decided within
/// `timeout`, and what to do.
pub(crate) fn verdict(
    decision: Decision,
    line: &str,
    id: u64,
    name: &str,
    reason: &str,
    timeout: Duration,
) -> Result<(), GateError> {
    match decision {
        Decision::Approved { by } => {
            tracing::info!(port = %name, request = id, "approved by {by}");
            Ok(())
        }
        Decision::Denied { by } => Err(GateError::new(
            ErrorCode::Denied,
            format!(
                "{line} was denied by {by} (request {id} on {name}; {reason}); nothing was sent"
            ),
        )),
        Decision::Withdrawn { why } => Err(GateError::new(
            ErrorCode::Denied,
            format!(
                "{line} was withdrawn undecided (request {id} on {name}): {why}; nothing was sent"
            ),
        )),
        Decision::Expired => Err(GateError::new(
            ErrorCode::Denied,
            format!(
                "{line} expired: nobody approved it within {} s (request {id} on {name}; {reason}); nothing was sent. Ask a person to attach with `serialgate console {name}` or to open the web view, and try again",
                timeout.as_secs()
            ),
        )),
    }
}
