//! IPMI v2.0 over LAN (RMCP+) to a server's BMC, by running ipmitool
//! (`ipmitool -I lanplus`, Debian `ipmitool`): `chassis power status`,
//! `on` and `off`, the outlet being the BMC's one chassis.
//!
//! ipmitool, not a Rust implementation: RMCP+ session setup (RAKP, the
//! cipher suites, the integrity and confidentiality keys) is where BMCs
//! differ and break, and ipmitool is what their vendors test against;
//! the Rust crate that does RMCP+ (rust-ipmi) calls itself a hobby
//! project not meant for production and points to ipmitool.
//!
//! Each run is a child process under the controller's deadline, killed
//! when it expires; the password goes in its environment (`-E`, the
//! `IPMI_PASSWORD` variable), never on its command line, where `ps`
//! would show it. Its output is read up to [`MAX_OUTPUT`] bytes. `-v`
//! makes it say why a session failed, which tells a refused login from a
//! BMC that never answered.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::driver::{DriverError, OutletState, PowerDriver};
use super::settle::settle;
use crate::error::shown;

/// The ipmitool program, found on `PATH`.
pub const IPMITOOL: &str = "ipmitool";
/// Most bytes of ipmitool's output read (each stream).
const MAX_OUTPUT: u64 = 16 * 1024;

/// A BMC over IPMI LAN and its login.
pub struct Ipmi {
    /// Its host.
    pub host: String,
    /// Its RMCP port.
    pub port: u16,
    /// The cipher suite asked for (`-C`); `None`: ipmitool asks the BMC
    /// for its list and takes the best.
    pub cipher_suite: Option<u8>,
    /// The BMC user.
    pub username: String,
    /// Its password.
    pub password: String,
    /// How long one run of ipmitool (all its tries) may take.
    pub deadline: Duration,
}

/// What one run printed.
struct Run {
    success: bool,
    stdout: String,
    stderr: String,
}

/// Reads at most [`MAX_OUTPUT`] bytes of a child's stream.
async fn bounded(stream: Option<impl tokio::io::AsyncRead + Unpin>) -> String {
    let mut out = Vec::new();
    if let Some(s) = stream {
        let _ = s.take(MAX_OUTPUT).read_to_end(&mut out).await;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Ipmi {
    /// Runs `ipmitool ... chassis power <command>` under the deadline.
    async fn run(&self, command: &str) -> Result<Run, DriverError> {
        // ipmitool's own per-try timeout and retries, in whole seconds, so
        // that it gives up by itself around the deadline; the kill below
        // ends it at the deadline regardless.
        let tries = self.deadline.as_secs().clamp(1, 10);
        let mut ipmitool = tokio::process::Command::new(IPMITOOL);
        ipmitool
            .args(["-I", "lanplus", "-H", &self.host, "-p"])
            .arg(self.port.to_string())
            .args(["-U", &self.username, "-E", "-v", "-N", "1", "-R"])
            .arg(tries.to_string());
        if let Some(suite) = self.cipher_suite {
            ipmitool.arg("-C").arg(suite.to_string());
        }
        let mut child = ipmitool
            .args(["chassis", "power", command])
            .env("IPMI_PASSWORD", &self.password)
            .env_remove("IPMITOOL_PASSWORD")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                DriverError::Unreachable(if e.kind() == std::io::ErrorKind::NotFound {
                    format!("{IPMITOOL} is not installed (Debian: apt install ipmitool)")
                } else {
                    format!("cannot run {IPMITOOL}: {e}")
                })
            })?;
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let run = async {
            let (stdout, stderr) = tokio::join!(bounded(stdout), bounded(stderr));
            let status = child.wait().await;
            (status, stdout, stderr)
        };
        // On expiry the child is dropped, which kills it.
        let (status, stdout, stderr) = tokio::time::timeout(self.deadline, run)
            .await
            .map_err(|_| DriverError::Deadline(self.deadline))?;
        let status =
            status.map_err(|e| DriverError::Unreachable(format!("waiting for {IPMITOOL}: {e}")))?;
        Ok(Run {
            success: status.success(),
            stdout,
            stderr,
        })
    }

    /// Runs `command`; a failed run is the error its output says.
    async fn chassis_power(&self, command: &str) -> Result<String, DriverError> {
        let run = self.run(command).await?;
        if run.success {
            return Ok(run.stdout.trim().to_owned());
        }
        Err(self.failure(&run))
    }

    /// Why a run failed, from what ipmitool said.
    fn failure(&self, run: &Run) -> DriverError {
        let said = |needle: &str| run.stderr.lines().find(|l| l.contains(needle));
        if let Some(line) = said("RAKP 2 HMAC is invalid")
            .or_else(|| said("unauthorized name"))
            .or_else(|| said("RAKP"))
        {
            return DriverError::Refused(format!(
                "the BMC refused the login of user {} ({})",
                shown(&self.username),
                shown(line.trim_start_matches(['>', ' ']))
            ));
        }
        if said("Get Auth Capabilities error").is_some()
            || said("Error issuing Get Channel Authentication").is_some()
        {
            return DriverError::Deadline(self.deadline);
        }
        let last = run
            .stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("it failed without a word");
        DriverError::Refused(format!("{IPMITOOL}: {}", shown(last.trim())))
    }
}

impl PowerDriver for Ipmi {
    /// The chassis' power: a BMC has one, whatever the outlet (`1`).
    async fn state(&self, _chassis: &str) -> Result<OutletState, DriverError> {
        let said = self.chassis_power("status").await?;
        Ok(match said.strip_prefix("Chassis Power is ") {
            Some("on") => OutletState::On,
            Some("off") => OutletState::Off,
            _ => OutletState::Other(crate::error::label(&said)),
        })
    }

    async fn switch(&self, outlet: &str, on: bool) -> Result<String, DriverError> {
        let said = self.chassis_power(if on { "on" } else { "off" }).await?;
        let wanted = if on {
            OutletState::On
        } else {
            OutletState::Off
        };
        settle("the chassis", wanted, || self.state(outlet)).await?;
        Ok(crate::error::label(&said))
    }
}
