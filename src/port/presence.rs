//! Who is at a port: the people attached with a console client, and a
//! signal that wakes everyone watching whenever they or the write holder
//! change, so that each console hears of joins, leaves and take-overs at
//! once (and `status` can show them). The list and the signal are kept by
//! the port's hold part (`sharing.rs`); this file says who a participant is
//! and keeps one on the list for as long as they are attached.

use std::time::SystemTime;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
/// Someone attached to a port with a console client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Participant {
    /// The session number in this daemon (people and agents share the
    /// numbering, so a holder's `session` says which one it is).
    pub session: u64,
    /// How others see them, e.g. `alice on console`.
    pub who: String,
    /// Since when (RFC 3339).
    pub since: String,
    /// Watching only (`--spy`): never writes.
    pub spy: bool,
}

impl Participant {
    /// A participant starting now.
    pub fn now(session: u64, who: String, spy: bool) -> Participant {
        Participant {
            session,
            who,
            since: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            spy,
        }
    }
}

/// Keeps a participant on the port's list; dropping it (however the
/// console session ends) takes them off and tells the others.
pub struct PresenceGuard {
    leave: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl PresenceGuard {
    /// A guard that runs `leave` (takes the participant off the list and
    /// wakes the watchers) when it drops.
    pub fn new(leave: impl FnOnce() + Send + Sync + 'static) -> PresenceGuard {
        PresenceGuard {
            leave: Some(Box::new(leave)),
        }
    }
}

impl Drop for PresenceGuard {
    fn drop(&mut self) {
        if let Some(leave) = self.leave.take() {
            leave();
        }
    }
}
