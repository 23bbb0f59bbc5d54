//! The end-to-end tests' usual rig: a simulated device on a real
//! pseudo-terminal, the real `serialgate` binary as an MCP server over
//! stdio, and rmcp's client in between; and the helpers the tests share to
//! read results and the kernel's side of a tty.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::fcntl::{OFlag, open};
use nix::sys::stat::Mode;
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use tempfile::TempDir;

pub use crate::binary::binary;
use crate::client::{GateClient, Outcome};
use crate::wait;

/// A device, a gateway and a client.
pub struct Rig {
    /// The simulated device at `<dir>/sw1`.
    pub sim: SimHandle,
    /// An MCP session with the gateway over its stdio.
    pub client: GateClient,
    /// Holds the config and the device's link.
    pub dir: TempDir,
}

impl Rig {
    /// Starts `profile` linked at `<tmp>/sw1`, a config with port `sw1` on
    /// it (cisco-ios preset for the switch, generic for a silent device),
    /// plus `extra` TOML appended, and a client session.
    pub async fn start(profile: Profile, extra: &str) -> Rig {
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("sw1");
        let sim = sim::spawn(profile, Some(link.clone()))
            .await
            .expect("simulated device");
        let preset = profile.preset();
        let config = format!(
            "[ports.sw1]\ndevice = {:?}\npreset = \"{preset}\"\n{extra}",
            link.display()
        );
        let client = Self::client_with(&dir, &config).await;
        Rig { sim, client, dir }
    }

    /// Starts `profile` linked at `<tmp>/sw1`, a config with port `sw1` on
    /// it with `preset`, plus `extra` TOML appended (more keys of
    /// `[ports.sw1]` may come first in it), and a client session.
    pub async fn start_with(profile: Profile, preset: &str, extra: &str) -> Rig {
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("sw1");
        let sim = sim::spawn(profile, Some(link.clone()))
            .await
            .expect("simulated device");
        let config = format!(
            "[ports.sw1]\ndevice = {:?}\npreset = {preset:?}\n{extra}",
            link.display()
        );
        let client = Self::client_with(&dir, &config).await;
        Rig { sim, client, dir }
    }

    /// Writes `config` into `dir` and starts a client session with it.
    pub async fn client_with(dir: &TempDir, config: &str) -> GateClient {
        let path: PathBuf = dir.path().join("serialgate.toml");
        std::fs::write(&path, config).expect("write config");
        GateClient::spawn(&binary(), Some(&path))
            .await
            .expect("spawn serialgate")
    }

    /// Calls a tool.
    pub async fn call(&self, tool: &str, args: Value) -> Outcome {
        self.client.call(tool, args).await.expect("MCP transport")
    }

    /// Calls a tool that must succeed.
    pub async fn ok(&self, tool: &str, args: Value) -> Value {
        self.call(tool, args).await.ok()
    }

    /// Calls a tool that must fail, and returns its error text.
    pub async fn err(&self, tool: &str, args: Value) -> String {
        self.call(tool, args).await.err()
    }

    /// Connects to `sw1`, wakes the switch and enters privileged mode.
    pub async fn login(&self) {
        self.ok("connect", json!({"port": "sw1"})).await;
        enable(&self.client).await;
    }

    /// Polls `status` until its state is `want` or `within` passes (no
    /// event reaches an MCP client for a state change); the last status.
    pub async fn wait_state(&self, want: &str, within: Duration) -> Value {
        wait::until(within, async || {
            wait::when(self.ok("status", json!({})).await, |s| s["state"] == want)
        })
        .await
        .unwrap_or_else(|last| last)
    }
}

/// The running config's lines as the switch defines them.
pub fn running_config() -> Vec<String> {
    sim::cisco::running_config_lines()
}

/// A text field of a result.
pub fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("no text field {field} in {v}"))
}

/// An integer field of a result.
pub fn num(v: &Value, field: &str) -> u64 {
    v[field]
        .as_u64()
        .unwrap_or_else(|| panic!("no integer field {field} in {v}"))
}

/// Bytes from the lowercase hex of `encoding: "hex"` outputs.
pub fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

/// How many times `needle` occurs in `haystack` (overlaps counted).
pub fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// Opens a pty slave to read its termios, without becoming its
/// controlling terminal. A program holding it exclusively (ser2net) makes
/// this need root (as CI has); `None`, said on stderr, otherwise.
pub fn open_slave(path: &Path) -> Option<OwnedFd> {
    let flags = OFlag::O_RDONLY | OFlag::O_NOCTTY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    match open(path, flags, Mode::empty()) {
        Ok(fd) => Some(fd),
        Err(e) => {
            crate::skip::skipped(&format!(
                "cannot open {} ({e}), so the kernel-side checks (run as root, as CI does)",
                path.display()
            ));
            None
        }
    }
}

/// The tty's output speed as the kernel has it (TCGETS2, which also
/// reports rates set as BOTHER).
pub fn kernel_speed(fd: &OwnedFd) -> u32 {
    // SAFETY: an all-zero termios2 is a valid value of this plain C struct.
    let mut termios: libc::termios2 = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `termios` is a termios2 the call writes.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TCGETS2, &mut termios) };
    assert_eq!(r, 0, "TCGETS2: {}", std::io::Error::last_os_error());
    termios.c_ospeed
}

/// The gateway with `config` (ports of any kind, local or remote) and a
/// session, in its own temp dir.
pub struct Gate {
    /// An MCP session with the gateway over its stdio.
    pub client: GateClient,
    _dir: TempDir,
}

impl Gate {
    /// Starts the gateway and a session.
    pub async fn start(config: &str) -> Gate {
        let dir = tempfile::tempdir().expect("temp dir");
        let client = Rig::client_with(&dir, config).await;
        Gate { client, _dir: dir }
    }

    /// Calls `tool`; its result must not be an error.
    pub async fn ok(&self, tool: &str, args: Value) -> Value {
        self.client
            .call(tool, args)
            .await
            .expect("MCP transport")
            .ok()
    }

    /// Calls `tool`; its result must be an error, whose text is returned.
    pub async fn err(&self, tool: &str, args: Value) -> String {
        self.client
            .call(tool, args)
            .await
            .expect("MCP transport")
            .err()
    }

    /// Polls `status` until `done` holds or `within` passes (no event
    /// reaches an MCP client for a state change); the last status.
    pub async fn wait_status(&self, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
        wait::until(within, async || {
            wait::when(self.ok("status", json!({})).await, &done)
        })
        .await
        .unwrap_or_else(|last| last)
    }

    /// Polls `status` until its state is one of `want` or the deadline
    /// passes.
    pub async fn wait_state(&self, want: &[&str], within: Duration) -> Value {
        self.wait_status(within, |s| {
            want.contains(&s["state"].as_str().unwrap_or_default())
        })
        .await
    }

    /// Waits (5 s at most) until the port is `lost` or `reopening`, and
    /// checks that a write is refused with `port_lost`.
    pub async fn expect_lost(&self) {
        let lost = self
            .wait_state(&["lost", "reopening"], Duration::from_secs(5))
            .await;
        assert!(
            lost["state"] == "lost" || lost["state"] == "reopening",
            "{lost}"
        );
        let e = self.err("send_text", json!({"text": "show clock"})).await;
        assert!(e.starts_with("port_lost: "), "{e}");
    }

    /// Wakes the switch and enters privileged mode.
    pub async fn login(&self) {
        enable(&self.client).await;
    }

    /// Every retained byte, read with `read_output` as hex.
    pub async fn all_output(&self) -> Vec<u8> {
        let (mut cursor, mut bytes) = (0u64, Vec::new());
        loop {
            let r = self
                .ok(
                    "read_output",
                    json!({"cursor": cursor, "max_bytes": 65536, "encoding": "hex"}),
                )
                .await;
            bytes.extend(unhex(text(&r, "output")));
            cursor = num(&r, "next_cursor");
            if r["has_more"] != true {
                return bytes;
            }
        }
    }
}

/// Wakes the simulated switch on the session's connected port and enters
/// privileged mode (`SW1>`, `enable`, the password, `SW1#`).
pub async fn enable(client: &GateClient) {
    let ok = async |tool: &str, args: Value| -> Value {
        client.call(tool, args).await.expect("MCP transport").ok()
    };
    ok("send_text", json!({"text": ""})).await;
    let woke = ok("read_until_prompt", json!({"timeout": 5})).await;
    assert_eq!(woke["prompt_text"], "SW1>", "{woke}");
    ok("send_text", json!({"text": "enable"})).await;
    ok(
        "read_until_prompt",
        json!({"prompt": "Password: ", "timeout": 5}),
    )
    .await;
    ok("send_text", json!({"text": sim::cisco::ENABLE_PASSWORD})).await;
    let enabled = ok("read_until_prompt", json!({"timeout": 5})).await;
    assert_eq!(enabled["prompt_text"], "SW1#", "{enabled}");
}
