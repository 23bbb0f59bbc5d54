//! The `expect` tool: a scripted dialogue (send, wait for, send, …) in one
//! call, with the waits of `read_until_prompt` and text marked sensitive
//! kept out of results, errors and logs.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::{Json, tool, tool_router};
use schemars::JsonSchema;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;

use super::args::{
    self, DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT_S, MAX_SEND_BYTES, MAX_TIMEOUT_S, max_output_arg,
    parse, timeout_arg, triggers_arg,
};
use super::connect::compile_regex;
use super::describe::{auto_reply_limits, max_output_limits, seconds, size, timeout_limits};
use super::dialogue::wait_hooks;
use super::encoding::cut;
use super::server::GateServer;
use super::session::Connection;
use super::tool_result::ToolError;
use crate::audit::Actor;
use crate::clean::clean_field;
use crate::error::GateError;
use crate::log::lossy_text;
use crate::matcher::Prompt;
use crate::port::Port;
use crate::port::wait::WaitEnd;
use crate::settings::LineEnding;

/// Most steps in one `expect` call.
pub const MAX_STEPS: usize = 64;
/// Longest `expect` text of a step.
pub const MAX_EXPECT_BYTES: usize = 4096;
/// Longest sum of the step timeouts of one call, in seconds.
pub const MAX_TOTAL_TIMEOUT_S: f64 = MAX_TIMEOUT_S;
/// What stands for sensitive text in results and errors.
pub const REDACTED: &str = "<redacted>";

/// One step of `expect`: optionally send, then optionally wait.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpectStep {
    /// Text to send, with the line ending appended; at most
    /// [`MAX_SEND_BYTES`].
    #[schemars(description = format!(
        "Text to send, with the line ending appended (\"\" sends just the line\n\
         ending, e.g. to wake a console). At most {}.",
        size(MAX_SEND_BYTES as u64)
    ))]
    #[serde(default, deserialize_with = "opt_text")]
    pub send: Option<String>,
    /// Raw bytes to send instead, as hex (e.g. "03" for Ctrl-C); nothing is appended.
    #[serde(default, deserialize_with = "opt_text")]
    pub send_hex: Option<String>,
    /// Line ending appended to `send`: cr, lf, crlf or none (default: the connection's).
    #[serde(default, deserialize_with = "args::opt_enum")]
    pub line_ending: Option<LineEnding>,
    /// Text to wait for after sending, at most [`MAX_EXPECT_BYTES`].
    #[schemars(description = format!(
        "Text to wait for after sending, e.g. \"Password: \" or \"SW1#\" (at most {}).",
        size(MAX_EXPECT_BYTES as u64)
    ))]
    pub expect: Option<String>,
    /// Treat `expect` as a regex (multi-line, `$` also at the end of what has arrived). Default false.
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub regex: Option<bool>,
    /// Seconds to wait for `expect` (default [`DEFAULT_TIMEOUT_S`], at most
    /// [`MAX_TIMEOUT_S`]).
    #[schemars(description = format!("Seconds to wait for `expect` ({}).", timeout_limits()))]
    #[serde(default, deserialize_with = "args::opt_f64")]
    pub timeout: Option<f64>,
    /// Skip unread output (move the consume cursor to the head) before this step. Default false.
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub clear_first: Option<bool>,
    /// The text sent is secret (a password): it never appears in results,
    /// errors or logs, and echoes of it are replaced by [`REDACTED`].
    #[schemars(description = format!(
        "The text sent is secret (a password): it never appears in results,\n\
         errors or logs, and echoes of it in output are replaced by `{REDACTED}`. Default false."
    ))]
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub sensitive: Option<bool>,
    /// Parse the output as `send`'s, as send_command's `parse` does.
    #[schemars(description = "Also return `parsed`: the output as the command `send`'s.")]
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub parse: Option<bool>,
}

impl fmt::Debug for ExpectStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |v: &Option<String>| match v {
            Some(_) if self.sensitive == Some(true) => Some(REDACTED.to_owned()),
            v => v.clone(),
        };
        f.debug_struct("ExpectStep")
            .field("send", &shown(&self.send))
            .field("send_hex", &shown(&self.send_hex))
            .field("line_ending", &self.line_ending)
            .field("expect", &self.expect)
            .field("regex", &self.regex)
            .field("timeout", &self.timeout)
            .field("clear_first", &self.clear_first)
            .field("sensitive", &self.sensitive)
            .field("parse", &self.parse)
            .finish()
    }
}

/// Arguments of `expect`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpectArgs {
    /// The steps, run in order (1 to [`MAX_STEPS`]).
    #[schemars(description = format!("The steps, run in order (1 to {MAX_STEPS})."))]
    #[serde(deserialize_with = "steps_arg")]
    pub steps: Vec<ExpectStep>,
    /// {trigger: reply} answered once per occurrence during every wait
    /// (default: the preset's pager replies), within the limits in
    /// [`auto_reply_limits`].
    #[schemars(description = format!(
        "{{trigger: reply}} answered once per occurrence during every wait, e.g.\n\
         {{\"--More--\": \" \"}}. Default: the preset's pager replies; {{}} for none.\n\
         At most {}.",
        auto_reply_limits()
    ))]
    #[serde(default, deserialize_with = "args::opt_map")]
    pub auto_reply: Option<BTreeMap<String, String>>,
    /// Stop at the first step whose expect times out (default true); false
    /// runs the remaining steps anyway.
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub stop_on_timeout: Option<bool>,
    /// Most bytes of output returned inline per step (see
    /// [`max_output_limits`]).
    #[schemars(description = format!(
        "Most bytes of output returned inline per step ({}).",
        max_output_limits()
    ))]
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub max_output: Option<u64>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// What one step did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StepResult {
    /// The step's number, from 1.
    pub step: u64,
    /// What was sent: the text, "hex:…" for send_hex, [`REDACTED`] when
    /// sensitive; null when nothing was sent.
    #[schemars(description = format!(
        "What was sent: the text (without the line ending), \"hex:…\" for\n\
         send_hex, `{REDACTED}` when sensitive; null when nothing was sent."
    ))]
    pub sent: Option<String>,
    /// Bytes written to the device, line ending included.
    pub bytes_sent: u64,
    /// The expect text was found (true for a step that expects nothing).
    pub matched: bool,
    /// The step's timeout passed before the expect text arrived.
    pub timed_out: bool,
    /// Raw output up to and including the expected text; echoes of
    /// sensitive text are [`REDACTED`].
    #[schemars(description = format!(
        "Raw output from the cursor up to and including the expected text\n\
         (what arrived, on timeout); echoes of sensitive text are `{REDACTED}`."
    ))]
    pub output: String,
    /// The text that matched (empty when not matched).
    pub prompt_text: String,
    /// Log offset where the step's output starts.
    pub start_cursor: u64,
    /// Log offset after the step's output: the consume cursor moved here.
    pub end_cursor: u64,
    /// Auto-replies sent while waiting.
    pub auto_replies: u64,
    /// Milliseconds the step took, sending included.
    pub elapsed_ms: u64,
    /// Retention dropped output before it was read.
    pub truncated: bool,
    /// `output` was cut at max_output; the whole is readable with read_output.
    pub output_truncated: bool,
    /// Size of the whole output in bytes.
    pub total_bytes: u64,
    /// With `parse`: the records of the output before the expected text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parsed: Option<Value>,
    /// With `parse`: the template's file name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// With `parse`: why `parsed` is null.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parse_note: Option<String>,
}

/// Result of `expect`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExpectResult {
    /// Every step ran and every expect matched.
    pub completed: bool,
    /// Steps run (a step that timed out counts; steps after a stop do not).
    pub steps_run: u64,
    /// Steps given.
    pub steps_total: u64,
    /// Each step run, in order.
    pub steps: Vec<StepResult>,
    /// Milliseconds for the whole call.
    pub elapsed_ms: u64,
}

/// Text that may come as a JSON string, number or boolean (a numeric PIN);
/// errors never quote the value, which may be a secret.
fn opt_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v.to_string())),
        Some(_) => Err(de::Error::custom("expected text (a string)")),
    }
}

/// The steps: an array, or a JSON string holding one (clients that send
/// every argument as a string). Errors never quote the input.
fn steps_arg<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ExpectStep>, D::Error> {
    let value = match Value::deserialize(d)? {
        Value::String(s) => serde_json::from_str::<Value>(&s).map_err(|_| {
            de::Error::custom("steps is a string that is not a JSON array of step objects")
        })?,
        v => v,
    };
    let Value::Array(items) = value else {
        return Err(de::Error::custom("steps must be an array of step objects"));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            if !item.is_object() {
                return Err(de::Error::custom(format!(
                    "step {} must be an object such as {{\"send\": \"show clock\", \"expect\": \"#\"}}",
                    i + 1
                )));
            }
            serde_json::from_value(item)
                .map_err(|e| de::Error::custom(format!("step {}: {}", i + 1, scrub(&e.to_string()))))
        })
        .collect()
}

/// Drops the values serde quotes in its messages (`invalid type: string
/// "…"`), which may be secrets; the kind and the expectation stay.
fn scrub(message: &str) -> String {
    static VALUES: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
        regex::Regex::new(
            r#"(invalid (?:type|value|length): [a-z ]*?) ?(?:"(?:[^"\\]|\\.)*"|`[^`]*`|'[^']*')"#,
        )
        .ok()
    });
    match &*VALUES {
        Some(re) => re.replace_all(message, "$1").into_owned(),
        None => "the arguments do not match the input schema".to_owned(),
    }
}

/// A step checked and ready to run.
struct Plan {
    clear_first: bool,
    /// Bytes to write, if the step sends.
    bytes: Option<Vec<u8>>,
    /// `sent` as results show it.
    shown: Option<String>,
    sensitive: bool,
    /// What to wait for, and for how long.
    wait: Option<(Prompt, Duration)>,
    /// With `parse`: the command whose output the step's is.
    parse: Option<String>,
}

/// Checks every step before anything is sent; also returns the secrets to
/// redact from outputs.
fn plan(conn: &Connection, steps: &[ExpectStep]) -> Result<(Vec<Plan>, Vec<String>), GateError> {
    if steps.is_empty() || steps.len() > MAX_STEPS {
        return Err(GateError::invalid(format!(
            "steps has {} entries; give 1 to {MAX_STEPS}",
            steps.len()
        )));
    }
    let mut plans = Vec::with_capacity(steps.len());
    let mut secrets = Vec::new();
    let mut total_timeout = 0.0;
    for (i, s) in steps.iter().enumerate() {
        let n = i + 1;
        let sensitive = s.sensitive.unwrap_or(false);
        let (bytes, shown, secret) = match (&s.send, &s.send_hex) {
            (Some(_), Some(_)) => {
                return Err(GateError::invalid(format!(
                    "step {n} has both send and send_hex; give one"
                )));
            }
            (Some(text), None) => {
                let mut bytes = text.clone().into_bytes();
                bytes.extend_from_slice(s.line_ending.unwrap_or(conn.profile.line_ending).bytes());
                (Some(bytes), Some(text.clone()), Some(text.clone()))
            }
            (None, Some(hex)) => {
                if s.line_ending.is_some() {
                    return Err(GateError::invalid(format!(
                        "step {n}: line_ending applies to send, not send_hex (add the bytes to the hex)"
                    )));
                }
                let bytes = args::parse_hex(hex).map_err(|e| {
                    if sensitive {
                        GateError::invalid(format!(
                            "step {n}: send_hex is not valid hex (not shown: sensitive); give two hex digits per byte"
                        ))
                    } else {
                        GateError::invalid(format!("step {n}: {}", e.message))
                    }
                })?;
                let shown = format!("hex:{}", super::encoding::hex(&bytes));
                let secret = String::from_utf8(bytes.clone()).ok();
                (Some(bytes), Some(shown), secret)
            }
            (None, None) => {
                if s.line_ending.is_some() {
                    return Err(GateError::invalid(format!(
                        "step {n}: line_ending without send"
                    )));
                }
                (None, None, None)
            }
        };
        if let Some(b) = &bytes
            && b.len() > MAX_SEND_BYTES
        {
            return Err(GateError::invalid(format!(
                "step {n} sends {} bytes; at most {MAX_SEND_BYTES}",
                b.len()
            )));
        }
        if sensitive && let Some(secret) = secret.filter(|t| !t.is_empty()) {
            secrets.push(secret);
        }
        let wait = match &s.expect {
            None => {
                if s.regex.is_some() || s.timeout.is_some() {
                    return Err(GateError::invalid(format!(
                        "step {n} has regex or timeout but no expect; give the text to wait for"
                    )));
                }
                None
            }
            Some(e) if e.is_empty() => {
                return Err(GateError::invalid(format!(
                    "step {n}: expect is empty; give the text to wait for, or leave expect out"
                )));
            }
            Some(e) if e.len() > MAX_EXPECT_BYTES => {
                return Err(GateError::invalid(format!(
                    "step {n}: expect is longer than {MAX_EXPECT_BYTES} bytes; a prompt is one short line"
                )));
            }
            Some(e) => {
                let prompt = if s.regex.unwrap_or(false) {
                    compile_regex(&format!("step {n} expect"), e)?
                } else {
                    Prompt::literal(e)
                };
                let timeout = timeout_arg(s.timeout, DEFAULT_TIMEOUT_S)
                    .map_err(|e| GateError::invalid(format!("step {n}: {}", e.message)))?;
                total_timeout += timeout.as_secs_f64();
                Some((prompt, timeout))
            }
        };
        let parse = match (s.parse.unwrap_or(false), &s.send) {
            (false, _) => None,
            (true, Some(command)) if !sensitive && wait.is_some() => Some(command.clone()),
            (true, _) => {
                return Err(GateError::invalid(format!(
                    "step {n}: parse needs the command in send (not sensitive) and the prompt in expect"
                )));
            }
        };
        if bytes.is_none() && wait.is_none() && !s.clear_first.unwrap_or(false) {
            return Err(GateError::invalid(format!(
                "step {n} does nothing; give send, send_hex or expect"
            )));
        }
        plans.push(Plan {
            clear_first: s.clear_first.unwrap_or(false),
            shown: if sensitive {
                shown.map(|_| REDACTED.to_owned())
            } else {
                shown
            },
            bytes,
            sensitive,
            wait,
            parse,
        });
    }
    if total_timeout > MAX_TOTAL_TIMEOUT_S {
        return Err(GateError::invalid(format!(
            "the step timeouts add up to {total_timeout}s; at most {MAX_TOTAL_TIMEOUT_S}s per call (steps with expect wait {DEFAULT_TIMEOUT_S}s unless told): give shorter timeouts or split the steps over calls"
        )));
    }
    // Longest first, so a secret inside another is not left half shown.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    Ok((plans, secrets))
}

/// Replaces every secret in `text` by [`REDACTED`].
fn redact(text: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .fold(text.to_owned(), |t, s| t.replace(s.as_str(), REDACTED))
}

/// Writes a step's bytes as this session: [`Port::write_as`] records it in
/// the transcript and the audit trail, a `sensitive` write as redacted,
/// never in clear. Nothing here logs the bytes.
async fn write_step(
    port: &Port,
    actor: &Actor,
    bytes: &[u8],
    sensitive: bool,
) -> Result<(), GateError> {
    tracing::debug!(
        port = %port.name(),
        bytes = bytes.len(),
        sensitive,
        "expect: writing a step"
    );
    port.write_as(actor, "expect", bytes, sensitive).await
}

/// A short account of the steps run, for an error that ends the call.
fn progress(results: &[StepResult], total: usize) -> String {
    let done: Vec<String> = results
        .iter()
        .map(|r| {
            format!(
                "step {}: sent {} bytes, matched {}, cursors {}-{}",
                r.step, r.bytes_sent, r.matched, r.start_cursor, r.end_cursor
            )
        })
        .collect();
    format!(
        " Steps finished before this: {} of {total}{}{}",
        results.len(),
        if done.is_empty() { "" } else { " (" },
        if done.is_empty() {
            String::new()
        } else {
            done.join("; ") + ")"
        }
    )
}

#[tool_router(router = expect_router, vis = "pub(super)")]
impl GateServer {
    /// Runs a scripted dialogue (send, wait for, send, …) in one call,
    /// within [`MAX_STEPS`], [`MAX_SEND_BYTES`], [`MAX_EXPECT_BYTES`],
    /// [`MAX_TIMEOUT_S`] and [`MAX_TOTAL_TIMEOUT_S`]; invalid steps are
    /// refused before anything is sent.
    #[tool(
        description = format!(
            "Run a scripted dialogue in one call, e.g. a login. Each step may\n\
             send text (`send`, with `line_ending`, default the connection's; \"\"\n\
             sends just the line ending) or raw bytes (`send_hex`), then may wait\n\
             for `expect` (literal, or regex: true) up to `timeout` seconds\n\
             (default {}), answering auto_reply triggers (default: the preset's)\n\
             like read_until_prompt. `clear_first` skips unread output before the\n\
             step. `sensitive: true` (passwords) keeps a step's text out of\n\
             results, errors and logs (sent shows `{REDACTED}`). A step that times out stops the run unless\n\
             stop_on_timeout is false. Limits: 1-{MAX_STEPS} steps; each send at most {};\n\
             expect at most {}; timeouts at most {} s each and {} s in sum;\n\
             max_output (default {DEFAULT_MAX_OUTPUT}) per step. Invalid steps are refused\n\
             before anything is sent.",
            seconds(DEFAULT_TIMEOUT_S),
            size(MAX_SEND_BYTES as u64),
            size(MAX_EXPECT_BYTES as u64),
            seconds(MAX_TIMEOUT_S),
            seconds(MAX_TOTAL_TIMEOUT_S)
        ),
        input_schema = rmcp::handler::server::common::schema_for_input::<ExpectArgs>().unwrap_or_default()
    )]
    pub async fn expect(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<Json<ExpectResult>, ToolError> {
        let a: ExpectArgs =
            parse("expect", raw).map_err(|e| GateError::new(e.code, scrub(&e.message)))?;
        let conn = self.session.get(a.connection.as_deref())?;
        let max_output = max_output_arg(a.max_output)?;
        let (plans, secrets) = plan(&conn, &a.steps)?;
        // Checked now, so bad triggers fail before anything is sent.
        triggers_arg(&conn, &a.auto_reply, conn.cursor)?;
        let stop_on_timeout = a.stop_on_timeout.unwrap_or(true);
        let started = Instant::now();
        let port = conn.port();
        let mut cursor = conn.cursor;
        let mut results: Vec<StepResult> = Vec::with_capacity(plans.len());
        let total = plans.len();
        for (i, step) in plans.into_iter().enumerate() {
            let step_started = Instant::now();
            let fail = |mut e: GateError, results: &[StepResult]| {
                e.message = redact(&e.message, &secrets) + &progress(results, total);
                ToolError(e)
            };
            if step.clear_first {
                let head = port.log().head();
                self.session.set_cursor(&conn.name, head);
                cursor = cursor.max(head);
            }
            let mut bytes_sent = 0;
            if let Some(bytes) = &step.bytes {
                if let Err(e) = Self::ensure_open(&conn) {
                    return Err(fail(e, &results));
                }
                if let Err(e) = write_step(port, &self.session.actor(), bytes, step.sensitive).await
                {
                    return Err(fail(e, &results));
                }
                bytes_sent = bytes.len() as u64;
            }
            let mut result = StepResult {
                step: i as u64 + 1,
                sent: step.shown,
                bytes_sent,
                matched: true,
                timed_out: false,
                output: String::new(),
                prompt_text: String::new(),
                start_cursor: cursor,
                end_cursor: cursor,
                auto_replies: 0,
                elapsed_ms: 0,
                truncated: false,
                output_truncated: false,
                total_bytes: 0,
                parsed: None,
                template: None,
                parse_note: None,
            };
            if let Some((prompt, timeout)) = step.wait {
                let waited = match self
                    .wait_prompt(
                        &conn,
                        cursor,
                        prompt,
                        &a.auto_reply,
                        timeout,
                        &wait_hooks(&context, &self.client_gone),
                    )
                    .await
                {
                    Ok(w) => w,
                    Err(e) => return Err(fail(e, &results)),
                };
                cursor = cursor.max(waited.end_offset);
                let log = port.log();
                let raw = log.copy_range(waited.start, waited.end_offset);
                let (output, output_truncated) =
                    cut(redact(&lossy_text(&raw), &secrets), max_output);
                result.matched = matches!(waited.end, WaitEnd::Matched(_));
                result.timed_out = waited.end == WaitEnd::TimedOut;
                result.prompt_text = match waited.end {
                    WaitEnd::Matched(span) => redact(
                        &clean_field(&log.copy_range(span.start, span.end)),
                        &secrets,
                    ),
                    _ => String::new(),
                };
                result.output = output;
                result.output_truncated = output_truncated;
                result.total_bytes = raw.len() as u64;
                result.start_cursor = waited.start;
                result.end_cursor = waited.end_offset;
                result.auto_replies = waited.auto_replies.len() as u64;
                result.truncated = waited.truncated;
                if let (Some(command), WaitEnd::Matched(span)) = (&step.parse, waited.end) {
                    let body = log.copy_range(waited.start, span.start);
                    // Secrets of earlier steps stay out of records as out of `output`.
                    let clean =
                        redact(&super::parsed::clean_reply(&conn, command, &body), &secrets);
                    let config = self.gateway.config();
                    let parsed = super::parsed::parse_output(
                        &config.server,
                        &conn.gateway_port.config,
                        command,
                        &clean,
                    )
                    .await;
                    result.parsed = parsed.parsed;
                    result.template = parsed.template;
                    result.parse_note = parsed.note;
                }
            }
            result.elapsed_ms = step_started.elapsed().as_millis() as u64;
            let stop = result.timed_out && stop_on_timeout;
            results.push(result);
            if stop {
                break;
            }
        }
        Ok(Json(ExpectResult {
            completed: results.len() == total && results.iter().all(|r| r.matched),
            steps_run: results.len() as u64,
            steps_total: total as u64,
            steps: results,
            elapsed_ms: started.elapsed().as_millis() as u64,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_drops_quoted_values_only() {
        assert_eq!(
            scrub("invalid type: string \"hunter2\", expected a boolean"),
            "invalid type: string, expected a boolean"
        );
        assert_eq!(
            scrub("invalid type: integer `1234`, expected a string"),
            "invalid type: integer, expected a string"
        );
        assert_eq!(
            scrub("invalid value: string \"a\\\"b\", expected x"),
            "invalid value: string, expected x"
        );
        assert_eq!(
            scrub("unknown field `sendd`, expected one of `send`"),
            "unknown field `sendd`, expected one of `send`"
        );
    }

    #[test]
    fn redact_replaces_every_secret() {
        let secrets = vec!["cisco123".to_owned(), "cisco".to_owned()];
        assert_eq!(
            redact("pw cisco123 and cisco", &secrets),
            "pw <redacted> and <redacted>"
        );
        assert_eq!(redact("nothing", &[]), "nothing");
    }

    #[test]
    fn steps_parse_leniently_and_quietly() {
        let parse_steps = |v: Value| {
            let obj = serde_json::json!({ "steps": v });
            parse::<ExpectArgs>("expect", obj.as_object().cloned().unwrap_or_default())
        };
        let a =
            parse_steps(serde_json::json!([{"send": 1234, "sensitive": "true", "expect": null}]))
                .unwrap();
        assert_eq!(a.steps[0].send.as_deref(), Some("1234"));
        assert!(format!("{:?}", a.steps[0]).contains(REDACTED));
        assert!(!format!("{:?}", a.steps[0]).contains("1234"));
        let a = parse_steps(Value::String(r#"[{"send": "x"}]"#.into())).unwrap();
        assert_eq!(a.steps.len(), 1);
        let e = parse_steps(serde_json::json!(["s3cret"])).unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        let e =
            parse_steps(serde_json::json!([{"send": ["s3cret"], "sensitive": true}])).unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        let e = parse_steps(Value::String("s3cret".into())).unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }
}
