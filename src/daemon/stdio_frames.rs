//! MCP messages written to stdout each from a buffer of its own, freed as
//! soon as it is written.
//!
//! rmcp's line transport encodes every message into one `BytesMut` that it
//! keeps for the session: after a 20 MB result that buffer stays resident
//! until the client goes away. Here each outgoing message is serialised
//! into its own `Vec` when it is sent (in send order) and handed to one
//! writer task, which writes it whole and drops it. Reading stays rmcp's
//! (its line limit, its answers to malformed input, which reach stdout
//! through the same writer task).

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

/// One message's bytes for the writer task; `done` hears how writing it
/// went (none for rmcp's own small answers).
struct Frame {
    bytes: Vec<u8>,
    done: Option<oneshot::Sender<io::Result<()>>>,
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
    while let Some(Frame { bytes, done }) = rx.recv().await {
        let written = match out.write_all(&bytes).await {
            Ok(()) => out.flush().await,
            Err(e) => Err(e),
        };
        drop(bytes);
        let failed = written.is_err();
        if let Some(done) = done {
            let _ = done.send(written);
        }
        if failed {
            return;
        }
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
        // Serialised here, so that frames leave in the order they are sent.
        let queued = match (&self.frames, serde_json::to_vec(&item)) {
            (Some(frames), Ok(mut bytes)) => {
                drop(item);
                bytes.push(b'\n');
                let (done, written) = oneshot::channel();
                frames
                    .send(Frame {
                        bytes,
                        done: Some(done),
                    })
                    .map(|()| written)
                    .map_err(|_| closed())
            }
            (None, _) => Err(closed()),
            (_, Err(e)) => Err(io::Error::other(e)),
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
            bytes: buf.to_vec(),
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
        let big = "x".repeat(100_000);
        let mut sends = Vec::new();
        for i in 0..3 {
            let message = TxJsonRpcMessage::<RoleServer>::error(
                ErrorData::invalid_request(format!("{i}{big}"), None),
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
            assert_eq!(v["error"]["message"], format!("{i}{big}"));
        }
    }
}
