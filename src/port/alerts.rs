//! A port's standing watches and the alerts they raised: the config's
//! watches and each session's own, compiled into one set the reader
//! matches (see `watchset.rs`).
//!
//! The config's watches are the operator's: their alerts are kept, the
//! newest [`MAX_ALERTS`] with a count of those dropped, go to the daemon's
//! log at their severity's level, wake whoever waits on the port's alerts
//! (resource subscriptions) and go to the daemon's alert hook (the
//! webhook), which must not block, and to `serialgate_alerts_total`.
//!
//! A session's own watch is for that session only: its alerts are kept
//! apart, in a ring of their own ([`MAX_SESSION_ALERTS`] per port), so no
//! number of them pushes a configured watch's alert out; each watch raises
//! at most [`SESSION_WATCH_RATE`] a second (the rest are counted as
//! dropped); they are never given to the hook, are counted only in
//! `serialgate_session_alerts_total{port}` and are logged at DEBUG (the
//! first of each watch at INFO, so the log says a session watch fires).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::watch;

use crate::clean::clean_field;
use crate::config::TokenAccess;
use crate::config::watches::{MAX_WATCHES, Severity, Watch, check_watch_name, check_watch_regex};
use crate::sync::lock;
use crate::watchset::{WatchHit, WatchSet};

/// Alerts of the config's watches kept per port; older ones are dropped
/// and counted.
pub const MAX_ALERTS: usize = 256;
/// Alerts of session watches kept per port, apart from the config's: the
/// oldest are dropped and counted for the session they belonged to.
pub const MAX_SESSION_ALERTS: usize = 256;
/// Alerts one session watch raises at most per second; more are counted
/// as dropped, so a watch matching every line costs a bounded amount.
pub const SESSION_WATCH_RATE: u32 = 10;
/// Watches one session may add to one port.
pub const MAX_SESSION_WATCHES: usize = 16;
/// Session watches one port takes from all sessions together; the
/// callers of each access hold their share of them
/// ([`TokenAccess::share_of`]).
pub const MAX_PORT_SESSION_WATCHES: usize = 64;

/// The window [`SESSION_WATCH_RATE`] counts in.
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// Something the device printed that a watch matched: the evidence, with
/// where it is in the OutputLog (read_output from a little before `start`
/// shows its context).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Alert {
    /// Numbers the port's alerts from 1; the cursor of the alerts tool.
    pub id: u64,
    /// The port.
    pub port: String,
    /// The watch that matched.
    pub watch: String,
    /// How bad it is.
    pub severity: Severity,
    /// When, in milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    /// The matched text (at most 200 bytes, control characters escaped).
    pub text: String,
    /// First byte of the match in the OutputLog.
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
    /// Raised by a session's own watch, not the config's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub session_watch: bool,
}

/// What `status` shows of a port's alerts.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AlertSummary {
    /// Alerts raised since the port started (the newest id).
    pub total: u64,
    /// Alerts of the config's watches dropped from the kept ones (the
    /// oldest go first).
    pub dropped: u64,
    /// Alerts of this session's own watches dropped: pushed out of their
    /// ring, or over a watch's rate.
    #[serde(skip_serializing_if = "is_zero")]
    pub session_dropped: u64,
    /// Watches in force (config and sessions').
    pub watches: usize,
    /// The newest alert (of the config's watches or this session's own);
    /// null when there is none.
    pub last: Option<Alert>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Called with every alert of a configured watch, on the reader's path:
/// must not block (count it, queue it with `try_send`).
pub type AlertHook = Arc<dyn Fn(&Alert) + Send + Sync>;

/// The watches in force, compiled together; index `i` of the set is
/// `watches[i]`.
pub(crate) struct Compiled {
    pub(crate) set: Arc<WatchSet>,
    watches: Vec<(Watch, Option<u64>)>,
}

/// A port's watches and alerts.
pub(crate) struct Alerts {
    port: String,
    config: Vec<Watch>,
    state: Mutex<State>,
    compiled: Mutex<Arc<Compiled>>,
    /// Bumped whenever `compiled` is replaced: the reader reloads it then.
    generation: AtomicU64,
    /// The id of the newest alert.
    changed: watch::Sender<u64>,
    hook: Option<AlertHook>,
}

#[derive(Default)]
struct State {
    /// The config's watches' alerts.
    kept: VecDeque<Alert>,
    /// The newest id given (config and session alerts share the ids).
    total: u64,
    dropped: u64,
    /// The id of the newest configured alert dropped.
    dropped_newest: u64,
    /// Session watches' alerts, with the session each is for.
    session_kept: VecDeque<(u64, Alert)>,
    /// Session watches, in the order they were added.
    session: Vec<SessionWatch>,
    /// What each session with alerts lost of them.
    losses: Vec<(u64, Losses)>,
}

/// A session's watch and its rate window.
#[derive(Clone)]
struct SessionWatch {
    session: u64,
    /// The access of the caller that added it, for its share of the
    /// port's session watches ([`TokenAccess::share_of`]).
    access: TokenAccess,
    watch: Watch,
    /// When the current rate window began; `None` before the first alert.
    window: Option<Instant>,
    /// Alerts raised in the current window.
    in_window: u32,
    /// Whether it raised any alert yet.
    alerted: bool,
}

/// Whether a session watch may raise one more alert now.
enum Rate {
    /// Yes, its first.
    First,
    /// Yes.
    Again,
    /// No: it raised [`SESSION_WATCH_RATE`] in this window already.
    Over,
}

/// What one session lost of its watches' alerts.
#[derive(Default, Clone, Copy)]
struct Losses {
    /// Dropped from the ring or over the rate.
    dropped: u64,
    /// The id of its newest alert pushed out of the ring.
    dropped_newest: u64,
}

impl State {
    fn losses_mut(&mut self, session: u64) -> &mut Losses {
        let at = match self.losses.iter().position(|(s, _)| *s == session) {
            Some(at) => at,
            None => {
                self.losses.push((session, Losses::default()));
                self.losses.len() - 1
            }
        };
        &mut self.losses[at].1
    }

    fn losses(&self, session: u64) -> Losses {
        self.losses
            .iter()
            .find(|(s, _)| *s == session)
            .map_or_else(Losses::default, |(_, l)| *l)
    }

    /// Whether `session`'s watch `name` may raise one more alert at `now`
    /// (counted if so); `None` when the watch is gone.
    fn within_rate(&mut self, session: u64, name: &str, now: Instant) -> Option<Rate> {
        let w = self
            .session
            .iter_mut()
            .find(|w| w.session == session && w.watch.name == name)?;
        if w.window
            .is_none_or(|began| now.duration_since(began) >= RATE_WINDOW)
        {
            w.window = Some(now);
            w.in_window = 0;
        }
        if w.in_window >= SESSION_WATCH_RATE {
            return Some(Rate::Over);
        }
        w.in_window += 1;
        if std::mem::replace(&mut w.alerted, true) {
            Some(Rate::Again)
        } else {
            Some(Rate::First)
        }
    }
}

/// How an alert goes to the log.
enum Logged {
    /// At its severity's level: a configured watch's.
    AtSeverity,
    /// At INFO: a session watch's first.
    First,
    /// At DEBUG: a session watch's others.
    Debug,
}

impl Alerts {
    /// The alerts of port `port` with the config's `watches`.
    pub(crate) fn new(port: &str, config: Vec<Watch>, hook: Option<AlertHook>) -> Alerts {
        let alerts = Alerts {
            port: port.to_owned(),
            config,
            state: Mutex::new(State::default()),
            compiled: Mutex::new(Arc::new(Compiled {
                set: Arc::new(WatchSet::default()),
                watches: Vec::new(),
            })),
            generation: AtomicU64::new(0),
            changed: watch::Sender::new(0),
            hook,
        };
        if let Err(e) = alerts.recompile(&[]) {
            tracing::warn!(port = %port, "the port's watches do not compile together: {e}; it runs without them");
        }
        alerts
    }

    /// The set in force and its generation, for the reader.
    pub(crate) fn current(&self) -> (u64, Arc<Compiled>) {
        let compiled = lock(&self.compiled).clone();
        (self.generation.load(Ordering::Acquire), compiled)
    }

    /// The generation of the set in force (one atomic load per read).
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn recompile(&self, session: &[SessionWatch]) -> Result<(), regex::Error> {
        let mut watches: Vec<(Watch, Option<u64>)> =
            self.config.iter().cloned().map(|w| (w, None)).collect();
        watches.extend(session.iter().map(|w| (w.watch.clone(), Some(w.session))));
        let sources: Vec<&str> = watches.iter().map(|(w, _)| w.regex.as_str()).collect();
        let set = WatchSet::new(&sources)?;
        *lock(&self.compiled) = Arc::new(Compiled { set, watches });
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Raises an alert for each hit of the set `compiled`: a configured
    /// watch's for the operator, a session watch's (within its rate) for
    /// its session only.
    pub(crate) fn raise(&self, compiled: &Compiled, hits: &[WatchHit]) {
        let now = Instant::now();
        let at_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let mut raised = Vec::with_capacity(hits.len());
        {
            let mut state = lock(&self.state);
            for hit in hits {
                let Some((watch, session)) = compiled.watches.get(hit.watch) else {
                    continue;
                };
                let mut logged = Logged::AtSeverity;
                if let Some(s) = *session {
                    match state.within_rate(s, &watch.name, now) {
                        // Removed since the set was compiled.
                        None => continue,
                        Some(Rate::Over) => {
                            state.losses_mut(s).dropped += 1;
                            continue;
                        }
                        Some(Rate::First) => logged = Logged::First,
                        Some(Rate::Again) => logged = Logged::Debug,
                    }
                }
                state.total += 1;
                let alert = Alert {
                    id: state.total,
                    port: self.port.clone(),
                    watch: watch.name.clone(),
                    severity: watch.severity,
                    at_unix_ms,
                    text: evidence(&hit.text),
                    start: hit.span.start,
                    end: hit.span.end,
                    session_watch: session.is_some(),
                };
                match *session {
                    None => {
                        if state.kept.len() == MAX_ALERTS
                            && let Some(old) = state.kept.pop_front()
                        {
                            state.dropped += 1;
                            state.dropped_newest = old.id;
                        }
                        state.kept.push_back(alert.clone());
                    }
                    Some(s) => {
                        if state.session_kept.len() == MAX_SESSION_ALERTS
                            && let Some((owner, old)) = state.session_kept.pop_front()
                        {
                            let losses = state.losses_mut(owner);
                            losses.dropped += 1;
                            losses.dropped_newest = old.id;
                        }
                        state.session_kept.push_back((s, alert.clone()));
                    }
                }
                raised.push((alert, logged));
            }
        }
        let Some(newest) = raised.last().map(|(a, _)| a.id) else {
            return;
        };
        // Counted before it is logged: whoever reads the log line finds
        // the alert in the metrics already.
        for (alert, logged) in &raised {
            if alert.session_watch {
                crate::metrics::session_alert(&alert.port);
                log(alert, logged);
                continue;
            }
            crate::metrics::alert(&alert.port, alert.severity.as_str());
            log(alert, logged);
            if let Some(hook) = &self.hook {
                hook(alert);
            }
        }
        self.changed.send_replace(newest);
    }

    /// The alerts `session` sees with an id above `cursor` (the config's
    /// watches' and its own), oldest first, at most `limit`; and whether
    /// some of them after the cursor were dropped before being read.
    pub(crate) fn since(&self, session: u64, cursor: u64, limit: usize) -> (Vec<Alert>, bool) {
        let state = lock(&self.state);
        let missed = state.dropped_newest > cursor || state.losses(session).dropped_newest > cursor;
        let mut alerts: Vec<Alert> = state
            .kept
            .iter()
            .filter(|a| a.id > cursor)
            .take(limit)
            .cloned()
            .collect();
        alerts.extend(
            state
                .session_kept
                .iter()
                .filter(|(s, a)| *s == session && a.id > cursor)
                .take(limit)
                .map(|(_, a)| a.clone()),
        );
        alerts.sort_by_key(|a| a.id);
        alerts.truncate(limit);
        (alerts, missed)
    }

    /// The newest alerts of the config's watches, at most `limit`, oldest
    /// first (what every session of the port may see).
    pub(crate) fn newest(&self, limit: usize) -> Vec<Alert> {
        let state = lock(&self.state);
        let skip = state.kept.len().saturating_sub(limit);
        state.kept.iter().skip(skip).cloned().collect()
    }

    /// Counts for the operator: the config's watches' alerts.
    pub(crate) fn summary(&self) -> AlertSummary {
        let watches = self.current().1.watches.len();
        let state = lock(&self.state);
        AlertSummary {
            total: state.total,
            dropped: state.dropped,
            session_dropped: 0,
            watches,
            last: state.kept.back().cloned(),
        }
    }

    /// Counts for `status` of `session`: the newest alert it sees may be
    /// one of its own watches', and what it lost of those is counted.
    pub(crate) fn summary_for(&self, session: u64) -> AlertSummary {
        let mut summary = self.summary();
        let state = lock(&self.state);
        summary.session_dropped = state.losses(session).dropped;
        if let Some((_, own)) = state.session_kept.iter().rev().find(|(s, _)| *s == session)
            && summary.last.as_ref().is_none_or(|last| last.id < own.id)
        {
            summary.last = Some(own.clone());
        }
        summary
    }

    /// A receiver that changes with every alert (its value: the newest id).
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The config's watches and those of `session`.
    pub(crate) fn watches_of(&self, session: u64) -> Vec<Watch> {
        let mut all = self.config.clone();
        let state = lock(&self.state);
        all.extend(
            state
                .session
                .iter()
                .filter(|w| w.session == session)
                .map(|w| w.watch.clone()),
        );
        all
    }

    /// Adds (or replaces) a watch of `session`, whose caller has `access`.
    /// The error says what is wrong; nothing changes then.
    pub(crate) fn add_session_watch(
        &self,
        session: u64,
        access: TokenAccess,
        watch: Watch,
    ) -> Result<(), String> {
        check_watch_name(&watch.name)?;
        check_watch_regex(&watch.regex)?;
        if self.config.iter().any(|w| w.name == watch.name) {
            return Err(format!(
                "{:?} is a watch of the port's config; name yours otherwise",
                watch.name
            ));
        }
        let mut state = lock(&self.state);
        let mut session_list = state.session.clone();
        match session_list
            .iter_mut()
            .find(|w| w.session == session && w.watch.name == watch.name)
        {
            // Replaced, its rate window kept: re-adding buys no alerts.
            Some(slot) => slot.watch = watch,
            None => {
                let mine = session_list.iter().filter(|w| w.session == session).count();
                if mine >= MAX_SESSION_WATCHES {
                    return Err(format!(
                        "this session has {MAX_SESSION_WATCHES} watches on this port already; remove one first"
                    ));
                }
                if session_list.len() >= MAX_PORT_SESSION_WATCHES
                    || self.config.len() + session_list.len()
                        >= MAX_WATCHES + MAX_PORT_SESSION_WATCHES
                {
                    return Err(format!(
                        "the port has {MAX_PORT_SESSION_WATCHES} session watches already; try later"
                    ));
                }
                let share = access.share_of(MAX_PORT_SESSION_WATCHES);
                if session_list.iter().filter(|w| w.access <= access).count() >= share {
                    return Err(format!(
                        "the port's session watches open to {} access ({share} of {MAX_PORT_SESSION_WATCHES}) are taken; try later, or ask for a watch in the port's config",
                        access.name()
                    ));
                }
                session_list.push(SessionWatch {
                    session,
                    access,
                    watch,
                    window: None,
                    in_window: 0,
                    alerted: false,
                });
            }
        }
        self.recompile(&session_list)
            .map_err(|e| format!("the watches do not compile together: {e}"))?;
        state.session = session_list;
        Ok(())
    }

    /// Removes `session`'s watch `name`; whether there was one. The alerts
    /// it raised stay for the session.
    pub(crate) fn remove_session_watch(&self, session: u64, name: &str) -> bool {
        self.retain_session(|w| !(w.session == session && w.watch.name == name))
    }

    /// Removes every watch of `session` and the alerts they raised (its
    /// end, or a disconnect).
    pub(crate) fn remove_session(&self, session: u64) {
        self.retain_session(|w| w.session != session);
        let mut state = lock(&self.state);
        state.session_kept.retain(|(s, _)| *s != session);
        state.losses.retain(|(s, _)| *s != session);
    }

    fn retain_session(&self, keep: impl Fn(&SessionWatch) -> bool) -> bool {
        let mut state = lock(&self.state);
        let before = state.session.len();
        let kept: Vec<SessionWatch> = state.session.iter().filter(|w| keep(w)).cloned().collect();
        if kept.len() == before {
            return false;
        }
        // Fewer watches than a set that compiled always compile.
        if self.recompile(&kept).is_ok() {
            state.session = kept;
        }
        true
    }
}

/// Device text as an alert keeps it: as a terminal shows it (the output
/// cleaner's [`clean_field`]: colours and erased text gone), its line ends
/// and tabs escaped (`\n`, `\t`), so that it can forge no log line. A match
/// that shows nothing (a watch on a control sequence) is kept as it came,
/// every control character escaped (`\r`, `\u{1b}`).
fn evidence(bytes: &[u8]) -> String {
    let shown = clean_field(bytes);
    let text = if shown.trim().is_empty() {
        String::from_utf8_lossy(bytes).into_owned()
    } else {
        shown
    };
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The alert in the daemon's log: a configured watch's at its severity's
/// level, a session watch's at DEBUG (its first at INFO), whatever
/// severity the session gave it.
fn log(a: &Alert, logged: &Logged) {
    let (port, watch, severity) = (&a.port, &a.watch, a.severity.as_str());
    let (start, end, text) = (a.start, a.end, &a.text);
    match (logged, a.severity) {
        (Logged::Debug, _) => tracing::debug!(
            port = %port, watch = %watch, severity, start, end,
            "alert {watch} ({severity}) on {port} at {start}-{end} of a session watch: {text}"
        ),
        (Logged::First, _) => tracing::info!(
            port = %port, watch = %watch, severity, start, end,
            "alert {watch} ({severity}) on {port} at {start}-{end}: {text} (a session watch's first; the rest at debug)"
        ),
        (Logged::AtSeverity, Severity::Critical | Severity::Error) => tracing::error!(
            port = %port, watch = %watch, severity, start, end,
            "alert {watch} ({severity}) on {port} at {start}-{end}: {text}"
        ),
        (Logged::AtSeverity, Severity::Warning) => tracing::warn!(
            port = %port, watch = %watch, severity, start, end,
            "alert {watch} ({severity}) on {port} at {start}-{end}: {text}"
        ),
        (Logged::AtSeverity, Severity::Info) => tracing::info!(
            port = %port, watch = %watch, severity, start, end,
            "alert {watch} ({severity}) on {port} at {start}-{end}: {text}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::Span;

    fn hit(watch: usize, start: u64) -> WatchHit {
        WatchHit {
            watch,
            span: Span {
                start,
                end: start + 3,
            },
            text: b"x\r\n\x1b[31m".to_vec(),
        }
    }

    #[test]
    fn evidence_is_what_a_terminal_shows_with_line_ends_escaped() {
        assert_eq!(
            evidence(b"\x1b[1;31mKernel panic\x1b[0m - not syncing\r\nCPU: 0"),
            "Kernel panic - not syncing\\nCPU: 0"
        );
        assert_eq!(evidence(b"\x1b[31m"), "\\u{1b}[31m");
    }

    #[test]
    fn alerts_are_bounded_counted_and_escaped() {
        let alerts = Alerts::new(
            "sw1",
            vec![Watch {
                name: "crash".into(),
                regex: "crash".into(),
                severity: Severity::Critical,
            }],
            None,
        );
        let (_, compiled) = alerts.current();
        for i in 0..(MAX_ALERTS as u64 + 10) {
            alerts.raise(&compiled, &[hit(0, i)]);
        }
        let s = alerts.summary();
        assert_eq!((s.total, s.dropped), (MAX_ALERTS as u64 + 10, 10));
        let last = s.last.unwrap();
        assert_eq!(last.text, "x");
        let (read, missed) = alerts.since(1, 0, 5);
        assert!(missed);
        assert_eq!(read[0].id, 11);
        let (read, missed) = alerts.since(1, last.id - 1, 5);
        assert!(!missed);
        assert_eq!(read.len(), 1);
        // An index outside the set (a stale one) raises nothing.
        alerts.raise(&compiled, &[hit(7, 0)]);
        assert_eq!(alerts.summary().total, MAX_ALERTS as u64 + 10);
    }

    #[test]
    fn no_access_can_fill_a_ports_session_watches_against_a_higher_one() {
        let alerts = Alerts::new("sw1", Vec::new(), None);
        let add = |session: u64, access: TokenAccess, name: &str| {
            let watch = Watch {
                name: name.into(),
                regex: "y".into(),
                severity: Severity::Info,
            };
            alerts.add_session_watch(session, access, watch)
        };
        // A read token's sessions, each up to its own bound, take half.
        let half = MAX_PORT_SESSION_WATCHES / 2;
        for i in 0..half {
            let session = (i / MAX_SESSION_WATCHES) as u64 + 1;
            add(session, TokenAccess::Read, &format!("r{i}")).unwrap();
        }
        let refused = add(100, TokenAccess::Read, "r-more").unwrap_err();
        assert!(
            refused.contains("open to read access (32 of 64)"),
            "{refused}"
        );
        // Writers take up to three quarters in all, then admins the rest.
        for i in 0..MAX_PORT_SESSION_WATCHES / 4 {
            add(200, TokenAccess::Write, &format!("w{i}")).unwrap();
        }
        assert!(add(201, TokenAccess::Write, "w-more").is_err());
        for i in 0..MAX_PORT_SESSION_WATCHES / 4 {
            add(300 + i as u64, TokenAccess::Admin, &format!("a{i}")).unwrap();
        }
        assert!(add(400, TokenAccess::Admin, "a-more").is_err());
        // A read token's watch gone makes room for a reader again.
        assert!(alerts.remove_session_watch(1, "r0"));
        add(100, TokenAccess::Read, "r-more").unwrap();
    }

    #[test]
    fn session_watches_are_checked_bounded_and_removed() {
        let alerts = Alerts::new("sw1", Vec::new(), None);
        let w = |name: &str, regex: &str| Watch {
            name: name.into(),
            regex: regex.into(),
            severity: Severity::Info,
        };
        let g0 = alerts.generation();
        alerts
            .add_session_watch(1, TokenAccess::Admin, w("bgp", "BGP-5-ADJCHANGE"))
            .unwrap();
        assert!(alerts.generation() > g0);
        assert!(
            alerts
                .add_session_watch(1, TokenAccess::Admin, w("bad", "("))
                .is_err()
        );
        assert!(
            alerts
                .add_session_watch(1, TokenAccess::Admin, w("empty", "x*"))
                .is_err()
        );
        assert!(
            alerts
                .add_session_watch(1, TokenAccess::Admin, w("bad name\n", "x"))
                .is_err()
        );
        for i in 1..MAX_SESSION_WATCHES {
            alerts
                .add_session_watch(1, TokenAccess::Admin, w(&format!("w{i}"), "y"))
                .unwrap();
        }
        assert!(
            alerts
                .add_session_watch(1, TokenAccess::Admin, w("one_more", "y"))
                .is_err()
        );
        assert_eq!(alerts.watches_of(1).len(), MAX_SESSION_WATCHES);
        assert!(alerts.watches_of(2).is_empty());
        assert!(alerts.remove_session_watch(1, "bgp"));
        assert!(!alerts.remove_session_watch(1, "bgp"));
        alerts.remove_session(1);
        assert!(alerts.current().1.set.is_empty());
    }

    #[test]
    fn session_watches_alerts_are_apart_rate_bounded_and_not_hooked() {
        let hooked = Arc::new(AtomicU64::new(0));
        let counted = hooked.clone();
        let hook: AlertHook = Arc::new(move |_| {
            counted.fetch_add(1, Ordering::Relaxed);
        });
        let alerts = Alerts::new(
            "sw1",
            vec![Watch {
                name: "crash".into(),
                regex: "crash".into(),
                severity: Severity::Critical,
            }],
            Some(hook),
        );
        alerts
            .add_session_watch(
                7,
                TokenAccess::Read,
                Watch {
                    name: "anything".into(),
                    regex: "\\S".into(),
                    severity: Severity::Critical,
                },
            )
            .unwrap();
        let (_, compiled) = alerts.current();
        alerts.raise(&compiled, &[hit(0, 0)]);
        let flood = 10 * (MAX_ALERTS + MAX_SESSION_ALERTS) as u64;
        for i in 0..flood {
            alerts.raise(&compiled, &[hit(1, i)]);
        }
        // Only the configured watch's alert reached the hook.
        assert_eq!(hooked.load(Ordering::Relaxed), 1);
        // The config's ring is untouched; the resource shows only it.
        let operator = alerts.summary();
        assert_eq!(operator.dropped, 0);
        assert_eq!(operator.last.as_ref().unwrap().watch, "crash");
        assert_eq!(alerts.newest(50).len(), 1);
        // Within one window the session watch raised its rate, no more.
        let (own, missed) = alerts.since(7, 0, 50);
        assert!(!missed);
        assert_eq!(own.len(), 1 + SESSION_WATCH_RATE as usize);
        assert_eq!(own[0].watch, "crash");
        assert!(own[1..].iter().all(|a| a.session_watch));
        let mine = alerts.summary_for(7);
        assert_eq!(mine.session_dropped, flood - u64::from(SESSION_WATCH_RATE));
        assert!(mine.last.unwrap().session_watch);
        // Another session sees the config's alerts only.
        let (theirs, missed) = alerts.since(8, 0, 50);
        assert!(!missed);
        assert_eq!(theirs.len(), 1);
        assert_eq!(alerts.summary_for(8).last.unwrap().watch, "crash");
        // Its end takes its alerts with it.
        alerts.remove_session(7);
        assert_eq!(alerts.since(7, 0, 50).0.len(), 1);
    }

    #[test]
    fn session_alerts_pushed_out_of_their_ring_are_missed_by_their_session_only() {
        let alerts = Alerts::new("sw1", Vec::new(), None);
        let w = |regex: &str| Watch {
            name: "w".into(),
            regex: regex.into(),
            severity: Severity::Info,
        };
        alerts
            .add_session_watch(3, TokenAccess::Admin, w("x"))
            .unwrap();
        let (_, compiled) = alerts.current();
        for i in 0..=MAX_SESSION_ALERTS as u64 {
            // A new rate window each time, as if a second had passed.
            lock(&alerts.state).session[0].window = None;
            alerts.raise(&compiled, &[hit(0, i)]);
        }
        let (kept, missed) = alerts.since(3, 0, MAX_SESSION_ALERTS + 10);
        assert!(missed);
        assert_eq!(kept.len(), MAX_SESSION_ALERTS);
        assert_eq!(kept[0].id, 2);
        assert!(!alerts.since(3, 1, 10).1);
        assert_eq!(alerts.summary_for(3).session_dropped, 1);
        // The other session lost nothing of its own, and sees none of them.
        let (theirs, missed) = alerts.since(4, 0, 10);
        assert!(theirs.is_empty() && !missed);
        // A watch removed since the set was compiled raises nothing more.
        assert!(alerts.remove_session_watch(3, "w"));
        alerts.raise(&compiled, &[hit(0, 999)]);
        assert_eq!(alerts.summary().total, MAX_SESSION_ALERTS as u64 + 1);
    }
}
