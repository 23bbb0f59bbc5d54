//! Stored device credentials: the user name, password and enable secret a
//! port logs in with, read from a file (`credentials = "PATH"` on a port or
//! preset) that only the daemon's user may read, so that an agent never
//! has to be handed them. The secrets never leave this type except as the
//! bytes written to the device and the patterns the port masks in its
//! output; `Debug` and every error leave them out.

use std::fmt;
use std::path::Path;

use serde::Deserialize;

use super::tokens::read_small_file;

/// Largest credentials file read.
const MAX_CREDENTIALS_FILE: u64 = 4096;
/// Shortest secret accepted: every occurrence of a secret in the device's
/// output is masked, and a shorter one would mask ordinary text.
pub const MIN_SECRET_BYTES: usize = 4;

/// A port's login: user name, password, and the enable secret if the
/// device has one.
#[derive(Clone, PartialEq)]
pub struct Credentials {
    /// The user name; not secret (it is typed at `Username:` and echoed).
    pub username: String,
    password: String,
    enable: Option<String>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<secret>")
            .field("enable", &self.enable.as_ref().map(|_| "<secret>"))
            .finish()
    }
}

/// The file's shape.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialsFile {
    username: String,
    password: String,
    enable: Option<String>,
}

impl Credentials {
    /// Credentials from values (tests, and the file reader).
    pub fn new(username: &str, password: &str, enable: Option<&str>) -> Credentials {
        Credentials {
            username: username.to_owned(),
            password: password.to_owned(),
            enable: enable.map(str::to_owned),
        }
    }

    /// The password typed after the user name.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The enable secret, if the file has one.
    pub fn enable(&self) -> Option<&str> {
        self.enable.as_deref()
    }

    /// Every secret (password, enable secret), for masking the output.
    pub fn secrets(&self) -> Vec<&[u8]> {
        let mut all = vec![self.password.as_bytes()];
        all.extend(self.enable.as_deref().map(str::as_bytes));
        all
    }

    /// Reads and checks the file at `path` (already resolved next to the
    /// config). The errors say what to fix and never quote the file.
    pub fn read(path: &Path) -> Result<Credentials, String> {
        use std::os::unix::fs::PermissionsExt;
        let shown = path.display();
        let (bytes, meta) = read_small_file(path, MAX_CREDENTIALS_FILE, "credentials")
            .map_err(|e| format!("cannot read the credentials file {shown}: {e}"))?;
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(format!(
                "the credentials file {shown} may be read or changed by other users than its owner \
                 (mode {mode:o}): chmod 600 {shown}, and change the device's passwords if others could read it"
            ));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| format!("the credentials file {shown} is not UTF-8 text"))?;
        // toml's messages quote the offending value, which may be a
        // secret: say where, not what.
        let file: CredentialsFile = toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            format!(
                "the credentials file {shown} is not valid{}: write username = \"...\", password = \"...\" and optionally enable = \"...\", as TOML strings",
                line.map_or_else(String::new, |l| format!(" at line {l}"))
            )
        })?;
        let check = |what: &str, secret: &str| -> Result<(), String> {
            if secret.len() < MIN_SECRET_BYTES {
                return Err(format!(
                    "the {what} in {shown} is shorter than {MIN_SECRET_BYTES} bytes: serialgate masks every \
                     occurrence of it in the device's output, so it must not be ordinary text; use a longer one"
                ));
            }
            if secret.contains(['\r', '\n']) {
                return Err(format!(
                    "the {what} in {shown} holds a line break; a secret is typed as one line"
                ));
            }
            Ok(())
        };
        if file.username.trim().is_empty() || file.username.contains(['\r', '\n']) {
            return Err(format!(
                "the username in {shown} is empty or holds a line break"
            ));
        }
        check("password", &file.password)?;
        if let Some(enable) = &file.enable {
            check("enable secret", enable)?;
        }
        Ok(Credentials {
            username: file.username,
            password: file.password,
            enable: file.enable,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn file(text: &str, mode: u32) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sw1.credentials");
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        (dir, path)
    }

    #[test]
    fn a_private_file_is_read_and_debug_hides_the_secrets() {
        let (_dir, path) = file(
            "username = \"admin\"\npassword = \"s3cret-pw\"\nenable = \"en-s3cret\"\n",
            0o600,
        );
        let c = Credentials::read(&path).unwrap();
        assert_eq!(c.username, "admin");
        assert_eq!(c.password(), "s3cret-pw");
        assert_eq!(c.enable(), Some("en-s3cret"));
        let debug = format!("{c:?}");
        assert!(!debug.contains("s3cret"), "{debug}");
        assert_eq!(c.secrets(), vec![&b"s3cret-pw"[..], b"en-s3cret"]);
    }

    #[test]
    fn bad_files_are_refused_without_quoting_them() {
        let (_dir, path) = file("username = \"admin\"\npassword = \"s3cret-pw\"\n", 0o640);
        let e = Credentials::read(&path).unwrap_err();
        assert!(e.contains("chmod 600"), "{e}");
        for (text, says) in [
            ("username = \"admin\"\npassword = 12345678\n", "line 2"),
            (
                "username = \"admin\"\npassword = \"s3cret-pw\"\nsudo = 1\n",
                "not valid",
            ),
            (
                "username = \"admin\"\npassword = \"abc\"\n",
                "shorter than 4",
            ),
            ("username = \"\"\npassword = \"s3cret-pw\"\n", "username"),
            (
                "username = \"a\"\npassword = \"s3cret\\npw\"\n",
                "line break",
            ),
        ] {
            let (_dir, path) = file(text, 0o600);
            let e = Credentials::read(&path).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
            assert!(!e.contains("12345678") && !e.contains("s3cret"), "{e}");
        }
        let (dir, path) = file("username = \"admin\"\npassword = \"s3cret-pw\"\n", 0o600);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let e = Credentials::read(&link).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
    }
}
