//! Every door asks the same rules, and keeps asking: over the real
//! console WebSocket and the web view's ports feed against the real
//! daemon, a write token's BREAK is refused as over MCP (the device's
//! port records none) while an admin's goes through; an admin's ad-hoc
//! port is neither attachable nor listed for a write token; a token
//! removed by a reload, or a browser signed out, has its open consoles
//! and feeds closed with a `bye`; a token lowered to read has its
//! typing refused from the reload on; an agent's write hold ends when
//! a reload removes its token or takes its write access, and a call it
//! has running then is stopped before it sends another line.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, COOKIE, ORIGIN};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::client::GateClient;
use serialgate_testkit::console::ConsoleConn;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use serialgate_testkit::updates::UpdatesClient;
use tempfile::TempDir;

const NOC: &str = "noc-secret-0123456789";
const AUDIT: &str = "audit-secret-0123456789";
const BOSS: &str = "boss-secret-0123456789";

/// The daemon over HTTP, a switch on `sw1`, a second device at
/// `<dir>/bench1` an admin may open ad hoc, and three tokens, all with
/// the globs `["*"]`: `noc` (write), `audit` (read), `boss` (admin).
struct Site {
    sw1: SimHandle,
    _bench: SimHandle,
    daemon: Daemon,
    notify: NotifySocket,
    /// `http://127.0.0.1:PORT`.
    base: String,
    dir: TempDir,
}

/// The config with `tokens` (name, secret, access).
fn write_config(dir: &std::path::Path, tokens: &[(&str, &str, &str)]) {
    let entries: Vec<(&str, &str, &str, &str)> = tokens
        .iter()
        // Every port, ad-hoc ones too: what keeps those from a write
        // token is its access, not its globs.
        .map(|&(name, secret, access)| (name, secret, r#"["*"]"#, access))
        .collect();
    let tokens = daemon::tokens_toml(dir, &entries);
    std::fs::write(
        dir.join("serialgate.toml"),
        format!(
            "[server]\nallow_adhoc = true\nadhoc_devices = [{:?}]\n\n[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n\n{tokens}",
            dir.join("bench*").display().to_string(),
            dir.join("sw1").display(),
        ),
    )
    .expect("write config");
}

const ALL: &[(&str, &str, &str)] = &[
    ("noc", NOC, "write"),
    ("audit", AUDIT, "read"),
    ("boss", BOSS, "admin"),
];

impl Site {
    async fn start() -> Site {
        let dir = tempfile::tempdir().expect("temp dir");
        let sw1 = sim::spawn(Profile::CiscoIos, Some(dir.path().join("sw1")))
            .await
            .expect("simulated switch");
        let bench = sim::spawn(Profile::CiscoIos, Some(dir.path().join("bench1")))
            .await
            .expect("simulated bench device");
        write_config(dir.path(), ALL);
        let notify = NotifySocket::bind(dir.path());
        let config = dir.path().join("serialgate.toml");
        let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
        let url = daemon.http_url().await;
        notify.expect("READY=1").await;
        Site {
            sw1,
            _bench: bench,
            daemon,
            notify,
            base: url.trim_end_matches("/mcp").to_owned(),
            dir,
        }
    }

    fn ws(&self, path: &str) -> String {
        format!("{}{path}", self.base.replacen("http://", "ws://", 1))
    }

    async fn console(&self, secret: &str, port: &str, mode: &str) -> (ConsoleConn, Value) {
        let mut conn =
            ConsoleConn::connect_ws(&self.ws(&format!("/ports/{port}/console")), Some(secret))
                .await
                .expect("the console WebSocket");
        conn.send_json(&json!({"type": "hello", "port": port, "mode": mode}))
            .await;
        let attached = conn.until_json("attached").await;
        (conn, attached)
    }

    async fn agent(&self, secret: &str) -> GateClient {
        GateClient::connect_http(&format!("{}/mcp", self.base), Some(secret))
            .await
            .expect("an MCP session over HTTP")
    }

    /// Rewrites the config with `tokens`, sends SIGHUP and waits for the
    /// reload to be over.
    async fn reload(&self, tokens: &[(&str, &str, &str)]) {
        write_config(self.dir.path(), tokens);
        self.daemon.signal(libc::SIGHUP);
        self.notify.expect("RELOADING=1").await;
        self.notify.expect("READY=1").await;
    }

    fn http() -> reqwest::Client {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(20))
            .build()
            .expect("an HTTP client")
    }

    /// Signs a browser in with `secret`: its `name=value` cookie.
    async fn sign_in(&self, secret: &str) -> String {
        let response = Site::http()
            .post(format!("{}/web/signin", self.base))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(ORIGIN, &self.base)
            .body(format!("token={secret}"))
            .send()
            .await
            .expect("POST /web/signin");
        super::hostile_web::login_cookie(&response)
    }

    /// A WebSocket at `path` opened by the web view's pages with `cookie`.
    async fn browser_ws(&self, path: &str, cookie: &str) -> ConsoleConn {
        ConsoleConn::connect_ws_with(
            &self.ws(path),
            &[("cookie", cookie), ("origin", self.base.as_str())],
        )
        .await
        .expect("a WebSocket from the web view")
    }
}

/// Whether `sw1` recorded a BREAK, as the admin's `status` shows it.
async fn breaks_recorded(boss: &GateClient) -> bool {
    let status = boss
        .call("status", json!({"connection": "sw1"}))
        .await
        .expect("status")
        .ok();
    status.to_string().contains("sent BREAK")
}

fn names(ports: &Value) -> Vec<String> {
    ports["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect()
}

fn said_bye(messages: &[Value], needle: &str) -> bool {
    messages
        .iter()
        .any(|m| m["type"] == "bye" && m["reason"].as_str().unwrap_or_default().contains(needle))
}

#[tokio::test]
async fn a_break_frame_needs_admin_as_send_break_does() {
    let site = Site::start().await;
    let boss = site.agent(BOSS).await;
    boss.call("connect", json!({"port": "sw1"}))
        .await
        .expect("connect")
        .ok();
    // Over MCP a write token may not send BREAK: the baseline.
    let noc_agent = site.agent(NOC).await;
    let refused = noc_agent
        .call("send_break", json!({"duration_ms": 300}))
        .await
        .expect("send_break")
        .err();
    assert!(refused.starts_with("forbidden"), "{refused}");
    // Nor at the console.
    let (mut noc, attached) = site.console(NOC, "sw1", "attach").await;
    assert_eq!(attached["writing"], true, "{attached}");
    noc.send_json(&json!({"type": "break", "ms": 300})).await;
    let error = noc.until_json("error").await;
    assert_eq!(error["code"], "forbidden", "{error}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("admin access"), "{message}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !breaks_recorded(&boss).await,
        "the write token's BREAK reached sw1"
    );
    drop(noc);
    // An admin's goes through (Linux takes TIOCSBRK on a pty).
    let (mut admin, _) = site.console(BOSS, "sw1", "force").await;
    admin.send_json(&json!({"type": "break", "ms": 100})).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !breaks_recorded(&boss).await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the admin's BREAK was not sent"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = site.sw1.received();
}

#[tokio::test]
async fn an_adhoc_port_is_for_admins_at_every_door() {
    let site = Site::start().await;
    let boss = site.agent(BOSS).await;
    let device = site.dir.path().join("bench1");
    let opened = boss
        .call(
            "connect",
            json!({"port": device.display().to_string(), "name": "bench"}),
        )
        .await
        .expect("connect")
        .ok();
    let adhoc = opened["connection"].as_str().unwrap_or("bench").to_owned();
    // The admin sees it in the console list.
    let mut list = ConsoleConn::connect_ws(&site.ws("/console"), Some(BOSS))
        .await
        .expect("WebSocket");
    list.send_json(&json!({"type": "list"})).await;
    let ports = list.until_json("ports").await;
    assert!(names(&ports).contains(&adhoc), "{ports}");
    // The write token does not, over the console WebSocket's list…
    let mut list = ConsoleConn::connect_ws(&site.ws("/console"), Some(NOC))
        .await
        .expect("WebSocket");
    list.send_json(&json!({"type": "list"})).await;
    let ports = list.until_json("ports").await;
    assert_eq!(names(&ports), ["sw1"], "{ports}");
    // …nor on the web ports feed.
    let noc_cookie = site.sign_in(NOC).await;
    let mut feed = site.browser_ws("/web/ports/live", &noc_cookie).await;
    let snapshot = feed.until_json("ports").await;
    assert_eq!(names(&snapshot), ["sw1"], "{snapshot}");
    // It cannot attach, and what it types reaches nothing.
    let mut conn = ConsoleConn::connect_ws(&site.ws("/console"), Some(NOC))
        .await
        .expect("WebSocket");
    conn.send_json(&json!({"type": "hello", "port": adhoc, "mode": "attach"}))
        .await;
    conn.send_data(b"reload\r").await;
    let said = conn.until_closed().await;
    assert!(
        !said.iter().any(|m| m["type"] == "attached"),
        "attached to the ad-hoc port: {said:?}"
    );
    assert!(
        said.iter()
            .any(|m| m["type"] == "error" && m["code"] == "forbidden"),
        "{said:?}"
    );
    let refused = boss
        .call("read_output", json!({"connection": adhoc, "cursor": 0}))
        .await
        .expect("read_output")
        .ok();
    assert!(!refused.to_string().contains("reload"), "{refused}");
}

#[tokio::test]
async fn a_reload_closes_a_removed_tokens_console_and_lowers_a_demoted_one() {
    let site = Site::start().await;
    let (mut audit, _) = site.console(AUDIT, "sw1", "watch").await;
    let (mut noc, attached) = site.console(NOC, "sw1", "attach").await;
    assert_eq!(attached["writing"], true, "{attached}");
    noc.send_data(b"\r").await;
    noc.until_output("SW1>").await;
    // audit removed, noc lowered to read.
    site.reload(&[("noc", NOC, "read"), ("boss", BOSS, "admin")])
        .await;
    let said = audit.until_closed().await;
    assert!(said_bye(&said, "removed"), "{said:?}");
    noc.send_data(b"show clock\r").await;
    let error = noc.until_json("error").await;
    assert_eq!(error["code"], "forbidden", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("write access"),
        "{error}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !String::from_utf8_lossy(&site.sw1.received()).contains("show clock"),
        "the demoted token's typing reached the switch"
    );
    // The hold it had is free for a writer again.
    let boss = site.agent(BOSS).await;
    let connected = boss
        .call("connect", json!({"port": "sw1"}))
        .await
        .expect("connect")
        .ok();
    assert!(connected.to_string().contains("sw1"), "{connected}");
    boss.call("send_text", json!({"text": "\r"}))
        .await
        .expect("send_text")
        .ok();
}

/// A token whose secret was replaced (the old one leaked, say) keeps
/// nothing open on the old secret: its bearer console closes at the
/// reload, and the old secret opens nothing new.
#[tokio::test]
async fn a_new_secret_closes_what_the_old_one_opened() {
    let site = Site::start().await;
    let (mut noc, attached) = site.console(NOC, "sw1", "attach").await;
    assert_eq!(attached["writing"], true, "{attached}");
    const NEW: &str = "noc-rotated-secret-9876543210";
    site.reload(&[("noc", NEW, "write"), ("boss", BOSS, "admin")])
        .await;
    let said = noc.until_closed().await;
    assert!(said_bye(&said, "new secret"), "{said:?}");
    assert!(
        ConsoleConn::connect_ws(&site.ws("/ports/sw1/console"), Some(NOC))
            .await
            .is_err(),
        "the old secret opened a console"
    );
    let (_fresh, attached) = site.console(NEW, "sw1", "attach").await;
    assert_eq!(attached["writing"], true, "{attached}");
}

#[tokio::test]
async fn signing_out_closes_the_browsers_console_and_ports_feed() {
    let site = Site::start().await;
    let cookie = site.sign_in(NOC).await;
    let mut console = site.browser_ws("/ports/sw1/console", &cookie).await;
    console
        .send_json(&json!({"type": "hello", "port": "sw1", "mode": "attach"}))
        .await;
    console.until_json("attached").await;
    let mut feed = site.browser_ws("/web/ports/live", &cookie).await;
    feed.until_json("ports").await;
    let out = Site::http()
        .post(format!("{}/web/signout", site.base))
        .header(COOKIE, &cookie)
        .header(ORIGIN, &site.base)
        .send()
        .await
        .expect("POST /web/signout");
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    let said = console.until_closed().await;
    assert!(said_bye(&said, "sign in again"), "{said:?}");
    let said = feed.until_closed().await;
    assert!(said_bye(&said, "sign in again"), "{said:?}");
}

/// An agent's write hold ends with its token's write access: after a
/// reload that lowers the token to read, or removes it, another writer
/// takes the switch without forcing anyone off it.
#[tokio::test]
async fn a_reload_lets_go_of_the_write_hold_of_a_lowered_or_removed_tokens_agent() {
    let site = Site::start().await;
    let noc = site.agent(NOC).await;
    ok(&noc, "connect", json!({"port": "sw1"})).await;
    ok(&noc, "send_text", json!({"text": "\r"})).await;
    let status = ok(&noc, "status", json!({})).await;
    assert_eq!(status["you_hold_writer"], true, "{status}");
    // noc lowered to read, audit raised to write.
    site.reload(&[
        ("noc", NOC, "read"),
        ("audit", AUDIT, "write"),
        ("boss", BOSS, "admin"),
    ])
    .await;
    let audit = site.agent(AUDIT).await;
    let connected = ok(&audit, "connect", json!({"port": "sw1"})).await;
    assert!(connected["writer"].is_null(), "{connected}");
    ok(&audit, "send_text", json!({"text": "\r"})).await;
    // And audit's hold ends when a reload removes the token.
    site.reload(&[("noc", NOC, "write"), ("boss", BOSS, "admin")])
        .await;
    let noc = site.agent(NOC).await;
    let connected = ok(&noc, "connect", json!({"port": "sw1"})).await;
    assert!(connected["writer"].is_null(), "{connected}");
    ok(&noc, "send_text", json!({"text": "\r"})).await;
}

/// An agent's `expect` script waits for the switch, then would send
/// `write erase`; a reload lowers its token to read while it waits. The
/// call ends at the reload, saying why, and when the switch prints what
/// the script waited for, nothing more is sent.
#[tokio::test]
async fn a_call_running_when_a_reload_takes_its_access_is_stopped_before_its_next_line() {
    let mut site = Site::start().await;
    let noc = site.agent(NOC).await;
    ok(&noc, "connect", json!({"port": "sw1"})).await;
    let script = json!({"steps": [
        {"expect": "Press RETURN to get started", "timeout": 60},
        {"send": "write erase"},
    ]});
    let lower = async {
        site.daemon.stderr.wait_for("calls expect on").await;
        site.reload(&[
            ("noc", NOC, "read"),
            ("audit", AUDIT, "write"),
            ("boss", BOSS, "admin"),
        ])
        .await;
        site.sw1
            .inject(b"\r\nPress RETURN to get started\r\n")
            .await;
    };
    let started = std::time::Instant::now();
    let (stopped, ()) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(30), noc.call("expect", script)),
        lower
    );
    let stopped = stopped
        .expect("the call ends within 30 s")
        .expect("MCP")
        .err();
    assert!(
        stopped.starts_with("forbidden: a reload of this gateway's config took from token \"noc\"")
            && stopped.contains("stopped"),
        "{stopped}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    // The switch printed what the script waited for; had the call gone on,
    // its next line would reach the switch before an admin's command does.
    let audit = site.agent(AUDIT).await;
    ok(&audit, "connect", json!({"port": "sw1"})).await;
    let seen = ok(&audit, "read_output", json!({"cursor": 0, "wait_ms": 5000})).await;
    assert!(seen.to_string().contains("Press RETURN"), "{seen}");
    let boss = site.agent(BOSS).await;
    ok(&boss, "connect", json!({"port": "sw1"})).await;
    ok(&boss, "send_command", json!({"command": "show clock"})).await;
    let received = site.sw1.received();
    assert_eq!(serialgate_testkit::rig::count(&received, b"show clock"), 1);
    assert_eq!(
        serialgate_testkit::rig::count(&received, b"write erase"),
        0,
        "a line was sent after the reload"
    );
}

async fn ok(agent: &GateClient, tool: &str, args: Value) -> Value {
    agent.call(tool, args).await.expect("the MCP call").ok()
}

/// Opens an MCP session over HTTP with `secret`; its id.
async fn mcp_session(site: &Site, secret: &str) -> String {
    let init = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}
    });
    let response = Site::http()
        .post(format!("{}/mcp", site.base))
        .bearer_auth(secret)
        .header(CONTENT_TYPE, "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .expect("initialize");
    assert_eq!(response.status(), StatusCode::OK, "initialize");
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    let initialized = Site::http()
        .post(format!("{}/mcp", site.base))
        .bearer_auth(secret)
        .header(CONTENT_TYPE, "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &id)
        .body(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .send()
        .await
        .expect("notifications/initialized");
    assert!(
        initialized.status().is_success(),
        "{}",
        initialized.status()
    );
    id
}

/// The session's stream of notifications (`GET`), open.
async fn notifications(site: &Site, secret: &str, id: &str) -> reqwest::Response {
    let stream = Site::http()
        .get(format!("{}/mcp", site.base))
        .bearer_auth(secret)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", id)
        .send()
        .await
        .expect("GET the session's stream");
    assert_eq!(stream.status(), StatusCode::OK, "the stream opens");
    stream
}

/// Reads `stream` until it ends; false if it is still open after 10 s.
async fn ends(mut stream: reqwest::Response) -> bool {
    tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(_)) = stream.chunk().await {}
    })
    .await
    .is_ok()
}

/// A reload that removes a token, or gives it a new secret, ends the MCP
/// sessions opened with the old one, and with them their streams of
/// notifications, which would otherwise go on telling a revoked (or
/// leaked) secret's holder of the ports' alerts for an hour; a token the
/// reload keeps as it was keeps its session.
#[tokio::test]
async fn a_reload_ends_the_mcp_sessions_of_a_removed_or_replaced_secret() {
    let site = Site::start().await;
    let audit = mcp_session(&site, AUDIT).await;
    let noc = mcp_session(&site, NOC).await;
    let boss = mcp_session(&site, BOSS).await;
    let audit_stream = notifications(&site, AUDIT, &audit).await;
    let noc_stream = notifications(&site, NOC, &noc).await;
    const NEW: &str = "noc-rotated-secret-0123456789";
    site.reload(&[("noc", NEW, "write"), ("boss", BOSS, "admin")])
        .await;
    assert!(
        ends(audit_stream).await,
        "the removed token's stream is still open"
    );
    assert!(
        ends(noc_stream).await,
        "the replaced secret's stream is still open"
    );
    // boss's session goes on.
    let listed = Site::http()
        .post(format!("{}/mcp", site.base))
        .bearer_auth(BOSS)
        .header(CONTENT_TYPE, "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &boss)
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_ports", "arguments": {}}}).to_string())
        .send()
        .await
        .expect("a call in boss's session");
    assert_eq!(listed.status(), StatusCode::OK);
    let body = listed.text().await.expect("the answer");
    assert!(body.contains("sw1"), "{body}");
}

/// A sessionless client's stream of alerts (`subscriptions/listen`) ends
/// when a reload removes its token, saying why; one whose token the
/// reload keeps goes on.
#[tokio::test]
async fn a_reload_ends_a_removed_tokens_stream_of_alerts() {
    let site = Site::start().await;
    let url = format!("{}/mcp", site.base);
    let uris = ["serialgate://ports/sw1/alerts".to_owned()];
    let audit = UpdatesClient::sessionless(&url, AUDIT)
        .await
        .expect("audit's sessionless client");
    let mut removed = audit.listen(&uris).await.expect("audit listens");
    let boss = UpdatesClient::sessionless(&url, BOSS)
        .await
        .expect("boss's sessionless client");
    let mut kept = boss.listen(&uris).await.expect("boss listens");
    site.reload(&[("noc", NOC, "write"), ("boss", BOSS, "admin")])
        .await;
    let ended = tokio::time::timeout(Duration::from_secs(10), removed.next())
        .await
        .expect("the removed token's stream ends in time");
    let why = format!("{ended:?}");
    assert!(
        why.contains("token \\\"audit\\\" was removed from the config"),
        "{why}"
    );
    let going_on = tokio::time::timeout(Duration::from_millis(500), kept.next()).await;
    assert!(going_on.is_err(), "boss's stream ended: {going_on:?}");
}
