//! A person's terminal at the SSH door: the port menu, then the console of
//! the port they picked. The console is the one every door serves
//! ([`crate::console::attachment::serve`], over two channels of frames as
//! the WebSocket door does), read and typed through the console client's
//! own session state (`crate::console::client::Session`), so a person at
//! `ssh` sees the same messages and has the same escape keys (Ctrl-] then
//! a letter) as at `serialgate console`. Access is asked of
//! [`crate::access`] by the attachment, and kept current by the person's
//! [`Standing`]: a reload that removes them or their key ends the session.
//!
//! Two things the handler hears on the channel reach the console here
//! ([`Requests`]): a BREAK (OpenSSH's `~B`) is asked for as `Ctrl-] b`
//! asks, and the terminal's height sets how many lines of output an
//! attach and `Ctrl-] r` replay (a screenful). The console protocol has
//! no window size, and a serial device is never told one.

use std::time::Duration;

use russh::ChannelMsg;
use russh::keys::PublicKey;
use russh::server::Msg;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::target::{PortRequest, parse_exec};
use crate::access::Caller;
use crate::access::standing::Standing;
use crate::config::TokenAccess;
use crate::console::attachment::{self, OUTGOING_FRAMES, Person, SSH_CLIENT};
use crate::console::client::render::{ports_table, shown};
use crate::console::client::{End, Session};
use crate::console::protocol::{
    ClientMessage, DEFAULT_REPLAY_LINES, Frame, Hello, MAX_REPLAY_LINES, Mode, ServerMessage,
};
use crate::gateway::Gateway;

/// How the session channel is to start, as the handler heard it.
#[derive(Debug)]
pub enum Start {
    /// A shell: the port of the user name (`alice:sw1`), else the menu.
    Shell,
    /// An exec of a port name.
    Port(PortRequest),
    /// A refused exec or subsystem: why, said to the person.
    Refused(String),
}

/// The person's terminal as their client last said (pty-req,
/// window-change); 0 by 0 until it says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowSize {
    /// Columns.
    pub cols: u32,
    /// Rows.
    pub rows: u32,
}

/// Rows of a screen that are not the replay: the two lines saying who
/// attached, and the line the cursor is left on.
const ROWS_NOT_REPLAYED: u32 = 3;

impl WindowSize {
    /// How many lines of output fill the screen under serialgate's own
    /// lines: what an attach and `Ctrl-] r` replay. The default when the
    /// client gave no size.
    fn screenful(self) -> u32 {
        if self.rows == 0 {
            return DEFAULT_REPLAY_LINES;
        }
        self.rows
            .saturating_sub(ROWS_NOT_REPLAYED)
            .clamp(1, MAX_REPLAY_LINES)
    }
}

/// What the handler passes on from the session channel's requests.
pub struct Requests {
    /// How to start (shell or exec), once.
    pub start: oneshot::Receiver<Start>,
    /// The terminal's size, kept current.
    pub size: watch::Receiver<WindowSize>,
    /// BREAKs asked for (`~B`), with their length in ms.
    pub breaks: mpsc::Receiver<u32>,
}

impl Requests {
    /// Passes on to `session` what has come since it last looked, in the
    /// order the client asked: the handler hears a request before the keys
    /// sent after it reach the channel.
    fn apply(&mut self, session: &mut Session) {
        if self.size.has_changed().unwrap_or(false) {
            session.set_replay_lines(self.size.borrow_and_update().screenful());
        }
        while let Ok(length_ms) = self.breaks.try_recv() {
            session.request_break(Some(u64::from(length_ms)));
        }
    }
}

/// BREAKs that may wait for the console: more are refused.
pub const PENDING_BREAKS: usize = 4;

/// How long a channel may take to ask for a shell or a command.
const START_DEADLINE: Duration = Duration::from_secs(20);
/// How long the gateway may take to answer a hello or a list.
const ANSWER_DEADLINE: Duration = Duration::from_secs(10);
/// The longest line typed at the menu.
const MAX_MENU_LINE: usize = 80;

type Reader = russh::ChannelReadHalf;
type Writer = russh::ChannelWriteHalf<Msg>;

/// Serves one session channel until the person leaves, the gateway ends
/// the session or `shutdown`.
pub async fn run(
    gateway: Gateway,
    caller: Caller,
    key: PublicKey,
    from_user: Option<PortRequest>,
    channel: russh::Channel<Msg>,
    mut requests: Requests,
    shutdown: CancellationToken,
) {
    let (mut reader, writer) = channel.split();
    let request = match tokio::time::timeout(START_DEADLINE, &mut requests.start).await {
        Ok(Ok(Start::Port(request))) => Some(request),
        Ok(Ok(Start::Shell)) => from_user,
        Ok(Ok(Start::Refused(why))) => {
            let text = format!("[serialgate: {why}]\r\n");
            let _ = writer.extended_data_bytes(1, text).await;
            finish(&writer, 1).await;
            return;
        }
        _ => {
            finish(&writer, 1).await;
            return;
        }
    };
    let door = Door {
        gateway,
        caller,
        key,
        shutdown,
    };
    let code = door
        .serve(&mut reader, &writer, &mut requests, request)
        .await;
    finish(&writer, code).await;
}

/// Ends the channel with an exit status.
async fn finish(writer: &Writer, code: u32) {
    let _ = writer.exit_status(code).await;
    let _ = writer.eof().await;
    let _ = writer.close().await;
}

/// What one channel's person needs to attach.
struct Door {
    gateway: Gateway,
    caller: Caller,
    key: PublicKey,
    shutdown: CancellationToken,
}

/// How an attach went.
enum Attach {
    /// The gateway refused it (the port is not theirs, unknown): why.
    Refused(String),
    /// The session ran and ended.
    Ended(End),
}

impl Door {
    /// The menu until a port is picked (or `request` at once), then its
    /// console; returns the exit status.
    async fn serve(
        &self,
        reader: &mut Reader,
        writer: &Writer,
        requests: &mut Requests,
        request: Option<PortRequest>,
    ) -> u32 {
        let mut request = request;
        let direct = request.is_some();
        loop {
            let picked = match request.take() {
                Some(picked) => picked,
                None => match self.menu(reader, writer).await {
                    Some(picked) => picked,
                    None => return 0,
                },
            };
            match self.attach(reader, writer, requests, &picked).await {
                Attach::Ended(end) => {
                    return match end {
                        End::Detached | End::InputClosed => 0,
                        _ => 1,
                    };
                }
                Attach::Refused(why) => {
                    let text = format!("[serialgate: {}]\r\n", shown(&why));
                    if writer.data_bytes(text).await.is_err() || direct {
                        return 1;
                    }
                }
            }
        }
    }

    /// The person as the config in force has them, at every attach and
    /// list: one removed (or their key) since they signed in gets nothing.
    fn person(&self) -> Result<Person, String> {
        Ok(Person {
            standing: Standing::person(&self.caller.name, &self.gateway, self.key.clone())?,
            name: self.caller.name.clone(),
        })
    }

    /// Asks the gateway one thing on a new attachment: the first answer.
    async fn ask(
        &self,
        first: ClientMessage,
    ) -> Result<(mpsc::Sender<Frame>, mpsc::Receiver<Frame>, ServerMessage), String> {
        let (in_tx, in_rx) = mpsc::channel(OUTGOING_FRAMES);
        let (out_tx, mut out_rx) = mpsc::channel::<Frame>(OUTGOING_FRAMES);
        let person = self.person()?;
        crate::task::spawn(attachment::serve(
            self.gateway.clone(),
            person,
            None,
            in_rx,
            out_tx,
            self.shutdown.clone(),
        ));
        let json = serde_json::to_string(&first).map_err(|e| e.to_string())?;
        in_tx
            .send(Frame::Json(json))
            .await
            .map_err(|_| "the gateway closed the session".to_owned())?;
        let answer = match tokio::time::timeout(ANSWER_DEADLINE, out_rx.recv()).await {
            Ok(Some(Frame::Json(text))) => serde_json::from_str::<ServerMessage>(&text)
                .map_err(|e| format!("an answer this door does not understand: {e}"))?,
            Ok(Some(Frame::Data(_))) => return Err("the gateway sent data before answering".into()),
            Ok(None) => return Err("the gateway closed the session".into()),
            Err(_) => return Err("the gateway did not answer in time".into()),
        };
        Ok((in_tx, out_rx, answer))
    }

    /// The port menu: the ports this person reaches, then a line naming
    /// one. `None`: they left (an empty line, Ctrl-C, Ctrl-D, the end).
    async fn menu(&self, reader: &mut Reader, writer: &Writer) -> Option<PortRequest> {
        let table = match self.ask(ClientMessage::List).await {
            Ok((_, _, ServerMessage::Ports { ports })) => ports_table(&ports),
            Ok((_, _, ServerMessage::Bye { reason })) => format!("{}\n", shown(&reason)),
            Ok(_) => "the gateway did not list the ports\n".to_owned(),
            Err(e) => format!("{}\n", shown(&e)),
        };
        let mut text = format!(
            "serialgate: the ports {} reaches\r\n\r\n",
            shown(&self.caller.name)
        );
        text.push_str(&table.replace('\n', "\r\n"));
        writer.data_bytes(text).await.ok()?;
        loop {
            let prompt = "\r\nport (a name, or name:spy to watch only; empty line to leave): ";
            writer.data_bytes(prompt).await.ok()?;
            let line = read_line(reader, writer).await?;
            if line.trim().is_empty() {
                return None;
            }
            match parse_exec(line.trim().as_bytes()) {
                Ok(request) => return Some(request),
                Err(why) => {
                    let text = format!("[serialgate: {}]\r\n", shown(&why));
                    writer.data_bytes(text).await.ok()?;
                }
            }
        }
    }

    /// Attaches to `request`'s port and runs the console until it ends.
    async fn attach(
        &self,
        reader: &mut Reader,
        writer: &Writer,
        requests: &mut Requests,
        request: &PortRequest,
    ) -> Attach {
        // A person who may not write watches only, and is told so.
        let mode = if request.spy || self.caller.access < TokenAccess::Write {
            Mode::Spy
        } else {
            Mode::Attach
        };
        // A BREAK asked for at the menu was for no port: not this one's.
        while requests.breaks.try_recv().is_ok() {}
        let replay_lines = requests.size.borrow_and_update().screenful();
        let hello = ClientMessage::Hello(Hello {
            port: request.port.clone(),
            mode,
            from: None,
            log: None,
            replay_lines: Some(replay_lines),
            client: Some(SSH_CLIENT.to_owned()),
        });
        let (in_tx, mut out_rx, answer) = match self.ask(hello).await {
            Ok(asked) => asked,
            Err(e) => return Attach::Refused(e),
        };
        let mut session = Session::new(&request.port, mode, replay_lines);
        match answer {
            ServerMessage::Error { code, message } => {
                return Attach::Refused(format!("{code}: {message}"));
            }
            ServerMessage::Bye { reason } => return Attach::Refused(reason),
            answer => {
                if let Err(e) = session.attached(answer) {
                    return Attach::Refused(e);
                }
            }
        }
        tracing::info!(
            person = %self.caller.name,
            port = %request.port,
            "ssh: {} {}",
            if request.spy { "spying on" } else { "attached to" },
            request.port
        );
        let flushed = flush(&mut session, writer).await;
        let end = if !flushed {
            Some(End::Failed("the SSH channel closed".into()))
        } else {
            loop {
                let end = tokio::select! {
                    frame = out_rx.recv() => match frame {
                        Some(frame) => session.on_frame(frame),
                        None => Some(End::ServerClosed),
                    },
                    message = reader.wait() => match message {
                        Some(ChannelMsg::Data { data }) => {
                            // What the client asked before these keys, first.
                            requests.apply(&mut session);
                            session.on_keys(&data)
                        }
                        Some(ChannelMsg::Eof | ChannelMsg::Close) | None => Some(End::InputClosed),
                        Some(_) => None,
                    },
                    Some(length_ms) = requests.breaks.recv() => {
                        session.request_break(Some(u64::from(length_ms)));
                        None
                    }
                    Ok(()) = requests.size.changed() => {
                        session.set_replay_lines(requests.size.borrow_and_update().screenful());
                        None
                    }
                };
                for frame in session.take_outbox() {
                    if in_tx.send(frame).await.is_err() {
                        break;
                    }
                }
                if !flush(&mut session, writer).await {
                    break Some(End::Failed("the SSH channel closed".into()));
                }
                if let Some(end) = end {
                    break Some(end);
                }
            }
        };
        drop(in_tx);
        let end = end.unwrap_or(End::ServerClosed);
        let farewell = session.farewell(&end);
        let _ = writer.data_bytes(farewell).await;
        tracing::info!(person = %self.caller.name, port = %request.port, "ssh: left {} ({end:?})", request.port);
        Attach::Ended(end)
    }
}

/// Writes what the session has for the screen; `false` when the channel
/// is gone.
async fn flush(session: &mut Session, writer: &Writer) -> bool {
    for bytes in session.take_screen() {
        if writer.data_bytes(bytes).await.is_err() {
            return false;
        }
    }
    true
}

/// Reads one line at the menu, echoing what is typed (the person's
/// terminal is raw): printable characters, backspace, Enter. `None`:
/// Ctrl-C, Ctrl-D or the channel's end.
async fn read_line(reader: &mut Reader, writer: &Writer) -> Option<String> {
    let mut line = String::new();
    loop {
        let data = match reader.wait().await? {
            ChannelMsg::Data { data } => data,
            ChannelMsg::Eof | ChannelMsg::Close => return None,
            _ => continue,
        };
        let mut echo = Vec::new();
        for &byte in data.iter() {
            match byte {
                b'\r' | b'\n' => {
                    echo.extend_from_slice(b"\r\n");
                    writer.data_bytes(echo).await.ok()?;
                    return Some(line);
                }
                0x03 | 0x04 => return None,
                0x7f | 0x08 if line.pop().is_some() => {
                    echo.extend_from_slice(b"\x08 \x08");
                }
                0x20..=0x7e if line.len() < MAX_MENU_LINE => {
                    line.push(char::from(byte));
                    echo.push(byte);
                }
                _ => {}
            }
        }
        if !echo.is_empty() {
            writer.data_bytes(echo).await.ok()?;
        }
    }
}
