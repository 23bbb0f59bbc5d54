//! The daemon's log: `tracing` to stderr (stdout belongs to MCP over
//! stdio), one line per event whatever the event holds, and never a line
//! of rmcp's below `warn`.
//!
//! - **One event, one line.** Tool names, client names, connection names
//!   and device paths come from clients; a newline in one of them would let
//!   a client write a whole fake log line. The writer escapes every control
//!   character of an event (`\n` as `\\n`, ESC as `\\x1b`…) except the line
//!   break that ends it. Call sites quote client strings as well (`{:?}`);
//!   this makes the guarantee hold for the ones they miss.
//! - **rmcp stays at `warn`.** rmcp logs whole requests (tool arguments, the
//!   text of `sensitive` expect steps among them) at `debug` and `info`. A
//!   filter of its own, applied after `SERIALGATE_LOG`'s, holds every rmcp
//!   target at `warn` or above, so no directive (`rmcp::service=trace`)
//!   can bring them back.

use std::io::{self, Write};

use tracing::Level;
use tracing_subscriber::filter::{EnvFilter, FilterFn};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

/// Installs the log: `SERIALGATE_LOG` (an `EnvFilter`, default `info`),
/// formatted to stderr through [`OneLineStderr`], rmcp capped at `warn`.
pub fn init() {
    let filter =
        EnvFilter::try_from_env("SERIALGATE_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let layer = fmt::layer()
        .with_writer(OneLineStderr)
        .with_ansi(false)
        .with_filter(filter)
        .with_filter(FilterFn::new(|meta| {
            !holds_back(meta.target(), *meta.level())
        }));
    tracing_subscriber::registry().with(layer).init();
}

/// Whether an event of `target` at `level` is kept out of the log: rmcp's
/// below `warn`.
fn holds_back(target: &str, level: Level) -> bool {
    let rmcp = target == "rmcp" || target.starts_with("rmcp::");
    rmcp && level > Level::WARN
}

/// Makes [`OneLineWriter`]s on stderr.
#[derive(Clone, Copy, Debug, Default)]
pub struct OneLineStderr;

impl<'a> MakeWriter<'a> for OneLineStderr {
    type Writer = OneLineWriter<io::Stderr>;

    fn make_writer(&'a self) -> Self::Writer {
        OneLineWriter(io::stderr())
    }
}

/// Writes each formatted event (the formatter hands over one whole event
/// per write) with its control characters escaped, but for the final line
/// break.
pub struct OneLineWriter<W: Write>(pub W);

impl<W: Write> Write for OneLineWriter<W> {
    fn write(&mut self, event: &[u8]) -> io::Result<usize> {
        self.0.write_all(&one_line(event))?;
        Ok(event.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// `event` with every control character escaped except a final `\n`.
fn one_line(event: &[u8]) -> Vec<u8> {
    let (body, end) = match event.strip_suffix(b"\n") {
        Some(body) => (body, &b"\n"[..]),
        None => (event, &b""[..]),
    };
    let mut out = Vec::with_capacity(event.len() + 8);
    for &b in body {
        match b {
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.push(b'\t'),
            0..0x20 | 0x7f => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.extend_from_slice(end);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_stays_on_one_line() {
        let forged = b"INFO serialgate::mcp: client x\n2026-12-01T00:00:00Z  INFO serialgate::mcp: token \"admin\" calls\x1b[2K\r\n";
        let out = one_line(forged);
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
        assert!(
            out.ends_with(b"calls\\x1b[2K\\r\n"),
            "{}",
            out.escape_ascii()
        );
        assert!(!out.contains(&0x1b));
        assert_eq!(one_line("é ü\tok\n".as_bytes()), "é ü\tok\n".as_bytes());
    }

    #[test]
    fn rmcp_is_held_at_warn_whatever_the_target() {
        for target in [
            "rmcp",
            "rmcp::service",
            "rmcp::transport::streamable_http_server",
        ] {
            assert!(holds_back(target, Level::DEBUG), "{target}");
            assert!(holds_back(target, Level::INFO), "{target}");
            assert!(!holds_back(target, Level::WARN), "{target}");
        }
        assert!(!holds_back("rmcpx", Level::DEBUG));
        assert!(!holds_back("serialgate::mcp", Level::TRACE));
    }
}
