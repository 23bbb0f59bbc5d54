//! `send_command`'s `parse`: the clean output through the TextFSM template
//! for the port's platform and the command ([`crate::parse`]), off the
//! async threads; the text result stays as it is. `read_output`'s `parse`
//! cleans a page of the log as a command's reply first ([`clean_page`]),
//! and an `expect` step's the output before its expected text
//! ([`clean_reply`]).

use std::sync::Arc;

use serde_json::Value;

use super::session::Connection;
use crate::clean::{CleanOptions, clean_output};
use crate::config::{PortConfig, ServerConfig};
use crate::parse::{self, Outcome};

/// What `parse: true` adds to a result: `parsed` (records, or null),
/// `template` and `parse_note`.
#[derive(Debug, Default)]
pub struct ParsedFields {
    /// The records, or `Value::Null` with `note` saying why.
    pub parsed: Option<Value>,
    /// The template's file name.
    pub template: Option<String>,
    /// Why `parsed` is null.
    pub note: Option<String>,
}

impl From<Outcome> for ParsedFields {
    fn from(o: Outcome) -> Self {
        ParsedFields {
            parsed: Some(o.parsed.map_or(Value::Null, Value::Array)),
            template: o.template,
            note: o.note,
        }
    }
}

/// Parses `clean`, the output of `command` on the port `port`, with the
/// user's templates of `server` before the shipped ones.
pub async fn parse_output(
    server: &ServerConfig,
    port: &PortConfig,
    command: &str,
    clean: &str,
) -> ParsedFields {
    let Some(platform) = port.platform.clone() else {
        return Outcome::none(
            None,
            format!(
                "preset {} names no platform, so no template applies: set platform (e.g. \"cisco_ios\") in a preset that extends it",
                crate::error::shown(&port.preset)
            ),
        )
        .into();
    };
    if clean.len() > parse::records::MAX_PARSE_BYTES {
        // Refused before it is copied for the parsing thread.
        return Outcome::none(
            None,
            format!(
                "the output is {} bytes, more than the {} a parse takes: narrow the command (e.g. `| include`, one interface) and parse that",
                clean.len(),
                parse::records::MAX_PARSE_BYTES
            ),
        )
        .into();
    }
    let user = Arc::clone(&server.templates);
    let command = command.to_owned();
    let text = clean.to_owned();
    let work = crate::task::spawn_blocking(move || match parse::find(&user, &platform, &command) {
        Ok(found) => parse::parse_output(&found, &text),
        Err(why) => Outcome::none(None, why),
    });
    // The parse looks at its own deadline between pieces; this one is the
    // caller's, past a piece the engine could not interrupt.
    match tokio::time::timeout(parse::records::PARSE_DEADLINE * 2, work).await {
        Ok(Ok(outcome)) => outcome.into(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "a parse failed");
            Outcome::none(
                None,
                "the parse failed; the text output is whole".to_owned(),
            )
            .into()
        }
        Err(_) => Outcome::none(
            None,
            format!(
                "the parse ran past its {} s deadline; narrow the command",
                parse::records::PARSE_DEADLINE.as_secs()
            ),
        )
        .into(),
    }
}

/// A page of the log read as `command`'s reply, as send_command cleans
/// one: up to the connection's prompt (its last match, the prompt after
/// the output), without the echo and the pager prompts.
pub fn clean_page(conn: &Connection, command: &str, raw: &[u8]) -> String {
    let prompt = &conn.profile.prompt;
    let mut end = raw.len();
    let mut at = 0;
    while at < raw.len() {
        match prompt.find_at(raw, at) {
            Some((start, stop)) => {
                end = start;
                at = stop.max(start + 1);
            }
            None => break,
        }
    }
    clean_reply(conn, command, &raw[..end])
}

/// `raw`, the reply to `command` up to its prompt, cleaned as
/// send_command cleans one: no echo, no pager prompts.
pub fn clean_reply(conn: &Connection, command: &str, raw: &[u8]) -> String {
    let pagers: Vec<&[u8]> = conn.profile.pagers.iter().map(Vec::as_slice).collect();
    clean_output(
        raw,
        &CleanOptions {
            command: Some(command),
            pagers: &pagers,
        },
    )
}
