//! `send_command` on the simulated Cisco switch: clean output, error
//! lines, paging answered by the preset, large outputs cut at max_output
//! and whole through their resource.

use serialgate_testkit::rig as common;

use common::{Rig, num, running_config, text};
use rmcp::model::ContentBlock;
use serde_json::json;
use serialgate_sim::Profile;
use serialgate_testkit::client::to_outcome;

#[tokio::test]
async fn show_clock_comes_back_clean() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let r = rig
        .ok("send_command", json!({"command": "show clock"}))
        .await;
    assert_eq!(r["matched"], true);
    assert_eq!(text(&r, "prompt_text"), "SW1#");
    let out = text(&r, "output");
    // One line, no echo, no prompt, no CR: "*12:34:56.789 UTC Mon Nov 30 2026".
    assert_eq!(out.lines().count(), 1, "{out:?}");
    assert!(out.starts_with('*') && out.contains(" UTC "), "{out:?}");
    assert!(
        !out.contains("show clock") && !out.contains("SW1#") && !out.contains('\r'),
        "{out:?}"
    );
    assert_eq!(r["error_lines"], json!([]));
}

#[tokio::test]
async fn paged_running_config_is_whole_and_clean() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let r = rig
        .ok(
            "send_command",
            json!({"command": "show running-config", "timeout": 60, "max_output": 16 << 20}),
        )
        .await;
    assert_eq!(r["matched"], true);
    assert_eq!(r["output_truncated"], false);
    assert!(
        num(&r, "auto_replies") > 50,
        "pages answered: {}",
        r["auto_replies"]
    );
    let out = text(&r, "output");
    assert!(!out.contains("--More--") && !out.contains('\u{8}') && !out.contains('\r'));
    let lines: Vec<&str> = out.split('\n').collect();
    let want = running_config();
    assert_eq!(lines.len(), want.len(), "line count");
    for (i, (got, want)) in lines.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "line {i}");
    }
}

#[tokio::test]
async fn default_max_output_cuts_and_the_resource_holds_the_whole() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let raw = rig
        .client
        .call_raw(
            "send_command",
            json!({"command": "show running-config", "timeout": 60}),
        )
        .await
        .expect("transport");
    let link = raw.content.iter().find_map(|c| match c {
        ContentBlock::ResourceLink(r) => Some(r.uri.clone()),
        _ => None,
    });
    let r = to_outcome(raw).ok();
    let whole_len = running_config().join("\n").len() as u64;
    assert!(
        whole_len > 65536,
        "the fixture must exceed the default max_output"
    );
    assert_eq!(r["output_truncated"], true);
    assert_eq!(num(&r, "total_bytes"), whole_len);
    let out = text(&r, "output");
    assert!(out.len() <= 65536 && out.len() > 60_000, "{}", out.len());
    assert!(running_config().join("\n").starts_with(out));
    let uri = text(&r, "resource").to_owned();
    assert_eq!(
        link.as_deref(),
        Some(uri.as_str()),
        "the result links its resource"
    );
    let whole = rig.client.read_resource(&uri).await.expect("read resource");
    assert_eq!(whole, running_config().join("\n"));
    // Raw, the same range is in the log too.
    let page = rig
        .ok(
            "read_output",
            json!({"cursor": r["start_cursor"], "max_bytes": 64}),
        )
        .await;
    assert!(text(&page, "output").starts_with("show running-config\r\n"));
}

#[tokio::test]
async fn invalid_input_is_reported_in_error_lines() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let r = rig
        .ok("send_command", json!({"command": "show interfacez"}))
        .await;
    assert_eq!(r["matched"], true);
    let errors = r["error_lines"].as_array().expect("error_lines");
    assert!(
        errors
            .iter()
            .any(|l| l == "% Invalid input detected at '^' marker."),
        "{errors:?}"
    );
    assert!(text(&r, "output").contains("% Invalid input detected at '^' marker."));
}

#[tokio::test]
async fn config_mode_prompts_match_and_commands_chain() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let r = rig
        .ok("send_command", json!({"command": "configure terminal"}))
        .await;
    assert_eq!(text(&r, "prompt_text"), "SW1(config)#");
    let r = rig
        .ok(
            "send_command",
            json!({"command": "interface GigabitEthernet1/0/1"}),
        )
        .await;
    assert_eq!(text(&r, "prompt_text"), "SW1(config-if)#");
    assert_eq!(text(&r, "output"), "");
    let r = rig.ok("send_command", json!({"command": "end"})).await;
    assert_eq!(text(&r, "prompt_text"), "SW1#");
}

#[tokio::test]
async fn terminal_length_zero_means_no_pages_to_answer() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    rig.ok("send_command", json!({"command": "terminal length 0"}))
        .await;
    let r = rig
        .ok(
            "send_command",
            json!({"command": "show running-config", "max_output": 16 << 20}),
        )
        .await;
    assert_eq!(num(&r, "auto_replies"), 0);
    assert_eq!(text(&r, "output"), running_config().join("\n"));
}

#[tokio::test]
async fn reload_confirm_is_not_answered_silently() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let r = rig
        .ok("send_command", json!({"command": "reload", "timeout": 0.5}))
        .await;
    assert_eq!(r["timed_out"], true, "the device waits at [confirm]: {r}");
    assert!(text(&r, "output").contains("[confirm]"));
    let status = rig.ok("status", json!({})).await;
    assert!(
        text(&status, "blocked_prompt").starts_with("confirm:"),
        "{status}"
    );
    // The agent decides: "n" keeps the switch running.
    rig.ok("send_text", json!({"text": "n", "line_ending": "none"}))
        .await;
    let back = rig.ok("read_until_prompt", json!({"timeout": 5})).await;
    assert_eq!(text(&back, "prompt_text"), "SW1#");
}

#[tokio::test]
async fn send_hex_writes_exact_bytes() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let r = rig.ok("send_hex", json!({"hex": "03 1b5b41 ff"})).await;
    assert_eq!(num(&r, "bytes_sent"), 5);
    assert!(
        rig.sim
            .wait_received(b"\x03\x1b[A\xff", std::time::Duration::from_secs(5))
            .await
    );
    let r = rig
        .ok("send_text", json!({"text": "hello", "line_ending": "crlf"}))
        .await;
    assert_eq!(num(&r, "bytes_sent"), 7);
    assert!(
        rig.sim
            .wait_received(b"hello\r\n", std::time::Duration::from_secs(5))
            .await
    );
}
