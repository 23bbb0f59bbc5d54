//! A 20 MiB `show tech-support` read end to end: `send_command` cuts it
//! at `max_output` and links the whole, the resource gives every clean
//! line once and in order, and `read_output` pages give every raw line
//! once and in order. A large result's text block says where the output
//! is instead of copying it, and its JSON is not held whole beside it.

use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimOptions};
use serialgate_testkit::client::GateClient;
use serialgate_testkit::load::{AnonPeak, pid_with_cmdline, proc_status_kib};
use serialgate_testkit::rig::{binary, enable, num, text};

/// 262 144 lines of 80 bytes: 20 MiB.
const LINES: usize = 20 * 1024 * 1024 / 80;

/// Checks that `text` is the tech-support lines 1..=LINES, each followed by
/// `end` (the last one optionally not), trailing blanks dropped when
/// `clean`.
fn check_lines(text: &str, end: &str, clean: bool) {
    let mut rest = text;
    for n in 1..=LINES {
        let line = sim::cisco::tech_support_line(n);
        let line = if clean {
            line.trim_end()
        } else {
            line.as_str()
        };
        rest = rest.strip_prefix(line).unwrap_or_else(|| {
            panic!(
                "line {n}: expected {line:?}, got {:?}",
                &rest[..rest.len().min(100)]
            )
        });
        rest = match rest.strip_prefix(end) {
            Some(r) => r,
            None if n == LINES && rest.is_empty() => rest,
            None => panic!(
                "line {n} not ended by {end:?}: {:?}",
                &rest[..rest.len().min(40)]
            ),
        };
    }
    assert!(rest.is_empty(), "{} bytes after the last line", rest.len());
}

async fn ok(client: &GateClient, tool: &str, args: Value) -> Value {
    client.call(tool, args).await.expect("MCP transport").ok()
}

#[tokio::test]
async fn a_20_mib_tech_support_reads_whole_through_the_resource_and_pages() {
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("sw1");
    let options = SimOptions {
        tech_support_lines: LINES,
        ..SimOptions::default()
    };
    let _sim = sim::spawn_with(Profile::CiscoIos, Some(link.clone()), options)
        .await
        .expect("simulated switch");
    let config = dir.path().join("serialgate.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nretention = \"24MiB\"\n\n[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n",
            link.display()
        ),
    )
    .expect("config");
    // rmcp's stdio client drops a message over 16 MiB; the whole 20 MiB
    // resource is one message.
    let client = GateClient::spawn_with_line_limit(&binary(), &config, 64 << 20)
        .await
        .expect("spawn serialgate");
    ok(&client, "connect", json!({"port": "sw1"})).await;
    enable(&client).await;
    ok(
        &client,
        "send_command",
        json!({"command": "terminal length 0"}),
    )
    .await;

    let raw = client
        .call_raw(
            "send_command",
            json!({"command": "show tech-support", "timeout": 120}),
        )
        .await
        .expect("MCP transport");
    let result = raw.structured_content.clone().expect("structured content");
    assert_eq!(result["matched"], true, "{}", result["prompt_text"]);
    assert_eq!(result["output_truncated"], true);
    assert_eq!(result["truncated"], false);
    let total = num(&result, "total_bytes");
    assert!(total > 20_000_000, "{total}");
    assert_eq!(text(&result, "output").len(), 65536);
    // The inline part is small, so its text copy is the whole JSON.
    let copy = raw.content[0].as_text().expect("a text block").text.clone();
    assert_eq!(serde_json::from_str::<Value>(&copy).expect("JSON"), result);
    let uri = text(&result, "resource").to_owned();
    assert!(
        raw.content
            .iter()
            .any(|c| c.as_resource_link().is_some_and(|l| l.uri == uri)),
        "the result links its resource"
    );

    // The resource: every clean line once, in order. Meanwhile the
    // daemon's anonymous memory grows by about the text once, not by
    // the text and its whole JSON message.
    let daemon = pid_with_cmdline(&config).expect("the daemon's process");
    let before = proc_status_kib(daemon, "RssAnon").expect("RssAnon");
    let sampling = AnonPeak::start(daemon);
    let whole = client.read_resource(&uri).await;
    let peak = sampling.stop().expect("RssAnon while sending");
    let whole = whole.expect("resource read");
    assert_eq!(whole.len() as u64, total);
    let grew = peak.saturating_sub(before) * 1024;
    println!("while the resource was sent the daemon grew by {grew} bytes for {total} of text");
    assert!(
        grew < total * 3 / 2,
        "the daemon grew by {grew} bytes while sending {total} bytes of text"
    );
    check_lines(&whole, "\n", true);
    drop(whole);

    // read_output pages over the same range: every raw line, in order.
    let (start, end) = (num(&result, "start_cursor"), num(&result, "end_cursor"));
    let mut cursor = start;
    let mut bytes = String::with_capacity((end - start) as usize);
    while cursor < end {
        let page = ok(
            &client,
            "read_output",
            json!({"cursor": cursor, "max_bytes": 65536}),
        )
        .await;
        assert_eq!(num(&page, "cursor"), cursor);
        bytes.push_str(text(&page, "output"));
        cursor = num(&page, "next_cursor");
    }
    let body = bytes
        .strip_prefix("show tech-support\r\n")
        .expect("the echo first");
    let body = body.strip_suffix("SW1#").expect("the prompt last");
    check_lines(body, "\r\n", false);

    // A large inline result: no text copy of the output, the other fields
    // in its text block.
    ok(&client, "send_text", json!({"text": "show tech-support"})).await;
    let raw = client
        .call_raw(
            "read_until_prompt",
            json!({"timeout": 120, "max_output": 2_000_000}),
        )
        .await
        .expect("MCP transport");
    let result = raw.structured_content.clone().expect("structured content");
    assert_eq!(result["matched"], true);
    assert_eq!(result["output_truncated"], true);
    let output = text(&result, "output");
    assert_eq!(output.len(), 2_000_000);
    assert!(
        output.starts_with("show tech-support\r\n000001 "),
        "{}",
        &output[..40]
    );
    let copy = raw.content[0].as_text().expect("a text block").text.clone();
    assert!(copy.len() < 4096, "{} bytes of text copy", copy.len());
    assert!(
        copy.starts_with("output: 2000000 bytes, in structuredContent.output only"),
        "{copy}"
    );
    assert!(
        copy.contains(&format!("\"total_bytes\":{}", end - start)),
        "{copy}"
    );
    client.close().await.expect("close");
}

#[test]
fn the_simulators_tech_support_size_is_bounded() {
    for bad in ["0", "1000000", "-1", "many"] {
        let out = std::process::Command::new(binary())
            .args(["simulate", "cisco-ios", "--tech-support-lines", bad])
            .output()
            .expect("run serialgate");
        assert!(!out.status.success(), "{bad} accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        // `-1` reads as an unknown flag: refused all the same.
        assert!(
            stderr.contains("--tech-support-lines") || stderr.contains("'-1'"),
            "{bad}: {stderr}"
        );
    }
}
