//! A server's BMC over IPMI LAN: OpenIPMI's `ipmi_sim` (Debian
//! `openipmi`), run by the test on a loopback UDP port with one admin
//! user, RMCP+ (IPMI v2.0) as a real BMC speaks it. Its chassis power is
//! its chassis control program's: a shell script the kit writes, which
//! keeps the power (`1` or `0`) in a file, as ipmi_sim's own example
//! does in front of real hardware.
//!
//! The test observes the chassis through that script's effect
//! ([`IpmiBmc::chassis_on`], the file) and wires it to a simulated device
//! with [`crate::pdu::OutletWatcher::follow_with`].

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Where Debian installs the simulator.
pub const IPMI_SIM: &str = "/usr/bin/ipmi_sim";
/// The BMC user.
pub const USER: &str = "admin";
/// Its password (ipmi_sim keeps at most 16 bytes, IPMI v1.5's size).
pub const PASSWORD: &str = "ipmi-secret-0123";

/// ipmi_sim on `127.0.0.1:`[`port`](Self::port) (UDP). Dropping it stops
/// the simulator.
pub struct IpmiBmc {
    sim: Child,
    port: u16,
    power: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for IpmiBmc {
    fn drop(&mut self) {
        let _ = self.sim.kill();
        let _ = self.sim.wait();
    }
}

impl IpmiBmc {
    /// Starts the simulator with its chassis on; `None` (after
    /// [`crate::skip::skipped`]) where ipmi_sim or ipmitool is missing.
    pub async fn start() -> Option<IpmiBmc> {
        if !Path::new(IPMI_SIM).exists() || Command::new("ipmitool").arg("-V").output().is_err() {
            crate::skip::skipped(
                "ipmi_sim or ipmitool is not installed (Debian: apt install openipmi ipmitool; .ci/install-deps)",
            );
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.local_addr())
            .expect("a free UDP port")
            .port();
        let power = dir.path().join("power");
        std::fs::write(&power, "1\n").expect("write the chassis power");
        let control = dir.path().join("chassis-control");
        // ipmi_sim runs it as `chassis-control 0x20 get power` (printing
        // `power:1`) and `chassis-control 0x20 set power 0`.
        std::fs::write(
            &control,
            format!(
                "#!/bin/sh\nstate={}\nshift\nop=$1\nshift\n\
                 case $op in\n\
                 get) for p in \"$@\"; do [ \"$p\" = power ] && echo \"power:$(cat \"$state\")\"; done ;;\n\
                 set) while [ $# -ge 2 ]; do [ \"$1\" = power ] && echo \"$2\" > \"$state\"; shift 2; done ;;\n\
                 esac\n",
                power.display()
            ),
        )
        .expect("write the chassis control program");
        std::fs::set_permissions(
            &control,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("chmod");
        std::fs::write(
            dir.path().join("lan.conf"),
            format!(
                "name \"kit\"\nset_working_mc 0x20\n\
                 startlan 1\n  addr 127.0.0.1 {port}\n  priv_limit admin\n  allowed_auths_admin md5\n  guid a1b2c3d4e5f60718293a4b5c6d7e8f90\nendlan\n\
                 user 2 true \"{USER}\" \"{PASSWORD}\" admin 10 md5\n\
                 chassis_control \"{} 0x20\"\n",
                control.display()
            ),
        )
        .expect("write lan.conf");
        std::fs::write(
            dir.path().join("cmd.conf"),
            "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02\nmc_enable 0x20\n",
        )
        .expect("write the simulator's commands");
        let state = dir.path().join("state");
        std::fs::create_dir(&state).expect("the state directory");
        let sim = Command::new(IPMI_SIM)
            .current_dir(dir.path())
            .args(["-c", "lan.conf", "-f", "cmd.conf", "-s", "state", "-n"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ipmi_sim");
        let bmc = IpmiBmc {
            sim,
            port,
            power,
            _dir: dir,
        };
        crate::wait::eventually(
            "ipmi_sim answering ipmitool",
            Duration::from_secs(15),
            || {
                let bmc = &bmc;
                async move {
                    match bmc.ipmitool(&["chassis", "power", "status"]).await {
                        Ok(s) if s.trim() == "Chassis Power is on" => Ok(()),
                        Ok(s) | Err(s) => Err(s),
                    }
                }
            },
        )
        .await;
        Some(bmc)
    }

    /// The simulator's UDP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Whether the chassis is powered, as its control program left it.
    pub fn chassis_on(&self) -> Option<bool> {
        chassis_on_at(&self.power)
    }

    /// The path of the chassis power file, for a watcher that outlives
    /// a borrow of the BMC.
    pub fn power_file(&self) -> PathBuf {
        self.power.clone()
    }

    /// Runs ipmitool against the simulator as the admin user: its
    /// output, or its error output.
    async fn ipmitool(&self, args: &[&str]) -> Result<String, String> {
        let out = tokio::process::Command::new("ipmitool")
            .args(["-I", "lanplus", "-H", "127.0.0.1", "-p"])
            .arg(self.port.to_string())
            .args(["-U", USER, "-E", "-N", "1", "-R", "1", "-C", "3"])
            .args(args)
            .env("IPMI_PASSWORD", PASSWORD)
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }
}

/// Whether the chassis whose power file is `power` is on (see
/// [`IpmiBmc::chassis_on`]).
pub fn chassis_on_at(power: &Path) -> Option<bool> {
    match std::fs::read_to_string(power).ok()?.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}
