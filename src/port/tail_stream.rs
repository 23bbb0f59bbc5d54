//! A port's tail read a piece at a time, for a download: from its
//! transcript file or from the output it retains, as UTF-8 text (what is
//! not is replaced, as a whole copy would be), never more than a piece in
//! memory. A client that reads slowly, or not at all, then holds a
//! connection and a file, not a copy of the tail.

use std::io;

use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt};
use tokio::io::AsyncReadExt;

use crate::log::OutputLog;

/// Bytes read or copied at a time.
const PIECE: usize = 64 * 1024;

/// The text pieces of a tail, in order.
pub type Pieces = BoxStream<'static, io::Result<Bytes>>;

/// `file`, positioned at `start`, up to `end`, starting after its first
/// line break when `start` falls mid-file (the first line is then likely
/// cut), as text.
pub fn file_pieces(file: std::fs::File, start: u64, end: u64) -> Pieces {
    let state = FileTail {
        file: tokio::fs::File::from_std(file),
        at: start,
        end,
        skip_to_line: start > 0,
        text: LossyText::default(),
    };
    stream::unfold(Some(state), |state| async move {
        let mut state = state?;
        match state.next_piece().await {
            Ok(Some(piece)) => Some((Ok(piece), Some(state))),
            Ok(None) => {
                let rest = std::mem::take(&mut state.text).finish();
                (!rest.is_empty()).then(|| (Ok(Bytes::from(rest)), None))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
    .boxed()
}

/// What `log` retains from `from` to `to`, as text; what retention drops
/// meanwhile is skipped.
pub fn log_pieces(log: OutputLog, from: u64, to: u64) -> Pieces {
    let state = (log, from, LossyText::default());
    stream::unfold(Some(state), move |state| async move {
        let (log, at, mut text) = state?;
        let at = at.max(log.oldest());
        if at >= to {
            let rest = text.finish();
            return (!rest.is_empty()).then(|| (Ok(Bytes::from(rest)), None));
        }
        let until = to.min(at + PIECE as u64);
        let piece = text.push(&log.copy_range(at, until));
        Some((Ok(Bytes::from(piece)), Some((log, until, text))))
    })
    .boxed()
}

/// A transcript file being read.
struct FileTail {
    file: tokio::fs::File,
    at: u64,
    end: u64,
    /// The first line break is still to be found (and what precedes it
    /// dropped).
    skip_to_line: bool,
    text: LossyText,
}

impl FileTail {
    /// The next piece of text; `None` at `end` (or the file's end).
    async fn next_piece(&mut self) -> io::Result<Option<Bytes>> {
        if self.at >= self.end {
            return Ok(None);
        }
        let want = usize::try_from(self.end - self.at).map_or(PIECE, |left| left.min(PIECE));
        let mut bytes = vec![0; want];
        let read = self.file.read(&mut bytes).await?;
        if read == 0 {
            return Ok(None);
        }
        bytes.truncate(read);
        self.at += read as u64;
        let mut kept = &bytes[..];
        if std::mem::take(&mut self.skip_to_line)
            && let Some(line_break) = memchr::memchr(b'\n', kept)
            && line_break + 1 < kept.len()
        {
            kept = &kept[line_break + 1..];
        }
        Ok(Some(Bytes::from(self.text.push(kept))))
    }
}

/// Bytes turned into UTF-8 text piece by piece, as
/// `String::from_utf8_lossy` turns them whole: a sequence cut at a piece's
/// end waits for the next piece.
#[derive(Default)]
struct LossyText {
    carry: Vec<u8>,
}

impl LossyText {
    /// The text of `bytes` after what was carried, but for an unfinished
    /// sequence at their end.
    fn push(&mut self, bytes: &[u8]) -> String {
        self.carry.extend_from_slice(bytes);
        let whole = self.carry.len() - unfinished_at_end(&self.carry);
        let text = String::from_utf8_lossy(&self.carry[..whole]).into_owned();
        self.carry.drain(..whole);
        text
    }

    /// The text of what is still carried.
    fn finish(self) -> String {
        String::from_utf8_lossy(&self.carry).into_owned()
    }
}

/// How many bytes at the end of `bytes` begin a UTF-8 sequence that they
/// do not finish.
fn unfinished_at_end(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let length = match byte {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if length > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_in_pieces_is_the_text_of_the_whole_however_it_is_cut() {
        let whole = "état ✓ 🚀 ok".as_bytes().to_vec();
        let mut broken = whole.clone();
        broken.extend_from_slice(&[0xE2, 0x82, b'A', 0xFF, 0xF0, 0x9F]);
        for bytes in [whole, broken] {
            let expected = String::from_utf8_lossy(&bytes).into_owned();
            for cut in 1..bytes.len() {
                let mut text = LossyText::default();
                let mut got = String::new();
                for piece in bytes.chunks(cut) {
                    got.push_str(&text.push(piece));
                }
                got.push_str(&text.finish());
                assert_eq!(got, expected, "pieces of {cut}");
            }
        }
    }

    #[tokio::test]
    async fn a_files_tail_starts_at_a_line_and_reads_to_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.log");
        let mut written = String::new();
        for i in 0..20_000 {
            written.push_str(&format!("line {i:05} of the transcript\n"));
        }
        std::fs::write(&path, &written).unwrap();
        let len = written.len() as u64;
        let path = path.as_path();
        let read = |start: u64| async move {
            let mut file = std::fs::File::open(path).unwrap();
            std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(start)).unwrap();
            let pieces: Vec<Bytes> = file_pieces(file, start, len)
                .map(|p| p.unwrap())
                .collect()
                .await;
            String::from_utf8(pieces.concat()).unwrap()
        };
        assert_eq!(read(0).await, written);
        let tail = read(len - 100_000).await;
        assert!(tail.starts_with("line ") && written.ends_with(&tail));
        assert!(tail.len() < 100_000 && tail.len() > 99_950);
    }
}
