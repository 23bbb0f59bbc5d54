//! A port's recent output as a person downloads it: with `[server]
//! log_dir`, the end of its transcript file (timestamps, what was sent
//! marked, secrets redacted), once what the port has received is written
//! there; without, the output the daemon still retains, as text. The web
//! view serves it for its own ports, and a site for a serving gateway's.
//! Its last line, as a terminal would leave it, is what the ports page
//! shows of each port, here and (announced) at a serving gateway.

use std::time::Duration;

use super::Port;
use super::tail_stream::{Pieces, file_pieces, log_pieces};

use crate::clean::{CleanOptions, clean_output};
use crate::transcript::Transcript;

/// How long the transcript may take to catch up with what arrived.
const CATCH_UP: Duration = Duration::from_millis(500);
/// Bytes of a port's newest output searched for its last line.
const LAST_LINE_TAIL_BYTES: u64 = 512;
/// Characters of a port's last line kept.
pub const LAST_LINE_CHARS: usize = 160;

/// What a download holds.
pub struct Tail {
    /// The text.
    pub text: String,
    /// Whether it is the transcript (else the retained output).
    pub transcript: bool,
}

impl Port {
    /// The last non-blank line of the port's newest output, as
    /// [`last_line`] reads it.
    pub fn last_line(&self) -> String {
        let log = self.log();
        let head = log.head();
        last_line(&log.copy_range(head.saturating_sub(LAST_LINE_TAIL_BYTES), head))
    }

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
        let text = self
            .read_transcript(transcript, move |t| t.tail(max))
            .await?;
        Ok(Tail {
            text,
            transcript: true,
        })
    }

    /// The last `max` bytes of the port's transcript, or of the output it
    /// retains without one, as text read a piece at a time, and whether it
    /// is the transcript: what a download streams, holding no copy.
    pub async fn tail_pieces(&self, max: u64) -> Result<(Pieces, bool), String> {
        let Some(transcript) = self.transcript() else {
            let log = self.log();
            let to = log.head();
            let from = to.saturating_sub(max).max(log.oldest());
            return Ok((log_pieces(log.clone(), from, to), false));
        };
        let (file, start, len) = self
            .read_transcript(transcript, move |t| t.open_tail(max))
            .await?;
        Ok((file_pieces(file, start, len), true))
    }

    /// `read` of `transcript` on the blocking pool, once what the port has
    /// received is written there (or [`CATCH_UP`] has passed); `Err` says
    /// it could not be read (the daemon's log says why).
    async fn read_transcript<T: Send + 'static>(
        &self,
        transcript: &Transcript,
        read: impl FnOnce(&Transcript) -> std::io::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        transcript
            .wait_written(self.log().head(), 0, CATCH_UP)
            .await;
        let reading = transcript.clone();
        match crate::task::spawn_blocking(move || read(&reading)).await {
            Ok(Ok(read)) => Ok(read),
            Ok(Err(e)) => {
                tracing::warn!(port = %self.name(), "reading the transcript failed: {e}");
                Err("the transcript could not be read; the daemon's log says why".to_owned())
            }
            Err(_) => Err("reading the transcript failed".to_owned()),
        }
    }
}

/// The last non-blank line of `tail` as a terminal would leave it: the
/// output cleaner's terminal stages ([`clean_output`]: escape sequences
/// applied or dropped, a carriage return starting the line over), cut to
/// [`LAST_LINE_CHARS`].
pub fn last_line(tail: &[u8]) -> String {
    clean_output(tail, &CleanOptions::default())
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim_end().chars().take(LAST_LINE_CHARS).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_is_what_a_terminal_shows() {
        assert_eq!(last_line(b"show clock\r\n12:00 UTC\r\nSW1#"), "SW1#");
        assert_eq!(last_line(b"SW1#\r\n\r\n"), "SW1#");
        assert_eq!(last_line(b"\x1b[1;31mred\x1b[0m done\r\n"), "red done");
        assert_eq!(last_line(b"--More--\r        \rline"), "line");
        assert_eq!(last_line(b""), "");
        assert_eq!(last_line(&[b'x'; 400]).len(), LAST_LINE_CHARS);
        // A real bash after login: bracketed paste and a window title.
        assert_eq!(
            last_line(b"law.\r\n\x1b[?2004h\x1b]0;netops@vm: ~\x07netops@vm:~$ "),
            "netops@vm:~$"
        );
    }
}
