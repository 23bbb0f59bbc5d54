//! The port's terminal answers: a full-screen program asks its terminal
//! where the cursor is (`ESC[6n`) or what it is (`ESC[c`) and waits for
//! the answer before it draws. The gateway gives the answers a VT100 of
//! 80×24 would, so such programs work over it.
//!
//! The reader task scans what it appends for queries ([`Responder`]: a
//! `memchr` for ESC per read, as most output asks nothing) and hands each
//! one found to the answerer, a task started at the port's first query:
//! most consoles never ask, so most ports never have one, and no second
//! task wakes for every read. The answerer advances the emulated screen
//! only up to a query; after a long gap it rebuilds it from the last
//! clear, as the `screen` tool does.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::handle::Port;
use super::state::PortState;
use crate::terminal::queries::{Query, QueryHit, QueryScanner, answer};
use crate::terminal::screen::{self, SEARCH_WINDOW, Terminal};

/// Most bytes of the log copied at once to advance the emulated screen.
const SCAN_CHUNK: u64 = 64 * 1024;
/// Most answers per [`ANSWER_WINDOW`]: a device that asks in a loop gets
/// no flood in return.
const MAX_ANSWERS: u32 = 64;
/// The window of [`MAX_ANSWERS`].
const ANSWER_WINDOW: Duration = Duration::from_secs(1);

/// The emulated screen, fed up to some offset. Made at the first query:
/// most consoles never ask, and an 80×24 screen is ~61 KB per port.
struct Tracked {
    term: Option<Terminal>,
    fed_to: u64,
}

impl Tracked {
    /// The cursor as it was at offset `end`.
    fn cursor_at(&mut self, port: &Port, end: u64) -> screen::Position {
        let log = port.log();
        let term = self.term.get_or_insert_with(Terminal::new);
        let gap_too_long = end.saturating_sub(self.fed_to) > SEARCH_WINDOW;
        if self.fed_to < log.oldest() || self.fed_to > end || gap_too_long {
            let replay = screen::replay(log, end);
            *term = Terminal::new();
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

/// The query scanner of one port, kept by its reader task across reopens.
pub(super) struct Responder {
    scanner: QueryScanner,
    hits: Vec<QueryHit>,
    /// Start of the current [`ANSWER_WINDOW`] and the answers passed on in it.
    window: (Instant, u32),
    /// The answerer, once the device asked something. Its queue holds a
    /// window's worth: while a write is held up (flow control) further
    /// queries are dropped, not queued without bound.
    answerer: Option<mpsc::Sender<QueryHit>>,
}

impl Responder {
    /// A scanner in the ground state, with no answerer yet.
    pub(super) fn new() -> Responder {
        Responder {
            scanner: QueryScanner::new(),
            hits: Vec::new(),
            window: (Instant::now(), 0),
            answerer: None,
        }
    }

    /// Scans `bytes`, just appended to `port`'s log at offset `base`, and
    /// passes the queries in them to the answerer (at most
    /// [`MAX_ANSWERS`] per [`ANSWER_WINDOW`]).
    pub(super) fn scan(&mut self, port: &Port, bytes: &[u8], base: u64) {
        self.scanner.scan(bytes, base, &mut self.hits);
        for hit in self.hits.drain(..) {
            if self.window.0.elapsed() >= ANSWER_WINDOW {
                self.window = (Instant::now(), 0);
            }
            self.window.1 += 1;
            if self.window.1 > MAX_ANSWERS {
                if self.window.1 == MAX_ANSWERS + 1 {
                    tracing::warn!(port = %port.name(), "the device asks terminal queries faster than {MAX_ANSWERS} a second; not answering the excess");
                }
                continue;
            }
            let answerer = self.answerer.get_or_insert_with(|| {
                let (tx, rx) = mpsc::channel(MAX_ANSWERS as usize);
                crate::task::spawn(answer_queries(port.clone(), rx));
                tx
            });
            // Full: the answerer is stuck writing earlier answers. Closed:
            // it ended with the port. Either way this one goes unanswered.
            if answerer.try_send(hit).is_err() {
                tracing::debug!(port = %port.name(), query = ?hit.query, "terminal query not answered: the answerer is busy or gone");
            }
        }
    }
}

/// Answers the queries the reader passes on, in order, until the port
/// closes or the reader is gone.
async fn answer_queries(port: Port, mut queries: mpsc::Receiver<QueryHit>) {
    let mut tracked = Tracked {
        term: None,
        fed_to: 0,
    };
    loop {
        let hit = tokio::select! {
            _ = port.closing().cancelled() => break,
            hit = queries.recv() => match hit {
                Some(hit) => hit,
                None => break,
            },
        };
        let cursor = match hit.query {
            Query::CursorPosition => tracked.cursor_at(&port, hit.end),
            _ => screen::Position { row: 0, col: 0 },
        };
        if port.state() != PortState::Open {
            continue;
        }
        let reply = answer(hit.query, cursor);
        tracing::debug!(port = %port.name(), query = ?hit.query, at = hit.end, "answering a terminal query");
        if let Err(e) = port.write(&reply).await {
            tracing::debug!(port = %port.name(), "terminal answer not written: {e}");
        }
    }
}
