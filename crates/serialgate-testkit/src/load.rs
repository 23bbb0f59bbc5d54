//! Load test: many talking devices, many MCP sessions over HTTP, nothing
//! lost.
//!
//! `ports` simulated devices (`Profile::Silent` on pseudo-terminals, in this
//! process) each have an injector task printing numbered lines without a
//! pause, `p07 seq 000123 <padding>\r\n`, at `lines_per_sec` each. Besides
//! them, every MCP session owns a simulated Cisco switch (`Profile::CiscoIos`,
//! port `swNN`; one writer per port is the gateway's rule). `serialgate serve
//! --http 127.0.0.1:0` runs as a child process with all of them configured
//! (`retention` large enough to keep every byte of the run) and a bearer
//! token, and `sessions` MCP sessions over streamable HTTP issue, for
//! `duration`, a mix of:
//!
//! - `send_command show clock` on the session's switch: the output must be
//!   exactly one clock line (`*HH:MM:SS.mmm UTC Mon Nov 30 2026`), matched,
//!   not timed out, and start after the previous command's end (its own
//!   output, nobody else's);
//! - `read_until_prompt` with prompt `\r\n` on a streaming port: the session's
//!   own consume cursor must make it the very next line, so each session sees
//!   consecutive sequence numbers per port whatever the other sessions read;
//! - `read_output` from offset 0 of a streaming port: every whole line in the
//!   page is the port's and the numbers are consecutive from 0.
//!
//! Then the injectors stop and every streaming port's whole retained output
//! is read with `read_output` pagination and compared with what its injector
//! wrote: every line exactly once and in order, byte for byte, nothing
//! truncated, nothing extra. The figures: commands/s, p50/p99 latency of
//! `send_command` and of every call, the daemon's peak RSS (`VmHWM` from
//! `/proc/PID/status`) and CPU time (utime+stime from `/proc/PID/stat`),
//! where PID is found by scanning `/proc` for the process whose command line
//! holds this run's temporary config path.
//!
//! `tests/testsuite/load.rs` runs a short version in the normal suite
//! (correctness only); `benches/load.rs` runs the long one and prints the
//! figures and one JSON line. `tests/testsuite/isolation.rs` and
//! `tests/testsuite/restart.rs` use this module's [`Daemon`], its line
//! format and the `/proc` readers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};

use crate::client::{GateClient, Outcome};
use crate::daemon;
use crate::wait;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// The bearer token with write access to every port.
pub const WRITE_SECRET: &str = "load-test-write-secret-0123456789";
/// The bearer token with read access to every port.
pub const READ_SECRET: &str = "load-test-read-secret-0123456789";

/// What a load run does.
#[derive(Debug, Clone)]
pub struct LoadParams {
    /// Streaming devices (ports `p00`, `p01`, …).
    pub ports: usize,
    /// MCP sessions over HTTP, each with its own Cisco switch (`sw00`, …).
    pub sessions: usize,
    /// How long the sessions issue calls.
    pub duration: Duration,
    /// Lines each streaming device prints per second.
    pub lines_per_sec: u32,
}

/// What a load run measured. Latencies are sorted, in microseconds.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// The parameters of the run.
    pub ports: usize,
    /// MCP sessions.
    pub sessions: usize,
    /// Seconds the sessions issued calls.
    pub seconds: f64,
    /// `send_command` latencies.
    pub command_us: Vec<u64>,
    /// `read_until_prompt` latencies.
    pub wait_us: Vec<u64>,
    /// `read_output` latencies.
    pub read_us: Vec<u64>,
    /// Seconds the devices streamed (from before the sessions' setup to
    /// the end).
    pub stream_s: f64,
    /// Lines the devices printed (all checked to be in the logs).
    pub lines: u64,
    /// Bytes the devices printed.
    pub bytes: u64,
    /// Pages read back to check the logs.
    pub verify_pages: u64,
    /// Peak resident set of the daemon (VmHWM), KiB.
    pub peak_rss_kib: u64,
    /// Resident set of the daemon at the end (VmRSS), KiB.
    pub rss_kib: u64,
    /// CPU seconds of the daemon (user + system), whole run.
    pub cpu_s: f64,
    /// Wall seconds of the daemon's life up to the measurement.
    pub wall_s: f64,
}

impl LoadReport {
    /// Every call's latency, sorted.
    pub fn all_us(&self) -> Vec<u64> {
        let mut all: Vec<u64> = [&self.command_us, &self.wait_us, &self.read_us]
            .into_iter()
            .flatten()
            .copied()
            .collect();
        all.sort_unstable();
        all
    }

    /// Commands per second.
    pub fn commands_per_s(&self) -> f64 {
        self.command_us.len() as f64 / self.seconds
    }

    /// Calls per second, all kinds.
    pub fn calls_per_s(&self) -> f64 {
        (self.command_us.len() + self.wait_us.len() + self.read_us.len()) as f64 / self.seconds
    }

    /// The figures as one JSON object.
    pub fn json(&self) -> Value {
        let ms = |v: &[u64], q: f64| percentile(v, q) as f64 / 1000.0;
        let all = self.all_us();
        json!({
            "bench": "load",
            "ports": self.ports,
            "sessions": self.sessions,
            "seconds": round2(self.seconds),
            "commands": self.command_us.len(),
            "commands_per_s": round2(self.commands_per_s()),
            "calls": all.len(),
            "calls_per_s": round2(self.calls_per_s()),
            "command_p50_ms": ms(&self.command_us, 0.50),
            "command_p99_ms": ms(&self.command_us, 0.99),
            "command_max_ms": ms(&self.command_us, 1.0),
            "wait_p50_ms": ms(&self.wait_us, 0.50),
            "wait_p99_ms": ms(&self.wait_us, 0.99),
            "read_output_p50_ms": ms(&self.read_us, 0.50),
            "read_output_p99_ms": ms(&self.read_us, 0.99),
            "call_p50_ms": ms(&all, 0.50),
            "call_p99_ms": ms(&all, 0.99),
            "lines": self.lines,
            "bytes": self.bytes,
            "stream_mb_per_s": round2(self.bytes as f64 / self.stream_s.max(1e-9) / 1e6),
            "verify_pages": self.verify_pages,
            "peak_rss_mib": round2(self.peak_rss_kib as f64 / 1024.0),
            "end_rss_mib": round2(self.rss_kib as f64 / 1024.0),
            "cpu_s": round2(self.cpu_s),
            "cpu_pct": round2(100.0 * self.cpu_s / self.wall_s.max(1e-9)),
        })
    }

    /// Prints the figures for people.
    pub fn print(&self) {
        let f = |v: &[u64], q: f64| format!("{:.2} ms", percentile(v, q) as f64 / 1000.0);
        let all = self.all_us();
        println!(
            "load: {} streaming ports + {} switches, {} HTTP sessions, {:.1} s",
            self.ports, self.sessions, self.sessions, self.seconds
        );
        println!(
            "  send_command   {:>7} calls  {:>8.1}/s  p50 {}  p99 {}  max {}",
            self.command_us.len(),
            self.commands_per_s(),
            f(&self.command_us, 0.5),
            f(&self.command_us, 0.99),
            f(&self.command_us, 1.0)
        );
        println!(
            "  read_until_prompt {:>4} calls  {:>8.1}/s  p50 {}  p99 {}",
            self.wait_us.len(),
            self.wait_us.len() as f64 / self.seconds,
            f(&self.wait_us, 0.5),
            f(&self.wait_us, 0.99)
        );
        println!(
            "  read_output    {:>7} calls  {:>8.1}/s  p50 {}  p99 {}",
            self.read_us.len(),
            self.read_us.len() as f64 / self.seconds,
            f(&self.read_us, 0.5),
            f(&self.read_us, 0.99)
        );
        println!(
            "  all calls      {:>7} calls  {:>8.1}/s  p50 {}  p99 {}",
            all.len(),
            self.calls_per_s(),
            f(&all, 0.5),
            f(&all, 0.99)
        );
        println!(
            "  streamed {} lines, {:.1} MB ({:.2} MB/s), every one found once and in order ({} pages read back)",
            self.lines,
            self.bytes as f64 / 1e6,
            self.bytes as f64 / self.stream_s.max(1e-9) / 1e6,
            self.verify_pages
        );
        println!(
            "  daemon: peak RSS {:.1} MiB (end {:.1} MiB), CPU {:.2} s over {:.1} s ({:.0}% of one core)",
            self.peak_rss_kib as f64 / 1024.0,
            self.rss_kib as f64 / 1024.0,
            self.cpu_s,
            self.wall_s,
            100.0 * self.cpu_s / self.wall_s.max(1e-9)
        );
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The `q` quantile (0..=1) of sorted values, 0 if there are none.
pub fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Padding that makes a streamed line about 80 bytes.
const PAD: &str = "the quick brown fox jumps over the lazy dog 0123456789";

/// Line `seq` of streaming port `port`.
pub fn stream_line(port: usize, seq: u64) -> String {
    format!("p{port:02} seq {seq:06} {PAD}\r\n")
}

/// Parses a streamed line (without its `\r\n`): port and sequence number.
pub fn parse_line(line: &str) -> Option<(usize, u64)> {
    let rest = line.strip_prefix('p')?;
    let (port, rest) = rest.split_once(" seq ")?;
    let (seq, pad) = rest.split_once(' ')?;
    (pad == PAD).then_some(())?;
    Some((port.parse().ok()?, seq.parse().ok()?))
}

/// Raises the soft limit of open files to the hard limit (a run holds two
/// descriptors per simulated device here, and the daemon, which inherits
/// the limit, one per port plus its sockets).
pub fn raise_fd_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local rlimit.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// The process whose command line contains `needle` (e.g. a unique
/// temporary config path), found by scanning `/proc`.
pub fn pid_with_cmdline(needle: &Path) -> Option<u32> {
    let needle = needle.as_os_str().as_encoded_bytes();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            memchr::memmem::find(&cmdline, needle).map(|_| pid)
        })
}

/// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`), in KiB.
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let value = line.strip_prefix(field)?.strip_prefix(':')?;
        value.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

/// The peak of a process's resident anonymous memory (`RssAnon`), sampled
/// every millisecond by a thread of its own until stopped: the kernel
/// keeps a peak of the whole resident set only, which holds the code
/// pages a call touches too. A thread, not a task, so that it samples
/// while the runtime is busy with the call it measures.
pub struct AnonPeak {
    sampling: std::sync::Arc<std::sync::atomic::AtomicBool>,
    sampler: std::thread::JoinHandle<Option<u64>>,
}

impl AnonPeak {
    /// Starts sampling `pid`.
    pub fn start(pid: u32) -> AnonPeak {
        let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let on = sampling.clone();
        let sampler = std::thread::spawn(move || {
            let mut peak = None;
            while on.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(proc_status_kib(pid, "RssAnon"));
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            peak
        });
        AnonPeak { sampling, sampler }
    }

    /// Stops sampling; the peak in KiB (`None` if it was never read).
    pub fn stop(self) -> Option<u64> {
        self.sampling
            .store(false, std::sync::atomic::Ordering::Relaxed);
        self.sampler.join().ok().flatten()
    }
}

/// CPU seconds (utime + stime) and wall seconds since start of a process,
/// from `/proc/PID/stat`.
pub fn proc_cpu_wall_s(pid: u32) -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may hold spaces: `state` is field 3.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<f64>().ok();
    let (utime, stime, start) = (field(14)?, field(15)?, field(22)?);
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(((utime + stime) / hz, uptime - start / hz))
}

/// `[[tokens]]` for [`WRITE_SECRET`] (`load`) and [`READ_SECRET`]
/// (`watch`), their secret files written into `dir` (mode 600).
fn tokens_toml(dir: &Path) -> anyhow::Result<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut toml = String::new();
    for (name, secret, access) in [
        ("load", WRITE_SECRET, "write"),
        ("watch", READ_SECRET, "read"),
    ] {
        let file = dir.join(format!("{name}.token"));
        std::fs::write(&file, format!("{secret}\n"))?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))?;
        toml.push_str(&format!(
            "[[tokens]]\nname = \"{name}\"\nsecret_file = {:?}\nports = [\"*\"]\naccess = \"{access}\"\n\n",
            file.display()
        ));
    }
    Ok(toml)
}

/// A `serialgate serve --http 127.0.0.1:0` child (the test kit's
/// [`daemon::Daemon`]) with a config in a temporary directory, killed when
/// dropped.
pub struct Daemon {
    process: daemon::Daemon,
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// The daemon's process id (found by its config path in `/proc`).
    pub pid: u32,
    /// Holds the config, token files and device links.
    pub dir: TempDir,
}

impl Daemon {
    /// Writes `config` plus the two tokens into `dir`, starts `binary serve
    /// --config F --http 127.0.0.1:0` (logs at `warn` unless
    /// `SERIALGATE_LOG` says otherwise) and waits for its `listening on`
    /// line.
    pub async fn start(binary: &Path, dir: TempDir, config: &str) -> anyhow::Result<Daemon> {
        let path: PathBuf = dir.path().join("serialgate-load.toml");
        let config = format!("{config}\n{}", tokens_toml(dir.path())?);
        std::fs::write(&path, config)?;
        let mut cmd = daemon::Daemon::command_for(binary, Some(&path), &["--http", "127.0.0.1:0"]);
        cmd.env(
            "SERIALGATE_LOG",
            std::env::var("SERIALGATE_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null());
        let mut process = daemon::Daemon::try_run(cmd)
            .with_context(|| format!("spawning {}", binary.display()))?;
        let url = process.http_url().await;
        let pid = pid_with_cmdline(&path).context("the daemon's pid in /proc")?;
        ensure!(
            Some(pid) == process.child.id(),
            "/proc says {pid}, the child is {:?}",
            process.child.id()
        );
        Ok(Daemon {
            process,
            url,
            pid,
            dir,
        })
    }

    /// A new MCP session with the write token.
    pub async fn client(&self) -> anyhow::Result<GateClient> {
        GateClient::connect_http(&self.url, Some(WRITE_SECRET)).await
    }

    /// A new MCP session with the read token.
    pub async fn reader(&self) -> anyhow::Result<GateClient> {
        GateClient::connect_http(&self.url, Some(READ_SECRET)).await
    }

    /// Kills the daemon and waits for it.
    pub async fn stop(mut self) {
        let _ = self.process.child.kill().await;
    }
}

/// Calls a tool that must succeed; the error says which call failed.
pub async fn ok(client: &GateClient, tool: &str, args: Value) -> anyhow::Result<Value> {
    match client.call(tool, args.clone()).await? {
        Outcome::Ok(v) => Ok(v),
        Outcome::Err(e) => bail!("{tool} {args} failed: {e}"),
    }
}

/// Polls `list_ports` until every port is open (no event reaches an MCP
/// client when a port opens, so this is a bounded poll).
pub async fn wait_all_open(client: &GateClient, within: Duration) -> anyhow::Result<()> {
    let checked = wait::until(within, async || match closed_ports(client).await {
        Ok(closed) if !closed.is_empty() => Err(closed),
        listed => Ok(listed),
    })
    .await;
    match checked {
        Ok(listed) => listed.map(|_| ()),
        Err(closed) => bail!("ports not open within {within:?}: {closed:?}"),
    }
}

/// The names of the ports `list_ports` shows in a state other than open.
async fn closed_ports(client: &GateClient) -> anyhow::Result<Vec<String>> {
    let list = ok(client, "list_ports", json!({})).await?;
    let ports = list["ports"].as_array().context("ports")?;
    Ok(ports
        .iter()
        .filter(|p| p["state"] != "open")
        .map(|p| p["name"].to_string())
        .collect())
}

/// Reads a port's whole retained output from offset 0 with `read_output`
/// pagination, waiting (`wait_ms`, an event wait in the daemon) until
/// `expected` bytes have arrived. Returns the bytes and the page count;
/// fails on truncation.
pub async fn read_all(
    client: &GateClient,
    port: &str,
    expected: u64,
    within: Duration,
) -> anyhow::Result<(Vec<u8>, u64)> {
    let deadline = Instant::now() + within;
    let (mut cursor, mut out, mut pages) = (0u64, Vec::new(), 0u64);
    loop {
        let wait_ms = if cursor >= expected { 0 } else { 1000 };
        let page = ok(
            client,
            "read_output",
            json!({"connection": port, "cursor": cursor, "max_bytes": 65536, "wait_ms": wait_ms}),
        )
        .await?;
        pages += 1;
        ensure!(
            page["truncated"] == false && page["oldest"] == 0,
            "{port}: output was dropped by retention: {page}"
        );
        let text = page["output"].as_str().context("output")?;
        out.extend_from_slice(text.as_bytes());
        cursor = page["next_cursor"].as_u64().context("next_cursor")?;
        ensure!(
            cursor == out.len() as u64,
            "{port}: next_cursor {cursor} after {} bytes",
            out.len()
        );
        let head = page["head"].as_u64().context("head")?;
        if page["has_more"] == false && head >= expected {
            ensure!(
                head == expected,
                "{port}: head {head}, but the device printed {expected} bytes"
            );
            return Ok((out, pages));
        }
        ensure!(
            Instant::now() < deadline,
            "{port}: only {head} of {expected} bytes reached the log within {within:?}"
        );
    }
}

/// Checks that `got` is exactly `lines` lines of port `port`, numbered from
/// 0, and says where it first differs if not.
pub fn check_stream(port: usize, got: &[u8], lines: u64) -> anyhow::Result<()> {
    let text = std::str::from_utf8(got).context("stream is not UTF-8")?;
    let mut expected_seq = 0u64;
    for line in text.split_terminator("\r\n") {
        let Some((p, seq)) = parse_line(line) else {
            bail!("p{port:02}: damaged line after seq {expected_seq}: {line:?}");
        };
        ensure!(
            p == port,
            "p{port:02}: a line of p{p:02} in its log: {line:?}"
        );
        ensure!(
            seq == expected_seq,
            "p{port:02}: seq {seq} where {expected_seq} was due ({})",
            if seq < expected_seq {
                "duplicate"
            } else {
                "gap"
            }
        );
        expected_seq += 1;
    }
    ensure!(
        expected_seq == lines,
        "p{port:02}: {expected_seq} lines in the log, {lines} printed"
    );
    ensure!(text.ends_with("\r\n") || lines == 0, "p{port:02}: torn end");
    let want: String = (0..lines).map(|s| stream_line(port, s)).collect();
    ensure!(want.as_bytes() == got, "p{port:02}: bytes differ");
    Ok(())
}

/// `show clock` as the simulated switch prints it.
fn is_clock(line: &str) -> bool {
    static CLOCK: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^\*\d\d:\d\d:\d\d\.\d{3} UTC (Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} \d{1,2} \d{4}$",
        )
        .expect("clock regex")
    });
    CLOCK.is_match(line)
}

/// Prints numbered lines on `sim` until `stop`; returns how many.
async fn inject_loop(
    sim: Arc<SimHandle>,
    port: usize,
    per_tick: u64,
    stop: CancellationToken,
) -> u64 {
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seq = 0u64;
    let mut batch = String::new();
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return seq,
            _ = tick.tick() => {}
        }
        batch.clear();
        for _ in 0..per_tick {
            batch.push_str(&stream_line(port, seq));
            seq += 1;
        }
        sim.inject(batch.as_bytes()).await;
    }
}

/// Latencies one session measured, in microseconds.
#[derive(Default)]
struct SessionTimes {
    command_us: Vec<u64>,
    wait_us: Vec<u64>,
    read_us: Vec<u64>,
}

/// Connects a session to its switch `swNN` (waking it) and to every
/// streaming port.
async fn session_setup(client: &GateClient, index: usize, ports: usize) -> anyhow::Result<()> {
    let sw = format!("sw{index:02}");
    ok(client, "connect", json!({"port": sw})).await?;
    ok(client, "send_text", json!({"connection": sw, "text": ""})).await?;
    let woke = ok(
        client,
        "read_until_prompt",
        json!({"connection": sw, "timeout": 10}),
    )
    .await?;
    ensure!(woke["prompt_text"] == "SW1>", "{sw} did not wake: {woke}");
    for p in 0..ports {
        ok(client, "connect", json!({"port": format!("p{p:02}")})).await?;
    }
    Ok(())
}

/// One MCP session's work until `until` (after [`session_setup`]):
/// commands on its switch, waits and reads on the streaming ports.
async fn session_loop(
    client: GateClient,
    index: usize,
    ports: usize,
    until: Instant,
) -> anyhow::Result<SessionTimes> {
    let sw = format!("sw{index:02}");
    let mut times = SessionTimes::default();
    // Per streaming port: the end of this session's last read and the last
    // sequence number it saw there.
    let mut last: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
    let mut last_command_end = 0u64;
    let mut k = 0usize;
    while Instant::now() < until {
        let port = (index + k * 7) % ports.max(1);
        let name = format!("p{port:02}");
        let started = Instant::now();
        match k % 4 {
            0 | 1 => {
                let r = ok(
                    &client,
                    "send_command",
                    json!({"connection": sw, "command": "show clock", "timeout": 30}),
                )
                .await?;
                times.command_us.push(started.elapsed().as_micros() as u64);
                let out = r["output"].as_str().context("output")?;
                ensure!(
                    r["matched"] == true && r["timed_out"] == false && r["truncated"] == false,
                    "{sw}: show clock did not complete: {r}"
                );
                ensure!(
                    is_clock(out.trim_end_matches('\n')),
                    "{sw}: show clock gave {out:?}"
                );
                let start = r["start_cursor"].as_u64().context("start_cursor")?;
                ensure!(
                    start >= last_command_end,
                    "{sw}: output from {start} overlaps the previous command's (to {last_command_end})"
                );
                last_command_end = r["end_cursor"].as_u64().context("end_cursor")?;
            }
            2 => {
                let r = ok(
                    &client,
                    "read_until_prompt",
                    json!({"connection": name, "prompt": "\r\n", "timeout": 30}),
                )
                .await?;
                times.wait_us.push(started.elapsed().as_micros() as u64);
                ensure!(
                    r["matched"] == true && r["truncated"] == false,
                    "{name}: no line: {r}"
                );
                let out = r["output"].as_str().context("output")?;
                let (start, end) = (
                    r["start_cursor"].as_u64().context("start")?,
                    r["end_cursor"].as_u64().context("end")?,
                );
                let line = out.strip_suffix("\r\n").context("a whole line")?;
                match last.get(&port) {
                    // The first read after connect may start mid-line.
                    None => {
                        if let Some((p, seq)) = parse_line(line) {
                            ensure!(p == port, "{name}: {line:?}");
                            last.insert(port, (end, seq));
                        } else {
                            last.insert(port, (end, u64::MAX));
                        }
                    }
                    Some(&(prev_end, prev_seq)) => {
                        ensure!(
                            start == prev_end,
                            "{name}: this session's read starts at {start}, its last ended at {prev_end}"
                        );
                        let (p, seq) = parse_line(line)
                            .with_context(|| format!("{name}: damaged line {line:?}"))?;
                        ensure!(p == port, "{name}: {line:?}");
                        ensure!(
                            prev_seq == u64::MAX || seq == prev_seq + 1,
                            "{name}: seq {seq} after {prev_seq}: a line lost or repeated for this session"
                        );
                        last.insert(port, (end, seq));
                    }
                }
            }
            _ => {
                let r = ok(
                    &client,
                    "read_output",
                    json!({"connection": name, "cursor": 0, "max_bytes": 8192}),
                )
                .await?;
                times.read_us.push(started.elapsed().as_micros() as u64);
                let out = r["output"].as_str().context("output")?;
                // The page may end inside a line: check the whole ones.
                let whole = out.rfind("\r\n").map_or("", |end| &out[..end + 2]);
                for (i, line) in whole.split_terminator("\r\n").enumerate() {
                    ensure!(
                        parse_line(line) == Some((port, i as u64)),
                        "{name}: line {i} of the log reads {line:?}"
                    );
                }
            }
        }
        k += 1;
    }
    client.close().await.ok();
    Ok(times)
}

/// Runs a load test against `binary` and checks that nothing was lost.
pub async fn run_load(binary: &Path, params: &LoadParams) -> anyhow::Result<LoadReport> {
    raise_fd_limit();
    let dir = tempfile::tempdir()?;
    let mut config = String::from("[server]\nretention = \"");
    // Every byte of the run must stay retained: twice what will be printed.
    let per_port = stream_line(0, 0).len() as u64
        * u64::from(params.lines_per_sec)
        * (params.duration.as_secs() + 10);
    let retention_mib = (2 * per_port).div_ceil(1 << 20).max(1);
    config.push_str(&format!("{retention_mib}MiB\"\n\n"));
    let mut streams = Vec::new();
    for p in 0..params.ports {
        let link = dir.path().join(format!("p{p:02}"));
        streams.push(Arc::new(
            sim::spawn(Profile::Silent, Some(link.clone())).await?,
        ));
        config.push_str(&format!(
            "[ports.p{p:02}]\ndevice = {:?}\npreset = \"generic\"\n\n",
            link.display()
        ));
    }
    let mut switches = Vec::new();
    for s in 0..params.sessions {
        let link = dir.path().join(format!("sw{s:02}"));
        switches.push(sim::spawn(Profile::CiscoIos, Some(link.clone())).await?);
        config.push_str(&format!(
            "[ports.sw{s:02}]\ndevice = {:?}\npreset = \"cisco-ios\"\n\n",
            link.display()
        ));
    }
    let daemon = Daemon::start(binary, dir, &config).await?;
    let checker = daemon.client().await?;
    wait_all_open(&checker, Duration::from_secs(30)).await?;
    for p in 0..params.ports {
        ok(&checker, "connect", json!({"port": format!("p{p:02}")})).await?;
    }

    let stop = CancellationToken::new();
    let per_tick = u64::from(params.lines_per_sec).div_ceil(100).max(1);
    let streaming = Instant::now();
    let injectors: Vec<_> = streams
        .iter()
        .enumerate()
        .map(|(p, sim)| tokio::spawn(inject_loop(sim.clone(), p, per_tick, stop.clone())))
        .collect();
    let setups: Vec<_> = (0..params.sessions)
        .map(|i| {
            let (url, ports) = (daemon.url.clone(), params.ports);
            tokio::spawn(async move {
                let client = GateClient::connect_http(&url, Some(WRITE_SECRET)).await?;
                session_setup(&client, i, ports).await?;
                anyhow::Ok(client)
            })
        })
        .collect();
    let mut clients = Vec::new();
    for setup in setups {
        clients.push(setup.await??);
    }
    let started = Instant::now();
    let until = started + params.duration;
    let sessions: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, c)| tokio::spawn(session_loop(c, i, params.ports, until)))
        .collect();
    let mut report = LoadReport {
        ports: params.ports,
        sessions: params.sessions,
        ..LoadReport::default()
    };
    let mut failures = Vec::new();
    for (i, s) in sessions.into_iter().enumerate() {
        match s.await {
            Ok(Ok(t)) => {
                report.command_us.extend(t.command_us);
                report.wait_us.extend(t.wait_us);
                report.read_us.extend(t.read_us);
            }
            Ok(Err(e)) => failures.push(format!("session {i}: {e:#}")),
            Err(e) => failures.push(format!("session {i} panicked: {e}")),
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    stop.cancel();
    report.stream_s = streaming.elapsed().as_secs_f64();
    let mut printed = Vec::new();
    for i in injectors {
        printed.push(i.await?);
    }
    for (p, &lines) in printed.iter().enumerate() {
        let expected = lines * stream_line(p, 0).len() as u64;
        let name = format!("p{p:02}");
        match read_all(&checker, &name, expected, Duration::from_secs(60)).await {
            Ok((got, pages)) => {
                report.verify_pages += pages;
                if let Err(e) = check_stream(p, &got, lines) {
                    failures.push(format!("{e:#}"));
                }
            }
            Err(e) => failures.push(format!("{e:#}")),
        }
        report.lines += lines;
        report.bytes += expected;
    }
    report.peak_rss_kib = proc_status_kib(daemon.pid, "VmHWM").unwrap_or(0);
    report.rss_kib = proc_status_kib(daemon.pid, "VmRSS").unwrap_or(0);
    (report.cpu_s, report.wall_s) = proc_cpu_wall_s(daemon.pid).unwrap_or((0.0, 0.0));
    for m in [
        &mut report.command_us,
        &mut report.wait_us,
        &mut report.read_us,
    ] {
        m.sort_unstable();
    }
    checker.close().await.ok();
    daemon.stop().await;
    drop(switches);
    if !failures.is_empty() {
        let n = failures.len();
        failures.truncate(20);
        bail!("{n} failure(s):\n{}", failures.join("\n"));
    }
    ensure!(
        !report.command_us.is_empty(),
        "no command completed in {:?}",
        params.duration
    );
    Ok(report)
}
