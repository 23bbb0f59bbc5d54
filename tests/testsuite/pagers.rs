//! Real pagers on a real shell: `less` (590 here) and `more`
//! (util-linux), started by a command on a bash behind the serial line, as
//! `systemctl status` or `git log` start one. The linux preset pages
//! through them and leaves them; the output is the command's, line by
//! line; and an auto-reply that only brings its trigger back (a space at
//! less' `(END)`) is answered a few times, not ten thousand.

use std::time::Duration;

use serde_json::json;
use serialgate_testkit::client::GateClient;
use serialgate_testkit::program::{Program, ProgramLine};
use serialgate_testkit::rig::{Rig, text};
use tempfile::TempDir;

/// bash's prompt in these tests.
const PROMPT: &str = "vm$ ";

/// Whether bash, less and more are here; says why not (fails under CI).
fn here() -> bool {
    let missing: Vec<&str> = ["/bin/bash", "/usr/bin/less", "/usr/bin/more"]
        .into_iter()
        .filter(|t| !std::path::Path::new(t).exists())
        .collect();
    if missing.is_empty() {
        return true;
    }
    eprintln!("skipped: {missing:?} not installed (.ci/run installs less)");
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must have bash, less and more"
    );
    false
}

/// An interactive bash on a vt220 of 24 rows behind port `vm` (preset
/// linux), connected and at its prompt.
async fn shell(dir: &TempDir) -> (ProgramLine, GateClient) {
    let link = dir.path().join("vm");
    let program = Program::new("/bin/bash")
        .arg("--norc")
        .arg("--noprofile")
        .arg("-i")
        .env("PS1", PROMPT)
        .current_dir(dir.path());
    let line = ProgramLine::spawn(program, &link).expect("program line");
    let config = format!(
        "[ports.vm]\ndevice = {:?}\npreset = \"linux\"\n",
        link.display()
    );
    let client = Rig::client_with(dir, &config).await;
    ok(&client, "connect", json!({"port": "vm"})).await;
    let woke = ok(
        &client,
        "send_command",
        json!({"command": "", "timeout": 10}),
    )
    .await;
    assert_eq!(woke["matched"], true, "{woke}");
    (line, client)
}

async fn ok(client: &GateClient, tool: &str, args: serde_json::Value) -> serde_json::Value {
    client.call(tool, args).await.expect("mcp").ok()
}

/// What `script` prints run directly (no terminal, so no pager), as lines.
fn run_directly(dir: &TempDir, script: &str) -> Vec<String> {
    let out = std::process::Command::new("/bin/bash")
        .args(["-c", script])
        .current_dir(dir.path())
        .output()
        .expect("bash");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A file of numbered lines of varied width, some indented, some blank,
/// long enough for several pages.
fn write_file(dir: &TempDir) {
    let text: String = (1..=130)
        .map(|i| match i % 7 {
            0 => "\n".to_owned(),
            3 => format!("    indented line {i}: {}\n", "x".repeat(i % 50)),
            _ => format!("line {i} of the file\n"),
        })
        .collect();
    std::fs::write(dir.path().join("long.txt"), text).expect("write file");
}

/// One command through a pager: paged through and left by the preset,
/// the output the lines the pager showed, the shell's prompt after it.
async fn paged(client: &GateClient, dir: &TempDir, command: &str, direct: &str) {
    let r = ok(
        client,
        "send_command",
        json!({"command": command, "timeout": 30}),
    )
    .await;
    assert_eq!(r["matched"], true, "{command}: {r}");
    assert_eq!(text(&r, "prompt_text"), PROMPT, "{command}: {r}");
    assert!(r["auto_replies"].as_u64() > Some(1), "{command}: {r}");
    let got: Vec<&str> = text(&r, "output").lines().collect();
    let mut want = run_directly(dir, direct);
    // A terminal keeps no blank lines at the very end either.
    while want.last().is_some_and(String::is_empty) {
        want.pop();
    }
    assert_eq!(got, want, "{command}");
    // The console is back at the shell, not in the pager.
    let r = ok(
        client,
        "send_command",
        json!({"command": "echo back", "timeout": 10}),
    )
    .await;
    assert_eq!(text(&r, "output"), "back", "after {command}: {r}");
    let status = ok(client, "status", json!({})).await;
    assert!(status["blocked_prompt"].is_null(), "{status}");
}

#[tokio::test]
async fn less_and_more_are_paged_through_and_left_with_the_output_as_printed() {
    if !here() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    write_file(&dir);
    let (_line, client) = shell(&dir).await;
    paged(&client, &dir, "seq 1 100 | less", "seq 1 100").await;
    paged(&client, &dir, "less long.txt", "cat long.txt").await;
    paged(&client, &dir, "seq 1 100 | more", "seq 1 100").await;
    paged(&client, &dir, "more long.txt", "cat long.txt").await;
}

/// A space at less' `(END)` only rings the bell and redraws `(END)`: the
/// wait answers it a few times, then ends saying so, with the output so
/// far, and status names the prompt the console waits at. `q` leaves it.
#[tokio::test]
async fn a_reply_that_brings_back_only_its_trigger_is_not_repeated() {
    if !here() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (_line, client) = shell(&dir).await;
    let started = std::time::Instant::now();
    let e = client
        .call(
            "send_command",
            json!({
                "command": "seq 1 30 | less",
                "auto_reply": {"\n:\x1b[K": " ", "(END)": " "},
                "timeout": 60,
            }),
        )
        .await
        .expect("mcp")
        .err();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "it ended long before its timeout"
    );
    assert!(
        e.contains("(END)") && e.contains("not answered again"),
        "{e}"
    );
    assert!(e.contains("\n30"), "the output so far comes with it: {e}");
    let status = ok(&client, "status", json!({})).await;
    assert_eq!(status["blocked_prompt"], "pager: (END)", "{status}");
    // Answers sent: one for the page, one for the first (END), and the
    // bounded repeats; never thousands.
    let sent = ok(
        &client,
        "read_output",
        json!({"cursor": 0, "max_bytes": 65536}),
    )
    .await;
    let bells = text(&sent, "output").matches('\x07').count();
    assert!(
        bells <= serialgate::MAX_FRUITLESS_REPLIES + 1,
        "less rang {bells} times"
    );
    ok(
        &client,
        "send_text",
        json!({"text": "q", "line_ending": "none"}),
    )
    .await;
    let r = ok(
        &client,
        "read_until_prompt",
        json!({"prompt": PROMPT, "timeout": 10}),
    )
    .await;
    assert_eq!(r["matched"], true, "{r}");
    let r = ok(
        &client,
        "send_command",
        json!({"command": "echo back", "timeout": 10}),
    )
    .await;
    assert_eq!(text(&r, "output"), "back", "{r}");
}
