//! Line control end to end: live line settings on the pty the daemon has
//! open (read back from the kernel), kept across a reopen; BREAK and modem
//! lines on a pseudo-terminal; baud-rate detection.

use serialgate_testkit::rig as common;

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use common::{Rig, kernel_speed, num, open_slave, text};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile};
use serialgate_testkit::client::Outcome;

/// Whether the tty is held exclusively (TIOCGEXCL).
fn exclusive(fd: &OwnedFd) -> bool {
    let mut excl: libc::c_int = 0;
    // SAFETY: `fd` is open and `excl` is a c_int the call writes.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGEXCL, &mut excl) };
    assert_eq!(r, 0, "TIOCGEXCL: {}", std::io::Error::last_os_error());
    excl != 0
}

fn event_texts(status: &Value) -> Vec<String> {
    status["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["what"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn line_settings_change_live_and_the_log_goes_on() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let before = rig
        .ok("send_command", json!({"command": "show clock"}))
        .await;
    assert_eq!(before["matched"], true, "{before}");
    let slave = open_slave(rig.sim.slave_path());
    if let Some(fd) = &slave {
        assert_eq!(kernel_speed(fd), 9600, "the cisco-ios preset's rate");
        assert!(exclusive(fd), "the daemon holds the tty exclusively");
    }

    let changed = rig.ok("set_line_settings", json!({"baud": 115200})).await;
    assert_eq!(changed["settings"]["baud"], 115200, "{changed}");
    assert_eq!(changed["settings"]["data_bits"], 8, "{changed}");
    assert_eq!(changed["previous"]["baud"], 9600, "{changed}");
    assert_eq!(changed["live"], true, "{changed}");
    if let Some(fd) = &slave {
        assert_eq!(kernel_speed(fd), 115200, "changed on the open tty");
        assert!(exclusive(fd), "still exclusive after the change");
    }

    // Same connection, same log: the next command just works.
    let after = rig
        .ok("send_command", json!({"command": "show clock"}))
        .await;
    assert_eq!(after["matched"], true, "{after}");
    assert!(num(&after, "start_cursor") >= num(&before, "end_cursor"));
    let page = rig
        .ok("read_output", json!({"cursor": 0, "max_bytes": 65536}))
        .await;
    assert_eq!(page["truncated"], false);
    assert_eq!(text(&page, "output").matches("show clock").count(), 2);

    let status = rig.ok("status", json!({})).await;
    assert_eq!(status["settings"]["baud"], 115200, "{status}");
    assert_eq!(status["reconnects"], 0, "no reopen");
    assert!(
        event_texts(&status)
            .iter()
            .any(|e| e.contains("line settings 9600 8N1 -> 115200 8N1")),
        "{status}"
    );
    let ports = rig.ok("list_ports", json!({})).await;
    assert_eq!(ports["ports"][0]["settings"]["baud"], 115200, "{ports}");

    // Framing too (a pty ignores it, the port remembers it).
    let framed = rig
        .ok(
            "set_line_settings",
            json!({"data_bits": "7", "parity": "EVEN", "stop_bits": 2}),
        )
        .await;
    assert_eq!(framed["settings"]["baud"], 115200, "{framed}");
    assert_eq!(framed["settings"]["data_bits"], 7, "{framed}");
    assert_eq!(framed["settings"]["parity"], "even", "{framed}");
    assert_eq!(framed["settings"]["stop_bits"], 2, "{framed}");
    rig.ok(
        "set_line_settings",
        json!({"data_bits": 8, "parity": "none", "stop_bits": 1}),
    )
    .await;

    // Bad input is refused and changes nothing.
    for bad in [
        json!({"baud": 0}),
        json!({"data_bits": 9}),
        json!({"stop_bits": 3}),
        json!({"parity": "mark"}),
        json!({}),
        json!({"speed": 9600}),
    ] {
        let e = rig.err("set_line_settings", bad.clone()).await;
        assert!(e.starts_with("invalid_argument: "), "{bad}: {e}");
    }
    let status = rig.ok("status", json!({})).await;
    assert_eq!(
        status["settings"],
        json!({"baud": 115200, "data_bits": 8, "parity": "none", "stop_bits": 1, "flow_control": "none"})
    );
}

#[tokio::test]
async fn a_reopen_after_a_loss_uses_the_new_settings() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.ok("set_line_settings", json!({"baud": 57600})).await;
    // Unplug, and while the device is away, change the rate again: it is
    // stored and used when the device comes back.
    let link = rig.dir.path().join("sw1");
    rig.sim.close().await;
    let lost = rig.wait_state("lost", Duration::from_secs(20)).await;
    assert_ne!(lost["state"], "open", "{lost}");
    let stored = rig.ok("set_line_settings", json!({"baud": 115200})).await;
    assert_eq!(stored["live"], false, "{stored}");
    assert_eq!(stored["settings"]["baud"], 115200, "{stored}");

    let again = sim::spawn(Profile::CiscoIos, Some(link))
        .await
        .expect("device");
    let status = rig.wait_state("open", Duration::from_secs(10)).await;
    assert_eq!(status["state"], "open", "{status}");
    assert_eq!(status["settings"]["baud"], 115200, "{status}");
    let events = event_texts(&status);
    assert!(
        events.last().is_some_and(|e| e.contains("at 115200 8N1")),
        "{events:?}"
    );
    if let Some(fd) = open_slave(again.slave_path()) {
        assert_eq!(kernel_speed(&fd), 115200, "reopened at the new rate");
        assert!(exclusive(&fd));
    }
    rig.ok("send_text", json!({"text": ""})).await;
    let woke = rig.ok("read_until_prompt", json!({"timeout": 5})).await;
    assert_eq!(text(&woke, "prompt_text"), "SW1>");
}

#[tokio::test]
async fn break_and_modem_lines_on_a_pseudo_terminal() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;

    // Linux accepts TIOCSBRK on a pty (and does nothing); were it refused,
    // the documented error must come back.
    let started = Instant::now();
    match rig.call("send_break", json!({"duration_ms": 300})).await {
        Outcome::Ok(sent) => {
            assert_eq!(sent["duration_ms"], 300, "{sent}");
            assert!(started.elapsed() >= Duration::from_millis(300));
            let status = rig.ok("status", json!({})).await;
            assert!(
                event_texts(&status)
                    .iter()
                    .any(|e| e == "sent BREAK for 300 ms"),
                "{status}"
            );
        }
        // Linux accepts it on a pty: a refusal here is a fault.
        Outcome::Err(e) => panic!("send_break on a pty failed: {e}"),
    }
    let sent = rig.ok("send_break", json!({})).await;
    assert_eq!(sent["duration_ms"], 250, "the default");
    for bad in [json!({"duration_ms": 0}), json!({"duration_ms": 10001})] {
        let e = rig.err("send_break", bad.clone()).await;
        assert!(e.starts_with("invalid_argument: duration_ms"), "{bad}: {e}");
    }

    // A pty has no modem control lines: ENOTTY, reported as such.
    for (tool, args) in [
        ("set_lines", json!({"dtr": true})),
        ("set_lines", json!({"rts": false})),
        ("set_lines", json!({})),
        ("pulse_line", json!({"line": "dtr"})),
        (
            "pulse_line",
            json!({"line": "RTS", "ms": 50, "level": true}),
        ),
    ] {
        let e = rig.err(tool, args.clone()).await;
        assert!(e.starts_with("port_unavailable: "), "{tool} {args}: {e}");
        assert!(e.contains("no modem control lines"), "{tool} {args}: {e}");
    }
    for bad in [
        json!({"line": "cts"}),
        json!({}),
        json!({"line": "dtr", "ms": 0}),
        json!({"line": "dtr", "ms": 60000}),
    ] {
        let e = rig.err("pulse_line", bad.clone()).await;
        assert!(e.starts_with("invalid_argument: "), "{bad}: {e}");
    }
    let e = rig.err("set_lines", json!({"dtr": "maybe"})).await;
    assert!(e.starts_with("invalid_argument: "), "{e}");

    // None of it disturbed the session.
    let after = rig
        .ok("send_command", json!({"command": "show clock"}))
        .await;
    assert_eq!(after["matched"], true, "{after}");
    let status = rig.ok("status", json!({})).await;
    assert_eq!(status["state"], "open");
}

#[tokio::test]
async fn detect_baud_tries_every_rate_and_keeps_the_best() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let found = rig.ok("detect_baud", json!({"listen_ms": 400})).await;
    let ranking = found["ranking"].as_array().expect("ranking");
    let mut tried: Vec<u64> = ranking.iter().map(|r| num(r, "baud")).collect();
    tried.sort_unstable();
    assert_eq!(tried, vec![9600, 19200, 38400, 57600, 115200], "{found}");
    // A pty carries the switch's answer at any rate: every rate reads, and
    // the tie keeps the rate the port had.
    for r in ranking {
        assert!(r["score"].as_f64().unwrap() > 0.9, "{r}");
        assert!(num(r, "bytes") > 0, "{r}");
        assert!(text(r, "sample").contains("SW1>"), "{r}");
    }
    assert_eq!(found["best"], 9600, "{found}");
    assert_eq!(found["settings"]["baud"], 9600, "{found}");
    assert_eq!(found["changed"], false, "{found}");
    let status = rig.ok("status", json!({})).await;
    assert_eq!(status["settings"]["baud"], 9600);
    assert_eq!(num(&status, "cursor"), num(&found, "cursor"), "{status}");

    // From 115200, candidates given as a string: it stays at 115200.
    rig.ok("set_line_settings", json!({"baud": 115200})).await;
    let found = rig
        .ok(
            "detect_baud",
            json!({"candidates": "9600, 115200", "listen_ms": 300, "probe": "\r"}),
        )
        .await;
    assert_eq!(found["ranking"].as_array().unwrap().len(), 2, "{found}");
    assert_eq!(found["best"], 115200, "{found}");
    if let Some(fd) = open_slave(rig.sim.slave_path()) {
        assert_eq!(kernel_speed(&fd), 115200, "left at the best rate");
    }
    let ports = rig.ok("list_ports", json!({})).await;
    assert_eq!(ports["ports"][0]["settings"]["baud"], 115200, "{ports}");

    for bad in [
        json!({"candidates": []}),
        json!({"candidates": [0]}),
        json!({"listen_ms": 6000}),
        json!({"probe": "x".repeat(300)}),
    ] {
        let e = rig.err("detect_baud", bad.clone()).await;
        assert!(e.starts_with("invalid_argument: "), "{bad}: {e}");
    }
    // The switch still answers where it was left.
    rig.ok("send_text", json!({"text": ""})).await;
    let woke = rig.ok("read_until_prompt", json!({"timeout": 5})).await;
    assert_eq!(text(&woke, "prompt_text"), "SW1>");
}

#[tokio::test]
async fn detect_baud_on_a_silent_device_keeps_the_original_rate() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let found = rig
        .ok(
            "detect_baud",
            json!({"candidates": [19200, 115200], "listen_ms": 100}),
        )
        .await;
    assert_eq!(found["best"], Value::Null, "{found}");
    assert_eq!(found["settings"]["baud"], 9600, "{found}");
    assert_eq!(found["changed"], false, "{found}");
    for r in found["ranking"].as_array().unwrap() {
        assert_eq!(r["score"], 0.0, "{r}");
        assert_eq!(num(r, "bytes"), 0, "{r}");
    }
    // Both probes went out.
    assert!(
        rig.sim.wait_received(b"\r\r", Duration::from_secs(2)).await,
        "{:?}",
        rig.sim.received()
    );
    if let Some(fd) = open_slave(rig.sim.slave_path()) {
        assert_eq!(kernel_speed(&fd), 9600, "back at the original rate");
    }
}

#[tokio::test]
async fn the_line_control_tools_are_listed_with_their_schemas() {
    let rig = Rig::start(Profile::Silent, "").await;
    let tools = rig.client.tools().await.unwrap();
    let schema = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no tool {name}"))
            .input_schema
            .clone()
    };
    for name in [
        "send_break",
        "set_line_settings",
        "set_lines",
        "pulse_line",
        "detect_baud",
    ] {
        let s = schema(name);
        assert_eq!(s["type"], "object", "{name}");
        assert!(s["properties"]["connection"].is_object(), "{name}: {s:?}");
    }
    assert_eq!(schema("pulse_line")["required"], json!(["line"]));
    assert!(
        schema("send_break")["properties"]["duration_ms"]["description"]
            .as_str()
            .unwrap()
            .contains("250")
    );
}
