//! Approval by a person, end to end: an agent over HTTP (token `noc`) on
//! the simulated Cisco switch under `guarded`, whose dangerous lines wait
//! for a person at the console. The person is the real `serialgate
//! console` client on a pseudo-terminal, or the console protocol itself
//! (on the local socket, or a WebSocket with a token) where a test needs
//! to send what the client would never send. What reaches the switch is
//! read from every byte it received.

use std::time::Duration;

use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::client::GateClient;
use serialgate_testkit::console::{ConsoleConn, user_name};
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use serialgate_testkit::rig::{count, enable};
use serialgate_testkit::wait;
use tempfile::TempDir;

use super::console_client::{Terminal, spawn_on};

/// How long any one expected thing may take.
const DEADLINE: Duration = Duration::from_secs(10);
const NOC: &str = "noc-secret-0123456789";
const OPS: &str = "ops-secret-0123456789";
const SCRAPE: &str = "scrape-secret-0123456789";

/// The switch, the daemon (HTTP, the console socket, an audit trail), and
/// the agent of token `noc` in privileged mode.
struct Site {
    sim: SimHandle,
    agent: GateClient,
    socket: std::path::PathBuf,
    /// The WebSocket base (`ws://127.0.0.1:PORT`).
    ws: String,
    dir: TempDir,
    daemon: Daemon,
    _notify: NotifySocket,
}

impl Site {
    async fn start(approval_timeout: &str) -> Site {
        Site::start_with(approval_timeout, "guarded", "").await
    }

    /// [`Site::start`] with the port under `policy`, `extra` TOML after.
    async fn start_with(approval_timeout: &str, policy: &str, extra: &str) -> Site {
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("sw1");
        let sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
            .await
            .expect("simulated device");
        let tokens = daemon::tokens_toml(
            dir.path(),
            &[
                ("noc", NOC, r#"["*"]"#, "write"),
                ("ops", OPS, r#"["*"]"#, "write"),
                ("scrape", SCRAPE, r#"["*"]"#, "metrics"),
            ],
        );
        // Both decide at consoles opened with them (noc's own requests
        // only where a policy says self_approve).
        let tokens = daemon::approving(&tokens, &["noc", "ops"]);
        let config = dir.path().join("serialgate.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\nconsole_socket = \"console.sock\"\nlog_dir = \"logs\"\napproval_timeout = \"{approval_timeout}\"\n\n\
                 [ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\npolicy = \"{policy}\"\n\n{tokens}\n{extra}",
                link.display()
            ),
        )
        .expect("write config");
        let notify = NotifySocket::bind(dir.path());
        let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
        let url = daemon.http_url().await;
        notify.expect("READY=1").await;
        let agent = GateClient::connect_http(&url, Some(NOC))
            .await
            .expect("HTTP MCP session");
        let ok = agent
            .call("connect", json!({"port": "sw1"}))
            .await
            .expect("MCP");
        ok.ok();
        enable(&agent).await;
        let ws = url.trim_end_matches("/mcp").replacen("http://", "ws://", 1);
        Site {
            sim,
            agent,
            socket: dir.path().join("console.sock"),
            ws,
            dir,
            daemon,
            _notify: notify,
        }
    }

    /// The daemon's Prometheus metrics, as text.
    async fn metrics(&self) -> String {
        let url = format!("{}/metrics", self.ws.replacen("ws://", "http://", 1));
        let request = reqwest::Client::new().get(url).bearer_auth(SCRAPE).send();
        let response = tokio::time::timeout(DEADLINE, request)
            .await
            .expect("a response in time")
            .expect("an HTTP response");
        response.text().await.unwrap_or_default()
    }

    /// Times the switch received `line` and a CR.
    fn received(&self, line: &str) -> usize {
        count(&self.sim.received(), format!("{line}\r").as_bytes())
    }

    /// The audit trail's records so far.
    fn audit(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("logs/audit.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Waits until the audit trail holds a record of `kind` for `line`.
    async fn audited(&self, kind: &str, line: &str) -> Value {
        wait::eventually(
            &format!("an audit record {kind:?} of {line:?}"),
            DEADLINE,
            async || {
                let records = self.audit();
                records
                    .iter()
                    .find(|r| r["kind"] == kind && r["data"] == line)
                    .cloned()
                    .ok_or_else(|| format!("{records:?}"))
            },
        )
        .await
    }
}

/// Reads console frames until the approvals list holds `n` requests.
pub(crate) async fn pending(person: &mut ConsoleConn, n: usize) -> Vec<Value> {
    loop {
        let m = person.until_json("approvals").await;
        let list = m["pending"].as_array().cloned().unwrap_or_default();
        if list.len() == n {
            return list;
        }
    }
}

/// Reads console frames until an error; its message.
/// While the agent's `reload` waits for approval, writes `rewritten` as
/// the config and reloads it, then has `person` approve the request they
/// listed before: the agent's error, and the person's refusal.
async fn reload_while_a_reload_waits(
    site: &Site,
    person: &mut ConsoleConn,
    config: &std::path::Path,
    rewritten: String,
) -> (String, (String, String)) {
    let change = async {
        let list = pending(person, 1).await;
        std::fs::write(config, rewritten).expect("rewrite the config");
        site.daemon.signal(libc::SIGHUP);
        pending(person, 0).await;
        person
            .send_json(
                &json!({"type": "decide", "id": list[0]["id"], "line": "reload", "approve": true}),
            )
            .await;
        refusal(person).await
    };
    let (e, late) = tokio::join!(
        site.agent
            .call("send_command", json!({"command": "reload"})),
        change
    );
    (e.expect("MCP").err(), late)
}

async fn refusal(person: &mut ConsoleConn) -> (String, String) {
    let e = person.until_json("error").await;
    (
        e["code"].as_str().unwrap_or("").to_owned(),
        e["message"].as_str().unwrap_or("").to_owned(),
    )
}

#[tokio::test]
async fn a_person_at_the_real_console_approves_and_the_line_runs_once() {
    let site = Site::start("60s").await;
    let mut terminal = Terminal::open();
    let mut console = spawn_on(&terminal, &site.socket, &["sw1"]);
    terminal.read_until("Ctrl-] ? for help").await;
    let person = async {
        // The request on its own line: who asks, the exact line, the mode,
        // the keys.
        let screen = terminal.read_until("Ctrl-] y approves").await;
        let line = screen
            .lines()
            .find(|l| l.contains("approval wanted"))
            .unwrap_or_default()
            .to_owned();
        assert!(
            line.contains("token noc) asks to send \"reload in 5\" (exec mode) on sw1")
                && line.contains("rule \"reload\""),
            "{line}"
        );
        // status shows it while it waits.
        let status = site
            .agent
            .call("status", json!({}))
            .await
            .expect("MCP")
            .ok();
        let waiting = &status["pending_approvals"];
        assert_eq!(waiting[0]["line"], "reload in 5", "{status}");
        assert_eq!(waiting[0]["token"], "noc", "{status}");
        assert_eq!(site.received("reload in 5"), 0, "sent before approval");
        terminal.type_keys(b"\x1dy");
        terminal.read_until("you approved request").await;
    };
    let (sent, ()) = tokio::join!(
        site.agent.call("send_text", json!({"text": "reload in 5"})),
        person
    );
    sent.expect("MCP").ok();
    // It reached the switch once, the switch answered, and the person saw it.
    terminal.read_until("Reload scheduled in 5 minutes").await;
    assert_eq!(site.received("reload in 5"), 1);
    // Nothing waits any more.
    let status = site
        .agent
        .call("status", json!({}))
        .await
        .expect("MCP")
        .ok();
    assert_eq!(status["pending_approvals"], json!([]), "{status}");
    // The audit trail: the request by the agent, the approval by the
    // person, naming who asked, both with the exact line.
    let asked = site.audited("approval request", "reload in 5").await;
    assert_eq!(asked["token"], "noc", "{asked}");
    let approved = site.audited("approval approved", "reload in 5").await;
    assert_eq!(approved["person"], user_name(), "{approved}");
    assert!(
        approved["requested_by"]
            .as_str()
            .is_some_and(|w| w.contains("token noc")),
        "{approved}"
    );
    assert_eq!(approved["approval"], asked["approval"]);
    // The keys are in the client's help.
    terminal.type_keys(b"\x1d?");
    terminal.read_until("Ctrl-] n        deny").await;
    terminal.type_keys(b"\x1d.");
    let _ = tokio::time::timeout(DEADLINE, console.wait()).await;
}

#[tokio::test]
async fn a_denial_sends_nothing_and_names_who_denied() {
    let site = Site::start("60s").await;
    let (mut person, _) = ConsoleConn::attach(&site.socket, "sw1", "watch", json!({})).await;
    let decide = async {
        let list = pending(&mut person, 1).await;
        person
            .send_json(
                &json!({"type": "decide", "id": list[0]["id"], "line": "reload", "approve": false}),
            )
            .await;
        person.until_json("decided").await
    };
    let (e, decided) = tokio::join!(
        site.agent
            .call("send_command", json!({"command": "reload"})),
        decide
    );
    let e = e.expect("MCP").err();
    assert_eq!(decided["approved"], false, "{decided}");
    assert!(
        e.starts_with("denied: ")
            && e.contains(&format!("was denied by {} on console", user_name()))
            && e.contains("nothing was sent"),
        "{e}"
    );
    assert_eq!(site.received("reload"), 0);
    site.audited("approval denied", "reload").await;
    let metrics = site.metrics().await;
    for outcome in ["requested", "denied"] {
        let counted = format!("serialgate_approvals_total{{port=\"sw1\",outcome=\"{outcome}\"}} 1");
        assert!(metrics.contains(&counted), "{counted} in:\n{metrics}");
    }
    assert!(!metrics.contains("outcome=\"approved\""), "{metrics}");
}

#[tokio::test]
async fn nobody_deciding_expires_and_sends_nothing() {
    let site = Site::start("1s").await;
    let e = site
        .agent
        .call(
            "send_config",
            json!({"lines": ["interface Vlan1", "shutdown"]}),
        )
        .await
        .expect("MCP")
        .err();
    assert!(
        e.starts_with("denied: ")
            && e.contains("expired: nobody approved it within 1 s")
            && e.contains("line 2 of 2, \"shutdown\""),
        "{e}"
    );
    assert_eq!(site.received("shutdown"), 0);
    assert_eq!(site.received("interface Vlan1"), 0);
    // The audit trail escapes the line feed between the change's lines.
    site.audited("approval expired", "interface Vlan1\\nshutdown")
        .await;
}

#[tokio::test]
async fn an_approval_is_for_its_own_line_once_and_on_its_own_port() {
    let site = Site::start("60s").await;
    let (mut person, _) = ConsoleConn::attach(&site.socket, "sw1", "watch", json!({})).await;
    let decide = async {
        let list = pending(&mut person, 2).await;
        let id_of = |line: &str| {
            list.iter()
                .find(|p| p["line"] == line)
                .map(|p| p["id"].clone())
                .unwrap_or(Value::Null)
        };
        let (five, seven) = (id_of("reload in 5"), id_of("reload in 7"));
        // Request five's id with seven's line: refused, nothing decided.
        person
            .send_json(
                &json!({"type": "decide", "id": five, "line": "reload in 7", "approve": true}),
            )
            .await;
        let (code, message) = refusal(&mut person).await;
        assert_eq!(code, "invalid_argument", "{message}");
        assert!(
            message.contains("a decision is for the line it was shown"),
            "{message}"
        );
        person
            .send_json(
                &json!({"type": "decide", "id": five, "line": "reload in 5", "approve": true}),
            )
            .await;
        person.until_json("decided").await;
        // Spent: the same approval again does nothing.
        person
            .send_json(
                &json!({"type": "decide", "id": five, "line": "reload in 5", "approve": true}),
            )
            .await;
        let (_, message) = refusal(&mut person).await;
        assert!(message.contains("no request"), "{message}");
        // An id no request on this port has (another port's, or none).
        person
            .send_json(
                &json!({"type": "decide", "id": 999_999, "line": "reload in 7", "approve": true}),
            )
            .await;
        let (_, message) = refusal(&mut person).await;
        assert!(message.contains("or is another port's"), "{message}");
        person
            .send_json(
                &json!({"type": "decide", "id": seven, "line": "reload in 7", "approve": false}),
            )
            .await;
        person.until_json("decided").await;
    };
    let (five, seven, ()) = tokio::join!(
        site.agent.call("send_text", json!({"text": "reload in 5"})),
        site.agent.call("send_text", json!({"text": "reload in 7"})),
        decide
    );
    five.expect("MCP").ok();
    assert!(seven.expect("MCP").err().starts_with("denied: "));
    assert!(site.sim.wait_received(b"reload in 5\r", DEADLINE).await);
    assert_eq!(site.received("reload in 5"), 1);
    assert_eq!(site.received("reload in 7"), 0);
}

#[tokio::test]
async fn the_requesting_token_cannot_approve_its_own_request() {
    let site = Site::start("60s").await;
    let url = format!("{}/ports/sw1/console", site.ws);
    let mut same = ConsoleConn::connect_ws(&url, Some(NOC))
        .await
        .expect("WebSocket");
    same.send_json(&json!({"type": "hello", "port": "sw1", "mode": "watch"}))
        .await;
    same.until_json("attached").await;
    let mut other = ConsoleConn::connect_ws(&url, Some(OPS))
        .await
        .expect("WebSocket");
    other
        .send_json(&json!({"type": "hello", "port": "sw1", "mode": "watch"}))
        .await;
    other.until_json("attached").await;
    let decide = async {
        let list = pending(&mut same, 1).await;
        let id = list[0]["id"].clone();
        same.send_json(&json!({"type": "decide", "id": id, "line": "reload", "approve": true}))
            .await;
        let (code, message) = refusal(&mut same).await;
        assert_eq!(code, "forbidden", "{message}");
        assert!(message.contains("four eyes"), "{message}");
        assert_eq!(site.received("reload"), 0);
        pending(&mut other, 1).await;
        other
            .send_json(&json!({"type": "decide", "id": id, "line": "reload", "approve": true}))
            .await;
        other.until_json("decided").await;
    };
    let (sent, ()) = tokio::join!(
        site.agent.call("send_text", json!({"text": "reload"})),
        decide
    );
    sent.expect("MCP").ok();
    assert!(site.sim.wait_received(b"reload\r", DEADLINE).await);
    assert_eq!(site.received("reload"), 1);
}

#[tokio::test]
async fn a_policy_may_let_a_token_approve_its_own_at_a_console() {
    let site = Site::start_with("60s", "mine", "[policies.mine]\nself_approve = true\n").await;
    let url = format!("{}/ports/sw1/console", site.ws);
    let mut same = ConsoleConn::connect_ws(&url, Some(NOC))
        .await
        .expect("WebSocket");
    same.send_json(&json!({"type": "hello", "port": "sw1", "mode": "watch"}))
        .await;
    same.until_json("attached").await;
    let decide = async {
        let list = pending(&mut same, 1).await;
        same.send_json(
            &json!({"type": "decide", "id": list[0]["id"], "line": "reload", "approve": true}),
        )
        .await;
        same.until_json("decided").await;
    };
    let (sent, ()) = tokio::join!(
        site.agent.call("send_text", json!({"text": "reload"})),
        decide
    );
    sent.expect("MCP").ok();
    assert!(site.sim.wait_received(b"reload\r", DEADLINE).await);
    assert_eq!(site.received("reload"), 1);
}

#[tokio::test]
async fn one_token_cannot_pile_up_requests() {
    let site = Site::start("3s").await;
    let (mut person, _) = ConsoleConn::attach(&site.socket, "sw1", "watch", json!({})).await;
    let cap = 8;
    let calls = (0..cap).map(|i| {
        site.agent
            .call("send_text", json!({"text": format!("reload in {}", i + 1)}))
    });
    let over = async {
        pending(&mut person, cap).await;
        let e = site
            .agent
            .call("send_text", json!({"text": "reload in 99"}))
            .await
            .expect("MCP")
            .err();
        assert!(
            e.starts_with("denied: ") && e.contains("already has 8 requests waiting"),
            "{e}"
        );
    };
    let (results, ()) = tokio::join!(futures_util::future::join_all(calls), over);
    for r in results {
        assert!(r.expect("MCP").err().contains("expired"));
    }
    assert_eq!(count(&site.sim.received(), b"reload in"), 0);
}

/// A client that keeps every progress notification it gets.
#[derive(Clone)]
struct Collector {
    progress: tokio::sync::mpsc::UnboundedSender<rmcp::model::ProgressNotificationParam>,
}

impl rmcp::ClientHandler for Collector {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

#[tokio::test]
async fn the_wait_reports_progress_and_cancelling_it_withdraws_the_request() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
    use rmcp::service::PeerRequestOptions;

    // The local operator over stdio, under the port's guarded.
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("sw1");
    let sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
        .await
        .expect("simulated device");
    let stdio_config = dir.path().join("serialgate.toml");
    std::fs::write(
        &stdio_config,
        format!(
            "[server]\nconsole_socket = \"console.sock\"\n\n\
             [ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\npolicy = \"guarded\"\n",
            link.display()
        ),
    )
    .expect("write config");
    let mut cmd = tokio::process::Command::new(serialgate_testkit::rig::binary());
    cmd.args(["serve", "--stdio", "--config"])
        .arg(&stdio_config)
        .env("SERIALGATE_LOG", "warn")
        .kill_on_drop(true);
    let (tx, mut progress) = tokio::sync::mpsc::unbounded_channel();
    let client = Collector { progress: tx }
        .serve(rmcp::transport::TokioChildProcess::new(cmd).expect("spawn"))
        .await
        .expect("MCP over stdio");
    let call = |tool: &str, args: Value| {
        let Value::Object(map) = args else {
            unreachable!("arguments are objects")
        };
        ClientRequest::CallToolRequest(Request::new(
            CallToolRequestParams::new(tool.to_owned()).with_arguments(map),
        ))
    };
    let ClientRequest::CallToolRequest(connect) = call("connect", json!({"port": "sw1"})) else {
        unreachable!()
    };
    client
        .peer()
        .call_tool(connect.params)
        .await
        .expect("connect");
    let socket = dir.path().join("console.sock");
    wait::eventually("the console socket", DEADLINE, async || {
        if socket.exists() {
            Ok(())
        } else {
            Err("not bound yet")
        }
    })
    .await;
    let (mut person, _) = ConsoleConn::attach(&socket, "sw1", "watch", json!({})).await;
    let handle = client
        .send_cancellable_request(
            call("send_text", json!({"text": "reload in 9"})),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send the call");
    let note = tokio::time::timeout(DEADLINE, progress.recv())
        .await
        .expect("progress in time")
        .expect("a progress notification");
    let message = note.message.unwrap_or_default();
    assert_eq!(note.progress_token, handle.progress_token);
    assert!(
        message.contains("waiting for a person's approval of \"reload in 9\" on sw1")
            && message.contains("serialgate console sw1")
            && message.contains("Ctrl-] y")
            && message.contains("Ctrl-] n"),
        "{message}"
    );
    let list = pending(&mut person, 1).await;
    assert_eq!(list[0]["line"], "reload in 9");
    handle
        .cancel(Some("the agent changed its mind".into()))
        .await
        .expect("cancel");
    // The request is gone from the console's list; nothing was sent.
    pending(&mut person, 0).await;
    let id = list[0]["id"].clone();
    person
        .send_json(&json!({"type": "decide", "id": id, "line": "reload in 9", "approve": true}))
        .await;
    let (_, message) = refusal(&mut person).await;
    assert!(message.contains("no request"), "{message}");
    assert_eq!(count(&sim.received(), b"reload in 9"), 0);
    client.cancel().await.ok();
}

/// A request waits under the rules it was judged by: a reload that keeps
/// them keeps it waiting (a person still approves it), and one that
/// changes the policies withdraws it, its caller told to call again and
/// nothing sent, so that nobody approves a line under rules that are gone.
#[tokio::test]
async fn a_reload_that_changes_the_policies_withdraws_what_waits() {
    let spare = "[policies.spare]\nself_approve = true\n";
    let mut site = Site::start_with("60s", "guarded", spare).await;
    let config = site.dir.path().join("serialgate.toml");
    let written = std::fs::read_to_string(&config).expect("the config");
    let (mut person, _) = ConsoleConn::attach(&site.socket, "sw1", "watch", json!({})).await;

    // The same policies: the request stays and is approved.
    let approve_after_reload = async {
        let list = pending(&mut person, 1).await;
        std::fs::write(&config, &written).expect("rewrite the config unchanged");
        site.daemon.signal(libc::SIGHUP);
        site.daemon.stderr.wait_for("reloaded").await;
        person
            .send_json(&json!({"type": "decide", "id": list[0]["id"], "line": "reload in 5", "approve": true}))
            .await;
        person.until_json("decided").await
    };
    let (sent, decided) = tokio::join!(
        site.agent
            .call("send_command", json!({"command": "reload in 5"})),
        approve_after_reload
    );
    assert_eq!(decided["approved"], true, "{decided}");
    sent.expect("MCP").ok();
    assert_eq!(site.received("reload in 5"), 1);

    // Changed policies: withdrawn, and a decision after it finds nothing.
    let (e, late) = reload_while_a_reload_waits(
        &site,
        &mut person,
        &config,
        written.replace(spare, "[policies.spare]\n"),
    )
    .await;
    assert!(
        e.starts_with("denied: ")
            && e.contains("withdrawn undecided")
            && e.contains("a reload changed the command policies")
            && e.contains("nothing was sent"),
        "{e}"
    );
    assert!(late.1.contains("no request"), "{late:?}");
    assert_eq!(site.received("reload"), 0);
    site.audited("approval withdrawn", "reload").await;
}

/// A request waits only while its caller may still write: a reload that
/// lowers the agent's token to read withdraws it, and a person's approval
/// after that sends nothing.
#[tokio::test]
async fn a_reload_that_lowers_the_waiting_callers_token_withdraws_its_request() {
    let site = Site::start_with("60s", "guarded", "").await;
    let config = site.dir.path().join("serialgate.toml");
    let written = std::fs::read_to_string(&config).expect("the config");
    let noc_writes =
        "secret_file = \"noc.token\"\napprove = true\nports = [\"*\"]\naccess = \"write\"";
    assert!(written.contains(noc_writes), "{written}");
    let (mut person, _) = ConsoleConn::attach(&site.socket, "sw1", "watch", json!({})).await;
    let (e, late) = reload_while_a_reload_waits(
        &site,
        &mut person,
        &config,
        written.replace(noc_writes, &noc_writes.replace("\"write\"", "\"read\"")),
    )
    .await;
    assert!(
        e.starts_with("denied: ")
            && e.contains("withdrawn undecided")
            && e.contains("a reload took the write access of the token that asked")
            && e.ends_with("nothing was sent"),
        "{e}"
    );
    assert!(late.1.contains("no request"), "{late:?}");
    assert_eq!(site.received("reload"), 0);
}
