//! TextFSM parsing (`send_command` with `parse`): what a parse costs and
//! what the shipped templates cost.
//!
//! Figures, each the median of several runs after a warm-up:
//! - `show interfaces, 2000 lines`: ntc-templates' `cisco_ios_show_interfaces`
//!   over a 2 000-line output (a fixture's interfaces repeated with new
//!   names), through the index as a result gets it;
//! - `every fixture`: all of `tests/fixtures/ntc/` parsed once, in total,
//!   and the slowest one;
//! - `templates`: the text the binary embeds (`templates/ntc/`), the time
//!   to compile every shipped template, and the resident memory that
//!   leaves (every one goes through the cache, which keeps the
//!   [`parse::cache::MAX_COMPILED`] most recently used: a daemon that
//!   parses every command of every platform grows by this much at most).
//!
//! Run: `cargo bench --bench parse` (add `-- --quick` or set
//! `SERIALGATE_BENCH_QUICK=1` for fewer runs). Nothing here asserts a
//! speed; a parse that gives no records panics, since the figure would
//! mean nothing.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use serialgate::parse::{self, UserTemplates};

fn quick() -> bool {
    std::env::var_os("SERIALGATE_BENCH_QUICK").is_some() || std::env::args().any(|a| a == "--quick")
}

/// The median of `runs` timings of `f`, after one warm-up.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// Resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4)
}

fn main() {
    let runs = if quick() { 3 } else { 11 };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let user = UserTemplates::default();

    // Templates: embedded bytes, compile time, memory compiled.
    let embedded: usize = parse::shipped::SHIPPED_TEMPLATES
        .iter()
        .map(|(_, t)| t.len())
        .sum::<usize>()
        + parse::shipped::SHIPPED_INDEX.len();
    let before = rss_kib();
    let t = Instant::now();
    for (name, _) in parse::shipped::SHIPPED_TEMPLATES {
        parse::shipped::compiled(name)
            .expect("shipped")
            .expect("compiles");
    }
    let compile = t.elapsed();
    let grown = rss_kib().saturating_sub(before);
    println!(
        "templates: {} shipped, {embedded} bytes embedded; all compiled in {compile:?}, +{grown} KiB resident with {} kept",
        parse::shipped::SHIPPED_TEMPLATES.len(),
        parse::cache::MAX_COMPILED
    );

    // show interfaces, 2 000 lines.
    let fixture =
        root.join("tests/fixtures/ntc/cisco_ios/show_interfaces/cisco_ios_show_interfaces.raw");
    let one = std::fs::read_to_string(&fixture).expect("fixture");
    let mut text = String::new();
    let mut copy = 0;
    while text.lines().count() < 2000 {
        text.push_str(&one.replace("GigabitEthernet", &format!("GigabitEthernet{copy}")));
        copy += 1;
    }
    let text: String = text.lines().take(2000).collect::<Vec<_>>().join("\n");
    let found = parse::find(&user, "cisco_ios", "show interfaces").expect("template");
    let far = Instant::now() + Duration::from_secs(3600);
    let mut records = 0;
    let took = median(runs, || {
        let o = parse::records::parse_until(&found, black_box(&text), far);
        records = o.parsed.expect("records").len();
    });
    assert!(records > 10, "{records} records");
    println!(
        "show interfaces, 2000 lines ({} bytes): {took:?}, {records} records",
        text.len()
    );

    // Every fixture.
    let mut cases = Vec::new();
    let fixtures = root.join("tests/fixtures/ntc");
    for platform in std::fs::read_dir(&fixtures).expect("fixtures").flatten() {
        if !platform.path().is_dir() {
            continue;
        }
        for folder in std::fs::read_dir(platform.path()).expect("dir").flatten() {
            for file in std::fs::read_dir(folder.path()).expect("dir").flatten() {
                let path = file.path();
                if path.extension().is_some_and(|e| e == "raw") {
                    let command = folder.file_name().to_string_lossy().replace('_', " ");
                    let platform = platform.file_name().to_string_lossy().into_owned();
                    if let Ok(found) = parse::find(&user, &platform, &command) {
                        cases.push((
                            path,
                            found,
                            std::fs::read_to_string(file.path()).unwrap_or_default(),
                        ));
                    }
                }
            }
        }
    }
    let mut slowest = (Duration::ZERO, String::new());
    let total = median(if quick() { 1 } else { 3 }, || {
        for (path, found, raw) in &cases {
            let t = Instant::now();
            black_box(parse::records::parse_until(found, raw, far));
            let took = t.elapsed();
            if took > slowest.0 {
                slowest = (took, path.display().to_string());
            }
        }
    });
    println!(
        "every fixture: {} in {total:?}; slowest {:?} ({})",
        cases.len(),
        slowest.0,
        slowest.1
    );
}
