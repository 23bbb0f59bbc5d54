//! Every error code these tools can raise, as an agent sees it: an
//! `isError` result whose text starts with the code and says what to do,
//! and nothing changed by the failed call.

use serialgate_testkit::rig as common;

use common::{Rig, num, text};
use serde_json::json;
use serialgate_sim::Profile;

fn starts(e: &str, code: &str) {
    assert!(
        e.starts_with(&format!("{code}: ")),
        "expected {code}, got: {e}"
    );
}

#[tokio::test]
async fn unknown_connection() {
    let rig = Rig::start(Profile::Silent, "").await;
    let e = rig.err("send_text", json!({"text": "x"})).await;
    starts(&e, "unknown_connection");
    assert!(e.contains("call connect"), "{e}");
    let e = rig.err("connect", json!({"port": "core-sw9"})).await;
    starts(&e, "unknown_connection");
    assert!(e.contains("sw1"), "names the configured ports: {e}");
    rig.ok("connect", json!({"port": "sw1"})).await;
    starts(
        &rig.err("status", json!({"connection": "sw2"})).await,
        "unknown_connection",
    );
    rig.ok("disconnect", json!({})).await;
    starts(
        &rig.err("read_output", json!({})).await,
        "unknown_connection",
    );
}

#[tokio::test]
async fn invalid_argument_changes_nothing() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let cases = [
        ("send_text", json!({})),
        ("send_text", json!({"text": 5})),
        ("send_text", json!({"text": "x".repeat(70_000)})),
        ("send_text", json!({"text": "x", "line_ending": "cr-lf"})),
        ("send_text", json!({"text": "x", "bogus": 1})),
        ("send_hex", json!({"hex": "0g"})),
        ("send_hex", json!({"hex": "abc"})),
        ("read_until_prompt", json!({"prompt": "#", "timeout": 601})),
        ("read_until_prompt", json!({"prompt": "#", "timeout": -1})),
        (
            "read_until_prompt",
            json!({"prompt": "#", "timeout": "soon"}),
        ),
        ("read_until_prompt", json!({"prompt": ""})),
        ("read_until_prompt", json!({"prompt": "#", "max_output": 0})),
        (
            "read_until_prompt",
            json!({"prompt": "#", "auto_reply": {"": " "}}),
        ),
        (
            "read_until_prompt",
            json!({"prompt": "#", "auto_reply": "not json"}),
        ),
        (
            "send_command",
            json!({"command": "show clock\rshow version"}),
        ),
        ("read_output", json!({"max_bytes": 65537})),
        ("read_output", json!({"wait_ms": 600_001})),
        ("read_available", json!({"timeout": 1e9})),
        ("connect", json!({"port": "sw1", "preset": "no-such-os"})),
        ("connect", json!({"port": "sw1", "baud": 115200})),
        ("connect", json!({"port": ""})),
    ];
    for (tool, args) in cases {
        let e = rig.err(tool, args.clone()).await;
        starts(&e, "invalid_argument");
        assert!(
            e.len() > "invalid_argument: ".len() + 10,
            "{tool} {args}: says too little: {e}"
        );
    }
    // Nothing was sent and the connection is as it was.
    assert!(
        rig.sim.received().is_empty(),
        "a failed call wrote {:?}",
        rig.sim.received()
    );
    let status = rig.ok("status", json!({})).await;
    assert_eq!(text(&status, "connection"), "sw1");
    assert_eq!(num(&status, "bytes_written"), 0);
}

#[tokio::test]
async fn bad_regex() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let e = rig
        .err(
            "read_until_prompt",
            json!({"prompt": "SW1(#", "regex": true}),
        )
        .await;
    starts(&e, "bad_regex");
    assert!(e.contains("SW1(#"), "{e}");
    starts(
        &rig.err(
            "send_command",
            json!({"command": "x", "prompt": "[", "regex": true}),
        )
        .await,
        "bad_regex",
    );
    starts(
        &rig.err(
            "connect",
            json!({"port": "sw1", "prompt": "(", "prompt_regex": true}),
        )
        .await,
        "bad_regex",
    );
    assert!(
        rig.sim.received().is_empty(),
        "send_command must not send when its prompt is bad"
    );
}

#[tokio::test]
async fn adhoc_paths_are_forbidden_unless_allowed() {
    let rig = Rig::start(Profile::Silent, "").await;
    let e = rig.err("connect", json!({"port": "/dev/ttyUSB7"})).await;
    starts(&e, "forbidden");
    assert!(e.contains("allow_adhoc"), "{e}");
}

#[tokio::test]
async fn adhoc_paths_outside_the_globs_are_forbidden_and_missing_ones_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[server]\nallow_adhoc = true\nadhoc_devices = [\"{}/tty*\"]\n",
        dir.path().display()
    );
    let client = common::Rig::client_with(&dir, &config).await;
    let e = client
        .call("connect", json!({"port": "/etc/passwd"}))
        .await
        .unwrap()
        .err();
    starts(&e, "forbidden");
    let sneaky = format!("{}/tty/../../etc/passwd", dir.path().display());
    starts(
        &client
            .call("connect", json!({"port": sneaky}))
            .await
            .unwrap()
            .err(),
        "forbidden",
    );
    let missing = format!("{}/ttyUSB3", dir.path().display());
    let e = client
        .call("connect", json!({"port": missing}))
        .await
        .unwrap()
        .err();
    starts(&e, "port_unavailable");
    assert!(e.contains("No such file"), "{e}");
    let ports = client.call("list_ports", json!({})).await.unwrap().ok();
    assert_eq!(
        ports["ports"],
        json!([]),
        "a failed ad-hoc connect leaves no port behind"
    );
}

#[tokio::test]
async fn configured_port_without_its_device_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[ports.gone]\ndevice = \"{}/ttyUSB0\"\n",
        dir.path().display()
    );
    let client = common::Rig::client_with(&dir, &config).await;
    let e = client
        .call("connect", json!({"port": "gone"}))
        .await
        .unwrap()
        .err();
    starts(&e, "port_unavailable");
    assert!(e.contains("No such file"), "says why: {e}");
}

#[tokio::test]
async fn port_lost_fails_the_waiting_call_with_its_partial_output() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.sim.inject(b"*** System going down ***\r\n").await;
    // In the log before the cable comes out (a closing pty may discard
    // bytes nobody read yet, as a UART's FIFO would).
    rig.ok("read_output", json!({"cursor": 0, "wait_ms": 5000}))
        .await;
    let (waited, ()) = tokio::join!(
        rig.call(
            "read_until_prompt",
            json!({"prompt": "never#", "timeout": 30})
        ),
        async {
            // The device prints its last words, then the cable comes out.
            rig.sim.close().await;
        }
    );
    let e = waited.err();
    starts(&e, "port_lost");
    assert!(
        e.contains("*** System going down ***"),
        "carries the partial output: {e}"
    );
    starts(
        &rig.err("send_text", json!({"text": "x"})).await,
        "port_lost",
    );
    // The log is kept.
    let page = rig.ok("read_output", json!({"cursor": 0})).await;
    assert_eq!(text(&page, "output"), "*** System going down ***\r\n");
    assert_ne!(page["state"], "open");
}
