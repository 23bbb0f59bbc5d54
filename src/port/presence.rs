//! Who is at a port: the people attached with a console client, and a
//! signal that wakes everyone watching whenever they or the write holder
//! change, so that each console hears of joins, leaves and take-overs at
//! once (and `status` can show them).

use std::time::SystemTime;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::Port;

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
    port: Port,
    session: u64,
}

impl Drop for PresenceGuard {
    fn drop(&mut self) {
        crate::sync::lock(&self.port.shared.people).retain(|p| p.session != self.session);
        self.port.presence_changed();
    }
}

impl Port {
    /// Puts `participant` on the port's list until the guard drops.
    pub fn join(&self, participant: Participant) -> PresenceGuard {
        let session = participant.session;
        crate::sync::lock(&self.shared.people).push(participant);
        self.presence_changed();
        PresenceGuard {
            port: self.clone(),
            session,
        }
    }

    /// The people attached now, in the order they came.
    pub fn people(&self) -> Vec<Participant> {
        crate::sync::lock(&self.shared.people).clone()
    }

    /// Changes whenever someone joins or leaves, or the write holder
    /// changes.
    pub fn watch_presence(&self) -> watch::Receiver<u64> {
        self.shared.presence.subscribe()
    }

    /// Wakes every watcher of [`Port::watch_presence`].
    pub(super) fn presence_changed(&self) {
        self.shared
            .presence
            .send_modify(|generation| *generation += 1);
    }
}
