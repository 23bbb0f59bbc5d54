//! systemd's view of the daemon (`Type=notify`): `READY=1` only once the
//! ports had their first open attempt and, over HTTP, the listener accepts
//! connections; `STOPPING=1` and exit 0 on SIGTERM, with calls that were
//! waiting on a port ended by an error result, not a hang.

use serialgate_testkit::daemon;

use std::sync::Arc;

use daemon::{Daemon, NotifySocket, WITHIN};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::client::GateClient;
use tempfile::TempDir;

/// A silent device at `<dir>/sw1`, and a config with port `sw1` on it and
/// port `gone` on a device that does not exist, plus `extra`.
async fn setup(extra: &str) -> (TempDir, SimHandle, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("sw1");
    let sim = sim::spawn(Profile::Silent, Some(link.clone()))
        .await
        .expect("simulated device");
    let config = format!(
        "{extra}\n[ports.sw1]\ndevice = {:?}\n\n[ports.gone]\ndevice = {:?}\n",
        link.display(),
        dir.path().join("missing").display()
    );
    let path = dir.path().join("serialgate.toml");
    std::fs::write(&path, config).expect("write config");
    (dir, sim, path)
}

/// Checks that each port had its first open attempt: `sw1` is open, and
/// `gone` (no device) failed it (`lost`, or already `reopening`).
fn assert_first_attempts_done(listed: &Value) {
    let state = |name: &str| {
        listed["ports"]
            .as_array()
            .unwrap_or_else(|| panic!("no ports in {listed}"))
            .iter()
            .find(|p| p["name"] == name)
            .map(|p| p["state"].as_str().unwrap_or("?").to_owned())
            .unwrap_or_else(|| panic!("no port {name} in {listed}"))
    };
    assert_eq!(state("sw1"), "open", "{listed}");
    assert!(
        ["lost", "reopening"].contains(&state("gone").as_str()),
        "{listed}"
    );
}

#[tokio::test]
async fn http_ready_comes_after_the_listener_is_bound() {
    let (dir, _sim, config) = setup("[server]\nauth = \"none\"\n").await;
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    notify.expect("READY=1").await;
    // The address was printed before READY=1: it is already in the pipe.
    let url = daemon.http_url().await;
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    // At READY=1 the listener takes connections…
    tokio::net::TcpStream::connect(&addr)
        .await
        .expect("the listener accepts a connection at READY=1");
    // …and every port had its first open attempt.
    let client = GateClient::connect_http(&url, None)
        .await
        .expect("MCP over HTTP");
    let listed = client
        .call("list_ports", json!({}))
        .await
        .expect("MCP transport")
        .ok();
    assert_first_attempts_done(&listed);

    daemon.signal(libc::SIGTERM);
    notify.expect("STOPPING=1").await;
    let status = daemon.exit().await;
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn stdio_ready_comes_after_the_first_open_attempts() {
    let (dir, _sim, config) = setup("").await;
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &[]);
    // Ready before any client: readiness does not wait for an agent.
    notify.expect("READY=1").await;
    let client = daemon.client().await;
    let listed = client.ok("list_ports", json!({})).await;
    assert_first_attempts_done(&listed);
    // The client leaves: the daemon stops and exits 0.
    client.service.cancel().await.expect("close the session");
    notify.expect("STOPPING=1").await;
    let status = daemon.exit().await;
    assert!(status.success(), "{status}");
}

/// Starts `read_until_prompt` for a prompt that never comes and proves the
/// wait is in place: it answers the auto-reply trigger `ping` the device
/// then prints.
async fn waiting_call(
    sim: &SimHandle,
    call: impl std::future::Future<Output = serialgate_testkit::client::Outcome> + Send + 'static,
) -> tokio::task::JoinHandle<serialgate_testkit::client::Outcome> {
    let waiting = tokio::spawn(call);
    sim.inject(b"ping\r\n").await;
    assert!(
        sim.wait_received(b"pong", WITHIN).await,
        "the waiting call answers the trigger"
    );
    waiting
}

/// The arguments of that never-ending wait.
fn never() -> Value {
    json!({"prompt": "NEVER-PRINTED", "timeout": 600, "auto_reply": {"ping": "pong"}})
}

/// What a call waiting on a port gets when the daemon shuts down.
fn assert_shutdown_error(text: &str) {
    assert!(text.starts_with("port_unavailable:"), "{text}");
    assert!(
        text.contains("shutting down") || text.contains("closed"),
        "says why: {text}"
    );
}

#[tokio::test]
async fn sigterm_ends_a_waiting_stdio_call_with_an_error_and_exits_0() {
    let logs = tempfile::tempdir().expect("temp dir");
    let (dir, sim, config) = setup(&format!(
        "[server]\nlog_dir = {:?}\n",
        logs.path().display()
    ))
    .await;
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &[]);
    notify.expect("READY=1").await;
    let client = daemon.client().await;
    client.ok("connect", json!({"port": "sw1"})).await;
    let peer = client.service.peer().clone();
    let waiting = waiting_call(&sim, async move {
        daemon::call(&peer, "read_until_prompt", never()).await
    })
    .await;

    daemon.signal(libc::SIGTERM);
    notify.expect("STOPPING=1").await;
    let outcome = tokio::time::timeout(WITHIN, waiting)
        .await
        .expect("the waiting call ends, no hang")
        .expect("the call task");
    assert_shutdown_error(&outcome.err());
    let status = daemon.exit().await;
    assert!(status.success(), "{status}");
    // What the device said before the end is in its transcript.
    let transcript = std::fs::read_to_string(logs.path().join("transcripts/sw1.log"))
        .expect("the transcript of sw1");
    assert!(transcript.contains("ping"), "{transcript}");
}

#[tokio::test]
async fn sigterm_ends_a_waiting_http_call_with_an_error_and_exits_0() {
    let (dir, sim, config) = setup("[server]\nauth = \"none\"\n").await;
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    notify.expect("READY=1").await;
    let url = daemon.http_url().await;
    let client = Arc::new(
        GateClient::connect_http(&url, None)
            .await
            .expect("MCP over HTTP"),
    );
    client
        .call("connect", json!({"port": "sw1"}))
        .await
        .expect("MCP transport")
        .ok();
    let waiting = waiting_call(&sim, {
        let client = client.clone();
        async move {
            client
                .call("read_until_prompt", never())
                .await
                .expect("the result reaches the client before the session ends")
        }
    })
    .await;

    daemon.signal(libc::SIGTERM);
    notify.expect("STOPPING=1").await;
    let outcome = tokio::time::timeout(WITHIN, waiting)
        .await
        .expect("the waiting call ends, no hang")
        .expect("the call task");
    assert_shutdown_error(&outcome.err());
    let status = daemon.exit().await;
    assert!(status.success(), "{status}");
}
