//! MCP over streamable HTTP with bearer tokens: the real binary serving
//! `--http 127.0.0.1:0`, rmcp's HTTP client (MCP sessions and sessionless
//! `2026-07-28` clients), and raw HTTP for the status codes.

use serialgate_testkit::daemon;
use serialgate_testkit::wait;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::binary;
use serialgate_testkit::client::{GateClient, Outcome};
use tempfile::TempDir;
use tokio::process::Command;

/// Tokens of the test config: name, secret, ports, access.
const TOKENS: &[daemon::TestToken<'static>] = &[
    ("ro", "read-only-secret-0123456789", r#"["sw*"]"#, "read"),
    ("rw", "read-write-secret-0123456789", r#"["*"]"#, "write"),
    ("lab", "lab-only-secret-0123456789", r#"["lab-*"]"#, "write"),
];

fn secret(name: &str) -> &'static str {
    TOKENS
        .iter()
        .find(|t| t.0 == name)
        .map(|t| t.1)
        .expect("a test token")
}

/// `[[tokens]]` entries for [`TOKENS`], their secret files written into
/// `dir` (mode 600, relative to the config file).
fn tokens_toml(dir: &Path) -> String {
    daemon::tokens_toml(dir, TOKENS)
}

/// A `serialgate serve --http` child (the test kit's daemon), killed when
/// dropped, and the MCP URL it printed.
struct Daemon {
    process: daemon::Daemon,
    url: String,
}

impl Daemon {
    /// Starts the daemon with `config` (written into `dir`) and `args`
    /// after `serve --config F`, and waits for its `listening on` line.
    async fn start(dir: &TempDir, config: &str, args: &[&str]) -> Daemon {
        let mut process = daemon::Daemon::run(command(dir, config, args));
        let url = process.http_url().await;
        Daemon { process, url }
    }

    async fn client(&self, token: &str) -> GateClient {
        GateClient::connect_http(&self.url, Some(secret(token)))
            .await
            .expect("HTTP MCP session")
    }
}

/// `serve --config F args…` with `config` written into `dir`, logs at
/// `warn` on a piped stderr.
fn command(dir: &TempDir, config: &str, args: &[&str]) -> Command {
    let path = dir.path().join("serialgate.toml");
    std::fs::write(&path, config).expect("write config");
    let mut cmd = daemon::Daemon::command_for(&binary(), Some(&path), args);
    cmd.env("SERIALGATE_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    cmd
}

/// A device at `<dir>/sw1`, and a config with port `sw1` on it, a port
/// `lab-1` on a missing device, and the test tokens.
async fn setup(profile: Profile) -> (TempDir, SimHandle, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("sw1");
    let sim = sim::spawn(profile, Some(link.clone()))
        .await
        .expect("simulated device");
    let preset = profile.preset();
    let config = format!(
        "[ports.sw1]\ndevice = {:?}\npreset = \"{preset}\"\n\n\
         [ports.lab-1]\ndevice = {:?}\n\n{}",
        link.display(),
        dir.path().join("missing").display(),
        tokens_toml(dir.path())
    );
    (dir, sim, config)
}

async fn call(client: &GateClient, tool: &str, args: Value) -> Outcome {
    client.call(tool, args).await.expect("MCP transport")
}

async fn ok(client: &GateClient, tool: &str, args: Value) -> Value {
    call(client, tool, args).await.ok()
}

async fn err(client: &GateClient, tool: &str, args: Value) -> String {
    call(client, tool, args).await.err()
}

fn port_names(list: &Value) -> Vec<String> {
    list["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| p["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

async fn post(url: &str, auth: Option<&str>, body: &str) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned());
    if let Some(auth) = auth {
        request = request.header("authorization", auth);
    }
    request.send().await.expect("HTTP request")
}

#[tokio::test]
async fn requests_without_a_known_token_get_401() {
    let (dir, _sim, config) = setup(Profile::Silent).await;
    let daemon = Daemon::start(&dir, &config, &["--http", "127.0.0.1:0"]).await;
    let wrong = "Bearer not-a-configured-secret".to_owned();
    let almost = format!("Bearer {}x", secret("rw"));
    for auth in [
        None,
        Some(wrong.as_str()),
        Some(almost.as_str()),
        Some("Basic cm86cm8="),
    ] {
        let response = post(&daemon.url, auth, INITIALIZE).await;
        assert_eq!(response.status(), 401, "{auth:?}");
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .expect("ASCII challenge");
        assert!(challenge.starts_with("Bearer"), "{challenge}");
    }
    let right = format!("Bearer {}", secret("rw"));
    let response = post(&daemon.url, Some(&right), INITIALIZE).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("mcp-session-id"));
    // The rmcp client gets the refusal as an error, not a session.
    assert!(
        GateClient::connect_http(&daemon.url, Some("nope"))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_read_token_reads_but_never_writes() {
    let (dir, sim, config) = setup(Profile::Silent).await;
    let daemon = Daemon::start(&dir, &config, &["--http", "127.0.0.1:0"]).await;
    let ro = daemon.client("ro").await;
    let tools: Vec<String> = ro
        .tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(tools.contains(&"read_output".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"send_text".to_owned()), "{tools:?}");

    let conn = ok(&ro, "connect", json!({"port": "sw1"})).await;
    let start = conn["head"].as_u64().expect("head");
    sim.inject(b"console says hi\r\nSW1> ").await;
    let read = ok(
        &ro,
        "read_until_prompt",
        json!({"prompt": "SW1> ", "timeout": 5}),
    )
    .await;
    assert_eq!(read["matched"], true, "{read}");
    let page = ok(&ro, "read_output", json!({"cursor": start})).await;
    assert!(
        page["output"]
            .as_str()
            .unwrap_or_default()
            .contains("console says hi"),
        "{page}"
    );

    let e = err(&ro, "send_text", json!({"text": "reload"})).await;
    assert!(e.starts_with("forbidden: "), "{e}");
    assert!(
        e.contains("needs write access") && e.contains("read access"),
        "{e}"
    );
    let e = err(
        &ro,
        "read_until_prompt",
        json!({"prompt": "#", "auto_reply": {"--More--": " "}, "timeout": 1}),
    )
    .await;
    assert!(
        e.starts_with("forbidden: ") && e.contains("auto_reply"),
        "{e}"
    );
    let e = err(&ro, "send_command", json!({"command": "show clock"})).await;
    assert!(e.starts_with("forbidden: "), "{e}");
    // A writer's line reaching the device is the barrier: anything the
    // refused calls had queued for it would have arrived first.
    let rw = daemon.client("rw").await;
    ok(&rw, "connect", json!({"port": "sw1"})).await;
    ok(&rw, "send_text", json!({"text": "show users"})).await;
    assert!(
        sim.wait_received(b"show users\r", Duration::from_secs(20))
            .await,
        "the writer's line did not reach the device"
    );
    assert_eq!(
        String::from_utf8_lossy(&sim.received()),
        "show users\r",
        "only the writer's line reached the device"
    );
    ro.close().await.ok();
    rw.close().await.ok();
}

#[tokio::test]
async fn port_globs_hide_and_refuse_other_ports() {
    let (dir, _sim, config) = setup(Profile::Silent).await;
    let daemon = Daemon::start(&dir, &config, &["--http", "127.0.0.1:0"]).await;
    let lab = daemon.client("lab").await;
    let list = ok(&lab, "list_ports", json!({})).await;
    assert_eq!(port_names(&list), ["lab-1"], "{list}");
    assert_eq!(list["devices"], json!([]));
    let e = err(&lab, "connect", json!({"port": "sw1"})).await;
    assert!(e.starts_with("forbidden: "), "{e}");
    assert!(e.contains("lab-*") && e.contains("\"sw1\""), "{e}");
    let e = err(&lab, "status", json!({"connection": "sw1"})).await;
    assert!(e.starts_with("forbidden: "), "{e}");

    let rw = daemon.client("rw").await;
    let list = ok(&rw, "list_ports", json!({})).await;
    assert_eq!(port_names(&list), ["lab-1", "sw1"], "{list}");
}

#[tokio::test]
async fn a_write_token_runs_commands_on_the_switch() {
    let (dir, _sim, config) = setup(Profile::CiscoIos).await;
    let daemon = Daemon::start(&dir, &config, &["--http", "127.0.0.1:0"]).await;
    let rw = daemon.client("rw").await;
    ok(&rw, "connect", json!({"port": "sw1"})).await;
    ok(&rw, "send_text", json!({"text": ""})).await;
    let woke = ok(&rw, "read_until_prompt", json!({"timeout": 5})).await;
    assert_eq!(woke["prompt_text"], "SW1>", "{woke}");
    let r = ok(&rw, "send_command", json!({"command": "show clock"})).await;
    assert_eq!(r["matched"], true, "{r}");
    let out = r["output"].as_str().expect("output");
    assert!(out.starts_with('*') && out.contains(" UTC "), "{out:?}");
    rw.close().await.ok();
}

#[tokio::test]
async fn two_http_sessions_keep_separate_cursors() {
    let (dir, sim, config) = setup(Profile::Silent).await;
    let daemon = Daemon::start(&dir, &config, &["--http", "127.0.0.1:0"]).await;
    let a = daemon.client("rw").await;
    let b = daemon.client("rw").await;
    ok(&a, "connect", json!({"port": "sw1"})).await;
    ok(&b, "connect", json!({"port": "sw1"})).await;
    let wait = json!({"prompt": "X# ", "timeout": 5});

    sim.inject(b"one\r\nX# ").await;
    let a1 = ok(&a, "read_until_prompt", wait.clone()).await;
    assert!(a1["output"].as_str().unwrap_or_default().contains("one"));
    // A consumed it; B still has it unread.
    let status = ok(&b, "status", json!({})).await;
    assert_eq!(status["unread_bytes"], 8, "{status}");
    let b1 = ok(&b, "read_until_prompt", wait.clone()).await;
    assert_eq!(a1["output"], b1["output"]);

    sim.inject(b"two\r\nX# ").await;
    let a2 = ok(&a, "read_until_prompt", wait.clone()).await;
    let out = a2["output"].as_str().unwrap_or_default();
    assert!(out.contains("two") && !out.contains("one"), "{out:?}");
    let b2 = ok(&b, "read_until_prompt", wait).await;
    assert_eq!(a2["output"], b2["output"]);
    a.close().await.ok();
    b.close().await.ok();
}

#[tokio::test]
async fn sessionless_clients_keep_state_by_token_and_header() {
    let (dir, sim, config) = setup(Profile::Silent).await;
    let daemon = Daemon::start(&dir, &config, &["--http", "127.0.0.1:0"]).await;
    let one =
        GateClient::connect_http_sessionless(&daemon.url, Some(secret("rw")), Some("agent-1"))
            .await
            .expect("sessionless client");
    let two =
        GateClient::connect_http_sessionless(&daemon.url, Some(secret("rw")), Some("agent-2"))
            .await
            .expect("sessionless client");
    ok(&one, "connect", json!({"port": "sw1"})).await;
    // Each request stands alone, yet the connection is remembered...
    let status = ok(&one, "status", json!({})).await;
    assert_eq!(status["connection"], "sw1");
    // ...for this client only.
    let e = err(&two, "status", json!({})).await;
    assert!(e.starts_with("unknown_connection: "), "{e}");
    ok(&two, "connect", json!({"port": "sw1"})).await;

    sim.inject(b"ping\r\nX# ").await;
    let wait = json!({"prompt": "X# ", "timeout": 5});
    let r1 = ok(&one, "read_until_prompt", wait.clone()).await;
    assert!(r1["output"].as_str().unwrap_or_default().contains("ping"));
    // The consume cursor moved for `one` and not for `two`.
    let s1 = ok(&one, "status", json!({})).await;
    assert_eq!(s1["unread_bytes"], 0, "{s1}");
    let r2 = ok(&two, "read_until_prompt", wait).await;
    assert_eq!(r1["output"], r2["output"]);

    // Without the header, a token's sessionless clients share one state.
    let three = GateClient::connect_http_sessionless(&daemon.url, Some(secret("rw")), None)
        .await
        .expect("sessionless client");
    let four = GateClient::connect_http_sessionless(&daemon.url, Some(secret("rw")), None)
        .await
        .expect("sessionless client");
    ok(&three, "connect", json!({"port": "sw1"})).await;
    let shared = ok(&four, "status", json!({})).await;
    assert_eq!(shared["connection"], "sw1", "{shared}");

    // A read token is refused writes here too.
    let ro = GateClient::connect_http_sessionless(&daemon.url, Some(secret("ro")), None)
        .await
        .expect("sessionless client");
    let e = err(&ro, "send_text", json!({"text": "x"})).await;
    assert!(e.starts_with("forbidden: "), "{e}");
}

#[tokio::test]
async fn an_mcp_session_belongs_to_its_token() {
    let (dir, _sim, config) = setup(Profile::Silent).await;
    let daemon = Daemon::start(&dir, &config, &["--http", "127.0.0.1:0"]).await;
    let rw = format!("Bearer {}", secret("rw"));
    let response = post(&daemon.url, Some(&rw), INITIALIZE).await;
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .expect("session id")
        .to_owned();
    drop(response);
    let send = |auth: String, body: &'static str| {
        let (url, session) = (daemon.url.clone(), session.clone());
        async move {
            reqwest::Client::new()
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-06-18")
                .header("authorization", auth)
                .body(body)
                .send()
                .await
                .expect("HTTP request")
        }
    };
    let initialized = send(
        rw.clone(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(initialized.status(), 202);
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_presets","arguments":{}}}"#;
    let lab = format!("Bearer {}", secret("lab"));
    let response = send(lab.clone(), call).await;
    assert_eq!(response.status(), 403);
    let body = response.text().await.expect("body");
    assert!(body.contains("belongs to another token"), "{body}");
    // Nor may another token end it.
    let delete = reqwest::Client::new()
        .delete(&daemon.url)
        .header("mcp-session-id", session.clone())
        .header("authorization", lab)
        .send()
        .await
        .expect("HTTP request");
    assert_eq!(delete.status(), 403);
    let body = send(rw, call).await.text().await.expect("body");
    assert!(body.contains("cisco-ios"), "{body}");
}

#[tokio::test]
async fn adhoc_paths_need_admin_and_close_when_the_session_ends() {
    let (dir, _sim, config) = setup(Profile::Silent).await;
    let adhoc = dir.path().join("bench");
    let _device = sim::spawn(Profile::Silent, Some(adhoc.clone()))
        .await
        .expect("simulated device");
    let secret_file = dir.path().join("adm.token");
    std::fs::write(&secret_file, "admin-secret-0123456789").expect("token file");
    std::fs::set_permissions(&secret_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let config = format!(
        "[server]\nallow_adhoc = true\nadhoc_devices = [{:?}]\n\n{config}\n\
         [[tokens]]\nname = \"adm\"\nsecret_file = \"adm.token\"\nports = [\"*\"]\naccess = \"admin\"\n",
        format!("{}/*", dir.path().display())
    );
    let daemon = Daemon::start(&dir, &config, &["--http", "127.0.0.1:0"]).await;
    let path = adhoc.display().to_string();

    let rw = daemon.client("rw").await;
    let list = ok(&rw, "list_ports", json!({})).await;
    assert_eq!(list["allow_adhoc"], false, "only admins may open paths");
    let e = err(&rw, "connect", json!({"port": path})).await;
    assert!(e.starts_with("forbidden: ") && e.contains("admin"), "{e}");

    let admin = GateClient::connect_http(&daemon.url, Some("admin-secret-0123456789"))
        .await
        .expect("HTTP MCP session");
    let conn = ok(&admin, "connect", json!({"port": path})).await;
    assert_eq!(conn["connection"], "bench");
    let list = ok(&rw, "list_ports", json!({})).await;
    assert!(port_names(&list).contains(&"bench".to_owned()), "{list}");
    let e = err(&rw, "status", json!({"connection": "bench"})).await;
    assert!(e.starts_with("forbidden: "), "{e}");

    // The session ends (DELETE): its ad-hoc port closes.
    admin.close().await.expect("close");
    let what = "the ad-hoc port to close";
    wait::eventually(what, Duration::from_secs(20), async || {
        wait::when(ok(&rw, "list_ports", json!({})).await, |list| {
            !port_names(list).contains(&"bench".to_owned())
        })
    })
    .await;
}

/// Runs `serve` with `config` and `args` and expects it to refuse to
/// start: a failure exit and a message with every one of `parts`.
async fn refused(config: &str, args: &[&str], parts: &[&str]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let child = command(&dir, config, args)
        .spawn()
        .expect("spawn serialgate");
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("exits")
        .expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started: {stderr}");
    for part in parts {
        assert!(stderr.contains(part), "{stderr:?} lacks {part:?}");
    }
}

#[tokio::test]
async fn refuses_to_serve_without_authentication() {
    refused(
        "[server]\nlisten = \"0.0.0.0:7399\"\n",
        &[],
        &[
            "serialgate.toml:2:10: server.listen:",
            "non-loopback",
            "no [[tokens]]",
        ],
    )
    .await;
    refused(
        "",
        &["--http", "0.0.0.0:0"],
        &["cannot serve HTTP on 0.0.0.0:0", "no [[tokens]]"],
    )
    .await;
    refused(
        "[server]\nlisten = \"127.0.0.1:7399\"\n",
        &[],
        &["server.listen:", "auth = \"none\""],
    )
    .await;
    refused(
        "",
        &["--http", "127.0.0.1:0"],
        &["no [[tokens]] are configured", "auth = \"none\""],
    )
    .await;
    refused(
        "[server]\nauth = \"none\"\nlisten = \"0.0.0.0:7399\"\n",
        &[],
        &[
            "serialgate.toml:2:8: server.auth:",
            "only allowed on a loopback",
        ],
    )
    .await;
    refused(
        "[server]\nauth = \"none\"\n",
        &["--http", "[::]:0"],
        &["only allowed on a loopback"],
    )
    .await;
}

#[tokio::test]
async fn loopback_without_auth_when_said_explicitly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let daemon = Daemon::start(
        &dir,
        "[server]\nauth = \"none\"\n",
        &["--http", "127.0.0.1:0"],
    )
    .await;
    let client = GateClient::connect_http(&daemon.url, None)
        .await
        .expect("no token needed");
    let tools = client.tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "send_text"));
    ok(&client, "list_presets", json!({})).await;
    // Only loopback Host names (DNS rebinding).
    let response = reqwest::Client::new()
        .post(&daemon.url)
        .header("host", "evil.example:80")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INITIALIZE)
        .send()
        .await
        .expect("HTTP request");
    assert_eq!(response.status(), 403);
}

#[tokio::test]
async fn sigterm_ends_the_http_server_cleanly() {
    let (dir, _sim, config) = setup(Profile::Silent).await;
    let mut daemon = Daemon::start(&dir, &config, &["--http", "127.0.0.1:0"]).await;
    let rw = daemon.client("rw").await;
    ok(&rw, "connect", json!({"port": "sw1"})).await;
    let pid = libc::pid_t::try_from(daemon.process.child.id().expect("pid")).expect("a pid");
    // SAFETY: kill(2) on our own child's pid, no memory involved.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0, "SIGTERM");
    let status = tokio::time::timeout(Duration::from_secs(10), daemon.process.child.wait())
        .await
        .expect("exits within 10 s")
        .expect("status");
    assert!(status.success(), "{status}");
}

/// Two sessions with write tokens on one port: the first to write holds
/// it, the other gets `busy` naming the holder until it takes over; the
/// attach, the hold and the take-over are port events and audit records.
#[tokio::test]
async fn one_writer_at_a_time_and_take_over() {
    let (dir, sim, config) = setup(Profile::Silent).await;
    let config = format!(
        "[server]\nlog_dir = {:?}\n{config}",
        dir.path().join("logs").display()
    );
    let daemon = Daemon::start(&dir, &config, &["--http", "127.0.0.1:0"]).await;
    let a = daemon.client("rw").await;
    let b = daemon.client("rw").await;
    ok(&a, "connect", json!({"port": "sw1"})).await;
    ok(&b, "connect", json!({"port": "sw1"})).await;
    ok(&a, "send_text", json!({"text": "from-a"})).await;
    let e = err(&b, "send_text", json!({"text": "from-b"})).await;
    assert!(
        e.starts_with("busy: sw1 is held for writing by session "),
        "{e}"
    );
    assert!(
        e.contains("token rw") && e.contains("since ") && e.contains("take_over"),
        "{e}"
    );
    // B still reads; its write changed nothing.
    ok(&b, "read_output", json!({})).await;
    assert!(sim.wait_received(b"from-a\r", Duration::from_secs(5)).await);
    assert!(!sim.received().windows(6).any(|w| w == b"from-b"));
    // B takes over: A becomes read-only.
    let taken = ok(&b, "connect", json!({"port": "sw1", "take_over": true})).await;
    let b_session = taken["writer"]["session"]
        .as_u64()
        .expect("writer after take-over");
    ok(&b, "send_text", json!({"text": "from-b"})).await;
    assert!(sim.wait_received(b"from-b\r", Duration::from_secs(5)).await);
    let e = err(&a, "send_text", json!({"text": "again-a"})).await;
    assert!(
        e.starts_with("busy: ") && e.contains(&format!("session {b_session} ")),
        "{e}"
    );
    let status = ok(&a, "status", json!({})).await;
    assert_eq!(status["you_hold_writer"], false);
    assert_eq!(status["writer"]["session"], b_session);
    let events: Vec<String> = status["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["what"].as_str().unwrap().to_owned())
        .collect();
    assert!(events.iter().any(|e| e.contains("attach")), "{events:?}");
    assert!(
        events.iter().any(|e| e.starts_with("take-over: ")),
        "{events:?}"
    );
    // A leaves; B keeps the hold; the audit file has every write and who made it.
    ok(&a, "disconnect", json!({})).await;
    let audit = std::fs::read_to_string(dir.path().join("logs/audit.log")).expect("audit.log");
    let records: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let writes: Vec<&Value> = records.iter().filter(|r| r["kind"] == "text").collect();
    assert_eq!(writes.len(), 2, "{audit}");
    assert_eq!(writes[0]["data"], "from-a\\r");
    assert_eq!(writes[1]["session"], b_session);
    assert!(
        writes
            .iter()
            .all(|r| r["token"] == "rw" && r["port"] == "sw1")
    );
    assert!(records.iter().any(|r| r["kind"] == "take-over"));
}

/// With `log_dir`, a port's transcript holds what the device printed while
/// no session was attached, and what sessions sent (sensitive text
/// redacted), and `get_transcript` returns its tail.
#[tokio::test]
async fn transcripts_capture_output_nobody_watched() {
    let (dir, sim, config) = setup(Profile::CiscoIos).await;
    let logs = dir.path().join("logs");
    let config = format!("[server]\nlog_dir = {:?}\n{config}", logs.display());
    let daemon = Daemon::start(&dir, &config, &["--http", "127.0.0.1:0"]).await;
    // The switch reboots at 3 a.m. with nobody attached.
    sim.inject(b"\r\n%SYS-5-RELOAD: Reload requested\r\nSystem Bootstrap, Version 15.2\r\n")
        .await;
    let c = daemon.client("rw").await;
    ok(&c, "connect", json!({"port": "sw1"})).await;
    let steps = json!([
        {"send": "", "expect": "SW1>"},
        {"send": "enable", "expect": "Password: "},
        {"send": "cisco", "sensitive": true, "expect": "SW1#"}
    ]);
    let r = ok(&c, "expect", json!({"steps": steps})).await;
    assert_eq!(r["completed"], true, "{r}");
    let t = ok(&c, "get_transcript", json!({"last_bytes": 100_000})).await;
    let text = t["transcript"].as_str().unwrap();
    assert!(text.contains("%SYS-5-RELOAD: Reload requested"), "{text}");
    assert!(text.contains(">>> sent expect: enable\\r"), "{text}");
    assert!(text.contains(">>> sent expect: <redacted>"), "{text}");
    assert!(
        !text.contains("cisco\\r") && !text.contains(">>> sent expect: cisco"),
        "{text}"
    );
    // Every line starts with a timestamp.
    for line in text.lines().filter(|l| !l.is_empty()) {
        assert!(
            line.starts_with("20") && line.as_bytes().get(23) == Some(&b'Z'),
            "{line:?}"
        );
    }
    let file = std::fs::read_to_string(logs.join("transcripts/sw1.log")).unwrap();
    assert!(file.contains("%SYS-5-RELOAD"));
    assert!(!file.contains(">>> sent expect: cisco"));
}
