//! Approval by the user of the agent's own MCP client, end to end: the
//! official Python SDK (`tests/python/approval_user.py`) is the agent over
//! streamable HTTP (token `noc`) on the simulated Cisco switch, under a
//! policy whose approvers name `client_user`; its elicitation callback is
//! the user, who approves, denies, declines, or never answers. A person
//! at the local console socket can decide too. What reaches the switch is
//! read from every byte it received.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::console::ConsoleConn;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use serialgate_testkit::python::python_with;
use serialgate_testkit::rig::count;
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdout, Command};

const NOC: &str = "noc-secret-0123456789";

/// The switch and the daemon (HTTP, the console socket, an audit trail),
/// port `sw1` under `policy`.
struct Site {
    sim: SimHandle,
    url: String,
    socket: PathBuf,
    dir: TempDir,
    _daemon: Daemon,
    _notify: NotifySocket,
}

impl Site {
    async fn start(policy: &str) -> Site {
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("sw1");
        let sim = sim::spawn(Profile::CiscoIos, Some(link.clone()))
            .await
            .expect("simulated device");
        let tokens = daemon::tokens_toml(dir.path(), &[("noc", NOC, r#"["*"]"#, "write")]);
        let config = dir.path().join("serialgate.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\nconsole_socket = \"console.sock\"\nlog_dir = \"logs\"\napproval_timeout = \"60s\"\n\n\
                 [policies.asks-user]\napprovers = [\"people\", \"client_user\"]\n\n\
                 [ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\npolicy = \"{policy}\"\n\n{tokens}",
                link.display()
            ),
        )
        .expect("write config");
        let notify = NotifySocket::bind(dir.path());
        let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
        let url = daemon.http_url().await;
        notify.expect("READY=1").await;
        Site {
            sim,
            url,
            socket: dir.path().join("console.sock"),
            dir,
            _daemon: daemon,
            _notify: notify,
        }
    }

    /// Times the switch received `line` and a CR.
    fn received(&self, line: &str) -> usize {
        count(&self.sim.received(), format!("{line}\r").as_bytes())
    }

    /// The audit record of `kind` for `line`.
    fn audited(&self, kind: &str, line: &str) -> Value {
        audited_in(&self.dir.path().join("logs/audit.log"), kind, line)
    }
}

/// The record of `kind` for `line` in the audit trail at `log`.
pub(crate) fn audited_in(log: &Path, kind: &str, line: &str) -> Value {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let records: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    records
        .iter()
        .find(|r| r["kind"] == kind && r["data"] == line)
        .cloned()
        .unwrap_or_else(|| panic!("no {kind:?} of {line:?} in {records:?}"))
}

/// The agent as the SDK runs it, its user answering `answer`, sending
/// `line`; started, not awaited.
fn agent(python: &Path, site: &Site, answer: &str, line: &str) -> Running {
    run_script(python, "approval_user.py", &[&site.url, NOC, answer, line])
}

/// The agent of `tests/python/approval_user.py` at the MCP endpoint `url`
/// with `token`, on `port`; started, not awaited.
pub(crate) fn agent_on(
    python: &Path,
    url: &str,
    token: &str,
    answer: &str,
    line: &str,
    port: &str,
) -> Running {
    run_script(
        python,
        "approval_user.py",
        &[url, token, answer, line, port],
    )
}

/// The agent of `tests/python/approval_mrtr.py`, whose client speaks
/// without a session and is asked in the call's result, in `scenario`.
fn sessionless_agent(python: &Path, site: &Site, scenario: &str, line: &str) -> Running {
    run_script(
        python,
        "approval_mrtr.py",
        &[&site.url, NOC, scenario, line],
    )
}

/// The agent of `tests/python/approval_mrtr.py` at the MCP endpoint `url`
/// with `token`, on `port`, in `scenario`; started, not awaited.
pub(crate) fn sessionless_agent_on(
    python: &Path,
    url: &str,
    token: &str,
    scenario: &str,
    line: &str,
    port: &str,
) -> Running {
    run_script(
        python,
        "approval_mrtr.py",
        &[url, token, scenario, line, port],
    )
}

/// `tests/python/{script}` with `args`, started.
fn run_script(python: &Path, script: &str, args: &[&str]) -> Running {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(script);
    let mut child = Command::new(python)
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run python");
    let stdout = child.stdout.take().expect("the agent's stdout");
    Running {
        child,
        lines: BufReader::new(stdout).lines(),
        printed: Vec::new(),
    }
}

/// A running agent and what it printed so far.
pub(crate) struct Running {
    child: tokio::process::Child,
    lines: Lines<BufReader<ChildStdout>>,
    printed: Vec<(String, Value)>,
}

impl Running {
    /// Reads the next printed object; `None` at the end.
    async fn next(&mut self) -> Option<(String, Value)> {
        let line = tokio::time::timeout(daemon::WITHIN * 3, self.lines.next_line())
            .await
            .expect("the agent prints in time")
            .expect("the agent's stdout")?;
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        let printed = (
            v["kind"].as_str().unwrap_or("").to_owned(),
            v["value"].clone(),
        );
        self.printed.push(printed.clone());
        Some(printed)
    }

    /// Waits until the agent prints `kind`.
    pub(crate) async fn until(&mut self, kind: &str) -> Value {
        while let Some((k, v)) = self.next().await {
            if k == kind {
                return v;
            }
        }
        panic!("the agent ended without {kind}: {:?}", self.printed);
    }

    /// Waits for the agent to end; everything it printed.
    pub(crate) async fn finished(mut self) -> Printed {
        while self.next().await.is_some() {}
        let out = tokio::time::timeout(daemon::WITHIN * 3, self.child.wait_with_output())
            .await
            .expect("the agent's session ends in time")
            .expect("python");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "the agent failed: {stderr}");
        Printed(self.printed)
    }
}

/// What the agent printed, by kind (`asked` may come more than once).
pub(crate) struct Printed(Vec<(String, Value)>);

impl Printed {
    pub(crate) fn get(&self, kind: &str) -> &Value {
        &self
            .0
            .iter()
            .find(|(k, _)| k == kind)
            .unwrap_or_else(|| panic!("no {kind} in {:?}", self.0))
            .1
    }

    pub(crate) fn all(&self, kind: &str) -> Vec<&Value> {
        self.0
            .iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, v)| v)
            .collect()
    }
}

/// Checks that a call the agent printed was refused, its text saying
/// `says`.
pub(crate) fn refused_saying(printed: &Value, says: &str) {
    assert_eq!(printed["is_error"], true, "{printed}");
    assert!(
        printed["text"].as_str().is_some_and(|t| t.contains(says)),
        "{says:?} in {printed}"
    );
}

/// Checks that the user was asked once, in the approve-or-deny form,
/// with a message holding each of `parts`.
pub(crate) fn asked_once(printed: &Printed, parts: &[&str]) {
    let asked = printed.all("asked");
    assert_eq!(asked.len(), 1, "asked once: {asked:?}");
    let message = asked[0]["message"].as_str().unwrap_or_default();
    for part in parts {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    assert_eq!(
        asked[0]["schema"]["properties"]["decision"]["enum"],
        json!(["approve", "deny"]),
        "{}",
        asked[0]["schema"]
    );
}

/// Reads console frames until the approvals list holds one request.
async fn one_pending(person: &mut ConsoleConn) -> Value {
    loop {
        let m = person.until_json("approvals").await;
        if let Some([request]) = m["pending"].as_array().map(Vec::as_slice) {
            return request.clone();
        }
    }
}

#[tokio::test]
async fn the_client_user_approves_and_the_line_reaches_the_switch_once() {
    let Some(python) = python_with(&["mcp"]) else {
        return;
    };
    let site = Site::start("asks-user").await;
    let printed = agent(&python, &site, "approve", "reload in 5")
        .finished()
        .await;
    // The user is shown the exact line, the port, the mode and why, and
    // asked approve or deny.
    asked_once(
        &printed,
        &[
            "\"reload in 5\"",
            "exec mode",
            "on sw1",
            "rule \"reload\"",
            "expires in",
        ],
    );
    assert_eq!(printed.get("is_error"), false, "{:?}", printed.get("text"));
    assert_eq!(site.received("reload in 5"), 1);
    // Audited: decided by the client's user of the requesting session.
    let request = site.audited("approval request", "reload in 5");
    let approved = site.audited("approval approved", "reload in 5");
    assert_eq!(approved["person"], "client_user", "{approved}");
    assert_eq!(approved["token"], "noc", "{approved}");
    assert_eq!(approved["session"], request["session"], "{approved}");
    assert_eq!(approved["approval"], request["approval"]);
}

#[tokio::test]
async fn the_client_user_denying_declining_or_cancelling_sends_nothing() {
    let Some(python) = python_with(&["mcp"]) else {
        return;
    };
    let site = Site::start("asks-user").await;
    for answer in ["deny", "decline", "cancel"] {
        let printed = agent(&python, &site, answer, "reload").finished().await;
        assert_eq!(printed.all("asked").len(), 1, "{answer}");
        assert_eq!(printed.get("is_error"), true, "{answer}");
        let text = printed.get("text").as_str().unwrap_or_default();
        assert!(
            text.starts_with("denied: ")
                && text.contains("was denied by client_user of session")
                && text.contains("nothing was sent"),
            "{answer}: {text}"
        );
    }
    assert_eq!(count(&site.sim.received(), b"reload"), 0);
}

#[tokio::test]
async fn a_client_without_elicitation_or_a_policy_without_its_user_is_never_asked() {
    let Some(python) = python_with(&["mcp"]) else {
        return;
    };
    // The policy names the client's user; the client declares nothing: a
    // person at the console decides, as without the key.
    let site = Site::start("asks-user").await;
    let (mut person, _) = ConsoleConn::attach(&site.socket, "sw1", "watch", json!({})).await;
    let child = agent(&python, &site, "none", "reload");
    let request = one_pending(&mut person).await;
    person
        .send_json(
            &json!({"type": "decide", "id": request["id"], "line": "reload", "approve": false}),
        )
        .await;
    let printed = child.finished().await;
    let text = printed.get("text").as_str().unwrap_or_default();
    assert!(
        text.starts_with("denied: \"reload\" was denied by ")
            && text.contains(" on console")
            && text.contains("nothing was sent"),
        "{text}"
    );
    let progress = printed.get("progress").to_string();
    assert!(
        progress.contains("waiting for a person's approval"),
        "{progress}"
    );
    assert!(!progress.contains("client's user"), "{progress}");
    assert_eq!(count(&site.sim.received(), b"reload"), 0);
    drop(site);

    // A client that would answer, under `guarded` (people only): never
    // asked; the person approves.
    let site = Site::start("guarded").await;
    let (mut person, _) = ConsoleConn::attach(&site.socket, "sw1", "watch", json!({})).await;
    let child = agent(&python, &site, "approve", "reload in 5");
    let request = one_pending(&mut person).await;
    person
        .send_json(
            &json!({"type": "decide", "id": request["id"], "line": "reload in 5", "approve": true}),
        )
        .await;
    let printed = child.finished().await;
    assert!(
        printed.all("asked").is_empty(),
        "asked under guarded: {:?}",
        printed.0
    );
    assert_eq!(printed.get("is_error"), false, "{:?}", printed.get("text"));
    assert_eq!(site.received("reload in 5"), 1);
}

#[tokio::test]
async fn a_person_deciding_first_withdraws_the_question_from_the_client() {
    let Some(python) = python_with(&["mcp"]) else {
        return;
    };
    let site = Site::start("asks-user").await;
    let (mut person, _) = ConsoleConn::attach(&site.socket, "sw1", "watch", json!({})).await;
    let mut child = agent(&python, &site, "wait", "reload in 5");
    let request = one_pending(&mut person).await;
    // The question reached the user before the person decides.
    child.until("asked").await;
    person
        .send_json(
            &json!({"type": "decide", "id": request["id"], "line": "reload in 5", "approve": true}),
        )
        .await;
    person.until_json("decided").await;
    let printed = child.finished().await;
    assert_eq!(printed.all("asked").len(), 1, "{:?}", printed.0);
    assert_eq!(printed.get("withdrawn"), true, "{:?}", printed.0);
    assert_eq!(printed.get("is_error"), false, "{:?}", printed.get("text"));
    assert_eq!(site.received("reload in 5"), 1);
    let approved = site.audited("approval approved", "reload in 5");
    assert_ne!(approved["person"], "client_user", "{approved}");
}

/// Sessionless clients (MCP 2026-07-28) have no channel to be asked on
/// while a call waits: the call's first round ends `input_required` with
/// the question, and the second carries the user's answer.
#[tokio::test]
async fn a_sessionless_client_user_is_asked_in_the_result_and_approves_once() {
    let Some(python) = python_with(&["mcp"]) else {
        return;
    };
    let site = Site::start("asks-user").await;
    let printed = sessionless_agent(&python, &site, "approve", "reload in 5")
        .finished()
        .await;
    assert_eq!(printed.get("protocol"), "2026-07-28", "{:?}", printed.0);
    let asked = printed.all("asked");
    assert_eq!(asked.len(), 1, "asked once: {asked:?}");
    let message = asked[0]["message"].as_str().unwrap_or_default();
    for part in ["\"reload in 5\"", "exec mode", "on sw1", "rule \"reload\""] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    assert_eq!(printed.get("is_error"), false, "{:?}", printed.get("text"));
    assert_eq!(site.received("reload in 5"), 1);
    let request = site.audited("approval request", "reload in 5");
    let approved = site.audited("approval approved", "reload in 5");
    assert_eq!(approved["person"], "client_user", "{approved}");
    assert_eq!(approved["approval"], request["approval"]);

    for answer in ["deny", "decline"] {
        let printed = sessionless_agent(&python, &site, answer, "reload")
            .finished()
            .await;
        assert_eq!(printed.all("asked").len(), 1, "{answer}: {:?}", printed.0);
        assert_eq!(printed.get("is_error"), true, "{answer}");
        let text = printed.get("text").as_str().unwrap_or_default();
        assert!(
            text.starts_with("denied: ") && text.contains("nothing was sent"),
            "{answer}: {text}"
        );
    }
    assert_eq!(count(&site.sim.received(), b"reload\r"), 0);
}

/// The state a sessionless call is given is spent once, cannot be forged,
/// and holds only for the call it was given for.
#[tokio::test]
async fn a_sessionless_approval_cannot_be_replayed_forged_or_moved_to_another_line() {
    let Some(python) = python_with(&["mcp"]) else {
        return;
    };
    let site = Site::start("asks-user").await;
    let printed = sessionless_agent(&python, &site, "replay", "reload in 5")
        .finished()
        .await;
    assert_eq!(printed.get("result_type"), "InputRequiredResult");
    assert_eq!(printed.get("is_error"), false, "{:?}", printed.get("text"));
    refused_saying(printed.get("replayed"), "already answered");
    refused_saying(printed.get("forged"), "not one this daemon gave");
    // Sent once, for the approved call only.
    assert_eq!(site.received("reload in 5"), 1);

    let printed = sessionless_agent(&python, &site, "other", "reload in 7")
        .finished()
        .await;
    refused_saying(printed.get("other"), "not one this daemon gave");
    assert_eq!(site.received("reload in 7 9"), 0);
    assert_eq!(site.received("reload in 7"), 0);
}

/// Between the rounds the request waits in the port's store like any
/// other: a person who decides first decides, whatever the user answers.
#[tokio::test]
async fn a_person_deciding_between_the_rounds_wins_over_the_sessionless_user() {
    let Some(python) = python_with(&["mcp"]) else {
        return;
    };
    let site = Site::start("asks-user").await;
    let (mut person, _) = ConsoleConn::attach(&site.socket, "sw1", "watch", json!({})).await;
    let mut child = sessionless_agent(&python, &site, "person", "reload in 5");
    child.until("waiting").await;
    let request = one_pending(&mut person).await;
    person
        .send_json(
            &json!({"type": "decide", "id": request["id"], "line": "reload in 5", "approve": true}),
        )
        .await;
    person.until_json("decided").await;
    let stdin = child.child.stdin.as_mut().expect("the agent's stdin");
    stdin.write_all(b"go\n").await.expect("tell the agent");
    let printed = child.finished().await;
    // The user said deny after the person approved: the person's decision
    // stands.
    assert_eq!(printed.get("is_error"), false, "{:?}", printed.get("text"));
    assert_eq!(site.received("reload in 5"), 1);
    let approved = site.audited("approval approved", "reload in 5");
    assert_ne!(approved["person"], "client_user", "{approved}");
}
