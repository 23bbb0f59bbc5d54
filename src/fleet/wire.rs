//! What travels between the fleet's gateways, as JSON: a site's
//! announcement of its ports, a tool call forwarded to a site, and its
//! answer. A member is not trusted with what the others show: an
//! announcement is bounded (its size, its ports, every name and text)
//! and cleaned before a serving gateway keeps it, and what cannot be
//! kept is dropped and counted.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::TokenAccess;
use crate::port::PortState;

/// The wire format's version; a message of another is refused, and the
/// refusal names both. 2: a forwarded call carries its token's command
/// policy, which a site reading version 1 would skip without a word, so
/// such a site refuses the call instead of running it unjudged. A fleet
/// is upgraded together: a member of another version is not heard.
pub const VERSION: u32 = 2;
/// Largest announcement a serving gateway reads.
pub const MAX_ANNOUNCEMENT: usize = 256 * 1024;
/// Most ports a serving gateway keeps of one site's announcement.
pub const MAX_PORTS_PER_SITE: usize = 1024;
/// Longest port name kept (a configured name is shorter).
pub const MAX_PORT_NAME: usize = 64;
/// Longest preset name or write holder kept, after cleaning.
pub const MAX_TEXT: usize = 128;
/// Longest last line of a port kept, after cleaning: the characters a
/// site shows ([`crate::port::tail::LAST_LINE_CHARS`]), each up to 4
/// bytes.
pub const MAX_LAST_LINE: usize = 4 * crate::port::tail::LAST_LINE_CHARS;
/// Largest forwarded call or answer (NATS's default payload limit).
pub const MAX_CALL: usize = 1024 * 1024;

/// A site's ports as it announces them.
#[derive(Debug, Serialize, Deserialize)]
pub struct Announcement {
    /// [`VERSION`].
    pub v: u32,
    /// Every port of the site.
    pub ports: Vec<AnnouncedPort>,
}

/// One port as a site announces it, and (cleaned) as a serving gateway
/// keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnnouncedPort {
    /// The port's name at its site.
    pub name: String,
    /// Its state there.
    pub state: PortState,
    /// Its preset.
    pub preset: String,
    /// Who holds it for writing, as the site shows it.
    pub writer: Option<String>,
    /// How many people watch it at a console.
    pub people: u32,
    /// How many lines wait there for a person's approval.
    #[serde(default)]
    pub waiting: u32,
    /// Bytes the device sent since the site's gateway started.
    #[serde(default)]
    pub bytes_read: u64,
    /// Bytes written to the device since then.
    #[serde(default)]
    pub bytes_written: u64,
    /// The last line of its output as a terminal would leave it (what
    /// the ports page shows); empty in an announcement that would
    /// otherwise be over [`MAX_ANNOUNCEMENT`].
    #[serde(default)]
    pub last_line: String,
}

/// What a serving gateway kept of an announcement.
#[derive(Debug)]
pub struct Heard {
    /// The ports kept, cleaned.
    pub ports: Vec<AnnouncedPort>,
    /// How many were dropped (bad names, over [`MAX_PORTS_PER_SITE`]).
    pub dropped: usize,
}

/// A text of a member bounded and cleaned as the gateway shows device
/// text ([`crate::clean::clean_field`]), then cut to [`MAX_TEXT`] bytes.
fn cleaned(text: &str) -> String {
    cleaned_to(text, MAX_TEXT)
}

/// [`cleaned`], cut to `max` bytes.
fn cleaned_to(text: &str, max: usize) -> String {
    let bounded = &text.as_bytes()[..text.len().min(max * 4)];
    // Cleaned as device text, then one line: a line end a member sends
    // would start a line of its own in a log or a list.
    let mut clean: String = crate::clean::clean_field(bounded)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if clean.len() > max {
        let cut = (0..=max)
            .rev()
            .find(|&i| clean.is_char_boundary(i))
            .unwrap_or(0);
        clean.truncate(cut);
    }
    clean
}

/// A member's text as one line of printable characters (controls and the
/// characters that reorder text as `?`), at most `max` bytes: longer than
/// [`cleaned`] keeps, for a message a person or an agent reads whole.
pub fn one_line(text: &str, max: usize) -> String {
    let mut out = String::new();
    for c in text.chars() {
        let c = if c.is_control() || crate::clean::reorders(c) {
            '?'
        } else {
            c
        };
        if out.len() + c.len_utf8() > max {
            break;
        }
        out.push(c);
    }
    out
}

/// Whether a site's port name may be shown as `site/port`: a configured
/// name's characters, at most [`MAX_PORT_NAME`] bytes.
pub fn plain_port_name(name: &str) -> bool {
    name.len() <= MAX_PORT_NAME
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// Reads an announcement as a serving gateway keeps it; `Err` says why
/// the whole message was dropped.
pub fn read_announcement(payload: &[u8]) -> Result<Heard, String> {
    if payload.len() > MAX_ANNOUNCEMENT {
        return Err(format!(
            "{} bytes, more than the {MAX_ANNOUNCEMENT} an announcement may have",
            payload.len()
        ));
    }
    let raw: Announcement =
        serde_json::from_slice(payload).map_err(|e| format!("not an announcement: {e}"))?;
    if raw.v != VERSION {
        return Err(format!("version {} (this gateway reads {VERSION})", raw.v));
    }
    let total = raw.ports.len();
    let mut ports: Vec<AnnouncedPort> = raw
        .ports
        .into_iter()
        .filter(|p| plain_port_name(&p.name))
        .take(MAX_PORTS_PER_SITE)
        .map(|p| AnnouncedPort {
            preset: cleaned(&p.preset),
            writer: p.writer.as_deref().map(cleaned),
            last_line: cleaned_to(&p.last_line, MAX_LAST_LINE),
            ..p
        })
        .collect();
    ports.sort_by(|a, b| a.name.cmp(&b.name));
    ports.dedup_by(|a, b| a.name == b.name);
    Ok(Heard {
        dropped: total - ports.len(),
        ports,
    })
}

/// A tool call a serving gateway forwards to the site that owns the port.
#[derive(Debug, Serialize, Deserialize)]
pub struct ForwardedCall {
    /// [`VERSION`].
    pub v: u32,
    /// The serving gateway it came through.
    pub gateway: String,
    /// The calling MCP session's number at the serving gateway: calls of
    /// one session share one session at the site (connections, cursors).
    pub session: u64,
    /// The token the serving gateway authorised the call for.
    pub token: String,
    /// That token's access.
    pub access: TokenAccess,
    /// Whether the token may log in with stored credentials.
    pub use_credentials: bool,
    /// The agent's client, as it named itself.
    pub client: String,
    /// The tool.
    pub tool: String,
    /// Its arguments, port names as the site knows them.
    pub arguments: Map<String, Value>,
    /// A resource to read instead of calling a tool (`tool` is then
    /// `read_resource`), its URI naming the port as the site knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The token's command policy, which the site judges the call's
    /// lines under as well as under the port's own
    /// (`fleet/forwarded_policy.rs`); `None`: the token has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<super::forwarded_policy::ForwardedPolicy>,
    /// The call's number at the serving gateway, which a
    /// [`CallCancelled`] names; 0: none.
    #[serde(default)]
    pub call: u64,
    /// What the site tells the agent's client while the call runs
    /// (`fleet/client_relay.rs`): where (the id the serving gateway drew
    /// for its session with this site), and what the client takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_events: Option<super::client_relay::ClientEvents>,
    /// Present when the agent's client speaks without a session and may
    /// be asked in the call's result (MCP 2026-07-28): the site then asks
    /// its user there, as for a local call of such a client, and takes
    /// the answers of the second round. A site that does not read this
    /// has people decide, as for any client it cannot ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_in_result: Option<AskedInResult>,
}

/// A call of a client asked in its result: what its second round brings
/// back of the first (nothing in the first).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AskedInResult {
    /// The user's answers, by the keys of the first round's questions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<std::collections::BTreeMap<String, Value>>,
    /// The first round's sealed state, as the client sent it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

/// A serving gateway's word to a site that the agent cancelled a call.
#[derive(Debug, Serialize, Deserialize)]
pub struct CallCancelled {
    /// [`VERSION`].
    pub v: u32,
    /// The serving gateway, as its calls name it.
    pub gateway: String,
    /// The call's number there ([`ForwardedCall::call`]).
    pub call: u64,
}

/// A serving gateway's word to a site that one of its MCP sessions ended.
#[derive(Debug, Serialize, Deserialize)]
pub struct SessionEnded {
    /// [`VERSION`].
    pub v: u32,
    /// The serving gateway, as its calls name it.
    pub gateway: String,
    /// The session's number there, as its calls name it.
    pub session: u64,
}

/// A serving gateway's word to a site that it lives
/// (`fleet/heartbeat.rs`).
#[derive(Debug, Serialize, Deserialize)]
pub struct Alive {
    /// [`VERSION`].
    pub v: u32,
    /// The serving gateway, as its calls name it.
    pub gateway: String,
}

/// Largest [`SessionEnded`], [`Alive`] or [`CallCancelled`] a site reads.
pub const MAX_SESSION_ENDED: usize = 1024;

/// A site's answer: the tool's result as MCP sends it, or why the site
/// could not run the call.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallAnswer {
    /// The `CallToolResult`, as JSON.
    Result(Value),
    /// The call was not run: an error message starting with its code.
    Refused(String),
}

/// Largest alert message a serving gateway reads.
pub const MAX_ALERT: usize = 16 * 1024;
/// Longest alert text kept (a site's own alerts are cut at 200 bytes).
pub const MAX_ALERT_TEXT: usize = 200;
/// Longest watch name kept.
pub const MAX_WATCH_NAME: usize = 64;

/// An alert of a configured watch as a site's gateway publishes it to
/// its stream (`serialgate.from.<SITE>.alerts`), and as a serving gateway
/// reads it back: the port's alert with the wire's version.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SiteAlert {
    /// [`VERSION`].
    pub v: u32,
    /// The alert's id at its site (ids start at 1 again when the site's
    /// gateway does).
    pub id: u64,
    /// The port's name at its site.
    pub port: String,
    /// The watch that matched.
    pub watch: String,
    /// How bad it is.
    pub severity: crate::config::watches::Severity,
    /// When, in milliseconds since the Unix epoch, at the site.
    pub at_unix_ms: u64,
    /// The matched text.
    pub text: String,
    /// First byte of the match in the port's OutputLog at the site.
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
}

impl SiteAlert {
    /// `alert` as its site publishes it.
    pub fn of(alert: &crate::port::alerts::Alert) -> SiteAlert {
        SiteAlert {
            v: VERSION,
            id: alert.id,
            port: alert.port.clone(),
            watch: alert.watch.clone(),
            severity: alert.severity,
            at_unix_ms: alert.at_unix_ms,
            text: alert.text.clone(),
            start: alert.start,
            end: alert.end,
        }
    }
}

/// Reads an alert of `site`'s stream as a serving gateway shows it: its
/// port named `site/port`, its watch name and text bounded and cleaned;
/// `Err` says why it was dropped. The site is the stream's (its domain),
/// never the payload's.
pub fn read_alert(site: &str, payload: &[u8]) -> Result<crate::port::alerts::Alert, String> {
    if payload.len() > MAX_ALERT {
        return Err(format!(
            "{} bytes, more than the {MAX_ALERT} an alert may have",
            payload.len()
        ));
    }
    let raw: SiteAlert =
        serde_json::from_slice(payload).map_err(|e| format!("not an alert: {e}"))?;
    if raw.v != VERSION {
        return Err(format!("version {} (this gateway reads {VERSION})", raw.v));
    }
    if !plain_port_name(&raw.port) {
        return Err("its port's name is no port name".into());
    }
    Ok(crate::port::alerts::Alert {
        id: raw.id,
        port: format!("{site}/{}", raw.port),
        watch: cleaned_to(&raw.watch, MAX_WATCH_NAME),
        severity: raw.severity,
        at_unix_ms: raw.at_unix_ms,
        text: cleaned_to(&raw.text, MAX_ALERT_TEXT),
        start: raw.start,
        end: raw.end,
        session_watch: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_hostile_alert_is_bounded_and_cleaned_and_named_after_its_stream() {
        let alert = json!({"v": 2, "id": 7, "port": "sw1", "watch": "crash\u{1b}]0;x\u{7}\n",
            "severity": "critical", "at_unix_ms": 1, "text": format!("\u{1b}[2Jboom\r\n{}", "x".repeat(5000)),
            "start": 10, "end": 14});
        let read = read_alert("dc1", alert.to_string().as_bytes()).unwrap();
        assert_eq!(read.port, "dc1/sw1");
        assert_eq!(read.watch, "crash");
        assert!(read.text.starts_with("boom"), "{:?}", read.text);
        assert!(
            read.text.len() <= MAX_ALERT_TEXT && !read.text.contains(char::is_control),
            "{:?}",
            read.text
        );
        let elsewhere = json!({"v": 2, "id": 1, "port": "../dc2/sw1", "watch": "w",
            "severity": "info", "at_unix_ms": 1, "text": "t", "start": 0, "end": 1});
        assert!(read_alert("dc1", elsewhere.to_string().as_bytes()).is_err());
        assert!(read_alert("dc1", &vec![b' '; MAX_ALERT + 1]).is_err());
    }

    #[test]
    fn a_hostile_announcement_is_bounded_and_cleaned() {
        let long = "x".repeat(10_000);
        let payload = json!({"v": 2, "ports": [
            {"name": "sw1", "state": "open", "preset": "cisco\u{1b}]0;pwned\u{7}_ios\u{1b}[31m", "writer": format!("a\r\nb{long}"), "people": 2,
             "last_line": format!("\u{1b}]0;title\u{7}SW1#\u{202e}\r\n{long}")},
            {"name": "bad\nname", "state": "open", "preset": "p", "writer": null, "people": 0},
            {"name": long, "state": "open", "preset": "p", "writer": null, "people": 0},
            {"name": "sw1", "state": "lost", "preset": "p", "writer": null, "people": 0},
        ]});
        let heard = read_announcement(payload.to_string().as_bytes()).unwrap();
        assert_eq!(heard.ports.len(), 1);
        assert_eq!(heard.dropped, 3);
        assert_eq!(heard.ports[0].preset, "cisco_ios");
        let writer = heard.ports[0].writer.as_ref().unwrap();
        assert!(
            writer.len() <= MAX_TEXT && !writer.contains(char::is_control),
            "{writer:?}"
        );
        let last_line = &heard.ports[0].last_line;
        assert!(last_line.starts_with("SW1#"), "{last_line:?}");
        assert!(
            last_line.len() <= MAX_LAST_LINE
                && !last_line.contains(char::is_control)
                && !last_line.contains('\u{202e}'),
            "{last_line:?}"
        );
        assert!(read_announcement(&vec![b' '; MAX_ANNOUNCEMENT + 1]).is_err());
        assert!(read_announcement(b"{\"v\":1,\"ports\":[]}").is_err());
        let unknown_state = json!({"v": 2, "ports": [{"name": "a", "state": "on fire", "preset": "", "writer": null, "people": 0}]});
        assert!(read_announcement(unknown_state.to_string().as_bytes()).is_err());
    }
}
