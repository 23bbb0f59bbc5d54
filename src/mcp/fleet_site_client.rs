//! At a site, what the in-process session of a forwarded session sends
//! for the agent's client (a call's progress, a question for the user,
//! its withdrawal) is published to the serving gateway on the session's
//! subject of client events; the user's answers, which the serving
//! gateway sends on the site's subject of answers, go back to that
//! session as its client's answers.

use serde_json::Value;
use tokio::sync::mpsc;

use super::loopback::ServerSends;
use crate::fleet::client_relay::{ClientEvent, ClientEvents, MAX_USER_ANSWER, UserAnswer};
use crate::fleet::link::Fleet;
use crate::fleet::subjects;
use crate::fleet::wire::VERSION;

/// Most of a session's messages for its client waiting to be published.
const WAITING: usize = 64;

/// What sends a forwarded session's messages for the agent's client to
/// its serving gateway, as `events` says; `None` for an id no serving
/// gateway draws.
pub fn relay(fleet: &Fleet, events: &ClientEvents) -> Option<ServerSends> {
    if !events.plain() {
        return None;
    }
    let (to, mut sent) = mpsc::channel::<Value>(WAITING);
    let client = fleet.client().clone();
    let subject = subjects::client_events(&fleet.site, &events.id);
    crate::task::spawn(async move {
        // Ends with the session: its server's messages end with it.
        while let Some(message) = sent.recv().await {
            let Some(event) = client_event(&message) else {
                continue;
            };
            let payload = serde_json::to_vec(&event).unwrap_or_default();
            if let Err(e) = client.publish(subject.clone(), payload.into()).await {
                tracing::debug!("fleet: a message for an agent's client was not sent: {e}");
            }
        }
    });
    Some(ServerSends {
        to,
        questions: events.questions,
    })
}

/// The client event a session's server message is: progress (its token
/// is the call's number at the serving gateway), a question, or its
/// withdrawal; `None` for anything else.
pub fn client_event(message: &Value) -> Option<ClientEvent> {
    let params = message.get("params");
    let field = |name: &str| params.and_then(|p| p.get(name));
    match message.get("method")?.as_str()? {
        "notifications/progress" => Some(ClientEvent::Progress {
            v: VERSION,
            call: field("progressToken")?.as_u64()?,
            progress: field("progress")?.as_f64()?,
            total: field("total").and_then(Value::as_f64),
            message: field("message").and_then(Value::as_str).map(str::to_owned),
        }),
        "elicitation/create" => Some(ClientEvent::Ask {
            v: VERSION,
            id: message.get("id")?.as_u64()?,
            params: params?.clone(),
        }),
        "notifications/cancelled" => Some(ClientEvent::Withdraw {
            v: VERSION,
            id: field("requestId")?.as_u64()?,
        }),
        _ => None,
    }
}

/// A [`UserAnswer`] read from `payload`, bounded, of this wire version.
pub fn user_answer(payload: &[u8]) -> Option<UserAnswer> {
    if payload.len() > MAX_USER_ANSWER {
        return None;
    }
    serde_json::from_slice::<UserAnswer>(payload)
        .ok()
        .filter(|a| a.v == VERSION)
}

/// What `answer` gives the session's question: the form answered as the
/// user decided, or an error (people decide then).
pub fn answered(answer: &UserAnswer) -> Result<Value, String> {
    match answer.approve {
        Some(approve) => serde_json::to_value(super::client_user::decided(approve))
            .map_err(|e| format!("the user's answer does not write as JSON: {e}")),
        None => Err("the agent's client could not ask its user; people decide".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_session_s_messages_become_client_events_and_nothing_else_does() {
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 12, "progress": 3.0, "message": "waiting"}});
        assert!(matches!(
            client_event(&progress),
            Some(ClientEvent::Progress {
                call: 12,
                total: None,
                ..
            })
        ));
        let ask = json!({"jsonrpc": "2.0", "id": 4, "method": "elicitation/create",
            "params": {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}});
        assert!(matches!(
            client_event(&ask),
            Some(ClientEvent::Ask { id: 4, .. })
        ));
        let withdrawn = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 4}});
        assert!(matches!(
            client_event(&withdrawn),
            Some(ClientEvent::Withdraw { id: 4, .. })
        ));
        // A progress token that is not a call number, a log message.
        for other in [
            json!({"method": "notifications/progress", "params": {"progressToken": "x", "progress": 1}}),
            json!({"method": "notifications/message", "params": {"level": "info"}}),
            json!({"method": "sampling/createMessage", "id": 1, "params": {}}),
        ] {
            assert!(client_event(&other).is_none(), "{other}");
        }
    }

    #[test]
    fn an_answer_reads_as_the_form_answered_or_as_no_answer() {
        let answer = |approve| UserAnswer {
            v: VERSION,
            gateway: "hub:1-a".into(),
            session: 1,
            token: "t".into(),
            id: 4,
            approve,
        };
        let approved = answered(&answer(Some(true))).unwrap();
        assert_eq!(
            approved,
            json!({"action": "accept", "content": {"decision": "approve"}})
        );
        assert_eq!(
            answered(&answer(Some(false))).unwrap(),
            json!({"action": "decline"})
        );
        assert!(answered(&answer(None)).is_err());
        let wire = serde_json::to_vec(&answer(Some(true))).unwrap();
        assert!(user_answer(&wire).is_some());
        assert!(user_answer(&vec![b' '; MAX_USER_ANSWER + 1]).is_none());
    }
}
