//! A serving gateway's feed of a port of another site: ONE per remote
//! port, however many people here watch it. The site keeps the bytes; the
//! feed hears the site's small notices that the port's output now reaches
//! further (`serialgate.from.<SITE>.console.head.<PORT>`), reads the new
//! range (`serialgate.site.<SITE>.console.read`, at most
//! [`MAX_RANGE`] a request) and keeps the last [`MIRROR_BYTES`] of it,
//! from which every watcher here is served at its own pace. A notice lost
//! is made up by a read every [`POLL_EVERY`]; a site cut off is read
//! again from where the feed stopped when it is back, so that what the
//! port printed meanwhile reaches the watchers.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::fleet_wire::{HeadNotice, MAX_RANGE, RangeAsk, RangeHead, decode_range};
use crate::error::{ErrorCode, GateError};
use crate::fleet::link::Fleet;
use crate::fleet::subjects;

/// Most bytes of a remote port's output a feed keeps for its watchers.
pub const MIRROR_BYTES: usize = 1 << 20;
/// How often a feed reads without a notice, to make up for one lost.
pub const POLL_EVERY: Duration = Duration::from_secs(1);
/// How long one range read may take.
const READ_DEADLINE: Duration = Duration::from_secs(5);
/// Most bytes one read of a watcher's backlog fetches from the site
/// (what a replay may send).
const MAX_BACKFILL: u64 = 256 * 1024;

/// The feeds by site and port; a feed nobody holds is gone.
type Feeds = Arc<Mutex<HashMap<(String, String), Weak<Feed>>>>;

/// This process's way to other sites' consoles, when it serves the
/// fleet: set once when the daemon has joined it. Kept here, beside the
/// console doors that use it, rather than in the gateway: the gateway
/// (below the access rules) must not know the console doors (above them).
static SERVING: std::sync::OnceLock<RemoteConsoles> = std::sync::OnceLock::new();

/// Lets every console door of this process reach the ports of other
/// sites through `consoles` (once; a second call is ignored: one daemon
/// joins one fleet).
pub fn set_serving(consoles: RemoteConsoles) {
    let _ = SERVING.set(consoles);
}

/// The fleet's consoles, when this process serves other sites' ports.
pub fn serving() -> Option<&'static RemoteConsoles> {
    SERVING.get()
}

/// A serving gateway's way to other sites' consoles: its fleet link, and
/// the feeds of the remote ports people watch. A cheap clonable handle.
#[derive(Clone)]
pub struct RemoteConsoles {
    /// The fleet (its directory says which sites are reachable).
    pub fleet: Fleet,
    feeds: Feeds,
}

impl RemoteConsoles {
    /// The consoles of `fleet`.
    pub fn new(fleet: Fleet) -> RemoteConsoles {
        RemoteConsoles {
            fleet,
            feeds: Arc::default(),
        }
    }

    /// The feed of `port` at `site`, started if nobody watches it yet;
    /// it stops when the last watcher drops it.
    pub fn feed(&self, site: &str, port: &str) -> Arc<Feed> {
        let mut feeds = crate::sync::lock(&self.feeds);
        feeds.retain(|_, f| f.strong_count() > 0);
        let key = (site.to_owned(), port.to_owned());
        if let Some(feed) = feeds.get(&key).and_then(Weak::upgrade) {
            return feed;
        }
        let stop = CancellationToken::new();
        let feed = Arc::new(Feed {
            fleet: self.fleet.clone(),
            site: site.to_owned(),
            port: port.to_owned(),
            mirror: Mutex::new(Mirror::default()),
            head: watch::Sender::new(Reach::default()),
            backfill: tokio::sync::Mutex::new(()),
            _stop: stop.clone().drop_guard(),
        });
        feeds.insert(key, Arc::downgrade(&feed));
        crate::task::spawn(run(Arc::downgrade(&feed), stop));
        feed
    }

    /// How many remote ports have a feed now (for the bench and tests).
    pub fn feeds(&self) -> usize {
        crate::sync::lock(&self.feeds)
            .values()
            .filter(|f| f.strong_count() > 0)
            .count()
    }
}

/// How far a remote port's output reaches, as the feed last read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// The port's log at its site.
    pub log: String,
    /// Where the output the feed holds ends.
    pub head: u64,
}

/// The last bytes of a remote port's output: `[base, base + len)`.
#[derive(Default)]
struct Mirror {
    log: String,
    base: u64,
    bytes: VecDeque<u8>,
}

impl Mirror {
    fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// Keeps `bytes` read at `start` of `log`; another log, or a gap
    /// (retention at the site dropped what the feed had not read), starts
    /// the mirror again there.
    fn append(&mut self, log: &str, start: u64, bytes: &[u8]) {
        if self.log != log || start != self.end() {
            self.log = log.to_owned();
            self.base = start;
            self.bytes.clear();
        }
        self.bytes.extend(bytes);
        let over = self.bytes.len().saturating_sub(MIRROR_BYTES);
        self.bytes.drain(..over);
        self.base += over as u64;
    }

    /// Keeps `bytes` read at `start`, which end where the mirror begins,
    /// as far as the mirror's room allows.
    fn prepend(&mut self, log: &str, start: u64, bytes: &[u8]) {
        if self.log != log || start + bytes.len() as u64 != self.base {
            return;
        }
        let room = MIRROR_BYTES.saturating_sub(self.bytes.len());
        let kept = &bytes[bytes.len().saturating_sub(room)..];
        for &b in kept.iter().rev() {
            self.bytes.push_front(b);
        }
        self.base -= kept.len() as u64;
    }
}

/// What a watcher reads of a feed.
#[derive(Debug, PartialEq, Eq)]
pub struct Slice {
    /// The offset of the first byte (after the one asked for when that
    /// was dropped by retention, at the site or here).
    pub start: u64,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// The feed of one remote port.
pub struct Feed {
    fleet: Fleet,
    site: String,
    port: String,
    mirror: Mutex<Mirror>,
    head: watch::Sender<Reach>,
    /// One watcher's backlog fetched at a time, so that watchers arriving
    /// together cost the site one read.
    backfill: tokio::sync::Mutex<()>,
    _stop: DropGuard,
}

impl Feed {
    /// Where the output reaches, told whenever it reaches further.
    pub fn watch(&self) -> watch::Receiver<Reach> {
        self.head.subscribe()
    }

    /// Asks the site for a read now (a watcher attached, or the site is
    /// back): the feed's reach is told when it is read.
    pub async fn refresh(&self) -> Result<(), GateError> {
        read_new(
            &self.fleet,
            &self.site,
            &self.port,
            &self.mirror,
            &self.head,
        )
        .await
    }

    /// The output of `log` in `[from, to)`, at most [`MAX_RANGE`] bytes:
    /// from the mirror, or what it no longer (or not yet) holds of the
    /// past from the site, kept in the mirror for the next watcher.
    pub async fn read(&self, log: &str, from: u64, to: u64) -> Result<Slice, GateError> {
        let to = to.min(from + MAX_RANGE as u64);
        if let Some(slice) = self.mirrored(log, from, to) {
            return Ok(slice);
        }
        let _one = self.backfill.lock().await;
        if let Some(slice) = self.mirrored(log, from, to) {
            return Ok(slice);
        }
        let base = {
            let mirror = crate::sync::lock(&self.mirror);
            if mirror.log == log { mirror.base } else { to }
        };
        // What the mirror lacks before its base, from `from` on, at most
        // MAX_BACKFILL back (in reads of MAX_RANGE), prepended when it
        // ends where the mirror begins.
        let end = base.min(from + MAX_BACKFILL);
        let mut at = from;
        let mut fetched = Vec::new();
        let mut first = None;
        while at < end {
            let (head, bytes) = ask_range(
                &self.fleet,
                &self.site,
                &RangeAsk {
                    port: self.port.clone(),
                    from: Some(at),
                    max: usize::try_from(end - at)
                        .unwrap_or(MAX_RANGE)
                        .min(MAX_RANGE),
                },
            )
            .await?;
            if head.log != log {
                break;
            }
            if first.is_none() {
                first = Some(head.start);
            } else if head.start != at {
                break;
            }
            if bytes.is_empty() {
                break;
            }
            at = head.start + bytes.len() as u64;
            fetched.extend_from_slice(&bytes);
        }
        let start = first.unwrap_or(from);
        if start + fetched.len() as u64 == base {
            crate::sync::lock(&self.mirror).prepend(log, start, &fetched);
        }
        if let Some(slice) = self.mirrored(log, from, to) {
            return Ok(slice);
        }
        let cut = usize::try_from(to.saturating_sub(start)).unwrap_or(usize::MAX);
        fetched.truncate(cut.min(MAX_RANGE));
        Ok(Slice {
            start,
            bytes: fetched,
        })
    }

    /// `[from, to)` of `log` from the mirror when it holds `from` (or
    /// retention there dropped it: then from its base).
    fn mirrored(&self, log: &str, from: u64, to: u64) -> Option<Slice> {
        let mirror = crate::sync::lock(&self.mirror);
        if mirror.log != log || from > mirror.end() || mirror.bytes.is_empty() {
            return None;
        }
        if from < mirror.base {
            return None;
        }
        let start = from;
        let end = to.min(mirror.end());
        let skip = usize::try_from(start - mirror.base).ok()?;
        let take = usize::try_from(end.saturating_sub(start)).ok()?;
        Some(Slice {
            start,
            bytes: mirror.bytes.iter().skip(skip).take(take).copied().collect(),
        })
    }

    /// Where the mirror begins in `log`, if it holds that log.
    pub fn oldest(&self, log: &str) -> Option<u64> {
        let mirror = crate::sync::lock(&self.mirror);
        (mirror.log == log).then_some(mirror.base)
    }
}

/// The feed's task: reads what the site's notices (or the poll) say is
/// new, until the last watcher drops the feed.
async fn run(feed: Weak<Feed>, stop: CancellationToken) {
    let Some((fleet, site, port)) = feed
        .upgrade()
        .map(|f| (f.fleet.clone(), f.site.clone(), f.port.clone()))
    else {
        return;
    };
    let mut notices = match fleet
        .client()
        .subscribe(subjects::console_heads(&site, &port))
        .await
    {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(
                "fleet: cannot hear {site}/{port}'s output notices ({e}); reading it every {POLL_EVERY:?}"
            );
            None
        }
    };
    let mut poll = tokio::time::interval(POLL_EVERY);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = poll.tick() => {}
            notice = async {
                match notices.as_mut() {
                    Some(n) => n.next().await,
                    None => std::future::pending().await,
                }
            } => {
                let Some(notice) = notice else { break };
                // A notice is only a hint (bounded, its subject names the
                // site); what is read is what the site answers.
                let Ok(notice) = serde_json::from_slice::<HeadNotice>(&notice.payload[..notice.payload.len().min(1024)]) else {
                    continue;
                };
                let Some(feed) = feed.upgrade() else { break };
                let reach = feed.head.borrow().clone();
                if notice.log == reach.log && notice.head <= reach.head {
                    continue;
                }
            }
        }
        let Some(feed) = feed.upgrade() else { break };
        if let Err(e) = feed.refresh().await {
            tracing::debug!("fleet: {site}/{port}'s output not read now: {}", e.message);
        }
    }
}

/// Reads what is new of `port` at `site` into `mirror`, in reads of at
/// most [`MAX_RANGE`], and tells `head`.
async fn read_new(
    fleet: &Fleet,
    site: &str,
    port: &str,
    mirror: &Mutex<Mirror>,
    head: &watch::Sender<Reach>,
) -> Result<(), GateError> {
    // At most one mirror's worth per refresh: a watcher far behind is
    // told what retention dropped.
    for _ in 0..=(MIRROR_BYTES / MAX_RANGE) {
        let (log, end) = {
            let m = crate::sync::lock(mirror);
            (m.log.clone(), m.end())
        };
        let from = (!log.is_empty()).then_some(end);
        let (answer, bytes) = ask_range(
            fleet,
            site,
            &RangeAsk {
                port: port.to_owned(),
                from,
                max: MAX_RANGE,
            },
        )
        .await?;
        let reach = {
            let mut m = crate::sync::lock(mirror);
            m.append(&answer.log, answer.start, &bytes);
            Reach {
                log: m.log.clone(),
                head: m.end(),
            }
        };
        head.send_if_modified(|r| {
            let changed = *r != reach;
            *r = reach.clone();
            changed
        });
        if reach.head >= answer.head || bytes.is_empty() {
            return Ok(());
        }
    }
    Ok(())
}

/// One range read of the site, within [`READ_DEADLINE`].
async fn ask_range(
    fleet: &Fleet,
    site: &str,
    ask: &RangeAsk,
) -> Result<(RangeHead, Vec<u8>), GateError> {
    let answer = fleet
        .ask_console(
            format!("{}.read", subjects::consoles(site)),
            ask,
            READ_DEADLINE,
            &format!("site {site} did not give {}'s output", ask.port),
        )
        .await?;
    let Some((head, bytes)) = decode_range(&answer.payload) else {
        return Err(GateError::new(
            ErrorCode::PortUnavailable,
            format!(
                "site {site} answered a read of {}'s output with something that is none (or over {MAX_RANGE} bytes): {}",
                ask.port,
                crate::error::label(&String::from_utf8_lossy(
                    &answer.payload[..answer.payload.len().min(200)]
                ))
            ),
        ));
    };
    if bytes.len() > ask.max || head.start > head.head {
        return Err(GateError::new(
            ErrorCode::PortUnavailable,
            format!("site {site} answered a read of {} out of bounds", ask.port),
        ));
    }
    Ok((head, bytes.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mirror_keeps_the_last_bytes_and_starts_again_at_a_gap_or_another_log() {
        let mut m = Mirror::default();
        m.append("a", 100, b"hello ");
        m.append("a", 106, b"world");
        assert_eq!((m.base, m.end()), (100, 111));
        m.prepend("a", 90, b"0123456789");
        assert_eq!((m.base, m.end()), (90, 111));
        // a prepend that does not end at the base is not kept
        m.prepend("a", 10, b"xy");
        assert_eq!(m.base, 90);
        m.append("a", 500, b"after a gap");
        assert_eq!((m.base, m.end()), (500, 511));
        m.append("b", 0, b"new log");
        assert_eq!((m.log.as_str(), m.base, m.end()), ("b", 0, 7));
        m.append("b", 7, &vec![b'x'; MIRROR_BYTES + 10]);
        assert_eq!(m.bytes.len(), MIRROR_BYTES);
        assert_eq!(m.end(), 7 + MIRROR_BYTES as u64 + 10);
    }
}
