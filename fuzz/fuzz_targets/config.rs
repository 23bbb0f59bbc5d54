//! The config parser on any text.
//!
//! Why: `serialgate check-config` and the daemon's start and reload parse
//! files people edit by hand; a typo must give a located error, never a
//! panic.
//!
//! What: `Config::parse` never panics, and every error it returns names
//! the file and a place in it: a line and column (1-based, the column in
//! characters) that exist in the text, or one past its end.
//!
//! The file name points into a directory that does not exist, so that a
//! relative `secret_file` is never read; an absolute one is (see README).

#![no_main]

use libfuzzer_sys::fuzz_target;
use serialgate::config::Config;

const FILE: &str = "/nonexistent-serialgate-fuzz/config.toml";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Err(e) = Config::parse(&text, FILE) else {
        return;
    };
    assert_eq!(e.file, FILE);
    assert!(!e.message.is_empty());
    assert!(e.line >= 1 && e.col >= 1, "error without a place: {e}");
    // The place exists: line `line` has at least `col - 1` characters (a
    // column one past the end points at a missing value or the end).
    let line = text
        .split('\n')
        .nth(e.line - 1)
        .unwrap_or_else(|| panic!("no line {}: {e}", e.line));
    assert!(
        e.col <= line.chars().count() + 1,
        "no column {} in {line:?}: {e}",
        e.col
    );
    let _ = e.to_string();
});
