//! TLS on the HTTP listener, in the console client and to the alert
//! webhook, end to end with real clients: a test CA and server
//! certificates made here with the `openssl` CLI, the official Python MCP
//! SDK over `https://` trusting that CA, `serialgate console --url
//! https://` with `--ca-file`, `openssl s_client` as the client that asks
//! for old protocols, and a TLS receiver for the webhook.
//!
//! A hostile caller's view: plain HTTP on the TLS port gets a refusal, not
//! a session; TLS 1.0 and 1.1 get no handshake; a client that does not
//! trust the CA gets nothing; the webhook refuses a receiver whose
//! certificate another CA signed; a key file others may read stops the
//! daemon at start.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use serialgate_sim::pty::Pty;
use serialgate_sim::{self as sim, Profile};
use serialgate_testkit::daemon::{self, Daemon, NotifySocket, WITHIN};
use serialgate_testkit::python::python_with;
use serialgate_testkit::skip::skipped;
use serialgate_testkit::tls::{TestCa, client_config};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;

use super::console_client::Terminal;
use super::python_sdk::{check_session, run_script};

const NOC: &str = "noc-secret-0123456789abcdef";

/// Whether the `openssl` CLI is here; else the test is skipped (and fails
/// under CI).
pub(super) fn have_openssl() -> bool {
    let found = std::process::Command::new("openssl")
        .arg("version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        skipped("the openssl CLI is not installed (Debian: openssl)");
    }
    found
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A daemon serving HTTPS on loopback with `cert` and `key`, one
/// simulated Cisco switch (sw1) and the token `noc`; the config file, the
/// daemon and its `https://127.0.0.1:PORT` base.
struct Site {
    daemon: Daemon,
    base: String,
    _sim: sim::SimHandle,
    _notify: NotifySocket,
}

async fn site(dir: &Path, cert: &Path, key: &Path) -> Site {
    let link = dir.join("sw1");
    let sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
        .await
        .expect("simulated switch");
    let tokens = daemon::tokens_toml(dir, &[("noc", NOC, r#"["sw1"]"#, "write")]);
    let config = dir.join("c.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\ntls_cert = {:?}\ntls_key = {:?}\n\
             [ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n{tokens}",
            cert.display().to_string(),
            key.display().to_string(),
            link.display().to_string()
        ),
    )
    .unwrap();
    let notify = NotifySocket::bind(dir);
    let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    let url = daemon.http_url().await;
    notify.expect("READY=1").await;
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let base = url.trim_end_matches("/mcp").to_owned();
    Site {
        daemon,
        base,
        _sim: sim,
        _notify: notify,
    }
}

impl Site {
    fn addr(&self) -> String {
        self.base.trim_start_matches("https://").to_owned()
    }
}

/// `openssl s_client` to `addr` with `args` (e.g. `-tls1_1`): whether the
/// handshake was made and verified against `ca`, and what it printed.
async fn s_client(addr: &str, ca: &Path, args: &[&str]) -> (bool, String) {
    let out = tokio::time::timeout(
        WITHIN,
        Command::new("openssl")
            .args(["s_client", "-connect", addr, "-CAfile"])
            .arg(ca)
            .args(["-verify_return_error", "-brief"])
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("s_client ends in time")
    .expect("run openssl s_client");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// An HTTPS client trusting only `ca`, made with the daemon's own rustls:
/// `GET path` with `Connection: close`; the whole answer as text.
async fn https_get(addr: &str, ca: &Path, path: &str) -> String {
    let config = client_config(ca).expect("a client config trusting the CA");
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .expect("a verified TLS handshake");
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(WITHIN, tls.read_to_end(&mut answer))
        .await
        .expect("the answer in time")
        .ok();
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn the_python_sdk_runs_show_version_over_https_trusting_the_test_ca() {
    if !have_openssl() {
        return;
    }
    let Some(python) = python_with(&["mcp"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    let (cert, key) = ca.issue("server", "first");
    let site = site(dir.path(), &cert, &key).await;
    let url = format!("{}/mcp", site.base);
    let ca_file = ca.cert();
    let (lines, ok, stderr) =
        run_script(&python, &["http", &url, NOC, ca_file.to_str().unwrap()]).await;
    assert!(ok, "{stderr}");
    check_session(&lines);

    // Without the test CA the SDK checks the system's roots, which did not
    // sign the daemon's certificate: no session.
    let (lines, ok, stderr) = run_script(&python, &["http", &url, NOC]).await;
    assert!(!ok && lines.is_empty(), "{lines:?}");
    assert!(stderr.contains("CERTIFICATE_VERIFY_FAILED"), "{stderr}");
}

#[tokio::test]
async fn old_protocols_and_plain_http_are_refused_and_the_web_view_asks_for_https() {
    if !have_openssl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    let (cert, key) = ca.issue("server", "first");
    let mut site = site(dir.path(), &cert, &key).await;
    let addr = site.addr();
    let ca_file = ca.cert();

    for good in ["-tls1_3", "-tls1_2"] {
        let (ok, text) = s_client(&addr, &ca_file, &[good]).await;
        assert!(ok, "{good}: {text}");
        assert!(text.contains("Verification: OK"), "{good}: {text}");
    }
    // OpenSSL's own floor is lowered so that the daemon is the one saying
    // no.
    for old in ["-tls1_1", "-tls1"] {
        let (ok, text) = s_client(&addr, &ca_file, &[old, "-cipher", "DEFAULT@SECLEVEL=0"]).await;
        assert!(!ok, "{old} was accepted: {text}");
        // rustls answers a ClientHello offering nothing it speaks with a
        // handshake_failure alert.
        assert!(
            text.contains("alert handshake failure") || text.contains("alert protocol version"),
            "{old}: {text}"
        );
        assert!(!text.contains("Protocol version: TLSv1.1"), "{old}: {text}");
    }

    // A plain request on the TLS port: a short 400 saying what to use, then
    // the connection closes; nothing of the request is served.
    let mut plain = TcpStream::connect(&addr).await.unwrap();
    plain
        .write_all(
            format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {NOC}\r\nContent-Length: 2\r\n\r\n{{}}")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(WITHIN, plain.read_to_string(&mut answer))
        .await
        .expect("closed in time")
        .unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{answer}"
    );
    assert!(answer.contains("use https://"), "{answer}");
    assert!(!answer.contains("mcp-session-id"), "{answer}");

    // Over TLS the web view answers with HSTS, and /healthz is there too.
    let page = https_get(&addr, &ca_file, "/web/signin").await;
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.to_ascii_lowercase()
            .contains("strict-transport-security: max-age=31536000"),
        "{page}"
    );
    let health = https_get(&addr, &ca_file, "/healthz").await;
    assert!(health.trim_end().ends_with("ok"), "{health}");

    // The daemon is still serving after all of that.
    let (ok, text) = s_client(&addr, &ca_file, &[]).await;
    assert!(ok, "{text}");
    assert!(site.daemon.child.try_wait().unwrap().is_none());
}

#[tokio::test]
async fn a_console_over_https_with_ca_file_goes_on_while_a_renewed_certificate_reaches_the_next_connection()
 {
    if !have_openssl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    let (cert, key) = ca.issue("server", "first");
    let mut site = site(dir.path(), &cert, &key).await;
    let addr = site.addr();
    let ca_file = ca.cert();

    // Without --ca-file the console client checks the system's roots and
    // refuses the daemon's certificate.
    let refused = Command::new(env!("CARGO_BIN_EXE_serialgate"))
        .args(["console", "--list", "--url", &site.base, "--token-file"])
        .arg(dir.path().join("noc.token"))
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains("TLS with the gateway") && said.contains("--ca-file"),
        "{said}"
    );

    let mut terminal = Terminal::open();
    let mut console = Command::new(env!("CARGO_BIN_EXE_serialgate"))
        .args(["console", "sw1", "--url", &site.base, "--ca-file"])
        .arg(&ca_file)
        .arg("--token-file")
        .arg(dir.path().join("noc.token"))
        .stdin(terminal.stdio())
        .stdout(terminal.stdio())
        .stderr(terminal.stdio())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    terminal.read_until("Ctrl-] ? for help").await;
    terminal.type_keys(b"\r");
    terminal.read_until("SW1>").await;

    // The certificate is renewed on disk (a new key too, put in place by
    // rename as certbot does) and the daemon told with SIGHUP.
    let (new_cert, new_key) = ca.issue("renewed", "renewed");
    std::fs::rename(&new_key, &key).unwrap();
    std::fs::rename(&new_cert, &cert).unwrap();
    site.daemon.signal(libc::SIGHUP);
    site.daemon
        .stderr
        .wait_for("TLS: reloaded certificate CN=localhost, O=renewed")
        .await;
    let (ok, text) = s_client(&addr, &ca_file, &[]).await;
    assert!(ok, "{text}");
    assert!(
        text.contains("O = renewed") || text.contains("O=renewed"),
        "{text}"
    );

    // The console attached before the reload still types and reads.
    terminal.type_keys(b"show clock\r");
    terminal.read_until("UTC").await;
    terminal.type_keys(b"\x1d.");
    let status = tokio::time::timeout(WITHIN, console.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");

    // A renewal that went wrong (a key that does not fit) is refused and
    // the running certificate stays.
    let (_, stray_key) = ca.issue("stray", "stray");
    std::fs::rename(&stray_key, &key).unwrap();
    site.daemon.signal(libc::SIGHUP);
    let line = site.daemon.stderr.wait_for("reload rejected").await;
    assert!(line.contains("does not fit the certificate"), "{line}");
    let (ok, text) = s_client(&addr, &ca_file, &[]).await;
    assert!(ok && text.contains("renewed"), "{text}");
}

/// A TLS receiver on loopback with `cert` and `key`: answers 200 to each
/// request and hands over its head.
async fn tls_receiver(
    cert: &Path,
    key: &Path,
) -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let chain = rustls_pki_types::CertificateDer::pem_file_iter(cert)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls_pki_types::PrivateKeyDer::from_pem_file(key).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = tls
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
                let _ = tls.shutdown().await;
                let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
            });
        }
    });
    (format!("https://localhost:{port}/hook"), rx)
}

/// A daemon over stdio with one port on `pty` and the webhook at `url`
/// trusting `ca`.
async fn hooked_daemon(dir: &Path, pty: &Pty, url: &str, ca: &Path) -> (Daemon, NotifySocket) {
    let config = dir.join("hook.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nalert_webhook = {{ url = \"{url}\", ca_file = {:?}, retries = 0 }}\n\
             [ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n",
            ca.display().to_string(),
            pty.slave_path().display().to_string()
        ),
    )
    .unwrap();
    let notify = NotifySocket::bind(dir);
    let daemon = Daemon::spawn(Some(&config), &notify, &[]);
    notify.expect("READY=1").await;
    (daemon, notify)
}

const CRASH: &[u8] = b"\r\nUnexpected exception to CPU: vector 1500, PC = 0x0\r\n";

#[tokio::test]
async fn a_webhook_reaches_an_https_receiver_its_ca_signed_and_refuses_another() {
    if !have_openssl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    let (cert, key) = ca.issue("receiver", "hooks");
    let (url, mut received) = tls_receiver(&cert, &key).await;
    let pty = Pty::open().unwrap();
    let (_daemon, _notify) = hooked_daemon(dir.path(), &pty, &url, &ca.cert()).await;
    pty.write_all(CRASH).await.unwrap();
    let head = tokio::time::timeout(WITHIN, received.recv())
        .await
        .expect("a POST over TLS in time")
        .unwrap();
    assert!(head.starts_with("POST /hook HTTP/1.1\r\n"), "{head}");

    // A receiver whose certificate another CA signed: the daemon refuses
    // the handshake, sends nothing and says why.
    let other_dir = tempfile::tempdir().unwrap();
    let other = TestCa::new(other_dir.path(), "other");
    let (cert, key) = other.issue("impostor", "impostor");
    let (url, mut received) = tls_receiver(&cert, &key).await;
    let pty = Pty::open().unwrap();
    let (mut daemon, _notify) = hooked_daemon(other_dir.path(), &pty, &url, &ca.cert()).await;
    pty.write_all(CRASH).await.unwrap();
    let line = daemon.stderr.wait_for("not delivered to").await;
    assert!(line.contains("TLS with localhost"), "{line}");
    assert!(
        line.to_ascii_lowercase().contains("unknownissuer"),
        "{line}"
    );
    assert!(received.try_recv().is_err(), "the impostor got the alert");
}

#[tokio::test]
async fn check_config_shows_the_certificate_and_a_key_others_may_read_stops_the_start() {
    if !have_openssl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    let (cert, key) = ca.issue("server", "first");
    let config = dir.path().join("c.toml");
    let tokens = daemon::tokens_toml(dir.path(), &[("noc", NOC, r#"["*"]"#, "read")]);
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\ntls_cert = \"server.pem\"\ntls_key = \"server.key\"\n{tokens}"
        ),
    )
    .unwrap();
    let check = Command::new(env!("CARGO_BIN_EXE_serialgate"))
        .arg("check-config")
        .arg(&config)
        .output()
        .await
        .unwrap();
    let shown = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{shown}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(shown.contains("http: https://127.0.0.1:0/mcp"), "{shown}");
    let tls_line = shown
        .lines()
        .find(|l| l.starts_with("tls: "))
        .expect(&shown);
    assert!(
        tls_line.starts_with("tls: CN=localhost, O=first, expires ")
            && (tls_line.contains("(in 1 day)") || tls_line.contains("(in 2 days)")),
        "{tls_line}"
    );
    assert!(tls_line.contains(&cert.display().to_string()), "{tls_line}");

    // The key readable by the group: refused at start, with the fix.
    chmod(&key, 0o640);
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &[]);
    let status = daemon.exit().await;
    assert!(!status.success(), "{status:?}");
    let said = daemon.stderr.rest().await.join("\n");
    assert!(
        said.contains("server.tls_key") && said.contains("chmod 600"),
        "{said}"
    );
    let check = Command::new(env!("CARGO_BIN_EXE_serialgate"))
        .arg("check-config")
        .arg(&config)
        .output()
        .await
        .unwrap();
    assert!(!check.status.success());
    assert!(String::from_utf8_lossy(&check.stderr).contains("mode 640"));

    // A private key that another user owns (and so may replace): refused
    // too. Only root can give a file away.
    chmod(&key, 0o600);
    if nix::unistd::geteuid().is_root() {
        let nobody = nix::unistd::Uid::from_raw(65534);
        nix::unistd::chown(&key, Some(nobody), None).unwrap();
        let check = Command::new(env!("CARGO_BIN_EXE_serialgate"))
            .arg("check-config")
            .arg(&config)
            .output()
            .await
            .unwrap();
        let said = String::from_utf8_lossy(&check.stderr);
        assert!(!check.status.success(), "{said}");
        assert!(
            said.contains("belongs to uid 65534") && said.contains("chown 0"),
            "{said}"
        );
    }

    // Beyond loopback without TLS: refused unless the config says why.
    std::fs::write(
        &config,
        format!("[server]\nlisten = \"0.0.0.0:0\"\n{tokens}"),
    )
    .unwrap();
    let check = Command::new(env!("CARGO_BIN_EXE_serialgate"))
        .arg("check-config")
        .arg(&config)
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&check.stderr);
    assert!(
        !check.status.success() && said.contains("needs TLS"),
        "{said}"
    );
}

/// The base64 SHA-256 of `cert`'s public key (its SubjectPublicKeyInfo),
/// as Chromium's `--ignore-certificate-errors-spki-list` names one.
fn spki_hash(cert: &Path) -> String {
    use base64::Engine;
    use sha2::Digest;
    let out = std::process::Command::new("openssl")
        .args(["x509", "-noout", "-pubkey", "-in"])
        .arg(cert)
        .output()
        .expect("run openssl");
    assert!(out.status.success());
    let spki = rustls_pki_types::SubjectPublicKeyInfoDer::from_pem_slice(&out.stdout)
        .expect("a PEM public key");
    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(spki.as_ref()))
}

#[tokio::test]
async fn the_web_view_over_https_signs_in_and_types_in_chromium_trusting_only_the_test_certificate()
{
    if !have_openssl() {
        return;
    }
    if !serialgate_testkit::browser::available() {
        skipped("chromedriver and chromium are not installed (.ci/run installs them)");
        return;
    }
    use serialgate_testkit::browser;
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    let (cert, key) = ca.issue("server", "first");
    let site = site(dir.path(), &cert, &key).await;
    let base = site.base.clone();

    // A browser that trusts nothing of this gets Chromium's warning, not
    // the sign-in form.
    let untrusting = base.clone();
    browser::session(move |browser| async move {
        browser.goto(&format!("{untrusting}/web/signin")).await;
        let form = browser
            .eval("return document.querySelector('#token') !== null")
            .await;
        assert_eq!(form, serde_json::json!(false), "the page loaded untrusted");
    })
    .await;

    // Pinned to the test certificate's key only (no wholesale
    // --ignore-certificate-errors): the whole view works over https and
    // wss.
    let pin = format!("--ignore-certificate-errors-spki-list={}", spki_hash(&cert));
    browser::session_with(&[pin], move |browser| async move {
        browser.sign_in(&base, NOC).await;
        browser
            .until(
                "const r = document.querySelector('tr[data-port=\"sw1\"]'); return r ? r.dataset.state : '';",
                "open",
            )
            .await;
        assert_eq!(
            browser.eval("return location.protocol").await,
            serde_json::json!("https:")
        );
        browser.goto(&format!("{base}/web/console/sw1")).await;
        browser.until_text("#events", "attached as noc").await;
        browser.type_keys("\r").await;
        browser.until_screen("SW1>").await;
        browser.type_keys("show clock\r").await;
        browser.until_screen("UTC").await;
    })
    .await;
    drop(site);
}
