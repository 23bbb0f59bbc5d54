//! Hearing a local device path come back: an inotify watch on the path's
//! parent directory, so that a lost port reopens as soon as udev (or a
//! test's simulator) recreates its device node or `/dev/serial/by-id`
//! link, not only when the backoff timer fires.
//!
//! When the parent itself is missing (udev removes `/dev/serial/by-id`
//! with the last adapter) the nearest existing ancestor is watched, and
//! the watch moves down as the directories return. Only events naming the
//! next component of the path count; the path must then exist (a symlink's
//! target too) to be reported, so the deletion events of an unplug never
//! wake anyone.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::{Component, Path, PathBuf};

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// The inotify instance, as `AsyncFd` wants it (nix's `Inotify` offers
/// `AsFd` only).
struct Fd(Inotify);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// A watch for one device path to (re)appear. Events are queued by the
/// kernel from the moment it is made, so one made before an open attempt
/// hears a device that returns right after the attempt failed.
pub(super) struct PathWatch {
    fd: AsyncFd<Fd>,
    path: PathBuf,
    /// The directory watched now, its watch, and the name in it that
    /// leads to `path`.
    dir: PathBuf,
    wd: WatchDescriptor,
    next: OsString,
}

/// What in a watched directory can make the path appear: a node or link
/// created, renamed into place, or its permissions fixed (udev chmods a
/// new tty after creating it); and the directory itself going away.
fn flags() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
}

impl PathWatch {
    /// Starts watching for `path` (absolute). Fails when inotify is not
    /// available (e.g. `fs.inotify.max_user_instances` reached); the
    /// caller then relies on its timer alone.
    pub(super) fn new(path: &Path) -> io::Result<PathWatch> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?;
        let (dir, next) = nearest_existing(path)?;
        let wd = inotify.add_watch(&dir, flags())?;
        // SAFETY: `Fd` owns the inotify descriptor (an `OwnedFd` inside
        // nix's `Inotify`) for as long as the `AsyncFd` lives, and always
        // returns that same descriptor.
        let fd = unsafe { AsyncFd::register_with_interest(Fd(inotify), Interest::READABLE) }?;
        Ok(PathWatch {
            fd,
            path: path.to_owned(),
            dir,
            wd,
            next,
        })
    }

    /// Resolves once the path exists again after a change in its
    /// directory. Never resolves if reading the watch fails (the timer
    /// still runs).
    pub(super) async fn appeared(&mut self) {
        loop {
            let Ok(mut ready) = self.fd.readable().await else {
                return std::future::pending().await;
            };
            let events = match ready.get_inner().0.read_events() {
                Ok(events) => events,
                Err(nix::errno::Errno::EAGAIN) => {
                    ready.clear_ready();
                    continue;
                }
                Err(e) => {
                    tracing::debug!("reading the inotify watch on {}: {e}", self.dir.display());
                    return std::future::pending().await;
                }
            };
            let relevant = events.iter().any(|e| {
                e.wd == self.wd
                    && (e.mask.intersects(
                        AddWatchFlags::IN_DELETE_SELF
                            | AddWatchFlags::IN_MOVE_SELF
                            | AddWatchFlags::IN_IGNORED
                            | AddWatchFlags::IN_Q_OVERFLOW,
                    ) || e.name.as_deref() == Some(self.next.as_os_str()))
            }) || events
                .iter()
                .any(|e| e.mask.contains(AddWatchFlags::IN_Q_OVERFLOW));
            if !relevant {
                continue;
            }
            if std::fs::metadata(&self.path).is_ok() {
                return;
            }
            // A directory on the way came or went: watch the nearest one
            // that exists now.
            if let Err(e) = self.rewatch() {
                tracing::debug!("re-watching for {}: {e}", self.path.display());
                return std::future::pending().await;
            }
        }
    }

    fn rewatch(&mut self) -> io::Result<()> {
        let (dir, next) = nearest_existing(&self.path)?;
        if dir != self.dir {
            let inotify = &self.fd.get_ref().0;
            let _ = inotify.rm_watch(self.wd);
            self.wd = inotify.add_watch(&dir, flags())?;
            self.dir = dir;
        }
        self.next = next;
        Ok(())
    }
}

/// The deepest existing directory on the way to `path`, and the name in
/// it of the next component.
fn nearest_existing(path: &Path) -> io::Result<(PathBuf, OsString)> {
    let mut dir = path.to_owned();
    let next;
    loop {
        let name = match dir.components().next_back() {
            Some(Component::Normal(name)) => name.to_owned(),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} has no directory to watch", path.display()),
                ));
            }
        };
        if !dir.pop() {
            return Err(io::Error::other("no existing directory"));
        }
        if dir.is_dir() {
            next = name;
            break;
        }
    }
    Ok((dir, next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const DEADLINE: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn hears_the_path_created_later_and_ignores_others() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ttyUSB0");
        let mut watch = PathWatch::new(&path).unwrap();
        std::fs::write(dir.path().join("ttyUSB1"), b"").unwrap();
        // Another name in the directory does not wake the watch.
        assert!(
            tokio::time::timeout(Duration::from_millis(100), watch.appeared())
                .await
                .is_err()
        );
        std::fs::write(&path, b"").unwrap();
        tokio::time::timeout(DEADLINE, watch.appeared())
            .await
            .expect("the path appeared");
    }

    #[tokio::test]
    async fn follows_missing_directories_down() {
        let dir = tempfile::tempdir().unwrap();
        let by_id = dir.path().join("serial").join("by-id");
        let path = by_id.join("usb-FTDI-if00");
        let mut watch = PathWatch::new(&path).unwrap();
        let target = dir.path().join("ttyUSB0");
        std::fs::write(&target, b"").unwrap();
        let quiet = Duration::from_millis(100);
        // Each directory on the way moves the watch down, without waking.
        std::fs::create_dir(dir.path().join("serial")).unwrap();
        assert!(tokio::time::timeout(quiet, watch.appeared()).await.is_err());
        std::fs::create_dir(&by_id).unwrap();
        assert!(tokio::time::timeout(quiet, watch.appeared()).await.is_err());
        std::os::unix::fs::symlink(&target, &path).unwrap();
        tokio::time::timeout(DEADLINE, watch.appeared())
            .await
            .expect("the link appeared under new directories");
    }

    #[tokio::test]
    async fn a_dangling_link_is_not_the_device() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sw1");
        let mut watch = PathWatch::new(&path).unwrap();
        std::os::unix::fs::symlink(dir.path().join("nothing"), &path).unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(100), watch.appeared())
                .await
                .is_err()
        );
    }
}
