//! What judging costs a person typing under a command policy: the round
//! trip of a typed line through a token's console (the WebSocket door) to
//! the simulated Cisco switch and back, with the token under `locked`
//! (each line judged at Enter, after the device's echo of it) and under
//! `none` (which judges nothing: the keys go straight through).
//!
//! For each sample the bench types a unique line and its Enter in one data
//! frame (`sample000123\r`, a command the switch answers `% Invalid
//! input`, which no policy refuses) and times the moment the switch's line
//! end after it (`sample000123\r\n`) reaches the console: under `locked`
//! that includes the wait for the echo and the judging. It prints figures,
//! never asserts a speed, and ends with one JSON line of all of them
//! (quoted by BENCHMARKS.md).
//!
//! Run (the release binary must exist first):
//!
//! ```text
//! cargo build --release && cargo bench --bench typing
//! cargo bench --bench typing -- --quick     # or SERIALGATE_BENCH_QUICK=1
//! ```

use std::process::ExitCode;
use std::time::Instant;

use serde_json::json;
use serialgate_sim::{self as sim, Profile};
use serialgate_testkit::binary;
use serialgate_testkit::console::ConsoleConn;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use serialgate_testkit::spread::{Spread, spread};

/// Samples before timing starts.
const WARMUP: usize = 20;
const LOCKED: &str = "locked-secret-0123456789";
const OPEN: &str = "open-secret-0123456789";

fn main() -> ExitCode {
    let quick = std::env::args().any(|a| a == "--quick")
        || std::env::var("SERIALGATE_BENCH_QUICK").is_ok_and(|v| v == "1");
    if let Err(e) = binary::bench_binary() {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(run(if quick { 100 } else { 1000 }));
    ExitCode::SUCCESS
}

async fn run(samples: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("sw1");
    let _sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
        .await
        .expect("simulated switch");
    let tokens = daemon::tokens_toml(
        dir.path(),
        &[
            ("locked", LOCKED, r#"["*"]"#, "write"),
            ("open", OPEN, r#"["*"]"#, "write"),
        ],
    );
    let tokens = daemon::with_token_keys(&tokens, "locked", "policy = \"locked\"\n");
    let tokens = daemon::with_token_keys(&tokens, "open", "policy = \"none\"\n");
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
    let url = daemon.http_url().await;
    notify.expect("READY=1").await;
    let console_url = format!(
        "{}/ports/sw1/console",
        url.trim_end_matches("/mcp").replacen("http://", "ws://", 1)
    );

    println!("typed line -> the switch's line end back at the console, {samples} samples (µs)");
    println!("{:>8} {:>9} {:>9} {:>9}", "policy", "p50", "p99", "max");
    let mut json = serde_json::Map::new();
    json.insert("samples".into(), json!(samples));
    for (policy, secret) in [("none", OPEN), ("locked", LOCKED)] {
        let figures = measure(&console_url, secret, samples).await;
        println!(
            "{policy:>8} {:>9.0} {:>9.0} {:>9.0}",
            figures.p50, figures.p99, figures.max
        );
        json.insert(
            policy.to_owned(),
            json!({"p50_us": figures.p50, "p99_us": figures.p99, "max_us": figures.max}),
        );
    }
    println!();
    println!("{}", serde_json::Value::Object(json));
}

/// Types `samples` lines through a console opened with `secret`.
async fn measure(url: &str, secret: &str, samples: usize) -> Spread {
    let (mut conn, attached) = ConsoleConn::attach_ws(
        url,
        Some(secret),
        "sw1",
        "attach",
        json!({"replay_lines": 0}),
    )
    .await
    .expect("the console WebSocket");
    assert_eq!(attached["writing"], true, "{attached}");
    let mut times = Vec::with_capacity(samples);
    for i in 0..WARMUP + samples {
        let line = format!("sample{i:06}");
        let sent = Instant::now();
        conn.send_data(format!("{line}\r").as_bytes()).await;
        conn.until_output(&format!("{line}\r\n")).await;
        let took = sent.elapsed().as_secs_f64() * 1e6;
        // Keep the search short: drop what was matched.
        conn.output.clear();
        if i >= WARMUP {
            times.push(took);
        }
    }
    conn.send_json(&json!({"type": "release"})).await;
    while !conn.until_json("holder").await["holder"].is_null() {}
    spread(times)
}
