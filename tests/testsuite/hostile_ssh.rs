//! The SSH door against a hostile user, with OpenSSH's own `ssh`: every
//! feature an SSH server usually has and this door does not (port
//! forwarding local, remote and dynamic, agent and X11 forwarding, sftp,
//! commands, environment variables) is refused with nothing opened and
//! logged; a flood before authentication (idle connections, wrong keys in
//! a person's name from their own address) does not keep the person with
//! their real key out; and one person's connections held open take at
//! most a quarter of the door.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::Command;

use super::console_client::Terminal;
use super::ssh::{DEADLINE, Door, exit_code, have_openssh, keygen};

/// A free TCP port on 127.0.0.1 (bound and let go).
async fn free_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    listener.local_addr().expect("addr").port()
}

/// Connects to `port` on 127.0.0.1 once ssh listens there.
async fn connect_when_listening(port: u16) -> TcpStream {
    serialgate_testkit::wait::eventually("ssh's forwarding listener", DEADLINE, async || {
        TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(|e| e.to_string())
    })
    .await
}

/// Reads until the peer closes, within the deadline; what came.
async fn read_to_close(stream: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    tokio::time::timeout(DEADLINE, stream.read_to_end(&mut got))
        .await
        .expect("closed within the deadline")
        .expect("read");
    got
}

#[tokio::test]
async fn forwarding_local_remote_and_dynamic_is_refused_and_logged() {
    if !have_openssh() {
        return;
    }
    let mut door = Door::start().await;
    let http_port: u16 = door
        .url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .expect("the HTTP port");

    // -L: a connection to the forwarded port reaches nothing.
    let local = free_port().await;
    let forward = format!("127.0.0.1:{local}:127.0.0.1:{http_port}");
    let mut ssh = door.ssh(None, "alice", "alice", &["-N", "-L", &forward, "127.0.0.1"]);
    let mut stream = connect_when_listening(local).await;
    let _ = stream.write_all(b"GET /healthz HTTP/1.0\r\n\r\n").await;
    door.daemon
        .stderr
        .wait_for(&format!(
            "refused port forwarding to \"127.0.0.1\":{http_port} (ssh -L, -D or -W)"
        ))
        .await;
    // Whatever ssh does with its end, the HTTP listener never answered.
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut got)).await;
    assert!(
        !String::from_utf8_lossy(&got).contains("HTTP/1."),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    ssh.kill().await.expect("kill ssh");

    // -D: the SOCKS request is refused by the door.
    let socks = free_port().await;
    let mut ssh = door.ssh(
        None,
        "alice",
        "alice",
        &["-N", "-D", &format!("127.0.0.1:{socks}"), "127.0.0.1"],
    );
    let mut stream = connect_when_listening(socks).await;
    stream.write_all(&[5, 1, 0]).await.expect("SOCKS greeting");
    let mut answer = [0u8; 2];
    stream.read_exact(&mut answer).await.expect("SOCKS answer");
    assert_eq!(answer, [5, 0]);
    let [hi, lo] = http_port.to_be_bytes();
    stream
        .write_all(&[5, 1, 0, 1, 127, 0, 0, 1, hi, lo])
        .await
        .expect("SOCKS connect");
    let got = read_to_close(&mut stream).await;
    assert!(
        got.len() < 2 || got[1] != 0,
        "the SOCKS connect succeeded: {got:?}"
    );
    door.daemon
        .stderr
        .wait_for(&format!(
            "refused port forwarding to \"127.0.0.1\":{http_port}"
        ))
        .await;
    ssh.kill().await.expect("kill ssh");

    // -R: the remote listener is refused, and ssh says so.
    let mut ssh = door.ssh(
        None,
        "alice",
        "alice",
        &[
            "-N",
            "-o",
            "ExitOnForwardFailure=yes",
            "-R",
            "127.0.0.1:0:127.0.0.1:9",
            "127.0.0.1",
        ],
    );
    assert_eq!(exit_code(&mut ssh).await, Some(255));
    let out = ssh.wait_with_output().await.expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("remote port forwarding failed"), "{stderr}");
    door.daemon
        .stderr
        .wait_for("refused remote port forwarding of \"127.0.0.1\":0 (ssh -R)")
        .await;
}

#[tokio::test]
async fn commands_subsystems_agent_x11_and_environment_are_refused() {
    if !have_openssh() {
        return;
    }
    let mut door = Door::start().await;

    // exec of anything but a port name: nothing runs, nothing is shown.
    let mut ssh = door.ssh(
        None,
        "alice",
        "alice",
        &["-T", "127.0.0.1", "/bin/sh -c id"],
    );
    assert_ne!(exit_code(&mut ssh).await, Some(0));
    let out = ssh.wait_with_output().await.expect("output");
    assert!(
        out.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("runs no commands") || stderr.contains("exec request failed"),
        "{stderr}"
    );
    door.daemon
        .stderr
        .wait_for("refused the command \"/bin/sh -c id\"")
        .await;

    // sftp (-s): no subsystem.
    let mut ssh = door.ssh(None, "alice", "alice", &["-T", "-s", "127.0.0.1", "sftp"]);
    assert_ne!(exit_code(&mut ssh).await, Some(0));
    let out = ssh.wait_with_output().await.expect("output");
    assert!(out.stdout.is_empty(), "{out:?}");
    door.daemon
        .stderr
        .wait_for("refused the subsystem \"sftp\"")
        .await;

    // -A and -X and an environment variable: refused, the console still
    // opens for what the person came for.
    let agent_dir = tempfile::tempdir().expect("temp dir");
    let sock = agent_dir.path().join("agent.sock");
    let mut agent = Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(&sock)
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("ssh-agent");
    serialgate_testkit::wait::eventually("the agent's socket", DEADLINE, async || {
        if sock.exists() {
            Ok(())
        } else {
            Err("no socket yet")
        }
    })
    .await;
    let xauthority = agent_dir.path().join("Xauthority");
    std::fs::write(&xauthority, b"").expect("an empty Xauthority");
    let mut terminal = Terminal::open();
    let sock_text = sock.display().to_string();
    let xauth_text = xauthority.display().to_string();
    let mut ssh = door.ssh_with(
        Some(&terminal),
        "alice:sw1",
        "alice",
        &["-tt", "-A", "-X", "-o", "SetEnv=EVIL=1", "127.0.0.1"],
        &[
            ("SSH_AUTH_SOCK", &sock_text),
            ("DISPLAY", ":0"),
            ("XAUTHORITY", &xauth_text),
        ],
    );
    terminal.read_until("you hold the write").await;
    // In whatever order ssh asked.
    let mut missing = vec![
        "refused agent forwarding (ssh -A)",
        "refused X11 forwarding (ssh -X)",
        "refused the environment variable \"EVIL\"",
    ];
    while !missing.is_empty() {
        let line = door.daemon.stderr.wait_for("ssh: refused").await;
        missing.retain(|refused| !line.contains(refused));
    }
    terminal.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut ssh).await, Some(0));
    let _ = agent.kill().await;
}

#[tokio::test]
async fn a_flood_before_authentication_does_not_keep_a_person_with_her_key_out() {
    if !have_openssh() {
        return;
    }
    let mut door = Door::start().await;

    // More idle connections than may wait to authenticate: the oldest is
    // closed to make room.
    let mut idle = Vec::new();
    for _ in 0..100 {
        idle.push(
            TcpStream::connect(("127.0.0.1", door.port))
                .await
                .expect("connect"),
        );
    }
    let closed = read_to_close(&mut idle[0]).await;
    assert!(
        closed.starts_with(b"SSH-2.0-"),
        "the door said {closed:?} before closing"
    );

    // Wrong keys in alice's name, from her address, until both are held.
    keygen(door.dir.path(), "mallory");
    for _ in 0..3 {
        let guesses: Vec<_> = (0..4)
            .map(|_| door.ssh(None, "alice", "mallory", &["-T", "127.0.0.1", "sw1"]))
            .collect();
        for mut guess in guesses {
            assert_eq!(exit_code(&mut guess).await, Some(255));
        }
    }
    door.daemon
        .stderr
        .wait_for("too many failed attempts; refusing keys")
        .await;

    // alice with her own key still gets in, at once.
    let started = std::time::Instant::now();
    let mut terminal = Terminal::open();
    let mut ssh = door.ssh(Some(&terminal), "alice:sw1", "alice", &["-tt"]);
    terminal.read_until("you hold the write").await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "alice waited {:?}",
        started.elapsed()
    );
    terminal.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut ssh).await, Some(0));
    drop(idle);
}

/// One more connection of `person` to sw1, which must open nothing and
/// exit 1; what their `ssh` printed.
async fn one_more_refused(door: &Door, person: &str) -> String {
    let mut one_more = door.ssh(None, person, person, &["-T", "127.0.0.1", "sw1"]);
    assert_eq!(exit_code(&mut one_more).await, Some(1), "{person}");
    let out = one_more.wait_with_output().await.expect("output");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// People who hold connections open (`ssh -N`, a script gone wrong):
/// one person gets a quarter of the door, the people of read access
/// together half of the room that the unauthenticated leave, and each
/// refused one is told which; the people of write and admin access
/// still attach at once.
#[tokio::test]
async fn people_holding_connections_open_take_their_share_of_the_door_and_no_more() {
    if !have_openssh() {
        return;
    }
    let mut door = Door::start().await;
    // The door's 256 connections at once; a quarter for any one person;
    // of the 192 that the 64 unauthenticated leave, half for read.
    const PERSON: usize = 64;
    const READ: usize = 96;

    // bob (read, sw1 only) signs in again and again and keeps every
    // connection open with no session at all (ssh -N).
    let mut held: Vec<_> = (0..PERSON)
        .map(|_| door.ssh(None, "bob", "bob", &["-N"]))
        .collect();
    for _ in 0..PERSON {
        door.daemon.stderr.wait_for("ssh: person signed in").await;
    }

    // One more of bob's is told why and opens nothing.
    let stderr = one_more_refused(&door, "bob").await;
    assert!(
        stderr.contains("you hold 64 connections to this door already, the most one person may"),
        "{stderr}"
    );
    door.daemon
        .stderr
        .wait_for("ssh: person holds 64 connections already; this one is refused")
        .await;

    // dave, of read access too, gets what is left of read's half.
    held.extend((PERSON..READ).map(|_| door.ssh(None, "dave", "dave", &["-N"])));
    for _ in PERSON..READ {
        door.daemon.stderr.wait_for("ssh: person signed in").await;
    }
    let stderr = one_more_refused(&door, "dave").await;
    assert!(
        stderr.contains(
            "the people of read access (and weaker) hold 96 connections to this door together"
        ),
        "{stderr}"
    );

    // carol (write) and alice (admin), with their keys, attach at once.
    for person in ["carol", "alice"] {
        let mut terminal = Terminal::open();
        let mut ssh = door.ssh(Some(&terminal), &format!("{person}:sw1"), person, &["-tt"]);
        terminal.read_until("you hold the write").await;
        terminal.type_keys(b"\x1d.");
        assert_eq!(exit_code(&mut ssh).await, Some(0), "{person}");
    }
    drop(held);
}
