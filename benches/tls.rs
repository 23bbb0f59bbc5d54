//! What TLS costs an agent on the HTTP listener: `send_command` round
//! trips over HTTPS against plain HTTP, and what opening a session costs
//! on each.
//!
//! Two release `serialgate serve` daemons run side by side, alike but for
//! the listener: one on `http://127.0.0.1`, one on `https://127.0.0.1`
//! with a certificate from a CA the bench makes with the `openssl` CLI.
//! Each holds a simulated Cisco switch of its own (port `sw1`, preset
//! `cisco-ios`). The same client talks to both
//! ([`serialgate_testkit::mcp_post`]: one kept-alive HTTP/1.1 connection,
//! rustls with ring trusting only the test CA), its calls alternating
//! between the two so that drift on the machine falls on both alike.
//!
//! - `rtt`: `send_command {"command": "show clock"}` in a session that
//!   has connected to `sw1`, each answer checked;
//! - `session`: a new connection (and its TLS handshake), `initialize`
//!   and `notifications/initialized`, then one `list_ports`.
//!
//! Reported: p50, p99 and max, ms. It prints figures, never asserts a
//! speed, and ends with one JSON line of all of them (quoted by
//! BENCHMARKS.md).
//!
//! Run (the release binary must exist first; the `openssl` CLI must be
//! installed):
//!
//! ```text
//! cargo build --release && cargo bench --bench tls
//! cargo bench --bench tls -- --quick     # or SERIALGATE_BENCH_QUICK=1
//! ```

use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile};
use serialgate_testkit::binary;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use serialgate_testkit::mcp_post::PostClient;
use serialgate_testkit::spread::{Spread, spread};
use serialgate_testkit::tls::{TestCa, client_config};

/// Calls on each daemon before timing starts.
const WARMUP: usize = 20;
/// The token both daemons know.
const SECRET: &str = "bench-secret-0123456789abcdef";

fn main() -> ExitCode {
    let quick = std::env::args().any(|a| a == "--quick")
        || std::env::var("SERIALGATE_BENCH_QUICK").is_ok_and(|v| v == "1");
    if let Err(e) = binary::bench_binary() {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    if std::process::Command::new("openssl")
        .arg("version")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        eprintln!("openssl is missing: install the openssl CLI (Debian: openssl)");
        return ExitCode::FAILURE;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (calls, sessions) = if quick { (100, 20) } else { (1000, 200) };
    match runtime.block_on(run(calls, sessions)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tls bench failed: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(calls: usize, sessions: usize) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let ca = TestCa::new(dir.path(), "ca");
    let (cert, key) = ca.issue("server", "bench");
    let tls = client_config(&ca.cert())?;
    let plain = Site::start(dir.path(), "plain", None).await;
    let secure = Site::start(dir.path(), "secure", Some((&cert, &key))).await;
    assert!(plain.url.starts_with("http://"), "{}", plain.url);
    assert!(secure.url.starts_with("https://"), "{}", secure.url);

    let mut on_plain = PostClient::connect(&plain.url, SECRET, None).await?;
    let mut on_secure = PostClient::connect(&secure.url, SECRET, Some(tls.clone())).await?;
    for client in [&mut on_plain, &mut on_secure] {
        client.call("connect", json!({"port": "sw1"})).await?;
    }
    let (mut plain_rtt, mut secure_rtt) = (Vec::new(), Vec::new());
    for i in 0..WARMUP + calls {
        let a = show_clock(&mut on_plain).await?;
        let b = show_clock(&mut on_secure).await?;
        if i >= WARMUP {
            plain_rtt.push(a);
            secure_rtt.push(b);
        }
    }
    let (mut plain_open, mut secure_open) = (Vec::new(), Vec::new());
    for _ in 0..sessions {
        plain_open.push(open_session(&plain.url, None).await?);
        secure_open.push(open_session(&secure.url, Some(tls.clone())).await?);
    }
    let rows = [
        ("rtt http", spread(plain_rtt)),
        ("rtt https", spread(secure_rtt)),
        ("session http", spread(plain_open)),
        ("session https", spread(secure_open)),
    ];
    println!("send_command show clock ({calls} calls) and a new session ({sessions}), ms");
    println!("{:>14} {:>9} {:>9} {:>9}", "what", "p50", "p99", "max");
    for (name, s) in &rows {
        println!("{name:>14} {:>9.3} {:>9.3} {:>9.3}", s.p50, s.p99, s.max);
    }
    println!();
    let mut figures = serde_json::Map::new();
    figures.insert("calls".into(), json!(calls));
    figures.insert("sessions".into(), json!(sessions));
    for (name, s) in &rows {
        let key = name.replace(' ', "_");
        record(&mut figures, &key, s);
    }
    println!("{}", Value::Object(figures));
    Ok(())
}

/// `name_p50_ms`, `name_p99_ms` and `name_max_ms`, to 3 places.
fn record(figures: &mut serde_json::Map<String, Value>, name: &str, s: &Spread) {
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    figures.insert(format!("{name}_p50_ms"), json!(round(s.p50)));
    figures.insert(format!("{name}_p99_ms"), json!(round(s.p99)));
    figures.insert(format!("{name}_max_ms"), json!(round(s.max)));
}

/// One `show clock`, checked, ms.
async fn show_clock(client: &mut PostClient) -> anyhow::Result<f64> {
    let sent = Instant::now();
    let result = client
        .call(
            "send_command",
            json!({"connection": "sw1", "command": "show clock"}),
        )
        .await?;
    let took = sent.elapsed().as_secs_f64() * 1e3;
    let output = result["output"].as_str().unwrap_or_default();
    anyhow::ensure!(
        output.contains("UTC") && result["prompt_matched"] != false,
        "show clock answered {result}"
    );
    Ok(took)
}

/// A new connection and session, then `list_ports`, ms.
async fn open_session(url: &str, tls: Option<Arc<rustls::ClientConfig>>) -> anyhow::Result<f64> {
    let started = Instant::now();
    let mut client = PostClient::connect(url, SECRET, tls).await?;
    let ports = client.call("list_ports", json!({})).await?;
    let took = started.elapsed().as_secs_f64() * 1e3;
    anyhow::ensure!(
        ports.to_string().contains("\"sw1\""),
        "list_ports answered {ports}"
    );
    Ok(took)
}

/// One daemon with its switch, listening on loopback, with TLS when a
/// certificate and key are given.
struct Site {
    url: String,
    _sim: sim::SimHandle,
    _daemon: Daemon,
    _notify: NotifySocket,
}

impl Site {
    async fn start(dir: &Path, name: &str, tls: Option<(&Path, &Path)>) -> Site {
        let dir = dir.join(name);
        std::fs::create_dir(&dir).expect("the site's directory");
        let link = dir.join("sw1");
        let sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
            .await
            .expect("simulated switch");
        let tokens = daemon::tokens_toml(&dir, &[("bench", SECRET, r#"["sw1"]"#, "write")]);
        let tls = tls
            .map(|(cert, key)| format!("tls_cert = {cert:?}\ntls_key = {key:?}\n"))
            .unwrap_or_default();
        let config = dir.join("config.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\n{tls}\n[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n{tokens}",
                link.display().to_string()
            ),
        )
        .expect("write the config");
        let notify = NotifySocket::bind(&dir);
        // Warnings only: the audit trail's lines would be printed by the
        // bench and cost the daemon a write per call.
        let mut command = Daemon::command(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
        command.env("SERIALGATE_LOG", "warn");
        let mut daemon = Daemon::run(command);
        let url = daemon.http_url().await;
        notify.expect("READY=1").await;
        Site {
            url,
            _sim: sim,
            _daemon: daemon,
            _notify: notify,
        }
    }
}
