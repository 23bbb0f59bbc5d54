//! A token's command policy as a serving gateway sends it with a call
//! forwarded to a site: the policy itself, not its name, since the
//! serving gateway's config defines it and the site's may not (or may
//! define another policy of that name). The site judges the call's lines
//! under it as well as under the port's own policy, the stricter winning
//! (`access/guard.rs`), with the port's preset and the device's mode,
//! which only the site knows. What arrives is bounded and its rules are
//! parsed again as the config parses them; a policy that does not read
//! refuses the call, never lets it through unjudged.

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::config::policies::{DangerousUse, MAX_RULE_BYTES, Policy, Rule, Tier};
use crate::error::{ErrorCode, GateError, shown};

/// Most rules of one list a forwarded policy may carry.
pub const MAX_RULES: usize = 512;
/// Longest approval timeout a forwarded policy may ask for (the config's
/// own bound).
const MAX_APPROVAL_TIMEOUT_S: u64 = 24 * 3600;

/// A policy on the wire: its rules as written, and its settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForwardedPolicy {
    /// Its name, for messages (`policy "locked" never sends it`).
    pub name: String,
    /// Rules of commands never sent.
    pub deny: Vec<String>,
    /// Rules of commands sent only once a person approves.
    pub approve: Vec<String>,
    /// The allow list, when the policy has one.
    pub allow: Option<Vec<String>>,
    /// What the port's preset's dangerous commands do under it.
    pub dangerous: DangerousUse,
    /// How long a line waits for a person, in seconds: the policy's own
    /// `approval_timeout`, else the serving gateway's `[server]` one, so
    /// that the wait is what the token's gateway says it is.
    pub approval_timeout_s: u64,
    /// The requester's own token may approve its requests.
    pub self_approve: bool,
    /// The agent's client's user may decide too (asked through the
    /// serving gateway, `fleet/client_relay.rs`).
    pub client_user_approves: bool,
}

impl ForwardedPolicy {
    /// The policy named `name` (a caller's, `who` in messages) as the
    /// serving gateway whose config is `config` sends it with a call or a
    /// console on `full`; `None` without one. A name the config does not
    /// define refuses, as it would locally: nothing is sent unjudged.
    pub fn named(
        name: Option<&str>,
        config: &Config,
        who: &str,
        full: &str,
    ) -> Result<Option<ForwardedPolicy>, GateError> {
        let Some(name) = name else {
            return Ok(None);
        };
        match config.policies.get(name) {
            Some(policy) => Ok(Some(ForwardedPolicy::of(
                policy,
                config.server.approval_timeout,
            ))),
            None => Err(GateError::new(
                ErrorCode::Denied,
                format!(
                    "{who} is under policy {}, which the configuration in force does not define; nothing was sent to {}: ask the operator",
                    shown(name),
                    shown(full)
                ),
            )),
        }
    }

    /// `policy` as a serving gateway sends it; `approval_timeout` is its
    /// `[server] approval_timeout`, for a policy without one of its own.
    pub fn of(policy: &Policy, approval_timeout: std::time::Duration) -> ForwardedPolicy {
        let texts = |rules: &[Rule]| rules.iter().map(|r| r.text.clone()).collect();
        ForwardedPolicy {
            name: policy.name.clone(),
            deny: texts(&policy.deny),
            approve: texts(&policy.approve),
            allow: policy.allow.as_deref().map(texts),
            dangerous: policy.dangerous,
            approval_timeout_s: policy
                .approval_timeout
                .unwrap_or(approval_timeout)
                .as_secs()
                .clamp(1, MAX_APPROVAL_TIMEOUT_S),
            self_approve: policy.self_approve,
            client_user_approves: policy.client_user_approves,
        }
    }

    /// The policy the site judges by, its rules parsed again; `Err` says
    /// why it cannot be (the call is then refused).
    pub fn read(&self) -> Result<Policy, String> {
        let plain = !self.name.is_empty()
            && self.name.len() <= 64
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !plain {
            return Err("the forwarded policy's name is not a policy name".into());
        }
        let list = |rules: &[String], tier: Tier| -> Result<Vec<Rule>, String> {
            if rules.len() > MAX_RULES {
                return Err(format!(
                    "policy {:?} has {} {} rules, more than the {MAX_RULES} a forwarded policy may have",
                    self.name,
                    rules.len(),
                    tier.as_str()
                ));
            }
            rules
                .iter()
                .map(|r| {
                    if r.len() > MAX_RULE_BYTES {
                        return Err(format!(
                            "a {} rule of policy {:?} is longer than {MAX_RULE_BYTES} bytes",
                            tier.as_str(),
                            self.name
                        ));
                    }
                    Rule::parse(r, tier).map_err(|e| {
                        format!(
                            "a {} rule of policy {:?} does not read: {}",
                            tier.as_str(),
                            self.name,
                            e.message
                        )
                    })
                })
                .collect()
        };
        if !(1..=MAX_APPROVAL_TIMEOUT_S).contains(&self.approval_timeout_s) {
            return Err(format!(
                "policy {:?} asks for an approval timeout of {} s, outside 1 s to 24 h",
                self.name, self.approval_timeout_s
            ));
        }
        Ok(Policy {
            name: self.name.clone(),
            deny: list(&self.deny, Tier::Deny)?,
            approve: list(&self.approve, Tier::Approve)?,
            allow: match &self.allow {
                Some(rules) => Some(list(rules, Tier::Allow)?),
                None => None,
            },
            dangerous: self.dangerous,
            approval_timeout: Some(std::time::Duration::from_secs(self.approval_timeout_s)),
            self_approve: self.self_approve,
            client_user_approves: self.client_user_approves,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::time::Duration;

    #[test]
    fn a_policy_reads_back_as_it_was_written() {
        let config = Config::parse(
            "[policies.careful]\ndeny = [\"exec: wr[ite] erase\", \"config: no router bgp <asn>\"]\n\
             approve = [\"reload[]\"]\nallow = [\"show\", \"ping <any>\"]\ndangerous = \"deny\"\n\
             approval_timeout = \"90s\"\nself_approve = true\n",
            "t.toml",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let careful = &config.policies["careful"];
        let sent = ForwardedPolicy::of(careful, Duration::from_secs(300));
        let wire = serde_json::to_string(&sent).unwrap();
        let read: ForwardedPolicy = serde_json::from_str(&wire).unwrap();
        assert_eq!(read.read().unwrap(), *careful);
        // A built-in policy without a timeout takes the gateway's.
        let locked = &config.policies["locked"];
        let read = ForwardedPolicy::of(locked, Duration::from_secs(300))
            .read()
            .unwrap();
        assert_eq!(read.approval_timeout, Some(Duration::from_secs(300)));
        assert_eq!(read.dangerous, DangerousUse::Deny);
    }

    #[test]
    fn a_hostile_policy_is_refused_not_taken_as_none() {
        let config = Config::default_with_builtins();
        let good = ForwardedPolicy::of(&config.policies["guarded"], Duration::from_secs(60));
        let bad = |f: &dyn Fn(&mut ForwardedPolicy)| {
            let mut p = good.clone();
            f(&mut p);
            p.read().unwrap_err()
        };
        bad(&|p| p.name = "x\ny".into());
        bad(&|p| p.name = String::new());
        bad(&|p| p.deny = vec!["reload".into(); MAX_RULES + 1]);
        bad(&|p| p.approve = vec!["x".repeat(MAX_RULE_BYTES + 1)]);
        bad(&|p| p.allow = Some(vec!["show | redirect".into()]));
        bad(&|p| p.deny = vec!["<any>".into()]);
        bad(&|p| p.approval_timeout_s = 0);
        bad(&|p| p.approval_timeout_s = u64::MAX);
        assert!(good.read().is_ok());
    }
}
