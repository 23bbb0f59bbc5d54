//! The send-and-wait dialogue with a device that `send_command`, `expect`
//! and the terminal tools share: checking the port is open, sending bytes
//! (optionally skipping unread output first), and waiting for a prompt
//! while answering auto-reply triggers, with the hooks that end a wait when
//! the MCP request is cancelled or the client goes away, and report
//! progress.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;

use super::args::{DEFAULT_MAX_OUTPUT, triggers_arg};
use super::encoding::cut;
use super::server::GateServer;
use super::session::Connection;
use crate::clean::{CleanOptions, clean_field, clean_output};
use crate::error::{ErrorCode, GateError, shown};
use crate::log::lossy_text;
use crate::matcher::{Prompt, PromptScanner, Span};
use crate::port::PortState;
use crate::port::wait::{
    DEFAULT_MAX_AUTO_REPLIES, MAX_FRUITLESS_REPLIES, PromptWait, PromptWanted, WaitEnd, WaitHooks,
    wait_for_prompt,
};

/// The error of a wait the client cancelled (or left by going away).
pub(super) fn cancelled() -> GateError {
    GateError::new(
        ErrorCode::Timeout,
        "the client cancelled this wait; the output stays for the next read",
    )
}

/// The hooks of a wait made for an MCP request: the request's
/// cancellation, the client going away (`gone`), and progress
/// notifications (bytes received, pages answered) when the client sent a
/// progress token.
pub(super) fn wait_hooks(
    context: &RequestContext<RoleServer>,
    gone: &tokio_util::sync::CancellationToken,
) -> WaitHooks {
    let progress = context.meta.get_progress_token().map(|token| {
        let peer = context.peer.clone();
        let report: crate::port::wait::ProgressFn = Arc::new(move |bytes: u64, pages: u64| {
            let (peer, token) = (peer.clone(), token.clone());
            // Never wait for the client: the notification goes on its own.
            crate::task::spawn(async move {
                let note = ProgressNotificationParam::new(token, bytes as f64)
                    .with_message(format!("{bytes} bytes received, {pages} pages answered"));
                let _ = peer.notify_progress(note).await;
            });
        });
        report
    });
    WaitHooks {
        cancel: context.ct.clone(),
        gone: gone.clone(),
        progress,
    }
}

impl GateServer {
    /// Checks that the port can be written to now.
    pub(super) fn ensure_open(conn: &Connection) -> Result<(), GateError> {
        match conn.port().state() {
            PortState::Open => Ok(()),
            _ => Err(conn.port().not_open_error()),
        }
    }

    /// Sends bytes, optionally after moving the cursor to the head; returns
    /// the head at sending time.
    pub(super) async fn send_bytes(
        &self,
        conn: &Connection,
        kind: &'static str,
        bytes: &[u8],
        clear_first: bool,
    ) -> Result<u64, GateError> {
        Self::ensure_open(conn)?;
        let head = conn.port().log().head();
        if clear_first {
            self.session.set_cursor(&conn.name, head);
        }
        conn.port()
            .write_as(&self.session.actor(), kind, bytes, false)
            .await?;
        Ok(head)
    }

    /// Waits for a prompt from `cursor` and moves the cursor past what is
    /// returned; a lost port becomes `port_lost` carrying the partial output.
    pub(super) async fn wait_prompt(
        &self,
        conn: &Connection,
        cursor: u64,
        prompt: Prompt,
        auto_reply: &Option<BTreeMap<String, String>>,
        timeout: Duration,
        hooks: &WaitHooks,
    ) -> Result<PromptWait, GateError> {
        let triggers = triggers_arg(conn, auto_reply, cursor)?;
        let scanner = PromptScanner::new(prompt, cursor);
        let want = PromptWanted {
            cursor,
            scanner,
            triggers,
            timeout,
            max_replies: DEFAULT_MAX_AUTO_REPLIES,
        };
        let waited = wait_for_prompt(conn.port(), &self.session.actor(), want, hooks).await?;
        if waited.end == WaitEnd::Cancelled {
            // The client dropped the request: its output stays unread for
            // the session's next read.
            return Err(cancelled());
        }
        self.session.advance(&conn.name, waited.end_offset);
        if let WaitEnd::Stuck(at) = waited.end {
            return Err(stuck(conn, &waited, at));
        }
        if matches!(waited.end, WaitEnd::Lost | WaitEnd::Closed) {
            let partial = conn
                .port()
                .log()
                .copy_range(waited.start, waited.end_offset);
            let (text, _) = cut(lossy_text(&partial), DEFAULT_MAX_OUTPUT as usize);
            let e = conn.port().not_open_error();
            return Err(GateError::new(
                e.code,
                format!(
                    "{}.\nPartial output ({} bytes, cursors {}-{}; whole with read_output):\n{text}",
                    e.message,
                    waited.end_offset - waited.start,
                    waited.start,
                    waited.end_offset
                ),
            ));
        }
        Ok(waited)
    }
}

/// The error of a wait that left the device at an auto-reply trigger its
/// answers only brought back: what it waits at (as a terminal shows it),
/// how to leave it, and the output so far, cleaned.
fn stuck(conn: &Connection, waited: &PromptWait, at: Span) -> GateError {
    let log = conn.port().log();
    let shows = clean_field(&log.copy_range(at.start, waited.end_offset.max(at.end)));
    let waits_at = shows.lines().last().unwrap_or_default().trim();
    let pagers: Vec<&[u8]> = conn.profile.pagers.iter().map(Vec::as_slice).collect();
    let partial = log.copy_range(waited.start, at.start);
    let text = clean_output(
        &partial,
        &CleanOptions {
            command: None,
            pagers: &pagers,
        },
    );
    let (text, _) = cut(text, DEFAULT_MAX_OUTPUT as usize);
    GateError::new(
        ErrorCode::Timeout,
        format!(
            "the device came back to {} after each of the last {MAX_FRUITLESS_REPLIES} auto-replies with nothing \
             else between, so it was not answered again: it waits there (status: blocked_prompt). \
             Leave it with send_text (\"q\" leaves less and more), or pass auto_reply.\n\
             Output so far ({} bytes, cursors {}-{}; whole with read_output):\n{text}",
            shown(waits_at),
            at.start - waited.start,
            waited.start,
            waited.end_offset
        ),
    )
}
