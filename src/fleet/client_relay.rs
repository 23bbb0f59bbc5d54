//! What a site's forwarded calls have for the agent's client, which only
//! the serving gateway reaches: a call's progress (a line waiting for a
//! person, a transfer's blocks), a question for the client's user (a
//! line a policy lets them approve) and its withdrawal, sent on the
//! session's subject of client events; and the user's answer, sent back
//! on the site's subject of answers. The serving gateway trusts a site
//! with none of the client's means: a question is asked only in the
//! form the serving gateway itself asks (approve or deny), its message
//! bounded and cleaned ([`super::wire::one_line`]); a progress message
//! too.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest client event a serving gateway reads.
pub const MAX_CLIENT_EVENT: usize = 16 * 1024;
/// Longest message of a progress note or a question passed on.
pub const MAX_CLIENT_TEXT: usize = 2048;
/// Longest id a serving gateway draws for its session with a site.
const MAX_ID: usize = 32;

/// What a forwarded call says of its agent's client: where the site
/// sends what the call has for it, and what it takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientEvents {
    /// The id of the serving gateway's session with the site
    /// ([`super::subjects::client_events`]): plain hex.
    pub id: String,
    /// The agent asked for the call's progress.
    pub progress: bool,
    /// The agent's client shows forms to its user (it declared MCP
    /// elicitation), so a policy letting its user approve may ask them.
    pub questions: bool,
}

impl ClientEvents {
    /// Whether the id is one a serving gateway draws (plain hex, short):
    /// a subject token a site may send to.
    pub fn plain(&self) -> bool {
        !self.id.is_empty()
            && self.id.len() <= MAX_ID
            && self.id.chars().all(|c| c.is_ascii_hexdigit())
    }
}

/// What a site tells a serving gateway's session for its agent's client.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ClientEvent {
    /// Progress of the call `call` (its number at the serving gateway).
    Progress {
        /// [`super::wire::VERSION`].
        v: u32,
        /// The call's number at the serving gateway.
        call: u64,
        /// How far, as MCP's progress counts it.
        progress: f64,
        /// Out of how much, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// What it is doing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A question for the client's user: MCP `elicitation/create`'s
    /// parameters as the site's session asked them, under the site's
    /// request id.
    Ask {
        /// [`super::wire::VERSION`].
        v: u32,
        /// The site's id of the question.
        id: u64,
        /// The form, as `elicitation/create` carries it.
        params: Value,
    },
    /// The question `id` needs no answer any more (decided elsewhere,
    /// expired, withdrawn).
    Withdraw {
        /// [`super::wire::VERSION`].
        v: u32,
        /// The site's id of the question.
        id: u64,
    },
}

/// A serving gateway's answer to a site's question.
#[derive(Debug, Serialize, Deserialize)]
pub struct UserAnswer {
    /// [`super::wire::VERSION`].
    pub v: u32,
    /// The serving gateway, as its calls name it.
    pub gateway: String,
    /// The session there, as its calls name it.
    pub session: u64,
    /// The token its calls came with.
    pub token: String,
    /// The site's id of the question.
    pub id: u64,
    /// The user approved (`true`) or not; `None`: the user could not be
    /// asked, and people decide.
    pub approve: Option<bool>,
}

/// Largest [`UserAnswer`] a site reads.
pub const MAX_USER_ANSWER: usize = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_back_and_hostile_ids_and_texts_do_not_pass() {
        let event = ClientEvent::Progress {
            v: 2,
            call: 7,
            progress: 1.0,
            total: None,
            message: Some("waiting".into()),
        };
        let wire = serde_json::to_string(&event).unwrap();
        assert!(wire.contains("\"kind\":\"progress\""), "{wire}");
        assert!(matches!(
            serde_json::from_str::<ClientEvent>(&wire).unwrap(),
            ClientEvent::Progress { call: 7, .. }
        ));
        let events = |id: &str| ClientEvents {
            id: id.into(),
            progress: true,
            questions: false,
        };
        assert!(events("0123abcd").plain());
        for bad in ["", "a.b", "*", ">", "x y", &"a".repeat(33)] {
            assert!(!events(bad).plain(), "{bad:?}");
        }
        let text = crate::fleet::wire::one_line(
            &format!("ok\x1b[2J\r\nforged \u{202e}{}", "é".repeat(5000)),
            MAX_CLIENT_TEXT,
        );
        assert!(text.starts_with("ok?[2J??forged ?é"), "{text:?}");
        assert!(
            text.len() <= MAX_CLIENT_TEXT && text.len() > MAX_CLIENT_TEXT - 2,
            "{}",
            text.len()
        );
    }
}
