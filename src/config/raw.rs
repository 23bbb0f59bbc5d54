//! The config file as written: the serde shapes TOML is read into (unknown
//! keys are errors, values a check must point at are [`Spanned`]), before
//! any value is checked.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use toml::Spanned;

use super::access::{AuthMode, TokenAccess};
use super::watches::RawWatch;
use crate::settings::{FlowControl, LineEnding, Parity};

/// Parses a size: a whole or decimal number with an optional unit,
/// `B`, `KB`/`MB`/`GB` (powers of 1000) or `K`/`KiB`, `M`/`MiB`, `G`/`GiB`
/// (powers of 1024), case-insensitive, e.g. `"1MiB"`, `"512KiB"`, `"4096"`,
/// `"1MB"` (1 000 000), `"2GiB"`.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (&t[..split], t[split..].trim());
    let bad_number = || {
        format!(
            "bad size {s:?}: expected a number with an optional unit, e.g. \"1MiB\" or \"4096\""
        )
    };
    if number.is_empty() {
        return Err(bad_number());
    }
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "bad size {s:?}: unknown unit {unit:?}; use a number of bytes \
                 or a unit B, KiB, MiB, GiB, KB, MB or GB, e.g. \"16MiB\""
            ));
        }
    };
    let too_big = || format!("size {s:?} is too large");
    let bytes = if number.contains('.') {
        let v: f64 = number.parse().map_err(|_| bad_number())?;
        let bytes = (v * multiplier as f64).round();
        if bytes >= usize::MAX as f64 {
            return Err(too_big());
        }
        if bytes != v * multiplier as f64 {
            return Err(format!("size {s:?} is not a whole number of bytes"));
        }
        bytes as u64
    } else {
        let v: u64 = number.parse().map_err(|_| bad_number())?;
        v.checked_mul(multiplier).ok_or_else(too_big)?
    };
    usize::try_from(bytes).map_err(|_| too_big())
}

/// A size from the file: a string like `"16MiB"` or an integer of bytes.
pub(super) struct Size(pub(super) usize);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Size, D::Error> {
        struct SizeVisitor;
        impl Visitor<'_> for SizeVisitor {
            type Value = Size;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size like \"1MiB\" or a number of bytes")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Size, E> {
                parse_size(v).map(Size).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Size, E> {
                usize::try_from(v)
                    .map(Size)
                    .map_err(|_| E::custom(format!("bad size {v}: it is negative")))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Size, E> {
                usize::try_from(v)
                    .map(Size)
                    .map_err(|_| E::custom(format!("size {v} is too large")))
            }
        }
        d.deserialize_any(SizeVisitor)
    }
}

/// An `auto_reply` table `{ "--More--" = " " }`, in the order written.
pub(super) struct AutoReplyTable(pub(super) Vec<(Spanned<String>, String)>);

impl<'de> Deserialize<'de> for AutoReplyTable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AutoReplyTable, D::Error> {
        struct TableVisitor;
        impl<'de> Visitor<'de> for TableVisitor {
            type Value = AutoReplyTable;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of trigger = reply strings, e.g. { \"--More--\" = \" \" }")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AutoReplyTable, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(AutoReplyTable(entries))
            }
        }
        d.deserialize_map(TableVisitor)
    }
}

/// One `modes` table as written: every key optional, each replacing the
/// preset's.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, expecting = "a modes table")]
pub(super) struct RawModes {
    pub(super) recovery: Option<Spanned<String>>,
    pub(super) login: Option<Spanned<String>>,
    pub(super) password: Option<Spanned<String>>,
    pub(super) config: Option<Spanned<String>>,
    pub(super) privileged: Option<Spanned<String>>,
    pub(super) exec: Option<Spanned<String>>,
    pub(super) enable: Option<String>,
    pub(super) disable: Option<String>,
    pub(super) configure: Option<String>,
    pub(super) end_config: Option<String>,
    pub(super) save: Option<String>,
    pub(super) save_replies: Option<AutoReplyTable>,
    pub(super) save_ok: Option<Spanned<String>>,
    pub(super) commit: Option<String>,
    pub(super) commit_check: Option<String>,
    pub(super) commit_confirmed: Option<Spanned<String>>,
    pub(super) discard: Option<String>,
    pub(super) rollback: Option<Spanned<String>>,
    pub(super) revert_timer: Option<Spanned<String>>,
    pub(super) revert_confirm: Option<String>,
    pub(super) rolled_back: Option<Spanned<String>>,
}

/// The whole file: its seven sections, each optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "the config file's top-level table")]
pub(super) struct RawFile {
    #[serde(default)]
    pub(super) server: RawServer,
    #[serde(default)]
    pub(super) tokens: Vec<RawToken>,
    #[serde(default)]
    pub(super) people: Vec<RawPerson>,
    #[serde(default)]
    pub(super) presets: BTreeMap<Spanned<String>, RawPreset>,
    #[serde(default)]
    pub(super) ports: BTreeMap<Spanned<String>, RawPort>,
    #[serde(default)]
    pub(super) policies: BTreeMap<Spanned<String>, super::policies::RawPolicy>,
    pub(super) fleet: Option<RawFleet>,
    #[serde(default)]
    pub(super) power: BTreeMap<Spanned<String>, RawPower>,
}

/// The `[server]` table as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, expecting = "a [server] table")]
pub(super) struct RawServer {
    pub(super) listen: Option<Spanned<String>>,
    pub(super) metrics_listen: Option<Spanned<String>>,
    /// The listener's certificate chain (PEM).
    pub(super) tls_cert: Option<Spanned<PathBuf>>,
    /// Its private key (PEM).
    pub(super) tls_key: Option<Spanned<PathBuf>>,
    /// `"off"`: plain HTTP beyond loopback, with `tls_off_reason`.
    pub(super) tls: Option<Spanned<String>>,
    /// Why plain HTTP is safe here.
    pub(super) tls_off_reason: Option<Spanned<String>>,
    pub(super) alert_webhook: Option<RawWebhook>,
    pub(super) auth: Option<Spanned<AuthMode>>,
    pub(super) retention: Option<Spanned<Size>>,
    pub(super) log_dir: Option<Spanned<PathBuf>>,
    pub(super) files_dir: Option<Spanned<PathBuf>>,
    pub(super) files_max: Option<Spanned<Size>>,
    pub(super) templates_dir: Option<Spanned<PathBuf>>,
    pub(super) console_socket: Option<Spanned<PathBuf>>,
    pub(super) state_dir: Option<Spanned<PathBuf>>,
    /// The SSH door's address (`host:port`).
    pub(super) ssh_listen: Option<Spanned<String>>,
    pub(super) log_max: Option<Spanned<Size>>,
    pub(super) log_keep: Option<Spanned<i64>>,
    pub(super) allow_adhoc: Option<bool>,
    pub(super) adhoc_devices: Option<Vec<Spanned<String>>>,
    pub(super) adhoc_remotes: Option<Vec<Spanned<String>>>,
    pub(super) down_after: Option<Spanned<i64>>,
    /// The policy of callers without a token (stdio, loopback without auth).
    pub(super) policy: Option<Spanned<String>>,
    /// How long a line waits for a person's approval.
    pub(super) approval_timeout: Option<Spanned<String>>,
}

/// `[fleet]` as written.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a [fleet] table { urls, site, credentials, ca_file, serve }"
)]
pub(super) struct RawFleet {
    pub(super) urls: Spanned<Vec<Spanned<String>>>,
    pub(super) site: Spanned<String>,
    pub(super) credentials: Option<Spanned<PathBuf>>,
    pub(super) ca_file: Option<Spanned<PathBuf>>,
    /// Unset: a gateway with no ports of its own serves, one with ports
    /// does not.
    pub(super) serve: Option<bool>,
}

/// `alert_webhook` as written.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table { url, secret_file, timeout, retries, queue }"
)]
pub(super) struct RawWebhook {
    pub(super) url: Spanned<String>,
    /// The CA certificates an https:// receiver is checked against.
    pub(super) ca_file: Option<Spanned<PathBuf>>,
    pub(super) secret_file: Option<Spanned<PathBuf>>,
    pub(super) timeout: Option<Spanned<String>>,
    pub(super) retries: Option<Spanned<i64>>,
    pub(super) queue: Option<Spanned<i64>>,
}

/// One `[[tokens]]` entry as written (`access` read unless given).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [[tokens]] table")]
pub(super) struct RawToken {
    pub(super) name: Spanned<String>,
    pub(super) secret_file: Spanned<PathBuf>,
    pub(super) ports: Spanned<Vec<Spanned<String>>>,
    #[serde(default = "read_access")]
    pub(super) access: TokenAccess,
    /// May log in with the ports' stored credentials (admin always may).
    #[serde(default)]
    pub(super) use_credentials: bool,
    /// May switch the ports' outlets with the `power` tool (admin always
    /// may).
    #[serde(default)]
    pub(super) power: bool,
    /// The command policy its calls are judged by (default: the port's).
    pub(super) policy: Option<Spanned<String>>,
    /// May decide requests for approval at a console or in the web view
    /// (admin always may).
    #[serde(default)]
    pub(super) approve: bool,
}

/// One `[[people]]` entry as written: an engineer who reaches ports
/// over SSH (`access` read unless given).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [[people]] table")]
pub(super) struct RawPerson {
    pub(super) name: Spanned<String>,
    pub(super) authorized_keys: Spanned<PathBuf>,
    pub(super) ports: Spanned<Vec<Spanned<String>>>,
    #[serde(default = "read_access")]
    pub(super) access: TokenAccess,
    /// May decide lines waiting for a person's approval.
    #[serde(default)]
    pub(super) approve: bool,
    /// The command policy what they type is judged by.
    pub(super) policy: Option<Spanned<String>>,
}

/// A token without `access` may only read.
fn read_access() -> TokenAccess {
    TokenAccess::Read
}

/// A `[power.NAME]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [power.NAME] table")]
pub(super) struct RawPower {
    pub(super) driver: Spanned<String>,
    pub(super) address: Option<Spanned<String>>,
    pub(super) ups: Option<Spanned<String>>,
    pub(super) username: Option<Spanned<String>>,
    pub(super) password_file: Option<Spanned<PathBuf>>,
    pub(super) deadline: Option<Spanned<String>>,
    pub(super) min_interval: Option<Spanned<String>>,
    // driver = "snmp" (config/power_snmp.rs); username is v3's user.
    pub(super) profile: Option<Spanned<String>>,
    pub(super) community_file: Option<Spanned<PathBuf>>,
    pub(super) auth_protocol: Option<Spanned<String>>,
    pub(super) auth_password_file: Option<Spanned<PathBuf>>,
    pub(super) priv_protocol: Option<Spanned<String>>,
    pub(super) priv_password_file: Option<Spanned<PathBuf>>,
    pub(super) state_oid: Option<Spanned<String>>,
    pub(super) control_oid: Option<Spanned<String>>,
    pub(super) on_value: Option<Spanned<i64>>,
    pub(super) off_value: Option<Spanned<i64>>,
    /// The CA certificates (PEM) an `https://` Redfish BMC is checked against.
    pub(super) ca_file: Option<Spanned<PathBuf>>,
    /// The RMCP+ cipher suite an IPMI BMC is asked for.
    pub(super) cipher_suite: Option<Spanned<i64>>,
}

/// A port's `power` as written: one outlet or several.
#[derive(Deserialize)]
#[serde(untagged, expecting = "an outlet like \"pdu1:4\", or a list of them")]
pub(super) enum RawOutlets {
    /// `power = "pdu1:4"`.
    One(String),
    /// `power = ["pdu1:4", "pdu2:4"]`.
    Many(Vec<String>),
}

/// The keys a preset and a port may both set.
#[derive(Default)]
pub(super) struct Overrides {
    pub(super) baud: Option<Spanned<u32>>,
    pub(super) data_bits: Option<Spanned<u8>>,
    pub(super) parity: Option<Parity>,
    pub(super) stop_bits: Option<Spanned<u8>>,
    pub(super) flow_control: Option<FlowControl>,
    pub(super) line_ending: Option<LineEnding>,
    pub(super) prompt: Option<Spanned<String>>,
    pub(super) auto_reply: Option<AutoReplyTable>,
    pub(super) pagers: Option<Vec<Spanned<String>>>,
    pub(super) error_patterns: Option<Vec<Spanned<String>>>,
    pub(super) paging_off: Option<String>,
    pub(super) platform: Option<Spanned<String>>,
    pub(super) modes: Option<RawModes>,
    pub(super) credentials: Option<Spanned<PathBuf>>,
    pub(super) watches: Option<Vec<RawWatch>>,
    pub(super) break_sequences: Option<Spanned<BTreeMap<String, String>>>,
    pub(super) policy: Option<Spanned<String>>,
}

// `#[serde(flatten)]` would share the override keys between presets and
// ports, but it defeats both `deny_unknown_fields` and `Spanned`, so the
// keys are listed twice.

/// One `[presets.NAME]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [presets.NAME] table")]
pub(super) struct RawPreset {
    extends: Option<Spanned<String>>,
    description: Option<String>,
    baud: Option<Spanned<u32>>,
    data_bits: Option<Spanned<u8>>,
    parity: Option<Parity>,
    stop_bits: Option<Spanned<u8>>,
    flow_control: Option<FlowControl>,
    line_ending: Option<LineEnding>,
    prompt: Option<Spanned<String>>,
    auto_reply: Option<AutoReplyTable>,
    pagers: Option<Vec<Spanned<String>>>,
    error_patterns: Option<Vec<Spanned<String>>>,
    paging_off: Option<String>,
    platform: Option<Spanned<String>>,
    modes: Option<RawModes>,
    credentials: Option<Spanned<PathBuf>>,
    watches: Option<Vec<RawWatch>>,
    break_sequences: Option<Spanned<BTreeMap<String, String>>>,
    policy: Option<Spanned<String>>,
}

/// One `[ports.NAME]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [ports.NAME] table")]
pub(super) struct RawPort {
    device: Spanned<String>,
    preset: Option<Spanned<String>>,
    baud: Option<Spanned<u32>>,
    data_bits: Option<Spanned<u8>>,
    parity: Option<Parity>,
    stop_bits: Option<Spanned<u8>>,
    flow_control: Option<FlowControl>,
    line_ending: Option<LineEnding>,
    prompt: Option<Spanned<String>>,
    auto_reply: Option<AutoReplyTable>,
    pagers: Option<Vec<Spanned<String>>>,
    error_patterns: Option<Vec<Spanned<String>>>,
    paging_off: Option<String>,
    platform: Option<Spanned<String>>,
    modes: Option<RawModes>,
    credentials: Option<Spanned<PathBuf>>,
    watches: Option<Vec<RawWatch>>,
    break_sequences: Option<Spanned<BTreeMap<String, String>>>,
    pub(super) down_after: Option<Spanned<i64>>,
    /// The outlet(s) feeding the device (only a port has them).
    pub(super) power: Option<Spanned<RawOutlets>>,
    policy: Option<Spanned<String>>,
}

impl RawPreset {
    /// Its `policy` key, checked against the policies before it resolves.
    pub(super) fn policy(&self) -> Option<&Spanned<String>> {
        self.policy.as_ref()
    }

    /// Its `extends`, its `description` and the keys it overrides.
    pub(super) fn split(self) -> (Option<Spanned<String>>, Option<String>, Overrides) {
        let o = Overrides {
            baud: self.baud,
            data_bits: self.data_bits,
            parity: self.parity,
            stop_bits: self.stop_bits,
            flow_control: self.flow_control,
            line_ending: self.line_ending,
            prompt: self.prompt,
            auto_reply: self.auto_reply,
            pagers: self.pagers,
            error_patterns: self.error_patterns,
            paging_off: self.paging_off,
            platform: self.platform,
            modes: self.modes,
            credentials: self.credentials,
            watches: self.watches,
            break_sequences: self.break_sequences,
            policy: self.policy,
        };
        (self.extends, self.description, o)
    }
}

impl RawPort {
    /// Its `policy` key, checked against the policies before it resolves.
    pub(super) fn policy(&self) -> Option<&Spanned<String>> {
        self.policy.as_ref()
    }

    /// Its `device`, its `preset` and the keys it overrides (take
    /// `down_after` and `power` first: only a port has them).
    pub(super) fn split(self) -> (Spanned<String>, Option<Spanned<String>>, Overrides) {
        let o = Overrides {
            baud: self.baud,
            data_bits: self.data_bits,
            parity: self.parity,
            stop_bits: self.stop_bits,
            flow_control: self.flow_control,
            line_ending: self.line_ending,
            prompt: self.prompt,
            auto_reply: self.auto_reply,
            pagers: self.pagers,
            error_patterns: self.error_patterns,
            paging_off: self.paging_off,
            platform: self.platform,
            modes: self.modes,
            credentials: self.credentials,
            watches: self.watches,
            break_sequences: self.break_sequences,
            policy: self.policy,
        };
        (self.device, self.preset, o)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("16MiB"), Ok(16 << 20));
        assert_eq!(parse_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4096B"), Ok(4096));
        assert_eq!(parse_size("1MB"), Ok(1_000_000));
        assert_eq!(parse_size("64kb"), Ok(64_000));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1 GB"), Ok(1_000_000_000));
        assert_eq!(parse_size("8K"), Ok(8192));
        assert_eq!(parse_size("1.5MiB"), Ok(3 << 19));
        assert_eq!(parse_size(" 2M "), Ok(2 << 20));
        for junk in ["", "MiB", "1XB", "one", "1.2.3KiB", "-1", "1MiB2", "0.3B"] {
            let e = parse_size(junk).expect_err(junk);
            assert!(e.contains(&format!("{junk:?}")), "{e}");
        }
        assert!(
            parse_size("1XB")
                .unwrap_err()
                .contains("unknown unit \"XB\"")
        );
        assert!(
            parse_size("99999999999999GiB")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn retention_as_integer() {
        assert_eq!(
            parse("[server]\nretention = 65536\n").server.retention,
            65536
        );
    }

    #[test]
    fn unknown_keys() {
        assert_error(
            "[ports.a]\ndevice = \"/dev/ttyUSB0\"\nbauds = 9600\n",
            "3:1",
            &["ports.a: unknown field `bauds`, expected one of", "`baud`"],
        );
        assert_error(
            "[server]\nretention = 65536\nlog_maxx = 3\n",
            "3:1",
            &["server: unknown field `log_maxx`"],
        );
        assert_error("auth = 1\n", "1:1", &["unknown field `auth`"]);
        assert_error(
            "[presets.x]\nextend = \"linux\"\n",
            "2:1",
            &["presets.x: unknown field `extend`", "`extends`"],
        );
        assert_error(
            "[[tokens]]\nname = \"a\"\nsecret_file = \"/s\"\nports = [\"*\"]\nrole = \"admin\"\n",
            "5:1",
            &["tokens[0]: unknown field `role`"],
        );
    }

    #[test]
    fn wrong_types() {
        assert_error(
            "[ports.a]\ndevice = \"/dev/ttyUSB0\"\nbaud = \"9600\"\n",
            "3:8",
            &["ports.a.baud: invalid type: string \"9600\", expected u32"],
        );
        assert_error(
            "[server]\nallow_adhoc = \"yes\"\n",
            "2:15",
            &["server.allow_adhoc: invalid type"],
        );
        assert_error(
            "[ports.a]\ndevice = \"/dev/ttyUSB0\"\nparity = \"Even\"\n",
            "3:10",
            &["ports.a.parity: unknown variant `Even`", "`even`"],
        );
        assert_error(
            "[ports.a]\ndevice = \"/dev/ttyUSB0\"\nauto_reply = { \"--More--\" = 32 }\n",
            "3:29",
            &["ports.a.auto_reply: invalid type: integer `32`"],
        );
        assert_error(
            "[ports.a]\ndevice = \"/dev/ttyUSB0\"\ndata_bits = 300\n",
            "3:13",
            &["ports.a.data_bits: invalid value: integer `300`"],
        );
        assert_error(
            "[ports.a]\nbaud = 9600\n",
            "1:1",
            &["ports.a: missing field `device`"],
        );
        assert_error(
            "[[tokens]]\nname = \"a\"\nsecret_file = \"/s\"\nports = [\"*\"]\naccess = \"root\"\n",
            "5:10",
            &[
                "tokens[0].access: unknown variant `root`",
                "`read`, `write`",
            ],
        );
    }
}
