//! The official Python MCP SDK (the `mcp` package from PyPI, run from the
//! tests' virtual environment) as the agent: over stdio, the daemon
//! started by the SDK as an agent framework starts it, and over
//! streamable HTTP with a bearer token. Each session lists the tools,
//! connects to the simulated Cisco switch and runs `show version` with
//! `send_command`; its structured result is the whole output, unpaged.
//! A wrong token gets the SDK nothing but the refusal.

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;
use serialgate_sim::{self as sim, Profile};
use serialgate_testkit::binary::binary;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use serialgate_testkit::python::python_with;
use tokio::process::Command;

const NOC: &str = "noc-secret-0123456789abcdef";

/// The script, in `tests/python/`.
fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_session.py")
}

/// Runs the script with `args`; its lines (one JSON object each, keyed by
/// `kind`) and whether it succeeded, with its stderr for the message.
pub(super) async fn run_script(
    python: &Path,
    args: &[&str],
) -> (Vec<(String, Value)>, bool, String) {
    let mut cmd = Command::new(python);
    cmd.arg(script())
        .args(args)
        .env("SERIALGATE_LOG", "warn")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(daemon::WITHIN * 3, cmd.output())
        .await
        .expect("the SDK's session ends in time")
        .expect("run python");
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            (
                v["kind"].as_str().unwrap_or("").to_owned(),
                v["value"].clone(),
            )
        })
        .collect();
    (
        lines,
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn field<'a>(lines: &'a [(String, Value)], kind: &str) -> &'a Value {
    &lines
        .iter()
        .find(|(k, _)| k == kind)
        .unwrap_or_else(|| panic!("no {kind} in {lines:?}"))
        .1
}

/// What a user checks of the session: the server, the tools an agent sees,
/// and `show version` whole, with no pager and no prompt in it.
pub(super) fn check_session(lines: &[(String, Value)]) {
    assert_eq!(field(lines, "server"), "serialgate");
    let tools: Vec<&str> = field(lines, "tools")
        .as_array()
        .expect("tool names")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for tool in ["connect", "send_command", "read_until_prompt", "status"] {
        assert!(tools.contains(&tool), "{tool} missing from {tools:?}");
    }
    assert_eq!(field(lines, "connect_error"), false);
    assert_eq!(field(lines, "send_command_error"), false);
    let result = field(lines, "send_command");
    assert_eq!(result["matched"], true, "{result}");
    let output = result["output"].as_str().expect("output text");
    assert!(
        output.starts_with(
            "Cisco IOS Software, C2960X Software (C2960X-UNIVERSALK9-M), Version 15.2(7)E4"
        ),
        "{output}"
    );
    assert!(output.contains("\nSW1 uptime is "), "{output}");
    assert!(output.contains("Configuration register is 0xF"), "{output}");
    assert!(!output.contains("--More--"), "{output}");
    assert_eq!(result["prompt_text"], "SW1>", "{result}");
    assert!(!output.contains("SW1>"), "{output}");
}

#[tokio::test]
async fn the_python_sdk_runs_show_version_over_stdio_and_http() {
    let Some(python) = python_with(&["mcp"]) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("sw1");
    let _sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
        .await
        .expect("simulated switch");
    let port = format!(
        "[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n",
        link.display()
    );

    // stdio: the SDK starts the daemon itself.
    let stdio_config = dir.path().join("stdio.toml");
    std::fs::write(&stdio_config, &port).expect("write config");
    let bin = binary();
    let (lines, ok, stderr) = run_script(
        &python,
        &[
            "stdio",
            bin.to_str().expect("a UTF-8 path"),
            stdio_config.to_str().expect("a UTF-8 path"),
        ],
    )
    .await;
    assert!(ok, "{stderr}");
    check_session(&lines);

    // Streamable HTTP with a token, once the stdio daemon let go of the port.
    let tokens = daemon::tokens_toml(dir.path(), &[("noc", NOC, r#"["sw1"]"#, "write")]);
    let http_config = dir.path().join("http.toml");
    std::fs::write(&http_config, format!("{port}\n{tokens}")).expect("write config");
    let notify = NotifySocket::bind(dir.path());
    let mut gate = Daemon::spawn(Some(&http_config), &notify, &["--http", "127.0.0.1:0"]);
    let url = gate.http_url().await;
    notify.expect("READY=1").await;
    let (lines, ok, stderr) = run_script(&python, &["http", &url, NOC]).await;
    assert!(ok, "{stderr}");
    check_session(&lines);

    // A wrong secret: the SDK gets the refusal and no session.
    let (lines, ok, stderr) =
        run_script(&python, &["http", &url, "not-the-secret-0123456789"]).await;
    assert!(!ok, "a wrong token opened a session: {lines:?}");
    assert!(lines.is_empty(), "{lines:?}");
    // The SDK reports the 401 as an error response of initialize.
    assert!(stderr.contains("MCPError"), "{stderr}");
}
