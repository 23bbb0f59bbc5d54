//! SIGTERM under load, then a restart: the real daemon serving
//! streamable HTTP, devices streaming into transcripts and sessions running
//! commands, is sent SIGTERM. It must exit 0 in time with every transcript
//! holding everything it had logged; started again with the same config,
//! it must reopen every port and capture again.

use serialgate_testkit::daemon;
use serialgate_testkit::load;
use serialgate_testkit::wait;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use daemon::{Daemon, NotifySocket, WITHIN};
use load::{parse_line, stream_line};
use serde_json::json;
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::client::{GateClient, Outcome};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Streaming devices (`p00`…) and command sessions, each with its switch
/// (`sw00`…).
const PORTS: usize = 4;
const SESSIONS: usize = 2;

/// Starts `serve --http 127.0.0.1:0` on `config` and returns it with its
/// MCP URL.
async fn start(config: &Path, notify: &NotifySocket) -> (Daemon, String) {
    let mut daemon = Daemon::spawn(Some(config), notify, &["--http", "127.0.0.1:0"]);
    let url = daemon.http_url().await;
    (daemon, url)
}

async fn ok(client: &GateClient, tool: &str, args: serde_json::Value) -> serde_json::Value {
    match client.call(tool, args.clone()).await {
        Ok(Outcome::Ok(v)) => v,
        other => panic!("{tool} {args}: {other:?}"),
    }
}

/// Prints numbered lines on `sim` every few milliseconds until `stop`.
async fn stream(sim: Arc<SimHandle>, port: usize, stop: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    let mut seq = 0;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let line = stream_line(port, seq);
        tokio::select! {
            () = stop.cancelled() => return,
            () = sim.inject(line.as_bytes()) => {}
        }
        seq += 1;
    }
}

/// Runs `show clock` on the session's switch until the daemon goes away;
/// reports each success on `done`.
async fn commands(url: String, index: usize, done: mpsc::UnboundedSender<usize>) {
    let client = GateClient::connect_http(&url, None)
        .await
        .expect("a session");
    let sw = format!("sw{index:02}");
    ok(&client, "connect", json!({"port": sw})).await;
    ok(&client, "send_text", json!({"text": ""})).await;
    let woke = ok(&client, "read_until_prompt", json!({"timeout": 10})).await;
    assert_eq!(woke["prompt_text"], "SW1>", "{woke}");
    loop {
        match client
            .call("send_command", json!({"command": "show clock"}))
            .await
        {
            Ok(Outcome::Ok(v)) => {
                assert_eq!(v["matched"], true, "{v}");
                let _ = done.send(index);
            }
            // The daemon is stopping: an error result or a closed
            // connection ends the session.
            Ok(Outcome::Err(_)) | Err(_) => return,
        }
    }
}

/// The highest sequence number among whole lines of `p{port}` in `text`,
/// after checking they run 0, 1, 2… with nothing missing or repeated.
fn consecutive(port: usize, text: &str, what: &str) -> Option<u64> {
    let mut last = None;
    for line in text.lines() {
        // A transcript line starts with its timestamp.
        let line = line.split_once(' ').map_or(line, |(_, rest)| rest);
        let Some((p, seq)) = parse_line(line.trim_end_matches('\r')) else {
            continue;
        };
        assert_eq!(p, port, "{what}: a line of another port: {line}");
        let want = last.map_or(0, |l| l + 1);
        assert_eq!(seq, want, "{what}: line {seq} where {want} was due");
        last = Some(seq);
    }
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_under_load_flushes_transcripts_and_a_restart_reopens_every_port() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let mut config = format!("[server]\nauth = \"none\"\nlog_dir = {logs:?}\n\n");
    let mut streams = Vec::new();
    for p in 0..PORTS {
        let link = dir.path().join(format!("p{p:02}"));
        streams.push(Arc::new(
            sim::spawn(Profile::Silent, Some(link.clone()))
                .await
                .unwrap(),
        ));
        config.push_str(&format!("[ports.p{p:02}]\ndevice = {link:?}\n"));
    }
    let mut switches = Vec::new();
    for s in 0..SESSIONS {
        let link = dir.path().join(format!("sw{s:02}"));
        switches.push(
            sim::spawn(Profile::CiscoIos, Some(link.clone()))
                .await
                .unwrap(),
        );
        config.push_str(&format!(
            "[ports.sw{s:02}]\ndevice = {link:?}\npreset = \"cisco-ios\"\n"
        ));
    }
    let config_path = dir.path().join("serialgate.toml");
    std::fs::write(&config_path, &config).unwrap();
    let notify = NotifySocket::bind(dir.path());

    let (mut daemon, url) = start(&config_path, &notify).await;
    let watcher = GateClient::connect_http(&url, None).await.unwrap();
    load::wait_all_open(&watcher, WITHIN).await.unwrap();
    let stop = CancellationToken::new();
    let injectors: Vec<_> = streams
        .iter()
        .enumerate()
        .map(|(p, sim)| tokio::spawn(stream(sim.clone(), p, stop.clone())))
        .collect();
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let sessions: Vec<_> = (0..SESSIONS)
        .map(|s| tokio::spawn(commands(url.clone(), s, done_tx.clone())))
        .collect();
    drop(done_tx);
    // A call waiting on a port when the signal comes.
    ok(&watcher, "connect", json!({"port": "p00"})).await;
    let waiting = tokio::spawn(async move {
        let outcome = watcher
            .call(
                "read_until_prompt",
                json!({"prompt": "never#", "timeout": 60}),
            )
            .await;
        (outcome, Instant::now())
    });
    // Under load: every session has run ten commands.
    let mut per_session = [0usize; SESSIONS];
    tokio::time::timeout(WITHIN, async {
        while per_session.iter().any(|&n| n < 10) {
            let s = done.recv().await.expect("a session ended early");
            per_session[s] += 1;
        }
    })
    .await
    .expect("the sessions ran commands in time");

    // What the daemon has logged now must be in the transcripts after it.
    let probe = GateClient::connect_http(&url, None).await.unwrap();
    let mut logged = Vec::new();
    let line_len = stream_line(0, 0).len() as u64;
    for p in 0..PORTS {
        let port = format!("p{p:02}");
        ok(&probe, "connect", json!({"port": port})).await;
        let head = ok(&probe, "read_output", json!({"max_bytes": 4})).await["head"]
            .as_u64()
            .unwrap();
        let page = ok(
            &probe,
            "read_output",
            json!({"cursor": head.saturating_sub(3 * line_len), "max_bytes": 4 * line_len}),
        )
        .await;
        let tail = page["output"].as_str().unwrap();
        let last = tail
            .lines()
            .filter_map(|l| parse_line(l.trim_end_matches('\r')))
            .map(|(_, seq)| seq)
            .max()
            .unwrap_or_else(|| panic!("{port} streamed nothing: {page}"));
        logged.push(last);
    }

    // The daemon exits within `Daemon::exit`'s deadline (20 s, well under
    // systemd's 90 s stop timeout) and cleanly; how soon is printed.
    let signalled = Instant::now();
    daemon.signal(libc::SIGTERM);
    let status = daemon.exit().await;
    let took = signalled.elapsed();
    println!("SIGTERM under load: exit {status} after {took:?}");
    assert!(status.success(), "exit status {status}");
    let (waited, ended) = tokio::time::timeout(WITHIN, waiting)
        .await
        .expect("the waiting call ended")
        .unwrap();
    println!(
        "the waiting read_until_prompt ended {:?} after SIGTERM: {waited:?}",
        ended - signalled
    );
    if let Ok(outcome) = waited {
        let e = outcome.err();
        assert!(
            e.starts_with("port_unavailable: ") || e.starts_with("port_lost: "),
            "{e}"
        );
    }
    stop.cancel();
    for task in injectors.into_iter().chain(sessions) {
        tokio::time::timeout(WITHIN, task)
            .await
            .expect("a task ended")
            .unwrap();
    }
    let mut flushed = Vec::new();
    for (p, &last) in logged.iter().enumerate() {
        let file = logs.join(format!("transcripts/p{p:02}.log"));
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let in_file = consecutive(p, &text, &file.display().to_string());
        assert!(
            in_file >= Some(last),
            "{}: ends at line {in_file:?}, but line {last} was logged before SIGTERM",
            file.display()
        );
        flushed.push(in_file);
    }
    println!("logged before SIGTERM {logged:?}, in the transcripts {flushed:?}");

    // Restart with the same config: every port opens and captures again.
    let restarted = Instant::now();
    let (mut daemon, url) = start(&config_path, &notify).await;
    let client = GateClient::connect_http(&url, None).await.unwrap();
    load::wait_all_open(&client, WITHIN).await.unwrap();
    println!("restart: every port open after {:?}", restarted.elapsed());
    let ports = ok(&client, "list_ports", json!({})).await;
    assert_eq!(
        ports["ports"].as_array().unwrap().len(),
        PORTS + SESSIONS,
        "{ports}"
    );
    for (p, sim) in streams.iter().enumerate() {
        let port = format!("p{p:02}");
        ok(&client, "connect", json!({"port": port})).await;
        sim.inject(b"AFTER RESTART\r\n").await;
        let got = ok(
            &client,
            "read_until_prompt",
            json!({"prompt": "AFTER RESTART\r\n", "timeout": 10}),
        )
        .await;
        assert_eq!(got["matched"], true, "{port}: {got}");
    }
    ok(&client, "connect", json!({"port": "sw00"})).await;
    ok(&client, "send_text", json!({"text": ""})).await;
    let woke = ok(&client, "read_until_prompt", json!({"timeout": 10})).await;
    assert_eq!(woke["prompt_text"], "SW1>", "{woke}");
    let clock = ok(&client, "send_command", json!({"command": "show clock"})).await;
    assert_eq!(clock["matched"], true, "{clock}");
    daemon.signal(libc::SIGTERM);
    assert!(daemon.exit().await.success());
    drop(switches);
}

/// A silent device linked at `dir/sw1` and a config (`server` TOML
/// first) with port `sw1` on it.
async fn silent_port(dir: &Path, server: &str) -> (SimHandle, PathBuf) {
    let link = dir.join("sw1");
    let device = sim::spawn(Profile::Silent, Some(link.clone()))
        .await
        .unwrap();
    let config = dir.join("serialgate.toml");
    std::fs::write(&config, format!("{server}[ports.sw1]\ndevice = {link:?}\n")).unwrap();
    (device, config)
}

#[tokio::test]
async fn a_client_that_goes_away_mid_wait_lets_the_daemon_exit_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_device, config) = silent_port(dir.path(), "").await;
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &[]);
    let client = daemon.client().await;
    client.ok("connect", json!({"port": "sw1"})).await;
    // Calls that would wait a minute for output that never comes.
    let mut calls = Vec::new();
    for (tool, args) in [
        (
            "read_until_prompt",
            json!({"prompt": "never#", "timeout": 60}),
        ),
        ("read_output", json!({"wait_ms": 60_000})),
        ("read_available", json!({"timeout": 60})),
    ] {
        let peer = client.service.peer().clone();
        let mut params = rmcp::model::CallToolRequestParams::new(tool);
        if let serde_json::Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        calls.push(tokio::spawn(async move { peer.call_tool(params).await }));
    }
    // All three are waiting (`status` counts them; no event says so).
    wait::eventually("the three waits to start", WITHIN, async || {
        wait::when(client.ok("status", json!({})).await, |s| {
            s["active_waits"] == 3
        })
    })
    .await;
    // The client goes away: its end of stdio closes. The waits would last
    // 60 s; the daemon exits within `Daemon::exit`'s 20 s, so they did
    // not hold it (how soon is printed).
    let gone = Instant::now();
    client.service.cancel().await.unwrap();
    let status = daemon.exit().await;
    let took = gone.elapsed();
    println!("the daemon exited {took:?} after its client went away");
    assert!(status.success(), "{status}");
    for call in calls {
        let _ = call.await;
    }
}

#[tokio::test]
async fn an_http_client_that_drops_its_connection_mid_wait_ends_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let (_device, config) = silent_port(dir.path(), "[server]\nauth = \"none\"\n").await;
    let notify = NotifySocket::bind(dir.path());
    let (mut daemon, url) = start(&config, &notify).await;
    let http = reqwest::Client::new();
    let post = |session: Option<String>, body: String| {
        let mut request = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        if let Some(id) = session {
            request = request.header("mcp-session-id", id);
        }
        request.send()
    };
    let init = post(None, r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#.into()).await.unwrap();
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = init.bytes().await;
    let _ = post(
        Some(session.clone()),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
    )
    .await
    .unwrap()
    .bytes()
    .await;
    let connected = post(Some(session.clone()), r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"connect","arguments":{"port":"sw1"}}}"#.into()).await.unwrap().text().await.unwrap();
    assert!(connected.contains("\"connection\""), "{connected}");
    let waiting = post(Some(session.clone()), r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_until_prompt","arguments":{"prompt":"never#","timeout":60}}}"#.into()).await.unwrap();
    let watcher = GateClient::connect_http(&url, None).await.unwrap();
    ok(&watcher, "connect", json!({"port": "sw1"})).await;
    wait::eventually("the wait to start", WITHIN, async || {
        wait::when(ok(&watcher, "status", json!({})).await, |s| {
            s["active_waits"] == 1
        })
    })
    .await;
    // The client drops the connection of the waiting call.
    let dropped = Instant::now();
    drop(waiting);
    drop(http);
    let what = "the wait to end with its connection";
    wait::eventually(what, Duration::from_secs(20), async || {
        wait::when(ok(&watcher, "status", json!({})).await, |s| {
            s["active_waits"] == 0
        })
    })
    .await;
    println!(
        "the wait ended {:?} after its connection dropped",
        dropped.elapsed()
    );
    daemon.signal(libc::SIGTERM);
    assert!(daemon.exit().await.success());
}
