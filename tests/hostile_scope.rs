//! Tokens trying to reach past their port globs, over real HTTP against
//! the real binary: what error messages tell a token about ports outside
//! its scope.

mod daemon;

use daemon::{Daemon, NotifySocket, WITHIN, tokens_toml};
use serde_json::{Value, json};
use serialgate::client::{GateClient, Outcome};
use serialgate::sim::{self, Profile, SimHandle};
use tempfile::TempDir;

/// The tokens: name, secret, ports, access.
const TOKENS: &[(&str, &str, &str, &str)] = &[
    ("ro", "read-only-secret-0123456789", r#"["sw*"]"#, "read"),
    ("rw", "read-write-secret-0123456789", r#"["*"]"#, "write"),
    ("rw2", "other-writer-secret-0123456789", r#"["*"]"#, "write"),
    ("adm", "admin-secret-0123456789", r#"["*"]"#, "admin"),
    ("lab", "lab-only-secret-0123456789", r#"["lab-*"]"#, "write"),
    (
        "labadm",
        "lab-admin-secret-0123456789",
        r#"["lab-*"]"#,
        "admin",
    ),
];

/// The ports a `lab-*` token must never see named.
const OUTSIDE_LAB: &[&str] = &["sw1", "core-rtr"];

/// A running daemon, its two simulated devices and its directory.
struct Gate {
    url: String,
    /// The device of port `sw1`, at `<dir>/console-a`.
    _sw1: SimHandle,
    /// The device of port `lab-1`, at `<dir>/console-b`.
    _lab1: SimHandle,
    dir: TempDir,
    _daemon: Daemon,
}

impl Gate {
    /// Ports `sw1` and `lab-1` on simulated devices, `core-rtr` on a
    /// missing one; ad-hoc connections allowed under the test directory;
    /// the [`TOKENS`].
    async fn start() -> Gate {
        let dir = tempfile::tempdir().expect("temp dir");
        let sw1 = sim::spawn(Profile::Silent, Some(dir.path().join("console-a")))
            .await
            .expect("simulated device a");
        let lab1 = sim::spawn(Profile::Silent, Some(dir.path().join("console-b")))
            .await
            .expect("simulated device b");
        let config = format!(
            "[server]\nallow_adhoc = true\nadhoc_devices = [{:?}]\n\n\
             [ports.sw1]\ndevice = {:?}\n\n\
             [ports.lab-1]\ndevice = {:?}\n\n\
             [ports.core-rtr]\ndevice = {:?}\n\n{}",
            format!("{}/*", dir.path().display()),
            dir.path().join("console-a").display(),
            dir.path().join("console-b").display(),
            dir.path().join("console-c").display(),
            tokens_toml(dir.path(), TOKENS)
        );
        let path = dir.path().join("serialgate.toml");
        std::fs::write(&path, config).expect("write config");
        let notify = NotifySocket::bind(dir.path());
        let mut daemon = Daemon::spawn(Some(&path), &notify, &["--http", "127.0.0.1:0"]);
        notify.expect("READY=1").await;
        let url = daemon.http_url().await;
        Gate {
            url,
            _sw1: sw1,
            _lab1: lab1,
            dir,
            _daemon: daemon,
        }
    }

    /// A new MCP session with `token`.
    async fn client(&self, token: &str) -> GateClient {
        let secret = TOKENS
            .iter()
            .find(|t| t.0 == token)
            .map(|t| t.1)
            .expect("a test token");
        tokio::time::timeout(WITHIN, GateClient::connect_http(&self.url, Some(secret)))
            .await
            .expect("MCP initialize in time")
            .expect("HTTP MCP session")
    }

    /// `<dir>/file`, as a `connect` argument.
    fn path(&self, file: &str) -> String {
        self.dir.path().join(file).display().to_string()
    }
}

async fn call(client: &GateClient, tool: &str, args: Value) -> Outcome {
    tokio::time::timeout(WITHIN, client.call(tool, args))
        .await
        .expect("a tool result in time")
        .expect("MCP transport")
}

async fn ok(client: &GateClient, tool: &str, args: Value) -> Value {
    call(client, tool, args).await.ok()
}

async fn err(client: &GateClient, tool: &str, args: Value) -> String {
    call(client, tool, args).await.err()
}

/// Fails if `message`, once the part the caller typed is taken out, names
/// one of `ports`.
fn names_none(message: &str, typed: &str, ports: &[&str]) {
    let rest = message.replace(typed, "");
    for port in ports {
        assert!(
            !rest.contains(port),
            "the error names {port:?}, outside the caller's scope: {message}"
        );
    }
}

#[tokio::test]
async fn errors_name_no_port_outside_the_callers_scope() {
    let gate = Gate::start().await;
    let lab = gate.client("lab").await;
    let labadm = gate.client("labadm").await;

    // An unknown port inside the globs: the list shows only lab-* ports.
    let e = err(&lab, "connect", json!({"port": "lab-9"})).await;
    assert!(e.starts_with("unknown_connection: "), "{e}");
    assert!(e.contains("lab-1"), "the ports it may use are listed: {e}");
    names_none(&e, "lab-9", OUTSIDE_LAB);
    let e = err(&labadm, "connect", json!({"port": "lab-9"})).await;
    names_none(&e, "lab-9", OUTSIDE_LAB);
    let ro = gate.client("ro").await;
    let e = err(&ro, "connect", json!({"port": "sw9"})).await;
    assert!(e.contains("sw1"), "{e}");
    names_none(&e, "sw9", &["lab-1", "core-rtr"]);

    // The device path of a port outside the globs: refused without the
    // port's name, for a writer and for an admin (who may open ad-hoc
    // devices, even with a name inside its globs).
    for file in ["console-a", "console-c"] {
        let device = gate.path(file);
        for (client, args) in [
            (&lab, json!({"port": device})),
            (&labadm, json!({"port": device})),
            (&labadm, json!({"port": device, "name": "lab-x"})),
        ] {
            let e = err(client, "connect", args.clone()).await;
            assert!(e.starts_with("forbidden: "), "{args}: {e}");
            names_none(&e, &device, OUTSIDE_LAB);
        }
    }
    // None of them attached anything.
    let listed = ok(&labadm, "list_ports", json!({})).await;
    let ports: Vec<(&str, bool)> = listed["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| (p["name"].as_str().unwrap_or("?"), p["connected"] == true))
        .collect();
    assert_eq!(ports, [("lab-1", false)], "{listed}");

    // The ports it may use still work, by name or by device path.
    ok(&lab, "connect", json!({"port": gate.path("console-b")})).await;
    let e = err(&lab, "status", json!({"connection": "nope-1"})).await;
    names_none(&e, "nope-1", OUTSIDE_LAB);
    let e = err(&lab, "disconnect", json!({"connection": "lab-2"})).await;
    assert!(
        e.starts_with("unknown_connection: ") && e.contains("lab-1"),
        "{e}"
    );
    names_none(&e, "lab-2", OUTSIDE_LAB);
}
