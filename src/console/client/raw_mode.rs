//! The person's terminal in raw mode while the console client runs (every
//! key goes to the device as typed: Ctrl-C, Ctrl-Z, arrows, no local echo),
//! and its exact original settings back on every way out: the guard's
//! drop (detach, the server closing, a signal, an error returned) and a
//! panic hook (a panic that unwinds past the guard, or one in another
//! thread), so that no exit leaves the shell in raw mode.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Mutex, Once};

use nix::sys::termios::{SetArg, Termios, cfmakeraw, tcgetattr, tcsetattr};

/// A terminal's settings to put back, with a descriptor of its own.
#[derive(Debug)]
struct Saved {
    fd: OwnedFd,
    termios: Termios,
}

impl Saved {
    fn restore(&self) -> nix::Result<()> {
        // TCSANOW, not TCSADRAIN: waiting for output to drain could wait
        // forever on a terminal nobody reads.
        tcsetattr(&self.fd, SetArg::TCSANOW, &self.termios)
    }
}

/// What the panic hook restores: the settings of the terminal in raw mode
/// now, if any.
static FOR_PANIC: Mutex<Option<Saved>> = Mutex::new(None);

/// Puts a terminal in raw mode; restores what it was when dropped.
#[derive(Debug)]
pub(crate) struct RawMode {
    saved: Saved,
}

impl RawMode {
    /// Saves `fd`'s settings, installs the panic hook (once per process)
    /// and puts the terminal in raw mode (`cfmakeraw`).
    pub(crate) fn enter(fd: impl AsFd) -> std::io::Result<RawMode> {
        let fd = fd.as_fd();
        let termios = tcgetattr(fd)?;
        let saved = Saved {
            fd: fd.try_clone_to_owned()?,
            termios: termios.clone(),
        };
        let for_panic = Saved {
            fd: fd.try_clone_to_owned()?,
            termios: termios.clone(),
        };
        install_panic_hook();
        *crate::sync::lock(&FOR_PANIC) = Some(for_panic);
        let mut raw = termios;
        cfmakeraw(&mut raw);
        if let Err(e) = tcsetattr(fd, SetArg::TCSANOW, &raw) {
            crate::sync::lock(&FOR_PANIC).take();
            return Err(e.into());
        }
        Ok(RawMode { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // Nothing to do about a failure here: the terminal is gone.
        let _ = self.saved.restore();
        crate::sync::lock(&FOR_PANIC).take();
    }
}

/// Chains a hook before the current panic hook that restores the terminal
/// first, so that the panic's message (and the shell after it) find the
/// terminal as it was.
fn install_panic_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // try_lock: a panic while the lock is held must not deadlock.
            let slot = match FOR_PANIC.try_lock() {
                Ok(slot) => Some(slot),
                Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            };
            if let Some(saved) = slot.as_ref().and_then(|s| s.as_ref()) {
                let _ = saved.restore();
            }
            previous(info);
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::termios::LocalFlags;

    /// One test for both cases: the saved settings are a process-wide
    /// slot, and tests run in parallel threads.
    #[test]
    fn raw_mode_on_a_pseudo_terminal_is_undone_by_drop_and_by_a_panic() {
        let pty = nix::pty::openpty(None, None).unwrap();
        let before = tcgetattr(&pty.slave).unwrap();
        assert!(before.local_flags.contains(LocalFlags::ICANON));

        let guard = RawMode::enter(&pty.slave).unwrap();
        let raw = tcgetattr(&pty.slave).unwrap();
        assert!(
            !raw.local_flags
                .contains(LocalFlags::ICANON | LocalFlags::ECHO)
        );
        assert_ne!(raw, before);
        drop(guard);
        assert_eq!(tcgetattr(&pty.slave).unwrap(), before);
        assert!(crate::sync::lock(&FOR_PANIC).is_none());

        // A panic while the guard is held: the hook restores before the
        // unwinding reaches the guard (checked inside the panicking
        // thread, after the hook and before the drop, by a second guard
        // type whose drop runs first).
        struct Check<'a>(&'a OwnedFd, Termios, std::sync::mpsc::Sender<bool>);
        impl Drop for Check<'_> {
            fn drop(&mut self) {
                let _ = self.2.send(tcgetattr(self.0).ok() == Some(self.1.clone()));
            }
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let expected = before.clone();
        let slave = &pty.slave;
        let result = std::thread::scope(|s| {
            s.spawn(move || {
                let _guard = RawMode::enter(slave).unwrap();
                let _check = Check(slave, expected, tx);
                panic!("a bug in the session loop");
            })
            .join()
        });
        assert!(result.is_err());
        assert_eq!(rx.recv().ok(), Some(true), "restored by the hook");
        assert_eq!(tcgetattr(&pty.slave).unwrap(), before);
    }
}
