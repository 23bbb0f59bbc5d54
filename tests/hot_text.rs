//! `link/hot-text.ld`, the layout script release builds link with
//! (`build.rs`): the linker Rust uses here accepts it and the program it
//! links runs, and it names the daemon's serving code. `cargo test` builds
//! without it (debug), so without this test a broken script would only show
//! at the first `cargo build --release`.

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use std::path::Path;
use std::process::Command;

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("link/hot-text.ld")
}

#[test]
fn the_linker_takes_the_script_and_the_program_runs() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let source = dir.path().join("hello.rs");
    std::fs::write(
        &source,
        "fn main() { let v: Vec<String> = std::env::args().collect(); println!(\"ran with {} args\", v.len()); }\n",
    )
    .expect("write the test program");
    let exe = dir.path().join("hello");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .args([
            "--edition",
            "2024",
            "-C",
            "symbol-mangling-version=v0",
            "-o",
        ])
        .arg(&exe)
        .arg(&source)
        .arg("-C")
        .arg(format!("link-arg=-Wl,-T,{}", script().display()))
        .output()
        .expect("run rustc");
    assert!(
        out.status.success(),
        "linking with {} failed:\n{}",
        script().display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let ran = Command::new(&exe).output().expect("run the linked program");
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "ran with 1 args\n");
}

#[test]
fn the_script_names_the_serving_code() {
    let text = std::fs::read_to_string(script()).expect("link/hot-text.ld is in the repository");
    assert!(
        text.contains("INSERT BEFORE .text;"),
        "not an INSERT script"
    );
    let patterns = text
        .lines()
        .filter(|l| l.trim_start().starts_with("*("))
        .count();
    assert!(patterns > 500, "only {patterns} functions listed");
    // v0 names, crate hash left out: the reader task, the log's append,
    // a tool call, the tokio worker loop.
    for wanted in [
        "10serialgate4port6reader3run",
        "10serialgate3logNtB*_9OutputLog6append",
        "10serialgate3mcp2io",
        "5tokio7runtime9scheduler12multi_thread6worker",
    ] {
        assert!(text.contains(wanted), "{wanted} is not listed");
    }
}
