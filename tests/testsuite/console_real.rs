//! The console client's behaviours that `console_client`'s fast tests
//! check against a scripted gateway, shown again against the real daemon
//! (a simulated switch, the console socket, an agent over stdio): the
//! ports table, a refused attach, `--force` and `--replay`, the end of
//! input, a reload that removes the port (the daemon's `bye`), and SIGHUP.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::json;
use serialgate_testkit::binary::binary;
use serialgate_testkit::client::Outcome;
use serialgate_testkit::console::{ConsoleSite, user_name};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};
use tokio::time::timeout;

use super::console_client::{Terminal, spawn_on};

const DEADLINE: Duration = Duration::from_secs(10);
/// The escape key, Ctrl-].
const ESC: u8 = 0x1d;

async fn site() -> ConsoleSite {
    ConsoleSite::start(serialgate_sim::Profile::CiscoIos).await
}

async fn exit_of(child: &mut Child) -> ExitStatus {
    timeout(DEADLINE, child.wait())
        .await
        .expect("the client exits within the deadline")
        .expect("wait for the client")
}

/// A call's outcome as text: `ok …`, or the error as the agent reads it.
fn said(outcome: Outcome) -> String {
    match outcome {
        Outcome::Ok(v) => format!("ok {v}"),
        Outcome::Err(e) => e,
    }
}

/// `serialgate console ARGS --socket SOCKET` with stdin piped.
fn piped(site: &ConsoleSite, args: &[&str]) -> Child {
    Command::new(binary())
        .arg("console")
        .args(args)
        .arg("--socket")
        .arg(&site.socket)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the console client")
}

#[tokio::test]
async fn with_the_real_daemon_list_shows_the_holder_and_an_unknown_port_is_refused() {
    let site = site().await;
    site.agent.ok("connect", json!({"port": "sw1"})).await;
    site.agent.ok("send_text", json!({"text": ""})).await;

    let list = piped(&site, &["--list"]);
    let out = timeout(DEADLINE, list.wait_with_output())
        .await
        .expect("--list ends")
        .expect("output");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let table = String::from_utf8_lossy(&out.stdout);
    let mut lines = table.lines();
    assert_eq!(
        lines
            .next()
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["PORT", "STATE", "WATCHERS", "HOLDER"]),
        "{table}"
    );
    let row = lines.next().expect("a row for sw1");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..3], ["sw1", "open", "-"], "{table}");
    assert!(
        row.contains("session 1 (client "),
        "the agent holds: {table}"
    );
    assert_eq!(lines.next(), None, "{table}");

    let mut terminal = Terminal::open();
    let before = terminal.termios();
    let mut refused = spawn_on(&terminal, &site.socket, &["sw9"]);
    assert_eq!(exit_of(&mut refused).await.code(), Some(1));
    terminal
        .read_until(
            "serialgate: the gateway refused to attach to sw9: invalid_argument: no port \"sw9\" that this caller may use",
        )
        .await;
    assert_eq!(format!("{:?}", terminal.termios()), format!("{before:?}"));
}

#[tokio::test]
async fn with_the_real_daemon_force_takes_the_hold_and_the_end_of_input_detaches() {
    let site = site().await;
    site.agent.ok("connect", json!({"port": "sw1"})).await;
    site.agent.ok("send_text", json!({"text": ""})).await;

    let mut person = piped(&site, &["sw1", "--force", "--replay", "5"]);
    let mut stdin = person.stdin.take().expect("stdin");
    // The hold is the person's at once: the agent is busy, naming them.
    serialgate_testkit::wait::eventually("the person holds sw1", DEADLINE, async || {
        let busy = site
            .agent
            .call("send_text", json!({"text": "show clock"}))
            .await;
        serialgate_testkit::wait::when(said(busy), |b| {
            b.starts_with("busy: ") && b.contains(&format!("{} on console", user_name()))
        })
    })
    .await;
    stdin.write_all(b"show version\r").await.expect("type");
    assert!(site.sim.wait_received(b"show version\r", DEADLINE).await);
    drop(stdin);
    let out = timeout(DEADLINE, person.wait_with_output())
        .await
        .expect("the client ends at the end of its input")
        .expect("output");
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.ends_with("[serialgate: end of input: detached from sw1]\r\n"),
        "{stdout}"
    );
    // The five replayed lines came before anything live.
    assert!(stdout.contains("SW1>"), "{stdout}");
    // Gone, the hold is free again.
    serialgate_testkit::wait::eventually("the hold is free", DEADLINE, async || {
        let sent = site
            .agent
            .call("send_text", json!({"text": "show clock"}))
            .await;
        serialgate_testkit::wait::when(said(sent), |s| s.starts_with("ok "))
    })
    .await;
}

#[tokio::test]
async fn with_the_real_daemon_a_reload_that_removes_the_port_says_why() {
    let mut site = site().await;
    let mut terminal = Terminal::open();
    let before = terminal.termios();
    let mut person = spawn_on(&terminal, &site.socket, &["sw1"]);
    terminal.read_until("you hold the write").await;

    std::fs::write(
        site.config(),
        "[server]\nconsole_socket = \"console.sock\"\n",
    )
    .expect("rewrite the config without sw1");
    site.daemon.signal(libc::SIGHUP);
    assert_eq!(exit_of(&mut person).await.code(), Some(1));
    terminal
        .read_until("[serialgate: the gateway ended the session: ")
        .await;
    terminal.read_until("sw1").await;
    assert_eq!(format!("{:?}", terminal.termios()), format!("{before:?}"));
    site.daemon.stderr.wait_for("reload").await;
}

#[tokio::test]
async fn with_the_real_daemon_sighup_to_the_client_restores_the_terminal_and_frees_the_hold() {
    let site = site().await;
    let mut terminal = Terminal::open();
    let before = terminal.termios();
    let mut person = spawn_on(&terminal, &site.socket, &["sw1"]);
    terminal.read_until("you hold the write").await;
    terminal.type_keys(&[ESC, b'?']);
    terminal.read_until("detach").await;
    let pid = person.id().expect("the client runs") as i32;
    // SAFETY: kill(2) on our own child's pid, no memory involved.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    assert_eq!(exit_of(&mut person).await.code(), Some(128 + libc::SIGHUP));
    assert_eq!(format!("{:?}", terminal.termios()), format!("{before:?}"));
    site.agent.ok("connect", json!({"port": "sw1"})).await;
    serialgate_testkit::wait::eventually("the hold is free", DEADLINE, async || {
        let sent = site
            .agent
            .call("send_text", json!({"text": "show clock"}))
            .await;
        serialgate_testkit::wait::when(said(sent), |s| s.starts_with("ok "))
    })
    .await;
}
