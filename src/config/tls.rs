//! `[server] tls_cert`, `tls_key`, `tls = "off"` and `tls_off_reason`:
//! whether the HTTP listener speaks TLS, checked where the file says it.
//!
//! The certificate and key are read and made into the listener's rustls
//! config at every check (start, `check-config`, reload), so a key others
//! may read, a key that does not fit, or a damaged file is found before
//! the daemon serves with it. A listener beyond loopback needs TLS, unless
//! the file says `tls = "off"` and why (a TLS-terminating proxy in front,
//! a network of its own), which the log repeats at every start.

use std::path::PathBuf;

use serde::Serialize;
use toml::Spanned;

use super::checks::next_to_config;
use super::diagnostics::{ConfigError, Source};
use crate::tls::x509::CertSummary;

/// Longest `tls_off_reason`.
const MAX_REASON: usize = 200;

/// What the file says of TLS on the HTTP listener.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub enum ListenerTls {
    /// Neither files nor `tls = "off"`: plain HTTP, on loopback only.
    #[default]
    Unset,
    /// HTTPS with these files.
    Files {
        /// The certificate chain (PEM), the server's first.
        cert: PathBuf,
        /// Its private key (PEM), private to the daemon's user.
        key: PathBuf,
        /// The certificate's subject and expiry when the config was read.
        summary: CertSummary,
    },
    /// Plain HTTP on purpose, beyond loopback too, for this reason.
    Off {
        /// `tls_off_reason` as written (bounded, without control characters).
        reason: String,
    },
}

impl ListenerTls {
    /// Whether the listener speaks TLS.
    pub fn is_on(&self) -> bool {
        matches!(self, ListenerTls::Files { .. })
    }

    /// The exposure rule's half for TLS: a non-loopback listener speaks
    /// TLS or says why not. The error says what to add.
    pub fn check_exposure(&self, loopback: bool) -> Result<(), String> {
        match (self, loopback) {
            (ListenerTls::Unset, false) => Err(
                "HTTP beyond loopback carries tokens and consoles, so it needs TLS: set tls_cert and tls_key in [server] (PEM files), or, behind a TLS-terminating proxy or on a network of its own, tls = \"off\" with tls_off_reason = \"why\""
                    .into(),
            ),
            _ => Ok(()),
        }
    }
}

/// The four keys as written.
pub(super) struct RawTls {
    pub(super) cert: Option<Spanned<PathBuf>>,
    pub(super) key: Option<Spanned<PathBuf>>,
    pub(super) mode: Option<Spanned<String>>,
    pub(super) reason: Option<Spanned<String>>,
}

impl RawTls {
    /// Checks the keys together and reads the files.
    pub(super) fn resolve(self, src: &Source) -> Result<ListenerTls, ConfigError> {
        if let Some(mode) = &self.mode
            && mode.get_ref() != "off"
        {
            return Err(src.error(
                mode.span(),
                format!(
                    "server.tls: {:?} is not a setting; TLS is on when tls_cert and tls_key are set, and tls = \"off\" (with tls_off_reason) serves plain HTTP beyond loopback",
                    mode.get_ref()
                ),
            ));
        }
        match (self.cert, self.key, self.mode, self.reason) {
            (None, None, None, None) => Ok(ListenerTls::Unset),
            (Some(cert), Some(key), None, None) => {
                let cert_path = next_to_config(cert.get_ref(), src);
                let key_path = next_to_config(key.get_ref(), src);
                let (_, summary) =
                    crate::tls::server::config_from_files(&cert_path, &key_path).map_err(|e| {
                        let span = if e.starts_with("tls_cert") {
                            cert.span()
                        } else {
                            key.span()
                        };
                        src.error(span, format!("server.{e}"))
                    })?;
                Ok(ListenerTls::Files {
                    cert: cert_path,
                    key: key_path,
                    summary,
                })
            }
            (Some(cert), None, _, _) => Err(src.error(
                cert.span(),
                "server.tls_cert: tls_key is missing; give the certificate's private key too",
            )),
            (None, Some(key), _, _) => Err(src.error(
                key.span(),
                "server.tls_key: tls_cert is missing; give the certificate too",
            )),
            (Some(_), Some(_), Some(mode), _) => Err(src.error(
                mode.span(),
                "server.tls: \"off\" together with tls_cert and tls_key; remove one or the other",
            )),
            (Some(_), Some(_), None, Some(reason)) | (None, None, None, Some(reason)) => {
                Err(src.error(
                    reason.span(),
                    "server.tls_off_reason: only with tls = \"off\"; remove it, or add tls = \"off\"",
                ))
            }
            (None, None, Some(mode), None) => Err(src.error(
                mode.span(),
                "server.tls: \"off\" needs tls_off_reason = \"...\" saying why plain HTTP is safe here (e.g. \"behind the TLS proxy on this host\")",
            )),
            (None, None, Some(_), Some(reason)) => {
                let text = reason.get_ref().trim();
                if text.is_empty()
                    || text.len() > MAX_REASON
                    || text.chars().any(char::is_control)
                {
                    return Err(src.error(
                        reason.span(),
                        format!("server.tls_off_reason: say in one line of at most {MAX_REASON} bytes why plain HTTP is safe here"),
                    ));
                }
                Ok(ListenerTls::Off {
                    reason: text.to_owned(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn tls_off_needs_a_reason_and_excludes_the_files() {
        let c = parse("[server]\ntls = \"off\"\ntls_off_reason = \"the proxy on this host\"\n");
        assert_eq!(
            c.server.tls,
            ListenerTls::Off {
                reason: "the proxy on this host".into()
            }
        );
        assert_error(
            "[server]\ntls = \"off\"\n",
            "2:7",
            &["needs tls_off_reason"],
        );
        assert_error("[server]\ntls = \"on\"\n", "2:7", &["is not a setting"]);
        assert_error(
            "[server]\ntls_off_reason = \"x\"\n",
            "2:18",
            &["only with tls = \"off\""],
        );
        assert_error(
            "[server]\ntls_cert = \"c.pem\"\n",
            "2:12",
            &["tls_key is missing"],
        );
        assert_error(
            "[server]\ntls_cert = \"/nonexistent/c.pem\"\ntls_key = \"/nonexistent/k.pem\"\n",
            "2:12",
            &["server.tls_cert: cannot read /nonexistent/c.pem"],
        );
    }

    #[test]
    fn a_listener_beyond_loopback_needs_tls_or_a_reason() {
        assert!(ListenerTls::Unset.check_exposure(true).is_ok());
        let e = ListenerTls::Unset.check_exposure(false).unwrap_err();
        assert!(
            e.contains("tls_cert") && e.contains("tls_off_reason"),
            "{e}"
        );
        let off = ListenerTls::Off { reason: "r".into() };
        assert!(off.check_exposure(false).is_ok());
    }
}
