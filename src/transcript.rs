//! Per-port transcripts: everything the device sent, line by line with a
//! timestamp at the start of each line, and what was sent to it marked as
//! such, in `log_dir/transcripts/<port>.log` (a folder of their own, so no
//! port name reaches the audit trail or another file), rotated by size on a
//! line boundary. The file is opened, rotated and read through
//! [`crate::logfile`], never through a link.
//!
//! The writer is its own task that follows the OutputLog (it never slows
//! the reader): it wakes on appends, copies the new bytes and writes them.
//! If it falls so far behind that retention dropped bytes it had not
//! written, it writes a marker saying how many — losses are counted, never
//! silent. Sent data reaches it through a bounded channel; a full channel
//! drops the record and counts it. A file transfer's binary traffic is
//! left out: the range of the OutputLog it spans is replaced by one
//! summary line ([`Transcript::binary_begin`], [`Transcript::binary_end`]).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::log::OutputLog;
use crate::logfile::{LogDir, LogFile, Rotation};

/// The folder of `log_dir` the transcripts are in.
pub const TRANSCRIPTS_DIR: &str = "transcripts";
/// Default size at which a transcript is rotated.
pub const DEFAULT_LOG_MAX: u64 = 16 * 1024 * 1024;
/// Default number of rotated transcripts kept (`<port>.log.1` …).
pub const DEFAULT_LOG_KEEP: usize = 5;
/// How many sent records may wait for the writer before new ones are dropped.
const SENT_QUEUE: usize = 1024;
/// Most bytes copied from the log per wake-up.
const COPY_CHUNK: u64 = 256 * 1024;

/// Where and how a port's transcript is written.
#[derive(Debug, Clone)]
pub struct TranscriptConfig {
    /// The directory (`[server] log_dir`).
    pub dir: PathBuf,
    /// When to rotate (at the next line boundary) and how many rotated
    /// files to keep.
    pub rotation: Rotation,
}

/// Something sent to the device, for the transcript.
#[derive(Debug, Clone)]
pub struct SentRecord {
    /// What kind of write: text, hex, keys, break, auto_reply…
    pub kind: &'static str,
    /// The bytes, or `None` when they were marked sensitive.
    pub bytes: Option<Vec<u8>>,
    /// A person who typed them at a console (`alice on console`); `None`
    /// for an agent's write or the gateway's own.
    pub who: Option<String>,
}

/// A handle to a port's transcript writer task.
#[derive(Clone)]
pub struct Transcript {
    dir: Arc<LogDir>,
    name: String,
    path: PathBuf,
    sent: mpsc::Sender<SentRecord>,
    dropped_sent: Arc<AtomicU64>,
    progress: watch::Receiver<Progress>,
    binary: Arc<std::sync::Mutex<Binary>>,
    binary_changed: Arc<watch::Sender<u64>>,
}

/// The OutputLog ranges a transfer spans, which the writer replaces by a
/// summary line.
#[derive(Debug, Default)]
struct Binary {
    /// A transfer under way since this offset: the writer stops there.
    open_from: Option<u64>,
    /// Ended transfers not yet written: their range and summary.
    closed: std::collections::VecDeque<(u64, u64, String)>,
}

/// How far the writer got: lets a caller (a test, a flush at shutdown)
/// await the file instead of polling it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Log offset up to which device output is in the file.
    pub device_offset: u64,
    /// Sent records written so far.
    pub sent_records: u64,
}

impl Transcript {
    /// Starts the writer for `port`, following `log` from its current head.
    pub fn start(
        port: &str,
        log: OutputLog,
        config: TranscriptConfig,
        stop: CancellationToken,
    ) -> io::Result<Transcript> {
        let name = file_name(port)?;
        let dir = Arc::new(LogDir::open(&config.dir)?.subdir(TRANSCRIPTS_DIR)?);
        let file = LogFile::open(dir.clone(), &name, config.rotation)?;
        let path = file.path();
        let (sent, sent_rx) = mpsc::channel(SENT_QUEUE);
        // Follow from the head now, not when the task first runs.
        let from = log.head();
        let (progress_tx, progress) = watch::channel(Progress {
            device_offset: from,
            sent_records: 0,
        });
        let writer = Writer {
            file,
            at_line_start: true,
        };
        let binary = Arc::new(std::sync::Mutex::new(Binary::default()));
        let binary_changed = Arc::new(watch::Sender::new(0));
        let follow = Follow {
            log,
            binary: binary.clone(),
            binary_rx: binary_changed.subscribe(),
        };
        crate::task::spawn(run(writer, follow, from, sent_rx, progress_tx, stop));
        Ok(Transcript {
            dir,
            name,
            path,
            sent,
            dropped_sent: Arc::new(AtomicU64::new(0)),
            progress,
            binary,
            binary_changed,
        })
    }

    /// A transfer starts: device output from `from` on is held back until
    /// [`binary_end`](Self::binary_end) says where it ended.
    pub fn binary_begin(&self, from: u64) {
        crate::sync::lock(&self.binary).open_from = Some(from);
        self.binary_changed.send_modify(|n| *n += 1);
    }

    /// The transfer ended at `to`: its range is written as `summary`, one
    /// line, and what follows it as usual.
    pub fn binary_end(&self, to: u64, summary: String) {
        {
            let mut binary = crate::sync::lock(&self.binary);
            let from = binary.open_from.take().unwrap_or(to);
            binary.closed.push_back((from, to.max(from), summary));
        }
        self.binary_changed.send_modify(|n| *n += 1);
    }

    /// The transcript file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records a write to the device; never blocks (a full queue drops the
    /// record and counts it).
    pub fn record_sent(&self, record: SentRecord) {
        if self.sent.try_send(record).is_err() {
            self.dropped_sent.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Sent records dropped because the writer was behind.
    pub fn dropped_sent(&self) -> u64 {
        self.dropped_sent.load(Ordering::Relaxed)
    }

    /// Waits (at most `timeout`) until the file holds device output up to
    /// `offset` and `sent` sent records; false on timeout.
    pub async fn wait_written(&self, offset: u64, sent: u64, timeout: std::time::Duration) -> bool {
        let mut rx = self.progress.clone();
        let done = rx.wait_for(|p| p.device_offset >= offset && p.sent_records >= sent);
        matches!(tokio::time::timeout(timeout, done).await, Ok(Ok(_)))
    }

    /// The last `max` bytes of the transcript file (from a line start when
    /// one is near), read without following a link put in its place.
    pub fn tail(&self, max: u64) -> io::Result<String> {
        tail(self.dir.open_read(&self.name)?, max)
    }

    /// The file opened for reading (never through a link) at its last
    /// `max` bytes, with where that is and its length now: for a download
    /// of its end read a piece at a time.
    pub fn open_tail(&self, max: u64) -> io::Result<(File, u64, u64)> {
        let mut file = self.dir.open_read(&self.name)?;
        let (start, len) = seek_to_tail(&mut file, max)?;
        Ok((file, start, len))
    }
}

/// The transcript file name of `port`. Port names are checked where they
/// are made (config, ad-hoc connects); this refuses again any name that
/// would leave the transcripts folder or hide as a dot file.
fn file_name(port: &str) -> io::Result<String> {
    let safe = port
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !safe || port.is_empty() || port.starts_with('.') || port.len() > 200 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the port name {} cannot name a transcript file; use letters, digits, '_', '.' and '-'",
                crate::error::shown(port)
            ),
        ));
    }
    Ok(format!("{port}.log"))
}

/// Puts `file` at its last `max` bytes: where that is, and its length.
fn seek_to_tail(file: &mut File, max: u64) -> io::Result<(u64, u64)> {
    use std::io::{Seek, SeekFrom};
    let len = file.metadata()?.len();
    let start = len.saturating_sub(max);
    file.seek(SeekFrom::Start(start))?;
    Ok((start, len))
}

/// The last `max` bytes of a file, starting after the first line break
/// when the cut falls mid-line.
fn tail(mut file: File, max: u64) -> io::Result<String> {
    use std::io::Read;
    let (start, len) = seek_to_tail(&mut file, max)?;
    let mut bytes = Vec::with_capacity((len - start) as usize);
    file.read_to_end(&mut bytes)?;
    if start > 0
        && let Some(nl) = memchr::memchr(b'\n', &bytes)
        && nl + 1 < bytes.len()
    {
        bytes.drain(..=nl);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn timestamp() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

struct Writer {
    file: LogFile,
    at_line_start: bool,
}

impl Writer {
    /// Writes device bytes, a timestamp at the start of each line. Lines
    /// are written in batches cut where a rotation is due, so a rotated
    /// file always ends on a line boundary.
    fn device(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut out = Vec::with_capacity(bytes.len().min(64 * 1024) + 64);
        let stamp = timestamp();
        for piece in bytes.split_inclusive(|&b| b == b'\n') {
            if self.at_line_start {
                out.extend_from_slice(stamp.as_bytes());
                out.push(b' ');
            }
            out.extend_from_slice(piece);
            self.at_line_start = piece.ends_with(b"\n");
            if self.at_line_start && self.file.full_after(out.len() as u64) {
                self.write(&out)?;
                out.clear();
            }
        }
        self.write(&out)
    }

    /// Writes a marker line (sent data, losses), on a line of its own.
    fn marker(&mut self, text: &str) -> io::Result<()> {
        let mut out = String::new();
        if !self.at_line_start {
            out.push('\n');
        }
        out.push_str(&format!("{} {text}\n", timestamp()));
        self.at_line_start = true;
        self.write(out.as_bytes())
    }

    /// Appends, then rotates if due and the file ends a line.
    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.append(bytes)?;
        if self.at_line_start && self.file.rotation_due() {
            self.file.rotate()?;
        }
        Ok(())
    }
}

fn describe_sent(record: &SentRecord) -> String {
    let by = record
        .who
        .as_ref()
        .map_or_else(String::new, |who| format!(" by {who}"));
    match &record.bytes {
        None => format!(">>> sent {}{by}: <redacted>", record.kind),
        Some(b) => format!(">>> sent {}{by}: {}", record.kind, b.escape_ascii()),
    }
}

/// What the writer follows: the log, and the transfers' ranges in it.
struct Follow {
    log: OutputLog,
    binary: Arc<std::sync::Mutex<Binary>>,
    binary_rx: watch::Receiver<u64>,
}

impl Follow {
    /// Where the writer may copy to from `written`, given the `head`; a
    /// transfer's range that starts at `written` is taken: its summary
    /// and end are returned.
    fn limit(&self, written: u64, head: u64) -> (u64, Option<(u64, String)>) {
        let mut binary = crate::sync::lock(&self.binary);
        if let Some(&(from, to, _)) = binary.closed.front()
            && from <= written
        {
            let summary = binary.closed.pop_front().map(|(_, _, s)| s);
            return (head, summary.map(|s| (to, s)));
        }
        let stop = binary
            .closed
            .front()
            .map(|&(from, _, _)| from)
            .or(binary.open_from);
        (stop.map_or(head, |s| head.min(s.max(written))), None)
    }
}

async fn run(
    mut writer: Writer,
    mut follow: Follow,
    from: u64,
    mut sent: mpsc::Receiver<SentRecord>,
    progress: watch::Sender<Progress>,
    stop: CancellationToken,
) {
    let log = follow.log.clone();
    let mut head_rx = log.subscribe();
    let mut written = from;
    let mut sent_open = true;
    let mut sent_records = 0;
    loop {
        let mut head = *head_rx.borrow_and_update();
        follow.binary_rx.borrow_and_update();
        loop {
            let (limit, summary) = follow.limit(written, head);
            let Some((to, line)) = summary else {
                head = limit;
                break;
            };
            if let Err(e) = writer.marker(&line) {
                tracing::warn!("transcript {}: {e}", writer.file.path().display());
            }
            written = written.max(to);
        }
        while written < head {
            let oldest = log.oldest();
            if written < oldest {
                let lost = oldest - written;
                if let Err(e) = writer.marker(&format!(
                    "[serialgate: {lost} bytes dropped by retention before they were written here]"
                )) {
                    tracing::warn!("transcript {}: {e}", writer.file.path().display());
                }
                written = oldest;
            }
            let to = head.min(written + COPY_CHUNK);
            let bytes = log.copy_range(written, to);
            written = to;
            if let Err(e) = writer.device(&bytes) {
                tracing::warn!("transcript {}: {e}", writer.file.path().display());
            }
        }
        progress.send_replace(Progress {
            device_offset: written,
            sent_records,
        });
        tokio::select! {
            _ = stop.cancelled() => break,
            changed = head_rx.changed() => if changed.is_err() { break },
            changed = follow.binary_rx.changed() => if changed.is_err() { break },
            record = sent.recv(), if sent_open => match record {
                Some(r) => {
                    if let Err(e) = writer.marker(&describe_sent(&r)) {
                        tracing::warn!("transcript {}: {e}", writer.file.path().display());
                    }
                    sent_records += 1;
                }
                None => sent_open = false,
            },
        }
    }
    // Flush what arrived last, then close.
    let head = log.head();
    if written < head {
        let _ = writer.device(&log.copy_range(written.max(log.oldest()), head));
    }
    while let Ok(r) = sent.try_recv() {
        let _ = writer.marker(&describe_sent(&r));
        sent_records += 1;
    }
    let _ = writer.file.flush();
    progress.send_replace(Progress {
        device_offset: head.max(written),
        sent_records,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, max: u64, keep: usize) -> TranscriptConfig {
        TranscriptConfig {
            dir: dir.to_owned(),
            rotation: Rotation {
                max_bytes: max,
                keep,
            },
        }
    }

    /// Waits until the writer has the log up to its head and `sent`
    /// records in the file, then reads it.
    async fn written(t: &Transcript, log: &OutputLog, sent: u64) -> String {
        assert!(
            t.wait_written(log.head(), sent, std::time::Duration::from_secs(5))
                .await
        );
        std::fs::read_to_string(t.path()).unwrap()
    }

    #[tokio::test]
    async fn lines_get_timestamps_and_sent_data_is_marked() {
        let dir = tempfile::tempdir().unwrap();
        let log = OutputLog::new(1 << 20);
        let t = Transcript::start(
            "sw1",
            log.clone(),
            config(dir.path(), 1 << 20, 2),
            CancellationToken::new(),
        )
        .unwrap();
        log.append(b"SW1#sh");
        log.append(b"ow clock\r\n*12:00 UTC\r\nSW1#");
        let text = written(&t, &log, 0).await;
        let lines: Vec<&str> = text.split('\n').collect();
        assert!(lines[0].ends_with(" SW1#show clock\r"), "{text}");
        assert!(lines[1].ends_with(" *12:00 UTC\r"), "{text}");
        assert!(
            lines[0].starts_with("20") && lines[0].as_bytes()[23] == b'Z',
            "{text}"
        );
        t.record_sent(SentRecord {
            kind: "text",
            bytes: Some(b"enable\r".to_vec()),
            who: None,
        });
        t.record_sent(SentRecord {
            kind: "expect",
            bytes: None,
            who: None,
        });
        let text = written(&t, &log, 2).await;
        assert!(text.contains(">>> sent text: enable\\r"), "{text}");
        assert!(text.contains(">>> sent expect: <redacted>"), "{text}");
    }

    #[tokio::test]
    async fn a_transfer_is_one_summary_line_not_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let log = OutputLog::new(1 << 20);
        let t = Transcript::start(
            "r1",
            log.clone(),
            config(dir.path(), 1 << 20, 2),
            CancellationToken::new(),
        )
        .unwrap();
        log.append(b"rommon 2 > xmodem -c img\r\n");
        t.binary_begin(log.head());
        log.append(b"CCC\x06\x06\x15\x06BINARY");
        let text = written_to(&t, log.head() - 14).await;
        assert!(!text.contains("CCC"), "{text}");
        t.binary_end(log.head(), ">>> send_file xmodem-1k img: done".into());
        log.append(b"\r\nrommon 3 > ");
        let text = written(&t, &log, 0).await;
        assert!(text.contains("xmodem -c img\r\n"), "{text}");
        assert!(
            text.contains(" >>> send_file xmodem-1k img: done\n"),
            "{text}"
        );
        assert!(text.contains("rommon 3 > "), "{text}");
        assert!(!text.contains("BINARY") && !text.contains('\x06'), "{text}");
    }

    /// The file once the writer has device output up to `offset`.
    async fn written_to(t: &Transcript, offset: u64) -> String {
        assert!(
            t.wait_written(offset, 0, std::time::Duration::from_secs(5))
                .await
        );
        std::fs::read_to_string(t.path()).unwrap()
    }

    #[tokio::test]
    async fn rotates_on_a_line_boundary_and_keeps_n_files() {
        let dir = tempfile::tempdir().unwrap();
        let log = OutputLog::new(1 << 20);
        let t = Transcript::start(
            "r1",
            log.clone(),
            config(dir.path(), 200, 2),
            CancellationToken::new(),
        )
        .unwrap();
        for i in 0..40 {
            log.append(format!("line {i:03} of output\r\n").as_bytes());
        }
        log.append(b"END\r\n");
        written(&t, &log, 0).await;
        let transcripts = dir.path().join(TRANSCRIPTS_DIR);
        let rotated = std::fs::read_to_string(transcripts.join("r1.log.1")).unwrap();
        assert!(rotated.ends_with('\n'), "cut on a line boundary");
        assert!(transcripts.join("r1.log.2").exists());
        assert!(!transcripts.join("r1.log.3").exists());
    }

    #[test]
    fn tail_starts_at_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.log");
        std::fs::write(&path, "first line\nsecond line\nthird\n").unwrap();
        let open = || File::open(&path).unwrap();
        assert_eq!(tail(open(), 15).unwrap(), "third\n");
        assert_eq!(
            tail(open(), 1000).unwrap(),
            "first line\nsecond line\nthird\n"
        );
    }

    #[tokio::test]
    async fn transcripts_have_a_folder_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcript::start(
            "audit",
            OutputLog::new(4096),
            config(dir.path(), 1 << 20, 2),
            CancellationToken::new(),
        )
        .unwrap();
        assert_eq!(t.path(), dir.path().join("transcripts/audit.log"));
        assert!(!dir.path().join("audit.log").exists());
    }

    #[test]
    fn a_port_name_that_would_leave_the_folder_names_no_file() {
        for bad in ["", "../audit", "a/b", ".hidden", "..", "a\0b", "tab\t"] {
            let e = file_name(bad).unwrap_err();
            assert!(
                e.to_string().contains("cannot name a transcript file"),
                "{e}"
            );
        }
        assert_eq!(file_name("core-sw1").unwrap(), "core-sw1.log");
        assert_eq!(file_name("rack2.pdu_a").unwrap(), "rack2.pdu_a.log");
    }
}
