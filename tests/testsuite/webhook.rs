//! `[server] alert_webhook` end to end: a receiver on loopback gets each
//! alert as a signed POST; a receiver that hangs or is down never holds up
//! the port or a tool call, and what could not be delivered is counted in
//! `/metrics`.

use serde_json::{Value, json};
use serialgate_sim::pty::Pty;
use serialgate_testkit::daemon::{Daemon, NotifySocket, WITHIN};
use serialgate_testkit::updates::UpdatesClient;
use serialgate_testkit::wait;
use serialgate_testkit::webhook::receiver;
use tempfile::TempDir;
use tokio::net::TcpListener;

const CRASH: &[u8] = b"\r\nUnexpected exception to CPU: vector 1500, PC = 0x0\r\n";
const KEY: &str = "webhook-key-0123456789abcdef";

/// A daemon with one cisco-ios port on `pty`, the webhook at `url` (with
/// `keys`, e.g. `, retries = 0`) and a loopback metrics listener; its
/// client over stdio and the metrics URL.
async fn start(dir: &TempDir, pty: &Pty, url: &str, keys: &str) -> (Daemon, UpdatesClient, String) {
    use std::os::unix::fs::PermissionsExt;
    let key = dir.path().join("hook.key");
    std::fs::write(&key, KEY).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nmetrics_listen = \"127.0.0.1:0\"\n\
             alert_webhook = {{ url = \"{url}\", secret_file = \"hook.key\"{keys} }}\n\
             [ports.sw1]\ndevice = \"{}\"\npreset = \"cisco-ios\"\n",
            pty.slave_path().display()
        ),
    )
    .unwrap();
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &[]);
    let line = daemon.stderr.wait_for("metrics at http://").await;
    let metrics = line.split("metrics at ").nth(1).unwrap().trim().to_owned();
    let stdout = daemon.child.stdout.take().unwrap();
    let stdin = daemon.child.stdin.take().unwrap();
    let client = UpdatesClient::stdio(stdout, stdin).await.unwrap();
    notify.expect("READY=1").await;
    (daemon, client, metrics)
}

/// `serialgate_webhook_deliveries_total{outcome}` in a scrape.
async fn deliveries(metrics: &str, outcome: &str) -> f64 {
    let body = reqwest::get(metrics).await.unwrap().text().await.unwrap();
    let scrape = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).unwrap();
    scrape
        .samples
        .iter()
        .find(|s| {
            s.metric == "serialgate_webhook_deliveries_total"
                && s.labels.get("outcome") == Some(outcome)
        })
        .map_or(0.0, |s| match s.value {
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
}

/// Polls the metrics until `outcome` reaches `want` (within [`WITHIN`]).
async fn wait_deliveries(metrics: &str, outcome: &str, want: f64) {
    let what = format!("{want} {outcome} deliveries");
    wait::eventually(&what, WITHIN, async || {
        wait::when(deliveries(metrics, outcome).await, |got| *got >= want)
    })
    .await;
}

fn hmac_sha256_hex(key: &[u8], message: &[u8]) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
    mac.update(message);
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test]
async fn a_receiver_gets_each_alert_as_a_signed_post() {
    let dir = TempDir::new().unwrap();
    let pty = Pty::open().unwrap();
    let (url, mut received) = receiver().await;
    let (_daemon, _client, metrics) = start(&dir, &pty, &url, "").await;
    pty.write_all(CRASH).await.unwrap();
    let got = tokio::time::timeout(WITHIN, received.recv())
        .await
        .expect("a POST in time")
        .unwrap();
    assert!(
        got.head.starts_with("POST /hook HTTP/1.1\r\n"),
        "{}",
        got.head
    );
    assert_eq!(got.header("content-type"), Some("application/json"));
    // The signature covers the time and the delivery, so a captured POST
    // replayed later (its timestamp too old) or twice (a delivery already
    // seen) is refused by a receiver that checks them.
    let signature = got.header("x-serialgate-signature").expect("signed");
    let timestamp = got.header("x-serialgate-timestamp").expect("a timestamp");
    let delivery = got.header("x-serialgate-delivery").expect("a delivery id");
    let signed = [
        timestamp.as_bytes(),
        b".",
        delivery.as_bytes(),
        b".",
        &got.body,
    ]
    .concat();
    assert_eq!(
        signature,
        format!("sha256={}", hmac_sha256_hex(KEY.as_bytes(), &signed))
    );
    let sent: u64 = timestamp.parse().expect("seconds");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(sent.abs_diff(now) < 300, "signed at {sent}, now {now}");
    assert!(
        delivery.len() == 32 && delivery.bytes().all(|b| b.is_ascii_hexdigit()),
        "{delivery}"
    );
    let later = [
        (sent + 600).to_string().as_bytes(),
        b".",
        delivery.as_bytes(),
        b".",
        &got.body,
    ]
    .concat();
    assert_ne!(
        signature,
        format!("sha256={}", hmac_sha256_hex(KEY.as_bytes(), &later)),
        "the body alone under another time is not signed"
    );
    let alert: Value = serde_json::from_slice(&got.body).unwrap();
    assert_eq!(alert["port"], "sw1");
    assert_eq!(alert["watch"], "crash");
    assert_eq!(alert["severity"], "critical");
    assert_eq!(alert["text"], "Unexpected exception to CPU");
    wait_deliveries(&metrics, "delivered", 1.0).await;
    // The next alert is another delivery.
    pty.write_all(CRASH).await.unwrap();
    let next = tokio::time::timeout(WITHIN, received.recv())
        .await
        .expect("a second POST in time")
        .unwrap();
    let next_delivery = next.header("x-serialgate-delivery").expect("a delivery id");
    assert_ne!(next_delivery, got.header("x-serialgate-delivery").unwrap());
}

#[tokio::test]
async fn a_hanging_receiver_holds_up_nothing_and_the_drops_are_counted() {
    let dir = TempDir::new().unwrap();
    let pty = Pty::open().unwrap();
    // Accepts and never answers; keeps every connection open.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let (_daemon, client, metrics) = start(
        &dir,
        &pty,
        &url,
        ", timeout = \"60s\", retries = 0, queue = 1",
    )
    .await;
    let lines = 40;
    let mut total = 0;
    let before = num_head(&client).await;
    for _ in 0..lines {
        pty.write_all(CRASH).await.unwrap();
        total += CRASH.len() as u64;
    }
    // The port takes every byte and a tool call answers while the
    // receiver hangs on the first alert.
    wait::eventually("the port to take every byte", WITHIN, async || {
        wait::when(num_head(&client).await, |head| *head >= before + total)
    })
    .await;
    client.call("connect", json!({"port": "sw1"})).await.ok();
    let status = client.call("status", json!({})).await.ok();
    assert_eq!(status["alerts"]["total"], lines, "{status}");
    // One in delivery, one queued: the rest dropped and counted.
    wait_deliveries(&metrics, "dropped", f64::from(lines - 2)).await;
}

#[tokio::test]
async fn a_receiver_that_is_down_is_retried_then_counted_as_failed() {
    let dir = TempDir::new().unwrap();
    let pty = Pty::open().unwrap();
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", closed.local_addr().unwrap());
    drop(closed);
    let (daemon, client, metrics) =
        start(&dir, &pty, &url, ", timeout = \"500ms\", retries = 1").await;
    let mut daemon = daemon;
    pty.write_all(CRASH).await.unwrap();
    wait_deliveries(&metrics, "failed", 1.0).await;
    daemon.stderr.wait_for("not delivered to http://").await;
    // Tool calls went on meanwhile.
    assert!(
        !client.call("list_ports", json!({})).await.ok()["ports"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

async fn num_head(client: &UpdatesClient) -> u64 {
    let ports = client.call("list_ports", json!({})).await.ok();
    ports["ports"][0]["head"].as_u64().unwrap()
}
