//! `serialgate console`: a person's terminal on a port of the gateway.
//! The device's bytes go to the screen as they are, the keys a person
//! types go to the device (under the port's one write hold), `Ctrl-]` and
//! one key are commands to the client, and everything the client says
//! itself is a `[serialgate: ...]` line of its own.
//!
//! The session is a loop over events (a frame from the gateway, keys,
//! a signal, room to write to the screen or to the gateway): the state
//! ([`Session`]) turns each into bytes for the screen and frames for the
//! gateway, queued, and the loop moves them when the other side takes
//! them, so that a slow terminal or a gateway that stops reading never
//! keeps a signal or the gateway's frames from being handled.

pub(crate) mod escape;
mod raw_mode;
pub(crate) mod render;
mod transport;

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::console::protocol::{
    ClientMessage, DataChunk, Frame, Hello, MAX_REPLAY_LINES, Mode, PendingApproval, ServerMessage,
};
use crate::port::PortState;
use escape::{Action, EscapeMachine, key_name};
use render::{Render, shown};
use transport::{FrameSink, FrameStream, Target};

/// The console socket when neither `--socket` nor
/// `SERIALGATE_CONSOLE_SOCKET` names one.
pub(crate) const DEFAULT_SOCKET: &str = "/run/serialgate/console.sock";

/// The environment variable naming the console socket.
pub(crate) const SOCKET_ENV: &str = "SERIALGATE_CONSOLE_SOCKET";

/// How long the gateway may take to answer `hello` or `list`.
const ANSWER_DEADLINE: Duration = Duration::from_secs(10);

/// How long leaving may take to hand the last bytes to the screen and the
/// gateway.
const LEAVE_DEADLINE: Duration = Duration::from_secs(2);

/// Frames queued for the gateway before keys are no longer read (a paste
/// into a slow line waits for the gateway, nothing is dropped).
const OUTBOX_HIGH: usize = 64;

/// Chunks queued for the screen before the gateway's frames are no longer
/// read (the gateway then sees a slow client).
const SCREEN_HIGH: usize = 64;

/// The command line of `serialgate console`: which port, how, and where
/// the gateway is.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "\
Escape keys (Ctrl-] then one key):
  .  detach          r  replay the last lines   w  who is here
  b  send BREAK      a  take the write if free  f  take the write from its holder
  s  give up the write and watch                ?  this list
  Ctrl-] again types one Ctrl-] to the device.

Exit status: 0 after a detach (Ctrl-] . or the end of input) and after --list; 1 when the \
gateway ends the session or cannot be reached; 128+N after signal N.")]
pub struct Options {
    /// The port to attach to.
    #[arg(required_unless_present = "list")]
    pub port: Option<String>,
    /// List the ports, who watches them and who holds the write, then exit.
    #[arg(long, conflicts_with_all = ["port", "spy", "force", "replay"])]
    pub list: bool,
    /// Watch only: never write, typed keys are not sent.
    #[arg(long, conflicts_with = "force")]
    pub spy: bool,
    /// Take the write hold from whoever holds it (where your access allows).
    #[arg(long)]
    pub force: bool,
    /// The gateway's address, https://HOST:PORT (its [server] listen; http://
    /// for a listener without TLS); without it, the local console socket.
    #[arg(long, value_name = "URL", conflicts_with = "socket")]
    pub url: Option<String>,
    /// The CA certificate (PEM) an https:// gateway's certificate must be
    /// signed by; default: the system's trusted roots.
    #[arg(long, value_name = "PEM", requires = "url")]
    pub ca_file: Option<PathBuf>,
    /// A file holding the bearer token for --url (mode 600 or stricter).
    #[arg(long, value_name = "FILE", requires = "url")]
    pub token_file: Option<PathBuf>,
    /// The console socket ([server] console_socket); default
    /// $SERIALGATE_CONSOLE_SOCKET, else /run/serialgate/console.sock.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Lines of output replayed on attach, and by Ctrl-] r.
    #[arg(long, value_name = "N", default_value_t = crate::console::protocol::DEFAULT_REPLAY_LINES,
          value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_REPLAY_LINES)))]
    pub replay: u32,
}

/// Runs `serialgate console`: attaches to the port (or lists the ports)
/// and returns the exit status. An error is one the person can act on,
/// returned before the terminal was touched.
pub async fn run(options: Options) -> anyhow::Result<ExitCode> {
    let target = target(&options).map_err(anyhow::Error::msg)?;
    match &options.port {
        Some(port) if !options.list => attach(&options, port, &target).await,
        _ => list(&target).await,
    }
}

/// Where the options say the gateway is.
fn target(options: &Options) -> Result<Target, String> {
    if let Some(url) = &options.url {
        let base = transport::HttpBase::parse(url)?;
        let token = options
            .token_file
            .as_deref()
            .map(transport::read_token)
            .transpose()?;
        let tls = match (&options.ca_file, base.tls) {
            (Some(_), false) => {
                return Err(
                    "--ca-file is for an https:// --url; give the gateway's https:// address, or leave --ca-file out"
                        .into(),
                );
            }
            (ca_file, true) => Some(
                crate::tls::client::client_config(ca_file.as_deref())
                    .map_err(|e| format!("TLS: {e}"))?,
            ),
            (None, false) => None,
        };
        return Ok(Target::Http { base, token, tls });
    }
    let socket = options.socket.clone().unwrap_or_else(|| {
        std::env::var_os(SOCKET_ENV)
            .filter(|v| !v.is_empty())
            .map_or_else(|| PathBuf::from(DEFAULT_SOCKET), PathBuf::from)
    });
    Ok(Target::Socket(socket))
}

fn json(message: &ClientMessage) -> anyhow::Result<Frame> {
    Ok(Frame::Json(serde_json::to_string(message)?))
}

/// The first server message, within [`ANSWER_DEADLINE`]; data before it
/// or a closed connection are errors.
async fn first_answer(stream: &mut FrameStream, asked: &str) -> anyhow::Result<ServerMessage> {
    let frame = tokio::time::timeout(ANSWER_DEADLINE, stream.recv())
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "the gateway did not answer {asked} within {} s; check the gateway's log",
                ANSWER_DEADLINE.as_secs()
            )
        })?
        .map_err(|e| anyhow::anyhow!("the connection to the gateway failed: {e}"))?;
    match frame {
        None => anyhow::bail!("the gateway closed the connection without answering {asked}"),
        Some(Frame::Data(_)) => anyhow::bail!("the gateway sent data before answering {asked}"),
        Some(Frame::Json(text)) => serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "the gateway answered {asked} with a message this client does not understand \
                 ({}): {}",
                shown(&e.to_string()),
                shown(&text)
            )
        }),
    }
}

/// `--list`: the ports, as a table on stdout.
async fn list(target: &Target) -> anyhow::Result<ExitCode> {
    let (mut sink, mut stream) = transport::connect(target, None)
        .await
        .map_err(anyhow::Error::msg)?;
    sink.send(&json(&ClientMessage::List)?)
        .await
        .map_err(|e| anyhow::anyhow!("cannot send to the gateway: {e}"))?;
    let answer = first_answer(&mut stream, "list").await?;
    sink.close().await;
    match answer {
        ServerMessage::Ports { ports } => {
            let mut out = tokio::io::stdout();
            out.write_all(render::ports_table(&ports).as_bytes())
                .await?;
            out.flush().await?;
            Ok(ExitCode::SUCCESS)
        }
        ServerMessage::Error { code, message } => {
            anyhow::bail!(
                "the gateway refused the list: {}: {}",
                shown(&code),
                shown(&message)
            )
        }
        ServerMessage::Bye { reason } => {
            anyhow::bail!("the gateway ended the session: {}", shown(&reason))
        }
        _ => anyhow::bail!("the gateway answered list with something else than the ports"),
    }
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    /// `Ctrl-] .`.
    Detached,
    /// The end of standard input.
    InputClosed,
    /// The gateway closed the connection.
    ServerClosed,
    /// The gateway said `bye`, with its reason (shown).
    Bye(String),
    /// A signal, by name and number.
    Signal(&'static str, i32),
    /// Something failed; what to say.
    Failed(String),
}

/// What the session knows and has to say: turns the gateway's frames and
/// the person's keys into screen bytes and frames for the gateway. Sans
/// I/O, so that the SSH door (`crate::daemon::ssh`) runs the same one
/// for a person at `ssh`: the same messages, the same escape keys.
#[derive(Debug)]
pub(crate) struct Session {
    port: String,
    mode: Mode,
    replay_lines: u32,
    /// Our session number (compare with the holder's).
    session: u64,
    /// Whether we hold the write.
    writing: bool,
    state: PortState,
    /// The end of a replay whose data is still arriving.
    replay_end: Option<u64>,
    render: Render,
    escape: EscapeMachine,
    /// Bytes for the screen, in order.
    screen: VecDeque<Vec<u8>>,
    /// Frames for the gateway, in order.
    outbox: VecDeque<Frame>,
    /// The lines waiting on the port for a person's approval, oldest
    /// first, as the gateway last listed them.
    pending: Vec<PendingApproval>,
}

impl Session {
    /// A session on `port`, attaching as `mode`.
    pub(crate) fn new(port: &str, mode: Mode, replay_lines: u32) -> Session {
        Session {
            port: port.to_owned(),
            mode,
            replay_lines,
            session: 0,
            writing: false,
            state: PortState::Open,
            replay_end: None,
            render: Render::new(),
            escape: EscapeMachine::new(),
            screen: VecDeque::new(),
            outbox: VecDeque::new(),
            pending: Vec::new(),
        }
    }

    fn say(&mut self, text: &str) {
        let bytes = self.render.message(text);
        self.screen.push_back(bytes);
    }

    fn say_quietly(&mut self, text: &str) {
        if let Some(bytes) = self.render.quiet_message(text) {
            self.screen.push_back(bytes);
        }
    }

    fn say_lines(&mut self, texts: &[String]) {
        let bytes = self.render.messages(texts);
        self.screen.push_back(bytes);
    }

    fn output(&mut self, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            self.render.output(&bytes);
            self.screen.push_back(bytes);
        }
    }

    fn send(&mut self, message: &ClientMessage) {
        match json(message) {
            Ok(frame) => self.outbox.push_back(frame),
            Err(e) => self.say(&format!("cannot encode a message: {e}")),
        }
    }

    fn holder_is_me(&self, holder: Option<&crate::port::Holder>) -> bool {
        holder.is_some_and(|h| h.session == self.session)
    }

    /// The bytes for the screen so far, in order.
    pub(crate) fn take_screen(&mut self) -> VecDeque<Vec<u8>> {
        std::mem::take(&mut self.screen)
    }

    /// The frames for the gateway so far, in order.
    pub(crate) fn take_outbox(&mut self) -> VecDeque<Frame> {
        std::mem::take(&mut self.outbox)
    }

    /// The answer to hello, as the person reads it.
    pub(crate) fn attached(&mut self, message: ServerMessage) -> Result<(), String> {
        let ServerMessage::Attached {
            port,
            session,
            you,
            writing,
            start,
            head,
            state,
            holder,
            watchers,
            ..
        } = message
        else {
            return Err("the gateway answered hello with something else than attached".into());
        };
        self.session = session;
        self.writing = writing;
        self.state = state;
        let port = if port == self.port {
            shown(&port)
        } else {
            format!("{} (asked for {})", shown(&port), shown(&self.port))
        };
        let you = shown(&you);
        let holder_text = match holder.as_ref() {
            Some(h) if !self.holder_is_me(Some(h)) => {
                format!("{} holds the write", render::holder(h))
            }
            _ => "nobody holds the write".to_owned(),
        };
        let how = match (self.mode, writing) {
            (Mode::Spy, _) => format!("spying on {port} as {you}: you never write; {holder_text}"),
            (_, true) => format!("attached to {port} as {you}: you hold the write"),
            (_, false) => {
                let take = if holder.is_some() {
                    "Ctrl-] f takes it"
                } else {
                    "Ctrl-] a takes it"
                };
                format!("attached to {port} as {you}: you watch; {holder_text} ({take})")
            }
        };
        self.say(&how);
        let others = watchers.iter().filter(|p| p.session != session).count();
        let mut next = String::from("Ctrl-] ? for help, Ctrl-] . to detach");
        if others > 0 {
            next.push_str(&format!("; {others} other(s) here (Ctrl-] w)"));
        }
        if head > start {
            next.push_str(&format!("; the last {} line(s) follow", self.replay_lines));
        }
        self.say(&next);
        if state != PortState::Open {
            let text = render::state(&self.port, state);
            self.say(&text);
        }
        Ok(())
    }

    /// A frame from the gateway.
    pub(crate) fn on_frame(&mut self, frame: Frame) -> Option<End> {
        match frame {
            Frame::Data(payload) => {
                let Some(chunk) = DataChunk::decode(&payload) else {
                    return Some(End::Failed(
                        "the gateway sent a data frame shorter than its offset".into(),
                    ));
                };
                self.data(chunk);
                None
            }
            Frame::Json(text) => match serde_json::from_str::<ServerMessage>(&text) {
                Ok(message) => self.on_message(message),
                Err(_) => {
                    // A newer gateway's message: say so once, go on.
                    let kind = serde_json::from_str::<serde_json::Value>(&text)
                        .ok()
                        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(shown))
                        .unwrap_or_else(|| "?".to_owned());
                    self.say_quietly(&format!(
                        "ignored a message from the gateway that this client does not know (type {kind})"
                    ));
                    None
                }
            },
        }
    }

    fn data(&mut self, chunk: DataChunk) {
        match self.replay_end {
            Some(end) if chunk.end() >= end => {
                let split = usize::try_from(end.saturating_sub(chunk.offset))
                    .unwrap_or(usize::MAX)
                    .min(chunk.bytes.len());
                let mut bytes = chunk.bytes;
                let live = bytes.split_off(split);
                self.output(bytes);
                self.replay_end = None;
                self.say("end of replay");
                self.output(live);
            }
            _ => self.output(chunk.bytes),
        }
    }

    fn on_message(&mut self, message: ServerMessage) -> Option<End> {
        match message {
            ServerMessage::Replay { start, end } => {
                if end > start {
                    self.say("replay of the last lines:");
                    self.replay_end = Some(end);
                } else {
                    self.say("nothing to replay");
                }
            }
            ServerMessage::Holder { holder, what } => {
                if !what.is_empty() {
                    self.say(&shown(&what));
                }
                let now = self.holder_is_me(holder.as_ref());
                if self.writing && !now {
                    self.say("you are watching now; Ctrl-] f takes the write back");
                } else if !self.writing && now {
                    self.say("you hold the write now");
                }
                self.writing = now;
            }
            ServerMessage::State { state } => {
                if state != self.state {
                    let text = match (self.state, state) {
                        (PortState::Opening, PortState::Open) => {
                            format!("{} is open", shown(&self.port))
                        }
                        _ => render::state(&self.port, state),
                    };
                    self.say(&text);
                    self.state = state;
                }
            }
            ServerMessage::Joined { participant } => {
                if participant.session != self.session {
                    self.say(&format!("{} joined", render::participant(&participant)));
                }
            }
            ServerMessage::Left { participant } => {
                if participant.session != self.session {
                    self.say(&format!("{} left", shown(&participant.who)));
                }
            }
            ServerMessage::Who { watchers, holder } => {
                let lines = render::who(&watchers, holder.as_ref());
                self.say_lines(&lines);
            }
            ServerMessage::Truncated { from, to } => self.say(&format!(
                "{} byte(s) of output were dropped by the gateway's retention before you saw them",
                to.saturating_sub(from)
            )),
            ServerMessage::Error { code, message } => {
                self.say_quietly(&format!("{}: {}", shown(&code), shown(&message)));
            }
            ServerMessage::Approvals { pending } => self.approvals(pending),
            ServerMessage::Decided { id, line, approved } => self.say(&format!(
                "you {} request {id}: {}",
                if approved { "approved" } else { "denied" },
                shown(&format!("{line:?}"))
            )),
            ServerMessage::Bye { reason } => return Some(End::Bye(shown(&reason))),
            ServerMessage::Attached { .. } | ServerMessage::Ports { .. } => {
                self.say_quietly("ignored an unexpected message from the gateway");
            }
        }
        None
    }

    /// The gateway's list of lines waiting for approval: the new ones are
    /// shown, each on its own line, with the keys that decide them.
    fn approvals(&mut self, pending: Vec<PendingApproval>) {
        let old: Vec<u64> = self.pending.iter().map(|p| p.id).collect();
        for p in pending.iter().filter(|p| !old.contains(&p.id)) {
            self.say(&format!(
                "approval wanted: {} asks to send {} ({} mode) on {}: {}; Ctrl-] y approves, Ctrl-] n denies (request {}, expires in {} s)",
                shown(&p.who),
                shown(&format!("{:?}", p.line)),
                shown(&p.mode),
                shown(&p.port),
                shown(&p.reason),
                p.id,
                p.expires_in_s
            ));
        }
        let now: Vec<u64> = pending.iter().map(|p| p.id).collect();
        for id in old.iter().filter(|id| !now.contains(id)) {
            self.say(&format!("request {id} no longer waits for approval"));
        }
        self.pending = pending;
    }

    /// `Ctrl-] y` or `n`: decides the oldest waiting line, naming the
    /// text the person was shown.
    fn decide(&mut self, approve: bool) {
        let Some(p) = self.pending.first() else {
            self.say("no line waits for approval on this port");
            return;
        };
        let message = ClientMessage::Decide {
            id: p.id,
            line: p.line.clone(),
            approve,
        };
        self.send(&message);
    }

    /// A BREAK the person asked for (`Ctrl-] b`, or the SSH door's
    /// `~B` with its length): sent unless they watch only.
    pub(crate) fn request_break(&mut self, ms: Option<u64>) {
        if self.mode == Mode::Spy {
            self.say_spying_never_writes();
            return;
        }
        self.say("sending BREAK");
        self.send(&ClientMessage::Break { ms });
    }

    fn say_spying_never_writes(&mut self) {
        self.say_quietly("spying: you never write (attach without --spy to write)");
    }

    /// Sets how many lines `Ctrl-] r` replays (the SSH door follows the
    /// person's window height).
    pub(crate) fn set_replay_lines(&mut self, lines: u32) {
        self.replay_lines = lines;
    }

    /// Keys the person typed.
    pub(crate) fn on_keys(&mut self, bytes: &[u8]) -> Option<End> {
        for action in self.escape.feed(bytes) {
            let spying = self.mode == Mode::Spy;
            match action {
                Action::Type(_) if spying => self.say_quietly("spying: typed keys are not sent"),
                Action::Type(bytes) => self.outbox.push_back(Frame::Data(bytes)),
                Action::Detach => return Some(End::Detached),
                Action::Replay => {
                    let lines = if self.replay_lines == 0 {
                        crate::console::protocol::DEFAULT_REPLAY_LINES
                    } else {
                        self.replay_lines
                    };
                    self.send(&ClientMessage::Replay { lines });
                }
                Action::Who => self.send(&ClientMessage::Who),
                Action::Break => self.request_break(None),
                Action::Force | Action::Acquire if spying => self.say_spying_never_writes(),
                Action::Force => self.send(&ClientMessage::Force),
                Action::Acquire => self.send(&ClientMessage::Acquire),
                Action::Release => self.send(&ClientMessage::Release),
                Action::Approve => self.decide(true),
                Action::Deny => self.decide(false),
                Action::Help => {
                    let mut lines = vec!["escape keys:".to_owned()];
                    lines.extend(escape::HELP.iter().map(|l| format!("  {l}")));
                    self.say_lines(&lines);
                }
                Action::Unknown(key) => self.say(&format!(
                    "Ctrl-] {} is no command (not sent); Ctrl-] ? for help",
                    key_name(key)
                )),
            }
        }
        None
    }

    /// What the person reads last, after the terminal is restored.
    pub(crate) fn farewell(&mut self, end: &End) -> Vec<u8> {
        let port = shown(&self.port);
        let text = match end {
            End::Detached => format!("detached from {port}"),
            End::InputClosed => format!("end of input: detached from {port}"),
            End::ServerClosed => "the connection to the gateway closed".to_owned(),
            End::Bye(reason) => format!("the gateway ended the session: {reason}"),
            End::Signal(name, _) => format!("{name}: detached from {port}"),
            End::Failed(what) => what.clone(),
        };
        self.render.message(&text)
    }
}

impl End {
    fn exit_code(&self) -> ExitCode {
        match self {
            End::Detached | End::InputClosed => ExitCode::SUCCESS,
            End::Signal(_, n) => ExitCode::from(u8::try_from(128 + n).unwrap_or(1)),
            End::ServerClosed | End::Bye(_) | End::Failed(_) => ExitCode::FAILURE,
        }
    }
}

/// The terminal's signals that end the session (in raw mode the keys
/// send no signals: Ctrl-C goes to the device).
struct Signals {
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// The next signal, by name and number.
    async fn next(&mut self) -> (&'static str, i32) {
        tokio::select! {
            _ = self.term.recv() => ("SIGTERM", libc::SIGTERM),
            _ = self.hup.recv() => ("SIGHUP", libc::SIGHUP),
            _ = self.int.recv() => ("SIGINT", libc::SIGINT),
        }
    }
}

/// Attaches to `port` and runs the session until it ends.
async fn attach(options: &Options, port: &str, target: &Target) -> anyhow::Result<ExitCode> {
    // Before anything else, so that no signal is missed: connecting is
    // raced against them below, and the session handles them after.
    let mut signals = Signals::new()?;
    let mode = if options.spy {
        Mode::Spy
    } else if options.force {
        Mode::Force
    } else {
        Mode::Attach
    };
    let hello = ClientMessage::Hello(Hello {
        port: port.to_owned(),
        mode,
        from: None,
        log: None,
        replay_lines: Some(options.replay),
        client: Some(format!("serialgate console {}", env!("CARGO_PKG_VERSION"))),
    });
    let opening = async {
        let (mut sink, mut stream) = transport::connect(target, Some(port))
            .await
            .map_err(anyhow::Error::msg)?;
        sink.send(&json(&hello)?)
            .await
            .map_err(|e| anyhow::anyhow!("cannot send to the gateway: {e}"))?;
        let answer = first_answer(&mut stream, "hello").await?;
        anyhow::Ok((sink, stream, answer))
    };
    // Connecting is raced against the signals: they are caught from the
    // start, so they must end the wait for the gateway too.
    let (sink, mut stream, answer) = tokio::select! {
        opened = opening => opened?,
        (name, number) = signals.next() => {
            eprintln!("serialgate: {name} while attaching to {}: gave up", shown(port));
            return Ok(End::Signal(name, number).exit_code());
        }
    };
    let answer = match answer {
        ServerMessage::Error { code, message } => anyhow::bail!(
            "the gateway refused to attach to {}: {}: {}",
            shown(port),
            shown(&code),
            shown(&message)
        ),
        ServerMessage::Bye { reason } => {
            anyhow::bail!("the gateway ended the session: {}", shown(&reason))
        }
        answer => answer,
    };
    let mut session = Session::new(port, mode, options.replay);
    session.attached(answer).map_err(anyhow::Error::msg)?;

    // Raw mode from here to the end of this function, on every way out.
    let stdin = std::io::stdin();
    let raw = if stdin.is_terminal() {
        Some(raw_mode::RawMode::enter(&stdin)?)
    } else {
        None
    };

    let (to_gateway, gateway_rx) = mpsc::channel::<Frame>(8);
    let writer = crate::task::spawn(write_frames(sink, gateway_rx));
    let (to_screen, screen_rx) = mpsc::channel::<Vec<u8>>(8);
    let screen = crate::task::spawn(write_screen(screen_rx));
    let end = session_loop(
        &mut session,
        &mut stream,
        &mut signals,
        &to_gateway,
        &to_screen,
    )
    .await;

    // Leaving: the last frames and screen bytes go out, each within a
    // deadline, then the terminal is restored, then the farewell (unless
    // the terminal is stuck: a farewell would only wait behind it).
    let outbox = std::mem::take(&mut session.outbox);
    let to_the_gateway = async {
        for frame in outbox {
            if to_gateway.send(frame).await.is_err() {
                break;
            }
        }
        drop(to_gateway);
        let _ = writer.await;
    };
    let screen_bytes = std::mem::take(&mut session.screen);
    let to_the_screen = async {
        for bytes in screen_bytes {
            if to_screen.send(bytes).await.is_err() {
                break;
            }
        }
        drop(to_screen);
        let _ = screen.await;
    };
    let (_, screen_done) = tokio::join!(
        tokio::time::timeout(LEAVE_DEADLINE, to_the_gateway),
        tokio::time::timeout(LEAVE_DEADLINE, to_the_screen)
    );
    drop(raw);
    if screen_done.is_ok() {
        let farewell = session.farewell(&end);
        let mut out = tokio::io::stdout();
        let _ = tokio::time::timeout(LEAVE_DEADLINE, async {
            out.write_all(&farewell).await?;
            out.flush().await
        })
        .await;
    }
    Ok(end.exit_code())
}

/// The session's events until it ends.
async fn session_loop(
    session: &mut Session,
    stream: &mut FrameStream,
    signals: &mut Signals,
    to_gateway: &mpsc::Sender<Frame>,
    to_screen: &mpsc::Sender<Vec<u8>>,
) -> End {
    let mut stdin = tokio::io::stdin();
    let mut keys = vec![0u8; 4096];
    loop {
        // Not biased: a gateway that floods output must not starve the
        // keys (Ctrl-] . detaches during a flood), nor the other way round.
        let end = tokio::select! {
            (name, number) = signals.next() => Some(End::Signal(name, number)),
            permit = to_screen.reserve(), if !session.screen.is_empty() => match permit {
                Ok(permit) => {
                    if let Some(bytes) = session.screen.pop_front() {
                        permit.send(bytes);
                    }
                    None
                }
                Err(_) => Some(End::Failed("cannot write to the terminal".into())),
            },
            permit = to_gateway.reserve(), if !session.outbox.is_empty() => match permit {
                Ok(permit) => {
                    if let Some(frame) = session.outbox.pop_front() {
                        permit.send(frame);
                    }
                    None
                }
                Err(_) => Some(End::ServerClosed),
            },
            frame = stream.recv(), if session.screen.len() < SCREEN_HIGH => match frame {
                Ok(Some(frame)) => session.on_frame(frame),
                Ok(None) => Some(End::ServerClosed),
                Err(e) => Some(End::Failed(format!(
                    "the connection to the gateway failed: {}",
                    shown(&e.to_string())
                ))),
            },
            read = stdin.read(&mut keys), if session.outbox.len() < OUTBOX_HIGH => {
                match read {
                    Ok(0) => Some(End::InputClosed),
                    Ok(n) => session.on_keys(&keys[..n]),
                    Err(e) => Some(End::Failed(format!("cannot read the keyboard: {e}"))),
                }
            }
        };
        if let Some(end) = end {
            return end;
        }
    }
}

/// Hands frames to the gateway in order; closes the connection politely
/// when the session drops its sender.
async fn write_frames(mut sink: FrameSink, mut frames: mpsc::Receiver<Frame>) {
    while let Some(frame) = frames.recv().await {
        if sink.send(&frame).await.is_err() {
            return;
        }
    }
    sink.close().await;
}

/// Writes to the screen in order, each chunk flushed at once (a prompt has
/// no line feed to flush it).
async fn write_screen(mut chunks: mpsc::Receiver<Vec<u8>>) {
    let mut out = tokio::io::stdout();
    while let Some(bytes) = chunks.recv().await {
        if out.write_all(&bytes).await.is_err() || out.flush().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
