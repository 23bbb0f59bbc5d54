//! The MCP server's handler: every request passes here. A tool call is
//! checked (its name, then the caller's access: [`super::authorize`])
//! before it runs on the session state [`super::scope`] picks, and
//! counted in the metrics after; resources are served within the
//! caller's ports.

use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, InitializeRequestParams, InitializeResult,
    ListResourceTemplatesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ResourceTemplate, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::authorize::authorize;
use super::input_required::{self, Round};
use super::resources;
use super::scope::Mode;
use super::server::GateServer;
use super::session::MAX_SUBSCRIPTIONS;
use super::tool_result::{count_call, counted, error_result};
use crate::access::standing::{Recheck, Standing};
use crate::access::{Caller, rules};
use crate::error::GateError;
use crate::gateway::Gateway;

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
            Err(e) => return Ok(error_result(e).0),
        };
        if let Err(e) = check_tool_name(&request.name) {
            return Ok(error_result(e).0);
        }
        let info = context.peer.peer_info();
        let client = info.as_ref().map(|info| info.client_info.name.as_str());
        target.session.identify(client, &caller);
        if let Some(remote) = super::fleet_forward::remote_target(&target.session, &request) {
            let tool = request.name.clone();
            let forwarded = super::fleet_forward::forward(
                target.fleet.as_deref(),
                &target.gateway,
                &caller,
                &target.session,
                request,
                remote,
                &context,
            )
            .await;
            return Ok(match forwarded {
                Ok(response) => {
                    let failed = matches!(&response, CallToolResponse::Complete(r) if r.is_error == Some(true));
                    count_call(
                        &self.tool_router,
                        &tool,
                        if failed { "error" } else { "ok" },
                    );
                    response
                }
                Err(e) => {
                    tracing::info!("refused {tool:?} to token {:?}: {e}", caller.name);
                    let (refused, code) = error_result(e);
                    count_call(&self.tool_router, &tool, code.as_str());
                    refused
                }
            });
        }
        let mut request = request;
        // Taken before the access rules change the arguments, and only
        // for a client that may be asked in the result.
        let binding = input_required::may_apply(&context)
            .then(|| input_required::call_binding(&caller.name, &request));
        let held = authorize(&caller, &target.gateway, &target.session, &mut request);
        let approved = match held {
            Ok(held) if held.is_empty() => Ok(()),
            Ok(held) => {
                let timeout = target.gateway.config().server.approval_timeout;
                let actor = target.session.actor();
                if let Some(binding) = binding.filter(|_| input_required::applies(&held, &context))
                {
                    match input_required::round(held, &actor, timeout, &request, &binding).await {
                        Ok(Round::Proceed) => Ok(()),
                        Ok(Round::Ask(asking)) => {
                            count_call(&self.tool_router, &request.name, "input_required");
                            return Ok(CallToolResponse::InputRequired(asking));
                        }
                        Err(e) => Err(e),
                    }
                } else {
                    super::approval_wait::obtain(
                        held,
                        &actor,
                        timeout,
                        &context,
                        &target.client_gone,
                    )
                    .await
                }
            }
            Err(e) => Err(e),
        };
        if let Err(e) = approved {
            tracing::info!("refused {:?} to token {:?}: {e}", request.name, caller.name);
            let (refused, code) = error_result(e);
            count_call(&self.tool_router, &request.name, code.as_str());
            return Ok(refused);
        }
        if !matches!(self.mode, Mode::Local)
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
        let cancel = context.ct.clone();
        let tcc = ToolCallContext::new(&*target, request, context);
        let call = target.tool_router.call(tcc);
        let call = super::revoked::unless_revoked(&target.gateway, &caller, &tool, &cancel, call);
        counted(&target.tool_router, &tool, call).await
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
        if let Some(port) = resources::uri_port(&request.uri) {
            resource_scope(&caller, &target.gateway, port)?;
            // An output of a port of another site is read there.
            if resources::alerts_port(&request.uri).is_none()
                && let Some(remote) = super::fleet_forward::remote_port(port)
            {
                return super::fleet_forward::read_resource(
                    target.fleet.as_deref(),
                    &target.gateway,
                    &caller,
                    &target.session,
                    &request.uri,
                    remote,
                    &context,
                )
                .await
                .map(Into::into)
                .map_err(|e| ErrorData::resource_not_found(e.to_string(), None));
            }
        }
        resources::read(
            &target.gateway,
            target.fleet.as_deref(),
            &target.session,
            &request.uri,
        )
        .map(Into::into)
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
            .take(MAX_SUBSCRIPTIONS)
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
                target.fleet.as_deref(),
                port,
                uri,
                context.sink().clone(),
                stop.clone(),
            );
        }
        // The stream stays open only while its caller's token does: a
        // reload that removes it, gives it a new secret or narrows what it
        // reaches ends the stream (the client listens again, judged anew).
        let mut standing = if caller.is_config_token() {
            Standing::token(Caller::clone(&caller), &target.gateway)
        } else {
            Standing::fixed(Caller::clone(&caller), &target.gateway)
        };
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                recheck = standing.changed() => match recheck {
                    Ok(Recheck::Same) => {}
                    Ok(Recheck::Changed) => {
                        return Err(ErrorData::invalid_request(
                            "forbidden: a reload changed what this token may reach; listen again",
                            None,
                        ));
                    }
                    Err(why) => {
                        return Err(ErrorData::invalid_request(format!("forbidden: {why}"), None));
                    }
                },
            }
        }
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
            target.fleet.as_deref(),
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
