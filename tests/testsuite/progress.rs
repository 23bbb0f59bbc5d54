//! MCP's own progress and cancellation on long waits, with rmcp's client
//! over stdio: a paged `send_command` reports progress when the client
//! gives a progress token, and a cancelled 60 s wait ends at once, leaving
//! the port and the session usable.

use serialgate_testkit::rig as common;
use serialgate_testkit::wait;

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientRequest, ProgressNotificationParam, Request};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile};
use serialgate_testkit::client::to_outcome;
use serialgate_testkit::daemon::Daemon;
use tokio::sync::mpsc;

/// A client that keeps every progress notification it gets.
#[derive(Clone)]
struct Collector {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Collector {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

fn call(tool: &str, args: Value) -> ClientRequest {
    let Value::Object(map) = args else {
        unreachable!("tool arguments are objects")
    };
    ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new(tool.to_owned()).with_arguments(map),
    ))
}

type Client = rmcp::service::RunningService<RoleClient, Collector>;
type Progress = mpsc::UnboundedReceiver<ProgressNotificationParam>;

/// Calls a tool that must succeed.
async fn ok(client: &Client, tool: &str, args: Value) -> Value {
    let ClientRequest::CallToolRequest(r) = call(tool, args) else {
        unreachable!()
    };
    to_outcome(client.peer().call_tool(r.params).await.unwrap()).ok()
}

/// A simulated Cisco switch and a config with port `sw1` on it.
async fn device() -> (tempfile::TempDir, sim::SimHandle, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("sw1");
    let device = sim::spawn(Profile::CiscoIos, Some(link.clone()))
        .await
        .unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nauth = \"none\"\n[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n",
            link.display()
        ),
    )
    .unwrap();
    (dir, device, config)
}

/// Connects to `sw1` and enters privileged mode.
async fn login(client: &Client) {
    ok(client, "connect", json!({"port": "sw1"})).await;
    let steps = json!([{"send": "", "expect": "SW1>"}, {"send": "enable", "expect": "Password: "}, {"send": "cisco", "sensitive": true, "expect": "SW1#"}]);
    assert_eq!(
        ok(client, "expect", json!({"steps": steps})).await["completed"],
        true
    );
}

/// The real binary over stdio, logged in.
async fn start() -> (tempfile::TempDir, sim::SimHandle, Client, Progress) {
    let (dir, device, config) = device().await;
    let mut cmd = tokio::process::Command::new(common::binary());
    cmd.args(["serve", "--stdio", "--config"])
        .arg(&config)
        .env("SERIALGATE_LOG", "warn");
    let (tx, rx) = mpsc::unbounded_channel();
    let client = Collector { progress: tx }
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
    login(&client).await;
    (dir, device, client, rx)
}

/// The real binary over streamable HTTP on loopback, logged in.
async fn start_http() -> (tempfile::TempDir, sim::SimHandle, Client, Progress, Daemon) {
    let (dir, device, config) = device().await;
    let mut daemon = Daemon::run(Daemon::command_for(
        &common::binary(),
        Some(&config),
        &["--http", "127.0.0.1:0"],
    ));
    let url = daemon.http_url().await;
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url),
    );
    let (tx, rx) = mpsc::unbounded_channel();
    let client = Collector { progress: tx }.serve(transport).await.unwrap();
    login(&client).await;
    (dir, device, client, rx, daemon)
}

#[tokio::test]
async fn a_paged_command_reports_progress() {
    let (_dir, _device, client, progress) = start().await;
    paged_progress(&client, progress).await;
}

#[tokio::test]
async fn a_paged_command_reports_progress_over_http() {
    let (_dir, _device, client, progress, _daemon) = start_http().await;
    paged_progress(&client, progress).await;
}

async fn paged_progress(client: &Client, mut progress: Progress) {
    // show tech-support is long and paged: many pages to answer.
    let handle = client
        .send_cancellable_request(
            call(
                "send_command",
                json!({"command": "show tech-support", "timeout": 120, "max_output": 1024}),
            ),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let token = handle.progress_token.clone();
    let response = handle.await_response().await.unwrap();
    let rmcp::model::ServerResult::CallToolResult(result) = response else {
        panic!("{response:?}")
    };
    let result = to_outcome(result).ok();
    assert_eq!(result["matched"], true);
    let mut notes = Vec::new();
    while let Ok(note) = progress.try_recv() {
        notes.push(note);
    }
    // The notifications are sent before the result; they may be in flight.
    if notes.is_empty() {
        let note = tokio::time::timeout(Duration::from_secs(5), progress.recv())
            .await
            .unwrap()
            .unwrap();
        notes.push(note);
    }
    assert!(
        notes.iter().all(|n| n.progress_token == token),
        "progress for our token"
    );
    let message = notes.last().unwrap().message.clone().unwrap_or_default();
    assert!(
        message.contains("bytes received") && message.contains("pages answered"),
        "{message}"
    );
    let values: Vec<f64> = notes.iter().map(|n| n.progress).collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "progress grows: {values:?}"
    );
}

#[tokio::test]
async fn a_cancelled_wait_ends_at_once_and_the_port_stays_usable() {
    let (_dir, _device, client, _progress) = start().await;
    cancelled_wait(&client).await;
}

#[tokio::test]
async fn a_cancelled_wait_ends_at_once_over_http() {
    let (_dir, _device, client, _progress, _daemon) = start_http().await;
    cancelled_wait(&client).await;
}

async fn cancelled_wait(client: &Client) {
    let handle = client
        .send_cancellable_request(
            call(
                "read_until_prompt",
                json!({"prompt": "never-appears#", "timeout": 60}),
            ),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let status = async || {
        let params = match call("status", json!({})) {
            ClientRequest::CallToolRequest(r) => r.params,
            _ => unreachable!(),
        };
        to_outcome(client.peer().call_tool(params).await.unwrap()).ok()
    };
    // status reports waiting calls; poll it (no event reaches a client).
    // The wait's own timeout is 60 s and this poll gives up after 20 s, so
    // a wait that ends within the poll ended because of the cancel, not at
    // its timeout, however busy the machine. How soon it ends is a figure
    // of `benches/gateway.rs` (`cancel`), not a pass mark here.
    let until = async |want: u64| {
        wait::until(Duration::from_secs(20), async || {
            wait::when(status().await, |s| s["active_waits"] == want)
        })
        .await
        .unwrap_or_else(|last| last)
    };
    assert_eq!(until(1).await["active_waits"], 1, "the wait is running");
    let cancelled = Instant::now();
    handle
        .cancel(Some("the agent changed its mind".into()))
        .await
        .unwrap();
    assert_eq!(
        until(0).await["active_waits"],
        0,
        "the wait ended with its cancel, long before its 60 s timeout"
    );
    println!("the wait ended {:?} after the cancel", cancelled.elapsed());
    // The port and the session work straight away.
    let params = match call(
        "send_command",
        json!({"command": "show clock", "timeout": 5}),
    ) {
        ClientRequest::CallToolRequest(r) => r.params,
        _ => unreachable!(),
    };
    let clock = to_outcome(client.peer().call_tool(params).await.unwrap()).ok();
    assert_eq!(clock["matched"], true, "{clock}");
    assert!(
        clock["output"].as_str().unwrap().contains(" UTC "),
        "{clock}"
    );
    println!(
        "the port answered {:?} after the cancel",
        cancelled.elapsed()
    );
}
