//! The `expect` tool over a real pty: a scripted login with a sensitive
//! password that appears nowhere in the result, stopping at a timeout, and
//! refusing bad steps before anything is sent.

use serialgate_testkit::rig as common;

use std::time::Duration;

use common::{Rig, num, text};
use serde_json::json;
use serialgate_sim::Profile;
use serialgate_sim::cisco::ENABLE_PASSWORD;

const WAIT: Duration = Duration::from_secs(5);

fn starts(e: &str, code: &str) {
    assert!(
        e.starts_with(&format!("{code}: ")),
        "expected {code}, got: {e}"
    );
}

/// Sends a marker not sent before (`tag`) and waits for it: every byte
/// sent before it has arrived. Returns what the device received before it.
async fn settled(rig: &Rig, tag: &str) -> Vec<u8> {
    let marker = format!("~{tag}~");
    let hex: String = marker.bytes().map(|b| format!("{b:02x}")).collect();
    rig.ok("send_hex", json!({"hex": hex})).await;
    assert!(rig.sim.wait_received(marker.as_bytes(), WAIT).await);
    let mut got = rig.sim.received();
    got.truncate(got.len() - marker.len());
    got
}

#[tokio::test]
async fn login_with_a_sensitive_password() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let r = rig
        .ok(
            "expect",
            json!({"steps": [
                {"send": "", "expect": "SW1>", "timeout": 5},
                {"send": "enable", "expect": "Password: ", "timeout": 5},
                {"send": ENABLE_PASSWORD, "sensitive": true, "expect": "SW1#", "timeout": 5},
            ]}),
        )
        .await;
    assert_eq!(r["completed"], true, "{r}");
    assert_eq!(num(&r, "steps_run"), 3);
    let steps = r["steps"].as_array().expect("steps");
    assert_eq!(text(&steps[0], "sent"), "");
    assert_eq!(text(&steps[0], "prompt_text"), "SW1>");
    assert_eq!(text(&steps[1], "sent"), "enable");
    assert_eq!(text(&steps[1], "output"), "enable\r\nPassword: ");
    assert_eq!(text(&steps[2], "sent"), "<redacted>");
    assert_eq!(text(&steps[2], "prompt_text"), "SW1#");
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s["matched"], true);
        assert_eq!(s["timed_out"], false);
        assert_eq!(num(s, "step"), i as u64 + 1);
        if i > 0 {
            assert_eq!(num(s, "start_cursor"), num(&steps[i - 1], "end_cursor"));
        }
    }
    assert_eq!(
        num(&steps[2], "bytes_sent"),
        ENABLE_PASSWORD.len() as u64 + 1
    );
    let whole = r.to_string();
    assert!(!whole.contains(ENABLE_PASSWORD), "password leaked: {whole}");
    // It did go to the device, and the switch took it.
    assert!(rig.sim.wait_received(b"cisco\r", WAIT).await);
    let status = rig.ok("status", json!({})).await;
    assert_eq!(num(&status, "cursor"), num(&steps[2], "end_cursor"));
}

#[tokio::test]
async fn echoed_secrets_are_redacted_from_output() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    // A console that echoes what it is sent, password included.
    rig.sim.inject(b"key: hunter2\r\nOK hunter2>").await;
    let r = rig
        .ok(
            "expect",
            json!({"steps": [{"send": "hunter2", "sensitive": true, "expect": r"OK \S+>", "regex": true, "timeout": 5}]}),
        )
        .await;
    let whole = r.to_string();
    assert!(!whole.contains("hunter2"), "{whole}");
    let step = &r["steps"][0];
    assert_eq!(text(step, "output"), "key: <redacted>\r\nOK <redacted>>");
    assert_eq!(text(step, "prompt_text"), "OK <redacted>>");
    assert!(rig.sim.wait_received(b"hunter2\r", WAIT).await);
}

#[tokio::test]
async fn a_timeout_stops_the_steps_and_nothing_more_is_sent() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.sim.inject(b"Username: ").await;
    let r = rig
        .ok(
            "expect",
            json!({"steps": [
                {"send": "admin", "expect": "Username: ", "timeout": 5},
                {"send": "first", "expect": "never comes", "timeout": 0.3},
                {"send": "second", "expect": "#"},
                {"send_hex": "03"},
            ]}),
        )
        .await;
    assert_eq!(r["completed"], false);
    assert_eq!(num(&r, "steps_run"), 2);
    assert_eq!(num(&r, "steps_total"), 4);
    let steps = r["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[1]["timed_out"], true);
    assert_eq!(steps[1]["matched"], false);
    assert_eq!(settled(&rig, "1").await, b"admin\rfirst\r");

    // Without stop_on_timeout the rest runs.
    let r = rig
        .ok(
            "expect",
            json!({"stop_on_timeout": false, "steps": [
                {"send": "third", "expect": "never", "timeout": 0.1},
                {"send_hex": "0d0a"},
                {"send": "fourth", "line_ending": "lf"},
            ]}),
        )
        .await;
    assert_eq!(num(&r, "steps_run"), 3);
    assert_eq!(r["completed"], false, "a step timed out");
    assert_eq!(text(&r["steps"][1], "sent"), "hex:0d0a");
    assert_eq!(r["steps"][2]["matched"], true, "nothing to expect");
    assert_eq!(
        settled(&rig, "2").await,
        b"admin\rfirst\r~1~third\r\r\nfourth\n"
    );
}

#[tokio::test]
async fn bad_steps_are_refused_before_anything_is_sent() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let good = || json!({"send": "ok", "expect": "x"});
    let cases = [
        json!({"steps": []}),
        json!({"steps": "not json"}),
        json!({"steps": [good(), {"send": "a", "send_hex": "00"}]}),
        json!({"steps": [good(), {}]}),
        json!({"steps": [good(), {"expect": ""}]}),
        json!({"steps": [good(), {"expect": "(", "regex": true}]}),
        json!({"steps": [good(), {"expect": "#", "timeout": 601}]}),
        json!({"steps": [good(), {"send": "a", "timeout": 3}]}),
        json!({"steps": [good(), {"send_hex": "0d", "line_ending": "cr"}]}),
        json!({"steps": [good(), {"send": "a", "bogus": 1}]}),
        json!({"steps": [good(), {"send": "x".repeat(70_000)}]}),
        json!({"steps": vec![good(); 65]}),
        json!({"steps": vec![json!({"expect": "#", "timeout": 300}); 3]}),
        json!({"steps": [good()], "auto_reply": {"": "x"}}),
        json!({"steps": [good()], "max_output": 0}),
    ];
    for args in cases {
        let e = rig.err("expect", args.clone()).await;
        assert!(
            e.starts_with("invalid_argument: ") || e.starts_with("bad_regex: "),
            "{args}: {e}"
        );
    }
    // Sensitive values stay out of error texts too.
    for step in [
        json!({"send_hex": "zz secret99", "sensitive": true}),
        json!({"send": ["secret99"], "sensitive": true}),
        json!({"send": {"pw": "secret99"}, "sensitive": true}),
    ] {
        let e = rig.err("expect", json!({"steps": [step]})).await;
        starts(&e, "invalid_argument");
        assert!(!e.contains("secret99"), "{e}");
    }
    assert_eq!(settled(&rig, "3").await, b"", "nothing was sent");
}

/// Waits until the log's head reaches `target`, moving no cursor:
/// `read_output` blocks at the head until more arrives.
async fn arrived(rig: &Rig, target: u64) {
    let mut cursor = 0;
    while cursor < target {
        let page = rig
            .ok(
                "read_output",
                json!({"cursor": cursor, "wait_ms": 5000, "encoding": "hex"}),
            )
            .await;
        let next = num(&page, "next_cursor");
        assert!(next > cursor, "no output for 5 s at {cursor}");
        cursor = next;
    }
}

#[tokio::test]
async fn output_is_cut_per_step_and_clear_first_skips_old_output() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.sim.inject(b"old noise\r\nR1#").await;
    let r = rig
        .ok(
            "expect",
            json!({"max_output": 4, "steps": [{"expect": "R1#", "timeout": 5}]}),
        )
        .await;
    let step = &r["steps"][0];
    assert_eq!(text(step, "output"), "old ");
    assert_eq!(step["output_truncated"], true);
    assert_eq!(num(step, "total_bytes"), 14);
    rig.sim.inject(b"stale R2#").await;
    arrived(&rig, 23).await;
    let r = rig
        .ok(
            "expect",
            json!({"steps": [{"clear_first": true, "expect": "R2#", "timeout": 0.2}]}),
        )
        .await;
    assert_eq!(r["steps"][0]["timed_out"], true, "the old R2# was skipped");
    assert_eq!(text(&r["steps"][0], "output"), "");
    assert_eq!(num(&r["steps"][0], "start_cursor"), 23);
}

/// Even with every log level turned up, a sensitive step's text does not
/// reach the daemon's logs (rmcp logs requests, arguments included).
#[tokio::test]
async fn sensitive_text_stays_out_of_debug_logs() {
    use std::process::Stdio;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let device = serialgate_sim::spawn(
        serialgate_sim::Profile::Silent,
        Some(dir.path().join("tty")),
    )
    .await
    .unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!("[ports.p]\ndevice = {:?}\n", device.path().display()),
    )
    .unwrap();
    let mut child = tokio::process::Command::new(common::binary())
        .args(["serve", "--stdio", "--config"])
        .arg(&config)
        .env("SERIALGATE_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let secret = "hunter2-Zq9";
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"connect","arguments":{"port":"p"}}}"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"expect","arguments":{{"steps":[{{"send":"{secret}","sensitive":true}}]}}}}}}"#),
    ];
    // One request at a time: the server runs requests concurrently.
    let deadline = std::time::Duration::from_secs(10);
    for (i, r) in requests.iter().enumerate() {
        stdin.write_all(r.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        // The notification (the second message) has no answer.
        let Some(id) = [Some(1), None, Some(2), Some(3)][i] else {
            continue;
        };
        let id = format!(r#""id":{id}"#);
        tokio::time::timeout(deadline, async {
            while let Ok(Some(line)) = stdout.next_line().await {
                if line.contains(&id) {
                    assert!(!line.contains(secret), "a result shows the secret: {line}");
                    assert!(!line.contains(r#""isError":true"#), "{line}");
                    break;
                }
            }
        })
        .await
        .unwrap();
    }
    assert!(
        device.wait_received(secret.as_bytes(), deadline).await,
        "the device got it"
    );
    drop(stdin);
    let out = tokio::time::timeout(deadline, child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let logs = String::from_utf8_lossy(&out.stderr);
    assert!(
        logs.contains("TRACE") || logs.contains("DEBUG"),
        "trace logging was on"
    );
    assert!(!logs.contains(secret), "the secret is in the logs:\n{logs}");
}
