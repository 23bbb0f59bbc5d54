//! The shutdown drain: the responses still being written, which shutdown
//! waits for before it ends the sessions.
//!
//! On SIGTERM the ports close first, so a call waiting on one ends with an
//! error result; the responses still being written (every request but the
//! GET of a session's standing SSE stream is counted while its body is
//! sent) get up to [`SHUTDOWN_GRACE`] to reach their clients before the
//! sessions end. A request that arrives once the drain began gets `503`.
//! A tool call whose connection closes before its result is written is
//! cancelled rather than left running for a client that is gone.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How long shutdown waits for the responses still being written, and
/// then for the HTTP connections, to finish.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Buffer between a counted response's body and the connection.
const RELAY_BUFFER: usize = 64 * 1024;

/// A tool call in an MCP session, by the session and the JSON-RPC id: what
/// to cancel when its HTTP connection closes before the result is written
/// (rmcp would let the call run to its end, up to a 600 s wait, for a
/// client that is gone).
pub(super) struct CallInFlight {
    sessions: Arc<LocalSessionManager>,
    session: String,
    request_id: serde_json::Value,
}

impl CallInFlight {
    /// The call a request body makes, if it is one `tools/call` request
    /// in session `session`.
    pub(super) fn of(
        sessions: &Arc<LocalSessionManager>,
        session: &str,
        body: &[u8],
    ) -> Option<CallInFlight> {
        let message: serde_json::Value = serde_json::from_slice(body).ok()?;
        if message.get("method")?.as_str()? != "tools/call" {
            return None;
        }
        Some(CallInFlight {
            sessions: sessions.clone(),
            session: session.to_owned(),
            request_id: message.get("id")?.clone(),
        })
    }

    /// Cancels the call the way a client would
    /// (`notifications/cancelled`): its waits end at once.
    async fn cancel(self) {
        use rmcp::transport::streamable_http_server::session::SessionManager;
        let note = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {
                "requestId": self.request_id,
                "reason": "the HTTP connection closed before the result was written"
            }
        });
        match serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(note) {
            Ok(message) => {
                tracing::info!(
                    "session {}: the connection of call {} closed; cancelling it",
                    self.session,
                    self.request_id
                );
                let id: Arc<str> = self.session.as_str().into();
                if let Err(e) = self.sessions.accept_message(&id, message).await {
                    tracing::debug!("cancelling call {}: {e}", self.request_id);
                }
            }
            Err(e) => tracing::debug!("cancelling call {}: {e}", self.request_id),
        }
    }
}

/// A response body that says when hyper drops it before its end: the
/// connection closed under it.
struct WatchedBody {
    inner: Body,
    closed: CancellationToken,
    ended: bool,
}

impl HttpBody for WatchedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let poll = Pin::new(&mut self.inner).poll_frame(cx);
        if let std::task::Poll::Ready(None) = &poll {
            self.ended = true;
        }
        poll
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for WatchedBody {
    fn drop(&mut self) {
        if !self.ended {
            self.closed.cancel();
        }
    }
}

/// The requests whose responses are still being written. A GET (a
/// session's standing SSE stream, open until the session ends) is not
/// counted.
#[derive(Clone)]
pub(super) struct InFlight {
    count: Arc<watch::Sender<usize>>,
    /// Set when shutdown begins: a request that arrives after it is
    /// refused at once instead of reaching a session about to be cancelled
    /// (which would leave its connection open until the grace ran out).
    refusing: Arc<AtomicBool>,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight {
            count: Arc::new(watch::Sender::new(0)),
            refusing: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// Counts one request until dropped.
pub(super) struct InFlightGuard(InFlight);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.count.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl InFlight {
    /// Counts a request; `None` once shutdown began. Counted first, then
    /// checked: a request that passes is one [`drained`](Self::drained)
    /// waits for.
    pub(super) fn start(&self) -> Option<InFlightGuard> {
        self.count.send_modify(|n| *n += 1);
        let guard = InFlightGuard(self.clone());
        (!self.refusing.load(Ordering::SeqCst)).then_some(guard)
    }

    /// Refuses new requests from now on, then waits until no counted
    /// response is being written, at most `within`; returns how many still
    /// are.
    pub(super) async fn drained(&self, within: Duration) -> usize {
        self.refusing.store(true, Ordering::SeqCst);
        let mut rx = self.count.subscribe();
        let _ = tokio::time::timeout(within, rx.wait_for(|n| *n == 0)).await;
        *self.count.borrow()
    }

    /// `response` with its body relayed by a task that holds `guard` until
    /// the whole body has been handed to the connection (or the client went
    /// away): the count then says when every response has been written.
    /// A `call` whose connection closes first is cancelled.
    pub(super) fn track(
        response: Response,
        guard: InFlightGuard,
        call: Option<CallInFlight>,
    ) -> Response {
        let (parts, mut body) = response.into_parts();
        let (reader, mut writer) = tokio::io::duplex(RELAY_BUFFER);
        let closed = CancellationToken::new();
        let connection_closed = closed.clone();
        crate::task::spawn(async move {
            let _guard = guard;
            loop {
                let frame = tokio::select! {
                    frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)) => frame,
                    () = connection_closed.cancelled() => {
                        if let Some(call) = call {
                            call.cancel().await;
                        }
                        break;
                    }
                };
                match frame {
                    None => break,
                    Some(Err(e)) => {
                        tracing::debug!("HTTP response body failed: {e}");
                        break;
                    }
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data()
                            && writer.write_all(&data).await.is_err()
                        {
                            break; // the client went away
                        }
                    }
                }
            }
            let _ = writer.shutdown().await;
        });
        let body = Body::new(WatchedBody {
            inner: Body::from_stream(tokio_util::io::ReaderStream::new(reader)),
            closed,
            ended: false,
        });
        Response::from_parts(parts, body)
    }
}
