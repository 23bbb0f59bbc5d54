//! The guardrails through the fleet, end to end (the fleet of
//! `fleet.rs`: a hub nats-server, a leaf per site, two site gateways with
//! a simulated Cisco switch each, a serving gateway): a token's command
//! policy at the serving gateway judges its writes on `site/port` as on a
//! local port, at the site, with the port's own policy kept (the stricter
//! wins); a line held for approval waits for a person at the site's
//! console. What reached a switch is read from every byte it received.

use std::time::Duration;

use serde_json::{Value, json};
use serialgate_testkit::console::{ConsoleConn, user_name};
use serialgate_testkit::python::python_with;
use serialgate_testkit::rig::{count, enable};

use super::approvals::pending;
use super::approvals_mcp_user::{
    agent_on, asked_once, audited_in, refused_saying, sessionless_agent_on,
};
use super::fleet::{DC1_ONLY, Fleet, OPS, Setup, base, clock, err, ok, ws};

/// How long the ports page may take to show what a site announced (a
/// site announces every second).
const PAGE_DEADLINE: Duration = Duration::from_secs(30);

const LOCKED: &str = "locked-secret-0123456789";
const GUARDED: &str = "guarded-secret-0123456789";
const UNGUARDED: &str = "unguarded-secret-0123456789";
const ASKS: &str = "asks-user-secret-0123456789";

/// Times `fleet`'s switch `i` received `line` and a CR.
fn received(fleet: &Fleet, i: usize, line: &str) -> usize {
    count(&fleet.sims[i].received(), format!("{line}\r").as_bytes())
}

#[tokio::test]
async fn a_locked_token_s_reload_on_a_remote_switch_is_denied_naming_the_rule_and_never_sent() {
    let Some(fleet) = Fleet::start_with(Setup {
        tokens: vec![("locked", LOCKED, "policy = \"locked\"\n")],
        ..Setup::default()
    })
    .await
    else {
        return;
    };
    let agent = fleet.agent(LOCKED).await;
    ok(&agent, "connect", json!({"port": "dc1/core-sw1"})).await;
    // What the policy lets through goes through: the switch's own text.
    enable(&agent).await;
    clock(&agent, "dc1/core-sw1").await;
    let denied = err(
        &agent,
        "send_command",
        json!({"connection": "dc1/core-sw1", "command": "reload"}),
    )
    .await;
    // The refusal a local port gives, judged at the site with its port's
    // preset (cisco-ios's dangerous commands), naming the port as the
    // site's console host knows it.
    assert_eq!(
        denied,
        "denied: \"reload\" matches rule \"reload\" (the dangerous commands of preset \"cisco-ios\", which policy \"locked\" denies): policy \"locked\" never sends it, and nothing was sent to core-sw1. A person at the keyboard may run it at the console (serialgate console core-sw1 on the console host, or SSH or the web view as someone no policy judges), where the policy does not apply"
    );
    // An abbreviation and a change are judged alike.
    let abbreviated = err(
        &agent,
        "send_text",
        json!({"connection": "dc1/core-sw1", "text": "rel"}),
    )
    .await;
    assert!(
        abbreviated.starts_with("denied: \"rel\" matches rule \"reload\""),
        "{abbreviated}"
    );
    let keys = err(
        &agent,
        "send_keys",
        json!({"connection": "dc1/core-sw1", "keys": ["enter"]}),
    )
    .await;
    assert!(
        keys.starts_with("denied: send_keys' keys cannot be judged by policy \"locked\""),
        "{keys}"
    );
    for line in ["reload", "rel", "r"] {
        assert_eq!(received(&fleet, 0, line), 0, "{line} reached dc1's switch");
    }
    assert_eq!(received(&fleet, 1, "reload"), 0);
    // The same token's person at the serving gateway's web view types
    // under the same policy, judged at the site: reload is cleared, never
    // run, and the person told why; what the policy lets through runs.
    let (mut typist, attached) = ConsoleConn::attach_ws(
        &ws(&fleet, "/console"),
        Some(LOCKED),
        "dc2/core-sw1",
        "attach",
        json!({}),
    )
    .await
    .expect("the console WebSocket");
    assert_eq!(attached["writing"], true, "{attached}");
    typist.send_data(b"\r").await;
    typist.until_output("SW1>").await;
    typist.send_data(b"reload\r").await;
    let refused = typist.until_json("error").await;
    assert_eq!(refused["code"], "denied", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("policy \"locked\"")),
        "{refused}"
    );
    typist.send_data(b"show clock\r").await;
    typist.until_output(" UTC ").await;
    assert_eq!(received(&fleet, 1, "reload"), 0);
    assert_eq!(received(&fleet, 1, "show clock"), 1);
    typist.send_json(&json!({"type": "release"})).await;
    while !typist.until_json("holder").await["holder"].is_null() {}
    // A token without a policy is not judged by another's.
    let ops = fleet.agent(OPS).await;
    ok(&ops, "connect", json!({"port": "dc2/core-sw1"})).await;
    enable(&ops).await;
    ok(
        &ops,
        "send_text",
        json!({"connection": "dc2/core-sw1", "text": "reload in 5"}),
    )
    .await;
    let scheduled = ok(
        &ops,
        "read_until_prompt",
        json!({"connection": "dc2/core-sw1", "prompt": "[confirm]", "timeout": 10}),
    )
    .await;
    assert!(
        scheduled["output"]
            .as_str()
            .is_some_and(|o| o.contains("Reload scheduled in 5 minutes by console")),
        "{scheduled:#}"
    );
    assert_eq!(received(&fleet, 1, "reload in 5"), 1);
}

#[tokio::test]
async fn a_site_s_own_port_policy_holds_whatever_policy_the_serving_gateway_sends() {
    let Some(fleet) = Fleet::start_with(Setup {
        site_port: "policy = \"locked\"\n".into(),
        tokens: vec![("unguarded", UNGUARDED, "policy = \"none\"\n")],
        ..Setup::default()
    })
    .await
    else {
        return;
    };
    // `none` escapes a port's default on the token's own gateway; a site
    // keeps its own: the stricter wins.
    let agent = fleet.agent(UNGUARDED).await;
    ok(&agent, "connect", json!({"port": "dc2/core-sw1"})).await;
    enable(&agent).await;
    let denied = err(
        &agent,
        "send_command",
        json!({"connection": "dc2/core-sw1", "command": "reload"}),
    )
    .await;
    assert!(
        denied.starts_with("denied: \"reload\" matches rule \"reload\"")
            && denied
                .contains("policy \"locked\" never sends it, and nothing was sent to core-sw1"),
        "{denied}"
    );
    assert_eq!(received(&fleet, 1, "reload"), 0);
}

/// Waits for the one request pending at `person`'s port; its id, after
/// checking who asks for what (token `guarded` through the hub).
async fn one_request(person: &mut ConsoleConn, line: &str) -> Value {
    one_request_of(person, "guarded", line).await
}

/// [`one_request`] of `token`.
async fn one_request_of(person: &mut ConsoleConn, token: &str, line: &str) -> Value {
    let list = pending(person, 1).await;
    assert_eq!(list[0]["line"], line, "{list:?}");
    assert!(
        list[0]["token"]
            .as_str()
            .is_some_and(|t| t.starts_with(&format!("{token}@hub:"))),
        "{list:?}"
    );
    list[0]["id"].clone()
}

#[tokio::test]
async fn a_guarded_line_on_a_remote_switch_waits_for_a_person_at_the_site_or_the_serving_gateway_runs_once_or_not_at_all()
 {
    let Some(fleet) = Fleet::start_with(Setup {
        site_console: true,
        tokens: vec![("guarded", GUARDED, "policy = \"guarded\"\n")],
        ..Setup::default()
    })
    .await
    else {
        return;
    };
    let agent = fleet.agent(GUARDED).await;
    ok(&agent, "connect", json!({"port": "dc1/core-sw1"})).await;
    enable(&agent).await;
    let socket = fleet.dir.path().join("console-dc1.sock");
    let (mut person, _) = ConsoleConn::attach(&socket, "core-sw1", "watch", json!({})).await;
    // At the serving gateway: its local operator, and a person with the
    // ops token (write access, no approve right) in the web view.
    let (mut operator, _) = ConsoleConn::attach(
        &fleet.dir.path().join("serving-console.sock"),
        "dc1/core-sw1",
        "watch",
        json!({}),
    )
    .await;
    let (mut writer, _) = ConsoleConn::attach_ws(
        &ws(&fleet, "/console"),
        Some(OPS),
        "dc1/core-sw1",
        "watch",
        json!({}),
    )
    .await
    .expect("the console WebSocket");

    let mut page = ports_page(&fleet, OPS).await;

    // Approved at the serving gateway: sent once, after the approval.
    let approve = async {
        let id = one_request(&mut operator, "reload in 5").await;
        // The ports page counts it on the remote row (its console page
        // decides it), under the switch's last line as dc1 announced it.
        let mut row = Value::Null;
        let shown = tokio::time::timeout(PAGE_DEADLINE, async {
            loop {
                let snapshot = page.until_json("ports").await;
                row = snapshot["ports"]
                    .as_array()
                    .and_then(|ports| ports.iter().find(|p| p["name"] == "dc1/core-sw1"))
                    .cloned()
                    .unwrap_or_else(|| panic!("no dc1/core-sw1 in {snapshot}"));
                if row["approvals_waiting"] == 1 && row["last_line"] == "SW1#" {
                    break;
                }
            }
        })
        .await;
        assert!(
            shown.is_ok(),
            "the remote row never showed one waiting line under SW1#: {row}"
        );
        assert!(row["bytes_read"].as_u64().is_some_and(|b| b > 0), "{row}");
        // The people at the site see the same request.
        assert_eq!(one_request(&mut person, "reload in 5").await, id);
        // Who may type but not approve is refused, and nothing is sent.
        assert_eq!(one_request(&mut writer, "reload in 5").await, id);
        writer
            .send_json(&json!({"type": "decide", "id": id, "line": "reload in 5", "approve": true}))
            .await;
        let refused = writer.until_json("error").await;
        assert!(
            refused["message"]
                .as_str()
                .is_some_and(|m| m.contains("may not decide requests for approval")),
            "{refused}"
        );
        assert_eq!(
            received(&fleet, 0, "reload in 5"),
            0,
            "sent before approval"
        );
        operator
            .send_json(&json!({"type": "decide", "id": id, "line": "reload in 5", "approve": true}))
            .await;
        operator.until_json("decided").await
    };
    let (sent, decided) = tokio::join!(
        agent.call(
            "send_text",
            json!({"connection": "dc1/core-sw1", "text": "reload in 5"})
        ),
        approve
    );
    assert_eq!(decided["approved"], true, "{decided}");
    sent.expect("MCP").ok();
    let scheduled = ok(
        &agent,
        "read_until_prompt",
        json!({"connection": "dc1/core-sw1", "prompt": "[confirm]", "timeout": 10}),
    )
    .await;
    assert!(
        scheduled["output"]
            .as_str()
            .is_some_and(|o| o.contains("Reload scheduled in 5 minutes by console")),
        "{scheduled:#}"
    );
    assert_eq!(received(&fleet, 0, "reload in 5"), 1);
    // The web view's download of the remote port's transcript comes from
    // the site: what was sent is in it; another site's token gets none.
    let (status, file, text) = transcript_download(&fleet, OPS, "dc1/core-sw1").await;
    assert_eq!(status, 200, "{text}");
    assert!(file.contains("dc1_core-sw1-transcript.txt"), "{file}");
    assert!(text.contains("reload in 5"), "{text}");
    let (status, _, _) = transcript_download(&fleet, DC1_ONLY, "dc2/core-sw1").await;
    assert_eq!(status, 404);
    // A port its site does not have is as absent as one out of reach.
    let (status, _, _) = transcript_download(&fleet, OPS, "dc1/no-such-port").await;
    assert_eq!(status, 404);
    // Nor does a name that climbs out of a site's ports, or hides a
    // control character or an oversized name, reach any site.
    for hostile in [
        "dc1/../dc2/core-sw1",
        "dc1/core-sw1%1B[2J",
        "dc1/core-sw1%0Aforged",
        &format!("dc1/{}", "x".repeat(200)),
    ] {
        let (status, _, text) = transcript_download(&fleet, OPS, hostile).await;
        assert_eq!(status, 404, "{hostile}: {text}");
    }
    ok(
        &agent,
        "send_text",
        json!({"connection": "dc1/core-sw1", "text": "n"}),
    )
    .await;
    ok(
        &agent,
        "read_until_prompt",
        json!({"connection": "dc1/core-sw1", "timeout": 10}),
    )
    .await;

    // Denied: the agent is told who denied it, and nothing was sent.
    let deny = async {
        let id = one_request(&mut person, "reload").await;
        person
            .send_json(&json!({"type": "decide", "id": id, "line": "reload", "approve": false}))
            .await;
        person.until_json("decided").await
    };
    let (e, decided) = tokio::join!(
        agent.call(
            "send_command",
            json!({"connection": "dc1/core-sw1", "command": "reload"})
        ),
        deny
    );
    assert_eq!(decided["approved"], false, "{decided}");
    let e = e.expect("MCP").err();
    assert!(
        e.starts_with("denied: \"reload\" was denied by ")
            && e.contains(&format!("was denied by {} on console", user_name()))
            && e.contains("policy \"guarded\"")
            && e.ends_with("nothing was sent"),
        "{e}"
    );
    assert_eq!(received(&fleet, 0, "reload"), 0);
    assert_eq!(received(&fleet, 1, "reload"), 0);
}

#[tokio::test]
async fn an_agent_cancelling_a_remote_line_waiting_for_approval_withdraws_it_at_the_site() {
    use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
    use rmcp::service::PeerRequestOptions;

    let Some(fleet) = Fleet::start_with(Setup {
        site_console: true,
        tokens: vec![("guarded", GUARDED, "policy = \"guarded\"\n")],
        ..Setup::default()
    })
    .await
    else {
        return;
    };
    let agent = fleet.agent(GUARDED).await;
    ok(&agent, "connect", json!({"port": "dc1/core-sw1"})).await;
    enable(&agent).await;
    let socket = fleet.dir.path().join("console-dc1.sock");
    let (mut person, _) = ConsoleConn::attach(&socket, "core-sw1", "watch", json!({})).await;
    let Value::Object(arguments) = json!({"connection": "dc1/core-sw1", "text": "reload in 9"})
    else {
        unreachable!("arguments are objects")
    };
    let handle = agent
        .peer()
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(
                CallToolRequestParams::new("send_text").with_arguments(arguments),
            )),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send the call");
    let list = pending(&mut person, 1).await;
    assert_eq!(list[0]["line"], "reload in 9", "{list:?}");
    handle
        .cancel(Some("the agent changed its mind".into()))
        .await
        .expect("cancel");
    // Gone from the site's list; a person approving it now finds nothing.
    pending(&mut person, 0).await;
    person
        .send_json(
            &json!({"type": "decide", "id": list[0]["id"], "line": "reload in 9", "approve": true}),
        )
        .await;
    let e = person.until_json("error").await;
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("no request")),
        "{e}"
    );
    assert_eq!(received(&fleet, 0, "reload in 9"), 0);
    // The session goes on.
    clock(&agent, "dc1/core-sw1").await;
}

/// Site `site`'s audit record of `kind` for `line`.
fn audited(fleet: &Fleet, site: &str, kind: &str, line: &str) -> Value {
    audited_in(
        &fleet.dir.path().join(format!("logs-{site}/audit.log")),
        kind,
        line,
    )
}

/// Python with the official MCP SDK, and a fleet whose `asks` token is
/// under a policy at the serving gateway whose approvers name the
/// client's user; `None` (the test skipped) without either.
async fn asking_fleet() -> Option<(std::path::PathBuf, Fleet)> {
    let python = python_with(&["mcp"])?;
    let fleet = Fleet::start_with(Setup {
        tokens: vec![("asks", ASKS, "policy = \"asks-user\"\n")],
        serving_toml: "[policies.asks-user]\napprovers = [\"people\", \"client_user\"]\n",
        ..Setup::default()
    })
    .await?;
    Some((python, fleet))
}

/// The agent is the official Python SDK over HTTP at the serving gateway,
/// its token under a policy whose approvers name the client's user; the
/// line waits at the site, which asks that user through the fleet.
#[tokio::test]
async fn the_agent_s_own_user_decides_a_remote_line_and_hears_its_wait_through_the_fleet() {
    let Some((python, fleet)) = asking_fleet().await else {
        return;
    };
    // The user approves: asked once, in the approve-or-deny form, the
    // message naming the site; the wait's progress heard; sent once.
    let printed = agent_on(
        &python,
        &fleet.url,
        ASKS,
        "approve",
        "reload in 5",
        "dc1/core-sw1",
    )
    .finished()
    .await;
    asked_once(
        &printed,
        &[
            "site dc1: serialgate: your agent asks to send \"reload in 5\"",
            "exec mode",
            "rule \"reload\"",
            "expires in",
        ],
    );
    let progress = printed.get("progress");
    assert!(
        progress
            .as_array()
            .is_some_and(|notes| notes
                .iter()
                .any(|n| n.as_str().is_some_and(|n| n
                    .starts_with("site dc1: waiting for a person's approval of \"reload in 5\"")))),
        "{progress}"
    );
    assert_eq!(printed.get("is_error"), false, "{:?}", printed.get("text"));
    assert_eq!(received(&fleet, 0, "reload in 5"), 1);
    // Decided at the site by the client's user of that session.
    let request = audited(&fleet, "dc1", "approval request", "reload in 5");
    let approved = audited(&fleet, "dc1", "approval approved", "reload in 5");
    assert_eq!(approved["person"], "client_user", "{approved}");
    assert_eq!(approved["session"], request["session"], "{approved}");

    // The user never answers and a person at the serving gateway denies
    // first: the question is withdrawn from the client, nothing is sent.
    let mut waiting = agent_on(
        &python,
        &fleet.url,
        ASKS,
        "wait",
        "reload in 7",
        "dc2/core-sw1",
    );
    let (mut operator, _) = ConsoleConn::attach(
        &fleet.dir.path().join("serving-console.sock"),
        "dc2/core-sw1",
        "watch",
        json!({}),
    )
    .await;
    let id = one_request_of(&mut operator, "asks", "reload in 7").await;
    waiting.until("asked").await;
    operator
        .send_json(&json!({"type": "decide", "id": id, "line": "reload in 7", "approve": false}))
        .await;
    operator.until_json("decided").await;
    let printed = waiting.finished().await;
    assert_eq!(printed.get("withdrawn"), true, "{:?}", printed.get("text"));
    assert_eq!(printed.get("is_error"), true, "{:?}", printed.get("text"));
    assert_eq!(received(&fleet, 1, "reload in 7"), 0);
}

/// An agent whose client speaks without a session (MCP 2026-07-28),
/// with the official Python SDK: its user is asked in the call's result
/// for a line on a remote switch, the question naming the site, and
/// answers in the second round, which the site checks; a replayed or
/// forged state, or one moved to another line, sends nothing.
#[tokio::test]
async fn a_sessionless_agent_s_user_decides_a_remote_line_in_the_call_s_result() {
    let Some((python, fleet)) = asking_fleet().await else {
        return;
    };
    let printed = sessionless_agent_on(
        &python,
        &fleet.url,
        ASKS,
        "approve",
        "reload in 5",
        "dc1/core-sw1",
    )
    .finished()
    .await;
    assert_eq!(
        printed.get("protocol"),
        "2026-07-28",
        "{:?}",
        printed.get("text")
    );
    asked_once(
        &printed,
        &[
            "site dc1: serialgate: your agent asks to send \"reload in 5\"",
            "exec mode",
            "rule \"reload\"",
        ],
    );
    assert_eq!(printed.get("is_error"), false, "{:?}", printed.get("text"));
    assert_eq!(received(&fleet, 0, "reload in 5"), 1);
    // Decided at the site, by the client's user.
    let request = audited(&fleet, "dc1", "approval request", "reload in 5");
    let approved = audited(&fleet, "dc1", "approval approved", "reload in 5");
    assert_eq!(approved["person"], "client_user", "{approved}");
    assert_eq!(approved["approval"], request["approval"], "{approved}");

    // The state is spent once and cannot be forged, through the fleet too.
    let printed = sessionless_agent_on(
        &python,
        &fleet.url,
        ASKS,
        "replay",
        "reload in 6",
        "dc2/core-sw1",
    )
    .finished()
    .await;
    assert_eq!(printed.get("result_type"), "InputRequiredResult");
    assert_eq!(printed.get("is_error"), false, "{:?}", printed.get("text"));
    refused_saying(printed.get("replayed"), "already answered");
    refused_saying(printed.get("forged"), "not one this daemon gave");
    assert_eq!(received(&fleet, 1, "reload in 6"), 1);
    // Nor does it hold for another line.
    let printed = sessionless_agent_on(
        &python,
        &fleet.url,
        ASKS,
        "other",
        "reload in 7",
        "dc1/core-sw1",
    )
    .finished()
    .await;
    refused_saying(printed.get("other"), "not one this daemon gave");
    assert_eq!(received(&fleet, 0, "reload in 7"), 0);
    assert_eq!(received(&fleet, 0, "reload in 7 9"), 0);
}

/// An HTTP client that shows redirects rather than follows them.
fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("an HTTP client")
}

/// The serving gateway's ports page feed, as a browser signed in with
/// `secret` opens it.
async fn ports_page(fleet: &Fleet, secret: &str) -> ConsoleConn {
    let base = base(fleet);
    let cookie = sign_in(fleet, secret).await;
    ConsoleConn::connect_ws_with(
        &ws(fleet, "/web/ports/live"),
        &[("cookie", cookie.as_str()), ("origin", base.as_str())],
    )
    .await
    .expect("the ports page's feed")
}

/// A browser signed in at the serving gateway's web view with `secret`:
/// its `name=value` cookie.
async fn sign_in(fleet: &Fleet, secret: &str) -> String {
    let base = base(fleet);
    let signed_in = http()
        .post(format!("{base}/web/signin"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", &base)
        .body(format!("token={secret}"))
        .send()
        .await
        .expect("POST /web/signin");
    super::hostile_web::login_cookie(&signed_in)
}

/// The serving gateway's web view download of `port`'s transcript for
/// `secret`: its status, file name and text.
async fn transcript_download(fleet: &Fleet, secret: &str, port: &str) -> (u16, String, String) {
    let cookie = sign_in(fleet, secret).await;
    let response = http()
        .get(format!(
            "{}/web/console/{}/transcript",
            base(fleet),
            port.replace('/', "%2F")
        ))
        .header("cookie", cookie)
        .send()
        .await
        .expect("GET the transcript");
    let status = response.status().as_u16();
    let file = response
        .headers()
        .get("content-disposition")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, file, response.text().await.unwrap_or_default())
}
