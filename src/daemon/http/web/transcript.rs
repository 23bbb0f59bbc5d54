//! `GET /web/console/{port}/transcript`: a port's transcript as a download,
//! within the token's port globs (a port outside them is `404`, like one
//! that does not exist). With `[server] log_dir` it is the transcript file
//! (timestamps, what was sent marked, secrets redacted; the last
//! [`MAX_DOWNLOAD_BYTES`]); without, the output the daemon still retains,
//! as text, and the file name says `output` instead of `transcript`. Either
//! is read a piece at a time as the client takes it: a client that does
//! not read holds a connection, never a copy of the transcript. A download
//! still streaming when its caller is revoked (its token removed, lowered
//! to metrics or narrowed off the port, its browser login ended) is cut
//! off there: the connection closes before the rest is sent. At a serving
//! gateway, another site's port (`site/port`) comes from its site, its
//! last 960 KiB, sent whole.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

use super::state::WebState;
use crate::access::Caller;
use crate::access::standing::Standing;
use crate::port::tail_stream::Pieces;

/// The most of a transcript's end one download carries.
pub const MAX_DOWNLOAD_BYTES: u64 = 16 << 20;
/// Longest port name looked up.
const MAX_NAME: usize = 128;

/// Serves the download.
pub async fn download(
    State(state): State<WebState>,
    Extension(caller): Extension<Arc<Caller>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let reachable = name.len() <= MAX_NAME && caller.may_use_port(&name);
    let found = reachable.then(|| state.gateway.port(&name)).flatten();
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let tail = match found {
        Some(gp) => gp
            .port
            .tail_pieces(MAX_DOWNLOAD_BYTES)
            .await
            .map(|(pieces, transcript)| {
                let standing = state.standing(&caller, &headers);
                let pieces = until_revoked(pieces, standing, name.clone());
                (Body::from_stream(pieces), transcript)
            })
            .map_err(|why| (StatusCode::INTERNAL_SERVER_ERROR, format!("{why}\n"))),
        // Another site's port (`site/port`): its site sends the end.
        // One its site never announced is `404`, as a local one that does
        // not exist.
        None => match crate::mcp::fleet_forward::split(&name)
            .filter(|_| reachable)
            .zip(crate::console::fleet_feed::serving())
            .filter(|(target, consoles)| {
                consoles
                    .fleet
                    .directory
                    .as_ref()
                    .is_some_and(|d| d.announced(&target.site, &target.port))
            }) {
            Some((target, consoles)) => {
                crate::console::fleet_transcript::transcript_of(consoles, &target)
                    .await
                    .map(|(text, transcript)| (Body::from(text), transcript))
                    .map_err(|e| (StatusCode::BAD_GATEWAY, format!("{e}\n")))
            }
            None => Err((
                StatusCode::NOT_FOUND,
                "no such port for this token\n".to_owned(),
            )),
        },
    };
    let (text, file) = match tail {
        Ok((text, true)) => (text, format!("{safe}-transcript.txt")),
        Ok((text, false)) => (text, format!("{safe}-output.txt")),
        Err(refused) => return refused.into_response(),
    };
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{file}\""))
        .unwrap_or_else(|_| HeaderValue::from_static("attachment"));
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        text,
    )
        .into_response()
}

/// `pieces` until they end, or until `standing` says its caller may no
/// longer read `port`: then one error, which closes the connection before
/// the body's end, so the client sees a cut-off download, not a whole one.
fn until_revoked(pieces: Pieces, mut standing: Standing, port: String) -> Pieces {
    let revoked = Box::pin(async move {
        loop {
            match standing.changed().await {
                Err(why) => return why,
                Ok(_) if !standing.caller().may_use_port(&port) => {
                    return format!(
                        "token {:?} no longer reaches port {port}",
                        standing.caller().name
                    );
                }
                Ok(_) => {}
            }
        }
    });
    futures_util::stream::unfold(Some((pieces, revoked)), |state| async move {
        let (mut pieces, mut revoked) = state?;
        tokio::select! {
            biased;
            why = &mut revoked => {
                tracing::info!("a transcript download was cut off: {why}");
                Some((Err(std::io::Error::other(why)), None))
            }
            piece = pieces.next() => piece.map(|piece| (piece, Some((pieces, revoked)))),
        }
    })
    .boxed()
}
