//! What a tool call would send to the device, read from its arguments for
//! the guardrails ([`crate::access::guard`]) before the tool runs: the
//! lines of `send_command`, `send_text`, `send_config`, `expect` and the
//! configuration tools' own commands, or what cannot be judged (keys,
//! bytes, BREAKs, line signals, transfers, partial lines, auto-replies a
//! caller chose). Read as the tools read them, so that no spelling slips
//! past; a tool not listed here that writes is refused under a policy.

use rmcp::model::CallToolRequestParams;
use serde_json::Value;

use super::session::Connection;
use crate::access::Caller;
use crate::access::guard::{self, NeedsApproval, Sending, Target};
use crate::access::policy::CliMode;
use crate::access::rules::{self, Replies};
use crate::config::TokenAccess;
use crate::error::GateError;
use crate::gateway::Gateway;
use crate::settings::LineEnding;

/// The mode the connection's device is in, judged from the prompt its
/// log ends with, and whether that prompt asks for a password.
fn mode_of(conn: &Connection) -> (CliMode, bool) {
    let log = conn.gateway_port.port.log();
    guard::judged_mode(crate::last_prompt::mode_at_end(
        &conn.profile.prompt,
        &conn.profile.mode_prompts,
        log,
    ))
}

/// The line ending a `line_ending` argument asks for (`default` when it is
/// absent); one the tool would refuse counts as none, whose text is
/// judged as a partial line.
fn line_ending(value: Option<&Value>, default: LineEnding) -> LineEnding {
    match value {
        None | Some(Value::Null) => default,
        Some(Value::String(s)) => serde_json::from_value(Value::String(s.to_ascii_lowercase()))
            .unwrap_or(LineEnding::None),
        Some(_) => LineEnding::None,
    }
}

/// Whether `text` sent with `ending` is whole lines.
fn whole_lines(text: &str, ending: LineEnding) -> bool {
    ending != LineEnding::None || text.is_empty() || text.ends_with(['\r', '\n'])
}

/// Checks that `caller` may make `request` on `conn` under its command
/// policy: every line it would send is judged, and what cannot be judged
/// is refused. `replies` is what its `auto_reply` asks for. What it may
/// send only once a person approves comes back, in the order it would be
/// sent.
pub fn check(
    caller: &Caller,
    gateway: &Gateway,
    conn: &Connection,
    request: &CallToolRequestParams,
    replies: Replies,
) -> Result<Vec<NeedsApproval>, GateError> {
    if !guard::under_policy(caller, &conn.gateway_port.config) {
        return Ok(Vec::new());
    }
    let needed = std::cell::RefCell::new(Vec::new());
    judge_all(caller, gateway, conn, request, replies, &needed)?;
    Ok(needed.into_inner())
}

/// [`check`]'s judging: what needs approval goes to `needed`.
fn judge_all(
    caller: &Caller,
    gateway: &Gateway,
    conn: &Connection,
    request: &CallToolRequestParams,
    replies: Replies,
    needed: &std::cell::RefCell<Vec<NeedsApproval>>,
) -> Result<(), GateError> {
    let config = gateway.config();
    let target = Target {
        port: &conn.gateway_port.config,
        preset: &conn.profile.preset,
    };
    let send = |sending: Sending<'_>| {
        guard::may_send(caller, &config, target, sending).map(|n| needed.borrow_mut().extend(n))
    };
    let args = request.arguments.as_ref();
    let arg = |key: &str| args.and_then(|a| a.get(key));
    let text = |key: &str| arg(key).and_then(Value::as_str).unwrap_or("");
    let tool: &str = &request.name;
    if replies == Replies::Some && matches!(tool, "send_command" | "read_until_prompt" | "expect") {
        send(Sending::Unjudged {
            what: "auto_reply's answers (keys sent whenever the device asks)",
        })?;
    }
    let modes = &conn.profile.modes;
    let own = |command: &Option<String>, mode: CliMode| match command {
        Some(text) => send(Sending::Lines {
            text,
            mode,
            secret: false,
        }),
        // The tool says the preset has none.
        None => Ok(()),
    };
    match tool {
        "send_command" => {
            let (mode, secret) = mode_of(conn);
            send(Sending::Lines {
                text: text("command"),
                mode,
                secret,
            })
        }
        "send_text" => {
            let t = text("text");
            if whole_lines(t, line_ending(arg("line_ending"), conn.profile.line_ending)) {
                let (mode, secret) = mode_of(conn);
                send(Sending::Lines {
                    text: t,
                    mode,
                    secret,
                })
            } else {
                send(Sending::Unjudged {
                    what: "send_text's text without a line end (a partial line, which a later write completes)",
                })
            }
        }
        "send_config" => {
            let lines: Vec<String> = arg("lines")
                .and_then(Value::as_array)
                .map(|l| {
                    l.iter()
                        .map(|v| v.as_str().unwrap_or("").to_owned())
                        .collect()
                })
                .unwrap_or_default();
            send(Sending::Config { lines: &lines })
        }
        "expect" => {
            let steps = arg("steps").and_then(Value::as_array);
            for step in steps.into_iter().flatten() {
                if step.get("send_hex").is_some_and(|v| !v.is_null()) {
                    send(Sending::Unjudged {
                        what: "expect's send_hex bytes",
                    })?;
                }
                let Some(t) = step.get("send").and_then(Value::as_str) else {
                    continue;
                };
                if !whole_lines(
                    t,
                    line_ending(step.get("line_ending"), conn.profile.line_ending),
                ) {
                    send(Sending::Unjudged {
                        what: "an expect step's text without a line end (a partial line)",
                    })?;
                }
                // A script moves between modes as it goes; each step's
                // text is judged whole, as no prompt is known before it.
                send(Sending::Lines {
                    text: t,
                    mode: CliMode::Unknown,
                    secret: false,
                })?;
            }
            Ok(())
        }
        "confirm_commit" => own(&modes.commit, CliMode::Config),
        "rollback" => {
            own(&modes.rollback, CliMode::Config)?;
            own(&modes.commit, CliMode::Config)
        }
        "save_config" => own(&modes.save, CliMode::Unknown),
        // Moves between modes with the preset's own commands; sets the
        // line's speed; only reads.
        "set_mode" | "set_line_settings" | "read_until_prompt" => Ok(()),
        "send_hex" => send(Sending::Unjudged {
            what: "send_hex's bytes",
        }),
        "send_keys" => send(Sending::Unjudged {
            what: "send_keys' keys",
        }),
        "send_break" => send(Sending::Unjudged {
            what: "a BREAK (it can drop a device into its boot loader)",
        }),
        "set_lines" | "pulse_line" => send(Sending::Unjudged {
            what: "a change of the line signals (DTR, RTS can reset a device)",
        }),
        "detect_baud" => send(Sending::Unjudged {
            what: "detect_baud's probing",
        }),
        "power" => match super::power::cut_described(conn, args) {
            Some(what) => send(Sending::PowerCut { what: &what }),
            None => Ok(()),
        },
        "send_file" | "receive_file" => send(Sending::Unjudged {
            what: "a file transfer",
        }),
        _ if rules::classify(tool).0 <= TokenAccess::Read => Ok(()),
        _ => send(Sending::Unjudged {
            what: "a tool the guardrails do not know",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_lines_are_told_from_whole_ones() {
        assert!(whole_lines("reload", LineEnding::Cr));
        assert!(whole_lines("reload\r", LineEnding::None));
        assert!(whole_lines("", LineEnding::None));
        assert!(!whole_lines("reload", LineEnding::None));
        let none = serde_json::json!("NONE");
        assert_eq!(line_ending(Some(&none), LineEnding::Cr), LineEnding::None);
        let bad = serde_json::json!("sideways");
        assert_eq!(line_ending(Some(&bad), LineEnding::Cr), LineEnding::None);
        assert_eq!(line_ending(None, LineEnding::Crlf), LineEnding::Crlf);
        let lf = serde_json::json!("lf");
        assert_eq!(line_ending(Some(&lf), LineEnding::Cr), LineEnding::Lf);
    }
}
