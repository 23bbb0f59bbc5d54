//! A console connection as a test drives it: the attach protocol's frames
//! over the daemon's local console socket, spelled out here byte by byte
//! (kind `J` or `D`, a big-endian `u32` length, the payload) rather than
//! borrowed from the daemon, so that the tests check the wire format too;
//! or over the HTTP listener's WebSocket (a text message is JSON, a binary
//! message data).

use std::path::Path;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::daemon::WITHIN;

/// One frame from the server.
#[derive(Debug, Clone)]
pub enum Received {
    /// A JSON message.
    Json(Value),
    /// Device output at an OutputLog offset.
    Data {
        /// The offset of the first byte.
        offset: u64,
        /// The bytes.
        bytes: Vec<u8>,
    },
}

/// The connection under a [`ConsoleConn`].
enum Transport {
    Unix(UnixStream),
    WebSocket(Box<WebSocketStream<MaybeTlsStream<TcpStream>>>),
}

/// A connection to the console socket or the console WebSocket.
pub struct ConsoleConn {
    transport: Transport,
    buf: Vec<u8>,
    /// Every data byte received, in order.
    pub output: Vec<u8>,
}

impl ConsoleConn {
    /// Connects to the socket at `path`.
    pub async fn connect(path: &Path) -> ConsoleConn {
        let stream = tokio::time::timeout(WITHIN, UnixStream::connect(path))
            .await
            .expect("connect in time")
            .expect("connect to the console socket");
        ConsoleConn {
            transport: Transport::Unix(stream),
            buf: Vec::new(),
            output: Vec::new(),
        }
    }

    /// Opens the WebSocket at `url` (`ws://HOST:PORT/ports/sw1/console`)
    /// with `token` as the bearer token; the HTTP refusal otherwise.
    pub async fn connect_ws(url: &str, token: Option<&str>) -> Result<ConsoleConn, String> {
        let bearer = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = bearer
            .as_deref()
            .map(|b| ("authorization", b))
            .into_iter()
            .collect();
        ConsoleConn::connect_ws_with(url, &headers).await
    }

    /// Opens the WebSocket at `url` with these extra request headers (a
    /// browser's `Cookie` and `Origin`); the HTTP refusal otherwise.
    pub async fn connect_ws_with(
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<ConsoleConn, String> {
        let mut request = url.into_client_request().map_err(|e| e.to_string())?;
        for (name, value) in headers {
            let name: http::HeaderName = name.parse().map_err(|e| format!("{e}"))?;
            let value = value.parse().map_err(|e| format!("{e}"))?;
            request.headers_mut().insert(name, value);
        }
        let connected = tokio::time::timeout(WITHIN, tokio_tungstenite::connect_async(request))
            .await
            .map_err(|_| "no WebSocket handshake in time".to_owned())?;
        match connected {
            Ok((ws, _)) => Ok(ConsoleConn {
                transport: Transport::WebSocket(Box::new(ws)),
                buf: Vec::new(),
                output: Vec::new(),
            }),
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                Err(format!("HTTP {}", response.status().as_u16()))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// Connects and says hello: `{"type":"hello","port":port,"mode":mode}`
    /// plus `extra` fields; returns the `attached` message.
    pub async fn attach(path: &Path, port: &str, mode: &str, extra: Value) -> (ConsoleConn, Value) {
        let mut conn = ConsoleConn::connect(path).await;
        let attached = conn.hello(port, mode, extra).await;
        (conn, attached)
    }

    /// Says hello (`port`, `mode`, plus `extra` fields); the `attached`.
    async fn hello(&mut self, port: &str, mode: &str, extra: Value) -> Value {
        let mut hello = serde_json::json!({"type": "hello", "port": port, "mode": mode});
        if let (Some(h), Value::Object(extra)) = (hello.as_object_mut(), extra) {
            h.extend(extra);
        }
        self.send_json(&hello).await;
        self.until_json("attached").await
    }

    /// [`ConsoleConn::attach`] over the WebSocket at `url` with `token`.
    pub async fn attach_ws(
        url: &str,
        token: Option<&str>,
        port: &str,
        mode: &str,
        extra: Value,
    ) -> Result<(ConsoleConn, Value), String> {
        let mut conn = ConsoleConn::connect_ws(url, token).await?;
        let attached = conn.hello(port, mode, extra).await;
        Ok((conn, attached))
    }

    /// Sends raw bytes as they are (to send broken frames on the socket;
    /// one binary message on a WebSocket).
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        match &mut self.transport {
            Transport::Unix(stream) => stream.write_all(bytes).await.expect("write to the socket"),
            Transport::WebSocket(ws) => ws
                .send(Message::Binary(bytes.to_vec().into()))
                .await
                .expect("send on the WebSocket"),
        }
    }

    /// Sends a JSON frame.
    pub async fn send_json(&mut self, message: &Value) {
        let text = message.to_string();
        match &mut self.transport {
            Transport::Unix(_) => self.send_raw(&frame(b'J', text.as_bytes())).await,
            Transport::WebSocket(ws) => ws
                .send(Message::Text(text.into()))
                .await
                .expect("send on the WebSocket"),
        }
    }

    /// Sends a data frame (typed bytes).
    pub async fn send_data(&mut self, bytes: &[u8]) {
        match &self.transport {
            Transport::Unix(_) => self.send_raw(&frame(b'D', bytes)).await,
            Transport::WebSocket(_) => self.send_raw(bytes).await,
        }
    }

    /// The next frame, `None` when the server closed the connection.
    pub async fn next(&mut self) -> Option<Received> {
        tokio::time::timeout(WITHIN, self.next_unbounded())
            .await
            .expect("a frame from the console socket in time")
    }

    async fn next_unbounded(&mut self) -> Option<Received> {
        if let Transport::WebSocket(ws) = &mut self.transport {
            loop {
                return match ws.next().await? {
                    Ok(Message::Text(text)) => Some(Received::Json(
                        serde_json::from_str(text.as_str()).expect("JSON"),
                    )),
                    Ok(Message::Binary(payload)) => Some(self.data(&payload)),
                    Ok(Message::Close(_)) | Err(_) => None,
                    Ok(_) => continue,
                };
            }
        }
        let Transport::Unix(stream) = &mut self.transport else {
            return None;
        };
        loop {
            if self.buf.len() >= 5 {
                let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]])
                    as usize;
                if self.buf.len() >= 5 + len {
                    let kind = self.buf[0];
                    let payload: Vec<u8> = self.buf[5..5 + len].to_vec();
                    self.buf.drain(..5 + len);
                    return Some(match kind {
                        b'J' => Received::Json(serde_json::from_slice(&payload).expect("JSON")),
                        b'D' => {
                            let (offset, bytes) = payload.split_at(8);
                            let offset = u64::from_be_bytes(offset.try_into().expect("8 bytes"));
                            self.output.extend_from_slice(bytes);
                            return Some(Received::Data {
                                offset,
                                bytes: bytes.to_vec(),
                            });
                        }
                        other => panic!("unknown frame kind {other}"),
                    });
                }
            }
            let mut chunk = [0u8; 16384];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// A data payload: the offset, then the bytes (kept in `output`).
    fn data(&mut self, payload: &[u8]) -> Received {
        let (offset, bytes) = payload.split_at(8);
        let offset = u64::from_be_bytes(offset.try_into().expect("8 bytes"));
        self.output.extend_from_slice(bytes);
        Received::Data {
            offset,
            bytes: bytes.to_vec(),
        }
    }

    /// Reads frames until a JSON message of `kind` (its `type`); data on
    /// the way is kept in [`ConsoleConn::output`], other messages are
    /// dropped.
    pub async fn until_json(&mut self, kind: &str) -> Value {
        loop {
            match self.next().await {
                Some(Received::Json(v)) if v["type"] == kind => return v,
                Some(_) => {}
                None => panic!("the console socket closed before a {kind:?} message"),
            }
        }
    }

    /// Reads frames until the output received so far contains `needle`;
    /// returns the messages seen on the way.
    pub async fn until_output(&mut self, needle: &str) -> Vec<Value> {
        let mut messages = Vec::new();
        while !String::from_utf8_lossy(&self.output).contains(needle) {
            match self.next().await {
                Some(Received::Json(v)) => messages.push(v),
                Some(Received::Data { .. }) => {}
                None => panic!(
                    "the console socket closed before {needle:?}; output: {:?}",
                    String::from_utf8_lossy(&self.output)
                ),
            }
        }
        messages
    }

    /// Reads until the server closes; returns the messages on the way.
    pub async fn until_closed(&mut self) -> Vec<Value> {
        let mut messages = Vec::new();
        while let Some(frame) = self.next().await {
            if let Received::Json(v) = frame {
                messages.push(v);
            }
        }
        messages
    }
}

/// A frame of the socket's envelope.
pub fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    let len = u32::try_from(payload.len()).expect("a payload under 4 GiB");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A simulated device at `<dir>/sw1`, the real daemon with a console
/// socket beside MCP over stdio, and an agent's MCP session: the site the
/// console tests attach people to.
pub struct ConsoleSite {
    /// The simulated device.
    pub sim: serialgate_sim::SimHandle,
    /// The daemon.
    pub daemon: crate::daemon::Daemon,
    /// An agent's MCP session over the daemon's stdio.
    pub agent: crate::daemon::Client,
    /// The console socket.
    pub socket: std::path::PathBuf,
    _notify: crate::daemon::NotifySocket,
    _dir: tempfile::TempDir,
}

impl ConsoleSite {
    /// Starts `profile` and the daemon with port `sw1` on it (the
    /// profile's preset) and `console_socket = "console.sock"`; returns
    /// once the socket is bound and the port had its first open attempt.
    pub async fn start(profile: serialgate_sim::Profile) -> ConsoleSite {
        use crate::daemon::{Daemon, NotifySocket};
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("sw1");
        let sim = serialgate_sim::spawn(profile, Some(link.clone()))
            .await
            .expect("simulated device");
        let config = dir.path().join("serialgate.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\nconsole_socket = \"console.sock\"\n\n[ports.sw1]\ndevice = {:?}\npreset = \"{}\"\n",
                link.display(),
                profile.preset()
            ),
        )
        .expect("write config");
        let notify = NotifySocket::bind(dir.path());
        let mut daemon = Daemon::spawn(Some(&config), &notify, &[]);
        daemon.stderr.wait_for("console socket at").await;
        notify.expect("READY=1").await;
        let agent = daemon.client().await;
        ConsoleSite {
            sim,
            daemon,
            agent,
            socket: dir.path().join("console.sock"),
            _notify: notify,
            _dir: dir,
        }
    }
}

impl ConsoleSite {
    /// The daemon's config file, to rewrite before a reload (SIGHUP).
    pub fn config(&self) -> std::path::PathBuf {
        self._dir.path().join("serialgate.toml")
    }
}

/// This process's user as the daemon names a person on its console
/// socket (their uid's user name, else `uid N`).
pub fn user_name() -> String {
    let uid = nix::unistd::getuid();
    nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map_or_else(|| format!("uid {uid}"), |u| u.name)
}
