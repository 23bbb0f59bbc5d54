//! A serving gateway whose NATS runs no JetStream (a hub `nats-server`
//! without it, as in `fleet.rs`) keeps its own ports' alerts for its own
//! agents, as any gateway does, and says once at start that they are not
//! offered to other serving gateways; it queues nothing for a stream that
//! is not there and logs nothing more about it.

use std::time::Duration;

use serde_json::Value;
use serialgate_sim::{self as sim, Profile};
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use serialgate_testkit::nats::{self, NatsServer};
use serialgate_testkit::skip;
use serialgate_testkit::updates::UpdatesClient;

use crate::fleet::OPS;

/// How long the agent may wait to be told of the alert.
const TOLD_WITHIN: Duration = Duration::from_secs(30);
const MEMORY: &[u8] = b"\r\n%SYS-2-MALLOCFAIL: Memory allocation of 65536 bytes failed\r\n";
const NOT_OFFERED: &str = "fleet: the alerts of site hub's own ports are not offered to other serving gateways: no JetStream answers for site hub (JetStream domain \"hub\"); this gateway's own agents get them as before";

#[tokio::test]
async fn a_serving_gateway_without_jetstream_keeps_its_own_alerts_for_its_agents_and_says_so_once()
{
    let Some(binary) = nats::binary() else {
        skip::skipped("nats-server is not installed (Debian: apt install nats-server)");
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let hub = NatsServer::start(&binary, dir.path(), "hub", "").await;
    let link = dir.path().join("hub-sw");
    let switch = sim::spawn(Profile::CiscoIos, Some(link.clone()))
        .await
        .expect("simulated switch");
    let tokens = daemon::tokens_toml(dir.path(), &[("ops", OPS, r#"["*", "*/*"]"#, "write")]);
    let config = dir.path().join("serving.toml");
    std::fs::write(
        &config,
        format!(
            "[ports.hub-sw]\ndevice = {:?}\npreset = \"cisco-ios\"\n\n{tokens}\n\
             [fleet]\nurls = [\"{}\"]\nsite = \"hub\"\nserve = true\n",
            link.display(),
            hub.url()
        ),
    )
    .expect("write the serving config");
    std::fs::create_dir(dir.path().join("serving")).expect("the serving dir");
    let notify = NotifySocket::bind(&dir.path().join("serving"));
    // Said at start, before or after its HTTP door opens.
    let mut serving = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    let mut early = serving.stderr.lines_until("are not offered").await;
    let said = early.pop().expect("the line");
    assert!(said.ends_with(NOT_OFFERED), "{said}");
    let listening = match early.into_iter().find(|l| l.contains("listening on http")) {
        Some(line) => line,
        None => serving.stderr.wait_for("listening on http").await,
    };
    let url = listening
        .split("listening on ")
        .nth(1)
        .expect("an address")
        .trim()
        .to_owned();
    notify.expect("READY=1").await;

    // Its own agent is told of its own switch's alert, as before.
    let ops = UpdatesClient::http(&url, OPS)
        .await
        .expect("an MCP session at the serving gateway");
    let uri = "serialgate://ports/hub-sw/alerts";
    ops.subscribe(uri).await.expect("subscribe");
    switch.inject(MEMORY).await;
    assert_eq!(
        ops.next_update(TOLD_WITHIN).await.as_deref(),
        Some(uri),
        "told of its own switch's alert"
    );
    let shown: Value =
        serde_json::from_str(&ops.read(uri).await.expect("read the alerts")).expect("JSON");
    assert_eq!(shown["total"], 1, "{shown}");
    assert_eq!(shown["alerts"][0]["watch"], "memory", "{shown}");
    assert_eq!(shown["alerts"][0]["text"], "%SYS-2-MALLOCFAIL", "{shown}");

    // Nothing more was said of the fleet's alerts, to its end.
    serving.signal(libc::SIGTERM);
    let rest = serving.stderr.rest().await;
    serving.exit().await;
    let about_alerts: Vec<&String> = rest
        .iter()
        .filter(|l| l.contains("alert") && l.contains("fleet"))
        .collect();
    assert!(about_alerts.is_empty(), "{about_alerts:#?}");
}
