//! One site flooded cannot starve the others, nor one token's flood a
//! token that writes: on the fleet of `fleet.rs` (a hub `nats-server`, a
//! leaf per site, real gateways, simulated Cisco switches), a read-only
//! token sends far more calls than it may have in flight to dc1, each
//! waiting on the switch for text it has not printed; the calls beyond
//! its bound are answered `busy` at once, saying what to do, while
//! another token's commands on dc2 and a writer's on dc1 itself all
//! succeed; when the switch prints the text, every flood call taken ends
//! with it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use serialgate_testkit::client::Outcome;
use serialgate_testkit::rig;
use tokio::sync::mpsc;

use crate::fleet::{Fleet, OPS, READER, ROOT, clock, ok};

/// The serving gateway's bound on one token's calls to one site.
const PER_TOKEN: usize = 32;
/// The flood: MCP sessions of the read-only token, and calls in each.
const SESSIONS: usize = 4;
const CALLS: usize = 40;
/// What the flood waits for, which the switch prints only at the end.
const AWAITED: &str = "FLOOD OVER";
/// How long the whole flood may take: its calls wait for the switch's
/// text (asked to wait up to 300 s), printed once the calm calls are done.
const FLOOD_DEADLINE: Duration = Duration::from_secs(240);

#[tokio::test]
async fn a_readers_flood_of_one_site_is_refused_beyond_its_bound_and_every_other_call_goes_on() {
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    let mut readers = Vec::new();
    for _ in 0..SESSIONS {
        let reader = fleet.agent(READER).await;
        ok(&reader, "connect", json!({"port": "dc1/core-sw1"})).await;
        readers.push(Arc::new(reader));
    }
    let (answers, mut answered) = mpsc::unbounded_channel::<Outcome>();
    let mut flood = tokio::task::JoinSet::new();
    for reader in &readers {
        for _ in 0..CALLS {
            let (reader, answers) = (reader.clone(), answers.clone());
            flood.spawn(async move {
                let answer = reader
                    .call(
                        "read_until_prompt",
                        json!({
                            "connection": "dc1/core-sw1",
                            "prompt": AWAITED,
                            "timeout": 300,
                            "auto_reply": {},
                        }),
                    )
                    .await
                    .expect("MCP transport");
                let _ = answers.send(answer);
            });
        }
    }
    drop(answers);

    // The calls beyond the token's bound are refused at once; the others
    // wait at dc1 for the switch.
    let refused_count = SESSIONS * CALLS - PER_TOKEN;
    let busy = format!(
        "busy: token \"reader\" has {PER_TOKEN} calls to site dc1 in flight through this gateway, the most one token may have; wait for one of them to finish, then call again (a shorter timeout frees them sooner)"
    );
    for n in 0..refused_count {
        let answer = tokio::time::timeout(FLOOD_DEADLINE, answered.recv())
            .await
            .unwrap_or_else(|_| panic!("only {n} of the flood's calls were answered"))
            .expect("the flood's answers");
        match answer {
            Outcome::Err(text) => assert_eq!(text, busy),
            Outcome::Ok(v) => panic!("a flood call beyond the bound ran: {v}"),
        }
    }

    // Meanwhile another token's calls on dc2 all succeed, with the
    // switch's clock, ...
    let ops = fleet.agent(OPS).await;
    ok(&ops, "connect", json!({"port": "dc2/core-sw1"})).await;
    rig::enable(&ops).await;
    for _ in 0..10 {
        clock(&ops, "dc2/core-sw1").await;
    }
    // ... and a writer's on the flooded site itself.
    let root = fleet.agent(ROOT).await;
    ok(&root, "connect", json!({"port": "dc1/core-sw1"})).await;
    rig::enable(&root).await;
    for _ in 0..5 {
        clock(&root, "dc1/core-sw1").await;
    }
    // The flood is still at its bound: one call more is refused.
    let more = readers[0]
        .call(
            "read_until_prompt",
            json!({"connection": "dc1/core-sw1", "prompt": AWAITED, "timeout": 300, "auto_reply": {}}),
        )
        .await
        .expect("MCP transport")
        .err();
    assert_eq!(more, busy);

    // The switch prints what the flood waits for: each call taken ends
    // with it.
    fleet.sims[0]
        .inject(format!("\r\n{AWAITED}\r\n").as_bytes())
        .await;
    for n in 0..PER_TOKEN {
        let answer = tokio::time::timeout(FLOOD_DEADLINE, answered.recv())
            .await
            .unwrap_or_else(|_| panic!("only {n} of the flood's taken calls ended"))
            .expect("the flood's answers");
        let read = answer.ok();
        assert_eq!(read["matched"], true, "{read}");
        assert_eq!(read["prompt_text"], AWAITED, "{read}");
    }
    assert!(answered.recv().await.is_none(), "no answer more");
    while let Some(done) = flood.join_next().await {
        done.expect("a flood call's task");
    }
    // Its slots are given back: the reader calls again.
    let status = ok(&readers[0], "status", json!({"connection": "dc1/core-sw1"})).await;
    assert_eq!(status["state"], "open", "{status}");
}

/// A forwarded call as a serving gateway sends it to a site, from
/// `gateway`'s `session`, for `token` of `access`.
fn forwarded(
    gateway: &str,
    session: u64,
    token: &str,
    access: &str,
    tool: &str,
    arguments: Value,
) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "v": 2,
        "gateway": gateway,
        "session": session,
        "token": token,
        "access": access,
        "use_credentials": false,
        "client": "flood",
        "tool": tool,
        "arguments": arguments,
    }))
    .expect("JSON")
}

/// Sends `payload` to dc1's call subject; the site's answer.
async fn ask_dc1(client: &async_nats::Client, payload: Vec<u8>) -> Value {
    let request = async_nats::Request::new()
        .payload(payload.into())
        .timeout(Some(FLOOD_DEADLINE));
    let answer = client
        .send_request("serialgate.site.dc1.call".to_owned(), request)
        .await
        .expect("dc1 answers");
    serde_json::from_slice(&answer.payload).expect("an answer")
}

#[tokio::test]
async fn a_site_runs_at_most_its_bound_of_one_tokens_calls_whoever_sends_them() {
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    // Another serving gateway, with the serving gateways' key, that does
    // not bound what it sends (an older one, or one misbehaving).
    let seed = std::fs::read_to_string(fleet.dir.path().join("serving.nk")).expect("the seed");
    let client = async_nats::ConnectOptions::new()
        .nkey(seed.trim().to_owned())
        .connect(&fleet.hub_url)
        .await
        .expect("the serving gateways' key connects");
    let gateway = "hq:1-0000f100";
    let connected = ask_dc1(
        &client,
        forwarded(
            gateway,
            1,
            "reader",
            "read",
            "connect",
            json!({"port": "core-sw1"}),
        ),
    )
    .await;
    assert_eq!(
        connected["result"]["structuredContent"]["connection"], "core-sw1",
        "{connected}"
    );

    let total = 40;
    let mut flood = tokio::task::JoinSet::new();
    let (answers, mut answered) = mpsc::unbounded_channel::<Value>();
    for _ in 0..total {
        let (client, answers) = (client.clone(), answers.clone());
        flood.spawn(async move {
            let payload = forwarded(
                gateway,
                1,
                "reader",
                "read",
                "read_until_prompt",
                json!({"connection": "core-sw1", "prompt": AWAITED, "timeout": 300, "auto_reply": {}}),
            );
            let _ = answers.send(ask_dc1(&client, payload).await);
        });
    }
    drop(answers);
    let busy = json!({"refused": format!(
        "busy: reader@{gateway} has {PER_TOKEN} calls running at this site, the most one token of a serving gateway may have; wait for one of them to finish, then call again (a shorter timeout frees them sooner)"
    )});
    for n in 0..total - PER_TOKEN {
        let answer = tokio::time::timeout(FLOOD_DEADLINE, answered.recv())
            .await
            .unwrap_or_else(|_| panic!("only {n} refusals"))
            .expect("the flood's answers");
        assert_eq!(answer, busy);
    }
    // Another token's call runs there meanwhile.
    let other = ask_dc1(
        &client,
        forwarded(
            gateway,
            2,
            "ops",
            "write",
            "connect",
            json!({"port": "core-sw1"}),
        ),
    )
    .await;
    assert_eq!(
        other["result"]["structuredContent"]["connection"], "core-sw1",
        "{other}"
    );

    fleet.sims[0]
        .inject(format!("\r\n{AWAITED}\r\n").as_bytes())
        .await;
    for n in 0..PER_TOKEN {
        let answer = tokio::time::timeout(FLOOD_DEADLINE, answered.recv())
            .await
            .unwrap_or_else(|_| panic!("only {n} of the calls run ended"))
            .expect("the flood's answers");
        let read = &answer["result"]["structuredContent"];
        assert_eq!(read["matched"], true, "{answer}");
        assert_eq!(read["prompt_text"], AWAITED, "{answer}");
    }
    while let Some(done) = flood.join_next().await {
        done.expect("a flood call's task");
    }
}
