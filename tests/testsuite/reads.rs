//! Cursor reads: `read_output` pages (UTF-8 safe, point-in-time, moving
//! nothing), `read_available`, `clear_buffer`, and capture while no agent
//! is attached.

use serialgate_testkit::rig as common;
use serialgate_testkit::wait;

use common::{Rig, num, text};
use serde_json::json;
use serialgate_sim::Profile;

const TEXT: &str = "héllo wörld — ünïcødé ✓ 😀 日本語 done\r\n";

#[tokio::test]
async fn read_output_pages_by_5_bytes_never_split_a_character() {
    let rig = Rig::start(Profile::Silent, "").await;
    let conn = rig.ok("connect", json!({"port": "sw1"})).await;
    let start = num(&conn, "head");
    rig.sim.inject(TEXT.as_bytes()).await;
    rig.ok(
        "read_until_prompt",
        json!({"prompt": "done\r\n", "timeout": 5}),
    )
    .await;
    let (mut cursor, mut joined, mut pages) = (start, String::new(), 0);
    loop {
        let page = rig
            .ok("read_output", json!({"cursor": cursor, "max_bytes": 5}))
            .await;
        let out = text(&page, "output");
        assert!(out.len() <= 5, "page {out:?} is longer than max_bytes");
        assert!(!out.contains('\u{FFFD}'), "page {out:?} split a character");
        assert_eq!(num(&page, "cursor"), cursor);
        assert_eq!(num(&page, "next_cursor"), cursor + out.len() as u64);
        assert_eq!(page["truncated"], false);
        joined.push_str(out);
        cursor = num(&page, "next_cursor");
        pages += 1;
        if page["has_more"] == false {
            break;
        }
        assert!(!out.is_empty(), "has_more with an empty page");
    }
    assert_eq!(joined, TEXT);
    assert!(pages >= TEXT.len() / 5);
    assert_eq!(cursor, start + TEXT.len() as u64);
}

#[tokio::test]
async fn read_output_cursor_errors_say_what_to_use() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.sim.inject("é!".as_bytes()).await;
    rig.ok("read_until_prompt", json!({"prompt": "!", "timeout": 5}))
        .await;
    let e = rig.err("read_output", json!({"cursor": 1})).await;
    assert!(
        e.starts_with("cursor_splits_utf8:") && e.contains("use 0"),
        "{e}"
    );
    let e = rig.err("read_output", json!({"cursor": 4})).await;
    assert!(e.starts_with("cursor_out_of_range:"), "{e}");
    let e = rig.err("read_output", json!({"max_bytes": 3})).await;
    assert!(
        e.starts_with("invalid_argument:") && e.contains("between 4 and 65536"),
        "{e}"
    );
    // At the head: an empty page, nothing more.
    let page = rig.ok("read_output", json!({"cursor": 3})).await;
    assert_eq!(
        (text(&page, "output"), &page["has_more"]),
        ("", &json!(false))
    );
}

#[tokio::test]
async fn read_output_moves_nothing_and_invalid_bytes_become_replacement_chars() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.sim.inject(b"ab\xffcd> ").await;
    let page = rig
        .ok("read_output", json!({"cursor": 0, "wait_ms": 5000}))
        .await;
    assert!(text(&page, "output").starts_with("ab"));
    // The consume cursor did not move: the prompt read gets everything.
    let r = rig
        .ok("read_until_prompt", json!({"prompt": "> ", "timeout": 5}))
        .await;
    assert_eq!(text(&r, "output"), "ab\u{FFFD}cd> ");
    assert_eq!(num(&r, "bytes"), 7, "cursors count raw bytes");
}

#[tokio::test]
async fn read_available_and_clear_buffer_move_the_session_cursor() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.sim
        .inject(b"%LINK-3-UPDOWN: Interface Gi1/0/1, changed state to up\r\n")
        .await;
    let r = rig.ok("read_available", json!({"timeout": 5})).await;
    assert_eq!(
        text(&r, "output"),
        "%LINK-3-UPDOWN: Interface Gi1/0/1, changed state to up\r\n"
    );
    assert_eq!(
        num(&r, "end_cursor") - num(&r, "start_cursor"),
        num(&r, "bytes")
    );
    let empty = rig.ok("read_available", json!({"timeout": 0.1})).await;
    assert_eq!(text(&empty, "output"), "");
    rig.sim.inject(b"noise\r\n").await;
    rig.ok(
        "read_output",
        json!({"cursor": r["end_cursor"], "wait_ms": 5000}),
    )
    .await;
    let cleared = rig.ok("clear_buffer", json!({})).await;
    assert_eq!(num(&cleared, "discarded_bytes"), 7);
    let status = rig.ok("status", json!({})).await;
    assert_eq!(num(&status, "unread_bytes"), 0);
    assert_eq!(num(&status, "cursor"), num(&cleared, "cursor"));
}

#[tokio::test]
async fn output_is_captured_before_anyone_connects() {
    let rig = Rig::start(Profile::Silent, "").await;
    // The port opened at start-up; the device talks with nobody attached.
    let line = "%SYS-5-RESTART: System restarted --\r\n";
    rig.sim.inject(line.as_bytes()).await;
    // list_ports shows the retained range without connecting; nothing
    // signals an MCP client when bytes arrive, so poll it (bounded).
    let what = "list_ports to show the line captured";
    wait::eventually(what, std::time::Duration::from_secs(20), async || {
        let ports = rig.ok("list_ports", json!({})).await;
        assert_eq!(ports["ports"][0]["name"], "sw1");
        wait::when(ports, |p| num(&p["ports"][0], "head") == line.len() as u64)
    })
    .await;
    let conn = rig.ok("connect", json!({"port": "sw1"})).await;
    assert_eq!(
        num(&conn, "head"),
        line.len() as u64,
        "captured with no session attached"
    );
    // The fresh session starts at the head; the past stays readable.
    let page = rig.ok("read_output", json!({"cursor": 0})).await;
    assert_eq!(text(&page, "output"), line);
    let status = rig.ok("status", json!({})).await;
    assert_eq!(num(&status, "unread_bytes"), 0);
}

#[tokio::test]
async fn retention_drops_the_oldest_and_says_so() {
    let rig = Rig::start(Profile::Silent, "[server]\nretention = \"4KiB\"\n").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"; // 64 bytes
    rig.sim.inject(line.repeat(100).as_bytes()).await;
    rig.sim.inject(b"END> ").await;
    let r = rig
        .ok(
            "read_until_prompt",
            json!({"prompt": "END> ", "timeout": 5, "max_output": 1 << 20}),
        )
        .await;
    assert_eq!(r["truncated"], true, "6405 bytes through a 4 KiB log");
    assert_eq!(num(&r, "start_cursor"), 6405 - 4096);
    let page = rig.ok("read_output", json!({"cursor": 0})).await;
    assert_eq!(page["truncated"], true);
    assert_eq!(num(&page, "cursor"), num(&page, "oldest"));
    let status = rig.ok("status", json!({})).await;
    assert_eq!(num(&status, "lost_bytes"), 6405 - 4096);
}
