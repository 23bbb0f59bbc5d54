//! A switched PDU behind a real SNMP agent: net-snmp's `snmpd` (Debian
//! `snmpd`), run by the test in a temporary directory on a loopback UDP
//! port, with a v2c write community (and a read-only one) and a v3
//! authPriv user (SHA-256, AES-128), serving the kit's PDU
//! ([`crate::pdu`]) as APC's PowerNet outlet columns.
//!
//! snmpd hands the APC subtree to a `pass_persist` program, the way real
//! MIB extensions are plugged in: it writes `get`, `getnext` and `set`
//! requests to the program's stdin and reads the answers from its stdout.
//! The program the kit writes is a bash pipe to the kit's loopback TCP
//! port, where the kit answers from its outlet table. Everything
//! serialgate talks to (SNMP itself, the community and USM checks, the
//! views and their write access, the errors for an OID it lacks) is
//! snmpd's.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serialgate_sim::SimHandle;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::pdu::{OutletWatcher, Outlets};

/// Where Debian installs snmpd.
pub const SNMPD: &str = "/usr/sbin/snmpd";
/// The v2c community with write access to the outlet table.
pub const COMMUNITY: &str = "pdu-write-0123456789";
/// A v2c community that may only read.
pub const READ_COMMUNITY: &str = "pdu-read-0123456789";
/// The v3 user, with write access at authPriv.
pub const USER: &str = "gate";
/// Its SHA-256 authentication passphrase.
pub const AUTH_PASSWORD: &str = "auth-secret-0123456789";
/// Its AES-128 privacy passphrase.
pub const PRIV_PASSWORD: &str = "priv-secret-0123456789";

/// APC PowerNet-MIB `rPDUOutletControlOutletCommand` (read-write).
pub const RPDU_CONTROL: &str = ".1.3.6.1.4.1.318.1.1.12.3.3.1.1.4";
/// APC PowerNet-MIB `rPDUOutletStatusOutletState` (read-only).
pub const RPDU_STATE: &str = ".1.3.6.1.4.1.318.1.1.12.3.5.1.1.4";
/// APC PowerNet-MIB `sPDUOutletCtl`, the MasterSwitch's (read-write).
pub const SPDU_CONTROL: &str = ".1.3.6.1.4.1.318.1.1.4.4.2.1.3";
/// The subtree snmpd passes to the kit: APC's enterprise.
const APC: &str = ".1.3.6.1.4.1.318";

/// snmpd in front of a played PDU, on UDP `127.0.0.1:`[`port`](Self::port).
/// Dropping it stops snmpd.
pub struct SnmpPdu {
    snmpd: Child,
    port: u16,
    dir: tempfile::TempDir,
    outlets: Outlets,
    table: tokio::task::JoinHandle<()>,
}

impl Drop for SnmpPdu {
    fn drop(&mut self) {
        let _ = self.snmpd.kill();
        let _ = self.snmpd.wait();
        self.table.abort();
    }
}

/// A UDP port free on loopback now.
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free UDP port")
        .port()
}

impl SnmpPdu {
    /// Starts a PDU with `outlets` (numbers), all on, and snmpd in front
    /// of it; `None` (after [`crate::skip::skipped`]) where snmpd is
    /// missing.
    pub async fn start(outlets: &[u32]) -> Option<SnmpPdu> {
        if !Path::new(SNMPD).exists() {
            crate::skip::skipped(
                "net-snmp's snmpd is not installed (Debian: apt install snmpd; .ci/install-deps)",
            );
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let outlets = Outlets::new(outlets);
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("the table's port");
        let table_port = listener.local_addr().expect("its address").port();
        let table = tokio::spawn(serve_table(listener, outlets.clone()));
        let bridge = dir.path().join("apc-table");
        std::fs::write(
            &bridge,
            format!(
                "#!/bin/bash\n# snmpd's pass_persist requests to the test kit's table, its answers back.\n\
                 exec 3<>/dev/tcp/127.0.0.1/{table_port} || exit 1\ncat <&3 &\nexec cat >&3\n"
            ),
        )
        .expect("write the pass_persist program");
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&bridge, std::fs::Permissions::from_mode(0o700))
                .expect("chmod");
        }
        let port = free_udp_port();
        let persistent = dir.path().join("persistent");
        std::fs::create_dir(&persistent).expect("the persistent dir");
        // USM users are created from the persistent file, as
        // `net-snmp-create-v3-user` does; snmpd reads only the config
        // path it is given (not /etc/snmp).
        crate::pdu::private_file(
            &persistent,
            "snmpd.conf",
            &format!("createUser {USER} SHA-256 \"{AUTH_PASSWORD}\" AES \"{PRIV_PASSWORD}\"\n"),
        );
        crate::pdu::private_file(
            dir.path(),
            "snmpd.conf",
            &format!(
                "agentAddress udp:127.0.0.1:{port}\n\
                 rwcommunity {COMMUNITY} 127.0.0.1\n\
                 rocommunity {READ_COMMUNITY} 127.0.0.1\n\
                 rwuser {USER} priv\n\
                 pass_persist {APC} {}\n",
                bridge.display()
            ),
        );
        let log = dir.path().join("snmpd.log");
        let snmpd = Command::new(SNMPD)
            .arg("-f")
            .arg("-Lf")
            .arg(&log)
            .arg("-p")
            .arg(dir.path().join("snmpd.pid"))
            .env(
                "SNMPCONFPATH",
                format!("{}:{}", dir.path().display(), persistent.display()),
            )
            .env("SNMP_PERSISTENT_DIR", &persistent)
            .env("MIBS", "")
            .env("MIBDIRS", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start snmpd");
        let pdu = SnmpPdu {
            snmpd,
            port,
            dir,
            outlets,
            table,
        };
        // snmpd logs its version once it listens.
        crate::wait::eventually("snmpd listening", Duration::from_secs(15), || {
            let log = log.clone();
            async move {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                if text.contains("NET-SNMP version") {
                    Ok(())
                } else {
                    Err(text)
                }
            }
        })
        .await;
        Some(pdu)
    }

    /// snmpd's UDP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Writes the secret files a config names in `dir`: `community`,
    /// `auth.password` and `priv.password`, each private to the user.
    pub fn secret_files(dir: &Path) -> [PathBuf; 3] {
        [
            crate::pdu::private_file(dir, "community", &format!("{COMMUNITY}\n")),
            crate::pdu::private_file(dir, "auth.password", &format!("{AUTH_PASSWORD}\n")),
            crate::pdu::private_file(dir, "priv.password", &format!("{PRIV_PASSWORD}\n")),
        ]
    }

    /// The outlet's state as the played PDU holds it.
    pub fn outlet_on(&self, outlet: u32) -> Option<bool> {
        self.outlets.get(outlet)
    }

    /// A watcher powering `device` from `outlet` as the PDU switches it.
    pub fn follow(&self, outlet: u32, device: Arc<SimHandle>) -> OutletWatcher {
        let outlets = self.outlets.clone();
        OutletWatcher::follow_with(device, move || {
            let on = outlets.get(outlet);
            async move { on }
        })
    }

    /// snmpd's log so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("snmpd.log")).unwrap_or_default()
    }
}

/// An OID's arcs, for MIB order; `None` if it is not dotted numbers.
fn arcs(oid: &str) -> Option<Vec<u32>> {
    oid.trim()
        .trim_start_matches('.')
        .split('.')
        .map(|a| a.parse().ok())
        .collect()
}

/// The table's objects in MIB order: `(oid, value, writable)`, three
/// columns per outlet (APC reads 1 for on, 2 for off in each).
fn objects(outlets: &Outlets) -> Vec<(Vec<u32>, i32, bool)> {
    let mut all = Vec::new();
    for (n, on) in outlets.all() {
        let value = if on { 1 } else { 2 };
        for (column, writable) in [
            (RPDU_CONTROL, true),
            (RPDU_STATE, false),
            (SPDU_CONTROL, true),
        ] {
            let mut oid = arcs(column).expect("a column OID");
            oid.push(n);
            all.push((oid, value, writable));
        }
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

/// `.1.3.6…` of `arcs`.
fn dotted(arcs: &[u32]) -> String {
    arcs.iter().map(|a| format!(".{a}")).collect()
}

/// Answers snmpd's pass_persist requests from the outlet table: `PING`,
/// `get`/`getnext` with an OID, `set` with an OID and `TYPE VALUE`.
async fn serve_table(listener: TcpListener, outlets: Outlets) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(answer(stream, outlets.clone()));
    }
}

/// One pass_persist program's requests.
async fn answer(stream: TcpStream, outlets: Outlets) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(command)) = lines.next_line().await {
        let out = match command.trim() {
            "PING" => "PONG\n".to_owned(),
            "get" | "getnext" => {
                let Ok(Some(oid)) = lines.next_line().await else {
                    return;
                };
                let asked = arcs(&oid).unwrap_or_default();
                let table = objects(&outlets);
                let found = if command.trim() == "get" {
                    table.iter().find(|(o, ..)| *o == asked)
                } else {
                    table
                        .iter()
                        .find(|(o, ..)| o.cmp(&asked) == Ordering::Greater)
                };
                match found {
                    Some((o, value, _)) => format!("{}\ninteger\n{value}\n", dotted(o)),
                    None => "NONE\n".to_owned(),
                }
            }
            "set" => {
                let (Ok(Some(oid)), Ok(Some(typed))) =
                    (lines.next_line().await, lines.next_line().await)
                else {
                    return;
                };
                set(&outlets, &oid, &typed).to_owned() + "\n"
            }
            _ => continue,
        };
        if write.write_all(out.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A SET of `oid` to `typed` (`integer 2`): `DONE` or snmpd's error word.
fn set(outlets: &Outlets, oid: &str, typed: &str) -> &'static str {
    let Some(asked) = arcs(oid) else {
        return "not-writable";
    };
    let Some((_, _, writable)) = objects(outlets).into_iter().find(|(o, ..)| *o == asked) else {
        return "not-writable";
    };
    if !writable {
        return "not-writable";
    }
    let Some(("integer", value)) = typed.trim().split_once(' ') else {
        return "wrong-type";
    };
    let on = match value.trim() {
        "1" => true,
        "2" => false,
        _ => return "wrong-value",
    };
    let outlet = *asked.last().expect("an outlet's OID");
    if outlets.set(outlet, on) {
        "DONE"
    } else {
        "not-writable"
    }
}
