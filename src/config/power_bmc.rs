//! The keys of power controllers that are a server's BMC rather than a
//! PDU: `driver = "redfish"` (its base URL, `ca_file` for https) and
//! `driver = "ipmi"` (IPMI v2.0 over LAN, `host[:port]`), each with
//! `username` and `password_file`; and the outlets they address (a
//! Redfish system id, IPMI's one chassis).

use std::path::PathBuf;

use serde::Serialize;

use super::checks::next_to_config;
use super::diagnostics::{ConfigError, Source};
use super::power_secret::PowerSecret;
use super::raw::RawPower;

/// IPMI's RMCP port.
pub const IPMI_PORT: u16 = 623;
/// Most bytes of a Redfish system id.
const MAX_SYSTEM_ID: usize = 64;

/// A `driver = "redfish"` controller, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RedfishConfig {
    /// Its base URL, `https://host[:port]` (`http://` for a lab mock).
    pub url: String,
    /// The URL split: where to connect, whether over TLS.
    #[serde(skip)]
    pub endpoint: RedfishUrl,
    /// The BMC user.
    pub username: String,
    /// Its password, read from `password_file`.
    #[serde(skip)]
    pub password: PowerSecret,
    /// What an `https://` BMC's certificate must be signed by (the
    /// system's roots without it).
    pub ca_file: Option<PathBuf>,
}

/// A `driver = "ipmi"` controller, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpmiConfig {
    /// The BMC's host.
    pub host: String,
    /// Its RMCP port (623).
    pub port: u16,
    /// The RMCP+ cipher suite asked for (ipmitool's `-C`); `None`: the
    /// best the BMC lists.
    pub cipher_suite: Option<u8>,
    /// The BMC user.
    pub username: String,
    /// Its password, read from `password_file`.
    #[serde(skip)]
    pub password: PowerSecret,
}

impl IpmiConfig {
    /// `host:port`, IPv6 in brackets.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Where a Redfish BMC is, split from its base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedfishUrl {
    /// `https://`: TLS, the BMC's certificate checked.
    pub https: bool,
    /// The host (IPv6 without brackets).
    pub host: String,
    /// The TCP port (443 or 80 unless given).
    pub port: u16,
    /// The `Host` header: the URL's authority.
    pub authority: String,
}

/// The login both BMC drivers need: `username` and the password read
/// from `password_file` (one line, private to the daemon's user).
fn login(
    p: &RawPower,
    path: &str,
    driver: &str,
    src: &Source,
) -> Result<(String, PowerSecret), ConfigError> {
    let (Some(user), Some(file)) = (&p.username, &p.password_file) else {
        return Err(src.error(
            p.driver.span(),
            format!("{path}: a {driver} controller needs username = \"NAME\" and password_file = \"FILE\", a file private to the daemon's user holding the BMC user's password"),
        ));
    };
    let name = user.get_ref();
    if name.is_empty()
        || name.len() > 64
        || name.contains(':')
        || name.chars().any(|c| c.is_control())
    {
        return Err(src.error(
            user.span(),
            format!("{path}.username: give the BMC user's name: 1 to 64 characters, no ':' or control characters"),
        ));
    }
    let text = super::tokens::read_private(file.get_ref(), "password_file", src)
        .map_err(|e| src.error(file.span(), format!("{path}.password_file: {e}")))?;
    let text = String::from_utf8(text)
        .ok()
        .filter(|t| t.len() <= 128 && !t.chars().any(|c| c.is_control()))
        .ok_or_else(|| {
            src.error(
                file.span(),
                format!(
                    "{path}.password_file: the password must be one line of text, at most 128 bytes"
                ),
            )
        })?;
    Ok((name.clone(), PowerSecret::new(text)))
}

/// A `driver = "redfish"` controller's keys.
pub(super) fn redfish(
    p: &RawPower,
    path: &str,
    src: &Source,
) -> Result<RedfishConfig, ConfigError> {
    let address = p.address.as_ref().ok_or_else(|| {
        src.error(
            p.driver.span(),
            format!("{path}: a Redfish controller needs address = \"https://BMC\", its base URL"),
        )
    })?;
    let url = address.get_ref().trim();
    if url.contains('@') {
        return Err(src.error(
            address.span(),
            format!("{path}.address: credentials in the URL are refused; give username and password_file"),
        ));
    }
    let (https, host, port, rest, authority) = super::webhook::parse_url(url)
        .map_err(|e| src.error(address.span(), format!("{path}.address: {e}")))?;
    if !matches!(rest.as_str(), "/" | "/redfish/v1" | "/redfish/v1/") {
        return Err(src.error(
            address.span(),
            format!("{path}.address: give the BMC's base URL without a path, e.g. \"https://10.0.0.9\" (serialgate adds /redfish/v1)"),
        ));
    }
    let ca_file = match &p.ca_file {
        None => None,
        Some(file) if !https => {
            return Err(src.error(
                file.span(),
                format!("{path}.ca_file: the address is http://, which uses no certificate; use https:// or remove ca_file"),
            ));
        }
        Some(file) => {
            let full = next_to_config(file.get_ref(), src);
            crate::tls::files::read_roots(&full)
                .map_err(|e| src.error(file.span(), format!("{path}.ca_file: {e}")))?;
            Some(full)
        }
    };
    let (username, password) = login(p, path, "Redfish", src)?;
    Ok(RedfishConfig {
        url: format!("{}://{authority}", if https { "https" } else { "http" }),
        endpoint: RedfishUrl {
            https,
            host,
            port,
            authority,
        },
        username,
        password,
        ca_file,
    })
}

/// A `driver = "ipmi"` controller's keys.
pub(super) fn ipmi(p: &RawPower, path: &str, src: &Source) -> Result<IpmiConfig, ConfigError> {
    let address = p.address.as_ref().ok_or_else(|| {
        src.error(
            p.driver.span(),
            format!(
                "{path}: an IPMI controller needs address = \"host\" or \"host:port\" of its BMC"
            ),
        )
    })?;
    let text = address.get_ref().trim();
    let bad = || {
        src.error(
            address.span(),
            format!("{path}.address: give the BMC as \"host\" or \"host:port\" (port {IPMI_PORT} unless given), e.g. \"10.0.0.9\" or \"[fd00::9]:623\""),
        )
    };
    let (host, port) = if let Some(v6) = text.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(bad)?;
        match after.strip_prefix(':') {
            Some(port) => (h, port.parse::<u16>().map_err(|_| bad())?),
            None if after.is_empty() => (h, IPMI_PORT),
            None => return Err(bad()),
        }
    } else if text.matches(':').count() > 1 {
        (text, IPMI_PORT)
    } else {
        match text.split_once(':') {
            Some((h, port)) => (h, port.parse::<u16>().map_err(|_| bad())?),
            None => (text, IPMI_PORT),
        }
    };
    if host.is_empty()
        || port == 0
        || host.starts_with('-')
        || !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_'))
    {
        return Err(bad());
    }
    let cipher_suite = match &p.cipher_suite {
        None => None,
        Some(n) => Some(
            u8::try_from(*n.get_ref())
                .ok()
                .filter(|n| (1..=17).contains(n))
                .ok_or_else(|| {
                    src.error(
                        n.span(),
                        format!("{path}.cipher_suite: {} is no RMCP+ cipher suite that authenticates: give 1 to 17 (17 or 3 on most BMCs), or leave it out for the best the BMC lists", n.get_ref()),
                    )
                })?,
        ),
    };
    let (username, password) = login(p, path, "IPMI", src)?;
    Ok(IpmiConfig {
        host: host.to_owned(),
        port,
        cipher_suite,
        username,
        password,
    })
}

/// Whether `outlet` is a Redfish system id: letters, digits, `.`, `_`,
/// `-`, which go into a URL path as they are.
pub(super) fn redfish_outlet_fits(outlet: &str) -> bool {
    !outlet.is_empty()
        && outlet.len() <= MAX_SYSTEM_ID
        && outlet
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Whether `outlet` is IPMI's one chassis.
pub(super) fn ipmi_outlet_fits(outlet: &str) -> bool {
    outlet == "1"
}

/// What a Redfish outlet looks like, for the error refusing one.
pub(super) fn redfish_outlet_hint(controller: &str) -> String {
    format!("a Redfish outlet is a system's id under /redfish/v1/Systems/, e.g. \"{controller}:1\"")
}

/// What an IPMI outlet looks like, for the error refusing one.
pub(super) fn ipmi_outlet_hint(controller: &str) -> String {
    format!("an IPMI BMC switches its one chassis: \"{controller}:1\"")
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

    fn secret(dir: &std::path::Path) -> String {
        use std::os::unix::fs::PermissionsExt;
        let file = dir.join("bmc.password");
        std::fs::write(&file, "bmc-secret-0123\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        file.display().to_string()
    }

    #[test]
    fn bmc_controllers_are_checked_where_they_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let pw = secret(dir.path());
        let c = parse(&format!(
            "[power.bmc1]\ndriver = \"redfish\"\naddress = \"http://127.0.0.1:8000\"\nusername = \"root\"\npassword_file = {pw:?}\n\n\
             [power.bmc2]\ndriver = \"ipmi\"\naddress = \"10.0.0.9\"\nusername = \"ADMIN\"\npassword_file = {pw:?}\n\n\
             [ports.a]\ndevice = \"/dev/ttyUSB0\"\npower = \"bmc1:System.Embedded.1\"\n\n\
             [ports.b]\ndevice = \"/dev/ttyUSB1\"\npower = \"bmc2:1\"\n"
        ));
        assert_eq!(c.power["bmc1"].address(), "http://127.0.0.1:8000");
        assert_eq!(c.power["bmc2"].address(), "10.0.0.9:623");
        assert_eq!(c.ports["a"].power[0].outlet, "System.Embedded.1");
        let summary = c.summary().to_string();
        assert!(
            summary.contains("power bmc2: driver=ipmi 10.0.0.9:623")
                && !summary.contains("bmc-secret"),
            "{summary}"
        );
        let redfish = |rest: &str| {
            format!(
                "[power.bmc1]\ndriver = \"redfish\"\nusername = \"root\"\npassword_file = {pw:?}\n{rest}"
            )
        };
        assert_error(&redfish(""), "2:10", &["needs address = \"https://BMC\""]);
        assert_error(
            &redfish("address = \"https://10.0.0.9/redfish/v1/Systems\"\n"),
            "5:11",
            &["base URL without a path"],
        );
        assert_error(
            &redfish("address = \"https://u:p@10.0.0.9\"\n"),
            "5:11",
            &["credentials in the URL are refused"],
        );
        assert_error(
            &redfish("address = \"http://10.0.0.9\"\nca_file = \"ca.pem\"\n"),
            "6:11",
            &["ca_file: the address is http://"],
        );
        assert_error(
            "[power.bmc1]\ndriver = \"redfish\"\naddress = \"https://10.0.0.9\"\n",
            "2:10",
            &["needs username = \"NAME\" and password_file"],
        );
        let ipmi = |address: &str, outlet: &str| {
            format!(
                "[power.b]\ndriver = \"ipmi\"\naddress = \"{address}\"\nusername = \"ADMIN\"\npassword_file = {pw:?}\n\n[ports.a]\ndevice = \"/dev/ttyUSB0\"\npower = \"b:{outlet}\"\n"
            )
        };
        assert_eq!(
            parse(&ipmi("[fd00::9]:6230", "1")).power["b"].address(),
            "[fd00::9]:6230"
        );
        assert_error(
            &ipmi("-oProxyCommand=x", "1"),
            "3:11",
            &["give the BMC as \"host\""],
        );
        assert_error(
            &ipmi("10.0.0.9:x", "1"),
            "3:11",
            &["give the BMC as \"host\""],
        );
        assert_error(&ipmi("10.0.0.9", "2"), "9:9", &["its one chassis: \"b:1\""]);
        assert_error(
            &format!(
                "[power.b]\ndriver = \"ipmi\"\naddress = \"10.0.0.9\"\ncipher_suite = 0\nusername = \"ADMIN\"\npassword_file = {pw:?}\n"
            ),
            "4:16",
            &["cipher_suite: 0 is no RMCP+ cipher suite that authenticates"],
        );
        assert_error(
            &format!(
                "{}\n[ports.a]\ndevice = \"/dev/ttyUSB0\"\npower = \"bmc1:a/b\"\n",
                redfish("address = \"https://10.0.0.9\"\n")
            ),
            "9:9",
            &["a Redfish outlet is a system's id"],
        );
    }
}
