//! `send_command` with `parse: true` end to end: the simulated devices'
//! outputs through the daemon's TextFSM parse, each checked against Python
//! textfsm (Google's reference) on the very text the MCP result carried;
//! the index's abbreviations, a command without a template, a user's
//! template winning over a shipped one, a broken one refused at load, and
//! hostile outputs answered within the deadline with the reason.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serialgate_sim::Profile;
use serialgate_testkit::rig::{Rig, text};

/// Python textfsm's records of `output` for `command` on `platform`, with
/// the templates serialgate ships.
fn python_records(python: &std::path::Path, platform: &str, command: &str, output: &str) -> Value {
    let v = python_result(python, platform, command, output);
    assert_eq!(v["error"], Value::Null, "python textfsm: {v}");
    v["python"].clone()
}

/// Python textfsm's answer: `{"python": records, "error": why}`.
fn python_result(python: &std::path::Path, platform: &str, command: &str, output: &str) -> Value {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new(python)
        .arg(root.join("tests/python/textfsm_fixtures.py"))
        .args(["text"])
        .arg(root.join("templates/ntc"))
        .args([platform, command])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(output.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).expect("python's JSON")
}

/// `command` with `parse: true`; its records must be Python's on the same
/// text and not empty. Returns the result.
async fn parsed_like_python(
    rig: &Rig,
    python: &std::path::Path,
    platform: &str,
    command: &str,
) -> Value {
    let r = rig
        .ok("send_command", json!({"command": command, "parse": true}))
        .await;
    assert_eq!(r["matched"], true, "{r}");
    let records = r["parsed"]
        .as_array()
        .unwrap_or_else(|| panic!("{command}: no records: {r}"));
    assert!(!records.is_empty(), "{command}: empty: {r}");
    assert_eq!(
        r["parsed"],
        python_records(python, platform, command, text(&r, "output")),
        "{command}: serialgate and Python textfsm disagree"
    );
    r
}

#[tokio::test]
async fn cisco_show_commands_parse_as_python_textfsm_parses_them() {
    let Some(python) = serialgate_testkit::python::python_with(&["textfsm"]) else {
        return;
    };
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let plain = rig
        .ok("send_command", json!({"command": "show version"}))
        .await;
    assert!(
        plain.get("parsed").is_none(),
        "parsed without parse: {plain}"
    );
    let r = parsed_like_python(&rig, &python, "cisco_ios", "show version").await;
    assert_eq!(r["template"], "cisco_ios_show_version.textfsm");
    // What an engineer reads off the screen, as data.
    let v = &r["parsed"][0];
    assert_eq!(v["version"], "15.2(7)E4", "{v}");
    assert_eq!(v["hostname"], "SW1", "{v}");
    assert_eq!(v["hardware"], json!(["WS-C2960X-48TS-L"]), "{v}");
    assert_eq!(v["serial"], json!(["FOC2145Z1AB"]), "{v}");
    // The text result is what it is without parse.
    assert_eq!(
        text(&r, "output"),
        text(&plain, "output")
            .replace(&uptime(text(&plain, "output")), &uptime(text(&r, "output")))
    );

    let r = parsed_like_python(&rig, &python, "cisco_ios", "show ip interface brief").await;
    assert_eq!(r["template"], "cisco_ios_show_ip_interface_brief.textfsm");
    let down: Vec<&str> = r["parsed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["status"] != "up")
        .map(|i| i["interface"].as_str().unwrap())
        .collect();
    assert_eq!(
        down,
        [
            "FastEthernet0",
            "GigabitEthernet1/0/2",
            "GigabitEthernet1/0/3"
        ]
    );
    // The index's abbreviations find the same template.
    let short = parsed_like_python(&rig, &python, "cisco_ios", "sh ip int br").await;
    assert_eq!(short["template"], r["template"]);
    assert_eq!(short["parsed"], r["parsed"]);

    let r = parsed_like_python(&rig, &python, "cisco_ios", "show interfaces status").await;
    assert_eq!(r["template"], "cisco_ios_show_interfaces_status.textfsm");
    assert_eq!(r["parsed"][0]["name"], "uplink to core", "{r}");
    assert_eq!(r["parsed"][0]["vlan_id"], "trunk", "{r}");
}

/// The uptime line of `show version`, the one line that moves between calls.
fn uptime(output: &str) -> String {
    output
        .lines()
        .find(|l| l.contains(" uptime is "))
        .unwrap_or_else(|| panic!("no uptime line in {output:?}"))
        .to_owned()
}

/// ntc-templates 9.3.0 has no Junos `show interfaces terse`: its index
/// gives the command to `show interfaces`, whose template stops at the
/// first line it does not know. serialgate says so, as Python does.
#[tokio::test]
async fn junos_interfaces_terse_fails_where_python_textfsm_fails_and_says_why() {
    let Some(python) = serialgate_testkit::python::python_with(&["textfsm"]) else {
        return;
    };
    let rig = Rig::start_with(Profile::JuniperJunos, "juniper-junos", "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.ok("send_text", json!({"text": ""})).await;
    rig.ok("read_until_prompt", json!({"timeout": 5})).await;
    let command = "show interfaces terse";
    let r = rig
        .ok("send_command", json!({"command": command, "parse": true}))
        .await;
    assert_eq!(
        r["template"], "juniper_junos_show_interfaces.textfsm",
        "{r}"
    );
    assert_eq!(r["parsed"], Value::Null, "{r}");
    let note = text(&r, "parse_note");
    assert!(
        note.contains("stopped the parse") && note.contains("line 55"),
        "{note}"
    );
    let py = python_result(&python, "juniper_junos", command, text(&r, "output"));
    assert_eq!(py["python"], Value::Null, "{py}");
    assert!(
        py["error"].as_str().unwrap().contains("Rule Line: 55"),
        "{py}"
    );
    assert!(text(&r, "output").contains("lo0.0"), "the text is whole");
}

#[tokio::test]
async fn no_template_leaves_parsed_null_with_the_reason_and_the_text_whole() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let r = rig
        .ok(
            "send_command",
            json!({"command": "show reload", "parse": true}),
        )
        .await;
    assert_eq!(r["parsed"], Value::Null, "{r}");
    let note = text(&r, "parse_note");
    assert!(
        note.contains("no template")
            && note.contains("cisco_ios")
            && note.contains("templates_dir"),
        "{note}"
    );
    assert_eq!(text(&r, "output"), "No reload is scheduled.");
}

#[tokio::test]
async fn a_preset_without_a_platform_says_how_to_name_one() {
    let rig = Rig::start_with(Profile::CiscoIos, "generic", "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    let r = rig
        .ok(
            "send_command",
            json!({"command": "show version", "parse": true}),
        )
        .await;
    assert_eq!(r["parsed"], Value::Null, "{r}");
    let note = text(&r, "parse_note");
    assert!(
        note.contains("names no platform") && note.contains("platform"),
        "{note}"
    );
}

#[tokio::test]
async fn a_users_template_wins_and_a_broken_one_is_refused_at_load_with_its_file_and_line() {
    let rig_dir = tempfile::tempdir().unwrap();
    let templates = rig_dir.path().join("templates");
    std::fs::create_dir(&templates).unwrap();
    // The user's own template for a command ntc-templates already covers.
    std::fs::write(
        templates.join("cisco_ios_show_version.textfsm"),
        "Value UPTIME (.+)\n\nStart\n  ^\\S+ uptime is ${UPTIME} -> Record\n",
    )
    .unwrap();
    let extra = format!("[server]\ntemplates_dir = {:?}\n", templates.display());
    let rig = Rig::start(Profile::CiscoIos, &extra).await;
    rig.login().await;
    let r = rig
        .ok(
            "send_command",
            json!({"command": "show version", "parse": true}),
        )
        .await;
    assert_eq!(r["template"], "cisco_ios_show_version.textfsm");
    let records = r["parsed"].as_array().expect("records");
    assert_eq!(records.len(), 1, "{r}");
    assert_eq!(
        records[0].as_object().unwrap().len(),
        1,
        "the user's template has one value: {r}"
    );
    // The value is what the switch printed after "uptime is".
    let printed = uptime(text(&r, "output"));
    let (_, want) = printed.split_once(" uptime is ").unwrap();
    assert_eq!(records[0]["uptime"], want.trim_end(), "{r}");
    assert!(want.contains("minute"), "{r}");

    // A template with a broken rule: check-config names the file and line.
    std::fs::write(
        templates.join("mine.textfsm"),
        "Value A (\\S+)\n\nStart\n  ^${A} -> Recrd\n",
    )
    .unwrap();
    let config = rig_dir.path().join("c.toml");
    std::fs::write(&config, &extra).unwrap();
    let out = Command::new(serialgate_testkit::binary::binary())
        .arg("check-config")
        .arg(&config)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("mine.textfsm") && err.contains("line 4"),
        "{err}"
    );
}

#[tokio::test]
async fn hostile_outputs_are_answered_within_the_deadline_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let templates = dir.path().join("templates");
    std::fs::create_dir(&templates).unwrap();
    // Catastrophic-backtracking bait: nested quantifiers behind a
    // look-ahead (so the backtracking engine runs) that no line completes.
    std::fs::write(
        templates.join("bait.textfsm"),
        "Value X ((?=\\S)(\\S*\\s*)*QQQ)\n\nStart\n  ^${X} -> Record\n",
    )
    .unwrap();
    std::fs::write(
        templates.join("index"),
        "Template, Hostname, Platform, Command\n\nbait.textfsm, .*, cisco_ios, sh[[ow]] run[[ning-config]]\n",
    )
    .unwrap();
    let extra = format!("[server]\ntemplates_dir = {:?}\n", templates.display());
    let rig = Rig::start(Profile::CiscoIos, &extra).await;
    rig.login().await;
    let command = json!({"command": "show running-config", "parse": true, "timeout": 60, "max_output": 1 << 20});
    let called = Instant::now();
    let r = rig.ok("send_command", command).await;
    let called = called.elapsed();
    assert_eq!(r["template"], "bait.textfsm", "{r}");
    let waited = Duration::from_millis(r["elapsed_ms"].as_u64().unwrap());
    // Past the wait for the prompt, the parse took at most its deadline
    // (2 s, then at most 2 s more for a piece the engine could not
    // interrupt: both wall-clock bounds in the daemon), with 2 s of room
    // for a loaded machine. Without a deadline this bait parses for 8 s.
    let parsing = called.saturating_sub(waited);
    eprintln!("the bait parse: {parsing:?} after a wait of {waited:?}");
    assert!(
        parsing < Duration::from_secs(6),
        "parsing took {parsing:?}: parsed {}, note {}",
        r["parsed"],
        r["parse_note"]
    );
    // Either every line failed to match in time, or the parse stopped at
    // its deadline and says so; the output is there either way.
    match &r["parsed"] {
        Value::Array(records) => assert!(records.is_empty(), "{r}"),
        _ => assert!(text(&r, "parse_note").contains("deadline"), "{r}"),
    }
    assert!(text(&r, "output").lines().count() > 1000, "{waited:?}");

    // Megabytes of output are refused with the reason, the text whole.
    let r = rig
        .ok(
            "send_command",
            json!({"command": "show tech-support", "parse": true, "timeout": 120}),
        )
        .await;
    assert_eq!(r["parsed"], Value::Null, "{r}");
    let note = text(&r, "parse_note");
    assert!(
        note.contains("more than the 524288") && note.contains("narrow"),
        "{note}"
    );
    assert!(r["total_bytes"].as_u64().unwrap() > 512 * 1024, "{r}");
}

/// VRP's `display interface brief` parses
/// into one record per interface, as Python textfsm parses the same
/// text, through the pager; an interface shut down on the router shows
/// as `*down` in its record.
#[tokio::test]
async fn huawei_interface_brief_parses_as_python_textfsm_parses_it() {
    let Some(python) = serialgate_testkit::python::python_with(&["textfsm"]) else {
        return;
    };
    let rig = Rig::start_with(Profile::HuaweiVrp, "huawei-vrp", "").await;
    rig.ok("connect", json!({"port": "sw1"})).await;
    rig.ok("send_text", json!({"text": ""})).await;
    rig.ok("read_until_prompt", json!({"timeout": 5})).await;
    for line in [
        "system-view",
        "interface GigabitEthernet0/0/5",
        "shutdown",
        "return",
    ] {
        rig.ok("send_command", json!({"command": line})).await;
    }
    let r = parsed_like_python(&rig, &python, "huawei_vrp", "display interface brief").await;
    assert_eq!(r["template"], "huawei_vrp_display_interface_brief.textfsm");
    assert!(r["auto_replies"].as_u64().unwrap() >= 2, "paged: {r}");
    let records = r["parsed"].as_array().unwrap();
    let names: Vec<&str> = records
        .iter()
        .map(|i| i["interface"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 48 + 2, "{names:?}");
    assert_eq!(names[0], "GigabitEthernet0/0/0");
    assert_eq!(names[48..], ["LoopBack0", "NULL0"]);
    let shut: Vec<&Value> = records.iter().filter(|i| i["phy"] != "up").collect();
    assert_eq!(shut.len(), 1, "{shut:?}");
    assert_eq!(shut[0]["interface"], "GigabitEthernet0/0/5");
    assert_eq!(shut[0]["phy"], "*down");
    assert_eq!(shut[0]["protocol"], "down");
    assert_eq!(records[48]["protocol"], "up(s)");
}

/// `| include` filters as IOS does; ntc-templates has no template for
/// `show running-config` with a pipe, so `parsed` is null with the
/// reason, as Python textfsm finds none; a command whose index row
/// matches before the pipe (`show ip interface brief | include up`) is
/// parsed from the filtered lines, as Python parses them.
#[tokio::test]
async fn show_run_include_has_no_template_and_a_filtered_table_still_parses() {
    let Some(python) = serialgate_testkit::python::python_with(&["textfsm"]) else {
        return;
    };
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let command = "show running-config | include hostname";
    let r = rig
        .ok("send_command", json!({"command": command, "parse": true}))
        .await;
    assert_eq!(text(&r, "output"), "hostname SW1", "{r}");
    assert_eq!(r["parsed"], Value::Null, "{r}");
    assert_eq!(r["template"], Value::Null, "{r}");
    let note = text(&r, "parse_note");
    assert!(
        note.contains("no template") && note.contains("| include hostname"),
        "{note}"
    );
    let py = python_result(&python, "cisco_ios", command, text(&r, "output"));
    assert_eq!(py["python"], Value::Null, "{py}");
    assert!(
        py["error"].as_str().unwrap().contains("No template found"),
        "{py}"
    );
    // The filter is IOS's: every interface line of the configuration.
    let r = rig
        .ok(
            "send_command",
            json!({"command": "sh run | i ^interface", "timeout": 30}),
        )
        .await;
    let lines: Vec<&str> = text(&r, "output").lines().collect();
    let want: Vec<String> = serialgate_sim::cisco::running_config_lines()
        .into_iter()
        .filter(|l| l.starts_with("interface"))
        .collect();
    assert_eq!(lines, want);

    let r = parsed_like_python(
        &rig,
        &python,
        "cisco_ios",
        "show ip interface brief | include up",
    )
    .await;
    assert_eq!(r["template"], "cisco_ios_show_ip_interface_brief.textfsm");
    assert!(!text(&r, "output").contains("IP-Address"), "{r}");
    assert!(
        r["parsed"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| text(i, "status").contains("up") || text(i, "proto").contains("up")),
        "{r}"
    );
}

/// `read_output` with `parse` reads a range of the log as a command's
/// reply (echo, pager prompts and the trailing prompt left out) and
/// gives the records send_command's `parse` gives for it.
#[tokio::test]
async fn read_output_parses_a_commands_range_as_send_command_does() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let command = "show interfaces status";
    let sent = rig
        .ok("send_command", json!({"command": command, "parse": true}))
        .await;
    assert!(
        sent["parsed"].as_array().is_some_and(|r| r.len() == 4),
        "{sent}"
    );
    let start = sent["start_cursor"].as_u64().unwrap();
    let end = sent["end_cursor"].as_u64().unwrap();
    let read = rig
        .ok(
            "read_output",
            json!({"cursor": start, "max_bytes": end - start, "parse": command}),
        )
        .await;
    assert_eq!(read["next_cursor"], end, "{read}");
    assert!(text(&read, "output").ends_with("SW1#"), "{read}");
    assert_eq!(read["template"], sent["template"], "{read}");
    assert_eq!(read["parsed"], sent["parsed"], "{read}");
    // Without `parse`, a read has no parse fields.
    let plain = rig.ok("read_output", json!({"cursor": start})).await;
    assert!(plain.get("parsed").is_none(), "{plain}");
}

/// An `expect` step that sends a command and waits for the prompt parses
/// the output before the prompt with `parse`, as send_command does, with
/// the secrets of sensitive steps redacted; a step with nothing to name
/// the command is refused before anything is sent.
#[tokio::test]
async fn an_expect_step_parses_its_commands_output() {
    let rig = Rig::start(Profile::CiscoIos, "").await;
    rig.login().await;
    let command = "sh ip int br";
    let sent = rig
        .ok("send_command", json!({"command": command, "parse": true}))
        .await;
    let r = rig
        .ok(
            "expect",
            json!({"steps": [
                {"send": "terminal length 0", "expect": "SW1#"},
                {"send": command, "expect": "SW1#", "parse": true}
            ]}),
        )
        .await;
    assert_eq!(r["completed"], true, "{r}");
    assert!(r["steps"][0].get("parsed").is_none(), "{r}");
    let step = &r["steps"][1];
    assert_eq!(
        step["template"], "cisco_ios_show_ip_interface_brief.textfsm",
        "{r}"
    );
    assert!(
        step["parsed"].as_array().is_some_and(|p| p.len() > 3),
        "{r}"
    );
    assert_eq!(step["parsed"], sent["parsed"], "{r}");
    // Text an earlier step sent as secret is redacted in the records as
    // in the output.
    let r = rig
        .ok(
            "expect",
            json!({"steps": [
                {"send": "Vlan1", "sensitive": true, "expect": "SW1#"},
                {"send": command, "expect": "SW1#", "parse": true}
            ]}),
        )
        .await;
    let step = &r["steps"][1];
    assert!(!step["output"].as_str().unwrap().contains("Vlan1"), "{r}");
    let names: Vec<&str> = step["parsed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["interface"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"<redacted>") && !names.contains(&"Vlan1"),
        "{names:?}"
    );
    let refused = rig
        .err(
            "expect",
            json!({"steps": [{"send_hex": "0d", "expect": "SW1#", "parse": true}]}),
        )
        .await;
    assert!(
        refused.contains("parse needs the command in send"),
        "{refused}"
    );
}
