//! The MCP server: tool definitions in groups (connect, io, info), each a
//! thin layer that parses arguments, calls the port and shapes the result.
//! Failures are tool results with `isError` and a stable code (DESIGN §5).

mod args;
mod connect;
mod info;
mod io;
mod resources;
mod session;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, ContentBlock, IntoContents, ListResourceTemplatesResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ResourceTemplate,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool_handler};

use crate::error::GateError;
use crate::gateway::Gateway;

pub use session::Session;

/// Instructions shown to the agent at initialization.
const INSTRUCTIONS: &str = "serialgate gives you the serial consoles of network devices. \
Start with list_ports, then connect to a port by name. Use send_command to run a CLI command \
and get clean output (echo, pager prompts and the trailing prompt removed; --More-- is answered \
for you). Use send_text + read_until_prompt for interactive steps (logins, confirmations). \
Every byte the device sent stays readable with read_output by offset. Errors start with a code \
(unknown_connection, invalid_argument, bad_regex, port_unavailable, port_lost, busy, forbidden, \
cursor_out_of_range, cursor_splits_utf8, timeout) followed by what to do.";

/// A tool failure: becomes a result with `isError: true` whose text starts
/// with the error code.
#[derive(Debug)]
pub struct ToolError(pub GateError);

impl From<GateError> for ToolError {
    fn from(e: GateError) -> Self {
        ToolError(e)
    }
}

impl IntoContents for ToolError {
    fn into_contents(self) -> Vec<ContentBlock> {
        vec![ContentBlock::text(self.0.to_string())]
    }
}

/// One MCP session's server: the shared gateway plus this session's
/// connections and cursors. stdio has one; HTTP makes one per session.
#[derive(Clone)]
pub struct GateServer {
    gateway: Gateway,
    session: Session,
    tool_router: ToolRouter<GateServer>,
}

impl GateServer {
    /// A server for a new session on `gateway`.
    pub fn new(gateway: Gateway) -> GateServer {
        GateServer {
            gateway,
            session: Session::default(),
            tool_router: Self::connect_router() + Self::io_router() + Self::info_router(),
        }
    }

    /// Detaches every connection of this session (at its end).
    pub async fn detach_all(&self) {
        for conn in self.session.all() {
            self.session.remove(&conn.name);
            self.gateway.detach(&conn.name).await;
        }
    }
}

/// Builds a structured result that also links resources (a cut
/// `send_command` output links its whole cleaned text).
fn structured_with_links<T: serde::Serialize>(
    value: &T,
    links: Vec<rmcp::model::Resource>,
) -> Result<CallToolResult, ToolError> {
    let json = serde_json::to_value(value).map_err(|e| {
        ToolError(GateError::invalid(format!(
            "result could not be encoded: {e}"
        )))
    })?;
    let mut result = CallToolResult::structured(json);
    result
        .content
        .extend(links.into_iter().map(ContentBlock::resource_link));
    Ok(result)
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for GateServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(rmcp::model::Implementation::new(
            "serialgate",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let template = ResourceTemplate::new(resources::OUTPUT_TEMPLATE, "command output")
            .with_description("Cleaned output of a send_command between two log offsets (linked from results cut at max_output)")
            .with_mime_type("text/plain");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        resources::read(&self.gateway, &self.session, &request.uri).map(Into::into)
    }
}
