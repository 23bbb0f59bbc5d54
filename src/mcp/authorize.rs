//! A tool call's arguments read for the access rules
//! ([`crate::access::rules`]): which port and connection it names, whether
//! it asks to take the write hold, what its `auto_reply` asks for; then
//! what it would send, for the command policy (`mcp/sends.rs`). The
//! arguments are read as the tools read them, so that no spelling slips
//! past the check.

use rmcp::model::CallToolRequestParams;
use serde_json::Value;

use super::session::Session;
use crate::access::Caller;
use crate::access::guard::NeedsApproval;
use crate::access::rules::{self, Allowed, Replies, ToolCall};
use crate::error::GateError;
use crate::gateway::Gateway;

/// A string argument, absent when missing, null or empty.
pub(super) fn str_arg<'a>(request: &'a CallToolRequestParams, key: &str) -> Option<&'a str> {
    request
        .arguments
        .as_ref()?
        .get(key)?
        .as_str()
        .filter(|s| !s.trim().is_empty())
}

/// What the call's `auto_reply` argument asks for.
fn replies(request: &CallToolRequestParams) -> Replies {
    match request.arguments.as_ref().and_then(|a| a.get("auto_reply")) {
        None | Some(Value::Null) => Replies::Default,
        Some(Value::Object(m)) if m.is_empty() => Replies::None,
        Some(Value::String(s)) if s.trim().is_empty() => Replies::Default,
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s.trim()) {
            Ok(Value::Object(m)) if m.is_empty() => Replies::None,
            _ => Replies::Some,
        },
        Some(_) => Replies::Some,
    }
}

/// Whether the call asks to take the write hold. The value is read as the
/// tool reads it (`true`, `"true"`…); one the tool would refuse counts as
/// asking, so that no spelling slips past the check.
fn asks_take_over(request: &CallToolRequestParams) -> bool {
    match request.arguments.as_ref().and_then(|a| a.get("take_over")) {
        None => false,
        Some(v) => super::args::opt_bool(v.clone()).map_or(true, |t| t.unwrap_or(false)),
    }
}

/// A line the call may send only once a person approves, and the port
/// it would go to.
pub struct Held {
    /// The port.
    pub port: crate::port::Port,
    /// The line and why.
    pub needs: NeedsApproval,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("port", &self.port.name())
            .field("needs", &self.needs)
            .finish()
    }
}

/// Checks that `caller` may make this call in `session`, before the tool
/// runs ([`rules::authorize`]); may adjust the arguments (a read caller's
/// `read_until_prompt` gets `auto_reply: {}`). The error is `forbidden`
/// (or, for what the caller's command policy does not let it send,
/// `denied`) and says what the caller may do instead. What its policy
/// sends only once a person approves comes back: the call waits for that
/// (`mcp/approval_wait.rs`) before the tool runs.
pub fn authorize(
    caller: &Caller,
    gateway: &Gateway,
    session: &Session,
    request: &mut CallToolRequestParams,
) -> Result<Vec<Held>, GateError> {
    let connection = match str_arg(request, "connection") {
        Some(c) => Some(c.to_owned()),
        // The current connection; none yet: the tool says so.
        None => session.get(None).ok().map(|c| c.name),
    };
    let call = ToolCall {
        tool: &request.name,
        port: str_arg(request, "port"),
        name: str_arg(request, "name"),
        connection,
        take_over: asks_take_over(request),
        replies: replies(request),
        session: session.actor().session,
    };
    let allowed = rules::authorize(caller, gateway, &call)?;
    // The command policy, on the connection the call acts on (none yet:
    // the tool reports it; `connect` sends nothing of the caller's).
    let mut held = Vec::new();
    if let Some(name) = &call.connection
        && let Ok(conn) = session.get(Some(name))
    {
        let needed = super::sends::check(caller, gateway, &conn, request, call.replies)
            .inspect_err(|e| {
                conn.gateway_port
                    .port
                    .record_refusal(&session.actor(), &e.message)
            })?;
        held.extend(needed.into_iter().map(|needs| Held {
            port: conn.gateway_port.port.clone(),
            needs,
        }));
    }
    if allowed == Allowed::WithoutReplies {
        request
            .arguments
            .get_or_insert_with(Default::default)
            .insert("auto_reply".to_owned(), Value::Object(Default::default()));
    }
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{TokenAccess, TokenConfig, TokenSecret};
    use crate::error::ErrorCode;
    use serde_json::json;

    fn token(access: TokenAccess, ports: &[&str]) -> Caller {
        Caller::from_token(&TokenConfig {
            name: "t".into(),
            secret_file: "/s".into(),
            secret: TokenSecret::new(b"x"),
            ports: ports.iter().map(|p| p.to_string()).collect(),
            access,
            use_credentials: false,
            power: false,
            policy: None,
            approve: false,
        })
    }

    fn call(tool: &str, args: Value) -> CallToolRequestParams {
        let mut p = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(m) = args {
            p = p.with_arguments(m);
        }
        p
    }

    fn gateway() -> Gateway {
        Gateway::start(
            crate::config::Config::default_with_builtins(),
            tokio_util::sync::CancellationToken::new(),
        )
    }

    #[tokio::test]
    async fn access_levels() {
        let gw = gateway();
        let session = Session::default();
        let read = token(TokenAccess::Read, &["*"]);
        let write = token(TokenAccess::Write, &["*"]);
        let mut req = call("send_text", json!({"text": "x", "connection": "sw1"}));
        let e = authorize(&read, &gw, &session, &mut req).unwrap_err();
        assert_eq!(e.code, ErrorCode::Forbidden);
        assert!(
            e.message.contains("needs write access") && e.message.contains("read_output"),
            "{e}"
        );
        authorize(&write, &gw, &session, &mut req).unwrap();
        let mut req = call("pulse_line", json!({"connection": "sw1"}));
        assert!(authorize(&write, &gw, &session, &mut req).is_err());
        let mut req = call("brand_new", json!({}));
        assert!(authorize(&write, &gw, &session, &mut req).is_err());
        authorize(&Caller::operator(), &gw, &session, &mut req).unwrap();
    }

    #[tokio::test]
    async fn read_until_prompt_without_replies_for_readers() {
        let gw = gateway();
        let session = Session::default();
        let read = token(TokenAccess::Read, &["*"]);
        let mut req = call("read_until_prompt", json!({"prompt": "#"}));
        authorize(&read, &gw, &session, &mut req).unwrap();
        assert_eq!(req.arguments.as_ref().unwrap()["auto_reply"], json!({}));
        for ok in [json!({}), json!("{}"), json!(" { } ")] {
            let mut req = call("read_until_prompt", json!({"auto_reply": ok}));
            authorize(&read, &gw, &session, &mut req).unwrap();
        }
        for no in [json!({"--More--": " "}), json!("{\"x\": \"y\"}"), json!(3)] {
            let mut req = call("read_until_prompt", json!({"auto_reply": no}));
            let e = authorize(&read, &gw, &session, &mut req).unwrap_err();
            assert!(e.message.contains("auto_reply"), "{e}");
        }
        // a writer keeps the preset's replies
        let mut req = call("read_until_prompt", json!({}));
        authorize(&token(TokenAccess::Write, &["*"]), &gw, &session, &mut req).unwrap();
        assert!(!req.arguments.unwrap_or_default().contains_key("auto_reply"));
    }

    #[tokio::test]
    async fn ports_and_adhoc_paths() {
        let gw = gateway();
        let session = Session::default();
        let core = token(TokenAccess::Admin, &["core-*"]);
        let mut req = call("connect", json!({"port": "lab-1"}));
        let e = authorize(&core, &gw, &session, &mut req).unwrap_err();
        assert!(e.message.contains("ports matching core-*"), "{e}");
        let mut req = call("status", json!({"connection": "lab-1"}));
        assert!(authorize(&core, &gw, &session, &mut req).is_err());
        // an ad-hoc path is named after its file (or `name`)
        let mut req = call("connect", json!({"port": "/dev/ttyUSB0"}));
        assert!(authorize(&core, &gw, &session, &mut req).is_err());
        let mut req = call("connect", json!({"port": "/dev/ttyUSB0", "name": "core-x"}));
        authorize(&core, &gw, &session, &mut req).unwrap();
        let writer = token(TokenAccess::Write, &["*"]);
        let e = authorize(&writer, &gw, &session, &mut req).unwrap_err();
        assert!(e.message.contains("needs admin access"), "{e}");
        // no connection yet: the tool itself reports it
        let mut req = call("status", json!({}));
        authorize(&core, &gw, &session, &mut req).unwrap();
    }

    #[test]
    fn take_over_is_read_as_the_tool_reads_it() {
        for (v, asks) in [
            (json!(true), true),
            (json!("true"), true),
            (json!(" True "), true),
            (json!(false), false),
            (json!("false"), false),
            (json!(null), false),
            (json!(""), false),
            (json!(3), true),
            (json!("yes"), true),
        ] {
            assert_eq!(
                asks_take_over(&call("connect", json!({"take_over": v.clone()}))),
                asks,
                "{v}"
            );
        }
        assert!(!asks_take_over(&call("connect", json!({}))));
    }
}
