//! A port's life: unplugged and plugged back in with the log kept, ad-hoc
//! devices opened and closed, and the tool list an agent sees.

use serialgate_testkit::rig as common;
use serialgate_testkit::wait;

use std::time::Duration;

use common::{Rig, num, text};
use serde_json::json;
use serialgate_sim::{self as sim, Profile};

#[tokio::test]
async fn unplugged_device_is_lost_then_reopened_with_its_log_kept() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let before = rig
        .ok("send_command", json!({"command": "show clock"}))
        .await;
    let head_before = num(&before, "end_cursor");
    let first_page = rig
        .ok("read_output", json!({"cursor": 0, "max_bytes": 64}))
        .await;
    assert!(text(&first_page, "output").len() > 8, "{first_page}");
    // Pull the cable.
    let link = rig.dir.path().join("sw1");
    rig.sim.close().await;
    let lost = rig.wait_state("lost", Duration::from_secs(20)).await;
    assert!(
        lost["state"] == "lost" || lost["state"] == "reopening",
        "{lost}"
    );
    let e = rig
        .err("send_command", json!({"command": "show clock"}))
        .await;
    assert!(e.starts_with("port_lost: "), "{e}");
    // Plug a device back in at the same path.
    let again = sim::spawn(Profile::CiscoIos, Some(link))
        .await
        .expect("device");
    let status = rig.wait_state("open", Duration::from_secs(10)).await;
    assert_eq!(status["state"], "open", "reopened: {status}");
    assert_eq!(num(&status, "reconnects"), 1);
    let events: Vec<String> = status["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["what"].as_str().unwrap().to_owned())
        .collect();
    assert!(events.iter().any(|e| e.starts_with("lost")), "{events:?}");
    // The log survived and the new device answers; offsets keep growing.
    rig.ok("send_text", json!({"text": ""})).await;
    let woke = rig.ok("read_until_prompt", json!({"timeout": 5})).await;
    assert_eq!(text(&woke, "prompt_text"), "SW1>");
    assert!(num(&woke, "start_cursor") >= head_before);
    let page = rig
        .ok("read_output", json!({"cursor": 0, "max_bytes": 64}))
        .await;
    assert_eq!(page["truncated"], false);
    // The old device's first bytes, as they were before the unplug.
    assert_eq!(page["output"], first_page["output"], "{page}");
    // What the new device said is there too, after what the old one said.
    let after = rig
        .ok(
            "read_output",
            json!({"cursor": head_before, "max_bytes": 65536}),
        )
        .await;
    assert!(text(&after, "output").contains("SW1>"), "{after}");
    drop(again);
}

#[tokio::test]
async fn adhoc_device_opens_on_connect_and_closes_on_disconnect() {
    let dir = tempfile::tempdir().unwrap();
    let device = sim::spawn(Profile::Silent, Some(dir.path().join("ttyUSB0")))
        .await
        .unwrap();
    let config = format!(
        "[server]\nallow_adhoc = true\nadhoc_devices = [\"{}/ttyUSB*\"]\n",
        dir.path().display()
    );
    let client = Rig::client_with(&dir, &config).await;
    let path = device.path().display().to_string();
    let conn = client
        .call(
            "connect",
            json!({"port": path, "name": "bench-r1", "baud": 115200, "preset": "linux"}),
        )
        .await
        .unwrap()
        .ok();
    assert_eq!(conn["connection"], "bench-r1");
    assert_eq!(conn["state"], "open");
    assert_eq!(conn["settings"]["baud"], 115200);
    assert_eq!(conn["preset"], "linux");
    client
        .call("send_text", json!({"text": "uname -a"}))
        .await
        .unwrap()
        .ok();
    assert!(
        device
            .wait_received(b"uname -a\r", Duration::from_secs(5))
            .await
    );
    let ports = client.call("list_ports", json!({})).await.unwrap().ok();
    assert_eq!(ports["ports"][0]["adhoc"], true);
    client.call("disconnect", json!({})).await.unwrap().ok();
    let ports = client.call("list_ports", json!({})).await.unwrap().ok();
    assert_eq!(
        ports["ports"],
        json!([]),
        "closed when its last session left"
    );
}

#[tokio::test]
async fn the_tool_list_is_the_contract() {
    let rig = Rig::start(Profile::Silent, "").await;
    let tools = rig.client.tools().await.unwrap();
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    let mut want = vec![
        "list_ports",
        "list_presets",
        "connect",
        "disconnect",
        "send_text",
        "send_hex",
        "read_until_prompt",
        "send_command",
        "read_available",
        "read_output",
        "clear_buffer",
        "status",
        "expect",
        "send_keys",
        "screen",
        "send_break",
        "set_line_settings",
        "set_lines",
        "pulse_line",
        "detect_baud",
        "get_transcript",
        "set_mode",
        "send_config",
        "confirm_commit",
        "rollback",
        "save_config",
        "alerts",
        "send_file",
        "receive_file",
        "power",
    ];
    want.sort();
    assert_eq!(names, want);
    for tool in &tools {
        assert!(
            tool.description.as_deref().is_some_and(|d| d.len() > 40),
            "{} needs a description",
            tool.name
        );
        assert!(
            tool.output_schema.is_some(),
            "{} declares no output schema",
            tool.name
        );
        assert_eq!(
            tool.input_schema.get("type").and_then(|t| t.as_str()),
            Some("object"),
            "{}",
            tool.name
        );
    }
    // What the model reads in every session: names, descriptions and
    // input schemas, about 4 bytes a token; the budget is about 8k tokens.
    let visible: usize = tools
        .iter()
        .map(|t| {
            json!({"name": t.name, "description": t.description, "inputSchema": *t.input_schema})
                .to_string()
                .len()
        })
        .sum();
    eprintln!("the model-visible tool surface: {visible} bytes");
    assert!(
        visible <= 32_000,
        "the model-visible tool surface is {visible} bytes"
    );
    let schema = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .input_schema
            .clone()
    };
    assert_eq!(schema("connect")["required"], json!(["port"]));
    assert_eq!(schema("send_command")["required"], json!(["command"]));
    assert!(
        schema("read_output")["properties"]["max_bytes"]["description"]
            .as_str()
            .unwrap()
            .contains("4-65536")
    );
    let presets = rig.ok("list_presets", json!({})).await;
    let names: Vec<&str> = presets["presets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"cisco-ios") && names.contains(&"generic"),
        "{names:?}"
    );
}

/// The events of a status, as text.
fn events(status: &serde_json::Value) -> Vec<(u64, String)> {
    status["events"]
        .as_array()
        .unwrap_or_else(|| panic!("no events in {status}"))
        .iter()
        .map(|e| (num(e, "at_unix_ms"), text(e, "what").to_owned()))
        .collect()
}

/// Polls `status` until an event satisfies `found` (the state changes
/// reach no MCP client as events, so this polls like `wait_state`).
async fn wait_event(
    rig: &Rig,
    within: Duration,
    found: impl Fn(&str) -> bool,
) -> (serde_json::Value, u64) {
    wait::eventually("such an event", within, async || {
        let status = rig.ok("status", json!({})).await;
        let at = events(&status)
            .into_iter()
            .find(|(_, e)| found(e))
            .map(|(at, _)| at);
        match at {
            Some(at) => Ok((status, at)),
            None => Err(status),
        }
    })
    .await
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[tokio::test]
async fn a_returning_device_is_reopened_at_once_not_when_the_backoff_timer_fires() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let link = rig.dir.path().join("sw1");
    let unplugged_at = now_ms();
    rig.sim.close().await;
    // The loss is noticed (a deadline on the event; how soon is printed,
    // not judged: a busy machine may take seconds).
    let (_, lost_at) = wait_event(&rig, Duration::from_secs(20), |e| e.starts_with("lost ")).await;
    let lost_after = lost_at.saturating_sub(unplugged_at);
    println!("lost {lost_after} ms after the unplug");
    // Let the backoff grow to its cap: the attempt that says "next attempt
    // in 5s" leaves the timer at 5 s.
    let (_, capped_at) = wait_event(&rig, Duration::from_secs(20), |e| {
        e.starts_with("cannot open") && e.contains("next attempt in 5s")
    })
    .await;
    let plugged_at = now_ms();
    let again = sim::spawn(Profile::Silent, Some(link))
        .await
        .expect("device");
    let status = rig.wait_state("open", Duration::from_secs(10)).await;
    assert_eq!(status["state"], "open", "{status}");
    let opened_at = events(&status)
        .iter()
        .rev()
        .find(|(_, e)| e.starts_with("opened"))
        .map(|(at, _)| *at)
        .unwrap_or_else(|| panic!("no opened event: {status}"));
    assert!(
        events(&status)
            .iter()
            .any(|(_, e)| e.ends_with("reappeared: reopening now")),
        "reopened because the path came back: {status}"
    );
    let after_plug = opened_at.saturating_sub(plugged_at);
    println!(
        "reopened {after_plug} ms after the device returned; the timer would have fired {} ms later",
        (capped_at + 5000).saturating_sub(opened_at)
    );
    assert!(after_plug < 1000, "reopened {after_plug} ms after the plug");
    assert!(
        opened_at < capped_at + 5000,
        "reopened before the 5 s timer: {status}"
    );
    // The last loss is in status, with its time and reason: a pty whose
    // far end closed reads as the end of file or, when the close races the
    // read, as EIO; either is what the kernel said.
    let loss = &status["last_loss"];
    let what = text(loss, "what");
    assert!(
        what.starts_with("lost ")
            && (what.contains("end of file") || what.contains("Input/output error")),
        "{status}"
    );
    assert!(num(loss, "at_unix_ms") <= capped_at, "{status}");
    assert_eq!(num(&status, "reconnects"), 1);
    // And it captures again.
    again.inject(b"back\r\n").await;
    let page = rig
        .ok("read_output", json!({"cursor": 0, "wait_ms": 5000}))
        .await;
    assert_eq!(text(&page, "output"), "back\r\n");
}

#[tokio::test]
async fn a_flapping_device_goes_down_and_status_says_why() {
    let rig = Rig::start(Profile::Silent, "down_after = 3\n").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let link = rig.dir.path().join("sw1");
    // The device drops right after each open. The first open may count
    // too (the rig starts in under 2 s), so flap until the port is down.
    rig.sim.close().await;
    let mut status = rig.wait_state("lost", Duration::from_secs(5)).await;
    for _ in 0..3 {
        if status["state"] == "down" {
            break;
        }
        let flap = sim::spawn(Profile::Silent, Some(link.clone()))
            .await
            .expect("device");
        let open = rig.wait_state("open", Duration::from_secs(10)).await;
        assert_eq!(open["state"], "open", "{open}");
        flap.close().await;
        status = rig.wait_state("down", Duration::from_secs(1)).await;
    }
    assert_eq!(status["state"], "down", "{status}");
    let evs = events(&status);
    let first_loss = evs
        .iter()
        .find(|(_, e)| e.starts_with("lost "))
        .map(|(at, _)| *at);
    let down_at = evs
        .iter()
        .find(|(_, e)| e.starts_with("down:"))
        .map(|(at, _)| *at);
    if let (Some(a), Some(b)) = (first_loss, down_at) {
        println!("down {} ms after the first quick loss", b.saturating_sub(a));
    }
    let why = text(&status, "down_reason");
    assert!(
        why.contains("lost 3 times in a row within 2s of opening"),
        "{status}"
    );
    assert!(
        events(&status)
            .iter()
            .any(|(_, e)| e.starts_with("down:") && e.contains("retrying every 60s")),
        "{status}"
    );
    let ports = rig.ok("list_ports", json!({})).await;
    assert_eq!(ports["ports"][0]["state"], "down", "{ports}");
    assert_eq!(ports["ports"][0]["down_reason"], why);
    let e = rig.err("send_text", json!({"text": "x"})).await;
    assert!(e.starts_with("port_lost: ") && e.contains("is down"), "{e}");
    // Not hammered: no reopen attempt while the path stays away (the
    // next timed attempt is 60 s off). The sleep is the window watched,
    // not a synchronisation.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let quiet = rig.ok("status", json!({})).await;
    assert_eq!(quiet["state"], "down", "{quiet}");
    assert_eq!(events(&quiet).last(), events(&status).last(), "{quiet}");
    // ...and a device that returns is tried at once, and stays.
    let healthy = sim::spawn(Profile::Silent, Some(link))
        .await
        .expect("device");
    let status = rig.wait_state("open", Duration::from_secs(5)).await;
    assert_eq!(status["state"], "open", "{status}");
    assert_eq!(status["down_reason"], serde_json::Value::Null);
    healthy.inject(b"up again\r\n").await;
    let read = rig
        .ok("read_output", json!({"cursor": 0, "wait_ms": 5000}))
        .await;
    assert!(text(&read, "output").contains("up again"), "{read}");
    let stayed = rig.ok("status", json!({})).await;
    assert_eq!(stayed["state"], "open", "and stays: {stayed}");
}
