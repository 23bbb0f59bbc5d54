//! Isolation: a client that abandons a call, a client
//! dropped mid-call and many waiting calls never hold up the device's
//! reader or other sessions, every call that stays is served, and a
//! device that talks on and on leaves the daemon holding its retention,
//! however many sessions are attached and however little they read.
//! Timings and memory are printed here and judged nowhere: the benches
//! measure them.
//!
//! The real binary serves `--http 127.0.0.1:0` (the rig of `benches/load.rs`);
//! the devices are simulated on pseudo-terminals in this process.

use serialgate_testkit::load;
use serialgate_testkit::wait;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use load::{Daemon, READ_SECRET, ok, proc_status_kib, wait_all_open};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::client::GateClient;
use tokio::task::JoinHandle;

/// A prompt no device here prints.
const NEVER: &str = "this-prompt-never-appears";
/// The timeout of the call whose connection is dropped, seconds.
const ABANDONED_TIMEOUT_S: f64 = 10.0;

fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_serialgate"))
}

/// Simulated devices linked at `<tmp>/NAME`, a daemon with a port on each
/// (cisco-ios for switches, generic otherwise) plus `extra` config.
async fn start(devices: &[(&str, Profile)], extra: &str) -> (Daemon, Vec<SimHandle>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = format!("{extra}\n");
    let mut sims = Vec::new();
    for (name, profile) in devices {
        let link = dir.path().join(name);
        sims.push(
            sim::spawn(*profile, Some(link.clone()))
                .await
                .expect("simulated device"),
        );
        let preset = profile.preset();
        config.push_str(&format!(
            "[ports.{name}]\ndevice = {:?}\npreset = \"{preset}\"\n\n",
            link.display()
        ));
    }
    let daemon = Daemon::start(binary(), dir, &config)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    (daemon, sims)
}

async fn call(client: &GateClient, tool: &str, args: Value) -> Value {
    ok(client, tool, args)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
}

/// `waits` on `port` as the daemon counts them (`status.active_waits`).
async fn active_waits(client: &GateClient, port: &str) -> u64 {
    call(client, "status", json!({"connection": port})).await["active_waits"]
        .as_u64()
        .expect("active_waits")
}

/// Polls `status` until `port` counts `done(waits)` (no event reaches an
/// MCP client when another session's call starts or ends: a bounded poll).
async fn until_waits(
    client: &GateClient,
    port: &str,
    within: Duration,
    done: impl Fn(u64) -> bool,
) -> u64 {
    wait::until(within, async || {
        wait::when(active_waits(client, port).await, |n| done(*n))
    })
    .await
    .unwrap_or_else(|last| last)
}

/// Wakes the switch on `port` for `client` (which then holds it for writing).
async fn wake(client: &GateClient, port: &str) {
    call(client, "connect", json!({"port": port})).await;
    call(client, "send_text", json!({"connection": port, "text": ""})).await;
    let woke = call(
        client,
        "read_until_prompt",
        json!({"connection": port, "timeout": 10}),
    )
    .await;
    assert_eq!(woke["prompt_text"], "SW1>", "{woke}");
}

/// Runs `show clock` on `port`, checks the output is one clock line, and
/// returns how long the call took (printed, not judged: a command held
/// up by other calls does not match within its own 30 s timeout).
async fn show_clock(client: &GateClient, port: &str) -> Duration {
    let started = Instant::now();
    let r = call(
        client,
        "send_command",
        json!({"connection": port, "command": "show clock", "timeout": 30}),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(r["matched"], true, "{port}: {r}");
    let out = r["output"].as_str().expect("output").trim_end();
    assert!(
        out.starts_with('*') && out.contains(" UTC ") && !out.contains('\n'),
        "{port}: {out:?}"
    );
    took
}

/// The newest offset of `port` once it reaches `want`, waiting on the
/// daemon's side (`read_output` with `wait_ms` waits for new output).
async fn wait_head(client: &GateClient, port: &str, want: u64, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    let mut cursor = 0;
    loop {
        let page = call(
            client,
            "read_output",
            json!({"connection": port, "cursor": cursor, "max_bytes": 4, "wait_ms": 1000}),
        )
        .await;
        let head = page["head"].as_u64().expect("head");
        if head >= want {
            return page;
        }
        assert!(
            Instant::now() < deadline,
            "{port}: head {head} of {want} after {within:?}"
        );
        cursor = head;
    }
}

/// A raw MCP session over HTTP (reqwest, no rmcp), to drop a request's
/// connection in the middle of the call.
struct RawSession {
    url: String,
    session: String,
    next_id: u64,
}

impl RawSession {
    async fn open(url: &str, secret: &str) -> RawSession {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "abandoner", "version": "0"}}});
        let response = Self::request(url, secret, None, &init)
            .send()
            .await
            .expect("POST");
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .expect("session id")
            .to_owned();
        response.text().await.expect("initialize result");
        let raw = RawSession {
            url: url.to_owned(),
            session,
            next_id: 2,
        };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = raw.post(&note).send().await.expect("POST");
        assert_eq!(response.status(), 202);
        raw
    }

    fn request(
        url: &str,
        secret: &str,
        session: Option<&str>,
        body: &Value,
    ) -> reqwest::RequestBuilder {
        let mut request = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .header("authorization", format!("Bearer {secret}"))
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        Self::request(&self.url, READ_SECRET, Some(&self.session), body)
    }

    /// A `tools/call` request, not yet sent.
    fn tool(&mut self, name: &str, args: Value) -> reqwest::RequestBuilder {
        self.next_id += 1;
        self.post(
            &json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
            "params": {"name": name, "arguments": args}}),
        )
    }
}

/// A waiting call's task: its result once its prompt came (or it failed).
type Waiting = JoinHandle<anyhow::Result<Value>>;

/// Starts `n` calls waiting for a prompt that never comes on `port`, each
/// in a task of its own (a client's calls run concurrently).
fn never_ending_waits(client: &Arc<GateClient>, port: &str, n: usize) -> Vec<Waiting> {
    (0..n)
        .map(|_| {
            let (client, port) = (client.clone(), port.to_owned());
            tokio::spawn(async move {
                ok(
                    &client,
                    "read_until_prompt",
                    json!({"connection": port, "prompt": NEVER, "timeout": 120}),
                )
                .await
            })
        })
        .collect()
}

/// What a served waiting call must have got.
struct Served<'a> {
    /// The line just before the prompt, which ends its output (`None`
    /// when the output is longer than `max_output`, whose cut keeps the
    /// start).
    last_line: Option<&'a str>,
    /// Where the prompt ends in the port's stream, when known.
    end: Option<u64>,
}

/// Awaits each of `waiting` (at most 30 s in all) and checks it ended
/// because its prompt came: matched, the prompt's text, one end for all,
/// and what `want` says.
async fn served(port: &str, waiting: Vec<Waiting>, want: Served<'_>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let n = waiting.len();
    let mut ends = Vec::new();
    for (i, task) in waiting.into_iter().enumerate() {
        let r = tokio::time::timeout_at(deadline, task)
            .await
            .unwrap_or_else(|_| panic!("{port}: waiting call {i} of {n} still waits"))
            .expect("the waiting task")
            .unwrap_or_else(|e| panic!("{port}: waiting call {i} of {n} failed: {e:#}"));
        assert_eq!(r["matched"], true, "{port}: call {i}: {r}");
        assert_eq!(r["prompt_text"], NEVER, "{port}: call {i}: {r}");
        if let Some(line) = want.last_line {
            let output = r["output"].as_str().expect("output");
            assert!(
                output.ends_with(&format!("\r\n{line}\r\n{NEVER}")),
                "{port}: call {i} got the wrong output: {r}"
            );
        }
        ends.push(r["end_cursor"].as_u64().expect("end_cursor"));
    }
    assert!(
        ends.windows(2).all(|w| w[0] == w[1]),
        "{port}: the calls matched different prompts: {ends:?}"
    );
    if let Some(end) = want.end {
        assert_eq!(ends.first(), Some(&end), "{port}: not the prompt sent");
    }
}

/// A client abandons a `read_until_prompt` by dropping its HTTP connection,
/// another is dropped whole with calls in flight, 32 more calls wait for a
/// prompt that never comes: meanwhile a device streams 4 MB through a port
/// they wait on, and another session's `send_command` on the same switch
/// and on another one completes every time (how soon is printed; the load
/// bench times commands under load). The abandoned calls end in the
/// daemon, and every call that stayed gets its prompt and its output.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abandoned_and_waiting_calls_delay_no_one() {
    let (daemon, sims) = start(
        &[
            ("sw1", Profile::CiscoIos),
            ("sw2", Profile::CiscoIos),
            ("s1", Profile::Silent),
        ],
        "",
    )
    .await;
    let writer = daemon.client().await.expect("session");
    wait_all_open(&writer, Duration::from_secs(20))
        .await
        .expect("ports open");
    wake(&writer, "sw1").await;
    wake(&writer, "sw2").await;
    call(&writer, "connect", json!({"port": "s1"})).await;
    let mut baseline = Duration::ZERO;
    for port in ["sw1", "sw2", "sw1", "sw2"] {
        baseline = baseline.max(show_clock(&writer, port).await);
    }
    // For comparison: 4 MiB through s1 while nobody waits.
    let chunk: Vec<u8> = b"0123456789 streaming while others wait\r\n"
        .repeat(1600)
        .into_iter()
        .take(64 * 1024)
        .collect();
    let burst = 64 * chunk.len() as u64;
    let started = Instant::now();
    for _ in 0..64 {
        sims[2].inject(&chunk).await;
    }
    wait_head(&writer, "s1", burst, Duration::from_secs(30)).await;
    let alone = started.elapsed();

    // One client abandons its call: the request's connection is dropped.
    let mut raw = RawSession::open(&daemon.url, READ_SECRET).await;
    let connected = raw.tool("connect", json!({"port": "sw1"})).send().await;
    connected.expect("connect").text().await.expect("result");
    let abandoned = raw
        .tool(
            "read_until_prompt",
            json!({"connection": "sw1", "prompt": NEVER, "timeout": ABANDONED_TIMEOUT_S}),
        )
        .send();
    let abandoned_at = Instant::now();
    let abandoned = tokio::spawn(async move {
        if let Ok(response) = abandoned.await {
            let _ = response.text().await;
        }
    });
    // Another client is dropped whole with calls in flight.
    let dropped = Arc::new(daemon.reader().await.expect("session"));
    call(&dropped, "connect", json!({"port": "sw2"})).await;
    let dropped_calls = never_ending_waits(&dropped, "sw2", 4);
    // And 32 calls keep waiting, on the switch and on the streaming port.
    let (mut waiting_sw1, mut waiting_s1) = (Vec::new(), Vec::new());
    let mut waiters = Vec::new();
    for _ in 0..4 {
        let c = Arc::new(daemon.reader().await.expect("session"));
        call(&c, "connect", json!({"port": "sw1"})).await;
        call(&c, "connect", json!({"port": "s1"})).await;
        waiting_sw1.extend(never_ending_waits(&c, "sw1", 4));
        waiting_s1.extend(never_ending_waits(&c, "s1", 4));
        waiters.push(c);
    }
    let on_sw1 = until_waits(&writer, "sw1", Duration::from_secs(20), |n| n >= 17).await;
    assert_eq!(on_sw1, 17, "1 abandoned + 16 waiting on sw1");
    assert_eq!(
        until_waits(&writer, "sw2", Duration::from_secs(20), |n| n >= 4).await,
        4
    );
    assert_eq!(
        until_waits(&writer, "s1", Duration::from_secs(20), |n| n >= 16).await,
        16
    );

    abandoned.abort();
    for c in dropped_calls {
        c.abort();
    }
    drop(dropped);
    let dropped_at = Instant::now();

    // The device streams 4 MB through s1 while 16 calls wait on it, and
    // the writer's commands run meanwhile.
    let s1 = &sims[2];
    let total = 2 * burst;
    let stream = async {
        let started = Instant::now();
        for _ in 0..64 {
            s1.inject(&chunk).await;
        }
        let page = wait_head(&writer, "s1", total, Duration::from_secs(30)).await;
        (started.elapsed(), page)
    };
    let commands = async {
        let mut slowest = Duration::ZERO;
        for i in 0..20 {
            let port = if i % 2 == 0 { "sw1" } else { "sw2" };
            slowest = slowest.max(show_clock(&writer, port).await);
        }
        slowest
    };
    let dropped_end = async {
        let left = until_waits(&writer, "sw2", Duration::from_secs(10), |n| n == 0).await;
        (left, dropped_at.elapsed())
    };
    let ((streamed_in, page), slowest, (left, dropped_took)) =
        tokio::join!(stream, commands, dropped_end);
    assert_eq!(page["head"], total, "{page}");
    println!(
        "show clock: slowest {slowest:?} with 37 calls waiting or abandoned (baseline {baseline:?}); \
         4 MiB through s1 in {streamed_in:?} ({:.1} MB/s) past 16 waiting calls, \
         {alone:?} ({:.1} MB/s) with none",
        burst as f64 / streamed_in.as_secs_f64() / 1e6,
        burst as f64 / alone.as_secs_f64() / 1e6
    );

    // The dropped client's calls end with its session. The abandoned
    // call's connection is gone, but MCP says a disconnection is not a
    // cancellation (the client may resume the stream): it ends at its
    // deadline, and holds nothing up meanwhile.
    println!("the dropped client's 4 waits ended within {dropped_took:?} of the drop");
    assert_eq!(left, 0, "the calls of a dropped client still wait");
    let deadline = Duration::from_secs_f64(ABANDONED_TIMEOUT_S) + Duration::from_secs(10);
    let left = until_waits(&writer, "sw1", deadline, |n| n <= 16).await;
    println!(
        "the abandoned wait ended {:?} after it started (timeout {ABANDONED_TIMEOUT_S} s)",
        abandoned_at.elapsed()
    );
    assert_eq!(left, 16, "the abandoned call outlived its deadline");
    assert_eq!(active_waits(&writer, "s1").await, 16);
    assert!(
        waiting_sw1
            .iter()
            .chain(&waiting_s1)
            .all(|t| !t.is_finished()),
        "a waiting call ended before its prompt"
    );

    // Everyone who stayed still gets served: each of the 32 waiting calls
    // ends with its prompt and the output before it, on both ports.
    sims[0]
        .inject(format!("\r\nserved on sw1\r\n{NEVER}").as_bytes())
        .await;
    let want = Served {
        last_line: Some("served on sw1"),
        end: None,
    };
    served("sw1", waiting_sw1, want).await;
    // s1's waits began before 8 MiB streamed: their output is cut at
    // `max_output`, and their prompt is the one that ends the stream.
    let last = format!("\r\nserved on s1\r\n{NEVER}");
    sims[2].inject(last.as_bytes()).await;
    let want = Served {
        last_line: None,
        end: Some(total + last.len() as u64),
    };
    served("s1", waiting_s1, want).await;
    let after = until_waits(&writer, "sw1", Duration::from_secs(10), |n| n == 0).await;
    assert_eq!(after, 0, "no call still waits on sw1");
    show_clock(&writer, "sw1").await;
    drop(waiters);
    daemon.stop().await;
}

/// A device streams 20 MB through a port with the default retention while
/// a session is attached that never reads and another waits on a prompt
/// that never comes: the daemon keeps the retention, not what streamed,
/// for all of them (its memory is printed).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn streaming_20_mb_keeps_memory_within_retention() {
    let (daemon, sims) = start(&[("s1", Profile::Silent)], "").await;
    let watcher = daemon.reader().await.expect("session");
    wait_all_open(&watcher, Duration::from_secs(20))
        .await
        .expect("port open");
    call(&watcher, "connect", json!({"port": "s1"})).await;
    // Attached and never reading: its consume cursor stays at 0.
    let idle = daemon.reader().await.expect("session");
    call(&idle, "connect", json!({"port": "s1"})).await;
    // Waiting the whole time for a prompt that comes at the very end.
    let waiter = Arc::new(daemon.reader().await.expect("session"));
    call(&waiter, "connect", json!({"port": "s1"})).await;
    let wait = tokio::spawn({
        let waiter = waiter.clone();
        async move {
            ok(
                &waiter,
                "read_until_prompt",
                json!({"connection": "s1", "prompt": NEVER, "timeout": 300}),
            )
            .await
        }
    });
    assert_eq!(
        until_waits(&watcher, "s1", Duration::from_secs(20), |n| n >= 1).await,
        1
    );

    let before = proc_status_kib(daemon.pid, "VmRSS").expect("VmRSS");
    let line = b"%LINEPROTO-5-UPDOWN: Line protocol on Interface Gi1/0/1, changed state to up\r\n";
    let chunk: Vec<u8> = line.iter().copied().cycle().take(64 * 1024).collect();
    let chunks = 20 * 1_000_000 / chunk.len() + 1;
    let total = (chunks * chunk.len()) as u64;
    let started = Instant::now();
    for _ in 0..chunks {
        sims[0].inject(&chunk).await;
    }
    let page = wait_head(&watcher, "s1", total, Duration::from_secs(60)).await;
    let streamed_in = started.elapsed();
    assert_eq!(page["head"], total, "{page}");
    let after = proc_status_kib(daemon.pid, "VmRSS").expect("VmRSS");
    let peak = proc_status_kib(daemon.pid, "VmHWM").expect("VmHWM");
    let retention = serialgate::config::DEFAULT_RETENTION as u64;
    assert_eq!(
        page["oldest"],
        total - retention,
        "the newest {retention} bytes are kept: {page}"
    );
    println!(
        "20 MB streamed in {streamed_in:?} ({:.1} MB/s): daemon VmRSS {:.1} MiB before, {:.1} MiB after, \
         peak {:.1} MiB (+{:.1} MiB over the start; retention 1 MiB)",
        total as f64 / streamed_in.as_secs_f64() / 1e6,
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        peak as f64 / 1024.0,
        peak.saturating_sub(before) as f64 / 1024.0
    );
    // The figures are printed, not judged here (an allocator's peak is no
    // pass mark; `benches/peers.rs` and `benches/load.rs` report the
    // daemon's RSS). What bounds the memory is checked: the log keeps
    // exactly the newest `retention` bytes (above), and the waiter's and
    // the idle session's answers start there (below).

    // The waiter's prompt arrives: it gets what is still retained, marked
    // truncated, and the idle session's next read says what it missed.
    sims[0].inject(NEVER.as_bytes()).await;
    let r = tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("the waiter ends")
        .expect("task")
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(r["matched"], true, "{}", r["prompt_text"]);
    assert_eq!(r["truncated"], true);
    assert_eq!(r["start_cursor"], total + NEVER.len() as u64 - retention);
    let idle_read = call(
        &idle,
        "read_until_prompt",
        json!({"connection": "s1", "prompt": NEVER, "timeout": 5, "max_output": 16}),
    )
    .await;
    assert_eq!(idle_read["truncated"], true, "{idle_read}");
    assert_eq!(idle_read["matched"], true, "{idle_read}");
    daemon.stop().await;
}
