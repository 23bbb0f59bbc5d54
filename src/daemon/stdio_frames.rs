//! MCP messages written to stdout each from a buffer of its own, freed as
//! soon as it is written, and a large one written as it is serialised.
//!
//! rmcp's line transport encodes every message into one `BytesMut` that it
//! keeps for the session: after a 20 MB result that buffer stays resident
//! until the client goes away. Here each outgoing message is serialised
//! into its own `Vec` when it is sent (in send order) and handed to one
//! writer task, which writes it whole and drops it. A message whose JSON
//! outgrows [`WHOLE_UP_TO`] is not held twice (the result, and its JSON
//! whole): the writer task serialises it on a blocking thread a
//! [`CHUNK`] at a time, each chunk written before the next is made, so
//! that a 20 MB result costs its own 20 MB and a few chunks, not 40.
//! Reading stays rmcp's (its line limit, its answers to malformed input,
//! which reach stdout through the same writer task).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// Most bytes of a message's JSON serialised whole, in the caller's task;
/// a larger message is serialised as it is written.
const WHOLE_UP_TO: usize = 1 << 20;
/// The bytes of a large message's JSON written at a time.
const CHUNK: usize = 64 * 1024;
/// A large message's chunks made ahead of the write (beyond the one
/// being filled).
const CHUNKS_AHEAD: usize = 2;

/// One message for the writer task; `done` hears how writing it went
/// (none for rmcp's own small answers).
struct Frame {
    what: Outgoing,
    done: Option<oneshot::Sender<io::Result<()>>>,
}

/// What a frame writes.
enum Outgoing {
    /// A message's JSON and its line break, whole.
    Bytes(Vec<u8>),
    /// A large message, serialised as it is written.
    Large(Box<TxJsonRpcMessage<RoleServer>>),
}

/// The stdio transport: rmcp's reader, and frames written by one task.
pub struct FramedStdio<R: AsyncRead> {
    inner: AsyncRwTransport<RoleServer, R, QueueWriter>,
    frames: Option<mpsc::UnboundedSender<Frame>>,
}

impl<R> FramedStdio<R>
where
    R: AsyncRead + Send + Unpin + 'static,
{
    /// Reads MCP from `read`; a task writes every message to `write`.
    pub fn new<W>(read: R, write: W) -> FramedStdio<R>
    where
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        crate::task::spawn(write_frames(rx, write));
        FramedStdio {
            inner: AsyncRwTransport::new_server(read, QueueWriter(tx.clone())),
            frames: Some(tx),
        }
    }
}

/// Writes each frame whole, in the order sent, and frees it; ends when
/// every sender is gone or a write fails (the client closed its end).
async fn write_frames<W: AsyncWrite + Unpin>(mut rx: mpsc::UnboundedReceiver<Frame>, mut out: W) {
    while let Some(Frame { what, done }) = rx.recv().await {
        let written = match what {
            Outgoing::Bytes(bytes) => out.write_all(&bytes).await,
            Outgoing::Large(message) => write_large(*message, &mut out).await,
        };
        let written = match written {
            Ok(()) => out.flush().await,
            Err(e) => Err(e),
        };
        let failed = written.is_err();
        if let Some(done) = done {
            let _ = done.send(written);
        }
        if failed {
            return;
        }
    }
}

/// Writes `message`'s JSON and its line break to `out` as a blocking
/// thread serialises it, [`CHUNK`] by chunk: at most [`CHUNKS_AHEAD`]
/// chunks wait for the write, so the JSON is never whole in memory.
async fn write_large<W: AsyncWrite + Unpin>(
    message: TxJsonRpcMessage<RoleServer>,
    out: &mut W,
) -> io::Result<()> {
    let (chunks, mut to_write) = mpsc::channel::<Vec<u8>>(CHUNKS_AHEAD);
    let serialiser = crate::task::spawn_blocking(move || {
        let mut writer = ChunkWriter {
            chunk: Vec::with_capacity(CHUNK),
            chunks,
        };
        // A message failing past its first MiB leaves a broken line on
        // stdout: the error ends the writer, and with it the session.
        serde_json::to_writer(&mut writer, &message).map_err(io::Error::other)?;
        drop(message);
        writer.chunk.push(b'\n');
        writer.send_chunk()
    });
    while let Some(chunk) = to_write.recv().await {
        // A failed write drops `to_write`, which ends the serialiser.
        out.write_all(&chunk).await?;
    }
    serialiser
        .await
        .unwrap_or_else(|e| Err(io::Error::other(e)))
}

/// A large message's JSON as the blocking serialiser writes it: handed
/// on a full chunk at a time, waiting while the writer is behind.
struct ChunkWriter {
    chunk: Vec<u8>,
    chunks: mpsc::Sender<Vec<u8>>,
}

impl ChunkWriter {
    fn send_chunk(&mut self) -> io::Result<()> {
        let full = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK));
        self.chunks.blocking_send(full).map_err(|_| closed())
    }
}

impl io::Write for ChunkWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.chunk.extend_from_slice(bytes);
        if self.chunk.len() >= CHUNK {
            self.send_chunk()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A message's JSON up to [`WHOLE_UP_TO`] bytes; past that, it refuses
/// more and says so, and the message is serialised as it is written.
#[derive(Default)]
struct UpTo {
    bytes: Vec<u8>,
    over: bool,
}

impl io::Write for UpTo {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.bytes.len() + bytes.len() > WHOLE_UP_TO {
            self.over = true;
            return Err(io::Error::other("a large message"));
        }
        self.bytes.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed")
}

impl<R> Transport<RoleServer> for FramedStdio<R>
where
    R: AsyncRead + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        // Serialised here (a large one queued as it is), so that frames
        // leave in the order they are sent.
        let mut whole = UpTo::default();
        let serialised = serde_json::to_writer(&mut whole, &item);
        let what = match serialised {
            Ok(()) => {
                drop(item);
                let mut bytes = whole.bytes;
                bytes.push(b'\n');
                Ok(Outgoing::Bytes(bytes))
            }
            Err(_) if whole.over => {
                drop(whole);
                Ok(Outgoing::Large(Box::new(item)))
            }
            Err(e) => Err(io::Error::other(e)),
        };
        let queued = match (&self.frames, what) {
            (Some(frames), Ok(what)) => {
                let (done, written) = oneshot::channel();
                frames
                    .send(Frame {
                        what,
                        done: Some(done),
                    })
                    .map(|()| written)
                    .map_err(|_| closed())
            }
            (None, _) => Err(closed()),
            (_, Err(e)) => Err(e),
        };
        async move { queued?.await.unwrap_or_else(|_| Err(closed())) }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.inner.receive()
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        self.frames = None;
        self.inner.close().await
    }
}

/// What rmcp's reader writes (its answers to malformed input), queued as
/// frames behind the messages already sent.
struct QueueWriter(mpsc::UnboundedSender<Frame>);

impl AsyncWrite for QueueWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let frame = Frame {
            what: Outgoing::Bytes(buf.to_vec()),
            done: None,
        };
        Poll::Ready(self.0.send(frame).map(|()| buf.len()).map_err(|_| closed()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ErrorData, RequestId};
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn malformed_input_is_still_answered_through_the_writer() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let (client, server) = tokio::io::duplex(4096);
        let (server_read, server_write) = tokio::io::split(server);
        let mut transport = FramedStdio::new(server_read, server_write);
        let (client_read, mut client_write) = tokio::io::split(client);
        // Not JSON (ignored, as rmcp does), JSON that is no message (an
        // Invalid Request answer), then a real notification.
        client_write
            .write_all(
                b"not json at all\n{\"jsonrpc\":\"2.0\",\"id\":1}\n\
                  {\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
            )
            .await
            .expect("write");
        let within = std::time::Duration::from_secs(5);
        let got = tokio::time::timeout(within, transport.receive())
            .await
            .expect("a message in time");
        assert!(
            matches!(got, Some(rmcp::model::JsonRpcMessage::Notification(_))),
            "{got:?}"
        );
        let mut lines = BufReader::new(client_read).lines();
        let answer = tokio::time::timeout(within, lines.next_line())
            .await
            .expect("an answer in time")
            .expect("read")
            .expect("a line");
        let answer: serde_json::Value = serde_json::from_str(&answer).expect("JSON");
        assert_eq!(answer["error"]["message"], "Invalid request", "{answer}");
    }

    #[tokio::test]
    async fn messages_arrive_whole_and_in_order() {
        let (client, server) = tokio::io::duplex(1024);
        let (server_read, server_write) = tokio::io::split(server);
        let mut transport = FramedStdio::new(server_read, server_write);
        let (mut client_read, _client_write) = tokio::io::split(client);
        let reader = crate::task::spawn(async move {
            let mut all = Vec::new();
            client_read.read_to_end(&mut all).await.map(|_| all)
        });
        // The second is over WHOLE_UP_TO: serialised as it is written,
        // between the two others.
        let size = |i: i64| if i == 1 { 3 * WHOLE_UP_TO } else { 100_000 };
        let mut sends = Vec::new();
        for i in 0..3 {
            let message = TxJsonRpcMessage::<RoleServer>::error(
                ErrorData::invalid_request(format!("{i}{}", "x".repeat(size(i))), None),
                Some(RequestId::Number(i)),
            );
            sends.push(transport.send(message));
        }
        for send in sends {
            send.await.expect("written");
        }
        transport.close().await.expect("closed");
        drop(transport);
        let all = tokio::time::timeout(std::time::Duration::from_secs(5), reader)
            .await
            .expect("the writer ends")
            .expect("joined")
            .expect("read");
        let lines: Vec<&[u8]> = all.split(|b| *b == b'\n').collect();
        assert_eq!(lines.len(), 4, "three lines and nothing after the last");
        for (i, line) in lines[..3].iter().enumerate() {
            let v: serde_json::Value = serde_json::from_slice(line).expect("one message a line");
            assert_eq!(v["id"], i as u64);
            let sent = format!("{i}{}", "x".repeat(size(i as i64)));
            assert_eq!(v["error"]["message"], sent);
        }
    }
}
