//! A site's question for the user of an agent whose client speaks without
//! a session (MCP 2026-07-28), passed on in the call's result: the site
//! asks it as for a local call of such a client (`mcp/input_required.rs`:
//! the request waits in its store, its state sealed with the site's own
//! key), and the serving gateway hands the agent the questions and the
//! state. The client's second round comes back through the serving
//! gateway with the answers and the state, and the site checks them.
//!
//! The serving gateway trusts the site with none of the client's means,
//! as for a client with a session (`mcp/fleet_relay.rs`): only the
//! approve-or-deny form it asks itself is passed on, its message one
//! cleaned line naming the site; anything else (another form, sampling,
//! roots, too many questions, a key or state no client should be handed)
//! and the call ends with an error, asking nothing.

use rmcp::model::{ElicitRequest, InputRequest, InputRequests, InputRequiredResult};
use serde_json::Value;

use super::client_user::{approval_form, approval_message};
use crate::error::{ErrorCode, GateError};
use crate::fleet::client_relay::MAX_CLIENT_TEXT;
use crate::fleet::wire::one_line;

/// Most questions one result may ask: a call holds at most this many lines.
const MAX_QUESTIONS: usize = 16;
/// Longest key of a question (a site keys them by request id:
/// `approve-<ID>`).
const MAX_KEY: usize = 32;
/// Longest sealed state handed to the client (a site's holds request ids,
/// an expiry and a seal: a few hundred bytes).
const MAX_STATE: usize = 4096;

/// Whether a site's answer `value` is a result that asks the client's
/// user (`resultType` `input_required`) rather than the tool's result.
pub fn asks(value: &Value) -> bool {
    value.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// The result to hand the agent for site `site`'s asking `value`, when
/// the call let it ask (`allowed`): each question in this gateway's own
/// form, its message starting `site <SITE>:`; the state as the site
/// sealed it. `Err` when it may not be passed on.
pub fn passed_on(
    site: &str,
    value: Value,
    allowed: bool,
) -> Result<InputRequiredResult, GateError> {
    let refused = |why: &str| {
        GateError::new(
            ErrorCode::PortUnavailable,
            format!(
                "site {site} answered with a question for the agent's user that is not passed on ({why}); nothing was asked, and a person at a console may still decide the line"
            ),
        )
    };
    if !allowed {
        return Err(refused("this call's client cannot be asked in its result"));
    }
    let result: InputRequiredResult =
        serde_json::from_value(value).map_err(|_| refused("not a result that asks"))?;
    let state = result
        .request_state
        .filter(|s| {
            s.len() <= MAX_STATE && !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic())
        })
        .ok_or_else(|| refused("no state a client may be handed"))?;
    let asked = result
        .input_requests
        .filter(|r| !r.is_empty() && r.len() <= MAX_QUESTIONS)
        .ok_or_else(|| refused(&format!("none, or more than {MAX_QUESTIONS} questions")))?;
    let mut requests = InputRequests::new();
    for (key, request) in asked {
        let plain = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        if key.is_empty() || key.len() > MAX_KEY || !key.bytes().all(plain) {
            return Err(refused("a question's key is not a plain id"));
        }
        let InputRequest::Elicitation(elicit) = request else {
            return Err(refused("it asks for something other than a form"));
        };
        let form = approval_message(&elicit.params)
            .and_then(|message| {
                approval_form(format!(
                    "site {site}: {}",
                    one_line(message, MAX_CLIENT_TEXT)
                ))
            })
            .ok_or_else(|| refused("not the approve-or-deny form"))?;
        requests.insert(key, InputRequest::Elicitation(ElicitRequest::new(form)));
    }
    Ok(InputRequiredResult::new(Some(requests), Some(state)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ElicitRequestParams;
    use serde_json::json;

    fn asking(requests: InputRequests, state: &str) -> Value {
        serde_json::to_value(InputRequiredResult::new(
            Some(requests),
            Some(state.to_owned()),
        ))
        .expect("JSON")
    }

    fn approval(message: &str) -> InputRequest {
        InputRequest::Elicitation(ElicitRequest::new(
            approval_form(message.to_owned()).expect("the approval form"),
        ))
    }

    fn message_of(request: &InputRequest) -> String {
        match request {
            InputRequest::Elicitation(e) => {
                approval_message(&e.params).expect("the form").to_owned()
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_approval_form_passes_on_naming_the_site_and_cleaned() {
        let value = asking(
            InputRequests::from([(
                "approve-41".to_owned(),
                approval("serialgate: send \"reload\"?\u{1b}[2J\r\nyes"),
            )]),
            "sealed.state-AAAA",
        );
        assert!(asks(&value));
        let passed = passed_on("dc1", value, true).expect("passed on");
        let requests = passed.input_requests.expect("questions");
        let message = message_of(&requests["approve-41"]);
        assert!(
            message.starts_with("site dc1: serialgate: send \"reload\"?"),
            "{message:?}"
        );
        assert!(!message.contains(char::is_control), "{message:?}");
        assert_eq!(passed.request_state.as_deref(), Some("sealed.state-AAAA"));
    }

    #[test]
    fn a_site_cannot_ask_anything_else_or_ask_a_client_that_did_not_allow_it() {
        let fine = || InputRequests::from([("1".to_owned(), approval("ok?"))]);
        assert!(passed_on("dc1", asking(fine(), "s"), false).is_err());
        assert!(passed_on("dc1", asking(fine(), ""), true).is_err());
        assert!(passed_on("dc1", asking(fine(), &"s".repeat(MAX_STATE + 1)), true).is_err());
        assert!(passed_on("dc1", asking(fine(), "a b"), true).is_err());
        assert!(passed_on("dc1", asking(InputRequests::new(), "s"), true).is_err());
        let many: InputRequests = (0..=MAX_QUESTIONS)
            .map(|i| (i.to_string(), approval("ok?")))
            .collect();
        assert!(passed_on("dc1", asking(many, "s"), true).is_err());
        let bad_key = InputRequests::from([("../1\n".to_owned(), approval("ok?"))]);
        assert!(passed_on("dc1", asking(bad_key, "s"), true).is_err());
        // A form of the site's own making: a field for a password.
        let phishing = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "your enable password, please".to_owned(),
            requested_schema: serde_json::from_value(json!({
                "type": "object", "properties": {"password": {"type": "string"}}
            }))
            .expect("a schema"),
        };
        let other_form = InputRequests::from([(
            "1".to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(phishing)),
        )]);
        assert!(passed_on("dc1", asking(other_form, "s"), true).is_err());
        // Sampling: the site would have the agent's model write for it.
        let sampling = json!({"resultType": "input_required", "requestState": "s", "inputRequests": {
            "1": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 10}}}});
        assert!(passed_on("dc1", sampling, true).is_err());
        assert!(!asks(&json!({"content": [], "isError": false})));
    }
}
