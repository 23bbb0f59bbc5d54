//! A port's life: unplugged and plugged back in with the log kept, ad-hoc
//! devices opened and closed, and the tool list an agent sees.

mod common;

use std::time::Duration;

use common::{Rig, num, text};
use serde_json::json;
use serialgate::sim::{self, Profile};

#[tokio::test]
async fn unplugged_device_is_lost_then_reopened_with_its_log_kept() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let before = rig
        .ok("send_command", json!({"command": "show clock"}))
        .await;
    let head_before = num(&before, "end_cursor");
    // Pull the cable.
    let link = rig.dir.path().join("sw1");
    rig.sim.close().await;
    let lost = rig.wait_state("lost", Duration::from_secs(2)).await;
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
    assert!(!text(&page, "output").is_empty());
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
