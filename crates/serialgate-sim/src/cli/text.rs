//! Output text as consoles print it: lines ended by CR LF, runs of spaces.

/// `lines`, each ended by `\r\n`.
pub fn crlf_lines<S: AsRef<str>>(lines: impl IntoIterator<Item = S>) -> Vec<u8> {
    let mut text = Vec::new();
    for line in lines {
        text.extend_from_slice(line.as_ref().as_bytes());
        text.extend_from_slice(b"\r\n");
    }
    text
}

/// `count` spaces, for erasing and padding.
pub fn spaces(count: usize) -> Vec<u8> {
    vec![b' '; count]
}
