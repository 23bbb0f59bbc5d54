//! Power through SNMP, end to end: the simulated Cisco switch fed by
//! outlet 4 of a PDU behind net-snmp's real `snmpd` (the test kit's
//! `snmp`), v2c with a community and v3 authPriv (SHA-256, AES-128), the
//! same scenario as NUT's (`power::status_off_on_and_a_cycle_caught_in_rommon`):
//! status, off, on, a cycle caught in ROMMON in one call; and SNMP's
//! faults: a wrong community (the agent stays silent), a wrong v3 key
//! (its report cannot be authenticated), an outlet the PDU lacks, an agent that is down.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serialgate_sim::{self as sim, Profile};
use serialgate_testkit::client::GateClient;
use serialgate_testkit::pdu::private_file;
use serialgate_testkit::snmp::{SnmpPdu, USER, free_udp_port};

use crate::power::{ADM, PlayedPdu, Site, err, ok, status_off_on_and_a_cycle_caught_in_rommon};

impl PlayedPdu for SnmpPdu {
    fn outlet_on(&self, outlet: u32) -> Option<bool> {
        SnmpPdu::outlet_on(self, outlet)
    }
}

/// The v2c login to the kit's snmpd.
const V2C: &str = "community_file = \"community\"\n";
/// The v3 authPriv login to it.
const V3: &str = "username = \"gate\"\nauth_protocol = \"sha256\"\nauth_password_file = \"auth.password\"\n\
                  priv_protocol = \"aes\"\npriv_password_file = \"priv.password\"\n";

/// snmpd's PDU (outlets 1 and 4) as pdu1 with `profile` and `login`,
/// and `extra` TOML, where `{AGENT}` stands for snmpd's address.
async fn site(profile: &str, login: &str, extra: &str) -> Option<Site<SnmpPdu>> {
    let pdu = SnmpPdu::start(&[1, 4]).await?;
    let address = pdu.address();
    let controller = format!(
        "[power.pdu1]\ndriver = \"snmp\"\naddress = \"{address}\"\nprofile = \"{profile}\"\n{login}\
         deadline = \"2s\"\nmin_interval = \"1s\"\n"
    );
    Some(
        Site::serve(
            pdu,
            &controller,
            "none",
            &extra.replace("{AGENT}", &address),
            |dir| {
                SnmpPdu::secret_files(dir);
            },
            |pdu, sim| pdu.follow(4, sim),
        )
        .await,
    )
}

#[tokio::test]
async fn v2c_status_off_on_and_a_cycle_caught_in_rommon_through_a_real_snmpd() {
    let Some(site) = site("apc", V2C, "").await else {
        return;
    };
    status_off_on_and_a_cycle_caught_in_rommon(
        &site,
        "SET .1.3.6.1.4.1.318.1.1.12.3.3.1.1.4.4 = 2 (off): noError",
        "SET .1.3.6.1.4.1.318.1.1.12.3.3.1.1.4.4 = 1 (on): noError",
    )
    .await;
}

#[tokio::test]
async fn v3_authpriv_status_off_on_and_a_cycle_caught_in_rommon_through_a_real_snmpd() {
    // The MasterSwitch's column this time: one OID read and written.
    let Some(site) = site("apc-masterswitch", V3, "").await else {
        return;
    };
    status_off_on_and_a_cycle_caught_in_rommon(
        &site,
        "SET .1.3.6.1.4.1.318.1.1.4.4.2.1.3.4 = 2 (off): noError",
        "SET .1.3.6.1.4.1.318.1.1.4.4.2.1.3.4 = 1 (on): noError",
    )
    .await;
}

#[tokio::test]
async fn snmp_faults_name_the_controller_and_say_what_to_check() {
    let secrets = tempfile::tempdir().unwrap();
    let wrong_community = private_file(secrets.path(), "wrong.community", "not-the-community\n");
    let wrong_key = private_file(secrets.path(), "wrong.auth", "not-the-auth-key-0123\n");
    let right_priv = private_file(
        secrets.path(),
        "priv",
        &format!("{}\n", serialgate_testkit::snmp::PRIV_PASSWORD),
    );
    let community = private_file(
        secrets.path(),
        "community",
        &format!("{}\n", serialgate_testkit::snmp::COMMUNITY),
    );
    let read_only = private_file(
        secrets.path(),
        "read.community",
        &format!("{}\n", serialgate_testkit::snmp::READ_COMMUNITY),
    );
    let down = format!("127.0.0.1:{}", free_udp_port());
    let mut extra = format!(
        "[power.wrongcomm]\ndriver = \"snmp\"\naddress = \"{{AGENT}}\"\nprofile = \"apc\"\ncommunity_file = {wrong_community:?}\ndeadline = \"1s\"\n\n\
         [power.wrongkey]\ndriver = \"snmp\"\naddress = \"{{AGENT}}\"\nprofile = \"apc\"\nusername = \"{USER}\"\nauth_protocol = \"sha256\"\n\
         auth_password_file = {wrong_key:?}\npriv_password_file = {right_priv:?}\ndeadline = \"1s\"\n\n\
         [power.readonly]\ndriver = \"snmp\"\naddress = \"{{AGENT}}\"\nprofile = \"apc\"\ncommunity_file = {read_only:?}\n\n\
         [power.down]\ndriver = \"snmp\"\naddress = \"{down}\"\nprofile = \"apc\"\ncommunity_file = {community:?}\ndeadline = \"1s\"\n\n\
         [power.gen]\ndriver = \"snmp\"\naddress = \"{{AGENT}}\"\nprofile = \"generic\"\ncommunity_file = {community:?}\n\
         state_oid = \"1.3.6.1.4.1.318.1.1.12.3.5.1.1.4\"\ncontrol_oid = \"1.3.6.1.4.1.318.1.1.12.3.3.1.1.4\"\non_value = 1\noff_value = 2\n\n"
    );
    let mut devices = Vec::new();
    for (port, outlet) in [
        ("comm1", "wrongcomm:4"),
        ("key1", "wrongkey:4"),
        ("down1", "down:4"),
        ("ro1", "readonly:4"),
        ("lacks1", "pdu1:9"),
        ("gen1", "gen:1"),
    ] {
        let link = secrets.path().join(port);
        devices.push(
            sim::spawn(Profile::CiscoIos, Some(link.clone()))
                .await
                .unwrap(),
        );
        extra.push_str(&format!(
            "[ports.{port}]\ndevice = {:?}\npower = \"{outlet}\"\n\n",
            link.display()
        ));
    }
    let Some(site) = site("apc", V2C, &extra).await else {
        return;
    };
    let agent = GateClient::connect_http(&site.url, Some(ADM))
        .await
        .unwrap();
    let on = async |port: &str, args: Value| -> (String, Duration) {
        ok(&agent, "connect", json!({"port": port})).await;
        let started = Instant::now();
        let e = err(&agent, "power", args).await;
        (e, started.elapsed())
    };
    // A wrong community: the agent says nothing, the deadline says what
    // to check.
    let (e, took) = on("comm1", json!({"action": "off"})).await;
    assert!(
        e.starts_with("timeout: power controller wrongcomm (snmp v2c@127.0.0.1:")
            && e.contains("deadline of 1s")
            && e.contains("does not answer a wrong community: check that community_file"),
        "{e}"
    );
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    // A wrong v3 key: the agent's report of it cannot be authenticated,
    // so the client drops it; the deadline says which keys to check.
    let (e, took) = on("key1", json!({"action": "status"})).await;
    assert!(
        e.starts_with("timeout: power controller wrongkey (snmp gate@127.0.0.1:")
            && e.contains("deadline of 1s")
            && e.contains("the passphrases in auth_password_file and priv_password_file"),
        "{e}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    // A community that may only read: the status, not the switch.
    let (e, _) = on("ro1", json!({"action": "off"})).await;
    assert!(
        e.starts_with("port_unavailable: power controller readonly (snmp v2c@127.0.0.1:")
            && e.contains("refused the request for outlet readonly:4: noAccess")
            && e.contains("check that community_file holds a community it grants write access"),
        "{e}"
    );
    let status = ok(&agent, "power", json!({"action": "status"})).await;
    assert_eq!(status["outlets"][0]["state"], "on", "{status}");
    // An agent that is down: nothing answers; the call ends at its deadline.
    let (e, took) = on("down1", json!({"action": "status"})).await;
    assert!(
        e.starts_with(&format!("timeout: power controller down (snmp v2c@{down})"))
            && e.contains("deadline of 1s"),
        "{e}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    // An outlet the PDU lacks, read or switched.
    let (e, _) = on("lacks1", json!({"action": "status"})).await;
    assert!(
        e.contains("refused outlet pdu1:9: it has no such outlet")
            && e.contains(".1.3.6.1.4.1.318.1.1.12.3.5.1.1.4.9"),
        "{e}"
    );
    let (e, _) = on("lacks1", json!({"action": "off"})).await;
    assert!(e.contains("it has no such outlet"), "{e}");
    // None of it switched anything; the generic profile reads the same
    // table.
    assert_eq!(site.pdu.outlet_on(4), Some(true), "{}", site.pdu.log());
    assert_eq!(site.pdu.outlet_on(1), Some(true));
    ok(&agent, "connect", json!({"port": "gen1"})).await;
    let status = ok(&agent, "power", json!({"action": "status"})).await;
    assert_eq!(status["outlets"][0]["state"], "on", "{status}");
    drop(devices);
}
