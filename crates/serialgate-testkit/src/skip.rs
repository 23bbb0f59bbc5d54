//! A test that cannot run here says why; under CI (`CI` set, as `.ci/run`
//! runs) that is a failure instead, so that a green CI means every test
//! ran, whatever this machine lacks.

/// Reports that the calling test (or a part of it) is skipped, and why,
/// with what installs the missing part; panics when `CI` is set.
pub fn skipped(why: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must be able to run this, but: {why}"
    );
    eprintln!("skipped: {why}");
}
