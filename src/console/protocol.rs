//! The attach protocol: how a person's client (the `serialgate console`
//! terminal client, later the browser view) watches a port and types into
//! it. The same frames travel over a WebSocket (`/ports/{name}/console` on
//! the HTTP listener) and over the local console socket; only their
//! envelope differs:
//!
//! - over a WebSocket, one frame per message: a text message is a
//!   [`ClientMessage`] or [`ServerMessage`] as JSON, a binary message is
//!   data;
//! - over the Unix socket, each frame is a kind byte ([`KIND_JSON`] or
//!   [`KIND_DATA`]), its payload's length as a big-endian `u32`, and the
//!   payload ([`encode_frame`], [`FrameDecoder`]).
//!
//! Data from the server is a [`DataChunk`]: the OutputLog offset of its
//! first byte (big-endian `u64`) and the bytes, so that a client that
//! reconnects names the offset it has seen up to (`from` in its
//! [`Hello`]) and loses nothing and sees nothing twice. Data from the
//! client is the bytes a person typed, written to the device under the
//! port's one write hold.
//!
//! A session: the client sends [`ClientMessage::Hello`] (or
//! [`ClientMessage::List`] for the port list, answered and closed); the
//! server answers [`ServerMessage::Attached`], then replays (the last
//! `replay_lines` lines, or from `from`), then streams live. Events (who
//! attached or left, who holds the write, state changes, bytes that
//! retention dropped before the client saw them, lines waiting for a
//! person's approval) are JSON frames, never mixed into the bytes; a
//! person decides a waiting line with [`ClientMessage::Decide`].
//!
//! Sans I/O: this module encodes and decodes, the transports read and
//! write.

use serde::{Deserialize, Serialize};

pub use crate::port::Participant;
pub use crate::port::approvals::PendingApproval;
use crate::port::{Holder, PortState};

/// Frame kind byte on the Unix socket: a JSON message.
pub const KIND_JSON: u8 = b'J';
/// Frame kind byte on the Unix socket: data.
pub const KIND_DATA: u8 = b'D';
/// Bytes of the Unix socket frame header (kind and length).
pub const HEADER_BYTES: usize = 5;

/// The largest JSON message either side sends.
pub const MAX_JSON_BYTES: usize = 64 * 1024;
/// The largest data payload a client sends in one frame (what a person
/// types, or pastes, at once).
pub const MAX_CLIENT_DATA_BYTES: usize = 4096;
/// The largest run of output bytes the server sends in one frame.
pub const MAX_SERVER_DATA_BYTES: usize = 64 * 1024;
/// The largest frame payload accepted at all (a server data frame with
/// its offset); a longer length prefix ends the connection.
pub const MAX_FRAME_BYTES: usize = MAX_SERVER_DATA_BYTES + 8;

/// Lines replayed on attach unless the client asks otherwise.
pub const DEFAULT_REPLAY_LINES: u32 = 20;
/// The most lines a client may ask to replay.
pub const MAX_REPLAY_LINES: u32 = 1000;

/// How a person attaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Takes the write hold if it is free, else watches (and is told who
    /// holds it).
    Attach,
    /// Watches and never writes; typed bytes are refused.
    Spy,
    /// Watches without taking the write hold, and may take it later (the
    /// web view: an open tab must not lock agents out): `acquire`,
    /// `force`, or typing, which claims the hold when it is free.
    Watch,
    /// Takes the write hold, from whoever has it, where the caller's
    /// access allows taking over; the previous holder is told.
    Force,
}

/// The first message of a client that attaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    /// The port's name.
    pub port: String,
    /// Attach, spy or force.
    pub mode: Mode,
    /// Resume at this OutputLog offset (a reconnecting client: the end of
    /// what it has shown). Absent: replay the last `replay_lines` lines.
    #[serde(default)]
    pub from: Option<u64>,
    /// The log `from` is an offset in (`log` of the `attached` it had):
    /// when the port's log is another one now (the daemon restarted, an
    /// ad-hoc port was opened again), `from` is ignored and the last
    /// `replay_lines` lines are replayed instead.
    #[serde(default)]
    pub log: Option<String>,
    /// Lines to replay when `from` is absent (default
    /// [`DEFAULT_REPLAY_LINES`], at most [`MAX_REPLAY_LINES`]).
    #[serde(default)]
    pub replay_lines: Option<u32>,
    /// The client's name, e.g. `serialgate console 0.1.0` (bounded and
    /// escaped like every client-chosen name before it is stored or
    /// logged).
    #[serde(default)]
    pub client: Option<String>,
}

/// A JSON message from the client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMessage {
    /// Attach to a port (the first message).
    Hello(Hello),
    /// List the ports the caller may see, with their state, watchers and
    /// holder (instead of `hello`; answered with
    /// [`ServerMessage::Ports`], then the server closes).
    List,
    /// Replay the last `lines` lines of output.
    Replay {
        /// How many lines (at most [`MAX_REPLAY_LINES`]).
        lines: u32,
    },
    /// Who is here: answered with [`ServerMessage::Who`].
    Who,
    /// Send BREAK to the device (needs the write hold).
    Break {
        /// How long, in milliseconds (default 250).
        #[serde(default)]
        ms: Option<u64>,
    },
    /// Take the write hold if it is free.
    Acquire,
    /// Take the write hold from whoever has it (where access allows).
    Force,
    /// Give up the write hold and watch.
    Release,
    /// Approve or deny a request for approval the server listed in
    /// [`ServerMessage::Approvals`] (needs write access; not the
    /// requester's own token).
    Decide {
        /// The request's id.
        id: u64,
        /// The exact text the person was shown: a decision is for that
        /// text only.
        line: String,
        /// Approve (`true`) or deny.
        approve: bool,
    },
}

/// One port in [`ServerMessage::Ports`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PortSummary {
    /// The port's name.
    pub name: String,
    /// Its state.
    pub state: PortState,
    /// The people watching it.
    pub watchers: Vec<Participant>,
    /// Who holds it for writing.
    pub holder: Option<Holder>,
}

/// A JSON message from the server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    /// The answer to `hello`: who you are and what the port is doing. Data
    /// from `start` follows (the replay, then live output).
    Attached {
        /// The port's name.
        port: String,
        /// Your session number (compare with `holder.session`).
        session: u64,
        /// How others see you.
        you: String,
        /// Whether you hold the write now.
        writing: bool,
        /// Where the data that follows starts.
        start: u64,
        /// The OutputLog's head when you attached.
        head: u64,
        /// Which log the offsets are in: another value after a restart
        /// means offsets started again (give it back in `hello.log`).
        /// Empty from a gateway that does not say.
        #[serde(default)]
        log: String,
        /// The port's state.
        state: PortState,
        /// Who holds the write, if anyone.
        holder: Option<Holder>,
        /// The people watching.
        watchers: Vec<Participant>,
    },
    /// Data from `start` to `end` that follows is a replay (asked for with
    /// `replay`), not new output; live output resumes after it.
    Replay {
        /// The first replayed offset.
        start: u64,
        /// The offset after the last replayed byte.
        end: u64,
    },
    /// Who holds the write changed.
    Holder {
        /// The new holder, or none.
        holder: Option<Holder>,
        /// What happened, e.g. `alice on console (unix) took the write hold
        /// from session 3 (client claude-code, token lab)`.
        what: String,
    },
    /// The port's state changed (e.g. `lost`, then `open` after a replug).
    State {
        /// The new state.
        state: PortState,
    },
    /// Someone attached.
    Joined {
        /// Who.
        participant: Participant,
    },
    /// Someone left.
    Left {
        /// Who.
        participant: Participant,
    },
    /// The answer to `who`.
    Who {
        /// The people watching.
        watchers: Vec<Participant>,
        /// Who holds the write, if anyone.
        holder: Option<Holder>,
    },
    /// Output from `from` to `to` was dropped by retention before this
    /// client saw it; data continues at `to`.
    Truncated {
        /// The first offset lost.
        from: u64,
        /// Where data continues.
        to: u64,
    },
    /// A request of the client was refused (e.g. typing while spying, or
    /// while someone else holds the write). The session goes on.
    Error {
        /// The stable error code (`busy`, `forbidden`, `invalid_argument`,
        /// ...).
        code: String,
        /// What happened and what to do.
        message: String,
    },
    /// The answer to `list`.
    Ports {
        /// The ports the caller may see.
        ports: Vec<PortSummary>,
    },
    /// The requests waiting on this port for a person's approval, oldest
    /// first (at most 16; the next come as those are decided): sent on
    /// attach when there are any, and whenever one comes or goes.
    Approvals {
        /// The requests.
        pending: Vec<PendingApproval>,
    },
    /// The answer to a [`ClientMessage::Decide`] that was taken.
    Decided {
        /// The request's id.
        id: u64,
        /// Its text.
        line: String,
        /// Approved (`true`) or denied.
        approved: bool,
    },
    /// The server ends the session (the client is too slow, the port was
    /// removed, the daemon shuts down); it closes after this.
    Bye {
        /// Why.
        reason: String,
    },
}

/// A run of device output from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataChunk {
    /// The OutputLog offset of the first byte.
    pub offset: u64,
    /// The bytes.
    pub bytes: Vec<u8>,
}

impl DataChunk {
    /// The payload of a data frame: the offset, then the bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut payload = Vec::with_capacity(8 + self.bytes.len());
        payload.extend_from_slice(&self.offset.to_be_bytes());
        payload.extend_from_slice(&self.bytes);
        payload
    }

    /// Reads a data frame's payload; `None` if it is shorter than its
    /// offset.
    pub fn decode(payload: &[u8]) -> Option<DataChunk> {
        let (offset, bytes) = payload.split_first_chunk::<8>()?;
        Some(DataChunk {
            offset: u64::from_be_bytes(*offset),
            bytes: bytes.to_vec(),
        })
    }

    /// The offset after the last byte.
    pub fn end(&self) -> u64 {
        self.offset + self.bytes.len() as u64
    }
}

/// One frame, whatever the transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A JSON message (its text).
    Json(String),
    /// Data (a [`DataChunk`] payload from the server, typed bytes from the
    /// client).
    Data(Vec<u8>),
}

/// A frame for the Unix socket: kind byte, big-endian length, payload.
pub fn encode_frame(frame: &Frame) -> Vec<u8> {
    let (kind, payload) = match frame {
        Frame::Json(text) => (KIND_JSON, text.as_bytes()),
        Frame::Data(bytes) => (KIND_DATA, bytes.as_slice()),
    };
    let mut out = Vec::with_capacity(HEADER_BYTES + payload.len());
    out.push(kind);
    // A payload is never near 4 GiB: senders keep to the limits above.
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// Why a byte stream is not a sequence of frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The kind byte is neither [`KIND_JSON`] nor [`KIND_DATA`].
    UnknownKind(u8),
    /// The length prefix is over `limit`.
    TooLong {
        /// The announced length.
        len: usize,
        /// The most this side accepts.
        limit: usize,
    },
    /// A JSON frame is not UTF-8.
    NotUtf8,
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::UnknownKind(k) => write!(
                f,
                "unknown frame kind 0x{k:02x} (expected 'J' for JSON or 'D' for data)"
            ),
            FrameError::TooLong { len, limit } => {
                write!(f, "a frame of {len} bytes is over the limit of {limit}")
            }
            FrameError::NotUtf8 => f.write_str("a JSON frame is not UTF-8"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Splits a byte stream from the Unix socket into frames, however it was
/// chunked by reads.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    limit: usize,
}

impl FrameDecoder {
    /// A decoder refusing payloads over `limit` bytes (the server uses
    /// [`MAX_JSON_BYTES`], the client [`MAX_FRAME_BYTES`]).
    pub fn new(limit: usize) -> FrameDecoder {
        FrameDecoder {
            buf: Vec::new(),
            limit,
        }
    }

    /// Adds bytes read from the socket.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame, `Ok(None)` until one is complete. After an
    /// error the stream cannot be trusted: close the connection.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        let Some((header, rest)) = self.buf.split_first_chunk::<HEADER_BYTES>() else {
            return Ok(None);
        };
        let kind = header[0];
        if kind != KIND_JSON && kind != KIND_DATA {
            return Err(FrameError::UnknownKind(kind));
        }
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        if len > self.limit {
            return Err(FrameError::TooLong {
                len,
                limit: self.limit,
            });
        }
        if rest.len() < len {
            return Ok(None);
        }
        let payload = rest[..len].to_vec();
        self.buf.drain(..HEADER_BYTES + len);
        if kind == KIND_JSON {
            String::from_utf8(payload)
                .map(|text| Some(Frame::Json(text)))
                .map_err(|_| FrameError::NotUtf8)
        } else {
            Ok(Some(Frame::Data(payload)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_survive_every_chunking() {
        let frames = vec![
            Frame::Json(r#"{"type":"who"}"#.to_owned()),
            Frame::Data(
                DataChunk {
                    offset: 1 << 40,
                    bytes: b"SW1#".to_vec(),
                }
                .encode(),
            ),
            Frame::Data(Vec::new()),
            Frame::Json("{}".to_owned()),
        ];
        let stream: Vec<u8> = frames.iter().flat_map(encode_frame).collect();
        for chunk in 1..=stream.len() {
            let mut decoder = FrameDecoder::new(MAX_FRAME_BYTES);
            let mut got = Vec::new();
            for piece in stream.chunks(chunk) {
                decoder.push(piece);
                while let Some(frame) = decoder.next_frame().unwrap() {
                    got.push(frame);
                }
            }
            assert_eq!(got, frames, "chunks of {chunk}");
        }
    }

    #[test]
    fn bad_frames_are_refused_before_their_payload_is_read() {
        let mut decoder = FrameDecoder::new(MAX_JSON_BYTES);
        decoder.push(&[b'X', 0, 0, 0, 1]);
        assert_eq!(decoder.next_frame(), Err(FrameError::UnknownKind(b'X')));
        let mut decoder = FrameDecoder::new(MAX_JSON_BYTES);
        decoder.push(&[KIND_JSON, 0xff, 0xff, 0xff, 0xff]);
        assert!(matches!(
            decoder.next_frame(),
            Err(FrameError::TooLong {
                len: 4_294_967_295,
                ..
            })
        ));
        let mut decoder = FrameDecoder::new(MAX_JSON_BYTES);
        decoder.push(&encode_frame(&Frame::Data(vec![0xff])));
        decoder.buf[0] = KIND_JSON;
        assert_eq!(decoder.next_frame(), Err(FrameError::NotUtf8));
    }

    #[test]
    fn data_chunks_carry_their_offset() {
        let chunk = DataChunk {
            offset: 12345,
            bytes: b"show clock\r\n".to_vec(),
        };
        assert_eq!(DataChunk::decode(&chunk.encode()), Some(chunk.clone()));
        assert_eq!(chunk.end(), 12345 + 12);
        assert_eq!(DataChunk::decode(&[0; 7]), None);
    }

    #[test]
    fn client_messages_as_json() {
        let hello: ClientMessage =
            serde_json::from_str(r#"{"type":"hello","port":"sw1","mode":"spy"}"#).unwrap();
        assert_eq!(
            hello,
            ClientMessage::Hello(Hello {
                port: "sw1".into(),
                mode: Mode::Spy,
                from: None,
                log: None,
                replay_lines: None,
                client: None,
            })
        );
        let brk: ClientMessage = serde_json::from_str(r#"{"type":"break"}"#).unwrap();
        assert_eq!(brk, ClientMessage::Break { ms: None });
        assert!(
            serde_json::from_str::<ClientMessage>(
                r#"{"type":"hello","port":"sw1","mode":"attach","extra":1}"#
            )
            .is_err()
        );
        assert!(serde_json::from_str::<ClientMessage>(r#"{"type":"format_disk"}"#).is_err());
        let text = serde_json::to_string(&ClientMessage::Replay { lines: 20 }).unwrap();
        assert_eq!(text, r#"{"type":"replay","lines":20}"#);
    }

    #[test]
    fn server_messages_are_tagged() {
        let bye = serde_json::to_value(ServerMessage::Bye {
            reason: "too slow".into(),
        })
        .unwrap();
        assert_eq!(
            bye,
            serde_json::json!({"type": "bye", "reason": "too slow"})
        );
        let state = serde_json::to_value(ServerMessage::State {
            state: PortState::Lost,
        })
        .unwrap();
        assert_eq!(state, serde_json::json!({"type": "state", "state": "lost"}));
    }
}
