//! Tools that describe: `list_ports`, `list_presets`, `status`.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::parse;
use super::describe::size;
use super::server::GateServer;
use super::session::Session;
use super::tool_result::ToolError;
use crate::access::{Caller, rules};
use crate::clean::clean_field;
use crate::config::DeviceMode;
use crate::devices::{self, SerialDevice};
use crate::error::{ErrorCode, GateError};
use crate::gateway::{Gateway, GatewayPort};
use crate::port::{Holder, Participant, PendingConfirm, PortEvent, PortState};
use crate::presets::Preset;
use crate::remote::rfc2217::{RemoteLineState, RemoteModemState};
use crate::settings::{LineEnding, LineSettings};

/// Default `last_bytes` of `get_transcript`.
pub const DEFAULT_TRANSCRIPT_BYTES: u64 = 4000;
/// Largest `last_bytes` of `get_transcript`.
pub const MAX_TRANSCRIPT_BYTES: u64 = 1 << 20;

/// One port as `list_ports` shows it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PortInfo {
    /// The name to connect to.
    pub name: String,
    /// Device path.
    pub device: String,
    /// opening, open, lost, reopening, down or closed.
    pub state: PortState,
    /// Why the port is down (it kept failing right after opening); null
    /// in every other state.
    pub down_reason: Option<String>,
    /// Preset of the port.
    pub preset: String,
    /// Baud rate and framing; null for a port of another site, whose
    /// gateway does not announce them (connect there says).
    pub settings: Option<LineSettings>,
    /// Line ending appended by send_text; null for another site's port.
    pub line_ending: Option<LineEnding>,
    /// Oldest retained offset; null for another site's port.
    pub oldest: Option<u64>,
    /// Newest offset; null for another site's port.
    pub head: Option<u64>,
    /// Configured (false) or opened by an ad-hoc connect (true).
    pub adhoc: bool,
    /// This session is connected to it.
    pub connected: bool,
    /// Who holds it for writing (an agent's session or a person).
    pub writer: Option<Holder>,
    /// People at a console on it.
    pub people: Vec<Participant>,
}

/// Result of `list_ports`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListPortsResult {
    /// Ports this gateway runs.
    pub ports: Vec<PortInfo>,
    /// Serial devices found on the machine (for ad-hoc connects and config).
    pub devices: Vec<SerialDevice>,
    /// Whether connect accepts device paths.
    pub allow_adhoc: bool,
}

/// Result of `list_presets`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListPresetsResult {
    /// Every preset, resolved.
    pub presets: Vec<Preset>,
}

/// The fields of a preset that `list_presets`' output schema types: what
/// an agent picks a preset by. Every result carries the others too (the
/// modes, watches, error patterns, auto replies, break sequences), but the
/// schema leaves them untyped: a client that validates each result
/// against the schema, as the Python SDK does, would otherwise walk every
/// regex of every preset on every call (3 of its 7 ms there).
const PRESET_FIELDS_TYPED: &[&str] = &[
    "name",
    "description",
    "platform",
    "line",
    "line_ending",
    "prompt",
    "pagers",
    "paging_off",
];

/// `list_presets`' output schema: [`ListPresetsResult`]'s, with a
/// preset's fields cut to [`PRESET_FIELDS_TYPED`].
fn list_presets_output_schema() -> std::sync::Arc<JsonObject> {
    use serde_json::Value;
    let mut schema =
        (*rmcp::handler::server::common::schema_for_output::<ListPresetsResult>()).clone();
    let typed = |key: &str| PRESET_FIELDS_TYPED.contains(&key);
    if let Some(Value::Object(preset)) = schema
        .get_mut("$defs")
        .and_then(|defs| defs.get_mut("Preset"))
    {
        if let Some(Value::Object(properties)) = preset.get_mut("properties") {
            properties.retain(|key, _| typed(key));
        }
        if let Some(Value::Array(required)) = preset.get_mut("required") {
            required.retain(|key| key.as_str().is_some_and(typed));
        }
    }
    std::sync::Arc::new(schema)
}

/// The arguments of `list_ports` and `list_presets`: none. An argument
/// given anyway is refused (`invalid_argument`), like an unknown one of
/// any other tool, rather than silently ignored (a filter the agent thinks
/// applied).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// Arguments of `status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusArgs {
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `status`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusResult {
    /// The connection.
    pub connection: String,
    /// Device path.
    pub device: String,
    /// opening, open, lost, reopening, down or closed.
    pub state: PortState,
    /// Why the port is down (it kept failing right after opening: a
    /// failing device, adapter or cable); null in every other state.
    pub down_reason: Option<String>,
    /// Baud rate and framing.
    pub settings: LineSettings,
    /// Preset of this connection.
    pub preset: String,
    /// Default prompt of this connection.
    pub prompt: String,
    /// Oldest retained offset.
    pub oldest: u64,
    /// Newest offset.
    pub head: u64,
    /// Retention in bytes.
    pub retention: u64,
    /// Bytes dropped by retention since the port started.
    pub lost_bytes: u64,
    /// This session's consume cursor.
    pub cursor: u64,
    /// Bytes past the cursor not yet read by this session.
    pub unread_bytes: u64,
    /// Bytes written to the device since the port started.
    pub bytes_written: u64,
    /// What the device waits at, judged from the end of its output: pager, confirm, yes/no, password, press_return; null when none.
    pub blocked_prompt: Option<String>,
    /// The CLI mode of the prompt the output ends with (login, password, exec, privileged, config, recovery); null when it ends with no prompt the preset knows (set_mode wakes it and knows).
    pub mode: Option<DeviceMode>,
    /// A change committed with an automatic rollback, not confirmed yet.
    pub pending_confirm: Option<PendingConfirm>,
    /// Lines waiting for a person's approval on this port (who asks, the line, expires_in_s).
    pub pending_approvals: Vec<crate::port::approvals::PendingApproval>,
    /// A file transfer under way (send_file, receive_file): its file,
    /// protocol, who runs it and its progress; null when none.
    pub transfer: Option<crate::port::transfer::TransferStatus>,
    /// Times the device was reopened after a loss.
    pub reconnects: u64,
    /// The last time the open device went away, and why; null if it never did.
    pub last_loss: Option<PortEvent>,
    /// Recent events, oldest first.
    pub events: Vec<PortEvent>,
    /// The session holding the port for writing; null when nobody has written yet.
    pub writer: Option<Holder>,
    /// People at a console on this port.
    pub people: Vec<Participant>,
    /// This session holds the write hold (others get `busy` when they write).
    pub you_hold_writer: bool,
    /// The transcript file, when `[server] log_dir` is set.
    pub transcript: Option<String>,
    /// Calls (of any session) waiting on this port's output now.
    pub active_waits: u64,
    /// The port's alerts: how many, how many dropped, the newest.
    pub alerts: crate::port::alerts::AlertSummary,
    /// rfc2217:// ports while connected: COM-PORT-OPTION negotiation with
    /// the console server (pending, agreed, refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub com_port: Option<String>,
    /// rfc2217:// ports: the modem lines (CTS, DSR, RI, CD) as the console
    /// server last notified them; absent until it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modem_state: Option<RemoteModemState>,
    /// rfc2217:// ports: line errors and BREAK as the console server last
    /// notified them; absent until it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_state: Option<RemoteLineState>,
}

/// Recognizes what a device waits at from its last line of output (for
/// `Press RETURN to get started`, which IOS follows with line ends, the
/// last non-blank line), and names it with the line as a terminal shows
/// it ([`clean_field`]: no colours, no erased text).
fn blocked_prompt(tail: &[u8]) -> Option<String> {
    const KINDS: [(&str, &str); 13] = [
        ("--more--", "pager"),
        ("---(more", "pager"),
        ("---- more ----", "pager"),
        ("-- more --", "pager"),
        // less at the end of its input, and more at the end of a pipe
        ("(end)", "pager"),
        ("[confirm]", "confirm"),
        ("[yes/no]", "yes_no"),
        ("[yes,no]", "yes_no"),
        ("(y/n)", "yes_no"),
        ("[y/n]", "yes_no"),
        ("password:", "password"),
        ("password for ", "password"),
        ("press return to get started", "press_return"),
    ];
    let kind_of = |line: &[u8]| {
        let shown = clean_field(line);
        let shown = shown.lines().last().unwrap_or_default().trim();
        let lower = shown.to_ascii_lowercase();
        // less between pages: a lone colon
        let kind = if shown == ":" {
            Some("pager")
        } else {
            KINDS
                .iter()
                .find(|(needle, _)| lower.contains(needle))
                .map(|(_, kind)| *kind)
        };
        kind.map(|kind| format!("{kind}: {shown}"))
    };
    let is_blank = |line: &[u8]| clean_field(line).trim().is_empty();
    let mut lines = tail.rsplit(|&b| b == b'\n');
    let last_line = lines.next().unwrap_or(tail);
    if !is_blank(last_line) {
        return kind_of(last_line);
    }
    lines
        .find(|l| !is_blank(l))
        .and_then(kind_of)
        .filter(|k| k.starts_with("press_return"))
}

fn port_info(gp: &GatewayPort, connected: bool) -> PortInfo {
    let log = gp.port.log();
    PortInfo {
        name: gp.port.name().to_owned(),
        device: gp.config.device.clone(),
        state: gp.port.state(),
        down_reason: gp.port.down_reason(),
        preset: gp.config.preset.clone(),
        settings: Some(gp.port.spec().line),
        line_ending: Some(gp.config.line_ending),
        oldest: Some(log.oldest()),
        head: Some(log.head()),
        adhoc: gp.adhoc,
        connected,
        writer: gp.port.holder(),
        people: gp.port.people(),
    }
}

/// What `list_ports` shows `caller`: only the ports it reaches; the
/// machine's serial `devices` and `allow_adhoc` only to a caller who may
/// open device paths ([`rules::may_see_devices`]).
fn ports_shown_to(
    caller: &Caller,
    gateway: &Gateway,
    session: &Session,
    devices: Vec<SerialDevice>,
) -> ListPortsResult {
    let ports = gateway
        .ports()
        .iter()
        .filter(|gp| caller.may_use_port(gp.port.name()))
        .map(|gp| port_info(gp, session.has(gp.port.name())))
        .collect();
    let adhoc_shown = rules::may_see_devices(caller);
    ListPortsResult {
        ports,
        devices: if adhoc_shown { devices } else { Vec::new() },
        allow_adhoc: adhoc_shown && gateway.config().server.allow_adhoc,
    }
}

/// The ports of other sites `caller` reaches, as `site/port`, from the
/// fleet's directory: as each site announced them (bounded and cleaned
/// there), `down` with why when the site is unreachable.
fn fleet_ports_shown_to(
    caller: &Caller,
    directory: &crate::fleet::directory::Directory,
    session: &Session,
) -> Vec<PortInfo> {
    let connected = session.remotes();
    let mut shown = Vec::new();
    for site in directory.sites() {
        let unreachable = site.unreachable();
        for p in site.ports.iter() {
            let name = format!("{}/{}", site.name, p.name);
            if !caller.may_use_port(&name) {
                continue;
            }
            shown.push(PortInfo {
                device: format!("site {}", site.name),
                state: if unreachable {
                    PortState::Down
                } else {
                    p.state
                },
                down_reason: unreachable.then(|| {
                    format!(
                        "site {} unreachable since {} (its announcements stopped); the port keeps capturing at the site",
                        site.name,
                        site.since()
                    )
                }),
                preset: p.preset.clone(),
                settings: None,
                line_ending: None,
                oldest: None,
                head: None,
                adhoc: false,
                connected: connected.contains(&name),
                writer: p.writer.clone().map(|who| crate::port::Holder {
                    session: 0,
                    who,
                    since: String::new(),
                    token: String::new(),
                    config_token: false,
                }),
                people: Vec::new(),
                name,
            });
        }
    }
    shown
}

#[tool_router(router = info_router, vis = "pub(super)")]
impl GateServer {
    /// List the ports this gateway runs (state, settings, retained range)
    /// and the serial devices found on the machine (USB ids, by-id paths).
    #[tool(
        annotations(read_only_hint = true),
        input_schema = rmcp::handler::server::common::schema_for_input::<NoArgs>().unwrap_or_default()
    )]
    pub async fn list_ports(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ListPortsResult>, ToolError> {
        let caller = super::server::tool_caller(self, &context.extensions)?;
        let NoArgs {} = parse("list_ports", raw)?;
        let devices = if rules::may_see_devices(&caller) {
            crate::task::spawn_blocking(devices::list)
                .await
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let mut shown = ports_shown_to(&caller, &self.gateway, &self.session, devices);
        if let Some(directory) = self.fleet.as_ref().and_then(|f| f.directory.as_ref()) {
            shown
                .ports
                .extend(fleet_ports_shown_to(&caller, directory, &self.session));
        }
        Ok(Json(shown))
    }

    /// List the device presets (prompt regex, pager replies, error
    /// patterns, paging-off command, line settings) that connect accepts.
    #[tool(
        annotations(read_only_hint = true),
        input_schema = rmcp::handler::server::common::schema_for_input::<NoArgs>().unwrap_or_default(),
        output_schema = list_presets_output_schema()
    )]
    pub async fn list_presets(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<ListPresetsResult>, ToolError> {
        let NoArgs {} = parse("list_presets", raw)?;
        Ok(Json(ListPresetsResult {
            presets: self.gateway.config().presets.values().cloned().collect(),
        }))
    }

    /// State of a connection: port state, retained range, this session's
    /// cursor and unread bytes, what the device is blocked at (a pager,
    /// [confirm], Password:), reconnects, the last loss (when and why),
    /// why a port is `down`, and recent events.
    #[tool(
        annotations(read_only_hint = true),
        input_schema = rmcp::handler::server::common::schema_for_input::<StatusArgs>().unwrap_or_default()
    )]
    pub async fn status(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<StatusResult>, ToolError> {
        let a: StatusArgs = parse("status", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let port = conn.port();
        let log = port.log();
        let (oldest, head) = (log.oldest(), log.head());
        let tail = log.copy_range(head.saturating_sub(256), head);
        let com = port.com_port();
        Ok(Json(StatusResult {
            connection: conn.name.clone(),
            device: conn.gateway_port.config.device.clone(),
            state: port.state(),
            down_reason: port.down_reason(),
            settings: port.spec().line,
            preset: conn.profile.preset.clone(),
            prompt: conn.profile.prompt.source(),
            oldest,
            head,
            retention: log.retention() as u64,
            lost_bytes: oldest,
            cursor: conn.cursor,
            unread_bytes: head.saturating_sub(conn.cursor.max(oldest)),
            bytes_written: port.bytes_written(),
            blocked_prompt: blocked_prompt(&tail),
            mode: crate::last_prompt::last_prompt(&conn.profile.prompt, &tail)
                .and_then(|prompt| conn.profile.mode_prompts.mode_of(&prompt)),
            pending_confirm: port.pending_confirm(),
            pending_approvals: port.approvals().list(),
            transfer: port.transfer(),
            reconnects: port.reconnects(),
            last_loss: port.last_loss(),
            events: port.events(),
            you_hold_writer: port
                .holder()
                .is_some_and(|h| h.session == self.session.actor().session),
            writer: port.holder(),
            people: port.people(),
            transcript: port.transcript().map(|t| t.path().display().to_string()),
            active_waits: port.active_waits(),
            alerts: port.alerts().summary_for(self.session.actor().session),
            com_port: com
                .as_ref()
                .map(|c| c.view().negotiation.as_str().to_owned()),
            modem_state: com.as_ref().and_then(|c| c.modem_state()),
            line_state: com.as_ref().and_then(|c| c.line_state()),
        }))
    }

    /// The tail of a port's transcript file: everything the device sent,
    /// a timestamp on each line, and what was sent to it marked (sensitive
    /// text redacted). Needs `[server] log_dir` in the config.
    #[tool(
        annotations(read_only_hint = true),
        input_schema = rmcp::handler::server::common::schema_for_input::<GetTranscriptArgs>().unwrap_or_default()
    )]
    pub async fn get_transcript(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<GetTranscriptResult>, ToolError> {
        let a: GetTranscriptArgs = parse("get_transcript", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let last_bytes = a.last_bytes.unwrap_or(DEFAULT_TRANSCRIPT_BYTES);
        if !(1..=MAX_TRANSCRIPT_BYTES).contains(&last_bytes) {
            return Err(GateError::invalid(format!(
                "last_bytes must be between 1 and {MAX_TRANSCRIPT_BYTES}, got {last_bytes}"
            ))
            .into());
        }
        let port = conn.port();
        let Some(transcript) = port.transcript() else {
            let why = if self.gateway.config().server.log_dir.is_some() {
                "its transcript file could not be opened (the daemon's log says why, at the port's start)"
            } else {
                "the daemon runs without [server] log_dir"
            };
            return Err(GateError::invalid(format!(
                "{} has no transcript: {why}; read_output reads the retained output instead",
                conn.name
            ))
            .into());
        };
        // Let the writer catch up with what has arrived, briefly.
        transcript
            .wait_written(port.log().head(), 0, std::time::Duration::from_millis(500))
            .await;
        let reading = transcript.clone();
        let text = crate::task::spawn_blocking(move || reading.tail(last_bytes))
            .await
            .map_err(|e| GateError::invalid(format!("reading the transcript failed: {e}")))?
            .map_err(|e| {
                GateError::new(
                    ErrorCode::PortUnavailable,
                    format!("cannot read {}: {e}", transcript.path().display()),
                )
            })?;
        Ok(Json(GetTranscriptResult {
            path: transcript.path().display().to_string(),
            transcript: text,
        }))
    }
}

/// Arguments of `get_transcript`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTranscriptArgs {
    /// How much of the end of the file, in bytes (default
    /// [`DEFAULT_TRANSCRIPT_BYTES`], at most [`MAX_TRANSCRIPT_BYTES`]).
    #[schemars(description = format!(
        "How much of the end of the file (default {}, at most {}).",
        size(DEFAULT_TRANSCRIPT_BYTES),
        size(MAX_TRANSCRIPT_BYTES)
    ))]
    #[serde(default, deserialize_with = "super::args::opt_u64")]
    pub last_bytes: Option<u64>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `get_transcript`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GetTranscriptResult {
    /// The transcript file.
    pub path: String,
    /// Its tail, from a line start.
    pub transcript: String,
}

#[cfg(test)]
mod tests {
    use super::{PRESET_FIELDS_TYPED, blocked_prompt, list_presets_output_schema};

    #[test]
    fn list_presets_schema_types_the_fields_a_preset_is_picked_by_and_no_more() {
        let schema = list_presets_output_schema();
        let preset = &schema["$defs"]["Preset"];
        let mut typed: Vec<&str> = preset["properties"]
            .as_object()
            .expect("a preset's properties")
            .keys()
            .map(String::as_str)
            .collect();
        typed.sort_unstable();
        let mut want = PRESET_FIELDS_TYPED.to_vec();
        want.sort_unstable();
        // A field renamed in Preset would be dropped here, and caught.
        assert_eq!(typed, want);
        let required = preset["required"].as_array().expect("required");
        assert!(required.iter().any(|k| k == "name"), "{required:?}");
        assert!(
            required
                .iter()
                .all(|k| { k.as_str().is_some_and(|k| PRESET_FIELDS_TYPED.contains(&k)) })
        );
        // What is left untyped is allowed, not refused.
        assert_ne!(preset["additionalProperties"], false);
    }

    #[test]
    fn blocked_prompts_are_recognized_on_the_last_line() {
        assert_eq!(
            blocked_prompt(b"line\r\n --More-- ").as_deref(),
            Some("pager: --More--")
        );
        assert_eq!(
            blocked_prompt(b"Proceed with reload? [confirm]").as_deref(),
            Some("confirm: Proceed with reload? [confirm]")
        );
        assert_eq!(
            blocked_prompt(b"\r\nPassword: ").as_deref(),
            Some("password: Password:")
        );
        assert_eq!(blocked_prompt(b" --More-- \r\nSW1#"), None);
        assert_eq!(
            blocked_prompt(b"Save? [yes/no]: ").as_deref(),
            Some("yes_no: Save? [yes/no]:")
        );
        assert_eq!(
            blocked_prompt(b"Reboot the system ? [yes,no] (no) ").as_deref(),
            Some("yes_no: Reboot the system ? [yes,no] (no)")
        );
        assert_eq!(
            blocked_prompt(b"-- More -- ").as_deref(),
            Some("pager: -- More --")
        );
        // IOS prints line ends after it: the console waits at a blank line.
        assert_eq!(
            blocked_prompt(
                b"\r\nSW1 con0 is now available\r\n\r\nPress RETURN to get started.\r\n"
            )
            .as_deref(),
            Some("press_return: Press RETURN to get started.")
        );
        assert_eq!(
            blocked_prompt(b"executing...\r\n\r\nPress RETURN to get started!\r\n\r\n\r\n")
                .as_deref(),
            Some("press_return: Press RETURN to get started!")
        );
        // Only that prompt reaches over blank lines: a pager or a password
        // followed by a line end was answered.
        assert_eq!(blocked_prompt(b"Password: \r\n"), None);
        assert_eq!(blocked_prompt(b" --More-- \r\n\r\n"), None);
        assert_eq!(blocked_prompt(b""), None);
        // Real pagers, as they draw their prompts in reverse video.
        assert_eq!(
            blocked_prompt(b"29\r\n30\r\n\x1b[7m(END)\x1b[27m\x1b[K").as_deref(),
            Some("pager: (END)")
        );
        assert_eq!(
            blocked_prompt(b"22\r\n23\r\n:\x1b[K").as_deref(),
            Some("pager: :")
        );
        assert_eq!(
            blocked_prompt(b"ftp\r\n\x1b[7m--More--(5%)\x1b[27m").as_deref(),
            Some("pager: --More--(5%)")
        );
        assert_eq!(
            blocked_prompt(b"\r\n\x1b[7m--More--\r\x1b[K(END)\x1b[27m").as_deref(),
            Some("pager: (END)")
        );
        assert_eq!(
            blocked_prompt(b"sudo id\r\n\x1b[?2004l\r[sudo] password for netops: ").as_deref(),
            Some("password: [sudo] password for netops:")
        );
        // A colon in a line of text is no pager.
        assert_eq!(blocked_prompt(b"\r\nnote: "), None);
    }
}
