//! Changing configuration the way engineers do: `send_config` enters
//! configuration mode, sends one line at a time, judges each with the
//! preset's error patterns (and the caller's), stops at the first failure
//! unless told not to, commits where the device has a candidate
//! configuration (check, commit, or commit confirmed), and always leaves
//! configuration mode. `confirm_commit`, `rollback` and `save_config` are
//! the steps after. Every move between modes goes through the
//! [`ModeDriver`], so a device at its login prompt is logged in with the
//! port's stored credentials first.

use std::collections::BTreeMap;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::args::{self, MAX_SEND_BYTES, parse, timeout_arg};
use super::describe::timeout_limits;
use super::encoding::cut;
use super::mode::{DEFAULT_STEP_TIMEOUT_S, ModeDriver, Reply};
use super::server::GateServer;
use super::tool_result::ToolError;
use crate::config::{DeviceMode, ModeRules};
use crate::error::{ErrorCode, GateError, shown};

/// Most lines in one `send_config`.
pub const MAX_CONFIG_LINES: usize = 500;
/// Most extra error patterns a caller adds.
pub const MAX_EXTRA_PATTERNS: usize = 16;
/// Longest extra error pattern.
pub const MAX_PATTERN_BYTES: usize = 256;
/// Most bytes of device output kept per verdict.
pub const MAX_VERDICT_OUTPUT: usize = 4096;
/// Minutes of `commit confirmed` when the caller names none.
pub const DEFAULT_CONFIRM_MINUTES: u64 = 5;
/// Most minutes of `commit confirmed`.
pub const MAX_CONFIRM_MINUTES: u64 = 60;

/// What `send_config` does after the lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommitMode {
    /// Validate the candidate (`commit check`), then discard it.
    Check,
    /// Commit (the default on devices with a candidate configuration).
    Commit,
    /// Commit with an automatic rollback unless `confirm_commit` follows
    /// within `confirm_minutes` (Junos `commit confirmed`; IOS XE's revert
    /// timer on devices without a candidate).
    Confirmed,
}

/// Arguments of `send_config`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendConfigArgs {
    /// Configuration lines, in order.
    #[schemars(description = format!("Configuration lines, in order (1 to {MAX_CONFIG_LINES})."))]
    pub lines: Vec<String>,
    /// Stop at the first rejected line (default true).
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub stop_on_error: Option<bool>,
    /// Regexes marking more output lines as errors, beside the preset's.
    #[schemars(description = format!(
        "Regexes marking more output lines as errors, beside the preset's (at most {MAX_EXTRA_PATTERNS})."
    ))]
    pub error_patterns: Option<Vec<String>>,
    /// check, commit or confirmed; devices with a candidate commit by default.
    #[serde(default, deserialize_with = "args::opt_enum")]
    pub commit: Option<CommitMode>,
    /// Minutes before an unconfirmed change rolls back.
    #[schemars(description = format!(
        "Minutes before an unconfirmed change rolls back (commit: confirmed; default {DEFAULT_CONFIRM_MINUTES}, at most {MAX_CONFIRM_MINUTES})."
    ))]
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub confirm_minutes: Option<u64>,
    /// Seconds to wait for the prompt after each line.
    #[schemars(description = format!("Seconds per line ({}).", timeout_limits()))]
    #[serde(default, deserialize_with = "args::opt_f64")]
    pub timeout: Option<f64>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// The device's verdict on one line.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LineVerdict {
    /// The line sent.
    pub line: String,
    /// No error line in its output.
    pub ok: bool,
    /// What the device printed for it (clean, echo removed).
    pub output: String,
    /// The error: the matching output line, or why no answer came.
    pub error: Option<String>,
}

/// The commit step's outcome.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CommitOutcome {
    /// The command sent (`commit check`, `commit confirmed 5`, `rollback 0`).
    pub command: String,
    /// It succeeded.
    pub ok: bool,
    /// What the device printed.
    pub output: String,
    /// When an unconfirmed change rolls back (RFC 3339), for confirmed.
    pub deadline: Option<String>,
}

/// Result of `send_config`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SendConfigResult {
    /// One verdict per line sent, in order.
    pub verdicts: Vec<LineVerdict>,
    /// Lines now in force (0 when a candidate was discarded).
    pub applied: u64,
    /// The first rejected line.
    pub failed_line: Option<String>,
    /// Lines not in force: rejected, not sent, or discarded.
    pub not_applied: Vec<String>,
    /// The commit step, on devices with one or with commit: confirmed.
    pub commit: Option<CommitOutcome>,
    /// The mode the device was left in.
    pub mode: Option<DeviceMode>,
    /// The prompt it was left at.
    pub prompt: String,
    /// Configuration mode was left.
    pub left_config: bool,
    /// Why configuration mode could not be left, if so.
    pub note: Option<String>,
    /// Everything sent to move between modes, secrets named only.
    pub steps: Vec<String>,
}

/// Arguments of `confirm_commit`, `save_config`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectionArgs {
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Arguments of `rollback`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RollbackArgs {
    /// 0 (default) discards the uncommitted candidate; N loads the
    /// configuration of N commits ago and commits it.
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub to: Option<u64>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `confirm_commit`, `rollback` and `save_config`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConfigActionResult {
    /// The device accepted it.
    pub ok: bool,
    /// The commands sent, in order.
    pub commands: Vec<String>,
    /// What the device printed for them.
    pub output: String,
    /// Output lines that are errors.
    pub error_lines: Vec<String>,
    /// The mode the device was left in.
    pub mode: Option<DeviceMode>,
    /// Everything sent, mode moves included.
    pub steps: Vec<String>,
}

/// The caller's extra error patterns, checked and compiled.
fn extra_patterns(patterns: &Option<Vec<String>>) -> Result<Vec<regex::Regex>, GateError> {
    let patterns = patterns.as_deref().unwrap_or_default();
    if patterns.len() > MAX_EXTRA_PATTERNS {
        return Err(GateError::invalid(format!(
            "error_patterns has {} patterns; at most {MAX_EXTRA_PATTERNS}",
            patterns.len()
        )));
    }
    patterns
        .iter()
        .map(|p| {
            if p.len() > MAX_PATTERN_BYTES || p.is_empty() {
                return Err(GateError::invalid(format!(
                    "an error pattern is {} bytes; give 1 to {MAX_PATTERN_BYTES}",
                    p.len()
                )));
            }
            regex::RegexBuilder::new(p)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| {
                    GateError::new(
                        ErrorCode::BadRegex,
                        format!("error pattern {}: {e}", shown(p)),
                    )
                })
        })
        .collect()
}

/// The lines, checked before anything is sent.
fn check_lines(lines: &[String]) -> Result<(), GateError> {
    if lines.is_empty() || lines.len() > MAX_CONFIG_LINES {
        return Err(GateError::invalid(format!(
            "lines has {} lines; give 1 to {MAX_CONFIG_LINES}",
            lines.len()
        )));
    }
    for (i, line) in lines.iter().enumerate() {
        if line.contains(['\r', '\n']) {
            return Err(GateError::invalid(format!(
                "line {} holds a line break; give one configuration line per entry; nothing was sent",
                i + 1
            )));
        }
        if line.len() > MAX_SEND_BYTES {
            return Err(GateError::invalid(format!(
                "line {} is {} bytes; at most {MAX_SEND_BYTES}; nothing was sent",
                i + 1,
                line.len()
            )));
        }
    }
    Ok(())
}

/// `template` with `{key}` replaced by `value`.
fn fill(template: &str, key: &str, value: u64) -> String {
    template.replace(&format!("{{{key}}}"), &value.to_string())
}

/// The lines of `reply` that match `patterns` (the preset's were matched
/// by the driver already).
fn judged(reply: &Reply, extra: &[regex::Regex]) -> Vec<String> {
    let mut errors = reply.errors.clone();
    errors.extend(crate::clean::error_lines(&reply.output, extra));
    errors
}

/// The mode a device is left in after configuration: privileged, or exec
/// where there is no enable level.
fn resting_mode(rules: &ModeRules) -> DeviceMode {
    if rules.enable.is_some() {
        DeviceMode::Privileged
    } else {
        DeviceMode::Exec
    }
}

#[tool_router(router = configure_router, vis = "pub(super)")]
impl GateServer {
    /// Apply configuration lines one at a time: enters config mode (logging
    /// in first if needed), judges each line by the device's answer, stops
    /// at the first error (stop_on_error), commits where the device has a
    /// candidate, and always leaves config mode. Result: a verdict per line.
    #[tool(input_schema = rmcp::handler::server::common::schema_for_input::<SendConfigArgs>().unwrap_or_default())]
    pub async fn send_config(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<SendConfigResult>, ToolError> {
        let a: SendConfigArgs = parse("send_config", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        check_lines(&a.lines)?;
        let extra = extra_patterns(&a.error_patterns)?;
        let timeout = timeout_arg(a.timeout, DEFAULT_STEP_TIMEOUT_S)?;
        let minutes = a.confirm_minutes.unwrap_or(DEFAULT_CONFIRM_MINUTES);
        if !(1..=MAX_CONFIRM_MINUTES).contains(&minutes) {
            return Err(GateError::invalid(format!(
                "confirm_minutes is {minutes}; give 1 to {MAX_CONFIRM_MINUTES}"
            ))
            .into());
        }
        let rules = conn.profile.modes.clone();
        let candidate = rules.commit.is_some();
        let commit = match (a.commit, candidate) {
            (None, true) => Some(CommitMode::Commit),
            (Some(CommitMode::Confirmed), false) if rules.revert_timer.is_none() => {
                return Err(GateError::invalid(format!(
                    "preset {} has neither a candidate configuration nor a revert timer, so commit: confirmed cannot be offered; \
                     omit commit (a scheduled `reload in N` is the classic fallback); nothing was sent",
                    conn.profile.preset
                ))
                .into());
            }
            (Some(mode @ (CommitMode::Check | CommitMode::Commit)), false) => {
                return Err(GateError::invalid(format!(
                    "preset {} applies each line at once (no candidate configuration), so commit: {} means nothing; \
                     omit commit, or use confirmed for a revert timer; nothing was sent",
                    conn.profile.preset,
                    if mode == CommitMode::Check { "check" } else { "commit" }
                ))
                .into());
            }
            (mode, _) => mode,
        };
        if candidate {
            let (missing, key) = match commit {
                Some(CommitMode::Check) => (rules.commit_check.is_none(), "commit_check"),
                Some(CommitMode::Confirmed) => {
                    (rules.commit_confirmed.is_none(), "commit_confirmed")
                }
                _ => (false, ""),
            };
            if missing {
                return Err(GateError::invalid(format!(
                    "preset {} has no {key} command, so this commit mode cannot be offered; \
                     omit commit to commit plainly (a user preset can set modes.{key}); nothing was sent",
                    conn.profile.preset
                ))
                .into());
            }
        }
        let stop_on_error = a.stop_on_error.unwrap_or(true);
        let mut driver = ModeDriver::new(self, &conn, &context, timeout)?;
        let actor = self.session.actor().describe();

        // In: a revert timer is armed by the command entering config mode.
        let revert = !candidate && commit == Some(CommitMode::Confirmed);
        let entered_from = conn.port().log().head();
        if revert {
            driver.reach(resting_mode(&rules)).await?;
            let enter = fill(
                rules.revert_timer.as_deref().unwrap_or_default(),
                "minutes",
                minutes,
            );
            let reply = driver.send(&enter, None).await?;
            if driver.judge(&reply.prompt) != Some(DeviceMode::Config) {
                return Err(GateError::invalid(format!(
                    "{enter:?} did not enter configuration mode (the device answered {} at {}); nothing else was sent",
                    shown(reply.output.trim()),
                    shown(&reply.prompt)
                ))
                .into());
            }
        } else {
            driver.reach(DeviceMode::Config).await?;
        }

        let mut verdicts = Vec::new();
        let mut stopped_by: Option<String> = None;
        for line in &a.lines {
            match driver.send(line, None).await {
                Ok(reply) => {
                    let errors = judged(&reply, &extra);
                    let ok = errors.is_empty();
                    let (output, _) = cut(reply.output.trim_end().to_owned(), MAX_VERDICT_OUTPUT);
                    verdicts.push(LineVerdict {
                        line: line.clone(),
                        ok,
                        output,
                        // The message, not the `^` marker line before it.
                        error: errors
                            .iter()
                            .find(|e| e.trim() != "^")
                            .or(errors.first())
                            .cloned(),
                    });
                    if !ok && stop_on_error {
                        break;
                    }
                }
                Err(e) => {
                    verdicts.push(LineVerdict {
                        line: line.clone(),
                        ok: false,
                        output: String::new(),
                        error: Some(e.to_string()),
                    });
                    stopped_by = Some(e.to_string());
                    break;
                }
            }
        }
        let failed_line = verdicts.iter().find(|v| !v.ok).map(|v| v.line.clone());
        let mut in_force: Vec<bool> = verdicts.iter().map(|v| v.ok).collect();

        // Commit, check or discard the candidate; arm the rollback watch.
        let mut outcome = None;
        if stopped_by.is_none() {
            let rolled_back = rules
                .rolled_back
                .as_deref()
                .and_then(|p| regex::bytes::Regex::new(p).ok());
            if candidate {
                let (command, discard_after) = match (failed_line.is_some(), commit) {
                    (true, _) => (rules.discard.clone().unwrap_or_default(), false),
                    (false, Some(CommitMode::Check)) => {
                        (rules.commit_check.clone().unwrap_or_default(), true)
                    }
                    (false, Some(CommitMode::Confirmed)) => (
                        fill(
                            rules.commit_confirmed.as_deref().unwrap_or_default(),
                            "minutes",
                            minutes,
                        ),
                        false,
                    ),
                    (false, _) => (rules.commit.clone().unwrap_or_default(), false),
                };
                if !command.is_empty() {
                    let from = conn.port().log().head();
                    let result = driver.send(&command, None).await;
                    let (ok, output) = match &result {
                        Ok(reply) => (
                            judged(reply, &extra).is_empty(),
                            reply.output.trim_end().to_owned(),
                        ),
                        Err(e) => (false, e.to_string()),
                    };
                    let mut deadline = None;
                    let discarding = failed_line.is_some();
                    if discarding || !ok || commit == Some(CommitMode::Check) {
                        in_force.iter_mut().for_each(|f| *f = false);
                    }
                    if ok
                        && !discarding
                        && commit == Some(CommitMode::Confirmed)
                        && let Some(pattern) = rolled_back.clone()
                    {
                        let armed = conn
                            .port()
                            .arm_confirm_watch(&actor, &command, minutes, pattern, from);
                        deadline = Some(armed.deadline);
                    }
                    let (output, _) = cut(output, MAX_VERDICT_OUTPUT);
                    outcome = Some(CommitOutcome {
                        command,
                        ok,
                        output,
                        deadline,
                    });
                    // A failed commit or a check leaves a candidate: drop it,
                    // so that leaving configuration mode asks nothing.
                    if (discard_after || (!ok && !discarding))
                        && let Some(discard) = rules.discard.clone()
                    {
                        let _ = driver.send(&discard, None).await;
                    }
                }
            } else if revert {
                let how = fill(
                    rules.revert_timer.as_deref().unwrap_or_default(),
                    "minutes",
                    minutes,
                );
                let deadline = rolled_back.map(|pattern| {
                    conn.port()
                        .arm_confirm_watch(&actor, &how, minutes, pattern, entered_from)
                        .deadline
                });
                outcome = Some(CommitOutcome {
                    command: how,
                    ok: true,
                    output: "the device reverts unless confirm_commit follows".to_owned(),
                    deadline,
                });
            }
        }

        // Out: always leave configuration mode, or say why not.
        let (mode, prompt, note) = match driver.reach(resting_mode(&rules)).await {
            Ok((mode, prompt)) => (Some(mode), prompt, None),
            Err(e) => (
                None,
                String::new(),
                Some(format!("could not leave configuration mode: {e}")),
            ),
        };
        let applied = in_force.iter().filter(|&&f| f).count() as u64;
        let not_applied = a
            .lines
            .iter()
            .enumerate()
            .filter(|(i, _)| !in_force.get(*i).copied().unwrap_or(false))
            .map(|(_, l)| l.clone())
            .collect();
        Ok(Json(SendConfigResult {
            verdicts,
            applied,
            failed_line,
            not_applied,
            commit: outcome,
            left_config: mode.is_some_and(|m| m != DeviceMode::Config),
            mode,
            prompt,
            note: note.or(stopped_by.map(|e| format!("stopped: {e}"))),
            steps: driver.steps,
        }))
    }

    /// Confirm a change made with commit: confirmed before its deadline
    /// (Junos commit; IOS XE configure confirm), so it stays.
    #[tool(input_schema = rmcp::handler::server::common::schema_for_input::<ConnectionArgs>().unwrap_or_default())]
    pub async fn confirm_commit(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ConfigActionResult>, ToolError> {
        let a: ConnectionArgs = parse("confirm_commit", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let rules = conn.profile.modes.clone();
        let timeout = timeout_arg(None, DEFAULT_STEP_TIMEOUT_S)?;
        let mut driver = ModeDriver::new(self, &conn, &context, timeout)?;
        let result = match (&rules.commit, &rules.revert_confirm) {
            (Some(commit), _) => {
                driver.reach(DeviceMode::Config).await?;
                let done = run(&mut driver, std::slice::from_ref(commit), None).await;
                finish(&mut driver, &rules, done).await
            }
            (None, Some(confirm)) => {
                driver.reach(resting_mode(&rules)).await?;
                let done = run(&mut driver, std::slice::from_ref(confirm), None).await;
                finish(&mut driver, &rules, done).await
            }
            (None, None) => {
                return Err(GateError::invalid(format!(
                    "preset {} has no commit confirmed nor revert timer: there is nothing to confirm",
                    conn.profile.preset
                ))
                .into());
            }
        };
        if result.ok {
            conn.port()
                .disarm_confirm_watch(&self.session.actor().describe());
        }
        Ok(Json(result))
    }

    /// Discard the uncommitted candidate (to: 0, default), or load the
    /// configuration of N commits ago and commit it. Devices with a
    /// candidate configuration only.
    #[tool(input_schema = rmcp::handler::server::common::schema_for_input::<RollbackArgs>().unwrap_or_default())]
    pub async fn rollback(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ConfigActionResult>, ToolError> {
        let a: RollbackArgs = parse("rollback", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let rules = conn.profile.modes.clone();
        let to = a.to.unwrap_or(0);
        if to > 49 {
            return Err(GateError::invalid(format!("to is {to}; give 0 to 49")).into());
        }
        let (Some(commit), Some(discard), Some(rollback)) =
            (&rules.commit, &rules.discard, &rules.rollback)
        else {
            return Err(GateError::invalid(format!(
                "preset {} has no candidate configuration to discard or roll back; \
                 a pending revert timer rolls back by itself at its deadline",
                conn.profile.preset
            ))
            .into());
        };
        let commands = if to == 0 {
            vec![discard.clone()]
        } else {
            vec![fill(rollback, "n", to), commit.clone()]
        };
        let timeout = timeout_arg(None, DEFAULT_STEP_TIMEOUT_S)?;
        let mut driver = ModeDriver::new(self, &conn, &context, timeout)?;
        driver.reach(DeviceMode::Config).await?;
        let done = run(&mut driver, &commands, None).await;
        Ok(Json(finish(&mut driver, &rules, done).await))
    }

    /// Save the running configuration with the vendor's command (write
    /// memory, save with its confirmation), judged by the device's answer.
    #[tool(input_schema = rmcp::handler::server::common::schema_for_input::<ConnectionArgs>().unwrap_or_default())]
    pub async fn save_config(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ConfigActionResult>, ToolError> {
        let a: ConnectionArgs = parse("save_config", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let rules = conn.profile.modes.clone();
        let Some(save) = rules.save.clone() else {
            let why = if rules.commit.is_some() {
                "it keeps every commit, so there is nothing to save"
            } else {
                "it has no save command"
            };
            return Err(GateError::invalid(format!(
                "preset {}: {why} (a user preset can set modes.save)",
                conn.profile.preset
            ))
            .into());
        };
        let replies: BTreeMap<String, String> = rules
            .save_replies
            .iter()
            .map(|r| (r.trigger.clone(), r.reply.clone()))
            .collect();
        let timeout = timeout_arg(None, 60.0)?;
        let mut driver = ModeDriver::new(self, &conn, &context, timeout)?;
        driver.reach(resting_mode(&rules)).await?;
        let mut done = run(&mut driver, &[save], Some(&replies)).await;
        if let (Some(ok), Ok(result)) = (&rules.save_ok, &mut done)
            && result.ok
            && !regex::Regex::new(ok).is_ok_and(|re| re.is_match(&result.output))
        {
            result.ok = false;
            result.error_lines.push(format!(
                "the device did not say the save succeeded (expected output matching {ok:?})"
            ));
        }
        Ok(Json(finish(&mut driver, &rules, done).await))
    }
}

/// Sends `commands` in order, stopping at the first error line.
async fn run(
    driver: &mut ModeDriver<'_>,
    commands: &[String],
    replies: Option<&BTreeMap<String, String>>,
) -> Result<ConfigActionResult, GateError> {
    let mut result = ConfigActionResult {
        ok: true,
        commands: Vec::new(),
        output: String::new(),
        error_lines: Vec::new(),
        mode: None,
        steps: Vec::new(),
    };
    for command in commands {
        let reply = driver.send(command, replies).await?;
        result.commands.push(command.clone());
        result.output.push_str(reply.output.trim_end());
        result.output.push('\n');
        if !reply.errors.is_empty() {
            result.ok = false;
            result.error_lines.extend(reply.errors);
            break;
        }
    }
    let (output, _) = cut(result.output, MAX_VERDICT_OUTPUT);
    result.output = output;
    Ok(result)
}

/// Leaves the device in its resting mode and completes the result; an
/// error of the action itself is returned as it was.
async fn finish(
    driver: &mut ModeDriver<'_>,
    rules: &ModeRules,
    done: Result<ConfigActionResult, GateError>,
) -> ConfigActionResult {
    let mut result = match done {
        Ok(result) => result,
        Err(e) => ConfigActionResult {
            ok: false,
            commands: Vec::new(),
            output: String::new(),
            error_lines: vec![e.to_string()],
            mode: None,
            steps: Vec::new(),
        },
    };
    match driver.reach(resting_mode(rules)).await {
        Ok((mode, _)) => result.mode = Some(mode),
        Err(e) => result.error_lines.push(format!(
            "could not return to {}: {e}",
            resting_mode(rules).as_str()
        )),
    }
    result.steps = std::mem::take(&mut driver.steps);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_patterns_are_checked_before_anything_is_sent() {
        assert!(check_lines(&[]).is_err());
        assert!(check_lines(&["a\nb".to_owned()]).is_err());
        assert!(check_lines(&["x".repeat(MAX_SEND_BYTES + 1)]).is_err());
        assert!(check_lines(&vec!["x".to_owned(); MAX_CONFIG_LINES + 1]).is_err());
        check_lines(&["hostname sw2".to_owned()]).unwrap();
        assert!(extra_patterns(&Some(vec!["[oops".to_owned()])).is_err());
        assert!(extra_patterns(&Some(vec![String::new()])).is_err());
        assert!(extra_patterns(&Some(vec!["x".to_owned(); MAX_EXTRA_PATTERNS + 1])).is_err());
        assert_eq!(
            extra_patterns(&Some(vec!["^Warning".to_owned()]))
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            fill("commit confirmed {minutes}", "minutes", 5),
            "commit confirmed 5"
        );
    }
}
