//! A reload (SIGHUP) of gateways in a fleet (that of `fleet.rs`): what
//! `[fleet]` asks that only a restart can do is said in the log, and the
//! gateway goes on in the fleet as it started; a token's command policy
//! or access changed at the serving gateway applies to the next call on a
//! remote switch, in the same session, and to a call still waiting there.

use serde_json::json;
use serialgate_testkit::client::GateClient;
use serialgate_testkit::console::ConsoleConn;
use serialgate_testkit::rig::enable;

use super::approvals::pending;
use super::fleet::{Fleet, OPS, ROOT, SITES, Setup, clock, err, ok};

const AGENT: &str = "agent-secret-0123456789";

/// A fleet whose site dc1 has a console socket, and the agent token with
/// `policy` (its TOML line), connected to `dc1/core-sw1` and enabled;
/// `None` where the fleet cannot run (a missing tool, outside CI).
async fn agent_on_core_sw1(policy: &'static str) -> Option<(Fleet, GateClient)> {
    let fleet = Fleet::start_with(Setup {
        site_console: true,
        tokens: vec![("agent", AGENT, policy)],
        ..Setup::default()
    })
    .await?;
    let agent = fleet.agent(AGENT).await;
    ok(&agent, "connect", json!({"port": "dc1/core-sw1"})).await;
    enable(&agent).await;
    Some((fleet, agent))
}

#[tokio::test]
async fn a_reload_of_fleet_says_what_needs_a_restart_and_the_site_goes_on_serving() {
    let Some(mut fleet) = Fleet::start_with(Setup::default()).await else {
        return;
    };
    let config = &fleet.configs[0];
    let text = std::fs::read_to_string(config).expect("dc1's config");
    let moved = text
        .replace("site = \"dc1\"", "site = \"dc9\"\nserve = true")
        .replace(
            "urls = [\"nats://",
            "urls = [\"nats://127.0.0.1:1\", \"nats://",
        );
    assert_ne!(moved, text);
    std::fs::write(config, moved).expect("rewrite dc1's config");
    fleet.reload(0).await;
    let log = &mut fleet.sites[0].stderr;
    let urls = log
        .wait_for("[fleet] urls changed to nats://127.0.0.1:1, ")
        .await;
    assert!(
        urls.contains("this gateway stays connected through nats://")
            && urls.ends_with("until a restart (systemctl restart serialgate)"),
        "{urls}"
    );
    let site = log.wait_for("[fleet] site changed to dc9").await;
    assert!(
        site.contains("this gateway stays site dc1 (its ports, its call subject) until a restart"),
        "{site}"
    );
    let serve = log.wait_for("[fleet] serve changed to true").await;
    assert!(
        serve.contains("this gateway serves no other site's ports until a restart"),
        "{serve}"
    );
    // It is still dc1, and serves its switch through the fleet.
    let ops = fleet.agent(super::fleet::OPS).await;
    for site in SITES {
        fleet
            .port_state(&ops, &format!("{site}/core-sw1"), |p| p["state"] == "open")
            .await;
    }
    ok(&ops, "connect", json!({"port": "dc1/core-sw1"})).await;
    clock(&ops, "dc1/core-sw1").await;
}

#[tokio::test]
async fn a_token_s_policy_changed_by_a_reload_judges_its_next_remote_line_in_the_same_session() {
    let Some((fleet, agent)) = agent_on_core_sw1("policy = \"locked\"\n").await else {
        return;
    };
    let denied = err(
        &agent,
        "send_command",
        json!({"connection": "dc1/core-sw1", "command": "reload"}),
    )
    .await;
    assert!(
        denied.contains("policy \"locked\" never sends it"),
        "{denied}"
    );
    let serving = &fleet.configs[SITES.len()];
    let text = std::fs::read_to_string(serving).expect("the serving config");
    std::fs::write(
        serving,
        text.replace("policy = \"locked\"", "policy = \"guarded\""),
    )
    .expect("rewrite the serving config");
    fleet.reload(SITES.len()).await;
    // Now `reload` waits for a person at dc1, who denies it.
    let socket = fleet.dir.path().join("console-dc1.sock");
    let (mut person, _) = ConsoleConn::attach(&socket, "core-sw1", "watch", json!({})).await;
    let deny = async {
        let list = pending(&mut person, 1).await;
        assert_eq!(list[0]["line"], "reload", "{list:?}");
        person
            .send_json(
                &json!({"type": "decide", "id": list[0]["id"], "line": "reload", "approve": false}),
            )
            .await;
        person.until_json("decided").await
    };
    let (held, decided) = tokio::join!(
        agent.call(
            "send_command",
            json!({"connection": "dc1/core-sw1", "command": "reload"})
        ),
        deny
    );
    assert_eq!(decided["approved"], false, "{decided}");
    let held = held.expect("MCP").err();
    assert!(
        held.starts_with("denied: \"reload\" was denied by ")
            && held.contains("policy \"guarded\"")
            && held.ends_with("nothing was sent"),
        "{held}"
    );
    // The session's connection was made again at the site: it works.
    clock(&agent, "dc1/core-sw1").await;
    assert_eq!(
        serialgate_testkit::rig::count(&fleet.sims[0].received(), b"reload\r"),
        0
    );
}

/// A token a reload at the serving gateway lowers keeps nothing of its old
/// rights at a site, not even in the MCP session it already had there: a
/// former admin cannot take another token's write hold through it.
#[tokio::test]
async fn a_token_lowered_by_a_reload_has_no_old_rights_left_in_its_session_at_a_site() {
    let Some(fleet) = Fleet::start_with(Setup::default()).await else {
        return;
    };
    let ops = fleet.agent(OPS).await;
    ok(&ops, "connect", json!({"port": "dc1/core-sw1"})).await;
    enable(&ops).await;
    clock(&ops, "dc1/core-sw1").await;
    // root (admin) reads the switch: its session at dc1 starts.
    let root = fleet.agent(ROOT).await;
    let read = ok(&root, "connect", json!({"port": "dc1/core-sw1"})).await;
    assert!(!read["writer"].is_null(), "ops holds the write: {read}");
    let serving = &fleet.configs[SITES.len()];
    let text = std::fs::read_to_string(serving).expect("the serving config");
    let admin = "secret_file = \"root.token\"\nports = [\"*/*\"]\naccess = \"admin\"";
    assert!(text.contains(admin), "{text}");
    std::fs::write(
        serving,
        text.replace(admin, &admin.replace("\"admin\"", "\"write\"")),
    )
    .expect("rewrite the serving config");
    fleet.reload(SITES.len()).await;
    let refused = err(
        &root,
        "connect",
        json!({"port": "dc1/core-sw1", "take_over": true}),
    )
    .await;
    assert!(
        refused.starts_with("forbidden: ") && refused.contains("admin access"),
        "{refused}"
    );
    // ops still holds the switch and writes to it.
    clock(&ops, "dc1/core-sw1").await;
}

/// A remote line waiting for a person's approval at the site ends when a
/// reload at the serving gateway takes the write access of the token that
/// asked: the agent is told, the request is withdrawn at the site, and
/// nothing reaches the switch.
#[tokio::test]
async fn a_remote_line_waiting_for_approval_is_withdrawn_when_a_reload_lowers_its_token() {
    let Some((fleet, agent)) = agent_on_core_sw1("policy = \"guarded\"\n").await else {
        return;
    };
    let socket = fleet.dir.path().join("console-dc1.sock");
    let (mut person, _) = ConsoleConn::attach(&socket, "core-sw1", "watch", json!({})).await;
    let serving = &fleet.configs[SITES.len()];
    let text = std::fs::read_to_string(serving).expect("the serving config");
    let writes = "secret_file = \"agent.token\"\npolicy = \"guarded\"\nports = [\"*/*\"]\naccess = \"write\"";
    assert!(text.contains(writes), "{text}");
    let lower = async {
        let list = pending(&mut person, 1).await;
        assert_eq!(list[0]["line"], "reload", "{list:?}");
        std::fs::write(
            serving,
            text.replace(writes, &writes.replace("\"write\"", "\"read\"")),
        )
        .expect("rewrite the serving config");
        fleet.reload(SITES.len()).await;
        pending(&mut person, 0).await
    };
    let (refused, _) = tokio::join!(
        err(
            &agent,
            "send_command",
            json!({"connection": "dc1/core-sw1", "command": "reload"})
        ),
        lower
    );
    assert!(
        refused
            .starts_with("forbidden: a reload of this gateway's config took from token \"agent\"")
            && refused.contains("withdrawn, never sent"),
        "{refused}"
    );
    assert_eq!(
        serialgate_testkit::rig::count(&fleet.sims[0].received(), b"reload\r"),
        0
    );
}
