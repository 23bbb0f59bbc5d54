//! A fleet on NATS, end to end: a hub `nats-server` and one leaf-node
//! server per site (each leaf dials the hub with its site's user, whose
//! permissions allow only that site's subjects), two site gateways each
//! with a simulated Cisco switch, and a serving gateway over HTTP that
//! dials the hub with an nkey (and has a console socket for people,
//! which `fleet_console.rs` uses). Agents use the serving gateway's MCP
//! endpoint with their tokens; the fault is a leaf killed (the site's
//! uplink cut) and started again.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle};
use serialgate_testkit::client::GateClient;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use serialgate_testkit::nats::{self, NatsServer};
use serialgate_testkit::{rig, skip, wait};
use tempfile::TempDir;

/// How long any one expected thing may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(20);
/// How soon a part started again must be back in use: NATS's longest
/// pause between two reconnects (4 s), a leaf's between two dials (1 s),
/// the next announcement (1 s), and a margin for a loaded machine.
pub(crate) const RECOVERY: Duration = Duration::from_secs(12);
pub(crate) const OPS: &str = "ops-secret-0123456789";
pub(crate) const DC1_ONLY: &str = "dc1only-secret-0123456789";
pub(crate) const ROOT: &str = "root-secret-0123456789";
/// A read-only token of every site's ports.
pub(crate) const READER: &str = "reader-secret-0123456789";
/// The sites that have a gateway; `dc3` has only credentials (the rogue).
pub(crate) const SITES: [&str; 2] = ["dc1", "dc2"];

/// A site user's password on the hub (what its leaf dials with).
pub(crate) fn site_password(site: &str) -> String {
    format!("{site}-leaf-secret")
}

/// The hub's config: the leaf-node listener and who may do what. A site
/// publishes its own announcements and answers (`allow_responses`) the
/// calls of its own subject; the serving gateway sends calls and hears
/// announcements.
fn hub_config(leaf_port: u16, serving_nkeys: &[(&str, String)]) -> String {
    // A serving gateway is a site too (`hub`): it announces its own
    // ports and answers for them.
    // Each serving gateway also reads every site's alert stream in the
    // site's JetStream domain: the stream's info, its durable consumer,
    // the acks.
    let mut users = String::new();
    for (site, nkey) in serving_nkeys {
        users.push_str(&format!(
            "    {{ nkey: \"{nkey}\", permissions: {{ publish: [\"serialgate.site.*.>\", \"serialgate.announce.{site}\", \"serialgate.from.{site}.>\", \"$JS.*.API.STREAM.INFO.*\", \"$JS.*.API.CONSUMER.>\", \"$JS.ACK.>\"], subscribe: [\"serialgate.announce.*\", \"serialgate.from.*.>\", \"serialgate.site.{site}.>\", \"_INBOX.>\"], allow_responses: true }} }}\n"
        ));
    }
    // A site's leaf takes requests to its own JetStream domain and the
    // acks of its own alert stream, no other.
    for site in ["dc1", "dc2", "dc3"] {
        users.push_str(&format!(
            "    {{ user: \"{site}\", password: \"{}\", permissions: {{ publish: [\"serialgate.announce.{site}\", \"serialgate.from.{site}.>\", \"_INBOX.>\"], subscribe: [\"serialgate.site.{site}.>\", \"$JS.{site}.API.>\", \"$JS.ACK.serialgate-alerts-{site}.>\"], allow_responses: true }} }}\n",
            site_password(site)
        ));
    }
    format!(
        "leafnodes {{ listen: \"127.0.0.1:{leaf_port}\" }}\nauthorization {{\n  users = [\n{users}  ]\n}}\n"
    )
}

/// Starts `site`'s leaf server: it dials the hub's leaf-node port with
/// the site's user, and runs JetStream in the site's own domain (its
/// name), on file in `dir`, so that the site's alerts are kept while its
/// uplink is down and are read from the hub as `$JS.<site>.API`.
pub(crate) async fn start_leaf(
    binary: &Path,
    dir: &Path,
    site: &str,
    leaf_port: u16,
) -> NatsServer {
    NatsServer::start(
        binary,
        dir,
        &format!("leaf-{site}"),
        &format!(
            "jetstream {{ domain: \"{site}\", store_dir: {:?} }}\n\
             leafnodes {{ remotes = [ {{ url: \"nats-leaf://{site}:{}@127.0.0.1:{leaf_port}\" }} ] }}\n",
            dir.join(format!("js-{site}")),
            site_password(site)
        ),
    )
    .await
}

/// What a test changes of the fleet [`Fleet::start`] builds.
#[derive(Default)]
pub(crate) struct Setup {
    /// TOML lines added to each site's switch port (e.g. its `policy`).
    pub(crate) site_port: String,
    /// Each site gets a console socket, `console-SITE.sock`, where a
    /// person attaches (and decides approvals).
    pub(crate) site_console: bool,
    /// The serving gateways' tokens besides the usual ones, and TOML
    /// lines added to them (e.g. `policy = "locked"`).
    pub(crate) tokens: Vec<(&'static str, &'static str, &'static str)>,
    /// A second serving gateway, of site `hub2`, with the same tokens.
    pub(crate) second_serving: bool,
    /// TOML added to the serving gateway's config (e.g. a policy).
    pub(crate) serving_toml: &'static str,
}

/// The whole fleet; what NATS refused is printed when it ends, for a
/// failing test's reader.
pub(crate) struct Fleet {
    pub(crate) dir: TempDir,
    pub(crate) hub: NatsServer,
    pub(crate) hub_url: String,
    /// dc1's and dc2's leaf servers.
    pub(crate) leaves: Vec<NatsServer>,
    pub(crate) sims: Vec<SimHandle>,
    pub(crate) sites: Vec<Daemon>,
    pub(crate) serving: Daemon,
    pub(crate) url: String,
    /// dc1's, dc2's and the serving gateway's configs and notify sockets,
    /// to start each again as it was.
    pub(crate) configs: Vec<std::path::PathBuf>,
    pub(crate) notify: Vec<NotifySocket>,
    /// The hub's leaf-node port, for another leaf.
    pub(crate) leaf_port: u16,
    /// The second serving gateway (`hub2`) and its MCP URL, when asked.
    pub(crate) second: Option<(Daemon, String)>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for (name, server) in
            std::iter::once(("hub", &self.hub)).chain(self.leaves.iter().map(|l| ("leaf", l)))
        {
            for line in server
                .logged()
                .lines()
                .filter(|l| l.contains("Violation") || l.contains("[ERR]"))
            {
                eprintln!("[nats {name}] {line}");
            }
        }
    }
}

impl Fleet {
    /// Starts everything, or says why it cannot (no nats-server).
    pub(crate) async fn start() -> Option<Fleet> {
        Fleet::start_with(Setup::default()).await
    }

    /// [`Fleet::start`] changed as `setup` says.
    pub(crate) async fn start_with(setup: Setup) -> Option<Fleet> {
        let Some(binary) = nats::binary() else {
            skip::skipped("nats-server is not installed (Debian: apt install nats-server)");
            return None;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let mut serving_keys = Vec::new();
        let servers: &[&str] = if setup.second_serving {
            &["hub", "hub2"]
        } else {
            &["hub"]
        };
        for (i, site) in servers.iter().enumerate() {
            let key = nkeys::KeyPair::new_user();
            let file = if i == 0 {
                "serving.nk".to_owned()
            } else {
                format!("serving-{site}.nk")
            };
            write_private(&dir.path().join(file), &key.seed().expect("seed"));
            serving_keys.push((*site, key.public_key()));
        }
        let leaf_port = nats::free_port();
        let hub = NatsServer::start(
            &binary,
            dir.path(),
            "hub",
            &hub_config(leaf_port, &serving_keys),
        )
        .await;
        let mut leaves = Vec::new();
        let mut sims = Vec::new();
        let mut sites = Vec::new();
        let mut notify = Vec::new();
        let mut configs = Vec::new();
        for site in SITES {
            let leaf = start_leaf(&binary, dir.path(), site, leaf_port).await;
            let link = dir.path().join(format!("{site}-core-sw1"));
            sims.push(
                sim::spawn(Profile::CiscoIos, Some(link.clone()))
                    .await
                    .expect("simulated switch"),
            );
            let config = dir.path().join(format!("{site}.toml"));
            let console = if setup.site_console {
                format!("console_socket = \"console-{site}.sock\"\n")
            } else {
                String::new()
            };
            std::fs::write(
                &config,
                format!(
                    "[server]\nauth = \"none\"\nlog_dir = \"logs-{site}\"\n{console}\n\
                     [ports.core-sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\n{}\n\
                     [fleet]\nurls = [\"{}\"]\nsite = \"{site}\"\n",
                    link.display(),
                    setup.site_port,
                    leaf.url()
                ),
            )
            .expect("write a site's config");
            std::fs::create_dir(dir.path().join(site)).expect("a site's dir");
            let n = NotifySocket::bind(&dir.path().join(site));
            let d = start_gateway(&config, &n).await.0;
            configs.push(config);
            notify.push(n);
            sites.push(d);
            leaves.push(leaf);
        }
        let mut tokens: Vec<daemon::TestToken<'_>> = vec![
            ("ops", OPS, r#"["*", "*/*"]"#, "write"),
            ("dc1only", DC1_ONLY, r#"["dc1/*"]"#, "write"),
            ("root", ROOT, r#"["*/*"]"#, "admin"),
            ("reader", READER, r#"["*/*"]"#, "read"),
        ];
        tokens.extend(
            setup
                .tokens
                .iter()
                .map(|(name, secret, _)| (*name, *secret, r#"["*/*"]"#, "write")),
        );
        let tokens = setup
            .tokens
            .iter()
            .fold(daemon::tokens_toml(dir.path(), &tokens), |toml, t| {
                daemon::with_token_keys(&toml, t.0, t.2)
            });
        let config = dir.path().join("serving.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\nconsole_socket = \"serving-console.sock\"\n\n[ports.hub-sw]\ndevice = {:?}\npreset = \"cisco-ios\"\n\n{}\n{tokens}\n\
                 [fleet]\nurls = [\"{}\"]\nsite = \"hub\"\ncredentials = \"serving.nk\"\nserve = true\n",
                dir.path().join("absent-device").display(),
                setup.serving_toml,
                hub.url()
            ),
        )
        .expect("write the serving config");
        std::fs::create_dir(dir.path().join("serving")).expect("the serving dir");
        let n = NotifySocket::bind(&dir.path().join("serving"));
        let (serving, url) = start_gateway(&config, &n).await;
        configs.push(config);
        notify.push(n);
        let second = if setup.second_serving {
            let config = dir.path().join("serving-hub2.toml");
            std::fs::write(
                &config,
                format!(
                    "{tokens}\n[fleet]\nurls = [\"{}\"]\nsite = \"hub2\"\ncredentials = \"serving-hub2.nk\"\nserve = true\n",
                    hub.url()
                ),
            )
            .expect("write the second serving config");
            std::fs::create_dir(dir.path().join("serving-hub2")).expect("its dir");
            let n = NotifySocket::bind(&dir.path().join("serving-hub2"));
            let started = start_gateway(&config, &n).await;
            configs.push(config);
            notify.push(n);
            Some(started)
        } else {
            None
        };
        let fleet = Fleet {
            hub_url: hub.url(),
            hub,
            dir,
            leaves,
            sims,
            sites,
            serving,
            url,
            configs,
            notify,
            leaf_port,
            second,
        };
        let ops = fleet.agent(OPS).await;
        for site in SITES {
            fleet
                .port_state(&ops, &format!("{site}/core-sw1"), |p| p["state"] == "open")
                .await;
        }
        Some(fleet)
    }

    /// Kills site `i`'s gateway (SIGKILL: no goodbye to anyone).
    pub(crate) async fn kill_site(&mut self, i: usize) {
        kill(&mut self.sites[i]).await;
    }

    /// Starts site `i`'s gateway again with its config; waits until it is
    /// ready.
    pub(crate) async fn start_site(&mut self, i: usize) {
        self.sites[i] = start_gateway(&self.configs[i], &self.notify[i]).await.0;
    }

    /// Kills the serving gateway and starts it again with its config, on
    /// a new HTTP port; waits until it is ready.
    pub(crate) async fn restart_serving(&mut self) {
        kill(&mut self.serving).await;
        let i = SITES.len();
        let (serving, url) = start_gateway(&self.configs[i], &self.notify[i]).await;
        self.serving = serving;
        self.url = url;
    }

    /// Sends SIGHUP to gateway `i` (a site's by its index, then the
    /// serving gateway) and waits until its reload is over.
    pub(crate) async fn reload(&self, i: usize) {
        let daemon = self.sites.get(i).unwrap_or(&self.serving);
        daemon.signal(libc::SIGHUP);
        self.notify[i].expect("RELOADING=1").await;
        self.notify[i].expect("READY=1").await;
    }

    pub(crate) async fn agent(&self, secret: &str) -> GateClient {
        GateClient::connect_http(&self.url, Some(secret))
            .await
            .expect("HTTP MCP session")
    }

    /// Waits until `list_ports` shows `name` as `done` says; returns it.
    pub(crate) async fn port_state(
        &self,
        agent: &GateClient,
        name: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        self.port_state_within(agent, name, DEADLINE, done).await
    }

    /// [`Fleet::port_state`] within `within`.
    pub(crate) async fn port_state_within(
        &self,
        agent: &GateClient,
        name: &str,
        within: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        wait::eventually(&format!("{name} as awaited"), within, || async {
            let list = agent.call("list_ports", json!({})).await.expect("MCP").ok();
            let port = list["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"] == name)
                .cloned();
            match port {
                Some(p) if done(&p) => Ok(p),
                other => Err(format!("{other:?}")),
            }
        })
        .await
    }
}

/// Starts a gateway with `config` over HTTP on a free port; waits until
/// it says it is ready. The daemon and its MCP URL.
pub(crate) async fn start_gateway(config: &Path, notify: &NotifySocket) -> (Daemon, String) {
    let mut d = Daemon::spawn(Some(config), notify, &["--http", "127.0.0.1:0"]);
    let url = d.http_url().await;
    notify.expect("READY=1").await;
    (d, url)
}

/// SIGKILLs `daemon` and reaps it.
pub(crate) async fn kill(daemon: &mut Daemon) {
    daemon.child.start_kill().expect("kill the gateway");
    daemon.exit().await;
}

pub(crate) fn write_private(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("write a private file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
}

pub(crate) async fn ok(agent: &GateClient, tool: &str, args: Value) -> Value {
    agent.call(tool, args).await.expect("MCP transport").ok()
}

pub(crate) async fn err(agent: &GateClient, tool: &str, args: Value) -> String {
    agent.call(tool, args).await.expect("MCP transport").err()
}

#[tokio::test]
async fn an_agent_lists_both_sites_and_runs_commands_and_config_on_a_remote_switch() {
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let ops = fleet.agent(OPS).await;
    let list = ok(&ops, "list_ports", json!({})).await;
    let names: Vec<&str> = list["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["hub-sw", "dc1/core-sw1", "dc2/core-sw1"],
        "{list:#}"
    );
    let remote = &list["ports"][1];
    assert_eq!(remote["preset"], "cisco-ios", "{remote}");
    // What the site does not announce is absent, not a default.
    for unknown in ["settings", "line_ending", "oldest", "head"] {
        assert!(remote[unknown].is_null(), "{unknown}: {remote}");
    }
    assert_eq!(list["ports"][0]["settings"]["baud"], 9600, "{list:#}");

    let connected = ok(&ops, "connect", json!({"port": "dc2/core-sw1"})).await;
    assert_eq!(connected["connection"], "dc2/core-sw1", "{connected}");
    // The switch at dc2 answers through the fleet, as it would locally.
    rig::enable(&ops).await;
    let version = ok(
        &ops,
        "send_command",
        json!({"connection": "dc2/core-sw1", "command": "show version"}),
    )
    .await;
    let output = version["output"].as_str().expect("output");
    // The switch's own text, from its first line, with no echo of the
    // command before it and no prompt after it.
    assert!(
        output.starts_with("Cisco IOS Software, C2960X Software")
            && output.contains("\nSW1 uptime is ")
            && !output.contains("show version")
            && !output.trim_end().ends_with("SW1#"),
        "{version:#}"
    );
    let changed = ok(
        &ops,
        "send_config",
        json!({"connection": "dc2/core-sw1", "lines": ["ntp server 10.9.9.9"]}),
    )
    .await;
    assert_eq!(changed["verdicts"][0]["ok"], true, "{changed:#}");
    assert!(
        fleet.sims[1]
            .configuration()
            .iter()
            .any(|l| l == "ntp server 10.9.9.9"),
        "dc2's switch: {:?}",
        fleet.sims[1].configuration()
    );
    assert!(
        !fleet.sims[0]
            .configuration()
            .iter()
            .any(|l| l.contains("10.9.9.9")),
        "dc1's switch was changed too"
    );
    // The site ran it, naming the token and the gateway it came through.
    let line = fleet.sites[1]
        .stderr
        .wait_for("calls send_config through")
        .await;
    assert!(
        line.contains("ops calls send_config through hub:"),
        "{line}"
    );
    let status = ok(&ops, "status", json!({})).await;
    assert_eq!(status["connection"], "dc2/core-sw1", "{status:#}");
    assert_eq!(status["state"], "open", "{status:#}");
}

#[tokio::test]
async fn a_token_of_one_site_is_refused_on_another_as_on_a_local_port() {
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    let dc1 = fleet.agent(DC1_ONLY).await;
    let list = ok(&dc1, "list_ports", json!({})).await;
    let names: Vec<&str> = list["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["dc1/core-sw1"], "{list:#}");
    let remote = err(&dc1, "connect", json!({"port": "dc2/core-sw1"})).await;
    let local = err(&dc1, "connect", json!({"port": "hub-sw"})).await;
    assert!(remote.starts_with("forbidden:"), "{remote}");
    assert_eq!(
        remote.replace("dc2/core-sw1", "PORT"),
        local.replace("hub-sw", "PORT")
    );
    // Naming the connection directly is refused alike, before the site
    // hears of it.
    let direct = err(
        &dc1,
        "send_command",
        json!({"connection": "dc2/core-sw1", "command": "show version"}),
    )
    .await;
    assert!(direct.starts_with("forbidden:"), "{direct}");
    assert!(
        fleet.sims[1].received().is_empty(),
        "dc2's switch got {:?}",
        fleet.sims[1].received()
    );
    // Its own site works.
    ok(&dc1, "connect", json!({"port": "dc1/core-sw1"})).await;
    rig::enable(&dc1).await;
}

#[tokio::test]
async fn a_site_cut_off_fails_at_once_and_comes_back_with_what_it_captured() {
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let ops = fleet.agent(OPS).await;
    ok(&ops, "connect", json!({"port": "dc1/core-sw1"})).await;
    let before = ok(&ops, "read_output", json!({"connection": "dc1/core-sw1"})).await;
    let cursor = before["next_cursor"].as_u64().expect("next_cursor");

    fleet.leaves[0].kill();
    let shown = fleet
        .port_state(&ops, "dc1/core-sw1", |p| {
            p["down_reason"]
                .as_str()
                .is_some_and(|r| r.contains("unreachable since"))
        })
        .await;
    assert_eq!(shown["state"], "down", "{shown}");
    // The other site is untouched.
    fleet
        .port_state(&ops, "dc2/core-sw1", |p| p["state"] == "open")
        .await;
    // The switch goes on talking at its site meanwhile.
    fleet.sims[0]
        .inject(b"\r\n%LINK-3-UPDOWN: Interface Gi0/7, changed state to down\r\n")
        .await;
    let started = Instant::now();
    let refused = err(
        &ops,
        "send_command",
        json!({"connection": "dc1/core-sw1", "command": "show clock"}),
    )
    .await;
    // At once: well before the 30 s a forwarded request may wait, with
    // room for a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        refused.starts_with("port_unavailable:")
            && refused.contains("site dc1 is unreachable since"),
        "{refused}"
    );

    fleet.leaves[0].restart().await;
    fleet
        .port_state(&ops, "dc1/core-sw1", |p| p["state"] == "open")
        .await;
    let read = wait::eventually("the captured line", DEADLINE, || async {
        let r = ops
            .call(
                "read_output",
                json!({"connection": "dc1/core-sw1", "cursor": cursor}),
            )
            .await
            .expect("MCP");
        match r {
            serialgate_testkit::client::Outcome::Ok(v)
                if v["output"]
                    .as_str()
                    .is_some_and(|o| o.contains("Gi0/7, changed state to down")) =>
            {
                Ok(v)
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(read["truncated"], false, "{read}");
    let _ = &mut fleet.serving;
}

/// Connects to the hub as `user` and says what the server answered to
/// the subscription and the publish (a permission error, or nothing).
pub(crate) async fn try_as_site(
    hub: &str,
    user: &str,
    subscribe: &str,
    publish: &str,
) -> Vec<String> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client =
        async_nats::ConnectOptions::with_user_and_password(user.into(), site_password(user))
            .event_callback(move |event| {
                let tx = tx.clone();
                async move {
                    if let async_nats::Event::ServerError(e) = event {
                        let _ = tx.send(e.to_string());
                    }
                }
            })
            .connect(hub)
            .await
            .expect("the site's own credentials connect");
    let _sub = client
        .subscribe(subscribe.to_owned())
        .await
        .expect("subscribe sent");
    client
        .publish(publish.to_owned(), "{}".into())
        .await
        .expect("publish sent");
    client.flush().await.expect("flush");
    let mut errors = Vec::new();
    while errors.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
            Ok(Some(e)) => errors.push(e),
            _ => break,
        }
    }
    errors
}

#[tokio::test]
async fn a_site_key_cannot_take_another_sites_calls_nor_announce_for_it() {
    let Some(fleet) = Fleet::start().await else {
        return;
    };
    let errors = try_as_site(
        &fleet.hub_url,
        "dc1",
        "serialgate.site.dc2.call",
        "serialgate.announce.dc2",
    )
    .await;
    let all = errors.join("\n").to_lowercase();
    assert!(
        all.contains("permissions violation for subscription to \"serialgate.site.dc2.call\""),
        "{errors:?}"
    );
    assert!(
        all.contains("permissions violation for publish to \"serialgate.announce.dc2\""),
        "{errors:?}"
    );
    // Its own subjects are its to use.
    let own = try_as_site(
        &fleet.hub_url,
        "dc1",
        "serialgate.site.dc1.call",
        "serialgate.announce.dc1",
    )
    .await;
    assert!(own.is_empty(), "{own:?}");
}

#[tokio::test]
async fn a_rogue_sites_announcement_is_shown_bounded_and_escaped_or_dropped() {
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let rogue =
        async_nats::ConnectOptions::with_user_and_password("dc3".into(), site_password("dc3"))
            .connect(fleet.hub_url.as_str())
            .await
            .expect("dc3's credentials connect");
    let long = "A".repeat(5000);
    let announcement = json!({"v": 2, "ports": [
        {"name": "evil", "state": "open", "preset": "cisco-ios\u{1b}]0;owned\u{7}\u{1b}[2J", "writer": format!("x\r\n{long}"), "people": 1},
        {"name": "bad\u{1b}[31mname", "state": "open", "preset": "p", "writer": null, "people": 0},
    ]});
    rogue
        .publish("serialgate.announce.dc3", announcement.to_string().into())
        .await
        .expect("publish");
    rogue.flush().await.expect("flush");
    let ops = fleet.agent(OPS).await;
    let evil = fleet.port_state(&ops, "dc3/evil", |_| true).await;
    assert_eq!(evil["preset"], "cisco-ios", "{evil}");
    let writer = evil["writer"]["who"].as_str().expect("writer");
    assert!(
        writer.len() <= 128 && !writer.chars().any(char::is_control),
        "{writer:?}"
    );
    let line = fleet
        .serving
        .stderr
        .wait_for("site dc3 announced 1 port(s) this gateway does not show")
        .await;
    assert!(!line.contains('\u{1b}'), "{line:?}");
    // Too large a message is dropped whole, and said so.
    let huge = json!({"v": 2, "ports": [{"name": "x", "state": "open", "preset": "A".repeat(300_000), "writer": null, "people": 0}]});
    rogue
        .publish("serialgate.announce.dc3", huge.to_string().into())
        .await
        .expect("publish");
    rogue.flush().await.expect("flush");
    fleet
        .serving
        .stderr
        .wait_for("dropped an announcement of site dc3")
        .await;
    let _ = &fleet.dir;
}

/// The serving gateway's HTTP base (`http://HOST:PORT`).
pub(crate) fn base(fleet: &Fleet) -> String {
    fleet.url.trim_end_matches("/mcp").to_owned()
}

/// The WebSocket URL of `path` at the serving gateway.
pub(crate) fn ws(fleet: &Fleet, path: &str) -> String {
    format!("{}{path}", base(fleet).replacen("http://", "ws://", 1))
}

/// `show clock` on `connection` through `agent`'s session: the switch's
/// clock line (`*HH:MM:SS.mmm UTC ...`), which only the switch prints.
pub(crate) async fn clock(agent: &GateClient, connection: &str) -> String {
    let answer = ok(
        agent,
        "send_command",
        json!({"connection": connection, "command": "show clock"}),
    )
    .await;
    let output = answer["output"].as_str().expect("output").to_owned();
    let clock_line =
        regex::Regex::new(r"^\*\d{2}:\d{2}:\d{2}\.\d{3} UTC \w{3} \w{3} \d{1,2} \d{4}$").unwrap();
    assert!(
        clock_line.is_match(output.trim_end()),
        "{connection}: {answer:#}"
    );
    output
}

/// Whether `list_ports` shows a port down because its site went silent,
/// with since when.
fn unreachable_since(port: &Value) -> bool {
    port["state"] == "down"
        && port["down_reason"]
            .as_str()
            .is_some_and(|r| r.contains("unreachable since 20"))
}

#[tokio::test]
async fn the_hub_restarted_every_remote_port_comes_back_and_works_in_the_same_session() {
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let ops = fleet.agent(OPS).await;
    ok(&ops, "connect", json!({"port": "dc1/core-sw1"})).await;
    clock(&ops, "dc1/core-sw1").await;

    fleet.hub.kill();
    for site in SITES {
        fleet
            .port_state(&ops, &format!("{site}/core-sw1"), unreachable_since)
            .await;
    }
    let refused = err(
        &ops,
        "send_command",
        json!({"connection": "dc1/core-sw1", "command": "show clock"}),
    )
    .await;
    assert!(refused.starts_with("port_unavailable:"), "{refused}");

    // The same ports, nothing else touched: the leaves, the sites and
    // the serving gateway find the hub again by themselves.
    fleet.hub.restart().await;
    let started = Instant::now();
    for site in SITES {
        fleet
            .port_state_within(&ops, &format!("{site}/core-sw1"), RECOVERY, |p| {
                p["state"] == "open"
            })
            .await;
    }
    eprintln!("the fleet was back {:?} after the hub", started.elapsed());
    // The agent's session and its connection at the site outlived the
    // hub: the call works as before, and on the other site too.
    clock(&ops, "dc1/core-sw1").await;
    ok(&ops, "connect", json!({"port": "dc2/core-sw1"})).await;
    clock(&ops, "dc2/core-sw1").await;
}

#[tokio::test]
async fn a_site_gateway_restarted_shows_unreachable_meanwhile_then_works_in_the_same_session() {
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    let ops = fleet.agent(OPS).await;
    ok(&ops, "connect", json!({"port": "dc1/core-sw1"})).await;
    clock(&ops, "dc1/core-sw1").await;

    fleet.kill_site(0).await;
    let shown = fleet
        .port_state(&ops, "dc1/core-sw1", unreachable_since)
        .await;
    // Still listed, as last announced, with since when it is silent.
    assert_eq!(shown["preset"], "cisco-ios", "{shown}");
    fleet
        .port_state(&ops, "dc2/core-sw1", |p| p["state"] == "open")
        .await;

    fleet.start_site(0).await;
    fleet
        .port_state_within(&ops, "dc1/core-sw1", RECOVERY, |p| p["state"] == "open")
        .await;
    // The site's new process knows nothing of the agent's connection;
    // the serving gateway connects it there again, and the call works.
    clock(&ops, "dc1/core-sw1").await;
    let status = ok(&ops, "status", json!({})).await;
    assert_eq!(status["connection"], "dc1/core-sw1", "{status:#}");
    assert_eq!(status["state"], "open", "{status:#}");
    // What the site ran names the serving gateway as before.
    let line = fleet.sites[0]
        .stderr
        .wait_for("calls send_command through")
        .await;
    assert!(
        line.contains("ops calls send_command through hub:"),
        "{line}"
    );
}

#[tokio::test]
async fn the_serving_gateway_restarted_a_new_session_sees_and_uses_the_remote_ports() {
    let Some(mut fleet) = Fleet::start().await else {
        return;
    };
    // Before: a session that holds dc1's switch for writing.
    let before = fleet.agent(OPS).await;
    ok(&before, "connect", json!({"port": "dc1/core-sw1"})).await;
    clock(&before, "dc1/core-sw1").await;
    let held = fleet
        .port_state(&before, "dc1/core-sw1", |p| p["writer"]["who"].is_string())
        .await;
    drop(before);

    fleet.restart_serving().await;
    let ops = fleet.agent(OPS).await;
    for site in SITES {
        fleet
            .port_state_within(&ops, &format!("{site}/core-sw1"), RECOVERY, |p| {
                p["state"] == "open"
            })
            .await;
    }
    // The gateway that held the port is gone, and so is its hold: the
    // new session writes without taking anything over.
    ok(&ops, "connect", json!({"port": "dc1/core-sw1"})).await;
    clock(&ops, "dc1/core-sw1").await;
    let now = fleet
        .port_state(&ops, "dc1/core-sw1", |p| {
            p["writer"]["who"].is_string() && p["writer"] != held["writer"]
        })
        .await;
    assert!(
        now["writer"]["who"]
            .as_str()
            .is_some_and(|w| w.contains("ops@hub:")),
        "{now}"
    );
    ok(&ops, "connect", json!({"port": "dc2/core-sw1"})).await;
    clock(&ops, "dc2/core-sw1").await;
}
