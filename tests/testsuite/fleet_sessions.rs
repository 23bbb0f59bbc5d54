//! The serving gateways' MCP sessions at the sites (the fleet of
//! `fleet.rs`): two serving gateways serve side by side, and one killed
//! costs the other's agents nothing, its write holds at the sites let go
//! once it has been silent 10 s; a session that ends at a serving gateway
//! ends its sessions at the sites at once, with their write holds.

use std::time::Duration;

use serde_json::json;
use serialgate_testkit::client::GateClient;

use super::fleet::{DEADLINE, Fleet, OPS, SITES, Setup, clock, kill, ok};

/// The names `agent`'s `list_ports` shows.
async fn port_names(agent: &GateClient) -> Vec<String> {
    let list = ok(agent, "list_ports", json!({})).await;
    list["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn two_serving_gateways_serve_every_site_and_one_killed_costs_the_other_nothing_and_lets_go_of_its_holds()
 {
    let Some(mut fleet) = Fleet::start_with(Setup {
        second_serving: true,
        ..Setup::default()
    })
    .await
    else {
        return;
    };
    let url2 = fleet.second.as_ref().map(|s| s.1.clone()).expect("hub2");
    let at_hub = fleet.agent(OPS).await;
    let at_hub2 = GateClient::connect_http(&url2, Some(OPS))
        .await
        .expect("an MCP session at hub2");
    // Each shows every site's ports, the other serving gateway's too.
    serialgate_testkit::wait::eventually("hub2 hears every site", DEADLINE, || async {
        let names = port_names(&at_hub2).await;
        if names == ["dc1/core-sw1", "dc2/core-sw1", "hub/hub-sw"] {
            Ok(())
        } else {
            Err(format!("{names:?}"))
        }
    })
    .await;
    assert_eq!(
        port_names(&at_hub).await,
        ["hub-sw", "dc1/core-sw1", "dc2/core-sw1"]
    );
    // Each works a site's switch, in its own session.
    ok(&at_hub, "connect", json!({"port": "dc1/core-sw1"})).await;
    ok(&at_hub2, "connect", json!({"port": "dc2/core-sw1"})).await;
    clock(&at_hub, "dc1/core-sw1").await;
    clock(&at_hub2, "dc2/core-sw1").await;
    let held = fleet
        .port_state(&at_hub, "dc2/core-sw1", |p| p["writer"]["who"].is_string())
        .await;
    assert!(
        held["writer"]["who"]
            .as_str()
            .is_some_and(|w| w.contains("token ops@hub2:")),
        "{held}"
    );

    let (mut hub2, _) = fleet.second.take().expect("hub2");
    kill(&mut hub2).await;
    let killed = std::time::Instant::now();
    // The other's session and connection keep working, and its view of
    // the sites stays whole.
    for _ in 0..3 {
        clock(&at_hub, "dc1/core-sw1").await;
    }
    let status = ok(&at_hub, "status", json!({})).await;
    assert_eq!(status["connection"], "dc1/core-sw1", "{status:#}");
    assert_eq!(status["state"], "open", "{status:#}");
    for site in SITES {
        fleet
            .port_state(&at_hub, &format!("{site}/core-sw1"), |p| {
                p["state"] == "open"
            })
            .await;
    }
    let last_call_at_dc1 = std::time::Instant::now();

    // hub2 was killed, so it told dc2 nothing of its sessions' end: dc2,
    // hearing no more from it, lets go of its hold within its silence
    // bound (10 s, its last word up to 2 s before it was killed), not
    // after an hour.
    let free = fleet
        .port_state(&at_hub, "dc2/core-sw1", |p| p["writer"].is_null())
        .await;
    assert_eq!(free["state"], "open", "{free}");
    let freed_after = killed.elapsed();
    assert!(
        freed_after >= Duration::from_secs(7),
        "dc2 let go of hub2's hold after {freed_after:?}, before its silence bound"
    );
    // hub, alive, keeps its sessions at dc1 past the bound without a
    // call: its word that it lives holds them. Nothing can be awaited
    // for a thing that must not happen: the test lets the bound and a
    // sweep pass since hub's last call at dc1.
    let quiet = Duration::from_secs(13).saturating_sub(last_call_at_dc1.elapsed());
    tokio::time::sleep(quiet).await;
    let still = ok(&at_hub, "list_ports", json!({})).await;
    let dc1 = still["ports"]
        .as_array()
        .and_then(|ports| ports.iter().find(|p| p["name"] == "dc1/core-sw1"))
        .cloned()
        .unwrap_or_default();
    assert!(
        dc1["writer"]["who"]
            .as_str()
            .is_some_and(|w| w.contains("token ops@hub:")),
        "hub's hold at dc1, {:?} after its last call there: {dc1}",
        last_call_at_dc1.elapsed()
    );
    // And the switch hub2's agent held is hub's agent's to use now.
    ok(&at_hub, "connect", json!({"port": "dc2/core-sw1"})).await;
    clock(&at_hub, "dc2/core-sw1").await;
}

#[tokio::test]
async fn a_session_ended_at_the_serving_gateway_lets_go_of_its_remote_holds_at_once() {
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let leaving = fleet.agent(OPS).await;
    ok(&leaving, "connect", json!({"port": "dc1/core-sw1"})).await;
    clock(&leaving, "dc1/core-sw1").await;
    let watcher = fleet.agent(OPS).await;
    fleet
        .port_state(&watcher, "dc1/core-sw1", |p| p["writer"]["who"].is_string())
        .await;
    leaving.close().await.expect("end the session");
    // Without the word of its end the site would keep the hold for an
    // hour of idleness.
    let free = fleet
        .port_state(&watcher, "dc1/core-sw1", |p| p["writer"].is_null())
        .await;
    assert_eq!(free["state"], "open", "{free}");
    let line = fleet.sites[0]
        .stderr
        .wait_for("ended; ending its 1 session(s) here")
        .await;
    assert!(line.contains(" of hub:"), "{line}");
    // Another session writes without taking anything over.
    ok(&watcher, "connect", json!({"port": "dc1/core-sw1"})).await;
    clock(&watcher, "dc1/core-sw1").await;
}
