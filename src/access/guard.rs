//! The guardrails' check on a write: which command policy a caller is
//! under on a port, and the refusal (`denied`) of what it may not send.
//!
//! A caller's policy is its token's `policy` (callers without a token:
//! `[server] policy`), else the port's default (the port's `policy`, else
//! its preset's); none: nothing is judged. Every door that writes a
//! caller's text asks [`may_send`] before anything goes out, saying what
//! it would send ([`Sending`]); MCP asks in `mcp/authorize.rs`, before
//! the tool runs. The judging itself is [`super::policy::judge`].
//!
//! Under a policy only what can be judged is sent: whole lines. Keys,
//! bytes, BREAKs, line signals, transfers and partial lines are refused,
//! because the gateway cannot tell what the device will make of them. A
//! line that needs approval is not refused: [`may_send`] says so
//! ([`NeedsApproval`]), and the door holds it for a person's decision
//! (`port/approvals.rs`), or refuses it when it cannot wait. A connection switched to another
//! preset is judged under both presets' guardrails, so that switching to
//! `generic` escapes nothing.

use super::caller::Caller;
use super::policy::{CliMode, Finding, Under, Verdict, judge};
use crate::config::{Config, DeviceMode, Policy, PortConfig};
use crate::error::{ErrorCode, GateError, shown};

/// What a door is about to send for a caller.
#[derive(Debug, Clone, Copy)]
pub enum Sending<'a> {
    /// Text of whole lines (each ends where the text or a line end does),
    /// the first arriving in `mode`.
    Lines {
        /// The text.
        text: &'a str,
        /// The device's mode when it arrives.
        mode: CliMode,
        /// It answers a password prompt: its first line is not run by the
        /// device, so it is not judged, and the lines after it are judged
        /// but never repeated in a message (which the daemon's log also
        /// holds).
        secret: bool,
    },
    /// A configuration change: every line, in configuration mode, judged
    /// before any is sent.
    Config {
        /// The lines.
        lines: &'a [String],
    },
    /// Cutting the power of the port's device (`power` off or cycle,
    /// `what` as a person is shown it): one of every family's dangerous
    /// acts, so the policy's `dangerous` says what happens to it.
    PowerCut {
        /// The act, e.g. `power cycle sw1 (pdu1:4), off 5s`.
        what: &'a str,
    },
    /// Something a policy cannot judge: `what` says what it is (e.g.
    /// `send_keys' keys`), to refuse it with.
    Unjudged {
        /// What it is, for the refusal.
        what: &'a str,
    },
}

/// What a door would send that its policy sends only once a person
/// approves: the exact text, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedsApproval {
    /// The exact text (a change's lines, one a line).
    pub text: String,
    /// The mode its first line arrives in.
    pub mode: CliMode,
    /// Why: the line, the rule, where it comes from and the policy.
    pub reason: String,
    /// How long a person has, when the policy says
    /// (`approval_timeout`); else the server's.
    pub timeout: Option<std::time::Duration>,
    /// The policy lets the requester's own token approve it at the
    /// console (`self_approve`).
    pub self_approve: bool,
    /// The user of the agent's own MCP client may decide it too
    /// (`approvers` names `"client_user"`).
    pub client_user: bool,
}

/// Where a write goes: the port's config and the preset the connection
/// uses (another than the port's when `connect` switched it).
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The port's resolved config.
    pub port: &'a PortConfig,
    /// The connection's preset.
    pub preset: &'a str,
}

/// The name of the policy `caller` is under on `port`, if any.
pub fn policy_name<'a>(caller: &'a Caller, port: &'a PortConfig) -> Option<&'a str> {
    caller
        .policy
        .as_deref()
        .or(port.guardrails.policy.as_deref())
}

/// The mode a policy judges a line in, from the mode of the prompt the
/// device showed before it, and whether that prompt asked for a password
/// (whose answer the device reads but does not run).
pub fn judged_mode(mode: Option<DeviceMode>) -> (CliMode, bool) {
    match mode {
        Some(DeviceMode::Exec | DeviceMode::Privileged) => (CliMode::Exec, false),
        Some(DeviceMode::Config) => (CliMode::Config, false),
        Some(DeviceMode::Password) => (CliMode::Unknown, true),
        _ => (CliMode::Unknown, false),
    }
}

/// The name of the policy what `caller` types at `port`'s console is
/// judged by, if any: [`policy_name`] for a caller that may be an agent
/// (a token, a loopback caller without auth), so that no door skips the
/// rules its MCP calls keep; only their own for people of `[[people]]`
/// and the local operator, whom no port's default covers.
fn console_policy_name<'a>(caller: &'a Caller, port: &'a PortConfig) -> Option<&'a str> {
    if caller.port_default_at_console {
        policy_name(caller, port)
    } else {
        caller.policy.as_deref()
    }
}

/// The door a write comes through, for what a refusal advises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Door {
    /// An MCP tool call: a person at a console may do it instead.
    Mcp,
    /// Typing at a console, judged line by line.
    Console,
}

/// Checks that `caller` may send `sending` to `target` under its policy
/// (nothing to check without one): `Ok(None)` it may, `Ok(Some)` only
/// once a person approves what it says. The error is `denied` and names
/// the line, the rule and the policy, and what the caller may do instead.
pub fn may_send(
    caller: &Caller,
    config: &Config,
    target: Target<'_>,
    sending: Sending<'_>,
) -> Result<Option<NeedsApproval>, GateError> {
    let own = policy_name(caller, target.port);
    judged_with_forwarded(own, Door::Mcp, caller, config, target, sending)
}

/// Judges `sending` under the policy a serving gateway sent for `caller`
/// first (its refusal or hold is the one named when both judge alike),
/// then under `own`, the policy named here; the stricter verdict.
fn judged_with_forwarded(
    own: Option<&str>,
    door: Door,
    caller: &Caller,
    config: &Config,
    target: Target<'_>,
    sending: Sending<'_>,
) -> Result<Option<NeedsApproval>, GateError> {
    let forwarded = match &caller.forwarded_policy {
        Some(policy) => judged_under(policy, door, caller, config, target, sending)?,
        None => None,
    };
    let own = match own {
        Some(name) => judged(name, door, caller, config, target, sending)?,
        None => None,
    };
    Ok(forwarded.or(own))
}

/// Whether anything `caller` sends to `port` is judged: it is under a
/// policy of its own, a forwarded one or the port's default.
pub fn under_policy(caller: &Caller, port: &PortConfig) -> bool {
    caller.forwarded_policy.is_some() || policy_name(caller, port).is_some()
}

/// [`may_send`] for what `caller` types at a console: under a policy a
/// serving gateway sent for its person, and under
/// [`console_policy_name`].
pub fn may_type_at_console(
    caller: &Caller,
    config: &Config,
    target: Target<'_>,
    sending: Sending<'_>,
) -> Result<Option<NeedsApproval>, GateError> {
    let own = console_policy_name(caller, target.port);
    judged_with_forwarded(own, Door::Console, caller, config, target, sending)
}

/// Whether [`may_type_at_console`] judges anything `caller` types at
/// `port`: a policy that judges something applies (one the config in
/// force no longer has counts: it refuses).
pub fn typing_judged(caller: &Caller, config: &Config, port: &PortConfig) -> bool {
    caller
        .forwarded_policy
        .as_ref()
        .is_some_and(|p| !p.judges_nothing())
        || console_policy_name(caller, port).is_some_and(|name| {
            config
                .policies
                .get(name)
                .is_none_or(|p| !p.judges_nothing())
        })
}

/// Judges `sending` under the policy `name`, refusing as `door` advises.
fn judged(
    name: &str,
    door: Door,
    caller: &Caller,
    config: &Config,
    target: Target<'_>,
    sending: Sending<'_>,
) -> Result<Option<NeedsApproval>, GateError> {
    let Some(policy) = config.policies.get(name) else {
        // A policy the config in force no longer has: refuse everything
        // until the caller is resolved against the new config.
        return Err(denied(format!(
            "{} is under policy {}, which the configuration in force does not define; nothing was sent to {}: ask the operator",
            caller.who(),
            shown(name),
            target.port.name
        )));
    };
    judged_under(policy, door, caller, config, target, sending)
}

/// Judges `sending` under `policy`, refusing as `door` advises.
fn judged_under(
    policy: &Policy,
    door: Door,
    caller: &Caller,
    config: &Config,
    target: Target<'_>,
    sending: Sending<'_>,
) -> Result<Option<NeedsApproval>, GateError> {
    let port = &target.port.name;
    if policy.judges_nothing() {
        return Ok(None);
    }
    let mut guardrails = vec![(target.port.preset.as_str(), &target.port.guardrails)];
    if target.preset != target.port.preset
        && let Some(p) = config.presets.get(target.preset)
    {
        guardrails.push((p.name.as_str(), &p.guardrails));
    }
    let verdict = |mode: CliMode, text: &str| {
        guardrails
            .iter()
            .map(|(preset, g)| {
                judge(
                    &Under {
                        policy,
                        preset,
                        guardrails: g,
                    },
                    mode,
                    text,
                )
            })
            .fold(Verdict::Allow, Verdict::worse)
    };
    let needs = |text: String, mode: CliMode, reason: String| NeedsApproval {
        text,
        mode,
        reason,
        timeout: policy.approval_timeout,
        self_approve: policy.self_approve,
        client_user: policy.client_user_approves,
    };
    match sending {
        Sending::Lines { text, mode, secret } => {
            if !secret {
                let reason = refusal(policy, port, door, None, verdict(mode, text))?;
                return Ok(reason.map(|r| needs(text.to_owned(), mode, r)));
            }
            // The first line answers the prompt: the device does not run
            // it. What follows it is judged, and not shown.
            let rest = text.find(['\r', '\n']).map_or("", |i| &text[i..]);
            let at = Some("a line after the answer to a password prompt");
            match refusal(policy, port, door, at, verdict(CliMode::Unknown, rest))? {
                None => Ok(None),
                // A person would be shown the password to decide on it.
                Some(reason) => Err(denied(format!(
                    "{reason}; it is sent with the answer to a password prompt, which a person would have to be shown to approve it, so nothing was sent to {port}: send it on its own"
                ))),
            }
        }
        Sending::Config { lines } => {
            let mut first = None;
            for (i, line) in lines.iter().enumerate() {
                let at = format!("line {} of {}", i + 1, lines.len());
                let reason = refusal(
                    policy,
                    port,
                    door,
                    Some(&at),
                    verdict(CliMode::Config, line),
                )?;
                first = first.or(reason);
            }
            Ok(first.map(|r| needs(lines.join("\n"), CliMode::Config, r)))
        }
        Sending::PowerCut { what } => match policy.dangerous {
            crate::config::policies::DangerousUse::Ignore => Ok(None),
            crate::config::policies::DangerousUse::Approve => Ok(Some(needs(
                what.to_owned(),
                CliMode::Unknown,
                format!(
                    "cutting a device's power is dangerous, which policy {} sends only once a person approves",
                    shown(&policy.name)
                ),
            ))),
            crate::config::policies::DangerousUse::Deny => Err(denied(format!(
                "cutting a device's power is dangerous, which policy {} never does for {} on {port}; nothing was switched: ask a person at the console ({})",
                shown(&policy.name),
                caller.who(),
                console_hint(port)
            ))),
        },
        Sending::Unjudged { what } => Err(denied(format!(
            "{what} cannot be judged by policy {}, which {} is under on {port}; {}. Nothing was sent; {}",
            shown(&policy.name),
            caller.who(),
            match door {
                Door::Mcp =>
                    "under a policy only whole lines are sent (send_command, send_config, send_text ending in a line end)",
                Door::Console =>
                    "under a policy a console takes typed text, backspace, Ctrl-U and Ctrl-C, and judges each line at Enter",
            },
            elsewhere(door, port)
        ))),
    }
}

/// How a person reaches `port`'s console, for messages: the local
/// socket, or a door whose token or person no policy judges.
fn console_hint(port: &str) -> String {
    format!(
        "serialgate console {port} on the console host, or SSH or the web view as someone no policy judges"
    )
}

/// Who may do instead what a caller coming through `door` may not.
fn elsewhere(door: Door, port: &str) -> String {
    match door {
        Door::Mcp => format!(
            "for anything else ask a person at the console ({})",
            console_hint(port)
        ),
        Door::Console => format!(
            "ask a person whose access has no policy (the operator at serialgate console {port} on the console host)"
        ),
    }
}

/// A `denied` error.
fn denied(message: String) -> GateError {
    GateError::new(ErrorCode::Denied, message)
}

/// The refusal a verdict calls for, if any, or why it needs approval;
/// `at` names the line of a change (`line 2 of 5`), or stands for a
/// secret line, which is not shown.
fn refusal(
    policy: &Policy,
    port: &str,
    door: Door,
    at: Option<&str>,
    verdict: Verdict,
) -> Result<Option<String>, GateError> {
    let secret = at.is_some_and(|a| !a.starts_with("line "));
    let which = |line: &str| match at {
        Some(at) if secret => at.to_owned(),
        Some(at) => format!("{at}, {}", shown(line)),
        None => shown(line),
    };
    let matched = |f: &Finding| {
        if f.missing {
            format!("{} is not on {} ({})", which(&f.line), f.from, f.rule)
        } else {
            format!(
                "{} matches rule {} ({})",
                which(&f.line),
                shown(&f.rule),
                f.from
            )
        }
    };
    let none_sent = if at.is_some() && !secret {
        "none of the change's lines was sent"
    } else {
        "nothing was sent"
    };
    match verdict {
        Verdict::Allow => Ok(None),
        Verdict::Deny(f) if door == Door::Console => Err(denied(format!(
            "{}: policy {} never runs it, and it was not run on {port} (the line is cleared); {}",
            matched(&f),
            shown(&f.policy),
            elsewhere(door, port)
        ))),
        Verdict::Deny(f) => Err(denied(format!(
            "{}: policy {} never sends it, and {none_sent} to {port}. A person at the keyboard may run it at the console ({}), where the policy does not apply",
            matched(&f),
            shown(&f.policy),
            console_hint(port)
        ))),
        Verdict::Approve(f) => Ok(Some(format!(
            "{}: it needs a person's approval under policy {}",
            matched(&f),
            shown(&f.policy)
        ))),
        Verdict::Unjudgeable { reason, line } if door == Door::Console => Err(denied(format!(
            "{} cannot be judged by policy {}: {reason}; it was not run on {port} (the line is cleared). Type the command as plain words, or {}",
            which(&line),
            shown(&policy.name),
            elsewhere(door, port)
        ))),
        Verdict::Unjudgeable { reason, line } => Err(denied(format!(
            "{} cannot be judged by policy {}: {reason}; {none_sent} to {port}. Send the command as plain words (send_command), or ask a person at the console ({})",
            which(&line),
            shown(&policy.name),
            console_hint(port)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{TokenAccess, TokenConfig, TokenSecret};

    fn config() -> Config {
        Config::parse(
            "[ports.sw1]\ndevice = \"/dev/ttyUSB0\"\npreset = \"cisco-ios\"\npolicy = \"guarded\"\n\
             [ports.sw2]\ndevice = \"/dev/ttyUSB1\"\npreset = \"generic\"\n",
            "t.toml",
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn token(policy: Option<&str>) -> Caller {
        Caller::from_token(&TokenConfig {
            name: "agent".into(),
            secret_file: "/s".into(),
            secret: TokenSecret::new(b"x"),
            ports: vec!["*".into()],
            access: TokenAccess::Write,
            use_credentials: false,
            power: false,
            policy: policy.map(str::to_owned),
            approve: false,
        })
    }

    fn send(
        caller: &Caller,
        config: &Config,
        port: &str,
        preset: &str,
        text: &str,
    ) -> Result<Option<NeedsApproval>, GateError> {
        let port = &config.ports[port];
        let target = Target { port, preset };
        may_send(
            caller,
            config,
            target,
            Sending::Lines {
                text,
                mode: CliMode::Exec,
                secret: false,
            },
        )
    }

    #[test]
    fn the_token_s_policy_wins_over_the_port_s_default() {
        let c = config();
        // The port's default: guarded, which holds reload for approval.
        let held = send(&token(None), &c, "sw1", "cisco-ios", "reload")
            .unwrap()
            .unwrap();
        assert_eq!(held.text, "reload");
        assert!(
            held.reason.contains("policy \"guarded\"") && held.reason.contains("approval"),
            "{held:?}"
        );
        // The token's own: none judges nothing, locked denies.
        send(&token(Some("none")), &c, "sw1", "cisco-ios", "reload").unwrap();
        let e = send(&token(Some("locked")), &c, "sw1", "cisco-ios", "reload").unwrap_err();
        assert!(e.message.contains("never sends it"), "{e}");
        // The operator without [server] policy on a port without one.
        send(&Caller::operator(), &c, "sw2", "generic", "reload").unwrap();
        assert_eq!(
            policy_name(&Caller::operator(), &c.ports["sw1"]),
            Some("guarded")
        );
    }

    #[test]
    fn a_forwarded_policy_and_the_port_s_own_the_stricter_wins() {
        let c = config();
        let fleet = |policy: &str| {
            Caller::via_fleet("agent", "hub:1-a", TokenAccess::Write, false)
                .with_forwarded_policy(Some(c.policies[policy].clone()))
        };
        // `none` from the serving gateway escapes no port's own policy.
        let held = send(&fleet("none"), &c, "sw1", "cisco-ios", "reload")
            .unwrap()
            .unwrap();
        assert!(held.reason.contains("policy \"guarded\""), "{held:?}");
        // `locked` denies over the port's `guarded`, and where the port
        // has none.
        for port in ["sw1", "sw2"] {
            let e = send(&fleet("locked"), &c, port, "cisco-ios", "reload").unwrap_err();
            assert!(
                e.message.contains("policy \"locked\" never sends it"),
                "{port}: {e}"
            );
        }
        // A forwarded policy alone puts the caller under a policy.
        let sw2 = &c.ports["sw2"];
        assert!(under_policy(&fleet("guarded"), sw2));
        assert!(!under_policy(
            &Caller::via_fleet("agent", "hub:1-a", TokenAccess::Write, false),
            sw2
        ));
        let e = may_send(
            &fleet("guarded"),
            &c,
            Target {
                port: sw2,
                preset: "generic",
            },
            Sending::Unjudged {
                what: "send_keys' keys",
            },
        )
        .unwrap_err();
        assert!(e.message.contains("policy \"guarded\""), "{e}");
    }

    #[test]
    fn a_person_s_forwarded_policy_judges_their_typing_as_their_calls() {
        let c = config();
        let typed = |caller: &Caller, port: &str| {
            may_type_at_console(
                caller,
                &c,
                Target {
                    port: &c.ports[port],
                    preset: "cisco-ios",
                },
                Sending::Lines {
                    text: "reload",
                    mode: CliMode::Exec,
                    secret: false,
                },
            )
        };
        let person = |policy: &str| {
            Caller::via_fleet("alice", "hub:1-a", TokenAccess::Write, false)
                .with_forwarded_policy(Some(c.policies[policy].clone()))
        };
        // sw2 has no policy of its own: the forwarded one alone judges.
        let e = typed(&person("locked"), "sw2").unwrap_err();
        assert!(e.message.contains("policy \"locked\""), "{e}");
        assert!(typed(&person("guarded"), "sw2").unwrap().is_some());
        // Without one, nothing judges there.
        let bare = Caller::via_fleet("alice", "hub:1-a", TokenAccess::Write, false);
        assert!(typed(&bare, "sw2").unwrap().is_none());
        // sw1's own guarded holds a line a forwarded `none` would send.
        assert!(typed(&person("none"), "sw1").unwrap().is_some());
    }

    #[test]
    fn switching_a_connection_to_another_preset_escapes_nothing() {
        let c = config();
        // sw1 is cisco-ios; a connection switched to generic (no dangerous
        // commands) or to linux (whole words) is still judged as IOS.
        for preset in ["generic", "linux"] {
            let held = send(&token(None), &c, "sw1", preset, "rel")
                .unwrap()
                .unwrap();
            assert!(held.reason.contains("preset \"cisco-ios\""), "{held:?}");
        }
        // And the other way: a generic port switched to linux takes
        // linux's dangerous commands too.
        let e = send(&token(Some("locked")), &c, "sw2", "linux", "sudo reboot").unwrap_err();
        assert!(e.message.contains("preset \"linux\""), "{e}");
    }

    #[test]
    fn refusals_name_the_line_and_hide_secrets() {
        let c = config();
        let port = &c.ports["sw1"];
        let target = Target {
            port,
            preset: "cisco-ios",
        };
        let lines = vec!["interface Gi0/1".to_owned(), "shutdown".to_owned()];
        let e = may_send(
            &token(Some("locked")),
            &c,
            target,
            Sending::Config { lines: &lines },
        )
        .unwrap_err();
        assert!(
            e.message.contains("line 2 of 2, \"shutdown\"")
                && e.message.contains("none of the change's lines was sent"),
            "{e}"
        );
        // The answer to a password prompt is not judged, and what follows
        // it is judged without being shown.
        let secret = |text| Sending::Lines {
            text,
            mode: CliMode::Unknown,
            secret: true,
        };
        may_send(&token(Some("locked")), &c, target, secret("reload")).unwrap();
        let e = may_send(
            &token(Some("locked")),
            &c,
            target,
            secret("hunter2\nreload"),
        )
        .unwrap_err();
        assert!(!e.message.contains("hunter2"), "{e}");
        assert!(
            e.message
                .contains("a line after the answer to a password prompt"),
            "{e}"
        );
        let e = may_send(
            &token(None),
            &c,
            target,
            Sending::Unjudged {
                what: "send_keys' keys",
            },
        )
        .unwrap_err();
        assert!(
            e.message
                .starts_with("send_keys' keys cannot be judged by policy \"guarded\""),
            "{e}"
        );
        // A line needing approval after a password answer: refused, since
        // a person would be shown the password to decide on it.
        let e = may_send(&token(None), &c, target, secret("hunter2\nreload")).unwrap_err();
        assert!(
            e.message.contains("send it on its own") && !e.message.contains("hunter2"),
            "{e}"
        );
        // A policy a reload removed: everything refused until the caller
        // is resolved again.
        let e = send(&token(Some("gone")), &c, "sw1", "cisco-ios", "show clock").unwrap_err();
        assert!(e.message.contains("does not define"), "{e}");
    }
}
