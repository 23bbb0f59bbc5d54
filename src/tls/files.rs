//! The PEM files TLS is configured with, read and checked: the listener's
//! certificate chain and private key, and a CA file to trust.
//!
//! The key must be private to the daemon's user, like a token's secret
//! file: a key its group or others may read, or that another user owns
//! (and so may replace), is refused with the fix. Links are followed
//! (certbot's `live/` names are links), and the file reached is the one
//! checked. Every file is bounded, so a config naming `/dev/zero` cannot
//! hang a start or a reload.

use std::io::Read;
use std::path::Path;

use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::x509::CertSummary;

/// Largest PEM file read: a long chain is a few KiB.
const MAX_PEM_FILE: u64 = 1 << 20;

/// The listener's certificate chain and key, and what the operator is
/// shown of them.
#[derive(Debug)]
pub struct Identity {
    /// The certificate first, then the intermediates.
    pub chain: Vec<CertificateDer<'static>>,
    /// The private key of the first certificate.
    pub key: PrivateKeyDer<'static>,
    /// The first certificate's subject and expiry.
    pub summary: CertSummary,
}

/// Reads `cert` (PEM certificates) and `key` (one PEM private key: PKCS#8,
/// PKCS#1 or SEC1), refusing a key that is not private. The error starts
/// with the key that names the failing file (`tls_cert: `, `tls_key: `)
/// and says what to do.
pub fn read_identity(cert: &Path, key: &Path) -> Result<Identity, String> {
    let (chain, summary) = read_chain(cert).map_err(|e| format!("tls_cert: {e}"))?;
    let key = read_key(key).map_err(|e| format!("tls_key: {e}"))?;
    Ok(Identity {
        chain,
        key,
        summary,
    })
}

/// The certificates of a PEM file, the first one's summary.
pub fn read_chain(cert: &Path) -> Result<(Vec<CertificateDer<'static>>, CertSummary), String> {
    let pem = read_bounded(cert)?.0;
    let chain = read_certs(&pem).map_err(|e| format!("{}: {e}", cert.display()))?;
    let summary =
        CertSummary::of(chain[0].as_ref()).map_err(|e| format!("{}: {e}", cert.display()))?;
    Ok((chain, summary))
}

/// The private key of a PEM file that only the daemon's user may read.
pub fn read_key(key: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let (pem, meta) = read_bounded(key)?;
    check_private(key, &meta)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
        format!(
            "{}: no PEM private key in it ({e}); give the key the certificate was made for",
            key.display()
        )
    })
}

/// The certificates of a CA file (PEM), as the roots a client trusts.
pub fn read_roots(ca_file: &Path) -> Result<RootCertStore, String> {
    let pem = read_bounded(ca_file)?.0;
    let certs = read_certs(&pem).map_err(|e| format!("CA file {}: {e}", ca_file.display()))?;
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots.add(cert).map_err(|e| {
            format!(
                "CA file {}: a certificate rustls cannot use: {e}",
                ca_file.display()
            )
        })?;
    }
    Ok(roots)
}

fn read_certs(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("a damaged PEM certificate ({e})"))?;
    if chain.is_empty() {
        return Err("no PEM certificate (-----BEGIN CERTIFICATE-----) in it".into());
    }
    Ok(chain)
}

/// A regular file of at most [`MAX_PEM_FILE`] bytes, with its metadata.
fn read_bounded(path: &Path) -> Result<(Vec<u8>, std::fs::Metadata), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |e: &dyn std::fmt::Display| format!("cannot read {}: {e}", path.display());
    let file = std::fs::OpenOptions::new()
        .read(true)
        // A FIFO opens at once instead of waiting for a writer, and is then
        // refused as no regular file.
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| cannot(&e))?;
    let meta = file.metadata().map_err(|e| cannot(&e))?;
    if !meta.is_file() {
        return Err(cannot(&"it is not a regular file; give a PEM file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_PEM_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot(&e))?;
    if bytes.len() as u64 > MAX_PEM_FILE {
        return Err(cannot(&format!(
            "it is larger than {MAX_PEM_FILE} bytes; is it the right file?"
        )));
    }
    Ok((bytes, meta))
}

/// Refuses a key file its group or others may read or write, or that
/// another user than the daemon's owns.
fn check_private(path: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{}: other users than its owner may read or change it (mode {mode:o}): chmod 600 {}, and make a new key and certificate if others could read it",
            path.display(),
            path.display()
        ));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!(
            "{}: it belongs to uid {}, not to the daemon's user (uid {me}), who could then not keep it private: chown {me} {}",
            path.display(),
            meta.uid(),
            path.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_key_others_may_read_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key.pem");
        std::fs::write(
            &key,
            "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620] {
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
            let meta = std::fs::metadata(&key).unwrap();
            let e = check_private(&key, &meta).unwrap_err();
            assert!(e.contains("chmod 600"), "{mode:o}: {e}");
        }
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(check_private(&key, &std::fs::metadata(&key).unwrap()).is_ok());
    }

    #[test]
    fn files_without_pem_say_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "hello\n").unwrap();
        let e = read_roots(&path).unwrap_err();
        assert!(e.contains("no PEM certificate"), "{e}");
        let e = read_roots(&dir.path().join("missing.pem")).unwrap_err();
        assert!(e.contains("cannot read"), "{e}");
        let e = read_roots(dir.path()).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
    }
}
