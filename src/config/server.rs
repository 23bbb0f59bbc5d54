//! The `[server]` section: where and how HTTP is served (and the rule that
//! it is never served unauthenticated beyond loopback), retention, the log
//! directory and what ad-hoc connects may open.

use std::path::{Path, PathBuf};

use serde::Serialize;
use toml::Spanned;

use super::access::AuthMode;
use super::checks::{check_globs, next_to_config};
use super::diagnostics::{ConfigError, Source};
use super::raw::RawServer;
use crate::remote::allow::RemoteRule;

/// Retention per port when the config does not say: 1 MiB.
pub const DEFAULT_RETENTION: usize = 1 << 20;
/// Smallest retention the config accepts: 4 KiB.
pub const MIN_RETENTION: usize = 4 << 10;
/// Largest retention the config accepts: 1 GiB.
pub const MAX_RETENTION: usize = 1 << 30;
/// Quick losses in a row (a device lost within
/// `port::reader::QUICK_LOSS` of opening) after which a port is marked
/// `down` and retried slowly, when the config does not say (`down_after`).
pub const DEFAULT_DOWN_AFTER: u32 = 5;
/// Largest `down_after` the config accepts.
pub const MAX_DOWN_AFTER: u32 = 1000;
/// Device globs ad-hoc connects may open when the config does not say.
pub const DEFAULT_ADHOC_DEVICES: [&str; 3] =
    ["/dev/ttyUSB*", "/dev/ttyACM*", "/dev/serial/by-id/*"];

/// How long a line waits for a person's approval when the config does
/// not say: 5 minutes.
pub const DEFAULT_APPROVAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// The `[server]` table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerConfig {
    /// Address (`host:port`) for streamable HTTP at `/mcp`; none: stdio only.
    pub listen: Option<String>,
    /// Loopback address (`host:port`) of a listener with only `/metrics`
    /// and `/healthz`, without authentication, for a local Prometheus.
    pub metrics_listen: Option<String>,
    /// TLS on the HTTP listener (`tls_cert` and `tls_key`, or `tls =
    /// "off"` with `tls_off_reason`).
    pub tls: super::tls::ListenerTls,
    /// Where alerts are POSTed, signed (`alert_webhook`).
    pub alert_webhook: Option<super::webhook::WebhookConfig>,
    /// How HTTP callers authenticate (`auth`, default bearer tokens).
    pub auth: AuthMode,
    /// Output bytes kept per port ([`DEFAULT_RETENTION`] unless set).
    pub retention: usize,
    /// Directory for per-port transcripts (`transcripts/<port>.log`) and
    /// the audit log (`audit.log`); none: neither. A relative path is
    /// relative to the config file's directory.
    pub log_dir: Option<PathBuf>,
    /// The one directory `send_file` reads from and `receive_file` writes
    /// into (images, crash files); none: no file transfers. A relative
    /// path is relative to the config file's directory.
    pub files_dir: Option<PathBuf>,
    /// The most the regular files in `files_dir` may hold in all: a
    /// received file that would take it past this is refused, so a device
    /// (or a caller) sending file after file cannot fill the disk
    /// (`files_max`).
    pub files_max: u64,
    /// A user's own TextFSM templates and `index` (`templates_dir`;
    /// relative to the config file's directory), which win over the
    /// shipped ntc-templates; none: the shipped ones only.
    pub templates_dir: Option<PathBuf>,
    /// `templates_dir`'s templates, compiled when the config loads.
    #[serde(skip)]
    pub templates: std::sync::Arc<crate::parse::UserTemplates>,
    /// The local console socket people attach through (`console_socket`;
    /// relative to the config file's directory). Unset: under systemd's
    /// `RuntimeDirectory` (`$RUNTIME_DIRECTORY/console.sock`) when the
    /// daemon runs with one, else none.
    pub console_socket: Option<PathBuf>,
    /// Directory for what outlives a restart: the web view's sign-in
    /// sessions (`state_dir`; relative to the config file's directory).
    /// Unset: systemd's `StateDirectory` (`$STATE_DIRECTORY`) when the
    /// daemon runs with one, else none (browsers sign in again after a
    /// restart).
    pub state_dir: Option<PathBuf>,
    /// The SSH door's address (`host:port`, `ssh_listen`): people of
    /// `[[people]]` reach ports with `ssh`. Its host key lives in
    /// `state_dir`, which it needs. None: no SSH door.
    pub ssh_listen: Option<String>,
    /// Size at which a transcript or the audit log is rotated (`log_max`,
    /// on a line boundary).
    pub log_max: u64,
    /// Rotated files kept per transcript and of the audit log (`log_keep`).
    pub log_keep: usize,
    /// Whether `connect` may open devices that are not configured ports.
    pub allow_adhoc: bool,
    /// Globs of the device paths ad-hoc connects may open.
    pub adhoc_devices: Vec<String>,
    /// The remote consoles ad-hoc connects may reach by `telnet://`,
    /// `rfc2217://` or `tcp://` URL: `host:ports` entries (addresses, CIDR
    /// ranges or names; see `crate::remote::allow`); empty (the
    /// default): none.
    pub adhoc_remotes: Vec<RemoteRule>,
    /// Quick losses in a row before a port is `down` (`down_after`, default
    /// [`DEFAULT_DOWN_AFTER`]; 0: never); a port may override it.
    pub down_after: u32,
    /// The command policy of callers without a token: the local operator
    /// over stdio and a loopback HTTP caller without auth (`policy`; the
    /// config checked that it names one). None: the port's default.
    pub policy: Option<String>,
    /// How long a line its policy sends only once a person approves waits
    /// for one before it is denied (`approval_timeout`, default
    /// [`DEFAULT_APPROVAL_TIMEOUT`]); a policy may say otherwise.
    pub approval_timeout: std::time::Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: None,
            metrics_listen: None,
            tls: super::tls::ListenerTls::Unset,
            alert_webhook: None,
            auth: AuthMode::Token,
            retention: DEFAULT_RETENTION,
            log_dir: None,
            files_dir: None,
            files_max: crate::files::DEFAULT_FILES_MAX,
            templates_dir: None,
            templates: Default::default(),
            console_socket: std::env::var_os("RUNTIME_DIRECTORY")
                .filter(|dir| !dir.is_empty())
                .map(|dir| PathBuf::from(dir).join("console.sock")),
            state_dir: std::env::var_os("STATE_DIRECTORY")
                .filter(|dir| !dir.is_empty())
                .map(PathBuf::from),
            ssh_listen: None,
            log_max: crate::transcript::DEFAULT_LOG_MAX,
            log_keep: crate::transcript::DEFAULT_LOG_KEEP,
            allow_adhoc: false,
            adhoc_devices: DEFAULT_ADHOC_DEVICES.map(String::from).to_vec(),
            adhoc_remotes: Vec::new(),
            down_after: DEFAULT_DOWN_AFTER,
            policy: None,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
        }
    }
}

impl ServerConfig {
    /// Whether an ad-hoc connect may open `path`: ad-hoc connects are on and
    /// the path matches one of `adhoc_devices`. `*` does not cross a `/`,
    /// and a path with `.` or `..` components or a relative path never
    /// matches. Symlinks are not followed: `/dev/serial/by-id/*` is
    /// udev-managed.
    pub fn adhoc_allowed(&self, path: &str) -> bool {
        if !self.allow_adhoc
            || !path.starts_with('/')
            || path.split('/').any(|part| part == "." || part == "..")
        {
            return false;
        }
        let options = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: true,
        };
        self.adhoc_devices
            .iter()
            .any(|g| glob::Pattern::new(g).is_ok_and(|p| p.matches_with(path, options)))
    }
}

impl RawServer {
    /// Checks the `[server]` values over the defaults.
    pub(super) fn resolve(self, src: &Source) -> Result<ServerConfig, ConfigError> {
        let mut s = ServerConfig::default();
        if let Some(listen) = self.listen {
            check_listen(listen.get_ref())
                .map_err(|e| src.error(listen.span(), format!("server.listen: {e}")))?;
            s.listen = Some(listen.into_inner());
        }
        if let Some(listen) = self.metrics_listen {
            let at = |e: String| src.error(listen.span(), format!("server.metrics_listen: {e}"));
            check_listen(listen.get_ref()).map_err(at)?;
            if !listen_is_loopback(listen.get_ref()) {
                return Err(at(format!(
                    "{:?} is not a loopback address; metrics_listen serves without a token, so only 127.0.0.1, ::1 or localhost; a remote Prometheus scrapes /metrics on `listen` with a token of access \"metrics\"",
                    listen.get_ref()
                )));
            }
            s.metrics_listen = Some(listen.into_inner());
        }
        s.tls = super::tls::RawTls {
            cert: self.tls_cert,
            key: self.tls_key,
            mode: self.tls,
            reason: self.tls_off_reason,
        }
        .resolve(src)?;
        if let Some(hook) = self.alert_webhook {
            s.alert_webhook = Some(hook.resolve(src)?);
        }
        if let Some(auth) = self.auth {
            s.auth = auth.into_inner();
        }
        if let Some(r) = self.retention {
            let bytes = r.get_ref().0;
            if !(MIN_RETENTION..=MAX_RETENTION).contains(&bytes) {
                return Err(src.error(
                    r.span(),
                    format!("server.retention: {bytes} bytes is out of range: use 4KiB to 1GiB, e.g. \"1MiB\""),
                ));
            }
            s.retention = bytes;
        }
        if let Some(dir) = self.log_dir {
            s.log_dir = Some(private_dir("log_dir", "/var/log/serialgate", dir, src)?);
        }
        if let Some(dir) = self.state_dir {
            s.state_dir = Some(private_dir("state_dir", "/var/lib/serialgate", dir, src)?);
        }
        if let Some(listen) = self.ssh_listen {
            check_listen(listen.get_ref())
                .map_err(|e| src.error(listen.span(), format!("server.ssh_listen: {e}")))?;
            if s.state_dir.is_none() {
                return Err(src.error(
                    listen.span(),
                    "server.ssh_listen: the SSH door keeps its host key in state_dir, and none is set; set [server] state_dir (e.g. \"/var/lib/serialgate\")",
                ));
            }
            s.ssh_listen = Some(listen.into_inner());
        }
        if let Some(dir) = self.files_dir {
            if dir.get_ref().as_os_str().is_empty() {
                return Err(src.error(
                    dir.span(),
                    "server.files_dir: it is empty; give the directory images are sent from and files received into, or leave files_dir out",
                ));
            }
            s.files_dir = Some(next_to_config(dir.get_ref(), src));
        }
        if let Some(dir) = self.templates_dir {
            if dir.get_ref().as_os_str().is_empty() {
                return Err(src.error(
                    dir.span(),
                    "server.templates_dir: it is empty; give the directory of your own TextFSM templates and index, or leave templates_dir out",
                ));
            }
            let path = next_to_config(dir.get_ref(), src);
            let templates = crate::parse::UserTemplates::load(&path)
                .map_err(|e| src.error(dir.span(), format!("server.templates_dir: {e}")))?;
            s.templates = std::sync::Arc::new(templates);
            s.templates_dir = Some(path);
        }
        if let Some(path) = self.console_socket {
            if path.get_ref().as_os_str().is_empty() {
                return Err(src.error(
                    path.span(),
                    "server.console_socket: it is empty; give a path such as \"/run/serialgate/console.sock\" or leave it out",
                ));
            }
            s.console_socket = Some(next_to_config(path.get_ref(), src));
        }
        if let Some(m) = self.files_max {
            let bytes = m.get_ref().0 as u64;
            if !(crate::files::MAX_FILE..=1 << 50).contains(&bytes) {
                return Err(src.error(
                    m.span(),
                    format!(
                        "server.files_max: {bytes} bytes is out of range: use {} (one largest file) to 1PiB, e.g. \"4GiB\"",
                        crate::files::MAX_FILE
                    ),
                ));
            }
            s.files_max = bytes;
        }
        if let Some(m) = self.log_max {
            let bytes = m.get_ref().0;
            if !(4096..=MAX_RETENTION * 4).contains(&bytes) {
                return Err(src.error(
                    m.span(),
                    format!("server.log_max: {bytes} bytes is out of range: use 4KiB to 4GiB, e.g. \"16MiB\""),
                ));
            }
            s.log_max = bytes as u64;
        }
        if let Some(k) = self.log_keep {
            let keep = *k.get_ref();
            if !(0..=1000).contains(&keep) {
                return Err(src.error(
                    k.span(),
                    format!("server.log_keep: {keep} is out of range: keep 0 to 1000 rotated files, e.g. 5"),
                ));
            }
            s.log_keep = keep as usize;
        }
        if let Some(v) = self.allow_adhoc {
            s.allow_adhoc = v;
        }
        if let Some(globs) = self.adhoc_devices {
            s.adhoc_devices = check_globs(globs, "server.adhoc_devices", src)?;
        }
        if let Some(entries) = self.adhoc_remotes {
            s.adhoc_remotes = entries
                .iter()
                .map(|entry| check_remote_entry(entry, src))
                .collect::<Result<_, _>>()?;
        }
        if let Some(n) = self.down_after {
            s.down_after = check_down_after(&n, "server.down_after", src)?;
        }
        // Its name is checked against the policies by the file's resolve.
        s.policy = self.policy.map(Spanned::into_inner);
        if let Some(t) = &self.approval_timeout {
            s.approval_timeout =
                super::checks::check_approval_timeout(t, "server.approval_timeout", src)?;
        }
        Ok(s)
    }
}

/// Parses one `adhoc_remotes` entry; the error points at the part of it
/// that is wrong (at its opening quote when the string has escapes).
fn check_remote_entry(entry: &Spanned<String>, src: &Source) -> Result<RemoteRule, ConfigError> {
    RemoteRule::parse(entry.get_ref()).map_err(|e| {
        let span = entry.span();
        let inside = src.text.get(span.start + 1..span.end.saturating_sub(1));
        let at = if inside == Some(entry.get_ref().as_str()) {
            span.start + 1 + e.at
        } else {
            span.start
        };
        src.error(at..at, format!("server.adhoc_remotes: {}", e.message))
    })
}

/// Checks a `down_after` value: 0 (never) to [`MAX_DOWN_AFTER`].
pub(super) fn check_down_after(
    n: &Spanned<i64>,
    key: &str,
    src: &Source,
) -> Result<u32, ConfigError> {
    let v = *n.get_ref();
    u32::try_from(v)
        .ok()
        .filter(|v| *v <= MAX_DOWN_AFTER)
        .ok_or_else(|| {
            src.error(
                n.span(),
                format!("{key}: {v} is out of range: give 0 (never mark the port down) to {MAX_DOWN_AFTER} quick losses in a row, e.g. 5"),
            )
        })
}

/// Checks a listen address: `host:port`, with an IPv6 host in brackets.
pub fn check_listen(s: &str) -> Result<(), String> {
    if s.parse::<std::net::SocketAddr>().is_ok() {
        return Ok(());
    }
    let ok = match s.rsplit_once(':') {
        Some((host, port)) => {
            !host.is_empty() && !host.contains(':') && port.parse::<u16>().is_ok()
        }
        None => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{s:?} is not host:port; use e.g. \"127.0.0.1:7301\""
        ))
    }
}

/// Whether a `host:port` listen address is on the loopback interface, as
/// far as the text says: a loopback IP, or `localhost`. Any other name
/// counts as not loopback (the serving code checks the address it bound).
pub fn listen_is_loopback(listen: &str) -> bool {
    if let Ok(addr) = listen.parse::<std::net::SocketAddr>() {
        return addr.ip().to_canonical().is_loopback();
    }
    listen
        .rsplit_once(':')
        .is_some_and(|(host, _)| host.eq_ignore_ascii_case("localhost"))
}

/// The security rule of the HTTP transport: it never runs without
/// authentication unless the operator says so explicitly, and then only on
/// loopback. `no_tokens`: no `[[tokens]]` are configured. The error says
/// what to change.
pub fn check_http_auth(auth: AuthMode, no_tokens: bool, loopback: bool) -> Result<(), String> {
    match (auth, no_tokens, loopback) {
        (AuthMode::None, _, false) => Err(
            "auth = \"none\" is only allowed on a loopback listen address (127.0.0.1, ::1, localhost); \
             add [[tokens]] and remove auth = \"none\" to serve other hosts"
                .into(),
        ),
        (AuthMode::None, false, true) => Err(
            "auth = \"none\" but [[tokens]] are configured; remove auth = \"none\" to require the tokens, \
             or remove the [[tokens]]"
                .into(),
        ),
        (AuthMode::None, true, true) => Ok(()),
        (AuthMode::Token, true, false) => Err(
            "HTTP on a non-loopback address needs authentication, and no [[tokens]] are configured; \
             add a [[tokens]] entry (name, secret_file, ports, access)"
                .into(),
        ),
        (AuthMode::Token, true, true) => Err(
            "no [[tokens]] are configured; add a [[tokens]] entry, or set auth = \"none\" in [server] \
             to serve this loopback address without authentication"
                .into(),
        ),
        (AuthMode::Token, false, _) => Ok(()),
    }
}

/// The directory of `server.KEY`, next to the config when relative:
/// refused when empty (the error shows `example`) or open to others.
fn private_dir(
    key: &str,
    example: &str,
    dir: Spanned<PathBuf>,
    src: &Source,
) -> Result<PathBuf, ConfigError> {
    let span = dir.span();
    if dir.get_ref().as_os_str().is_empty() {
        return Err(src.error(
            span,
            format!(
                "server.{key}: it is empty; give a directory such as {example:?} or leave {key} out"
            ),
        ));
    }
    let dir = next_to_config(dir.get_ref(), src);
    check_log_dir(&dir).map_err(|e| src.error(span, format!("server.{key}: {e}")))?;
    Ok(dir)
}

/// Checks an existing `log_dir` or `state_dir`: a directory nobody but its
/// owner (the daemon's user, or root) may write to, or others could plant
/// files and links there or remove the audit trail. A missing one is
/// created by the daemon (mode 750).
fn check_log_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot check {}: {e}", dir.display())),
        Ok(meta) if !meta.is_dir() => Err(format!(
            "{} is not a directory; give a directory",
            dir.display()
        )),
        Ok(meta) => crate::logfile::check_private_dir(dir, meta.mode(), meta.uid()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::config::Config;

    #[test]
    fn transcript_rotation_keys() {
        let c = parse(
            "[server]\nlog_dir = \"/var/log/serialgate\"\nlog_max = \"1MiB\"\nlog_keep = 3\n",
        );
        assert_eq!((c.server.log_max, c.server.log_keep), (1 << 20, 3));
        assert_error(
            "[server]\nlog_keep = -1\n",
            "2:12",
            &["server.log_keep: -1 is out of range"],
        );
        assert_error(
            "[server]\nlog_max = \"1KiB\"\n",
            "2:11",
            &["server.log_max: 1024 bytes is out of range"],
        );
    }

    #[test]
    fn http_needs_auth() {
        let (_dir, file) = secrets();
        let with_token = token_toml("a", "a");
        let ok = |text: &str| parse_in(&file, text).unwrap_or_else(|e| panic!("{e}"));
        let err = |text: &str| parse_in(&file, text).unwrap_err();

        let e = err(&format!(
            "[server]\nlisten = \"0.0.0.0:7301\"\n{with_token}"
        ));
        assert!(e.message.contains("needs TLS"), "{e}");
        let c = ok(&format!(
            "[server]\nlisten = \"0.0.0.0:7301\"\ntls = \"off\"\ntls_off_reason = \"the proxy\"\n{with_token}"
        ));
        assert_eq!(c.server.auth, AuthMode::Token);
        ok("[server]\nlisten = \"127.0.0.1:7301\"\nauth = \"none\"\n");
        ok("[server]\nlisten = \"localhost:7301\"\nauth = \"none\"\n");
        ok("[server]\nlisten = \"[::1]:7301\"\nauth = \"none\"\n");
        // without listen, nothing is served over HTTP: nothing to check
        ok("[server]\nauth = \"none\"\n");

        let e = err("[server]\nlisten = \"0.0.0.0:7301\"\n");
        assert_eq!((e.line, e.col), (2, 10));
        assert!(
            e.message
                .starts_with("server.listen: HTTP on a non-loopback address needs authentication"),
            "{e}"
        );
        let e = err("[server]\nlisten = \"127.0.0.1:7301\"\n");
        assert!(
            e.message.contains("no [[tokens]] are configured")
                && e.message.contains("set auth = \"none\""),
            "{e}"
        );
        let e = err("[server]\nlisten = \"10.1.2.3:7301\"\nauth = \"none\"\n");
        assert_eq!((e.line, e.col), (3, 8));
        assert!(
            e.message
                .starts_with("server.auth: auth = \"none\" is only allowed on a loopback"),
            "{e}"
        );
        let e = err(&format!(
            "[server]\nlisten = \"console-host:7301\"\nauth = \"none\"\n{with_token}"
        ));
        assert!(e.message.contains("only allowed on a loopback"), "{e}");
        let e = err(&format!(
            "[server]\nlisten = \"127.0.0.1:7301\"\nauth = \"none\"\n{with_token}"
        ));
        assert!(e.message.contains("but [[tokens]] are configured"), "{e}");
        let e = err("[server]\nauth = \"basic\"\n");
        assert!(
            e.message.contains("server.auth: unknown variant `basic`"),
            "{e}"
        );
    }

    #[test]
    fn loopback_listen_addresses() {
        for yes in [
            "127.0.0.1:7301",
            "127.1.2.3:1",
            "[::1]:7301",
            "localhost:7301",
            "[::ffff:127.0.0.1]:80",
        ] {
            assert!(listen_is_loopback(yes), "{yes}");
        }
        for no in [
            "0.0.0.0:7301",
            "[::]:7301",
            "10.0.0.1:7301",
            "console-host:7301",
            "localhost.evil:1",
        ] {
            assert!(!listen_is_loopback(no), "{no}");
        }
    }
    #[test]
    fn adhoc_globbing() {
        let mut s = ServerConfig::default();
        assert!(!s.adhoc_allowed("/dev/ttyUSB0"), "off by default");
        s.allow_adhoc = true;
        for ok in [
            "/dev/ttyUSB0",
            "/dev/ttyUSB12",
            "/dev/ttyACM0",
            "/dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0",
        ] {
            assert!(s.adhoc_allowed(ok), "{ok}");
        }
        for no in [
            "/dev/ttyS0",
            "/dev/sda",
            "ttyUSB0",
            "/dev/ttyUSB0/../sda",
            "/dev/serial/by-id/../../sda",
            "/dev/serial/by-id/./x",
            "/dev/serial/by-id/a/b",
            "/dev/serial/by-path/pci-0000:00:14.0-usb-0:1:1.0-port0",
            "",
        ] {
            assert!(!s.adhoc_allowed(no), "{no}");
        }
        s.adhoc_devices = vec!["/dev/tty[SU]*".into()];
        assert!(s.adhoc_allowed("/dev/ttyS1"));
        assert!(!s.adhoc_allowed("/dev/ttyACM0"));
    }

    #[test]
    fn log_dir_is_next_to_the_config_and_refused_when_others_may_write_to_it() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, file) = secrets();
        let c = parse_in(&file, "[server]\nlog_dir = \"logs\"\n").unwrap();
        assert_eq!(c.server.log_dir, Some(dir.path().join("logs")));
        let logs = dir.path().join("logs");
        std::fs::create_dir(&logs).unwrap();
        for mode in [0o777, 0o1777, 0o775, 0o757] {
            std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = parse_in(&file, "[server]\nlog_dir = \"logs\"\n").unwrap_err();
            assert!(
                e.message.starts_with("server.log_dir: ")
                    && e.message
                        .contains(&format!("chmod go-w {}", logs.display())),
                "{e}"
            );
        }
        std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o755)).unwrap();
        parse_in(&file, "[server]\nlog_dir = \"logs\"\n").unwrap();
        let e = parse_in(&file, "[server]\nlog_dir = \"a\"\n").unwrap_err();
        assert!(e.message.contains("is not a directory"), "{e}");
    }

    #[test]
    fn state_dir_is_next_to_the_config_and_checked_like_log_dir() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, file) = secrets();
        let c = parse_in(&file, "[server]\nstate_dir = \"state\"\n").unwrap();
        assert_eq!(c.server.state_dir, Some(dir.path().join("state")));
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = parse_in(&file, "[server]\nstate_dir = \"state\"\n").unwrap_err();
        assert!(
            e.message.starts_with("server.state_dir: ") && e.message.contains("chmod go-w"),
            "{e}"
        );
        let e = parse_in(&file, "[server]\nstate_dir = \"\"\n").unwrap_err();
        assert!(e.message.contains("it is empty"), "{e}");
    }

    #[test]
    fn adhoc_remotes_errors_point_into_the_entry() {
        // Each at `line:col` of the wrong part of the entry.
        for (entries, at, parts) in [
            (
                r#"["10.0.0.*:20*"]"#,
                "3:26",
                &[
                    "server.adhoc_remotes: \"10.0.0.*:20*\": entries are not globs",
                    "CIDR range (e.g. 10.0.0.0/24",
                ][..],
            ),
            (
                r#"["10.0.0.0/24:2000-2099", "10.0.0.5"]"#,
                "3:52",
                &["\"10.0.0.5\": no port after the host", "\"10.0.0.5:*\""],
            ),
            (r#"["telnet://h:*"]"#, "3:19", &["without a scheme"]),
            (
                r#"["127.1:7000"]"#,
                "3:19",
                &[
                    "\"127.1\" is 127.0.0.1 in a spelling",
                    "four decimal numbers: 127.0.0.1",
                ],
            ),
            (
                r#"["[2001:db8::5]/32:*"]"#,
                "3:20",
                &["the range is [2001:db8::]/32"],
            ),
            (
                r#"["h:20*"]"#,
                "3:21",
                &["\"20*\" is not a port", "a range (2000-2099)"],
            ),
            (r#"["localhost:*"]"#, "3:19", &["write 127.0.0.1:PORT"]),
            // An escape in the string: the error points at the string.
            (r#"["h\u003a20*"]"#, "3:18", &["\"20*\" is not a port"]),
        ] {
            assert_error(
                &format!("[server]\nallow_adhoc = true\nadhoc_remotes = {entries}\n"),
                at,
                parts,
            );
        }
    }

    #[test]
    fn down_after_is_global_with_a_per_port_override() {
        let c = parse(
            "[server]\ndown_after = 2\n[ports.a]\ndevice = \"/dev/ttyUSB0\"\n[ports.b]\ndevice = \"/dev/ttyUSB1\"\ndown_after = 0\n",
        );
        assert_eq!(c.server.down_after, 2);
        assert_eq!(c.ports["a"].down_after, 2);
        assert_eq!(c.ports["b"].down_after, 0);
        assert_eq!(
            parse("[ports.a]\ndevice = \"/dev/ttyUSB0\"\n").ports["a"].down_after,
            DEFAULT_DOWN_AFTER
        );
        let adhoc = c.resolve_port("x", "/dev/ttyUSB9", None).unwrap();
        assert_eq!(adhoc.down_after, 2);
        assert_error(
            "[server]\ndown_after = -1\n",
            "2:14",
            &["server.down_after: -1 is out of range", "0 (never"],
        );
        assert_error(
            "[ports.a]\ndevice = \"/dev/ttyUSB0\"\ndown_after = 5000\n",
            "3:14",
            &["ports.a.down_after: 5000 is out of range"],
        );
    }

    #[test]
    fn approvers_of_a_policy() {
        let c = parse(
            "[policies.asks-user]\napprovers = [\"people\", \"client_user\"]\n[policies.people]\napprovers = [\"people\"]\n",
        );
        assert!(c.policies["asks-user"].client_user_approves);
        assert!(!c.policies["people"].client_user_approves);
        assert!(
            !c.policies["guarded"].client_user_approves,
            "people only unless said"
        );
        assert_error(
            "[policies.p]\napprovers = [\"people\", \"boss\"]\n",
            "2:24",
            &[
                "policies.p.approvers: \"boss\" is not an approver",
                "\"client_user\"",
            ],
        );
        assert_error(
            "[policies.p]\napprovers = [\"client_user\"]\n",
            "2:14",
            &["policies.p.approvers: \"people\" must be one of them"],
        );
    }

    #[test]
    fn approval_timeout_in_the_server_and_a_policy() {
        use std::time::Duration;
        let c = parse(
            "[server]\napproval_timeout = \"90s\"\n[policies.quick]\napproval_timeout = \"2m\"\nself_approve = true\n",
        );
        assert_eq!(c.server.approval_timeout, Duration::from_secs(90));
        assert_eq!(
            c.policies["quick"].approval_timeout,
            Some(Duration::from_secs(120))
        );
        assert_eq!(c.policies["guarded"].approval_timeout, None);
        assert!(c.policies["quick"].self_approve && !c.policies["guarded"].self_approve);
        assert_eq!(
            parse("").server.approval_timeout,
            DEFAULT_APPROVAL_TIMEOUT,
            "5 minutes unless set"
        );
        assert_error(
            "[server]\napproval_timeout = \"0s\"\n",
            "2:20",
            &["server.approval_timeout: \"0s\" is not a duration from 1s to 24h"],
        );
        assert_error(
            "[policies.p]\napproval_timeout = \"soon\"\n",
            "2:20",
            &["policies.p.approval_timeout: \"soon\""],
        );
    }

    #[test]
    fn remote_devices_and_adhoc_remotes() {
        let c = parse(
            "[server]\nallow_adhoc = true\nadhoc_remotes = [\"10.0.0.0/24:2000-2099\", \"ts1.lab:*\", \"[2001:db8::5]:*\"]\n\n[ports.a]\ndevice = \"telnet://10.0.0.5:2001\"\n\n[ports.b]\ndevice = \"tcp://[2001:db8::5]:4001\"\n\n[ports.c]\ndevice = \"rfc2217://10.0.0.5:7001\"\nbaud = 115200\n",
        );
        assert_eq!(c.ports["a"].device, "telnet://10.0.0.5:2001");
        assert_eq!(c.ports["c"].device, "rfc2217://10.0.0.5:7001");
        assert_eq!(c.ports["c"].line.baud, 115200, "the line the server sets");
        let entries: Vec<&str> = c.server.adhoc_remotes.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            entries,
            ["10.0.0.0/24:2000-2099", "ts1.lab:*", "[2001:db8::5]:*"]
        );
        assert!(c.server.adhoc_remotes[0].may_admit("10.0.0.7", 2003));
        assert!(!c.server.adhoc_remotes[0].may_admit("10.0.0.7", 23));
        assert!(c.server.adhoc_remotes[1].may_admit("TS1.lab.", 4001));
        assert!(
            ServerConfig::default().adhoc_remotes.is_empty(),
            "no remotes by default"
        );
        for (text, want) in [
            (
                "[ports.a]\ndevice = \"ssh://h:22\"\n",
                "ports.a.device: unknown scheme",
            ),
            (
                "[ports.a]\ndevice = \"telnet://h\"\n",
                "ports.a.device: \"telnet://h\" needs host:port",
            ),
        ] {
            let e = Config::parse(text, FILE).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn the_documented_adhoc_remotes_parse_and_mean_what_they_say() {
        let readme = include_str!("../../README.md");
        let example = include_str!("../../config/example.toml");
        let lines: Vec<&str> = readme
            .lines()
            .chain(example.lines().map(|l| l.trim_start_matches("# ")))
            .filter(|l| l.starts_with("adhoc_remotes = "))
            .collect();
        assert_eq!(lines.len(), 2, "one in the README, one in the example");
        for line in lines {
            let c = parse(&format!("[server]\nallow_adhoc = true\n{line}\n"));
            let v6 = c
                .server
                .adhoc_remotes
                .iter()
                .find(|r| r.as_str() == "[2001:db8::5]:*")
                .unwrap_or_else(|| panic!("{line}"));
            let dest = |ip: &str| crate::remote::resolve::Destination {
                ip: ip.parse().unwrap(),
                this_host: false,
            };
            assert!(v6.admits("2001:db8::5", 2001, dest("2001:db8::5")));
            assert!(!v6.admits("0", 2001, dest("0.0.0.0")));
            assert!(!v6.admits("2001:db8::6", 2001, dest("2001:db8::6")));
        }
    }
}
