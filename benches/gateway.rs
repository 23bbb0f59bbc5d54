//! End-to-end latency and throughput through the real `serialgate` binary.
//!
//! A simulated Cisco switch runs in this process on a pseudo-terminal
//! (`sim::spawn`); a temporary config names it as port `sw1` (preset
//! `cisco-ios`); `serialgate serve` runs as a child process and is driven
//! over MCP stdio by [`GateClient`], exactly as an agent's client would. The
//! session wakes the console and enters privileged mode (`enable`, password
//! `cisco`), then measures, each call timed at the client (wall clock):
//!
//! - `rtt`: `send_command {"command": "show clock"}` — median, p95, p99, min
//!   (target: median ≤ 2 ms);
//! - `noop`: `list_presets`, a call without port I/O — the MCP round-trip
//!   floor; `rtt - noop` is the gateway's own latency for a command. As
//!   `list_presets` answers with several KB of JSON, `status` (a small
//!   answer, no device I/O either) is measured as a second floor;
//! - `policy`: `show clock` on a second switch whose port is under the
//!   `guarded` command policy, timed in turn with the first: what judging
//!   adds to an allowed command (target: under 1 ms);
//! - `paged`: `show running-config` at `terminal length 24` (about 87
//!   `--More--` pages, each answered with a space by the gateway); the output
//!   must equal `sim::cisco::running_config_lines()` exactly;
//! - `bulk`: `terminal length 0`, then `show tech-support` (~4 MB) in one
//!   `send_command` with `max_output` 16 MiB, in MB/s; every line is checked;
//! - `cancel`: a `read_until_prompt` for a prompt that never comes (timeout
//!   60 s) is cancelled (`notifications/cancelled`): the time from sending
//!   the cancel to `status` counting no wait (polled every millisecond),
//!   and to the next `show clock`'s answer;
//! - `pty`: for context, a plain pty's throughput (bytes written to the
//!   master, read from the slave opened as a serial port, as the gateway's
//!   reader does), without the gateway.
//!
//! It prints figures, never asserts a speed, and ends with one JSON line of
//! all of them (quoted by BENCHMARKS.md). A wrong output panics: it would
//! make the figure meaningless.
//!
//! Run (the release binary must exist first):
//!
//! ```text
//! cargo build --release && cargo bench --bench gateway
//! cargo bench --bench gateway -- --quick     # or SERIALGATE_BENCH_QUICK=1
//! ```
//!
//! `cargo bench` usually builds the `serialgate` binary too (benches get
//! `CARGO_BIN_EXE_serialgate`), but not in every invocation (e.g. a bench
//! executable run by hand after the sources changed), so the bench looks for
//! the binary next to itself (`target/release/serialgate` when built in the
//! bench profile), warns if it is older than the sources or a debug build,
//! and exits non-zero with the build command if it is missing.
//! `SERIALGATE_BIN=/path/to/serialgate` overrides the lookup.

use serialgate_testkit::binary;

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile};
use serialgate_testkit::client::{GateClient, Outcome};
use tokio::io::AsyncReadExt;
use tokio_serial::SerialPortBuilderExt;

/// Median target of `rtt`, ms.
const RTT_TARGET_MS: f64 = 2.0;
/// Calls before timing starts (connection warm-up, allocator, caches).
const WARMUP: usize = 20;
/// Largest inline output (the gateway's limit).
const MAX_OUTPUT: u64 = 16 << 20;
/// Bytes moved through the plain pty.
const PTY_BYTES: usize = 16 << 20;

fn main() -> ExitCode {
    let quick = std::env::args().any(|a| a == "--quick")
        || std::env::var("SERIALGATE_BENCH_QUICK").is_ok_and(|v| v == "1");
    let binary = match binary::bench_binary() {
        Ok(binary) => binary,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run(&binary, quick)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gateway bench failed: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(binary: &Path, quick: bool) -> anyhow::Result<()> {
    let iterations = if quick { 100 } else { 1000 };
    let (paged_runs, bulk_runs) = if quick { (5, 1) } else { (20, 3) };
    let mut json = serde_json::Map::new();
    json.insert("iterations".into(), json!(iterations));

    let device = sim::spawn(Profile::CiscoIos, None).await?;
    // The same switch again, its port under the `guarded` policy: every
    // line sent there is judged first.
    let guarded = sim::spawn(Profile::CiscoIos, None).await?;
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("serialgate.toml");
    // Retention holds a whole `show tech-support` (~4 MB).
    std::fs::write(
        &config,
        format!(
            "[server]\nretention = \"16MiB\"\n\n[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n\n\
             [ports.sw2]\ndevice = {:?}\npreset = \"cisco-ios\"\npolicy = \"guarded\"\n",
            device.path().display(),
            guarded.path().display()
        ),
    )?;
    let client = GateClient::spawn(binary, Some(&config)).await?;
    println!(
        "simulated switch on {}; {iterations} iterations{}",
        device.path().display(),
        if quick { " (quick)" } else { "" }
    );
    println!();

    call(&client, "connect", json!({"port": "sw1"})).await?;
    call(&client, "send_text", json!({"text": ""})).await?;
    call(&client, "read_until_prompt", json!({"timeout": 5})).await?;
    call(&client, "send_text", json!({"text": "enable"})).await?;
    call(
        &client,
        "read_until_prompt",
        json!({"prompt": "Password:", "timeout": 5}),
    )
    .await?;
    call(
        &client,
        "send_text",
        json!({"text": sim::cisco::ENABLE_PASSWORD}),
    )
    .await?;
    let woke = call(&client, "read_until_prompt", json!({"timeout": 5})).await?;
    anyhow::ensure!(
        woke["prompt_text"]
            .as_str()
            .is_some_and(|p| p.contains("SW1#")),
        "not in privileged mode: {woke}"
    );

    // rtt: one short command and its reply.
    let clock = json!({"command": "show clock"});
    let rtt = timed(
        iterations,
        async || call(&client, "send_command", clock.clone()).await,
        |r| {
            anyhow::ensure!(
                r["matched"] == true && r["output"].as_str().is_some_and(|o| o.contains("UTC")),
                "show clock: {r}"
            );
            Ok(())
        },
    )
    .await?;
    // noop: calls without port I/O, the MCP round trip alone. list_presets
    // answers with every preset (several KB of JSON); status with a small
    // object: the smaller floor is the fairer one.
    let mut presets_bytes = 0;
    let noop = timed(
        iterations,
        async || call(&client, "list_presets", json!({})).await,
        |r| {
            anyhow::ensure!(r.is_object(), "list_presets: {r}");
            presets_bytes = r.to_string().len();
            Ok(())
        },
    )
    .await?;
    let mut status_bytes = 0;
    let status = timed(
        iterations,
        async || call(&client, "status", json!({})).await,
        |r| {
            anyhow::ensure!(r["state"] == "open", "status: {r}");
            status_bytes = r.to_string().len();
            Ok(())
        },
    )
    .await?;
    println!(
        "{:<34} {:>8} {:>8} {:>8} {:>8}",
        "call (ms, wall time at the client)", "median", "p95", "p99", "min"
    );
    let noop_name = format!("noop: list_presets ({presets_bytes} B)");
    let status_name = format!("noop: status ({status_bytes} B)");
    for (name, s) in [
        ("rtt: send_command show clock", &rtt),
        (noop_name.as_str(), &noop),
        (status_name.as_str(), &status),
    ] {
        println!(
            "{name:<34} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
            s.median, s.p95, s.p99, s.min
        );
    }
    let own = rtt.median - noop.median;
    let own_status = rtt.median - status.median;
    println!(
        "gateway's own latency for a command (rtt - noop, medians): {own:.3} ms vs list_presets, {own_status:.3} ms vs status"
    );
    println!(
        "rtt median {:.3} ms vs target ≤ {RTT_TARGET_MS} ms: {}",
        rtt.median,
        if rtt.median <= RTT_TARGET_MS {
            "meets"
        } else {
            "ABOVE target"
        }
    );
    println!();
    rtt.record(&mut json, "rtt");
    noop.record(&mut json, "noop");
    status.record(&mut json, "noop_status");
    json.insert("rtt_minus_noop_ms".into(), json!(round3(own)));
    json.insert("rtt_minus_status_ms".into(), json!(round3(own_status)));

    // paged: show running-config through ~87 --More-- pages.
    let expected = sim::cisco::running_config_lines();
    let mut pages = 0;
    let run_config =
        json!({"command": "show running-config", "timeout": 60, "max_output": MAX_OUTPUT});
    let paged = timed(paged_runs, async || call(&client, "send_command", run_config.clone()).await, |r| {
        anyhow::ensure!(r["matched"] == true, "show running-config did not reach the prompt: {r}");
        let lines: Vec<&str> = r["output"].as_str().unwrap_or_default().lines().collect();
        if lines != expected {
            let first = lines.iter().zip(&expected).position(|(a, b)| a != b);
            panic!(
                "show running-config: {} lines, {} expected; first difference at line {first:?}: {:?} vs {:?}",
                lines.len(),
                expected.len(),
                first.map(|i| lines[i]),
                first.map(|i| &expected[i])
            );
        }
        pages = r["auto_replies"].as_u64().unwrap_or(0);
        Ok(())
    })
    .await?;
    println!(
        "paged: show running-config, {} lines, {pages} pages answered (--More-- → space): median {:.1} ms, min {:.1} ms ({paged_runs} runs, output checked)",
        expected.len(),
        paged.median,
        paged.min
    );
    json.insert("paged_lines".into(), json!(expected.len()));
    json.insert("paged_pages".into(), json!(pages));
    json.insert("paged_median_ms".into(), json!(round3(paged.median)));
    json.insert("paged_min_ms".into(), json!(round3(paged.min)));

    // cancel: a wait that would last 60 s, cancelled.
    let cancel_runs = if quick { 5 } else { 20 };
    let (mut ended, mut answered) = (Vec::new(), Vec::new());
    for _ in 0..cancel_runs {
        let (end, answer) = cancelled_wait(&client).await?;
        ended.push(end);
        answered.push(answer);
    }
    let (ended, answered) = (Stats::of(ended), Stats::of(answered));
    println!(
        "cancel: a 60 s wait cancelled ends (status counts it gone) after median {:.3} ms, max {:.3} ms; \
         the next show clock answers after median {:.3} ms, max {:.3} ms ({cancel_runs} runs)",
        ended.median, ended.max, answered.median, answered.max
    );
    json.insert("cancel_ended_median_ms".into(), json!(round3(ended.median)));
    json.insert("cancel_ended_max_ms".into(), json!(round3(ended.max)));
    json.insert(
        "cancel_answered_median_ms".into(),
        json!(round3(answered.median)),
    );
    json.insert("cancel_answered_max_ms".into(), json!(round3(answered.max)));

    // bulk: one ~4 MB output without paging.
    let off = call(
        &client,
        "send_command",
        json!({"command": "terminal length 0"}),
    )
    .await?;
    anyhow::ensure!(off["matched"] == true, "terminal length 0: {off}");
    let mut bytes = 0;
    let tech = json!({"command": "show tech-support", "timeout": 120, "max_output": MAX_OUTPUT});
    let bulk = timed(
        bulk_runs,
        async || call(&client, "send_command", tech.clone()).await,
        |r| {
            anyhow::ensure!(
                r["matched"] == true && r["output_truncated"] == false,
                "show tech-support: matched {} truncated {}",
                r["matched"],
                r["output_truncated"]
            );
            let output = r["output"].as_str().unwrap_or_default();
            let mut count = 0;
            // Clean output drops trailing whitespace; the lines are padded.
            for (i, line) in output.lines().enumerate() {
                assert_eq!(
                    line,
                    sim::cisco::tech_support_line(i + 1).trim_end(),
                    "show tech-support line {}",
                    i + 1
                );
                count += 1;
            }
            assert_eq!(
                count,
                sim::cisco::TECH_SUPPORT_LINES,
                "show tech-support line count"
            );
            // Raw bytes over the line: lines plus CR LF (what the pty moved).
            bytes = r["end_cursor"].as_u64().unwrap_or(0) - r["start_cursor"].as_u64().unwrap_or(0);
            Ok(())
        },
    )
    .await?;
    let bulk_mbps = bytes as f64 / (bulk.median / 1e3) / 1e6;
    println!(
        "bulk: show tech-support, {} lines, {bytes} bytes raw in one send_command: median {:.0} ms = {bulk_mbps:.1} MB/s ({bulk_runs} runs, every line checked)",
        sim::cisco::TECH_SUPPORT_LINES,
        bulk.median
    );
    json.insert("bulk_bytes".into(), json!(bytes));
    json.insert("bulk_median_ms".into(), json!(round3(bulk.median)));
    json.insert("bulk_mbps".into(), json!(round3(bulk_mbps)));

    // policy: what judging costs an allowed command, sw1 and sw2 timed
    // in turn so that both see the same machine (last: it makes sw2 the
    // current connection).
    let (plain, judged) = policy_cost(&client, iterations).await?;
    println!(
        "policy: send_command show clock, median {:.3} ms without a policy, {:.3} ms under guarded: judging adds {:.3} ms (target < 1 ms)",
        plain.median,
        judged.median,
        judged.median - plain.median
    );
    plain.record(&mut json, "policy_off");
    judged.record(&mut json, "policy_guarded");
    json.insert(
        "policy_added_ms".into(),
        json!(round3(judged.median - plain.median)),
    );

    client.close().await?;
    device.close().await;
    guarded.close().await;

    // pty: the transport's own ceiling, for context.
    let pty_mbps = pty_throughput().await?;
    println!(
        "pty: {} MiB master → slave (read as a serial port): {pty_mbps:.1} MB/s",
        PTY_BYTES >> 20
    );
    json.insert("pty_mbps".into(), json!(round3(pty_mbps)));
    println!();
    println!("{}", Value::Object(json));
    Ok(())
}

/// Calls a tool; an error result is an error.
async fn call(client: &GateClient, tool: &str, args: Value) -> anyhow::Result<Value> {
    match client.call(tool, args).await? {
        Outcome::Ok(v) => Ok(v),
        Outcome::Err(e) => anyhow::bail!("{tool}: {e}"),
    }
}

/// Call times in ms.
struct Stats {
    median: f64,
    p95: f64,
    p99: f64,
    min: f64,
    max: f64,
}

impl Stats {
    fn of(mut ms: Vec<f64>) -> Stats {
        ms.sort_by(f64::total_cmp);
        // Nearest rank: the smallest value with at least q of the samples at
        // or below it.
        let rank = |q: f64| ms[((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1];
        Stats {
            median: rank(0.5),
            p95: rank(0.95),
            p99: rank(0.99),
            min: ms[0],
            max: ms[ms.len() - 1],
        }
    }

    fn record(&self, json: &mut serde_json::Map<String, Value>, name: &str) {
        for (k, v) in [
            ("median", self.median),
            ("p95", self.p95),
            ("p99", self.p99),
            ("min", self.min),
        ] {
            json.insert(format!("{name}_{k}_ms"), json!(round3(v)));
        }
    }
}

/// The number of waiting calls `status` counts.
async fn active_waits(client: &GateClient) -> anyhow::Result<u64> {
    let status = call(client, "status", json!({})).await?;
    status["active_waits"]
        .as_u64()
        .ok_or_else(|| anyhow::anyhow!("status without active_waits: {status}"))
}

/// Polls [`active_waits`] every millisecond until it is `want`, for at
/// most 20 s.
async fn until_waits(client: &GateClient, want: u64) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = active_waits(client).await?;
        if now == want {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{now} waits after 20 s, {want} awaited"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Starts a 60 s wait for a prompt that never comes, cancels it once
/// `status` counts it, and returns the ms from the cancel to `status`
/// counting it gone and to the next `show clock`'s answer.
async fn cancelled_wait(client: &GateClient) -> anyhow::Result<(f64, f64)> {
    let mut params = rmcp::model::CallToolRequestParams::new("read_until_prompt");
    if let Value::Object(map) = json!({"prompt": "never-appears#", "timeout": 60}) {
        params = params.with_arguments(map);
    }
    let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(params));
    let handle = client
        .peer()
        .send_cancellable_request(request, rmcp::service::PeerRequestOptions::no_options())
        .await?;
    until_waits(client, 1).await?;
    let cancelled = Instant::now();
    handle.cancel(Some("bench".into())).await?;
    until_waits(client, 0).await?;
    let ended = cancelled.elapsed().as_secs_f64() * 1e3;
    let clock = call(client, "send_command", json!({"command": "show clock"})).await?;
    let answered = cancelled.elapsed().as_secs_f64() * 1e3;
    anyhow::ensure!(
        clock["matched"] == true,
        "show clock after a cancel: {clock}"
    );
    Ok((ended, answered))
}

/// Runs `f` a few times untimed (at most [`WARMUP`], at least once), then
/// `n` times, each timed; `check` judges every result outside the timing.
/// `show clock` on sw1 (no policy) and on sw2 (`guarded`), one after the
/// other `n` times on their own connections; their times.
async fn policy_cost(client: &GateClient, n: usize) -> anyhow::Result<(Stats, Stats)> {
    call(client, "connect", json!({"port": "sw2"})).await?;
    call(
        client,
        "send_text",
        json!({"text": "", "connection": "sw2"}),
    )
    .await?;
    call(
        client,
        "read_until_prompt",
        json!({"timeout": 5, "connection": "sw2"}),
    )
    .await?;
    let (mut plain, mut judged) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..WARMUP + n {
        for (connection, times) in [("sw1", &mut plain), ("sw2", &mut judged)] {
            let args = json!({"command": "show clock", "connection": connection});
            let started = Instant::now();
            let r = call(client, "send_command", args).await?;
            let ms = started.elapsed().as_secs_f64() * 1e3;
            anyhow::ensure!(
                r["matched"] == true && r["output"].as_str().is_some_and(|o| o.contains("UTC")),
                "show clock on {connection}: {r}"
            );
            if i >= WARMUP {
                times.push(ms);
            }
        }
    }
    Ok((Stats::of(plain), Stats::of(judged)))
}

async fn timed(
    n: usize,
    mut f: impl AsyncFnMut() -> anyhow::Result<Value>,
    mut check: impl FnMut(Value) -> anyhow::Result<()>,
) -> anyhow::Result<Stats> {
    for _ in 0..WARMUP.min(n).max(1) {
        check(f().await?)?;
    }
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let result = f().await?;
        ms.push(started.elapsed().as_secs_f64() * 1e3);
        check(result)?;
    }
    Ok(Stats::of(ms))
}

/// MB/s of [`PTY_BYTES`] written to a pty master and read from its slave,
/// opened as a serial port the way the gateway opens a device.
async fn pty_throughput() -> anyhow::Result<f64> {
    let pty = sim::pty::Pty::open()?;
    let mut slave =
        tokio_serial::new(pty.slave_path().to_string_lossy(), 9600).open_native_async()?;
    let data: Vec<u8> = (0..PTY_BYTES)
        .map(|i| b"0123456789abcdef\r\n"[i % 18])
        .collect();
    let started = Instant::now();
    let reader = async {
        let mut buf = vec![0u8; 64 * 1024];
        let mut got = 0;
        while got < PTY_BYTES {
            match slave.read(&mut buf).await? {
                0 => anyhow::bail!("pty closed after {got} bytes"),
                n => got += n,
            }
        }
        Ok(())
    };
    let (written, read) = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::join!(pty.write_all(&data), reader)
    })
    .await?;
    written?;
    read?;
    Ok(PTY_BYTES as f64 / started.elapsed().as_secs_f64() / 1e6)
}

fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}
