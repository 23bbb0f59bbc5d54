//! Every tool's route, built once per process from the tool groups'
//! routers, and the servers made with them. The composition lives here,
//! not in `server.rs`, so that the server's file names no tool group
//! while the groups define their tools on it.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;

use super::describe;
use super::scope::{Mode, Stateless};
use super::server::GateServer;
use crate::gateway::Gateway;

impl GateServer {
    /// A server for a new session on `gateway`.
    pub fn new(gateway: Gateway) -> GateServer {
        GateServer::with_router(gateway, shared_tool_router())
    }

    /// A server for HTTP: rmcp's service factory clones it with
    /// [`GateServer::fresh`] for every MCP session and every sessionless
    /// request; `stateless` keeps the state of sessionless clients.
    pub fn for_http(gateway: Gateway, stateless: Stateless) -> GateServer {
        let mut server = GateServer::new(gateway);
        server.mode = Mode::Http {
            owner: Arc::new(std::sync::OnceLock::new()),
            stateless,
        };
        server
    }

    /// A server for calls forwarded through the fleet to this site, all
    /// made by `caller`; its session's connections are detached when the
    /// last clone drops.
    pub(super) fn for_fleet(gateway: Gateway, caller: crate::access::Caller) -> GateServer {
        GateServer::new(gateway).fresh_with(Mode::Fleet(Arc::new(caller)))
    }
}

/// Every tool, built once per process: their JSON schemas are made
/// from the argument types at build time, which costs ~1 ms and a few
/// hundred KB, and each HTTP session is a new server. A clone shares
/// the schemas and handlers.
pub(super) fn shared_tool_router() -> ToolRouter<GateServer> {
    static ROUTER: std::sync::OnceLock<ToolRouter<GateServer>> = std::sync::OnceLock::new();
    ROUTER
        .get_or_init(|| {
            let mut router = GateServer::connect_router()
                + GateServer::io_router()
                + GateServer::info_router()
                + GateServer::control_router()
                + GateServer::expect_router()
                + GateServer::terminal_router()
                + GateServer::mode_router()
                + GateServer::configure_router()
                + GateServer::alerts_router()
                + GateServer::transfer_router()
                + GateServer::power_router();
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
