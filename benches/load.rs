//! The load bench: many talking devices, many MCP sessions over HTTP,
//! nothing lost, with its figures (commands/s, latencies, the daemon's peak
//! RSS and CPU). What a run does and checks is in the test kit's `load`
//! module, which `tests/testsuite/load.rs` runs in a short version.
//!
//! ```text
//! cargo build --release && cargo bench --bench load            # 64 ports, 16 sessions, 60 s
//! cargo bench --bench load -- --quick                          # 10 s
//! cargo bench --bench load -- --ports 32 --sessions 8 --secs 20 --rate 500
//! ```
//!
//! `SERIALGATE_BIN=/path/to/serialgate` picks the binary measured (default:
//! the one next to this bench executable).

use std::time::Duration;

use serialgate_testkit::binary::bench_binary;
use serialgate_testkit::load::{LoadParams, run_load};

/// The value after `--name` on the command line.
fn arg<T: std::str::FromStr>(name: &str) -> Option<T> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1)?.parse().ok()
}

fn main() -> std::process::ExitCode {
    let quick = std::env::args().any(|a| a == "--quick")
        || std::env::var("SERIALGATE_BENCH_QUICK").is_ok_and(|v| v == "1");
    let params = LoadParams {
        ports: arg("--ports").unwrap_or(64),
        sessions: arg("--sessions").unwrap_or(16),
        duration: Duration::from_secs(arg("--secs").unwrap_or(if quick { 10 } else { 60 })),
        lines_per_sec: arg("--rate").unwrap_or(200),
    };
    let binary = match bench_binary() {
        Ok(binary) => binary,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run_load(&binary, &params)) {
        Ok(report) => {
            report.print();
            println!("{}", report.json());
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("load bench failed: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
