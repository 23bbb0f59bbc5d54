//! Names the commit the binary is built from, for `serialgate --version`:
//! sets `SERIALGATE_VERSION` to "0.1.0 (abc1234)" when this is a git
//! checkout of serialgate, or to the bare version otherwise (a source
//! tarball, a vendored copy inside another repository). A packager without
//! the git history can name the commit in `SERIALGATE_COMMIT`.
//!
//! Also lists the shipped TextFSM templates (`templates/ntc/`) for
//! `src/parse/shipped.rs` to embed: one `include_str!` per file, so a
//! template added or removed there needs no edit of the source.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    list_templates();
    println!("cargo:rerun-if-env-changed=SERIALGATE_COMMIT");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let commit = std::env::var("SERIALGATE_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .map(|c| c.trim().to_owned())
        .or_else(git_commit);
    match commit {
        Some(commit) => println!("cargo:rustc-env=SERIALGATE_VERSION={version} ({commit})"),
        None => println!("cargo:rustc-env=SERIALGATE_VERSION={version}"),
    }
}

/// The short hash of HEAD, when the crate's directory is the top of a git
/// work tree; and the files whose change means a new HEAD.
fn git_commit() -> Option<String> {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    let top = git(&manifest_dir, &["rev-parse", "--show-toplevel"])?;
    // A crate unpacked inside some other repository is not that commit.
    if std::fs::canonicalize(&top).ok()? != std::fs::canonicalize(&manifest_dir).ok()? {
        return None;
    }
    // HEAD, the branch it points at and packed-refs: a commit, a checkout
    // or a gc changes one of them. (A worktree's HEAD is not in ./.git.)
    for name in ["HEAD", "packed-refs"] {
        rerun_if_changed(&manifest_dir, name);
    }
    if let Some(branch) = git(&manifest_dir, &["symbolic-ref", "-q", "HEAD"]) {
        rerun_if_changed(&manifest_dir, &branch);
    }
    git(&manifest_dir, &["rev-parse", "--short", "HEAD"])
}

fn rerun_if_changed(dir: &Path, git_name: &str) {
    if let Some(path) = git(dir, &["rev-parse", "--git-path", git_name]) {
        let path = dir.join(path);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

/// The trimmed stdout of a successful `git ARGS` in `dir`.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// Writes `$OUT_DIR/ntc_templates.rs`: `SHIPPED_TEMPLATES`, every
/// `templates/ntc/*.textfsm` as (file name, text), sorted by name.
fn list_templates() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let dir = manifest_dir.join("templates/ntc");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|name| name.ends_with(".textfsm"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut out = String::from("/// Every shipped template: its file name and its text.\n");
    out.push_str("pub static SHIPPED_TEMPLATES: &[(&str, &str)] = &[\n");
    for name in &names {
        let path = dir.join(name);
        println!("cargo:rerun-if-changed={}", path.display());
        out.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    out.push_str("];\n");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    if let Err(e) = std::fs::write(out_dir.join("ntc_templates.rs"), out) {
        panic!("cannot write the list of shipped templates: {e}");
    }
}
