//! HTTP access tokens: the `[[tokens]]` entries, what each may do, and their
//! secrets, read from small private files and kept only as digests.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::access::TokenAccess;
use super::checks::{check_globs, next_to_config};
use super::diagnostics::{ConfigError, Source};
use super::policies::{Policy, check_policy_name};
use super::raw::RawToken;

/// The length from which a token's secret counts as long: 32 characters,
/// as `openssl rand -hex 16` makes (128 random bits). The HTTP doors hold
/// an address for its wrong secrets, but still compare a long secret sent
/// from it: nobody guesses one, so a guesser (or a client with a stale
/// token) that shares an engineer's address cannot keep them out.
pub const LONG_SECRET_BYTES: usize = 32;

/// A token's secret, kept only as its SHA-256 digest and whether it is
/// long ([`LONG_SECRET_BYTES`]): compared in constant time, never shown
/// (`Debug` prints a placeholder) and never serialized.
#[derive(Clone)]
pub struct TokenSecret {
    digest: [u8; 32],
    long: bool,
}

impl TokenSecret {
    /// The digest of `secret` (the file's content, already trimmed).
    pub fn new(secret: &[u8]) -> TokenSecret {
        use sha2::Digest;
        TokenSecret {
            digest: sha2::Sha256::digest(secret).into(),
            long: secret.len() >= LONG_SECRET_BYTES,
        }
    }

    /// The SHA-256 digest of the secret.
    pub fn digest(&self) -> &[u8; 32] {
        &self.digest
    }

    /// Whether the secret has [`LONG_SECRET_BYTES`] or more, so that an
    /// address held for wrong secrets may still present it.
    pub fn is_long(&self) -> bool {
        self.long
    }
}

impl fmt::Debug for TokenSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenSecret(<redacted>)")
    }
}

impl PartialEq for TokenSecret {
    fn eq(&self, other: &TokenSecret) -> bool {
        use subtle::ConstantTimeEq;
        self.digest.ct_eq(&other.digest).into()
    }
}

/// One `[[tokens]]` entry: a bearer token for the HTTP transport.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenConfig {
    /// Name shown in logs and the audit trail.
    pub name: String,
    /// File holding the secret (the secret itself is never in the config).
    /// A relative path is relative to the config file's directory.
    pub secret_file: PathBuf,
    /// The secret read from `secret_file` (its content, trimmed).
    #[serde(skip)]
    pub secret: TokenSecret,
    /// Globs of port names the token reaches.
    pub ports: Vec<String>,
    /// What the token may do.
    pub access: TokenAccess,
    /// Whether it may log in with the ports' stored credentials
    /// (`use_credentials`; admin tokens always may).
    pub use_credentials: bool,
    /// Whether it may switch outlets with the `power` tool (`power`;
    /// admin tokens always may).
    pub power: bool,
    /// The command policy its calls are judged by (`policy`; the config
    /// checked that it names one). None: the port's default.
    pub policy: Option<String>,
    /// Whether a console or web view opened with it may decide requests
    /// for approval (`approve`; admin tokens always may): an agent with a
    /// write token must not approve another agent's line.
    pub approve: bool,
}

#[cfg(test)]
impl TokenConfig {
    /// A token of the unit tests: `name` with `access` on every port, its
    /// secret `name` itself, no other right.
    pub(crate) fn for_tests(name: &str, access: TokenAccess) -> TokenConfig {
        TokenConfig {
            name: name.to_owned(),
            secret_file: "/secret".into(),
            secret: TokenSecret::new(name.as_bytes()),
            ports: vec!["*".to_owned()],
            access,
            use_credentials: false,
            power: false,
            policy: None,
            approve: false,
        }
    }
}

/// Checks the `[[tokens]]` entries and reads their secrets.
pub(super) fn resolve_tokens(
    raw: Vec<RawToken>,
    policies: &BTreeMap<String, Policy>,
    src: &Source,
) -> Result<Vec<TokenConfig>, ConfigError> {
    // Check every entry's keys first, then read the secret files: a typo is
    // reported as such even when a file is missing.
    let mut names = BTreeSet::new();
    let mut checked = Vec::new();
    for (i, t) in raw.into_iter().enumerate() {
        let path = format!("tokens[{i}]");
        let name = t.name.get_ref();
        if name.trim().is_empty() {
            return Err(src.error(t.name.span(), format!("{path}.name: it is empty")));
        }
        if !names.insert(name.clone()) {
            return Err(src.error(
                t.name.span(),
                format!("{path}.name: another token is already named {name:?}"),
            ));
        }
        if t.secret_file.get_ref().as_os_str().is_empty() {
            return Err(src.error(
                t.secret_file.span(),
                format!("{path}.secret_file: it is empty"),
            ));
        }
        if t.ports.get_ref().is_empty() {
            return Err(src.error(
                t.ports.span(),
                format!("{path}.ports: it is empty, so the token reaches no port; list globs of port names, e.g. [\"core-*\"] or [\"*\"]"),
            ));
        }
        let ports = check_globs(t.ports.into_inner(), &format!("{path}.ports"), src)?;
        let policy = t
            .policy
            .as_ref()
            .map(|p| check_policy_name(p, &format!("{path}.policy"), policies, src))
            .transpose()?;
        checked.push((
            path,
            t.name.into_inner(),
            t.secret_file,
            ports,
            t.access,
            (t.use_credentials, t.power, policy, t.approve),
        ));
    }
    let mut tokens: Vec<TokenConfig> = Vec::new();
    for (path, name, file, ports, access, (use_credentials, power, policy, approve)) in checked {
        let secret = read_secret(file.get_ref(), src)
            .map_err(|e| src.error(file.span(), format!("{path}.secret_file: {e}")))?;
        if let Some(other) = tokens.iter().find(|t| t.secret == secret) {
            return Err(src.error(
                file.span(),
                format!(
                    "{path}.secret_file: the secret is the same as token {:?}'s; give every token its own secret",
                    other.name
                ),
            ));
        }
        tokens.push(TokenConfig {
            name,
            secret_file: file.into_inner(),
            secret,
            ports,
            access,
            use_credentials,
            power,
            policy,
            approve,
        });
    }
    Ok(tokens)
}

/// Largest secret file read: a secret is one line of random text. The cap
/// (and refusing anything but a regular file) keeps a config naming
/// `/dev/zero` or a FIFO from hanging the daemon at start-up or reload.
const MAX_SECRET_FILE: u64 = 4096;

/// Reads a regular file of at most `max` bytes, not through a symbolic
/// link (whoever may change a link chooses what is read), and returns its
/// content with its metadata; `key` is the config key naming it, for the
/// messages (`secret_file`).
pub(super) fn read_small_file(
    path: &Path,
    max: u64,
    key: &str,
) -> Result<(Vec<u8>, std::fs::Metadata), String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        // A FIFO opens at once instead of waiting for a writer, and is then
        // refused as no regular file.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                let real = std::fs::canonicalize(path).map_or_else(
                    |_| "the file it points to".to_owned(),
                    |p| p.display().to_string(),
                );
                format!(
                    "it is a symbolic link, which serialgate does not follow to a secret \
                     (whoever may change the link chooses the secret): point {key} at {real}"
                )
            } else {
                e.to_string()
            }
        })?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err(format!(
            "it is not a regular file; point {key} at a file holding the secret"
        ));
    }
    let mut text = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > max {
        return Err(format!(
            "it is larger than {max} bytes; is {key} the right file?"
        ));
    }
    Ok((text, meta))
}

/// Reads a token's secret: the file's content, trimmed. A relative path is
/// relative to the config file's directory. Refuses a file its group or
/// other users may read (or write), and a symbolic link, saying what fixes
/// it.
fn read_secret(file: &Path, src: &Source) -> Result<TokenSecret, String> {
    let secret = read_private(file, "secret_file", src)?;
    Ok(TokenSecret::new(&secret))
}

/// Reads a secret file named by `key` (a token's `secret_file`, a power
/// controller's `password_file`): its content, trimmed, from a regular
/// file next to the config only its owner may read, not through a link.
pub(super) fn read_private(file: &Path, key: &str, src: &Source) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::PermissionsExt;
    let path = next_to_config(file, src);
    let (text, meta) = read_small_file(&path, MAX_SECRET_FILE, key)
        .map_err(|e| format!("cannot read the secret file {}: {e}", path.display()))?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "the secret file {} may be read or changed by other users than its owner \
             (mode {mode:o}): chmod 600 {}, and change the secret if others could read it",
            path.display(),
            path.display()
        ));
    }
    let secret = text.trim_ascii();
    if secret.is_empty() {
        return Err(format!(
            "the secret file {} is empty; put a long random secret in it, e.g. `openssl rand -hex 32 > {}`",
            path.display(),
            path.display()
        ));
    }
    Ok(secret.to_vec())
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::config::Config;

    #[test]
    fn secret_files_others_may_read_and_links_are_refused_with_the_fix() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, file) = secrets();
        let a = dir.path().join("a");
        for mode in [0o644, 0o640, 0o604, 0o620, 0o602] {
            std::fs::set_permissions(&a, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = parse_in(&file, &token_toml("a", "a")).unwrap_err();
            assert!(
                e.message
                    .contains(&format!("(mode {mode:o}): chmod 600 {}", a.display())),
                "{e}"
            );
        }
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o400)).unwrap();
        parse_in(&file, &token_toml("a", "a")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&a, dir.path().join("link")).unwrap();
        let e = parse_in(&file, &token_toml("a", "link")).unwrap_err();
        assert!(
            e.message.contains("is a symbolic link")
                && e.message
                    .contains(&format!("point secret_file at {}", a.display())),
            "{e}"
        );
    }

    #[test]
    fn a_fifo_secret_file_is_refused_without_waiting_for_a_writer() {
        let (dir, file) = secrets();
        nix::unistd::mkfifo(
            &dir.path().join("fifo"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        let e = parse_in(&file, &token_toml("a", "fifo")).unwrap_err();
        assert!(e.message.contains("not a regular file"), "{e}");
    }

    #[test]
    fn a_secret_file_that_is_no_small_regular_file_is_refused_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        let huge = dir.path().join("huge");
        std::fs::write(&huge, vec![b'a'; 5000]).unwrap();
        for (file, says) in [
            ("/dev/zero", "not a regular file"),
            (huge.to_str().unwrap(), "larger than 4096 bytes"),
        ] {
            let toml = token_toml("a", file);
            let err = Config::parse(&toml, "c.toml").unwrap_err().to_string();
            assert!(
                err.contains("tokens[0].secret_file") && err.contains(says),
                "{err}"
            );
        }
    }

    #[test]
    fn token_secrets_are_read_trimmed_and_hidden() {
        let (dir, file) = secrets();
        let abs = dir.path().join("b").display().to_string();
        let text = token_toml("a", "a") + &token_toml("b", &abs);
        let c = parse_in(&file, &text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.tokens[0].secret, TokenSecret::new(b"alpha-secret"));
        assert_eq!(c.tokens[1].secret, TokenSecret::new(b"beta-secret"));
        assert_eq!(c.tokens[0].access, TokenAccess::Read, "read by default");
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("alpha") && shown.contains("<redacted>"),
            "{shown}"
        );
        let json = serde_json::to_string(&c.tokens).unwrap();
        assert!(!json.contains("secret\":"), "{json}");
    }

    #[test]
    fn token_secret_errors_point_at_the_file() {
        let (_dir, file) = secrets();
        let e = parse_in(&file, &token_toml("a", "nope")).unwrap_err();
        assert_eq!((e.line, e.col), (3, 15), "{e}");
        assert!(
            e.message
                .starts_with("tokens[0].secret_file: cannot read the secret file ")
                && e.message.contains("nope"),
            "{e}"
        );
        let e = parse_in(&file, &(token_toml("a", "a") + &token_toml("e", "empty"))).unwrap_err();
        assert_eq!((e.line, e.col), (7, 15), "{e}");
        assert!(e.message.contains("is empty"), "{e}");
        let e = parse_in(&file, &(token_toml("a", "a") + &token_toml("b", "./a"))).unwrap_err();
        assert!(e.message.contains("the same as token \"a\"'s"), "{e}");
        let e = parse_in(
            &file,
            "[[tokens]]\nname = \"a\"\nsecret_file = \"a\"\nports = []\n",
        )
        .unwrap_err();
        assert_eq!((e.line, e.col), (4, 9), "{e}");
        assert!(e.message.contains("tokens[0].ports: it is empty"), "{e}");
    }
}
