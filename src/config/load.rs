//! The resolved [`Config`]: the file read (capped, not writable by every
//! user), parsed and its sections resolved, and the rule that joins two of
//! them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::access::AuthMode;
use super::diagnostics::{ConfigError, Source, syntax_hint, toml_key};
use super::people::{PersonConfig, resolve_people};
use super::policies::{Policy, builtin_policies, check_policy_name, resolve_policies};
use super::presets::Preset;
use super::raw::RawFile;
use super::resolve::{PortConfig, builtin_map, resolve_ports, resolve_presets};
use super::server::{ServerConfig, check_http_auth, listen_is_loopback};
use super::tokens::{TokenConfig, resolve_tokens};

/// Largest config file read: a config is a few KiB, and a bigger file is
/// refused before it is read whole (a wrong path, a log or a core dump).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The whole configuration, checked and resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// The `[server]` table.
    pub server: ServerConfig,
    /// HTTP access tokens (`[[tokens]]`), their secrets read from their
    /// files (and kept only as digests); enforced by `crate::daemon::http`.
    pub tokens: Vec<TokenConfig>,
    /// The engineers of the SSH door (`[[people]]`), their keys read from
    /// their `authorized_keys` files; enforced by `crate::daemon::ssh`.
    pub people: Vec<PersonConfig>,
    /// Built-in presets plus the user's, all resolved.
    pub presets: BTreeMap<String, Preset>,
    /// Configured ports, resolved: port keys override the preset's values,
    /// which override those of the preset it extends.
    pub ports: BTreeMap<String, Arc<PortConfig>>,
    /// Command policies by name: the built-in ones and `[policies.NAME]`.
    pub policies: BTreeMap<String, Policy>,
    /// The fleet this gateway joins (`[fleet]`), if any; `crate::fleet`
    /// and the daemon's fleet link act on it.
    pub fleet: Option<super::fleet::FleetConfig>,
    /// Power controllers by name (`[power.NAME]`), whose outlets ports
    /// name; switched by `crate::power`.
    pub power: BTreeMap<String, super::power::PowerController>,
}

impl Config {
    /// Whether a line is judged the same under `other` as under this
    /// config, port by port aside: the same policies, the same policy
    /// for callers without a token and for each token. A reload that
    /// changes any of them withdraws the requests waiting for approval,
    /// which were judged by the rules that are gone.
    pub fn judges_as(&self, other: &Config) -> bool {
        let by_token = |c: &Config| -> Vec<(String, Option<String>)> {
            c.tokens
                .iter()
                .map(|t| (t.name.clone(), t.policy.clone()))
                .collect()
        };
        self.policies == other.policies
            && self.server.policy == other.server.policy
            && by_token(self) == by_token(other)
    }

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
        // TOML refuses a NUL byte; say where the first is and what it means.
        if let Some(at) = text.find('\0') {
            return Err(src.error(
                at..at + 1,
                "a NUL byte; the file holds NUL bytes, so it is not a TOML config: is this the right file?",
            ));
        }
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let mut error = src.toml_error(&e);
            match super::first_mistakes::hint(text, &error.message) {
                Some(fix) => {
                    error.message.push_str("; ");
                    error.message.push_str(&fix);
                }
                None => error.message.push_str(syntax_hint(text, &error.message)),
            }
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
            people: Vec::new(),
            presets: builtin_map(),
            ports: BTreeMap::new(),
            policies: builtin_policies()
                .into_iter()
                .map(|p| (p.name.clone(), p))
                .collect(),
            fleet: None,
            power: BTreeMap::new(),
        }
    }

    /// The `[[tokens]]` entry named `name`, if any: what a connection or a
    /// hold opened with that token is judged by after a reload.
    pub fn token_named(&self, name: &str) -> Option<&TokenConfig> {
        self.tokens.iter().find(|t| t.name == name)
    }

    /// The configured port whose device path is `device`, if any.
    pub fn port_by_device(&self, device: &str) -> Option<&PortConfig> {
        self.ports
            .values()
            .map(Arc::as_ref)
            .find(|p| p.device == device)
    }
}

impl RawFile {
    /// Checks and resolves the sections, then the rule that joins two of
    /// them: HTTP is only served unauthenticated when the file says so.
    fn resolve(self, src: &Source) -> Result<Config, ConfigError> {
        let listen_span = self.server.listen.as_ref().map(|l| l.span());
        let auth_span = self.server.auth.as_ref().map(|a| a.span());
        let policies = resolve_policies(self.policies, src)?;
        if let Some(name) = &self.server.policy {
            check_policy_name(name, "server.policy", &policies, src)?;
        }
        let server = self.server.resolve(src)?;
        let tokens = resolve_tokens(self.tokens, &policies, src)?;
        let people = resolve_people(self.people, &policies, src)?;
        if let (Some(listen), Some(span)) = (&server.listen, listen_span) {
            let loopback = listen_is_loopback(listen);
            check_http_auth(server.auth, tokens.is_empty(), loopback).map_err(|e| {
                // An `auth` the listen address refuses is the auth's fault.
                match auth_span {
                    Some(a) if server.auth == AuthMode::None => {
                        src.error(a, format!("server.auth: {e}"))
                    }
                    _ => src.error(span.clone(), format!("server.listen: {e}")),
                }
            })?;
            server
                .tls
                .check_exposure(loopback)
                .map_err(|e| src.error(span, format!("server.listen: {e}")))?;
        }
        for (name, preset) in &self.presets {
            if let Some(policy) = preset.policy() {
                let key = format!("presets.{}.policy", toml_key(name.get_ref()));
                check_policy_name(policy, &key, &policies, src)?;
            }
        }
        for (name, port) in &self.ports {
            if let Some(policy) = port.policy() {
                let key = format!("ports.{}.policy", toml_key(name.get_ref()));
                check_policy_name(policy, &key, &policies, src)?;
            }
        }
        let power = super::power::resolve_power(self.power, src)?;
        let presets = resolve_presets(self.presets, src)?;
        let ports = resolve_ports(self.ports, &presets, &server, &power, src)?;
        let fleet = self
            .fleet
            .map(|f| f.resolve(src, !ports.is_empty()))
            .transpose()?;
        Ok(Config {
            server,
            tokens,
            people,
            presets,
            ports,
            policies,
            fleet,
            power,
        })
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

#[cfg(test)]
mod tests {
    use super::super::presets::AutoReply;
    use super::super::test_support::*;
    use super::*;
    use crate::config::*;
    use crate::settings::{LineEnding, LineSettings, Parity};
    use std::path::PathBuf;

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
                use_credentials: false,
                power: false,
                policy: None,
                approve: false,
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
        assert_eq!(
            lab.break_sequences["alt"].steps,
            vec![crate::config::breaks::BreakStep::Bytes(b"\r~\x02".to_vec())]
        );
        assert_eq!(lab.break_sequences["double"].steps.len(), 3);
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
