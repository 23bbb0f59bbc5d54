//! How the console client reaches the gateway: the local console socket
//! (frames with a kind byte and a length, [`protocol::encode_frame`]) or
//! the HTTP listener's WebSocket (a text message per JSON frame, a binary
//! one per data frame) with a bearer token, over TLS for an `https://`
//! gateway (its certificate checked against `--ca-file` or the system's
//! roots, for the URL's host). Connecting has a deadline and
//! its errors say what to check; after it, a [`FrameSink`] and a
//! [`FrameStream`] carry [`Frame`]s whichever the transport, so that the
//! session does not care.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::either::Either;

use super::render::shown;
use crate::console::protocol::{self, Frame, FrameDecoder};

/// How long connecting (and the WebSocket upgrade) may take.
pub(crate) const CONNECT_DEADLINE: Duration = Duration::from_secs(10);

/// The largest token file read: a secret is one line.
const MAX_TOKEN_FILE: u64 = 4096;

/// Where the gateway is.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// The local console socket.
    Socket(PathBuf),
    /// The HTTP listener, with the bearer token if any.
    Http {
        /// The listener's address.
        base: HttpBase,
        /// The token's secret.
        token: Option<String>,
        /// What an `https://` gateway's certificate is checked against.
        tls: Option<Arc<rustls::ClientConfig>>,
    },
}

/// The gateway's base address from `--url http[s]://HOST:PORT[/PREFIX]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpBase {
    /// `HOST:PORT`, what TCP connects to.
    authority: String,
    /// The host alone (IPv6 without brackets): the name the gateway's
    /// certificate must carry.
    host: String,
    /// A path prefix (a reverse proxy's), without a trailing `/`.
    prefix: String,
    /// `https://`: the WebSocket goes over TLS.
    pub(crate) tls: bool,
}

impl HttpBase {
    /// Reads `--url`; refuses anything but a plain base address.
    pub(crate) fn parse(url: &str) -> Result<HttpBase, String> {
        let lower = url.to_ascii_lowercase();
        let (tls, rest) = if lower.starts_with("https://") {
            (true, &url["https://".len()..])
        } else if lower.starts_with("http://") {
            (false, &url["http://".len()..])
        } else {
            return Err(format!(
                "--url {}: give the gateway's address as https://HOST:PORT (or http:// on loopback)",
                shown(url)
            ));
        };
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, ""),
        };
        let bad = |what: &str| {
            Err(format!(
                "--url {}: {what}; give the gateway's address as http://HOST:PORT",
                shown(url)
            ))
        };
        if authority.is_empty() {
            return bad("no host");
        }
        if authority.contains('@') {
            return bad("no user or password in the URL (pass the token with --token-file)");
        }
        if path.contains(['?', '#']) {
            return bad("no query or fragment");
        }
        if authority
            .chars()
            .chain(path.chars())
            .any(|c| c.is_control() || c.is_whitespace())
        {
            return bad("spaces or control characters");
        }
        // Without a port, the scheme's default, as a browser would.
        let authority = if authority.ends_with(']') || !authority.contains(':') {
            format!("{authority}:{}", if tls { 443 } else { 80 })
        } else {
            authority.to_owned()
        };
        let host = match authority.rsplit_once(':') {
            Some((host, _)) => host.trim_start_matches('[').trim_end_matches(']'),
            None => authority.as_str(),
        }
        .to_owned();
        Ok(HttpBase {
            authority,
            host,
            prefix: path.trim_end_matches('/').to_owned(),
            tls,
        })
    }

    /// The WebSocket address: `/ports/{port}/console` to attach, or
    /// `/console` for the list.
    pub(crate) fn ws_url(&self, port: Option<&str>) -> String {
        let scheme = if self.tls { "wss" } else { "ws" };
        match port {
            Some(port) => format!(
                "{scheme}://{}{}/ports/{}/console",
                self.authority,
                self.prefix,
                path_segment(port)
            ),
            None => format!("{scheme}://{}{}/console", self.authority, self.prefix),
        }
    }
}

/// `s` as one URL path segment: unreserved characters as they are, every
/// other byte percent-encoded.
fn path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Reads a bearer token from `path`: the file's content, trimmed. Refuses
/// a file its group or other users may read or change, as the daemon does
/// with its secret files, and anything but a small regular file.
pub(crate) fn read_token(path: &Path) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let cannot =
        |e: &dyn std::fmt::Display| format!("cannot read the token file {}: {e}", path.display());
    let file = std::fs::OpenOptions::new()
        .read(true)
        // A FIFO opens at once instead of waiting for a writer, and is then
        // refused as no regular file.
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| cannot(&e))?;
    let meta = file.metadata().map_err(|e| cannot(&e))?;
    if !meta.is_file() {
        return Err(cannot(&"it is not a regular file"));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "the token file {} may be read or changed by other users than its owner \
             (mode {mode:o}): chmod 600 {}, and give the token a new secret if others could \
             read it",
            path.display(),
            path.display()
        ));
    }
    let mut text = Vec::new();
    file.take(MAX_TOKEN_FILE + 1)
        .read_to_end(&mut text)
        .map_err(|e| cannot(&e))?;
    if text.len() as u64 > MAX_TOKEN_FILE {
        return Err(cannot(&format!(
            "it is larger than {MAX_TOKEN_FILE} bytes; a token is one line"
        )));
    }
    let token = std::str::from_utf8(text.trim_ascii())
        .map_err(|_| cannot(&"it is not text"))?
        .to_owned();
    if token.is_empty() {
        return Err(cannot(&"it is empty"));
    }
    if token.chars().any(|c| c.is_control()) {
        return Err(cannot(&"the token is more than one line"));
    }
    Ok(token)
}

/// A TCP connection to the gateway, or TLS over one.
type Wire = Either<TcpStream, tokio_rustls::client::TlsStream<TcpStream>>;

type Ws = WebSocketStream<Wire>;

/// The sending half of a connection.
#[derive(Debug)]
pub(crate) enum FrameSink {
    /// The console socket.
    Unix(OwnedWriteHalf),
    /// The WebSocket.
    Ws(SplitSink<Ws, Message>),
}

/// The receiving half of a connection.
#[derive(Debug)]
pub(crate) enum FrameStream {
    /// The console socket: what was read, split into frames.
    Unix {
        /// The socket.
        read: OwnedReadHalf,
        /// Bytes read and not yet a whole frame.
        decoder: FrameDecoder,
        /// The read buffer.
        buf: Box<[u8]>,
    },
    /// The WebSocket.
    Ws(SplitStream<Ws>),
}

/// Connects to the gateway within [`CONNECT_DEADLINE`]: to attach to
/// `port`, or (`None`) for the port list. The error says what to check.
pub(crate) async fn connect(
    target: &Target,
    port: Option<&str>,
) -> Result<(FrameSink, FrameStream), String> {
    match tokio::time::timeout(CONNECT_DEADLINE, connect_now(target, port)).await {
        Ok(result) => result,
        Err(_) => Err(match target {
            Target::Socket(path) => format!(
                "no connection to the console socket {} within {} s; check that the daemon \
                 is running and not stuck",
                path.display(),
                CONNECT_DEADLINE.as_secs()
            ),
            Target::Http { base, .. } => format!(
                "no connection to the gateway at {} within {} s; check --url (the address of \
                 the gateway's [server] listen) and that nothing between drops the traffic",
                base.authority,
                CONNECT_DEADLINE.as_secs()
            ),
        }),
    }
}

async fn connect_now(
    target: &Target,
    port: Option<&str>,
) -> Result<(FrameSink, FrameStream), String> {
    match target {
        Target::Socket(path) => {
            let stream = UnixStream::connect(path).await.map_err(|e| {
                format!(
                    "cannot connect to the console socket {}: {e}; check that the daemon runs \
                     with [server] console_socket = {:?} and that you may open the socket (its \
                     permissions and your groups); --socket or SERIALGATE_CONSOLE_SOCKET name \
                     another path",
                    path.display(),
                    path.display().to_string()
                )
            })?;
            Ok(unix(stream))
        }
        Target::Http { base, token, tls } => {
            let url = base.ws_url(port);
            let tcp = TcpStream::connect(&base.authority).await.map_err(|e| {
                format!(
                    "cannot connect to the gateway at {}: {e}; check --url (the address of the \
                     gateway's [server] listen)",
                    base.authority
                )
            })?;
            let _ = tcp.set_nodelay(true);
            let wire = match tls {
                None => Either::Left(tcp),
                Some(tls) => {
                    let name = crate::tls::client::server_name(&base.host)
                        .map_err(|e| format!("--url: {e}"))?;
                    let stream = tokio_rustls::TlsConnector::from(tls.clone())
                        .connect(name, tcp)
                        .await
                        .map_err(|e| {
                            format!(
                                "TLS with the gateway at {}: {e}; check --url (its host must be a name the gateway's certificate carries) and --ca-file (the CA that signed it)",
                                base.authority
                            )
                        })?;
                    Either::Right(stream)
                }
            };
            let ws = websocket(wire, &url, token.as_deref()).await?;
            let (sink, stream) = ws.split();
            Ok((FrameSink::Ws(sink), FrameStream::Ws(stream)))
        }
    }
}

/// The two halves of a console socket connection.
pub(crate) fn unix(stream: UnixStream) -> (FrameSink, FrameStream) {
    let (read, write) = stream.into_split();
    (
        FrameSink::Unix(write),
        FrameStream::Unix {
            read,
            decoder: FrameDecoder::new(protocol::MAX_FRAME_BYTES),
            buf: vec![0; 64 * 1024].into_boxed_slice(),
        },
    )
}

/// The WebSocket upgrade at `url` over `tcp`, with the bearer token.
async fn websocket(tcp: Wire, url: &str, token: Option<&str>) -> Result<Ws, String> {
    let mut request = url
        .into_client_request()
        .map_err(|e| format!("--url gives no valid address ({}): {e}", shown(url)))?;
    if let Some(token) = token {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| "the token holds characters an HTTP header cannot carry".to_owned())?;
        request.headers_mut().insert("authorization", value);
    }
    let config = WebSocketConfig::default()
        .max_message_size(Some(protocol::MAX_FRAME_BYTES))
        .max_frame_size(Some(protocol::MAX_FRAME_BYTES));
    match tokio_tungstenite::client_async_with_config(request, tcp, Some(config)).await {
        Ok((ws, _response)) => Ok(ws),
        Err(tungstenite::Error::Http(response)) => {
            let status = response.status();
            let body = response
                .body()
                .as_deref()
                .map(|b| shown(String::from_utf8_lossy(b).trim()))
                .filter(|b| !b.is_empty())
                .map_or_else(String::new, |b| format!(" ({b})"));
            let hint = match status.as_u16() {
                401 if token.is_none() => "the gateway asks for a token: pass --token-file FILE",
                401 => {
                    "the gateway refused the token: check --token-file (the secret of one of the gateway's [[tokens]])"
                }
                403 => {
                    "the token may not attach to this port: check its access in the gateway's [[tokens]]"
                }
                404 => {
                    "no such console at the gateway: check the port name (serialgate console --list) and that the gateway serves consoles"
                }
                _ => "check --url and the gateway's log",
            };
            Err(format!(
                "the gateway answered HTTP {status}{body} at {}: {hint}",
                shown(url)
            ))
        }
        Err(e) => Err(format!(
            "the WebSocket upgrade at {} failed: {e}; check --url (the gateway's HTTP listener, \
             not a proxy that drops upgrades)",
            shown(url)
        )),
    }
}

impl FrameSink {
    /// Sends one frame, whole.
    pub(crate) async fn send(&mut self, frame: &Frame) -> io::Result<()> {
        match self {
            FrameSink::Unix(write) => write.write_all(&protocol::encode_frame(frame)).await,
            FrameSink::Ws(sink) => {
                let message = match frame {
                    Frame::Json(text) => Message::text(text.as_str()),
                    Frame::Data(bytes) => Message::binary(bytes.clone()),
                };
                sink.send(message).await.map_err(io::Error::other)
            }
        }
    }

    /// Ends the connection politely: EOF on the socket, a close frame on
    /// the WebSocket.
    pub(crate) async fn close(&mut self) {
        match self {
            FrameSink::Unix(write) => {
                let _ = write.shutdown().await;
            }
            FrameSink::Ws(sink) => {
                let _ = sink.close().await;
            }
        }
    }
}

impl FrameStream {
    /// The next frame; `Ok(None)` when the server closed. Cancel-safe:
    /// bytes read before a cancelled call stay for the next one.
    pub(crate) async fn recv(&mut self) -> io::Result<Option<Frame>> {
        match self {
            FrameStream::Unix { read, decoder, buf } => loop {
                if let Some(frame) = decoder
                    .next_frame()
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?
                {
                    return Ok(Some(frame));
                }
                let n = read.read(buf).await?;
                if n == 0 {
                    return Ok(None);
                }
                decoder.push(&buf[..n]);
            },
            FrameStream::Ws(stream) => loop {
                match stream.next().await {
                    None => return Ok(None),
                    Some(Ok(Message::Text(text))) => {
                        return Ok(Some(Frame::Json(text.as_str().to_owned())));
                    }
                    Some(Ok(Message::Binary(bytes))) => {
                        return Ok(Some(Frame::Data(bytes.to_vec())));
                    }
                    Some(Ok(Message::Close(_))) => return Ok(None),
                    // Pings are answered by tungstenite itself.
                    Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
                    Some(Err(
                        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed,
                    )) => return Ok(None),
                    Some(Err(tungstenite::Error::Io(e))) => return Err(e),
                    Some(Err(e)) => return Err(io::Error::other(e)),
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

    #[test]
    fn urls_are_plain_http_base_addresses() {
        let base = HttpBase::parse("http://127.0.0.1:7301").unwrap();
        assert_eq!(
            base.ws_url(Some("sw1")),
            "ws://127.0.0.1:7301/ports/sw1/console"
        );
        assert_eq!(base.ws_url(None), "ws://127.0.0.1:7301/console");
        let base = HttpBase::parse("http://gw.lab:8080/serialgate/").unwrap();
        assert_eq!(
            base.ws_url(Some("core/1 a")),
            "ws://gw.lab:8080/serialgate/ports/core%2F1%20a/console"
        );
        assert_eq!(
            HttpBase::parse("http://[::1]").unwrap().ws_url(None),
            "ws://[::1]:80/console"
        );
        let base = HttpBase::parse("https://gw.lab/serialgate").unwrap();
        assert_eq!(base.ws_url(None), "wss://gw.lab:443/serialgate/console");
        assert_eq!(base.host, "gw.lab");
        assert_eq!(HttpBase::parse("https://[::1]:7301").unwrap().host, "::1");
        for bad in [
            "gw:7301",
            "http://",
            "http://u:p@gw:1",
            "http://gw:1/?x",
            "http://g w:1",
        ] {
            assert!(HttpBase::parse(bad).is_err(), "{bad}");
        }
        let e = HttpBase::parse("ftp://\x1b[2J").unwrap_err();
        assert!(!e.contains('\x1b'), "{e}");
    }

    #[test]
    fn token_files_others_may_read_are_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "  s3cret\n").unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = read_token(&path).unwrap_err();
            assert!(
                e.contains(&format!("(mode {mode:o}): chmod 600 {}", path.display())),
                "{e}"
            );
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_token(&path).unwrap(), "s3cret");
        std::fs::write(&path, "\n").unwrap();
        assert!(read_token(&path).unwrap_err().contains("empty"));
        assert!(
            read_token(dir.path())
                .unwrap_err()
                .contains("not a regular file")
        );
        assert!(read_token(&dir.path().join("none")).is_err());
    }

    fn sample_frames() -> Vec<Frame> {
        vec![
            Frame::Json(r#"{"type":"who"}"#.to_owned()),
            Frame::Data(b"show clock\r".to_vec()),
            Frame::Data(Vec::new()),
            Frame::Data(vec![0xff; protocol::MAX_CLIENT_DATA_BYTES]),
        ]
    }

    #[tokio::test]
    async fn frames_round_trip_over_the_console_socket() {
        let (a, b) = UnixStream::pair().unwrap();
        let (mut a_sink, mut a_stream) = unix(a);
        let (mut b_sink, mut b_stream) = unix(b);
        for frame in sample_frames() {
            a_sink.send(&frame).await.unwrap();
            assert_eq!(b_stream.recv().await.unwrap(), Some(frame.clone()));
            b_sink.send(&frame).await.unwrap();
            assert_eq!(a_stream.recv().await.unwrap(), Some(frame));
        }
        a_sink.close().await;
        assert_eq!(b_stream.recv().await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_bad_frame_on_the_socket_is_an_error() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let (_sink, mut stream) = unix(a);
        b.write_all(b"X\0\0\0\0").await.unwrap();
        assert_eq!(
            stream.recv().await.unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
    }

    // The header callback's type, and its large error, are tungstenite's.
    #[allow(clippy::result_large_err)]
    #[tokio::test]
    async fn frames_round_trip_over_the_websocket_with_the_token() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = crate::task::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut seen = None;
            let mut ws =
                tokio_tungstenite::accept_hdr_async(tcp, |req: &Request, resp: Response| {
                    seen = Some((
                        req.uri().path().to_owned(),
                        req.headers()
                            .get("authorization")
                            .map(|v| v.to_str().unwrap().to_owned()),
                    ));
                    Ok(resp)
                })
                .await
                .unwrap();
            // Echo every message, with a ping first to show it is answered.
            ws.send(Message::Ping(vec![1].into())).await.unwrap();
            while let Some(Ok(message)) = ws.next().await {
                if message.is_text() || message.is_binary() {
                    ws.send(message).await.unwrap();
                }
            }
            seen
        });
        let base = HttpBase::parse(&format!("http://{addr}")).unwrap();
        let target = Target::Http {
            base,
            token: Some("s3cret".to_owned()),
            tls: None,
        };
        let (mut sink, mut stream) = connect(&target, Some("sw1")).await.unwrap();
        for frame in sample_frames() {
            sink.send(&frame).await.unwrap();
            assert_eq!(stream.recv().await.unwrap(), Some(frame));
        }
        sink.close().await;
        assert_eq!(stream.recv().await.unwrap(), None);
        assert_eq!(
            server.await.unwrap(),
            Some((
                "/ports/sw1/console".to_owned(),
                Some("Bearer s3cret".to_owned())
            ))
        );
    }

    #[tokio::test]
    async fn a_refused_upgrade_says_what_to_check() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        crate::task::spawn(async move {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = tcp.read(&mut buf).await;
            let _ = tcp
                .write_all(
                    b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 13\r\n\r\nbad \x1b[2Jtoken",
                )
                .await;
        });
        let target = Target::Http {
            base: HttpBase::parse(&format!("http://{addr}")).unwrap(),
            token: Some("wrong".to_owned()),
            tls: None,
        };
        let e = connect(&target, Some("sw1")).await.unwrap_err();
        assert!(e.contains("HTTP 401") && e.contains("--token-file"), "{e}");
        assert!(!e.contains('\x1b'), "{e}");
    }

    #[tokio::test]
    async fn a_missing_socket_says_what_to_check() {
        let dir = tempfile::tempdir().unwrap();
        let target = Target::Socket(dir.path().join("console.sock"));
        let e = connect(&target, Some("sw1")).await.unwrap_err();
        assert!(
            e.contains("console_socket") && e.contains("permissions") && e.contains("--socket"),
            "{e}"
        );
    }
}
