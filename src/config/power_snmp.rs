//! A `driver = "snmp"` controller (a switched PDU reached by SNMP): its
//! agent's address, how it is logged in (v2c with a community, or v3 USM
//! with authentication and privacy, every secret in a private file) and
//! the outlet profile that says which OIDs switch and report an outlet.

use std::path::PathBuf;

use serde::Serialize;
use toml::Spanned;

use super::checks::host_and_port;
use super::diagnostics::{ConfigError, Source};
use super::power_secret::PowerSecret;
use super::raw::RawPower;

/// The SNMP agent's port.
pub const SNMP_PORT: u16 = 161;

/// How the daemon logs in to an SNMP agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "version")]
pub enum SnmpSecurity {
    /// SNMPv2c: the community, read from `community_file`.
    #[serde(rename = "2c")]
    V2c {
        /// The community with write access to the outlet table.
        #[serde(skip)]
        community: PowerSecret,
    },
    /// SNMPv3, USM authPriv.
    #[serde(rename = "3")]
    V3 {
        /// The USM user.
        username: String,
        /// How its messages are authenticated.
        auth_protocol: SnmpAuth,
        /// Its authentication passphrase, from `auth_password_file`.
        #[serde(skip)]
        auth_password: PowerSecret,
        /// Its privacy passphrase (AES-128), from `priv_password_file`.
        #[serde(skip)]
        priv_password: PowerSecret,
    },
}

/// The v3 authentication protocols a controller may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SnmpAuth {
    /// HMAC-SHA-96 (`sha`, net-snmp's `SHA`).
    Sha,
    /// HMAC-SHA-224 (RFC 7860).
    Sha224,
    /// HMAC-SHA-256 (RFC 7860).
    Sha256,
    /// HMAC-SHA-384 (RFC 7860).
    Sha384,
    /// HMAC-SHA-512 (RFC 7860).
    Sha512,
}

/// The names `auth_protocol` takes, in the order messages list them.
const AUTH_NAMES: [(&str, SnmpAuth); 5] = [
    ("sha", SnmpAuth::Sha),
    ("sha224", SnmpAuth::Sha224),
    ("sha256", SnmpAuth::Sha256),
    ("sha384", SnmpAuth::Sha384),
    ("sha512", SnmpAuth::Sha512),
];

/// Which OIDs report and switch an outlet (each with the outlet's number
/// appended) and the INTEGER values that mean on and off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutletOids {
    /// The profile's name, as `profile` spells it.
    pub profile: &'static str,
    /// The column read for an outlet's state, dotted, without the outlet.
    pub state_oid: String,
    /// The column written to switch it.
    pub control_oid: String,
    /// What the state reads and the control is written when on.
    pub on_value: i32,
    /// The same for off.
    pub off_value: i32,
}

/// APC PowerNet-MIB, switched rack PDUs: `rPDUOutletStatusOutletState`
/// read (1 on, 2 off), `rPDUOutletControlOutletCommand` written
/// (1 immediateOn, 2 immediateOff).
const APC: (&str, &str) = (
    ".1.3.6.1.4.1.318.1.1.12.3.5.1.1.4",
    ".1.3.6.1.4.1.318.1.1.12.3.3.1.1.4",
);
/// APC PowerNet-MIB, the older MasterSwitch: `sPDUOutletCtl`, read and
/// written (1 outletOn, 2 outletOff).
const APC_MASTERSWITCH: &str = ".1.3.6.1.4.1.318.1.1.4.4.2.1.3";

/// The profiles `profile` takes.
const PROFILES: [&str; 3] = ["apc", "apc-masterswitch", "generic"];

/// The SNMP controller's settings, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnmpConfig {
    /// `host:port` of the agent.
    pub address: String,
    /// How the daemon logs in.
    #[serde(flatten)]
    pub security: SnmpSecurity,
    /// Which OIDs its outlets are.
    pub outlets: OutletOids,
}

impl SnmpConfig {
    /// How it is reached, for messages: `v2c@host:port`, or the v3 user
    /// `user@host:port`.
    pub fn who(&self) -> String {
        match &self.security {
            SnmpSecurity::V2c { .. } => format!("v2c@{}", self.address),
            SnmpSecurity::V3 { username, .. } => format!("{username}@{}", self.address),
        }
    }
}

/// Reads a secret file for `key` of the controller at `path`: one line.
fn secret(
    file: &Spanned<PathBuf>,
    key: &str,
    path: &str,
    src: &Source,
) -> Result<PowerSecret, ConfigError> {
    let text = super::tokens::read_private(file.get_ref(), key, src)
        .map_err(|e| src.error(file.span(), format!("{path}.{key}: {e}")))?;
    String::from_utf8(text)
        .ok()
        .filter(|t| !t.contains(['\r', '\n']))
        .map(PowerSecret)
        .ok_or_else(|| {
            src.error(
                file.span(),
                format!("{path}.{key}: the secret must be one line of text"),
            )
        })
}

/// A v3 passphrase: USM needs at least 8 bytes (RFC 3414, 11.2).
fn passphrase(
    file: &Option<Spanned<PathBuf>>,
    key: &str,
    path: &str,
    p: &RawPower,
    src: &Source,
) -> Result<PowerSecret, ConfigError> {
    let file = file.as_ref().ok_or_else(|| {
        src.error(
            p.driver.span(),
            format!("{path}: an SNMPv3 controller needs {key}, a file private to the daemon's user holding the passphrase"),
        )
    })?;
    let s = secret(file, key, path, src)?;
    if s.expose().len() < 8 {
        return Err(src.error(
            file.span(),
            format!("{path}.{key}: an SNMPv3 passphrase has at least 8 characters"),
        ));
    }
    Ok(s)
}

/// The dotted OID of `key`, checked: numbers only, as the PDU's MIB
/// gives them (no names: the daemon loads no MIB).
fn oid(value: &Spanned<String>, key: &str, src: &Source) -> Result<String, ConfigError> {
    let text = value.get_ref().trim();
    let arcs: Vec<&str> = text.trim_start_matches('.').split('.').collect();
    if arcs.len() < 2
        || arcs.len() > 100
        || !arcs
            .iter()
            .all(|a| !a.is_empty() && a.len() <= 10 && a.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(src.error(
            value.span(),
            format!(
                "{key}: {} is no numeric OID; write it dotted without the outlet, e.g. \".1.3.6.1.4.1.318.1.1.12.3.3.1.1.4\"",
                crate::error::shown(text)
            ),
        ));
    }
    Ok(format!(".{}", arcs.join(".")))
}

/// An INTEGER value key of the generic profile.
fn value(
    v: &Option<Spanned<i64>>,
    key: &str,
    p: &RawPower,
    src: &Source,
) -> Result<i32, ConfigError> {
    let v = v.as_ref().ok_or_else(|| {
        src.error(
            p.driver.span(),
            format!("{key}: the generic profile needs it, the INTEGER the PDU's MIB gives for it"),
        )
    })?;
    i32::try_from(*v.get_ref())
        .map_err(|_| src.error(v.span(), format!("{key}: an SNMP INTEGER is 32 bits")))
}

/// The outlet profile of `profile` (and, for `generic`, its keys).
fn outlets(p: &RawPower, path: &str, src: &Source) -> Result<OutletOids, ConfigError> {
    let profile = p.profile.as_ref().ok_or_else(|| {
        src.error(
            p.driver.span(),
            format!(
                "{path}: an SNMP controller needs profile = one of {}",
                PROFILES.join(", ")
            ),
        )
    })?;
    let generic = profile.get_ref() == "generic";
    if !generic {
        for (key, set) in [
            ("state_oid", p.state_oid.as_ref().map(|v| v.span())),
            ("control_oid", p.control_oid.as_ref().map(|v| v.span())),
            ("on_value", p.on_value.as_ref().map(|v| v.span())),
            ("off_value", p.off_value.as_ref().map(|v| v.span())),
        ] {
            if let Some(span) = set {
                return Err(src.error(
                    span,
                    format!("{path}.{key}: only profile = \"generic\" names its OIDs and values; the {} profile has its own", crate::error::label(profile.get_ref())),
                ));
            }
        }
    }
    let fixed = |profile, (state, control): (&str, &str)| OutletOids {
        profile,
        state_oid: state.to_owned(),
        control_oid: control.to_owned(),
        on_value: 1,
        off_value: 2,
    };
    Ok(match profile.get_ref().as_str() {
        "apc" => fixed("apc", APC),
        "apc-masterswitch" => fixed("apc-masterswitch", (APC_MASTERSWITCH, APC_MASTERSWITCH)),
        "generic" => {
            fn need<'a>(
                v: &'a Option<Spanned<String>>,
                key: &str,
                at: &Spanned<String>,
                path: &str,
                src: &Source,
            ) -> Result<&'a Spanned<String>, ConfigError> {
                v.as_ref().ok_or_else(|| {
                    src.error(
                        at.span(),
                        format!("{path}: the generic profile needs {key}, the numeric OID of the outlet column without the outlet"),
                    )
                })
            }
            let state_oid = oid(
                need(&p.state_oid, "state_oid", profile, path, src)?,
                &format!("{path}.state_oid"),
                src,
            )?;
            let control_oid = oid(
                need(&p.control_oid, "control_oid", profile, path, src)?,
                &format!("{path}.control_oid"),
                src,
            )?;
            let on_value = value(&p.on_value, &format!("{path}.on_value"), p, src)?;
            let off_value = value(&p.off_value, &format!("{path}.off_value"), p, src)?;
            if on_value == off_value {
                return Err(src.error(
                    profile.span(),
                    format!("{path}: on_value and off_value are both {on_value}; give the two the PDU's MIB names"),
                ));
            }
            OutletOids {
                profile: "generic",
                state_oid,
                control_oid,
                on_value,
                off_value,
            }
        }
        other => {
            return Err(src.error(
                profile.span(),
                format!(
                    "{path}.profile: unknown profile {}; use one of {}",
                    crate::error::shown(other),
                    PROFILES.join(", ")
                ),
            ));
        }
    })
}

/// The first key only an SNMP controller takes that `p` sets, and where
/// (for the other drivers, which have no use for one).
pub(super) fn snmp_key(p: &RawPower) -> Option<(&'static str, std::ops::Range<usize>)> {
    [
        ("profile", p.profile.as_ref().map(|v| v.span())),
        (
            "community_file",
            p.community_file.as_ref().map(|v| v.span()),
        ),
        ("auth_protocol", p.auth_protocol.as_ref().map(|v| v.span())),
        (
            "auth_password_file",
            p.auth_password_file.as_ref().map(|v| v.span()),
        ),
        ("priv_protocol", p.priv_protocol.as_ref().map(|v| v.span())),
        (
            "priv_password_file",
            p.priv_password_file.as_ref().map(|v| v.span()),
        ),
        ("state_oid", p.state_oid.as_ref().map(|v| v.span())),
        ("control_oid", p.control_oid.as_ref().map(|v| v.span())),
        ("on_value", p.on_value.as_ref().map(|v| v.span())),
        ("off_value", p.off_value.as_ref().map(|v| v.span())),
    ]
    .into_iter()
    .find_map(|(key, span)| span.map(|s| (key, s)))
}

/// A `driver = "snmp"` controller's keys.
pub(super) fn snmp(p: &RawPower, path: &str, src: &Source) -> Result<SnmpConfig, ConfigError> {
    for (key, set) in [
        ("ups", p.ups.as_ref().map(|v| v.span())),
        ("password_file", p.password_file.as_ref().map(|v| v.span())),
    ] {
        if let Some(span) = set {
            return Err(src.error(
                span,
                format!("{path}.{key}: is a NUT key; an SNMP controller takes community_file (v2c), or username, auth_protocol, auth_password_file and priv_password_file (v3)"),
            ));
        }
    }
    let address = p.address.as_ref().ok_or_else(|| {
        src.error(
            p.driver.span(),
            format!("{path}: an SNMP controller needs address = \"host\" or \"host:port\" of the PDU's agent"),
        )
    })?;
    let address = host_and_port(address.get_ref(), SNMP_PORT).ok_or_else(|| {
        src.error(
            address.span(),
            format!("{path}.address: give the PDU's agent as \"host\" or \"host:port\", e.g. \"10.0.0.6\" or \"10.0.0.6:161\""),
        )
    })?;
    let security = match (&p.community_file, &p.username) {
        (Some(file), None) => {
            for (key, set) in [
                ("auth_protocol", p.auth_protocol.as_ref().map(|v| v.span())),
                (
                    "auth_password_file",
                    p.auth_password_file.as_ref().map(|v| v.span()),
                ),
                ("priv_protocol", p.priv_protocol.as_ref().map(|v| v.span())),
                (
                    "priv_password_file",
                    p.priv_password_file.as_ref().map(|v| v.span()),
                ),
            ] {
                if let Some(span) = set {
                    return Err(src.error(
                        span,
                        format!("{path}.{key}: is for SNMPv3, with username; a v2c controller (community_file) has no use for it"),
                    ));
                }
            }
            SnmpSecurity::V2c {
                community: secret(file, "community_file", path, src)?,
            }
        }
        (Some(file), Some(_)) => {
            return Err(src.error(
                file.span(),
                format!("{path}.community_file: give community_file (SNMPv2c) or username (SNMPv3), not both"),
            ));
        }
        (None, Some(user)) => {
            let name = user.get_ref();
            if name.is_empty() || name.len() > 32 || !name.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(src.error(
                    user.span(),
                    format!("{path}.username: the USM user as the agent knows it: 1 to 32 printable characters without spaces"),
                ));
            }
            let auth = p.auth_protocol.as_ref().ok_or_else(|| {
                src.error(
                    user.span(),
                    format!("{path}: an SNMPv3 controller needs auth_protocol = \"sha\" or \"sha256\" (or sha224, sha384, sha512)"),
                )
            })?;
            let auth_protocol = AUTH_NAMES
                .iter()
                .find(|(n, _)| auth.get_ref().eq_ignore_ascii_case(n) || auth.get_ref().replace('-', "").eq_ignore_ascii_case(n))
                .map(|(_, a)| *a)
                .ok_or_else(|| {
                    src.error(
                        auth.span(),
                        format!(
                            "{path}.auth_protocol: unknown protocol {}; use one of {} (MD5 is not offered)",
                            crate::error::shown(auth.get_ref()),
                            AUTH_NAMES.map(|(n, _)| n).join(", ")
                        ),
                    )
                })?;
            if let Some(privacy) = &p.priv_protocol
                && !matches!(
                    privacy.get_ref().to_ascii_lowercase().as_str(),
                    "aes" | "aes128" | "aes-128"
                )
            {
                return Err(src.error(
                    privacy.span(),
                    format!("{path}.priv_protocol: use \"aes\" (AES-128, RFC 3826), the privacy every SNMPv3 agent has; DES is not offered"),
                ));
            }
            SnmpSecurity::V3 {
                username: name.clone(),
                auth_protocol,
                auth_password: passphrase(
                    &p.auth_password_file,
                    "auth_password_file",
                    path,
                    p,
                    src,
                )?,
                priv_password: passphrase(
                    &p.priv_password_file,
                    "priv_password_file",
                    path,
                    p,
                    src,
                )?,
            }
        }
        (None, None) => {
            return Err(src.error(
                p.driver.span(),
                format!("{path}: an SNMP controller needs community_file (SNMPv2c: a private file holding the write community) or username with auth_protocol, auth_password_file and priv_password_file (SNMPv3)"),
            ));
        }
    };
    Ok(SnmpConfig {
        address,
        security,
        outlets: outlets(p, path, src)?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::power::PowerDriverConfig;
    use super::super::test_support::*;
    use super::*;

    /// The config of `power` (a `[power.pdu2]` body) and a port fed by
    /// its outlet 3, parsed in the secrets' directory.
    fn parsed(power: &str) -> Result<crate::config::Config, crate::config::ConfigError> {
        let (dir, file) = secrets();
        write_private(&dir.path().join("community"), "private-rw\n");
        write_private(&dir.path().join("authpass"), "auth-pass-123\n");
        write_private(&dir.path().join("privpass"), "priv-pass-456\n");
        write_private(&dir.path().join("short"), "short\n");
        let r = parse_in(
            &file,
            &format!(
                "[power.pdu2]\ndriver = \"snmp\"\n{power}[ports.a]\ndevice = \"/dev/ttyUSB0\"\npower = \"pdu2:3\"\n"
            ),
        );
        drop(dir);
        r
    }

    fn error_of(power: &str) -> String {
        let e = parsed(power).expect_err("an error");
        format!("{}:{}: {}", e.line, e.col, e.message)
    }

    #[test]
    fn v2c_and_v3_with_each_profile() {
        let c =
            parsed("address = \"10.0.0.6\"\nprofile = \"apc\"\ncommunity_file = \"community\"\n")
                .unwrap();
        let p = &c.power["pdu2"];
        assert_eq!(p.driver_name(), "snmp");
        assert_eq!(p.address(), "v2c@10.0.0.6:161");
        let PowerDriverConfig::Snmp(s) = &p.driver else {
            panic!("{p:?}")
        };
        assert_eq!(
            s.security,
            SnmpSecurity::V2c {
                community: PowerSecret("private-rw".into())
            }
        );
        assert_eq!(s.outlets.control_oid, ".1.3.6.1.4.1.318.1.1.12.3.3.1.1.4");
        assert_eq!(s.outlets.state_oid, ".1.3.6.1.4.1.318.1.1.12.3.5.1.1.4");
        assert!(!format!("{p:?}").contains("private-rw"));
        assert_eq!(c.ports["a"].power[0].to_string(), "pdu2:3");

        let c = parsed(
            "address = \"pdu.lab:1161\"\nprofile = \"apc-masterswitch\"\nusername = \"gate\"\nauth_protocol = \"SHA-256\"\n\
             auth_password_file = \"authpass\"\npriv_protocol = \"AES\"\npriv_password_file = \"privpass\"\n",
        )
        .unwrap();
        let p = &c.power["pdu2"];
        assert_eq!(p.address(), "gate@pdu.lab:1161");
        let PowerDriverConfig::Snmp(s) = &p.driver else {
            panic!("{p:?}")
        };
        let SnmpSecurity::V3 {
            auth_protocol,
            priv_password,
            ..
        } = &s.security
        else {
            panic!("{s:?}")
        };
        assert_eq!(*auth_protocol, SnmpAuth::Sha256);
        assert_eq!(priv_password.expose(), "priv-pass-456");
        assert_eq!(s.outlets.state_oid, s.outlets.control_oid);

        let c = parsed(
            "address = \"10.0.0.6\"\nprofile = \"generic\"\ncommunity_file = \"community\"\n\
             state_oid = \"1.3.6.1.4.1.13742.6.4.1.2.1.3.1\"\ncontrol_oid = \".1.3.6.1.4.1.13742.6.4.1.2.1.2.1\"\non_value = 1\noff_value = 0\n",
        )
        .unwrap();
        let PowerDriverConfig::Snmp(s) = &c.power["pdu2"].driver else {
            panic!()
        };
        assert_eq!(s.outlets.state_oid, ".1.3.6.1.4.1.13742.6.4.1.2.1.3.1");
        assert_eq!((s.outlets.on_value, s.outlets.off_value), (1, 0));
    }

    #[test]
    fn mistakes_are_shown_at_their_place() {
        let v2c = "address = \"10.0.0.6\"\nprofile = \"apc\"\ncommunity_file = \"community\"\n";
        for (power, at, part) in [
            (
                "address = \"10.0.0.6\"\nprofile = \"apc\"\n",
                "2:10",
                "needs community_file (SNMPv2c",
            ),
            (
                "profile = \"apc\"\ncommunity_file = \"community\"\n",
                "2:10",
                "needs address",
            ),
            (
                "address = \"10.0.0.6\"\ncommunity_file = \"community\"\n",
                "2:10",
                "needs profile = one of apc, apc-masterswitch, generic",
            ),
            (
                "address = \"10.0.0.6\"\nprofile = \"raritan\"\ncommunity_file = \"community\"\n",
                "4:11",
                "unknown profile \"raritan\"",
            ),
            (
                &format!("{v2c}ups = \"pdu\"\n"),
                "6:7",
                "power.pdu2.ups: is a NUT key",
            ),
            (&format!("{v2c}username = \"gate\"\n"), "5:18", "not both"),
            (
                &format!("{v2c}auth_protocol = \"sha\"\n"),
                "6:17",
                "is for SNMPv3",
            ),
            (
                &format!("{v2c}state_oid = \".1.3\"\n"),
                "6:13",
                "only profile = \"generic\"",
            ),
            (
                "address = \"10.0.0.6\"\nprofile = \"apc\"\ncommunity_file = \"nope\"\n",
                "5:18",
                "cannot read the secret file",
            ),
            (
                "address = \"10.0.0.6 x\"\nprofile = \"apc\"\ncommunity_file = \"community\"\n",
                "3:11",
                "power.pdu2.address",
            ),
            (
                "address = \"h\"\nprofile = \"apc\"\nusername = \"gate\"\nauth_protocol = \"md5\"\nauth_password_file = \"authpass\"\npriv_password_file = \"privpass\"\n",
                "6:17",
                "unknown protocol \"md5\"",
            ),
            (
                "address = \"h\"\nprofile = \"apc\"\nusername = \"gate\"\nauth_protocol = \"sha\"\nauth_password_file = \"authpass\"\npriv_protocol = \"des\"\npriv_password_file = \"privpass\"\n",
                "8:17",
                "use \"aes\"",
            ),
            (
                "address = \"h\"\nprofile = \"apc\"\nusername = \"gate\"\nauth_protocol = \"sha\"\nauth_password_file = \"authpass\"\n",
                "2:10",
                "needs priv_password_file",
            ),
            (
                "address = \"h\"\nprofile = \"apc\"\nusername = \"gate\"\nauth_protocol = \"sha\"\nauth_password_file = \"short\"\npriv_password_file = \"privpass\"\n",
                "7:22",
                "at least 8 characters",
            ),
            (
                "address = \"h\"\nprofile = \"generic\"\ncommunity_file = \"community\"\nstate_oid = \".1.3.6.x\"\ncontrol_oid = \".1.3\"\non_value = 1\noff_value = 2\n",
                "6:13",
                "is no numeric OID",
            ),
            (
                "address = \"h\"\nprofile = \"generic\"\ncommunity_file = \"community\"\nstate_oid = \".1.3.6\"\non_value = 1\noff_value = 2\n",
                "4:11",
                "needs control_oid",
            ),
            (
                "address = \"h\"\nprofile = \"generic\"\ncommunity_file = \"community\"\nstate_oid = \".1.3.6\"\ncontrol_oid = \".1.3\"\non_value = 1\noff_value = 1\n",
                "4:11",
                "both 1",
            ),
            (
                "address = \"h\"\nprofile = \"generic\"\ncommunity_file = \"community\"\nstate_oid = \".1.3.6\"\ncontrol_oid = \".1.3\"\non_value = 4294967296\noff_value = 1\n",
                "8:12",
                "32 bits",
            ),
        ] {
            let e = error_of(power);
            assert!(
                e.starts_with(&format!("{at}: ")) && e.contains(part),
                "{power:?}: want {at} {part:?}, got {e}"
            );
        }
    }
}
