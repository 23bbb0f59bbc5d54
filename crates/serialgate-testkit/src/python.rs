//! The Python interpreter of the tests' virtual environment, where the
//! real Python clients live (the MCP SDK, Netmiko): tests run scripts with
//! it against the daemon.

use std::path::PathBuf;
use std::process::Command;

/// Where `.ci/run` makes the tests' virtual environment, under the
/// workspace's `target/`.
fn default_venv() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-venv")
}

/// The interpreter of the tests' virtual environment, if it can import
/// every module in `modules`; otherwise the test is skipped (a failure
/// under CI) with the command that makes the environment.
/// `SERIALGATE_TEST_PYTHON` names another interpreter.
pub fn python_with(modules: &[&str]) -> Option<PathBuf> {
    let python = std::env::var_os("SERIALGATE_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| default_venv().join("bin/python"));
    let imports = modules
        .iter()
        .map(|m| format!("import {m}"))
        .collect::<Vec<_>>()
        .join("; ");
    let ok = Command::new(&python)
        .args(["-c", &imports])
        .output()
        .is_ok_and(|out| out.status.success());
    if ok {
        return Some(python);
    }
    crate::skip::skipped(&format!(
        "{} cannot import {}: make the tests' environment with \
         `python3 -m venv target/test-venv && target/test-venv/bin/pip install -r tests/python/requirements.txt` \
         (.ci/run does this)",
        python.display(),
        modules.join(", ")
    ));
    None
}
