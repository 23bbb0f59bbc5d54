//! The web view in a real browser: headless Chromium over WebDriver (one
//! chromedriver for the test suite), against the real daemon and
//! simulated devices, with every host but 127.0.0.1 unresolvable. Signing
//! in, the ports page following an unplug and a replug, a console page
//! showing the switch, typing into it, an agent's command appearing, and a
//! read token's keys reaching nothing; an idle tab answering none of
//! the device's terminal queries.
//!
//! `SERIALGATE_SCREENSHOTS=1` writes `docs/web-ports.png` and
//! `docs/web-console.png`. The ignored test
//! `latency_from_a_device_byte_to_the_browser_screen` prints the latency
//! figures (`cargo test -p serialgate --test testsuite web::latency -- --ignored
//! --nocapture`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use serialgate_sim::{self as sim, Profile};
use serialgate_testkit::browser;
use serialgate_testkit::web::{AUDIT, NOC, WebSite};

/// Whether the browser tests can run here; says why not when they cannot.
fn browser_here() -> bool {
    let here = browser::available();
    if !here {
        serialgate_testkit::skip::skipped(
            "chromedriver and chromium are not installed (.ci/run installs them)",
        );
    }
    here
}

/// Where a screenshot goes, when `SERIALGATE_SCREENSHOTS=1` asks for them.
fn screenshot_path(name: &str) -> Option<PathBuf> {
    (std::env::var("SERIALGATE_SCREENSHOTS").as_deref() == Ok("1"))
        .then(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/docs")).join(name))
}

/// The text of the ports page's row for `port`.
fn row(port: &str) -> String {
    format!(
        "const r = document.querySelector('tr[data-port=\"{port}\"]'); return r ? r.dataset.state + ' | ' + r.innerText : '';"
    )
}

#[tokio::test]
async fn a_wrong_token_sees_only_the_sign_in_form_and_a_right_one_sees_the_ports_live() {
    if !browser_here() {
        return;
    }
    let site = WebSite::start().await;
    browser::session(move |browser| async move {

        // A wrong token: the form again, and nothing about the ports.
        browser.sign_in(&site.base, "not-a-token").await;
        let refused = browser
            .until_text("body", "not the secret of one of this gateway's tokens")
            .await;
        assert!(!refused.contains("sw1"), "{refused}");
        browser.goto(&site.url("/web/")).await;
        browser.find("#signin").await;

        // The right one: every port, open, with device and preset.
        browser.sign_in(&site.base, NOC).await;
        browser.until(&row("sw1"), "open |").await;
        let sw2 = browser.until(&row("sw2"), "open |").await;
        assert!(sw2.contains("juniper-junos"), "{sw2}");
        assert!(
            browser.until_text("#who", "noc").await.contains("write"),
            "the page names the token"
        );

        // Everything came from the daemon: no resource and no link elsewhere.
        let resources = browser
            .eval("return performance.getEntriesByType('resource').map(e => e.name).concat([location.href]);")
            .await;
        for url in resources.as_array().expect("a list") {
            let url = url.as_str().unwrap_or_default();
            assert!(url.starts_with(&site.base), "fetched from elsewhere: {url}");
        }
        let html = browser.eval("return document.documentElement.outerHTML;").await;
        let html = html.as_str().unwrap_or_default();
        assert!(!html.contains("://"), "the page names another site: {html}");

        // Output shows as the port's last line, with its bytes counted.
        site.sw2.inject(b"\r\n\x1b[1madmin@mx1>\x1b[0m ").await;
        browser.until(&row("sw2"), "admin@mx1>").await;
        // The mode is the preset's judgement of the prompt it ends with.
        site.sw2.inject(b"\r\n[edit]\r\nadmin@mx1# ").await;
        browser.until(&row("sw2"), "config").await;

        // Unplugged: the row turns lost at once, without a reload.
        site.sw1.close().await;
        let lost = browser.until(&row("sw1"), "lost").await;
        assert!(!lost.starts_with("open"), "{lost}");
        if let Some(path) = screenshot_path("web-ports.png") {
            browser.screenshot(&path).await;
        }
        // Replugged: open again, one reconnect more.
        let replugged = sim::spawn(Profile::CiscoIos, Some(site.sw1_link()))
            .await
            .expect("replug");
        let back = browser.until(&row("sw1"), "open |").await;
        assert!(back.contains('1'), "a reconnect is counted: {back}");

        // A port's link, found before output redraws its row, still
        // opens its console: a snapshot between pointing and clicking
        // loses no click.
        let link = browser.find("tr[data-port='sw1'] a").await;
        let drawn = browser.snapshots_drawn().await;
        replugged.inject(b"\r\nSW1 speaks while a person points\r\n").await;
        browser.until_redrawn_after(drawn).await;
        link.click().await.expect("follow the link found before the redraw");
        browser.until_text("#port", "sw1").await;
    })
    .await;
}

#[tokio::test]
async fn a_console_page_shows_the_switch_takes_typing_and_shows_an_agent_at_once() {
    if !browser_here() {
        return;
    }
    let site = WebSite::start().await;
    browser::session(move |browser| async move {
        browser.sign_in(&site.base, NOC).await;
        browser.until(&row("sw1"), "open").await;
        browser.goto(&site.url("/web/console/sw1")).await;
        browser.until_text("#events", "attached as noc").await;

        // Typing claims the free hold; the switch answers on screen.
        browser.type_keys("\r").await;
        browser.until_screen("SW1>").await;
        browser.type_keys("show clock\r").await;
        browser.until_screen("UTC").await;
        assert!(
            site.sw1
                .wait_received(b"show clock\r", Duration::from_secs(5))
                .await
        );
        browser.until_text("#holder", "you hold the write").await;

        // Released, an agent takes the port: its command reaches the screen
        // (within `until_screen`'s deadline; how soon is printed, and timed
        // by the screen-latency test below), and the events say who holds
        // the write.
        browser
            .find("#release")
            .await
            .click()
            .await
            .expect("release");
        browser.until_text("#holder", "nobody holds").await;
        let agent = site.agent().await;
        agent
            .call("connect", json!({"port": "sw1"}))
            .await
            .expect("connect")
            .ok();
        agent
            .call("send_command", json!({"command": "show version"}))
            .await
            .expect("send_command")
            .ok();
        let answered = Instant::now();
        browser.until_screen("Cisco IOS Software").await;
        println!(
            "the agent's command appeared {:?} after its answer",
            answered.elapsed()
        );
        browser.until_text("#events", "holds the write").await;
        browser.until_text("#holder", "token agent").await;
        if let Some(path) = screenshot_path("web-console.png") {
            browser.screenshot(&path).await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_read_token_watches_and_its_keys_reach_nothing() {
    if !browser_here() {
        return;
    }
    let site = WebSite::start().await;
    browser::session(move |browser| async move {
        browser.sign_in(&site.base, AUDIT).await;
        browser.until(&row("sw1"), "open").await;
        browser.goto(&site.url("/web/console/sw1")).await;
        browser.until_text("#events", "read access").await;
        let disabled = browser
            .eval("return ['acquire','force','release','break'].every(id => document.getElementById(id).disabled);")
            .await;
        assert_eq!(disabled, json!(true), "a read token gets no hold buttons");

        browser.type_keys("reload\r").await;
        browser.until_text("#events", "forbidden").await;
        // What the agent does, the read token sees.
        site.sw1.inject(b"\r\nwatched by audit\r\nSW1>").await;
        browser.until_screen("watched by audit").await;
        assert!(
            site.sw1.received().is_empty(),
            "the read token's keys reached the switch: {:?}",
            String::from_utf8_lossy(&site.sw1.received())
        );
    })
    .await;
}

#[tokio::test]
async fn a_console_page_resumes_after_a_dropped_connection_and_rides_out_a_restart() {
    if !browser_here() {
        return;
    }
    let mut site = WebSite::start().await;
    browser::session(move |browser| async move {
        browser.sign_in(&site.base, NOC).await;
        browser.until(&row("sw1"), "open").await;
        browser.goto(&site.url("/web/console/sw1")).await;
        browser.until_text("#events", "attached as noc").await;
        site.sw1.inject(b"before the drop\r\n").await;
        browser.until_screen("before the drop").await;

        // The connection drops and comes back by itself, resuming where it
        // was: what the switch said meanwhile shows once, nothing twice.
        browser
            .eval("window.serialgateTest.drop(); return true;")
            .await;
        site.sw1.inject(b"while away\r\n").await;
        browser.until_text("#events", "resuming at").await;
        let screen = browser.until_screen("while away").await;
        assert_eq!(screen.matches("while away").count(), 1, "{screen}");
        assert_eq!(screen.matches("before the drop").count(), 1, "{screen}");

        // The daemon stops: a banner says so and the page keeps trying.
        site.stop().await;
        browser.until_text("#banner", "reconnecting").await;
        // Back (the sign-in kept in its state directory): the page
        // reconnects by itself, still signed in, and the new output shows.
        site.start_again().await;
        browser.until_text("#events", "the gateway restarted").await;
        site.sw1.inject(b"after the restart\r\n").await;
        browser.until_screen("after the restart").await;
        let banner = browser
            .eval("return document.getElementById('banner').hidden;")
            .await;
        assert_eq!(banner, json!(true), "the banner goes once reconnected");
        let path = browser.eval("return location.pathname;").await;
        assert_eq!(path, json!("/web/console/sw1"), "still signed in");
        // Signing out ends it (the store forgets it too: a unit test of
        // browser_login reads the file back).
        browser
            .find("form[action='/web/signout'] button")
            .await
            .click()
            .await
            .expect("sign out");
        browser.find("#signin").await;
        browser.goto(&site.url("/web/console/sw1")).await;
        browser.find("#signin").await;
    })
    .await;
}

/// Device byte to browser screen: a unique marker injected into the
/// switch's output, timed until WebDriver finds it in the terminal. The
/// figure includes WebDriver's round trips (each look is one script run),
/// so it is an upper bound of what a person sees.
#[tokio::test]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn latency_from_a_device_byte_to_the_browser_screen() {
    if !browser_here() {
        return;
    }
    let site = WebSite::start().await;
    browser::session(move |browser| async move {
        browser.sign_in(&site.base, AUDIT).await;
        browser.until(&row("sw1"), "open").await;
        browser.goto(&site.url("/web/console/sw1")).await;
        browser.until_text("#events", "attached as audit").await;
        let mut times = Vec::new();
        for i in 0..20 {
            let marker = format!("marker-{i}-{}", std::process::id());
            let start = Instant::now();
            site.sw1.inject(format!("{marker}\r\n").as_bytes()).await;
            browser.until_screen(&marker).await;
            times.push(start.elapsed());
        }
        // One WebDriver round trip alone, for comparison.
        let start = Instant::now();
        browser.screen().await;
        let round_trip = start.elapsed();
        times.sort();
        let p50 = times[times.len() / 2];
        let p99 = times[times.len() - 1];
        println!(
            "device byte to browser screen, 20 markers: p50 {p50:?}, p99 (max) {p99:?}; one WebDriver round trip {round_trip:?}"
        );
    })
    .await;
}

/// A tab nobody is looking at never answers the device: a device's
/// cursor-position, attributes and colour queries are answered once, by
/// the daemon, and the tab neither sends the answers again nor takes the
/// free write hold from the agent who comes next.
#[tokio::test]
async fn an_idle_console_tab_answers_no_query_and_takes_no_hold() {
    if !browser_here() {
        return;
    }
    let site = WebSite::start().await;
    browser::session(move |browser| async move {
        browser.sign_in(&site.base, NOC).await;
        browser.until(&row("sw1"), "open").await;
        browser.goto(&site.url("/web/console/sw1")).await;
        browser.until_text("#events", "attached as noc").await;
        site.sw1
            .inject(b"\r\n\x1b[6n\x1b[c\x1b[>c\x1b]11;?\x07\x1b[5nqueried\r\nSW1>")
            .await;
        browser.until_screen("queried").await;
        // Frames from the tab arrive in order: an answer it had sent would
        // reach the daemon before this acquire and release.
        browser
            .find("#acquire")
            .await
            .click()
            .await
            .expect("acquire");
        browser.until_text("#holder", "you hold the write").await;
        browser
            .find("#release")
            .await
            .click()
            .await
            .expect("release");
        browser.until_text("#holder", "nobody holds").await;
        // The daemon's own answer (a cursor position) reached the device.
        assert!(
            site.sw1.wait_received(b"R", Duration::from_secs(10)).await,
            "the daemon answers the cursor query"
        );
        let received = site.sw1.received();
        let positions = regex::bytes::Regex::new(r"\x1b\[\d+;\d+R").unwrap();
        let attributes = regex::bytes::Regex::new(r"\x1b\[[?>]?[\d;]*c").unwrap();
        assert_eq!(
            positions.find_iter(&received).count(),
            1,
            "one answer to the cursor query: {:?}",
            String::from_utf8_lossy(&received)
        );
        assert!(
            attributes.find_iter(&received).count() <= 2,
            "the attribute queries answered once each at most: {:?}",
            String::from_utf8_lossy(&received)
        );
        assert!(
            !received.windows(4).any(|w| w == b"]11;"),
            "nobody answers the colour query: {:?}",
            String::from_utf8_lossy(&received)
        );
        // The free hold is still free: an agent writes at once.
        let agent = site.agent().await;
        agent
            .call("connect", json!({"port": "sw1"}))
            .await
            .expect("connect")
            .ok();
        // `ok()` fails the test with the error (`busy` if the tab held it).
        agent
            .call("send_text", json!({"text": "\r"}))
            .await
            .expect("send_text")
            .ok();
    })
    .await;
}
