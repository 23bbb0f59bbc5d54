//! The real `serialgate serve` as a child process this test owns (its pid
//! for signals, its exit status, its stderr), a systemd-style
//! `NOTIFY_SOCKET` to hear its readiness on, and an MCP client over its
//! stdio. Every rig that runs the daemon starts it here.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::UnixDatagram;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::binary::binary;
use crate::client::{Outcome, to_outcome};

/// How long any one awaited event may take before the test fails.
pub const WITHIN: Duration = Duration::from_secs(20);

/// A datagram socket standing in for systemd's notify socket.
pub struct NotifySocket {
    socket: UnixDatagram,
    path: PathBuf,
}

impl NotifySocket {
    /// Binds `<dir>/notify`.
    pub fn bind(dir: &Path) -> NotifySocket {
        let path = dir.join("notify");
        let socket = UnixDatagram::bind(&path).expect("bind the notify socket");
        NotifySocket { socket, path }
    }

    /// Where `NOTIFY_SOCKET` points.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next datagram, as text.
    pub async fn next(&self) -> String {
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(WITHIN, self.socket.recv(&mut buf))
            .await
            .expect("a notification in time")
            .expect("recv on the notify socket");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    /// The next datagram, whose first line must be `state` (e.g.
    /// `READY=1`); returns the whole datagram.
    pub async fn expect(&self, state: &str) -> String {
        let got = self.next().await;
        assert_eq!(got.lines().next(), Some(state), "datagram {got:?}");
        got
    }
}

/// The daemon's stderr, line by line, echoed to the test's stderr.
pub struct Stderr {
    lines: mpsc::UnboundedReceiver<String>,
}

impl Stderr {
    fn follow(child: &mut Child) -> Stderr {
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                eprintln!("[daemon] {line}");
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Stderr { lines }
    }

    /// Every line up to and including the first that contains `needle`.
    pub async fn lines_until(&mut self, needle: &str) -> Vec<String> {
        let mut lines = Vec::new();
        tokio::time::timeout(WITHIN, async {
            while let Some(line) = self.lines.recv().await {
                let found = line.contains(needle);
                lines.push(line);
                if found {
                    return;
                }
            }
            panic!("the daemon's stderr ended without {needle:?}");
        })
        .await
        .unwrap_or_else(|_| panic!("no stderr line with {needle:?} in time"));
        lines
    }

    /// Every line not read yet, until stderr closes (the daemon exited).
    pub async fn rest(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        tokio::time::timeout(WITHIN, async {
            while let Some(line) = self.lines.recv().await {
                lines.push(line);
            }
        })
        .await
        .unwrap_or_else(|_| panic!("the daemon's stderr did not close in time"));
        lines
    }

    /// Skips lines until one contains `needle`, and returns it.
    pub async fn wait_for(&mut self, needle: &str) -> String {
        tokio::time::timeout(WITHIN, async {
            while let Some(line) = self.lines.recv().await {
                if line.contains(needle) {
                    return line;
                }
            }
            panic!("the daemon's stderr ended without {needle:?}");
        })
        .await
        .unwrap_or_else(|_| panic!("no stderr line with {needle:?} in time"))
    }
}

/// A `serialgate serve --config FILE` child (killed when dropped), with
/// `NOTIFY_SOCKET` set and stderr captured.
pub struct Daemon {
    /// The `serialgate serve` process.
    pub child: Child,
    /// Its stderr, line by line.
    pub stderr: Stderr,
}

impl Daemon {
    /// Spawns `serve [--config config] args…` with stdin and stdout piped
    /// (stdio MCP) and logs at `info`.
    pub fn spawn(config: Option<&Path>, notify: &NotifySocket, args: &[&str]) -> Daemon {
        Daemon::run(Daemon::command(config, notify, args))
    }

    /// The command [`Daemon::spawn`] runs, to adjust before [`Daemon::run`].
    pub fn command(config: Option<&Path>, notify: &NotifySocket, args: &[&str]) -> Command {
        let mut cmd = Daemon::command_for(&binary(), config, args);
        cmd.env("NOTIFY_SOCKET", notify.path());
        cmd
    }

    /// `binary serve [--config config] args…` with stdin, stdout and
    /// stderr piped and logs at `info`, to adjust before [`Daemon::run`].
    pub fn command_for(binary: &Path, config: Option<&Path>, args: &[&str]) -> Command {
        let mut cmd = Command::new(binary);
        cmd.arg("serve");
        if let Some(config) = config {
            cmd.arg("--config").arg(config);
        }
        cmd.args(args)
            .env("SERIALGATE_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// Spawns `cmd` (from [`Daemon::command`]) and follows its stderr.
    pub fn run(cmd: Command) -> Daemon {
        Daemon::try_run(cmd).expect("spawn serialgate")
    }

    /// Spawns `cmd` like [`Daemon::run`], or says why it could not.
    pub fn try_run(mut cmd: Command) -> std::io::Result<Daemon> {
        let mut child = cmd.spawn()?;
        let stderr = Stderr::follow(&mut child);
        Ok(Daemon { child, stderr })
    }

    /// The MCP URL a daemon started with `--http` printed
    /// (`listening on http://127.0.0.1:PORT/mcp`, or `https://`).
    pub async fn http_url(&mut self) -> String {
        let line = self.stderr.wait_for("listening on http").await;
        line.split("listening on ")
            .nth(1)
            .expect("an address")
            .trim()
            .to_owned()
    }

    /// Initializes MCP over the child's stdin and stdout.
    pub async fn client(&mut self) -> Client {
        let stdout = self.child.stdout.take().expect("piped stdout");
        let stdin = self.child.stdin.take().expect("piped stdin");
        let service = tokio::time::timeout(WITHIN, ().serve((stdout, stdin)))
            .await
            .expect("MCP initialize in time")
            .expect("MCP initialize");
        Client { service }
    }

    /// Sends `signal` (e.g. `libc::SIGHUP`) to the daemon.
    pub fn signal(&self, signal: libc::c_int) {
        let pid = self.child.id().expect("the daemon runs");
        let pid = libc::pid_t::try_from(pid).expect("a pid");
        // SAFETY: kill(2) on our own child's pid, no memory involved.
        assert_eq!(
            unsafe { libc::kill(pid, signal) },
            0,
            "kill({pid}, {signal})"
        );
    }

    /// Waits for the daemon to exit.
    pub async fn exit(&mut self) -> ExitStatus {
        tokio::time::timeout(WITHIN, self.child.wait())
            .await
            .expect("the daemon exits in time")
            .expect("exit status")
    }
}

/// An MCP client session with the daemon over its stdio.
pub struct Client {
    /// rmcp's client session.
    pub service: RunningService<RoleClient, ()>,
}

impl Client {
    /// Calls a tool.
    pub async fn call(&self, tool: &str, args: Value) -> Outcome {
        call(&self.service, tool, args).await
    }

    /// Calls a tool that must succeed.
    pub async fn ok(&self, tool: &str, args: Value) -> Value {
        self.call(tool, args).await.ok()
    }

    /// Calls a tool that must fail, and returns its error text.
    pub async fn err(&self, tool: &str, args: Value) -> String {
        self.call(tool, args).await.err()
    }

    /// The names of the ports `list_ports` shows, sorted.
    pub async fn port_names(&self) -> Vec<String> {
        let listed = self.ok("list_ports", Value::Null).await;
        let mut names: Vec<String> = listed["ports"]
            .as_array()
            .unwrap_or_else(|| panic!("no ports in {listed}"))
            .iter()
            .map(|p| p["name"].as_str().expect("a port name").to_owned())
            .collect();
        names.sort();
        names
    }
}

/// Calls a tool through any client handle (e.g. a peer moved into a task).
pub async fn call(peer: &rmcp::Peer<RoleClient>, tool: &str, args: Value) -> Outcome {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(map) = args {
        params = params.with_arguments(map);
    }
    to_outcome(peer.call_tool(params).await.expect("MCP transport"))
}

/// A `[[tokens]]` entry for tests: name, secret, ports (TOML array text,
/// e.g. `["sw*"]`) and access (`read`, `write` or `admin`).
pub type TestToken<'a> = (&'a str, &'a str, &'a str, &'a str);

/// `[[tokens]]` entries for `tokens`, their secret files written into `dir`
/// as `<name>.token` (mode 600), named relative to a config file in `dir`.
pub fn tokens_toml(dir: &Path, tokens: &[TestToken<'_>]) -> String {
    use std::os::unix::fs::PermissionsExt;
    let mut toml = String::new();
    for (name, secret, ports, access) in tokens {
        let file = dir.join(format!("{name}.token"));
        std::fs::write(&file, format!("{secret}\n")).expect("write a token file");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        toml.push_str(&format!(
            "[[tokens]]\nname = \"{name}\"\nsecret_file = \"{name}.token\"\nports = {ports}\naccess = \"{access}\"\n"
        ));
    }
    toml
}

/// `toml` (of [`tokens_toml`]) with `approve = true` on the tokens named
/// `names`: consoles and web views opened with them may decide requests
/// for approval.
pub fn approving(toml: &str, names: &[&str]) -> String {
    names.iter().fold(toml.to_owned(), |toml, name| {
        with_token_keys(&toml, name, "approve = true\n")
    })
}

/// `toml` (of [`tokens_toml`]) with the TOML lines `keys` (e.g.
/// `policy = "none"\n`) added to the token named `name`.
pub fn with_token_keys(toml: &str, name: &str, keys: &str) -> String {
    let line = format!("secret_file = \"{name}.token\"\n");
    toml.replace(&line, &format!("{line}{keys}"))
}
