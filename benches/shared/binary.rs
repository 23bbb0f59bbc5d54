//! The `serialgate` binary a bench measures, found the same way by every
//! bench that runs the daemon (gateway, peers, load).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// `SERIALGATE_BIN`, else the binary in this executable's profile directory
/// (`target/release/serialgate` for `cargo bench`), else the one cargo built
/// for this target. Warns when it is a debug build or older than the
/// sources under `src/`, and prints which one runs. `Err` says how to build
/// it when none exists.
pub fn serialgate_binary() -> Result<PathBuf, String> {
    let exe_name = format!("serialgate{}", std::env::consts::EXE_SUFFIX);
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("SERIALGATE_BIN") {
        candidates.push(PathBuf::from(p));
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(profile_dir) = exe.parent().and_then(Path::parent)
    {
        candidates.push(profile_dir.join(&exe_name));
    }
    candidates.push(PathBuf::from(env!("CARGO_BIN_EXE_serialgate")));
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
            "WARNING: {} is older than the sources under src/; run `cargo build --release` for current figures",
            binary.display()
        );
    }
    println!("serialgate binary: {}", binary.display());
    Ok(binary)
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The newest modification time of a file under the crate's `src/`.
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
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut newest,
    );
    newest
}
