//! The reader task of one port: opens the device, appends everything it
//! reads to the OutputLog, and on a loss reopens the same path with backoff.
//! A remote console is the same: a connection that drops or is refused is
//! a loss, retried with the same backoff (never in a hot loop).
//!
//! A local device is also reopened as soon as its path reappears (an
//! inotify watch on its directory, see `appear.rs`), whatever the backoff
//! timer says. A device that keeps going away right after it opened
//! (`down_after` quick losses in a row) is marked `down` and retried
//! slowly: every [`DOWN_RETRY`], or when its path reappears.

use std::time::Duration;

use tokio::time::Instant;

use tokio_util::sync::CancellationToken;

use super::alerts::Compiled;
use super::appear::PathWatch;
use super::device;
use super::handle::{Port, PortServices, PortSpec};
use super::mask::{MASK_HOLD, SecretMask};
use super::responder::Responder;
use super::state::{DOWN_RETRY, PortState};
use crate::watchset::{WatchHit, WatchScanner};

/// First wait before reopening a lost device.
pub const BACKOFF_START: Duration = Duration::from_millis(100);
/// Longest wait between reopen attempts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// A loss this soon after opening counts as a quick loss (towards `down`).
pub const QUICK_LOSS: Duration = Duration::from_secs(2);
impl Port {
    /// Creates the port and starts its reader task, which opens the device
    /// and keeps it open (reopening with backoff after a loss) until
    /// [`close`](Self::close) or `shutdown` is cancelled, and passes the
    /// device's terminal queries to the responder (responder.rs).
    pub fn start(spec: PortSpec, services: PortServices, shutdown: &CancellationToken) -> Port {
        let port = Port::new(spec, services, shutdown);
        crate::task::spawn(run(port.clone()));
        port
    }
}

/// Runs until the port is closed.
async fn run(port: Port) {
    let device = port.spec().device;
    let local = !port.is_remote();
    let down_after = port.spec().down_after;
    let mut backoff = BACKOFF_START;
    let mut first = true;
    // Quick losses in a row; `down` once it reaches `down_after`.
    let mut quick = 0u32;
    let mut down = false;
    // Made before an open attempt, so that a device that returns right
    // after the attempt failed is heard; dropped while the device is open.
    let mut watch: Option<PathWatch> = None;
    // Terminal queries in the output; kept across reopens like the log.
    let mut responder = Responder::new();
    loop {
        if port.closing().is_cancelled() {
            break;
        }
        if local && watch.is_none() {
            watch = watch_path(&port, &device);
        }
        // The current line settings: a reopen after a loss uses what
        // `set_line_settings` last set, not only what the config said.
        match port.open_with_control().await {
            Ok((mut reader, writer, line)) => {
                watch = None;
                port.install_writer(Some(writer)).await;
                if !first {
                    port.count_reconnect();
                }
                port.record(format!("opened {device} at {line}"));
                port.set_state(PortState::Open);
                let opened_at = Instant::now();
                if port.com_port().is_some() {
                    // rfc2217://: the line behind the console server gets
                    // the port's settings once the server agrees.
                    port.start_line_setup();
                }
                backoff = BACKOFF_START;
                let why = read_until_lost(&port, &mut reader, &mut responder).await;
                port.install_writer(None).await;
                let Some(why) = why else {
                    break; // closing
                };
                // Watch before anything else: the device may come back at
                // once.
                if local {
                    watch = watch_path(&port, &device);
                }
                let lived = opened_at.elapsed();
                let loss = port.record_event(format!("lost {device}: {why}"));
                port.set_last_loss(loss);
                quick = if lived < QUICK_LOSS { quick + 1 } else { 0 };
                down = down_after > 0 && quick >= down_after;
                if down {
                    port.set_down(format!(
                        "lost {quick} times in a row within {}s of opening (last: {why}); the device or its cable is failing",
                        QUICK_LOSS.as_secs()
                    ));
                    port.record(format!(
                        "down: {device} was lost {quick} times in a row within {}s of opening; retrying every {}s or when it reappears",
                        QUICK_LOSS.as_secs(),
                        DOWN_RETRY.as_secs()
                    ));
                } else {
                    port.set_state(PortState::Lost);
                }
                // After the state: waiters hear of the loss even while a
                // pulse or BREAK still holds the control handle.
                port.drop_control().await;
            }
            Err(e) => {
                let wait = if down { DOWN_RETRY } else { backoff };
                port.record(format!(
                    "cannot open {device}: {e}; next attempt in {}{}",
                    humantime::format_duration(wait),
                    if watch.is_some() {
                        " or when the path reappears"
                    } else {
                        ""
                    }
                ));
                if !down {
                    port.set_state(PortState::Lost);
                }
            }
        }
        first = false;
        // Backoff: a timer between attempts (or the path reappearing),
        // not a poll for data.
        let wait = if down { DOWN_RETRY } else { backoff };
        let retry_at = Instant::now() + wait;
        let appeared = async {
            match watch.as_mut() {
                Some(w) => w.appeared().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = port.closing().cancelled() => break,
            _ = tokio::time::sleep_until(retry_at) => {}
            () = appeared => {
                port.record(format!("{device} reappeared: reopening now"));
            }
        }
        if !down {
            backoff = (backoff * 2).min(BACKOFF_MAX);
            port.set_state(PortState::Reopening);
        }
    }
    port.install_writer(None).await;
    port.drop_control().await;
    port.set_state(PortState::Closed);
    port.record("closed");
}

/// A watch for the device path to reappear; `None` (the timer alone)
/// when inotify is not available.
fn watch_path(port: &Port, device: &str) -> Option<PathWatch> {
    PathWatch::new(std::path::Path::new(device))
        .map_err(|e| {
            tracing::debug!(port = %port.name(), "no inotify watch for {device}: {e}; reopening on the timer only");
        })
        .ok()
}

/// Reads until the device is lost (returns why) or the port closes (None);
/// what it reads goes to the log and past the terminal-query scanner.
async fn read_until_lost(
    port: &Port,
    reader: &mut device::DeviceReader,
    responder: &mut Responder,
) -> Option<String> {
    let eof = if port.is_remote() {
        "the console server closed the connection"
    } else {
        "end of file (device unplugged or closed)"
    };
    let (generation, compiled) = port.alerts().current();
    let mut sink = Sink {
        port,
        responder,
        watches: Watching {
            generation,
            compiled,
            scanner: WatchScanner::new(),
            hits: Vec::new(),
        },
        // The stored secrets, masked before anything reaches the log.
        mask: port
            .spec()
            .credentials
            .and_then(|c| SecretMask::new(&c.secrets())),
    };
    // One waiter for the whole connection, not one per read.
    let closing = port.closing().cancelled();
    tokio::pin!(closing);
    loop {
        // A tail that may begin a secret waits for the next read, or
        // MASK_HOLD of quiet. (Dropping a read that has no data yet loses
        // nothing; this branch runs only while such a tail is held.)
        let holding = sink.mask.as_ref().is_some_and(SecretMask::holding);
        let read = {
            let mut deliver = |data: &[u8]| sink.deliver(data);
            tokio::select! {
                () = &mut closing => return None,
                () = tokio::time::sleep(MASK_HOLD), if holding => None,
                read = reader.read_data(&mut deliver) => Some(read),
            }
        };
        let Some(read) = read else {
            sink.flush();
            continue;
        };
        match read {
            // A closed pty master, an unplugged adapter, or a remote
            // console that hung up: end of file.
            Ok(0) => {
                sink.flush();
                return Some(eof.to_owned());
            }
            // The data is in the log already (telnet negotiation alone
            // carried none).
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                sink.flush();
                return Some(e.to_string());
            }
        }
    }
}

/// Where what the device sent goes: through the secret mask, into the log
/// and past the terminal-query scanner.
struct Sink<'a> {
    port: &'a Port,
    responder: &'a mut Responder,
    mask: Option<SecretMask>,
    watches: Watching,
}

/// The standing watches as the reader matches them: the set in force
/// (reloaded when a session changes its watches) and the line state.
struct Watching {
    generation: u64,
    compiled: std::sync::Arc<Compiled>,
    scanner: WatchScanner,
    hits: Vec<WatchHit>,
}

impl Sink<'_> {
    /// Takes bytes read from the device.
    fn deliver(&mut self, data: &[u8]) {
        match self.mask.as_mut() {
            Some(mask) => {
                let masked = mask.feed(data);
                self.append(&masked);
            }
            None => self.append(data),
        }
    }

    /// Appends what the mask held back: nothing more came.
    fn flush(&mut self) {
        if let Some(held) = self.mask.as_mut().map(SecretMask::flush) {
            self.append(&held);
        }
    }

    fn append(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let head = self.port.log().append(data);
        let base = head - data.len() as u64;
        self.responder.scan(self.port, data, base);
        // What went into the log (secrets masked) is what watches see.
        let alerts = self.port.alerts();
        let w = &mut self.watches;
        if alerts.generation() != w.generation {
            (w.generation, w.compiled) = alerts.current();
            w.scanner.set_changed();
        }
        w.scanner.scan(&w.compiled.set, data, base, &mut w.hits);
        if !w.hits.is_empty() {
            alerts.raise(&w.compiled, &w.hits);
            w.hits.clear();
        }
    }
}
