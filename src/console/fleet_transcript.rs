//! A serving gateway fetching the end of another site's port's transcript
//! (or its retained output) from that site, for a person's download in
//! its web view: one request on `serialgate.site.<SITE>.console.transcript`,
//! answered by the site (`fleet_site.rs`) with at most
//! [`MAX_FLEET_TRANSCRIPT`] bytes. Access is decided before, by the web
//! view, on the `site/port` name.

use std::time::Duration;

use super::fleet_feed::RemoteConsoles;
use super::fleet_wire::{MAX_FLEET_TRANSCRIPT, TranscriptAsk};
use crate::error::{ErrorCode, GateError};
use crate::fleet::subjects;
use crate::fleet::wire::{VERSION, one_line};
use crate::mcp::fleet_forward::RemotePort;

/// How long a site may take to read and send a transcript's end.
const TRANSCRIPT_DEADLINE: Duration = Duration::from_secs(10);
/// Longest reason of a site's refusal shown.
const MAX_REASON: usize = 512;

/// The end of `target`'s transcript at its site: the text, and whether it
/// is the transcript (else the output the site retains).
pub async fn transcript_of(
    consoles: &RemoteConsoles,
    target: &RemotePort,
) -> Result<(String, bool), GateError> {
    let fleet = &consoles.fleet;
    let site = &target.site;
    if let Some(directory) = &fleet.directory {
        directory.reachable_port(site, &target.port)?;
    }
    let ask = TranscriptAsk {
        v: VERSION,
        port: target.port.clone(),
    };
    let answer = fleet
        .ask_console(
            format!("{}.transcript", subjects::consoles(site)),
            &ask,
            TRANSCRIPT_DEADLINE,
            &format!("site {site}'s gateway did not send the transcript"),
        )
        .await?;
    let Some((&kind, text)) = answer.payload.split_first() else {
        return Err(GateError::new(
            ErrorCode::PortUnavailable,
            format!("site {site} sent no transcript"),
        ));
    };
    // A site sends no more than this; one that does is cut, not trusted.
    let text = String::from_utf8_lossy(&text[..text.len().min(MAX_FLEET_TRANSCRIPT as usize)]);
    match kind {
        b'T' => Ok((text.into_owned(), true)),
        b'O' => Ok((text.into_owned(), false)),
        _ => Err(GateError::new(
            ErrorCode::PortUnavailable,
            format!("site {site}: {}", one_line(&text, MAX_REASON)),
        )),
    }
}
