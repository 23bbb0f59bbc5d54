//! Tools that attach a session to ports: `connect`, `disconnect`.

use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::{self, LineOverride, parse};
use super::describe::size;
use super::server::GateServer;
use super::session::{Connection, Profile};
use super::tool_result::ToolError;
use crate::access::{Caller, rules};
use crate::config::PortConfig;
use crate::error::{ErrorCode, GateError};
use crate::gateway::{AdhocRequest, GatewayPort};
use crate::matcher::Prompt;
use crate::port::PortState;
use crate::settings::{FlowControl, LineEnding, LineSettings, Parity};

/// Longest `port` (a name or a device path; PATH_MAX).
pub const MAX_PORT_BYTES: usize = 4096;
/// Longest `name` of an ad-hoc connection.
pub const MAX_NAME_BYTES: usize = 64;
/// Longest prompt (literal or regex) of any tool.
pub const MAX_PROMPT_BYTES: usize = 4096;

/// Arguments of `connect`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectArgs {
    /// A configured port's name (see list_ports); or, when the server
    /// allows ad-hoc connections, a device path such as /dev/ttyUSB0 or a
    /// remote console's URL: telnet://host:port (a terminal server's
    /// reverse-telnet port), rfc2217://host:port (telnet with serial line
    /// control) or tcp://host:port (raw bytes), within adhoc_remotes.
    pub port: String,
    /// Name for an ad-hoc connection (default: the device's file name), at
    /// most [`MAX_NAME_BYTES`].
    #[schemars(description = format!(
        "Name for an ad-hoc connection (default: the device's file name; at most {}).",
        size(MAX_NAME_BYTES as u64)
    ))]
    pub name: Option<String>,
    /// Device preset (see list_presets): prompt, pager replies, error patterns.
    pub preset: Option<String>,
    /// Baud rate of an ad-hoc port, e.g. 9600 or 115200.
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub baud: Option<u64>,
    /// Data bits of an ad-hoc port: 5-8.
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub data_bits: Option<u64>,
    /// Parity of an ad-hoc port.
    #[serde(default, deserialize_with = "args::opt_enum")]
    pub parity: Option<Parity>,
    /// Stop bits of an ad-hoc port: 1 or 2.
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub stop_bits: Option<u64>,
    /// Flow control of an ad-hoc port.
    #[serde(default, deserialize_with = "args::opt_enum")]
    pub flow_control: Option<FlowControl>,
    /// What send_text appends by default: cr (default for consoles), lf, crlf, none.
    #[serde(default, deserialize_with = "args::opt_enum")]
    pub line_ending: Option<LineEnding>,
    /// Default prompt of this connection (default: the preset's regex), at
    /// most [`MAX_PROMPT_BYTES`].
    #[schemars(description = format!(
        "Default prompt of this connection (default: the preset's regex; at most {}).",
        size(MAX_PROMPT_BYTES as u64)
    ))]
    pub prompt: Option<String>,
    /// Treat `prompt` as a regex (default false: literal).
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub prompt_regex: Option<bool>,
    /// Take the write hold from the session that has it (it becomes
    /// read-only; the take-over is an event and audited). Needs write
    /// access to take it from a session of your own token, admin from
    /// another token's; a read token never takes it. Default false: the
    /// first session to write holds the port.
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub take_over: Option<bool>,
}

/// Result of `connect`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConnectResult {
    /// The name to pass as `connection` to other tools.
    pub connection: String,
    /// The device path.
    pub device: String,
    /// opening, open, lost, reopening, down or closed.
    pub state: PortState,
    /// Baud rate and framing.
    pub settings: LineSettings,
    /// What send_text appends by default.
    pub line_ending: LineEnding,
    /// The preset in use.
    pub preset: String,
    /// The default prompt.
    pub prompt: String,
    /// Whether the prompt is a regex.
    pub prompt_regex: bool,
    /// The command that turns paging off on this device, if known.
    pub paging_off: Option<String>,
    /// Newest offset: this session's consume cursor starts here.
    pub head: u64,
    /// Oldest retained offset: earlier output is readable with read_output from here.
    pub oldest: u64,
    /// The session holding the port for writing, if any (after a take-over: this one).
    pub writer: Option<crate::port::Holder>,
}

/// Arguments of `disconnect`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DisconnectArgs {
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `disconnect`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DisconnectResult {
    /// The connection that was detached.
    pub connection: String,
    /// Always true: the session no longer uses the port.
    pub detached: bool,
}

impl ConnectArgs {
    /// Line settings asked for, on top of `base`; `None` when none was given.
    fn line_settings(&self, base: LineSettings) -> Result<Option<LineSettings>, GateError> {
        let asked = LineOverride {
            baud: self.baud,
            data_bits: self.data_bits,
            parity: self.parity,
            stop_bits: self.stop_bits,
            flow_control: self.flow_control,
        };
        if asked.is_empty() {
            return Ok(None);
        }
        asked.apply_to(base).map(Some)
    }
}

/// Compiles a connection's profile from its resolved config and the
/// `connect` overrides.
fn build_profile(config: &PortConfig, a: &ConnectArgs) -> Result<Profile, GateError> {
    let (prompt, prompt_is_regex) = match (&a.prompt, a.prompt_regex.unwrap_or(false)) {
        (Some(p), _) if p.is_empty() => {
            return Err(GateError::invalid(
                "prompt is empty; give the text that ends the output, e.g. \"SW1#\"",
            ));
        }
        (Some(p), _) if p.len() > MAX_PROMPT_BYTES => {
            return Err(GateError::invalid(format!(
                "prompt is {} bytes; at most {MAX_PROMPT_BYTES} (a prompt is one short line)",
                p.len()
            )));
        }
        (Some(p), true) => (compile_regex("prompt", p)?, true),
        (Some(p), false) => (Prompt::literal(p), false),
        (None, _) => (compile_regex("the preset's prompt", &config.prompt)?, true),
    };
    let error_patterns = config
        .error_patterns
        .iter()
        .map(|p| {
            regex::Regex::new(p).map_err(|e| {
                GateError::new(ErrorCode::BadRegex, format!("error pattern {p:?}: {e}"))
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(Profile {
        preset: config.preset.clone(),
        prompt,
        prompt_is_regex,
        line_ending: a.line_ending.unwrap_or(config.line_ending),
        auto_reply: config
            .auto_reply
            .iter()
            .map(|r| (r.trigger.clone(), r.reply.clone()))
            .collect(),
        pagers: config
            .pagers
            .iter()
            .map(|p| p.clone().into_bytes())
            .collect(),
        error_patterns,
        paging_off: config.paging_off.clone(),
        modes: config.modes.clone(),
        mode_prompts: crate::config::ModePrompts::new(&config.modes),
    })
}

/// Compiles a prompt regex, mapping errors to `bad_regex`.
pub(super) fn compile_regex(what: &str, source: &str) -> Result<Prompt, GateError> {
    Prompt::regex(source).map_err(|e| {
        GateError::new(ErrorCode::BadRegex, format!("{what} {source:?} does not compile: {e}; fix the pattern or pass regex: false for a literal"))
    })
}

impl GateServer {
    /// Takes `gp`'s write hold for this session if `caller` may take it
    /// from its holder ([`rules::may_take_hold`], asked under the hold's
    /// lock); the holder becomes read-only.
    fn take_hold(&self, caller: &Caller, gp: &GatewayPort) -> Result<(), GateError> {
        let actor = self.session.actor();
        gp.port.take_writer(&actor, |holder| {
            rules::may_take_hold(caller, actor.session, gp.port.name(), holder)
        })
    }
}

#[tool_router(router = connect_router, vis = "pub(super)")]
impl GateServer {
    /// Attach this session to a serial port. `port` is a configured
    /// port's name from list_ports, or, if the server allows ad-hoc
    /// connections, a device path (e.g. /dev/ttyUSB0) or a telnet://,
    /// rfc2217:// or tcp:// URL of a console server. The cursor starts at
    /// the head (earlier output: read_output). Line settings apply to ad-hoc ports;
    /// `prompt`/`prompt_regex`/`line_ending`/`preset` set this connection's
    /// defaults.
    #[tool(input_schema = rmcp::handler::server::common::schema_for_input::<ConnectArgs>().unwrap_or_default())]
    pub async fn connect(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ConnectResult>, ToolError> {
        let caller = super::server::tool_caller(self, &context.extensions)?;
        let a: ConnectArgs = parse("connect", raw)?;
        if a.port.trim().is_empty() {
            return Err(
                GateError::invalid("port is empty; give a port name from list_ports").into(),
            );
        }
        if a.port.len() > MAX_PORT_BYTES {
            return Err(GateError::invalid(format!(
                "port is {} bytes; a port name or device path is at most {MAX_PORT_BYTES}",
                a.port.len()
            ))
            .into());
        }
        if let Some(name) = a.name.as_ref().filter(|n| n.len() > MAX_NAME_BYTES) {
            return Err(GateError::invalid(format!(
                "name is {} bytes; a connection name is at most {MAX_NAME_BYTES}, e.g. \"bench-r1\"",
                name.len()
            ))
            .into());
        }
        if let Some(preset) = &a.preset
            && !self.gateway.config().presets.contains_key(preset)
        {
            let config = self.gateway.config();
            let names: Vec<&str> = config.presets.keys().map(String::as_str).collect();
            return Err(GateError::invalid(format!(
                "unknown preset {}; presets: {}",
                crate::error::shown(preset),
                names.join(", ")
            ))
            .into());
        }
        let requested_line = a.line_settings(LineSettings::default())?;
        let gp = self
            .gateway
            .attach(
                &a.port,
                &AdhocRequest {
                    name: a.name.clone(),
                    preset: a.preset.clone(),
                    line: requested_line,
                },
                &|port| caller.may_use_port(port),
            )
            .await?;
        let name = gp.port.name().to_owned();
        if !gp.adhoc {
            // A configured port still on its first open attempt (a client
            // quick after start-up over HTTP, which serves before the
            // ports are ready): that attempt's outcome is the answer.
            gp.port
                .wait_for_state(crate::gateway::ADHOC_OPEN_TIMEOUT, |s| {
                    s != PortState::Opening
                })
                .await;
        }
        let built = (|| {
            if !gp.adhoc {
                if let Some(line) = a.line_settings(gp.config.line)?
                    && line != gp.config.line
                {
                    return Err(GateError::invalid(format!(
                        "{name} is a configured port at {}; its line settings come from the config file (asked for {line})",
                        gp.config.line
                    )));
                }
                if gp.port.state() != PortState::Open && !gp.port.ever_opened() {
                    return Err(gp.port.not_open_error());
                }
            }
            let config = match &a.preset {
                Some(p) if *p != gp.config.preset => self
                    .gateway
                    .config()
                    .resolve_port(&name, &gp.config.device, Some(p))
                    .map_err(GateError::invalid)?,
                _ => PortConfig::clone(&gp.config),
            };
            build_profile(&config, &a)
        })();
        let taken = built.and_then(|profile| {
            if a.take_over.unwrap_or(false) {
                self.take_hold(&caller, &gp)?;
            }
            Ok(profile)
        });
        let profile = match taken {
            Ok(p) => p,
            Err(e) => {
                self.gateway.detach(&name).await;
                return Err(e.into());
            }
        };
        let log = gp.port.log();
        let (head, oldest) = (log.head(), log.oldest());
        let result = ConnectResult {
            connection: name.clone(),
            device: gp.config.device.clone(),
            state: gp.port.state(),
            settings: gp.port.spec().line,
            line_ending: profile.line_ending,
            preset: profile.preset.clone(),
            prompt: profile.prompt.source(),
            prompt_regex: profile.prompt_is_regex,
            paging_off: profile.paging_off.clone(),
            head,
            oldest,
            writer: None,
        };
        let port = gp.port.clone();
        let replaced = self.session.add(Connection {
            name: name.clone(),
            gateway_port: gp,
            cursor: head,
            profile: Arc::new(profile),
        });
        if replaced.is_some() {
            // Connecting again to a port this session had: one attachment.
            self.gateway.detach(&name).await;
        }
        if a.take_over.unwrap_or(false) {
            port.record_session_event(&self.session.actor(), "take-over");
        }
        let mut result = result;
        result.writer = port.holder();
        Ok(Json(result))
    }

    /// Detach this session from a port. An ad-hoc device is closed when no
    /// session uses it any more; configured ports keep capturing.
    #[tool(input_schema = rmcp::handler::server::common::schema_for_input::<DisconnectArgs>().unwrap_or_default())]
    pub async fn disconnect(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<DisconnectResult>, ToolError> {
        let a: DisconnectArgs = parse("disconnect", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        // Two disconnects of one connection at once: only the one that
        // removed it lets go of the port, else an ad-hoc port other
        // sessions use would be closed under them.
        if self.session.remove(&conn.name).is_some() {
            self.gateway.detach(&conn.name).await;
        }
        Ok(Json(DisconnectResult {
            connection: conn.name,
            detached: true,
        }))
    }
}
