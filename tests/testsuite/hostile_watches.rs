//! A read token's own watch cannot reach the operator's alerting, end to
//! end: a session adds watch `\S` at severity `critical` on sw1, the
//! device prints a flood of lines, a real crash banner and another flood.
//! The webhook receiver gets the crash and nothing of the session watch,
//! `serialgate_alerts_total{severity="critical"}` counts only the crash,
//! the daemon logs no ERROR line for the session watch, the crash is still
//! in the port's alerts for every session after the flood, and the session
//! that added the watch sees its own alerts, bounded. And a read token
//! opening session after session cannot fill a port's session watches
//! against an operator.

use std::time::Duration;

use serde_json::{Value, json};
use serialgate_sim::pty::Pty;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket, WITHIN};
use serialgate_testkit::rig::num;
use serialgate_testkit::updates::UpdatesClient;
use serialgate_testkit::webhook::receiver;
use tempfile::TempDir;

const TOKENS: &[daemon::TestToken<'static>] = &[(
    "reader",
    "reader-secret-0123456789abcdef",
    r#"["sw1"]"#,
    "read",
)];

const CRASH: &[u8] = b"\r\nUnexpected exception to CPU: vector 1500, PC = 0x0\r\n";
/// Lines the device prints before the crash and again after it: more than
/// a port keeps alerts, and more than the webhook's queue holds.
const FLOOD_LINES: usize = 1000;

/// One sample of a scrape, by metric name and labels.
fn sample(scrape: &prometheus_parse::Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map_or(0.0, |s| match s.value {
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
}

async fn scrape(metrics: &str) -> prometheus_parse::Scrape {
    let body = reqwest::get(metrics).await.unwrap().text().await.unwrap();
    prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).unwrap()
}

/// Writes the config of `tokens`, `server` (`[server]` keys, or nothing)
/// and port sw1 on `pty` into `dir`; its path.
fn write_config(
    dir: &TempDir,
    tokens: &[daemon::TestToken<'_>],
    server: &str,
    pty: &Pty,
) -> std::path::PathBuf {
    let mut text = daemon::tokens_toml(dir.path(), tokens);
    text.push_str(server);
    text.push_str(&format!(
        "[ports.sw1]\ndevice = \"{}\"\npreset = \"cisco-ios\"\n",
        pty.slave_path().display()
    ));
    let config = dir.path().join("serialgate.toml");
    std::fs::write(&config, text).unwrap();
    config
}

/// Adds `client`'s session watch `name` on its connection, and checks
/// that the answer lists it.
async fn add_watch(client: &UpdatesClient, name: &str, regex: &str, severity: &str) {
    let added = client
        .call(
            "alerts",
            json!({"watch": name, "regex": regex, "severity": severity}),
        )
        .await
        .ok();
    assert!(
        added["watches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["name"] == name),
        "{added}"
    );
}

/// `list_ports`' entry of sw1.
async fn sw1(client: &UpdatesClient) -> Value {
    let ports = client.call("list_ports", json!({})).await.ok();
    ports["ports"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "sw1"))
        .cloned()
        .unwrap_or_else(|| panic!("no sw1 in {ports}"))
}

/// Polls `list_ports` until sw1 satisfies `done`.
async fn wait_sw1(client: &UpdatesClient, done: impl Fn(&Value) -> bool) {
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let entry = sw1(client).await;
        if done(&entry) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "sw1 never got there: {entry}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every alert the `alerts` tool lists to `client` from cursor 0, page by
/// page, and whether any page said some were missed.
async fn all_alerts(client: &UpdatesClient) -> (Vec<Value>, bool) {
    let (mut all, mut missed, mut since) = (Vec::new(), false, 0);
    loop {
        let page = client.call("alerts", json!({"since": since})).await.ok();
        missed |= page["missed"] == true;
        let listed = page["alerts"].as_array().cloned().unwrap_or_default();
        if listed.is_empty() {
            return (all, missed);
        }
        since = num(&page, "next");
        all.extend(listed);
    }
}

async fn flood(pty: &Pty, from: usize) -> usize {
    let mut written = 0;
    let mut text = Vec::new();
    for i in from..from + FLOOD_LINES {
        text.extend_from_slice(format!("Gi0/{i} up, input rate 0 bps\r\n").as_bytes());
    }
    for piece in text.chunks(512) {
        pty.write_all(piece).await.unwrap();
        written += piece.len();
    }
    written
}

#[tokio::test]
async fn a_read_tokens_watch_reaches_neither_webhook_metrics_log_nor_the_ports_alerts() {
    let dir = TempDir::new().unwrap();
    let pty = Pty::open().unwrap();
    let (hook, mut posted) = receiver().await;
    let config = write_config(
        &dir,
        TOKENS,
        &format!(
            "[server]\nmetrics_listen = \"127.0.0.1:0\"\n\
             alert_webhook = {{ url = \"{hook}\", retries = 0, queue = 64 }}\n"
        ),
        &pty,
    );
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    let line = daemon.stderr.wait_for("metrics at http://").await;
    let metrics = line.split("metrics at ").nth(1).unwrap().trim().to_owned();
    let url = daemon.http_url().await;
    notify.expect("READY=1").await;

    let attacker = UpdatesClient::http(&url, TOKENS[0].1).await.unwrap();
    let bystander = UpdatesClient::http(&url, TOKENS[0].1).await.unwrap();
    wait_sw1(&attacker, |p| p["state"] == "open").await;
    for client in [&attacker, &bystander] {
        client.call("connect", json!({"port": "sw1"})).await.ok();
    }
    add_watch(&attacker, "anything", "\\S", "critical").await;

    let head = num(&sw1(&attacker).await, "head");
    let mut written = flood(&pty, 0).await;
    pty.write_all(CRASH).await.unwrap();
    written += CRASH.len();
    written += flood(&pty, FLOOD_LINES).await;
    let end = head + written as u64;
    wait_sw1(&attacker, |p| num(p, "head") >= end).await;

    // The log: the crash at ERROR, nothing of the session watch at ERROR.
    let logged = daemon
        .stderr
        .lines_until("alert crash (critical) on sw1")
        .await;
    let crash_line = logged.last().unwrap();
    assert!(crash_line.contains("ERROR"), "{crash_line}");
    let forged: Vec<&String> = logged
        .iter()
        .filter(|l| l.contains("ERROR") && l.contains("alert anything"))
        .collect();
    assert!(
        forged.is_empty(),
        "{} ERROR lines for the session watch, e.g. {:?}",
        forged.len(),
        forged.first()
    );

    // The webhook: the crash arrives; no session watch's alert is POSTed.
    let deadline = tokio::time::Instant::now() + WITHIN;
    let mut bodies = Vec::new();
    while !bodies.iter().any(|b: &Value| b["watch"] == "crash") {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(left, posted.recv()).await {
            Ok(Some(request)) => bodies.extend(serde_json::from_slice::<Value>(&request.body)),
            _ => panic!(
                "the crash never reached the webhook; it got {} POSTs: {:?}",
                bodies.len(),
                bodies.first()
            ),
        }
    }
    // Anything still under way arrives within a moment.
    while let Ok(Some(request)) =
        tokio::time::timeout(Duration::from_millis(500), posted.recv()).await
    {
        bodies.extend(serde_json::from_slice::<Value>(&request.body));
    }
    let session_posted = bodies.iter().filter(|b| b["watch"] != "crash").count();
    assert_eq!(session_posted, 0, "session watch alerts POSTed: {bodies:?}");

    // The operator's counter: only the crash is critical.
    let scraped = scrape(&metrics).await;
    let critical = sample(
        &scraped,
        "serialgate_alerts_total",
        &[("port", "sw1"), ("severity", "critical")],
    );
    assert_eq!(critical, 1.0, "serialgate_alerts_total critical");
    let session = sample(
        &scraped,
        "serialgate_session_alerts_total",
        &[("port", "sw1")],
    );
    assert!(session >= 1.0, "session alerts counted apart: {session}");
    let dropped = sample(
        &scraped,
        "serialgate_webhook_deliveries_total",
        &[("outcome", "dropped")],
    );
    assert_eq!(dropped, 0.0, "webhook drops");

    // Another session of the same token: the crash is there and nothing
    // of the attacker's watch; nothing was pushed out.
    let (seen, missed) = all_alerts(&bystander).await;
    assert!(!missed, "the bystander missed alerts: {seen:?}");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["watch"], "crash");
    let status = bystander.call("status", json!({})).await.ok();
    assert_eq!(status["alerts"]["last"]["watch"], "crash", "{status}");
    assert_eq!(status["alerts"]["dropped"], 0, "{status}");

    // The attacker's session: its own alerts, bounded, and the crash.
    let (own, _) = all_alerts(&attacker).await;
    assert!(own.iter().any(|a| a["watch"] == "crash"), "{own:?}");
    let mine = own.iter().filter(|a| a["session_watch"] == true).count();
    assert!(mine >= 1, "the session sees its own watch's alerts");
    assert!(
        mine <= 256,
        "{mine} alerts of one session watch kept: not bounded"
    );
    let status = attacker.call("status", json!({})).await.ok();
    assert!(status["alerts"]["last"].is_object(), "{status}");
    let resource: Value = serde_json::from_str(
        &bystander
            .read("serialgate://ports/sw1/alerts")
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        resource["alerts"].as_array().map(Vec::len),
        Some(1),
        "{resource}"
    );
}

#[tokio::test]
async fn a_read_token_opening_sessions_cannot_take_every_watch_of_a_port_from_an_operator() {
    const BOTH: &[daemon::TestToken<'static>] = &[
        TOKENS[0],
        (
            "ops",
            "ops-secret-0123456789abcdef01",
            r#"["sw1"]"#,
            "write",
        ),
    ];
    let dir = TempDir::new().unwrap();
    let pty = Pty::open().unwrap();
    let config = write_config(&dir, BOTH, "", &pty);
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    let url = daemon.http_url().await;
    notify.expect("READY=1").await;

    // The reader opens as many sessions as a port's session watches
    // would take, each adding as many watches as one session may (16).
    let mut taken = 0;
    let mut refusal = None;
    // Kept open: a session's watches end with it.
    let mut sessions = Vec::new();
    for _ in 0..4 {
        let session = UpdatesClient::http(&url, BOTH[0].1).await.unwrap();
        session.call("connect", json!({"port": "sw1"})).await.ok();
        for n in 0..16 {
            let added = session
                .call("alerts", json!({"watch": format!("w{n}"), "regex": "y"}))
                .await;
            match added {
                serialgate_testkit::client::Outcome::Ok(_) => taken += 1,
                serialgate_testkit::client::Outcome::Err(e) => {
                    refusal.get_or_insert(e);
                }
            }
        }
        sessions.push(session);
    }
    assert_eq!(taken, 32, "the read token's watches on sw1");
    let refusal = refusal.expect("the reader was refused at some point");
    assert!(
        refusal.contains("open to read access (32 of 64) are taken"),
        "{refusal}"
    );

    // The operator still adds one, and is told of it.
    let operator = UpdatesClient::http(&url, BOTH[1].1).await.unwrap();
    operator.call("connect", json!({"port": "sw1"})).await.ok();
    add_watch(&operator, "bgp", "%BGP-5-ADJCHANGE", "error").await;
}
