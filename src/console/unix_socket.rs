//! The local console socket: engineers on the console host attach without
//! a token. The socket is mode 0660 and, when the group exists, group
//! `serialgate`, so membership of that group is the permission; the peer's
//! uid (`SO_PEERCRED`) names the person. Frames are those of the attach
//! protocol with the socket's envelope (kind byte, length, payload).

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::attachment::{OUTGOING_FRAMES, Person, serve};
use super::protocol::{Frame, FrameDecoder, MAX_JSON_BYTES, ServerMessage, encode_frame};
use crate::access::Caller;
use crate::access::standing::Standing;
use crate::gateway::Gateway;

/// The group whose members may use the console socket.
pub const CONSOLE_GROUP: &str = "serialgate";
/// Console connections served at once on the socket; more are told so
/// and closed.
pub const MAX_CONSOLE_CONNECTIONS: usize = 256;
/// How long a refused connection is given to take its bye.
const REFUSAL_DEADLINE: std::time::Duration = std::time::Duration::from_secs(1);

/// How long to wait after a failed accept (e.g. no file descriptors left).
const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);

/// The bound console socket; removed when dropped.
pub struct ConsoleSocket {
    listener: UnixListener,
    path: PathBuf,
}

impl ConsoleSocket {
    /// Binds `path` (mode 0660, group [`CONSOLE_GROUP`] when it exists). A
    /// socket left by an earlier run is replaced; anything else at the path
    /// (a file, a link) is refused rather than removed.
    pub fn bind(path: &Path) -> anyhow::Result<ConsoleSocket> {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_socket() => {
                std::fs::remove_file(path).map_err(|e| {
                    anyhow::anyhow!(
                        "cannot remove the old console socket {}: {e}",
                        path.display()
                    )
                })?
            }
            Ok(_) => anyhow::bail!(
                "console_socket {} exists and is not a socket; remove it or choose another path",
                path.display()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => anyhow::bail!("cannot check console_socket {}: {e}", path.display()),
        }
        let listener = UnixListener::bind(path)
            .map_err(|e| anyhow::anyhow!("cannot bind console_socket {}: {e}", path.display()))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))?;
        match nix::unistd::Group::from_name(CONSOLE_GROUP) {
            Ok(Some(group)) => {
                if let Err(e) = nix::unistd::chown(path, None, Some(group.gid)) {
                    tracing::warn!(
                        "console socket {}: cannot give it to group {CONSOLE_GROUP}: {e}",
                        path.display()
                    );
                }
            }
            _ => tracing::info!(
                "console socket {}: no group {CONSOLE_GROUP}, so only this user can attach",
                path.display()
            ),
        }
        Ok(ConsoleSocket {
            listener,
            path: path.to_owned(),
        })
    }

    /// Serves console connections until `shutdown` is cancelled.
    pub async fn serve(self, gateway: Gateway, shutdown: CancellationToken) {
        let slots = Arc::new(Semaphore::new(MAX_CONSOLE_CONNECTIONS));
        let mut refused: u64 = 0;
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                () = shutdown.cancelled() => return,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!("console socket: accept failed: {e}");
                    // A full fd table: back off rather than spin.
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            };
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                refused += 1;
                // The first of a burst and then every thousandth: a flood
                // of connections does not flood the journal.
                if refused % 1000 == 1 {
                    tracing::warn!(
                        "console socket: {MAX_CONSOLE_CONNECTIONS} connections are open; refused {refused} so far"
                    );
                }
                crate::task::spawn(refuse(stream));
                continue;
            };
            let person = match peer_person(&stream, &gateway) {
                Ok(person) => person,
                Err(e) => {
                    tracing::warn!("console socket: refused a peer: {e}");
                    continue;
                }
            };
            tracing::info!("console socket: {} connected", person.name);
            let (gateway, shutdown) = (gateway.clone(), shutdown.clone());
            crate::task::spawn(async move {
                serve_stream(stream, gateway, person, shutdown).await;
                drop(slot);
            });
        }
    }
}

impl Drop for ConsoleSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Tells a connection over the limit why it is closed, within
/// [`REFUSAL_DEADLINE`].
async fn refuse(mut stream: UnixStream) {
    let bye = ServerMessage::Bye {
        reason: format!(
            "the console socket serves {MAX_CONSOLE_CONNECTIONS} connections at once and all are in use; \
             try again when someone detaches"
        ),
    };
    let Ok(json) = serde_json::to_string(&bye) else {
        return;
    };
    let frame = encode_frame(&Frame::Json(json));
    let _ = tokio::time::timeout(REFUSAL_DEADLINE, async {
        let _ = stream.write_all(&frame).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// Who the socket's peer is: the user of its uid, with the local
/// operator's access (the socket's permissions are the gate).
fn peer_person(stream: &UnixStream, gateway: &Gateway) -> std::io::Result<Person> {
    let cred = stream.peer_cred()?;
    let uid = nix::unistd::Uid::from_raw(cred.uid());
    let name = match nix::unistd::User::from_uid(uid) {
        Ok(Some(user)) => user.name,
        _ => format!("uid {}", cred.uid()),
    };
    Ok(Person {
        standing: Standing::fixed(Caller::operator(), gateway),
        name,
    })
}

/// Moves frames between the socket and a person's attachment ([`crate::console::attachment`]).
async fn serve_stream(
    stream: UnixStream,
    gateway: Gateway,
    person: Person,
    shutdown: CancellationToken,
) {
    let (mut reader, mut writer) = stream.into_split();
    let (in_tx, in_rx) = mpsc::channel(OUTGOING_FRAMES);
    let (out_tx, mut out_rx) = mpsc::channel::<Frame>(OUTGOING_FRAMES);
    let read = async move {
        let mut decoder = FrameDecoder::new(MAX_JSON_BYTES);
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match reader.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            decoder.push(&buf[..n]);
            loop {
                match decoder.next_frame() {
                    Ok(Some(frame)) => {
                        if in_tx.send(frame).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!("console socket: closing a connection: {e}");
                        return;
                    }
                }
            }
        }
    };
    let write = async move {
        while let Some(frame) = out_rx.recv().await {
            if writer.write_all(&encode_frame(&frame)).await.is_err() {
                return;
            }
        }
        let _ = writer.shutdown().await;
    };
    // The client going away closes `in_tx`, which ends the session in
    // its own time (it releases the hold and says who left); the session
    // ending drops `out_tx`, and the writer sends what is queued (the bye)
    // and closes.
    let reader = crate::task::spawn(read);
    let writer = crate::task::spawn(write);
    serve(gateway, person, None, in_rx, out_tx, shutdown).await;
    reader.abort();
    super::attachment::finish_writer(writer).await;
}
