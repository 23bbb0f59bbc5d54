//! Approval from the web view, in a real browser (headless Chromium over
//! WebDriver): an agent over HTTP (token `agent`) on the simulated Cisco
//! switch under `guarded`, whose dangerous lines wait for a person; the
//! person signs in to the web view and decides on the ports page (its
//! feed) or on the port's console page (the attach protocol). What
//! reaches the switch is read from every byte it received.

use std::sync::Arc;

use serde_json::{Value, json};
use serialgate_testkit::browser::{self, Browser};
use serialgate_testkit::client::{GateClient, Outcome};
use serialgate_testkit::rig::{count, enable};
use serialgate_testkit::web::{AGENT, AUDIT, NOC, WebSite};

/// A line with HTML and script in it: the `reload` rule holds it, and a
/// page that rendered it as HTML would run the script or show an image.
const HOSTILE: &str = "reload <img src=x onerror=\"document.body.dataset.pwned='img'\"><script>document.body.dataset.pwned='script'</script>";

/// What the site's config adds: a minute to decide, `sw1` under `guarded`.
const SERVER: &str = "approval_timeout = \"60s\"";
const SW1: &str = "policy = \"guarded\"";

/// Whether the browser tests can run here; says why not when they cannot.
fn browser_here() -> bool {
    let here = browser::available();
    if !here {
        serialgate_testkit::skip::skipped(
            "chromedriver and chromium are not installed (.ci/install-deps installs them)",
        );
    }
    here
}

/// The site with `sw1` under `guarded` and the agent in privileged mode
/// on it.
async fn guarded_site() -> (WebSite, Arc<GateClient>) {
    let site = WebSite::start_with(SERVER, SW1).await;
    let agent = site.agent().await;
    agent
        .call("connect", json!({"port": "sw1"}))
        .await
        .expect("MCP")
        .ok();
    enable(&agent).await;
    (site, Arc::new(agent))
}

/// The agent's `send_text` of `text`, in a task of its own (it waits for
/// a person).
fn ask(agent: &Arc<GateClient>, text: &str) -> tokio::task::JoinHandle<Result<Value, String>> {
    let agent = agent.clone();
    let text = text.to_owned();
    tokio::spawn(async move {
        match agent
            .call("send_text", json!({"text": text}))
            .await
            .expect("MCP")
        {
            Outcome::Ok(v) => Ok(v),
            Outcome::Err(e) => Err(e),
        }
    })
}

/// The text of the ports page's row for `port`.
fn row(port: &str) -> String {
    format!(
        "const r = document.querySelector('tr[data-port=\"{port}\"]'); return r ? r.dataset.state + ' | ' + r.innerText : '';"
    )
}

/// Waits until no request is listed on the page.
async fn until_none_listed(browser: &Browser) {
    browser
        .until(
            "return String(document.getElementById('approvals').hidden && !document.querySelector('.badge:not([hidden])'));",
            "true",
        )
        .await;
}

/// Times the switch received `line` and a CR.
fn received(site: &WebSite, line: &str) -> usize {
    count(&site.sw1.received(), format!("{line}\r").as_bytes())
}

#[tokio::test]
async fn a_person_in_the_web_view_denies_one_request_and_approves_another() {
    if !browser_here() {
        return;
    }
    let (site, agent) = guarded_site().await;
    browser::session(move |browser| async move {
        browser.sign_in(&site.base, NOC).await;
        browser.until(&row("sw1"), "open").await;

        // A hostile line waits: the badge on its port, the request listed
        // with who asks, the exact line as text, its mode, the time left
        // and what the switch said last.
        let asked = ask(&agent, HOSTILE);
        browser.until(&row("sw1"), "1 waiting").await;
        let card = browser.until_text("#approvals", "expires in").await;
        for part in [
            "token agent) asks to send",
            HOSTILE,
            "exec mode",
            "rule \"reload\"",
            "SW1#",
        ] {
            assert!(card.contains(part), "{part:?} in {card}");
        }
        let injected = browser
            .eval("return [document.body.dataset.pwned || '', document.querySelectorAll('#approvals img, #approvals script').length];")
            .await;
        assert_eq!(injected, json!(["", 0]), "the line ran as HTML");
        assert_eq!(received(&site, "reload"), 0, "sent before a decision");

        // Deny: the call ends denied, naming the person; nothing was sent.
        // The button, found before another port's output redraws the
        // page, still takes the click.
        let deny = browser.find(".approval .deny").await;
        let drawn = browser.snapshots_drawn().await;
        site.sw2.inject(b"\r\nsw2 speaks meanwhile\r\n").await;
        browser.until_redrawn_after(drawn).await;
        deny.click().await.expect("click Deny");
        let e = asked.await.expect("the call's task").expect_err("denied");
        assert!(
            e.starts_with("denied: ") && e.contains("was denied by noc") && e.contains("nothing was sent"),
            "{e}"
        );
        browser.until_text("#approval-note", "you denied request").await;
        until_none_listed(&browser).await;
        assert_eq!(count(&site.sw1.received(), b"reload"), 0);

        // A second request, approved on the port's console page: it
        // reaches the switch once.
        browser.goto(&site.url("/web/console/sw1")).await;
        browser.until_text("#events", "attached as noc").await;
        let asked = ask(&agent, "reload in 5");
        browser.until_text("#approvals-badge", "1 waiting").await;
        let card = browser.until_text("#approvals", "reload in 5").await;
        assert!(card.contains("token agent) asks to send"), "{card}");
        browser.find(".approval .approve").await.click().await.expect("click Approve");
        asked.await.expect("the call's task").expect("approved and sent");
        browser.until_text("#events", "you approved request").await;
        browser.until_screen("Reload scheduled in 5 minutes").await;
        assert_eq!(received(&site, "reload in 5"), 1);
        until_none_listed(&browser).await;

        // The audit trail names the web view's person for both.
        let audit = std::fs::read_to_string(site.dir.path().join("logs/audit.log")).unwrap_or_default();
        let records: Vec<Value> = audit.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        // (The trail escapes the quotes of the hostile line.)
        for (kind, line) in [("approval denied", "reload <img src=x"), ("approval approved", "reload in 5")] {
            let found = records
                .iter()
                .find(|r| r["kind"] == kind && r["data"].as_str().is_some_and(|d| d.starts_with(line)));
            let found = found.unwrap_or_else(|| panic!("no {kind:?} of {line:?} in {records:?}"));
            assert_eq!(found["token"], "noc", "{found}");
            assert!(found["requested_by"].as_str().is_some_and(|w| w.contains("token agent")), "{found}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_token_without_the_approve_right_and_a_read_token_cannot_decide_in_the_web_view() {
    if !browser_here() {
        return;
    }
    let (site, agent) = guarded_site().await;
    browser::session(move |browser| async move {
        // The agent's own token, signed in to the web view: a write token
        // without the approve right decides nothing (an agent must not
        // approve an agent's line; its own is four eyes besides).
        browser.sign_in(&site.base, AGENT).await;
        browser.until(&row("sw1"), "open").await;
        let asked = ask(&agent, "reload in 5");
        browser.until(&row("sw1"), "1 waiting").await;
        browser.find(".approval .approve").await.click().await.expect("click Approve");
        let note = browser
            .until_text("#approval-note", "may not decide requests for approval")
            .await;
        assert!(note.starts_with("forbidden: ") && note.contains("approve = true"), "{note}");
        // Its console page: the same rule.
        browser.goto(&site.url("/web/console/sw1")).await;
        browser.until_text("#approvals-badge", "1 waiting").await;
        browser.find(".approval .approve").await.click().await.expect("click Approve");
        browser.until_text("#events", "may not decide requests for approval").await;
        // Refused, the request's buttons come back: nothing was decided.
        browser
            .until(
                "return [...document.querySelectorAll('.approval button')].map(b => b.disabled).join(',');",
                "false,false",
            )
            .await;

        // A read token sees the request with its buttons disabled; pressed
        // all the same (the page's own check removed), the daemon refuses.
        let reader = Browser::open().await;
        reader.sign_in(&site.base, AUDIT).await;
        reader.until(&row("sw1"), "1 waiting").await;
        let disabled = reader
            .eval("return [...document.querySelectorAll('.approval button')].map(b => b.disabled);")
            .await;
        assert_eq!(disabled, json!([true, true]), "a read token's buttons");
        reader
            .eval("const b = document.querySelector('.approval .approve'); b.disabled = false; b.click(); return true;")
            .await;
        let note = reader.until_text("#approval-note", "forbidden").await;
        assert!(note.contains("deciding a request for approval needs what typing does"), "{note}");
        reader.close().await;

        // Nothing was decided: the request still waits, nothing was sent.
        let status = agent
            .call("status", json!({}))
            .await
            .expect("MCP")
            .ok();
        assert_eq!(status["pending_approvals"][0]["line"], "reload in 5", "{status}");
        assert_eq!(received(&site, "reload in 5"), 0);
        assert!(!asked.is_finished(), "the call ended: {:?}", asked.await);
        asked.abort();
    })
    .await;
}

#[tokio::test]
async fn a_page_open_before_its_token_lost_write_access_decides_nothing() {
    if !browser_here() {
        return;
    }
    let (site, agent) = guarded_site().await;
    browser::session(move |browser| async move {
        browser.sign_in(&site.base, NOC).await;
        browser.until(&row("sw1"), "open").await;
        let asked = ask(&agent, "reload in 5");
        browser.until(&row("sw1"), "1 waiting").await;
        browser.until_text("#who", "noc (write)").await;

        // A reload leaves `noc` read access; the open page's feed follows.
        site.reload(SERVER, SW1, "read").await;
        browser.until_text("#who", "noc (read)").await;
        let disabled = browser
            .eval("return [...document.querySelectorAll('.approval button')].map(b => b.disabled);")
            .await;
        assert_eq!(disabled, json!([true, true]), "buttons after the reload");
        // Pressed all the same, on the feed opened while it could write.
        browser
            .eval("const b = document.querySelector('.approval .approve'); b.disabled = false; b.click(); return true;")
            .await;
        let note = browser.until_text("#approval-note", "forbidden").await;
        assert!(note.contains("needs what typing does"), "{note}");
        assert_eq!(received(&site, "reload in 5"), 0);
        assert!(!asked.is_finished(), "the call ended: {:?}", asked.await);
        asked.abort();
    })
    .await;
}
