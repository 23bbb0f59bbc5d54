//! A port's standing watches and the alerts they raised: the config's
//! watches and each session's own, compiled into one set the reader
//! matches (see `watchset.rs`), and the newest [`MAX_ALERTS`] alerts kept
//! with a count of those dropped. Each alert goes to the daemon's log at
//! its severity's level and wakes whoever waits on the port's alerts
//! (resource subscriptions), and to the daemon's alert hook (metrics, the
//! webhook), which must not block.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::watch;

use crate::config::watches::{MAX_WATCHES, Severity, Watch, check_watch_name, check_watch_regex};
use crate::sync::lock;
use crate::watchset::{WatchHit, WatchSet};

/// Alerts kept per port; older ones are dropped and counted.
pub const MAX_ALERTS: usize = 256;
/// Watches one session may add to one port.
pub const MAX_SESSION_WATCHES: usize = 16;
/// Session watches one port takes from all sessions together.
pub const MAX_PORT_SESSION_WATCHES: usize = 64;

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
    /// Alerts raised since the port started.
    pub total: u64,
    /// Alerts dropped from the kept ones (the oldest go first).
    pub dropped: u64,
    /// Watches in force (config and sessions').
    pub watches: usize,
    /// The newest alert; null when there is none.
    pub last: Option<Alert>,
}

/// Called with every alert raised, on the reader's path: must not block
/// (count it, queue it with `try_send`).
pub type AlertHook = Arc<dyn Fn(&Alert) + Send + Sync>;

/// The watches in force, compiled together; index `i` of the set is
/// `watches[i]`.
pub(crate) struct Compiled {
    pub(crate) set: WatchSet,
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
    kept: VecDeque<Alert>,
    total: u64,
    dropped: u64,
    /// Session watches: the session's audit id and the watch.
    session: Vec<(u64, Watch)>,
}

impl Alerts {
    /// The alerts of port `port` with the config's `watches`.
    pub(crate) fn new(port: &str, config: Vec<Watch>, hook: Option<AlertHook>) -> Alerts {
        let alerts = Alerts {
            port: port.to_owned(),
            config,
            state: Mutex::new(State::default()),
            compiled: Mutex::new(Arc::new(Compiled {
                set: WatchSet::default(),
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

    fn recompile(&self, session: &[(u64, Watch)]) -> Result<(), regex::Error> {
        let mut watches: Vec<(Watch, Option<u64>)> =
            self.config.iter().cloned().map(|w| (w, None)).collect();
        watches.extend(session.iter().map(|(s, w)| (w.clone(), Some(*s))));
        let sources: Vec<&str> = watches.iter().map(|(w, _)| w.regex.as_str()).collect();
        let set = WatchSet::new(&sources)?;
        *lock(&self.compiled) = Arc::new(Compiled { set, watches });
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Raises an alert for each hit of the set `compiled`.
    pub(crate) fn raise(&self, compiled: &Compiled, hits: &[WatchHit]) {
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
                if state.kept.len() == MAX_ALERTS {
                    state.kept.pop_front();
                    state.dropped += 1;
                }
                state.kept.push_back(alert.clone());
                raised.push(alert);
            }
        }
        let Some(newest) = raised.last().map(|a| a.id) else {
            return;
        };
        for alert in &raised {
            log(alert);
            crate::metrics::alert(&alert.port, alert.severity.as_str());
            if let Some(hook) = &self.hook {
                hook(alert);
            }
        }
        self.changed.send_replace(newest);
    }

    /// Alerts with an id above `cursor`, oldest first, at most `limit`;
    /// and whether some after the cursor were dropped before being read.
    pub(crate) fn since(&self, cursor: u64, limit: usize) -> (Vec<Alert>, bool) {
        let state = lock(&self.state);
        let missed = state.kept.front().is_some_and(|a| a.id > cursor + 1)
            || (state.kept.is_empty() && state.total > cursor);
        let alerts = state
            .kept
            .iter()
            .filter(|a| a.id > cursor)
            .take(limit)
            .cloned()
            .collect();
        (alerts, missed)
    }

    /// The newest alerts, at most `limit`, oldest first.
    pub(crate) fn newest(&self, limit: usize) -> Vec<Alert> {
        let state = lock(&self.state);
        let skip = state.kept.len().saturating_sub(limit);
        state.kept.iter().skip(skip).cloned().collect()
    }

    /// Counts for `status`.
    pub(crate) fn summary(&self) -> AlertSummary {
        let watches = self.current().1.watches.len();
        let state = lock(&self.state);
        AlertSummary {
            total: state.total,
            dropped: state.dropped,
            watches,
            last: state.kept.back().cloned(),
        }
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
                .filter(|(s, _)| *s == session)
                .map(|(_, w)| w.clone()),
        );
        all
    }

    /// Adds (or replaces) a watch of `session`. The error says what is
    /// wrong; nothing changes then.
    pub(crate) fn add_session_watch(&self, session: u64, watch: Watch) -> Result<(), String> {
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
            .find(|(s, w)| *s == session && w.name == watch.name)
        {
            Some(slot) => slot.1 = watch,
            None => {
                let mine = session_list.iter().filter(|(s, _)| *s == session).count();
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
                session_list.push((session, watch));
            }
        }
        self.recompile(&session_list)
            .map_err(|e| format!("the watches do not compile together: {e}"))?;
        state.session = session_list;
        Ok(())
    }

    /// Removes `session`'s watch `name`; whether there was one.
    pub(crate) fn remove_session_watch(&self, session: u64, name: &str) -> bool {
        self.retain_session(|s, w| !(s == session && w.name == name))
    }

    /// Removes every watch of `session` (its end, or a disconnect).
    pub(crate) fn remove_session(&self, session: u64) {
        self.retain_session(|s, _| s != session);
    }

    fn retain_session(&self, keep: impl Fn(u64, &Watch) -> bool) -> bool {
        let mut state = lock(&self.state);
        let before = state.session.len();
        let kept: Vec<(u64, Watch)> = state
            .session
            .iter()
            .filter(|(s, w)| keep(*s, w))
            .cloned()
            .collect();
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

/// Device text as an alert keeps it: lossy UTF-8, control characters
/// escaped (`\r`, `\n`, `\u{1b}`), so that it can forge no log line.
fn evidence(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for c in String::from_utf8_lossy(bytes).chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The alert in the daemon's log, at its severity's level.
fn log(a: &Alert) {
    let (port, watch, severity) = (&a.port, &a.watch, a.severity.as_str());
    let (start, end, text) = (a.start, a.end, &a.text);
    match a.severity {
        Severity::Critical | Severity::Error => tracing::error!(
            port = %port, watch = %watch, severity, start, end,
            "alert {watch} ({severity}) on {port} at {start}-{end}: {text}"
        ),
        Severity::Warning => tracing::warn!(
            port = %port, watch = %watch, severity, start, end,
            "alert {watch} ({severity}) on {port} at {start}-{end}: {text}"
        ),
        Severity::Info => tracing::info!(
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
        assert_eq!(last.text, "x\\r\\n\\u{1b}[31m");
        let (read, missed) = alerts.since(0, 5);
        assert!(missed);
        assert_eq!(read[0].id, 11);
        let (read, missed) = alerts.since(last.id - 1, 5);
        assert!(!missed);
        assert_eq!(read.len(), 1);
        // An index outside the set (a stale one) raises nothing.
        alerts.raise(&compiled, &[hit(7, 0)]);
        assert_eq!(alerts.summary().total, MAX_ALERTS as u64 + 10);
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
            .add_session_watch(1, w("bgp", "BGP-5-ADJCHANGE"))
            .unwrap();
        assert!(alerts.generation() > g0);
        assert!(alerts.add_session_watch(1, w("bad", "(")).is_err());
        assert!(alerts.add_session_watch(1, w("empty", "x*")).is_err());
        assert!(alerts.add_session_watch(1, w("bad name\n", "x")).is_err());
        for i in 1..MAX_SESSION_WATCHES {
            alerts
                .add_session_watch(1, w(&format!("w{i}"), "y"))
                .unwrap();
        }
        assert!(alerts.add_session_watch(1, w("one_more", "y")).is_err());
        assert_eq!(alerts.watches_of(1).len(), MAX_SESSION_WATCHES);
        assert!(alerts.watches_of(2).is_empty());
        assert!(alerts.remove_session_watch(1, "bgp"));
        assert!(!alerts.remove_session_watch(1, "bgp"));
        alerts.remove_session(1);
        assert!(alerts.current().1.set.is_empty());
    }
}
