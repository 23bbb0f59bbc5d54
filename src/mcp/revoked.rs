//! A call whose caller loses, by a reload, the access its tool needs is
//! stopped, at every door alike: a local call here, a call forwarded to
//! another site at the site (`fleet_forward.rs`). A token removed or
//! lowered must not have a running `expect` script or configuration send
//! its next line after the reload that took the right away.

use std::future::Future;
use std::time::Duration;

use rmcp::model::{CallToolResponse, CallToolResult, IntoContents};
use tokio_util::sync::CancellationToken;

use super::tool_result::ToolError;
use crate::access::Caller;
use crate::access::rules;
use crate::error::{ErrorCode, GateError, shown};
use crate::gateway::Gateway;

/// How long a stopped call may take to end after its cancellation (every
/// wait of a tool ends at once when cancelled; this bounds the rest).
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Returns once a reload of this gateway's config leaves `caller` without
/// the access `tool` needs (its token removed or lowered); never for a
/// caller that is no `[[tokens]]` entry here.
pub(super) async fn access_lost(gateway: &Gateway, caller: &Caller, tool: &str) {
    if !caller.is_config_token() {
        return std::future::pending().await;
    }
    let needs = rules::classify(tool).0;
    let keeps = || {
        gateway
            .config()
            .token_named(&caller.name)
            .is_some_and(|t| t.access >= needs)
    };
    let mut config = gateway.watch_config();
    config.borrow_and_update();
    // A reload between the call's authorisation and here counts too.
    while keeps() {
        if config.changed().await.is_err() {
            return std::future::pending().await;
        }
    }
}

/// Runs a local tool `call` unless a reload takes from `caller` the access
/// `tool` needs while it runs: then the call is cancelled as a client's
/// cancellation would (its waits end, a line waiting for approval is
/// withdrawn, nothing more is sent), and the agent is told why. A call
/// that still completes in that moment keeps its result.
pub(super) async fn unless_revoked<F, E>(
    gateway: &Gateway,
    caller: &Caller,
    tool: &str,
    cancel: &CancellationToken,
    call: F,
) -> Result<CallToolResponse, E>
where
    F: Future<Output = Result<CallToolResponse, E>>,
{
    let mut call = std::pin::pin!(call);
    tokio::select! {
        // The call first: one the same reload already ended (a line
        // waiting for approval withdrawn before the new config is
        // announced) answers for itself.
        biased;
        response = &mut call => response,
        () = access_lost(gateway, caller, tool) => {
            cancel.cancel();
            match tokio::time::timeout(STOP_GRACE, &mut call).await {
                Ok(Ok(CallToolResponse::Complete(result))) if result.is_error != Some(true) => {
                    return Ok(CallToolResponse::Complete(result));
                }
                _ => {}
            }
            tracing::info!(
                "token {:?} lost the access {tool} needs to a reload while it ran: stopped",
                caller.name
            );
            // Counted (inside `counted`) as the forbidden call it now is.
            let contents = ToolError(stopped(caller, tool)).into_contents();
            Ok(CallToolResult::error(contents).into())
        }
    }
}

/// What the agent of a stopped call is told.
fn stopped(caller: &Caller, tool: &str) -> GateError {
    GateError::new(
        ErrorCode::Forbidden,
        format!(
            "a reload of this gateway's config took from token {} the access {tool} needs while it ran; it was stopped there, and nothing more was sent (a line waiting for approval is withdrawn); read_output shows what the device did",
            shown(&caller.name)
        ),
    )
}
