//! Power, end to end: the simulated Cisco switch fed by outlet 4 of a PDU
//! behind NUT's real `upsd` (the test kit's `nut`), the kit's outlet
//! watcher cutting and restoring the switch's power as upsd reports the
//! outlet, and agents over HTTP calling `power`: status, off (the switch
//! goes silent), on (it boots), a cycle that catches the boot in ROMMON
//! in one call; the faults (controllers refusing, never answering, an
//! outlet the PDU lacks, a wrong password, a flood, a cycle while one
//! runs, a device that never comes back); tokens without the right; a
//! guarded port holding the cut for a person.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile, SimHandle, SimOptions};
use serialgate_testkit::client::{GateClient, Outcome};
use serialgate_testkit::console::ConsoleConn;
use serialgate_testkit::daemon::{self, Daemon, NotifySocket};
use serialgate_testkit::nut::{NutPdu, OutletWatcher, PASSWORD, UPS, USER};
use serialgate_testkit::wait;
use tempfile::TempDir;

pub(crate) const DEADLINE: Duration = Duration::from_secs(20);
pub(crate) const ADM: &str = "adm-secret-0123456789";
pub(crate) const OPS: &str = "ops-secret-0123456789";
const RW: &str = "rw-secret-0123456789";
const RO: &str = "ro-secret-0123456789";
/// The switch's ROMMON prompt.
pub(super) const ROMMON: &str = r"rommon \d+ > $";

/// A played PDU behind its real server, as the tests look at it.
pub(crate) trait PlayedPdu {
    /// The outlet's state as the PDU holds it.
    fn outlet_on(&self, outlet: u32) -> Option<bool>;
}

impl PlayedPdu for NutPdu {
    fn outlet_on(&self, outlet: u32) -> Option<bool> {
        NutPdu::outlet_on(self, outlet)
    }
}

/// A PDU behind its server (upsd unless said otherwise), the switch on
/// outlet 4 of controller pdu1 with the watcher, the daemon over HTTP
/// with four tokens (adm admin, ops write with `power`, rw write, ro
/// read), and `extra` TOML (more controllers and ports).
pub(crate) struct Site<P = NutPdu> {
    pub(crate) pdu: P,
    pub(crate) sim: Arc<SimHandle>,
    pub(crate) url: String,
    dir: TempDir,
    _daemon: Daemon,
    _watcher: OutletWatcher,
    _notify: NotifySocket,
}

impl Site {
    /// upsd's PDU as pdu1; `{PDU}` in `extra` stands for upsd's address.
    async fn start(policy: &str, extra: &str) -> Option<Site> {
        let pdu = NutPdu::start(&[1, 4]).await?;
        let address = pdu.address();
        let controller = format!(
            "[power.pdu1]\ndriver = \"nut\"\naddress = \"{address}\"\nups = \"{UPS}\"\nusername = \"{USER}\"\n\
             password_file = \"pdu.password\"\ndeadline = \"2s\"\nmin_interval = \"1s\"\n"
        );
        Some(
            Site::serve(
                pdu,
                &controller,
                policy,
                &extra.replace("{PDU}", &address),
                |dir| {
                    NutPdu::password_file(dir, PASSWORD);
                },
                |pdu, sim| OutletWatcher::follow(pdu.address(), 4, sim),
            )
            .await,
        )
    }
}

impl<P: PlayedPdu> Site<P> {
    /// The daemon with `controller` (a `[power.pdu1]` table whose secret
    /// files `secrets` writes in the site's directory) in front of `pdu`,
    /// the switch's power following outlet 4 by `watch`.
    pub(crate) async fn serve(
        pdu: P,
        controller: &str,
        policy: &str,
        extra: &str,
        secrets: impl FnOnce(&std::path::Path),
        watch: impl FnOnce(&P, Arc<SimHandle>) -> OutletWatcher,
    ) -> Site<P> {
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
        let watcher = watch(&pdu, sim.clone());
        secrets(dir.path());
        let mut tokens = daemon::tokens_toml(
            dir.path(),
            &[
                ("adm", ADM, r#"["*"]"#, "admin"),
                ("rw", RW, r#"["*"]"#, "write"),
                ("ro", RO, r#"["*"]"#, "read"),
            ],
        );
        tokens.push_str(&daemon::tokens_toml(
            dir.path(),
            &[("ops", OPS, r#"["*"]"#, "write")],
        ));
        tokens.push_str("power = true\n");
        let config = dir.path().join("serialgate.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\nconsole_socket = \"console.sock\"\nlog_dir = \"logs\"\napproval_timeout = \"3s\"\n\n\
                 {controller}\n\
                 [ports.sw1]\ndevice = {:?}\npreset = \"cisco-ios\"\npolicy = \"{policy}\"\npower = \"pdu1:4\"\n\
                 break_sequences = {{ rommon = '\\r~^b' }}\n\n{extra}\n{tokens}",
                link.display(),
            ),
        )
        .expect("write config");
        let notify = NotifySocket::bind(dir.path());
        let mut daemon = Daemon::spawn(Some(&config), &notify, &["--http", "127.0.0.1:0"]);
        let url = daemon.http_url().await;
        notify.expect("READY=1").await;
        Site {
            pdu,
            sim,
            url,
            dir,
            _daemon: daemon,
            _watcher: watcher,
            _notify: notify,
        }
    }

    /// An agent of `token` connected to `port`.
    pub(crate) async fn agent(&self, token: &str, port: &str) -> GateClient {
        let agent = GateClient::connect_http(&self.url, Some(token))
            .await
            .expect("HTTP MCP session");
        agent
            .call("connect", json!({"port": port}))
            .await
            .expect("MCP")
            .ok();
        agent
    }

    /// The audit trail's power records so far.
    fn audited_power(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("logs/audit.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| r["kind"] == "power")
            .collect()
    }
}

pub(crate) async fn ok(agent: &GateClient, tool: &str, args: Value) -> Value {
    agent.call(tool, args).await.expect("MCP").ok()
}

pub(crate) async fn err(agent: &GateClient, tool: &str, args: Value) -> String {
    agent.call(tool, args).await.expect("MCP").err()
}

/// Waits for the boot banner a switched-on switch prints, and checks it.
pub(crate) async fn boot_banner(agent: &GateClient) {
    let booted = ok(
        agent,
        "read_until_prompt",
        json!({"prompt": "Press RETURN to get started!", "timeout": 10}),
    )
    .await;
    assert_eq!(booted["matched"], true, "{booted}");
    assert!(
        booted["output"]
            .as_str()
            .unwrap()
            .contains("System Bootstrap"),
        "{booted}"
    );
}

/// `power cycle` with a break into ROMMON in one call, off for at least
/// its second; the call's result.
pub(crate) async fn cycle_into_rommon(agent: &GateClient) -> Value {
    let started = Instant::now();
    let caught = power_after_rest(
        agent,
        json!({"action": "cycle", "off_seconds": 1, "then": {"break": "rommon", "timeout": 15}}),
    )
    .await
    .unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1), "the off time");
    caught
}

/// Calls `power` with `args` until the outlet's rest is over, as an agent
/// told "retry in" does: the result, or the error that is not the rest.
pub(crate) async fn power_after_rest(agent: &GateClient, args: Value) -> Result<Value, String> {
    wait::eventually("the outlet's rest to end", DEADLINE, || {
        let args = args.clone();
        async move {
            match agent.call("power", args).await.expect("MCP") {
                Outcome::Ok(v) => Ok(Ok(v)),
                Outcome::Err(e) if e.contains("retry in") => Err(e),
                Outcome::Err(e) => Ok(Err(e)),
            }
        }
    })
    .await
}

/// The state `power status` reports for the port's outlet.
pub(crate) async fn outlet_state(agent: &GateClient) -> Value {
    ok(agent, "power", json!({"action": "status"})).await["outlets"][0]["state"].clone()
}

#[tokio::test]
async fn status_off_on_and_a_cycle_caught_in_rommon_through_a_real_upsd() {
    let Some(site) = Site::start("none", "").await else {
        return;
    };
    status_off_on_and_a_cycle_caught_in_rommon(
        &site,
        "INSTCMD outlet.4.load.off: OK",
        "INSTCMD outlet.4.load.on: OK",
    )
    .await;
}

/// The switch on outlet 4 of pdu1, through the site's server: status,
/// off (the switch goes silent), on (it boots), a cycle caught in
/// ROMMON in one call; each action the port's event and audited, with
/// the controller's answers `off_answer` and `on_answer`.
pub(crate) async fn status_off_on_and_a_cycle_caught_in_rommon<P: PlayedPdu>(
    site: &Site<P>,
    off_answer: &str,
    on_answer: &str,
) {
    let agent = site.agent(OPS, "sw1").await;
    assert_eq!(outlet_state(&agent).await, "on");
    // Off: the server switches the outlet, the switch goes silent.
    let off = ok(&agent, "power", json!({"action": "off"})).await;
    assert_eq!(off["outlets"][0]["answer"], off_answer, "{off}");
    // A flood: within the outlet's minimum interval (asked at once, so
    // that no wait of the test's own runs past it), refused with when.
    let e = err(&agent, "power", json!({"action": "on"})).await;
    assert!(e.starts_with("busy: ") && e.contains("retry in"), "{e}");
    assert_eq!(site.pdu.outlet_on(4), Some(false));
    assert_eq!(outlet_state(&agent).await, "off");
    wait::eventually("the switch to lose its power", DEADLINE, || async {
        let before = site.sim.received().len();
        ok(&agent, "send_text", json!({"text": ""})).await;
        let read = ok(&agent, "read_until_prompt", json!({"timeout": 0.5})).await;
        // A powered switch answers RETURN with its prompt; a dead one hears
        // nothing of it either.
        wait::when(read, |r| {
            r["matched"] == false && site.sim.received().len() == before
        })
    })
    .await;
    // On: the switch boots, its banner on the console.
    let on = power_after_rest(&agent, json!({"action": "on"}))
        .await
        .unwrap();
    assert_eq!(on["action"], "on", "{on}");
    assert_eq!(on["outlets"][0]["answer"], on_answer, "{on}");
    boot_banner(&agent).await;
    // Cycle and break into ROMMON: one call.
    let caught = cycle_into_rommon(&agent).await;
    let boot = &caught["boot"];
    assert!(
        regex::Regex::new(r"rommon \d+ >")
            .unwrap()
            .is_match(boot["prompt_text"].as_str().unwrap()),
        "{caught}"
    );
    assert!(
        boot["output"]
            .as_str()
            .unwrap()
            .contains("System Bootstrap"),
        "{caught}"
    );
    assert!(site.sim.wait_received(b"\r~\x02", DEADLINE).await);
    // The existing ROMMON path goes on from there.
    ok(&agent, "send_text", json!({"text": "confreg 0x2142"})).await;
    let set = ok(
        &agent,
        "read_until_prompt",
        json!({"prompt": ROMMON, "regex": true, "timeout": 5}),
    )
    .await;
    assert!(
        set["output"].as_str().unwrap().contains("You must reset"),
        "{set}"
    );
    // Each action is the port's event and in the audit trail, with who
    // and the controller's answer.
    let status = ok(&agent, "status", json!({})).await.to_string();
    assert!(
        status.contains(&format!("power off: pdu1:4 {off_answer}")),
        "{status}"
    );
    assert!(status.contains("token ops"), "{status}");
    let audited = wait::eventually("the power records in the audit trail", DEADLINE, || async {
        let records = site.audited_power();
        if records.len() >= 4 {
            Ok(records)
        } else {
            Err(format!("{records:?}"))
        }
    })
    .await;
    assert!(
        audited
            .iter()
            .all(|r| r["token"] == "ops" && r["port"] == "sw1"),
        "{audited:?}"
    );
    assert!(
        audited
            .iter()
            .any(|r| r["data"].as_str().unwrap_or("").contains(on_answer)),
        "{audited:?}"
    );
}

#[tokio::test]
async fn faults_name_the_controller_and_end_at_its_deadline() {
    // A port no server listens on, and a black hole that accepts and
    // never answers.
    let refused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let refused_at = refused.local_addr().unwrap();
    drop(refused);
    let hole = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hole_at = hole.local_addr().unwrap();
    let held = Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = held.clone();
    let _hole = tokio::spawn(async move {
        while let Ok((s, _)) = hole.accept().await {
            keep.lock().unwrap().push(s);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let mut devices = Vec::new();
    let mut extra = String::new();
    for name in ["gone1", "hole1", "lacks1", "wrong1"] {
        let link = dir.path().join(name);
        devices.push(
            sim::spawn(Profile::CiscoIos, Some(link.clone()))
                .await
                .unwrap(),
        );
        let controller = match name {
            "gone1" => "gone:4",
            "hole1" => "hole:4",
            "lacks1" => "pdu1:9",
            _ => "wrongpw:4",
        };
        extra.push_str(&format!(
            "[ports.{name}]\ndevice = {:?}\npower = \"{controller}\"\n\n",
            link.display()
        ));
    }
    let wrong = dir.path().join("wrong.password");
    extra.push_str(&format!(
        "[power.wrongpw]\ndriver = \"nut\"\naddress = \"{{PDU}}\"\nups = \"pdu\"\nusername = \"{USER}\"\npassword_file = {:?}\ndeadline = \"2s\"\n\n",
        wrong.display()
    ));
    std::fs::write(&wrong, "not-the-password-0123\n").unwrap();
    std::fs::set_permissions(&wrong, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    extra.push_str(&format!(
        "[power.gone]\ndriver = \"nut\"\naddress = \"{refused_at}\"\nups = \"pdu\"\ndeadline = \"1s\"\n\n\
         [power.hole]\ndriver = \"nut\"\naddress = \"{hole_at}\"\nups = \"pdu\"\ndeadline = \"1s\"\n\n"
    ));
    let Some(site) = Site::start("none", &extra).await else {
        return;
    };
    let agent = GateClient::connect_http(&site.url, Some(ADM))
        .await
        .unwrap();
    let on = async |port: &str, args: Value| -> String {
        ok(&agent, "connect", json!({"port": port})).await;
        err(&agent, "power", args).await
    };
    let e = on("gone1", json!({"action": "status"})).await;
    assert!(
        e.starts_with("port_unavailable: power controller gone (nut pdu@")
            && e.contains("cannot be reached"),
        "{e}"
    );
    let started = Instant::now();
    let e = on("hole1", json!({"action": "off"})).await;
    let took = started.elapsed();
    assert!(
        e.starts_with("timeout: power controller hole") && e.contains("deadline of 1s"),
        "{e}"
    );
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    let e = on("lacks1", json!({"action": "status"})).await;
    assert!(
        e.contains("refused outlet pdu1:9") && e.contains("VAR-NOT-SUPPORTED"),
        "{e}"
    );
    let e = on("lacks1", json!({"action": "off"})).await;
    assert!(e.contains("CMD-NOT-SUPPORTED"), "{e}");
    let e = on("wrong1", json!({"action": "off"})).await;
    assert!(
        e.contains("refused outlet wrongpw:4") && e.contains("ACCESS-DENIED"),
        "{e}"
    );
    // None of it switched anything.
    assert_eq!(site.pdu.outlet_on(4), Some(true));
    assert_eq!(site.pdu.outlet_on(1), Some(true));
}

#[tokio::test]
async fn a_cycle_while_one_runs_is_busy_and_a_device_that_never_comes_back_ends_at_the_deadline() {
    let Some(site) = Site::start("none", "").await else {
        return;
    };
    let first = site.agent(OPS, "sw1").await;
    let second = site.agent(ADM, "sw1").await;
    let cycle = first.call("power", json!({"action": "cycle", "off_seconds": 3}));
    let other = async {
        wait::eventually("the outlet off", DEADLINE, || async {
            wait::when(format!("{:?}", site.pdu.outlet_on(4)), |on| {
                on == "Some(false)"
            })
        })
        .await;
        err(&second, "power", json!({"action": "cycle"})).await
    };
    let (cycled, e) = tokio::join!(cycle, other);
    let cycled = cycled.expect("MCP").ok();
    // The first cycle ran whole: the outlet was cut and is on again.
    assert_eq!(cycled["action"], "cycle", "{cycled}");
    // The controller's answer to the cut, then to the power back.
    assert_eq!(cycled["outlets"][0]["outlet"], "pdu1:4", "{cycled}");
    assert_eq!(cycled["outlets"][1]["outlet"], "pdu1:4", "{cycled}");
    assert_eq!(
        cycled["outlets"].as_array().map(Vec::len),
        Some(2),
        "{cycled}"
    );
    assert_eq!(site.pdu.outlet_on(4), Some(true), "{cycled}");
    assert!(
        e.starts_with("busy: outlet pdu1:4 is being switched by session")
            && e.contains("token ops"),
        "{e}"
    );
    // The switch never comes back: its power stays cut whatever the
    // outlet does (the watcher no longer follows it).
    drop(site._watcher);
    site.sim.power_off();
    let e = power_after_rest(
        &second,
        json!({"action": "cycle", "off_seconds": 1, "then": {"break": "rommon", "timeout": 2}}),
    )
    .await
    .unwrap_err();
    assert!(
        e.starts_with("timeout: power came back") && e.contains("printed nothing within 2s"),
        "{e}"
    );
    // A device that boots but never shows the prompt awaited: the wait
    // ends at its deadline with the console's last output.
    let _again = OutletWatcher::follow(site.pdu.address(), 4, site.sim.clone());
    let e = power_after_rest(
        &second,
        json!({"action": "cycle", "off_seconds": 1, "then": {"break": "rommon", "wait_for": "never-this-prompt", "timeout": 4}}),
    )
    .await
    .unwrap_err();
    assert!(
        e.starts_with("timeout: power came back and the break sequence rommon was sent")
            && e.contains("rommon 1 >"),
        "{e}"
    );
}

#[tokio::test]
async fn tokens_without_the_power_right_are_refused_and_read_tokens_do_not_see_it() {
    let Some(site) = Site::start("none", "").await else {
        return;
    };
    let rw = site.agent(RW, "sw1").await;
    let e = err(&rw, "power", json!({"action": "off"})).await;
    assert!(
        e.starts_with("forbidden: power needs the power right") && e.contains("power = true"),
        "{e}"
    );
    let ro = site.agent(RO, "sw1").await;
    let e = err(&ro, "power", json!({"action": "status"})).await;
    assert!(e.starts_with("forbidden: power needs write access"), "{e}");
    let names: Vec<String> = ro
        .tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(!names.iter().any(|n| n == "power"), "{names:?}");
    // Nothing was switched; the admin's token may, with no power key.
    assert_eq!(site.pdu.outlet_on(4), Some(true));
    let adm = site.agent(ADM, "sw1").await;
    assert_eq!(outlet_state(&adm).await, "on");
    // Arguments the tool refuses change nothing either.
    let e = err(&adm, "power", json!({"action": "off", "off_seconds": 3})).await;
    assert!(
        e.starts_with("invalid_argument: off_seconds is for action cycle"),
        "{e}"
    );
    let e = err(
        &adm,
        "power",
        json!({"action": "cycle", "then": {"break": "nope\u{1b}[2J"}}),
    )
    .await;
    assert!(
        e.contains("names no break sequence")
            && e.contains("it has: rommon")
            && !e.contains('\u{1b}'),
        "{e}"
    );
    assert_eq!(site.pdu.outlet_on(4), Some(true));
}

#[tokio::test]
async fn a_guarded_port_holds_a_cut_for_a_persons_approval() {
    let Some(site) = Site::start("guarded", "").await else {
        return;
    };
    let agent = site.agent(OPS, "sw1").await;
    // Status and a plain on cut nothing: no approval.
    assert_eq!(outlet_state(&agent).await, "on");
    // Nobody decides: the request expires, the outlet stays on.
    let e = err(&agent, "power", json!({"action": "off"})).await;
    assert!(
        e.starts_with("denied: \"power off sw1 (pdu1:4)\" expired: nobody approved it within")
            && e.contains("nothing was sent"),
        "{e}"
    );
    assert_eq!(site.pdu.outlet_on(4), Some(true));
    // A person approves the exact cut they are shown.
    let socket = site.dir.path().join("console.sock");
    let (mut person, _) = ConsoleConn::attach(&socket, "sw1", "watch", json!({})).await;
    let decide = async {
        let list = loop {
            let m = person.until_json("approvals").await;
            let list = m["pending"].as_array().cloned().unwrap_or_default();
            if !list.is_empty() {
                break list;
            }
        };
        let line = list[0]["line"].as_str().unwrap_or_default().to_owned();
        person
            .send_json(
                &json!({"type": "decide", "id": list[0]["id"], "line": line, "approve": true}),
            )
            .await;
        line
    };
    let (cycled, line) = tokio::join!(
        power_after_rest(
            &agent,
            json!({"action": "cycle", "off_seconds": 1, "then": {"break": "rommon", "timeout": 15}}),
        ),
        decide
    );
    assert_eq!(
        line,
        "power cycle sw1 (pdu1:4), off 1s, then break sequence rommon"
    );
    let cycled = cycled.unwrap();
    assert!(
        cycled["boot"]["prompt_text"]
            .as_str()
            .unwrap()
            .starts_with("rommon"),
        "{cycled}"
    );
}
