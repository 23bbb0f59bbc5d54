//! `/metrics`, `/healthz` and the systemd watchdog, end to end: the real
//! binary serving HTTP with a device on a pseudo-terminal; the scrape is
//! parsed by a Prometheus text-format parser (`prometheus-parse`) and its
//! counters move as the test acts (output, an alert, tool calls, a wait).
//! Only a token of access `metrics` (or admin) scrapes, and such a token
//! does nothing else; `metrics_listen` serves on loopback without one.

use std::time::Duration;

use serde_json::json;
use serialgate_sim::pty::Pty;
use serialgate_testkit::client::GateClient;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use tempfile::TempDir;

const TOKENS: &[daemon::TestToken<'static>] = &[
    (
        "scrape",
        "scrape-secret-0123456789abcdef",
        r#"["sw1"]"#,
        "metrics",
    ),
    ("ops", "ops-secret-0123456789abcdef", r#"["*"]"#, "read"),
];

/// One sample's value, by metric name and labels.
fn value(scrape: &prometheus_parse::Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match &s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => *v,
            prometheus_parse::Value::Histogram(buckets) => {
                buckets.iter().map(|b| b.count).fold(0.0, f64::max)
            }
            prometheus_parse::Value::Summary(_) => f64::NAN,
        })
}

async fn get(url: &str, token: Option<&str>) -> (u16, String) {
    let client = reqwest::Client::new();
    let mut request = client.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = tokio::time::timeout(daemon::WITHIN, request.send())
        .await
        .expect("a response in time")
        .expect("an HTTP response");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

async fn scrape(url: &str, token: Option<&str>) -> prometheus_parse::Scrape {
    let (status, body) = get(url, token).await;
    assert_eq!(status, 200, "{body}");
    let lines = body.lines().map(|l| Ok(l.to_owned()));
    prometheus_parse::Scrape::parse(lines).expect("the text format parses")
}

#[tokio::test]
async fn metrics_move_as_the_gateway_works_and_only_metrics_tokens_scrape() {
    let dir = TempDir::new().unwrap();
    let pty = Pty::open().unwrap();
    let mut text = daemon::tokens_toml(dir.path(), TOKENS);
    text.push_str("[server]\nmetrics_listen = \"127.0.0.1:0\"\n");
    text.push_str(&format!(
        "[ports.sw1]\ndevice = \"{}\"\npreset = \"cisco-ios\"\n",
        pty.slave_path().display()
    ));
    // `[server]` after `[[tokens]]` is fine in TOML; the ports follow.
    let config = dir.path().join("serialgate.toml");
    std::fs::write(&config, text).unwrap();
    let notify = NotifySocket::bind(dir.path());
    let mut cmd = Daemon::command(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    cmd.env("WATCHDOG_USEC", "200000");
    let mut daemon = Daemon::run(cmd);
    let metrics_line = daemon.stderr.wait_for("metrics at http://").await;
    let local_metrics = metrics_line
        .split("metrics at ")
        .nth(1)
        .unwrap()
        .trim()
        .to_owned();
    let url = daemon.http_url().await;
    let base = url.trim_end_matches("/mcp").to_owned();
    notify.expect("READY=1").await;
    // The watchdog: pings at half of WATCHDOG_USEC.
    notify.expect("WATCHDOG=1").await;

    // /healthz needs no token and says nothing more.
    assert_eq!(
        get(&format!("{base}/healthz"), None).await,
        (200, "ok\n".into())
    );
    let metrics = format!("{base}/metrics");
    let (scrape_token, ops_token) = (TOKENS[0].1, TOKENS[1].1);
    assert_eq!(get(&metrics, None).await.0, 401);
    assert_eq!(get(&metrics, Some("wrong-secret")).await.0, 401);
    let (status, body) = get(&metrics, Some(ops_token)).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("access = \"metrics\""), "{body}");
    // A metrics token does nothing else.
    assert!(
        GateClient::connect_http(&url, Some(scrape_token))
            .await
            .is_err()
    );
    assert_eq!(
        get(&format!("{base}/ports/sw1/console"), Some(scrape_token))
            .await
            .0,
        403
    );

    let before = scrape(&metrics, Some(scrape_token)).await;
    assert_eq!(
        value(
            &before,
            "serialgate_port_state",
            &[("port", "sw1"), ("state", "open")]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            &before,
            "serialgate_port_state",
            &[("port", "sw1"), ("state", "lost")]
        ),
        Some(0.0)
    );
    let rx = |s: &prometheus_parse::Scrape| {
        value(
            s,
            "serialgate_port_received_bytes_total",
            &[("port", "sw1")],
        )
        .unwrap()
    };
    let crit = |s: &prometheus_parse::Scrape| {
        value(
            s,
            "serialgate_alerts_total",
            &[("port", "sw1"), ("severity", "critical")],
        )
        .unwrap()
    };
    assert_eq!(crit(&before), 0.0);

    // Output and an alert.
    let banner = b"\r\nUnexpected exception to CPU: vector 1500\r\n";
    pty.write_all(banner).await.unwrap();
    daemon
        .stderr
        .wait_for("alert crash (critical) on sw1")
        .await;
    let after = scrape(&metrics, Some(scrape_token)).await;
    assert_eq!(rx(&after) - rx(&before), banner.len() as f64);
    assert_eq!(crit(&after), 1.0);

    // Tool calls, by tool and outcome; a wait.
    let ops = GateClient::connect_http(&url, Some(ops_token))
        .await
        .unwrap();
    let e = ops.call("status", json!({})).await.unwrap().err();
    assert!(e.starts_with("unknown_connection"), "{e}");
    ops.call("connect", json!({"port": "sw1"}))
        .await
        .unwrap()
        .ok();
    let waited = ops
        .call(
            "read_until_prompt",
            json!({"prompt": "never", "timeout": 0.2}),
        )
        .await
        .unwrap()
        .ok();
    assert_eq!(waited["timed_out"], true, "{waited}");
    let bogus = "no_such_tool_\u{1b}[31m";
    // Refused one way or another; only its counting matters here.
    let _ = ops.call(bogus, json!({})).await;
    let moved = scrape(&metrics, Some(scrape_token)).await;
    let calls = |tool: &str, code: &str| {
        value(
            &moved,
            "serialgate_tool_calls_total",
            &[("tool", tool), ("code", code)],
        )
    };
    assert_eq!(calls("status", "unknown_connection"), Some(1.0));
    assert_eq!(calls("connect", "ok"), Some(1.0));
    assert_eq!(calls("read_until_prompt", "ok"), Some(1.0));
    assert!(
        !moved.samples.iter().any(|s| s
            .labels
            .get("tool")
            .is_some_and(|t| t.contains("no_such_tool"))),
        "a caller's tool name is never a label"
    );
    let waits = moved
        .samples
        .iter()
        .find(|s| s.metric == "serialgate_wait_seconds")
        .expect("the wait histogram");
    match &waits.value {
        prometheus_parse::Value::Histogram(buckets) => {
            let all = buckets.iter().map(|b| b.count).fold(0.0, f64::max);
            assert!(all >= 1.0, "{buckets:?}");
            let under_100ms = buckets
                .iter()
                .filter(|b| b.less_than <= 0.1)
                .map(|b| b.count)
                .fold(0.0, f64::max);
            assert!(
                under_100ms < all,
                "the 0.2 s wait is above 100 ms: {buckets:?}"
            );
        }
        other => panic!("not a histogram: {other:?}"),
    }
    assert!(value(&moved, "serialgate_mcp_sessions", &[]).unwrap() >= 1.0);

    // The loopback listener: no token, every port.
    let local = scrape(&local_metrics, None).await;
    assert_eq!(crit(&local), 1.0);
    let (status, _) = get(&local_metrics.replace("/metrics", "/healthz"), None).await;
    assert_eq!(status, 200);
    ops.close().await.unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(1), daemon.child.kill()).await;
}

#[test]
fn metrics_listen_must_be_loopback() {
    let dir = TempDir::new().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "[server]\nmetrics_listen = \"0.0.0.0:9300\"\n").unwrap();
    let out = std::process::Command::new(serialgate_testkit::binary())
        .arg("check-config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("server.metrics_listen: \"0.0.0.0:9300\" is not a loopback address"),
        "{err}"
    );
}
