//! What the fleet costs an agent: a command's round trip to a port of
//! another site against one on the serving gateway itself, and
//! `list_ports` with a large fleet announced, with the serving gateway's
//! memory for it.
//!
//! As the fleet's tests do: a hub `nats-server` (with their grants,
//! the alert stream's among them); a leaf server for site `dc1`,
//! dialling the hub with dc1's user and running JetStream in dc1's
//! domain; dc1's gateway (the release `serialgate serve`) holding a
//! simulated Cisco switch as `core-sw1`; and the serving gateway,
//! dialling the hub with an nkey, holding the same kind of switch as its
//! own port `hub-sw1`, serving over HTTP on loopback. The bench is the
//! agent, with a token, over MCP:
//!
//! - `rtt`: `send_command show clock` on `dc1/core-sw1` (through NATS and
//!   dc1's gateway) and on `hub-sw1`, in turn, p50/p99/max in ms; each
//!   answer must be the switch's clock, and each switch must have
//!   received exactly its own commands;
//! - where that time goes: `show clock` forwarded to dc1's gateway by the
//!   bench itself, as the serving gateway forwards it (NATS and the site
//!   without the serving gateway), and a NATS request alone through the
//!   hub and dc1's leaf to an echo on the leaf;
//! - `list_ports`: its latency with only those two ports, then with 50
//!   more sites of 48 ports each announced: the bench publishes their
//!   announcements itself each second, as 50 sites' gateways would (the
//!   JSON of `src/fleet/wire.rs`), each with its own user on the hub,
//!   allowed to publish only its site's announcements; every answer must
//!   list every port, open;
//! - the memory the serving gateway's directory keeps per announced
//!   port, counted in this process (a counting allocator) while the
//!   library reads and keeps the 50 sites' announcements as the daemon
//!   does (`serialgate::fleet_directory_of`), before any thread starts;
//! - the serving gateway's anonymous resident memory (`RssAnon`: the
//!   daemon gives back its binary's startup pages 5 s after it is ready,
//!   which would move `VmRSS` in the middle of the count) before the 50 sites,
//!   once it has heard them all (seen through a token that lists one port
//!   of each, so that the whole list is not made yet), and after the
//!   `list_ports` calls of the whole list; the difference per announced
//!   port.
//!
//! - `console`: a burst of output printed by dc1's switch, watched through
//!   the serving gateway's console WebSocket (`/console`, spying on
//!   `dc1/core-sw1`) by 1 and then by 100 watchers: the time from the
//!   burst's first byte written to the switch's line to its last byte at
//!   every watcher, and the bytes per second that makes per watcher and in
//!   all. The site keeps the bytes; the serving gateway's one feed of the
//!   port reads each range once, whatever the number of watchers. Every
//!   watcher must see the burst whole, in order, or be told what its
//!   gateway's retention dropped (counted).
//!
//! It prints figures, never asserts a speed, and ends with one JSON line of
//! all of them (quoted by BENCHMARKS.md).
//!
//! Run (the release binary must exist first; nats-server must be
//! installed):
//!
//! ```text
//! cargo build --release && cargo bench --bench fleet
//! cargo bench --bench fleet -- --quick     # or SERIALGATE_BENCH_QUICK=1
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::client::GateClient;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use serialgate_testkit::nats::{self, NatsServer};
use serialgate_testkit::spread::{Spread, spread};
use serialgate_testkit::{binary, rig, wait};
use tokio_util::sync::CancellationToken;

/// Calls before timing starts.
const WARMUP: usize = 20;
/// How long any one expected thing may take before the bench fails.
const DEADLINE: Duration = Duration::from_secs(30);
/// The fake sites, and the ports each announces.
const SITES: usize = 50;
const PORTS_PER_SITE: usize = 48;
/// How often they announce (as a site's gateway does).
const ANNOUNCE_EVERY: Duration = Duration::from_secs(1);
const OPS: &str = "ops-secret-0123456789";
/// A token that sees one port of each fake site: its short `list_ports`
/// tells that every site was heard (a site's announcement is kept whole)
/// without the serving gateway making the whole list.
const SCOUT: &str = "scout-secret-0123456789";
/// The largest answer the agent's client takes (`list_ports` of the
/// whole fleet is some hundreds of KB).
const MAX_MESSAGE: usize = 64 << 20;

/// Counts the bytes (and allocations) this process holds, for what the
/// directory keeps per port.
struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static LIVE_ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to the system allocator unchanged; only the
// counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        LIVE_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's layout, as given.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        LIVE_ALLOCATIONS.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: the caller's pointer and layout, as given.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's pointer, layout and size, as given.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes and allocations the serving gateway's directory keeps per port
/// for the fake sites' announcements, read as the daemon reads them.
fn directory_per_port() -> (f64, f64) {
    let announcements: Vec<(String, Vec<u8>)> = (0..SITES)
        .map(|i| (fake_site(i), fake_announcement().into_bytes()))
        .collect();
    let (bytes, allocations) = (
        LIVE_BYTES.load(Ordering::Relaxed),
        LIVE_ALLOCATIONS.load(Ordering::Relaxed),
    );
    let directory = serialgate::fleet_directory_of(&announcements).expect("the announcements read");
    let kept = (
        LIVE_BYTES.load(Ordering::Relaxed) - bytes,
        LIVE_ALLOCATIONS.load(Ordering::Relaxed) - allocations,
    );
    drop(directory);
    let ports = (SITES * PORTS_PER_SITE) as f64;
    (kept.0 as f64 / ports, kept.1 as f64 / ports)
}

fn main() -> ExitCode {
    // Before any other thread allocates.
    let directory = directory_per_port();
    let quick = std::env::args().any(|a| a == "--quick")
        || std::env::var("SERIALGATE_BENCH_QUICK").is_ok_and(|v| v == "1");
    let binary = match binary::bench_binary() {
        Ok(binary) => binary,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(nats_server) = nats::binary() else {
        eprintln!("nats-server is missing (Debian: apt install nats-server)");
        return ExitCode::FAILURE;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (rtt_samples, list_samples) = if quick { (100, 20) } else { (1000, 200) };
    runtime.block_on(run(
        &binary,
        &nats_server,
        rtt_samples,
        list_samples,
        quick,
        directory,
    ));
    ExitCode::SUCCESS
}

async fn run(
    binary: &Path,
    nats_server: &Path,
    rtt_samples: usize,
    list_samples: usize,
    quick: bool,
    directory: (f64, f64),
) {
    let fleet = Fleet::start(binary, nats_server).await;
    let agent = GateClient::connect_http_with_limit(&fleet.url, Some(OPS), MAX_MESSAGE)
        .await
        .expect("an MCP session with the serving gateway");
    println!(
        "serving gateway pid {}, dc1 through a leaf; {rtt_samples} round trips, {list_samples} list_ports{}",
        fleet.serving_pid,
        if quick { " (quick)" } else { "" }
    );
    println!();

    for port in ["dc1/core-sw1", "hub-sw1"] {
        ok(&agent, "connect", json!({"port": port})).await;
        rig::enable(&agent).await;
    }
    let (remote, local, remote_cpu, local_cpu) = round_trips(&agent, &fleet, rtt_samples).await;
    ok(&agent, "disconnect", json!({"connection": "dc1/core-sw1"})).await;
    let (direct, floor) = site_and_floor(&fleet, rtt_samples).await;
    let small = list_ports(&agent, 2, list_samples).await;
    let burst = if quick { 256 << 10 } else { 1 << 20 };
    let one = console_fanout(&fleet, 1, burst).await;
    let hundred = console_fanout(&fleet, WATCHERS, burst).await;

    let scout = GateClient::connect_http(&fleet.url, Some(SCOUT))
        .await
        .expect("the scout's MCP session");
    let rss_before = rss_kib(fleet.serving_pid);
    let stop = CancellationToken::new();
    let announcing = announce_fake_sites(&fleet.hub_url, stop.clone()).await;
    let announced = SITES * PORTS_PER_SITE;
    let filled = Instant::now();
    wait::eventually("every fake site heard", DEADLINE, || async {
        let listed = ok(&scout, "list_ports", json!({})).await;
        let open = ports(&listed)
            .iter()
            .filter(|p| p["state"] == "open")
            .count();
        wait::when(open, |n| *n == SITES)
    })
    .await;
    let filled_in = filled.elapsed();
    let rss_filled = rss_kib(fleet.serving_pid);
    let whole = ok(&agent, "list_ports", json!({})).await;
    let open = ports(&whole)
        .iter()
        .filter(|p| p["name"].as_str().is_some_and(|n| n.starts_with("fake")))
        .filter(|p| p["state"] == "open")
        .count();
    assert_eq!(open, announced, "the fake sites' ports listed open");
    let list_bytes = whole.to_string().len();
    let large = list_ports(&agent, announced + 2, list_samples).await;
    let rss_after = rss_kib(fleet.serving_pid);
    stop.cancel();
    let _ = announcing.await;

    let per_port = |kib: u64| (kib.saturating_sub(rss_before) * 1024) as f64 / announced as f64;
    println!("send_command show clock, alternating, {rtt_samples} each (ms)");
    println!("{:>22} {:>9} {:>9} {:>9}", "port", "p50", "p99", "max");
    for (name, s) in [
        ("dc1/core-sw1 (fleet)", &remote),
        ("hub-sw1 (local)", &local),
    ] {
        println!("{name:>22} {:>9.3} {:>9.3} {:>9.3}", s.p50, s.p99, s.max);
    }
    let (remote_serving_us, remote_site_us) = remote_cpu.per_call_us();
    let (local_serving_us, _) = local_cpu.per_call_us();
    println!(
        "CPU a call (us): through the fleet {remote_serving_us:.0} at the serving gateway + {remote_site_us:.0} at dc1's; local {local_serving_us:.0}"
    );
    println!("where the fleet's time goes, {rtt_samples} each, alternating (ms)");
    for (name, s) in [("to dc1's gateway", &direct), ("NATS alone", &floor)] {
        println!("{name:>22} {:>9.3} {:>9.3} {:>9.3}", s.p50, s.p99, s.max);
    }
    println!();
    println!("list_ports at the serving gateway, {list_samples} calls (ms)");
    println!(
        "{:>22} {:>9} {:>9} {:>9}",
        "ports listed", "p50", "p99", "max"
    );
    for (n, s) in [(2, &small), (announced + 2, &large)] {
        println!("{n:>22} {:>9.3} {:>9.3} {:>9.3}", s.p50, s.p99, s.max);
    }
    println!(
        "(the whole list's structured content is {} KiB of JSON)",
        list_bytes / 1024
    );
    println!();
    println!(
        "console output of dc1/core-sw1 through the fleet, a burst of {} KiB, spied on over the serving gateway's WebSocket",
        burst >> 10
    );
    println!(
        "{:>22} {:>9} {:>14} {:>14} {:>10}",
        "watchers", "ms", "MiB/s each", "MiB/s in all", "truncated"
    );
    for f in [&one, &hundred] {
        println!(
            "{:>22} {:>9.0} {:>14.2} {:>14.2} {:>10}",
            f.watchers,
            f.seconds * 1e3,
            f.per_watcher_mib_s(burst),
            f.per_watcher_mib_s(burst) * f.watchers as f64,
            f.truncated
        );
    }
    println!();
    println!(
        "{SITES} sites x {PORTS_PER_SITE} ports heard {:.0} ms after their first announcements were sent",
        filled_in.as_secs_f64() * 1e3
    );
    println!(
        "the serving gateway's directory keeps {:.0} B per announced port, in {:.1} allocations (counted in-process; the allocator adds 8 to 16 B to each)",
        directory.0, directory.1
    );
    println!(
        "serving gateway RssAnon: {rss_before} KiB before, {rss_filled} KiB with {announced} ports announced ({:.0} B per port), {rss_after} KiB after the whole list's calls ({:.0} B per port)",
        per_port(rss_filled),
        per_port(rss_after)
    );
    println!();
    println!(
        "{}",
        json!({
            "rtt_samples": rtt_samples,
            "remote_p50_ms": remote.p50, "remote_p99_ms": remote.p99, "remote_max_ms": remote.max,
            "local_p50_ms": local.p50, "local_p99_ms": local.p99, "local_max_ms": local.max,
            "site_direct_p50_ms": direct.p50, "site_direct_p99_ms": direct.p99,
            "remote_cpu_serving_us": remote_serving_us, "remote_cpu_site_us": remote_site_us,
            "local_cpu_serving_us": local_serving_us,
            "nats_floor_p50_ms": floor.p50, "nats_floor_p99_ms": floor.p99,
            "list_samples": list_samples,
            "list_2_p50_ms": small.p50, "list_2_p99_ms": small.p99, "list_2_max_ms": small.max,
            "list_ports": announced + 2, "list_full_bytes": list_bytes,
            "list_full_p50_ms": large.p50, "list_full_p99_ms": large.p99, "list_full_max_ms": large.max,
            "heard_after_ms": filled_in.as_secs_f64() * 1e3,
            "rss_before_kib": rss_before, "rss_filled_kib": rss_filled, "rss_after_kib": rss_after,
            "rss_per_port_b": per_port(rss_filled),
            "directory_b_per_port": directory.0,
            "directory_allocations_per_port": directory.1,
            "console_burst_bytes": burst,
            "console_1_ms": one.seconds * 1e3,
            "console_1_mib_s": one.per_watcher_mib_s(burst),
            "console_100_ms": hundred.seconds * 1e3,
            "console_100_mib_s_each": hundred.per_watcher_mib_s(burst),
            "console_100_mib_s_all": hundred.per_watcher_mib_s(burst) * WATCHERS as f64,
            "console_100_truncated_bytes": hundred.truncated,
        })
    );
}

/// Watchers of the console fan-out.
const WATCHERS: usize = 100;

/// What a console burst took.
struct Fanout {
    watchers: usize,
    /// From the burst's first byte written to the last watcher's last.
    seconds: f64,
    /// Bytes of the burst the watchers were told retention dropped.
    truncated: u64,
}

impl Fanout {
    fn per_watcher_mib_s(&self, burst: usize) -> f64 {
        burst as f64 / self.seconds / (1 << 20) as f64
    }
}

/// `watchers` spies on `dc1/core-sw1` through the serving gateway's
/// console WebSocket, then a burst of `burst` bytes of numbered lines
/// printed by dc1's switch; how long until every watcher had all of it.
/// Panics when a watcher's output is not the burst (less what it was
/// told was dropped).
async fn console_fanout(fleet: &Fleet, watchers: usize, burst: usize) -> Fanout {
    use serialgate_testkit::console::{ConsoleConn, Received};
    let url = format!(
        "{}/console",
        fleet
            .url
            .trim_end_matches("/mcp")
            .replacen("http://", "ws://", 1)
    );
    let end = format!("burst-end-{watchers}\r\n");
    let mut text = Vec::with_capacity(burst + 64);
    let mut n = 0;
    while text.len() + 80 + end.len() <= burst {
        text.extend_from_slice(
            format!("{:<78}\r\n", format!("burst {watchers} line {n:06}")).as_bytes(),
        );
        n += 1;
    }
    text.extend_from_slice(end.as_bytes());
    let text = std::sync::Arc::new(text);
    let mut tasks = tokio::task::JoinSet::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel(watchers);
    for _ in 0..watchers {
        let (url, text, ready) = (url.clone(), text.clone(), ready_tx.clone());
        tasks.spawn(async move {
            let (mut conn, attached) = ConsoleConn::attach_ws(
                &url,
                Some(OPS),
                "dc1/core-sw1",
                "spy",
                json!({"replay_lines": 0}),
            )
            .await
            .expect("a console WebSocket");
            let start = attached["start"].as_u64().expect("start");
            ready.send(()).await.expect("the bench waits");
            let mut got: Vec<u8> = Vec::with_capacity(text.len());
            let mut truncated = 0u64;
            let mut at = start;
            while !got.ends_with(b"\r\n") || !got.ends_with(&text[text.len() - 20..]) {
                match conn.next().await {
                    Some(Received::Data { offset, bytes }) => {
                        assert_eq!(offset, at, "data in order");
                        at += bytes.len() as u64;
                        got.extend_from_slice(&bytes);
                    }
                    Some(Received::Json(m)) if m["type"] == "truncated" => {
                        let (from, to) = (
                            m["from"].as_u64().unwrap_or(0),
                            m["to"].as_u64().unwrap_or(0),
                        );
                        truncated += to - from;
                        at = to;
                    }
                    Some(Received::Json(_)) => {}
                    None => panic!("a watcher's console closed"),
                }
            }
            if truncated == 0 {
                assert!(got.ends_with(&text), "a watcher's output is the burst");
            }
            (Instant::now(), truncated)
        });
    }
    drop(ready_tx);
    for _ in 0..watchers {
        ready_rx.recv().await.expect("a watcher attached");
    }
    let started = Instant::now();
    fleet.remote_sim.inject(&text).await;
    let mut last = started;
    let mut truncated = 0;
    while let Some(done) = tasks.join_next().await {
        let (at, dropped) = done.expect("a watcher");
        last = last.max(at);
        truncated += dropped;
    }
    Fanout {
        watchers,
        seconds: last.duration_since(started).as_secs_f64(),
        truncated,
    }
}

/// `show clock` on the remote port and on the local one, in turn, after a
/// warm-up; ms each. Panics on an answer that is not the clock, or when a
/// switch did not get exactly the commands sent to its port.
async fn round_trips(
    agent: &GateClient,
    fleet: &Fleet,
    samples: usize,
) -> (Spread, Spread, CallCpu, CallCpu) {
    let sent_before = [&fleet.remote_sim, &fleet.local_sim].map(clocks_received);
    let mut remote = Vec::with_capacity(samples);
    let mut local = Vec::with_capacity(samples);
    let (mut remote_cpu, mut local_cpu) = (CallCpu::default(), CallCpu::default());
    for i in 0..WARMUP + samples {
        for (port, times, cpu) in [
            ("dc1/core-sw1", &mut remote, &mut remote_cpu),
            ("hub-sw1", &mut local, &mut local_cpu),
        ] {
            let cpu_before = [fleet.serving_pid, fleet.site_pid].map(cpu_ns);
            let started = Instant::now();
            let answer = ok(
                agent,
                "send_command",
                json!({"connection": port, "command": "show clock"}),
            )
            .await;
            let took = started.elapsed();
            let cpu_after = [fleet.serving_pid, fleet.site_pid].map(cpu_ns);
            let output = answer["output"].as_str().unwrap_or_default();
            assert!(
                output.contains(" UTC ") && answer["prompt_text"] == "SW1#",
                "{port}: not the clock: {answer}"
            );
            if i >= WARMUP {
                times.push(took.as_secs_f64() * 1e3);
                cpu.add(cpu_before, cpu_after);
            }
        }
    }
    let sent_after = [&fleet.remote_sim, &fleet.local_sim].map(clocks_received);
    for (i, port) in ["dc1/core-sw1", "hub-sw1"].iter().enumerate() {
        assert_eq!(
            sent_after[i] - sent_before[i],
            WARMUP + samples,
            "{port}'s switch got another number of commands than were sent to it"
        );
    }
    (spread(remote), spread(local), remote_cpu, local_cpu)
}

/// The CPU the two gateways spent on a kind of call, summed over its
/// samples.
#[derive(Default)]
struct CallCpu {
    serving_ns: u64,
    site_ns: u64,
    calls: u64,
}

impl CallCpu {
    fn add(&mut self, before: [u64; 2], after: [u64; 2]) {
        self.serving_ns += after[0].saturating_sub(before[0]);
        self.site_ns += after[1].saturating_sub(before[1]);
        self.calls += 1;
    }

    /// Microseconds of CPU a call, at the serving gateway and at dc1's.
    fn per_call_us(&self) -> (f64, f64) {
        let calls = self.calls.max(1) as f64;
        (
            self.serving_ns as f64 / calls / 1e3,
            self.site_ns as f64 / calls / 1e3,
        )
    }
}

/// The CPU time process `pid` has run so far, all its threads, in ns
/// (each thread's `schedstat`; a thread that ended is not counted, and
/// the daemons' runtime threads live as long as they do).
fn cpu_ns(pid: u32) -> u64 {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    threads
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Where the fleet's time goes, by taking parts away; ms each, the two
/// alternating after a warm-up:
/// - `show clock` forwarded to dc1's gateway by the bench itself, as the
///   serving gateway forwards it (its nkey, its subject, the JSON of
///   `src/fleet/wire.rs`) in a session of its own: NATS and the site,
///   without the serving gateway;
/// - NATS alone: a request of the same size through the hub and dc1's
///   leaf to a client of the leaf that answers at once with as many bytes
///   as dc1's gateway answered.
///
/// The agent's own connection to dc1/core-sw1 must be closed first (the
/// bench's session takes the switch's write hold).
async fn site_and_floor(fleet: &Fleet, samples: usize) -> (Spread, Spread) {
    let serving = async_nats::ConnectOptions::new()
        .nkey(fleet.serving_seed.clone())
        .connect(fleet.hub_url.as_str())
        .await
        .expect("the bench connects to the hub as the serving gateway");
    let mut number = 0;
    let mut call = |tool: &str, arguments: Value| {
        number += 1;
        json!({"v": 2, "gateway": "bench:1-00000000", "session": 1, "token": "ops",
               "access": "write", "use_credentials": false, "client": "fleet-bench",
               "tool": tool, "arguments": arguments, "call": number})
        .to_string()
    };
    let ask = async |payload: String| -> (Value, usize) {
        let answer = serving
            .request("serialgate.site.dc1.call", payload.into())
            .await
            .expect("dc1's gateway answers");
        let value: Value = serde_json::from_slice(&answer.payload).expect("an answer in JSON");
        (value, answer.payload.len())
    };
    let (connected, _) = ask(call("connect", json!({"port": "core-sw1"}))).await;
    assert!(
        connected["result"]["isError"] != true,
        "the bench's connect at dc1: {connected}"
    );
    let show_clock = call(
        "send_command",
        json!({"connection": "core-sw1", "command": "show clock"}),
    );
    let (answered, answer_bytes) = ask(show_clock.clone()).await;
    assert!(
        answered["result"]["structuredContent"]["prompt_text"] == "SW1#",
        "show clock forwarded by the bench: {answered}"
    );

    // The echo: a client of dc1's leaf, on a subject of dc1 (which dc1's
    // user on the hub may take), answering with as many bytes.
    let leaf = async_nats::connect(fleet.leaf.url())
        .await
        .expect("the bench connects to dc1's leaf");
    let mut echoes = leaf
        .subscribe("serialgate.site.dc1.bench-echo")
        .await
        .expect("subscribe the echo");
    let echo = {
        let leaf = leaf.clone();
        let reply = vec![b'x'; answer_bytes];
        tokio::spawn(async move {
            use futures_util::StreamExt;
            while let Some(message) = echoes.next().await {
                if let Some(to) = message.reply {
                    let _ = leaf.publish(to, reply.clone().into()).await;
                }
            }
        })
    };
    // The leaf tells the hub of the subscription in its own time.
    wait::eventually("the echo heard through the hub", DEADLINE, || async {
        let heard = serving
            .request("serialgate.site.dc1.bench-echo", "x".into())
            .await
            .is_ok();
        wait::when(heard, |h| *h)
    })
    .await;

    let sent_before = clocks_received(&fleet.remote_sim);
    let mut direct = Vec::with_capacity(samples);
    let mut floor = Vec::with_capacity(samples);
    for i in 0..WARMUP + samples {
        let started = Instant::now();
        let (answered, _) = ask(show_clock.clone()).await;
        let took = started.elapsed();
        assert!(
            answered["result"]["structuredContent"]["prompt_text"] == "SW1#",
            "{answered}"
        );
        let started = Instant::now();
        serving
            .request("serialgate.site.dc1.bench-echo", show_clock.clone().into())
            .await
            .expect("the echo answers");
        let echoed = started.elapsed();
        if i >= WARMUP {
            direct.push(took.as_secs_f64() * 1e3);
            floor.push(echoed.as_secs_f64() * 1e3);
        }
    }
    assert_eq!(
        clocks_received(&fleet.remote_sim) - sent_before,
        WARMUP + samples,
        "dc1's switch got another number of commands than the bench sent"
    );
    ask(call("disconnect", json!({"connection": "core-sw1"}))).await;
    echo.abort();
    (spread(direct), spread(floor))
}

/// How many `show clock` lines `sim` has received.
fn clocks_received(sim: &SimHandle) -> usize {
    let received = sim.received();
    received
        .windows(b"show clock".len())
        .filter(|w| *w == b"show clock")
        .count()
}

/// `samples` `list_ports` calls after a warm-up, ms; each must list
/// `expected` ports.
async fn list_ports(agent: &GateClient, expected: usize, samples: usize) -> Spread {
    let mut times = Vec::with_capacity(samples);
    for i in 0..WARMUP.min(samples) + samples {
        let started = Instant::now();
        let listed = ok(agent, "list_ports", json!({})).await;
        let took = started.elapsed();
        let n = ports(&listed).len();
        assert_eq!(n, expected, "list_ports listed {n} ports, not {expected}");
        if i >= WARMUP.min(samples) {
            times.push(took.as_secs_f64() * 1e3);
        }
    }
    spread(times)
}

fn ports(listed: &Value) -> &[Value] {
    listed["ports"].as_array().map_or(&[], Vec::as_slice)
}

async fn ok(agent: &GateClient, tool: &str, args: Value) -> Value {
    agent.call(tool, args).await.expect("MCP transport").ok()
}

/// The fake sites' names.
fn fake_site(i: usize) -> String {
    format!("fake{i:02}")
}

/// What a site's user on the hub may do (as the fleet's tests allow it):
/// publish its own announcements and alerts, take its own calls and
/// answer them, and take the requests to its own JetStream domain and the
/// acks of its own alert stream.
fn site_user(site: &str) -> String {
    format!(
        "    {{ user: \"{site}\", password: \"{}\", permissions: {{ publish: [\"serialgate.announce.{site}\", \"serialgate.from.{site}.>\", \"_INBOX.>\"], subscribe: [\"serialgate.site.{site}.>\", \"$JS.{site}.API.>\", \"$JS.ACK.serialgate-alerts-{site}.>\"], allow_responses: true }} }}\n",
        password(site)
    )
}

fn password(site: &str) -> String {
    format!("{site}-bench-secret")
}

/// Connects as each fake site with its own user, and announces its
/// ports every [`ANNOUNCE_EVERY`] until `stop`.
async fn announce_fake_sites(hub: &str, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    let mut sites = Vec::with_capacity(SITES);
    for i in 0..SITES {
        let site = fake_site(i);
        let client =
            async_nats::ConnectOptions::with_user_and_password(site.clone(), password(&site))
                .connect(hub)
                .await
                .expect("a fake site's user connects");
        let payload = fake_announcement();
        sites.push((client, format!("serialgate.announce.{site}"), payload));
    }
    tokio::spawn(async move {
        let mut every = tokio::time::interval(ANNOUNCE_EVERY);
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                _ = every.tick() => {}
            }
            for (client, subject, payload) in &sites {
                client
                    .publish(subject.clone(), payload.clone().into())
                    .await
                    .expect("publish an announcement");
            }
            for (client, _, _) in &sites {
                client.flush().await.expect("flush the announcements");
            }
        }
    })
}

/// A fake site's announcement: its ports open, as a site's gateway
/// writes it (`src/fleet/wire.rs`).
fn fake_announcement() -> String {
    let ports: Vec<Value> = (1..=PORTS_PER_SITE)
        .map(|p| {
            json!({"name": format!("sw{p:02}"), "state": "open", "preset": "cisco-ios", "writer": null,
                "people": 0, "waiting": 0, "bytes_read": 48_213, "bytes_written": 1_204,
                "last_line": format!("sw{p:02}#")})
        })
        .collect();
    json!({"v": 2, "ports": ports}).to_string()
}

/// The serving gateway's anonymous resident memory, KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no RssAnon in {status}"))
}

/// The hub, dc1's leaf and gateway, the serving gateway, and both
/// switches.
struct Fleet {
    _dir: tempfile::TempDir,
    _hub: NatsServer,
    hub_url: String,
    leaf: NatsServer,
    /// The serving gateway's nkey seed, for the bench's own requests to
    /// dc1 as that gateway sends them.
    serving_seed: String,
    remote_sim: SimHandle,
    local_sim: SimHandle,
    _site: Daemon,
    _serving: Daemon,
    serving_pid: u32,
    site_pid: u32,
    url: String,
    _notify: Vec<NotifySocket>,
}

impl Fleet {
    async fn start(binary: &Path, nats_server: &Path) -> Fleet {
        let dir = tempfile::tempdir().expect("temp dir");
        let key = nkeys::KeyPair::new_user();
        private(
            &dir.path().join("serving.nk"),
            &key.seed().expect("the serving gateway's seed"),
        );
        let leaf_port = nats::free_port();
        let mut users = format!(
            "    {{ nkey: \"{}\", permissions: {{ publish: [\"serialgate.site.*.>\", \"serialgate.announce.hub\", \"serialgate.from.hub.>\", \"$JS.*.API.STREAM.INFO.*\", \"$JS.*.API.CONSUMER.>\", \"$JS.ACK.>\"], subscribe: [\"serialgate.announce.*\", \"serialgate.from.*.>\", \"serialgate.site.hub.>\", \"_INBOX.>\"], allow_responses: true }} }}\n",
            key.public_key()
        );
        users.push_str(&site_user("dc1"));
        for i in 0..SITES {
            users.push_str(&site_user(&fake_site(i)));
        }
        let hub = NatsServer::start(
            nats_server,
            dir.path(),
            "hub",
            &format!(
                "leafnodes {{ listen: \"127.0.0.1:{leaf_port}\" }}\nauthorization {{\n  users = [\n{users}  ]\n}}\n"
            ),
        )
        .await;
        let leaf = NatsServer::start(
            nats_server,
            dir.path(),
            "leaf-dc1",
            // JetStream in dc1's own domain, as the fleet's tests run it,
            // for dc1's alert stream.
            &format!(
                "jetstream {{ domain: \"dc1\", store_dir: {:?} }}\n\
                 leafnodes {{ remotes = [ {{ url: \"nats-leaf://dc1:{}@127.0.0.1:{leaf_port}\" }} ] }}\n",
                dir.path().join("js-dc1"),
                password("dc1")
            ),
        )
        .await;
        let remote_sim = sim::spawn(Profile::CiscoIos, None)
            .await
            .expect("dc1's switch");
        let local_sim = sim::spawn(Profile::CiscoIos, None)
            .await
            .expect("the serving gateway's switch");
        let mut notify = Vec::new();

        let site_config = dir.path().join("dc1.toml");
        std::fs::write(
            &site_config,
            format!(
                "[server]\nauth = \"none\"\n\n[ports.core-sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n\n\
                 [fleet]\nurls = [\"{}\"]\nsite = \"dc1\"\n",
                remote_sim.path().display(),
                leaf.url()
            ),
        )
        .expect("write dc1's config");
        let (site, _) = gateway(binary, dir.path(), "dc1", &site_config, &mut notify).await;
        let site_pid = site.child.id().expect("dc1's gateway runs");

        let tokens = daemon::tokens_toml(
            dir.path(),
            &[
                ("ops", OPS, r#"["*", "*/*"]"#, "write"),
                ("scout", SCOUT, r#"["fake*/sw01"]"#, "read"),
            ],
        );
        let serving_config = dir.path().join("serving.toml");
        std::fs::write(
            &serving_config,
            format!(
                "[ports.hub-sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n\n{tokens}\n\
                 [fleet]\nurls = [\"{}\"]\nsite = \"hub\"\ncredentials = \"serving.nk\"\nserve = true\n",
                local_sim.path().display(),
                hub.url()
            ),
        )
        .expect("write the serving gateway's config");
        let (serving, url) =
            gateway(binary, dir.path(), "serving", &serving_config, &mut notify).await;
        let serving_pid = serving.child.id().expect("the serving gateway runs");
        let fleet = Fleet {
            hub_url: hub.url(),
            _dir: dir,
            _hub: hub,
            leaf,
            serving_seed: key.seed().expect("the serving gateway's seed"),
            remote_sim,
            local_sim,
            _site: site,
            _serving: serving,
            serving_pid,
            site_pid,
            url,
            _notify: notify,
        };
        let agent = GateClient::connect_http(&fleet.url, Some(OPS))
            .await
            .expect("an MCP session with the serving gateway");
        wait::eventually("dc1/core-sw1 listed, open", DEADLINE, || async {
            let listed = ok(&agent, "list_ports", json!({})).await;
            let open = ports(&listed)
                .iter()
                .any(|p| p["name"] == "dc1/core-sw1" && p["state"] == "open");
            wait::when(listed, |_| open)
        })
        .await;
        fleet
    }
}

/// Starts `binary serve` with `config` over HTTP on loopback, logging
/// warnings only (a line per call would cost each sample a write); waits
/// until it is ready. The daemon and its MCP URL.
async fn gateway(
    binary: &Path,
    dir: &Path,
    name: &str,
    config: &Path,
    notify: &mut Vec<NotifySocket>,
) -> (Daemon, String) {
    let own: PathBuf = dir.join(name);
    std::fs::create_dir(&own).expect("a gateway's dir");
    let socket = NotifySocket::bind(&own);
    let mut command = Daemon::command_for(binary, Some(config), &["--http", "127.0.0.1:0"]);
    command
        .env("NOTIFY_SOCKET", socket.path())
        .env("SERIALGATE_LOG", "warn");
    let mut daemon = Daemon::run(command);
    let url = tokio::time::timeout(DEADLINE, daemon.http_url())
        .await
        .expect("the gateway listens in time");
    socket.expect("READY=1").await;
    notify.push(socket);
    (daemon, url)
}

fn private(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("write a private file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
}
