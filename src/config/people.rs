//! The engineers who reach ports over SSH: the `[[people]]` entries, what
//! each may do, and the public keys of their `authorized_keys` files, read
//! from files only the daemon's user owns and may change.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use russh::keys::{HashAlg, PublicKey};
use serde::Serialize;

use super::access::TokenAccess;
use super::checks::{check_globs, next_to_config};
use super::diagnostics::{ConfigError, Source};
use super::policies::{Policy, check_policy_name};
use super::raw::RawPerson;
use super::tokens::read_small_file;

/// Largest `authorized_keys` file read: a few keys of a few hundred bytes.
const MAX_AUTHORIZED_KEYS_FILE: u64 = 64 * 1024;

/// One `[[people]]` entry: an engineer at the SSH door.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PersonConfig {
    /// The name they give as the SSH user (`ssh alice@host`), shown in
    /// logs, the audit trail and `busy` errors.
    pub name: String,
    /// Their `authorized_keys` file (relative: next to the config).
    pub authorized_keys: PathBuf,
    /// The public keys read from it, one per line.
    #[serde(skip)]
    pub keys: Vec<PublicKey>,
    /// Globs of port names they reach.
    pub ports: Vec<String>,
    /// What they may do there (`read`, `write`, `admin`).
    pub access: TokenAccess,
    /// Whether they may decide lines waiting for a person's approval.
    pub approve: bool,
    /// The command policy the lines they type are judged by; `None`: they
    /// are not judged (people are under no port's default policy).
    pub policy: Option<String>,
}

impl PersonConfig {
    /// Whether `key` is one of this person's keys.
    pub fn has_key(&self, key: &PublicKey) -> bool {
        self.keys.iter().any(|k| k.key_data() == key.key_data())
    }

    /// The SHA256 fingerprints of their keys, as `ssh-keygen -l` shows them.
    pub fn fingerprints(&self) -> Vec<String> {
        self.keys
            .iter()
            .map(|k| k.fingerprint(HashAlg::Sha256).to_string())
            .collect()
    }
}

/// Checks the `[[people]]` entries and reads their keys.
pub(super) fn resolve_people(
    raw: Vec<RawPerson>,
    policies: &BTreeMap<String, Policy>,
    src: &Source,
) -> Result<Vec<PersonConfig>, ConfigError> {
    let mut names = BTreeSet::new();
    let mut people = Vec::new();
    for (i, p) in raw.into_iter().enumerate() {
        let path = format!("people[{i}]");
        let name = p.name.get_ref();
        check_person_name(name)
            .map_err(|e| src.error(p.name.span(), format!("{path}.name: {e}")))?;
        if !names.insert(name.clone()) {
            return Err(src.error(
                p.name.span(),
                format!("{path}.name: another person is already named {name:?}"),
            ));
        }
        if p.ports.get_ref().is_empty() {
            return Err(src.error(
                p.ports.span(),
                format!("{path}.ports: it is empty, so they reach no port; list globs of port names, e.g. [\"core-*\"] or [\"*\"]"),
            ));
        }
        if p.access == TokenAccess::Metrics {
            return Err(src.error(
                p.name.span(),
                format!("{path}.access: metrics opens no console; give read, write or admin"),
            ));
        }
        let ports = check_globs(p.ports.into_inner(), &format!("{path}.ports"), src)?;
        let policy = p
            .policy
            .as_ref()
            .map(|name| check_policy_name(name, &format!("{path}.policy"), policies, src))
            .transpose()?;
        let keys = read_authorized_keys(p.authorized_keys.get_ref(), src).map_err(|e| {
            src.error(
                p.authorized_keys.span(),
                format!("{path}.authorized_keys: {e}"),
            )
        })?;
        people.push(PersonConfig {
            name: p.name.into_inner(),
            authorized_keys: p.authorized_keys.into_inner(),
            keys,
            ports,
            access: p.access,
            approve: p.approve,
            policy,
        });
    }
    Ok(people)
}

/// A person's name is what they type as the SSH user before any `:port`,
/// so it is a plain name: letters, digits, `_`, `.` and `-`.
fn check_person_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("it is empty".into());
    }
    if name.len() > 64 {
        return Err("it is longer than 64 characters".into());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
    {
        return Err(format!(
            "{name:?}: use only letters, digits, '_', '.' and '-' (it is the SSH user, before `:port`)"
        ));
    }
    Ok(())
}

/// Reads an `authorized_keys` file: a regular file, not a link, owned by
/// the daemon's user and writable by nobody else (whoever may change it
/// chooses who gets in), each line a public key without options.
fn read_authorized_keys(file: &Path, src: &Source) -> Result<Vec<PublicKey>, String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let path = next_to_config(file, src);
    let (bytes, meta) = read_small_file(&path, MAX_AUTHORIZED_KEYS_FILE, "authorized_keys")
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{} may be read or changed by other users than its owner (mode {mode:o}): chmod 600 {}",
            path.display(),
            path.display()
        ));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!(
            "{} is owned by uid {}, not by the user serialgate runs as (uid {me}): chown it to that user",
            path.display(),
            meta.uid()
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{} is not text; is it the right file?", path.display()))?;
    let mut keys = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let entry = line
            .parse::<russh::keys::ssh_key::authorized_keys::Entry>()
            .map_err(|e| format!("{} line {}: not a public key ({e})", path.display(), n + 1))?;
        if !entry.config_opts().is_empty() {
            return Err(format!(
                "{} line {}: options before the key (command=, from=, ...) are not supported; remove them (what a person may do is set by their [[people]] entry)",
                path.display(),
                n + 1
            ));
        }
        keys.push(entry.public_key().clone());
    }
    if keys.is_empty() {
        return Err(format!(
            "{} holds no public key; put the person's key in it (e.g. their ~/.ssh/id_ed25519.pub)",
            path.display()
        ));
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::access::Caller;

    const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop";

    fn person(keys_file: &str, extra: &str) -> String {
        format!(
            "[[people]]\nname = \"alice\"\nauthorized_keys = \"{keys_file}\"\nports = [\"core-*\"]\naccess = \"write\"\n{extra}"
        )
    }

    #[test]
    fn a_person_is_read_with_her_keys_and_becomes_a_caller() {
        let (dir, file) = secrets();
        write_private(
            &dir.path().join("alice.keys"),
            &format!("# laptop\n{KEY}\n\n"),
        );
        let c = parse_in(&file, &person("alice.keys", "approve = true\n")).unwrap();
        let alice = &c.people[0];
        assert_eq!(alice.keys.len(), 1);
        assert!(alice.approve);
        assert!(alice.fingerprints()[0].starts_with("SHA256:"));
        let caller = Caller::from_person(alice);
        assert!(caller.may_use_port("core-sw1") && !caller.may_use_port("lab-r1"));
        assert_eq!(caller.who(), "person \"alice\"");
        assert!(caller.may_approve && !caller.use_credentials);
        let summary = c.summary().to_string();
        assert!(
            summary.contains(
                "alice: write access, ports core-*, 1 key(s) from alice.keys, may approve, no policy"
            ),
            "{summary}"
        );
    }

    #[test]
    fn a_person_names_the_policy_her_typing_is_judged_by() {
        let (dir, file) = secrets();
        write_private(&dir.path().join("alice.keys"), &format!("{KEY}\n"));
        let c = parse_in(&file, &person("alice.keys", "policy = \"locked\"\n")).unwrap();
        assert_eq!(c.people[0].policy.as_deref(), Some("locked"));
        let caller = Caller::from_person(&c.people[0]);
        assert_eq!(caller.policy.as_deref(), Some("locked"));
        // No port's default reaches a person: only what her entry names.
        assert!(!caller.port_default_at_console);
        assert!(c.summary().to_string().contains(", policy locked"));
        let e = parse_in(&file, &person("alice.keys", "policy = \"lockd\"\n")).unwrap_err();
        assert!(
            e.message
                .contains("people[0].policy: no policy is named \"lockd\""),
            "{e}"
        );
        assert!(e.to_string().contains(":6:"), "{e}");
    }

    #[test]
    fn keys_others_may_change_options_and_empty_files_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, file) = secrets();
        let keys = dir.path().join("alice.keys");
        write_private(&keys, &format!("{KEY}\n"));
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = parse_in(&file, &person("alice.keys", "")).unwrap_err();
        assert!(e.message.contains("(mode 644): chmod 600"), "{e}");
        write_private(&keys, &format!("command=\"/bin/sh\" {KEY}\n"));
        let e = parse_in(&file, &person("alice.keys", "")).unwrap_err();
        assert!(e.message.contains("options before the key"), "{e}");
        write_private(&keys, "# nothing\n");
        let e = parse_in(&file, &person("alice.keys", "")).unwrap_err();
        assert!(e.message.contains("holds no public key"), "{e}");
        write_private(&keys, "not a key\n");
        let e = parse_in(&file, &person("alice.keys", "")).unwrap_err();
        assert!(e.message.contains("line 1: not a public key"), "{e}");
        write_private(&keys, &format!("{KEY}\n"));
        let e = parse_in(
            &file,
            &person("alice.keys", "access = \"metrics\"\n").replace("access = \"write\"\n", ""),
        )
        .unwrap_err();
        assert!(e.message.contains("metrics opens no console"), "{e}");
        let e = parse_in(
            &file,
            &person("alice.keys", "").replace("\"alice\"", "\"al ice\""),
        )
        .unwrap_err();
        assert!(e.message.contains("people[0].name"), "{e}");
    }

    #[test]
    fn ssh_listen_needs_a_state_dir() {
        let e = error("[server]\nssh_listen = \"127.0.0.1:2222\"\n");
        assert!(
            e.contains("server.ssh_listen") && e.contains("state_dir"),
            "{e}"
        );
    }
}
