//! Terminal fidelity per vendor: the real binary over MCP against each
//! simulated device on a pty. Paged outputs come back whole and clean,
//! prompts match after redraws and in colour, multi-byte UTF-8 written a
//! byte at a time arrives intact, full-screen menus draw.

use serialgate_testkit::rig as common;

use std::time::Duration;

use common::{Rig, num, text};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile};

/// Connects to `sw1`, sends RETURN and waits for the preset's prompt.
async fn wake(rig: &Rig) -> Value {
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.ok("send_text", json!({"text": ""})).await;
    let woke = rig.ok("read_until_prompt", json!({"timeout": 5})).await;
    assert_eq!(woke["matched"], true, "{woke}");
    woke
}

/// A paged command's clean output, with every page answered.
async fn paged(rig: &Rig, command: &str) -> Value {
    let r = rig
        .ok(
            "send_command",
            json!({"command": command, "timeout": 60, "max_output": 16 << 20}),
        )
        .await;
    assert_eq!(r["matched"], true, "{r}");
    assert_eq!(r["output_truncated"], false);
    r
}

/// Asserts `output` is `want`, line for line, each exactly once, in order.
fn assert_lines(output: &str, want: &[String]) {
    let got: Vec<&str> = output.split('\n').collect();
    for (i, (got, want)) in got.iter().zip(want).enumerate() {
        assert_eq!(got, want, "line {i}");
    }
    assert_eq!(got.len(), want.len(), "line count");
}

/// Asserts nothing of a terminal's machinery is left in `output`.
fn assert_plain(output: &str) {
    let control = output
        .chars()
        .find(|&c| c.is_control() && c != '\n' && c != '\t');
    assert_eq!(control, None, "a control character in {output:?}");
    assert!(!output.contains('\u{fffd}'), "a broken character");
}

#[tokio::test]
async fn junos_paged_configuration_is_whole_and_the_redrawn_prompt_matches() {
    let rig = Rig::start_with(Profile::JuniperJunos, "juniper-junos", "").await;
    let woke = wake(&rig).await;
    assert_eq!(text(&woke, "prompt_text"), "admin@mx1> ");
    let r = paged(&rig, "show configuration").await;
    let want = sim::junos::configuration_lines();
    assert!(
        num(&r, "auto_replies") as usize >= want.len() / 23,
        "{}",
        r["auto_replies"]
    );
    let out = text(&r, "output");
    assert!(
        !out.contains("---(more") && !out.contains("%)---"),
        "pager left"
    );
    assert_plain(out);
    assert_lines(out, &want);
    // After the last page the pager erased its line (`\r`, spaces, `\r`)
    // and the prompt was drawn over it: it matched all the same, and
    // prompt_text is what the terminal shows.
    assert_eq!(text(&r, "prompt_text"), "admin@mx1> ");
    let raw = rig
        .ok(
            "read_output",
            json!({"cursor": num(&r, "end_cursor") - 64, "max_bytes": 64}),
        )
        .await;
    let tail = format!("---(more 100%)---\r{}\radmin@mx1> ", " ".repeat(17));
    assert!(text(&raw, "output").ends_with(&tail), "{:?}", raw["output"]);
}

#[tokio::test]
async fn junos_line_redraw_matches_the_prompt() {
    let rig = Rig::start_with(Profile::JuniperJunos, "juniper-junos", "").await;
    wake(&rig).await;
    // Ctrl-L: Junos redraws the line with `\r`, spaces, `\r`, the prompt.
    rig.ok("send_hex", json!({"hex": "0c"})).await;
    let r = rig.ok("read_until_prompt", json!({"timeout": 5})).await;
    assert_eq!(r["matched"], true, "{r}");
    assert_eq!(text(&r, "prompt_text"), "admin@mx1> ");
    assert_eq!(
        text(&r, "output"),
        format!("\r{}\radmin@mx1> ", " ".repeat(79))
    );
    // The next command still works from the redrawn line.
    let r = rig
        .ok("send_command", json!({"command": "show version"}))
        .await;
    assert!(
        text(&r, "output").starts_with("Hostname: mx1\nModel: mx204"),
        "{r}"
    );
}

#[tokio::test]
async fn junos_echo_repainted_completed_or_wrapped_is_removed() {
    let rig = Rig::start_with(Profile::JuniperJunos, "juniper-junos", "").await;
    wake(&rig).await;
    // Space completes each abbreviation: `sh` is repainted `show ` over
    // backspaces, and so on.
    let r = rig
        .ok("send_command", json!({"command": "sh sys up"}))
        .await;
    let out = text(&r, "output");
    assert!(out.starts_with("Current time: "), "{out:?}");
    assert_eq!(out.lines().count(), 6, "{out:?}");
    // TAB completes too.
    let r = rig
        .ok("send_command", json!({"command": "sh\tsystem uptime"}))
        .await;
    assert!(text(&r, "output").starts_with("Current time: "), "{r}");
    // A command line longer than the screen is wide: the device wraps its
    // echo at column 80 with ` \r`.
    let command = "show configuration | match \"link-0007 to dist-07.lab.example.net\" | no-more";
    assert!("admin@mx1> ".len() + command.len() > 80);
    let r = rig.ok("send_command", json!({"command": command})).await;
    assert_eq!(
        text(&r, "output"),
        "        description \"link-0007 to dist-07.lab.example.net et-0/0/6 circuit CKT-200006\";"
    );
    let raw = rig
        .ok(
            "read_output",
            json!({"cursor": r["start_cursor"], "max_bytes": 200}),
        )
        .await;
    assert!(
        text(&raw, "output").contains("example.net\" | n \ro-more\r\n"),
        "{:?}",
        raw["output"]
    );
}

#[tokio::test]
async fn junos_errors_are_reported() {
    let rig = Rig::start_with(Profile::JuniperJunos, "juniper-junos", "").await;
    wake(&rig).await;
    let r = rig
        .ok("send_command", json!({"command": "shw version"}))
        .await;
    assert_eq!(text(&r, "output"), "           ^\nunknown command.");
    assert_eq!(
        r["error_lines"],
        json!(["           ^", "unknown command."])
    );
    let r = rig.ok("send_command", json!({"command": "show foo"})).await;
    assert_eq!(
        r["error_lines"],
        json!(["                ^", "syntax error, expecting <command>."])
    );
    let r = rig
        .ok("send_command", json!({"command": "configure"}))
        .await;
    assert_eq!(text(&r, "prompt_text"), "admin@mx1# ");
    assert_eq!(text(&r, "output"), "Entering configuration mode\n\n[edit]");
    let r = rig
        .ok(
            "send_command",
            json!({"command": "set cli screen-length 0"}),
        )
        .await;
    assert_eq!(r["error_lines"][1], "syntax error.", "{r}");
}

#[tokio::test]
async fn junos_screen_length_zero_means_no_pages() {
    let rig = Rig::start_with(Profile::JuniperJunos, "juniper-junos", "").await;
    wake(&rig).await;
    let r = rig
        .ok(
            "send_command",
            json!({"command": "set cli screen-length 0"}),
        )
        .await;
    assert_eq!(text(&r, "output"), "Screen length set to 0");
    let r = paged(&rig, "show configuration").await;
    assert_eq!(num(&r, "auto_replies"), 0);
    assert_eq!(text(&r, "prompt_text"), "admin@mx1> ");
    assert_lines(text(&r, "output"), &sim::junos::configuration_lines());
}

#[tokio::test]
async fn huawei_paged_configuration_is_whole_and_clean() {
    let rig = Rig::start_with(Profile::HuaweiVrp, "huawei-vrp", "").await;
    let woke = wake(&rig).await;
    assert_eq!(text(&woke, "prompt_text"), "<HUAWEI>");
    let r = paged(&rig, "display current-configuration").await;
    let want = sim::huawei::current_configuration_lines();
    assert_eq!(
        num(&r, "auto_replies") as usize,
        want.len().div_ceil(23) - 1
    );
    let out = text(&r, "output");
    assert!(!out.contains("More"), "pager left");
    assert_plain(out);
    assert_lines(out, &want);
    assert_eq!(text(&r, "prompt_text"), "<HUAWEI>");
}

#[tokio::test]
async fn huawei_prompt_after_the_pager_erase_matches() {
    let rig = Rig::start_with(Profile::HuaweiVrp, "huawei-vrp", "").await;
    wake(&rig).await;
    // `q` at the pager: VRP erases it (`ESC[42D`, spaces, `ESC[42D`) and
    // draws the prompt where it was.
    let r = rig
        .ok(
            "send_command",
            json!({"command": "dis cur", "auto_reply": {"---- More ----": "q"}}),
        )
        .await;
    assert_eq!(r["matched"], true, "{r}");
    assert_eq!(num(&r, "auto_replies"), 1);
    assert_eq!(text(&r, "prompt_text"), "<HUAWEI>");
    let want = sim::huawei::current_configuration_lines();
    assert_lines(text(&r, "output"), &want[..23]);
    // Views and errors.
    let r = rig
        .ok("send_command", json!({"command": "system-view"}))
        .await;
    assert_eq!(text(&r, "prompt_text"), "[HUAWEI]");
    let r = rig
        .ok("send_command", json!({"command": "display foo"}))
        .await;
    assert_eq!(
        r["error_lines"],
        json!([
            format!("{}^", " ".repeat("[HUAWEI]display ".len())),
            "Error: Unrecognized command found at '^' position."
        ])
    );
    let r = rig
        .ok(
            "send_command",
            json!({"command": "screen-length 0 temporary"}),
        )
        .await;
    assert!(text(&r, "output").starts_with("Info: "), "{r}");
    let r = paged(&rig, "display current-configuration").await;
    assert_eq!(num(&r, "auto_replies"), 0);
    assert_lines(text(&r, "output"), &want);
}

#[tokio::test]
async fn procurve_paged_running_config_is_whole_and_clean() {
    let rig = Rig::start_with(Profile::HpProcurve, "hp-procurve", "").await;
    let woke = wake(&rig).await;
    assert_eq!(text(&woke, "prompt_text"), "ProCurve# ");
    let r = paged(&rig, "show running-config").await;
    let want = sim::procurve::running_config_lines();
    assert_eq!(
        num(&r, "auto_replies") as usize,
        (want.len() + 1).div_ceil(sim::procurve::PAGE_LINES) - 1
    );
    let out = text(&r, "output");
    assert!(
        !out.contains("MORE") && !out.contains("Control-C"),
        "pager left"
    );
    assert_plain(out);
    assert_lines(out, &want);
    let r = rig.ok("send_command", json!({"command": "shw run"})).await;
    assert_eq!(r["error_lines"], json!(["Invalid input: shw"]));
    rig.ok("send_command", json!({"command": "no page"})).await;
    let r = paged(&rig, "show running-config").await;
    assert_eq!(num(&r, "auto_replies"), 0);
    assert_lines(text(&r, "output"), &want);
}

#[tokio::test]
async fn coloured_prompt_matches_and_output_has_no_escapes() {
    let rig = Rig::start_with(Profile::AnsiColour, "linux", "").await;
    let woke = wake(&rig).await;
    // The whole coloured prompt line matched, and prompt_text is what the
    // terminal shows of it: no colours, no bracketed-paste switch.
    assert_eq!(text(&woke, "prompt_text"), "user@host:~$ ", "{woke}");
    let r = rig
        .ok("send_command", json!({"command": "ls --color"}))
        .await;
    assert_eq!(r["matched"], true);
    let out = text(&r, "output");
    assert_plain(out);
    assert_lines(out, &sim::shell::ls_lines());
    let r = rig
        .ok(
            "send_command",
            json!({"command": "grep --color ssh /etc/services"}),
        )
        .await;
    let out = text(&r, "output");
    assert_plain(out);
    assert_eq!(
        out.lines().next(),
        Some("ssh\t\t22/tcp\t\t\t\t# SSH Remote Login Protocol")
    );
    let r = rig.ok("send_command", json!({"command": "nmcli"})).await;
    assert_eq!(r["error_lines"], json!(["-bash: nmcli: command not found"]));
}

#[tokio::test]
async fn utf8_written_a_byte_at_a_time_arrives_whole() {
    let rig = Rig::start_with(Profile::Utf8Slow, "cisco-ios", "").await;
    let woke = wake(&rig).await;
    assert_eq!(text(&woke, "prompt_text"), "edge-1#");
    let want = sim::utf8::descriptions_lines();
    let r = rig
        .ok(
            "send_command",
            json!({"command": "show interfaces description", "timeout": 30}),
        )
        .await;
    let out = text(&r, "output");
    assert_plain(out);
    assert_lines(out, &want);
    assert!(out.contains("Zürich–Genève ✓") && out.contains("🚀"));

    // The same bytes in small read_output pages: no page splits a
    // character.
    let raw: String = std::iter::once("show interfaces description".to_owned())
        .chain(want.iter().cloned())
        .map(|line| line + "\r\n")
        .collect();
    let (end, mut cursor) = (num(&r, "end_cursor"), num(&r, "start_cursor"));
    for max_bytes in [4, 5, 7] {
        let (mut joined, start) = (String::new(), cursor);
        while cursor < end {
            let page = rig
                .ok(
                    "read_output",
                    json!({"cursor": cursor, "max_bytes": max_bytes}),
                )
                .await;
            let chunk = text(&page, "output");
            assert!(chunk.len() <= max_bytes && !chunk.is_empty());
            assert!(
                !chunk.contains('\u{fffd}'),
                "page {chunk:?} split a character"
            );
            joined.push_str(chunk);
            cursor = num(&page, "next_cursor");
        }
        assert_eq!(joined, format!("{raw}edge-1#"));
        cursor = start;
    }
}

#[tokio::test]
async fn utf8_read_while_it_arrives_never_splits_a_character() {
    let rig = Rig::start_with(Profile::Utf8Slow, "cisco-ios", "").await;
    wake(&rig).await;
    let sent = rig
        .ok("send_text", json!({"text": "show interfaces description"}))
        .await;
    let mut cursor = num(&sent, "cursor");
    let mut joined = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !joined.ends_with("edge-1#") {
        assert!(tokio::time::Instant::now() < deadline, "{joined:?}");
        // Waits for the next byte at the head; returns at once while a
        // character is half there (an empty page), or with what arrived.
        let page = rig
            .ok(
                "read_output",
                json!({"cursor": cursor, "max_bytes": 16, "wait_ms": 1000}),
            )
            .await;
        let chunk = text(&page, "output");
        assert!(
            !chunk.contains('\u{fffd}'),
            "page {chunk:?} split a character"
        );
        joined.push_str(chunk);
        cursor = num(&page, "next_cursor");
    }
    let lines: Vec<&str> = joined.split("\r\n").collect();
    assert_eq!(lines[0], "show interfaces description");
    assert_eq!(&lines[1..lines.len() - 1], sim::utf8::descriptions_lines());
}

#[tokio::test]
async fn any_pager_literal_configured_on_a_port_is_answered_and_removed() {
    let extra = "pagers = [\"<Press SPACE for more>\"]\n\
                 auto_reply = { \"<Press SPACE for more>\" = \" \" }\n\
                 prompt = 'box\\$ $'\n";
    let rig = Rig::start_with(Profile::Silent, "generic", extra).await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let device = async {
        let wait = Duration::from_secs(10);
        assert!(rig.sim.wait_received(b"show log\r", wait).await);
        rig.sim
            .inject(b"show log\r\nboot ok\r\nlink up\r\n<Press SPACE for more>")
            .await;
        assert!(rig.sim.wait_received(b"show log\r ", wait).await);
        // Erased with backspaces: without the literal, a terminal would
        // show `link downACE for more>`.
        let mut erase = vec![0x08; 22];
        erase.extend_from_slice(b"link down\r\nbox$ ");
        rig.sim.inject(&erase).await;
    };
    let command = rig.ok("send_command", json!({"command": "show log"}));
    let (r, ()) = tokio::join!(command, device);
    assert_eq!(r["matched"], true, "{r}");
    assert_eq!(num(&r, "auto_replies"), 1);
    assert_eq!(text(&r, "output"), "boot ok\nlink up\nlink down");
}

#[tokio::test]
async fn menu_draws_a_full_screen_and_moves_on_arrows() {
    let rig = Rig::start_with(Profile::Menu, "generic", "").await;
    let conn = rig.ok("connect", json!({"port": "sw1"})).await;
    let head = num(&conn, "head");
    let park = "\x1b[24;80H";
    rig.ok("send_text", json!({"text": ""})).await;
    let drawn = rig
        .ok("read_until_prompt", json!({"prompt": park, "timeout": 5}))
        .await;
    let out = text(&drawn, "output");
    assert!(out.starts_with("\x1b[6n"), "asks for the cursor: {out:?}");
    assert!(out.contains("\x1b[2J") && out.contains(sim::menu::TITLE));
    // Down arrow: the selection moves to the second item.
    rig.ok("send_hex", json!({"hex": "1b5b42"})).await;
    let selected = format!("\x1b[7m{}", sim::menu::ITEMS[1]);
    rig.ok(
        "read_until_prompt",
        json!({"prompt": selected, "timeout": 5}),
    )
    .await;
    rig.ok("send_text", json!({"text": ""})).await;
    let opened = format!("Selected: {}", sim::menu::ITEMS[1]);
    let r = rig
        .ok("read_until_prompt", json!({"prompt": opened, "timeout": 5}))
        .await;
    // What a VT100 shows after all of it.
    let mut bytes = String::new();
    let mut cursor = head;
    while cursor < num(&r, "end_cursor") {
        let page = rig
            .ok("read_output", json!({"cursor": cursor, "max_bytes": 65536}))
            .await;
        bytes.push_str(text(&page, "output"));
        cursor = num(&page, "next_cursor");
    }
    let size = |n| std::num::NonZeroU16::new(n).expect("non-zero");
    let mut vt = vt100::Parser::new(size(sim::menu::ROWS), size(sim::menu::COLUMNS), 0);
    vt.process(bytes.as_bytes());
    let screen = vt.screen();
    let row = |r: u16| screen.contents_between(r - 1, 0, r - 1, sim::menu::COLUMNS);
    assert_eq!(row(1).trim(), sim::menu::TITLE);
    for (i, item) in sim::menu::ITEMS.iter().enumerate() {
        let r = sim::menu::FIRST_ITEM_ROW + i as u16;
        assert_eq!(row(r).trim(), *item);
        let cell = screen
            .cell(r - 1, sim::menu::ITEM_COLUMN - 1)
            .expect("cell");
        assert_eq!(cell.inverse(), i == 1, "item {i} reverse video");
    }
    assert_eq!(row(sim::menu::STATUS_ROW).trim(), opened);
}

#[tokio::test]
async fn a_device_that_does_not_echo_keeps_its_first_line() {
    let rig = Rig::start_with(Profile::Silent, "generic", "prompt = 'box\\$ $'\n").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let device = async {
        assert!(
            rig.sim
                .wait_received(b"show clock\r", Duration::from_secs(10))
                .await
        );
        rig.sim
            .inject(b"10:01:02 UTC Mon Mar 4 2024\r\nbox$ ")
            .await;
    };
    let command = rig.ok("send_command", json!({"command": "show clock"}));
    let (r, ()) = tokio::join!(command, device);
    assert_eq!(text(&r, "output"), "10:01:02 UTC Mon Mar 4 2024");
}
