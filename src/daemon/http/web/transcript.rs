//! `GET /web/console/{port}/transcript`: a port's transcript as a download,
//! within the token's port globs (a port outside them is `404`, like one
//! that does not exist). With `[server] log_dir` it is the transcript file
//! (timestamps, what was sent marked, secrets redacted; the last
//! [`MAX_DOWNLOAD_BYTES`]); without, the output the daemon still retains,
//! as text, and the file name says `output` instead of `transcript`.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Extension, Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::state::WebState;
use crate::access::Caller;

/// The most of a transcript's end one download carries.
pub const MAX_DOWNLOAD_BYTES: u64 = 16 << 20;
/// Longest port name looked up.
const MAX_NAME: usize = 128;

/// Serves the download.
pub async fn download(
    State(state): State<WebState>,
    Extension(caller): Extension<Arc<Caller>>,
    Path(name): Path<String>,
) -> Response {
    let found = (name.len() <= MAX_NAME && caller.may_use_port(&name))
        .then(|| state.gateway.port(&name))
        .flatten();
    let Some(gp) = found else {
        return (StatusCode::NOT_FOUND, "no such port for this token\n").into_response();
    };
    let port = gp.port;
    let safe: String = port
        .name()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let (text, file) = match port.transcript() {
        Some(transcript) => {
            transcript
                .wait_written(port.log().head(), 0, Duration::from_millis(500))
                .await;
            let reading = transcript.clone();
            match tokio::task::spawn_blocking(move || reading.tail(MAX_DOWNLOAD_BYTES)).await {
                Ok(Ok(text)) => (text, format!("{safe}-transcript.txt")),
                Ok(Err(e)) => {
                    tracing::warn!(port = %port.name(), "web transcript download failed: {e}");
                    return (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "the transcript could not be read; the daemon's log says why\n",
                    )
                        .into_response();
                }
                Err(_) => {
                    return (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "reading the transcript failed\n",
                    )
                        .into_response();
                }
            }
        }
        None => {
            let log = port.log();
            let bytes = log.copy_range(log.oldest(), log.head());
            (crate::log::lossy_text(&bytes), format!("{safe}-output.txt"))
        }
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
