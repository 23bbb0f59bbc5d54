//! Tokens trying to reach past their access level and their port globs,
//! over real HTTP against the real binary: who may take the write hold
//! (`connect` with `take_over`), and what error messages tell a token
//! about ports outside its scope.

use serialgate_testkit::daemon;

use std::time::Duration;

use daemon::{Daemon, NotifySocket, WITHIN, tokens_toml};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::client::{GateClient, Outcome};
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
    sw1: SimHandle,
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
            sw1,
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

/// The write hold of `sw1` as `client` sees it: whether it holds it, and
/// the holder's session number.
async fn hold(client: &GateClient) -> (bool, Option<u64>) {
    let status = ok(client, "status", json!({"connection": "sw1"})).await;
    (
        status["you_hold_writer"]
            .as_bool()
            .expect("you_hold_writer"),
        status["writer"]["session"].as_u64(),
    )
}

/// Sends `text` as `client` and waits for the device to receive it.
async fn writes(gate: &Gate, client: &GateClient, text: &str) {
    ok(
        client,
        "send_text",
        json!({"connection": "sw1", "text": text}),
    )
    .await;
    assert!(
        gate.sw1
            .wait_received(format!("{text}\r").as_bytes(), Duration::from_secs(5))
            .await,
        "the device did not receive {text:?}"
    );
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
async fn taking_the_write_hold_needs_the_right_to_it() {
    let gate = Gate::start().await;
    let a = gate.client("rw").await;
    let a_session = ok(&a, "connect", json!({"port": "sw1"})).await;
    assert!(a_session["writer"].is_null(), "{a_session}");
    writes(&gate, &a, "from-a").await;
    let (holds, a_id) = hold(&a).await;
    assert!(holds);
    let a_id = a_id.expect("a holder");

    // A read token can never take the hold: it cannot write, so holding
    // the port would only lock the writer out. Not as a string either.
    let ro = gate.client("ro").await;
    for take_over in [json!(true), json!("true"), json!(" true ")] {
        let e = err(
            &ro,
            "connect",
            json!({"port": "sw1", "take_over": take_over}),
        )
        .await;
        assert!(e.starts_with("forbidden: "), "{e}");
        assert!(
            e.contains("read access") && e.contains("without take_over"),
            "{e}"
        );
    }
    assert_eq!(hold(&a).await, (true, Some(a_id)));
    writes(&gate, &a, "a-after-ro").await;
    // The refused connect attached nothing; a plain one still reads.
    let e = err(&ro, "status", json!({})).await;
    assert!(e.starts_with("unknown_connection: "), "{e}");
    ok(&ro, "connect", json!({"port": "sw1"})).await;
    assert_eq!(hold(&ro).await, (false, Some(a_id)));

    // Another write token cannot take it from a session of `rw`.
    let rw2 = gate.client("rw2").await;
    let e = err(&rw2, "connect", json!({"port": "sw1", "take_over": true})).await;
    assert!(e.starts_with("forbidden: "), "{e}");
    assert!(
        e.contains("admin access") && e.contains(&format!("session {a_id} ")),
        "{e}"
    );
    assert_eq!(hold(&a).await, (true, Some(a_id)));
    writes(&gate, &a, "a-after-rw2").await;
    // As before, it may watch and is told who writes.
    ok(&rw2, "connect", json!({"port": "sw1"})).await;
    let e = err(&rw2, "send_text", json!({"text": "from-rw2"})).await;
    assert!(e.starts_with("busy: ") && e.contains("token rw)"), "{e}");

    // A second session of `rw` (its first one crashed, say) takes it back.
    let a2 = gate.client("rw").await;
    let taken = ok(&a2, "connect", json!({"port": "sw1", "take_over": true})).await;
    let a2_id = taken["writer"]["session"].as_u64().expect("the new holder");
    assert_ne!(a2_id, a_id);
    assert_eq!(hold(&a2).await, (true, Some(a2_id)));
    writes(&gate, &a2, "from-a2").await;
    // The previous holder sees it is read-only now.
    assert_eq!(hold(&a).await, (false, Some(a2_id)));
    let e = err(&a, "send_text", json!({"text": "a-again"})).await;
    assert!(
        e.starts_with("busy: ") && e.contains(&format!("session {a2_id} ")),
        "{e}"
    );

    // An admin token takes it from anyone; taking it again is harmless.
    let adm = gate.client("adm").await;
    let taken = ok(&adm, "connect", json!({"port": "sw1", "take_over": true})).await;
    let adm_id = taken["writer"]["session"].as_u64().expect("the new holder");
    let again = ok(&adm, "connect", json!({"port": "sw1", "take_over": true})).await;
    assert_eq!(again["writer"]["session"], adm_id);
    writes(&gate, &adm, "from-adm").await;
    assert_eq!(hold(&a2).await, (false, Some(adm_id)));
    let events = ok(&a2, "status", json!({})).await["events"].to_string();
    assert!(
        events.contains(&format!("session {adm_id} "))
            && events.contains(&format!("took the write hold from session {a2_id} ")),
        "{events}"
    );

    // On a free port, a write token's take_over just takes the hold; a
    // read token's is refused even there (a writer would be locked out).
    ok(&adm, "disconnect", json!({})).await;
    assert_eq!(hold(&a).await, (false, None));
    let e = err(&ro, "connect", json!({"port": "sw1", "take_over": true})).await;
    assert!(e.starts_with("forbidden: "), "{e}");
    let taken = ok(&rw2, "connect", json!({"port": "sw1", "take_over": true})).await;
    assert_eq!(
        hold(&rw2).await,
        (true, taken["writer"]["session"].as_u64())
    );
    writes(&gate, &rw2, "from-rw2").await;
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

#[tokio::test]
async fn refusals_do_not_echo_huge_arguments() {
    let gate = Gate::start().await;
    let lab = gate.client("lab").await;
    let ro = gate.client("ro").await;
    let huge = format!("sw-{}", "x".repeat(100_000));
    let cases = [
        (&lab, "connect", json!({"port": huge})),
        (&lab, "status", json!({"connection": huge})),
        (
            &lab,
            "connect",
            json!({"port": gate.path("x"), "name": huge}),
        ),
        (&lab, "connect", json!({"port": "lab-1", "preset": huge})),
        (&ro, huge.as_str(), json!({})),
    ];
    for (client, tool, args) in cases {
        let e = err(client, tool, args).await;
        bounded(&e, "100003 bytes");
    }
    // Resource URIs of a port the token reaches, but no output's.
    let rw = gate.client("rw").await;
    for (uri, size) in [
        (format!("serialgate://ports/{huge}"), "100022 bytes"),
        (
            format!("serialgate://ports/{huge}/output/0-1"),
            "100003 bytes",
        ),
    ] {
        let e = tokio::time::timeout(WITHIN, rw.read_resource(&uri))
            .await
            .expect("a resource answer in time")
            .expect_err("no such resource")
            .to_string();
        bounded(&e, size);
    }
}

/// Fails unless `error` is short and shows the size of the long argument.
fn bounded(error: &str, size: &str) {
    assert!(
        error.len() < 2000 && error.contains(size),
        "{} bytes: {}…",
        error.len(),
        &error[..200.min(error.len())]
    );
}
