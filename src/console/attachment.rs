//! One person's attachment to a port's console, on the server (what the
//! attach protocol calls attaching; an MCP session is another thing, in
//! `mcp/session.rs`): the hello, the replay,
//! the live stream from the OutputLog at the person's own pace, events, and
//! what they type written under the port's one write hold. The transports
//! (the local socket, the WebSocket) only move frames between the
//! connection and the two channels [`serve`] is given.

use std::time::Duration;

use memchr::memrchr_iter;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::connection::{Ended, Outgoing};
pub use super::connection::{Person, SLOW_WATCHER};
use super::judged_typing::{HeldLine, JudgedTyping};
use super::protocol::{
    ClientMessage, DEFAULT_REPLAY_LINES, DataChunk, Frame, Hello, MAX_CLIENT_DATA_BYTES,
    MAX_REPLAY_LINES, MAX_SERVER_DATA_BYTES, Mode, PortSummary, ServerMessage,
};
use super::typed_line::TypedLine;
use crate::access::Caller;
use crate::access::guard::Sending;
use crate::access::rules::{
    may_decide_approval, may_send_break, may_take_hold, may_type, may_watch,
};
use crate::access::standing::{Recheck, Standing};
use crate::audit::Actor;
use crate::config::TokenAccess;
use crate::error::{ErrorCode, GateError, label};
use crate::gateway::Gateway;
use crate::log::OutputLog;
use crate::port::approvals::Decision;
use crate::port::{Holder, Participant, Port, PortState};

/// How long a new connection may take to say `hello` or `list`.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(10);
/// The most bytes a replay sends, however long the lines are.
pub const MAX_REPLAY_BYTES: usize = 256 * 1024;
/// Frames that may wait in a connection's outgoing queue.
pub const OUTGOING_FRAMES: usize = 64;
/// The most requests for approval one console message lists (the oldest
/// ones): with texts of at most
/// [`crate::port::approvals::MAX_TEXT_BYTES`], the message stays within
/// [`super::protocol::MAX_JSON_BYTES`].
pub const MAX_LISTED_APPROVALS: usize = 16;
/// BREAK length when the client does not say.
const DEFAULT_BREAK: Duration = Duration::from_millis(250);

/// Waits for a connection's writer task to send what is queued (the bye)
/// and close, for at most [`SLOW_WATCHER`]: a client that reads nothing
/// has its connection closed under it then.
pub async fn finish_writer(mut writer: tokio::task::JoinHandle<()>) {
    if tokio::time::timeout(SLOW_WATCHER, &mut writer)
        .await
        .is_err()
    {
        writer.abort();
    }
}

/// Serves one console connection: reads the client's frames from
/// `incoming` and sends the server's to `outgoing`, until the client
/// leaves, is too slow, the port closes, its caller is revoked (a reload
/// removed its token, its browser login ended) or `shutdown` is
/// cancelled.
/// `only_port`: the connection was made for that port (its URL names it),
/// and a hello for another is refused.
pub async fn serve(
    gateway: Gateway,
    person: Person,
    only_port: Option<String>,
    incoming: mpsc::Receiver<Frame>,
    outgoing: mpsc::Sender<Frame>,
    shutdown: CancellationToken,
) {
    serve_with(
        gateway,
        person,
        only_port,
        incoming,
        outgoing,
        shutdown,
        Output::Sent,
    )
    .await
}

/// Serves the console session a person at a serving gateway opened on a
/// port of this site ([`super::fleet_site`]): as [`serve`], but the
/// output is not sent (the serving gateway reads it in ranges, once for
/// all its watchers); `attached` and `replay` still say where it starts.
pub async fn serve_for_fleet(
    gateway: Gateway,
    person: Person,
    port: String,
    incoming: mpsc::Receiver<Frame>,
    outgoing: mpsc::Sender<Frame>,
    shutdown: CancellationToken,
) {
    serve_with(
        gateway,
        person,
        Some(port),
        incoming,
        outgoing,
        shutdown,
        Output::Withheld,
    )
    .await
}

/// Whether an attachment sends the port's output itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// It does (a person here).
    Sent,
    /// It does not: the serving gateway of a person elsewhere reads it.
    Withheld,
}

async fn serve_with(
    gateway: Gateway,
    person: Person,
    only_port: Option<String>,
    mut incoming: mpsc::Receiver<Frame>,
    outgoing: mpsc::Sender<Frame>,
    shutdown: CancellationToken,
    output: Output,
) {
    let out = Outgoing(outgoing);
    let first = tokio::time::timeout(HELLO_DEADLINE, incoming.recv()).await;
    let message = match first {
        Ok(Some(Frame::Json(text))) => serde_json::from_str::<ClientMessage>(&text),
        Ok(Some(Frame::Data(_))) | Err(_) => {
            out.bye("say hello first: a JSON {\"type\":\"hello\",\"port\":...,\"mode\":\"attach\"} or {\"type\":\"list\"}")
                .await;
            return;
        }
        Ok(None) => return,
    };
    match message {
        Ok(ClientMessage::List) => {
            let _ = out
                .send_message(&list(&gateway, person.standing.caller()))
                .await;
        }
        Ok(ClientMessage::Hello(hello))
            if only_port.as_ref().is_some_and(|p| *p != hello.port) =>
        {
            out.bye(&format!(
                "this connection is for port {}; say hello for it, or connect to /console for any port",
                crate::error::shown(only_port.as_deref().unwrap_or_default())
            ))
            .await
        }
        Ok(ClientMessage::Hello(hello))
            if output == Output::Sent
                && gateway.port(&hello.port).is_none()
                && let Some(consoles) = crate::console::fleet_feed::serving()
                && let Some(target) = crate::mcp::fleet_forward::split(&hello.port) =>
        {
            let name = label(&person.name);
            let outcome = super::fleet_attachment::attach(
                &gateway,
                consoles,
                person,
                target,
                hello,
                &mut incoming,
                &out,
                &shutdown,
            )
            .await;
            if let Err(Ended(reason)) = outcome {
                tracing::info!(person = %name, "console session ended: {reason}");
                out.bye(&reason).await;
            }
        }
        Ok(ClientMessage::Hello(hello)) => {
            let name = label(&person.name);
            let outcome = attach(
                &gateway,
                person,
                hello,
                &mut incoming,
                &out,
                &shutdown,
                output,
            )
            .await;
            if let Err(Ended(reason)) = outcome {
                tracing::info!(person = %name, "console session ended: {reason}");
                out.bye(&reason).await;
            }
        }
        Ok(_) => out.bye("the first message must be hello or list").await,
        Err(e) => {
            out.bye(&format!(
                "not a message of the console protocol: {}",
                label(&e.to_string())
            ))
            .await
        }
    }
}

/// The port list a caller may see: the ports it may watch
/// ([`crate::access::rules::may_watch`]; ad-hoc ones only for admins),
/// and at a serving gateway those of the fleet's other sites.
fn list(gateway: &Gateway, caller: &Caller) -> ServerMessage {
    let mut ports: Vec<PortSummary> = gateway
        .ports()
        .into_iter()
        .filter(|p| may_watch(caller, gateway, p.port.name()).is_ok())
        .map(|p| PortSummary {
            name: p.port.name().to_owned(),
            state: p.port.state(),
            watchers: p.port.people(),
            holder: p.port.holder(),
        })
        .collect();
    if let Some(consoles) = crate::console::fleet_feed::serving() {
        ports.extend(super::fleet_attachment::fleet_ports(
            gateway, consoles, caller,
        ));
    }
    ServerMessage::Ports { ports }
}

/// One person's attachment: what it knows of its port and its person.
struct Attachment<'a> {
    port: Port,
    gateway: &'a Gateway,
    /// The caller as last re-checked.
    caller: Caller,
    actor: Actor,
    spy: bool,
    /// The offset up to which output has been sent.
    cursor: u64,
    /// What the person last heard of who is here, to tell them changes.
    seen_people: Vec<Participant>,
    seen_holder: Option<Holder>,
    /// How this person's client takes a held port ([`hold_hint`]).
    hold_hint: &'static str,
    out: &'a Outgoing,
    /// The line being typed, followed when a policy judges the typing.
    line: TypedLine,
    /// A typed line waiting for a person's approval.
    held: Option<HeldLine>,
    /// Whether the output is sent, or read by a serving gateway.
    output: Output,
}

/// The decision on the line `held` waits with; never, without one.
async fn held_decision(held: &mut Option<HeldLine>) -> Option<Decision> {
    match held {
        Some(h) => Some(h.decided().await),
        None => std::future::pending().await,
    }
}

/// The web view's name for itself in its hello.
const WEB_VIEW_CLIENT: &str = "web view";
/// The SSH door's name for its people's attachments.
pub const SSH_CLIENT: &str = "ssh";

/// What a person does about a port someone else holds, in the client
/// they attached with: the web view's Force button, the console client's
/// force key or `--force`. The hint of a `busy` error that names the
/// holder (an agent's says `take_over` instead).
fn hold_hint(client: Option<&str>) -> &'static str {
    match client {
        Some(WEB_VIEW_CLIENT) => {
            "To write, press Force (the holder becomes read-only; taking the hold from another token's session needs admin access)"
        }
        Some(SSH_CLIENT) => {
            "To write, force the hold with Ctrl-] f (the holder becomes read-only; taking the hold from another's session needs admin access)"
        }
        _ => {
            "To write, force the hold with Ctrl-] f, or attach again with serialgate console --force (the holder becomes read-only; taking the hold from another token's session needs admin access)"
        }
    }
}

async fn attach(
    gateway: &Gateway,
    person: Person,
    hello: Hello,
    incoming: &mut mpsc::Receiver<Frame>,
    out: &Outgoing,
    shutdown: &CancellationToken,
    output: Output,
) -> Result<(), Ended> {
    let Person { mut standing, name } = person;
    let caller = standing.caller().clone();
    let Some(found) = gateway
        .port(&hello.port)
        .filter(|_| caller.may_use_port(&hello.port))
    else {
        // Refused like a port the caller may not watch: an error the
        // client shows as a refused attach, then the end.
        let refusal = GateError::new(
            ErrorCode::InvalidArgument,
            format!(
                "no port {} that this caller may use; `serialgate console --list` shows them",
                crate::error::shown(&hello.port)
            ),
        );
        out.error(&refusal).await?;
        return Err(Ended(refusal.message));
    };
    if let Err(e) = may_watch(&caller, gateway, &hello.port) {
        out.error(&e).await?;
        return Err(Ended(e.message));
    }
    let port = found.port;
    let may_write = caller.access >= TokenAccess::Write;
    let spy = hello.mode == Mode::Spy || !may_write;
    let hold_hint = hold_hint(hello.client.as_deref());
    let client = hello
        .client
        .as_deref()
        .map_or_else(|| "console".to_owned(), label);
    let actor = Actor {
        session: crate::audit::next_session(),
        client,
        token: caller.name.clone(),
        person: Some(label(&name)),
        config_token: false,
    };
    let _presence = port.join(Participant::now(actor.session, actor.describe(), spy));
    port.record_session_event(&actor, if spy { "console spy" } else { "console attach" });
    let mut attachment = Attachment {
        seen_people: port.people(),
        seen_holder: port.holder(),
        hold_hint,
        cursor: 0,
        port: port.clone(),
        gateway,
        caller,
        actor,
        spy,
        out,
        line: TypedLine::default(),
        held: None,
        output,
    };
    let outcome = attachment
        .run(hello, incoming, shutdown, &mut standing)
        .await;
    port.release_writer(attachment.actor.session);
    port.record_session_event(&attachment.actor, "console detach");
    outcome
}

impl Attachment<'_> {
    async fn run(
        &mut self,
        hello: Hello,
        incoming: &mut mpsc::Receiver<Frame>,
        shutdown: &CancellationToken,
        standing: &mut Standing,
    ) -> Result<(), Ended> {
        let mut refusal = None;
        if !self.spy {
            let held = match hello.mode {
                Mode::Force => self.force(),
                Mode::Watch => Ok(()),
                _ => self.port.claim_writer(&self.actor, false),
            };
            if let (Err(e), Mode::Force) = (held, hello.mode) {
                refusal = Some(e);
            }
        } else if hello.mode == Mode::Force {
            refusal = Some(self.read_only_refusal());
        }
        let log = self.port.log().clone();
        let head = log.head();
        let log_id = format!("{:016x}", log.id());
        let same_log = hello.log.as_deref().is_none_or(|id| id == log_id);
        let start = match hello.from {
            Some(from) if same_log => from.min(head),
            _ => {
                let lines = hello.replay_lines.unwrap_or(DEFAULT_REPLAY_LINES);
                last_lines_start(&log, lines.min(MAX_REPLAY_LINES), head)
            }
        };
        self.cursor = start;
        let holder = self.port.holder();
        self.seen_holder = holder.clone();
        self.seen_people = self.port.people();
        self.out
            .send_message(&ServerMessage::Attached {
                port: self.port.name().to_owned(),
                session: self.actor.session,
                you: self.actor.describe(),
                writing: holder
                    .as_ref()
                    .is_some_and(|h| h.session == self.actor.session),
                start,
                head,
                log: log_id,
                state: self.port.state(),
                holder,
                watchers: self.seen_people.clone(),
            })
            .await?;
        if let Some(e) = refusal {
            self.refuse(e).await?;
        }
        let mut head_rx = log.subscribe();
        let mut state_rx = self.port.watch_state();
        let mut presence_rx = self.port.watch_presence();
        let mut approvals_rx = self.port.approvals().watch();
        state_rx.borrow_and_update();
        presence_rx.borrow_and_update();
        head_rx.borrow_and_update();
        approvals_rx.borrow_and_update();
        self.send_output(log.head()).await?;
        let pending = self.listed_approvals();
        if !pending.is_empty() {
            self.out
                .send_message(&ServerMessage::Approvals { pending })
                .await?;
        }
        loop {
            tokio::select! {
                changed = head_rx.changed() => {
                    if changed.is_err() {
                        return Err(Ended("the port closed".to_owned()));
                    }
                    let head = *head_rx.borrow_and_update();
                    self.send_output(head).await?;
                }
                changed = state_rx.changed() => {
                    if changed.is_err() {
                        return Err(Ended("the port closed".to_owned()));
                    }
                    let state = *state_rx.borrow_and_update();
                    // Output that came before the state change goes first.
                    self.send_output(log.head()).await?;
                    self.out.send_message(&ServerMessage::State { state }).await?;
                    if state == PortState::Closed {
                        return Err(Ended(format!("{} was closed", self.port.name())));
                    }
                }
                changed = presence_rx.changed() => {
                    if changed.is_err() {
                        return Err(Ended("the port closed".to_owned()));
                    }
                    presence_rx.borrow_and_update();
                    self.tell_presence().await?;
                }
                changed = approvals_rx.changed() => {
                    if changed.is_err() {
                        return Err(Ended("the port closed".to_owned()));
                    }
                    approvals_rx.borrow_and_update();
                    let pending = self.listed_approvals();
                    self.out.send_message(&ServerMessage::Approvals { pending }).await?;
                }
                decision = held_decision(&mut self.held) => self.held_decided(decision).await?,
                frame = incoming.recv() => {
                    match frame {
                        None => return Ok(()),
                        Some(frame) => {
                            // A reload that came in the same turn applies
                            // first: typing never goes out under rights it
                            // took away.
                            self.recheck(standing.check_now(), standing)?;
                            self.handle(frame).await?
                        }
                    }
                }
                recheck = standing.changed() => self.recheck(recheck, standing)?,
                () = shutdown.cancelled() => {
                    self.send_output(log.head()).await?;
                    return Err(Ended("the gateway is shutting down".to_owned()));
                }
            }
        }
    }

    /// Acts on a re-check of the caller: `Err` ends the attachment with
    /// its reason, new rights apply at once.
    fn recheck(
        &mut self,
        recheck: Result<Recheck, String>,
        standing: &Standing,
    ) -> Result<(), Ended> {
        match recheck.map_err(Ended)? {
            Recheck::Same => Ok(()),
            Recheck::Changed => self.rights_changed(standing.caller().clone()),
        }
    }

    /// Applies the caller's new rights after a re-check: a port it no
    /// longer may watch ends the attachment; without write access it
    /// drops the hold and watches only (its typing is refused from now).
    fn rights_changed(&mut self, caller: Caller) -> Result<(), Ended> {
        self.caller = caller;
        if let Err(e) = may_watch(&self.caller, self.gateway, self.port.name()) {
            return Err(Ended(format!("{}; this console is closed", e.message)));
        }
        if self.caller.access < TokenAccess::Write && !self.spy {
            self.spy = true;
            // A line it typed that waits for approval is withdrawn: once
            // approved, it would be sent for a caller that may not write.
            self.held = None;
            self.port.release_writer(self.actor.session);
            tracing::info!(
                token = %label(&self.caller.name),
                port = %self.port.name(),
                "console now only watches: its token lost write access"
            );
        }
        Ok(())
    }

    /// Sends the output from the cursor to `head` and moves the cursor.
    async fn send_output(&mut self, head: u64) -> Result<(), Ended> {
        self.cursor = self.send_range(self.cursor, head).await?;
        Ok(())
    }

    /// Sends the retained output in `[from, to)` as data frames, saying
    /// first what retention dropped before this client saw it; returns
    /// where the sent output ends.
    async fn send_range(&self, from: u64, to: u64) -> Result<u64, Ended> {
        let log = self.port.log();
        if self.output == Output::Withheld {
            return Ok(to.min(log.head()).max(from));
        }
        let mut at = from;
        while at < to {
            let (start, bytes) = {
                let view = log.view();
                let start = at.max(view.oldest());
                let end = to
                    .min(view.head())
                    .min(start + MAX_SERVER_DATA_BYTES as u64);
                (start, view.slice(start, end).to_vec())
            };
            if start > at {
                self.out
                    .send_message(&ServerMessage::Truncated {
                        from: at,
                        to: start,
                    })
                    .await?;
            }
            if bytes.is_empty() {
                return Ok(start);
            }
            let chunk = DataChunk {
                offset: start,
                bytes,
            };
            at = chunk.end();
            self.out.send(Frame::Data(chunk.encode())).await?;
        }
        Ok(at)
    }

    /// Tells the person who joined, who left and who holds the write now.
    async fn tell_presence(&mut self) -> Result<(), Ended> {
        let people = self.port.people();
        let me = self.actor.session;
        for p in &people {
            if p.session != me && !self.seen_people.iter().any(|s| s.session == p.session) {
                self.out
                    .send_message(&ServerMessage::Joined {
                        participant: p.clone(),
                    })
                    .await?;
            }
        }
        for p in &self.seen_people {
            if p.session != me && !people.iter().any(|s| s.session == p.session) {
                self.out
                    .send_message(&ServerMessage::Left {
                        participant: p.clone(),
                    })
                    .await?;
            }
        }
        self.seen_people = people;
        let holder = self.port.holder();
        let before = self.seen_holder.as_ref().map(|h| h.session);
        if holder.as_ref().map(|h| h.session) != before {
            let what = match (&self.seen_holder, &holder) {
                (Some(old), Some(new)) => {
                    format!("{} took the write hold from {}", new.who, old.who)
                }
                (None, Some(new)) => format!("{} holds the write", new.who),
                (Some(old), None) => format!("{} released the write hold", old.who),
                (None, None) => String::new(),
            };
            self.seen_holder = holder.clone();
            self.out
                .send_message(&ServerMessage::Holder { holder, what })
                .await?;
        }
        Ok(())
    }

    /// Handles one frame from the client.
    async fn handle(&mut self, frame: Frame) -> Result<(), Ended> {
        let message = match frame {
            Frame::Data(bytes) => return self.typed(&bytes).await,
            Frame::Json(text) => match serde_json::from_str::<ClientMessage>(&text) {
                Ok(message) => message,
                Err(e) => {
                    return self
                        .out
                        .error(&GateError::invalid(format!(
                            "not a message of the console protocol ({}); nothing was done",
                            label(&e.to_string())
                        )))
                        .await;
                }
            },
        };
        let result = match message {
            ClientMessage::Replay { lines } => return self.replay(lines).await,
            ClientMessage::Who => {
                return self
                    .out
                    .send_message(&ServerMessage::Who {
                        watchers: self.port.people(),
                        holder: self.port.holder(),
                    })
                    .await;
            }
            ClientMessage::Break { ms } => self.send_break(ms).await,
            ClientMessage::Acquire if self.spy => Err(self.read_only_refusal()),
            ClientMessage::Acquire => self.port.claim_writer(&self.actor, false),
            ClientMessage::Force if self.spy => Err(self.read_only_refusal()),
            ClientMessage::Force => self.force(),
            ClientMessage::Release => {
                self.port.release_writer(self.actor.session);
                Ok(())
            }
            ClientMessage::Decide { id, line, approve } => {
                return match self.decide(id, &line, approve) {
                    Ok(()) => {
                        self.out
                            .send_message(&ServerMessage::Decided {
                                id,
                                line,
                                approved: approve,
                            })
                            .await
                    }
                    Err(e) => self.refuse(e).await,
                };
            }
            ClientMessage::Hello(_) | ClientMessage::List => Err(GateError::invalid(
                "already attached: hello and list come first on a new connection",
            )),
        };
        match result {
            Ok(()) => Ok(()),
            Err(e) => self.refuse(e).await,
        }
    }

    /// Tells the person a request was refused; a held port's refusal says
    /// how their client takes the hold.
    async fn refuse(&self, e: GateError) -> Result<(), Ended> {
        self.out.error(&e.with_hold_hint(self.hold_hint)).await
    }

    /// Writes what the person typed, under the write hold.
    async fn typed(&mut self, bytes: &[u8]) -> Result<(), Ended> {
        if let Some(held) = self.held.take() {
            return self.typed_while_held(held, bytes).await;
        }
        let result = if let Err(e) = may_type(&self.caller, self.gateway, self.port.name()) {
            Err(e)
        } else if self.spy {
            Err(self.read_only_refusal())
        } else if bytes.len() > MAX_CLIENT_DATA_BYTES {
            Err(GateError::invalid(format!(
                "a data frame of {} bytes is over the limit of {MAX_CLIENT_DATA_BYTES}; nothing was sent: split it",
                bytes.len()
            )))
        } else if JudgedTyping::applies(self.gateway, &self.caller, self.port.name()) {
            let judged = JudgedTyping {
                port: &self.port,
                gateway: self.gateway,
                caller: &self.caller,
                actor: &self.actor,
            };
            match judged.write(&mut self.line, bytes).await {
                Ok(held) => {
                    self.held = held;
                    Ok(())
                }
                Err(e) => Err(e),
            }
        } else {
            self.port
                .write_as(&self.actor, "console", bytes, false)
                .await
        };
        match result {
            Ok(()) => Ok(()),
            Err(e) => self.refuse(e).await,
        }
    }

    /// Sends the last `lines` lines again, marked as a replay.
    async fn replay(&mut self, lines: u32) -> Result<(), Ended> {
        // Live output up to now first, so that the replay ends where live
        // output resumes.
        self.send_output(self.port.log().head()).await?;
        let end = self.cursor;
        let start = last_lines_start(self.port.log(), lines.min(MAX_REPLAY_LINES), end);
        self.out
            .send_message(&ServerMessage::Replay { start, end })
            .await?;
        self.send_range(start, end).await?;
        Ok(())
    }

    /// Typing while a line waits for approval: Ctrl-C withdraws it, the
    /// rest is refused (the device's line holds the waiting line).
    async fn typed_while_held(&mut self, held: HeldLine, bytes: &[u8]) -> Result<(), Ended> {
        if bytes.contains(&0x03) {
            let result = self.judged().settle(held, None).await;
            return match result {
                Ok(()) => Ok(()),
                Err(e) => self.refuse(e).await,
            };
        }
        let refusal = GateError::new(
            ErrorCode::Denied,
            format!(
                "a line you typed waits for a person's approval (request {}); nothing else is typed until it is decided: Ctrl-C withdraws it",
                held.id
            ),
        );
        self.held = Some(held);
        self.refuse(refusal).await
    }

    /// Ends the line that waited for approval with its decision.
    async fn held_decided(&mut self, decision: Option<Decision>) -> Result<(), Ended> {
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        if self.spy {
            // Only watching now: nothing of it is sent, not even Ctrl-U.
            return Ok(());
        }
        match self.judged().settle(held, decision).await {
            Ok(()) => Ok(()),
            Err(e) => self.refuse(e).await,
        }
    }

    /// The judge of this person's typing under a policy.
    fn judged(&self) -> JudgedTyping<'_> {
        JudgedTyping {
            port: &self.port,
            gateway: self.gateway,
            caller: &self.caller,
            actor: &self.actor,
        }
    }

    async fn send_break(&self, ms: Option<u64>) -> Result<(), GateError> {
        may_send_break(&self.caller, self.gateway, self.port.name())?;
        if self.spy {
            return Err(self.read_only_refusal());
        }
        if JudgedTyping::applies(self.gateway, &self.caller, self.port.name()) {
            self.judged().judge(Sending::Unjudged {
                what: "a BREAK (it can drop a device into its boot loader)",
            })?;
        }
        self.port.claim_writer(&self.actor, false)?;
        let duration = ms.map_or(DEFAULT_BREAK, Duration::from_millis);
        let slot = self.port.reserve_audit().await?;
        self.port.send_break(duration).await?;
        self.port.audit_as(slot, &self.actor, "break", b"");
        Ok(())
    }

    /// The oldest requests for approval on the port, as many as one
    /// message lists.
    fn listed_approvals(&self) -> Vec<crate::port::approvals::PendingApproval> {
        let mut pending = self.port.approvals().list();
        pending.truncate(MAX_LISTED_APPROVALS);
        pending
    }

    /// Decides a request for approval as this person: they must be able
    /// to type at this port (write access), and the store checks the
    /// rest (the request, its text, four eyes).
    fn decide(&self, id: u64, line: &str, approve: bool) -> Result<(), GateError> {
        may_decide_approval(&self.caller, self.gateway, self.port.name())?;
        let request = self
            .port
            .approvals()
            .decide(id, line, &self.actor, approve)?;
        tracing::info!(
            port = %self.port.name(),
            request = id,
            "{} {} request {id} of {}: {}",
            self.actor.describe(),
            if approve { "approved" } else { "denied" },
            request.who,
            crate::error::shown(&request.line)
        );
        Ok(())
    }

    fn force(&self) -> Result<(), GateError> {
        let (caller, session, name) = (&self.caller, self.actor.session, self.port.name());
        self.port.take_writer(&self.actor, |holder| {
            may_take_hold(caller, session, name, holder)
        })
    }

    fn read_only_refusal(&self) -> GateError {
        if self.caller.access < TokenAccess::Write {
            GateError::new(
                ErrorCode::Forbidden,
                format!(
                    "{} has read access: it can watch {} but not write to it",
                    self.caller.who(),
                    self.port.name()
                ),
            )
        } else {
            GateError::new(
                ErrorCode::Forbidden,
                format!(
                    "spying on {}: nothing typed is sent; attach without --spy to write",
                    self.port.name()
                ),
            )
        }
    }
}

/// Where the last `lines` lines before `end` start (a line is ended by
/// `\n`; a partial line at the end counts as one), at most
/// [`MAX_REPLAY_BYTES`] back and never before the oldest retained byte.
pub fn last_lines_start(log: &OutputLog, lines: u32, end: u64) -> u64 {
    let view = log.view();
    let end = end.min(view.head());
    let floor = view
        .oldest()
        .max(end.saturating_sub(MAX_REPLAY_BYTES as u64));
    if lines == 0 {
        return end;
    }
    let bytes = view.slice(floor, end);
    // A line ending at the very end is the last line, not a line after it.
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    match memrchr_iter(b'\n', body).nth(lines as usize - 1) {
        Some(at) => floor + at as u64 + 1,
        None => floor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_is_told_its_own_way_to_take_the_hold() {
        assert!(hold_hint(Some(WEB_VIEW_CLIENT)).contains("press Force"));
        for client in [Some("serialgate console 0.1.0"), None] {
            let hint = hold_hint(client);
            assert!(
                hint.contains("Ctrl-] f") && hint.contains("--force"),
                "{hint}"
            );
        }
    }

    #[test]
    fn the_last_lines_start_after_the_newline_before_them() {
        let log = OutputLog::new(1 << 20);
        log.append(b"one\r\ntwo\r\nthree\r\nSW1#");
        let head = log.head();
        let text = |from: u64| String::from_utf8_lossy(&log.copy_range(from, head)).into_owned();
        assert_eq!(text(last_lines_start(&log, 1, head)), "SW1#");
        assert_eq!(text(last_lines_start(&log, 2, head)), "three\r\nSW1#");
        assert_eq!(
            text(last_lines_start(&log, 20, head)),
            "one\r\ntwo\r\nthree\r\nSW1#"
        );
        assert_eq!(last_lines_start(&log, 0, head), head);
        log.append(b"\r\n");
        let head = log.head();
        let text = |from: u64| String::from_utf8_lossy(&log.copy_range(from, head)).into_owned();
        assert_eq!(text(last_lines_start(&log, 1, head)), "SW1#\r\n");
    }

    /// A write token's console and a reload that lowers the token to
    /// read, arriving together with a line it typed: whichever the
    /// attachment reads first, the line is refused and never reaches the
    /// device. Twenty rounds, each with the reload and the line pending
    /// at once when the attachment next runs (one thread: it runs only
    /// when the test awaits).
    #[tokio::test(flavor = "current_thread")]
    async fn typing_that_comes_with_a_demoting_reload_never_reaches_the_device() {
        use std::io::Read;
        let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal");
        let device = nix::unistd::ttyname(&pty.slave).expect("its name");
        let mut master = std::fs::File::from(pty.master);
        nix::fcntl::fcntl(
            &master,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )
        .expect("a non-blocking master");
        let text = format!("[ports.sw1]\ndevice = {device:?}\npreset = \"cisco-ios\"\n");
        let config = |access| {
            let mut config = crate::config::Config::parse(&text, "t.toml").expect("the config");
            config.tokens = vec![crate::config::TokenConfig::for_tests("noc", access)];
            config
        };
        let shutdown = CancellationToken::new();
        let gateway = Gateway::start(config(TokenAccess::Write), shutdown.clone());
        let port = gateway.port("sw1").expect("sw1").port;
        let mut state = port.watch_state();
        tokio::time::timeout(
            Duration::from_secs(10),
            state.wait_for(|s| *s == PortState::Open),
        )
        .await
        .expect("sw1 opens in time")
        .expect("sw1's state");
        async fn next(out: &mut mpsc::Receiver<Frame>) -> serde_json::Value {
            loop {
                let frame = tokio::time::timeout(Duration::from_secs(5), out.recv())
                    .await
                    .expect("a message from the attachment in time")
                    .expect("the attachment still runs");
                if let Frame::Json(text) = frame {
                    break serde_json::from_str(&text).expect("JSON");
                }
            }
        }
        for round in 0..20 {
            gateway.reload(config(TokenAccess::Write)).await;
            let caller = Caller::from_token(&gateway.config().tokens[0]);
            let person = super::super::connection::Person {
                standing: Standing::token(caller, &gateway),
                name: "noc".into(),
            };
            let (typing, incoming) = mpsc::channel(16);
            let (outgoing, mut out) = mpsc::channel(1024);
            let served = crate::task::spawn(serve(
                gateway.clone(),
                person,
                None,
                incoming,
                outgoing,
                shutdown.clone(),
            ));
            typing
                .send(Frame::Json(
                    r#"{"type":"hello","port":"sw1","mode":"attach"}"#.into(),
                ))
                .await
                .expect("the hello");
            let attached = next(&mut out).await;
            assert_eq!(attached["writing"], true, "round {round}: {attached}");
            gateway.reload(config(TokenAccess::Read)).await;
            typing
                .try_send(Frame::Data(b"show clock\r".to_vec()))
                .expect("the line");
            let refused = loop {
                let message = next(&mut out).await;
                if message["type"] == "error" {
                    break message;
                }
            };
            assert_eq!(refused["code"], "forbidden", "round {round}: {refused}");
            let mut reached = Vec::new();
            let _ = master.read_to_end(&mut reached);
            assert!(
                !String::from_utf8_lossy(&reached).contains("show clock"),
                "round {round}: the line reached the device"
            );
            drop(typing);
            served.await.expect("the attachment ends");
        }
        shutdown.cancel();
    }

    #[test]
    fn a_replay_is_bounded_in_bytes() {
        let log = OutputLog::new(4 << 20);
        log.append(&vec![b'x'; 2 * MAX_REPLAY_BYTES]);
        let head = log.head();
        assert_eq!(
            last_lines_start(&log, 20, head),
            head - MAX_REPLAY_BYTES as u64
        );
    }
}
