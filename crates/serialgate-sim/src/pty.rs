//! A pseudo-terminal pair: the slave stands in for a serial device such as
//! `/dev/ttyUSB0`, the master is where a simulated device plays.

use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use nix::fcntl::{OFlag, open};
use nix::pty::{PtyMaster, grantpt, posix_openpt, ptsname_r, unlockpt};
use nix::sys::stat::Mode;
use nix::sys::termios::{SetArg, cfmakeraw, tcgetattr, tcsetattr};
use tokio::io::unix::AsyncFd;

/// A pseudo-terminal pair, master side async.
///
/// Both descriptors are opened with `O_CLOEXEC` (atomically, so a daemon
/// spawned by another thread at the same moment cannot inherit them): when
/// this `Pty` is dropped, the master really closes, and whoever has the slave
/// open sees an unplug (`read` returns 0 or `EIO`). The slave is put in raw
/// mode (no echo, no CR/LF translation, no signals) and kept open for the
/// whole life of the `Pty`, so that reading the master does not fail with
/// `EIO` while no one else has the slave open, e.g. while a daemon reopens it.
#[derive(Debug)]
pub struct Pty {
    master: AsyncFd<PtyMaster>,
    /// Held open only so that the master keeps working; never read.
    _slave: OwnedFd,
    slave_path: PathBuf,
}

impl Pty {
    /// Opens a new pair. Must be called within a tokio runtime.
    pub fn open() -> io::Result<Pty> {
        let flags = OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC;
        let master = posix_openpt(flags | OFlag::O_NONBLOCK)?;
        grantpt(&master)?;
        unlockpt(&master)?;
        let slave_path = PathBuf::from(ptsname_r(&master)?);
        let slave = open(&slave_path, flags, Mode::empty())?;
        let mut termios = tcgetattr(&slave)?;
        cfmakeraw(&mut termios);
        tcsetattr(&slave, SetArg::TCSANOW, &termios)?;
        // SAFETY: `PtyMaster` owns its descriptor and nothing replaces or
        // closes it while the `AsyncFd` holds it.
        let master = unsafe { AsyncFd::register(master) }.map_err(io::Error::from)?;
        Ok(Pty {
            master,
            _slave: slave,
            slave_path,
        })
    }

    /// The slave's path (`/dev/pts/N`), what a daemon opens as its device.
    pub fn slave_path(&self) -> &Path {
        &self.slave_path
    }

    /// The output speed the slave's user set (the terminal's side of the
    /// line), from the kernel's termios2 (which also holds rates set as
    /// BOTHER); `None` if it cannot be read.
    pub fn peer_speed(&self) -> Option<u32> {
        use std::os::fd::AsRawFd;
        // SAFETY: an all-zero termios2 is a valid value of this plain C struct.
        let mut termios: nix::libc::termios2 = unsafe { std::mem::zeroed() };
        // SAFETY: the slave descriptor is open for the life of `self`, and
        // `termios` is a termios2 the call writes.
        let r =
            unsafe { nix::libc::ioctl(self._slave.as_raw_fd(), nix::libc::TCGETS2, &mut termios) };
        (r == 0).then_some(termios.c_ospeed)
    }

    /// Reads what was written to the slave: at least one byte, waiting for
    /// it. Cancel-safe.
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut ready = self.master.readable().await?;
            if let Ok(result) = ready.try_io(|master| master.get_ref().read(buf)) {
                return result;
            }
        }
    }

    /// Writes some of `buf` for the slave to read, waiting until the slave's
    /// input queue has room. Cancel-safe: nothing is written unless it
    /// returns.
    pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        loop {
            let mut ready = self.master.writable().await?;
            if let Ok(result) = ready.try_io(|master| master.get_ref().write(buf)) {
                return result;
            }
        }
    }

    /// Writes all of `buf`, as fast as the reader of the slave takes it.
    pub async fn write_all(&self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write(buf).await? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => buf = &buf[n..],
            }
        }
        Ok(())
    }
}

/// A symbolic link to a pty's slave, removed on drop (if it still points
/// there), like the `/dev/serial/by-id` link of a USB adapter.
#[derive(Debug)]
pub struct Link {
    path: PathBuf,
    target: PathBuf,
}

impl Link {
    /// Makes `path` a symlink to `target`, replacing a symlink already there
    /// atomically. Refuses to replace anything that is not a symlink.
    pub fn create(path: &Path, target: &Path) -> io::Result<Link> {
        match fs::symlink_metadata(path) {
            Ok(meta) if !meta.file_type().is_symlink() => {
                let message = format!("{} exists and is not a symlink", path.display());
                return Err(io::Error::new(io::ErrorKind::AlreadyExists, message));
            }
            Ok(_) => {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                let temporary = path.with_file_name(format!(".{name}.{}", std::process::id()));
                let _ = fs::remove_file(&temporary);
                symlink(target, &temporary)?;
                fs::rename(&temporary, path).inspect_err(|_| {
                    let _ = fs::remove_file(&temporary);
                })?;
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => symlink(target, path)?,
            Err(error) => return Err(error),
        }
        Ok(Link {
            path: path.to_owned(),
            target: target.to_owned(),
        })
    }

    /// Where the link is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if fs::read_link(&self.path).is_ok_and(|target| target == self.target) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    use std::os::fd::AsFd;

    #[tokio::test]
    async fn both_ends_are_close_on_exec_and_the_slave_is_raw() {
        let pty = Pty::open().unwrap();
        for fd in [pty.master.get_ref().as_fd(), pty._slave.as_fd()] {
            let flags = FdFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFD).unwrap());
            assert!(flags.contains(FdFlag::FD_CLOEXEC));
        }
        let termios = tcgetattr(&pty._slave).unwrap();
        let local = nix::sys::termios::LocalFlags::ECHO | nix::sys::termios::LocalFlags::ICANON;
        assert!(!termios.local_flags.intersects(local));
        assert!(pty.slave_path().starts_with("/dev/pts/"));
    }

    #[tokio::test]
    async fn link_replaces_a_symlink_and_is_removed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ttyUSB-sim");
        symlink("/nonexistent", &path).unwrap();
        let link = Link::create(&path, Path::new("/dev/pts/999")).unwrap();
        assert_eq!(fs::read_link(&path).unwrap(), Path::new("/dev/pts/999"));
        drop(link);
        assert!(fs::symlink_metadata(&path).is_err());

        fs::write(&path, b"a file").unwrap();
        let error = Link::create(&path, Path::new("/dev/pts/999")).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).unwrap(), b"a file");
    }
}
