//! The `[server] files_dir`: the one directory file transfers read from
//! and write into. A file is named by a plain name, nothing else: no
//! directory, no `..`, no absolute path, no dot file; it is opened
//! relative to the directory's descriptor with `O_NOFOLLOW`, so a symlink
//! planted in the directory leads nowhere, and it must be a regular file.
//! A received file is written to a temporary name and renamed into place
//! (without replacing an existing file unless asked), so a failed
//! transfer leaves nothing behind.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, RenameFlags};
use nix::sys::stat::{Mode, SFlag};

use crate::error::{GateError, shown};

/// Largest file sent or received (a router image fits; a mistake does not
/// fill the daemon's memory).
pub const MAX_FILE: u64 = 256 * 1024 * 1024;
/// Longest file name.
pub const MAX_NAME: usize = 128;
/// What the files in the directory may hold in all unless `files_max` says
/// otherwise.
pub const DEFAULT_FILES_MAX: u64 = 2 * 1024 * 1024 * 1024;

/// The transfers' directory, opened.
pub struct FilesDir {
    fd: OwnedFd,
    path: PathBuf,
    /// The most its regular files may hold in all after a write.
    max_total: u64,
}

impl FilesDir {
    /// Opens `path` (the operator's setting; it may itself be a link),
    /// whose files may hold `max_total` bytes in all.
    pub fn open(path: &Path, max_total: u64) -> Result<FilesDir, GateError> {
        let fd = nix::fcntl::open(
            path,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            GateError::new(
                crate::error::ErrorCode::PortUnavailable,
                format!(
                    "the files_dir {} cannot be opened: {e}; the operator must create it",
                    path.display()
                ),
            )
        })?;
        Ok(FilesDir {
            fd,
            path: path.to_owned(),
            max_total,
        })
    }

    /// Reads the file `name` whole, refusing anything but a regular file
    /// in the directory itself.
    pub fn read(&self, name: &str) -> Result<Vec<u8>, GateError> {
        check_name(name)?;
        let fd = nix::fcntl::openat(
            &self.fd,
            name,
            OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::ELOOP => GateError::invalid(format!(
                "{} in files_dir is a symbolic link; links are not followed: copy the file itself into {}",
                shown(name),
                self.path.display()
            )),
            Errno::ENOENT => GateError::invalid(format!(
                "files_dir has no file {}; put it in {} first",
                shown(name),
                self.path.display()
            )),
            e => GateError::invalid(format!("{} cannot be opened: {e}", shown(name))),
        })?;
        let stat = nix::sys::stat::fstat(&fd)
            .map_err(|e| GateError::invalid(format!("{} cannot be read: {e}", shown(name))))?;
        if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
            return Err(GateError::invalid(format!(
                "{} in files_dir is not a regular file",
                shown(name)
            )));
        }
        let size = stat.st_size as u64;
        if size > MAX_FILE {
            return Err(GateError::invalid(format!(
                "{} is {size} bytes; at most {MAX_FILE} can be sent",
                shown(name)
            )));
        }
        let mut data = Vec::with_capacity(size as usize);
        File::from(fd)
            .take(MAX_FILE + 1)
            .read_to_end(&mut data)
            .map_err(|e| GateError::invalid(format!("{} cannot be read: {e}", shown(name))))?;
        Ok(data)
    }

    /// Whether `name` exists in the directory (as anything, a link too).
    pub fn exists(&self, name: &str) -> bool {
        nix::sys::stat::fstatat(&self.fd, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).is_ok()
    }

    /// Writes `data` as `name`: through a temporary file renamed into
    /// place, which replaces an existing `name` only with `overwrite` (and
    /// never a directory; a link there is replaced, not followed).
    pub fn write(&self, name: &str, data: &[u8], overwrite: bool) -> Result<(), GateError> {
        check_name(name)?;
        if !overwrite && self.exists(name) {
            return Err(exists(name));
        }
        let replaced = self.regular_size(name).unwrap_or(0);
        let after = self.total().saturating_sub(replaced) + data.len() as u64;
        if after > self.max_total {
            return Err(GateError::invalid(format!(
                "files_dir would hold {after} bytes with {} ({} bytes), more than its files_max of {}; \
                 remove files from {} first (nothing was saved)",
                shown(name),
                data.len(),
                self.max_total,
                self.path.display()
            )));
        }
        let temporary = format!(".{name}.partial-{}", std::process::id());
        let fd = nix::fcntl::openat(
            &self.fd,
            temporary.as_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o640),
        )
        .map_err(|e| GateError::invalid(format!("cannot create a file in files_dir: {e}")))?;
        let written = File::from(fd).write_all(data);
        let renamed = written
            .map_err(|e| GateError::invalid(format!("writing {} failed: {e}", shown(name))))
            .and_then(|()| {
                let flags = if overwrite {
                    RenameFlags::empty()
                } else {
                    RenameFlags::RENAME_NOREPLACE
                };
                nix::fcntl::renameat2(&self.fd, temporary.as_str(), &self.fd, name, flags).map_err(
                    |e| match e {
                        Errno::EEXIST => exists(name),
                        e => GateError::invalid(format!("saving {} failed: {e}", shown(name))),
                    },
                )
            });
        if renamed.is_err() {
            let _ = nix::unistd::unlinkat(
                &self.fd,
                temporary.as_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        }
        renamed
    }
}

impl FilesDir {
    /// How many bytes a new file may have before the directory passes its
    /// total: a receive stops (and cancels the sender) beyond it, instead
    /// of taking a whole file only to refuse it.
    pub fn room(&self) -> u64 {
        self.max_total.saturating_sub(self.total())
    }

    /// The size of `name` if it is a regular file in the directory.
    fn regular_size(&self, name: &str) -> Option<u64> {
        let stat =
            nix::sys::stat::fstatat(&self.fd, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
                .ok()?;
        (SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFREG)
            .then_some(stat.st_size as u64)
    }

    /// What the regular files directly in the directory hold (temporary
    /// files of transfers under way included).
    fn total(&self) -> u64 {
        let Ok(dir) = nix::dir::Dir::openat(
            &self.fd,
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) else {
            return 0;
        };
        dir.into_iter()
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().to_str().ok()?.to_owned();
                self.regular_size(&name)
            })
            .sum()
    }
}

fn exists(name: &str) -> GateError {
    GateError::invalid(format!(
        "files_dir already has {}; give another file name, or overwrite: true to replace it",
        shown(name)
    ))
}

/// Checks a file name given by a client: a plain name in files_dir.
pub fn check_name(name: &str) -> Result<(), GateError> {
    let why = if name.is_empty() {
        Some("it is empty")
    } else if name.len() > MAX_NAME {
        Some("it is too long")
    } else if name.contains('/') {
        Some("it has a '/': give a plain file name in files_dir, no directory")
    } else if name.starts_with('.') {
        Some("it starts with '.' (no dot files, no ..)")
    } else if name.chars().any(|c| c.is_control()) {
        Some("it has control characters")
    } else {
        None
    };
    match why {
        None => Ok(()),
        Some(why) => Err(GateError::invalid(format!(
            "{} is not a file name in files_dir: {why} (at most {MAX_NAME} bytes)",
            shown(name)
        ))),
    }
}

/// A safe file name from a name the device sent (YMODEM's header): its
/// last path component, letters, digits, `.`, `_`, `-` and `+` kept,
/// anything else `_`, no leading dot, at most [`MAX_NAME`] bytes; `None`
/// if nothing is left.
pub fn sanitize(name: &str) -> Option<String> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let clean = clean.trim_start_matches('.');
    let clean: String = clean.chars().take(MAX_NAME).collect();
    (!clean.is_empty() && clean.chars().any(|c| c != '_')).then_some(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_names() {
        for bad in [
            "",
            "../etc/passwd",
            "/etc/passwd",
            "a/b",
            ".hidden",
            "..",
            "a\nb",
            &"x".repeat(129),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        for good in ["c2960x.bin", "fw-1.2+3.itb", "crash info.txt"] {
            assert!(check_name(good).is_ok(), "{good:?}");
        }
        assert_eq!(sanitize("../../etc/passwd").as_deref(), Some("passwd"));
        assert_eq!(
            sanitize("C:\\dumps\\crash.txt").as_deref(),
            Some("crash.txt")
        );
        assert_eq!(sanitize("..hidden").as_deref(), Some("hidden"));
        assert_eq!(
            sanitize("we\u{1b}[2Jird;rm -rf").as_deref(),
            Some("we__2Jird_rm_-rf")
        );
        assert_eq!(sanitize("../.."), None);
        assert_eq!(sanitize("***"), None);
    }

    #[test]
    fn links_are_not_followed_and_files_are_not_replaced_unless_asked() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"s3cret").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
        std::fs::write(dir.path().join("img.bin"), b"image").unwrap();
        let files = FilesDir::open(dir.path(), DEFAULT_FILES_MAX).unwrap();
        assert_eq!(files.read("img.bin").unwrap(), b"image");
        let e = files.read("link").unwrap_err();
        assert!(e.message.contains("symbolic link"), "{e}");
        assert!(
            files
                .read("missing")
                .unwrap_err()
                .message
                .contains("has no file")
        );
        let e = files.write("img.bin", b"new", false).unwrap_err();
        assert!(e.message.contains("already has"), "{e}");
        files.write("img.bin", b"new", true).unwrap();
        assert_eq!(std::fs::read(dir.path().join("img.bin")).unwrap(), b"new");
        // A link in the way is replaced by the file, its target untouched.
        files.write("link", b"mine", true).unwrap();
        assert_eq!(
            std::fs::read(outside.path().join("secret")).unwrap(),
            b"s3cret"
        );
        assert!(
            !std::fs::symlink_metadata(dir.path().join("link"))
                .unwrap()
                .is_symlink()
        );
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
    }

    /// Files received one after another stop at files_max, with nothing
    /// saved and what to do said; a replaced file counts once; links and
    /// other files' targets outside count nothing.
    #[test]
    fn received_files_stop_at_the_directory_total() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("big"), vec![0u8; 4096]).unwrap();
        std::os::unix::fs::symlink(outside.path().join("big"), dir.path().join("link")).unwrap();
        let files = FilesDir::open(dir.path(), 1000).unwrap();
        files.write("a.bin", &[1; 400], false).unwrap();
        files.write("b.bin", &[2; 400], false).unwrap();
        let e = files.write("c.bin", &[3; 400], false).unwrap_err();
        assert!(
            e.message.contains("1200 bytes") && e.message.contains("files_max of 1000"),
            "{e}"
        );
        assert!(e.message.contains("remove files"), "{e}");
        assert!(!files.exists("c.bin"));
        // Replacing a file counts its new size only.
        files.write("b.bin", &[2; 600], true).unwrap();
        assert!(files.write("d.bin", &[4; 1], false).is_err());
        let left = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(left, 3, "a.bin, b.bin and the link; no temporary file");
    }
}
