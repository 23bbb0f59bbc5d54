//! Built-in device presets: what a console of a given device family looks
//! like (baud and framing, prompt, pager, error lines, paging-off command).
//!
//! User presets in the config file extend these (see [`crate::config`]).

use schemars::JsonSchema;
use serde::Serialize;

pub use super::auto_reply::AutoReply;
use super::modes::{self, ModeRules};
use super::policies::{self, Guardrails};
use super::watches::{self, Watch};
use crate::settings::{LineEnding, LineSettings};

/// The preset a user preset without `extends`, a port without `preset` and an
/// ad-hoc connect without `preset` get.
pub const DEFAULT_PRESET: &str = "generic";

/// A device family's defaults, fully resolved (no `extends` left).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Preset {
    /// Name used in `preset = "..."` and `extends = "..."`.
    pub name: String,
    /// One line saying what it is for.
    pub description: String,
    /// Baud rate and framing.
    pub line: LineSettings,
    /// What is appended to text sent to the device.
    pub line_ending: LineEnding,
    /// Regex source (`regex::bytes` syntax) matching every CLI mode's prompt
    /// at the end of the output received so far.
    pub prompt: String,
    /// Pager and confirm triggers answered while a read waits, in order.
    pub auto_reply: Vec<AutoReply>,
    /// Pager prompt literals that output cleanup removes, e.g. `" --More-- "`.
    /// Where the pager text varies (Junos `---(more 27%)---`), this is its
    /// constant beginning.
    pub pagers: Vec<String>,
    /// Regex sources matched against each cleaned output line; a match marks
    /// the line as an error (`error_lines` of `send_command`).
    pub error_patterns: Vec<String>,
    /// Command that turns paging off for the session, e.g.
    /// `terminal length 0`.
    pub paging_off: Option<String>,
    /// The ntc-templates platform whose TextFSM templates parse its
    /// commands' output (`send_command` with `parse`), e.g. `cisco_ios`;
    /// none: output is not parsed.
    pub platform: Option<String>,
    /// The CLI's modes and configuration commands.
    pub modes: ModeRules,
    /// The credentials file ports of this preset log in with, resolved
    /// next to the config.
    pub credentials: Option<std::path::PathBuf>,
    /// Standing watches: output that raises an alert (a crash, a reboot,
    /// a boot loader prompt, memory and hardware errors).
    pub watches: Vec<Watch>,
    /// Named break sequences (`send_break` with `sequence`).
    pub break_sequences: super::breaks::BreakSequences,
    /// The guardrails: how the CLI reads a line, the family's dangerous
    /// commands, and the policy its ports get by default. Not shown to
    /// agents in `list_presets` (their output stays as lean as before).
    #[serde(skip)]
    #[schemars(skip)]
    pub guardrails: Guardrails,
}

/// Where a prompt may begin: the start of a line, or right after a carriage
/// return, a backspace or an ANSI control sequence. The last three are how
/// pagers erase themselves (Cisco backspaces, Junos `\r`, Huawei `ESC[42D`),
/// and when a pager falls on the last page the prompt follows the erase on
/// the same line. NULs may pad the erase (Junos' `\r\0`) before the prompt.
/// `-u`: hostnames are ASCII, and ASCII classes let the regex engine scan
/// about 1.6 times faster than Unicode `\w`.
const START: &str = r"(?m-u)(?:^|[\r\x08]|\x1b\[[0-9;?]*[A-Za-z])\x00*";

/// Login prompts of network operating systems (`Username:`, `Password:`,
/// `switch login:`), so that reads end when a device asks for credentials.
const LOGIN: &str = r"(?:[\w.\-]+ )?(?:[Ll]ogin|[Uu]sername|[Pp]assword):";

/// Cisco-style `host>`, `host#`, `host(config-if)#`: a hostname of letters,
/// digits, `.`, `-`, `_`, then mode suffixes in parentheses.
const CISCO_CLI: &str = r"[A-Za-z0-9][\w.\-]*(?:\([\w.\-/:]+\))*[>#]";

fn prompt(alternatives: &[&str]) -> String {
    format!("{START}(?:{}) ?$", alternatives.join("|"))
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn cisco_ios() -> Preset {
    Preset {
        name: "cisco-ios".into(),
        description: "Cisco IOS and IOS-XE routers and switches, 9600 8N1; \
                      answers --More--, never [confirm]"
            .into(),
        line: LineSettings::default(),
        line_ending: LineEnding::Cr,
        prompt: prompt(&[CISCO_CLI, r"rommon \d+ ?>", "switch:", LOGIN]),
        // [confirm] is deliberately not answered: a reload or erase must not
        // be confirmed behind the agent's back.
        auto_reply: vec![AutoReply::new("--More--", " ")],
        pagers: strings(&[" --More-- "]),
        error_patterns: strings(&[
            r"^% Invalid input detected",
            r"^% Incomplete command",
            r"^% Ambiguous command",
            r"^% Unknown command",
            r"^% Bad secrets",
        ]),
        paging_off: Some("terminal length 0".into()),
        platform: Some("cisco_ios".into()),
        modes: modes::cisco_ios(),
        credentials: None,
        watches: watches::cisco_ios(),
        break_sequences: Default::default(),
        guardrails: policies::cisco_ios(),
    }
}

fn cisco_nxos() -> Preset {
    Preset {
        name: "cisco-nxos".into(),
        description: "Cisco NX-OS (Nexus) switches, 9600 8N1; answers --More--".into(),
        line: LineSettings::default(),
        line_ending: LineEnding::Cr,
        prompt: prompt(&[CISCO_CLI, LOGIN]),
        auto_reply: vec![AutoReply::new("--More--", " ")],
        pagers: strings(&["--More--"]),
        error_patterns: strings(&[
            r"^% Invalid command",
            r"^% Invalid parameter",
            r"^% Incomplete command",
            r"^% Ambiguous command",
            r"Syntax error",
        ]),
        paging_off: Some("terminal length 0".into()),
        platform: Some("cisco_nxos".into()),
        modes: modes::cisco_nxos(),
        credentials: None,
        watches: watches::cisco_nxos(),
        break_sequences: Default::default(),
        guardrails: policies::cisco_nxos(),
    }
}

fn juniper_junos() -> Preset {
    Preset {
        name: "juniper-junos".into(),
        description: "Juniper Junos CLI (user@host>, user@host#) and shell (%), \
                      9600 8N1; answers ---(more)---"
            .into(),
        line: LineSettings::default(),
        line_ending: LineEnding::Cr,
        prompt: prompt(&[
            // CLI operational and configuration mode; `root>` when no
            // hostname is set.
            r"\w[\w.\-]*(?:@[\w.\-]+)?[>#]",
            // csh shell: `root@host%`, `root@host:RE:0%`, `root@:RE:0%`, `%`.
            r"\w[\w.\-]*@[\w.\-]*(?::RE:\d+)?%",
            "%",
            LOGIN,
        ]),
        auto_reply: vec![AutoReply::new("---(more", " ")],
        pagers: strings(&["---(more"]),
        error_patterns: strings(&[
            r"^error:",
            r"syntax error",
            r"unknown command",
            r"^missing argument",
        ]),
        paging_off: Some("set cli screen-length 0".into()),
        platform: Some("juniper_junos".into()),
        modes: modes::juniper_junos(),
        credentials: None,
        watches: watches::juniper_junos(),
        break_sequences: Default::default(),
        guardrails: policies::juniper_junos(),
    }
}

fn arista_eos() -> Preset {
    Preset {
        name: "arista-eos".into(),
        description: "Arista EOS switches, 9600 8N1; answers --More--".into(),
        line: LineSettings::default(),
        line_ending: LineEnding::Cr,
        prompt: prompt(&[
            CISCO_CLI,
            // bash from EOS: `[admin@switch ~]$`
            r"\[[\w.\-]+@[\w.\-]+ [^\]\r\n]*\][$#]",
            LOGIN,
        ]),
        auto_reply: vec![AutoReply::new("--More--", " ")],
        pagers: strings(&[" --More-- "]),
        error_patterns: strings(&[
            r"^% Invalid input",
            r"^% Incomplete command",
            r"^% Ambiguous command",
            r"^% Unavailable command",
        ]),
        paging_off: Some("terminal length 0".into()),
        platform: Some("arista_eos".into()),
        modes: modes::arista_eos(),
        credentials: None,
        watches: watches::arista_eos(),
        break_sequences: Default::default(),
        guardrails: policies::arista_eos(),
    }
}

fn huawei_vrp() -> Preset {
    Preset {
        name: "huawei-vrp".into(),
        description: "Huawei VRP routers and switches (<HUAWEI>, [~HUAWEI]), \
                      9600 8N1; answers ---- More ----"
            .into(),
        line: LineSettings::default(),
        line_ending: LineEnding::Cr,
        prompt: prompt(&[
            r"<[\w.\-]+>",
            // system view; `~` and `*` mark two-stage commit states (VRP8)
            r"\[[~*]?[\w.\-/:]+\]",
            LOGIN,
        ]),
        auto_reply: vec![AutoReply::new("---- More ----", " ")],
        pagers: strings(&["  ---- More ----"]),
        error_patterns: strings(&[r"^Error:", r"Unrecognized command"]),
        paging_off: Some("screen-length 0 temporary".into()),
        platform: Some("huawei_vrp".into()),
        modes: modes::huawei_vrp(),
        credentials: None,
        watches: watches::huawei_vrp(),
        break_sequences: Default::default(),
        guardrails: policies::huawei_vrp(),
    }
}

/// vtysh's pagers, which it runs only while paging is on (`terminal
/// paginate`, or `VTYSH_PAGER` set when it starts): `less` (Debian's
/// `/usr/bin/pager`) stops each page at `:` and the end at `(END)`;
/// util-linux `more` at a standout `--More--`, and shows an empty page
/// ending in `--More--` then `(END)` even for a command that printed
/// nothing. Both wait at `(END)` for `q`; a space there only rings the
/// bell (less) or pads another empty page (more).
const LESS_PAGE: &str = ":\x1b[K";
const MORE_PAGE: &str = "--More--\x1b[27m";
const PAGER_END: &str = "(END)";

fn frr() -> Preset {
    Preset {
        name: "frr".into(),
        description: "FRRouting vtysh (SONiC, Cumulus, Linux routers: r1#, \
                      r1(config-router)#), 9600 8N1; answers less and more"
            .into(),
        line: LineSettings::default(),
        line_ending: LineEnding::Cr,
        prompt: prompt(&[CISCO_CLI, LOGIN]),
        auto_reply: vec![
            AutoReply::new(MORE_PAGE, " "),
            AutoReply::new(LESS_PAGE, " "),
            AutoReply::new(PAGER_END, "q"),
        ],
        pagers: strings(&["--More--", LESS_PAGE, PAGER_END]),
        error_patterns: strings(&[
            // Every message of vtysh's parser and of the daemons' commands:
            // `% Unknown command: …`, `% Command incomplete: …`,
            // `% Ambiguous command: …`, `% BGP instance not found`,
            // `% Configuration failed.` (then `Error type: validation`),
            // `% Specify remote-as or peer-group commands first`.
            r"^% ",
            // A command for a daemon that is not running: said without
            // `%`, and vtysh still enters the node (`router ospf`).
            r"^\w+ is not running$",
            r"^BGP is already running; AS is \d+",
            r"^Warning: closing connection to \w+ because of an I/O error",
        ]),
        // vtysh 8.4 takes `no terminal paginate` and `terminal length 0`
        // (any other length says it is deprecated and ignored, and turns
        // the pager on); the length form is also what older vtysh and
        // Quagga know.
        paging_off: Some("terminal length 0".into()),
        // ntc-templates has no FRRouting platform, and none of its
        // platforms parses vtysh's FRR 8 tables: IOS's templates match
        // no line of them (empty records, as if there were no routes),
        // the others stop at the first (tests/testsuite/frr.rs).
        platform: None,
        modes: modes::frr(),
        credentials: None,
        watches: watches::frr(),
        break_sequences: Default::default(),
        guardrails: policies::frr(),
    }
}

fn linux() -> Preset {
    Preset {
        name: "linux".into(),
        description: "Linux serial console (login:, Password:, $ and # shell \
                      prompts), 115200 8N1; pages through less and more"
            .into(),
        line: LineSettings {
            baud: 115_200,
            ..LineSettings::default()
        },
        line_ending: LineEnding::Cr,
        // The whole last line, whatever colours and bracketed-paste switches
        // it holds, up to `$ `, `# ` or a login question at the end: so the
        // prompt is removed from `send_command` output whole, not just its
        // last two characters.
        prompt: r"(?m-u)(?:^|\r)[^\r\n]*?(?:[$#] |(?i:login|password)(?: for [^\s:]+)?: ?)$".into(),
        // The pagers a command may start (`systemctl status`, `journalctl`,
        // `git log`, `man`, or piped into by hand), as they draw their
        // prompts on a terminal with reverse video and erase-line (vt220,
        // linux, xterm): paged through with a space, left with `q` at the
        // end, where a space would only bring the same prompt back. Each
        // trigger holds a control sequence, so a file that merely contains
        // the words is not answered.
        auto_reply: vec![
            // less between pages: a lone `:` at the start of the bottom line
            AutoReply::new("\n:\x1b[K", " "),
            // less at the end of its input (whole, so that the end of
            // its reverse video is not answered on its own below)
            AutoReply::new("\x1b[7m(END)\x1b[27m\x1b[K", "q"),
            // more at the end of a pipe: `--More--` redrawn as `(END)`
            AutoReply::new("--More--\r\x1b[K(END)", "q"),
            // more on a file (`--More--(5%)`), and on a pipe
            AutoReply::new("\x1b[7m--More--(", " "),
            AutoReply::new("\x1b[7m--More--\x1b[27m", " "),
            // less' first page of a file: its name in reverse video
            AutoReply::new("\x1b[27m\x1b[K", " "),
        ],
        pagers: strings(&[
            "\x1b[7m--More--(",
            // more's last prompt on a pipe, `--More--` redrawn as `(END)`
            "\x1b[7m--More--\r\x1b[K(END)",
            "\x1b[7m--More--",
            "\x1b[7m(END)",
        ]),
        error_patterns: strings(&[
            r"^-?bash: .*: command not found",
            r"^-?(?:sh|ash|dash): .*: not found",
        ]),
        paging_off: None,
        platform: Some("linux".into()),
        modes: modes::linux(),
        credentials: None,
        watches: watches::linux(),
        break_sequences: Default::default(),
        guardrails: policies::linux(),
    }
}

fn hp_procurve() -> Preset {
    Preset {
        name: "hp-procurve".into(),
        description: "HP ProCurve and ArubaOS-Switch (ProCurve# , ProCurve(config)# ), \
                      9600 8N1; answers -- MORE --"
            .into(),
        line: LineSettings::default(),
        line_ending: LineEnding::Cr,
        prompt: prompt(&[
            // Default hostnames hold spaces: `ProCurve Switch 2810-24G# `.
            r"[A-Za-z0-9][\w .\-]*(?:\([\w.\-/:]+\))?[>#]",
            LOGIN,
        ]),
        auto_reply: vec![
            AutoReply::new("-- MORE --", " "),
            AutoReply::new("Press any key to continue", " "),
        ],
        pagers: strings(&[
            "-- MORE --, next page: Space, next line: Enter, quit: Control-C",
            "-- MORE --, next page: Space, next line: Enter, quit: q",
        ]),
        error_patterns: strings(&[
            r"^Invalid input:",
            r"^Ambiguous input:",
            r"^Incomplete input:",
            r"^% ",
        ]),
        paging_off: Some("no page".into()),
        platform: Some("hp_procurve".into()),
        modes: modes::hp_procurve(),
        credentials: None,
        watches: watches::hp_procurve(),
        break_sequences: Default::default(),
        guardrails: policies::hp_procurve(),
    }
}

fn generic() -> Preset {
    Preset {
        name: "generic".into(),
        description: "Anything else: the prompt is output ending with #, >, $ or %, \
                      9600 8N1"
            .into(),
        line: LineSettings::default(),
        line_ending: LineEnding::Cr,
        prompt: r"[#>$%] ?$".into(),
        auto_reply: Vec::new(),
        pagers: Vec::new(),
        error_patterns: Vec::new(),
        paging_off: None,
        platform: None,
        modes: ModeRules::default(),
        credentials: None,
        watches: watches::generic(),
        break_sequences: Default::default(),
        guardrails: Guardrails::default(),
    }
}

/// Every built-in preset, `generic` last.
pub fn builtin_presets() -> Vec<Preset> {
    vec![
        cisco_ios(),
        cisco_nxos(),
        juniper_junos(),
        arista_eos(),
        huawei_vrp(),
        hp_procurve(),
        frr(),
        linux(),
        generic(),
    ]
}

/// The built-in preset called `name`, if there is one.
pub fn builtin(name: &str) -> Option<Preset> {
    builtin_presets().into_iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use regex::bytes::Regex;

    use super::*;

    /// The preset's prompt, matching only where it ends at the end of the
    /// text (what "the device now waits at a prompt" means).
    fn at_end(p: &Preset) -> Regex {
        Regex::new(&format!(r"(?:{})\z", p.prompt)).unwrap()
    }

    fn anywhere(p: &Preset) -> Regex {
        Regex::new(&p.prompt).unwrap()
    }

    /// Checks that each prompt, arriving after some output, matches at the
    /// end, and that each line that is no prompt matches nowhere, alone or
    /// after output.
    fn check(name: &str, prompts: &[&str], not_prompts: &[&str]) {
        let p = builtin(name).unwrap();
        let end = at_end(&p);
        let any = anywhere(&p);
        for prompt in prompts {
            for before in ["", "show version\r\nsome output\r\n", "\r\n"] {
                let text = format!("{before}{prompt}");
                assert!(
                    end.is_match(text.as_bytes()),
                    "{name}: prompt {text:?} does not match at the end"
                );
            }
        }
        for line in not_prompts {
            for after in ["", "\r\n"] {
                let text = format!("output\r\n{line}{after}");
                assert!(
                    !any.is_match(text.as_bytes()),
                    "{name}: {text:?} matches the prompt {:?}",
                    p.prompt
                );
            }
        }
    }

    #[test]
    fn all_builtins_compile_and_are_sane() {
        let presets = builtin_presets();
        assert_eq!(presets.len(), 9);
        for p in &presets {
            let re = anywhere(p);
            assert!(!re.is_match(b""), "{}: prompt matches empty text", p.name);
            for e in &p.error_patterns {
                let re = Regex::new(e).unwrap();
                assert!(!re.is_match(b""), "{}: {e:?} matches an empty line", p.name);
            }
            p.line.validate().unwrap();
            assert!(!p.description.is_empty());
            assert!(p.auto_reply.iter().all(|a| !a.trigger.is_empty()));
            assert_eq!(builtin(&p.name).as_ref(), Some(p));
        }
        assert!(builtin("nope").is_none());
        assert!(builtin(DEFAULT_PRESET).is_some());
    }

    #[test]
    fn every_simulated_device_has_its_builtin_preset() {
        for profile in serialgate_sim::Profile::ALL {
            assert!(builtin(profile.preset()).is_some(), "{profile}");
        }
    }

    #[test]
    fn cisco_ios_prompts() {
        check(
            "cisco-ios",
            &[
                "Router>",
                "Router#",
                "Router# ",
                "Router(config)#",
                "Router(config-if)#",
                "Router(config-router)#",
                "Router(config-if-range)#",
                "core-sw1.lab_east(config-line)#",
                "R1.example.net>",
                "rommon 1 >",
                "rommon 2 > ",
                "switch: ",
                "Username: ",
                "Password: ",
                // the pager erased itself just before the prompt
                " --More-- \x08\x08\x08\x08\x08\x08\x08\x08\x08\x08          \
                 \x08\x08\x08\x08\x08\x08\x08\x08\x08\x08Router#",
            ],
            &[
                "Building configuration...",
                "  description foo#",
                " description uplink>",
                " --More-- ",
                "--More--",
                "Router#show version",
                "Router(config)#interface Gi0/1",
                "% Invalid input detected at '^' marker.",
                "Current configuration : 1234 bytes",
                "!",
                "end",
                "Proceed with reload? [confirm]",
                "###########",
            ],
        );
    }

    #[test]
    fn cisco_ios_matches_only_at_the_end() {
        let p = builtin("cisco-ios").unwrap();
        let end = at_end(&p);
        assert!(!end.is_match(b"Router#\r\nshow clock\r\n*10:00:00.000 UTC Mon Jan 1 2024\r\n"));
        assert!(end.is_match(b"*10:00:00.000 UTC Mon Jan 1 2024\r\nRouter#"));
    }

    #[test]
    fn cisco_nxos_prompts() {
        check(
            "cisco-nxos",
            &[
                "switch#",
                "switch# ",
                "switch>",
                "switch(config)#",
                "switch(config-if)# ",
                "n9k-leaf-01(config-vlan)#",
                "switch(boot)#",
                "loader>",
                "switch login: ",
                "Password: ",
            ],
            &[
                "--More--",
                "% Invalid command at '^' marker.",
                "Syntax error while parsing 'foo'",
                "  description uplink#",
                "switch# show version",
                "Cisco Nexus Operating System (NX-OS) Software",
            ],
        );
    }

    #[test]
    fn juniper_junos_prompts() {
        check(
            "juniper-junos",
            &[
                "user@host>",
                "user@host> ",
                "user@host# ",
                "{master:0}\r\nlab@mx-1.example.net> ",
                "[edit]\r\nlab@mx-1# ",
                "[edit interfaces ge-0/0/0]\r\nlab@mx-1# ",
                "root> ",
                "% ",
                "root@host% ",
                "root@host:RE:0% ",
                "root@:RE:0% ",
                "login: ",
                "Password:",
                // the pager erased itself with a carriage return
                "---(more 98%)---\r                                        \ruser@host> ",
                "---(more)---\r\x00\x00                    \r\x00\x00user@host> ",
                // the line redrawn (Ctrl-L, a message cut in)
                "user@host> show ver\r                    \ruser@host> ",
            ],
            &[
                "---(more)---",
                "---(more 27%)---",
                "{master:0}",
                "[edit]",
                "[edit interfaces]",
                "error: syntax error: foo",
                "syntax error, expecting <command>.",
                "    unit 0 {",
                "user@host> show interfaces terse",
                "/dev/gpt/junos      5.0G   1.4G   3.2G    30%",
                "100%",
            ],
        );
    }

    #[test]
    fn arista_eos_prompts() {
        check(
            "arista-eos",
            &[
                "switch>",
                "switch#",
                "switch(config)#",
                "switch(config-if-Et1)#",
                "switch(config-if-Et1/1)#",
                "leaf-1.dc1(config-s-sess1)#",
                "switch(config-router-bgp)# ",
                "[admin@switch ~]$ ",
                "localhost login: ",
                "Password: ",
            ],
            &[
                " --More-- ",
                "% Invalid input",
                "% Incomplete command",
                "   description to-spine#",
                "switch#show version",
                "Et1       connected    1        full   10G    10GBASE-SR",
            ],
        );
    }

    #[test]
    fn huawei_vrp_prompts() {
        check(
            "huawei-vrp",
            &[
                "<HUAWEI>",
                "[HUAWEI]",
                "[~HUAWEI]",
                "[*HUAWEI]",
                "[~HUAWEI-GigabitEthernet0/0/1]",
                "[HUAWEI-ospf-1-area-0.0.0.0]",
                "<core_rtr.1>",
                "Username:",
                "Password:",
                // the pager erased itself with ESC[42D
                "  ---- More ----\x1b[42D                                          \x1b[42D<HUAWEI>",
                "  ---- More ----\x1b[16D                \x1b[16D[~HUAWEI-GigabitEthernet0/0/1]",
            ],
            &[
                "  ---- More ----",
                "Error: Unrecognized command found at '^' position.",
                "#",
                " sysname HUAWEI",
                "Warning: The current configuration will be written. Continue? [Y/N]:",
                "<HUAWEI>display version",
                "[Slot 1]",
            ],
        );
    }

    #[test]
    fn linux_prompts() {
        check(
            "linux",
            &[
                "user@host:~$ ",
                "root@host:/etc# ",
                "# ",
                "$ ",
                "/ # ",
                "pi@raspberrypi:~ $ ",
                "\x1b[?2004h\x1b[01;32muser@host\x1b[00m:\x1b[01;34m~\x1b[00m$ ",
                "raspberrypi login: ",
                "Password: ",
                "[sudo] password for pi: ",
                "\r\x1b[Kuser@host:~$ ",
            ],
            &[
                "Last login: Mon Jan  1 10:00:00 2024 on ttyS0",
                "total 0",
                "-bash: foo: command not found",
                "Login incorrect",
                "user@host:~$ ls -l",
            ],
        );
    }

    #[test]
    fn linux_pager_triggers_are_answered_once_each_where_real_pagers_draw_them() {
        let p = builtin("linux").unwrap();
        let pairs: Vec<(String, String)> = p
            .auto_reply
            .iter()
            .map(|a| (a.trigger.clone(), a.reply.clone()))
            .collect();
        // What less 590 and more (util-linux 2.38) print on a vt220, with
        // the reply each must get (a space at an end would loop).
        let cases: [(&[u8], &[&str]); 7] = [
            (b"22\r\n23\r\n:\x1b[K", &[" "]),
            (b"23\r\n\x1b[7mlong.txt\x1b[27m\x1b[K", &[" "]),
            (b"30\r\n\x1b[7m(END)\x1b[27m\x1b[K", &["q"]),
            (b"ftp\r\n\x1b[7m--More--(5%)\x1b[27m", &[" "]),
            (b"23\r\n\x1b[7m--More--\x1b[27m", &[" "]),
            (b"\r\n\x1b[7m--More--\r\x1b[K(END)\x1b[27m", &["q"]),
            // ordinary text that names them
            (b"see (END) and --More-- and a: b\r\n", &[]),
        ];
        for (raw, want) in cases {
            let mut scanner = crate::matcher::TriggerScanner::new(&pairs, 0).unwrap();
            let hits = scanner.scan(raw, 0, raw.len() as u64);
            let got: Vec<&str> = hits
                .iter()
                .map(|h| std::str::from_utf8(scanner.reply(h)).unwrap())
                .collect();
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn linux_prompt_is_the_whole_last_line() {
        let p = builtin("linux").unwrap();
        let prompt = "\x1b[?2004h\x1b[01;32muser@host\x1b[00m:\x1b[01;34m~\x1b[00m$ ";
        let text = format!("ls\r\nbin\r\n{prompt}");
        let found = at_end(&p).find(text.as_bytes()).unwrap();
        assert_eq!(&text.as_bytes()[found.start()..], prompt.as_bytes());
    }

    #[test]
    fn hp_procurve_prompts() {
        check(
            "hp-procurve",
            &[
                "ProCurve# ",
                "ProCurve> ",
                "ProCurve(config)# ",
                "ProCurve(vlan-10)# ",
                "ProCurve Switch 2810-24G# ",
                "HP-2920-48G(eth-1/1)# ",
                "Username: ",
                "Password: ",
                // drawn at the bottom line of the screen
                "\x1b[24;1HProCurve# ",
                // the pager erased itself, then the prompt
                "\x1b[24;1H-- MORE --, next page: Space, next line: Enter, quit: Control-C\
                 \x1b[24;1H\x1b[2K\x1b[24;1H\x1b[?25h\x1b[24;1HProCurve# ",
            ],
            &[
                "-- MORE --, next page: Space, next line: Enter, quit: Control-C",
                "Running configuration:",
                "; J9776A Configuration Editor; Created on release #YA.16.10.0003",
                "hostname \"ProCurve\"",
                "   name \"users-0010\"",
                "Invalid input: foo",
                "ProCurve# show running-config",
            ],
        );
    }

    #[test]
    fn frr_prompts() {
        check(
            "frr",
            &[
                "r1# ",
                "r1> ",
                "r1(config)# ",
                "r1(config-router)# ",
                "r1(config-router-af)# ",
                "r1(config-if)# ",
                "sonic-leaf-01(config-route-map)# ",
                "r1(pcep-sr-te-pcep-pce-config)# ",
                "sonic login: ",
                "Password: ",
                // less's end erased by `q`, then the prompt
                "\x1b[7m(END)\x1b[27m\x1b[K\r\x1b[Kr1# ",
                // more's end: its standout closed after the erase
                "\x1b[7m--More--\r\x1b[K(END)\x1b[27m\r\x1b[Kr1# ",
            ],
            &[
                "Building configuration...",
                "Current configuration:",
                "!",
                "frr version 8.4.4",
                "hostname r1",
                " neighbor 10.0.0.2 description core#",
                "r1# show running-config",
                "r1(config)# router bgp 65001",
                "% Unknown command: foo",
                "\x1b[7m--More--\x1b[27m",
                ":\x1b[K",
                "\x1b[7m(END)\x1b[27m\x1b[K",
                "Neighbor        V         AS   MsgRcvd   MsgSent   TblVer  InQ OutQ  Up/Down State/PfxRcd   PfxSnt Desc",
                "K>* 0.0.0.0/0 [0/0] via 192.0.2.1, eth0, 00:00:05",
            ],
        );
    }

    #[test]
    fn frr_answers_each_pager_with_what_ends_it() {
        let p = builtin("frr").unwrap();
        let reply = |trigger: &str| {
            p.auto_reply
                .iter()
                .find(|a| a.trigger == trigger)
                .map(|a| a.reply.clone())
        };
        assert_eq!(reply(":\x1b[K").as_deref(), Some(" "), "less: next page");
        assert_eq!(
            reply("--More--\x1b[27m").as_deref(),
            Some(" "),
            "more: next page"
        );
        assert_eq!(
            reply("(END)").as_deref(),
            Some("q"),
            "both: quit at the end"
        );
        // more's last page, `--More--` then `(END)`, must get only `q`: a
        // space there would draw another empty page.
        let end = "\x1b[7m--More--\r\x1b[K(END)\x1b[27m";
        let fired: Vec<&str> = p
            .auto_reply
            .iter()
            .filter(|a| end.contains(&a.trigger))
            .map(|a| a.reply.as_str())
            .collect();
        assert_eq!(fired, ["q"]);
        assert_eq!(p.paging_off.as_deref(), Some("terminal length 0"));
    }

    #[test]
    fn generic_prompts() {
        check(
            "generic",
            &["Router#", "switch>", "$ ", "% ", "host# "],
            &["Building configuration...", "hello", "--More--"],
        );
    }

    #[test]
    fn error_patterns_match_error_lines() {
        let cases = [
            ("cisco-ios", "% Invalid input detected at '^' marker.", true),
            ("cisco-ios", "% Ambiguous command:  \"sh\"", true),
            ("cisco-ios", "  description % Invalid", false),
            ("cisco-nxos", "% Invalid command at '^' marker.", true),
            (
                "juniper-junos",
                "error: configuration check-out failed",
                true,
            ),
            ("juniper-junos", "syntax error, expecting <command>.", true),
            ("juniper-junos", "  Last flapped   : Never", false),
            ("arista-eos", "% Invalid input (at token 1: 'foo')", true),
            (
                "huawei-vrp",
                "Error: Unrecognized command found at '^' position.",
                true,
            ),
            ("linux", "-bash: foo: command not found", true),
            ("linux", "bash: foo: command not found", true),
            ("linux", "-sh: foo: not found", true),
            ("linux", "drwxr-xr-x 2 root root 4096 bash", false),
            ("frr", "% Unknown command: shw ip route", true),
            (
                "frr",
                "% Command incomplete: neighbor 10.0.0.3 remote-as",
                true,
            ),
            ("frr", "% Ambiguous command: sh ip r", true),
            ("frr", "% BGP instance not found", true),
            ("frr", "% Configuration failed.", true),
            ("frr", "ospfd is not running", true),
            ("frr", "BGP is already running; AS is 65001", true),
            ("frr", " description % not an error", false),
            (
                "frr",
                "Integrated configuration saved to /etc/frr/frr.conf",
                false,
            ),
            (
                "frr",
                "Warning: attempting direct configuration write without watchfrr.",
                false,
            ),
            ("hp-procurve", "Invalid input: shw", true),
            ("hp-procurve", "   name \"Invalid input\"", false),
        ];
        for (name, line, want) in cases {
            let p = builtin(name).unwrap();
            let hit = p
                .error_patterns
                .iter()
                .any(|e| Regex::new(e).unwrap().is_match(line.as_bytes()));
            assert_eq!(hit, want, "{name}: {line:?}");
        }
    }

    #[test]
    fn cisco_ios_never_confirms() {
        let p = builtin("cisco-ios").unwrap();
        assert!(p.auto_reply.iter().all(|a| !a.trigger.contains("confirm")));
        assert_eq!(p.auto_reply, vec![AutoReply::new("--More--", " ")]);
    }
}
