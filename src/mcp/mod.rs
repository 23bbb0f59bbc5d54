//! The MCP server: tool definitions in groups (connect, io, info, control,
//! expect, terminal, mode, configure, alerts, transfer, power), each a thin layer
//! that parses arguments, calls the port and shapes the result. What
//! several groups share has a file of its own that imports no group:
//! `args` (arguments and their limits), `describe` (how descriptions
//! state those limits), `encoding` (output in a JSON string),
//! `dialogue` (send and wait for a prompt) and `tool_result` (results and
//! failures as MCP sends them). The server itself is `server` (one
//! session's state and who calls it), its requests pass `handler`, and
//! `router` composes the groups' tools. Ports of other sites (`site/port`)
//! are forwarded through the fleet by `fleet_forward` and run at their
//! site by `fleet_site` in an in-process session (`loopback`); what those
//! calls have for the agent's client (progress, a question for its user)
//! comes back through `fleet_site_client` and `fleet_relay`. Failures are tool results with
//! `isError` and a stable code ([`crate::error`]).

mod alerts;
pub(crate) mod approval_wait;
mod args;
mod authorize;
mod client_user;
mod configure;
mod connect;
mod control;
mod describe;
#[cfg(test)]
mod describe_tests;
mod dialogue;
mod encoding;
mod exit_status;
mod expect;
pub(crate) mod fleet_forward;
mod fleet_input_required;
mod fleet_relay;
pub mod fleet_site;
mod fleet_site_client;
mod handler;
mod info;
mod input_required;
mod io;
mod loopback;
mod mode;
mod parsed;
mod power;
mod resources;
mod revoked;
mod router;
pub mod scope;
mod sends;
mod server;
mod session;
mod terminal;
mod tool_result;
mod transfer;

pub use server::GateServer;
