//! The daemon's TLS clients (the alert webhook, `serialgate console`):
//! which servers they trust, the system's roots or one CA file.

use std::path::Path;
use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore};

use super::files::read_roots;
use super::server::VERSIONS;

/// A client config trusting the certificates of `ca_file` only, or the
/// system's roots (on Debian `/etc/ssl/certs`, from `ca-certificates`)
/// when there is none. The error says what to give instead.
pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    let roots = match ca_file {
        Some(path) => read_roots(path)?,
        None => system_roots()?,
    };
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(VERSIONS)
            .map_err(|e| format!("TLS: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The system's trusted roots; an error when there are none to be read.
fn system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    for e in found.errors.iter().take(3) {
        tracing::debug!("system roots: {e}");
    }
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(
            "no trusted root certificates found on this system (install ca-certificates), or give the CA's certificate in a PEM file (ca_file, --ca-file)"
                .into(),
        );
    }
    Ok(roots)
}

/// The name a certificate must carry for `host` (a DNS name or an IP
/// address, IPv6 without brackets).
pub fn server_name(host: &str) -> Result<rustls_pki_types::ServerName<'static>, String> {
    rustls_pki_types::ServerName::try_from(host.to_owned())
        .map_err(|e| format!("{host:?} is no host name a certificate can carry: {e}"))
}
