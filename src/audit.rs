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
//! Writers never wait for the file: records go through a bounded channel
//! to one task; a full channel drops the record and counts it.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use serde::Serialize;
use tokio::sync::mpsc;

use crate::logfile::{LogDir, LogFile, Rotation};

/// Records that may wait for the audit writer.
const QUEUE: usize = 4096;
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
}

impl Actor {
    /// How the actor is named in messages (`busy` errors, events): `alice
    /// on console` for a person, `session 3 (client claude-code, token
    /// lab)` for an agent.
    pub fn describe(&self) -> String {
        match &self.person {
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
}

impl Audit {
    /// An audit trail to the log only (no `log_dir`).
    pub fn log_only() -> Audit {
        Audit {
            writes: None,
            sessions: None,
            dropped: Arc::new(AtomicU64::new(0)),
        }
    }

    /// An audit trail appended to `dir/audit.log` and `dir/sessions.log`
    /// (each rotated by `rotation`) and to the log.
    pub fn to_dir(dir: &Path, rotation: Rotation) -> std::io::Result<Audit> {
        let dir = Arc::new(LogDir::open(dir)?);
        let writes = LogFile::open(dir.clone(), AUDIT_FILE, rotation)?;
        let sessions = LogFile::open(dir, SESSIONS_FILE, rotation)?;
        Ok(Audit {
            writes: Some(spawn_writer(writes)),
            sessions: Some(spawn_writer(sessions)),
            dropped: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Records a write; never blocks.
    pub fn record(&self, record: AuditRecord) {
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
        let file = if SESSION_EVENTS.contains(&record.kind.as_str()) {
            &self.sessions
        } else {
            &self.writes
        };
        if let Some(tx) = file
            && tx.try_send(record).is_err()
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records dropped because the writer was behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// One task that appends the records it is sent to `file`, rotating it.
fn spawn_writer(mut file: LogFile) -> mpsc::Sender<AuditRecord> {
    let (tx, mut rx) = mpsc::channel::<AuditRecord>(QUEUE);
    tokio::spawn(async move {
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
                tracing::warn!("audit log {}: {e}", file.path().display());
            }
        }
    });
    tx
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
        };
        audit.record(AuditRecord::now(
            "core-sw1",
            &actor,
            "text",
            b"show clock\r",
            false,
        ));
        audit.record(AuditRecord::now(
            "core-sw1",
            &actor,
            "expect",
            b"s3cret\r",
            true,
        ));
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
        };
        let reader = Actor {
            session: 2,
            client: "console".into(),
            token: "noc-reader".into(),
            person: Some("noc-reader".into()),
        };
        audit.record(AuditRecord::now("sw1", &writer, "text", b"reload\r", false));
        for round in 0..400 {
            let kind = if round % 2 == 0 { "attach" } else { "detach" };
            audit.record(AuditRecord::now("sw1", &reader, kind, b"", false));
            if round % 64 == 0 {
                tokio::task::yield_now().await;
            }
        }
        audit.record(AuditRecord::now("sw1", &writer, "text", b"yes\r", false));
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
}
