//! How long a file transfer takes, and how close it comes to the line's
//! limit: an image sent by XMODEM-1K with `send_file` to the simulated
//! ROMMON (`xmodem -c -s BAUD`), once on a plain pseudo-terminal (which
//! moves data at memory speed: the daemon's own cost) and once with the
//! simulator taking the bytes no faster than a line at BAUD carries them
//! (10 bits a byte, as a UART), which is what a real console would do.
//! Reported per row: seconds, payload bytes per second, the line-limited
//! time (all bytes sent at BAUD), and efficiency (payload per second over
//! the line's bytes per second). It prints figures, never asserts a
//! speed, and ends with one JSON line of all of them (quoted by
//! BENCHMARKS.md).
//!
//! Run (the release binary must exist first):
//!
//! ```text
//! cargo build --release && cargo bench --bench transfer
//! cargo bench --bench transfer -- --quick     # or SERIALGATE_BENCH_QUICK=1
//! ```

use std::process::ExitCode;
use std::time::Instant;

use serde_json::{Value, json};
use serialgate_sim::{Profile, SimOptions};
use serialgate_testkit::binary;
use serialgate_testkit::client::GateClient;

fn main() -> ExitCode {
    let quick = std::env::args().any(|a| a == "--quick")
        || std::env::var("SERIALGATE_BENCH_QUICK").is_ok_and(|v| v == "1");
    let binary = match binary::bench_binary() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(run(&binary, quick));
    ExitCode::SUCCESS
}

/// One transfer: ROMMON at `baud` (paced or not), `len` bytes.
async fn one(binary: &std::path::Path, baud: u32, paced: bool, len: usize) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("sw1");
    let files = dir.path().join("files");
    std::fs::create_dir(&files).expect("files dir");
    let image: Vec<u8> = (0..len).map(|i| (i * 31 + i / 977) as u8).collect();
    std::fs::write(files.join("img.bin"), &image).expect("image");
    let options = SimOptions {
        rommon: true,
        pace: paced,
        ..SimOptions::default()
    };
    let _sim = serialgate_sim::spawn_with(Profile::CiscoIos, Some(link.clone()), options)
        .await
        .expect("simulated device");
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nfiles_dir = {files:?}\n[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n",
            link.display()
        ),
    )
    .expect("config");
    let client = GateClient::spawn(binary, Some(&config))
        .await
        .expect("serialgate");
    let call = async |tool: &str, args: Value| client.call(tool, args).await.expect("MCP").ok();
    call("connect", json!({"port": "sw1"})).await;
    call("send_text", json!({"text": ""})).await;
    call("read_until_prompt", json!({"prompt": "rommon 1 > "})).await;
    call(
        "send_text",
        json!({"text": format!("xmodem -c -s {baud} img.bin")}),
    )
    .await;
    call("read_until_prompt", json!({"prompt": "baud now.\r\n"})).await;
    let started = Instant::now();
    let sent = call(
        "send_file",
        json!({"file": "img.bin", "protocol": "xmodem-1k", "transfer_baud": baud}),
    )
    .await;
    let wall = started.elapsed().as_secs_f64();
    let _ = client.close().await;
    let seconds = sent["seconds"].as_f64().unwrap_or(wall);
    let blocks = sent["blocks"].as_u64().unwrap_or(0);
    // Everything on the line at `baud`: 1029 bytes a block and an EOT.
    let line_bytes = blocks * 1029 + 1;
    let limit = line_bytes as f64 * 10.0 / f64::from(baud);
    json!({
        "baud": baud,
        "paced": paced,
        "bytes": len,
        "seconds": seconds,
        "bytes_per_second": (len as f64 / seconds).round(),
        "line_limited_seconds": (limit * 1000.0).round() / 1000.0,
        "efficiency": sent["efficiency"],
        "framing_efficiency": sent["framing_efficiency"],
        "retries": sent["retries"],
    })
}

async fn run(binary: &std::path::Path, quick: bool) {
    let paced_len = if quick { 32 * 1024 } else { 256 * 1024 };
    let rows = [
        (115_200, false, 1 << 20),
        (115_200, true, paced_len),
        (57_600, true, paced_len / 2),
    ];
    println!("send_file xmodem-1k to ROMMON (xmodem -c -s BAUD)");
    println!(
        "{:>7} {:>7} {:>9} {:>9} {:>12} {:>11} {:>10}",
        "baud", "paced", "bytes", "seconds", "bytes/s", "line-limit", "efficiency"
    );
    let mut all = Vec::new();
    for (baud, paced, len) in rows {
        let r = one(binary, baud, paced, len).await;
        println!(
            "{:>7} {:>7} {:>9} {:>9.3} {:>12} {:>10.3}s {:>10}",
            baud,
            paced,
            len,
            r["seconds"].as_f64().unwrap_or(0.0),
            r["bytes_per_second"],
            r["line_limited_seconds"].as_f64().unwrap_or(0.0),
            r["efficiency"]
        );
        all.push(r);
    }
    println!("{}", json!({"transfer": all}));
}
