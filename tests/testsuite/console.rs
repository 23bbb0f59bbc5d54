//! People at the console, server side: the real daemon with a console
//! socket beside MCP over stdio, a simulated switch, and a person's
//! connection spoken frame by frame. What the person sees (replay, live
//! output, who holds the write) and what the agent on the same port sees
//! (`busy` naming the person, writing again once they leave).

use std::time::Duration;

use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::console::{ConsoleConn, ConsoleSite, frame, user_name};
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use serialgate_testkit::wait;
use tempfile::TempDir;

async fn site(profile: Profile) -> ConsoleSite {
    ConsoleSite::start(profile).await
}

#[tokio::test]
async fn a_person_attaches_replays_types_and_shares_the_hold_with_an_agent() {
    let site = site(Profile::CiscoIos).await;
    // Output before anyone attaches: the replay shows it.
    site.agent
        .ok("connect", json!({"port": "sw1", "take_over": false}))
        .await;
    site.agent.ok("send_text", json!({"text": ""})).await;
    site.agent
        .ok("read_until_prompt", json!({"timeout": 5}))
        .await;
    site.agent.ok("disconnect", json!({})).await;

    let (mut person, attached) =
        ConsoleConn::attach(&site.socket, "sw1", "attach", json!({"replay_lines": 5})).await;
    let me = user_name();
    assert_eq!(attached["port"], "sw1");
    assert_eq!(attached["writing"], true, "{attached}");
    assert_eq!(attached["you"], format!("{me} on console"));
    assert_eq!(attached["state"], "open");
    person.until_output("SW1>").await;

    // Typed and answered.
    person.send_data(b"show clock\r").await;
    person.until_output("UTC").await;
    assert!(
        site.sim
            .wait_received(b"show clock\r", Duration::from_secs(5))
            .await,
        "the switch did not get the typed command"
    );

    // The agent may read, not write, and is told who holds the port.
    site.agent.ok("connect", json!({"port": "sw1"})).await;
    let busy = site
        .agent
        .err("send_text", json!({"text": "show version"}))
        .await;
    assert!(busy.starts_with("busy: "), "{busy}");
    assert!(busy.contains(&format!("{me} on console")), "{busy}");
    assert!(
        busy.contains("connect again with take_over: true"),
        "{busy}"
    );
    let status = site.agent.ok("status", json!({})).await;
    assert_eq!(
        status["writer"]["who"],
        format!("{me} on console"),
        "{status}"
    );

    // Detaching releases the hold: the agent writes.
    drop(person);
    // No MCP event tells an agent that a hold was released: poll.
    wait::eventually("the hold to be released", daemon::WITHIN, async || {
        wait::when(site.agent.ok("status", json!({})).await, |s| {
            s["writer"].is_null()
        })
    })
    .await;
    site.agent
        .ok("send_text", json!({"text": "show version"}))
        .await;
}

#[tokio::test]
async fn a_spy_sends_nothing_and_a_forced_take_over_tells_both_sides() {
    let site = site(Profile::CiscoIos).await;
    let (mut spy, attached) = ConsoleConn::attach(&site.socket, "sw1", "spy", json!({})).await;
    assert_eq!(attached["writing"], false);
    spy.send_data(b"reload\r").await;
    let refused = spy.until_json("error").await;
    assert_eq!(refused["code"], "forbidden", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("spying")
    );

    // The agent holds the port; a person attaching watches and is told.
    site.agent.ok("connect", json!({"port": "sw1"})).await;
    site.agent.ok("send_text", json!({"text": ""})).await;
    let (mut person, attached) =
        ConsoleConn::attach(&site.socket, "sw1", "attach", json!({})).await;
    assert_eq!(attached["writing"], false, "{attached}");
    assert!(
        attached["holder"]["who"]
            .as_str()
            .unwrap_or_default()
            .contains("session"),
        "{attached}"
    );
    // Typing meanwhile is busy, with the console's way to take the hold
    // (not MCP's).
    person.send_data(b"\r").await;
    let busy = person.until_json("error").await;
    assert_eq!(busy["code"], "busy", "{busy}");
    let message = busy["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("Ctrl-] f")
            && message.contains("--force")
            && !message.contains("take_over"),
        "{busy}"
    );
    // The person forces; the agent's next write is busy, naming them.
    person.send_json(&json!({"type": "force"})).await;
    let taken = person.until_json("holder").await;
    assert!(
        taken["what"]
            .as_str()
            .unwrap_or_default()
            .contains("took the write hold"),
        "{taken}"
    );
    let busy = site
        .agent
        .err("send_text", json!({"text": "show version"}))
        .await;
    assert!(busy.contains("on console"), "{busy}");
    // The agent takes it back; the person is told at once.
    site.agent
        .ok("connect", json!({"port": "sw1", "take_over": true}))
        .await;
    let back = person.until_json("holder").await;
    assert!(
        back["holder"]["who"]
            .as_str()
            .unwrap_or_default()
            .contains("session"),
        "{back}"
    );
    site.agent
        .ok("send_text", json!({"text": "show clock"}))
        .await;
    // The spy saw the agent's command answered and never wrote anything.
    spy.until_output("UTC").await;
    assert!(
        !String::from_utf8_lossy(&site.sim.received()).contains("reload"),
        "a spy's keys reached the switch"
    );
}

#[tokio::test]
async fn a_watcher_that_stops_reading_does_not_slow_the_agent() {
    let site = site(Profile::CiscoIos).await;
    let (_stalled, _) = ConsoleConn::attach(&site.socket, "sw1", "spy", json!({})).await;
    site.agent.ok("connect", json!({"port": "sw1"})).await;
    site.agent.ok("send_text", json!({"text": ""})).await;
    site.agent
        .ok("read_until_prompt", json!({"timeout": 5}))
        .await;
    site.agent.ok("send_text", json!({"text": "enable"})).await;
    site.agent
        .ok(
            "read_until_prompt",
            json!({"prompt": "Password: ", "timeout": 5}),
        )
        .await;
    site.agent
        .ok("send_text", json!({"text": sim::cisco::ENABLE_PASSWORD}))
        .await;
    site.agent
        .ok("read_until_prompt", json!({"timeout": 5}))
        .await;
    // Far more output (1.2 MB) than the stalled watcher's socket buffer
    // and queue hold: the watcher falls behind, the agent does not.
    for _ in 0..16 {
        let run = site
            .agent
            .ok(
                "send_command",
                json!({"command": "show running-config", "timeout": 30}),
            )
            .await;
        assert_eq!(run["matched"], true, "{run}");
    }
}

#[tokio::test]
async fn bad_connections_get_a_reason_and_change_nothing() {
    let site = site(Profile::Silent).await;
    // Data before hello.
    let mut c = ConsoleConn::connect(&site.socket).await;
    c.send_data(b"hello?").await;
    let said = c.until_closed().await;
    assert!(said.iter().any(|m| m["type"] == "bye"), "{said:?}");
    // Not the protocol at all.
    let mut c = ConsoleConn::connect(&site.socket).await;
    c.send_raw(b"GET / HTTP/1.1\r\n\r\n").await;
    c.until_closed().await;
    // A length prefix of 4 GiB is refused before anything is read.
    let mut c = ConsoleConn::connect(&site.socket).await;
    c.send_raw(&[b'J', 0xff, 0xff, 0xff, 0xff]).await;
    c.until_closed().await;
    // Unknown port, and a hostile name: the reason is bounded and quoted.
    let mut c = ConsoleConn::connect(&site.socket).await;
    let name = format!("\x1b[2J{}", "x".repeat(10_000));
    c.send_json(&json!({"type": "hello", "port": name, "mode": "attach"}))
        .await;
    let said = c.until_closed().await;
    let bye: Vec<&Value> = said.iter().filter(|m| m["type"] == "bye").collect();
    let reason = bye[0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("no port"), "{reason}");
    assert!(reason.len() < 400 && !reason.contains('\x1b'), "{reason}");
    // Unknown fields and message types.
    let mut c = ConsoleConn::connect(&site.socket).await;
    c.send_raw(&frame(
        b'J',
        br#"{"type":"hello","port":"sw1","mode":"attach","sudo":true}"#,
    ))
    .await;
    assert!(c.until_closed().await.iter().any(|m| m["type"] == "bye"));
    // An oversized data frame while attached: refused, the session goes on.
    let (mut c, _) = ConsoleConn::attach(&site.socket, "sw1", "attach", json!({})).await;
    c.send_data(&vec![b'x'; 5000]).await;
    let refused = c.until_json("error").await;
    assert_eq!(refused["code"], "invalid_argument", "{refused}");
    c.send_json(&json!({"type": "who"})).await;
    let who = c.until_json("who").await;
    assert_eq!(who["watchers"].as_array().map(Vec::len), Some(1), "{who}");
    assert!(site.sim.received().is_empty(), "bytes reached the device");
    // Through all of it the daemon serves its agent.
    site.agent.ok("list_ports", json!({})).await;
}

#[tokio::test]
async fn the_list_shows_watchers_and_the_holder() {
    let site = site(Profile::Silent).await;
    let (_person, _) = ConsoleConn::attach(&site.socket, "sw1", "attach", json!({})).await;
    let mut c = ConsoleConn::connect(&site.socket).await;
    c.send_json(&json!({"type": "list"})).await;
    let ports = c.until_json("ports").await;
    let sw1 = &ports["ports"][0];
    assert_eq!(sw1["name"], "sw1", "{ports}");
    assert_eq!(sw1["watchers"].as_array().map(Vec::len), Some(1), "{ports}");
    assert_eq!(
        sw1["holder"]["who"],
        format!("{} on console", user_name()),
        "{ports}"
    );
}

/// The daemon serving HTTP with three tokens, and a switch at `<dir>/sw1`.
async fn http_site() -> (SimHandle, Daemon, String, NotifySocket, TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("sw1");
    let sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
        .await
        .expect("simulated device");
    let tokens = daemon::tokens_toml(
        dir.path(),
        &[
            ("noc", "noc-secret-0123456789", r#"["sw*"]"#, "write"),
            ("audit", "audit-secret-0123456789", r#"["sw*"]"#, "read"),
            ("lab", "lab-secret-0123456789", r#"["lab-*"]"#, "admin"),
        ],
    );
    let config = dir.path().join("serialgate.toml");
    std::fs::write(
        &config,
        format!(
            "[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n\n{tokens}",
            link.display()
        ),
    )
    .expect("write config");
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    let url = daemon.http_url().await;
    // The port has had its first open attempt: typed bytes find it open.
    notify.expect("READY=1").await;
    let base = url.trim_end_matches("/mcp").replacen("http://", "ws://", 1);
    (sim, daemon, base, notify, dir)
}

#[tokio::test]
async fn over_http_the_token_decides_what_a_person_may_do() {
    let (sim, _daemon, base, _notify, _dir) = http_site().await;
    let url = format!("{base}/ports/sw1/console");
    // No token, a wrong one: no WebSocket at all.
    assert_eq!(
        ConsoleConn::connect_ws(&url, None).await.err().as_deref(),
        Some("HTTP 401")
    );
    assert_eq!(
        ConsoleConn::connect_ws(&url, Some("guess"))
            .await
            .err()
            .as_deref(),
        Some("HTTP 401")
    );
    // A read token watches and cannot write.
    let mut audit = ConsoleConn::connect_ws(&url, Some("audit-secret-0123456789"))
        .await
        .expect("WebSocket");
    audit
        .send_json(&json!({"type": "hello", "port": "sw1", "mode": "attach"}))
        .await;
    let attached = audit.until_json("attached").await;
    assert_eq!(attached["writing"], false, "{attached}");
    assert_eq!(attached["you"], "audit on console");
    audit.send_data(b"reload\r").await;
    let refused = audit.until_json("error").await;
    assert_eq!(refused["code"], "forbidden", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("read access")
    );
    // A write token types and sees the answer; the read token sees it too.
    let mut noc = ConsoleConn::connect_ws(&url, Some("noc-secret-0123456789"))
        .await
        .expect("WebSocket");
    noc.send_json(&json!({"type": "hello", "port": "sw1", "mode": "attach"}))
        .await;
    let attached = noc.until_json("attached").await;
    assert_eq!(attached["writing"], true, "{attached}");
    noc.send_data(b"\r").await;
    noc.until_output("SW1>").await;
    noc.send_data(b"show clock\r").await;
    noc.until_output("UTC").await;
    audit.until_output("UTC").await;
    assert!(!String::from_utf8_lossy(&sim.received()).contains("reload"));
    // A token whose globs do not reach sw1 learns nothing about it.
    let mut lab = ConsoleConn::connect_ws(&url, Some("lab-secret-0123456789"))
        .await
        .expect("WebSocket");
    lab.send_json(&json!({"type": "hello", "port": "sw1", "mode": "force"}))
        .await;
    let said = lab.until_closed().await;
    assert!(
        said.iter()
            .any(|m| m["type"] == "bye"
                && m["reason"].as_str().unwrap_or_default().contains("no port")),
        "{said:?}"
    );
    // The URL's port and the hello's must agree.
    let mut other = ConsoleConn::connect_ws(
        &format!("{base}/ports/sw2/console"),
        Some("noc-secret-0123456789"),
    )
    .await
    .expect("WebSocket");
    other
        .send_json(&json!({"type": "hello", "port": "sw1", "mode": "spy"}))
        .await;
    assert!(
        other
            .until_closed()
            .await
            .iter()
            .any(|m| m["type"] == "bye")
    );
    // /console lists what the token reaches.
    let mut list =
        ConsoleConn::connect_ws(&format!("{base}/console"), Some("audit-secret-0123456789"))
            .await
            .expect("WebSocket");
    list.send_json(&json!({"type": "list"})).await;
    let ports = list.until_json("ports").await;
    assert_eq!(ports["ports"].as_array().map(Vec::len), Some(1), "{ports}");
    assert_eq!(
        ports["ports"][0]["holder"]["who"], "noc on console",
        "{ports}"
    );
}

#[tokio::test]
async fn a_reconnecting_client_resumes_at_its_offset_and_a_replug_is_told() {
    let mut site = site(Profile::Silent).await;
    let (mut first, attached) =
        ConsoleConn::attach(&site.socket, "sw1", "spy", json!({"replay_lines": 0})).await;
    let start = attached["start"].as_u64().expect("start");
    site.sim.inject(b"one\r\n").await;
    first.until_output("one\r\n").await;
    let seen = start + first.output.len() as u64;
    drop(first);
    // Output while nobody watches, then a reconnect from where it left.
    site.sim.inject(b"two\r\n").await;
    let (mut again, attached) =
        ConsoleConn::attach(&site.socket, "sw1", "spy", json!({"from": seen})).await;
    assert_eq!(attached["start"], seen, "{attached}");
    again.until_output("two\r\n").await;
    assert_eq!(
        String::from_utf8_lossy(&again.output),
        "two\r\n",
        "nothing twice"
    );

    // The device goes away and comes back: the watcher is told, and the
    // session goes on with the new output.
    let link = site.sim.path().to_owned();
    site.sim.close().await;
    let lost = again.until_json("state").await;
    assert!(
        lost["state"] == "lost" || lost["state"] == "reopening",
        "{lost}"
    );
    site.sim = sim::spawn(Profile::Silent, Some(link))
        .await
        .expect("replug");
    loop {
        let state = again.until_json("state").await;
        if state["state"] == "open" {
            break;
        }
    }
    site.sim.inject(b"three\r\n").await;
    again.until_output("three\r\n").await;
}

#[tokio::test]
async fn a_watcher_that_reads_nothing_is_dropped_and_leaves_the_list() {
    let mut site = site(Profile::Silent).await;
    let (mut stalled, _) = ConsoleConn::attach(&site.socket, "sw1", "spy", json!({})).await;
    // Far more than the socket buffer and the session's queue hold.
    let line = [b'x'; 1023];
    for _ in 0..8192 {
        site.sim.inject(&[&line[..], b"\n"].concat()).await;
    }
    // The daemon gives up on it after 10 s of reading nothing, and says so
    // in its log; reading now drains what was queued, then the connection
    // ends.
    site.daemon
        .stderr
        .wait_for("console session ended: this console read nothing")
        .await;
    stalled.until_closed().await;
    let status = site.agent.ok("list_ports", json!({})).await;
    assert_eq!(status["ports"][0]["people"], json!([]), "{status}");
}

#[tokio::test]
async fn over_http_oversized_and_out_of_order_messages_end_only_that_connection() {
    let (sim, _daemon, base, _notify, _dir) = http_site().await;
    let url = format!("{base}/ports/sw1/console");
    let token = Some("noc-secret-0123456789");
    // A message over the 64 KiB limit: the WebSocket is closed.
    let mut big = ConsoleConn::connect_ws(&url, token)
        .await
        .expect("WebSocket");
    big.send_json(&json!({"type": "hello", "port": "x".repeat(70_000), "mode": "attach"}))
        .await;
    big.until_closed().await;
    // Data before hello: a reason, then the close.
    let mut early = ConsoleConn::connect_ws(&url, token)
        .await
        .expect("WebSocket");
    early.send_data(b"reload\r").await;
    let said = early.until_closed().await;
    assert!(said.iter().any(|m| m["type"] == "bye"), "{said:?}");
    // A hello with control characters in the client name is kept as a
    // bounded, printable label.
    let mut odd = ConsoleConn::connect_ws(&url, token)
        .await
        .expect("WebSocket");
    odd.send_json(&json!({"type": "hello", "port": "sw1", "mode": "spy",
        "client": format!("\x1b[2J\r\n{}", "y".repeat(500))}))
        .await;
    odd.until_json("attached").await;
    odd.send_json(&json!({"type": "who"})).await;
    let who = odd.until_json("who").await;
    assert_eq!(who["watchers"].as_array().map(Vec::len), Some(1), "{who}");
    // None of it reached the switch, and a good connection still works.
    let mut good = ConsoleConn::connect_ws(&url, token)
        .await
        .expect("WebSocket");
    good.send_json(&json!({"type": "hello", "port": "sw1", "mode": "attach"}))
        .await;
    assert_eq!(good.until_json("attached").await["writing"], true);
    assert!(!String::from_utf8_lossy(&sim.received()).contains("reload"));
}

#[tokio::test]
async fn a_flood_of_silent_connections_is_capped_then_timed_out() {
    let site = site(Profile::Silent).await;
    // Every slot taken by a connection that never says hello.
    let mut silent = Vec::new();
    for _ in 0..256 {
        silent.push(ConsoleConn::connect(&site.socket).await);
    }
    // One more is told why, and closed; the agent is served meanwhile.
    let mut over = ConsoleConn::connect(&site.socket).await;
    let said = over.until_closed().await;
    let reason = said[0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("256 connections"), "{said:?}");
    site.agent.ok("list_ports", json!({})).await;
    // The hello deadline ends the silent ones, each with a reason.
    for conn in &mut silent {
        let said = conn.until_closed().await;
        assert!(
            said.iter().any(|m| m["reason"]
                .as_str()
                .is_some_and(|r| r.contains("say hello first"))),
            "{said:?}"
        );
    }
    // The slots are free again.
    let (_person, attached) = ConsoleConn::attach(&site.socket, "sw1", "spy", json!({})).await;
    assert_eq!(attached["port"], "sw1", "{attached}");
}
