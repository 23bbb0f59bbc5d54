//! An MCP client of the gateway (rmcp's), over the real stdio transport or
//! streamable HTTP: the end-to-end tests and the benchmarks drive the
//! `serialgate` binary through it exactly as an agent's client would.

use std::collections::HashMap;
use std::path::Path;

use http::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ProtocolVersion, ReadResourceRequestParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

/// A connected MCP client session with a `serialgate serve` child process,
/// or with a gateway serving streamable HTTP.
pub struct GateClient {
    service: RunningService<RoleClient, ()>,
    /// The daemon, when this client spawned it itself.
    _child: Option<tokio::process::Child>,
}

/// A tool call's outcome as an agent sees it.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The structured result of a successful call.
    Ok(Value),
    /// The text of an `isError` result (it starts with the error code).
    Err(String),
}

impl Outcome {
    /// The structured result; panics with the error text otherwise (tests).
    pub fn ok(self) -> Value {
        match self {
            Outcome::Ok(v) => v,
            Outcome::Err(e) => panic!("tool call failed: {e}"),
        }
    }

    /// The error text; panics if the call succeeded (tests).
    pub fn err(self) -> String {
        match self {
            Outcome::Ok(v) => panic!("tool call succeeded unexpectedly: {v}"),
            Outcome::Err(e) => e,
        }
    }
}

impl GateClient {
    /// Spawns `binary serve --config config` and initializes MCP with it.
    /// The child's stderr (its logs, warnings only unless `SERIALGATE_LOG`
    /// says otherwise) is inherited.
    pub async fn spawn(binary: &Path, config: Option<&Path>) -> anyhow::Result<GateClient> {
        let mut cmd = tokio::process::Command::new(binary);
        cmd.arg("serve");
        // The child's logs share our stderr: only warnings unless asked.
        if std::env::var_os("SERIALGATE_LOG").is_none() {
            cmd.env("SERIALGATE_LOG", "warn");
        }
        if let Some(c) = config {
            cmd.arg("--config").arg(c);
        }
        let transport = TokioChildProcess::new(cmd)?;
        let service = ().serve(transport).await?;
        Ok(GateClient {
            service,
            _child: None,
        })
    }

    /// Spawns `binary serve --config config` like [`GateClient::spawn`],
    /// reading messages of up to `max_line` bytes: rmcp's stdio client
    /// drops a longer one (its default is 16 MiB), which a 16 MiB output
    /// with its JSON escapes exceeds. The child is killed when the client
    /// is dropped.
    pub async fn spawn_with_line_limit(
        binary: &Path,
        config: &Path,
        max_line: usize,
    ) -> anyhow::Result<GateClient> {
        let mut cmd = tokio::process::Command::new(binary);
        cmd.arg("serve").arg("--config").arg(config);
        if std::env::var_os("SERIALGATE_LOG").is_none() {
            cmd.env("SERIALGATE_LOG", "warn");
        }
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdin"))?;
        let transport = rmcp::transport::async_rw::AsyncRwTransport::new_client(stdout, stdin)
            .with_max_line_length(max_line);
        let service = ().serve(transport).await?;
        Ok(GateClient {
            service,
            _child: Some(child),
        })
    }

    /// Connects to a gateway's streamable HTTP endpoint (e.g.
    /// `http://127.0.0.1:7301/mcp`) and opens an MCP session
    /// (`initialize`, `Mcp-Session-Id`), sending `Authorization: Bearer
    /// <token>` when a token is given.
    pub async fn connect_http(url: &str, token: Option<&str>) -> anyhow::Result<GateClient> {
        let transport = StreamableHttpClientTransport::from_config(http_config(url, token, None)?);
        let service = ().serve(transport).await?;
        Ok(GateClient {
            service,
            _child: None,
        })
    }

    /// Connects like [`GateClient::connect_http`], accepting messages of
    /// up to `max_message` bytes: rmcp's HTTP client refuses a larger SSE
    /// event or JSON body (16 MiB by default).
    pub async fn connect_http_with_limit(
        url: &str,
        token: Option<&str>,
        max_message: usize,
    ) -> anyhow::Result<GateClient> {
        let config = http_config(url, token, None)?
            .max_sse_event_size(max_message)
            .max_json_response_size(max_message);
        let transport = StreamableHttpClientTransport::from_config(config);
        let service = ().serve(transport).await?;
        Ok(GateClient {
            service,
            _child: None,
        })
    }

    /// Connects like [`GateClient::connect_http`], but as a sessionless
    /// client of protocol version `2026-07-28` (`server/discover`, every
    /// request self-contained). `client_key` is sent as the
    /// `Serialgate-Session` header, which keeps this client's state apart
    /// from other clients using the same token.
    pub async fn connect_http_sessionless(
        url: &str,
        token: Option<&str>,
        client_key: Option<&str>,
    ) -> anyhow::Result<GateClient> {
        let transport =
            StreamableHttpClientTransport::from_config(http_config(url, token, client_key)?);
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let service = ().serve_with_lifecycle(transport, lifecycle).await?;
        Ok(GateClient {
            service,
            _child: None,
        })
    }

    /// Calls a tool with JSON arguments (an object, or null for none).
    pub async fn call(&self, tool: &str, args: Value) -> anyhow::Result<Outcome> {
        Ok(to_outcome(self.call_raw(tool, args).await?))
    }

    /// Calls a tool and returns the whole MCP result (content blocks too).
    pub async fn call_raw(&self, tool: &str, args: Value) -> anyhow::Result<CallToolResult> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        Ok(self.service.call_tool(params).await?)
    }

    /// Reads a resource's text.
    pub async fn read_resource(&self, uri: &str) -> anyhow::Result<String> {
        let result = self
            .service
            .read_resource(ReadResourceRequestParams::new(uri))
            .await?;
        let mut text = String::new();
        for c in result.contents {
            if let rmcp::model::ResourceContents::TextResourceContents { text: t, .. } = c {
                text.push_str(&t);
            }
        }
        Ok(text)
    }

    /// The tools the server lists, with their schemas.
    pub async fn tools(&self) -> anyhow::Result<Vec<rmcp::model::Tool>> {
        Ok(self.service.list_all_tools().await?)
    }

    /// The session's peer, for requests the helpers above do not make (a
    /// cancellable call, for one).
    pub fn peer(&self) -> &rmcp::service::Peer<RoleClient> {
        self.service.peer()
    }

    /// Ends the session; the server exits when stdin closes.
    pub async fn close(self) -> anyhow::Result<()> {
        self.service.cancel().await?;
        Ok(())
    }
}

/// The HTTP client transport's config: the URL, the bearer token and the
/// `Serialgate-Session` header.
fn http_config(
    url: &str,
    token: Option<&str>,
    client_key: Option<&str>,
) -> anyhow::Result<StreamableHttpClientTransportConfig> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    if let Some(key) = client_key {
        let mut headers = HashMap::new();
        headers.insert(
            HeaderName::from_static("serialgate-session"),
            HeaderValue::from_str(key)?,
        );
        config = config.custom_headers(headers);
    }
    Ok(config)
}

/// Maps a result to an [`Outcome`]: `isError` results by their text.
pub fn to_outcome(result: CallToolResult) -> Outcome {
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    if result.is_error == Some(true) {
        return Outcome::Err(text);
    }
    match result.structured_content {
        Some(v) => Outcome::Ok(v),
        None => Outcome::Ok(serde_json::from_str(&text).unwrap_or(Value::String(text))),
    }
}
