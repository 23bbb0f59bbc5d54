//! A change committed with an automatic rollback (Junos `commit confirmed
//! N`, IOS XE's revert timer) that nobody has confirmed yet. The device
//! rolls back by itself when the minutes pass; the port watches its output
//! for the device saying so and records it as a port event, so `status`
//! and every later reader see that the change is gone. Confirming (or a
//! new commit) disarms the watch. [`ConfirmWatch`] is the port's part for
//! it: the armed watch, and the task that reads the log for the message.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use regex::bytes::Regex;
use schemars::JsonSchema;
use serde::Serialize;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::state::Events;
use crate::log::OutputLog;

/// How long past the deadline the watch waits for the device's message
/// (devices round their timers, and print after the rollback ran).
pub const CONFIRM_GRACE: Duration = Duration::from_secs(120);
/// Bytes before the newly arrived output that each scan looks at again, so
/// that a message split across reads is found.
const OVERLAP: u64 = 512;

/// What `status` says about an unconfirmed change.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PendingConfirm {
    /// Who committed it (an agent's session or a person).
    pub by: String,
    /// How it was committed (`commit confirmed 5`).
    pub how: String,
    /// When the device rolls it back unless confirmed (RFC 3339, UTC).
    pub deadline: String,
}

/// The armed watch: what `status` shows and how to stop it.
struct Armed {
    info: PendingConfirm,
    stop: CancellationToken,
    /// Which arming this is: a watch ends only its own.
    id: u64,
}

/// Numbers the armings.
static ARMINGS: AtomicU64 = AtomicU64::new(1);

/// The port's confirm watch: the change awaiting confirmation, if any.
#[derive(Default)]
pub struct ConfirmWatch {
    armed: Arc<Mutex<Option<Armed>>>,
}

/// What the watch task reads and records into: the port's log and its
/// event history, and the port's closing, which ends the watch.
pub struct Watched {
    /// The port's output.
    pub log: OutputLog,
    /// The port's events, where the outcome goes.
    pub events: Events,
    /// Cancelled when the port closes.
    pub closing: CancellationToken,
}

impl ConfirmWatch {
    /// Arms the watch for a change `by` committed with `how`, rolling back
    /// after `minutes` unless confirmed; the device's rollback message
    /// (`rolled_back`) is looked for in `watched.log` from offset `from`,
    /// until the port closes or the deadline. Replaces an earlier watch.
    pub fn arm(
        &self,
        watched: Watched,
        by: &str,
        how: &str,
        minutes: u64,
        rolled_back: Regex,
        from: u64,
    ) -> PendingConfirm {
        let wait = Duration::from_secs(minutes.saturating_mul(60));
        let deadline = SystemTime::now() + wait;
        let info = PendingConfirm {
            by: by.to_owned(),
            how: how.to_owned(),
            deadline: humantime::format_rfc3339_seconds(deadline).to_string(),
        };
        let stop = watched.closing.child_token();
        let id = ARMINGS.fetch_add(1, Ordering::Relaxed);
        let previous = crate::sync::lock(&self.armed).replace(Armed {
            info: info.clone(),
            stop: stop.clone(),
            id,
        });
        if let Some(previous) = previous {
            previous.stop.cancel();
        }
        watched.events.record(format!(
            "{how} by {by}: rolls back at {} unless confirmed",
            info.deadline
        ));
        let armed = Arc::clone(&self.armed);
        let until = Instant::now() + wait + CONFIRM_GRACE;
        crate::task::spawn(async move {
            watch_rollback(&armed, &watched, rolled_back, from, until, stop, id).await
        });
        info
    }

    /// Disarms the watch after a confirmation (recorded in `events`);
    /// whether one was armed.
    pub fn disarm(&self, events: &Events, confirmed_by: &str) -> bool {
        let armed = crate::sync::lock(&self.armed).take();
        match armed {
            Some(armed) => {
                armed.stop.cancel();
                events.record(format!(
                    "{} confirmed by {confirmed_by}: the change stays",
                    armed.info.how
                ));
                true
            }
            None => false,
        }
    }

    /// The change awaiting confirmation, if any.
    pub fn pending(&self) -> Option<PendingConfirm> {
        crate::sync::lock(&self.armed)
            .as_ref()
            .map(|armed| armed.info.clone())
    }
}

/// Waits for `pattern` in the output after `from`, woken by every
/// append, until `until` or `stop`.
async fn watch_rollback(
    armed: &Mutex<Option<Armed>>,
    watched: &Watched,
    pattern: Regex,
    from: u64,
    until: Instant,
    stop: CancellationToken,
    id: u64,
) {
    let log = &watched.log;
    let mut appended = log.subscribe();
    let mut scanned = from;
    loop {
        let head = log.head();
        if head > scanned {
            let start = scanned.saturating_sub(OVERLAP).max(from).max(log.oldest());
            let text = log.copy_range(start, head);
            if let Some(found) = pattern.find(&text) {
                let said = crate::error::shown(&String::from_utf8_lossy(found.as_bytes()));
                rolled_back(
                    armed,
                    &watched.events,
                    id,
                    &format!("the device rolled the change back: {said}"),
                );
                return;
            }
            scanned = head;
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep_until(until) => {
                rolled_back(
                    armed,
                    &watched.events,
                    id,
                    "the confirm deadline passed unconfirmed and the device printed no rollback message; check its configuration",
                );
                return;
            }
            changed = appended.changed() => if changed.is_err() { return },
        }
    }
}

/// Records the end of an unconfirmed change, if the watch that saw it
/// is still the armed one.
fn rolled_back(armed: &Mutex<Option<Armed>>, events: &Events, id: u64, what: &str) {
    let ended = {
        let mut armed = crate::sync::lock(armed);
        match armed.as_ref() {
            Some(a) if a.id == id => armed.take(),
            _ => None,
        }
    };
    if let Some(a) = ended {
        events.record(format!(
            "{} by {} not confirmed: {what}",
            a.info.how, a.info.by
        ));
    }
}
