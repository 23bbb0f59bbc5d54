//! The SSH door's host key: one Ed25519 key made once in `state_dir`
//! (`ssh_host_ed25519_key`, mode 600), so that engineers' `known_hosts`
//! stay right across restarts. A key file that others may read or change,
//! that another user owns or that is a link is refused, as the token
//! files are: whoever may read it can pose as the gateway.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use russh::keys::ssh_key::LineEnding;
use russh::keys::ssh_key::private::Ed25519Keypair;
use russh::keys::{HashAlg, PrivateKey};

/// The host key's file name in `state_dir`.
pub const HOST_KEY_FILE: &str = "ssh_host_ed25519_key";

/// The largest host key file read (an OpenSSH Ed25519 key is ~400 bytes).
const MAX_KEY_FILE: u64 = 16 * 1024;

/// Where the host key of a gateway with this `state_dir` lives.
pub fn path_in(state_dir: &Path) -> PathBuf {
    state_dir.join(HOST_KEY_FILE)
}

/// The key's SHA256 fingerprint as `ssh` shows it (`SHA256:...`).
pub fn fingerprint(key: &PrivateKey) -> String {
    key.public_key().fingerprint(HashAlg::Sha256).to_string()
}

/// Reads the host key in `state_dir`, or makes it when there is none
/// (mode 600, never replacing a file). Refuses a file with looser modes,
/// another owner, or that is not a regular file, saying the fix.
pub fn load_or_create(state_dir: &Path) -> Result<PrivateKey, String> {
    let path = path_in(state_dir);
    match read(&path)? {
        Some(key) => Ok(key),
        None => create(&path),
    }
}

/// Reads the host key at `path`; `None` when there is none yet.
pub fn read(path: &Path) -> Result<Option<PrivateKey>, String> {
    use std::io::Read;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "cannot open the SSH host key {}: {e} (a symbolic link is not followed: put the key itself there)",
                path.display()
            ));
        }
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot check the SSH host key {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!(
            "the SSH host key {} is not a regular file; remove it and serialgate makes a new key",
            path.display()
        ));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "the SSH host key {} may be read or changed by other users than its owner (mode {mode:o}): chmod 600 {}, and make a new key (remove the file) if others could read it",
            path.display(),
            path.display()
        ));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!(
            "the SSH host key {} is owned by uid {}, not by the user serialgate runs as (uid {me}): chown it to that user",
            path.display(),
            meta.uid()
        ));
    }
    let mut text = Vec::new();
    file.take(MAX_KEY_FILE + 1)
        .read_to_end(&mut text)
        .map_err(|e| format!("cannot read the SSH host key {}: {e}", path.display()))?;
    if text.len() as u64 > MAX_KEY_FILE {
        return Err(format!(
            "the SSH host key {} is larger than {MAX_KEY_FILE} bytes; is it the right file?",
            path.display()
        ));
    }
    let key = PrivateKey::from_openssh(&text).map_err(|e| {
        format!(
            "the SSH host key {} is not an OpenSSH private key ({e}); remove it and serialgate makes a new one",
            path.display()
        )
    })?;
    Ok(Some(key))
}

/// Makes a new Ed25519 host key at `path` from 32 bytes of the OS's
/// randomness, written with mode 600 to a file that must not exist yet.
fn create(path: &Path) -> Result<PrivateKey, String> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| format!("no randomness for the SSH host key: {e}"))?;
    let key = PrivateKey::from(Ed25519Keypair::from_seed(&seed));
    seed.fill(0);
    let text = key
        .to_openssh(LineEnding::LF)
        .map_err(|e| format!("cannot encode the SSH host key: {e}"))?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| format!("cannot create the SSH host key {}: {e}", path.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("cannot write the SSH host key {}: {e}", path.display()))?;
    tracing::info!(
        "made a new SSH host key {} ({})",
        path.display(),
        fingerprint(&key)
    );
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_made_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let made = load_or_create(dir.path()).unwrap();
        let file = path_in(dir.path());
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = load_or_create(dir.path()).unwrap();
        assert_eq!(fingerprint(&made), fingerprint(&again));
        assert!(fingerprint(&made).starts_with("SHA256:"));
    }

    #[test]
    fn a_key_others_may_read_or_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        load_or_create(dir.path()).unwrap();
        let file = path_in(dir.path());
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = load_or_create(dir.path()).unwrap_err();
        assert!(e.contains("mode 640") && e.contains("chmod 600"), "{e}");
        let other = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&file, path_in(other.path())).unwrap();
        let e = load_or_create(other.path()).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
    }
}
