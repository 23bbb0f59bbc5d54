//! Remote consoles end to end: the real binary reaching a console server
//! over `telnet://` and `tcp://`. The console server is played in process:
//! a TCP listener on 127.0.0.1 with the simulated Cisco switch behind it,
//! speaking telnet (it offers WILL ECHO and WILL SGA, asks DO TTYPE, and
//! doubles a 0xFF data byte) or raw bytes.

use serialgate_testkit::rig as common;
use serialgate_testkit::wait;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Gate, count, num, running_config, text};
use serde_json::json;
use serialgate_sim::cisco::CiscoSwitch;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

const IAC: u8 = 255;
const WILL: u8 = 251;
const DO: u8 = 253;
const WONT: u8 = 252;
const SB: u8 = 250;
const SE: u8 = 240;
const BRK: u8 = 243;
const ECHO: u8 = 1;
const SGA: u8 = 3;
const TTYPE: u8 = 24;

/// What the console server saw, shared with its connection tasks.
#[derive(Default)]
struct Seen {
    /// Every byte received on the wire.
    wire: Vec<u8>,
    /// The data bytes, telnet decoded.
    data: Vec<u8>,
    /// Negotiation received: (verb, option).
    negotiation: Vec<(u8, u8)>,
    /// Telnet commands received (e.g. BRK).
    commands: Vec<u8>,
    /// Signalled after every chunk received.
    arrived: Arc<tokio::sync::Notify>,
}

/// The in-process console server: one switch, whatever connection reaches it.
struct Console {
    addr: SocketAddr,
    telnet: bool,
    switch: Arc<Mutex<CiscoSwitch>>,
    seen: Arc<Mutex<Seen>>,
    /// Cancelled to hang up: the listener closes and connections drop.
    stop: CancellationToken,
}

/// What the console server sends first on every connection: a line with a
/// 0xFF data byte in it.
const BANNER: &[u8] = b"\r\nts1 line 2001 \xff\r\n";

impl Console {
    async fn start(telnet: bool) -> Console {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let console = Console {
            addr,
            telnet,
            switch: Arc::new(Mutex::new(CiscoSwitch::new("SW1"))),
            seen: Arc::default(),
            stop: CancellationToken::new(),
        };
        console.accept(listener);
        console
    }

    fn url(&self) -> String {
        let scheme = if self.telnet { "telnet" } else { "tcp" };
        format!("{scheme}://{}", self.addr)
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap()
    }

    /// Waits until what the server saw satisfies `done`, at most `within`
    /// (woken by each chunk received, not by a timer).
    async fn wait_seen(&self, within: Duration, done: impl Fn(&Seen) -> bool) {
        let arrived = self.seen().arrived.clone();
        let wait = async {
            loop {
                let next = arrived.notified();
                tokio::pin!(next);
                next.as_mut().enable();
                if done(&self.seen()) {
                    return;
                }
                next.await;
            }
        };
        let _ = tokio::time::timeout(within, wait).await;
    }

    fn accept(&self, listener: TcpListener) {
        let (stop, telnet) = (self.stop.clone(), self.telnet);
        let (switch, seen) = (self.switch.clone(), self.seen.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { return };
                        let session = serve(stream, telnet, switch.clone(), seen.clone());
                        let stop = stop.clone();
                        tokio::spawn(async move {
                            tokio::select! {
                                _ = stop.cancelled() => {}
                                _ = session => {}
                            }
                        });
                    }
                }
            }
        });
    }

    /// Closes the listener and every connection: new connections are refused.
    fn hang_up(&mut self) {
        self.stop.cancel();
    }

    /// Listens again on the same address.
    async fn listen_again(&mut self) {
        self.stop = CancellationToken::new();
        let listener = TcpListener::bind(self.addr).await.expect("rebind");
        self.accept(listener);
    }
}

/// Encodes for the wire: 0xFF doubled on telnet.
fn encode(telnet: bool, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        out.push(b);
        if telnet && b == IAC {
            out.push(IAC);
        }
    }
    out
}

/// One connection of the console server.
async fn serve(
    mut stream: TcpStream,
    telnet: bool,
    switch: Arc<Mutex<CiscoSwitch>>,
    seen: Arc<Mutex<Seen>>,
) {
    let mut hello = Vec::new();
    if telnet {
        hello.extend_from_slice(&[IAC, WILL, ECHO, IAC, WILL, SGA, IAC, DO, TTYPE]);
    }
    hello.extend(encode(telnet, BANNER));
    if stream.write_all(&hello).await.is_err() {
        return;
    }
    // Telnet decoding of what the client sends: (after IAC, verb, in SB, after CR).
    let (mut iac, mut verb, mut sb, mut cr) = (false, None::<u8>, false, false);
    let mut buf = [0u8; 4096];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut input = Vec::new();
        {
            let mut seen = seen.lock().unwrap();
            seen.wire.extend_from_slice(&buf[..n]);
            for &b in &buf[..n] {
                if !telnet {
                    input.push(b);
                    continue;
                }
                if let Some(v) = verb.take() {
                    seen.negotiation.push((v, b));
                } else if iac {
                    iac = false;
                    match b {
                        IAC if !sb => input.push(IAC),
                        WILL..=IAC => verb = Some(b),
                        SB => sb = true,
                        SE => sb = false,
                        _ => seen.commands.push(b),
                    }
                } else if b == IAC {
                    iac = true;
                } else if sb || (cr && b == 0) {
                    cr = false;
                } else {
                    cr = b == b'\r';
                    input.push(b);
                }
            }
            seen.data.extend_from_slice(&input);
            seen.arrived.notify_waiters();
        }
        // The switch does not get the 0xFF bytes (they are only counted).
        input.retain(|&b| b != IAC);
        let mut out = Vec::new();
        switch.lock().unwrap().feed(&input, &mut out);
        if !out.is_empty() && stream.write_all(&encode(telnet, &out)).await.is_err() {
            return;
        }
    }
}

/// What both transports must do: commands, a paged output whole, 0xFF
/// both ways, and a hang-up that is a loss, then a return.
async fn exercise(gate: &Gate, console: &mut Console) {
    gate.login().await;
    let clock = gate
        .ok("send_command", json!({"command": "show clock"}))
        .await;
    assert_eq!(clock["matched"], true, "{clock}");
    let out = text(&clock, "output");
    assert!(out.starts_with('*') && out.contains(" UTC "), "{out:?}");

    let run = gate
        .ok(
            "send_command",
            json!({"command": "show running-config", "timeout": 60, "max_output": 16 << 20}),
        )
        .await;
    assert_eq!(run["matched"], true);
    assert!(num(&run, "auto_replies") > 50, "{}", run["auto_replies"]);
    let lines: Vec<&str> = text(&run, "output").split('\n').collect();
    let want = running_config();
    assert_eq!(lines.len(), want.len(), "line count");
    for (i, (got, want)) in lines.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "line {i}");
    }

    // 0xFF to the device: one data byte, doubled on the telnet wire.
    let sent = gate.ok("send_hex", json!({"hex": "ff"})).await;
    assert_eq!(num(&sent, "bytes_sent"), 1);
    console
        .wait_seen(Duration::from_secs(5), |s| count(&s.data, &[IAC]) > 0)
        .await;
    {
        let seen = console.seen();
        assert_eq!(count(&seen.data, &[IAC]), 1, "one 0xFF data byte");
        let on_wire = if console.telnet { 2 } else { 1 };
        // Besides: one IAC per negotiation reply and per command (BRK).
        let protocol = seen.negotiation.len() + seen.commands.len();
        assert_eq!(count(&seen.wire, &[IAC]), on_wire + protocol);
        if console.telnet {
            assert_eq!(count(&seen.wire, &[IAC, IAC]), 1, "IAC IAC on the wire");
        }
    }
    // 0xFF from the device: one byte in the OutputLog, no negotiation.
    let log = gate.all_output().await;
    assert_eq!(count(&log, BANNER), 1, "{}", String::from_utf8_lossy(&log));
    assert_eq!(count(&log, &[IAC]), 1, "only the banner's 0xFF");
    assert_eq!(count(&log, &[0]), 0, "no NUL padding, no negotiation");

    // The console server hangs up and refuses: lost, the log kept.
    let head = num(&gate.ok("status", json!({})).await, "head");
    console.hang_up();
    gate.expect_lost().await;
    let kept = gate.all_output().await;
    assert_eq!(kept.len() as u64, head, "the log is kept");
    // Reconnects are refused (reported as such), with backoff.
    let refused = wait::until(Duration::from_secs(20), async || {
        wait::when(gate.ok("status", json!({})).await, |status| {
            status["events"].as_array().is_some_and(|events| {
                events.iter().any(|e| {
                    text(e, "what")
                        .to_lowercase()
                        .contains("connection refused")
                })
            })
        })
    })
    .await
    .unwrap_or_else(|last| last);
    let refusals = refused["events"].as_array().map_or(0, |e| {
        e.iter()
            .filter(|e| text(e, "what").contains("refused"))
            .count()
    });
    assert!(
        (1..=8).contains(&refusals),
        "backoff, not a hot loop: {refused}"
    );

    // It listens again: the port comes back by itself.
    console.listen_again().await;
    let back = gate.wait_state(&["open"], Duration::from_secs(15)).await;
    assert_eq!(back["state"], "open", "{back}");
    assert_eq!(num(&back, "reconnects"), 1);
    assert!(num(&back, "head") >= head);
    let clock = gate
        .ok("send_command", json!({"command": "show clock"}))
        .await;
    assert_eq!(clock["matched"], true, "{clock}");
}

#[tokio::test]
async fn telnet_console_works_like_a_local_port() {
    let mut console = Console::start(true).await;
    let gate = Gate::start(&format!(
        "[ports.ts1]\ndevice = {:?}\npreset = \"cisco-ios\"\n",
        console.url()
    ))
    .await;
    let c = gate.ok("connect", json!({"port": "ts1"})).await;
    assert_eq!(c["device"], console.url());

    // Line control: BREAK is telnet's IAC BRK; modem lines are refused.
    gate.ok("send_break", json!({})).await;
    let e = gate.err("set_lines", json!({"dtr": true})).await;
    assert!(
        e.starts_with("port_unavailable: ") && e.contains("remote"),
        "{e}"
    );
    let e = gate.err("set_line_settings", json!({"baud": 115200})).await;
    assert!(e.starts_with("port_unavailable: "), "{e}");

    exercise(&gate, &mut console).await;
    let seen = console.seen();
    assert_eq!(seen.commands, vec![BRK], "one BREAK");
    // Each connection negotiated once: DO ECHO, DO SGA, WONT TTYPE.
    let once = [(DO, ECHO), (DO, SGA), (WONT, TTYPE)];
    assert_eq!(seen.negotiation, [once, once].concat());
}

#[tokio::test]
async fn raw_tcp_console_connected_ad_hoc() {
    let mut console = Console::start(false).await;
    let gate =
        Gate::start("[server]\nallow_adhoc = true\nadhoc_remotes = [\"127.0.0.1:*\"]\n").await;
    let c = gate
        .ok(
            "connect",
            json!({"port": console.url(), "preset": "cisco-ios"}),
        )
        .await;
    assert_eq!(
        c["connection"],
        format!("127.0.0.1-{}", console.addr.port()),
        "{c}"
    );
    let e = gate.err("send_break", json!({})).await;
    assert!(
        e.starts_with("port_unavailable: ") && e.contains("raw TCP"),
        "{e}"
    );
    exercise(&gate, &mut console).await;
    assert!(console.seen().negotiation.is_empty());
}

#[tokio::test]
async fn ad_hoc_remotes_are_governed_by_the_allow_list() {
    let gate = Gate::start(
        "[server]\nallow_adhoc = true\nadhoc_remotes = [\"10.0.0.0/24:2000-2099\", \"127.0.0.1:1\"]\n",
    )
    .await;
    let e = gate
        .err("connect", json!({"port": "telnet://127.0.0.1:2001"}))
        .await;
    assert!(
        e.starts_with("forbidden: ") && e.contains("adhoc_remotes"),
        "{e}"
    );
    let e = gate
        .err("connect", json!({"port": "rfc2217://127.0.0.1:2001"}))
        .await;
    assert!(
        e.starts_with("forbidden: ") && e.contains("adhoc_remotes"),
        "rfc2217:// is governed like the others: {e}"
    );
    let e = gate
        .err("connect", json!({"port": "telnet://10.0.0.5"}))
        .await;
    assert!(e.starts_with("invalid_argument: "), "{e}");
    // Allowed, but nothing listens there: refused, said clearly.
    let e = gate
        .err("connect", json!({"port": "tcp://127.0.0.1:1"}))
        .await;
    assert!(
        e.starts_with("port_unavailable: ") && e.to_lowercase().contains("refused"),
        "{e}"
    );

    let off = Gate::start("[server]\nadhoc_remotes = [\"127.0.0.1:*\"]\n").await;
    let e = off
        .err("connect", json!({"port": "tcp://127.0.0.1:1"}))
        .await;
    assert!(
        e.starts_with("forbidden: ") && e.contains("allow_adhoc"),
        "{e}"
    );
}
