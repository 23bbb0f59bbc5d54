//! Standing watches: patterns a port's output is matched against while
//! nobody is calling (a crash, a reboot banner, a boot loader prompt,
//! memory and hardware errors), each match an alert. The built-in presets
//! ship a set per vendor; a user preset or a port adds, changes or turns
//! off watches by name.

use std::ops::Range;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::diagnostics::{ConfigError, Source, regex_error};

/// Most watches one port may have (config and sessions each).
pub const MAX_WATCHES: usize = 128;
/// Longest watch name, in bytes.
pub const MAX_WATCH_NAME: usize = 64;
/// Longest watch regex source, in bytes.
pub const MAX_WATCH_REGEX: usize = 1024;

/// How bad an alert is; the daemon's log gets it at the matching level
/// (critical and error as `ERROR`, warning as `WARN`, info as `INFO`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Informational: worth a line in the journal.
    Info,
    /// Something to look at soon.
    Warning,
    /// A failure on the device.
    Error,
    /// The device crashed or is not running its system.
    Critical,
}

impl Severity {
    /// Every severity, mildest first (metrics label them all).
    pub const ALL: [Severity; 4] = [
        Severity::Info,
        Severity::Warning,
        Severity::Error,
        Severity::Critical,
    ];

    /// The name as the config file writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
            Severity::Critical => "critical",
        }
    }
}

/// One standing watch: a name, a regex matched line by line against what
/// the device prints, and the severity of its alerts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Watch {
    /// Names the watch in alerts and in overrides.
    pub name: String,
    /// A `regex::bytes` source, multi-line with `\r\n` line ends.
    pub regex: String,
    /// How bad a match is.
    pub severity: Severity,
}

impl Watch {
    fn new(name: &str, regex: &str, severity: Severity) -> Watch {
        Watch {
            name: name.to_owned(),
            regex: regex.to_owned(),
            severity,
        }
    }
}

/// Checks a watch name: like a port name, `[A-Za-z0-9][A-Za-z0-9_.-]*`,
/// at most [`MAX_WATCH_NAME`] bytes.
pub fn check_watch_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let ok_first = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    let ok_rest = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if name.len() > MAX_WATCH_NAME || !ok_first || !ok_rest {
        return Err(format!(
            "a watch name is 1-{MAX_WATCH_NAME} letters, digits, '_', '.' or '-', starting with a letter or digit (like crash or bgp_down)"
        ));
    }
    Ok(())
}

/// Checks a watch regex: compiles within the matcher's limits, at most
/// [`MAX_WATCH_REGEX`] bytes, and does not match an empty line (it would
/// alert on every line).
pub fn check_watch_regex(source: &str) -> Result<(), String> {
    if source.len() > MAX_WATCH_REGEX {
        return Err(format!(
            "a watch regex is at most {MAX_WATCH_REGEX} bytes, this one {}",
            source.len()
        ));
    }
    match crate::watchset::compile(source) {
        Ok(re) if re.is_match(b"") => Err(format!(
            "regex {source:?} matches an empty line; make it match the text to watch for, e.g. \"%SYS-2-MALLOCFAIL\""
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("bad regex {source:?}: {}", regex_error(&e))),
    }
}

/// One `watches` entry as written: a new watch (`name`, `regex`, optional
/// `severity`, default warning), a change of an inherited one (its
/// `name` and what changes), or `off = true` to drop an inherited one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a watch { name, regex, severity }")]
pub(super) struct RawWatch {
    name: Spanned<String>,
    regex: Option<Spanned<String>>,
    severity: Option<Severity>,
    #[serde(default)]
    off: bool,
}

/// Applies `raw` over the inherited `watches`, in order; `path` is the
/// key path for messages (`ports.sw1.watches`).
pub(super) fn apply(
    raw: Vec<RawWatch>,
    watches: &mut Vec<Watch>,
    path: &str,
    src: &Source,
) -> Result<(), ConfigError> {
    let err = |span: Range<usize>, msg: String| src.error(span, format!("{path}: {msg}"));
    for w in raw {
        let name = w.name.get_ref().clone();
        check_watch_name(&name).map_err(|e| err(w.name.span(), e))?;
        let existing = watches.iter().position(|x| x.name == name);
        if w.off {
            match existing {
                Some(i) => {
                    watches.remove(i);
                }
                None => {
                    return Err(err(
                        w.name.span(),
                        format!(
                            "no inherited watch is named {name:?} to turn off; the preset's are: {}",
                            names(watches)
                        ),
                    ));
                }
            }
            continue;
        }
        if let Some(regex) = &w.regex {
            check_watch_regex(regex.get_ref()).map_err(|e| err(regex.span(), e))?;
        }
        match (existing, w.regex) {
            (Some(i), regex) => {
                if let Some(regex) = regex {
                    watches[i].regex = regex.into_inner();
                }
                if let Some(severity) = w.severity {
                    watches[i].severity = severity;
                }
            }
            (None, Some(regex)) => {
                if watches.len() >= MAX_WATCHES {
                    return Err(err(
                        w.name.span(),
                        format!("at most {MAX_WATCHES} watches per port"),
                    ));
                }
                watches.push(Watch {
                    name,
                    regex: regex.into_inner(),
                    severity: w.severity.unwrap_or(Severity::Warning),
                });
            }
            (None, None) => {
                return Err(err(
                    w.name.span(),
                    format!(
                        "watch {name:?} is new and has no regex; give one, e.g. {{ name = {name:?}, regex = \"%SYS-2-\" }}"
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn names(watches: &[Watch]) -> String {
    if watches.is_empty() {
        return "none".to_owned();
    }
    watches
        .iter()
        .map(|w| w.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

use Severity::{Critical, Error, Warning};

/// The five watches every vendor's set has, from its patterns.
fn set(crash: &str, reboot: &str, boot_loader: &str, memory: &str, hardware: &str) -> Vec<Watch> {
    vec![
        Watch::new("crash", crash, Critical),
        Watch::new("reboot", reboot, Warning),
        Watch::new("boot_loader", boot_loader, Critical),
        Watch::new("memory", memory, Error),
        Watch::new("hardware", hardware, Error),
    ]
}

/// Cisco IOS and IOS-XE.
pub(super) fn cisco_ios() -> Vec<Watch> {
    set(
        r"Unexpected exception to CPU|System returned to ROM by (?:bus error|address error|watchdog|abort|software forced crash)|^Traceback=|%SYS-2-(?:WATCHDOG|CPUHOG)",
        r"System Bootstrap, Version|%SYS-5-RESTART|^Restricted Rights Legend",
        r"^(?:rommon \d+ ?>|switch:) ?$",
        r"%SYS-\d-(?:MALLOCFAIL|LOWMEM|CHUNK\w*|BADBLOCK\w*)",
        r"%(?:ENVMON|ENVIRONMENT|PLATFORM_ENV|FAN|PSU|POWER_SUPPLY|TEMP\w*)-[0-3]-\w+",
    )
}

/// Cisco NX-OS.
pub(super) fn cisco_nxos() -> Vec<Watch> {
    set(
        r"%SYSMGR-\d-SERVICE_CRASHED|[Kk]ernel panic|%KERN-0-\w+",
        r"Cisco Nexus Operating System|^\s*[Ll]oader [Vv]ersion|%PLATFORM-\d-SYS_RESET",
        r"^(?:loader|switch\(boot\)#) ?> ?$",
        r"%SYSMGR-\d-\w*(?:MEM|OOM)\w*|[Oo]ut of memory",
        r"%(?:PLATFORM|FAN|POWER|TEMPERATURE|MODULE)-[0-2]-\w+",
    )
}

/// Juniper Junos.
pub(super) fn juniper_junos() -> Vec<Watch> {
    set(
        r"^panic: |Dump header|core dumped|[Kk]ernel trap|^Fatal trap \d+",
        r"Booting \[/kernel\]|FreeBSD/\w+ bootstrap loader|Starting JUNOS|^Copyright \(c\) 1996-\d+, Juniper Networks",
        r"^(?:loader|OK|db)> ?$",
        r"swap_pager: out of swap|low on memory|[Oo]ut of memory",
        r"CHASSISD_\w*(?:FAN|TEMP|POWER|FRU)\w*(?:FAIL|ERR)\w*|Alarm set:.*(?:Major|Red)",
    )
}

/// Arista EOS.
pub(super) fn arista_eos() -> Vec<Watch> {
    set(
        r"[Kk]ernel panic|ProcMgr\S*: .*(?:terminated unexpectedly|core dump)",
        r"^Aboot \d|Starting EOS|%SYS-5-SYSTEM_RESTARTED",
        r"^Aboot#",
        r"[Oo]ut of memory|oom-killer",
        r"%(?:ENVMON|PLATFORM|HARDWARE|FAN|POWER)\w*-[0-3]-\w+",
    )
}

/// Huawei VRP.
pub(super) fn huawei_vrp() -> Vec<Watch> {
    set(
        r"[Ee]xception (?:occurred|happened)|System (?:halted|crashed)|Kernel panic",
        r"Press Ctrl\+B to enter|BootROM [Vv]ersion|Starting\.\.\.$|System is starting",
        r"^(?:BootROM|BootLoad|<BootLoad>|BOOTLOAD)\S*\s*(?:>|#) ?$|Main Menu",
        r"MEMORY_OVERLOAD|Memory (?:usage|utilization) .*exceed",
        r"(?i:fan|power|temperature)[^\r\n]*(?:fault|abnormal|failed|exceed)",
    )
}

/// HP ProCurve and ArubaOS-Switch.
pub(super) fn hp_procurve() -> Vec<Watch> {
    set(
        r"Software exception|HW Watchdog timeout|Crash Information|->Crash",
        r"^ROM information:|^Boot Image:|^Initializing\.\.\.",
        r"^=> ?$",
        r"(?i)out of memory|malloc failed",
        r"(?i)fan (?:failure|fault)|power supply (?:failure|fault)|over.?temperature",
    )
}

/// FRRouting's vtysh. A daemon's crash reaches vtysh as a closed
/// connection (its backtrace goes to the daemon's log, not the console);
/// the rest is what the Linux console under it prints.
pub(super) fn frr() -> Vec<Watch> {
    set(
        r"Warning: closing connection to \w+ because of an I/O error|Kernel panic|segfault at",
        r"Linux version \d|reboot: Restarting system|^U-Boot \d",
        r"^(?:=>|U-Boot>|grub>|ONIE:/ #) ?$",
        r"Out of memory: Kill|invoked oom-killer|[Oo]ut of memory",
        r"mce: \[Hardware Error\]|Machine [Cc]heck|I/O error, dev \w+",
    )
}

/// Linux consoles.
pub(super) fn linux() -> Vec<Watch> {
    set(
        r"Kernel panic|^\S*\s*Oops:|BUG: |segfault at|Traceback \(most recent call last\)",
        r"Linux version \d|reboot: Restarting system|^U-Boot \d",
        r"^(?:=>|U-Boot>|grub>) ?$",
        r"Out of memory: Kill|invoked oom-killer",
        r"mce: \[Hardware Error\]|Machine [Cc]heck|I/O error, dev \w+|EXT4-fs error",
    )
}

/// Anything else: the common words of crashes and boot loaders.
pub(super) fn generic() -> Vec<Watch> {
    set(
        r"(?i)kernel panic|traceback|segmentation fault|unexpected exception|crash dump",
        r"(?i)system bootstrap|bootloader|boot rom|booting (?:kernel|the system)",
        r"^(?:rommon \d+ ?>|=>|U-Boot>|loader>|switch:) ?$",
        r"(?i)out of memory|malloc ?fail",
        r"(?i)(?:fan|power supply|psu)\W+(?:fail|fault)|over.?temperature",
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    fn names_of(watches: &[Watch]) -> Vec<&str> {
        watches.iter().map(|w| w.name.as_str()).collect()
    }

    #[test]
    fn every_builtin_preset_ships_the_five_watches_and_they_compile() {
        let c = parse("");
        for p in c.presets.values() {
            assert_eq!(
                names_of(&p.watches),
                ["crash", "reboot", "boot_loader", "memory", "hardware"],
                "{}",
                p.name
            );
            for w in &p.watches {
                check_watch_regex(&w.regex)
                    .unwrap_or_else(|e| panic!("{}.{}: {e}", p.name, w.name));
            }
            let sources: Vec<&str> = p.watches.iter().map(|w| w.regex.as_str()).collect();
            crate::watchset::WatchSet::new(&sources).unwrap();
        }
        let ios = &c.presets["cisco-ios"].watches;
        let re = |name: &str| {
            crate::watchset::compile(&ios.iter().find(|w| w.name == name).unwrap().regex).unwrap()
        };
        assert!(
            re("memory").is_match(b"%SYS-2-MALLOCFAIL: Memory allocation of 65536 bytes failed")
        );
        assert!(re("boot_loader").is_match(b"\r\nrommon 1 > "));
        assert!(re("crash").is_match(b"Unexpected exception to CPU: vector 1500, PC = 0x0"));
        assert!(!re("crash").is_match(b"SW1#show version"));
    }

    #[test]
    fn presets_and_ports_add_change_and_turn_off_watches_by_name() {
        let c = parse(
            "[presets.lab]\nextends = \"cisco-ios\"\n\
             watches = [{ name = \"reboot\", severity = \"info\" }, { name = \"hardware\", off = true }]\n\
             [ports.sw1]\ndevice = \"/dev/ttyUSB0\"\npreset = \"lab\"\n\
             watches = [{ name = \"bgp\", regex = \"%BGP-5-ADJCHANGE\" }, { name = \"crash\", regex = \"Crash!\", severity = \"error\" }]\n",
        );
        let lab = &c.presets["lab"].watches;
        assert_eq!(names_of(lab), ["crash", "reboot", "boot_loader", "memory"]);
        assert_eq!(lab[1].severity, Severity::Info);
        let sw1 = &c.ports["sw1"].watches;
        assert_eq!(
            names_of(sw1),
            ["crash", "reboot", "boot_loader", "memory", "bgp"]
        );
        assert_eq!(
            (sw1[0].regex.as_str(), sw1[0].severity),
            ("Crash!", Severity::Error)
        );
        assert_eq!(sw1[4].severity, Severity::Warning);
        let none = parse(
            "[ports.a]\ndevice = \"/dev/ttyUSB0\"\nwatches = [{ name = \"crash\", off = true }, { name = \"reboot\", off = true }, { name = \"boot_loader\", off = true }, { name = \"memory\", off = true }, { name = \"hardware\", off = true }]\n",
        );
        assert!(none.ports["a"].watches.is_empty());
    }

    #[test]
    fn bad_watches_are_errors_at_their_place() {
        let port = |w: &str| format!("[ports.a]\ndevice = \"/dev/ttyUSB0\"\nwatches = [{w}]\n");
        assert_error(
            &port("{ name = \"x\", regex = \"(\" }"),
            "3:34",
            &["ports.a.watches: bad regex \"(\""],
        );
        assert_error(
            &port("{ name = \"x\", regex = \".*\" }"),
            "3:34",
            &["ports.a.watches: regex \".*\" matches an empty line"],
        );
        assert_error(
            &port("{ name = \"new\" }"),
            "3:21",
            &["watch \"new\" is new and has no regex"],
        );
        assert_error(
            &port("{ name = \"nope\", off = true }"),
            "3:21",
            &["no inherited watch is named \"nope\"", "crash, reboot"],
        );
        assert_error(
            &port("{ name = \"a b\", regex = \"x\" }"),
            "3:21",
            &["a watch name is 1-64 letters"],
        );
        assert_error(
            &port("{ name = \"x\", regex = \"x\", severity = \"fatal\" }"),
            "3:50",
            &["unknown variant `fatal`", "`critical`"],
        );
        assert_error(
            &port("{ name = \"x\", regexp = \"x\" }"),
            "3:26",
            &["unknown field `regexp`"],
        );
        let long = "a".repeat(MAX_WATCH_REGEX + 1);
        assert_error(
            &port(&format!("{{ name = \"x\", regex = \"{long}\" }}")),
            "3:34",
            &["a watch regex is at most 1024 bytes"],
        );
    }
}
