//! One MCP session's view of the ports: its connections, their consume
//! cursors, and which connection is current.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::audit::Actor;

use crate::error::{ErrorCode, GateError};
use crate::gateway::GatewayPort;
use crate::matcher::Prompt;
use crate::port::Port;
use crate::settings::LineEnding;

/// How many resources one session may subscribe to.
pub const MAX_SUBSCRIPTIONS: usize = 64;

/// How many `send_command` outputs a session remembers for its resources.
const REMEMBERED_OUTPUTS: usize = 64;

/// A session's attachment to one port.
#[derive(Clone)]
pub struct Connection {
    /// The connection's name (the port's name).
    pub name: String,
    /// The port and its config.
    pub gateway_port: GatewayPort,
    /// This session's consume cursor on the port.
    pub cursor: u64,
    /// Prompt, triggers, pagers and errors that apply to this connection.
    pub profile: Arc<Profile>,
}

impl Connection {
    /// The running port this connection reads and writes (its config is
    /// in [`gateway_port`](Self::gateway_port)).
    pub fn port(&self) -> &Port {
        &self.gateway_port.port
    }
}

/// What a connection's reads and commands use by default: the preset's
/// values, overridden by the port's config and by `connect` arguments.
#[derive(Debug)]
pub struct Profile {
    /// The preset's name.
    pub preset: String,
    /// The default prompt.
    pub prompt: Prompt,
    /// Whether `prompt` is a regex (for display).
    pub prompt_is_regex: bool,
    /// What `send_text` appends by default.
    pub line_ending: LineEnding,
    /// Auto-reply `(trigger, reply)` pairs.
    pub auto_reply: Vec<(String, String)>,
    /// Pager prompts removed from cleaned output.
    pub pagers: Vec<Vec<u8>>,
    /// Patterns of error lines in cleaned output.
    pub error_patterns: Vec<regex::Regex>,
    /// The command that turns paging off, if the device has one.
    pub paging_off: Option<String>,
    /// The preset's modes and configuration commands.
    pub modes: crate::config::ModeRules,
    /// `modes`' prompt regexes, compiled once per connection.
    pub mode_prompts: crate::config::ModePrompts,
}

/// A cleaned output a `send_command` linked as a resource: the range and
/// the command whose echo is removed.
#[derive(Clone, Debug)]
pub struct RememberedOutput {
    /// The port.
    pub port: String,
    /// First byte.
    pub start: u64,
    /// One past the last byte (the prompt's start).
    pub end: u64,
    /// The command sent.
    pub command: String,
}

/// The state of one MCP session, shared by its concurrent tool calls.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Mutex<Inner>>,
}

impl Default for Session {
    fn default() -> Self {
        let actor = Actor {
            session: crate::audit::next_session(),
            client: "unknown".to_owned(),
            token: "local".to_owned(),
            person: None,
            config_token: false,
        };
        Session {
            inner: Arc::new(Mutex::new(Inner {
                actor,
                ..Inner::default()
            })),
        }
    }
}

#[derive(Default)]
struct Inner {
    /// Who this session is, for the audit trail and the write hold.
    actor: Actor,
    connections: BTreeMap<String, Connection>,
    /// Connections to ports of other sites (`site/port`), which live at
    /// the site (`mcp/fleet_forward.rs`), with the arguments of the
    /// `connect` that made each (to make it again at a site that lost
    /// it); `current` may name one.
    remote: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
    current: Option<String>,
    outputs: VecDeque<RememberedOutput>,
    /// Resource subscriptions by URI: each notifier task stops when its
    /// guard drops (unsubscribe, or the session's end).
    subscriptions: BTreeMap<String, tokio_util::sync::DropGuard>,
    /// By site, what tells that site of the session's end when it drops
    /// (`mcp/fleet_forward.rs`).
    farewells: BTreeMap<String, tokio_util::sync::DropGuard>,
    /// By site, what passes on that site's messages for this session's
    /// client (`mcp/fleet_relay.rs`).
    relays: BTreeMap<String, std::sync::Arc<super::fleet_relay::SiteRelay>>,
    _counted: Counted,
}

/// Counts a session state in the metrics while it lives.
struct Counted;

impl Default for Counted {
    fn default() -> Self {
        crate::metrics::session(1);
        Counted
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        crate::metrics::session(-1);
    }
}

impl Session {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }

    /// Who this session is.
    pub fn actor(&self) -> Actor {
        self.lock().actor.clone()
    }

    /// Names the session's client and caller (from the MCP handshake and
    /// the HTTP bearer token; `local` over stdio). The client chose its
    /// name: it is kept as a short printable [`label`](crate::error::label).
    pub fn identify(&self, client: Option<&str>, caller: &crate::access::Caller) {
        let mut inner = self.lock();
        if let Some(client) = client.filter(|c| !c.is_empty()) {
            inner.actor.client = crate::error::label(client);
        }
        inner.actor.token = caller.name.clone();
        inner.actor.config_token = caller.is_config_token();
    }

    /// Adds (or replaces) a connection and makes it current; the attach is
    /// an event of the port and of the audit trail.
    pub fn add(&self, conn: Connection) -> Option<Connection> {
        let actor = self.actor();
        conn.port().record_session_event(&actor, "attach");
        let mut inner = self.lock();
        inner.current = Some(conn.name.clone());
        inner.connections.insert(conn.name.clone(), conn)
    }

    /// Removes a connection (the current one falls back to another),
    /// letting go of its write hold; the detach is an event.
    pub fn remove(&self, name: &str) -> Option<Connection> {
        let actor = self.actor();
        let removed = {
            let mut inner = self.lock();
            let removed = inner.connections.remove(name);
            if inner.current.as_deref() == Some(name) {
                inner.current = inner.connections.keys().next_back().cloned();
            }
            removed
        };
        if let Some(conn) = &removed {
            conn.port().release_writer(actor.session);
            conn.port().alerts().remove_session(actor.session);
            conn.port().record_session_event(&actor, "detach");
        }
        removed
    }

    /// Notes a connection to `site/port` made through the fleet by a
    /// `connect` with `arguments` (as the site took them), and makes it
    /// current.
    pub fn add_remote(&self, name: &str, arguments: serde_json::Map<String, serde_json::Value>) {
        let mut inner = self.lock();
        inner.remote.insert(name.to_owned(), arguments);
        inner.current = Some(name.to_owned());
    }

    /// The arguments of the `connect` that made the connection to
    /// `site/port` through the fleet, if this session has one.
    pub fn remote_connect(&self, name: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
        self.lock().remote.get(name).cloned()
    }

    /// Forgets a connection made through the fleet (the current one falls
    /// back to another).
    pub fn remove_remote(&self, name: &str) {
        let mut inner = self.lock();
        inner.remote.remove(name);
        if inner.current.as_deref() == Some(name) {
            inner.current = inner.connections.keys().next_back().cloned();
        }
    }

    /// The current connection, when it is one made through the fleet.
    pub fn current_remote(&self) -> Option<String> {
        let inner = self.lock();
        inner
            .current
            .clone()
            .filter(|c| inner.remote.contains_key(c))
    }

    /// Keeps, until the session ends, what tells `site` of its end, made
    /// by `farewell` the first time only (under the session's lock: it
    /// must not use the session).
    pub fn farewell_at(&self, site: &str, farewell: impl FnOnce() -> tokio_util::sync::DropGuard) {
        let mut inner = self.lock();
        if !inner.farewells.contains_key(site) {
            inner.farewells.insert(site.to_owned(), farewell());
        }
    }

    /// The relay of `site`'s messages for this session's client, if one
    /// runs.
    pub fn relay(&self, site: &str) -> Option<std::sync::Arc<super::fleet_relay::SiteRelay>> {
        self.lock().relays.get(site).cloned()
    }

    /// Keeps `relay` for `site` until the session ends, unless one runs
    /// already; the one kept.
    pub fn keep_relay(
        &self,
        site: &str,
        relay: std::sync::Arc<super::fleet_relay::SiteRelay>,
    ) -> std::sync::Arc<super::fleet_relay::SiteRelay> {
        self.lock()
            .relays
            .entry(site.to_owned())
            .or_insert(relay)
            .clone()
    }

    /// Every connection made through the fleet, by name.
    pub fn remotes(&self) -> Vec<String> {
        self.lock().remote.keys().cloned().collect()
    }

    /// Whether this session has a connection by that name.
    pub fn has(&self, name: &str) -> bool {
        self.lock().connections.contains_key(name)
    }

    /// The named connection (or the current one when `None`), made current.
    pub fn get(&self, name: Option<&str>) -> Result<Connection, GateError> {
        let mut inner = self.lock();
        let name = match name.filter(|n| !n.is_empty()) {
            Some(n) => n.to_owned(),
            None => inner.current.clone().ok_or_else(|| {
                GateError::new(ErrorCode::UnknownConnection, "this session has no connection yet; call connect with a port from list_ports first")
            })?,
        };
        let conn = inner.connections.get(&name).cloned().ok_or_else(|| {
            let known: Vec<&str> = inner.connections.keys().map(String::as_str).collect();
            GateError::new(
                ErrorCode::UnknownConnection,
                format!(
                    "no connection named {} in this session (connected: {}); call connect first",
                    crate::error::shown(&name),
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            )
        })?;
        inner.current = Some(name);
        Ok(conn)
    }

    /// Every connection, by name.
    pub fn all(&self) -> Vec<Connection> {
        self.lock().connections.values().cloned().collect()
    }

    /// Moves a connection's consume cursor forward to `to` (never back:
    /// a concurrent call may have moved it further).
    pub fn advance(&self, name: &str, to: u64) {
        if let Some(c) = self.lock().connections.get_mut(name) {
            c.cursor = c.cursor.max(to);
        }
    }

    /// Sets a connection's consume cursor (clear_buffer: to the head).
    pub fn set_cursor(&self, name: &str, to: u64) -> Option<u64> {
        let mut inner = self.lock();
        let c = inner.connections.get_mut(name)?;
        let old = c.cursor;
        c.cursor = to.max(old);
        Some(old)
    }

    /// Keeps a resource subscription's guard; `false` (nothing kept) when
    /// the session has [`MAX_SUBSCRIPTIONS`] already. Subscribing again to
    /// the same URI replaces the old one.
    pub fn subscribe(&self, uri: &str, guard: tokio_util::sync::DropGuard) -> bool {
        let mut inner = self.lock();
        if inner.subscriptions.len() >= MAX_SUBSCRIPTIONS && !inner.subscriptions.contains_key(uri)
        {
            return false;
        }
        inner.subscriptions.insert(uri.to_owned(), guard);
        true
    }

    /// Ends a resource subscription; whether there was one.
    pub fn unsubscribe(&self, uri: &str) -> bool {
        self.lock().subscriptions.remove(uri).is_some()
    }

    /// Remembers a linked output so its resource can remove the echo.
    pub fn remember(&self, out: RememberedOutput) {
        let mut inner = self.lock();
        if inner.outputs.len() == REMEMBERED_OUTPUTS {
            inner.outputs.pop_front();
        }
        inner.outputs.push_back(out);
    }

    /// The remembered output with this range, if any.
    pub fn remembered(&self, port: &str, start: u64, end: u64) -> Option<RememberedOutput> {
        self.lock()
            .outputs
            .iter()
            .rev()
            .find(|o| o.port == port && o.start == start && o.end == end)
            .cloned()
    }
}
