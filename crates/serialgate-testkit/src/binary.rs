//! Which `serialgate` binary a test or a bench runs. Cargo builds the
//! binary of the package whose tests or benches run, and puts it in the
//! profile directory above their executables (`target/debug/deps/…` runs
//! `target/debug/serialgate`); an environment variable may name another.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The binary's file name on this platform.
fn exe_name() -> String {
    format!("serialgate{}", std::env::consts::EXE_SUFFIX)
}

/// The `serialgate` in the profile directory of the running test or bench.
fn beside_this_executable() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    Some(profile_dir.join(exe_name()))
}

/// The binary the end-to-end tests run: `SERIALGATE_TEST_BINARY` (to show
/// what an older build does), else the one cargo built for these tests.
/// Panics, saying how to build it, when there is none.
pub fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("SERIALGATE_TEST_BINARY") {
        return PathBuf::from(p);
    }
    match beside_this_executable() {
        Some(p) if p.is_file() => p,
        other => panic!(
            "no serialgate binary at {other:?}: run the tests of the serialgate package (`cargo test`), which builds it"
        ),
    }
}

/// The binary a bench measures: `SERIALGATE_BIN`, else the one in this
/// executable's profile directory (`target/release/serialgate` for `cargo
/// bench`). Warns when it is a debug build or older than the daemon's
/// sources, and prints which one runs. `Err` says how to build it when
/// none exists.
pub fn bench_binary() -> Result<PathBuf, String> {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("SERIALGATE_BIN") {
        candidates.push(PathBuf::from(p));
    }
    candidates.extend(beside_this_executable());
    let binary = candidates.into_iter().find(|p| p.is_file()).ok_or(
        "the serialgate binary was not found: run `cargo build --release` (or point SERIALGATE_BIN at a release build)",
    )?;
    if binary
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "debug")
    {
        eprintln!(
            "WARNING: {} is a debug build: figures are not representative; run `cargo build --release`",
            binary.display()
        );
    }
    if let (Some(built), Some(source)) = (modified(&binary), newest_source())
        && source > built
    {
        eprintln!(
            "WARNING: {} is older than the daemon's sources; run `cargo build --release` for current figures",
            binary.display()
        );
    }
    println!("serialgate binary: {}", binary.display());
    Ok(binary)
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The newest modification time of a file under the daemon crate's `src/`.
fn newest_source() -> Option<SystemTime> {
    fn walk(dir: &Path, newest: &mut Option<SystemTime>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, newest);
            } else if let Some(t) = modified(&path) {
                *newest = (*newest).max(Some(t));
            }
        }
    }
    let mut newest = None;
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src"),
        &mut newest,
    );
    newest
}
