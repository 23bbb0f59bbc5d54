//! The port's terminal answers: a full-screen program asks its terminal
//! where the cursor is (`ESC[6n`) or what it is (`ESC[c`) and waits for
//! the answer before it draws. This task gives the answers a VT100 of
//! 80×24 would, so such programs work over the gateway.
//!
//! It only reads the OutputLog, in its own task, and never holds the log
//! lock for longer than a scan of new bytes: the reader is never slowed.
//! The emulated screen is advanced only up to a query, when one is seen
//! (most output asks nothing, and costs a `memchr` for ESC); after a long
//! gap it is rebuilt from the last clear, as the `screen` tool does.

use std::time::Duration;

use tokio::time::Instant;

use super::{Port, PortState};
use crate::terminal::queries::{Query, QueryHit, QueryScanner, answer};
use crate::terminal::screen::{self, SEARCH_WINDOW, Terminal};

/// Most bytes scanned per hold of the log lock.
const SCAN_CHUNK: u64 = 64 * 1024;
/// Most answers per [`ANSWER_WINDOW`]: a device that asks in a loop gets
/// no flood in return.
const MAX_ANSWERS: u32 = 64;
/// The window of [`MAX_ANSWERS`].
const ANSWER_WINDOW: Duration = Duration::from_secs(1);

/// The emulated screen, fed up to some offset. Made at the first query:
/// most consoles never ask, and an 80×24 screen is ~61 KB per port.
struct Tracked {
    term: Option<Box<Terminal>>,
    fed_to: u64,
}

impl Tracked {
    /// The cursor as it was at offset `end`.
    fn cursor_at(&mut self, port: &Port, end: u64) -> screen::Position {
        let log = port.log();
        let term = self.term.get_or_insert_with(|| Box::new(Terminal::new()));
        let gap_too_long = end.saturating_sub(self.fed_to) > SEARCH_WINDOW;
        if self.fed_to < log.oldest() || self.fed_to > end || gap_too_long {
            let replay = screen::replay(log, end);
            **term = Terminal::new();
            term.process(&replay.bytes);
            self.fed_to = replay.end;
        }
        while self.fed_to < end {
            let to = (self.fed_to + SCAN_CHUNK).min(end);
            let bytes = log.copy_range(self.fed_to, to);
            if bytes.is_empty() {
                break;
            }
            term.process(&bytes);
            self.fed_to += bytes.len() as u64;
        }
        term.cursor()
    }
}

/// Answers the terminal queries in `port`'s output until it closes.
pub(super) async fn run(port: Port) {
    let log = port.log().clone();
    let mut head_rx = log.subscribe();
    let mut scanner = QueryScanner::new();
    let mut scanned = log.head();
    let mut tracked = Tracked {
        term: None,
        fed_to: 0,
    };
    let mut window = (Instant::now(), 0u32);
    let mut hits: Vec<QueryHit> = Vec::new();
    loop {
        head_rx.borrow_and_update();
        loop {
            let more = {
                let view = log.view();
                if scanned < view.oldest() {
                    // Retention overtook this task: what was dropped is
                    // past answering.
                    scanner.reset();
                    scanned = view.oldest();
                }
                let to = (scanned + SCAN_CHUNK).min(view.head());
                scanner.scan(view.slice(scanned, to), scanned, &mut hits);
                scanned = to;
                to < view.head()
            };
            for hit in hits.drain(..) {
                if window.0.elapsed() >= ANSWER_WINDOW {
                    window = (Instant::now(), 0);
                }
                window.1 += 1;
                if window.1 > MAX_ANSWERS {
                    if window.1 == MAX_ANSWERS + 1 {
                        tracing::warn!(port = %port.name(), "the device asks terminal queries faster than {MAX_ANSWERS} a second; not answering the excess");
                    }
                    continue;
                }
                let cursor = match hit.query {
                    Query::CursorPosition => tracked.cursor_at(&port, hit.end),
                    _ => screen::Position { row: 0, col: 0 },
                };
                if port.state() != PortState::Open {
                    continue;
                }
                let reply = answer(hit.query, cursor);
                tracing::debug!(port = %port.name(), query = ?hit.query, at = hit.end, "answering a terminal query");
                // Boxed: a write's future is most of this task's size, and
                // most consoles never ask.
                if let Err(e) = Box::pin(port.write(&reply)).await {
                    tracing::debug!(port = %port.name(), "terminal answer not written: {e}");
                }
            }
            if !more {
                break;
            }
            tokio::task::yield_now().await;
        }
        tokio::select! {
            _ = port.closing().cancelled() => break,
            changed = head_rx.changed() => if changed.is_err() { break },
        }
    }
}
