//! What the Redfish and IPMI tests share: a simulated Cisco switch (the
//! server's console) on port `sw1`, powered through a BMC controller as
//! the test kit's watcher reads the BMC's power, the daemon over HTTP
//! with the admin and power tokens of `power.rs`; and the walk through
//! status, off, on and a cycle caught in ROMMON that both drivers take.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use serialgate_sim::{self as sim, Profile, SimHandle, SimOptions};
use serialgate_testkit::client::GateClient;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use serialgate_testkit::pdu::OutletWatcher;
use serialgate_testkit::wait;
use tempfile::TempDir;

use super::power::{
    ADM, DEADLINE, OPS, ROMMON, boot_banner, cycle_into_rommon, ok, outlet_state, power_after_rest,
};

/// The switch, the daemon and the watcher wiring the switch's power to
/// the BMC's.
pub(super) struct BmcSite {
    pub(super) sim: Arc<SimHandle>,
    pub(super) url: String,
    _dir: TempDir,
    _daemon: Daemon,
    _watcher: OutletWatcher,
    _notify: NotifySocket,
}

impl BmcSite {
    /// Starts the switch (powered while `probe` says the BMC's power is
    /// on) and the daemon with `controllers` (TOML; `password_file =
    /// "bmc.password"` holds `password`) and `sw1`'s `power = outlet`.
    pub(super) async fn start<P, Fut>(
        controllers: &str,
        password: &str,
        outlet: &str,
        probe: P,
    ) -> BmcSite
    where
        P: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Option<bool>> + Send,
    {
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("sw1");
        let options = SimOptions {
            boot_window: Duration::from_secs(3),
            ..SimOptions::default()
        };
        let sim = Arc::new(
            sim::spawn_with(Profile::CiscoIos, Some(link.clone()), options)
                .await
                .expect("simulated switch"),
        );
        let watcher = OutletWatcher::follow_with(sim.clone(), probe);
        let file = serialgate_testkit::nut::NutPdu::password_file(dir.path(), password);
        std::fs::rename(&file, dir.path().join("bmc.password")).expect("name the password file");
        let mut tokens = daemon::tokens_toml(dir.path(), &[("adm", ADM, r#"["*"]"#, "admin")]);
        tokens.push_str(&daemon::tokens_toml(
            dir.path(),
            &[("ops", OPS, r#"["*"]"#, "write")],
        ));
        tokens.push_str("power = true\n");
        let config = dir.path().join("serialgate.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\nconsole_socket = \"console.sock\"\nlog_dir = \"logs\"\n\n{controllers}\n\
                 [ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\npower = \"{outlet}\"\n\
                 break_sequences = {{ rommon = '\\r~^b' }}\n\n{tokens}",
                link.display(),
            ),
        )
        .expect("write config");
        let notify = NotifySocket::bind(dir.path());
        let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
        let url = daemon.http_url().await;
        notify.expect("READY=1").await;
        BmcSite {
            sim,
            url,
            _dir: dir,
            _daemon: daemon,
            _watcher: watcher,
            _notify: notify,
        }
    }

    /// An agent of `token` connected to `port`.
    pub(super) async fn agent(&self, token: &str, port: &str) -> GateClient {
        let agent = GateClient::connect_http(&self.url, Some(token))
            .await
            .expect("HTTP MCP session");
        ok(&agent, "connect", json!({"port": port})).await;
        agent
    }
}

/// Status, off (the switch goes silent), on (its boot banner on the
/// console), and a cycle that breaks into ROMMON in one call, through
/// the BMC; `answered` is what the controller's answer to off contains.
/// Returns each switching call's answer.
pub(super) async fn off_on_and_a_cycle_caught_in_rommon(
    site: &BmcSite,
    agent: &GateClient,
    answered: &str,
) {
    assert_eq!(outlet_state(agent).await, "on");
    let off = ok(agent, "power", json!({"action": "off"})).await;
    let answer = off["outlets"][0]["answer"].as_str().unwrap_or_default();
    assert!(answer.contains(answered), "{off}");
    // The BMC reports the server off once the call returns.
    assert_eq!(outlet_state(agent).await, "off");
    wait::eventually("the switch to lose its power", DEADLINE, || async {
        let before = site.sim.received().len();
        ok(agent, "send_text", json!({"text": ""})).await;
        let read = ok(agent, "read_until_prompt", json!({"timeout": 0.5})).await;
        wait::when(read, |r| {
            r["matched"] == false && site.sim.received().len() == before
        })
    })
    .await;
    let status = ok(agent, "status", json!({})).await.to_string();
    assert!(status.contains("power off: "), "{status}");
    let on = power_after_rest(agent, json!({"action": "on"}))
        .await
        .unwrap();
    assert_eq!(on["action"], "on", "{on}");
    boot_banner(agent).await;
    let caught = cycle_into_rommon(agent).await;
    let prompt = caught["boot"]["prompt_text"].as_str().unwrap_or_default();
    assert!(
        regex::Regex::new(ROMMON.trim_end_matches('$'))
            .unwrap()
            .is_match(prompt),
        "{caught}"
    );
    assert!(site.sim.wait_received(b"\r~\x02", DEADLINE).await);
    assert_eq!(outlet_state(agent).await, "on");
}
