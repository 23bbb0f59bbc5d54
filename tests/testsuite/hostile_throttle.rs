//! The throttles and pools against a caller who holds a valid read token
//! and many source addresses (loopback has all of 127.0.0.0/8, so a client
//! socket bound to 127.1.x.y is another source): its own successes do not
//! wipe its failures, many sources' failures do not lock out an address
//! that made none, its sign-ins do not end another token's browser login,
//! and wrong bearer tokens on `/mcp` and the console WebSocket are
//! throttled like the web sign-in while a valid token from another source
//! goes on working, and a long secret from the held address too.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, COOKIE, ORIGIN, RETRY_AFTER};
use serialgate_testkit::console::ConsoleConn;
use serialgate_testkit::web::{AGENT, AUDIT, LAB, NOC, WebSite};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

/// The daemon's listening address.
fn listen_addr(site: &WebSite) -> SocketAddr {
    site.base
        .trim_start_matches("http://")
        .parse()
        .expect("the site's address")
}

/// The `i`-th source address other than 127.0.0.1: 127.1.x.y.
fn source(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(
        127,
        1 + (i / 62_500) as u8,
        (i / 250 % 250) as u8,
        (i % 250 + 1) as u8,
    )
}

/// Sends `request` (a whole HTTP/1.1 request) from `from` to `to` on a
/// connection of its own; the response's head (status line and headers),
/// or the empty string when the daemon closed without an answer.
async fn send_from(from: Ipv4Addr, to: SocketAddr, request: &str) -> String {
    let exchange = async {
        let socket = TcpSocket::new_v4().expect("a socket");
        socket
            .bind(SocketAddr::new(IpAddr::V4(from), 0))
            .expect("bind a loopback source");
        let mut stream = socket.connect(to).await.expect("connect");
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        String::from_utf8_lossy(&head).into_owned()
    };
    tokio::time::timeout(Duration::from_secs(20), exchange)
        .await
        .expect("an answer within 20 s")
}

/// The status code of a response head.
fn status(head: &str) -> u16 {
    head.split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

/// A sign-in form with `secret`, from the web view's own origin.
fn sign_in_request(to: SocketAddr, secret: &str) -> String {
    let body = format!("token={secret}");
    format!(
        "POST /web/signin HTTP/1.1\r\nHost: {to}\r\nOrigin: http://{to}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A client that shows redirects instead of following them.
fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .expect("an HTTP client")
}

/// POSTs the sign-in form with `secret` from 127.0.0.1.
async fn sign_in(site: &WebSite, secret: &str) -> reqwest::Response {
    http()
        .post(site.url("/web/signin"))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(ORIGIN, &site.base)
        .body(format!("token={secret}"))
        .send()
        .await
        .expect("POST /web/signin")
}

/// Signs in with `secret`; the `name=value` of the login cookie.
async fn cookie(site: &WebSite, secret: &str) -> String {
    super::hostile_web::login_cookie(&sign_in(site, secret).await)
}

async fn whoami(site: &WebSite, cookie: &str) -> StatusCode {
    http()
        .get(site.url("/web/whoami"))
        .header(COOKIE, cookie)
        .send()
        .await
        .expect("GET /web/whoami")
        .status()
}

#[tokio::test]
async fn a_guessers_own_sign_ins_do_not_wipe_its_failures() {
    let site = WebSite::start().await;
    let mut throttled = None;
    for i in 0..45 {
        // One right sign-in with the read token after every nine guesses.
        if i % 9 == 8 {
            let r = sign_in(&site, AUDIT).await;
            if r.status() == StatusCode::TOO_MANY_REQUESTS {
                throttled = Some(i);
                break;
            }
            assert_eq!(
                r.status(),
                StatusCode::SEE_OTHER,
                "read sign-in before guess {i}"
            );
        }
        let r = sign_in(&site, &format!("guess-{i}")).await;
        if r.status() == StatusCode::TOO_MANY_REQUESTS {
            let retry: u64 = r.headers()[RETRY_AFTER]
                .to_str()
                .expect("ASCII")
                .parse()
                .expect("Retry-After in seconds");
            assert!((1..=60).contains(&retry), "Retry-After: {retry}");
            let page = r.text().await.unwrap_or_default();
            assert!(page.contains("seconds"), "says when to try again: {page}");
            throttled = Some(i);
            break;
        }
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "guess {i}");
    }
    let at = throttled.expect("45 guesses, never a 429");
    assert!(at <= 11, "the first 429 came at guess {at}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_from_thousands_of_sources_do_not_lock_out_another() {
    let site = WebSite::start().await;
    let to = listen_addr(&site);
    let guess = sign_in_request(to, "a-wrong-guess");
    let mut refused = 0;
    for batch in 0..(5000 / 50) {
        let mut set = tokio::task::JoinSet::new();
        for i in batch * 50..(batch + 1) * 50 {
            let guess = guess.clone();
            set.spawn(async move { status(&send_from(source(i), to, &guess).await) });
        }
        while let Some(code) = set.join_next().await {
            let code = code.expect("a guess");
            assert!(code == 401 || code == 429, "answered {code}");
            refused += usize::from(code == 429);
        }
    }
    assert_eq!(
        refused, 0,
        "one failure each, yet {refused} sources were held"
    );
    let r = sign_in(&site, LAB).await;
    assert_eq!(
        r.status(),
        StatusCode::SEE_OTHER,
        "the admin, who failed nothing, cannot sign in"
    );
}

#[tokio::test]
async fn another_tokens_sign_ins_do_not_sign_the_admin_out() {
    let site = WebSite::start().await;
    let admin = cookie(&site, LAB).await;
    let noc = cookie(&site, NOC).await;
    let mut last = String::new();
    for _ in 0..260 {
        last = cookie(&site, AUDIT).await;
    }
    assert_eq!(
        whoami(&site, &admin).await,
        StatusCode::OK,
        "admin signed out"
    );
    assert_eq!(whoami(&site, &noc).await, StatusCode::OK, "noc signed out");
    assert_eq!(whoami(&site, &last).await, StatusCode::OK);
}

/// A WebSocket upgrade to sw1's console at `to` with bearer `token`.
fn console_upgrade(to: SocketAddr, token: &str) -> String {
    format!(
        "GET /ports/sw1/console HTTP/1.1\r\nHost: {to}\r\nAuthorization: Bearer {token}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
}

/// `count` requests from `from`, each with a wrong bearer token made by
/// `request`; the statuses answered.
async fn wrong_tokens(
    from: Ipv4Addr,
    to: SocketAddr,
    count: usize,
    request: impl Fn(&str) -> String,
) -> Vec<u16> {
    let mut codes = Vec::new();
    for i in 0..count {
        codes.push(status(
            &send_from(from, to, &request(&format!("wrong-{i}"))).await,
        ));
    }
    codes
}

#[tokio::test]
async fn wrong_bearer_tokens_are_throttled_and_others_go_on() {
    let site = WebSite::start().await;
    let to = listen_addr(&site);
    let mcp = |token: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {to}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
        )
    };
    let console = |token: &str| console_upgrade(to, token);
    for (door, from, request) in [
        ("/mcp", source(1), &mcp as &dyn Fn(&str) -> String),
        ("the console", source(2), &console),
    ] {
        let codes = wrong_tokens(from, to, 12, request).await;
        assert!(
            codes[..10].iter().all(|&c| c == 401),
            "{door}: the first ten: {codes:?}"
        );
        assert_eq!(codes[11], 429, "{door}: guessing goes on: {codes:?}");
        let head = send_from(from, to, &request(NOC)).await;
        assert_eq!(status(&head), 429, "{door}: held before comparing");
        assert!(
            head.to_ascii_lowercase().contains("retry-after:"),
            "{door}: {head}"
        );
    }
    // A valid token from another source is not slowed.
    let agent = tokio::time::timeout(Duration::from_secs(10), site.agent())
        .await
        .expect("the agent connects within 10 s");
    drop(agent);
    let url = format!(
        "{}/ports/sw1/console",
        site.base.replacen("http://", "ws://", 1)
    );
    let mut person = ConsoleConn::connect_ws(&url, Some(NOC))
        .await
        .expect("a console with a valid token");
    person
        .send_json(&serde_json::json!({"type": "hello", "port": "sw1", "mode": "attach"}))
        .await;
    person.until_json("attached").await;
}

/// An MCP `initialize` to `to` with `token`, on a connection of its own.
fn initialize(to: SocketAddr, token: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"held","version":"1"}}}"#;
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {to}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// An engineer whose client shares its address with a guesser (or with an
/// agent whose token is stale) is not kept out when their secret is long:
/// from the held address a long secret opens `/mcp`, a console and the web
/// view, while a short valid one and long wrong guesses get `429`.
#[tokio::test]
async fn a_held_address_still_lets_a_long_secret_in() {
    let site = WebSite::start().await;
    let to = listen_addr(&site);
    let from = source(3);
    let codes = wrong_tokens(from, to, 11, |t| initialize(to, t)).await;
    assert_eq!(codes[10], 429, "the address is held: {codes:?}");
    assert!(AGENT.len() >= 32 && AUDIT.len() < 32);

    let short = send_from(from, to, &initialize(to, AUDIT)).await;
    assert_eq!(status(&short), 429, "a short secret is held: {short}");
    assert!(
        short.contains("let in meanwhile"),
        "says what gets in: {short}"
    );
    for i in 0..20 {
        let guess = format!("a-long-guess-{i:02}-0123456789abcdefghij");
        let head = send_from(from, to, &initialize(to, &guess)).await;
        assert_eq!(status(&head), 429, "long guess {i}: {head}");
    }

    let long = send_from(from, to, &initialize(to, AGENT)).await;
    assert_eq!(status(&long), 200, "the long secret opens /mcp: {long}");
    let upgraded = send_from(from, to, &console_upgrade(to, AGENT)).await;
    assert_eq!(status(&upgraded), 101, "and a console: {upgraded}");
    let signed_in = send_from(from, to, &sign_in_request(to, AGENT)).await;
    assert_eq!(status(&signed_in), 303, "and the web view: {signed_in}");
    let held = send_from(from, to, &sign_in_request(to, AUDIT)).await;
    assert_eq!(status(&held), 429, "the read token's sign-in: {held}");
}
