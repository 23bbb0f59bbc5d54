//! Asking the user of the agent's own MCP client to approve a held line,
//! through MCP elicitation (`elicitation/create`), where the line's policy
//! names the client's user among its approvers and the client declared
//! the `elicitation` capability (when it initialized, or, for a client
//! without a session, with the request: `mcp/input_required.rs` asks
//! those in the call's result). The question shows
//! the exact line, the port, the mode and why; the user's answer decides
//! the request in the port's store (`port/approvals.rs`) as `client_user`
//! of the session, beside the people at a console, whoever comes first.
//! A client that did not declare the capability is never asked.

use rmcp::RoleServer;
use rmcp::model::{
    CancelledNotificationParam, ClientCapabilities, ClientResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, EnumSchema, RequestId,
    ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions};

/// The form's one field: the user's decision.
const FIELD: &str = "decision";
/// The answer that approves; every other answer (deny, decline, cancel,
/// a form without it) denies.
const APPROVE: &str = "approve";
const DENY: &str = "deny";

/// Whether `peer`'s client declared that it shows forms to its user.
pub fn may_ask(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes()
        .contains(&rmcp::service::ElicitationMode::Form)
}

/// What the client's user is asked about a request.
pub struct Question<'a> {
    /// The request's id.
    pub id: u64,
    /// The port.
    pub port: &'a str,
    /// The exact text, as messages show it (bounded, escaped).
    pub line: &'a str,
    /// The mode it arrives in.
    pub mode: &'a str,
    /// Why it needs approval.
    pub reason: &'a str,
    /// Seconds before it expires.
    pub expires_in_s: u64,
}

/// Whether a client that speaks without a session (2026-07-28: its
/// capabilities come with each request) declared that it shows forms.
pub fn may_ask_inline(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The form the client's user is shown for `question`: the exact line,
/// the port, the mode and why, with one field, approve or deny.
pub fn form(question: &Question<'_>) -> Option<ElicitRequestParams> {
    let message = format!(
        "serialgate: your agent asks to send {} ({} mode) on {}: {}. Approve sending it? (request {}, expires in {} s)",
        question.line,
        question.mode,
        question.port,
        question.reason,
        question.id,
        question.expires_in_s
    );
    approval_form(message)
}

/// The form's one field, approve or deny.
fn approval_schema() -> Option<ElicitationSchema> {
    ElicitationSchema::builder()
        .required_enum_schema(
            FIELD,
            EnumSchema::builder(vec![APPROVE.to_owned(), DENY.to_owned()])
                .description("approve sends the line to the device once; deny sends nothing")
                .build(),
        )
        .build()
        .ok()
}

/// The approve-or-deny form with `message`.
pub fn approval_form(message: String) -> Option<ElicitRequestParams> {
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: approval_schema()?,
    })
}

/// The message of `params` when it is the form [`form`] makes (approve
/// or deny, and nothing else): the one form a site may have the agent's
/// user asked through the fleet.
pub fn approval_message(params: &ElicitRequestParams) -> Option<&str> {
    match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } if Some(requested_schema) == approval_schema().as_ref() => Some(message),
        _ => None,
    }
}

/// What a user's decision reads as, as the client would answer the form:
/// accepted with approve, or declined.
pub fn decided(approve: bool) -> ElicitResult {
    if approve {
        ElicitResult::new(ElicitationAction::Accept)
            .with_content(serde_json::json!({ FIELD: APPROVE }))
    } else {
        ElicitResult::new(ElicitationAction::Decline)
    }
}

/// Whether the user's answer approves: they accepted the form with
/// `approve`. Denying, declining, cancelling or a form without the field
/// does not.
pub fn approves(result: &ElicitResult) -> bool {
    result.action == ElicitationAction::Accept
        && result
            .content
            .as_ref()
            .and_then(|c| c.get(FIELD))
            .and_then(|v| v.as_str())
            == Some(APPROVE)
}

/// Asks the client's user and returns their decision: `Some(true)` when
/// they accepted the form with `approve`, `Some(false)` when they denied,
/// declined or cancelled; `None` when the client could not be asked (it
/// answered with an error, or the connection failed), when the request
/// then waits for a person only. Dropping the future withdraws the
/// question (`notifications/cancelled`).
pub async fn ask(peer: &Peer<RoleServer>, question: &Question<'_>) -> Option<bool> {
    let params = form(question)?;
    ask_form(peer, params, question.port, question.id).await
}

/// [`ask`] with its form made already (`port` and `id` are for the log):
/// a site's question asked of the agent's user through the fleet.
pub async fn ask_form(
    peer: &Peer<RoleServer>,
    params: ElicitRequestParams,
    port: &str,
    id: u64,
) -> Option<bool> {
    let handle = match peer
        .send_cancellable_request(
            ServerRequest::ElicitRequest(ElicitRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
    {
        Ok(handle) => handle,
        Err(e) => {
            tracing::info!(port = %port, request = id, "the client's user cannot be asked: {e}");
            return None;
        }
    };
    let withdraw = Withdraw {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let answer = handle.await_response().await;
    withdraw.answered();
    match answer {
        Ok(ClientResult::ElicitResult(result)) => Some(approves(&result)),
        Ok(_) => {
            tracing::info!(port = %port, request = id, "the client answered the question for its user with something else");
            None
        }
        Err(e) => {
            tracing::info!(port = %port, request = id, "the client's user was not asked: {e}");
            None
        }
    }
}

/// Cancels the question when the wait ends before the user answers (a
/// person decided first, the request expired, the call was cancelled).
struct Withdraw {
    peer: Peer<RoleServer>,
    id: Option<RequestId>,
}

impl Withdraw {
    /// The user answered: nothing to withdraw.
    fn answered(mut self) {
        self.id = None;
    }
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        // Never wait for the client: the notification goes on its own.
        crate::task::spawn(async move {
            let _ = peer
                .notify_cancelled(CancelledNotificationParam::new(
                    Some(id),
                    Some("decided elsewhere, expired or withdrawn".to_owned()),
                ))
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_approval_form_passes_for_a_site_and_answers_read_as_decided() {
        let question = Question {
            id: 3,
            port: "core-sw1",
            line: "\"reload\"",
            mode: "exec",
            reason: "rule \"reload\"",
            expires_in_s: 60,
        };
        let ours = form(&question).unwrap();
        let message = approval_message(&ours).unwrap();
        assert!(
            message.contains("\"reload\" (exec mode) on core-sw1"),
            "{message}"
        );
        // A form asking for anything else (a password, say) is not one.
        let schema = ElicitationSchema::builder()
            .required_string("password")
            .build()
            .unwrap();
        let other = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "serialgate: your agent asks to send \"reload\"".into(),
            requested_schema: schema,
        };
        assert_eq!(approval_message(&other), None);
        assert!(approves(&decided(true)));
        assert!(!approves(&decided(false)));
    }
}
