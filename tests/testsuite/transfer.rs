//! Recovering a device over its console, end to end: the real binary
//! over streamable HTTP, rmcp's client, simulated boot loaders on real
//! pseudo-terminals. A 1 MiB image goes to ROMMON with XMODEM-1K at a
//! raised speed (the simulator garbles a terminal at the wrong speed, so
//! the switch and the return are both tested) with and without damaged
//! blocks; YMODEM goes to U-Boot with name and size; a cancelled transfer
//! leaves the device at its prompt; a file comes back with receive_file;
//! paths outside files_dir, another session's writes and the transcript
//! are checked.

use serialgate_testkit::rig as common;
use serialgate_testkit::wait;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientRequest, ProgressNotificationParam, Request};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, BlockFaults, Profile, SimOptions};
use serialgate_testkit::client::{GateClient, to_outcome};
use serialgate_testkit::daemon::Daemon;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

/// A client that keeps every progress notification it gets.
#[derive(Clone)]
pub(crate) struct Collector {
    pub(crate) progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Collector {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

type Client = rmcp::service::RunningService<RoleClient, Collector>;

struct Site {
    dir: tempfile::TempDir,
    sim: sim::SimHandle,
    client: Client,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    url: String,
    _daemon: Daemon,
}

pub(crate) fn request(tool: &str, args: Value) -> ClientRequest {
    let Value::Object(map) = args else {
        unreachable!("tool arguments are objects")
    };
    ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new(tool.to_owned()).with_arguments(map),
    ))
}

fn params(tool: &str, args: Value) -> CallToolRequestParams {
    match request(tool, args) {
        ClientRequest::CallToolRequest(r) => r.params,
        _ => unreachable!(),
    }
}

impl Site {
    /// `profile` with `options` at `<tmp>/sw1`, files_dir and log_dir in
    /// the temp dir, the daemon over HTTP on loopback, connected to sw1.
    async fn start(profile: Profile, preset_extra: &str, options: SimOptions) -> Site {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("sw1");
        let files = dir.path().join("files");
        std::fs::create_dir(&files).unwrap();
        let logs = dir.path().join("logs");
        let sim = sim::spawn_with(profile, Some(link.clone()), options)
            .await
            .unwrap();
        let config = dir.path().join("c.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\nauth = \"none\"\nfiles_dir = {files:?}\nlog_dir = {logs:?}\n\
                 [presets.lab]\nextends = \"cisco-ios\"\n{preset_extra}\n\
                 [ports.sw1]\ndevice = {:?}\npreset = \"lab\"\n",
                link.display()
            ),
        )
        .unwrap();
        let mut daemon = Daemon::run(Daemon::command_for(
            &common::binary(),
            Some(&config),
            &["--http", "127.0.0.1:0"],
        ));
        let url = daemon.http_url().await;
        let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                url.clone(),
            ),
        );
        let (tx, progress) = mpsc::unbounded_channel();
        let client = Collector { progress: tx }.serve(transport).await.unwrap();
        let site = Site {
            dir,
            sim,
            client,
            progress,
            url,
            _daemon: daemon,
        };
        site.ok("connect", json!({"port": "sw1"})).await;
        site
    }

    async fn call(&self, tool: &str, args: Value) -> serialgate_testkit::client::Outcome {
        to_outcome(
            self.client
                .peer()
                .call_tool(params(tool, args))
                .await
                .unwrap(),
        )
    }

    async fn ok(&self, tool: &str, args: Value) -> Value {
        self.call(tool, args).await.ok()
    }

    async fn err(&self, tool: &str, args: Value) -> String {
        self.call(tool, args).await.err()
    }

    fn files(&self) -> PathBuf {
        self.dir.path().join("files")
    }

    /// Sends a line and waits for `prompt` (a regex), returning the output.
    async fn line(&self, text: &str, prompt: &str) -> String {
        self.ok("send_text", json!({"text": text})).await;
        self.until(prompt).await
    }

    async fn until(&self, prompt: &str) -> String {
        let r = self
            .ok(
                "read_until_prompt",
                json!({"prompt": prompt, "regex": true, "timeout": 20}),
            )
            .await;
        assert_eq!(r["matched"], true, "no {prompt:?} in {r}");
        r["output"].as_str().unwrap().to_owned()
    }
}

/// A file of `len` bytes that no simple pattern describes.
fn image(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x1234_5678;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

fn sha256(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn rommon() -> SimOptions {
    SimOptions {
        rommon: true,
        ..SimOptions::default()
    }
}

/// The kernel's speed of the port's tty, as the daemon left it.
fn speed(path: &Path) -> Option<u32> {
    common::open_slave(path).map(|fd| common::kernel_speed(&fd))
}

const ROMMON: &str = r"rommon \d+ > $";

/// The transcript once it holds `needle` (its writer follows the log on
/// its own), or as it is after 20 s.
async fn transcript_with(site: &Site, needle: &str) -> String {
    wait::until(Duration::from_secs(20), async || {
        let t = site
            .ok("get_transcript", json!({"last_bytes": 1_000_000}))
            .await;
        let text = t["transcript"].as_str().unwrap_or_default().to_owned();
        wait::when(text, |t| t.contains(needle))
    })
    .await
    .unwrap_or_else(|last| last)
}

/// ROMMON receives a 1 MiB image with `xmodem -c -s 115200`: returns the
/// transfer's result and what ROMMON printed after it.
async fn image_to_rommon(site: &Site, file: &[u8]) -> (Value, String) {
    std::fs::write(site.files().join("c2960x.bin"), file).unwrap();
    site.line("\r", ROMMON).await;
    site.line(
        "xmodem -c -s 115200 c2960x.bin",
        "change the speed of your terminal to 115200 baud now\\.\r\n",
    )
    .await;
    let sent = site
        .ok(
            "send_file",
            json!({"file": "c2960x.bin", "protocol": "xmodem-1k", "transfer_baud": 115200}),
        )
        .await;
    let after = site.until(ROMMON).await;
    (sent, after)
}

#[tokio::test]
async fn a_one_mib_image_reaches_rommon_at_115200_and_the_speed_returns() {
    let site = Site::start(Profile::CiscoIos, "", rommon()).await;
    let file = image(1 << 20);
    let started = Instant::now();
    let (sent, after) = image_to_rommon(&site, &file).await;
    let took = started.elapsed();
    eprintln!("1 MiB by xmodem-1k on a pty: {sent} in {took:?} overall");
    assert_eq!(sent["bytes"], 1 << 20, "{sent}");
    assert_eq!(sent["blocks"], 1024, "{sent}");
    assert_eq!(sent["retries"], 0, "{sent}");
    assert_eq!(sent["sha256"], sha256(&file), "{sent}");
    assert_eq!(sent["baud"], 115200, "{sent}");
    assert_eq!(sent["baud_after"], 9600, "{sent}");
    assert!(
        sent["framing_efficiency"].as_f64().unwrap() > 0.99,
        "{sent}"
    );
    // What the monitor says it got, read at 9600 again.
    let want = format!(
        "Received 1048576 bytes of c2960x.bin, checksum 0x{:04x}",
        serialgate_xmodem::crc16(&file)
    );
    assert!(after.contains(&want), "{after:?}");
    assert!(
        after.contains("Returning console speed to 9600."),
        "{after:?}"
    );
    let status = site.ok("status", json!({})).await;
    assert_eq!(status["settings"]["baud"], 9600, "{status}");
    assert_eq!(status["transfer"], Value::Null, "{status}");
    if let Some(s) = speed(site.sim.path()) {
        assert_eq!(s, 9600, "the tty is back at 9600");
    }
    // The monitor answers at the console speed: the line works.
    assert!(
        site.line("set", ROMMON)
            .await
            .contains("CONFIG_REGISTER=0x2102")
    );
    // The transcript: the command, one summary line, the monitor's words;
    // no frame bytes.
    let text = transcript_with(&site, "CONFIG_REGISTER").await;
    let summaries: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(">>> send_file"))
        .collect();
    assert_eq!(summaries.len(), 1, "{text}");
    assert!(
        summaries[0].contains("send_file xmodem-1k c2960x.bin")
            && summaries[0].contains("1048576 bytes in 1024 blocks, 0 retries")
            && summaries[0].ends_with("at 115200 baud: done"),
        "{}",
        summaries[0]
    );
    assert!(text.contains("xmodem -c -s 115200 c2960x.bin"), "{text}");
    assert!(text.contains(&want), "{text}");
    assert!(
        text.len() < 20_000,
        "no binary in the transcript: {} bytes",
        text.len()
    );
}

#[tokio::test]
async fn damaged_and_lost_blocks_are_sent_again_and_the_image_is_exact() {
    let options = SimOptions {
        faults: BlockFaults {
            corrupt: vec![0, 3, 200, 900],
            drop: vec![500],
        },
        ..rommon()
    };
    let site = Site::start(Profile::CiscoIos, "", options).await;
    let file = image(1 << 20);
    let (sent, after) = image_to_rommon(&site, &file).await;
    assert_eq!(sent["retries"], 5, "one retry a fault: {sent}");
    assert_eq!(sent["blocks"], 1024, "{sent}");
    assert_eq!(sent["sha256"], sha256(&file), "{sent}");
    let want = format!(
        "Received 1048576 bytes of c2960x.bin, checksum 0x{:04x}",
        serialgate_xmodem::crc16(&file)
    );
    assert!(after.contains(&want), "{after:?}");
}

#[tokio::test]
async fn ymodem_gives_u_boot_the_name_and_size_and_the_file_comes_back() {
    let site = Site::start(Profile::UBoot, "prompt = '=> $'", SimOptions::default()).await;
    let file = image(300_001);
    std::fs::write(site.files().join("fw.itb"), &file).unwrap();
    site.line("\r", "=> $").await;
    site.line("loady", "download to 0x82000000 at 115200 bps\\.\\.\\.\r\n")
        .await;
    let sent = site
        .ok("send_file", json!({"file": "fw.itb", "protocol": "ymodem"}))
        .await;
    assert_eq!(sent["bytes"], 300_001, "{sent}");
    assert_eq!(sent["protocol"], "ymodem", "{sent}");
    let after = site.until("=> $").await;
    assert!(after.contains("## File Name       = fw.itb"), "{after:?}");
    assert!(
        after.contains("## Total Size      = 0x000493e1 = 300001 Bytes"),
        "{after:?}"
    );
    let crc = site.line("crc32 82000000 493e1", "=> $").await;
    assert!(
        crc.contains(&format!("==> {:08x}", serialgate_sim::uboot::crc32(&file))),
        "{crc:?}"
    );

    // And back: the loader sends what it holds, YMODEM with its name.
    site.line("sb fw.itb", "start your receiver\r\n").await;
    let got = site.ok("receive_file", json!({"file": "back.itb"})).await;
    assert_eq!(got["sender_name"], "fw.itb", "{got}");
    assert_eq!(got["sender_size"], 300_001, "{got}");
    assert_eq!(got["sha256"], sha256(&file), "{got}");
    assert_eq!(std::fs::read(site.files().join("back.itb")).unwrap(), file);
    site.until("=> $").await;
    // Without a name: the sender's, sanitised; an existing file is kept.
    site.line("sb crashlog.txt", "start your receiver\r\n")
        .await;
    let got = site.ok("receive_file", json!({})).await;
    assert_eq!(got["file"], "crashlog.txt", "{got}");
    let saved = std::fs::read(site.files().join("crashlog.txt")).unwrap();
    assert_eq!(saved, serialgate_sim::uboot::crash_log());
    site.until("=> $").await;
    let e = site
        .err("receive_file", json!({"file": "crashlog.txt"}))
        .await;
    assert!(
        e.starts_with("invalid_argument: files_dir already has"),
        "{e}"
    );
}

#[tokio::test]
async fn a_cancelled_transfer_sends_can_can_and_leaves_rommon_at_its_prompt() {
    let mut site = Site::start(Profile::CiscoIos, "", rommon()).await;
    std::fs::write(site.files().join("big.bin"), image(4 << 20)).unwrap();
    site.line("\r", ROMMON).await;
    site.line("xmodem -c -s 115200 big.bin", "baud now\\.\r\n")
        .await;
    let handle = site
        .client
        .send_cancellable_request(
            request(
                "send_file",
                json!({"file": "big.bin", "transfer_baud": 115200}),
            ),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    // Progress reports blocks sent; halfway-ish, cancel.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let note = tokio::time::timeout(Duration::from_secs(10), site.progress.recv())
            .await
            .expect("progress")
            .expect("progress");
        assert_eq!(note.total, Some(4096.0), "{note:?}");
        if note.progress >= 300.0 {
            assert!(note.message.unwrap_or_default().contains("blocks sent"));
            break;
        }
        assert!(Instant::now() < deadline);
    }
    // Meanwhile status shows the transfer to everyone; another session's
    // writes are busy.
    let other = GateClient::connect_http(&site.url, None).await.unwrap();
    other
        .call("connect", json!({"port": "sw1"}))
        .await
        .unwrap()
        .ok();
    let status = other.call("status", json!({})).await.unwrap().ok();
    assert_eq!(status["transfer"]["file"], "big.bin", "{status}");
    assert_eq!(status["transfer"]["direction"], "send", "{status}");
    assert!(
        status["transfer"]["blocks"].as_u64().unwrap() >= 300,
        "{status}"
    );
    let e = other
        .call("send_text", json!({"text": "boot"}))
        .await
        .unwrap()
        .err();
    assert!(e.starts_with("busy: "), "{e}");
    // Nor may anyone change the line under it: speed, BREAK, modem lines.
    for (tool, args) in [
        ("set_line_settings", json!({"baud": 9600})),
        ("send_break", json!({})),
        ("detect_baud", json!({})),
        ("pulse_line", json!({"line": "dtr"})),
    ] {
        let e = other.call(tool, args).await.unwrap().err();
        assert!(
            e.starts_with("busy: ") && e.contains("file transfer"),
            "{tool}: {e}"
        );
    }
    handle.cancel(Some("enough".into())).await.unwrap();
    // The transfer ends, the speed is back, and ROMMON says so at 9600.
    let after = site.until(ROMMON).await;
    assert!(
        after.contains("xmodem: big.bin not received: the other side cancelled"),
        "{after:?}"
    );
    let status = site.ok("status", json!({})).await;
    assert_eq!(status["transfer"], Value::Null, "{status}");
    assert_eq!(status["settings"]["baud"], 9600, "{status}");
    assert!(site.line("set", ROMMON).await.contains("CONFIG_REGISTER"));
    // The other session may write again once it takes the hold... it is
    // still held by the first; its error is the hold's, not the transfer's.
    let e = other
        .call("send_text", json!({"text": ""}))
        .await
        .unwrap()
        .err();
    assert!(
        e.starts_with("busy: ") && !e.contains("file transfer"),
        "{e}"
    );
}

#[tokio::test]
async fn paths_outside_files_dir_are_refused_and_bad_arguments_change_nothing() {
    let site = Site::start(Profile::CiscoIos, "", rommon()).await;
    let outside = site.dir.path().join("outside.bin");
    std::fs::write(&outside, b"not yours").unwrap();
    std::os::unix::fs::symlink(&outside, site.files().join("link.bin")).unwrap();
    std::fs::create_dir(site.files().join("sub")).unwrap();
    std::fs::write(site.files().join("ok.bin"), b"x").unwrap();
    let traversal = "../outside.bin".to_owned();
    let absolute = outside.display().to_string();
    let long = "a".repeat(300);
    for (args, says) in [
        (json!({"file": traversal}), "has a '/'"),
        (json!({"file": absolute}), "has a '/'"),
        (json!({"file": "link.bin"}), "symbolic link"),
        (json!({"file": "sub"}), "not a regular file"),
        (json!({"file": ".."}), "starts with '.'"),
        (json!({"file": "a\nb"}), "control characters"),
        (json!({"file": long}), "too long"),
        (json!({"file": "missing.bin"}), "has no file"),
        (
            json!({"file": "ok.bin", "protocol": "kermit"}),
            "protocol \"kermit\" is not one of",
        ),
        (
            json!({"file": "ok.bin", "transfer_baud": 99_999_999}),
            "transfer_baud",
        ),
        (json!({"file": "ok.bin", "timeout": 5}), "unknown field"),
        (json!({"file": "ok.bin", "path": "/etc"}), "unknown field"),
    ] {
        let e = site.err("send_file", args.clone()).await;
        assert!(
            e.starts_with("invalid_argument: ") && e.contains(says),
            "{args}: {e}"
        );
    }
    for (args, says) in [
        (json!({"file": "../x"}), "has a '/'"),
        (json!({"protocol": "xmodem"}), "give file"),
        (json!({"file": "ok.bin"}), "already has"),
    ] {
        let e = site.err("receive_file", args.clone()).await;
        assert!(
            e.starts_with("invalid_argument: ") && e.contains(says),
            "{args}: {e}"
        );
    }
    // Nothing was sent, nothing written outside, the port is free.
    assert_eq!(std::fs::read(&outside).unwrap(), b"not yours");
    assert!(!site.sim.received().contains(&0x01) && !site.sim.received().contains(&0x02));
    let status = site.ok("status", json!({})).await;
    assert_eq!(status["transfer"], Value::Null, "{status}");
    // Nobody to talk to: the transfer waits for a start until cancelled,
    // which leaves the port free and usable.
    let handle = site
        .client
        .send_cancellable_request(
            request("send_file", json!({"file": "ok.bin"})),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let within = Duration::from_secs(20);
    wait::eventually("the transfer to show in status", within, async || {
        wait::when(site.ok("status", json!({})).await, |s| {
            !s["transfer"].is_null()
        })
    })
    .await;
    handle.cancel(None).await.unwrap();
    wait::eventually("the transfer to end", within, async || {
        wait::when(site.ok("status", json!({})).await, |s| {
            s["transfer"].is_null()
        })
    })
    .await;
    assert!(site.line("\r", ROMMON).await.contains("rommon"));
    assert!(
        !site.sim.received().contains(&0x18),
        "no CAN before a start"
    );
}

#[tokio::test]
async fn a_break_sequence_during_boot_drops_the_switch_into_rommon() {
    let options = SimOptions {
        boot_window: Duration::from_secs(3),
        ..SimOptions::default()
    };
    let site = Site::start(
        Profile::CiscoIos,
        "break_sequences = { alt = '\\r~^b', slow = '\\r\\d~\\d^b' }",
        options,
    )
    .await;
    site.line("\r", "SW1>$").await;
    site.line("enable", "Password: $").await;
    site.line("cisco", "SW1#$").await;
    site.line("reload", "\\[confirm\\]$").await;
    site.line(
        "",
        "Copyright \\(c\\) 2020 by cisco Systems, Inc\\.\r\n\r\n",
    )
    .await;
    let sent = site.ok("send_break", json!({"sequence": "slow"})).await;
    assert_eq!(sent["sequence"], "slow", "{sent}");
    assert!(
        sent["duration_ms"].as_u64().unwrap() >= 500,
        "two pauses: {sent}"
    );
    let out = site.until(ROMMON).await;
    assert!(out.contains("aborted due to user interrupt"), "{out:?}");
    let e = site.err("send_break", json!({"sequence": "nope"})).await;
    assert!(
        e.starts_with("invalid_argument: ") && e.contains("it has: alt, slow"),
        "{e}"
    );
    let status = site.ok("status", json!({})).await;
    assert!(
        status.to_string().contains("sent break sequence slow"),
        "{status}"
    );
}

/// A hostile sender, played byte by byte on a silent device: a YMODEM
/// header naming a path outside files_dir with escape codes in it is
/// saved under a sanitised plain name; one announcing a huge file is
/// cancelled before a byte is kept.
#[tokio::test]
async fn a_hostile_sender_cannot_name_a_path_or_fill_the_disk() {
    use serialgate_xmodem::{ACK, CRC_START, Check, EOT, FileHeader, NAK, PAD, encode};
    let site = Site::start(Profile::Silent, "", SimOptions::default()).await;
    let peer = site.client.peer().clone();
    let call = tokio::spawn(async move {
        to_outcome(
            peer.call_tool(params("receive_file", json!({})))
                .await
                .unwrap(),
        )
    });
    let wait = async |needle: &[u8]| {
        assert!(
            site.sim
                .wait_received(needle, Duration::from_secs(10))
                .await,
            "the gateway never sent {needle:?}: {:?}",
            site.sim.received()
        );
    };
    wait(&[CRC_START]).await;
    let header = FileHeader {
        name: "../../etc/evil\u{1b}[2J.sh".into(),
        size: Some(5),
    }
    .encode();
    site.sim
        .inject(&encode(0, &header, 128, 0, Check::Crc16))
        .await;
    wait(&[ACK, CRC_START]).await;
    site.sim
        .inject(&encode(1, b"hello", 128, PAD, Check::Crc16))
        .await;
    wait(&[ACK, CRC_START, ACK]).await;
    site.sim.inject(&[EOT]).await;
    wait(&[ACK, CRC_START, ACK, NAK]).await;
    site.sim.inject(&[EOT]).await;
    wait(&[NAK, ACK, CRC_START]).await;
    site.sim.inject(&encode(0, &[], 128, 0, Check::Crc16)).await;
    let got = call.await.unwrap().ok();
    assert_eq!(got["file"], "evil__2J.sh", "{got}");
    assert_eq!(got["bytes"], 5, "{got}");
    assert_eq!(
        std::fs::read(site.files().join("evil__2J.sh")).unwrap(),
        b"hello"
    );
    let names: Vec<_> = std::fs::read_dir(site.files())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(!site.dir.path().join("etc").exists());

    // A header announcing more than the gateway takes: CAN CAN at once
    // (after the device has the last ACK of the first file).
    wait(&[NAK, ACK, CRC_START, ACK]).await;
    let before = site.sim.received().len();
    let peer = site.client.peer().clone();
    let call = tokio::spawn(async move {
        to_outcome(
            peer.call_tool(params("receive_file", json!({"file": "huge.bin"})))
                .await
                .unwrap(),
        )
    });
    // The new start request, after everything the device got before.
    let mut needle = site.sim.received()[before.saturating_sub(8)..before].to_vec();
    needle.push(CRC_START);
    wait(&needle).await;
    let header = FileHeader {
        name: "huge.bin".into(),
        size: Some(1 << 40),
    }
    .encode();
    site.sim
        .inject(&encode(0, &header, 128, 0, Check::Crc16))
        .await;
    let e = call.await.unwrap().err();
    assert!(e.contains("at most") && e.contains("protocol error"), "{e}");
    // The CAN CAN may reach the device just after the call's answer:
    // await it (nothing before `before` was a CAN).
    assert!(
        site.sim
            .wait_received(&[0x18, 0x18], Duration::from_secs(20))
            .await,
        "CAN CAN sent: {:?}",
        &site.sim.received()[before..]
    );
    assert!(!site.files().join("huge.bin").exists());
}
