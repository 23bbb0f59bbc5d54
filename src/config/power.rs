//! Power controllers (`[power.NAME]`: a PDU or UPS that switches outlets,
//! reached by its driver's protocol) and the outlets a port names
//! (`power = "pdu1:4"`, or a list for a device with two supplies).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use toml::Spanned;

use super::checks::{check_name, host_and_port};
use super::diagnostics::{ConfigError, Source, toml_key};
pub use super::power_secret::PowerSecret;
use super::raw::{RawOutlets, RawPower};

/// How long a controller has to answer one exchange, unless `deadline`
/// says otherwise.
pub const DEFAULT_POWER_DEADLINE: Duration = Duration::from_secs(5);
/// How long an outlet rests between two switching calls, unless
/// `min_interval` says otherwise: a flood of calls must not wear out a
/// relay or keep a device from booting.
pub const DEFAULT_MIN_INTERVAL: Duration = Duration::from_secs(10);
/// The NUT server's port (RFC 9271).
pub const NUT_PORT: u16 = 3493;

/// How a controller is reached, by driver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "driver", rename_all = "lowercase")]
pub enum PowerDriverConfig {
    /// A NUT server (`upsd`, RFC 9271) and the device it serves.
    Nut {
        /// `host:port` of the server.
        address: String,
        /// The device's name on the server (`upsc NAME@host`).
        ups: String,
        /// The `upsd.users` user allowed the outlet commands.
        username: Option<String>,
        /// Its password, read from `password_file`.
        #[serde(skip)]
        password: Option<PowerSecret>,
    },
    /// A switched PDU's SNMP agent (v2c or v3 authPriv).
    Snmp(super::power_snmp::SnmpConfig),
    /// A server's BMC over Redfish: an outlet is one of its systems.
    Redfish(super::power_bmc::RedfishConfig),
    /// A server's BMC over IPMI v2.0 LAN (RMCP+): its chassis power.
    Ipmi(super::power_bmc::IpmiConfig),
}

/// One `[power.NAME]` controller, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PowerController {
    /// Its name, as ports name it (`pdu1` of `pdu1:4`).
    pub name: String,
    /// How it is reached.
    #[serde(flatten)]
    pub driver: PowerDriverConfig,
    /// How long one exchange with it may take before it is an error
    /// naming it.
    pub deadline: Duration,
    /// How long an outlet rests between two switching calls.
    pub min_interval: Duration,
}

impl PowerController {
    /// The driver's name, as the config spells it.
    pub fn driver_name(&self) -> &'static str {
        match self.driver {
            PowerDriverConfig::Nut { .. } => "nut",
            PowerDriverConfig::Snmp(_) => "snmp",
            PowerDriverConfig::Redfish(_) => "redfish",
            PowerDriverConfig::Ipmi(_) => "ipmi",
        }
    }

    /// Where it is reached, for messages and `check-config`.
    pub fn address(&self) -> String {
        match &self.driver {
            PowerDriverConfig::Nut { address, ups, .. } => format!("{ups}@{address}"),
            PowerDriverConfig::Snmp(s) => s.who(),
            PowerDriverConfig::Redfish(r) => r.url.clone(),
            PowerDriverConfig::Ipmi(i) => i.address(),
        }
    }
}

/// One outlet of a controller, as a port names it (`pdu1:4`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct OutletRef {
    /// The controller's name.
    pub controller: String,
    /// The outlet on it (NUT: its number).
    pub outlet: String,
}

impl fmt::Display for OutletRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.controller, self.outlet)
    }
}

/// The drivers a controller may name, and those this build has.
const DRIVERS: [&str; 4] = ["nut", "redfish", "snmp", "ipmi"];

/// Reads a duration key of a controller: from 100 ms to 10 minutes.
fn duration(
    value: &Option<Spanned<String>>,
    key: &str,
    default: Duration,
    src: &Source,
) -> Result<Duration, ConfigError> {
    let Some(value) = value else {
        return Ok(default);
    };
    humantime::parse_duration(value.get_ref())
        .ok()
        .filter(|d| (Duration::from_millis(100)..=Duration::from_secs(600)).contains(d))
        .ok_or_else(|| {
            src.error(
                value.span(),
                format!(
                    "{key}: {:?} is not a duration from 100ms to 10m, e.g. \"5s\"",
                    value.get_ref()
                ),
            )
        })
}

/// Checks the `[power.NAME]` tables and reads their secret files.
pub(super) fn resolve_power(
    raw: BTreeMap<Spanned<String>, RawPower>,
    src: &Source,
) -> Result<BTreeMap<String, PowerController>, ConfigError> {
    let mut controllers = BTreeMap::new();
    for (name, p) in raw {
        let path = format!("power.{}", toml_key(name.get_ref()));
        check_name(name.get_ref()).map_err(|e| {
            src.error(
                name.span(),
                format!("power: bad controller name {:?}: {e}", name.get_ref()),
            )
        })?;
        let deadline = duration(
            &p.deadline,
            &format!("{path}.deadline"),
            DEFAULT_POWER_DEADLINE,
            src,
        )?;
        let min_interval = duration(
            &p.min_interval,
            &format!("{path}.min_interval"),
            DEFAULT_MIN_INTERVAL,
            src,
        )?;
        let driver = match p.driver.get_ref().as_str() {
            "nut" => nut(&p, &path, src)?,
            "snmp" => PowerDriverConfig::Snmp(super::power_snmp::snmp(&p, &path, src)?),
            "redfish" => PowerDriverConfig::Redfish(super::power_bmc::redfish(&p, &path, src)?),
            "ipmi" => PowerDriverConfig::Ipmi(super::power_bmc::ipmi(&p, &path, src)?),
            other => {
                return Err(src.error(
                    p.driver.span(),
                    format!(
                        "{path}.driver: unknown driver {:?}; use one of {}",
                        crate::error::shown(other),
                        DRIVERS.join(", ")
                    ),
                ));
            }
        };
        controllers.insert(
            name.into_inner(),
            PowerController {
                name: String::new(),
                driver,
                deadline,
                min_interval,
            },
        );
    }
    for (name, c) in controllers.iter_mut() {
        c.name = name.clone();
    }
    Ok(controllers)
}

/// A `driver = "nut"` controller's keys.
fn nut(p: &RawPower, path: &str, src: &Source) -> Result<PowerDriverConfig, ConfigError> {
    if let Some((key, span)) = super::power_snmp::snmp_key(p) {
        return Err(src.error(
            span,
            format!("{path}.{key}: is an SNMP key; a NUT controller takes address, ups, username and password_file"),
        ));
    }
    let address = p.address.as_ref().ok_or_else(|| {
        src.error(
            p.driver.span(),
            format!(
                "{path}: a NUT controller needs address = \"host\" or \"host:port\" of its upsd"
            ),
        )
    })?;
    let address = host_and_port(address.get_ref(), NUT_PORT).ok_or_else(|| {
        src.error(
            address.span(),
            format!("{path}.address: give the NUT server as \"host\" or \"host:port\", e.g. \"10.0.0.5:3493\""),
        )
    })?;
    let ups = p.ups.as_ref().ok_or_else(|| {
        src.error(
            p.driver.span(),
            format!("{path}: a NUT controller needs ups = \"NAME\", the device's name on the server (upsc -l lists them)"),
        )
    })?;
    if !nut_word(ups.get_ref()) {
        return Err(src.error(
            ups.span(),
            format!("{path}.ups: use the device's name as upsd.conf spells it (letters, digits, '_', '-', '.')"),
        ));
    }
    let username = p.username.as_ref().map(|u| (u.get_ref(), u.span()));
    if let Some((user, span)) = &username
        && !nut_word(user)
    {
        return Err(src.error(
            span.clone(),
            format!("{path}.username: use the user's name as upsd.users spells it (letters, digits, '_', '-', '.')"),
        ));
    }
    let password = match &p.password_file {
        Some(file) => {
            if username.is_none() {
                return Err(src.error(
                    file.span(),
                    format!("{path}.password_file: give username too: upsd asks for both"),
                ));
            }
            let text = super::tokens::read_private(file.get_ref(), "password_file", src)
                .map_err(|e| src.error(file.span(), format!("{path}.password_file: {e}")))?;
            let text = String::from_utf8(text)
                .ok()
                .filter(|t| !t.contains(['\r', '\n', '"', '\\']))
                .ok_or_else(|| {
                    src.error(
                        file.span(),
                        format!("{path}.password_file: the password must be one line of text without quotes or backslashes"),
                    )
                })?;
            Some(PowerSecret::new(text))
        }
        None if username.is_some() => {
            return Err(src.error(
                p.driver.span(),
                format!("{path}: username needs password_file, a file private to the daemon's user holding the password"),
            ));
        }
        None => None,
    };
    Ok(PowerDriverConfig::Nut {
        address,
        ups: ups.get_ref().clone(),
        username: username.map(|(u, _)| u.clone()),
        password,
    })
}

/// Whether `word` is a NUT name: no spaces, quotes or control bytes that
/// would change the line it is sent on.
fn nut_word(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 64
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Resolves a port's `power` (at `path.power`): each outlet names a
/// controller of `controllers` and an outlet its driver can address.
pub(super) fn resolve_outlets(
    raw: Option<Spanned<RawOutlets>>,
    path: &str,
    controllers: &BTreeMap<String, PowerController>,
    src: &Source,
) -> Result<Vec<OutletRef>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    let span = raw.span();
    let key = format!("{path}.power");
    let error = |m: String| src.error(span.clone(), format!("{key}: {m}"));
    let written = match raw.into_inner() {
        RawOutlets::One(o) => vec![o],
        RawOutlets::Many(list) => list,
    };
    if written.is_empty() || written.len() > 8 {
        return Err(error(
            "name one to eight outlets, e.g. \"pdu1:4\" or [\"pdu1:4\", \"pdu2:4\"]".into(),
        ));
    }
    let mut outlets: Vec<OutletRef> = Vec::new();
    for text in written {
        let Some((controller, outlet)) = text.split_once(':') else {
            return Err(error(format!(
                "{} is no outlet: write CONTROLLER:OUTLET, e.g. \"pdu1:4\"",
                crate::error::shown(&text)
            )));
        };
        let Some(c) = controllers.get(controller) else {
            let known: Vec<&str> = controllers.keys().map(String::as_str).collect();
            return Err(error(format!(
                "no [power.{}] controller; {}",
                crate::error::label(controller),
                if known.is_empty() {
                    "add one, e.g. [power.pdu1] with driver = \"nut\"".to_owned()
                } else {
                    format!("the config has: {}", known.join(", "))
                }
            )));
        };
        let fits = match c.driver {
            PowerDriverConfig::Nut { .. } | PowerDriverConfig::Snmp(_) => outlet
                .parse::<u32>()
                .is_ok_and(|n| n > 0 && !outlet.starts_with('0')),
            PowerDriverConfig::Redfish(_) => super::power_bmc::redfish_outlet_fits(outlet),
            PowerDriverConfig::Ipmi(_) => super::power_bmc::ipmi_outlet_fits(outlet),
        };
        if !fits {
            let hint = match c.driver {
                PowerDriverConfig::Redfish(_) => super::power_bmc::redfish_outlet_hint(controller),
                PowerDriverConfig::Ipmi(_) => super::power_bmc::ipmi_outlet_hint(controller),
                _ => format!("its outlets are numbers, e.g. \"{controller}:4\""),
            };
            return Err(error(format!(
                "{} is no outlet of the {} controller {controller}: {hint}",
                crate::error::shown(outlet),
                c.driver_name()
            )));
        }
        let o = OutletRef {
            controller: controller.to_owned(),
            outlet: outlet.to_owned(),
        };
        if outlets.contains(&o) {
            return Err(error(format!("{o} is named twice")));
        }
        outlets.push(o);
    }
    Ok(outlets)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

    #[test]
    fn outlets_name_known_controllers_at_their_place() {
        let head = "[power.pdu1]\ndriver = \"nut\"\naddress = \"127.0.0.1\"\nups = \"pdu\"\n";
        let c = parse(&format!(
            "{head}[ports.a]\ndevice = \"/dev/ttyUSB0\"\npower = [\"pdu1:4\", \"pdu1:5\"]\n"
        ));
        assert_eq!(c.ports["a"].power.len(), 2);
        assert_eq!(c.ports["a"].power[1].to_string(), "pdu1:5");
        assert_eq!(c.power["pdu1"].address(), "pdu@127.0.0.1:3493");
        let summary = c.summary().to_string();
        assert!(
            summary.contains("power pdu1: driver=nut pdu@127.0.0.1:3493 deadline=5s min_interval=10s outlets: a=pdu1:4, a=pdu1:5"),
            "{summary}"
        );
        assert_error(
            &format!("{head}[ports.a]\ndevice = \"/dev/ttyUSB0\"\npower = \"pdu2:4\"\n"),
            "7:9",
            &["ports.a.power: no [power.pdu2] controller; the config has: pdu1"],
        );
        for bad in ["\"pdu1\"", "\"pdu1:x\"", "\"pdu1:0\"", "[]"] {
            assert_error(
                &format!("{head}[ports.a]\ndevice = \"/dev/ttyUSB0\"\npower = {bad}\n"),
                "7:9",
                &["ports.a.power: "],
            );
        }
        assert_error(
            "[power.p]\ndriver = \"apc\"\n",
            "2:10",
            &["unknown driver", "nut, redfish, snmp, ipmi"],
        );
        assert_error(
            &format!("{head}deadline = \"forever\"\n"),
            "5:12",
            &["power.pdu1.deadline: \"forever\" is not a duration"],
        );
        assert_error(
            &format!("{head}community_file = \"c\"\n"),
            "5:18",
            &["power.pdu1.community_file: is an SNMP key"],
        );
        assert_error(
            &format!("{head}username = \"admin\"\n"),
            "2:10",
            &["username needs password_file"],
        );
    }
}
