//! A real browser for the web view's tests: headless Chromium driven over
//! WebDriver (fantoccini) through one chromedriver per test binary.
//!
//! chromedriver is started on a free port the first time a test asks, by a
//! thread that lives as long as the test binary and makes it the child's
//! parent-death signal, so it never outlives the tests. It is ready when
//! its `/status` says so (polled with a deadline: it sends no event).
//! Every browser test of the binary shares that chromedriver, side by side
//! in parallel threads: every [`Browser`] is its own WebDriver session (its
//! own Chromium, its own cookies), headless, sandbox off when run as root, and with every
//! host name but the daemon's unresolvable: a page that needed anything
//! from the network would fail to load.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::sync::OnceLock;
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::wait;

/// How long a page may take to show what a test waits for.
pub const PAGE_WITHIN: Duration = Duration::from_secs(15);

/// The chromedriver URL, or why there is none.
static DRIVER: OnceLock<Result<String, String>> = OnceLock::new();

/// Whether chromedriver and Chromium are installed (`.ci/run` installs
/// them; a machine without them skips the browser tests, saying so).
pub fn available() -> bool {
    which("chromedriver").is_some()
        && (which("chromium").is_some() || which("chromium-browser").is_some())
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

/// The chromedriver of this test binary, started on first use.
fn driver() -> &'static str {
    let started = DRIVER.get_or_init(start_driver);
    match started {
        Ok(url) => url,
        Err(e) => panic!("{e}"),
    }
}

fn start_driver() -> Result<String, String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port for chromedriver: {e}"))?
        .port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("chromedriver".into())
        .spawn(move || {
            let mut cmd = std::process::Command::new("chromedriver");
            cmd.arg(format!("--port={port}"))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            // SAFETY: prctl in the child before exec, no allocation.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                    Ok(())
                });
            }
            match cmd.spawn() {
                Ok(mut child) => {
                    let _ = tx.send(Ok(()));
                    // This thread is chromedriver's parent until the test
                    // binary exits.
                    let _ = child.wait();
                }
                Err(e) => {
                    let _ = tx.send(Err(format!("cannot run chromedriver: {e}")));
                }
            }
        })
        .map_err(|e| format!("cannot start the chromedriver thread: {e}"))?;
    rx.recv_timeout(Duration::from_secs(10))
        .map_err(|_| "chromedriver did not start".to_owned())??;
    // chromedriver says nothing when it is ready: look until it says so.
    wait::until_blocking(Duration::from_secs(20), || {
        status_ready(port).then_some(()).ok_or(())
    })
    .map(|()| format!("http://127.0.0.1:{port}"))
    .map_err(|()| "chromedriver's /status did not say ready within 20 s".to_owned())
}

fn status_ready(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    // Read what comes until the answer says ready, the peer closes, or
    // the read timeout.
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    while let Ok(n) = stream.read(&mut chunk) {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..n]);
        if memchr::memmem::find(&answer, b"\"ready\":true").is_some() {
            return true;
        }
    }
    false
}

/// Runs `test` with a fresh [`Browser`] and closes it afterwards, also
/// when the test panics (its panic goes on after the close), so that no
/// Chromium outlives a failed test.
pub async fn session<F, Fut>(test: F)
where
    F: FnOnce(Browser) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    session_with(&[], test).await;
}

/// [`session`] with Chromium given the `extra` arguments too (e.g.
/// `--ignore-certificate-errors-spki-list=HASH` to trust one test
/// certificate, and nothing else, over HTTPS).
pub async fn session_with<F, Fut>(extra: &[String], test: F)
where
    F: FnOnce(Browser) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let browser = Browser::open_with(extra).await;
    let client = browser.client.clone();
    let outcome = tokio::spawn(test(browser)).await;
    // Closing a session the test closed already only fails.
    let _ = client.close().await;
    if let Err(e) = outcome
        && e.is_panic()
    {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// One browser session.
pub struct Browser {
    /// fantoccini's client.
    pub client: Client,
}

impl Browser {
    /// Opens a headless Chromium that can reach nothing but 127.0.0.1.
    pub async fn open() -> Browser {
        Browser::open_with(&[]).await
    }

    /// [`Browser::open`] with the `extra` arguments too.
    pub async fn open_with(extra: &[String]) -> Browser {
        let url = driver().to_owned();
        let mut args = vec![
            "--headless=new",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1400,900",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ];
        if nix::unistd::geteuid().is_root() {
            args.push("--no-sandbox");
        }
        args.extend(extra.iter().map(String::as_str));
        let mut caps = serde_json::Map::new();
        caps.insert("goog:chromeOptions".into(), json!({ "args": args }));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = tokio::time::timeout(
            PAGE_WITHIN,
            ClientBuilder::new(connector)
                .capabilities(caps)
                .connect(&url),
        )
        .await
        .expect("a WebDriver session in time")
        .expect("a WebDriver session");
        Browser { client }
    }

    /// Goes to `url` and waits for it to load.
    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("navigate");
    }

    /// Signs in at `base` with `secret` through the form.
    pub async fn sign_in(&self, base: &str, secret: &str) {
        self.goto(&format!("{base}/web/signin")).await;
        let field = self.find("#token").await;
        field.send_keys(secret).await.expect("type the token");
        self.find("#signin button")
            .await
            .click()
            .await
            .expect("submit");
    }

    /// The element `css` finds, waited for.
    pub async fn find(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(PAGE_WITHIN)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css:?} on the page: {e}"))
    }

    /// Runs `script` in the page and returns its value.
    pub async fn eval(&self, script: &str) -> Value {
        self.client
            .execute(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("script {script:?}: {e}"))
    }

    /// Waits until `script` (which returns a string) contains `needle`;
    /// returns what it last returned.
    pub async fn until(&self, script: &str, needle: &str) -> String {
        let what = format!("{needle:?} on the page");
        // A closure that returns a future (not an async closure): the
        // wait's future stays `Send`, which `session`'s task needs.
        wait::eventually(&what, PAGE_WITHIN, || async move {
            let text = self.eval(script).await;
            wait::when(text.as_str().unwrap_or_default().to_owned(), |t| {
                t.contains(needle)
            })
        })
        .await
    }

    /// The console page's terminal text (its test hook).
    pub async fn screen(&self) -> String {
        self.eval(SCREEN)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits until the console page's terminal shows `needle`.
    pub async fn until_screen(&self, needle: &str) -> String {
        self.until(SCREEN, needle).await
    }

    /// Waits until the element `css`'s text contains `needle`.
    pub async fn until_text(&self, css: &str, needle: &str) -> String {
        let script = format!(
            "const e = document.querySelector({}); return e ? e.innerText : '';",
            Value::String(css.to_owned())
        );
        self.until(&script, needle).await
    }

    /// How many snapshots the ports page has drawn so far.
    pub async fn snapshots_drawn(&self) -> u64 {
        let drawn = self
            .eval("return document.body.dataset.snapshots || '0';")
            .await;
        drawn.as_str().and_then(|n| n.parse().ok()).unwrap_or(0)
    }

    /// Waits until the ports page has drawn a snapshot after the first
    /// `drawn` (every row and request card redrawn from it).
    pub async fn until_redrawn_after(&self, drawn: u64) {
        let script =
            format!("return String(Number(document.body.dataset.snapshots || 0) > {drawn});");
        self.until(&script, "true").await;
    }

    /// Types `text` into the console page's terminal (`\r` is Enter), as
    /// key presses on the focused terminal (xterm's input field is hidden,
    /// so it cannot take keys as an element).
    pub async fn type_keys(&self, text: &str) {
        use fantoccini::actions::{InputSource, KeyAction, KeyActions};
        self.find(".xterm-screen")
            .await
            .click()
            .await
            .expect("focus the terminal");
        let mut keys = KeyActions::new("keyboard".into());
        for c in text.chars() {
            let value = if c == '\r' { '\u{E007}' } else { c };
            keys = keys
                .then(KeyAction::Down { value })
                .then(KeyAction::Up { value });
        }
        self.client
            .perform_actions(keys)
            .await
            .expect("type into the terminal");
    }

    /// Writes a PNG of the window to `path`.
    pub async fn screenshot(&self, path: &std::path::Path) {
        let png = self.client.screenshot().await.expect("a screenshot");
        std::fs::write(path, png).expect("write the screenshot");
    }

    /// Ends the session (and its Chromium).
    pub async fn close(self) {
        let _ = self.client.close().await;
    }
}

/// The console page's test hook: its terminal's rows.
const SCREEN: &str = "return window.serialgateTest ? window.serialgateTest.screen() : '';";
