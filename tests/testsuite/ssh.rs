//! The SSH door end to end, with OpenSSH's own `ssh` on a pseudo-terminal
//! as an engineer runs it: a throwaway key made by `ssh-keygen`, the
//! daemon's real host key pinned in a `known_hosts` of the test's own
//! (`StrictHostKeyChecking=yes`), and the simulated Cisco switch behind
//! the port. Hostile uses (refused features, floods) are in
//! `hostile_ssh.rs`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::client::GateClient;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use serialgate_testkit::skip::skipped;
use tempfile::TempDir;
use tokio::process::{Child, Command};

use super::console_client::Terminal;

/// How long any one expected thing may take.
pub(super) const DEADLINE: Duration = Duration::from_secs(20);
const NOC: &str = "noc-secret-0123456789";

/// The switch, the daemon with its SSH door, the people's keys.
pub(super) struct Door {
    pub(super) sim: SimHandle,
    pub(super) daemon: Daemon,
    pub(super) dir: TempDir,
    pub(super) config: PathBuf,
    /// The SSH door's port on 127.0.0.1.
    pub(super) port: u16,
    /// The MCP URL.
    pub(super) url: String,
    /// The host key's fingerprint, as the daemon printed it at start.
    pub(super) fingerprint: String,
    _notify: NotifySocket,
}

/// Whether OpenSSH's client and ssh-keygen are here; says why not.
pub(super) fn have_openssh() -> bool {
    for tool in ["ssh", "ssh-keygen"] {
        let found = std::process::Command::new(tool)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !found {
            skipped(&format!(
                "{tool} is missing: install OpenSSH's client (Debian: openssh-client; .ci/install-deps does)"
            ));
            return false;
        }
    }
    true
}

/// The `[[people]]` of every door: alice (admin, every port, not an
/// approver), bob and dave (read, sw1 only), carol (write, every port,
/// approves), each with a key of their own in the test's directory.
pub(super) fn people_toml(dir: &Path) -> String {
    let mut toml = String::new();
    for (name, ports, access, approve) in [
        ("alice", r#"["*"]"#, "admin", false),
        ("bob", r#"["sw1"]"#, "read", false),
        ("carol", r#"["*"]"#, "write", true),
        ("dave", r#"["sw1"]"#, "read", false),
    ] {
        keygen(dir, name);
        let keys = dir.join(format!("{name}.keys"));
        std::fs::copy(dir.join(format!("{name}.pub")), &keys).expect("copy the public key");
        private(&keys);
        toml.push_str(&format!(
            "[[people]]\nname = \"{name}\"\nauthorized_keys = \"{name}.keys\"\nports = {ports}\naccess = \"{access}\"\napprove = {approve}\n"
        ));
    }
    toml
}

/// Makes the key `dir/name` (and `name.pub`) with `ssh-keygen`.
pub(super) fn keygen(dir: &Path, name: &str) {
    let status = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(dir.join(name))
        .status()
        .expect("run ssh-keygen");
    assert!(status.success(), "ssh-keygen failed");
}

pub(super) fn private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
}

impl Door {
    /// Starts the switch and the daemon (HTTP for the agent, the SSH door).
    pub(super) async fn start() -> Door {
        Door::start_with("").await
    }

    /// [`Door::start`] with `sw1` TOML keys added to port sw1.
    pub(super) async fn start_with(sw1: &str) -> Door {
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("sw1");
        let sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
            .await
            .expect("simulated device");
        let state = dir.path().join("state");
        std::fs::create_dir(&state).expect("state dir");
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700))
                .expect("chmod");
        }
        let people = people_toml(dir.path());
        let tokens = daemon::tokens_toml(dir.path(), &[("noc", NOC, r#"["*"]"#, "write")]);
        let text = format!(
            "[server]\nssh_listen = \"127.0.0.1:0\"\nstate_dir = \"state\"\nlog_dir = \"logs\"\n\n{tokens}{people}\n\
             [ports.sw1]\ndevice = \"{}\"\npreset = \"cisco-ios\"\n{sw1}\n\
             [ports.sw2]\ndevice = \"{}\"\npreset = \"cisco-ios\"\n",
            link.display(),
            dir.path().join("no-such-device").display()
        );
        let config = dir.path().join("config.toml");
        std::fs::write(&config, text).expect("write the config");
        let notify = NotifySocket::bind(dir.path());
        let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
        let line = daemon.stderr.wait_for("serialgate: ssh at ").await;
        let port = line
            .split("ssh at 127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        let fingerprint = line
            .split("host key ")
            .nth(1)
            .map(|rest| rest.trim_end_matches(')').to_owned())
            .unwrap_or_else(|| panic!("no fingerprint in {line:?}"));
        let url = daemon.http_url().await;
        let door = Door {
            fingerprint,
            sim,
            daemon,
            config,
            port,
            url,
            dir,
            _notify: notify,
        };
        door.pin_host_key();
        door
    }

    /// Writes `known_hosts` with the host key the daemon made in its
    /// state_dir, read back by ssh-keygen.
    fn pin_host_key(&self) {
        let key = self.dir.path().join("state/ssh_host_ed25519_key");
        let out = std::process::Command::new("ssh-keygen")
            .arg("-y")
            .arg("-f")
            .arg(&key)
            .output()
            .expect("ssh-keygen -y");
        assert!(out.status.success(), "ssh-keygen -y: {out:?}");
        let public = String::from_utf8(out.stdout).expect("utf-8");
        std::fs::write(
            self.dir.path().join("known_hosts"),
            format!("[127.0.0.1]:{} {}", self.port, public.trim()),
        )
        .expect("write known_hosts");
    }

    /// `ssh` as `user` with `key`, and `args` after the options, on
    /// `terminal` (or with no terminal: `None`).
    pub(super) fn ssh(
        &self,
        terminal: Option<&Terminal>,
        user: &str,
        key: &str,
        args: &[&str],
    ) -> Child {
        self.ssh_with(terminal, user, key, args, &[])
    }

    /// [`Door::ssh`] with `env` set for ssh (an agent's socket, a display).
    pub(super) fn ssh_with(
        &self,
        terminal: Option<&Terminal>,
        user: &str,
        key: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Child {
        self.ssh_command(terminal, user, key, args, env)
            .spawn()
            .expect("spawn ssh")
    }

    /// [`Door::ssh`] on `terminal` as its controlling terminal, in a
    /// session of its own, as a person's shell runs it: resizing the
    /// terminal signals it.
    pub(super) fn ssh_controlling(
        &self,
        terminal: &Terminal,
        user: &str,
        key: &str,
        args: &[&str],
    ) -> Child {
        let mut cmd = self.ssh_command(Some(terminal), user, key, args, &[]);
        // SAFETY: between fork and exec the closure calls only
        // async-signal-safe functions (setsid, ioctl) on descriptor 0,
        // which the spawn has already made the terminal's slave.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd.spawn().expect("spawn ssh")
    }

    fn ssh_command(
        &self,
        terminal: Option<&Terminal>,
        user: &str,
        key: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.arg("-F")
            .arg("/dev/null")
            .arg("-i")
            .arg(self.dir.path().join(key))
            .args(["-o", "IdentitiesOnly=yes"])
            // No agent's keys, unless a test forwards one (`-A`).
            .args(if env.iter().any(|(name, _)| *name == "SSH_AUTH_SOCK") {
                &[][..]
            } else {
                &["-o", "IdentityAgent=none"][..]
            })
            .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
            .arg("-o")
            .arg(format!(
                "UserKnownHostsFile={}",
                self.dir.path().join("known_hosts").display()
            ))
            .args([
                "-o",
                "GlobalKnownHostsFile=/dev/null",
                "-o",
                "LogLevel=ERROR",
            ])
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-l")
            .arg(user)
            .args(args)
            .env_remove("SSH_AUTH_SOCK")
            .env_remove("DISPLAY")
            .envs(env.iter().copied())
            .kill_on_drop(true);
        match terminal {
            Some(t) => cmd.stdin(t.stdio()).stdout(t.stdio()).stderr(t.stdio()),
            None => cmd
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        };
        if !args.contains(&"127.0.0.1") {
            cmd.arg("127.0.0.1");
        }
        cmd
    }

    /// The audit trail's records so far.
    fn audit(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.dir.path().join("logs/audit.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// An agent over MCP with the `noc` token.
    pub(super) async fn agent(&self) -> GateClient {
        GateClient::connect_http(&self.url, Some(NOC))
            .await
            .expect("MCP over HTTP")
    }
}

/// Waits for `child` to exit; its status code.
pub(super) async fn exit_code(child: &mut Child) -> Option<i32> {
    tokio::time::timeout(DEADLINE, child.wait())
        .await
        .expect("ssh exits within the deadline")
        .expect("wait for ssh")
        .code()
}

#[tokio::test]
async fn the_menu_lists_the_ports_and_a_name_attaches_typing_reaches_the_switch_and_an_agent_is_told_who_holds_it()
 {
    if !have_openssh() {
        return;
    }
    let door = Door::start().await;
    let mut terminal = Terminal::open();
    let mut ssh = door.ssh(Some(&terminal), "alice", "alice", &["-tt"]);
    let menu = terminal.read_until("empty line to leave): ").await;
    assert!(menu.contains("the ports alice reaches"), "{menu}");
    assert!(menu.contains("PORT") && menu.contains("HOLDER"), "{menu}");
    assert!(menu.contains("sw1 ") && menu.contains("sw2 "), "{menu}");
    // A name that is no port says so and asks again.
    terminal.type_keys(b"nope\r");
    terminal.read_until("no port \"nope\"").await;
    terminal.read_until("empty line to leave): ").await;
    terminal.type_keys(b"sw1\r");
    terminal
        .read_until("attached to sw1 as alice on ssh: you hold the write")
        .await;
    terminal.type_keys(b"\r");
    terminal.read_until("SW1>").await;
    terminal.type_keys(b"show clock\r");
    terminal.read_until("UTC").await;
    assert!(
        door.sim
            .wait_received(b"show clock\r", Duration::from_secs(5))
            .await,
        "the switch did not get the typed command"
    );

    // The agent reads but may not write: busy, naming the SSH person.
    let agent = door.agent().await;
    agent
        .call("connect", json!({"port": "sw1"}))
        .await
        .expect("MCP")
        .ok();
    let busy = agent
        .call("send_text", json!({"text": "show version"}))
        .await
        .expect("MCP")
        .err();
    assert!(busy.starts_with("busy: "), "{busy}");
    assert!(busy.contains("alice on ssh"), "{busy}");

    // BREAK by the escape key reaches the line (alice is admin).
    terminal.type_keys(b"\x1db");
    terminal.read_until("sending BREAK").await;
    serialgate_testkit::wait::eventually("the BREAK in the port's events", DEADLINE, async || {
        let status = agent
            .call("status", json!({}))
            .await
            .map_err(|e| e.to_string())?
            .ok();
        serialgate_testkit::wait::when(status.to_string(), |s| s.contains("sent BREAK for 250 ms"))
    })
    .await;

    // Ctrl-] . leaves; ssh exits 0.
    terminal.type_keys(b"\x1d.");
    terminal.read_until("detached from sw1").await;
    assert_eq!(exit_code(&mut ssh).await, Some(0));
}

#[tokio::test]
async fn a_port_in_the_user_name_or_the_command_attaches_at_once_and_spy_only_watches() {
    if !have_openssh() {
        return;
    }
    let door = Door::start().await;

    // check-config shows the host key the daemon made and serves.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_serialgate"))
        .arg("check-config")
        .arg(&door.config)
        .output()
        .expect("check-config");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains(&format!("ssh host key: {} (", door.fingerprint))
            && shown.contains("ssh: 127.0.0.1:0, public keys of [[people]] only"),
        "{shown}"
    );
    assert!(
        door.fingerprint.starts_with("SHA256:"),
        "{}",
        door.fingerprint
    );

    // The console-server convention: alice:sw1.
    let mut terminal = Terminal::open();
    let mut ssh = door.ssh(Some(&terminal), "alice:sw1", "alice", &["-tt"]);
    terminal
        .read_until("attached to sw1 as alice on ssh: you hold the write")
        .await;
    terminal.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut ssh).await, Some(0));

    // An exec of the port's name, watching only: typing is not sent.
    let mut terminal = Terminal::open();
    let mut ssh = door.ssh(
        Some(&terminal),
        "alice",
        "alice",
        &["-tt", "127.0.0.1", "sw1 --spy"],
    );
    terminal.read_until("spying on sw1 as alice on ssh").await;
    terminal.type_keys(b"show version\r");
    terminal.read_until("spying: typed keys are not sent").await;
    terminal.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut ssh).await, Some(0));
    // Had the door passed the spy's keys on, they would be queued for
    // the switch before anything typed after: a writer's line reaching
    // the switch is the barrier, then the spy's line must be absent.
    let mut terminal = Terminal::open();
    let mut ssh = door.ssh(Some(&terminal), "alice:sw1", "alice", &["-tt"]);
    terminal
        .read_until("attached to sw1 as alice on ssh: you hold the write")
        .await;
    terminal.type_keys(b"show inventory\r");
    assert!(
        door.sim
            .wait_received(b"show inventory\r", Duration::from_secs(20))
            .await,
        "the writer's line did not reach the switch"
    );
    let received = String::from_utf8_lossy(&door.sim.received()).into_owned();
    assert!(
        !received.contains("show version"),
        "a spy's keys reached the switch: {received:?}"
    );
    terminal.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut ssh).await, Some(0));

    // alice:sw1:spy, the same from the user name.
    let mut terminal = Terminal::open();
    let mut ssh = door.ssh(Some(&terminal), "alice:sw1:spy", "alice", &["-tt"]);
    terminal.read_until("spying on sw1").await;
    terminal.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut ssh).await, Some(0));
}

#[tokio::test]
async fn a_port_out_of_scope_or_a_key_not_authorised_gets_nothing() {
    if !have_openssh() {
        return;
    }
    let mut door = Door::start().await;

    // bob reaches sw1 only, and only to watch.
    let mut terminal = Terminal::open();
    let mut ssh = door.ssh(Some(&terminal), "bob:sw2", "bob", &["-tt"]);
    let screen = terminal.read_until("may use").await;
    assert!(
        screen.contains(r#"no port "sw2" that this caller may use"#),
        "{screen}"
    );
    assert_eq!(exit_code(&mut ssh).await, Some(1));
    let mut terminal = Terminal::open();
    let mut ssh = door.ssh(Some(&terminal), "bob", "bob", &["-tt"]);
    let menu = terminal.read_until("empty line to leave): ").await;
    assert!(menu.contains("sw1 ") && !menu.contains("sw2"), "{menu}");
    terminal.type_keys(b"sw1\r");
    terminal.read_until("spying on sw1 as bob on ssh").await;
    terminal.type_keys(b"\r");
    terminal.read_until("spying: typed keys are not sent").await;
    terminal.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut ssh).await, Some(0));

    // alice's name with bob's key, and a key nobody authorised.
    keygen(door.dir.path(), "mallory");
    for (user, key) in [
        ("alice", "bob"),
        ("alice", "mallory"),
        ("nobody", "mallory"),
    ] {
        let mut ssh = door.ssh(None, user, key, &["-T", "127.0.0.1", "sw1"]);
        assert_eq!(
            exit_code(&mut ssh).await,
            Some(255),
            "{user} with {key}'s key"
        );
        let out = ssh.wait_with_output().await.expect("output");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("Permission denied (publickey)"), "{stderr}");
    }
    door.daemon
        .stderr
        .wait_for("a key that is not this person's was refused")
        .await;
}

#[tokio::test]
async fn a_reload_that_moves_ssh_listen_says_it_takes_a_restart_and_the_door_stays_open() {
    if !have_openssh() {
        return;
    }
    let mut door = Door::start().await;
    let text = std::fs::read_to_string(&door.config).expect("read the config");
    let moved = text.replace(
        "ssh_listen = \"127.0.0.1:0\"",
        "ssh_listen = \"127.0.0.1:2222\"",
    );
    assert_ne!(text, moved, "ssh_listen was in the config");
    std::fs::write(&door.config, moved).expect("write the config");
    door.daemon.signal(libc::SIGHUP);
    let said = door
        .daemon
        .stderr
        .wait_for("ssh_listen changed to \"127.0.0.1:2222\"")
        .await;
    assert!(
        said.contains("stays where start bound it (\"127.0.0.1:0\") until a restart"),
        "{said}"
    );
    door.daemon.stderr.wait_for("reloaded").await;

    // The door is where it was, and lets alice in.
    let mut terminal = Terminal::open();
    let mut ssh = door.ssh(Some(&terminal), "alice:sw1", "alice", &["-tt"]);
    terminal.read_until("you hold the write").await;
    terminal.type_keys(b"\x1d.");
    terminal.read_until("detached from sw1").await;
    assert_eq!(exit_code(&mut ssh).await, Some(0));
}

#[tokio::test]
async fn a_reload_that_removes_the_person_or_her_key_closes_their_session() {
    if !have_openssh() {
        return;
    }
    let mut door = Door::start().await;
    let mut terminal = Terminal::open();
    let mut ssh = door.ssh(Some(&terminal), "alice:sw1", "alice", &["-tt"]);
    terminal.read_until("you hold the write").await;
    let mut carol_screen = Terminal::open();
    let mut carol = door.ssh(Some(&carol_screen), "carol:sw1", "carol", &["-tt"]);
    carol_screen
        .read_until("attached to sw1 as carol on ssh")
        .await;

    // carol's key is replaced in her authorized_keys: her open session
    // ends at the reload, as a removed token's console does.
    keygen(door.dir.path(), "carol-new");
    std::fs::copy(
        door.dir.path().join("carol-new.pub"),
        door.dir.path().join("carol.keys"),
    )
    .expect("replace carol's key");
    private(&door.dir.path().join("carol.keys"));
    door.daemon.signal(libc::SIGHUP);
    carol_screen
        .read_until("the key person \"carol\" signed in with was removed")
        .await;
    assert_eq!(exit_code(&mut carol).await, Some(1));
    door.daemon.stderr.wait_for("reloaded").await;

    // alice also waits at the menu in a second session.
    let mut menu_screen = Terminal::open();
    let mut at_menu = door.ssh(Some(&menu_screen), "alice", "alice", &["-tt"]);
    menu_screen.read_until("empty line to leave): ").await;

    let text = std::fs::read_to_string(&door.config).expect("read the config");
    let without = text.replace(
        "[[people]]\nname = \"alice\"\nauthorized_keys = \"alice.keys\"\nports = [\"*\"]\naccess = \"admin\"\napprove = false\n",
        "",
    );
    assert_ne!(text, without, "alice's entry was in the config");
    std::fs::write(&door.config, without).expect("write the config");
    door.daemon.signal(libc::SIGHUP);
    terminal
        .read_until("person \"alice\" was removed from the config")
        .await;
    assert_eq!(exit_code(&mut ssh).await, Some(1));

    // The menu she was at attaches her nowhere now.
    door.daemon.stderr.wait_for("reloaded").await;
    menu_screen.type_keys(b"sw1\r");
    menu_screen
        .read_until("person \"alice\" was removed from the config")
        .await;
    menu_screen.type_keys(b"\r");
    assert_eq!(exit_code(&mut at_menu).await, Some(0));

    // And she cannot come back.
    let mut ssh = door.ssh(None, "alice", "alice", &["-T", "127.0.0.1", "sw1"]);
    assert_eq!(exit_code(&mut ssh).await, Some(255));
}

#[tokio::test]
async fn only_a_person_whose_entry_says_approve_decides_a_guarded_line() {
    if !have_openssh() {
        return;
    }
    let door = Door::start_with("policy = \"guarded\"").await;
    let agent = door.agent().await;
    agent
        .call("connect", json!({"port": "sw1"}))
        .await
        .expect("MCP")
        .ok();
    serialgate_testkit::rig::enable(&agent).await;

    let mut alice_screen = Terminal::open();
    let mut alice = door.ssh(Some(&alice_screen), "alice:sw1", "alice", &["-tt"]);
    alice_screen
        .read_until("attached to sw1 as alice on ssh")
        .await;
    let mut carol_screen = Terminal::open();
    let mut carol = door.ssh(Some(&carol_screen), "carol:sw1", "carol", &["-tt"]);
    carol_screen
        .read_until("attached to sw1 as carol on ssh")
        .await;

    let people = async {
        alice_screen.read_until("Ctrl-] y approves").await;
        alice_screen.type_keys(b"\x1dy");
        alice_screen
            .read_until("person \"alice\" may not decide requests for approval")
            .await;
        let screen = carol_screen.read_until("Ctrl-] y approves").await;
        assert!(screen.contains("asks to send \"reload in 5\""), "{screen}");
        carol_screen.type_keys(b"\x1dy");
        carol_screen.read_until("you approved request").await;
    };
    let (sent, ()) = tokio::join!(
        agent.call("send_text", json!({"text": "reload in 5"})),
        people
    );
    sent.expect("MCP").ok();
    carol_screen
        .read_until("Reload scheduled in 5 minutes")
        .await;
    assert!(
        door.sim
            .wait_received(b"reload in 5\r", Duration::from_secs(5))
            .await,
        "the approved line did not reach the switch"
    );
    alice_screen.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut alice).await, Some(0));
    carol_screen.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut carol).await, Some(0));
}

#[tokio::test]
async fn netmiko_reaches_the_switch_through_the_door_and_reads_exactly_what_it_printed() {
    if !have_openssh() {
        return;
    }
    let Some(python) = serialgate_testkit::python::python_with(&["netmiko"]) else {
        return;
    };
    let door = Door::start().await;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/netmiko_ssh.py");
    let run = Command::new(&python)
        .arg(script)
        .arg("127.0.0.1")
        .arg(door.port.to_string())
        .arg("carol:sw1")
        .arg(door.dir.path().join("carol"))
        .arg(door.dir.path().join("known_hosts"))
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the script ends in time")
        .expect("run the script");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(result["prompt"], "SW1>", "{result}");
    let netmiko = result["show_version"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    // What the switch printed, as the port's log holds it, raw: the
    // lines between the command's echo and the next prompt.
    let agent = door.agent().await;
    agent
        .call("connect", json!({"port": "sw1"}))
        .await
        .expect("MCP")
        .ok();
    let log = agent
        .call("read_output", json!({"cursor": 0, "max_bytes": 65536}))
        .await
        .expect("MCP")
        .ok();
    let raw = log["output"].as_str().unwrap_or_default();
    let after_echo = raw
        .split_once("show version\r\n")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no show version in the log: {raw:?}"));
    let printed = after_echo
        .split_once("\r\nSW1>")
        .map(|(printed, _)| printed)
        .unwrap_or(after_echo);
    let agents = printed.replace('\r', "");
    let lines = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.trim_end().to_owned())
            .filter(|l| !l.starts_with("SW1 uptime is "))
            .collect()
    };
    assert!(netmiko.contains("SW1 uptime is "), "{netmiko}");
    assert!(
        netmiko.starts_with("Cisco IOS Software, C2960X Software"),
        "{netmiko}"
    );
    assert_eq!(lines(&netmiko), lines(&agents));
}

/// Waits until the port's events say `event`.
async fn port_event(agent: &GateClient, event: &str) {
    serialgate_testkit::wait::eventually(
        &format!("{event:?} in the port's events"),
        DEADLINE,
        async || {
            let status = agent
                .call("status", json!({}))
                .await
                .map_err(|e| e.to_string())?
                .ok();
            serialgate_testkit::wait::when(status.to_string(), |s| s.contains(event))
        },
    )
    .await;
}

#[tokio::test]
async fn openssh_break_escape_reaches_the_port_for_a_writer_and_is_refused_to_a_watcher() {
    if !have_openssh() {
        return;
    }
    let door = Door::start().await;
    let agent = door.agent().await;
    agent
        .call("connect", json!({"port": "sw1"}))
        .await
        .expect("MCP")
        .ok();

    // bob may only read: his `~B` is not sent, and he is told why.
    let mut bob_terminal = Terminal::open();
    let mut bob = door.ssh(Some(&bob_terminal), "bob:sw1", "bob", &["-tt"]);
    bob_terminal.read_until("spying on sw1 as bob on ssh").await;
    bob_terminal.type_keys(b"\r~B");
    bob_terminal
        .read_until("spying: you never write (attach without --spy to write)")
        .await;

    // alice holds the write: OpenSSH's `~B` (a `break` request of 1000 ms)
    // goes to the line as Ctrl-] b does, and the audit trail has it.
    let mut terminal = Terminal::open();
    let mut ssh = door.ssh(Some(&terminal), "alice:sw1", "alice", &["-tt"]);
    terminal
        .read_until("attached to sw1 as alice on ssh: you hold the write")
        .await;
    terminal.type_keys(b"\r~B");
    terminal.read_until("sending BREAK").await;
    port_event(&agent, "sent BREAK for 1000 ms").await;
    let breaks: Vec<_> = door
        .audit()
        .into_iter()
        .filter(|r| r["kind"] == "break")
        .collect();
    assert_eq!(breaks.len(), 1, "one BREAK, alice's: {breaks:?}");
    assert!(breaks[0].to_string().contains("alice"), "{breaks:?}");
    let status = agent.call("status", json!({})).await.expect("MCP").ok();
    assert!(
        !status.to_string().contains("sent BREAK for 250 ms"),
        "{status}"
    );

    terminal.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut ssh).await, Some(0));
    bob_terminal.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut bob).await, Some(0));
}

/// Replays the port's last lines (`Ctrl-] r`); the numbers of the
/// `output line NN` lines the replay showed, in order.
async fn replayed(terminal: &mut Terminal) -> Vec<u32> {
    terminal.type_keys(b"\x1dr");
    terminal.read_until("replay of the last lines:").await;
    let screen = terminal.read_until("end of replay").await;
    let start = screen
        .rfind("replay of the last lines:")
        .expect("the replay's start");
    line_numbers(&screen[start..])
}

/// The numbers of the `output line NN` lines in `screen`, in order.
fn line_numbers(screen: &str) -> Vec<u32> {
    regex::Regex::new(r"output line (\d+)")
        .unwrap()
        .captures_iter(screen)
        .map(|c| c[1].parse().unwrap())
        .collect()
}

#[tokio::test]
async fn the_terminal_height_sets_the_replay_at_attach_and_after_a_resize() {
    if !have_openssh() {
        return;
    }
    let door = Door::start().await;
    let mut terminal = Terminal::open();
    terminal.resize(12, 100);
    let mut ssh = door.ssh_controlling(&terminal, "alice:sw1", "alice", &["-tt"]);
    terminal
        .read_until("attached to sw1 as alice on ssh: you hold the write")
        .await;
    let mut output = String::new();
    for n in 1..=40 {
        output.push_str(&format!("output line {n:02}\r\n"));
    }
    door.sim.inject(output.as_bytes()).await;
    terminal.read_until("output line 40").await;

    // 12 rows (ssh's pty-req): a screenful is 9 lines under serialgate's own.
    assert_eq!(replayed(&mut terminal).await, (32..=40).collect::<Vec<_>>());
    // The window grows: ssh's window-change, and a replay fills it.
    terminal.resize(30, 100);
    assert_eq!(replayed(&mut terminal).await, (14..=40).collect::<Vec<_>>());
    terminal.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut ssh).await, Some(0));

    // A new attach replays a screenful of the terminal it starts on.
    let mut terminal = Terminal::open();
    terminal.resize(8, 80);
    let mut ssh = door.ssh_controlling(&terminal, "alice:sw1", "alice", &["-tt"]);
    let screen = terminal.read_until("line(s) follow").await;
    assert!(screen.contains("the last 5 line(s) follow"), "{screen}");
    let screen = terminal.read_until("output line 40").await;
    assert_eq!(line_numbers(&screen), [36, 37, 38, 39, 40], "{screen}");
    terminal.type_keys(b"\x1d.");
    assert_eq!(exit_code(&mut ssh).await, Some(0));
}
