//! Configuration sessions end to end: an agent over MCP changes a
//! simulated device's configuration with `set_mode`, `send_config`,
//! `confirm_commit` and `save_config`, and the test checks the device's
//! own configuration afterwards (`SimHandle::configuration`), not just
//! what the tools said. The stored credentials' secrets are searched for
//! in everything an agent, an operator or a log reader could see.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle, SimOptions};
use serialgate_testkit::daemon::{Client, Daemon, NotifySocket};
use serialgate_testkit::wait;
use tempfile::TempDir;

/// How long any one awaited thing may take.
const DEADLINE: Duration = Duration::from_secs(20);

const LOGIN_PASSWORD: &str = "Lg1n-S3cret-pw";
const ENABLE_SECRET: &str = "En4ble-S3cret";

/// A simulated device as port `sw1`, the daemon (transcripts and the audit
/// log in `log_dir`, its own log at `trace`), an agent on stdio.
struct Site {
    sim: SimHandle,
    daemon: Daemon,
    agent: Client,
    dir: TempDir,
    _notify: NotifySocket,
}

impl Site {
    /// `profile` with `options`; `credentials` is the file's text (or none).
    async fn start(profile: Profile, options: SimOptions, credentials: Option<&str>) -> Site {
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("sw1");
        let sim = sim::spawn_with(profile, Some(link.clone()), options)
            .await
            .expect("simulated device");
        let mut port = format!(
            "[ports.sw1]\ndevice = {:?}\npreset = \"{}\"\n",
            link.display(),
            profile.preset()
        );
        if let Some(text) = credentials {
            let file = dir.path().join("sw1.credentials");
            std::fs::write(&file, text).expect("write credentials");
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
                .expect("chmod 600");
            port.push_str("credentials = \"sw1.credentials\"\n");
        }
        let config = dir.path().join("serialgate.toml");
        std::fs::write(&config, format!("[server]\nlog_dir = \"logs\"\n\n{port}"))
            .expect("write config");
        let notify = NotifySocket::bind(dir.path());
        let mut command = Daemon::command(Some(&config), &notify, &[]);
        command.env("SERIALGATE_LOG", "trace");
        let mut daemon = Daemon::run(command);
        notify.expect("READY=1").await;
        let agent = daemon.client().await;
        agent.ok("connect", json!({"port": "sw1"})).await;
        Site {
            sim,
            daemon,
            agent,
            dir,
            _notify: notify,
        }
    }

    fn logs(&self) -> PathBuf {
        self.dir.path().join("logs")
    }
}

fn credentials_file(enable: bool) -> String {
    let mut text = format!("username = \"admin\"\npassword = \"{LOGIN_PASSWORD}\"\n");
    if enable {
        text.push_str(&format!("enable = \"{ENABLE_SECRET}\"\n"));
    }
    text
}

fn cisco_options() -> SimOptions {
    SimOptions {
        enable_secret: ENABLE_SECRET.to_owned(),
        ..SimOptions::default()
    }
}

#[tokio::test]
async fn a_rejected_line_stops_the_change_and_the_switch_is_back_in_privileged_mode() {
    let site = Site::start(
        Profile::CiscoIos,
        cisco_options(),
        Some(&credentials_file(true)),
    )
    .await;
    let result = site
        .agent
        .ok(
            "send_config",
            json!({"lines": [
                "ntp server 10.0.0.1",
                "ntp srver 10.0.0.2",
                "logging host 10.0.0.3",
            ]}),
        )
        .await;
    let verdicts = result["verdicts"].as_array().expect("verdicts");
    assert_eq!(verdicts.len(), 2, "{result:#}");
    assert_eq!(verdicts[0]["ok"], true, "{result:#}");
    assert_eq!(verdicts[1]["ok"], false, "{result:#}");
    assert!(
        verdicts[1]["error"]
            .as_str()
            .is_some_and(|e| e.contains("% Invalid input detected")),
        "{result:#}"
    );
    assert!(
        verdicts[1]["output"]
            .as_str()
            .is_some_and(|o| o.contains('^')),
        "the device's marker line is in the verdict: {result:#}"
    );
    assert_eq!(result["applied"], 1);
    assert_eq!(result["failed_line"], "ntp srver 10.0.0.2");
    assert_eq!(
        result["not_applied"],
        json!(["ntp srver 10.0.0.2", "logging host 10.0.0.3"])
    );
    assert_eq!(result["mode"], "privileged", "{result:#}");
    assert_eq!(result["left_config"], true);
    let running = site.sim.configuration();
    assert!(
        running.iter().any(|l| l == "ntp server 10.0.0.1"),
        "{running:?}"
    );
    assert!(
        !running.iter().any(|l| l.contains("10.0.0.3")),
        "{running:?}"
    );
    assert!(!site.sim.in_config_mode());

    // Without stop_on_error the third line is applied too.
    let result = site
        .agent
        .ok(
            "send_config",
            json!({"lines": ["ntp server 10.0.0.4", "ntp srver 10.0.0.5", "logging host 10.0.0.6"],
                   "stop_on_error": false}),
        )
        .await;
    assert_eq!(
        result["verdicts"].as_array().map(Vec::len),
        Some(3),
        "{result:#}"
    );
    assert_eq!(result["applied"], 2);
    assert_eq!(result["not_applied"], json!(["ntp srver 10.0.0.5"]));
    let running = site.sim.configuration();
    assert!(
        running.iter().any(|l| l == "logging host 10.0.0.6"),
        "{running:?}"
    );

    // The agent's own error pattern marks a line the device accepted.
    let result = site
        .agent
        .ok(
            "send_config",
            json!({"lines": ["ntp server 10.0.0.7"], "error_patterns": ["^Configured"]}),
        )
        .await;
    assert_eq!(result["mode"], "privileged", "{result:#}");

    // Bad input is refused before anything is sent.
    let before = site.sim.received().len();
    for (args, says) in [
        (json!({"lines": []}), "give 1 to"),
        (json!({"lines": ["a\nb"]}), "line break"),
        (
            json!({"lines": ["x"], "error_patterns": ["[oops"]}),
            "bad_regex",
        ),
        (
            json!({"lines": ["x"], "commit": "check"}),
            "applies each line at once",
        ),
        (
            json!({"lines": ["x"], "confirm_minutes": 0, "commit": "confirmed"}),
            "confirm_minutes",
        ),
    ] {
        let e = site.agent.err("send_config", args.clone()).await;
        assert!(e.contains(says), "{args}: {e}");
    }
    assert_eq!(site.sim.received().len(), before, "nothing was sent");
}

#[tokio::test]
async fn a_login_with_stored_credentials_shows_the_secrets_nowhere() {
    let options = SimOptions {
        login: Some(sim::Credentials {
            username: "admin".into(),
            password: LOGIN_PASSWORD.into(),
        }),
        ..cisco_options()
    };
    let mut site = Site::start(Profile::CiscoIos, options, Some(&credentials_file(true))).await;
    let mut seen = Vec::new();
    let reached = site.agent.ok("set_mode", json!({"mode": "config"})).await;
    assert_eq!(reached["mode"], "config", "{reached:#}");
    let steps = reached["steps"].to_string();
    assert!(
        steps.contains("stored password") && steps.contains("stored enable secret"),
        "{steps}"
    );
    seen.push(reached);
    seen.push(
        site.agent
            .ok(
                "send_config",
                json!({"lines": ["username ops privilege 15 secret 0 ops-pw-123"]}),
            )
            .await,
    );
    // The device prints the secrets (a clear-text password in a config, an
    // echo): they never reach the log.
    site.sim
        .inject(format!("\r\nusername admin password 0 {LOGIN_PASSWORD}\r\nenable password {ENABLE_SECRET}\r\n").as_bytes())
        .await;
    let masked = format!("{}\r\n", "*".repeat(ENABLE_SECRET.len()));
    seen.push(
        site.agent
            .ok("read_until_prompt", json!({"prompt": masked, "timeout": 5}))
            .await,
    );
    let whole = site
        .agent
        .ok("read_output", json!({"cursor": 0, "max_bytes": 65536}))
        .await;
    assert!(
        whole["output"]
            .as_str()
            .is_some_and(|o| o.contains("enable password *************")),
        "the echo is masked, its length kept: {whole:#}"
    );
    seen.push(whole);
    seen.push(site.agent.ok("status", json!({})).await);
    seen.push(site.agent.ok("get_transcript", json!({})).await);
    // The daemon's stderr at trace level, the transcript and the audit
    // log on disk.
    site.daemon.signal(libc::SIGTERM);
    site.daemon.exit().await;
    let stderr = site.daemon.stderr.rest().await;
    let mut files = Vec::new();
    for entry in std::fs::read_dir(site.logs()).expect("log_dir") {
        let path = entry.expect("entry").path();
        files.push((
            path.clone(),
            std::fs::read_to_string(&path).unwrap_or_default(),
        ));
    }
    assert!(
        files.iter().any(|(p, _)| p.ends_with("audit.log")),
        "{files:?}"
    );
    let audit = &files
        .iter()
        .find(|(p, _)| p.ends_with("audit.log"))
        .expect("audit")
        .1;
    assert!(
        audit.contains("credential"),
        "the login is audited as such: {audit}"
    );
    let everything = [
        serde_json::to_string(&seen).expect("json"),
        stderr.join("\n"),
        files
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    ];
    for (what, text) in ["results", "stderr", "files"].iter().zip(everything) {
        for secret in [LOGIN_PASSWORD, ENABLE_SECRET] {
            assert!(!text.contains(secret), "{secret} in the {what}");
        }
    }
}

#[tokio::test]
async fn tokens_and_devices_that_cannot_log_in_get_a_clear_refusal() {
    // Wrong credentials: one try, no lock-out loop.
    let options = SimOptions {
        login: Some(sim::Credentials {
            username: "admin".into(),
            password: "the-real-one".into(),
        }),
        ..SimOptions::default()
    };
    let site = Site::start(Profile::CiscoIos, options, Some(&credentials_file(false))).await;
    let e = site
        .agent
        .err("set_mode", json!({"mode": "privileged"}))
        .await;
    assert!(
        e.starts_with("forbidden: ") && e.contains("refused the stored credentials"),
        "{e}"
    );
    let typed = String::from_utf8_lossy(&site.sim.received())
        .matches("admin")
        .count();
    assert_eq!(typed, 1, "one login attempt");

    // No credentials at all, at a login prompt.
    let options = SimOptions {
        login: Some(sim::Credentials {
            username: "admin".into(),
            password: LOGIN_PASSWORD.into(),
        }),
        ..SimOptions::default()
    };
    let site = Site::start(Profile::CiscoIos, options, None).await;
    let e = site.agent.err("set_mode", json!({"mode": "exec"})).await;
    assert!(e.contains("no stored credentials"), "{e}");
}

#[tokio::test]
async fn a_device_at_rommon_gets_a_clear_error_and_nothing_is_sent() {
    let options = SimOptions {
        rommon: true,
        ..SimOptions::default()
    };
    let site = Site::start(Profile::CiscoIos, options, Some(&credentials_file(true))).await;
    // The boot loader's prompt is on the line already.
    site.sim.inject(b"\r\nrommon 1 > ").await;
    let head = wait_for_head(&site.agent, 1).await;
    assert!(head > 0);
    let e = site
        .agent
        .err("send_config", json!({"lines": ["hostname SW2"]}))
        .await;
    assert!(
        e.starts_with("port_unavailable: ") && e.contains("ROMMON"),
        "{e}"
    );
    assert!(
        site.sim.received().is_empty(),
        "sent {:?}",
        site.sim.received()
    );
    let status = site.agent.ok("status", json!({})).await;
    assert_eq!(status["mode"], "recovery", "{status:#}");
}

/// Waits until the port's log holds at least `bytes`; returns the head.
async fn wait_for_head(agent: &Client, bytes: u64) -> u64 {
    // No MCP event says output arrived without reading it: poll.
    let what = format!("a head of {bytes} bytes");
    wait::eventually(&what, DEADLINE, async || {
        let status = agent.ok("status", json!({})).await;
        let head = status["head"].as_u64().unwrap_or(0);
        if head >= bytes { Ok(head) } else { Err(status) }
    })
    .await
}

/// Waits until a port event contains `needle`; returns the events.
async fn wait_for_event(agent: &Client, needle: &str) -> Value {
    // Port events reach an agent through status: poll.
    let what = format!("a port event with {needle:?}");
    wait::eventually(&what, DEADLINE, async || {
        wait::when(agent.ok("status", json!({})).await, |s| {
            s["events"].to_string().contains(needle)
        })
    })
    .await
}

#[tokio::test]
async fn junos_commit_confirmed_left_unconfirmed_rolls_back_and_the_port_says_so() {
    let options = SimOptions {
        minute: Duration::from_millis(300),
        ..SimOptions::default()
    };
    let site = Site::start(Profile::JuniperJunos, options, None).await;
    let result = site
        .agent
        .ok(
            "send_config",
            json!({"lines": ["set system host-name mx2"], "commit": "confirmed", "confirm_minutes": 1}),
        )
        .await;
    assert_eq!(result["commit"]["ok"], true, "{result:#}");
    assert!(result["commit"]["deadline"].is_string(), "{result:#}");
    assert_eq!(result["mode"], "exec", "{result:#}");
    assert!(
        site.sim
            .configuration()
            .iter()
            .any(|l| l.contains("host-name mx2")),
        "committed: {:?}",
        site.sim.configuration()
    );
    let status = site.agent.ok("status", json!({})).await;
    assert!(status["pending_confirm"].is_object(), "{status:#}");
    // Nobody confirms: the router rolls back by itself, and the port's
    // events say so.
    let status = wait_for_event(&site.agent, "not confirmed").await;
    assert!(status["pending_confirm"].is_null(), "{status:#}");
    assert!(
        !site
            .sim
            .configuration()
            .iter()
            .any(|l| l.contains("host-name mx2")),
        "rolled back: {:?}",
        site.sim.configuration()
    );
}

#[tokio::test]
async fn junos_commit_confirmed_then_confirmed_stays() {
    let minute = Duration::from_millis(1500);
    let options = SimOptions {
        minute,
        ..SimOptions::default()
    };
    let site = Site::start(Profile::JuniperJunos, options, None).await;
    let result = site
        .agent
        .ok(
            "send_config",
            json!({"lines": ["set system host-name mx3"], "commit": "confirmed", "confirm_minutes": 1}),
        )
        .await;
    assert_eq!(result["commit"]["ok"], true, "{result:#}");
    let confirmed = site.agent.ok("confirm_commit", json!({})).await;
    assert_eq!(confirmed["ok"], true, "{confirmed:#}");
    wait_for_event(&site.agent, "confirmed by").await;
    // Only time shows that nothing rolls back: wait past the deadline.
    tokio::time::sleep(minute * 2).await;
    assert!(
        site.sim
            .configuration()
            .iter()
            .any(|l| l.contains("host-name mx3")),
        "{:?}",
        site.sim.configuration()
    );
    let status = site.agent.ok("status", json!({})).await;
    assert!(
        !status["events"].to_string().contains("not confirmed"),
        "{status:#}"
    );
}

#[tokio::test]
async fn save_config_on_cisco_and_huawei_is_judged_by_the_device() {
    let site = Site::start(
        Profile::CiscoIos,
        cisco_options(),
        Some(&credentials_file(true)),
    )
    .await;
    let saved = site.agent.ok("save_config", json!({})).await;
    assert_eq!(saved["ok"], true, "{saved:#}");
    assert!(
        saved["output"].as_str().is_some_and(|o| o.contains("[OK]")),
        "{saved:#}"
    );
    assert_eq!(saved["mode"], "privileged");

    let site = Site::start(Profile::HuaweiVrp, SimOptions::default(), None).await;
    let saved = site.agent.ok("save_config", json!({})).await;
    assert_eq!(saved["ok"], true, "{saved:#}");
    assert!(
        saved["output"]
            .as_str()
            .is_some_and(|o| o.contains("successfully")),
        "{saved:#}"
    );

    // Junos keeps every commit: saving is refused with the reason.
    let site = Site::start(Profile::JuniperJunos, SimOptions::default(), None).await;
    let e = site.agent.err("save_config", json!({})).await;
    assert!(e.contains("keeps every commit"), "{e}");
}

#[tokio::test]
async fn over_http_only_a_token_allowed_to_may_log_in_with_stored_credentials() {
    use serialgate_testkit::client::GateClient;
    use serialgate_testkit::daemon::tokens_toml;
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("sw1");
    let options = SimOptions {
        login: Some(sim::Credentials {
            username: "admin".into(),
            password: LOGIN_PASSWORD.into(),
        }),
        ..cisco_options()
    };
    let sim = sim::spawn_with(Profile::CiscoIos, Some(link.clone()), options)
        .await
        .expect("simulated switch");
    let creds = dir.path().join("sw1.credentials");
    std::fs::write(&creds, credentials_file(true)).expect("credentials");
    std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let tokens = tokens_toml(
        dir.path(),
        &[
            ("ops", "ops-secret-0123456789", r#"["sw*"]"#, "write"),
            ("noc", "noc-secret-0123456789", r#"["sw*"]"#, "write"),
            ("audit", "audit-secret-0123456789", r#"["sw*"]"#, "read"),
        ],
    )
    .replace(
        "secret_file = \"noc.token\"",
        "secret_file = \"noc.token\"\nuse_credentials = true",
    );
    let config = dir.path().join("serialgate.toml");
    std::fs::write(
        &config,
        format!(
            "[ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\ncredentials = \"sw1.credentials\"\n\n{tokens}",
            link.display()
        ),
    )
    .expect("config");
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    let url = daemon.http_url().await;
    notify.expect("READY=1").await;
    let session = |secret: &'static str| {
        let url = url.clone();
        async move {
            let client = GateClient::connect_http(&url, Some(secret))
                .await
                .expect("MCP over HTTP");
            client
                .call("connect", json!({"port": "sw1"}))
                .await
                .expect("call")
                .ok();
            client
        }
    };
    // A read token does not even see the configuration tools work.
    let audit = session("audit-secret-0123456789").await;
    let e = audit
        .call("send_config", json!({"lines": ["ntp server 10.0.0.9"]}))
        .await
        .expect("call")
        .err();
    assert!(e.starts_with("forbidden: "), "{e}");
    // A write token without use_credentials is told what to set; the
    // device got the user name prompt's wake-up and nothing secret.
    let ops = session("ops-secret-0123456789").await;
    let e = ops
        .call("set_mode", json!({"mode": "privileged"}))
        .await
        .expect("call")
        .err();
    assert!(
        e.contains("may not use stored credentials") && e.contains("use_credentials"),
        "{e}"
    );
    assert!(!String::from_utf8_lossy(&sim.received()).contains("admin"));
    ops.close().await.ok();
    // The token allowed to logs in, once ops's session has ended at the
    // daemon (a moment after its client closed it): until then its write
    // hold stands, and another token may not take it.
    let noc = session("noc-secret-0123456789").await;
    wait::eventually(
        "noc holding sw1 once ops has gone",
        DEADLINE,
        async || match noc
            .call("connect", json!({"port": "sw1", "take_over": true}))
            .await
            .expect("call")
        {
            serialgate_testkit::client::Outcome::Ok(_) => Ok(()),
            serialgate_testkit::client::Outcome::Err(e) => Err(e),
        },
    )
    .await;
    let reached = noc
        .call("set_mode", json!({"mode": "privileged"}))
        .await
        .expect("call")
        .ok();
    assert_eq!(reached["mode"], "privileged", "{reached:#}");
}

#[tokio::test]
async fn an_ios_revert_timer_left_unconfirmed_takes_the_change_back() {
    let options = SimOptions {
        minute: Duration::from_millis(300),
        ..cisco_options()
    };
    let site = Site::start(Profile::CiscoIos, options, Some(&credentials_file(true))).await;
    let result = site
        .agent
        .ok(
            "send_config",
            json!({"lines": ["ntp server 10.9.9.9"], "commit": "confirmed", "confirm_minutes": 1}),
        )
        .await;
    assert_eq!(
        result["commit"]["command"], "configure terminal revert timer 1",
        "{result:#}"
    );
    assert_eq!(result["applied"], 1, "{result:#}");
    assert!(
        site.sim
            .configuration()
            .iter()
            .any(|l| l == "ntp server 10.9.9.9")
    );
    let status = wait_for_event(&site.agent, "not confirmed").await;
    assert!(status["pending_confirm"].is_null(), "{status:#}");
    assert!(
        !site
            .sim
            .configuration()
            .iter()
            .any(|l| l.contains("10.9.9.9")),
        "reverted: {:?}",
        site.sim.configuration()
    );
}

/// Whether the router's active configuration has a line containing `text`.
fn active_has(sim: &SimHandle, text: &str) -> bool {
    sim.configuration().iter().any(|l| l.contains(text))
}

#[tokio::test]
async fn a_junos_commit_check_that_fails_reports_the_errors_and_leaves_nothing_behind() {
    let site = Site::start(Profile::JuniperJunos, SimOptions::default(), None).await;
    let line = "set interfaces ge-0/0/99 unit 0 family inet address 10.9.9.9";
    let result = site
        .agent
        .ok("send_config", json!({"lines": [line], "commit": "check"}))
        .await;
    // The router takes the line into the candidate; only the check finds
    // what is wrong with it.
    assert_eq!(result["verdicts"][0]["ok"], true, "{result:#}");
    assert_eq!(result["commit"]["command"], "commit check", "{result:#}");
    assert_eq!(result["commit"]["ok"], false, "{result:#}");
    let output = result["commit"]["output"].as_str().unwrap_or_default();
    assert!(
        output.contains("ge-0/0/99 does not exist") && output.contains("check-out failed"),
        "the router's reasons are in the result: {result:#}"
    );
    assert_eq!(result["applied"], 0, "{result:#}");
    assert_eq!(result["not_applied"], json!([line]), "{result:#}");
    assert_eq!(result["mode"], "exec", "{result:#}");
    assert!(!active_has(&site.sim, "ge-0/0/99"));
    // The candidate was discarded: a later change commits only its own line.
    let next = site
        .agent
        .ok(
            "send_config",
            json!({"lines": ["set system host-name mx9"]}),
        )
        .await;
    assert_eq!(next["commit"]["ok"], true, "{next:#}");
    assert!(active_has(&site.sim, "host-name mx9"));
    assert!(!active_has(&site.sim, "ge-0/0/99"));
    // A check that passes applies nothing either.
    let passed = site
        .agent
        .ok(
            "send_config",
            json!({"lines": ["set system host-name mx10"], "commit": "check"}),
        )
        .await;
    assert_eq!(passed["commit"]["ok"], true, "{passed:#}");
    assert_eq!(passed["applied"], 0, "{passed:#}");
    assert!(active_has(&site.sim, "host-name mx9"));
    assert!(!active_has(&site.sim, "host-name mx10"));
}

#[tokio::test]
async fn junos_rollback_loads_an_earlier_commit_and_refuses_what_cannot_be() {
    let site = Site::start(Profile::JuniperJunos, SimOptions::default(), None).await;
    for name in ["mx2", "mx3"] {
        let result = site
            .agent
            .ok(
                "send_config",
                json!({"lines": [format!("set system host-name {name}")]}),
            )
            .await;
        assert_eq!(result["commit"]["ok"], true, "{result:#}");
    }
    assert!(active_has(&site.sim, "host-name mx3"));
    let back = site.agent.ok("rollback", json!({"to": 1})).await;
    assert_eq!(back["ok"], true, "{back:#}");
    assert_eq!(
        back["commands"],
        json!(["rollback 1", "commit"]),
        "{back:#}"
    );
    assert_eq!(back["mode"], "exec", "{back:#}");
    assert!(
        active_has(&site.sim, "host-name mx2") && !active_has(&site.sim, "host-name mx3"),
        "{:?}",
        site.sim.configuration()
    );
    // Discarding an empty candidate is harmless and says so.
    let discarded = site.agent.ok("rollback", json!({})).await;
    assert_eq!(discarded["ok"], true, "{discarded:#}");
    assert_eq!(discarded["commands"], json!(["rollback 0"]));
    // A commit the router does not have is its error, judged as one.
    let missing = site.agent.ok("rollback", json!({"to": 40})).await;
    assert_eq!(missing["ok"], false, "{missing:#}");
    assert!(
        missing["error_lines"]
            .to_string()
            .contains("rollback 40 does not exist"),
        "{missing:#}"
    );
    assert!(active_has(&site.sim, "host-name mx2"));
    let refused = site.agent.err("rollback", json!({"to": 50})).await;
    assert!(refused.starts_with("invalid_argument:"), "{refused}");
}

#[tokio::test]
async fn a_device_without_a_candidate_refuses_rollback_and_commit_modes() {
    let site = Site::start(
        Profile::CiscoIos,
        cisco_options(),
        Some(&credentials_file(true)),
    )
    .await;
    let before = site.sim.configuration();
    let refused = site.agent.err("rollback", json!({})).await;
    assert!(
        refused.starts_with("invalid_argument:") && refused.contains("no candidate"),
        "{refused}"
    );
    let refused = site
        .agent
        .err(
            "send_config",
            json!({"lines": ["hostname sw9"], "commit": "check"}),
        )
        .await;
    assert!(
        refused.starts_with("invalid_argument:") && refused.contains("nothing was sent"),
        "{refused}"
    );
    assert_eq!(site.sim.configuration(), before);
}
