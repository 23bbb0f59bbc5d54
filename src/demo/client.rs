//! The demo's MCP client: JSON-RPC over the stdio of a `serialgate serve`
//! child, one message per line, as MCP's stdio transport defines it. Just
//! enough for a scripted session (initialize, then tool calls in turn), so
//! that the daemon's binary carries no MCP client library.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The MCP protocol version the demo asks for.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// How long one request may wait for its response (the longest demo call
/// waits 30 s for a device).
const RESPONSE_DEADLINE: Duration = Duration::from_secs(60);

/// A tool call's outcome as an agent sees it.
pub(crate) enum Outcome {
    /// The structured result of a successful call.
    Ok(Value),
    /// The text of an `isError` result (it starts with the error code).
    Err(String),
}

/// An initialized MCP session with a `serialgate serve` child process.
pub(crate) struct DemoClient {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl DemoClient {
    /// Spawns `binary serve --config config` (its logs at `warn` unless
    /// `SERIALGATE_LOG` says otherwise, on the demo's stderr) and
    /// initializes MCP with it.
    pub(crate) async fn spawn(binary: &Path, config: &Path) -> anyhow::Result<DemoClient> {
        let mut cmd = Command::new(binary);
        cmd.arg("serve")
            .arg("--config")
            .arg(config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        if std::env::var_os("SERIALGATE_LOG").is_none() {
            cmd.env("SERIALGATE_LOG", "warn");
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let stdin = child.stdin.take().context("the child's stdin")?;
        let stdout = child.stdout.take().context("the child's stdout")?;
        let mut client = DemoClient {
            child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
            next_id: 1,
        };
        let init = client
            .request(
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "serialgate-demo", "version": env!("CARGO_PKG_VERSION")},
                }),
            )
            .await?;
        if init["serverInfo"].is_null() {
            bail!("the gateway's initialize result has no serverInfo: {init}");
        }
        client
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(client)
    }

    /// Calls a tool with JSON arguments.
    pub(crate) async fn call(&mut self, tool: &str, args: Value) -> anyhow::Result<Outcome> {
        let result = self
            .request("tools/call", json!({"name": tool, "arguments": args}))
            .await?;
        if result["isError"] == true {
            let text: Vec<&str> = result["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["text"].as_str())
                .collect();
            return Ok(Outcome::Err(text.join("\n")));
        }
        match result.get("structuredContent") {
            Some(v) if !v.is_null() => Ok(Outcome::Ok(v.clone())),
            _ => bail!("{tool} gave no structured result: {result}"),
        }
    }

    /// Ends the session: closes the child's stdin, which ends its serving,
    /// and waits for it to exit.
    pub(crate) async fn close(self) -> anyhow::Result<()> {
        let DemoClient {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let status = tokio::time::timeout(RESPONSE_DEADLINE, child.wait())
            .await
            .context("the gateway did not exit after its stdin closed")??;
        if !status.success() {
            bail!("the gateway exited with {status}");
        }
        Ok(())
    }

    /// Sends a request and waits for the response with its id; messages
    /// the server sends meanwhile (notifications, its own requests) are
    /// skipped.
    async fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let response = tokio::time::timeout(RESPONSE_DEADLINE, async {
            loop {
                let Some(line) = self.stdout.next_line().await? else {
                    bail!("the gateway closed its stdout during {method}");
                };
                let message: Value = serde_json::from_str(&line)
                    .with_context(|| format!("the gateway sent a line that is not JSON: {line}"))?;
                if message["id"] == id && message.get("method").is_none() {
                    return Ok(message);
                }
            }
        })
        .await
        .with_context(|| format!("no response to {method} within {RESPONSE_DEADLINE:?}"))??;
        if let Some(error) = response.get("error") {
            bail!("{method} failed: {error}");
        }
        Ok(response["result"].clone())
    }

    async fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await?;
        self.stdin.flush().await?;
        Ok(())
    }
}
