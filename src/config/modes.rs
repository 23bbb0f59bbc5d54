//! A device family's CLI modes and the commands that move between them and
//! take configuration: which prompt means login, exec, privileged,
//! configuration or a boot loader; how to `enable`, enter and leave
//! configuration mode, save, commit and confirm. The built-in presets carry
//! one [`ModeRules`] each; a `[presets.NAME.modes]` or `[ports.NAME.modes]`
//! table overrides any key of it.

use std::ops::Range;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::auto_reply::AutoReply;
use super::diagnostics::{ConfigError, Source, regex_error};
use super::raw::RawModes;

/// Where a device's CLI is, judged from its prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeviceMode {
    /// Asking for a user name (`Username:`, `login:`).
    Login,
    /// Asking for a password (after the user name, or for `enable`).
    Password,
    /// User EXEC or operational mode (`SW1>`, `admin@mx1>`, `<HUAWEI>`).
    Exec,
    /// Privileged EXEC (`SW1#`).
    Privileged,
    /// Configuration mode or one of its sub-modes (`SW1(config-if)#`,
    /// `admin@mx1#`, `[HUAWEI]`).
    Config,
    /// A boot loader or ROMMON (`rommon 1 >`, `loader>`, `=>`): no CLI.
    Recovery,
}

impl DeviceMode {
    /// The name used in results and errors (`privileged`).
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceMode::Login => "login",
            DeviceMode::Password => "password",
            DeviceMode::Exec => "exec",
            DeviceMode::Privileged => "privileged",
            DeviceMode::Config => "config",
            DeviceMode::Recovery => "recovery",
        }
    }
}

/// A family's modes and configuration commands, resolved. Every key is
/// optional: a family without `enable` has no privileged level (its exec
/// mode serves), one without `commit` applies each line at once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct ModeRules {
    /// Regex matching the prompt text of a boot loader or ROMMON.
    pub recovery: Option<String>,
    /// Regex matching a user-name prompt.
    pub login: Option<String>,
    /// Regex matching a password prompt.
    pub password: Option<String>,
    /// Regex matching a configuration-mode prompt (sub-modes included).
    pub config: Option<String>,
    /// Regex matching a privileged prompt.
    pub privileged: Option<String>,
    /// Regex matching a user exec (operational) prompt.
    pub exec: Option<String>,
    /// Command from exec to privileged (`enable`).
    pub enable: Option<String>,
    /// Whether the password `enable` asks for is the login's own (Linux
    /// `sudo`), not the credentials file's `enable` secret.
    pub enable_asks_login_password: bool,
    /// Command from privileged back to exec (`disable`).
    pub disable: Option<String>,
    /// Command into configuration mode (`configure terminal`).
    pub configure: Option<String>,
    /// Command out of configuration mode, from any sub-mode (`end`).
    pub end_config: Option<String>,
    /// Command saving the running configuration (`write memory`).
    pub save: Option<String>,
    /// Questions the save command asks, answered while it runs.
    pub save_replies: Vec<AutoReply>,
    /// Regex the save command's output must match to count as done
    /// (besides no error line).
    pub save_ok: Option<String>,
    /// Command committing a candidate configuration (`commit`); set only
    /// for families with one.
    pub commit: Option<String>,
    /// Command validating the candidate without applying it.
    pub commit_check: Option<String>,
    /// Command committing with an automatic rollback unless confirmed;
    /// `{minutes}` stands for the minutes.
    pub commit_confirmed: Option<String>,
    /// Command discarding the uncommitted candidate (`rollback 0`).
    pub discard: Option<String>,
    /// Command loading an earlier committed configuration; `{n}` stands
    /// for how many commits back.
    pub rollback: Option<String>,
    /// For families without a candidate: command entering configuration
    /// mode with an automatic revert unless confirmed; `{minutes}` stands
    /// for the minutes (IOS XE `configure terminal revert timer`).
    pub revert_timer: Option<String>,
    /// Command confirming a revert timer's change (`configure confirm`).
    pub revert_confirm: Option<String>,
    /// Regex of what the device prints when it rolled an unconfirmed
    /// change back by itself.
    pub rolled_back: Option<String>,
}

impl ModeRules {
    /// The prompt regexes in the order a prompt is judged, most specific
    /// first.
    pub fn prompts(&self) -> Vec<(DeviceMode, &str)> {
        [
            (DeviceMode::Recovery, &self.recovery),
            (DeviceMode::Login, &self.login),
            (DeviceMode::Password, &self.password),
            (DeviceMode::Config, &self.config),
            (DeviceMode::Privileged, &self.privileged),
            (DeviceMode::Exec, &self.exec),
        ]
        .into_iter()
        .filter_map(|(mode, pattern)| pattern.as_deref().map(|p| (mode, p)))
        .collect()
    }
}

fn some(s: &str) -> Option<String> {
    Some(s.to_owned())
}

/// User-name and password prompts as most network systems print them.
const LOGIN: &str = r"(?i)(?:user ?name|login): ?$";
const PASSWORD: &str = r"(?i)password: ?$";

/// Cisco IOS and IOS XE: `>`, `#`, `(config…)#`, ROMMON; the revert timer
/// as the safety net.
pub(super) fn cisco_ios() -> ModeRules {
    ModeRules {
        recovery: some(r"rommon \d+ ?> ?$|^switch: ?$"),
        login: some(LOGIN),
        password: some(PASSWORD),
        config: some(r"\(config[^)]*\)# ?$"),
        privileged: some(r"# ?$"),
        exec: some(r"> ?$"),
        enable: some("enable"),
        disable: some("disable"),
        configure: some("configure terminal"),
        end_config: some("end"),
        save: some("write memory"),
        save_ok: some(r"\[OK\]"),
        revert_timer: some("configure terminal revert timer {minutes}"),
        revert_confirm: some("configure confirm"),
        rolled_back: some(r"ROLLBK_CNFMD_CHG_ROLLBACK_START|Start rolling to"),
        ..ModeRules::default()
    }
}

/// Cisco NX-OS: no enable level for an admin; `loader>` at boot.
pub(super) fn cisco_nxos() -> ModeRules {
    ModeRules {
        recovery: some(r"loader> ?$|\(boot\)# ?$"),
        login: some(LOGIN),
        password: some(PASSWORD),
        config: some(r"\(config[^)]*\)# ?$"),
        privileged: some(r"# ?$"),
        exec: some(r"> ?$"),
        configure: some("configure terminal"),
        end_config: some("end"),
        save: some("copy running-config startup-config"),
        save_ok: some(r"Copy complete"),
        ..ModeRules::default()
    }
}

/// Junos: operational `>` and configuration `#` modes, a candidate
/// configuration with commit, commit check and commit confirmed.
pub(super) fn juniper_junos() -> ModeRules {
    ModeRules {
        recovery: some(r"loader> ?$|^=> ?$"),
        login: some(LOGIN),
        password: some(PASSWORD),
        config: some(r"# ?$"),
        exec: some(r"> ?$"),
        configure: some("configure"),
        end_config: some("exit configuration-mode"),
        commit: some("commit"),
        commit_check: some("commit check"),
        commit_confirmed: some("commit confirmed {minutes}"),
        discard: some("rollback 0"),
        rollback: some("rollback {n}"),
        rolled_back: some(r"(?i)automatic rollback complete|commit was not confirmed"),
        ..ModeRules::default()
    }
}

/// Arista EOS: IOS-like modes, with changes made in a configuration
/// session (`configure session`: a candidate of its own, `(config-s-…)#`)
/// that `commit` applies and `abort` drops, both back to privileged; a
/// check shows the session's differences and aborts. `write memory` saves.
pub(super) fn arista_eos() -> ModeRules {
    ModeRules {
        recovery: some(r"Aboot#? ?$"),
        login: some(LOGIN),
        password: some(PASSWORD),
        config: some(r"\(config[^)]*\)# ?$"),
        privileged: some(r"# ?$"),
        exec: some(r"> ?$"),
        enable: some("enable"),
        disable: some("disable"),
        configure: some("configure session"),
        end_config: some("end"),
        commit: some("commit"),
        commit_check: some("show session-config diffs"),
        discard: some("abort"),
        save: some("write memory"),
        save_ok: some(r"(?i)copy completed successfully|\[OK\]"),
        ..ModeRules::default()
    }
}

/// Huawei VRP: user view `<…>` and system view `[…]`; `save` asks to
/// confirm.
pub(super) fn huawei_vrp() -> ModeRules {
    ModeRules {
        recovery: some(r"(?i)bootrom.*: ?$|<BOOT> ?$"),
        login: some(LOGIN),
        password: some(PASSWORD),
        config: some(r"\[[~*]?[^\]]+\] ?$"),
        exec: some(r"<[^>]+> ?$"),
        configure: some("system-view"),
        end_config: some("return"),
        save: some("save"),
        save_replies: vec![AutoReply::new("[Y/N]", "y\r")],
        save_ok: some(r"(?i)successfully"),
        ..ModeRules::default()
    }
}

/// HP ProCurve / ArubaOS-Switch: IOS-like modes.
pub(super) fn hp_procurve() -> ModeRules {
    ModeRules {
        login: some(LOGIN),
        password: some(PASSWORD),
        config: some(r"\(config[^)]*\)# ?$"),
        privileged: some(r"# ?$"),
        exec: some(r"> ?$"),
        enable: some("enable"),
        disable: some("disable"),
        configure: some("configure terminal"),
        end_config: some("end"),
        save: some("write memory"),
        ..ModeRules::default()
    }
}

/// FRRouting's vtysh (SONiC, Cumulus, a Linux router): it starts
/// privileged (`r1#`); `disable` and `enable` move to `r1>` and back
/// without a secret; every node below `configure terminal` is a
/// parenthesised suffix (`(config-router-af)#`, `(config-if)#`,
/// `(config-route-map)#`, `(pcep-sr-te-pcep-pce-config)#`), and `end`
/// leaves any of them. Each line applies at once; `write memory` writes
/// the integrated `frr.conf` and ends with `[OK]`.
pub(super) fn frr() -> ModeRules {
    ModeRules {
        login: some(LOGIN),
        password: some(PASSWORD),
        config: some(r"\([^)]+\)# ?$"),
        privileged: some(r"# ?$"),
        exec: some(r"> ?$"),
        enable: some("enable"),
        disable: some("disable"),
        configure: some("configure terminal"),
        end_config: some("end"),
        save: some("write memory"),
        save_ok: some(r"\[OK\]"),
        ..ModeRules::default()
    }
}

/// A Linux console: login, a user shell (`$`) and root's (`#`); U-Boot
/// and GRUB at boot. No configuration mode.
pub(super) fn linux() -> ModeRules {
    ModeRules {
        recovery: some(r"^=> ?$|grub> ?$"),
        login: some(r"(?i)login: ?$"),
        // `Password:` of login, `[sudo] password for USER:` of sudo.
        password: some(r"(?i)password(?: for [^\s:]+)?: ?$"),
        privileged: some(r"# ?$"),
        exec: some(r"\$ ?$"),
        // A root shell, after the user's own password.
        enable: some("sudo -i"),
        enable_asks_login_password: true,
        disable: some("exit"),
        ..ModeRules::default()
    }
}

/// A command key: an empty string removes the command.
fn command(value: Option<String>, into: &mut Option<String>) {
    if let Some(v) = value {
        *into = if v.trim().is_empty() { None } else { Some(v) };
    }
}

impl RawModes {
    /// Checks the keys and writes them over `rules`; `path` is the table's
    /// key path for messages (`presets.my-ios.modes`).
    pub(super) fn apply(
        self,
        rules: &mut ModeRules,
        path: &str,
        src: &Source,
    ) -> Result<(), ConfigError> {
        let regex = |value: Option<Spanned<String>>,
                     key: &str,
                     into: &mut Option<String>|
         -> Result<(), ConfigError> {
            if let Some(v) = value {
                if v.get_ref().is_empty() {
                    *into = None;
                    return Ok(());
                }
                check_mode_regex(v.get_ref(), v.span(), &format!("{path}.{key}"), src)?;
                *into = Some(v.into_inner());
            }
            Ok(())
        };
        regex(self.recovery, "recovery", &mut rules.recovery)?;
        regex(self.login, "login", &mut rules.login)?;
        regex(self.password, "password", &mut rules.password)?;
        regex(self.config, "config", &mut rules.config)?;
        regex(self.privileged, "privileged", &mut rules.privileged)?;
        regex(self.exec, "exec", &mut rules.exec)?;
        regex(self.save_ok, "save_ok", &mut rules.save_ok)?;
        regex(self.rolled_back, "rolled_back", &mut rules.rolled_back)?;
        let templated = |value: Option<Spanned<String>>,
                         key: &str,
                         placeholder: &str,
                         into: &mut Option<String>|
         -> Result<(), ConfigError> {
            if let Some(v) = value {
                let text = v.get_ref();
                if !text.trim().is_empty() && !text.contains(placeholder) {
                    return Err(src.error(
                        v.span(),
                        format!("{path}.{key}: {text:?} has no {placeholder}; write where the number goes, e.g. \"commit confirmed {{minutes}}\""),
                    ));
                }
                command(Some(v.into_inner()), into);
            }
            Ok(())
        };
        templated(
            self.commit_confirmed,
            "commit_confirmed",
            "{minutes}",
            &mut rules.commit_confirmed,
        )?;
        templated(self.rollback, "rollback", "{n}", &mut rules.rollback)?;
        templated(
            self.revert_timer,
            "revert_timer",
            "{minutes}",
            &mut rules.revert_timer,
        )?;
        command(self.enable, &mut rules.enable);
        command(self.disable, &mut rules.disable);
        command(self.configure, &mut rules.configure);
        command(self.end_config, &mut rules.end_config);
        command(self.save, &mut rules.save);
        command(self.commit, &mut rules.commit);
        command(self.commit_check, &mut rules.commit_check);
        command(self.discard, &mut rules.discard);
        command(self.revert_confirm, &mut rules.revert_confirm);
        if let Some(table) = self.save_replies {
            rules.save_replies = table
                .0
                .into_iter()
                .map(|(trigger, reply)| AutoReply {
                    trigger: trigger.into_inner(),
                    reply,
                })
                .collect();
        }
        Ok(())
    }
}

/// A mode regex must compile and must not match an empty prompt.
fn check_mode_regex(
    text: &str,
    span: Range<usize>,
    key: &str,
    src: &Source,
) -> Result<(), ConfigError> {
    match regex::Regex::new(text) {
        Ok(re) if re.is_match("") => Err(src.error(
            span,
            format!("{key}: regex {text:?} matches an empty prompt; make it match the prompt's characters, e.g. \"# ?$\""),
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(src.error(
            span,
            format!("{key}: bad regex {text:?}: {}", regex_error(&e)),
        )),
    }
}

/// A family's prompt regexes compiled once, for judging prompts as often
/// as every `status` call asks without compiling them again.
#[derive(Debug, Clone, Default)]
pub struct ModePrompts {
    /// Shared by every port and connection of the same rules (one value,
    /// so one regex scratch space per thread, not per holder).
    judged: std::sync::Arc<Vec<(DeviceMode, regex::Regex)>>,
}

impl ModePrompts {
    /// Compiles `rules`' prompt regexes in the order they are judged, or
    /// shares those compiled before from the same rules (every port and
    /// connection of a family has them: a clone of a compiled regex
    /// shares its automata). Regexes that do not compile (checked at load)
    /// are left out: they never match.
    pub fn new(rules: &ModeRules) -> ModePrompts {
        /// Rule sets compiled so far (at most 64 kept).
        static SHARED: crate::sync::SharedByKey<Vec<(DeviceMode, String)>, ModePrompts> =
            crate::sync::SharedByKey::new(64);
        let key: Vec<(DeviceMode, String)> = rules
            .prompts()
            .into_iter()
            .map(|(mode, pattern)| (mode, pattern.to_owned()))
            .collect();
        let Ok(prompts) = SHARED.get_or_make(key, |key| {
            Ok::<_, std::convert::Infallible>(ModePrompts {
                judged: std::sync::Arc::new(
                    key.iter()
                        .filter_map(|(mode, pattern)| {
                            regex::Regex::new(pattern).ok().map(|re| (*mode, re))
                        })
                        .collect(),
                ),
            })
        });
        prompts
    }

    /// The mode `prompt` (the prompt text the device printed last) is in,
    /// by the first prompt regex that matches; `None` when none does.
    pub fn mode_of(&self, prompt: &str) -> Option<DeviceMode> {
        let prompt = prompt.trim_start_matches(['\r', '\n', '\0']);
        self.judged
            .iter()
            .find(|(_, re)| re.is_match(prompt))
            .map(|(mode, _)| *mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_judges_its_own_prompts() {
        let cases: &[(ModeRules, &[(&str, DeviceMode)])] = &[
            (
                cisco_ios(),
                &[
                    ("SW1>", DeviceMode::Exec),
                    ("SW1#", DeviceMode::Privileged),
                    ("SW1(config)#", DeviceMode::Config),
                    ("SW1(config-if)#", DeviceMode::Config),
                    ("rommon 1 > ", DeviceMode::Recovery),
                    ("Username: ", DeviceMode::Login),
                    ("Password: ", DeviceMode::Password),
                ],
            ),
            (
                juniper_junos(),
                &[
                    ("admin@mx1> ", DeviceMode::Exec),
                    ("admin@mx1# ", DeviceMode::Config),
                    ("login: ", DeviceMode::Login),
                    ("loader> ", DeviceMode::Recovery),
                ],
            ),
            (
                huawei_vrp(),
                &[
                    ("<HUAWEI>", DeviceMode::Exec),
                    ("[HUAWEI]", DeviceMode::Config),
                    ("[~HUAWEI-GigabitEthernet0/0/1]", DeviceMode::Config),
                ],
            ),
            (
                frr(),
                &[
                    ("r1# ", DeviceMode::Privileged),
                    ("r1> ", DeviceMode::Exec),
                    ("r1(config)# ", DeviceMode::Config),
                    ("r1(config-router-af)# ", DeviceMode::Config),
                    ("sonic(config-if)# ", DeviceMode::Config),
                    ("r1(pcep-sr-te-pcep-pce-config)# ", DeviceMode::Config),
                ],
            ),
            (
                linux(),
                &[
                    ("user@host:~$ ", DeviceMode::Exec),
                    ("root@host:~# ", DeviceMode::Privileged),
                    ("=> ", DeviceMode::Recovery),
                    ("host login: ", DeviceMode::Login),
                ],
            ),
        ];
        for (rules, prompts) in cases {
            for (prompt, mode) in *prompts {
                assert_eq!(
                    ModePrompts::new(rules).mode_of(prompt),
                    Some(*mode),
                    "{prompt:?}"
                );
            }
        }
        assert_eq!(
            ModePrompts::new(&ModeRules::default()).mode_of("SW1#"),
            None
        );
    }

    #[test]
    fn built_in_regexes_compile_and_never_match_nothing() {
        for rules in super::super::presets::builtin_presets()
            .into_iter()
            .map(|p| p.modes)
        {
            for (mode, pattern) in rules.prompts() {
                let re = regex::Regex::new(pattern).unwrap_or_else(|e| panic!("{mode:?}: {e}"));
                assert!(!re.is_match(""), "{mode:?} {pattern:?}");
            }
            for pattern in [&rules.save_ok, &rules.rolled_back].into_iter().flatten() {
                regex::Regex::new(pattern).unwrap();
            }
        }
    }

    #[test]
    fn a_modes_table_overrides_keys_and_bad_values_are_refused_where_they_are() {
        use super::super::test_support::*;
        let c = parse(
            "[presets.my-ios]\nextends = \"cisco-ios\"\n[presets.my-ios.modes]\n\
             save = \"copy running-config startup-config\"\nenable = \"\"\nconfig = '\\(cfg\\)# ?$'\n\
             [ports.sw1]\ndevice = \"/dev/ttyUSB0\"\npreset = \"my-ios\"\n[ports.sw1.modes]\nconfigure = \"conf t\"\n",
        );
        let modes = &c.ports["sw1"].modes;
        assert_eq!(
            modes.save.as_deref(),
            Some("copy running-config startup-config")
        );
        assert_eq!(modes.enable, None, "\"\" removes a command");
        assert_eq!(modes.configure.as_deref(), Some("conf t"));
        assert_eq!(
            ModePrompts::new(modes).mode_of("SW1(cfg)#"),
            Some(DeviceMode::Config)
        );
        assert_eq!(
            modes.end_config.as_deref(),
            Some("end"),
            "the rest is the base's"
        );
        assert_error(
            "[presets.p.modes]\nconfig = '[oops'\n",
            "2:10",
            &["presets.p.modes.config: bad regex"],
        );
        assert_error(
            "[presets.p.modes]\nexec = '.*'\n",
            "2:8",
            &["matches an empty prompt"],
        );
        assert_error(
            "[presets.p.modes]\ncommit_confirmed = 'commit confirmed'\n",
            "2:20",
            &["has no {minutes}"],
        );
        assert_error("[presets.p.modes]\nsudo = 'x'\n", "2:1", &["unknown field"]);
    }

    #[test]
    fn a_port_reads_its_credentials_file_and_refuses_a_readable_one() {
        use super::super::test_support::*;
        let (dir, file) = secrets();
        let creds = dir.path().join("sw1.creds");
        write_private(&creds, "username = \"admin\"\npassword = \"s3cret-pw\"\n");
        let text = "[ports.sw1]\ndevice = \"/dev/ttyUSB0\"\ncredentials = \"sw1.creds\"\n";
        let c = parse_in(&file, text).unwrap();
        let port = &c.ports["sw1"];
        assert_eq!(
            port.credentials.as_ref().map(|c| c.username.as_str()),
            Some("admin")
        );
        assert_eq!(port.credentials_file.as_deref(), Some(creds.as_path()));
        assert!(!format!("{c:?}").contains("s3cret-pw"), "Debug hides it");
        assert!(!c.summary().to_string().contains("s3cret-pw"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = parse_in(&file, text).unwrap_err();
        assert!(
            e.message.contains("ports.sw1.credentials") && e.message.contains("chmod 600"),
            "{e}"
        );
    }
}
