//! Remote consoles through a real ser2net (Debian's `ser2net`, 4.3): the
//! simulated Cisco switch on a pseudo-terminal, ser2net exporting the pty
//! on 127.0.0.1 over `telnet`, `telnet(rfc2217)` or raw `tcp`, and the
//! real binary reaching it as `telnet://`, `rfc2217://` and `tcp://`.
//!
//! ser2net runs in the foreground (`-n`) with its own YAML config, pid
//! file and no UUCP locks, in a temp dir. `.ci/run` installs it; when it
//! is missing the tests fail and say how to install it.

use serialgate_testkit::rig as common;
use serialgate_testkit::wait;

use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{Gate, count, kernel_speed, num, open_slave, running_config, text};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use tempfile::TempDir;
use tokio::process::{Child, Command};

/// How long ser2net may take to listen, and a port to come back.
const DEADLINE: Duration = Duration::from_secs(20);

/// Where ser2net is: on PATH, or in /usr/sbin (not on a user's PATH).
fn ser2net_binary() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("ser2net"))
            .find(|p| p.is_file())
    });
    match on_path.or_else(|| {
        let sbin = PathBuf::from("/usr/sbin/ser2net");
        sbin.is_file().then_some(sbin)
    }) {
        Some(path) => path,
        None => panic!(
            "ser2net is not installed, and these tests need it: install it with `sudo apt-get install -y ser2net` (Debian/Ubuntu; .ci/run does this)"
        ),
    }
}

/// A TCP port nothing listens on now (the kernel's pick, released).
fn free_port() -> u16 {
    let listener = StdListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// The simulated switch and a ser2net exporting it.
struct Exported {
    sim: SimHandle,
    ser2net: Option<Child>,
    config: PathBuf,
    addr: SocketAddr,
    dir: TempDir,
}

impl Exported {
    /// Starts the switch at `<tmp>/sw1` and ser2net with `accepter` (e.g.
    /// `telnet(rfc2217),tcp`) on a free port, and waits until it listens.
    async fn start(accepter: &str) -> Exported {
        let binary = ser2net_binary();
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("sw1");
        let sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
            .await
            .expect("simulated switch");
        let port = free_port();
        let config = dir.path().join("ser2net.yaml");
        std::fs::write(
            &config,
            format!(
                "%YAML 1.1\n---\nconnection: &sw1\n    accepter: {accepter},127.0.0.1,{port}\n    connector: serialdev,{},9600n81,local\n",
                link.display()
            ),
        )
        .expect("write ser2net config");
        let mut exported = Exported {
            sim,
            ser2net: None,
            config,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            dir,
        };
        exported.spawn(&binary);
        exported.wait_listening().await;
        exported
    }

    fn spawn(&mut self, binary: &Path) {
        let log = std::fs::File::create(self.dir.path().join("ser2net.log")).expect("log file");
        let child = Command::new(binary)
            .arg("-n") // foreground
            .arg("-u") // no UUCP lock files
            .arg("-c")
            .arg(&self.config)
            .arg("-P")
            .arg(self.dir.path().join("ser2net.pid"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run {}: {e}; install ser2net with `sudo apt-get install -y ser2net`",
                    binary.display()
                )
            });
        self.ser2net = Some(child);
    }

    /// Waits until ser2net accepts a connection. Nothing tells when it
    /// listens but a connection that succeeds, so this tries again after
    /// each refusal, within [`DEADLINE`]; ser2net's exit, awaited
    /// meanwhile, fails the test with its log.
    async fn wait_listening(&mut self) {
        let addr = self.addr;
        let what = format!("ser2net to listen on {addr}");
        let listening = wait::eventually(&what, DEADLINE, || async move {
            tokio::net::TcpStream::connect(addr).await.map(drop)
        });
        let Some(child) = &mut self.ser2net else {
            return listening.await;
        };
        tokio::select! {
            () = listening => {}
            status = child.wait() => panic!(
                "ser2net exited ({status:?}): {}",
                std::fs::read_to_string(self.dir.path().join("ser2net.log")).unwrap_or_default()
            ),
        }
    }

    /// Kills ser2net (SIGKILL: its connections drop at once).
    async fn kill(&mut self) {
        if let Some(mut child) = self.ser2net.take() {
            child.kill().await.expect("kill ser2net");
        }
    }

    /// Starts ser2net again with the same config and port.
    fn restart(&mut self) {
        self.spawn(&ser2net_binary());
    }

    fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}", self.addr)
    }
}

fn has_event(status: &Value, needle: &str) -> bool {
    status["events"]
        .as_array()
        .is_some_and(|events| events.iter().any(|e| text(e, "what").contains(needle)))
}

/// What every transport must do through ser2net: a paged output whole and
/// in order, 0xFF both ways, and ser2net killed (the port `lost`, its log
/// kept) and started again (the port back `open`, earlier output still
/// readable).
async fn exercise(gate: &Gate, exported: &mut Exported) {
    gate.login().await;
    let clock = gate
        .ok("send_command", json!({"command": "show clock"}))
        .await;
    assert_eq!(clock["matched"], true, "{clock}");
    let run = gate
        .ok(
            "send_command",
            json!({"command": "show running-config", "timeout": 60, "max_output": 16 << 20}),
        )
        .await;
    assert_eq!(run["matched"], true, "{run}");
    assert!(num(&run, "auto_replies") > 50, "{}", run["auto_replies"]);
    let lines: Vec<&str> = text(&run, "output").split('\n').collect();
    let want = running_config();
    assert_eq!(lines.len(), want.len(), "line count");
    for (i, (got, want)) in lines.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "line {i}");
    }

    // 0xFF to the switch, which echoes it; then a backspace erases it
    // from its command line.
    let before = gate.all_output().await;
    let sent = gate.ok("send_hex", json!({"hex": "ff08"})).await;
    assert_eq!(num(&sent, "bytes_sent"), 2);
    assert!(
        exported
            .sim
            .wait_received(&[0xFF, 0x08], Duration::from_secs(5))
            .await,
        "the switch got 0xFF as one byte: {:02x?}",
        exported
            .sim
            .received()
            .iter()
            .rev()
            .take(8)
            .collect::<Vec<_>>()
    );
    let echoed = gate
        .ok(
            "read_until_prompt",
            json!({"prompt": "\u{8} \u{8}", "timeout": 5}),
        )
        .await;
    assert_eq!(echoed["matched"], true, "{echoed}");
    let after = gate.all_output().await;
    assert_eq!(count(&before, &[0xFF]), 0);
    assert_eq!(count(&after, &[0xFF]), 1, "the echo, one byte");
    assert_eq!(count(&after, &[0]), 0, "no NUL padding, no negotiation");
    assert_eq!(count(&after, b"show running-config"), 1);

    // ser2net dies: the port is lost, its log kept.
    let head = num(&gate.ok("status", json!({})).await, "head");
    exported.kill().await;
    gate.expect_lost().await;

    // It comes back: so does the port, by itself, with the same log.
    exported.restart();
    let back = gate.wait_state(&["open"], DEADLINE).await;
    assert_eq!(back["state"], "open", "{back}");
    assert!(num(&back, "reconnects") >= 1, "{back}");
    assert!(num(&back, "head") >= head);
    let kept = gate.all_output().await;
    assert_eq!(&kept[..after.len()], &after[..], "earlier output kept");
    let page = gate
        .ok("read_output", json!({"cursor": 0, "max_bytes": 4096}))
        .await;
    assert!(text(&page, "output").contains("SW1>"), "{page}");
    let clock = gate
        .ok("send_command", json!({"command": "show clock"}))
        .await;
    assert_eq!(clock["matched"], true, "{clock}");
}

#[tokio::test]
async fn telnet_through_ser2net() {
    let mut exported = Exported::start("telnet,tcp").await;
    let url = exported.url("telnet");
    let gate = Gate::start(&format!(
        "[ports.ts1]\ndevice = {url:?}\npreset = \"cisco-ios\"\n"
    ))
    .await;
    let c = gate.ok("connect", json!({"port": "ts1"})).await;
    assert_eq!(c["device"], url);
    exercise(&gate, &mut exported).await;
    let status = gate.ok("status", json!({})).await;
    assert!(status.get("com_port").is_none(), "{status}");
}

#[tokio::test]
async fn rfc2217_through_ser2net_sets_the_line() {
    let mut exported = Exported::start("telnet(rfc2217),tcp").await;
    let url = exported.url("rfc2217");
    let gate = Gate::start(&format!(
        "[ports.ts1]\ndevice = {url:?}\npreset = \"cisco-ios\"\nbaud = 19200\n"
    ))
    .await;
    gate.ok("connect", json!({"port": "ts1"})).await;

    // At open, the port's settings go to the server, which sets the pty.
    let set = gate
        .wait_status(DEADLINE, |s| {
            has_event(s, "the console server set the line to 19200 8N1")
        })
        .await;
    assert!(
        has_event(&set, "the console server set the line to 19200 8N1"),
        "{set}"
    );
    assert_eq!(set["com_port"], "agreed", "{set}");
    assert_eq!(
        set["modem_state"],
        json!({"cts": false, "dsr": false, "ri": false, "cd": false}),
        "ser2net notifies a pty's (absent) modem lines: {set}"
    );
    let slave = open_slave(exported.sim.slave_path());
    if let Some(fd) = &slave {
        assert_eq!(kernel_speed(fd), 19200, "set at open");
    }

    // A live change reaches the pty once the server acknowledged it.
    let changed = gate.ok("set_line_settings", json!({"baud": 115200})).await;
    assert_eq!(changed["live"], true, "{changed}");
    assert_eq!(changed["settings"]["baud"], 115200, "{changed}");
    if let Some(fd) = &slave {
        assert_eq!(kernel_speed(fd), 115200, "changed on the pty");
    }
    // detect_baud goes through the server too (a pty reads at any rate:
    // a tie, which keeps the current one).
    let detected = gate
        .ok(
            "detect_baud",
            json!({"candidates": [9600, 115200], "listen_ms": 300}),
        )
        .await;
    assert_eq!(detected["best"], 115200, "{detected}");
    assert_eq!(detected["settings"]["baud"], 115200, "{detected}");
    if let Some(fd) = &slave {
        assert_eq!(kernel_speed(fd), 115200, "back at the best rate");
    }
    // BREAK goes as SET-CONTROL BREAK-ON / BREAK-OFF, both acknowledged.
    gate.ok("send_break", json!({"duration_ms": 50})).await;
    // A pty has no DTR: ser2net does not answer, which the daemon's own
    // deadline ends (the error says so; a wait without one would hang
    // past the test's minute).
    let started = std::time::Instant::now();
    let e = tokio::time::timeout(
        Duration::from_secs(60),
        gate.err("set_lines", json!({"dtr": true})),
    )
    .await
    .expect("set_lines ends at its own deadline");
    assert!(
        e.starts_with("timeout: ") && e.contains("SET-CONTROL (DTR)"),
        "{e}"
    );
    println!("set_lines timed out after {:?}", started.elapsed());

    exercise(&gate, &mut exported).await;
    // The reconnected line is set to the current settings again (ser2net
    // reopened the pty at its own 9600).
    let again = gate
        .wait_status(DEADLINE, |s| {
            has_event(s, "the console server set the line to 115200 8N1")
        })
        .await;
    assert!(
        has_event(&again, "the console server set the line to 115200 8N1"),
        "{again}"
    );
    if let Some(fd) = &slave {
        assert_eq!(kernel_speed(fd), 115200, "kept across the reconnect");
    }
}

#[tokio::test]
async fn raw_tcp_through_ser2net_connected_ad_hoc() {
    let mut exported = Exported::start("tcp").await;
    let gate =
        Gate::start("[server]\nallow_adhoc = true\nadhoc_remotes = [\"127.0.0.1:*\"]\n").await;
    let c = gate
        .ok(
            "connect",
            json!({"port": exported.url("tcp"), "preset": "cisco-ios"}),
        )
        .await;
    assert_eq!(
        c["connection"],
        format!("127.0.0.1-{}", exported.addr.port()),
        "{c}"
    );
    let e = gate.err("set_line_settings", json!({"baud": 115200})).await;
    assert!(
        e.starts_with("port_unavailable: ") && e.contains("rfc2217://"),
        "{e}"
    );
    exercise(&gate, &mut exported).await;
}
