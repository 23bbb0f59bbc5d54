//! What several sections check the same way: names, lists of globs, and
//! paths relative to the config file.

use std::path::{Path, PathBuf};

use toml::Spanned;

use super::diagnostics::{ConfigError, Source};

/// Checks a list of globs (`adhoc_devices`, a token's `ports`): each one
/// valid and not empty.
pub(super) fn check_globs(
    globs: Vec<Spanned<String>>,
    key: &str,
    src: &Source,
) -> Result<Vec<String>, ConfigError> {
    globs
        .into_iter()
        .map(|g| match glob::Pattern::new(g.get_ref()) {
            Ok(_) if g.get_ref().is_empty() => {
                Err(src.error(g.span(), format!("{key}: a glob is empty")))
            }
            Ok(_) => Ok(g.into_inner()),
            Err(e) => Err(src.error(g.span(), format!("{key}: bad glob {:?}: {e}", g.get_ref()))),
        })
        .collect()
}

/// `path` as the config means it: a relative path is relative to the config
/// file's directory (so it does not depend on where the daemon started).
pub(super) fn next_to_config(path: &Path, src: &Source) -> PathBuf {
    if path.is_relative() {
        Path::new(src.file)
            .parent()
            .map_or_else(|| path.to_path_buf(), |dir| dir.join(path))
    } else {
        path.to_path_buf()
    }
}

/// Checks a port, preset or policy name: `[A-Za-z0-9][A-Za-z0-9_.-]*`.
pub(super) fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    match chars.next() {
        None => Err("it is empty".into()),
        Some(c) if !c.is_ascii_alphanumeric() => Err("it must start with a letter or digit".into()),
        _ if !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')) => {
            Err("use only letters, digits, '_', '.' and '-' (like core-sw1 or rack2.pdu_a)".into())
        }
        _ => Ok(()),
    }
}

/// Reads an `approval_timeout` (at `key` for messages): a duration from
/// 1 second to 24 hours, e.g. `"5m"`.
pub(super) fn check_approval_timeout(
    value: &Spanned<String>,
    key: &str,
    src: &Source,
) -> Result<std::time::Duration, ConfigError> {
    use std::time::Duration;
    humantime::parse_duration(value.get_ref())
        .ok()
        .filter(|d| (Duration::from_secs(1)..=Duration::from_secs(24 * 3600)).contains(d))
        .ok_or_else(|| {
            src.error(
                value.span(),
                format!(
                    "{key}: {:?} is not a duration from 1s to 24h, e.g. \"5m\"",
                    value.get_ref()
                ),
            )
        })
}

/// `host:port` of an address written `host` or `host:port` (an IPv6
/// host bracketed), `port` when it names none; `None` if it is empty or
/// has spaces.
pub(super) fn host_and_port(written: &str, port: u16) -> Option<String> {
    let host = written.trim();
    if host.is_empty() || host.contains(char::is_whitespace) {
        return None;
    }
    Some(
        if host
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && !h.ends_with(':') && p.parse::<u16>().is_ok())
        {
            host.to_owned()
        } else if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        },
    )
}
