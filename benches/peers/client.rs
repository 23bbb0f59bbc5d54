//! One MCP client for every server under test: rmcp's client over
//! `TokioChildProcess`, as `serialgate_testkit::client::GateClient` is, but for any
//! command, with the child's pid (for `/proc`) and its stderr sent to a file
//! (serial-console-mcp logs every request at INFO).
//!
//! It initializes with protocol version 2025-11-25, the newest with an
//! `initialize` handshake, which all three servers speak. (rmcp's default,
//! 2026-07-28, is refused by serial-mcp 0.9.3's `initialize`, which expects
//! clients of that version to use `server/discover`.)

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use serialgate_testkit::client::{Outcome, to_outcome};

/// No call of the bench may take longer than this (the longest, a peer's
/// 4 MB read, takes seconds).
const CALL_DEADLINE: Duration = Duration::from_secs(600);

/// A connected MCP session with a server child process.
pub struct McpProc {
    name: &'static str,
    pid: u32,
    service: RunningService<RoleClient, ClientConfig>,
}

impl McpProc {
    /// Spawns `cmd` (stdin/stdout piped for MCP, stderr appended to
    /// `stderr_log`) and initializes MCP with it.
    pub async fn spawn(
        name: &'static str,
        mut cmd: tokio::process::Command,
        stderr_log: &Path,
    ) -> anyhow::Result<McpProc> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(stderr_log)
            .with_context(|| format!("opening {}", stderr_log.display()))?;
        cmd.kill_on_drop(true);
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::from(log))
            .spawn()
            .with_context(|| format!("spawning {name}"))?;
        let pid = transport.id().context("child without a pid")?;
        let config =
            ClientConfig::default().with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
        let service = tokio::time::timeout(Duration::from_secs(60), config.serve(transport))
            .await
            .with_context(|| format!("{name}: MCP initialize timed out"))?
            .with_context(|| format!("{name}: MCP initialize"))?;
        Ok(McpProc { name, pid, service })
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Calls a tool; an `isError` result, or a call past the deadline, is an
    /// error.
    pub async fn call(&self, tool: &str, args: Value) -> anyhow::Result<Value> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let result = tokio::time::timeout(CALL_DEADLINE, self.service.call_tool(params))
            .await
            .with_context(|| format!("{}: {tool} timed out", self.name))?
            .with_context(|| format!("{}: {tool}", self.name))?;
        match to_outcome(result) {
            Outcome::Ok(v) => Ok(v),
            Outcome::Err(e) => anyhow::bail!("{}: {tool}: {e}", self.name),
        }
    }

    /// Ends the session: stdin closes and the server exits (or is killed).
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(10), self.service.cancel()).await;
    }
}

/// The text of a result from a server whose tools return one string:
/// FastMCP wraps it as `{"result": "..."}`, others give it bare.
pub fn text(v: &Value) -> &str {
    match v {
        Value::String(s) => s,
        Value::Object(m) => m.get("result").and_then(Value::as_str).unwrap_or(""),
        _ => "",
    }
}
