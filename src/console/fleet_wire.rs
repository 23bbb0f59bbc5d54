//! What travels between a serving gateway and a site for a person's
//! console on a port of that site. The site keeps the bytes: the serving
//! gateway reads ranges of a port's output (bounded) when the site says
//! the output now reaches further ([`HeadNotice`]), once for all its
//! watchers; a person's session (presence, write hold, typing, events)
//! runs at the site under `person@gateway`, opened with [`ConsoleOpen`],
//! kept alive with [`ConsoleKeep`], fed with [`InFrame`]s, and answering
//! with the attach protocol's JSON messages.

use serde::{Deserialize, Serialize};

use super::protocol::Hello;
use crate::config::TokenAccess;
use crate::fleet::forwarded_policy::ForwardedPolicy;

/// Most bytes of output one range read returns.
pub const MAX_RANGE: usize = 64 * 1024;
/// Longest session id a site takes (the serving gateway draws 16 hex).
pub const MAX_ID: usize = 32;

/// A person's console session opened at the site that owns the port.
#[derive(Debug, Serialize, Deserialize)]
pub struct ConsoleOpen {
    /// [`super::wire::VERSION`].
    pub v: u32,
    /// The session's id, drawn by the serving gateway (which listens for
    /// its messages before it asks): plain hex.
    pub id: String,
    /// The serving gateway it came through.
    pub gateway: String,
    /// The token (or `local` at the console socket) the serving gateway
    /// authorised the person with.
    pub token: String,
    /// That token's access.
    pub access: TokenAccess,
    /// The person, as the serving gateway names them.
    pub person: String,
    /// The person may decide lines waiting for approval (their token's or
    /// `[[people]]` entry's `approve`, as the serving gateway read it).
    #[serde(default)]
    pub approve: bool,
    /// The command policy what they type is judged by (their own, as the
    /// serving gateway's config defines it), besides the port's own.
    #[serde(default)]
    pub policy: Option<ForwardedPolicy>,
    /// The hello, with the port's name at the site.
    pub hello: Hello,
}

/// The site's answer to a [`ConsoleOpen`] or a [`ConsoleKeep`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsoleAnswer {
    /// Done: the session runs.
    Ok,
    /// The site knows no such session (it restarted, or let it go).
    Unknown,
    /// Refused: an error message starting with its code.
    Refused(String),
}

/// The serving gateway's word that a session is still wanted; a session
/// not kept for [`KEEP_FOR`] ends at the site (its hold freed).
#[derive(Debug, Serialize, Deserialize)]
pub struct ConsoleKeep {
    /// The session's id.
    pub id: String,
}

/// How often a serving gateway keeps its sessions.
pub const KEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(2);
/// How long a site keeps a session it is not told to keep.
pub const KEEP_FOR: std::time::Duration = std::time::Duration::from_secs(10);

/// A frame of a person to their session at the site, on its `in`
/// subject: a kind byte, then the payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InFrame {
    /// A JSON message of the attach protocol.
    Json(String),
    /// Bytes typed.
    Data(Vec<u8>),
    /// The person left.
    Close,
}

impl InFrame {
    /// The payload on the wire.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            InFrame::Json(text) => [b"J", text.as_bytes()].concat(),
            InFrame::Data(bytes) => [b"D", bytes.as_slice()].concat(),
            InFrame::Close => b"C".to_vec(),
        }
    }

    /// Reads a payload; `None` for what is none of these.
    pub fn decode(payload: &[u8]) -> Option<InFrame> {
        let (kind, rest) = payload.split_first()?;
        match kind {
            b'J' => String::from_utf8(rest.to_vec()).ok().map(InFrame::Json),
            b'D' => Some(InFrame::Data(rest.to_vec())),
            b'C' if rest.is_empty() => Some(InFrame::Close),
            _ => None,
        }
    }
}

/// A range of a port's output asked of its site.
#[derive(Debug, Serialize, Deserialize)]
pub struct RangeAsk {
    /// The port's name at the site.
    pub port: String,
    /// The first offset wanted; `None`: only where the output ends.
    pub from: Option<u64>,
    /// Most bytes wanted (at most [`MAX_RANGE`]).
    pub max: usize,
}

/// Where an answered range is: its first line is this as JSON, the rest
/// the bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeHead {
    /// The port's log (see the attach protocol's `attached.log`).
    pub log: String,
    /// The offset of the first byte sent (after `from` when retention
    /// dropped what was asked for).
    pub start: u64,
    /// Where the output ends now.
    pub head: u64,
}

/// A site's word that a port's output now reaches `head`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadNotice {
    /// The port's log.
    pub log: String,
    /// Where its output ends.
    pub head: u64,
}

/// An answered range on the wire.
pub fn encode_range(head: &RangeHead, bytes: &[u8]) -> Vec<u8> {
    let mut out = serde_json::to_vec(head).unwrap_or_default();
    out.push(b'\n');
    out.extend_from_slice(bytes);
    out
}

/// Reads an answered range, bounded: `None` when it is none, or carries
/// more than [`MAX_RANGE`] bytes.
pub fn decode_range(payload: &[u8]) -> Option<(RangeHead, &[u8])> {
    let at = memchr::memchr(b'\n', &payload[..payload.len().min(1024)])?;
    let head: RangeHead = serde_json::from_slice(&payload[..at]).ok()?;
    let bytes = &payload[at + 1..];
    (bytes.len() <= MAX_RANGE && head.log.len() <= 64).then_some((head, bytes))
}

/// Whether `id` is a session id a site takes: plain hex, bounded.
pub fn plain_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_ID && id.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_ranges_survive_the_wire_and_bad_ones_are_refused() {
        for frame in [
            InFrame::Json("{\"type\":\"who\"}".into()),
            InFrame::Data(b"show clock\r".to_vec()),
            InFrame::Close,
        ] {
            assert_eq!(InFrame::decode(&frame.encode()), Some(frame));
        }
        assert_eq!(InFrame::decode(b""), None);
        assert_eq!(InFrame::decode(b"X"), None);
        assert_eq!(InFrame::decode(b"J\xff"), None);
        let head = RangeHead {
            log: "00ab".into(),
            start: 7,
            head: 12,
        };
        let wire = encode_range(&head, b"SW1#\n");
        assert_eq!(decode_range(&wire), Some((head.clone(), &b"SW1#\n"[..])));
        assert_eq!(
            decode_range(&encode_range(&head, &vec![b'x'; MAX_RANGE + 1])),
            None
        );
        assert_eq!(decode_range(b"no json\nbytes"), None);
        assert!(plain_id("0123abcd") && !plain_id("") && !plain_id("a.b") && !plain_id("*"));
    }
}

/// The most of a transcript's end a site sends a serving gateway: a NATS
/// message's 1 MiB, less room for the rest.
pub const MAX_FLEET_TRANSCRIPT: u64 = 960 * 1024;

/// A serving gateway asking a site for the end of a port's transcript (a
/// person's download in its web view).
#[derive(Debug, Serialize, Deserialize)]
pub struct TranscriptAsk {
    /// [`crate::fleet::wire::VERSION`].
    pub v: u32,
    /// The port's name at the site.
    pub port: String,
}

/// A site's answer to a [`TranscriptAsk`]: a kind byte (`T` the
/// transcript's end, `O` the retained output, `E` why neither), then the
/// text.
pub fn encode_transcript(kind: u8, text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + text.len());
    out.push(kind);
    out.extend_from_slice(text.as_bytes());
    out
}
