//! The MCP server: tool definitions in groups (connect, io, info, control,
//! expect, terminal), each a thin layer that parses arguments, calls the
//! port and shapes the result. What several groups share has a file of its
//! own that imports no group: `args` (arguments and their limits),
//! `describe` (how descriptions state those limits), `encoding` (output
//! in a JSON string) and `dialogue` (send and wait for a prompt). Failures are tool results with `isError` and a stable code
//! ([`crate::error`]).

mod alerts;
mod args;
mod authorize;
mod configure;
mod connect;
mod control;
mod describe;
mod dialogue;
mod encoding;
mod expect;
mod info;
mod io;
mod mode;
mod resources;
pub mod scope;
mod session;
mod terminal;
mod transfer;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    InitializeRequestParams, InitializeResult, IntoContents, ListResourceTemplatesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ResourceTemplate, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::access::{Caller, rules};
use crate::error::GateError;
use crate::gateway::Gateway;

pub use session::Session;

/// Instructions shown to the agent at initialization; [`instructions`]
/// appends the error codes.
const INSTRUCTIONS: &str = "serialgate gives you the serial consoles of network devices. \
Start with list_ports, then connect to a port by name. Use send_command to run a CLI command \
and get clean output (echo, pager prompts and the trailing prompt removed; --More-- is answered \
for you). Use send_text + read_until_prompt for interactive steps (logins, confirmations). \
Every byte the device sent stays readable with read_output by offset. Errors start with a code";

/// [`INSTRUCTIONS`] with the error codes [`crate::error::ErrorCode`] owns.
fn instructions() -> String {
    let codes: Vec<&str> = crate::error::ErrorCode::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    format!(
        "{INSTRUCTIONS} ({}) followed by what to do.",
        codes.join(", ")
    )
}

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
    /// stdio or HTTP: who calls, and which session state a call uses.
    mode: scope::Mode,
    /// Detaches this session's connections when the last clone drops
    /// (HTTP sessions; stdio detaches explicitly).
    _release: Option<std::sync::Arc<scope::Release>>,
    /// Cancelled when the client is gone (stdio: stdin closed), so that
    /// its waiting calls end at once; never cancelled over HTTP.
    client_gone: tokio_util::sync::CancellationToken,
}

impl GateServer {
    /// A server for a new session on `gateway`.
    pub fn new(gateway: Gateway) -> GateServer {
        GateServer {
            gateway,
            session: Session::default(),
            tool_router: Self::shared_tool_router(),
            mode: scope::Mode::Local,
            _release: None,
            client_gone: tokio_util::sync::CancellationToken::new(),
        }
    }

    /// Every tool, built once per process: their JSON schemas are made
    /// from the argument types at build time, which costs ~1 ms and a few
    /// hundred KB, and each HTTP session is a new server. A clone shares
    /// the schemas and handlers.
    fn shared_tool_router() -> ToolRouter<GateServer> {
        static ROUTER: std::sync::OnceLock<ToolRouter<GateServer>> = std::sync::OnceLock::new();
        ROUTER
            .get_or_init(|| {
                let mut router = Self::connect_router()
                    + Self::io_router()
                    + Self::info_router()
                    + Self::control_router()
                    + Self::expect_router()
                    + Self::terminal_router()
                    + Self::mode_router()
                    + Self::configure_router()
                    + Self::alerts_router()
                    + Self::transfer_router();
                for route in router.map.values_mut() {
                    let mut schema = (*route.attr.input_schema).clone();
                    describe::lean_schema(&mut schema);
                    route.attr.input_schema = std::sync::Arc::new(schema);
                    if let Some(output) = &route.attr.output_schema {
                        let mut output = (**output).clone();
                        describe::lean_output_schema(&mut output);
                        route.attr.output_schema = Some(std::sync::Arc::new(output));
                    }
                }
                router
            })
            .clone()
    }

    /// The same server, whose waiting calls end when `gone` is cancelled
    /// (stdio: the client closed its end).
    pub fn with_client_gone(mut self, gone: tokio_util::sync::CancellationToken) -> GateServer {
        self.client_gone = gone;
        self
    }

    /// Detaches every connection of this session (at its end).
    pub async fn detach_all(&self) {
        for conn in self.session.all() {
            self.session.remove(&conn.name);
            self.gateway.detach(&conn.name).await;
        }
    }
}

/// Largest `output` a result also copies into its text block. Above it the
/// text block says where the output is and carries the other fields, so a
/// 20 MB result is not held and sent twice (MCP asks for the text copy
/// with a SHOULD, for clients that predate `structuredContent`; the
/// clients that validate results, the Python SDK's and the Inspector,
/// read `structuredContent`, and no model reads a megabyte inline).
pub(crate) const TEXT_COPY_MAX: usize = 1 << 20;

/// A structured result whose `output` string is moved into the JSON value,
/// not copied: `fields` is serialised with an empty `output`, which is
/// then replaced. The text copy is the JSON of the whole while the output
/// is at most [`TEXT_COPY_MAX`] bytes.
fn structured_output<T: serde::Serialize>(
    fields: &T,
    output: String,
    links: Vec<rmcp::model::Resource>,
) -> Result<CallToolResult, ToolError> {
    let mut json = serde_json::to_value(fields).map_err(|e| {
        ToolError(GateError::invalid(format!(
            "result could not be encoded: {e}"
        )))
    })?;
    let big = output.len() > TEXT_COPY_MAX;
    let text = if big {
        let mut fields = json.clone();
        if let Some(map) = fields.as_object_mut() {
            map.remove("output");
        }
        format!(
            "output: {} bytes, in structuredContent.output only (no text copy above {} bytes); the other fields: {fields}",
            output.len(),
            TEXT_COPY_MAX
        )
    } else {
        String::new()
    };
    if let Some(slot) = json.get_mut("output") {
        *slot = serde_json::Value::String(output);
    }
    let text = if big { text } else { json.to_string() };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json);
    result
        .content
        .extend(links.into_iter().map(ContentBlock::resource_link));
    Ok(result)
}

/// A tool's error as a tool result (`isError`, text starting with the code).
fn error_result(e: GateError) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into()
}

/// Longest tool name a call may give (the longest real one is 17).
const MAX_TOOL_NAME: usize = 64;

/// Refuses a tool name that no tool could have: empty, over
/// [`MAX_TOOL_NAME`] bytes, or with anything but letters, digits, `_` and
/// `-` (a newline in a logged tool name would forge a log line).
fn check_tool_name(name: &str) -> Result<(), GateError> {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || name.len() > MAX_TOOL_NAME || !name.chars().all(plain) {
        return Err(GateError::invalid(format!(
            "no tool is named {}; tool names are letters, digits and '_' (tools/list names them)",
            crate::error::shown(name)
        )));
    }
    Ok(())
}

/// Counts a tool call in the metrics, by tool (names no tool has count as
/// `unknown`, so a caller cannot grow the label set) and outcome.
fn count_call(router: &ToolRouter<GateServer>, tool: &str, response: &CallToolResponse) {
    let tool = if router.has_route(tool) {
        tool
    } else {
        "unknown"
    };
    let code = match response {
        CallToolResponse::Complete(result) if result.is_error == Some(true) => result
            .content
            .first()
            .and_then(|c| c.as_text())
            .and_then(|t| t.text.split_once(':'))
            .and_then(|(code, _)| {
                crate::error::ErrorCode::ALL
                    .iter()
                    .find(|c| c.as_str() == code)
                    .map(|c| c.as_str())
            })
            .unwrap_or("error"),
        _ => "ok",
    };
    crate::metrics::tool_call(tool, code);
}

/// Refuses a resource of a port the caller does not reach (or an ad-hoc
/// port, unless admin), without saying more about the port.
fn resource_scope(caller: &Caller, gateway: &Gateway, port: &str) -> Result<(), ErrorData> {
    if !rules::may_read_port(caller, gateway, port) {
        return Err(ErrorData::invalid_request(
            format!(
                "forbidden: token {:?} may not read the resources of port {}",
                caller.name,
                crate::error::shown(port)
            ),
            None,
        ));
    }
    Ok(())
}

/// The port a resource URI names (`serialgate://ports/{port}/...`).
fn resource_port(uri: &str) -> Option<&str> {
    uri.strip_prefix("serialgate://ports/")?.split('/').next()
}

// `#[tool_handler]` is not used: `call_tool` checks the caller's access
// (the access rules, src/access/) and picks the session state (mcp/scope.rs) first.
impl ServerHandler for GateServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .build(),
        )
        .with_server_info(rmcp::model::Implementation::new(
            "serialgate",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(instructions())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // An MCP session belongs to the token that opens it.
        self.claim(&context.extensions)
            .map_err(|e| ErrorData::invalid_request(e.to_string(), None))?;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (target, caller) = match self.resolve(&context.extensions) {
            Ok(found) => found,
            Err(e) => return Ok(error_result(e)),
        };
        if let Err(e) = check_tool_name(&request.name) {
            return Ok(error_result(e));
        }
        let info = context.peer.peer_info();
        let client = info.as_ref().map(|info| info.client_info.name.as_str());
        target.session.identify(client, &caller.name);
        let mut request = request;
        if let Err(e) =
            authorize::authorize(&caller, &target.gateway, &target.session, &mut request)
        {
            tracing::info!("refused {:?} to token {:?}: {e}", request.name, caller.name);
            let refused = error_result(e);
            count_call(&self.tool_router, &request.name, &refused);
            return Ok(refused);
        }
        if !matches!(self.mode, scope::Mode::Local)
            && rules::classify(&request.name).0 > crate::config::TokenAccess::Read
        {
            tracing::info!(
                "token {:?} calls {} on {}",
                caller.name,
                request.name,
                request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("connection"))
                    .and_then(|c| c.as_str())
                    .map_or_else(|| "the current connection".to_owned(), crate::error::shown)
            );
        }
        let tool = request.name.clone();
        let tcc = ToolCallContext::new(&*target, request, context);
        let response = target.tool_router.call(tcc).await?;
        count_call(&target.tool_router, &tool, &response);
        Ok(response)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (_, caller) = self
            .resolve(&context.extensions)
            .map_err(|e| ErrorData::invalid_request(e.to_string(), None))?;
        let supports_cache_hints = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let mut result = ListToolsResult::with_all_items(
            self.tool_router
                .list_all()
                .into_iter()
                .filter(|t| rules::tool_visible(&t.name, caller.access))
                .collect(),
        );
        if supports_cache_hints {
            // The list depends on the caller's token: private to it.
            result.ttl_ms = Some(0);
            result.cache_scope = Some(CacheScope::Private);
        }
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tool_router.get(name).cloned()
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let template = ResourceTemplate::new(resources::OUTPUT_TEMPLATE, "command output")
            .with_description("Cleaned output of a send_command between two log offsets (linked from results cut at max_output)")
            .with_mime_type("text/plain");
        let alerts = ResourceTemplate::new(resources::ALERTS_TEMPLATE, "port alerts")
            .with_description("A port's newest alerts (JSON); subscribe to hear of new ones")
            .with_mime_type("application/json");
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            template, alerts,
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let (target, caller) = self
            .resolve(&context.extensions)
            .map_err(|e| ErrorData::invalid_request(e.to_string(), None))?;
        if let Some(port) = resource_port(&request.uri) {
            resource_scope(&caller, &target.gateway, port)?;
        }
        resources::read(&target.gateway, &target.session, &request.uri).map(Into::into)
    }

    /// `subscriptions/listen` (protocol `2026-07-28`): alerts resources
    /// only; whether the caller reaches the port is judged in `listen`,
    /// which then watches only those it does.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let uris: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| resources::alerts_port(uri).is_some())
            .take(session::MAX_SUBSCRIPTIONS)
            .cloned()
            .collect();
        let mut accepted = SubscriptionFilter::default();
        accepted.resource_subscriptions = (!uris.is_empty()).then_some(uris);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let (target, caller) = self
            .resolve(&context.request_context().extensions)
            .map_err(|e| ErrorData::invalid_request(e.to_string(), None))?;
        let stop = tokio_util::sync::CancellationToken::new();
        let _stop_on_end = stop.clone().drop_guard();
        for uri in context.accepted().resource_subscriptions.iter().flatten() {
            // A port the caller does not reach is never watched for it.
            let Some(port) = resources::alerts_port(uri) else {
                continue;
            };
            if resource_scope(&caller, &target.gateway, port).is_err() {
                continue;
            }
            resources::listen_alerts(
                &target.gateway,
                port,
                uri,
                context.sink().clone(),
                stop.clone(),
            );
        }
        context.cancelled().await;
        Ok(())
    }

    #[allow(deprecated)] // legacy-only in rmcp: the sessions this server keeps use it
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (target, caller) = self
            .resolve(&context.extensions)
            .map_err(|e| ErrorData::invalid_request(e.to_string(), None))?;
        let Some(port) = resources::alerts_port(&request.uri) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "invalid_argument: {} cannot be subscribed to; {} can",
                    crate::error::shown(&request.uri),
                    resources::ALERTS_TEMPLATE
                ),
                None,
            ));
        };
        resource_scope(&caller, &target.gateway, port)?;
        resources::subscribe_alerts(
            &target.gateway,
            &target.session,
            port,
            &request.uri,
            context.peer.clone(),
        )
    }

    #[allow(deprecated)] // legacy-only in rmcp, as `subscribe`
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (target, _) = self
            .resolve(&context.extensions)
            .map_err(|e| ErrorData::invalid_request(e.to_string(), None))?;
        target.session.unsubscribe(&request.uri);
        Ok(())
    }
}
