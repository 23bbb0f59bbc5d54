//! Modes: the `set_mode` tool, and the driver that `send_config` and the
//! commit tools share. It judges the device's mode from its last prompt
//! with the preset's [`ModeRules`], and moves it: logging in with the
//! port's stored credentials (typed as secrets: never in results, the
//! transcript, the audit trail or logs, and masked in the output by the
//! port), `enable`, entering and leaving configuration mode. It stops with
//! an error naming the mode it found when the device is at a boot loader,
//! refuses the credentials, or shows a prompt the preset does not know.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::{self, parse, timeout_arg};
use super::describe::timeout_limits;
use super::dialogue::wait_hooks;
use super::server::GateServer;
use super::session::Connection;
use super::tool_result::ToolError;
use crate::access::Caller;
use crate::clean::{CleanOptions, clean_field, clean_output, error_lines};
use crate::config::{Credentials, DeviceMode, ModeRules};
use crate::error::{ErrorCode, GateError, shown};
use crate::last_prompt::prompt_at_log_end;
use crate::matcher::Prompt;
use crate::port::wait::{WaitEnd, WaitHooks};

/// Default seconds to wait for the prompt after each step.
pub const DEFAULT_STEP_TIMEOUT_S: f64 = 10.0;
/// Most steps one move between modes takes (a login, enable and
/// configure take five).
const MAX_MODE_STEPS: usize = 10;

/// The modes `set_mode` brings a connection to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TargetMode {
    /// User exec (operational) mode.
    Exec,
    /// Privileged exec (`enable`); exec on devices without it.
    Privileged,
    /// Configuration mode.
    Config,
}

impl From<TargetMode> for DeviceMode {
    fn from(t: TargetMode) -> DeviceMode {
        match t {
            TargetMode::Exec => DeviceMode::Exec,
            TargetMode::Privileged => DeviceMode::Privileged,
            TargetMode::Config => DeviceMode::Config,
        }
    }
}

/// Arguments of `set_mode`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetModeArgs {
    /// exec, privileged or config.
    pub mode: TargetMode,
    /// Seconds to wait for the prompt after each step.
    #[schemars(description = format!("Seconds per step ({}).", timeout_limits()))]
    #[serde(default, deserialize_with = "args::opt_f64")]
    pub timeout: Option<f64>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `set_mode`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SetModeResult {
    /// The mode the device is in now.
    pub mode: DeviceMode,
    /// Its prompt.
    pub prompt: String,
    /// What was sent, in order (secrets named, never shown).
    pub steps: Vec<String>,
}

/// The device's answer to one line.
#[derive(Debug)]
pub(super) struct Reply {
    /// Clean output (no echo, no pager prompts, no trailing prompt).
    pub output: String,
    /// The prompt that ended it.
    pub prompt: String,
    /// Lines of `output` matching the error patterns in force.
    pub errors: Vec<String>,
}

/// What was last typed, to tell a refused secret from a first prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Typed {
    Nothing,
    Username,
    Password,
    Enable,
    EnableSecret,
    Other,
}

/// Moves one connection's device between modes, one line at a time,
/// recording what it sent.
pub(super) struct ModeDriver<'a> {
    server: &'a GateServer,
    conn: &'a Connection,
    caller: Arc<Caller>,
    hooks: WaitHooks,
    /// How long each line may take to reach a prompt.
    pub timeout: Duration,
    /// What was sent, for the result.
    pub steps: Vec<String>,
}

impl<'a> ModeDriver<'a> {
    /// A driver for `conn` in the call `context`.
    pub fn new(
        server: &'a GateServer,
        conn: &'a Connection,
        context: &RequestContext<RoleServer>,
        timeout: Duration,
    ) -> Result<ModeDriver<'a>, GateError> {
        Ok(ModeDriver {
            server,
            conn,
            caller: super::server::tool_caller(server, &context.extensions)?,
            hooks: wait_hooks(context, &server.client_gone),
            timeout,
            steps: Vec::new(),
        })
    }

    /// The connection's mode rules.
    pub fn rules(&self) -> &ModeRules {
        &self.conn.profile.modes
    }

    /// Sends `line` (the line ending added) and waits for a prompt;
    /// `replies` are answered while waiting (default: the preset's pager
    /// replies). A device that shows no prompt in time is `timeout`.
    pub async fn send(
        &mut self,
        line: &str,
        replies: Option<&BTreeMap<String, String>>,
    ) -> Result<Reply, GateError> {
        self.steps.push(format!("sent {}", shown(line)));
        self.exchange(line.as_bytes(), Some(line), false, "config", replies)
            .await
    }

    /// Sends one of the driver's own steps (the stored user name, or a
    /// preset's command between modes) as `send` does; such a step starts
    /// no program of the caller's, so it leaves the login prompts trusted.
    async fn send_step(&mut self, line: &str) -> Result<Reply, GateError> {
        self.steps.push(format!("sent {}", shown(line)));
        self.exchange(line.as_bytes(), Some(line), false, "mode", None)
            .await
    }

    /// Types a stored secret; `what` names it in the steps.
    async fn send_secret(&mut self, secret: &str, what: &str) -> Result<Reply, GateError> {
        self.steps.push(format!("sent the stored {what}"));
        self.exchange(secret.as_bytes(), None, true, "credential", None)
            .await
    }

    async fn exchange(
        &mut self,
        text: &[u8],
        echo: Option<&str>,
        secret: bool,
        kind: &'static str,
        replies: Option<&BTreeMap<String, String>>,
    ) -> Result<Reply, GateError> {
        let conn = self.conn;
        GateServer::ensure_open(conn)?;
        let mut bytes = text.to_vec();
        bytes.extend_from_slice(conn.profile.line_ending.bytes());
        let port = conn.port();
        let start = port.log().head();
        self.server.session.set_cursor(&conn.name, start);
        // A secret goes to the audit trail and the transcript as such,
        // never as its bytes.
        port.write_as(&self.server.session.actor(), kind, &bytes, secret)
            .await?;
        let replies = replies.cloned();
        let waited = self
            .server
            .wait_prompt(
                conn,
                start,
                conn.profile.prompt.clone(),
                &replies,
                self.timeout,
                &self.hooks,
            )
            .await?;
        let log = port.log();
        let (body_end, prompt) = match waited.end {
            WaitEnd::Matched(span) => (
                span.start,
                clean_field(&log.copy_range(span.start, span.end)),
            ),
            _ => {
                let what = match echo {
                    Some(line) => shown(line),
                    None if secret => "a stored secret".to_owned(),
                    None => "a line ending".to_owned(),
                };
                let seen = clean_field(&log.copy_range(waited.start, waited.end_offset));
                return Err(GateError::new(
                    ErrorCode::Timeout,
                    format!(
                        "after {what} the device showed no prompt within {} s; it printed: {}. \
                         Look with read_output, or raise timeout",
                        self.timeout.as_secs_f64(),
                        shown(seen.trim())
                    ),
                ));
            }
        };
        let raw = log.copy_range(waited.start, body_end);
        let pagers: Vec<&[u8]> = conn.profile.pagers.iter().map(Vec::as_slice).collect();
        let output = clean_output(
            &raw,
            &CleanOptions {
                command: echo,
                pagers: &pagers,
            },
        );
        let errors = error_lines(&output, &conn.profile.error_patterns);
        Ok(Reply {
            output,
            prompt: prompt.trim().to_owned(),
            errors,
        })
    }

    /// The mode of `prompt`.
    pub fn judge(&self, prompt: &str) -> Option<DeviceMode> {
        self.conn.profile.mode_prompts.mode_of(prompt)
    }

    /// The device's mode now: from the prompt the log ends with, or, when
    /// it ends with none, from the prompt a line ending wakes.
    pub async fn current(&mut self) -> Result<(Option<DeviceMode>, String), GateError> {
        if let Some(prompt) = prompt_at_end(&self.conn.profile.prompt, self.conn) {
            return Ok((self.judge(&prompt), prompt));
        }
        self.steps
            .push("sent a line ending to wake the console".to_owned());
        let reply = self.exchange(b"", None, false, "text", None).await?;
        Ok((self.judge(&reply.prompt), reply.prompt))
    }

    /// Brings the device to `target`; returns the mode reached (exec for
    /// privileged on a device without enable) and its prompt.
    pub async fn reach(&mut self, target: DeviceMode) -> Result<(DeviceMode, String), GateError> {
        let (mut mode, mut prompt) = self.current().await?;
        let mut typed = Typed::Nothing;
        for _ in 0..MAX_MODE_STEPS {
            let rules = self.rules().clone();
            let found = match mode {
                Some(m) => m,
                None => return Err(self.unknown_prompt(&prompt)),
            };
            if found == target
                || (target == DeviceMode::Privileged
                    && found == DeviceMode::Exec
                    && rules.enable.is_none())
            {
                return Ok((found, prompt));
            }
            let reply = match (found, target) {
                (DeviceMode::Recovery, _) => {
                    return Err(GateError::new(
                        ErrorCode::PortUnavailable,
                        format!(
                            "the device is at its boot loader or ROMMON ({}), not at a CLI; nothing more was sent. \
                             Boot it (e.g. `boot` or `reset` with send_command) and try again",
                            shown(&prompt)
                        ),
                    ));
                }
                (DeviceMode::Login, _) => {
                    if typed == Typed::Password {
                        return Err(self.refused("login", &prompt));
                    }
                    let credentials = self.credentials("user name")?;
                    typed = Typed::Username;
                    let name = credentials.username.clone();
                    self.send_step(&name).await?
                }
                (DeviceMode::Password, _) => match typed {
                    Typed::Username => {
                        let credentials = self.credentials("password")?;
                        typed = Typed::Password;
                        self.send_secret(credentials.password(), "password").await?
                    }
                    // sudo asks for the user's own password.
                    Typed::Enable if rules.enable_asks_login_password => {
                        let credentials = self.credentials("sudo password")?;
                        typed = Typed::EnableSecret;
                        self.send_secret(credentials.password(), "password for sudo")
                            .await?
                    }
                    Typed::Enable => {
                        let credentials = self.credentials("enable secret")?;
                        let Some(secret) = credentials.enable().map(str::to_owned) else {
                            return Err(GateError::new(
                                ErrorCode::Forbidden,
                                format!(
                                    "the device asks for an enable secret and the credentials file of {} has no `enable`; add one",
                                    self.conn.name
                                ),
                            ));
                        };
                        typed = Typed::EnableSecret;
                        self.send_secret(&secret, "enable secret").await?
                    }
                    Typed::Password => return Err(self.refused("login", &prompt)),
                    Typed::EnableSecret => return Err(self.refused("enable", &prompt)),
                    // A password prompt left from before: an empty line
                    // gets a fresh prompt.
                    Typed::Nothing | Typed::Other => {
                        typed = Typed::Other;
                        self.steps.push(
                            "sent an empty line to leave a pending password prompt".to_owned(),
                        );
                        self.exchange(b"", None, false, "text", None).await?
                    }
                },
                (DeviceMode::Exec, _) => {
                    if typed == Typed::EnableSecret {
                        return Err(self.refused("enable", &prompt));
                    }
                    match (&rules.enable, &rules.configure) {
                        (Some(enable), _) => {
                            typed = Typed::Enable;
                            self.send_step(enable).await?
                        }
                        (None, Some(configure)) if target == DeviceMode::Config => {
                            typed = Typed::Other;
                            self.send_step(configure).await?
                        }
                        _ => return Err(self.no_way(found, target)),
                    }
                }
                (DeviceMode::Privileged, DeviceMode::Config) => {
                    let Some(configure) = &rules.configure else {
                        return Err(self.no_way(found, target));
                    };
                    typed = Typed::Other;
                    self.send_step(configure).await?
                }
                (DeviceMode::Privileged, _) => {
                    let Some(disable) = &rules.disable else {
                        return Err(self.no_way(found, target));
                    };
                    typed = Typed::Other;
                    self.send_step(disable).await?
                }
                (DeviceMode::Config, _) => {
                    let Some(end) = &rules.end_config else {
                        return Err(self.no_way(found, target));
                    };
                    typed = Typed::Other;
                    self.send_step(end).await?
                }
            };
            prompt = reply.prompt;
            mode = self.judge(&prompt);
            // A command that leaves the device where it was would only be
            // sent again: say what happened instead.
            if mode == Some(found) && !matches!(found, DeviceMode::Login | DeviceMode::Password) {
                let sent = self.steps.last().cloned().unwrap_or_default();
                let said = reply.output.trim();
                return Err(GateError::invalid(format!(
                    "{sent} and the device stayed in {} mode at {}{}; nothing more was sent. \
                     Look with read_output, or fix the command in the preset's modes table",
                    found.as_str(),
                    shown(&prompt),
                    if said.is_empty() {
                        String::new()
                    } else {
                        format!(", saying {}", shown(said))
                    }
                )));
            }
        }
        Err(GateError::new(
            ErrorCode::Timeout,
            format!(
                "the device did not reach {} in {MAX_MODE_STEPS} steps; it is at {}. Steps: {}",
                target.as_str(),
                shown(&prompt),
                self.steps.join("; ")
            ),
        ))
    }

    /// The port's stored credentials, if this caller may use them.
    fn credentials(&self, asked: &str) -> Result<Arc<Credentials>, GateError> {
        let Some(credentials) = self.conn.gateway_port.config.credentials.clone() else {
            return Err(GateError::new(
                ErrorCode::Forbidden,
                format!(
                    "the device asks for a {asked} and port {} has no stored credentials; \
                     log in with expect (sensitive: true), or give the port `credentials = \"FILE\"` in the config",
                    self.conn.name
                ),
            ));
        };
        if let Some(typed) = self.conn.port().commands_typed() {
            return Err(GateError::new(
                ErrorCode::Forbidden,
                format!(
                    "the device asks for a {asked}, and the stored credentials of {} are not typed: \
                     {} typed at its command line at {}, and a program started there could be showing \
                     this prompt to capture them. Log in by typing the password yourself (expect with \
                     sensitive: true), or, once the device is known to be at its own login, have the \
                     operator restart serialgate or reload the port",
                    self.conn.name,
                    shown(&typed.by),
                    typed.at
                ),
            ));
        }
        if !self.caller.use_credentials {
            return Err(GateError::new(
                ErrorCode::Forbidden,
                format!(
                    "the device asks for a {asked}; token {:?} may not use stored credentials \
                     (an admin token may, or one with use_credentials = true)",
                    self.caller.name
                ),
            ));
        }
        Ok(credentials)
    }

    fn refused(&self, what: &str, prompt: &str) -> GateError {
        GateError::new(
            ErrorCode::Forbidden,
            format!(
                "the device refused the stored credentials at {what} (it asks again: {}); nothing more was tried, \
                 so that the account is not locked out: check the credentials file of {}",
                shown(prompt),
                self.conn.name
            ),
        )
    }

    fn no_way(&self, found: DeviceMode, target: DeviceMode) -> GateError {
        GateError::invalid(format!(
            "the device is in {} mode and preset {} has no command from there to {}; set it in the preset's modes table",
            found.as_str(),
            self.conn.profile.preset,
            target.as_str()
        ))
    }

    fn unknown_prompt(&self, prompt: &str) -> GateError {
        GateError::invalid(format!(
            "the device's prompt {} is none of the modes preset {} knows; nothing more was sent. \
             Look with read_output, or describe the prompt in the preset's modes table",
            shown(prompt),
            self.conn.profile.preset
        ))
    }
}

/// The prompt the connection's log ends with, if it ends with one.
fn prompt_at_end(prompt: &Prompt, conn: &Connection) -> Option<String> {
    prompt_at_log_end(prompt, conn.port().log())
}

#[tool_router(router = mode_router, vis = "pub(super)")]
impl GateServer {
    /// Bring the device to exec, privileged or config mode: logs in with
    /// the port's stored credentials (never shown), sends enable, enters or
    /// leaves configuration mode as the preset says. Fails naming the mode
    /// found (ROMMON, refused login, unknown prompt).
    #[tool(input_schema = rmcp::handler::server::common::schema_for_input::<SetModeArgs>().unwrap_or_default())]
    pub async fn set_mode(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<SetModeResult>, ToolError> {
        let a: SetModeArgs = parse("set_mode", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let timeout = timeout_arg(a.timeout, DEFAULT_STEP_TIMEOUT_S)?;
        let mut driver = ModeDriver::new(self, &conn, &context, timeout)?;
        let (mode, prompt) = driver.reach(a.mode.into()).await?;
        Ok(Json(SetModeResult {
            mode,
            prompt,
            steps: driver.steps,
        }))
    }
}
