//! `adhoc_remotes` against a hostile admin token: the real binary serving
//! HTTP with `allow_adhoc = true` and broad entries, and `connect` aimed
//! at this machine's own listeners under every spelling of loopback and
//! "any address" the system resolver accepts. Each must be refused
//! `forbidden` before anything is connected: the test's listeners must
//! see no connection at all. An entry naming the address explicitly lets
//! the connection through, to the address that was checked, also on
//! reconnects.

use serialgate_testkit::daemon;
use serialgate_testkit::wait;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket};

use daemon::{Daemon, NotifySocket, WITHIN, tokens_toml};
use serde_json::{Value, json};
use serialgate_testkit::client::{GateClient, Outcome};
use tempfile::TempDir;

const ADMIN_SECRET: &str = "hostile-admin-secret-0123456789";

/// Broad entries, as an operator might write them: every IPv4 and IPv6
/// address, a lab range, the README's IPv6 host and a console server's
/// name. None of them names loopback, "any address" or link-local.
const BROAD: &str = r#"["0.0.0.0/0:*", "[::]/0:*", "10.0.0.0/8:2000-2099", "[2001:db8::5]:*", "ts1.example.net:*"]"#;

/// Spellings of this machine's loopback and unspecified addresses, of
/// link-local ones and of a deprecated IPv4-compatible one, that the system
/// resolver turns into those addresses. A few it may refuse instead
/// (`LOCALHOST.` and `127.0.0.1.` on resolvers that keep the dot, a `%lo`
/// zone where there is no `lo`): refused as well, for that reason.
const SPELLINGS: &[&str] = &[
    "127.0.0.1",
    "127.1",
    "0x7f.1",
    "2130706433",
    "0177.0.0.1",
    "0",
    "0.0.0.0",
    "[::]",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::ffff:0.0.0.0]",
    "[::127.0.0.1]",
    "[::ffff:127.0.0.1%lo]",
    "[0:0:0:0:0:0:0:1]",
    "localhost",
    "LOCALHOST.",
    "127.0.0.1.",
    "169.254.1.2",
    "[::ffff:169.254.1.2]",
    "[fe80::1]",
];

/// Every scheme, and one in upper case (schemes are case-insensitive).
const SCHEMES: &[&str] = &["telnet", "tcp", "rfc2217", "TCP"];

/// The daemon serving HTTP with one admin token, and an MCP client of it.
struct Gate {
    client: GateClient,
    _daemon: Daemon,
    _notify: NotifySocket,
    _dir: TempDir,
}

impl Gate {
    /// Starts `serve --http 127.0.0.1:0` with `allow_adhoc = true` and
    /// `adhoc_remotes = entries` (TOML array text).
    async fn start(entries: &str) -> Gate {
        let dir = tempfile::tempdir().expect("a temp dir");
        let tokens = tokens_toml(dir.path(), &[("ops", ADMIN_SECRET, r#"["*"]"#, "admin")]);
        let config = dir.path().join("config.toml");
        std::fs::write(
            &config,
            format!("[server]\nallow_adhoc = true\nadhoc_remotes = {entries}\n\n{tokens}"),
        )
        .expect("write the config");
        let notify = NotifySocket::bind(dir.path());
        let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
        let url = daemon.http_url().await;
        let client =
            tokio::time::timeout(WITHIN, GateClient::connect_http(&url, Some(ADMIN_SECRET)))
                .await
                .expect("the MCP session opens in time")
                .expect("an MCP session with the admin token");
        Gate {
            client,
            _daemon: daemon,
            _notify: notify,
            _dir: dir,
        }
    }

    async fn call(&self, tool: &str, args: Value) -> Outcome {
        tokio::time::timeout(WITHIN, self.client.call(tool, args.clone()))
            .await
            .unwrap_or_else(|_| panic!("{tool} {args} answers in time"))
            .expect("MCP transport")
    }
}

/// Listeners of the test's own that nothing may reach: one on 127.0.0.1
/// and, when the machine has IPv6 loopback, one on [::1], on the same port.
struct Listeners {
    port: u16,
    listeners: Vec<TcpListener>,
}

impl Listeners {
    fn bind() -> Listeners {
        for _ in 0..20 {
            let v4 = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1");
            let port = v4.local_addr().expect("its address").port();
            let mut listeners = vec![v4];
            match TcpListener::bind((Ipv6Addr::LOCALHOST, port)) {
                Ok(v6) => listeners.push(v6),
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => continue,
                Err(e) => eprintln!("no listener on [::1]:{port} ({e}): IPv4 only"),
            }
            for l in &listeners {
                l.set_nonblocking(true).expect("non-blocking");
            }
            return Listeners { port, listeners };
        }
        panic!("no port free on both 127.0.0.1 and [::1]");
    }

    /// Panics if any listener has a connection waiting: the calls before
    /// returned only after the daemon connected or refused, so a
    /// connection it made is in the backlog by now.
    fn assert_untouched(&self, after: &str) {
        for l in &self.listeners {
            match l.accept() {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Ok((_, from)) => panic!(
                    "after {after}: {} got a connection from {from}",
                    l.local_addr().expect("its address")
                ),
                Err(e) => panic!("accept: {e}"),
            }
        }
    }
}

fn assert_forbidden(outcome: Outcome, url: &str) -> String {
    match outcome {
        Outcome::Err(e) => {
            assert!(
                e.starts_with("forbidden: ") && e.contains("adhoc_remotes"),
                "{url}: want forbidden, got {e}"
            );
            e
        }
        Outcome::Ok(v) => panic!("{url} was let through: {v}"),
    }
}

#[tokio::test]
async fn every_spelling_of_this_machine_is_refused_and_nothing_connects() {
    let listeners = Listeners::bind();
    let gate = Gate::start(BROAD).await;
    let port = listeners.port;
    for scheme in SCHEMES {
        for host in SPELLINGS {
            let url = format!("{scheme}://{host}:{port}");
            let e = assert_forbidden(gate.call("connect", json!({ "port": url })).await, &url);
            listeners.assert_untouched(&url);
            if !host.starts_with("LOCALHOST") && !host.ends_with('.') && !host.contains('%') {
                assert!(
                    e.contains("leads to") && e.contains("an entry naming"),
                    "{url}: the refusal says where the URL leads and what would allow it: {e}"
                );
            }
        }
    }
    // The README's IPv6 entry means that host, not a character class of
    // one-character hosts.
    for url in [format!("tcp://0:{port}"), format!("tcp://5:{port}")] {
        assert_forbidden(gate.call("connect", json!({ "port": url })).await, &url);
    }
    listeners.assert_untouched("the one-character hosts");
    // Nothing was opened on the way: no ad-hoc port is left.
    let listed = match gate.call("list_ports", json!({})).await {
        Outcome::Ok(v) => v,
        Outcome::Err(e) => panic!("list_ports: {e}"),
    };
    assert_eq!(listed["ports"], json!([]), "{listed}");
}

#[tokio::test]
async fn a_name_that_does_not_resolve_is_refused_saying_so() {
    let gate = Gate::start(r#"["10.0.0.0/8:2000-2099", "ts1.example.net:*"]"#).await;
    // A name entry matches as written, but what the name resolves to is
    // checked before connecting: a name that does not resolve is refused.
    let url = "telnet://ts1.example.net:2001";
    let e = assert_forbidden(gate.call("connect", json!({ "port": url })).await, url);
    assert!(e.contains("does not resolve"), "{e}");
    // No entry covers this port: refused as it is written.
    let url = "telnet://ts2.example.net:3000";
    let e = assert_forbidden(gate.call("connect", json!({ "port": url })).await, url);
    assert!(e.contains("is outside adhoc_remotes"), "{e}");
}

/// This machine's own address on the network, as the route to a
/// documentation address picks it (no packet is sent); None without one.
fn own_address(probe: IpAddr) -> Option<IpAddr> {
    let unspecified: IpAddr = match probe {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let socket = UdpSocket::bind((unspecified, 0)).ok()?;
    socket.connect((probe, 9)).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[tokio::test]
async fn this_machines_own_network_address_is_refused_too() {
    // A service listening on every address (as most do) is reached through
    // the machine's own network address as well as through loopback.
    let gate = Gate::start(BROAD).await;
    let mut tried = 0;
    for probe in [
        IpAddr::from([203, 0, 113, 1]),
        IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]),
    ] {
        let Some(own) = own_address(probe) else {
            eprintln!("no route towards {probe}: skipped");
            continue;
        };
        let any: IpAddr = match own {
            IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
            IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
        };
        let listener = TcpListener::bind((any, 0)).expect("bind the unspecified address");
        listener.set_nonblocking(true).expect("non-blocking");
        let port = listener.local_addr().expect("its address").port();
        let url = format!("tcp://{}", SocketAddr::new(own, port));
        let e = assert_forbidden(gate.call("connect", json!({ "port": url })).await, &url);
        assert!(e.contains("this host"), "{e}");
        match listener.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Ok((_, from)) => panic!("{url}: the listener got a connection from {from}"),
            Err(e) => panic!("accept: {e}"),
        }
        tried += 1;
    }
    if tried == 0 {
        serialgate_testkit::skip::skipped(
            "this machine has no route to anywhere, so no address of its own to try",
        );
    }
}

/// The events `status` shows for the current connection.
async fn events(gate: &Gate) -> Vec<String> {
    let status = match gate.call("status", json!({})).await {
        Outcome::Ok(v) => v,
        Outcome::Err(e) => panic!("status: {e}"),
    };
    status["events"]
        .as_array()
        .unwrap_or_else(|| panic!("no events in {status}"))
        .iter()
        .map(|e| e["what"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Accepts the next connection on `listener` within [`WITHIN`].
async fn accept(listener: &tokio::net::TcpListener) -> tokio::net::TcpStream {
    let (stream, _) = tokio::time::timeout(WITHIN, listener.accept())
        .await
        .expect("a connection in time")
        .expect("accept");
    stream
}

#[tokio::test]
async fn an_entry_naming_loopback_lets_it_through_to_the_checked_address() {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind 127.0.0.1");
    let port = listener.local_addr().expect("its address").port();
    let gate = Gate::start(&format!(r#"["0.0.0.0/0:*", "127.0.0.1:{port}"]"#)).await;
    let url = format!("tcp://127.1:{port}");
    let c = match gate.call("connect", json!({ "port": url })).await {
        Outcome::Ok(v) => v,
        Outcome::Err(e) => panic!("{url}: {e}"),
    };
    assert_eq!(
        c["connection"],
        format!("127.1-{port}"),
        "named as written: {c}"
    );
    let first = accept(&listener).await;
    assert_eq!(
        first.local_addr().expect("its address"),
        SocketAddr::from((Ipv4Addr::LOCALHOST, port))
    );
    // The console server hangs up; the port reconnects to the address that
    // was checked, not to a new resolution of what the agent wrote.
    drop(first);
    let second = accept(&listener).await;
    assert_eq!(
        second.local_addr().expect("its address"),
        SocketAddr::from((Ipv4Addr::LOCALHOST, port))
    );
    let pinned = format!("opened tcp://127.0.0.1:{port} ");
    wait::eventually("a reopen event", WITHIN, async || {
        let events = events(&gate).await;
        let opened: Vec<&String> = events.iter().filter(|e| e.starts_with("opened ")).collect();
        assert!(
            opened.iter().all(|e| e.starts_with(&pinned)),
            "every open went to the checked address: {events:?}"
        );
        if opened.len() >= 2 {
            Ok(())
        } else {
            Err(format!("{events:?}"))
        }
    })
    .await;
    // Another port of the same listener, not named: refused.
    let url = format!(
        "tcp://127.0.0.1:{}",
        port.checked_add(1).unwrap_or(port - 1)
    );
    assert_forbidden(gate.call("connect", json!({ "port": url })).await, &url);
}
