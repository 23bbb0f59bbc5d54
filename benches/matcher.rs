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
//! Two figures per case, each the median of several runs after a warm-up
//! (5, or 21 for runs under 5 ms):
//! - `scan`: the scanner alone, driven over a log already holding the
//!   stream with the head advancing 4 KiB at a time (what the scanner sees
//!   is identical to the live case; the log's own growth is left out);
//! - `+append`: the live sequence of `wait_for_prompt`, appends included
//!   (the log's `Vec` growth and first-touch page faults count here: at
//!   16 MiB the fresh pages cost more than the scan itself).
//!
//! A `ceiling` line gives one search over the whole stream at once: the
//! engine's own speed on this pattern, which no chunked scan can beat.
//! The match offset is checked on every run; a wrong one panics, since it
//! would make the figure meaningless.
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
const SIZES: [usize; 3] = [1, 4, 16];

#[derive(Clone, Copy, PartialEq)]
enum Case {
    Literal,
    Regex,
    Trigger,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::Literal => "literal",
            Case::Regex => "regex",
            Case::Trigger => "trigger",
        }
    }
}

fn main() {
    let runs = if quick() { 3 } else { 5 };
    let regex_source = serialgate::presets::builtin("cisco-ios")
        .expect("cisco-ios preset")
        .prompt;
    let prompt = |case| match case {
        Case::Regex => Prompt::regex(&regex_source).expect("preset regex"),
        _ => Prompt::literal("SW1#"),
    };
    println!(
        "matcher throughput: output in {CHUNK}-byte chunks, prompt at the very end, median of {runs} runs"
    );
    println!("literal prompt: SW1#; trigger: --More-- → space");
    println!("cisco-ios prompt regex: {regex_source}");
    println!(
        "MB/s = 10^6 bytes/s; target ≥ {TARGET_MBPS:.0} MB/s and linear (16 MiB time ≈ 16× the 1 MiB time)"
    );
    println!();
    println!(
        "{:<8} {:>4} {:>10} {:>10} {:>12} {:>12}",
        "case", "MiB", "scan ms", "scan MB/s", "+append ms", "+append MB/s"
    );

    let mut figures = Vec::new();
    for case in [Case::Literal, Case::Regex, Case::Trigger] {
        let name = case.name();
        let mut scan_times = Vec::new();
        let mut live_times = Vec::new();
        for mib in SIZES {
            let stream = console_output(mib * MIB, case == Case::Trigger);
            let filled = OutputLog::new(RETENTION);
            filled.append(&stream);
            let once = |live: bool| match (case, live) {
                (Case::Trigger, false) => scan_trigger(&filled, &stream),
                (Case::Trigger, true) => live_trigger(&stream),
                (_, false) => scan_prompt(&filled, &stream, prompt(case)),
                (_, true) => live_prompt(&stream, prompt(case)),
            };
            let scan = median(runs, || once(false));
            let live = median(runs, || once(true));
            let (scan_mbps, live_mbps) = (mbps(stream.len(), scan), mbps(stream.len(), live));
            println!(
                "{name:<8} {mib:>4} {:>10.2} {scan_mbps:>10.0} {:>12.2} {live_mbps:>12.0}",
                ms(scan),
                ms(live)
            );
            figures.push(format!(r#""{name}_{mib}mib_scan_mbps":{scan_mbps:.0}"#));
            figures.push(format!(
                r#""{name}_{mib}mib_append_scan_mbps":{live_mbps:.0}"#
            ));
            scan_times.push(scan);
            live_times.push(live);
        }
        let stream = console_output(16 * MIB, case == Case::Trigger);
        let ceiling = median(runs, || one_search(case, &stream, prompt(case)));
        let ceiling_mbps = mbps(stream.len(), ceiling);
        let ratio = |t: &[Duration]| t[2].as_secs_f64() / t[0].as_secs_f64();
        let (scan_ratio, live_ratio) = (ratio(&scan_times), ratio(&live_times));
        let slowest = SIZES
            .iter()
            .zip(&scan_times)
            .map(|(&mib, &t)| mbps(mib * MIB, t))
            .fold(f64::INFINITY, f64::min);
        println!("{name:<8} ceiling: one search over 16 MiB at once: {ceiling_mbps:.0} MB/s");
        println!(
            "{name:<8} 16 MiB / 1 MiB time: scan {scan_ratio:.1}×, +append {live_ratio:.1}× (linear ≈ 16×); \
             slowest scan {slowest:.0} MB/s vs ≥ {TARGET_MBPS:.0}: {}",
            if slowest >= TARGET_MBPS {
                "meets"
            } else {
                "BELOW target"
            }
        );
        println!();
        figures.push(format!(r#""{name}_ceiling_mbps":{ceiling_mbps:.0}"#));
        figures.push(format!(r#""{name}_scan_ratio_16_to_1":{scan_ratio:.2}"#));
        figures.push(format!(
            r#""{name}_append_scan_ratio_16_to_1":{live_ratio:.2}"#
        ));
    }
    println!("{{{}}}", figures.join(","));
}

/// `--quick` or `SERIALGATE_BENCH_QUICK=1`.
fn quick() -> bool {
    std::env::args().any(|a| a == "--quick")
        || std::env::var("SERIALGATE_BENCH_QUICK").is_ok_and(|v| v == "1")
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

/// The one prompt match every run must find: the final `SW1#`.
fn check_prompt(stream: &[u8], found: Option<Span>, prompt: &Prompt) {
    let len = stream.len() as u64;
    let want = Span {
        start: len - 4,
        end: len,
    };
    assert_eq!(found, Some(want), "wrong match for {}", prompt.source());
}

/// The one trigger hit every run must find: the final `--More--`.
fn check_trigger(stream: &[u8], starts: &[u64]) {
    assert_eq!(starts, [stream.len() as u64 - 9], "wrong trigger hits");
}

/// The scanner alone: `filled` already holds `stream`; the head advances a
/// chunk at a time and each scan sees the window `wait_for_prompt` takes.
fn scan_prompt(filled: &OutputLog, stream: &[u8], prompt: Prompt) -> Duration {
    let mut scanner = PromptScanner::new(prompt, 0);
    let view = filled.view();
    let oldest = view.oldest();
    let started = Instant::now();
    let mut found = None;
    let mut head = 0;
    while head < view.head() {
        head = (head + CHUNK as u64).min(view.head());
        let base = scanner.window_start().max(oldest);
        if let Some(span) = scanner.scan(view.slice(base, head), base) {
            found = Some(span);
            break;
        }
    }
    let elapsed = started.elapsed();
    check_prompt(stream, found, scanner.prompt());
    elapsed
}

/// The live sequence: append a chunk, then scan as `wait_for_prompt` does.
fn live_prompt(stream: &[u8], prompt: Prompt) -> Duration {
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
    check_prompt(stream, found, scanner.prompt());
    black_box(log);
    elapsed
}

fn more_trigger() -> TriggerScanner {
    TriggerScanner::new(&[("--More--".to_owned(), " ".to_owned())], 0).expect("trigger")
}

/// The trigger scanner alone over a filled log (limit: the head).
fn scan_trigger(filled: &OutputLog, stream: &[u8]) -> Duration {
    let mut triggers = more_trigger();
    let view = filled.view();
    let oldest = view.oldest();
    let started = Instant::now();
    let mut starts = Vec::new();
    let mut head = 0;
    while head < view.head() {
        head = (head + CHUNK as u64).min(view.head());
        let base = triggers.window_start().max(oldest);
        starts.extend(
            triggers
                .scan(view.slice(base, head), base, head)
                .iter()
                .map(|h| h.span.start),
        );
    }
    let elapsed = started.elapsed();
    check_trigger(stream, &starts);
    elapsed
}

/// Append a chunk, then scan for triggers as `wait_for_prompt` does.
fn live_trigger(stream: &[u8]) -> Duration {
    let log = OutputLog::new(RETENTION);
    let mut triggers = more_trigger();
    let started = Instant::now();
    let mut starts = Vec::new();
    for chunk in stream.chunks(CHUNK) {
        log.append(chunk);
        let view = log.view();
        let (oldest, head) = (view.oldest(), view.head());
        let base = triggers.window_start().max(oldest);
        starts.extend(
            triggers
                .scan(view.slice(base, head), base, head)
                .iter()
                .map(|h| h.span.start),
        );
    }
    let elapsed = started.elapsed();
    check_trigger(stream, &starts);
    black_box(log);
    elapsed
}

/// One search over the whole stream: the engine's speed without chunking.
fn one_search(case: Case, stream: &[u8], prompt: Prompt) -> Duration {
    let started = Instant::now();
    if case == Case::Trigger {
        let starts: Vec<u64> = more_trigger()
            .scan(stream, 0, stream.len() as u64)
            .iter()
            .map(|h| h.span.start)
            .collect();
        let elapsed = started.elapsed();
        check_trigger(stream, &starts);
        return elapsed;
    }
    let found = prompt.find_at(stream, 0).map(|(s, e)| Span {
        start: s as u64,
        end: e as u64,
    });
    let elapsed = started.elapsed();
    check_prompt(stream, found, &prompt);
    elapsed
}

/// The median of `runs` timed runs (21 if one run takes under 5 ms, as
/// sub-millisecond times are noisy), after one untimed warm-up run.
fn median(runs: usize, mut run: impl FnMut() -> Duration) -> Duration {
    let runs = if run() < Duration::from_millis(5) {
        runs.max(21)
    } else {
        runs
    };
    let mut times: Vec<Duration> = (0..runs).map(|_| run()).collect();
    times.sort();
    times[times.len() / 2]
}

fn mbps(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / time.as_secs_f64() / 1e6
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
