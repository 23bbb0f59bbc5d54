//! The servers under test, each driven the way its own documentation says,
//! against its own simulated Cisco switch on a pty: the same commands, the
//! same bytes, the same client.
//!
//! | work | serialgate | serial-console-mcp | serial-mcp |
//! |---|---|---|---|
//! | open | config port `sw1` (preset `cisco-ios`) + `connect` | `connect` (preset `cisco-console`, `terminal: dumb`) | `open` (`rx_buffer_size` 16 MiB; `max_buffered_bytes` 1 MiB, 16 MiB for `bulk`) |
//! | `rtt1` | `send_command` | `query_text` | `transact` |
//! | `rtt2` | `send_text` + `read_until_prompt` | `send_text` + `read_until_prompt` | `write` + `read` (match) |
//! | no port I/O | `list_presets` | `list_presets` | `list_connections` |
//! | `paged` | `send_command` (preset's auto_reply) | `send_text` + `read_until_prompt` with `auto_reply {"--More--": " "}` | no pager answers: the client pages, one `transact " "` per `--More--` |
//! | `bulk` | `send_command` | `send_text` + `read_until_prompt` | `transact` |
//!
//! The peers wait for the literal prompt `SW1#` (cheaper for them than a
//! prompt regex; serialgate uses its preset's regex). serial-console-mcp runs
//! with `terminal: dumb` rather than its preset's `ansi`, which only adds
//! work (escape stripping, line rendering) and would redraw the pager's
//! erase. serial-mcp reads from its shared cursor (`from: cursor`) so that
//! nothing between two calls is skipped.

use std::path::{Path, PathBuf};

use anyhow::{Context, ensure};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_serial::{SerialPortBuilderExt, SerialStream};

use crate::client::{McpProc, text};

/// The switch's privileged prompt, which ends every command's output.
pub const PROMPT: &str = "SW1#";
/// Largest output asked for in one call (bulk is ~4 MB).
pub const MAX_OUTPUT: u64 = 16 << 20;
/// The largest read cap serial-mcp's `read` accepts.
const SERIAL_MCP_READ_MAX: u64 = 1 << 20;

/// Which server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Serialgate,
    SerialConsoleMcp,
    SerialMcp,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Serialgate, Kind::SerialConsoleMcp, Kind::SerialMcp];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Serialgate => "serialgate",
            Kind::SerialConsoleMcp => "serial-console-mcp",
            Kind::SerialMcp => "serial-mcp",
        }
    }
}

/// Where the servers' programs are.
#[derive(Clone, Debug)]
pub struct Binaries {
    pub serialgate: PathBuf,
    pub serial_console_mcp: Option<PathBuf>,
    pub serial_mcp: Option<PathBuf>,
}

impl Binaries {
    pub fn get(&self, kind: Kind) -> Option<&Path> {
        match kind {
            Kind::Serialgate => Some(&self.serialgate),
            Kind::SerialConsoleMcp => self.serial_console_mcp.as_deref(),
            Kind::SerialMcp => self.serial_mcp.as_deref(),
        }
    }
}

/// A server process with one port open on its own simulated switch, logged
/// in (`enable`), at `terminal length 24`.
pub struct Session {
    pub kind: Kind,
    pub proc: McpProc,
    /// serial-mcp's connection id.
    conn: String,
    /// The device path the server opens (a symlink to the pty).
    link: PathBuf,
    _sim: SimHandle,
    /// Holds the device link and serialgate's config.
    _dir: tempfile::TempDir,
}

/// One `paged` run: what arrived and how.
pub struct Paged {
    /// serialgate's clean output, or the raw bytes a peer returned.
    pub text: String,
    pub clean: bool,
    /// `--More--` prompts answered.
    pub pages: u64,
    /// Tool calls it took.
    pub calls: u64,
}

/// One `bulk` run.
pub struct Bulk {
    pub text: String,
    pub clean: bool,
    /// The server's own time to the prompt, where it reports one.
    pub server_ms: Option<f64>,
}

impl Session {
    /// Starts a simulated switch and `kind`'s server on it, opens the port
    /// and enters privileged mode.
    pub async fn start(kind: Kind, bins: &Binaries, logs: &Path) -> anyhow::Result<Session> {
        let binary = bins.get(kind).context("not installed")?;
        let dir = tempfile::tempdir()?;
        let link = dir.path().join("ttyUSB-sw1");
        let sim = sim::spawn(Profile::CiscoIos, Some(link.clone())).await?;
        let stderr_log = logs.join(format!("{}.stderr", kind.name()));
        let conn = String::new();
        let proc = match kind {
            Kind::Serialgate => {
                let config = dir.path().join("serialgate.toml");
                std::fs::write(
                    &config,
                    format!(
                        "[server]\nretention = \"16MiB\"\n\n[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n",
                        link.display()
                    ),
                )?;
                let proc = McpProc::spawn(
                    kind.name(),
                    serialgate_command(binary, &config),
                    &stderr_log,
                )
                .await?;
                proc.call("connect", json!({"port": "sw1"})).await?;
                proc.call("send_text", json!({"text": ""})).await?;
                proc.call("read_until_prompt", json!({"timeout": 5}))
                    .await?;
                proc.call("send_text", json!({"text": "enable"})).await?;
                proc.call(
                    "read_until_prompt",
                    json!({"prompt": "Password:", "timeout": 5}),
                )
                .await?;
                proc.call("send_text", json!({"text": sim::cisco::ENABLE_PASSWORD}))
                    .await?;
                let r = proc
                    .call("read_until_prompt", json!({"timeout": 5}))
                    .await?;
                ensure!(
                    r["prompt_text"]
                        .as_str()
                        .is_some_and(|p| p.contains(PROMPT)),
                    "serialgate: not in privileged mode: {r}"
                );
                proc
            }
            Kind::SerialConsoleMcp => {
                let mut cmd = tokio::process::Command::new(binary);
                // It remembers connections in $XDG_CONFIG_HOME: keep that in
                // the scratch folder.
                cmd.env("XDG_CONFIG_HOME", logs.join("xdg"));
                let proc = McpProc::spawn(kind.name(), cmd, &stderr_log).await?;
                let r = proc
                    .call(
                        "connect",
                        json!({"port": link, "preset": "cisco-console", "terminal": "dumb"}),
                    )
                    .await?;
                ensure!(text(&r).starts_with("Connected"), "connect: {r}");
                for (data, prompt) in [
                    ("", "SW1>"),
                    ("enable", "Password:"),
                    (sim::cisco::ENABLE_PASSWORD, PROMPT),
                ] {
                    let r = proc
                        .call("query_text", json!({"data": data, "prompt": prompt}))
                        .await?;
                    ensure!(text(&r).starts_with("Matched"), "login at {prompt}: {r}");
                }
                proc
            }
            Kind::SerialMcp => {
                let mut cmd = tokio::process::Command::new(binary);
                cmd.arg("--max-tool-buffered-bytes")
                    .arg(MAX_OUTPUT.to_string())
                    .arg("--profiles-path")
                    .arg(logs.join("serial-mcp-profiles.toml"));
                if std::env::var_os("RUST_LOG").is_none() {
                    cmd.env("RUST_LOG", "warn");
                }
                let proc = McpProc::spawn(kind.name(), cmd, &stderr_log).await?;
                let mut session = Session {
                    kind,
                    proc,
                    conn,
                    link,
                    _sim: sim,
                    _dir: dir,
                };
                session.open_serial_mcp(SERIAL_MCP_READ_MAX).await?;
                for (data, prompt) in [
                    ("\r", "SW1>"),
                    ("enable\r", "Password:"),
                    ("cisco\r", PROMPT),
                ] {
                    session.transact(data, prompt, false, 10_000).await?;
                }
                return Ok(session);
            }
        };
        Ok(Session {
            kind,
            proc,
            conn,
            link,
            _sim: sim,
            _dir: dir,
        })
    }

    /// serial-mcp: (re)opens the device with reads capped at `max_buffered`
    /// bytes. Its `read` refuses a cap over 1 MiB and its `transact` cuts
    /// its output at the cap, so the bench opens with 1 MiB and reopens
    /// with 16 MiB for `bulk` ([`prepare_bulk`](Self::prepare_bulk)).
    async fn open_serial_mcp(&mut self, max_buffered: u64) -> anyhow::Result<()> {
        if !self.conn.is_empty() {
            self.proc
                .call("close", json!({"connection_id": self.conn}))
                .await?;
        }
        let r = self
            .proc
            .call(
                "open",
                json!({
                    "port": self.link,
                    "baud_rate": 9600,
                    "rx_buffer_size": MAX_OUTPUT,
                    "max_buffered_bytes": max_buffered,
                    "profile_mode": "none",
                }),
            )
            .await?;
        self.conn = r["connection_id"]
            .as_str()
            .with_context(|| format!("open: {r}"))?
            .to_owned();
        Ok(())
    }

    /// Before `bulk`: `terminal length 0`, and serial-mcp's read cap raised
    /// to 16 MiB.
    pub async fn prepare_bulk(&mut self) -> anyhow::Result<()> {
        if self.kind == Kind::SerialMcp {
            self.open_serial_mcp(MAX_OUTPUT).await?;
        }
        self.terminal_length(0).await
    }

    /// serial-mcp: write `data` and read from the shared cursor until
    /// `pattern` (a regex if `regex`); returns the `read` half.
    async fn transact(
        &self,
        data: &str,
        pattern: &str,
        regex: bool,
        timeout_ms: u64,
    ) -> anyhow::Result<Value> {
        let mode = if regex { "regex" } else { "literal_substring" };
        let r = self
            .proc
            .call(
                "transact",
                json!({
                    "connection_id": self.conn,
                    "data": data,
                    "from": {"type": "cursor"},
                    "match": {"pattern": pattern, "config": {"mode": mode}},
                    "timeout_ms": timeout_ms,
                }),
            )
            .await?;
        let read = r["read"].clone();
        ensure!(
            read["matched"] == true,
            "transact {data:?}: {pattern:?} not matched: {}",
            abbreviate(&read)
        );
        Ok(read)
    }

    /// `show clock` in one call.
    pub async fn rtt1(&self) -> anyhow::Result<()> {
        let reply = match self.kind {
            Kind::Serialgate => {
                let r = self
                    .proc
                    .call("send_command", json!({"command": "show clock"}))
                    .await?;
                ensure!(r["matched"] == true, "send_command: {r}");
                r["output"].as_str().unwrap_or_default().to_owned()
            }
            Kind::SerialConsoleMcp => {
                let r = self
                    .proc
                    .call(
                        "query_text",
                        json!({"data": "show clock", "prompt": PROMPT}),
                    )
                    .await?;
                ensure!(text(&r).starts_with("Matched"), "query_text: {r}");
                text(&r).to_owned()
            }
            Kind::SerialMcp => {
                let read = self.transact("show clock\r", PROMPT, false, 10_000).await?;
                read["data"].as_str().unwrap_or_default().to_owned()
            }
        };
        ensure!(reply.contains(" UTC "), "show clock: {reply:?}");
        Ok(())
    }

    /// `show clock` in two calls: send, then read until the prompt.
    pub async fn rtt2(&self) -> anyhow::Result<()> {
        let reply = match self.kind {
            Kind::Serialgate => {
                self.proc
                    .call("send_text", json!({"text": "show clock"}))
                    .await?;
                let r = self.proc.call("read_until_prompt", json!({})).await?;
                ensure!(r["matched"] == true, "read_until_prompt: {r}");
                r["output"].as_str().unwrap_or_default().to_owned()
            }
            Kind::SerialConsoleMcp => {
                self.proc
                    .call("send_text", json!({"data": "show clock"}))
                    .await?;
                let r = self
                    .proc
                    .call("read_until_prompt", json!({"prompt": PROMPT}))
                    .await?;
                ensure!(text(&r).starts_with("Matched"), "read_until_prompt: {r}");
                text(&r).to_owned()
            }
            Kind::SerialMcp => {
                self.proc
                    .call(
                        "write",
                        json!({"connection_id": self.conn, "data": "show clock\r"}),
                    )
                    .await?;
                let r = self
                    .proc
                    .call(
                        "read",
                        json!({
                            "connection_id": self.conn,
                            "from": {"type": "cursor"},
                            "match": {"pattern": PROMPT},
                            "timeout_ms": 10_000,
                        }),
                    )
                    .await?;
                ensure!(r["matched"] == true, "read: {}", abbreviate(&r));
                r["data"].as_str().unwrap_or_default().to_owned()
            }
        };
        ensure!(reply.contains(" UTC "), "show clock: {reply:?}");
        Ok(())
    }

    /// A call without port I/O: the MCP round trip alone.
    pub async fn noop(&self) -> anyhow::Result<()> {
        let r = match self.kind {
            Kind::Serialgate | Kind::SerialConsoleMcp => {
                self.proc.call("list_presets", json!({})).await?
            }
            Kind::SerialMcp => self.proc.call("list_connections", json!({})).await?,
        };
        ensure!(!r.is_null(), "no result");
        Ok(())
    }

    /// The name of [`noop`](Self::noop)'s tool.
    pub fn noop_tool(&self) -> &'static str {
        match self.kind {
            Kind::Serialgate | Kind::SerialConsoleMcp => "list_presets",
            Kind::SerialMcp => "list_connections",
        }
    }

    /// serialgate only: `status`, a small answer without port I/O.
    pub async fn status(&self) -> anyhow::Result<()> {
        let r = self.proc.call("status", json!({})).await?;
        ensure!(r["state"] == "open", "status: {r}");
        Ok(())
    }

    /// `show running-config` at `terminal length 24`: 2000 lines, 87 pages.
    pub async fn paged(&self) -> anyhow::Result<Paged> {
        match self.kind {
            Kind::Serialgate => {
                let r = self
                    .proc
                    .call(
                        "send_command",
                        json!({"command": "show running-config", "timeout": 120, "max_output": MAX_OUTPUT}),
                    )
                    .await?;
                ensure!(
                    r["matched"] == true,
                    "show running-config: {}",
                    abbreviate(&r)
                );
                Ok(Paged {
                    text: r["output"].as_str().unwrap_or_default().to_owned(),
                    clean: true,
                    pages: r["auto_replies"].as_u64().unwrap_or(0),
                    calls: 1,
                })
            }
            Kind::SerialConsoleMcp => {
                self.proc
                    .call("send_text", json!({"data": "show running-config"}))
                    .await?;
                let r = self
                    .proc
                    .call(
                        "read_until_prompt",
                        json!({"prompt": PROMPT, "timeout": 300, "auto_reply": {"--More--": " "}}),
                    )
                    .await?;
                let (header, body) = split_header(text(&r))?;
                Ok(Paged {
                    text: body.to_owned(),
                    clean: false,
                    pages: header.matches("--More--").count() as u64,
                    calls: 2,
                })
            }
            Kind::SerialMcp => {
                // No pager answers in serial-mcp: the client answers each
                // --More-- itself, as an agent would.
                let mut raw = String::new();
                let mut data = "show running-config\r";
                let mut calls = 0;
                loop {
                    let read = self.transact(data, "--More-- |SW1#", true, 60_000).await?;
                    calls += 1;
                    let chunk = read["data"].as_str().unwrap_or_default();
                    raw.push_str(chunk);
                    if !chunk.ends_with(" --More-- ") {
                        break;
                    }
                    data = " ";
                }
                Ok(Paged {
                    text: raw,
                    clean: false,
                    pages: calls - 1,
                    calls,
                })
            }
        }
    }

    /// `terminal length n`.
    pub async fn terminal_length(&self, n: usize) -> anyhow::Result<()> {
        let command = format!("terminal length {n}");
        match self.kind {
            Kind::Serialgate => {
                let r = self
                    .proc
                    .call("send_command", json!({"command": command}))
                    .await?;
                ensure!(r["matched"] == true, "{command}: {r}");
            }
            Kind::SerialConsoleMcp => {
                let r = self
                    .proc
                    .call("query_text", json!({"data": command, "prompt": PROMPT}))
                    .await?;
                ensure!(text(&r).starts_with("Matched"), "{command}: {r}");
            }
            Kind::SerialMcp => {
                self.transact(&format!("{command}\r"), PROMPT, false, 10_000)
                    .await?;
            }
        }
        Ok(())
    }

    /// `show tech-support` (after `terminal length 0`): ~4 MB in one read.
    pub async fn bulk(&self) -> anyhow::Result<Bulk> {
        match self.kind {
            Kind::Serialgate => {
                let r = self
                    .proc
                    .call(
                        "send_command",
                        json!({"command": "show tech-support", "timeout": 300, "max_output": MAX_OUTPUT}),
                    )
                    .await?;
                ensure!(
                    r["matched"] == true && r["output_truncated"] == false,
                    "show tech-support: {}",
                    abbreviate(&r)
                );
                Ok(Bulk {
                    text: r["output"].as_str().unwrap_or_default().to_owned(),
                    clean: true,
                    server_ms: r["elapsed_ms"].as_f64(),
                })
            }
            Kind::SerialConsoleMcp => {
                self.proc
                    .call("send_text", json!({"data": "show tech-support"}))
                    .await?;
                let r = self
                    .proc
                    .call(
                        "read_until_prompt",
                        json!({"prompt": PROMPT, "timeout": 300}),
                    )
                    .await?;
                let (_, body) = split_header(text(&r))?;
                Ok(Bulk {
                    text: body.to_owned(),
                    clean: false,
                    server_ms: None,
                })
            }
            Kind::SerialMcp => {
                let read = self
                    .transact("show tech-support\r", PROMPT, false, 300_000)
                    .await?;
                ensure!(
                    read["truncated"] == false,
                    "truncated: {}",
                    abbreviate(&read)
                );
                Ok(Bulk {
                    text: read["data"].as_str().unwrap_or_default().to_owned(),
                    clean: false,
                    server_ms: read["elapsed_ms"].as_f64(),
                })
            }
        }
    }

    pub async fn close(self) {
        self.proc.close().await;
    }
}

/// `serialgate serve --config config`, logging warnings only unless
/// `SERIALGATE_LOG` says otherwise.
pub fn serialgate_command(binary: &Path, config: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(binary);
    cmd.arg("serve").arg("--config").arg(config);
    if std::env::var_os("SERIALGATE_LOG").is_none() {
        cmd.env("SERIALGATE_LOG", "warn");
    }
    cmd
}

/// serial-console-mcp's reads answer `Matched prompt 'SW1#' after N bytes
/// (auto-replied to …):\n<bytes>`: the header and the bytes.
fn split_header(text: &str) -> anyhow::Result<(&str, &str)> {
    ensure!(
        text.starts_with("Matched prompt"),
        "prompt not matched: {}",
        &text[..text.len().min(300)]
    );
    text.split_once(":\n").context("no header")
}

/// The lines of a command's output as the device printed them: from a raw
/// transcript (echo, pager prompts and erases, trailing prompt) or from
/// serialgate's clean output.
pub fn output_lines(text: &str, clean: bool, echo: &str) -> anyhow::Result<Vec<String>> {
    if clean {
        return Ok(text.lines().map(str::to_owned).collect());
    }
    let pager = format!(
        "{}{}",
        std::str::from_utf8(sim::cisco::MORE_PROMPT)?,
        std::str::from_utf8(sim::cisco::MORE_ERASE)?
    );
    let text = text.replace(&pager, "");
    let body = text
        .strip_prefix(&format!("{echo}\r\n"))
        .with_context(|| format!("no echo of {echo:?}"))?
        .strip_suffix(PROMPT)
        .context("no trailing prompt")?;
    let body = body.strip_suffix("\r\n").unwrap_or(body);
    Ok(body.split("\r\n").map(str::to_owned).collect())
}

/// A result shortened for an error message.
fn abbreviate(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 600 {
        format!("{}…", &s[..s.floor_char_boundary(600)])
    } else {
        s
    }
}

/// The physical limit: a simulated switch at `terminal length 0` and a
/// plain reader of its pty (opened as a serial port, as the gateway's
/// reader opens a device) that only collects bytes and looks for the prompt
/// at the end.
pub struct PlainReader {
    port: SerialStream,
    collected: Vec<u8>,
    _sim: SimHandle,
}

impl PlainReader {
    pub async fn start() -> anyhow::Result<PlainReader> {
        let sim = sim::spawn(Profile::CiscoIos, None).await?;
        let port = tokio_serial::new(sim.path().to_string_lossy(), 9600).open_native_async()?;
        let mut reader = PlainReader {
            port,
            collected: Vec::with_capacity(8 << 20),
            _sim: sim,
        };
        for (line, prompt) in [
            ("\r", "SW1>"),
            ("enable\r", "Password: "),
            ("cisco\r", PROMPT),
            ("terminal length 0\r", PROMPT),
        ] {
            reader.exchange(line, prompt).await?;
        }
        Ok(reader)
    }

    /// Writes `line` and reads until what arrived ends with `prompt`.
    async fn exchange(&mut self, line: &str, prompt: &str) -> anyhow::Result<&[u8]> {
        self.collected.clear();
        self.port.write_all(line.as_bytes()).await?;
        let mut buf = vec![0u8; 64 * 1024];
        while !self.collected.ends_with(prompt.as_bytes()) {
            match self.port.read(&mut buf).await? {
                0 => anyhow::bail!("pty closed"),
                n => self.collected.extend_from_slice(&buf[..n]),
            }
        }
        Ok(&self.collected)
    }

    /// `show tech-support`: the raw bytes, echo to prompt.
    pub async fn bulk(&mut self) -> anyhow::Result<&[u8]> {
        self.exchange("show tech-support\r", PROMPT).await
    }
}
