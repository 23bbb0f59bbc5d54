//! A server's BMC over Redfish: OpenStack's sushy-emulator (PyPI
//! `sushy-tools`) with its fake systems driver, which keeps each
//! system's power in memory and needs no libvirt, run by the test on a
//! loopback port with HTTP Basic authentication (an htpasswd file of
//! bcrypt hashes, the only kind it reads).
//!
//! Like a real BMC, the fake driver takes a reset and changes the power
//! later (1 to 11 s later, at random); the test observes the system's
//! `PowerState` as any client does, over Redfish
//! ([`SushyBmc::power_state`]), and wires it to a simulated device with
//! [`crate::pdu::OutletWatcher::follow_with`].

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The BMC user.
pub const USER: &str = "root";
/// Its password.
pub const PASSWORD: &str = "bmc-secret-0123456789";
/// The id (UUID) of the system the tests switch.
pub const SYSTEM: &str = "1f5a3c2e-7d4b-4e8a-9c61-2b0d5e8f4a17";

/// sushy-emulator serving fake systems on `127.0.0.1:`[`port`](Self::port).
/// Dropping it stops the emulator.
pub struct SushyBmc {
    emulator: Child,
    port: u16,
    https: bool,
    _dir: tempfile::TempDir,
}

impl Drop for SushyBmc {
    fn drop(&mut self) {
        let _ = self.emulator.kill();
        let _ = self.emulator.wait();
    }
}

impl SushyBmc {
    /// Starts the emulator with the systems `ids`, all on; `None` (after
    /// [`crate::skip::skipped`]) where sushy-tools is not in the tests'
    /// environment.
    pub async fn start(ids: &[&str]) -> Option<SushyBmc> {
        SushyBmc::start_with(ids, None).await
    }

    /// [`start`](Self::start), serving HTTPS with the certificate and key
    /// files `tls` when given.
    pub async fn start_with(ids: &[&str], tls: Option<(&Path, &Path)>) -> Option<SushyBmc> {
        let python = crate::python::python_with(&["sushy_tools.emulator.main", "bcrypt"])?;
        let dir = tempfile::tempdir().expect("temp dir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let htpasswd = dir.path().join("htpasswd");
        let hashed = Command::new(&python)
            .args([
                "-c",
                "import bcrypt, sys; print(sys.argv[1] + ':' + bcrypt.hashpw(sys.argv[2].encode(), bcrypt.gensalt(4)).decode())",
                USER,
                PASSWORD,
            ])
            .output()
            .expect("run python for bcrypt");
        assert!(hashed.status.success(), "bcrypt: {hashed:?}");
        std::fs::write(&htpasswd, &hashed.stdout).expect("write htpasswd");
        let systems: Vec<String> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                format!("{{'uuid': '{id}', 'name': 'server{i}', 'power_state': 'On', 'nics': []}}")
            })
            .collect();
        let config = dir.path().join("emulator.conf");
        std::fs::write(
            &config,
            format!(
                "SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'\n\
                 SUSHY_EMULATOR_LISTEN_PORT = {port}\n\
                 SUSHY_EMULATOR_FAKE_DRIVER = True\n\
                 SUSHY_EMULATOR_FAKE_SYSTEMS = [{}]\n\
                 SUSHY_EMULATOR_AUTH_FILE = {:?}\n\
                 SUSHY_EMULATOR_STATE_DIR = {:?}\n{}",
                systems.join(", "),
                htpasswd.display().to_string(),
                dir.path().display().to_string(),
                tls.map(|(cert, key)| format!(
                    "SUSHY_EMULATOR_SSL_CERT = {:?}\nSUSHY_EMULATOR_SSL_KEY = {:?}\n",
                    cert.display().to_string(),
                    key.display().to_string()
                ))
                .unwrap_or_default(),
            ),
        )
        .expect("write the emulator's config");
        let emulator = Command::new(&python)
            .args(["-m", "sushy_tools.emulator.main", "--config"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start sushy-emulator");
        let bmc = SushyBmc {
            emulator,
            port,
            https: tls.is_some(),
            _dir: dir,
        };
        if bmc.https {
            // Over TLS the kit's plain client cannot look: serving is
            // accepting connections.
            crate::wait::eventually(
                "sushy-emulator listening",
                Duration::from_secs(30),
                || async {
                    TcpStream::connect(("127.0.0.1", port))
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string())
                },
            )
            .await;
            return Some(bmc);
        }
        let first = ids.first().expect("a BMC has a system").to_string();
        crate::wait::eventually(
            "sushy-emulator serving its systems",
            Duration::from_secs(30),
            || {
                let first = first.clone();
                let bmc = &bmc;
                async move {
                    match bmc.power_state(&first).await {
                        Ok(s) if s == "On" => Ok(()),
                        Ok(s) => Err(s),
                        Err(e) => Err(e),
                    }
                }
            },
        )
        .await;
        Some(bmc)
    }

    /// The emulator's TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT` (`https://` over TLS), the BMC's base URL.
    pub fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The system's `PowerState` as the BMC reports it over Redfish (the
    /// fake driver applies a pending reset when it is read); plain HTTP
    /// only.
    pub async fn power_state(&self, id: &str) -> Result<String, String> {
        power_state_at(self.port, id).await
    }

    /// Writes `password` to a file private to the user in `dir` (as the
    /// config's `password_file` wants it) and returns its path.
    pub fn password_file(dir: &Path, password: &str) -> PathBuf {
        crate::nut::NutPdu::password_file(dir, password)
    }
}

/// [`SushyBmc::power_state`] of the emulator on `port`, for a watcher
/// that outlives a borrow of it.
pub async fn power_state_at(port: u16, id: &str) -> Result<String, String> {
    let body = get(port, &format!("/redfish/v1/Systems/{id}")).await?;
    let json: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
    json["PowerState"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| body.clone())
}

/// One HTTP/1.0 GET with the BMC user's Basic authentication: the body
/// of a 200 answer, or what came instead.
async fn get(port: u16, path: &str) -> Result<String, String> {
    let exchange = async {
        let mut stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(|e| e.to_string())?;
        let request = format!(
            "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Basic {}\r\nAccept: application/json\r\n\r\n",
            base64(format!("{USER}:{PASSWORD}").as_bytes())
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut answer = Vec::new();
        stream
            .read_to_end(&mut answer)
            .await
            .map_err(|e| e.to_string())?;
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let (head, body) = answer
            .split_once("\r\n\r\n")
            .ok_or_else(|| answer.clone())?;
        if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
            return Err(head.lines().next().unwrap_or_default().to_owned());
        }
        Ok(body.to_owned())
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .unwrap_or_else(|_| Err("the emulator did not answer within 5 s".into()))
}

/// Standard base64 (RFC 4648), for the Basic authentication header.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_is_rfc_4648() {
        assert_eq!(super::base64(b"root:pw"), "cm9vdDpwdw==");
        assert_eq!(super::base64(b"ab"), "YWI=");
        assert_eq!(super::base64(b"abc"), "YWJj");
    }
}
