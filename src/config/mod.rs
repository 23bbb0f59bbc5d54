//! The config file (TOML): server settings, access tokens, user presets and
//! configured ports, checked and resolved into plain values.
//!
//! Parsing happens in two steps. serde reads the text into `Raw*` structs
//! that mirror the file (unknown keys are errors, values the checks need to
//! point at are [`toml::Spanned`]); then [`Config::parse`] checks values,
//! resolves `extends` chains and applies port overrides. Every error is a
//! [`ConfigError`] located at the offending key or value.

mod diagnostics;
pub mod presets;
mod raw;
mod tokens;
#[cfg(test)]
mod test_support;

pub use self::diagnostics::ConfigError;
pub use self::raw::parse_size;
pub use self::tokens::{TokenAccess, TokenConfig, TokenSecret};
use self::diagnostics::{Source, syntax_hint, toml_key};
use self::raw::{Overrides, RawFile, RawPort, RawPreset, RawServer};
use self::tokens::resolve_tokens;

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use self::presets::{AutoReply, DEFAULT_PRESET, Preset};
use crate::remote::RemoteAddr;
use crate::remote::allow::RemoteRule;
use crate::settings::{LineEnding, LineSettings};

/// Retention per port when the config does not say: 1 MiB.
pub const DEFAULT_RETENTION: usize = 1 << 20;
/// Smallest retention the config accepts: 4 KiB.
pub const MIN_RETENTION: usize = 4 << 10;
/// Largest retention the config accepts: 1 GiB.
pub const MAX_RETENTION: usize = 1 << 30;
/// Quick losses in a row (a device lost within
/// [`crate::port::QUICK_LOSS`] of opening) after which a port is marked
/// `down` and retried slowly, when the config does not say (`down_after`).
pub const DEFAULT_DOWN_AFTER: u32 = 5;
/// Largest `down_after` the config accepts.
pub const MAX_DOWN_AFTER: u32 = 1000;
/// Largest config file read: a config is a few KiB, and a bigger file is
/// refused before it is read whole (a wrong path, a log or a core dump).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Device globs ad-hoc connects may open when the config does not say.
pub const DEFAULT_ADHOC_DEVICES: [&str; 3] =
    ["/dev/ttyUSB*", "/dev/ttyACM*", "/dev/serial/by-id/*"];

/// The whole configuration, checked and resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// The `[server]` table.
    pub server: ServerConfig,
    /// HTTP access tokens (`[[tokens]]`), their secrets read from their
    /// files (and kept only as digests); enforced by [`crate::http`].
    pub tokens: Vec<TokenConfig>,
    /// Built-in presets plus the user's, all resolved.
    pub presets: BTreeMap<String, Preset>,
    /// Configured ports, resolved: port keys override the preset's values,
    /// which override those of the preset it extends.
    pub ports: BTreeMap<String, Arc<PortConfig>>,
}

/// The `[server]` table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerConfig {
    /// Address (`host:port`) for streamable HTTP at `/mcp`; none: stdio only.
    pub listen: Option<String>,
    /// How HTTP callers authenticate (`auth`, default bearer tokens).
    pub auth: AuthMode,
    /// Output bytes kept per port ([`DEFAULT_RETENTION`] unless set).
    pub retention: usize,
    /// Directory for per-port transcripts (`transcripts/<port>.log`) and
    /// the audit log (`audit.log`); none: neither. A relative path is
    /// relative to the config file's directory.
    pub log_dir: Option<PathBuf>,
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
    /// ranges or names; see [`crate::remote::allow`]); empty (the
    /// default): none.
    pub adhoc_remotes: Vec<RemoteRule>,
    /// Quick losses in a row before a port is `down` (`down_after`, default
    /// [`DEFAULT_DOWN_AFTER`]; 0: never); a port may override it.
    pub down_after: u32,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: None,
            auth: AuthMode::Token,
            retention: DEFAULT_RETENTION,
            log_dir: None,
            log_max: crate::transcript::DEFAULT_LOG_MAX,
            log_keep: crate::transcript::DEFAULT_LOG_KEEP,
            allow_adhoc: false,
            adhoc_devices: DEFAULT_ADHOC_DEVICES.map(String::from).to_vec(),
            adhoc_remotes: Vec::new(),
            down_after: DEFAULT_DOWN_AFTER,
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

/// How HTTP callers authenticate (`[server] auth`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// `Authorization: Bearer <secret>` of one of the `[[tokens]]` (default).
    #[default]
    Token,
    /// No authentication: every caller has full access. Only allowed on a
    /// loopback listen address, and only when said explicitly.
    None,
}

/// A configured (or ad-hoc) port with its preset applied.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PortConfig {
    /// Port name (`[ports.NAME]`).
    pub name: String,
    /// Device path, e.g. `/dev/serial/by-id/usb-FTDI_...-if00-port0`.
    pub device: String,
    /// Name of the preset it started from.
    pub preset: String,
    /// Baud rate and framing.
    pub line: LineSettings,
    /// What is appended to text sent to the device.
    pub line_ending: LineEnding,
    /// Prompt regex source (`regex::bytes` syntax).
    pub prompt: String,
    /// Triggers answered while a read waits, in order.
    pub auto_reply: Vec<AutoReply>,
    /// Pager prompt literals removed by output cleanup.
    pub pagers: Vec<String>,
    /// Regex sources marking cleaned output lines as errors.
    pub error_patterns: Vec<String>,
    /// Command that turns paging off.
    pub paging_off: Option<String>,
    /// Quick losses in a row before the port is `down` (0: never).
    pub down_after: u32,
}

impl PortConfig {
    fn from_preset(name: &str, device: &str, p: Preset, down_after: u32) -> PortConfig {
        PortConfig {
            name: name.to_owned(),
            device: device.to_owned(),
            preset: p.name,
            line: p.line,
            line_ending: p.line_ending,
            prompt: p.prompt,
            auto_reply: p.auto_reply,
            pagers: p.pagers,
            error_patterns: p.error_patterns,
            paging_off: p.paging_off,
            down_after,
        }
    }
}

impl Config {
    /// Reads and parses the config file at `path`.
    /// A file larger than [`MAX_CONFIG_BYTES`] or not UTF-8 is refused
    /// with an error that says so (and where the bad byte is).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let file = path.display().to_string();
        let whole = |message: String| ConfigError {
            file: file.clone(),
            line: 0,
            col: 0,
            message,
        };
        let bytes = read_capped(path, MAX_CONFIG_BYTES).map_err(|e| match e {
            ReadCapped::TooBig(size) => whole(format!(
                "the config file is {size} bytes, more than the {MAX_CONFIG_BYTES} a config may have; is this the right file?"
            )),
            ReadCapped::Io(e) => whole(format!("cannot read the config file: {e}")),
        })?;
        check_config_file(path).map_err(whole)?;
        match String::from_utf8(bytes) {
            Ok(text) => Config::parse(&text, &file),
            Err(e) => {
                let bytes = e.as_bytes();
                let at = e.utf8_error().valid_up_to();
                let before = &bytes[..at];
                let line_start = before
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                Err(ConfigError {
                    file: file.clone(),
                    line: before.iter().filter(|&&b| b == b'\n').count() + 1,
                    col: String::from_utf8_lossy(&before[line_start..])
                        .chars()
                        .count()
                        + 1,
                    message: format!(
                        "byte 0x{:02x} is not UTF-8; a config is TOML text: is this the right file, or was it saved in another encoding?",
                        bytes[at]
                    ),
                })
            }
        }
    }

    /// Parses config text; `file_name` is what errors call the file.
    pub fn parse(text: &str, file_name: &str) -> Result<Config, ConfigError> {
        let src = Source {
            file: file_name,
            text,
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let mut error = src.toml_error(&e);
            error.message.push_str(syntax_hint(text, &error.message));
            error
        })?;
        raw.resolve(&src)
    }

    /// The configuration without a file: built-in presets, no ports, server
    /// defaults.
    pub fn default_with_builtins() -> Config {
        Config {
            server: ServerConfig::default(),
            tokens: Vec::new(),
            presets: builtin_map(),
            ports: BTreeMap::new(),
        }
    }

    /// A [`PortConfig`] for a port that is not in the config (an ad-hoc
    /// connect) or a configured port switched to another preset: `preset`
    /// (default `generic`) applied to `device`. The error says what is wrong
    /// and lists the presets.
    pub fn resolve_port(
        &self,
        name: &str,
        device: &str,
        preset: Option<&str>,
    ) -> Result<PortConfig, String> {
        check_name(name).map_err(|e| format!("bad port name {name:?}: {e}"))?;
        if device.is_empty() {
            return Err("the device path is empty; give one like /dev/ttyUSB0".into());
        }
        let preset = preset.unwrap_or(DEFAULT_PRESET);
        let p = self.presets.get(preset).ok_or_else(|| {
            format!(
                "unknown preset {preset:?}; presets: {}",
                self.preset_names().join(", ")
            )
        })?;
        Ok(PortConfig::from_preset(
            name,
            device,
            p.clone(),
            self.server.down_after,
        ))
    }

    /// The configured port whose device path is `device`, if any.
    pub fn port_by_device(&self, device: &str) -> Option<&PortConfig> {
        self.ports
            .values()
            .map(Arc::as_ref)
            .find(|p| p.device == device)
    }

    fn preset_names(&self) -> Vec<&str> {
        self.presets.keys().map(String::as_str).collect()
    }
}

/// Why [`read_capped`] failed.
enum ReadCapped {
    /// The file is larger than the cap (its size, or at least the cap + 1).
    TooBig(u64),
    /// It could not be read.
    Io(std::io::Error),
}

/// Reads a file of at most `cap` bytes without reading more than `cap + 1`
/// of it, whatever its size (a FIFO or `/dev/zero` included).
fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, ReadCapped> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(ReadCapped::Io)?;
    if let Ok(meta) = file.metadata()
        && meta.is_file()
        && meta.len() > cap
    {
        return Err(ReadCapped::TooBig(meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadCapped::Io)?;
    if bytes.len() as u64 > cap {
        return Err(ReadCapped::TooBig(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Checks a port or preset name: `[A-Za-z0-9][A-Za-z0-9_.-]*`.
fn check_name(name: &str) -> Result<(), String> {
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

fn builtin_map() -> BTreeMap<String, Preset> {
    presets::builtin_presets()
        .into_iter()
        .map(|p| (p.name.clone(), p))
        .collect()
}

impl Overrides {
    /// Checks the values and writes them over `p`. `path` is the table's
    /// key path for messages, e.g. `ports.core-sw1`.
    fn apply(self, p: &mut Preset, path: &str, src: &Source) -> Result<(), ConfigError> {
        let check_line = |span: Range<usize>, key: &str, line: LineSettings| {
            line.validate()
                .map_err(|e| src.error(span, format!("{path}.{key}: {e}")))
        };
        if let Some(v) = self.baud {
            let line = LineSettings {
                baud: *v.get_ref(),
                ..LineSettings::default()
            };
            check_line(v.span(), "baud", line)?;
            p.line.baud = line.baud;
        }
        if let Some(v) = self.data_bits {
            let line = LineSettings {
                data_bits: *v.get_ref(),
                ..LineSettings::default()
            };
            check_line(v.span(), "data_bits", line)?;
            p.line.data_bits = line.data_bits;
        }
        if let Some(v) = self.stop_bits {
            let line = LineSettings {
                stop_bits: *v.get_ref(),
                ..LineSettings::default()
            };
            check_line(v.span(), "stop_bits", line)?;
            p.line.stop_bits = line.stop_bits;
        }
        if let Some(v) = self.parity {
            p.line.parity = v;
        }
        if let Some(v) = self.flow_control {
            p.line.flow_control = v;
        }
        if let Some(v) = self.line_ending {
            p.line_ending = v;
        }
        if let Some(v) = self.prompt {
            check_regex(&v, &format!("{path}.prompt"), "text", src)?;
            p.prompt = v.into_inner();
        }
        if let Some(table) = self.auto_reply {
            let mut replies = Vec::new();
            for (trigger, reply) in table.0 {
                if trigger.get_ref().is_empty() {
                    return Err(src.error(
                        trigger.span(),
                        format!("{path}.auto_reply: a trigger is empty; give the text to answer, e.g. \"--More--\""),
                    ));
                }
                replies.push(AutoReply {
                    trigger: trigger.into_inner(),
                    reply,
                });
            }
            p.auto_reply = replies;
        }
        if let Some(pagers) = self.pagers {
            let mut list = Vec::new();
            for pager in pagers {
                if pager.get_ref().is_empty() {
                    return Err(src.error(
                        pager.span(),
                        format!("{path}.pagers: a pager is empty; give its literal text, e.g. \" --More-- \""),
                    ));
                }
                list.push(pager.into_inner());
            }
            p.pagers = list;
        }
        if let Some(patterns) = self.error_patterns {
            let mut list = Vec::new();
            for pattern in patterns {
                check_regex(&pattern, &format!("{path}.error_patterns"), "line", src)?;
                list.push(pattern.into_inner());
            }
            p.error_patterns = list;
        }
        if let Some(v) = self.paging_off {
            p.paging_off = if v.trim().is_empty() { None } else { Some(v) };
        }
        Ok(())
    }
}

/// Compiles a regex source from the file; it must not match empty `what`
/// (a prompt that matches nothing would end every read at once).
fn check_regex(
    source: &Spanned<String>,
    key: &str,
    what: &str,
    src: &Source,
) -> Result<(), ConfigError> {
    let text = source.get_ref();
    match regex::bytes::Regex::new(text) {
        Ok(re) if re.is_match(b"") => Err(src.error(
            source.span(),
            format!("{key}: regex {text:?} matches an empty {what}; make it match the prompt's characters, e.g. \"[>#] ?$\""),
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(src.error(
            source.span(),
            format!("{key}: bad regex {text:?}: {}", regex_error(&e)),
        )),
    }
}

/// The regex crate's message without its multi-line drawing of the pattern.
fn regex_error(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(s) => {
            let detail: Vec<&str> = s
                .lines()
                .filter_map(|l| l.trim().strip_prefix("error:"))
                .map(str::trim)
                .collect();
            if detail.is_empty() {
                s.lines().map(str::trim).collect::<Vec<_>>().join(" ")
            } else {
                detail.join("; ")
            }
        }
        other => other.to_string(),
    }
}

impl RawFile {
    fn resolve(self, src: &Source) -> Result<Config, ConfigError> {
        let listen_span = self.server.listen.as_ref().map(|l| l.span());
        let auth_span = self.server.auth.as_ref().map(|a| a.span());
        let server = self.server.resolve(src)?;
        let tokens = resolve_tokens(self.tokens, src)?;
        if let (Some(listen), Some(span)) = (&server.listen, listen_span) {
            let loopback = listen_is_loopback(listen);
            check_http_auth(server.auth, tokens.is_empty(), loopback).map_err(|e| {
                // An `auth` the listen address refuses is the auth's fault.
                match auth_span {
                    Some(a) if server.auth == AuthMode::None => {
                        src.error(a, format!("server.auth: {e}"))
                    }
                    _ => src.error(span, format!("server.listen: {e}")),
                }
            })?;
        }
        let presets = resolve_presets(self.presets, src)?;
        let ports = resolve_ports(self.ports, &presets, &server, src)?;
        Ok(Config {
            server,
            tokens,
            presets,
            ports,
        })
    }
}

impl RawServer {
    fn resolve(self, src: &Source) -> Result<ServerConfig, ConfigError> {
        let mut s = ServerConfig::default();
        if let Some(listen) = self.listen {
            check_listen(listen.get_ref())
                .map_err(|e| src.error(listen.span(), format!("server.listen: {e}")))?;
            s.listen = Some(listen.into_inner());
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
            if dir.get_ref().as_os_str().is_empty() {
                return Err(src.error(
                    dir.span(),
                    "server.log_dir: it is empty; give a directory or leave log_dir out",
                ));
            }
            let span = dir.span();
            let dir = next_to_config(dir.get_ref(), src);
            check_log_dir(&dir).map_err(|e| src.error(span, format!("server.log_dir: {e}")))?;
            s.log_dir = Some(dir);
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
fn check_down_after(n: &Spanned<i64>, key: &str, src: &Source) -> Result<u32, ConfigError> {
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

/// The rule of DESIGN §6 for the HTTP transport: it never runs without
/// authentication unless the operator says so explicitly, and only on
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

fn check_globs(
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
fn next_to_config(path: &Path, src: &Source) -> PathBuf {
    if path.is_relative() {
        Path::new(src.file)
            .parent()
            .map_or_else(|| path.to_path_buf(), |dir| dir.join(path))
    } else {
        path.to_path_buf()
    }
}

/// Refuses a config file every user may change: whoever writes it may give
/// themselves a token, an ad-hoc device or a log_dir.
fn check_config_file(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| format!("cannot check the config file: {e}"))?
        .permissions()
        .mode();
    if mode & 0o002 != 0 {
        return Err(format!(
            "the config file is writable by every user (mode {:o}), who could give themselves \
             a token or a device: chmod o-w {}",
            mode & 0o7777,
            path.display()
        ));
    }
    Ok(())
}

/// Checks an existing `log_dir`: a directory nobody but its owner (the
/// daemon's user, or root) may write to, or others could plant files and
/// links there or remove the audit trail. A missing one is created by the
/// daemon (mode 750).
fn check_log_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot check {}: {e}", dir.display())),
        Ok(meta) if !meta.is_dir() => Err(format!(
            "{} is not a directory; give a directory for transcripts and the audit log",
            dir.display()
        )),
        Ok(meta) => crate::logfile::check_private_dir(dir, meta.mode(), meta.uid()),
    }
}

/// A user preset waiting to be resolved.
struct PendingPreset {
    key: Range<usize>,
    extends: Option<Spanned<String>>,
    description: Option<String>,
    overrides: Option<Overrides>,
}

fn resolve_presets(
    raw: BTreeMap<Spanned<String>, RawPreset>,
    src: &Source,
) -> Result<BTreeMap<String, Preset>, ConfigError> {
    let mut done = builtin_map();
    let mut pending: HashMap<String, PendingPreset> = HashMap::new();
    let mut order = Vec::new();
    for (name, raw) in raw {
        let span = name.span();
        let name = name.into_inner();
        check_name(&name).map_err(|e| {
            src.error(
                span.clone(),
                format!("presets: bad preset name {name:?}: {e}"),
            )
        })?;
        if done.contains_key(&name) {
            return Err(src.error(
                span,
                format!("presets.{name}: {name:?} is a built-in preset; give yours another name and extends = {name:?}"),
            ));
        }
        let (extends, description, overrides) = raw.split();
        order.push((span.start, name.clone()));
        pending.insert(
            name,
            PendingPreset {
                key: span,
                extends,
                description,
                overrides: Some(overrides),
            },
        );
    }
    // Resolve in file order so that the first error reported is the first
    // in the file.
    order.sort();
    let mut known: Vec<String> = done.keys().cloned().collect();
    known.extend(pending.keys().cloned());
    known.sort();
    for (_, name) in order {
        let mut stack = Vec::new();
        resolve_preset(&name, &mut pending, &mut done, &mut stack, &known, src)?;
    }
    Ok(done)
}

/// Resolves user preset `name` (its base first), with `stack` the chain of
/// presets being resolved, to report cycles.
fn resolve_preset(
    name: &str,
    pending: &mut HashMap<String, PendingPreset>,
    done: &mut BTreeMap<String, Preset>,
    stack: &mut Vec<String>,
    known: &[String],
    src: &Source,
) -> Result<(), ConfigError> {
    if done.contains_key(name) {
        return Ok(());
    }
    let entry = &pending[name];
    let path = format!("presets.{}", toml_key(name));
    let (base, base_span) = match &entry.extends {
        Some(e) => (e.get_ref().clone(), e.span()),
        None => (DEFAULT_PRESET.to_owned(), entry.key.clone()),
    };
    stack.push(name.to_owned());
    if !done.contains_key(&base) {
        if stack.contains(&base) {
            let mut chain = stack[stack.iter().position(|n| *n == base).unwrap_or(0)..].to_vec();
            chain.push(base.clone());
            return Err(src.error(
                base_span,
                format!(
                    "{path}.extends: presets extend each other in a cycle: {}",
                    chain.join(" → ")
                ),
            ));
        }
        if !pending.contains_key(&base) {
            return Err(src.error(
                base_span,
                format!(
                    "{path}.extends: unknown preset {base:?}; presets: {}",
                    known.join(", ")
                ),
            ));
        }
        resolve_preset(&base, pending, done, stack, known, src)?;
    }
    stack.pop();
    let Some(entry) = pending.get_mut(name) else {
        // Unreachable: `name` came from `pending` and nothing removes it.
        return Err(src.error(
            0..0,
            format!("{path}: preset {name:?} was lost while resolving presets"),
        ));
    };
    let overrides = entry.overrides.take().unwrap_or_default();
    let mut preset = done[&base].clone();
    preset.name = name.to_owned();
    preset.description = entry
        .description
        .take()
        .unwrap_or_else(|| format!("based on {base}: {}", preset.description));
    overrides.apply(&mut preset, &path, src)?;
    done.insert(name.to_owned(), preset);
    Ok(())
}

fn resolve_ports(
    raw: BTreeMap<Spanned<String>, RawPort>,
    presets: &BTreeMap<String, Preset>,
    server: &ServerConfig,
    src: &Source,
) -> Result<BTreeMap<String, Arc<PortConfig>>, ConfigError> {
    let mut raw: Vec<(Spanned<String>, RawPort)> = raw.into_iter().collect();
    raw.sort_by_key(|(name, _)| name.span().start);
    let mut devices: HashMap<String, String> = HashMap::new();
    let mut ports = BTreeMap::new();
    for (name, mut raw) in raw {
        let name_span = name.span();
        let name = name.into_inner();
        check_name(&name)
            .map_err(|e| src.error(name_span, format!("ports: bad port name {name:?}: {e}")))?;
        let path = format!("ports.{}", toml_key(&name));
        let down_after = raw.down_after.take();
        let (device, preset_name, overrides) = raw.split();
        let down_after = match down_after {
            Some(n) => check_down_after(&n, &format!("{path}.down_after"), src)?,
            None => server.down_after,
        };
        let dev = device.get_ref();
        if dev.trim().is_empty() {
            return Err(src.error(
                device.span(),
                format!("{path}.device: it is empty; give the device path, e.g. /dev/serial/by-id/usb-FTDI_..."),
            ));
        }
        if let Err(e) = RemoteAddr::parse(dev) {
            return Err(src.error(device.span(), format!("{path}.device: {e}")));
        }
        if let Some(other) = devices.get(dev) {
            return Err(src.error(
                device.span(),
                format!("{path}.device: {dev:?} is already the device of port {other}; one device, one port"),
            ));
        }
        devices.insert(dev.clone(), name.clone());
        let preset = match &preset_name {
            Some(p) => presets.get(p.get_ref()).ok_or_else(|| {
                src.error(
                    p.span(),
                    format!(
                        "{path}.preset: unknown preset {:?}; presets: {}",
                        p.get_ref(),
                        presets.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                )
            })?,
            None => &presets[DEFAULT_PRESET],
        };
        let mut p = preset.clone();
        overrides.apply(&mut p, &path, src)?;
        let port = PortConfig::from_preset(&name, device.get_ref(), p, down_after);
        ports.insert(name, Arc::new(port));
    }
    Ok(ports)
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::settings::Parity;

    const FULL: &str = r#"
[server]
listen = "127.0.0.1:7301"
retention = "16MiB"
log_dir = "/var/log/serialgate"
allow_adhoc = true
adhoc_devices = ["/dev/ttyUSB*", "/dev/serial/by-id/*"]

[[tokens]]
name = "noc-agent"
secret_file = "tokens/noc-agent"
ports = ["core-*"]
access = "write"

[presets.my-ios]
extends = "cisco-ios"
prompt = '(?m)^core-[\w.-]+(\([\w.-]+\))?[#>] ?$'
baud = 19200
auto_reply = { "--More--" = " ", "[confirm]" = "\r", "(y/n)" = "n" }

[presets.my-ios-fast]
extends = "my-ios"
description = "core switches at 115200"
baud = 115200

[ports.core-sw1]
device = "/dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0"
preset = "my-ios"
baud = 9600

[ports.core-sw2]
device = "/dev/ttyUSB1"
preset = "my-ios-fast"
parity = "even"
line_ending = "crlf"
paging_off = ""

[ports.lab]
device = "/dev/ttyUSB2"
"#;

    #[test]
    fn full_example_resolves() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tokens")).unwrap();
        write_private(&dir.path().join("tokens/noc-agent"), "  s3cret-s3cret\n\n");
        let file = dir.path().join("serialgate.toml");
        let c = Config::parse(FULL, &file.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.server.listen.as_deref(), Some("127.0.0.1:7301"));
        assert_eq!(c.server.retention, 16 << 20);
        assert_eq!(c.server.log_dir, Some(PathBuf::from("/var/log/serialgate")));
        assert!(c.server.allow_adhoc);
        assert_eq!(
            c.server.adhoc_devices,
            ["/dev/ttyUSB*", "/dev/serial/by-id/*"]
        );
        assert_eq!(
            c.tokens,
            [TokenConfig {
                name: "noc-agent".into(),
                secret_file: "tokens/noc-agent".into(),
                secret: TokenSecret::new(b"s3cret-s3cret"),
                ports: vec!["core-*".into()],
                access: TokenAccess::Write,
            }]
        );

        let ios = presets::builtin("cisco-ios").unwrap();
        let my = &c.presets["my-ios"];
        assert_eq!(my.line.baud, 19200);
        assert_eq!(my.prompt, r"(?m)^core-[\w.-]+(\([\w.-]+\))?[#>] ?$");
        assert_eq!(my.error_patterns, ios.error_patterns);
        assert_eq!(my.paging_off.as_deref(), Some("terminal length 0"));
        assert!(my.description.starts_with("based on cisco-ios: "));
        // the table's order is kept
        assert_eq!(
            my.auto_reply,
            [
                AutoReply::new("--More--", " "),
                AutoReply::new("[confirm]", "\r"),
                AutoReply::new("(y/n)", "n"),
            ]
        );
        let fast = &c.presets["my-ios-fast"];
        assert_eq!(fast.description, "core switches at 115200");
        assert_eq!(fast.line.baud, 115200);
        assert_eq!(fast.prompt, my.prompt);
        assert_eq!(fast.auto_reply, my.auto_reply);
        // built-ins are all there
        for p in presets::builtin_presets() {
            assert_eq!(c.presets[&p.name], p);
        }

        // port key beats preset beats extends-base
        let sw1 = &c.ports["core-sw1"];
        assert_eq!(sw1.name, "core-sw1");
        assert_eq!(
            sw1.device,
            "/dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0"
        );
        assert_eq!(sw1.preset, "my-ios");
        assert_eq!(sw1.line.baud, 9600);
        assert_eq!(sw1.prompt, my.prompt);
        assert_eq!(sw1.auto_reply, my.auto_reply);
        assert_eq!(sw1.pagers, ios.pagers);
        assert_eq!(sw1.line_ending, LineEnding::Cr);

        let sw2 = &c.ports["core-sw2"];
        assert_eq!(sw2.preset, "my-ios-fast");
        assert_eq!(sw2.line.baud, 115200);
        assert_eq!(sw2.line.parity, Parity::Even);
        assert_eq!(sw2.line.data_bits, 8);
        assert_eq!(sw2.line_ending, LineEnding::Crlf);
        assert_eq!(sw2.paging_off, None);

        let lab = &c.ports["lab"];
        let generic = presets::builtin("generic").unwrap();
        assert_eq!(lab.preset, "generic");
        assert_eq!(lab.prompt, generic.prompt);
        assert_eq!(lab.line, LineSettings::default());
        assert_eq!(
            c.port_by_device("/dev/ttyUSB2").map(|p| p.name.as_str()),
            Some("lab")
        );
    }

    #[test]
    fn empty_file_is_defaults() {
        let c = parse("");
        assert_eq!(c, Config::default_with_builtins());
        assert_eq!(c.server.retention, 1 << 20);
        assert!(!c.server.allow_adhoc);
        assert_eq!(
            c.server.adhoc_devices,
            ["/dev/ttyUSB*", "/dev/ttyACM*", "/dev/serial/by-id/*"]
        );
        assert_eq!(c.presets.len(), presets::builtin_presets().len());
        assert!(c.ports.is_empty() && c.tokens.is_empty());
    }

    #[test]
    fn user_preset_without_extends_extends_generic() {
        let c = parse("[presets.pdu]\nbaud = 115200\nprompt = 'pdu> ?$'\n");
        let pdu = &c.presets["pdu"];
        let generic = presets::builtin("generic").unwrap();
        assert_eq!(pdu.line.baud, 115200);
        assert_eq!(pdu.prompt, "pdu> ?$");
        assert_eq!(pdu.auto_reply, generic.auto_reply);
        assert!(pdu.description.starts_with("based on generic"));
    }

    #[test]
    fn extends_a_later_preset() {
        let c = parse(
            "[presets.a]\nextends = \"b\"\nstop_bits = 2\n\
             [presets.b]\nextends = \"linux\"\n",
        );
        assert_eq!(c.presets["a"].line.baud, 115200);
        assert_eq!(c.presets["a"].line.stop_bits, 2);
        assert_eq!(c.presets["b"].line.stop_bits, 1);
    }

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
    fn bad_values() {
        assert_error(
            "[server]\nretention = \"1XB\"\n",
            "2:13",
            &["server.retention: bad size \"1XB\""],
        );
        assert_error(
            "[server]\nretention = \"1KiB\"\n",
            "2:13",
            &["server.retention: 1024 bytes is out of range"],
        );
        assert_error(
            "[server]\nretention = \"2GiB\"\n",
            "2:13",
            &["server.retention:", "out of range"],
        );
        assert_error(
            "[server]\nretention = -5\n",
            "2:13",
            &["server.retention: bad size -5"],
        );
        assert_error(
            "[server]\nlisten = \"7301\"\n",
            "2:10",
            &["server.listen: \"7301\" is not host:port"],
        );
        assert_error(
            "[server]\nadhoc_devices = [\"/dev/ttyUSB*\", \"/dev/[\"]\n",
            "2:34",
            &["server.adhoc_devices: bad glob \"/dev/[\""],
        );
        assert_error(
            "[ports.a]\ndevice = \"/dev/ttyUSB0\"\nbaud = 0\n",
            "3:8",
            &["ports.a.baud: baud 0 is out of range"],
        );
        assert_error(
            "[ports.a]\ndevice = \"/dev/ttyUSB0\"\ndata_bits = 9\n",
            "3:13",
            &["ports.a.data_bits: data_bits 9 is out of range"],
        );
        assert_error(
            "[presets.p]\nstop_bits = 3\n",
            "2:13",
            &["presets.p.stop_bits: stop_bits 3 is out of range"],
        );
        assert_error(
            "[ports.a]\ndevice = \"\"\n",
            "2:10",
            &["ports.a.device: it is empty"],
        );
        assert_error(
            "[ports.a]\ndevice = \"/dev/ttyUSB0\"\nauto_reply = { \"\" = \" \" }\n",
            "3:16",
            &["ports.a.auto_reply: a trigger is empty"],
        );
        assert_error(
            "[[tokens]]\nname = \"a\"\nsecret_file = \"/s\"\nports = [\"*\"]\n\
             [[tokens]]\nname = \"a\"\nsecret_file = \"/t\"\nports = [\"*\"]\n",
            "6:8",
            &["tokens[1].name: another token is already named \"a\""],
        );
    }

    #[test]
    fn bad_regexes() {
        assert_error(
            "[ports.a]\ndevice = \"/dev/ttyUSB0\"\nprompt = '(?m)^sw(\\d+#'\n",
            "3:10",
            &["ports.a.prompt: bad regex \"(?m)^sw(\\\\d+#\": unclosed group"],
        );
        assert_error(
            "[presets.p]\nerror_patterns = [\"^% Invalid\", \"[oops\"]\n",
            "2:33",
            &["presets.p.error_patterns: bad regex \"[oops\": unclosed character class"],
        );
        assert_error(
            "[presets.p]\nprompt = \"#?$\"\n",
            "2:10",
            &["presets.p.prompt: regex \"#?$\" matches an empty text"],
        );
    }

    #[test]
    fn unknown_presets_and_cycles() {
        assert_error(
            "[ports.a]\ndevice = \"/dev/ttyUSB0\"\npreset = \"cisco-iso\"\n",
            "3:10",
            &[
                "ports.a.preset: unknown preset \"cisco-iso\"; presets: ",
                "cisco-ios",
            ],
        );
        assert_error(
            "[presets.p]\nextends = \"junos\"\n",
            "2:11",
            &[
                "presets.p.extends: unknown preset \"junos\"",
                "juniper-junos, linux, p",
            ],
        );
        assert_error(
            "[presets.a]\nextends = \"b\"\n[presets.b]\nextends = \"a\"\n",
            "4:11",
            &["presets.b.extends: presets extend each other in a cycle: a → b → a"],
        );
        assert_error(
            "[presets.a]\nextends = \"a\"\n",
            "2:11",
            &["presets.a.extends:", "cycle: a → a"],
        );
        assert_error(
            "[presets.cisco-ios]\nbaud = 115200\n",
            "1:10",
            &["presets.cisco-ios: \"cisco-ios\" is a built-in preset"],
        );
    }

    #[test]
    fn duplicate_devices_and_bad_names() {
        assert_error(
            "[ports.b]\ndevice = \"/dev/ttyUSB0\"\n\n[ports.a]\ndevice = \"/dev/ttyUSB0\"\n",
            "5:10",
            &["ports.a.device: \"/dev/ttyUSB0\" is already the device of port b"],
        );
        assert_error(
            "[ports.\"core sw1\"]\ndevice = \"/dev/ttyUSB0\"\n",
            "1:8",
            &["bad port name \"core sw1\"", "letters, digits"],
        );
        assert_error(
            "[ports._x]\ndevice = \"/dev/ttyUSB0\"\n",
            "1:8",
            &["bad port name \"_x\": it must start with a letter or digit"],
        );
        assert_error("[presets.\"a/b\"]\n", "1:10", &["bad preset name \"a/b\""]);
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
    fn files_too_big_or_not_text_are_refused_with_a_place() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.toml");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_CONFIG_BYTES + 1).unwrap();
        let e = Config::load(&big).unwrap_err();
        assert_eq!(e.line, 0);
        assert!(e.message.contains("is the right file"), "{e}");
        let binary = dir.path().join("bin.toml");
        std::fs::write(&binary, b"[server]\nretention = \"1\xffMiB\"\n").unwrap();
        let e = Config::load(&binary).unwrap_err();
        assert_eq!((e.line, e.col), (2, 15), "{e}");
        assert!(e.message.contains("0xff is not UTF-8"), "{e}");
    }

    #[test]
    fn load_reads_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[ports.a]\ndevice = \"/dev/ttyUSB0\"\nbaud = 0\n").unwrap();
        let e = Config::load(&path).unwrap_err();
        assert_eq!(e.file, path.display().to_string());
        assert_eq!((e.line, e.col), (3, 8));
        let missing = dir.path().join("missing.toml");
        let e = Config::load(&missing).unwrap_err();
        assert_eq!(e.line, 0);
        assert!(
            e.to_string()
                .starts_with(&format!("{}: cannot read", missing.display()))
        );
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
    fn resolve_port_for_adhoc() {
        let c = parse("[presets.lab]\nextends = \"linux\"\nbaud = 57600\n");
        let p = c.resolve_port("ttyUSB0", "/dev/ttyUSB0", None).unwrap();
        let generic = presets::builtin("generic").unwrap();
        assert_eq!(p.name, "ttyUSB0");
        assert_eq!(p.device, "/dev/ttyUSB0");
        assert_eq!(p.preset, "generic");
        assert_eq!(p.prompt, generic.prompt);
        assert_eq!(p.line, generic.line);

        let p = c
            .resolve_port("r1", "/dev/ttyACM0", Some("cisco-ios"))
            .unwrap();
        assert_eq!(p.preset, "cisco-ios");
        assert_eq!(p.paging_off.as_deref(), Some("terminal length 0"));

        let p = c.resolve_port("box", "/dev/ttyUSB3", Some("lab")).unwrap();
        assert_eq!((p.preset.as_str(), p.line.baud), ("lab", 57600));

        let e = c
            .resolve_port("r1", "/dev/ttyUSB0", Some("nope"))
            .unwrap_err();
        assert!(
            e.contains("unknown preset \"nope\"") && e.contains("cisco-nxos, generic, "),
            "{e}"
        );
        let e = c
            .resolve_port("bad name", "/dev/ttyUSB0", None)
            .unwrap_err();
        assert!(e.contains("bad port name"), "{e}");
        assert!(c.resolve_port("r1", "", None).is_err());
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
            let dest = |ip: &str| crate::remote::allow::Destination {
                ip: ip.parse().unwrap(),
                this_host: false,
            };
            assert!(v6.admits("2001:db8::5", 2001, dest("2001:db8::5")));
            assert!(!v6.admits("0", 2001, dest("0.0.0.0")));
            assert!(!v6.admits("2001:db8::6", 2001, dest("2001:db8::6")));
        }
    }

    #[test]
    fn example_config_parses() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/config/example.toml");
        let c = Config::load(Path::new(path)).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            c.ports
                .values()
                .all(|p| p.device.starts_with("/dev/serial/by-id/"))
        );
        assert_eq!(
            c.ports.values().filter(|p| p.preset == "cisco-ios").count(),
            2
        );
        assert_eq!(c.ports["core-sw2"].line.baud, 19200);
        let lab = &c.ports["lab-rtr1"];
        assert_eq!((lab.preset.as_str(), lab.line.baud), ("lab-ios", 115200));
        assert_eq!(lab.error_patterns, c.presets["cisco-ios"].error_patterns);
        assert_eq!(lab.down_after, 0);
        assert_eq!(c.ports["core-sw1"].down_after, DEFAULT_DOWN_AFTER);
        assert_eq!(c.server, ServerConfig::default());
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
    fn a_config_file_every_user_may_change_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = Config::load(&path).unwrap_err();
        assert!(
            e.message.contains(&format!("chmod o-w {}", path.display())),
            "{e}"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o664)).unwrap();
        Config::load(&path).unwrap();
    }

    #[test]
    fn http_needs_auth() {
        let (_dir, file) = secrets();
        let with_token = token_toml("a", "a");
        let ok = |text: &str| parse_in(&file, text).unwrap_or_else(|e| panic!("{e}"));
        let err = |text: &str| parse_in(&file, text).unwrap_err();

        let c = ok(&format!(
            "[server]\nlisten = \"0.0.0.0:7301\"\n{with_token}"
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
}
