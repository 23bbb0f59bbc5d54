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
mod server;
mod tokens;
#[cfg(test)]
mod test_support;

pub use self::diagnostics::ConfigError;
pub use self::raw::parse_size;
pub use self::server::{
    AuthMode, DEFAULT_ADHOC_DEVICES, DEFAULT_DOWN_AFTER, DEFAULT_RETENTION, MAX_DOWN_AFTER,
    MAX_RETENTION, MIN_RETENTION, ServerConfig, check_http_auth, check_listen,
    listen_is_loopback,
};
pub use self::tokens::{TokenAccess, TokenConfig, TokenSecret};
use self::diagnostics::{Source, syntax_hint, toml_key};
use self::raw::{Overrides, RawFile, RawPort, RawPreset};
use self::server::check_down_after;
use self::tokens::resolve_tokens;

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use toml::Spanned;

use self::presets::{AutoReply, DEFAULT_PRESET, Preset};
use crate::remote::RemoteAddr;
use crate::settings::{LineEnding, LineSettings};

/// Largest config file read: a config is a few KiB, and a bigger file is
/// refused before it is read whole (a wrong path, a log or a core dump).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
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

}
