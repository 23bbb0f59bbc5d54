//! The switch's two timers for changes made from afar: an armed revert
//! timer and a scheduled reload, when they act and what they print.

use std::time::{Duration, Instant, SystemTime};

use super::clock::clock_text;
use super::running::Configuration;

/// What IOS prints when a scheduled reload fires.
pub const SHUTDOWN_NOW: &str = "\r\n\r\n***\r\n*** --- SHUTDOWN NOW ---\r\n***\r\n\r\n";
/// What `reload cancel` prints when a reload was scheduled.
pub const SHUTDOWN_ABORTED: &str = "\r\n***\r\n*** --- SHUTDOWN ABORTED ---\r\n***\r\n\r\n";

/// An armed revert timer.
#[derive(Debug)]
pub struct Revert {
    /// When the running configuration rolls back.
    pub(super) deadline: Instant,
    /// When IOS warns that the rollback is a minute away (if not yet).
    pub(super) warning: Option<Instant>,
    /// The running configuration at `configure terminal revert timer`.
    pub(super) backup: Configuration,
    /// The backup's file name, as the messages name it.
    pub(super) file: String,
}

impl Revert {
    /// The next moment the timer acts: the warning, then the rollback.
    pub fn next(&self) -> Instant {
        self.warning.unwrap_or(self.deadline)
    }
}

/// A scheduled `reload in N`.
#[derive(Debug)]
pub struct Reload {
    /// When the switch reloads.
    pub deadline: Instant,
    /// The wall-clock time it reloads at, for `show reload`.
    at: SystemTime,
}

impl Reload {
    /// A reload `minutes` device minutes of `minute` after `now`.
    pub fn new(minutes: u32, now: Instant, minute: Duration) -> Reload {
        Reload {
            deadline: now + minute * minutes,
            at: SystemTime::now() + Duration::from_secs(60 * u64::from(minutes)),
        }
    }

    /// What `show reload` prints at `now`.
    pub fn show(&self, now: Instant, minute: Duration) -> String {
        let left = self.deadline.saturating_duration_since(now);
        let minutes = left.as_secs_f64() / minute.as_secs_f64().max(f64::MIN_POSITIVE);
        let clock = clock_text(self.at);
        let time = clock.trim_start_matches('*');
        format!(
            "Reload scheduled for {time} (in {} minutes) by console\r\nReload reason: Reload Command\r\n",
            minutes.ceil() as u64
        )
    }
}
