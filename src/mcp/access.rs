//! Who may call which tool on which port.
//!
//! Every tool call passes [`authorize`] before the tool runs (the check
//! lives in `GateServer::call_tool`, not in the tools). A [`Caller`] is the
//! local operator over stdio (everything), anyone on a loopback HTTP server
//! with `auth = "none"` (everything), or a `[[tokens]]` entry: its `ports`
//! globs say which ports it reaches and its `access` what it may do there.
//!
//! The access a tool needs comes from one table, [`TOOLS`], by tool name:
//!
//! - `read`: tools that only look, or move only the session's own consume
//!   cursor — `list_ports`, `list_presets`, `connect`/`disconnect` (a
//!   session's own view of a configured port), `status`, `read_output`,
//!   `read_available`, `clear_buffer`, `get_transcript`, `screen`,
//!   `alerts` (a session's own watches only read the output), and
//!   `read_until_prompt` *without auto-replies* (for a read caller an absent
//!   `auto_reply` is taken as `{}`; a non-empty one is refused, because
//!   answering a trigger writes to the device).
//! - `write`: anything that sends bytes to a device — `send_text`,
//!   `send_hex`, `send_command`, `send_keys`, `expect`, the configuration
//!   tools (`set_mode`, `send_config`, `confirm_commit`, `rollback`,
//!   `save_config`), and `read_until_prompt` with auto-replies. Logging in
//!   with a port's stored credentials also needs the token's
//!   `use_credentials` (admin tokens always may; [`Caller::use_credentials`]).
//! - `admin`: ad-hoc device paths (`connect` to a path that is not a
//!   configured port, and any tool on such a port), line settings and line
//!   signals — `set_line_settings`, `send_break`, `set_lines`,
//!   `pulse_line`, `detect_baud` — and every tool not in the table, so a new
//!   tool is admin-only until it is classified here.
//!
//! Taking the write hold (`connect` with `take_over: true`) is decided
//! here too, by [`may_take_hold`]: on a free port, or one the caller's
//! session already holds, it is harmless; from a session of the caller's
//! own token it needs write access (an agent whose earlier session crashed
//! takes its port back); from another token's session it needs admin. A
//! read caller never takes the hold: it cannot write, so holding the port
//! would only lock the writers out. [`authorize`] refuses up front; the
//! `connect` tool asks again under the hold's lock, so the holder judged is
//! the one replaced.
//!
//! A caller is told only about ports it reaches: an error that lists ports
//! (an unknown port's) lists only those (the `connect` tool passes
//! [`Caller::may_use_port`] to the gateway), and the device path of a port
//! outside its globs is refused without naming the port.

use rmcp::model::CallToolRequestParams;
use serde_json::Value;

use super::session::Session;
use crate::config::{TokenAccess, TokenConfig};
use crate::error::{ErrorCode, GateError, shown};
use crate::gateway::Gateway;
use crate::port::Holder;

/// What a tool acts on, for the port check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// No port (`list_ports`, `list_presets`).
    Global,
    /// A session's connection: the `connection` argument, else the current
    /// one (and a `port` argument too, if the tool has one).
    Connection,
    /// The `port` argument of `connect`: a port name or a device path.
    Connect,
}

/// Every tool by name: the access it needs and what it acts on. Tools not
/// listed need [`TokenAccess::Admin`] and are checked as [`Scope::Connection`].
pub const TOOLS: &[(&str, TokenAccess, Scope)] = &[
    ("list_ports", TokenAccess::Read, Scope::Global),
    ("list_presets", TokenAccess::Read, Scope::Global),
    ("connect", TokenAccess::Read, Scope::Connect),
    ("disconnect", TokenAccess::Read, Scope::Connection),
    ("status", TokenAccess::Read, Scope::Connection),
    ("read_output", TokenAccess::Read, Scope::Connection),
    ("read_available", TokenAccess::Read, Scope::Connection),
    ("clear_buffer", TokenAccess::Read, Scope::Connection),
    ("get_transcript", TokenAccess::Read, Scope::Connection),
    ("screen", TokenAccess::Read, Scope::Connection),
    // Session watches only read the output; they go with the session.
    ("alerts", TokenAccess::Read, Scope::Connection),
    // Read only without auto-replies: see `read_until_prompt_replies`.
    ("read_until_prompt", TokenAccess::Read, Scope::Connection),
    ("send_text", TokenAccess::Write, Scope::Connection),
    ("send_hex", TokenAccess::Write, Scope::Connection),
    ("send_command", TokenAccess::Write, Scope::Connection),
    ("send_keys", TokenAccess::Write, Scope::Connection),
    ("expect", TokenAccess::Write, Scope::Connection),
    ("set_mode", TokenAccess::Write, Scope::Connection),
    ("send_config", TokenAccess::Write, Scope::Connection),
    ("confirm_commit", TokenAccess::Write, Scope::Connection),
    ("rollback", TokenAccess::Write, Scope::Connection),
    ("save_config", TokenAccess::Write, Scope::Connection),
    ("send_break", TokenAccess::Admin, Scope::Connection),
    ("set_line_settings", TokenAccess::Admin, Scope::Connection),
    ("set_lines", TokenAccess::Admin, Scope::Connection),
    ("pulse_line", TokenAccess::Admin, Scope::Connection),
    ("detect_baud", TokenAccess::Admin, Scope::Connection),
    ("send_file", TokenAccess::Admin, Scope::Connection),
    ("receive_file", TokenAccess::Admin, Scope::Connection),
];

/// The access a tool needs and what it acts on (unknown tools: admin).
pub fn classify(tool: &str) -> (TokenAccess, Scope) {
    TOOLS
        .iter()
        .find(|(name, _, _)| *name == tool)
        .map_or((TokenAccess::Admin, Scope::Connection), |&(_, a, s)| (a, s))
}

/// Whether a tool shows in `tools/list` for `access`.
pub fn tool_visible(tool: &str, access: TokenAccess) -> bool {
    classify(tool).0 <= access
}

/// Who makes a call.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The token's name, `local` over stdio, `anonymous` without auth.
    pub name: String,
    /// What the caller may do.
    pub access: TokenAccess,
    /// Globs of the port names the caller reaches; `None`: every port.
    ports: Option<Vec<glob::Pattern>>,
    /// The globs as written, for messages.
    port_globs: Vec<String>,
    /// May log in with the ports' stored credentials.
    pub use_credentials: bool,
}

impl Caller {
    /// The local operator (stdio): every tool on every port.
    pub fn operator() -> Caller {
        Caller::unrestricted("local")
    }

    /// A caller of a loopback HTTP server with `auth = "none"`: every tool
    /// on every port, like the local operator.
    pub fn anonymous() -> Caller {
        Caller::unrestricted("anonymous")
    }

    fn unrestricted(name: &str) -> Caller {
        Caller {
            name: name.to_owned(),
            access: TokenAccess::Admin,
            ports: None,
            port_globs: vec!["*".to_owned()],
            use_credentials: true,
        }
    }

    /// The holder of a `[[tokens]]` entry. Globs that do not compile (the
    /// config checks them) match nothing.
    pub fn from_token(token: &TokenConfig) -> Caller {
        Caller {
            name: token.name.clone(),
            access: token.access,
            ports: Some(
                token
                    .ports
                    .iter()
                    .filter_map(|g| glob::Pattern::new(g).ok())
                    .collect(),
            ),
            port_globs: token.ports.clone(),
            use_credentials: token.use_credentials || token.access == TokenAccess::Admin,
        }
    }

    /// Whether the caller reaches the port named `name`.
    pub fn may_use_port(&self, name: &str) -> bool {
        let options = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: false,
        };
        match &self.ports {
            None => true,
            Some(globs) => globs.iter().any(|g| g.matches_with(name, options)),
        }
    }

    fn who(&self) -> String {
        format!("token {:?}", self.name)
    }

    fn port_refused(&self, port: &str) -> GateError {
        GateError::new(
            ErrorCode::Forbidden,
            format!(
                "{} may use ports matching {}; {} is not one of them (list_ports shows the ports it may use)",
                self.who(),
                self.port_globs.join(", "),
                shown(port)
            ),
        )
    }

    /// The refusal of a device path that is a configured port's the
    /// caller does not reach: the port is not named.
    fn device_refused(&self, device: &str) -> GateError {
        GateError::new(
            ErrorCode::Forbidden,
            format!(
                "{} is the device of a configured port outside the ports {} may use ({}); connect to one of those by name (list_ports shows them)",
                shown(device),
                self.who(),
                self.port_globs.join(", ")
            ),
        )
    }

    fn access_refused(&self, what: &str, needs: TokenAccess) -> GateError {
        let may: Vec<&str> = TOOLS
            .iter()
            .filter(|(_, a, _)| *a <= self.access)
            .map(|(n, _, _)| *n)
            .collect();
        GateError::new(
            ErrorCode::Forbidden,
            format!(
                "{what} needs {} access, and {} has {} access: it may use {} on ports matching {}; ask the operator for a token with {} access",
                name_of(needs),
                self.who(),
                name_of(self.access),
                may.join(", "),
                self.port_globs.join(", "),
                name_of(needs),
            ),
        )
    }
}

fn name_of(access: TokenAccess) -> &'static str {
    match access {
        TokenAccess::Metrics => "metrics",
        TokenAccess::Read => "read",
        TokenAccess::Write => "write",
        TokenAccess::Admin => "admin",
    }
}

/// A string argument, absent when missing, null or empty.
fn str_arg<'a>(request: &'a CallToolRequestParams, key: &str) -> Option<&'a str> {
    request
        .arguments
        .as_ref()?
        .get(key)?
        .as_str()
        .filter(|s| !s.trim().is_empty())
}

/// What an `auto_reply` argument asks for.
#[derive(Debug, PartialEq, Eq)]
enum Replies {
    /// Absent (or null, or a blank string): the connection's preset's.
    Default,
    /// `{}` (or the string `"{}"`): none.
    None,
    /// Anything else: some trigger is answered.
    Some,
}

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

/// The port a `connect` targets: its name, and whether it is (or would
/// be) an ad-hoc port opened from a device path. The device path of a
/// port `caller` does not reach is, for a caller below admin, a device
/// path like any other (which only admin may open), and for an admin a
/// refusal; neither names the port.
fn connect_target(
    caller: &Caller,
    gateway: &Gateway,
    port: &str,
    name: Option<&str>,
) -> Result<(String, bool), GateError> {
    let ports = gateway.ports();
    if let Some(gp) = ports.iter().find(|gp| gp.port.name() == port) {
        return Ok((port.to_owned(), gp.adhoc));
    }
    match ports.iter().find(|gp| gp.config.device == port) {
        Some(gp) if caller.may_use_port(gp.port.name()) => {
            Ok((gp.port.name().to_owned(), gp.adhoc))
        }
        Some(_) if caller.access >= TokenAccess::Admin => Err(caller.device_refused(port)),
        _ if crate::gateway::is_adhoc_target(port) => {
            Ok((crate::gateway::adhoc_name(port, name), true))
        }
        _ => Ok((port.to_owned(), false)),
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

/// Whether `caller`, in session `session`, may take the write hold of
/// `port` from `holder` (`None`: the port is free). The one rule of
/// take-overs: harmless on a free port or one the session holds; from a
/// session of the caller's own token with write access; from another
/// token's with admin; never for a read caller.
pub fn may_take_hold(
    caller: &Caller,
    session: u64,
    port: &str,
    holder: Option<&Holder>,
) -> Result<(), GateError> {
    if caller.access < TokenAccess::Write {
        return Err(GateError::new(
            ErrorCode::Forbidden,
            format!(
                "take_over needs write access, and {} has read access: it cannot write, so holding {port} would only lock its writers out; connect without take_over to read it",
                caller.who()
            ),
        ));
    }
    match holder {
        None => Ok(()),
        Some(h) if h.session == session || h.token == caller.name => Ok(()),
        Some(_) if caller.access >= TokenAccess::Admin => Ok(()),
        Some(h) => Err(GateError::new(
            ErrorCode::Forbidden,
            format!(
                "{port} is held for writing by {}, a session of another token; taking the hold from another token needs admin access, and {} has write access. You can still read it; ask the holder to disconnect, or the operator to take over with an admin token",
                h.who,
                caller.who()
            ),
        )),
    }
}

/// Checks that `caller` may make this call, before the tool runs; may
/// adjust the arguments (a read caller's `read_until_prompt` gets
/// `auto_reply: {}`). The error is `forbidden` and says what the caller may
/// do instead.
pub fn authorize(
    caller: &Caller,
    gateway: &Gateway,
    session: &Session,
    request: &mut CallToolRequestParams,
) -> Result<(), GateError> {
    let tool = request.name.to_string();
    let (needs, scope) = classify(&tool);
    if needs > caller.access {
        let what = if TOOLS.iter().any(|(name, _, _)| *name == tool) {
            tool
        } else {
            format!("the tool {}", shown(&tool))
        };
        return Err(caller.access_refused(&what, needs));
    }
    if tool == "read_until_prompt" && caller.access < TokenAccess::Write {
        match replies(request) {
            Replies::None => {}
            Replies::Default => {
                request
                    .arguments
                    .get_or_insert_with(Default::default)
                    .insert("auto_reply".to_owned(), Value::Object(Default::default()));
            }
            Replies::Some => {
                return Err(caller.access_refused(
                    "read_until_prompt with auto_reply (answering a trigger writes to the device; pass auto_reply: {} or leave it out to wait without answering)",
                    TokenAccess::Write,
                ));
            }
        }
    }
    let mut ports: Vec<(String, bool)> = Vec::new();
    match scope {
        Scope::Global => {}
        Scope::Connect => {
            if let Some(port) = str_arg(request, "port") {
                ports.push(connect_target(
                    caller,
                    gateway,
                    port,
                    str_arg(request, "name"),
                )?);
            }
        }
        Scope::Connection => {
            let connection = match str_arg(request, "connection") {
                Some(c) => Some(c.to_owned()),
                // The current connection; none yet: the tool says so.
                None => session.get(None).ok().map(|c| c.name),
            };
            if let Some(name) = connection {
                let adhoc = gateway.port(&name).is_some_and(|gp| gp.adhoc);
                ports.push((name, adhoc));
            }
            if let Some(port) = str_arg(request, "port") {
                ports.push(connect_target(caller, gateway, port, None)?);
            }
        }
    }
    for (port, adhoc) in &ports {
        if !caller.may_use_port(port) {
            return Err(caller.port_refused(port));
        }
        if *adhoc && caller.access < TokenAccess::Admin {
            return Err(caller.access_refused(
                &format!(
                    "{tool} on the ad-hoc port {} (a device path, not a configured port)",
                    shown(port)
                ),
                TokenAccess::Admin,
            ));
        }
    }
    if scope == Scope::Connect && asks_take_over(request) {
        let port = ports.first().map_or("the port", |(p, _)| p.as_str());
        let holder = gateway.port(port).and_then(|gp| gp.port.holder());
        may_take_hold(caller, session.actor().session, port, holder.as_ref())?;
    }
    Ok(())
}

/// Keeps in a `list_ports` result only the ports `caller` reaches; the
/// machine's serial devices and `allow_adhoc` show only to admin callers
/// (only they may open device paths).
pub fn filter_list_ports(caller: &Caller, result: &mut Value) {
    if let Some(Value::Array(ports)) = result.get_mut("ports") {
        ports.retain(|p| {
            p.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| caller.may_use_port(n))
        });
    }
    if caller.access < TokenAccess::Admin {
        if let Some(devices) = result.get_mut("devices") {
            *devices = Value::Array(Vec::new());
        }
        if let Some(adhoc) = result.get_mut("allow_adhoc") {
            *adhoc = Value::Bool(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TokenSecret;
    use serde_json::json;

    fn token(access: TokenAccess, ports: &[&str]) -> Caller {
        Caller::from_token(&TokenConfig {
            name: "t".into(),
            secret_file: "/s".into(),
            secret: TokenSecret::new(b"x"),
            ports: ports.iter().map(|p| p.to_string()).collect(),
            access,
            use_credentials: false,
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

    #[test]
    fn table_is_ordered_and_unknown_tools_are_admin() {
        assert_eq!(classify("send_text").0, TokenAccess::Write);
        assert_eq!(classify("read_output").0, TokenAccess::Read);
        assert_eq!(classify("set_line_settings").0, TokenAccess::Admin);
        assert_eq!(
            classify("some_new_tool"),
            (TokenAccess::Admin, Scope::Connection)
        );
        assert!(tool_visible("status", TokenAccess::Read));
        assert!(!tool_visible("send_command", TokenAccess::Read));
        assert!(tool_visible("send_command", TokenAccess::Write));
        assert!(!tool_visible("unknown", TokenAccess::Write));
        let mut names: Vec<_> = TOOLS.iter().map(|t| t.0).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), TOOLS.len(), "a tool is listed twice");
    }

    #[test]
    fn globs_select_ports() {
        let c = token(TokenAccess::Read, &["core-*", "lab-rtr1"]);
        assert!(c.may_use_port("core-sw1"));
        assert!(c.may_use_port("lab-rtr1"));
        assert!(!c.may_use_port("lab-rtr2"));
        assert!(!c.may_use_port("edge-core-1"));
        assert!(Caller::operator().may_use_port("anything"));
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

    fn holder(session: u64, token: &str) -> Holder {
        Holder {
            session,
            who: format!("session {session} (client c, token {token})"),
            since: "2026-01-01T00:00:00Z".into(),
            token: token.into(),
        }
    }

    #[test]
    fn who_may_take_the_write_hold() {
        let named = |name: &str, access| {
            let mut c = token(access, &["*"]);
            c.name = name.into();
            c
        };
        let (ro, rw, adm) = (
            named("ro", TokenAccess::Read),
            named("rw", TokenAccess::Write),
            named("adm", TokenAccess::Admin),
        );
        let other = holder(1, "rw2");
        let own = holder(1, "rw");
        // Free, or held by the caller's own session: harmless for writers.
        for c in [&rw, &adm] {
            may_take_hold(c, 7, "sw1", None).unwrap();
            may_take_hold(c, 1, "sw1", Some(&other)).unwrap();
        }
        // Another session of the caller's token: write access is enough.
        may_take_hold(&rw, 7, "sw1", Some(&own)).unwrap();
        // Another token's session: admin only, and the holder is named.
        let e = may_take_hold(&rw, 7, "sw1", Some(&other)).unwrap_err();
        assert_eq!(e.code, ErrorCode::Forbidden);
        assert!(e.message.contains("admin access") && e.message.contains("token rw2"));
        may_take_hold(&adm, 7, "sw1", Some(&other)).unwrap();
        // A read caller never: not even on a free port.
        for h in [None, Some(&own), Some(&other)] {
            let e = may_take_hold(&ro, 7, "sw1", h).unwrap_err();
            assert!(e.message.contains("without take_over"), "{e}");
        }
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

    #[test]
    fn list_ports_is_filtered() {
        let mut v = json!({
            "ports": [{"name": "core-sw1"}, {"name": "lab-1"}],
            "devices": [{"path": "/dev/ttyUSB0"}],
            "allow_adhoc": true
        });
        filter_list_ports(&token(TokenAccess::Write, &["core-*"]), &mut v);
        assert_eq!(
            v,
            json!({"ports": [{"name": "core-sw1"}], "devices": [], "allow_adhoc": false})
        );
    }
}
