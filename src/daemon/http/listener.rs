//! The HTTP listener: accepts connections and serves each with HTTP/1.1,
//! under limits that nobody on the network can exhaust without a token.
//!
//! - **Header read timeout** ([`ListenerLimits::header_timeout`]): a
//!   connection must deliver a request's headers within it, also between
//!   requests on a kept-alive connection, or it is closed. It bounds only
//!   the reading of headers: a response that takes long (a 600 s wait, a
//!   session's standing event stream) is not cut.
//! - **Connection cap** ([`ListenerLimits::max_connections`]), counted at
//!   accept, before any authentication, and sized so that the daemon's
//!   devices, transcripts and watches keep file descriptors of their own.
//! - **Room for callers with a token**: connections that have not yet
//!   carried an authenticated request may hold at most
//!   [`ListenerLimits::max_unauthenticated`] of the slots. When a new
//!   connection arrives and there is no room, the oldest of those is closed
//!   to make it: a flood of idle or half-sent connections churns only
//!   itself, and an agent whose request arrives with its token gets in.
//!   Only when every slot holds an authenticated connection is a new one
//!   refused (closed at once).
//! - **Room for the other tokens**: one token may hold at most
//!   [`ListenerLimits::max_per_token`] connections (a quarter of the
//!   slots); a request on one more is answered `429` and its connection
//!   closed, so that one agent's long waits (or a leaked read token) cannot
//!   take every slot.
//! - **Room for higher access**: the tokens of one access and every
//!   weaker one hold at most their share of the slots together
//!   ([`TokenAccess::share_of`]: half for read, three quarters for
//!   write), so that many read tokens together never keep an operator or
//!   an admin out.
//!
//! - **TLS** (with `[server] tls_cert`): each connection's handshake must
//!   also end within the header timeout, and is made with the certificate
//!   in force when it was accepted ([`ServerTls::acceptor`]), so a
//!   certificate renewed and reloaded reaches the next connection while
//!   the open ones go on. A connection whose first byte is no TLS record
//!   (plain `http://`) gets a short `400` saying to use `https://`, and is
//!   closed without its request being read.
//!
//! The auth middleware marks a connection authenticated through the
//! [`Admission`] each request carries in its extensions.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::access::shares::{Bound, HeldByName};
use crate::config::TokenAccess;
use crate::tls::server::ServerTls;

/// How long a client may take to send a request's headers.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Most HTTP connections at once, whatever the open-files limit allows.
pub const MAX_CONNECTIONS: usize = 1024;
/// File descriptors kept for the rest of the daemon, plus
/// [`FDS_PER_PORT`] for each configured port.
const RESERVED_FDS: u64 = 128;
/// File descriptors a port may use: its device, its transcript, a watch
/// for its device to reappear, and one to spare.
const FDS_PER_PORT: u64 = 4;
/// How long accepting pauses when the process is out of file descriptors
/// (unless a connection closes first).
const OUT_OF_FDS_PAUSE: Duration = Duration::from_millis(250);

/// The listener's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerLimits {
    /// Connections open at once, authenticated or not.
    pub max_connections: usize,
    /// Of those, connections that have not carried an authenticated
    /// request yet.
    pub max_unauthenticated: usize,
    /// Connections one token may hold.
    pub max_per_token: usize,
    /// How long a client may take to send a request's headers.
    pub header_timeout: Duration,
}

impl ListenerLimits {
    /// The limits for a process allowed `fd_limit` open files that serves
    /// `ports` configured ports: at most [`MAX_CONNECTIONS`], leaving the
    /// ports and the rest of the daemon their descriptors; half of them
    /// for connections without a token yet, a quarter for any one token.
    pub fn for_fd_limit(fd_limit: u64, ports: usize) -> ListenerLimits {
        let reserved = RESERVED_FDS + FDS_PER_PORT * ports as u64;
        let room = usize::try_from(fd_limit.saturating_sub(reserved)).unwrap_or(usize::MAX);
        let max_connections = room.clamp(16, MAX_CONNECTIONS);
        ListenerLimits {
            max_connections,
            max_unauthenticated: max_connections / 2,
            max_per_token: max_connections / 4,
            header_timeout: HEADER_TIMEOUT,
        }
    }
}

/// One connection's place under the cap, carried by each of its requests
/// (in their extensions) so that the auth middleware can say the
/// connection has shown a token.
#[derive(Clone)]
pub struct Admission {
    slot: Arc<Slot>,
    book: Arc<Book>,
    limits: ListenerLimits,
}

/// Why a connection that showed a token is refused: the token, or the
/// tokens of its access and weaker ones together, hold their share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crowded {
    /// The token holds [`ListenerLimits::max_per_token`] connections.
    Token {
        /// The most one token may hold.
        most: usize,
    },
    /// The tokens of `access` and weaker ones hold their share.
    Access {
        /// The caller's access.
        access: TokenAccess,
        /// The most they may hold together.
        share: usize,
    },
}

impl Crowded {
    /// The `429` that refuses the request and closes its connection,
    /// saying which share is full and what to do.
    pub fn response(&self) -> Response {
        let text = match self {
            Crowded::Token { most } => format!(
                "too many connections: this token holds {most} already, the most one token may; \
                 reuse them (HTTP keep-alive) or close some (or some browser tabs)\n"
            ),
            Crowded::Access { access, share } => format!(
                "too many connections: the tokens of {} access (and weaker) hold {share} together, \
                 the most they may; try again when some close\n",
                access.name()
            ),
        };
        (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::CONNECTION, HeaderValue::from_static("close"))],
            text,
        )
            .into_response()
    }
}

impl Admission {
    /// The connection carried a request authenticated as `token` of
    /// `access`: from its first such request on, it no longer counts
    /// against [`ListenerLimits::max_unauthenticated`], is not closed to
    /// make room, and counts as one of `token`'s connections and of
    /// `access`'s. `Err` when the token, or its access, holds its share
    /// already: the caller refuses the request and closes the connection.
    pub fn authenticated(&self, token: &str, access: TokenAccess) -> Result<(), Crowded> {
        let mut counts = self.book.lock();
        if counts.waiting.contains_key(&self.slot.id) {
            counts
                .held
                .take(
                    token,
                    access,
                    self.limits.max_per_token,
                    self.limits.max_connections,
                )
                .map_err(|bound| match bound {
                    Bound::Name(most) => Crowded::Token { most },
                    Bound::Access { access, share } => Crowded::Access { access, share },
                })?;
            counts.waiting.remove(&self.slot.id);
            self.slot.authenticated.store(true, Ordering::Relaxed);
            counts.authenticated += 1;
            if let Ok(mut owner) = self.slot.owner.lock() {
                *owner = Some((token.to_owned(), access));
            }
        }
        Ok(())
    }
}

/// A connection as the [`Book`] knows it.
struct Slot {
    id: u64,
    /// Set (under the book's lock) when it moves out of `waiting`.
    authenticated: AtomicBool,
    /// The token (and its access) whose connection it counts as, once
    /// authenticated.
    owner: Mutex<Option<(String, TokenAccess)>>,
    /// Cancelled to close the connection and make room.
    evicted: CancellationToken,
}

/// The connections open now.
#[derive(Default)]
struct Book {
    counts: Mutex<Counts>,
    /// Notified whenever a connection closes.
    closed: Notify,
}

#[derive(Default)]
struct Counts {
    /// Connections without an authenticated request yet, oldest first.
    waiting: BTreeMap<u64, Arc<Slot>>,
    /// Connections that carried an authenticated request.
    authenticated: usize,
    /// Of those, how many each token holds, and the tokens of each
    /// access.
    held: HeldByName,
    next_id: u64,
    /// New connections closed at once because every slot was taken by
    /// authenticated ones.
    refused: u64,
    /// Connections closed to make room.
    evicted: u64,
}

impl Book {
    fn lock(&self) -> MutexGuard<'_, Counts> {
        crate::sync::lock(&self.counts)
    }

    /// A slot for a new connection, making room by closing the oldest
    /// unauthenticated one if needed; `None` when every slot is held by an
    /// authenticated connection.
    fn admit(&self, limits: &ListenerLimits) -> Option<Arc<Slot>> {
        let mut counts = self.lock();
        let open = counts.waiting.len() + counts.authenticated;
        if counts.waiting.len() >= limits.max_unauthenticated || open >= limits.max_connections {
            match counts.waiting.pop_first() {
                Some((_, oldest)) => {
                    oldest.evicted.cancel();
                    counts.evicted += 1;
                    if counts.evicted.is_power_of_two() {
                        tracing::warn!(
                            "HTTP: {} connection(s) without a token closed to make room so far ({} open, at most {} without a token)",
                            counts.evicted,
                            open,
                            limits.max_unauthenticated
                        );
                    }
                }
                None => {
                    counts.refused += 1;
                    if counts.refused.is_power_of_two() {
                        tracing::warn!(
                            "HTTP: {} new connection(s) refused so far: all {} slots hold authenticated connections",
                            counts.refused,
                            limits.max_connections
                        );
                    }
                    return None;
                }
            }
        }
        counts.next_id += 1;
        let slot = Arc::new(Slot {
            id: counts.next_id,
            authenticated: AtomicBool::new(false),
            owner: Mutex::new(None),
            evicted: CancellationToken::new(),
        });
        counts.waiting.insert(slot.id, slot.clone());
        Some(slot)
    }

    /// The connection of `slot` closed.
    fn release(&self, slot: &Slot) {
        {
            let mut counts = self.lock();
            if counts.waiting.remove(&slot.id).is_none()
                && slot.authenticated.load(Ordering::Relaxed)
            {
                counts.authenticated = counts.authenticated.saturating_sub(1);
                let owner = slot.owner.lock().ok().and_then(|mut t| t.take());
                if let Some((token, access)) = owner {
                    counts.held.release(&token, access);
                }
            }
        }
        self.closed.notify_waiters();
    }
}

/// Releases a connection's slot when its task ends, however it ends.
struct Held {
    slot: Arc<Slot>,
    book: Arc<Book>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.book.release(&self.slot);
    }
}

/// Serves `app` on `listener` (over TLS with `tls`) until `stop` is cancelled; then stops
/// accepting, asks every connection to finish its responses and close
/// ([`hyper`]'s graceful shutdown), and waits for them at most `grace`.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<ServerTls>,
    limits: ListenerLimits,
    stop: CancellationToken,
    grace: Duration,
) {
    let book = Arc::new(Book::default());
    let tasks = TaskTracker::new();
    let mut out_of_fds = false;
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                out_of_fds = false;
                accepted
            }
            Err(e) if is_out_of_fds(&e) => {
                if !out_of_fds {
                    tracing::warn!(
                        "HTTP: cannot accept connections: {e}; waiting for some to close"
                    );
                    out_of_fds = true;
                }
                let _ = tokio::time::timeout(OUT_OF_FDS_PAUSE, book.closed.notified()).await;
                continue;
            }
            Err(e) => {
                // The client reset the connection before it was accepted,
                // and the like: nothing to do for it.
                tracing::debug!("HTTP: accept: {e}");
                continue;
            }
        };
        let Some(slot) = book.admit(&limits) else {
            drop(stream);
            continue;
        };
        // A console's echo and the rest of a line often go out as two
        // small frames: without this, Nagle holds the second until the
        // client's delayed ACK, some 40 ms later.
        let _ = stream.set_nodelay(true);
        let held = Held {
            slot,
            book: book.clone(),
        };
        let tls = tls.as_ref().map(ServerTls::acceptor);
        tasks.spawn(crate::task::boxed(connection(
            stream,
            peer,
            app.clone(),
            tls,
            limits,
            held,
            stop.clone(),
        )));
    }
    drop(listener);
    tasks.close();
    if tokio::time::timeout(grace, tasks.wait()).await.is_err() {
        tracing::warn!(
            "{} HTTP connection(s) still open after {grace:?}; closing anyway",
            tasks.len()
        );
    }
}

fn is_out_of_fds(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// The first byte of a TLS handshake record; a plaintext request starts
/// with a method's letter instead.
const TLS_HANDSHAKE: u8 = 0x16;

/// What a plain `http://` request to the TLS listener gets.
const USE_HTTPS: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: 72\r\n\r\nThis port speaks HTTPS only: use https:// with the same host and port.\r\n";

/// How long a refused plaintext client may take to read the answer.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// Serves one connection until it closes, is closed to make room, or the
/// server stops (then gracefully: the response being written is finished);
/// over TLS with `tls`, after the handshake.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    limits: ListenerLimits,
    held: Held,
    stop: CancellationToken,
) {
    let Some(acceptor) = tls else {
        return http1(stream, peer, app, limits, held, stop).await;
    };
    let evicted = held.slot.evicted.clone();
    let handshake = async {
        let mut first = [0u8; 1];
        match stream.peek(&mut first).await {
            Ok(1) if first[0] == TLS_HANDSHAKE => {}
            Ok(1) => {
                refuse_plaintext(stream).await;
                return None;
            }
            Ok(_) => return None,
            Err(e) => {
                tracing::debug!("HTTPS {peer}: {e}");
                return None;
            }
        }
        match acceptor.accept(stream).await {
            Ok(tls) => Some(tls),
            Err(e) => {
                tracing::debug!("HTTPS {peer}: TLS handshake: {e}");
                None
            }
        }
    };
    let tls = tokio::select! {
        done = tokio::time::timeout(limits.header_timeout, handshake) => match done {
            Ok(Some(tls)) => tls,
            Ok(None) => return,
            Err(_) => {
                tracing::debug!("HTTPS {peer}: no TLS handshake within {:?}", limits.header_timeout);
                return;
            }
        },
        () = evicted.cancelled() => return,
        () = stop.cancelled() => return,
    };
    http1(tls, peer, app, limits, held, stop).await;
}

/// Answers a plaintext request on the TLS listener with [`USE_HTTPS`]
/// and closes. What the client sent is read and dropped (at most 64 KiB,
/// for [`REFUSAL_LINGER`]) so that closing does not reset the connection
/// before the answer is read; none of it is parsed.
async fn refuse_plaintext(mut stream: TcpStream) {
    let linger = async {
        stream.write_all(USE_HTTPS).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut read = 0usize;
        while read < 64 << 10 {
            match stream.read(&mut sink).await? {
                0 => break,
                n => read += n,
            }
        }
        Ok::<_, std::io::Error>(())
    };
    let _ = tokio::time::timeout(REFUSAL_LINGER, linger).await;
}

/// HTTP/1.1 on one connection's stream, plain or TLS.
async fn http1<S>(
    stream: S,
    peer: SocketAddr,
    app: Router,
    limits: ListenerLimits,
    held: Held,
    stop: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let admission = Admission {
        slot: held.slot.clone(),
        book: held.book.clone(),
        limits,
    };
    let router = TowerToHyperService::new(app);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let mut request = request.map(Body::new);
        request.extensions_mut().insert(ConnectInfo(peer));
        request.extensions_mut().insert(admission.clone());
        let response = hyper::service::Service::call(&router, request);
        async move { Ok::<_, Infallible>(response.await.unwrap_or_else(|never| match never {})) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let connection = builder
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::pin!(connection);
    let evicted = held.slot.evicted.clone();
    let mut stopping = false;
    loop {
        tokio::select! {
            done = connection.as_mut() => {
                if let Err(e) = done {
                    tracing::debug!("HTTP {peer}: {e}");
                }
                break;
            }
            () = evicted.cancelled() => {
                tracing::debug!("HTTP {peer}: closed to make room (no authenticated request yet)");
                break;
            }
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
    drop(held);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plaintext_refusal_is_one_whole_response() {
        let text = std::str::from_utf8(USE_HTTPS).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(length, body.len());
    }

    fn limits(max: usize, unauthenticated: usize) -> ListenerLimits {
        ListenerLimits {
            max_connections: max,
            max_unauthenticated: unauthenticated,
            max_per_token: max,
            header_timeout: HEADER_TIMEOUT,
        }
    }

    fn admission(book: &Arc<Book>, slot: &Arc<Slot>, limits: ListenerLimits) -> Admission {
        Admission {
            slot: slot.clone(),
            book: book.clone(),
            limits,
        }
    }

    const ADMIN: TokenAccess = TokenAccess::Admin;

    #[test]
    fn the_cap_leaves_room_for_the_ports() {
        let l = ListenerLimits::for_fd_limit(1024, 16);
        assert_eq!(l.max_connections, 1024 - 128 - 64);
        assert_eq!(l.max_unauthenticated, l.max_connections / 2);
        assert_eq!(
            ListenerLimits::for_fd_limit(1 << 20, 1).max_connections,
            MAX_CONNECTIONS
        );
        assert_eq!(ListenerLimits::for_fd_limit(100, 50).max_connections, 16);
    }

    #[test]
    fn unauthenticated_connections_make_room_oldest_first() {
        let book = Arc::new(Book::default());
        let limits = limits(4, 2);
        let first = book.admit(&limits).unwrap();
        let second = book.admit(&limits).unwrap();
        let third = book.admit(&limits).unwrap();
        assert!(first.evicted.is_cancelled(), "the oldest made room");
        assert!(!second.evicted.is_cancelled() && !third.evicted.is_cancelled());
        book.release(&first);
        assert_eq!(book.lock().waiting.len(), 2);
    }

    #[test]
    fn authenticated_connections_are_kept_and_a_full_house_refuses() {
        let book = Arc::new(Book::default());
        let limits = limits(2, 2);
        let slots: Vec<_> = (0..2).map(|_| book.admit(&limits).unwrap()).collect();
        for slot in &slots {
            assert!(
                admission(&book, slot, limits)
                    .authenticated("a", ADMIN)
                    .is_ok()
            );
        }
        assert!(book.admit(&limits).is_none(), "every slot is authenticated");
        assert!(slots.iter().all(|s| !s.evicted.is_cancelled()));
        book.release(&slots[0]);
        assert!(book.admit(&limits).is_some(), "a closed one frees its slot");
        assert_eq!(book.lock().authenticated, 1);
    }

    #[test]
    fn one_token_holds_at_most_its_share() {
        let book = Arc::new(Book::default());
        let limits = ListenerLimits {
            max_per_token: 2,
            ..limits(8, 8)
        };
        let slots: Vec<_> = (0..4).map(|_| book.admit(&limits).unwrap()).collect();
        let admit =
            |i: usize, token: &str| admission(&book, &slots[i], limits).authenticated(token, ADMIN);
        assert_eq!(admit(0, "greedy"), Ok(()));
        assert_eq!(admit(1, "greedy"), Ok(()));
        assert_eq!(admit(2, "greedy"), Err(Crowded::Token { most: 2 }));
        assert_eq!(admit(3, "other"), Ok(()));
        assert_eq!(admit(0, "greedy"), Ok(()), "counted once");
        book.release(&slots[0]);
        assert_eq!(admit(2, "greedy"), Ok(()), "a freed share");
        assert_eq!(book.lock().held.held_by("greedy"), 2);
    }

    #[test]
    fn the_tokens_of_an_access_hold_its_share_together_and_leave_room_above() {
        let book = Arc::new(Book::default());
        let limits = limits(8, 8);
        let slots: Vec<_> = (0..8).map(|_| book.admit(&limits).unwrap()).collect();
        let admit = |i: usize, token: &str, access| {
            admission(&book, &slots[i], limits).authenticated(token, access)
        };
        let (read, write) = (TokenAccess::Read, TokenAccess::Write);
        // Four read tokens of one connection each: half of the eight.
        for i in 0..4 {
            assert_eq!(admit(i, &format!("reader{i}"), read), Ok(()));
        }
        assert_eq!(
            admit(4, "reader4", read),
            Err(Crowded::Access {
                access: read,
                share: 4
            })
        );
        assert_eq!(
            admit(4, "scraper", TokenAccess::Metrics),
            Err(Crowded::Access {
                access: TokenAccess::Metrics,
                share: 4
            }),
            "metrics counts with read"
        );
        // Write tokens: up to three quarters with the readers.
        assert_eq!(admit(4, "writer", write), Ok(()));
        assert_eq!(admit(5, "writer2", write), Ok(()));
        assert_eq!(
            admit(6, "writer3", write),
            Err(Crowded::Access {
                access: write,
                share: 6
            })
        );
        // The admin gets the rest.
        assert_eq!(admit(6, "admin", ADMIN), Ok(()));
        assert_eq!(admit(7, "admin", ADMIN), Ok(()));
        // A reader's connection closes: a reader gets its place back.
        book.release(&slots[0]);
        let again = book.admit(&limits).unwrap();
        assert_eq!(
            admission(&book, &again, limits).authenticated("reader9", read),
            Ok(())
        );
    }
}
