//! Full-screen consoles over a real pty: named keys arrive as the exact
//! bytes a terminal sends, `screen` shows what a menu drew, the gateway
//! answers the device's terminal queries, and binary output round-trips
//! through the hex and base64 encodings.

use serialgate_testkit::rig as common;

use std::time::Duration;

use base64::Engine;
use common::{Rig, num, text};
use serde_json::json;
use serialgate_sim::Profile;

const WAIT: Duration = Duration::from_secs(5);

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

/// Makes the device print `bytes` followed by a marker and waits until the
/// gateway has read them all (consuming them).
async fn shown(rig: &Rig, bytes: &[u8]) {
    rig.sim.inject(bytes).await;
    rig.sim.inject(b"<drawn>").await;
    let r = rig
        .ok(
            "read_until_prompt",
            json!({"prompt": "<drawn>", "timeout": 5}),
        )
        .await;
    assert_eq!(r["matched"], true, "{r}");
}

#[tokio::test]
async fn send_keys_sends_the_exact_bytes() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let r = rig
        .ok(
            "send_keys",
            json!({"keys": ["ctrl-c", "esc", "up", "text:show ip", "enter", "f5", "backspace", "ctrl-h", "ctrl-]", "ctrl-^", "tab", "delete", "pgdn", "f1"]}),
        )
        .await;
    let want: &[u8] = b"\x03\x1b\x1b[Ashow ip\r\x1b[15~\x7f\x08\x1d\x1e\t\x1b[3~\x1b[6~\x1bOP";
    assert!(rig.sim.wait_received(want, WAIT).await);
    assert_eq!(num(&r, "bytes_sent"), want.len() as u64);
    assert_eq!(text(&r, "cursor_keys"), "normal");
    assert_eq!(
        text(&r, "hex"),
        want.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    // A space-separated string works too; nothing is appended.
    rig.ok("send_keys", json!({"keys": "CTRL-Z space left"}))
        .await;
    let mut all = want.to_vec();
    all.extend_from_slice(b"\x1a \x1b[D");
    assert_eq!(settled(&rig, "1").await, all);
}

#[tokio::test]
async fn cursor_keys_follow_the_devices_mode() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    shown(&rig, b"\x1b[?1h\x1b=\x1b[H\x1b[2Jmenu").await;
    let r = rig.ok("send_keys", json!({"keys": ["up", "home"]})).await;
    assert_eq!(text(&r, "cursor_keys"), "application");
    rig.ok(
        "send_keys",
        json!({"keys": ["down"], "cursor_keys": "normal"}),
    )
    .await;
    shown(&rig, b"\x1b[?1l").await;
    rig.ok("send_keys", json!({"keys": "right"})).await;
    assert_eq!(settled(&rig, "2").await, b"\x1bOA\x1bOH\x1b[B\x1b[C");
}

#[tokio::test]
async fn unknown_keys_are_refused_and_nothing_is_sent() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let e = rig
        .err("send_keys", json!({"keys": ["ctrl-c", "break"]}))
        .await;
    assert!(e.starts_with("invalid_argument: "), "{e}");
    assert!(
        e.contains("\"break\"") && e.contains("ctrl-a..ctrl-z"),
        "{e}"
    );
    for bad in [
        json!({"keys": []}),
        json!({"keys": ""}),
        json!({"keys": [1]}),
        json!({"keys": ["text:"]}),
        json!({"keys": vec!["esc"; 257]}),
        json!({"keys": "up", "cursor_keys": "sideways"}),
    ] {
        let e = rig.err("send_keys", bad.clone()).await;
        assert!(e.starts_with("invalid_argument: "), "{bad}: {e}");
    }
    assert_eq!(settled(&rig, "3").await, b"");
}

#[tokio::test]
async fn screen_shows_a_full_screen_menu() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    shown(
        &rig,
        b"boot noise\r\n\x1b]2;ROMMON setup\x07\x1b[H\x1b[2J\x1b[5;10HMain Menu\
\x1b[7;10H\x1b[7m 1. Boot image \x1b[0m\x1b[8;10H 2. Password recovery\
\x1b[24;1HSelect option: ",
    )
    .await;
    let s = rig.ok("screen", json!({})).await;
    let rows: Vec<&str> = s["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r.as_str().expect("row text"))
        .collect();
    assert_eq!(rows.len(), 24);
    assert_eq!(rows[4], format!("{}Main Menu", " ".repeat(9)));
    assert_eq!(rows[6], format!("{} 1. Boot image", " ".repeat(9)));
    assert_eq!(rows[7], format!("{} 2. Password recovery", " ".repeat(9)));
    assert_eq!(rows[23], "Select option: <drawn>");
    assert!(rows[..4].iter().all(|r| r.is_empty()), "{rows:?}");
    assert_eq!(
        s["highlights"],
        json!([{"row": 6, "col": 10, "text": "1. Boot image"}])
    );
    assert_eq!(s["cursor"], json!({"row": 23, "col": 22}));
    assert_eq!(s["size"], json!({"rows": 24, "cols": 80}));
    assert_eq!(s["from_clear"], true);
    assert_eq!(
        num(&s, "end"),
        num(&rig.ok("status", json!({})).await, "head")
    );
    // The title was set before the clear: not part of the rebuilt screen.
    assert_eq!(s["title"], json!(null));
    shown(&rig, b"\x1b]0;rommon 1\x07").await;
    let s = rig.ok("screen", json!({})).await;
    assert_eq!(text(&s, "title"), "rommon 1");
}

#[tokio::test]
async fn terminal_queries_are_answered() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.sim.inject(b"\x1b[2J\x1b[5;10Hhello\x1b[6n").await;
    assert!(
        rig.sim.wait_received(b"\x1b[5;15R", WAIT).await,
        "got {:?}",
        String::from_utf8_lossy(&rig.sim.received())
    );
    // Split across writes, and the other queries.
    rig.sim.inject(b"\x1b[").await;
    rig.sim.inject(b"c\x1b[5").await;
    rig.sim.inject(b"n\x1b[24;80H\x1b[6n").await;
    let want = b"\x1b[5;15R\x1b[?1;2c\x1b[0n\x1b[24;80R";
    assert!(
        rig.sim.wait_received(want, WAIT).await,
        "got {:?}",
        String::from_utf8_lossy(&rig.sim.received())
    );
    assert_eq!(settled(&rig, "4").await, want);
}

#[tokio::test]
async fn a_device_asking_in_a_loop_gets_no_flood_of_answers() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    // 200 status queries at once: 64 answers (a second's worth), no more.
    rig.sim.inject(&b"\x1b[5n".repeat(200)).await;
    let answers = b"\x1b[0n".repeat(64);
    assert!(
        rig.sim.wait_received(&answers, WAIT).await,
        "got {:?}",
        String::from_utf8_lossy(&rig.sim.received())
    );
    assert_eq!(settled(&rig, "flood").await, answers);
}

#[tokio::test]
async fn hex_and_base64_round_trip_binary_output() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let binary: &[u8] = b"\x00\xff\x01\x80\xfe\xc3(\x7f";
    rig.sim.inject(binary).await;
    rig.sim.inject(b"END").await;
    let r = rig
        .ok(
            "read_until_prompt",
            json!({"prompt": "END", "encoding": "hex", "timeout": 5}),
        )
        .await;
    assert_eq!(text(&r, "output"), "00ff0180fec3287f454e44");
    assert_eq!(text(&r, "prompt_text"), "END");
    assert_eq!(num(&r, "bytes"), binary.len() as u64 + 3);
    let start = num(&r, "start_cursor");
    // read_output: raw pages from any cursor, even inside a "character".
    let page = rig
        .ok(
            "read_output",
            json!({"cursor": start + 1, "max_bytes": 4, "encoding": "base64"}),
        )
        .await;
    let got = base64::engine::general_purpose::STANDARD
        .decode(text(&page, "output"))
        .expect("base64");
    assert_eq!(got, &binary[1..5]);
    assert_eq!(num(&page, "next_cursor"), start + 5);
    assert_eq!(page["has_more"], true);
    // As text, the same bytes lose their identity.
    let page = rig.ok("read_output", json!({"cursor": start})).await;
    assert!(text(&page, "output").contains('\u{fffd}'));
    // read_available always carries hex as well.
    rig.sim.inject(b"\x00\xffok").await;
    let mut hex = String::new();
    while hex.len() < 8 {
        let r = rig.ok("read_available", json!({"timeout": 5})).await;
        assert!(num(&r, "bytes") > 0, "nothing arrived");
        hex += text(&r, "hex");
    }
    assert_eq!(hex, "00ff6f6b");
    rig.sim.inject(b"\xfe\x00").await;
    let r = rig
        .ok(
            "read_available",
            json!({"timeout": 5, "encoding": "base64"}),
        )
        .await;
    let got = base64::engine::general_purpose::STANDARD
        .decode(text(&r, "output"))
        .expect("base64");
    assert_eq!(got, hex_bytes(text(&r, "hex")));
    assert!(b"\xfe\x00".starts_with(&got) && !got.is_empty());
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

#[tokio::test]
async fn the_new_tools_declare_their_schemas() {
    let rig = Rig::start(Profile::Silent, "").await;
    let tools = rig.client.tools().await.expect("tools");
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no tool {name}"))
    };
    for name in ["expect", "send_keys", "screen"] {
        let t = tool(name);
        assert!(t.description.as_deref().is_some_and(|d| d.len() > 40));
        assert!(
            t.output_schema.is_some(),
            "{name} declares no output schema"
        );
        assert_eq!(t.input_schema["type"], "object", "{name}");
    }
    assert_eq!(tool("expect").input_schema["required"], json!(["steps"]));
    assert_eq!(tool("send_keys").input_schema["required"], json!(["keys"]));
    let described = |name: &str, what: &str| {
        let d = tool(name)
            .description
            .as_deref()
            .unwrap_or_default()
            .to_owned();
        assert!(d.contains(what), "{name}: {d}");
    };
    described("expect", "1-64 steps");
    described("send_keys", "ctrl-]");
    described("send_keys", "f1-f12");
    for name in ["read_until_prompt", "read_available", "read_output"] {
        let enc = tool(name).input_schema["properties"]["encoding"].to_string();
        assert!(
            enc.contains("base64") && enc.contains("hex"),
            "{name}: {enc}"
        );
    }
}

/// Waits (consuming) until the menu parks its cursor at the bottom right,
/// which ends every drawing it makes.
async fn parked(rig: &Rig) -> serde_json::Value {
    let r = rig
        .ok(
            "read_until_prompt",
            json!({"prompt": "\u{1b}[24;80H", "timeout": 5}),
        )
        .await;
    assert_eq!(r["matched"], true, "{r}");
    r
}

#[tokio::test]
async fn a_bios_menu_draws_answers_and_follows_the_keys() {
    use serialgate_sim::menu::{ITEMS, TITLE};
    let rig = Rig::start(Profile::Menu, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    // Any key starts it: it asks where the cursor is, draws, and redraws
    // once the gateway has answered.
    rig.ok("send_keys", json!({"keys": "ctrl-l"})).await;
    assert!(rig.sim.wait_received(b"\x0c\x1b[1;1R", WAIT).await);
    let first = parked(&rig).await;
    assert!(text(&first, "output").starts_with("\u{1b}[6n"));
    let redraw = parked(&rig).await;
    assert!(text(&redraw, "output").contains("\u{1b}[2J"));
    let s = rig.ok("screen", json!({})).await;
    let row =
        |s: &serde_json::Value, i: usize| s["rows"][i].as_str().unwrap_or_default().to_owned();
    assert_eq!(row(&s, 0).trim(), TITLE);
    assert_eq!(row(&s, 4), format!("    {}", ITEMS[0]));
    assert_eq!(
        s["highlights"],
        json!([{"row": 4, "col": 4, "text": ITEMS[0]}])
    );
    assert_eq!(s["cursor"], json!({"row": 23, "col": 79}));
    rig.ok("send_keys", json!({"keys": ["down", "down"]})).await;
    parked(&rig).await;
    parked(&rig).await;
    rig.ok("send_keys", json!({"keys": ["up", "enter"]})).await;
    parked(&rig).await;
    parked(&rig).await;
    let s = rig.ok("screen", json!({})).await;
    assert_eq!(
        s["highlights"],
        json!([{"row": 5, "col": 4, "text": ITEMS[1]}])
    );
    assert_eq!(row(&s, 19), format!("    Selected: {}", ITEMS[1]));
    assert_eq!(row(&s, 4), format!("    {}", ITEMS[0]));
}
