//! Power through a server's BMC over IPMI v2.0 LAN, end to end:
//! OpenIPMI's `ipmi_sim` (the test kit's `ipmi`) behind ipmitool, the
//! switch powered as the simulator's chassis control program leaves the
//! chassis, agents calling `power`: status, off, on, a cycle caught in
//! ROMMON; and the faults: a wrong password, a BMC that is down.

use std::time::{Duration, Instant};

use serde_json::json;
use serialgate_testkit::ipmi::{self, IpmiBmc, PASSWORD, USER};

use super::power::{ADM, OPS, err, ok};
use super::power_bmc::{BmcSite, off_on_and_a_cycle_caught_in_rommon};

/// ipmi_sim's cipher suite (HMAC-SHA1, AES-CBC-128): it answers no
/// request for its list, which ipmitool would otherwise wait out.
const CIPHER: &str = "cipher_suite = 3\n";

/// The site with the switch on the simulator's chassis, and `extra`
/// TOML (more controllers and ports).
async fn site(bmc: &IpmiBmc, extra: &str) -> BmcSite {
    let power = bmc.power_file();
    BmcSite::start(
        &format!(
            "[power.bmc1]\ndriver = \"ipmi\"\naddress = \"{}\"\nusername = \"{USER}\"\n\
             password_file = \"bmc.password\"\ndeadline = \"3s\"\nmin_interval = \"1s\"\n{CIPHER}\n{extra}",
            bmc.address()
        ),
        PASSWORD,
        "bmc1:1",
        move || {
            let power = power.clone();
            async move { ipmi::chassis_on_at(&power) }
        },
    )
    .await
}

#[tokio::test]
async fn status_off_on_and_a_cycle_caught_in_rommon_through_ipmi_sim() {
    let Some(bmc) = IpmiBmc::start().await else {
        return;
    };
    let site = site(&bmc, "").await;
    let agent = site.agent(OPS, "sw1").await;
    off_on_and_a_cycle_caught_in_rommon(&site, &agent, "Chassis Power Control: Down/Off").await;
    assert_eq!(bmc.chassis_on(), Some(true));
}

#[tokio::test]
async fn ipmi_faults_name_the_controller_and_end_at_its_deadline() {
    let Some(bmc) = IpmiBmc::start().await else {
        return;
    };
    // A UDP port nobody serves: IPMI's datagrams go unanswered.
    let down = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong.password");
    std::fs::write(&wrong, "not-the-password\n").unwrap();
    std::fs::set_permissions(&wrong, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let mut devices = Vec::new();
    let mut extra = String::new();
    for (name, outlet) in [("wrong1", "wrongpw:1"), ("down1", "down:1")] {
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
    extra.push_str(&format!(
        "[power.wrongpw]\ndriver = \"ipmi\"\naddress = \"{}\"\nusername = \"{USER}\"\npassword_file = {:?}\n{CIPHER}\n\
         [power.down]\ndriver = \"ipmi\"\naddress = \"{down}\"\nusername = \"{USER}\"\npassword_file = \"bmc.password\"\ndeadline = \"2s\"\n{CIPHER}\n",
        bmc.address(),
        wrong.display()
    ));
    let site = site(&bmc, &extra).await;
    let agent = site.agent(ADM, "wrong1").await;
    let e = err(&agent, "power", json!({"action": "off"})).await;
    assert!(
        e.starts_with("port_unavailable: power controller wrongpw (ipmi 127.0.0.1:")
            && e.contains("the BMC refused the login of user \"admin\"")
            && e.contains("RAKP 2 HMAC is invalid")
            && e.contains("password_file"),
        "{e}"
    );
    ok(&agent, "connect", json!({"port": "down1"})).await;
    let started = Instant::now();
    let e = err(&agent, "power", json!({"action": "status"})).await;
    let took = started.elapsed();
    assert!(
        e.starts_with("timeout: power controller down (ipmi 127.0.0.1:")
            && e.contains("deadline of 2s"),
        "{e}"
    );
    assert!(took < Duration::from_secs(6), "{took:?}");
    // Nothing was switched.
    assert_eq!(bmc.chassis_on(), Some(true));
}
