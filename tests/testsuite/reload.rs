//! SIGHUP reloads the config file (`systemctl reload serialgate`): added
//! ports open, removed ones close, changed ones reopen with a fresh log,
//! unchanged ones keep their OutputLog and the sessions connected to them;
//! a config with errors changes nothing. The real binary over stdio; each
//! reload is awaited on the notify socket (`RELOADING=1` … `READY=1`).

use serialgate_testkit::daemon;

use std::path::{Path, PathBuf};

use daemon::{Client, Daemon, NotifySocket, WITHIN};
use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::client::GateClient;
use tempfile::TempDir;

/// Silent devices linked at `<dir>/<name>`, by name.
struct Devices {
    dir: TempDir,
    sims: Vec<(String, SimHandle)>,
}

impl Devices {
    async fn start(names: &[&str]) -> Devices {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut sims = Vec::new();
        for name in names {
            let sim = sim::spawn(Profile::Silent, Some(dir.path().join(name)))
                .await
                .expect("simulated device");
            sims.push(((*name).to_owned(), sim));
        }
        Devices { dir, sims }
    }

    fn sim(&self, name: &str) -> &SimHandle {
        self.sims
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s)
            .unwrap_or_else(|| panic!("no device {name}"))
    }

    fn link(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("serialgate.toml")
    }

    /// Writes a config with a port per `(name, baud)`, each on its device.
    fn write_config(&self, ports: &[(&str, u32)]) {
        let mut text = String::from("# serialgate reload test\n");
        for (name, baud) in ports {
            text.push_str(&format!(
                "\n[ports.{name}]\ndevice = {:?}\npreset = \"generic\"\nbaud = {baud}\n",
                self.link(name).display()
            ));
        }
        write_atomically(&self.config_path(), &text);
    }
}

/// Replaces the file as an editor or config management would: the daemon
/// never reads half a file.
fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("write config");
    std::fs::rename(&tmp, path).expect("rename config");
}

/// Sends SIGHUP and waits for the reload to be over.
async fn reload(daemon: &Daemon, notify: &NotifySocket) {
    daemon.signal(libc::SIGHUP);
    let reloading = notify.expect("RELOADING=1").await;
    assert!(
        reloading.lines().any(|l| l.starts_with("MONOTONIC_USEC=")),
        "{reloading:?}"
    );
    notify.expect("READY=1").await;
}

/// The port `name` as `list_ports` shows it.
async fn port(client: &Client, name: &str) -> Value {
    let listed = client.ok("list_ports", json!({})).await;
    listed["ports"]
        .as_array()
        .and_then(|ports| ports.iter().find(|p| p["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("no port {name} in {listed}"))
}

/// Everything retained on `connection` from offset 0, and the head.
async fn whole_log(client: &Client, connection: &str) -> (String, u64) {
    let read = client
        .ok(
            "read_output",
            json!({"connection": connection, "cursor": 0, "max_bytes": 65536}),
        )
        .await;
    let output = read["output"].as_str().expect("output").to_owned();
    (output, read["head"].as_u64().expect("head"))
}

/// Prints `text` on `connection`'s device and reads it through the
/// session; returns where the session's cursor is now.
async fn print_and_read(client: &Client, devices: &Devices, connection: &str, text: &str) -> u64 {
    devices
        .sim(connection)
        .inject(format!("{text}\r\n").as_bytes())
        .await;
    let read = client
        .ok(
            "read_until_prompt",
            json!({"connection": connection, "prompt": text, "timeout": 10}),
        )
        .await;
    assert_eq!(read["matched"], true, "{read}");
    read["end_cursor"].as_u64().expect("end_cursor")
}

#[tokio::test]
async fn sighup_adds_removes_and_reopens_ports_and_keeps_the_unchanged_one() {
    let devices = Devices::start(&["keep", "drop", "add", "change"]).await;
    devices.write_config(&[("keep", 9600), ("drop", 9600), ("change", 9600)]);
    let notify = NotifySocket::bind(devices.dir.path());
    let mut daemon = Daemon::spawn(Some(&devices.config_path()), &notify, &[]);
    notify.expect("READY=1").await;
    let client = daemon.client().await;
    assert_eq!(client.port_names().await, ["change", "drop", "keep"]);

    let mut kept_cursor = 0;
    for name in ["keep", "drop", "change"] {
        client.ok("connect", json!({"port": name})).await;
        let cursor = print_and_read(&client, &devices, name, &format!("{name} says hello")).await;
        if name == "keep" {
            kept_cursor = cursor;
        }
    }
    let (kept_before, kept_head) = whole_log(&client, "keep").await;
    assert!(kept_before.contains("keep says hello"), "{kept_before:?}");

    devices.write_config(&[("keep", 9600), ("add", 9600), ("change", 19200)]);
    reload(&daemon, &notify).await;
    daemon
        .stderr
        .wait_for("added add; removed drop; changed (reopened) change")
        .await;

    // Added and removed.
    assert_eq!(client.port_names().await, ["add", "change", "keep"]);
    assert_eq!(port(&client, "add").await["state"], "open");
    client.ok("connect", json!({"port": "add"})).await;
    print_and_read(&client, &devices, "add", "add is new").await;

    // Changed: reopened with the new settings, and a fresh log.
    let changed = port(&client, "change").await;
    assert_eq!(changed["settings"]["baud"], 19200, "{changed}");
    assert_eq!(changed["head"], 0, "{changed}");

    // Unchanged: the same log (same text, same head) …
    let kept = port(&client, "keep").await;
    assert_eq!(kept["state"], "open", "{kept}");
    assert_eq!(
        kept["connected"], true,
        "the session is still connected: {kept}"
    );
    assert_eq!(whole_log(&client, "keep").await, (kept_before, kept_head));
    // … and the session's connection to it still works both ways, its
    // cursor where it was.
    client
        .ok(
            "send_text",
            json!({"connection": "keep", "text": "still there?"}),
        )
        .await;
    assert!(
        devices
            .sim("keep")
            .wait_received(b"still there?\r", WITHIN)
            .await
    );
    devices.sim("keep").inject(b"yes, still here\r\n").await;
    let read = client
        .ok(
            "read_until_prompt",
            json!({"connection": "keep", "prompt": "still here", "timeout": 10}),
        )
        .await;
    assert_eq!(read["start_cursor"], kept_cursor, "{read}");
    assert!(
        !read["output"].as_str().unwrap_or("").contains("hello"),
        "{read}"
    );

    // The removed port is closed: what it said stays readable through the
    // old connection, writing to it fails.
    let (dropped, _) = whole_log(&client, "drop").await;
    assert!(dropped.contains("drop says hello"), "{dropped:?}");
    let refused = client
        .err(
            "send_text",
            json!({"connection": "drop", "text": "anyone?"}),
        )
        .await;
    assert!(refused.starts_with("port_unavailable:"), "{refused}");
}

#[tokio::test]
async fn a_broken_config_on_sighup_changes_nothing() {
    let devices = Devices::start(&["keep", "other"]).await;
    devices.write_config(&[("keep", 9600), ("other", 9600)]);
    let notify = NotifySocket::bind(devices.dir.path());
    let mut daemon = Daemon::spawn(Some(&devices.config_path()), &notify, &[]);
    notify.expect("READY=1").await;
    let client = daemon.client().await;
    client.ok("connect", json!({"port": "keep"})).await;
    print_and_read(&client, &devices, "keep", "before the bad config").await;
    let listed_before = client.ok("list_ports", json!({})).await["ports"].clone();

    // A syntax error on line 3: an unterminated table header.
    write_atomically(
        &devices.config_path(),
        "# broken\n[ports.keep]\n[ports.other\ndevice = \"/dev/null\"\n",
    );
    reload(&daemon, &notify).await;
    let logged = daemon.stderr.wait_for("reload rejected").await;
    let place = format!("{}:3:", devices.config_path().display());
    assert!(logged.contains(&place), "file:line:col in {logged}");

    // Nothing changed, and the daemon keeps serving.
    assert_eq!(
        client.ok("list_ports", json!({})).await["ports"],
        listed_before
    );
    print_and_read(&client, &devices, "keep", "after the bad config").await;

    // A config with a semantic error (a preset that does not exist) is
    // rejected the same way.
    write_atomically(
        &devices.config_path(),
        &format!(
            "[ports.keep]\ndevice = {:?}\npreset = \"no-such-preset\"\n",
            devices.link("keep").display()
        ),
    );
    reload(&daemon, &notify).await;
    let logged = daemon.stderr.wait_for("reload rejected").await;
    assert!(logged.contains("no-such-preset"), "{logged}");
    assert_eq!(client.port_names().await, ["keep", "other"]);

    // Fixed again: now it applies.
    devices.write_config(&[("keep", 9600)]);
    reload(&daemon, &notify).await;
    assert_eq!(client.port_names().await, ["keep"]);
}

#[tokio::test]
async fn sighup_without_a_config_file_is_ignored() {
    let dir = tempfile::tempdir().expect("temp dir");
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(None, &notify, &[]);
    notify.expect("READY=1").await;
    let client = daemon.client().await;
    daemon.signal(libc::SIGHUP);
    daemon.stderr.wait_for("no file to reload").await;
    // Still alive and serving.
    client.ok("list_presets", json!({})).await;
}

/// Writes a token file (mode 600) and returns its `[[tokens]]` entry.
fn token(dir: &Path, name: &str, secret: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let file = dir.join(format!("{name}.token"));
    std::fs::write(&file, format!("{secret}\n")).expect("write a token file");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    format!(
        "[[tokens]]\nname = \"{name}\"\nsecret_file = \"{name}.token\"\nports = [\"*\"]\naccess = \"read\"\n"
    )
}

#[tokio::test]
async fn sighup_over_http_brings_new_tokens_and_refuses_an_auth_change() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("serialgate.toml");
    let old_secret = "old-secret-0123456789abcdef";
    let new_secret = "new-secret-0123456789abcdef";
    write_atomically(&config, &token(dir.path(), "agent", old_secret));
    let notify = NotifySocket::bind(dir.path());
    let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
    notify.expect("READY=1").await;
    let url = daemon.http_url().await;
    GateClient::connect_http(&url, Some(old_secret))
        .await
        .expect("the old token works");

    // Rotate the secret: the token file changes, and a second token comes.
    let mut text = token(dir.path(), "agent", new_secret);
    text.push_str(&token(dir.path(), "auditor", "auditor-secret-0123456789"));
    write_atomically(&config, &text);
    reload(&daemon, &notify).await;
    assert!(
        GateClient::connect_http(&url, Some(old_secret))
            .await
            .is_err(),
        "the old secret is refused after the reload"
    );
    for secret in [new_secret, "auditor-secret-0123456789"] {
        let client = GateClient::connect_http(&url, Some(secret))
            .await
            .expect("the new tokens work");
        client
            .call("list_presets", json!({}))
            .await
            .expect("MCP transport")
            .ok();
    }

    // Turning authentication off needs a restart: the reload is refused.
    write_atomically(&config, "[server]\nauth = \"none\"\n");
    reload(&daemon, &notify).await;
    let logged = daemon.stderr.wait_for("reload rejected").await;
    assert!(logged.contains("needs a restart"), "{logged}");
    assert!(
        GateClient::connect_http(&url, None).await.is_err(),
        "still no access without a token"
    );
    GateClient::connect_http(&url, Some(new_secret))
        .await
        .expect("the running tokens still work");
}

/// The reopened port must be open once the reload is over (`READY=1`), and
/// a port renamed in the config (same device, new name) likewise.
///
/// Ignored until `Gateway::reload` closes the old ports before it starts
/// the new ones: today the new port's first open finds the device still
/// held (TIOCEXCL, "Unable to acquire exclusive lock") and only opens at
/// its retry, 100 ms later.
#[tokio::test]
async fn reopened_and_renamed_ports_are_open_when_the_reload_is_over() {
    let devices = Devices::start(&["change", "rename"]).await;
    devices.write_config(&[("change", 9600), ("rename", 9600)]);
    let notify = NotifySocket::bind(devices.dir.path());
    let mut daemon = Daemon::spawn(Some(&devices.config_path()), &notify, &[]);
    notify.expect("READY=1").await;
    let client = daemon.client().await;
    client.ok("connect", json!({"port": "change"})).await;

    // `change` gets a new baud; `rename`'s device moves to port `renamed`.
    let text = format!(
        "[ports.change]\ndevice = {:?}\npreset = \"generic\"\nbaud = 19200\n\n\
         [ports.renamed]\ndevice = {:?}\npreset = \"generic\"\n",
        devices.link("change").display(),
        devices.link("rename").display()
    );
    write_atomically(&devices.config_path(), &text);
    reload(&daemon, &notify).await;
    assert_eq!(port(&client, "change").await["state"], "open");
    assert_eq!(port(&client, "renamed").await["state"], "open");

    // The session's old connection is to the closed port; connecting again
    // reaches the reopened one.
    let stale = client
        .err("send_text", json!({"connection": "change", "text": "x"}))
        .await;
    assert!(stale.starts_with("port_unavailable:"), "{stale}");
    client.ok("connect", json!({"port": "change"})).await;
    client
        .ok(
            "send_text",
            json!({"connection": "change", "text": "reconnected"}),
        )
        .await;
    assert!(
        devices
            .sim("change")
            .wait_received(b"reconnected\r", WITHIN)
            .await
    );
}

/// An ad-hoc port lasts only while the config allows it: a reload that
/// turns ad-hoc connections off closes it (sessions cannot reattach by
/// path), and a reload that adds a configured port of the same name
/// replaces it instead of being shadowed by it.
#[tokio::test]
async fn a_reload_closes_ad_hoc_ports_it_no_longer_allows() {
    let devices = Devices::start(&["adhoc1", "adhoc2"]).await;
    let glob = format!("{}/adhoc*", devices.dir.path().display());
    let allowing = format!("[server]\nallow_adhoc = true\nadhoc_devices = [{glob:?}]\n");
    write_atomically(&devices.config_path(), &allowing);
    let notify = NotifySocket::bind(devices.dir.path());
    let mut daemon = Daemon::spawn(Some(&devices.config_path()), &notify, &[]);
    notify.expect("READY=1").await;
    let client = daemon.client().await;
    let path = devices.link("adhoc1");
    let opened = client
        .ok("connect", json!({"port": path, "name": "bench-1"}))
        .await;
    assert_eq!(opened["state"], "open", "{opened}");
    client
        .ok(
            "connect",
            json!({"port": devices.link("adhoc2"), "name": "bench-2"}),
        )
        .await;

    // bench-2 becomes a configured port; ad hoc is still allowed.
    write_atomically(
        &devices.config_path(),
        &format!(
            "{allowing}\n[ports.bench-2]\ndevice = {:?}\npreset = \"generic\"\n",
            devices.link("adhoc2").display()
        ),
    );
    reload(&daemon, &notify).await;
    let bench2 = port(&client, "bench-2").await;
    assert_eq!(
        bench2["adhoc"], false,
        "the configured port replaced it: {bench2}"
    );

    // Ad hoc turned off: bench-1 closes, and nobody opens the path again.
    write_atomically(&devices.config_path(), "[server]\nallow_adhoc = false\n");
    reload(&daemon, &notify).await;
    let listed = client.ok("list_ports", json!({})).await;
    assert!(
        !listed.to_string().contains("bench-1"),
        "the ad-hoc port is gone: {listed}"
    );
    let again = client.err("connect", json!({"port": path})).await;
    assert!(again.starts_with("forbidden: "), "{again}");
}
