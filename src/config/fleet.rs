//! `[fleet]`: the NATS servers this gateway joins a fleet through, its
//! credentials, its site's name, and whether it serves every site's ports.
//!
//! The site name becomes one token of NATS subjects
//! (`serialgate.site.<SITE>.call`), so it keeps a port name's characters
//! without `.` (a subject's separator). The credentials are a NATS
//! `.creds` file (a user JWT and its seed) or an nkey seed alone, in a file
//! only its owner may read, refused like a token's secret file otherwise.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::checks::{check_name, next_to_config};
use super::diagnostics::{ConfigError, Source};
use super::raw::RawFleet;
use super::tokens::read_small_file;

/// Longest site name: one subject token, shown as `site/port`.
pub const MAX_SITE: usize = 32;
/// Most NATS URLs one gateway dials.
const MAX_URLS: usize = 16;
/// Longest NATS URL.
const MAX_URL: usize = 512;
/// Largest credentials file (a `.creds` is under 2 KiB).
const MAX_CREDENTIALS_FILE: u64 = 16 * 1024;

/// The fleet this gateway joins, checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetConfig {
    /// The NATS servers, as written (`nats://`, or `tls://` for TLS).
    pub urls: Vec<String>,
    /// This gateway's site: its ports are `site/port` across the fleet.
    pub site: String,
    /// The file the credentials came from.
    pub credentials_file: Option<PathBuf>,
    /// The credentials read from it; never shown.
    #[serde(skip)]
    pub credentials: Option<FleetCredentials>,
    /// The CA certificates a `tls://` server's certificate must be signed
    /// by; none: the system's roots.
    pub ca_file: Option<PathBuf>,
    /// Whether this gateway offers every site's ports through its doors:
    /// `serve`, else whether it has no ports of its own.
    pub serve: bool,
}

/// What the gateway proves itself to NATS with; never shown.
#[derive(Clone, PartialEq, Eq)]
pub enum FleetCredentials {
    /// A `.creds` file's text: a user JWT and its nkey seed.
    Creds(Arc<str>),
    /// An nkey user seed (`SU…`).
    Seed(Arc<str>),
}

impl fmt::Debug for FleetCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FleetCredentials::Creds(_) => "Creds(..)",
            FleetCredentials::Seed(_) => "Seed(..)",
        })
    }
}

impl FleetCredentials {
    /// What kind of credentials, for `check-config`.
    pub fn kind(&self) -> &'static str {
        match self {
            FleetCredentials::Creds(_) => "a user JWT and seed (.creds)",
            FleetCredentials::Seed(_) => "an nkey seed",
        }
    }
}

/// Checks a site name: a port name's characters without `.`, at most
/// [`MAX_SITE`] bytes. Shared with what the fleet reads from announcements.
pub fn check_site(site: &str) -> Result<(), String> {
    check_name(site)?;
    if site.contains('.') {
        return Err("a site name is one NATS subject token: use letters, digits, '_' and '-' (like dc1 or lab_b), no '.'".into());
    }
    if site.len() > MAX_SITE {
        return Err(format!("it is longer than {MAX_SITE} bytes"));
    }
    Ok(())
}

/// Checks one NATS URL; says whether it asks for TLS.
fn check_url(url: &str) -> Result<bool, String> {
    if url.len() > MAX_URL {
        return Err(format!("it is longer than {MAX_URL} bytes"));
    }
    let (scheme, rest) = url
        .split_once("://")
        .ok_or("write it as nats://host:port (or tls://host:port for TLS)")?;
    let tls = match scheme {
        "nats" => false,
        "tls" => true,
        other => {
            return Err(format!(
                "{other}:// is no NATS URL serialgate dials; use nats://host:port, or tls://host:port for TLS"
            ));
        }
    };
    if rest.contains('@') {
        return Err("put no user or password in the URL (a config others may read would show it); use credentials = a .creds or nkey seed file".into());
    }
    if rest.is_empty() || rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("give a host and port, like nats://127.0.0.1:4222".into());
    }
    Ok(tls)
}

/// Reads the credentials file: owner-only, a `.creds` or an nkey seed.
fn read_credentials(path: &std::path::Path) -> Result<FleetCredentials, String> {
    use std::os::unix::fs::PermissionsExt;
    let (text, meta) = read_small_file(path, MAX_CREDENTIALS_FILE, "fleet.credentials")
        .map_err(|e| format!("cannot read the credentials file {}: {e}", path.display()))?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "the credentials file {} may be read or changed by other users than its owner \
             (mode {mode:o}): chmod 600 {}, and have the NATS operator issue new credentials if \
             others could read it",
            path.display(),
            path.display()
        ));
    }
    let text = String::from_utf8(text).map_err(|_| {
        format!(
            "the credentials file {} is not text; it must be a NATS .creds file or an nkey seed (SU…)",
            path.display()
        )
    })?;
    let trimmed = text.trim();
    if trimmed.contains("-----BEGIN NATS USER JWT-----") {
        Ok(FleetCredentials::Creds(trimmed.into()))
    } else if trimmed.starts_with("SU") && !trimmed.contains(char::is_whitespace) {
        Ok(FleetCredentials::Seed(trimmed.into()))
    } else {
        Err(format!(
            "the credentials file {} is neither a NATS .creds file (with a USER JWT) nor an nkey user seed (one line starting SU); `nsc generate creds` or `nk -gen user` make them",
            path.display()
        ))
    }
}

impl RawFleet {
    /// Checks the values; reads the credentials file. `has_ports`: the
    /// config has ports of its own (without, and without `serve`, the
    /// gateway serves the fleet: it would have nothing else to do).
    pub(super) fn resolve(self, src: &Source, has_ports: bool) -> Result<FleetConfig, ConfigError> {
        let site = self.site.get_ref();
        check_site(site).map_err(|e| {
            src.error(
                self.site.span(),
                format!(
                    "fleet.site: {:?} is no site name: {e}",
                    crate::error::label(site)
                ),
            )
        })?;
        if self.urls.get_ref().is_empty() || self.urls.get_ref().len() > MAX_URLS {
            return Err(src.error(
                self.urls.span(),
                format!(
                    "fleet.urls: give 1 to {MAX_URLS} NATS URLs, like [\"nats://127.0.0.1:4222\"]"
                ),
            ));
        }
        let mut urls = Vec::new();
        let mut any_tls = false;
        for url in self.urls.get_ref() {
            any_tls |= check_url(url.get_ref()).map_err(|e| {
                src.error(
                    url.span(),
                    format!("fleet.urls: {}: {e}", crate::error::shown(url.get_ref())),
                )
            })?;
            urls.push(url.get_ref().clone());
        }
        let ca_file = match self.ca_file {
            None => None,
            Some(file) if !any_tls => {
                return Err(src.error(
                    file.span(),
                    "fleet.ca_file: no URL is tls://, so no certificate is checked; use tls:// URLs or remove ca_file",
                ));
            }
            Some(file) => {
                let path = next_to_config(file.get_ref(), src);
                crate::tls::files::read_roots(&path)
                    .map_err(|e| src.error(file.span(), format!("fleet.ca_file: {e}")))?;
                Some(path)
            }
        };
        let (credentials_file, credentials) = match self.credentials {
            None => (None, None),
            Some(file) => {
                let path = next_to_config(file.get_ref(), src);
                let creds = read_credentials(&path)
                    .map_err(|e| src.error(file.span(), format!("fleet.credentials: {e}")))?;
                (Some(path), Some(creds))
            }
        };
        Ok(FleetConfig {
            urls,
            site: site.clone(),
            credentials_file,
            credentials,
            ca_file,
            serve: self.serve.unwrap_or(!has_ports),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_fleet_is_read_with_its_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let seed = dir.path().join("site.nk");
        std::fs::write(&seed, "SUAEXAMPLESEED\n").unwrap();
        std::fs::set_permissions(&seed, std::fs::Permissions::from_mode(0o600)).unwrap();
        let text = format!(
            "[fleet]\nurls = [\"nats://127.0.0.1:4222\"]\nsite = \"dc1\"\ncredentials = {:?}\nserve = true\n",
            seed.display()
        );
        let config = parse(&text);
        let fleet = config.fleet.unwrap();
        assert_eq!(fleet.site, "dc1");
        assert!(fleet.serve);
        assert_eq!(fleet.credentials.unwrap().kind(), "an nkey seed");
        // shown without the secret
        let shown = parse(&text).summary().to_string();
        assert!(shown.contains("fleet: site dc1"), "{shown}");
        assert!(!shown.contains("SUAEXAMPLESEED"), "{shown}");
        std::fs::set_permissions(&seed, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(error(&text).contains("chmod 600"));
    }

    #[test]
    fn a_gateway_without_ports_serves_the_fleet_unless_told_otherwise() {
        let fleet = "[fleet]\nurls = [\"nats://127.0.0.1:4222\"]\nsite = \"hub\"\n";
        let port = "[ports.sw1]\ndevice = \"/dev/ttyUSB0\"\n";
        let serves = |text: &str| parse(text).fleet.unwrap().serve;
        assert!(serves(fleet));
        assert!(!serves(&format!("{port}{fleet}")));
        assert!(serves(&format!("{port}{fleet}serve = true\n")));
        assert!(!serves(&format!("{fleet}serve = false\n")));
    }

    #[test]
    fn fleet_mistakes_point_at_the_value() {
        for (text, at, wanted) in [
            (
                "[fleet]\nurls = [\"nats://h:1\"]\nsite = \"dc.1\"\n",
                "3:8",
                "fleet.site: \"dc.1\" is no site name: a site name is one NATS subject token",
            ),
            (
                "[fleet]\nurls = [\"http://h:1\"]\nsite = \"dc1\"\n",
                "2:9",
                "fleet.urls: \"http://h:1\": http:// is no NATS URL",
            ),
            (
                "[fleet]\nurls = [\"nats://u:p@h:1\"]\nsite = \"dc1\"\n",
                "2:9",
                "put no user or password in the URL",
            ),
            (
                "[fleet]\nurls = []\nsite = \"dc1\"\n",
                "2:8",
                "fleet.urls: give 1 to 16",
            ),
            (
                "[fleet]\nurls = [\"nats://h:1\"]\nsite = \"dc1\"\nca_file = \"ca.pem\"\n",
                "4:11",
                "fleet.ca_file: no URL is tls://",
            ),
        ] {
            assert_error(text, at, &[wanted]);
        }
    }
}
