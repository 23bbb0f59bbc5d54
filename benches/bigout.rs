//! Big outputs: what one large result costs the daemon in time and memory.
//!
//! A simulated Cisco switch per size prints a `show tech-support` of
//! 64 KiB, 4 MiB or 20 MiB (80-byte numbered lines, `terminal length 0`).
//! The release daemon serves them over stdio (rmcp's child-process client)
//! and over streamable HTTP (rmcp's HTTP client, a bearer token). For each
//! transport and size, after warm-up commands that fill each port's
//! retention (so the OutputLog is at its steady size), four reads are
//! measured:
//!
//! - `read_until_prompt`: `send_text` of the command, then the raw output
//!   inline (`max_output` 16 MiB, the most it allows: 20 MiB is cut);
//! - `send_command` with `max_output` 16 MiB: the clean output inline;
//! - `resource`: `send_command` with the default `max_output` (64 KiB
//!   inline and a resource link), then `resources/read` of the link;
//! - `read_output`: the same command's bytes in 64 KiB pages.
//!
//! Per read: the client's wall time of the call, the daemon's CPU time
//! during it (every thread's `schedstat`), the daemon's `elapsed_ms` where
//! the result has one, the peak RSS over the RSS just before the call
//! (`/proc/PID/clear_refs` ← 5 resets `VmHWM` to the current RSS first),
//! and the RSS one second after. Then, over HTTP, four sessions read the
//! 20 MiB resource at once (several agents) with the same figures. Every
//! result is checked line by line; a wrong one fails the run.
//!
//! ```text
//! cargo build --release && cargo bench --bench bigout
//! cargo bench --bench bigout -- --quick        # 64 KiB and 4 MiB only
//! ```
//!
//! `SERIALGATE_BIN=/path/to/serialgate` picks the binary measured.

#[allow(dead_code)]
#[path = "peers/procfs.rs"]
mod procfs;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle, SimOptions};
use serialgate_testkit::binary::bench_binary;
use serialgate_testkit::client::{GateClient, Outcome};
use serialgate_testkit::load::{Daemon, WRITE_SECRET, pid_with_cmdline};

use procfs::{CpuSample, vm_kib};

/// Bytes of one tech-support line with its `\r\n`.
const LINE: usize = 80;
/// Largest inline output asked for (the most `max_output` allows).
const MAX_OUTPUT: u64 = 16 * 1024 * 1024;
/// Longest message the bench's clients read (rmcp's default, 16 MiB, is
/// less than a 16 MiB output with its JSON escapes).
const MAX_LINE: usize = 64 * 1024 * 1024;
/// Sessions reading at once in the concurrent phase.
const AGENTS: usize = 4;

/// One size of output.
struct Size {
    label: &'static str,
    port: &'static str,
    lines: usize,
}

const SIZES: [Size; 3] = [
    Size {
        label: "64 KiB",
        port: "s64k",
        lines: 64 * 1024 / LINE,
    },
    Size {
        label: "4 MiB",
        port: "s4m",
        lines: 4 * 1024 * 1024 / LINE,
    },
    Size {
        label: "20 MiB",
        port: "s20m",
        lines: 20 * 1024 * 1024 / LINE,
    },
];

/// What one measured read cost.
struct Row {
    transport: &'static str,
    size: &'static str,
    read: &'static str,
    /// Bytes of the result's output (clean or raw).
    bytes: u64,
    wall_ms: f64,
    cpu_ms: f64,
    elapsed_ms: Option<u64>,
    before_kib: u64,
    peak_kib: u64,
    after_kib: u64,
}

impl Row {
    fn over_idle_mib(&self) -> f64 {
        self.peak_kib.saturating_sub(self.before_kib) as f64 / 1024.0
    }

    fn json(&self) -> Value {
        json!({
            "transport": self.transport,
            "size": self.size,
            "read": self.read,
            "bytes": self.bytes,
            "wall_ms": round(self.wall_ms),
            "server_cpu_ms": round(self.cpu_ms),
            "elapsed_ms": self.elapsed_ms,
            "rss_before_kib": self.before_kib,
            "peak_kib": self.peak_kib,
            "peak_over_idle_mib": round(self.over_idle_mib()),
            "peak_over_idle_per_result": round(self.over_idle_mib() * 1048576.0 / self.bytes.max(1) as f64),
            "rss_1s_after_kib": self.after_kib,
        })
    }
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn main() -> std::process::ExitCode {
    let quick = std::env::args().any(|a| a == "--quick")
        || std::env::var("SERIALGATE_BENCH_QUICK").is_ok_and(|v| v == "1");
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
    match runtime.block_on(run(&binary, quick)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bigout bench failed: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The simulated switches, one per size, linked in `dir`.
async fn devices(dir: &Path, sizes: &[&Size]) -> anyhow::Result<(Vec<SimHandle>, String)> {
    let mut sims = Vec::new();
    // Room for the largest output, its echo and prompt, and a little more.
    let largest = sizes.iter().map(|s| s.lines * LINE).max().unwrap_or(0);
    let mut config = format!(
        "[server]\nretention = {}\n\n",
        largest + largest / 4 + 65536
    );
    for size in sizes {
        let link = dir.join(size.port);
        let options = SimOptions {
            tech_support_lines: size.lines,
            ..SimOptions::default()
        };
        sims.push(sim::spawn_with(Profile::CiscoIos, Some(link.clone()), options).await?);
        config.push_str(&format!(
            "[ports.{}]\ndevice = {:?}\npreset = \"cisco-ios\"\n\n",
            size.port,
            link.display()
        ));
    }
    Ok((sims, config))
}

async fn run(binary: &Path, quick: bool) -> anyhow::Result<()> {
    let sizes: Vec<&Size> = SIZES.iter().take(if quick { 2 } else { 3 }).collect();
    let mut rows = Vec::new();
    // stdio: the client spawns the daemon.
    {
        let dir = tempfile::tempdir()?;
        let (_sims, config) = devices(dir.path(), &sizes).await?;
        let path = dir.path().join("bigout.toml");
        std::fs::write(&path, config)?;
        let client = GateClient::spawn_with_line_limit(binary, &path, MAX_LINE).await?;
        let pid = pid_with_cmdline(&path).context("the stdio daemon's pid")?;
        println!("stdio: daemon {pid}, idle {} KiB", vm_kib(pid, "VmRSS")?);
        for size in &sizes {
            measure(&client, pid, "stdio", size, &mut rows).await?;
        }
        client.close().await?;
    }
    // HTTP: one daemon, sessions with a bearer token.
    {
        let dir = tempfile::tempdir()?;
        let (_sims, config) = devices(dir.path(), &sizes).await?;
        let daemon = Daemon::start(binary, dir, &config).await?;
        let client =
            GateClient::connect_http_with_limit(&daemon.url, Some(WRITE_SECRET), MAX_LINE).await?;
        println!(
            "http: daemon {}, idle {} KiB",
            daemon.pid,
            vm_kib(daemon.pid, "VmRSS")?
        );
        for size in &sizes {
            measure(&client, daemon.pid, "http", size, &mut rows).await?;
        }
        let big = sizes.last().context("a size")?;
        concurrent(&daemon, &client, big, &mut rows).await?;
        client.close().await?;
        daemon.stop().await;
    }
    print_table(&rows);
    let json: Vec<Value> = rows.iter().map(Row::json).collect();
    println!("{}", json!({ "bigout": json }));
    Ok(())
}

/// Resets the peak RSS of `pid` to its current RSS (clear_refs 5), or says
/// it could not (then the peak is the process's peak so far).
fn reset_peak(pid: u32) {
    if let Err(e) = std::fs::write(format!("/proc/{pid}/clear_refs"), "5") {
        eprintln!("cannot reset VmHWM of {pid} ({e}); peaks are since start");
    }
}

/// Runs `call` as one measured read.
async fn measured<F, T>(pid: u32, call: F) -> anyhow::Result<(T, f64, f64, u64, u64, u64)>
where
    F: std::future::Future<Output = anyhow::Result<T>>,
{
    reset_peak(pid);
    let before = vm_kib(pid, "VmRSS")?;
    let cpu = CpuSample::take(pid)?;
    let t = Instant::now();
    let value = call.await?;
    let wall = t.elapsed().as_secs_f64() * 1e3;
    let cpu_ms = cpu.seconds_until(&CpuSample::take(pid)?).0 * 1e3;
    let peak = vm_kib(pid, "VmHWM")?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = vm_kib(pid, "VmRSS")?;
    Ok((value, wall, cpu_ms, before, peak, after))
}

async fn ok(client: &GateClient, tool: &str, args: Value) -> anyhow::Result<Value> {
    match client.call(tool, args.clone()).await? {
        Outcome::Ok(v) => Ok(v),
        Outcome::Err(e) => bail!("{tool} {args} failed: {e}"),
    }
}

/// Checks that `text` holds the `lines` tech-support lines once and in
/// order, each ended by `\n` (after `\r` when `raw`), between `head`
/// (the echo) and `tail` (the prompt).
fn check(text: &str, lines: usize, raw: bool, what: &str) -> anyhow::Result<()> {
    check_cut(text, lines, raw, false, what)
}

/// [`check`]; with `cut`, `text` may end anywhere (a result cut at
/// `max_output`): the lines it has are checked, the last one as a prefix.
fn check_cut(text: &str, lines: usize, raw: bool, cut: bool, what: &str) -> anyhow::Result<()> {
    let end = if raw { "\r\n" } else { "\n" };
    let mut rest = text;
    if raw {
        rest = rest
            .strip_prefix("show tech-support\r\n")
            .with_context(|| format!("{what}: no echo"))?;
        if !cut {
            rest = rest
                .strip_suffix("SW1#")
                .with_context(|| format!("{what}: no prompt at the end"))?;
        }
    }
    for n in 1..=lines {
        if cut {
            let line = sim::cisco::tech_support_line(n);
            let line = if raw { line.as_str() } else { line.trim_end() };
            let whole = format!("{line}{end}");
            if rest.len() < whole.len() {
                ensure!(
                    whole.starts_with(rest),
                    "{what}: cut line {n} wrong: {rest:?}"
                );
                return Ok(());
            }
        }
        let line = sim::cisco::tech_support_line(n);
        // Cleaning drops trailing blanks.
        let line = if raw { line.as_str() } else { line.trim_end() };
        rest = rest
            .strip_prefix(line)
            // The clean output's last line has no line end.
            .and_then(|r| {
                r.strip_prefix(end)
                    .or((n == lines && !raw && r.is_empty()).then_some(r))
            })
            .with_context(|| {
                format!("{what}: line {n} wrong: {:?}", &rest[..rest.len().min(100)])
            })?;
    }
    ensure!(
        rest.is_empty(),
        "{what}: {} bytes after the last line",
        rest.len()
    );
    Ok(())
}

async fn measure(
    client: &GateClient,
    pid: u32,
    transport: &'static str,
    size: &Size,
    rows: &mut Vec<Row>,
) -> anyhow::Result<()> {
    let port = size.port;
    ok(client, "connect", json!({"port": port, "name": port})).await?;
    ok(client, "send_text", json!({"text": "", "connection": port})).await?;
    ok(
        client,
        "read_until_prompt",
        json!({"timeout": 5, "connection": port}),
    )
    .await?;
    ok(
        client,
        "send_text",
        json!({"text": "enable", "connection": port}),
    )
    .await?;
    ok(
        client,
        "read_until_prompt",
        json!({"prompt": "Password: ", "timeout": 5, "connection": port}),
    )
    .await?;
    ok(
        client,
        "send_text",
        json!({"text": sim::cisco::ENABLE_PASSWORD, "connection": port}),
    )
    .await?;
    ok(
        client,
        "read_until_prompt",
        json!({"timeout": 5, "connection": port}),
    )
    .await?;
    ok(
        client,
        "send_command",
        json!({"command": "terminal length 0", "connection": port}),
    )
    .await?;
    // Warm-up: fill the retention (until the log rolls) so that the log is
    // at its steady size when the reads are measured.
    loop {
        ok(
            client,
            "send_command",
            json!({"command": "show tech-support", "timeout": 60, "connection": port}),
        )
        .await?;
        let status = ok(client, "status", json!({"connection": port})).await?;
        if status["oldest"].as_u64().unwrap_or(0) > 0 {
            break;
        }
    }
    let mut push = |read, bytes, m: (f64, f64, u64, u64, u64), elapsed| {
        let (wall_ms, cpu_ms, before_kib, peak_kib, after_kib) = m;
        let row = Row {
            transport,
            size: size.label,
            read,
            bytes,
            wall_ms,
            cpu_ms,
            elapsed_ms: elapsed,
            before_kib,
            peak_kib,
            after_kib,
        };
        println!(
            "{transport:5} {:7} {read:17} {:>9} B  wall {:8.1} ms  cpu {:8.1} ms  peak over idle {:6.1} MiB ({:.2}×)  before {:6.1} after 1 s {:6.1} MiB",
            size.label,
            bytes,
            row.wall_ms,
            row.cpu_ms,
            row.over_idle_mib(),
            row.over_idle_mib() * 1048576.0 / bytes.max(1) as f64,
            before_kib as f64 / 1024.0,
            after_kib as f64 / 1024.0,
        );
        rows.push(row);
    };

    // read_until_prompt, raw output inline.
    ok(
        client,
        "send_text",
        json!({"text": "show tech-support", "connection": port}),
    )
    .await?;
    let (r, wall, cpu, before, peak, after) = measured(
        pid,
        ok(
            client,
            "read_until_prompt",
            json!({"timeout": 60, "max_output": MAX_OUTPUT, "connection": port}),
        ),
    )
    .await?;
    let out = r["output"].as_str().context("output")?;
    let cut = r["output_truncated"] == true;
    check_cut(out, size.lines, true, cut, "read_until_prompt")?;
    push(
        "read_until_prompt",
        out.len() as u64,
        (wall, cpu, before, peak, after),
        r["elapsed_ms"].as_u64(),
    );

    // send_command, clean output inline.
    let (r, wall, cpu, before, peak, after) = measured(
        pid,
        ok(
            client,
            "send_command",
            json!({"command": "show tech-support", "timeout": 60, "max_output": MAX_OUTPUT, "connection": port}),
        ),
    )
    .await?;
    let out = r["output"].as_str().context("output")?;
    let cut = r["output_truncated"] == true;
    check_cut(out, size.lines, false, cut, "send_command")?;
    push(
        "send_command",
        out.len() as u64,
        (wall, cpu, before, peak, after),
        r["elapsed_ms"].as_u64(),
    );

    // The resource link of a cut result.
    let r = ok(
        client,
        "send_command",
        json!({"command": "show tech-support", "timeout": 60, "connection": port}),
    )
    .await?;
    let (start, end) = (
        r["start_cursor"].as_u64().context("start")?,
        r["end_cursor"].as_u64().context("end")?,
    );
    let text = if let Some(uri) = r["resource"].as_str() {
        let (text, wall, cpu, before, peak, after) =
            measured(pid, client.read_resource(uri)).await?;
        check(&text, size.lines, false, "resource")?;
        push(
            "resource",
            text.len() as u64,
            (wall, cpu, before, peak, after),
            None,
        );
        text
    } else {
        r["output"].as_str().context("output")?.to_owned()
    };
    check(&text, size.lines, false, "resource or inline")?;

    // read_output pages of the same command.
    let (raw, wall, cpu, before, peak, after) = measured(pid, async {
        let mut cursor = start;
        let mut raw = String::new();
        while cursor < end {
            let p = ok(
                client,
                "read_output",
                json!({"cursor": cursor, "max_bytes": 65536, "connection": port}),
            )
            .await?;
            raw.push_str(p["output"].as_str().context("output")?);
            cursor = p["next_cursor"].as_u64().context("next_cursor")?;
        }
        raw.truncate((end - start) as usize);
        Ok(raw)
    })
    .await?;
    check(&raw, size.lines, true, "read_output")?;
    push(
        "read_output pages",
        raw.len() as u64,
        (wall, cpu, before, peak, after),
        None,
    );
    Ok(())
}

/// Several agents at once: [`AGENTS`] HTTP sessions read the same large
/// resource together.
async fn concurrent(
    daemon: &Daemon,
    client: &GateClient,
    size: &Size,
    rows: &mut Vec<Row>,
) -> anyhow::Result<()> {
    let r = ok(
        client,
        "send_command",
        json!({"command": "show tech-support", "timeout": 60, "connection": size.port}),
    )
    .await?;
    let uri = r["resource"]
        .as_str()
        .context("a resource link")?
        .to_owned();
    let mut agents = Vec::new();
    for _ in 0..AGENTS {
        agents.push(std::sync::Arc::new(
            GateClient::connect_http_with_limit(&daemon.url, Some(WRITE_SECRET), MAX_LINE).await?,
        ));
    }
    let (texts, wall, cpu, before, peak, after) = measured(daemon.pid, async {
        let mut reads = tokio::task::JoinSet::new();
        for a in &agents {
            let (a, uri) = (a.clone(), uri.clone());
            reads.spawn(async move { a.read_resource(&uri).await });
        }
        let mut texts = Vec::new();
        while let Some(text) = reads.join_next().await {
            texts.push(text??);
        }
        Ok(texts)
    })
    .await?;
    for t in &texts {
        // Another session's read keeps the echo: only the session that ran
        // the command knows it.
        let t = t.strip_prefix("show tech-support\n").unwrap_or(t);
        check(t, size.lines, false, "concurrent resource")?;
    }
    let bytes = texts.iter().map(|t| t.len() as u64).sum();
    let row = Row {
        transport: "http",
        size: size.label,
        read: "4 agents, resource",
        bytes,
        wall_ms: wall,
        cpu_ms: cpu,
        elapsed_ms: None,
        before_kib: before,
        peak_kib: peak,
        after_kib: after,
    };
    println!(
        "http  {} 4 agents at once: {} B  wall {:.1} ms  peak over idle {:.1} MiB  before {:.1} after 1 s {:.1} MiB",
        size.label,
        bytes,
        wall,
        row.over_idle_mib(),
        before as f64 / 1024.0,
        after as f64 / 1024.0
    );
    rows.push(row);
    drop(agents);
    Ok(())
}

fn print_table(rows: &[Row]) {
    println!();
    println!(
        "| transport | size | read | result bytes | wall (client) | server CPU | elapsed_ms | RSS before | peak over it | ÷ result | RSS 1 s after |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {:.1} ms | {:.1} ms | {} | {:.1} MiB | {:.1} MiB | {:.2}× | {:.1} MiB |",
            r.transport,
            r.size,
            r.read,
            r.bytes,
            r.wall_ms,
            r.cpu_ms,
            r.elapsed_ms.map_or("–".into(), |e| e.to_string()),
            r.before_kib as f64 / 1024.0,
            r.over_idle_mib(),
            r.over_idle_mib() * 1048576.0 / r.bytes.max(1) as f64,
            r.after_kib as f64 / 1024.0,
        );
    }
}
