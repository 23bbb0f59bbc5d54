//! serialgate against the peers, side by side, in one run.
//!
//! serialgate, serial-console-mcp (Python, PyPI) and serial-mcp (Rust,
//! crates.io) run as MCP servers over stdio, driven by the same rmcp client
//! (`peers/client.rs`). Each gets its own simulated Cisco switch on a pty
//! (`sim::spawn`, behind a symlink the peers open as their device), started
//! fresh with the server, so no server inherits another's terminal state.
//! Work alternates between the servers (round-robin, the order rotated each
//! round) so that machine drift spreads over all of them. Every result is
//! checked; a wrong one fails the run.
//!
//! - `rtt1`: `show clock` in one call, median and p95 ms;
//! - `rtt2`: the same in two calls (send, then read until the prompt);
//! - `noop`: a call without port I/O (`list_presets`); serialgate's own
//!   latency is `rtt1 - noop`;
//! - `paged`: `show running-config` (2000 lines, 87 `--More--` pages)
//!   answered by the server's auto-reply (serial-mcp has none: the client
//!   answers each page with a `transact`), every line checked in order;
//! - `bulk`: `terminal length 0`, then `show tech-support` (50 000 lines,
//!   4 000 023 bytes), beside a plain reader of the same pty;
//! - `idle`: CPU used over 10 s with the port open and the device silent,
//!   and peak RSS (VmHWM), which is then reset (`/proc/PID/clear_refs`) so
//!   that the peak read after the calls is theirs, not the start's; with
//!   the anonymous memory's peak during `bulk` (sampled) and what stays
//!   resident after the calls, it shows what a large result costs and
//!   whether it is given back;
//! - `scale`: serialgate alone with 1, 16, 64 and 256 ports: idle CPU, RSS,
//!   and `rtt1` on one port while every other port streams at 115200 baud
//!   (the peak reset after the idle window here too).
//!
//! It prints a table and the issue's targets, met or missed, and writes
//! `bench-out/peers.json`. Install the peers first (`peers/install-peers.sh`,
//! into `bench-out/`); a peer that is missing is skipped, with a warning.
//!
//! ```text
//! peers/install-peers.sh
//! cargo build --release && cargo bench --bench peers
//! cargo bench --bench peers -- --quick                 # fewer samples, 3 s idle windows
//! cargo bench --bench peers -- --only rtt,scale        # some phases: rtt paged bulk idle scale
//! ```
//!
//! `SERIALGATE_BIN` picks the serialgate binary (default: the one next to
//! this bench, `target/release/serialgate`), `PEERS_DIR` the peers' folder
//! (default `bench-out/`), `PEERS_OUT` the JSON file.

#[path = "peers/client.rs"]
mod client;
#[path = "peers/procfs.rs"]
mod procfs;
#[path = "peers/servers.rs"]
mod servers;

use serialgate_testkit::binary;
use serialgate_testkit::load::AnonPeak;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile};

use client::McpProc;
use procfs::{CpuSample, reset_peak, vm_kib};
use servers::{Binaries, Kind, PlainReader, Session, output_lines};

/// How long a server is left alone before an idle window opens: past
/// serialgate's one-time work after start (it gives back the pages
/// starting touched 5 s after it is ready, a few ms of CPU once), so that
/// the window measures idling, not the end of starting.
const SETTLE: Duration = Duration::from_secs(6);
/// The targets.
const RTT1_VS_SCM: f64 = 50.0;
/// "Far below serial-mcp's": read here as at least 10×.
const RTT1_VS_SMCP: f64 = 10.0;
const RTT2_VS_SCM: f64 = 4.0;
const PAGED_VS_SCM: f64 = 100.0;
const BULK_VS_PTY: f64 = 1.5;
const IDLE_CPU_PER_PORT: f64 = 0.0005;
const RSS_BASE_MIB: f64 = 12.0;
/// How far above idle + retained the anonymous memory may stay after the
/// calls and still count as given back (the allocator's free lists).
const GIVEN_BACK_SLACK_MIB: f64 = 1.0;
const SCALE_RTT1_MS: f64 = 2.0;
/// "A small fraction of a millisecond": read here as under 0.25 ms.
const OWN_LATENCY_MS: f64 = 0.25;

/// Scale: ports, and the streaming rate of each noisy port (a 115200-baud
/// line kept full: 11 520 bytes/s).
const SCALE_PORTS: [usize; 4] = [1, 16, 64, 256];
const STREAM_BYTES_PER_S: f64 = 11_520.0;

const PHASES: [&str; 5] = ["idle", "rtt", "paged", "bulk", "scale"];

/// How much of everything.
#[derive(Clone, Debug)]
struct Plan {
    quick: bool,
    phases: Vec<String>,
    iterations: usize,
    rounds: usize,
    warmup: usize,
    paged_runs: usize,
    bulk_runs: usize,
    idle: Duration,
    scale_iterations: usize,
}

impl Plan {
    fn from_args() -> anyhow::Result<Plan> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let quick = args.iter().any(|a| a == "--quick")
            || std::env::var("SERIALGATE_BENCH_QUICK").is_ok_and(|v| v == "1");
        let mut phases: Vec<String> = PHASES.iter().map(|p| p.to_string()).collect();
        if let Some(i) = args.iter().position(|a| a == "--only") {
            let list = args
                .get(i + 1)
                .context("--only needs a list, e.g. rtt,scale")?;
            phases = list.split(',').map(str::to_owned).collect();
            for p in &phases {
                anyhow::ensure!(
                    PHASES.contains(&p.as_str()),
                    "unknown phase {p}: {PHASES:?}"
                );
            }
        }
        Ok(if quick {
            Plan {
                quick,
                phases,
                iterations: 40,
                rounds: 2,
                warmup: 5,
                paged_runs: 1,
                bulk_runs: 1,
                idle: Duration::from_secs(3),
                scale_iterations: 50,
            }
        } else {
            Plan {
                quick,
                phases,
                iterations: 200,
                rounds: 4,
                warmup: 20,
                paged_runs: 3,
                bulk_runs: 3,
                idle: Duration::from_secs(10),
                scale_iterations: 200,
            }
        })
    }

    fn has(&self, phase: &str) -> bool {
        self.phases.iter().any(|p| p == phase)
    }
}

fn main() -> ExitCode {
    let plan = match Plan::from_args() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("peers bench: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let (before, now) = procfs::raise_nofile();
    if before != now {
        println!("open-file limit raised from {before} to {now}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run(plan)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("peers bench failed: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Call times in ms, or run times in s.
#[derive(Clone, Copy, Debug)]
struct Stats {
    median: f64,
    p95: f64,
    min: f64,
    n: usize,
}

impl Stats {
    fn of(mut xs: Vec<f64>) -> Stats {
        assert!(!xs.is_empty());
        xs.sort_by(f64::total_cmp);
        // Nearest rank: the smallest value with at least q of the samples
        // at or below it.
        let rank = |q: f64| xs[((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len()) - 1];
        Stats {
            median: rank(0.5),
            p95: rank(0.95),
            min: xs[0],
            n: xs.len(),
        }
    }

    fn json(&self) -> Value {
        json!({"median": round(self.median, 4), "p95": round(self.p95, 4), "min": round(self.min, 4), "n": self.n})
    }
}

/// What one server measured.
#[derive(Default)]
struct Figures {
    rtt1: Vec<f64>,
    rtt2: Vec<f64>,
    noop: Vec<f64>,
    noop_tool: &'static str,
    status: Vec<f64>,
    paged: Vec<f64>,
    paged_pages: u64,
    paged_calls: u64,
    bulk: Vec<f64>,
    bulk_server_ms: Vec<f64>,
    /// CPU seconds per 10 s idle: (schedstat, stat ticks).
    idle_cpu: Option<(f64, f64)>,
    idle_hwm_kib: Option<u64>,
    /// Resident anonymous and file-backed (mostly the program's own code)
    /// memory at the end of the idle window, KiB.
    idle_anon_file_kib: Option<(u64, u64)>,
    idle_retained: Option<u64>,
    /// The peak since the idle window's end, where it is reset (since the
    /// start without the idle phase), KiB.
    load_hwm_kib: Option<u64>,
    /// Resident anonymous and file-backed memory after the workload, KiB,
    /// and the bytes the port retained then.
    after_anon_file_kib: Option<(u64, u64)>,
    after_retained: Option<u64>,
    /// The largest result of the workload (bulk's output), bytes.
    largest_result: u64,
    /// The anonymous memory's peak during the bulk calls, sampled, KiB.
    anon_peak_kib: Option<u64>,
}

fn stats(xs: &[f64]) -> Option<Stats> {
    (!xs.is_empty()).then(|| Stats::of(xs.to_vec()))
}

/// One scale point.
struct ScaleRow {
    ports: usize,
    idle_cpu: (f64, f64),
    idle_hwm_kib: u64,
    idle_rss_kib: u64,
    idle_anon_file_kib: (u64, u64),
    rtt1: Stats,
    streaming_ports: usize,
    stream_bytes_per_s: f64,
    busy_cpu_share: f64,
    retained: u64,
    load_hwm_kib: u64,
}

async fn run(plan: Plan) -> anyhow::Result<()> {
    let workspace_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = std::env::var_os("PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_dir.join("bench-out"));
    let logs = scratch.join("logs");
    std::fs::create_dir_all(logs.join("xdg"))?;
    let out = std::env::var_os("PEERS_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| scratch.join("peers.json"));
    let bins = find_binaries(&scratch)?;
    let machine = machine();
    println!("{}", machine["summary"].as_str().unwrap_or_default());
    let versions = versions(&bins);
    for (k, v) in versions.as_object().into_iter().flatten() {
        println!("  {k}: {}", v.as_str().unwrap_or("?"));
    }
    println!(
        "plan: {} ({} rtt calls per server in {} rounds, {} paged and {} bulk runs, {} s idle windows); phases {:?}; server logs in {}",
        if plan.quick { "quick" } else { "full" },
        plan.iterations,
        plan.rounds,
        plan.paged_runs,
        plan.bulk_runs,
        plan.idle.as_secs(),
        plan.phases,
        logs.display()
    );
    println!();

    let kinds: Vec<Kind> = Kind::ALL
        .into_iter()
        .filter(|k| bins.get(*k).is_some())
        .collect();
    let mut figures: Vec<Figures> = kinds.iter().map(|_| Figures::default()).collect();
    let mut pty_bulk = Vec::new();
    let needs_sessions = ["idle", "rtt", "paged", "bulk"].iter().any(|p| plan.has(p));
    if needs_sessions {
        let mut sessions = Vec::new();
        for &kind in &kinds {
            let s = Session::start(kind, &bins, &logs)
                .await
                .with_context(|| format!("starting {}", kind.name()))?;
            println!("{} running (pid {})", kind.name(), s.proc.pid());
            sessions.push(s);
        }
        if plan.has("idle") {
            idle(&plan, &sessions, &mut figures).await?;
        }
        if plan.has("rtt") {
            rtt(&plan, &sessions, &mut figures).await?;
        }
        if plan.has("paged") {
            paged(&plan, &sessions, &mut figures).await?;
        }
        if plan.has("bulk") {
            pty_bulk = bulk(&plan, &mut sessions, &mut figures).await?;
        }
        for (s, f) in sessions.iter().zip(&mut figures) {
            f.load_hwm_kib = vm_kib(s.proc.pid(), "VmHWM").ok();
            f.after_anon_file_kib = anon_file_kib(s.proc.pid()).ok();
            if s.kind == Kind::Serialgate {
                f.after_retained = Some(retained(&s.proc).await?);
            }
        }
        for s in sessions {
            s.close().await;
        }
    }
    let scale_rows = if plan.has("scale") {
        scale(&plan, &bins, &logs).await?
    } else {
        Vec::new()
    };

    let targets = report(&kinds, &figures, &pty_bulk, &scale_rows);
    let json = to_json(
        &plan,
        machine,
        versions,
        &kinds,
        &figures,
        &pty_bulk,
        &scale_rows,
        &targets,
    );
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&out, serde_json::to_string_pretty(&json)? + "\n")?;
    println!();
    println!("JSON: {}", out.display());
    Ok(())
}

/// `kinds` rotated by `round`: who goes first changes every round.
fn rotation(n: usize, round: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |i| (i + round) % n)
}

/// idle: every server at once (each on its own silent device), CPU over
/// the window, and peak RSS so far (a fresh process with one port open).
async fn idle(plan: &Plan, sessions: &[Session], figures: &mut [Figures]) -> anyhow::Result<()> {
    println!(
        "idle: {} s, port open, device silent, all servers at once",
        plan.idle.as_secs()
    );
    tokio::time::sleep(SETTLE).await;
    let before: Vec<CpuSample> = sessions
        .iter()
        .map(|s| CpuSample::take(s.proc.pid()))
        .collect::<Result<_, _>>()?;
    let started = Instant::now();
    tokio::time::sleep(plan.idle).await;
    let after: Vec<CpuSample> = sessions
        .iter()
        .map(|s| CpuSample::take(s.proc.pid()))
        .collect::<Result<_, _>>()?;
    let per_10s = 10.0 / started.elapsed().as_secs_f64();
    for (i, s) in sessions.iter().enumerate() {
        let (ns, ticks) = before[i].seconds_until(&after[i]);
        figures[i].idle_cpu = Some((ns * per_10s, ticks * per_10s));
        figures[i].idle_hwm_kib = Some(vm_kib(s.proc.pid(), "VmHWM")?);
        figures[i].idle_anon_file_kib = Some(anon_file_kib(s.proc.pid())?);
        if s.kind == Kind::Serialgate {
            figures[i].idle_retained = Some(retained(&s.proc).await?);
        }
        // The workload's peak is measured from here: the start's own
        // (the binary's pages touched before they are given back) is not
        // the workload's.
        reset_peak(s.proc.pid())?;
        println!(
            "  {:<20} {:.6} s CPU per 10 s (stat: {:.2} s), VmHWM {:.1} MiB",
            s.kind.name(),
            ns * per_10s,
            ticks * per_10s,
            mib(figures[i].idle_hwm_kib.unwrap_or(0))
        );
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Op {
    Rtt1,
    Rtt2,
    Noop,
    Status,
}

async fn once(s: &Session, op: Op) -> anyhow::Result<()> {
    match op {
        Op::Rtt1 => s.rtt1().await,
        Op::Rtt2 => s.rtt2().await,
        Op::Noop => s.noop().await,
        Op::Status => s.status().await,
    }
}

/// rtt1, rtt2, noop: warm-up, then rounds; in each round every server does
/// its share of each, the first server changing from round to round.
async fn rtt(plan: &Plan, sessions: &[Session], figures: &mut [Figures]) -> anyhow::Result<()> {
    println!(
        "rtt: {} × show clock in 1 call, in 2 calls, and a call without port I/O, per server",
        plan.iterations
    );
    let ops = |s: &Session| -> Vec<Op> {
        let mut ops = vec![Op::Rtt1, Op::Rtt2, Op::Noop];
        if s.kind == Kind::Serialgate {
            ops.push(Op::Status);
        }
        ops
    };
    for (s, f) in sessions.iter().zip(figures.iter_mut()) {
        f.noop_tool = s.noop_tool();
        for op in ops(s) {
            for _ in 0..plan.warmup {
                once(s, op).await?;
            }
        }
    }
    let per_round = plan.iterations.div_ceil(plan.rounds);
    for round in 0..plan.rounds {
        for i in rotation(sessions.len(), round) {
            let s = &sessions[i];
            for op in ops(s) {
                for _ in 0..per_round {
                    let started = Instant::now();
                    once(s, op).await?;
                    let ms = started.elapsed().as_secs_f64() * 1e3;
                    let f = &mut figures[i];
                    match op {
                        Op::Rtt1 => f.rtt1.push(ms),
                        Op::Rtt2 => f.rtt2.push(ms),
                        Op::Noop => f.noop.push(ms),
                        Op::Status => f.status.push(ms),
                    }
                }
            }
        }
    }
    for (s, f) in sessions.iter().zip(figures.iter()) {
        let (r1, r2, n) = (
            Stats::of(f.rtt1.clone()),
            Stats::of(f.rtt2.clone()),
            Stats::of(f.noop.clone()),
        );
        println!(
            "  {:<20} rtt1 {:.3} / {:.3} ms, rtt2 {:.3} / {:.3} ms, {} {:.3} / {:.3} ms (median / p95)",
            s.kind.name(),
            r1.median,
            r1.p95,
            r2.median,
            r2.p95,
            f.noop_tool,
            n.median,
            n.p95
        );
    }
    Ok(())
}

/// paged: runs alternate between the servers; every run's lines checked.
async fn paged(plan: &Plan, sessions: &[Session], figures: &mut [Figures]) -> anyhow::Result<()> {
    println!("paged: show running-config, 2000 lines at terminal length 24");
    let expected = sim::cisco::running_config_lines();
    for run in 0..plan.paged_runs {
        for i in rotation(sessions.len(), run) {
            let s = &sessions[i];
            let started = Instant::now();
            let p = s.paged().await?;
            let secs = started.elapsed().as_secs_f64();
            let lines = output_lines(&p.text, p.clean, "show running-config")
                .with_context(|| format!("{}: show running-config", s.kind.name()))?;
            check_lines(s.kind, "show running-config", &lines, &expected, false)?;
            println!(
                "  run {}: {:<20} {:.3} s, {} lines in order, {} pages, {} calls",
                run + 1,
                s.kind.name(),
                secs,
                lines.len(),
                p.pages,
                p.calls
            );
            let f = &mut figures[i];
            f.paged.push(secs);
            f.paged_pages = p.pages;
            f.paged_calls = p.calls;
        }
    }
    Ok(())
}

/// bulk: `terminal length 0`, then runs alternating between the servers and
/// the plain pty reader. Returns the plain reader's run times.
async fn bulk(
    plan: &Plan,
    sessions: &mut [Session],
    figures: &mut [Figures],
) -> anyhow::Result<Vec<f64>> {
    println!("bulk: show tech-support at terminal length 0 (50 000 lines)");
    let expected: Vec<String> = (1..=sim::cisco::TECH_SUPPORT_LINES)
        .map(sim::cisco::tech_support_line)
        .collect();
    for s in sessions.iter_mut() {
        s.prepare_bulk().await?;
    }
    let mut plain = PlainReader::start().await?;
    let mut pty = Vec::new();
    let contestants = sessions.len() + 1;
    for run in 0..plan.bulk_runs {
        for i in rotation(contestants, run) {
            if i == sessions.len() {
                let started = Instant::now();
                let raw = plain.bulk().await?;
                let secs = started.elapsed().as_secs_f64();
                let bytes = raw.len();
                let text = std::str::from_utf8(raw)?.to_owned();
                let lines = output_lines(&text, false, "show tech-support")?;
                check_lines(Kind::Serialgate, "plain reader", &lines, &expected, false)?;
                println!(
                    "  run {}: {:<20} {:.3} s, {} lines, {bytes} bytes",
                    run + 1,
                    "plain pty reader",
                    secs,
                    lines.len()
                );
                pty.push(secs);
                continue;
            }
            let s = &sessions[i];
            let started = Instant::now();
            // The anonymous memory's peak over the call, sampled every
            // millisecond (the kernel keeps a peak of the whole RSS only,
            // which holds the code pages the call touches too).
            let sampling = AnonPeak::start(s.proc.pid());
            let b = s.bulk().await?;
            let anon_peak = sampling.stop();
            figures[i].anon_peak_kib = figures[i].anon_peak_kib.max(anon_peak);
            let secs = started.elapsed().as_secs_f64();
            let lines = output_lines(&b.text, b.clean, "show tech-support")
                .with_context(|| format!("{}: show tech-support", s.kind.name()))?;
            check_lines(s.kind, "show tech-support", &lines, &expected, b.clean)?;
            println!(
                "  run {}: {:<20} {:.3} s, {} lines in order{}",
                run + 1,
                s.kind.name(),
                secs,
                lines.len(),
                b.server_ms
                    .map(|ms| format!(", server's own time {ms:.0} ms"))
                    .unwrap_or_default()
            );
            figures[i].bulk.push(secs);
            figures[i].bulk_server_ms.extend(b.server_ms);
            figures[i].largest_result = figures[i].largest_result.max(b.text.len() as u64);
        }
    }
    for s in sessions.iter() {
        s.terminal_length(24).await?;
    }
    Ok(pty)
}

/// Every expected line, once, in order; `trimmed` compares without trailing
/// whitespace (serialgate's clean output drops it).
fn check_lines(
    kind: Kind,
    what: &str,
    lines: &[String],
    expected: &[String],
    trimmed: bool,
) -> anyhow::Result<()> {
    let same = |a: &str, b: &str| if trimmed { a == b.trim_end() } else { a == b };
    if lines.len() != expected.len() || !lines.iter().zip(expected).all(|(a, b)| same(a, b)) {
        let first = lines.iter().zip(expected).position(|(a, b)| !same(a, b));
        anyhow::bail!(
            "{}: {what}: {} lines, {} expected; first difference at line {first:?}: {:?} vs {:?}",
            kind.name(),
            lines.len(),
            expected.len(),
            first.map(|i| &lines[i]),
            first.map(|i| &expected[i]),
        );
    }
    Ok(())
}

/// Bytes serialgate's ports retain: Σ head − oldest over `list_ports`.
async fn retained(proc: &McpProc) -> anyhow::Result<u64> {
    let r = proc.call("list_ports", json!({})).await?;
    Ok(r["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["head"].as_u64().unwrap_or(0) - p["oldest"].as_u64().unwrap_or(0))
        .sum())
}

/// scale: serialgate alone with 1…256 ports, each a simulated device in
/// this process. Port 0 is a Cisco switch (the quiet port); the others are
/// silent devices that the bench makes stream.
async fn scale(plan: &Plan, bins: &Binaries, logs: &Path) -> anyhow::Result<Vec<ScaleRow>> {
    let mut rows = Vec::new();
    for &n in &SCALE_PORTS {
        println!("scale: {n} port(s)");
        let dir = tempfile::tempdir()?;
        let mut sims = Vec::with_capacity(n);
        let mut config = String::from("[server]\nretention = \"1MiB\"\n");
        for i in 0..n {
            let profile = if i == 0 {
                Profile::CiscoIos
            } else {
                Profile::Silent
            };
            let sim = Arc::new(sim::spawn(profile, None).await?);
            config.push_str(&format!(
                "\n[ports.p{i:03}]\ndevice = {:?}\npreset = \"cisco-ios\"\n",
                sim.path().display()
            ));
            sims.push(sim);
        }
        let config_path = dir.path().join("serialgate.toml");
        std::fs::write(&config_path, config)?;
        let proc = McpProc::spawn(
            "serialgate",
            servers::serialgate_command(&bins.serialgate, &config_path),
            &logs.join("serialgate-scale.stderr"),
        )
        .await?;
        let pid = proc.pid();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = proc.call("list_ports", json!({})).await?;
            let open = r["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["state"] == "open")
                .count();
            if open == n {
                break;
            }
            anyhow::ensure!(Instant::now() < deadline, "only {open} of {n} ports opened");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        proc.call("connect", json!({"port": "p000"})).await?;
        for (text, prompt) in [("", None), ("enable", Some("Password:")), ("cisco", None)] {
            proc.call("send_text", json!({"text": text})).await?;
            proc.call("read_until_prompt", json!({"prompt": prompt, "timeout": 5}))
                .await?;
        }
        let rtt1 = async || -> anyhow::Result<()> {
            let r = proc
                .call("send_command", json!({"command": "show clock"}))
                .await?;
            anyhow::ensure!(
                r["matched"] == true && r["output"].as_str().is_some_and(|o| o.contains(" UTC ")),
                "show clock: {r}"
            );
            Ok(())
        };
        rtt1().await?;

        // Idle: every port open, every device silent.
        tokio::time::sleep(SETTLE).await;
        let before = CpuSample::take(pid)?;
        let started = Instant::now();
        tokio::time::sleep(plan.idle).await;
        let (ns, ticks) = before.seconds_until(&CpuSample::take(pid)?);
        let per_10s = 10.0 / started.elapsed().as_secs_f64();
        let idle_cpu = (ns * per_10s, ticks * per_10s);
        let idle_hwm_kib = vm_kib(pid, "VmHWM")?;
        let idle_rss_kib = vm_kib(pid, "VmRSS")?;
        let idle_anon_file_kib = anon_file_kib(pid)?;
        // The peak while streaming is measured from here, not from the
        // start (whose pages touched are given back 5 s after it).
        reset_peak(pid)?;

        // Streaming: every port but p000 prints a syslog line as fast as a
        // full 115200-baud line would, starts spread over one period.
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        let stream_started = Instant::now();
        for (i, sim) in sims.iter().enumerate().skip(1) {
            let line = format!(
                "*Nov 30 06:30:45.123: %LINEPROTO-5-UPDOWN: Line protocol on Interface GigabitEthernet1/0/{i:<3}, changed state to up\r\n"
            );
            let period = Duration::from_secs_f64(line.len() as f64 / STREAM_BYTES_PER_S);
            let offset = period.mul_f64(i as f64 / n as f64);
            let (sim, stop, sent) = (sim.clone(), stop.clone(), sent.clone());
            tasks.push(tokio::spawn(async move {
                let mut next = tokio::time::Instant::now() + offset;
                while !stop.load(Ordering::Relaxed) {
                    tokio::time::sleep_until(next).await;
                    sim.inject(line.as_bytes()).await;
                    sent.fetch_add(line.len() as u64, Ordering::Relaxed);
                    // A device that was held up does not burst to catch up.
                    next = (next + period).max(tokio::time::Instant::now());
                }
            }));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        for _ in 0..plan.warmup {
            rtt1().await?;
        }
        let cpu_before = CpuSample::take(pid)?;
        let busy_started = Instant::now();
        let mut ms = Vec::with_capacity(plan.scale_iterations);
        for _ in 0..plan.scale_iterations {
            let t = Instant::now();
            rtt1().await?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let (busy_ns, _) = cpu_before.seconds_until(&CpuSample::take(pid)?);
        let busy_cpu_share = busy_ns / busy_started.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            t.await?;
        }
        let stream_secs = stream_started.elapsed().as_secs_f64();
        let stream_bytes_per_s = sent.load(Ordering::Relaxed) as f64 / stream_secs;
        let retained = retained(&proc).await?;
        let load_hwm_kib = vm_kib(pid, "VmHWM")?;
        let rtt1 = Stats::of(ms);
        println!(
            "  idle {:.6} s CPU per 10 s ({:.6} per port), VmHWM {:.1} MiB; {} ports streaming {:.2} MB/s in all: rtt1 {:.3} / {:.3} ms (median / p95), gateway CPU {:.0} %, retained {:.1} MiB, VmHWM {:.1} MiB",
            idle_cpu.0,
            idle_cpu.0 / n as f64,
            mib(idle_hwm_kib),
            n - 1,
            stream_bytes_per_s / 1e6,
            rtt1.median,
            rtt1.p95,
            busy_cpu_share * 100.0,
            retained as f64 / 1048576.0,
            mib(load_hwm_kib)
        );
        rows.push(ScaleRow {
            ports: n,
            idle_cpu,
            idle_hwm_kib,
            idle_rss_kib,
            idle_anon_file_kib,
            rtt1,
            streaming_ports: n - 1,
            stream_bytes_per_s,
            busy_cpu_share,
            retained,
            load_hwm_kib,
        });
        proc.close().await;
        for sim in &sims {
            sim.close().await;
        }
    }
    Ok(rows)
}

/// One target: what was measured against what the issue asks.
struct Target {
    name: String,
    value: String,
    goal: String,
    met: Option<bool>,
}

impl Target {
    fn new(name: impl Into<String>, value: String, goal: String, met: Option<bool>) -> Target {
        Target {
            name: name.into(),
            value,
            goal,
            met,
        }
    }
}

/// Prints the tables and the targets; returns the targets.
fn report(kinds: &[Kind], figures: &[Figures], pty: &[f64], scale: &[ScaleRow]) -> Vec<Target> {
    let col = |k: Kind| kinds.iter().position(|&x| x == k);
    let sg = col(Kind::Serialgate).map(|i| &figures[i]);
    let scm = col(Kind::SerialConsoleMcp).map(|i| &figures[i]);
    let smcp = col(Kind::SerialMcp).map(|i| &figures[i]);
    let pty = stats(pty);

    println!();
    println!("## Side by side (median; p95 for calls)");
    println!();
    print!("| figure |");
    for k in kinds {
        print!(" {} |", k.name());
    }
    println!();
    print!("|---|");
    for _ in kinds {
        print!("---|");
    }
    println!();
    let row = |name: &str, cell: &dyn Fn(&Figures) -> String| {
        print!("| {name} |");
        for f in figures {
            print!(" {} |", cell(f));
        }
        println!();
    };
    let calls = |xs: &[f64]| {
        stats(xs).map_or("–".into(), |s| {
            format!("{:.3} ms (p95 {:.3})", s.median, s.p95)
        })
    };
    row("`rtt1`: show clock, 1 call", &|f| calls(&f.rtt1));
    row("`rtt2`: show clock, 2 calls", &|f| calls(&f.rtt2));
    row("no port I/O (tool)", &|f| {
        stats(&f.noop).map_or("–".into(), |s| {
            format!("{:.3} ms (p95 {:.3}), `{}`", s.median, s.p95, f.noop_tool)
        })
    });
    row("`paged`: 2000 lines, 87 pages", &|f| {
        stats(&f.paged).map_or("–".into(), |s| {
            format!("{:.3} s ({} calls)", s.median, f.paged_calls)
        })
    });
    row("`bulk`: 4 000 023 bytes", &|f| {
        stats(&f.bulk).map_or("–".into(), |s| {
            let own = stats(&f.bulk_server_ms)
                .map(|m| format!(" (server {:.3} s)", m.median / 1e3))
                .unwrap_or_default();
            format!("{:.3} s{own}", s.median)
        })
    });
    if let Some(p) = pty {
        row("`bulk`: plain pty reader, same bytes", &|_| {
            format!("{:.3} s", p.median)
        });
    }
    row("`idle`: CPU s per 10 s, 1 port", &|f| {
        f.idle_cpu.map_or("–".into(), |(ns, ticks)| {
            format!("{ns:.6} (stat {ticks:.2})")
        })
    });
    row("peak RSS (VmHWM), idle [anon + file]", &|f| {
        f.idle_hwm_kib.map_or("–".into(), |k| {
            let (anon, file) = f.idle_anon_file_kib.unwrap_or_default();
            format!("{:.1} MiB [{:.1} + {:.1}]", mib(k), mib(anon), mib(file))
        })
    });
    row(
        "peak RSS (VmHWM) during the calls, from the idle window's end",
        &|f| {
            f.load_hwm_kib
                .map_or("–".into(), |k| format!("{:.1} MiB", mib(k)))
        },
    );
    row(
        "anonymous memory's peak during `bulk` (sampled every ms)",
        &|f| {
            f.anon_peak_kib
                .map_or("–".into(), |k| format!("{:.1} MiB", mib(k)))
        },
    );
    row("RSS after the calls [anon + file]", &|f| {
        f.after_anon_file_kib.map_or("–".into(), |(anon, file)| {
            format!(
                "{:.1} MiB [{:.1} + {:.1}]",
                mib(anon + file),
                mib(anon),
                mib(file)
            )
        })
    });

    if !scale.is_empty() {
        println!();
        println!("## serialgate alone, 1 to 256 ports");
        println!();
        println!(
            "| ports | idle CPU s per 10 s (per port) | VmHWM idle [anon + file] | others streaming | `rtt1` quiet port median (p95) | gateway CPU while streaming | retained | VmHWM while streaming |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        for r in scale {
            println!(
                "| {} | {:.6} ({:.7}) | {:.1} MiB [{:.1} + {:.1}] | {} × {:.1} KB/s = {:.2} MB/s | {:.3} ms ({:.3}) | {:.0} % | {:.1} MiB | {:.1} MiB |",
                r.ports,
                r.idle_cpu.0,
                r.idle_cpu.0 / r.ports as f64,
                mib(r.idle_hwm_kib),
                mib(r.idle_anon_file_kib.0),
                mib(r.idle_anon_file_kib.1),
                r.streaming_ports,
                if r.streaming_ports > 0 {
                    r.stream_bytes_per_s / r.streaming_ports as f64 / 1e3
                } else {
                    0.0
                },
                r.stream_bytes_per_s / 1e6,
                r.rtt1.median,
                r.rtt1.p95,
                r.busy_cpu_share * 100.0,
                r.retained as f64 / 1048576.0,
                mib(r.load_hwm_kib)
            );
        }
    }

    // Targets.
    let mut targets = Vec::new();
    let median = |f: Option<&Figures>, pick: fn(&Figures) -> &Vec<f64>| {
        f.and_then(|f| stats(pick(f))).map(|s| s.median)
    };
    let ratio_target = |targets: &mut Vec<Target>,
                        name: &str,
                        peer: Option<f64>,
                        ours: Option<f64>,
                        at_least: f64| {
        let (value, met) = match (peer, ours) {
            (Some(p), Some(o)) if o > 0.0 => (
                format!("{:.1}× ({p:.3} vs {o:.3})", p / o),
                Some(p / o >= at_least),
            ),
            _ => ("not measured".into(), None),
        };
        targets.push(Target::new(name, value, format!("≥ {at_least}×"), met));
    };
    ratio_target(
        &mut targets,
        "rtt1: serial-console-mcp ÷ serialgate",
        median(scm, |f| &f.rtt1),
        median(sg, |f| &f.rtt1),
        RTT1_VS_SCM,
    );
    ratio_target(
        &mut targets,
        "rtt1: serial-mcp ÷ serialgate (\"far below\")",
        median(smcp, |f| &f.rtt1),
        median(sg, |f| &f.rtt1),
        RTT1_VS_SMCP,
    );
    ratio_target(
        &mut targets,
        "rtt2: serial-console-mcp ÷ serialgate",
        median(scm, |f| &f.rtt2),
        median(sg, |f| &f.rtt2),
        RTT2_VS_SCM,
    );
    ratio_target(
        &mut targets,
        "paged: serial-console-mcp ÷ serialgate",
        median(scm, |f| &f.paged),
        median(sg, |f| &f.paged),
        PAGED_VS_SCM,
    );
    // bulk, two ways: the server's own time from sending the command to
    // matching the prompt (`elapsed_ms`, what the plain reader's time is
    // too), and the whole call at the client (plus cleaning 4 MB, encoding
    // it as JSON, the pipe and the client's decoding).
    for (name, ours) in [
        (
            "bulk: serialgate to the prompt match (its elapsed_ms) ÷ plain pty reader",
            median(sg, |f| &f.bulk_server_ms).map(|ms| ms / 1e3),
        ),
        (
            "bulk: serialgate whole call at the client ÷ plain pty reader",
            median(sg, |f| &f.bulk),
        ),
    ] {
        let (value, met) = match (ours, pty.map(|p| p.median)) {
            (Some(o), Some(p)) => (
                format!("{:.2}× ({o:.3} s vs {p:.3} s)", o / p),
                Some(o / p <= BULK_VS_PTY),
            ),
            _ => ("not measured".into(), None),
        };
        targets.push(Target::new(name, value, format!("≤ {BULK_VS_PTY}×"), met));
    }
    if let Some(f) = sg {
        let (value, met) = match (stats(&f.rtt1), stats(&f.noop)) {
            (Some(r), Some(n)) => {
                let own = r.median - n.median;
                let status = stats(&f.status)
                    .map(|s| format!("; vs status {:.3} ms", r.median - s.median))
                    .unwrap_or_default();
                (
                    format!("{own:.3} ms ({:.3} − {:.3}){status}", r.median, n.median),
                    Some(own < OWN_LATENCY_MS),
                )
            }
            _ => ("not measured".into(), None),
        };
        targets.push(Target::new(
            "serialgate's own latency: rtt1 − list_presets",
            value,
            format!("< {OWN_LATENCY_MS} ms"),
            met,
        ));
        if let Some((ns, _)) = f.idle_cpu {
            targets.push(Target::new(
                "idle CPU, 1 port",
                format!("{ns:.6} s per 10 s"),
                format!("< {IDLE_CPU_PER_PORT} s"),
                Some(ns < IDLE_CPU_PER_PORT),
            ));
        }
        if let Some((anon, file)) = f.idle_anon_file_kib {
            let retained = f.idle_retained.unwrap_or(0);
            let limit = RSS_BASE_MIB + retained as f64 / 1048576.0;
            let resident = anon + file;
            targets.push(Target::new(
                "RSS, 1 port idle (resident at the window's end)",
                format!("{:.1} MiB (retained {retained} B)", mib(resident)),
                format!("< {limit:.1} MiB"),
                Some(mib(resident) < limit),
            ));
        }
        if let (Some((idle_anon, idle_file)), Some(peak), Some((anon, file)), Some(retained)) = (
            f.idle_anon_file_kib,
            f.anon_peak_kib,
            f.after_anon_file_kib,
            f.after_retained,
        ) {
            let retained_mib = retained as f64 / 1048576.0;
            let result_mib = f.largest_result as f64 / 1048576.0;
            let peak_limit = mib(idle_anon) + retained_mib + 2.0 * result_mib;
            targets.push(Target::new(
                "anonymous peak during bulk ≤ idle + retained + 2 × the largest result",
                format!(
                    "{:.1} MiB (idle {:.1}, retained {retained_mib:.1}, result {result_mib:.1})",
                    mib(peak),
                    mib(idle_anon)
                ),
                format!("≤ {peak_limit:.1} MiB"),
                Some(mib(peak) <= peak_limit),
            ));
            let after_limit = mib(idle_anon) + retained_mib + GIVEN_BACK_SLACK_MIB;
            targets.push(Target::new(
                "anonymous memory after the calls: given back (idle + retained)",
                format!(
                    "{:.1} MiB (code pages the calls touched: file-backed {:.1} MiB, {:.1} idle)",
                    mib(anon),
                    mib(file),
                    mib(idle_file)
                ),
                format!("≤ {after_limit:.1} MiB"),
                Some(mib(anon) <= after_limit),
            ));
        }
    }
    for r in scale {
        let per_port = r.idle_cpu.0 / r.ports as f64;
        targets.push(Target::new(
            format!("idle CPU per port, {} ports", r.ports),
            format!("{per_port:.7} s per 10 s"),
            format!("< {IDLE_CPU_PER_PORT} s"),
            Some(per_port < IDLE_CPU_PER_PORT),
        ));
        targets.push(Target::new(
            format!("RSS, {} ports idle (resident at the window's end)", r.ports),
            format!("{:.1} MiB", mib(r.idle_rss_kib)),
            format!("< {RSS_BASE_MIB:.1} MiB"),
            Some(mib(r.idle_rss_kib) < RSS_BASE_MIB),
        ));
        let limit = RSS_BASE_MIB + r.retained as f64 / 1048576.0;
        targets.push(Target::new(
            format!("RSS peak, {} ports, while streaming", r.ports),
            format!(
                "{:.1} MiB (retained {:.1} MiB)",
                mib(r.load_hwm_kib),
                r.retained as f64 / 1048576.0
            ),
            format!("< {limit:.1} MiB"),
            Some(mib(r.load_hwm_kib) < limit),
        ));
        if r.ports == 256 {
            targets.push(Target::new(
                "rtt1 on the quiet port, 255 others streaming",
                format!("{:.3} ms (p95 {:.3})", r.rtt1.median, r.rtt1.p95),
                format!("< {SCALE_RTT1_MS} ms"),
                Some(r.rtt1.median < SCALE_RTT1_MS),
            ));
        }
    }
    println!();
    println!("## Targets");
    println!();
    println!("| target | measured | goal | |");
    println!("|---|---|---|---|");
    for t in &targets {
        let verdict = match t.met {
            Some(true) => "met",
            Some(false) => "**MISSED**",
            None => "n/a",
        };
        println!("| {} | {} | {} | {verdict} |", t.name, t.value, t.goal);
    }
    targets
}

#[allow(clippy::too_many_arguments)]
fn to_json(
    plan: &Plan,
    machine: Value,
    versions: Value,
    kinds: &[Kind],
    figures: &[Figures],
    pty: &[f64],
    scale: &[ScaleRow],
    targets: &[Target],
) -> Value {
    let opt = |s: Option<Stats>| s.map_or(Value::Null, |s| s.json());
    let servers: serde_json::Map<String, Value> = kinds
        .iter()
        .zip(figures)
        .map(|(k, f)| {
            (
                k.name().to_owned(),
                json!({
                    "rtt1_ms": opt(stats(&f.rtt1)),
                    "rtt2_ms": opt(stats(&f.rtt2)),
                    "noop_ms": opt(stats(&f.noop)),
                    "noop_tool": f.noop_tool,
                    "status_ms": opt(stats(&f.status)),
                    "paged_s": opt(stats(&f.paged)),
                    "paged_pages": f.paged_pages,
                    "paged_calls": f.paged_calls,
                    "bulk_s": opt(stats(&f.bulk)),
                    "bulk_server_ms": opt(stats(&f.bulk_server_ms)),
                    "idle_cpu_s_per_10s": f.idle_cpu.map(|c| round(c.0, 7)),
                    "idle_cpu_stat_s_per_10s": f.idle_cpu.map(|c| round(c.1, 3)),
                    "idle_vm_hwm_kib": f.idle_hwm_kib,
                    "idle_rss_anon_kib": f.idle_anon_file_kib.map(|m| m.0),
                    "idle_rss_file_kib": f.idle_anon_file_kib.map(|m| m.1),
                    "idle_retained_bytes": f.idle_retained,
                    "vm_hwm_during_workload_kib": f.load_hwm_kib,
                    "bulk_anon_peak_kib": f.anon_peak_kib,
                    "after_rss_anon_kib": f.after_anon_file_kib.map(|m| m.0),
                    "after_rss_file_kib": f.after_anon_file_kib.map(|m| m.1),
                    "retained_after_workload_bytes": f.after_retained,
                    "largest_result_bytes": f.largest_result,
                }),
            )
        })
        .collect();
    json!({
        "bench": "peers",
        "quick": plan.quick,
        "phases": plan.phases,
        "iterations": plan.iterations,
        "rounds": plan.rounds,
        "machine": machine,
        "versions": versions,
        "servers": servers,
        "plain_pty_reader_bulk_s": opt(stats(pty)),
        "bulk_bytes": 4_000_023,
        "scale": scale.iter().map(|r| json!({
            "ports": r.ports,
            "idle_cpu_s_per_10s": round(r.idle_cpu.0, 7),
            "idle_cpu_stat_s_per_10s": round(r.idle_cpu.1, 3),
            "idle_cpu_per_port_s_per_10s": round(r.idle_cpu.0 / r.ports as f64, 8),
            "idle_vm_hwm_kib": r.idle_hwm_kib,
            "idle_vm_rss_kib": r.idle_rss_kib,
            "idle_rss_anon_kib": r.idle_anon_file_kib.0,
            "idle_rss_file_kib": r.idle_anon_file_kib.1,
            "streaming_ports": r.streaming_ports,
            "stream_bytes_per_s": round(r.stream_bytes_per_s, 0),
            "rtt1_ms": r.rtt1.json(),
            "gateway_cpu_share_streaming": round(r.busy_cpu_share, 3),
            "retained_bytes": r.retained,
            "vm_hwm_after_kib": r.load_hwm_kib,
        })).collect::<Vec<_>>(),
        "targets": targets.iter().map(|t| json!({
            "target": t.name, "measured": t.value, "goal": t.goal, "met": t.met,
        })).collect::<Vec<_>>(),
    })
}

/// serialgate: `SERIALGATE_BIN`, else next to this bench executable
/// (`target/release/deps/peers-…` → `target/release/serialgate`), else
/// where cargo built it. The peers: in `scratch` as
/// `peers/install-peers.sh` puts them; a missing one is skipped.
fn find_binaries(scratch: &Path) -> anyhow::Result<Binaries> {
    let serialgate = binary::bench_binary().map_err(anyhow::Error::msg)?;
    let peer = |rel: &str| {
        let p = scratch.join(rel);
        if p.is_file() {
            Some(p)
        } else {
            eprintln!(
                "WARNING: {} is missing; run peers/install-peers.sh (PEERS_DIR={}); skipping that peer",
                p.display(),
                scratch.display()
            );
            None
        }
    };
    let bins = Binaries {
        serialgate,
        serial_console_mcp: peer("venv/bin/serial-console-mcp"),
        serial_mcp: peer("serial-mcp/bin/serial-mcp"),
    };
    Ok(bins)
}

/// Each server's version, as it reports it.
fn versions(bins: &Binaries) -> Value {
    let run = |p: &Path| {
        std::process::Command::new(p)
            .arg("--version")
            .output()
            .ok()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_owned()
            })
    };
    let mut v = serde_json::Map::new();
    for kind in Kind::ALL {
        if let Some(p) = bins.get(kind) {
            v.insert(kind.name().into(), json!(run(p)));
        }
    }
    Value::Object(v)
}

/// The machine: CPUs, model, kernel, load at the start.
fn machine() -> Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")?
                .split_once(':')
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_owned();
    let load = read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    json!({
        "cpus": cpus,
        "model": model,
        "kernel": kernel,
        "loadavg_at_start": load,
        "summary": format!("machine: {cpus} CPUs, {model}, Linux {kernel}, load average {load} at start"),
    })
}

/// (RssAnon, RssFile) of `pid`, KiB: the heap and stacks, and the pages of
/// mapped files (the program's code, shared libraries).
fn anon_file_kib(pid: u32) -> anyhow::Result<(u64, u64)> {
    Ok((vm_kib(pid, "RssAnon")?, vm_kib(pid, "RssFile")?))
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}
