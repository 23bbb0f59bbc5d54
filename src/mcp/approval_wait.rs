//! A call whose line its command policy sends only once a person approves
//! (`mcp/authorize.rs`) waits here for the decision before the tool runs:
//! the request goes to the port's store (`port/approvals.rs`), progress
//! notifications say what it waits for and who may give it, and the call
//! goes on once a person approves, or ends `denied` when one denies or
//! nobody decides before `approval_timeout`. Cancelling the call (or the
//! client going away) withdraws the request.

use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use tokio_util::sync::CancellationToken;

use super::authorize::Held;
use super::dialogue::cancelled;
use crate::access::policy::CliMode;
use crate::audit::Actor;
use crate::error::{ErrorCode, GateError, shown};
use crate::port::approvals::{Asking, Decision};

/// How often a waiting call tells its client it still waits.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// The mode's name as a person reads it.
fn mode_name(mode: CliMode) -> &'static str {
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
        let ticket = port.approvals().request(
            actor,
            Asking {
                line: needs.text.clone(),
                mode: mode_name(needs.mode).to_owned(),
                reason: needs.reason.clone(),
                timeout,
                self_approve: needs.self_approve,
            },
        )?;
        let id = ticket.id();
        let line = shown(&needs.text);
        let four_eyes = match actor.token.as_str() {
            _ if needs.self_approve => String::new(),
            "local" | "anonymous" => String::new(),
            token => format!(", with another token than {}", shown(token)),
        };
        let waiting = format!(
            "waiting for a person's approval of {line} on {name} (request {id}; {}): a person attached with `serialgate console {name}` (write access{four_eyes}) approves it with Ctrl-] y or denies it with Ctrl-] n",
            needs.reason
        );
        tracing::info!(port = %name, request = id, "{waiting}");
        let started = Instant::now();
        let progress = context.meta.get_progress_token().map(|token| {
            let peer = context.peer.clone();
            move |left: u64| {
                let (peer, token) = (peer.clone(), token.clone());
                let note = ProgressNotificationParam::new(token, started.elapsed().as_secs_f64())
                    .with_message(format!("{waiting}; {left} s left"));
                // Never wait for the client: the notification goes on its own.
                tokio::spawn(async move {
                    let _ = peer.notify_progress(note).await;
                });
            }
        });
        let tick = |left: u64| {
            if let Some(report) = &progress {
                report(left);
            }
        };
        tick(timeout.as_secs());
        // Ending the wait drops the ticket, which withdraws the request.
        let decision = tokio::select! {
            decision = ticket.wait(cancel, PROGRESS_EVERY, tick) => decision,
            () = gone.cancelled() => None,
        };
        match decision {
            None => return Err(cancelled()),
            Some(Decision::Approved { by }) => {
                tracing::info!(port = %name, request = id, "approved by {by}");
            }
            Some(Decision::Denied { by }) => {
                return Err(GateError::new(
                    ErrorCode::Denied,
                    format!(
                        "{line} was denied by {by} (request {id} on {name}; {}); nothing was sent",
                        needs.reason
                    ),
                ));
            }
            Some(Decision::Expired) => {
                return Err(GateError::new(
                    ErrorCode::Denied,
                    format!(
                        "{line} expired: nobody approved it within {} s (request {id} on {name}; {}); nothing was sent. Ask a person to attach with `serialgate console {name}` and try again",
                        timeout.as_secs(),
                        needs.reason
                    ),
                ));
            }
        }
    }
    Ok(())
}
