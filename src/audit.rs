//! The audit trail: every write to a device (text, hex, keys, break,
//! auto-reply, expect step) with its time, port, session, client and token,
//! as JSON lines in `log_dir/audit.log` and as `audit` events in the log.
//! Text marked sensitive is recorded as `<redacted>`. The file is rotated
//! like the transcripts (`log_max`, `log_keep`, on a record boundary) and
//! never opened through a link ([`crate::logfile`]).
//!
//! Sessions attaching to and leaving a port (`attach`, `detach`) go to a
//! file of their own, `log_dir/sessions.log`, rotated the same way: anyone
//! who may read a port can attach and leave as fast as they like, and must
//! not be able to rotate a writer's record out of `audit.log` by doing so.
//!
//! Records go through a bounded channel to one task per file. A write
//! takes its place in the queue before it reaches the device
//! ([`Audit::reserve`]): when the writer is so far behind that no place
//! frees up within [`RECORD_WITHIN`], the write is refused, so a write
//! that happened is never missing from `audit.log` (short of the file
//! itself failing, which is logged). Attach, detach and take-over
//! records, which a session's end cannot wait for, wait for nothing: when
//! the queue is full they are dropped, counted ([`Audit::dropped`]) and
//! warned of ([`Audit::record_session`]). Every
//! record goes to the daemon's log first, whatever becomes of its line.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use tokio::sync::mpsc;

use crate::logfile::{LogDir, LogFile, Rotation};

/// Records that may wait for the audit writer.
const QUEUE: usize = 4096;
/// How long a write waits for a place in a full audit queue before it is
/// refused.
pub const RECORD_WITHIN: Duration = Duration::from_secs(5);
/// The audit trail's file of writes in `log_dir`.
pub const AUDIT_FILE: &str = "audit.log";
/// The file in `log_dir` of sessions attaching to and leaving ports.
pub const SESSIONS_FILE: &str = "sessions.log";
/// The record kinds that go to [`SESSIONS_FILE`], not to [`AUDIT_FILE`].
const SESSION_EVENTS: &[&str] = &["attach", "detach"];

/// Numbers sessions, agents' and people's alike, in the order they start,
/// for the audit trail and the write hold.
static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// A session number not used before in this daemon.
pub fn next_session() -> u64 {
    NEXT_SESSION.fetch_add(1, Ordering::Relaxed)
}

/// Who made a write.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Actor {
    /// The session's number in this daemon (an agent's MCP session or a
    /// person's console).
    pub session: u64,
    /// The client's name from its MCP `initialize` (e.g. `claude-code`),
    /// or `console` for a person.
    pub client: String,
    /// The token name over HTTP; `local` over stdio and the local console
    /// socket.
    pub token: String,
    /// A person at a console: their user name (the local socket's peer)
    /// or their token's name (over HTTP). `None` for an agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// `token` is a `[[tokens]]` entry of this gateway's config (an agent
    /// over HTTP): a reload that removes it or takes its write access away
    /// ends the session's write holds and lines waiting for approval.
    #[serde(skip)]
    pub config_token: bool,
}

impl Actor {
    /// How the actor is named in messages (`busy` errors, events): `alice
    /// on console` for a person, `session 3 (client claude-code, token
    /// lab)` for an agent.
    pub fn describe(&self) -> String {
        match &self.person {
            Some(person) if self.client == "ssh" && self.token == *person => {
                format!("{person} on ssh")
            }
            Some(person) if self.token == "local" || self.token == *person => {
                format!("{person} on console")
            }
            Some(person) => format!("{person} on console (token {})", self.token),
            None => format!(
                "session {} (client {}, token {})",
                self.session, self.client, self.token
            ),
        }
    }
}

/// One audited write.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
    /// RFC 3339 time.
    pub time: String,
    /// The port written to.
    pub port: String,
    /// Who wrote.
    #[serde(flatten)]
    pub actor: Actor,
    /// text, hex, keys, command, expect, auto_reply, break, probe…
    pub kind: String,
    /// The bytes, escaped, or `<redacted>`.
    pub data: String,
    /// Bytes written.
    pub bytes: usize,
    /// The request for a person's approval the record is about
    /// (`port/approvals.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<u64>,
    /// Who asked for that approval, when someone else decided it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
}

impl AuditRecord {
    /// A record stamped now.
    pub fn now(
        port: &str,
        actor: &Actor,
        kind: &str,
        bytes: &[u8],
        sensitive: bool,
    ) -> AuditRecord {
        AuditRecord {
            time: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            port: port.to_owned(),
            actor: actor.clone(),
            kind: kind.to_owned(),
            data: if sensitive {
                "<redacted>".to_owned()
            } else {
                bytes.escape_ascii().to_string()
            },
            bytes: bytes.len(),
            approval: None,
            requested_by: None,
        }
    }
}

/// A handle on the audit trail. Clones share it.
#[derive(Clone)]
pub struct Audit {
    writes: Option<mpsc::Sender<AuditRecord>>,
    sessions: Option<mpsc::Sender<AuditRecord>>,
    dropped: Arc<AtomicU64>,
    /// How long [`Audit::reserve`] waits for a place ([`RECORD_WITHIN`]).
    within: Duration,
}

/// Why an act could not be recorded (and so was not done).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unrecorded {
    /// No place in the queue freed up within the deadline.
    Behind(Duration),
    /// The writer task is gone (the daemon is stopping).
    Closed,
}

impl std::fmt::Display for Unrecorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unrecorded::Behind(within) => write!(
                f,
                "the audit trail is {QUEUE} records behind and had no room within {} s: \
                 nothing was sent, as nothing unrecorded is",
                within.as_secs_f64()
            ),
            Unrecorded::Closed => write!(
                f,
                "the audit trail is closed (the daemon is stopping): nothing was sent"
            ),
        }
    }
}

/// A place in the audit queue, taken before an act so that its record
/// cannot be lost after it: [`AuditSlot::record`] always succeeds.
#[must_use = "an act done with a slot is recorded with it"]
pub struct AuditSlot {
    permit: Option<mpsc::OwnedPermit<AuditRecord>>,
}

impl AuditSlot {
    /// Records `record` (in the log, and in the place taken).
    pub fn record(self, record: AuditRecord) {
        log_record(&record);
        if let Some(permit) = self.permit {
            permit.send(record);
        }
    }
}

/// Puts `record` in the daemon's log (target `audit`).
fn log_record(record: &AuditRecord) {
    tracing::info!(
        target: "audit",
        port = %record.port,
        session = record.actor.session,
        client = %record.actor.client,
        token = %record.actor.token,
        kind = %record.kind,
        bytes = record.bytes,
        "{}",
        record.data
    );
}

impl Audit {
    /// An audit trail to the log only (no `log_dir`).
    pub fn log_only() -> Audit {
        Audit {
            writes: None,
            sessions: None,
            dropped: Arc::new(AtomicU64::new(0)),
            within: RECORD_WITHIN,
        }
    }

    /// An audit trail appended to `dir/audit.log` and `dir/sessions.log`
    /// (each rotated by `rotation`) and to the log.
    pub fn to_dir(dir: &Path, rotation: Rotation) -> std::io::Result<Audit> {
        let dir = Arc::new(LogDir::open(dir)?);
        let writes = LogFile::open(dir.clone(), AUDIT_FILE, rotation)?;
        let sessions = LogFile::open(dir, SESSIONS_FILE, rotation)?;
        Ok(Audit {
            writes: Some(spawn_writer(writes, QUEUE)),
            sessions: Some(spawn_writer(sessions, QUEUE)),
            dropped: Arc::new(AtomicU64::new(0)),
            within: RECORD_WITHIN,
        })
    }

    /// [`Audit::to_dir`] with queues of `queue` records and a reserve
    /// deadline of `within`, for tests of a writer that falls behind.
    #[cfg(test)]
    fn to_dir_with(
        dir: &Path,
        rotation: Rotation,
        queue: usize,
        within: Duration,
    ) -> std::io::Result<Audit> {
        let dir = Arc::new(LogDir::open(dir)?);
        let writes = LogFile::open(dir.clone(), AUDIT_FILE, rotation)?;
        let sessions = LogFile::open(dir, SESSIONS_FILE, rotation)?;
        Ok(Audit {
            writes: Some(spawn_writer(writes, queue)),
            sessions: Some(spawn_writer(sessions, queue)),
            dropped: Arc::new(AtomicU64::new(0)),
            within,
        })
    }

    /// An audit trail whose writes go to a queue of `queue` records that
    /// nobody reads until the test does, for tests of a full queue.
    #[cfg(test)]
    fn stuck(queue: usize, within: Duration) -> (Audit, mpsc::Receiver<AuditRecord>) {
        let (tx, rx) = mpsc::channel(queue);
        let audit = Audit {
            writes: Some(tx),
            sessions: None,
            dropped: Arc::new(AtomicU64::new(0)),
            within,
        };
        (audit, rx)
    }

    /// Takes a place in `audit.log`'s queue for an act about to be done,
    /// waiting at most [`RECORD_WITHIN`] for one; the act must not be done
    /// on an error. (Attach and detach records take no place: see
    /// [`Audit::record_session`].)
    pub async fn reserve(&self) -> Result<AuditSlot, Unrecorded> {
        let Some(tx) = &self.writes else {
            return Ok(AuditSlot { permit: None });
        };
        match tokio::time::timeout(self.within, tx.clone().reserve_owned()).await {
            Ok(Ok(permit)) => Ok(AuditSlot {
                permit: Some(permit),
            }),
            Ok(Err(_)) => Err(Unrecorded::Closed),
            Err(_) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    "audit: a write was refused: {}",
                    Unrecorded::Behind(self.within)
                );
                Err(Unrecorded::Behind(self.within))
            }
        }
    }

    /// Records an act already done (a transfer's outcome, say), waiting
    /// at most [`RECORD_WITHIN`] for a place; an act that must not happen
    /// unrecorded takes its place first with [`Audit::reserve`]. A record
    /// with no place is in the log only, and counted.
    pub async fn record(&self, record: AuditRecord) -> Result<(), Unrecorded> {
        if SESSION_EVENTS.contains(&record.kind.as_str()) {
            self.record_session(record);
            return Ok(());
        }
        match self.reserve().await {
            Ok(slot) => {
                slot.record(record);
                Ok(())
            }
            Err(e) => {
                log_record(&record);
                Err(e)
            }
        }
    }

    /// Records a session's attach, detach or take-over, or an approval's
    /// request or decision, without waiting (a session's end, or a
    /// decision taken under a lock, cannot wait): `attach` and `detach` in
    /// `sessions.log`, the others (a take-over, a console's attach) in
    /// `audit.log`. A full queue drops the line (the log still has the
    /// record), counts it and warns.
    pub fn record_session(&self, record: AuditRecord) {
        log_record(&record);
        let (queue, file) = if SESSION_EVENTS.contains(&record.kind.as_str()) {
            (&self.sessions, SESSIONS_FILE)
        } else {
            (&self.writes, AUDIT_FILE)
        };
        if let Some(tx) = queue
            && tx.try_send(record).is_err()
        {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::warn!(
                "audit: {file} is behind: a session's line was dropped ({dropped} so far; the log has it)"
            );
        }
    }

    /// Records the audit trail could not take (refused writes, dropped
    /// attach and detach lines).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// One task that appends the records it is sent to `file`, rotating it.
fn spawn_writer(file: LogFile, queue: usize) -> mpsc::Sender<AuditRecord> {
    let (tx, rx) = mpsc::channel::<AuditRecord>(queue);
    crate::task::spawn(write_records(file, rx));
    tx
}

/// Appends each record `rx` gives to `file`, rotating it, until every
/// sender is gone.
async fn write_records(mut file: LogFile, mut rx: mpsc::Receiver<AuditRecord>) {
    while let Some(record) = rx.recv().await {
        let mut line = serde_json::to_vec(&record).unwrap_or_default();
        line.push(b'\n');
        let written = file.append(&line).and_then(|()| {
            if file.rotation_due() {
                file.rotate()
            } else {
                Ok(())
            }
        });
        if let Err(e) = written {
            tracing::error!("audit log {}: {e}", file.path().display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROTATION: Rotation = Rotation {
        max_bytes: 1 << 20,
        keep: 2,
    };

    #[tokio::test]
    async fn records_are_json_lines_and_secrets_are_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let audit = Audit::to_dir(dir.path(), ROTATION).unwrap();
        let actor = Actor {
            session: 3,
            client: "claude-code".into(),
            token: "noc-agent".into(),
            person: None,
            config_token: false,
        };
        let record =
            |kind, bytes, sensitive| AuditRecord::now("core-sw1", &actor, kind, bytes, sensitive);
        audit
            .record(record("text", b"show clock\r", false))
            .await
            .unwrap();
        audit
            .record(record("expect", b"s3cret\r", true))
            .await
            .unwrap();
        drop(audit);
        let path = dir.path().join("audit.log");
        // The writer task ends when the last handle drops: await its lines.
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        let text = loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if text.lines().count() == 2 || tokio::time::Instant::now() > deadline {
                break text;
            }
            tokio::task::yield_now().await;
        };
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["port"], "core-sw1");
        assert_eq!(lines[0]["session"], 3);
        assert_eq!(lines[0]["token"], "noc-agent");
        assert_eq!(lines[0]["data"], "show clock\\r");
        assert_eq!(lines[1]["data"], "<redacted>");
        assert!(!text.contains("s3cret"));
    }

    /// Reads `dir/name` until it has `lines` lines (the writer task is
    /// behind the channel), with a deadline.
    async fn lines_of(dir: &Path, name: &str, lines: usize) -> String {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            if text.lines().count() >= lines || tokio::time::Instant::now() > deadline {
                return text;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    /// A reader attaching and leaving as fast as it can fills and rotates
    /// sessions.log only: the writer's record stays in audit.log.
    #[tokio::test]
    async fn attaching_and_leaving_never_rotates_a_write_out() {
        let dir = tempfile::tempdir().unwrap();
        let small = Rotation {
            max_bytes: 4096,
            keep: 1,
        };
        let audit = Audit::to_dir(dir.path(), small).unwrap();
        let writer = Actor {
            session: 1,
            client: "claude-code".into(),
            token: "noc-writer".into(),
            person: None,
            config_token: false,
        };
        let reader = Actor {
            session: 2,
            client: "console".into(),
            token: "noc-reader".into(),
            person: Some("noc-reader".into()),
            config_token: false,
        };
        let write = |bytes| AuditRecord::now("sw1", &writer, "text", bytes, false);
        audit.record(write(b"reload\r")).await.unwrap();
        for round in 0..400 {
            let kind = if round % 2 == 0 { "attach" } else { "detach" };
            audit.record_session(AuditRecord::now("sw1", &reader, kind, b"", false));
            if round % 64 == 0 {
                tokio::task::yield_now().await;
            }
        }
        audit.record(write(b"yes\r")).await.unwrap();
        let writes = lines_of(dir.path(), AUDIT_FILE, 2).await;
        assert!(
            writes.contains("reload") && writes.contains("yes"),
            "{writes}"
        );
        assert!(!writes.contains("attach") && !writes.contains("noc-reader"));
        let sessions = lines_of(dir.path(), SESSIONS_FILE, 1).await;
        assert!(sessions.contains("\"kind\":\"detach\""), "{sessions}");
        assert!(
            dir.path().join(format!("{SESSIONS_FILE}.1")).exists(),
            "the flood rotated sessions.log"
        );
        assert_eq!(audit.dropped(), 0);
    }

    fn agent() -> Actor {
        Actor {
            session: 7,
            client: "flood".into(),
            token: "noc-agent".into(),
            person: None,
            config_token: false,
        }
    }

    /// Writes from many sessions at once, far more than the queue holds and
    /// faster than the file takes them: each waits for its place, and
    /// every one is in audit.log, in each session's order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_flood_of_writes_waits_for_the_writer_and_loses_none() {
        let dir = tempfile::tempdir().unwrap();
        let audit = Audit::to_dir_with(dir.path(), ROTATION, 8, Duration::from_secs(60)).unwrap();
        let (sessions, each) = (8, 500);
        let floods: Vec<_> = (0..sessions)
            .map(|s| {
                let audit = audit.clone();
                crate::task::spawn(async move {
                    for i in 0..each {
                        let text = format!("s{s} w{i}");
                        let slot = audit.reserve().await.expect("a place within 60 s");
                        slot.record(AuditRecord::now(
                            "sw1",
                            &agent(),
                            "text",
                            text.as_bytes(),
                            false,
                        ));
                    }
                })
            })
            .collect();
        for flood in floods {
            flood.await.unwrap();
        }
        assert_eq!(audit.dropped(), 0);
        let text = lines_of(dir.path(), AUDIT_FILE, sessions * each).await;
        let data: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["data"].to_string())
            .collect();
        assert_eq!(data.len(), sessions * each, "every write is recorded");
        for s in 0..sessions {
            let mine: Vec<&String> = data
                .iter()
                .filter(|d| d.starts_with(&format!("\"s{s} ")))
                .collect();
            let want: Vec<String> = (0..each).map(|i| format!("\"s{s} w{i}\"")).collect();
            assert!(mine.iter().zip(&want).all(|(a, b)| *a == b), "session {s}");
            assert_eq!(mine.len(), each, "session {s}");
        }
    }

    /// A writer stuck for good: once the queue is full, a write waits for
    /// its place up to the deadline and is then refused (and counted),
    /// and a place that frees up before the deadline lets the waiting
    /// write through. The clock is tokio's paused one.
    #[tokio::test(start_paused = true)]
    async fn a_full_queue_refuses_at_the_deadline_and_admits_when_room_frees() {
        let within = Duration::from_secs(5);
        let (audit, mut rx) = Audit::stuck(2, within);
        for i in 0..2 {
            let slot = audit.reserve().await.expect("room in the queue");
            slot.record(AuditRecord::now(
                "sw1",
                &agent(),
                "text",
                format!("w{i}").as_bytes(),
                false,
            ));
        }
        let started = tokio::time::Instant::now();
        let refused = audit.reserve().await.err();
        assert_eq!(refused, Some(Unrecorded::Behind(within)));
        assert_eq!(started.elapsed(), within, "it waited the whole deadline");
        assert_eq!(audit.dropped(), 1);
        assert!(refused.unwrap().to_string().contains("nothing was sent"));
        // A write waits; the writer takes one record; the write gets in.
        let waiting = crate::task::spawn({
            let audit = audit.clone();
            async move {
                let slot = audit.reserve().await?;
                slot.record(AuditRecord::now("sw1", &agent(), "text", b"w2", false));
                Ok::<_, Unrecorded>(())
            }
        });
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(!waiting.is_finished(), "no room yet");
        assert_eq!(rx.recv().await.unwrap().data, "w0");
        waiting.await.unwrap().expect("admitted once room freed");
        assert_eq!(rx.recv().await.unwrap().data, "w1");
        assert_eq!(rx.recv().await.unwrap().data, "w2");
        assert_eq!(audit.dropped(), 1);
        // `record` of an act already done takes the same way.
        drop(rx);
        assert_eq!(
            audit
                .record(AuditRecord::now("sw1", &agent(), "text", b"late", false))
                .await,
            Err(Unrecorded::Closed)
        );
    }
}
