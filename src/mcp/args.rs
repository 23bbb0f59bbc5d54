//! Tool arguments: parsing with errors agents can act on, lenient scalars
//! (clients such as the MCP Inspector CLI send every argument as a string,
//! and agents often send `null` for "absent"), and the checks of the
//! arguments several tool groups share (timeouts, `max_output`, what may
//! be sent, auto-reply triggers).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer};
use serde_json::Value;

use super::session::Connection;
use crate::error::GateError;
use crate::matcher::TriggerScanner;
use crate::settings::{FlowControl, LineSettings, Parity};

/// Default `timeout` of prompt waits, in seconds.
pub const DEFAULT_TIMEOUT_S: f64 = 10.0;
/// Longest `timeout` of any wait, in seconds.
pub const MAX_TIMEOUT_S: f64 = 600.0;
/// Default inline output size (`max_output`).
pub const DEFAULT_MAX_OUTPUT: u64 = 65536;
/// Largest `max_output`.
pub const MAX_MAX_OUTPUT: u64 = 16 * 1024 * 1024;
/// Raw bytes cleaned at a time: a command's output is read from the log
/// in pieces this large, never copied whole.
pub const CLEAN_PIECE: usize = 256 * 1024;
/// Largest `text`/`command` one call may send.
pub const MAX_SEND_BYTES: usize = 64 * 1024;
/// Most auto-reply triggers one call may give.
pub const MAX_TRIGGERS: usize = 64;
/// Longest auto-reply trigger, in bytes.
pub const MAX_TRIGGER_BYTES: usize = 256;
/// Longest auto-reply reply, in bytes.
pub const MAX_REPLY_BYTES: usize = 1024;

/// Parses a tool's arguments into `T`; a wrong name, type or missing key
/// becomes `invalid_argument` naming it.
pub fn parse<T: DeserializeOwned>(
    tool: &str,
    args: rmcp::model::JsonObject,
) -> Result<T, GateError> {
    // JSON null means absent: drop such keys so defaults apply.
    let args: serde_json::Map<String, Value> =
        args.into_iter().filter(|(_, v)| !v.is_null()).collect();
    serde_json::from_value(Value::Object(args)).map_err(|e| {
        GateError::invalid(format!(
            "{tool}: {e}; see the tool's input schema for names and types"
        ))
    })
}

fn from_string_or<'de, D, T>(d: D, what: &str) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            let trimmed = s.trim();
            if trimmed.is_empty() {
                return Ok(None);
            }
            serde_json::from_str(trimmed)
                .map(Some)
                .map_err(|_| de::Error::custom(format!("expected {what}, got the string {s:?}")))
        }
        Some(v) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|_| de::Error::custom(format!("expected {what}, got {v}"))),
    }
}

/// An optional unsigned integer, also given as a string.
pub fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    from_string_or(d, "a non-negative integer")
}

/// An optional number, also given as a string.
pub fn opt_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    from_string_or(d, "a number")
}

/// An optional boolean, also given as the string `true`/`false`.
pub fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    from_string_or(d, "true or false")
}

/// An optional `{trigger: reply}` object, also given as a JSON string.
pub fn opt_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    from_string_or(d, "an object of {\"trigger\": \"reply\"} strings")
}

/// An optional enum value (by its name), also tolerant of case.
pub fn opt_enum<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => serde_json::from_value(Value::String(s.to_ascii_lowercase()))
            .map(Some)
            .map_err(|e| de::Error::custom(e.to_string())),
        Some(v) => Err(de::Error::custom(format!("expected a name, got {v}"))),
    }
}

/// The line settings a call asks for (`connect` on an ad-hoc port,
/// `set_line_settings`), each one not given left as it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct LineOverride {
    /// Bits per second.
    pub baud: Option<u64>,
    /// Data bits.
    pub data_bits: Option<u64>,
    /// Parity.
    pub parity: Option<Parity>,
    /// Stop bits.
    pub stop_bits: Option<u64>,
    /// Flow control.
    pub flow_control: Option<FlowControl>,
}

impl LineOverride {
    /// Whether no setting was given.
    pub fn is_empty(&self) -> bool {
        self.baud.is_none()
            && self.data_bits.is_none()
            && self.parity.is_none()
            && self.stop_bits.is_none()
            && self.flow_control.is_none()
    }

    /// `base` with the given settings applied over it, checked as a serial
    /// driver would take them.
    pub fn apply_to(&self, base: LineSettings) -> Result<LineSettings, GateError> {
        let mut line = base;
        if let Some(b) = self.baud {
            line.baud = u32::try_from(b).map_err(|_| {
                GateError::invalid(format!(
                    "baud {b} is out of range: use 50..=4000000, e.g. 9600 or 115200"
                ))
            })?;
        }
        if let Some(d) = small("data_bits", self.data_bits)? {
            line.data_bits = d;
        }
        if let Some(p) = self.parity {
            line.parity = p;
        }
        if let Some(s) = small("stop_bits", self.stop_bits)? {
            line.stop_bits = s;
        }
        if let Some(f) = self.flow_control {
            line.flow_control = f;
        }
        line.validate().map_err(GateError::invalid)?;
        Ok(line)
    }
}

/// An optional count that fits a byte, naming the argument when not.
fn small(name: &str, v: Option<u64>) -> Result<Option<u8>, GateError> {
    v.map(|v| {
        u8::try_from(v).map_err(|_| GateError::invalid(format!("{name} {v} is out of range")))
    })
    .transpose()
}

/// Checks an optional number against a range, naming the argument.
pub fn in_range(
    name: &str,
    value: Option<f64>,
    default: f64,
    min: f64,
    max: f64,
) -> Result<f64, GateError> {
    let v = value.unwrap_or(default);
    if !v.is_finite() || v < min || v > max {
        return Err(GateError::invalid(format!(
            "{name} must be between {min} and {max}, got {v}"
        )));
    }
    Ok(v)
}

/// Parses a hex string such as `"0d0a"`, `"0D 0A"`, `"0x1b,0x5b"`.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, GateError> {
    let cleaned: String = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == ':')
        .map(|part| {
            part.strip_prefix("0x")
                .or_else(|| part.strip_prefix("0X"))
                .unwrap_or(part)
        })
        .collect();
    if cleaned.is_empty() {
        return Err(GateError::invalid(
            "hex is empty; give bytes such as \"0d0a\" or \"1b 5b 41\"",
        ));
    }
    if !cleaned.len().is_multiple_of(2) {
        return Err(GateError::invalid(format!(
            "hex {text:?} has an odd number of digits; give two digits per byte, e.g. \"0d0a\""
        )));
    }
    (0..cleaned.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&cleaned[i..i + 2], 16).map_err(|_| {
                GateError::invalid(format!(
                    "hex {text:?} has a non-hex digit near {:?}; use 0-9 and a-f",
                    &cleaned[i..i + 2]
                ))
            })
        })
        .collect()
}

/// The `timeout` argument of a wait: `default` when absent, at most
/// [`MAX_TIMEOUT_S`].
pub(super) fn timeout_arg(v: Option<f64>, default: f64) -> Result<Duration, GateError> {
    let s = in_range("timeout", v, default, 0.0, MAX_TIMEOUT_S)?;
    Ok(Duration::from_secs_f64(s))
}

/// The `max_output` argument: [`DEFAULT_MAX_OUTPUT`] when absent, 1 to
/// [`MAX_MAX_OUTPUT`].
pub(super) fn max_output_arg(v: Option<u64>) -> Result<usize, GateError> {
    let m = v.unwrap_or(DEFAULT_MAX_OUTPUT);
    if !(1..=MAX_MAX_OUTPUT).contains(&m) {
        return Err(GateError::invalid(format!(
            "max_output must be between 1 and {MAX_MAX_OUTPUT}, got {m}"
        )));
    }
    Ok(m as usize)
}

/// The triggers of a read: the argument, else the preset's.
pub(super) fn triggers_arg(
    conn: &Connection,
    auto_reply: &Option<BTreeMap<String, String>>,
    cursor: u64,
) -> Result<TriggerScanner, GateError> {
    let pairs: Vec<(String, String)> = match auto_reply {
        None => conn.profile.auto_reply.clone(),
        Some(map) => map.iter().map(|(t, r)| (t.clone(), r.clone())).collect(),
    };
    if pairs.len() > MAX_TRIGGERS {
        return Err(GateError::invalid(format!(
            "auto_reply has {} triggers; at most {MAX_TRIGGERS}",
            pairs.len()
        )));
    }
    if let Some((t, _)) = pairs
        .iter()
        .find(|(t, r)| t.is_empty() || t.len() > MAX_TRIGGER_BYTES || r.len() > MAX_REPLY_BYTES)
    {
        return Err(GateError::invalid(format!(
            "auto_reply trigger {t:?}: triggers must be 1-{MAX_TRIGGER_BYTES} bytes and replies at most {MAX_REPLY_BYTES} bytes"
        )));
    }
    TriggerScanner::new(&pairs, cursor).map_err(GateError::invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_override_changes_only_what_is_given() {
        assert!(LineOverride::default().is_empty());
        let base = LineSettings::default();
        let asked = LineOverride {
            baud: Some(115_200),
            parity: Some(Parity::Even),
            ..LineOverride::default()
        };
        assert!(!asked.is_empty());
        let line = asked.apply_to(base).unwrap();
        assert_eq!((line.baud, line.parity), (115_200, Parity::Even));
        assert_eq!(line.data_bits, base.data_bits);
        let too_many = LineOverride {
            stop_bits: Some(300),
            ..LineOverride::default()
        };
        assert!(
            too_many
                .apply_to(base)
                .unwrap_err()
                .message
                .contains("stop_bits")
        );
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Probe {
        #[serde(default, deserialize_with = "opt_f64")]
        timeout: Option<f64>,
        #[serde(default, deserialize_with = "opt_bool")]
        regex: Option<bool>,
        #[serde(default, deserialize_with = "opt_map")]
        auto_reply: Option<BTreeMap<String, String>>,
    }

    fn obj(v: Value) -> rmcp::model::JsonObject {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn strings_nulls_and_values_all_parse() {
        let p: Probe = parse("t", obj(serde_json::json!({"timeout": "2.5", "regex": "true", "auto_reply": "{\"--More--\": \" \"}"}))).unwrap();
        assert_eq!(p.timeout, Some(2.5));
        assert_eq!(p.regex, Some(true));
        assert_eq!(p.auto_reply.unwrap()["--More--"], " ");
        let p: Probe = parse(
            "t",
            obj(serde_json::json!({"timeout": null, "regex": false})),
        )
        .unwrap();
        assert_eq!((p.timeout, p.regex), (None, Some(false)));
    }

    #[test]
    fn wrong_names_and_types_are_invalid_argument() {
        let e = parse::<Probe>("t", obj(serde_json::json!({"timeot": 1}))).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("invalid_argument: t: unknown field `timeot`"),
            "{e}"
        );
        let e = parse::<Probe>("t", obj(serde_json::json!({"timeout": "soon"}))).unwrap_err();
        assert!(e.to_string().contains("expected a number"), "{e}");
    }

    #[test]
    fn hex_forms() {
        assert_eq!(parse_hex("0d0a").unwrap(), b"\r\n");
        assert_eq!(parse_hex("0x1b, 0x5b 41").unwrap(), b"\x1b[A");
        assert!(parse_hex("abc").is_err());
        assert!(parse_hex("zz").is_err());
        assert!(parse_hex(" ").is_err());
    }
}
