//! The stored credentials against a caller who may not use them: a secret
//! the device prints in two pieces with a console server's pause between
//! them stays masked, and the echo of a guess typed over the console
//! WebSocket comes back as fast whether or not it begins a secret; and a
//! caller who may use them cannot have them typed into a login prompt of
//! its own making.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use serialgate_sim::{self as sim, Profile, SimOptions};
use serialgate_testkit::console::{ConsoleConn, Received};
use serialgate_testkit::daemon::{Daemon, NotifySocket, tokens_toml};
use serialgate_testkit::program::{Program, ProgramLine};
use serialgate_testkit::rig::Rig;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

const LOGIN_PASSWORD: &str = "Lg1n-S3cret-pw";
const ENABLE_SECRET: &str = "En4ble-S3cret";
/// How long any one awaited thing may take.
const DEADLINE: Duration = Duration::from_secs(20);

/// Writes the port's credentials file into `dir` (mode 600).
fn credentials(dir: &Path) {
    let file = dir.join("sw1.credentials");
    std::fs::write(
        &file,
        format!(
            "username = \"admin\"\npassword = \"{LOGIN_PASSWORD}\"\nenable = \"{ENABLE_SECRET}\"\n"
        ),
    )
    .expect("write credentials");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
}

/// A console server on loopback (a raw TCP port) prints a running
/// configuration whose enable secret is cut in two by a 300 ms pause, as
/// Nagle and a delayed ACK cut one: neither a reader's `read_output` nor
/// the transcript carries it.
#[tokio::test]
async fn a_secret_cut_by_a_pause_on_the_line_is_still_masked() {
    let dir = tempfile::tempdir().expect("temp dir");
    credentials(dir.path());
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let config = dir.path().join("serialgate.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlog_dir = \"logs\"\n\n[ports.sw1]\ndevice = \"tcp://{address}\"\n\
             preset = \"cisco-ios\"\ncredentials = \"sw1.credentials\"\n"
        ),
    )
    .expect("write config");
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &[]);
    let (mut console_server, _) = tokio::time::timeout(DEADLINE, listener.accept())
        .await
        .expect("the daemon connects in time")
        .expect("accept");
    notify.expect("READY=1").await;
    let agent = daemon.client().await;
    agent.ok("connect", json!({"port": "sw1"})).await;

    let (first, rest) = ENABLE_SECRET.split_at(5);
    console_server
        .write_all(format!("\r\nhostname SW1\r\nenable secret 0 {first}").as_bytes())
        .await
        .expect("write");
    // The pause is the device's behaviour under test, not a wait.
    tokio::time::sleep(Duration::from_millis(300)).await;
    console_server
        .write_all(format!("{rest}\r\nend\r\nSW1#").as_bytes())
        .await
        .expect("write");

    agent
        .ok(
            "read_until_prompt",
            json!({"prompt": "SW1#", "timeout": 10}),
        )
        .await;
    let whole = agent
        .ok("read_output", json!({"cursor": 0, "max_bytes": 65536}))
        .await;
    let output = whole["output"].as_str().unwrap_or_default().to_owned();
    let masked = format!("enable secret 0 {}", "*".repeat(ENABLE_SECRET.len()));
    assert!(output.contains(&masked), "{output:?}");
    let transcript = agent.ok("get_transcript", json!({})).await.to_string();
    for seen in [&output, &transcript] {
        assert!(!seen.contains(first) && !seen.contains(rest), "{seen}");
    }
}

/// How long `echo` takes to come back after `byte` is typed on `conn`.
async fn echo_time(conn: &mut ConsoleConn, byte: u8, echo: u8) -> Duration {
    let before = conn.output.len();
    let sent = Instant::now();
    conn.send_data(&[byte]).await;
    tokio::time::timeout(DEADLINE, async {
        while !conn.output[before..].contains(&echo) {
            match conn.next().await {
                Some(Received::Json(_) | Received::Data { .. }) => {}
                None => panic!("the console closed"),
            }
        }
    })
    .await
    .expect("the echo in time");
    sent.elapsed()
}

/// A write token without `use_credentials`, on the console WebSocket,
/// types the first character of the enable secret and a wrong one, each
/// followed by a backspace, over and over: the fastest echo of the right
/// one is no slower than the fastest of the wrong one. (Held back 20 ms
/// because it began a secret, it told the secret a character at a time.)
/// The fastest of many is what a patient attacker measures; noise on a
/// busy machine only ever adds time, so it cannot make this pass.
#[tokio::test]
async fn the_echo_of_a_guess_takes_as_long_right_or_wrong() {
    let dir = tempfile::tempdir().expect("temp dir");
    credentials(dir.path());
    let link = dir.path().join("sw1");
    let _sim = sim::spawn_with(
        Profile::CiscoIos,
        Some(link.clone()),
        SimOptions {
            enable_secret: ENABLE_SECRET.to_owned(),
            ..SimOptions::default()
        },
    )
    .await
    .expect("simulated switch");
    let tokens = tokens_toml(
        dir.path(),
        &[("noc", "noc-secret-0123456789", r#"["sw*"]"#, "write")],
    );
    let config = dir.path().join("serialgate.toml");
    std::fs::write(
        &config,
        format!(
            "[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\ncredentials = \"sw1.credentials\"\n\n{tokens}",
            link.display()
        ),
    )
    .expect("write config");
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    let url = daemon.http_url().await;
    notify.expect("READY=1").await;
    let base = url.trim_end_matches("/mcp").replacen("http://", "ws://", 1);
    let mut noc = ConsoleConn::connect_ws(
        &format!("{base}/ports/sw1/console"),
        Some("noc-secret-0123456789"),
    )
    .await
    .expect("WebSocket");
    noc.send_json(&json!({"type": "hello", "port": "sw1", "mode": "attach"}))
        .await;
    noc.until_json("attached").await;
    noc.send_data(b"\r").await;
    noc.until_output("SW1>").await;

    let right = ENABLE_SECRET.as_bytes()[0];
    let wrong = b'Q';
    let (mut fastest_right, mut fastest_wrong) = (Duration::MAX, Duration::MAX);
    for _ in 0..15 {
        for (guess, fastest) in [(right, &mut fastest_right), (wrong, &mut fastest_wrong)] {
            *fastest = (*fastest).min(echo_time(&mut noc, guess, guess).await);
            // The backspace's echo ends the round: the line is empty again.
            echo_time(&mut noc, 0x7f, 0x08).await;
        }
    }
    assert!(
        fastest_right < fastest_wrong + Duration::from_millis(10),
        "a right first character echoes in {fastest_right:?} at best, a wrong one in {fastest_wrong:?}"
    );
}

/// The device's own login, as a real program on its terminal: asks for a
/// user name and password, checks them, and gives a real shell.
const OWN_LOGIN: &str = r#"printf 'vm login: '; read -r u; printf 'Password: '; read -rs p; echo
if [ "$u" = admin ] && [ "$p" = "$WANT" ]; then PS1='admin@vm:~$ ' exec bash --norc --noprofile -i; fi
echo 'Login incorrect'"#;

/// A shell behind the line whose own login is [`OWN_LOGIN`], a port with
/// stored credentials, and the operator's client over stdio (which may
/// use them).
async fn shell_with_its_login(dir: &tempfile::TempDir) -> (ProgramLine, Agent) {
    credentials(dir.path());
    let link = dir.path().join("vm1");
    let device = ProgramLine::spawn(
        Program::new("/bin/bash")
            .arg("-c")
            .arg(OWN_LOGIN)
            .env("WANT", LOGIN_PASSWORD),
        &link,
    )
    .expect("program line");
    let config = format!(
        "[ports.vm1]\ndevice = {:?}\npreset = \"linux\"\ncredentials = \"sw1.credentials\"\n",
        link.display()
    );
    let agent = Agent(Rig::client_with(dir, &config).await);
    (device, agent)
}

/// An MCP client whose calls must succeed (`ok`) or fail (`err`).
struct Agent(serialgate_testkit::GateClient);

impl Agent {
    async fn ok(&self, tool: &str, args: serde_json::Value) -> serde_json::Value {
        self.0.call(tool, args).await.expect("MCP transport").ok()
    }

    async fn err(&self, tool: &str, args: serde_json::Value) -> String {
        self.0.call(tool, args).await.expect("MCP transport").err()
    }
}

/// An agent that may use the stored credentials stages a fake login on a
/// real shell (a program that prints `login:` and `Password:`, reads what
/// is typed and prints it reversed), then asks `set_mode` to log in: the
/// daemon types nothing of the credentials into it, says why, and the
/// reversed password never shows. (Before, `set_mode` judged only the
/// last prompt and typed the password into the program.)
#[tokio::test]
async fn stored_credentials_are_not_typed_into_a_login_the_caller_staged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_device, agent) = shell_with_its_login(&dir).await;
    agent.ok("connect", json!({"port": "vm1"})).await;
    let logged_in = agent.ok("set_mode", json!({"mode": "exec"})).await;
    assert_eq!(logged_in["prompt"], "admin@vm:~$", "{logged_in}");

    let staged = agent
        .ok(
            "send_command",
            json!({"command": "printf 'login: '; read u; printf 'Password: '; read -rs p; echo; echo \"$p\" | rev"}),
        )
        .await;
    assert_eq!(staged["prompt_text"], "login: ", "{staged}");
    let refused = agent.err("set_mode", json!({"mode": "exec"})).await;
    assert!(
        refused.contains("forbidden") && refused.contains("typed at its command line"),
        "{refused}"
    );
    let reversed: String = LOGIN_PASSWORD.chars().rev().collect();
    let whole = agent
        .ok("read_output", json!({"cursor": 0, "max_bytes": 65536}))
        .await
        .to_string();
    assert!(!whole.contains(&reversed), "{whole}");
    assert!(!whole.contains(LOGIN_PASSWORD), "{whole}");
}

/// The device's own login, with nothing typed at its command line before,
/// gets the stored credentials; once a command was typed, a later login
/// prompt (here the real one, after `exit`) does not, because the daemon
/// cannot tell it from a program's, and the error says what to do.
#[tokio::test]
async fn after_commands_even_a_real_login_waits_for_a_person() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (device, agent) = shell_with_its_login(&dir).await;
    agent.ok("connect", json!({"port": "vm1"})).await;
    agent.ok("set_mode", json!({"mode": "exec"})).await;
    let said = agent
        .ok("send_command", json!({"command": "echo hi"}))
        .await;
    assert_eq!(said["output"], "hi", "{said}");
    agent.ok("send_text", json!({"text": "exit\r"})).await;
    serialgate_testkit::wait::eventually("the login is started again", DEADLINE, async || {
        if device.starts() == 2 {
            Ok(())
        } else {
            Err(device.starts())
        }
    })
    .await;
    agent
        .ok(
            "read_until_prompt",
            json!({"prompt": "login: ", "timeout": 10}),
        )
        .await;
    let refused = agent.err("set_mode", json!({"mode": "exec"})).await;
    assert!(
        refused.contains("expect with sensitive: true") && refused.contains("session"),
        "{refused}"
    );
}
