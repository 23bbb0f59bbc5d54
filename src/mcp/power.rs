//! The `power` tool: the outlets feeding a connection's device read or
//! switched through their controllers (`crate::power`), and after `on`
//! or `cycle` the boot caught: the preset's break sequence sent once the
//! device talks, until the boot loader's prompt shows.

use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::args::{self, DEFAULT_MAX_OUTPUT, parse};
use super::dialogue::wait_hooks;
use super::encoding::cut;
use super::server::GateServer;
use super::session::Connection;
use super::tool_result::ToolError;
use crate::clean::{CleanOptions, clean_field, clean_output};
use crate::error::{ErrorCode, GateError, shown};
use crate::matcher::Prompt;
use crate::port::wait::{WaitEnd, wait_for_output};
use crate::power::{Action, OutletAnswer, status, switch_outlets};

/// Default off time of a cycle, in seconds.
pub const DEFAULT_OFF_SECONDS: u64 = 5;
/// Longest off time of a cycle, in seconds.
pub const MAX_OFF_SECONDS: u64 = 300;
/// Default time a boot has to reach the boot loader's prompt, in seconds.
pub const DEFAULT_BOOT_TIMEOUT_S: f64 = 60.0;
/// Longest time a boot may be waited for, in seconds.
pub const MAX_BOOT_TIMEOUT_S: f64 = 600.0;
/// How long after a break the prompt is awaited before the sequence is
/// sent again (a boot loader that missed it while printing).
const BREAK_AGAIN: Duration = Duration::from_secs(2);

/// Arguments of `power`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PowerArgs {
    /// What to do with the port's outlets.
    #[schemars(schema_with = "action_schema", description = "")]
    pub action: Action,
    /// A cycle's off time.
    #[schemars(description = format!("s (default {DEFAULT_OFF_SECONDS}, 1-{MAX_OFF_SECONDS})."))]
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub off_seconds: Option<u64>,
    /// After on or cycle: catch the boot.
    #[schemars(schema_with = "then_schema", description = "")]
    #[serde(default)]
    pub then: Option<Then>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// What `then` asks after power comes back.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(description = "")]
pub struct Then {
    /// The preset's break sequence to send once the device talks.
    #[serde(rename = "break")]
    #[schemars(description = "")]
    pub break_sequence: String,
    /// The prompt awaited (regex).
    #[schemars(description = "Regex (default: recovery prompt).")]
    pub wait_for: Option<String>,
    /// How long the boot may take.
    #[schemars(description = format!("s (default {DEFAULT_BOOT_TIMEOUT_S})."))]
    pub timeout: Option<f64>,
}

/// Result of `power`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PowerResult {
    /// The action done.
    pub action: Action,
    /// Each outlet's state (status) or its controller's answers.
    pub outlets: Vec<OutletAnswer>,
    /// What `then` caught: the console from power-on to the prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot: Option<Caught>,
}

/// The boot a `then` caught.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Caught {
    /// The prompt, as a terminal shows it.
    pub prompt_text: String,
    /// The console's output from power-on to the prompt, cleaned.
    pub output: String,
    /// Times the break sequence was sent.
    pub breaks: u64,
    /// Where the session's cursor now is (after the prompt).
    pub end_cursor: u64,
}

/// What a power call would cut, as a person approving it is shown it, or
/// `None` when it cuts nothing (status, a plain on). Read from the
/// arguments as the tool reads them; a spelling the tool refuses is
/// judged as a cut.
pub(super) fn cut_described(conn: &Connection, args: Option<&JsonObject>) -> Option<String> {
    let arg = |k: &str| args.and_then(|a| a.get(k)).filter(|v| !v.is_null());
    let action = arg("action")
        .and_then(Value::as_str)
        .filter(|a| matches!(*a, "status" | "on" | "off" | "cycle"))
        .unwrap_or("(an action the tool refuses)");
    let then = arg("then");
    if action == "status" || (action == "on" && then.is_none()) {
        return None;
    }
    let outlets: Vec<String> = conn
        .gateway_port
        .config
        .power
        .iter()
        .map(ToString::to_string)
        .collect();
    let mut what = format!("power {} {} ({})", action, conn.name, outlets.join(", "));
    if action == "cycle" {
        let off = match arg("off_seconds") {
            None => DEFAULT_OFF_SECONDS.to_string(),
            Some(v) => args::opt_u64(v.clone())
                .ok()
                .flatten()
                .map_or_else(|| shown(&v.to_string()), |n| n.to_string()),
        };
        what.push_str(&format!(", off {off}s"));
    }
    if let Some(then) = then {
        let name = then.get("break").and_then(Value::as_str).unwrap_or("?");
        what.push_str(&format!(
            ", then break sequence {}",
            crate::error::label(name)
        ));
    }
    Some(what)
}

impl GateServer {
    /// After power came back at `from`: waits for the device to talk,
    /// sends the break sequence (again every [`BREAK_AGAIN`] while the
    /// prompt has not shown) and waits for the prompt, until `timeout`.
    async fn catch_boot(
        &self,
        conn: &Connection,
        from: u64,
        then: &Then,
        prompt: Prompt,
        timeout: Duration,
        context: &RequestContext<RoleServer>,
    ) -> Result<Caught, GateError> {
        let hooks = wait_hooks(context, &self.client_gone);
        let deadline = tokio::time::Instant::now() + timeout;
        let port = conn.port();
        let talked = wait_for_output(
            port,
            from,
            timeout,
            Duration::from_millis(20),
            Duration::from_millis(200),
            &hooks,
        )
        .await
        .ok_or_else(super::dialogue::cancelled)?;
        if talked <= from {
            return Err(GateError::new(
                ErrorCode::Timeout,
                format!(
                    "power came back on {}'s outlets, but the device printed nothing within {:.0}s; check its power supply and cable, then status and read_output",
                    conn.name,
                    timeout.as_secs_f64()
                ),
            ));
        }
        let mut breaks = 0;
        loop {
            self.send_break_sequence(conn, &then.break_sequence).await?;
            breaks += 1;
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let waited = self
                .wait_prompt(
                    conn,
                    from,
                    prompt.clone(),
                    &Some(Default::default()),
                    left.min(BREAK_AGAIN),
                    &hooks,
                )
                .await?;
            let log = port.log();
            if let WaitEnd::Matched(span) = waited.end {
                let text = clean_output(
                    &log.copy_range(from, span.start),
                    &CleanOptions {
                        command: None,
                        pagers: &[],
                    },
                );
                return Ok(Caught {
                    prompt_text: clean_field(&log.copy_range(span.start, span.end)),
                    output: cut(text, DEFAULT_MAX_OUTPUT as usize).0,
                    breaks,
                    end_cursor: waited.end_offset,
                });
            }
            if left <= BREAK_AGAIN {
                let head = log.head();
                let last = clean_field(&log.copy_range(head.saturating_sub(2048).max(from), head));
                return Err(GateError::new(
                    ErrorCode::Timeout,
                    format!(
                        "power came back and the break sequence {} was sent {breaks} times, but the prompt did not show within {:.0}s; the console's last output: {last}",
                        then.break_sequence,
                        timeout.as_secs_f64()
                    ),
                ));
            }
        }
    }
}

/// The schema of `action`: its four words.
fn action_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"enum": ["status", "on", "off", "cycle"], "type": "string"})
}

/// The schema of `then`, inline: the three keys an agent gives.
fn then_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "properties": {
            "break": {"type": "string"},
            "wait_for": {"type": "string", "description": "Regex (default: recovery prompt)."},
            "timeout": {"type": "number", "description": format!("s (default {DEFAULT_BOOT_TIMEOUT_S}).")}
        },
        "required": ["break"]
    })
}

/// The prompt `then` waits for: its `wait_for`, else the preset's
/// recovery prompt.
fn then_prompt(conn: &Connection, then: &Then) -> Result<Prompt, GateError> {
    let source = match then.wait_for.as_deref().filter(|w| !w.is_empty()) {
        Some(w) => w.to_owned(),
        None => conn.profile.modes.recovery.clone().ok_or_else(|| {
            GateError::invalid(format!(
                "preset {} has no recovery prompt; give then.wait_for, the boot loader's prompt as a regex",
                conn.profile.preset
            ))
        })?,
    };
    Prompt::regex(&source).map_err(|e| {
        GateError::new(
            ErrorCode::BadRegex,
            format!("then.wait_for: {}", crate::error::shown(&e.to_string())),
        )
    })
}

#[tool_router(router = power_router, vis = "pub(super)")]
impl GateServer {
    /// Reads or switches the outlets feeding the connection's device.
    #[tool(
        description = "Outlets feeding the device. then.break (after on or cycle): once the device talks, \
                       send that break sequence; wait for the boot loader's prompt.",
        annotations(destructive_hint = true),
        input_schema = rmcp::handler::server::common::schema_for_input::<PowerArgs>().unwrap_or_default()
    )]
    pub async fn power(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<PowerResult>, ToolError> {
        let caller = super::server::tool_caller(self, &context.extensions)?;
        let a: PowerArgs = parse("power", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let outlets = conn.gateway_port.config.power.clone();
        if outlets.is_empty() {
            return Err(GateError::invalid(format!(
                "{} names no outlet; the operator sets power = \"pdu1:4\" on [ports.{}]",
                conn.name, conn.name
            ))
            .into());
        }
        let config = self.gateway.config();
        if a.action == Action::Status {
            let outlets = status(&config, &outlets).await?;
            return Ok(Json(PowerResult {
                action: a.action,
                outlets,
                boot: None,
            }));
        }
        let off = a.off_seconds.unwrap_or(DEFAULT_OFF_SECONDS);
        if a.off_seconds.is_some() && a.action != Action::Cycle {
            return Err(GateError::invalid("off_seconds is for action cycle").into());
        }
        if !(1..=MAX_OFF_SECONDS).contains(&off) {
            return Err(GateError::invalid(format!(
                "off_seconds must be 1-{MAX_OFF_SECONDS}, got {off}"
            ))
            .into());
        }
        let catch = match &a.then {
            None => None,
            Some(_) if a.action == Action::Off => {
                return Err(GateError::invalid(
                    "then is for on and cycle: an outlet switched off boots nothing",
                )
                .into());
            }
            Some(then) => {
                if !conn
                    .gateway_port
                    .config
                    .break_sequences
                    .contains_key(&then.break_sequence)
                {
                    let known: Vec<&str> = conn
                        .gateway_port
                        .config
                        .break_sequences
                        .keys()
                        .map(String::as_str)
                        .collect();
                    return Err(GateError::invalid(format!(
                        "then.break: {} names no break sequence {}; it has: {}",
                        conn.name,
                        shown(&then.break_sequence),
                        if known.is_empty() {
                            "none (add break_sequences to its preset)".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ))
                    .into());
                }
                let timeout = args::in_range(
                    "then.timeout",
                    then.timeout,
                    DEFAULT_BOOT_TIMEOUT_S,
                    1.0,
                    MAX_BOOT_TIMEOUT_S,
                )?;
                GateServer::ensure_open(&conn)?;
                Some((
                    then,
                    then_prompt(&conn, then)?,
                    Duration::from_secs_f64(timeout),
                ))
            }
        };
        let with_rest: Vec<_> = outlets
            .iter()
            .map(|o| {
                let rest = config
                    .power
                    .get(&o.controller)
                    .map_or(Duration::ZERO, |c| c.min_interval);
                (o.clone(), rest)
            })
            .collect();
        let actor = self.session.actor();
        let who = actor.describe();
        let admin = caller.access >= crate::config::TokenAccess::Admin;
        let switching = self.gateway.power_board().begin(&with_rest, &who, admin)?;
        let port = conn.port();
        let record = |what: &str, answers: &[OutletAnswer]| {
            let said: Vec<String> = answers
                .iter()
                .map(|a| format!("{} {}", a.outlet, a.answer.as_deref().unwrap_or("")))
                .collect();
            port.record_power(&actor, &format!("power {what}: {}", said.join("; ")));
        };
        let failed = |what: &str, e: &GateError| {
            port.record_power(&actor, &format!("power {what} failed: {}", e.message));
        };
        let mut answers = Vec::new();
        if matches!(a.action, Action::Off | Action::Cycle) {
            let done = switch_outlets(&config, &outlets, false)
                .await
                .inspect_err(|e| failed("off", e))?;
            record("off", &done);
            answers.extend(done);
        }
        if a.action == Action::Cycle {
            tokio::time::sleep(Duration::from_secs(off)).await;
        }
        let from = port.log().head();
        if matches!(a.action, Action::On | Action::Cycle) {
            let done = switch_outlets(&config, &outlets, true)
                .await
                .inspect_err(|e| failed("on", e))?;
            record("on", &done);
            answers.extend(done);
        }
        drop(switching);
        let boot = match catch {
            None => None,
            Some((then, prompt, timeout)) => Some(
                self.catch_boot(&conn, from, then, prompt, timeout, &context)
                    .await?,
            ),
        };
        Ok(Json(PowerResult {
            action: a.action,
            outlets: answers,
            boot,
        }))
    }
}
