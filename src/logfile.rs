//! The files the daemon appends to under `log_dir` (the transcripts and the
//! audit trail), opened, rotated and read so that nothing planted there can
//! redirect them: every name is resolved in a directory held open, never
//! through a symbolic link (`O_NOFOLLOW`, at the file, at its rotated
//! names, at a subdirectory), never onto a file with other hard links or
//! that is not a regular file. Directories others may write to are refused
//! (they could plant such files), and what the daemon creates is for its
//! user and group only (files 640, directories 750, whatever the umask).

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};

/// Mode of the log files the daemon creates: its user and group read them.
pub const FILE_MODE: u32 = 0o640;
/// Mode of the directories the daemon creates under `log_dir`.
pub const DIR_MODE: u32 = 0o750;

/// When a log file is rotated and how many rotated files are kept
/// (`log_max`, `log_keep`): `<name>` → `<name>.1` → `<name>.2` …
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// Rotate once the file reaches this size (the caller picks the
    /// boundary: a line, a record).
    pub max_bytes: u64,
    /// Rotated files kept; 0: the full file is deleted.
    pub keep: usize,
}

/// Checks that a directory the daemon writes in is not open to others:
/// nobody but its owner may write to it, and its owner is the user the
/// daemon runs as (or root). `mode` and `owner` are its `stat` fields. The
/// error says which `chmod` or `chown` fixes it.
pub fn check_private_dir(path: &Path, mode: u32, owner: u32) -> Result<(), String> {
    let shown = path.display();
    if mode & 0o022 != 0 {
        return Err(format!(
            "{shown} is writable by other users (mode {:o}), who could plant links or files there \
             to redirect the daemon's logs: chmod go-w {shown}",
            mode & 0o7777
        ));
    }
    // SAFETY: geteuid(2) takes nothing and cannot fail.
    let me = unsafe { libc::geteuid() };
    if me != 0 && owner != me && owner != 0 {
        return Err(format!(
            "{shown} belongs to uid {owner}, not to the user serialgate runs as (uid {me}), \
             who may change it at any time: chown {me} {shown}, or pick another log_dir"
        ));
    }
    Ok(())
}

fn error(kind: io::ErrorKind, message: String) -> io::Error {
    io::Error::new(kind, message)
}

fn file_type(stat: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits())
}

/// A directory of log files, held open: names in it are resolved from this
/// handle, so replacing the directory (or a parent) by a link later changes
/// nothing.
#[derive(Debug)]
pub struct LogDir {
    fd: OwnedFd,
    path: PathBuf,
}

impl LogDir {
    /// Opens `path` (the configured `log_dir`; the operator chose it, so a
    /// link there is followed), creating it (mode 750) if missing, and
    /// refuses it when others may write to it.
    pub fn open(path: &Path) -> io::Result<LogDir> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(path)
            .map_err(|e| {
                error(
                    e.kind(),
                    format!("cannot create the log directory {}: {e}", path.display()),
                )
            })?;
        let fd = nix::fcntl::open(
            path,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            error(
                io::Error::from(e).kind(),
                format!("cannot open the log directory {}: {e}", path.display()),
            )
        })?;
        LogDir::checked(fd, path.to_owned())
    }

    fn checked(fd: OwnedFd, path: PathBuf) -> io::Result<LogDir> {
        let stat = nix::sys::stat::fstat(&fd)?;
        check_private_dir(&path, stat.st_mode, stat.st_uid)
            .map_err(|e| error(io::ErrorKind::PermissionDenied, e))?;
        Ok(LogDir { fd, path })
    }

    /// Opens the subdirectory `name`, creating it (mode 750) if missing.
    /// A link (or anything but a directory) there is refused.
    pub fn subdir(&self, name: &str) -> io::Result<LogDir> {
        let path = self.path.join(name);
        match nix::sys::stat::mkdirat(&self.fd, name, Mode::from_bits_truncate(DIR_MODE)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => {
                return Err(error(
                    io::Error::from(e).kind(),
                    format!("cannot create {}: {e}", path.display()),
                ));
            }
        }
        let fd = nix::fcntl::openat(
            &self.fd,
            name,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| self.refusal(name, e, SFlag::S_IFDIR))?;
        LogDir::checked(fd, path)
    }

    /// The directory's path, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the log file `name` for reading, refusing a link or anything
    /// but a regular file.
    pub fn open_read(&self, name: &str) -> io::Result<File> {
        let fd = nix::fcntl::openat(
            &self.fd,
            name,
            OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| self.refusal(name, e, SFlag::S_IFREG))?;
        let stat = nix::sys::stat::fstat(&fd)?;
        if file_type(&stat) != SFlag::S_IFREG {
            return Err(self.not_a(name, "file"));
        }
        Ok(File::from(fd))
    }

    /// Opens `name` for appending (creating it, mode 640): a link, a file
    /// with other hard links, or anything but a regular file is refused; an
    /// existing file others may read is made private first.
    fn open_append(&self, name: &str) -> io::Result<File> {
        let fd = nix::fcntl::openat(
            &self.fd,
            name,
            OFlag::O_WRONLY
                | OFlag::O_APPEND
                | OFlag::O_CREAT
                | OFlag::O_NOFOLLOW
                | OFlag::O_NONBLOCK
                | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(FILE_MODE),
        )
        .map_err(|e| self.refusal(name, e, SFlag::S_IFREG))?;
        let stat = nix::sys::stat::fstat(&fd)?;
        let path = self.path.join(name);
        if file_type(&stat) != SFlag::S_IFREG {
            return Err(self.not_a(name, "file"));
        }
        if stat.st_nlink > 1 {
            return Err(error(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} has {} hard links: it may be another file under a second name, and \
                     serialgate only appends to files of its own: remove it (rm {})",
                    path.display(),
                    stat.st_nlink,
                    path.display()
                ),
            ));
        }
        if stat.st_mode & 0o027 != 0 {
            let private = stat.st_mode & FILE_MODE;
            nix::sys::stat::fchmod(&fd, Mode::from_bits_truncate(private))?;
            tracing::warn!(
                "{} was open to other users (mode {:o}); made it {private:o}",
                path.display(),
                stat.st_mode & 0o7777
            );
        }
        Ok(File::from(fd))
    }

    /// Replaces the file `name` with `bytes` at once: written to
    /// `name.new` (mode 600: it may hold what only the daemon should
    /// read), synced, then renamed over `name`, so a reader or a crash
    /// sees the old file or the new one, never half of one. Whatever was
    /// left at `name.new` is unlinked first (a link planted there is
    /// removed, never followed); a directory there is refused.
    pub fn replace(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let staged = format!("{name}.new");
        let _ = self.remove(&staged);
        let fd = nix::fcntl::openat(
            &self.fd,
            staged.as_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        )
        .map_err(|e| self.refusal(&staged, e, SFlag::S_IFREG))?;
        let mut file = File::from(fd);
        file.write_all(bytes)?;
        file.sync_data()?;
        self.rename(&staged, name).map_err(|e| {
            error(
                io::Error::from(e).kind(),
                format!("cannot replace {}: {e}", self.path.join(name).display()),
            )
        })
    }

    /// The error for a name that could not be opened as a `want` (a
    /// regular file or a directory): a link or something else there gets a
    /// message saying so and what to do.
    fn refusal(&self, name: &str, e: Errno, want: SFlag) -> io::Error {
        let path = self.path.join(name);
        let what = if want == SFlag::S_IFDIR {
            "directory"
        } else {
            "file"
        };
        match self.kind_of(name) {
            Some(SFlag::S_IFLNK) => self.link_error(name),
            Some(kind) if kind != want => self.not_a(name, what),
            _ => error(
                io::Error::from(e).kind(),
                format!("cannot open {}: {e}", path.display()),
            ),
        }
    }

    fn link_error(&self, name: &str) -> io::Error {
        let path = self.path.join(name);
        error(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is a symbolic link; serialgate never writes or reads through links in its log \
                 directory (one planted there redirects the log to another file): remove it \
                 (rm {}) and find out who made it",
                path.display(),
                path.display()
            ),
        )
    }

    fn not_a(&self, name: &str, what: &str) -> io::Error {
        let path = self.path.join(name);
        error(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a regular {what}; move it out of the log directory",
                path.display()
            ),
        )
    }

    /// What `name` is, without following a link; `None` if it is missing.
    fn kind_of(&self, name: &str) -> Option<SFlag> {
        nix::sys::stat::fstatat(&self.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW)
            .ok()
            .map(|s| file_type(&s))
    }

    fn rename(&self, from: &str, to: &str) -> nix::Result<()> {
        nix::fcntl::renameat(&self.fd, from, &self.fd, to)
    }

    fn remove(&self, name: &str) -> nix::Result<()> {
        nix::unistd::unlinkat(&self.fd, name, nix::unistd::UnlinkatFlags::NoRemoveDir)
    }
}

/// One log file in a [`LogDir`], appended to and rotated by size. The
/// caller decides where a rotation may cut (a line, a record) by calling
/// [`rotate`](Self::rotate) when [`rotation_due`](Self::rotation_due).
#[derive(Debug)]
pub struct LogFile {
    dir: Arc<LogDir>,
    name: String,
    file: File,
    size: u64,
    rotation: Rotation,
}

impl LogFile {
    /// Opens (or creates) `dir/name` for appending; see [`LogDir`] for what
    /// is refused.
    pub fn open(dir: Arc<LogDir>, name: &str, rotation: Rotation) -> io::Result<LogFile> {
        let file = dir.open_append(name)?;
        let size = file.metadata()?.len();
        Ok(LogFile {
            dir,
            name: name.to_owned(),
            file,
            size,
            rotation,
        })
    }

    /// The file's path, for messages.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join(&self.name)
    }

    /// Appends `bytes`.
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.size += bytes.len() as u64;
        Ok(())
    }

    /// Whether `more` bytes appended now would reach the rotation size.
    pub fn full_after(&self, more: u64) -> bool {
        self.size.saturating_add(more) >= self.rotation.max_bytes
    }

    /// Whether the file reached the rotation size.
    pub fn rotation_due(&self) -> bool {
        self.full_after(0)
    }

    /// Flushes what was written.
    pub fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }

    /// `<name>` → `<name>.1` → `<name>.2` …, keeping `keep` rotated files,
    /// then a fresh `<name>`. Renames and removals act on names in the
    /// directory, never on what a link there points to; a link found at a
    /// rotated name is removed and reported.
    pub fn rotate(&mut self) -> io::Result<()> {
        self.file.flush()?;
        let keep = self.rotation.keep;
        let rotated = |i: usize| format!("{}.{i}", self.name);
        if keep == 0 {
            self.dir.remove(&self.name)?;
        } else {
            for i in 1..=keep {
                let name = rotated(i);
                if self.dir.kind_of(&name) == Some(SFlag::S_IFLNK) {
                    tracing::warn!(
                        "{} is a symbolic link, not a log serialgate rotated (someone may be \
                         trying to redirect it); removed the link, not what it points to",
                        self.dir.path().join(&name).display()
                    );
                    self.dir.remove(&name)?;
                }
            }
            match self.dir.remove(&rotated(keep)) {
                Ok(()) | Err(Errno::ENOENT) => {}
                Err(e) => return Err(e.into()),
            }
            for i in (1..keep).rev() {
                match self.dir.rename(&rotated(i), &rotated(i + 1)) {
                    Ok(()) | Err(Errno::ENOENT) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            self.dir.rename(&self.name, &rotated(1))?;
        }
        // Rotated: should the fresh file be refused, appends go on to the
        // old one (now rotated) until the next rotation is due.
        self.size = 0;
        self.file = self.dir.open_append(&self.name)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const EVERY: Rotation = Rotation {
        max_bytes: 10,
        keep: 2,
    };

    fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o750)).unwrap();
        dir
    }

    fn victim(dir: &Path) -> PathBuf {
        let target = dir.join("victim");
        std::fs::write(&target, "precious\n").unwrap();
        target
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn files_and_directories_are_created_private_whatever_the_umask() {
        let dir = private_dir();
        let logs = dir.path().join("a/b");
        let log_dir = LogDir::open(&logs).unwrap();
        let sub = Arc::new(log_dir.subdir("transcripts").unwrap());
        LogFile::open(sub, "x.log", EVERY).unwrap();
        // The umask may only take bits away from these.
        assert_eq!(mode(&logs) & !DIR_MODE, 0);
        assert_eq!(mode(&logs.join("transcripts")) & !DIR_MODE, 0);
        assert_eq!(mode(&logs.join("transcripts/x.log")) & !FILE_MODE, 0);
    }

    #[test]
    fn an_existing_file_open_to_others_is_made_private() {
        let dir = private_dir();
        let path = dir.path().join("old.log");
        std::fs::write(&path, "from an older version\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let log_dir = Arc::new(LogDir::open(dir.path()).unwrap());
        LogFile::open(log_dir, "old.log", EVERY).unwrap();
        assert_eq!(mode(&path), 0o640);
    }

    #[test]
    fn a_link_a_hard_link_or_a_fifo_is_refused_and_left_alone() {
        let dir = private_dir();
        let target = victim(dir.path());
        let log_dir = Arc::new(LogDir::open(dir.path()).unwrap());
        std::os::unix::fs::symlink(&target, dir.path().join("s.log")).unwrap();
        let e = LogFile::open(log_dir.clone(), "s.log", EVERY).unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        assert!(e.to_string().contains("rm "), "{e}");
        let e = log_dir.open_read("s.log").unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        std::fs::hard_link(&target, dir.path().join("h.log")).unwrap();
        let e = LogFile::open(log_dir.clone(), "h.log", EVERY).unwrap_err();
        assert!(e.to_string().contains("2 hard links"), "{e}");
        nix::unistd::mkfifo(&dir.path().join("f.log"), Mode::from_bits_truncate(0o600)).unwrap();
        // Opening a FIFO for writing would block until a reader came.
        let e = LogFile::open(log_dir.clone(), "f.log", EVERY).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = log_dir.open_read("f.log").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
    }

    #[test]
    fn a_replaced_file_is_private_and_planted_links_are_never_followed() {
        let dir = private_dir();
        let target = victim(dir.path());
        let log_dir = LogDir::open(dir.path()).unwrap();
        // A link planted where the new file is staged, and one where the
        // file itself goes: both are replaced, the target never touched.
        std::os::unix::fs::symlink(&target, dir.path().join("state.new")).unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("state")).unwrap();
        log_dir.replace("state", b"one\n").unwrap();
        let path = dir.path().join("state");
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\n");
        assert_eq!(mode(&path), 0o600);
        log_dir.replace("state", b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        assert!(!dir.path().join("state.new").exists());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
    }

    #[test]
    fn a_linked_subdirectory_is_refused() {
        let dir = private_dir();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir(&logs).unwrap();
        std::os::unix::fs::symlink(&elsewhere, logs.join("transcripts")).unwrap();
        let e = LogDir::open(&logs)
            .unwrap()
            .subdir("transcripts")
            .unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
    }

    #[test]
    fn a_directory_others_may_write_to_is_refused_with_the_chmod() {
        let dir = private_dir();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        for bad in [0o777, 0o1777, 0o770] {
            std::fs::set_permissions(&open, std::fs::Permissions::from_mode(bad)).unwrap();
            let e = LogDir::open(&open).unwrap_err();
            assert!(
                e.to_string()
                    .contains(&format!("chmod go-w {}", open.display())),
                "{e}"
            );
        }
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        LogDir::open(&open).unwrap();
    }

    #[test]
    fn rotation_keeps_n_files_and_replaces_links_without_following_them() {
        let dir = private_dir();
        let target = victim(dir.path());
        std::os::unix::fs::symlink(&target, dir.path().join("a.log.1")).unwrap();
        let log_dir = Arc::new(LogDir::open(dir.path()).unwrap());
        let mut log = LogFile::open(log_dir, "a.log", EVERY).unwrap();
        for i in 0..4 {
            log.append(format!("record {i:02}\n").as_bytes()).unwrap();
            assert!(log.rotation_due());
            log.rotate().unwrap();
        }
        let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert_eq!(read("a.log.1"), "record 03\n");
        assert_eq!(read("a.log.2"), "record 02\n");
        assert!(!dir.path().join("a.log.3").exists());
        assert_eq!(read("a.log"), "");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
    }

    #[test]
    fn keeping_none_deletes_the_full_file() {
        let dir = private_dir();
        let log_dir = Arc::new(LogDir::open(dir.path()).unwrap());
        let rotation = Rotation {
            max_bytes: 10,
            keep: 0,
        };
        let mut log = LogFile::open(log_dir, "a.log", rotation).unwrap();
        log.append(b"0123456789\n").unwrap();
        log.rotate().unwrap();
        log.append(b"next\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.log")).unwrap(),
            "next\n"
        );
        assert!(!dir.path().join("a.log.1").exists());
    }
}
