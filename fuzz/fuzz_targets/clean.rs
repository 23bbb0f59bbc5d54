//! The cleanup (pagers, escapes, overwrites, echo, whitespace) on any bytes.
//!
//! Why: `clean_output` runs on whatever a console sends, line noise from a
//! wrong baud rate included, and `Cleaner` promises the same text for any
//! chunking. The unit tests check real captures under every cut and the
//! proptest a soup of known pieces; here the bytes and the cuts are
//! arbitrary, with a choice of commands (one taken from the output itself)
//! and of pager literals (odd ones included).
//!
//! What:
//! - it never panics;
//! - fed in arbitrary chunks, a `Cleaner` gives the one-call text;
//! - the text is what `finish` documents: lines joined by `\n`, none with
//!   trailing whitespace, no empty first or last line, and no control
//!   characters but `\n` and `\t` (as `output_has_no_control_characters`
//!   checks for the captures);
//! - cleaning that text again (no echo removal, no pagers; or the same
//!   pagers when none of them occurs in it) gives it back unchanged;
//! - text that already has that shape comes back unchanged.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serialgate::clean::{COMMON_PAGERS, CleanOptions, Cleaner, clean_output};

/// Pager literals no preset has: a custom prompt, an unclosed `(`, and
/// literals so short that they occur everywhere.
const ODD_PAGERS: &[&[u8]] = &[
    b"<Press SPACE for more, q to quit>",
    b"--(more",
    b"(",
    b"-",
    b"\x1b[7m",
];

/// The input, laid out so that a seed is a captured output behind a short
/// header: byte 0 chooses the command (bits 0-1: none, `show clock`,
/// `sh ip int br`, or the first line of the output) and the pagers (bits
/// 2-3: none, the common ones, [`ODD_PAGERS`], both); byte 1 is the number
/// of cuts (modulo 9), followed by one little-endian `u16` per cut
/// (reduced modulo the output's length + 1); the rest is the raw output.
struct Input<'a> {
    command: Option<String>,
    pagers: Vec<&'static [u8]>,
    cuts: Vec<usize>,
    raw: &'a [u8],
}

impl<'a> Input<'a> {
    fn parse(data: &'a [u8]) -> Option<Input<'a>> {
        let (&[options, count], rest) = data.split_first_chunk::<2>()?;
        let count = count as usize % 9;
        let (cuts, raw) = rest.split_at_checked(2 * count)?;
        let first_line = raw.split(|&b| b == b'\n').next().unwrap_or_default();
        let command = match options & 3 {
            0 => None,
            1 => Some("show clock".to_owned()),
            2 => Some("sh ip int br".to_owned()),
            _ => Some(String::from_utf8_lossy(first_line).into_owned()),
        };
        let pagers = match (options >> 2) & 3 {
            0 => Vec::new(),
            1 => COMMON_PAGERS.to_vec(),
            2 => ODD_PAGERS.to_vec(),
            _ => [COMMON_PAGERS, ODD_PAGERS].concat(),
        };
        let mut cuts: Vec<usize> = cuts
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]) as usize % (raw.len() + 1))
            .collect();
        cuts.sort_unstable();
        Some(Input {
            command,
            pagers,
            cuts,
            raw,
        })
    }
}

/// Whether `text` is already what `finish` returns.
fn is_clean_shape(text: &str) -> bool {
    !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
        && text.split('\n').all(|line| line.trim_end() == line)
        && (text.is_empty() || !text.starts_with('\n') && !text.ends_with('\n'))
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::parse(data) else {
        return;
    };
    let pagers = &input.pagers[..];
    let opts = CleanOptions {
        command: input.command.as_deref(),
        pagers,
    };
    let raw = input.raw;

    let whole = clean_output(raw, &opts);

    let mut cleaner = Cleaner::new(&opts);
    let mut at = 0;
    for &cut in &input.cuts {
        cleaner.feed(&raw[at..cut]);
        at = cut;
    }
    cleaner.feed(&raw[at..]);
    assert_eq!(cleaner.finish(), whole, "chunked differs from one call");

    assert!(is_clean_shape(&whole), "not clean: {whole:?}");

    let plain = CleanOptions::default();
    assert_eq!(
        clean_output(whole.as_bytes(), &plain),
        whole,
        "cleaning twice changed it"
    );
    if !pagers
        .iter()
        .any(|p| !p.is_empty() && whole.as_bytes().windows(p.len()).any(|w| w == *p))
    {
        let again = CleanOptions {
            command: None,
            pagers,
        };
        assert_eq!(
            clean_output(whole.as_bytes(), &again),
            whole,
            "cleaning twice with the pagers changed it"
        );
    }

    if let Ok(text) = std::str::from_utf8(raw)
        && is_clean_shape(text)
    {
        assert_eq!(clean_output(raw, &plain), text, "clean text changed");
    }
});
