//! Release builds of the `serialgate` binary on x86-64 Linux link with
//! `link/hot-text.ld`, which gathers the functions a serving daemon runs
//! at the start of its text, so that few pages of the program stay
//! resident (bench/hot-text.py says why, bench/hot-text.sh regenerates it).
//! Only the layout changes: a function the list does not name, or a list
//! that names nothing of this build, links exactly as without it.
//!
//! The script is `INSERT BEFORE .text`, which lld (Rust's default linker
//! here) and GNU ld understand. With another linker, or to compare, set
//! `SERIALGATE_NO_HOT_TEXT=1`.

fn main() {
    println!("cargo:rerun-if-changed=link/hot-text.ld");
    println!("cargo:rerun-if-env-changed=SERIALGATE_NO_HOT_TEXT");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let x86_64_linux = std::env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu");
    let opted_out = std::env::var_os("SERIALGATE_NO_HOT_TEXT").is_some_and(|v| v == "1");
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        return;
    };
    let script = std::path::Path::new(&dir).join("link/hot-text.ld");
    if release && x86_64_linux && !opted_out && script.is_file() {
        println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display());
    }
}
