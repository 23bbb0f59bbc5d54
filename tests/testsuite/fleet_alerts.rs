//! Alerts, resources and transfers of a port of another site, end to
//! end, on the fleet of `fleet.rs` (a hub `nats-server`, a leaf per site
//! running JetStream in the site's own domain, real gateways, simulated
//! Cisco switches): an agent at the serving gateway subscribes to a
//! remote port's alerts as to a local one's and is told of each; alerts
//! raised while the site's leaf is down reach it once the leaf is back,
//! each once and in order, and never again after the serving gateway
//! restarts; one raised while only the uplink is down waits in the site's
//! own stream; a command's whole output is read through the serving
//! gateway; an image goes from the site's files_dir to a remote ROMMON; a
//! site key cannot touch another site's alert stream, and a rogue site's
//! alert is shown bounded and escaped.

use std::time::Duration;

use serde_json::{Value, json};
use serialgate_testkit::nats;
use serialgate_testkit::rig::num;
use serialgate_testkit::updates::{UpdatesClient, next_updated};
use serialgate_testkit::{rig, wait};

use rmcp::ServiceExt;

use crate::fleet::{DC1_ONLY, DEADLINE, Fleet, OPS, ROOT, ok, start_leaf, try_as_site};
use crate::transfer::{Collector, request};

/// How long a subscribed agent may wait to be told of an alert: a
/// deadline on the event (a site's uplink coming back takes a few
/// seconds of redials), not a measure of how soon it comes.
const TOLD_WITHIN: Duration = Duration::from_secs(30);

const MEMORY: &[u8] = b"\r\n%SYS-2-MALLOCFAIL: Memory allocation of 65536 bytes failed\r\n";
const FAN: &[u8] = b"\r\n%FAN-1-FAILED: Fan 2 has failed\r\n";
const CRASH: &[u8] = b"\r\nUnexpected exception to CPU: vector 1500, PC = 0x0\r\n";
const RESTART: &[u8] = b"\r\n%SYS-5-RESTART: System restarted --\r\n";

fn alerts_uri(port: &str) -> String {
    format!("serialgate://ports/{port}/alerts")
}

async fn agent(fleet: &Fleet, secret: &str) -> UpdatesClient {
    UpdatesClient::http(&fleet.url, secret)
        .await
        .expect("an MCP session at the serving gateway")
}

/// The alerts resource of `port` as the agent reads it.
async fn read_alerts(agent: &UpdatesClient, port: &str) -> Value {
    let text = agent
        .read(&alerts_uri(port))
        .await
        .unwrap_or_else(|e| panic!("read the alerts of {port}: {e}"));
    serde_json::from_str(&text).expect("the alerts resource is JSON")
}

/// Reads `port`'s alerts until `total` have been delivered.
async fn delivered(agent: &UpdatesClient, port: &str, total: u64) -> Value {
    wait::eventually(
        &format!("{total} alert(s) of {port} delivered"),
        TOLD_WITHIN,
        async || {
            let shown = read_alerts(agent, port).await;
            if shown["total"] == total {
                Ok(shown)
            } else {
                Err(shown.to_string())
            }
        },
    )
    .await
}

/// `(id, watch, severity, text)` of each alert shown, all of `port`.
fn summary_of(shown: &Value, port: &str) -> Vec<(u64, String, String, String)> {
    shown["alerts"]
        .as_array()
        .expect("alerts")
        .iter()
        .map(|a| {
            assert_eq!(a["port"], port, "{a}");
            (
                num(a, "id"),
                a["watch"].as_str().unwrap_or_default().to_owned(),
                a["severity"].as_str().unwrap_or_default().to_owned(),
                a["text"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// [`summary_of`] dc1's switch.
fn summary(shown: &Value) -> Vec<(u64, String, String, String)> {
    summary_of(shown, "dc1/core-sw1")
}

fn alert(id: u64, watch: &str, severity: &str, text: &str) -> (u64, String, String, String) {
    (id, watch.into(), severity.into(), text.into())
}

#[tokio::test]
async fn an_agent_subscribed_to_a_remote_ports_alerts_is_told_of_the_one_its_switch_raises() {
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    let ops = agent(&fleet, OPS).await;
    let uri = alerts_uri("dc1/core-sw1");
    ops.subscribe(&uri)
        .await
        .expect("subscribe as to a local port");

    fleet.sims[0].inject(MEMORY).await;
    assert_eq!(
        ops.next_update(TOLD_WITHIN).await.as_deref(),
        Some(uri.as_str()),
        "told of the remote switch's alert"
    );
    let shown = read_alerts(&ops, "dc1/core-sw1").await;
    assert_eq!(shown["port"], "dc1/core-sw1", "{shown}");
    assert_eq!(shown["total"], 1, "{shown}");
    assert_eq!(
        summary(&shown),
        [alert(1, "memory", "error", "%SYS-2-MALLOCFAIL")]
    );
    let raised = &shown["alerts"][0];
    let (start, end) = (num(raised, "start"), num(raised, "end"));
    assert_eq!(end - start, "%SYS-2-MALLOCFAIL".len() as u64, "{raised}");
    let at = num(raised, "at_unix_ms");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    assert!(at <= now && now - at < 120_000, "{raised}");
    // The range is the site's log's: read there, it is the switch's text.
    ops.call("connect", json!({"port": "dc1/core-sw1"}))
        .await
        .ok();
    let read = ops
        .call(
            "read_output",
            json!({"connection": "dc1/core-sw1", "cursor": start, "max_bytes": end - start}),
        )
        .await
        .ok();
    assert_eq!(read["output"], "%SYS-2-MALLOCFAIL", "{read}");
    // The other site's port was told nothing.
    let other = read_alerts(&ops, "dc2/core-sw1").await;
    assert_eq!(other["total"], 0, "{other}");
    assert_eq!(ops.queued_update().await, None);
}

#[tokio::test]
async fn alerts_raised_while_a_site_is_cut_off_arrive_once_each_in_order_and_not_again_after_a_restart()
 {
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let ops = agent(&fleet, OPS).await;
    let uri = alerts_uri("dc1/core-sw1");
    ops.subscribe(&uri).await.expect("subscribe");

    fleet.leaves[0].kill();
    fleet
        .port_state(&fleet.agent(OPS).await, "dc1/core-sw1", |p| {
            p["down_reason"]
                .as_str()
                .is_some_and(|r| r.contains("unreachable since"))
        })
        .await;
    // The switch raises three alerts at its site meanwhile; the site's
    // gateway has each (its journal says so) while nobody hears of it.
    for (line, logged) in [
        (MEMORY, "alert memory (error) on core-sw1"),
        (FAN, "alert hardware (error) on core-sw1"),
        (CRASH, "alert crash (critical) on core-sw1"),
    ] {
        fleet.sims[0].inject(line).await;
        fleet.sites[0].stderr.wait_for(logged).await;
    }
    let meanwhile = read_alerts(&ops, "dc1/core-sw1").await;
    assert_eq!(meanwhile["total"], 0, "{meanwhile}");

    fleet.leaves[0].restart().await;
    let back = std::time::Instant::now();
    assert_eq!(
        ops.next_update(TOLD_WITHIN).await.as_deref(),
        Some(uri.as_str()),
        "told once the site is back"
    );
    eprintln!("the agent was told {:?} after the leaf", back.elapsed());
    delivered(&ops, "dc1/core-sw1", 3).await;
    // One more after: when it is there, nothing came twice before it.
    fleet.sims[0].inject(RESTART).await;
    let shown = delivered(&ops, "dc1/core-sw1", 4).await;
    assert_eq!(
        summary(&shown),
        [
            alert(1, "memory", "error", "%SYS-2-MALLOCFAIL"),
            alert(2, "hardware", "error", "%FAN-1-FAILED"),
            alert(3, "crash", "critical", "Unexpected exception to CPU"),
            alert(4, "reboot", "warning", "%SYS-5-RESTART"),
        ],
        "{shown:#}"
    );

    // A new process of the serving gateway: none of the four is
    // delivered again, and the next alert is.
    drop(ops);
    fleet.restart_serving().await;
    let ops = agent(&fleet, OPS).await;
    fleet
        .port_state(&fleet.agent(OPS).await, "dc1/core-sw1", |p| {
            p["state"] == "open"
        })
        .await;
    ops.subscribe(&uri).await.expect("subscribe again");
    fleet.sims[0].inject(MEMORY).await;
    assert_eq!(
        ops.next_update(TOLD_WITHIN).await.as_deref(),
        Some(uri.as_str())
    );
    let shown = delivered(&ops, "dc1/core-sw1", 1).await;
    assert_eq!(
        summary(&shown),
        [alert(5, "memory", "error", "%SYS-2-MALLOCFAIL")],
        "{shown:#}"
    );
    // The site itself still lists all five (the alerts tool runs there).
    ops.call("connect", json!({"port": "dc1/core-sw1"}))
        .await
        .ok();
    let listed = ops
        .call("alerts", json!({"connection": "dc1/core-sw1"}))
        .await
        .ok();
    let ids: Vec<u64> = listed["alerts"]
        .as_array()
        .expect("alerts")
        .iter()
        .map(|a| num(a, "id"))
        .collect();
    assert_eq!(ids, [1, 2, 3, 4, 5], "{listed:#}");
}

#[tokio::test]
async fn an_alert_raised_while_the_uplink_is_down_waits_in_the_sites_own_stream_and_then_arrives() {
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let uri = alerts_uri("dc2/core-sw1");
    let ops = agent(&fleet, OPS).await;
    ops.subscribe(&uri).await.expect("subscribe");
    // A sessionless client listens instead (`subscriptions/listen`).
    let listener = UpdatesClient::sessionless(&fleet.url, OPS)
        .await
        .expect("a sessionless client");
    let mut listening = listener
        .listen(std::slice::from_ref(&uri))
        .await
        .expect("listen");

    // The hub is gone: every leaf's uplink is cut, the leaves and the
    // sites' gateways stay up.
    fleet.hub.kill();
    fleet
        .port_state(&fleet.agent(OPS).await, "dc2/core-sw1", |p| {
            p["state"] == "down"
        })
        .await;
    fleet.sims[1].inject(CRASH).await;
    fleet.sites[1]
        .stderr
        .wait_for("alert crash (critical) on core-sw1")
        .await;
    // The site's own stream, in its leaf, keeps it meanwhile.
    let at_site = async_nats::connect(fleet.leaves[1].url())
        .await
        .expect("connect to dc2's leaf");
    let js = async_nats::jetstream::with_domain(at_site, "dc2");
    wait::eventually("the alert in dc2's stream", DEADLINE, async || {
        let mut stream = js
            .get_stream("serialgate-alerts-dc2")
            .await
            .map_err(|e| e.to_string())?;
        let info = stream.info().await.map_err(|e| e.to_string())?;
        if info.state.messages == 1 {
            Ok(())
        } else {
            Err(format!("{} message(s)", info.state.messages))
        }
    })
    .await;

    fleet.hub.restart().await;
    let back = std::time::Instant::now();
    assert_eq!(
        ops.next_update(TOLD_WITHIN).await.as_deref(),
        Some(uri.as_str()),
        "told once the uplink is back"
    );
    eprintln!("the agent was told {:?} after the hub", back.elapsed());
    assert_eq!(
        next_updated(&mut listening, TOLD_WITHIN).await.as_deref(),
        Some(uri.as_str()),
        "the listening client is told too"
    );
    let shown = delivered(&ops, "dc2/core-sw1", 1).await;
    assert_eq!(
        summary_of(&shown, "dc2/core-sw1"),
        [alert(1, "crash", "critical", "Unexpected exception to CPU")]
    );
}

#[tokio::test]
async fn a_remote_commands_whole_output_is_read_through_the_serving_gateway() {
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    let ops = fleet.agent(OPS).await;
    ok(&ops, "connect", json!({"port": "dc2/core-sw1"})).await;
    rig::enable(&ops).await;
    let cut = ok(
        &ops,
        "send_command",
        json!({"connection": "dc2/core-sw1", "command": "show version", "max_output": 200}),
    )
    .await;
    let resource = cut["resource"]
        .as_str()
        .unwrap_or_else(|| panic!("a resource for the rest: {cut:#}"));
    assert!(
        resource.starts_with("serialgate://ports/dc2/core-sw1/output/"),
        "{cut:#}"
    );
    // Read in the same session: the site remembers the command, and cuts
    // its echo and the prompt as for a local port.
    let whole = ops
        .read_resource(resource)
        .await
        .expect("read the whole output");
    let shown = cut["output"].as_str().expect("output");
    assert!(
        whole.starts_with("Cisco IOS Software, C2960X Software")
            && whole.contains("\nSW1 uptime is ")
            && !whole.contains("show version")
            && !whole.trim_end().ends_with("SW1#")
            && whole.len() > shown.len(),
        "{whole}"
    );
    // A token that does not reach dc2 can neither read it nor subscribe
    // to dc2's alerts, as for a local port.
    let dc1 = fleet.agent(DC1_ONLY).await;
    let refused = dc1.read_resource(resource).await.unwrap_err().to_string();
    assert!(refused.contains("forbidden"), "{refused}");
    let dc1 = agent(&fleet, DC1_ONLY).await;
    let refused = dc1
        .subscribe(&alerts_uri("dc2/core-sw1"))
        .await
        .unwrap_err();
    assert!(refused.contains("forbidden"), "{refused}");
}

#[tokio::test]
async fn a_site_key_cannot_read_or_write_another_sites_alert_stream() {
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    for (subscribe, publish) in [
        ("$JS.dc2.API.>", "serialgate.from.dc2.alerts"),
        (
            "$JS.ACK.serialgate-alerts-dc2.>",
            "$JS.dc2.API.STREAM.PURGE.serialgate-alerts-dc2",
        ),
    ] {
        let errors = try_as_site(&fleet.hub_url, "dc1", subscribe, publish).await;
        let all = errors.join("\n").to_lowercase();
        assert!(
            all.contains(&format!(
                "permissions violation for subscription to \"{}\"",
                subscribe.to_lowercase()
            )),
            "{errors:?}"
        );
        assert!(
            all.contains(&format!(
                "permissions violation for publish to \"{}\"",
                publish.to_lowercase()
            )),
            "{errors:?}"
        );
    }
    let own = try_as_site(
        &fleet.hub_url,
        "dc1",
        "$JS.dc1.API.>",
        "serialgate.from.dc1.alerts",
    )
    .await;
    assert!(own.is_empty(), "{own:?}");
}

#[tokio::test]
async fn a_rogue_sites_alert_is_shown_bounded_and_escaped_and_cannot_land_on_another_site() {
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let Some(binary) = nats::binary() else {
        return;
    };
    // dc3 has a leaf with JetStream of its own and a stream it fills as
    // it likes.
    let leaf = start_leaf(&binary, fleet.dir.path(), "dc3", fleet.leaf_port).await;
    let rogue = async_nats::connect(leaf.url())
        .await
        .expect("connect to dc3's leaf");
    let js = async_nats::jetstream::with_domain(rogue.clone(), "dc3");
    js.get_or_create_stream(async_nats::jetstream::stream::Config {
        name: "serialgate-alerts-dc3".into(),
        subjects: vec!["serialgate.from.dc3.alerts".into()],
        ..Default::default()
    })
    .await
    .expect("dc3's stream");
    let forged = json!({"v": 2, "id": 1, "port": "../dc1/core-sw1", "watch": "crash",
        "severity": "critical", "at_unix_ms": 1, "text": "forged", "start": 0, "end": 6});
    let hostile = json!({"v": 2, "id": 2, "port": "evil", "watch": "crash\u{1b}]0;owned\u{7}",
        "severity": "critical", "at_unix_ms": 1,
        "text": format!("\u{1b}[2Jboom\r\nforged line\u{1b}[31m{}", "A".repeat(5000)),
        "start": 0, "end": 4});
    let forging_a_log_line = json!({"v": 2, "id": 3, "port": "evil", "watch": "w",
        "severity": "critical\u{1b}[2J\nFAKE LOG LINE", "at_unix_ms": 1, "text": "t", "start": 0, "end": 1});
    for alert in [forged, hostile, forging_a_log_line] {
        js.publish("serialgate.from.dc3.alerts", alert.to_string().into())
            .await
            .expect("publish")
            .await
            .expect("stored");
    }
    let ops = agent(&fleet, OPS).await;
    let announcement = json!({"v": 2, "ports": [
        {"name": "evil", "state": "open", "preset": "cisco-ios", "writer": null, "people": 0}]});
    rogue
        .publish("serialgate.announce.dc3", announcement.to_string().into())
        .await
        .expect("announce");
    rogue.flush().await.expect("flush");
    fleet
        .port_state(&fleet.agent(OPS).await, "dc3/evil", |_| true)
        .await;
    let shown = delivered(&ops, "dc3/evil", 1).await;
    let evil = &shown["alerts"][0];
    assert_eq!(evil["port"], "dc3/evil", "{evil}");
    assert_eq!(evil["watch"], "crash", "{evil}");
    let text = evil["text"].as_str().expect("text");
    assert!(
        text.starts_with("boom") && text.len() <= 200 && !text.chars().any(char::is_control),
        "{text:?}"
    );
    // The forged one was dropped, said so, and is on no port of dc1.
    let line = fleet
        .serving
        .stderr
        .wait_for("dropped an alert of site dc3")
        .await;
    assert!(line.contains("no port name"), "{line}");
    // A site's text in the reason stays on its line, escaped.
    let line = fleet
        .serving
        .stderr
        .wait_for("dropped an alert of site dc3")
        .await;
    assert!(
        line.contains("FAKE LOG LINE") && !line.contains('\u{1b}'),
        "{line:?}"
    );
    let root = agent(&fleet, ROOT).await;
    let dc1 = read_alerts(&root, "dc1/core-sw1").await;
    assert_eq!(dc1["total"], 0, "{dc1}");
    drop(leaf);
}

/// A file of `len` bytes no simple pattern describes.
fn image(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x2468_ace1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

#[tokio::test]
async fn an_image_goes_from_the_sites_files_dir_to_a_remote_rommon_through_the_serving_gateway() {
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    let Some(binary) = nats::binary() else {
        return;
    };
    // A third site, dc3, whose switch sits in ROMMON, with a files_dir.
    let dir = fleet.dir.path();
    let leaf = start_leaf(&binary, dir, "dc3", fleet.leaf_port).await;
    let link = dir.join("dc3-rom");
    let _rommon = serialgate_sim::spawn_with(
        serialgate_sim::Profile::CiscoIos,
        Some(link.clone()),
        serialgate_sim::SimOptions {
            rommon: true,
            ..Default::default()
        },
    )
    .await
    .expect("a switch in ROMMON");
    let files = dir.join("dc3-files");
    std::fs::create_dir(&files).expect("dc3's files_dir");
    let file = image(64 * 1024);
    std::fs::write(files.join("c2960x.bin"), &file).expect("the image");
    let config = dir.join("dc3.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nauth = \"none\"\nfiles_dir = {files:?}\n\n\
             [ports.rom]\ndevice = {link:?}\npreset = \"cisco-ios\"\n\n\
             [fleet]\nurls = [\"{}\"]\nsite = \"dc3\"\n",
            leaf.url()
        ),
    )
    .expect("dc3's config");
    std::fs::create_dir(dir.join("dc3")).expect("dc3's dir");
    let notify = serialgate_testkit::daemon::NotifySocket::bind(&dir.join("dc3"));
    let _dc3 = crate::fleet::start_gateway(&config, &notify).await;

    let root = fleet.agent(ROOT).await;
    fleet
        .port_state(&root, "dc3/rom", |p| p["state"] == "open")
        .await;
    ok(&root, "connect", json!({"port": "dc3/rom"})).await;
    let until = async |prompt: &str| -> String {
        let r = ok(
            &root,
            "read_until_prompt",
            json!({"prompt": prompt, "regex": true, "timeout": 20}),
        )
        .await;
        assert_eq!(r["matched"], true, "no {prompt:?} in {r}");
        r["output"].as_str().unwrap_or_default().to_owned()
    };
    ok(&root, "send_text", json!({"text": "\r"})).await;
    until(r"rommon \d+ > $").await;
    ok(
        &root,
        "send_text",
        json!({"text": "xmodem -c -s 115200 c2960x.bin"}),
    )
    .await;
    until("change the speed of your terminal to 115200 baud now\\.\r\n").await;
    let sent = ok(
        &root,
        "send_file",
        json!({"connection": "dc3/rom", "file": "c2960x.bin", "protocol": "xmodem-1k", "transfer_baud": 115200}),
    )
    .await;
    assert_eq!(sent["file"], "c2960x.bin", "{sent}");
    assert_eq!(sent["files_dir"], "site dc3's", "{sent}");
    assert_eq!(sent["bytes"], 64 * 1024, "{sent}");
    assert_eq!(sent["blocks"], 64, "{sent}");
    assert_eq!(sent["baud_after"], 9600, "{sent}");
    let after = until(r"rommon \d+ > $").await;
    let want = format!(
        "Received 65536 bytes of c2960x.bin, checksum 0x{:04x}",
        serialgate_xmodem::crc16(&file)
    );
    assert!(after.contains(&want), "{after:?}");
    // A name outside the site's files_dir is refused there, as locally.
    let refused = crate::fleet::err(
        &root,
        "send_file",
        json!({"connection": "dc3/rom", "file": "../dc3.toml"}),
    )
    .await;
    assert!(refused.starts_with("invalid_argument:"), "{refused}");

    // A transfer's progress reaches the agent through the fleet, and the
    // agent's cancel stops it at the site: the switch hears CAN CAN.
    std::fs::write(files.join("big.bin"), image(2 << 20)).expect("a big image");
    drop(root);
    let (tx, mut progress) = tokio::sync::mpsc::unbounded_channel();
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            fleet.url.clone(),
        )
        .auth_header(ROOT),
    );
    let watcher = Collector { progress: tx }
        .serve(transport)
        .await
        .expect("an MCP session at the serving gateway");
    let call = async |tool: &str, args: Value| -> Value {
        let rmcp::model::ClientRequest::CallToolRequest(r) = request(tool, args) else {
            unreachable!("a tool call")
        };
        let result = watcher.peer().call_tool(r.params).await.expect("MCP");
        assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
        result.structured_content.unwrap_or_default()
    };
    call("connect", json!({"port": "dc3/rom", "take_over": true})).await;
    call("send_text", json!({"text": "xmodem -c -s 115200 big.bin"})).await;
    let asked = call(
        "read_until_prompt",
        json!({"prompt": "baud now\\.\r\n", "regex": true, "timeout": 20}),
    )
    .await;
    assert_eq!(asked["matched"], true, "{asked}");
    let handle = watcher
        .peer()
        .send_cancellable_request(
            request(
                "send_file",
                json!({"file": "big.bin", "protocol": "xmodem-1k", "transfer_baud": 115200}),
            ),
            rmcp::service::PeerRequestOptions::no_options(),
        )
        .await
        .expect("send the transfer");
    loop {
        let note = tokio::time::timeout(DEADLINE, progress.recv())
            .await
            .expect("the transfer's progress in time")
            .expect("progress");
        assert_eq!(note.total, Some(2048.0), "{note:?}");
        let message = note.message.unwrap_or_default();
        assert!(
            message.starts_with("site dc3: ") && message.contains("blocks sent"),
            "{message}"
        );
        if note.progress >= 100.0 {
            break;
        }
    }
    handle.cancel(Some("enough".into())).await.expect("cancel");
    let after = call(
        "read_until_prompt",
        json!({"prompt": r"rommon \d+ > $", "regex": true, "timeout": 20}),
    )
    .await;
    let output = after["output"].as_str().unwrap_or_default();
    assert!(
        output.contains("xmodem: big.bin not received: the other side cancelled"),
        "{after}"
    );
    drop(leaf);
}
