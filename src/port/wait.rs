//! Waiting on a port: for a prompt (answering auto-reply triggers on the
//! way), or for the first bytes of output. Every wait has a deadline and
//! wakes on appends and state changes, never on a timer poll.
//!
//! The port's log part is here too: [`Waiters`] owns the OutputLog and
//! counts the calls waiting on it. The waits themselves take the port as
//! a [`WaitPort`], the little of it they need (its log, its state, its
//! write path for auto-replies), which the handle provides.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::state::PortState;
use crate::audit::Actor;
use crate::error::GateError;
use crate::log::OutputLog;
use crate::matcher::{PromptScanner, Span, TriggerScanner};

/// The port's log part: everything the device sent, and how many calls
/// are waiting on it right now (`status` and the metrics show it).
pub struct Waiters {
    log: OutputLog,
    active: Arc<AtomicU64>,
}

impl Waiters {
    /// An empty log keeping `retention` bytes, nobody waiting.
    pub fn new(retention: usize) -> Waiters {
        Waiters {
            log: OutputLog::new(retention),
            active: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Everything the device sent.
    pub fn log(&self) -> &OutputLog {
        &self.log
    }

    /// Calls waiting on the output right now.
    pub fn active(&self) -> u64 {
        self.active.load(Ordering::Relaxed)
    }

    /// Counts a wait for as long as the guard lives.
    pub fn guard(&self) -> WaitGuard {
        self.active.fetch_add(1, Ordering::Relaxed);
        WaitGuard {
            active: Arc::clone(&self.active),
            started: std::time::Instant::now(),
        }
    }
}

/// Counts one waiting call on a port; dropping it (however the wait ends,
/// cancellation included) uncounts it.
pub struct WaitGuard {
    active: Arc<AtomicU64>,
    started: std::time::Instant,
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        crate::metrics::wait(self.started.elapsed());
        self.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a wait needs of a port: its log part, its name and state, and its
/// write path (an auto-reply is a write of the waiting session).
pub trait WaitPort: Sync {
    /// The port's name, for the log.
    fn name(&self) -> &str;
    /// The log and its wait counter.
    fn waiters(&self) -> &Waiters;
    /// The current state.
    fn state(&self) -> PortState;
    /// A receiver that changes with the state.
    fn watch_state(&self) -> watch::Receiver<PortState>;
    /// Makes `actor` the writer, or fails `busy`.
    fn claim_writer(&self, actor: &Actor, take_over: bool) -> Result<(), GateError>;
    /// Writes for `actor`, recorded like every session write.
    fn write_as(
        &self,
        actor: &Actor,
        kind: &'static str,
        bytes: &[u8],
        sensitive: bool,
    ) -> impl Future<Output = Result<(), GateError>> + Send;
}

/// Most auto-replies one call sends before it stops answering (a device
/// that repeats its trigger forever must not make the gateway loop).
pub const DEFAULT_MAX_AUTO_REPLIES: usize = 10_000;

/// Most auto-replies in a row after which the device printed a trigger
/// again and nothing else: `less` at `(END)` answered with a space rings
/// the bell and redraws `(END)`, `more` at the end of a pipe answered with
/// a space prints a blank page and its prompt again, for ever. The answer
/// after these is not sent and the wait ends [`WaitEnd::Stuck`].
pub const MAX_FRUITLESS_REPLIES: usize = 3;

/// Output between two triggers longer than this counts as progress
/// without being looked at (so a look never copies much of the log).
const FRUITLESS_GAP_BYTES: u64 = 4096;

/// How a prompt wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitEnd {
    /// The prompt matched at this span.
    Matched(Span),
    /// The deadline passed.
    TimedOut,
    /// The device went away.
    Lost,
    /// The port was closed.
    Closed,
    /// The client cancelled the request.
    Cancelled,
    /// The device printed an auto-reply trigger again, at this span, after
    /// [`MAX_FRUITLESS_REPLIES`] answers in a row that it followed with
    /// nothing but the trigger: this one was not answered.
    Stuck(Span),
}

/// What a prompt wait looks for: from where, which prompt, which triggers
/// to answer, for how long.
pub struct PromptWanted {
    /// Where the output starts (the session's cursor).
    pub cursor: u64,
    /// The prompt, incrementally matched.
    pub scanner: PromptScanner,
    /// Auto-reply triggers.
    pub triggers: TriggerScanner,
    /// The deadline, from now.
    pub timeout: Duration,
    /// Most auto-replies this wait sends.
    pub max_replies: usize,
}

/// How often a wait reports progress at most.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);

/// Reports progress as `(bytes received since the cursor, auto-replies
/// sent)`; called at most every [`PROGRESS_INTERVAL`], never blocking.
pub type ProgressFn = Arc<dyn Fn(u64, u64) + Send + Sync>;

/// What can end a wait early and what it reports to: MCP's own request
/// cancellation and progress notifications.
#[derive(Clone, Default)]
pub struct WaitHooks {
    /// Cancelled when the client cancels the request: the wait ends at once.
    pub cancel: CancellationToken,
    /// Cancelled when the client itself is gone (its stdio closed): the
    /// wait ends at once, instead of holding the daemon's exit until the
    /// MCP library gives up on the call.
    pub gone: CancellationToken,
    /// Where progress goes, when the client asked for it.
    pub progress: Option<ProgressFn>,
}

impl WaitHooks {
    /// Resolves when the request is cancelled or the client is gone.
    pub async fn cancelled(&self) {
        tokio::select! {
            () = self.cancel.cancelled() => {}
            () = self.gone.cancelled() => {}
        }
    }
}

/// An auto-reply the wait sent.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AutoReplySent {
    /// The trigger text that was seen.
    pub trigger: String,
    /// Where the trigger was seen (absolute offset).
    pub at: u64,
}

/// The result of [`wait_for_prompt`].
#[derive(Debug, Clone)]
pub struct PromptWait {
    /// Why the wait ended.
    pub end: WaitEnd,
    /// Where the output starts (the cursor, or the oldest retained byte
    /// if retention dropped output before it was read).
    pub start: u64,
    /// Where the returned output ends: after the prompt, or the head.
    pub end_offset: u64,
    /// Bytes between the cursor and the oldest retained byte were dropped.
    pub truncated: bool,
    /// Auto-replies sent, in order.
    pub auto_replies: Vec<AutoReplySent>,
    /// Time spent waiting.
    pub elapsed: Duration,
}

/// Waits for `scanner`'s prompt in the output from `cursor`, answering
/// `triggers` once per occurrence (at most `max_replies`) as `actor`, until
/// `timeout`; a device that answers its answers only with the trigger
/// again is left at it ([`MAX_FRUITLESS_REPLIES`]). With triggers, `actor` must hold (or take) the write hold.
pub async fn wait_for_prompt(
    port: &impl WaitPort,
    actor: &Actor,
    want: PromptWanted,
    hooks: &WaitHooks,
) -> Result<PromptWait, GateError> {
    let PromptWanted {
        cursor,
        mut scanner,
        mut triggers,
        timeout,
        max_replies,
    } = want;
    if !triggers.is_empty() {
        port.claim_writer(actor, false)?;
    }
    let _counted = port.waiters().guard();
    let started = Instant::now();
    let deadline = started + timeout;
    let log = port.waiters().log();
    let mut head_rx = log.subscribe();
    let mut state_rx = port.watch_state();
    let mut auto_replies = Vec::new();
    // Said once per wait: the cap was reached and triggers go unanswered.
    let mut cap_reported = false;
    // Where the last answered trigger ended, and the answers in a row the
    // device followed with nothing but a trigger again.
    let mut last_answered: Option<u64> = None;
    let mut fruitless = 0usize;
    let mut reported = (Instant::now(), 0u64);
    // The bytes one wake-up scans, copied out of the log (reused).
    let mut window = Vec::new();
    // Made once, not per wake-up: a busy port wakes this loop for every
    // read, and a new timer and cancellation waiter each time would cost
    // more than the scan.
    let timed_out = tokio::time::sleep_until(deadline);
    let cancelled = hooks.cancelled();
    tokio::pin!(timed_out, cancelled);
    let finish = |end: WaitEnd, end_offset: u64, auto_replies| {
        let oldest = log.oldest();
        PromptWait {
            end,
            start: cursor.max(oldest),
            end_offset,
            truncated: cursor < oldest,
            auto_replies,
            elapsed: started.elapsed(),
        }
    };
    loop {
        head_rx.borrow_and_update();
        let state = *state_rx.borrow_and_update();
        // Copy the window out and scan it after the lock is released: the
        // reader's appends (and every other waiter) never wait for a regex.
        let (base, tbase, from, head) = {
            let view = log.view();
            let (oldest, head) = (view.oldest(), view.head());
            let base = scanner.window_start().clamp(oldest, head);
            let tbase = if triggers.is_empty() {
                head
            } else {
                triggers.window_start().clamp(oldest, head)
            };
            let from = base.min(tbase);
            window.clear();
            window.extend_from_slice(view.slice(from, head));
            (base, tbase, from, head)
        };
        let found = scanner.scan(&window[(base - from) as usize..], base);
        let limit = found.map_or(head, |s| s.start);
        let hits = triggers.scan(&window[(tbase - from) as usize..], tbase, limit);
        for hit in hits {
            if auto_replies.len() >= max_replies {
                if !cap_reported {
                    tracing::warn!(port = %port.name(), "auto-reply cap of {max_replies} reached; further triggers are left unanswered");
                    cap_reported = true;
                }
                continue;
            }
            if let Some(after) = last_answered {
                if shows_nothing(log, after, hit.span.start) {
                    fruitless += 1;
                } else {
                    fruitless = 0;
                }
                if fruitless > MAX_FRUITLESS_REPLIES {
                    tracing::warn!(
                        port = %port.name(),
                        trigger = %crate::error::shown(triggers.trigger(&hit)),
                        "the device printed an auto-reply trigger again after {MAX_FRUITLESS_REPLIES} answers with nothing between; not answering it again"
                    );
                    return Ok(finish(WaitEnd::Stuck(hit.span), log.head(), auto_replies));
                }
            }
            last_answered = Some(hit.span.end);
            let reply = triggers.reply(&hit).to_vec();
            port.write_as(actor, "auto_reply", &reply, false).await?;
            auto_replies.push(AutoReplySent {
                trigger: triggers.trigger(&hit).to_owned(),
                at: hit.span.start,
            });
        }
        if let Some(report) = &hooks.progress {
            let received = head.saturating_sub(cursor);
            if received > reported.1 && reported.0.elapsed() >= PROGRESS_INTERVAL {
                report(received, auto_replies.len() as u64);
                reported = (Instant::now(), received);
            }
        }
        if let Some(span) = found {
            return Ok(finish(WaitEnd::Matched(span), span.end, auto_replies));
        }
        match state {
            PortState::Lost | PortState::Reopening | PortState::Down => {
                return Ok(finish(WaitEnd::Lost, head, auto_replies));
            }
            PortState::Closed => {
                return Ok(finish(WaitEnd::Closed, head, auto_replies));
            }
            PortState::Opening | PortState::Open => {}
        }
        tokio::select! {
            _ = head_rx.changed() => {}
            _ = state_rx.changed() => {}
            () = &mut cancelled => {
                // A shutdown closes the ports and cancels the requests at
                // about the same time: a closed or lost port is the truer
                // ending, and it carries the partial output.
                return Ok(match port.state() {
                    PortState::Closed => finish(WaitEnd::Closed, log.head(), auto_replies),
                    PortState::Lost | PortState::Reopening | PortState::Down => {
                        finish(WaitEnd::Lost, log.head(), auto_replies)
                    }
                    _ => finish(WaitEnd::Cancelled, cursor, auto_replies),
                });
            }
            () = &mut timed_out => {
                return Ok(finish(WaitEnd::TimedOut, log.head(), auto_replies));
            }
        }
    }
}

/// Whether the device's output from `from` to `to` shows nothing on a
/// terminal: only controls, erases, redraws and blank lines.
fn shows_nothing(log: &OutputLog, from: u64, to: u64) -> bool {
    if to.saturating_sub(from) > FRUITLESS_GAP_BYTES {
        return false;
    }
    let gap = log.copy_range(from, to);
    crate::clean::clean_output(&gap, &crate::clean::CleanOptions::default())
        .trim()
        .is_empty()
}

/// Waits until output past `cursor` exists (at most `timeout`, and not at
/// all once the device is lost or the port closed), then until
/// the device has been quiet for `settle` (at most `settle_max` in all), so
/// one call returns a whole burst. Returns the head when it stopped, or
/// `None` when `hooks` cancelled the wait (the request was cancelled or the
/// client went away).
pub async fn wait_for_output(
    port: &impl WaitPort,
    cursor: u64,
    timeout: Duration,
    settle: Duration,
    settle_max: Duration,
    hooks: &WaitHooks,
) -> Option<u64> {
    let _counted = port.waiters().guard();
    let log = port.waiters().log();
    let mut head_rx = log.subscribe();
    let mut state_rx = port.watch_state();
    let deadline = Instant::now() + timeout;
    let timed_out = tokio::time::sleep_until(deadline);
    let cancelled = hooks.cancelled();
    tokio::pin!(timed_out, cancelled);
    loop {
        if *head_rx.borrow_and_update() > cursor {
            break;
        }
        // A device that is gone will not talk: stop waiting for it.
        if matches!(
            *state_rx.borrow_and_update(),
            PortState::Lost | PortState::Reopening | PortState::Down | PortState::Closed
        ) {
            return Some(log.head());
        }
        tokio::select! {
            changed = head_rx.changed() => if changed.is_err() { return Some(log.head()) },
            _ = state_rx.changed() => {}
            () = &mut timed_out => return Some(log.head()),
            () = &mut cancelled => return None,
        }
    }
    let settle_deadline = Instant::now() + settle_max;
    // One timer, moved on at every burst.
    let quiet = tokio::time::sleep_until((Instant::now() + settle).min(settle_deadline));
    tokio::pin!(quiet);
    loop {
        tokio::select! {
            changed = head_rx.changed() => {
                if changed.is_err() || Instant::now() >= settle_deadline { break; }
                quiet.as_mut().reset((Instant::now() + settle).min(settle_deadline));
            }
            () = &mut quiet => break,
            () = &mut cancelled => return None,
        }
    }
    Some(log.head())
}
