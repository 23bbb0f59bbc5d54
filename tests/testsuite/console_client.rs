//! `serialgate console`, the real binary, as a person uses it: its stdin
//! and stdout are a pseudo-terminal's slave, the test holds the master (it
//! types keys and reads the screen), and the gateway is a protocol peer
//! played here on a Unix socket (or a WebSocket): it decodes the client's
//! frames on its own, so that the wire format is checked too, and answers
//! as the daemon would. Every wait has a deadline and waits for the bytes
//! or the frame it expects; nothing sleeps.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::sys::termios::{LocalFlags, Termios, tcgetattr};
use serde_json::{Value, json};
use serialgate_testkit::wait;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::process::{Child, Command};
use tokio::time::timeout;

/// How long any one expected thing may take.
const DEADLINE: Duration = Duration::from_secs(10);

const ESC: u8 = 0x1d;

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_serialgate")
}

/// The person's terminal: a pseudo-terminal whose slave the client runs
/// on; the test types into the master and reads the screen from it.
pub(super) struct Terminal {
    master: AsyncFd<OwnedFd>,
    /// Kept open for the whole test: its termios are read before and after
    /// the client, and the master keeps working after the client exits.
    slave: OwnedFd,
    /// Everything the client wrote.
    screen: Vec<u8>,
    /// Where the next `read_until` starts looking.
    seen: usize,
}

impl Terminal {
    pub(super) fn open() -> Terminal {
        let pty = nix::pty::openpty(None, None).expect("openpty");
        for fd in [&pty.master, &pty.slave] {
            fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).expect("FD_CLOEXEC");
        }
        fcntl(&pty.master, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).expect("O_NONBLOCK");
        // SAFETY: the master is owned here and nothing else closes or
        // replaces it while the `AsyncFd` holds it.
        let master = unsafe { AsyncFd::register(pty.master) }.expect("AsyncFd");
        Terminal {
            master,
            slave: pty.slave,
            screen: Vec::new(),
            seen: 0,
        }
    }

    pub(super) fn termios(&self) -> Termios {
        tcgetattr(&self.slave).expect("tcgetattr on the slave")
    }

    /// The slave as a child's stdin, stdout or stderr.
    pub(super) fn stdio(&self) -> Stdio {
        Stdio::from(self.slave.try_clone().expect("dup the slave"))
    }

    /// Sets the terminal's window size, as a terminal emulator does when
    /// its window is resized: the kernel tells the foreground process of
    /// the terminal it controls (SIGWINCH).
    pub(super) fn resize(&self, rows: u16, cols: u16) {
        let size = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCSWINSZ reads one `winsize` from the pointer, which
        // points at one for the whole call; the descriptor is the master,
        // open for as long as `self`.
        let done = unsafe {
            libc::ioctl(
                std::os::fd::AsRawFd::as_raw_fd(self.master.get_ref()),
                libc::TIOCSWINSZ,
                &size,
            )
        };
        assert_eq!(done, 0, "TIOCSWINSZ: {}", io::Error::last_os_error());
    }

    /// Types `keys` as a person would.
    pub(super) fn type_keys(&self, keys: &[u8]) {
        let mut rest = keys;
        while !rest.is_empty() {
            match nix::unistd::write(self.master.get_ref(), rest) {
                Ok(n) => rest = &rest[n..],
                Err(e) => panic!("typing {keys:?}: {e}"),
            }
        }
    }

    /// Reads the screen until `needle` appears after what earlier calls
    /// found, within [`DEADLINE`]; returns the screen so far.
    pub(super) async fn read_until(&mut self, needle: &str) -> String {
        match timeout(DEADLINE, self.read_until_now(needle.as_bytes())).await {
            Ok(Ok(())) => self.text(),
            Ok(Err(e)) => panic!("reading the screen for {needle:?}: {e}\n{}", self.text()),
            Err(_) => panic!(
                "{needle:?} not on the screen within {DEADLINE:?}; the screen:\n{}\nas bytes: {:?}",
                self.text(),
                self.text()
            ),
        }
    }

    async fn read_until_now(&mut self, needle: &[u8]) -> io::Result<()> {
        let mut buf = [0u8; 4096];
        loop {
            if let Some(at) = self.screen[self.seen..]
                .windows(needle.len())
                .position(|w| w == needle)
            {
                self.seen += at + needle.len();
                return Ok(());
            }
            let mut guard = self.master.readable().await?;
            match guard
                .try_io(|fd| nix::unistd::read(fd.get_ref(), &mut buf).map_err(io::Error::from))
            {
                Ok(Ok(0)) => return Err(io::Error::other("the terminal closed")),
                Ok(Ok(n)) => self.screen.extend_from_slice(&buf[..n]),
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => {}
            }
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.screen).into_owned()
    }
}

/// A frame as the gateway reads it.
#[derive(Debug, PartialEq)]
enum Frame {
    Json(Value),
    Data(Vec<u8>),
}

/// The gateway's end of one client connection on the console socket:
/// frames decoded here from the bytes, independently of the daemon's code.
struct Conn {
    stream: UnixStream,
    buf: Vec<u8>,
}

impl Conn {
    /// The next frame from the client, `None` when it closed.
    async fn recv(&mut self) -> Option<Frame> {
        timeout(DEADLINE, self.recv_now())
            .await
            .unwrap_or_else(|_| panic!("no frame from the client within {DEADLINE:?}"))
    }

    async fn recv_now(&mut self) -> Option<Frame> {
        loop {
            if self.buf.len() >= 5 {
                let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]])
                    as usize;
                if self.buf.len() >= 5 + len {
                    let kind = self.buf[0];
                    let payload: Vec<u8> = self.buf.drain(..5 + len).skip(5).collect();
                    return Some(match kind {
                        b'J' => Frame::Json(serde_json::from_slice(&payload).expect("JSON frame")),
                        b'D' => Frame::Data(payload),
                        other => panic!("frame kind {other:#x}"),
                    });
                }
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk).await {
                Ok(0) | Err(_) => {
                    assert!(self.buf.is_empty(), "the client closed mid-frame");
                    return None;
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// The next frame, which must be JSON.
    async fn recv_json(&mut self) -> Value {
        match self.recv().await {
            Some(Frame::Json(v)) => v,
            other => panic!("expected a JSON frame, got {other:?}"),
        }
    }

    /// Data frames until they add up to `len` bytes.
    async fn recv_typed(&mut self, len: usize) -> Vec<u8> {
        let mut typed = Vec::new();
        while typed.len() < len {
            match self.recv().await {
                Some(Frame::Data(bytes)) => typed.extend(bytes),
                other => panic!("expected data, got {other:?} after {typed:?}"),
            }
        }
        typed
    }

    async fn send(&mut self, kind: u8, payload: &[u8]) {
        let mut frame = vec![kind];
        frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        frame.extend_from_slice(payload);
        self.stream.write_all(&frame).await.expect("send a frame");
    }

    async fn send_json(&mut self, message: Value) {
        self.send(b'J', message.to_string().as_bytes()).await;
    }

    /// Device output at `offset`.
    async fn send_data(&mut self, offset: u64, bytes: &[u8]) {
        let mut payload = offset.to_be_bytes().to_vec();
        payload.extend_from_slice(bytes);
        self.send(b'D', &payload).await;
    }
}

/// The console socket the test plays the gateway on.
struct Gateway {
    listener: UnixListener,
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Gateway {
    fn bind() -> Gateway {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("console.sock");
        let listener = UnixListener::bind(&path).expect("bind the console socket");
        Gateway {
            listener,
            path,
            _dir: dir,
        }
    }

    async fn accept(&self) -> Conn {
        let (stream, _) = timeout(DEADLINE, self.listener.accept())
            .await
            .expect("the client connects within the deadline")
            .expect("accept");
        Conn {
            stream,
            buf: Vec::new(),
        }
    }
}

/// `serialgate console ARGS --socket PATH` on the terminal.
pub(super) fn spawn_on(terminal: &Terminal, socket: &Path, args: &[&str]) -> Child {
    Command::new(binary())
        .arg("console")
        .args(args)
        .arg("--socket")
        .arg(socket)
        .env_remove("SERIALGATE_CONSOLE_SOCKET")
        .stdin(terminal.stdio())
        .stdout(terminal.stdio())
        .stderr(terminal.stdio())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn serialgate console")
}

async fn exit_of(child: &mut Child) -> ExitStatus {
    timeout(DEADLINE, child.wait())
        .await
        .expect("the client exits within the deadline")
        .expect("wait for the client")
}

fn holder(session: u64, who: &str) -> Value {
    json!({"session": session, "who": who, "since": "2025-01-01T10:00:00Z"})
}

/// The answer to hello: session 7, alice, writing or watching while
/// session 3 writes; 6 bytes of replay follow from offset 100.
fn attached(writing: bool) -> Value {
    let holder = if writing {
        holder(7, "alice on console (unix)")
    } else {
        holder(3, "session 3 (client claude-code, token lab)")
    };
    json!({
        "type": "attached", "port": "sw1", "session": 7,
        "you": "alice on console (unix)", "writing": writing,
        "start": 100, "head": 106, "state": "open",
        "holder": holder,
        "watchers": [{"session": 7, "who": "alice on console (unix)", "spy": false,
                      "since": "2025-01-01T10:00:00Z"}],
    })
}

/// A client attached to sw1 on a fresh terminal: the hello it sent and
/// the screen after the replay.
struct Attached {
    terminal: Terminal,
    /// Keeps the socket's directory.
    _gateway: Gateway,
    child: Child,
    conn: Conn,
    hello: Value,
    before: Termios,
}

async fn attach(args: &[&str], writing: bool) -> Attached {
    let mut terminal = Terminal::open();
    let before = terminal.termios();
    let gateway = Gateway::bind();
    let child = spawn_on(&terminal, &gateway.path, args);
    let mut conn = gateway.accept().await;
    let hello = conn.recv_json().await;
    conn.send_json(attached(writing)).await;
    conn.send_data(100, b"\r\nSW1#").await;
    terminal.read_until("Ctrl-] . to detach").await;
    terminal.read_until("SW1#").await;
    Attached {
        terminal,
        _gateway: gateway,
        child,
        conn,
        hello,
        before,
    }
}

#[tokio::test]
async fn a_session_types_escapes_and_detaches_with_the_terminal_restored() {
    let mut a = attach(&["sw1"], true).await;
    assert_eq!(a.hello["type"], "hello");
    assert_eq!(a.hello["port"], "sw1");
    assert_eq!(a.hello["mode"], "attach");
    assert_eq!(a.hello["replay_lines"], 20);
    let client = a.hello["client"].as_str().unwrap_or_default();
    assert!(client.starts_with("serialgate console "), "{client}");
    assert!(
        !a.terminal
            .termios()
            .local_flags
            .contains(LocalFlags::ICANON),
        "raw mode while attached"
    );

    a.terminal.type_keys(b"show clock\r");
    assert_eq!(a.conn.recv_typed(11).await, b"show clock\r");
    a.conn
        .send_data(
            106,
            b"show clock\r\n*10:42:03.117 UTC Mon Mar 3 2025\r\nSW1#",
        )
        .await;
    a.terminal.read_until("2025\r\nSW1#").await;

    for (key, expected) in [
        (b'r', json!({"type": "replay", "lines": 20})),
        (b'w', json!({"type": "who"})),
        (b'b', json!({"type": "break", "ms": null})),
        (b'f', json!({"type": "force"})),
        (b's', json!({"type": "release"})),
        (b'a', json!({"type": "acquire"})),
    ] {
        a.terminal.type_keys(&[ESC, key]);
        assert_eq!(a.conn.recv_json().await, expected, "Ctrl-] {}", key as char);
    }
    a.terminal.read_until("[serialgate: sending BREAK]").await;
    a.terminal.type_keys(&[ESC, ESC]);
    assert_eq!(a.conn.recv().await, Some(Frame::Data(vec![ESC])));
    // Split across two writes, and a key that is no command: not sent.
    a.terminal.type_keys(&[ESC]);
    a.terminal.type_keys(b"x");
    a.terminal
        .read_until("[serialgate: Ctrl-] x is no command (not sent); Ctrl-] ? for help]")
        .await;
    a.terminal.type_keys(&[ESC, b'?']);
    a.terminal.read_until("Ctrl-] .        detach").await;
    a.terminal.type_keys(&[ESC, b'w']);
    assert_eq!(
        a.conn.recv_json().await,
        json!({"type": "who"}),
        "x was not sent"
    );

    // The gateway's events, as the person reads them.
    a.conn
        .send_json(
            json!({"type": "who", "holder": holder(7, "alice on console (unix)"),
            "watchers": [{"session": 7, "who": "alice on console (unix)", "spy": false,
                          "since": "2025-01-01T10:00:00Z"}]}),
        )
        .await;
    a.terminal.read_until("1 watching:").await;
    a.conn.send_data(156, b"\r\nSW1#").await;
    a.conn
        .send_json(json!({"type": "holder", "holder": holder(3, "session 3 (client claude-code, token lab)"),
            "what": "session 3 (client claude-code, token lab) took the write hold from alice on console (unix)"}))
        .await;
    a.terminal
        .read_until(
            "SW1#\r\n[serialgate: session 3 (client claude-code, token lab) took the write hold",
        )
        .await;
    a.terminal
        .read_until("[serialgate: you are watching now; Ctrl-] f takes the write back]\r\n")
        .await;
    a.conn
        .send_json(json!({"type": "state", "state": "lost"}))
        .await;
    a.terminal.read_until("[serialgate: sw1 is lost").await;
    a.conn
        .send_json(json!({"type": "state", "state": "open"}))
        .await;
    a.terminal
        .read_until("[serialgate: sw1 is open again]")
        .await;
    a.conn
        .send_json(json!({"type": "replay", "start": 150, "end": 156}))
        .await;
    a.conn.send_data(150, b"\r\nSW1#").await;
    a.terminal
        .read_until(
            "[serialgate: replay of the last lines:]\r\n\r\nSW1#\r\n[serialgate: end of replay]",
        )
        .await;
    for _ in 0..3 {
        a.conn
            .send_json(json!({"type": "error", "code": "busy",
                "message": "session 3 (client claude-code, token lab) holds the write; Ctrl-] f takes it"}))
            .await;
    }
    a.conn
        .send_json(json!({"type": "truncated", "from": 10, "to": 42}))
        .await;
    a.terminal
        .read_until("32 byte(s) of output were dropped")
        .await;
    let screen = a.terminal.text();
    assert_eq!(
        screen.matches("busy: session 3").count(),
        1,
        "a repeated error is shown once:\n{screen}"
    );

    a.terminal.type_keys(&[ESC, b'.']);
    let status = exit_of(&mut a.child).await;
    assert_eq!(status.code(), Some(0), "Ctrl-] . exits 0");
    a.terminal
        .read_until("[serialgate: detached from sw1]\r\r\n")
        .await;
    assert_eq!(a.terminal.termios(), a.before, "the terminal as it was");
    assert_eq!(
        a.conn.recv().await,
        None,
        "the client closed its connection"
    );
    if std::env::var_os("SHOW_SCREEN").is_some() {
        eprintln!("{}", a.terminal.text());
    }
}

#[tokio::test]
async fn spying_sends_no_data_frame() {
    let mut a = attach(&["sw1", "--spy"], false).await;
    assert_eq!(a.hello["mode"], "spy");
    assert!(
        a.terminal
            .text()
            .contains("[serialgate: spying on sw1 as alice")
    );
    a.terminal.type_keys(b"conf t\r");
    a.terminal
        .read_until("[serialgate: spying: typed keys are not sent]")
        .await;
    a.terminal.type_keys(&[ESC, ESC]);
    a.terminal.type_keys(b"more keys");
    a.terminal.type_keys(&[ESC, b'w']);
    assert_eq!(
        a.conn.recv_json().await,
        json!({"type": "who"}),
        "the first frame after hello"
    );
    a.terminal.type_keys(&[ESC, b'.']);
    assert_eq!(exit_of(&mut a.child).await.code(), Some(0));
    assert_eq!(a.conn.recv().await, None, "and no frame after it");
    assert_eq!(
        a.terminal.text().matches("typed keys are not sent").count(),
        1,
        "said once"
    );
    assert_eq!(a.terminal.termios(), a.before);
}

#[tokio::test]
async fn the_gateway_closing_restores_the_terminal_and_says_so() {
    let mut a = attach(&["sw1"], true).await;
    a.conn.send_data(106, b"\r\nSW1#sh").await;
    a.terminal.read_until("SW1#sh").await;
    drop(a.conn);
    let status = exit_of(&mut a.child).await;
    assert_eq!(status.code(), Some(1));
    // The last message comes after the terminal is restored: its line
    // feeds get the terminal's own CR (ONLCR) again.
    let screen = a
        .terminal
        .read_until("[serialgate: the connection to the gateway closed]\r\r\n")
        .await;
    assert!(
        screen.ends_with("SW1#sh\r\r\n[serialgate: the connection to the gateway closed]\r\r\n"),
        "on a line of its own: {screen:?}"
    );
    assert_eq!(a.terminal.termios(), a.before);
}

#[tokio::test]
async fn sigterm_restores_the_terminal() {
    let mut a = attach(&["sw1"], true).await;
    assert_ne!(a.terminal.termios(), a.before, "raw mode while attached");
    let pid = a.child.id().expect("the client runs") as i32;
    // SAFETY: kill(2) on our own child's pid, no memory involved.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = exit_of(&mut a.child).await;
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    a.terminal
        .read_until("[serialgate: SIGTERM: detached from sw1]")
        .await;
    assert_eq!(a.terminal.termios(), a.before);
}

#[tokio::test]
async fn sighup_restores_the_terminal() {
    let mut a = attach(&["sw1"], true).await;
    let pid = a.child.id().expect("the client runs") as i32;
    // SAFETY: kill(2) on our own child's pid, no memory involved.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    assert_eq!(exit_of(&mut a.child).await.code(), Some(128 + libc::SIGHUP));
    assert_eq!(a.terminal.termios(), a.before);
}

#[tokio::test]
async fn bye_prints_its_reason_and_exits_non_zero() {
    let mut a = attach(&["sw1"], true).await;
    a.conn
        .send_json(json!({"type": "bye", "reason": "the port sw1 was removed from the config"}))
        .await;
    assert_eq!(exit_of(&mut a.child).await.code(), Some(1));
    a.terminal
        .read_until(
            "[serialgate: the gateway ended the session: the port sw1 was removed from the config]",
        )
        .await;
    assert_eq!(a.terminal.termios(), a.before);
}

#[tokio::test]
async fn hostile_server_strings_are_printed_escaped() {
    let mut terminal = Terminal::open();
    let gateway = Gateway::bind();
    let mut child = spawn_on(&terminal, &gateway.path, &["sw1"]);
    let mut conn = gateway.accept().await;
    conn.recv_json().await;
    let evil = "mallory\u{1b}]0;owned\u{7}\u{1b}[2J\r\n[serialgate: you hold the write]\u{9b}1m";
    let mut hello = attached(false);
    hello["you"] = json!(evil);
    hello["holder"] = holder(3, evil);
    hello["port"] = json!(evil);
    conn.send_json(hello).await;
    conn.send_json(json!({"type": "holder", "holder": null, "what": evil}))
        .await;
    conn.send_json(json!({"type": "error", "code": evil, "message": evil}))
        .await;
    conn.send_json(json!({"type": "joined", "participant":
        {"session": 9, "who": evil, "kind": evil, "since": evil}}))
        .await;
    conn.send_json(json!({"type": "who", "holder": holder(3, evil), "watchers": []}))
        .await;
    conn.send_json(json!({"type": "bye", "reason": evil})).await;
    assert_eq!(exit_of(&mut child).await.code(), Some(1));
    terminal
        .read_until("the gateway ended the session: mallory")
        .await;
    let screen = terminal.text();
    assert!(
        screen.contains("mallory\\x1b]0;owned\\x07\\x1b[2J\\x0d\\x0a[serialgate: you hold"),
        "{screen}"
    );
    assert!(
        !screen.contains('\u{1b}') && !screen.contains('\u{7}') && !screen.contains('\u{9b}'),
        "no raw escape reaches the terminal:\n{screen:?}"
    );
    if std::env::var_os("SHOW_SCREEN").is_some() {
        eprintln!("{screen}");
    }
    for line in screen.split("\r\n").filter(|l| !l.is_empty()) {
        assert!(
            line.starts_with("[serialgate: "),
            "a line of its own: {line:?}"
        );
    }
}

#[tokio::test]
async fn force_mode_and_replay_lines_with_the_socket_from_the_environment() {
    let mut terminal = Terminal::open();
    let before = terminal.termios();
    let gateway = Gateway::bind();
    let mut child = Command::new(binary())
        .args(["console", "sw1", "--force", "--replay", "5"])
        .env("SERIALGATE_CONSOLE_SOCKET", &gateway.path)
        .stdin(terminal.stdio())
        .stdout(terminal.stdio())
        .stderr(terminal.stdio())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut conn = gateway.accept().await;
    let hello = conn.recv_json().await;
    assert_eq!(hello["mode"], "force");
    assert_eq!(hello["replay_lines"], 5);
    conn.send_json(attached(true)).await;
    terminal.read_until("you hold the write").await;
    terminal.type_keys(&[ESC, b'r']);
    assert_eq!(
        conn.recv_json().await,
        json!({"type": "replay", "lines": 5})
    );
    terminal.type_keys(&[ESC, b'.']);
    assert_eq!(exit_of(&mut child).await.code(), Some(0));
    assert_eq!(terminal.termios(), before);
}

#[tokio::test]
async fn the_end_of_input_detaches_cleanly() {
    let gateway = Gateway::bind();
    let mut child = Command::new(binary())
        .args(["console", "sw1", "--socket"])
        .arg(&gateway.path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut conn = gateway.accept().await;
    conn.recv_json().await;
    conn.send_json(attached(true)).await;
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"show version\r").await.expect("type");
    drop(stdin);
    assert_eq!(conn.recv_typed(13).await, b"show version\r");
    assert_eq!(conn.recv().await, None);
    let output = timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("exits")
        .expect("output");
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.ends_with("[serialgate: end of input: detached from sw1]\r\n"),
        "{stdout}"
    );
}

#[tokio::test]
async fn a_refused_attach_leaves_the_terminal_alone() {
    let mut terminal = Terminal::open();
    let before = terminal.termios();
    let gateway = Gateway::bind();
    let mut child = spawn_on(&terminal, &gateway.path, &["sw9"]);
    let mut conn = gateway.accept().await;
    assert_eq!(conn.recv_json().await["port"], "sw9");
    conn.send_json(json!({"type": "error", "code": "invalid_argument",
        "message": "no port named \"sw9\"; serialgate console --list shows them"}))
        .await;
    assert_eq!(exit_of(&mut child).await.code(), Some(1));
    terminal
        .read_until(
            "serialgate: the gateway refused to attach to sw9: invalid_argument: no port named",
        )
        .await;
    assert_eq!(terminal.termios(), before);
}

#[tokio::test]
async fn list_prints_the_ports_table() {
    let gateway = Gateway::bind();
    let child = Command::new(binary())
        .args(["console", "--list", "--socket"])
        .arg(&gateway.path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut conn = gateway.accept().await;
    assert_eq!(conn.recv_json().await, json!({"type": "list"}));
    conn.send_json(json!({"type": "ports", "ports": [
        {"name": "sw1", "state": "open",
         "watchers": [{"session": 7, "who": "alice on console (unix)", "spy": false,
                       "since": "2025-01-01T10:00:00Z"}],
         "holder": holder(3, "session 3 (client claude-code, token lab)")},
        {"name": "r2", "state": "lost", "watchers": [], "holder": null},
    ]}))
    .await;
    let output = timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("exits")
        .expect("output");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "PORT  STATE  WATCHERS                 HOLDER\n\
         sw1   open   alice on console (unix)  session 3 (client claude-code, token lab) (since 2025-01-01T10:00:00Z)\n\
         r2    lost   -                        -\n"
    );
}

// The header callback's type, and its large error, are tungstenite's.
#[allow(clippy::result_large_err)]
#[tokio::test]
async fn attach_over_the_websocket_with_a_token() {
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

    let dir = tempfile::tempdir().expect("tempdir");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token\n").expect("write the token");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");

    let mut terminal = Terminal::open();
    let before = terminal.termios();
    // A token file others may read is refused before connecting.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644))
            .expect("chmod");
        let output = Command::new(binary())
            .args([
                "console",
                "sw1",
                "--url",
                &format!("http://{addr}"),
                "--token-file",
            ])
            .arg(&token_file)
            .output()
            .await
            .expect("run");
        assert_eq!(output.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("chmod 600"), "{stderr}");
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
    }
    let mut child = Command::new(binary())
        .args([
            "console",
            "sw1",
            "--url",
            &format!("http://{addr}"),
            "--token-file",
        ])
        .arg(&token_file)
        .stdin(terminal.stdio())
        .stdout(terminal.stdio())
        .stderr(terminal.stdio())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let (tcp, _) = timeout(DEADLINE, listener.accept())
        .await
        .expect("connects")
        .expect("accept");
    let mut request_seen = None;
    let mut ws = tokio_tungstenite::accept_hdr_async(tcp, |req: &Request, resp: Response| {
        request_seen = Some((
            req.uri().path().to_owned(),
            req.headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        ));
        Ok(resp)
    })
    .await
    .expect("upgrade");
    assert_eq!(
        request_seen,
        Some((
            "/ports/sw1/console".to_owned(),
            Some("Bearer s3cret-token".to_owned())
        ))
    );
    let hello = timeout(DEADLINE, ws_next(&mut ws)).await.expect("hello");
    let Some(Message::Text(hello)) = hello else {
        panic!("hello as text: {hello:?}")
    };
    let hello: Value = serde_json::from_str(hello.as_str()).expect("JSON");
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["port"], "sw1");
    ws.send(Message::text(attached(true).to_string()))
        .await
        .expect("send");
    let mut data = 100u64.to_be_bytes().to_vec();
    data.extend_from_slice(b"\r\nSW1#");
    ws.send(Message::binary(data)).await.expect("send");
    terminal.read_until("SW1#").await;
    terminal.type_keys(b"?");
    let typed = timeout(DEADLINE, ws_next(&mut ws)).await.expect("typed");
    assert_eq!(typed, Some(Message::binary(b"?".to_vec())));
    terminal.type_keys(&[ESC, b'.']);
    assert_eq!(exit_of(&mut child).await.code(), Some(0));
    assert_eq!(terminal.termios(), before);
}

/// The next text or binary message; `None` at a close.
async fn ws_next(
    ws: &mut tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
) -> Option<tokio_tungstenite::tungstenite::Message> {
    use tokio_tungstenite::tungstenite::Message;
    loop {
        match ws.next().await {
            Some(Ok(m @ (Message::Text(_) | Message::Binary(_)))) => return Some(m),
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return None,
            Some(Ok(_)) => {}
        }
    }
}

#[test]
fn a_ca_file_without_https_and_conflicting_modes_are_refused_with_a_clear_error() {
    // --ca-file with a plain http:// URL would check nothing: refused
    // before any connection is tried (https itself: tests/testsuite/tls.rs).
    let output = std::process::Command::new(binary())
        .args([
            "console",
            "sw1",
            "--url",
            "http://gw.lab:7301",
            "--ca-file",
            "/nonexistent/ca.pem",
        ])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--ca-file is for an https:// --url"),
        "{stderr}"
    );
    let output = std::process::Command::new(binary())
        .args(["console", "sw1", "--url", "ftp://gw.lab:7301"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("give the gateway's address as https://"),
        "{stderr}"
    );
    let output = std::process::Command::new(binary())
        .args(["console", "sw1", "--spy", "--force"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("'--spy' cannot be used with '--force'"),
        "{stderr}"
    );
}

#[tokio::test]
async fn sigterm_while_the_gateway_does_not_answer_ends_at_once() {
    let mut terminal = Terminal::open();
    let before = terminal.termios();
    let gateway = Gateway::bind();
    let mut child = spawn_on(&terminal, &gateway.path, &["sw1"]);
    let mut conn = gateway.accept().await;
    conn.recv_json().await;
    // No answer to hello: the client waits for it, and a signal ends the
    // wait (long before the client's own deadline).
    let pid = child.id().expect("the client runs") as i32;
    // SAFETY: kill(2) on our own child's pid, no memory involved.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = timeout(Duration::from_secs(5), child.wait())
        .await
        .expect("SIGTERM ends the wait for the gateway")
        .expect("wait");
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    terminal
        .read_until("serialgate: SIGTERM while attaching to sw1: gave up")
        .await;
    assert_eq!(terminal.termios(), before);
}

#[tokio::test]
async fn a_terminal_nobody_reads_does_not_keep_the_keys_from_detaching() {
    let mut a = attach(&["sw1"], true).await;
    // The gateway floods output and the terminal is not read: the
    // client's writes to the screen block, it stops reading the gateway,
    // and Ctrl-] . must still detach (within the client's own deadline
    // for the last bytes).
    let (stalled_tx, stalled_rx) = tokio::sync::oneshot::channel();
    let flood = tokio::spawn(async move {
        let mut conn = a.conn;
        let mut payload = 106u64.to_be_bytes().to_vec();
        payload.extend_from_slice(&[b'x'; 60 * 1024]);
        let mut frame = vec![b'D'];
        frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        frame.extend_from_slice(&payload);
        let mut stalled = Some(stalled_tx);
        for _ in 0..2000 {
            let mut write = std::pin::pin!(conn.stream.write_all(&frame));
            // A write that has not completed for a while: the client has
            // stopped reading (the future is polled on, not dropped).
            if timeout(Duration::from_millis(300), &mut write)
                .await
                .is_err()
                && let Some(tx) = stalled.take()
            {
                let _ = tx.send(());
            }
            if write.await.is_err() {
                break;
            }
        }
    });
    timeout(DEADLINE, stalled_rx)
        .await
        .expect("the client stops reading the gateway")
        .expect("the flood reports the stall");
    a.terminal.type_keys(&[ESC, b'.']);
    let status = exit_of(&mut a.child).await;
    assert_eq!(status.code(), Some(0));
    assert_eq!(a.terminal.termios(), a.before);
    flood.abort();
}

async fn real_gateway() -> serialgate_testkit::console::ConsoleSite {
    serialgate_testkit::console::ConsoleSite::start(serialgate_sim::Profile::CiscoIos).await
}

#[tokio::test]
async fn with_the_real_daemon_a_person_and_an_agent_share_the_switch() {
    let site = real_gateway().await;
    // Output from before the person came: the replay shows it.
    site.agent.ok("connect", json!({"port": "sw1"})).await;
    site.agent.ok("send_text", json!({"text": ""})).await;
    site.agent
        .ok("read_until_prompt", json!({"timeout": 5}))
        .await;
    site.agent.ok("disconnect", json!({})).await;

    let mut terminal = Terminal::open();
    let before = terminal.termios();
    let mut client = spawn_on(&terminal, &site.socket, &["sw1"]);
    terminal
        .read_until(&format!(
            "attached to sw1 as {} on console",
            serialgate_testkit::console::user_name()
        ))
        .await;
    terminal.read_until("you hold the write").await;
    terminal.read_until("SW1>").await;
    terminal.type_keys(b"show clock\r");
    terminal.read_until("UTC").await;
    assert!(
        site.sim
            .wait_received(b"show clock\r", Duration::from_secs(5))
            .await
    );

    // The agent is told who has the keyboard, and sees them in status.
    site.agent.ok("connect", json!({"port": "sw1"})).await;
    let busy = site
        .agent
        .err("send_text", json!({"text": "show version"}))
        .await;
    assert!(busy.starts_with("busy: "), "{busy}");
    assert!(
        busy.contains(&format!(
            "{} on console",
            serialgate_testkit::console::user_name()
        )),
        "{busy}"
    );
    let status = site.agent.ok("status", json!({})).await;
    assert_eq!(
        status["people"][0]["who"],
        format!("{} on console", serialgate_testkit::console::user_name()),
        "{status}"
    );

    // The agent takes over: the person is told at once, on their screen.
    site.agent
        .ok("connect", json!({"port": "sw1", "take_over": true}))
        .await;
    terminal.read_until("took the write hold from").await;
    terminal.read_until("you are watching now").await;
    site.agent
        .ok("send_text", json!({"text": "show clock"}))
        .await;
    terminal.read_until("UTC").await;
    // Ctrl-] f takes it back; the agent's write is busy again.
    terminal.type_keys(&[ESC, b'f']);
    terminal.read_until("took the write hold from").await;
    let busy = site
        .agent
        .err("send_text", json!({"text": "show version"}))
        .await;
    assert!(busy.contains("on console"), "{busy}");

    // Detach: the terminal is as it was, and the agent writes freely.
    terminal.type_keys(&[ESC, b'.']);
    assert!(exit_of(&mut client).await.success());
    assert_eq!(format!("{:?}", terminal.termios()), format!("{before:?}"));
    until_nobody_at_the_console(&site.agent, true).await;
    site.agent
        .ok("send_text", json!({"text": "show clock"}))
        .await;
}

#[tokio::test]
async fn with_the_real_daemon_gone_the_client_says_so_and_restores_the_terminal() {
    let mut site = real_gateway().await;
    let mut terminal = Terminal::open();
    let before = terminal.termios();
    let mut client = spawn_on(&terminal, &site.socket, &["sw1", "--spy"]);
    terminal.read_until("spying on sw1").await;
    site.daemon.signal(libc::SIGKILL);
    site.daemon.exit().await;
    let status = exit_of(&mut client).await;
    assert!(!status.success());
    terminal.read_until("serialgate:").await;
    assert_eq!(format!("{:?}", terminal.termios()), format!("{before:?}"));
}

#[tokio::test]
async fn with_the_real_daemon_over_http_a_token_file_gets_a_person_in() {
    use serialgate_testkit::daemon::{Daemon, NotifySocket, tokens_toml};
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("sw1");
    let _sim = serialgate_sim::spawn(serialgate_sim::Profile::CiscoIos, Some(link.clone()))
        .await
        .expect("simulated switch");
    let tokens = tokens_toml(
        dir.path(),
        &[
            ("noc", "noc-secret-0123456789", r#"["sw*"]"#, "write"),
            ("audit", "audit-secret-0123456789", r#"["sw*"]"#, "read"),
        ],
    );
    let config = dir.path().join("serialgate.toml");
    std::fs::write(
        &config,
        format!(
            "[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n\n{tokens}",
            link.display()
        ),
    )
    .expect("write config");
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    let base = daemon.http_url().await.trim_end_matches("/mcp").to_owned();
    notify.expect("READY=1").await;
    let spawn_http = |terminal: &Terminal, token: &str| {
        let file = dir.path().join(format!("{token}.token"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        Command::new(binary())
            .args(["console", "sw1", "--url", &base, "--token-file"])
            .arg(&file)
            .stdin(terminal.stdio())
            .stdout(terminal.stdio())
            .stderr(terminal.stdio())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn serialgate console")
    };
    // The write token types and the switch answers.
    let mut noc_terminal = Terminal::open();
    let before = noc_terminal.termios();
    let mut noc = spawn_http(&noc_terminal, "noc");
    noc_terminal
        .read_until("attached to sw1 as noc on console")
        .await;
    noc_terminal.type_keys(b"\r");
    noc_terminal.read_until("SW1>").await;
    noc_terminal.type_keys(b"show clock\r");
    noc_terminal.read_until("UTC").await;
    // The read token watches the same output and cannot write.
    let mut audit_terminal = Terminal::open();
    let mut audit = spawn_http(&audit_terminal, "audit");
    audit_terminal
        .read_until("attached to sw1 as audit on console")
        .await;
    noc_terminal.type_keys(b"show clock\r");
    audit_terminal.read_until("UTC").await;
    audit_terminal.type_keys(b"reload\r");
    audit_terminal.read_until("read access").await;
    // Ctrl-] w from the writer lists both people.
    noc_terminal.type_keys(&[ESC, b'w']);
    noc_terminal.read_until("audit on console").await;
    for (terminal, child) in [(&noc_terminal, &mut noc), (&audit_terminal, &mut audit)] {
        terminal.type_keys(&[ESC, b'.']);
        assert!(exit_of(child).await.success());
    }
    assert_eq!(
        format!("{:?}", noc_terminal.termios()),
        format!("{before:?}")
    );
}

/// The person's name as the real daemon gives it on its console socket.
fn person() -> String {
    format!("{} on console", serialgate_testkit::console::user_name())
}

#[tokio::test]
async fn with_the_real_daemon_every_escape_key_does_what_it_says() {
    let mut site = real_gateway().await;
    let mut terminal = Terminal::open();
    let before = terminal.termios();
    let mut client = spawn_on(&terminal, &site.socket, &["sw1"]);
    terminal.read_until("you hold the write").await;
    terminal.type_keys(b"\rshow clock\r");
    terminal.read_until("UTC").await;

    // ? lists every key.
    terminal.type_keys(&[ESC, b'?']);
    for line in ["Ctrl-] .", "Ctrl-] r", "Ctrl-] w", "Ctrl-] b", "Ctrl-] ?"] {
        terminal.read_until(line).await;
    }
    // r replays the last lines from the gateway's log: the clock again.
    terminal.type_keys(&[ESC, b'r']);
    terminal.read_until("replay of the last lines:").await;
    terminal.read_until("UTC").await;
    terminal.read_until("end of replay").await;
    // w: who is here and who holds the write.
    terminal.type_keys(&[ESC, b'w']);
    terminal.read_until(&person()).await;
    // b: a BREAK on the line, in the audit trail as the person's.
    terminal.type_keys(&[ESC, b'b']);
    terminal.read_until("sending BREAK").await;
    site.daemon.stderr.wait_for("kind=break").await;
    // s gives the hold up: the agent may write; a takes it back once free.
    terminal.type_keys(&[ESC, b's']);
    terminal.read_until("you are watching now").await;
    site.agent.ok("connect", json!({"port": "sw1"})).await;
    site.agent.ok("send_text", json!({"text": ""})).await;
    terminal.type_keys(&[ESC, b'a']);
    terminal.read_until("busy").await;
    site.agent.ok("disconnect", json!({})).await;
    terminal.type_keys(&[ESC, b'a']);
    terminal.read_until("you hold the write now").await;
    // Ctrl-] twice types one Ctrl-] to the device.
    terminal.type_keys(&[ESC, ESC]);
    assert!(site.sim.wait_received(&[ESC], DEADLINE).await);
    // An unknown key is said to be none, and nothing is sent.
    terminal.type_keys(&[ESC, b'z']);
    terminal.read_until("is no command").await;

    // The device is unplugged and comes back: the person sees both, and
    // goes on typing in the same session.
    let link = site.sim.path().to_owned();
    site.sim.close().await;
    terminal.read_until("sw1 is lost").await;
    site.sim = serialgate_sim::spawn(serialgate_sim::Profile::CiscoIos, Some(link))
        .await
        .expect("replug");
    terminal.read_until("sw1 is open again").await;
    terminal.type_keys(b"\rshow clock\r");
    terminal.read_until("UTC").await;

    terminal.type_keys(&[ESC, b'.']);
    assert!(exit_of(&mut client).await.success());
    terminal.read_until("detached from sw1").await;
    assert_eq!(format!("{:?}", terminal.termios()), format!("{before:?}"));
}

#[tokio::test]
async fn with_the_real_daemon_a_spy_sends_nothing_and_sigterm_restores_the_terminal() {
    let site = real_gateway().await;
    let mut terminal = Terminal::open();
    let before = terminal.termios();
    let mut spy = spawn_on(&terminal, &site.socket, &["sw1", "--spy"]);
    terminal.read_until("spying on sw1").await;
    terminal.type_keys(b"reload\r");
    terminal.read_until("typed keys are not sent").await;
    terminal.type_keys(&[ESC, b'b']);
    terminal.read_until("you never write").await;
    // The agent's marker reaches the device; the spy's keys never did.
    site.agent.ok("connect", json!({"port": "sw1"})).await;
    site.agent
        .ok("send_text", json!({"text": "show clock"}))
        .await;
    assert!(site.sim.wait_received(b"show clock", DEADLINE).await);
    let received = String::from_utf8_lossy(&site.sim.received()).into_owned();
    assert_eq!(received, "show clock\r", "only the agent's bytes");
    // The spy watches what the agent made the device say.
    terminal.read_until("UTC").await;

    let pid = spy.id().expect("the client runs") as i32;
    // SAFETY: kill(2) on our own child's pid, no memory involved.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    assert_eq!(exit_of(&mut spy).await.code(), Some(128 + libc::SIGTERM));
    terminal
        .read_until("[serialgate: SIGTERM: detached from sw1]")
        .await;
    assert_eq!(format!("{:?}", terminal.termios()), format!("{before:?}"));
    // The daemon saw the spy leave.
    until_nobody_at_the_console(&site.agent, false).await;
}

/// Waits until the agent's `status` lists no people (and, if `no_writer`,
/// nobody holds the write).
async fn until_nobody_at_the_console(agent: &serialgate_testkit::daemon::Client, no_writer: bool) {
    // No MCP event tells an agent that a person left: poll.
    wait::eventually("nobody at the console", DEADLINE, async || {
        wait::when(agent.ok("status", json!({})).await, |s| {
            s["people"] == json!([]) && (!no_writer || s["writer"].is_null())
        })
    })
    .await;
}
