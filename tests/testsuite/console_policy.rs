//! Typing at a console under a command policy, against the real daemon
//! and the simulated Cisco switch: a token's console (the WebSocket door)
//! is judged by the policy its MCP calls are judged by, so that the
//! console is no way around it; each line is judged at Enter, whatever
//! editing made it and whatever the device's line held before, and a
//! refused line is cleared on the device, never run; a line that needs
//! approval waits for another person and runs once approved. A person of
//! `[[people]]` is judged only under their own `policy`, at the SSH door
//! with OpenSSH's own client.

use std::time::Duration;

use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::client::GateClient;
use serialgate_testkit::console::ConsoleConn;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use tempfile::TempDir;

use super::console_client::Terminal;
use super::ssh::{Door, exit_code, have_openssh};

const AGENT: &str = "agent-secret-0123456789";
const OPS: &str = "ops-secret-0123456789";
/// How long any one expected thing may take.
const DEADLINE: Duration = Duration::from_secs(20);

/// The switch on `sw1` under the port's default policy `locked`; tokens
/// `agent` (write, no policy of its own: the port's applies) and `ops`
/// (write, `policy = "none"`).
struct Site {
    sim: SimHandle,
    daemon: Daemon,
    _notify: NotifySocket,
    base: String,
    /// The MCP URL.
    url: String,
    dir: TempDir,
}

impl Site {
    async fn start() -> Site {
        Site::start_under("locked").await
    }

    /// [`Site::start`] with sw1's default policy `policy`.
    async fn start_under(policy: &str) -> Site {
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("sw1");
        let sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
            .await
            .expect("simulated switch");
        let tokens = daemon::tokens_toml(
            dir.path(),
            &[
                ("agent", AGENT, r#"["*"]"#, "write"),
                ("ops", OPS, r#"["*"]"#, "write"),
            ],
        );
        let tokens = daemon::with_token_keys(&tokens, "ops", "policy = \"none\"\n");
        let tokens = daemon::approving(&tokens, &["ops"]);
        let config = dir.path().join("serialgate.toml");
        std::fs::write(
            &config,
            format!(
                "[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\npolicy = \"{policy}\"\n\n{tokens}",
                link.display()
            ),
        )
        .expect("write config");
        let notify = NotifySocket::bind(dir.path());
        let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
        let url = daemon.http_url().await;
        notify.expect("READY=1").await;
        Site {
            sim,
            daemon,
            _notify: notify,
            base: url.trim_end_matches("/mcp").replacen("http://", "ws://", 1),
            url: url.clone(),
            dir,
        }
    }

    /// A console on sw1 with `secret`, holding the write.
    async fn console(&self, secret: &str) -> ConsoleConn {
        let (conn, attached) = self.console_in(secret, "attach").await;
        assert_eq!(attached["writing"], true, "{attached}");
        conn
    }

    /// A console on sw1 with `secret` in `mode`, and its `attached`.
    async fn console_in(&self, secret: &str, mode: &str) -> (ConsoleConn, Value) {
        let url = format!("{}/ports/sw1/console", self.base);
        ConsoleConn::attach_ws(&url, Some(secret), "sw1", mode, json!({}))
            .await
            .expect("the console WebSocket")
    }
}

/// Types `keys` and returns the refusal the console answers with.
async fn refused(conn: &mut ConsoleConn, keys: &[u8]) -> String {
    conn.send_data(keys).await;
    let error: Value = conn.until_json("error").await;
    assert_eq!(error["code"], "denied", "{error}");
    error["message"].as_str().unwrap_or_default().to_owned()
}

/// Gives up the write hold and closes the console.
async fn release(mut conn: ConsoleConn) {
    conn.send_json(&json!({"type": "release"})).await;
    loop {
        let holder = conn.until_json("holder").await;
        if holder["holder"].is_null() {
            return;
        }
    }
}

/// Whether the switch received `needle` anywhere.
fn received(sim: &SimHandle, needle: &[u8]) -> bool {
    sim.received().windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn a_token_s_console_is_judged_as_its_mcp_calls_are_and_a_refused_line_is_never_run() {
    let site = Site::start().await;
    let mut agent = site.console(AGENT).await;
    agent.send_data(b"\r").await;
    agent.until_output("SW1>").await;
    agent.send_data(b"show clock\r").await;
    agent.until_output("UTC").await;

    // Every spelling of reload, however the line was edited, is refused
    // at Enter, and the Enter never reaches the switch.
    let spellings: [&[u8]; 6] = [
        b"reload\r",
        b"RELOAD \r",
        b"rel\r",
        b"relo\x7f\x7f\x7f\x7freload\r",
        b"show clock\x15reload\r",
        b"  reload   in 5\r\n",
    ];
    for keys in spellings {
        let why = refused(&mut agent, keys).await;
        assert!(
            why.contains("never runs it") && why.contains("locked"),
            "{keys:?}: {why}"
        );
    }
    // A paste: the allowed first line runs, the second is refused.
    agent.send_data(b"terminal length 0\rreload\r").await;
    let error = agent.until_json("error").await;
    assert_eq!(error["code"], "denied", "{error}");
    assert!(
        site.sim
            .wait_received(b"terminal length 0\r", Duration::from_secs(5))
            .await
    );

    // Keys that edit the line out of the gateway's sight are refused
    // before they reach the switch.
    for (keys, what) in [
        (&b"rel\t"[..], "a tab"),
        (&b"\x1b[A"[..], "an escape sequence"),
        (&b"\x10"[..], "a control character"),
        (&b"reload ?"[..], "'?'"),
    ] {
        let why = refused(&mut agent, keys).await;
        assert!(why.contains(what), "{keys:?}: {why}");
    }
    assert!(
        !received(&site.sim, b"\t") && !received(&site.sim, b"\x1b") && !received(&site.sim, b"?")
    );
    // What those left typed is cleared with Ctrl-U before the next line.
    agent.send_data(b"\x15").await;

    // A BREAK from the console is refused as over MCP.
    agent.send_json(&json!({"type": "break"})).await;
    let error = agent.until_json("error").await;
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("a BREAK"),
        "{error}"
    );

    for run in [&b"reload\r"[..], b"RELOAD \r", b"rel\r", b"reload   in 5\r"] {
        assert!(!received(&site.sim, run), "the switch got {run:?}");
    }
    // The switch's line is clean: an ordinary command still runs.
    agent.send_data(b"show clock\r").await;
    assert!(
        site.sim
            .wait_received(b"\x15show clock\r", Duration::from_secs(5))
            .await
    );

    // Text another writer left on the switch's line counts: `ops` (no
    // policy) types half of reload and leaves; the agent's "ad" would run
    // it, and is refused.
    release(agent).await;
    let mut ops = site.console(OPS).await;
    ops.send_data(b"relo").await;
    assert!(
        site.sim
            .wait_received(b"relo", Duration::from_secs(5))
            .await
    );
    release(ops).await;
    let mut agent = site.console(AGENT).await;
    let why = refused(&mut agent, b"ad\r").await;
    assert!(why.contains("\"reload\""), "{why}");
    assert!(!received(&site.sim, b"reload\r") && !received(&site.sim, b"ad\r"));

    // Each refusal is in the port's events (and its audit trail), naming
    // who typed it and the line.
    let mcp = GateClient::connect_http(&site.url, Some(OPS))
        .await
        .expect("MCP over HTTP");
    mcp.call("connect", json!({"port": "sw1"}))
        .await
        .expect("MCP")
        .ok();
    let status = mcp
        .call("status", json!({}))
        .await
        .expect("MCP")
        .ok()
        .to_string();
    assert!(
        status.contains("agent on console was refused: \\\"RELOAD\\\""),
        "{status}"
    );
    // The same token over MCP: refused alike, and recorded alike.
    let mcp = GateClient::connect_http(&site.url, Some(AGENT))
        .await
        .expect("MCP over HTTP");
    mcp.call("connect", json!({"port": "sw1"}))
        .await
        .expect("MCP")
        .ok();
    let e = mcp
        .call("send_command", json!({"command": "reload"}))
        .await
        .expect("MCP")
        .err();
    assert!(e.starts_with("denied: "), "{e}");
    let status = mcp
        .call("status", json!({}))
        .await
        .expect("MCP")
        .ok()
        .to_string();
    assert!(status.contains("token agent) was refused"), "{status}");
}

#[tokio::test]
async fn a_token_under_a_policy_that_judges_nothing_types_freely() {
    let site = Site::start().await;
    let mut ops = site.console(OPS).await;
    ops.send_data(b"\r").await;
    ops.until_output("SW1>").await;
    // A tab and '?' reach the switch, as without any policy.
    ops.send_data(b"sh\t?").await;
    assert!(
        site.sim
            .wait_received(b"sh\t?", Duration::from_secs(5))
            .await
    );
}

#[tokio::test]
async fn a_person_is_judged_only_by_the_policy_their_own_entry_names() {
    if !have_openssh() {
        return;
    }
    // sw1's default policy is `locked`: no person is under it. carol's
    // entry then names `locked` for herself.
    let mut door = Door::start_with("policy = \"locked\"").await;
    let mut alice_screen = Terminal::open();
    let mut alice = door.ssh(Some(&alice_screen), "alice:sw1", "alice", &["-tt"]);
    alice_screen.read_until("you hold the write").await;
    // A tab, which a policy would refuse, reaches the switch from her.
    alice_screen.type_keys(b"\rshow clock\t\r");
    alice_screen.read_until("UTC").await;
    assert!(
        door.sim
            .wait_received(b"show clock\t\r", Duration::from_secs(5))
            .await
    );
    alice_screen.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut alice).await, Some(0));

    let text = std::fs::read_to_string(&door.config).expect("read the config");
    let carol = "name = \"carol\"\nauthorized_keys = \"carol.keys\"\n";
    assert!(text.contains(carol), "{text}");
    std::fs::write(
        &door.config,
        text.replace(carol, &format!("{carol}policy = \"locked\"\n")),
    )
    .expect("write the config");
    door.daemon.signal(libc::SIGHUP);
    door.daemon.stderr.wait_for("reloaded").await;

    let mut screen = Terminal::open();
    let mut ssh = door.ssh(Some(&screen), "carol:sw1", "carol", &["-tt"]);
    screen.read_until("you hold the write").await;
    screen.type_keys(b"show clock\r");
    assert!(
        door.sim
            .wait_received(b"show clock\r", Duration::from_secs(5))
            .await
    );
    screen.type_keys(b"reload\r");
    screen.read_until("never runs it").await;
    screen.type_keys(b"sh\t");
    screen.read_until("a tab").await;
    assert!(!received(&door.sim, b"reload\r") && !received(&door.sim, b"sh\t"));
    screen.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut ssh).await, Some(0));
}

/// The requests waiting on sw1 once `n` wait, as `conn` is told them.
async fn waiting(conn: &mut ConsoleConn, n: usize) -> Vec<Value> {
    loop {
        let list = conn.until_json("approvals").await;
        let pending = list["pending"].as_array().cloned().unwrap_or_default();
        if pending.len() == n {
            return pending;
        }
    }
}

#[tokio::test]
async fn a_guarded_line_typed_at_a_console_waits_for_another_person_and_runs_only_once_approved() {
    let site = Site::start_under("guarded").await;
    let mut agent = site.console(AGENT).await;
    let (mut ops, _) = site.console_in(OPS, "watch").await;
    agent.send_data(b"\r").await;
    agent.until_output("SW1>").await;

    // Held: the Enter waits; typing meanwhile is refused.
    agent.send_data(b"reload in 5\r").await;
    let pending = waiting(&mut ops, 1).await;
    assert_eq!(pending[0]["line"], "reload in 5", "{pending:?}");
    assert!(!received(&site.sim, b"reload in 5\r"));
    let why = refused(&mut agent, b"show clock\r").await;
    assert!(why.contains("waits for a person's approval"), "{why}");
    // An agent's token decides nothing: it has no approve right (and it
    // is the requester's own besides).
    agent
        .send_json(&json!({"type": "decide", "id": pending[0]["id"], "line": "reload in 5", "approve": true}))
        .await;
    let error = agent.until_json("error").await;
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("may not decide requests for approval")),
        "{error}"
    );
    assert!(!received(&site.sim, b"reload in 5\r"), "{error}");

    // Denied: cleared, never run, and the typist told who denied it.
    ops.send_json(
        &json!({"type": "decide", "id": pending[0]["id"], "line": "reload in 5", "approve": false}),
    )
    .await;
    ops.until_json("decided").await;
    let why = agent.until_json("error").await["message"].to_string();
    assert!(
        why.contains("was denied by") && why.contains("ops"),
        "{why}"
    );
    assert!(
        site.sim
            .wait_received(b"reload in 5\x15", Duration::from_secs(5))
            .await
    );

    // Ctrl-C withdraws a waiting line.
    agent.send_data(b"reload in 6\r").await;
    waiting(&mut ops, 1).await;
    agent.send_data(b"\x03").await;
    let why = agent.until_json("error").await["message"].to_string();
    assert!(
        why.contains("reload in 6")
            && why.contains("was withdrawn (request ")
            && why.contains("on sw1); it was not run"),
        "{why}"
    );
    waiting(&mut ops, 0).await;

    // Approved: exactly that line runs.
    agent.send_data(b"reload in 7\r").await;
    let pending = waiting(&mut ops, 1).await;
    ops.send_json(
        &json!({"type": "decide", "id": pending[0]["id"], "line": "reload in 7", "approve": true}),
    )
    .await;
    ops.until_json("decided").await;
    assert!(
        site.sim
            .wait_received(b"reload in 7\r", Duration::from_secs(5))
            .await
    );
    assert!(!received(&site.sim, b"reload in 5\r") && !received(&site.sim, b"reload in 6\r"));
}

/// FRRouting's own vtysh (readline: real line editing, history recall
/// and tab completion) behind a token's console under `locked`: `no
/// router bgp` typed in configuration mode is refused in its spellings and
/// BGP stays configured, the keys readline would edit with are refused,
/// and an ordinary change goes through.
#[tokio::test]
async fn at_vtysh_a_typed_no_router_bgp_never_runs_and_bgp_stays_configured() {
    use serialgate_testkit::frr::{self, Frr};
    use serialgate_testkit::program::ProgramLine;
    if let Err(why) = frr::installed() {
        eprintln!("skipped: {why} (.ci/run installs frr)");
        assert!(std::env::var_os("CI").is_none(), "CI must have FRRouting");
        return;
    }
    let frr = Frr::start().await.expect("FRRouting");
    frr.vtysh_c(&[
        "configure terminal",
        "router bgp 65001",
        "bgp router-id 10.255.0.1",
        "end",
    ])
    .await
    .expect("configure BGP");
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("r1");
    let _line = ProgramLine::spawn(frr.vtysh(), &link).expect("program line");
    let tokens = daemon::tokens_toml(dir.path(), &[("agent", AGENT, r#"["*"]"#, "write")]);
    let config = dir.path().join("serialgate.toml");
    std::fs::write(
        &config,
        format!(
            "[ports.r1]\ndevice = {:?}\npreset = \"frr\"\npolicy = \"locked\"\n\n{tokens}",
            link.display()
        ),
    )
    .expect("write config");
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    let url = daemon.http_url().await;
    notify.expect("READY=1").await;
    let ws = url.trim_end_matches("/mcp").replacen("http://", "ws://", 1);
    let (mut console, _) = ConsoleConn::attach_ws(
        &format!("{ws}/ports/r1/console"),
        Some(AGENT),
        "r1",
        "attach",
        json!({}),
    )
    .await
    .expect("the console WebSocket");
    console.send_data(b"\r").await;
    console.until_output("r1#").await;
    console.send_data(b"configure terminal\r").await;
    console.until_output("r1(config)#").await;

    for keys in [
        &b"no router bgp 65001\r"[..],
        b"no rou bgp 65001\r",
        b"NO   ROUTER BGP\r",
        b"no router ospf\x7f\x7f\x7f\x7fbgp 65001\r",
    ] {
        let why = refused(&mut console, keys).await;
        assert!(why.contains("no router"), "{keys:?}: {why}");
    }
    for (keys, what) in [
        (&b"no rou\t"[..], "a tab"),
        (&b"\x1b[A"[..], "an escape sequence"),
        (&b"\x10"[..], "a control character"),
        (&b"\x12"[..], "a control character"),
    ] {
        let why = refused(&mut console, keys).await;
        assert!(why.contains(what), "{keys:?}: {why}");
    }
    console
        .send_data(b"\x15ip route 192.168.61.0/24 Null0\rend\r")
        .await;
    console.until_output("r1#").await;
    serialgate_testkit::wait::eventually(
        "the route in vtysh's running config",
        DEADLINE,
        async || {
            let running = frr
                .vtysh_c(&["show running-config"])
                .await
                .map_err(|e| e.to_string())?;
            serialgate_testkit::wait::when(running, |r| {
                r.contains("ip route 192.168.61.0/24 Null0")
            })
        },
    )
    .await;
    let running = frr.vtysh_c(&["show running-config"]).await.expect("vtysh");
    assert!(
        running.lines().any(|l| l == "router bgp 65001"),
        "{running}"
    );
}

#[tokio::test]
async fn a_held_line_is_withdrawn_when_its_token_loses_write_access() {
    let mut site = Site::start_under("guarded").await;
    let mut agent = site.console(AGENT).await;
    let (mut ops, _) = site.console_in(OPS, "watch").await;
    agent.send_data(b"\r").await;
    agent.until_output("SW1>").await;
    agent.send_data(b"reload in 8\r").await;
    waiting(&mut ops, 1).await;

    // A reload lowers the agent's token to read: its console only
    // watches, and the line it typed no longer waits.
    let config = site.dir.path().join("serialgate.toml");
    let text = std::fs::read_to_string(&config).expect("read the config");
    let lowered = text.replacen("access = \"write\"", "access = \"read\"", 1);
    assert!(
        lowered.contains(
            "name = \"agent\"\nsecret_file = \"agent.token\"\nports = [\"*\"]\naccess = \"read\""
        ),
        "{lowered}"
    );
    std::fs::write(&config, lowered).expect("write the config");
    site.daemon.signal(libc::SIGHUP);
    site.daemon.stderr.wait_for("reloaded").await;
    waiting(&mut ops, 0).await;
    assert!(!received(&site.sim, b"reload in 8\r"));
    let why = refused_any(&mut agent, b"x").await;
    assert!(
        why.contains(r#"typing into \"sw1\" (as send_keys) needs write access, and token \"agent\" has read access"#),
        "{why}"
    );
    assert!(!received(&site.sim, b"reload in 8\r") && !received(&site.sim, b"reload in 8\x15"));
}

/// Types `keys` and returns the refusal, whatever its code.
async fn refused_any(conn: &mut ConsoleConn, keys: &[u8]) -> String {
    conn.send_data(keys).await;
    conn.until_json("error").await["message"].to_string()
}
