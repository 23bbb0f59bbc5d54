//! The fleet: gateways of many sites joined over NATS, so that a serving
//! gateway offers every site's ports as `site/port`.
//!
//! - `subjects`: the NATS subjects a site serves and announces on;
//! - `wire`: what travels on them (announcements, forwarded calls),
//!   bounded and cleaned where a member's text is read;
//! - `link`: the connection to NATS from `[fleet]` (credentials, TLS,
//!   deadlines), the handle the doors use;
//! - `directory`: a serving gateway's view of every site's ports, with
//!   when each site was last heard from;
//! - `in_flight`: how many forwarded calls one site and one token may
//!   have in flight at once, at a serving gateway and at a site;
//! - `announcer`: a site gateway announcing its ports;
//! - `alert_feed`: a site gateway storing its alerts in its own
//!   JetStream stream, which keeps them while the site is cut off;
//! - `alert_inbox`: a serving gateway reading every site's alert stream
//!   with a durable consumer and keeping what it delivered;
//! - `client_relay`: what a site's forwarded calls have for the agent's
//!   client (progress, a question for its user) and the user's answer;
//! - `forwarded_policy`: a token's command policy sent with its calls,
//!   bounded and read again at the site;
//! - `heartbeat`: a serving gateway telling the sites where its sessions
//!   keep sessions that it still lives.
//!
//! Running a forwarded call is the MCP tools' (`mcp/fleet_site.rs`), and
//! forwarding one is the MCP handler's (`mcp/fleet_forward.rs`): this
//! room knows NATS, not the tools.

pub mod alert_feed;
pub mod alert_inbox;
pub mod announcer;
pub mod client_relay;
pub mod directory;
pub mod each_message;
pub mod forwarded_policy;
pub mod heartbeat;
pub mod in_flight;
pub mod link;
pub mod subjects;
pub mod wire;
