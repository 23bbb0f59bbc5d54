//! What an SSH login asks for, read from the user name and the command:
//! `alice` (the port menu), `alice:sw1` (the console-server convention:
//! straight to sw1), `alice:sw1:spy`, or `ssh alice@host sw1` /
//! `sw1 --spy` (an exec of a port name). Anything else as a command is
//! refused: the door runs no programs. Sans I/O.

/// The longest user name or command read (a person and a port name).
pub const MAX_REQUEST: usize = 256;

/// A port a person asked for, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortRequest {
    /// The port's name, as typed.
    pub port: String,
    /// Watch only.
    pub spy: bool,
}

/// The SSH user name split into the person and the port they asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    /// The person's name (`[[people]] name`).
    pub person: String,
    /// `alice:sw1`: the port; `None`: the menu (or the exec's port).
    pub port: Option<PortRequest>,
}

/// Reads `alice`, `alice:sw1` or `alice:sw1:spy`.
pub fn parse_user(user: &str) -> Result<Login, String> {
    if user.len() > MAX_REQUEST {
        return Err(format!("the user name is longer than {MAX_REQUEST} bytes"));
    }
    let mut parts = user.splitn(2, ':');
    let person = parts.next().unwrap_or_default().to_owned();
    if person.is_empty() {
        return Err("the user name has no person before `:`".into());
    }
    let port = match parts.next() {
        None => None,
        Some(rest) => Some(parse_port_words(&rest.replacen(':', " :", 1))?),
    };
    Ok(Login { person, port })
}

/// Reads the command of an exec: a port name, optionally `--spy` (or
/// `:spy` after the name). Anything else is refused, saying what the door
/// accepts.
pub fn parse_exec(command: &[u8]) -> Result<PortRequest, String> {
    if command.len() > MAX_REQUEST {
        return Err(format!(
            "the command is longer than {MAX_REQUEST} bytes; give a port name"
        ));
    }
    let text = std::str::from_utf8(command)
        .map_err(|_| "the command is not UTF-8; give a port name".to_owned())?;
    let text = match text.split_once(':') {
        Some((port, suffix)) => format!("{port} :{suffix}"),
        None => text.to_owned(),
    };
    parse_port_words(&text)
}

/// `sw1`, `sw1 --spy`, `sw1 :spy`.
fn parse_port_words(text: &str) -> Result<PortRequest, String> {
    let mut words = text.split_ascii_whitespace();
    let Some(port) = words.next() else {
        return Err("no port name given".into());
    };
    if !is_port_name(port) {
        return Err(format!(
            "{} is not a port name: this door runs no commands; give a port's name (letters, digits, '_', '.', '-'), optionally --spy",
            crate::error::shown(port)
        ));
    }
    let mut spy = false;
    for word in words {
        match word {
            "--spy" | ":spy" => spy = true,
            other => {
                return Err(format!(
                    "{} is not understood after the port name: only --spy (or :spy) is",
                    crate::error::shown(other)
                ));
            }
        }
    }
    Ok(PortRequest {
        port: port.to_owned(),
        spy,
    })
}

/// A port name as the config allows them: `[A-Za-z0-9][A-Za-z0-9_.-]*`,
/// or at a serving gateway a port of another site, `site/port`, each
/// part such a name.
pub fn is_port_name(name: &str) -> bool {
    match name.split_once('/') {
        Some((site, port)) => is_plain_name(site) && is_plain_name(port),
        None => is_plain_name(name),
    }
}

/// `[A-Za-z0-9][A-Za-z0-9_.-]*`.
fn is_plain_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(name: &str, spy: bool) -> Option<PortRequest> {
        Some(PortRequest {
            port: name.into(),
            spy,
        })
    }

    #[test]
    fn user_names_name_a_person_and_maybe_a_port() {
        assert_eq!(
            parse_user("alice").unwrap(),
            Login {
                person: "alice".into(),
                port: None
            }
        );
        assert_eq!(parse_user("alice:sw1").unwrap().port, port("sw1", false));
        assert_eq!(parse_user("alice:sw1:spy").unwrap().port, port("sw1", true));
        assert!(parse_user(":sw1").is_err());
        assert!(parse_user("alice:").is_err());
        assert!(parse_user("alice:sw1:rw").is_err());
        assert!(parse_user("alice:../etc").is_err());
        assert!(parse_user(&"a".repeat(MAX_REQUEST + 1)).is_err());
    }

    #[test]
    fn an_exec_is_a_port_name_and_nothing_else() {
        assert_eq!(Some(parse_exec(b"sw1").unwrap()), port("sw1", false));
        assert_eq!(Some(parse_exec(b"sw1 --spy").unwrap()), port("sw1", true));
        assert_eq!(Some(parse_exec(b"sw1:spy").unwrap()), port("sw1", true));
        for refused in [
            &b"/bin/sh"[..],
            b"sw1; sh",
            b"sw1 --force",
            b"",
            b"  ",
            b"\xff",
            b"rm -rf /",
        ] {
            assert!(parse_exec(refused).is_err(), "{refused:?}");
        }
        let e = parse_exec(b"/bin/sh").unwrap_err();
        assert!(e.contains("runs no commands"), "{e}");
    }

    #[test]
    fn a_port_of_another_site_is_site_slash_port_and_nothing_more() {
        assert_eq!(
            Some(parse_exec(b"dc1/core-sw1 --spy").unwrap()),
            port("dc1/core-sw1", true)
        );
        assert_eq!(
            parse_user("alice:dc1/core-sw1:spy").unwrap().port,
            port("dc1/core-sw1", true)
        );
        for refused in [&b"dc1/"[..], b"/sw1", b"dc1/sw1/x", b"../sw1", b"dc1/.."] {
            assert!(parse_exec(refused).is_err(), "{refused:?}");
        }
    }
}
