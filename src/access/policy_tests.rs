//! The judge ([`super::policy`]) against a hostile corpus: abbreviations,
//! case, spaces, tabs, `do` and `run`, several lines in one write, and
//! words that only look like a rule's.

use super::policy::{CliMode, Under, Verdict, judge};
use crate::config::policies::{DangerousUse, Guardrails, Policy, Rule, Tier, builtin_policies};
use crate::config::presets;

fn builtin(name: &str) -> Policy {
    builtin_policies()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap()
}

fn guardrails(preset: &str) -> Guardrails {
    presets::builtin(preset).unwrap().guardrails
}

fn rules(list: &[&str], tier: Tier) -> Vec<Rule> {
    list.iter().map(|r| Rule::parse(r, tier).unwrap()).collect()
}

/// A policy of the file's: own rules, the preset's dangerous commands as
/// `dangerous` says.
fn policy(
    deny: &[&str],
    approve: &[&str],
    allow: Option<&[&str]>,
    dangerous: DangerousUse,
) -> Policy {
    Policy {
        name: "test".into(),
        deny: rules(deny, Tier::Deny),
        approve: rules(approve, Tier::Approve),
        allow: allow.map(|a| rules(a, Tier::Allow)),
        dangerous,
        approval_timeout: None,
        self_approve: false,
        client_user_approves: false,
    }
}

/// The verdict's name: allow, approve, deny or refuse (unjudgeable).
fn verdict(p: &Policy, preset: &str, mode: CliMode, text: &str) -> &'static str {
    let g = guardrails(preset);
    let under = Under {
        policy: p,
        preset,
        guardrails: &g,
    };
    match judge(&under, mode, text) {
        Verdict::Allow => "allow",
        Verdict::Approve(_) => "approve",
        Verdict::Deny(_) => "deny",
        Verdict::Unjudgeable { .. } => "refuse",
    }
}

fn check(p: &Policy, preset: &str, mode: CliMode, corpus: &[(&str, &str)]) {
    for (text, want) in corpus {
        assert_eq!(
            verdict(p, preset, mode, text),
            *want,
            "{text:?} under {} on {preset} in {mode:?}",
            p.name
        );
    }
}

/// The corpus of `reload`'s spellings and its look-alikes under `locked`
/// on IOS (the dangerous commands denied).
pub(super) const IOS_CORPUS: &[(&str, &str)] = &[
    ("reload", "deny"),
    ("RELOAD", "deny"),
    ("ReLoAd", "deny"),
    ("rel", "deny"),
    ("reloa", "deny"),
    ("r", "deny"),
    ("   reload", "deny"),
    ("reload   ", "deny"),
    ("reload in 5", "deny"),
    ("reload at 02:00", "deny"),
    ("reload /noverify", "deny"),
    ("do reload", "deny"),
    ("do   rel", "deny"),
    ("DO RELOAD", "deny"),
    ("show version\nreload", "deny"),
    ("show version\r\nreload\r\n", "deny"),
    ("show clock\rreload", "deny"),
    ("reload\tin 5", "refuse"),
    ("rel\t", "refuse"),
    ("reload?", "refuse"),
    ("re\x08\x08reload", "refuse"),
    ("\x1b[Areload", "refuse"),
    ("reloadx", "allow"),
    ("show reload", "allow"),
    ("show logging | include reload", "allow"),
    ("sh log | i reload", "allow"),
    ("description reload-test", "allow"),
    ("show running-config | include reload", "allow"),
    ("ping 10.0.0.1", "allow"),
    ("show version", "allow"),
    ("", "allow"),
    ("\n\n", "allow"),
    ("write erase", "deny"),
    ("wr er", "deny"),
    ("wr e", "deny"),
    ("WRITE   ERASE", "deny"),
    ("write memory", "allow"),
    ("wr mem", "allow"),
    ("wr", "allow"),
    ("erase startup-config", "deny"),
    ("erase nvram:", "deny"),
    ("clear ip bgp *", "deny"),
    ("cl ip b *", "deny"),
    ("clear ip bgp 10.0.0.1", "allow"),
    ("clear counters", "allow"),
    ("copy running-config startup-config", "deny"),
    ("copy running-config tftp:", "allow"),
    ("config-register 0x2142", "deny"),
    ("show boot", "allow"),
    ("boot system flash:x.bin", "deny"),
    ("reload|include x", "deny"),
];

#[test]
fn ios_spellings_of_dangerous_commands_and_their_look_alikes() {
    let locked = builtin("locked");
    check(&locked, "cisco-ios", CliMode::Exec, IOS_CORPUS);
    // In a mode the gateway cannot tell, every rule applies: `sh` may be
    // `shutdown` in an interface's configuration, so it is refused;
    // `show` is not.
    check(
        &locked,
        "cisco-ios",
        CliMode::Unknown,
        &[
            ("sh log | i reload", "deny"),
            ("show logging | include reload", "allow"),
            ("reload", "deny"),
        ],
    );
    // guarded: the same commands need approval instead.
    let guarded = builtin("guarded");
    check(
        &guarded,
        "cisco-ios",
        CliMode::Exec,
        &[
            ("reload", "approve"),
            ("wr er", "approve"),
            ("show reload", "allow"),
            ("reload\t", "refuse"),
        ],
    );
    // none, and generic (no dangerous commands): nothing is judged.
    check(
        &builtin("none"),
        "cisco-ios",
        CliMode::Exec,
        &[("reload", "allow")],
    );
    check(&guarded, "generic", CliMode::Exec, &[("reload", "allow")]);
}

#[test]
fn modes_decide_where_a_rule_applies() {
    let locked = builtin("locked");
    let config = &[
        ("no router bgp 65000", "deny"),
        ("no router ospf 1", "deny"),
        ("no router", "allow"),
        ("router bgp 65000", "allow"),
        ("shutdown", "deny"),
        ("shut", "deny"),
        ("no shutdown", "allow"),
        ("description shutdown", "allow"),
        ("do reload", "deny"),
        ("do show reload", "allow"),
        ("interface Gi0/1", "allow"),
    ];
    check(&locked, "cisco-ios", CliMode::Config, config);
    // In exec mode a configuration command's rule does not apply...
    check(
        &locked,
        "cisco-ios",
        CliMode::Exec,
        &[("shutdown", "allow"), ("no router bgp 1", "allow")],
    );
    // ...and `do` always runs an exec command, while an unknown mode is
    // judged under every rule.
    check(
        &locked,
        "cisco-ios",
        CliMode::Unknown,
        &[
            ("shutdown", "deny"),
            ("do shutdown", "allow"),
            ("do reload", "deny"),
        ],
    );
    let p = policy(&["exec: reload"], &[], None, DangerousUse::Ignore);
    check(
        &p,
        "cisco-ios",
        CliMode::Config,
        &[("reload", "allow"), ("do reload", "deny")],
    );
}

#[test]
fn junos_words_and_run_from_configuration() {
    let locked = builtin("locked");
    check(
        &locked,
        "juniper-junos",
        CliMode::Config,
        &[
            ("run request system reboot", "deny"),
            ("run req sys reb", "deny"),
            ("ru request system reboot", "deny"),
            ("rollback 1", "deny"),
            ("load override terminal", "deny"),
            ("set interfaces ge-0/0/0 description reboot", "allow"),
            ("show | compare", "allow"),
        ],
    );
    check(
        &locked,
        "juniper-junos",
        CliMode::Exec,
        &[
            ("request system reboot", "deny"),
            ("req sys reb", "deny"),
            ("request system reboot in 5", "deny"),
            ("request system zeroize", "deny"),
            ("request system software add x.tgz", "deny"),
            ("request support information", "allow"),
            ("show system uptime", "allow"),
            ("show log messages | match reboot", "allow"),
            ("clear bgp neighbor", "deny"),
            ("clear interfaces statistics all", "allow"),
        ],
    );
}

#[test]
fn the_other_families() {
    let locked = builtin("locked");
    for (preset, denied, allowed) in [
        ("cisco-nxos", "reload", "show reload"),
        ("cisco-nxos", "system switchover", "show system uptime"),
        ("arista-eos", "reload now", "show reload cause"),
        ("arista-eos", "bash", "show version"),
        ("huawei-vrp", "reboot", "display reboot-info"),
        (
            "huawei-vrp",
            "reset saved-configuration",
            "reset counters interface",
        ),
        (
            "huawei-vrp",
            "startup saved-configuration x.cfg",
            "display startup",
        ),
        ("hp-procurve", "boot system flash primary", "show flash"),
        ("hp-procurve", "erase startup-config", "show running-config"),
    ] {
        check(
            &locked,
            preset,
            CliMode::Unknown,
            &[(denied, "deny"), (allowed, "allow")],
        );
    }
}

#[test]
fn what_runs_commands_later_is_judged_when_it_is_defined() {
    let locked = builtin("locked");
    for (preset, defined, allowed) in [
        ("cisco-ios", "alias exec r reload", "show aliases"),
        (
            "cisco-ios",
            "ALIAS exec sh show running-config",
            "show alias",
        ),
        (
            "cisco-ios",
            "event manager applet boom",
            "show event manager policy registered",
        ),
        (
            "cisco-ios",
            "kron policy-list nightly",
            "show kron schedule",
        ),
        ("cisco-ios", "macro name edge", "show parser macro"),
        (
            "cisco-ios",
            "macr name edge",
            "mac address-table static 0000.1111.2222 vlan 1 interface Gi1/0/1",
        ),
        ("cisco-nxos", "cli alias name r reload", "show cli alias"),
        (
            "cisco-nxos",
            "scheduler job name nightly",
            "show scheduler job",
        ),
        ("arista-eos", "alias r reload now", "show aliases"),
        ("arista-eos", "event-handler boom", "show event-handler"),
        (
            "arista-eos",
            "schedule nightly interval 60 command reload",
            "show schedule",
        ),
        (
            "juniper-junos",
            "set system scripts commit file evil.slax",
            "show system scripts",
        ),
        (
            "juniper-junos",
            "set event-options policy boom events ui_commit",
            "show event-options",
        ),
        ("huawei-vrp", "command-alias", "display command-alias"),
        ("huawei-vrp", "ops", "display ops"),
        ("hp-procurve", "alias r \"reload\"", "show alias"),
        ("hp-procurve", "job nightly at 01:00 \"reload\"", "show job"),
    ] {
        check(
            &locked,
            preset,
            CliMode::Config,
            &[(defined, "deny"), (allowed, "allow")],
        );
    }
    // In configuration mode only: `alias` is no exec command.
    check(
        &locked,
        "cisco-ios",
        CliMode::Exec,
        &[("show alias", "allow")],
    );
}

#[test]
fn a_linux_shell_is_read_as_a_shell() {
    let locked = builtin("locked");
    check(
        &locked,
        "linux",
        CliMode::Exec,
        &[
            ("reboot", "deny"),
            ("REBOOT", "deny"),
            ("/sbin/reboot", "deny"),
            ("sudo reboot", "deny"),
            ("sudo -u root reboot", "deny"),
            ("ls; reboot", "deny"),
            ("ls && reboot", "deny"),
            ("ls || reboot", "deny"),
            ("true | reboot", "deny"),
            ("echo $(reboot)", "deny"),
            ("echo `reboot`", "deny"),
            ("re\"\"boot", "deny"),
            ("'reboot'", "deny"),
            ("\\reboot", "deny"),
            ("FOO=1 reboot", "deny"),
            ("bash -c \"systemctl reboot\"", "deny"),
            ("systemctl reboot", "deny"),
            ("systemctl status sshd", "allow"),
            ("init 6", "deny"),
            ("init", "allow"),
            ("rm -rf /", "deny"),
            ("rm -rf /tmp/x", "allow"),
            ("mkfs.ext4 /dev/sda1", "deny"),
            ("dd if=/dev/zero of=/dev/sda", "deny"),
            ("echo reboot", "allow"),
            ("man reboot", "allow"),
            ("grep reboot /var/log/syslog", "allow"),
            ("ls file?.txt", "allow"),
            ("rebooter", "allow"),
            // No abbreviation in a shell.
            ("reb", "allow"),
            ("ls 2>&1", "allow"),
            ("reboot\t", "refuse"),
        ],
    );
    let p = policy(
        &[],
        &[],
        Some(&["ls", "cat", "systemctl status"]),
        DangerousUse::Approve,
    );
    check(
        &p,
        "linux",
        CliMode::Exec,
        &[
            ("ls -l", "allow"),
            ("ls | cat", "allow"),
            ("ls 2>&1", "allow"),
            ("ls; rm x", "deny"),
            ("systemctl status x", "allow"),
            ("systemctl restart x", "deny"),
            ("sudo ls", "deny"),
            ("reboot", "approve"),
        ],
    );
}

#[test]
fn an_allow_list_permits_only_what_it_lists() {
    let p = policy(
        &["clear ip bgp *"],
        &[],
        Some(&["sh[ow]", "ping", "traceroute"]),
        DangerousUse::Deny,
    );
    check(
        &p,
        "cisco-ios",
        CliMode::Exec,
        &[
            ("show version", "allow"),
            ("sh ver", "allow"),
            ("SHOW   VERSION", "allow"),
            ("s ver", "deny"),
            ("ping 10.0.0.1", "allow"),
            ("pin 10.0.0.1", "allow"),
            ("pi 10.0.0.1", "deny"),
            ("traceroute 10.0.0.1", "allow"),
            ("configure terminal", "deny"),
            ("reload", "deny"),
            ("showx", "deny"),
            ("show logging | include reload", "allow"),
            ("show run | i hostname | count", "allow"),
            ("show run | redirect flash:x", "deny"),
            ("show run | append flash:x", "deny"),
            ("show run | tee flash:x", "deny"),
            ("show run | re flash:x", "deny"),
            ("show run | s bgp", "deny"),
            ("show run |", "deny"),
            ("show version\nconfigure terminal", "deny"),
            ("do show version", "allow"),
            ("", "allow"),
        ],
    );
}

#[test]
fn deny_beats_approve_beats_allow() {
    let p = policy(
        &["clear ip bgp *"],
        &["clear ip bgp", "reload"],
        Some(&["clear", "show"]),
        DangerousUse::Ignore,
    );
    check(
        &p,
        "cisco-ios",
        CliMode::Exec,
        &[
            ("clear ip bgp *", "deny"),
            ("clear ip bgp 10.0.0.1", "approve"),
            ("clear counters", "allow"),
            ("reload", "approve"),
            ("reload\nclear ip bgp *", "deny"),
        ],
    );
    // An explicit minimum lets a short word through.
    let p = policy(&["rel[oad]"], &[], None, DangerousUse::Ignore);
    check(
        &p,
        "cisco-ios",
        CliMode::Exec,
        &[("re", "allow"), ("rel", "deny"), ("reload", "deny")],
    );
}

#[test]
fn a_finding_names_the_rule_the_policy_and_the_line() {
    let p = builtin("guarded");
    let g = guardrails("cisco-ios");
    let under = Under {
        policy: &p,
        preset: "cisco-ios",
        guardrails: &g,
    };
    let Verdict::Approve(f) = judge(&under, CliMode::Exec, "show clock\n  wr   er  \n") else {
        panic!("write erase needs approval");
    };
    assert_eq!(f.rule, "write erase");
    assert_eq!(f.policy, "guarded");
    assert_eq!(f.line, "wr   er");
    assert!(
        f.from
            .contains("dangerous commands of preset \"cisco-ios\""),
        "{}",
        f.from
    );
}

#[test]
fn hostile_sizes_stay_cheap_and_bounded() {
    let locked = builtin("locked");
    // A line longer than any device's command line is not judged.
    let long = format!("show {}", "x".repeat(super::policy::MAX_LINE_BYTES));
    assert_eq!(
        verdict(&locked, "cisco-ios", CliMode::Exec, &long),
        "refuse"
    );
    // `do` after `do` is looked through a few times, then refused.
    assert_eq!(
        verdict(&locked, "cisco-ios", CliMode::Config, "do do reload"),
        "deny"
    );
    let many = format!("{}show clock", "do ".repeat(1000));
    assert_eq!(
        verdict(&locked, "cisco-ios", CliMode::Config, &many),
        "refuse"
    );
    // A wrapper with many words after it, in a shell.
    let sudo = format!("sudo {}reboot", "-x ".repeat(1000));
    assert_eq!(verdict(&locked, "linux", CliMode::Exec, &sudo), "deny");
    // What the allow list misses is shown bounded.
    let p = policy(&[], &[], Some(&["show"]), DangerousUse::Ignore);
    let g = guardrails("cisco-ios");
    let under = Under {
        policy: &p,
        preset: "cisco-ios",
        guardrails: &g,
    };
    let Verdict::Deny(f) = judge(&under, CliMode::Exec, &format!("ping {}", "1".repeat(3000)))
    else {
        panic!("ping is not on the allow list");
    };
    assert!(f.missing && f.rule.len() < 200, "{}", f.rule);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Any abbreviation of `reload`, in any case, with any spaces around
    /// it and any arguments after it, is denied under `locked` on IOS.
    fn spelled(cut: usize, upper: Vec<bool>, lead: usize, gap: usize, args: &str) -> String {
        let word: String = "reload"[..cut]
            .chars()
            .zip(upper)
            .map(|(c, u)| if u { c.to_ascii_uppercase() } else { c })
            .collect();
        format!("{}{word}{}{args}", " ".repeat(lead), " ".repeat(gap))
    }

    proptest! {
        #[test]
        fn every_spelling_of_reload_is_denied(
            cut in 1usize..=6,
            upper in proptest::collection::vec(any::<bool>(), 6),
            lead in 0usize..4,
            gap in 1usize..4,
            args in "[a-z0-9 /:]{0,12}",
            with_do in any::<bool>(),
        ) {
            let mut line = spelled(cut, upper, lead, gap, &args);
            if with_do {
                line = format!("do {line}");
            }
            let mode = if with_do { CliMode::Config } else { CliMode::Exec };
            prop_assert_eq!(verdict(&builtin("locked"), "cisco-ios", mode, &line), "deny", "{:?}", line);
        }

        /// A word of `reload` after any other first word is never denied
        /// by a rule about `reload`.
        #[test]
        fn reload_as_a_later_word_stays_allowed(
            first in "(show|description|ping|sh|desc)",
            rest in "[a-z0-9 -]{0,10}",
        ) {
            let line = format!("{first} {rest} reload {rest}");
            let p = policy(&["reload"], &[], None, DangerousUse::Ignore);
            prop_assert_eq!(verdict(&p, "cisco-ios", CliMode::Exec, &line), "allow", "{:?}", line);
        }

        /// The judge never panics, whatever the text.
        #[test]
        fn any_text_gets_a_verdict(text in "\\PC{0,64}|[\\x00-\\x7f]{0,64}") {
            for preset in ["cisco-ios", "linux", "juniper-junos"] {
                verdict(&builtin("guarded"), preset, CliMode::Unknown, &text);
            }
        }
    }
}
