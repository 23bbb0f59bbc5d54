//! The errors a tool call can end with: one stable code each (the list in
//! docs/ARCHITECTURE.md),
//! mapped to MCP results in one place (`mcp/`).

use std::fmt;

/// The stable codes agents match on; the text after the code says what to
/// do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    /// No connected port by that name in this session.
    UnknownConnection,
    /// An argument is missing, of the wrong type, or out of range.
    InvalidArgument,
    /// A prompt or trigger regex does not compile.
    BadRegex,
    /// The device cannot be opened (missing, busy elsewhere, not allowed).
    PortUnavailable,
    /// The device went away while the call used it.
    PortLost,
    /// Another session holds the port for writing, or the caller (or the
    /// site it calls through the fleet) has as many calls in flight as it
    /// may: the message says which, and to call again later.
    Busy,
    /// The caller may not do this.
    Forbidden,
    /// A cursor beyond the newest byte.
    CursorOutOfRange,
    /// A cursor inside a multi-byte UTF-8 character.
    CursorSplitsUtf8,
    /// A deadline passed before the operation could finish.
    Timeout,
    /// The caller's command policy does not let this be sent, or a person
    /// denied it, or nobody approved it in time: the message names the
    /// line, the rule and the policy (or who denied it), and what the
    /// caller may do (ask a person, who may run it at the console).
    Denied,
}

impl ErrorCode {
    /// Every code, in the order the agent's instructions list them.
    pub const ALL: [ErrorCode; 11] = [
        ErrorCode::UnknownConnection,
        ErrorCode::InvalidArgument,
        ErrorCode::BadRegex,
        ErrorCode::PortUnavailable,
        ErrorCode::PortLost,
        ErrorCode::Busy,
        ErrorCode::Forbidden,
        ErrorCode::CursorOutOfRange,
        ErrorCode::CursorSplitsUtf8,
        ErrorCode::Timeout,
        ErrorCode::Denied,
    ];

    /// The code as it starts an error's text, e.g. `port_lost`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::UnknownConnection => "unknown_connection",
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::BadRegex => "bad_regex",
            ErrorCode::PortUnavailable => "port_unavailable",
            ErrorCode::PortLost => "port_lost",
            ErrorCode::Busy => "busy",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::CursorOutOfRange => "cursor_out_of_range",
            ErrorCode::CursorSplitsUtf8 => "cursor_splits_utf8",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Denied => "denied",
        }
    }
}

/// Most characters of a caller's string an error message repeats.
pub const SHOWN_MAX: usize = 80;

/// A caller's string as an error message shows it: quoted like `{:?}`, and
/// cut to [`SHOWN_MAX`] characters with its size when longer, so that an
/// error never echoes a huge argument back to the agent.
pub fn shown(s: &str) -> String {
    match s.char_indices().nth(SHOWN_MAX) {
        None => format!("{s:?}"),
        Some((at, _)) => format!("{:?}… ({} bytes)", &s[..at], s.len()),
    }
}

/// Most characters of a client-chosen name (its MCP `clientInfo.name`)
/// that are stored and logged.
pub const LABEL_MAX: usize = 64;

/// A client-chosen name as the daemon stores and logs it (the audit trail,
/// port events, the write holder in `busy` errors): printable ASCII only,
/// anything else (newlines, escapes, other scripts) as `?`, and cut to
/// [`LABEL_MAX`] characters, so that a name can neither forge a log line
/// nor grow every record that carries it.
pub fn label(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(LABEL_MAX)
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            }
        })
        .collect();
    if s.chars().nth(LABEL_MAX).is_some() {
        out.push('…');
    }
    out
}

/// Who holds a port's write hold, carried by a `busy` error so that each
/// door phrases what its caller does about it: an agent connects again
/// with `take_over`, a person forces the hold in their console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldBy {
    /// The port's name.
    pub port: String,
    /// The holder: session, client and token (or person).
    pub who: String,
    /// Since when (RFC 3339).
    pub since: String,
}

/// A failed operation: a code and a message that says what to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateError {
    /// The stable code.
    pub code: ErrorCode,
    /// What went wrong and what to do about it.
    pub message: String,
    /// For a write refused because another session holds the port: who,
    /// and since when. The message then names them but leaves the hint
    /// (how to take the hold) to the door the caller came through.
    pub held_by: Option<Box<HeldBy>>,
}

impl GateError {
    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> GateError {
        GateError {
            code,
            message: message.into(),
            held_by: None,
        }
    }

    /// `busy`: the port is held for writing by someone else; the caller
    /// can still read it.
    pub fn held(held_by: HeldBy) -> GateError {
        GateError {
            code: ErrorCode::Busy,
            message: format!(
                "{} is held for writing by {} since {}; you can still read it",
                held_by.port, held_by.who, held_by.since
            ),
            held_by: Some(Box::new(held_by)),
        }
    }

    /// The error with `hint` appended to its message when it is a
    /// [`GateError::held`] one (how the caller's door takes the hold).
    pub fn with_hold_hint(mut self, hint: &str) -> GateError {
        if self.held_by.is_some() {
            self.message = format!("{}. {hint}", self.message);
        }
        self
    }

    /// Shorthand for [`ErrorCode::InvalidArgument`].
    pub fn invalid(message: impl Into<String>) -> GateError {
        GateError::new(ErrorCode::InvalidArgument, message)
    }
}

impl fmt::Display for GateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for GateError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_listed_once() {
        // Adding a variant breaks this match until it is listed in ALL.
        let position = |code: ErrorCode| match code {
            ErrorCode::UnknownConnection => 0,
            ErrorCode::InvalidArgument => 1,
            ErrorCode::BadRegex => 2,
            ErrorCode::PortUnavailable => 3,
            ErrorCode::PortLost => 4,
            ErrorCode::Busy => 5,
            ErrorCode::Forbidden => 6,
            ErrorCode::CursorOutOfRange => 7,
            ErrorCode::CursorSplitsUtf8 => 8,
            ErrorCode::Timeout => 9,
            ErrorCode::Denied => 10,
        };
        for (i, code) in ErrorCode::ALL.into_iter().enumerate() {
            assert_eq!(position(code), i, "{}", code.as_str());
        }
    }

    #[test]
    fn a_hold_hint_goes_only_on_a_held_port() {
        let held = GateError::held(HeldBy {
            port: "sw1".into(),
            who: "session 3".into(),
            since: "2026-01-01T00:00:00Z".into(),
        });
        assert_eq!(held.code, ErrorCode::Busy);
        let hinted = held.with_hold_hint("To write, take it");
        assert!(
            hinted
                .message
                .ends_with("you can still read it. To write, take it"),
            "{hinted}"
        );
        let other = GateError::new(ErrorCode::Busy, "a transfer runs");
        assert_eq!(other.clone().with_hold_hint("x"), other);
    }

    #[test]
    fn labels_are_short_and_printable() {
        assert_eq!(label("claude-code"), "claude-code");
        assert_eq!(label("x\nINFO forged\x1b[0m"), "x?INFO forged?[0m");
        let long = "n".repeat(1 << 20);
        assert_eq!(label(&long), format!("{}…", "n".repeat(LABEL_MAX)));
        assert_eq!(label("Zürich"), "Z?rich");
    }
}
