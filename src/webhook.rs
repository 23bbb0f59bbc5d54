//! Alerts POSTed to `[server] alert_webhook`: each alert as JSON. With a
//! secret file each attempt is signed, and the signature covers when it
//! was sent and which delivery it is, so a captured POST cannot be
//! replayed later or twice: `X-Serialgate-Timestamp: <unix seconds>`,
//! `X-Serialgate-Delivery: <32 hex digits, the same for every retry of one
//! alert>` and `X-Serialgate-Signature: sha256=<hex HMAC-SHA256 of
//! "<timestamp>.<delivery>.<body>">`. A receiver refuses a timestamp more
//! than five minutes away from its clock and a delivery it has seen.
//!
//! The reader never waits for it: the alert hook only `try_send`s into a
//! bounded queue, and a full queue drops the alert and counts it
//! (`serialgate_webhook_deliveries_total{outcome="dropped"}`). One task
//! delivers, one alert at a time: each attempt within the timeout, then
//! retries with backoff (0.5 s, doubling, at most 10 s); an alert that
//! every attempt failed is counted as `failed` and logged.
//!
//! The client is hyper's HTTP/1 connection over a tokio TCP stream, one
//! connection per delivery: no pool, nothing more than a POST needs. To an
//! `https://` receiver the stream is TLS (1.2 or 1.3), and the receiver's
//! certificate must be signed by the webhook's `ca_file`, or by one of the
//! system's roots without one, for the URL's host.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{CONTENT_TYPE, HOST, USER_AGENT};
use hyper_util::rt::TokioIo;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::webhook::WebhookConfig;
use crate::port::alerts::{Alert, AlertHook};

/// The signature header.
pub const SIGNATURE_HEADER: &str = "x-serialgate-signature";
/// When the attempt was signed, in seconds since the Unix epoch.
pub const TIMESTAMP_HEADER: &str = "x-serialgate-timestamp";
/// Which delivery this is: one random id per alert, kept by its retries.
pub const DELIVERY_HEADER: &str = "x-serialgate-delivery";
/// First wait before a retry.
const BACKOFF_START: Duration = Duration::from_millis(500);
/// Longest wait between retries.
const BACKOFF_MAX: Duration = Duration::from_secs(10);

/// Starts the delivery task; the hook queues an alert for it without
/// waiting, or drops and counts it when the queue is full.
pub(crate) fn start(config: WebhookConfig, shutdown: CancellationToken) -> AlertHook {
    let (tx, rx) = mpsc::channel::<Alert>(config.queue);
    let tls = config
        .https
        .then(|| crate::tls::client::client_config(config.ca_file.as_deref()));
    if let Some(Err(e)) = &tls {
        tracing::error!("webhook {}: {e}; no alert can be delivered", config.url);
    }
    tracing::info!(
        "alerts go to the webhook {} (queue {}, timeout {:?}, {} retries{})",
        config.url,
        config.queue,
        config.timeout,
        config.retries,
        if config.secret.is_some() {
            ", signed"
        } else {
            ""
        }
    );
    let client = Client {
        config,
        tls: tls.map(|t| t.map_err(|e| format!("TLS: {e}"))),
    };
    crate::task::spawn(deliver_all(client, rx, shutdown));
    Arc::new(move |alert: &Alert| {
        if tx.try_send(alert.clone()).is_err() {
            crate::metrics::webhook("dropped");
            tracing::debug!(
                port = %alert.port,
                "webhook queue full: alert {} ({}) dropped",
                alert.id,
                alert.watch
            );
        }
    })
}

/// The webhook and, for an `https://` one, what its TLS trusts (or why
/// it has nothing to trust).
struct Client {
    config: WebhookConfig,
    tls: Option<Result<Arc<rustls::ClientConfig>, String>>,
}

/// Delivers queued alerts until shutdown or the queue's end.
async fn deliver_all(client: Client, mut rx: mpsc::Receiver<Alert>, shutdown: CancellationToken) {
    let config = &client.config;
    loop {
        let alert = tokio::select! {
            () = shutdown.cancelled() => return,
            next = rx.recv() => match next {
                Some(alert) => alert,
                None => return,
            },
        };
        let Ok(body) = serde_json::to_vec(&alert) else {
            continue;
        };
        let delivery = delivery_id();
        let mut backoff = BACKOFF_START;
        let mut attempt = 0;
        loop {
            let outcome =
                match tokio::time::timeout(config.timeout, post(&client, &body, &delivery)).await {
                    Ok(Ok(status)) if status.is_success() => Ok(()),
                    Ok(Ok(status)) => Err(format!("the receiver answered {status}")),
                    Ok(Err(e)) => Err(e),
                    Err(_) => Err(format!("no answer within {:?}", config.timeout)),
                };
            match outcome {
                Ok(()) => {
                    crate::metrics::webhook("delivered");
                    break;
                }
                Err(e) if attempt >= config.retries => {
                    crate::metrics::webhook("failed");
                    tracing::warn!(
                        port = %alert.port,
                        "alert {} ({}) not delivered to {} after {} attempt(s): {e}",
                        alert.id,
                        alert.watch,
                        config.url,
                        attempt + 1
                    );
                    break;
                }
                Err(e) => {
                    tracing::debug!(
                        "webhook attempt {} failed: {e}; retrying in {backoff:?}",
                        attempt + 1
                    );
                    tokio::select! {
                        () = shutdown.cancelled() => return,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    attempt += 1;
                }
            }
        }
    }
}

/// One POST of `body`; the answer's status. The connection lives only in
/// this future: a timeout drops it.
async fn post(client: &Client, body: &[u8], delivery: &str) -> Result<hyper::StatusCode, String> {
    let config = &client.config;
    let stream = tokio::net::TcpStream::connect((config.host.as_str(), config.port))
        .await
        .map_err(|e| format!("cannot connect to {}: {e}", config.authority))?;
    match &client.tls {
        None => exchange(stream, config, body, delivery).await,
        Some(Err(e)) => Err(e.clone()),
        Some(Ok(tls)) => {
            let name = crate::tls::client::server_name(&config.host)?;
            let stream = tokio_rustls::TlsConnector::from(tls.clone())
                .connect(name, stream)
                .await
                .map_err(|e| format!("TLS with {}: {e}", config.authority))?;
            exchange(stream, config, body, delivery).await
        }
    }
}

/// The POST's request and answer on a connected stream, plain or TLS.
async fn exchange<S>(
    stream: S,
    config: &WebhookConfig,
    body: &[u8],
    delivery: &str,
) -> Result<hyper::StatusCode, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake: {e}"))?;
    let mut request = hyper::Request::post(config.path.as_str())
        .header(HOST, config.authority.as_str())
        .header(CONTENT_TYPE, "application/json")
        .header(
            USER_AGENT,
            concat!("serialgate/", env!("CARGO_PKG_VERSION")),
        );
    if let Some(secret) = &config.secret {
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            .to_string();
        request = request
            .header(TIMESTAMP_HEADER, timestamp.as_str())
            .header(DELIVERY_HEADER, delivery)
            .header(
                SIGNATURE_HEADER,
                format!(
                    "sha256={}",
                    hex(&hmac_sha256(
                        &secret.0,
                        &signed_message(&timestamp, delivery, body)
                    ))
                ),
            );
    }
    let request = request
        .body(Full::new(Bytes::copy_from_slice(body)))
        .map_err(|e| format!("building the request: {e}"))?;
    let send = sender.send_request(request);
    tokio::pin!(conn);
    tokio::pin!(send);
    // The connection is driven here until the answer's head arrives; one
    // that ends first (the receiver closes after answering) still hands
    // over what it read.
    let response = tokio::select! {
        biased;
        response = &mut send => response,
        ended = &mut conn => match ended {
            Ok(()) => send.await,
            Err(e) => return Err(format!("connection: {e}")),
        },
    };
    response
        .map(|r| r.status())
        .map_err(|e| format!("sending: {e}"))
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key`.
/// What the signature covers: `<timestamp>.<delivery>.<body>`.
fn signed_message(timestamp: &str, delivery: &str, body: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(timestamp.len() + delivery.len() + 2 + body.len());
    message.extend_from_slice(timestamp.as_bytes());
    message.push(b'.');
    message.extend_from_slice(delivery.as_bytes());
    message.push(b'.');
    message.extend_from_slice(body);
    message
}

/// A delivery id: 128 random bits as hex (the time and a counter if the
/// system cannot give random bytes, still unique within this daemon).
fn delivery_id() -> String {
    static FALLBACK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut raw = [0u8; 16];
    if getrandom::fill(&mut raw).is_err() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        raw[..8].copy_from_slice(&now.to_be_bytes());
        let n = FALLBACK.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        raw[8..].copy_from_slice(&n.to_be_bytes());
    }
    hex(&raw)
}

fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut padded = [0u8; BLOCK];
    if key.len() > BLOCK {
        padded[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        padded[..key.len()].copy_from_slice(key);
    }
    let inner_key: Vec<u8> = padded.iter().map(|b| b ^ 0x36).collect();
    let outer_key: Vec<u8> = padded.iter().map(|b| b ^ 0x5c).collect();
    let inner = Sha256::new()
        .chain_update(&inner_key)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(&outer_key)
        .chain_update(inner)
        .finalize()
        .into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        // Test case 2.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block.
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }
}
