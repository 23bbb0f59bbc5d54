//! The guardrails end to end: an agent over stdio on the simulated Cisco
//! switch under a command policy. What is denied never reaches the
//! device (the test reads every byte the switch received, and its
//! running configuration), what is allowed runs as before, and a change
//! holding one denied line sends none of its lines. A line held for a
//! person's approval that nobody approves expires and is never sent
//! (approvals themselves: `approvals.rs`).

use serde_json::json;
use serialgate_sim::{self as sim, Profile};
use serialgate_testkit::rig::{Rig, text};

/// Whether the switch ever received `needle`.
fn received(rig: &Rig, needle: &str) -> bool {
    let bytes = rig.sim.received();
    memchr::memmem::find(&bytes, needle.as_bytes()).is_some()
}

/// The switch, `port_keys` added to its port's table (and whatever
/// tables follow), an agent in privileged mode.
async fn under(port_keys: &str) -> Rig {
    let rig = Rig::start(Profile::CiscoIos, port_keys).await;
    rig.login().await;
    rig
}

#[tokio::test]
async fn reload_in_any_spelling_is_denied_and_never_reaches_the_switch() {
    // Nobody is at the console to approve: each line expires, quickly.
    let rig = under("policy = \"guarded\"\n\n[server]\napproval_timeout = \"1s\"\n").await;
    for spelling in [
        "reload",
        "RELOAD",
        "   rel",
        "reload in 5",
        "rel   in 1",
        "show clock\nreload",
    ] {
        let e = rig.err("send_command", json!({"command": spelling})).await;
        assert!(e.starts_with("denied: "), "{spelling:?}: {e}");
        assert!(
            e.contains("rule \"reload\"")
                && e.contains("policy \"guarded\"")
                && e.contains("needs a person's approval")
                && e.contains("nobody approved it within 1 s")
                && e.contains("serialgate console sw1"),
            "{spelling:?}: {e}"
        );
    }
    // The same through send_text, whole lines or not.
    for (args, says) in [
        (json!({"text": "Reload"}), "rule \"reload\""),
        (
            json!({"text": "reload\r", "line_ending": "none"}),
            "rule \"reload\"",
        ),
        (
            json!({"text": "rel", "line_ending": "none"}),
            "partial line",
        ),
        (json!({"text": "rel\toad"}), "a tab"),
        (json!({"text": "reload?"}), "show help"),
    ] {
        let e = rig.err("send_text", args.clone()).await;
        assert!(e.starts_with("denied: ") && e.contains(says), "{args}: {e}");
    }
    // Keys and bytes cannot be judged: refused outright.
    let e = rig
        .err("send_keys", json!({"keys": ["r", "e", "l", "Enter"]}))
        .await;
    assert!(
        e.starts_with("denied: ") && e.contains("send_keys' keys"),
        "{e}"
    );
    let e = rig.err("send_hex", json!({"hex": "72656c6f61640d"})).await;
    assert!(
        e.starts_with("denied: ") && e.contains("send_hex's bytes"),
        "{e}"
    );
    let e = rig
        .err(
            "expect",
            json!({"steps": [{"send": "show clock", "expect": "#"}, {"send": "reload", "expect": "confirm"}]}),
        )
        .await;
    assert!(
        e.starts_with("denied: ") && e.contains("rule \"reload\""),
        "{e}"
    );
    // None of it reached the switch: no reload is scheduled or asked for,
    // and the switch never saw the word.
    let r = rig
        .ok("send_command", json!({"command": "show reload"}))
        .await;
    assert_eq!(text(&r, "output"), "No reload is scheduled.", "{r}");
    // Exactly the login and `show reload` reached the switch: no line
    // before a denied one (`show clock`), no expect step before the
    // denied step, no keys, no bytes. A text, a script, is judged whole
    // before any of it goes.
    let seen = String::from_utf8_lossy(&rig.sim.received()).into_owned();
    assert_eq!(
        seen,
        format!("\renable\r{}\rshow reload\r", sim::cisco::ENABLE_PASSWORD)
    );
}

#[tokio::test]
async fn allowed_commands_run_as_before_under_a_policy() {
    let rig = under("policy = \"locked\"\n").await;
    let r = rig
        .ok("send_command", json!({"command": "show clock"}))
        .await;
    assert!(text(&r, "output").contains(" UTC "), "{r}");
    // A word of a rule elsewhere in a command is only a word.
    let r = rig
        .ok("send_command", json!({"command": "show reload"}))
        .await;
    assert_eq!(text(&r, "output"), "No reload is scheduled.", "{r}");
    let r = rig.ok("send_text", json!({"text": "show version"})).await;
    assert!(r["bytes_sent"].as_u64().unwrap_or(0) > 0, "{r}");
    rig.ok("read_until_prompt", json!({"timeout": 5})).await;
    // Under locked a dangerous command is denied, not held for approval.
    let e = rig.err("send_command", json!({"command": "wr er"})).await;
    assert!(
        e.starts_with("denied: ")
            && e.contains("rule \"write erase\"")
            && e.contains("never sends it"),
        "{e}"
    );
    assert!(!received(&rig, "wr er"));
}

#[tokio::test]
async fn a_change_with_one_denied_line_sends_none_of_its_lines() {
    let rig = under("policy = \"locked\"\n").await;
    let before = rig.sim.configuration();
    let e = rig
        .err(
            "send_config",
            json!({"lines": ["interface Vlan1", "description guarded-by-policy", "shutdown"]}),
        )
        .await;
    assert!(e.starts_with("denied: "), "{e}");
    assert!(
        e.contains("line 3 of 3, \"shutdown\"")
            && e.contains("rule \"config: shutdown\"")
            && e.contains("none of the change's lines was sent"),
        "{e}"
    );
    assert_eq!(rig.sim.configuration(), before);
    assert!(!rig.sim.in_config_mode());
    assert!(!received(&rig, "guarded-by-policy"));
    assert!(!received(&rig, "configure terminal"));
    // `do` from configuration mode is an exec command, judged as one.
    let e = rig
        .err(
            "send_config",
            json!({"lines": ["interface Vlan1", "do reload"]}),
        )
        .await;
    assert!(
        e.contains("line 2 of 2, \"do reload\"") && e.contains("rule \"reload\""),
        "{e}"
    );
    // Without the denied line, the change goes through.
    let r = rig
        .ok(
            "send_config",
            json!({"lines": ["interface Vlan1", "description guarded-by-policy"]}),
        )
        .await;
    assert_eq!(r["applied"], 2, "{r}");
    assert!(
        rig.sim
            .configuration()
            .iter()
            .any(|l| l.contains("description guarded-by-policy")),
        "{:?}",
        rig.sim.configuration()
    );
}

#[tokio::test]
async fn an_allow_list_and_the_policy_of_callers_without_a_token() {
    // The port's default is none; [server] policy, the stdio caller's,
    // wins over it.
    let rig = under(
        "policy = \"none\"\n\
         [server]\npolicy = \"read-only\"\n\
         [policies.read-only]\nallow = [\"sh[ow]\", \"ping\", \"enable\"]\n",
    )
    .await;
    rig.ok("send_command", json!({"command": "sh clock"})).await;
    for (command, says) in [
        (
            "configure terminal",
            "(\"configure terminal\" is not listed)",
        ),
        (
            "traceroute 10.0.0.1",
            "(\"traceroute 10.0.0.1\" is not listed)",
        ),
        (
            "show running-config | redirect flash:x",
            "(the output filter \"redirect\" may not only read)",
        ),
    ] {
        let e = rig.err("send_command", json!({"command": command})).await;
        assert!(
            e.starts_with("denied: ")
                && e.contains("is not on the allow list of policy \"read-only\"")
                && e.contains(says),
            "{command:?}: {e}"
        );
    }
    assert!(!received(&rig, "configure terminal") && !received(&rig, "redirect"));
}

#[tokio::test]
async fn over_http_each_token_is_under_its_own_policy() {
    use serialgate_testkit::binary::binary;
    use serialgate_testkit::client::GateClient;
    use serialgate_testkit::daemon::{self, Daemon};

    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("sw1");
    let sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
        .await
        .expect("simulated device");
    // The port's default is locked; one token is held to it, the other
    // names none.
    let guarded = daemon::tokens_toml(
        dir.path(),
        &[("held", "held-secret-0123456789", r#"["*"]"#, "write")],
    );
    let free = daemon::tokens_toml(
        dir.path(),
        &[("free", "free-secret-0123456789", r#"["*"]"#, "write")],
    );
    let config = format!(
        "[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\npolicy = \"locked\"\n\n\
         {guarded}{free}policy = \"none\"\n",
        link.display()
    );
    let path = dir.path().join("serialgate.toml");
    std::fs::write(&path, config).expect("write config");
    let mut command = Daemon::command_for(&binary(), Some(&path), &["--http", "127.0.0.1:0"]);
    command
        .env("SERIALGATE_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    let mut process = Daemon::run(command);
    let url = process.http_url().await;
    let client = async |secret: &str| {
        GateClient::connect_http(&url, Some(secret))
            .await
            .expect("HTTP MCP session")
    };
    let held = client("held-secret-0123456789").await;
    let call = async |c: &GateClient, tool: &str, args: serde_json::Value| {
        c.call(tool, args).await.expect("MCP transport")
    };
    call(&held, "connect", json!({"port": "sw1"})).await.ok();
    let e = call(&held, "send_command", json!({"command": "wr er"}))
        .await
        .err();
    assert!(
        e.starts_with("denied: ") && e.contains("policy \"locked\" never sends it"),
        "{e}"
    );
    assert!(!received_by(&sim, "wr er"));
    held.close().await.ok();
    // The other token's session sends the same line: its policy is none.
    let free = client("free-secret-0123456789").await;
    call(&free, "connect", json!({"port": "sw1"})).await.ok();
    call(&free, "send_text", json!({"text": "wr er"}))
        .await
        .ok();
    assert!(
        sim.wait_received(b"wr er\r", std::time::Duration::from_secs(10))
            .await
    );
    free.close().await.ok();
}

/// Whether `sim` ever received `needle`.
fn received_by(sim: &sim::SimHandle, needle: &str) -> bool {
    memchr::memmem::find(&sim.received(), needle.as_bytes()).is_some()
}
