//! How fast a person at the console sees the device: the latency from a
//! device byte to every watcher's connection, with 1 to 250 people watching
//! one port.
//!
//! A silent simulated device runs in this process on a pseudo-terminal;
//! the release `serialgate serve` holds it as port `sw1` with a console
//! socket; N spies attach over the socket (the attach protocol, frame by
//! frame, as `serialgate console --spy` does). For each sample the bench
//! writes a unique line to the device's side of the pty and times, for each
//! watcher, the moment a data frame carrying it arrives. Reported per N:
//! the latency to the first and to the last watcher of a sample (p50, p99,
//! max), over all samples. It prints figures, never asserts a speed, and
//! ends with one JSON line of all of them (quoted by BENCHMARKS.md).
//!
//! Run (the release binary must exist first):
//!
//! ```text
//! cargo build --release && cargo bench --bench console
//! cargo bench --bench console -- --quick     # or SERIALGATE_BENCH_QUICK=1
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::json;
use serialgate_sim::Profile;
use serialgate_testkit::binary;
use serialgate_testkit::console::{ConsoleConn, ConsoleSite};
use serialgate_testkit::spread::{Spread, spread};
use tokio::sync::mpsc;

/// Samples before timing starts.
const WARMUP: usize = 20;

fn main() -> ExitCode {
    let quick = std::env::args().any(|a| a == "--quick")
        || std::env::var("SERIALGATE_BENCH_QUICK").is_ok_and(|v| v == "1");
    // The console site runs the binary of this profile's directory: check
    // that it exists and is fresh, as the other benches do.
    if let Err(e) = binary::bench_binary() {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(run(quick));
    ExitCode::SUCCESS
}

async fn run(quick: bool) {
    let (counts, samples): (&[usize], usize) = if quick {
        (&[1, 16], 100)
    } else {
        (&[1, 16, 64, 250], 500)
    };
    let mut json = serde_json::Map::new();
    json.insert("samples".into(), json!(samples));
    println!("device byte -> watcher, {samples} samples per row (µs)");
    println!(
        "{:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "watchers", "first p50", "first p99", "last p50", "last p99", "last max", "all p50"
    );
    for &count in counts {
        let figures = measure(count, samples).await;
        println!(
            "{count:>9} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.0}",
            figures.first.p50,
            figures.first.p99,
            figures.last.p50,
            figures.last.p99,
            figures.last.max,
            figures.all_p50
        );
        json.insert(
            format!("watchers_{count}"),
            json!({
                "first_p50_us": figures.first.p50, "first_p99_us": figures.first.p99,
                "last_p50_us": figures.last.p50, "last_p99_us": figures.last.p99,
                "last_max_us": figures.last.max, "all_p50_us": figures.all_p50,
            }),
        );
    }
    println!();
    println!("{}", serde_json::Value::Object(json));
}

/// Latencies of one row.
struct Figures {
    /// From the device byte to the first watcher that had it.
    first: Spread,
    /// From the device byte to the last watcher that had it.
    last: Spread,
    /// The median over every watcher of every sample.
    all_p50: f64,
}

/// The line the device prints for sample `i`.
fn marker(i: usize) -> String {
    format!("sample {i:06}\r\n")
}

async fn measure(count: usize, samples: usize) -> Figures {
    let site = ConsoleSite::start(Profile::Silent).await;
    let total = WARMUP + samples;
    // Each watcher reports (sample, when it arrived) as it reads.
    let (arrived_tx, mut arrived) = mpsc::unbounded_channel::<(usize, Instant)>();
    let mut watchers = Vec::new();
    for _ in 0..count {
        let (mut conn, _) =
            ConsoleConn::attach(&site.socket, "sw1", "spy", json!({"replay_lines": 0})).await;
        let tx = arrived_tx.clone();
        watchers.push(tokio::spawn(async move {
            for i in 0..total {
                conn.until_output(&marker(i)).await;
                // Keep the search short: drop what was matched.
                conn.output.clear();
                if tx.send((i, Instant::now())).is_err() {
                    return;
                }
            }
        }));
    }
    let mut firsts = Vec::new();
    let mut lasts = Vec::new();
    let mut all = Vec::new();
    for i in 0..total {
        let sent = Instant::now();
        site.sim.inject(marker(i).as_bytes()).await;
        let mut times = Vec::with_capacity(count);
        while times.len() < count {
            let (sample, at) = tokio::time::timeout(Duration::from_secs(20), arrived.recv())
                .await
                .expect("every watcher gets the sample within 20 s")
                .expect("the watchers run");
            assert_eq!(sample, i, "a watcher skipped a sample");
            times.push(at.duration_since(sent).as_secs_f64() * 1e6);
        }
        if i >= WARMUP {
            firsts.push(times.iter().copied().fold(f64::INFINITY, f64::min));
            lasts.push(times.iter().copied().fold(0.0, f64::max));
            all.extend(times);
        }
    }
    for watcher in watchers {
        let _ = watcher.await;
    }
    Figures {
        first: spread(firsts),
        last: spread(lasts),
        all_p50: spread(all).p50,
    }
}
