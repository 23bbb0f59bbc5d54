//! Redfish (DMTF DSP0266) to a server's BMC: an outlet is a
//! ComputerSystem, named by its id under `/redfish/v1/Systems/`; its
//! `PowerState` is the outlet's state, and on and off are its
//! `#ComputerSystem.Reset` action with `ResetType` `On` and `ForceOff`.
//!
//! A BMC takes the reset and changes the power afterwards: a switch
//! reads `PowerState` until it is the one asked for
//! ([`settle`](super::settle)), so that a cycle's `On` is not sent to a
//! server still powering down. A system already in
//! the state asked for gets no reset (many BMCs refuse `On` to a running
//! server).
//!
//! Every exchange is one request under the controller's deadline
//! ([`redfish_http`](super::redfish_http)); a Redfish error's
//! `error.message` and `@Message.ExtendedInfo` messages are bounded and
//! escaped into the refusal.

use std::sync::Arc;
use std::time::Duration;

use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use super::driver::{DriverError, OutletState, PowerDriver};
use super::redfish_http::{self, Answer};
use super::settle::settle;
use crate::error::shown;

/// Most messages of a Redfish error repeated in a refusal.
const MAX_MESSAGES: usize = 3;
/// Most system ids listed when the one asked for is missing.
const MAX_LISTED: usize = 8;

/// A BMC and how it is logged in to.
pub struct Redfish {
    /// Where it is; its `tls` is what an `https://` BMC is checked against.
    pub endpoint: redfish_http::Endpoint,
    /// Why an `https://` BMC cannot be reached (its CA file or the
    /// system's roots unreadable), if so.
    pub tls_error: Option<String>,
    /// How long each request (the connect included) may take.
    pub deadline: Duration,
}

/// The state a Redfish `PowerState` names.
fn outlet_state(power: &str) -> OutletState {
    match power {
        "On" => OutletState::On,
        "Off" => OutletState::Off,
        other => OutletState::Other(crate::error::label(other)),
    }
}

/// The messages of a Redfish error body, bounded and escaped: its
/// `error.message` and each `@Message.ExtendedInfo` `Message`.
fn redfish_messages(body: &[u8]) -> String {
    let Ok(json) = serde_json::from_slice::<Value>(body) else {
        return String::new();
    };
    let error = &json["error"];
    let mut messages: Vec<String> = Vec::new();
    if let Some(m) = error["message"].as_str() {
        messages.push(shown(m));
    }
    let extended = error["@Message.ExtendedInfo"]
        .as_array()
        .or_else(|| json["@Message.ExtendedInfo"].as_array());
    for info in extended.into_iter().flatten() {
        if let Some(m) = info["Message"].as_str() {
            let m = shown(m);
            if !messages.contains(&m) {
                messages.push(m);
            }
        }
    }
    messages.truncate(MAX_MESSAGES);
    messages.join("; ")
}

/// `GET path: 404 Not Found: "message"`, for a refusal.
fn refusal(what: &str, answer: &Answer) -> String {
    let messages = redfish_messages(&answer.body);
    let mut text = format!("{what}: {}", answer.status);
    if !messages.is_empty() {
        text.push_str(": ");
        text.push_str(&messages);
    }
    if answer.status == StatusCode::UNAUTHORIZED || answer.status == StatusCode::FORBIDDEN {
        text.push_str(" (the BMC refused the login)");
    }
    text
}

/// Whether `target` is a path on the same service that a reset may be
/// posted to.
fn plausible_target(target: &str) -> bool {
    target.starts_with("/redfish/v1/")
        && target.len() <= 256
        && !target.bytes().any(|b| b.is_ascii_control() || b == b' ')
}

impl Redfish {
    /// One request under the deadline.
    async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, DriverError> {
        if let Some(e) = &self.tls_error {
            return Err(DriverError::Unreachable(e.clone()));
        }
        tokio::time::timeout(
            self.deadline,
            redfish_http::request(&self.endpoint, method, path, body),
        )
        .await
        .map_err(|_| DriverError::Deadline(self.deadline))?
        .map_err(DriverError::Unreachable)
    }

    /// `GET path` as JSON; an answer other than 2xx is refused with the
    /// BMC's messages.
    async fn get(&self, path: &str) -> Result<Value, DriverError> {
        let answer = self.request(Method::GET, path, None).await?;
        if !answer.status.is_success() {
            return Err(DriverError::Refused(refusal(
                &format!("GET {path}"),
                &answer,
            )));
        }
        serde_json::from_slice(&answer.body).map_err(|_| {
            DriverError::Unreachable(format!(
                "its answer to GET {path} is no JSON: is this a Redfish service?"
            ))
        })
    }

    /// The system `id`'s resource; a system the BMC lacks is refused
    /// naming it and those it has.
    async fn system(&self, id: &str) -> Result<Value, DriverError> {
        let path = format!("/redfish/v1/Systems/{id}");
        let answer = self.request(Method::GET, &path, None).await?;
        if answer.status == StatusCode::NOT_FOUND {
            let known = match self.get("/redfish/v1/Systems").await {
                Ok(collection) => {
                    let ids: Vec<String> = collection["Members"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|m| m["@odata.id"].as_str())
                        .filter_map(|p| p.trim_end_matches('/').rsplit('/').next())
                        .take(MAX_LISTED)
                        .map(shown)
                        .collect();
                    if ids.is_empty() {
                        "it lists no systems".to_owned()
                    } else {
                        format!("its systems: {}", ids.join(", "))
                    }
                }
                Err(_) => "its system list could not be read".to_owned(),
            };
            return Err(DriverError::Refused(format!(
                "the BMC has no system {} ({}); {known}",
                shown(id),
                refusal(&format!("GET {path}"), &answer)
            )));
        }
        if !answer.status.is_success() {
            return Err(DriverError::Refused(refusal(
                &format!("GET {path}"),
                &answer,
            )));
        }
        serde_json::from_slice(&answer.body).map_err(|_| {
            DriverError::Unreachable(format!(
                "its answer to GET {path} is no JSON: is this a Redfish service?"
            ))
        })
    }

    /// The system's `PowerState`, as the BMC spells it.
    fn power_state(system: &Value, id: &str) -> Result<String, DriverError> {
        system["PowerState"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| {
                DriverError::Unreachable(format!(
                    "system {} has no PowerState: is this a ComputerSystem?",
                    shown(id)
                ))
            })
    }
}

impl PowerDriver for Redfish {
    async fn state(&self, outlet: &str) -> Result<OutletState, DriverError> {
        let system = self.system(outlet).await?;
        Ok(outlet_state(&Redfish::power_state(&system, outlet)?))
    }

    async fn switch(&self, outlet: &str, on: bool) -> Result<String, DriverError> {
        let (reset, wanted) = if on {
            ("On", "On")
        } else {
            ("ForceOff", "Off")
        };
        let system = self.system(outlet).await?;
        let now = Redfish::power_state(&system, outlet)?;
        if now == wanted {
            return Ok(format!("PowerState {wanted} already: no reset sent"));
        }
        let action = &system["Actions"]["#ComputerSystem.Reset"];
        if let Some(allowed) = action["ResetType@Redfish.AllowableValues"].as_array()
            && !allowed.iter().any(|v| v.as_str() == Some(reset))
        {
            let allowed: Vec<String> = allowed
                .iter()
                .filter_map(Value::as_str)
                .take(MAX_LISTED)
                .map(shown)
                .collect();
            return Err(DriverError::Refused(format!(
                "system {} does not allow ResetType {reset}; it allows {}",
                shown(outlet),
                allowed.join(", ")
            )));
        }
        let target = action["target"]
            .as_str()
            .filter(|t| plausible_target(t))
            .map_or_else(
                || format!("/redfish/v1/Systems/{outlet}/Actions/ComputerSystem.Reset"),
                str::to_owned,
            );
        let answer = self
            .request(Method::POST, &target, Some(&json!({ "ResetType": reset })))
            .await?;
        if !answer.status.is_success() {
            return Err(DriverError::Refused(refusal(
                &format!("ComputerSystem.Reset {reset}"),
                &answer,
            )));
        }
        let state = if on {
            OutletState::On
        } else {
            OutletState::Off
        };
        settle(&format!("system {}", shown(outlet)), state, || {
            self.state(outlet)
        })
        .await?;
        Ok(format!(
            "ComputerSystem.Reset {reset}: {}, PowerState {wanted}",
            answer.status
        ))
    }
}

/// The TLS client config of an `https://` BMC (`ca_file`, or the
/// system's roots), or why there is none.
pub fn tls_for(ca_file: Option<&std::path::Path>) -> Result<Arc<rustls::ClientConfig>, String> {
    crate::tls::client::client_config(ca_file).map_err(|e| format!("TLS: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redfish_errors_are_bounded_escaped_and_deduplicated() {
        let long = "x".repeat(500);
        let body = json!({"error": {
            "code": "Base.1.0.GeneralError",
            "message": "A general error has occurred.\u{1b}[2J",
            "@Message.ExtendedInfo": [
                {"Message": long},
                {"Message": "A general error has occurred.\u{1b}[2J"},
                {"Message": "two"}, {"Message": "three"}, {"Message": "four"}
            ]
        }})
        .to_string();
        let m = redfish_messages(body.as_bytes());
        assert!(!m.contains('\u{1b}') && m.contains("\\u{1b}"), "{m}");
        assert!(m.contains("(500 bytes)") && m.len() < 300, "{m}");
        assert_eq!(m.matches("general error").count(), 1, "{m}");
        assert!(m.ends_with("\"two\""), "{m}");
        assert_eq!(redfish_messages(b"<html>"), "");
        assert!(plausible_target(
            "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
        ));
        assert!(!plausible_target("http://elsewhere/x"));
        assert!(!plausible_target("/redfish/v1/a b"));
    }
}
