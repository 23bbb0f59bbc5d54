//! The judge of the guardrails: one decision, [`judge`], of whether a
//! line a caller sends is allowed, denied or needs a person's approval
//! under a command policy, read as the device will execute it.
//!
//! The rules and their syntax are the config's
//! ([`crate::config::policies`]); this file reads a line as a device
//! does:
//!
//! - text with several lines is several commands, each judged, and the
//!   worst verdict is the text's;
//! - case, leading and repeated spaces do not matter; a word is a word
//!   (`show reload`, `description reload-test` and
//!   `show logging | include reload` match no rule about `reload`);
//! - a keyword is abbreviated as the rule says (see the config's rules);
//! - `do` (exec commands from configuration mode) and Junos `run` are
//!   looked through: `do reload` is judged as `reload` in exec mode, and
//!   as itself as well;
//! - after `|` comes an output filter: a deny or approve rule judges the
//!   command before it; an allow list also wants every filter to be one
//!   that only reads (`include`, `exclude`, `begin`, `count`, ...), never
//!   one that writes (`redirect`, `tee`, `append`, `save`);
//! - what a gateway cannot judge is refused, not guessed: a control
//!   character (a tab completes a word on the device, a backspace or an
//!   escape sequence edits the line) and, on a network CLI, `?` (the
//!   device shows help and keeps the line, which the next Enter runs);
//! - over a shell (`linux`), `;`, `&`, `|`, `(`, `)`, `$` and backquotes
//!   start another command, quotes and backslashes are dropped, a path's
//!   directory does not matter (`/sbin/reboot`), and after a word that
//!   runs another command (`sudo`, `env`, `sh`, `ssh`, ...) a rule is
//!   looked for at every later word. A shell is not judged completely
//!   (variables, aliases, functions and scripts are not followed): a
//!   policy there guards against mistakes, it is no sandbox.

use crate::config::policies::{DangerousUse, Guardrails, Policy, Rule, RuleMode, Syntax, Word};
use crate::error::shown;

/// Longest line judged: a device's command line is shorter, and judging
/// stays cheap whatever a caller sends.
pub const MAX_LINE_BYTES: usize = 4096;

/// Most `do` or `run` looked through in front of one command.
const MAX_PREFIXES: usize = 4;

/// The mode the device is in when the line arrives, as far as the
/// gateway knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CliMode {
    /// Exec, privileged, operational mode, user view.
    Exec,
    /// Configuration mode, system view.
    Config,
    /// Not known: every rule applies, whatever mode it names.
    Unknown,
}

/// A policy as it applies on one port: the policy, and the guardrails of
/// the port's preset (its syntax and dangerous commands).
#[derive(Debug, Clone, Copy)]
pub struct Under<'a> {
    /// The policy.
    pub policy: &'a Policy,
    /// The preset's name, for messages.
    pub preset: &'a str,
    /// The preset's guardrails.
    pub guardrails: &'a Guardrails,
}

/// What matched a line that is not simply allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule as written, or what the allow list is missing.
    pub rule: String,
    /// Where the rule comes from, e.g. `the deny list of policy "x"`.
    pub from: String,
    /// The policy's name.
    pub policy: String,
    /// The line judged (trimmed).
    pub line: String,
    /// The allow list does not permit the line: `rule` says what it
    /// misses.
    pub missing: bool,
}

/// The verdict on a line or a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It may be sent.
    Allow,
    /// It needs a person's approval.
    Approve(Finding),
    /// It is never sent.
    Deny(Finding),
    /// The gateway cannot tell what the device would run, so it is not
    /// sent: why, and the line.
    Unjudgeable {
        /// What in the line cannot be judged.
        reason: String,
        /// The line (trimmed).
        line: String,
    },
}

impl Verdict {
    /// How bad it is, to keep the worst of several.
    fn weight(&self) -> u8 {
        match self {
            Verdict::Allow => 0,
            Verdict::Approve(_) => 1,
            Verdict::Deny(_) | Verdict::Unjudgeable { .. } => 2,
        }
    }

    /// `self` or `other`, whichever is worse (the first of equals).
    pub fn worse(self, other: Verdict) -> Verdict {
        if other.weight() > self.weight() {
            other
        } else {
            self
        }
    }
}

/// Judges `text` (one line or several) sent to a device in `mode` under
/// `under`: the worst verdict of its lines (the first of the worst).
/// Blank lines are allowed.
pub fn judge(under: &Under<'_>, mode: CliMode, text: &str) -> Verdict {
    // The first line may change the mode (`configure terminal`): the
    // lines after it are judged in every mode.
    text.split(['\r', '\n'])
        .enumerate()
        .map(|(i, line)| judge_line(under, if i == 0 { mode } else { CliMode::Unknown }, line))
        .fold(Verdict::Allow, Verdict::worse)
}

/// Judges one line (no CR or LF in it).
fn judge_line(under: &Under<'_>, mode: CliMode, line: &str) -> Verdict {
    if under.policy.judges_nothing() {
        return Verdict::Allow;
    }
    let trimmed = line.trim_matches(' ').to_owned();
    let unjudgeable = |reason: String| Verdict::Unjudgeable {
        reason,
        line: trimmed.clone(),
    };
    if let Some(c) = line.chars().find(|c| c.is_control()) {
        let what = match c {
            '\t' => "a tab, which completes a word on the device".to_owned(),
            '\u{8}' | '\u{7f}' => "a backspace, which edits the line on the device".to_owned(),
            '\u{1b}' => "an escape sequence, which edits the line on the device".to_owned(),
            c => format!("the control character U+{:04X}", c as u32),
        };
        return unjudgeable(format!("it holds {what}"));
    }
    if trimmed.is_empty() {
        return Verdict::Allow;
    }
    if trimmed.len() > MAX_LINE_BYTES {
        return unjudgeable(format!(
            "it is {} bytes long, more than the {MAX_LINE_BYTES} of a device's command line",
            trimmed.len()
        ));
    }
    match under.guardrails.syntax {
        Syntax::Cli => {
            if line.contains('?') {
                return unjudgeable(
                    "it holds '?', which makes the device show help and keep the line for the next Enter to run".to_owned(),
                );
            }
            judge_cli(under, mode, &trimmed)
        }
        Syntax::Shell => judge_shell(under, &trimmed),
    }
}

/// The rules that deny and those that need approval under `under`.
fn lists<'a>(under: &Under<'a>) -> [(Vec<(&'a Rule, String)>, bool); 2] {
    let policy = under.policy;
    let own = |rules: &'a [Rule], tier: &str| -> Vec<(&'a Rule, String)> {
        rules
            .iter()
            .map(|r| (r, format!("the {tier} list of policy {:?}", policy.name)))
            .collect()
    };
    let mut deny = own(&policy.deny, "deny");
    let mut approve = own(&policy.approve, "approve");
    let dangerous = under.guardrails.dangerous.iter().map(|r| {
        (
            r,
            format!(
                "the dangerous commands of preset {:?}, which policy {:?} {}",
                under.preset,
                policy.name,
                match policy.dangerous {
                    DangerousUse::Deny => "denies",
                    _ => "sends only once a person approves",
                }
            ),
        )
    });
    match policy.dangerous {
        DangerousUse::Deny => deny.extend(dangerous),
        DangerousUse::Approve => approve.extend(dangerous),
        DangerousUse::Ignore => {}
    }
    [(deny, true), (approve, false)]
}

/// The verdict of the deny and approve lists on one reading of a command.
fn by_lists(under: &Under<'_>, words: &[&str], mode: CliMode, whole: bool, line: &str) -> Verdict {
    for (rules, denies) in lists(under) {
        if let Some((rule, from)) = rules
            .into_iter()
            .find(|(r, _)| matches(r, words, mode, whole))
        {
            let finding = Finding {
                rule: rule.text.clone(),
                from,
                policy: under.policy.name.clone(),
                line: line.to_owned(),
                missing: false,
            };
            return if denies {
                Verdict::Deny(finding)
            } else {
                Verdict::Approve(finding)
            };
        }
    }
    Verdict::Allow
}

/// A refusal of the allow list: `what` is not on it.
fn not_allowed(under: &Under<'_>, what: String, line: &str) -> Verdict {
    Verdict::Deny(Finding {
        rule: what,
        from: format!("the allow list of policy {:?}", under.policy.name),
        policy: under.policy.name.clone(),
        line: line.to_owned(),
        missing: true,
    })
}

/// Whether `rule` matches a command of `words` in `mode`: its mode, then
/// its words against the command's first ones. `whole`: keywords are
/// whole words (a shell), else abbreviated.
fn matches(rule: &Rule, words: &[&str], mode: CliMode, whole: bool) -> bool {
    let mode_fits = match rule.mode {
        RuleMode::Any => true,
        RuleMode::Exec => mode != CliMode::Config,
        RuleMode::Config => mode != CliMode::Exec,
    };
    mode_fits
        && rule.words.len() <= words.len()
        && rule
            .words
            .iter()
            .zip(words)
            .all(|(r, w)| word_matches(r, w, whole))
}

/// Whether a command word (lower case) matches a rule word.
fn word_matches(rule: &Word, word: &str, whole: bool) -> bool {
    match rule {
        Word::Arg => true,
        Word::Literal(l) => l == word,
        Word::Keyword { text, .. } if whole => text == word,
        Word::Keyword { text, min } => word.chars().count() >= *min && text.starts_with(word),
    }
}

/// Output filters after `|` that only read.
const READING_FILTERS: &[&str] = &[
    "include", "exclude", "begin", "section", "count", "grep", "egrep", "match", "except", "find",
    "last", "no-more", "display", "trim", "json", "xml", "head", "tail", "sort", "uniq", "wc",
    "hold", "resolve", "refresh",
];

/// Output filters after `|` that write (a file, a server) or run something.
const WRITING_FILTERS: &[&str] = &[
    "redirect", "tee", "append", "save", "tftp", "ftp", "scp", "copy", "email", "exec", "run",
    "request", "write",
];

/// Whether the filter word `word` (lower case) may be only a reading one.
fn reads_only(word: &str) -> bool {
    !word.is_empty()
        && READING_FILTERS.iter().any(|f| f.starts_with(word))
        && !WRITING_FILTERS.iter().any(|f| f.starts_with(word))
}

/// Judges a network CLI's line (trimmed, no control characters).
fn judge_cli(under: &Under<'_>, mode: CliMode, line: &str) -> Verdict {
    let lower = line.to_lowercase();
    let mut parts = lower.split('|');
    let command: Vec<&str> = parts
        .next()
        .unwrap_or("")
        .split(' ')
        .filter(|w| !w.is_empty())
        .collect();
    // Every reading of the command: as written, then with each `do` or
    // `run` in front looked through (an exec command from configuration).
    let mut readings: Vec<(&[&str], CliMode)> = vec![(&command, mode)];
    let mut rest = command.as_slice();
    while let [first, tail @ ..] = rest
        && !tail.is_empty()
        && (*first == "do" || (first.len() >= 2 && "run".starts_with(first)))
    {
        if readings.len() > MAX_PREFIXES {
            return Verdict::Unjudgeable {
                reason: format!(
                    "it has more than {MAX_PREFIXES} do or run in front of its command"
                ),
                line: line.to_owned(),
            };
        }
        readings.push((tail, CliMode::Exec));
        rest = tail;
    }
    let mut verdict = Verdict::Allow;
    for (words, mode) in &readings {
        verdict = verdict.worse(by_lists(under, words, *mode, false, line));
    }
    if verdict.weight() > 0 {
        return verdict;
    }
    let Some(allow) = &under.policy.allow else {
        return verdict;
    };
    let (words, mode) = readings
        .last()
        .map_or((command.as_slice(), mode), |(w, m)| (*w, *m));
    if !allow.iter().any(|r| matches(r, words, mode, false)) {
        return not_allowed(
            under,
            format!("{} is not listed", shown(&words.join(" "))),
            line,
        );
    }
    for filter in parts {
        let word = filter.split(' ').find(|w| !w.is_empty()).unwrap_or("");
        if !reads_only(word) {
            return not_allowed(
                under,
                format!("the output filter {} may not only read", shown(word)),
                line,
            );
        }
    }
    Verdict::Allow
}

/// Words in front of another command in a shell: after one, a rule is
/// looked for at every later word.
const RUNS_ANOTHER: &[&str] = &[
    "sudo",
    "doas",
    "su",
    "exec",
    "nohup",
    "env",
    "command",
    "builtin",
    "time",
    "nice",
    "ionice",
    "setsid",
    "stdbuf",
    "chrt",
    "taskset",
    "busybox",
    "xargs",
    "timeout",
    "watch",
    "strace",
    "chroot",
    "unshare",
    "nsenter",
    "sh",
    "bash",
    "dash",
    "ash",
    "zsh",
    "ksh",
    "eval",
    "ssh",
    "systemd-run",
    "flock",
    "then",
    "do",
    "else",
    "if",
    "while",
    "until",
    "!",
];

/// Judges a shell line (trimmed, no control characters).
fn judge_shell(under: &Under<'_>, line: &str) -> Verdict {
    let longest = lists(under)
        .iter()
        .flat_map(|(rules, _)| rules.iter().map(|(r, _)| r.words.len()))
        .max()
        .unwrap_or(1);
    let lower = line.to_lowercase();
    let mut verdict = Verdict::Allow;
    let mut previous = ' ';
    let mut segments = vec![String::new()];
    for c in lower.chars() {
        let splits = match c {
            ';' | '|' | '(' | ')' | '`' | '$' | '{' | '}' => true,
            // `2>&1` and `<&3` are redirections, not a command's end.
            '&' => !matches!(previous, '>' | '<'),
            _ => false,
        };
        if splits {
            segments.push(String::new());
        } else if let Some(s) = segments.last_mut()
            && !matches!(c, '\'' | '"' | '\\')
        {
            s.push(c);
        }
        previous = c;
    }
    for segment in &segments {
        let words: Vec<&str> = segment
            .split(' ')
            .filter(|w| !w.is_empty())
            // Assignments and redirections in front of the command.
            .skip_while(|w| is_assignment(w) || is_redirection(w))
            .collect();
        let Some(first) = words.first() else {
            continue;
        };
        let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_owned();
        let mut starts = vec![0];
        if let Some(i) = words
            .iter()
            .position(|w| RUNS_ANOTHER.contains(&base(w).as_str()))
        {
            starts.extend(i + 1..words.len());
        }
        for start in starts {
            // Only as many words as the longest rule has are looked at.
            let end = words.len().min(start + longest);
            let mut reading: Vec<String> =
                words[start..end].iter().map(|w| (*w).to_owned()).collect();
            if let Some(w) = reading.first_mut() {
                *w = base(w);
            }
            let reading: Vec<&str> = reading.iter().map(String::as_str).collect();
            verdict = verdict.worse(by_lists(under, &reading, CliMode::Exec, true, line));
        }
        if verdict.weight() > 0 {
            return verdict;
        }
        if let Some(allow) = &under.policy.allow {
            let mut reading: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
            reading[0] = base(first);
            let reading: Vec<&str> = reading.iter().map(String::as_str).collect();
            if !allow
                .iter()
                .any(|r| matches(r, &reading, CliMode::Exec, true))
            {
                return not_allowed(
                    under,
                    format!("{} is not listed", shown(&reading.join(" "))),
                    line,
                );
            }
        }
    }
    verdict
}

/// `NAME=value` in front of a shell command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// `>file`, `2>file`, `<file` in front of a shell command.
fn is_redirection(word: &str) -> bool {
    word.trim_start_matches(|c: char| c.is_ascii_digit())
        .starts_with(['<', '>'])
}
