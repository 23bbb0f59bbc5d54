//! File transfers against an implementation nobody here wrote: lrzsz
//! (`rb`, `sb`, `rx`, `sx`) run by a real bash on the far end of a
//! pseudo-terminal (the test kit's program line), as an engineer pulls a
//! file off a Linux box's serial console. Both directions, YMODEM and
//! XMODEM; lrzsz's CRC decides whether what arrived is exact.
//!
//! What lrzsz showed: as `rx` and `rb` exit they write their last ACK and
//! then flush the terminal's queues, which on a pseudo-terminal drops the
//! ACK unless the other side read it first (on a real UART the drain
//! before the flush sends it). A sender that then sent its EOT again typed
//! Ctrl-D into the shell, which logged out: the "lost line" these tests
//! once saw under load. The sender now ends when the receiver's shell
//! prints its prompt after the last step, and says the end went
//! unconfirmed.

use std::path::Path;

use serde_json::json;
use serialgate_testkit::daemon::{Client, Daemon, NotifySocket};
use serialgate_testkit::program::{Program, ProgramLine};
use tempfile::TempDir;

/// The shell's prompt, as a regex at the end of the output.
const PROMPT: &str = r"lab\$ $";

/// Whether lrzsz is here; says why not when they are not.
fn tools_here() -> bool {
    let here = ["rb", "sb", "rx", "sx"].iter().all(|tool| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(tool).exists()))
    });
    if !here {
        eprintln!("skipped: lrzsz (rb, sb, rx, sx) is not installed (.ci/run installs it)");
        assert!(std::env::var_os("CI").is_none(), "CI must have lrzsz");
    }
    here
}

/// A file of `len` bytes that no simple pattern describes.
fn image(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

/// A bash on a pty whose other end is `<dir>/sw1`, working in
/// `<dir>/remote`; the daemon with that as port `sw1` (preset linux) and
/// `<dir>/files` as its files_dir; an agent on stdio, at the prompt.
struct Lab {
    dir: TempDir,
    _shell: ProgramLine,
    _daemon: Daemon,
    _notify: NotifySocket,
    agent: Client,
}

impl Lab {
    async fn start() -> Lab {
        let dir = tempfile::tempdir().expect("temp dir");
        for sub in ["files", "remote"] {
            std::fs::create_dir(dir.path().join(sub)).expect("mkdir");
        }
        let link = dir.path().join("sw1");
        let shell = ProgramLine::spawn(
            Program::new("bash")
                .arg("--norc")
                .arg("--noprofile")
                .arg("-i")
                .current_dir(dir.path().join("remote"))
                .env("PS1", "lab$ ")
                .env("TERM", "dumb"),
            &link,
        )
        .expect("bash on a program line");
        let config = dir.path().join("serialgate.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\nfiles_dir = \"files\"\n\n[ports.sw1]\ndevice = {:?}\npreset = \"linux\"\n",
                link.display()
            ),
        )
        .expect("write config");
        let notify = NotifySocket::bind(dir.path());
        let mut daemon = Daemon::spawn(Some(&config), &notify, &[]);
        notify.expect("READY=1").await;
        let agent = daemon.client().await;
        agent.ok("connect", json!({"port": "sw1"})).await;
        let lab = Lab {
            dir,
            _shell: shell,
            _daemon: daemon,
            _notify: notify,
            agent,
        };
        lab.line("", PROMPT).await;
        lab
    }

    fn path(&self, sub: &str) -> std::path::PathBuf {
        self.dir.path().join(sub)
    }

    /// Types `text` and Enter; waits for `prompt` (a regex).
    async fn line(&self, text: &str, prompt: &str) -> String {
        self.agent
            .ok("send_text", json!({"text": format!("{text}\r")}))
            .await;
        self.until(prompt).await
    }

    async fn until(&self, prompt: &str) -> String {
        let r = self
            .agent
            .ok(
                "read_until_prompt",
                json!({"prompt": prompt, "regex": true, "timeout": 30}),
            )
            .await;
        assert_eq!(r["matched"], true, "no {prompt:?} in {r}");
        r["output"].as_str().unwrap_or_default().to_owned()
    }
}

/// A send's result either says nothing of its end (acknowledged) or says
/// it went unconfirmed; nothing else is acceptable.
fn ended_plainly_or_unconfirmed(sent: &serde_json::Value) {
    assert!(
        sent.get("end_unconfirmed").is_none() || sent["end_unconfirmed"] == true,
        "{sent}"
    );
}

fn write(path: &Path, data: &[u8]) {
    std::fs::write(path, data).expect("write a file");
}

/// YMODEM to `rb`: the file arrives exact under the sender's name, and
/// the shell is still there afterwards (no EOT typed into it).
#[tokio::test]
async fn ymodem_to_lrzsz_rb_on_a_linux_console() {
    if !tools_here() {
        return;
    }
    let lab = Lab::start().await;
    let file = image(200_003);
    write(&lab.path("files").join("fw.bin"), &file);

    // To the box: `rb` receives under the sender's name.
    lab.agent.ok("send_text", json!({"text": "rb -q\r"})).await;
    let sent = lab
        .agent
        .ok("send_file", json!({"file": "fw.bin", "protocol": "ymodem"}))
        .await;
    assert_eq!(sent["bytes"], 200_003, "{sent}");
    lab.until(PROMPT).await;
    ended_plainly_or_unconfirmed(&sent);
    assert_eq!(
        std::fs::read(lab.path("remote").join("fw.bin")).expect("rb saved it"),
        file
    );
    // lrzsz's own check of what it holds, as the engineer would run it.
    let listed = lab.line("wc -c fw.bin", PROMPT).await;
    assert!(listed.contains("200003 fw.bin"), "{listed:?}");
}

#[tokio::test]
async fn ymodem_from_lrzsz_sb_on_a_linux_console() {
    if !tools_here() {
        return;
    }
    let lab = Lab::start().await;
    // `sb` sends, with its name and size.
    let log = image(70_000);
    write(&lab.path("remote").join("crash.log"), &log);
    lab.agent
        .ok("send_text", json!({"text": "sb -q crash.log\r"}))
        .await;
    let got = lab.agent.ok("receive_file", json!({})).await;
    assert_eq!(got["file"], "crash.log", "{got}");
    assert_eq!(got["sender_size"], 70_000, "{got}");
    lab.until(PROMPT).await;
    assert_eq!(
        std::fs::read(lab.path("files").join("crash.log")).expect("saved"),
        log
    );
}

#[tokio::test]
async fn xmodem_to_and_from_lrzsz_on_a_linux_console() {
    if !tools_here() {
        return;
    }
    let lab = Lab::start().await;
    // XMODEM pads the last block (SUB, 0x1a): a whole number of 1K blocks
    // arrives exact.
    let file = image(64 * 1024);
    write(&lab.path("files").join("boot.img"), &file);
    lab.agent
        .ok("send_text", json!({"text": "rx -q boot.img\r"}))
        .await;
    let sent = lab
        .agent
        .ok(
            "send_file",
            json!({"file": "boot.img", "protocol": "xmodem-1k"}),
        )
        .await;
    assert_eq!(sent["bytes"], 64 * 1024, "{sent}");
    lab.until(PROMPT).await;
    ended_plainly_or_unconfirmed(&sent);
    assert_eq!(
        std::fs::read(lab.path("remote").join("boot.img")).expect("rx saved it"),
        file
    );

    let back = image(8 * 1024);
    write(&lab.path("remote").join("dump.bin"), &back);
    lab.agent
        .ok("send_text", json!({"text": "sx -q dump.bin\r"}))
        .await;
    let got = lab
        .agent
        .ok(
            "receive_file",
            json!({"file": "dump.bin", "protocol": "xmodem"}),
        )
        .await;
    assert_eq!(got["file"], "dump.bin", "{got}");
    lab.until(PROMPT).await;
    assert_eq!(
        std::fs::read(lab.path("files").join("dump.bin")).expect("saved"),
        back
    );
}
