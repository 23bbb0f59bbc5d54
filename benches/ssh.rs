//! How soon a person at the SSH door sees what they type: the echo of a
//! keystroke through OpenSSH's `ssh`, the daemon's SSH door and the
//! simulated device, and back.
//!
//! The simulated Cisco switch runs in this process on a pseudo-terminal;
//! the release `serialgate serve` holds it as port `sw1` with its SSH door
//! on 127.0.0.1; OpenSSH's own `ssh` (a key made by `ssh-keygen`) runs on
//! a second pseudo-terminal whose master the bench holds, as a terminal
//! emulator does, and attaches as `alice:sw1`. Each sample types one key
//! at the switch's prompt and times until its echo is on the terminal:
//! `x`, then DEL (its echo the switch's rubout), in turn, so that the line
//! never grows. Reported: p50, p99 and max, µs, and for context the same
//! keystroke's echo through the daemon's console socket (the attach
//! protocol as `serialgate console` speaks it, no SSH). It prints figures,
//! never asserts a speed, and ends with one JSON line of all of them
//! (quoted by BENCHMARKS.md).
//!
//! Run (the release binary must exist first; OpenSSH's client must be
//! installed):
//!
//! ```text
//! cargo build --release && cargo bench --bench ssh
//! cargo bench --bench ssh -- --quick     # or SERIALGATE_BENCH_QUICK=1
//! ```

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use serialgate_sim::{self as sim, Profile};
use serialgate_testkit::binary;
use serialgate_testkit::console::ConsoleConn;
use serialgate_testkit::daemon::{Daemon, NotifySocket};
use serialgate_testkit::spread::{Spread, spread};

/// Samples before timing starts.
const WARMUP: usize = 20;
/// How long one echo, or the attach, may take before the bench fails.
const DEADLINE: Duration = Duration::from_secs(20);
/// DEL, as a terminal sends Backspace.
const DEL: u8 = 0x7f;

fn main() -> ExitCode {
    let quick = std::env::args().any(|a| a == "--quick")
        || std::env::var("SERIALGATE_BENCH_QUICK").is_ok_and(|v| v == "1");
    if let Err(e) = binary::bench_binary() {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    for tool in ["ssh", "ssh-keygen"] {
        if std::process::Command::new(tool)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_err()
        {
            eprintln!("{tool} is missing: install OpenSSH's client (Debian: openssh-client)");
            return ExitCode::FAILURE;
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(run(if quick { 100 } else { 1000 }));
    ExitCode::SUCCESS
}

async fn run(samples: usize) {
    let site = Site::start().await;
    let ssh = {
        let site_dir = site.dir.path().to_owned();
        let port = site.ssh_port;
        tokio::task::spawn_blocking(move || ssh_echoes(&site_dir, port, samples))
            .await
            .expect("the ssh samples")
    };
    let console = console_echoes(&site.socket, samples).await;
    println!("keystroke -> echo on the person's screen, {samples} samples (µs)");
    println!("{:>16} {:>9} {:>9} {:>9}", "path", "p50", "p99", "max");
    for (name, s) in [("ssh", &ssh), ("console socket", &console)] {
        println!("{name:>16} {:>9.0} {:>9.0} {:>9.0}", s.p50, s.p99, s.max);
    }
    println!();
    println!(
        "{}",
        json!({
            "samples": samples,
            "ssh_p50_us": ssh.p50, "ssh_p99_us": ssh.p99, "ssh_max_us": ssh.max,
            "console_p50_us": console.p50, "console_p99_us": console.p99,
            "console_max_us": console.max,
        })
    );
}

/// The switch, the daemon with its SSH door and console socket, alice's key.
struct Site {
    dir: tempfile::TempDir,
    ssh_port: u16,
    socket: std::path::PathBuf,
    _sim: sim::SimHandle,
    _daemon: Daemon,
    _notify: NotifySocket,
}

impl Site {
    async fn start() -> Site {
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("sw1");
        let sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
            .await
            .expect("simulated switch");
        let state = dir.path().join("state");
        std::fs::create_dir(&state).expect("state dir");
        private(&state, 0o700);
        let status = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "alice", "-f"])
            .arg(dir.path().join("alice"))
            .status()
            .expect("run ssh-keygen");
        assert!(status.success(), "ssh-keygen failed");
        let keys = dir.path().join("alice.keys");
        std::fs::copy(dir.path().join("alice.pub"), &keys).expect("copy the public key");
        private(&keys, 0o600);
        let socket = dir.path().join("console.sock");
        let config = dir.path().join("config.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\nssh_listen = \"127.0.0.1:0\"\nstate_dir = \"state\"\nconsole_socket = \"console.sock\"\n\n\
                 [[people]]\nname = \"alice\"\nauthorized_keys = \"alice.keys\"\nports = [\"*\"]\naccess = \"write\"\n\n\
                 [ports.sw1]\ndevice = \"{}\"\npreset = \"cisco-ios\"\n",
                link.display()
            ),
        )
        .expect("write the config");
        let notify = NotifySocket::bind(dir.path());
        // Warnings only: the audit trail's line per keystroke would be
        // printed by the bench and cost the daemon a write per sample.
        let mut command = Daemon::command(Some(&config), &notify, &[]);
        command.env("SERIALGATE_LOG", "warn");
        let mut daemon = Daemon::run(command);
        let line = daemon.stderr.wait_for("serialgate: ssh at ").await;
        let ssh_port = line
            .split("ssh at 127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        Site {
            dir,
            ssh_port,
            socket,
            _sim: sim,
            _daemon: daemon,
            _notify: notify,
        }
    }
}

fn private(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// The terminal `ssh` runs on: the bench holds the master.
struct Screen {
    master: std::fs::File,
    /// What came since the last match.
    unread: Vec<u8>,
}

impl Screen {
    /// Reads until `needle` has come; drops what came up to its end.
    fn until(&mut self, needle: &[u8]) {
        let started = Instant::now();
        let mut buf = [0u8; 4096];
        loop {
            if let Some(at) = self.unread.windows(needle.len()).position(|w| w == needle) {
                self.unread.drain(..at + needle.len());
                return;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "{:?} not on the screen within {DEADLINE:?}: {:?}",
                String::from_utf8_lossy(needle),
                String::from_utf8_lossy(&self.unread)
            );
            match self.master.read(&mut buf) {
                Ok(0) => panic!(
                    "ssh's terminal closed: {:?}",
                    String::from_utf8_lossy(&self.unread)
                ),
                Ok(n) => self.unread.extend_from_slice(&buf[..n]),
                Err(e) => panic!("reading ssh's terminal: {e}"),
            }
        }
    }

    fn type_keys(&mut self, keys: &[u8]) {
        self.master
            .write_all(keys)
            .expect("type into ssh's terminal");
    }
}

/// Runs `ssh` as alice on sw1 and times `samples` echoes (after the
/// warm-up), µs.
fn ssh_echoes(dir: &Path, port: u16, samples: usize) -> Spread {
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let slave: OwnedFd = pty.slave;
    let mut child = std::process::Command::new("ssh")
        .args(["-F", "/dev/null", "-tt", "-i"])
        .arg(dir.join("alice"))
        .args(["-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none"])
        .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no"])
        .args(["-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"])
        .arg("-p")
        .arg(port.to_string())
        .args(["-l", "alice:sw1", "127.0.0.1"])
        .stdin(Stdio::from(slave.try_clone().expect("dup")))
        .stdout(Stdio::from(slave.try_clone().expect("dup")))
        .stderr(Stdio::from(slave))
        .spawn()
        .expect("spawn ssh");
    let mut screen = Screen {
        master: std::fs::File::from(pty.master),
        unread: Vec::new(),
    };
    screen.until(b"you hold the write");
    screen.type_keys(b"\r");
    screen.until(b"SW1>");
    let mut times = Vec::with_capacity(samples);
    for i in 0..WARMUP + samples {
        let (key, echo): (&[u8], &[u8]) = if i % 2 == 0 {
            (b"x", b"x")
        } else {
            (&[DEL], b"\x08")
        };
        let sent = Instant::now();
        screen.type_keys(key);
        screen.until(echo);
        if i >= WARMUP {
            times.push(sent.elapsed().as_secs_f64() * 1e6);
        }
    }
    screen.type_keys(b"\x1d.");
    screen.until(b"detached from sw1");
    let _ = child.wait();
    spread(times)
}

/// The same keystrokes through the console socket's attach protocol, µs.
async fn console_echoes(socket: &Path, samples: usize) -> Spread {
    let (mut conn, _) =
        ConsoleConn::attach(socket, "sw1", "attach", json!({"replay_lines": 0})).await;
    let mut times = Vec::with_capacity(samples);
    for i in 0..WARMUP + samples {
        let (key, echo): (&[u8], &str) = if i % 2 == 0 {
            (b"y", "y")
        } else {
            (&[DEL], "\x08")
        };
        conn.output.clear();
        let sent = Instant::now();
        conn.send_data(key).await;
        tokio::time::timeout(DEADLINE, conn.until_output(echo))
            .await
            .expect("the echo within the deadline");
        if i >= WARMUP {
            times.push(sent.elapsed().as_secs_f64() * 1e6);
        }
    }
    spread(times)
}
