//! Shared ports: many sessions may watch a port, one at a time holds it for
//! writing (conserver's model). Every write by a session goes through
//! [`Port::write_as`], which checks the holder, then records the write in
//! the transcript and the audit trail.

use std::time::SystemTime;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Port;
use crate::audit::{Actor, AuditRecord};
use crate::error::{GateError, HeldBy};
use crate::transcript::SentRecord;

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
}

impl Holder {
    fn of(actor: &Actor) -> Holder {
        Holder {
            session: actor.session,
            who: actor.describe(),
            since: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            token: actor.token.clone(),
        }
    }
}

impl Port {
    fn lock_holder(&self) -> std::sync::MutexGuard<'_, Option<Holder>> {
        crate::sync::lock(&self.shared.holder)
    }

    /// Who holds the port for writing now.
    pub fn holder(&self) -> Option<Holder> {
        self.lock_holder().clone()
    }

    /// Makes `actor` the writer when nobody holds the port (or `actor`
    /// already does); otherwise `busy`, naming the holder. With
    /// `take_over` it takes the hold from anyone, unchecked: a session's
    /// take-over goes through [`Port::take_writer`] instead, which asks
    /// who may take it.
    pub fn claim_writer(&self, actor: &Actor, take_over: bool) -> Result<(), GateError> {
        self.take_writer(actor, |holder| match holder {
            Some(h) if !take_over => Err(self.busy(h)),
            _ => Ok(()),
        })
    }

    /// Makes `actor` the writer if `may_take` allows it, given the current
    /// holder (`None`: the port is free); the other holder becomes
    /// read-only. `may_take` is asked under the hold's lock, so the holder
    /// it judges is the one replaced, and it is not asked when `actor`
    /// already holds the port.
    pub fn take_writer(
        &self,
        actor: &Actor,
        may_take: impl FnOnce(Option<&Holder>) -> Result<(), GateError>,
    ) -> Result<(), GateError> {
        let taken_from = {
            let mut holder = self.lock_holder();
            if holder.as_ref().is_some_and(|h| h.session == actor.session) {
                return Ok(());
            }
            may_take(holder.as_ref())?;
            holder.replace(Holder::of(actor)).map(|h| h.who)
        };
        self.presence_changed();
        match taken_from {
            Some(previous) => self.record(format!(
                "take-over: {} took the write hold from {previous}",
                actor.describe()
            )),
            None => self.record(format!("{} holds the port for writing", actor.describe())),
        }
        Ok(())
    }

    /// The refusal of a write while `holder` has the port: `busy`, naming
    /// the holder; each door adds how its callers take the hold.
    fn busy(&self, holder: &Holder) -> GateError {
        GateError::held(HeldBy {
            port: self.name().to_owned(),
            who: holder.who.clone(),
            since: holder.since.clone(),
        })
    }

    /// Lets go of the write hold if `session` has it.
    pub fn release_writer(&self, session: u64) {
        let released = {
            let mut holder = self.lock_holder();
            match holder.as_ref() {
                Some(h) if h.session == session => holder.take(),
                _ => None,
            }
        };
        if let Some(h) = released {
            self.presence_changed();
            self.record(format!("{} released the write hold", h.who));
        }
    }

    /// Writes for a session: claims the write hold (or fails `busy`),
    /// writes, and records the write in the transcript and the audit trail
    /// (`sensitive` bytes as redacted).
    pub async fn write_as(
        &self,
        actor: &Actor,
        kind: &'static str,
        bytes: &[u8],
        sensitive: bool,
    ) -> Result<(), GateError> {
        self.claim_writer(actor, false)?;
        self.refuse_during_transfer()?;
        self.write_unrecorded(bytes).await?;
        if let Some(t) = &self.shared.transcript {
            t.record_sent(SentRecord {
                kind,
                bytes: (!sensitive).then(|| bytes.to_vec()),
                who: actor.person.as_ref().map(|_| actor.describe()),
            });
        }
        self.shared
            .audit
            .record(AuditRecord::now(self.name(), actor, kind, bytes, sensitive));
        Ok(())
    }

    /// Records in the audit trail that `actor` did `kind` with `bytes`
    /// (the bytes a write sent; empty for a BREAK).
    pub fn audit_as(&self, actor: &Actor, kind: &str, bytes: &[u8]) {
        self.shared
            .audit
            .record(AuditRecord::now(self.name(), actor, kind, bytes, false));
    }

    /// Records a session's attach, detach or take-over as a port event and
    /// in the audit trail.
    pub fn record_session_event(&self, actor: &Actor, kind: &str) {
        self.record(format!("{} {kind}", actor.describe()));
        self.shared
            .audit
            .record(AuditRecord::now(self.name(), actor, kind, b"", false));
    }

    /// Writes for the gateway itself (answers to terminal queries, baud
    /// probes): recorded in the transcript as such, not held by a session.
    pub async fn write(&self, bytes: &[u8]) -> Result<(), GateError> {
        self.refuse_during_transfer()?;
        self.write_unrecorded(bytes).await?;
        if let Some(t) = &self.shared.transcript {
            t.record_sent(SentRecord {
                kind: "gateway",
                bytes: Some(bytes.to_vec()),
                who: None,
            });
        }
        Ok(())
    }
}
