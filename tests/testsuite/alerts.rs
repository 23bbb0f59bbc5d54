//! Standing watches end to end: a device on a real pseudo-terminal prints
//! a crash banner split across reads while no session is connected; the
//! alert is there with its byte range, in the daemon's log at its level,
//! and a client subscribed to the port's alerts resource (over stdio and
//! over HTTP) is told of it, while a token scoped to other
//! ports neither reads nor hears of it. The `alerts` tool lists alerts
//! since a cursor and keeps a session's own watches, refusing bad ones.

use std::time::Duration;

use serde_json::{Value, json};
use serialgate_sim::pty::Pty;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket, WITHIN};
use serialgate_testkit::rig::num;
use serialgate_testkit::updates::{UpdatesClient, next_updated};
use serialgate_testkit::wait;
use tempfile::TempDir;

/// How long a subscribed client's wait for an alert's notification may
/// last before the test fails: a deadline on the event, not a measure of
/// how soon it comes (a busy machine may take seconds; the daemon pushes
/// the notification at once, and a missing one never comes).
const TOLD_WITHIN: Duration = Duration::from_secs(20);

const BEFORE: &[u8] = b"\r\nSW1 uptime is 3 weeks\r\nUnexpected exc";
const AFTER: &[u8] = b"eption to CPU: vector 1500, PC = 0x0\r\n";
const MATCHED: &str = "Unexpected exception to CPU";

/// `list_ports`' entry of `port` (no connection needed).
async fn listed(client: &UpdatesClient, port: &str) -> Value {
    let ports = client.call("list_ports", json!({})).await.ok();
    ports["ports"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == port))
        .cloned()
        .unwrap_or_else(|| panic!("no port {port} in {ports}"))
}

/// Polls `list_ports` until `port` satisfies `done` (the daemon tells no
/// client of its reads; this is the point-in-time view an agent has).
async fn wait_listed(client: &UpdatesClient, port: &str, done: impl Fn(&Value) -> bool) {
    let what = format!("{port} to get there in list_ports");
    wait::eventually(&what, WITHIN, async || {
        wait::when(listed(client, port).await, &done)
    })
    .await;
}

/// Prints the crash banner on `pty` in two reads (the second written only
/// once the daemon has the first in its log), and returns the offset the
/// match starts at.
async fn crash_in_two_reads(client: &UpdatesClient, port: &str, pty: &Pty) -> u64 {
    wait_listed(client, port, |p| p["state"] == "open").await;
    let head = num(&listed(client, port).await, "head");
    pty.write_all(BEFORE).await.unwrap();
    let first = head + BEFORE.len() as u64;
    wait_listed(client, port, |p| num(p, "head") == first).await;
    pty.write_all(AFTER).await.unwrap();
    first - "Unexpected exc".len() as u64
}

fn alerts_uri(port: &str) -> String {
    format!("serialgate://ports/{port}/alerts")
}

fn config(dir: &TempDir, ports: &[(&str, &Pty)], extra: &str) -> std::path::PathBuf {
    let mut text = String::from(extra);
    for (name, pty) in ports {
        text.push_str(&format!(
            "[ports.{name}]\ndevice = \"{}\"\npreset = \"cisco-ios\"\n",
            pty.slave_path().display()
        ));
    }
    let path = dir.path().join("serialgate.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn a_crash_split_across_reads_is_an_alert_told_to_a_stdio_subscriber() {
    let dir = TempDir::new().unwrap();
    let pty = Pty::open().unwrap();
    let config = config(&dir, &[("sw1", &pty)], "");
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &[]);
    let stdout = daemon.child.stdout.take().unwrap();
    let stdin = daemon.child.stdin.take().unwrap();
    let client = tokio::time::timeout(WITHIN, UpdatesClient::stdio(stdout, stdin))
        .await
        .expect("initialize in time")
        .expect("initialize");
    let uri = alerts_uri("sw1");
    client.subscribe(&uri).await.expect("subscribe");

    let start = crash_in_two_reads(&client, "sw1", &pty).await;
    let told = client.next_update(TOLD_WITHIN).await;
    assert_eq!(told.as_deref(), Some(uri.as_str()), "told of the alert");

    let shown: Value = serde_json::from_str(&client.read(&uri).await.unwrap()).unwrap();
    let alert = &shown["alerts"][0];
    assert_eq!(alert["watch"], "crash", "{shown}");
    assert_eq!(alert["severity"], "critical");
    assert_eq!(alert["text"], MATCHED);
    assert_eq!(num(alert, "start"), start);
    assert_eq!(num(alert, "end"), start + MATCHED.len() as u64);
    assert_eq!(shown["total"], 1);
    // The journal has it at ERROR, with its place in the log.
    let line = daemon
        .stderr
        .wait_for(&format!("alert crash (critical) on sw1 at {start}-"))
        .await;
    assert!(line.contains("ERROR"), "{line}");

    // The evidence: the alert's range in the OutputLog is the banner.
    client.call("connect", json!({"port": "sw1"})).await.ok();
    let read = client
        .call(
            "read_output",
            json!({"cursor": start, "max_bytes": MATCHED.len()}),
        )
        .await
        .ok();
    assert_eq!(read["output"], MATCHED, "{read}");
    let listed = client.call("alerts", json!({})).await.ok();
    assert_eq!(listed["alerts"][0]["id"], 1);
    assert_eq!(listed["next"], 1);
    let status = client.call("status", json!({})).await.ok();
    assert_eq!(status["alerts"]["total"], 1, "{status}");
    assert_eq!(status["alerts"]["last"]["watch"], "crash");

    // A session watch of the agent's own: raised, listed after the
    // cursor, gone when removed.
    let added = client
        .call(
            "alerts",
            json!({"since": 1, "watch": "bgp", "regex": "%BGP-5-ADJCHANGE", "severity": "info"}),
        )
        .await
        .ok();
    assert!(added["alerts"].as_array().unwrap().is_empty(), "{added}");
    assert!(
        added["watches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["name"] == "bgp"),
        "{added}"
    );
    pty.write_all(b"%BGP-5-ADJCHANGE: neighbor 10.0.0.2 Down\r\n")
        .await
        .unwrap();
    assert_eq!(
        client.next_update(TOLD_WITHIN).await.as_deref(),
        Some(uri.as_str())
    );
    let after = client.call("alerts", json!({"since": 1})).await.ok();
    assert_eq!(after["alerts"][0]["watch"], "bgp", "{after}");
    assert_eq!(after["alerts"][0]["severity"], "info");
    assert_eq!(after["alerts"][0]["session_watch"], true);
    assert_eq!(after["next"], 2);
    daemon.stderr.wait_for("alert bgp (info) on sw1 at ").await;
    let removed = client
        .call("alerts", json!({"since": 2, "unwatch": "bgp"}))
        .await
        .ok();
    assert!(
        !removed["watches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["name"] == "bgp"),
        "{removed}"
    );

    // Hostile watches: refused with a code and a way out, nothing kept.
    let long = "x".repeat(5000);
    for (args, says) in [
        (json!({"watch": "a", "regex": "("}), "bad regex"),
        (
            json!({"watch": "a", "regex": ".*"}),
            "matches an empty line",
        ),
        (
            json!({"watch": "a\nERROR forged", "regex": "x"}),
            "a watch name is",
        ),
        (json!({"watch": "a", "regex": long}), "at most 1024 bytes"),
        (
            json!({"watch": "crash", "regex": "x"}),
            "a watch of the port's config",
        ),
        (
            json!({"watch": "a", "regex": "x", "severity": "fatal"}),
            "none of info",
        ),
        (json!({"unwatch": "nope"}), "no watch named \"nope\""),
        (json!({"watch": "a"}), "needs a regex"),
        (json!({"since": -1}), "invalid_argument"),
    ] {
        let e = client.call("alerts", args.clone()).await.err();
        assert!(e.starts_with("invalid_argument: "), "{args}: {e}");
        assert!(e.contains(says), "{args}: {e}");
        assert!(e.len() < 2000, "the error echoes too much: {}", e.len());
    }
    for _ in 0..16 {
        let i = rand_name();
        client
            .call("alerts", json!({"watch": i, "regex": "never-printed"}))
            .await
            .ok();
    }
    let full = client
        .call("alerts", json!({"watch": "seventeenth", "regex": "x"}))
        .await
        .err();
    assert!(full.contains("16 watches"), "{full}");
    // Not a resource one may subscribe to.
    let e = client
        .subscribe("serialgate://ports/sw1/output/0-1")
        .await
        .unwrap_err();
    assert!(e.contains("cannot be subscribed to"), "{e}");
}

/// A distinct watch name per call.
fn rand_name() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("w{}", N.fetch_add(1, Ordering::Relaxed))
}

const TOKENS: &[daemon::TestToken<'static>] = &[
    ("ops", "ops-secret-0123456789abcdef", r#"["sw1"]"#, "read"),
    (
        "other",
        "other-secret-0123456789abcdef",
        r#"["sw2"]"#,
        "read",
    ),
];

#[tokio::test]
async fn http_subscribers_are_told_only_of_ports_their_token_reaches() {
    let dir = TempDir::new().unwrap();
    let (pty1, pty2) = (Pty::open().unwrap(), Pty::open().unwrap());
    let tokens = daemon::tokens_toml(dir.path(), TOKENS);
    let config = config(&dir, &[("sw1", &pty1), ("sw2", &pty2)], &tokens);
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    let url = daemon.http_url().await;
    let ops = UpdatesClient::http(&url, TOKENS[0].1).await.unwrap();
    let other = UpdatesClient::http(&url, TOKENS[1].1).await.unwrap();

    ops.subscribe(&alerts_uri("sw1"))
        .await
        .expect("ops subscribes");
    let refused = other.subscribe(&alerts_uri("sw1")).await.unwrap_err();
    assert!(refused.contains("forbidden"), "{refused}");
    other
        .subscribe(&alerts_uri("sw2"))
        .await
        .expect("other subscribes to its own");
    let refused = other.read(&alerts_uri("sw1")).await.unwrap_err();
    assert!(refused.contains("forbidden"), "{refused}");
    // Sessionless clients (`2026-07-28`) listen instead; the other token's
    // stream asks for both ports and is only ever told of its own.
    let ops_new = UpdatesClient::sessionless(&url, TOKENS[0].1).await.unwrap();
    let other_new = UpdatesClient::sessionless(&url, TOKENS[1].1).await.unwrap();
    let mut ops_stream = ops_new.listen(&[alerts_uri("sw1")]).await.unwrap();
    let mut other_stream = other_new
        .listen(&[alerts_uri("sw1"), alerts_uri("sw2")])
        .await
        .unwrap();

    let start = crash_in_two_reads(&ops, "sw1", &pty1).await;
    assert_eq!(
        ops.next_update(TOLD_WITHIN).await.as_deref(),
        Some(alerts_uri("sw1").as_str()),
        "told of the alert over HTTP"
    );
    assert_eq!(
        next_updated(&mut ops_stream, TOLD_WITHIN).await.as_deref(),
        Some(alerts_uri("sw1").as_str()),
        "a listening sessionless client is told"
    );
    let shown: Value = serde_json::from_str(&ops.read(&alerts_uri("sw1")).await.unwrap()).unwrap();
    assert_eq!(num(&shown["alerts"][0], "start"), start, "{shown}");

    // The other token hears of its own port's alert first and only.
    let start2 = crash_in_two_reads(&other, "sw2", &pty2).await;
    assert_eq!(
        other.next_update(TOLD_WITHIN).await.as_deref(),
        Some(alerts_uri("sw2").as_str())
    );
    assert_eq!(other.queued_update().await, None);
    assert_eq!(
        next_updated(&mut other_stream, TOLD_WITHIN)
            .await
            .as_deref(),
        Some(alerts_uri("sw2").as_str()),
        "the other token's stream hears of sw2 first: nothing of sw1"
    );
    let shown: Value =
        serde_json::from_str(&other.read(&alerts_uri("sw2")).await.unwrap()).unwrap();
    assert_eq!(num(&shown["alerts"][0], "start"), start2, "{shown}");
    assert_eq!(ops.queued_update().await, None, "ops hears nothing of sw2");
}
