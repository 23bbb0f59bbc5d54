//! Who is calling: the local operator, a loopback caller without auth, a
//! `[[tokens]]` entry or a `[[people]]` entry at the SSH door, with the
//! ports its globs reach. What a caller may
//! do with that is decided in [`super::rules`].

use crate::config::{PersonConfig, Policy, TokenAccess, TokenConfig};

/// Who makes a call.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The token's name, `local` over stdio, `anonymous` without auth.
    pub name: String,
    /// What the caller may do.
    pub access: TokenAccess,
    /// Globs of the port names the caller reaches; `None`: every port.
    ports: Option<Vec<glob::Pattern>>,
    /// The globs as written, for messages.
    port_globs: Vec<String>,
    /// May log in with the ports' stored credentials.
    pub use_credentials: bool,
    /// May switch the ports' outlets (`power`): a token's `power`, or
    /// admin access.
    pub power: bool,
    /// The command policy its writes are judged by (its token's `policy`,
    /// or `[server] policy` for the callers without a token once the door
    /// sets it); `None`: the port's default ([`super::guard`]).
    pub policy: Option<String>,
    /// The command policy a serving gateway sent with a call or a
    /// person's console forwarded through the fleet (its token's or
    /// person's): judged as well as [`Self::policy`] or the port's
    /// default, the stricter winning (`access/guard.rs`).
    pub forwarded_policy: Option<std::sync::Arc<Policy>>,
    /// A person of `[[people]]` (the SSH door), not a token: messages
    /// name them so.
    person: bool,
    /// A `[[tokens]]` entry of this gateway's config, by its name: what a
    /// reload may remove or lower.
    config_token: bool,
    /// May decide lines waiting for a person's approval at a console or
    /// in the web view (a person's or a token's `approve`; admin tokens
    /// and the local operator always may).
    pub may_approve: bool,
    /// What it types at a console is judged by the port's default policy
    /// when it has none of its own, as its MCP calls are: a token, or a
    /// loopback caller without auth, may be an agent. People of
    /// `[[people]]` and the local operator are judged only by their own.
    pub port_default_at_console: bool,
}

impl Caller {
    /// The local operator (stdio, the console socket): every tool on every
    /// port.
    pub fn operator() -> Caller {
        Caller::unrestricted("local")
    }

    /// A caller of a loopback HTTP server with `auth = "none"`: every tool
    /// on every port, like the local operator.
    pub fn anonymous() -> Caller {
        Caller::unrestricted("anonymous")
    }

    fn unrestricted(name: &str) -> Caller {
        Caller {
            name: name.to_owned(),
            access: TokenAccess::Admin,
            ports: None,
            port_globs: vec!["*".to_owned()],
            use_credentials: true,
            power: true,
            policy: None,
            forwarded_policy: None,
            person: false,
            config_token: false,
            may_approve: true,
            port_default_at_console: name != "local",
        }
    }

    /// The caller under `policy` (a door that serves callers without a
    /// token sets `[server] policy` on them this way).
    pub fn with_policy(mut self, policy: Option<String>) -> Caller {
        self.policy = policy;
        self
    }

    /// The holder of a `[[tokens]]` entry. Globs that do not compile (the
    /// config checks them) match nothing.
    pub fn from_token(token: &TokenConfig) -> Caller {
        Caller {
            name: token.name.clone(),
            access: token.access,
            ports: Some(
                token
                    .ports
                    .iter()
                    .filter_map(|g| glob::Pattern::new(g).ok())
                    .collect(),
            ),
            port_globs: token.ports.clone(),
            use_credentials: token.use_credentials || token.access == TokenAccess::Admin,
            power: token.power || token.access == TokenAccess::Admin,
            policy: token.policy.clone(),
            forwarded_policy: None,
            person: false,
            config_token: true,
            may_approve: token.approve || token.access == TokenAccess::Admin,
            port_default_at_console: true,
        }
    }

    /// A person of `[[people]]` who authenticated at the SSH door: their
    /// globs and access, no stored credentials (a person types their own
    /// logins), their own policy (never the port's default), and approval
    /// only with `approve`.
    pub fn from_person(person: &PersonConfig) -> Caller {
        Caller {
            name: person.name.clone(),
            access: person.access,
            ports: Some(
                person
                    .ports
                    .iter()
                    .filter_map(|g| glob::Pattern::new(g).ok())
                    .collect(),
            ),
            port_globs: person.ports.clone(),
            use_credentials: false,
            power: false,
            policy: person.policy.clone(),
            forwarded_policy: None,
            person: true,
            config_token: false,
            may_approve: person.approve,
            port_default_at_console: false,
        }
    }

    /// A token of another gateway whose call came through the fleet: the
    /// serving gateway authorised it for this site's port by the token's
    /// globs, so here it reaches every port at the token's access. Named
    /// `token@gateway`, so that the audit trail and the write hold say
    /// which token and which door. No approvals are decided through it.
    pub fn via_fleet(
        token: &str,
        gateway: &str,
        access: TokenAccess,
        use_credentials: bool,
    ) -> Caller {
        Caller {
            name: format!(
                "{}@{}",
                crate::error::label(token),
                crate::error::label(gateway)
            ),
            access,
            ports: None,
            port_globs: vec!["*".to_owned()],
            use_credentials: use_credentials || access == TokenAccess::Admin,
            // The fleet does not carry the `power` right yet: an admin
            // token switches outlets through it, no other.
            power: false,
            policy: None,
            forwarded_policy: None,
            person: false,
            config_token: false,
            may_approve: false,
            port_default_at_console: true,
        }
    }

    /// The caller with the right to decide lines waiting for approval as
    /// its serving gateway granted it (a person's console through the
    /// fleet: their token's or `[[people]]` entry's `approve`).
    pub fn approving(mut self, may: bool) -> Caller {
        self.may_approve = may;
        self
    }

    /// The caller of a forwarded call under the policy its serving
    /// gateway sent (its token's), judged besides the port's own.
    pub fn with_forwarded_policy(mut self, policy: Option<Policy>) -> Caller {
        self.forwarded_policy = policy.map(std::sync::Arc::new);
        self
    }

    /// Whether the caller reaches the port named `name`.
    pub fn may_use_port(&self, name: &str) -> bool {
        let options = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: false,
        };
        match &self.ports {
            None => true,
            Some(globs) => globs.iter().any(|g| g.matches_with(name, options)),
        }
    }

    /// Whether `other` may do exactly what this caller may (a re-check
    /// after a reload finds nothing to change).
    pub(crate) fn same_rights(&self, other: &Caller) -> bool {
        self.name == other.name
            && self.access == other.access
            && self.port_globs == other.port_globs
            && self.use_credentials == other.use_credentials
            && self.power == other.power
            && self.policy == other.policy
            && self.forwarded_policy == other.forwarded_policy
            && self.person == other.person
            && self.may_approve == other.may_approve
    }

    /// The caller as messages name it: `token "name"`, or `person
    /// "name"` at the SSH door.
    pub(crate) fn who(&self) -> String {
        if self.person {
            format!("person {:?}", self.name)
        } else {
            format!("token {:?}", self.name)
        }
    }

    /// Whether the caller is a `[[tokens]]` entry of this gateway's
    /// config (not the local operator, a person or a token of another
    /// gateway): a reload that removes it or takes its write access away
    /// ends its agents' write holds and lines waiting for approval
    /// ([`crate::gateway::Gateway::reload`]).
    pub fn is_config_token(&self) -> bool {
        self.config_token
    }

    /// The caller's port globs as written, for messages.
    pub(crate) fn globs(&self) -> String {
        self.port_globs.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TokenSecret;

    #[test]
    fn globs_select_ports() {
        let c = Caller::from_token(&TokenConfig {
            name: "t".into(),
            secret_file: "/s".into(),
            secret: TokenSecret::new(b"x"),
            ports: vec!["core-*".into(), "lab-rtr1".into()],
            access: TokenAccess::Read,
            use_credentials: false,
            power: false,
            policy: None,
            approve: false,
        });
        assert!(c.may_use_port("core-sw1"));
        assert!(c.may_use_port("lab-rtr1"));
        assert!(!c.may_use_port("lab-rtr2"));
        assert!(!c.may_use_port("edge-core-1"));
        assert!(Caller::operator().may_use_port("anything"));
    }

    #[test]
    fn only_a_token_with_the_approve_right_or_admin_decides_approvals() {
        let token = |access, approve| {
            Caller::from_token(&TokenConfig {
                name: "t".into(),
                secret_file: "/s".into(),
                secret: TokenSecret::new(b"x"),
                ports: vec!["*".into()],
                access,
                use_credentials: false,
                power: false,
                policy: None,
                approve,
            })
            .may_approve
        };
        assert!(!token(TokenAccess::Write, false));
        assert!(token(TokenAccess::Write, true));
        assert!(token(TokenAccess::Admin, false));
        assert!(Caller::operator().may_approve);
    }
}
