//! A person at a serving gateway attached to a port of another site
//! (`site/port`), through any console door (the socket, the WebSocket and
//! so the web view, SSH). Access is decided here first, on the
//! `site/port` name, by `access/rules.rs` as for a local port; then the
//! person's session runs at the site (`console/fleet_site.rs`: presence,
//! the port's one write hold, typing, BREAK, approvals, audit), whose
//! events come back here and are passed on bounded and cleaned. The
//! output comes from the port's one feed here (`console/fleet_feed.rs`),
//! at the person's own pace. When the site is cut off the person is told
//! (the port `down`, since when) and the session waits; when the site is
//! back it is opened again from where the person's output stopped, so
//! that what the port printed meanwhile follows.

use std::sync::Arc;

use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::connection::{Ended, Outgoing, Person};
use super::fleet_feed::{Feed, RemoteConsoles};
use super::fleet_wire::{ConsoleAnswer, ConsoleKeep, ConsoleOpen, InFrame, KEEP_EVERY};
use super::protocol::{
    ClientMessage, DataChunk, Frame, Hello, MAX_JSON_BYTES, Mode, Participant, PortSummary,
    ServerMessage,
};
use crate::access::Caller;
use crate::access::rules::may_watch;
use crate::access::standing::{Recheck, Standing};
use crate::config::TokenAccess;
use crate::error::{ErrorCode, GateError, shown};
use crate::fleet::forwarded_policy::ForwardedPolicy;
use crate::fleet::subjects;
use crate::fleet::wire::{VERSION, plain_port_name};
use crate::gateway::Gateway;
use crate::mcp::fleet_forward::RemotePort;
use crate::port::{Holder, PortState};

/// How long opening a session at the site, or keeping it, may take.
const ASK_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);
/// Longest text of a site's event passed on (a name, a reason).
const MAX_EVENT_TEXT: usize = 512;

/// The fleet's ports `caller` may watch, as `site/port`, for the port
/// list: as their sites announced them, `down` when a site is
/// unreachable.
pub(super) fn fleet_ports(
    gateway: &Gateway,
    consoles: &RemoteConsoles,
    caller: &Caller,
) -> Vec<PortSummary> {
    let Some(directory) = &consoles.fleet.directory else {
        return Vec::new();
    };
    let mut ports = Vec::new();
    for site in directory.sites() {
        let unreachable = site.unreachable();
        for p in site.ports.iter() {
            let name = format!("{}/{}", site.name, p.name);
            if may_watch(caller, gateway, &name).is_err() {
                continue;
            }
            let watchers = if p.people == 0 {
                Vec::new()
            } else {
                vec![Participant {
                    session: 0,
                    who: format!("{} at site {}", people(p.people), site.name),
                    since: "-".to_owned(),
                    spy: false,
                }]
            };
            ports.push(PortSummary {
                name,
                state: if unreachable {
                    PortState::Down
                } else {
                    p.state
                },
                watchers,
                holder: p.writer.clone().map(|who| Holder {
                    session: 0,
                    who,
                    since: if unreachable {
                        format!("?, site unreachable since {}", site.since())
                    } else {
                        "-".to_owned()
                    },
                    token: String::new(),
                    config_token: false,
                }),
            });
        }
    }
    ports
}

fn people(n: u32) -> String {
    if n == 1 {
        "1 person".to_owned()
    } else {
        format!("{n} people")
    }
}

/// A person's session at the site: its id, and its events.
struct SiteSession {
    id: String,
    events: async_nats::Subscriber,
}

/// What this attachment knows.
struct Remote<'a> {
    consoles: &'a RemoteConsoles,
    caller: Caller,
    person: String,
    target: RemotePort,
    full: String,
    out: &'a Outgoing,
    feed: Arc<Feed>,
    /// The hello the site is sent (port named as there).
    hello: Hello,
    /// The person's command policy, as the site is sent it.
    policy: Option<ForwardedPolicy>,
    /// Where the output sent to the person ends, once attached.
    cursor: Option<u64>,
    /// The site's log the cursor is in.
    log: String,
    /// The session number the person was told, and the one at the site
    /// now (another after the site's gateway restarted).
    told_session: Option<u64>,
    site_session: u64,
    /// Since when the site is unreachable, while it is.
    down_since: Option<String>,
}

/// Attaches `person` to `target` through the fleet; see the module.
#[allow(clippy::too_many_arguments)]
pub(super) async fn attach(
    gateway: &Gateway,
    consoles: &RemoteConsoles,
    person: Person,
    target: RemotePort,
    hello: Hello,
    incoming: &mut mpsc::Receiver<Frame>,
    out: &Outgoing,
    shutdown: &CancellationToken,
) -> Result<(), Ended> {
    let Person { mut standing, name } = person;
    let caller = standing.caller().clone();
    let full = target.full();
    let refuse = async |e: GateError| -> Result<(), Ended> {
        out.error(&e).await?;
        Err(Ended(e.message))
    };
    // The one access decision, on the name this gateway shows.
    if !caller.may_use_port(&full) || !plain_port_name(&target.port) {
        return refuse(GateError::new(
            ErrorCode::InvalidArgument,
            format!(
                "no port {} that this caller may use; `serialgate console --list` shows them",
                shown(&full)
            ),
        ))
        .await;
    }
    if let Err(e) = may_watch(&caller, gateway, &full) {
        return refuse(e).await;
    }
    let Some(directory) = &consoles.fleet.directory else {
        return refuse(GateError::new(
            ErrorCode::PortUnavailable,
            format!(
                "{} names a port of another site, and this gateway does not serve the fleet",
                shown(&full)
            ),
        ))
        .await;
    };
    if let Err(e) = directory.reachable_port(&target.site, &target.port) {
        return refuse(e).await;
    }
    // What the person types is judged at the site, under their own
    // policy as this gateway defines it and the port's own.
    let policy = match ForwardedPolicy::named(
        caller.policy.as_deref(),
        &gateway.config(),
        &caller.who(),
        &full,
    ) {
        Ok(p) => p,
        Err(e) => return refuse(e).await,
    };
    let site_hello = Hello {
        port: target.port.clone(),
        ..hello
    };
    let feed = consoles.feed(&target.site, &target.port);
    let mut remote = Remote {
        consoles,
        caller,
        person: name,
        full,
        out,
        feed,
        hello: site_hello,
        policy,
        cursor: None,
        log: String::new(),
        told_session: None,
        site_session: 0,
        down_since: None,
        target,
    };
    let mut session = match remote.open().await {
        Ok(s) => s,
        Err(e) => return refuse(e).await,
    };
    let outcome = remote
        .run(&mut session, incoming, shutdown, &mut standing, gateway)
        .await;
    remote.close(&session).await;
    outcome
}

impl Remote<'_> {
    /// Opens the person's session at the site: listens for its events,
    /// then asks.
    async fn open(&self) -> Result<SiteSession, GateError> {
        let fleet = &self.consoles.fleet;
        let site = &self.target.site;
        let id = format!(
            "{:016x}",
            getrandom::u64().unwrap_or_else(|_| rand_fallback())
        );
        let events = fleet
            .client()
            .subscribe(subjects::console_out(site, &id))
            .await
            .map_err(|e| GateError::new(ErrorCode::PortUnavailable, format!("the fleet: {e}")))?;
        let mut hello = self.hello.clone();
        if let Some(cursor) = self.cursor {
            hello.from = Some(cursor);
            hello.log = Some(self.log.clone());
        }
        let open = ConsoleOpen {
            v: VERSION,
            id: id.clone(),
            gateway: fleet.gateway.clone(),
            token: self.caller.name.clone(),
            access: self.caller.access,
            person: self.person.clone(),
            approve: self.caller.may_approve,
            policy: self.policy.clone(),
            hello,
        };
        match self.ask("open", &open).await? {
            ConsoleAnswer::Ok => Ok(SiteSession { id, events }),
            ConsoleAnswer::Unknown => Err(GateError::new(
                ErrorCode::PortUnavailable,
                format!("site {site} did not open the console"),
            )),
            ConsoleAnswer::Refused(why) => Err(site_refusal(site, &why)),
        }
    }

    /// Asks the site `what` (`open`, `keep`) within [`ASK_DEADLINE`].
    async fn ask(
        &self,
        what: &str,
        body: &impl serde::Serialize,
    ) -> Result<ConsoleAnswer, GateError> {
        let site = &self.target.site;
        let answer = self
            .consoles
            .fleet
            .ask_console(
                format!("{}.{what}", subjects::consoles(site)),
                body,
                ASK_DEADLINE,
                &format!("site {site}'s gateway did not answer through the fleet"),
            )
            .await?;
        serde_json::from_slice(&answer.payload[..answer.payload.len().min(4096)]).map_err(|e| {
            GateError::new(
                ErrorCode::PortUnavailable,
                format!("site {site} answered with something that is no answer: {e}"),
            )
        })
    }

    /// Sends a frame of the person to their session at the site.
    async fn send(&self, session: &SiteSession, frame: InFrame) {
        let subject = format!(
            "{}.in.{}",
            subjects::consoles(&self.target.site),
            session.id
        );
        if let Err(e) = self
            .consoles
            .fleet
            .client()
            .publish(subject, frame.encode().into())
            .await
        {
            tracing::debug!("fleet: a console frame was not sent: {e}");
        }
    }

    /// Ends the person's session at the site (which also ends it by
    /// itself when it is no longer kept).
    async fn close(&self, session: &SiteSession) {
        self.send(session, InFrame::Close).await;
    }

    async fn run(
        &mut self,
        session: &mut SiteSession,
        incoming: &mut mpsc::Receiver<Frame>,
        shutdown: &CancellationToken,
        standing: &mut Standing,
        gateway: &Gateway,
    ) -> Result<(), Ended> {
        let mut reach = self.feed.watch();
        let mut keep = tokio::time::interval(KEEP_EVERY);
        keep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        keep.tick().await;
        loop {
            tokio::select! {
                event = session.events.next() => {
                    let Some(event) = event else {
                        return Err(Ended(format!("the fleet stopped carrying {}'s console", self.full)));
                    };
                    self.event(&event.payload).await?;
                }
                changed = reach.changed() => {
                    if changed.is_err() {
                        return Err(Ended("the feed ended".to_owned()));
                    }
                    let head = reach.borrow_and_update().clone();
                    if head.log == self.log {
                        self.send_output(head.head).await?;
                    }
                }
                frame = incoming.recv() => {
                    let Some(frame) = frame else { return Ok(()) };
                    // A reload that came in the same turn applies first:
                    // typing never goes out under rights it took away.
                    self.recheck(standing.check_now(), standing, gateway)?;
                    self.typed_or_asked(session, frame).await?;
                }
                _ = keep.tick() => self.keep(session).await?,
                recheck = standing.changed() => self.recheck(recheck, standing, gateway)?,
                () = shutdown.cancelled() => {
                    return Err(Ended("the gateway is shutting down".to_owned()));
                }
            }
        }
    }

    /// Acts on a re-check of the caller: `Err` ends the console with its
    /// reason, and so does a port it may no longer watch or, for a console
    /// that wrote, the loss of write access.
    fn recheck(
        &mut self,
        recheck: Result<Recheck, String>,
        standing: &Standing,
        gateway: &Gateway,
    ) -> Result<(), Ended> {
        if recheck.map_err(Ended)? == Recheck::Same {
            return Ok(());
        }
        self.caller = standing.caller().clone();
        if let Err(e) = may_watch(&self.caller, gateway, &self.full) {
            return Err(Ended(format!("{}; this console is closed", e.message)));
        }
        if self.caller.access < TokenAccess::Write && self.hello.mode != Mode::Spy {
            return Err(Ended(format!(
                "{} lost write access; this console is closed: attach again to watch {}",
                self.caller.who(),
                self.full
            )));
        }
        Ok(())
    }

    /// A frame of the person: to their session at the site, or refused
    /// while the site is unreachable.
    async fn typed_or_asked(&self, session: &SiteSession, frame: Frame) -> Result<(), Ended> {
        if let Some(since) = &self.down_since {
            return self.out.error(&self.unreachable(since)).await;
        }
        match frame {
            Frame::Data(bytes) => self.send(session, InFrame::Data(bytes)).await,
            Frame::Json(text) => {
                if let Ok(ClientMessage::Hello(_) | ClientMessage::List) =
                    serde_json::from_str::<ClientMessage>(&text)
                {
                    return self
                        .out
                        .error(&GateError::invalid(
                            "already attached: hello and list come first on a new connection",
                        ))
                        .await;
                }
                self.send(session, InFrame::Json(text)).await
            }
        }
        Ok(())
    }

    /// Keeps the session at the site, tells the person when the site is
    /// cut off, and opens the session again when it is back.
    async fn keep(&mut self, session: &mut SiteSession) -> Result<(), Ended> {
        let directory = self.consoles.fleet.directory.as_ref();
        let reachable = directory.map(|d| d.reachable_port(&self.target.site, &self.target.port));
        if let Some(Err(e)) = reachable {
            if self.down_since.is_none() {
                let since = directory
                    .and_then(|d| d.sites().into_iter().find(|s| s.name == self.target.site))
                    .map_or_else(|| "now".to_owned(), |s| s.since());
                tracing::info!("console on {}: {}", self.full, e.message);
                self.out
                    .send_message(&ServerMessage::State {
                        state: PortState::Down,
                    })
                    .await?;
                self.out.error(&self.unreachable(&since)).await?;
                self.down_since = Some(since);
            }
            return Ok(());
        }
        if self.down_since.is_some() {
            return self.reopen(session).await;
        }
        match self
            .ask(
                "keep",
                &ConsoleKeep {
                    id: session.id.clone(),
                },
            )
            .await
        {
            Ok(ConsoleAnswer::Unknown) => self.reopen(session).await,
            Ok(_) => Ok(()),
            // The directory tells a site cut off.
            Err(_) => Ok(()),
        }
    }

    /// Opens the session at the site again (it was cut off, or its
    /// gateway restarted), from where the person's output stopped.
    async fn reopen(&mut self, session: &mut SiteSession) -> Result<(), Ended> {
        // The session before, if the site still runs it, lets its hold
        // and presence go now rather than when it is no longer kept.
        self.close(session).await;
        match self.open().await {
            Ok(new) => {
                tracing::info!(
                    "console on {}: the site is back; session opened again",
                    self.full
                );
                *session = new;
                self.down_since = None;
                let _ = self.feed.refresh().await;
                Ok(())
            }
            Err(e) => {
                tracing::debug!(
                    "console on {}: not opened again yet: {}",
                    self.full,
                    e.message
                );
                Ok(())
            }
        }
    }

    fn unreachable(&self, since: &str) -> GateError {
        GateError::new(
            ErrorCode::PortUnavailable,
            format!(
                "site {} is unreachable since {since}: {} keeps capturing there; this console waits, and shows what it printed meanwhile when the site is back",
                self.target.site, self.full
            ),
        )
    }

    /// An event of the site's session: passed on bounded and cleaned, the
    /// output that goes with it sent.
    async fn event(&mut self, payload: &[u8]) -> Result<(), Ended> {
        let Some(message) = self.cleaned(payload) else {
            tracing::warn!(
                "fleet: dropped a console message of site {} that is none of the protocol's (or over {MAX_JSON_BYTES} bytes)",
                self.target.site
            );
            return Ok(());
        };
        match message {
            ServerMessage::Attached {
                session,
                you,
                writing,
                start,
                head,
                log,
                state,
                holder,
                watchers,
                ..
            } => {
                self.site_session = session;
                let first = self.cursor.is_none();
                if first || log != self.log {
                    self.cursor = Some(start);
                    self.log = log.clone();
                }
                if first {
                    self.told_session = Some(session);
                    self.out
                        .send_message(&ServerMessage::Attached {
                            port: self.full.clone(),
                            session,
                            you,
                            writing,
                            start,
                            head,
                            log,
                            state,
                            holder,
                            watchers,
                        })
                        .await?;
                } else {
                    // Back: the port's state, who holds it now; what it
                    // printed meanwhile follows.
                    let holder = holder.map(|h| self.as_told(h));
                    self.out
                        .send_message(&ServerMessage::State { state })
                        .await?;
                    self.out
                        .send_message(&ServerMessage::Holder {
                            what: format!(
                                "site {} is back; {}",
                                self.target.site,
                                holder.as_ref().map_or_else(
                                    || "nobody holds the write".to_owned(),
                                    |h| format!("{} holds the write", h.who)
                                )
                            ),
                            holder,
                        })
                        .await?;
                }
                self.send_output(head).await
            }
            ServerMessage::Replay { start, end } => {
                // The output up to the replay's end first, so that live
                // output resumes after it.
                self.send_output(end).await?;
                self.out
                    .send_message(&ServerMessage::Replay { start, end })
                    .await?;
                self.send_range(start, end).await.map(|_| ())
            }
            ServerMessage::Bye { reason } => {
                Err(Ended(format!("site {}: {reason}", self.target.site)))
            }
            other => self.out.send_message(&other).await,
        }
    }

    /// A site's holder with the session number the person was told.
    fn as_told(&self, mut holder: Holder) -> Holder {
        if Some(holder.session) == Some(self.site_session)
            && let Some(told) = self.told_session
        {
            holder.session = told;
        }
        holder
    }

    /// A site's message read bounded, as one of the protocol's, with its
    /// texts cleaned and this person's session number as first told.
    fn cleaned(&self, payload: &[u8]) -> Option<ServerMessage> {
        if payload.len() > MAX_JSON_BYTES {
            return None;
        }
        let mut value: Value = serde_json::from_slice(payload).ok()?;
        let told = self.told_session.unwrap_or(self.site_session);
        clean_value(&mut value, self.site_session, told);
        let message: ServerMessage = serde_json::from_value(value).ok()?;
        match message {
            ServerMessage::Ports { .. } => None,
            other => Some(other),
        }
    }

    /// Sends the output from the cursor to `head`.
    async fn send_output(&mut self, head: u64) -> Result<(), Ended> {
        let Some(cursor) = self.cursor else {
            return Ok(());
        };
        if self.down_since.is_some() {
            return Ok(());
        }
        self.cursor = Some(self.send_range(cursor, head).await?);
        Ok(())
    }

    /// Sends `[from, to)` of the output, saying what retention dropped;
    /// returns where what was sent ends (short of `to` when the site does
    /// not answer now: the next notice or keep goes on).
    async fn send_range(&self, from: u64, to: u64) -> Result<u64, Ended> {
        let mut at = from;
        while at < to {
            let slice = match self.feed.read(&self.log, at, to).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!("console on {}: {}", self.full, e.message);
                    return Ok(at);
                }
            };
            if slice.start > at {
                self.out
                    .send_message(&ServerMessage::Truncated {
                        from: at,
                        to: slice.start,
                    })
                    .await?;
            }
            if slice.bytes.is_empty() {
                return Ok(slice.start.max(at));
            }
            let chunk = DataChunk {
                offset: slice.start,
                bytes: slice.bytes,
            };
            at = chunk.end();
            self.out.send(Frame::Data(chunk.encode())).await?;
        }
        Ok(at)
    }
}

/// Cleans a site's message in place: every text a person reads is one
/// line of printable characters, at most [`MAX_EVENT_TEXT`] (a waiting
/// line's own text, `line`, stays as it is: a decision is for that exact
/// text, and clients show it escaped); `session` numbers of the site's
/// session now read as the one the person was told.
fn clean_value(value: &mut Value, site_session: u64, told: u64) {
    match value {
        Value::Object(fields) => {
            for (key, field) in fields.iter_mut() {
                match (key.as_str(), &mut *field) {
                    ("line", _) => {}
                    ("session", Value::Number(n)) if n.as_u64() == Some(site_session) => {
                        *field = Value::from(told);
                    }
                    (_, Value::String(text)) => {
                        *text = text
                            .chars()
                            .take(MAX_EVENT_TEXT)
                            .map(|c| if c.is_control() { '?' } else { c })
                            .collect();
                    }
                    _ => clean_value(field, site_session, told),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                clean_value(item, site_session, told);
            }
        }
        _ => {}
    }
}

/// A number when the system's random source fails (never in practice).
fn rand_fallback() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A site's refusal as an error with the code its text starts with.
fn site_refusal(site: &str, message: &str) -> GateError {
    let message: String = message
        .chars()
        .take(2048)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    for code in ErrorCode::ALL {
        if let Some(rest) = message.strip_prefix(&format!("{}: ", code.as_str())) {
            return GateError::new(code, rest.to_owned());
        }
    }
    GateError::new(
        ErrorCode::PortUnavailable,
        format!("site {site} refused: {message}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_sites_event_texts_are_one_bounded_line_and_its_session_is_the_one_told() {
        let mut v = json!({"type": "holder", "what": format!("x\u{1b}]0;pwn\u{7}\r\n{}", "y".repeat(5000)),
            "holder": {"session": 9, "who": "eve\u{1b}[2J", "since": "t"}});
        clean_value(&mut v, 9, 3);
        let what = v["what"].as_str().unwrap();
        assert!(what.chars().count() == MAX_EVENT_TEXT && !what.contains(char::is_control));
        assert_eq!(v["holder"]["session"], 3);
        assert_eq!(v["holder"]["who"], "eve?[2J");
        let mut line = json!({"line": "conf t\u{7}"});
        clean_value(&mut line, 0, 0);
        assert_eq!(line["line"], "conf t\u{7}");
    }
}
