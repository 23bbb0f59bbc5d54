//! User presets and configured ports, resolved: `extends` chains followed
//! (cycles and unknown names refused), the keys of a preset or a port
//! checked and written over its base, and a [`PortConfig`] made for every
//! configured port and for ad-hoc connects.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use toml::Spanned;

use super::checks::check_name;
use super::credentials::Credentials;
use super::diagnostics::{ConfigError, Source};
use super::diagnostics::{regex_error, toml_key};
use super::modes::ModeRules;
use super::presets::{self, AutoReply, DEFAULT_PRESET, Preset};
use super::raw::{Overrides, RawPort, RawPreset};
use super::server::ServerConfig;
use super::server::check_down_after;
use crate::remote::RemoteAddr;
use crate::settings::{LineEnding, LineSettings};

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
    /// The ntc-templates platform its output is parsed as.
    pub platform: Option<String>,
    /// Quick losses in a row before the port is `down` (0: never).
    pub down_after: u32,
    /// The CLI's modes and configuration commands.
    pub modes: ModeRules,
    /// Named break sequences `send_break` can send.
    pub break_sequences: super::breaks::BreakSequences,
    /// The credentials file, if the port or its preset names one.
    pub credentials_file: Option<std::path::PathBuf>,
    /// What `credentials_file` holds, read when the config was loaded.
    #[serde(skip)]
    #[schemars(skip)]
    pub credentials: Option<Arc<Credentials>>,
    /// Standing watches on the port's output.
    pub watches: Vec<super::watches::Watch>,
    /// The outlets feeding the device (`power`), switched together.
    pub power: Vec<super::power::OutletRef>,
    /// Its preset's guardrails; `policy` is the port's default policy
    /// (its own `policy` key, else its preset's). Not shown to agents.
    #[serde(skip)]
    #[schemars(skip)]
    pub guardrails: super::policies::Guardrails,
}

impl PortConfig {
    /// The port `name` on `device` with preset `p`; reads the preset's
    /// credentials file if it names one.
    pub(super) fn from_preset(
        name: &str,
        device: &str,
        p: Preset,
        down_after: u32,
    ) -> Result<PortConfig, String> {
        let credentials = p
            .credentials
            .as_deref()
            .map(Credentials::read)
            .transpose()?
            .map(Arc::new);
        Ok(PortConfig {
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
            platform: p.platform,
            down_after,
            modes: p.modes,
            break_sequences: p.break_sequences,
            credentials_file: p.credentials,
            credentials,
            watches: p.watches,
            power: Vec::new(),
            guardrails: p.guardrails,
        })
    }
}

/// The built-in presets by name.
pub(super) fn builtin_map() -> BTreeMap<String, Preset> {
    presets::builtin_presets()
        .into_iter()
        .map(|p| (p.name.clone(), p))
        .collect()
}

impl Overrides {
    /// Checks the values and writes them over `p`. `path` is the table's
    /// key path for messages, e.g. `ports.core-sw1`.
    pub(super) fn apply(self, p: &mut Preset, path: &str, src: &Source) -> Result<(), ConfigError> {
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
        if let Some(v) = self.platform {
            let name = v.get_ref();
            let fits = name.len() <= 64
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if !fits {
                return Err(src.error(
                    v.span(),
                    format!(
                        "{path}.platform: {} is not a platform name; use an ntc-templates platform such as \"cisco_ios\" (lowercase letters, digits, _), or \"\" for none",
                        crate::error::shown(name)
                    ),
                ));
            }
            p.platform = (!name.is_empty()).then(|| v.into_inner());
        }
        if let Some(modes) = self.modes {
            modes.apply(&mut p.modes, &format!("{path}.modes"), src)?;
        }
        if let Some(list) = self.watches {
            super::watches::apply(list, &mut p.watches, &format!("{path}.watches"), src)?;
        }
        if let Some(table) = self.break_sequences {
            p.break_sequences = super::breaks::parse_all(table.get_ref())
                .map_err(|e| src.error(table.span(), format!("{path}.break_sequences: {e}")))?;
        }
        if let Some(name) = self.policy {
            // The file's resolve checked that it names a policy.
            p.guardrails.policy = Some(name.into_inner());
        }
        if let Some(file) = self.credentials {
            p.credentials = if file.get_ref().as_os_str().is_empty() {
                None
            } else {
                Some(super::checks::next_to_config(file.get_ref(), src))
            };
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

/// A user preset waiting to be resolved.
struct PendingPreset {
    key: Range<usize>,
    extends: Option<Spanned<String>>,
    description: Option<String>,
    overrides: Option<Overrides>,
}

/// Resolves the user presets over the built-in ones, in file order.
pub(super) fn resolve_presets(
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
                unknown_preset(
                    &format!("{path}.extends"),
                    &base,
                    &known.iter().map(String::as_str).collect::<Vec<_>>(),
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

/// Resolves the configured ports: preset, then the port's own keys.
pub(super) fn resolve_ports(
    raw: BTreeMap<Spanned<String>, RawPort>,
    presets: &BTreeMap<String, Preset>,
    server: &ServerConfig,
    controllers: &BTreeMap<String, super::power::PowerController>,
    src: &Source,
) -> Result<BTreeMap<String, Arc<PortConfig>>, ConfigError> {
    let mut raw: Vec<(Spanned<String>, RawPort)> = raw.into_iter().collect();
    raw.sort_by_key(|(name, _)| name.span().start);
    let mut devices: HashMap<String, String> = HashMap::new();
    let mut ports = BTreeMap::new();
    for (name, mut raw) in raw {
        let name_span = name.span();
        let name = name.into_inner();
        check_name(&name).map_err(|e| {
            src.error(
                name_span.clone(),
                format!("ports: bad port name {name:?}: {e}"),
            )
        })?;
        let path = format!("ports.{}", toml_key(&name));
        let down_after = raw.down_after.take();
        let power = super::power::resolve_outlets(raw.power.take(), &path, controllers, src)?;
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
                    unknown_preset(
                        &format!("{path}.preset"),
                        p.get_ref(),
                        &presets.keys().map(String::as_str).collect::<Vec<_>>(),
                    ),
                )
            })?,
            None => &presets[DEFAULT_PRESET],
        };
        let mut p = preset.clone();
        overrides.apply(&mut p, &path, src)?;
        let mut port = PortConfig::from_preset(&name, device.get_ref(), p, down_after)
            .map_err(|e| src.error(name_span.clone(), format!("{path}.credentials: {e}")))?;
        port.power = power;
        ports.insert(name, Arc::new(port));
    }
    Ok(ports)
}

/// `key` names a preset that does not exist: the error, with the name it
/// most likely meant and every name there is.
fn unknown_preset(key: &str, given: &str, known: &[&str]) -> String {
    let meant = super::first_mistakes::did_you_mean(given, known)
        .map(|k| format!(" (did you mean {k:?}?)"))
        .unwrap_or_default();
    format!(
        "{key}: unknown preset {given:?}{meant}; presets: {}",
        known.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

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
                "ports.a.preset: unknown preset \"cisco-iso\" (did you mean \"cisco-ios\"?); presets: ",
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
            e.contains("unknown preset \"nope\"") && e.contains("cisco-nxos, frr, generic, "),
            "{e}"
        );
        let e = c
            .resolve_port("bad name", "/dev/ttyUSB0", None)
            .unwrap_err();
        assert!(e.contains("bad port name"), "{e}");
        assert!(c.resolve_port("r1", "", None).is_err());
    }
}
