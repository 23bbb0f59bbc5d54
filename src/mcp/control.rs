//! Tools that control the line rather than send text: `send_break`,
//! `set_line_settings`, `set_lines`, `pulse_line`, `detect_baud`. Thin over
//! `port::control`, which holds the device handle and the timing.

use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::{Json, tool, tool_router};
use schemars::JsonSchema;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::args::{self, LineOverride, parse};
use super::describe::{list, millis};
use super::server::GateServer;
use super::tool_result::ToolError;
use crate::config::breaks::BreakStep;
use crate::error::GateError;
use crate::port::baud_detect::{
    BaudScore, DEFAULT_CANDIDATES, MAX_CANDIDATES, MAX_LISTEN, MIN_SCORE,
};
use crate::port::control::{MAX_BREAK, MAX_PULSE};
use crate::port::lines::{ModemLine, ModemStatus};
use crate::settings::{FlowControl, LineSettings, Parity};

/// Shortest BREAK, pulse or listening time, in milliseconds.
pub const MIN_DURATION_MS: u64 = 1;
/// Default BREAK length, in milliseconds.
pub const DEFAULT_BREAK_MS: u64 = 250;
/// Default pulse length, in milliseconds.
pub const DEFAULT_PULSE_MS: u64 = 100;
/// Default listening time per candidate rate, in milliseconds.
pub const DEFAULT_LISTEN_MS: u64 = 500;
/// Longest `probe` of `detect_baud`, in bytes.
pub const MAX_PROBE_BYTES: usize = 256;
/// Default `probe` of `detect_baud`: a console answers a CR with its prompt.
pub const DEFAULT_PROBE: &str = "\r";

/// Arguments of `send_break`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendBreakArgs {
    /// How long the BREAK lasts, in milliseconds (default
    /// [`DEFAULT_BREAK_MS`], at most [`MAX_BREAK`]).
    #[schemars(description = format!(
        "How long the BREAK lasts, in milliseconds (default {DEFAULT_BREAK_MS}, {MIN_DURATION_MS}-{}).",
        millis(MAX_BREAK)
    ))]
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub duration_ms: Option<u64>,
    /// A break sequence the port's preset names, sent instead.
    #[schemars(description = "A preset's break sequence name.")]
    pub sequence: Option<String>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `send_break`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SendBreakResult {
    /// How long the BREAK (or the sequence) lasted, in milliseconds.
    pub duration_ms: u64,
    /// The break sequence sent, if one was named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence: Option<String>,
}

/// Arguments of `set_line_settings`; what is not given stays as it is.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetLineSettingsArgs {
    /// Bits per second, e.g. 9600 or 115200.
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub baud: Option<u64>,
    /// Data bits: 5-8.
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub data_bits: Option<u64>,
    /// Parity: none, even or odd.
    #[serde(default, deserialize_with = "args::opt_enum")]
    pub parity: Option<Parity>,
    /// Stop bits: 1 or 2.
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub stop_bits: Option<u64>,
    /// Flow control: none, hardware (RTS/CTS) or software (XON/XOFF).
    #[serde(default, deserialize_with = "args::opt_enum")]
    pub flow_control: Option<FlowControl>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `set_line_settings`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SetLineSettingsResult {
    /// The line settings now.
    pub settings: LineSettings,
    /// The line settings before.
    pub previous: LineSettings,
    /// Applied to the open device at once (false: the device is not open
    /// now; the settings apply when it reopens).
    pub live: bool,
}

/// Arguments of `set_lines`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetLinesArgs {
    /// Data Terminal Ready: true asserts it, false drops it; omit to leave it.
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub dtr: Option<bool>,
    /// Request To Send: true asserts it, false drops it; omit to leave it.
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub rts: Option<bool>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Arguments of `pulse_line`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PulseLineArgs {
    /// The line to pulse: dtr or rts.
    #[serde(deserialize_with = "modem_line")]
    pub line: ModemLine,
    /// How long the pulse lasts, in milliseconds (default
    /// [`DEFAULT_PULSE_MS`], at most [`MAX_PULSE`]).
    #[schemars(description = format!(
        "How long the pulse lasts, in milliseconds (default {DEFAULT_PULSE_MS}, {MIN_DURATION_MS}-{}).",
        millis(MAX_PULSE)
    ))]
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub ms: Option<u64>,
    /// The level during the pulse (default false: drop the line, wait,
    /// assert it again, the usual reset pulse).
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub level: Option<bool>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `pulse_line`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PulseLineResult {
    /// The line pulsed.
    pub line: ModemLine,
    /// The level it had during the pulse.
    pub level: bool,
    /// How long the pulse lasted, in milliseconds.
    pub ms: u64,
    /// Every modem line after the pulse.
    pub lines: ModemStatus,
}

/// Arguments of `detect_baud`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DetectBaudArgs {
    /// Rates to try, in order (default [`DEFAULT_CANDIDATES`], at most
    /// [`MAX_CANDIDATES`]).
    #[schemars(description = format!(
        "Rates to try, in order (default {}; at most {MAX_CANDIDATES}).",
        list(&DEFAULT_CANDIDATES)
    ))]
    #[serde(default, deserialize_with = "opt_rates")]
    pub candidates: Option<Vec<u64>>,
    /// What to send at each rate to make the device print (default
    /// [`DEFAULT_PROBE`]; "" only listens).
    #[schemars(description = format!(
        "What to send at each rate to make the device print (default {DEFAULT_PROBE:?}: a console answers with its prompt; \"\" sends nothing and only listens)."
    ))]
    pub probe: Option<String>,
    /// How long to listen at each rate, in milliseconds (default
    /// [`DEFAULT_LISTEN_MS`], at most [`MAX_LISTEN`]).
    #[schemars(description = format!(
        "How long to listen at each rate, in milliseconds (default {DEFAULT_LISTEN_MS}, {MIN_DURATION_MS}-{}); ends early once the device is quiet.",
        millis(MAX_LISTEN)
    ))]
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub listen_ms: Option<u64>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `detect_baud`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DetectBaudResult {
    /// Every candidate, best first: readability score 0-1, bytes received, a sample (non-printables as \xNN).
    pub ranking: Vec<BaudScore>,
    /// The rate that read best, if any scored at least [`MIN_SCORE`].
    #[schemars(description = format!(
        "The rate that read best, if any read well (score ≥ {MIN_SCORE}); null when none did (silent device?)."
    ))]
    pub best: Option<u32>,
    /// The line settings the port is left at: the best rate, else the original one.
    pub settings: LineSettings,
    /// The rate changed.
    pub changed: bool,
    /// This session's consume cursor, moved past the probing output (still readable with read_output).
    pub cursor: u64,
}

/// A required `dtr`/`rts`, in any case.
fn modem_line<'de, D: Deserializer<'de>>(d: D) -> Result<ModemLine, D::Error> {
    let name = String::deserialize(d)?;
    match name.trim().to_ascii_lowercase().as_str() {
        "dtr" => Ok(ModemLine::Dtr),
        "rts" => Ok(ModemLine::Rts),
        _ => Err(de::Error::custom(format!(
            "line must be dtr or rts, got {name:?}"
        ))),
    }
}

/// An optional list of rates: a JSON array (of numbers or numeric
/// strings), one number, or a string such as "9600, 115200".
fn opt_rates<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u64>>, D::Error> {
    fn one<E: de::Error>(v: &Value) -> Result<u64, E> {
        match v {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .ok_or_else(|| E::custom(format!("expected a baud rate such as 9600, got {v}")))
    }
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items.iter().map(one).collect::<Result<_, _>>().map(Some),
        Some(Value::String(s)) => s
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|part| !part.is_empty())
            .map(|part| one(&Value::String(part.to_owned())))
            .collect::<Result<_, _>>()
            .map(Some),
        Some(v) => one(&v).map(|rate| Some(vec![rate])),
    }
}

/// A duration in milliseconds within [`MIN_DURATION_MS`]..=max.
fn ms_arg(name: &str, v: Option<u64>, default: u64, max: Duration) -> Result<u64, GateError> {
    let ms = v.unwrap_or(default);
    let max = max.as_millis() as u64;
    if !(MIN_DURATION_MS..=max).contains(&ms) {
        return Err(GateError::invalid(format!(
            "{name} must be between {MIN_DURATION_MS} and {max} milliseconds, got {ms}"
        )));
    }
    Ok(ms)
}

fn to_baud(v: u64) -> Result<u32, GateError> {
    u32::try_from(v).map_err(|_| {
        GateError::invalid(format!(
            "baud {v} is out of range: use 50..=4000000, e.g. 9600 or 115200"
        ))
    })
}

impl SetLineSettingsArgs {
    /// The settings asked for, on top of `current`.
    fn apply_to(&self, current: LineSettings) -> Result<LineSettings, GateError> {
        let asked = LineOverride {
            baud: self.baud,
            data_bits: self.data_bits,
            parity: self.parity,
            stop_bits: self.stop_bits,
            flow_control: self.flow_control,
        };
        if asked.is_empty() {
            return Err(GateError::invalid(format!(
                "give at least one of baud, data_bits, parity, stop_bits, flow_control (now {current})"
            )));
        }
        asked.apply_to(current)
    }
}

impl GateServer {
    /// Sends the port's break sequence `name`: its BREAKs, bytes (written
    /// as this session, so held and audited like any write) and pauses.
    pub(super) async fn send_break_sequence(
        &self,
        conn: &super::session::Connection,
        name: &str,
    ) -> Result<(), GateError> {
        let sequences = &conn.gateway_port.config.break_sequences;
        let Some(sequence) = sequences.get(name) else {
            let known: Vec<&str> = sequences.keys().map(String::as_str).collect();
            return Err(GateError::invalid(format!(
                "{} names no break sequence {}; {}",
                conn.name,
                crate::error::shown(name),
                if known.is_empty() {
                    "it has none: add break_sequences to its preset, or omit sequence for a plain BREAK".to_owned()
                } else {
                    format!("it has: {}", known.join(", "))
                }
            )));
        };
        let port = conn.port();
        for step in &sequence.steps {
            match step {
                BreakStep::Break(ms) => port.send_break(Duration::from_millis(*ms)).await?,
                BreakStep::Bytes(bytes) => {
                    port.write_as(&self.session.actor(), "break", bytes, false)
                        .await?
                }
                BreakStep::Pause(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
            }
        }
        port.record(format!(
            "sent break sequence {name} ({})",
            sequence.text.escape_default()
        ));
        Ok(())
    }
}

#[tool_router(router = control_router, vis = "pub(super)")]
impl GateServer {
    /// Sends a serial BREAK for duration_ms (default [`DEFAULT_BREAK_MS`]).
    #[tool(
        description = format!(
            "Send a serial BREAK (the line held low) for duration_ms (default\n\
             {DEFAULT_BREAK_MS}). Used to enter Cisco ROMMON during boot, or to get the\n\
             attention of a console that ignores text. On a telnet:// console\n\
             server it is telnet's BREAK, on rfc2217:// the server holds it.\n\
             Fails with port_unavailable when the device cannot send BREAK."
        ),
        annotations(destructive_hint = true),
        input_schema = rmcp::handler::server::common::schema_for_input::<SendBreakArgs>().unwrap_or_default()
    )]
    pub async fn send_break(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<SendBreakResult>, ToolError> {
        let a: SendBreakArgs = parse("send_break", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        conn.port().refuse_during_transfer()?;
        if let Some(name) = a.sequence.filter(|n| !n.is_empty()) {
            let started = std::time::Instant::now();
            self.send_break_sequence(&conn, &name).await?;
            return Ok(Json(SendBreakResult {
                duration_ms: started.elapsed().as_millis() as u64,
                sequence: Some(name),
            }));
        }
        let ms = ms_arg("duration_ms", a.duration_ms, DEFAULT_BREAK_MS, MAX_BREAK)?;
        conn.port().send_break(Duration::from_millis(ms)).await?;
        Ok(Json(SendBreakResult {
            duration_ms: ms,
            sequence: None,
        }))
    }

    /// Change baud rate and framing of the open line at once, without
    /// reconnecting: the output log and cursors go on (e.g. ROMMON at 9600,
    /// then the booted image at 115200). Arguments not given stay as they
    /// are. The port keeps the new settings for later reopens; status and
    /// list_ports show them. On an rfc2217:// console server they go to
    /// the server and its acknowledgement is awaited; telnet:// and tcp://
    /// ports have no line control.
    #[tool(input_schema = rmcp::handler::server::common::schema_for_input::<SetLineSettingsArgs>().unwrap_or_default())]
    pub async fn set_line_settings(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<SetLineSettingsResult>, ToolError> {
        let a: SetLineSettingsArgs = parse("set_line_settings", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        conn.port().refuse_during_transfer()?;
        let port = conn.port();
        let previous = port.line_settings();
        let line = a.apply_to(previous)?;
        let live = port.set_line_settings(line).await?;
        Ok(Json(SetLineSettingsResult {
            settings: port.line_settings(),
            previous,
            live,
        }))
    }

    /// Set the modem control outputs DTR and/or RTS (true asserts, false
    /// drops; omitted ones stay) and read every modem line: dtr, rts, cts,
    /// dsr, cd (carrier detect), ri (ring). With neither given it only
    /// reads. Fails with port_unavailable on a device without modem lines.
    /// On rfc2217:// the inputs are what the console server last notified.
    #[tool(input_schema = rmcp::handler::server::common::schema_for_input::<SetLinesArgs>().unwrap_or_default())]
    pub async fn set_lines(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<ModemStatus>, ToolError> {
        let a: SetLinesArgs = parse("set_lines", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        if a.dtr.is_some() || a.rts.is_some() {
            conn.port().refuse_during_transfer()?;
        }
        let status = conn.port().set_lines(a.dtr, a.rts).await?;
        Ok(Json(status))
    }

    /// Pulses a modem control line for `ms` milliseconds (default
    /// [`DEFAULT_PULSE_MS`]), then sets it back.
    #[tool(
        description = format!(
            "Pulse a modem control line: set `line` (dtr or rts) to `level`\n\
             (default false) for `ms` milliseconds (default {DEFAULT_PULSE_MS}), then back. The\n\
             default is the usual reset pulse of a microcontroller or console\n\
             server port: drop, wait, restore. Returns the modem lines after it."
        ),
        annotations(destructive_hint = true),
        input_schema = rmcp::handler::server::common::schema_for_input::<PulseLineArgs>().unwrap_or_default()
    )]
    pub async fn pulse_line(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<PulseLineResult>, ToolError> {
        let a: PulseLineArgs = parse("pulse_line", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        conn.port().refuse_during_transfer()?;
        let ms = ms_arg("ms", a.ms, DEFAULT_PULSE_MS, MAX_PULSE)?;
        let level = a.level.unwrap_or(false);
        let lines = conn
            .port()
            .pulse_line(a.line, level, Duration::from_millis(ms))
            .await?;
        Ok(Json(PulseLineResult {
            line: a.line,
            level,
            ms,
            lines,
        }))
    }

    /// Finds the baud rate of an unknown console by probing each candidate
    /// rate; leaves the port at the best one.
    #[tool(
        description = format!(
            "Find the baud rate of an unknown console: at each candidate rate,\n\
             send the probe (default {DEFAULT_PROBE:?}), listen up to listen_ms (default {DEFAULT_LISTEN_MS})\n\
             and score how readable the answer is (text vs the noise of a wrong\n\
             rate). Leaves the port at the best rate, or the original one when\n\
             none reads well, and returns the ranking. Moves this session's\n\
             cursor past the probing output."
        ),
        input_schema = rmcp::handler::server::common::schema_for_input::<DetectBaudArgs>().unwrap_or_default()
    )]
    pub async fn detect_baud(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<DetectBaudResult>, ToolError> {
        let a: DetectBaudArgs = parse("detect_baud", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        conn.port().refuse_during_transfer()?;
        let listen = ms_arg("listen_ms", a.listen_ms, DEFAULT_LISTEN_MS, MAX_LISTEN)?;
        let given = a
            .candidates
            .unwrap_or_else(|| DEFAULT_CANDIDATES.iter().map(|&b| u64::from(b)).collect());
        if given.len() > MAX_CANDIDATES {
            return Err(GateError::invalid(format!(
                "candidates must hold 1 to {MAX_CANDIDATES} rates, got {}",
                given.len()
            ))
            .into());
        }
        let mut candidates = Vec::new();
        for rate in given {
            let rate = to_baud(rate)?;
            if !candidates.contains(&rate) {
                candidates.push(rate);
            }
        }
        if candidates.is_empty() || candidates.len() > MAX_CANDIDATES {
            return Err(GateError::invalid(format!(
                "candidates must hold 1 to {MAX_CANDIDATES} rates, got {}",
                candidates.len()
            ))
            .into());
        }
        let probe = a
            .probe
            .unwrap_or_else(|| DEFAULT_PROBE.to_owned())
            .into_bytes();
        if probe.len() > MAX_PROBE_BYTES {
            return Err(GateError::invalid(format!(
                "probe is {} bytes; at most {MAX_PROBE_BYTES}",
                probe.len()
            ))
            .into());
        }
        let port = conn.port();
        let found = port
            .detect_baud(candidates, probe, Duration::from_millis(listen))
            .await?;
        let cursor = port.log().head();
        self.session.advance(&conn.name, cursor);
        Ok(Json(DetectBaudResult {
            ranking: found.ranking,
            best: found.best,
            settings: found.settings,
            changed: found.changed,
            cursor,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, GateError> {
        parse("t", v.as_object().cloned().unwrap_or_default())
    }

    #[test]
    fn rates_come_as_arrays_numbers_or_strings() {
        let a: DetectBaudArgs = args(serde_json::json!({"candidates": [9600, "115200"]})).unwrap();
        assert_eq!(a.candidates, Some(vec![9600, 115200]));
        let a: DetectBaudArgs = args(serde_json::json!({"candidates": "[9600, 19200]"})).unwrap();
        assert_eq!(a.candidates, Some(vec![9600, 19200]));
        let a: DetectBaudArgs = args(serde_json::json!({"candidates": 57600})).unwrap();
        assert_eq!(a.candidates, Some(vec![57600]));
        let a: DetectBaudArgs = args(serde_json::json!({"candidates": null})).unwrap();
        assert_eq!(a.candidates, None);
        let e = args::<DetectBaudArgs>(serde_json::json!({"candidates": ["fast"]})).unwrap_err();
        assert!(e.to_string().contains("baud rate"), "{e}");
    }

    #[test]
    fn the_pulsed_line_is_dtr_or_rts_in_any_case() {
        let a: PulseLineArgs = args(serde_json::json!({"line": "DTR"})).unwrap();
        assert_eq!(a.line, ModemLine::Dtr);
        let e = args::<PulseLineArgs>(serde_json::json!({"line": "cts"})).unwrap_err();
        assert!(e.to_string().contains("dtr or rts"), "{e}");
        let e = args::<PulseLineArgs>(serde_json::json!({})).unwrap_err();
        assert!(e.to_string().contains("line"), "{e}");
    }

    #[test]
    fn line_settings_change_only_what_is_given_and_are_checked() {
        let a: SetLineSettingsArgs = args(serde_json::json!({"baud": "115200"})).unwrap();
        let line = a.apply_to(LineSettings::default()).unwrap();
        assert_eq!(
            line,
            LineSettings {
                baud: 115200,
                ..LineSettings::default()
            }
        );
        let a: SetLineSettingsArgs = args(serde_json::json!({})).unwrap();
        assert!(a.apply_to(LineSettings::default()).is_err());
        let a: SetLineSettingsArgs = args(serde_json::json!({"data_bits": 9})).unwrap();
        let e = a.apply_to(LineSettings::default()).unwrap_err();
        assert!(
            e.to_string().starts_with("invalid_argument: data_bits"),
            "{e}"
        );
        let a: SetLineSettingsArgs = args(serde_json::json!({"baud": 5_000_000_000u64})).unwrap();
        assert!(a.apply_to(LineSettings::default()).is_err());
    }

    #[test]
    fn durations_are_bounded() {
        assert_eq!(ms_arg("ms", None, 100, MAX_PULSE).unwrap(), 100);
        assert!(ms_arg("ms", Some(0), 100, MAX_PULSE).is_err());
        assert!(ms_arg("ms", Some(10_001), 100, MAX_PULSE).is_err());
        assert_eq!(ms_arg("ms", Some(10_000), 100, MAX_PULSE).unwrap(), 10_000);
    }
}
