//! An MCP session with a server of this daemon inside the process. The
//! session is opened over an in-memory pipe (JSON-RPC one message per
//! line, as over stdio: the handshake, the client's name, and where the
//! server's own notifications go); its calls are then made on the
//! server's handler directly, with a request context of that running
//! session, which spares each call a round of JSON through the pipe and
//! four task switches. The calls the fleet forwards to this site run
//! through it, so they take the very path a local call takes (the
//! handler's checks, the tool, its metrics); its session keeps their
//! connections and cursors between calls. What the server sends of its
//! own (a call's progress, a question for the client's user) goes to
//! whoever started the session, who may answer a question.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, NumberOrString, ProgressToken, ProtocolVersion,
    ReadResourceRequestParams, RequestId, ServerResult,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, WriteHalf};
use tokio::sync::{mpsc, oneshot};

use super::server::GateServer;
use crate::error::{ErrorCode, GateError};
use crate::fleet::wire::AskedInResult;

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

/// The server of a session and the running session's peer: what a call
/// on the handler needs.
type Direct = Arc<(GateServer, Peer<RoleServer>)>;

/// An initialized session with an in-process server; the server's session
/// ends (its connections detached) when this drops.
pub struct Loopback {
    writer: tokio::sync::Mutex<WriteHalf<DuplexStream>>,
    pending: Pending,
    next_id: AtomicU64,
    /// The server's task, which ends with its session.
    served: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// What calls are made on; taken at [`Loopback::end`], so that the
    /// session's state is released with the server's session.
    direct: std::sync::Mutex<Option<Direct>>,
}

/// What a session's server sends of its own, and what its client says.
pub struct ServerSends {
    /// Each notification and request of the server, as JSON-RPC; one the
    /// channel has no room for is dropped (a question then goes
    /// unanswered, and people decide).
    pub to: mpsc::Sender<Value>,
    /// The client shows forms to its user: it declares elicitation.
    pub questions: bool,
}

impl Loopback {
    /// Serves `server` over a pipe and initializes MCP with it as
    /// `client` (the agent's client, as the forwarding gateway names it);
    /// what the server sends of its own goes to `sends`, if given.
    pub async fn start(
        server: GateServer,
        client: &str,
        sends: Option<ServerSends>,
    ) -> Result<Loopback, GateError> {
        let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
        let (their_read, their_write) = tokio::io::split(theirs);
        let (peer_tx, peer_rx) = oneshot::channel();
        let handler = server.clone();
        let served = crate::task::spawn(async move {
            match server.serve((their_read, their_write)).await {
                Ok(running) => {
                    let _ = peer_tx.send(running.peer().clone());
                    let _ = running.waiting().await;
                }
                Err(e) => tracing::warn!("fleet: an in-process session did not start: {e}"),
            }
        });
        let (our_read, our_write) = tokio::io::split(ours);
        let pending: Pending = Arc::default();
        let reader_pending = pending.clone();
        let questions = sends.as_ref().is_some_and(|s| s.questions);
        let sends_to = sends.map(|s| s.to);
        crate::task::spawn(async move {
            let mut lines = BufReader::new(our_read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                // Notifications (progress) and the server's own requests
                // (questions) go to whoever takes them.
                if message.get("method").is_some() {
                    if let Some(to) = &sends_to {
                        let _ = to.try_send(message);
                    }
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
            direct: std::sync::Mutex::new(None),
        };
        session
            .request(
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": if questions { json!({"elicitation": {}}) } else { json!({}) },
                    "clientInfo": {"name": client, "version": env!("CARGO_PKG_VERSION")},
                }),
                HANDSHAKE_DEADLINE,
            )
            .await?;
        session
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        // The server's session runs once it has heard both.
        let peer = match tokio::time::timeout(HANDSHAKE_DEADLINE, peer_rx).await {
            Ok(Ok(peer)) => peer,
            _ => return Err(ended()),
        };
        *crate::sync::lock(&session.direct) = Some(Arc::new((handler, peer)));
        Ok(session)
    }

    /// Ends the session now: its input closes, and the server's session
    /// ends (its connections detached, its write holds let go) before
    /// this returns, unless a call of it runs past [`END_DEADLINE`].
    pub async fn end(&self) {
        crate::sync::lock(&self.direct).take();
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

    /// Calls `tool`; its result (a `CallToolResult`, or an
    /// `InputRequiredResult` for a call `in_result`) as JSON, within
    /// `deadline`. `cancel` cancels it at the server, as a client's
    /// cancellation does (a line waiting for approval is withdrawn);
    /// `progress`, when given, is the token its progress notifications
    /// carry. `in_result`, when given, makes it the call of a client
    /// without a session that shows forms (MCP 2026-07-28), with what its
    /// second round brings back: its user is asked in the result.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, Value>,
        deadline: Duration,
        cancel: &tokio_util::sync::CancellationToken,
        progress: Option<u64>,
        in_result: Option<AskedInResult>,
    ) -> Result<Value, GateError> {
        let mut request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let asks_in_result = in_result.is_some();
        if let Some(round) = in_result {
            request.input_responses = round.input_responses;
            request.request_state = round.request_state;
        }
        self.on_handler(
            "tools/call",
            deadline,
            cancel,
            progress,
            |direct, mut context| async move {
                if asks_in_result {
                    asked_in_result(&mut context);
                }
                direct.0.call_tool(request, context).await
            },
        )
        .await
    }

    /// Reads the resource `uri`; the `ReadResourceResult` as JSON, within
    /// `deadline`.
    pub async fn read_resource(&self, uri: &str, deadline: Duration) -> Result<Value, GateError> {
        let request = ReadResourceRequestParams::new(uri.to_owned());
        let never = tokio_util::sync::CancellationToken::new();
        self.on_handler(
            "resources/read",
            deadline,
            &never,
            None,
            |direct, context| async move { direct.0.read_resource(request, context).await },
        )
        .await
    }

    /// Runs `handle` (a request of `method` on the server's handler) in a
    /// task of its own, with a request context of this session whose
    /// cancellation `cancel` triggers (and whose progress token is
    /// `progress`); its answer as JSON within `deadline`. The task goes on
    /// past the deadline, as a request over the pipe would; a cancelled
    /// one is awaited [`CANCEL_DEADLINE`].
    async fn on_handler<T, H, F>(
        &self,
        method: &str,
        deadline: Duration,
        cancel: &tokio_util::sync::CancellationToken,
        progress: Option<u64>,
        handle: H,
    ) -> Result<Value, GateError>
    where
        T: Into<ServerResult> + Send + 'static,
        H: FnOnce(Direct, RequestContext<RoleServer>) -> F,
        F: Future<Output = Result<T, ErrorData>> + Send + 'static,
    {
        let Some(direct) = crate::sync::lock(&self.direct).clone() else {
            return Err(ended());
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut context = RequestContext::new(
            RequestId::Number(i64::try_from(id).unwrap_or(i64::MAX)),
            direct.1.clone(),
        );
        context.ct = cancel.child_token();
        if let Some(token) = progress.and_then(|n| i64::try_from(n).ok()) {
            context
                .meta
                .set_progress_token(ProgressToken(NumberOrString::Number(token)));
        }
        let mut running = crate::task::spawn(handle(direct, context));
        let answered = tokio::select! {
            answered = tokio::time::timeout(deadline, &mut running) => answered,
            () = cancel.cancelled() => tokio::time::timeout(CANCEL_DEADLINE, &mut running).await,
        };
        let answer = answer_of(answered, method, deadline)?;
        match answer {
            // As the answer's `result` would be written over the pipe.
            Ok(result) => serde_json::to_value(Into::<ServerResult>::into(result)).map_err(|e| {
                GateError::new(
                    ErrorCode::InvalidArgument,
                    format!("{method}'s answer at the site does not write as JSON: {e}"),
                )
            }),
            Err(error) => Err(GateError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "{method} failed at the site: {}",
                    crate::error::shown(&error.message)
                ),
            )),
        }
    }

    /// Answers the server's request `id` (a question for the client's
    /// user): with `result`, or with an error saying why there is none.
    pub async fn answer(&self, id: Value, result: Result<Value, String>) {
        let message = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(why) => json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {"code": -32603, "message": why},
            }),
        };
        if self.send(&message).await.is_err() {
            tracing::debug!("fleet: an answer found the session ended");
        }
    }

    /// A request over the pipe (the handshake's), answered within
    /// `deadline`: its result.
    async fn request(
        &self,
        method: &str,
        params: Value,
        deadline: Duration,
    ) -> Result<Value, GateError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        crate::sync::lock(&self.pending).insert(id, tx);
        let sent = self
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let answer = match sent {
            Ok(()) => tokio::time::timeout(deadline, rx).await,
            Err(e) => {
                crate::sync::lock(&self.pending).remove(&id);
                return Err(e);
            }
        };
        crate::sync::lock(&self.pending).remove(&id);
        let message = answer_of(answer, method, deadline)?;
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

/// Makes `context` that of a client without a session that shows forms,
/// as such a client's every request says of itself.
fn asked_in_result(context: &mut RequestContext<RoleServer>) {
    context
        .meta
        .set_protocol_version(ProtocolVersion::V_2026_07_28);
    if let Ok(capabilities) =
        serde_json::from_value::<ClientCapabilities>(json!({"elicitation": {"form": {}}}))
    {
        context.meta.set_client_capabilities(capabilities);
    }
}

/// What a wait for the answer to `method` within `deadline` came to: the
/// answer, or why there is none (the session ended, or the time ran out).
fn answer_of<T, E>(
    waited: Result<Result<T, E>, tokio::time::error::Elapsed>,
    method: &str,
    deadline: Duration,
) -> Result<T, GateError> {
    match waited {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(_)) => Err(ended()),
        Err(_) => Err(GateError::new(
            ErrorCode::Timeout,
            format!("{method} got no answer within {deadline:?} at the site"),
        )),
    }
}

fn ended() -> GateError {
    GateError::new(
        ErrorCode::PortUnavailable,
        "the site's session for this caller ended; call connect again",
    )
}
