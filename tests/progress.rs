//! MCP's own progress and cancellation on long waits, with rmcp's client
//! over stdio: a paged `send_command` reports progress when the client
//! gives a progress token, and a cancelled 60 s wait ends at once, leaving
//! the port and the session usable.

mod common;

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientRequest, ProgressNotificationParam, Request};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use serialgate::client::to_outcome;
use serialgate::sim::{self, Profile};
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

/// A Cisco switch in privileged mode behind the real binary, and a client.
async fn start() -> (
    tempfile::TempDir,
    sim::SimHandle,
    rmcp::service::RunningService<RoleClient, Collector>,
    mpsc::UnboundedReceiver<ProgressNotificationParam>,
) {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("sw1");
    let device = sim::spawn(Profile::CiscoIos, Some(link.clone()))
        .await
        .unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!(
            "[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n",
            link.display()
        ),
    )
    .unwrap();
    let mut cmd = tokio::process::Command::new(common::binary());
    cmd.args(["serve", "--stdio", "--config"])
        .arg(&config)
        .env("SERIALGATE_LOG", "warn");
    let (tx, rx) = mpsc::unbounded_channel();
    let client = Collector { progress: tx }
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
    let ok = |r| match to_outcome(r) {
        serialgate::client::Outcome::Ok(v) => v,
        serialgate::client::Outcome::Err(e) => panic!("{e}"),
    };
    let send = async |tool: &str, args: Value| {
        ok(client
            .peer()
            .call_tool(match call(tool, args) {
                ClientRequest::CallToolRequest(r) => r.params,
                _ => unreachable!(),
            })
            .await
            .unwrap())
    };
    send("connect", json!({"port": "sw1"})).await;
    let steps = json!([{"send": "", "expect": "SW1>"}, {"send": "enable", "expect": "Password: "}, {"send": "cisco", "sensitive": true, "expect": "SW1#"}]);
    assert_eq!(
        send("expect", json!({"steps": steps})).await["completed"],
        true
    );
    (dir, device, client, rx)
}

#[tokio::test]
async fn a_paged_command_reports_progress() {
    let (_dir, _device, client, mut progress) = start().await;
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
    let until = async |want: u64| {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let s = status().await;
            if s["active_waits"] == want || Instant::now() > deadline {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    assert_eq!(until(1).await["active_waits"], 1, "the wait is running");
    let cancelled = Instant::now();
    handle
        .cancel(Some("the agent changed its mind".into()))
        .await
        .unwrap();
    assert_eq!(until(0).await["active_waits"], 0, "the wait ended");
    let ended = cancelled.elapsed();
    assert!(
        ended < Duration::from_millis(100),
        "the wait ended {ended:?} after the cancel"
    );
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
    let took = cancelled.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "the port came back after {took:?}"
    );
}
