//! A minimal MCP client over one kept-alive HTTP/1.1 connection, plain
//! TCP or TLS: JSON-RPC posts to the streamable HTTP endpoint, read back
//! whether the answer comes as JSON or as an event stream.
//!
//! It exists so that a bench can put HTTP and HTTPS side by side with the
//! same client on both, the transport the only difference (rmcp's own
//! client picks its TLS stack by cargo feature, for every test at once).

use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;

/// One MCP session on one connection.
pub struct PostClient {
    sender: SendRequest<Full<Bytes>>,
    authority: String,
    path: String,
    token: String,
    session: String,
    next_id: u64,
}

impl PostClient {
    /// Connects to `url` (`http://` or `https://` `127.0.0.1:PORT/mcp`),
    /// with TLS by `tls` for `https://` (the server's name checked as
    /// `localhost`), and opens a session as the bearer of `token`
    /// (`initialize`, then `notifications/initialized`).
    pub async fn connect(
        url: &str,
        token: &str,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> anyhow::Result<PostClient> {
        let (secure, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else {
            bail!("{url}: not an http:// or https:// URL");
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let tcp = TcpStream::connect(authority)
            .await
            .with_context(|| format!("connect to {authority}"))?;
        tcp.set_nodelay(true)?;
        let sender = if secure {
            let config = tls.ok_or_else(|| anyhow!("{url}: https needs a TLS configuration"))?;
            let name = rustls_pki_types::ServerName::try_from("localhost")?;
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .context("TLS handshake")?;
            handshake(stream).await?
        } else {
            handshake(tcp).await?
        };
        let mut client = PostClient {
            sender,
            authority: authority.to_owned(),
            path: if path.is_empty() { "/" } else { path }.to_owned(),
            token: token.to_owned(),
            session: String::new(),
            next_id: 0,
        };
        let (session, _) = client
            .post(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "serialgate-testkit post client", "version": "0"}}}),
            )
            .await?;
        client.session = session.ok_or_else(|| anyhow!("initialize gave no Mcp-Session-Id"))?;
        client
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(client)
    }

    /// Calls `tool` with `args`; its structured result, or an error with
    /// the tool's message.
    pub async fn call(&mut self, tool: &str, args: Value) -> anyhow::Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let (_, answer) = self
            .post(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": args}}))
            .await?;
        let answer = answer.ok_or_else(|| anyhow!("{tool}: no answer"))?;
        if let Some(error) = answer.get("error") {
            bail!("{tool}: {error}");
        }
        let result = &answer["result"];
        if result["isError"] == true {
            bail!("{tool}: {}", result["content"]);
        }
        Ok(result["structuredContent"].clone())
    }

    /// Posts one JSON-RPC message; the session id the answer carries and
    /// the answer (none for a notification's 202).
    async fn post(&mut self, message: Value) -> anyhow::Result<(Option<String>, Option<Value>)> {
        let mut request = hyper::Request::post(self.path.as_str())
            .header("host", &self.authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .header("authorization", format!("Bearer {}", self.token));
        if !self.session.is_empty() {
            request = request.header("mcp-session-id", &self.session);
        }
        let request = request.body(Full::new(Bytes::from(message.to_string())))?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let body = response.into_body().collect().await?.to_bytes();
        let body = String::from_utf8_lossy(&body);
        if !status.is_success() {
            bail!("HTTP {status}: {body}");
        }
        if status == hyper::StatusCode::ACCEPTED || body.trim().is_empty() {
            return Ok((session, None));
        }
        let answer = if stream {
            answer_in_events(&body, &message["id"])?
        } else {
            serde_json::from_str(&body)?
        };
        Ok((session, Some(answer)))
    }
}

/// The JSON-RPC answer to `id` among an event stream's `data:` lines.
fn answer_in_events(body: &str, id: &Value) -> anyhow::Result<Value> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| &message["id"] == id)
        .ok_or_else(|| anyhow!("no answer to {id} in the event stream: {body}"))
}

/// An HTTP/1.1 handshake on `stream`, its connection driven by a task.
async fn handshake<S>(stream: S) -> anyhow::Result<SendRequest<Full<Bytes>>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}
