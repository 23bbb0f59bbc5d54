//! Which caller may do what: use which port, take a port's write hold,
//! call which tool.
//!
//! Every tool call passes [`authorize`] before the tool runs (MCP asks in
//! `GateServer::call_tool`, not in the tools). A [`Caller`]'s `ports`
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
//!   `power` (switching the outlets that feed a port's device) needs write
//!   access and the token's `power` right too (admin tokens always have
//!   it; [`Caller::power`]), asked by [`may_switch_power`]; under a
//!   command policy its off and cycle are judged by `access/guard.rs`.
//! - `admin`: ad-hoc device paths (`connect` to a path that is not a
//!   configured port, and any tool on such a port), line settings and line
//!   signals — `set_line_settings`, `send_break`, `set_lines`,
//!   `pulse_line`, `detect_baud` — and every tool not in the table, so a new
//!   tool is admin-only until it is classified here.
//!
//! A console attachment asks the same table, through one function per
//! action: [`may_watch`] (attach; an ad-hoc port needs admin),
//! [`may_type`] (the access of `send_keys`) and [`may_send_break`] (the
//! access of `send_break`), so the console and MCP cannot drift apart.
//!
//! Taking the write hold (`connect` with `take_over: true`, a person's
//! force at the console) is decided here too, by [`may_take_hold`]: on a
//! free port, or one the caller's session already holds, it is harmless;
//! from a session of the caller's own token it needs write access (an
//! agent whose earlier session crashed takes its port back); from another
//! token's session it needs admin. A read caller never takes the hold: it
//! cannot write, so holding the port would only lock the writers out.
//! [`authorize`] refuses up front; the `connect` tool asks again under the
//! hold's lock, so the holder judged is the one replaced.
//!
//! A caller is told only about ports it reaches: an error that lists ports
//! (an unknown port's) lists only those (the `connect` tool passes
//! [`Caller::may_use_port`] to the gateway), and the device path of a port
//! outside its globs is refused without naming the port.

use super::caller::Caller;
use crate::config::TokenAccess;
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
    // Read only without auto-replies: see `Replies`.
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
    // And the token's `power` right: see `may_switch_power`.
    ("power", TokenAccess::Write, Scope::Connection),
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

/// The refusal of a port outside the caller's globs.
fn port_refused(caller: &Caller, port: &str) -> GateError {
    GateError::new(
        ErrorCode::Forbidden,
        format!(
            "{} may use ports matching {}; {} is not one of them (list_ports shows the ports it may use)",
            caller.who(),
            caller.globs(),
            shown(port)
        ),
    )
}

/// The refusal of a device path that is a configured port's the caller
/// does not reach: the port is not named.
fn device_refused(caller: &Caller, device: &str) -> GateError {
    GateError::new(
        ErrorCode::Forbidden,
        format!(
            "{} is the device of a configured port outside the ports {} may use ({}); connect to one of those by name (list_ports shows them)",
            shown(device),
            caller.who(),
            caller.globs()
        ),
    )
}

/// The refusal of `what`, which needs `needs` access: says what the
/// caller may use instead.
fn access_refused(caller: &Caller, what: &str, needs: TokenAccess) -> GateError {
    let may: Vec<&str> = TOOLS
        .iter()
        .filter(|(_, a, _)| *a <= caller.access)
        .map(|(n, _, _)| *n)
        .collect();
    GateError::new(
        ErrorCode::Forbidden,
        format!(
            "{what} needs {} access, and {} has {} access: it may use {} on ports matching {}; ask the operator for a token with {} access",
            needs.name(),
            caller.who(),
            caller.access.name(),
            may.join(", "),
            caller.globs(),
            needs.name(),
        ),
    )
}

/// Checks that `caller` has the access `tool` needs by [`TOOLS`]; `what`
/// names the action in the refusal. The one answer MCP's [`authorize`]
/// and a console attachment's frames both take, so a person at the
/// console needs what an agent calling the tool needs.
fn may_use_tool(caller: &Caller, tool: &str, what: &str) -> Result<(), GateError> {
    let needs = classify(tool).0;
    if needs > caller.access {
        return Err(access_refused(caller, what, needs));
    }
    Ok(())
}

/// Checks that `caller` reaches `port` for `what`: its globs match, and
/// an ad-hoc port (opened from a device path) needs admin access.
fn may_reach(caller: &Caller, port: &str, adhoc: bool, what: &str) -> Result<(), GateError> {
    if !caller.may_use_port(port) {
        return Err(port_refused(caller, port));
    }
    if adhoc && caller.access < TokenAccess::Admin {
        return Err(access_refused(
            caller,
            &format!(
                "{what} on the ad-hoc port {} (a device path, not a configured port)",
                shown(port)
            ),
            TokenAccess::Admin,
        ));
    }
    Ok(())
}

/// Whether `port` is an ad-hoc port of `gateway`.
fn is_adhoc(gateway: &Gateway, port: &str) -> bool {
    gateway.port(port).is_some_and(|gp| gp.adhoc)
}

/// Checks that `caller` may watch `port` at a console (attach, spy, see
/// it in a list or on the ports page): it reaches the port, and an
/// ad-hoc one only with admin access, as over MCP.
pub fn may_watch(caller: &Caller, gateway: &Gateway, port: &str) -> Result<(), GateError> {
    may_reach(caller, port, is_adhoc(gateway, port), "attaching")
}

/// Whether `caller` may see and read `port` (an ad-hoc port, opened from
/// a device path, only with admin access): [`may_watch`] as a yes or no,
/// for lists.
pub fn may_read_port(caller: &Caller, gateway: &Gateway, port: &str) -> bool {
    may_watch(caller, gateway, port).is_ok()
}

/// Checks that `caller` may type into `port` at a console: the access of
/// `send_keys` (write), on a port it may watch.
pub fn may_type(caller: &Caller, gateway: &Gateway, port: &str) -> Result<(), GateError> {
    may_watch(caller, gateway, port)?;
    may_use_tool(
        caller,
        "send_keys",
        &format!("typing into {} (as send_keys)", shown(port)),
    )
}

/// Checks that `caller`, a person at a console or in the web view, may
/// decide a request for approval on `port`: what typing there needs
/// ([`may_type`]), and for a person of the SSH door the `approve` of
/// their `[[people]]` entry, so that every door a person decides through
/// keeps the same rule. Which request, its text and four eyes are the store's
/// (`port/approvals.rs`).
pub fn may_decide_approval(
    caller: &Caller,
    gateway: &Gateway,
    port: &str,
) -> Result<(), GateError> {
    may_type(caller, gateway, port).map_err(|e| {
        GateError::new(
            e.code,
            format!(
                "deciding a request for approval needs what typing does: {}",
                e.message
            ),
        )
    })?;
    if !caller.may_approve {
        return Err(GateError::new(
            ErrorCode::Forbidden,
            format!(
                "{} may not decide requests for approval: that needs approve = true on its [[tokens]] entry, or a person's [[people]] entry (admin tokens always may); ask someone who may",
                caller.who()
            ),
        ));
    }
    Ok(())
}

/// Checks that `caller` may send BREAK on `port`, at a console or over
/// MCP: the access of `send_break` in [`TOOLS`] (admin), on a port it
/// may watch.
pub fn may_send_break(caller: &Caller, gateway: &Gateway, port: &str) -> Result<(), GateError> {
    may_watch(caller, gateway, port)?;
    may_use_tool(
        caller,
        "send_break",
        &format!("a BREAK on {} (send_break)", shown(port)),
    )
}

/// Checks that `caller` may use the `power` tool: the access the table
/// gives it (write) and the `power` right of its token (admin always has
/// it), so that a writer cannot cut a device's power unless the operator
/// said it may.
pub fn may_switch_power(caller: &Caller) -> Result<(), GateError> {
    may_use_tool(caller, "power", "power")?;
    if !caller.power {
        return Err(GateError::new(
            ErrorCode::Forbidden,
            format!(
                "power needs the power right, and {} does not have it: ask the operator to set power = true on its [[tokens]] entry",
                caller.who()
            ),
        ));
    }
    Ok(())
}

/// Whether the machine's serial devices and ad-hoc connects show to
/// `caller` in `list_ports` (only admins may open device paths).
pub fn may_see_devices(caller: &Caller) -> bool {
    caller.access >= TokenAccess::Admin
}

/// What an `auto_reply` argument asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replies {
    /// Absent (or null, or a blank string): the connection's preset's.
    Default,
    /// `{}` (or the string `"{}"`): none.
    None,
    /// Anything else: some trigger is answered.
    Some,
}

/// A tool call as the rules judge it, read from the call's arguments by
/// the door that took it.
#[derive(Debug, Clone)]
pub struct ToolCall<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The `port` argument, when given and not blank.
    pub port: Option<&'a str>,
    /// `connect`'s `name` argument (an ad-hoc port's name).
    pub name: Option<&'a str>,
    /// The connection the call acts on: its `connection` argument, else
    /// the session's current one (`None`: no connection yet, which the
    /// tool itself reports).
    pub connection: Option<String>,
    /// Whether the call asks to take the write hold.
    pub take_over: bool,
    /// What its `auto_reply` argument asks for.
    pub replies: Replies,
    /// The calling session's id (whose hold is harmless to take).
    pub session: u64,
}

/// How an allowed call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// As asked.
    AsAsked,
    /// With `auto_reply: {}`: a read caller's `read_until_prompt` that
    /// named no replies waits without answering triggers.
    WithoutReplies,
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
        Some(_) if caller.access >= TokenAccess::Admin => Err(device_refused(caller, port)),
        _ if crate::gateway::is_adhoc_target(port) => {
            Ok((crate::gateway::adhoc_name(port, name), true))
        }
        _ => Ok((port.to_owned(), false)),
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

/// Checks that `caller` may make `call`, before the tool runs, and says
/// how it runs (a read caller's `read_until_prompt` without replies). The
/// error is `forbidden` and says what the caller may do instead.
pub fn authorize(
    caller: &Caller,
    gateway: &Gateway,
    call: &ToolCall<'_>,
) -> Result<Allowed, GateError> {
    let tool = call.tool;
    let scope = classify(tool).1;
    let what = if TOOLS.iter().any(|(name, _, _)| *name == tool) {
        tool.to_owned()
    } else {
        format!("the tool {}", shown(tool))
    };
    may_use_tool(caller, tool, &what)?;
    if tool == "power" {
        may_switch_power(caller)?;
    }
    let mut allowed = Allowed::AsAsked;
    if tool == "read_until_prompt" && caller.access < TokenAccess::Write {
        match call.replies {
            Replies::None => {}
            Replies::Default => allowed = Allowed::WithoutReplies,
            Replies::Some => {
                return Err(access_refused(
                    caller,
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
            if let Some(port) = call.port {
                ports.push(connect_target(caller, gateway, port, call.name)?);
            }
        }
        Scope::Connection => {
            if let Some(name) = &call.connection {
                ports.push((name.clone(), is_adhoc(gateway, name)));
            }
            if let Some(port) = call.port {
                ports.push(connect_target(caller, gateway, port, None)?);
            }
        }
    }
    for (port, adhoc) in &ports {
        may_reach(caller, port, *adhoc, tool)?;
    }
    if scope == Scope::Connect && call.take_over {
        let port = ports.first().map_or("the port", |(p, _)| p.as_str());
        let holder = gateway.port(port).and_then(|gp| gp.port.holder());
        may_take_hold(caller, call.session, port, holder.as_ref())?;
    }
    Ok(allowed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{TokenConfig, TokenSecret};

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

    fn holder(session: u64, token: &str) -> Holder {
        Holder {
            session,
            who: format!("session {session} (client c, token {token})"),
            since: "2026-01-01T00:00:00Z".into(),
            token: token.into(),
            config_token: false,
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
    fn devices_show_to_admins_only() {
        assert!(may_see_devices(&Caller::operator()));
        assert!(may_see_devices(&token(TokenAccess::Admin, &["*"])));
        assert!(!may_see_devices(&token(TokenAccess::Write, &["*"])));
    }
}
