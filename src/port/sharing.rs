//! Shared ports: many sessions may watch a port, one at a time holds it for
//! writing (conserver's model). [`Sharing`] is the port's part for this:
//! the write holder, the people attached with a console client
//! (`presence.rs`) and the signal that wakes everyone watching when either
//! changes. Every write by a session goes through the handle's `write_as`,
//! which asks this part for the hold before it writes.

use std::time::SystemTime;

use std::sync::Mutex;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::presence::Participant;
use crate::audit::Actor;
use crate::error::{GateError, HeldBy};

/// The session that holds a port for writing.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Holder {
    /// The session's number in this daemon.
    pub session: u64,
    /// Session, client and token, for people.
    pub who: String,
    /// Since when (RFC 3339).
    pub since: String,
    /// The holder's token name (`local` over stdio), so that a take-over
    /// can tell a session of the caller's own token from another token's.
    #[serde(skip)]
    #[schemars(skip)]
    pub token: String,
    /// `token` is a `[[tokens]]` entry of this gateway's config, whose
    /// removal or loss of write access by a reload ends the hold.
    #[serde(skip)]
    #[schemars(skip)]
    pub config_token: bool,
}

impl Holder {
    fn of(actor: &Actor) -> Holder {
        Holder {
            session: actor.session,
            who: actor.describe(),
            since: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            token: actor.token.clone(),
            config_token: actor.config_token,
        }
    }
}

/// How [`Sharing::take`] changed the hold.
pub enum Taken {
    /// The actor held it already: nothing changed.
    Already,
    /// The port was free; the actor holds it now.
    Free,
    /// The actor took it from the holder described here.
    From(String),
}

/// The port's hold and presence: who holds it for writing, who is attached
/// at its console, and a generation bumped whenever either changes.
pub struct Sharing {
    /// The session holding the port for writing.
    holder: Mutex<Option<Holder>>,
    /// The people attached with a console client.
    people: Mutex<Vec<Participant>>,
    /// Bumped when `people` or `holder` change.
    presence: watch::Sender<u64>,
}

impl Default for Sharing {
    fn default() -> Self {
        Sharing::new()
    }
}

impl Sharing {
    /// Nobody holding, nobody attached.
    pub fn new() -> Sharing {
        Sharing {
            holder: Mutex::new(None),
            people: Mutex::new(Vec::new()),
            presence: watch::Sender::new(0),
        }
    }

    fn lock_holder(&self) -> std::sync::MutexGuard<'_, Option<Holder>> {
        crate::sync::lock(&self.holder)
    }

    /// Who holds the port for writing now.
    pub fn holder(&self) -> Option<Holder> {
        self.lock_holder().clone()
    }

    /// Makes `actor` the writer if `may_take` allows it, given the current
    /// holder (`None`: the port is free). `may_take` is asked under the
    /// hold's lock, so the holder it judges is the one replaced, and it is
    /// not asked when `actor` already holds the port. Wakes the watchers
    /// when the hold changed.
    pub fn take(
        &self,
        actor: &Actor,
        may_take: impl FnOnce(Option<&Holder>) -> Result<(), GateError>,
    ) -> Result<Taken, GateError> {
        let taken = {
            let mut holder = self.lock_holder();
            if holder.as_ref().is_some_and(|h| h.session == actor.session) {
                return Ok(Taken::Already);
            }
            may_take(holder.as_ref())?;
            match holder.replace(Holder::of(actor)) {
                Some(previous) => Taken::From(previous.who),
                None => Taken::Free,
            }
        };
        self.changed();
        Ok(taken)
    }

    /// Lets go of the write hold if `session` has it; returns the hold let
    /// go of (and wakes the watchers), if any.
    pub fn release(&self, session: u64) -> Option<Holder> {
        let released = {
            let mut holder = self.lock_holder();
            match holder.as_ref() {
                Some(h) if h.session == session => holder.take(),
                _ => None,
            }
        };
        if released.is_some() {
            self.changed();
        }
        released
    }

    /// Puts `participant` on the list and wakes the watchers.
    pub fn join(&self, participant: Participant) {
        crate::sync::lock(&self.people).push(participant);
        self.changed();
    }

    /// Takes `session` off the list and wakes the watchers.
    pub fn leave(&self, session: u64) {
        crate::sync::lock(&self.people).retain(|p| p.session != session);
        self.changed();
    }

    /// The people attached now, in the order they came.
    pub fn people(&self) -> Vec<Participant> {
        crate::sync::lock(&self.people).clone()
    }

    /// Changes whenever someone joins or leaves, or the write holder
    /// changes.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.presence.subscribe()
    }

    /// Wakes every watcher of [`Sharing::watch`].
    fn changed(&self) {
        self.presence.send_modify(|generation| *generation += 1);
    }
}

/// The refusal of a write to `port` while `holder` has it.
pub fn busy(port: &str, holder: &Holder) -> GateError {
    GateError::held(HeldBy {
        port: port.to_owned(),
        who: holder.who.clone(),
        since: holder.since.clone(),
    })
}
