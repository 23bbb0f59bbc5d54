//! People at a serving gateway on the consoles of other sites' ports,
//! end to end, on the fleet of `fleet.rs` (a hub and a leaf per site, a
//! real nats-server each, two site gateways with a simulated Cisco
//! switch, a serving gateway with a console socket and its HTTP
//! listener): the real `serialgate console` client types into a remote
//! switch while an agent is `busy`; the web view in headless Chromium
//! lists the remote ports and shows one's output; a leaf killed mid-session is told and
//! what the switch printed meanwhile follows when it is back; a token of
//! one site is refused the other's consoles at every door (the socket's
//! list, the WebSocket, SSH); a site key cannot speak for another site's
//! consoles; a rogue site's events and ranges are bounded and cleaned.

use std::process::Stdio;

use serde_json::json;
use serialgate_testkit::browser;
use serialgate_testkit::client::Outcome;
use serialgate_testkit::console::{ConsoleConn, user_name};
use serialgate_testkit::wait;
use tokio::process::Command;

use super::console_client::{Terminal, spawn_on};
use super::fleet::{DC1_ONLY, DEADLINE, Fleet, OPS, RECOVERY, base, ok, try_as_site, ws};

/// The escape key of the console client, Ctrl-].
const ESC: u8 = 0x1d;
/// The remote port the tests use.
const DC1_SW: &str = "dc1/core-sw1";

/// The serving gateway's console socket.
fn socket(fleet: &Fleet) -> std::path::PathBuf {
    fleet.dir.path().join("serving-console.sock")
}

/// A call's outcome as text: `ok …`, or the error as the agent reads it.
fn said(outcome: Outcome) -> String {
    match outcome {
        Outcome::Ok(v) => format!("ok {v}"),
        Outcome::Err(e) => e,
    }
}

/// The rows of `serialgate console --list` at the serving gateway, as
/// cells.
async fn listed(fleet: &Fleet) -> Vec<Vec<String>> {
    let out = tokio::time::timeout(
        DEADLINE,
        Command::new(serialgate_testkit::binary::binary())
            .args(["console", "--list", "--socket"])
            .arg(socket(fleet))
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("--list ends")
    .expect("run the console client");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

#[tokio::test]
async fn a_person_types_show_clock_into_a_remote_switch_and_an_agent_is_busy_meanwhile() {
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    let rows = listed(&fleet).await;
    assert_eq!(rows[0], ["PORT", "STATE", "WATCHERS", "HOLDER"], "{rows:?}");
    let names: Vec<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        names,
        ["hub-sw", "dc1/core-sw1", "dc2/core-sw1"],
        "{rows:?}"
    );
    assert_eq!(rows[2][..4], ["dc1/core-sw1", "open", "-", "-"], "{rows:?}");

    let mut terminal = Terminal::open();
    let mut person = spawn_on(&terminal, &socket(&fleet), &[DC1_SW]);
    terminal
        .read_until(&format!("attached to {DC1_SW} as {}@hub:", user_name()))
        .await;
    terminal.read_until("you hold the write").await;
    terminal.type_keys(b"\r");
    terminal.read_until("SW1>").await;
    terminal.type_keys(b"show clock\r");
    // The switch's own clock line, then its prompt again.
    terminal.read_until("show clock\r\n").await;
    let screen = terminal.read_until("SW1>").await;
    let echo = "show clock\r\n";
    let answer = &screen[screen.rfind(echo).expect("the echo") + echo.len()..];
    let clock_line =
        regex::Regex::new(r"^\*\d{2}:\d{2}:\d{2}\.\d{3} UTC \w{3} \w{3} \d{1,2} \d{4}\r\nSW1>$")
            .expect("regex");
    assert!(clock_line.is_match(answer), "{answer:?}");
    assert!(fleet.sims[0].wait_received(b"show clock\r", DEADLINE).await);

    // An agent at the same serving gateway meanwhile: busy, naming the
    // person (their session runs at the site, under the site's hold).
    let agent = fleet.agent(OPS).await;
    ok(&agent, "connect", json!({"port": DC1_SW})).await;
    let busy = said(
        agent
            .call("send_text", json!({"text": "show clock"}))
            .await
            .expect("MCP"),
    );
    assert!(
        busy.starts_with("busy: ")
            && busy.contains(&format!("{}@hub:", user_name()))
            && busy.contains(" on console"),
        "{busy}"
    );
    // The list names the holder too, and the person watching there, as
    // the site announces them (within its next announcement).
    let holder = format!("{}@hub:", user_name());
    let fleet_ref = &fleet;
    let row = wait::eventually("the holder in the list", DEADLINE, async || {
        let rows = listed(fleet_ref).await;
        match rows.into_iter().find(|r| r[0] == DC1_SW) {
            Some(r) if r.len() > 7 && r[7].starts_with(&holder) => Ok(r),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(
        row[..7],
        [DC1_SW, "open", "1", "person", "at", "site", "dc1"],
        "{row:?}"
    );
    terminal.type_keys(&[ESC, b'.']);
    terminal
        .read_until(&format!("detached from {DC1_SW}]"))
        .await;
    let status = tokio::time::timeout(DEADLINE, person.wait())
        .await
        .expect("the client exits")
        .expect("wait");
    assert_eq!(status.code(), Some(0));
    // Detached, the hold is free: the agent's write goes through.
    wait::eventually("the hold is free", DEADLINE, async || {
        let sent = agent.call("send_text", json!({"text": "show clock"})).await;
        wait::when(said(sent.expect("MCP")), |s| s.starts_with("ok "))
    })
    .await;
}

#[tokio::test]
async fn the_web_view_of_the_serving_gateway_shows_a_remote_ports_output() {
    if !browser::available() {
        serialgate_testkit::skip::skipped("no Chromium for the web view");
        return;
    }
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    let base = base(&fleet);
    let line = "%SYS-5-CONFIG_I: Configured from console by vty0 (10.9.8.7)";
    browser::session(move |browser| async move {
        browser.sign_in(&base, OPS).await;
        // The ports page lists the other sites' ports; a person follows
        // the link to the console page.
        let row = "tr[data-port='dc1/core-sw1']";
        let shown = browser.until_text(row, "open").await;
        assert!(shown.contains("site dc1 · cisco-ios"), "{shown}");
        browser
            .find(&format!("{row} a"))
            .await
            .click()
            .await
            .expect("follow the port's link");
        browser.until_text("#port", DC1_SW).await;
        // Attached (the replay is in), then the switch speaks.
        browser.until_text("#state", "open").await;
        fleet.sims[0]
            .inject(format!("\r\n{line}\r\n").as_bytes())
            .await;
        browser.until_screen(line).await;
    })
    .await;
}

#[tokio::test]
async fn a_leaf_killed_mid_session_is_told_and_what_the_switch_printed_meanwhile_follows() {
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let (mut person, attached) =
        ConsoleConn::attach(&socket(&fleet), DC1_SW, "watch", json!({})).await;
    assert_eq!(attached["port"], DC1_SW, "{attached}");
    assert_eq!(attached["state"], "open", "{attached}");
    fleet.sims[0].inject(b"\r\nbefore the cut\r\n").await;
    person.until_output("before the cut").await;

    fleet.leaves[0].kill();
    let told = until_unreachable(&mut person).await;
    assert!(
        told.starts_with("site dc1 is unreachable since 20")
            && told.contains("dc1/core-sw1 keeps capturing there"),
        "{told}"
    );
    let meanwhile = "%LINK-3-UPDOWN: Interface Gi0/7, changed state to down";
    fleet.sims[0]
        .inject(format!("\r\n{meanwhile}\r\n").as_bytes())
        .await;

    fleet.leaves[0].restart().await;
    let seen = tokio::time::timeout(RECOVERY + DEADLINE, person.until_output(meanwhile))
        .await
        .expect("what the switch printed meanwhile, once the leaf is back");
    let state = seen
        .iter()
        .find(|m| m["type"] == "state")
        .expect("the port's state again");
    assert_eq!(state["state"], "open", "{seen:?}");
    // Each byte once, in order: nothing lost, nothing twice.
    let output = String::from_utf8_lossy(&person.output).into_owned();
    assert_eq!(output.matches("before the cut").count(), 1, "{output:?}");
    assert_eq!(output.matches(meanwhile).count(), 1, "{output:?}");
}

/// Reads until the serving gateway says the port's site is unreachable
/// (the port `down`, then an error naming since when); that error's
/// text.
async fn until_unreachable(person: &mut ConsoleConn) -> String {
    let down = tokio::time::timeout(RECOVERY, person.until_json("state"))
        .await
        .expect("the port's state within the deadline");
    assert_eq!(down["state"], "down", "{down}");
    let error = person.until_json("error").await;
    assert_eq!(error["code"], "port_unavailable", "{error}");
    error["message"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_token_of_one_site_is_refused_the_others_consoles_at_every_door() {
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    // The list over the WebSocket shows only its own site's ports.
    let mut conn = ConsoleConn::connect_ws(&ws(&fleet, "/console"), Some(DC1_ONLY))
        .await
        .expect("the console WebSocket");
    conn.send_json(&json!({"type": "list"})).await;
    let ports = conn.until_json("ports").await;
    let names: Vec<&str> = ports["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, [DC1_SW], "{ports}");

    // Attaching to dc2's port, for any port or for that one.
    for path in ["/console", "/ports/dc2%2Fcore-sw1/console"] {
        let mut conn = ConsoleConn::connect_ws(&ws(&fleet, path), Some(DC1_ONLY))
            .await
            .expect("the console WebSocket");
        conn.send_json(&json!({"type": "hello", "port": "dc2/core-sw1", "mode": "attach"}))
            .await;
        let messages = conn.until_closed().await;
        let error = messages
            .iter()
            .find(|m| m["type"] == "error")
            .unwrap_or_else(|| panic!("{path}: {messages:?}"));
        assert_eq!(
            error["message"],
            "no port \"dc2/core-sw1\" that this caller may use; `serialgate console --list` shows them",
            "{path}: {messages:?}"
        );
        assert!(
            messages.iter().all(|m| m["type"] != "attached"),
            "{path}: {messages:?}"
        );
    }
    // Its own site it may watch and type into.
    let (mut own, attached) = ConsoleConn::attach_ws(
        &ws(&fleet, "/console"),
        Some(DC1_ONLY),
        DC1_SW,
        "attach",
        json!({}),
    )
    .await
    .expect("the console WebSocket");
    assert_eq!(attached["writing"], true, "{attached}");
    own.send_data(b"\r").await;
    own.until_output("SW1>").await;
}

#[tokio::test]
async fn a_site_key_cannot_publish_another_sites_console_output_nor_take_its_consoles() {
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    let errors = try_as_site(
        &fleet.hub_url,
        "dc2",
        "serialgate.site.dc1.console.>",
        "serialgate.from.dc1.console.head.core-sw1",
    )
    .await;
    let all = errors.join("\n").to_lowercase();
    assert!(
        all.contains("permissions violation for subscription to \"serialgate.site.dc1.console.>\""),
        "{errors:?}"
    );
    assert!(
        all.contains(
            "permissions violation for publish to \"serialgate.from.dc1.console.head.core-sw1\""
        ),
        "{errors:?}"
    );
    // Its own are its to use.
    let own = try_as_site(
        &fleet.hub_url,
        "dc2",
        "serialgate.site.dc2.console.>",
        "serialgate.from.dc2.console.head.core-sw1",
    )
    .await;
    assert!(own.is_empty(), "{own:?}");
}

#[tokio::test]
async fn at_the_ssh_door_a_person_of_one_site_lists_and_attaches_it_and_is_refused_the_other() {
    if !super::ssh::have_openssh() {
        return;
    }
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    // The serving gateway again, with its SSH door and erin, who may
    // write on dc1's ports only.
    let dir = fleet.dir.path().to_owned();
    super::ssh::keygen(&dir, "erin");
    std::fs::copy(dir.join("erin.pub"), dir.join("erin.keys")).expect("erin's keys");
    super::ssh::private(&dir.join("erin.keys"));
    let state = dir.join("serving-state");
    std::fs::create_dir(&state).expect("state dir");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    }
    let ssh_port = serialgate_testkit::nats::free_port();
    let serving = fleet.configs[2].clone();
    let config = std::fs::read_to_string(&serving).expect("the serving config");
    let config = config.replacen(
        "[server]\n",
        &format!(
            "[server]\nssh_listen = \"127.0.0.1:{ssh_port}\"\nstate_dir = \"serving-state\"\n"
        ),
        1,
    ) + "\n[[people]]\nname = \"erin\"\nauthorized_keys = \"erin.keys\"\nports = [\"dc1/*\"]\naccess = \"write\"\n";
    std::fs::write(&serving, config).expect("rewrite the serving config");
    fleet.restart_serving().await;
    let agent = fleet.agent(OPS).await;
    fleet
        .port_state(&agent, DC1_SW, |p| p["state"] == "open")
        .await;
    let known_hosts = dir.join("serving-known_hosts");
    let host_key = Command::new("ssh-keygen")
        .arg("-y")
        .arg("-f")
        .arg(state.join("ssh_host_ed25519_key"))
        .output()
        .await
        .expect("ssh-keygen -y");
    std::fs::write(
        &known_hosts,
        format!(
            "[127.0.0.1]:{ssh_port} {}",
            String::from_utf8_lossy(&host_key.stdout).trim()
        ),
    )
    .expect("known_hosts");
    let ssh = |terminal: &Terminal, user: &str| {
        Command::new("ssh")
            .args(["-F", "/dev/null", "-i"])
            .arg(dir.join("erin"))
            .args(["-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none"])
            .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", known_hosts.display()))
            .args([
                "-o",
                "GlobalKnownHostsFile=/dev/null",
                "-o",
                "LogLevel=ERROR",
            ])
            .args(["-tt", "-p", &ssh_port.to_string(), "-l", user, "127.0.0.1"])
            .stdin(terminal.stdio())
            .stdout(terminal.stdio())
            .stderr(terminal.stdio())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn ssh")
    };
    let exit = async |child: &mut tokio::process::Child| {
        tokio::time::timeout(DEADLINE, child.wait())
            .await
            .expect("ssh exits")
            .expect("wait")
            .code()
    };

    let mut terminal = Terminal::open();
    let mut refused = ssh(&terminal, "erin:dc2/core-sw1");
    let screen = terminal.read_until("may use").await;
    assert!(
        screen.contains(r#"no port "dc2/core-sw1" that this caller may use"#),
        "{screen}"
    );
    assert_eq!(exit(&mut refused).await, Some(1));

    let mut terminal = Terminal::open();
    let mut person = ssh(&terminal, "erin");
    let menu = terminal.read_until("empty line to leave): ").await;
    assert!(
        menu.contains("dc1/core-sw1  open") && !menu.contains("dc2/") && !menu.contains("hub-sw"),
        "{menu}"
    );
    terminal.type_keys(b"dc1/core-sw1\r");
    terminal
        .read_until("attached to dc1/core-sw1 as erin@hub:")
        .await;
    terminal.read_until("you hold the write").await;
    terminal.type_keys(b"\r");
    terminal.read_until("SW1>").await;
    assert!(fleet.sims[0].wait_received(b"\r", DEADLINE).await);
    terminal.type_keys(b"\x1d.");
    assert_eq!(exit(&mut person).await, Some(0));
}

/// A rogue site (dc3's credentials, no gateway): it announces `evil`,
/// opens any console, sends hostile events and an oversized range first,
/// then a plain one.
async fn rogue_site(hub: &str) -> tokio::task::JoinHandle<()> {
    use futures_util::StreamExt;
    let client = async_nats::ConnectOptions::with_user_and_password(
        "dc3".into(),
        super::fleet::site_password("dc3"),
    )
    .connect(hub)
    .await
    .expect("dc3's credentials connect");
    let mut asked = client
        .subscribe("serialgate.site.dc3.console.>")
        .await
        .expect("subscribe");
    tokio::spawn(async move {
        let announcement = json!({"v": 2, "ports": [
            {"name": "evil", "state": "open", "preset": "p", "writer": null, "people": 0}
        ]})
        .to_string();
        let mut every = tokio::time::interval(std::time::Duration::from_millis(500));
        let mut reads = 0;
        loop {
            let message = tokio::select! {
                _ = every.tick() => {
                    let _ = client.publish("serialgate.announce.dc3", announcement.clone().into()).await;
                    continue;
                }
                m = asked.next() => match m { Some(m) => m, None => return },
            };
            let Some(reply) = message.reply.clone() else {
                continue;
            };
            let subject = message.subject.as_str();
            let answer: Vec<u8> = if subject.ends_with(".open") {
                let open: serde_json::Value =
                    serde_json::from_slice(&message.payload).expect("an open");
                let out = format!(
                    "serialgate.from.dc3.console.out.{}",
                    open["id"].as_str().expect("id")
                );
                let events = [
                    json!({"type": "attached", "port": "evil", "session": 7,
                        "you": "you\u{1b}]0;pwned\u{7}", "writing": false, "start": 0, "head": 0,
                        "log": "l1", "state": "open", "holder": null, "watchers": []}),
                    json!({"type": "holder", "what": "taken\r\n[serialgate: fake line]",
                        "holder": {"session": 9, "who": format!("eve\u{1b}[2J{}", "A".repeat(5000)), "since": "t"}}),
                    json!({"type": "error", "code": "busy", "message": "B".repeat(70 * 1024)}),
                    json!({"type": "who", "watchers": [], "holder": null}),
                ];
                let _ = client.publish(reply, "\"ok\"".into()).await;
                for event in events {
                    let _ = client.publish(out.clone(), event.to_string().into()).await;
                }
                let _ = client
                    .publish(
                        "serialgate.from.dc3.console.head.evil",
                        json!({"log": "l1", "head": 5}).to_string().into(),
                    )
                    .await;
                continue;
            } else if subject.ends_with(".read") {
                let ask: serde_json::Value =
                    serde_json::from_slice(&message.payload).expect("a read");
                let mut answer = json!({"log": "l1", "start": 0, "head": 5})
                    .to_string()
                    .into_bytes();
                answer.push(b'\n');
                if !ask["from"].is_null() {
                    reads += 1;
                    if reads == 1 {
                        answer.extend(std::iter::repeat_n(b'X', 70 * 1024));
                    } else {
                        answer.extend_from_slice(b"fine\n");
                    }
                }
                answer
            } else {
                b"\"ok\"".to_vec()
            };
            let _ = client.publish(reply, answer.into()).await;
        }
    })
}

#[tokio::test]
async fn a_rogue_sites_console_events_and_ranges_are_bounded_and_cleaned() {
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    let rogue = rogue_site(&fleet.hub_url).await;
    let agent = fleet.agent(OPS).await;
    fleet
        .port_state(&agent, "dc3/evil", |p| p["state"] == "open")
        .await;
    let (mut person, attached) =
        ConsoleConn::attach(&socket(&fleet), "dc3/evil", "watch", json!({})).await;
    assert_eq!(attached["port"], "dc3/evil", "{attached}");
    assert_eq!(attached["you"], "you?]0;pwned?", "{attached}");
    let holder = person.until_json("holder").await;
    assert_eq!(holder["what"], "taken??[serialgate: fake line]", "{holder}");
    let who = holder["holder"]["who"].as_str().expect("who");
    assert!(
        who.starts_with("eve?[2JAAA") && who.chars().count() == 512,
        "{holder}"
    );
    // The 70 KiB message was dropped: the next is the one after it.
    let next = loop {
        match person.next().await {
            Some(serialgate_testkit::console::Received::Json(m)) => break m,
            Some(_) => {}
            None => panic!("closed"),
        }
    };
    assert_eq!(next["type"], "who", "{next}");
    // The oversized range was refused; the plain one read after it.
    person.until_output("fine\n").await;
    assert_eq!(person.output, b"fine\n");
    rogue.abort();
}
