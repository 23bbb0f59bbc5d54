//! Command policies (the guardrails): `[policies.NAME]` tables of rules in
//! the device's own command syntax, the built-in policies, and each device
//! family's dangerous commands, which every built-in preset ships.
//!
//! A rule is a command as an engineer types it, word by word:
//!
//! - a *keyword* (`reload`, `write`, `running-config`): matched with the
//!   abbreviation rule of CLIs such as IOS, NX-OS, EOS, VRP, ProCurve and
//!   Junos, which take any unambiguous prefix of a keyword. The gateway
//!   does not know the device's command tree, so it cannot know which
//!   prefix is unambiguous; it errs towards refusing. In `deny` and
//!   `approve` a keyword matches any prefix of it, down to one character
//!   (`wr e` is `write erase` on IOS); in `allow` a prefix of at least
//!   three characters (or the whole keyword when it is shorter). A rule
//!   states its own minimum with brackets: `sh[ow]` matches `sh`, `sho`
//!   and `show`, `reload[]` only `reload`. Over a shell (`linux`) words are
//!   whole: a shell does not abbreviate.
//! - an *argument*: `<any>` (or any `<name>`) matches one word, whatever
//!   it is;
//! - a *literal*: a word that does not start with a letter (`*`, `/`,
//!   `-rf`, `0x2142`) matches itself only.
//!
//! A rule matches a command whose first words it matches; the words after
//! them do not matter (`reload` matches `reload in 5`). A rule may name the
//! mode it applies in: `exec:` (exec, privileged, operational or user
//! view) or `config:` (configuration, system view); without one it applies
//! in every mode. Case never matters.
//!
//! Judging a line against a policy is [`crate::access`]'s; this file only
//! reads, checks and holds the rules.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::diagnostics::{ConfigError, Source};

/// The mode a rule applies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleMode {
    /// Every mode (no prefix).
    Any,
    /// Exec, privileged, operational mode, user view (`exec:`).
    Exec,
    /// Configuration mode, system view (`config:`).
    Config,
}

/// One word of a rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Word {
    /// A keyword, lower case, and the fewest of its characters a command
    /// word must have to abbreviate it.
    Keyword {
        /// The whole keyword.
        text: String,
        /// The shortest prefix that abbreviates it (at least 1).
        min: usize,
    },
    /// A word that matches itself only (lower case).
    Literal(String),
    /// `<any>`: one word, whatever it is.
    Arg,
}

/// Which list of a policy a rule is in: it decides what a match does, and
/// the default minimum abbreviation of its keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Never sent.
    Deny,
    /// Sent only once a person approves.
    Approve,
    /// The allow list: what it does not match is denied.
    Allow,
}

impl Tier {
    /// The key that holds the list, as the config spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Deny => "deny",
            Tier::Approve => "approve",
            Tier::Allow => "allow",
        }
    }

    /// The shortest prefix of `keyword` this tier takes as the keyword
    /// when the rule does not say: what blocks errs towards blocking (one
    /// character), what permits errs towards not permitting (three).
    fn default_min(self, keyword: &str) -> usize {
        let len = keyword.chars().count();
        match self {
            Tier::Deny | Tier::Approve => 1,
            Tier::Allow => len.min(3),
        }
    }
}

/// One rule: as written, and parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// The rule as written (trimmed), for messages and `check-config`.
    pub text: String,
    /// The mode it applies in.
    pub mode: RuleMode,
    /// Its words, at least one.
    pub words: Vec<Word>,
}

/// Why a rule does not parse, and where in its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// Byte offset in the rule's text.
    pub at: usize,
    /// What is wrong and how to write it.
    pub message: String,
}

/// Most bytes of a rule: a command line is short.
pub const MAX_RULE_BYTES: usize = 256;

impl Rule {
    /// Parses `text` as a rule of `tier`.
    pub fn parse(text: &str, tier: Tier) -> Result<Rule, RuleError> {
        let err = |at: usize, message: String| RuleError { at, message };
        if text.len() > MAX_RULE_BYTES {
            return Err(err(
                0,
                format!("the rule is {} bytes, at most {MAX_RULE_BYTES}", text.len()),
            ));
        }
        if let Some((at, c)) = text
            .char_indices()
            .find(|&(_, c)| c.is_control() || c == '|' || c == '?')
        {
            return Err(err(
                at,
                format!(
                    "{c:?} cannot be in a rule: a rule is one command's words (a pipe's filter and the device's help are not judged)"
                ),
            ));
        }
        let mut body = text;
        let mut offset = 0;
        let mut mode = RuleMode::Any;
        let lead = text.len() - text.trim_start().len();
        let trimmed = text.trim_start();
        for (prefix, m) in [("exec:", RuleMode::Exec), ("config:", RuleMode::Config)] {
            if trimmed.len() >= prefix.len()
                && trimmed.is_char_boundary(prefix.len())
                && trimmed[..prefix.len()].eq_ignore_ascii_case(prefix)
            {
                mode = m;
                offset = lead + prefix.len();
                body = &text[offset..];
            }
        }
        let mut words = Vec::new();
        let mut at = offset;
        for piece in body.split(' ') {
            let start = at;
            at += piece.len() + 1;
            if piece.is_empty() {
                continue;
            }
            words.push(parse_word(piece, tier).map_err(|(within, m)| err(start + within, m))?);
        }
        if words.is_empty() {
            return Err(err(
                0,
                "the rule has no words; write a command, e.g. \"reload\" or \"config: no router bgp <asn>\"".into(),
            ));
        }
        if matches!(words[0], Word::Arg) {
            return Err(err(
                offset + (body.len() - body.trim_start().len()),
                "a rule cannot start with an argument: start with the command's keyword".into(),
            ));
        }
        let canonical: Vec<&str> = text.split_whitespace().collect();
        Ok(Rule {
            text: canonical.join(" "),
            mode,
            words,
        })
    }
}

/// One word of a rule; the error's offset is within `piece`.
fn parse_word(piece: &str, tier: Tier) -> Result<Word, (usize, String)> {
    if piece.starts_with('<') {
        if piece.len() > 2
            && piece.ends_with('>')
            && !piece[1..piece.len() - 1].contains(['<', '>'])
        {
            return Ok(Word::Arg);
        }
        return Err((
            0,
            format!("{piece:?} is not an argument: write one as <any> or <name>, without spaces"),
        ));
    }
    let starts_keyword = piece
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic());
    if !starts_keyword {
        if let Some(at) = piece.find(['[', ']', '<', '>']) {
            return Err((
                at,
                format!(
                    "{piece:?}: brackets mark a keyword's abbreviation (sh[ow]) and <> an argument (<any>)"
                ),
            ));
        }
        return Ok(Word::Literal(piece.to_lowercase()));
    }
    match piece.find('[') {
        None => {
            if let Some(at) = piece.find([']', '<', '>']) {
                return Err((at, format!("{piece:?}: a stray bracket")));
            }
            let text = piece.to_lowercase();
            let min = tier.default_min(&text);
            Ok(Word::Keyword { text, min })
        }
        Some(open) => {
            let (head, rest) = piece.split_at(open);
            let Some(tail) = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')) else {
                return Err((
                    open,
                    format!(
                        "{piece:?}: write a keyword's abbreviation as the part that must be typed and the rest in brackets, e.g. sh[ow]"
                    ),
                ));
            };
            if tail.contains(['[', ']', '<', '>']) {
                return Err((open, format!("{piece:?}: one pair of brackets, at the end")));
            }
            let text = format!("{head}{tail}").to_lowercase();
            Ok(Word::Keyword {
                min: head.chars().count(),
                text,
            })
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// How a family's command line splits into commands and words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Syntax {
    /// A network CLI: keywords abbreviate, `|` starts an output filter,
    /// `?` asks for help and tab completes.
    #[default]
    Cli,
    /// A POSIX shell: whole words; `;`, `&`, `|`, `(`, `$(` and backquotes
    /// start another command.
    Shell,
}

/// What a preset carries for the guardrails: how its CLI reads a line, the
/// family's dangerous commands, and the policy its ports get by default.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Guardrails {
    /// How a line splits into commands and words.
    pub syntax: Syntax,
    /// The family's dangerous commands (as `approve` rules: keywords
    /// abbreviate down to one character); shared by every port of the
    /// preset.
    pub dangerous: Arc<[Rule]>,
    /// The policy a port of this preset is under by default (`policy`).
    pub policy: Option<String>,
}

/// What a policy does with the dangerous commands of the port's preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DangerousUse {
    /// They need a person's approval (the default).
    Approve,
    /// They are never sent.
    Deny,
    /// They play no part; only the policy's own rules count.
    Ignore,
}

impl DangerousUse {
    /// As the config spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            DangerousUse::Approve => "approve",
            DangerousUse::Deny => "deny",
            DangerousUse::Ignore => "ignore",
        }
    }
}

/// A named policy, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Policy {
    /// Its name (`[policies.NAME]`).
    pub name: String,
    /// Rules of commands never sent.
    pub deny: Vec<Rule>,
    /// Rules of commands sent only once a person approves.
    pub approve: Vec<Rule>,
    /// The allow list; when present, a command it does not match is denied.
    pub allow: Option<Vec<Rule>>,
    /// What the port's preset's dangerous commands do under it.
    pub dangerous: DangerousUse,
    /// How long a line waits for a person's approval under it
    /// (`approval_timeout`); `None`: `[server] approval_timeout`.
    pub approval_timeout: Option<std::time::Duration>,
    /// A person at the console with the requester's own token may approve
    /// its requests (`self_approve`, default false: four eyes).
    pub self_approve: bool,
    /// The user of the requesting agent's own MCP client may decide its
    /// requests too, asked through MCP elicitation when the client
    /// declared it (`approvers` names `"client_user"`; default: people
    /// at a console or in the web view only).
    pub client_user_approves: bool,
}

impl Policy {
    /// A built-in policy with no rules of its own.
    fn builtin(name: &str, dangerous: DangerousUse) -> Policy {
        Policy {
            name: name.to_owned(),
            deny: Vec::new(),
            approve: Vec::new(),
            allow: None,
            dangerous,
            approval_timeout: None,
            self_approve: false,
            client_user_approves: false,
        }
    }

    /// Whether the policy judges nothing (the built-in `none`).
    pub fn judges_nothing(&self) -> bool {
        self.deny.is_empty()
            && self.approve.is_empty()
            && self.allow.is_none()
            && self.dangerous == DangerousUse::Ignore
    }
}

/// The built-in policies: `guarded` (the preset's dangerous commands need a
/// person's approval), `locked` (they are never sent) and `none` (nothing
/// is judged: a token that names it escapes a port's default policy).
pub fn builtin_policies() -> Vec<Policy> {
    vec![
        Policy::builtin("guarded", DangerousUse::Approve),
        Policy::builtin("locked", DangerousUse::Deny),
        Policy::builtin("none", DangerousUse::Ignore),
    ]
}

/// One `[policies.NAME]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [policies.NAME] table")]
pub(super) struct RawPolicy {
    deny: Option<Vec<Spanned<String>>>,
    approve: Option<Vec<Spanned<String>>>,
    allow: Option<Vec<Spanned<String>>>,
    dangerous: Option<DangerousUse>,
    approval_timeout: Option<Spanned<String>>,
    self_approve: Option<bool>,
    approvers: Option<Vec<Spanned<String>>>,
}

/// Who a policy's `approvers` may name.
const APPROVERS: &str = "\"people\" (a person at a console or in the web view) and \"client_user\" (the user of the agent's own MCP client, asked through elicitation)";

/// Whether `approvers` (at `path`) lets the agent's client's user decide;
/// an entry that names nobody, or a list without `"people"`, is an error
/// at it (a person may always decide first).
fn client_user_approves(
    approvers: Option<&[Spanned<String>]>,
    path: &str,
    src: &Source,
) -> Result<bool, ConfigError> {
    let Some(approvers) = approvers else {
        return Ok(false);
    };
    let mut people = false;
    let mut client_user = false;
    for entry in approvers {
        match entry.get_ref().as_str() {
            "people" => people = true,
            "client_user" => client_user = true,
            other => {
                return Err(src.error(
                    entry.span(),
                    format!("{path}.approvers: {other:?} is not an approver; name {APPROVERS}"),
                ));
            }
        }
    }
    if !people {
        return Err(src.error(
            approvers.first().map_or(0..0, |e| e.span()),
            format!(
                "{path}.approvers: \"people\" must be one of them: a person at a console or in the web view can always decide; add \"client_user\" beside it to ask the agent's own user too"
            ),
        ));
    }
    Ok(client_user)
}

/// The policies: the built-in ones and the file's, checked.
pub(super) fn resolve_policies(
    raw: BTreeMap<Spanned<String>, RawPolicy>,
    src: &Source,
) -> Result<BTreeMap<String, Policy>, ConfigError> {
    let mut all: BTreeMap<String, Policy> = builtin_policies()
        .into_iter()
        .map(|p| (p.name.clone(), p))
        .collect();
    let mut ordered: Vec<_> = raw.into_iter().collect();
    ordered.sort_by_key(|(name, _)| name.span().start);
    for (name, raw) in ordered {
        let span = name.span();
        let name = name.into_inner();
        super::checks::check_name(&name).map_err(|e| {
            src.error(
                span.clone(),
                format!("policies: bad policy name {name:?}: {e}"),
            )
        })?;
        if all.contains_key(&name) {
            return Err(src.error(
                span,
                format!("policies.{name}: {name:?} is a built-in policy; give yours another name"),
            ));
        }
        let path = format!("policies.{name}");
        let list = |rules: Option<Vec<Spanned<String>>>, tier: Tier| {
            rules
                .unwrap_or_default()
                .iter()
                .map(|r| rule_at(r, tier, &path, src))
                .collect::<Result<Vec<_>, _>>()
        };
        let deny = list(raw.deny, Tier::Deny)?;
        let approve = list(raw.approve, Tier::Approve)?;
        let allow = match raw.allow {
            Some(rules) => Some(list(Some(rules), Tier::Allow)?),
            None => None,
        };
        all.insert(
            name.clone(),
            Policy {
                name,
                deny,
                approve,
                allow,
                dangerous: raw.dangerous.unwrap_or(DangerousUse::Approve),
                approval_timeout: match &raw.approval_timeout {
                    Some(t) => Some(super::checks::check_approval_timeout(
                        t,
                        &format!("{path}.approval_timeout"),
                        src,
                    )?),
                    None => None,
                },
                self_approve: raw.self_approve.unwrap_or(false),
                client_user_approves: client_user_approves(raw.approvers.as_deref(), &path, src)?,
            },
        );
    }
    Ok(all)
}

/// A rule from the file, its error at the offending word when the string
/// is written plainly (no escapes), else at the string.
fn rule_at(
    rule: &Spanned<String>,
    tier: Tier,
    path: &str,
    src: &Source,
) -> Result<Rule, ConfigError> {
    Rule::parse(rule.get_ref(), tier).map_err(|e| {
        let span = rule.span();
        let written = src.text.get(span.clone()).unwrap_or("");
        let plain = written.len() == rule.get_ref().len() + 2
            && written.get(1..written.len() - 1) == Some(rule.get_ref().as_str());
        let at = if plain {
            span.start + 1 + e.at
        } else {
            span.start
        };
        src.error(
            at..at,
            format!(
                "{path}.{}: rule {:?}: {}",
                tier.as_str(),
                rule.get_ref(),
                e.message
            ),
        )
    })
}

/// Checks that `name` (the value of a `policy` key at `key`) names a policy.
pub(super) fn check_policy_name(
    name: &Spanned<String>,
    key: &str,
    policies: &BTreeMap<String, Policy>,
    src: &Source,
) -> Result<String, ConfigError> {
    if policies.contains_key(name.get_ref()) {
        return Ok(name.get_ref().clone());
    }
    let known: Vec<&str> = policies.keys().map(String::as_str).collect();
    Err(src.error(
        name.span(),
        format!(
            "{key}: no policy is named {:?}; policies: {} (define one under [policies.NAME])",
            name.get_ref(),
            known.join(", ")
        ),
    ))
}

/// `items` as dangerous-command rules. Every built-in list parses (a test
/// checks each), so none is dropped.
fn dangerous(syntax: Syntax, items: &[&str]) -> Guardrails {
    Guardrails {
        syntax,
        dangerous: items
            .iter()
            .filter_map(|r| Rule::parse(r, Tier::Approve).ok())
            .collect::<Vec<_>>()
            .into(),
        policy: None,
    }
}

/// Cisco IOS and IOS-XE.
pub(super) fn cisco_ios() -> Guardrails {
    dangerous(
        Syntax::Cli,
        &[
            "reload",
            "write erase",
            "erase",
            "format",
            "delete",
            "squeeze",
            "configure replace",
            "configure network",
            "config-register",
            "boot",
            "no boot",
            "crypto key zeroize",
            "clear ip bgp *",
            "clear bgp",
            "clear ip ospf process",
            "clear ip route *",
            "clear isis *",
            "clear line",
            "redundancy force-switchover",
            "redundancy reload",
            "hw-module",
            "power",
            "no power",
            "install",
            "copy <any> startup-config",
            "config: no router <any>",
            "config: no interface",
            "config: shutdown",
            "config: no ip routing",
            // What runs commands later, out of the judge's sight: an
            // alias, an EEM applet, a kron policy, a macro.
            "config: alias",
            "config: event manager",
            "config: kron",
            // `mac` is a keyword of its own (mac address-table).
            "config: macr[o]",
        ],
    )
}

/// FRRouting's vtysh (SONiC, Cumulus): no `reload` of its own; what
/// takes routing down is a hard reset of sessions, the removal of whole
/// instances and a loaded or replaced configuration.
pub(super) fn frr() -> Guardrails {
    dangerous(
        Syntax::Cli,
        &[
            "clear ip bgp *",
            "clear bgp *",
            "clear ip bgp all",
            "clear bgp all",
            "clear ip bgp external",
            "clear ip bgp peer-group",
            "clear ip ospf process",
            "clear ipv6 ospf6 process",
            "clear ip ospf neighbor",
            "clear isis neighbor",
            "clear mpls ldp neighbor",
            "copy <any> running-config",
            "config: no router <any>",
            "config: no vrf",
            "config: no interface",
            "config: no ip forwarding",
            "config: no ipv6 forwarding",
            "config: bgp graceful-shutdown",
            "config: frr defaults",
            "config: no service integrated-vtysh-config",
            "config: shutdown",
        ],
    )
}

/// Cisco NX-OS.
pub(super) fn cisco_nxos() -> Guardrails {
    dangerous(
        Syntax::Cli,
        &[
            "reload",
            "write erase",
            "delete",
            "format",
            "init system",
            "install",
            "boot",
            "no boot",
            "rollback running-config",
            "clear ip bgp *",
            "clear bgp",
            "clear ip ospf neighbor *",
            "clear ip route *",
            "system switchover",
            "system standby manual-boot",
            "poweroff",
            "no poweroff",
            "hardware",
            "crypto key zeroize",
            "copy <any> startup-config",
            "config: no feature",
            "config: no router <any>",
            "config: shutdown",
            "config: cli alias",
            "config: event manager",
            "config: scheduler",
        ],
    )
}

/// Juniper Junos (operational and configuration mode).
pub(super) fn juniper_junos() -> Guardrails {
    dangerous(
        Syntax::Cli,
        &[
            "request system reboot",
            "request system halt",
            "request system power-off",
            "request system zeroize",
            "request system software",
            "request system storage cleanup",
            "request system snapshot",
            "request system configuration rescue delete",
            "request chassis routing-engine master",
            "request routing-engine login",
            "request vmhost reboot",
            "request vmhost halt",
            "request vmhost power-off",
            "request vmhost zeroize",
            "clear bgp neighbor",
            "clear ospf neighbor",
            "clear isis adjacency",
            "restart",
            "start shell",
            "config: load override",
            "config: load replace",
            "config: rollback",
            "config: delete",
            "config: deactivate protocols",
            "config: set system root-authentication",
            // Commit, op and event scripts run what the judge never sees.
            "config: set system scripts",
            "config: set event-options",
        ],
    )
}

/// Arista EOS.
pub(super) fn arista_eos() -> Guardrails {
    dangerous(
        Syntax::Cli,
        &[
            "reload",
            "write erase",
            "erase",
            "delete",
            "format",
            "configure replace",
            "boot",
            "no boot",
            "clear ip bgp *",
            "clear bgp",
            "clear ip ospf neighbor *",
            "redundancy force-switchover",
            "bash",
            "copy <any> startup-config",
            "zerotouch",
            "config: no router <any>",
            "config: shutdown",
            "config: alias",
            "config: event-handler",
            "config: schedule",
        ],
    )
}

/// Huawei VRP.
pub(super) fn huawei_vrp() -> Guardrails {
    dangerous(
        Syntax::Cli,
        &[
            "reboot",
            "reset saved-configuration",
            "reset bgp all",
            "reset bgp",
            "reset ospf process",
            "reset isis all",
            "delete",
            "format",
            "fixdisk",
            "startup saved-configuration",
            "startup system-software",
            "startup patch",
            "rollback configuration",
            "slave switchover",
            "switchover",
            "power off",
            "pki delete-certificate",
            "config: undo bgp",
            "config: undo ospf",
            "config: undo isis",
            "config: shutdown",
            "config: clear configuration",
            "config: command-alias",
            "config: ops",
        ],
    )
}

/// A Linux shell.
pub(super) fn linux() -> Guardrails {
    dangerous(
        Syntax::Shell,
        &[
            "reboot",
            "shutdown",
            "poweroff",
            "halt",
            "init 0",
            "init 6",
            "telinit 0",
            "telinit 6",
            "systemctl reboot",
            "systemctl poweroff",
            "systemctl halt",
            "systemctl kexec",
            "systemctl rescue",
            "systemctl emergency",
            "kexec",
            "mkfs",
            "mkfs.ext2",
            "mkfs.ext3",
            "mkfs.ext4",
            "mkfs.xfs",
            "mkfs.btrfs",
            "mkfs.vfat",
            "mke2fs",
            "mkswap",
            "wipefs",
            "fdisk",
            "sfdisk",
            "sgdisk",
            "parted",
            "dd",
            "shred",
            "blkdiscard",
            "flash_erase",
            "flashcp",
            "mtd",
            "sysupgrade",
            "firstboot",
            "fw_setenv",
            "efibootmgr",
            "grub-reboot",
            "grub-set-default",
            "rm -rf /",
            "rm -fr /",
            "rm -r -f /",
            "rm -rf /*",
        ],
    )
}

/// HP ProCurve and ArubaOS-Switch.
pub(super) fn hp_procurve() -> Guardrails {
    dangerous(
        Syntax::Cli,
        &[
            "reload",
            "boot",
            "erase",
            "write erase",
            "startup-default",
            "delete",
            "format",
            "redundancy switchover",
            "copy <any> startup-config",
            "copy <any> <any> flash",
            "clear crypto",
            "crypto key zeroize",
            "config: no ip routing",
            "config: no vlan",
            "config: interface <any> disable",
            "config: alias",
            "config: job",
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    fn kw(text: &str, min: usize) -> Word {
        Word::Keyword {
            text: text.into(),
            min,
        }
    }

    #[test]
    fn rules_parse_into_keywords_arguments_and_literals() {
        let r = Rule::parse("  Config:  no router  BGP <asn> ", Tier::Deny).unwrap();
        assert_eq!(r.mode, RuleMode::Config);
        assert_eq!(r.text, "Config: no router BGP <asn>");
        assert_eq!(
            r.words,
            [kw("no", 1), kw("router", 1), kw("bgp", 1), Word::Arg]
        );
        let r = Rule::parse("clear ip bgp *", Tier::Approve).unwrap();
        assert_eq!(r.mode, RuleMode::Any);
        assert_eq!(r.words[3], Word::Literal("*".into()));
        let r = Rule::parse("sh[ow] run[ning-config] reload[]", Tier::Allow).unwrap();
        assert_eq!(
            r.words,
            [kw("show", 2), kw("running-config", 3), kw("reload", 6)]
        );
        // The allow list's default minimum is three characters.
        let r = Rule::parse("show ip", Tier::Allow).unwrap();
        assert_eq!(r.words, [kw("show", 3), kw("ip", 2)]);
        let r = Rule::parse("exec:reload", Tier::Deny).unwrap();
        assert_eq!((r.mode, r.words.len()), (RuleMode::Exec, 1));
    }

    #[test]
    fn bad_rules_say_where_and_why() {
        for (rule, at, part) in [
            ("", 0, "no words"),
            ("config:", 0, "no words"),
            ("<any> reload", 0, "cannot start with an argument"),
            ("show | include x", 5, "cannot be in a rule"),
            ("reload?", 6, "cannot be in a rule"),
            ("reload\tnow", 6, "cannot be in a rule"),
            ("sh[ow", 2, "in brackets"),
            ("show ru]n", 7, "stray bracket"),
            ("no router <asn", 10, "not an argument"),
            ("sh[o]w", 2, "in brackets"),
        ] {
            let e = Rule::parse(rule, Tier::Deny).expect_err(rule);
            assert_eq!(e.at, at, "{rule:?}: {}", e.message);
            assert!(e.message.contains(part), "{rule:?}: {}", e.message);
        }
        assert!(Rule::parse(&"x ".repeat(200), Tier::Deny).is_err());
    }

    #[test]
    fn every_family_ships_dangerous_commands_that_parse() {
        for (family, list, n) in [
            ("cisco-ios", cisco_ios(), 33),
            ("cisco-nxos", cisco_nxos(), 26),
            ("juniper-junos", juniper_junos(), 27),
            ("arista-eos", arista_eos(), 20),
            ("huawei-vrp", huawei_vrp(), 24),
            ("linux", linux(), 45),
            ("hp-procurve", hp_procurve(), 17),
            ("frr", frr(), 21),
        ] {
            // None was dropped for not parsing.
            assert_eq!(list.dangerous.len(), n, "{family}");
            assert_eq!(list.policy, None, "{family}");
        }
        assert_eq!(linux().syntax, Syntax::Shell);
        assert_eq!(cisco_ios().syntax, Syntax::Cli);
    }

    #[test]
    fn policies_resolve_with_the_builtins() {
        let c = parse(
            "[policies.change-window]\n\
             deny = [\"reload\", \"config: no router bgp <asn>\"]\n\
             approve = [\"clear ip bgp *\"]\n\
             allow = [\"sh[ow]\", \"ping\"]\n\
             dangerous = \"deny\"\n\
             [policies.own]\n\
             deny = [\"write erase\"]\n\
             dangerous = \"ignore\"\n",
        );
        let p = &c.policies["change-window"];
        assert_eq!(p.deny.len(), 2);
        assert_eq!(p.approve[0].text, "clear ip bgp *");
        assert_eq!(p.allow.as_ref().map(Vec::len), Some(2));
        assert_eq!(p.dangerous, DangerousUse::Deny);
        assert_eq!(c.policies["own"].dangerous, DangerousUse::Ignore);
        assert!(c.policies["none"].judges_nothing());
        assert_eq!(c.policies["guarded"].dangerous, DangerousUse::Approve);
        assert_eq!(c.policies["locked"].dangerous, DangerousUse::Deny);
    }

    #[test]
    fn ports_presets_and_tokens_name_a_policy() {
        let c = parse(
            "[presets.my-ios]\nextends = \"cisco-ios\"\npolicy = \"guarded\"\n\
             [presets.my-ios2]\nextends = \"my-ios\"\n\
             [ports.a]\ndevice = \"/dev/ttyUSB0\"\npreset = \"my-ios2\"\n\
             [ports.b]\ndevice = \"/dev/ttyUSB1\"\npreset = \"my-ios\"\npolicy = \"locked\"\n\
             [ports.c]\ndevice = \"/dev/ttyUSB2\"\npreset = \"linux\"\n",
        );
        // A preset's policy goes down its extends chain to its ports; a
        // port's own wins.
        assert_eq!(c.ports["a"].guardrails.policy.as_deref(), Some("guarded"));
        assert_eq!(c.ports["b"].guardrails.policy.as_deref(), Some("locked"));
        assert_eq!(c.ports["c"].guardrails.policy, None);
        // The dangerous commands come with the preset it extends, one
        // list shared by the ports of a preset.
        assert_eq!(c.ports["a"].guardrails.dangerous, cisco_ios().dangerous);
        assert!(Arc::ptr_eq(
            &c.ports["a"].guardrails.dangerous,
            &c.ports["b"].guardrails.dangerous
        ));
        assert_eq!(c.ports["c"].guardrails.syntax, Syntax::Shell);
        assert_eq!(
            parse("[server]\npolicy = \"locked\"\n")
                .server
                .policy
                .as_deref(),
            Some("locked")
        );
    }

    #[test]
    fn an_unknown_policy_is_an_error_where_it_is_named() {
        assert_error(
            "[server]\npolicy = \"gaurded\"\n",
            "2:10",
            &[
                "server.policy: no policy is named \"gaurded\"",
                "guarded, locked, none",
            ],
        );
        assert_error(
            "[ports.a]\ndevice = \"/dev/ttyUSB0\"\npolicy = \"x\"\n",
            "3:10",
            &["ports.a.policy: no policy is named \"x\""],
        );
        assert_error(
            "[presets.p]\npolicy = \"x\"\n",
            "2:10",
            &["presets.p.policy: no policy is named \"x\""],
        );
        assert_error(
            "[[tokens]]\nname = \"a\"\nsecret_file = \"/s\"\nports = [\"*\"]\npolicy = \"x\"\n",
            "5:10",
            &["tokens[0].policy: no policy is named \"x\""],
        );
        // A policy of the file's is known everywhere.
        let c = parse("[policies.mine]\n[ports.a]\ndevice = \"/dev/ttyUSB0\"\npolicy = \"mine\"\n");
        assert_eq!(c.ports["a"].guardrails.policy.as_deref(), Some("mine"));
        assert_eq!(c.policies["mine"].dangerous, DangerousUse::Approve);
    }

    #[test]
    fn a_bad_rule_is_an_error_at_its_word() {
        assert_error(
            "[policies.p]\ndeny = [\"reload\", \"no router <asn\"]\n",
            "2:30",
            &[
                "policies.p.deny: rule \"no router <asn\"",
                "not an argument",
            ],
        );
        assert_error(
            "[policies.p]\nallow = [\"show | include x\"]\n",
            "2:16",
            &["policies.p.allow:", "cannot be in a rule"],
        );
        assert_error(
            "[policies.guarded]\ndeny = []\n",
            "1:11",
            &["\"guarded\" is a built-in policy"],
        );
        assert_error(
            "[policies.p]\nwhitelist = []\n",
            "2:1",
            &["policies.p: unknown field `whitelist`"],
        );
        assert_error(
            "[policies.p]\ndangerous = \"maybe\"\n",
            "2:13",
            &["unknown variant `maybe`", "`approve`"],
        );
    }
}
