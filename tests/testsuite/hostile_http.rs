//! The HTTP service against a hostile network and hostile tokens: the
//! real binary serving `--http 127.0.0.1:0`, attacked the way someone with
//! network access (and, separately, with a read token) would.

use serialgate_testkit::daemon;

use std::time::{Duration, Instant};

use daemon::{Daemon, NotifySocket, tokens_toml};
use serde_json::json;
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::client::GateClient;
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const READER: (&str, &str, &str, &str) = ("ro", "read-only-secret-0123456789", r#"["*"]"#, "read");
const WRITER: (&str, &str, &str, &str) =
    ("rw", "read-write-secret-0123456789", r#"["*"]"#, "write");
/// Two more read tokens: other agents, or the same leak twice over.
const READER2: (&str, &str, &str, &str) =
    ("ro2", "read-only-secret-two-0123456789", r#"["*"]"#, "read");
const READER3: (&str, &str, &str, &str) = (
    "ro3",
    "read-only-secret-three-0123456789",
    r#"["*"]"#,
    "read",
);
const SCRAPER: (&str, &str, &str, &str) = (
    "scrape",
    "metrics-scrape-secret-0123456789",
    r#"["*"]"#,
    "metrics",
);

/// What the listener allows for a request's headers (the daemon's
/// `HEADER_TIMEOUT`).
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// A simulated switch at `<dir>/sw1` and a config serving it as `sw1`, with
/// the reader and writer tokens.
async fn switch() -> (TempDir, SimHandle, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("sw1");
    let sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
        .await
        .expect("simulated switch");
    let config = format!(
        "[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n\n{}",
        link.display(),
        tokens_toml(dir.path(), &[READER, WRITER, SCRAPER, READER2, READER3])
    );
    let path = dir.path().join("serialgate.toml");
    std::fs::write(&path, config).expect("write the config");
    (dir, sim, path)
}

/// Sets this process's open-files limit (soft and hard) in a child before
/// it runs the daemon.
fn with_fd_limit(cmd: &mut tokio::process::Command, soft: u64, hard: u64) {
    // SAFETY: setrlimit is async-signal-safe and touches no memory of the
    // parent; it runs in the forked child before exec.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}

/// Raises this test process's own soft open-files limit to at least
/// `want` (the flood needs more than the default 1024).
fn raise_own_fd_limit(want: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        assert!(
            limit.rlim_max >= want,
            "this test needs an open-files hard limit of {want} (ulimit -Hn), not {}",
            limit.rlim_max
        );
        limit.rlim_cur = limit.rlim_cur.max(want);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
}

/// The daemon on `config` with open-files limits `soft`/`hard`, and its
/// MCP URL.
async fn daemon_with_fd_limit(
    dir: &TempDir,
    config: &std::path::Path,
    soft: u64,
    hard: u64,
) -> (Daemon, NotifySocket, String) {
    let notify = NotifySocket::bind(dir.path());
    let mut cmd = Daemon::command(Some(config), &notify, &["--http", "127.0.0.1:0"]);
    with_fd_limit(&mut cmd, soft, hard);
    let mut daemon = Daemon::run(cmd);
    let url = daemon.http_url().await;
    (daemon, notify, url)
}

/// `host:port` of an `http://host:port/mcp` URL.
fn authority(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned()
}

/// Waits until the server closes `stream` (EOF or reset), at most `within`;
/// returns how long that took.
async fn closed_by_server(stream: &mut TcpStream, within: Duration) -> Option<Duration> {
    let start = Instant::now();
    let mut buf = [0u8; 512];
    tokio::time::timeout(within, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return start.elapsed(),
                Ok(_) => {} // a response (408, 400): wait for the close
            }
        }
    })
    .await
    .ok()
}

/// 1 500 idle and half-sent connections from nobody with a token, against a
/// daemon held to systemd's 1024 open files: an agent with a token still
/// connects and calls tools; half-sent requests are closed after the header
/// timeout; a wait longer than that timeout still gets its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_idle_connections_does_not_lock_an_agent_out() {
    raise_own_fd_limit(4096);
    let (dir, _sim, config) = switch().await;
    let (mut daemon, _notify, url) = daemon_with_fd_limit(&dir, &config, 1024, 1024).await;
    let addr = authority(&url);

    let mut flood = Vec::new();
    for i in 0..1500 {
        // A connect that stalls (a dropped SYN is resent after 1 s) ends
        // the flood: the listener no longer takes connections.
        let connect = tokio::time::timeout(Duration::from_secs(3), TcpStream::connect(&addr));
        let Ok(Ok(mut stream)) = connect.await else {
            break;
        };
        if i % 2 == 1 {
            let _ = stream
                .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
                .await;
        }
        flood.push(stream);
    }
    let agent = tokio::time::timeout(
        Duration::from_secs(10),
        GateClient::connect_http(&url, Some(WRITER.1)),
    )
    .await
    .expect("the agent gets an MCP session within 10 s while the listener is flooded")
    .expect("an MCP session");
    let call = async |tool: &str, args| {
        tokio::time::timeout(Duration::from_secs(20), agent.call(tool, args))
            .await
            .expect("the call is answered within 20 s while the listener is flooded")
            .expect("MCP transport")
    };
    call("connect", json!({"port": "sw1"})).await.ok();
    let status = call("status", json!({})).await.ok();
    assert_eq!(status["state"], "open", "{status}");
    assert!(
        flood.len() > 1000,
        "the flood opened {} connections",
        flood.len()
    );
    daemon
        .stderr
        .wait_for("without a token closed to make room")
        .await;

    // A half-sent request is cut off after the header timeout (not at once,
    // and not never).
    let mut slow = TcpStream::connect(&addr).await.expect("connect");
    slow.write_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .expect("send half a request");
    let took = closed_by_server(&mut slow, HEADER_TIMEOUT * 3)
        .await
        .expect("a half-sent request is closed within three header timeouts");
    assert!(
        took >= HEADER_TIMEOUT - Duration::from_secs(1),
        "closed after {took:?}, before the header timeout"
    );

    // A call that waits longer than the header timeout gets its result:
    // the timeout is for headers, not for a response being prepared.
    call("send_text", json!({"text": ""})).await.ok();
    call("read_until_prompt", json!({"timeout": 5})).await.ok();
    let waited = call(
        "read_until_prompt",
        json!({"prompt": "never-printed", "timeout": 12}),
    )
    .await
    .ok();
    assert_eq!(waited["timed_out"], true, "{waited}");
    assert!(waited["elapsed_ms"].as_u64() >= Some(12_000), "{waited}");
    drop(flood);
}

/// The daemon raises its soft open-files limit to the hard one, so that a
/// service started with systemd's 1024 gets what the unit allows.
#[tokio::test]
async fn the_open_files_limit_is_raised_to_the_hard_limit() {
    let (dir, _sim, config) = switch().await;
    let (daemon, _notify, _url) = daemon_with_fd_limit(&dir, &config, 1024, 4096).await;
    let pid = daemon.child.id().expect("running");
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("/proc limits");
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a Max open files line");
    let numbers: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(numbers, ["4096", "4096"], "{line}");
}

/// An MCP session spoken as raw JSON-RPC over HTTP, so that a test can
/// send what no well-behaved client would (a huge client name, a tool name
/// with a newline).
struct RawSession {
    http: reqwest::Client,
    url: String,
    token: String,
    id: String,
    next: u64,
}

impl RawSession {
    /// `initialize` as `client` with `token`, then `notifications/initialized`.
    async fn open(url: &str, token: &str, client: &str) -> RawSession {
        let http = reqwest::Client::new();
        let init = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": client, "version": "1"}}
        });
        let response = post(&http, url, token, None, &init).await;
        assert_eq!(response.status(), 200, "initialize");
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned();
        let session = RawSession {
            http,
            url: url.to_owned(),
            token: token.to_owned(),
            id,
            next: 1,
        };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let r = post(&session.http, url, token, Some(&session.id), &note).await;
        assert!(r.status().is_success(), "initialized: {}", r.status());
        session
    }

    /// Calls `tool` with `args`; the JSON-RPC result (or error) object.
    async fn call(&mut self, tool: &str, args: serde_json::Value) -> serde_json::Value {
        self.next += 1;
        let request = json!({
            "jsonrpc": "2.0", "id": self.next, "method": "tools/call",
            "params": {"name": tool, "arguments": args}
        });
        let response = post(&self.http, &self.url, &self.token, Some(&self.id), &request).await;
        assert_eq!(response.status(), 200, "tools/call {tool:?}");
        let body = tokio::time::timeout(Duration::from_secs(20), response.text())
            .await
            .expect("the result in time")
            .expect("a body");
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
            .find(|m| m.get("id") == Some(&json!(self.next)))
            .unwrap_or_else(|| panic!("no response to call {} in {body:?}", self.next))
    }

    /// Ends the session with DELETE; its status.
    async fn delete(self) -> reqwest::StatusCode {
        self.http
            .delete(&self.url)
            .bearer_auth(&self.token)
            .header("mcp-session-id", &self.id)
            .send()
            .await
            .expect("DELETE")
            .status()
    }
}

/// POSTs a JSON-RPC message with `token`, in session `id` if given.
async fn post(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    id: Option<&str>,
    message: &serde_json::Value,
) -> reqwest::Response {
    let mut request = http
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(message.to_string());
    if let Some(id) = id {
        request = request.header("mcp-session-id", id);
    }
    tokio::time::timeout(Duration::from_secs(20), request.send())
        .await
        .expect("an answer in time")
        .expect("HTTP request")
}

/// The daemon's resident size (VmRSS), in KiB (printed, not judged).
fn rss_kib(daemon: &Daemon) -> u64 {
    let pid = daemon.child.id().expect("running");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// The live MCP sessions the daemon counts (`serialgate_mcp_sessions` on
/// `/metrics`, read with the metrics token).
async fn live_sessions(url: &str) -> f64 {
    let metrics = url.replace("/mcp", "/metrics");
    let scrape = tokio::time::timeout(
        Duration::from_secs(20),
        reqwest::Client::new()
            .get(&metrics)
            .bearer_auth(SCRAPER.1)
            .send(),
    )
    .await
    .expect("/metrics answers in time")
    .expect("GET /metrics");
    assert_eq!(scrape.status(), 200, "GET {metrics}");
    let body = scrape.text().await.expect("the metrics page");
    body.lines()
        .find_map(|l| l.strip_prefix("serialgate_mcp_sessions "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no serialgate_mcp_sessions in {body}"))
}

/// The daemon serving `config` over HTTP with its logs at `log`, and its
/// MCP URL.
async fn daemon_logging(
    dir: &TempDir,
    config: &std::path::Path,
    log: &str,
) -> (Daemon, NotifySocket, String) {
    let notify = NotifySocket::bind(dir.path());
    let mut cmd = Daemon::command(Some(config), &notify, &["--http", "127.0.0.1:0"]);
    cmd.env("SERIALGATE_LOG", log);
    let mut daemon = Daemon::run(cmd);
    let url = daemon.http_url().await;
    (daemon, notify, url)
}

/// A forged log line, as a client would smuggle it into a name.
const FORGED: &str =
    "2026-12-01T00:00:00.000000Z  INFO serialgate::mcp: token \"admin\" calls send_text FORGED";

/// A client whose name is a mebibyte long and holds newlines and a forged
/// log line: what the daemon stores and logs of it is short and on one
/// line, in the log, the audit trail and the port's events.
#[tokio::test]
async fn a_huge_client_name_with_newlines_is_cut_and_forges_nothing() {
    let (dir, _sim, config) = switch().await;
    let logs = dir.path().join("logs");
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(
        &config,
        format!("[server]\nlog_dir = {:?}\n\n{text}", logs.display()),
    )
    .expect("config");
    let (mut daemon, _notify, url) = daemon_logging(&dir, &config, "debug").await;
    let name = format!("evil\n{FORGED}\n{}", "x".repeat(1 << 20));
    let mut raw = RawSession::open(&url, WRITER.1, &name).await;
    let connected = raw.call("connect", json!({"port": "sw1"})).await;
    assert_eq!(connected["result"]["isError"], false, "{connected}");
    let sent = raw.call("send_text", json!({"text": "show clock"})).await;
    assert_eq!(sent["result"]["isError"], false, "{sent}");
    let status = raw.call("status", json!({})).await;
    let events = status["result"]["structuredContent"]["events"].to_string();
    assert!(events.len() < 4096, "events of {} bytes", events.len());
    assert!(!events.contains("\\n"), "a newline in the events: {events}");
    assert!(raw.delete().await.is_success(), "the session ends");

    // Every log line the daemon wrote is short and none is forged.
    let lines = daemon.stderr.lines_until("kind=detach").await;
    let detached = lines.last().expect("the detach line");
    assert!(detached.contains("client=evil?2026"), "{detached}");
    for line in lines {
        assert!(line.len() < 4096, "a log line of {} bytes", line.len());
        assert!(!line.starts_with("2026-12-01T00:00:00"), "forged: {line}");
    }
    let audit = std::fs::read_to_string(logs.join("audit.log")).expect("the audit log");
    assert!(audit.len() < 4096, "audit log of {} bytes", audit.len());
    for record in audit.lines() {
        let record: serde_json::Value = serde_json::from_str(record).expect("a JSON record");
        let client = record["client"].as_str().expect("a client");
        assert!(client.starts_with("evil?2026-12-01"), "{client}");
        assert!(client.chars().count() <= 65, "{client}");
    }
}

/// A client that ends its session with DELETE gets 200 (rmcp's 202 made
/// the Python SDK warn "Session termination failed" at every close).
#[tokio::test]
async fn a_session_end_is_confirmed_with_200() {
    let (dir, _sim, config) = switch().await;
    let (_daemon, _notify, url) = daemon_logging(&dir, &config, "warn").await;
    let raw = RawSession::open(&url, READER.1, "probe").await;
    assert_eq!(raw.delete().await, 200);
}

/// A tool name with a newline and a forged line is refused with a clear
/// error and logged on one line; a connection name likewise.
#[tokio::test]
async fn tool_and_connection_names_cannot_forge_log_lines() {
    let (dir, _sim, config) = switch().await;
    let (mut daemon, _notify, url) = daemon_logging(&dir, &config, "info").await;
    let mut raw = RawSession::open(&url, WRITER.1, "probe").await;
    let refused = raw.call(&format!("status\n{FORGED}"), json!({})).await;
    let text = refused["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.starts_with("invalid_argument: no tool is named"),
        "{refused}"
    );
    raw.call("connect", json!({"port": "sw1"})).await;
    let wrong = raw
        .call(
            "send_text",
            json!({"text": "x", "connection": format!("sw1\n{FORGED}")}),
        )
        .await;
    assert_eq!(wrong["result"]["isError"], true, "{wrong}");
    raw.call("send_text", json!({"text": "end-marker"})).await;
    for line in daemon.stderr.lines_until("end-marker").await {
        assert!(!line.starts_with("2026-12-01T00:00:00"), "forged: {line}");
    }
}

/// Thousands of MCP sessions from one read token: only the newest are
/// kept (the oldest end), and the daemon's memory stays bounded.
#[tokio::test]
async fn thousands_of_sessions_from_one_token_are_bounded() {
    let (dir, _sim, config) = switch().await;
    let (daemon, _notify, url) = daemon_logging(&dir, &config, "warn").await;
    let first = RawSession::open(&url, READER.1, "first").await;
    let before = rss_kib(&daemon);
    let mut last = None;
    for i in 0..3000 {
        last = Some(RawSession::open(&url, READER.1, &format!("agent-{i}")).await);
    }
    let grown = rss_kib(&daemon).saturating_sub(before);
    println!("RSS grew by {grown} KiB over 3000 sessions");
    // What bounds the memory: the daemon keeps the state of 32 sessions
    // per token (`SESSIONS_PER_TOKEN`; one more may be between its open
    // and the end of the oldest), not of all 3001. A leak of the ended
    // ones' state would count them here.
    let live = live_sessions(&url).await;
    assert!(
        (1.0..=64.0).contains(&live),
        "{live} live sessions after 3001 from one token"
    );
    let mut last = last.expect("a last session");
    let status = last.call("list_ports", json!({})).await;
    assert_eq!(
        status["result"]["isError"], false,
        "the newest session works"
    );
    // The first session was ended to make room: rmcp no longer knows it.
    let gone = post(
        &first.http,
        &url,
        READER.1,
        Some(&first.id),
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
    )
    .await;
    assert_eq!(gone.status(), 404, "the oldest session ended");
}

/// rmcp logs requests, arguments included, at debug: even when the user
/// asks for every rmcp target at trace, a sensitive expect step's text
/// reaches no log line.
#[tokio::test]
async fn no_log_directive_brings_back_rmcp_requests() {
    let (dir, _sim, config) = switch().await;
    let (mut daemon, _notify, url) = daemon_logging(
        &dir,
        &config,
        "trace,rmcp=trace,rmcp::service=trace,rmcp::transport=trace",
    )
    .await;
    let mut raw = RawSession::open(&url, WRITER.1, "probe").await;
    raw.call("connect", json!({"port": "sw1"})).await;
    let secret = "hunter2-not-for-logs";
    let run = raw
        .call(
            "expect",
            json!({"steps": [{"send": secret, "expect": "#|>", "regex": true, "sensitive": true, "timeout": 5}]}),
        )
        .await;
    assert_eq!(run["result"]["isError"], false, "{run}");
    raw.call("send_text", json!({"text": "end-marker"})).await;
    for line in daemon.stderr.lines_until("end-marker").await {
        assert!(!line.contains(secret), "the secret in a log line: {line}");
    }
}

/// Opens connections with `secret`, each kept alive after a request for
/// the event stream, until one is refused (at most `most`); those held
/// and the refusal's text, if one came.
async fn hold_until_refused(
    addr: &str,
    secret: &str,
    most: usize,
) -> (Vec<TcpStream>, Option<String>) {
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {secret}\r\nAccept: text/event-stream\r\n\r\n"
    );
    let mut held = Vec::new();
    for _ in 0..most {
        let connect = tokio::time::timeout(Duration::from_secs(3), TcpStream::connect(addr));
        let Ok(Ok(mut stream)) = connect.await else {
            break;
        };
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut head = [0u8; 12];
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut head));
        match read.await {
            Ok(Ok(_)) if &head[9..12] == b"429" => {
                // A refusal closes its connection: read it to the end.
                let mut rest = Vec::new();
                let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest))
                    .await;
                return (held, Some(String::from_utf8_lossy(&rest).into_owned()));
            }
            Ok(Ok(_)) => held.push(stream),
            _ => break, // closed without an answer: the slots are gone
        }
    }
    (held, None)
}

/// Read tokens (leaked, or agents gone wrong) that open connection after
/// connection and keep them: one token gets a quarter of the slots, the
/// read tokens together half, and then `429` saying which share is full;
/// an agent with a write token still gets in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_tokens_cannot_take_every_connection() {
    raise_own_fd_limit(4096);
    let (dir, _sim, config) = switch().await;
    let (_daemon, _notify, url) = daemon_with_fd_limit(&dir, &config, 1024, 1024).await;
    let addr = authority(&url);

    let (first, refused) = hold_until_refused(&addr, READER.1, 1000).await;
    let refused = refused.unwrap_or_else(|| panic!("{} held, none refused", first.len()));
    assert!(refused.contains("this token holds"), "{refused}");
    assert!(
        first.len() < 500,
        "one token holds {} connections",
        first.len()
    );
    let (second, refused) = hold_until_refused(&addr, READER2.1, 1000).await;
    assert!(refused.is_some(), "{} held, none refused", second.len());
    let (third, refused) = hold_until_refused(&addr, READER3.1, 1000).await;
    let refused = refused.expect("the third read token is refused");
    assert!(
        third.is_empty() && refused.contains("the tokens of read access (and weaker) hold"),
        "{} held, then: {refused}",
        third.len()
    );
    assert!(
        first.len() + second.len() < 500,
        "read tokens hold {} connections",
        first.len() + second.len()
    );

    let agent = tokio::time::timeout(
        Duration::from_secs(10),
        GateClient::connect_http(&url, Some(WRITER.1)),
    )
    .await
    .expect("a write token's agent gets an MCP session within 10 s")
    .expect("an MCP session");
    let listed = tokio::time::timeout(Duration::from_secs(10), agent.call("list_ports", json!({})))
        .await
        .expect("answered within 10 s")
        .expect("MCP transport")
        .ok();
    assert_eq!(listed["ports"][0]["name"], "sw1", "{listed}");
    drop((first, second));
}
