//! TLS for the tests and benches: a CA made for one test with the
//! `openssl` CLI, the server certificates it signs, and a rustls client
//! configuration that trusts that CA and nothing else.
//!
//! The client side uses rustls with its ring provider given explicitly, as
//! the daemon does, so no process-wide provider has to be installed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

/// Runs `openssl ARGS` in `dir`; panics with its stderr on failure.
fn openssl(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl (Debian: openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA made for one test: its certificate (`NAME.pem`) and key
/// (`NAME.key`) in the test's directory.
pub struct TestCa {
    dir: PathBuf,
    name: String,
}

impl TestCa {
    /// Makes a P-256 CA valid for two days, named `NAME` in `dir`.
    pub fn new(dir: &Path, name: &str) -> TestCa {
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.pem"),
                "-days",
                "2",
                "-subj",
                &format!("/CN=serialgate test CA {name}"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        );
        TestCa {
            dir: dir.to_owned(),
            name: name.to_owned(),
        }
    }

    /// The CA's certificate (PEM), for a client to trust.
    pub fn cert(&self) -> PathBuf {
        self.dir.join(format!("{}.pem", self.name))
    }

    /// A server certificate for 127.0.0.1 and localhost, subject
    /// `CN=localhost, O=org`, written to `NAME.pem` and `NAME.key` (600).
    pub fn issue(&self, name: &str, org: &str) -> (PathBuf, PathBuf) {
        let ext = self.dir.join(format!("{name}.ext"));
        std::fs::write(
            &ext,
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
             keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .expect("write the certificate's extensions");
        openssl(
            &self.dir,
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
                "-subj",
                &format!("/CN=localhost/O={org}"),
            ],
        );
        openssl(
            &self.dir,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                &format!("{}.pem", self.name),
                "-CAkey",
                &format!("{}.key", self.name),
                "-CAcreateserial",
                "-out",
                &format!("{name}.pem"),
                "-days",
                "2",
                "-extfile",
                &format!("{name}.ext"),
            ],
        );
        let key = self.dir.join(format!("{name}.key"));
        private(&key);
        (self.dir.join(format!("{name}.pem")), key)
    }
}

/// Makes `path` readable by its owner only, as the daemon wants a key.
fn private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .expect("chmod 600 the key");
}

/// A rustls client configuration (TLS 1.2 and 1.3, ring) that trusts the
/// certificates in the PEM file `ca` and nothing else.
pub fn client_config(ca: &Path) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca)? {
        roots.add(cert?)?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Arc::new(config))
}
