//! Standing watches on the reader's path: what they cost a talking port,
//! and that they cost a quiet one nothing.
//!
//! 1. Throughput: realistic switch output (as in the matcher bench) in
//!    4 KiB reads, each appended to an [`OutputLog`] and passed to a
//!    [`WatchScanner`] exactly as the reader does, with 0, 10 and 100
//!    watches (the `cisco-ios` preset's five, then `%FACILITYn-3-EVENTn`
//!    syslog patterns and literals). One crash line every 64 KiB raises an
//!    alert, so the matching path runs too; the number of hits is checked.
//! 2. Idle: the real binary with 16 quiet ports on pseudo-terminals, once
//!    with every watch turned off and once with 100 per port: the daemon's
//!    CPU seconds over 5 s of silence (from `/proc`).
//!
//! Run: `cargo bench --bench watches` (`-- --quick` or
//! `SERIALGATE_BENCH_QUICK=1` for fewer runs). It prints figures and
//! asserts nothing about speed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serialgate::log::OutputLog;
use serialgate::watchset::{WatchHit, WatchScanner, WatchSet};

#[path = "peers/procfs.rs"]
#[allow(dead_code)]
mod procfs;

const CHUNK: usize = 4096;
const MIB: usize = 1 << 20;
const CRASH: &str = "Unexpected exception to CPU: vector 1500, PC = 0x0";

fn quick() -> bool {
    std::env::args().any(|a| a == "--quick") || std::env::var_os("SERIALGATE_BENCH_QUICK").is_some()
}

/// The watches of a case: the preset's five, then generated ones.
fn watches(n: usize) -> Vec<String> {
    let mut all: Vec<String> = serialgate::presets::builtin("cisco-ios")
        .expect("cisco-ios")
        .watches
        .into_iter()
        .map(|w| w.regex)
        .collect();
    let mut i = 0;
    while all.len() < n {
        all.push(if i % 2 == 0 {
            format!(r"%FACILITY{i}-[0-3]-EVENT{i}\w*")
        } else {
            format!("literal text number {i} not printed")
        });
        i += 1;
    }
    all.truncate(n);
    all
}

/// `size` bytes of switch output with a crash line every 64 KiB.
fn output(size: usize) -> (Vec<u8>, usize) {
    let mut out = Vec::with_capacity(size + 128);
    let (mut i, mut crashes, mut next_crash) = (0usize, 0, 64 * 1024);
    while out.len() < size {
        let (member, port) = (1 + i / 52 % 8, 1 + i % 52);
        for line in [
            format!("interface GigabitEthernet{member}/0/{port}"),
            format!(" description link-{:04}", i % 10_000),
            format!(" switchport access vlan {}", 10 + i % 20),
            " switchport mode access".to_owned(),
            "!".to_owned(),
        ] {
            out.extend_from_slice(line.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if out.len() >= next_crash {
            out.extend_from_slice(CRASH.as_bytes());
            out.extend_from_slice(b"\r\n");
            crashes += 1;
            next_crash += 64 * 1024;
        }
        i += 1;
    }
    (out, crashes)
}

/// One run: appends and scans `stream` in reads of [`CHUNK`]; the hits.
fn run(stream: &[u8], set: &WatchSet) -> (Duration, usize) {
    let log = OutputLog::new(64 * MIB);
    let mut scanner = WatchScanner::new();
    let mut hits: Vec<WatchHit> = Vec::new();
    let mut count = 0;
    let start = Instant::now();
    for piece in stream.chunks(CHUNK) {
        let head = log.append(piece);
        if !set.is_empty() {
            scanner.scan(set, piece, head - piece.len() as u64, &mut hits);
            count += hits.len();
            hits.clear();
        }
    }
    black_box(&log);
    (start.elapsed(), count)
}

fn median(runs: usize, mut once: impl FnMut() -> Duration) -> Duration {
    once();
    let mut times: Vec<Duration> = (0..runs).map(|_| once()).collect();
    times.sort();
    times[times.len() / 2]
}

fn throughput() {
    let runs = if quick() { 3 } else { 7 };
    let (stream, crashes) = output(16 * MIB);
    println!(
        "reader throughput: 16 MiB of switch output in {CHUNK}-byte reads, appended and matched; {crashes} crash lines; median of {runs}"
    );
    println!(
        "{:>8} {:>10} {:>10} {:>8}",
        "watches", "ms", "MB/s", "alerts"
    );
    for n in [0, 10, 100] {
        let set = WatchSet::new(&watches(n)).expect("the watches compile");
        let (_, hits) = run(&stream, &set);
        let want = if n == 0 { 0 } else { crashes };
        assert_eq!(hits, want, "{n} watches: wrong number of alerts");
        let took = median(runs, || run(&stream, &set).0);
        println!(
            "{n:>8} {:>10.1} {:>10.0} {hits:>8}",
            took.as_secs_f64() * 1e3,
            stream.len() as f64 / took.as_secs_f64() / 1e6
        );
    }
}

/// CPU seconds the daemon spends over `quiet` with 16 silent ports, with
/// `watches` per port (0: the preset's turned off).
fn idle_cpu(watches_per_port: usize, quiet: Duration) -> anyhow::Result<f64> {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let dir = tempfile::TempDir::new()?;
        let mut ptys = Vec::new();
        let mut text = String::new();
        for p in 0..16 {
            let pty = serialgate_sim::pty::Pty::open()?;
            let mut list: Vec<String> = ["crash", "reboot", "boot_loader", "memory", "hardware"]
                .iter()
                .map(|n| format!("{{ name = \"{n}\", off = true }}"))
                .collect();
            for (i, regex) in watches(watches_per_port).iter().enumerate() {
                let regex = regex.replace('\\', "\\\\");
                list.push(format!("{{ name = \"w{i}\", regex = \"{regex}\" }}"));
            }
            text.push_str(&format!(
                "[ports.p{p}]\ndevice = \"{}\"\npreset = \"cisco-ios\"\nwatches = [{}]\n",
                pty.slave_path().display(),
                list.join(", ")
            ));
            ptys.push(pty);
        }
        let config = dir.path().join("c.toml");
        std::fs::write(&config, text)?;
        let binary = serialgate_testkit::binary::bench_binary().map_err(anyhow::Error::msg)?;
        let mut cmd = serialgate_testkit::daemon::Daemon::command_for(&binary, Some(&config), &[]);
        cmd.env("SERIALGATE_LOG", "warn");
        let mut daemon = serialgate_testkit::daemon::Daemon::run(cmd);
        let pid = daemon.child.id().ok_or_else(|| anyhow::anyhow!("no pid"))?;
        // Let it open every port and settle.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let before = procfs::CpuSample::take(pid)?;
        tokio::time::sleep(quiet).await;
        let after = procfs::CpuSample::take(pid)?;
        let _ = daemon.child.kill().await;
        Ok(before.seconds_until(&after).0)
    })
}

fn main() {
    throughput();
    println!();
    let quiet = Duration::from_secs(if quick() { 2 } else { 5 });
    println!("idle: 16 quiet ports, daemon CPU over {quiet:?}");
    for n in [0, 100] {
        match idle_cpu(n, quiet) {
            Ok(cpu) => println!("{n:>4} watches per port: {:.2} ms CPU", cpu * 1e3),
            Err(e) => println!("{n:>4} watches per port: not measured: {e}"),
        }
    }
}
