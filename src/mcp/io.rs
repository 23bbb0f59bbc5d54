//! Tools that talk to the device: sending, waiting for prompts, commands
//! with clean output, and cursor reads. The send-and-wait dialogue they
//! share with `expect` and the terminal tools is in `dialogue.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::{
    self, CLEAN_PIECE, DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT_S, MAX_SEND_BYTES, MAX_TIMEOUT_S,
    max_output_arg, parse, timeout_arg, triggers_arg,
};
use super::connect::{MAX_PROMPT_BYTES, compile_regex};
use super::describe::{auto_reply_limits, max_output_limits, seconds, size, timeout_limits};
use super::dialogue::{cancelled, wait_hooks};
use super::encoding::{self, Encoding, cut};
use super::resources::output_uri;
use super::server::GateServer;
use super::session::{Connection, RememberedOutput};
use super::tool_result::{ToolError, structured_output};
use crate::clean::{CleanOptions, Cleaner, clean_field, error_lines};
use crate::error::{ErrorCode, GateError};
use crate::log::CursorError;
use crate::matcher::Prompt;
use crate::port::PortState;
use crate::port::wait::{WaitEnd, wait_for_output};
use crate::settings::LineEnding;

/// How long `read_available` waits for more once output started.
const SETTLE: Duration = Duration::from_millis(50);
/// Default `timeout` of `read_available`, in seconds: it returns what
/// has arrived, so it waits briefly.
pub const READ_AVAILABLE_TIMEOUT_S: f64 = 1.0;
/// Default `max_bytes` of `read_output`.
pub const DEFAULT_PAGE_BYTES: u64 = 16384;
/// Smallest `max_bytes` of `read_output`: room for any UTF-8 character.
pub const MIN_PAGE_BYTES: u64 = 4;
/// Largest `max_bytes` of `read_output`.
pub const MAX_PAGE_BYTES: u64 = 65536;
/// Longest `wait_ms` of `read_output`: the longest wait of any call.
pub const MAX_WAIT_MS: u64 = MAX_TIMEOUT_S as u64 * 1000;

/// Arguments of `send_text`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendTextArgs {
    /// The text to send, at most [`MAX_SEND_BYTES`].
    #[schemars(description = format!("The text to send (at most {}).", size(MAX_SEND_BYTES as u64)))]
    pub text: String,
    /// Appended line ending (default: the connection's, cr for consoles).
    #[serde(default, deserialize_with = "args::opt_enum")]
    pub line_ending: Option<LineEnding>,
    /// Move the consume cursor to the head first, skipping unread output (default false).
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub clear_buffer_first: Option<bool>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Arguments of `send_hex`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendHexArgs {
    /// Bytes as hex, e.g. "0d0a", "1b 5b 41" or "0x03" (Ctrl-C).
    pub hex: String,
    /// Move the consume cursor to the head first (default false).
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub clear_buffer_first: Option<bool>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `send_text` and `send_hex`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SendResult {
    /// Bytes written to the device.
    pub bytes_sent: u64,
    /// Log offset at the moment of sending: the reply starts here.
    pub cursor: u64,
}

/// Arguments of `read_until_prompt`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadUntilPromptArgs {
    /// Text that ends the output, at most [`MAX_PROMPT_BYTES`] (default:
    /// the connection's prompt).
    #[schemars(description = format!(
        "Text that ends the output, e.g. \"SW1#\", \"login: \", \"Password:\"\n\
         (at most {}). Default: the connection's prompt (the preset's regex).",
        size(MAX_PROMPT_BYTES as u64)
    ))]
    pub prompt: Option<String>,
    /// Treat `prompt` as a regex (multi-line: `^`/`$` at line boundaries, `$` also at the end of what has arrived). Default false.
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub regex: Option<bool>,
    /// Seconds to wait for the prompt (default [`DEFAULT_TIMEOUT_S`], at
    /// most [`MAX_TIMEOUT_S`]).
    #[schemars(description = format!("Seconds to wait for the prompt ({}).", timeout_limits()))]
    #[serde(default, deserialize_with = "args::opt_f64")]
    pub timeout: Option<f64>,
    /// {trigger: reply} answered once per occurrence while waiting
    /// (default: the preset's pager replies), within the limits in
    /// [`auto_reply_limits`].
    #[schemars(description = format!(
        "{{trigger: reply}} answered once per occurrence while waiting, e.g.\n\
         {{\"--More--\": \" \", \"[confirm]\": \"\\r\"}}. Default: the preset's pager\n\
         replies; {{}} for none. At most {}.",
        auto_reply_limits()
    ))]
    #[serde(default, deserialize_with = "args::opt_map")]
    pub auto_reply: Option<BTreeMap<String, String>>,
    /// Most bytes of output returned inline (see [`max_output_limits`]).
    #[schemars(description = format!(
        "Most bytes of output returned inline ({}).",
        max_output_limits()
    ))]
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub max_output: Option<u64>,
    /// How `output` is encoded: text (default; bytes that are not UTF-8
    /// become U+FFFD), hex or base64 (every raw byte kept; max_output then
    /// counts raw bytes).
    #[serde(default, deserialize_with = "args::opt_enum")]
    pub encoding: Option<Encoding>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `read_until_prompt`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadUntilPromptResult {
    /// The prompt was found.
    pub matched: bool,
    /// The timeout passed first; `output` is what arrived meanwhile.
    pub timed_out: bool,
    /// Raw output from the cursor up to and including the prompt, in `encoding`.
    pub output: String,
    /// The text that matched the prompt (empty when not matched).
    pub prompt_text: String,
    /// Bytes of output (`end_cursor - start_cursor`).
    pub bytes: u64,
    /// Log offset where the output starts.
    pub start_cursor: u64,
    /// Log offset after the output: the consume cursor moved here.
    pub end_cursor: u64,
    /// Auto-replies sent while waiting.
    pub auto_replies: u64,
    /// Milliseconds waited.
    pub elapsed_ms: u64,
    /// Retention dropped output before it was read.
    pub truncated: bool,
    /// `output` was cut at max_output; the whole is readable with read_output.
    pub output_truncated: bool,
    /// Size of the whole output in bytes.
    pub total_bytes: u64,
}

/// Arguments of `send_command`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendCommandArgs {
    /// The command line, at most [`MAX_SEND_BYTES`] with the line ending.
    #[schemars(description = format!(
        "The command line, e.g. \"show version\" (the line ending is added; at most {}).",
        size(MAX_SEND_BYTES as u64)
    ))]
    pub command: String,
    /// Prompt ending the output, at most [`MAX_PROMPT_BYTES`].
    #[schemars(description = format!(
        "Prompt ending the output (default: the connection's prompt; at most {}).",
        size(MAX_PROMPT_BYTES as u64)
    ))]
    pub prompt: Option<String>,
    /// Treat `prompt` as a regex. Default false.
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub regex: Option<bool>,
    /// Seconds to wait for the prompt (default [`DEFAULT_TIMEOUT_S`], at
    /// most [`MAX_TIMEOUT_S`]).
    #[schemars(description = format!("Seconds to wait for the prompt ({}).", timeout_limits()))]
    #[serde(default, deserialize_with = "args::opt_f64")]
    pub timeout: Option<f64>,
    /// {trigger: reply} while waiting (default: the preset's), within the
    /// limits in [`auto_reply_limits`].
    #[schemars(description = format!(
        "{{trigger: reply}} while waiting (default: the preset's, e.g. --More-- → space;\n\
         at most {}).",
        auto_reply_limits()
    ))]
    #[serde(default, deserialize_with = "args::opt_map")]
    pub auto_reply: Option<BTreeMap<String, String>>,
    /// Most bytes of clean output returned inline (see [`max_output_limits`]).
    #[schemars(description = format!(
        "Most bytes of clean output returned inline ({}).",
        max_output_limits()
    ))]
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub max_output: Option<u64>,
    /// Also parse the output with the platform's TextFSM template.
    #[schemars(description = "Also return `parsed`: records by the platform's TextFSM template.")]
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub parse: Option<bool>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `send_command`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SendCommandResult {
    /// What an engineer would read: no echo, no pager prompts, no trailing prompt, `\n` line ends.
    pub output: String,
    /// The prompt that ended the output.
    pub prompt_text: String,
    /// The prompt was found.
    pub matched: bool,
    /// The timeout passed first; `output` is what arrived meanwhile.
    pub timed_out: bool,
    /// Auto-replies sent (pages answered).
    pub auto_replies: u64,
    /// Output lines matching the preset's error patterns (e.g. "% Invalid input detected at '^' marker.").
    pub error_lines: Vec<String>,
    /// Milliseconds from sending to the prompt.
    pub elapsed_ms: u64,
    /// Log offset where the reply starts (the echo).
    pub start_cursor: u64,
    /// Log offset after the prompt: the consume cursor moved here.
    pub end_cursor: u64,
    /// Retention dropped output before it was read.
    pub truncated: bool,
    /// `output` was cut at max_output; the whole is at `resource`.
    pub output_truncated: bool,
    /// Size of the whole clean output in bytes.
    pub total_bytes: u64,
    /// URI of the whole clean output (an MCP resource), when cut.
    pub resource: Option<String>,
    /// The command's exit status, when the shell reports it to the
    /// terminal (`OSC 133;D`, shell integration); null otherwise.
    pub exit_status: Option<i32>,
    /// With `parse`: the records of the whole output, keyed by the
    /// template's value names in lower case; null when there are none,
    /// with `parse_note`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parsed: Option<serde_json::Value>,
    /// With `parse`: the template's file name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// With `parse`: why `parsed` is null.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parse_note: Option<String>,
}

/// Arguments of `read_available`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadAvailableArgs {
    /// Seconds to wait for the first byte (default
    /// [`READ_AVAILABLE_TIMEOUT_S`]), then until the device is quiet.
    #[schemars(description = format!(
        "Seconds to wait for the first byte (default {}, at most {}); then\n\
         waits briefly until the device is quiet.",
        seconds(READ_AVAILABLE_TIMEOUT_S),
        seconds(MAX_TIMEOUT_S)
    ))]
    #[serde(default, deserialize_with = "args::opt_f64")]
    pub timeout: Option<f64>,
    /// Most bytes returned inline (default [`DEFAULT_MAX_OUTPUT`]).
    #[schemars(description = format!("Most bytes returned inline (default {DEFAULT_MAX_OUTPUT})."))]
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub max_output: Option<u64>,
    /// How `output` is encoded: text (default), hex or base64.
    #[serde(default, deserialize_with = "args::opt_enum")]
    pub encoding: Option<Encoding>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `read_available`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadAvailableResult {
    /// Raw output since the consume cursor, in `encoding`.
    pub output: String,
    /// The same raw bytes as hex, whatever `encoding` (cut like `output`).
    pub hex: String,
    /// Bytes of output.
    pub bytes: u64,
    /// Where the output starts.
    pub start_cursor: u64,
    /// After the output: the consume cursor moved here.
    pub end_cursor: u64,
    /// Retention dropped output before it was read.
    pub truncated: bool,
    /// `output` was cut at max_output.
    pub output_truncated: bool,
    /// Size of the whole output in bytes.
    pub total_bytes: u64,
}

/// Arguments of `read_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadOutputArgs {
    /// Byte offset to read from (default: the oldest retained byte). Pass
    /// the previous next_cursor to continue.
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub cursor: Option<u64>,
    /// Most bytes per read, [`MIN_PAGE_BYTES`] to [`MAX_PAGE_BYTES`]
    /// (default [`DEFAULT_PAGE_BYTES`]).
    #[schemars(description = format!(
        "Most bytes per read, {MIN_PAGE_BYTES}-{MAX_PAGE_BYTES} (default {DEFAULT_PAGE_BYTES}). May return fewer to\n\
         keep UTF-8 characters whole."
    ))]
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub max_bytes: Option<u64>,
    /// Milliseconds to wait for output when none is past the cursor (default
    /// 0: no wait; at most [`MAX_WAIT_MS`]).
    #[schemars(description = format!(
        "Wait up to this many milliseconds for output when none is past the cursor (default 0, at most {MAX_WAIT_MS})."
    ))]
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub wait_ms: Option<u64>,
    /// How `output` is encoded: text (default; pages keep UTF-8 characters
    /// whole), hex or base64 (exactly max_bytes raw bytes when available,
    /// any cursor up to head is valid).
    #[serde(default, deserialize_with = "args::opt_enum")]
    pub encoding: Option<Encoding>,
    /// Parse the page as this command's output, as send_command's `parse`.
    #[schemars(description = "Also return `parsed`: the page as this command's output.")]
    pub parse: Option<String>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `read_output`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadOutputResult {
    /// Output from `cursor` in `encoding`. As text it never splits a UTF-8 character and bytes that are not UTF-8 appear as U+FFFD.
    pub output: String,
    /// Where this output starts (the requested cursor, or oldest if that was dropped).
    pub cursor: u64,
    /// Offset after the output: pass it as cursor to continue.
    pub next_cursor: u64,
    /// More retained output remains past next_cursor: keep reading.
    pub has_more: bool,
    /// The requested cursor was older than the oldest retained byte; reading resumed there.
    pub truncated: bool,
    /// Oldest retained offset.
    pub oldest: u64,
    /// Newest offset.
    pub head: u64,
    /// The port's state.
    pub state: PortState,
    /// With `parse`: the records of the page's output, as send_command's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parsed: Option<serde_json::Value>,
    /// With `parse`: the template's file name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// With `parse`: why `parsed` is null.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parse_note: Option<String>,
}

/// Arguments of `clear_buffer`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClearBufferArgs {
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `clear_buffer`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ClearBufferResult {
    /// The consume cursor now (the head).
    pub cursor: u64,
    /// Unread bytes skipped (still readable with read_output).
    pub discarded_bytes: u64,
}

/// The prompt of a read: the argument, else the connection's default.
fn prompt_arg(
    conn: &Connection,
    prompt: &Option<String>,
    regex: Option<bool>,
) -> Result<Prompt, GateError> {
    match prompt {
        None => Ok(conn.profile.prompt.clone()),
        Some(p) if p.is_empty() => Err(GateError::invalid(
            "prompt is empty; give the text that ends the output, or omit it for the connection's prompt",
        )),
        Some(p) if p.len() > MAX_PROMPT_BYTES => Err(GateError::invalid(format!(
            "prompt is {} bytes, longer than {MAX_PROMPT_BYTES}; a prompt is one short line",
            p.len()
        ))),
        Some(p) if regex.unwrap_or(false) => compile_regex("prompt", p),
        Some(p) => Ok(Prompt::literal(p)),
    }
}

#[tool_router(router = io_router, vis = "pub(super)")]
impl GateServer {
    /// Sends text with the connection's line ending appended, at most
    /// [`MAX_SEND_BYTES`]; returns at once.
    #[tool(
        description = format!(
            "Send text to the device, with the connection's line ending appended\n\
             (cr by default; line_ending \"none\" for raw keystrokes). Returns at\n\
             once; read the reply with read_until_prompt. At most {}.",
            size(MAX_SEND_BYTES as u64)
        ),
        input_schema = rmcp::handler::server::common::schema_for_input::<SendTextArgs>().unwrap_or_default()
    )]
    pub async fn send_text(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<SendResult>, ToolError> {
        let a: SendTextArgs = parse("send_text", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let mut bytes = a.text.into_bytes();
        bytes.extend_from_slice(a.line_ending.unwrap_or(conn.profile.line_ending).bytes());
        if bytes.len() > MAX_SEND_BYTES {
            return Err(GateError::invalid(format!(
                "text is {} bytes; send at most {MAX_SEND_BYTES} per call",
                bytes.len()
            ))
            .into());
        }
        let cursor = self
            .send_bytes(&conn, "text", &bytes, a.clear_buffer_first.unwrap_or(false))
            .await?;
        Ok(Json(SendResult {
            bytes_sent: bytes.len() as u64,
            cursor,
        }))
    }

    /// Send raw bytes given as hex (e.g. "03" for Ctrl-C, "1b5b41" for the
    /// up arrow); nothing is appended.
    #[tool(input_schema = rmcp::handler::server::common::schema_for_input::<SendHexArgs>().unwrap_or_default())]
    pub async fn send_hex(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<SendResult>, ToolError> {
        let a: SendHexArgs = parse("send_hex", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let bytes = args::parse_hex(&a.hex)?;
        if bytes.len() > MAX_SEND_BYTES {
            return Err(GateError::invalid(format!(
                "hex is {} bytes; send at most {MAX_SEND_BYTES} per call",
                bytes.len()
            ))
            .into());
        }
        let cursor = self
            .send_bytes(&conn, "hex", &bytes, a.clear_buffer_first.unwrap_or(false))
            .await?;
        Ok(Json(SendResult {
            bytes_sent: bytes.len() as u64,
            cursor,
        }))
    }

    /// Read output until a prompt appears, or until timeout. Returns raw
    /// output from this session's cursor up to and including the prompt and
    /// leaves what follows for the next read. Literal by default (prefer a
    /// prompt with its trailing space, e.g. "# "); with regex: true, `$`
    /// means the end of what has arrived. auto_reply answers triggers such
    /// as --More-- once per occurrence. On timeout, `timed_out` is true and
    /// `output` holds what arrived (the cursor moves past it;
    /// read_output from start_cursor re-reads it). encoding hex or
    /// base64 returns the raw bytes of binary output exactly.
    #[tool(
        input_schema = rmcp::handler::server::common::schema_for_input::<ReadUntilPromptArgs>().unwrap_or_default(),
        output_schema = rmcp::handler::server::common::schema_for_output::<ReadUntilPromptResult>()
    )]
    pub async fn read_until_prompt(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let a: ReadUntilPromptArgs = parse("read_until_prompt", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let prompt = prompt_arg(&conn, &a.prompt, a.regex)?;
        let timeout = timeout_arg(a.timeout, DEFAULT_TIMEOUT_S)?;
        let max_output = max_output_arg(a.max_output)?;
        let waited = self
            .wait_prompt(
                &conn,
                conn.cursor,
                prompt,
                &a.auto_reply,
                timeout,
                &wait_hooks(&context, &self.client_gone),
            )
            .await?;
        let log = conn.port().log();
        let encoding = a.encoding.unwrap_or_default();
        // Only what is returned is copied: as text, up to 3 bytes more, so
        // that the cut falls where it would in the whole.
        let copy = if encoding.is_binary() {
            max_output
        } else {
            max_output.saturating_add(3)
        };
        let (raw, whole) = log.copy_prefix(waited.start, waited.end_offset, copy);
        let prompt_text = match waited.end {
            WaitEnd::Matched(span) => clean_field(&log.copy_range(span.start, span.end)),
            _ => String::new(),
        };
        let total = whole as u64;
        let copied = raw.len();
        let (output, cut) = encoding.encode_cut_owned(raw, max_output);
        let output_truncated = cut || whole > copied;
        let result = ReadUntilPromptResult {
            matched: matches!(waited.end, WaitEnd::Matched(_)),
            timed_out: waited.end == WaitEnd::TimedOut,
            output: String::new(),
            prompt_text,
            bytes: total,
            start_cursor: waited.start,
            end_cursor: waited.end_offset,
            auto_replies: waited.auto_replies.len() as u64,
            elapsed_ms: waited.elapsed.as_millis() as u64,
            truncated: waited.truncated,
            output_truncated,
            total_bytes: total,
        };
        structured_output(&result, output, Vec::new())
    }

    /// Run one CLI command and return what an engineer would read: the
    /// echo, pager prompts (answered automatically from the preset) and the
    /// trailing prompt removed, `\n` line ends. `error_lines` lists lines
    /// matching the preset's error patterns. Output larger than max_output
    /// is cut; the whole stays at `resource` and in read_output.
    #[tool(
        input_schema = rmcp::handler::server::common::schema_for_input::<SendCommandArgs>().unwrap_or_default(),
        output_schema = rmcp::handler::server::common::schema_for_output::<SendCommandResult>()
    )]
    pub async fn send_command(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let a: SendCommandArgs = parse("send_command", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let prompt = prompt_arg(&conn, &a.prompt, a.regex)?;
        let timeout = timeout_arg(a.timeout, DEFAULT_TIMEOUT_S)?;
        let max_output = max_output_arg(a.max_output)?;
        if a.command.contains(['\r', '\n']) {
            return Err(GateError::invalid("command holds a line break; send one command per call (or use send_text for raw input)").into());
        }
        let mut bytes = a.command.clone().into_bytes();
        bytes.extend_from_slice(conn.profile.line_ending.bytes());
        if bytes.len() > MAX_SEND_BYTES {
            return Err(GateError::invalid(format!(
                "command is {} bytes; at most {MAX_SEND_BYTES}",
                bytes.len()
            ))
            .into());
        }
        // Every argument is checked before anything is sent: a refused
        // call must not have run the command.
        triggers_arg(&conn, &a.auto_reply, 0)?;
        // The reply starts where the log is when the command goes out:
        // whatever arrived before is not this command's output.
        let start = self.send_bytes(&conn, "command", &bytes, true).await?;
        let waited = self
            .wait_prompt(
                &conn,
                start,
                prompt,
                &a.auto_reply,
                timeout,
                &wait_hooks(&context, &self.client_gone),
            )
            .await?;
        let log = conn.port().log();
        let (body_end, prompt_text) = match waited.end {
            WaitEnd::Matched(span) => (
                span.start,
                clean_field(&log.copy_range(span.start, span.end)),
            ),
            _ => (waited.end_offset, String::new()),
        };
        let pagers: Vec<&[u8]> = conn.profile.pagers.iter().map(Vec::as_slice).collect();
        let mut cleaner = Cleaner::new(&CleanOptions {
            command: Some(&a.command),
            pagers: &pagers,
        });
        cleaner.reserve(body_end.saturating_sub(waited.start) as usize);
        let whole = log.feed_range(waited.start, body_end, CLEAN_PIECE, |raw| cleaner.feed(raw));
        let clean = cleaner.finish();
        let errors = error_lines(&clean, &conn.profile.error_patterns);
        let parsed = match a.parse {
            Some(true) => {
                let config = self.gateway.config();
                super::parsed::parse_output(
                    &config.server,
                    &conn.gateway_port.config,
                    &a.command,
                    &clean,
                )
                .await
            }
            _ => Default::default(),
        };
        let total = clean.len() as u64;
        let (output, output_truncated) = cut(clean, max_output);
        let mut links = Vec::new();
        let resource = output_truncated.then(|| {
            let uri = output_uri(&conn.name, waited.start, body_end);
            self.session.remember(RememberedOutput {
                port: conn.name.clone(),
                start: waited.start,
                end: body_end,
                command: a.command.clone(),
            });
            links.push(
                rmcp::model::Resource::new(uri.clone(), format!("{} output", a.command))
                    .with_mime_type("text/plain")
                    .with_description(format!(
                        "whole clean output of {:?} on {} ({total} bytes)",
                        a.command, conn.name
                    )),
            );
            uri
        });
        let result = SendCommandResult {
            output: String::new(),
            prompt_text,
            matched: matches!(waited.end, WaitEnd::Matched(_)),
            timed_out: waited.end == WaitEnd::TimedOut,
            auto_replies: waited.auto_replies.len() as u64,
            error_lines: errors,
            elapsed_ms: waited.elapsed.as_millis() as u64,
            start_cursor: waited.start,
            end_cursor: waited.end_offset,
            truncated: waited.truncated || !whole,
            output_truncated,
            total_bytes: total,
            resource,
            // The report comes just before the prompt, on its line (so
            // inside a prompt pattern that takes the whole line).
            exit_status: super::exit_status::reported_exit_status(
                &log.copy_range(
                    waited
                        .end_offset
                        .saturating_sub(super::exit_status::REPORT_WINDOW)
                        .max(waited.start),
                    waited.end_offset,
                ),
            ),
            parsed: parsed.parsed,
            template: parsed.template,
            parse_note: parsed.note,
        };
        structured_output(&result, output, links)
    }

    /// Returns output that arrived since this session's cursor, waiting up
    /// to `timeout` seconds (default [`READ_AVAILABLE_TIMEOUT_S`]) for the
    /// first byte; moves the cursor.
    #[tool(
        description = format!(
            "Return output that arrived since this session's cursor: waits up to\n\
             `timeout` seconds (default {}) for the first byte, then until the\n\
             device is quiet for a moment. Moves the cursor. `hex` always holds\n\
             the raw bytes; encoding hex or base64 makes `output` binary-safe too.",
            seconds(READ_AVAILABLE_TIMEOUT_S)
        ),
        input_schema = rmcp::handler::server::common::schema_for_input::<ReadAvailableArgs>().unwrap_or_default()
    )]
    pub async fn read_available(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ReadAvailableResult>, ToolError> {
        let a: ReadAvailableArgs = parse("read_available", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let timeout = timeout_arg(a.timeout, READ_AVAILABLE_TIMEOUT_S)?;
        let max_output = max_output_arg(a.max_output)?;
        let log = conn.port().log();
        let end = wait_for_output(
            conn.port(),
            conn.cursor,
            timeout,
            SETTLE,
            timeout.max(SETTLE),
            &wait_hooks(&context, &self.client_gone),
        )
        .await
        .ok_or_else(cancelled)?;
        let oldest = log.oldest();
        let start = conn.cursor.max(oldest);
        let raw = log.copy_range(start, end);
        self.session.advance(&conn.name, end);
        let total = raw.len() as u64;
        let (output, output_truncated) =
            a.encoding.unwrap_or_default().encode_cut(&raw, max_output);
        Ok(Json(ReadAvailableResult {
            output,
            hex: encoding::hex(&raw[..raw.len().min(max_output)]),
            bytes: total,
            start_cursor: start,
            end_cursor: end,
            truncated: conn.cursor < oldest,
            output_truncated,
            total_bytes: total,
        }))
    }

    /// Point-in-time read of the retained output by byte offset; moves
    /// nothing. Start with no cursor (the oldest retained byte) or a cursor
    /// from another result, continue with next_cursor while has_more. As
    /// text, never splits a UTF-8 character; hex or base64 return the raw
    /// bytes exactly. A cursor beyond head (or, as text, inside a
    /// character) is an error.
    #[tool(
        annotations(read_only_hint = true),
        input_schema = rmcp::handler::server::common::schema_for_input::<ReadOutputArgs>().unwrap_or_default()
    )]
    pub async fn read_output(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ReadOutputResult>, ToolError> {
        let a: ReadOutputArgs = parse("read_output", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let max_bytes = a.max_bytes.unwrap_or(DEFAULT_PAGE_BYTES);
        if !(MIN_PAGE_BYTES..=MAX_PAGE_BYTES).contains(&max_bytes) {
            return Err(GateError::invalid(format!(
                "max_bytes must be between {MIN_PAGE_BYTES} and {MAX_PAGE_BYTES}, got {max_bytes}"
            ))
            .into());
        }
        let wait_ms = a.wait_ms.unwrap_or(0);
        if wait_ms > MAX_WAIT_MS {
            return Err(GateError::invalid(format!(
                "wait_ms must be at most {MAX_WAIT_MS}, got {wait_ms}"
            ))
            .into());
        }
        let port = conn.port();
        let log = port.log();
        let cursor = a.cursor.unwrap_or_else(|| log.oldest());
        if wait_ms > 0 && cursor == log.head() {
            wait_for_output(
                port,
                cursor,
                Duration::from_millis(wait_ms),
                Duration::ZERO,
                Duration::ZERO,
                &wait_hooks(&context, &self.client_gone),
            )
            .await
            .ok_or_else(cancelled)?;
        }
        let encoding = a.encoding.unwrap_or_default();
        let page = if encoding.is_binary() {
            encoding::raw_page(log, cursor, max_bytes as usize)
        } else {
            log.read_page(cursor, max_bytes as usize)
        };
        let page = page.map_err(|e| match e {
            CursorError::BeyondHead { cursor, head } => GateError::new(
                ErrorCode::CursorOutOfRange,
                format!("cursor {cursor} is beyond head {head}; use a next_cursor from an earlier read, or omit cursor to start at the oldest retained byte"),
            ),
            CursorError::SplitsUtf8 { cursor, char_start } => GateError::new(
                ErrorCode::CursorSplitsUtf8,
                format!("cursor {cursor} is inside a UTF-8 character; use {char_start}, where it starts"),
            ),
        })?;
        let parsed = match &a.parse {
            Some(command) => {
                let config = self.gateway.config();
                let clean = super::parsed::clean_page(&conn, command, &page.bytes);
                super::parsed::parse_output(
                    &config.server,
                    &conn.gateway_port.config,
                    command,
                    &clean,
                )
                .await
            }
            None => Default::default(),
        };
        Ok(Json(ReadOutputResult {
            output: encoding.encode(&page.bytes),
            cursor: page.cursor,
            next_cursor: page.next_cursor,
            has_more: page.has_more,
            truncated: page.truncated,
            oldest: page.oldest,
            head: page.head,
            state: port.state(),
            parsed: parsed.parsed,
            template: parsed.template,
            parse_note: parsed.note,
        }))
    }

    /// Skip unread output: move this session's consume cursor to the head.
    /// The bytes stay readable with read_output.
    #[tool(input_schema = rmcp::handler::server::common::schema_for_input::<ClearBufferArgs>().unwrap_or_default())]
    pub async fn clear_buffer(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<ClearBufferResult>, ToolError> {
        let a: ClearBufferArgs = parse("clear_buffer", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let head = conn.port().log().head();
        let old = self.session.set_cursor(&conn.name, head).unwrap_or(head);
        Ok(Json(ClearBufferResult {
            cursor: head.max(old),
            discarded_bytes: head.saturating_sub(old),
        }))
    }
}
