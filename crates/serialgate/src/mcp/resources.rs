//! MCP resources: the whole cleaned output of a `send_command` whose
//! result was cut at `max_output`.

use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, ResourceContents};

use super::args::CLEAN_PIECE;
use super::session::Session;
use crate::clean::{CleanOptions, Cleaner};
use crate::error::shown;
use crate::gateway::Gateway;

/// The URI template of command outputs.
pub const OUTPUT_TEMPLATE: &str = "serialgate://ports/{port}/output/{start}-{end}";

/// The URI of the output of `port` between two offsets.
pub fn output_uri(port: &str, start: u64, end: u64) -> String {
    format!("serialgate://ports/{port}/output/{start}-{end}")
}

fn parse_uri(uri: &str) -> Option<(&str, u64, u64)> {
    let rest = uri.strip_prefix("serialgate://ports/")?;
    let (port, range) = rest.split_once("/output/")?;
    let (start, end) = range.split_once('-')?;
    let (start, end) = (start.parse().ok()?, end.parse().ok()?);
    (start <= end).then_some((port, start, end))
}

/// Reads an output resource: the cleaned bytes of the range.
pub fn read(
    gateway: &Gateway,
    session: &Session,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    let (port_name, start, end) = parse_uri(uri).ok_or_else(|| {
        ErrorData::invalid_params(
            format!("invalid_argument: {} is not {OUTPUT_TEMPLATE}", shown(uri)),
            None,
        )
    })?;
    let gp = gateway.port(port_name).ok_or_else(|| {
        ErrorData::resource_not_found(
            format!(
                "unknown_connection: no port named {}; the URIs of command outputs come from send_command results",
                shown(port_name)
            ),
            None,
        )
    })?;
    let log = gp.port.log();
    let (oldest, head) = (log.oldest(), log.head());
    if start < oldest || end > head {
        return Err(ErrorData::resource_not_found(
            format!(
                "cursor_out_of_range: {start}-{end} is outside the retained range {oldest}-{head} of {port_name}; retention dropped it or it has not arrived"
            ),
            None,
        ));
    }
    let command = session.remembered(port_name, start, end).map(|o| o.command);
    let pagers: Vec<&[u8]> = gp.config.pagers.iter().map(|p| p.as_bytes()).collect();
    let mut cleaner = Cleaner::new(&CleanOptions {
        command: command.as_deref(),
        pagers: &pagers,
    });
    cleaner.reserve((end - start) as usize);
    // Cleaned from the log piece by piece: the raw range is never copied.
    let whole = log.feed_range(start, end, CLEAN_PIECE, |raw| cleaner.feed(raw));
    if !whole {
        return Err(ErrorData::resource_not_found(
            format!(
                "cursor_out_of_range: retention dropped the start of {start}-{end} of {port_name} while it was read"
            ),
            None,
        ));
    }
    let text = cleaner.finish();
    Ok(ReadResourceResult::new(vec![ResourceContents::text(
        text, uri,
    )]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip() {
        assert_eq!(
            parse_uri(&output_uri("core-sw1", 10, 20)),
            Some(("core-sw1", 10, 20))
        );
        assert_eq!(parse_uri("serialgate://ports/a/output/5-2"), None);
        assert_eq!(parse_uri("file:///etc/passwd"), None);
    }
}
