//! An MCP session with a server of this daemon inside the process, over
//! an in-memory pipe: JSON-RPC one message per line, as over stdio. The
//! calls the fleet forwards to this site run through it, so they take the
//! very path a local call takes (the handler's checks, the tool, its
//! metrics); its session keeps their connections and cursors between
//! calls.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, WriteHalf};
use tokio::sync::oneshot;

use super::server::GateServer;
use crate::error::{ErrorCode, GateError};

/// The protocol version the session speaks.
const PROTOCOL_VERSION: &str = "2025-06-18";
/// The pipe's buffer each way.
const PIPE_BYTES: usize = 1 << 20;
/// How long the handshake may take.
const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(5);
/// How long a cancelled call's answer is awaited.
const CANCEL_DEADLINE: Duration = Duration::from_secs(5);
/// How long [`Loopback::end`] waits for the server's session to end.
const END_DEADLINE: Duration = Duration::from_secs(5);

type Pending = Arc<std::sync::Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// An initialized session with an in-process server; the server's session
/// ends (its connections detached) when this drops.
pub struct Loopback {
    writer: tokio::sync::Mutex<WriteHalf<DuplexStream>>,
    pending: Pending,
    next_id: AtomicU64,
    /// The server's task, which ends with its session.
    served: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Loopback {
    /// Serves `server` over a pipe and initializes MCP with it as
    /// `client` (the agent's client, as the forwarding gateway names it).
    pub async fn start(server: GateServer, client: &str) -> Result<Loopback, GateError> {
        let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
        let (their_read, their_write) = tokio::io::split(theirs);
        let served = tokio::spawn(async move {
            match server.serve((their_read, their_write)).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                }
                Err(e) => tracing::warn!("fleet: an in-process session did not start: {e}"),
            }
        });
        let (our_read, our_write) = tokio::io::split(ours);
        let pending: Pending = Arc::default();
        let reader_pending = pending.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(our_read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                // Notifications (progress) and the server's own requests
                // are not answered: the forwarding gateway waits for the
                // result alone.
                if message.get("method").is_some() {
                    continue;
                }
                if let Some(id) = message.get("id").and_then(Value::as_u64)
                    && let Some(waiter) = crate::sync::lock(&reader_pending).remove(&id)
                {
                    let _ = waiter.send(message);
                }
            }
        });
        let session = Loopback {
            writer: tokio::sync::Mutex::new(our_write),
            pending,
            next_id: AtomicU64::new(1),
            served: std::sync::Mutex::new(Some(served)),
        };
        session
            .request(
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": client, "version": env!("CARGO_PKG_VERSION")},
                }),
                HANDSHAKE_DEADLINE,
            )
            .await?;
        session
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(session)
    }

    /// Ends the session now: its input closes, and the server's session
    /// ends (its connections detached, its write holds let go) before
    /// this returns, unless a call of it runs past [`END_DEADLINE`].
    pub async fn end(&self) {
        let _ = self.writer.lock().await.shutdown().await;
        let served = crate::sync::lock(&self.served).take();
        if let Some(task) = served
            && tokio::time::timeout(END_DEADLINE, task).await.is_err()
        {
            tracing::warn!(
                "fleet: a session ended still had a call running after {END_DEADLINE:?}"
            );
        }
    }

    /// Calls `tool`; the `CallToolResult` as JSON, within `deadline`.
    /// `cancel` cancels it at the server, as a client's cancellation does
    /// (a line waiting for approval is withdrawn).
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, Value>,
        deadline: Duration,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Value, GateError> {
        self.request_cancellable(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            deadline,
            Some(cancel),
        )
        .await
    }

    /// Reads the resource `uri`; the `ReadResourceResult` as JSON, within
    /// `deadline`.
    pub async fn read_resource(&self, uri: &str, deadline: Duration) -> Result<Value, GateError> {
        self.request("resources/read", json!({"uri": uri}), deadline)
            .await
    }

    async fn request(
        &self,
        method: &str,
        params: Value,
        deadline: Duration,
    ) -> Result<Value, GateError> {
        self.request_cancellable(method, params, deadline, None)
            .await
    }

    async fn request_cancellable(
        &self,
        method: &str,
        params: Value,
        deadline: Duration,
        cancel: Option<&tokio_util::sync::CancellationToken>,
    ) -> Result<Value, GateError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        crate::sync::lock(&self.pending).insert(id, tx);
        let sent = self
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let cancelled = async {
            match cancel {
                Some(c) => c.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let mut rx = rx;
        let answer = match sent {
            Ok(()) => tokio::select! {
                answer = tokio::time::timeout(deadline, &mut rx) => answer,
                () = cancelled => {
                    let _ = self
                        .send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "the agent cancelled the call at its serving gateway"}}))
                        .await;
                    // The server's answer, if it sends one, ends the call.
                    tokio::time::timeout(CANCEL_DEADLINE, &mut rx).await
                }
            },
            Err(e) => {
                crate::sync::lock(&self.pending).remove(&id);
                return Err(e);
            }
        };
        crate::sync::lock(&self.pending).remove(&id);
        let message = match answer {
            Ok(Ok(m)) => m,
            Ok(Err(_)) => return Err(ended()),
            Err(_) => {
                return Err(GateError::new(
                    ErrorCode::Timeout,
                    format!("{method} got no answer within {deadline:?} at the site"),
                ));
            }
        };
        if let Some(error) = message.get("error") {
            return Err(GateError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "{method} failed at the site: {}",
                    crate::error::shown(&error.to_string())
                ),
            ));
        }
        Ok(message.get("result").cloned().unwrap_or(Value::Null))
    }

    async fn send(&self, message: &Value) -> Result<(), GateError> {
        let mut line = message.to_string();
        line.push('\n');
        let mut writer = self.writer.lock().await;
        writer
            .write_all(line.as_bytes())
            .await
            .map_err(|_| ended())?;
        writer.flush().await.map_err(|_| ended())
    }
}

fn ended() -> GateError {
    GateError::new(
        ErrorCode::PortUnavailable,
        "the site's session for this caller ended; call connect again",
    )
}
