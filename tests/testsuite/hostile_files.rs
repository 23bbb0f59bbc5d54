//! Hostile files on disk, against the real binary over HTTP with tokens: a
//! port named like the audit trail, links planted in `log_dir` where the
//! daemon writes (a transcript, `audit.log`, a rotated name, the
//! transcripts directory), token secret files others can read or that are
//! links, and `audit.log` rotated like the transcripts.

use serialgate_testkit::daemon;
use serialgate_testkit::wait;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};

use daemon::{WITHIN, tokens_toml};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::binary;
use serialgate_testkit::client::GateClient;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;

/// `serialgate serve --config DIR/serialgate.toml --http 127.0.0.1:0`,
/// killed when dropped, with every stderr line it printed kept (warnings
/// printed before the `listening on` line included).
struct Serve {
    child: Child,
    lines: watch::Receiver<Vec<String>>,
    /// Follows stderr; ends at its end.
    reader: Option<tokio::task::JoinHandle<()>>,
}

impl Serve {
    /// Writes `config` into `dir` and starts serving it.
    fn spawn(dir: &Path, config: &str) -> Serve {
        let path = dir.join("serialgate.toml");
        std::fs::write(&path, config).expect("write the config");
        let mut child = Command::new(binary())
            .arg("serve")
            .arg("--config")
            .arg(&path)
            .args(["--http", "127.0.0.1:0"])
            .env("SERIALGATE_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn serialgate");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = watch::channel(Vec::new());
        let reader = tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                eprintln!("[daemon] {line}");
                tx.send_modify(|lines| lines.push(line));
            }
        });
        Serve {
            child,
            lines,
            reader: Some(reader),
        }
    }

    /// The first line (printed so far or later) holding every one of
    /// `needles`.
    async fn line_with(&self, needles: &[&str]) -> String {
        let mut lines = self.lines.clone();
        let found = tokio::time::timeout(
            WITHIN,
            lines.wait_for(|lines| lines.iter().any(|l| needles.iter().all(|n| l.contains(n)))),
        )
        .await
        .unwrap_or_else(|_| panic!("no stderr line with all of {needles:?} in time"))
        .expect("stderr followed");
        found
            .iter()
            .find(|l| needles.iter().all(|n| l.contains(n)))
            .cloned()
            .unwrap_or_default()
    }

    /// Every stderr line so far, joined.
    fn stderr(&self) -> String {
        self.lines.borrow().join("\n")
    }

    /// The MCP URL it listens on.
    async fn url(&self) -> String {
        let line = self.line_with(&["listening on http://"]).await;
        line.split("listening on ")
            .nth(1)
            .expect("an address")
            .trim()
            .to_owned()
    }

    /// An MCP session with `secret`.
    async fn client(&self, secret: &str) -> GateClient {
        GateClient::connect_http(&self.url().await, Some(secret))
            .await
            .expect("HTTP MCP session")
    }

    /// Waits for it to exit by itself, and for the end of its stderr.
    async fn exit(&mut self) -> ExitStatus {
        let status = tokio::time::timeout(WITHIN, self.child.wait())
            .await
            .expect("serve exits in time")
            .expect("exit status");
        if let Some(reader) = self.reader.take() {
            tokio::time::timeout(WITHIN, reader)
                .await
                .expect("stderr ends in time")
                .expect("stderr followed");
        }
        status
    }

    fn signal(&self, signal: libc::c_int) {
        let pid = libc::pid_t::try_from(self.child.id().expect("it runs")).expect("a pid");
        // SAFETY: kill(2) on our own child's pid, no memory involved.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    }
}

async fn ok(client: &GateClient, tool: &str, args: Value) -> Value {
    client.call(tool, args).await.expect("MCP transport").ok()
}

/// A simulated quiet device at `dir/name`.
async fn device(dir: &Path, name: &str) -> SimHandle {
    sim::spawn(Profile::Silent, Some(dir.join(name)))
        .await
        .expect("simulated device")
}

/// Polls `check` (reading files the daemon writes, which announce nothing)
/// until it holds, for at most [`WITHIN`].
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    wait::eventually(what, WITHIN, || {
        std::future::ready(check().then_some(()).ok_or("it did not hold"))
    })
    .await;
}

/// `get_transcript` of `connection`, once it holds `needle` (polled: the
/// file's writer announces nothing to a client).
async fn transcript_with(client: &GateClient, connection: &str, needle: &str) -> String {
    let what = format!("the transcript of {connection} to show {needle:?}");
    wait::eventually(&what, WITHIN, async || {
        let t = ok(
            client,
            "get_transcript",
            json!({"connection": connection, "last_bytes": 1_000_000}),
        )
        .await;
        let text = t["transcript"].as_str().unwrap_or_default().to_owned();
        wait::when(text, |t| t.contains(needle))
    })
    .await
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

const RW: &str = "rw-secret-0123456789abcdef";
const ADMIN_A: &str = "admin-a-secret-0123456789abcdef";

/// A port named `audit` (configured) and one named `audit.log` (ad hoc)
/// keep their device output apart from the audit trail: `audit.log` holds
/// audit records only, and an admin token scoped to `a*` reads its ports'
/// output through `get_transcript`, not other ports' audit records.
#[tokio::test]
async fn ports_named_like_the_audit_trail_stay_apart_from_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let logs = dir.path().join("logs");
    let sw1 = device(dir.path(), "sw1").await;
    let audit_dev = device(dir.path(), "audit-dev").await;
    let adhoc_dev = device(dir.path(), "adhoc-dev").await;
    let config = format!(
        "[server]\nlog_dir = {logs:?}\nallow_adhoc = true\nadhoc_devices = [{:?}]\n\n\
         [ports.sw1]\ndevice = {:?}\n\n[ports.audit]\ndevice = {:?}\n\n{}",
        format!("{}/*", dir.path().display()),
        sw1.path(),
        audit_dev.path(),
        tokens_toml(
            dir.path(),
            &[
                ("rw", RW, r#"["sw*"]"#, "write"),
                ("adm", ADMIN_A, r#"["a*"]"#, "admin")
            ]
        )
    );
    let serve = Serve::spawn(dir.path(), &config);
    let rw = serve.client(RW).await;
    ok(&rw, "connect", json!({"port": "sw1"})).await;
    ok(
        &rw,
        "send_text",
        json!({"text": "show run | i secret-sw1-77"}),
    )
    .await;
    let audit_log = logs.join("audit.log");
    eventually("the audit record of sw1", || {
        read(&audit_log).contains("secret-sw1-77")
    })
    .await;

    let adm = serve.client(ADMIN_A).await;
    ok(&adm, "connect", json!({"port": "audit"})).await;
    ok(
        &adm,
        "connect",
        json!({"port": adhoc_dev.path().display().to_string(), "name": "audit.log"}),
    )
    .await;
    audit_dev
        .inject(b"output of the port named audit\r\n")
        .await;
    adhoc_dev
        .inject(b"output of the port named audit.log\r\n")
        .await;
    for (port, output) in [
        ("audit", "output of the port named audit\r"),
        ("audit.log", "output of the port named audit.log\r"),
    ] {
        let text = transcript_with(&adm, port, output).await;
        assert!(
            !text.contains("secret-sw1-77") && !text.contains("\"token\":"),
            "{port}'s transcript shows audit records: {text}"
        );
    }
    let trail = read(&audit_log);
    for line in trail.lines() {
        let record: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("audit.log holds a line that is no record ({e}): {line:?}"));
        assert!(record["port"].is_string(), "{line}");
    }
    assert!(!trail.contains("output of the port"), "{trail}");
}

/// A file planted where the daemon writes, and a link to it.
struct Planted {
    target: PathBuf,
}

impl Planted {
    const CONTENT: &str = "a file the daemon must not write to\n";

    /// Creates `target` and a symbolic link to it at `link`.
    fn link(dir: &Path, link: &Path) -> Planted {
        let target = dir.join("victim");
        std::fs::write(&target, Self::CONTENT).expect("write the victim file");
        std::fs::create_dir_all(link.parent().expect("a parent")).expect("mkdir");
        std::os::unix::fs::symlink(&target, link).expect("plant the link");
        Planted { target }
    }

    fn assert_untouched(&self) {
        assert_eq!(read(&self.target), Self::CONTENT, "the link was followed");
    }
}

/// `log_dir = DIR/logs`, `extra` server keys, port `sw1` on `device`, a
/// write token.
fn logged_config(dir: &Path, extra: &str, device: &SimHandle) -> String {
    format!(
        "[server]\nlog_dir = {:?}\n{extra}\n[ports.sw1]\ndevice = {:?}\n\n{}",
        dir.join("logs"),
        device.path(),
        tokens_toml(dir, &[("rw", RW, r#"["*"]"#, "write")])
    )
}

/// Waits until the port has read `needle` from its device.
async fn port_read(client: &GateClient, needle: &str) {
    let r = ok(
        client,
        "read_until_prompt",
        json!({"prompt": needle, "regex": false, "timeout": 10}),
    )
    .await;
    assert!(
        r["output"].as_str().unwrap_or_default().contains(needle),
        "{r}"
    );
}

/// A link planted at the transcript's path is not written through: the
/// port runs without a transcript and the daemon says why.
#[tokio::test]
async fn a_link_at_a_transcript_is_not_followed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sw1 = device(dir.path(), "sw1").await;
    let link = dir.path().join("logs/transcripts/sw1.log");
    let planted = Planted::link(dir.path(), &link);
    let serve = Serve::spawn(dir.path(), &logged_config(dir.path(), "", &sw1));
    serve
        .line_with(&[&link.display().to_string(), "symbolic link"])
        .await;
    let rw = serve.client(RW).await;
    ok(&rw, "connect", json!({"port": "sw1"})).await;
    sw1.inject(b"console output\r\n").await;
    port_read(&rw, "console output").await;
    let e = rw
        .call("get_transcript", json!({}))
        .await
        .expect("MCP transport")
        .err();
    assert!(e.contains("sw1 has no transcript"), "{e}");
    planted.assert_untouched();
    assert!(link.is_symlink());
}

/// A link planted at `audit.log` is not written through: audit records go
/// to the daemon's log only, and it says why.
#[tokio::test]
async fn a_link_at_the_audit_log_is_not_followed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sw1 = device(dir.path(), "sw1").await;
    let link = dir.path().join("logs/audit.log");
    let planted = Planted::link(dir.path(), &link);
    let serve = Serve::spawn(dir.path(), &logged_config(dir.path(), "", &sw1));
    serve
        .line_with(&[&link.display().to_string(), "symbolic link"])
        .await;
    let rw = serve.client(RW).await;
    ok(&rw, "connect", json!({"port": "sw1"})).await;
    ok(&rw, "send_text", json!({"text": "audited-write"})).await;
    assert!(sw1.wait_received(b"audited-write", WITHIN).await);
    // The record reached the daemon's log, not the file behind the link.
    serve.line_with(&["audited-write"]).await;
    planted.assert_untouched();
}

/// A link planted at a rotated transcript's name is never followed: the
/// rotation replaces it (the daemon says so) and the file it pointed to
/// stays as it was.
#[tokio::test]
async fn a_link_at_a_rotated_name_is_not_followed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sw1 = device(dir.path(), "sw1").await;
    let rotated = dir.path().join("logs/transcripts/sw1.log.1");
    let planted = Planted::link(dir.path(), &rotated);
    let serve = Serve::spawn(
        dir.path(),
        &logged_config(dir.path(), "log_max = \"4KiB\"\nlog_keep = 3\n", &sw1),
    );
    let rw = serve.client(RW).await;
    ok(&rw, "connect", json!({"port": "sw1"})).await;
    for i in 0..100 {
        sw1.inject(format!("line {i:03} of a long show command\r\n").as_bytes())
            .await;
    }
    port_read(&rw, "line 099").await;
    eventually("a rotated transcript", || {
        !rotated.is_symlink() && rotated.is_file()
    })
    .await;
    serve
        .line_with(&[&rotated.display().to_string(), "symbolic link"])
        .await;
    planted.assert_untouched();
}

/// A link planted as the transcripts directory is not followed: nothing is
/// written into the directory it points to, and the daemon says why.
#[tokio::test]
async fn a_link_as_the_transcripts_directory_is_not_followed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sw1 = device(dir.path(), "sw1").await;
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let link = dir.path().join("logs/transcripts");
    std::fs::create_dir(dir.path().join("logs")).expect("mkdir");
    std::os::unix::fs::symlink(&elsewhere, &link).expect("plant the link");
    let serve = Serve::spawn(dir.path(), &logged_config(dir.path(), "", &sw1));
    serve
        .line_with(&[&link.display().to_string(), "symbolic link"])
        .await;
    let rw = serve.client(RW).await;
    ok(&rw, "connect", json!({"port": "sw1"})).await;
    sw1.inject(b"console output\r\n").await;
    port_read(&rw, "console output").await;
    let written: Vec<_> = std::fs::read_dir(&elsewhere)
        .expect("read the directory")
        .collect();
    assert!(written.is_empty(), "written through the link: {written:?}");
}

/// A transcript replaced by a link while the daemon runs is not read
/// through by `get_transcript`: the file it points to is not shown.
#[tokio::test]
async fn get_transcript_does_not_read_through_a_link() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sw1 = device(dir.path(), "sw1").await;
    let serve = Serve::spawn(dir.path(), &logged_config(dir.path(), "", &sw1));
    let rw = serve.client(RW).await;
    ok(&rw, "connect", json!({"port": "sw1"})).await;
    sw1.inject(b"console output\r\n").await;
    transcript_with(&rw, "sw1", "console output").await;
    let transcript = dir.path().join("logs/transcripts/sw1.log");
    std::fs::remove_file(&transcript).expect("remove the transcript");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "-----BEGIN PRIVATE KEY-----\n").expect("write");
    std::os::unix::fs::symlink(&victim, &transcript).expect("plant the link");
    let e = rw
        .call("get_transcript", json!({}))
        .await
        .expect("MCP transport")
        .err();
    assert!(
        e.contains("symbolic link") && !e.contains("PRIVATE KEY"),
        "{e}"
    );
}

/// `check-config` refuses a `log_dir` others may write to (they could plant
/// links and files there, or remove the audit trail), and a config file
/// every user may change, with the `chmod` that fixes each.
#[tokio::test]
async fn check_config_refuses_a_log_dir_or_a_config_others_may_write_to() {
    let dir = tempfile::tempdir().expect("temp dir");
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).expect("mkdir");
    std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let config = dir.path().join("check.toml");
    std::fs::write(&config, format!("[server]\nlog_dir = {logs:?}\n")).expect("write");
    let check = || async {
        let out = tokio::time::timeout(
            WITHIN,
            Command::new(binary())
                .arg("check-config")
                .arg(&config)
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("check-config ends in time")
        .expect("run check-config");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, stderr) = check().await;
    assert!(!ok, "a log_dir every user may write to was accepted");
    assert!(
        stderr.contains(&format!("chmod go-w {}", logs.display())),
        "{stderr}"
    );
    std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o750)).expect("chmod");
    assert!(check().await.0, "a private log_dir is fine");
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let (ok, stderr) = check().await;
    assert!(!ok, "a config every user may change was accepted");
    assert!(
        stderr.contains(&format!("chmod o-w {}", config.display())),
        "{stderr}"
    );
}

/// `audit.log` is rotated at `log_max`, on a record boundary, keeping
/// `log_keep` rotated files.
#[tokio::test]
async fn the_audit_log_rotates_at_log_max_keeping_log_keep() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sw1 = device(dir.path(), "sw1").await;
    let serve = Serve::spawn(
        dir.path(),
        &logged_config(dir.path(), "log_max = \"4KiB\"\nlog_keep = 2\n", &sw1),
    );
    let rw = serve.client(RW).await;
    ok(&rw, "connect", json!({"port": "sw1"})).await;
    let filler = "x".repeat(900);
    for i in 0..24 {
        ok(
            &rw,
            "send_text",
            json!({"text": format!("mark-{i:02} {filler}")}),
        )
        .await;
    }
    let logs = dir.path().join("logs");
    let files = [
        logs.join("audit.log"),
        logs.join("audit.log.1"),
        logs.join("audit.log.2"),
    ];
    eventually("the last record, and two rotated files", || {
        files[2].exists() && files.iter().any(|f| read(f).contains("mark-23"))
    })
    .await;
    assert!(
        !logs.join("audit.log.3").exists(),
        "more than log_keep kept"
    );
    for rotated in &files[1..] {
        let text = read(rotated);
        assert!(
            text.len() >= 4096 && text.len() < 4096 + 1200,
            "{} is {} bytes",
            rotated.display(),
            text.len()
        );
        assert!(text.ends_with('\n'), "cut mid-record");
        for line in text.lines() {
            let record: Value = serde_json::from_str(line).expect("a whole record");
            assert_eq!(record["kind"], "text");
        }
    }
}

/// A config with one token whose secret file is `file` (mode as it is).
fn token_config(file: &Path) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n[[tokens]]\nname = \"agent\"\n\
         secret_file = {file:?}\nports = [\"*\"]\naccess = \"read\"\n"
    )
}

/// The secret files refused: readable by everyone, by the group, and a
/// link (to a file that is itself private); with what the refusal must say.
fn unsafe_secret_files(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let mut files = Vec::new();
    for (name, mode) in [("world.token", 0o644), ("group.token", 0o640)] {
        let file = dir.join(name);
        std::fs::write(&file, "a-long-random-secret-0123456789\n").expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).expect("chmod");
        files.push((file, "chmod 600"));
    }
    let real = dir.join("real.token");
    std::fs::write(&real, "another-long-random-secret-0123456789\n").expect("write");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let link = dir.join("link.token");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    files.push((link, "symbolic link"));
    files
}

/// `check-config` refuses a secret file others can read, or a link, naming
/// the file and the fix.
#[tokio::test]
async fn check_config_refuses_secret_files_others_can_read_or_that_are_links() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (file, fix) in unsafe_secret_files(dir.path()) {
        let config = dir.path().join("check.toml");
        std::fs::write(&config, token_config(&file)).expect("write the config");
        let out = tokio::time::timeout(
            WITHIN,
            Command::new(binary())
                .arg("check-config")
                .arg(&config)
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("check-config ends in time")
        .expect("run check-config");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "check-config accepted {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            stderr.contains(&file.display().to_string()) && stderr.contains(fix),
            "{stderr}"
        );
    }
}

/// `serve` refuses them too: it exits non-zero saying which file and what
/// to do, instead of serving with a secret others can read.
#[tokio::test]
async fn serve_refuses_secret_files_others_can_read_or_that_are_links() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (file, fix) in unsafe_secret_files(dir.path()) {
        let mut serve = Serve::spawn(dir.path(), &token_config(&file));
        let status = serve.exit().await;
        assert!(!status.success(), "{status}");
        let stderr = serve.stderr();
        assert!(
            stderr.contains(&file.display().to_string()) && stderr.contains(fix),
            "{stderr}"
        );
    }
}

/// SIGHUP with a config whose new token's secret file others can read is
/// refused: the running config stays, the new token does not get in.
#[tokio::test]
async fn a_reload_with_a_readable_secret_file_keeps_the_running_config() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sw1 = device(dir.path(), "sw1").await;
    let config = logged_config(dir.path(), "", &sw1);
    let serve = Serve::spawn(dir.path(), &config);
    let url = serve.url().await;
    GateClient::connect_http(&url, Some(RW))
        .await
        .expect("the running token gets in");
    let readable = dir.path().join("new.token");
    let new_secret = "new-token-secret-0123456789abcdef";
    std::fs::write(&readable, format!("{new_secret}\n")).expect("write");
    std::fs::set_permissions(&readable, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let added = format!(
        "{config}[[tokens]]\nname = \"new\"\nsecret_file = \"new.token\"\nports = [\"*\"]\naccess = \"read\"\n"
    );
    let tmp = dir.path().join("serialgate.toml.new");
    std::fs::write(&tmp, added).expect("write the config");
    std::fs::rename(&tmp, dir.path().join("serialgate.toml")).expect("replace the config");
    serve.signal(libc::SIGHUP);
    serve
        .line_with(&[
            "reload rejected",
            &readable.display().to_string(),
            "chmod 600",
        ])
        .await;
    assert!(
        GateClient::connect_http(&url, Some(new_secret))
            .await
            .is_err(),
        "the refused config's token got in"
    );
    GateClient::connect_http(&url, Some(RW))
        .await
        .expect("the running token still gets in");
}
