//! Power through a server's BMC over Redfish, end to end: OpenStack's
//! sushy-emulator with fake systems (the test kit's `redfish`), the
//! switch powered as the emulator reports its system's `PowerState`,
//! agents calling `power`: status, off, on, a cycle caught in ROMMON;
//! and the faults: a wrong password, a system the BMC lacks, a BMC that
//! is down, one that never answers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use serialgate_testkit::redfish::{self, PASSWORD, SYSTEM, SushyBmc, USER};

use super::power::{ADM, OPS, err};
use super::power_bmc::{BmcSite, off_on_and_a_cycle_caught_in_rommon};

/// `[power.bmc1]` for the emulator at `url`, and `extra` TOML after it.
fn controller(url: &str, extra: &str) -> String {
    format!(
        "[power.bmc1]\ndriver = \"redfish\"\naddress = \"{url}\"\nusername = \"{USER}\"\n\
         password_file = \"bmc.password\"\ndeadline = \"2s\"\nmin_interval = \"1s\"\n\n{extra}"
    )
}

/// The site with the switch on the emulator's system [`SYSTEM`].
async fn site(bmc: &SushyBmc, extra: &str) -> BmcSite {
    let port = bmc.port();
    BmcSite::start(
        &controller(&bmc.url(), extra),
        PASSWORD,
        &format!("bmc1:{SYSTEM}"),
        move || async move {
            redfish::power_state_at(port, SYSTEM)
                .await
                .ok()
                .and_then(|s| match s.as_str() {
                    "On" => Some(true),
                    "Off" => Some(false),
                    _ => None,
                })
        },
    )
    .await
}

#[tokio::test]
async fn status_off_on_and_a_cycle_caught_in_rommon_through_sushy_emulator() {
    let Some(bmc) = SushyBmc::start(&[SYSTEM, "other-server"]).await else {
        return;
    };
    let site = site(&bmc, "").await;
    let agent = site.agent(OPS, "sw1").await;
    off_on_and_a_cycle_caught_in_rommon(&site, &agent, "ComputerSystem.Reset ForceOff: 204").await;
    assert_eq!(bmc.power_state(SYSTEM).await.as_deref(), Ok("On"));
    // The other server was never touched.
    assert_eq!(bmc.power_state("other-server").await.as_deref(), Ok("On"));
}

#[tokio::test]
async fn redfish_faults_name_the_controller_and_end_at_its_deadline() {
    let Some(bmc) = SushyBmc::start(&[SYSTEM]).await else {
        return;
    };
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
    let wrong = dir.path().join("wrong.password");
    std::fs::write(&wrong, "not-the-password-0123\n").unwrap();
    std::fs::set_permissions(&wrong, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let mut devices = Vec::new();
    let mut extra = String::new();
    for (name, outlet) in [
        ("wrong1", format!("wrongpw:{SYSTEM}")),
        ("lacks1", "bmc1:no-such-server".to_owned()),
        ("gone1", "gone:1".to_owned()),
        ("hole1", "hole:1".to_owned()),
    ] {
        let link = dir.path().join(name);
        devices.push(
            serialgate_sim::spawn(serialgate_sim::Profile::CiscoIos, Some(link.clone()))
                .await
                .unwrap(),
        );
        extra.push_str(&format!(
            "[ports.{name}]\ndevice = {:?}\npower = \"{outlet}\"\n\n",
            link.display()
        ));
    }
    let login =
        format!("username = \"{USER}\"\npassword_file = \"bmc.password\"\ndeadline = \"1s\"\n");
    extra.push_str(&format!(
        "[power.wrongpw]\ndriver = \"redfish\"\naddress = \"{}\"\nusername = \"{USER}\"\npassword_file = {:?}\n\n\
         [power.gone]\ndriver = \"redfish\"\naddress = \"http://{refused_at}\"\n{login}\n\
         [power.hole]\ndriver = \"redfish\"\naddress = \"http://{hole_at}\"\n{login}\n",
        bmc.url(),
        wrong.display()
    ));
    let site = site(&bmc, &extra).await;
    let agent = site.agent(ADM, "wrong1").await;
    let on = async |port: &str, args: serde_json::Value| -> String {
        super::power::ok(&agent, "connect", json!({"port": port})).await;
        err(&agent, "power", args).await
    };
    let e = on("wrong1", json!({"action": "off"})).await;
    assert!(
        e.starts_with("port_unavailable: power controller wrongpw (redfish http://127.0.0.1:")
            && e.contains("401 Unauthorized")
            && e.contains("the BMC refused the login")
            && e.contains("password_file"),
        "{e}"
    );
    let e = on("lacks1", json!({"action": "status"})).await;
    assert!(
        e.contains("refused outlet bmc1:no-such-server")
            && e.contains("the BMC has no system \"no-such-server\"")
            && e.contains(&format!("its systems: \"{SYSTEM}\"")),
        "{e}"
    );
    let e = on("gone1", json!({"action": "status"})).await;
    assert!(
        e.starts_with("port_unavailable: power controller gone (redfish http://")
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
    // None of it switched anything.
    assert_eq!(bmc.power_state(SYSTEM).await.as_deref(), Ok("On"));
}

#[tokio::test]
async fn an_https_bmc_is_trusted_by_its_ca_file_and_refused_without_it() {
    if !super::tls::have_openssl() {
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    let ca = serialgate_testkit::tls::TestCa::new(certs.path(), "bmc-ca");
    let (cert, key) = ca.issue("bmc", "lab");
    let Some(bmc) = SushyBmc::start_with(&[SYSTEM], Some((&cert, &key))).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("u1");
    let _device = serialgate_sim::spawn(serialgate_sim::Profile::CiscoIos, Some(link.clone()))
        .await
        .unwrap();
    let extra = format!(
        "ca_file = {:?}\n\n[power.untrusted]\ndriver = \"redfish\"\naddress = \"{}\"\nusername = \"{USER}\"\n\
         password_file = \"bmc.password\"\n\n[ports.u1]\ndevice = {:?}\npower = \"untrusted:{SYSTEM}\"\n",
        ca.cert().display(),
        bmc.url(),
        link.display()
    );
    // The switch stays powered: this test switches nothing.
    let site = BmcSite::start(
        &controller(&bmc.url(), &extra),
        PASSWORD,
        &format!("bmc1:{SYSTEM}"),
        || async { None },
    )
    .await;
    let agent = site.agent(ADM, "sw1").await;
    assert!(bmc.url().starts_with("https://"));
    assert_eq!(super::power::outlet_state(&agent).await, "on");
    super::power::ok(&agent, "connect", json!({"port": "u1"})).await;
    let e = err(&agent, "power", json!({"action": "status"})).await;
    assert!(
        e.starts_with("port_unavailable: power controller untrusted (redfish https://127.0.0.1:")
            && e.contains("cannot be reached: TLS with 127.0.0.1:")
            && e.contains("UnknownIssuer"),
        "{e}"
    );
}
