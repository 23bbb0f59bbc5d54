//! Real programs as devices: the test kit's program line (a program on a
//! terminal of its own, respawned like a getty) behind the daemon.

use std::time::Duration;

use serde_json::json;
use serialgate_testkit::program::{Program, ProgramLine};
use serialgate_testkit::rig::{Rig, text};
use serialgate_testkit::wait;

/// A real `sh` answers a command through the daemon, and is started again
/// when it exits, as a getty would.
#[tokio::test]
async fn a_real_shell_answers_and_is_respawned_when_it_exits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("sw1");
    let shell = ProgramLine::spawn(Program::new("/bin/sh").env("PS1", "vm$ "), &link)
        .expect("program line");
    let config = format!(
        "[ports.sw1]\ndevice = {:?}\npreset = \"linux\"\n",
        link.display()
    );
    let client = Rig::client_with(&dir, &config).await;
    client
        .call("connect", json!({"port": "sw1"}))
        .await
        .expect("mcp")
        .ok();
    let reply = client
        .call("send_command", json!({"command": "echo $((6*7))"}))
        .await
        .expect("mcp")
        .ok();
    assert_eq!(text(&reply, "output").trim(), "42", "{reply}");
    assert!(
        reply["exit_status"].is_null(),
        "sh reports no status: {reply}"
    );
    assert_eq!(shell.starts(), 1);
    client
        .call("send_text", json!({"text": "exit\r"}))
        .await
        .expect("mcp")
        .ok();
    // A getty's respawn announces nothing but the new shell's prompt.
    wait::eventually(
        "the shell started again",
        Duration::from_secs(10),
        async || {
            if shell.starts() == 2 {
                Ok(())
            } else {
                Err(shell.starts())
            }
        },
    )
    .await;
    client
        .call("read_until_prompt", json!({"timeout": 10}))
        .await
        .expect("mcp")
        .ok();
    let reply = client
        .call("send_command", json!({"command": "echo again"}))
        .await
        .expect("mcp")
        .ok();
    assert_eq!(text(&reply, "output").trim(), "again", "{reply}");
    assert_eq!(shell.starts(), 2);
}

/// A bash whose shell integration reports each command's end to the
/// terminal (`OSC 133;D;STATUS` before the prompt, as terminals' shell
/// integration scripts set it up): `send_command` reads the exit status
/// from it, types nothing more, and the output carries none of it.
#[tokio::test]
async fn a_shell_that_reports_its_exit_status_has_it_in_the_result() {
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("vm1");
    let _bash = ProgramLine::spawn(
        Program::new("/bin/bash")
            .arg("--norc")
            .arg("--noprofile")
            .arg("-i")
            .env("PS1", "vm$ ")
            .env("PROMPT_COMMAND", r#"printf '\033]133;D;%s\007' "$?""#),
        &link,
    )
    .expect("program line");
    let config = format!(
        "[ports.vm1]\ndevice = {:?}\npreset = \"linux\"\n",
        link.display()
    );
    let client = Rig::client_with(&dir, &config).await;
    client
        .call("connect", json!({"port": "vm1"}))
        .await
        .expect("mcp")
        .ok();
    for (command, status, output) in [
        ("true", 0, ""),
        ("false", 1, ""),
        ("sh -c 'echo out; exit 7'", 7, "out"),
        (
            "ls /nonexistent-dir",
            2,
            "ls: cannot access '/nonexistent-dir': No such file or directory",
        ),
    ] {
        let reply = client
            .call("send_command", json!({"command": command}))
            .await
            .expect("mcp")
            .ok();
        assert_eq!(reply["exit_status"], status, "{command}: {reply}");
        assert_eq!(text(&reply, "output").trim(), output, "{command}: {reply}");
    }
    let typed = client
        .call("read_output", json!({"cursor": 0, "max_bytes": 65536}))
        .await
        .expect("mcp")
        .ok();
    assert!(!text(&typed, "output").contains("echo $?"), "{typed}");
}
