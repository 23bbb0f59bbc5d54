//! One Redfish request: hyper's HTTP/1 client over a tokio TCP stream,
//! TLS (rustls, the daemon's client config) for an `https://` BMC, one
//! connection per request, HTTP Basic authentication, the answer's body
//! read up to [`MAX_BODY`] bytes. The caller bounds it by its deadline:
//! the connection lives only in the returned future.

use std::sync::Arc;

use base64::Engine;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, USER_AGENT};
use hyper_util::rt::TokioIo;

/// Most bytes of an answer's body read: a system's resource is a few
/// KiB; more is a broken or hostile BMC.
pub const MAX_BODY: usize = 256 * 1024;

/// Where a BMC is and how it is logged in to.
pub struct Endpoint {
    /// The host to connect to (a name or an IP address, IPv6 unbracketed).
    pub host: String,
    /// Its TCP port.
    pub port: u16,
    /// The `Host` header.
    pub authority: String,
    /// What an `https://` BMC's certificate is checked against (`None`:
    /// plain HTTP).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The Basic authentication user and password, if any.
    pub login: Option<(String, String)>,
}

/// An answer: its status and body (at most [`MAX_BODY`] bytes).
pub struct Answer {
    /// The HTTP status.
    pub status: hyper::StatusCode,
    /// The body.
    pub body: Bytes,
}

/// Sends `method path` (with a JSON `body` for a POST) and reads the
/// answer; the error says what failed, for
/// [`DriverError::Unreachable`](super::driver::DriverError::Unreachable).
pub async fn request(
    endpoint: &Endpoint,
    method: hyper::Method,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Result<Answer, String> {
    let stream = tokio::net::TcpStream::connect((endpoint.host.as_str(), endpoint.port))
        .await
        .map_err(|e| format!("cannot connect to {}: {e}", endpoint.authority))?;
    let _ = stream.set_nodelay(true);
    match &endpoint.tls {
        None => exchange(stream, endpoint, method, path, body).await,
        Some(tls) => {
            let name = crate::tls::client::server_name(&endpoint.host)?;
            let stream = tokio_rustls::TlsConnector::from(tls.clone())
                .connect(name, stream)
                .await
                .map_err(|e| format!("TLS with {}: {e}", endpoint.authority))?;
            exchange(stream, endpoint, method, path, body).await
        }
    }
}

/// The request and its answer on a connected stream, plain or TLS.
async fn exchange<S>(
    stream: S,
    endpoint: &Endpoint,
    method: hyper::Method,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Result<Answer, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake: {e}"))?;
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header(HOST, endpoint.authority.as_str())
        .header(ACCEPT, "application/json")
        .header(
            USER_AGENT,
            concat!("serialgate/", env!("CARGO_PKG_VERSION")),
        );
    if let Some((user, password)) = &endpoint.login {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        request = request.header(AUTHORIZATION, format!("Basic {token}"));
    }
    let payload = match body {
        Some(json) => {
            request = request.header(CONTENT_TYPE, "application/json");
            Bytes::from(json.to_string())
        }
        None => Bytes::new(),
    };
    let request = request
        .body(Full::new(payload))
        .map_err(|e| format!("building the request: {e}"))?;
    let send = sender.send_request(request);
    tokio::pin!(conn);
    tokio::pin!(send);
    // The connection is driven until the answer's head arrives, then while
    // its body is read; one that ends first still hands over what it read.
    let response = tokio::select! {
        biased;
        response = &mut send => response,
        ended = &mut conn => match ended {
            Ok(()) => send.await,
            Err(e) => return Err(format!("connection: {e}")),
        },
    }
    .map_err(|e| format!("sending: {e}"))?;
    let status = response.status();
    let collect = Limited::new(response.into_body(), MAX_BODY).collect();
    tokio::pin!(collect);
    let collected = tokio::select! {
        biased;
        body = &mut collect => body,
        ended = &mut conn => match ended {
            Ok(()) => collect.await,
            Err(e) => return Err(format!("connection: {e}")),
        },
    }
    .map_err(|e| format!("reading its answer (at most {MAX_BODY} bytes): {e}"))?;
    Ok(Answer {
        status,
        body: collected.to_bytes(),
    })
}
