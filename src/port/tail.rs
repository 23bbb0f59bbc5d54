//! A port's recent output as a person downloads it: with `[server]
//! log_dir`, the end of its transcript file (timestamps, what was sent
//! marked, secrets redacted), once what the port has received is written
//! there; without, the output the daemon still retains, as text. The web
//! view serves it for its own ports, and a site for a serving gateway's.

use std::time::Duration;

use super::Port;

/// How long the transcript may take to catch up with what arrived.
const CATCH_UP: Duration = Duration::from_millis(500);

/// What a download holds.
pub struct Tail {
    /// The text.
    pub text: String,
    /// Whether it is the transcript (else the retained output).
    pub transcript: bool,
}

impl Port {
    /// The last `max` bytes of the port's transcript, or its retained
    /// output without one; `Err` says why it could not be read (the
    /// daemon's log says more).
    pub async fn tail(&self, max: u64) -> Result<Tail, String> {
        let Some(transcript) = self.transcript() else {
            let log = self.log();
            let bytes =
                log.copy_range(log.head().saturating_sub(max).max(log.oldest()), log.head());
            return Ok(Tail {
                text: crate::log::lossy_text(&bytes),
                transcript: false,
            });
        };
        transcript
            .wait_written(self.log().head(), 0, CATCH_UP)
            .await;
        let reading = transcript.clone();
        match tokio::task::spawn_blocking(move || reading.tail(max)).await {
            Ok(Ok(text)) => Ok(Tail {
                text,
                transcript: true,
            }),
            Ok(Err(e)) => {
                tracing::warn!(port = %self.name(), "reading the transcript failed: {e}");
                Err("the transcript could not be read; the daemon's log says why".to_owned())
            }
            Err(_) => Err("reading the transcript failed".to_owned()),
        }
    }
}
