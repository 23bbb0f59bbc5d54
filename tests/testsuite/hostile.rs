//! Bad input everywhere: every tool given missing, wrong-typed,
//! out-of-range, oversized and nonsensical arguments answers with its
//! documented error code and changes nothing (nothing reaches the device,
//! no cursor moves, no setting changes); and `check-config` refuses
//! truncated, binary, huge and duplicated config files with
//! `file:line:col` and what to do.

use serialgate_testkit::rig as common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Rig, binary, num, text};
use serde_json::{Map, Value, json};
use serialgate_sim::Profile;

/// What must stay as it was after a refused call.
#[derive(Debug, PartialEq)]
struct Snapshot {
    cursor: u64,
    head: u64,
    unread: u64,
    bytes_written: u64,
    settings: Value,
    state: Value,
    connection: Value,
    writer: Value,
}

async fn snapshot(rig: &Rig) -> Snapshot {
    let s = rig.ok("status", json!({"connection": "sw1"})).await;
    Snapshot {
        cursor: num(&s, "cursor"),
        head: num(&s, "head"),
        unread: num(&s, "unread_bytes"),
        bytes_written: num(&s, "bytes_written"),
        settings: s["settings"].clone(),
        state: s["state"].clone(),
        connection: s["connection"].clone(),
        writer: s["writer"].clone(),
    }
}

/// `args` shortened for a failure message.
fn shown(args: &Value) -> String {
    let s = args.to_string();
    if s.len() > 160 {
        format!("{}… ({} bytes)", &s[..160], s.len())
    } else {
        s
    }
}

/// `{ "t0": "r", …, "t{n-1}": "r" }`.
fn many_triggers(n: usize) -> Value {
    Value::Object(
        (0..n)
            .map(|i| (format!("trigger-{i}"), json!("r")))
            .collect::<Map<_, _>>(),
    )
}

#[tokio::test]
async fn every_tool_refuses_bad_arguments_and_changes_nothing() {
    let rig = Rig::start(Profile::Silent, "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    // Unread output, so that a cursor moved by a refused call shows.
    rig.sim.inject(b"before\r\n").await;
    rig.ok("read_output", json!({"cursor": 0, "wait_ms": 5000}))
        .await;
    let before = snapshot(&rig).await;
    assert_eq!(before.unread, 8, "{before:?}");

    let mega = "x".repeat(1 << 20);
    let regex_100k = format!("({})+#", "a|".repeat(50_000));
    let literal_100k = "#".repeat(100_000);
    let huge = json!(18_446_744_073_709_551_615u64);
    let cases: Vec<(&str, Value, &str)> = vec![
        // send_text
        ("send_text", json!({}), "invalid_argument"),
        ("send_text", json!({"text": 5}), "invalid_argument"),
        ("send_text", json!({"text": ["a"]}), "invalid_argument"),
        (
            "send_text",
            json!({"text": mega, "clear_buffer_first": true}),
            "invalid_argument",
        ),
        (
            "send_text",
            json!({"text": "x", "line_ending": 7}),
            "invalid_argument",
        ),
        (
            "send_text",
            json!({"text": "x", "clear_buffer_first": "maybe"}),
            "invalid_argument",
        ),
        (
            "send_text",
            json!({"text": "x", "connection": "nope"}),
            "unknown_connection",
        ),
        (
            "send_text",
            json!({"text": "x", "connection": "n".repeat(100_000)}),
            "unknown_connection",
        ),
        (
            "send_text",
            json!({"text": "x", "connection": 3}),
            "invalid_argument",
        ),
        // send_hex
        ("send_hex", json!({}), "invalid_argument"),
        ("send_hex", json!({"hex": ""}), "invalid_argument"),
        (
            "send_hex",
            json!({"hex": "00".repeat(1 << 19)}),
            "invalid_argument",
        ),
        ("send_hex", json!({"hex": "0x"}), "invalid_argument"),
        ("send_hex", json!({"hex": "é1"}), "invalid_argument"),
        // send_keys
        ("send_keys", json!({}), "invalid_argument"),
        ("send_keys", json!({"keys": []}), "invalid_argument"),
        ("send_keys", json!({"keys": ["warp-9"]}), "invalid_argument"),
        (
            "send_keys",
            json!({"keys": vec!["enter"; 10_000]}),
            "invalid_argument",
        ),
        (
            "send_keys",
            json!({"keys": [format!("text:{mega}")]}),
            "invalid_argument",
        ),
        (
            "send_keys",
            json!({"keys": ["enter"], "cursor_keys": "sideways"}),
            "invalid_argument",
        ),
        // send_break
        ("send_break", json!({"duration_ms": 0}), "invalid_argument"),
        ("send_break", json!({"duration_ms": -5}), "invalid_argument"),
        (
            "send_break",
            json!({"duration_ms": huge}),
            "invalid_argument",
        ),
        (
            "send_break",
            json!({"duration_ms": 10_001}),
            "invalid_argument",
        ),
        // read_until_prompt
        (
            "read_until_prompt",
            json!({"prompt": regex_100k, "regex": true}),
            "invalid_argument",
        ),
        (
            "read_until_prompt",
            json!({"prompt": literal_100k}),
            "invalid_argument",
        ),
        (
            "read_until_prompt",
            json!({"prompt": "(", "regex": true}),
            "bad_regex",
        ),
        (
            "read_until_prompt",
            json!({"prompt": "#", "timeout": -0.001}),
            "invalid_argument",
        ),
        (
            "read_until_prompt",
            json!({"prompt": "#", "timeout": "NaN"}),
            "invalid_argument",
        ),
        (
            "read_until_prompt",
            json!({"prompt": "#", "timeout": "inf"}),
            "invalid_argument",
        ),
        (
            "read_until_prompt",
            json!({"prompt": "#", "timeout": 1e308}),
            "invalid_argument",
        ),
        (
            "read_until_prompt",
            json!({"prompt": "#", "auto_reply": many_triggers(10_000)}),
            "invalid_argument",
        ),
        (
            "read_until_prompt",
            json!({"prompt": "#", "auto_reply": {"--More--": 5}}),
            "invalid_argument",
        ),
        (
            "read_until_prompt",
            json!({"prompt": "#", "auto_reply": {"t": mega}}),
            "invalid_argument",
        ),
        (
            "read_until_prompt",
            json!({"prompt": "#", "max_output": huge}),
            "invalid_argument",
        ),
        (
            "read_until_prompt",
            json!({"prompt": "#", "encoding": "rot13"}),
            "invalid_argument",
        ),
        // send_command: nothing is sent when any argument is bad
        ("send_command", json!({}), "invalid_argument"),
        ("send_command", json!({"command": mega}), "invalid_argument"),
        (
            "send_command",
            json!({"command": "show clock", "prompt": regex_100k, "regex": true}),
            "invalid_argument",
        ),
        (
            "send_command",
            json!({"command": "show clock", "prompt": "[", "regex": true}),
            "bad_regex",
        ),
        (
            "send_command",
            json!({"command": "show clock", "timeout": -1}),
            "invalid_argument",
        ),
        (
            "send_command",
            json!({"command": "show clock", "auto_reply": many_triggers(10_000)}),
            "invalid_argument",
        ),
        (
            "send_command",
            json!({"command": "show clock", "max_output": 0}),
            "invalid_argument",
        ),
        (
            "send_command",
            json!({"command": "a\nb"}),
            "invalid_argument",
        ),
        // expect: every step is checked before anything is sent
        ("expect", json!({}), "invalid_argument"),
        ("expect", json!({"steps": []}), "invalid_argument"),
        (
            "expect",
            json!({"steps": vec![json!({"send": "x"}); 10_000]}),
            "invalid_argument",
        ),
        (
            "expect",
            json!({"steps": [{"send": "ok"}, {"send": mega}]}),
            "invalid_argument",
        ),
        (
            "expect",
            json!({"steps": [{"send": "ok"}, {"expect": regex_100k, "regex": true}]}),
            "invalid_argument",
        ),
        (
            "expect",
            json!({"steps": [{"send": "ok"}, {"expect": "(", "regex": true}]}),
            "bad_regex",
        ),
        (
            "expect",
            json!({"steps": [{"send": "ok"}, {"expect": "#", "timeout": -1}]}),
            "invalid_argument",
        ),
        (
            "expect",
            json!({"steps": [{"send": "ok", "send_hex": "0d"}]}),
            "invalid_argument",
        ),
        (
            "expect",
            json!({"steps": [{"send": "ok"}], "auto_reply": many_triggers(10_000)}),
            "invalid_argument",
        ),
        (
            "expect",
            json!({"steps": [{"send": "ok", "frobnicate": true}]}),
            "invalid_argument",
        ),
        ("expect", json!({"steps": "send ok"}), "invalid_argument"),
        // read_available
        ("read_available", json!({"timeout": -1}), "invalid_argument"),
        (
            "read_available",
            json!({"timeout": "-inf"}),
            "invalid_argument",
        ),
        (
            "read_available",
            json!({"max_output": 0}),
            "invalid_argument",
        ),
        (
            "read_available",
            json!({"max_output": huge}),
            "invalid_argument",
        ),
        // read_output
        ("read_output", json!({"cursor": -1}), "invalid_argument"),
        ("read_output", json!({"cursor": 1.5}), "invalid_argument"),
        (
            "read_output",
            json!({"cursor": huge}),
            "cursor_out_of_range",
        ),
        (
            "read_output",
            json!({"max_bytes": huge}),
            "invalid_argument",
        ),
        ("read_output", json!({"max_bytes": 3}), "invalid_argument"),
        (
            "read_output",
            json!({"max_bytes": 1e30}),
            "invalid_argument",
        ),
        ("read_output", json!({"wait_ms": huge}), "invalid_argument"),
        ("read_output", json!({"wait_ms": -1}), "invalid_argument"),
        // clear_buffer, status, screen, disconnect: only a connection
        (
            "clear_buffer",
            json!({"connection": "nope"}),
            "unknown_connection",
        ),
        ("clear_buffer", json!({"cursor": 0}), "invalid_argument"),
        (
            "status",
            json!({"connection": "sw1 "}),
            "unknown_connection",
        ),
        ("status", json!({"verbose": true}), "invalid_argument"),
        ("screen", json!({"rows": 1000}), "invalid_argument"),
        (
            "screen",
            json!({"connection": "nope"}),
            "unknown_connection",
        ),
        (
            "disconnect",
            json!({"connection": "nope"}),
            "unknown_connection",
        ),
        ("disconnect", json!({"all": true}), "invalid_argument"),
        // get_transcript (this daemon has none; the range is checked first)
        (
            "get_transcript",
            json!({"last_bytes": 0}),
            "invalid_argument",
        ),
        (
            "get_transcript",
            json!({"last_bytes": huge}),
            "invalid_argument",
        ),
        // line settings and modem lines
        ("set_line_settings", json!({"baud": 0}), "invalid_argument"),
        (
            "set_line_settings",
            json!({"baud": huge}),
            "invalid_argument",
        ),
        (
            "set_line_settings",
            json!({"data_bits": 9}),
            "invalid_argument",
        ),
        (
            "set_line_settings",
            json!({"stop_bits": 3}),
            "invalid_argument",
        ),
        (
            "set_line_settings",
            json!({"parity": "sometimes"}),
            "invalid_argument",
        ),
        (
            "set_line_settings",
            json!({"baud": 115200, "flow_control": "telepathy"}),
            "invalid_argument",
        ),
        ("set_lines", json!({"dtr": "high"}), "invalid_argument"),
        ("pulse_line", json!({}), "invalid_argument"),
        ("pulse_line", json!({"line": "cts"}), "invalid_argument"),
        (
            "pulse_line",
            json!({"line": "dtr", "ms": 0}),
            "invalid_argument",
        ),
        (
            "pulse_line",
            json!({"line": "dtr", "ms": huge}),
            "invalid_argument",
        ),
        (
            "detect_baud",
            json!({"candidates": vec![9600; 10_000]}),
            "invalid_argument",
        ),
        ("detect_baud", json!({"candidates": []}), "invalid_argument"),
        (
            "detect_baud",
            json!({"candidates": [0, -9600]}),
            "invalid_argument",
        ),
        ("detect_baud", json!({"probe": mega}), "invalid_argument"),
        (
            "detect_baud",
            json!({"listen_ms": huge}),
            "invalid_argument",
        ),
        // connect (to the port this session is on, or nowhere)
        ("connect", json!({}), "invalid_argument"),
        ("connect", json!({"port": 1}), "invalid_argument"),
        ("connect", json!({"port": "   "}), "invalid_argument"),
        (
            "connect",
            json!({"port": "n".repeat(100_000)}),
            "invalid_argument",
        ),
        ("connect", json!({"port": "sw9"}), "unknown_connection"),
        (
            "connect",
            json!({"port": "sw1", "prompt": regex_100k, "prompt_regex": true}),
            "invalid_argument",
        ),
        (
            "connect",
            json!({"port": "sw1", "prompt": literal_100k}),
            "invalid_argument",
        ),
        (
            "connect",
            json!({"port": "sw1", "prompt": "(", "prompt_regex": true}),
            "bad_regex",
        ),
        (
            "connect",
            json!({"port": "sw1", "line_ending": "crcr"}),
            "invalid_argument",
        ),
        (
            "connect",
            json!({"port": "sw1", "data_bits": huge}),
            "invalid_argument",
        ),
        ("connect", json!({"port": "/dev/ttyUSB0"}), "forbidden"),
        (
            "connect",
            json!({"port": "sw1", "name": "n".repeat(100_000)}),
            "invalid_argument",
        ),
        // the listing tools take nothing
        ("list_ports", json!({"filter": "sw*"}), "invalid_argument"),
        ("list_presets", json!({"name": 1}), "invalid_argument"),
    ];

    let started = Instant::now();
    for (tool, args, code) in &cases {
        let case = format!("{tool} {}", shown(args));
        // A refusal comes within a generous deadline (a hang fails here);
        // how long the lot took is printed below.
        let outcome =
            tokio::time::timeout(Duration::from_secs(20), rig.client.call(tool, args.clone()))
                .await
                .unwrap_or_else(|_| panic!("{case}: no answer within 20 s"))
                .unwrap_or_else(|e| panic!("{case}: the MCP transport failed: {e}"));
        let e = match outcome {
            serialgate_testkit::client::Outcome::Err(e) => e,
            serialgate_testkit::client::Outcome::Ok(v) => {
                panic!("{case}: succeeded, expected {code}: {}", shown(&v))
            }
        };
        assert!(
            e.starts_with(&format!("{code}: ")),
            "{case}: expected {code}, got: {}",
            &e[..e.len().min(300)]
        );
        assert!(
            e.len() > code.len() + 20,
            "{case}: the error says too little: {e}"
        );
        assert!(
            e.len() < 4096,
            "{case}: the error echoes the input ({} bytes): {}…",
            e.len(),
            &e[..300]
        );
        assert_eq!(
            snapshot(&rig).await,
            before,
            "{case}: a refused call changed the port or the session"
        );
        assert!(
            rig.sim.received().is_empty(),
            "{case}: a refused call wrote {:?}",
            String::from_utf8_lossy(&rig.sim.received())
        );
    }
    println!(
        "{} bad calls refused in {:?}",
        cases.len(),
        started.elapsed()
    );
    // Still a working connection.
    rig.ok("send_text", json!({"text": "fine"})).await;
    assert!(
        rig.sim
            .wait_received(b"fine\r", Duration::from_secs(5))
            .await
    );
    let page = rig.ok("read_available", json!({"timeout": 0})).await;
    assert_eq!(text(&page, "output"), "before\r\n");
}

/// Runs `serialgate check-config FILE`; returns (success, stderr, time).
/// Its exit is awaited on a thread of its own, at most 20 s (a hang is
/// killed and fails the test).
fn check_config(path: &std::path::Path) -> (bool, String, Duration) {
    let t = Instant::now();
    let child = std::process::Command::new(binary())
        .arg("check-config")
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn check-config");
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    let (tx, exited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(output) = exited.recv_timeout(Duration::from_secs(20)) else {
        // SAFETY: kill(2) on our own child's pid, not yet reaped (its
        // waiting thread has not returned), no memory involved.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("check-config {} hangs", path.display());
    };
    let output = output.expect("wait for check-config");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.success(), stderr, t.elapsed())
}

/// Bytes a fixed xorshift makes (the same "random" file every run).
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn check_config_refuses_broken_files_with_a_place_and_a_remedy() {
    let dir = tempfile::tempdir().unwrap();
    let example =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/example.toml"))
            .unwrap();
    let cut_at = example.find("[ports.core-sw2]").unwrap() + "[ports.core".len();
    let mut twenty_mb = String::with_capacity(20 << 20);
    while twenty_mb.len() < 20 << 20 {
        twenty_mb.push_str("# a comment line that goes on and on and on and on\n");
    }
    let mut nuls = b"[server]\nretention = \"1MiB\"\n".to_vec();
    nuls.extend_from_slice(&[0u8; 64]);
    let device = "device = \"/dev/ttyUSB0\"\n";
    // (what, content, where the error is: "LINE:COL" or "" for the file,
    // words of the message, at least one of which says what to do)
    let cut_line = format!("{}:", example[..cut_at].lines().count());
    let cases: Vec<(&str, Vec<u8>, &str, Vec<&str>)> = vec![
        (
            "truncated in a table header",
            example.as_bytes()[..cut_at].to_vec(),
            &cut_line,
            vec!["not valid TOML", "cut short"],
        ),
        (
            "truncated in a string",
            b"[ports.a]\ndevice = \"/dev/tty".to_vec(),
            "2:",
            vec!["ports.a.device", "not valid TOML"],
        ),
        (
            "random bytes",
            noise(4096),
            "1:",
            vec!["not UTF-8", "right file"],
        ),
        ("NUL bytes", nuls, "3:1", vec!["NUL bytes", "right file"]),
        (
            "20 MB",
            twenty_mb.into_bytes(),
            "",
            vec!["bytes", "right file"],
        ),
        (
            "a duplicate key",
            format!("[ports.a]\n{device}baud = 9600\nbaud = 19200\n").into_bytes(),
            "4:1",
            vec!["duplicate key", "baud", "once"],
        ),
        (
            "a duplicate port",
            format!("[ports.a]\n{device}\n[ports.a]\ndevice = \"/dev/ttyUSB1\"\n").into_bytes(),
            // At the repeated name in the header.
            "4:8",
            vec!["duplicate key `a` in table `ports`", "once"],
        ),
        (
            "two ports on one device",
            format!("[ports.a]\n{device}\n[ports.b]\n{device}").into_bytes(),
            "5:10",
            vec!["already the device of port a", "one device, one port"],
        ),
    ];
    for (what, content, at, words) in cases {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, &content).unwrap();
        let (ok, stderr, took) = check_config(&path);
        let file = path.display().to_string();
        assert!(!ok, "{what}: check-config accepted it");
        let line = stderr.lines().next().unwrap_or_default();
        let place = line
            .strip_prefix("serialgate: ")
            .and_then(|l| l.strip_prefix(file.as_str()))
            .unwrap_or_else(|| panic!("{what}: no `serialgate: {file}…` in {stderr:?}"));
        if at.is_empty() {
            assert!(place.starts_with(':'), "{what}: {line}");
        } else {
            assert!(
                place.starts_with(&format!(":{at}")),
                "{what}: expected {file}:{at}, got {line}"
            );
        }
        for w in &words {
            assert!(line.contains(w), "{what}: {w:?} not in {line}");
        }
        assert_eq!(stderr.lines().count(), 1, "{what}: one line: {stderr}");
        assert!(line.len() < 600, "{what}: too long: {line}");
        // check_config kills a run past 20 s and fails: a refusal that
        // hangs is caught there; how long this one took is printed.
        println!("{what}: {took:?}: {line}");
    }
}
