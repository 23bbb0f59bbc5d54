//! The words every part of a port shares: where the port is in its life
//! ([`PortState`]), what happened to it ([`PortEvent`] and the [`Events`]
//! history `status` shows), and the deadlines of its writes and of a
//! `down` port's retries. Nothing here knows the port itself, so every
//! other file of `port/` may use it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How long a single write may take before it is reported as `timeout`
/// (a line held by hardware flow control must not hang a call forever).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a `down` port is retried when its path does not reappear.
pub const DOWN_RETRY: Duration = Duration::from_secs(60);

/// How many recent events `status` shows.
const EVENT_HISTORY: usize = 32;

/// Where a port is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PortState {
    /// Being opened for the first time.
    Opening,
    /// Open: output is being captured.
    Open,
    /// The device went away; a reopen is pending.
    Lost,
    /// Trying to open the device again.
    Reopening,
    /// The device kept failing right after opening (`down_after` quick
    /// losses in a row): it is retried slowly, every [`DOWN_RETRY`] or
    /// when its path reappears, and `status` says why.
    Down,
    /// Closed for good (shutdown or ad-hoc port released).
    Closed,
}

impl PortState {
    /// The state as one word, as results and metrics spell it (`lost`).
    pub fn as_str(self) -> &'static str {
        match self {
            PortState::Opening => "opening",
            PortState::Open => "open",
            PortState::Lost => "lost",
            PortState::Reopening => "reopening",
            PortState::Down => "down",
            PortState::Closed => "closed",
        }
    }
}

/// Something that happened to a port, shown by `status`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PortEvent {
    /// When, in milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    /// What happened.
    pub what: String,
}

/// A port's recent events, newest last, each also logged under the
/// port's name. Clones share the history, so a task of the port (the
/// confirm watch) records into the same one.
#[derive(Clone)]
pub struct Events {
    port: Arc<str>,
    recent: Arc<Mutex<VecDeque<PortEvent>>>,
}

impl Events {
    /// An empty history for the port named `port`.
    pub fn new(port: &str) -> Events {
        Events {
            port: Arc::from(port),
            recent: Arc::new(Mutex::new(VecDeque::new())),
        }
    }

    /// Records an event (logged, and kept among the newest
    /// [`EVENT_HISTORY`]) and returns it.
    pub fn record(&self, what: impl Into<String>) -> PortEvent {
        let what = what.into();
        tracing::info!(port = %self.port, "{what}");
        let at_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let event = PortEvent { at_unix_ms, what };
        let mut recent = crate::sync::lock(&self.recent);
        if recent.len() == EVENT_HISTORY {
            recent.pop_front();
        }
        recent.push_back(event.clone());
        event
    }

    /// The most recent events, oldest first.
    pub fn recent(&self) -> Vec<PortEvent> {
        crate::sync::lock(&self.recent).iter().cloned().collect()
    }

    /// What the newest event says, if there is one.
    pub fn last_what(&self) -> Option<String> {
        crate::sync::lock(&self.recent)
            .back()
            .map(|e| e.what.clone())
    }
}
