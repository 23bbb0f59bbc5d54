//! The ports page's feed: `GET /web/ports/live`, a WebSocket that sends a
//! snapshot of every port the token may see, then a new one whenever a
//! port's state, its people or its write holder change (at once), or its
//! output grows (at most once per [`OUTPUT_REFRESH`], for the byte counts
//! and the last line). Nothing polls: each port's state, presence, log
//! head and requests for approval are watched, and the gateway says when
//! ports come and go.
//!
//! At a serving gateway the fleet's other sites' ports are shown too, as
//! `site/port`, as their sites announce them (resent every
//! [`FLEET_REFRESH`]: a site's announcement wakes nothing here).
//!
//! The requests waiting for a person's approval come with each port (the
//! oldest ones, as many as a console lists, with the port's last lines),
//! and the page decides them on this feed: a `decide` naming the port, the
//! request's id and the exact text shown, judged by the same rule as a
//! console's (`access::rules::may_decide_approval`) and decided by the
//! port's store, which checks the request, its text and four eyes.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::state::WebState;
use crate::access::Caller;
use crate::access::rules::{may_decide_approval, may_read_port};
use crate::access::standing::{Recheck, Standing};
use crate::audit::Actor;
use crate::clean::{CleanOptions, clean_output};
use crate::config::{DeviceMode, ModePrompts};
use crate::console::attachment::{MAX_LISTED_APPROVALS, SLOW_WATCHER};
use crate::error::{GateError, label, shown};
use crate::gateway::{Gateway, GatewayPort};
use crate::matcher::Prompt;
use crate::port::approvals::{MAX_TEXT_BYTES, PendingApproval};
use crate::port::tail::LAST_LINE_CHARS;
use crate::port::{Participant, Port, PortEvent, PortState};

/// How often a serving gateway's page is sent the fleet's ports again.
pub const FLEET_REFRESH: Duration = Duration::from_secs(1);
/// The shortest time between two snapshots sent because output arrived.
pub const OUTPUT_REFRESH: Duration = Duration::from_secs(1);
/// Bytes of a port's newest output searched for the lines shown beside
/// its requests for approval.
const SCREEN_TAIL_BYTES: u64 = 4096;
/// Lines of the port's output shown beside its requests for approval:
/// what the device said before the line a person is asked about.
const SCREEN_LINES: usize = 12;
/// The largest message the page may send: a decision with a text of
/// [`MAX_TEXT_BYTES`], every byte of it escaped in JSON.
const MAX_PAGE_MESSAGE_BYTES: usize = 2 * MAX_TEXT_BYTES + 1024;
/// The client name of the web view's decisions, in the audit trail.
const WEB_VIEW_CLIENT: &str = "web view";

/// One snapshot, as the page receives it.
#[derive(Serialize)]
struct Snapshot {
    r#type: &'static str,
    /// The signed-in token.
    token: String,
    /// Its access (`read`, `write`, `admin`).
    access: &'static str,
    /// What the byte counts count from.
    bytes_since: &'static str,
    ports: Vec<PortView>,
}

/// One port on the page.
#[derive(Serialize)]
struct PortView {
    name: String,
    device: String,
    preset: String,
    state: PortState,
    /// Why it is down, or what its loss was, when not open.
    reason: Option<String>,
    /// The CLI mode of the prompt the port's output ends with (`exec`,
    /// `privileged`, `config`, `recovery`…), by its preset's patterns;
    /// `null` when it ends with none (the page says "not reported").
    mode: Option<DeviceMode>,
    watchers: Vec<Participant>,
    holder: Option<HolderView>,
    reconnects: u64,
    last_line: String,
    bytes_read: u64,
    bytes_written: u64,
    last_loss: Option<PortEvent>,
    /// The oldest requests waiting for a person's approval (at most
    /// [`MAX_LISTED_APPROVALS`]).
    approvals: Vec<PendingApproval>,
    /// How many wait in all (the badge).
    approvals_waiting: usize,
    /// The port's last lines of output while requests wait (what the
    /// device said before them); empty otherwise.
    screen: Vec<String>,
}

/// What the page sends on the feed.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum PageMessage {
    /// Approve or deny a request the page was shown.
    Decide {
        /// The request's port.
        port: String,
        /// The request's id.
        id: u64,
        /// The exact text the person was shown.
        line: String,
        /// Approve (`true`) or deny.
        approve: bool,
    },
}

/// The write holder, and whether it is a person or an agent.
#[derive(Serialize)]
struct HolderView {
    who: String,
    since: String,
    /// `person` (at a console) or `agent` (an MCP session).
    kind: &'static str,
}

/// `GET /web/ports/live`: the WebSocket of the ports page. Its caller is
/// re-checked at every reload and when its browser login ends.
pub async fn live(
    State(state): State<WebState>,
    Extension(caller): Extension<Arc<Caller>>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let standing = state.standing(&caller, &headers);
    upgrade
        .max_message_size(MAX_PAGE_MESSAGE_BYTES)
        .on_upgrade(move |socket| feed(socket, state, standing))
}

/// What wakes a feed: `now` for a state or presence change, `output` for
/// new bytes. `Notify` keeps one permit, so wake-ups coalesce.
#[derive(Default)]
struct Wakes {
    now: Notify,
    output: Notify,
}

/// Sends snapshots until the browser leaves, is too slow, its caller is
/// revoked (a `bye` with the reason, then the close), or shutdown.
async fn feed(socket: WebSocket, state: WebState, mut standing: Standing) {
    let (mut sink, mut stream) = socket.split();
    let mut ports_rx = state.gateway.watch_ports();
    // The person behind this page, as their decisions are audited.
    let actor = Actor {
        session: crate::audit::next_session(),
        client: WEB_VIEW_CLIENT.to_owned(),
        token: standing.caller().name.clone(),
        person: Some(label(&standing.caller().name)),
        config_token: false,
    };
    loop {
        ports_rx.borrow_and_update();
        let caller = standing.caller().clone();
        let visible: Vec<Shown> = state
            .gateway
            .ports()
            .into_iter()
            .filter(|p| may_read_port(&caller, &state.gateway, p.port.name()))
            .map(Shown::new)
            .collect();
        let wakes = Arc::new(Wakes::default());
        let mut watchers = JoinSet::new();
        for shown in &visible {
            watchers.spawn(crate::task::boxed(watch_port(
                shown.gp.port.clone(),
                wakes.clone(),
            )));
        }
        let mut pending: Option<Instant> = None;
        let mut last_sent = Instant::now();
        if !send(&mut sink, &snapshot(&state.gateway, &caller, &visible)).await {
            return;
        }
        let serving = crate::console::fleet_feed::serving().is_some();
        let mut fleet_refresh = tokio::time::interval(FLEET_REFRESH);
        fleet_refresh.tick().await;
        loop {
            let due = pending.unwrap_or_else(Instant::now);
            tokio::select! {
                _ = fleet_refresh.tick(), if serving => {}
                changed = ports_rx.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    break;
                }
                () = wakes.now.notified() => {}
                () = wakes.output.notified() => {
                    if pending.is_none() {
                        pending = Some((last_sent + OUTPUT_REFRESH).max(Instant::now()));
                    }
                    continue;
                }
                () = tokio::time::sleep_until(due), if pending.is_some() => {}
                message = stream.next() => match message {
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return,
                    Some(Ok(Message::Text(text))) => {
                        // A reload or sign-out that came in the same turn
                        // applies first: a decision is judged by the
                        // rights now in force.
                        let rights = match standing.check_now() {
                            Ok(rights) => rights,
                            Err(reason) => {
                                tracing::info!(token = %crate::error::label(&caller.name), "ports feed closed: {reason}");
                                bye(&mut sink, &reason).await;
                                return;
                            }
                        };
                        let answer = page_message(&state, standing.caller(), &actor, &visible, &text);
                        if !send_json(&mut sink, &answer).await {
                            return;
                        }
                        if rights == Recheck::Changed {
                            break;
                        }
                        // The store's change wakes the next snapshot.
                        continue;
                    }
                    Some(Ok(_)) => continue,
                },
                () = state.cancel.cancelled() => {
                    let _ = sink.close().await;
                    return;
                }
                recheck = standing.changed() => match recheck {
                    Ok(Recheck::Same) => continue,
                    Ok(Recheck::Changed) => break,
                    Err(reason) => {
                        tracing::info!(token = %crate::error::label(&caller.name), "ports feed closed: {reason}");
                        bye(&mut sink, &reason).await;
                        return;
                    }
                },
            }
            pending = None;
            last_sent = Instant::now();
            if !send(&mut sink, &snapshot(&state.gateway, &caller, &visible)).await {
                return;
            }
        }
    }
}

/// Says why the feed ends, `{"type":"bye","reason":...}`, and closes it
/// (a browser that takes nothing for [`SLOW_WATCHER`] is left behind).
async fn bye(sink: &mut futures_util::stream::SplitSink<WebSocket, Message>, reason: &str) {
    let text = serde_json::json!({"type": "bye", "reason": reason}).to_string();
    let _ = tokio::time::timeout(SLOW_WATCHER, async {
        let _ = sink.send(Message::Text(text.into())).await;
        let _ = sink.close().await;
    })
    .await;
}

/// Handles one message of the page: a decision on a request for
/// approval, as `actor` with the rights of `caller` now; the answer to
/// send back (`decided`, or an `error` saying what to do).
fn page_message(
    state: &WebState,
    caller: &Caller,
    actor: &Actor,
    visible: &[Shown],
    text: &str,
) -> serde_json::Value {
    let decided = serde_json::from_str::<PageMessage>(text)
        .map_err(|e| {
            GateError::invalid(format!(
                "not a message of the ports page ({}): send {{\"type\":\"decide\",\"port\":...,\"id\":...,\"line\":...,\"approve\":true}}; nothing was done",
                label(&e.to_string())
            ))
        })
        .and_then(|PageMessage::Decide { port, id, line, approve }| {
            let found = visible
                .iter()
                .find(|s| s.gp.port.name() == port)
                .ok_or_else(|| {
                    GateError::invalid(format!(
                        "no port {} on this page; nothing was decided",
                        shown(&port)
                    ))
                })?;
            may_decide_approval(caller, &state.gateway, &port)?;
            let request = found.gp.port.approvals().decide(id, &line, actor, approve)?;
            tracing::info!(
                port = %port,
                request = id,
                "{} {} request {id} of {}: {}",
                actor.describe(),
                if approve { "approved" } else { "denied" },
                request.who,
                shown(&request.line)
            );
            Ok(serde_json::json!({
                "type": "decided", "port": port, "id": id, "line": request.line, "approved": approve,
            }))
        });
    decided.unwrap_or_else(
        |e| serde_json::json!({"type": "error", "code": e.code.as_str(), "message": e.message}),
    )
}

/// Sends one snapshot; false when the browser is gone or took longer than
/// [`SLOW_WATCHER`] to take it.
async fn send(
    sink: &mut futures_util::stream::SplitSink<WebSocket, Message>,
    snapshot: &Snapshot,
) -> bool {
    let Ok(value) = serde_json::to_value(snapshot) else {
        return false;
    };
    send_json(sink, &value).await
}

/// Sends one JSON message; false when the browser is gone or took longer
/// than [`SLOW_WATCHER`] to take it.
async fn send_json(
    sink: &mut futures_util::stream::SplitSink<WebSocket, Message>,
    message: &serde_json::Value,
) -> bool {
    let Ok(text) = serde_json::to_string(message) else {
        return false;
    };
    matches!(
        tokio::time::timeout(SLOW_WATCHER, sink.send(Message::Text(text.into()))).await,
        Ok(Ok(()))
    )
}

/// Wakes the feed when `port` changes, until the port closes.
async fn watch_port(port: Port, wakes: Arc<Wakes>) {
    let mut state = port.watch_state();
    let mut presence = port.watch_presence();
    let mut head = port.log().subscribe();
    let mut approvals = port.approvals().watch();
    loop {
        tokio::select! {
            changed = approvals.changed() => {
                if changed.is_err() {
                    return;
                }
                wakes.now.notify_one();
            }
            changed = state.changed() => {
                if changed.is_err() {
                    return;
                }
                wakes.now.notify_one();
            }
            changed = presence.changed() => {
                if changed.is_err() {
                    return;
                }
                wakes.now.notify_one();
            }
            changed = head.changed() => {
                if changed.is_err() {
                    return;
                }
                wakes.output.notify_one();
            }
        }
    }
}

/// A port on the page with what judges its mode, compiled once per set
/// of ports (a reload that changes a port's preset changes the set).
struct Shown {
    gp: GatewayPort,
    /// The preset's prompt, or `None` when it does not compile (checked
    /// at load, so never in practice).
    prompt: Option<Prompt>,
    modes: ModePrompts,
}

impl Shown {
    fn new(gp: GatewayPort) -> Shown {
        Shown {
            prompt: Prompt::config_regex(&gp.config.prompt).ok(),
            modes: ModePrompts::new(&gp.config.modes),
            gp,
        }
    }
}

fn snapshot(gateway: &Gateway, caller: &Caller, ports: &[Shown]) -> Snapshot {
    let mut views: Vec<PortView> = ports.iter().map(view).collect();
    if let Some(consoles) = crate::console::fleet_feed::serving() {
        views.extend(fleet_views(gateway, consoles, caller));
    }
    Snapshot {
        r#type: "ports",
        token: caller.name.clone(),
        access: caller.access.name(),
        bytes_since: "the daemon started",
        ports: views,
    }
}

/// The fleet's ports `caller` may read, as their sites announce them
/// (cleaned there): state, preset, people, holder, byte counts, how many
/// lines wait for approval and the last line of output; the rest (the
/// output, the requests themselves) is the site's, seen and decided on
/// the port's console page.
fn fleet_views(
    gateway: &Gateway,
    consoles: &crate::console::fleet_feed::RemoteConsoles,
    caller: &Caller,
) -> Vec<PortView> {
    let Some(directory) = &consoles.fleet.directory else {
        return Vec::new();
    };
    let mut views = Vec::new();
    for site in directory.sites() {
        let unreachable = site.unreachable();
        for p in site.ports.iter() {
            let name = format!("{}/{}", site.name, p.name);
            if !may_read_port(caller, gateway, &name) {
                continue;
            }
            views.push(PortView {
                name,
                device: format!("site {}", site.name),
                preset: p.preset.clone(),
                state: if unreachable { PortState::Down } else { p.state },
                reason: unreachable.then(|| {
                    format!(
                        "site {} unreachable since {} (its announcements stopped); the port keeps capturing at the site",
                        site.name,
                        site.since()
                    )
                }),
                mode: None,
                watchers: if p.people == 0 {
                    Vec::new()
                } else {
                    vec![Participant {
                        session: 0,
                        who: format!("{} at site {}", p.people, site.name),
                        since: String::new(),
                        spy: false,
                    }]
                },
                holder: p.writer.clone().map(|who| HolderView {
                    kind: if who.contains(" on console") || who.contains(" on ssh") {
                        "person"
                    } else {
                        "agent"
                    },
                    who,
                    since: String::new(),
                }),
                reconnects: 0,
                last_line: p.last_line.clone(),
                bytes_read: p.bytes_read,
                bytes_written: p.bytes_written,
                last_loss: None,
                // Decided on the port's console page, which reaches the
                // site's requests.
                approvals: Vec::new(),
                approvals_waiting: p.waiting as usize,
                screen: Vec::new(),
            });
        }
    }
    views
}

fn view(shown: &Shown) -> PortView {
    let gp = &shown.gp;
    let port = &gp.port;
    let log = port.log();
    let head = log.head();
    let state = port.state();
    let watchers = port.people();
    let holder = port.holder().map(|h| HolderView {
        kind: if watchers.iter().any(|p| p.session == h.session) {
            "person"
        } else {
            "agent"
        },
        who: h.who,
        since: h.since,
    });
    let last_loss = port.last_loss();
    let mut approvals = port.approvals().list();
    let approvals_waiting = approvals.len();
    approvals.truncate(MAX_LISTED_APPROVALS);
    let screen = if approvals.is_empty() {
        Vec::new()
    } else {
        last_lines(
            &log.copy_range(head.saturating_sub(SCREEN_TAIL_BYTES), head),
            SCREEN_LINES,
        )
    };
    let reason = match state {
        PortState::Open => None,
        PortState::Down => port.down_reason(),
        _ => last_loss.as_ref().map(|e| e.what.clone()),
    };
    PortView {
        name: port.name().to_owned(),
        device: gp.config.device.clone(),
        preset: gp.config.preset.clone(),
        state,
        reason,
        mode: shown
            .prompt
            .as_ref()
            .and_then(|prompt| crate::last_prompt::mode_at_end(prompt, &shown.modes, log)),
        watchers,
        holder,
        reconnects: port.reconnects(),
        last_line: port.last_line(),
        bytes_read: head,
        bytes_written: port.bytes_written(),
        last_loss,
        approvals,
        approvals_waiting,
        screen,
    }
}

/// The last `n` lines of `tail` as a terminal would leave them (see
/// [`crate::port::tail::last_line`]), blank ones at the end left out, each cut to
/// [`LAST_LINE_CHARS`].
fn last_lines(tail: &[u8], n: usize) -> Vec<String> {
    let text = clean_output(tail, &CleanOptions::default());
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |at| at + 1);
    lines[end.saturating_sub(n)..end]
        .iter()
        .map(|l| l.trim_end().chars().take(LAST_LINE_CHARS).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_beside_a_request_are_the_last_a_terminal_shows() {
        let tail = b"\x1b[1mone\x1b[0m\r\ntwo\r\n--More--\r        \rthree\r\nSW1#\r\n\r\n";
        assert_eq!(last_lines(tail, 3), ["two", "three", "SW1#"]);
        assert_eq!(last_lines(tail, 10), ["one", "two", "three", "SW1#"]);
        assert!(last_lines(b"", 3).is_empty());
        assert!(last_lines(b"\r\n\r\n", 3).is_empty());
    }
}
