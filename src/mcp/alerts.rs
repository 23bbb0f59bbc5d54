//! The `alerts` tool: a port's alerts since a cursor, and this session's
//! own watches on it (added, replaced, removed).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::parse;
use super::server::GateServer;
use super::tool_result::ToolError;
use crate::config::watches::{Severity, Watch};
use crate::error::{GateError, shown};
use crate::port::alerts::Alert;

/// Most alerts one call returns (call again from `next`).
pub const MAX_LISTED: usize = 50;

/// Arguments of `alerts`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AlertsArgs {
    /// Alerts with an id above this (default 0); pass the last `next`.
    #[schemars(description = "Alerts with id above this (default 0); pass the last next.")]
    #[serde(default, deserialize_with = "super::args::opt_u64")]
    pub since: Option<u64>,
    /// Add (or replace) this session's watch of that name, with `regex`.
    #[schemars(description = "Add or replace your watch of this name (with regex).")]
    pub watch: Option<String>,
    /// The new watch's regex, matched line by line.
    #[schemars(description = "Its regex, matched per line.")]
    pub regex: Option<String>,
    /// The new watch's severity (default warning).
    #[schemars(description = "info, warning (default), error or critical.")]
    pub severity: Option<String>,
    /// Remove this session's watch of that name.
    #[schemars(description = "Remove your watch of this name.")]
    pub unwatch: Option<String>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `alerts`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AlertsResult {
    /// The connection.
    pub connection: String,
    /// Alerts after `since`, oldest first (at most 50): the config's
    /// watches' and this session's own.
    pub alerts: Vec<Alert>,
    /// The cursor for the next call's `since`.
    pub next: u64,
    /// Alerts after `since` were dropped before being read (the port keeps
    /// the newest 256 of the config's watches and 256 of sessions').
    pub missed: bool,
    /// The watches in force for this session: the config's and its own.
    pub watches: Vec<Watch>,
}

#[tool_router(router = alerts_router, vis = "pub(super)")]
impl GateServer {
    /// A port's alerts: watch regexes (crash, reboot, boot loader, memory,
    /// hardware, or yours) that matched its output, even unattended, with
    /// text and log range (read_output from before start for context).
    /// Subscribe to serialgate://ports/{port}/alerts to be told.
    #[tool(
        annotations(read_only_hint = false, destructive_hint = false),
        input_schema = rmcp::handler::server::common::schema_for_input::<AlertsArgs>().unwrap_or_default()
    )]
    pub async fn alerts(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<AlertsResult>, ToolError> {
        let a: AlertsArgs = parse("alerts", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let alerts = conn.port().alerts();
        let session = self.session.actor().session;
        if let Some(name) = a.watch {
            let severity = match a.severity.as_deref() {
                None => Severity::Warning,
                Some(s) => Severity::ALL
                    .into_iter()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| {
                        GateError::invalid(format!(
                            "severity {} is none of info, warning, error, critical",
                            shown(s)
                        ))
                    })?,
            };
            let Some(regex) = a.regex else {
                return Err(GateError::invalid(format!(
                    "watch {} needs a regex: the text to watch for, e.g. \"%BGP-5-ADJCHANGE\"",
                    shown(&name)
                ))
                .into());
            };
            let watch = Watch {
                name,
                regex,
                severity,
            };
            let (name, regex) = (shown(&watch.name), shown(&watch.regex));
            // Its caller's access sets its share of the port's watches.
            let access = super::server::tool_caller(self, &context.extensions)?.access;
            alerts
                .add_session_watch(session, access, watch)
                .map_err(|e| GateError::invalid(format!("watch {name} ({regex}): {e}")))?;
        }
        if let Some(name) = a.unwatch
            && !alerts.remove_session_watch(session, &name)
        {
            return Err(GateError::invalid(format!(
                "this session has no watch named {} on {}; watches lists them",
                shown(&name),
                conn.name
            ))
            .into());
        }
        let since = a.since.unwrap_or(0);
        let (listed, missed) = alerts.since(session, since, MAX_LISTED);
        // A cursor from before a restart (ids begin at 1 again) is taken
        // back to the newest id.
        let next = listed
            .last()
            .map_or_else(|| since.min(alerts.summary().total), |a| a.id);
        Ok(Json(AlertsResult {
            connection: conn.name.clone(),
            alerts: listed,
            next,
            missed,
            watches: alerts.watches_of(session),
        }))
    }
}
