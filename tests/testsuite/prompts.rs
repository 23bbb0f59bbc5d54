//! Prompt reads over a real pty: literal and regex prompts, what is left
//! for the next read, timeouts that lose nothing, auto-replies, and the
//! paged `show running-config` arriving whole.

use serialgate_testkit::rig as common;

use common::{Rig, num, running_config, text};
use serde_json::json;
use serialgate_sim::Profile;
use serialgate_sim::cisco::{MORE_ERASE, MORE_PROMPT};

#[tokio::test]
async fn literal_prompt_returns_up_to_it_and_leaves_the_rest() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.sim
        .inject(b"boot line 1\r\nUser Access Verification\r\n\r\nUsername: admin-after")
        .await;
    let r = rig
        .ok(
            "read_until_prompt",
            json!({"prompt": "Username: ", "timeout": 5}),
        )
        .await;
    assert_eq!(r["matched"], true);
    assert_eq!(r["timed_out"], false);
    assert_eq!(
        text(&r, "output"),
        "boot line 1\r\nUser Access Verification\r\n\r\nUsername: "
    );
    assert_eq!(text(&r, "prompt_text"), "Username: ");
    assert_eq!(
        num(&r, "bytes"),
        num(&r, "end_cursor") - num(&r, "start_cursor")
    );
    // What followed the prompt is the next read's.
    let rest = rig
        .ok(
            "read_until_prompt",
            json!({"prompt": "after", "timeout": 5}),
        )
        .await;
    assert_eq!(text(&rest, "output"), "admin-after");
    assert_eq!(num(&rest, "start_cursor"), num(&r, "end_cursor"));
}

#[tokio::test]
async fn regex_prompt_matches_at_the_end_of_what_arrived() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.sim
        .inject(b"R1(config)#interface Gi0/1\r\nR1(config-if)#")
        .await;
    let r = rig
        .ok(
            "read_until_prompt",
            json!({"prompt": r"^R1(\([\w-]+\))?# ?$", "regex": true, "timeout": 5}),
        )
        .await;
    // `^` and `$` are line anchors; `$` also holds at the end of what
    // arrived: the first prompt is followed by text, so only the last matches.
    assert_eq!(text(&r, "prompt_text"), "R1(config-if)#");
    assert_eq!(
        text(&r, "output"),
        "R1(config)#interface Gi0/1\r\nR1(config-if)#"
    );
    // (?m) with a prompt mid-output: it matches the line where it stands.
    rig.sim.inject(b"x\r\nR2>\r\ntrailing").await;
    let r = rig
        .ok(
            "read_until_prompt",
            json!({"prompt": r"(?m)^R2>\r?$", "regex": true, "timeout": 5}),
        )
        .await;
    assert_eq!(text(&r, "output"), "x\r\nR2>\r");
    let rest = rig.ok("read_available", json!({"timeout": 2})).await;
    assert_eq!(text(&rest, "output"), "\ntrailing");
}

#[tokio::test]
async fn timeout_returns_partial_output_and_loses_nothing() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.sim.inject(b"Building configuration...\r\n").await;
    let first = rig
        .ok(
            "read_until_prompt",
            json!({"prompt": "DONE#", "timeout": 0.3}),
        )
        .await;
    assert_eq!(first["timed_out"], true);
    assert_eq!(first["matched"], false);
    assert_eq!(text(&first, "output"), "Building configuration...\r\n");
    assert_eq!(text(&first, "prompt_text"), "");
    rig.sim.inject(b"[OK]\r\nDONE#").await;
    let second = rig
        .ok(
            "read_until_prompt",
            json!({"prompt": "DONE#", "timeout": 5}),
        )
        .await;
    assert_eq!(second["matched"], true);
    assert_eq!(num(&second, "start_cursor"), num(&first, "end_cursor"));
    let whole = format!("{}{}", text(&first, "output"), text(&second, "output"));
    assert_eq!(whole, "Building configuration...\r\n[OK]\r\nDONE#");
    // And the log still has all of it from the first start cursor.
    let page = rig
        .ok("read_output", json!({"cursor": first["start_cursor"]}))
        .await;
    assert_eq!(text(&page, "output"), whole);
}

#[tokio::test]
async fn timeout_zero_checks_once() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let r = rig
        .ok("read_until_prompt", json!({"prompt": "#", "timeout": 0}))
        .await;
    assert_eq!(r["timed_out"], true);
    assert_eq!(text(&r, "output"), "");
}

/// Removes the IOS pager and its erase sequence from raw bytes and splits
/// lines: an independent reading of what the device sent.
fn unpaged_lines(raw: &str) -> Vec<String> {
    let pager =
        String::from_utf8(MORE_PROMPT.to_vec()).unwrap() + std::str::from_utf8(MORE_ERASE).unwrap();
    raw.replace(&pager, "")
        .split("\r\n")
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn paged_running_config_through_read_until_prompt_with_auto_reply() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    rig.ok("send_text", json!({"text": "show running-config"}))
        .await;
    let r = rig
        .ok(
            "read_until_prompt",
            json!({"auto_reply": {"--More--": " "}, "timeout": 60, "max_output": 16 << 20}),
        )
        .await;
    assert_eq!(r["matched"], true, "{}", r["output"]);
    let output = text(&r, "output");
    let pages = output
        .matches(std::str::from_utf8(MORE_PROMPT).unwrap())
        .count() as u64;
    assert!(pages > 50, "only {pages} pages");
    assert_eq!(num(&r, "auto_replies"), pages, "one reply per --More--");
    let lines = unpaged_lines(output);
    // echo line, the config, then the prompt on the last line.
    assert_eq!(
        lines.first().map(String::as_str),
        Some("show running-config")
    );
    assert_eq!(lines.last().map(String::as_str), Some("SW1#"));
    assert_eq!(&lines[1..lines.len() - 1], &running_config()[..]);
}

#[tokio::test]
async fn inspector_style_string_arguments_and_nulls_work() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok(
        "connect",
        json!({"port": "sw1", "prompt": null, "line_ending": "CR"}),
    )
    .await;
    rig.sim.inject(b"ok> ").await;
    let r = rig
        .ok("read_until_prompt", json!({"prompt": "ok> ", "regex": "false", "timeout": "5", "auto_reply": "{}", "connection": null}))
        .await;
    assert_eq!(r["matched"], true);
}

#[tokio::test]
async fn auto_replies_stop_at_the_cap_of_a_runaway_device() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let cap = serialgate::DEFAULT_MAX_AUTO_REPLIES;
    // A device paging more often than the cap allows (each page shows a
    // line, so every answer makes progress).
    let pages: String = (0..cap + 50).map(|i| format!("{i}\r\n--More--")).collect();
    rig.sim.inject(pages.as_bytes()).await;
    rig.sim.inject(b"END>").await;
    let r = rig
        .ok(
            "read_until_prompt",
            json!({"prompt": "END>", "auto_reply": {"--More--": " "}, "timeout": 60, "max_output": 1 << 20}),
        )
        .await;
    assert_eq!(r["matched"], true);
    assert_eq!(num(&r, "auto_replies"), cap as u64);
    assert!(
        rig.sim
            .wait_received(&vec![b' '; cap], std::time::Duration::from_secs(5))
            .await
    );
    assert_eq!(rig.sim.received().len(), cap, "no reply past the cap");
}

#[tokio::test]
async fn a_trigger_that_only_comes_back_is_answered_a_few_times_then_left() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    // Each answer brings only the pager again (an erase, a blank line):
    // answering it for ever would flood the device.
    rig.sim.inject("page 1\r\n--More--".as_bytes()).await;
    rig.sim
        .inject("\r        \r\r\n--More--".repeat(20).as_bytes())
        .await;
    let e = rig
        .err(
            "read_until_prompt",
            json!({"prompt": "END>", "auto_reply": {"--More--": " "}, "timeout": 30}),
        )
        .await;
    let answered = serialgate::MAX_FRUITLESS_REPLIES + 1;
    assert!(e.contains("--More--") && e.contains("again"), "{e}");
    assert!(e.contains("page 1"), "the output so far comes with it: {e}");
    assert!(
        rig.sim
            .wait_received(&vec![b' '; answered], std::time::Duration::from_secs(5))
            .await
    );
    assert_eq!(rig.sim.received().len(), answered, "{e}");
    let status = rig.ok("status", json!({})).await;
    assert_eq!(status["blocked_prompt"], "pager: --More--", "{status}");
}
