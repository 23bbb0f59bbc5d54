//! FRRouting as the device: its daemons (zebra, staticd, bgpd) started
//! by the test in a directory of its own, and its shell `vtysh`, which a
//! [`ProgramLine`](crate::program::ProgramLine) puts behind a serial line
//! as a router's console, or which the test runs directly (`vtysh -c`) to
//! see what the program itself prints.
//!
//! Isolation, so that tests run in parallel in one process and leave the
//! machine as they found it:
//!
//! - every path a daemon uses is given on its command line: vty sockets
//!   (`--vty_socket`), zebra's API socket (`-z`), pid file (`-i`),
//!   configuration (`-f`) and log (`--log`), all in the instance's
//!   directory. No `-N` pathspace: it would leave
//!   `/var/run/frr/<name>/` behind, and the explicit paths already keep
//!   instances apart;
//! - no TCP: `-P 0` (no vty port), and bgpd `-p 0` (no BGP listener), so
//!   two instances never race for port 2601 or 179;
//! - zebra runs in a network and UTS namespace of its own, which staticd
//!   and bgpd join: routes the test configures go into that namespace's
//!   kernel table, not the machine's (zebra installs a `Null0` route into
//!   the kernel, and a next hop resolves over the machine's own
//!   interfaces), BGP sessions dial nowhere, and the hostname is
//!   [`HOSTNAME`] whatever the machine is called;
//! - vtysh reads `vtysh.conf` from the instance's directory
//!   (`--config_dir`), which turns on the integrated `frr.conf` (what
//!   `write memory` writes, there too) and names the host, and keeps its
//!   history there (`-H`).
//!
//! The daemons drop privileges to the `frr` user (they refuse to run as a
//! user outside the `frrvty` group), so the directory is theirs. Creating
//! namespaces needs root, as the tests have here and in CI.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{PermissionsExt, chown};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

use crate::program::Program;
use crate::wait;

/// The router's hostname: vtysh's prompt is `r1#`.
pub const HOSTNAME: &str = "r1";

/// Where Debian's `frr` package puts the daemons.
const DAEMON_DIR: &str = "/usr/lib/frr";
/// The shell.
pub const VTYSH: &str = "/usr/bin/vtysh";
/// The daemons an instance runs, zebra first (the others connect to it).
const DAEMONS: [&str; 3] = ["zebra", "staticd", "bgpd"];
/// How long the daemons may take to answer after starting.
const STARTUP: Duration = Duration::from_secs(30);
/// How long a daemon may take to exit after SIGTERM before it is killed.
const SHUTDOWN: Duration = Duration::from_secs(5);

/// Whether FRRouting is installed (its daemons, vtysh and the `frr`
/// user); says what is missing when it is not.
pub fn installed() -> Result<(), String> {
    let mut missing: Vec<String> = DAEMONS
        .iter()
        .map(|d| format!("{DAEMON_DIR}/{d}"))
        .chain([VTYSH.to_owned()])
        .filter(|p| !Path::new(p).exists())
        .collect();
    if !matches!(nix::unistd::User::from_name("frr"), Ok(Some(_))) {
        missing.push("the frr user".into());
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "FRRouting is not installed: no {}",
            missing.join(", ")
        ))
    }
}

/// A running FRRouting instance; stops its daemons when dropped.
pub struct Frr {
    dir: TempDir,
    daemons: Vec<(&'static str, Child)>,
}

impl std::fmt::Debug for Frr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frr")
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

impl Frr {
    /// Starts zebra, staticd and bgpd in a new directory and namespace,
    /// and returns once vtysh reaches all three.
    pub async fn start() -> io::Result<Frr> {
        installed().map_err(io::Error::other)?;
        let dir = tempfile::tempdir()?;
        let user = nix::unistd::User::from_name("frr")
            .map_err(io::Error::other)?
            .ok_or_else(|| io::Error::other("no frr user"))?;
        chown(dir.path(), Some(user.uid.as_raw()), Some(user.gid.as_raw()))?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
        std::fs::write(
            dir.path().join("vtysh.conf"),
            format!("service integrated-vtysh-config\nhostname {HOSTNAME}\n"),
        )?;
        let mut frr = Frr {
            dir,
            daemons: Vec::new(),
        };
        let zebra = frr.spawn("zebra", Namespace::New)?;
        // staticd and bgpd connect to zebra's API socket, and join its
        // namespaces by its pid.
        frr.ready("zebra", &["zebra.vty", "zserv.api"]).await?;
        let ns = Namespace::Join {
            net: File::open(format!("/proc/{zebra}/ns/net"))?.into(),
            uts: File::open(format!("/proc/{zebra}/ns/uts"))?.into(),
        };
        frr.spawn("staticd", ns.try_clone()?)?;
        frr.spawn("bgpd", ns)?;
        frr.ready("staticd", &["staticd.vty"]).await?;
        frr.ready("bgpd", &["bgpd.vty"]).await?;
        // The sockets are there; vtysh must reach every daemon through them.
        let all = DAEMONS.join(" ");
        wait::until(STARTUP, || async {
            // `show daemons` lists them in vtysh's order: zebra bgpd staticd.
            match frr.vtysh_c(&["show daemons"]).await {
                Ok(out)
                    if DAEMONS
                        .iter()
                        .all(|d| out.split_whitespace().any(|w| w == *d)) =>
                {
                    Ok(())
                }
                Ok(out) => Err(out),
                Err(e) => Err(e.to_string()),
            }
        })
        .await
        .map_err(|seen| io::Error::other(format!("vtysh does not reach {all}: {seen}")))?;
        Ok(frr)
    }

    /// Starts one daemon in the foreground, its paths in the directory.
    fn spawn(&mut self, name: &'static str, ns: Namespace) -> io::Result<u32> {
        let dir = self.dir.path();
        let path = |file: &str| dir.join(file);
        let mut command = Command::new(format!("{DAEMON_DIR}/{name}"));
        command
            .arg("--vty_socket")
            .arg(dir)
            .arg("-z")
            .arg(path("zserv.api"))
            .arg("-i")
            .arg(path(&format!("{name}.pid")))
            .arg("-f")
            .arg(path(&format!("{name}.conf")))
            .arg("--log")
            .arg(format!("file:{}", path(&format!("{name}.log")).display()))
            .args(["-u", "frr", "-g", "frr", "-P", "0"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(path(&format!("{name}.stderr")))?);
        if name == "bgpd" {
            command.args(["-p", "0"]);
        }
        // SAFETY: between fork and exec the closures call only
        // async-signal-safe system calls (unshare, sethostname, setns) on
        // memory and descriptors prepared before the fork.
        match ns {
            Namespace::New => unsafe {
                command.pre_exec(|| {
                    if libc::unshare(libc::CLONE_NEWNET | libc::CLONE_NEWUTS) < 0
                        || libc::sethostname(HOSTNAME.as_ptr().cast(), HOSTNAME.len()) < 0
                    {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                });
            },
            Namespace::Join { net, uts } => unsafe {
                command.pre_exec(move || {
                    for (fd, kind) in [(&net, libc::CLONE_NEWNET), (&uts, libc::CLONE_NEWUTS)] {
                        if libc::setns(fd.as_raw_fd(), kind) < 0 {
                            return Err(io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            },
        }
        let child = command.spawn()?;
        let pid = child.id();
        self.daemons.push((name, child));
        Ok(pid)
    }

    /// Waits until `name` has made each of `sockets` (it listens once it
    /// has), failing at once if it exited.
    async fn ready(&mut self, name: &str, sockets: &[&str]) -> io::Result<()> {
        let dir = self.dir.path().to_owned();
        let seen = wait::until(STARTUP, || {
            let exited = self
                .daemons
                .iter_mut()
                .find(|(n, _)| *n == name)
                .and_then(|(_, child)| child.try_wait().ok().flatten());
            let missing: Vec<&str> = sockets
                .iter()
                .copied()
                .filter(|s| !dir.join(s).exists())
                .collect();
            std::future::ready(match (exited, missing.is_empty()) {
                (Some(status), _) => Ok(Err(format!("{name} exited ({status})"))),
                (None, true) => Ok(Ok(())),
                (None, false) => Err(format!("no {} yet", missing.join(", "))),
            })
        })
        .await;
        let problem = match seen {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(exited)) => exited,
            Err(waiting) => waiting,
        };
        let stderr =
            std::fs::read_to_string(dir.join(format!("{name}.stderr"))).unwrap_or_default();
        let log = std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
        Err(io::Error::other(format!(
            "{name} did not start: {problem}\nstderr: {stderr}\nlog: {log}"
        )))
    }

    /// The instance's directory (sockets, logs, `vtysh.conf`, `frr.conf`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The integrated configuration `write memory` writes.
    pub fn config_file(&self) -> PathBuf {
        self.dir.path().join("frr.conf")
    }

    /// vtysh's arguments that point it at this instance.
    fn vtysh_args(&self) -> Vec<std::ffi::OsString> {
        let dir = self.dir.path();
        vec![
            "--vty_socket".into(),
            dir.into(),
            "--config_dir".into(),
            dir.into(),
            "-H".into(),
            dir.join("vtysh_history").into(),
        ]
    }

    /// vtysh on this instance as a console's program (for a
    /// [`ProgramLine`](crate::program::ProgramLine)): started privileged
    /// (`r1#`), paging off as a serial login gets it (no `VTYSH_PAGER`).
    pub fn vtysh(&self) -> Program {
        self.vtysh_args()
            .into_iter()
            .fold(Program::new(VTYSH), Program::arg)
            .current_dir(self.dir.path())
    }

    /// Runs vtysh directly with `commands` (one `-c` each, run in order
    /// in one session) and returns what it printed, stdout and stderr
    /// interleaved as a terminal shows them; an error if it could not run
    /// or exited with a failure (a command it refused).
    pub async fn vtysh_c(&self, commands: &[&str]) -> io::Result<String> {
        let (status, out) = self.vtysh_output(commands).await?;
        if !status.success() {
            return Err(io::Error::other(format!(
                "vtysh {commands:?}: {status}: {out}"
            )));
        }
        Ok(out)
    }

    /// As [`Frr::vtysh_c`], but a refused command is no error: its exit
    /// status and what it printed (vtysh exits 1 after `% Unknown
    /// command`, and prints `ospfd is not running` on stderr).
    pub async fn vtysh_output(
        &self,
        commands: &[&str],
    ) -> io::Result<(std::process::ExitStatus, String)> {
        let (read, write) = nix::unistd::pipe()?;
        let mut command = Command::new(VTYSH);
        command.args(self.vtysh_args());
        for c in commands {
            command.arg("-c").arg(c);
        }
        command
            .env_remove("VTYSH_PAGER")
            .stdin(Stdio::null())
            .stdout(write.try_clone()?)
            .stderr(write);
        // Our copy of the pipe's write end goes with `command`, so that
        // reading ends when vtysh exits.
        tokio::task::spawn_blocking(move || {
            let mut child = command.spawn()?;
            drop(command);
            let mut out = Vec::new();
            io::Read::read_to_end(&mut File::from(read), &mut out)?;
            let status = child.wait()?;
            Ok((status, String::from_utf8_lossy(&out).into_owned()))
        })
        .await
        .map_err(io::Error::other)?
    }
}

impl Drop for Frr {
    /// SIGTERM, so that each daemon removes what it made (its crash-log
    /// directory under `/var/tmp/frr`), then SIGKILL for one that hangs.
    fn drop(&mut self) {
        for (_, child) in self.daemons.iter().rev() {
            // SAFETY: kill signals a process this instance started and
            // has not reaped yet; no memory is involved.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
        }
        for (_, child) in self.daemons.iter_mut().rev() {
            let gone = wait::until_blocking(SHUTDOWN, || match child.try_wait() {
                Ok(Some(_)) | Err(_) => Ok(()),
                Ok(None) => Err(()),
            });
            if gone.is_err() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// The namespaces a daemon runs in: new ones (zebra), or zebra's.
enum Namespace {
    New,
    Join { net: OwnedFd, uts: OwnedFd },
}

impl Namespace {
    fn try_clone(&self) -> io::Result<Namespace> {
        match self {
            Namespace::New => Ok(Namespace::New),
            Namespace::Join { net, uts } => Ok(Namespace::Join {
                net: net.try_clone()?,
                uts: uts.try_clone()?,
            }),
        }
    }
}
