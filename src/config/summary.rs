//! What `serialgate check-config` shows of a config that parsed: its ports,
//! HTTP, tokens and presets, every value spelled as the config file spells
//! it (`line_ending=cr`, `access write`), so what is shown can be pasted
//! back into the file.

use std::fmt;

use super::access::AuthMode;
use super::load::Config;
use super::tls::ListenerTls;
use super::tokens::{LONG_SECRET_BYTES, TokenConfig};
use crate::settings::LineEnding;

impl Config {
    /// A summary of the config for the operator, one line per port and
    /// token; displays as several lines, each ending in a newline.
    pub fn summary(&self) -> Summary<'_> {
        Summary(self)
    }

    /// A note for each configured local device path that does not exist
    /// now (a typo, or an adapter not plugged in yet: the port opens when
    /// it appears), saying how to find the right one.
    pub fn absent_device_notes(&self) -> Vec<String> {
        self.ports
            .iter()
            .filter(|(_, p)| p.device.starts_with('/') && !std::path::Path::new(&p.device).exists())
            .map(|(name, p)| {
                format!(
                    "note: ports.{name}.device {:?} does not exist now; the port opens when it appears, \
                     so an adapter not plugged in yet is fine. `serialgate list-ports` lists this \
                     machine's serial devices and their stable /dev/serial/by-id paths",
                    p.device
                )
            })
            .collect()
    }

    /// A note for each token whose secret is shorter than
    /// [`LONG_SECRET_BYTES`]: the HTTP doors keep it out, with every other
    /// short secret, while its address is held for wrong secrets (a
    /// guesser's, or another client's stale token on the same host).
    pub fn short_secret_notes(&self) -> Vec<String> {
        self.tokens
            .iter()
            .filter(|t| !t.secret.is_long())
            .map(|t| {
                format!(
                    "note: token {:?}'s secret is shorter than {LONG_SECRET_BYTES} characters, so after \
                     10 wrong secrets from one address (a guesser's, or another client's stale token \
                     on the same host) it is refused from there for a minute too; a long one is \
                     always let in: `openssl rand -hex 32 > {}`",
                    t.name,
                    t.secret_file.display()
                )
            })
            .collect()
    }
}

/// The [`Config::summary`] of a config, to display.
pub struct Summary<'a>(&'a Config);

impl fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let config = self.0;
        writeln!(f, "ports:")?;
        for (name, p) in &config.ports {
            write!(
                f,
                "  {name}: {} preset={} {} line_ending={} policy={}",
                p.device,
                p.preset,
                p.line,
                line_ending_name(p.line_ending),
                p.guardrails.policy.as_deref().unwrap_or("none")
            )?;
            match (&p.credentials_file, &p.credentials) {
                (Some(file), Some(c)) => writeln!(
                    f,
                    " credentials={:?} (user {:?})",
                    file.display().to_string(),
                    c.username
                )?,
                _ => writeln!(f)?,
            }
            if !p.watches.is_empty() {
                let watches: Vec<String> = p
                    .watches
                    .iter()
                    .map(|w| format!("{} ({}) {:?}", w.name, w.severity.as_str(), w.regex))
                    .collect();
                writeln!(f, "    watches: {}", watches.join(", "))?;
            }
        }
        if config.ports.is_empty() {
            writeln!(f, "  (none)")?;
        }
        for (name, c) in &config.power {
            let fed: Vec<String> = config
                .ports
                .iter()
                .flat_map(|(port, p)| {
                    p.power
                        .iter()
                        .filter(|o| o.controller == *name)
                        .map(move |o| format!("{port}={o}"))
                })
                .collect();
            writeln!(
                f,
                "power {name}: driver={} {} deadline={} min_interval={} outlets: {}",
                c.driver_name(),
                c.address(),
                humantime::format_duration(c.deadline),
                humantime::format_duration(c.min_interval),
                if fed.is_empty() {
                    "(none used)".to_owned()
                } else {
                    fed.join(", ")
                }
            )?;
        }
        if let Some(listen) = &config.server.listen {
            let scheme = if config.server.tls.is_on() {
                "https"
            } else {
                "http"
            };
            writeln!(
                f,
                "http: {scheme}://{listen}/mcp, auth {}",
                auth_name(config.server.auth)
            )?;
        }
        match &config.server.tls {
            ListenerTls::Files { cert, key, summary } => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64);
                writeln!(
                    f,
                    "tls: {}, {}; certificate {}, key {} (TLS 1.2 and 1.3, read again on SIGHUP)",
                    summary.subject,
                    summary.expiry(now),
                    cert.display(),
                    key.display()
                )?;
            }
            ListenerTls::Off { reason } => {
                writeln!(f, "tls: off on purpose: {reason}")?;
            }
            ListenerTls::Unset if config.server.listen.is_some() => {
                writeln!(f, "tls: none (plain HTTP, loopback only)")?;
            }
            ListenerTls::Unset => {}
        }
        if let Some(listen) = &config.server.metrics_listen {
            writeln!(f, "metrics: http://{listen}/metrics, no token (loopback)")?;
        }
        if let Some(w) = &config.server.alert_webhook {
            writeln!(
                f,
                "alert_webhook: {}{} ({}, timeout {}, {} retries, queue {})",
                w.url,
                match (&w.ca_file, w.https) {
                    (Some(ca), _) => format!(", trusting only the CA in {}", ca.display()),
                    (None, true) => ", trusting the system's roots".to_owned(),
                    (None, false) => String::new(),
                },
                w.secret_file.as_ref().map_or_else(
                    || "unsigned".to_owned(),
                    |p| format!("signed with the secret in {}", p.display())
                ),
                humantime::format_duration(w.timeout),
                w.retries,
                w.queue
            )?;
        }
        if let Some(fleet) = &config.fleet {
            writeln!(
                f,
                "fleet: site {} via {}{}{}{}",
                fleet.site,
                fleet.urls.join(", "),
                fleet.credentials.as_ref().map_or_else(
                    || ", no credentials".to_owned(),
                    |c| format!(
                        ", {} from {}",
                        c.kind(),
                        fleet
                            .credentials_file
                            .as_ref()
                            .map_or_else(String::new, |p| p.display().to_string())
                    )
                ),
                fleet
                    .ca_file
                    .as_ref()
                    .map_or_else(String::new, |ca| format!(
                        ", trusting only the CA in {}",
                        ca.display()
                    )),
                if fleet.serve {
                    "; serves every site's ports as site/port"
                } else {
                    ""
                }
            )?;
        }
        if !config.tokens.is_empty() {
            writeln!(f, "tokens:")?;
            for t in &config.tokens {
                writeln!(
                    f,
                    "  {}: {} access, ports {} (secret from {}){}{}, {}",
                    t.name,
                    t.access.name(),
                    t.ports.join(", "),
                    t.secret_file.display(),
                    if t.use_credentials {
                        ", use_credentials"
                    } else {
                        ""
                    },
                    if t.approve { ", may approve" } else { "" },
                    token_policy(config, t)
                )?;
            }
        }
        if let Some(listen) = &config.server.ssh_listen {
            writeln!(f, "ssh: {listen}, public keys of [[people]] only")?;
        }
        if !config.people.is_empty() {
            writeln!(f, "people:")?;
            for p in &config.people {
                writeln!(
                    f,
                    "  {}: {} access, ports {}, {} key(s) from {}{}, {}",
                    p.name,
                    p.access.name(),
                    p.ports.join(", "),
                    p.keys.len(),
                    p.authorized_keys.display(),
                    if p.approve { ", may approve" } else { "" },
                    p.policy
                        .as_deref()
                        .map_or_else(|| "no policy".to_owned(), |n| format!("policy {n}"))
                )?;
            }
        }
        if let Some(policy) = &config.server.policy {
            writeln!(
                f,
                "callers without a token (stdio, auth none): policy {policy}"
            )?;
        }
        let presets: Vec<&str> = config.presets.keys().map(String::as_str).collect();
        writeln!(f, "presets: {}", presets.join(", "))?;
        let policies: Vec<String> = config
            .policies
            .values()
            .map(|p| {
                let mut parts = vec![format!("dangerous {}", p.dangerous.as_str())];
                for (tier, n) in [("deny", p.deny.len()), ("approve", p.approve.len())] {
                    if n > 0 {
                        parts.push(format!("{tier} {n}"));
                    }
                }
                if let Some(allow) = &p.allow {
                    parts.push(format!("allow {}", allow.len()));
                }
                format!("{} ({})", p.name, parts.join(", "))
            })
            .collect();
        writeln!(f, "policies: {}", policies.join(", "))
    }
}

/// The policy a token is under: its own, or each port's default on the
/// ports its globs reach.
fn token_policy(config: &Config, token: &TokenConfig) -> String {
    if let Some(policy) = &token.policy {
        return format!("policy {policy}");
    }
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    let globs: Vec<glob::Pattern> = token
        .ports
        .iter()
        .filter_map(|g| glob::Pattern::new(g).ok())
        .collect();
    let ports: Vec<String> = config
        .ports
        .values()
        .filter(|p| globs.iter().any(|g| g.matches_with(&p.name, options)))
        .map(|p| {
            format!(
                "{} {}",
                p.name,
                p.guardrails.policy.as_deref().unwrap_or("none")
            )
        })
        .collect();
    if ports.is_empty() {
        "the policy of each port".to_owned()
    } else {
        format!("the policy of each port ({})", ports.join(", "))
    }
}

/// `line_ending` as the config file writes it.
fn line_ending_name(ending: LineEnding) -> &'static str {
    match ending {
        LineEnding::Cr => "cr",
        LineEnding::Lf => "lf",
        LineEnding::Crlf => "crlf",
        LineEnding::None => "none",
    }
}

/// `[server] auth` as the config file writes it.
fn auth_name(auth: AuthMode) -> &'static str {
    match auth {
        AuthMode::Token => "token",
        AuthMode::None => "none",
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::config::TokenAccess;

    #[test]
    fn the_summary_spells_values_as_the_config_file_does() {
        let (_dir, file) = secrets();
        let text = format!(
            "[server]\nlisten = \"127.0.0.1:7301\"\n\
             [ports.sw1]\ndevice = \"/dev/ttyUSB0\"\npreset = \"cisco-ios\"\nbaud = 9600\n\
             [ports.sw2]\ndevice = \"/dev/ttyUSB1\"\nline_ending = \"crlf\"\n{}\
             access = \"write\"\n",
            token_toml("agent", "a")
        );
        let c = parse_in(&file, &text).unwrap_or_else(|e| panic!("{e}"));
        let shown = c.summary().to_string();
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[0], "ports:");
        assert_eq!(
            lines[1],
            format!(
                "  sw1: /dev/ttyUSB0 preset=cisco-ios {} line_ending=cr policy=none",
                c.ports["sw1"].line
            )
        );
        assert!(
            lines[2].starts_with("    watches: crash (critical) \"Unexpected exception"),
            "{shown}"
        );
        assert!(
            lines[3].ends_with(" line_ending=crlf policy=none"),
            "{shown}"
        );
        assert!(
            lines[4].starts_with("    watches: crash (critical) "),
            "{shown}"
        );
        assert_eq!(lines[5], "http: http://127.0.0.1:7301/mcp, auth token");
        assert_eq!(lines[6], "tls: none (plain HTTP, loopback only)");
        assert_eq!(lines[7], "tokens:");
        assert_eq!(
            lines[8],
            "  agent: write access, ports * (secret from a), the policy of each port (sw1 none, sw2 none)"
        );
        assert!(lines[9].starts_with("presets: ") && lines[9].contains("cisco-ios"));
        assert_eq!(
            lines[10],
            "policies: guarded (dangerous approve), locked (dangerous deny), none (dangerous ignore)"
        );
        assert_eq!(lines.len(), 11, "{shown}");
        assert!(shown.ends_with('\n'));
    }

    #[test]
    fn the_summary_shows_each_token_and_port_under_its_policy() {
        let (_dir, file) = secrets();
        let text = format!(
            "[server]\npolicy = \"locked\"\n\
             [policies.cw]\ndeny = [\"reload\"]\nallow = [\"show\", \"ping\"]\n\
             [presets.my-ios]\nextends = \"cisco-ios\"\npolicy = \"guarded\"\n\
             [ports.sw1]\ndevice = \"/dev/ttyUSB0\"\npreset = \"my-ios\"\n\
             [ports.sw2]\ndevice = \"/dev/ttyUSB1\"\npreset = \"my-ios\"\npolicy = \"cw\"\n\
             [ports.lab]\ndevice = \"/dev/ttyUSB2\"\n{}\
             ports = [\"sw*\"]\n{}policy = \"none\"\n",
            token_toml("agent", "a").replace("ports = [\"*\"]\n", ""),
            token_toml("ops", "b")
        );
        let c = parse_in(&file, &text).unwrap_or_else(|e| panic!("{e}"));
        let shown = c.summary().to_string();
        assert!(
            shown.contains(" preset=my-ios ") && shown.contains("policy=guarded\n"),
            "{shown}"
        );
        assert!(
            shown.contains("  sw2: /dev/ttyUSB1 preset=my-ios"),
            "{shown}"
        );
        assert!(
            shown.contains("policy=cw\n") && shown.contains("policy=none\n"),
            "{shown}"
        );
        assert!(
            shown.contains("the policy of each port (sw1 guarded, sw2 cw)"),
            "{shown}"
        );
        assert!(shown.contains("(secret from b), policy none\n"), "{shown}");
        assert!(
            shown.contains("callers without a token (stdio, auth none): policy locked\n"),
            "{shown}"
        );
        assert!(
            shown.contains("policies: cw (dangerous approve, deny 1, allow 2), guarded "),
            "{shown}"
        );
    }

    #[test]
    fn an_empty_config_summary_says_there_are_no_ports() {
        let shown = parse("").summary().to_string();
        assert!(shown.starts_with("ports:\n  (none)\npresets: "), "{shown}");
    }

    /// Every name shown is one the config file accepts for that value.
    #[test]
    fn the_names_shown_parse_back_to_the_same_values() {
        for ending in [
            LineEnding::Cr,
            LineEnding::Lf,
            LineEnding::Crlf,
            LineEnding::None,
        ] {
            let text = format!(
                "[ports.a]\ndevice = \"/dev/ttyUSB0\"\nline_ending = \"{}\"\n",
                line_ending_name(ending)
            );
            assert_eq!(parse(&text).ports["a"].line_ending, ending);
        }
        for auth in [AuthMode::Token, AuthMode::None] {
            let text = format!("[server]\nauth = \"{}\"\n", auth_name(auth));
            assert_eq!(parse(&text).server.auth, auth);
        }
        let (_dir, file) = secrets();
        for access in [TokenAccess::Read, TokenAccess::Write, TokenAccess::Admin] {
            let text = format!("{}access = \"{}\"\n", token_toml("a", "a"), access.name());
            let c = parse_in(&file, &text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(c.tokens[0].access, access);
        }
    }
}
