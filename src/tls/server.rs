//! The HTTP listener's TLS: a rustls server config made from the
//! certificate and key files, replaced in place when a reload reads them
//! again, so that a certificate renewed on disk is served to the next
//! connection while those already open go on with the one they agreed.

use std::path::Path;
use std::sync::{Arc, RwLock};

use rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use super::files::{Identity, read_identity};
use super::x509::CertSummary;

/// The protocol versions spoken: TLS 1.3 and 1.2, nothing older.
pub const VERSIONS: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];

/// The listener's TLS: where its files are and the config in force.
#[derive(Clone)]
pub struct ServerTls {
    current: Arc<RwLock<Arc<ServerConfig>>>,
}

impl ServerTls {
    /// Reads `cert` and `key` and makes the config; the error says which
    /// file is wrong and how.
    pub fn load(cert: &Path, key: &Path) -> Result<(ServerTls, CertSummary), String> {
        let (config, summary) = config_from_files(cert, key)?;
        Ok((
            ServerTls {
                current: Arc::new(RwLock::new(Arc::new(config))),
            },
            summary,
        ))
    }

    /// Reads the files again (the paths of a reloaded config) and, when
    /// they are good, serves them to every connection from now on. On an
    /// error the running certificate stays.
    pub fn reload(&self, cert: &Path, key: &Path) -> Result<CertSummary, String> {
        let (config, summary) = config_from_files(cert, key)?;
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        *current = Arc::new(config);
        drop(current);
        Ok(summary)
    }

    /// An acceptor with the config in force now, for one new connection.
    pub fn acceptor(&self) -> TlsAcceptor {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        TlsAcceptor::from(current.clone())
    }
}

/// Reads the files and makes the server config (HTTP/1.1 only, as the
/// listener serves): the check `check-config` runs too.
pub fn config_from_files(cert: &Path, key: &Path) -> Result<(ServerConfig, CertSummary), String> {
    let Identity {
        chain,
        key: key_der,
        summary,
    } = read_identity(cert, key)?;
    let mut config = ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(VERSIONS)
    .map_err(|e| format!("TLS: {e}"))?
    .with_no_client_auth()
    .with_single_cert(chain, key_der)
    .map_err(|e| {
        format!(
            "tls_key: {} does not fit the certificate in {} ({e}); give the key the certificate was made for",
            key.display(),
            cert.display()
        )
    })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((config, summary))
}
