//! A power distribution unit behind a real NUT server: NUT's own `upsd`
//! (Debian `nut-server`), run by the test in a temporary directory on a
//! loopback port, in front of a played PDU with switched outlets; and the
//! outlet watcher that wires an outlet to a simulated device.
//!
//! NUT's `dummy-ups` driver serves a device from a file, but executes no
//! outlet command (upsd answers `ERR CMD-NOT-SUPPORTED` to
//! `INSTCMD pdu outlet.4.load.off`: it offers only `load.off`). So the kit
//! plays the PDU where a real one would be, at NUT's driver socket: upsd
//! connects to `<driver>-<ups>` in its state directory and speaks its
//! driver protocol (`DUMPALL`, `SETINFO`, `ADDCMD`, `INSTCMD`, `PING`),
//! exactly as to any of NUT's hardware drivers. Everything serialgate
//! talks to (the network protocol, the users and their rights, the
//! errors for an unknown outlet or a wrong password) is upsd's.
//!
//! The outlet table and the watcher are the kit's PDU ([`crate::pdu`]);
//! here the watcher ([`OutletWatcher::follow`]) follows an outlet as a
//! client sees it, through upsd (`GET VAR pdu outlet.N.status` every
//! 100 ms: NUT tells its clients nothing unasked).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serialgate_sim::SimHandle;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UnixListener};

pub use crate::pdu::OutletWatcher;
use crate::pdu::Outlets;

/// Where Debian installs upsd itself (`/usr/sbin/upsd` is a wrapper that
/// refuses to run unless `/etc/nut/nut.conf` says so).
pub const UPSD: &str = "/lib/nut/upsd";
/// The PDU's name on the server.
pub const UPS: &str = "pdu";
/// The user allowed every instant command.
pub const USER: &str = "admin";
/// That user's password.
pub const PASSWORD: &str = "pdu-secret-0123456789";

/// upsd in front of a played PDU, on `127.0.0.1:`[`port`](Self::port).
/// Dropping it stops upsd.
pub struct NutPdu {
    upsd: Child,
    port: u16,
    dir: tempfile::TempDir,
    /// Each outlet's state as the played PDU holds it.
    outlets: Outlets,
    driver: tokio::task::JoinHandle<()>,
}

impl Drop for NutPdu {
    fn drop(&mut self) {
        let _ = self.upsd.kill();
        let _ = self.upsd.wait();
        self.driver.abort();
    }
}

/// The current user's name, which upsd is told to stay as.
fn user_name() -> String {
    Command::new("id")
        .arg("-un")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "root".into())
}

impl NutPdu {
    /// Starts a PDU with `outlets` (numbers), all on, and upsd in front of
    /// it; `None` (after [`crate::skip::skipped`]) where upsd is missing.
    pub async fn start(outlets: &[u32]) -> Option<NutPdu> {
        if !Path::new(UPSD).exists() {
            crate::skip::skipped(
                "NUT's upsd is not installed (Debian: apt install nut-server; .ci/install-deps)",
            );
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let write = |name: &str, text: String| {
            use std::os::unix::fs::PermissionsExt;
            let path = dir.path().join(name);
            std::fs::write(&path, text).expect("write NUT config");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        };
        write(
            "ups.conf",
            format!("[{UPS}]\n  driver = testkit\n  port = none\n"),
        );
        write("upsd.conf", format!("LISTEN 127.0.0.1 {port}\n"));
        write(
            "upsd.users",
            format!("[{USER}]\n  password = {PASSWORD}\n  instcmds = all\n"),
        );
        write("nut.conf", "MODE=standalone\n".into());
        let outlets = Outlets::new(outlets);
        let socket = dir.path().join(format!("testkit-{UPS}"));
        let listener = UnixListener::bind(&socket).expect("the driver socket");
        let driver = tokio::spawn(play_driver(listener, outlets.clone()));
        let upsd = Command::new(UPSD)
            .args(["-F", "-u", &user_name()])
            .env("NUT_CONFPATH", dir.path())
            .env("NUT_STATEPATH", dir.path())
            .env("NUT_ALTPIDPATH", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start upsd");
        let first = *outlets.all().keys().next().expect("a PDU has an outlet");
        let pdu = NutPdu {
            upsd,
            port,
            dir,
            outlets,
            driver,
        };
        crate::wait::eventually("upsd serving the PDU", Duration::from_secs(15), || {
            let address = pdu.address();
            async move {
                match outlet_status(&address, first).await {
                    Ok(s) if s == "on" => Ok(()),
                    Ok(s) => Err(s),
                    Err(e) => Err(e),
                }
            }
        })
        .await;
        Some(pdu)
    }

    /// upsd's TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Writes `password` to a file private to the user in `dir` (as the
    /// config's `password_file` wants it) and returns its path.
    pub fn password_file(dir: &Path, password: &str) -> PathBuf {
        crate::pdu::private_file(dir, "pdu.password", &format!("{password}\n"))
    }

    /// The outlet's state as the played PDU holds it.
    pub fn outlet_on(&self, outlet: u32) -> Option<bool> {
        self.outlets.get(outlet)
    }

    /// The directory of upsd's config and state.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Asks upsd for `outlet.N.status` over NUT's network protocol: `on`,
/// `off`, or upsd's error.
pub async fn outlet_status(address: &str, outlet: u32) -> Result<String, String> {
    let exchange = async {
        let stream = TcpStream::connect(address)
            .await
            .map_err(|e| e.to_string())?;
        let mut stream = BufReader::new(stream);
        stream
            .get_mut()
            .write_all(format!("GET VAR {UPS} outlet.{outlet}.status\nLOGOUT\n").as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        stream
            .read_line(&mut line)
            .await
            .map_err(|e| e.to_string())?;
        let prefix = format!("VAR {UPS} outlet.{outlet}.status ");
        line.trim()
            .strip_prefix(&prefix)
            .map(|v| v.trim_matches('"').to_owned())
            .ok_or_else(|| line.trim().to_owned())
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .unwrap_or_else(|_| Err("upsd did not answer within 5 s".into()))
}

/// Plays the PDU's NUT driver on its socket: the state dump upsd asks
/// for, and each outlet's `load.on`/`load.off` executed and announced.
async fn play_driver(listener: UnixListener, outlets: Outlets) {
    while let Ok((stream, _)) = listener.accept().await {
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let mut out = String::new();
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.first().copied() {
                Some("DUMPALL") => {
                    let state = outlets.all();
                    out.push_str("SETINFO device.type \"pdu\"\n");
                    out.push_str(&format!("SETINFO outlet.count \"{}\"\n", state.len()));
                    for (n, on) in &state {
                        out.push_str(&format!(
                            "SETINFO outlet.{n}.status \"{}\"\n",
                            if *on { "on" } else { "off" }
                        ));
                        out.push_str(&format!("ADDCMD outlet.{n}.load.on\n"));
                        out.push_str(&format!("ADDCMD outlet.{n}.load.off\n"));
                    }
                    out.push_str("DUMPDONE\nDATAOK\n");
                }
                Some("PING") => out.push_str("PONG\n"),
                Some("INSTCMD") => {
                    let command = words.get(1).copied().unwrap_or_default();
                    let parts: Vec<&str> = command.split('.').collect();
                    if let ["outlet", n, "load", how @ ("on" | "off")] = parts[..]
                        && let Ok(n) = n.parse::<u32>()
                        && outlets.set(n, how == "on")
                    {
                        out.push_str(&format!("SETINFO outlet.{n}.status \"{how}\"\n"));
                    }
                    if let Some(i) = words.iter().position(|w| *w == "TRACKING")
                        && let Some(id) = words.get(i + 1)
                    {
                        out.push_str(&format!("TRACKING {id} 0\n"));
                    }
                }
                _ => {}
            }
            if !out.is_empty() && write.write_all(out.as_bytes()).await.is_err() {
                break;
            }
        }
    }
}

impl OutletWatcher {
    /// Watches `outlet` of the PDU at `address` (upsd) every 100 ms and
    /// cuts `device`'s power when it reads `off`, restores it when `on`.
    pub fn follow(address: String, outlet: u32, device: Arc<SimHandle>) -> OutletWatcher {
        OutletWatcher::follow_with(device, move || {
            let address = address.clone();
            async move {
                match outlet_status(&address, outlet).await.as_deref() {
                    Ok("on") => Some(true),
                    Ok("off") => Some(false),
                    _ => None,
                }
            }
        })
    }
}
