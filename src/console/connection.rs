//! What a console connection is on the server, whichever port it
//! attaches to (one of this gateway's or another site's): the person the
//! transport authenticated, and the sending side with its slow-watcher
//! deadline.

use std::time::Duration;

use tokio::sync::mpsc;

use super::protocol::{Frame, ServerMessage};
use crate::access::standing::Standing;
use crate::error::GateError;

/// How long a watcher may leave output unread (its connection not taking
/// frames) before it is dropped with a message; the port's reader and the
/// other watchers never wait for it.
pub const SLOW_WATCHER: Duration = Duration::from_secs(10);

/// Who is at the console, as the transport authenticated them.
pub struct Person {
    /// What they may do and which ports they reach, kept current: a
    /// reload or the end of their browser login re-checks it.
    pub standing: Standing,
    /// Their name: the local socket peer's user name, or the token's name.
    pub name: String,
}

/// Why an attachment ended without the client asking.
#[derive(Debug)]
pub(super) struct Ended(pub(super) String);

/// The sending side of a connection, with the slow-watcher deadline.
pub(super) struct Outgoing(pub(super) mpsc::Sender<Frame>);

impl Outgoing {
    pub(super) async fn send(&self, frame: Frame) -> Result<(), Ended> {
        match tokio::time::timeout(SLOW_WATCHER, self.0.send(frame)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(Ended("the connection closed".to_owned())),
            Err(_) => Err(Ended(format!(
                "this console read nothing for {}s and was dropped so that it does not hold the others back; attach again to continue (nothing is lost: the output is in the log)",
                SLOW_WATCHER.as_secs()
            ))),
        }
    }

    pub(super) async fn send_message(&self, message: &ServerMessage) -> Result<(), Ended> {
        match serde_json::to_string(message) {
            Ok(text) => self.send(Frame::Json(text)).await,
            Err(e) => Err(Ended(format!("cannot encode a message: {e}"))),
        }
    }

    pub(super) async fn error(&self, error: &GateError) -> Result<(), Ended> {
        self.send_message(&ServerMessage::Error {
            code: error.code.as_str().to_owned(),
            message: error.message.clone(),
        })
        .await
    }

    /// Says why the session ends (without waiting for a slow client).
    pub(super) async fn bye(&self, reason: &str) {
        if let Ok(text) = serde_json::to_string(&ServerMessage::Bye {
            reason: reason.to_owned(),
        }) {
            let _ = self.0.try_send(Frame::Json(text));
        }
    }
}
