//! Helpers of the config tests: parsing a text, asserting where its error
//! is, and secret files to point tokens at.

use std::path::Path;

use super::{Config, ConfigError};

/// What the errors of [`parse`] and [`error`] call the file.
pub(super) const FILE: &str = "test.toml";

/// The config of `text`; panics with the error if it has one.
pub(super) fn parse(text: &str) -> Config {
    Config::parse(text, FILE).unwrap_or_else(|e| panic!("{e}"))
}

/// The error as `line:col: message`.
pub(super) fn error(text: &str) -> String {
    let e = Config::parse(text, FILE).expect_err("expected an error");
    let shown = e.to_string();
    assert_eq!(shown, format!("{FILE}:{}:{}: {}", e.line, e.col, e.message));
    assert!(!e.message.contains('\n'), "multi-line message: {shown}");
    format!("{}:{}: {}", e.line, e.col, e.message)
}

/// Asserts the error is at `at` (`line:col`) and its message contains
/// every one of `parts`.
pub(super) fn assert_error(text: &str, at: &str, parts: &[&str]) {
    let e = error(text);
    assert!(e.starts_with(&format!("{at}: ")), "want {at}, got {e}");
    for part in parts {
        assert!(e.contains(part), "{e:?} lacks {part:?}");
    }
}

/// A directory with secret files `a` and `b` (and an empty one), and
/// the config file name to parse with inside it.
pub(super) fn secrets() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("a", "alpha-secret\n"),
        ("b", "beta-secret"),
        ("empty", " \n\t\n"),
    ] {
        write_private(&dir.path().join(name), text);
    }
    let file = dir.path().join("c.toml").display().to_string();
    (dir, file)
}

/// Writes a file only its owner may read (as a secret file must be).
pub(super) fn write_private(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// `text` parsed as if it were the file `file` (relative paths in it are
/// relative to that file's directory).
pub(super) fn parse_in(file: &str, text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, file)
}

/// A `[[tokens]]` entry named `name` reaching every port, its secret in
/// `secret_file`.
pub(super) fn token_toml(name: &str, secret_file: &str) -> String {
    format!("[[tokens]]\nname = \"{name}\"\nsecret_file = \"{secret_file}\"\nports = [\"*\"]\n")
}
