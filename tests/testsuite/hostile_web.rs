//! The web view against hostile HTTP, no browser: what it shows before
//! sign-in (the form, nothing else), wrong, oversized and cross-origin
//! sign-ins, forged and signed-out cookies, path traversal in asset paths,
//! cross-origin WebSockets, throttled guessing, and downloads held to the
//! token's ports and cut off when it is revoked.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE, COOKIE, ORIGIN, SET_COOKIE};
use serde_json::json;
use serialgate_testkit::console::ConsoleConn;
use serialgate_testkit::load::{AnonPeak, proc_status_kib};
use serialgate_testkit::wait;
use serialgate_testkit::web::{AUDIT, LAB, NOC, WebSite};

/// A client that shows redirects instead of following them.
fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .expect("an HTTP client")
}

/// POSTs the sign-in form with `secret` and `origin`.
async fn sign_in(site: &WebSite, secret: &str, origin: Option<&str>) -> reqwest::Response {
    let mut request = http()
        .post(site.url("/web/signin"))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(format!("token={secret}"));
    if let Some(origin) = origin {
        request = request.header(ORIGIN, origin);
    }
    request.send().await.expect("POST /web/signin")
}

/// Signs in with `secret`; the `name=value` of the session cookie.
async fn cookie(site: &WebSite, secret: &str) -> String {
    let response = sign_in(site, secret, Some(&site.base)).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let set = response.headers()[SET_COOKIE]
        .to_str()
        .expect("ASCII")
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(attribute), "{set}");
    }
    login_cookie(&response)
}

/// The `name=value` of the session cookie a successful sign-in (`303 See
/// Other`) sets: what a browser sends back.
pub(crate) fn login_cookie(response: &reqwest::Response) -> String {
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    response.headers()[SET_COOKIE]
        .to_str()
        .expect("ASCII")
        .split(';')
        .next()
        .expect("name=value")
        .to_owned()
}

async fn get(site: &WebSite, path: &str, cookie: Option<&str>) -> reqwest::Response {
    let mut request = http().get(site.url(path));
    if let Some(cookie) = cookie {
        request = request.header(COOKIE, cookie);
    }
    request.send().await.expect("GET")
}

#[tokio::test]
async fn before_sign_in_only_the_form_is_shown() {
    let site = WebSite::start().await;
    let page = get(&site, "/web/", None).await;
    assert_eq!(page.status(), StatusCode::SEE_OTHER);
    assert_eq!(page.headers()["location"], "/web/signin");
    for path in [
        "/web/assets/ports.js",
        "/web/assets/console.js",
        "/web/assets/xterm.js",
        "/web/assets/app.css",
        "/web/whoami",
        "/web/ports/live",
        "/web/console/sw1/transcript",
    ] {
        let r = get(&site, path, None).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{path}");
        let body = r.text().await.unwrap_or_default();
        assert!(!body.contains("sw1") && body.len() < 100, "{path}: {body}");
    }
    assert_eq!(
        get(&site, "/web/console/sw1", None).await.status(),
        StatusCode::SEE_OTHER
    );
    let form = get(&site, "/web/signin", None).await;
    assert_eq!(form.status(), StatusCode::OK);
    let csp = form.headers()[CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap_or_default()
        .to_owned();
    assert!(csp.starts_with("default-src 'self'"), "{csp}");
    let html = form.text().await.unwrap_or_default();
    assert!(
        html.contains("<form method=\"post\" action=\"/web/signin\""),
        "{html}"
    );
    assert!(!html.contains("sw1") && !html.contains("://"), "{html}");
    assert!(!html.contains("<script"), "the form needs no script");
    // A page that does not exist carries the same headers as the pages.
    for path in [
        "/web/no-such-page",
        "/web/console/sw1/nothing",
        "/web/assets/x/y",
    ] {
        let missing = get(&site, path, None).await;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND, "{path}");
        let csp = missing
            .headers()
            .get(CONTENT_SECURITY_POLICY)
            .map(|v| v.to_str().unwrap_or_default().to_owned());
        assert!(
            csp.is_some_and(|c| c.starts_with("default-src 'self'")),
            "{path}: {:?}",
            missing.headers()
        );
        assert_eq!(
            missing.headers()["x-content-type-options"],
            "nosniff",
            "{path}"
        );
    }
}

#[tokio::test]
async fn wrong_oversized_and_cross_origin_sign_ins_are_refused_and_not_logged() {
    let mut site = WebSite::start().await;
    let guess = "guessed-secret-777";
    let r = sign_in(&site, guess, Some(&site.base)).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(!r.headers().contains_key(SET_COOKIE));
    let lines = site.daemon.stderr.lines_until("web sign-in refused").await;
    assert!(lines.iter().all(|l| !l.contains(guess)), "{lines:?}");
    assert!(
        lines.last().is_some_and(|l| l.contains("127.0.0.1")),
        "{lines:?}"
    );
    // Oversized: refused without comparing; a huge body is not read.
    let r = sign_in(&site, &"x".repeat(5000), Some(&site.base)).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = sign_in(&site, &"x".repeat(100_000), Some(&site.base)).await;
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    // The right token from another site's page, or with no Origin at all.
    for origin in [Some("http://evil.example"), None] {
        let r = sign_in(&site, NOC, origin).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{origin:?}");
        assert!(!r.headers().contains_key(SET_COOKIE));
    }
    // A hostile string reflected nowhere.
    let r = sign_in(&site, "<script>alert(1)</script>", Some(&site.base)).await;
    let html = r.text().await.unwrap_or_default();
    assert!(!html.contains("<script>alert"), "{html}");
}

#[tokio::test]
async fn guessing_is_throttled_by_address() {
    let site = WebSite::start().await;
    for i in 0..10 {
        let r = sign_in(&site, &format!("guess-{i}"), Some(&site.base)).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "guess {i}");
    }
    let r = sign_in(&site, NOC, Some(&site.base)).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn a_forged_or_signed_out_cookie_opens_nothing() {
    let site = WebSite::start().await;
    let noc = cookie(&site, NOC).await;
    let me = get(&site, "/web/whoami", Some(&noc)).await;
    assert_eq!(me.status(), StatusCode::OK);
    assert_eq!(
        me.json::<serde_json::Value>().await.expect("JSON"),
        json!({"token": "noc", "access": "write"})
    );
    let page = get(&site, "/web/", Some(&noc)).await;
    assert_eq!(page.status(), StatusCode::OK);
    let csp = page.headers()[CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap_or_default()
        .to_owned();
    assert!(csp.starts_with("default-src 'self'"), "{csp}");
    for forged in [
        format!("serialgate_session={}", "0".repeat(64)),
        "serialgate_session=../../etc/passwd".to_owned(),
        format!("serialgate_session={}", "a".repeat(5000)),
        NOC.to_owned(),
    ] {
        let r = get(&site, "/web/whoami", Some(&forged)).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{forged:.80}");
    }
    // Sign-out from another origin does nothing; from the page it ends
    // the session on the server, whatever the browser keeps.
    let out = |origin: &'static str| {
        http()
            .post(site.url("/web/signout"))
            .header(COOKIE, noc.clone())
            .header(ORIGIN, origin)
            .send()
    };
    assert_eq!(
        out("http://evil.example").await.expect("POST").status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        get(&site, "/web/whoami", Some(&noc)).await.status(),
        StatusCode::OK
    );
    let origin: &'static str = Box::leak(site.base.clone().into_boxed_str());
    let r = out(origin).await.expect("POST");
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(
        r.headers()[SET_COOKIE]
            .to_str()
            .unwrap_or_default()
            .contains("Max-Age=0")
    );
    assert_eq!(
        get(&site, "/web/whoami", Some(&noc)).await.status(),
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn asset_paths_reach_only_the_assets() {
    let site = WebSite::start().await;
    let noc = cookie(&site, NOC).await;
    let css = get(&site, "/web/assets/app.css", Some(&noc)).await;
    assert_eq!(css.status(), StatusCode::OK);
    assert!(
        css.headers()[CONTENT_TYPE]
            .to_str()
            .unwrap_or_default()
            .starts_with("text/css")
    );
    for path in [
        "/web/assets/..%2F..%2F..%2FCargo.toml",
        "/web/assets/%2e%2e%2fsrc%2fmain.rs",
        "/web/assets/..%5c..%5cCargo.toml",
        "/web/assets/xterm.js%00.css",
        "/web/assets/vendor%2Fxterm%2FLICENSE",
        "/web/assets/",
        "/web/assets/a/b",
        "/web/assets/%2Fetc%2Fpasswd",
    ] {
        let r = get(&site, path, Some(&noc)).await;
        let status = r.status();
        let body = r.text().await.unwrap_or_default();
        assert!(
            status == StatusCode::NOT_FOUND || status == StatusCode::UNAUTHORIZED,
            "{path}: {status}"
        );
        assert!(body.len() < 100, "{path}: {body}");
    }
}

#[tokio::test]
async fn websockets_from_other_origins_are_refused() {
    let site = WebSite::start().await;
    let noc = cookie(&site, NOC).await;
    let ws = site.base.replacen("http://", "ws://", 1);
    let console = format!("{ws}/ports/sw1/console");
    let live = format!("{ws}/web/ports/live");
    let evil = "http://evil.example";
    let bearer = format!("Bearer {NOC}");
    for (url, headers) in [
        (&console, vec![("cookie", noc.as_str()), ("origin", evil)]),
        (
            &console,
            vec![("authorization", bearer.as_str()), ("origin", evil)],
        ),
        (&live, vec![("cookie", noc.as_str()), ("origin", evil)]),
        (&live, vec![("cookie", noc.as_str())]),
    ] {
        let refused = ConsoleConn::connect_ws_with(url, &headers).await.err();
        assert_eq!(refused.as_deref(), Some("HTTP 403"), "{url} {headers:?}");
    }
    let forged = format!("serialgate_session={}", "f".repeat(64));
    let refused = ConsoleConn::connect_ws_with(
        &console,
        &[("cookie", forged.as_str()), ("origin", site.base.as_str())],
    )
    .await
    .err();
    assert_eq!(refused.as_deref(), Some("HTTP 401"));
    // From the page's own origin, the cookie opens the console.
    let mut conn = ConsoleConn::connect_ws_with(
        &console,
        &[("cookie", noc.as_str()), ("origin", site.base.as_str())],
    )
    .await
    .expect("the console WebSocket");
    conn.send_json(&json!({"type": "hello", "port": "sw1", "mode": "watch"}))
        .await;
    let attached = conn.until_json("attached").await;
    assert_eq!(attached["you"], "noc on console", "{attached}");
    assert_eq!(attached["writing"], false, "watching takes no hold");
    let mut feed = ConsoleConn::connect_ws_with(
        &live,
        &[("cookie", noc.as_str()), ("origin", site.base.as_str())],
    )
    .await
    .expect("the ports feed");
    let snapshot = feed.until_json("ports").await;
    let names: Vec<&str> = snapshot["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["sw1", "sw2"], "{snapshot}");
    assert_eq!(snapshot["ports"][0]["watchers"][0]["who"], "noc on console");
}

#[tokio::test]
async fn transcripts_download_within_the_tokens_ports() {
    let site = WebSite::start().await;
    site.sw1.inject(b"\r\nfrom the switch\r\nSW1>").await;
    let noc = cookie(&site, NOC).await;
    // The transcript writer says nothing over HTTP when it has caught up.
    let what = "the transcript to hold the output";
    wait::eventually(what, Duration::from_secs(20), async || {
        let r = get(&site, "/web/console/sw1/transcript", Some(&noc)).await;
        assert_eq!(r.status(), StatusCode::OK);
        let disposition = r.headers()["content-disposition"]
            .to_str()
            .unwrap_or_default()
            .to_owned();
        assert!(disposition.contains("sw1-transcript.txt"), "{disposition}");
        let text = r.text().await.unwrap_or_default();
        wait::when(text, |t| t.contains("from the switch"))
    })
    .await;
    // A token whose globs miss sw1 learns nothing about it.
    let lab = cookie(&site, LAB).await;
    for path in [
        "/web/console/sw1/transcript",
        "/web/console/nope/transcript",
    ] {
        let r = get(&site, path, Some(&lab)).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
    }
    let long = format!("/web/console/{}/transcript", "x".repeat(3000));
    assert_eq!(
        get(&site, &long, Some(&noc)).await.status(),
        StatusCode::NOT_FOUND
    );
}

/// Floods sw1 with a chatty switch's log until its transcript holds at
/// least `bytes`, then a last line, and waits until that is written; the
/// transcript's path.
async fn flood_transcript(site: &WebSite, bytes: u64) -> std::path::PathBuf {
    let file = site.dir.path().join("logs/transcripts/sw1.log");
    let line = b"%LINK-3-UPDOWN: Interface GigabitEthernet0/1, changed state to up\r\n";
    let chunk: Vec<u8> = line
        .iter()
        .copied()
        .cycle()
        .take(line.len() * 16_000)
        .collect();
    while std::fs::metadata(&file).map_or(0, |m| m.len()) < bytes {
        site.sw1.inject(&chunk).await;
    }
    site.sw1.inject(b"end of the flood\r\n").await;
    wait::eventually(
        "the transcript written",
        Duration::from_secs(20),
        async || {
            let written = std::fs::read(&file).unwrap_or_default();
            wait::when(written.ends_with(b"end of the flood\r\n"), |ended| *ended)
        },
    )
    .await;
    file
}

/// A browser's download of a 12 MiB transcript, still streaming when a
/// reload lowers its token to metrics (which reaches no port), is cut off
/// there: the connection closes before the body's last chunk, and most of
/// the transcript is never sent. The browser's socket has a small receive
/// buffer, so that what is in flight at the reload is little.
#[tokio::test]
async fn a_download_streaming_when_its_token_is_revoked_is_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let site = WebSite::start().await;
    flood_transcript(&site, 12 << 20).await;
    let noc = cookie(&site, NOC).await;
    let to: std::net::SocketAddr = site
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("the site's address");
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .set_recv_buffer_size(64 << 10)
        .expect("a small receive buffer");
    let mut stream = socket.connect(to).await.expect("connect");
    stream
        .write_all(
            format!(
                "GET /web/console/sw1/transcript HTTP/1.1\r\nHost: {to}\r\nCookie: {noc}\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .expect("send");
    let mut got = Vec::new();
    let mut buf = vec![0u8; 16 << 10];
    while got.len() < 256 << 10 {
        let n = stream.read(&mut buf).await.expect("the download goes on");
        assert!(n > 0, "the download ended at {} bytes", got.len());
        got.extend_from_slice(&buf[..n]);
    }
    assert!(got.starts_with(b"HTTP/1.1 200"), "{:?}", &got[..64]);
    site.reload("", "", "metrics").await;
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the download ends within 20 s");
    assert!(
        !got.ends_with(b"\r\n0\r\n\r\n"),
        "the whole download came after the reload ({} bytes)",
        got.len()
    );
    assert!(got.len() < 10 << 20, "{} bytes", got.len());
}

#[tokio::test]
async fn a_read_tokens_unread_transcript_downloads_hold_no_copy_of_the_transcript_each() {
    let site = WebSite::start().await;
    let file = flood_transcript(&site, 8 << 20).await;

    // The read token asks for it 48 times at once and reads none of it.
    let audit = cookie(&site, AUDIT).await;
    let pid = site.daemon.child.id().expect("the daemon runs");
    let before = proc_status_kib(pid, "RssAnon").expect("RssAnon");
    let peak = AnonPeak::start(pid);
    let mut unread = Vec::new();
    for _ in 0..48 {
        let r = get(&site, "/web/console/sw1/transcript", Some(&audit)).await;
        assert_eq!(r.status(), StatusCode::OK);
        unread.push(r);
    }
    let grown = peak.stop().expect("sampled").saturating_sub(before);
    assert!(
        grown < 96 << 10,
        "48 unread downloads of an 8 MiB transcript grew the daemon by {grown} KiB"
    );

    // Read, one is the transcript's end, whole lines, as the file has it.
    let text = unread.pop().expect("one").text().await.expect("the body");
    let on_disk = String::from_utf8_lossy(&std::fs::read(&file).expect("the file")).into_owned();
    assert!(
        text.len() > 8 << 20 && on_disk.ends_with(&text),
        "{} bytes",
        text.len()
    );
    assert!(
        text.ends_with("end of the flood\r\n"),
        "{:?}",
        &text[text.len() - 80..]
    );
}

#[tokio::test]
async fn many_ports_feeds_each_keep_up_and_a_stalled_or_noisy_one_holds_nobody_back() {
    let site = WebSite::start().await;
    let noc = cookie(&site, NOC).await;
    let live = format!(
        "{}/web/ports/live",
        site.base.replacen("http://", "ws://", 1)
    );
    let headers = [("cookie", noc.as_str()), ("origin", site.base.as_str())];
    let mut feeds = Vec::new();
    for _ in 0..40 {
        let mut feed = ConsoleConn::connect_ws_with(&live, &headers)
            .await
            .expect("a ports feed");
        feed.until_json("ports").await;
        feeds.push(feed);
    }
    // One browser that never reads, one that sends junk, one that sends
    // more than a page ever would.
    let _stalled = ConsoleConn::connect_ws_with(&live, &headers)
        .await
        .expect("a ports feed");
    let mut noisy = ConsoleConn::connect_ws_with(&live, &headers)
        .await
        .expect("a ports feed");
    noisy.until_json("ports").await;
    noisy
        .send_raw(b"{\"type\":\"hello\",\"port\":\"../etc\"}")
        .await;
    let mut oversized = ConsoleConn::connect_ws_with(&live, &headers)
        .await
        .expect("a ports feed");
    oversized.until_json("ports").await;
    oversized.send_raw(&vec![b'x'; 64 * 1024]).await;
    oversized.until_closed().await;

    // The switch prints: every reader, the noisy one too, sees it.
    site.sw1.inject(b"\r\nfeed marker 4711\r\nSW1>").await;
    for feed in feeds.iter_mut().chain(std::iter::once(&mut noisy)) {
        loop {
            let snapshot = feed.until_json("ports").await;
            if snapshot["ports"][0]["last_line"] == "SW1>" {
                assert_eq!(snapshot["ports"][0]["mode"], "exec", "{snapshot}");
                break;
            }
        }
    }
}

#[tokio::test]
async fn a_resume_in_another_log_replays_instead_of_trusting_the_offset() {
    let site = WebSite::start().await;
    let noc = cookie(&site, NOC).await;
    let console = format!(
        "{}/ports/sw1/console",
        site.base.replacen("http://", "ws://", 1)
    );
    let headers = [("cookie", noc.as_str()), ("origin", site.base.as_str())];
    site.sw1.inject(b"line one\r\nline two\r\nSW1>").await;
    let mut first = ConsoleConn::connect_ws_with(&console, &headers)
        .await
        .expect("the console WebSocket");
    first
        .send_json(&json!({"type": "hello", "port": "sw1", "mode": "watch"}))
        .await;
    let attached = first.until_json("attached").await;
    first.until_output("SW1>").await;
    let log = attached["log"].as_str().expect("a log id").to_owned();
    // The same log (its output is in now): resumed where asked.
    let mut same = ConsoleConn::connect_ws_with(&console, &headers)
        .await
        .expect("the console WebSocket");
    same.send_json(
        &json!({"type": "hello", "port": "sw1", "mode": "watch", "from": 5, "log": log}),
    )
    .await;
    assert_eq!(same.until_json("attached").await["start"], 5);
    // A log id that is not this log's (forged, or from before a restart),
    // absurd offsets, an oversized id: a replay from what is retained.
    for (from, forged) in [
        (5u64, "0123456789abcdef".to_owned()),
        (u64::MAX, "x".repeat(10_000)),
    ] {
        let mut other = ConsoleConn::connect_ws_with(&console, &headers)
            .await
            .expect("the console WebSocket");
        other
            .send_json(&json!({"type": "hello", "port": "sw1", "mode": "watch", "from": from, "log": forged}))
            .await;
        let attached = other.until_json("attached").await;
        assert_eq!(attached["start"], 0, "replayed from the start: {attached}");
        assert_eq!(attached["log"], log.as_str());
        other.until_output("line one").await;
    }
}
