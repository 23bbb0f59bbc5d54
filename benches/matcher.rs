//! Matcher throughput: how fast a waiting read scans console output.
//!
//! Realistic switch output (`interface GigabitEthernet1/0/12`,
//! ` description link-0012`, … each ending in `\r\n`) arrives in 4 KiB chunks
//! appended to an [`OutputLog`] large enough to keep it all. After each
//! append a scanner is driven exactly as `port::wait::wait_for_prompt` drives
//! it: a window from `scanner.window_start().max(oldest)` to the head, then
//! `scan(window, base)`. The prompt (`SW1#`) arrives only at the very end, so
//! every byte is scanned before the match.
//!
//! Cases, for 1, 4 and 16 MiB of output:
//! - `literal`: a [`PromptScanner`] on the literal `SW1#`;
//! - `regex`: a [`PromptScanner`] on the `cisco-ios` preset's prompt regex;
//! - `trigger`: a [`TriggerScanner`] on `--More--` → space, over the same
//!   stream with one pager prompt at the end.
//!
//! Each figure is the median of several runs (appends included: they are
//! part of what a wait costs). The match offset is checked on every run; a
//! wrong one panics, since it would make the figure meaningless.
//!
//! Run: `cargo bench --bench matcher` (add `-- --quick` or set
//! `SERIALGATE_BENCH_QUICK=1` for fewer runs). Nothing here asserts a speed:
//! it prints figures and the targets they are compared with (≥ 500 MB/s, and
//! linear: the 16 MiB time about 16× the 1 MiB time).

use std::hint::black_box;
use std::time::{Duration, Instant};

use serialgate::log::OutputLog;
use serialgate::matcher::{Prompt, PromptScanner, Span, TriggerScanner};

/// Bytes per append, as a serial reader hands them over in bulk.
const CHUNK: usize = 4096;
/// Retention large enough that nothing is dropped.
const RETENTION: usize = 32 << 20;
/// The target throughput, MB/s (10^6 bytes per second).
const TARGET_MBPS: f64 = 500.0;
const MIB: usize = 1 << 20;

fn main() {
    let quick = quick();
    let runs = if quick { 3 } else { 5 };
    let regex_source = serialgate::presets::builtin("cisco-ios").expect("cisco-ios preset").prompt;
    println!("matcher throughput: output in {CHUNK}-byte chunks, prompt at the very end, median of {runs} runs");
    println!("cisco-ios prompt regex: {regex_source}");
    println!();
    println!("{:<8} {:>7} {:>10} {:>10}", "case", "MiB", "ms", "MB/s");

    let sizes = [1, 4, 16];
    let mut figures = Vec::new();
    for case in ["literal", "regex", "trigger"] {
        let mut times = Vec::new();
        for &mib in &sizes {
            let stream = console_output(mib * MIB, case == "trigger");
            let time = median(
                (0..runs)
                    .map(|_| match case {
                        "literal" => run_prompt(&stream, Prompt::literal("SW1#")),
                        "regex" => run_prompt(&stream, Prompt::regex(&regex_source).expect("preset regex")),
                        _ => run_trigger(&stream),
                    })
                    .collect(),
            );
            let mbps = stream.len() as f64 / time.as_secs_f64() / 1e6;
            println!("{case:<8} {mib:>7} {:>10.2} {mbps:>10.0}", ms(time));
            figures.push(format!(r#""{case}_{mib}mib_mbps":{mbps:.0}"#));
            times.push(time);
        }
        let ratio = times[2].as_secs_f64() / times[0].as_secs_f64();
        let worst = sizes
            .iter()
            .zip(&times)
            .map(|(&mib, t)| (mib * MIB) as f64 / t.as_secs_f64() / 1e6)
            .fold(f64::INFINITY, f64::min);
        println!(
            "{case:<8} 16 MiB / 1 MiB time = {ratio:.1}× (linear: ≈16×); slowest {worst:.0} MB/s vs target ≥ {TARGET_MBPS:.0}: {}",
            if worst >= TARGET_MBPS { "meets" } else { "BELOW" }
        );
        println!();
        figures.push(format!(r#""{case}_ratio_16_to_1":{ratio:.2}"#));
    }
    println!("{{{}}}", figures.join(","));
}

/// `--quick` or `SERIALGATE_BENCH_QUICK=1`.
fn quick() -> bool {
    std::env::args().any(|a| a == "--quick") || std::env::var("SERIALGATE_BENCH_QUICK").is_ok_and(|v| v == "1")
}

/// At least `size` bytes of `show running-config`-like output with no prompt
/// in it, then `SW1#` (or a pager prompt, for the trigger case) at the end.
fn console_output(size: usize, pager_at_end: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(size + 64);
    let mut i = 0usize;
    while out.len() < size {
        let (member, port) = (1 + i / 52 % 8, 1 + i % 52);
        for line in [
            format!("interface GigabitEthernet{member}/0/{port}"),
            format!(" description link-{:04}", i % 10_000),
            format!(" switchport access vlan {}", 10 + i % 20),
            " switchport mode access".to_owned(),
            " spanning-tree portfast edge".to_owned(),
            "!".to_owned(),
        ] {
            out.extend_from_slice(line.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        i += 1;
    }
    out.extend_from_slice(if pager_at_end { b" --More-- " } else { b"SW1#" });
    out
}

/// Appends `stream` chunk by chunk and waits for `prompt` as
/// `wait_for_prompt` does; checks the match is the final `SW1#`.
fn run_prompt(stream: &[u8], prompt: Prompt) -> Duration {
    let log = OutputLog::new(RETENTION);
    let mut scanner = PromptScanner::new(prompt, 0);
    let started = Instant::now();
    let mut found = None;
    for chunk in stream.chunks(CHUNK) {
        log.append(chunk);
        let view = log.view();
        let (oldest, head) = (view.oldest(), view.head());
        let base = scanner.window_start().max(oldest);
        if let Some(span) = scanner.scan(view.slice(base, head), base) {
            found = Some(span);
            break;
        }
    }
    let elapsed = started.elapsed();
    let len = stream.len() as u64;
    let want = Span { start: len - 4, end: len };
    assert_eq!(found, Some(want), "wrong match for {}", scanner.prompt().source());
    black_box(log);
    elapsed
}

/// Appends `stream` chunk by chunk, scanning for `--More--` as
/// `wait_for_prompt` does (limit: the head); checks the one hit at the end.
fn run_trigger(stream: &[u8]) -> Duration {
    let log = OutputLog::new(RETENTION);
    let mut triggers = TriggerScanner::new(&[("--More--".to_owned(), " ".to_owned())], 0).expect("trigger");
    let started = Instant::now();
    let mut hits = Vec::new();
    for chunk in stream.chunks(CHUNK) {
        log.append(chunk);
        let view = log.view();
        let (oldest, head) = (view.oldest(), view.head());
        let base = triggers.window_start().max(oldest);
        hits.extend(triggers.scan(view.slice(base, head), base, head));
    }
    let elapsed = started.elapsed();
    let at = stream.len() as u64 - 9;
    let starts: Vec<u64> = hits.iter().map(|h| h.span.start).collect();
    assert_eq!(starts, vec![at], "wrong trigger hits");
    assert_eq!(hits[0].span.end, at + 8);
    black_box(log);
    elapsed
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
