//! A serving gateway forwarding a tool call on a port of another site
//! (`site/port`) through the fleet: the call is authorised here by the
//! access rules, as a local call is (a token's `ports` globs match
//! `site/port`), then sent whole (tool, arguments, who) to the site,
//! which runs it as a local call (`mcp/fleet_site.rs`). Every port tool
//! is forwarded alike; a transfer's file is the site's files_dir's, and
//! its result says so.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ReadResourceResult, ResourceContents,
};
use rmcp::service::RequestContext;
use serde_json::Value;

use super::authorize::str_arg;
use super::fleet_relay::{SiteRelay, SiteSessionOf};
use super::session::Session;
use crate::access::Caller;
use crate::access::rules::{self, Replies, Scope, ToolCall};
use crate::error::{ErrorCode, GateError, shown};
use crate::fleet::forwarded_policy::ForwardedPolicy;
use crate::fleet::link::Fleet;
use crate::fleet::subjects;
use crate::fleet::wire::{
    AskedInResult, CallAnswer, CallCancelled, ForwardedCall, SessionEnded, VERSION, plain_port_name,
};
use crate::gateway::Gateway;

/// Most characters of a site's refusal an agent is shown.
const MAX_REFUSAL: usize = 2048;

/// A port of another site a call names.
#[derive(Debug, PartialEq, Eq)]
pub struct RemotePort {
    /// The site.
    pub site: String,
    /// The port's name there.
    pub port: String,
}

impl RemotePort {
    /// `site/port`, as this gateway shows it.
    pub fn full(&self) -> String {
        format!("{}/{}", self.site, self.port)
    }
}

/// `site/port` read from a name; `None` for a local name or device path.
pub fn remote_port(name: &str) -> Option<RemotePort> {
    split(name)
}

/// `site/port` read from a name; `None` for a local name or device path
/// (the console doors read it too).
pub fn split(name: &str) -> Option<RemotePort> {
    if name.starts_with('/') || crate::remote::RemoteAddr::is_url(name) {
        return None;
    }
    let (site, port) = name.split_once('/')?;
    Some(RemotePort {
        site: site.to_owned(),
        port: port.to_owned(),
    })
}

/// The port of another site `request` acts on, if any: its `port` (for
/// `connect`), its `connection`, else the session's current connection
/// when that is one made through the fleet.
pub fn remote_target(session: &Session, request: &CallToolRequestParams) -> Option<RemotePort> {
    let scope = rules::classify(&request.name).1;
    match scope {
        Scope::Global => None,
        Scope::Connect => str_arg(request, "port").and_then(split),
        Scope::Connection => match str_arg(request, "connection") {
            Some(c) => split(c),
            None => session.current_remote().as_deref().and_then(split),
        },
    }
}

/// Forwards `request` on `target` for `caller`, whose session is
/// `session` (its client as the session names it): authorised here,
/// refused at once when the site is unreachable, else run at the site
/// within a deadline, or until the agent cancels it (`context`), which
/// cancels it at the site too. The call's progress and a question for the
/// client's user reach the agent's client (`context`'s peer).
pub async fn forward(
    fleet: Option<&Fleet>,
    gateway: &Gateway,
    caller: &Caller,
    session: &Session,
    request: CallToolRequestParams,
    target: RemotePort,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, GateError> {
    let cancel = &context.ct;
    let full = target.full();
    let tool = request.name.to_string();
    let call = ToolCall {
        tool: &tool,
        port: (rules::classify(&tool).1 == Scope::Connect).then_some(full.as_str()),
        name: None,
        connection: (rules::classify(&tool).1 == Scope::Connection).then(|| full.clone()),
        take_over: false,
        replies: Replies::Default,
        session: session.actor().session,
    };
    // The one access decision, on the name this gateway shows.
    rules::authorize(caller, gateway, &call)?;
    let fleet = reachable(fleet, &target)?;
    let policy = forwarded_policy(caller, gateway, &full)?;
    // A client without a session that shows forms is asked in the
    // call's result, at the site; its second round brings this back.
    let in_result = super::input_required::may_apply(context).then(|| AskedInResult {
        input_responses: request.input_responses.clone(),
        request_state: request.request_state.clone(),
    });
    let mut arguments = request.arguments.unwrap_or_default();
    for key in ["port", "connection"] {
        if arguments.get(key).and_then(Value::as_str) == Some(full.as_str()) {
            arguments.insert(key.to_owned(), Value::String(target.port.clone()));
        }
    }
    let deadline = super::fleet_site::forwarded_deadline(&tool, &arguments);
    // A connect's arguments are kept with the connection it makes.
    let sent_connect = (tool == "connect").then(|| arguments.clone());
    tracing::info!(
        "token {:?} calls {tool} on {full} through the fleet",
        caller.name
    );
    let relay = relay(fleet, session, &target.site, context, caller).await;
    let progress = context.meta.get_progress_token();
    let client_events = relay.as_ref().map(|r| r.events(progress.is_some()));
    let forwarded = |tool: &str, arguments, in_result| ForwardedCall {
        call: NEXT_CALL.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        client_events: client_events.clone(),
        asked_in_result: in_result,
        ..forwarded_call(fleet, caller, session, policy.clone(), tool, arguments)
    };
    // Kept to run the call again, should the site have lost the session's
    // connection it names.
    let connect = (tool != "connect")
        .then(|| session.remote_connect(&full))
        .flatten()
        .map(|connect| (connect, arguments.clone()));
    // The site keeps a session for this one from its first call: it is
    // told when this one ends.
    let number = session.actor().session;
    session.farewell_at(&target.site, || farewell(fleet, &target.site, number));
    // One forwarded call to the site, as this session and token.
    let site = target.site.as_str();
    let ask_site = |tool: &str, arguments, deadline, in_result: Option<AskedInResult>| {
        let allowed = in_result.is_some();
        let call = forwarded(tool, arguments, in_result);
        // Its progress reaches the agent under the agent's own token.
        let tracked = relay
            .as_ref()
            .zip(progress.clone())
            .map(|(relay, token)| relay.track(call.call, token));
        async move {
            let revoked = super::revoked::access_lost(gateway, caller, &call.tool);
            let answer = ask(fleet, site, &call, deadline, cancel, revoked, allowed).await;
            drop(tracked);
            answer
        }
    };
    let mut result = match ask_site(&tool, arguments, deadline, in_result.clone()).await? {
        CallToolResponse::Complete(result) => result,
        asking => return Ok(asking),
    };
    if let Some((mut connect, arguments)) = connect
        && lost_connection(&result)
    {
        // The site's gateway restarted (or let this session go): its new
        // session there has no connection, and the call did not run. The
        // connect this session made is made again (a take-over is not
        // repeated), then the call is sent once more.
        tracing::info!(
            "fleet: site {} no longer had this session's connection to {full} (its gateway restarted?); connecting it again",
            target.site
        );
        connect.remove("take_over");
        let deadline_connect = super::fleet_site::forwarded_deadline("connect", &connect);
        let connected = ask_site("connect", connect, deadline_connect, None).await?;
        if !matches!(&connected, CallToolResponse::Complete(r) if r.is_error != Some(true)) {
            return Ok(connected);
        }
        result = match ask_site(&tool, arguments, deadline, in_result).await? {
            CallToolResponse::Complete(result) => result,
            asking => return Ok(asking),
        };
    }
    if result.is_error != Some(true) {
        // The site names the port as it knows it; here it is site/port.
        if let Some(Value::Object(fields)) = result.structured_content.as_mut() {
            for key in ["connection", "port", "name"] {
                if fields.get(key).and_then(Value::as_str) == Some(target.port.as_str()) {
                    fields.insert(key.to_owned(), Value::String(full.clone()));
                }
            }
            // The whole output of a command cut at max_output is read
            // through this gateway, as a resource of site/port.
            if let Some(uri) = fields
                .get("resource")
                .and_then(Value::as_str)
                .and_then(|uri| super::resources::renamed(uri, &target.port, &full))
            {
                fields.insert("resource".to_owned(), Value::String(uri));
            }
        }
        // A transfer's file is in the site's files_dir, not this
        // gateway's: the result says whose.
        if super::fleet_site::TRANSFERS.contains(&tool.as_str())
            && let Some(Value::Object(fields)) = result.structured_content.as_mut()
        {
            fields.insert(
                "files_dir".to_owned(),
                Value::String(format!("site {}'s", target.site)),
            );
        }
        match &*tool {
            "connect" => session.add_remote(&full, sent_connect.unwrap_or_default()),
            "disconnect" => session.remove_remote(&full),
            _ => {}
        }
    }
    Ok(result.into())
}

/// How long reading a resource at a site may take.
const RESOURCE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// Reads `uri`, a resource of `target` (a command's output there), at its
/// site: in the site's session of this session (which remembers the
/// command, so its echo is cut as at the site), the URI naming the port
/// as the site does. The handler checked that `caller` reaches the port.
pub async fn read_resource(
    fleet: Option<&Fleet>,
    gateway: &Gateway,
    caller: &Caller,
    session: &Session,
    uri: &str,
    target: RemotePort,
    context: &RequestContext<RoleServer>,
) -> Result<ReadResourceResult, GateError> {
    let full = target.full();
    // Sent as with every call: the site keeps one session per policy.
    let policy = forwarded_policy(caller, gateway, &full)?;
    let fleet = reachable(fleet, &target)?;
    let at_site = super::resources::renamed(uri, &full, &target.port)
        .ok_or_else(|| GateError::invalid(format!("{} names no resource of {full}", shown(uri))))?;
    // The site's session may start with this read: it is told where its
    // client's messages go, as with a call.
    let client_events = relay(fleet, session, &target.site, context, caller)
        .await
        .map(|r| r.events(false));
    let call = ForwardedCall {
        resource: Some(at_site),
        client_events,
        ..forwarded_call(
            fleet,
            caller,
            session,
            policy,
            "read_resource",
            serde_json::Map::new(),
        )
    };
    let value = match fleet
        .forward(&target.site, &call, RESOURCE_DEADLINE)
        .await?
    {
        CallAnswer::Result(value) => value,
        CallAnswer::Refused(message) => return Err(coded(&message)),
    };
    let mut read: ReadResourceResult = serde_json::from_value(value).map_err(|e| {
        GateError::new(
            ErrorCode::PortUnavailable,
            format!("site {} answered with no resource: {e}", target.site),
        )
    })?;
    for contents in &mut read.contents {
        match contents {
            ResourceContents::TextResourceContents { uri: named, .. }
            | ResourceContents::BlobResourceContents { uri: named, .. } => {
                *named = uri.to_owned();
            }
            _ => {}
        }
    }
    Ok(read)
}

/// `tool` with `arguments` as this gateway sends it to a site for
/// `caller` in `session`, under `policy`: no resource, no call number.
fn forwarded_call(
    fleet: &Fleet,
    caller: &Caller,
    session: &Session,
    policy: Option<ForwardedPolicy>,
    tool: &str,
    arguments: serde_json::Map<String, Value>,
) -> ForwardedCall {
    let actor = session.actor();
    ForwardedCall {
        v: VERSION,
        gateway: fleet.gateway.clone(),
        session: actor.session,
        token: caller.name.clone(),
        access: caller.access,
        use_credentials: caller.use_credentials,
        client: actor.client,
        tool: tool.to_owned(),
        arguments,
        resource: None,
        policy,
        call: 0,
        client_events: None,
        asked_in_result: None,
    }
}

/// The relay of `site`'s messages for `session`'s client (started at the
/// session's first call there); `None`, logged, when it cannot listen:
/// the calls then go without their progress and questions.
async fn relay(
    fleet: &Fleet,
    session: &Session,
    site: &str,
    context: &RequestContext<RoleServer>,
    caller: &Caller,
) -> Option<Arc<SiteRelay>> {
    if let Some(relay) = session.relay(site) {
        return Some(relay);
    }
    let of = SiteSessionOf {
        gateway: fleet.gateway.clone(),
        session: session.actor().session,
        token: caller.name.clone(),
    };
    match SiteRelay::start(fleet, site, context.peer.clone(), of).await {
        Ok(relay) => Some(session.keep_relay(site, relay)),
        Err(e) => {
            tracing::warn!(
                "fleet: site {site}'s messages for an agent's client will not reach it: {e}"
            );
            None
        }
    }
}

/// The command policy `caller` is under here, as the site is sent it
/// (`fleet/forwarded_policy.rs`); `None` without one.
fn forwarded_policy(
    caller: &Caller,
    gateway: &Gateway,
    full: &str,
) -> Result<Option<ForwardedPolicy>, GateError> {
    ForwardedPolicy::named(
        caller.policy.as_deref(),
        &gateway.config(),
        &caller.who(),
        full,
    )
}

/// What tells `site` that this gateway's session `number` ended, once it
/// drops: the site ends that session's sessions there at once, with their
/// connections and write holds, instead of keeping them until idle.
/// Meanwhile the site is told that this gateway lives.
fn farewell(fleet: &Fleet, site: &str, number: u64) -> tokio_util::sync::DropGuard {
    let in_use = fleet.in_use.hold(site);
    let ended = tokio_util::sync::CancellationToken::new();
    let (client, subject) = (fleet.client().clone(), subjects::session_ends(site));
    let message = SessionEnded {
        v: VERSION,
        gateway: fleet.gateway.clone(),
        session: number,
    };
    let told = ended.clone();
    crate::task::spawn(async move {
        told.cancelled().await;
        let payload = serde_json::to_vec(&message).unwrap_or_default();
        if let Err(e) = client.publish(subject, payload.into()).await {
            tracing::warn!("fleet: a site was not told of a session's end: {e}");
        }
        drop(in_use);
    });
    ended.drop_guard()
}

/// The number of the next call forwarded (from 1), for its cancellation.
static NEXT_CALL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// How often a call waiting at a site looks whether the site is still
/// heard from.
const SITE_WATCH: std::time::Duration = std::time::Duration::from_secs(1);

/// The fleet `target` is reached through, once its name is a port of a
/// site and its site is heard from: refused at once, without a request,
/// when this gateway does not serve the fleet, the name is a path, or
/// the site is cut off.
fn reachable<'a>(fleet: Option<&'a Fleet>, target: &RemotePort) -> Result<&'a Fleet, GateError> {
    let full = target.full();
    let Some(fleet) = fleet else {
        return Err(GateError::new(
            ErrorCode::PortUnavailable,
            format!(
                "{} names a port of another site, and this gateway does not serve the fleet ([fleet] serve = true)",
                shown(&full)
            ),
        ));
    };
    if !plain_port_name(&target.port) {
        return Err(GateError::invalid(format!(
            "{} is no port of a site: write site/port with the port's name (device paths are opened at the site's own gateway)",
            shown(&full)
        )));
    }
    if let Some(directory) = &fleet.directory {
        directory.reachable_port(&target.site, &target.port)?;
    }
    Ok(fleet)
}

/// Sends `call` to `site` within `deadline`: the tool's result there (or,
/// for a call whose client may be asked in its result, `allowed`, the
/// questions for its user), or why the call did not run. A serving
/// gateway stops waiting once the site falls silent (a write may wait
/// long for a person's approval).
async fn ask(
    fleet: &Fleet,
    site: &str,
    call: &ForwardedCall,
    deadline: std::time::Duration,
    cancel: &tokio_util::sync::CancellationToken,
    revoked: impl std::future::Future<Output = ()>,
    allowed: bool,
) -> Result<CallToolResponse, GateError> {
    // The site cancels the call there too: a line waiting for approval is
    // withdrawn, never sent after the agent gave up or lost the right.
    let cancel_at_site = || async {
        let cancelled = CallCancelled {
            v: VERSION,
            gateway: fleet.gateway.clone(),
            call: call.call,
        };
        let payload = serde_json::to_vec(&cancelled).unwrap_or_default();
        if let Err(e) = fleet
            .client()
            .publish(subjects::call_cancels(site), payload.into())
            .await
        {
            tracing::warn!("fleet: site {site} was not told of a cancelled call: {e}");
        }
    };
    let silent = async {
        let Some(directory) = &fleet.directory else {
            return std::future::pending().await;
        };
        loop {
            tokio::time::sleep(SITE_WATCH).await;
            if let Some(since) = directory.unreachable_since(site) {
                return since;
            }
        }
    };
    let answer = tokio::select! {
        answer = fleet.forward(site, call, deadline) => answer?,
        () = cancel.cancelled() => {
            cancel_at_site().await;
            return Err(super::dialogue::cancelled());
        }
        () = revoked => {
            cancel_at_site().await;
            return Err(GateError::new(
                ErrorCode::Forbidden,
                format!(
                    "a reload of this gateway's config took from token {} the access {} needs while it ran at site {site}; it was cancelled there (a line waiting for approval is withdrawn, never sent)",
                    shown(&call.token),
                    call.tool
                ),
            ));
        }
        since = silent => {
            return Err(GateError::new(
                ErrorCode::PortUnavailable,
                format!(
                    "site {site} is unreachable since {since} (its gateway's announcements stopped) while {} ran there, which may or may not have run; read_output shows what the device did once list_ports shows the site back",
                    call.tool
                ),
            ));
        }
    };
    match answer {
        CallAnswer::Result(value) if super::fleet_input_required::asks(&value) => {
            super::fleet_input_required::passed_on(site, value, allowed)
                .map(CallToolResponse::InputRequired)
        }
        CallAnswer::Result(value) => serde_json::from_value::<CallToolResult>(value)
            .map(CallToolResponse::Complete)
            .map_err(|e| {
                GateError::new(
                    ErrorCode::PortUnavailable,
                    format!("site {site} answered with no tool result: {e}"),
                )
            }),
        CallAnswer::Refused(message) => Err(coded(&message)),
    }
}

/// Whether a site's result says its session has no such connection: the
/// site no longer knows one this gateway's session made there.
fn lost_connection(result: &CallToolResult) -> bool {
    let prefix = format!("{}:", ErrorCode::UnknownConnection.as_str());
    result.is_error == Some(true)
        && result
            .content
            .first()
            .and_then(|c| c.as_text())
            .is_some_and(|t| t.text.starts_with(&prefix))
}

/// A site's refusal as an error with the code its text starts with.
fn coded(message: &str) -> GateError {
    // A site's text, bounded and printable before an agent reads it.
    let message: String = message
        .chars()
        .take(MAX_REFUSAL)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    for code in ErrorCode::ALL {
        if let Some(rest) = message.strip_prefix(&format!("{}: ", code.as_str())) {
            return GateError::new(code, rest.to_owned());
        }
    }
    GateError::new(ErrorCode::PortUnavailable, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_port_names_are_told_from_local_ones_and_paths() {
        assert_eq!(
            split("dc1/sw1"),
            Some(RemotePort {
                site: "dc1".into(),
                port: "sw1".into()
            })
        );
        assert_eq!(split("sw1"), None);
        assert_eq!(split("/dev/ttyUSB0"), None);
        assert_eq!(split("telnet://host:2001/x"), None);
    }
}
